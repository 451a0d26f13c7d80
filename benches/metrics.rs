//! The cost of one `GET /metrics` scrape (`Hub::metrics_text`: the fleet's
//! tally copied under the lock, labelled, the text encoded)
//! over a fleet of 100,000 workers, in-process (no sockets), and what
//! keeping the fleet's tally costs a heartbeat (`FleetTally::change`).
//!
//! `cargo bench --bench metrics`

// What the binary ships with (src/main.rs), so the figures are its own.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;

use chrono::Utc;
use criterion::{Criterion, criterion_group, criterion_main};
use macfleet::hub::auth::{Tokens, generate_token, token_entry};
use macfleet::hub::ingest::HeartbeatIn;
use macfleet::hub::{HubOptions, open};
use macfleet::wire::Role;

const WORKERS: usize = 100_000;

/// Worker `id` of a fleet on five rungs; a few in ten with no route, some
/// on lower rungs, one in eight holding a rung off.
fn body(id: usize) -> String {
    let active = match id % 10 {
        0 => "null".to_string(),
        1..=3 => "\"pi\"".into(),
        4 => "\"codex\"".into(),
        _ => "\"opencode\"".into(),
    };
    let failovers = if id % 8 == 0 {
        format!(
            r#"[{{"id":"f-{id}","at":"{}","from":"claude","to":"codex","cause":{{"kind":"rate_limited","status":429,"source":"hub_router"}}}}]"#,
            macfleet::wire::fmt_time(Utc::now() - chrono::Duration::seconds(60))
        )
    } else {
        "[]".into()
    };
    format!(
        r#"{{"worker":"w-{id:06}","host":"node-{:05}","sent_at":"{}","config_revision":"r1","agents":["opencode","pi","claude","codex","cursor"],"active_agent":{active},"capabilities":{{"opencode":{{"binary":true,"token":true,"preflight":"ok"}},"pi":{{"binary":true,"token":true,"preflight":"ok"}},"claude":{{"binary":true,"token":true,"preflight":"ok"}},"codex":{{"binary":true,"token":false,"preflight":"unknown"}},"cursor":{{"binary":{},"token":true,"preflight":"ok"}}}},"failovers":{failovers}}}"#,
        id / 4,
        macfleet::wire::fmt_time(Utc::now()),
        id % 3 != 0,
    )
}

fn scrape(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("hub.toml");
    std::fs::write(
        &config,
        "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"pi\", \"claude\", \"codex\", \"cursor\"]\n",
    )
    .expect("config");
    let tokens = Tokens::parse(
        &token_entry("load", Role::Worker, &generate_token()),
        "t.toml",
    )
    .expect("tokens");
    let hub = rt
        .block_on(open(HubOptions::new(config, tokens)))
        .expect("hub");
    let now = Utc::now();
    {
        let mut fleet = hub.fleet.lock().expect("fleet");
        for id in 0..WORKERS {
            let b = body(id);
            let hb = HeartbeatIn::parse(b.as_bytes()).expect("bench body parses");
            fleet.record(&hb, now, "r1");
        }
    }
    let text = hub.metrics_text();
    assert!(
        text.contains("macfleet_workers{state=\"healthy\"} 100000"),
        "{text}"
    );
    let mut g = c.benchmark_group("metrics_scrape_100k");
    g.sample_size(20);
    g.bench_function("metrics_text", |b| b.iter(|| black_box(hub.metrics_text())));
    // What keeping the tally costs a heartbeat: one that repeats its
    // worker's last (nothing to adjust) and one that moves it between two
    // rungs (its old and new counts adjusted), both through the fleet.
    let same = body(5);
    let moved = [
        body(5).replace("\"active_agent\":\"opencode\"", "\"active_agent\":\"pi\""),
        same.clone(),
    ];
    let mut flip = 0;
    g.bench_function("heartbeat_repeated", |b| {
        b.iter(|| {
            let hb = HeartbeatIn::parse(same.as_bytes()).expect("parses");
            black_box(hub.fleet.lock().expect("fleet").record(&hb, now, "r1"));
        })
    });
    g.bench_function("heartbeat_moving_rungs", |b| {
        b.iter(|| {
            flip ^= 1;
            let hb = HeartbeatIn::parse(moved[flip].as_bytes()).expect("parses");
            black_box(hub.fleet.lock().expect("fleet").record(&hb, now, "r1"));
        })
    });
    g.finish();
    drop(rt);
}

criterion_group!(benches, scrape);
criterion_main!(benches);
