//! `?`: the keys of the current view, generated from the key table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use crate::tui::keys::{self, HelpLine, help_for, prompt_keys};
use crate::tui::ui::theme::Theme;
use crate::tui::ui::{fit_line, line};

/// What the help is of: the pane on screen among the panes, and whether
/// the session may write.
pub struct Of<'a> {
    pub pane: &'a str,
    pub title: &'a str,
    pub titles: &'a [&'a str],
    pub can_write: bool,
    /// The fields the pane's filter names, and what a field's values mean
    /// where the name does not say ([`crate::tui::pane::Pane::fields`]).
    pub fields: (&'a [&'a str], Option<&'a str>),
}

fn key_line(t: &Theme, of: &Of, b: &HelpLine) -> Line<'static> {
    let label = &b.label;
    let mut help = b.help.clone();
    if b.action.is_edit() && !of.can_write {
        help.push_str(" (read-only)");
    }
    Line::from(vec![
        Span::styled(format!("{label:<7}"), t.title()),
        Span::raw(help),
    ])
}

/// The pane's keys, then the filter prompt's: both from the key table.
pub fn sections(t: &Theme, of: &Of) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
    let keys = help_for(of.pane, of.titles, t.ascii)
        .iter()
        .map(|b| key_line(t, of, b))
        .collect();
    let mut prompt = vec![
        Line::raw(""),
        Line::styled("in the filter prompt:", t.muted()),
    ];
    prompt.extend(prompt_keys().map(|b| {
        key_line(
            t,
            of,
            &HelpLine {
                label: keys::label(b, t.ascii),
                help: b.help.to_string(),
                action: b.action,
            },
        )
    }));
    let (fields, note) = of.fields;
    if !fields.is_empty() {
        prompt.push(Line::from(vec![
            Span::styled(format!("{:<7}", "fields"), t.title()),
            Span::raw(fields.join(" ")),
        ]));
        prompt.push(Line::raw(format!(
            "{:<7}f:v prefix, f:v$ whole, !f:v not",
            ""
        )));
        if let Some(n) = note {
            let n = if t.ascii {
                n.replace('↓', "v").replace('↑', "^")
            } else {
                n.to_string()
            };
            prompt.push(Line::raw(format!("{:<7}{n}", "")));
        }
    }
    (keys, prompt)
}

/// Every line of the help, in order.
pub fn lines(t: &Theme, of: &Of) -> Vec<Line<'static>> {
    let (mut keys, prompt) = sections(t, of);
    keys.extend(prompt);
    keys
}

pub fn draw(t: &Theme, of: &Of, screen: Rect, buf: &mut Buffer) {
    let (mut lines, prompt) = sections(t, of);
    // Two columns when one does not fit the screen's height.
    let two = (lines.len() + prompt.len()) as u16 + 2 > screen.height && screen.width >= 60;
    let w = if two {
        100.min(screen.width)
    } else {
        62.min(screen.width)
    };
    let mut right: Vec<Line> = Vec::new();
    if two {
        // The view's keys split in two, the prompt's under the right half.
        right = lines.split_off((lines.len() + prompt.len()).div_ceil(2).min(lines.len()));
        right.extend(prompt);
    } else {
        lines.extend(prompt);
    }
    let h = (lines.len().max(right.len()) as u16 + 2).min(screen.height);
    let area = Rect {
        x: screen.x + (screen.width - w) / 2,
        y: screen.y + (screen.height - h) / 2,
        width: w,
        height: h,
    };
    Clear.render(area, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_set(t.border())
        .title(Span::styled(format!(" help: {} ", of.title), t.title()))
        .title_bottom(Span::styled(
            format!(" {} ", keys::hints(keys::Hints::HelpBox, "")),
            t.muted(),
        ));
    let inner = block.inner(area);
    block.render(area, buf);
    let half = if two { inner.width / 2 } else { inner.width };
    let right_len = right.len();
    for (i, l) in lines.into_iter().take(inner.height as usize).enumerate() {
        let width = if i < right_len { half } else { inner.width };
        let r = Rect {
            y: inner.y + i as u16,
            height: 1,
            width,
            ..inner
        };
        line(r, buf, fit_line(l, usize::from(r.width), t.ellipsis()));
    }
    for (i, l) in right.into_iter().take(inner.height as usize).enumerate() {
        let r = Rect {
            x: inner.x + half,
            y: inner.y + i as u16,
            height: 1,
            width: inner.width - half,
        };
        line(r, buf, fit_line(l, usize::from(r.width), t.ellipsis()));
    }
}
