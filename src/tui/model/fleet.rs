//! The fleet as the TUI holds it: workers in a slab keyed by id and running
//! aggregates for the header and the ladder (the Workers pane keeps its
//! sorted, filtered index over it: `panes::workers`).
//!
//! Everything here is maintained incrementally: a delta of `c` workers costs
//! `O(c log n)` for the map and aggregates.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::compact::{Interner, Worker};
use super::query::{FailoverRow, Query, Searchable, WorkerRow};
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
    /// The hub's `in_sync` (the revision and the list it was given), as
    /// long as it reports the revision it is told now: the fleet's current
    /// one, or, for a cohort worker while a staged rollout bakes, its
    /// candidate (a new revision puts it out of sync before the hub's
    /// `sync` event says so).
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
    fn headroom(&self) -> Option<u32> {
        self.view.headroom
    }
}

impl Entry {
    fn new(view: Worker, state: WorkerState, revision: &str, candidate: Option<&str>) -> Entry {
        let in_sync = told(&view, revision, candidate);
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

    /// Healthy, on a rung, and nothing left below it (the hub's
    /// `headroom` 0): the next failure leaves it with no route. A worker
    /// with no route is not one of these: it has none already.
    pub fn one_failure_from_no_route(&self) -> bool {
        self.state == WorkerState::Healthy && self.view.on_last_rung()
    }

    /// No route and still alive: the worker fails closed right now.
    pub fn no_route(&self) -> bool {
        self.view.active_agent.is_none() && self.state != WorkerState::Lost
    }

    /// 0 no route, 1 lost, 2 stale, 3 healthy (the domain's order, which
    /// the hub's `urgency` windows use too).
    pub fn urgency(&self) -> u8 {
        crate::query::urgency(self.view.active_agent.is_some(), self.state)
    }

    /// Rank of the active agent in the worker's own list, rank 0 first.
    pub fn active_rank(&self) -> Option<usize> {
        let active = self.view.active_agent.as_deref()?;
        self.view.agents.iter().position(|a| &**a == active)
    }
}

/// In sync as the hub says (its revision and its list: one on the
/// current revision with another list is not), and on the revision it is
/// told now: `revision`, or `candidate` (the staged rollout's, while it
/// bakes) when the hub says it is in the cohort. A cohort worker on the
/// candidate is not behind.
fn told(v: &Worker, revision: &str, candidate: Option<&str>) -> bool {
    let reports = v.config_revision.as_deref();
    v.said_in_sync
        && (reports == Some(revision) || (v.cohort && candidate.is_some() && reports == candidate))
}

/// On the fleet's revision, out of the cohort, and yet out of sync: it
/// reports another list than it was given (`SYNC` `list`, as `get
/// workers`).
pub fn other_list(e: &Entry, revision: &str) -> bool {
    !e.in_sync && !e.view.cohort && e.view.config_revision.as_deref() == Some(revision)
}

/// Fields a Workers filter can name (`state:lost`, `agent:pi`, ...): the
/// hub's `/v1/workers?q=` takes the same ([`crate::query::WORKER_FIELDS`]).
pub const FIELDS: &[&str] = crate::query::WORKER_FIELDS;

impl Searchable for Entry {
    fn shows(&self, needle: &str) -> bool {
        self.row().shows_in(&self.hay, needle)
    }

    fn field_starts(&self, field: &str, value: &str) -> bool {
        self.row().field_starts(field, value)
    }
}

impl Entry {
    /// The row as the domain's filter and urgency order read it, the
    /// failover's detail as held (scrubbed into the haystack when built).
    pub fn row(&self) -> WorkerRow<'_> {
        row_of(&self.view, self.state, None)
    }
}

fn row_of<'a>(v: &'a Worker, state: WorkerState, detail: Option<&'a str>) -> WorkerRow<'a> {
    WorkerRow {
        worker: &v.worker,
        host: &v.host,
        state,
        active_agent: v.active_agent.as_deref(),
        rank: crate::query::rank_in(v.agents.iter(), v.active_agent.as_deref()),
        config_revision: v.config_revision.as_deref(),
        last_failover: v.last_failover().map(|f| FailoverRow {
            from: &f.from,
            to: f.to.as_deref(),
            kind: f.cause.kind.as_str(),
            detail,
        }),
    }
}

