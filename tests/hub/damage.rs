//! A damaged database and a config the hub cannot read or replace, under a
//! real `macfleet hub` process (issue 29, "The database"): the damage is
//! noticed within 2 s, the file set aside (never deleted) and made afresh
//! from what the hub holds; what must be durable is refused with 503 while
//! it cannot be; a start on a damaged file starts and says what was lost;
//! health says `degraded` with the reason while the next write or start
//! would fail.

use crate::common::{self, HubProcess, Spawn};

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use macfleet::hub::auth;
use macfleet::wire::Role;
use reqwest::StatusCode;
use serde_json::Value;

const VALID: &str = "[fleet]\nMAC_CODING_AGENTS = [\"claude\", \"opencode\"]\n";
const OTHER: &str = "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"pi\"]\n";

/// A hub directory with a second worker token, of another pool (`other`).
fn hub_dir() -> (tempfile::TempDir, Tokens) {
    let (dir, owner, viewer, worker) = common::hub_dir();
    let other = format!("{}{}", "mft_test_", "othr".repeat(6));
    let path = dir.path().join("tokens.toml");
    let mut text = std::fs::read_to_string(&path).expect("tokens");
    text.push('\n');
    text.push_str(&auth::token_entry("other", Role::Worker, &other));
    std::fs::write(&path, text).expect("tokens");
    (
        dir,
        Tokens {
            owner,
            viewer,
            worker,
            other,
        },
    )
}

struct Tokens {
    owner: String,
    viewer: String,
    worker: String,
    other: String,
}

fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .expect("http")
}

/// A heartbeat's status, `Retry-After` and body.
async fn post(hub: &HubProcess, token: &str, hb: &Value) -> (StatusCode, Option<String>, Value) {
    let r = http()
        .post(hub.path("/v1/heartbeats"))
        .bearer_auth(token)
        .json(hb)
        .send()
        .await
        .expect("POST heartbeat");
    let status = r.status();
    let retry = common::header(&r, "retry-after");
    (status, retry, r.json().await.unwrap_or(Value::Null))
}

async fn get(hub: &HubProcess, token: &str, p: &str) -> (StatusCode, Value) {
    let r = http()
        .get(hub.path(p))
        .bearer_auth(token)
        .send()
        .await
        .expect("GET");
    let status = r.status();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn etag(hub: &HubProcess, owner: &str) -> String {
    let r = http()
        .get(hub.path("/v1/config"))
        .bearer_auth(owner)
        .send()
        .await
        .expect("GET config");
    common::header(&r, "etag").unwrap_or_default()
}

/// A `PUT` on the current revision: status, `Retry-After`, body.
async fn put(hub: &HubProcess, owner: &str, body: &str) -> (StatusCode, Option<String>, Value) {
    let tag = etag(hub, owner).await;
    let r = http()
        .put(hub.path("/v1/config"))
        .bearer_auth(owner)
        .header("content-type", "application/toml")
        .header("if-match", if tag.is_empty() { "*".into() } else { tag })
        .body(body.to_string())
        .send()
        .await
        .expect("PUT config");
    let status = r.status();
    let retry = common::header(&r, "retry-after");
    (status, retry, r.json().await.unwrap_or(Value::Null))
}

async fn health(hub: &HubProcess) -> Value {
    http()
        .get(hub.path("/v1/health"))
        .header("accept", "application/json")
        .send()
        .await
        .expect("health")
        .json()
        .await
        .expect("health JSON")
}

/// Health once a problem matching `what` is in it, within `within`.
async fn until_problem(hub: &HubProcess, within: Duration, what: impl Fn(&str) -> bool) -> Value {
    let t0 = Instant::now();
    loop {
        let h = health(hub).await;
        let found = h["problems"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p.as_str().is_some_and(&what)));
        if found {
            assert_eq!(h["status"], "degraded", "{h}");
            return h;
        }
        assert!(t0.elapsed() < within, "never said within {within:?}: {h}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn problem<'a>(h: &'a Value, what: &str) -> &'a str {
    h["problems"]
        .as_array()
        .and_then(|p| {
            p.iter()
                .filter_map(Value::as_str)
                .find(|p| p.contains(what))
        })
        .unwrap_or_else(|| panic!("no problem with {what:?}: {h}"))
}

async fn instance(hub: &HubProcess, owner: &str) -> String {
    let (s, v) = get(hub, owner, "/v1/whoami").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["instance"].as_str().expect("instance").to_string()
}

async fn failover_ids(hub: &HubProcess, viewer: &str) -> Vec<String> {
    let (s, v) = get(hub, viewer, "/v1/failovers?since=0&limit=1000").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    v["events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e["id"].as_str().map(str::to_string))
        .collect()
}

async fn newest_history(hub: &HubProcess, owner: &str) -> (String, String) {
    let (s, v) = get(hub, owner, "/v1/config/history").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let e = &v["revisions"][0];
    (
        e["revision"].as_str().unwrap_or_default().to_string(),
        e["by"].as_str().unwrap_or_default().to_string(),
    )
}

/// The files set aside beside `db` (`<name>.damaged-<UTC time>`, not
/// their `-wal` and `-shm`).
fn set_aside(db: &Path) -> Vec<PathBuf> {
    let name = db.file_name().expect("name").to_string_lossy().into_owned();
    let mut out: Vec<PathBuf> = std::fs::read_dir(db.parent().expect("dir"))
        .expect("ls")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.starts_with(&format!("{name}.damaged-"))
                    && !n.ends_with("-wal")
                    && !n.ends_with("-shm")
            })
        })
        .collect();
    out.sort();
    out
}

/// `truncate -s 0`: the file keeps its inode.
fn truncate(path: &Path) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open")
        .set_len(0)
        .expect("truncate");
}

fn heartbeat(worker: &str, failovers: &[&str]) -> Value {
    let fos: Vec<Value> = failovers
        .iter()
        .map(|id| common::failover(id, "rate_limited", "cap"))
        .collect();
    let mut hb = common::heartbeat(worker, None, Value::Array(fos));
    // A rung it can run below its active one: a lone worker one failure
    // from no route is AT RISK and health `degraded` (issue 28).
    hb["agents"] = serde_json::json!(["opencode", "claude", "pi"]);
    hb["capabilities"]["pi"] =
        serde_json::json!({"binary": true, "token": true, "preflight": "ok"});
    hb
}

