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

use chrono::Utc;

use super::Hub;
use super::fleet::Fleet;
use super::worker::Stored;
use crate::wire::{
    AgentSummary, MAX_SUMMARY_AGENTS, MAX_SUMMARY_REVISIONS, MAX_SUMMARY_URGENT, Preflight,
    RevisionCount, Summary, WorkerState,
};

type Fast = foldhash::fast::RandomState;

/// Calm workers' smallest ids kept (more than an answer needs, so a few
/// leaving does not force a pass over the fleet).
const CALM_KEPT: usize = 4 * MAX_SUMMARY_URGENT;

/// An agent's counts, and how many live workers add to them (the entry
/// goes when none does).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct AgentTally {
    workers: i64,
    capable: i64,
    active: i64,
    no_binary: i64,
    no_token: i64,
    preflight_failed: i64,
    last_rung: i64,
}

/// The `urgency` order's key of a worker that is not calm.
type Urgent = (u8, u64, Arc<str>);

/// The summary's counts, kept as workers change.
#[derive(Debug, Default)]
pub struct SummaryTally {
    workers: i64,
    healthy: i64,
    stale: i64,
    lost: i64,
    no_route: i64,
    healthy_no_route: i64,
    degraded: i64,
    out_of_sync: i64,
    one_failure: i64,
    headroom_known: i64,
    agents: HashMap<String, AgentTally, Fast>,
    /// Live workers per reported revision, and those reporting none.
    revisions: HashMap<String, i64, Fast>,
    no_revision: i64,
    /// Every worker that is not calm, in `urgency` order.
    urgent: BTreeSet<Urgent>,
    /// The smallest ids of calm workers: always the `calm.len()` smallest.
    calm: BTreeSet<Arc<str>>,
    /// Calm workers in all.
    calm_count: usize,
}

/// Order-preserving map of a time to `u64`, as the windows' keys.
fn ts(t: chrono::DateTime<Utc>) -> u64 {
    let n = t
        .timestamp_nanos_opt()
        .unwrap_or_else(|| t.timestamp().saturating_mul(1_000_000_000));
    (n as u64) ^ (1 << 63)
}

/// The worker's `urgency` key, or `None` when it is calm.
fn urgent_key(v: &Stored) -> Option<Urgent> {
    let u = crate::query::urgency(v.profile.active_agent().is_some(), v.state);
    let fo = v.last_failover.as_ref().map(|f| !ts(f.at));
    if u == 3 && fo.is_none() {
        return None;
    }
    Some((u, fo.unwrap_or(u64::MAX), v.worker().clone()))
}

