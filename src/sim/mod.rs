//! A simulated fleet in one process: up to 100,000 workers, each
//! heartbeating at the hub's interval with jitter, each with its own
//! capabilities, moving down the list only on structured failures, and
//! following the list every heartbeat answer projects.

pub mod scenario;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use color_eyre::eyre::{Context, Result};
use rand::{Rng, SeedableRng};

use crate::client::{Client, ClientError};
use crate::wire::{
    Capability, Cause, CauseKind, CauseSource, Failover, Heartbeat, KNOWN_AGENTS, Preflight,
};
pub use scenario::Scenario;

/// How to run a simulated fleet.
#[derive(Debug, Clone)]
pub struct SimOptions {
    pub workers: usize,
    pub scenario: Scenario,
    pub duration: Option<Duration>,
    /// Heartbeats in flight at once.
    pub concurrency: usize,
    pub seed: u64,
    /// Worker id prefix.
    pub prefix: String,
}

impl SimOptions {
    pub fn new(workers: usize, scenario: Scenario) -> SimOptions {
        SimOptions {
            workers,
            scenario,
            duration: None,
            concurrency: 512,
            seed: 19,
            prefix: "w".into(),
        }
    }
}

/// Counters, readable while the fleet runs.
#[derive(Debug, Default)]
pub struct SimStats {
    pub sent: AtomicU64,
    pub ok: AtomicU64,
    pub failed: AtomicU64,
    pub failovers: AtomicU64,
}

impl SimStats {
    pub fn summary(&self) -> String {
        format!(
            "{} heartbeats sent, {} answered, {} failed, {} failovers reported",
            self.sent.load(Ordering::Relaxed),
            self.ok.load(Ordering::Relaxed),
            self.failed.load(Ordering::Relaxed),
            self.failovers.load(Ordering::Relaxed)
        )
    }
}

