//! The summary a [`Fleet`] answers from its [`SummaryTally`]: the most
//! urgent workers, the counts in the wire's shape, and the hub's
//! `GET /v1/summary` and `summary` event. (The tally itself, kept as the
//! fleet changes, is `summary.rs`, which imports nothing of the fleet.)

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::Utc;

use super::Hub;
use super::fleet::Fleet;
use super::summary::{AgentTally, CALM_KEPT, n, urgent_key};
use super::worker::Stored;
use crate::wire::{
    AgentSummary, MAX_SUMMARY_AGENTS, MAX_SUMMARY_REVISIONS, MAX_SUMMARY_URGENT, RevisionCount,
    Summary,
};

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
        if agents.len() > MAX_SUMMARY_AGENTS || t.agents_other.workers > 0 {
            let mut other = t.agents_other;
            for (_, c) in agents.iter().skip(MAX_SUMMARY_AGENTS) {
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
        if revs.len() > MAX_SUMMARY_REVISIONS || t.revisions_other > 0 {
            let rest: i64 = revs.iter().skip(MAX_SUMMARY_REVISIONS).map(|r| r.1).sum();
            revisions.push(RevisionCount {
                revision: Some("other".into()),
                workers: n(rest + t.revisions_other),
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

impl Fleet {
    /// The counts the status word is judged on, read off the running
    /// tallies: `GET /v1/health` asks per request, so no summary (its
    /// urgent list, its sorted agents) is built for it.
    pub fn verdict_figures(&self) -> crate::verdict::Figures {
        let t = &self.summary;
        let c = |x: i64| usize::try_from(x).unwrap_or(0);
        crate::verdict::Figures {
            workers: c(t.workers),
            healthy: c(t.healthy),
            no_route: c(t.no_route),
            degraded: c(t.degraded),
            one_failure: c(t.one_failure),
            ..Default::default()
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
            turn: None,
            next_turn_agent: None,
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

    /// Workers that each report agent names of their own: the summary
    /// counts at most 256 names one by one and the rest as `other`, and
    /// every count comes back to zero as they go (a worker's counts leave
    /// the bucket they went into).
    #[test]
    fn names_of_their_own_by_the_thousand_stay_within_the_slots() {
        use crate::wire::{Capability, Preflight};
        let mut f = Fleet::new(1);
        let now = Utc::now();
        let ok = Capability {
            binary: true,
            token: true,
            preflight: Preflight::Ok,
        };
        let own = |i: usize| {
            let names: Vec<String> = (0..4).map(|k| format!("a{i}x{k}")).collect();
            crate::wire::Heartbeat {
                agents: names.clone(),
                active_agent: Some(names[0].clone()),
                capabilities: names.iter().map(|n| (n.clone(), ok)).collect(),
                config_revision: Some(format!("rev{i}")),
                ..hb(&format!("w-{i:04}"), None)
            }
        };
        for i in 0..2000 {
            f.record(&(&own(i)).into(), now, "r1");
        }
        let s = f.summary(&[]);
        assert_eq!(s.agents.len(), MAX_SUMMARY_AGENTS + 1);
        let other = s.agents.last().expect("other");
        assert_eq!(other.agent, "other");
        let capable: u64 = s.agents.iter().map(|a| a.capable).sum();
        assert_eq!(capable, 2000 * 4, "every name counted once");
        assert!(
            f.summary.agents.len() <= MAX_SUMMARY_AGENTS,
            "the map is bounded"
        );
        assert!(f.summary.revisions.len() <= 1024, "the map is bounded");
        let revs: u64 = s.revisions.iter().map(|r| r.workers).sum();
        assert_eq!(revs, 2000);
        // All gone: nothing left anywhere.
        let gone = f.evict(
            std::time::Instant::now() + std::time::Duration::from_secs(7200),
            std::time::Duration::from_secs(10),
        );
        assert_eq!(gone.len(), 2000);
        let s = f.summary(&[]);
        assert!(s.agents.is_empty() && s.revisions.is_empty(), "{s:?}");
        assert_eq!(f.summary.agents_other, AgentTally::default());
        assert_eq!(f.summary.revisions_other, 0);
    }
}
