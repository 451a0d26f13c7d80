//! The hub's own work for one heartbeat, in-process (no sockets): token
//! lookup, JSON parse, validation, recording into a 100,000-worker fleet and
//! publishing to the event ring, each alone and all together. The HTTP
//! side-by-side figure is `benches/hub_load.sh`; this bench says where the
//! heartbeat-specific part of that cost goes.
//!
//! Then the same for a fleet of 20,000 workers of the largest shape the
//! contract accepts, each with its own 64 agent names (`largest_own_20k`):
//! a known worker repeating itself, the case where its lists must be found
//! again and compared whole.
//!
//! `cargo bench --bench ingest`

// What the binary ships with (src/main.rs), so the figures are its own.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;

use chrono::Utc;
use criterion::{Criterion, criterion_group, criterion_main};
use macfleet::hub::auth::{Tokens, generate_token, token_entry};
use macfleet::hub::events::{Events, Payload};
use macfleet::hub::fleet::Fleet;
use macfleet::hub::ingest::HeartbeatIn;
use macfleet::wire::{Heartbeat, Role};

const WORKERS: usize = 100_000;

fn body(id: usize) -> Vec<u8> {
    format!(
        r#"{{"worker":"w-{id:06}","host":"node-{:05}","sent_at":"2026-11-29T15:04:05Z","config_revision":null,"agents":["opencode","pi","claude","codex"],"active_agent":"claude","capabilities":{{"opencode":{{"binary":true,"token":true,"preflight":"ok"}},"pi":{{"binary":false,"token":true,"preflight":"unknown"}},"claude":{{"binary":true,"token":true,"preflight":"ok"}},"codex":{{"binary":true,"token":false,"preflight":"unknown"}}}},"failovers":[]}}"#,
        id / 4
    )
    .into_bytes()
}

/// Rewrite `buf` (a `body(_)`) in place into worker `id`'s body: the
/// request body a hub parses is hot in cache, not one of 100,000 cold ones.
fn retarget(buf: &mut [u8], id: usize) {
    let digits = |at: usize, width: usize, mut n: usize, buf: &mut [u8]| {
        for i in (0..width).rev() {
            buf[at + i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
    };
    // `{"worker":"w-` is 13 bytes, then 6 digits; `","host":"node-` 15 more.
    digits(13, 6, id, buf);
    digits(13 + 6 + 15, 5, id / 4, buf);
}

fn parse(b: &[u8]) -> HeartbeatIn<'_> {
    HeartbeatIn::parse(b).expect("bench body parses")
}

fn ingest(c: &mut Criterion) {
    let token = generate_token();
    let tokens =
        Tokens::parse(&token_entry("load", Role::Worker, &token), "t.toml").expect("tokens");
    let mut buf = body(0);
    let mut fleet = Fleet::new(1);
    let events = Events::new(100_000);
    let now = Utc::now();
    for id in 0..WORKERS {
        retarget(&mut buf, id);
        assert_eq!(buf, body(id), "retarget writes the right bytes");
        let view = fleet.record(&parse(&buf), now, "0123456789ab");
        events.publish(Payload::Heartbeat(view));
    }
    // A fixed pseudo-random walk over the fleet, as wrk's script does.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % WORKERS as u64) as usize
    };

    let mut g = c.benchmark_group("heartbeat_ingest");
    g.bench_function("token_lookup", |b| {
        b.iter(|| black_box(tokens.lookup(black_box(&token))))
    });
    g.bench_function("parse_wire_type", |b| {
        b.iter(|| {
            let hb: Heartbeat = {
                retarget(&mut buf, next());
                serde_json::from_slice(black_box(&buf)).expect("parses")
            };
            black_box(hb)
        })
    });
    g.bench_function("parse", |b| {
        b.iter(|| {
            retarget(&mut buf, next());
            black_box(parse(black_box(&buf)));
        })
    });
    g.bench_function("parse_validate", |b| {
        b.iter(|| {
            retarget(&mut buf, next());
            let hb = parse(black_box(&buf));
            black_box(hb.validate().is_ok())
        })
    });
    g.bench_function("parse_validate_record", |b| {
        b.iter(|| {
            retarget(&mut buf, next());
            let hb = parse(black_box(&buf));
            let ok = hb.validate().is_ok();
            black_box(fleet.record(&hb, now, "0123456789ab"));
            black_box(ok)
        })
    });
    g.bench_function("whole", |b| {
        b.iter(|| {
            retarget(&mut buf, next());
            let hb = parse(black_box(&buf));
            let ok = hb.validate().is_ok();
            let view = fleet.record(&hb, now, "0123456789ab");
            events.publish(Payload::Heartbeat(view));
            black_box(ok)
        })
    });
    g.finish();
}

/// A largest-shape heartbeat of worker `k` with its own 64 agents.
fn largest(k: usize) -> Vec<u8> {
    let agents: Vec<String> = (0..64).map(|i| format!("a{i:02}{k:029}")).collect();
    let caps: Vec<String> = agents
        .iter()
        .map(|a| format!(r#""{a}":{{"binary":true,"token":true,"preflight":"ok"}}"#))
        .collect();
    format!(
        r#"{{"worker":"w{k:0127}","host":"h{k:0252}","sent_at":"2026-11-29T15:04:05Z","config_revision":"{}","agents":{},"active_agent":"{}","capabilities":{{{}}},"failovers":[]}}"#,
        "r".repeat(64),
        serde_json::to_string(&agents).expect("json"),
        agents[1],
        caps.join(",")
    )
    .into_bytes()
}

fn largest_own(c: &mut Criterion) {
    const N: usize = 20_000;
    let bodies: Vec<Vec<u8>> = (0..N).map(largest).collect();
    let mut fleet = Fleet::new(1);
    let now = Utc::now();
    for b in &bodies {
        fleet.record(&parse(b), now, "0123456789ab");
    }
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % N as u64) as usize
    };
    let mut g = c.benchmark_group("largest_own_20k");
    g.bench_function("parse_validate_record", |b| {
        b.iter(|| {
            let hb = parse(black_box(&bodies[next()]));
            let ok = hb.validate().is_ok();
            black_box(fleet.record(&hb, now, "0123456789ab"));
            black_box(ok)
        })
    });
    g.finish();
}

criterion_group!(benches, ingest, largest_own);
criterion_main!(benches);
