//! Every row of the hub API v1 contract, against the real reference hub on
//! a loopback port.

use crate::common;

use std::time::Duration;

use common::{CONFIG, TestHub, eventually, failover, heartbeat};
use macfleet::client::{ClientError, FailoverQuery, HubEvent, StreamItem, Writer};
use macfleet::wire::{CauseKind, Role, WorkerState};
use reqwest::StatusCode;
use serde_json::Value;

async fn json(resp: reqwest::Response) -> (StatusCode, Value) {
    let status = resp.status();
    let v = resp.json::<Value>().await.unwrap_or(Value::Null);
    (status, v)
}

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn roles_and_tokens() {
    let h = TestHub::start().await;
    let http = h.http();
    // Health needs no token.
    let r = http.get(h.path("/v1/health")).send().await.expect("health");
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.expect("body"), "ok");
    // Missing and unknown tokens: 401, and the token is never echoed.
    let (s, v) = json(http.get(h.path("/v1/workers")).send().await.expect("req")).await;
    assert_eq!((s, code(&v)), (StatusCode::UNAUTHORIZED, "unauthorized"));
    let wrong = format!("{}{}", "mft_", "nope".repeat(10));
    let r = http
        .get(h.path("/v1/workers"))
        .bearer_auth(&wrong)
        .send()
        .await
        .expect("req");
    let (s, v) = json(r).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(!v.to_string().contains(&wrong));
    // whoami for each role.
    for (tok, name, role) in [
        (&h.owner, "alice", Role::Owner),
        (&h.viewer, "screen", Role::Viewer),
        (&h.worker, "fleet", Role::Worker),
    ] {
        let w = h.client(tok).whoami().await.expect("whoami");
        assert_eq!((w.name.as_str(), w.role), (name, role));
        assert_eq!((w.hub.as_str(), w.api.as_str()), ("test-hub", "v1"));
    }
    // Known token, wrong role: 403.
    let viewer = h.client(&h.viewer);
    let put = http
        .put(h.path("/v1/config"))
        .bearer_auth(&h.viewer)
        .header("content-type", "application/toml")
        .header("if-match", "\"x\"")
        .body(CONFIG)
        .send()
        .await
        .expect("req");
    let (s, v) = json(put).await;
    assert_eq!((s, code(&v)), (StatusCode::FORBIDDEN, "forbidden"));
    let worker = h.client(&h.worker);
    assert!(matches!(
        worker.workers(None).await,
        Err(ClientError::Forbidden(_))
    ));
    let owner_hb = http
        .post(h.path("/v1/heartbeats"))
        .bearer_auth(&h.owner)
        .json(&heartbeat("w-1", None, Value::Array(vec![])))
        .send()
        .await
        .expect("req");
    assert_eq!(owner_hb.status(), StatusCode::FORBIDDEN);
    // Workers may read the config; viewers everything but writes.
    worker.config().await.expect("worker reads config");
    viewer.history().await.expect("viewer reads history");
    // A Writer is only ever built for an owner.
    let who = viewer.whoami().await.expect("whoami");
    assert!(Writer::new(viewer.clone(), &who).is_none());
    // Unknown paths and methods answer JSON.
    let (s, v) = json(http.get(h.path("/v1/nope")).send().await.expect("req")).await;
    assert_eq!((s, code(&v)), (StatusCode::NOT_FOUND, "not_found"));
}

