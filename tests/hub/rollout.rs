//! The staged rollout (issue 33) against a real hub: a simulated fleet
//! (`macfleet::sim`, the code `macfleet sim` runs) takes a bad candidate
//! on its cohort and the guard halts it by itself; a good one promotes
//! itself at the end of a short bake; a restart mid-bake resumes with the
//! same cohort; a plain write while it bakes is refused; a hand edit by
//! another actor aborts it.

use crate::common;

use std::time::{Duration, Instant};

use common::{TestHub, eventually, heartbeat};
use macfleet::sim::{Scenario, SimOptions};
use serde_json::Value;

const FLEET: &str = "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n";

/// One worker a host; codex is missing on nine hosts in ten: a list of
/// codex alone leaves most workers with no route.
fn codex_scarce() -> Scenario {
    Scenario::parse(
        "codex-scarce",
        "name = \"codex-scarce\"\nworkers_per_host = 1\n[hosts.missing_binary]\ncodex = 0.9\n",
    )
    .expect("scenario")
}

fn doc(agents: &[&str]) -> String {
    let list: Vec<String> = agents.iter().map(|a| format!("\"{a}\"")).collect();
    format!("[fleet]\nMAC_CODING_AGENTS = [{}]\n", list.join(", "))
}

async fn revision(h: &TestHub) -> String {
    h.client(&h.owner).config().await.expect("config").revision
}

/// `POST /v1/rollouts?{query}` by alice (the owner) with `If-Match: base`.
async fn start(h: &TestHub, query: &str, base: &str, body: &str) -> reqwest::Response {
    h.http()
        .post(h.path(&format!("/v1/rollouts?{query}")))
        .bearer_auth(&h.owner)
        .header("content-type", "application/toml")
        .header("if-match", format!("\"{base}\""))
        .body(body.to_string())
        .send()
        .await
        .expect("post rollout")
}

