//! The fleet as the TUI holds it: workers in a slab keyed by id, running
//! aggregates for the header and the ladder, and the sorted, filtered index
//! the Workers view draws from.
//!
//! Everything here is maintained incrementally: a delta of `c` workers costs
//! `O(c log n)` for the map and aggregates and `O(n)` (one merge pass, no
//! sort of the whole fleet) for the index.

use std::cmp::Ordering;
use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::compact::{Interner, Worker};
use super::query::{Query, Searchable, starts_ci};
use crate::scrub::scrub;
use crate::wire::{Preflight, WorkerState, WorkerView};

/// A stable handle on a worker while it is in the fleet.
pub type Slot = u32;

/// One worker and what the TUI derives from it.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The worker as last reported, in compact form.
    pub view: Worker,
    /// Liveness as the hub last judged it (a page, a `state` event): the
    /// TUI never re-judges it on its own clock, so a hub it cannot reach
    /// does not turn into a fleet gone stale.
    pub state: WorkerState,
    /// On the fleet's current revision.
    pub in_sync: bool,
    /// Lower-cased, scrubbed text the filter matches: worker, host, agents, cause.
    hay: Box<str>,
}

/// The projection reads entries as they are held (no wire copies).
impl crate::plan::Seat for Entry {
    fn state(&self) -> WorkerState {
        self.state
    }
    fn agents(&self) -> impl Iterator<Item = &str> {
        self.view.agents.iter().map(|a| &**a)
    }
    fn active_agent(&self) -> Option<&str> {
        self.view.active_agent.as_deref()
    }
    fn capability(&self, agent: &str) -> Option<crate::wire::Capability> {
        self.view.capabilities.get(agent).copied()
    }
    fn reported(&self) -> impl Iterator<Item = &str> {
        self.view.capabilities.keys().map(|a| &**a)
    }
}

impl Entry {
    fn new(view: Worker, state: WorkerState, revision: &str) -> Entry {
        let in_sync = view.config_revision.as_deref() == Some(revision);
        let hay = haystack(&view);
        Entry {
            view,
            state,
            in_sync,
            hay,
        }
    }

    /// The worker in wire form, as the TUI sees it now.
    pub fn to_wire(&self) -> WorkerView {
        self.view.to_wire(self.state, self.in_sync)
    }

    pub fn matches(&self, q: &Query) -> bool {
        q.matches(self)
    }

    /// No route and still alive: the worker fails closed right now.
    pub fn no_route(&self) -> bool {
        self.view.active_agent.is_none() && self.state != WorkerState::Lost
    }

    /// 0 no route, 1 lost, 2 stale, 3 healthy.
    pub fn urgency(&self) -> u8 {
        if self.no_route() {
            0
        } else {
            match self.state {
                WorkerState::Lost => 1,
                WorkerState::Stale => 2,
                WorkerState::Healthy => 3,
            }
        }
    }

    /// Rank of the active agent in the worker's own list, rank 0 first.
    pub fn active_rank(&self) -> Option<usize> {
        let active = self.view.active_agent.as_deref()?;
        self.view.agents.iter().position(|a| &**a == active)
    }
}

/// Fields a Workers filter can name (`state:lost`, `agent:pi`, ...).
pub const FIELDS: &[&str] = &["worker", "host", "state", "agent", "rank", "cause", "rev"];

impl Searchable for Entry {
    fn shows(&self, needle: &str) -> bool {
        self.hay.contains(needle) || self.state.as_str().contains(needle)
    }

    fn field_starts(&self, field: &str, value: &str) -> bool {
        let v = &self.view;
        match field {
            "worker" => starts_ci(&v.worker, value),
            "host" => starts_ci(&v.host, value),
            "state" => starts_ci(self.state.as_str(), value),
            "agent" => starts_ci(v.active_agent.as_deref().unwrap_or("no route"), value),
            "rank" => self
                .active_rank()
                .is_some_and(|r| starts_ci(&r.to_string(), value)),
            "cause" => v
                .last_failover
                .as_ref()
                .is_some_and(|f| starts_ci(f.cause.kind.as_str(), value)),
            "rev" => v
                .config_revision
                .as_deref()
                .is_some_and(|r| starts_ci(r, value)),
            _ => false,
        }
    }
}

