//! `2` Workers: most urgent first; rows built for the visible window only.
//! Its rows are a [`WorkerIndex`] over the fleet: slots plus a parallel
//! array of sort keys, kept up to date by merging each delta in.

use std::cmp::Ordering;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;

use crate::tui::ids::{PaneId, WORKERS};
use crate::tui::model::Model;
use crate::tui::model::fleet::{Entry, FIELDS, Fleet, Slot};
use crate::tui::model::large::WindowAsk;
use crate::tui::model::query::Query;
use crate::tui::pane::{Changes, Cx, Detail, List, ListNav, Paged, Pane, Rows, SortBy};
use crate::tui::ui::{Col, Table, cell_style, col, empty, fill, fmt, hub};
use crate::wire::{Failover, WindowSort, WorkerState};

/// How the Workers view orders rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorkerSort {
    /// No route, lost, stale, then most recent failover, then id.
    #[default]
    Urgency,
    Worker,
    Host,
    /// Oldest heartbeat first.
    Age,
    /// Active agent's rank (no route first).
    Rank,
    /// Most recent failover first.
    Failover,
}

impl WorkerSort {
    pub const ALL: [WorkerSort; 6] = [
        WorkerSort::Urgency,
        WorkerSort::Worker,
        WorkerSort::Host,
        WorkerSort::Age,
        WorkerSort::Rank,
        WorkerSort::Failover,
    ];

