//! Every worker's last heartbeat, in memory, keyed by id. Each change gets
//! a sequence number so that `GET /v1/workers?since=` answers only what
//! changed; a sweeper moves workers to `stale` and `lost` by the time
//! since each heartbeat arrived, on the hub's monotonic clock (a wall clock
//! stepped either way moves no worker), and counts that as a change too. Sweeper moves and `in_sync`
//! flips are published on the event feed (`state`, `sync`) under the same
//! lock that made them, so the feed's order is the order of change.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::events::{Events, Payload};
use super::ingest::HeartbeatIn;
pub use super::worker::{Given, Held, Profile, Stored};
use super::worker::{Lists, encode};
use crate::wire::{Failover, WorkerState};

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

/// A worker back on a higher rung of the same list revision, as one
/// heartbeat showed it (the log gives it its `seq` when it commits).
pub use super::db::NewRecovery as Recovery;

/// The default `--held-off-window`: a failover older than this no longer
/// holds its rung off in [`headroom_of`].
pub const DEFAULT_HELD_OFF_WINDOW: std::time::Duration = std::time::Duration::from_secs(60 * 60);

/// How many rungs below `profile`'s active agent it reports it can run
/// (binary, token and a passing preflight) and that no failover in `held`
/// after `cutoff` holds off. 0 with no route.
pub fn headroom_of(profile: &Profile, held: Option<&[Held]>, cutoff: DateTime<Utc>) -> u32 {
    let Some(active) = profile.active_agent() else {
        return 0;
    };
    let agents = profile.roster.agents();
    let Some(i) = agents.clone().position(|a| a == active) else {
        return 0;
    };
    let held_off = |a: &str| held.is_some_and(|h| h.iter().any(|x| x.agent == a && x.at > cutoff));
    agents
        .skip(i + 1)
        .filter(|a| profile.roster.capability(a).is_some_and(|c| c.capable()) && !held_off(a))
        .count() as u32
}

/// Where `agent` stands in `agents`; no route ranks below every rung.
fn rank<'a>(mut agents: impl Iterator<Item = &'a str>, agent: Option<&str>) -> usize {
    agent
        .and_then(|a| agents.position(|x| x == a))
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
    let active = profile.active_agent();
    let gone = |x: &Held| {
        Some(x.agent.as_str()) == active
            || !profile.roster.agents().any(|a| a == x.agent)
            || x.at <= cutoff
    };
    let touches = prior.as_deref().is_some_and(|h| h.iter().any(gone));
    if failovers.is_empty() && !touches {
        return prior;
    }
    let mut held: Vec<Held> = prior.as_deref().map(<[Held]>::to_vec).unwrap_or_default();
    for f in failovers {
        let at = f.at.min(received_at);
        match held.iter_mut().find(|x| x.agent == f.from) {
            Some(x) if at >= x.at => {
                x.at = at;
                x.kind = f.cause.kind;
            }
            Some(_) => {}
            None => held.push(Held {
                agent: f.from.clone(),
                at,
                kind: f.cause.kind,
            }),
        }
    }
    held.retain(|x| !gone(x));
    (!held.is_empty()).then(|| held.into())
}

/// A worker's last failover after a heartbeat carrying `failovers`, with
/// when the hub received it: the heartbeat's last, or the one before it
/// when it carries none. A resent failover (unacknowledged) keeps its first
/// receipt.
fn last_failover_after(
    before: Option<&Stored>,
    failovers: &[Failover],
    received_at: DateTime<Utc>,
) -> (Option<Arc<Failover>>, Option<DateTime<Utc>>) {
    let kept = || {
        before.map_or((None, None), |b| {
            (b.last_failover.clone(), b.last_failover_received_at)
        })
    };
    match failovers.last() {
        None => kept(),
        Some(f)
            if before.is_some_and(|b| b.last_failover.as_ref().is_some_and(|l| l.id == f.id)) =>
        {
            kept()
        }
        Some(f) => (Some(Arc::new(f.clone())), Some(received_at)),
    }
}

/// A recovery between two views: the same list revision (and list), and
/// the new active agent ranks above the old one (no route ranks lowest).
fn recovery_between(before: &Stored, after: &Stored) -> Option<Recovery> {
    let (b, a) = (&*before.profile, &*after.profile);
    if Arc::ptr_eq(&before.profile, &after.profile)
        || b.config_revision() != a.config_revision()
        || !(b.roster.ptr_eq(&a.roster) || b.roster.agents().eq(a.roster.agents()))
    {
        return None;
    }
    let to = a.active_agent()?;
    if rank(a.roster.agents(), Some(to)) >= rank(b.roster.agents(), b.active_agent()) {
        return None;
    }
    let left = before
        .held
        .as_deref()
        .and_then(|h| h.iter().find(|x| x.agent == to))
        .map_or(before.active_since, |x| x.at);
    Some(Recovery {
        pool: after.pool.clone(),
        record: crate::wire::RecoveryRecord {
            seq: 0,
            worker: a.worker.to_string(),
            host: a.host().to_string(),
            at: after.received_at,
            from: b.active_agent().map(str::to_string),
            to: to.to_string(),
            held_off_s: (after.received_at - left).num_seconds().max(0) as u64,
        },
    })
}