fn haystack(v: &Worker) -> Box<str> {
    let mut s = String::with_capacity(v.worker.len() + v.host.len() + 48);
    s.push_str(&v.worker);
    s.push('\u{1f}');
    s.push_str(&v.host);
    s.push('\u{1f}');
    if let Some(a) = &v.active_agent {
        // As the row shows it: `opencode #0`.
        s.push_str(a);
        match v.agents.iter().position(|x| x == a) {
            Some(r) => s.push_str(&format!(" #{r}")),
            None => s.push_str(" #?"),
        }
    } else {
        s.push_str("no route");
    }
    if let Some(f) = &v.last_failover {
        s.push('\u{1f}');
        s.push_str(&f.from);
        s.push('\u{1f}');
        if let Some(to) = &f.to {
            s.push_str(to);
        }
        s.push('\u{1f}');
        s.push_str(f.cause.kind.as_str());
        if let Some(d) = &f.cause.detail {
            s.push('\u{1f}');
            s.push_str(&scrub(d));
        }
    }
    s.make_ascii_lowercase();
    s.into_boxed_str()
}

/// Per-agent counts over live (not lost) workers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentCounts {
    /// Binary, token and preflight all fine.
    pub capable: usize,
    /// Running it now.
    pub active: usize,
    pub no_binary: usize,
    pub no_token: usize,
    pub preflight_failed: usize,
}

/// The fleet at a glance. Route, capability and revision counts cover live
/// workers only (healthy and stale): a lost worker runs nothing we know of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Aggregates {
    pub total: usize,
    pub healthy: usize,
    pub stale: usize,
    pub lost: usize,
    pub no_route: usize,
    /// Off rank 0 (live, with a route), stale, or lost: the status word's
    /// `DEGRADED n`.
    pub degraded: usize,
    pub out_of_sync: usize,
    pub agents: HashMap<String, AgentCounts>,
}

impl Aggregates {
    fn apply(&mut self, e: &Entry, add: bool) {
        let d = |n: &mut usize| {
            if add { *n += 1 } else { *n -= 1 }
        };
        d(&mut self.total);
        match e.state {
            WorkerState::Healthy => {
                d(&mut self.healthy);
                if e.view.active_agent.is_some() && e.active_rank() != Some(0) {
                    d(&mut self.degraded);
                }
            }
            WorkerState::Stale => {
                d(&mut self.stale);
                d(&mut self.degraded);
            }
            WorkerState::Lost => {
                d(&mut self.lost);
                d(&mut self.degraded);
                return;
            }
        }
        if e.view.active_agent.is_none() {
            d(&mut self.no_route);
        }
        if !e.in_sync {
            d(&mut self.out_of_sync);
        }
        for (agent, cap) in e.view.capabilities.iter() {
            let c = self.counts_mut(agent);
            if cap.capable() {
                d(&mut c.capable);
            }
            if !cap.binary {
                d(&mut c.no_binary);
            }
            if !cap.token {
                d(&mut c.no_token);
            }
            if cap.preflight == Preflight::Failed {
                d(&mut c.preflight_failed);
            }
        }
        if let Some(active) = &e.view.active_agent {
            d(&mut self.counts_mut(active).active);
        }
    }

    fn counts_mut(&mut self, agent: &str) -> &mut AgentCounts {
        if !self.agents.contains_key(agent) {
            self.agents
                .insert(agent.to_string(), AgentCounts::default());
        }
        self.agents.get_mut(agent).expect("just inserted")
    }

    pub fn agent(&self, agent: &str) -> AgentCounts {
        self.agents.get(agent).copied().unwrap_or_default()
    }
}

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

