//! Issue #4: when the event stream cannot be had, the TUI polls the failover
//! log with `?since` cursors, the top line says `polling`, and it goes back
//! to `live` when the stream can be had again, losing nothing on the way.
//!
//! The broken stream is a realistic one: a proxy in front of the real hub
//! that passes every request but `GET /v1/events`, which it answers
//! `502 Bad Gateway` (as a buffering or misconfigured middlebox does), until
//! the test lets it through.

use crate::common;

use crate::pty;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderName, StatusCode, header};
use axum::response::{IntoResponse, Response};
use common::{TestHub, eventually, failover, heartbeat};
use macfleet::client::{Client, ClientOptions, Token};
use macfleet::tui::msg::Msg;
use tokio::sync::{Notify, mpsc};

// ---------------------------------------------------------------- proxy --

struct ProxyState {
    upstream: String,
    http: reqwest::Client,
    /// `GET /v1/events` is passed (true) or answered 502 (false).
    pass_events: AtomicBool,
    /// Hold the next passed `/v1/events` request until `release`.
    hold_next_events: AtomicBool,
    held: Notify,
    release: Notify,
    /// `/v1/events` requests answered 502.
    refused: AtomicUsize,
    /// `/v1/failovers` requests answered by the hub.
    failover_polls: AtomicUsize,
}

/// A loopback HTTP proxy (axum in, reqwest out) in front of the hub.
struct Proxy {
    url: String,
    state: Arc<ProxyState>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Headers that belong to one hop, not to the request or the answer.
const HOP: [HeaderName; 5] = [
    header::CONNECTION,
    header::HOST,
    header::TRANSFER_ENCODING,
    header::CONTENT_LENGTH,
    header::UPGRADE,
];

async fn forward(State(st): State<Arc<ProxyState>>, req: Request) -> Response {
    let is_events = req.uri().path() == "/v1/events";
    if is_events {
        if !st.pass_events.load(Ordering::SeqCst) {
            st.refused.fetch_add(1, Ordering::SeqCst);
            return (StatusCode::BAD_GATEWAY, "502 Bad Gateway\n").into_response();
        }
        if st.hold_next_events.swap(false, Ordering::SeqCst) {
            st.held.notify_one();
            st.release.notified().await;
        }
    }
    let is_failovers = req.uri().path() == "/v1/failovers";
    let path = req
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let method = req.method().clone();
    let mut headers = req.headers().clone();
    for h in &HOP {
        headers.remove(h);
    }
    let Ok(body) = axum::body::to_bytes(req.into_body(), 1 << 20).await else {
        return (StatusCode::PAYLOAD_TOO_LARGE, "request body too large\n").into_response();
    };
    let sent = st
        .http
        .request(method, format!("{}{path}", st.upstream))
        .headers(headers)
        .body(body)
        .send()
        .await;
    let up = match sent {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_GATEWAY, format!("upstream: {e}\n")).into_response(),
    };
    if is_failovers {
        st.failover_polls.fetch_add(1, Ordering::SeqCst);
    }
    let mut resp = Response::builder().status(up.status());
    for (k, v) in up.headers() {
        if !HOP.contains(k) {
            resp = resp.header(k, v);
        }
    }
    // Streamed, so the event stream passes as it comes.
    resp.body(Body::from_stream(up.bytes_stream()))
        .unwrap_or_else(|e| (StatusCode::BAD_GATEWAY, e.to_string()).into_response())
}

