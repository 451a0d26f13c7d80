//! `GET /v1/summary` (docs/hub-api.md): the fleet's counts as the TUI
//! aggregates them (`tui::model::fleet::Aggregates`), per agent and per
//! revision, and its most urgent workers, kept as each worker changes
//! ([`SummaryTally::change`], called by the fleet beside the metrics
//! tally), so an answer costs O(agents + revisions + 20), not O(fleet).
//!
//! The most urgent workers are an ordered set of the keys of every worker
//! that is not calm (a calm one is healthy, with a route and no failover
//! known: it sorts after every other); while fewer than 20 are not calm, the
//! rest come from a short ordered set of the calm workers' smallest ids,
//! refilled by one pass over the fleet only when removals have emptied it
//! below what an answer needs.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::worker::Stored;
use crate::wire::{MAX_SUMMARY_AGENTS, MAX_SUMMARY_URGENT, Preflight, WorkerState};

type Fast = foldhash::fast::RandomState;

/// Calm workers' smallest ids kept (more than an answer needs, so a few
/// leaving does not force a pass over the fleet).
pub(super) const CALM_KEPT: usize = 4 * MAX_SUMMARY_URGENT;

/// Agent names counted one by one; the contract lists at most this many.
/// A name is given a slot only while nothing counts in the rest (so a
/// worker's counts always leave the bucket they went into).
pub(super) const AGENT_SLOTS: usize = MAX_SUMMARY_AGENTS;
/// Revisions counted one by one (the summary lists the most common 16).
pub(super) const REVISION_SLOTS: usize = 1024;

/// An agent's counts, and how many live workers add to them (the entry
/// goes when none does).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct AgentTally {
    pub(super) workers: i64,
    pub(super) capable: i64,
    pub(super) active: i64,
    pub(super) no_binary: i64,
    pub(super) no_token: i64,
    pub(super) preflight_failed: i64,
    pub(super) last_rung: i64,
}

/// The `urgency` order's key of a worker that is not calm.
pub(super) type Urgent = (u8, u64, Arc<str>);

/// The summary's counts, kept as workers change.
#[derive(Debug, Default)]
pub struct SummaryTally {
    pub(super) workers: i64,
    pub(super) healthy: i64,
    pub(super) stale: i64,
    pub(super) lost: i64,
    pub(super) no_route: i64,
    pub(super) healthy_no_route: i64,
    pub(super) degraded: i64,
    pub(super) out_of_sync: i64,
    pub(super) one_failure: i64,
    pub(super) headroom_known: i64,
    /// Per agent name, at most [`AGENT_SLOTS`] of them: names past that
    /// count in `agents_other` (a fleet that reports names of its own by
    /// the thousand does not grow the hub by a map entry each).
    pub(super) agents: HashMap<String, AgentTally, Fast>,
    pub(super) agents_other: AgentTally,
    /// Live workers per reported revision, at most [`REVISION_SLOTS`] of
    /// them (the rest in `revisions_other`), and those reporting none.
    pub(super) revisions: HashMap<String, i64, Fast>,
    pub(super) revisions_other: i64,
    pub(super) no_revision: i64,
    /// Every worker that is not calm, in `urgency` order.
    pub(super) urgent: BTreeSet<Urgent>,
    /// The smallest ids of calm workers: always the `calm.len()` smallest.
    pub(super) calm: BTreeSet<Arc<str>>,
    /// Calm workers in all.
    pub(super) calm_count: usize,
}

/// The worker's `urgency` key, or `None` when it is calm.
pub(super) fn urgent_key(v: &Stored) -> Option<Urgent> {
    let u = crate::query::urgency(v.profile.active_agent().is_some(), v.state);
    let at = v.last_failover_at();
    if u == 3 && at.is_none() {
        return None;
    }
    Some((u, crate::query::failover_key(at), v.worker().clone()))
}

