//! The `:` prompt on the status line, the `:ctx` switcher over the body,
//! and the question before a switch would drop a pending edit.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use super::{fit, hub, line};
use crate::tui::app::App;

/// The prompt or the question, if either is up; true when drawn.
pub fn draw_status(app: &App, area: Rect, buf: &mut Buffer) -> bool {
    let t = &app.theme;
    if let Some(name) = &app.contexts.confirm {
        line(
            area,
            buf,
            Line::styled(
                fit(
                    &format!(
                        "an edit is pending on this hub and is not carried to {}: y switches (the edit is dropped), any other key stays",
                        hub(name)
                    ),
                    area.width as usize,
                    t.ellipsis(),
                ),
                t.warn(),
            ),
        );
        return true;
    }
    if !app.cmd.editing {
        return false;
    }
    let mut spans = vec![
        Span::styled(":", t.title()),
        Span::raw(hub(&app.cmd.text).into_owned()),
        Span::styled("_", t.title()),
        Span::raw("   "),
    ];
    let used = app.cmd.text.chars().count() + 5;
    let room = (area.width as usize).saturating_sub(used);
    match &app.cmd.error {
        Some(e) => spans.push(Span::styled(fit(e, room, t.ellipsis()), t.bad())),
        None => spans.push(Span::styled(
            fit(
                &format!(
                    "workers {0} failovers {0} ladder {0} history {0} ctx {0} a worker id {0} Enter go {0} Esc cancel",
                    t.sep()
                ),
                room,
                t.ellipsis(),
            ),
            t.muted(),
        )),
    }
    line(area, buf, Line::from(spans));
    true
}

/// The `:ctx` switcher: the contexts, the current one marked.
pub fn draw_picker(app: &App, body: Rect, buf: &mut Buffer) {
    let Some(sel) = app.contexts.picker else {
        return;
    };
    let t = &app.theme;
    let names = &app.contexts.names;
    let width = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(20, 60) as u16
        + 8;
    let height = (names.len() as u16 + 2).min(body.height);
    let area = Rect {
        x: body.x + 2.min(body.width),
        y: body.y,
        width: width.min(body.width.saturating_sub(2)),
        height,
    };
    Clear.render(area, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_set(t.border())
        .title(Span::styled(
            " contexts (Enter switches, Esc closes) ",
            t.title(),
        ));
    let inner = block.inner(area);
    block.render(area, buf);
    let rows = inner.height as usize;
    let first = sel.saturating_sub(rows.saturating_sub(1));
    for (i, name) in names.iter().enumerate().skip(first).take(rows) {
        let current = app.contexts.current.as_deref() == Some(name.as_str());
        let text = format!(
            "{} {}",
            if current { "*" } else { " " },
            fit(
                &hub(name),
                inner.width.saturating_sub(2) as usize,
                t.ellipsis()
            )
        );
        let style = if i == sel {
            t.selected()
        } else {
            ratatui::style::Style::new()
        };
        line(
            Rect {
                y: inner.y + (i - first) as u16,
                height: 1,
                ..inner
            },
            buf,
            Line::styled(format!("{text:<w$}", w = inner.width as usize), style),
        );
    }
}