/// `truncate -s 0 hub.db` under a running hub (the identity check alone
/// misses it: same inode). Within 2 s the hub finds it, moves the file
/// aside as `hub.db.damaged-<UTC time>` (kept, not deleted) and makes it
/// afresh from what it holds: its instance id (a TUI sees the same hub),
/// every pool binding (another pool still cannot take a worker id, after
/// a restart too), the history's head; the heartbeat and the write made
/// after it are in the fresh file, and a restart starts on it. Before: 200s
/// into the damaged file, health `ok`, and the next start refused with
/// `database disk image is malformed`.
#[tokio::test(flavor = "multi_thread")]
async fn a_truncated_database_is_set_aside_and_made_afresh_from_what_the_hub_holds() {
    let (dir, t) = hub_dir();
    let db = dir.path().join("hub.db");
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &["f-1"])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, _, v) = put(&hub, &t.owner, VALID).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let written = v["revision"].as_str().expect("revision").to_string();
    let id = instance(&hub, &t.owner).await;
    assert_eq!(health(&hub).await["status"], "ok");

    truncate(&db);
    let t0 = Instant::now();
    let h = until_problem(&hub, Duration::from_secs(2), |p| p.contains("damaged")).await;
    let noticed = t0.elapsed();
    let p = problem(&h, "damaged");
    assert!(
        p.contains("hub.db") && p.contains("moved aside to") && p.contains(".damaged-"),
        "{p}"
    );
    assert!(
        p.contains("instance id") && p.contains("1 pool binding"),
        "{p}"
    );
    eprintln!("noticed in {noticed:?}: {p}");
    let aside = set_aside(&db);
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        std::fs::metadata(&aside[0]).expect("kept").len(),
        0,
        "as it was found"
    );
    assert!(
        hub.logged(|l| l.contains("moved aside to")).await,
        "the log says so: {}",
        hub.log()
    );

    // The same hub, the same bindings, the same list; what comes now is in
    // the fresh file.
    assert_eq!(instance(&hub, &t.owner).await, id);
    assert_eq!(
        newest_history(&hub, &t.owner).await,
        (written.clone(), "alice".into())
    );
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &["f-2"])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, _, v) = post(&hub, &t.other, &heartbeat("w-1", &[])).await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    let (s, _, v) = put(&hub, &t.owner, OTHER).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let second = v["revision"].as_str().expect("revision").to_string();
    let ids = failover_ids(&hub, &t.viewer).await;
    // f-1 was in the damaged file's WAL (a young database, never
    // checkpointed), and copied from it.
    assert!(
        ids.contains(&"f-1".into()) && ids.contains(&"f-2".into()),
        "{ids:?}"
    );

    drop(hub);
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    assert_eq!(
        instance(&hub, &t.owner).await,
        id,
        "a restart is the same hub"
    );
    assert_eq!(
        newest_history(&hub, &t.owner).await,
        (second, "alice".into())
    );
    assert!(failover_ids(&hub, &t.viewer).await.contains(&"f-2".into()));
    // Sent first after the restart: the binding is in the fresh file.
    let (s, _, v) = post(&hub, &t.other, &heartbeat("w-1", &[])).await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    assert_eq!(set_aside(&db).len(), 1, "nothing else set aside");
}

/// `rm hub.db hub.db-wal hub.db-shm` under the running hub shares the
/// remake: the fresh file keeps the instance id (before: a new one, so a
/// TUI took the same hub for another) and every pool binding (before:
/// gone, so after a restart another pool's token took the worker id).
#[tokio::test(flavor = "multi_thread")]
async fn a_database_removed_under_the_hub_keeps_its_instance_and_bindings() {
    let (dir, t) = hub_dir();
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &["f-1"])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let id = instance(&hub, &t.owner).await;
    for name in ["hub.db", "hub.db-wal", "hub.db-shm"] {
        let _ = std::fs::remove_file(dir.path().join(name));
    }
    until_problem(&hub, Duration::from_secs(2), |p| {
        p.contains("removed or replaced")
    })
    .await;
    assert_eq!(instance(&hub, &t.owner).await, id);
    drop(hub);
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    assert_eq!(
        instance(&hub, &t.owner).await,
        id,
        "the same hub after a restart"
    );
    let (s, _, v) = post(&hub, &t.other, &heartbeat("w-1", &[])).await;
    assert_eq!(s, StatusCode::CONFLICT, "sent first after the restart: {v}");
}

/// A start on a damaged file (a hub stopped, then its `hub.db` cut to
/// half its length: what a truncation under an older hub that went on
/// writing left, as the issue found it): the hub starts, moves it aside and
/// says what it kept and lost, in health and the log. Before: it refused
/// to start, every time, with `database disk image is malformed`.
#[tokio::test(flavor = "multi_thread")]
async fn a_start_on_a_damaged_database_sets_it_aside_and_says_what_was_lost() {
    let (dir, t) = hub_dir();
    let db = dir.path().join("hub.db");
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    for i in 0..10 {
        let ids: Vec<String> = (0..100).map(|j| format!("f-{i}-{j}")).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &ids)).await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    let (s, _, v) = put(&hub, &t.owner, VALID).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    stop(hub);
    let len = std::fs::metadata(&db).expect("hub.db").len();
    assert!(len > 64 * 1024, "{len} bytes");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .expect("open")
        .set_len(len / 2)
        .expect("cut");

    let hub = HubProcess::try_spawn(dir.path(), Spawn::default())
        .unwrap_or_else(|log| panic!("the hub refused to start on the damaged file:\n{log}"));
    let h = health(&hub).await;
    assert_eq!(h["status"], "degraded", "{h}");
    let p = problem(&h, "damaged when the hub started");
    assert!(p.contains("moved aside to") && p.contains("kept"), "{p}");
    eprintln!("{p}");
    let aside = set_aside(&db);
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        std::fs::metadata(&aside[0]).expect("kept").len(),
        len / 2,
        "kept as it was found"
    );
    assert!(hub.log().contains("is damaged"), "{}", hub.log());
    // It serves, and takes what must be durable.
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-2", &["g-1"])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, _, v) = put(&hub, &t.owner, OTHER).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert!(failover_ids(&hub, &t.viewer).await.contains(&"g-1".into()));
    // And it starts again on the fresh file, with nothing more set aside.
    drop(hub);
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    assert!(failover_ids(&hub, &t.viewer).await.contains(&"g-1".into()));
    assert_eq!(set_aside(&db).len(), 1);
}

