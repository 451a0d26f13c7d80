//! A worker as the TUI keeps it: the wire's [`WorkerView`] in a compact
//! form. Agent names, hosts, revisions, agent lists and capability sets
//! repeat across a fleet, so they are interned ([`Interner`]) and shared by
//! reference count; a 100,000-worker fleet then costs a few hundred bytes a
//! worker instead of kilobytes (docs/tui.md, "Memory").

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::wire::{Capability, CauseKind, Failover, HeldOff, WorkerState, WorkerView};

/// An interned string.
pub type Sym = Arc<str>;

/// A shared value's address: what interning made one has one address, so
/// values can be grouped by it without comparing their contents.
pub fn addr<T: ?Sized>(a: &Arc<T>) -> usize {
    Arc::as_ptr(a) as *const () as usize
}

/// A worker's capability set, sorted by agent name (the wire's map order).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Caps(Arc<[(Sym, Capability)]>);

impl Caps {
    /// The shared set's address: equal sets are interned into one, so
    /// workers with the same capabilities have the same `ptr`.
    pub fn ptr(&self) -> usize {
        addr(&self.0)
    }

    pub fn get(&self, agent: &str) -> Option<&Capability> {
        self.0
            .binary_search_by(|(a, _)| (**a).cmp(agent))
            .ok()
            .map(|i| &self.0[i].1)
    }

    pub fn keys(&self) -> impl Iterator<Item = &Sym> {
        self.0.iter().map(|(a, _)| a)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Sym, &Capability)> {
        self.0.iter().map(|(a, c)| (a, c))
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One worker, compact. Field names follow [`WorkerView`]; `state` (the
/// hub's) and `in_sync` (the hub's word, less a revision the fleet has
/// moved from since) are kept beside it, on the fleet's entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worker {
    pub worker: Box<str>,
    pub host: Sym,
    pub received_at: DateTime<Utc>,
    pub sent_at: DateTime<Utc>,
    pub config_revision: Option<Sym>,
    pub agents: Arc<[Sym]>,
    pub active_agent: Option<Sym>,
    pub capabilities: Caps,
    /// Its last failover, when the hub received it and the rungs held off
    /// (`None`: none of them said): one box, so a worker that never
    /// failed over costs no more than before.
    pub failed: Option<Box<Failed>>,
    /// Rungs below the active one it can still run (`None`: the hub does
    /// not say).
    pub headroom: Option<u32>,
    /// Its clock less the hub's, in seconds (`None`: the hub does not say).
    pub clock_skew_s: Option<i64>,
    pub pool: Option<Sym>,
    /// The interval the hub told it (`None`: the hub does not say).
    pub heartbeat_interval_s: Option<u64>,
    /// What it says of its turns (`None`: nothing, an older worker or hub).
    pub turns: Option<Box<Turns>>,
    /// In the cohort of the staged rollout baking: told its candidate
    /// (docs/hub-api.md, *Rollouts*).
    pub cohort: bool,
    /// The hub's `in_sync`: it reports the revision and the list it was
    /// given (docs/hub-api.md, `in_sync`).
    pub said_in_sync: bool,
}

/// A worker's `last_failover`, `last_failover_received_at` and `held_off`
/// as the hub carried them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub last: Option<Failover>,
    pub received_at: Option<DateTime<Utc>>,
    pub held_off: Box<[Held]>,
}

/// One rung the hub holds off (`wire::HeldOff`), its agent shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub agent: Sym,
    pub at: DateTime<Utc>,
    pub kind: CauseKind,
}

/// A worker's `turn` and `next_turn_agent` as the hub carried them (each
/// `None` when left out, `Some(None)` for `null`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turns {
    pub turn: Option<Option<(Sym, DateTime<Utc>)>>,
    pub next: Option<Option<Sym>>,
}

impl Worker {
    /// Its last failover as the worker reported it.
    pub fn last_failover(&self) -> Option<&Failover> {
        self.failed.as_deref()?.last.as_ref()
    }

    /// When the hub received the heartbeat that carried its last failover
    /// (`None`: the hub does not say).
    pub fn last_failover_received_at(&self) -> Option<DateTime<Utc>> {
        self.failed.as_deref()?.received_at
    }