fn haystack(v: &Worker) -> Box<str> {
    let detail = v
        .last_failover()
        .and_then(|f| f.cause.detail.as_deref())
        .map(scrub);
    let mut s = String::with_capacity(v.worker.len() + v.host.len() + 48);
    // The state is not in the haystack (it changes without the view).
    row_of(v, WorkerState::Healthy, detail.as_deref()).haystack_into(&mut s);
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
    /// Healthy workers running it with nothing left below it: one failure
    /// from no route.
    pub last_rung: usize,
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
    /// Healthy (heartbeating) and yet with no route: counted in `healthy`
    /// and in `no_route`, never shown as healthy without saying so.
    pub healthy_no_route: usize,
    /// Off rank 0 (live, with a route), stale, or lost: the status word's
    /// `DEGRADED n`.
    pub degraded: usize,
    pub out_of_sync: usize,
    /// Healthy workers on a rung with nothing left below it (headroom 0):
    /// one failure from no route. Never counts one with no route.
    pub one_failure: usize,
    /// Live workers whose headroom the hub reported (0 from an older hub:
    /// then nothing is said about headroom).
    pub headroom_known: usize,
    pub agents: HashMap<String, AgentCounts>,
    /// The hub's summary (large-fleet mode): set whole, never counted.
    pub from_hub: bool,
}

impl Aggregates {
    fn apply(&mut self, e: &Entry, add: bool) {
        if self.from_hub {
            return;
        }
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
            if e.state == WorkerState::Healthy {
                d(&mut self.healthy_no_route);
            }
        }
        if !e.in_sync {
            d(&mut self.out_of_sync);
        }
        if e.view.headroom.is_some() {
            d(&mut self.headroom_known);
        }
        let last = e.one_failure_from_no_route();
        if last {
            d(&mut self.one_failure);
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
            let c = self.counts_mut(active);
            d(&mut c.active);
            if last {
                d(&mut c.last_rung);
            }
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

#[derive(Debug, Default)]
pub struct Fleet {
    entries: Vec<Option<Entry>>,
    free: Vec<Slot>,
    ids: HashMap<String, Slot, foldhash::fast::RandomState>,
    intern: Interner,
    pub revision: String,
    /// The candidate revision of the staged rollout baking, which its
    /// cohort is told (`None`: none bakes).
    pub candidate: Option<String>,
    pub interval_s: u64,
    /// The fleet's counts; in large-fleet mode, where the fleet holds
    /// only the rows on screen, the hub's summary (set whole by
    /// [`Fleet::set_summary`]), never counted from them.
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
        let entry = Entry::new(view, state, &self.revision, self.candidate.as_deref());
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
        self.resync()
    }

    /// A staged rollout's candidate baking (`None`: none bakes): the
    /// cohort's in-sync marks follow it. Returns the slots whose mark
    /// changed.
    pub fn set_candidate(&mut self, candidate: Option<&str>) -> Vec<Slot> {
        if self.candidate.as_deref() == candidate {
            return Vec::new();
        }
        self.candidate = candidate.map(str::to_string);
        self.resync()
    }

    /// Every worker's in-sync mark judged again; the slots that changed.
    fn resync(&mut self) -> Vec<Slot> {
        let (revision, candidate) = (&self.revision, self.candidate.as_deref());
        let mut changed = Vec::new();
        for (i, e) in self.entries.iter_mut().enumerate() {
            let Some(e) = e else { continue };
            let in_sync = told(&e.view, revision, candidate);
            if in_sync != e.in_sync {
                self.agg.apply(e, false);
                e.in_sync = in_sync;
                self.agg.apply(e, true);
                changed.push(i as Slot);
            }
        }
        changed
    }

    /// Large-fleet mode: the counts are the hub's summary's, whatever
    /// rows are held.
    pub fn set_summary(&mut self, mut agg: Aggregates) {
        agg.from_hub = true;
        self.agg = agg;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture::{self, REVISION, t0};

    /// Worker 1 reports the fleet's revision and another list: the hub
    /// says it is not in sync, and so does the fleet, counted and named.
    #[test]
    fn a_worker_on_the_revision_with_another_list_is_out_of_sync() {
        let mut f = Fleet::default();
        f.set_revision(REVISION);
        let same = fixture::worker(0, t0());
        let mut other = fixture::worker(1, t0());
        other.agents = vec!["cursor".into(), "claude".into()];
        other.in_sync = false;
        assert_eq!(other.config_revision.as_deref(), Some(REVISION));
        f.upsert(same);
        let slot = f.upsert(other);
        assert_eq!(f.agg.out_of_sync, 1, "{:?}", f.agg);
        let e = f.get(slot).expect("held");
        assert!(!e.in_sync);
        assert!(other_list(e, REVISION));
        assert!(!e.to_wire().in_sync, "given back as the hub said it");
        let same = f.by_id("w-00000").expect("held");
        assert!(same.in_sync && !other_list(same, REVISION));
        // A new revision puts the one in sync out of it before the hub's
        // `sync` event; neither is "another list" on it.
        f.set_revision("r43");
        assert_eq!(f.agg.out_of_sync, 2);
        assert!(f.iter().all(|(_, e)| !other_list(e, "r43")));
    }
}
