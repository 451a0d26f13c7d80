//! `2` Workers: most urgent first; rows built for the visible window only.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;

use super::{Col, cell_style, col, empty, fill, fit, fit_columns, hub, table, window};
use crate::tui::app::App;
use crate::tui::fleet::Entry;
use crate::tui::fmt;
use crate::wire::{Failover, WorkerState};

pub const COLS: [Col; 7] = [
    col("WORKER", 14, 0),
    col("HOST", 16, 4),
    col("AGE", 4, 2),
    col("STATE", 7, 1),
    col("ACTIVE", 11, 0),
    col("SYNC", 4, 3),
    fill("LAST FAILOVER", 24, 0),
];

/// `opencode→claude rate_limited 429 3m`
pub fn failover_text(app: &App, f: &Failover) -> String {
    let t = &app.theme;
    let to = f.to.as_deref().map(hub).unwrap_or("(none)".into());
    let mut s = format!("{}{}{} {}", hub(&f.from), t.arrow(), to, f.cause.kind);
    if let Some(st) = f.cause.status {
        s.push_str(&format!(" {st}"));
    }
    s.push(' ');
    s.push_str(&fmt::age_at(app.now(), f.at));
    s
}

pub fn cells(app: &App, e: &Entry, id_width: usize) -> Vec<Span<'static>> {
    let t = &app.theme;
    let v = &e.view;
    let ell = t.ellipsis();
    let worker_style = if e.no_route() {
        t.no_route()
    } else {
        Style::new()
    };
    let active = match (&v.active_agent, e.active_rank()) {
        (Some(a), Some(r)) => Span::raw(format!("{} #{r}", fit(&hub(a), 8, ell))),
        (Some(a), None) => Span::raw(format!("{} #?", fit(&hub(a), 8, ell))),
        (None, _) => Span::styled("NO ROUTE", cell_style(app, t.no_route())),
    };
    let sync = if e.in_sync {
        Span::raw(t.yes())
    } else {
        Span::styled(
            fit(&hub(v.config_revision.as_deref().unwrap_or("-")), 4, ell),
            cell_style(app, t.warn()),
        )
    };
    let last = match &v.last_failover {
        Some(f) => Span::raw(failover_text(app, f)),
        None => Span::styled("-", t.muted()),
    };
    let state_style = if e.state == WorkerState::Healthy {
        t.muted()
    } else {
        t.state(e.state)
    };
    vec![
        Span::styled(
            fit(&hub(&v.worker), id_width, ell),
            cell_style(app, worker_style),
        ),
        Span::raw(fit(&hub(&v.host), 16, ell)),
        Span::raw(fmt::age_at(app.now(), v.received_at)),
        Span::styled(e.state.as_str(), cell_style(app, state_style)),
        active,
        sync,
        last,
    ]
}

pub fn draw(app: &App, area: Rect, buf: &mut Buffer) {
    let mut cols = COLS;
    if area.width >= 110 {
        // Room for longer ids (UUIDs are 36).
        cols[0].width = Some(22);
        cols[0].min = 22;
    }
    let id_width = cols[0].min as usize;
    let keep = fit_columns(&cols, area.width);
    let rows_h = area.height.saturating_sub(1) as usize;
    let idx = &app.workers.slots;
    let sel = &app.workers_sel;
    let (off, end) = window(sel.pos, sel.offset, idx.len(), rows_h);
    let rows: Vec<Vec<Span<'static>>> = idx[off..end]
        .iter()
        .filter_map(|&s| app.fleet.get(s))
        .map(|e| cells(app, e, id_width))
        .collect();
    let selected = (!idx.is_empty()).then(|| sel.pos.saturating_sub(off));
    table(app, area, buf, &cols, &keep, rows, selected);
    if idx.is_empty() && area.height > 1 {
        let msg = if app.fleet.is_empty() {
            "no workers have reported yet"
        } else {
            "no worker matches the filter"
        };
        empty(app, area, buf, msg);
    }
}