/// The first `n` events of a raw `GET /v1/events?types=…` (the typed
/// client skips kinds it does not know), as (id, event, data), each within
/// 3 s; fewer when the stream goes quiet.
async fn first_events(
    hub: &HubProcess,
    token: &str,
    types: &str,
    n: usize,
) -> Vec<(String, String, Value)> {
    use eventsource_stream::Eventsource;
    use futures::StreamExt;
    let r = reqwest::Client::new()
        .get(hub.path(&format!("/v1/events?types={types}")))
        .bearer_auth(token)
        .send()
        .await
        .expect("GET /v1/events");
    assert_eq!(r.status(), StatusCode::OK);
    let mut events = r.bytes_stream().eventsource();
    let mut out = Vec::new();
    while out.len() < n {
        match tokio::time::timeout(Duration::from_secs(3), events.next()).await {
            Ok(Some(Ok(e))) => {
                let data = serde_json::from_str(&e.data).unwrap_or(Value::Null);
                out.push((e.id, e.event, data));
            }
            _ => break,
        }
    }
    out
}

/// A problem found at start (a damaged database moved aside), before
/// anyone subscribed, reaches each subscriber that connects later: every
/// problem known is sent first, once, as an `event: problem` without an
/// id (health's sentence, its kind and file), then the feed. Before: it
/// was in `/v1/health` only, and a TUI never heard of it. A subscriber
/// that did not ask for `problem` is not sent it.
#[tokio::test(flavor = "multi_thread")]
async fn a_problem_found_at_start_is_sent_to_each_subscriber_on_connect() {
    let (dir, t) = hub_dir();
    let db = dir.path().join("hub.db");
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    for i in 0..10 {
        let ids: Vec<String> = (0..100).map(|j| format!("f-{i}-{j}")).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &ids)).await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    stop(hub);
    let len = std::fs::metadata(&db).expect("hub.db").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&db)
        .expect("open")
        .set_len(len / 2)
        .expect("cut");
    let hub = HubProcess::try_spawn(dir.path(), Spawn::default())
        .unwrap_or_else(|log| panic!("the hub refused to start on the damaged file:\n{log}"));
    let said = problem(&health(&hub).await, "damaged when the hub started").to_string();
    tokio::time::sleep(Duration::from_millis(300)).await;

    for _subscriber in 0..2 {
        let watch = tokio::spawn({
            let (url, worker) = (hub.path("/v1/heartbeats"), t.worker.clone());
            async move {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let r = http()
                    .post(url)
                    .bearer_auth(worker)
                    .json(&heartbeat("w-2", &[]))
                    .send()
                    .await;
                r.map(|r| r.status())
            }
        });
        let got = first_events(&hub, &t.viewer, "problem,heartbeat", 3).await;
        let s = watch.await.expect("join").expect("heartbeat");
        assert_eq!(s, StatusCode::OK);
        let names: Vec<&str> = got.iter().map(|(_, e, _)| e.as_str()).collect();
        assert_eq!(names, ["problem", "heartbeat"], "{got:?}");
        let (id, _, p) = &got[0];
        assert_eq!(id, "", "not in the feed: no id");
        assert_eq!(p["kind"], "database_damaged", "{p}");
        assert_eq!(p["message"].as_str(), Some(said.as_str()), "{p}");
        let aside = set_aside(&db);
        assert_eq!(p["path"].as_str(), aside[0].to_str(), "{p}");
    }
    let got = first_events(&hub, &t.viewer, "failover", 1).await;
    assert!(got.is_empty(), "not asked for: {got:?}");
}

/// Pages in the middle of a stopped hub's database overwritten with junk
/// (1,500 failovers, everything checkpointed into the main file): the
/// file still opens, but fails SQLite's `quick_check`. The start treats it
/// as damaged: moved aside as it was found (byte for byte), a fresh file
/// made of what reads (the same instance, some of the failovers), health
/// and the log say so and what was kept; the hub takes what must be
/// durable, and starts again on the fresh file with nothing more set
/// aside. Before: it ran on the damaged file, health said only a count.
#[tokio::test(flavor = "multi_thread")]
async fn a_start_on_a_database_that_fails_quick_check_sets_it_aside() {
    let (dir, t) = hub_dir();
    let db = dir.path().join("hub.db");
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    for i in 0..6 {
        let ids: Vec<String> = (0..250).map(|j| format!("f-{i}-{j}")).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &ids)).await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    let id = instance(&hub, &t.owner).await;
    // A rollout in progress: it bakes on after the start on the damaged
    // file (before: the fresh file had no rollouts, and it was gone).
    for w in ["w-2", "w-3", "w-4"] {
        let (s, _, v) = post(&hub, &t.worker, &heartbeat(w, &[])).await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    let rollout = start_rollout(&hub, &t.owner, OTHER).await;
    stop(hub);
    let damaged = common::damage_pages(&db, 4);
    let hub = HubProcess::try_spawn(dir.path(), Spawn::default())
        .unwrap_or_else(|log| panic!("the hub refused to start on the damaged file:\n{log}"));
    let h = health(&hub).await;
    assert_eq!(h["status"], "degraded", "{h}");
    let p = problem(&h, "damaged when the hub started");
    assert!(
        p.contains("quick_check") && p.contains("moved aside to") && p.contains("kept"),
        "{p}"
    );
    eprintln!("{p}");
    assert!(
        h["database"]["quick_check_problems"].as_u64() > Some(0),
        "{h}"
    );
    assert!(
        hub.log().contains("failed SQLite's quick_check"),
        "{}",
        hub.log()
    );
    let aside = set_aside(&db);
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert!(
        std::fs::read(&aside[0]).expect("kept") == damaged,
        "kept as it was found"
    );
    assert_eq!(instance(&hub, &t.owner).await, id, "the same hub to a TUI");
    let kept = failover_ids(&hub, &t.viewer).await;
    assert!(!kept.is_empty(), "what read was copied");
    let (s, now) = get(&hub, &t.viewer, "/v1/rollouts/current").await;
    assert_eq!(s, StatusCode::OK, "the rollout in progress kept: {now}");
    assert_eq!(
        (&now["id"], &now["state"]),
        (&rollout["id"], &rollout["state"]),
        "{now}"
    );
    assert!(p.contains("rollout"), "said kept: {p}");
    // It is aborted here, so the write below is not refused for it.
    let r = http()
        .post(hub.path("/v1/rollouts/current/abort"))
        .bearer_auth(&t.owner)
        .send()
        .await
        .expect("abort");
    assert!(r.status().is_success(), "{}", r.status());
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-2", &["g-1"])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, _, v) = put(&hub, &t.owner, VALID).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    drop(hub);
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    let h = health(&hub).await;
    assert_eq!(h["status"], "ok", "the fresh file is whole: {h}");
    assert_eq!(set_aside(&db).len(), 1);
    assert_eq!(instance(&hub, &t.owner).await, id);
}

