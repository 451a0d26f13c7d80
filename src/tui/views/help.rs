//! `?`: the keys of the current view, generated from the key table.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use super::line;
use crate::tui::app::App;
use crate::tui::keys::help_for;

pub fn lines(app: &App) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut out: Vec<Line> = help_for(app.view)
        .map(|b| {
            let label = if t.ascii {
                b.label.replace('↓', "Down").replace('↑', "Up")
            } else {
                b.label.to_string()
            };
            let mut help = b.help.to_string();
            if b.action.is_edit() {
                help.push_str(if app.can_write {
                    " (later version)"
                } else {
                    " (read-only)"
                });
            }
            Line::from(vec![
                Span::styled(format!("{label:<8}"), t.title()),
                Span::raw(help),
            ])
        })
        .collect();
    out.push(Line::raw(""));
    out.push(Line::styled(
        "in the filter prompt: Enter keeps, Esc clears, Up recalls",
        t.muted(),
    ));
    out
}

pub fn draw(app: &App, screen: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let lines = lines(app);
    let w = 62.min(screen.width);
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
            format!(" help: {} ", app.view.title()),
            t.title(),
        ))
        .title_bottom(Span::styled(" ? or Esc closes ", t.muted()));
    let inner = block.inner(area);
    block.render(area, buf);
    for (i, l) in lines.into_iter().take(inner.height as usize).enumerate() {
        line(
            Rect {
                y: inner.y + i as u16,
                height: 1,
                ..inner
            },
            buf,
            l,
        );
    }
}
