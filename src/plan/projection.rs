//! What a new order would do to the fleet before it is sent: a pure
//! function over the workers as the hub reports them.
//!
//! The rule is the workers' own (docs/hub-api.md, `src/sim/`): a worker
//! walks the list from rank 0 and stands on the first agent it can run that
//! nothing holds it off. It moves down only on a structured failure, so
//! every agent it can run that stands above its active agent in the list it
//! follows now is held off (a router's `rate_limited`, `auth`, ...), and with
//! no route, every agent it can run is. Those holds are assumed to last; an
//! agent the worker has not reported a capability for is assumed not
//! runnable (and counted as `unreported`).

use std::collections::{BTreeSet, HashSet};

use crate::wire::{
    BeforeAfter, Capability, KNOWN_AGENTS, PlanAnswer, PlanRung, WorkerState, WorkerView,
};

/// What the projection reads of a worker. The CLI projects the hub's
/// `WorkerView`s; the TUI its own compact entries (`tui::fleet::Entry`),
/// which it would otherwise have to turn back into wire workers, all of
/// them, on every change while an edit is pending.
pub trait Seat {
    fn state(&self) -> WorkerState;
    /// The list the worker follows, rank 0 first.
    fn agents(&self) -> impl Iterator<Item = &str>;
    fn active_agent(&self) -> Option<&str>;
    fn capability(&self, agent: &str) -> Option<Capability>;
    /// Every agent it reported a capability for.
    fn reported(&self) -> impl Iterator<Item = &str>;
    /// Rungs below its active one it can still run that are not held off
    /// (the hub's `headroom`); `None`: not known.
    fn headroom(&self) -> Option<u32> {
        None
    }
}

impl Seat for WorkerView {
    fn state(&self) -> WorkerState {
        self.state
    }
    fn agents(&self) -> impl Iterator<Item = &str> {
        self.agents.iter().map(String::as_str)
    }
    fn active_agent(&self) -> Option<&str> {
        self.active_agent.as_deref()
    }
    fn capability(&self, agent: &str) -> Option<Capability> {
        self.capabilities.get(agent).copied()
    }
    fn reported(&self) -> impl Iterator<Item = &str> {
        self.capabilities.keys().map(String::as_str)
    }
    fn headroom(&self) -> Option<u32> {
        self.headroom
    }
}

impl<T: Seat> Seat for &T {
    fn state(&self) -> WorkerState {
        (**self).state()
    }
    fn agents(&self) -> impl Iterator<Item = &str> {
        (**self).agents()
    }
    fn active_agent(&self) -> Option<&str> {
        (**self).active_agent()
    }
    fn capability(&self, agent: &str) -> Option<Capability> {
        (**self).capability(agent)
    }
    fn reported(&self) -> impl Iterator<Item = &str> {
        (**self).reported()
    }
    fn headroom(&self) -> Option<u32> {
        (**self).headroom()
    }
}

/// One agent's rung, today and under the new order, over healthy workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RungForecast {
    pub agent: String,
    /// Rank in the new order; `None`: the new order removes it.
    pub rank: Option<usize>,
    /// Rank in today's order; `None`: the new order adds it.
    pub old_rank: Option<usize>,
    /// Healthy workers that report they can run it.
    pub can: usize,
    /// Healthy workers on it under today's order: the same baseline as
    /// [`Projection::change_rung`] (a worker that follows today's order
    /// counts on the agent it runs now, one still on an older list where
    /// today's order puts it; a drill counts where workers stand now).
    pub today: usize,
    /// Healthy workers that would stand on it under the new order.
    pub projected: usize,
    /// Healthy workers that reach this rung without having reported a
    /// capability for it (assumed to pass it by).
    pub unreported: usize,
}