impl SummaryTally {
    /// A worker's view moved from `old` to `new` (`None`: it was not
    /// there, or is forgotten). A repeated heartbeat that changes nothing
    /// counted here costs a few compares.
    pub fn change(&mut self, old: Option<&Stored>, new: Option<&Stored>) {
        if let (Some(o), Some(n)) = (old, new) {
            let same_failover = match (&o.last_failover, &n.last_failover) {
                (None, None) => true,
                (Some(a), Some(b)) => {
                    (Arc::ptr_eq(a, b) || a.at == b.at)
                        && o.last_failover_received_at == n.last_failover_received_at
                }
                _ => false,
            };
            if Arc::ptr_eq(&o.profile, &n.profile)
                && o.state == n.state
                && o.in_sync == n.in_sync
                && o.headroom == n.headroom
                && same_failover
            {
                return;
            }
        }
        if let Some(o) = old {
            self.apply(o, -1);
        }
        if let Some(n) = new {
            self.apply(n, 1);
        }
    }

    fn apply(&mut self, v: &Stored, d: i64) {
        match urgent_key(v) {
            Some(k) => {
                if d > 0 {
                    self.urgent.insert(k);
                } else {
                    self.urgent.remove(&k);
                }
            }
            None => {
                let id = v.worker();
                if d > 0 {
                    let smaller = self.calm.last().is_some_and(|m| **id < **m);
                    if smaller || self.calm.len() == self.calm_count {
                        self.calm.insert(id.clone());
                        if self.calm.len() > CALM_KEPT {
                            self.calm.pop_last();
                        }
                    }
                    self.calm_count += 1;
                } else {
                    self.calm.remove(id);
                    self.calm_count -= 1;
                }
            }
        }
        let p = &*v.profile;
        self.workers += d;
        match v.state {
            WorkerState::Healthy => {
                self.healthy += d;
                let rank = crate::query::rank_in(p.roster.agents(), p.active_agent());
                if p.active_agent().is_some() && rank != Some(0) {
                    self.degraded += d;
                }
            }
            WorkerState::Stale => {
                self.stale += d;
                self.degraded += d;
            }
            WorkerState::Lost => {
                self.lost += d;
                self.degraded += d;
                return;
            }
        }
        if p.active_agent().is_none() {
            self.no_route += d;
            if v.state == WorkerState::Healthy {
                self.healthy_no_route += d;
            }
        }
        if !v.in_sync {
            self.out_of_sync += d;
        }
        // The reference hub always knows a live worker's headroom.
        self.headroom_known += d;
        let last = v.one_failure_from_no_route();
        if last {
            self.one_failure += d;
        }
        let room = self.revisions.len() < REVISION_SLOTS && self.revisions_other == 0;
        match p.config_revision() {
            None => self.no_revision += d,
            Some(r) => match self.revisions.get_mut(r) {
                Some(c) => {
                    *c += d;
                    if *c == 0 {
                        self.revisions.remove(r);
                    }
                }
                None if room => {
                    self.revisions.insert(r.to_owned(), d);
                }
                None => self.revisions_other += d,
            },
        }
        for (agent, cap) in p.roster.capabilities() {
            self.agent(agent, d, |c| {
                if cap.capable() {
                    c.capable += d;
                }
                if !cap.binary {
                    c.no_binary += d;
                }
                if !cap.token {
                    c.no_token += d;
                }
                if cap.preflight == Preflight::Failed {
                    c.preflight_failed += d;
                }
            });
        }
        if let Some(active) = &p.active_agent() {
            self.agent(active, d, |c| {
                c.active += d;
                if last {
                    c.last_rung += d;
                }
            });
        }
    }

    /// Change `agent`'s counts with `f`, one live worker more (`d` 1) or
    /// less (-1) adding to them.
    fn agent(&mut self, agent: &str, d: i64, f: impl FnOnce(&mut AgentTally)) {
        if !self.agents.contains_key(agent)
            && self.agents.len() < AGENT_SLOTS
            && self.agents_other.workers == 0
        {
            self.agents.insert(agent.to_owned(), AgentTally::default());
        }
        let Some(c) = self.agents.get_mut(agent) else {
            let c = &mut self.agents_other;
            c.workers += d;
            f(c);
            return;
        };
        c.workers += d;
        f(c);
        if c.workers == 0 {
            self.agents.remove(agent);
        }
    }
}

pub(super) fn n(x: i64) -> u64 {
    x.max(0) as u64
}
