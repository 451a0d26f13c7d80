//! `POST /v1/plan`: what an order would do over the whole fleet, from the
//! projection the TUI draws ([`crate::plan::project_grouped`]), never a
//! copy of it. The hub's workers are read through a thin [`Seat`] adapter
//! and grouped by what the projection reads (roster, active agent,
//! state): a million workers report a few hundred such shapes, so the
//! projection runs over those. Nothing is written.

use std::collections::HashMap;
use std::sync::Arc;

use super::worker::Stored;
use crate::plan::Seat;
use crate::wire::{Capability, PlanAnswer, WorkerState};

/// A held worker as the projection reads it.
struct Held(Arc<Stored>);

impl Seat for Held {
    fn state(&self) -> WorkerState {
        self.0.state
    }
    fn agents(&self) -> impl Iterator<Item = &str> {
        self.0.profile.roster.agents()
    }
    fn active_agent(&self) -> Option<&str> {
        self.0.profile.active_agent()
    }
    fn capability(&self, agent: &str) -> Option<Capability> {
        self.0.profile.roster.capability(agent)
    }
    fn reported(&self) -> impl Iterator<Item = &str> {
        self.0.profile.roster.capabilities().map(|(name, _)| name)
    }
    fn headroom(&self) -> Option<u32> {
        Some(self.0.headroom)
    }
}

/// The plan of `new` against `today` (the list of `revision`) over
/// `workers`. One pass to group them, then the projection over the groups.
pub fn plan_over(
    workers: &[Arc<Stored>],
    revision: &str,
    today: &[String],
    new: &[String],
) -> PlanAnswer {
    let mut at: HashMap<(usize, Option<&str>, WorkerState), usize, foldhash::fast::RandomState> =
        HashMap::default();
    let mut groups: Vec<(Held, usize)> = Vec::new();
    for w in workers {
        let key = (w.profile.roster.id(), w.profile.active_agent(), w.state);
        match at.get(&key) {
            Some(&i) => groups[i].1 += 1,
            None => {
                at.insert(key, groups.len());
                groups.push((Held(w.clone()), 1));
            }
        }
    }
    crate::plan::project_grouped(&groups, today, new).answer(revision, today, new, workers.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::fleet::Fleet;
    use crate::hub::ingest::HeartbeatIn;

    /// A fleet of `n` workers over a few hundred shapes (rosters and
    /// active agents), all healthy.
    fn fleet(n: usize) -> Fleet {
        let mut f = Fleet::new(1);
        let names = ["opencode", "pi", "claude", "codex", "cursor"];
        let now = chrono::Utc::now();
        for i in 0..n {
            let caps: serde_json::Map<String, serde_json::Value> = names
                .iter()
                .enumerate()
                .map(|(j, a)| {
                    let ok = (i >> (j + 3)) % 3 != 0;
                    (
                        a.to_string(),
                        serde_json::json!({"binary": ok, "token": true, "preflight": "ok"}),
                    )
                })
                .collect();
            let hb = serde_json::json!({
                "worker": format!("w-{i:07}"), "host": format!("h-{}", i % 1000),
                "sent_at": crate::wire::fmt_time(now), "config_revision": null,
                "agents": names, "active_agent": names[i % 5], "capabilities": caps,
                "failovers": []
            });
            let bytes = serde_json::to_vec(&hb).expect("json");
            let hb = HeartbeatIn::parse(&bytes).expect("heartbeat");
            f.record(&hb, now, "r1");
        }
        f
    }

    #[test]
    fn a_plan_over_grouped_workers_is_the_projection_over_every_worker() {
        let f = fleet(2_000);
        let (views, _) = f.window_source();
        let today: Vec<String> = ["opencode", "pi", "claude", "codex", "cursor"]
            .map(String::from)
            .to_vec();
        let new: Vec<String> = ["claude", "opencode", "pi"].map(String::from).to_vec();
        let answer = plan_over(&views, "r1", &today, &new);
        let seats: Vec<Held> = views.iter().cloned().map(Held).collect();
        let whole = crate::plan::project(&seats, &today, &new);
        assert_eq!(answer.healthy, whole.healthy);
        assert_eq!(answer.change_rung, whole.change_rung);
        assert_eq!(answer.no_route.after, whole.no_route);
        let after: Vec<usize> = answer.rungs.iter().map(|r| r.after).collect();
        let projected: Vec<usize> = whole.rungs.iter().map(|r| r.projected).collect();
        assert_eq!(after, projected);
        assert_eq!(answer.workers, 2_000);
    }

    /// The figure of docs/hub-api.md: `cargo test --release --lib
    /// plan_at_a_million -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn plan_at_a_million() {
        let f = fleet(1_000_000);
        let new: Vec<String> = ["claude", "opencode", "pi"].map(String::from).to_vec();
        let today: Vec<String> = ["opencode", "pi", "claude", "codex", "cursor"]
            .map(String::from)
            .to_vec();
        let t0 = std::time::Instant::now();
        let (views, _) = f.window_source();
        let took_views = t0.elapsed();
        let answer = plan_over(&views, "r1", &today, &new);
        drop(views);
        let took = t0.elapsed();
        eprintln!(
            "plan at 1,000,000 workers: {took:?} in all ({took_views:?} taking the views under the lock), {} healthy, {} change rung",
            answer.healthy, answer.change_rung
        );
        assert_eq!(answer.workers, 1_000_000);
        assert!(took < std::time::Duration::from_secs(1), "{took:?}");
    }
}
