//! Every worker's last heartbeat, in memory, keyed by id. Each change gets
//! a sequence number so that `GET /v1/workers?since=` answers only what
//! changed; a sweeper moves workers to `stale` and `lost` by the hub's own
//! clock and counts that as a change too. Sweeper moves and `in_sync`
//! flips are published on the event feed (`state`, `sync`) under the same
//! lock that made them, so the feed's order is the order of change.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::events::{Events, Payload};
use super::ingest::HeartbeatIn;
use crate::wire::{Capability, Failover, Preflight, WorkerState, WorkerView};

/// The opaque cursor clients pass back: `c<epoch>-<seq>`. The epoch (the
/// hub's start time) makes a cursor from an earlier run a full refetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub epoch: u64,
    pub seq: u64,
}

impl Cursor {
    pub fn parse(s: &str) -> Option<Cursor> {
        let rest = s.strip_prefix('c')?;
        let (e, q) = rest.split_once('-')?;
        Some(Cursor {
            epoch: e.parse().ok()?,
            seq: q.parse().ok()?,
        })
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "c{}-{}", self.epoch, self.seq)
    }
}

/// What a worker says about itself that rarely changes between two of its
/// heartbeats. Shared by every view that repeats it, so a heartbeat that
/// changes none of it allocates only its new [`Stored`] view.
#[derive(Debug, PartialEq, Eq)]
pub struct Profile {
    /// The worker's id, the fleet map's own key (one allocation per worker).
    pub worker: Arc<str>,
    pub host: String,
    pub config_revision: Option<String>,
    pub agents: Vec<String>,
    pub active_agent: Option<String>,
    pub capabilities: BTreeMap<String, Capability>,
    /// All of the above but the id, as one length-prefixed string (see
    /// [`encode`]): a 100,000-worker fleet is cold in cache, and comparing
    /// one contiguous key costs a miss or two where walking the fields
    /// costs a dozen.
    key: Box<[u8]>,
}

/// The profile part of a heartbeat, as a byte string that two heartbeats
/// share exactly when they say the same (in the same order). Every piece is
/// length-prefixed, so no two different profiles encode alike.
fn encode(hb: &HeartbeatIn<'_>, out: &mut Vec<u8>) {
    fn text(out: &mut Vec<u8>, s: &str) {
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    fn opt(out: &mut Vec<u8>, s: Option<&str>) {
        match s {
            None => out.push(0),
            Some(s) => {
                out.push(1);
                text(out, s);
            }
        }
    }
    out.clear();
    text(out, hb.host.as_str());
    opt(out, hb.config_revision.as_ref().map(|t| t.as_str()));
    opt(out, hb.active_agent.as_ref().map(|t| t.as_str()));
    out.extend_from_slice(&(hb.agents.len() as u32).to_le_bytes());
    for a in &hb.agents {
        text(out, a.as_str());
    }
    out.extend_from_slice(&(hb.capabilities.0.len() as u32).to_le_bytes());
    for (name, c) in &hb.capabilities.0 {
        text(out, name.as_str());
        let preflight = match c.preflight {
            Preflight::Ok => 0,
            Preflight::Failed => 1,
            Preflight::Unknown => 2,
        };
        out.push(u8::from(c.binary) | u8::from(c.token) << 1 | preflight << 2);
    }
}

impl Profile {
    fn of(hb: &HeartbeatIn<'_>, key: &[u8], worker: Arc<str>) -> Profile {
        Profile {
            worker,
            host: hb.host.as_str().to_owned(),
            config_revision: hb.config_revision.as_ref().map(|t| t.as_str().to_owned()),
            agents: hb.agents.iter().map(|t| t.as_str().to_owned()).collect(),
            active_agent: hb.active_agent.as_ref().map(|t| t.as_str().to_owned()),
            capabilities: hb
                .capabilities
                .0
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), *v))
                .collect(),
            key: key.into(),
        }
    }
}