impl Proxy {
    async fn start(upstream: &str) -> Proxy {
        let state = Arc::new(ProxyState {
            upstream: upstream.trim_end_matches('/').to_string(),
            // No total timeout: the event stream is long-lived.
            http: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(5))
                .build()
                .expect("proxy client"),
            pass_events: AtomicBool::new(false),
            hold_next_events: AtomicBool::new(false),
            held: Notify::new(),
            release: Notify::new(),
            refused: AtomicUsize::new(0),
            failover_polls: AtomicUsize::new(0),
        });
        let app = axum::Router::new()
            .fallback(forward)
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("proxy binds on loopback");
        let url = format!("http://{}", listener.local_addr().expect("proxy addr"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Proxy { url, state, task }
    }
}

// --------------------------------------------------------------- helpers --

/// POST one heartbeat carrying failover `id` straight to the hub, as worker
/// `worker` would; answered once the failover is committed.
async fn post_failover(hub: &TestHub, worker: &str, id: &str) {
    let body = heartbeat(
        worker,
        None,
        serde_json::json!([failover(
            id,
            "rate_limited",
            "opencode route: 429 from upstream"
        )]),
    );
    let r = hub
        .http()
        .post(hub.path("/v1/heartbeats"))
        .bearer_auth(&hub.worker)
        .json(&body)
        .send()
        .await
        .expect("heartbeat sent");
    assert_eq!(r.status(), 200, "heartbeat accepted");
}

/// Receive messages (at most 10,000, for at most `within`) until one meets
/// `want`; the rest are dropped. `None` if none did.
async fn until(
    rx: &mut mpsc::Receiver<Msg>,
    within: Duration,
    want: impl Fn(&Msg) -> bool,
) -> Option<Msg> {
    let end = Instant::now() + within;
    for _ in 0..10_000 {
        let left = end.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(m)) if want(&m) => return Some(m),
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return None,
        }
    }
    None
}

/// The message carries failover `id`, from the stream or from a poll.
fn has_failover(m: &Msg, id: &str) -> bool {
    match m {
        Msg::Failover(r) => r.failover.id == id,
        Msg::Failovers { page, .. } => page.events.iter().any(|r| r.failover.id == id),
        _ => false,
    }
}

fn polled_failover(m: &Msg, id: &str) -> bool {
    matches!(m, Msg::Failovers { .. }) && has_failover(m, id)
}

// ----------------------------------------------------- the tasks' view --

/// `net::spawn` through the proxy: the stream is refused, failovers arrive
/// by polling; then the stream is let through, and a failover committed
/// after the last poll but before the stream joined still arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polls_while_the_stream_is_refused_and_loses_nothing_when_it_returns() {
    let hub = TestHub::start().await;
    let proxy = Proxy::start(&hub.url()).await;
    let client = Client::new(
        &proxy.url,
        Some(Token::new(&hub.viewer)),
        ClientOptions::default(),
    )
    .expect("client");
    let (tx, mut rx) = mpsc::channel(1024);
    let (_fx_tx, fx_rx) = mpsc::unbounded_channel();
    let _net = macfleet::tui::runtime::net::spawn(client, tx, fx_rx);

    // The stream is refused and the log is read once at start, in either
    // order (two tasks).
    let (mut down, mut read) = (false, false);
    let end = Instant::now() + Duration::from_secs(10);
    while !(down && read) && Instant::now() < end {
        let left = end.saturating_duration_since(Instant::now());
        let m = until(&mut rx, left, |m| {
            matches!(
                m,
                Msg::StreamDown { .. } | Msg::StreamUp | Msg::Failovers { fresh: true, .. }
            )
        })
        .await;
        match m {
            Some(Msg::StreamDown { error, .. }) => {
                assert!(error.contains("502"), "the proxy's answer: {error}");
                down = true;
            }
            Some(Msg::Failovers { .. }) => read = true,
            Some(m) => panic!("the stream is refused, yet {m:?}"),
            None => break,
        }
    }
    assert!(down, "StreamDown within 10 s");
    assert!(read, "the log is read once at start, within 10 s");

    // Polled, not streamed: the stream is still refused.
    post_failover(&hub, "w-poll-1", "poll-1").await;
    let got = until(&mut rx, Duration::from_secs(15), |m| {
        has_failover(m, "poll-1") || matches!(m, Msg::StreamUp)
    })
    .await;
    assert!(
        got.as_ref().is_some_and(|m| polled_failover(m, "poll-1")),
        "poll-1 arrives by polling within 15 s; got {got:?}"
    );
    assert!(proxy.state.refused.load(Ordering::SeqCst) >= 1);

    // The stream comes back. Hold its request at the proxy, let one more
    // poll complete, then commit a failover: it is after the poller's last
    // look and before the hub subscribes the stream (which carries no
    // Last-Event-ID: it never saw an event), so only a catch-up poll after
    // the stream joins can deliver it.
    proxy.state.hold_next_events.store(true, Ordering::SeqCst);
    proxy.state.pass_events.store(true, Ordering::SeqCst);
    // Stream retries back off to at most 10 s.
    tokio::time::timeout(Duration::from_secs(15), proxy.state.held.notified())
        .await
        .expect("the stream retries within 15 s");
    let polls = proxy.state.failover_polls.load(Ordering::SeqCst);
    let st = proxy.state.clone();
    eventually(100, || {
        let st = st.clone();
        async move { (st.failover_polls.load(Ordering::SeqCst) > polls).then_some(()) }
    })
    .await
    .expect("a failover poll within 5 s while the stream is held");
    post_failover(&hub, "w-gap-1", "gap-1").await;
    // Let the hub publish it to the (still empty) live broadcast.
    tokio::time::sleep(Duration::from_millis(100)).await;
    proxy.state.release.notify_one();
    let up = until(&mut rx, Duration::from_secs(10), |m| {
        matches!(m, Msg::StreamUp) || has_failover(m, "gap-1")
    })
    .await;
    assert!(
        matches!(up, Some(Msg::StreamUp)),
        "the stream joins before gap-1 is polled (the poll period is 2 s); got {up:?}"
    );
    // Live again, and at once (before the next poll): a new failover comes
    // on the stream itself, with a seq above gap-1's. gap-1 still arrives.
    post_failover(&hub, "w-live-1", "live-1").await;
    let (mut gap, mut live) = (false, None);
    let end = Instant::now() + Duration::from_secs(10);
    while !(gap && live.is_some()) && Instant::now() < end {
        let left = end.saturating_duration_since(Instant::now());
        let Some(m) = until(&mut rx, left, |m| {
            has_failover(m, "gap-1") || has_failover(m, "live-1")
        })
        .await
        else {
            break;
        };
        gap |= has_failover(&m, "gap-1");
        if has_failover(&m, "live-1") && live.is_none() {
            live = Some(matches!(m, Msg::Failover(_)));
        }
    }
    assert!(
        gap,
        "gap-1, committed while the stream was joining, arrives within 10 s"
    );
    assert_eq!(live, Some(true), "live-1 arrives, first on the stream");
}