    /// The hub's order for it (large-fleet mode); `None`: the hub has
    /// none (`failover`), so a large-fleet session skips it.
    pub fn window(self) -> Option<WindowSort> {
        Some(match self {
            WorkerSort::Urgency => WindowSort::Urgency,
            WorkerSort::Worker => WindowSort::Worker,
            WorkerSort::Host => WindowSort::Host,
            WorkerSort::Age => WindowSort::Age,
            WorkerSort::Rank => WindowSort::Rank,
            WorkerSort::Failover => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            WorkerSort::Urgency => "urgency",
            WorkerSort::Worker => "worker",
            WorkerSort::Host => "host",
            WorkerSort::Age => "age",
            WorkerSort::Rank => "rank",
            WorkerSort::Failover => "failover",
        }
    }
}

/// Newest failover first, each dated as the hub can tell (the earlier of
/// its `at` and the hub's receipt): a worker's clock ahead does not keep
/// it first.
fn failover_desc(a: &Entry, b: &Entry) -> Ordering {
    let fa = a.view.last_failover_at();
    let fb = b.view.last_failover_at();
    // Some(newer) < Some(older) < None
    match (fa, fb) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// Total order for a sort column: ties always end on the worker id, so the
/// order is a pure function of the data (which the incremental merge needs).
pub fn compare(sort: WorkerSort, a: &Entry, b: &Entry) -> Ordering {
    let primary = match sort {
        WorkerSort::Urgency => a
            .urgency()
            .cmp(&b.urgency())
            .then_with(|| failover_desc(a, b)),
        WorkerSort::Worker => Ordering::Equal,
        WorkerSort::Host => a.view.host.cmp(&b.view.host),
        WorkerSort::Age => a.view.received_at.cmp(&b.view.received_at),
        WorkerSort::Rank => a
            .active_rank()
            .map(|r| r + 1)
            .unwrap_or(0)
            .cmp(&b.active_rank().map(|r| r + 1).unwrap_or(0)),
        WorkerSort::Failover => failover_desc(a, b),
    };
    primary.then_with(|| a.view.worker.cmp(&b.view.worker))
}

/// A row's position as three machine words, so that sorting and merging
/// 100,000 rows runs over one contiguous array instead of chasing every
/// entry. Each word before the last encodes its field exactly, and string
/// prefixes are big-endian, so the key order never contradicts [`compare`];
/// equal keys fall back to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SortKey(u64, u64, u64, u64);

/// Bytes `from..from + 8` of `s`, big-endian, zero-padded (ids and hosts
/// hold no NUL, so padding sorts like the end of the string).
fn prefix(s: &str, from: usize) -> u64 {
    let b = s.as_bytes();
    let mut x = [0u8; 8];
    for (i, slot) in x.iter_mut().enumerate() {
        if let Some(c) = b.get(from + i) {
            *slot = *c;
        }
    }
    u64::from_be_bytes(x)
}

pub fn sort_key(sort: WorkerSort, e: &Entry) -> SortKey {
    let id = &e.view.worker;
    let fo = crate::query::failover_key(e.view.last_failover_at());
    match sort {
        WorkerSort::Urgency => SortKey(e.urgency() as u64, fo, prefix(id, 0), prefix(id, 8)),
        WorkerSort::Worker => SortKey(prefix(id, 0), prefix(id, 8), prefix(id, 16), prefix(id, 24)),
        WorkerSort::Host => {
            let h = &e.view.host;
            // Hosts of up to 24 bytes are encoded whole, so the last word
            // may order equal hosts by id; a longer host sorts after every
            // shorter one sharing its first 24 bytes, and ties among long
            // hosts fall back to the full comparison.
            let tail = if h.len() <= 24 {
                prefix(id, 0) >> 1
            } else {
                u64::MAX
            };
            SortKey(prefix(h, 0), prefix(h, 8), prefix(h, 16), tail)
        }
        WorkerSort::Age => SortKey(
            crate::query::time_key(e.view.received_at),
            prefix(id, 0),
            prefix(id, 8),
            prefix(id, 16),
        ),
        WorkerSort::Rank => SortKey(
            e.active_rank().map(|r| r as u64 + 1).unwrap_or(0),
            prefix(id, 0),
            prefix(id, 8),
            prefix(id, 16),
        ),
        WorkerSort::Failover => SortKey(fo, prefix(id, 0), prefix(id, 8), prefix(id, 16)),
    }
}

/// The Workers view's rows: slots in display order, after the filter.
#[derive(Debug, Clone)]
pub struct WorkerIndex {
    pub slots: Vec<Slot>,
    /// `keys[i]` is the sort key of `slots[i]`.
    keys: Vec<SortKey>,
    pub sort: WorkerSort,
    pub reverse: bool,
    /// The filter the index was built with.
    pub filter: Query,
    /// Large-fleet mode: `slots` is the window the hub answered, in the
    /// view's order, and this is the cursor over the hub's whole list.
    pub paged: Option<Paged>,
}

impl Default for WorkerIndex {
    fn default() -> Self {
        WorkerIndex {
            slots: Vec::new(),
            keys: Vec::new(),
            sort: WorkerSort::Urgency,
            reverse: false,
            filter: Query::default(),
            paged: None,
        }
    }
}

impl WorkerIndex {
    fn cmp(&self, fleet: &Fleet, a: (SortKey, Slot), b: (SortKey, Slot)) -> Ordering {
        let o =
            a.0.cmp(&b.0)
                .then_with(|| match (fleet.get(a.1), fleet.get(b.1)) {
                    (Some(ea), Some(eb)) => compare(self.sort, ea, eb),
                    _ => a.1.cmp(&b.1),
                });
        if self.reverse { o.reverse() } else { o }
    }

    /// An index built from scratch.
    pub fn build(fleet: &Fleet, sort: WorkerSort, reverse: bool, filter: &str) -> WorkerIndex {
        let mut i = WorkerIndex {
            sort,
            reverse,
            filter: Query::parse(filter, FIELDS),
            ..WorkerIndex::default()
        };
        i.rebuild(fleet);
        i
    }

    fn set_rows(&mut self, rows: Vec<(SortKey, Slot)>) {
        self.keys = rows.iter().map(|r| r.0).collect();
        self.slots = rows.into_iter().map(|r| r.1).collect();
    }

    /// Filter and sort the whole fleet.
    pub fn rebuild(&mut self, fleet: &Fleet) {
        let f = &self.filter;
        let sort = self.sort;
        let mut rows: Vec<(SortKey, Slot)> = fleet
            .iter()
            .filter(|(_, e)| e.matches(f))
            .map(|(s, e)| (sort_key(sort, e), s))
            .collect();
        rows.sort_unstable_by(|a, b| self.cmp(fleet, *a, *b));
        self.set_rows(rows);
    }

    /// Keep only rows whose slot passes `keep`.
    fn retain(&mut self, mut keep: impl FnMut(Slot) -> bool) {
        let mut w = 0;
        for r in 0..self.slots.len() {
            if keep(self.slots[r]) {
                self.slots[w] = self.slots[r];
                self.keys[w] = self.keys[r];
                w += 1;
            }
        }
        self.slots.truncate(w);
        self.keys.truncate(w);
    }

    /// A new filter. A filter that can only narrow the rows (see
    /// [`Query::narrows`]) filters the index in place without a sort.
    pub fn set_filter(&mut self, fleet: &Fleet, filter: &str) {
        let filter = Query::parse(filter, FIELDS);
        if filter == self.filter {
            return;
        }
        let narrows = filter.narrows(&self.filter);
        self.filter = filter;
        if narrows {
            let f = self.filter.clone();
            self.retain(|s| fleet.get(s).is_some_and(|e| e.matches(&f)));
        } else {
            self.rebuild(fleet);
        }
    }

    pub fn set_sort(&mut self, fleet: &Fleet, sort: WorkerSort, reverse: bool) {
        if sort == self.sort && reverse != self.reverse {
            // Keys are unchanged and ties are broken by id: reversing the
            // order is reversing the rows.
            self.reverse = reverse;
            self.slots.reverse();
            self.keys.reverse();
        } else if (sort, reverse) != (self.sort, self.reverse) {
            self.sort = sort;
            self.reverse = reverse;
            self.rebuild(fleet);
        }
    }

    /// Re-place the `changed` slots (updated, added, removed, or whose
    /// derived state moved) without sorting the rest: drop them, sort them
    /// alone, and insert each by binary search over the kept keys. Unchanged
    /// rows keep their relative order because keys are a pure function of
    /// each row's data.
    pub fn apply_changes(&mut self, fleet: &Fleet, changed: &[Slot]) {
        if changed.is_empty() {
            return;
        }
        if changed.len() * 4 > self.slots.len().max(64) {
            self.rebuild(fleet);
            return;
        }
        let mut mark = vec![false; fleet.capacity().max(1)];
        for &s in changed {
            if let Some(m) = mark.get_mut(s as usize) {
                *m = true;
            }
        }
        self.retain(|s| !mark.get(s as usize).copied().unwrap_or(false));
        let f = &self.filter;
        let mut fresh: Vec<(SortKey, Slot)> = Vec::with_capacity(changed.len());
        for &s in changed {
            let m = &mut mark[s as usize];
            // A slot listed twice is placed once.
            if !*m {
                continue;
            }
            *m = false;
            if let Some(e) = fleet.get(s).filter(|e| e.matches(f)) {
                fresh.push((sort_key(self.sort, e), s));
            }
        }
        fresh.sort_unstable_by(|a, b| self.cmp(fleet, *a, *b));
        let old_slots = std::mem::take(&mut self.slots);
        let old_keys = std::mem::take(&mut self.keys);
        let n = old_slots.len() + fresh.len();
        let (mut slots, mut keys) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let mut from = 0;
        for row in fresh {
            // First kept row that sorts after `row`, searching only past
            // where the previous fresh row went.
            let (mut lo, mut hi) = (from, old_slots.len());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if self.cmp(fleet, (old_keys[mid], old_slots[mid]), row) == Ordering::Greater {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            let at = lo;
            slots.extend_from_slice(&old_slots[from..at]);
            keys.extend_from_slice(&old_keys[from..at]);
            slots.push(row.1);
            keys.push(row.0);
            from = at;
        }
        slots.extend_from_slice(&old_slots[from..]);
        keys.extend_from_slice(&old_keys[from..]);
        self.slots = slots;
        self.keys = keys;
    }
}

impl SortBy for WorkerSort {
    const ALL: &'static [Self] = &WorkerSort::ALL;

    fn name(self) -> &'static str {
        WorkerSort::name(self)
    }
}

impl Rows for WorkerIndex {
    type Key = Slot;
    fn keys(&self) -> &[Slot] {
        &self.slots
    }
    fn paged(&self) -> Option<&Paged> {
        self.paged.as_ref()
    }
    fn paged_mut(&mut self) -> Option<&mut Paged> {
        self.paged.as_mut()
    }
}

/// The Workers pane.
#[derive(Debug, Default)]
pub struct Workers {
    pub list: List<WorkerIndex, WorkerSort>,
}

impl Workers {
    /// When the filter left no row, which of its terms did it.
    fn note_emptied(&mut self, fleet: &Fleet) {
        let w = &self.list;
        let q = &w.rows.filter;
        let emptied = (w.is_empty() && !q.is_empty() && !fleet.is_empty()).then(|| {
            q.empty_text("worker", &w.filter.text, |q| {
                fleet.iter().any(|(_, e)| q.matches(e))
            })
        });
        self.list.emptied = emptied;
    }
}

impl Pane for Workers {
    fn id(&self) -> PaneId {
        WORKERS
    }

    fn title(&self) -> &'static str {
        "Workers"
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

    fn settle(&mut self, m: &Model, ch: &Changes, _visible: bool, _mono: Instant) -> bool {
        if m.large.is_some() {
            return self.settle_paged(m, ch);
        }
        let fleet = &m.fleet;
        let w = &mut self.list;
        if w.rows.paged.take().is_some() {
            // Out of large-fleet mode: the fleet is held again.
            w.marked = true;
            w.sel = Default::default();
        }
        let own = w.take_mark();
        if own {
            w.rows.set_sort(fleet, w.sort, w.reverse);
            w.rows.set_filter(fleet, &w.filter.text);
        }
        if ch.all_workers {
            w.rows.rebuild(fleet);
        } else if !ch.slots.is_empty() {
            w.rows.apply_changes(fleet, &ch.slots);
        }
        if !(own || ch.fleet()) {
            return false;
        }
        self.list.resync();
        self.note_emptied(fleet);
        true
    }

    fn selected(&self, m: &Model) -> Option<Detail> {
        self.list
            .selected()
            .and_then(|s| m.fleet.get(*s))
            .map(|e| Detail::Worker(e.view.worker.to_string()))
    }

    fn select(&mut self, m: &Model, d: &Detail) -> bool {
        let Detail::Worker(id) = d else {
            return false;
        };
        let Some(slot) = m.fleet.slot_of(id) else {
            return false;
        };
        match self.list.rows.slots.iter().position(|s| *s == slot) {
            Some(pos) if self.list.rows.paged.is_some() => {
                if let Some(p) = &mut self.list.rows.paged {
                    p.pos = p.base + pos;
                }
                self.list.sync_paged();
                true
            }
            Some(pos) => {
                self.list.sel.set(&self.list.rows.slots, pos);
                true
            }
            None => false,
        }
    }

    fn draw(&self, cx: &Cx, area: Rect, buf: &mut Buffer) {
        self.draw_workers(cx, area, buf)
    }

    fn ask_window(&mut self, m: &mut Model) -> Option<WindowAsk> {
        let l = m.large.as_mut()?;
        let list = &mut self.list;
        let sort = list.sort.window()?;
        let p = list.rows.paged.as_mut()?;
        let (from, n) = p.take_want()?;
        let total = p.total as u64;
        l.ask(
            sort,
            &list.filter.text,
            list.reverse,
            from as u64,
            u32::try_from(n)
                .unwrap_or(crate::wire::MAX_WINDOW)
                .min(crate::wire::MAX_WINDOW),
            total,
        )
    }

    fn row_ids(&self, m: &Model) -> Vec<String> {
        self.list
            .rows
            .slots
            .iter()
            .filter_map(|s| m.fleet.get(*s))
            .map(|e| e.view.worker.to_string())
            .collect()
    }
}

impl Workers {
    /// Large-fleet mode: the rows are the window the hub answered for the
    /// view's sort and filter; a new sort or filter starts at the top.
    fn settle_paged(&mut self, m: &Model, ch: &Changes) -> bool {
        let w = &mut self.list;
        let own = w.take_mark();
        if w.sort.window().is_none() {
            // The hub has no failover order: the next one it has.
            w.sort = WorkerSort::Urgency;
        }
        let entering = w.rows.paged.is_none();
        let p = w.rows.paged.get_or_insert_with(Paged::default);
        if own || entering {
            *p = Paged::default();
            w.sel = Default::default();
        }
        if !(own || entering || ch.fleet()) {
            return false;
        }
        let sort = w.sort.window();
        let win = m.large.as_ref().map(|l| &l.window);
        let this_list = win.is_some_and(|x| match &x.ask {
            Some(a) => Some(a.sort) == sort && a.q == w.filter.text && a.reverse == w.reverse,
            // The summary's urgent workers: the default view's first rows.
            None => {
                !x.slots.is_empty()
                    && sort == Some(WindowSort::Urgency)
                    && w.filter.text.is_empty()
                    && !w.reverse
            }
        });
        match win {
            Some(x) if this_list => {
                w.rows.slots.clone_from(&x.slots);
                p.total = usize::try_from(x.total).unwrap_or(usize::MAX);
                p.base = usize::try_from(x.base).unwrap_or(usize::MAX);
                p.held = x.slots.len();
                // The window answered: the next move that needs another
                // may ask the same rows again.
                p.asked = None;
            }
            _ => {
                w.rows.slots.clear();
                p.held = 0;
                if p.total == 0 && w.filter.text.is_empty() {
                    let n = m
                        .large
                        .as_ref()
                        .and_then(|l| l.summary.as_ref())
                        .map_or(0, |s| s.workers);
                    p.total = usize::try_from(n).unwrap_or(usize::MAX);
                }
            }
        }
        w.rows.keys.clear();
        w.emptied = None;
        w.sync_paged();
        true
    }

    fn draw_paged(&self, cx: &Cx, p: &Paged, area: Rect, buf: &mut Buffer) {
        let rows_h = area.height.saturating_sub(1) as usize;
        let list = &self.list;
        let c = list.cursor();
        let (a, b) = crate::tui::ui::geom::visible(c, rows_h);
        let rows: Vec<Vec<Span<'static>>> = (a..b)
            .map(|i| {
                let held = i
                    .checked_sub(p.base)
                    .filter(|k| *k < p.held)
                    .and_then(|k| list.rows.slots.get(k))
                    .and_then(|s| cx.model.fleet.get(*s));
                match held {
                    Some(e) => cells(cx, e),
                    None => vec![Span::styled("…", cx.theme.muted())],
                }
            })
            .collect();
        let (col, desc) = sort_col(list.sort);
        let sorted = Some((col, desc != list.reverse));
        let selected = (c.len > 0).then(|| c.pos.saturating_sub(a));
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
        if c.len == 0 && area.height > 1 {
            let answered = cx
                .model
                .large
                .as_ref()
                .and_then(|l| l.window.ask.as_ref())
                .is_some();
            let msg = if !answered {
                "asking the hub for the rows on screen"
            } else if list.filter.text.is_empty() {
                cx.model
                    .coming
                    .as_deref()
                    .unwrap_or("no workers have reported yet")
            } else {
                "no worker matches the filter (the hub's answer)"
            };
            empty(cx.theme, area, buf, msg);
        }
    }

    fn draw_workers(&self, cx: &Cx, area: Rect, buf: &mut Buffer) {
        if let Some(p) = &self.list.rows.paged {
            return self.draw_paged(cx, p, area, buf);
        }
        let rows_h = area.height.saturating_sub(1) as usize;
        let list = &self.list;
        let rows: Vec<Vec<Span<'static>>> = list
            .window(rows_h)
            .iter()
            .filter_map(|&s| cx.model.fleet.get(s))
            .map(|e| cells(cx, e))
            .collect();
        // WORKER HOST AGE STATE ACTIVE SYNC LAST FAILOVER: urgency marks
        // STATE (most urgent first), age falls (oldest heartbeat first).
        let (col, desc) = sort_col(list.sort);
        let sorted = Some((col, desc != list.reverse));
        let selected = list.selected_row(rows_h);
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
        if list.is_empty() && area.height > 1 {
            let msg = if cx.model.fleet.is_empty() {
                cx.model
                    .coming
                    .as_deref()
                    .unwrap_or("no workers have reported yet")
            } else {
                list.emptied
                    .as_deref()
                    .unwrap_or("no worker matches the filter")
            };
            empty(cx.theme, area, buf, msg);
        }
    }
}

/// The column a sort marks, and whether its values fall down the rows.
fn sort_col(sort: WorkerSort) -> (usize, bool) {
    match sort {
        WorkerSort::Urgency => (3, true),
        WorkerSort::Worker => (0, false),
        WorkerSort::Host => (1, false),
        WorkerSort::Age => (2, true),
        WorkerSort::Rank => (4, false),
        WorkerSort::Failover => (6, true),
    }
}

pub const COLS: [Col; 7] = [
    col("WORKER", 7, 36, 0),
    col("HOST", 8, 24, 4),
    col("AGE", 3, 4, 2),
    col("STATE", 5, 8, 1),
    col("ACTIVE", 11, 20, 0),
    col("SYNC", 4, 12, 3),
    fill("LAST FAILOVER", 16, 0),
];

/// `opencode→claude rate_limited 429 3m`, aged from `seen` (the earlier
/// of its `at` and the hub's receipt).
pub fn failover_text(cx: &Cx, f: &Failover, seen: chrono::DateTime<chrono::Utc>) -> String {
    let t = cx.theme;
    let to = f.to.as_deref().map(hub).unwrap_or("(none)".into());
    let mut s = format!("{}{}{} {}", hub(&f.from), t.arrow(), to, f.cause.kind);
    if let Some(st) = f.cause.status {
        s.push_str(&format!(" {st}"));
    }
    s.push(' ');
    s.push_str(&fmt::age_at(cx.now, seen));
    s
}

pub fn cells(cx: &Cx, e: &Entry) -> Vec<Span<'static>> {
    let t = cx.theme;
    let v = &e.view;
    let worker_style = if e.no_route() {
        t.no_route()
    } else {
        Style::new()
    };
    let active = match (&v.active_agent, e.active_rank()) {
        (Some(a), Some(r)) => Span::raw(format!("{} #{r}", hub(a))),
        (Some(a), None) => Span::raw(format!("{} #?", hub(a))),
        (None, _) => Span::styled("(none)", cell_style(cx.theme, cx.stale, t.no_route())),
    };
    let sync = if e.in_sync {
        Span::raw(t.yes())
    } else if crate::tui::model::fleet::other_list(e, &cx.model.fleet.revision) {
        // On the fleet's revision with another list (`get workers`' `list`).
        Span::styled("list", cell_style(cx.theme, cx.stale, t.warn()))
    } else {
        Span::styled(
            hub(v.config_revision.as_deref().unwrap_or("-")).into_owned(),
            cell_style(cx.theme, cx.stale, t.warn()),
        )
    };
    let last = match (v.last_failover(), v.last_failover_at()) {
        (Some(f), Some(seen)) => Span::raw(failover_text(cx, f, seen)),
        _ => Span::styled("-", t.muted()),
    };
    // A healthy worker with no route is never called healthy: its
    // heartbeat is fine, its route is not (the fleet line and the detail
    // keep the hub's word beside it).
    let (state, state_style) = match e.state {
        WorkerState::Healthy if e.no_route() => ("no route", t.no_route()),
        WorkerState::Healthy => ("healthy", t.muted()),
        s => (s.as_str(), t.state(s)),
    };
    vec![
        Span::styled(
            hub(&v.worker).into_owned(),
            cell_style(cx.theme, cx.stale, worker_style),
        ),
        Span::raw(hub(&v.host).into_owned()),
        // Coloured by the state the hub's rule gives this age: what the
        // hub will assign next (its sweeper acts within about a second).
        Span::styled(
            fmt::age_at(cx.now, v.received_at),
            match cx.model.fleet.state_due(v.received_at, cx.now) {
                WorkerState::Healthy => Style::new(),
                due => cell_style(cx.theme, cx.stale, t.state(due)),
            },
        ),
        Span::styled(state, cell_style(cx.theme, cx.stale, state_style)),
        active,
        sync,
        last,
    ]
}