async fn current(h: &TestHub) -> (u16, Value) {
    let r = h
        .http()
        .get(h.path("/v1/rollouts/current"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("get rollout");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn step(h: &TestHub, token: &str, what: &str) -> (u16, Value) {
    let r = h
        .http()
        .post(h.path(&format!("/v1/rollouts/current/{what}")))
        .bearer_auth(token)
        .send()
        .await
        .expect("post step");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn workers(h: &TestHub) -> Vec<Value> {
    let r = h
        .http()
        .get(h.path("/v1/workers"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("workers");
    let v: Value = r.json().await.expect("workers json");
    v["workers"].as_array().cloned().unwrap_or_default()
}

async fn json_of(h: &TestHub, path: &str) -> Value {
    h.http()
        .get(h.path(path))
        .bearer_auth(&h.viewer)
        .header("accept", "application/json")
        .send()
        .await
        .expect("get")
        .json()
        .await
        .expect("json")
}

async fn metrics(h: &TestHub) -> String {
    h.client(&h.viewer).metrics().await.expect("metrics")
}

fn gauge(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

async fn fleet_in_sync(h: &TestHub, n: usize) {
    eventually(600, || async {
        let ws = workers(h).await;
        (ws.len() == n && ws.iter().all(|w| w["in_sync"] == true)).then_some(())
    })
    .await
    .expect("the fleet is in and in sync");
}

/// A bad order (codex alone, missing on most workers) to a quarter of a
/// simulated fleet of 40: the cohort's no route rises, the guard halts it
/// within 60 s, the cohort is told the accepted list again and follows
/// it, and the word, the metric and History say so.
#[tokio::test]
async fn a_bad_order_is_halted_by_the_guard_and_the_cohort_goes_back() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let (_stats, stop, sim) = crate::sim::spawn_sim(&h, SimOptions::new(40, codex_scarce()));
    let accepted = revision(&h).await;
    fleet_in_sync(&h, 40).await;
    let began = Instant::now();
    let r = start(&h, "cohort=25%25&bake=10m", &accepted, &doc(&["codex"])).await;
    assert_eq!(r.status().as_u16(), 201);
    let started: Value = r.json().await.expect("rollout");
    assert_eq!(started["state"], "baking");
    assert_eq!(started["base_revision"], accepted.as_str());
    let candidate = started["candidate_revision"]
        .as_str()
        .expect("rev")
        .to_owned();
    // The file keeps the accepted document while it bakes.
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        FLEET
    );
    let (_, halted) = eventually(1300, || async {
        let (s, v) = current(&h).await;
        (v["state"] == "halted").then_some((s, v))
    })
    .await
    .expect("halted by the guard");
    let took = began.elapsed();
    assert!(took < Duration::from_secs(60), "halted after {took:?}");
    let reason = halted["reason"].as_str().expect("reason");
    assert!(
        reason.starts_with("halted by the guard: no route 0% → ") && reason.ends_with("(rest 0%)"),
        "{reason}"
    );
    assert!(halted["cohort_workers"].as_u64().expect("n") >= 2);
    assert!(halted["guard"]["cohort"]["no_route"].as_u64().expect("n") >= 2);
    assert_eq!(halted["time_left_s"], 0);
    // Every cohort worker is told the accepted list again and follows it.
    eventually(400, || async {
        let ws = workers(&h).await;
        ws.iter()
            .all(|w| {
                w["cohort"] != true
                    && w["config_revision"] == accepted.as_str()
                    && w["in_sync"] == true
            })
            .then_some(())
    })
    .await
    .expect("the cohort is back on the accepted list");
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        FLEET
    );
    let health = json_of(&h, "/v1/health").await;
    assert_eq!(health["word"], "ROLLOUT HALTED", "{health}");
    let m = metrics(&h).await;
    assert_eq!(gauge(&m, "macfleet_rollout_halted"), Some(1.0), "{m}");
    assert_eq!(gauge(&m, "macfleet_rollout_baking"), Some(0.0));
    let history = json_of(&h, "/v1/config/history").await;
    let steps: Vec<&str> = history["rollouts"]
        .as_array()
        .expect("rollouts")
        .iter()
        .map(|s| s["step"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(steps, ["halted", "started"]);
    assert_eq!(history["rollouts"][0]["by"], "(guard)");
    assert_eq!(history["rollouts"][1]["by"], "alice");
    assert!(history["revisions"].as_array().expect("revs").len() == 1);
    assert!(
        !workers(&h)
            .await
            .iter()
            .any(|w| w["config_revision"] == candidate.as_str())
    );
    let _ = stop.send(());
    sim.await.expect("sim task").expect("sim ran");
}

/// A good order (claude first) to a quarter of the fleet for 10 s: the
/// guard stays quiet, the bake ends and the hub promotes it by itself,
/// writing the file through the one write path (History's entry by
/// `(guard)`), and the whole fleet follows.
#[tokio::test]
async fn a_good_order_is_promoted_at_the_end_of_its_bake() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let (_stats, stop, sim) = crate::sim::spawn_sim(&h, SimOptions::new(40, codex_scarce()));
    let accepted = revision(&h).await;
    fleet_in_sync(&h, 40).await;
    let good = doc(&["claude", "opencode"]);
    let r = start(&h, "cohort=25%25&bake=10s", &accepted, &good).await;
    assert_eq!(r.status().as_u16(), 201);
    let started: Value = r.json().await.expect("rollout");
    let candidate = started["candidate_revision"]
        .as_str()
        .expect("rev")
        .to_owned();
    // While it bakes, cohort workers are told the candidate and are in
    // sync on it; the rest stay on the accepted list.
    let ws = eventually(200, || async {
        let ws = workers(&h).await;
        let cohort: Vec<&Value> = ws.iter().filter(|w| w["cohort"] == true).collect();
        (!cohort.is_empty()
            && cohort
                .iter()
                .all(|w| w["config_revision"] == candidate.as_str() && w["in_sync"] == true))
        .then_some(ws)
    })
    .await
    .expect("the cohort takes the candidate");
    assert!(
        ws.iter()
            .filter(|w| w["cohort"] != true)
            .all(|w| w["config_revision"] == accepted.as_str())
    );
    let m = metrics(&h).await;
    assert_eq!(gauge(&m, "macfleet_rollout_baking"), Some(1.0));
    let (_, promoted) = eventually(600, || async {
        let (s, v) = current(&h).await;
        (v["state"] == "promoted").then_some((s, v))
    })
    .await
    .expect("promoted");
    assert!(promoted["reason"].is_null(), "{promoted}");
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        good
    );
    assert_eq!(revision(&h).await, candidate);
    let history = json_of(&h, "/v1/config/history").await;
    assert_eq!(history["revisions"][0]["revision"], candidate.as_str());
    assert_eq!(history["revisions"][0]["by"], "(guard)");
    assert_eq!(history["rollouts"][0]["step"], "promoted");
    eventually(400, || async {
        let ws = workers(&h).await;
        ws.iter()
            .all(|w| w["config_revision"] == candidate.as_str() && w["cohort"] != true)
            .then_some(())
    })
    .await
    .expect("the whole fleet on the promoted list");
    let health = json_of(&h, "/v1/health").await;
    assert_ne!(health["word"], "ROLLOUT HALTED");
    let _ = stop.send(());
    sim.await.expect("sim task").expect("sim ran");
}

/// Heartbeats from `n` workers on `revision`; the answers' revisions.
async fn beat_all(h: &TestHub, n: usize, revision: &str) -> Vec<String> {
    let mut told = Vec::new();
    for i in 0..n {
        let r = h
            .post_heartbeat(&heartbeat(
                &format!("w-{i}"),
                Some(revision),
                serde_json::json!([]),
            ))
            .await;
        assert_eq!(r.status().as_u16(), 200);
        let p: Value = r.json().await.expect("projection");
        told.push(p["config_revision"].as_str().unwrap_or("").to_owned());
    }
    told
}

/// A plain `PUT /v1/config`, and a second rollout, while one bakes:
/// `409 rollout_in_progress` naming it, nothing written. The other
/// answers of the contract: `404 no_rollout`, `409 rollout_not_baking`,
/// `400 invalid_query` with the domain's sentence.
#[tokio::test]
async fn writes_while_it_bakes_are_refused_and_the_refusals_are_precise() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let accepted = revision(&h).await;
    beat_all(&h, 10, &accepted).await;
    assert_eq!(current(&h).await.0, 404);
    let (s, v) = step(&h, &h.owner, "abort").await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (409, Some("rollout_not_baking"))
    );
    for bad in [
        "cohort=0%25",
        "cohort=60%25",
        "bake=5s",
        "promote=later",
        "x=1",
    ] {
        let r = start(&h, bad, &accepted, &doc(&["claude", "opencode"])).await;
        assert_eq!(r.status().as_u16(), 400, "{bad}");
        let v: Value = r.json().await.expect("json");
        assert_eq!(v["error"]["code"], "invalid_query", "{bad}");
    }
    // A count over more than half the live workers: the sentence says
    // the largest allowed.
    let r = start(&h, "cohort=6", &accepted, &doc(&["claude", "opencode"])).await;
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["error"]["code"], "invalid_query");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("at most 5"),
        "{v}"
    );
    // A viewer may not start one.
    let r = h
        .http()
        .post(h.path("/v1/rollouts"))
        .bearer_auth(&h.viewer)
        .header("content-type", "application/toml")
        .header("if-match", format!("\"{accepted}\""))
        .body(doc(&["claude"]))
        .send()
        .await
        .expect("post");
    assert_eq!(r.status().as_u16(), 403);
    let r = start(
        &h,
        "cohort=3&promote=manual",
        &accepted,
        &doc(&["claude", "opencode"]),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let started: Value = r.json().await.expect("json");
    let id = started["id"].as_str().expect("id").to_owned();
    // Exactly 3 of the 10 are in the cohort, and are told the candidate.
    let told = beat_all(&h, 10, &accepted).await;
    let candidate = started["candidate_revision"].as_str().expect("rev");
    assert_eq!(told.iter().filter(|t| *t == candidate).count(), 3);
    assert_eq!(told.iter().filter(|t| **t == accepted).count(), 7);
    let cohort = workers(&h)
        .await
        .iter()
        .filter(|w| w["cohort"] == true)
        .count();
    assert_eq!(cohort, 3);
    // A plain write: 409 naming the rollout, the file untouched.
    let put = h
        .http()
        .put(h.path("/v1/config"))
        .bearer_auth(&h.owner2)
        .header("content-type", "application/toml")
        .header("if-match", format!("\"{accepted}\""))
        .body(doc(&["opencode"]))
        .send()
        .await
        .expect("put");
    assert_eq!(put.status().as_u16(), 409);
    let v: Value = put.json().await.expect("json");
    assert_eq!(v["error"]["code"], "rollout_in_progress");
    assert!(
        v["error"]["message"].as_str().unwrap_or("").contains(&id),
        "{v}"
    );
    let again = start(&h, "", &accepted, &doc(&["opencode"])).await;
    assert_eq!(again.status().as_u16(), 409);
    let v: Value = again.json().await.expect("json");
    assert_eq!(v["error"]["code"], "rollout_in_progress");
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        FLEET
    );
    // The owner aborts it: everyone back on the accepted list.
    let (s, v) = step(&h, &h.owner, "abort").await;
    assert_eq!((s, v["state"].as_str()), (200, Some("aborted")));
    assert_eq!(v["reason"], "aborted by alice");
    let told = beat_all(&h, 10, &accepted).await;
    assert!(told.iter().all(|t| *t == accepted));
    let (s, v) = step(&h, &h.owner, "promote").await;
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (409, Some("rollout_not_baking"))
    );
    assert_eq!(current(&h).await.1["state"], "aborted");
}