/// One worker as the hub holds it: serialises to exactly a
/// [`WorkerView`]'s JSON (tested below), with the parts that rarely change
/// shared between successive views.
#[derive(Debug, Clone)]
pub struct Stored {
    pub profile: Arc<Profile>,
    pub received_at: DateTime<Utc>,
    pub sent_at: DateTime<Utc>,
    pub state: WorkerState,
    pub in_sync: bool,
    pub last_failover: Option<Arc<Failover>>,
    /// Rungs below the active one it can still run and that are not held
    /// off, judged at `received_at` (see [`headroom_of`]).
    pub headroom: u32,
    /// The rungs it left with a failover within the held-off window (as of
    /// `received_at`) and has not run since, with the time of the last such
    /// failover (at most one per agent of its list).
    pub held: Option<Arc<[Held]>>,
    /// When the hub first saw it on its current active agent (or with no
    /// route).
    pub active_since: DateTime<Utc>,
}

/// A rung a worker left with a failover and has not run since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub agent: String,
    /// The failover's time (the worker's clock, never after the hub's
    /// receipt).
    pub at: DateTime<Utc>,
}

/// A worker back on a higher rung of the same list revision, as one
/// heartbeat showed it (the log gives it its `seq`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovery {
    pub worker: String,
    pub host: String,
    pub at: DateTime<Utc>,
    pub from: Option<String>,
    pub to: String,
    pub held_off_s: u64,
}

/// The default `--held-off-window`: a failover older than this no longer
/// holds its rung off in [`headroom_of`].
pub const DEFAULT_HELD_OFF_WINDOW: std::time::Duration = std::time::Duration::from_secs(60 * 60);

/// How many rungs below `profile`'s active agent it reports it can run
/// (binary, token and a passing preflight) and that no failover in `held`
/// after `cutoff` holds off. 0 with no route.
pub fn headroom_of(profile: &Profile, held: Option<&[Held]>, cutoff: DateTime<Utc>) -> u32 {
    let Some(active) = profile.active_agent.as_deref() else {
        return 0;
    };
    let Some(i) = profile.agents.iter().position(|a| a == active) else {
        return 0;
    };
    let held_off = |a: &str| held.is_some_and(|h| h.iter().any(|x| x.agent == a && x.at > cutoff));
    profile.agents[i + 1..]
        .iter()
        .filter(|a| {
            profile
                .capabilities
                .get(*a)
                .is_some_and(Capability::capable)
                && !held_off(a)
        })
        .count() as u32
}

/// Where `agent` stands in `agents`; no route ranks below every rung.
fn rank(agents: &[String], agent: Option<&str>) -> usize {
    agent
        .and_then(|a| agents.iter().position(|x| x == a))
        .unwrap_or(usize::MAX)
}

/// The rungs held off after a heartbeat: those before it, each failover's
/// `from` added (its latest time kept), minus the agent it runs now, any
/// agent no longer in its list and any failover at or before `cutoff` (the
/// held-off window). Shared with `before` when nothing changed.
fn held_after(
    before: Option<&Stored>,
    profile: &Profile,
    failovers: &[Failover],
    received_at: DateTime<Utc>,
    cutoff: DateTime<Utc>,
) -> Option<Arc<[Held]>> {
    let prior = before.and_then(|b| b.held.clone());
    let active = profile.active_agent.as_deref();
    let gone = |x: &Held| {
        Some(x.agent.as_str()) == active || !profile.agents.contains(&x.agent) || x.at <= cutoff
    };
    let touches = prior.as_deref().is_some_and(|h| h.iter().any(gone));
    if failovers.is_empty() && !touches {
        return prior;
    }
    let mut held: Vec<Held> = prior.as_deref().map(<[Held]>::to_vec).unwrap_or_default();
    for f in failovers {
        let at = f.at.min(received_at);
        match held.iter_mut().find(|x| x.agent == f.from) {
            Some(x) => x.at = x.at.max(at),
            None => held.push(Held {
                agent: f.from.clone(),
                at,
            }),
        }
    }
    held.retain(|x| !gone(x));
    (!held.is_empty()).then(|| held.into())
}

/// A recovery between two views: the same list revision (and list), and
/// the new active agent ranks above the old one (no route ranks lowest).
fn recovery_between(before: &Stored, after: &Stored) -> Option<Recovery> {
    let (b, a) = (&*before.profile, &*after.profile);
    if Arc::ptr_eq(&before.profile, &after.profile)
        || b.config_revision != a.config_revision
        || b.agents != a.agents
    {
        return None;
    }
    let to = a.active_agent.as_deref()?;
    if rank(&a.agents, Some(to)) >= rank(&b.agents, b.active_agent.as_deref()) {
        return None;
    }
    let left = before
        .held
        .as_deref()
        .and_then(|h| h.iter().find(|x| x.agent == to))
        .map_or(before.active_since, |x| x.at);
    Some(Recovery {
        worker: a.worker.to_string(),
        host: a.host.clone(),
        at: after.received_at,
        from: b.active_agent.clone(),
        to: to.to_string(),
        held_off_s: (after.received_at - left).num_seconds().max(0) as u64,
    })
}

