//! The TUI's hub tasks against the real hub: with the worker poll stretched
//! to a minute, a worker that goes silent still reaches `update` as stale,
//! from the event stream, within about a second of the hub deciding it.

mod common;

use std::time::{Duration, Instant};

use common::{TestHub, heartbeat};
use macfleet::tui::msg::{Effect, Msg};
use macfleet::tui::net;
use macfleet::wire::WorkerState;
use tokio::sync::mpsc;

#[tokio::test]
async fn the_tui_hears_a_stale_worker_from_the_stream_not_a_poll() {
    // Only this test runs in this binary: the variable is read by the poll task.
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