/// Something the owner should see before sending the new order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// The new rank 0 can be run by fewer than half of the healthy workers.
    WeakTop {
        agent: String,
        can: usize,
        healthy: usize,
    },
    /// An agent no healthy worker can run stands above one that at least
    /// half of them can.
    DeadAbove {
        agent: String,
        above: String,
        can: usize,
    },
    /// The new order drops an agent healthy workers run now.
    RemovedInUse { agent: String, running: usize },
    /// No worker has ever reported the name and it is not a known agent:
    /// most likely a typo, and it routes nobody.
    Unreported { agent: String },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::WeakTop {
                agent,
                can,
                healthy,
            } => write!(
                f,
                "rank 0 {agent} can be run by only {can} of {healthy} healthy workers"
            ),
            Warning::DeadAbove { agent, above, can } => write!(
                f,
                "no healthy worker can run {agent}, placed above {above} ({can} can)"
            ),
            Warning::RemovedInUse { agent, running } => write!(
                f,
                "removing {agent}, which {running} healthy workers run now"
            ),
            Warning::Unreported { agent } => write!(
                f,
                "{agent:?} is not a known agent and no worker has reported it (a typo routes nobody)"
            ),
        }
    }
}

/// The new order against today's, over the fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Projection {
    pub healthy: usize,
    /// The new order's agents in rank order, then the agents it removes.
    pub rungs: Vec<RungForecast>,
    /// Healthy workers with no route under today's order (the baseline of
    /// [`RungForecast::today`]).
    pub no_route_today: usize,
    /// Healthy workers that would have no route under the new order.
    pub no_route: usize,
    /// Healthy workers that would stand on another rung than the one they
    /// stand on under today's order (another agent, or no route where
    /// they had one, or back): a worker that follows today's order counts
    /// from the agent it runs now, one still on an older list from where
    /// today's order puts it once it takes it.
    pub change_rung: usize,
    pub warnings: Vec<Warning>,
}

impl Projection {
    /// This projection as `POST /v1/plan` answers it: the hub's plan and a
    /// client's own projection (a hub without the endpoint) say it alike.
    pub fn answer(
        self,
        revision: &str,
        today: &[String],
        new: &[String],
        workers: usize,
    ) -> PlanAnswer {
        PlanAnswer {
            config_revision: revision.to_string(),
            current_agents: today.to_vec(),
            agents: new.to_vec(),
            workers,
            healthy: self.healthy,
            rungs: self
                .rungs
                .into_iter()
                .map(|r| PlanRung {
                    agent: r.agent,
                    rank: r.rank,
                    old_rank: r.old_rank,
                    can: r.can,
                    before: r.today,
                    after: r.projected,
                    unreported: r.unreported,
                })
                .collect(),
            change_rung: self.change_rung,
            no_route: BeforeAfter {
                before: self.no_route_today,
                after: self.no_route,
            },
            warnings: self.warnings.iter().map(ToString::to_string).collect(),
        }
    }
}

impl Projection {
    /// Does any rung's count (or the no-route count) change?
    pub fn moves_workers(&self) -> bool {
        self.no_route != self.no_route_today || self.rungs.iter().any(|r| r.projected != r.today)
    }
}

/// Every agent name a worker has reported: capabilities and active agents.
/// (The list a worker follows comes from the hub, so it proves nothing.)
pub fn seen_agents<W: Seat>(workers: &[W]) -> BTreeSet<&str> {
    seen(workers)
}

fn seen<'w, W: Seat + 'w>(workers: impl IntoIterator<Item = &'w W>) -> BTreeSet<&'w str> {
    let mut seen = BTreeSet::new();
    for w in workers {
        seen.extend(w.reported());
        seen.extend(w.active_agent());
    }
    seen
}

/// Names in `agents` that are neither known agents nor reported by any
/// worker, in order.
pub fn unreported<'a, W: Seat>(agents: &'a [String], workers: &[W]) -> Vec<&'a str> {
    unreported_of(agents, &seen_agents(workers))
}

fn unreported_of<'a>(agents: &'a [String], seen: &BTreeSet<&str>) -> Vec<&'a str> {
    agents
        .iter()
        .map(String::as_str)
        .filter(|a| !KNOWN_AGENTS.contains(a) && !seen.contains(a))
        .collect()
}