/// `POST /v1/rollouts` of `doc` to one worker, baking an hour, promoted
/// by hand: the rollout as answered.
async fn start_rollout(hub: &HubProcess, owner: &str, doc: &str) -> Value {
    let tag = etag(hub, owner).await;
    let r = http()
        .post(hub.path("/v1/rollouts?cohort=1&bake=1h&promote=manual"))
        .bearer_auth(owner)
        .header("content-type", "application/toml")
        .header("if-match", tag)
        .body(doc.to_string())
        .send()
        .await
        .expect("POST rollout");
    let status = r.status();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "{status} {v}");
    let (s, now) = get(hub, owner, "/v1/rollouts/current").await;
    assert_eq!(s, StatusCode::OK, "{now}");
    assert_eq!(now["state"], "baking", "{now}");
    now
}

/// The issue's own start: a hub killed, then `truncate -s 0 hub.db`, its
/// WAL left beside it. SQLite would delete the WAL of an empty file (and
/// the start said only `started_empty`); the hub sets both aside, as they
/// were, and starts on a fresh file made of what the WAL holds: the same
/// instance id, the binding, the history, the failovers.
#[tokio::test(flavor = "multi_thread")]
async fn a_start_on_an_emptied_database_with_its_wal_keeps_what_the_wal_holds() {
    let (dir, t) = hub_dir();
    let db = dir.path().join("hub.db");
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &["f-1", "f-2"])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let (s, _, v) = put(&hub, &t.owner, VALID).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let written = v["revision"].as_str().expect("revision").to_string();
    let id = instance(&hub, &t.owner).await;
    drop(hub); // SIGKILL: the WAL stays.
    let wal = dir.path().join("hub.db-wal");
    let wal_len = std::fs::metadata(&wal).expect("a WAL").len();
    assert!(wal_len > 0);
    truncate(&db);

    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    let h = health(&hub).await;
    let p = problem(&h, "damaged when the hub started");
    assert!(p.contains("beside a WAL"), "{p}");
    eprintln!("{p}");
    let aside = set_aside(&db);
    assert_eq!(aside.len(), 1, "{aside:?}");
    let mut kept_wal = aside[0].as_os_str().to_owned();
    kept_wal.push("-wal");
    assert_eq!(
        std::fs::metadata(PathBuf::from(kept_wal))
            .map(|m| m.len())
            .ok(),
        Some(wal_len),
        "its WAL kept beside it, as it was"
    );
    assert_eq!(instance(&hub, &t.owner).await, id, "the same hub to a TUI");
    assert_eq!(
        newest_history(&hub, &t.owner).await,
        (written, "alice".into())
    );
    let ids = failover_ids(&hub, &t.viewer).await;
    assert!(
        ids.contains(&"f-1".into()) && ids.contains(&"f-2".into()),
        "{ids:?}"
    );
    let (s, _, v) = post(&hub, &t.other, &heartbeat("w-1", &[])).await;
    assert_eq!(s, StatusCode::CONFLICT, "the binding kept: {v}");
}