/// The cohort's ids after each worker has sent a heartbeat.
async fn cohort_ids(h: &TestHub, n: usize, revision: &str) -> Vec<String> {
    beat_all(h, n, revision).await;
    let mut ids: Vec<String> = workers(h)
        .await
        .iter()
        .filter(|w| w["cohort"] == true)
        .map(|w| w["worker"].as_str().unwrap_or("").to_owned())
        .collect();
    ids.sort();
    ids
}

/// A hub restarted mid-bake resumes the rollout: the same cohort, told
/// the candidate in its first answer, the bake counted on from where it
/// was (not from the start, and not the time the hub was down).
#[tokio::test]
async fn a_restart_mid_bake_resumes_with_the_same_cohort() {
    let mut h = TestHub::start_with(FLEET, |_| {}).await;
    let accepted = revision(&h).await;
    beat_all(&h, 20, &accepted).await;
    let r = start(
        &h,
        "cohort=5&bake=1h&promote=manual",
        &accepted,
        &doc(&["claude", "opencode"]),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let started: Value = r.json().await.expect("json");
    let candidate = started["candidate_revision"]
        .as_str()
        .expect("rev")
        .to_owned();
    let before = cohort_ids(&h, 20, &accepted).await;
    assert_eq!(before.len(), 5);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let left_before = current(&h).await.1["time_left_s"].as_u64().expect("left");
    assert!(left_before < 3600, "{left_before}");
    h.restart(|_| {}).await;
    let (s, v) = current(&h).await;
    assert_eq!((s, v["state"].as_str()), (200, Some("baking")));
    assert_eq!(v["id"], started["id"]);
    let left = v["time_left_s"].as_u64().expect("left");
    assert!(
        left <= left_before && left + 10 >= left_before,
        "{left} vs {left_before}"
    );
    // The first answer after the restart tells the cohort the candidate.
    let told = beat_all(&h, 20, &accepted).await;
    let first: Vec<String> = (0..20)
        .filter(|i| told[*i] == candidate)
        .map(|i| format!("w-{i}"))
        .collect();
    let mut first = first;
    first.sort();
    assert_eq!(first, before);
    assert_eq!(cohort_ids(&h, 20, &accepted).await, before);
}

/// Two actors: alice's rollout bakes, then someone edits the file by hand
/// on the hub's host. The rollout ends `aborted` with that reason, the
/// cohort is told the list in force, and alice's promote is refused.
#[tokio::test]
async fn a_hand_edit_aborts_the_rollout() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let accepted = revision(&h).await;
    beat_all(&h, 10, &accepted).await;
    let r = start(&h, "cohort=3", &accepted, &doc(&["claude", "opencode"])).await;
    assert_eq!(r.status().as_u16(), 201);
    let by_hand = "[fleet]\nMAC_CODING_AGENTS = [\"opencode\"] # by hand\n";
    std::fs::write(h.config_path(), by_hand).expect("hand edit");
    let (_, v) = eventually(200, || async {
        let (s, v) = current(&h).await;
        (v["state"] == "aborted").then_some((s, v))
    })
    .await
    .expect("aborted by the hand edit");
    assert!(
        v["reason"]
            .as_str()
            .unwrap_or("")
            .contains("edited by hand"),
        "{v}"
    );
    let (s, e) = step(&h, &h.owner, "promote").await;
    assert_eq!(
        (s, e["error"]["code"].as_str()),
        (409, Some("rollout_not_baking"))
    );
    let now = revision(&h).await;
    let told = beat_all(&h, 10, &accepted).await;
    assert!(told.iter().all(|t| *t == now), "{told:?}");
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        by_hand
    );
    let history = json_of(&h, "/v1/config/history").await;
    assert_eq!(history["rollouts"][0]["by"], "(changed on disk)");
}