fn failover_desc(a: &Entry, b: &Entry) -> Ordering {
    let fa = a.view.last_failover.as_ref().map(|f| f.at);
    let fb = b.view.last_failover.as_ref().map(|f| f.at);
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

#[derive(Debug, Default)]
pub struct Fleet {
    entries: Vec<Option<Entry>>,
    free: Vec<Slot>,
    ids: HashMap<String, Slot, foldhash::fast::RandomState>,
    intern: Interner,
    pub revision: String,
    pub interval_s: u64,
    pub agg: Aggregates,
}

impl Fleet {
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub fn get(&self, slot: Slot) -> Option<&Entry> {
        self.entries.get(slot as usize).and_then(|e| e.as_ref())
    }

    pub fn slot_of(&self, id: &str) -> Option<Slot> {
        self.ids.get(id).copied()
    }

    pub fn by_id(&self, id: &str) -> Option<&Entry> {
        self.slot_of(id).and_then(|s| self.get(s))
    }

    /// Upper bound of slot numbers (for bitmaps).
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (Slot, &Entry)> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|e| (i as Slot, e)))
    }

    /// The state the hub's rule gives a worker last heard at `received`,
    /// at `now` by the hub's clock: what the hub will assign next (its
    /// sweeper moves a worker within about a second of the threshold).
    /// For showing what is coming only; [`Entry::state`] is the hub's.
    pub fn state_due(&self, received: DateTime<Utc>, now: DateTime<Utc>) -> WorkerState {
        let age = (now - received).num_milliseconds() as f64 / 1000.0;
        WorkerState::from_age(age, self.interval_s)
    }

    /// A worker view from the hub, unless what we hold is newer: a view
    /// of an older heartbeat is dropped, and for the same heartbeat the
    /// state only moves on (healthy → stale → lost), so a poll answered
    /// before a `state` event but read after it cannot undo the move.
    /// Returns the slot when something was applied.
    pub fn apply_hub(&mut self, mut view: WorkerView) -> Option<Slot> {
        if let Some(old) = self.by_id(&view.worker) {
            let held = &old.view;
            if held.received_at > view.received_at {
                return None;
            }
            if held.received_at == view.received_at {
                view.state = view.state.max(old.state);
            }
        }
        Some(self.upsert(view))
    }

    /// Insert or replace one worker. Returns its slot.
    pub fn upsert(&mut self, view: WorkerView) -> Slot {
        let state = view.state;
        let view = self.intern.worker(view);
        let entry = Entry::new(view, state, &self.revision);
        if let Some(&slot) = self.ids.get(&*entry.view.worker) {
            let old = self.entries[slot as usize]
                .take()
                .expect("ids point at live entries");
            self.agg.apply(&old, false);
            self.agg.apply(&entry, true);
            self.entries[slot as usize] = Some(entry);
            slot
        } else {
            let slot = match self.free.pop() {
                Some(s) => s,
                None => {
                    self.entries.push(None);
                    (self.entries.len() - 1) as Slot
                }
            };
            self.ids.insert(entry.view.worker.to_string(), slot);
            self.agg.apply(&entry, true);
            self.entries[slot as usize] = Some(entry);
            slot
        }
    }

    pub fn remove(&mut self, id: &str) -> Option<Slot> {
        let slot = self.ids.remove(id)?;
        let old = self.entries[slot as usize].take().expect("live entry");
        self.agg.apply(&old, false);
        self.free.push(slot);
        Some(slot)
    }

    /// A new current revision: every worker's in-sync mark may change.
    /// Returns the slots whose mark changed.
    pub fn set_revision(&mut self, revision: &str) -> Vec<Slot> {
        if self.revision == revision {
            return Vec::new();
        }
        self.revision = revision.to_string();
        let mut changed = Vec::new();
        for (i, e) in self.entries.iter_mut().enumerate() {
            let Some(e) = e else { continue };
            let in_sync = e.view.config_revision.as_deref() == Some(revision);
            if in_sync != e.in_sync {
                self.agg.apply(e, false);
                e.in_sync = in_sync;
                self.agg.apply(e, true);
                changed.push(i as Slot);
            }
        }
        changed
    }

    /// The hub's heartbeat interval (its thresholds are 3 and 10 of them).
    pub fn set_interval(&mut self, interval_s: u64) {
        self.interval_s = interval_s;
    }

    /// Replace the whole fleet with a full page: present workers are
    /// upserted (keeping their slots), absent ones removed.
    pub fn replace_all(&mut self, workers: Vec<WorkerView>) {
        let keep: std::collections::HashSet<&str, foldhash::fast::RandomState> =
            workers.iter().map(|w| w.worker.as_str()).collect();
        let gone: Vec<String> = self
            .ids
            .keys()
            .filter(|id| !keep.contains(id.as_str()))
            .cloned()
            .collect();
        for id in gone {
            self.remove(&id);
        }
        for w in workers {
            self.upsert(w);
        }
    }
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

/// Order-preserving map of a time to `u64` (full precision).
fn ts(t: DateTime<Utc>) -> u64 {
    let n = t
        .timestamp_nanos_opt()
        .unwrap_or_else(|| t.timestamp().saturating_mul(1_000_000_000));
    (n as u64) ^ (1 << 63)
}

pub fn sort_key(sort: WorkerSort, e: &Entry) -> SortKey {
    let id = &e.view.worker;
    // Newest failover first, none last.
    let fo = e
        .view
        .last_failover
        .as_ref()
        .map(|f| !ts(f.at))
        .unwrap_or(u64::MAX);
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
            ts(e.view.received_at),
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
}

impl Default for WorkerIndex {
    fn default() -> Self {
        WorkerIndex {
            slots: Vec::new(),
            keys: Vec::new(),
            sort: WorkerSort::Urgency,
            reverse: false,
            filter: Query::default(),
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
