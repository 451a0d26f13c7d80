//! A simulated fleet in one process: up to 100,000 workers, each
//! heartbeating at the hub's interval with jitter, each with its own
//! capabilities, walking down the list as a real worker does (one failover
//! per rung it leaves, the last with `to: null` when no rung is left), and
//! following the list every heartbeat answer projects.

pub mod scenario;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use color_eyre::eyre::{Context, Result};
use rand::{Rng, SeedableRng};

use crate::client::{Client, ClientError};
use crate::wire::{
    Capability, Cause, CauseKind, CauseSource, Failover, Heartbeat, KNOWN_AGENTS,
    MAX_FAILOVERS_PER_HEARTBEAT, Preflight,
};
pub use scenario::{Scenario, Turns};

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
    /// Where on the scenario's timeline the live fleet starts.
    pub start: Start,
    /// Post the scenario's past before the live fleet starts.
    pub backfill: Option<Backfill>,
    /// The workers' turns (the scenario's by default); `None`: no turns,
    /// a new list is taken at the next heartbeat.
    pub turns: Option<Turns>,
}

/// Where on the scenario's timeline the live fleet starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// This many seconds in.
    At(u64),
    /// Just as the first timed phase takes a worker off its rung, so the
    /// first live failover comes with the first heartbeats (see
    /// [`Scenario`]'s phases; 0 for a scenario without any).
    FirstEvent,
}

/// The scenario's past, replayed and posted through the API (each worker's
/// failovers, with their past times) before the live fleet starts.
#[derive(Debug, Clone, Copy)]
pub struct Backfill {
    /// How far back (the live start's past hour, say).
    pub span: Duration,
    /// A worker's step in the replay (the hub's heartbeat interval).
    pub step: Duration,
}

