//! `GET /metrics`: the fleet and the hub in the Prometheus text format
//! (0.0.4, `prometheus-client`), for alert rules (`assets/alerts.yml`).
//!
//! Labels are bounded: an agent label is a name in the list every worker
//! is told now, or `other` (and `none` for no route); a kind is a cause
//! kind; a route is one of the API's paths or `other`; never a worker id
//! or a host. Counters live for the hub's run; the fleet's gauges are
//! kept by the fleet as workers change ([`FleetTally`]), so a scrape costs
//! O(agents), not O(fleet); `benches/metrics.rs` measures it at 100,000
//! workers.

use std::collections::HashMap;
use std::fmt::Write as _;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

use super::worker::{Roster, Stored};
use super::{Current, Hub};
use crate::wire::{CauseKind, FailoverRecord, OrderSource, RecoveryRecord, WorkerState};

/// The `Content-Type` of an answer.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The paths a request is counted under; anything else is `other`.
pub const ROUTES: &[&str] = &[
    "/v1/health",
    "/v1/whoami",
    "/v1/config",
    "/v1/config/history",
    "/v1/heartbeats",
    "/v1/workers",
    "/v1/summary",
    "/v1/failovers",
    "/v1/recoveries",
    "/v1/events",
    "/v1/plan",
    "/v1/rollouts",
    "/v1/rollouts/current",
    "/v1/rollouts/current/promote",
    "/v1/rollouts/current/abort",
    "/metrics",
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FailoverLabels {
    kind: &'static str,
    from: String,
    to: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MoveLabels {
    from: String,
    to: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AgentRungLabels {
    agent: String,
    rung: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AgentLabels {
    agent: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RevisionLabels {
    revision: String,
}

/// Distinct agent names (or pairs) a counter keeps before it counts the
/// rest under `other`: a worker token may send any well-formed name.
const MAX_NAMES: usize = 4096;

/// A move between two rungs (`None`: no route), as counted.
type Move = (Option<String>, Option<String>);

/// The hub's counters, for the whole run. Failovers and recoveries are
/// counted by the names they carry and labelled against the list in force
/// at each scrape.
#[derive(Default)]
pub struct HubMetrics {
    requests: Family<RequestLabels, Counter>,
    refused: Family<ReasonLabels, Counter>,
    failovers: std::sync::Mutex<HashMap<(CauseKind, Move), u64>>,
    recoveries: std::sync::Mutex<HashMap<Move, u64>>,
}

fn count<K: std::hash::Hash + Eq>(map: &std::sync::Mutex<HashMap<K, u64>>, key: K, other: K) {
    let mut m = match map.lock() {
        Ok(m) => m,
        Err(p) => p.into_inner(),
    };
    let key = if m.len() < MAX_NAMES || m.contains_key(&key) {
        key
    } else {
        other
    };
    *m.entry(key).or_default() += 1;
}

fn other() -> Move {
    (Some("other".into()), Some("other".into()))
}

/// `agent` as a label: a name in `list`, else `other`.
pub fn agent_label(agent: Option<&str>, list: &[String]) -> String {
    match agent {
        None => "none".into(),
        Some("other") => "other".into(),
        Some(a) if list.iter().any(|x| x == a) => a.to_string(),
        Some(_) => "other".into(),
    }
}

impl HubMetrics {
    /// A request answered with `status` on `path`; a refused heartbeat also
    /// counts under its error code.
    pub fn request(&self, path: &str, status: u16, code: Option<&str>) {
        let route = ROUTES
            .iter()
            .copied()
            .find(|r| *r == path)
            .unwrap_or("other");
        self.requests
            .get_or_create(&RequestLabels { route, status })
            .inc();
        if route == "/v1/heartbeats" && status >= 400 {
            let reason = code.map_or_else(|| status.to_string(), str::to_string);
            self.refused.get_or_create(&ReasonLabels { reason }).inc();
        }
    }

    /// Failovers committed to the log.
    pub fn failovers(&self, records: &[FailoverRecord]) {
        for r in records {
            let f = &r.failover;
            let k = f.cause.kind;
            count(
                &self.failovers,
                (k, (Some(f.from.clone()), f.to.clone())),
                (k, other()),
            );
        }
    }

    pub fn recovery(&self, r: &RecoveryRecord) {
        count(
            &self.recoveries,
            (r.from.clone(), Some(r.to.clone())),
            other(),
        );
    }

    fn failover_family(&self, list: &[String]) -> Family<FailoverLabels, Counter> {
        let family: Family<FailoverLabels, Counter> = Family::default();
        if let Ok(m) = self.failovers.lock() {
            for ((kind, (from, to)), n) in m.iter() {
                family
                    .get_or_create(&FailoverLabels {
                        kind: kind.as_str(),
                        from: agent_label(from.as_deref(), list),
                        to: agent_label(to.as_deref(), list),
                    })
                    .inc_by(*n);
            }
        }
        family
    }

    fn recovery_family(&self, list: &[String]) -> Family<MoveLabels, Counter> {
        let family: Family<MoveLabels, Counter> = Family::default();
        if let Ok(m) = self.recoveries.lock() {
            for ((from, to), n) in m.iter() {
                family
                    .get_or_create(&MoveLabels {
                        from: agent_label(from.as_deref(), list),
                        to: agent_label(to.as_deref(), list),
                    })
                    .inc_by(*n);
            }
        }
        family
    }
}

type Fast = foldhash::fast::RandomState;

/// Rungs a worker can stand on (its list holds at most 64) and one more
/// for an active agent outside its own list.
const RUNGS: usize = crate::wire::MAX_AGENTS + 1;

/// The fleet's gauges, kept by the fleet as it changes
/// ([`FleetTally::change`], called with the old and new view of every
/// worker that changes), so a scrape reads them in O(agents), not
/// O(fleet). Counts are by the names workers report; [`Labelled`] maps
/// them onto the list in force at the scrape. A name no live worker
/// reports any more is dropped, so the maps stay as small as the fleet's
/// set of names.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FleetTally {
    pub healthy: i64,
    pub stale: i64,
    pub lost: i64,
    pub no_route: i64,
    pub one_failure_from_no_route: i64,
    pub behind_revision: i64,
    /// Healthy workers by active agent and rung in the list they follow.
    /// Sparse: the rungs with workers on them, each with its count (an
    /// array of every rung was 520 B per name, one name per worker in a
    /// fleet whose names are each worker's own).
    by_agent: HashMap<String, Vec<(u8, i64)>, Fast>,
    /// Healthy workers by the roster (agent list and capabilities) they
    /// report, by its address: how many can run each agent is summed from
    /// these at a scrape. Per name it was a map entry (a `String` and a
    /// count) per capability name, 64 per worker of a fleet whose names
    /// are each worker's own; per roster it is one entry per distinct list,
    /// one for a fleet that reports the same.
    capable: HashMap<usize, (Roster, i64), Fast>,
    /// Healthy workers holding each agent off (as of their last heartbeat).
    held_off: HashMap<String, i64, Fast>,
}

fn bump(map: &mut HashMap<String, i64, Fast>, key: &str, d: i64) {
    match map.get_mut(key) {
        Some(n) => {
            *n += d;
            if *n == 0 {
                map.remove(key);
            }
        }
        None => {
            map.insert(key.to_owned(), d);
        }
    }
}

impl FleetTally {
    /// A worker's view moved from `old` to `new` (`None`: it was not
    /// there, or is forgotten). A repeated heartbeat that changes nothing
    /// counted here costs a few pointer compares.
    pub fn change(&mut self, old: Option<&Stored>, new: Option<&Stored>) {
        if let (Some(o), Some(n)) = (old, new) {
            let same_held = match (&o.held, &n.held) {
                (None, None) => true,
                (Some(a), Some(b)) => std::sync::Arc::ptr_eq(a, b),
                _ => false,
            };
            if std::sync::Arc::ptr_eq(&o.profile, &n.profile)
                && o.state == n.state
                && o.in_sync == n.in_sync
                && o.headroom == n.headroom
                && same_held
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

    fn apply(&mut self, w: &Stored, d: i64) {
        match w.state {
            WorkerState::Healthy => self.healthy += d,
            WorkerState::Stale => self.stale += d,
            WorkerState::Lost => self.lost += d,
        }
        if w.state != WorkerState::Healthy {
            return;
        }
        let p = &*w.profile;
        match p.active_agent() {
            None => self.no_route += d,
            Some(a) => {
                let rung = p
                    .roster
                    .agents()
                    .position(|x| x == a)
                    .unwrap_or(RUNGS - 1)
                    .min(RUNGS - 1) as u8;
                match self.by_agent.get_mut(a) {
                    Some(rungs) => {
                        // Kept in rung order: equal counts, equal tallies.
                        match rungs.binary_search_by_key(&rung, |(r, _)| *r) {
                            Ok(i) => rungs[i].1 += d,
                            Err(i) => rungs.insert(i, (rung, d)),
                        }
                        rungs.retain(|(_, n)| *n != 0);
                        if rungs.is_empty() {
                            self.by_agent.remove(a);
                        }
                    }
                    None => {
                        self.by_agent.insert(a.to_owned(), vec![(rung, d)]);
                    }
                }
            }
        }
        if w.one_failure_from_no_route() {
            self.one_failure_from_no_route += d;
        }
        if !w.in_sync {
            self.behind_revision += d;
        }
        match self.capable.get_mut(&p.roster.id()) {
            Some((_, n)) => {
                *n += d;
                if *n == 0 {
                    self.capable.remove(&p.roster.id());
                }
            }
            None => {
                self.capable.insert(p.roster.id(), (p.roster.clone(), d));
            }
        }
        for h in w.held.as_deref().unwrap_or_default() {
            bump(&mut self.held_off, &h.agent, d);
        }
    }

    /// The counts labelled against `list`: names outside it as `other`
    /// (rung `other`); every agent of the list present, at 0 if need be.
    pub fn labelled(&self, list: &[String]) -> Labelled {
        let mut l = Labelled::default();
        for a in list {
            l.capable.insert(a.clone(), 0);
            l.held_off.insert(a.clone(), 0);
        }
        for (a, rungs) in &self.by_agent {
            let label = agent_label(Some(a), list);
            for &(rung, n) in rungs {
                let rung = usize::from(rung);
                let rung = if label == "other" || rung == RUNGS - 1 {
                    "other".to_string()
                } else {
                    rung.to_string()
                };
                *l.by_agent.entry((label.clone(), rung)).or_default() += n;
            }
        }
        for (roster, n) in self.capable.values() {
            for (a, c) in roster.capabilities() {
                if c.capable() {
                    *l.capable.entry(agent_label(Some(a), list)).or_default() += n;
                }
            }
        }
        for (a, n) in &self.held_off {
            *l.held_off.entry(agent_label(Some(a), list)).or_default() += n;
        }
        l
    }
}

/// [`FleetTally`]'s maps with bounded labels.
#[derive(Debug, Default)]
pub struct Labelled {
    pub by_agent: HashMap<(String, String), i64>,
    pub capable: HashMap<String, i64>,
    pub held_off: HashMap<String, i64>,
}

fn gauge_family<S>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    rows: impl IntoIterator<Item = (S, i64)>,
) where
    S: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static,
{
    let family: Family<S, Gauge> = Family::default();
    for (labels, n) in rows {
        family.get_or_create(&labels).set(n);
    }
    registry.register(name, help, family);
}

/// Everything a scrape answers.
pub struct Scrape<'a> {
    pub counters: &'a HubMetrics,
    pub current: &'a Current,
    pub tally: FleetTally,
    pub sse_subscribers: i64,
    pub db_errors: u64,
    /// 1 while a staged rollout bakes.
    pub rollout_baking: bool,
    /// 1 while the status word is `ROLLOUT HALTED` (the last rollout was
    /// halted by the guard, no write since).
    pub rollout_halted: bool,
}

impl Scrape<'_> {
    /// The text exposition.
    pub fn render(self) -> String {
        let mut r = Registry::default();
        let t = self.tally;
        let l = t.labelled(&self.current.agents);
        gauge_family(
            &mut r,
            "macfleet_workers",
            "Workers the hub holds, by state",
            [
                (StateLabels { state: "healthy" }, t.healthy),
                (StateLabels { state: "stale" }, t.stale),
                (StateLabels { state: "lost" }, t.lost),
            ],
        );
        r.register(
            "macfleet_workers_no_route",
            "Healthy workers with no route (every rung unavailable: failed closed)",
            ConstGauge::new(t.no_route),
        );
        r.register(
            "macfleet_workers_one_failure_from_no_route",
            "Healthy workers on a rung with headroom 0: the next failure leaves them no route",
            ConstGauge::new(t.one_failure_from_no_route),
        );
        r.register(
            "macfleet_workers_behind_revision",
            "Healthy workers not on the revision the hub projects",
            ConstGauge::new(t.behind_revision),
        );
        gauge_family(
            &mut r,
            "macfleet_workers_by_agent",
            "Healthy workers by active agent (a name in the list, or other) and rung (0 is the top of the list they follow)",
            l.by_agent
                .into_iter()
                .map(|((agent, rung), n)| (AgentRungLabels { agent, rung }, n)),
        );
        gauge_family(
            &mut r,
            "macfleet_rung_workers_capable",
            "Healthy workers that report they can run the agent (binary, token, preflight ok)",
            l.capable
                .into_iter()
                .map(|(agent, n)| (AgentLabels { agent }, n)),
        );
        gauge_family(
            &mut r,
            "macfleet_rung_workers_held_off",
            "Healthy workers holding the agent off now (a failover from it within --held-off-window, not run since)",
            l.held_off
                .into_iter()
                .map(|(agent, n)| (AgentLabels { agent }, n)),
        );
        r.register(
            "macfleet_failovers",
            "Failovers committed to the log since the hub started, by cause kind, from and to (none: no route)",
            self.counters.failover_family(&self.current.agents),
        );
        r.register(
            "macfleet_recoveries",
            "Recoveries (a worker back on a higher rung of the same list revision) since the hub started",
            self.counters.recovery_family(&self.current.agents),
        );
        gauge_family(
            &mut r,
            "macfleet_config_info",
            "The revision every worker is told (always 1)",
            [(
                RevisionLabels {
                    revision: self.current.projected.clone(),
                },
                1,
            )],
        );
        r.register(
            "macfleet_order_built_in",
            "1 while every worker is given the built-in order (no accepted list)",
            ConstGauge::new(i64::from(self.current.order == OrderSource::BuiltIn)),
        );
        r.register(
            "macfleet_config_invalid",
            "1 while the document on disk does not validate (workers keep the last accepted list)",
            ConstGauge::new(i64::from(self.current.invalid.is_some())),
        );
        r.register(
            "macfleet_rollout_baking",
            "1 while a staged rollout of a new list bakes on its cohort",
            ConstGauge::new(i64::from(self.rollout_baking)),
        );
        r.register(
            "macfleet_rollout_halted",
            "1 while the last rollout stands halted by its guard (until the next write or rollout)",
            ConstGauge::new(i64::from(self.rollout_halted)),
        );
        r.register(
            "macfleet_hub_requests",
            "Requests answered, by route and status",
            self.counters.requests.clone(),
        );
        r.register(
            "macfleet_hub_heartbeats_refused",
            "Heartbeats refused, by error code",
            self.counters.refused.clone(),
        );
        r.register(
            "macfleet_hub_sse_subscribers",
            "Event streams open now",
            ConstGauge::new(self.sse_subscribers),
        );
        r.register(
            "macfleet_hub_db_errors",
            "Database operations that failed (a batch not committed, a read that failed)",
            ConstCounter::new(self.db_errors),
        );
        let mut out = String::new();
        if prometheus_client::encoding::prometheus_text::encode(&mut out, &r).is_err() {
            out.clear();
            let _ = writeln!(out, "# the metrics could not be encoded");
        }
        out
    }
}

impl Hub {
    /// `GET /metrics`' body: the fleet's tally (copied under the fleet
    /// lock: a few maps the size of the list), then the text.
    pub fn metrics_text(&self) -> String {
        let tally = match self.fleet.lock() {
            Ok(f) => f.tally().clone(),
            Err(_) => FleetTally::default(),
        };
        let current = self.current();
        Scrape {
            counters: &self.metrics,
            current: &current,
            tally,
            sse_subscribers: self.streams.open_total() as i64,
            db_errors: self.db.errors(),
            rollout_baking: self.rollouts.baking_id().is_some(),
            rollout_halted: self.rollouts.halted(),
        }
        .render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::fleet::Fleet;
    use crate::wire::{Capability, Cause, CauseKind, CauseSource, Failover, Heartbeat, Preflight};

    fn hb(
        i: usize,
        active: Option<&str>,
        failover: bool,
        at: chrono::DateTime<chrono::Utc>,
    ) -> Heartbeat {
        let agents = ["opencode", "pi", "claude", "zed"];
        let mut capabilities = std::collections::BTreeMap::new();
        for (k, a) in agents.iter().enumerate() {
            let ok = (i + k) % 3 != 0;
            capabilities.insert(
                a.to_string(),
                Capability {
                    binary: ok,
                    token: true,
                    preflight: if ok {
                        Preflight::Ok
                    } else {
                        Preflight::Unknown
                    },
                },
            );
        }
        Heartbeat {
            worker: format!("w-{i}"),
            host: "h".into(),
            sent_at: at,
            config_revision: Some(if i % 4 == 0 { "r0" } else { "r1" }.into()),
            agents: agents.iter().map(|a| a.to_string()).collect(),
            active_agent: active.map(String::from),
            capabilities,
            failovers: if failover {
                vec![Failover {
                    id: format!("f-{i}"),
                    at: at - chrono::Duration::seconds(30),
                    from: "opencode".into(),
                    to: Some("pi".into()),
                    cause: Cause {
                        kind: CauseKind::RateLimited,
                        status: Some(429),
                        source: CauseSource::HubRouter,
                        detail: None,
                    },
                }]
            } else {
                vec![]
            },
            turn: None,
            next_turn_agent: None,
        }
    }

    /// The tally as one pass over the fleet would count it.
    fn from_scratch(f: &Fleet) -> FleetTally {
        let mut t = FleetTally::default();
        for v in f.snapshot(None).workers {
            t.change(None, Some(&v));
        }
        t
    }

    #[test]
    fn the_kept_tally_equals_a_fresh_count_after_every_kind_of_change() {
        let t0 = chrono::Utc::now() - chrono::Duration::hours(3);
        // The monotonic clock, aligned with `t0`.
        let m0 = std::time::Instant::now();
        let mono = |at: chrono::DateTime<chrono::Utc>| m0 + (at - t0).to_std().unwrap_or_default();
        let pool: std::sync::Arc<str> = std::sync::Arc::from("p");
        let mut f = Fleet::new(1);
        let actives = [
            Some("opencode"),
            Some("pi"),
            None,
            Some("zed"),
            Some("claude"),
        ];
        for round in 0..4 {
            for i in 0..50 {
                let at = t0 + chrono::Duration::seconds(round * 20 + (i % 7) as i64);
                let active = actives[(i + round as usize) % actives.len()];
                let h = hb(i, active, (i + round as usize) % 5 == 0, at);
                f.record_at(&(&h).into(), at, mono(at), &pool, "r1");
            }
            assert_eq!(*f.tally(), from_scratch(&f), "after round {round}");
        }
        let at = t0 + chrono::Duration::seconds(95);
        f.sweep(mono(at), at, 10);
        assert_eq!(*f.tally(), from_scratch(&f), "after a sweep");
        assert!(f.tally().stale > 0 && f.tally().healthy > 0);
        f.resync("r0");
        assert_eq!(*f.tally(), from_scratch(&f), "after a resync");
        f.evict(
            mono(t0 + chrono::Duration::seconds(200)),
            std::time::Duration::from_secs(137),
        );
        assert_eq!(*f.tally(), from_scratch(&f), "after an eviction");
        assert!(
            !f.is_empty() && f.len() < 50,
            "some forgotten, some kept: {}",
            f.len()
        );
        // Labelled: zed is not in the list, so it is `other`.
        let list: Vec<String> = ["opencode", "pi", "claude"].map(String::from).to_vec();
        let l = f.tally().labelled(&list);
        assert!(
            l.by_agent
                .keys()
                .all(|(a, _)| list.contains(a) || a == "other")
        );
        assert!(l.capable.contains_key("other") && !l.capable.contains_key("zed"));
        // Everyone forgotten: nothing left counted, no name kept.
        f.evict(
            mono(t0 + chrono::Duration::days(2)),
            std::time::Duration::from_secs(1),
        );
        assert_eq!(*f.tally(), FleetTally::default());
    }
}