    /// When its last failover happened as far as the hub can tell: the
    /// earlier of its `at` and the hub's receipt (as
    /// [`WorkerView::last_failover_at`]). Orders and ages use this.
    pub fn last_failover_at(&self) -> Option<DateTime<Utc>> {
        let f = self.last_failover()?;
        let got = self.last_failover_received_at().unwrap_or(self.received_at);
        Some(f.at.min(got))
    }

    /// The rungs the hub holds off (empty: none, or a hub that does not say).
    pub fn held_off(&self) -> &[Held] {
        self.failed.as_deref().map_or(&[], |f| &f.held_off)
    }

    /// Healthy-or-not aside, on a rung with nothing left below it: the
    /// next failure leaves it with no route (as
    /// [`WorkerView::one_failure_from_no_route`], less the state, which
    /// the fleet's entry holds).
    pub fn on_last_rung(&self) -> bool {
        self.active_agent.is_some() && self.headroom == Some(0)
    }

    /// The turn it is in, if it says it is in one: its agent and start.
    pub fn turn(&self) -> Option<(&str, DateTime<Utc>)> {
        let (agent, since) = self.turns.as_deref()?.turn.as_ref()?.as_ref()?;
        Some((&**agent, *since))
    }

    /// Why it does not run `revision` yet (`None`: it runs it), as
    /// [`WorkerView::lag`].
    pub fn lag(&self, revision: &str) -> Option<crate::wire::Lag<'_>> {
        let next = self
            .turns
            .as_deref()
            .and_then(|t| t.next.as_ref())
            .and_then(|n| n.as_deref());
        crate::wire::lag_of(revision, self.config_revision.as_deref(), self.turn(), next)
    }
}

impl Worker {
    /// Back to the wire form (`state` and `in_sync` as given).
    pub fn to_wire(&self, state: WorkerState, in_sync: bool) -> WorkerView {
        WorkerView {
            worker: self.worker.to_string(),
            host: self.host.to_string(),
            received_at: self.received_at,
            sent_at: self.sent_at,
            state,
            config_revision: self.config_revision.as_deref().map(str::to_string),
            in_sync,
            agents: self.agents.iter().map(|a| a.to_string()).collect(),
            active_agent: self.active_agent.as_deref().map(str::to_string),
            capabilities: self
                .capabilities
                .iter()
                .map(|(a, c)| (a.to_string(), *c))
                .collect(),
            last_failover: self.last_failover().cloned(),
            last_failover_received_at: self.last_failover_received_at(),
            held_off: self
                .held_off()
                .iter()
                .map(|h| HeldOff {
                    agent: h.agent.to_string(),
                    at: h.at,
                    kind: h.kind,
                })
                .collect(),
            headroom: self.headroom,
            clock_skew_s: self.clock_skew_s,
            pool: self.pool.as_deref().map(str::to_string),
            heartbeat_interval_s: self.heartbeat_interval_s,
            turn: self.turns.as_deref().and_then(|t| {
                t.turn.as_ref().map(|t| {
                    t.as_ref().map(|(agent, since)| crate::wire::Turn {
                        agent: agent.to_string(),
                        since: *since,
                    })
                })
            }),
            next_turn_agent: self
                .turns
                .as_deref()
                .and_then(|t| t.next.as_ref().map(|n| n.as_deref().map(str::to_string))),
            cohort: self.cohort,
        }
    }
}

/// One table of shared values; entries nobody else holds are dropped
/// whenever the table has doubled, so it stays about as large as what is
/// in use (and under churn settles at the room its sweeps need).
#[derive(Debug)]
pub struct Table<T: ?Sized> {
    set: HashSet<Arc<T>, foldhash::fast::RandomState>,
    /// Size after the last sweep.
    swept: usize,
}

impl<T: ?Sized> Default for Table<T> {
    fn default() -> Self {
        Table {
            set: HashSet::default(),
            swept: 0,
        }
    }
}

impl<T: ?Sized + Hash + Eq> Table<T> {
    fn get(&mut self, v: &T, make: impl FnOnce() -> Arc<T>) -> Arc<T> {
        if let Some(a) = self.set.get(v) {
            return a.clone();
        }
        if self.set.len() >= 2 * self.swept + 1024 {
            self.set.retain(|a| Arc::strong_count(a) > 1);
            self.swept = self.set.len();
        }
        let a = make();
        self.set.insert(a.clone());
        a
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }
}

