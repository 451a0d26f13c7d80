//! State changes on the event stream, against the real hub over loopback:
//! a worker that stops heartbeating reaches a subscriber as `state` events
//! (`stale`, then `lost`) within about a second of the hub's sweeper
//! deciding it, and a config `PUT` reaches it as a `config` event followed
//! by one `sync` event per worker whose `in_sync` flipped.

use crate::common;

use std::pin::Pin;
use std::time::{Duration, Instant};

use chrono::Utc;
use common::{TestHub, heartbeat};
use futures::{Stream, StreamExt};
use macfleet::client::Writer;
use reqwest::StatusCode;

type Events = Pin<Box<dyn Stream<Item = (String, String, serde_json::Value)> + Send>>;

/// A raw subscription to `GET /v1/events` (the typed client skips kinds it
/// does not know), as (id, event, data).
async fn subscribe(h: &TestHub, types: &str, last_id: Option<&str>) -> Events {
    use eventsource_stream::Eventsource;
    let mut rb = h
        .http()
        .get(h.path(&format!("/v1/events?types={types}")))
        .bearer_auth(&h.viewer)
        .timeout(Duration::from_secs(120));
    if let Some(id) = last_id {
        rb = rb.header("Last-Event-ID", id);
    }
    let r = rb.send().await.expect("events");
    assert_eq!(r.status(), StatusCode::OK);
    Box::pin(r.bytes_stream().eventsource().map(|e| {
        let e = e.expect("a well-formed event");
        let data = serde_json::from_str(&e.data).expect("JSON data");
        (e.id, e.event, data)
    }))
}

async fn next(events: &mut Events, within: Duration) -> (String, String, serde_json::Value) {
    tokio::time::timeout(within, events.next())
        .await
        .expect("an event in time")
        .expect("the stream goes on")
}

async fn send(h: &TestHub, body: serde_json::Value) {
    let r = h
        .http()
        .post(h.path("/v1/heartbeats"))
        .bearer_auth(&h.worker)
        .json(&body)
        .send()
        .await
        .expect("heartbeat");
    assert_eq!(r.status(), StatusCode::OK);
}

fn at(v: &serde_json::Value, field: &str) -> chrono::DateTime<Utc> {
    v[field]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{field} is a time: {v}"))
}

#[tokio::test]
async fn a_silent_worker_goes_stale_then_lost_on_the_stream() {
    // Interval 1 s: stale after 3 s without a heartbeat, lost after 10 s.
    let h = TestHub::start().await;
    let mut states = subscribe(&h, "state", None).await;
    let mut all = subscribe(&h, "", None).await;
    send(&h, heartbeat("w-quiet", None, serde_json::json!([]))).await;
    let (_, kind, hb) = next(&mut all, Duration::from_secs(5)).await;
    assert_eq!(
        (kind.as_str(), hb["worker"].as_str()),
        ("heartbeat", Some("w-quiet"))
    );
    let received = at(&hb, "received_at");

    // `?types=state` carries the moves and nothing else (no heartbeat).
    let (id_stale, kind, stale) = next(&mut states, Duration::from_secs(8)).await;
    let seen = Utc::now();
    assert_eq!(kind, "state");
    assert_eq!(stale["worker"], "w-quiet");
    assert_eq!(stale["state"], "stale");
    // The data is the worker's whole view, as on GET /v1/workers.
    let view: macfleet::wire::WorkerView =
        serde_json::from_value(stale.clone()).expect("a worker view");
    assert_eq!(view.received_at, received);
    // Never before the hub may decide it (age over 3 intervals), and within
    // about a second of the sweeper deciding it (it ticks every second).
    let age = (seen - received).num_milliseconds();
    assert!(age > 3_000, "stale after {age} ms is too early");
    assert!(
        age < 3_000 + 2_500,
        "stale reached the stream {age} ms after the heartbeat"
    );
    // The unfiltered stream has it too, with the same id.
    let (id, kind, _) = next(&mut all, Duration::from_secs(5)).await;
    assert_eq!((id.as_str(), kind.as_str()), (id_stale.as_str(), "state"));

    let (_, kind, lost) = next(&mut states, Duration::from_secs(12)).await;
    let age = (Utc::now() - received).num_milliseconds();
    assert_eq!(
        (kind.as_str(), lost["state"].as_str()),
        ("state", Some("lost"))
    );
    assert!(
        (10_000..10_000 + 2_500).contains(&age),
        "lost after {age} ms"
    );
    // The stream and the snapshot agree.
    let page = h.client(&h.viewer).workers(None).await.expect("workers");
    assert_eq!(page.workers[0].state, macfleet::wire::WorkerState::Lost);

    // A heartbeat makes it healthy again: that is a heartbeat event, not a
    // state event.
    send(&h, heartbeat("w-quiet", None, serde_json::json!([]))).await;
    let (_, kind, back) = next(&mut all, Duration::from_secs(5)).await;
    assert_eq!(
        (kind.as_str(), back["state"].as_str()),
        ("state", Some("lost"))
    );
    let (_, kind, back) = next(&mut all, Duration::from_secs(5)).await;
    assert_eq!(
        (kind.as_str(), back["state"].as_str()),
        ("heartbeat", Some("healthy"))
    );
    assert!(
        tokio::time::timeout(Duration::from_millis(1_500), states.next())
            .await
            .is_err(),
        "no state event for a worker that heartbeats"
    );
}

