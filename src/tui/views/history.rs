//! `4` History: each revision, when, by whom, before → after.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

use super::{Col, col, empty, fill, fit, fit_columns, hub, table, window};
use crate::tui::app::App;
use crate::tui::fmt;

pub const COLS: [Col; 5] = [
    col("REV", 8, 0),
    col("AGE", 4, 0),
    col("WHEN", 17, 2),
    col("BY", 12, 1),
    fill("BEFORE → AFTER", 40, 0),
];

pub fn draw(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let cols = COLS;
    let keep = fit_columns(&cols, area.width);
    let rows_h = area.height.saturating_sub(1) as usize;
    let idx = &app.history_rows;
    let sel = &app.history_sel;
    let (off, end) = window(sel.pos, sel.offset, idx.len(), rows_h);
    let now = app.now();
    let ell = t.ellipsis();
    let rows = idx[off..end]
        .iter()
        .filter_map(|rev| app.history.iter().find(|h| &h.revision == rev))
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
                Span::raw(fit(&hub(&h.revision), 8, ell)),
                Span::raw(fmt::age_at(now, h.at)),
                Span::raw(fmt::stamp(h.at)),
                Span::raw(fit(&hub(&h.by), 12, ell)),
                Span::raw(change),
            ]
        })
        .collect();
    let selected = (!idx.is_empty()).then(|| sel.pos.saturating_sub(off));
    table(app, area, buf, &cols, &keep, rows, selected);
    if idx.is_empty() {
        empty(app, area, buf, "no revisions yet");
    }
}