impl Table<str> {
    /// The shared copy of `s`.
    pub fn sym(&mut self, s: &str) -> Sym {
        self.get(s, || Arc::from(s))
    }
}

/// Interning tables for [`Worker`]s.
#[derive(Debug, Default)]
pub struct Interner {
    strs: Table<str>,
    lists: Table<[Sym]>,
    caps: Table<[(Sym, Capability)]>,
}

impl Interner {
    pub fn sym(&mut self, s: &str) -> Sym {
        self.strs.sym(s)
    }

    /// The compact form of `v`, sharing what repeats.
    pub fn worker(&mut self, v: WorkerView) -> Worker {
        let agents: Vec<Sym> = v.agents.iter().map(|a| self.sym(a)).collect();
        let agents = self.lists.get(&agents, || Arc::from(agents.as_slice()));
        let caps: Vec<(Sym, Capability)> = v
            .capabilities
            .iter()
            .map(|(a, c)| (self.sym(a), *c))
            .collect();
        let caps = Caps(self.caps.get(&caps, || Arc::from(caps.as_slice())));
        Worker {
            worker: v.worker.into_boxed_str(),
            host: self.sym(&v.host),
            received_at: v.received_at,
            sent_at: v.sent_at,
            config_revision: v.config_revision.as_deref().map(|r| self.sym(r)),
            agents,
            active_agent: v.active_agent.as_deref().map(|a| self.sym(a)),
            capabilities: caps,
            failed: self.failed(v.last_failover, v.last_failover_received_at, v.held_off),
            headroom: v.headroom,
            clock_skew_s: v.clock_skew_s,
            pool: v.pool.as_deref().map(|p| self.sym(p)),
            heartbeat_interval_s: v.heartbeat_interval_s,
            turns: (v.turn.is_some() || v.next_turn_agent.is_some()).then(|| {
                Box::new(Turns {
                    turn: v.turn.map(|t| t.map(|t| (self.sym(&t.agent), t.since))),
                    next: v.next_turn_agent.map(|n| n.as_deref().map(|a| self.sym(a))),
                })
            }),
            cohort: v.cohort,
            said_in_sync: v.in_sync,
        }
    }

    fn failed(
        &mut self,
        last: Option<Failover>,
        received_at: Option<DateTime<Utc>>,
        held_off: Vec<HeldOff>,
    ) -> Option<Box<Failed>> {
        if last.is_none() && received_at.is_none() && held_off.is_empty() {
            return None;
        }
        let held_off = held_off
            .into_iter()
            .map(|h| Held {
                agent: self.sym(&h.agent),
                at: h.at,
                kind: h.kind,
            })
            .collect();
        Some(Box::new(Failed {
            last,
            received_at,
            held_off,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture::{self, t0};
    use crate::wire::CauseKind;

    /// The hub's receipt of the last failover and the rungs it holds off
    /// come back as the hub sent them, and the record is no larger than
    /// before they were kept (one box with the last failover).
    #[test]
    fn the_compact_worker_keeps_the_receipt_and_the_held_off_rungs() {
        let mut v = fixture::worker(0, t0());
        assert!(v.last_failover.is_some());
        v.last_failover_received_at = Some(t0() - chrono::TimeDelta::minutes(10));
        v.held_off = vec![HeldOff {
            agent: "opencode".into(),
            at: t0() - chrono::TimeDelta::minutes(2),
            kind: CauseKind::RateLimited,
        }];
        let mut i = Interner::default();
        let w = i.worker(v.clone());
        assert_eq!(w.to_wire(v.state, v.in_sync), v);
        assert_eq!(w.last_failover_at(), v.last_failover_at());
        // Only held off, no failover: still kept.
        let mut bare = fixture::worker(1, t0());
        bare.last_failover = None;
        bare.held_off = v.held_off.clone();
        let w = i.worker(bare.clone());
        assert_eq!(w.to_wire(bare.state, bare.in_sync), bare);
        // Nothing of it: nothing boxed.
        bare.held_off.clear();
        assert!(i.worker(bare).failed.is_none());
        // 8 bytes of box where the last failover's was: 200 as before.
        assert!(
            std::mem::size_of::<Worker>() <= 200,
            "{}",
            std::mem::size_of::<Worker>()
        );
    }
}
