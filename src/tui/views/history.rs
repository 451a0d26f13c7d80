//! `4` History: each revision, when, by whom, before → after.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

use super::{Col, col, empty, fill, hub, table};
use crate::tui::app::App;
use crate::tui::fmt;

pub const COLS: [Col; 5] = [
    col("REV", 8, 12, 0),
    col("AGE", 3, 4, 0),
    col("WHEN", 17, 17, 2),
    col("BY", 6, 16, 1),
    fill("BEFORE → AFTER", 20, 0),
];

pub fn draw(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let rows_h = area.height.saturating_sub(1) as usize;
    let list = &app.lists.history;
    let now = app.now();
    let rows = list
        .window(rows_h)
        .iter()
        .filter_map(|k| app.history_entry(k))
        .map(|h| {
            let change = if h.previous_agents.is_empty() {
                format!("(first) {} {}", t.arrow(), hub(&fmt::list(&h.agents)))
            } else {
                format!(
                    "{} {} {}",
                    hub(&fmt::list(&h.previous_agents)),
                    t.arrow(),
                    hub(&fmt::list(&h.agents))
                )
            };
            vec![
                Span::raw(hub(&h.revision).into_owned()),
                Span::raw(fmt::age_at(now, h.at)),
                Span::raw(fmt::stamp(h.at)),
                Span::raw(hub(&h.by).into_owned()),
                Span::raw(change),
            ]
        })
        .collect();
    table(app, area, buf, &COLS, rows, list.selected_row(rows_h));
    if list.is_empty() {
        let msg = list.emptied.as_deref().unwrap_or("no revisions yet");
        empty(app, area, buf, msg);
    }
}