/// `POST /v1/rollouts` with an `Idempotency-Key` and `If-Match: if_match`.
async fn start_keyed(
    h: &TestHub,
    query: &str,
    if_match: &str,
    key: &str,
    body: &str,
) -> reqwest::Response {
    h.http()
        .post(h.path(&format!("/v1/rollouts?{query}")))
        .bearer_auth(&h.owner)
        .header("content-type", "application/toml")
        .header("if-match", if_match)
        .header("idempotency-key", key)
        .body(body.to_string())
        .send()
        .await
        .expect("post rollout")
}

/// Fresh eyes R1: the same key and document with other options is
/// another request, refused `422 idempotency_key_reused` (it replayed the
/// first rollout, as if the options had been taken); the same request
/// again still replays it.
#[tokio::test]
async fn a_key_sent_again_with_other_options_is_refused_not_replayed() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let accepted = revision(&h).await;
    beat_all(&h, 10, &accepted).await;
    let body = doc(&["claude", "opencode"]);
    let tag = format!("\"{accepted}\"");
    let first = start_keyed(&h, "cohort=3&promote=manual", &tag, "k-r1-0001", &body).await;
    assert_eq!(first.status().as_u16(), 201);
    let first: Value = first.json().await.expect("json");
    for other in [
        "cohort=4&promote=manual",
        "cohort=3&promote=auto",
        "cohort=3&promote=manual&bake=1h",
    ] {
        let r = start_keyed(&h, other, &tag, "k-r1-0001", &body).await;
        assert_eq!(r.status().as_u16(), 422, "{other}");
        let v: Value = r.json().await.expect("json");
        assert_eq!(v["error"]["code"], "idempotency_key_reused", "{other}: {v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("cohort=3, bake=10m, promote=manual"),
            "{v}"
        );
    }
    let (_, now) = current(&h).await;
    assert_eq!(now["id"], first["id"]);
    assert_eq!(now["cohort"], "3");
    assert_eq!(now["promote"], "manual");
    let again = start_keyed(&h, "cohort=3&promote=manual", &tag, "k-r1-0001", &body).await;
    assert_eq!(again.status().as_u16(), 201);
    assert_eq!(
        again
            .headers()
            .get("idempotent-replayed")
            .and_then(|v| v.to_str().ok()),
        Some("true")
    );
}

