//! The TUI's hub tasks against the real hub: with the worker poll stretched
//! to a minute, a worker that goes silent still reaches `update` as stale,
//! from the event stream, within about a second of the hub deciding it.

use crate::common;

use std::time::{Duration, Instant};

use common::{TestHub, heartbeat};
use macfleet::tui::msg::{Effect, Msg};
use macfleet::tui::runtime::net;
use macfleet::wire::WorkerState;
use tokio::sync::mpsc;

#[tokio::test]
async fn the_tui_hears_a_stale_worker_from_the_stream_not_a_poll() {
    // The variable is read by the poll task of this process; the binary's
    // other tests share the environment, so tests/common/pty.rs keeps it
    // out of every TUI it spawns unless a test passes it.
    unsafe { std::env::set_var(net::QUIET_ENV, "60000") };
    let h = TestHub::start().await;
    let r = h
        .http()
        .post(h.path("/v1/heartbeats"))
        .bearer_auth(&h.worker)
        .json(&heartbeat("w-quiet", None, serde_json::json!([])))
        .send()
        .await
        .expect("heartbeat");
    assert!(r.status().is_success());
    let beat = Instant::now();
    let (tx, mut rx) = mpsc::channel::<Msg>(256);
    let (_fx_tx, fx_rx) = mpsc::unbounded_channel::<Effect>();
    let _net = net::spawn(h.client(&h.viewer), tx, fx_rx);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut polls = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let m = tokio::time::timeout(left, rx.recv())
            .await
            .expect("a stale worker within 10 s")
            .expect("the tasks run");
        match m {
            Msg::Workers { .. } => polls += 1,
            Msg::WorkerEvents(views) => {
                let w = views.iter().find(|w| w.worker == "w-quiet");
                if w.is_some_and(|w| w.state == WorkerState::Stale) {
                    let after = beat.elapsed();
                    // Interval 1 s: stale is due at 3 s; the sweeper ticks each second.
                    assert!(
                        after < Duration::from_millis(3_000 + 2_000),
                        "stale reached the TUI {after:?} after the heartbeat"
                    );
                    break;
                }
            }
            _ => {}
        }
    }
    assert_eq!(polls, 1, "only the first full page was polled");
}

/// Figures, not a check (`cargo test --release --test tui stream:: -- --ignored
/// --nocapture`; `MACFLEET_SYNC_N` workers, default 5,000): a `PUT` flips
/// `in_sync` for every worker, one `sync` event each; how many messages the
/// TUI's stream task turns them into, and how long until the last arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn sync_burst_figures() {
    unsafe { std::env::set_var(net::QUIET_ENV, "60000") };
    let n: usize = std::env::var("MACFLEET_SYNC_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let h = TestHub::start_with(common::CONFIG, |o| o.heartbeat_interval_s = 600).await;
    let owner = h.client(&h.owner);
    let doc = owner.config().await.expect("config");
    let http = h.http();
    for chunk in (0..n).collect::<Vec<_>>().chunks(64) {
        let posts = chunk.iter().map(|i| {
            http.post(h.path("/v1/heartbeats"))
                .bearer_auth(&h.worker)
                .json(&heartbeat(
                    &format!("w-{i:06}"),
                    Some(&doc.revision),
                    serde_json::json!([]),
                ))
                .send()
        });
        for r in futures::future::join_all(posts).await {
            assert!(r.expect("heartbeat").status().is_success());
        }
    }
    let (tx, mut rx) = mpsc::channel::<Msg>(4096);
    let (_fx_tx, fx_rx) = mpsc::unbounded_channel::<Effect>();
    let _net = net::spawn(h.client(&h.viewer), tx, fx_rx);
    let mut up = false;
    let mut page = false;
    while !(up && page) {
        match rx.recv().await.expect("tasks run") {
            Msg::StreamUp => up = true,
            Msg::Workers { .. } => page = true,
            _ => {}
        }
    }
    let who = owner.whoami().await.expect("who");
    let writer = macfleet::client::Writer::new(owner, &who).expect("owner");
    let t0 = Instant::now();
    writer
        .put_config(&format!("{}# flip\n", doc.text), &doc.revision)
        .await
        .expect("put");
    let put = t0.elapsed();
    let (mut msgs, mut views, mut reset) = (0, 0, false);
    let deadline = Instant::now() + Duration::from_secs(60);
    while views < n && Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(Msg::WorkerEvents(v))) => {
                msgs += 1;
                views += v.len();
            }
            Ok(Some(Msg::Reset)) => {
                reset = true;
                break;
            }
            Ok(Some(_)) => {}
            _ => break,
        }
    }
    println!(
        "sync burst: {n} workers; PUT answered in {put:?}; {views} views in {msgs} messages \
         ({:.0} a message) by {:?}; reset: {reset}",
        views as f64 / msgs.max(1) as f64,
        t0.elapsed()
    );
}