#[tokio::test]
async fn a_config_put_flips_in_sync_as_sync_events_after_the_config_event() {
    let h = TestHub::start().await;
    let owner = h.client(&h.owner);
    let original = owner.config().await.expect("config");
    let who = owner.whoami().await.expect("who");
    let writer = Writer::new(owner.clone(), &who).expect("an owner");
    let changed = writer
        .put_config(&format!("{}# r1\r\n", original.text), &original.revision)
        .await
        .expect("put");
    // w-new follows the current revision; w-old is still on the original;
    // w-none reports none and is never in sync.
    send(
        &h,
        heartbeat("w-new", Some(&changed.revision), serde_json::json!([])),
    )
    .await;
    send(
        &h,
        heartbeat("w-old", Some(&original.revision), serde_json::json!([])),
    )
    .await;
    send(&h, heartbeat("w-none", None, serde_json::json!([]))).await;
    let mut events = subscribe(&h, "config,sync", None).await;

    // Back to the original text: its revision again.
    let t0 = Instant::now();
    let back = writer
        .put_config(&original.text, &changed.revision)
        .await
        .expect("put back");
    assert_eq!(back.revision, original.revision);
    let (config_id, kind, config) = next(&mut events, Duration::from_secs(5)).await;
    assert_eq!(kind, "config", "the config event comes first");
    assert_eq!(config["revision"], original.revision.as_str());
    let mut flips = std::collections::BTreeMap::new();
    for _ in 0..2 {
        let (_, kind, v) = next(&mut events, Duration::from_secs(5)).await;
        assert_eq!(kind, "sync");
        flips.insert(
            v["worker"].as_str().expect("worker").to_string(),
            v["in_sync"].as_bool().expect("in_sync"),
        );
    }
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    assert_eq!(
        flips,
        [("w-new".to_string(), false), ("w-old".to_string(), true)].into()
    );
    // w-none did not flip, so nothing more comes.
    assert!(
        tokio::time::timeout(Duration::from_millis(800), events.next())
            .await
            .is_err()
    );
    // The snapshot agrees.
    let page = h.client(&h.viewer).workers(None).await.expect("workers");
    let in_sync: Vec<(&str, bool)> = page
        .workers
        .iter()
        .map(|w| (w.worker.as_str(), w.in_sync))
        .collect();
    assert_eq!(
        in_sync,
        [("w-new", false), ("w-none", false), ("w-old", true)]
    );
    // Sync events are in the resume ring: a client that saw only the
    // config event gets the flips replayed, filtered to what it asks.
    let mut resumed = subscribe(&h, "sync", Some(&config_id)).await;
    for _ in 0..2 {
        let (_, kind, _) = next(&mut resumed, Duration::from_secs(5)).await;
        assert_eq!(kind, "sync");
    }
}