/// Fresh eyes R3: the `201` says the cohort as drawn (3 of 10 live
/// workers, the rest's 7), not an empty guard until the first judgement.
#[tokio::test]
async fn the_201_counts_the_cohort_at_the_start() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let accepted = revision(&h).await;
    beat_all(&h, 10, &accepted).await;
    let r = start(&h, "cohort=3", &accepted, &doc(&["claude", "opencode"])).await;
    assert_eq!(r.status().as_u16(), 201);
    let v: Value = r.json().await.expect("json");
    assert_eq!(v["cohort_workers"], 3, "{v}");
    assert_eq!(v["cohort_on_candidate"], 0, "{v}");
    assert_eq!(v["guard"]["rest"]["workers"], 7, "{v}");
}

/// Fresh eyes R4: `If-Match` with the weak ETag of the current revision
/// (what a viewer's GET is given) is 412 all the same (If-Match compares
/// strongly, RFC 9110 13.1.1), with a sentence naming the weak form and
/// the strong one to send, not "the document changed" about a revision
/// that did not. For a rollout and for a PUT.
#[tokio::test]
async fn a_weak_etag_in_if_match_is_412_saying_to_send_the_strong_one() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let accepted = revision(&h).await;
    beat_all(&h, 10, &accepted).await;
    let weak = format!("W/\"{accepted}\"");
    let body = doc(&["claude", "opencode"]);
    let r = start_keyed(&h, "cohort=3", &weak, "k-r4-0001", &body).await;
    let put = h
        .http()
        .put(h.path("/v1/config"))
        .bearer_auth(&h.owner)
        .header("content-type", "application/toml")
        .header("if-match", &weak)
        .body(body.clone())
        .send()
        .await
        .expect("put");
    for (what, r) in [("rollout", r), ("put", put)] {
        assert_eq!(r.status().as_u16(), 412, "{what}");
        let v: Value = r.json().await.expect("json");
        assert_eq!(v["error"]["code"], "revision_mismatch", "{what}");
        let m = v["error"]["message"].as_str().unwrap_or("");
        assert!(
            m.contains(&format!("weak ETag W/\"{accepted}\""))
                && m.contains(&format!("strong ETag, \"{accepted}\"")),
            "{what}: {m}"
        );
        assert!(!m.contains("changed"), "{what}: {m}");
    }
    assert_eq!(current(&h).await.0, 404, "no rollout started");
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        FLEET
    );
}