impl SummaryTally {
    /// A worker's view moved from `old` to `new` (`None`: it was not
    /// there, or is forgotten). A repeated heartbeat that changes nothing
    /// counted here costs a few compares.
    pub fn change(&mut self, old: Option<&Stored>, new: Option<&Stored>) {
        if let (Some(o), Some(n)) = (old, new) {
            let same_failover = match (&o.last_failover, &n.last_failover) {
                (None, None) => true,
                (Some(a), Some(b)) => Arc::ptr_eq(a, b) || a.at == b.at,
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
        match p.config_revision() {
            None => self.no_revision += d,
            Some(r) => match self.revisions.get_mut(r) {
                Some(c) => {
                    *c += d;
                    if *c == 0 {
                        self.revisions.remove(r);
                    }
                }
                None => {
                    self.revisions.insert(r.to_owned(), d);
                }
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
        if !self.agents.contains_key(agent) {
            self.agents.insert(agent.to_owned(), AgentTally::default());
        }
        let Some(c) = self.agents.get_mut(agent) else {
            return;
        };
        c.workers += d;
        f(c);
        if c.workers == 0 {
            self.agents.remove(agent);
        }
    }
}

fn n(x: i64) -> u64 {
    x.max(0) as u64
}

impl Fleet {
    /// The most urgent workers, at most [`MAX_SUMMARY_URGENT`], in the
    /// `urgency` order. Refills the calm set by one pass over the fleet
    /// when removals emptied it below what is needed.
    fn most_urgent(&mut self) -> Vec<Arc<Stored>> {
        let need = MAX_SUMMARY_URGENT.saturating_sub(self.summary.urgent.len());
        let t = &self.summary;
        if need > 0 && t.calm.len() < need.min(t.calm_count) {
            let mut calm: BTreeSet<Arc<str>> = BTreeSet::new();
            for v in self.views() {
                if urgent_key(v).is_none() {
                    calm.insert(v.worker().clone());
                    if calm.len() > CALM_KEPT {
                        calm.pop_last();
                    }
                }
            }
            self.summary.calm = calm;
        }
        let t = &self.summary;
        let ids = t
            .urgent
            .iter()
            .map(|k| &k.2)
            .chain(t.calm.iter())
            .take(MAX_SUMMARY_URGENT);
        ids.filter_map(|id| self.get(id).cloned()).collect()
    }

    /// What `GET /v1/summary` answers, but for the hub's own fields; the
    /// agents in `order` first (the list in force), then by name.
    pub fn summary(&mut self, order: &[String]) -> Summary {
        let urgent = self.most_urgent();
        let t = &self.summary;
        let mut agents: Vec<(&String, &AgentTally)> = t.agents.iter().collect();
        let pos = |a: &str| order.iter().position(|x| x == a).unwrap_or(usize::MAX);
        agents.sort_by(|a, b| pos(a.0).cmp(&pos(b.0)).then_with(|| a.0.cmp(b.0)));
        let wire = |name: &str, c: &AgentTally| AgentSummary {
            agent: name.to_string(),
            capable: n(c.capable),
            active: n(c.active),
            no_binary: n(c.no_binary),
            no_token: n(c.no_token),
            preflight_failed: n(c.preflight_failed),
            last_rung: n(c.last_rung),
        };
        let mut out: Vec<AgentSummary> = agents
            .iter()
            .take(MAX_SUMMARY_AGENTS)
            .map(|(a, c)| wire(a, c))
            .collect();
        if agents.len() > MAX_SUMMARY_AGENTS {
            let mut other = AgentTally::default();
            for (_, c) in &agents[MAX_SUMMARY_AGENTS..] {
                other.capable += c.capable;
                other.active += c.active;
                other.no_binary += c.no_binary;
                other.no_token += c.no_token;
                other.preflight_failed += c.preflight_failed;
                other.last_rung += c.last_rung;
            }
            out.push(wire("other", &other));
        }
        let mut revs: Vec<(Option<&str>, i64)> = t
            .revisions
            .iter()
            .map(|(r, c)| (Some(r.as_str()), *c))
            .chain((t.no_revision > 0).then_some((None, t.no_revision)))
            .collect();
        revs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut revisions: Vec<RevisionCount> = revs
            .iter()
            .take(MAX_SUMMARY_REVISIONS)
            .map(|(r, c)| RevisionCount {
                revision: r.map(str::to_string),
                workers: n(*c),
            })
            .collect();
        if revs.len() > MAX_SUMMARY_REVISIONS {
            revisions.push(RevisionCount {
                revision: Some("other".into()),
                workers: n(revs[MAX_SUMMARY_REVISIONS..].iter().map(|r| r.1).sum()),
            });
        }
        Summary {
            now: Utc::now(),
            config_revision: String::new(),
            heartbeat_interval_s: 0,
            cursor: self.cursor().to_string(),
            workers: n(t.workers),
            healthy: n(t.healthy),
            stale: n(t.stale),
            lost: n(t.lost),
            no_route: n(t.no_route),
            healthy_no_route: n(t.healthy_no_route),
            degraded: n(t.degraded),
            out_of_sync: n(t.out_of_sync),
            one_failure_from_no_route: n(t.one_failure),
            headroom_known: n(t.headroom_known),
            agents: out,
            revisions,
            urgent: urgent.iter().map(|s| s.to_view()).collect(),
        }
    }
}

impl Hub {
    /// `GET /v1/summary`'s answer now.
    pub fn summary(&self) -> Result<Summary, &'static str> {
        let current = self.current();
        let mut fleet = self.fleet.lock().map_err(|_| "fleet lock poisoned")?;
        let mut s = fleet.summary(&current.agents);
        s.heartbeat_interval_s = self.interval_for(fleet.len());
        drop(fleet);
        s.config_revision = current.projected.clone();
        Ok(s)
    }

    /// The `summary` event, when the summary changed since `last` (its
    /// time and cursor aside); the sweeper calls it once a second.
    pub fn publish_summary(&self, last: &mut Option<Summary>) {
        let Ok(s) = self.summary() else { return };
        let same = last.as_ref().is_some_and(|l| {
            Summary {
                now: l.now,
                cursor: l.cursor.clone(),
                ..s.clone()
            } == *l
        });
        if !same {
            self.events
                .publish(super::events::Payload::Summary(Arc::new(s.clone())));
            *last = Some(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{WindowQuery, WindowSort};

    fn hb(id: &str, active: Option<&str>) -> crate::wire::Heartbeat {
        crate::wire::Heartbeat {
            worker: id.into(),
            host: "h".into(),
            sent_at: Utc::now(),
            config_revision: Some("r1".into()),
            agents: vec!["pi".into(), "claude".into()],
            active_agent: active.map(String::from),
            capabilities: Default::default(),
            failovers: vec![],
        }
    }

    fn head(f: &Fleet) -> Vec<String> {
        let w = f
            .window(&WindowQuery {
                sort: WindowSort::Urgency,
                limit: MAX_SUMMARY_URGENT as u32,
                ..Default::default()
            })
            .expect("window");
        w.workers.iter().map(|v| v.worker().to_string()).collect()
    }

    fn urgent(f: &mut Fleet) -> Vec<String> {
        f.summary(&[])
            .urgent
            .into_iter()
            .map(|w| w.worker)
            .collect()
    }

    /// With fewer than 20 workers that are not calm, the rest of `urgent`
    /// is the calm workers' smallest ids, kept right as they come and go
    /// (the kept set is refilled when removals empty it).
    #[test]
    fn urgent_is_the_urgency_orders_head_as_calm_workers_come_and_go() {
        let mut f = Fleet::new(1);
        let now = Utc::now();
        let t0 = std::time::Instant::now();
        let pool: Arc<str> = Arc::from("p");
        for i in (0..600).rev() {
            // The 100 smallest ids were heard from long before the rest.
            let arrived = t0 + std::time::Duration::from_secs(if i < 100 { 0 } else { 3600 });
            let h = hb(&format!("w-{i:03}"), Some("pi"));
            f.record_at(&(&h).into(), now, arrived, &pool, "r1");
        }
        assert_eq!(urgent(&mut f), head(&f));
        // They are forgotten: more than the calm set kept.
        let gone = f.evict(
            t0 + std::time::Duration::from_secs(7200),
            std::time::Duration::from_secs(5400),
        );
        assert_eq!(gone.len(), 100);
        assert_eq!(urgent(&mut f), head(&f));
        assert_eq!(urgent(&mut f)[0], "w-100");
        // The smallest calm ids lose their route one by one: they become
        // the most urgent, and the calm head moves on past the kept set.
        for i in 100..300 {
            f.record(&(&hb(&format!("w-{i:03}"), None)).into(), now, "r1");
            if i % 2 == 0 {
                // and some come back
                f.record(
                    &(&hb(&format!("w-{:03}", 100 + i / 2), Some("pi"))).into(),
                    now,
                    "r1",
                );
            }
            assert_eq!(urgent(&mut f), head(&f), "after {i}");
        }
        let s = f.summary(&["pi".into()]);
        assert_eq!(s.workers, 500);
        assert_eq!(s.urgent.len(), MAX_SUMMARY_URGENT);
        assert_eq!(
            s.no_route as usize,
            f.views()
                .filter(|v| v.profile.active_agent().is_none())
                .count()
        );
    }
}
