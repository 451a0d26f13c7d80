//! `GET /metrics`: the fleet and the hub in the Prometheus text format
//! (0.0.4, `prometheus-client`), for alert rules (`assets/alerts.yml`).
//!
//! Labels are bounded: an agent label is a name in the list every worker
//! is told now, or `other` (and `none` for no route); a kind is a cause
//! kind; a route is one of the API's paths or `other`; never a worker id
//! or a host. Counters live for the hub's run; the fleet's gauges are
//! computed at each scrape in one pass over the fleet (the `Arc`s are taken
//! under the fleet lock, the pass runs outside it); `benches/metrics.rs`
//! measures it at 100,000 workers.

use std::collections::HashMap;
use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::registry::Registry;

use super::fleet::Stored;
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
    "/v1/failovers",
    "/v1/recoveries",
    "/v1/events",
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

/// The fleet's gauges from one pass over its views.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FleetTally {
    pub healthy: i64,
    pub stale: i64,
    pub lost: i64,
    pub no_route: i64,
    pub one_failure_from_no_route: i64,
    pub behind_revision: i64,
    /// Healthy workers by (agent label, rung in the list they follow).
    pub by_agent: HashMap<(String, usize), i64>,
    /// Healthy workers that report they can run each agent (labelled).
    pub capable: HashMap<String, i64>,
    /// Healthy workers that hold each agent off now (labelled).
    pub held_off: HashMap<String, i64>,
}

impl FleetTally {
    /// Tally `workers` against `list` (the projected list), with failovers
    /// after `cutoff` holding their rung off.
    pub fn of(workers: &[std::sync::Arc<Stored>], list: &[String], cutoff: DateTime<Utc>) -> Self {
        let mut t = FleetTally::default();
        for a in list {
            t.capable.insert(a.clone(), 0);
            t.held_off.insert(a.clone(), 0);
        }
        let mut by_agent: HashMap<(&str, usize), i64> = HashMap::new();
        let mut capable: HashMap<&str, i64> = HashMap::new();
        let mut held_off: HashMap<&str, i64> = HashMap::new();
        for w in workers {
            match w.state {
                WorkerState::Healthy => t.healthy += 1,
                WorkerState::Stale => t.stale += 1,
                WorkerState::Lost => t.lost += 1,
            }
            if w.state != WorkerState::Healthy {
                continue;
            }
            let p = &*w.profile;
            match p.active_agent.as_deref() {
                None => t.no_route += 1,
                Some(a) => {
                    let rung = p
                        .agents
                        .iter()
                        .position(|x| x == a)
                        .unwrap_or(p.agents.len());
                    *by_agent.entry((a, rung)).or_default() += 1;
                }
            }
            if w.one_failure_from_no_route() {
                t.one_failure_from_no_route += 1;
            }
            if !w.in_sync {
                t.behind_revision += 1;
            }
            for (a, c) in &p.capabilities {
                if c.capable() {
                    *capable.entry(a).or_default() += 1;
                }
            }
            for h in w.held.as_deref().unwrap_or_default() {
                if h.at > cutoff {
                    *held_off.entry(&h.agent).or_default() += 1;
                }
            }
        }
        for ((a, rung), n) in by_agent {
            let label = agent_label(Some(a), list);
            let rung = if label == "other" { usize::MAX } else { rung };
            *t.by_agent.entry((label, rung)).or_default() += n;
        }
        for (src, dst) in [(capable, &mut t.capable), (held_off, &mut t.held_off)] {
            for (a, n) in src {
                *dst.entry(agent_label(Some(a), list)).or_default() += n;
            }
        }
        t
    }
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
}

impl Scrape<'_> {
    /// The text exposition.
    pub fn render(self) -> String {
        let mut r = Registry::default();
        let t = self.tally;
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
            t.by_agent.into_iter().map(|((agent, rung), n)| {
                let rung = if rung == usize::MAX {
                    "other".into()
                } else {
                    rung.to_string()
                };
                (AgentRungLabels { agent, rung }, n)
            }),
        );
        gauge_family(
            &mut r,
            "macfleet_rung_workers_capable",
            "Healthy workers that report they can run the agent (binary, token, preflight ok)",
            t.capable
                .into_iter()
                .map(|(agent, n)| (AgentLabels { agent }, n)),
        );
        gauge_family(
            &mut r,
            "macfleet_rung_workers_held_off",
            "Healthy workers holding the agent off now (a failover from it within --held-off-window, not run since)",
            t.held_off
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
    /// `GET /metrics`' body: one pass over the fleet, then the text.
    pub fn metrics_text(&self) -> String {
        let workers = match self.fleet.lock() {
            Ok(f) => f.snapshot(None).workers,
            Err(_) => Vec::new(),
        };
        let current = self.current();
        let window =
            chrono::Duration::from_std(self.opts.held_off_window).unwrap_or(chrono::Duration::MAX);
        let cutoff = Utc::now()
            .checked_sub_signed(window)
            .unwrap_or(DateTime::<Utc>::MIN_UTC);
        let tally = FleetTally::of(&workers, &current.agents, cutoff);
        drop(workers);
        Scrape {
            counters: &self.metrics,
            current: &current,
            tally,
            sse_subscribers: self.streams.open_total() as i64,
            db_errors: self.db.errors(),
        }
        .render()
    }
}
