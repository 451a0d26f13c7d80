//! What a hostile or broken client sends, against the real reference hub on
//! a loopback port: each gets a precise 4xx with the JSON error body, and
//! nothing the hub stores changes or becomes unreadable.

mod common;

use common::{TestHub, ago, eventually, failover, heartbeat};
use macfleet::client::FailoverQuery;
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn json_of(resp: reqwest::Response) -> (StatusCode, Value) {
    let status = resp.status();
    let v = resp.json::<Value>().await.unwrap_or(Value::Null);
    (status, v)
}

async fn post_heartbeat(h: &TestHub, body: &Value) -> (StatusCode, Value) {
    let r = h
        .http()
        .post(h.path("/v1/heartbeats"))
        .bearer_auth(&h.worker)
        .json(body)
        .send()
        .await
        .expect("post");
    json_of(r).await
}

/// Wait until the log holds `n` failovers (they are committed in batches).
async fn failovers_logged(h: &TestHub, n: usize) -> Vec<String> {
    let viewer = h.client(&h.viewer);
    eventually(100, || async {
        let p = viewer.failovers(&FailoverQuery::default()).await.ok()?;
        (p.events.len() == n).then(|| p.events.into_iter().map(|e| e.failover.id).collect())
    })
    .await
    .unwrap_or_else(|| panic!("{n} failovers logged"))
}

/// Issue #10 item 1: times that parse but land outside year 1..9999 in UTC
/// (or far from the hub's clock) are refused with 422, name the field, and
/// store nothing; times up to a week (and more) back are accepted, since the
/// demo back-fills the last hour through the API.
#[tokio::test]
async fn failover_times_far_from_the_hubs_clock_are_refused() {
    let h = TestHub::start().await;
    let with_at = |id: &str, at: &str| {
        let mut f = failover(id, "rate_limited", "429 from upstream");
        f["at"] = json!(at);
        heartbeat("w-time", None, json!([f]))
    };
    let week_ago = ago(7 * 24 * 3600);
    let (s, v) = post_heartbeat(&h, &with_at("ok-week", &week_ago)).await;
    assert_eq!(s, StatusCode::OK, "a week back is accepted: {v}");
    let (s, v) = post_heartbeat(&h, &with_at("ok-now", &ago(0))).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    failovers_logged(&h, 2).await;

    let bad = [
        "9999-12-31T23:59:59-23:59".to_string(),
        "0000-01-01T00:00:00+23:59".to_string(),
        "9999-12-31T23:59:59Z".to_string(),
        "0001-01-01T00:00:00Z".to_string(),
        ago(-3600),
        ago(31 * 24 * 3600),
    ];
    for (i, at) in bad.iter().enumerate() {
        let (s, v) = post_heartbeat(&h, &with_at(&format!("bad-{i}"), at)).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{at}: {v}");
        assert_eq!(v["error"]["code"], "invalid_heartbeat", "{at}");
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(msg.starts_with("failovers[0].at:"), "{at}: {msg}");
        assert!(!msg.contains(at.as_str()), "the message names, not echoes");
    }
    // The heartbeat's own time is judged the same way.
    let mut hb = heartbeat("w-time", None, json!([]));
    hb["sent_at"] = json!("9999-12-31T23:59:59-23:59");
    let (s, v) = post_heartbeat(&h, &hb).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("sent_at:")
    );

    // Nothing of the refused ones was stored; the log still reads.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let viewer = h.client(&h.viewer);
    let p = viewer
        .failovers(&FailoverQuery::default())
        .await
        .expect("the log reads");
    let ids: Vec<&str> = p.events.iter().map(|e| e.failover.id.as_str()).collect();
    assert_eq!(ids, ["ok-week", "ok-now"]);
    let w = viewer.workers(None).await.expect("workers");
    assert_eq!(w.workers.len(), 1);
}

