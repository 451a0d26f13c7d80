//! The four list views as types. Each [`List`] holds its rows, its
//! selection (kept by key), its typed sort and its filter; [`Lists`] holds
//! the four and hands out the current one as a [`Pane`], so navigation,
//! clicks, sorting and the footer are written once for every view. A new
//! view is a new field here and a new file in `views/`; a new sort is a new
//! variant of that view's sort enum.

use chrono::{DateTime, Utc};

use super::model::faillog::FailoverSort;
use super::model::fleet::{Slot, WorkerIndex, WorkerSort};
use super::model::query::{Searchable, contains_ci, starts_ci};
use super::ui::geom::{self, Cursor};
use crate::wire::HistoryEntry;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum View {
    Ladder,
    Workers,
    Failovers,
    History,
}

impl View {
    pub const ALL: [View; 4] = [View::Ladder, View::Workers, View::Failovers, View::History];

    /// Position in [`View::ALL`] (the tab's number is this plus one).
    pub fn index(self) -> usize {
        match self {
            View::Ladder => 0,
            View::Workers => 1,
            View::Failovers => 2,
            View::History => 3,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            View::Ladder => "Ladder",
            View::Workers => "Workers",
            View::Failovers => "Failovers",
            View::History => "History",
        }
    }

    pub fn next(self) -> View {
        View::ALL[(self.index() + 1) % View::ALL.len()]
    }

    pub fn prev(self) -> View {
        View::ALL[(self.index() + View::ALL.len() - 1) % View::ALL.len()]
    }
}

/// One history entry. A revision can come back (a move, an add and a
/// remove return to an earlier hash), so the revision alone is not a key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HistKey {
    pub revision: String,
    pub at: DateTime<Utc>,
}

/// What `Enter` opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    Worker(String),
    Failover(u64),
    Agent(String),
    Revision(HistKey),
    /// The workers not yet on the revision just written, and why.
    Rollout,
}

/// A cursor move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Down,
    Up,
    Top,
    Bottom,
    PageDown,
    PageUp,
}

/// The filter of one view. `text` survives switching views; Esc clears it
/// but keeps it in `recall` (↑ in the prompt brings it back).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub text: String,
    pub editing: bool,
    pub recall: String,
}

/// The cursor of one list, kept by key so that rows arriving or moving do
/// not make it jump.
#[derive(Debug, Clone)]
pub struct Sel<K> {
    pub key: Option<K>,
    pub pos: usize,
    pub offset: usize,
}

impl<K> Default for Sel<K> {
    fn default() -> Self {
        Sel {
            key: None,
            pos: 0,
            offset: 0,
        }
    }
}

impl<K: Clone + PartialEq> Sel<K> {
    /// After the index changed. A cursor on the first row stays on the
    /// first row (the newest or most urgent), as rows arrive above it; any
    /// other cursor follows its key, and stays at its position if the key
    /// left the index. The window is not moved here (see [`Sel::scroll`]).
    pub fn resync(&mut self, index: &[K]) {
        if self.pos == 0 {
            self.key = index.first().cloned();
            return;
        }
        if let Some(k) = &self.key {
            if index.get(self.pos) == Some(k) {
                return;
            }
            if let Some(p) = index.iter().position(|x| x == k) {
                self.pos = p;
                return;
            }
        }
        self.pos = self.pos.min(index.len().saturating_sub(1));
        self.key = index.get(self.pos).cloned();
    }

    pub fn set(&mut self, index: &[K], pos: usize) {
        self.pos = pos.min(index.len().saturating_sub(1));
        self.key = index.get(self.pos).cloned();
    }

    /// Keep the cursor inside a window of `rows` rows.
    pub fn scroll(&mut self, len: usize, rows: usize) {
        self.offset = geom::window(self.pos, self.offset, len, rows).0;
    }

    /// Move; true when the cursor or the window moved.
    pub fn nav(&mut self, index: &[K], m: Move, rows: usize) -> bool {
        let len = index.len();
        if len == 0 {
            return false;
        }
        let page = rows.max(1);
        let pos = match m {
            Move::Down => (self.pos + 1).min(len - 1),
            Move::Up => self.pos.saturating_sub(1),
            Move::Top => 0,
            Move::Bottom => len - 1,
            Move::PageDown => (self.pos + page).min(len - 1),
            Move::PageUp => self.pos.saturating_sub(page),
        };
        let before = (self.pos, self.offset);
        self.set(index, pos);
        self.scroll(len, rows);
        before != (self.pos, self.offset)
    }

