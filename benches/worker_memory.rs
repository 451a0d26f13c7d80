//! What the hub's fleet holds per worker of the largest shape the contract
//! accepts, counted by the allocator (live bytes requested and live
//! allocations, not RSS: `benches/hub_memory.sh` measures the process).
//! A 128-byte id, a 253-byte host, a 64-character revision, 64 agents of 32
//! characters with a capability each, a last failover with a 200-character
//! detail, recorded into a `Fleet` and published to the event ring, for
//! three fleets: every worker with the same 64 agents (`shared`), each with
//! its own (`own`), and each with its own 64 agents and 64 capabilities of
//! 64 other names (`own+caps`). Then the heartbeat of a known worker that
//! repeats itself, which must allocate no more than its new view.
//!
//! `cargo bench --bench worker_memory` (not criterion: it prints counts)

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicIsize, Ordering};

use chrono::{Duration, Utc};
use macfleet::hub::events::{Events, Payload};
use macfleet::hub::fleet::Fleet;
use macfleet::hub::ingest::HeartbeatIn;
use macfleet::wire::{Capability, Cause, CauseKind, CauseSource, Failover, Heartbeat, Preflight};

/// mimalloc (what the binary ships with), counting what is live.
struct Counting;

static BYTES: AtomicIsize = AtomicIsize::new(0);
static ALLOCS: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        BYTES.fetch_add(l.size() as isize, Ordering::Relaxed);
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's layout, passed through.
        unsafe { mimalloc::MiMalloc.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        BYTES.fetch_sub(l.size() as isize, Ordering::Relaxed);
        ALLOCS.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: a pointer this allocator gave out, with its layout.
        unsafe { mimalloc::MiMalloc.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        BYTES.fetch_add(new as isize - l.size() as isize, Ordering::Relaxed);
        // SAFETY: as `dealloc`, and the new size is the caller's.
        unsafe { mimalloc::MiMalloc.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> (isize, isize) {
    (
        BYTES.load(Ordering::Relaxed),
        ALLOCS.load(Ordering::Relaxed),
    )
}

const WORKERS: usize = 20_000;

fn largest(k: usize, shape: &str) -> Heartbeat {
    let now = Utc::now();
    let agents: Vec<String> = (0..64)
        .map(|i| match shape {
            "shared" => format!("a{i:031}"),
            _ => format!("a{i:02}{k:029}"),
        })
        .collect();
    let names: Vec<String> = match shape {
        "own+caps" => (0..64).map(|i| format!("c{i:02}{k:029}")).collect(),
        _ => agents.clone(),
    };
    let cap = Capability {
        binary: true,
        token: true,
        preflight: Preflight::Ok,
    };
    Heartbeat {
        worker: format!("w{k:0127}"),
        host: format!("h{k:0252}"),
        sent_at: now,
        config_revision: Some("r".repeat(64)),
        active_agent: Some(agents[1].clone()),
        capabilities: names.into_iter().map(|n| (n, cap)).collect(),
        failovers: vec![Failover {
            id: format!("f-{k}"),
            at: now - Duration::seconds(60),
            from: agents[0].clone(),
            to: Some(agents[1].clone()),
            cause: Cause {
                kind: CauseKind::RateLimited,
                status: Some(429),
                source: CauseSource::HubRouter,
                detail: Some("d".repeat(200)),
            },
        }],
        agents,
        turn: None,
        next_turn_agent: None,
    }
}

fn main() {
    let revision = "r".repeat(64);
    println!(
        "{:<9} {:>14} {:>14} {:>16}",
        "fleet", "B/worker", "allocs/worker", "repeat: allocs"
    );
    for shape in ["shared", "own", "own+caps"] {
        let events = Events::new(100_000);
        let mut fleet = Fleet::new(1);
        // The bodies first, outside the count.
        let bodies: Vec<Vec<u8>> = (0..WORKERS)
            .map(|k| serde_json::to_vec(&largest(k, shape)).expect("serialises"))
            .collect();
        let (b0, a0) = live();
        for body in &bodies {
            let hb = HeartbeatIn::parse(body).expect("parses");
            let view = fleet.record(&hb, Utc::now(), &revision);
            events.publish(Payload::Heartbeat(view));
        }
        let (b1, a1) = live();
        // A known worker says the same again (no failover this time).
        let mut again = largest(7, shape);
        again.failovers.clear();
        let body = serde_json::to_vec(&again).expect("serialises");
        let hb = HeartbeatIn::parse(&body).expect("parses");
        let (_, r0) = live();
        let view = fleet.record(&hb, Utc::now(), &revision);
        let (_, r1) = live();
        drop(view);
        println!(
            "{shape:<9} {:>14} {:>14.1} {:>16}",
            (b1 - b0) / WORKERS as isize,
            (a1 - a0) as f64 / WORKERS as f64,
            r1 - r0
        );
        std::hint::black_box((&fleet, &events));
    }
}