/// [`WorkerView`]'s fields, in its order, borrowed.
#[derive(Serialize)]
struct ViewRef<'a> {
    worker: &'a str,
    host: &'a str,
    received_at: DateTime<Utc>,
    sent_at: DateTime<Utc>,
    state: WorkerState,
    config_revision: Option<&'a str>,
    in_sync: bool,
    agents: &'a [String],
    active_agent: Option<&'a str>,
    capabilities: &'a BTreeMap<String, Capability>,
    last_failover: Option<&'a Failover>,
    headroom: Option<u32>,
}

impl Serialize for Stored {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = &*self.profile;
        ViewRef {
            worker: &p.worker,
            host: &p.host,
            received_at: self.received_at,
            sent_at: self.sent_at,
            state: self.state,
            config_revision: p.config_revision.as_deref(),
            in_sync: self.in_sync,
            agents: &p.agents,
            active_agent: p.active_agent.as_deref(),
            capabilities: &p.capabilities,
            last_failover: self.last_failover.as_deref(),
            headroom: Some(self.headroom),
        }
        .serialize(s)
    }
}

impl Stored {
    pub fn worker(&self) -> &Arc<str> {
        &self.profile.worker
    }

    /// The wire type's value (for tests and callers that want owned data).
    pub fn to_view(&self) -> WorkerView {
        let p = &*self.profile;
        WorkerView {
            worker: p.worker.to_string(),
            host: p.host.clone(),
            received_at: self.received_at,
            sent_at: self.sent_at,
            state: self.state,
            config_revision: p.config_revision.clone(),
            in_sync: self.in_sync,
            agents: p.agents.clone(),
            active_agent: p.active_agent.clone(),
            capabilities: p.capabilities.clone(),
            last_failover: self.last_failover.as_deref().cloned(),
            headroom: Some(self.headroom),
        }
    }

    /// Healthy, on a rung, and nothing left below it.
    pub fn one_failure_from_no_route(&self) -> bool {
        self.state == WorkerState::Healthy
            && self.profile.active_agent.is_some()
            && self.headroom == 0
    }
}

struct Entry {
    view: Arc<Stored>,
    seq: u64,
}

/// Every worker's last view, and a log of changes in seq order. The log is
/// append-only with lazy deletion: an entry counts only if it is still its
/// worker's latest change. It is compacted when it grows past four times the
/// fleet, so a change costs amortised O(1) and a delta is a binary search
/// plus a scan of what changed.
pub struct Fleet {
    epoch: u64,
    seq: u64,
    workers: HashMap<Arc<str>, Entry, foldhash::fast::RandomState>,
    log: std::collections::VecDeque<(u64, Arc<str>)>,
    /// Reused for each heartbeat's profile key.
    scratch: Vec<u8>,
    /// Where sweeper moves and `in_sync` flips are published.
    events: Option<Arc<Events>>,
    /// A failover older than this no longer holds its rung off.
    held_off_window: chrono::Duration,
    /// The gauges of `GET /metrics`, kept as workers change.
    tally: super::metrics::FleetTally,
}

/// A consistent copy of what `GET /v1/workers` answers, taken under the
/// lock and serialised outside it.
pub struct Snapshot {
    pub cursor: Cursor,
    pub delta: bool,
    pub workers: Vec<Arc<Stored>>,
}

impl Fleet {
    pub fn new(epoch: u64) -> Fleet {
        Fleet {
            epoch,
            seq: 0,
            workers: HashMap::default(),
            log: std::collections::VecDeque::new(),
            scratch: Vec::new(),
            events: None,
            held_off_window: chrono::Duration::hours(1),
            tally: Default::default(),
        }
    }

    /// The fleet's gauges for `GET /metrics`.
    pub fn tally(&self) -> &super::metrics::FleetTally {
        &self.tally
    }

    /// Judge headroom with `window` (`--held-off-window`).
    pub fn holding_off(mut self, window: std::time::Duration) -> Fleet {
        self.held_off_window = chrono::Duration::from_std(window).unwrap_or(chrono::Duration::MAX);
        self
    }