/// A deterministic uniform number in [0, 1) for (seed, worker, salt).
fn uniform(seed: u64, worker: usize, salt: &str) -> f64 {
    let mut x = seed ^ (worker as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for b in salt.bytes() {
        x = (x ^ u64::from(b)).wrapping_mul(0x100_0000_01B3);
    }
    // splitmix64 finaliser
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    (x >> 11) as f64 / (1u64 << 53) as f64
}

#[derive(Debug, Clone)]
struct Down {
    until: Instant,
    cause: Cause,
}

struct Worker {
    idx: usize,
    id: String,
    host: String,
    caps: HashMap<String, Capability>,
    agents: Vec<String>,
    revision: Option<String>,
    active: Option<String>,
    cooldowns: HashMap<String, Down>,
    pending: Vec<Failover>,
    counter: u64,
    rng: rand::rngs::StdRng,
}

struct Shared {
    scenario: Scenario,
    seed: u64,
    start: Instant,
}

impl Shared {
    fn cycle_t(&self, now: Instant) -> u64 {
        let t = now.duration_since(self.start).as_secs();
        if self.scenario.cycle_s > 0 {
            t % self.scenario.cycle_s
        } else {
            t
        }
    }
}

impl Worker {
    fn new(idx: usize, prefix: &str, shared: &Shared, agents: &[String]) -> Worker {
        let s = &shared.scenario;
        let mut w = Worker {
            idx,
            id: format!("{prefix}-{idx:05}"),
            host: format!("node-{:04}", idx / s.workers_per_host),
            caps: HashMap::new(),
            agents: agents.to_vec(),
            revision: None,
            active: None,
            cooldowns: HashMap::new(),
            pending: Vec::new(),
            counter: 0,
            rng: rand::rngs::StdRng::seed_from_u64(shared.seed ^ idx as u64),
        };
        for a in KNOWN_AGENTS
            .iter()
            .map(|a| a.to_string())
            .chain(agents.iter().cloned())
        {
            w.ensure_caps(&a, shared);
        }
        w.active = w.choose(shared, Instant::now()).0;
        w
    }

    /// Capabilities are a property of the host, drawn once per agent.
    fn ensure_caps(&mut self, agent: &str, shared: &Shared) {
        if self.caps.contains_key(agent) {
            return;
        }
        let h = &shared.scenario.hosts;
        let host_idx = self.idx / shared.scenario.workers_per_host;
        let draw = |m: &std::collections::BTreeMap<String, f64>, salt: &str| {
            m.get(agent)
                .is_some_and(|p| uniform(shared.seed, host_idx, &format!("{salt}/{agent}")) < *p)
        };
        let binary = !draw(&h.missing_binary, "bin");
        let token = !draw(&h.no_token, "tok");
        let preflight = if !binary || !token {
            Preflight::Unknown
        } else if draw(&h.preflight_failed, "pre") {
            Preflight::Failed
        } else {
            Preflight::Ok
        };
        self.caps.insert(
            agent.to_string(),
            Capability {
                binary,
                token,
                preflight,
            },
        );
    }

    /// Why `agent` is unavailable here now, if it is.
    fn unavailable(&self, agent: &str, shared: &Shared, now: Instant) -> Option<Cause> {
        let cause = |kind, source, status: Option<u16>, detail: Option<String>| Cause {
            kind,
            status,
            source,
            detail,
        };
        let cap = self.caps.get(agent)?;
        if !cap.binary {
            return Some(cause(
                CauseKind::MissingBinary,
                CauseSource::Worker,
                None,
                Some(format!("{agent} not found on PATH")),
            ));
        }
        if !cap.token {
            return Some(cause(
                CauseKind::NoToken,
                CauseSource::Worker,
                None,
                Some(format!("no credential configured for {agent}")),
            ));
        }
        if cap.preflight == Preflight::Failed {
            return Some(cause(
                CauseKind::PreflightFailed,
                CauseSource::Preflight,
                None,
                Some(format!("{agent} preflight exited 1")),
            ));
        }
        let t = shared.cycle_t(now);
        for (i, p) in shared.scenario.phases.iter().enumerate() {
            if p.hits(agent) && uniform(shared.seed, self.idx, &format!("phase{i}")) < p.reach(t) {
                return Some(cause(
                    p.kind,
                    CauseSource::HubRouter,
                    p.status,
                    p.detail.clone(),
                ));
            }
        }
        self.cooldowns
            .get(agent)
            .filter(|d| d.until > now)
            .map(|d| d.cause.clone())
    }

    fn choose(&self, shared: &Shared, now: Instant) -> (Option<String>, Option<Cause>) {
        let mut leaving = None;
        for a in &self.agents {
            match self.unavailable(a, shared, now) {
                None => return (Some(a.clone()), leaving),
                Some(c) => {
                    if self.active.as_deref() == Some(a.as_str()) {
                        leaving = Some(c);
                    }
                }
            }
        }
        (None, leaving)
    }

    /// One heartbeat's worth of weather and decisions.
    fn step(&mut self, shared: &Shared, now: Instant) {
        self.cooldowns.retain(|_, d| d.until > now);
        if let Some(active) = self.active.clone() {
            for b in &shared.scenario.background {
                if (b.agents.is_empty() || b.agents.contains(&active))
                    && self.rng.random::<f64>() < b.rate
                {
                    self.cooldowns.insert(
                        active.clone(),
                        Down {
                            until: now + Duration::from_secs(b.cooldown_s),
                            cause: Cause {
                                kind: b.kind,
                                status: b.status,
                                source: CauseSource::HubRouter,
                                detail: b.detail.clone(),
                            },
                        },
                    );
                    break;
                }
            }
        }
        let (next, leaving) = self.choose(shared, now);
        if next != self.active {
            if let (Some(from), Some(cause)) = (self.active.clone(), leaving) {
                self.counter += 1;
                self.pending.push(Failover {
                    id: format!("{}-{:06}", self.id, self.counter),
                    at: Utc::now(),
                    from,
                    to: next.clone(),
                    cause,
                });
            }
            self.active = next;
        }
    }

    fn heartbeat(&self) -> Heartbeat {
        let mut caps = std::collections::BTreeMap::new();
        for a in &self.agents {
            if let Some(c) = self.caps.get(a) {
                caps.insert(a.clone(), *c);
            }
        }
        Heartbeat {
            worker: self.id.clone(),
            host: self.host.clone(),
            sent_at: Utc::now(),
            config_revision: self.revision.clone(),
            agents: self.agents.clone(),
            active_agent: self.active.clone(),
            capabilities: caps,
            failovers: self.pending.clone(),
        }
    }
}

/// Run the fleet until `duration` passes or `stop` resolves.
pub async fn run(
    client: Client,
    opts: SimOptions,
    stats: Arc<SimStats>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<()> {
    let config = client
        .config()
        .await
        .wrap_err("the simulator could not read the hub's config")?;
    let agents = crate::agents_doc::locate(&config.text)
        .map(|l| l.agents)
        .unwrap_or_default();
    let shared = Arc::new(Shared {
        scenario: opts.scenario.clone(),
        seed: opts.seed,
        start: Instant::now(),
    });
    let interval = Arc::new(AtomicU64::new(10_000));
    let workers: Vec<Arc<Mutex<Worker>>> = (0..opts.workers)
        .map(|i| {
            let mut w = Worker::new(i, &opts.prefix, &shared, &agents);
            // A worker starts from the document it read, like a real one.
            w.revision = Some(config.revision.clone());
            Arc::new(Mutex::new(w))
        })
        .collect();
    // The first worker reports at once, and its answer tells the fleet the
    // hub's interval before the rest are scheduled.
    if let Some(w0) = workers.first() {
        let hb = match w0.lock() {
            Ok(mut w) => {
                w.step(&shared, Instant::now());
                Some(w.heartbeat())
            }
            Err(_) => None,
        };
        if let Some(hb) = hb {
            stats.sent.fetch_add(1, Ordering::Relaxed);
            match client.heartbeat(&hb).await {
                Ok(p) => {
                    stats.ok.fetch_add(1, Ordering::Relaxed);
                    interval.store(p.heartbeat_interval_s.max(1) * 1000, Ordering::Relaxed);
                }
                Err(e) => {
                    stats.failed.fetch_add(1, Ordering::Relaxed);
                    log_error(&e);
                }
            }
        }
    }
    let permits = Arc::new(tokio::sync::Semaphore::new(opts.concurrency.max(1)));
    // Each worker's next due time, spread over the first interval.
    let mut rng = rand::rngs::StdRng::seed_from_u64(opts.seed);
    // A small fleet shows up at once; a large one ramps up at ~5,000/s.
    let spread_ms = (opts.workers as u64 / 5).max(2_000);
    // Due times in a min-heap: a tick touches only the workers that are due.
    let mut due: std::collections::BinaryHeap<std::cmp::Reverse<(Instant, usize)>> = (0..opts
        .workers)
        .map(|i| {
            std::cmp::Reverse((
                shared.start + Duration::from_millis(rng.random_range(0..spread_ms)),
                i,
            ))
        })
        .collect();
    let deadline = opts.duration.map(|d| shared.start + d);
    // Short ticks: a tick can start at most `concurrency` heartbeats, so
    // the tick bounds throughput (512 per 10 ms is 51,200/s).
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            _ = tick.tick() => {}
        }
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            break;
        }
        let iv = interval.load(Ordering::Relaxed);
        while let Some(&std::cmp::Reverse((at, i))) = due.peek() {
            if at > now {
                break;
            }
            let Ok(permit) = permits.clone().try_acquire_owned() else {
                // Saturated: the rest are late; they go next tick.
                break;
            };
            due.pop();
            let jitter = rng.random_range(0.9..1.1);
            due.push(std::cmp::Reverse((
                now + Duration::from_millis((iv as f64 * jitter) as u64),
                i,
            )));
            let w = workers[i].clone();
            let client = client.clone();
            let shared = shared.clone();
            let stats = stats.clone();
            let interval = interval.clone();
            tokio::spawn(async move {
                let _permit = permit;
                let hb = match w.lock() {
                    Ok(mut w) => {
                        w.step(&shared, Instant::now());
                        w.heartbeat()
                    }
                    Err(_) => return,
                };
                let n_failovers = hb.failovers.len() as u64;
                stats.sent.fetch_add(1, Ordering::Relaxed);
                match client.heartbeat(&hb).await {
                    Ok(p) => {
                        stats.ok.fetch_add(1, Ordering::Relaxed);
                        stats.failovers.fetch_add(n_failovers, Ordering::Relaxed);
                        interval.store(p.heartbeat_interval_s.max(1) * 1000, Ordering::Relaxed);
                        if let Ok(mut w) = w.lock() {
                            let acked: std::collections::HashSet<&str> =
                                hb.failovers.iter().map(|f| f.id.as_str()).collect();
                            w.pending.retain(|f| !acked.contains(f.id.as_str()));
                            if w.agents != p.agents {
                                for a in &p.agents {
                                    w.ensure_caps(a, &shared);
                                }
                                w.agents = p.agents;
                            }
                            w.revision = Some(p.config_revision);
                        }
                    }
                    Err(e) => {
                        stats.failed.fetch_add(1, Ordering::Relaxed);
                        log_error(&e);
                    }
                }
            });
        }
    }
    Ok(())
}

