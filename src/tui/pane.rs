//! What a view is: the [`Pane`] trait (settle on a model change, handle an
//! action, give its hints, draw), and the list every pane is made of
//! ([`List`]: its rows, its selection kept by key, its typed sort and its
//! filter), answered through [`ListNav`] so that navigation, clicks,
//! sorting and the footer are written once for every pane. Panes live in
//! `panes/`, one file each; `panes::all` lists them.

use std::any::Any;
use std::time::Instant;

use chrono::{DateTime, Utc};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub use super::ids::PaneId;
use super::keys::{Action, Hints, Move};
pub use super::model::Changes;
use super::model::Model;
use super::model::config::HistKey;
use super::ui::geom::{self, Cursor};
use super::ui::theme::Theme;

/// What a frame is drawn from: the model and the theme, read-only.
pub struct Cx<'a> {
    pub model: &'a Model,
    pub theme: &'a Theme,
    /// The data is from a hub we cannot reach now: drawn greyed.
    pub stale: bool,
    /// The hub's time now.
    pub now: DateTime<Utc>,
}

impl<'a> Cx<'a> {
    pub fn new(model: &'a Model, theme: &'a Theme) -> Cx<'a> {
        Cx {
            model,
            theme,
            stale: model.is_stale(),
            now: model.now(),
        }
    }

    /// Draw the table `r` at `area` in this frame's theme, greyed while
    /// the data is stale ([`crate::tui::ui::table`]).
    pub fn table(&self, area: Rect, buf: &mut Buffer, r: crate::tui::ui::Table<'_>) {
        crate::tui::ui::table(self.theme, self.stale, area, buf, r);
    }
}

/// How a pane answered an action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handled {
    /// Not this pane's: the app acts on it.
    No,
    Yes,
    /// Open this detail.
    Open(Detail),
    /// Say this on the status line.
    Say(String),
    /// An edit key on this row, for the owner's edit (the edit overlay
    /// runs it: the pane holds no edit).
    Edit(Action, Option<Detail>),
}

/// One view. A new view is a file in `panes/` implementing this, and its
/// line in `panes::all`.
pub trait Pane: Any {
    /// Its id: the `:` command that opens it, and how the key table's
    /// `Only` scope names it.
    fn id(&self) -> PaneId;
    /// Its name (its id's).
    fn name(&self) -> &'static str {
        self.id().name()
    }
    /// Its tab's title.
    fn title(&self) -> &'static str;
    fn list(&self) -> &dyn ListNav;
    fn list_mut(&mut self) -> &mut dyn ListNav;
    /// Bring its rows up to date with the model (`visible`: it is on
    /// screen). True when it rebuilt them.
    fn settle(&mut self, m: &Model, ch: &Changes, visible: bool, mono: Instant) -> bool;
    /// It is about to be shown.
    fn shown(&mut self) {}
    /// A tick: true when it wants a settle (something waited for time).
    fn tick(&mut self) -> bool {
        false
    }
    /// Rows it draws above its table in a body `body_h` tall.
    fn above(&self, _m: &Model, _body_h: u16) -> u16 {
        0
    }
    /// What `Enter` opens on the selected row.
    fn selected(&self, m: &Model) -> Option<Detail>;
    /// Put the cursor on `d`'s row, if the pane shows it.
    fn select(&mut self, _m: &Model, _d: &Detail) -> bool {
        false
    }
    /// The detail of one of its own rows (`Enter` on a [`Detail::Row`] its
    /// `selected` gave): its title and lines. `None` leaves `d` to the
    /// details the panes share (a worker, a failover, …: `overlays/detail.rs`).
    fn detail(&self, _cx: &Cx, _d: &Detail) -> Option<DetailText> {
        None
    }
    /// `v` on one of its own rows: the record as the hub sent it, as JSON
    /// (the detail overlay scrubs it and makes it terminal-safe). `None`:
    /// it has no record of the hub's own.
    fn raw(&self, _m: &Model, _d: &Detail) -> Option<String> {
        None
    }
    /// An action of its own (the key table's `Only` scope, or a movement
    /// it takes over), with `detail` what is open over it.
    fn handle(
        &mut self,
        _a: Action,
        _m: &mut Model,
        _detail: Option<&Detail>,
        _t: &Theme,
    ) -> Handled {
        Handled::No
    }
    /// The hints on the status line under it (from the key table).
    fn hints(&self) -> Hints {
        Hints::List
    }
    /// The fields its filter names (`field:value`), and what a field's
    /// values mean where the name does not say: the `?` help lists them.
    fn fields(&self) -> (&'static [&'static str], Option<&'static str>) {
        (&[], None)
    }
    fn draw(&self, cx: &Cx, area: Rect, buf: &mut Buffer);
    /// Its rows, each as text, in order (for tests that every sort sorts).
    fn row_ids(&self, m: &Model) -> Vec<String>;
    /// Large-fleet mode: the window of the hub's list its cursor needs
    /// and does not hold, once (the app hands it to the runner).
    fn ask_window(&mut self, _m: &mut Model) -> Option<super::model::large::WindowAsk> {
        None
    }
}