/// Issue #10 item 1, the database already poisoned (by an older hub, or by
/// hand): an unreadable row is skipped and the rest of the page, the
/// filters, the paging and the history all still answer, across a restart.
#[tokio::test]
async fn an_unreadable_stored_row_never_takes_a_page_down() {
    let mut h = TestHub::start().await;
    let fo = |id: &str| heartbeat("w-db", None, json!([failover(id, "rate_limited", "429")]));
    for id in ["before-1", "before-2"] {
        let (s, v) = post_heartbeat(&h, &fo(id)).await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    failovers_logged(&h, 2).await;
    if let Some(hub) = h.hub.take() {
        hub.stop().await;
    }
    // Poison the file the way the hub did, plus a row no time
    // parser would take, and an unreadable history entry.
    let db = rusqlite::Connection::open(h.dir.path().join("hub.db")).expect("open the db");
    let insert = "INSERT INTO failovers (worker, host, received_at, id, at, from_agent, to_agent, kind, status, source, detail) \
                  VALUES ('w-db', 'gpu-node-17', ?1, ?2, ?3, 'opencode', 'claude', 'rate_limited', 429, 'hub_router', 'x')";
    let now = ago(0);
    for (id, at, received) in [
        ("poison-1", "+10000-01-01T23:58:59Z", now.as_str()),
        ("poison-2", "2026-11-29T15:03:58Z", "yesterday"),
        ("poison-3", "2026-11-29T15:03:58Z", "+10000-01-01T23:58:59Z"),
    ] {
        db.execute(insert, rusqlite::params![received, id, at])
            .expect("insert a bad row");
    }
    db.execute(
        "INSERT INTO history (revision, at, by, agents, previous_agents) VALUES ('rbad', '+10000-01-01T23:58:59Z', 'x', '[]', '[]')",
        [],
    )
    .expect("insert a bad history row");
    drop(db);
    h.restart(|_| {}).await;

    let (s, v) = post_heartbeat(&h, &fo("after-1")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let ids = failovers_logged(&h, 3).await;
    assert_eq!(ids, ["before-1", "before-2", "after-1"]);
    let viewer = h.client(&h.viewer);
    // A filter that meets the bad rows, and paging one row at a time: every
    // page answers, and the pages together hold every readable row.
    let by_worker = viewer
        .failovers(&FailoverQuery {
            worker: Some("w-db".into()),
            ..Default::default()
        })
        .await
        .expect("worker filter");
    assert_eq!(by_worker.events.len(), 3);
    let mut since = 0;
    let mut paged = Vec::new();
    for _ in 0..20 {
        let p = viewer
            .failovers(&FailoverQuery {
                since: Some(since),
                limit: Some(1),
                ..Default::default()
            })
            .await
            .expect("every page answers");
        paged.extend(p.events.into_iter().map(|e| e.failover.id));
        if p.next == since {
            break;
        }
        since = p.next;
    }
    assert_eq!(paged, ["before-1", "before-2", "after-1"]);
    // Each bad row counted once: three failovers, and the history entry the
    // hub met at start when it looked for the newest revision.
    let db = &h.running().hub.db;
    assert_eq!(db.unreadable_rows(), 4);
    // The history answers without the bad entry.
    let hist = viewer.history().await.expect("history reads");
    assert!(!hist.revisions.is_empty());
    assert!(hist.revisions.iter().all(|r| r.revision != "rbad"));
    assert_eq!(
        hist.revisions
            .iter()
            .filter(|r| r.by == "(initial)")
            .count(),
        1,
        "the restart found the newest readable revision and recorded none"
    );
    assert_eq!(db.unreadable_rows(), 4);
    // And the scripted command a person runs exits 0.
    let env = [
        ("MAC_HUB_URL".to_string(), h.url()),
        ("MAC_HUB_TOKEN".to_string(), h.viewer.clone()),
    ];
    let out = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        common::macfleet(&["get", "failovers", "-o", "json"], &env)
    })
    .await
    .expect("macfleet ran");
    assert!(
        out.status.success(),
        "get failovers: {}",
        common::text(&out.stderr)
    );
    assert!(common::text(&out.stdout).contains("after-1"));
}

/// Issue #10 item 7: worker tokens authenticate a pool, not a worker, so
/// any of them may report for any worker id; but one token cannot pre-empt
/// another's failover id: ids are unique per (worker, token). A retry from
/// the same token is still ignored.
#[tokio::test]
async fn a_token_cannot_preempt_another_tokens_failover_id() {
    use macfleet::hub::auth;
    use macfleet::wire::Role;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("hub.toml"), common::CONFIG).expect("config");
    let tok = |n: &str| format!("{}{}", "mft_test_", n.repeat(8));
    let (viewer, pool_a, pool_b) = (tok("v"), tok("a"), tok("b"));
    let text = [
        auth::token_entry("screen", Role::Viewer, &viewer),
        auth::token_entry("pool-a", Role::Worker, &pool_a),
        auth::token_entry("pool-b", Role::Worker, &pool_b),
    ]
    .join("\n");
    let tokens = auth::Tokens::parse(&text, "test").expect("tokens");
    let hub = macfleet::hub::start(common::options(dir.path(), tokens))
        .await
        .expect("hub");
    let http = reqwest::Client::new();
    let post = |token: &str, detail: &str| {
        http.post(format!("{}/v1/heartbeats", hub.url()))
            .bearer_auth(token)
            .json(&heartbeat(
                "w-1",
                None,
                json!([failover("w-1-000001", "rate_limited", detail)]),
            ))
            .send()
    };
    for (token, detail) in [
        (&pool_b, "forged"),
        (&pool_a, "real"),
        (&pool_a, "real, retried"),
    ] {
        let r = post(token, detail).await.expect("post");
        assert_eq!(r.status(), StatusCode::OK);
    }
    let client = macfleet::client::Client::new(
        &hub.url(),
        Some(macfleet::client::Token::new(&viewer)),
        macfleet::client::ClientOptions::default(),
    )
    .expect("client");
    let got = eventually(100, || async {
        let p = client.failovers(&FailoverQuery::default()).await.ok()?;
        (p.events.len() == 2).then_some(p)
    })
    .await
    .expect("both failovers logged");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let p = client
        .failovers(&FailoverQuery::default())
        .await
        .expect("failovers");
    assert_eq!(p.events.len(), 2, "the retry was ignored");
    let details: Vec<_> = got
        .events
        .iter()
        .map(|e| e.failover.cause.detail.clone().unwrap_or_default())
        .collect();
    assert_eq!(details, ["forged", "real"]);
    hub.stop().await;
}