struct Entry {
    view: Arc<Stored>,
    seq: u64,
    /// The worker's pace ([`super::pacing::Pace`]): when, in ms from the
    /// fleet's `origin`, its next heartbeat is due at the enforced rate.
    pace_ms: u64,
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
    scratch: String,
    /// Agent lists and capability maps, shared between the workers that
    /// report the same.
    lists: Lists,
    /// Where sweeper moves and `in_sync` flips are published.
    events: Option<Arc<Events>>,
    /// A failover older than this no longer holds its rung off.
    held_off_window: chrono::Duration,
    /// The gauges of `GET /metrics`, kept as workers change.
    tally: super::metrics::FleetTally,
    /// `GET /v1/summary`'s counts, kept beside the gauges.
    pub(super) summary: super::summary::SummaryTally,
    /// The interval the next heartbeat recorded was told (0: the
    /// sweeper's own).
    told_s: u32,
    /// Where the workers' pace times count from.
    origin: Instant,
    /// The rollout baking, as heartbeats are judged by it (its cohort is
    /// told the candidate and in sync on it): see hub/rollout.rs.
    rollout: Option<super::rollout::Tracking>,
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
            scratch: String::new(),
            lists: Lists::default(),
            events: None,
            held_off_window: chrono::Duration::hours(1),
            tally: Default::default(),
            summary: Default::default(),
            told_s: 0,
            origin: Instant::now(),
            rollout: None,
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

    /// The last view of `id`.
    pub fn get(&self, id: &str) -> Option<&Arc<Stored>> {
        self.workers.get(id).map(|e| &e.view)
    }

    /// The next heartbeat recorded is answered with `interval_s`: its
    /// state's thresholds follow it (pacing).
    pub fn telling(&mut self, interval_s: u64) {
        self.told_s = interval_s.min(u32::MAX as u64) as u32;
    }

