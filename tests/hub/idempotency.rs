//! `Idempotency-Key` on `PUT /v1/config` (issue 27, "A write whose answer
//! was lost"), against a real `macfleet hub` process: a retry is answered
//! with the first answer and writes nothing, the same key with another
//! document is `422 idempotency_key_reused`, and the key outlives a restart,
//! also when the hub was killed between the rename and the history entry.

use crate::common;

use std::time::{Duration, Instant};

use common::HubProcess;

fn doc(n: usize) -> String {
    format!("# write {n}\n[fleet]\nMAC_CODING_AGENTS = [\"claude\", \"opencode\"]\n")
}

/// One `PUT /v1/config`: status, ETag (unquoted), body.
async fn put(
    url: &str,
    token: &str,
    body: &str,
    if_match: &str,
    key: Option<&str>,
) -> (u16, Option<String>, serde_json::Value) {
    let mut rb = reqwest::Client::new()
        .put(format!("{url}/v1/config"))
        .bearer_auth(token)
        .timeout(Duration::from_secs(20))
        .header("content-type", "application/toml")
        .header("if-match", format!("\"{if_match}\""))
        .body(body.to_string());
    if let Some(k) = key {
        rb = rb.header("idempotency-key", k);
    }
    let resp = rb.send().await.expect("put");
    let status = resp.status().as_u16();
    let etag = resp
        .headers()
        .get("etag")
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim_matches('"').to_string());
    let body = resp.json().await.unwrap_or(serde_json::Value::Null);
    (status, etag, body)
}

async fn get_json(url: &str, token: &str, path: &str) -> serde_json::Value {
    reqwest::Client::new()
        .get(format!("{url}{path}"))
        .bearer_auth(token)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json")
}

/// The document on the hub and its revision.
async fn config(url: &str, token: &str) -> (String, String) {
    let resp = reqwest::Client::new()
        .get(format!("{url}/v1/config"))
        .bearer_auth(token)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .expect("config");
    let etag = resp.headers()["etag"]
        .to_str()
        .expect("etag")
        .trim_matches('"')
        .to_string();
    (resp.text().await.expect("text"), etag)
}

async fn history_len(url: &str, token: &str) -> usize {
    get_json(url, token, "/v1/config/history").await["revisions"]
        .as_array()
        .expect("revisions")
        .len()
}

