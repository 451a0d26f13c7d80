//! `4` History: each revision, when, by whom, with which client, before →
//! after; and the steps of the staged rollouts (started, waiting,
//! promoted, halted, aborted), among them by time.

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

/// A staged rollout's step as the filter sees it: `rev` is its id.
impl Searchable for crate::rollout::Step {
    fn shows(&self, needle: &str) -> bool {
        contains_ci("rollout", needle)
            || contains_ci(&self.id, needle)
            || contains_ci(&self.by, needle)
            || contains_ci(step_word(self.step), needle)
            || self.reason.as_deref().is_some_and(|r| contains_ci(r, needle))
    }

    fn field_starts(&self, field: &str, value: &str) -> bool {
        match field {
            "rev" => starts_ci(&self.id, value),
            "by" => starts_ci(&self.by, value),
            _ => false,
        }
    }
}

/// The step's name, as the hub's `step` says it.
pub fn step_word(k: crate::rollout::StepKind) -> &'static str {
    use crate::rollout::StepKind;
    match k {
        StepKind::Started => "started",
        StepKind::Waiting => "waiting",
        StepKind::Promoted => "promoted",
        StepKind::Halted => "halted",
        StepKind::Aborted => "aborted",
    }
}

/// A row's key: an entry's revision and time, or a step's rollout, time
/// and kind.
fn key_of_step(s: &crate::rollout::Step) -> HistKey {
    HistKey {
        revision: s.id.clone(),
        at: s.at,
        step: Some(s.step),
    }
}

fn row_id(k: &HistKey) -> String {
    match k.step {
        Some(step) => format!("rollout {}@{} {}", k.revision, k.at, step_word(step)),
        None => format!("{}@{}", k.revision, k.at),
    }
}

/// The step a key names.
fn step_of<'a>(m: &'a Model, k: &HistKey) -> Option<&'a crate::rollout::Step> {
    let kind = k.step?;
    m.staged
        .steps
        .iter()
        .find(|s| s.step == kind && s.at == k.at && s.id == k.revision)
}

/// The History pane: one row per entry (a revision can come back) and
/// per rollout step.
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
        if !(own || ch.history || ch.agents) {
            return false;
        }
        let l = &self.list;
        let q = Query::parse(&l.filter.text, FIELDS);
        let (all, steps) = (&m.config.history, &m.staged.steps);
        // Each row with its time and writer, for the sorts.
        let mut rows: Vec<(HistKey, &str)> = all
            .iter()
            .filter(|h| q.matches(*h))
            .map(|h| {
                let k = HistKey {
                    revision: h.revision.clone(),
                    at: h.at,
                    step: None,
                };
                (k, h.by.as_str())
            })
            .chain(
                steps
                    .iter()
                    .filter(|s| q.matches(*s))
                    .map(|s| (key_of_step(s), s.by.as_str())),
            )
            .collect();
        let emptied = (rows.is_empty() && !q.is_empty()).then(|| {
            q.empty_text("revision", &l.filter.text, |q| {
                all.iter().any(|h| q.matches(h)) || steps.iter().any(|s| q.matches(s))
            })
        });
        // Newest first; stable, so the hub's order holds within a time.
        rows.sort_by_key(|r| std::cmp::Reverse(r.0.at));
        if l.sort == HistorySort::By {
            rows.sort_by(|a, b| a.1.cmp(b.1));
        }
        if l.reverse {
            rows.reverse();
        }
        self.list.rows = rows.into_iter().map(|(k, _)| k).collect();
        self.list.emptied = emptied;
        self.list.resync();
        true
    }

    fn selected(&self, _m: &Model) -> Option<Detail> {
        let k = self.list.selected()?;
        Some(match k.step {
            Some(_) => Detail::Row(HISTORY, row_id(k)),
            None => Detail::Revision(k.clone()),
        })
    }

    /// A rollout step's detail: what it was, when, by whom, why.
    fn detail(&self, cx: &Cx, d: &Detail) -> Option<crate::tui::pane::DetailText> {
        let s = self.step_row(cx.model, d)?;
        let t = cx.theme;
        let mut lines = vec![
            ratatui::text::Line::styled(
                format!("rollout {} {}", hub(&s.id), step_word(s.step)),
                t.title(),
            ),
            ratatui::text::Line::raw(format!(
                "{} ({} ago) by {}",
                fmt::stamp_s(s.at),
                fmt::age_at(cx.now, s.at),
                hub(&s.by)
            )),
        ];
        if let Some(r) = &s.reason {
            lines.push(ratatui::text::Line::raw(hub(r).into_owned()));
        }
        Some(crate::tui::pane::DetailText {
            title: format!("rollout {}", hub(&s.id)),
            lines,
        })
    }

    /// `v` on a rollout step: the hub's JSON of it.
    fn raw(&self, m: &Model, d: &Detail) -> Option<String> {
        serde_json::to_string_pretty(self.step_row(m, d)?).ok()
    }

    fn draw(&self, cx: &Cx, area: Rect, buf: &mut Buffer) {
        self.draw_history(cx, area, buf)
    }

    fn row_ids(&self, _m: &Model) -> Vec<String> {
        self.list.rows.iter().map(row_id).collect()
    }
}

impl History {
    /// The step a detail of this pane names.
    fn step_row<'a>(&self, m: &'a Model, d: &Detail) -> Option<&'a crate::rollout::Step> {
        let Detail::Row(pane, key) = d else {
            return None;
        };
        if *pane != HISTORY {
            return None;
        }
        let k = self.list.rows.iter().find(|k| row_id(k) == *key)?;
        step_of(m, k)
    }

    /// A rollout step's row: its id, when, by whom, and what it was.
    fn step_cells(cx: &Cx, s: &crate::rollout::Step) -> Vec<Span<'static>> {
        let t = cx.theme;
        let what = match &s.reason {
            Some(r) => format!("rollout {}: {}", step_word(s.step), hub(r)),
            None => format!("rollout {}", step_word(s.step)),
        };
        let style = match s.step {
            crate::rollout::StepKind::Halted => t.bad(),
            crate::rollout::StepKind::Promoted => t.ok(),
            _ => t.warn(),
        };
        vec![
            Span::styled(hub(&s.id).into_owned(), t.muted()),
            Span::raw(fmt::age_at(cx.now, s.at)),
            Span::raw(fmt::stamp(s.at)),
            Span::raw(hub(&s.by).into_owned()),
            Span::raw("-"),
            Span::styled(what, style),
        ]
    }

    fn draw_history(&self, cx: &Cx, area: Rect, buf: &mut Buffer) {
        let t = cx.theme;
        let rows_h = area.height.saturating_sub(1) as usize;
        let list = &self.list;
        let now = cx.now;
        let rows = list
            .window(rows_h)
            .iter()
            .filter_map(|k| match step_of(cx.model, k) {
                Some(s) => Some(Err(s)),
                None => cx.model.history_entry(k).map(Ok),
            })
            .map(|row| {
                let h = match row {
                    Ok(h) => h,
                    Err(s) => return Self::step_cells(cx, s),
                };
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
                    Span::raw(fmt::by_word(&h.by)),
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
    // Wide enough for `changed by hand on disk` (23).
    col("BY", 6, 23, 1),
    // The writing client, from the request's User-Agent: owners who share
    // a token are told apart by it.
    col("CLIENT", 6, 24, 2),
    fill("BEFORE → AFTER", 20, 0),
];
