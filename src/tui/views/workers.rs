//! `2` Workers: most urgent first; rows built for the visible window only.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;

use super::{Col, cell_style, col, empty, fill, hub, table};
use crate::tui::app::App;
use crate::tui::model::fleet::Entry;
use crate::tui::ui::fmt;
use crate::wire::{Failover, WorkerState};

pub const COLS: [Col; 7] = [
    col("WORKER", 7, 36, 0),
    col("HOST", 8, 24, 4),
    col("AGE", 3, 4, 2),
    col("STATE", 5, 7, 1),
    col("ACTIVE", 11, 20, 0),
    col("SYNC", 4, 12, 3),
    fill("LAST FAILOVER", 16, 0),
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

pub fn cells(app: &App, e: &Entry) -> Vec<Span<'static>> {
    let t = &app.theme;
    let v = &e.view;
    let worker_style = if e.no_route() {
        t.no_route()
    } else {
        Style::new()
    };
    let active = match (&v.active_agent, e.active_rank()) {
        (Some(a), Some(r)) => Span::raw(format!("{} #{r}", hub(a))),
        (Some(a), None) => Span::raw(format!("{} #?", hub(a))),
        (None, _) => Span::styled("NO ROUTE", cell_style(app, t.no_route())),
    };
    let sync = if e.in_sync {
        Span::raw(t.yes())
    } else {
        Span::styled(
            hub(v.config_revision.as_deref().unwrap_or("-")).into_owned(),
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
        Span::styled(hub(&v.worker).into_owned(), cell_style(app, worker_style)),
        Span::raw(hub(&v.host).into_owned()),
        // Coloured by the state the hub's rule gives this age: what the
        // hub will assign next (its sweeper acts within about a second).
        Span::styled(
            fmt::age_at(app.now(), v.received_at),
            match app.fleet.state_due(v.received_at, app.now()) {
                WorkerState::Healthy => Style::new(),
                due => cell_style(app, t.state(due)),
            },
        ),
        Span::styled(e.state.as_str(), cell_style(app, state_style)),
        active,
        sync,
        last,
    ]
}

pub fn draw(app: &App, area: Rect, buf: &mut Buffer) {
    let rows_h = area.height.saturating_sub(1) as usize;
    let list = &app.lists.workers;
    let rows: Vec<Vec<Span<'static>>> = list
        .window(rows_h)
        .iter()
        .filter_map(|&s| app.fleet.get(s))
        .map(|e| cells(app, e))
        .collect();
    table(app, area, buf, &COLS, rows, list.selected_row(rows_h));
    if list.is_empty() && area.height > 1 {
        let msg = if app.fleet.is_empty() {
            "no workers have reported yet"
        } else {
            list.emptied
                .as_deref()
                .unwrap_or("no worker matches the filter")
        };
        empty(app, area, buf, msg);
    }
}
