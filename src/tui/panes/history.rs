//! `4` History: each revision, when, by whom, with which client, before →
//! after.

use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Span;

use crate::tui::ids::{HISTORY, PaneId};
use crate::tui::keys::{Action, Hints};
use crate::tui::model::Model;
use crate::tui::model::config::HistKey;
use crate::tui::model::query::{Query, Searchable, contains_ci, starts_ci};
use crate::tui::pane::{Changes, Cx, Detail, Handled, List, ListNav, Pane, SortBy};
use crate::tui::ui::theme::Theme;
use crate::tui::ui::{Col, Table, col, empty, fill, fmt, hub};
use crate::wire::HistoryEntry;

/// How History orders entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HistorySort {
    /// Newest first, as the hub sends them.
    #[default]
    Time,
    By,
}

impl SortBy for HistorySort {
    const ALL: &'static [Self] = &[HistorySort::Time, HistorySort::By];

    fn name(self) -> &'static str {
        match self {
            HistorySort::Time => "time",
            HistorySort::By => "by",
        }
    }
}

/// Fields a History filter can name: `agent` is in the list before or after.
pub const FIELDS: &[&str] = &["rev", "by", "client", "agent"];

impl Searchable for HistoryEntry {
    fn shows(&self, needle: &str) -> bool {
        contains_ci(&self.revision, needle)
            || contains_ci(&self.by, needle)
            || self
                .client
                .as_deref()
                .is_some_and(|c| contains_ci(c, needle))
            || self.agents.iter().any(|a| contains_ci(a, needle))
            || self.previous_agents.iter().any(|a| contains_ci(a, needle))
    }

    fn field_starts(&self, field: &str, value: &str) -> bool {
        match field {
            "rev" => starts_ci(&self.revision, value),
            "by" => starts_ci(&self.by, value),
            "client" => self.client.as_deref().is_some_and(|c| starts_ci(c, value)),
            "agent" => self
                .agents
                .iter()
                .chain(&self.previous_agents)
                .any(|a| starts_ci(a, value)),
            _ => false,
        }
    }
}

/// The History pane: one row per entry (a revision can come back).
#[derive(Debug, Default)]
pub struct History {
    pub list: List<Vec<HistKey>, HistorySort>,
}

impl Pane for History {
    fn id(&self) -> PaneId {
        HISTORY
    }

    fn title(&self) -> &'static str {
        "History"
    }

    fn list(&self) -> &dyn ListNav {
        &self.list
    }

    fn list_mut(&mut self) -> &mut dyn ListNav {
        &mut self.list
    }

    fn fields(&self) -> (&'static [&'static str], Option<&'static str>) {
        (FIELDS, None)
    }

    /// `R`: the selected revision's order, for the owner's edit (over its
    /// detail too).
    fn handle(&mut self, a: Action, m: &mut Model, _d: Option<&Detail>, _t: &Theme) -> Handled {
        match a {
            Action::Revert => Handled::Edit(a, self.selected(m)),
            _ => Handled::No,
        }
    }

    /// `R revert` among the keys (the app shows it to an owner only).
    fn hints(&self) -> Hints {
        Hints::History
    }

    /// Newest first as the hub sends it; one row per entry.
    fn settle(&mut self, m: &Model, ch: &Changes, _visible: bool, _mono: Instant) -> bool {
        let own = self.list.take_mark();
        if !(own || ch.history) {
            return false;
        }
        let l = &self.list;
        let q = Query::parse(&l.filter.text, FIELDS);
        let all = &m.config.history;
        let mut rows: Vec<&HistoryEntry> = all.iter().filter(|h| q.matches(*h)).collect();
        let emptied = (rows.is_empty() && !q.is_empty()).then(|| {
            q.empty_text("revision", &l.filter.text, |q| {
                all.iter().any(|h| q.matches(h))
            })
        });
        match l.sort {
            HistorySort::Time => {}
            HistorySort::By => rows.sort_by(|a, b| a.by.cmp(&b.by)),
        }
        if l.reverse {
            rows.reverse();
        }
        let rows = rows
            .into_iter()
            .map(|h| HistKey {
                revision: h.revision.clone(),
                at: h.at,
            })
            .collect();
        self.list.rows = rows;
        self.list.emptied = emptied;
        self.list.resync();
        true
    }

    fn selected(&self, _m: &Model) -> Option<Detail> {
        self.list.selected().cloned().map(Detail::Revision)
    }

    fn draw(&self, cx: &Cx, area: Rect, buf: &mut Buffer) {
        self.draw_history(cx, area, buf)
    }

    fn row_ids(&self, _m: &Model) -> Vec<String> {
        self.list
            .rows
            .iter()
            .map(|k| format!("{}@{}", k.revision, k.at))
            .collect()
    }
}

impl History {
    fn draw_history(&self, cx: &Cx, area: Rect, buf: &mut Buffer) {
        let t = cx.theme;
        let rows_h = area.height.saturating_sub(1) as usize;
        let list = &self.list;
        let now = cx.now;
        let rows = list
            .window(rows_h)
            .iter()
            .filter_map(|k| cx.model.history_entry(k))
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
                    Span::raw(h.client.as_deref().map_or("-".into(), hub).into_owned()),
                    Span::raw(change),
                ]
            })
            .collect();
        let selected = list.selected_row(rows_h);
        let sorted = None;
        cx.table(
            area,
            buf,
            Table {
                cols: &COLS,
                rows,
                selected,
                sorted,
            },
        );
        if list.is_empty() {
            let msg = list.emptied.as_deref().unwrap_or("no revisions yet");
            empty(cx.theme, area, buf, msg);
        }
    }
}

pub const COLS: [Col; 6] = [
    col("REV", 8, 12, 0),
    col("AGE", 3, 4, 0),
    col("WHEN", 17, 17, 3),
    col("BY", 6, 16, 1),
    // The writing client, from the request's User-Agent: owners who share
    // a token are told apart by it.
    col("CLIENT", 6, 24, 2),
    fill("BEFORE → AFTER", 20, 0),
];