// ------------------------------------------------- what a user sees --

const START: Duration = Duration::from_secs(30);

/// The real binary in a pty, through the proxy: the top line says
/// `polling` while the stream is refused, a failover posted to the hub shows
/// without a key press, and the top line turns `live` once the stream passes.
#[test]
fn the_top_line_says_polling_and_failovers_still_arrive() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let hub = rt.block_on(TestHub::start());
    let proxy = rt.block_on(Proxy::start(&hub.url()));

    let mut t = pty::Pty::spawn(&["--hub", &proxy.url], &[("MAC_HUB_TOKEN", &hub.viewer)]);
    t.wait_for("READ-ONLY", START);
    t.wait_until("`polling` on the top line", START, |s| {
        s.lines().next().is_some_and(|l| l.contains("polling"))
    });
    t.send("3");
    t.wait_for("failovers per minute", Duration::from_secs(10));
    // Still polling once the first screens are drawn, never `live` or
    // `disconnected`: every request but the stream passes.
    std::thread::sleep(Duration::from_secs(1));
    let top = t.top_line();
    assert!(top.contains("polling"), "{top}");
    assert!(
        !top.contains("live") && !top.contains("disconnected"),
        "{top}"
    );
    assert!(proxy.state.refused.load(Ordering::SeqCst) >= 1);

    // No key press from here on.
    rt.block_on(post_failover(&hub, "w-pty-poll", "pty-poll-1"));
    let s = t.wait_for("w-pty-poll", Duration::from_secs(15));
    assert!(s.contains("rate_limited"), "{s}");
    let top = t.top_line();
    assert!(top.contains("polling"), "{top}");

    // The middlebox is fixed: the stream passes, the top line turns `live`
    // (stream retries back off to at most 10 s).
    proxy.state.pass_events.store(true, Ordering::SeqCst);
    t.wait_until("`live` on the top line", Duration::from_secs(20), |s| {
        s.lines().next().is_some_and(|l| l.contains("live"))
    });
    rt.block_on(post_failover(&hub, "w-pty-live", "pty-live-1"));
    t.wait_for("w-pty-live", Duration::from_secs(10));

    t.send("q");
    assert!(t.wait_exit(Duration::from_secs(10)).success());
    drop(proxy);
    drop(hub);
}