#[tokio::test]
async fn config_get_etag_and_304() {
    let h = TestHub::start().await;
    let http = h.http();
    // An owner reads it byte for byte under the strong ETag.
    let r = http
        .get(h.path("/v1/config"))
        .bearer_auth(&h.owner)
        .send()
        .await
        .expect("get");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/toml");
    let etag = r.headers()["etag"].to_str().expect("etag").to_string();
    assert!(
        etag.starts_with('"') && etag.ends_with('"'),
        "strong etag {etag}"
    );
    assert_eq!(r.bytes().await.expect("body").as_ref(), CONFIG.as_bytes());
    // Another role gets it scrubbed, under the weak form of the same one.
    let r = http
        .get(h.path("/v1/config"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("get");
    assert_eq!(
        r.headers()["etag"].to_str().expect("etag"),
        format!("W/{etag}")
    );
    let r = http
        .get(h.path("/v1/config"))
        .bearer_auth(&h.viewer)
        .header("if-none-match", &etag)
        .send()
        .await
        .expect("get");
    assert_eq!(r.status(), StatusCode::NOT_MODIFIED);
    let r = http
        .get(h.path("/v1/config"))
        .bearer_auth(&h.viewer)
        .header("if-none-match", "\"other\"")
        .send()
        .await
        .expect("get");
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn config_put_every_row() {
    let h = TestHub::start().await;
    let http = h.http();
    let doc = h.client(&h.owner).config().await.expect("config");
    let put = |body: Vec<u8>, if_match: Option<String>, ctype: &'static str| {
        let mut rb = http
            .put(h.path("/v1/config"))
            .bearer_auth(&h.owner)
            .header("content-type", ctype)
            .body(body);
        if let Some(m) = if_match {
            rb = rb.header("if-match", m);
        }
        rb.send()
    };
    let cur = Some(format!("\"{}\"", doc.revision));
    // 428 without If-Match.
    let (s, v) = json(
        put(CONFIG.into(), None, "application/toml")
            .await
            .expect("put"),
    )
    .await;
    assert_eq!(
        (s, code(&v)),
        (StatusCode::PRECONDITION_REQUIRED, "precondition_required")
    );
    // 415 for another media type.
    let (s, v) = json(
        put(CONFIG.into(), cur.clone(), "text/plain")
            .await
            .expect("put"),
    )
    .await;
    assert_eq!(
        (s, code(&v)),
        (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
    );
    // 413 over 1 MiB.
    let mut big = CONFIG.as_bytes().to_vec();
    big.extend(std::iter::repeat_n(b'#', 1024 * 1024));
    let (s, v) = json(
        put(big, cur.clone(), "application/toml")
            .await
            .expect("put"),
    )
    .await;
    assert_eq!(
        (s, code(&v)),
        (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large")
    );
    // 400 with line and column: not TOML, and not UTF-8.
    let (s, v) = json(
        put(
            b"a = 1\nb = = 2\n".to_vec(),
            cur.clone(),
            "application/toml",
        )
        .await
        .expect("put"),
    )
    .await;
    assert_eq!((s, code(&v)), (StatusCode::BAD_REQUEST, "invalid_toml"));
    assert_eq!(v["error"]["line"], 2);
    assert!(v["error"]["column"].as_u64().is_some());
    let (s, v) = json(
        put(
            b"a = 1\nb = \"\xff\"\n".to_vec(),
            cur.clone(),
            "application/toml",
        )
        .await
        .expect("put"),
    )
    .await;
    assert_eq!(
        (s, code(&v), v["error"]["line"].as_u64()),
        (StatusCode::BAD_REQUEST, "invalid_toml", Some(2))
    );
    // 422 for a bad list: missing, empty, duplicated, malformed, two places.
    for bad in [
        "[fleet]\nother = 1\n",
        "[fleet]\nMAC_CODING_AGENTS = []\n",
        "[fleet]\nMAC_CODING_AGENTS = [\"pi\", \"pi\"]\n",
        "[fleet]\nMAC_CODING_AGENTS = [\"Pi Two\"]\n",
        "MAC_CODING_AGENTS = \"pi\"\n[fleet]\nMAC_CODING_AGENTS = [\"pi\"]\n",
    ] {
        let (s, v) = json(
            put(bad.into(), cur.clone(), "application/toml")
                .await
                .expect("put"),
        )
        .await;
        assert_eq!(
            (s, code(&v)),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_agents"),
            "{bad}"
        );
    }
    // Nothing changed through all of that.
    assert_eq!(
        std::fs::read(h.config_path()).expect("file"),
        CONFIG.as_bytes()
    );
    assert_eq!(
        h.client(&h.owner)
            .history()
            .await
            .expect("history")
            .revisions
            .len(),
        1
    );
    // 412 with the current revision.
    let (s, v) = json(
        put(CONFIG.into(), Some("\"stale\"".into()), "application/toml")
            .await
            .expect("put"),
    )
    .await;
    assert_eq!(
        (s, code(&v)),
        (StatusCode::PRECONDITION_FAILED, "revision_mismatch")
    );
    assert_eq!(v["error"]["current_revision"], doc.revision.as_str());
    // Accepted: stored byte for byte, new ETag, history says who.
    let new = CONFIG.replace(
        "\"opencode\", # first\r\n  \"claude\",",
        "\"claude\",\r\n  \"opencode\", # first",
    );
    let r = put(new.clone().into(), cur.clone(), "application/toml")
        .await
        .expect("put");
    assert_eq!(r.status(), 200);
    let etag = r.headers()["etag"].to_str().expect("etag").to_string();
    let (_, v) = json(r).await;
    assert_eq!(v["agents"], serde_json::json!(["claude", "opencode"]));
    assert_eq!(
        format!("\"{}\"", v["revision"].as_str().expect("rev")),
        etag
    );
    assert_eq!(
        std::fs::read(h.config_path()).expect("file"),
        new.as_bytes()
    );
    let again = h.client(&h.viewer).config().await.expect("config");
    assert_eq!(again.text, new);
    let hist = h.client(&h.viewer).history().await.expect("history");
    assert_eq!(hist.revisions.len(), 2);
    assert_eq!(hist.revisions[0].by, "alice");
    assert_eq!(hist.revisions[0].agents, ["claude", "opencode"]);
    assert_eq!(hist.revisions[0].previous_agents, ["opencode", "claude"]);
    // The old revision is now stale: 412, exit code 3 through the client.
    let who = h.client(&h.owner).whoami().await.expect("whoami");
    let writer = Writer::new(h.client(&h.owner), &who).expect("owner writer");
    let e = writer
        .put_config(CONFIG, &doc.revision)
        .await
        .expect_err("stale");
    assert_eq!(e.exit_code(), 3);
    let e = writer
        .put_config("[fleet]\n", &again.revision)
        .await
        .expect_err("bad");
    assert_eq!(e.exit_code(), 4);
}

#[tokio::test]
async fn racing_owners_exactly_one_wins_each_revision() {
    let h = TestHub::start().await;
    let rounds = 5;
    let racers = 8;
    let mut winners = Vec::new();
    for round in 0..rounds {
        let base = h.client(&h.owner).config().await.expect("config");
        let mut tasks = Vec::new();
        for i in 0..racers {
            let token = if i % 2 == 0 {
                h.owner.clone()
            } else {
                h.owner2.clone()
            };
            let c = h.client(&token);
            let who = c.whoami().await.expect("whoami");
            let w = Writer::new(c, &who).expect("writer");
            let text = format!("{}# round {round} racer {i}\r\n", base.text);
            let rev = base.revision.clone();
            tasks.push(tokio::spawn(async move {
                (text.clone(), w.put_config(&text, &rev).await)
            }));
        }
        let mut ok = Vec::new();
        for t in tasks {
            let (text, r) = t.await.expect("task");
            match r {
                Ok(_) => ok.push(text),
                Err(ClientError::Conflict {
                    current_revision, ..
                }) => {
                    assert!(current_revision.is_some());
                }
                Err(e) => panic!("unexpected {e}"),
            }
        }
        assert_eq!(ok.len(), 1, "exactly one winner in round {round}");
        let now = h.client(&h.owner).config().await.expect("config");
        assert_eq!(now.text, ok[0], "the winner's document is the one stored");
        winners.push(ok.remove(0));
    }
    // No update lost: each round built on the previous winner.
    let last = std::fs::read_to_string(h.config_path()).expect("file");
    for w in &winners {
        assert!(last.starts_with(w.as_str()));
    }
    let hist = h.client(&h.viewer).history().await.expect("history");
    assert_eq!(hist.revisions.len(), rounds + 1);
}

#[tokio::test]
async fn heartbeats_project_validate_and_dedupe() {
    let h = TestHub::start().await;
    let http = h.http();
    let rev = h.client(&h.owner).config().await.expect("config").revision;
    let post = |body: Vec<u8>| {
        http.post(h.path("/v1/heartbeats"))
            .bearer_auth(&h.worker)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let hb = heartbeat(
        "w-017",
        Some(&rev),
        serde_json::json!([failover(
            "w-017-1",
            "rate_limited",
            "opencode route: 429 from upstream"
        )]),
    );
    let (s, v) = json(post(hb.to_string().into_bytes()).await.expect("post")).await;
    assert_eq!(s, 200);
    assert_eq!(v["config_revision"], rev.as_str());
    assert_eq!(v["agents"], serde_json::json!(["opencode", "claude"]));
    assert_eq!(v["heartbeat_interval_s"], 1);
    // A retry with the same failover id is ignored.
    let (s, _) = json(post(hb.to_string().into_bytes()).await.expect("post")).await;
    assert_eq!(s, 200);
    // Malformed input: precise 4xx, nothing stored.
    let mut unknown = hb.clone();
    unknown["worker"] = "w-bad".into();
    unknown["failovers"][0]["cause"]["kind"] = "transcript_said_so".into();
    let mut long = hb.clone();
    long["worker"] = "w-bad2".into();
    long["failovers"][0]["cause"]["detail"] = "x".repeat(201).into();
    let mut status = hb.clone();
    status["worker"] = "w-bad3".into();
    status["failovers"][0]["cause"]["status"] = 42.into();
    let mut huge = hb.clone();
    huge["worker"] = "w-bad4".into();
    huge["host"] = "h".repeat(70 * 1024).into();
    for (body, want) in [
        (b"{not json".to_vec(), StatusCode::BAD_REQUEST),
        (
            unknown.to_string().into_bytes(),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            long.to_string().into_bytes(),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            status.to_string().into_bytes(),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (huge.to_string().into_bytes(), StatusCode::PAYLOAD_TOO_LARGE),
    ] {
        let (s, v) = json(post(body).await.expect("post")).await;
        assert_eq!(s, want, "{v}");
        if want != StatusCode::PAYLOAD_TOO_LARGE {
            assert_eq!(code(&v), "invalid_heartbeat");
        }
    }
    let r = http
        .post(h.path("/v1/heartbeats"))
        .bearer_auth(&h.worker)
        .header("content-type", "text/plain")
        .body(hb.to_string())
        .send()
        .await
        .expect("post");
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let viewer = h.client(&h.viewer);
    let page = viewer.workers(None).await.expect("workers");
    assert_eq!(page.workers.len(), 1, "only the valid worker is known");
    let w = &page.workers[0];
    assert_eq!(
        (w.worker.as_str(), w.state, w.in_sync),
        ("w-017", WorkerState::Healthy, true)
    );
    assert_eq!(
        w.last_failover.as_ref().map(|f| f.id.as_str()),
        Some("w-017-1")
    );
    let got = eventually(40, || async {
        let p = viewer.failovers(&FailoverQuery::default()).await.ok()?;
        (!p.events.is_empty()).then_some(p)
    })
    .await
    .expect("the failover is logged");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let p = viewer
        .failovers(&FailoverQuery::default())
        .await
        .expect("failovers");
    assert_eq!(p.events.len(), 1, "a repeated id is ignored");
    assert_eq!(got.events[0].failover.cause.kind, CauseKind::RateLimited);
    assert_eq!(got.events[0].host, "gpu-node-17");
}

#[tokio::test]
async fn workers_state_sync_and_deltas() {
    let h = TestHub::start().await;
    let worker = h.client(&h.worker);
    let viewer = h.client(&h.viewer);
    let rev = viewer.config().await.expect("config").revision;
    for i in 0..5 {
        let hb: macfleet::wire::Heartbeat = serde_json::from_value(heartbeat(
            &format!("w-{i}"),
            Some(&rev),
            serde_json::json!([]),
        ))
        .expect("hb");
        worker.heartbeat(&hb).await.expect("heartbeat");
    }
    let full = viewer.workers(None).await.expect("workers");
    assert!(!full.delta);
    assert_eq!(full.workers.len(), 5);
    assert!(full.workers.iter().all(|w| w.in_sync));
    // Nothing changed: an empty delta.
    let d = viewer.workers(Some(&full.cursor)).await.expect("delta");
    assert!(d.delta);
    assert!(d.workers.is_empty(), "{:?}", d.workers);
    // One heartbeat: a delta of one.
    let hb: macfleet::wire::Heartbeat =
        serde_json::from_value(heartbeat("w-3", None, serde_json::json!([]))).expect("hb");
    worker.heartbeat(&hb).await.expect("heartbeat");
    let d = viewer.workers(Some(&d.cursor)).await.expect("delta");
    assert_eq!(d.workers.len(), 1);
    assert_eq!(d.workers[0].worker, "w-3");
    assert!(!d.workers[0].in_sync, "no revision reported: not in sync");
    // A bad cursor is a 400; a cursor from another run is a full answer.
    let r = h
        .http()
        .get(h.path("/v1/workers?since=garbage"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("req");
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let other = viewer.workers(Some("c1-1")).await.expect("old cursor");
    assert!(!other.delta);
    assert_eq!(other.workers.len(), 5);
    // By the hub's clock (interval 1 s): stale after 3 s without a heartbeat.
    let stale = eventually(120, || async {
        let p = viewer.workers(Some(&d.cursor)).await.ok()?;
        p.workers
            .iter()
            .find(|w| w.worker == "w-0" && w.state == WorkerState::Stale)
            .cloned()
    })
    .await;
    assert!(stale.is_some(), "w-0 went stale and showed up as a change");
}

#[tokio::test]
async fn failover_log_filters_and_bounds() {
    let h = TestHub::start_with(CONFIG, |o| o.bounds.failovers = 100).await;
    let worker = h.client(&h.worker);
    let viewer = h.client(&h.viewer);
    for batch in 0..30 {
        let fs: Vec<Value> = (0..10)
            .map(|i| {
                let kind = if i % 2 == 0 { "rate_limited" } else { "auth" };
                failover(&format!("f-{batch}-{i}"), kind, "route failed")
            })
            .collect();
        let hb: macfleet::wire::Heartbeat = serde_json::from_value(heartbeat(
            &format!("w-{}", batch % 3),
            None,
            Value::Array(fs),
        ))
        .expect("hb");
        worker.heartbeat(&hb).await.expect("heartbeat");
    }
    let all = eventually(100, || async {
        let p = viewer
            .failovers(&FailoverQuery {
                limit: Some(1000),
                ..Default::default()
            })
            .await
            .ok()?;
        (p.next >= 300).then_some(p)
    })
    .await
    .expect("all 300 committed");
    // Bounded: the oldest were pruned, and `oldest` says so.
    assert!(all.oldest > 1, "oldest {}", all.oldest);
    assert!(
        all.events.len() <= 110 && all.events.len() >= 100,
        "{}",
        all.events.len()
    );
    assert!(
        all.events.windows(2).all(|w| w[0].seq < w[1].seq),
        "oldest first"
    );
    // Filters.
    let auth = viewer
        .failovers(&FailoverQuery {
            kind: Some(CauseKind::Auth),
            limit: Some(1000),
            ..Default::default()
        })
        .await
        .expect("kind");
    assert!(
        !auth.events.is_empty()
            && auth
                .events
                .iter()
                .all(|e| e.failover.cause.kind == CauseKind::Auth)
    );
    let w1 = viewer
        .failovers(&FailoverQuery {
            worker: Some("w-1".into()),
            limit: Some(1000),
            ..Default::default()
        })
        .await
        .expect("worker");
    assert!(!w1.events.is_empty() && w1.events.iter().all(|e| e.worker == "w-1"));
    let by_agent = viewer
        .failovers(&FailoverQuery {
            agent: Some("pi".into()),
            ..Default::default()
        })
        .await
        .expect("agent");
    assert!(by_agent.events.is_empty());
    // Paging with since / limit / next.
    let p1 = viewer
        .failovers(&FailoverQuery {
            since: Some(0),
            limit: Some(7),
            ..Default::default()
        })
        .await
        .expect("page");
    assert_eq!(p1.events.len(), 7);
    let p2 = viewer
        .failovers(&FailoverQuery {
            since: Some(p1.next),
            limit: Some(7),
            ..Default::default()
        })
        .await
        .expect("page");
    assert!(p2.events[0].seq > p1.events[6].seq);
    // Bad filters are 400s.
    for q in [
        "limit=0",
        "limit=5000",
        "kind=bogus",
        "agent=Not%20An%20Agent",
        "since=-1",
    ] {
        let r = h
            .http()
            .get(h.path(&format!("/v1/failovers?{q}")))
            .bearer_auth(&h.viewer)
            .send()
            .await
            .expect("req");
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{q}");
    }
}

#[tokio::test]
async fn events_stream_resume_reset_and_keepalive() {
    let h = TestHub::start().await;
    let worker = h.client(&h.worker);
    let viewer = h.client(&h.viewer);
    use futures::StreamExt;
    let mut stream = Box::pin(viewer.events(None, &[]));
    let first = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("in time");
    assert_eq!(first, Some(StreamItem::Connected));
    let hb: macfleet::wire::Heartbeat = serde_json::from_value(heartbeat(
        "w-9",
        None,
        serde_json::json!([failover("x-1", "auth", "401")]),
    ))
    .expect("hb");
    worker.heartbeat(&hb).await.expect("heartbeat");
    let mut seen = Vec::new();
    let mut last_id = None;
    while seen.len() < 2 {
        match tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("in time")
        {
            Some(StreamItem::Event { id, event }) => {
                last_id = id;
                seen.push(event);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    // The failover is published once committed, which may come first.
    assert!(
        seen.iter()
            .any(|e| matches!(e, HubEvent::Heartbeat(v) if v.worker == "w-9"))
    );
    assert!(
        seen.iter()
            .any(|e| matches!(e, HubEvent::Failover(f) if f.failover.id == "x-1"))
    );
    drop(stream);
    // Missed while away: a config change; resume replays it.
    let doc = h.client(&h.owner).config().await.expect("config");
    let who = h.client(&h.owner).whoami().await.expect("who");
    Writer::new(h.client(&h.owner), &who)
        .expect("writer")
        .put_config(&format!("{}# changed\n", doc.text), &doc.revision)
        .await
        .expect("put");
    let mut resumed = Box::pin(viewer.events(last_id.clone(), &["config"]));
    assert_eq!(resumed.next().await, Some(StreamItem::Connected));
    match tokio::time::timeout(Duration::from_secs(5), resumed.next())
        .await
        .expect("in time")
    {
        Some(StreamItem::Event {
            event: HubEvent::Config(c),
            ..
        }) => assert_eq!(c.by, "alice"),
        other => panic!("expected the missed config event, got {other:?}"),
    }
    // A point the hub never had (or no longer holds): reset.
    let mut gone = Box::pin(viewer.events(Some("1".into()), &[]));
    assert_eq!(gone.next().await, Some(StreamItem::Connected));
    match tokio::time::timeout(Duration::from_secs(5), gone.next())
        .await
        .expect("in time")
    {
        Some(StreamItem::Event {
            event: HubEvent::Reset,
            ..
        }) => {}
        other => panic!("expected reset, got {other:?}"),
    }
    // Keep-alive comments flow on an idle stream (300 ms in this test hub).
    let mut r = h
        .http()
        .get(h.path("/v1/events?types=config"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("events");
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let chunk = tokio::time::timeout(Duration::from_secs(3), r.chunk())
        .await
        .expect("in time")
        .expect("chunk")
        .expect("some");
    assert!(
        String::from_utf8_lossy(&chunk).starts_with(':'),
        "a comment line"
    );
    let r = h
        .http()
        .get(h.path("/v1/events?types=bogus"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("events");
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn restart_keeps_revision_history_and_log() {
    let mut h = TestHub::start().await;
    let owner = h.client(&h.owner);
    let doc = owner.config().await.expect("config");
    let who = owner.whoami().await.expect("who");
    let accepted = Writer::new(owner.clone(), &who)
        .expect("writer")
        .put_config(&format!("{}# v2\r\n", doc.text), &doc.revision)
        .await
        .expect("put");
    let hb: macfleet::wire::Heartbeat = serde_json::from_value(heartbeat(
        "w-1",
        None,
        serde_json::json!([failover("r-1", "auth", "401")]),
    ))
    .expect("hb");
    h.client(&h.worker).heartbeat(&hb).await.expect("heartbeat");
    h.running().hub.db.flush().await.expect("flush");
    h.restart(|_| {}).await;
    let viewer = h.client(&h.viewer);
    let after = viewer.config().await.expect("config");
    assert_eq!(after.revision, accepted.revision);
    let hist = viewer.history().await.expect("history");
    assert_eq!(hist.revisions.len(), 2, "no spurious entry on restart");
    let log = viewer
        .failovers(&FailoverQuery::default())
        .await
        .expect("log");
    assert_eq!(log.events.len(), 1);
    assert_eq!(log.events[0].failover.id, "r-1");
    // The same failover sent again after the restart is still ignored.
    h.client(&h.worker).heartbeat(&hb).await.expect("heartbeat");
    h.running().hub.db.flush().await.expect("flush");
    let log = viewer
        .failovers(&FailoverQuery::default())
        .await
        .expect("log");
    assert_eq!(log.events.len(), 1);
    // A file edited while the hub was down is a new revision, said so.
    std::fs::write(
        h.config_path(),
        CONFIG.replace("# the fleet", "# edited by hand"),
    )
    .expect("write");
    h.restart(|_| {}).await;
    let hist = h.client(&h.viewer).history().await.expect("history");
    assert_eq!(hist.revisions.len(), 3);
    assert_eq!(hist.revisions[0].by, "(changed on disk)");
}

#[tokio::test]
async fn refuses_plaintext_beyond_loopback() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("hub.toml"), CONFIG).expect("write");
    let mut o = common::options(dir.path(), macfleet::hub::auth::Tokens::default());
    o.listen = ([0, 0, 0, 0], 0).into();
    let e = macfleet::hub::start(o).await.err().expect("refused");
    assert!(e.to_string().contains("--allow-plaintext"), "{e}");
    // And the client will not send a token over plain HTTP off loopback.
    let c = macfleet::client::Client::new(
        "http://hub.example:7878",
        Some(macfleet::client::Token::new("t")),
        Default::default(),
    );
    assert!(matches!(c, Err(ClientError::Plaintext(_))));
}

#[tokio::test]
async fn serves_https_with_tls_cert_and_key() {
    let ck =
        rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
            .expect("self-signed cert");
    let certs = tempfile::tempdir().expect("tempdir");
    let (cert, key) = (certs.path().join("hub.crt"), certs.path().join("hub.key"));
    std::fs::write(&cert, ck.cert.pem()).expect("cert");
    std::fs::write(&key, ck.signing_key.serialize_pem()).expect("key");
    let h = TestHub::start_with(CONFIG, |o| o.tls = Some((cert.clone(), key.clone()))).await;
    assert!(h.url().starts_with("https://127.0.0.1:"), "{}", h.url());
    let opts = macfleet::client::ClientOptions {
        ca_pem: Some(ck.cert.pem().into_bytes()),
        ..Default::default()
    };
    let c = macfleet::client::Client::new(
        &h.url(),
        Some(macfleet::client::Token::new(&h.viewer)),
        opts,
    )
    .expect("client");
    assert_eq!(c.whoami().await.expect("whoami over TLS").name, "screen");
    // Without trusting the certificate, the client refuses the hub.
    let untrusting = h.client(&h.viewer);
    assert!(matches!(
        untrusting.whoami().await,
        Err(ClientError::Unreachable(_))
    ));
    // Plain HTTP to the TLS port gets nowhere.
    let plain = h.url().replace("https://", "http://");
    let r = h.http().get(format!("{plain}/v1/health")).send().await;
    assert!(r.is_err() || !r.expect("resp").status().is_success());
}

#[tokio::test]
async fn failover_detail_is_scrubbed_at_ingest() {
    let h = TestHub::start().await;
    // Fake secrets, assembled at run time.
    let key = format!("{}{}", "sk-ant-api03-", "Zq7".repeat(31));
    let gh = format!("{}{}", "ghp_", "a1B2c3D4e5".repeat(4));
    let detail = format!("opencode route: 401 from upstream, key {key} rejected; {gh}");
    let detail: String = detail.chars().take(200).collect();
    let hb: macfleet::wire::Heartbeat = serde_json::from_value(heartbeat(
        "w-5",
        None,
        serde_json::json!([failover("s-1", "auth", &detail)]),
    ))
    .expect("hb");
    h.client(&h.worker).heartbeat(&hb).await.expect("heartbeat");
    h.running().hub.db.flush().await.expect("flush");
    let viewer = h.client(&h.viewer);
    let log = viewer
        .failovers(&FailoverQuery::default())
        .await
        .expect("log");
    let stored = log.events[0].failover.cause.detail.clone().expect("detail");
    assert!(stored.contains("[redacted:anthropic-key]"), "{stored}");
    assert!(
        stored.starts_with("opencode route: 401 from upstream"),
        "on-call keeps the status text"
    );
    assert!(
        !stored.contains(&key[..20]) && !stored.contains("Zq7Zq7"),
        "{stored}"
    );
    let page = viewer.workers(None).await.expect("workers");
    let last = page.workers[0]
        .last_failover
        .as_ref()
        .expect("last failover");
    assert_eq!(last.cause.detail.as_deref(), Some(stored.as_str()));
    // Nothing on the wire or on disk holds it.
    let raw = h
        .http()
        .get(h.path("/v1/failovers"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("req");
    assert!(!raw.text().await.expect("body").contains("Zq7Zq7"));
}

#[tokio::test]
async fn an_acknowledged_failover_is_already_committed() {
    let h = TestHub::start().await;
    let viewer = h.client(&h.viewer);
    for i in 0..5 {
        let hb: macfleet::wire::Heartbeat = serde_json::from_value(heartbeat(
            &format!("w-{i}"),
            None,
            serde_json::json!([failover(&format!("a-{i}"), "auth", "401")]),
        ))
        .expect("hb");
        h.client(&h.worker).heartbeat(&hb).await.expect("heartbeat");
        // No flush, no polling: the 200 came after the commit.
        let log = viewer
            .failovers(&FailoverQuery::default())
            .await
            .expect("log");
        assert_eq!(
            log.events.len(),
            i + 1,
            "failover {i} is in the log when acknowledged"
        );
    }
}

/// Ids are published as they are (scrubbing one would merge two workers),
/// so an id or host shaped like a secret is refused at the door with a
/// precise 422, and nothing of it is stored or shown.
#[tokio::test]
async fn ids_and_hosts_shaped_like_secrets_are_refused() {
    let h = TestHub::start().await;
    // A token body as the hub makes them, without its `mft_`: built here.
    // One that starts with `-` or `_` (1 in 32) is refused by the id's
    // charset before its shape is looked at: take one that does not.
    let body = (0..100)
        .map(|_| {
            macfleet::hub::auth::generate_token()
                .trim_start_matches("mft_")
                .to_string()
        })
        .find(|b| b.starts_with(|c: char| c.is_ascii_alphanumeric()))
        .expect("a body that starts with a letter or digit");
    let shaped = [
        ("worker", body.clone()),
        ("worker", format!("w-{}", "password.hunter2")),
        ("host", "api-key-7f3a9".to_string()),
        ("host", format!("node-{body}")),
    ];
    for (field, value) in &shaped {
        let mut hb = heartbeat("w-ok", None, serde_json::json!([]));
        hb[*field] = value.clone().into();
        let resp = h
            .http()
            .post(h.path("/v1/heartbeats"))
            .bearer_auth(&h.worker)
            .json(&hb)
            .send()
            .await
            .expect("post");
        let (s, v) = json(resp).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{field}={value}: {v}");
        assert_eq!(code(&v), "invalid_heartbeat");
        let msg = v["error"]["message"].as_str().unwrap_or_default();
        assert!(msg.contains(field) && msg.contains("credential"), "{msg}");
        assert!(
            !v.to_string().contains(value.as_str()),
            "the 422 echoes it: {v}"
        );
    }
    let page = h.client(&h.viewer).workers(None).await.expect("workers");
    assert!(
        page.workers.is_empty(),
        "nothing stored: {:?}",
        page.workers
    );
}

/// A row stored before a rule existed (or by an older hub) is served
/// through the scrubber too: what the hub publishes is scrubbed on the way
/// out, not only on the way in.
#[tokio::test]
async fn stored_rows_are_served_through_the_scrubber() {
    let mut h = TestHub::start().await;
    let hb: macfleet::wire::Heartbeat = serde_json::from_value(heartbeat(
        "w-1",
        None,
        serde_json::json!([failover("old-1", "auth", "401 from upstream")]),
    ))
    .expect("hb");
    h.client(&h.worker).heartbeat(&hb).await.expect("heartbeat");
    h.running().hub.db.flush().await.expect("flush");
    // Fake, assembled at run time.
    let key = format!("{}{}", "sk-ant-api03-", "Qw8".repeat(31));
    let raw = format!("401 from upstream, key {key}");
    h.restart(|opts| {
        let db = rusqlite::Connection::open(opts.db_path()).expect("db");
        let n = db
            .execute(
                "UPDATE failovers SET detail = ?1 WHERE id = 'old-1'",
                [&raw],
            )
            .expect("update");
        assert_eq!(n, 1, "the row is there to plant");
    })
    .await;
    let resp = h
        .http()
        .get(h.path("/v1/failovers"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("req");
    let body = resp.text().await.expect("body");
    assert!(body.contains("old-1"), "{body}");
    assert!(!body.contains("Qw8Qw8"), "served raw: {body}");
    assert!(body.contains("[redacted:"), "{body}");
}

/// Owners who share a token are told apart in History by the writing
/// client (the request's `User-Agent`, scrubbed and escaped, at most 64
/// characters).
#[tokio::test]
async fn history_records_the_writing_client() {
    let h = TestHub::start().await;
    let owner = h.client(&h.owner);
    let put = |ua: String, text: String, rev: String| {
        let http = h.http();
        let url = h.path("/v1/config");
        let token = h.owner.clone();
        async move {
            http.put(url)
                .bearer_auth(token)
                .header("user-agent", ua)
                .header("content-type", "application/toml")
                .header("if-match", format!("\"{rev}\""))
                .body(text)
                .send()
                .await
                .expect("put")
        }
    };
    let doc = owner.config().await.expect("config");
    let r = put(
        "curl/8.5.0".into(),
        format!("{}# a\r\n", doc.text),
        doc.revision,
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let hist = owner.history().await.expect("history");
    assert_eq!(hist.revisions[0].client.as_deref(), Some("curl/8.5.0"));
    // Through macfleet's own client: it names itself.
    let doc = owner.config().await.expect("config");
    let who = owner.whoami().await.expect("whoami");
    Writer::new(owner.clone(), &who)
        .expect("writer")
        .put_config(&format!("{}# b\r\n", doc.text), &doc.revision)
        .await
        .expect("put");
    let hist = owner.history().await.expect("history");
    let c = hist.revisions[0].client.clone().unwrap_or_default();
    assert!(c.starts_with("macfleet/"), "{c}");
    // A hostile User-Agent: a key made at run time, an escape, and length.
    let key = format!("{}{}", "ghp_", "a1B2c3D4e5".repeat(4));
    // (ESC cannot stand in a header; C1 CSI and a bidi override can.)
    let ua = format!("evil/1 \u{9b}2J \u{202e} {key} {}", "x".repeat(200));
    let doc = owner.config().await.expect("config");
    let r = put(ua, format!("{}# c\r\n", doc.text), doc.revision).await;
    assert_eq!(r.status(), StatusCode::OK);
    let hist = owner.history().await.expect("history");
    let c = hist.revisions[0].client.clone().unwrap_or_default();
    assert!(c.starts_with("evil/1"), "{c}");
    assert!(!c.contains('\u{9b}') && !c.contains('\u{202e}'), "{c}");
    assert!(!c.contains("a1B2c3D4e5"), "{c}");
    assert!(c.chars().count() <= 64, "{} characters", c.chars().count());
}

/// `whoami` names the hub's instance: kept across a restart of the same
/// hub, different for another hub, so a client can tell a replaced hub.
#[tokio::test]
async fn whoami_names_an_instance_that_a_restart_keeps() {
    let mut h = TestHub::start().await;
    let first = h.client(&h.viewer).whoami().await.expect("whoami");
    let id = first.instance.clone().expect("an instance");
    assert_eq!(id.len(), 16, "{id}");
    h.restart(|_| {}).await;
    let again = h.client(&h.viewer).whoami().await.expect("whoami");
    assert_eq!(
        again.instance.as_deref(),
        Some(id.as_str()),
        "a restart keeps it"
    );
    let other = TestHub::start().await;
    let theirs = other.client(&other.viewer).whoami().await.expect("whoami");
    assert_ne!(theirs.instance, first.instance, "another hub has another");
    // A fresh database at the same path is another instance.
    h.restart(|opts| {
        let db = opts.db_path();
        for ext in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
        }
    })
    .await;
    let fresh = h.client(&h.viewer).whoami().await.expect("whoami");
    assert!(fresh.instance.is_some() && fresh.instance != first.instance);
}

/// A heartbeat's `config_revision` is the hub's own word: one the hub never
/// issued (another hub's, or text of the worker's own, secret-shaped too)
/// is taken as proof of life but never published; an issued one is kept.
#[tokio::test]
async fn only_revisions_the_hub_issued_are_published() {
    let h = TestHub::start().await;
    let current = h.client(&h.viewer).config().await.expect("config").revision;
    let body = macfleet::hub::auth::generate_token()
        .trim_start_matches("mft_")
        .to_string();
    for (worker, rev) in [
        ("w-ours", current.clone()),
        ("w-other", "0123456789ab".to_string()),
        ("w-text", body.clone()),
    ] {
        let mut hb = heartbeat(worker, None, serde_json::json!([]));
        hb["config_revision"] = rev.into();
        let resp = h
            .http()
            .post(h.path("/v1/heartbeats"))
            .bearer_auth(&h.worker)
            .json(&hb)
            .send()
            .await
            .expect("post");
        let (s, v) = json(resp).await;
        assert_eq!(s, StatusCode::OK, "{worker}: {v}");
    }
    let raw = h
        .http()
        .get(h.path("/v1/workers"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("workers")
        .text()
        .await
        .expect("body");
    assert!(!raw.contains(&body), "published: {raw}");
    assert!(!raw.contains("0123456789ab"), "published: {raw}");
    let v: Value = serde_json::from_str(&raw).expect("json");
    let rev_of = |w: &str| {
        v["workers"]
            .as_array()
            .and_then(|ws| ws.iter().find(|x| x["worker"] == w))
            .map(|x| x["config_revision"].clone())
            .unwrap_or(Value::String("missing".into()))
    };
    assert_eq!(rev_of("w-ours"), Value::String(current.clone()));
    assert_eq!(rev_of("w-other"), Value::Null);
    assert_eq!(rev_of("w-text"), Value::Null);
}

/// Pages come compressed when the client asks (`zstd`, `gzip`), the same
/// JSON once decompressed, and plain when it does not; the event stream
/// stays plain whatever is asked (a compressor would hold events back).
#[tokio::test]
async fn pages_are_compressed_when_asked_and_the_stream_never() {
    use std::io::Read;
    let h = TestHub::start().await;
    for i in 0..200 {
        let hb: macfleet::wire::Heartbeat =
            serde_json::from_value(heartbeat(&format!("w-{i:04}"), None, serde_json::json!([])))
                .expect("hb");
        h.client(&h.worker).heartbeat(&hb).await.expect("heartbeat");
    }
    // A client that neither asks nor decompresses on its own.
    let raw = reqwest::Client::builder()
        .no_gzip()
        .no_zstd()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("http");
    let get = |enc: Option<&str>, path: &str| {
        let mut r = raw.get(h.path(path)).bearer_auth(&h.viewer);
        if let Some(e) = enc {
            r = r.header("accept-encoding", e);
        }
        r.send()
    };
    let plain = get(None, "/v1/workers").await.expect("plain");
    assert_eq!(plain.headers().get("content-encoding"), None);
    let plain: Value = plain.json().await.expect("json");
    assert_eq!(plain["workers"].as_array().map(Vec::len), Some(200));
    let body = |v: &Value| {
        let mut v = v.clone();
        v.as_object_mut().map(|o| o.remove("now"));
        v
    };

    let z = get(Some("zstd"), "/v1/workers").await.expect("zstd");
    assert_eq!(z.headers()["content-encoding"], "zstd");
    let bytes = z.bytes().await.expect("bytes");
    let json = zstd::decode_all(&bytes[..]).expect("zstd decodes");
    let z: Value = serde_json::from_slice(&json).expect("json");
    assert_eq!(body(&z), body(&plain));
    assert!(
        bytes.len() * 4 < json.len(),
        "{} of {}",
        bytes.len(),
        json.len()
    );

    let g = get(Some("gzip"), "/v1/workers").await.expect("gzip");
    assert_eq!(g.headers()["content-encoding"], "gzip");
    let bytes = g.bytes().await.expect("bytes");
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_end(&mut json)
        .expect("gzip decodes");
    let g: Value = serde_json::from_slice(&json).expect("json");
    assert_eq!(body(&g), body(&plain));

    // The client the TUI and the commands use asks, and reads it back.
    let page = h.client(&h.viewer).workers(None).await.expect("page");
    assert_eq!(page.workers.len(), 200);

    let s = get(Some("zstd, gzip"), "/v1/events").await.expect("events");
    assert_eq!(s.status(), StatusCode::OK);
    assert_eq!(
        s.headers().get("content-encoding"),
        None,
        "the stream is plain"
    );
}

/// A stopped hub lets go of its database: nothing of it still watches the
/// file, so a file removed after the stop is not made afresh by the old
/// hub's writer (which would race a hub started next on the same path).
#[tokio::test]
async fn a_stopped_hub_no_longer_watches_or_recreates_its_database() {
    let mut h = TestHub::start().await;
    let db = common::options(h.dir.path(), h.tokens.clone()).db_path();
    assert!(db.exists(), "{}", db.display());
    let running = h.hub.take().expect("running");
    // A task that has not ended yet (a connection, a stream) still holds
    // the hub when `stop` returns.
    let lingering = running.hub.clone();
    running.stop().await;
    for ext in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
    }
    // The writer looks at the file's identity every second when idle.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(!db.exists(), "the stopped hub made {} afresh", db.display());
    drop(lingering);
}