/// Fresh eyes R2: two `Authorization` headers are refused with a
/// sentence (400), on every route that takes a token, never read as the
/// first one.
#[tokio::test]
async fn two_authorization_headers_are_a_400_on_every_route() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let routes = [
        ("GET", "/v1/whoami"),
        ("GET", "/v1/config"),
        ("PUT", "/v1/config"),
        ("GET", "/v1/config/history"),
        ("POST", "/v1/plan"),
        ("POST", "/v1/heartbeats"),
        ("GET", "/v1/workers"),
        ("GET", "/v1/summary"),
        ("GET", "/v1/failovers"),
        ("GET", "/v1/events"),
        ("GET", "/v1/recoveries"),
        ("POST", "/v1/rollouts"),
        ("GET", "/v1/rollouts/current"),
        ("POST", "/v1/rollouts/current/promote"),
        ("POST", "/v1/rollouts/current/abort"),
        ("GET", "/metrics"),
    ];
    for (method, path) in routes {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let r = h
            .http()
            .request(method.clone(), h.path(path))
            .header("authorization", format!("Bearer {}", h.owner))
            .header("authorization", format!("Bearer {}", h.viewer))
            .send()
            .await
            .expect("send");
        assert_eq!(r.status().as_u16(), 400, "{method} {path}");
        let v: Value = r.json().await.expect("json");
        assert_eq!(v["error"]["code"], "bad_request", "{method} {path}");
        assert!(
            v["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("2 Authorization headers"),
            "{method} {path}: {v}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        FLEET
    );
}

/// One round of heartbeats from `w-0`…`w-{n-1}`: the cohort's on the
/// candidate (its list), the rest on the accepted list; the workers in
/// `no_route` stand on nothing, and those in `noisy` also report a burst
/// of three fresh failovers with each beat.
async fn beat_round(
    h: &TestHub,
    n: usize,
    cohort: &[String],
    revs: (&str, &str),
    no_route: &[String],
    noisy: &[String],
    round: usize,
) {
    for i in 0..n {
        let id = format!("w-{i}");
        let on_candidate = cohort.contains(&id);
        let (rev, list): (&str, &[&str]) = if on_candidate {
            (revs.1, &["claude", "opencode"])
        } else {
            (revs.0, &["opencode", "claude"])
        };
        let mut b = common::Beat::new(&id).own_host().rev(Some(rev)).list(list);
        b = if no_route.contains(&id) {
            b.active(None).only_caps(&[])
        } else {
            b.active(Some(list[0]))
        };
        if noisy.contains(&id) {
            let burst: Vec<Value> = (0..3)
                .map(|k| {
                    serde_json::json!({"id": format!("{id}-r{round}-{k}"), "at": common::ago(1),
                        "from": "claude", "to": "opencode",
                        "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router"}})
                })
                .collect();
            b = b.failovers(Value::Array(burst));
        }
        let r = h.post_heartbeat(&b.json()).await;
        assert_eq!(r.status().as_u16(), 200, "{id}");
    }
}