fn log_error(e: &ClientError) {
    tracing::debug!(error = %e, "heartbeat failed");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(s: &str) -> Shared {
        Shared {
            scenario: Scenario::load(s).expect("scenario"),
            seed: 7,
            start: Instant::now(),
        }
    }

    #[test]
    fn uniform_is_uniformish() {
        let n = 10_000;
        let mean: f64 = (0..n).map(|i| uniform(3, i, "x")).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }

    #[test]
    fn worker_steps_down_on_structured_failure_and_fails_closed() {
        let sh = shared("aug19");
        let agents: Vec<String> = ["opencode", "claude"].map(String::from).to_vec();
        let mut w = Worker::new(1, "w", &sh, &agents);
        // Make both capable so only the phase matters.
        for a in &agents {
            w.caps.insert(
                a.clone(),
                Capability {
                    binary: true,
                    token: true,
                    preflight: Preflight::Ok,
                },
            );
        }
        w.active = Some("opencode".into());
        w.step(&sh, sh.start + Duration::from_secs(1));
        assert_eq!(w.active.as_deref(), Some("opencode"));
        assert!(w.pending.is_empty());
        // Inside the outage every rung is down: no route, loudly.
        w.step(&sh, sh.start + Duration::from_secs(40));
        assert_eq!(w.active, None);
        assert_eq!(w.pending.len(), 1);
        assert_eq!(w.pending[0].to, None);
        assert_eq!(w.pending[0].cause.kind, CauseKind::UpstreamStatus);
        // Recovery is not a failover.
        w.step(&sh, sh.start + Duration::from_secs(100));
        assert_eq!(w.active.as_deref(), Some("opencode"));
        assert_eq!(w.pending.len(), 1);
        w.heartbeat()
            .validate()
            .expect("a simulated heartbeat is valid");
    }
}