    /// Every worker's last view, in no order (a window's one pass).
    pub fn views(&self) -> impl Iterator<Item = &Arc<Stored>> + '_ {
        self.workers.values().map(|e| &e.view)
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
        // Each entry is judged `AHEAD` entries after its view was asked of
        // the CPU (`prefetch`): at a million workers, cold in cache, the
        // pass had waited on every view in turn (96 ms a sweep, once a
        // second, under the fleet's lock; benches/window.rs).
        const AHEAD: usize = 16;
        let mut ahead: std::collections::VecDeque<&mut Entry> =
            std::collections::VecDeque::with_capacity(AHEAD + 1);
        let mut entries = self.workers.values_mut();
        loop {
            let next = entries.next();
            if let Some(e) = next {
                super::prefetch::hint(Arc::as_ptr(&e.view));
                ahead.push_back(e);
                if ahead.len() <= AHEAD {
                    continue;
                }
            }
            let Some(e) = ahead.pop_front() else { break };
            if let Some(v) = change(&e.view) {
                self.seq += 1;
                e.seq = self.seq;
                self.tally.change(Some(&e.view), Some(&v));
                self.summary.change(Some(&e.view), Some(&v));
                if let Some(r) = self.rollout.as_mut() {
                    r.counts.leave(&e.view);
                    r.counts.enter(&v);
                }
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

    /// Whether a heartbeat from `worker` arriving at `now` keeps within
    /// its pace (docs/hub-api.md, *Pacing*): a burst of
    /// [`super::pacing::BURST`], then twice the rate it was told. Taken
    /// under the fleet's lock the heartbeat already holds to be admitted,
    /// in the worker's own entry: no lock or map of its own. A worker the
    /// fleet does not hold yet is always in pace. `Err` is how long until
    /// it would be; a refused heartbeat is not counted.
    pub fn paces(&mut self, worker: &str, now: Instant) -> Result<(), Duration> {
        let fallback = self.told_s;
        let now_ms = now.saturating_duration_since(self.origin).as_millis() as u64;
        let Some(e) = self.workers.get_mut(worker) else {
            return Ok(());
        };
        let told = if e.view.told_s > 0 {
            e.view.told_s
        } else {
            fallback
        };
        super::pacing::Pace::of(told as u64).admit(&mut e.pace_ms, now_ms)
    }

    /// Whether a heartbeat from `worker` may be recorded under a cap of
    /// `max` workers: a worker the hub knows always may.
    pub fn admits(&self, worker: &str, max: usize) -> bool {
        self.workers.len() < max || self.workers.contains_key(worker)
    }

    /// Forget the workers whose last heartbeat arrived more than `after`
    /// before `now` (the monotonic clock; long lost: decommissioned,
    /// renamed, or ids nobody uses); returns how many. They vanish from
    /// full answers; the change log skips them.
    pub fn evict(&mut self, now: Instant, after: Duration) -> Vec<Arc<str>> {
        let mut gone = Vec::new();
        let (tally, summary) = (&mut self.tally, &mut self.summary);
        let rollout = &mut self.rollout;
        self.workers.retain(|id, e| {
            let keep = now.saturating_duration_since(e.view.arrived) <= after;
            if !keep {
                tally.change(Some(&e.view), None);
                summary.change(Some(&e.view), None);
                if let Some(r) = rollout.as_mut() {
                    r.counts.leave(&e.view);
                }
                gone.push(id.clone());
            }
            keep
        });
        if !gone.is_empty() {
            self.compact();
        }
        gone
    }

    /// Record a validated (and scrubbed) heartbeat that arrived now;
    /// returns the new view.
    pub fn record<'g>(
        &mut self,
        hb: &HeartbeatIn<'_>,
        received_at: DateTime<Utc>,
        given: impl Into<Given<'g>>,
    ) -> Arc<Stored> {
        static NO_POOL: std::sync::LazyLock<Arc<str>> = std::sync::LazyLock::new(|| Arc::from(""));
        self.record_at(hb, received_at, Instant::now(), &NO_POOL, given)
    }

    /// Record a validated (and scrubbed) heartbeat that arrived at
    /// `arrived` (the monotonic clock) and `received_at` (the wall clock);
    /// returns the new view. One hash lookup for a worker the hub knows,
    /// and what the worker repeats from its last heartbeat is shared, not
    /// copied.
    pub fn record_at<'g>(
        &mut self,
        hb: &HeartbeatIn<'_>,
        received_at: DateTime<Utc>,
        arrived: Instant,
        pool: &Arc<str>,
        given: impl Into<Given<'g>>,
    ) -> Arc<Stored> {
        self.record_moves_at(hb, received_at, arrived, pool, given.into())
            .0
    }

    /// [`Fleet::record_at`], and the recovery the heartbeat shows, if any
    /// (the worker back on a higher rung of the same list revision).
    pub fn record_moves_at(
        &mut self,
        hb: &HeartbeatIn<'_>,
        received_at: DateTime<Utc>,
        arrived: Instant,
        pool: &Arc<str>,
        given: Given<'_>,
    ) -> (Arc<Stored>, Option<Recovery>) {
        let cutoff = received_at
            .checked_sub_signed(self.held_off_window)
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        let mut recovery = None;
        self.seq += 1;
        let seq = self.seq;
        let told_s = self.told_s;
        let roster = self.lists.of(hb);
        // A cohort worker of the rollout baking is in sync on the candidate.
        let (cohort, expected) = match &self.rollout {
            Some(r) if r.cohort.contains(hb.worker.as_str()) => (true, r.given()),
            _ => (false, given),
        };
        encode(hb, &mut self.scratch);
        let key = &self.scratch[..];
        let next = |before: Option<&Stored>| {
            let profile = match before {
                Some(b) if b.profile.roster.ptr_eq(&roster) && *b.profile.key == *key => {
                    b.profile.clone()
                }
                Some(b) => Arc::new(Profile::of(key, b.worker().clone(), roster.clone())),
                None => Arc::new(Profile::of(
                    key,
                    Arc::from(hb.worker.as_str()),
                    roster.clone(),
                )),
            };
            let (last_failover, last_failover_received_at) =
                last_failover_after(before, &hb.failovers, received_at);
            let held = held_after(before, &profile, &hb.failovers, received_at, cutoff);
            let active_since = match before {
                Some(b) if b.profile.active_agent() == profile.active_agent() => b.active_since,
                _ => received_at,
            };
            Arc::new(Stored {
                in_sync: expected.holds(&profile),
                cohort,
                headroom: headroom_of(&profile, held.as_deref(), cutoff),
                held,
                active_since,
                profile,
                pool: pool.clone(),
                received_at,
                arrived,
                sent_at: hb.sent_at,
                clock_skew_s: (hb.sent_at - received_at).num_seconds(),
                state: WorkerState::Healthy,
                last_failover,
                last_failover_received_at,
                told_s,
                turning: super::worker::Turning::of(hb, before.and_then(|b| b.turning.as_ref())),
            })
        };
        let (view, before) = match self.workers.get_mut(hb.worker.as_str()) {
            Some(e) => {
                let view = next(Some(&e.view));
                recovery = recovery_between(&e.view, &view);
                self.tally.change(Some(&e.view), Some(&view));
                self.summary.change(Some(&e.view), Some(&view));
                e.seq = seq;
                let before = std::mem::replace(&mut e.view, view.clone());
                (view, Some(before))
            }
            None => {
                let view = next(None);
                self.tally.change(None, Some(&view));
                self.summary.change(None, Some(&view));
                // Its first heartbeat counts toward its pace.
                let mut pace_ms = 0;
                let since = arrived.saturating_duration_since(self.origin).as_millis() as u64;
                let _ = super::pacing::Pace::of(told_s as u64).admit(&mut pace_ms, since);
                let entry = Entry {
                    view: view.clone(),
                    seq,
                    pace_ms,
                };
                self.workers.insert(view.worker().clone(), entry);
                (view, None)
            }
        };
        if let Some(r) = self.rollout.as_mut() {
            let failovers = hb.failovers.len() as u64;
            r.counts
                .heartbeat(before.as_deref(), &view, failovers, arrived);
        }
        self.logged(seq, view.worker().clone());
        (view, recovery)
    }

