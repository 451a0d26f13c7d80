//! `?`: the keys of the current view, generated from the key table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use super::line;
use crate::tui::app::App;
use crate::tui::keys::{help_for, label, prompt_help};

pub fn lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut out: Vec<Line> = help_for(app.view())
        .map(|b| {
            let label = label(b, t.ascii);
            let mut help = b.help.to_string();
            if b.action.is_edit() {
                help.push_str(if app.can_write {
                    " (later)"
                } else {
                    " (read-only)"
                });
            }
            Line::from(vec![
                Span::styled(format!("{label:<7}"), t.title()),
                Span::raw(help),
            ])
        })
        .collect();
    out.push(Line::raw(""));
    out.push(Line::styled(
        format!("in the filter prompt: {}", prompt_help(t.sep(), t.ascii)),
        t.muted(),
    ));
    out
}

pub fn draw(app: &App, screen: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let mut lines = lines(app);
    // Two columns when one does not fit the screen's height.
    let two = lines.len() as u16 + 2 > screen.height && screen.width >= 60;
    let w = if two {
        100.min(screen.width)
    } else {
        62.min(screen.width)
    };
    let mut right: Vec<Line> = Vec::new();
    if two {
        let footer = lines.split_off(lines.len() - 2);
        right = lines.split_off(lines.len().div_ceil(2));
        lines.extend(footer);
    }
    let h = (lines.len() as u16 + 2).min(screen.height);
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
        line(r, buf, l);
    }
    for (i, l) in right.into_iter().take(inner.height as usize).enumerate() {
        let r = Rect {
            x: inner.x + half,
            y: inner.y + i as u16,
            height: 1,
            width: inner.width - half,
        };
        line(r, buf, l);
    }
}
