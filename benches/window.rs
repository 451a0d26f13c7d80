//! The hub's windows (`GET /v1/workers?sort=…&q=…&offset=…&limit=…`) over
//! an in-process fleet of 1,000,000 workers (no sockets): the pass a window
//! makes over the fleet, for the windows a screen asks: the top of the
//! default order, its end (`G`), the middle of another order, a field
//! filter and a plain-word filter. The HTTP figures, with a fleet paced by
//! a real simulator, are `benches/hub_million.sh`'s.
//!
//! `cargo bench --bench window` (`WINDOW_WORKERS=100000` for a smaller
//! fleet)

// What the binary ships with (src/main.rs), so the figures are its own.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use criterion::{Criterion, criterion_group, criterion_main};
use macfleet::hub::fleet::Fleet;
use macfleet::wire::{
    Capability, Cause, CauseKind, CauseSource, Failover, Heartbeat, Preflight, WindowQuery,
    WindowSort,
};

const AGENTS: [&str; 5] = ["opencode", "pi", "claude", "codex", "cursor"];

/// A fleet of `n` workers as a large fleet looks: most on rung 0, some
/// lower, a few with no route; a fifth with a failover; a tenth heard long
/// enough ago to be stale, a hundredth lost.
fn fleet(n: usize) -> Fleet {
    let t0 = Utc::now();
    let m0 = Instant::now() + Duration::from_secs(1000);
    let mut f = Fleet::new(1);
    let pool: Arc<str> = Arc::from("");
    let caps: std::collections::BTreeMap<String, Capability> = AGENTS
        .iter()
        .map(|a| {
            (
                a.to_string(),
                Capability {
                    binary: true,
                    token: true,
                    preflight: Preflight::Ok,
                },
            )
        })
        .collect();
    for i in 0..n {
        let active = match i % 20 {
            0 => None,
            1..=3 => Some(AGENTS[1 + i % 4]),
            _ => Some(AGENTS[0]),
        };
        let failovers = (i % 5 == 0)
            .then(|| Failover {
                id: format!("f-{i}"),
                at: t0 - chrono::Duration::seconds((i % 3600) as i64),
                from: AGENTS[0].into(),
                to: active.map(String::from),
                cause: Cause {
                    kind: CauseKind::ALL[i % CauseKind::ALL.len()],
                    status: None,
                    source: CauseSource::HubRouter,
                    detail: None,
                },
            })
            .into_iter()
            .collect();
        let hb = Heartbeat {
            worker: format!("w-{:07}", (i * 7919) % n),
            host: format!("node-{:05}.fleet.lan", i / 8),
            sent_at: t0,
            config_revision: Some("r1".into()),
            agents: AGENTS.map(String::from).to_vec(),
            active_agent: active.map(String::from),
            capabilities: caps.clone(),
            failovers,
            turn: None,
            next_turn_agent: None,
        };
        let ago = match i % 100 {
            0 => 400,
            1..=10 => 40,
            _ => 1,
        };
        f.record_at(
            &(&hb).into(),
            t0,
            m0 - Duration::from_secs(1000 + ago),
            &pool,
            "r1",
        );
    }
    f.sweep(m0 - Duration::from_secs(1000), t0, 10);
    f
}

fn window(sort: WindowSort, q: &str, offset: Option<u64>) -> WindowQuery {
    WindowQuery {
        sort,
        q: q.into(),
        limit: 300,
        offset,
        page: None,
    }
}

fn windows(c: &mut Criterion) {
    let n: usize = std::env::var("WINDOW_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let f = fleet(n);
    let total = f.views().count() as u64;
    assert_eq!(total, n as u64, "every worker recorded");
    let mut g = c.benchmark_group(format!("window_{n}"));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    let cases: [(&str, WindowQuery); 5] = [
        ("urgency_top", window(WindowSort::Urgency, "", Some(0))),
        (
            "urgency_end",
            window(WindowSort::Urgency, "", Some(total - 300)),
        ),
        ("host_middle", window(WindowSort::Host, "", Some(total / 2))),
        (
            "q_state_stale",
            window(WindowSort::Worker, "state:stale", None),
        ),
        (
            "q_plain_words",
            window(WindowSort::Urgency, "opencode #0", None),
        ),
    ];
    // What a window takes under the fleet's lock: a pointer to every view.
    g.bench_function("source_under_lock", |b| {
        b.iter(|| black_box(f.window_source()))
    });
    for (name, q) in &cases {
        let w = f.window(q).expect("a window");
        assert!(!w.workers.is_empty(), "{name}: rows");
        g.bench_function(*name, |b| b.iter(|| black_box(f.window(black_box(q)))));
    }
    g.finish();
    // The sweeper's pass, once a second under the fleet's lock: every
    // worker's state judged again (none moves here).
    let mut f = f;
    let mut g = c.benchmark_group(format!("sweep_{n}"));
    g.sample_size(10);
    g.bench_function("sweep_nothing_moves", |b| {
        b.iter(|| black_box(f.sweep(Instant::now() - Duration::from_secs(1000), Utc::now(), 10)))
    });
    g.finish();
}

criterion_group!(benches, windows);
criterion_main!(benches);