impl dyn Pane {
    /// The pane as its own type (tests read a pane's rows through this).
    pub fn downcast<P: Pane>(&self) -> Option<&P> {
        (self as &dyn Any).downcast_ref::<P>()
    }
}

/// What `Enter` opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    Worker(String),
    Failover(u64),
    /// A recovery, by its seq (the recovery log's own).
    Recovery(u64),
    Agent(String),
    Revision(HistKey),
    /// The workers not yet on the revision just written, and why.
    Rollout,
    /// The hub's staged rollout (the Ladder's rollout line): its cohort,
    /// bake, the guard's figures and its steps.
    Staged,
    /// A row of a view's own, by its pane and the row's key: the pane
    /// draws its detail ([`Pane::detail`], [`Pane::raw`]), so a view with a
    /// detail of its own is its file and its line in `panes![…]`.
    Row(PaneId, String),
}

/// A detail's text, as a pane gives it: the box's title and its lines
/// (wrapped at the box's width, scrolled by the detail overlay).
#[derive(Debug, Clone, Default)]
pub struct DetailText {
    pub title: String,
    pub lines: Vec<ratatui::text::Line<'static>>,
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

/// Rows of a list, in display order, as keys.
pub trait Rows: Default {
    type Key: Clone + PartialEq + std::fmt::Debug;
    fn keys(&self) -> &[Self::Key];
    /// The list is paged by the hub (large-fleet mode): the keys are a
    /// window of it, and the cursor is this.
    fn paged(&self) -> Option<&Paged> {
        None
    }
    fn paged_mut(&mut self) -> Option<&mut Paged> {
        None
    }
}

/// The cursor of a list the hub pages (the Workers view in large-fleet
/// mode): a row of the hub's list of `total` rows, of which the rows held
/// are `base..base + held`. Moving it is local while the rows on screen
/// and half a margin beyond them are held; else it wants the window
/// around them (`want`), asked once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Paged {
    pub total: usize,
    pub base: usize,
    pub held: usize,
    pub pos: usize,
    pub offset: usize,
    /// A window to ask for: its first row and its rows.
    pub want: Option<(usize, usize)>,
    /// The last window wanted, so it is asked once.
    pub asked: Option<(usize, usize)>,
}

impl Paged {
    /// Move; true when the cursor or the window moved.
    pub fn nav(&mut self, m: Move, rows: usize, margin: usize) -> bool {
        if self.total == 0 {
            return false;
        }
        let len = self.total;
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
        self.pos = pos;
        self.scroll(rows, margin);
        before != (self.pos, self.offset)
    }

