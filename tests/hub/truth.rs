//! Issue 28's hub side: recoveries kept in the database (a restart keeps
//! them and their seqs carry on; one pool's flood leaves another's),
//! failovers dated in the future ordered by when the hub received them,
//! and a worker in sync only on the revision and the list it was told.

use std::time::Duration;

use crate::common::{self, HubProcess, Spawn, TestHub, ago, eventually};
use macfleet::client::FailoverQuery;
use macfleet::wire::RecoveriesPage;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// A heartbeat on common's list (opencode, claude) standing on `active`,
/// with `failovers`.
fn beat(worker: &str, active: &str, failovers: Value) -> Value {
    let mut hb = common::heartbeat(worker, None, failovers);
    hb["active_agent"] = json!(active);
    hb
}

/// A failover away from opencode `secs` seconds ago.
fn away(id: &str, secs: i64) -> Value {
    json!({"id": id, "at": ago(secs), "from": "opencode", "to": "claude",
           "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router"}})
}

async fn post(http: &reqwest::Client, url: &str, token: &str, body: &Value) -> StatusCode {
    http.post(format!("{url}/v1/heartbeats"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .expect("heartbeat")
        .status()
}

async fn page(http: &reqwest::Client, url: &str, token: &str, q: &str) -> RecoveriesPage {
    http.get(format!("{url}/v1/recoveries{q}"))
        .bearer_auth(token)
        .send()
        .await
        .expect("recoveries")
        .json()
        .await
        .expect("a page")
}

/// Off claude back onto opencode: one recovery of `worker`.
async fn recover(http: &reqwest::Client, url: &str, token: &str, worker: &str) {
    let down = beat(worker, "claude", json!([away(&format!("{worker}-f"), 120)]));
    assert_eq!(post(http, url, token, &down).await, StatusCode::OK);
    let up = beat(worker, "opencode", json!([]));
    assert_eq!(post(http, url, token, &up).await, StatusCode::OK);
}

/// The recovery log as a `macfleet hub` process keeps it: committed, it
/// survives a SIGKILL and the restart after it, the same records with the
/// same seqs, and the next recovery's seq carries on past them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_the_recoveries_and_their_seqs_carry_on() {
    let (dir, _owner, viewer, worker) = common::hub_dir();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("http");
    let mut hub = HubProcess::spawn(dir.path(), Spawn::default());
    for w in ["w-1", "w-2"] {
        recover(&http, &hub.url, &worker, w).await;
    }
    let before = eventually(100, || async {
        let p = page(&http, &hub.url, &viewer, "").await;
        (p.events.len() == 2).then_some(p)
    })
    .await
    .expect("two recoveries committed within 5 s");
    hub.stop();

    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    let after = page(&http, &hub.url, &viewer, "").await;
    assert_eq!(after.events, before.events, "the restart kept them");
    assert_eq!(after.oldest, before.events[0].seq);
    let hour_ago = chrono::Utc::now() - chrono::Duration::hours(1);
    assert!(after.events.iter().all(|r| r.at > hour_ago));
    // A `since` from before the restart pages on from there.
    let since = format!("?since={}", before.events[0].seq);
    let rest = page(&http, &hub.url, &viewer, &since).await;
    assert_eq!(rest.events, before.events[1..]);
    assert_eq!(rest.next, before.events[1].seq, "the head survived too");

    // The first heartbeat after a restart is no recovery; the next move
    // up is, and its seq carries on past the last one before.
    recover(&http, &hub.url, &worker, "w-3").await;
    let last = before.events[1].seq;
    let next = eventually(100, || async {
        let p = page(&http, &hub.url, &viewer, &format!("?since={last}")).await;
        p.events.into_iter().next()
    })
    .await
    .expect("a third recovery within 5 s");
    assert_eq!(next.worker, "w-3");
    assert!(next.seq > last, "{} after {last}", next.seq);
}

/// One pool flooding recoveries past the log's bound loses its own oldest
/// and never another pool's (the failover log's fair share), and nothing
/// it sent waited on the disk or was refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pool_flooding_recoveries_leaves_another_pools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b, _b2, _owner, viewer) = crate::hostile::pool_tokens(dir.path());
    let text = std::fs::read_to_string(dir.path().join("tokens.toml")).expect("tokens");
    let tokens = macfleet::hub::auth::Tokens::parse(&text, "t").expect("tokens");
    const BOUND: u64 = 200;
    let h = TestHub::start_with(common::CONFIG, |o| {
        o.tokens = tokens;
        o.bounds.failovers = BOUND;
    })
    .await;
    let http = h.http();
    let url = h.url();
    // Pool b: five recoveries of one worker, first.
    for i in 0..5 {
        let down = beat("w-b", "claude", json!([away(&format!("b-{i}"), 120 - i)]));
        assert_eq!(post(&http, &url, &b, &down).await, StatusCode::OK);
        assert_eq!(
            post(&http, &url, &b, &beat("w-b", "opencode", json!([]))).await,
            StatusCode::OK
        );
    }
    let theirs = FailoverQuery {
        worker: Some("w-b".into()),
        limit: Some(1000),
        ..Default::default()
    };
    let viewer_c = h.client(&viewer);
    eventually(100, || async {
        let p = viewer_c.recoveries(&theirs).await.ok()?;
        (p.events.len() == 5).then_some(())
    })
    .await
    .expect("pool b's five recoveries");
    // Pool a: two and a half times the bound, each worker off and back on
    // (its first heartbeat on opencode, then claude, then opencode).
    const FLOOD: usize = 500;
    use futures::StreamExt;
    let mut sent = futures::stream::iter((0..FLOOD).map(|k| {
        let (http, url, a) = (http.clone(), url.clone(), a.clone());
        async move {
            let w = format!("w-a{k}");
            let first = post(&http, &url, &a, &beat(&w, "opencode", json!([]))).await;
            let down = post(&http, &url, &a, &beat(&w, "claude", json!([]))).await;
            let up = post(&http, &url, &a, &beat(&w, "opencode", json!([]))).await;
            [first, down, up]
        }
    }))
    .buffer_unordered(8);
    while let Some(s) = sent.next().await {
        assert_eq!(s, [StatusCode::OK; 3], "a pool's heartbeats are all taken");
    }
    // Every recovery of a's flood commits soon after its heartbeat.
    let all = eventually(200, || async {
        let mut q = FailoverQuery {
            limit: Some(1000),
            ..Default::default()
        };
        let mut n = 0usize;
        let mut a_seen = 0usize;
        loop {
            let p = viewer_c.recoveries(&q).await.ok()?;
            n += p.events.len();
            a_seen += p
                .events
                .iter()
                .filter(|r| r.worker.starts_with("w-a"))
                .count();
            if p.events.len() < 1000 {
                break;
            }
            q.since = Some(p.next);
        }
        // Pruned in ~1% steps: a holds its fair share, give or take a step.
        (a_seen >= 150 && n as u64 <= BOUND + BOUND / 100 + 5).then_some((n, a_seen))
    })
    .await;
    let p = viewer_c.recoveries(&theirs).await.expect("b's");
    assert_eq!(
        p.events.len(),
        5,
        "pool b's recoveries all survive a's flood"
    );
    let (n, a_seen) = all.expect("a's flood pruned to the bound within 10 s");
    eprintln!("{n} recoveries held after the flood, {a_seen} of pool a");
}
