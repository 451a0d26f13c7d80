//! `4` History: each revision, when, by whom, before → after.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{Col, col, empty, fill, hub, table};
use crate::tui::app::App;
use crate::tui::ui::fmt;
use crate::wire::{HistoryEntry, MAX_AGENTS};

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

/// The list as the document writes it, one agent a line.
fn list_text(agents: &[String]) -> String {
    let mut s = String::from("MAC_CODING_AGENTS = [\n");
    for a in agents {
        s.push_str(&format!("    {a:?},\n"));
    }
    s.push_str("]\n");
    s
}

/// A revision's change as a unified diff of its list against the one
/// before it (the hub's history keeps each revision's list, not its whole
/// document). For the detail of a History entry.
pub fn diff_lines(app: &App, h: &HistoryEntry) -> Vec<Line<'static>> {
    let t = &app.theme;
    let hist = &app.config.history;
    // Newest first: the entry before this one in time is the next one.
    let before = hist
        .iter()
        .position(|x| x.revision == h.revision && x.at == h.at)
        .and_then(|i| hist.get(i + 1))
        .map(|p| hub(&p.revision).into_owned());
    let old = if h.previous_agents.is_empty() {
        String::new()
    } else {
        list_text(&h.previous_agents)
    };
    // The whole list as context: it is short (at most MAX_AGENTS lines).
    let diff = similar::TextDiff::from_lines(&old, &list_text(&h.agents))
        .unified_diff()
        .context_radius(MAX_AGENTS + 2)
        .header(
            &before.unwrap_or_else(|| "before".into()),
            &hub(&h.revision),
        )
        .to_string();
    let mut out = vec![
        Line::raw(""),
        Line::styled(
            "diff of the list (the history keeps lists, not whole documents):",
            t.muted(),
        ),
    ];
    if diff.is_empty() {
        out.push(Line::raw(
            "the list did not change (another key or a comment did)",
        ));
    }
    out.extend(diff.lines().map(|l| super::edit::diff_line(app, &hub(l))));
    out
}