fn spawn(dir: &std::path::Path, env: &[(&str, &str)]) -> HubProcess {
    HubProcess::spawn(
        dir,
        common::Spawn {
            env,
            ..common::Spawn::default()
        },
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_retry_with_its_key_gets_the_first_answer_and_writes_once() {
    let (dir, owner, _viewer, _worker) = common::hub_dir();
    let hub = spawn(dir.path(), &[]);
    let url = hub.url.clone();
    let (_, r0) = config(&url, &owner).await;
    let key = "7f3c2a9e-1b4d-4e8a-9c61-0d2f5b8e4a17";
    let first = put(&url, &owner, &doc(1), &r0, Some(key)).await;
    assert_eq!(first.0, 200, "{first:?}");
    let r1 = first.1.clone().expect("etag");
    let len = history_len(&url, &owner).await;
    // The same request again: its If-Match names the revision it replaced,
    // which is no longer current; the key is judged first.
    let again = put(&url, &owner, &doc(1), &r0, Some(key)).await;
    assert_eq!(again, first, "the first answer: status, ETag and body");
    assert_eq!(history_len(&url, &owner).await, len, "written once");
    // A later write moves the hub on; the retry is still the first answer.
    let other = put(&url, &owner, &doc(2), &r1, Some("another-write")).await;
    assert_eq!(other.0, 200);
    let late = put(&url, &owner, &doc(1), &r0, Some(key)).await;
    assert_eq!(late, first);
    assert_eq!(config(&url, &owner).await.0, doc(2), "nothing written back");
    assert_eq!(history_len(&url, &owner).await, len + 1);
    // Without a key, the same request is judged as ever: 412.
    assert_eq!(put(&url, &owner, &doc(1), &r0, None).await.0, 412);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_key_with_another_document_is_refused_and_changes_nothing() {
    let (dir, owner, _viewer, _worker) = common::hub_dir();
    let hub = spawn(dir.path(), &[]);
    let url = hub.url.clone();
    let (_, r0) = config(&url, &owner).await;
    let (status, r1, _) = put(&url, &owner, &doc(1), &r0, Some("k-1")).await;
    assert_eq!(status, 200);
    let r1 = r1.expect("etag");
    let len = history_len(&url, &owner).await;
    // Another document under the same key, on the current revision.
    let (status, _, body) = put(&url, &owner, &doc(2), &r1, Some("k-1")).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "idempotency_key_reused");
    let message = body["error"]["message"].as_str().expect("message");
    assert!(message.contains("nothing was written"), "{message}");
    assert_eq!(config(&url, &owner).await, (doc(1), r1));
    assert_eq!(history_len(&url, &owner).await, len);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_of_a_bad_shape_is_a_400_with_a_sentence() {
    let (dir, owner, _viewer, _worker) = common::hub_dir();
    let hub = spawn(dir.path(), &[]);
    let url = hub.url.clone();
    let (text, r0) = config(&url, &owner).await;
    let long = "k".repeat(256);
    for key in [long.as_str(), ""] {
        let (status, _, body) = put(&url, &owner, &doc(1), &r0, Some(key)).await;
        assert_eq!(status, 400, "{key:?}: {body}");
        let message = body["error"]["message"].as_str().expect("message");
        assert!(message.contains("Idempotency-Key"), "{message}");
    }
    // Bytes past ASCII (a header value may carry them).
    let resp = reqwest::Client::new()
        .put(format!("{url}/v1/config"))
        .bearer_auth(&owner)
        .header("content-type", "application/toml")
        .header("if-match", format!("\"{r0}\""))
        .header(
            "idempotency-key",
            reqwest::header::HeaderValue::from_bytes(b"caf\xc3\xa9").expect("value"),
        )
        .body(doc(1))
        .send()
        .await
        .expect("put");
    assert_eq!(resp.status().as_u16(), 400);
    // 255 characters is a key.
    let (status, _, _) = put(&url, &owner, &doc(1), &r0, Some(&"k".repeat(255))).await;
    assert_eq!(status, 200);
    assert_ne!(config(&url, &owner).await.0, text);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_key_is_known_after_a_restart() {
    let (dir, owner, _viewer, _worker) = common::hub_dir();
    let hub = spawn(dir.path(), &[]);
    let (_, r0) = config(&hub.url, &owner).await;
    let first = put(&hub.url, &owner, &doc(1), &r0, Some("before-restart")).await;
    assert_eq!(first.0, 200);
    drop(hub);
    let hub = spawn(dir.path(), &[]);
    let len = history_len(&hub.url, &owner).await;
    let again = put(&hub.url, &owner, &doc(1), &r0, Some("before-restart")).await;
    assert_eq!(again, first);
    assert_eq!(history_len(&hub.url, &owner).await, len);
}

/// The lost answer of the issue: the hub renamed the new file into place
/// and was killed before it answered (held there by the test hook
/// `MACFLEET_FAULT_STALL_AFTER_RENAME_MS`). After the restart the retry
/// with the same key finds its write on the hub (200, its revision), not a
/// 412 as if someone else had written it.
#[tokio::test(flavor = "multi_thread")]
async fn a_write_killed_after_its_rename_is_found_by_its_key_after_the_restart() {
    let (dir, owner, _viewer, _worker) = common::hub_dir();
    let hub = spawn(
        dir.path(),
        &[("MACFLEET_FAULT_STALL_AFTER_RENAME_MS", "30000")],
    );
    let url = hub.url.clone();
    let (_, r0) = config(&url, &owner).await;
    let (u, o, r) = (url.clone(), owner.clone(), r0.clone());
    let pending = tokio::spawn(async move {
        let mut rb = reqwest::Client::new()
            .put(format!("{u}/v1/config"))
            .bearer_auth(&o)
            .header("content-type", "application/toml")
            .header("if-match", format!("\"{r}\""))
            .header("idempotency-key", "lost-answer");
        rb = rb.body(doc(1));
        rb.send().await.map(|r| r.status())
    });
    let path = dir.path().join("hub.toml");
    let t0 = Instant::now();
    while std::fs::read_to_string(&path).ok() != Some(doc(1)) {
        assert!(t0.elapsed() < Duration::from_secs(10), "never renamed");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(hub);
    assert!(
        pending.await.expect("task").is_err(),
        "the answer is lost with the hub"
    );
    let hub = spawn(dir.path(), &[]);
    let (status, etag, body) = put(&hub.url, &owner, &doc(1), &r0, Some("lost-answer")).await;
    assert_eq!(status, 200, "{body}");
    let (text, now) = config(&hub.url, &owner).await;
    assert_eq!(text, doc(1));
    assert_eq!(etag.as_deref(), Some(now.as_str()));
    assert_eq!(body["revision"], now.as_str());
    // Written once: the initial entry and this write.
    let hist = get_json(&hub.url, &owner, "/v1/config/history").await;
    let revisions = hist["revisions"].as_array().expect("revisions");
    assert_eq!(revisions.len(), 2, "{hist}");
    assert_eq!(revisions[0]["by"], "alice");
}

/// A key outlives the database file it was kept in (issue 27): the hub's
/// `hub.db` removed under it is made afresh with the keys the hub held,
/// so a retry after that is still answered with the first answer, not
/// judged again as a new write (here its If-Match, made stale by its own
/// write, would be a 412 saying someone else wrote it).
#[tokio::test(flavor = "multi_thread")]
async fn a_key_outlives_a_database_made_afresh() {
    let (dir, owner, _viewer, _worker) = common::hub_dir();
    let hub = spawn(dir.path(), &[]);
    let (_, r0) = config(&hub.url, &owner).await;
    let first = put(&hub.url, &owner, &doc(1), &r0, Some("kept-past-the-file")).await;
    assert_eq!(first.0, 200, "{:?}", first.2);
    let len = history_len(&hub.url, &owner).await;
    for name in ["hub.db", "hub.db-wal", "hub.db-shm"] {
        let _ = std::fs::remove_file(dir.path().join(name));
    }
    let t0 = Instant::now();
    loop {
        let health = reqwest::Client::new()
            .get(format!("{}/v1/health", hub.url))
            .header("accept", "application/json")
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .expect("health")
            .text()
            .await
            .expect("text");
        if health.contains("removed or replaced") {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "never remade: {health}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let again = put(&hub.url, &owner, &doc(1), &r0, Some("kept-past-the-file")).await;
    assert_eq!(again, first, "the first answer again");
    assert!(history_len(&hub.url, &owner).await <= len, "written once");
    // And after a restart on the remade file.
    drop(hub);
    let hub = spawn(dir.path(), &[]);
    let again = put(&hub.url, &owner, &doc(1), &r0, Some("kept-past-the-file")).await;
    assert_eq!(again, first, "the first answer after the restart");
}
