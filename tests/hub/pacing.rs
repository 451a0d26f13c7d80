//! Pacing (issue 22) against a real `macfleet hub` process and a real
//! `macfleet sim` process over loopback: with a small
//! `--max-heartbeats-per-second`, a fleet far larger than the configured
//! interval allows is told longer intervals, the heartbeats reaching the
//! hub (its own request counter) stay within the bound once the fleet has
//! registered, and no worker is judged stale or lost by the change of pace.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{HubProcess, Kill, Spawn};
use macfleet::client::{Client, ClientOptions, Token};
use macfleet::wire::{WindowQuery, WindowSort};

/// Simulated workers: far more than 2 s × 500/s.
const WORKERS: u64 = 100_000;
const MAX_PER_S: u64 = 500;

/// Heartbeats the hub has answered 200, from its `/metrics`.
async fn answered(owner: &Client) -> u64 {
    let text = owner.metrics().await.expect("metrics");
    text.lines()
        .find(|l| {
            l.starts_with("macfleet_hub_requests_total{route=\"/v1/heartbeats\",status=\"200\"}")
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse::<f64>().ok())
        .map_or(0, |n| n as u64)
}

// 100,000 simulated workers against a debug hub: the rate it measures
// depends on the machine's load (621/s against a bound of 575 while the
// rest of tests/hub ran beside it on 2 cores; 58 s and within the bound
// alone), so scripts/test runs it by itself after the suite.
#[tokio::test]
#[ignore = "load-sensitive: scripts/test runs it alone after the suite"]
async fn a_large_fleet_is_paced_within_the_bound_and_none_is_judged_lost() {
    let (dir, owner_token, viewer_token, worker_token) = common::hub_dir();
    let hub = HubProcess::spawn(
        dir.path(),
        Spawn {
            extra: &[
                "--heartbeat-interval",
                "2",
                "--max-heartbeats-per-second",
                "500",
                "--max-workers",
                "200000",
            ],
            ..Spawn::default()
        },
    );
    let _sim = Kill(
        Command::new(env!("CARGO_BIN_EXE_macfleet"))
            .args([
                "sim",
                "--workers",
                &WORKERS.to_string(),
                "--scenario",
                "steady",
            ])
            .env("MAC_HUB_URL", &hub.url)
            .env("MAC_HUB_TOKEN", &worker_token)
            .env("XDG_CONFIG_HOME", dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sim"),
    );
    let client = |t: &str| {
        Client::new(&hub.url, Some(Token::new(t)), ClientOptions::default()).expect("client")
    };
    let (owner, viewer) = (client(&owner_token), client(&viewer_token));
    // The whole fleet registers (the sim ramps up at ~5,000 new workers a
    // second; a debug hub takes them in more slowly).
    let start = Instant::now();
    let mut judged = Vec::new();
    loop {
        let s = viewer.summary().await.expect("summary");
        judged.push((s.stale, s.lost));
        if s.workers >= WORKERS {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(240),
            "the fleet registers: {} of {WORKERS}\n{}",
            s.workers,
            hub.log()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let s = viewer.summary().await.expect("summary");
    assert_eq!(
        s.heartbeat_interval_s,
        WORKERS / MAX_PER_S,
        "the interval the hub tells now"
    );
    // Each worker's entry says what it was told: the first ones the
    // configured 2 s or a little more, the last ones ~200 s, never beyond
    // the bound's interval plus its jitter.
    let w = viewer
        .window(&WindowQuery {
            sort: WindowSort::Age,
            limit: 10_000,
            offset: Some(WORKERS - 10_000),
            ..Default::default()
        })
        .await
        .expect("window");
    let told: Vec<u64> = w
        .workers
        .iter()
        .map(|w| w.heartbeat_interval_s.expect("told"))
        .collect();
    assert!(told.iter().all(|t| (2..=220).contains(t)), "{told:?}");
    assert!(
        told.iter().filter(|t| **t >= 150).count() > 5_000,
        "the newest heard were told long intervals"
    );
    // The rate reaching the hub, in 10 s windows once the fleet is in: it
    // settles within the bound (and its 10% jitter), where an unpaced
    // fleet would send 100,000 / 2 s. The first windows after the fleet is
    // in may be above it and are not the pace: workers told a short
    // interval while the fleet was small learn the long one at their next
    // heartbeat, and a debug hub on a loaded machine takes the ramp in
    // late (the simulator's heartbeats that waited go out at once): 661 to
    // 1,136 a second were measured over the first 20 s, on one commit.
    let mut rates = Vec::new();
    let settle = Instant::now();
    loop {
        let (c0, t0) = (answered(&owner).await, Instant::now());
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let s = viewer.summary().await.expect("summary");
            judged.push((s.stale, s.lost));
        }
        let (c1, t1) = (answered(&owner).await, Instant::now());
        let rate = (c1 - c0) as f64 / (t1 - t0).as_secs_f64();
        rates.push(rate.round() as u64);
        assert!(rate > 0.0, "workers still heartbeat");
        if rate <= MAX_PER_S as f64 * 1.15 {
            break;
        }
        assert!(
            settle.elapsed() < Duration::from_secs(150),
            "heartbeats a second reaching the hub, 10 s windows: {rates:?} (bound {MAX_PER_S}): never settled within it"
        );
    }
    // Nobody was judged stale or lost by the pace, at any point.
    assert!(
        judged.iter().all(|(stale, lost)| *stale == 0 && *lost == 0),
        "stale/lost seen: {:?}",
        judged
            .iter()
            .filter(|j| **j != (0, 0))
            .take(5)
            .collect::<Vec<_>>()
    );
}

/// A worker far faster than it was told (issue 30): past a burst of 20,
/// then twice its told rate, the hub answers `429 heartbeat_too_fast` with
/// `Retry-After`, and nothing of the refused heartbeat is applied; another
/// worker is taken all the while, and the fast one again once it waits.
#[tokio::test]
async fn a_worker_far_faster_than_told_is_refused_429_and_nothing_applied() {
    use reqwest::StatusCode;
    // Told 10 s: paced at one heartbeat each 5 s past its burst, so a
    // loaded machine's slow requests never open a slot mid-test (told 1 s,
    // a slot each 0.5 s, the burst and the flood raced the clock).
    let h = common::TestHub::start_with(common::CONFIG, |o| o.heartbeat_interval_s = 10).await;
    let http = h.http();
    let post = |worker: &str, host: &str| {
        let mut body = common::heartbeat(worker, None, serde_json::json!([]));
        body["host"] = serde_json::json!(host);
        http.post(h.path("/v1/heartbeats"))
            .bearer_auth(&h.worker)
            .json(&body)
            .send()
    };
    let mut taken = 0;
    let refused = loop {
        let r = post("w-fast", &format!("host-{taken}"))
            .await
            .expect("post");
        if r.status() != StatusCode::OK {
            break r;
        }
        taken += 1;
        assert!(taken <= 40, "never refused past its burst");
    };
    // The first heartbeat and a burst of 20 beyond it.
    assert_eq!(taken, 21, "heartbeats taken at once");
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let after: u64 = refused
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("a Retry-After in seconds");
    assert!((1..=5).contains(&after), "Retry-After {after}");
    let v: serde_json::Value = refused.json().await.expect("json");
    assert_eq!(v["error"]["code"], "heartbeat_too_fast", "{v}");
    // A flood past it: every one refused, none applied.
    for k in 0..50 {
        let r = post("w-fast", &format!("flood-{k}")).await.expect("post");
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS, "flood {k}");
    }
    // Another worker is taken meanwhile.
    let r = post("w-calm", "calm").await.expect("post");
    assert_eq!(r.status(), StatusCode::OK);
    let viewer = h.client(&h.viewer);
    let page = viewer.workers(None).await.expect("workers");
    let fast = page
        .workers
        .iter()
        .find(|w| w.worker == "w-fast")
        .expect("w-fast");
    assert_eq!(fast.host, format!("host-{}", taken - 1), "the last taken");
    // Once it waits what it was told, it is taken again.
    tokio::time::sleep(Duration::from_secs(after)).await;
    let r = post("w-fast", "again").await.expect("post");
    assert_eq!(r.status(), StatusCode::OK);
}