/// The guard's minimum counts against a real hub, heartbeats posted by
/// the test every second (issue 33): a cohort of 4 where one worker has no
/// route and bursts of failovers on every beat bakes its 20 s and is
/// promoted, never halted; the next rollout, to a cohort of 4 where 3 of
/// the 4 on the candidate have no route, is halted within 60 s (here
/// within a few judgements).
#[tokio::test(flavor = "multi_thread")]
async fn one_noisy_worker_of_four_is_not_halted_and_three_of_four_with_no_route_are() {
    const N: usize = 12;
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let accepted = revision(&h).await;
    beat_all(&h, N, &accepted).await;
    let good = doc(&["claude", "opencode"]);
    let r = start(&h, "cohort=4&bake=20s", &accepted, &good).await;
    assert_eq!(r.status().as_u16(), 201);
    let candidate = r.json::<Value>().await.expect("rollout")["candidate_revision"]
        .as_str()
        .expect("rev")
        .to_owned();
    let cohort = cohort_ids(&h, N, &accepted).await;
    assert_eq!(cohort.len(), 4, "{cohort:?}");
    let noisy = cohort[0].clone();
    let began = Instant::now();
    let mut seen_noise = false;
    let mut round = 0;
    let end = loop {
        beat_round(
            &h,
            N,
            &cohort,
            (&accepted, &candidate),
            std::slice::from_ref(&noisy),
            std::slice::from_ref(&noisy),
            round,
        )
        .await;
        round += 1;
        let (_, v) = current(&h).await;
        assert_ne!(v["state"], "halted", "one noisy worker of 4 halted it: {v}");
        let c = &v["guard"]["cohort"];
        seen_noise |= c["no_route"] == 1 && c["failing"] == 1 && c["workers"] == 4;
        if v["state"] != "baking" || began.elapsed() > Duration::from_secs(45) {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(1000)).await;
    };
    assert!(seen_noise, "the guard counted the noisy worker: {end}");
    assert_eq!(end["state"], "promoted", "{end}");
    assert!(
        end["guard"]["cohort"]["failovers"].as_u64() >= Some(3),
        "{end}"
    );

    // The promoted list is now the accepted one; a bad order to 4 of the
    // 12, three of them with no route on it.
    let accepted = revision(&h).await;
    assert_eq!(accepted, candidate);
    beat_all(&h, N, &accepted).await;
    let bad = doc(&["codex"]);
    let r = start(&h, "cohort=4&bake=10m", &accepted, &bad).await;
    assert_eq!(r.status().as_u16(), 201);
    let candidate = r.json::<Value>().await.expect("rollout")["candidate_revision"]
        .as_str()
        .expect("rev")
        .to_owned();
    let cohort = cohort_ids(&h, N, &accepted).await;
    assert_eq!(cohort.len(), 4, "{cohort:?}");
    let began = Instant::now();
    let mut round = 0;
    let end = loop {
        beat_round(
            &h,
            N,
            &cohort,
            (&accepted, &candidate),
            &cohort[..3],
            &[],
            round,
        )
        .await;
        round += 1;
        let (_, v) = current(&h).await;
        if v["state"] != "baking" || began.elapsed() > Duration::from_secs(60) {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(1000)).await;
    };
    let took = began.elapsed();
    assert_eq!(end["state"], "halted", "{end}");
    assert!(took < Duration::from_secs(60), "{took:?}");
    assert_eq!(
        end["reason"], "halted by the guard: no route 0% → 75% in the cohort (rest 0%)",
        "{end}"
    );
    eprintln!("3 of 4 with no route halted {took:?} after the start");
}