#[tokio::test]
async fn types_names_every_kind_and_refuses_others() {
    let h = TestHub::start().await;
    for q in ["state", "sync", "heartbeat,failover,config,state,sync", ""] {
        let r = h
            .http()
            .get(h.path(&format!("/v1/events?types={q}")))
            .bearer_auth(&h.viewer)
            .send()
            .await
            .expect("events");
        assert_eq!(r.status(), StatusCode::OK, "{q}");
    }
    let r = h
        .http()
        .get(h.path("/v1/events?types=state,stale"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("events");
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let v: serde_json::Value = r.json().await.expect("error body");
    assert_eq!(v["error"]["code"], "invalid_query");
    let msg = v["error"]["message"].as_str().expect("message");
    assert!(
        msg.contains("\"stale\"") && msg.contains("state, sync"),
        "{msg}"
    );
}

/// The typed client, as the TUI uses it: a subscriber to `state` alone (no
/// polling) sees a silent worker go stale within about a second of the
/// hub's sweeper deciding it.
#[tokio::test]
async fn a_sse_only_client_sees_a_worker_go_stale_within_a_second() {
    use macfleet::client::{HubEvent, StreamItem};
    let h = TestHub::start().await;
    let viewer = h.client(&h.viewer);
    let mut events = Box::pin(viewer.events(None, &["state", "sync"]));
    let connected = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("connected in time");
    assert_eq!(connected, Some(StreamItem::Connected));
    send(&h, heartbeat("w-quiet", None, serde_json::json!([]))).await;
    let received = viewer.workers(None).await.expect("workers").workers[0].received_at;
    let item = tokio::time::timeout(Duration::from_secs(8), events.next())
        .await
        .expect("a state event in time")
        .expect("the stream goes on");
    let seen = Utc::now();
    let StreamItem::Event {
        event: HubEvent::State(w),
        id,
    } = item
    else {
        panic!("a state event, not {item:?}");
    };
    assert!(id.is_some(), "state events carry an id to resume from");
    assert_eq!(
        (w.worker.as_str(), w.state),
        ("w-quiet", macfleet::wire::WorkerState::Stale)
    );
    assert_eq!(w.received_at, received);
    // Interval 1 s: the hub may decide at 3 s, and its sweeper ticks every
    // second; the stream adds well under a second on loopback.
    let age = (seen - received).num_milliseconds();
    assert!(
        (3_000..3_000 + 2_000).contains(&age),
        "stale reached the typed client {age} ms after the heartbeat"
    );
}

/// A flood of heartbeats never resets another client's stream (issue 30):
/// a subscriber that is behind (it reads nothing while 200 workers send
/// 4,000 heartbeats, far more than its buffer, the socket's and the live
/// feed's ring hold) is sent each worker's latest view, coalesced, and
/// every failover, and its stream goes on without a `reset`.
#[tokio::test]
async fn a_flood_of_heartbeats_never_resets_a_stream_that_is_behind() {
    const WORKERS: usize = 200;
    const ROUNDS: usize = 20;
    let h = TestHub::start_with(common::CONFIG, |o| {
        // The live feed laps a subscriber 64 events behind.
        o.event_ring = 64;
        o.streams.buffer = 64;
        o.streams.grace = Duration::from_secs(60);
    })
    .await;
    let mut all = subscribe(&h, "", None).await;
    let http = h.http();
    let post = |i: usize, k: usize| {
        let fo = if k == ROUNDS / 2 && i < 10 {
            serde_json::json!([common::failover(&format!("f-{i}"), "rate_limited", "x")])
        } else {
            serde_json::json!([])
        };
        let mut body = heartbeat(&format!("w-{i:03}"), None, fo);
        body["host"] = serde_json::json!(format!("h-{k}"));
        // Large views (64 agents, each with its capabilities): 4,000 of
        // them are far more than the sockets between hub and client hold.
        let agents: Vec<String> = (0..64).map(|j| format!("agent-{j:02}")).collect();
        let caps: serde_json::Map<String, serde_json::Value> = agents
            .iter()
            .map(|a| {
                let c = serde_json::json!({"binary": true, "token": true, "preflight": "ok"});
                (a.clone(), c)
            })
            .collect();
        body["agents"] = serde_json::json!(agents);
        body["active_agent"] = serde_json::json!("agent-00");
        body["capabilities"] = serde_json::Value::Object(caps);
        let rb = http
            .post(h.path("/v1/heartbeats"))
            .bearer_auth(&h.worker)
            .json(&body);
        async move {
            let r = rb.send().await.expect("heartbeat");
            assert_eq!(r.status(), StatusCode::OK, "worker {i} round {k}");
        }
    };
    for k in 0..ROUNDS {
        futures::stream::iter((0..WORKERS).map(|i| post(i, k)))
            .buffer_unordered(32)
            .collect::<Vec<()>>()
            .await;
    }
    // Now read: every worker's latest, every failover, no reset.
    let mut latest = std::collections::HashMap::new();
    let mut failovers = std::collections::HashSet::new();
    let last = format!("h-{}", ROUNDS - 1);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = 0usize;
    while latest.values().filter(|h| **h == last).count() < WORKERS || failovers.len() < 10 {
        assert!(Instant::now() < deadline, "in time: {seen} events read");
        let (_, kind, data) = next(&mut all, Duration::from_secs(20)).await;
        seen += 1;
        match kind.as_str() {
            "heartbeat" => {
                let w = data["worker"].as_str().expect("worker").to_string();
                latest.insert(w, data["host"].as_str().expect("host").to_string());
            }
            "failover" => {
                failovers.insert(data["id"].as_str().map(str::to_string));
            }
            "reset" => panic!("the stream was reset after {seen} events"),
            _ => {}
        }
    }
    assert!(
        seen < WORKERS * ROUNDS,
        "coalesced: {seen} events for {} heartbeats",
        WORKERS * ROUNDS
    );
    // The stream goes on: a new heartbeat reaches it.
    send(&h, heartbeat("w-after", None, serde_json::json!([]))).await;
    loop {
        let (_, kind, data) = next(&mut all, Duration::from_secs(10)).await;
        assert_ne!(kind, "reset");
        if data["worker"] == "w-after" {
            break;
        }
    }
}