    /// Keep the cursor inside a window of `rows` rows, and want the rows
    /// around it when they are not held.
    pub fn scroll(&mut self, rows: usize, margin: usize) {
        self.pos = self.pos.min(self.total.saturating_sub(1));
        self.offset = geom::window(self.pos, self.offset, self.total, rows).0;
        let lo = self.offset;
        let hi = (self.offset + rows).min(self.total);
        let need_lo = lo.saturating_sub(margin / 2);
        let need_hi = (hi + margin / 2).min(self.total);
        let held_hi = self.base + self.held;
        if self.held > 0 && need_lo >= self.base && need_hi <= held_hi {
            return;
        }
        let n = rows.max(1) + 2 * margin;
        let from = lo.saturating_sub(margin).min(self.total.saturating_sub(n));
        let w = (from, n);
        if self.asked != Some(w) {
            self.want = Some(w);
        }
    }

    /// The window wanted, once.
    pub fn take_want(&mut self) -> Option<(usize, usize)> {
        let w = self.want.take()?;
        self.asked = Some(w);
        Some(w)
    }

    /// The held row the cursor is on, as an index into the keys.
    pub fn local(&self) -> Option<usize> {
        (self.pos >= self.base && self.pos < self.base + self.held).then(|| self.pos - self.base)
    }
}

impl<K: Clone + PartialEq + std::fmt::Debug> Rows for Vec<K> {
    type Key = K;
    fn keys(&self) -> &[K] {
        self
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
    /// The filter or sort changed since the rows were built.
    pub marked: bool,
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
            marked: true,
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

/// What every list answers, whatever its rows: the current pane's list is
/// handled through this, so no code matches on the pane to move a cursor.
pub trait ListNav {
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
    /// How many sort columns it has.
    fn sort_count(&self) -> usize;
    /// Sort by the `i`th column.
    fn set_sort_at(&mut self, i: usize);
    /// The filter or the sort changed: the rows are rebuilt at the next
    /// settle.
    fn mark(&mut self);
    /// Whether it was marked, unmarking it.
    fn take_mark(&mut self) -> bool;
    fn is_marked(&self) -> bool;
}

impl<R: Rows, S> List<R, S> {
    /// A paged list: the selection follows the paged cursor (the key of
    /// the held row it is on, none while that row is not held).
    pub fn sync_paged(&mut self) {
        let Some(p) = self.rows.paged() else {
            return;
        };
        let local = p.local();
        let keys = self.rows.keys();
        self.sel.key = local.and_then(|i| keys.get(i).cloned());
        self.sel.pos = local.unwrap_or(0);
    }
}

/// Rows a paged list asks beyond each edge of the screen.
pub const PAGED_MARGIN: usize = super::model::large::MARGIN;

impl<R: Rows, S: SortBy> ListNav for List<R, S> {
    fn cursor(&self) -> Cursor {
        if let Some(p) = self.rows.paged() {
            return Cursor {
                pos: p.pos,
                offset: p.offset,
                len: p.total,
            };
        }
        self.sel.cursor(self.len())
    }

    fn nav(&mut self, m: Move, rows: usize) -> bool {
        if let Some(p) = self.rows.paged_mut() {
            let moved = p.nav(m, rows, PAGED_MARGIN);
            self.sync_paged();
            return moved;
        }
        self.sel.nav(self.rows.keys(), m, rows)
    }

    fn select(&mut self, pos: usize) {
        if let Some(p) = self.rows.paged_mut() {
            p.pos = pos.min(p.total.saturating_sub(1));
            self.sync_paged();
            return;
        }
        self.sel.set(self.rows.keys(), pos);
    }

    fn scroll(&mut self, rows: usize) {
        if let Some(p) = self.rows.paged_mut() {
            p.scroll(rows, PAGED_MARGIN);
            self.sync_paged();
            return;
        }
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

    fn sort_count(&self) -> usize {
        S::ALL.len()
    }

    fn set_sort_at(&mut self, i: usize) {
        self.sort = S::ALL[i % S::ALL.len()];
    }

    fn mark(&mut self) {
        self.marked = true;
    }

    fn take_mark(&mut self) -> bool {
        std::mem::take(&mut self.marked)
    }

    fn is_marked(&self) -> bool {
        self.marked
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::panes::ladder::LadderSort;
    use crate::tui::panes::workers::WorkerSort;

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