/// The agents `worker` is held off now: those it can run that stand above
/// its active agent in the list it follows (all of them with no route).
fn held<W: Seat>(worker: &W) -> HashSet<&str> {
    let active = worker.active_agent();
    worker
        .agents()
        .take_while(|a| active != Some(*a))
        .filter(|a| worker.capability(a).is_some_and(|c| c.capable()))
        .collect()
}

/// Where `worker` would stand under `order` (`None`: no route), and the
/// ranks it passed without a reported capability.
pub fn rung_of<'o, W: Seat>(worker: &W, order: &'o [String]) -> (Option<&'o str>, Vec<usize>) {
    let held = held(worker);
    let mut unreported = Vec::new();
    for (i, a) in order.iter().enumerate() {
        match worker.capability(a) {
            None => unreported.push(i),
            Some(c) if c.capable() && !held.contains(a.as_str()) => {
                return (Some(a.as_str()), unreported);
            }
            Some(_) => {}
        }
    }
    (None, unreported)
}

/// Where `worker` stands under `today` (the hub's list now): its active
/// agent when it follows that list already, else where that list puts it
/// once it takes it. A worker still on an older revision is counted
/// against the list it is about to follow, so the count of workers that
/// change rung is the same right after a colleague's write as a minute
/// later, once the fleet has moved onto it.
fn settled<'w, W: Seat>(worker: &'w W, today: &'w [String]) -> Option<&'w str> {
    if worker.agents().eq(today.iter().map(String::as_str)) {
        worker.active_agent()
    } else {
        rung_of(worker, today).0
    }
}

/// What `new` would do, against `today` (the hub's order now), over
/// `workers` as the hub reports them.
pub fn project<W: Seat>(workers: &[W], today: &[String], new: &[String]) -> Projection {
    let groups: Vec<(&W, usize)> = workers.iter().map(|w| (w, 1)).collect();
    project_grouped(&groups, today, new)
}

/// [`project`] over workers grouped by what it reads: each `(w, n)`
/// stands for `n` workers with `w`'s state, list, active agent and
/// capabilities. A fleet of 100,000 has a few hundred such shapes, so the
/// TUI projects those (`tui::edit`), not every worker.
pub fn project_grouped<W: Seat>(
    groups: &[(W, usize)],
    today: &[String],
    new: &[String],
) -> Projection {
    project_from(groups, today, new, true)
}

/// `settle`: a worker not yet on `today` changes rung from where `today`
/// puts it (a projection of a new order); else from its active agent (a
/// drill, which judges where workers stand now).
fn project_from<W: Seat>(
    groups: &[(W, usize)],
    today: &[String],
    new: &[String],
    settle: bool,
) -> Projection {
    let healthy: Vec<(&W, usize)> = groups
        .iter()
        .filter(|(w, _)| w.state() == WorkerState::Healthy)
        .map(|(w, n)| (w, *n))
        .collect();
    let mut rungs: Vec<RungForecast> = new
        .iter()
        .enumerate()
        .map(|(i, a)| forecast(a, Some(i), today, &healthy))
        .collect();
    rungs.extend(
        today
            .iter()
            .filter(|a| !new.contains(*a))
            .map(|a| forecast(a, None, today, &healthy)),
    );
    let mut no_route = 0;
    let mut no_route_today = 0;
    let mut change_rung = 0;
    for (w, n) in &healthy {
        let (rung, passed) = rung_of(*w, new);
        for i in passed {
            rungs[i].unreported += n;
        }
        // One baseline for `today`, `no_route_today` and `change_rung`:
        // where each worker stands under today's list (F5, issue 27).
        let from = if settle {
            settled(*w, today)
        } else {
            w.active_agent()
        };
        if rung != from {
            change_rung += n;
        }
        match from.and_then(|a| rungs.iter().position(|r| r.agent == a)) {
            Some(i) => rungs[i].today += n,
            None if from.is_none() => no_route_today += n,
            // An agent neither list holds (a worker's own): not a rung.
            None => {}
        }
        match rung.and_then(|a| new.iter().position(|x| x == a)) {
            Some(i) => rungs[i].projected += n,
            None => no_route += n,
        }
    }
    let count = |f: &dyn Fn(&W) -> bool| -> usize {
        healthy.iter().filter(|(w, _)| f(w)).map(|(_, n)| n).sum()
    };
    let n_healthy = count(&|_| true);
    let seen = seen(groups.iter().map(|(w, _)| w));
    // A removed agent in use is one workers run now, whatever list they
    // follow.
    let running: Vec<usize> = rungs
        .iter()
        .map(|r| count(&|w| w.active_agent() == Some(r.agent.as_str())))
        .collect();
    let warnings = warnings(&rungs, &running, n_healthy, new, &seen);
    Projection {
        healthy: n_healthy,
        rungs,
        no_route_today,
        no_route,
        change_rung,
        warnings,
    }
}

