//! `?`: the keys of the current view, generated from the key table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use super::{fit_line, line};
use crate::tui::app::App;
use crate::tui::keys::{Binding, help_for, label, prompt_keys};

fn key_line(app: &App, b: &Binding) -> Line<'static> {
    let t = &app.theme;
    let label = label(b, t.ascii);
    let mut help = b.help.to_string();
    if b.action.is_edit() && !app.can_write {
        help.push_str(" (read-only)");
    }
    Line::from(vec![
        Span::styled(format!("{label:<7}"), t.title()),
        Span::raw(help),
    ])
}

/// The view's keys, then the filter prompt's: both from the key table.
pub fn sections(app: &App) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
    let keys = help_for(app.view()).map(|b| key_line(app, b)).collect();
    let mut prompt = vec![
        Line::raw(""),
        Line::styled("in the filter prompt:", app.theme.muted()),
    ];
    prompt.extend(prompt_keys().map(|b| key_line(app, b)));
    (keys, prompt)
}

/// Every line of the help, in order.
pub fn lines(app: &App) -> Vec<Line<'static>> {
    let (mut keys, prompt) = sections(app);
    keys.extend(prompt);
    keys
}

pub fn draw(app: &App, screen: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let (mut lines, prompt) = sections(app);
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
        .title(Span::styled(
            format!(" help: {} ", app.view().title()),
            t.title(),
        ))
        .title_bottom(Span::styled(" ? or Esc closes ", t.muted()));
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