impl SimOptions {
    pub fn new(workers: usize, scenario: Scenario) -> SimOptions {
        SimOptions {
            workers,
            duration: None,
            concurrency: 512,
            seed: 19,
            prefix: "w".into(),
            start: Start::At(0),
            backfill: None,
            turns: scenario.turns,
            scenario,
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

/// Failovers a worker keeps while the hub does not acknowledge them; past
/// this the oldest are dropped.
const MAX_PENDING: usize = 16 * MAX_FAILOVERS_PER_HEARTBEAT;

/// Scenario time: milliseconds on the scenario's timeline (negative in a
/// backfill before a timeline that does not repeat).
type Ms = i64;

#[derive(Debug, Clone)]
struct Down {
    until: Ms,
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
    /// The rungs above `active` (every rung when there is no route). The
    /// worker left each of them with a recorded failover and has not
    /// stood on it since, so it does not record leaving it again.
    left: Vec<String>,
    cooldowns: HashMap<String, Down>,
    pending: Vec<Failover>,
    counter: u64,
    rng: rand::rngs::StdRng,
    /// This worker's draw for each of the scenario's phases.
    phase_u: Vec<f64>,
    /// The turn it is in (with turns).
    turn: Option<TurnNow>,
    /// Turns begun so far: each one's length is drawn by its number.
    turns_begun: u64,
    /// Between turns until then.
    idle_until: Ms,
    /// A newer list an answer told it while it was in a turn that the list
    /// moves it off: taken at the turn's end (revision, agents).
    told: Option<(String, Vec<String>)>,
    /// The agent it runs at its next turn, as of its last step.
    next_turn: Option<String>,
    /// The scenario time of its last step.
    last_t: Ms,
    /// It works in turns and says so in its heartbeats.
    turns_on: bool,
}

/// A turn in progress, in scenario time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TurnNow {
    agent: String,
    /// Its start on the wall clock (as sent).
    since: DateTime<Utc>,
    ends: Ms,
}

/// The scenario and the clocks: scenario time `t0` is `wall` and `start`.
#[derive(Clone)]
struct Shared {
    scenario: Scenario,
    turns: Option<Turns>,
    seed: u64,
    start: Instant,
    wall: DateTime<Utc>,
    t0: Ms,
}

impl Shared {
    fn new(scenario: Scenario, seed: u64, t0: Ms) -> Shared {
        Shared {
            turns: scenario.turns,
            scenario,
            seed,
            start: Instant::now(),
            wall: Utc::now(),
            t0,
        }
    }

    /// The scenario time at `now`.
    fn at(&self, now: Instant) -> Ms {
        self.t0 + now.duration_since(self.start).as_millis() as Ms
    }

    /// The wall clock at scenario time `t` (never ahead of the real one).
    fn wall_at(&self, t: Ms) -> DateTime<Utc> {
        (self.wall + chrono::Duration::milliseconds(t - self.t0)).min(Utc::now())
    }

    /// Seconds into the cycle at `t`; `None` before a timeline that does
    /// not repeat has begun.
    fn cycle_t(&self, t: Ms) -> Option<u64> {
        let s = t.div_euclid(1000);
        if self.scenario.cycle_s > 0 {
            Some(s.rem_euclid(self.scenario.cycle_s as i64) as u64)
        } else {
            u64::try_from(s).ok()
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
            left: Vec::new(),
            cooldowns: HashMap::new(),
            pending: Vec::new(),
            counter: 0,
            rng: rand::rngs::StdRng::seed_from_u64(shared.seed ^ idx as u64),
            phase_u: (0..s.phases.len())
                .map(|i| uniform(shared.seed, idx, &format!("phase{i}")))
                .collect(),
            turn: None,
            turns_begun: 0,
            idle_until: Ms::MIN,
            told: None,
            next_turn: None,
            last_t: 0,
            turns_on: shared.turns.is_some(),
        };
        for a in KNOWN_AGENTS
            .iter()
            .map(|a| a.to_string())
            .chain(agents.iter().cloned())
        {
            w.ensure_caps(&a, shared);
        }
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

    /// Why `agent` is unavailable here at `t`, if it is.
    fn unavailable(&self, agent: &str, shared: &Shared, t: Ms) -> Option<Cause> {
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
        if let Some(ct) = shared.cycle_t(t) {
            for (p, u) in shared.scenario.phases.iter().zip(&self.phase_u) {
                if p.hits(agent) && *u < p.reach(ct) {
                    return Some(cause(
                        p.kind,
                        CauseSource::HubRouter,
                        p.status,
                        p.detail.clone(),
                    ));
                }
            }
        }
        self.cooldowns
            .get(agent)
            .filter(|d| d.until > t)
            .map(|d| d.cause.clone())
    }

    /// The scenario time (seconds into the cycle) at which a phase first
    /// takes this worker off the first rung it can run, if one does.
    fn first_phase_hit(&self, shared: &Shared) -> Option<u64> {
        let rung = self
            .agents
            .iter()
            .find(|a| self.caps.get(*a).is_some_and(|c| c.capable()))?;
        shared
            .scenario
            .phases
            .iter()
            .zip(&self.phase_u)
            .filter(|(p, u)| p.hits(rung) && **u < p.fraction)
            .filter_map(|(p, u)| {
                // reach(t) = fraction · (t − at) / spread passes u just after
                // at + spread · u / fraction.
                let t = if p.spread_s == 0 {
                    p.at_s
                } else {
                    p.at_s + (p.spread_s as f64 * u / p.fraction).floor() as u64 + 1
                };
                (t < p.until_s).then_some(t)
            })
            .min()
    }

    /// One heartbeat's worth of weather and decisions at scenario time `t`.
    ///
    /// The worker walks the list from the top as a real one does: it stands
    /// on the first rung it can run, and records one failover for each rung
    /// it leaves on the way down (`from` that rung, `to` the next one it
    /// tries, `null` when none is left). A rung it left earlier and has not
    /// stood on since is passed over without a new record; coming back up
    /// is not a failover.
    ///
    /// With turns, the rung it stands on is chosen only at a turn's
    /// boundary (the list an answer told it during the turn taken then);
    /// inside a turn it keeps its agent, unless a structured failure takes
    /// it: then it moves down at once, as without turns, and the turn goes
    /// on on the rung it moved to (no rung left ends the turn).
    fn step(&mut self, shared: &Shared, t: Ms) {
        self.last_t = t;
        self.background(shared, t);
        let Some(turns) = shared.turns else {
            self.walk(shared, t, 0);
            return;
        };
        if self.turn.as_ref().is_some_and(|tr| t >= tr.ends) {
            self.turn = None;
            let u = uniform(shared.seed, self.idx, &format!("idle{}", self.turns_begun));
            self.idle_until = t + (u * (turns.idle_s * 1000) as f64) as Ms;
        }
        if let Some(agent) = self.turn.as_ref().map(|tr| tr.agent.clone()) {
            if self.unavailable(&agent, shared, t).is_some() {
                let from = self.agents.iter().position(|a| *a == agent).unwrap_or(0);
                self.walk(shared, t, from);
                match (&self.active, &mut self.turn) {
                    (Some(a), Some(tr)) => tr.agent = a.clone(),
                    _ => self.turn = None,
                }
            }
        } else {
            if let Some((revision, agents)) = self.told.take() {
                for a in &agents {
                    self.ensure_caps(a, shared);
                }
                self.agents = agents;
                self.revision = Some(revision);
            }
            self.walk(shared, t, 0);
            if let (Some(a), true) = (&self.active, t >= self.idle_until) {
                let u = uniform(shared.seed, self.idx, &format!("turn{}", self.turns_begun));
                let span = (turns.max_s - turns.min_s) * 1000;
                self.turn = Some(TurnNow {
                    agent: a.clone(),
                    since: shared.wall_at(t),
                    ends: t + (turns.min_s * 1000) as Ms + (u * span as f64) as Ms,
                });
                self.turns_begun += 1;
            }
        }
        let list = self.told.as_ref().map_or(&self.agents, |(_, a)| a);
        self.next_turn = self.first_available(list, shared, t);
    }

    /// The first rung of `list` it can run at `t`.
    fn first_available(&self, list: &[String], shared: &Shared, t: Ms) -> Option<String> {
        list.iter()
            .find(|a| self.unavailable(a, shared, t).is_none())
            .cloned()
    }

    /// Now and then the active route fails on its own (the scenario's
    /// background failures): it is down for a cooldown.
    fn background(&mut self, shared: &Shared, t: Ms) {
        self.cooldowns.retain(|_, d| d.until > t);
        if let Some(active) = self.active.clone() {
            for b in &shared.scenario.background {
                if (b.agents.is_empty() || b.agents.contains(&active))
                    && self.rng.random::<f64>() < b.rate
                {
                    self.cooldowns.insert(
                        active.clone(),
                        Down {
                            until: t + (b.cooldown_s as Ms) * 1000,
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
    }

    /// Stand on the first rung from `from` on it can run, recording a
    /// failover for each rung it leaves on the way (see [`Worker::step`]).
    fn walk(&mut self, shared: &Shared, t: Ms, from: usize) {
        let mut leaving: Vec<(usize, Cause)> = Vec::new();
        let mut next = None;
        for (i, a) in self.agents.iter().enumerate().skip(from) {
            match self.unavailable(a, shared, t) {
                None => {
                    next = Some(i);
                    break;
                }
                Some(c) if !self.left.contains(a) => leaving.push((i, c)),
                Some(_) => {}
            }
        }
        let at = shared.wall_at(t);
        for k in 0..leaving.len() {
            let to = leaving.get(k + 1).map(|(j, _)| *j).or(next);
            let (from, cause) = &leaving[k];
            self.counter += 1;
            self.pending.push(Failover {
                id: format!("{}-{:06}", self.id, self.counter),
                at,
                from: self.agents[*from].clone(),
                to: to.map(|j| self.agents[j].clone()),
                cause: cause.clone(),
            });
        }
        if self.pending.len() > MAX_PENDING {
            let over = self.pending.len() - MAX_PENDING;
            self.pending.drain(..over);
        }
        let end = next.unwrap_or(self.agents.len());
        if from == 0 {
            let above = &self.agents[..end];
            if self.left[..] != *above {
                self.left = above.to_vec();
            }
        } else {
            // Rungs above `from` it did not try: kept as they were.
            let (above, tried) = (&self.agents[..from], &self.agents[from..end]);
            self.left.retain(|a| above.contains(a));
            self.left.extend(tried.iter().cloned());
        }
        if self.active.as_deref() != next.map(|i| self.agents[i].as_str()) {
            self.active = next.map(|i| self.agents[i].clone());
        }
    }

    /// A heartbeat carrying the oldest pending failovers (at most a
    /// heartbeat's worth).
    fn heartbeat(&self) -> Heartbeat {
        let n = self.pending.len().min(MAX_FAILOVERS_PER_HEARTBEAT);
        self.heartbeat_with(self.pending[..n].to_vec())
    }

    fn heartbeat_with(&self, failovers: Vec<Failover>) -> Heartbeat {
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
            failovers,
            turn: self.turns_said(),
            next_turn_agent: self.turn.as_ref().and(self.next_turn.clone()),
        }
    }

    /// What it says of its turn: `None` without turns (it is a worker
    /// that does not report them).
    fn turns_said(&self) -> Option<Option<crate::wire::Turn>> {
        self.turns_on.then(|| {
            self.turn.as_ref().map(|tr| crate::wire::Turn {
                agent: tr.agent.clone(),
                since: tr.since,
            })
        })
    }

    /// Take in a heartbeat's answer: drop what it acknowledged, follow the
    /// list it projects.
    fn answered(&mut self, sent: &[Failover], p: crate::wire::Projection, shared: &Shared) {
        let acked: std::collections::HashSet<&str> = sent.iter().map(|f| f.id.as_str()).collect();
        self.pending.retain(|f| !acked.contains(f.id.as_str()));
        for a in &p.agents {
            self.ensure_caps(a, shared);
        }
        // In a turn a new list waits for the turn's end, unless it keeps
        // the worker on the turn's agent: then it is taken at once.
        let waits = self.agents != p.agents
            && self.turn.as_ref().is_some_and(|tr| {
                self.first_available(&p.agents, shared, self.last_t)
                    .as_deref()
                    != Some(tr.agent.as_str())
            });
        if waits {
            self.told = Some((p.config_revision, p.agents));
            return;
        }
        self.told = None;
        if self.agents != p.agents {
            self.agents = p.agents;
        }
        self.revision = Some(p.config_revision);
    }
}

/// A simulated fleet, built against a hub and ready to run.
pub struct Sim {
    client: Client,
    opts: SimOptions,
    stats: Arc<SimStats>,
    shared: Shared,
    workers: Vec<Arc<Mutex<Worker>>>,
    interval: Arc<AtomicU64>,
}

/// Build the fleet and run it until `duration` passes or `stop` resolves.
pub async fn run(
    client: Client,
    opts: SimOptions,
    stats: Arc<SimStats>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<()> {
    Sim::prepare(client, opts, stats).await?.run(stop).await
}

impl Sim {
    /// Read the hub's list, build the workers, and either post the
    /// scenario's past ([`SimOptions::backfill`]) or send the first
    /// worker's heartbeat, whose answer tells the fleet the hub's interval.
    /// When this returns, what it posted is in the hub's log.
    pub async fn prepare(client: Client, opts: SimOptions, stats: Arc<SimStats>) -> Result<Sim> {
        let config = client
            .config()
            .await
            .wrap_err("the simulator could not read the hub's config")?;
        let agents = crate::agents_doc::locate(&config.text)
            .map(|l| l.agents)
            .unwrap_or_default();
        let mut shared = Shared::new(opts.scenario.clone(), opts.seed, 0);
        shared.turns = opts.turns;
        let mut workers: Vec<Worker> = (0..opts.workers)
            .map(|i| {
                let mut w = Worker::new(i, &opts.prefix, &shared, &agents);
                // A worker starts from the document it read, like a real one.
                w.revision = Some(config.revision.clone());
                w
            })
            .collect();
        let start_s = match opts.start {
            Start::At(s) => s,
            Start::FirstEvent => workers
                .iter()
                .filter_map(|w| w.first_phase_hit(&shared))
                .min()
                .unwrap_or(0),
        };
        shared.t0 = (start_s as Ms) * 1000;
        let interval = Arc::new(AtomicU64::new(10_000));
        if let Some(b) = opts.backfill {
            backfill(&client, &mut workers, &shared, b, &stats, &interval).await;
        }
        // The live clock starts now, at the scenario time chosen above:
        // everything posted so far is dated before this.
        shared.start = Instant::now();
        shared.wall = Utc::now();
        let workers: Vec<Arc<Mutex<Worker>>> = workers
            .into_iter()
            .map(|w| Arc::new(Mutex::new(w)))
            .collect();
        let sim = Sim {
            client,
            opts,
            stats,
            shared,
            workers,
            interval,
        };
        if sim.opts.backfill.is_none() {
            if let Some(w0) = sim.workers.first() {
                // The first worker reports at once, and its answer tells
                // the fleet the hub's interval before the rest are
                // scheduled.
                send(&sim.client, w0, &sim.shared, &sim.stats, &sim.interval).await;
            }
        }
        Ok(sim)
    }

    /// The scenario time (seconds) at which the live fleet starts.
    pub fn start_s(&self) -> u64 {
        u64::try_from(self.shared.t0 / 1000).unwrap_or(0)
    }

    /// When the live fleet started: every failover dated before this was
    /// posted by the backfill, every later one is live.
    pub fn live_since(&self) -> DateTime<Utc> {
        self.shared.wall
    }

    /// Run the fleet until `duration` passes or `stop` resolves.
    pub async fn run(self, stop: impl std::future::Future<Output = ()>) -> Result<()> {
        let Sim {
            client,
            opts,
            stats,
            shared,
            workers,
            interval,
        } = self;
        let shared = Arc::new(shared);
        let permits = Arc::new(tokio::sync::Semaphore::new(opts.concurrency.max(1)));
        let mut rng = rand::rngs::StdRng::seed_from_u64(opts.seed);
        let told = interval.load(Ordering::Relaxed);
        let mut due = first_due(opts.workers, told, shared.start, &mut rng);
        // Each worker heartbeats again after the interval its own last
        // answer told it (pacing: a hub tells a large fleet a longer one),
        // ±10%; the sending task hands its next due time back here.
        let (again_tx, mut again) = tokio::sync::mpsc::unbounded_channel::<(Instant, usize)>();
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
            while let Ok(next) = again.try_recv() {
                due.push(std::cmp::Reverse(next));
            }
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
                let again_tx = again_tx.clone();
                let w = workers[i].clone();
                let client = client.clone();
                let shared = shared.clone();
                let stats = stats.clone();
                let interval = interval.clone();
                tokio::spawn(async move {
                    let _permit = permit;
                    // Told by its answer, or (no answer) the last told.
                    let told_ms = send(&client, &w, &shared, &stats, &interval)
                        .await
                        .unwrap_or_else(|| interval.load(Ordering::Relaxed));
                    let wait = Duration::from_millis((told_ms as f64 * jitter) as u64);
                    let _ = again_tx.send((Instant::now() + wait, i));
                });
            }
        }
        Ok(())
    }
}

/// Each worker's first due time, spread over the first interval the hub
/// told (a small fleet within 2 s), and never faster than ~5,000 new
/// workers a second: a large fleet ramps up. In a min-heap, so a tick
/// touches only the workers that are due.
fn first_due(
    workers: usize,
    told_ms: u64,
    start: Instant,
    rng: &mut rand::rngs::StdRng,
) -> std::collections::BinaryHeap<std::cmp::Reverse<(Instant, usize)>> {
    let spread_ms = (workers as u64 / 5).max(2_000).max(told_ms);
    (0..workers)
        .map(|i| {
            let mut first = rng.random_range(0..spread_ms);
            if i == 0 {
                // The first worker heartbeat already (`prepare`): again
                // within the interval it was told.
                first = first.min(told_ms);
            }
            std::cmp::Reverse((start + Duration::from_millis(first), i))
        })
        .collect()
}

/// One live heartbeat of one worker: step, send, take in the answer.
/// Returns the interval the answer told, in milliseconds.
async fn send(
    client: &Client,
    w: &Mutex<Worker>,
    shared: &Shared,
    stats: &SimStats,
    interval: &AtomicU64,
) -> Option<u64> {
    let hb = match w.lock() {
        Ok(mut w) => {
            w.step(shared, shared.at(Instant::now()));
            w.heartbeat()
        }
        Err(_) => return None,
    };
    let n_failovers = hb.failovers.len() as u64;
    stats.sent.fetch_add(1, Ordering::Relaxed);
    match client.heartbeat(&hb).await {
        Ok(p) => {
            stats.ok.fetch_add(1, Ordering::Relaxed);
            stats.failovers.fetch_add(n_failovers, Ordering::Relaxed);
            let told = p.heartbeat_interval_s.max(1) * 1000;
            interval.store(told, Ordering::Relaxed);
            if let Ok(mut w) = w.lock() {
                w.answered(&hb.failovers, p, shared);
            }
            Some(told)
        }
        Err(e) => {
            stats.failed.fetch_add(1, Ordering::Relaxed);
            log_error(&e);
            None
        }
    }
}

/// Replay the scenario over `b.span` before the live start, then post each
/// worker's failovers from it with their past times. They go in time
/// slices, each slice acknowledged before the next is sent, so the hub's
/// log (ordered by arrival) reads roughly in time order. A failover the
/// hub did not take stays pending and goes with the worker's next live
/// heartbeat.
async fn backfill(
    client: &Client,
    workers: &mut [Worker],
    shared: &Shared,
    b: Backfill,
    stats: &SimStats,
    interval: &AtomicU64,
) {
    const SLICES: i64 = 20;
    // A bounded replay: at most ~2 million worker steps, at most ~20,000
    // failovers posted, whatever the fleet's size.
    let n = workers.len().max(1);
    let span = b.span.as_millis() as Ms;
    let steps = (2_000_000 / n)
        .min((span / b.step.as_millis().max(1) as Ms) as usize)
        .max(1);
    let step = (span / steps as Ms).max(1);
    let keep = (20_000 / n).clamp(4, MAX_FAILOVERS_PER_HEARTBEAT);
    let from = shared.t0 - span;
    replay(workers, shared, from, step, keep);
    let slice = (span / SLICES).max(1);
    for k in 1..=SLICES {
        let end = shared.wall_at(from + k * slice);
        let last = k == SLICES;
        let batch: Vec<(usize, Heartbeat)> = workers
            .iter_mut()
            .enumerate()
            .filter_map(|(i, w)| {
                let n = w
                    .pending
                    .iter()
                    .take_while(|f| last || f.at < end)
                    .count()
                    .min(MAX_FAILOVERS_PER_HEARTBEAT);
                // The last slice has every worker report, so the whole
                // fleet is on the hub before the live one starts.
                (n > 0 || last).then(|| (i, w.heartbeat_with(w.pending[..n].to_vec())))
            })
            .collect();
        post_slice(client, workers, shared, batch, stats, interval).await;
    }
}

/// Each worker's steps from `from` to the live start, about `step` apart,
/// keeping at most its `keep` newest failovers pending.
fn replay(workers: &mut [Worker], shared: &Shared, from: Ms, step: Ms, keep: usize) {
    let mut rng = rand::rngs::StdRng::seed_from_u64(shared.seed ^ 0xBAC4_F111);
    for w in workers.iter_mut() {
        let mut t = from + rng.random_range(0..step);
        while t < shared.t0 {
            w.step(shared, t);
            t += (step as f64 * rng.random_range(0.9..1.1)) as Ms;
        }
        let over = w.pending.len().saturating_sub(keep);
        w.pending.drain(..over);
    }
}

/// One slice of the backfill, sent 64 at a time, its answers taken in.
async fn post_slice(
    client: &Client,
    workers: &mut [Worker],
    shared: &Shared,
    batch: Vec<(usize, Heartbeat)>,
    stats: &SimStats,
    interval: &AtomicU64,
) {
    use futures::StreamExt;
    type Answer = (
        usize,
        Heartbeat,
        Result<crate::wire::Projection, ClientError>,
    );
    let answers: Vec<Answer> = futures::stream::iter(batch)
        .map(|(i, hb)| async move {
            let r = client.heartbeat(&hb).await;
            (i, hb, r)
        })
        .buffer_unordered(64)
        .collect()
        .await;
    for (i, hb, r) in answers {
        stats.sent.fetch_add(1, Ordering::Relaxed);
        match r {
            Ok(p) => {
                stats.ok.fetch_add(1, Ordering::Relaxed);
                stats
                    .failovers
                    .fetch_add(hb.failovers.len() as u64, Ordering::Relaxed);
                interval.store(p.heartbeat_interval_s.max(1) * 1000, Ordering::Relaxed);
                workers[i].answered(&hb.failovers, p, shared);
            }
            Err(e) => {
                stats.failed.fetch_add(1, Ordering::Relaxed);
                log_error(&e);
            }
        }
    }
}

fn log_error(e: &ClientError) {
    tracing::debug!(error = %e, "heartbeat failed");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(s: &str) -> Shared {
        Shared::new(Scenario::load(s).expect("scenario"), 7, 0)
    }

    fn all_capable(w: &mut Worker) {
        for a in w.agents.clone() {
            w.caps.insert(
                a,
                Capability {
                    binary: true,
                    token: true,
                    preflight: Preflight::Ok,
                },
            );
        }
    }

    fn walk(w: &Worker) -> Vec<(String, Option<String>, CauseKind)> {
        w.pending
            .iter()
            .map(|f| (f.from.clone(), f.to.clone(), f.cause.kind))
            .collect()
    }

    fn s(a: &str) -> String {
        a.to_string()
    }

    #[test]
    fn uniform_is_uniformish() {
        let n = 10_000;
        let mean: f64 = (0..n).map(|i| uniform(3, i, "x")).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
    }

    #[test]
    fn worker_walks_every_rung_down_and_fails_closed() {
        let sh = shared("aug19");
        let agents: Vec<String> = ["opencode", "pi", "claude"].map(String::from).to_vec();
        let mut w = Worker::new(1, "w", &sh, &agents);
        all_capable(&mut w);
        w.step(&sh, 1_000);
        assert_eq!(w.active.as_deref(), Some("opencode"));
        assert!(w.pending.is_empty());
        // Inside the outage every rung is down: one failover per rung, each
        // to the next one tried, the last to nothing. No route, loudly.
        w.step(&sh, 40_000);
        assert_eq!(w.active, None);
        let kind = CauseKind::UpstreamStatus;
        assert_eq!(
            walk(&w),
            [
                (s("opencode"), Some(s("pi")), kind),
                (s("pi"), Some(s("claude")), kind),
                (s("claude"), None, kind),
            ]
        );
        // Still down: nothing new is recorded.
        w.step(&sh, 45_000);
        assert_eq!(w.pending.len(), 3);
        // Recovery is not a failover.
        w.step(&sh, 100_000);
        assert_eq!(w.active.as_deref(), Some("opencode"));
        assert_eq!(w.pending.len(), 3);
        w.heartbeat()
            .validate()
            .expect("a simulated heartbeat is valid");
        // The next cycle's outage is recorded again, rung by rung.
        w.step(&sh, 241_000 + 30_000);
        assert_eq!(w.pending.len(), 6);
        assert_eq!(w.pending[5].to, None);
    }

    #[test]
    fn a_rung_that_cannot_run_is_left_with_its_cause_and_passed_over_after() {
        let sh = shared("aug19");
        let agents: Vec<String> = ["opencode", "pi", "claude"].map(String::from).to_vec();
        let mut w = Worker::new(1, "w", &sh, &agents);
        all_capable(&mut w);
        w.caps.insert(
            s("opencode"),
            Capability {
                binary: false,
                token: true,
                preflight: Preflight::Unknown,
            },
        );
        // Starting up, the worker tries rank 0 and finds no binary.
        w.step(&sh, 1_000);
        assert_eq!(w.active.as_deref(), Some("pi"));
        assert_eq!(
            walk(&w),
            [(s("opencode"), Some(s("pi")), CauseKind::MissingBinary)]
        );
        // In the outage it leaves pi and claude; opencode, already left and
        // still off, is not recorded again.
        w.step(&sh, 40_000);
        assert_eq!(w.active, None);
        assert_eq!(
            walk(&w)[1..],
            [
                (s("pi"), Some(s("claude")), CauseKind::UpstreamStatus),
                (s("claude"), None, CauseKind::UpstreamStatus),
            ]
        );
        // A worker on pi whose pi fails goes on to claude: one record.
        w.step(&sh, 100_000);
        assert_eq!(w.active.as_deref(), Some("pi"));
        w.cooldowns.insert(
            s("pi"),
            Down {
                until: 200_000,
                cause: Cause {
                    kind: CauseKind::RateLimited,
                    status: Some(429),
                    source: CauseSource::HubRouter,
                    detail: None,
                },
            },
        );
        w.step(&sh, 101_000);
        assert_eq!(w.active.as_deref(), Some("claude"));
        assert_eq!(
            walk(&w)[3..],
            [(s("pi"), Some(s("claude")), CauseKind::RateLimited)]
        );
    }

    #[test]
    fn the_first_event_is_where_a_phase_first_reaches_a_worker() {
        for name in ["aug19", "quota-cap", "steady"] {
            let sh = shared(name);
            let agents: Vec<String> = KNOWN_AGENTS.map(String::from).to_vec();
            let workers: Vec<Worker> = (0..40).map(|i| Worker::new(i, "w", &sh, &agents)).collect();
            let t = workers
                .iter()
                .filter_map(|w| w.first_phase_hit(&sh))
                .min()
                .expect("every built-in scenario has a phase that reaches someone");
            // At that second some worker cannot run its first capable
            // rung any more; a second earlier none was off it.
            let off = |at: Ms| {
                workers.iter().any(|w| {
                    let rung = w
                        .agents
                        .iter()
                        .find(|a| w.caps.get(*a).is_some_and(|c| c.capable()));
                    rung.is_some_and(|r| w.unavailable(r, &sh, at).is_some())
                })
            };
            assert!(
                off(t as Ms * 1000),
                "{name}: a phase reaches a worker at {t}s"
            );
            assert!(!off((t as Ms - 1) * 1000), "{name}: and not before");
        }
    }

    fn turning(min_s: u64, max_s: u64) -> Shared {
        let text =
            format!("name = \"t\"\ncycle_s = 0\n[turns]\nmin_s = {min_s}\nmax_s = {max_s}\n");
        Shared::new(Scenario::parse("t", &text).expect("scenario"), 7, 0)
    }

    fn told(rev: &str, agents: &[&str]) -> crate::wire::Projection {
        crate::wire::Projection {
            config_revision: rev.into(),
            agents: agents.iter().map(|a| s(a)).collect(),
            heartbeat_interval_s: 1,
        }
    }

    fn rate_limited(w: &mut Worker, agent: &str, until: Ms) {
        w.cooldowns.insert(
            s(agent),
            Down {
                until,
                cause: Cause {
                    kind: CauseKind::RateLimited,
                    status: Some(429),
                    source: CauseSource::HubRouter,
                    detail: None,
                },
            },
        );
    }

    #[test]
    fn a_new_list_takes_effect_at_the_turn_boundary() {
        let sh = turning(10, 10);
        let agents: Vec<String> = ["opencode", "pi", "claude"].map(String::from).to_vec();
        let mut w = Worker::new(1, "w", &sh, &agents);
        all_capable(&mut w);
        w.revision = Some(s("r1"));
        w.step(&sh, 1_000);
        let hb = w.heartbeat();
        let turn = hb.turn.clone().flatten().expect("in a turn");
        assert_eq!(turn.agent, "opencode");
        assert_eq!(hb.next_turn_agent.as_deref(), Some("opencode"));
        hb.validate().expect("valid");
        // Mid-turn the owner puts claude first: the worker keeps opencode
        // and the revision it runs by, and says where it goes next.
        w.answered(&[], told("r2", &["claude", "opencode", "pi"]), &sh);
        for t in [2_000, 6_000, 10_999] {
            w.step(&sh, t);
            let hb = w.heartbeat();
            assert_eq!(hb.active_agent.as_deref(), Some("opencode"), "at {t}");
            assert_eq!(hb.config_revision.as_deref(), Some("r1"));
            assert_eq!(hb.turn.clone().flatten(), Some(turn.clone()));
            assert_eq!(hb.next_turn_agent.as_deref(), Some("claude"));
            hb.validate().expect("valid");
            // Each answer repeats the list: it still waits.
            w.answered(&[], told("r2", &["claude", "opencode", "pi"]), &sh);
        }
        // The turn ends: the list takes effect, a new turn begins on claude.
        w.step(&sh, 11_000);
        let hb = w.heartbeat();
        assert_eq!(hb.active_agent.as_deref(), Some("claude"));
        assert_eq!(hb.config_revision.as_deref(), Some("r2"));
        assert_eq!(hb.agents, ["claude", "opencode", "pi"]);
        let next = hb.turn.clone().flatten().expect("a new turn");
        assert_eq!(next.agent, "claude");
        assert!(next.since > turn.since);
        assert!(w.pending.is_empty(), "switching is no failover");
        // A list that keeps it on its turn's agent is taken at once.
        w.answered(&[], told("r3", &["claude", "pi", "opencode"]), &sh);
        assert_eq!(w.revision.as_deref(), Some("r3"));
        assert_eq!(w.agents, ["claude", "pi", "opencode"]);
    }

    #[test]
    fn a_structured_failure_mid_turn_moves_the_worker_at_once() {
        let sh = turning(30, 30);
        let agents: Vec<String> = ["opencode", "pi", "claude"].map(String::from).to_vec();
        let mut w = Worker::new(1, "w", &sh, &agents);
        all_capable(&mut w);
        w.revision = Some(s("r1"));
        w.step(&sh, 1_000);
        let since = w.heartbeat().turn.flatten().expect("in a turn").since;
        w.answered(&[], told("r2", &["claude", "opencode", "pi"]), &sh);
        rate_limited(&mut w, "opencode", 60_000);
        w.step(&sh, 3_000);
        let hb = w.heartbeat();
        // Down its own list at once, the failure recorded; the turn goes
        // on on pi and the new list still waits for its end.
        assert_eq!(hb.active_agent.as_deref(), Some("pi"));
        assert_eq!(
            walk(&w),
            [(s("opencode"), Some(s("pi")), CauseKind::RateLimited)]
        );
        let turn = hb.turn.clone().flatten().expect("still in its turn");
        assert_eq!((turn.agent.as_str(), turn.since), ("pi", since));
        assert_eq!(hb.config_revision.as_deref(), Some("r1"));
        assert_eq!(hb.next_turn_agent.as_deref(), Some("claude"));
        hb.validate().expect("valid");
        // opencode back mid-turn: it stays on pi until the turn ends.
        w.cooldowns.clear();
        w.step(&sh, 20_000);
        assert_eq!(w.active.as_deref(), Some("pi"));
        w.step(&sh, 31_000);
        assert_eq!(w.active.as_deref(), Some("claude"));
        assert_eq!(w.revision.as_deref(), Some("r2"));
        // Every rung down mid-turn: no route, and no turn.
        for a in ["claude", "opencode", "pi"] {
            rate_limited(&mut w, a, 90_000);
        }
        w.step(&sh, 32_000);
        let hb = w.heartbeat();
        assert_eq!(hb.active_agent, None);
        assert_eq!(hb.turn, Some(None));
        hb.validate().expect("valid");
    }

    #[test]
    fn turn_lengths_are_drawn_per_worker_within_the_bounds() {
        let sh = turning(5, 20);
        let agents: Vec<String> = ["opencode"].map(String::from).to_vec();
        let lengths = |idx: usize| {
            let mut w = Worker::new(idx, "w", &sh, &agents);
            all_capable(&mut w);
            w.step(&sh, 0);
            let tr = w.turn.clone().expect("a turn");
            tr.ends
        };
        let all: Vec<Ms> = (0..50).map(lengths).collect();
        assert!(all.iter().all(|l| (5_000..=20_000).contains(l)), "{all:?}");
        assert_eq!(
            all,
            (0..50).map(lengths).collect::<Vec<_>>(),
            "deterministic"
        );
        assert!(all.iter().any(|l| *l != all[0]), "drawn per worker");
    }

    #[test]
    fn without_turns_a_worker_says_nothing_of_them_and_follows_at_once() {
        let sh = shared("aug19");
        let agents: Vec<String> = ["opencode", "pi"].map(String::from).to_vec();
        let mut w = Worker::new(1, "w", &sh, &agents);
        all_capable(&mut w);
        w.step(&sh, 1_000);
        w.answered(&[], told("r2", &["pi", "opencode"]), &sh);
        assert_eq!(w.revision.as_deref(), Some("r2"));
        w.step(&sh, 2_000);
        let hb = w.heartbeat();
        assert_eq!(hb.active_agent.as_deref(), Some("pi"));
        assert_eq!((hb.turn, hb.next_turn_agent), (None, None));
    }

    #[test]
    fn a_backfill_clock_is_in_the_past() {
        let sh = Shared::new(Scenario::load("steady").expect("scenario"), 7, 30_000);
        assert!(sh.wall_at(30_000 - 3_600_000) < Utc::now() - chrono::Duration::minutes(59));
        assert_eq!(sh.cycle_t(-1), Some(599));
    }
}