    pub fn cursor(&self, len: usize) -> Cursor {
        Cursor {
            pos: self.pos,
            offset: self.offset,
            len,
        }
    }
}

/// A view's sort columns, cycled by `s`.
pub trait SortBy: Copy + PartialEq + 'static {
    const ALL: &'static [Self];
    fn name(self) -> &'static str;

    fn next(self) -> Self {
        let i = Self::ALL.iter().position(|s| *s == self).unwrap_or(0);
        Self::ALL[(i + 1) % Self::ALL.len()]
    }
}

/// How the Ladder orders agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LadderSort {
    /// The list's own order, rank 0 first.
    #[default]
    Rank,
    /// Most capable workers first.
    Capable,
    /// Most workers running it first.
    Active,
    /// Most failovers away in the last hour first.
    Away,
}

impl SortBy for LadderSort {
    const ALL: &'static [Self] = &[
        LadderSort::Rank,
        LadderSort::Capable,
        LadderSort::Active,
        LadderSort::Away,
    ];

    fn name(self) -> &'static str {
        match self {
            LadderSort::Rank => "rank",
            LadderSort::Capable => "capable",
            LadderSort::Active => "active",
            LadderSort::Away => "away",
        }
    }
}

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

impl SortBy for WorkerSort {
    const ALL: &'static [Self] = &WorkerSort::ALL;

    fn name(self) -> &'static str {
        WorkerSort::name(self)
    }
}

impl SortBy for FailoverSort {
    const ALL: &'static [Self] = &FailoverSort::ALL;

    fn name(self) -> &'static str {
        FailoverSort::name(self)
    }
}

/// Rows of a list, in display order, as keys.
pub trait Rows: Default {
    type Key: Clone + PartialEq + std::fmt::Debug;
    fn keys(&self) -> &[Self::Key];
}

impl<K: Clone + PartialEq + std::fmt::Debug> Rows for Vec<K> {
    type Key = K;
    fn keys(&self) -> &[K] {
        self
    }
}

impl Rows for WorkerIndex {
    type Key = Slot;
    fn keys(&self) -> &[Slot] {
        &self.slots
    }
}

/// One list view: its rows, its selection by key, its sort and its filter.
#[derive(Debug, Clone)]
pub struct List<R: Rows, S> {
    pub rows: R,
    pub sel: Sel<R::Key>,
    pub sort: S,
    pub reverse: bool,
    pub filter: Filter,
    /// When the filter left no row: which of its terms emptied the list.
    pub emptied: Option<String>,
}

impl<R: Rows, S: Default> Default for List<R, S> {
    fn default() -> Self {
        List {
            rows: R::default(),
            sel: Sel::default(),
            sort: S::default(),
            reverse: false,
            filter: Filter::default(),
            emptied: None,
        }
    }
}

impl<R: Rows, S> List<R, S> {
    /// The rows changed: keep the selection on its key.
    pub fn resync(&mut self) {
        self.sel.resync(self.rows.keys());
    }

    pub fn selected(&self) -> Option<&R::Key> {
        self.sel.key.as_ref()
    }

    pub fn len(&self) -> usize {
        self.rows.keys().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The selected row's line among the `rows` table lines shown, if any row is.
    pub fn selected_row(&self, rows: usize) -> Option<usize> {
        let (a, _) = geom::visible(self.sel.cursor(self.len()), rows);
        (!self.is_empty()).then(|| self.sel.pos.saturating_sub(a))
    }

    /// The keys of the rows `rows` table lines show now.
    pub fn window(&self, rows: usize) -> &[R::Key] {
        let (a, b) = geom::visible(self.sel.cursor(self.len()), rows);
        &self.rows.keys()[a..b]
    }
}

/// Fields a Ladder filter can name.
pub const LADDER_FIELDS: &[&str] = &["agent"];

/// An agent as the Ladder's filter sees it.
pub struct AgentRow<'a>(pub &'a str);

impl Searchable for AgentRow<'_> {
    fn shows(&self, needle: &str) -> bool {
        contains_ci(self.0, needle)
    }

    fn field_starts(&self, field: &str, value: &str) -> bool {
        field == "agent" && starts_ci(self.0, value)
    }
}

