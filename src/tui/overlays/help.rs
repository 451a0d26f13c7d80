//! `?`: the keys of the current view, generated from the key table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use super::{Ctx, Frame, Overlay, Yield};
use crate::tui::keys::{self, Action, HelpLine, help_for, prompt_keys};
use crate::tui::ui::header::wrap;
use crate::tui::ui::theme::Theme;
use crate::tui::ui::{fit_line, line};

/// `?`: the help over the pane. It takes every key bound on a pane:
/// `?` or Esc closes it, `q` asks to quit, any other does nothing.
#[derive(Debug, Default)]
pub struct Help {
    open: bool,
}

impl Help {
    pub fn is_open(&self) -> bool {
        self.open
    }
}

impl Overlay for Help {
    fn key(&mut self, _k: &crossterm::event::KeyEvent, a: Option<Action>, cx: &mut Ctx) -> bool {
        let Some(a) = a.filter(|_| self.open) else {
            return false;
        };
        match a {
            Action::Help | Action::Back => self.open = false,
            Action::Quit => cx.asks.push(super::Ask::Quit),
            _ => {}
        }
        true
    }

    fn open_on(&mut self, a: Action, _cx: &mut Ctx) -> bool {
        if a == Action::Help {
            self.open = true;
        }
        a == Action::Help
    }

    fn give_way(&mut self, why: Yield) {
        if why == Yield::Question {
            self.open = false;
        }
    }

    fn holds_clicks(&self) -> bool {
        self.open
    }

    fn draw_over(
        &self,
        f: &Frame,
        _a: &crate::tui::ui::geom::Areas,
        screen: Rect,
        buf: &mut Buffer,
    ) {
        if !self.open {
            return;
        }
        let of = Of {
            pane: f.pane.name(),
            title: f.pane.title(),
            titles: f.titles,
            can_write: f.cx.model.can_write,
            rolling: f.cx.model.staged.baking().is_some(),
            fields: f.pane.fields(),
        };
        draw(f.cx.theme, &of, screen, buf);
    }
}

/// What the help is of: the pane on screen among the panes, and whether
/// the session may write.
pub struct Of<'a> {
    pub pane: &'a str,
    pub title: &'a str,
    pub titles: &'a [&'a str],
    pub can_write: bool,
    /// A staged rollout bakes: its keys (`P`, `A`) do something.
    pub rolling: bool,
    /// The fields the pane's filter names, and what a field's values mean
    /// where the name does not say ([`crate::tui::pane::Pane::fields`]).
    pub fields: (&'a [&'a str], Option<&'a str>),
}

/// The width of the keys' column.
const LABEL: usize = 7;

/// One entry of the help: the keys (or a word) in the keys' column, and
/// what they do, wrapped under itself when it is longer than its column.
struct Entry {
    label: String,
    text: String,
    muted: bool,
}

impl Entry {
    /// A key; an edit key of a session that does not write is greyed
    /// (a line above the first says why).
    fn key(of: &Of, b: &HelpLine) -> Entry {
        Entry {
            label: b.label.clone(),
            text: b.help.clone(),
            muted: b.action.is_edit() && !of.can_write,
        }
    }

    fn plain(label: &str, text: impl Into<String>) -> Entry {
        Entry {
            label: label.to_string(),
            text: text.into(),
            muted: false,
        }
    }

    /// The entry whole, on one line.
    fn line(&self, t: &Theme) -> Line<'static> {
        self.rows(t, usize::MAX).remove(0)
    }

    /// The entry as rows of at most `width` cells: what it does wrapped at
    /// spaces, each row after the first under the text, never cut (a word
    /// longer than the column is broken across rows).
    fn rows(&self, t: &Theme, width: usize) -> Vec<Line<'static>> {
        if self.label.is_empty() {
            let style = if self.muted {
                t.muted()
            } else {
                Style::default()
            };
            return wrap(&self.text, width.max(1))
                .into_iter()
                .map(|r| Line::styled(r, style))
                .collect();
        }
        let lead = self.label.chars().count().max(LABEL);
        let room = width.saturating_sub(lead).max(8);
        let (label_style, style) = if self.muted {
            (t.muted(), t.muted())
        } else {
            (t.title(), Style::default())
        };
        wrap(&self.text, room)
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let label = if i == 0 { self.label.as_str() } else { "" };
                Line::from(vec![
                    Span::styled(format!("{label:<lead$}"), label_style),
                    Span::styled(r, style),
                ])
            })
            .collect()
    }
}