    /// Publish every sweeper move (`state`) and `in_sync` flip (`sync`) to
    /// `events`, in the order the changes are made.
    pub fn publishing(mut self, events: Arc<Events>) -> Fleet {
        self.events = Some(events);
        self
    }

    pub fn len(&self) -> usize {
        self.workers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    /// Replace, in place, every view that `change` returns a new one for
    /// (a sweep's or a resync's), each as a change of its own; one pass, no
    /// second lookup. Each new view is published as `event(view)`, still
    /// under the caller's lock. Returns how many changed.
    fn restate(
        &mut self,
        change: impl Fn(&Stored) -> Option<Stored>,
        event: fn(Arc<Stored>) -> Payload,
    ) -> usize {
        let mut changed = Vec::new();
        for e in self.workers.values_mut() {
            if let Some(v) = change(&e.view) {
                self.seq += 1;
                e.seq = self.seq;
                self.tally.change(Some(&e.view), Some(&v));
                e.view = Arc::new(v);
                self.log.push_back((self.seq, e.view.worker().clone()));
                changed.push(e.view.clone());
            }
        }
        self.compact();
        let n = changed.len();
        if let Some(events) = &self.events {
            events.publish_all(changed.into_iter().map(event));
        }
        n
    }

    /// Append a change to the log.
    fn logged(&mut self, seq: u64, key: Arc<str>) {
        self.log.push_back((seq, key));
        self.compact();
    }

    /// Drop superseded log entries once the log has grown past four times
    /// the fleet.
    fn compact(&mut self) {
        if self.log.len() > 4 * self.workers.len() + 1024 {
            let workers = &self.workers;
            self.log
                .retain(|(seq, id)| workers.get(id).is_some_and(|e| e.seq == *seq));
        }
    }

    /// Whether a heartbeat from `worker` may be recorded under a cap of
    /// `max` workers: a worker the hub knows always may.
    pub fn admits(&self, worker: &str, max: usize) -> bool {
        self.workers.len() < max || self.workers.contains_key(worker)
    }

    /// Forget the workers whose last heartbeat was received more than
    /// `after` before `now` (long lost: decommissioned, renamed, or ids
    /// nobody uses); returns how many. They vanish from full answers; the
    /// change log skips them.
    pub fn evict(&mut self, now: DateTime<Utc>, after: chrono::Duration) -> usize {
        let before = self.workers.len();
        let tally = &mut self.tally;
        self.workers.retain(|_, e| {
            let keep = now - e.view.received_at <= after;
            if !keep {
                tally.change(Some(&e.view), None);
            }
            keep
        });
        let n = before - self.workers.len();
        if n > 0 {
            self.compact();
        }
        n
    }

    /// Record a validated (and scrubbed) heartbeat; returns the new view.
    /// One hash lookup for a worker the hub knows, and what the worker
    /// repeats from its last heartbeat is shared, not copied.
    pub fn record(
        &mut self,
        hb: &HeartbeatIn<'_>,
        received_at: DateTime<Utc>,
        current_revision: &str,
    ) -> Arc<Stored> {
        self.record_moves(hb, received_at, current_revision).0
    }

    /// [`Fleet::record`], and the recovery the heartbeat shows, if any (the
    /// worker back on a higher rung of the same list revision).
    pub fn record_moves(
        &mut self,
        hb: &HeartbeatIn<'_>,
        received_at: DateTime<Utc>,
        current_revision: &str,
    ) -> (Arc<Stored>, Option<Recovery>) {
        let cutoff = received_at
            .checked_sub_signed(self.held_off_window)
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        let mut recovery = None;
        self.seq += 1;
        let seq = self.seq;
        encode(hb, &mut self.scratch);
        let key = &self.scratch[..];
        let next = |before: Option<&Stored>| {
            let profile = match before {
                Some(b) if *b.profile.key == *key => b.profile.clone(),
                Some(b) => Arc::new(Profile::of(hb, key, b.worker().clone())),
                None => Arc::new(Profile::of(hb, key, Arc::from(hb.worker.as_str()))),
            };
            let last_failover = match hb.failovers.last() {
                Some(f) => Some(Arc::new(f.clone())),
                None => before.and_then(|b| b.last_failover.clone()),
            };
            let held = held_after(before, &profile, &hb.failovers, received_at, cutoff);
            let active_since = match before {
                Some(b) if b.profile.active_agent == profile.active_agent => b.active_since,
                _ => received_at,
            };
            Arc::new(Stored {
                in_sync: profile.config_revision.as_deref() == Some(current_revision),
                headroom: headroom_of(&profile, held.as_deref(), cutoff),
                held,
                active_since,
                profile,
                received_at,
                sent_at: hb.sent_at,
                state: WorkerState::Healthy,
                last_failover,
            })
        };
        let view = match self.workers.get_mut(hb.worker.as_str()) {
            Some(e) => {
                let view = next(Some(&e.view));
                recovery = recovery_between(&e.view, &view);
                self.tally.change(Some(&e.view), Some(&view));
                e.view = view;
                e.seq = seq;
                e.view.clone()
            }
            None => {
                let view = next(None);
                self.tally.change(None, Some(&view));
                let entry = Entry {
                    view: view.clone(),
                    seq,
                };
                self.workers.insert(view.worker().clone(), entry);
                view
            }
        };
        self.logged(seq, view.worker().clone());
        (view, recovery)
    }

    /// Recompute every worker's state from the hub's clock; workers whose
    /// state moved count as changed.
    pub fn sweep(&mut self, now: DateTime<Utc>, interval_s: u64) -> usize {
        self.restate(
            |v| {
                let age = (now - v.received_at).num_milliseconds() as f64 / 1000.0;
                let state = WorkerState::from_age(age, interval_s);
                (state != v.state).then(|| Stored { state, ..v.clone() })
            },
            Payload::State,
        )
    }

    /// A new config revision changes every worker's `in_sync`.
    pub fn resync(&mut self, revision: &str) {
        self.restate(
            |v| {
                let in_sync = v.profile.config_revision.as_deref() == Some(revision);
                (in_sync != v.in_sync).then(|| Stored {
                    in_sync,
                    ..v.clone()
                })
            },
            Payload::Sync,
        );
    }

    pub fn cursor(&self) -> Cursor {
        Cursor {
            epoch: self.epoch,
            seq: self.seq,
        }
    }

    /// Everyone, or only what changed after `since` (when it is a cursor of
    /// this run), in the order of change.
    pub fn snapshot(&self, since: Option<Cursor>) -> Snapshot {
        match since {
            Some(c) if c.epoch == self.epoch && c.seq <= self.seq => {
                let start = self.log.partition_point(|(seq, _)| *seq <= c.seq);
                Snapshot {
                    cursor: self.cursor(),
                    delta: true,
                    workers: self
                        .log
                        .range(start..)
                        .filter_map(|(seq, id)| {
                            self.workers
                                .get(id)
                                .filter(|e| e.seq == *seq)
                                .map(|e| e.view.clone())
                        })
                        .collect(),
                }
            }
            _ => Snapshot {
                cursor: self.cursor(),
                delta: false,
                workers: self.workers.values().map(|e| e.view.clone()).collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn hb(id: &str) -> crate::wire::Heartbeat {
        crate::wire::Heartbeat {
            worker: id.into(),
            host: "h".into(),
            sent_at: Utc::now(),
            config_revision: Some("r1".into()),
            agents: vec!["pi".into()],
            active_agent: Some("pi".into()),
            capabilities: Default::default(),
            failovers: vec![],
        }
    }

    /// The tests' fixed clock.
    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 15, 0, 0)
            .single()
            .expect("time")
    }

    /// A plain heartbeat from `worker`, received at `at`, the fleet at `r1`.
    fn beat(f: &mut Fleet, worker: &str, at: DateTime<Utc>) -> Arc<Stored> {
        f.record(&(&hb(worker)).into(), at, "r1")
    }

    #[test]
    fn deltas_hold_each_changed_worker_once_and_survive_compaction() {
        let t0 = t0();
        let mut f = Fleet::new(7);
        for i in 0..10 {
            beat(&mut f, &format!("w-{i}"), t0);
        }
        let c = f.cursor();
        // Many changes to a few workers, enough to force compactions.
        for round in 0..2000 {
            beat(&mut f, &format!("w-{}", round % 3), t0);
        }
        let d = f.snapshot(Some(c));
        assert!(d.delta);
        let mut ids: Vec<&str> = d.workers.iter().map(|w| &**w.worker()).collect();
        ids.sort_unstable();
        assert_eq!(ids, ["w-0", "w-1", "w-2"]);
        assert!(f.log.len() <= 4 * f.workers.len() + 1024 + 1);
        assert!(f.snapshot(Some(f.cursor())).workers.is_empty());
        assert_eq!(f.snapshot(None).workers.len(), 10);
        // Another run's cursor is a full answer.
        let other = f.snapshot(Some(Cursor { epoch: 8, seq: 1 }));
        assert!(!other.delta);
    }

    #[test]
    fn the_cap_admits_known_workers_and_eviction_forgets_the_long_lost() {
        let t0 = t0();
        let mut f = Fleet::new(1);
        beat(&mut f, "w-1", t0);
        beat(&mut f, "w-2", t0 + chrono::Duration::hours(2));
        assert!(f.admits("w-1", 2), "a known worker");
        assert!(!f.admits("w-3", 2), "a new one past the cap");
        assert!(f.admits("w-3", 3));
        let c = f.cursor();
        let now = t0 + chrono::Duration::hours(3);
        assert_eq!(f.evict(now, chrono::Duration::hours(2)), 1);
        assert_eq!(f.len(), 1);
        assert!(f.admits("w-3", 2), "room again");
        let all = f.snapshot(None).workers;
        assert_eq!(&**all[0].worker(), "w-2");
        assert!(f.snapshot(Some(c)).workers.is_empty());
    }

    #[test]
    fn sweep_moves_by_the_hubs_clock() {
        let t0 = t0();
        let mut f = Fleet::new(1);
        beat(&mut f, "w-1", t0);
        let c = f.cursor();
        assert_eq!(f.sweep(t0 + chrono::Duration::seconds(29), 10), 0);
        assert_eq!(f.sweep(t0 + chrono::Duration::seconds(31), 10), 1);
        assert_eq!(f.sweep(t0 + chrono::Duration::seconds(101), 10), 1);
        let d = f.snapshot(Some(c));
        assert_eq!(d.workers.len(), 1);
        assert_eq!(d.workers[0].state, WorkerState::Lost);
        f.resync("r2");
        assert!(!f.snapshot(None).workers[0].in_sync);
    }

    #[test]
    fn stored_views_serialise_as_the_wire_type_and_share_what_repeats() {
        let t0 = t0();
        let mut f = Fleet::new(1);
        let mut h = hb("w-1");
        h.capabilities.insert(
            "pi".into(),
            Capability {
                binary: true,
                token: false,
                preflight: crate::wire::Preflight::Ok,
            },
        );
        h.failovers = vec![crate::wire::Failover {
            id: "f-1".into(),
            at: t0,
            from: "claude".into(),
            to: Some("pi".into()),
            cause: crate::wire::Cause {
                kind: crate::wire::CauseKind::RateLimited,
                status: Some(429),
                source: crate::wire::CauseSource::HubRouter,
                detail: Some("429 from upstream".into()),
            },
        }];
        let first = f.record(&(&h).into(), t0, "r1");
        let json = serde_json::to_string(&*first).expect("serialises");
        assert_eq!(json, serde_json::to_string(&first.to_view()).expect("wire"));
        let back: WorkerView = serde_json::from_str(&json).expect("reads as the wire type");
        assert_eq!(back.worker, "w-1");
        assert_eq!(back.capabilities, h.capabilities);
        assert_eq!(back.last_failover.as_ref(), h.failovers.last());
        assert!(back.in_sync);

        // The same worker says the same again: the profile is shared and the
        // last failover carried over.
        h.failovers.clear();
        let second = f.record(&(&h).into(), t0 + chrono::Duration::seconds(10), "r1");
        assert!(Arc::ptr_eq(&first.profile, &second.profile));
        assert!(Arc::ptr_eq(first.worker(), second.worker()));
        assert_eq!(
            second.last_failover.as_deref(),
            first.last_failover.as_deref()
        );
        // Anything different makes a new profile.
        h.active_agent = Some("claude".into());
        let third = f.record(&(&h).into(), t0, "r1");
        assert!(!Arc::ptr_eq(&second.profile, &third.profile));
        assert_eq!(third.to_view().active_agent.as_deref(), Some("claude"));
        h.capabilities.clear();
        let fourth = f.record(&(&h).into(), t0, "r2");
        assert!(!Arc::ptr_eq(&third.profile, &fourth.profile));
        assert!(!fourth.in_sync);
    }
}