/// SIGTERM, and wait (at most 10 s) for the orderly stop.
fn stop(mut hub: HubProcess) {
    unsafe { libc::kill(hub.child.id() as i32, libc::SIGTERM) };
    for _ in 0..500 {
        if let Ok(Some(_)) = hub.child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("the hub did not stop on SIGTERM");
}

fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// A directory and files the hub, run as `nobody`, can use.
fn open_to_nobody(dir: &Path) {
    chmod(dir, 0o777);
    chmod(&dir.join("hub.toml"), 0o666);
    chmod(&dir.join("tokens.toml"), 0o644);
}

/// The database's directory made read-only (the hub runs as `nobody`, so
/// the mode stops it): health `degraded` within 2 s naming the directory
/// and the next start, though the file is still written. Then the file
/// truncated while it cannot be moved aside: what must be durable (a
/// heartbeat with failovers, a new worker's first heartbeat, a config
/// write) gets 503 `database_unavailable` with `Retry-After` and the
/// reason, other heartbeats are taken; once the directory is writable
/// again the file is set aside and made afresh and the next one is taken.
#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_database_that_cannot_be_set_aside_refuses_what_must_be_durable() {
    let (dir, t) = hub_dir();
    open_to_nobody(dir.path());
    let db_dir = dir.path().join("db");
    std::fs::create_dir(&db_dir).expect("db dir");
    chmod(&db_dir, 0o777);
    let db = db_dir.join("hub.db");
    let db_arg = db.to_string_lossy().into_owned();
    let how = Spawn {
        extra: &["--db", &db_arg],
        as_nobody: true,
        ..Spawn::default()
    };
    let hub = HubProcess::spawn(dir.path(), how);
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &["f-1"])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(health(&hub).await["status"], "ok");

    chmod(&db_dir, 0o555);
    let h = until_problem(&hub, Duration::from_secs(2), |p| {
        p.contains("directory") && p.contains("next start")
    })
    .await;
    assert!(problem(&h, "next start").contains(&db_dir.display().to_string()));
    // The file itself is still written: nothing refused yet.
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &["f-2"])).await;
    assert_eq!(s, StatusCode::OK, "{v}");

    truncate(&db);
    let h = until_problem(&hub, Duration::from_secs(2), |p| {
        p.contains("database_unavailable")
    })
    .await;
    assert_eq!(h["database"]["unavailable"], true, "{h}");
    // The word says it (was OK while failovers were refused), and so does
    // `get workers`' summary.
    assert_eq!(h["word"], "DATABASE UNAVAILABLE", "{h}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_macfleet"))
        .args(["get", "workers"])
        .env("XDG_CONFIG_HOME", "/nonexistent-macfleet-test")
        .env("MAC_HUB_URL", &hub.url)
        .env("MAC_HUB_TOKEN", &t.viewer)
        .output()
        .expect("macfleet runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("DATABASE UNAVAILABLE · "), "{err}");
    let first = problem(&h, "database_unavailable");
    assert!(first.contains("cannot be moved aside"));
    // Looked at again every second, it says the same one sentence: it
    // does not wrap the last look's (it grew ~110 bytes a second).
    tokio::time::sleep(Duration::from_secs(3)).await;
    let h2 = health(&hub).await;
    let later = problem(&h2, "database_unavailable");
    assert_eq!(later.matches("is damaged").count(), 1, "{later}");
    assert_eq!(later, first, "the same sentence 3 s later");
    let (s, retry, v) = post(&hub, &t.worker, &heartbeat("w-1", &["f-3"])).await;
    assert_eq!(
        (s, retry.as_deref(), v["error"]["code"].as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("5"),
            Some("database_unavailable")
        ),
        "{v}"
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("damaged")),
        "the reason: {v}"
    );
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-new", &[])).await;
    assert_eq!(
        s,
        StatusCode::SERVICE_UNAVAILABLE,
        "a new worker's binding: {v}"
    );
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &[])).await;
    assert_eq!(
        s,
        StatusCode::OK,
        "a known worker's plain heartbeat is taken: {v}"
    );
    let (s, retry, v) = put(&hub, &t.owner, VALID).await;
    assert_eq!(
        (s, retry.as_deref(), v["error"]["code"].as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("5"),
            Some("database_unavailable")
        ),
        "{v}"
    );
    assert!(set_aside(&db).is_empty());

    // The double fault: the config unusable too (its path a directory).
    // Both said; a write is refused for the config first (nothing of it
    // reaches the database); a known worker is still told its list.
    let config = dir.path().join("hub.toml");
    let doc = std::fs::read(&config).expect("config");
    std::fs::remove_file(&config).expect("rm");
    std::fs::create_dir(&config).expect("mkdir");
    let h = until_problem(&hub, Duration::from_secs(2), |p| {
        p.contains("is a directory")
    })
    .await;
    problem(&h, "database_unavailable");
    assert_eq!(h["word"], "CONFIG INVALID", "{h}");
    let (s, _, v) = put(&hub, &t.owner, OTHER).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("config_unavailable")),
        "{v}"
    );
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &[])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    std::fs::remove_dir(&config).expect("rmdir");
    std::fs::write(&config, doc).expect("back");
    chmod(&config, 0o666);

    chmod(&db_dir, 0o777);
    let t0 = Instant::now();
    loop {
        let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &["f-4"])).await;
        if s == StatusCode::OK {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "{s} {v}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(set_aside(&db).len(), 1);
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-new", &[])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let ids = failover_ids(&hub, &t.viewer).await;
    assert!(
        ids.contains(&"f-4".into()) && !ids.contains(&"f-3".into()),
        "{ids:?}"
    );
    // Said once, not once a refusal.
    let log = hub.log();
    let said = log
        .lines()
        .filter(|l| l.contains("heartbeat refused"))
        .count();
    assert!(said <= 1, "{said} lines:\n{log}");
}

