//! The rollout guard's judgement against heartbeats (issue 33), in
//! process (no sockets): a fleet of `JUDGE_WORKERS` workers (default
//! 100,000) behind one mutex, as the hub holds it, a 10% cohort on the
//! candidate, heartbeats recorded open loop at `JUDGE_RATE` a second
//! (default 5,000) by one thread, a judgement every `JUDGE_EVERY_MS`
//! (default 2,000, the hub's) by another, for `JUDGE_SECONDS` (default 20)
//! in each of two modes, side by side:
//!
//! - `pass` (before): what the judge did until the sums: under the lock a
//!   pointer to every view and a copy of the tracking, then a pass over
//!   them with the lock released.
//! - `sums` (after): under the lock, the sums the fleet keeps
//!   (`GuardCounts::observation`).
//!
//! It prints the lock held a judgement (median, p90, max) and each
//! heartbeat's latency from when it was due to when it was recorded
//! (p50, p99, max; the lock waited for included), and checks both modes
//! read the same counts.
//!
//! `cargo bench --bench judge` (release), or
//! `cargo bench --profile dev --bench judge` (the debug build the hub's
//! figures in docs/rollout.md were taken with).

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use macfleet::hub::fleet::Fleet;
use macfleet::hub::rollout::Tracking;
use macfleet::rollout::{Bake, Cohort, CohortSpec, Policy, Promote, Rollout, Start};
use macfleet::wire::{Capability, Heartbeat, Preflight};

const AGENTS: [&str; 3] = ["opencode", "claude", "codex"];

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn rollout() -> Rollout {
    Rollout::start(
        Start {
            id: "bench".into(),
            cohort: Cohort::share("bench-salt", 10).expect("share"),
            asked: CohortSpec::Share(10),
            base_revision: "rev-a".into(),
            candidate_revision: "rev-b".into(),
            agents: AGENTS.map(String::from).to_vec(),
            bake: Bake::from_secs(600).expect("bake"),
            promote: Promote::Auto,
            cohort_before: None,
        },
        Utc::now(),
        "bench",
    )
}

/// Worker `i`'s heartbeat: the cohort's on the candidate, one in twenty
/// with no route.
fn heartbeat(i: usize, cohort: &Cohort) -> Heartbeat {
    let id = format!("w-{i:07}");
    let caps = AGENTS
        .iter()
        .map(|a| {
            let c = Capability {
                binary: true,
                token: true,
                preflight: Preflight::Ok,
            };
            (a.to_string(), c)
        })
        .collect();
    let revision = if cohort.contains(&id) {
        "rev-b"
    } else {
        "rev-a"
    };
    Heartbeat {
        host: format!("node-{:05}.fleet.lan", i / 8),
        worker: id,
        sent_at: Utc::now(),
        config_revision: Some(revision.into()),
        agents: AGENTS.map(String::from).to_vec(),
        active_agent: (i % 20 != 0).then(|| AGENTS[0].to_string()),
        capabilities: caps,
        failovers: Vec::new(),
        turn: None,
        next_turn_agent: None,
    }
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

/// One mode's judgement: the lock held, and the counts it read.
fn judge(fleet: &Mutex<Fleet>, pass: bool) -> (Duration, u64) {
    let f = fleet.lock().expect("lock");
    let began = Instant::now();
    if pass {
        let views: Vec<_> = f.views().cloned().collect();
        let tracking = f.rollout().cloned().expect("tracking");
        drop(f);
        let held = began.elapsed();
        let obs = tracking.counts.observe_pass(views.iter(), Instant::now());
        (held, obs.cohort.workers + obs.rest.workers)
    } else {
        let obs = f
            .rollout()
            .map(|t| t.counts.observation(Instant::now()))
            .expect("tracking");
        drop(f);
        (began.elapsed(), obs.cohort.workers + obs.rest.workers)
    }
}

fn run(fleet: &Arc<Mutex<Fleet>>, beats: &[Heartbeat], pass: bool) {
    let (rate, secs, every) = (
        env("JUDGE_RATE", 5000),
        env("JUDGE_SECONDS", 20),
        Duration::from_millis(env("JUDGE_EVERY_MS", 2000)),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let judging = {
        let (fleet, stop) = (fleet.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            let mut counted = 0;
            let mut next = Instant::now() + every;
            while !stop.load(Ordering::Relaxed) && held.len() < 10_000 {
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
                next += every;
                let (h, n) = judge(&fleet, pass);
                held.push(h);
                counted = n;
            }
            (held, counted)
        })
    };
    let pool: Arc<str> = Arc::from("");
    let began = Instant::now();
    let total = (rate * secs) as usize;
    let mut latency = Vec::with_capacity(total);
    for k in 0..total {
        let due = began + Duration::from_secs_f64(k as f64 / rate as f64);
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        let hb = &beats[k % beats.len()];
        let mut f = fleet.lock().expect("lock");
        f.record_at(&hb.into(), Utc::now(), Instant::now(), &pool, "rev-a");
        drop(f);
        latency.push(due.elapsed());
    }
    let ran = began.elapsed();
    stop.store(true, Ordering::Relaxed);
    let (mut held, counted) = judging.join().expect("judge thread");
    held.sort_unstable();
    latency.sort_unstable();
    println!(
        "{:<5} judgements {:>3}  lock held ms: median {:>8} p90 {:>8} max {:>8}  |  heartbeats {} at {:.0}/s: latency ms p50 {:>7} p99 {:>7} max {:>8}  (workers judged {counted})",
        if pass { "pass" } else { "sums" },
        held.len(),
        ms(pct(&held, 0.5)),
        ms(pct(&held, 0.9)),
        ms(pct(&held, 1.0)),
        latency.len(),
        latency.len() as f64 / ran.as_secs_f64(),
        ms(pct(&latency, 0.5)),
        ms(pct(&latency, 0.99)),
        ms(pct(&latency, 1.0)),
    );
}

fn main() {
    let n = env("JUDGE_WORKERS", 100_000) as usize;
    let r = rollout();
    let beats: Vec<Heartbeat> = (0..n).map(|i| heartbeat(i, &r.cohort)).collect();
    let mut f = Fleet::new(1);
    f.set_rollout(Some(Tracking::of(&r, 10, &Policy::default())), "rev-a");
    let pool: Arc<str> = Arc::from("");
    for hb in &beats {
        f.record_at(&hb.into(), Utc::now(), Instant::now(), &pool, "rev-a");
    }
    let fleet = Arc::new(Mutex::new(f));
    let (_, pass_n) = judge(&fleet, true);
    let (_, sums_n) = judge(&fleet, false);
    assert_eq!(pass_n, sums_n, "both modes count the same workers");
    println!("{n} workers, a 10% cohort on the candidate");
    for pass in [true, false] {
        run(&fleet, &beats, pass);
    }
}