/// The pane's keys, then the filter prompt's: both from the key table.
fn entries(t: &Theme, of: &Of) -> (Vec<Entry>, Vec<Entry>) {
    let mut keys = Vec::new();
    // Read-only: the edit keys under their own heading, after every key
    // that works (`x drill` among them), never mixed with them.
    let mut inert = Vec::new();
    for b in help_for(of.pane, of.titles, t.ascii) {
        if b.action.is_rollout_step() && !(of.rolling && of.can_write) {
            // Listed only while a rollout bakes, to an owner.
            continue;
        }
        if b.action.is_edit() && !of.can_write {
            if inert.is_empty() {
                inert.push(Entry {
                    label: String::new(),
                    text: "read-only: these keys do nothing".into(),
                    muted: true,
                });
            }
            inert.push(Entry::key(of, &b));
        } else {
            keys.push(Entry::key(of, &b));
        }
    }
    keys.extend(inert);
    let mut prompt = vec![
        Entry::plain("", ""),
        Entry {
            label: String::new(),
            text: "in the filter prompt:".into(),
            muted: true,
        },
    ];
    prompt.extend(prompt_keys().map(|b| {
        Entry::key(
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
        prompt.push(Entry::plain("fields", fields.join(" ")));
        prompt.push(Entry::plain(" ", "f:v prefix, f:v$ whole, !f:v not"));
        if let Some(n) = note {
            let n = if t.ascii {
                n.replace('↓', "v").replace('↑', "^")
            } else {
                n.to_string()
            };
            prompt.push(Entry::plain(" ", n));
        }
    }
    (keys, prompt)
}

/// The pane's keys, then the filter prompt's, each entry on one line.
pub fn sections(t: &Theme, of: &Of) -> (Vec<Line<'static>>, Vec<Line<'static>>) {
    let (keys, prompt) = entries(t, of);
    (
        keys.iter().map(|e| e.line(t)).collect(),
        prompt.iter().map(|e| e.line(t)).collect(),
    )
}

/// Every line of the help, in order, each entry on one line.
pub fn lines(t: &Theme, of: &Of) -> Vec<Line<'static>> {
    let (mut keys, prompt) = sections(t, of);
    keys.extend(prompt);
    keys
}

/// `entries` as rows of `width`.
fn rows_of(t: &Theme, entries: &[Entry], width: usize) -> Vec<Line<'static>> {
    entries.iter().flat_map(|e| e.rows(t, width)).collect()
}

pub fn draw(t: &Theme, of: &Of, screen: Rect, buf: &mut Buffer) {
    let (keys, prompt) = entries(t, of);
    let one_w = 62.min(screen.width);
    let one: Vec<Line> = rows_of(t, &keys, usize::from(one_w.saturating_sub(2)))
        .into_iter()
        .chain(rows_of(t, &prompt, usize::from(one_w.saturating_sub(2))))
        .collect();
    // Two columns when one does not fit the screen's height.
    let two = one.len() as u16 + 2 > screen.height && screen.width >= 60;
    let w = if two { 100.min(screen.width) } else { one_w };
    let inner_w = w.saturating_sub(2);
    let half = if two { inner_w / 2 } else { inner_w };
    let (lines, right) = if two {
        // The view's keys split in two (by rows, each entry whole in its
        // column), the prompt's under the right half; each column's text
        // wrapped at its width (a space between the columns).
        let col = usize::from(half).saturating_sub(1);
        let rows: Vec<Vec<Line>> = keys.iter().map(|e| e.rows(t, col)).collect();
        let prompt_rows = rows_of(t, &prompt, usize::from(inner_w - half));
        let total: usize = rows.iter().map(Vec::len).sum::<usize>() + prompt_rows.len();
        let (mut left, mut right) = (Vec::new(), Vec::new());
        for r in rows {
            if left.len() + r.len() <= total.div_ceil(2) && right.is_empty() {
                left.extend(r);
            } else {
                right.extend(r);
            }
        }
        right.extend(prompt_rows);
        (left, right)
    } else {
        (one, Vec::new())
    };
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
    for (i, l) in lines.into_iter().take(inner.height as usize).enumerate() {
        let r = Rect {
            y: inner.y + i as u16,
            height: 1,
            width: half,
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