/// A worker as a drill sees it: the rungs marked down are ones it cannot
/// run, whatever it reports; and when the hub says it has no headroom
/// (every rung below its active one held off or not runnable), none below
/// its active one either, so a drill of the rung it stands on leaves it
/// with no route, as its headroom says it would.
struct Down<'a, W> {
    worker: &'a W,
    down: &'a [String],
}

impl<W: Seat> Seat for Down<'_, W> {
    fn state(&self) -> WorkerState {
        self.worker.state()
    }
    fn agents(&self) -> impl Iterator<Item = &str> {
        self.worker.agents()
    }
    fn active_agent(&self) -> Option<&str> {
        self.worker.active_agent()
    }
    fn capability(&self, agent: &str) -> Option<Capability> {
        let c = self.worker.capability(agent)?;
        let below_with_none_left = self.worker.headroom() == Some(0)
            && self.worker.active_agent().is_some_and(|active| {
                let mut list = self.worker.agents();
                list.position(|a| a == active)
                    .is_some_and(|_| list.any(|a| a == agent))
            });
        if below_with_none_left || self.down.iter().any(|d| d == agent) {
            return Some(Capability {
                binary: c.binary,
                token: c.token,
                preflight: crate::wire::Preflight::Failed,
            });
        }
        Some(c)
    }
    fn reported(&self) -> impl Iterator<Item = &str> {
        self.worker.reported()
    }
    fn headroom(&self) -> Option<u32> {
        self.worker.headroom()
    }
}

/// The drill: today's order with the rungs in `down` down across the
/// fleet (no worker can run them), as a [`Projection`] of `today` onto
/// itself: where each healthy worker would land, and how many would have
/// no route (without the warnings, which judge an order about to be
/// written). Nothing is written; the TUI's `x` on the Ladder and `macfleet
/// agents drill` show the same.
pub fn drill<W: Seat>(workers: &[W], today: &[String], down: &[String]) -> Projection {
    let groups: Vec<(&W, usize)> = workers.iter().map(|w| (w, 1)).collect();
    drill_grouped(&groups, today, down)
}