    /// Recompute every worker's state from the time since its heartbeat
    /// arrived (`now` on the monotonic clock); workers whose state moved
    /// count as changed.
    ///
    /// `wall` is the hub's wall clock now. A `received_at` ahead of it (the
    /// clock was stepped back since the heartbeat arrived) is clamped to
    /// what the monotonic clock says (`wall` less the time since it
    /// arrived), so no view shows a heartbeat from the future; that counts
    /// as a change too.
    pub fn sweep(&mut self, now: Instant, wall: DateTime<Utc>, interval_s: u64) -> usize {
        self.restate(
            |v| {
                let since = now.saturating_duration_since(v.arrived);
                // Each worker by the interval it was last told.
                let told = if v.told_s > 0 {
                    v.told_s as u64
                } else {
                    interval_s
                };
                let state = WorkerState::from_age(since.as_secs_f64(), told);
                let ahead = v.received_at > wall + chrono::Duration::seconds(1);
                (state != v.state || ahead).then(|| Stored {
                    state,
                    received_at: if ahead {
                        wall - chrono::Duration::from_std(since).unwrap_or_default()
                    } else {
                        v.received_at
                    },
                    ..v.clone()
                })
            },
            Payload::State,
        )
    }

    /// A new config revision changes every worker's `in_sync` (a cohort
    /// worker of the rollout baking is judged on the candidate).
    pub fn resync<'g>(&mut self, given: impl Into<Given<'g>>) {
        let given = given.into();
        let candidate = self
            .rollout
            .as_ref()
            .map(|r| (r.revision.clone(), r.agents.clone()));
        self.restate(
            |v| {
                let expected = match &candidate {
                    Some((revision, agents)) if v.cohort => Given {
                        revision,
                        agents: Some(agents),
                    },
                    _ => given,
                };
                let in_sync = expected.holds(&v.profile);
                (in_sync != v.in_sync).then(|| Stored {
                    in_sync,
                    ..v.clone()
                })
            },
            Payload::Sync,
        );
    }

    /// The rollout baking changed (started, resumed, ended): every
    /// worker's `cohort` and `in_sync` judged again, each change a `sync`
    /// event (a pass that hashes every id while one bakes). `accepted` is
    /// the revision everyone outside the cohort is told.
    pub fn set_rollout<'g>(
        &mut self,
        rollout: Option<super::rollout::Tracking>,
        accepted: impl Into<Given<'g>>,
    ) {
        let accepted = accepted.into();
        self.rollout = rollout;
        let r = self
            .rollout
            .as_ref()
            .map(|r| (r.cohort.clone(), r.revision.clone(), r.agents.clone()));
        self.restate(
            |v| {
                let cohort = r.as_ref().is_some_and(|(c, _, _)| c.contains(v.worker()));
                let expected = match &r {
                    Some((_, revision, agents)) if cohort => Given {
                        revision,
                        agents: Some(agents),
                    },
                    _ => accepted,
                };
                let in_sync = expected.holds(&v.profile);
                (cohort != v.cohort || in_sync != v.in_sync).then(|| Stored {
                    cohort,
                    in_sync,
                    ..v.clone()
                })
            },
            Payload::Sync,
        );
        // Every view's `cohort` is the new rollout's now: its sums from them.
        if let Some(r) = self.rollout.as_mut() {
            r.counts.rebuild(self.workers.values().map(|e| &e.view));
        }
    }

    /// The rollout baking, as the fleet tracks it.
    pub fn rollout(&self) -> Option<&super::rollout::Tracking> {
        self.rollout.as_ref()
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
    use crate::wire::{Capability, WorkerView};
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
            turn: None,
            next_turn_agent: None,
        }
    }

    /// The tests' fixed clock.
    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 29, 15, 0, 0)
            .single()
            .expect("time")
    }

    /// The tests' monotonic clock, aligned with [`t0`].
    fn m0() -> Instant {
        static M0: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);
        *M0
    }

    /// `m0` plus how far `at` is past `t0`.
    fn mono(at: DateTime<Utc>) -> Instant {
        m0() + (at - t0()).to_std().unwrap_or_default()
    }

    /// A plain heartbeat from `worker`, received at `at`, the fleet at `r1`.
    fn beat(f: &mut Fleet, worker: &str, at: DateTime<Utc>) -> Arc<Stored> {
        f.record_at(&(&hb(worker)).into(), at, mono(at), &Arc::from("p"), "r1")
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
        let now = mono(t0 + chrono::Duration::hours(3));
        assert_eq!(f.evict(now, Duration::from_secs(2 * 3600)).len(), 1);
        assert_eq!(f.len(), 1);
        assert!(f.admits("w-3", 2), "room again");
        let all = f.snapshot(None).workers;
        assert_eq!(&**all[0].worker(), "w-2");
        assert!(f.snapshot(Some(c)).workers.is_empty());
    }

    /// Workers that report the same agents and capabilities share one copy
    /// of each; a list no worker reports any more is let go.
    #[test]
    fn equal_lists_are_held_once() {
        let t0 = t0();
        let mut f = Fleet::new(1);
        let a = beat(&mut f, "w-1", t0);
        let b = beat(&mut f, "w-2", t0);
        assert!(a.profile.roster.ptr_eq(&b.profile.roster));
        assert!(
            !Arc::ptr_eq(&a.profile, &b.profile),
            "each its own host and id"
        );
        let mut other = hb("w-3");
        other.agents = vec!["claude".into()];
        other.active_agent = Some("claude".into());
        let c = f.record(&(&other).into(), t0, "r1");
        assert!(!a.profile.roster.ptr_eq(&c.profile.roster));
        assert!(c.profile.roster.agents().eq(["claude"]));
        // w-3 goes back to the common list: its own is no longer held.
        let weak = Arc::downgrade(&c.profile.roster.0);
        drop(c);
        let c = beat(&mut f, "w-3", t0);
        assert!(a.profile.roster.ptr_eq(&c.profile.roster));
        assert!(weak.upgrade().is_none());
        assert_eq!(f.lists.held(), 2, "the dead entry waits for a sweep");
    }

    #[test]
    fn sweep_moves_by_the_hubs_clock() {
        let t0 = t0();
        let mut f = Fleet::new(1);
        beat(&mut f, "w-1", t0);
        let c = f.cursor();
        let at = |s| mono(t0 + chrono::Duration::seconds(s));
        let wall = |s| t0 + chrono::Duration::seconds(s);
        assert_eq!(f.sweep(at(29), wall(29), 10), 0);
        assert_eq!(f.sweep(at(31), wall(31), 10), 1);
        // The wall clock stepped back a day: nothing moves but the time
        // shown, clamped to what the monotonic clock says.
        assert_eq!(f.sweep(at(40), wall(40 - 86_400), 10), 1);
        let shown = f.snapshot(None).workers[0].received_at;
        assert_eq!(shown, wall(-86_400));
        assert_eq!(f.snapshot(None).workers[0].state, WorkerState::Stale);
        assert_eq!(f.sweep(at(41), wall(41 - 86_400), 10), 0);
        assert_eq!(f.sweep(at(101), wall(101 - 86_400), 10), 1);
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
        // The wire type's JSON, and the worker's clock skew beside it.
        let mut wire = serde_json::to_value(first.to_view()).expect("wire");
        if let Some(o) = wire.as_object_mut() {
            o.insert("clock_skew_s".into(), first.clock_skew_s.into());
            o.insert("pool".into(), "".into());
        }
        let mine: serde_json::Value = serde_json::from_str(&json).expect("json");
        assert_eq!(mine, wire);
        assert_eq!(first.clock_skew_s, (first.sent_at - t0).num_seconds());
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