/// The config path replaced by a directory, then the config made
/// unreadable (mode 000; the hub runs as `nobody` so the mode stops it):
/// each is `degraded` in health within 2 s with its reason, and a `PUT`
/// (of the same bytes, too) answers 503 `config_unavailable` with the
/// reason instead of 200 with nothing on disk (or a new file of mode 000
/// no restart can read). The log says it once, not 20 times a second.
/// Fixed, health is `ok` and a `PUT` is taken.
#[tokio::test(flavor = "multi_thread")]
async fn a_config_the_hub_cannot_read_or_replace_is_degraded_and_refused() {
    let (dir, t) = hub_dir();
    open_to_nobody(dir.path());
    let config = dir.path().join("hub.toml");
    let how = Spawn {
        as_nobody: true,
        ..Spawn::default()
    };
    let hub = HubProcess::spawn(dir.path(), how);
    let (s, _, v) = put(&hub, &t.owner, VALID).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let tag = etag(&hub, &t.owner).await;

    std::fs::remove_file(&config).expect("rm");
    std::fs::create_dir(&config).expect("mkdir");
    chmod(&config, 0o777);
    let h = until_problem(&hub, Duration::from_secs(2), |p| {
        p.contains("is a directory")
    })
    .await;
    assert!(problem(&h, "is a directory").contains("hub.toml"));
    // Not `OK` while a write would fail (before: `OK`).
    assert_eq!(h["word"], "CONFIG INVALID", "{h}");
    let r = http()
        .put(hub.path("/v1/config"))
        .bearer_auth(&t.owner)
        .header("content-type", "application/toml")
        .header("if-match", &tag)
        .body(VALID)
        .send()
        .await
        .expect("PUT");
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        r.headers().get("retry-after").and_then(|v| v.to_str().ok()),
        Some("5")
    );
    let v: Value = r.json().await.expect("JSON");
    assert_eq!(v["error"]["code"], "config_unavailable", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("is a directory")),
        "{v}"
    );
    assert!(config.is_dir(), "nothing written");
    // Two seconds of it: said once, not 20 times a second.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let log = hub.log();
    let lines = log
        .lines()
        .filter(|l| l.contains("hub.toml") && (l.contains("WARN") || l.contains("ERROR")))
        .count();
    assert!(lines <= 2, "{lines} lines:\n{log}");

    std::fs::remove_dir(&config).expect("rmdir");
    std::fs::write(&config, VALID).expect("back");
    chmod(&config, 0o000);
    let root = unsafe { libc::geteuid() } == 0;
    let h = until_problem(&hub, Duration::from_secs(2), |p| {
        p.contains("cannot be read")
    })
    .await;
    assert!(problem(&h, "cannot be read").contains("next start"));
    // Another problem than the directory, within its minute: said at once
    // in the log, not counted as the directory's (the 13:51 audit).
    assert!(
        hub.logged(|l| l.contains("WARN") && l.contains("cannot be read") && !l.contains("again"))
            .await,
        "the unreadable config is said:\n{}",
        hub.log()
    );
    let (s, _, v) = put(&hub, &t.owner, OTHER).await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, Some("config_unavailable")),
        "{v} (root: {root})"
    );
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(&config)
            .expect("meta")
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode, 0, "the file untouched");

    chmod(&config, 0o666);
    let t0 = Instant::now();
    while health(&hub).await["status"] != "ok" {
        assert!(
            t0.elapsed() < Duration::from_secs(3),
            "{}",
            health(&hub).await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (s, _, v) = put(&hub, &t.owner, OTHER).await;
    assert_eq!(s, StatusCode::OK, "{v}");
}

/// The lease-unavailable path: the hub runs as `nobody` on a config the
/// test's user (root) owns, so `fcntl(F_SETLEASE)` is refused and the hub
/// cannot tell whether a writer holds the file (`disk::writer_holds` is
/// `None`). A file written in place in two parts, its first part a valid
/// document, held open 6.5 s between them (past the fallback poll's 5 s
/// settle): nothing is taken while the writer holds it (the poll defers
/// to the watcher's close-write when it cannot tell), one revision of the
/// whole file once it closes. Skipped when the test does not run as root
/// (the hub then owns the file and can lease it).
#[tokio::test(flavor = "multi_thread")]
async fn a_config_the_hub_cannot_lease_is_taken_only_once_its_writer_closes_it() {
    use std::io::Write;
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root, to run the hub as a user who does not own its config");
        return;
    }
    let (dir, t) = hub_dir();
    open_to_nobody(dir.path());
    let hub = HubProcess::spawn(
        dir.path(),
        Spawn {
            as_nobody: true,
            ..Spawn::default()
        },
    );
    let path = dir.path().join("hub.toml");
    let tag0 = etag(&hub, &t.owner).await;
    let mut f = common::start_writing(&path, b"[fleet]\nMAC_CODING_AGENTS = [\"claude\"]\n");
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_millis(6500) {
        assert_eq!(
            etag(&hub, &t.owner).await,
            tag0,
            "taken while its writer holds it"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    f.write_all(b"[human]\nimportant = true\n")
        .expect("the rest");
    drop(f);
    let t0 = Instant::now();
    let tag1 = loop {
        let tag = etag(&hub, &t.owner).await;
        if tag != tag0 {
            break tag;
        }
        assert!(t0.elapsed() < Duration::from_secs(3), "never taken");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let (s, v) = get(&hub, &t.owner, "/v1/config/history").await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let revisions = v["revisions"].as_array().cloned().unwrap_or_default();
    assert_eq!(revisions.len(), 2, "one revision for the whole edit: {v}");
    assert_eq!(
        format!("\"{}\"", revisions[0]["revision"].as_str().unwrap_or("")),
        tag1
    );
}

/// `dd conv=notrunc`: `pages` pages a third of the way into `db`
/// overwritten with junk in place (the file keeps its inode, its size and
/// its header), after the WAL was checkpointed into it from another
/// connection while the hub runs.
fn overwrite_pages_in_place(db: &Path, pages: u64) {
    use std::io::{Seek, SeekFrom, Write};
    let c = rusqlite::Connection::open(db).expect("open the database");
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    let page: u64 = c
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .expect("page size") as u64;
    drop(c);
    let len = std::fs::metadata(db).expect("hub.db").len();
    let count = len / page;
    assert!(count > 3 * pages + 3, "{count} pages: too few to damage");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(db)
        .expect("open to damage");
    f.seek(SeekFrom::Start(count / 3 * page)).expect("seek");
    f.write_all(&vec![0xA5; (pages * page) as usize])
        .expect("damage");
    f.sync_all().expect("sync");
}

/// Pages overwritten under the running hub (the fresh-eyes run's `dd
/// if=/dev/urandom of=hub.db bs=4096 seek=… conv=notrunc`: size, header
/// and inode unchanged): a read that meets the damage is answered 503
/// `database_unavailable` (before: 500 for the rest of the run), and
/// within 2 s the file is set aside and made afresh as a truncated one is,
/// keeping the instance id (before: a new one at the next start, so a TUI
/// saw another hub), the pool binding and the history's head; what comes
/// after is in the fresh file, and a restart starts on it. Before: health
/// said only a count of statements, nothing was set aside.
#[tokio::test(flavor = "multi_thread")]
async fn pages_overwritten_under_the_running_hub_are_set_aside_within_2_s() {
    let (dir, t) = hub_dir();
    let db = dir.path().join("hub.db");
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    for i in 0..6 {
        let ids: Vec<String> = (0..250).map(|j| format!("f-{i}-{j}")).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &ids)).await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    let (s, _, v) = put(&hub, &t.owner, VALID).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let written = v["revision"].as_str().expect("revision").to_string();
    let id = instance(&hub, &t.owner).await;
    assert_eq!(health(&hub).await["status"], "ok");

    overwrite_pages_in_place(&db, 20);
    let t0 = Instant::now();
    // Readers walk the log as a TUI does; none is answered 500.
    let mut statuses = Vec::new();
    for since in [0, 500, 1000] {
        let (s, v) = get(
            &hub,
            &t.viewer,
            &format!("/v1/failovers?since={since}&limit=1000"),
        )
        .await;
        assert_ne!(s, StatusCode::INTERNAL_SERVER_ERROR, "{v}");
        statuses.push(s);
    }
    let (s, v) = get(&hub, &t.viewer, "/v1/config/history").await;
    assert_ne!(s, StatusCode::INTERNAL_SERVER_ERROR, "{v}");
    let h = until_problem(&hub, Duration::from_secs(2), |p| {
        p.contains("found damaged under the running hub")
    })
    .await;
    eprintln!("reads {statuses:?}, set aside in {:?}", t0.elapsed());
    let p = problem(&h, "found damaged");
    assert!(
        p.contains("moved aside to") && p.contains("instance id") && p.contains("1 pool binding"),
        "{p}"
    );
    assert_eq!(set_aside(&db).len(), 1);
    assert_eq!(instance(&hub, &t.owner).await, id, "the same hub to a TUI");
    assert_eq!(
        newest_history(&hub, &t.owner).await,
        (written.clone(), "alice".into())
    );
    let (s, _, v) = post(&hub, &t.other, &heartbeat("w-1", &[])).await;
    assert_eq!(s, StatusCode::CONFLICT, "the binding kept: {v}");
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-2", &["g-1"])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let of_w2 = "/v1/failovers?since=0&limit=10&worker=w-2";
    let (s, v) = get(&hub, &t.viewer, of_w2).await;
    assert_eq!(
        (s, v["events"][0]["id"].as_str()),
        (StatusCode::OK, Some("g-1")),
        "{v}"
    );

    drop(hub);
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    assert_eq!(
        instance(&hub, &t.owner).await,
        id,
        "a restart is the same hub"
    );
    let (s, v) = get(&hub, &t.viewer, of_w2).await;
    assert_eq!(
        (s, v["events"][0]["id"].as_str()),
        (StatusCode::OK, Some("g-1")),
        "{v}"
    );
    assert_eq!(newest_history(&hub, &t.owner).await.0, written);
    assert_eq!(set_aside(&db).len(), 1, "nothing more set aside");
}

/// The database full (SQLite's `SQLITE_FULL`, what a full disk gives;
/// here from `max_page_count` through the test hook
/// `MACFLEET_TEST_MAX_PAGE_COUNT`, since a tmpfs to fill needs a mount):
/// what must be durable gets 503 `database_unavailable` with `Retry-After`
/// (before: 500 `internal`), health is `degraded` with
/// `database.unavailable` and the reason, and no config write is
/// acknowledged that History lacks (before: a `PUT` whose intent committed
/// but whose history entry met the full file got 200, and was lost from
/// History); the refused write is undone, the file and ETag as they were.
/// The log says it once, not once a request.
#[tokio::test(flavor = "multi_thread")]
async fn a_full_database_refuses_with_503_and_acknowledges_nothing_history_lacks() {
    let (dir, t) = hub_dir();
    let config = dir.path().join("hub.toml");
    let how = Spawn {
        env: &[("MACFLEET_TEST_MAX_PAGE_COUNT", "60")],
        ..Spawn::default()
    };
    let hub = HubProcess::spawn(dir.path(), how);
    // Lists of 64 agents of 32 characters: each history entry takes new
    // pages, while a write's intent reuses the pages the last one freed,
    // so the full file meets a write between its intent and its entry.
    let names: Vec<String> = (0..64)
        .map(|i| format!("a{i:02}{}", "x".repeat(29)))
        .collect();
    let doc = |i: usize| {
        let mut list = names.clone();
        if i % 2 == 1 {
            list.reverse();
        }
        let list: Vec<String> = list.iter().map(|n| format!("\"{n}\"")).collect();
        format!(
            "# write {i}\n[fleet]\nMAC_CODING_AGENTS = [{}]\n",
            list.join(", ")
        )
    };
    // Writes until one is refused: each one answered 200 is in History.
    let mut taken = Vec::new();
    let mut refused = None;
    for i in 0..200 {
        let body = doc(i);
        let (s, retry, v) = put(&hub, &t.owner, &body).await;
        match s {
            StatusCode::OK => taken.push((v["revision"].as_str().expect("rev").to_string(), body)),
            _ => {
                refused = Some((s, retry, v));
                break;
            }
        }
    }
    let (s, retry, v) = refused.unwrap_or_else(|| {
        panic!(
            "no write was refused ({} taken):\n{}",
            taken.len(),
            hub.log()
        )
    });
    assert_eq!(
        (s, retry.as_deref(), v["error"]["code"].as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("5"),
            Some("database_unavailable")
        ),
        "{v}"
    );
    eprintln!("{} writes taken before the refusal", taken.len());
    let h = until_problem(&hub, Duration::from_secs(2), |p| p.contains("is full")).await;
    assert_eq!(h["database"]["unavailable"], true, "{h}");
    let (s, hist) = get(&hub, &t.owner, "/v1/config/history").await;
    assert_eq!(s, StatusCode::OK, "{hist}");
    let in_history: Vec<&str> = hist["revisions"]
        .as_array()
        .expect("revisions")
        .iter()
        .filter_map(|e| e["revision"].as_str())
        .collect();
    for (rev, _) in &taken {
        assert!(
            in_history.contains(&rev.as_str()),
            "{rev} acknowledged, not in History: {hist}"
        );
    }
    // Nothing changed by the refused write.
    let on_disk = std::fs::read_to_string(&config).expect("config");
    let tag = etag(&hub, &t.owner).await;
    let (rev, body) = taken.last().expect("a write taken before the file filled");
    assert_eq!(&on_disk, body, "the file is the last write taken");
    assert_eq!(tag, format!("\"{rev}\""));

    // Heartbeats with failovers from new workers until one is refused.
    let mut refused = None;
    for i in 0..400 {
        let ids: Vec<String> = (0..40).map(|j| format!("f-{i}-{j}")).collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        let (s, retry, v) = post(&hub, &t.worker, &heartbeat(&format!("w-{i}"), &ids)).await;
        if s != StatusCode::OK {
            refused = Some((s, retry, v));
            break;
        }
    }
    let (s, retry, v) = refused.expect("no heartbeat was refused");
    assert_eq!(
        (s, retry.as_deref(), v["error"]["code"].as_str()),
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Some("5"),
            Some("database_unavailable")
        ),
        "{v}"
    );
    let log = hub.log();
    assert!(!log.contains("internal error"), "{log}");
    for said in [
        "heartbeat refused",
        "database batch failed",
        "config write refused",
    ] {
        let n = log.lines().filter(|l| l.contains(said)).count();
        assert!(n <= 1, "{said}: {n} lines:\n{log}");
    }
}

/// A full database that nothing writes to again (issue 29): commits
/// failed for a full disk, then the disk got room (here the page limit
/// raised through `MACFLEET_TEST_MAX_PAGE_COUNT_FILE`, as an operator
/// freeing space would) and no request came. Before, only a commit could
/// clear the reason, so health stayed `degraded` for good; now the
/// writer's probe (free space over a margin, a side file written, synced
/// and removed, room under the page limit) finds it within its 5 s, says
/// so once, and the next write is taken. While the database is still
/// full the probe keeps it degraded (no flap), and writes no commit.
#[tokio::test(flavor = "multi_thread")]
async fn a_full_database_given_room_again_is_ok_without_a_commit() {
    let (dir, t) = hub_dir();
    let quota = dir.path().join("quota");
    std::fs::write(&quota, "60").expect("quota");
    let quota_env = quota.to_str().expect("a UTF-8 path");
    let env = [
        ("MACFLEET_LOG", "info"),
        ("MACFLEET_TEST_MAX_PAGE_COUNT", "60"),
        ("MACFLEET_TEST_MAX_PAGE_COUNT_FILE", quota_env),
    ];
    let how = Spawn {
        env: &env,
        ..Spawn::default()
    };
    let hub = HubProcess::spawn(dir.path(), how);
    let names: Vec<String> = (0..64)
        .map(|i| format!("\"a{i:02}{}\"", "y".repeat(29)))
        .collect();
    let mut refused = None;
    for i in 0..200 {
        let body = format!(
            "# {i}\n[fleet]\nMAC_CODING_AGENTS = [{}]\n",
            names.join(", ")
        );
        let (s, _, v) = put(&hub, &t.owner, &body).await;
        if s != StatusCode::OK {
            refused = Some((s, v));
            break;
        }
    }
    let (s, v) = refused.unwrap_or_else(|| panic!("no write was refused:\n{}", hub.log()));
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{v}");
    until_problem(&hub, Duration::from_secs(2), |p| p.contains("is full")).await;
    // Still full, nothing written: the probe (due 5 s after the failure)
    // keeps the reason.
    tokio::time::sleep(Duration::from_secs(7)).await;
    let h = health(&hub).await;
    assert_eq!(h["database"]["unavailable"], true, "still full: {h}");

    std::fs::write(&quota, "100000").expect("room again");
    let t0 = Instant::now();
    let h = loop {
        let h = health(&hub).await;
        if h["status"] == "ok" {
            break h;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(8),
            "still degraded with room again and nothing written: {h}\n{}",
            hub.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(h["database"]["unavailable"], false, "{h}");
    eprintln!("ok {:?} after the room came back", t0.elapsed());
    let log = hub.log();
    let said = log.lines().filter(|l| l.contains("has room again")).count();
    assert_eq!(said, 1, "{log}");
    assert!(
        !dir.path().join("hub.db.room-probe").exists(),
        "the side file is removed"
    );
    let (s, _, v) = put(&hub, &t.owner, VALID).await;
    assert_eq!(s, StatusCode::OK, "a write is taken again: {v}");
}

/// `chmod 444 hub.db` under the running hub (as `nobody`, so the mode
/// stops it): its open connections still write, so heartbeats are taken,
/// but the next start would refuse the file: health `degraded` within 2 s
/// naming the file and the next start (before: `ok`), said once in the
/// log; the mode given back, `ok` again, with no reason left over.
#[tokio::test(flavor = "multi_thread")]
async fn a_database_made_read_only_under_the_hub_is_degraded_within_2_s() {
    let (dir, t) = hub_dir();
    open_to_nobody(dir.path());
    let how = Spawn {
        as_nobody: true,
        ..Spawn::default()
    };
    let hub = HubProcess::spawn(dir.path(), how);
    let db = dir.path().join("hub.db");
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &["f-1"])).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(health(&hub).await["status"], "ok");

    chmod(&db, 0o444);
    let h = until_problem(&hub, Duration::from_secs(2), |p| {
        p.contains("next start will refuse it")
    })
    .await;
    assert!(
        problem(&h, "next start will refuse it").contains(&db.display().to_string()),
        "{h}"
    );
    let (s, _, v) = post(&hub, &t.worker, &heartbeat("w-1", &["f-2"])).await;
    assert_eq!(
        s,
        StatusCode::OK,
        "still written through its open file: {v}"
    );
    assert!(failover_ids(&hub, &t.viewer).await.contains(&"f-2".into()));

    chmod(&db, 0o644);
    let t0 = Instant::now();
    loop {
        let h = health(&hub).await;
        if h["status"] == "ok" {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(3), "a reason left: {h}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = hub.log();
    let said = log
        .lines()
        .filter(|l| l.contains("next start will refuse it"))
        .count();
    assert_eq!(said, 1, "{log}");
}

/// `rm hub.toml` under the running hub: health `degraded` within 2 s
/// (the next start cannot read it; before: `ok`), the word not `OK`; the
/// document the hub last read is still served and projected; a `PUT`
/// makes the file afresh with the mode the removed file had (0640 here;
/// before: 0600, tempfile's), and health is `ok` again.
#[tokio::test(flavor = "multi_thread")]
async fn a_config_removed_under_the_hub_is_degraded_and_a_put_makes_it_afresh_with_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, t) = hub_dir();
    let config = dir.path().join("hub.toml");
    std::fs::write(&config, VALID).expect("config");
    chmod(&config, 0o640);
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    assert_eq!(health(&hub).await["status"], "ok");
    let tag = etag(&hub, &t.owner).await;

    std::fs::remove_file(&config).expect("rm");
    let h = until_problem(&hub, Duration::from_secs(2), |p| p.contains("is gone")).await;
    let said = problem(&h, "is gone");
    assert!(
        said.contains("hub.toml") && said.contains("next start") && said.contains("0640"),
        "{said}"
    );
    assert_eq!(h["word"], "CONFIG INVALID", "{h}");
    assert_eq!(etag(&hub, &t.owner).await, tag, "still served");

    let (s, _, v) = put(&hub, &t.owner, OTHER).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(
        std::fs::read_to_string(&config).expect("made afresh"),
        OTHER
    );
    let mode = std::fs::metadata(&config)
        .expect("meta")
        .permissions()
        .mode()
        & 0o7777;
    assert_eq!(mode, 0o640, "the mode the file had: {mode:o}");
    let t0 = Instant::now();
    loop {
        let h = health(&hub).await;
        if h["status"] == "ok" {
            // No worker reports to this hub: the empty fleet's word.
            assert_eq!(h["word"], "NO WORKERS", "{h}");
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(3), "{h}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