/// [`drill`] over grouped workers (see [`project_grouped`]).
pub fn drill_grouped<W: Seat>(
    groups: &[(W, usize)],
    today: &[String],
    down: &[String],
) -> Projection {
    let seen: Vec<(Down<'_, W>, usize)> = groups
        .iter()
        .map(|(w, n)| (Down { worker: w, down }, *n))
        .collect();
    // The warnings judge an order about to be written; a drill writes none.
    Projection {
        warnings: Vec::new(),
        ..project_from(&seen, today, today, false)
    }
}

fn forecast<W: Seat>(
    agent: &str,
    rank: Option<usize>,
    today: &[String],
    healthy: &[(&W, usize)],
) -> RungForecast {
    let count = |f: &dyn Fn(&W) -> bool| -> usize {
        healthy.iter().filter(|(w, _)| f(w)).map(|(_, n)| n).sum()
    };
    RungForecast {
        agent: agent.to_string(),
        rank,
        old_rank: today.iter().position(|a| a == agent),
        can: count(&|w| w.capability(agent).is_some_and(|c| c.capable())),
        today: 0,
        projected: 0,
        unreported: 0,
    }
}

fn warnings(
    rungs: &[RungForecast],
    running: &[usize],
    healthy: usize,
    new: &[String],
    seen: &BTreeSet<&str>,
) -> Vec<Warning> {
    let mut out = Vec::new();
    let listed = || rungs.iter().filter(|r| r.rank.is_some());
    if healthy > 0 {
        if let Some(top) = listed().next()
            && top.can * 2 < healthy
        {
            out.push(Warning::WeakTop {
                agent: top.agent.clone(),
                can: top.can,
                healthy,
            });
        }
        let ranked: Vec<&RungForecast> = listed().collect();
        for (i, r) in ranked.iter().enumerate() {
            if r.can > 0 {
                continue;
            }
            if let Some(b) = ranked[i + 1..].iter().find(|b| b.can * 2 >= healthy) {
                out.push(Warning::DeadAbove {
                    agent: r.agent.clone(),
                    above: b.agent.clone(),
                    can: b.can,
                });
            }
        }
    }
    for (r, &n) in rungs.iter().zip(running) {
        if r.rank.is_none() && n > 0 {
            out.push(Warning::RemovedInUse {
                agent: r.agent.clone(),
                running: n,
            });
        }
    }
    for a in unreported_of(new, seen) {
        out.push(Warning::Unreported {
            agent: a.to_string(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Capability, Preflight};
    use chrono::Utc;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    const OK: Capability = Capability {
        binary: true,
        token: true,
        preflight: Preflight::Ok,
    };
    const NO_BINARY: Capability = Capability {
        binary: false,
        token: true,
        preflight: Preflight::Unknown,
    };

    /// A worker following `agents`, on `active`, with `caps`.
    fn worker(
        id: &str,
        agents: &[&str],
        active: Option<&str>,
        caps: &[(&str, Capability)],
    ) -> WorkerView {
        WorkerView {
            worker: id.into(),
            host: "h".into(),
            received_at: Utc::now(),
            sent_at: Utc::now(),
            state: WorkerState::Healthy,
            config_revision: Some("r1".into()),
            in_sync: true,
            agents: v(agents),
            active_agent: active.map(str::to_string),
            capabilities: caps.iter().map(|(a, c)| (a.to_string(), *c)).collect(),
            last_failover: None,
            last_failover_received_at: None,
            held_off: Vec::new(),
            headroom: None,
            clock_skew_s: None,
            pool: None,
            heartbeat_interval_s: None,
            turn: None,
            next_turn_agent: None,
            cohort: false,
        }
    }

    fn rung<'p>(p: &'p Projection, agent: &str) -> &'p RungForecast {
        p.rungs.iter().find(|r| r.agent == agent).expect("rung")
    }

    const LIST: [&str; 3] = ["opencode", "pi", "claude"];

    /// A colleague put pi first; the workers have not taken that list
    /// yet (still on opencode under the old one). An edit that keeps pi
    /// first moves none of them from where the hub's list puts them; one
    /// that puts opencode back moves them all: at once, not only once the
    /// fleet has moved onto the colleague's list.
    #[test]
    fn workers_not_yet_on_todays_list_count_from_where_it_puts_them() {
        let caps = [("opencode", OK), ("pi", OK), ("claude", OK)];
        let behind = worker("w1", &LIST, Some("opencode"), &caps);
        let on = worker("w2", &["pi", "opencode", "claude"], Some("pi"), &caps);
        let today = v(&["pi", "opencode", "claude"]);
        let keeps = v(&["pi", "opencode", "cursor", "claude"]);
        let reverts = v(&LIST);
        let p = project(&[behind.clone(), on.clone()], &today, &keeps);
        assert_eq!(p.change_rung, 0, "both stand on pi under today's list");
        let p = project(&[behind.clone(), on.clone()], &today, &reverts);
        assert_eq!(p.change_rung, 2);
        // A minute later, the first worker on today's list: the same.
        let moved = worker("w1", &["pi", "opencode", "claude"], Some("pi"), &caps);
        assert_eq!(
            project(&[moved.clone(), on.clone()], &today, &keeps).change_rung,
            0
        );
        assert_eq!(project(&[moved, on], &today, &reverts).change_rung, 2);
        // A drill judges where workers stand now.
        let d = drill(&[behind], &today, &[]);
        assert_eq!(d.change_rung, 1, "it would go to pi");
    }

    /// F5 (issue 27): a rung's count today and the count of workers that
    /// change rung stand on one baseline, so the counts add up: a worker
    /// still on an older list is counted where today's list puts it, in
    /// `today` as in `change_rung`.
    #[test]
    fn today_and_change_rung_count_from_one_baseline() {
        let caps = [("opencode", OK), ("pi", OK), ("claude", OK)];
        // The hub's list put pi first; w1 has not taken it (on opencode).
        let behind = worker("w1", &LIST, Some("opencode"), &caps);
        let on = worker("w2", &["pi", "opencode", "claude"], Some("pi"), &caps);
        let today = v(&["pi", "opencode", "claude"]);
        let p = project(&[behind, on], &today, &today);
        assert_eq!(p.change_rung, 0, "today's list moves nobody");
        assert_eq!((rung(&p, "pi").today, rung(&p, "opencode").today), (2, 0));
        assert!(!p.moves_workers(), "{p:?}");
        for p in [
            &p,
            &project(&[worker("w3", &LIST, None, &[])], &today, &today),
        ] {
            let before: usize = p.rungs.iter().map(|r| r.today).sum();
            let after: usize = p.rungs.iter().map(|r| r.projected).sum();
            assert_eq!(before + p.no_route_today, p.healthy);
            assert_eq!(after + p.no_route, p.healthy);
        }
    }

    #[test]
    fn counts_follow_the_workers_rule() {
        let all = [("opencode", OK), ("pi", OK), ("claude", OK)];
        let workers = vec![
            // Free to go anywhere.
            worker("a", &LIST, Some("opencode"), &all),
            // Held off opencode (rate limited): stays off it in any order.
            worker("b", &LIST, Some("pi"), &all),
            // Cannot run opencode at all.
            worker(
                "c",
                &LIST,
                Some("pi"),
                &[("opencode", NO_BINARY), ("pi", OK), ("claude", OK)],
            ),
            // No route: everything it can run is held.
            worker("d", &LIST, None, &all),
            // Not healthy: not counted.
            WorkerView {
                state: WorkerState::Stale,
                ..worker("e", &LIST, Some("opencode"), &all)
            },
        ];
        let today = v(&LIST);
        let p = project(&workers, &today, &v(&["claude", "opencode", "pi"]));
        assert_eq!(p.healthy, 4);
        assert_eq!(
            (rung(&p, "claude").today, rung(&p, "claude").projected),
            (0, 3)
        );
        assert_eq!(
            (rung(&p, "opencode").today, rung(&p, "opencode").projected),
            (1, 0)
        );
        assert_eq!((rung(&p, "pi").today, rung(&p, "pi").projected), (2, 0));
        assert_eq!((p.no_route_today, p.no_route), (1, 1));
        assert_eq!(rung(&p, "opencode").can, 3);
        assert_eq!(rung(&p, "claude").old_rank, Some(2));
        assert!(p.moves_workers());
        // Today's order projects today's counts.
        let same = project(&workers, &today, &today);
        assert!(!same.moves_workers(), "{same:?}");
        assert!(same.warnings.is_empty(), "{:?}", same.warnings);
    }

    #[test]
    fn held_rungs_and_unreported_capabilities() {
        // A worker on claude, held off opencode; it never reported cursor.
        let w = worker(
            "a",
            &LIST,
            Some("claude"),
            &[("opencode", OK), ("pi", NO_BINARY), ("claude", OK)],
        );
        let order = v(&["cursor", "opencode", "claude"]);
        assert_eq!(rung_of(&w, &order), (Some("claude"), vec![0]));
        let p = project(&[w], &v(&LIST), &order);
        assert_eq!(rung(&p, "cursor").unreported, 1);
        assert_eq!(rung(&p, "cursor").projected, 0);
        assert_eq!(rung(&p, "pi").rank, None, "removed rungs are listed");
    }

    #[test]
    fn a_drill_lands_each_worker_below_the_rungs_marked_down() {
        let all = [
            ("opencode", OK),
            ("pi", OK),
            ("claude", OK),
            ("codex", NO_BINARY),
        ];
        let only_top = [
            ("opencode", OK),
            ("pi", NO_BINARY),
            ("claude", NO_BINARY),
            ("codex", NO_BINARY),
        ];
        let workers = vec![
            worker("a", &LIST, Some("opencode"), &all),
            worker("b", &LIST, Some("opencode"), &only_top),
            // On claude, held off opencode and pi: stays on claude.
            worker("c", &LIST, Some("claude"), &all),
        ];
        let today = v(&LIST);
        let p = drill(&workers, &today, &v(&["opencode"]));
        assert_eq!(rung(&p, "opencode").can, 0, "down for everyone");
        assert_eq!(
            (rung(&p, "pi").projected, rung(&p, "claude").projected),
            (1, 1)
        );
        assert_eq!((p.no_route, p.no_route_today), (1, 0));
        assert!(
            p.warnings.is_empty(),
            "a drill writes no order to warn about"
        );
        // Nothing down: everyone where they stand.
        let same = drill(&workers, &today, &[]);
        assert!(!same.moves_workers());

        // The hub says `a` has no headroom (pi and claude held off by the
        // last hour's failovers): its drill agrees, no route, not pi.
        let mut held = workers.clone();
        held[0].headroom = Some(0);
        held[2].headroom = Some(0);
        let p = drill(&held, &today, &v(&["opencode"]));
        assert_eq!(rung(&p, "pi").projected, 0, "pi is held off for a");
        assert_eq!((p.no_route, p.no_route_today), (2, 0));
        assert_eq!(rung(&p, "claude").projected, 1, "c stays where it stands");
        // Some headroom left: the first rung below it can run.
        held[0].headroom = Some(1);
        let p = drill(&held, &today, &v(&["opencode"]));
        assert_eq!(rung(&p, "pi").projected, 1);
    }

    #[test]
    fn warns_before_the_order_is_sent() {
        let few = [
            ("opencode", OK),
            ("pi", OK),
            ("claude", OK),
            ("codex", NO_BINARY),
        ];
        let most = [
            ("opencode", OK),
            ("pi", NO_BINARY),
            ("claude", OK),
            ("codex", NO_BINARY),
        ];
        let workers = vec![
            worker("a", &LIST, Some("pi"), &few),
            worker("b", &LIST, Some("opencode"), &most),
            worker("c", &LIST, Some("opencode"), &most),
        ];
        let today = v(&LIST);
        // pi first: 1 of 3 can run it. codex (nobody) above claude (all).
        // opencode removed while two run it. "claud" is a typo.
        let p = project(&workers, &today, &v(&["pi", "codex", "claude", "claud"]));
        assert_eq!(
            p.warnings,
            vec![
                Warning::WeakTop {
                    agent: "pi".into(),
                    can: 1,
                    healthy: 3
                },
                Warning::DeadAbove {
                    agent: "codex".into(),
                    above: "claude".into(),
                    can: 3
                },
                Warning::RemovedInUse {
                    agent: "opencode".into(),
                    running: 2
                },
                Warning::Unreported {
                    agent: "claud".into()
                },
            ]
        );
        assert_eq!(
            p.warnings[0].to_string(),
            "rank 0 pi can be run by only 1 of 3 healthy workers"
        );
        // A name a worker reported is no typo, known or not.
        let mut w = worker("d", &LIST, Some("opencode"), &few);
        w.capabilities.insert("aider".into(), NO_BINARY);
        assert_eq!(
            unreported(&v(&["aider", "cursor", "claud"]), &[w]),
            ["claud"]
        );
        // No healthy worker: no counting warnings, only the typo.
        let p = project::<WorkerView>(&[], &today, &v(&["claud", "opencode"]));
        assert_eq!(
            p.warnings,
            vec![Warning::Unreported {
                agent: "claud".into()
            }]
        );
    }
}