/// Fields a History filter can name: `agent` is in the list before or after.
pub const HISTORY_FIELDS: &[&str] = &["rev", "by", "agent"];

impl Searchable for HistoryEntry {
    fn shows(&self, needle: &str) -> bool {
        contains_ci(&self.revision, needle)
            || contains_ci(&self.by, needle)
            || self.agents.iter().any(|a| contains_ci(a, needle))
            || self.previous_agents.iter().any(|a| contains_ci(a, needle))
    }

    fn field_starts(&self, field: &str, value: &str) -> bool {
        match field {
            "rev" => starts_ci(&self.revision, value),
            "by" => starts_ci(&self.by, value),
            "agent" => self
                .agents
                .iter()
                .chain(&self.previous_agents)
                .any(|a| starts_ci(a, value)),
            _ => false,
        }
    }
}

/// What every list view answers, whatever its rows: the current view is
/// handled through this, so no code matches on the view to move a cursor.
pub trait Pane {
    fn cursor(&self) -> Cursor;
    /// Move; true when the cursor or the window moved.
    fn nav(&mut self, m: Move, rows: usize) -> bool;
    /// Put the cursor on row `pos` (a click).
    fn select(&mut self, pos: usize);
    /// Keep the cursor inside a window of `rows` rows.
    fn scroll(&mut self, rows: usize);
    fn filter(&self) -> &Filter;
    fn filter_mut(&mut self) -> &mut Filter;
    fn sort_name(&self) -> &'static str;
    fn reversed(&self) -> bool;
    /// `s`: the next sort column. The rows are rebuilt at the next settle.
    fn next_sort(&mut self);
    /// `S`: reverse the order.
    fn flip(&mut self);
}

impl<R: Rows, S: SortBy> Pane for List<R, S> {
    fn cursor(&self) -> Cursor {
        self.sel.cursor(self.len())
    }

    fn nav(&mut self, m: Move, rows: usize) -> bool {
        self.sel.nav(self.rows.keys(), m, rows)
    }

    fn select(&mut self, pos: usize) {
        self.sel.set(self.rows.keys(), pos);
    }

    fn scroll(&mut self, rows: usize) {
        let len = self.len();
        self.sel.scroll(len, rows);
    }

    fn filter(&self) -> &Filter {
        &self.filter
    }

    fn filter_mut(&mut self) -> &mut Filter {
        &mut self.filter
    }

    fn sort_name(&self) -> &'static str {
        self.sort.name()
    }

    fn reversed(&self) -> bool {
        self.reverse
    }

    fn next_sort(&mut self) {
        self.sort = self.sort.next();
    }

    fn flip(&mut self) {
        self.reverse = !self.reverse;
    }
}

/// The four list views.
#[derive(Debug, Default)]
pub struct Lists {
    /// Agents in the list's order, then agents workers run that it lacks.
    pub ladder: List<Vec<String>, LadderSort>,
    pub workers: List<WorkerIndex, WorkerSort>,
    /// Failover seqs.
    pub failovers: List<Vec<u64>, FailoverSort>,
    pub history: List<Vec<HistKey>, HistorySort>,
}

impl Lists {
    pub fn pane(&self, v: View) -> &dyn Pane {
        match v {
            View::Ladder => &self.ladder,
            View::Workers => &self.workers,
            View::Failovers => &self.failovers,
            View::History => &self.history,
        }
    }

    pub fn pane_mut(&mut self, v: View) -> &mut dyn Pane {
        match v {
            View::Ladder => &mut self.ladder,
            View::Workers => &mut self.workers,
            View::Failovers => &mut self.failovers,
            View::History => &mut self.history,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_cycle_both_ways() {
        for v in View::ALL {
            assert_eq!(v.next().prev(), v);
        }
        assert_eq!(View::Ladder.prev(), View::History);
    }

    #[test]
    fn sorts_cycle_through_every_column() {
        let mut s = WorkerSort::Urgency;
        for _ in 0..WorkerSort::ALL.len() {
            s = SortBy::next(s);
        }
        assert_eq!(s, WorkerSort::Urgency);
        assert_eq!(SortBy::next(LadderSort::Away), LadderSort::Rank);
    }
}