/// Rounds of [`beat_round`] a second apart, until the rollout is no longer
/// baking or `within` has passed; the rollout as each round left it.
async fn rounds_until_ended(
    h: &TestHub,
    n: usize,
    cohort: &[String],
    revs: (&str, &str),
    noisy: &[String],
    within: Duration,
) -> Vec<Value> {
    let began = Instant::now();
    let mut seen = Vec::new();
    for round in 0.. {
        beat_round(h, n, cohort, revs, &[], noisy, round).await;
        let (_, v) = current(h).await;
        let baking = v["state"] == "baking";
        seen.push(v);
        if !baking || began.elapsed() > within {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    seen
}

/// The failover measure's one-worker case against a real hub (issue 33;
/// docs/rollout.md, *The guard*), heartbeats posted by the test every
/// second. The guard judges by the documented counts and margins but for
/// the minute a worker must be observed before a rate is read, 4 s here so
/// the test does not wait minutes. A cohort of 4 of 12 where one worker on
/// the candidate reports three fresh failovers with every beat is judged on
/// its rate and not halted (one worker weighs 3 failovers at most and is
/// never more than half the cohort): its bake ends promoted. The next
/// rollout, where three of its four do, is halted by the failover measure.
#[tokio::test(flavor = "multi_thread")]
async fn one_workers_failovers_do_not_halt_a_cohort_of_four_and_three_workers_failovers_do() {
    const N: usize = 12;
    let h = TestHub::start_with(FLEET, |o| o.guard.failover_min_observed_s = 4).await;
    let accepted = revision(&h).await;
    beat_all(&h, N, &accepted).await;
    let r = start(
        &h,
        "cohort=4&bake=16s",
        &accepted,
        &doc(&["claude", "opencode"]),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let candidate = r.json::<Value>().await.expect("rollout")["candidate_revision"]
        .as_str()
        .expect("rev")
        .to_owned();
    let cohort = cohort_ids(&h, N, &accepted).await;
    assert_eq!(cohort.len(), 4, "{cohort:?}");
    let seen = rounds_until_ended(
        &h,
        N,
        &cohort,
        (&accepted, &candidate),
        &cohort[..1],
        Duration::from_secs(45),
    )
    .await;
    let end = seen.last().expect("a round");
    assert!(
        seen.iter().all(|v| v["state"] != "halted"),
        "one worker's failovers halted a cohort of 4: {end}"
    );
    // The rate was read: the four observed past the time it needs, one of
    // them failing over, its bursts capped at 3.
    let read = seen.iter().any(|v| {
        let c = &v["guard"]["cohort"];
        c["workers"] == 4 && c["failing"] == 1 && c["observed_s"].as_u64() >= Some(4 * 4)
    });
    assert!(read, "the guard never judged the rate: {end}");
    assert_eq!(end["state"], "promoted", "{end}");
    assert_eq!(end["guard"]["cohort"]["failovers"], 3, "{end}");

    let accepted = revision(&h).await;
    assert_eq!(accepted, candidate);
    beat_all(&h, N, &accepted).await;
    let r = start(
        &h,
        "cohort=4&bake=10m",
        &accepted,
        &doc(&["opencode", "claude"]),
    )
    .await;
    assert_eq!(r.status().as_u16(), 201);
    let candidate = r.json::<Value>().await.expect("rollout")["candidate_revision"]
        .as_str()
        .expect("rev")
        .to_owned();
    let cohort = cohort_ids(&h, N, &accepted).await;
    assert_eq!(cohort.len(), 4, "{cohort:?}");
    let seen = rounds_until_ended(
        &h,
        N,
        &cohort,
        (&accepted, &candidate),
        &cohort[..3],
        Duration::from_secs(45),
    )
    .await;
    let end = seen.last().expect("a round");
    assert_eq!(end["state"], "halted", "{end}");
    let reason = end["reason"].as_str().unwrap_or("");
    assert!(
        reason.starts_with("halted by the guard: failovers 0.0/min → ")
            && reason.ends_with("/min in the cohort (rest 0.0/min)"),
        "{end}"
    );
}
