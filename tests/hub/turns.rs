//! Turn boundaries (issue 33): a heartbeat's `turn` and `next_turn_agent`
//! are checked and carried into `/v1/workers`; a simulated fleet keeps a
//! turn's agent after a write until the turn ends, then switches, and a
//! structured failure mid-turn still moves a worker at once.

use crate::common;
use crate::sim::spawn_sim;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use common::{TestHub, ago, eventually};
use macfleet::client::{FailoverQuery, Writer};
use macfleet::sim::{Scenario, SimOptions};
use serde_json::{Value, json};

const FLEET: &str = "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"pi\", \"claude\"]\n";

/// `/v1/workers` as the hub sends it, by worker id.
async fn entries(h: &TestHub) -> HashMap<String, Value> {
    let page: Value = h
        .http()
        .get(h.path("/v1/workers"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("workers")
        .json()
        .await
        .expect("json");
    page["workers"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|w| (w["worker"].as_str().expect("id").to_string(), w.clone()))
        .collect()
}

fn beat(worker: &str, extra: Value) -> Value {
    let mut b = json!({
        "worker": worker, "host": "node-1", "sent_at": ago(1),
        "agents": ["opencode", "claude"], "active_agent": "opencode",
    });
    for (k, v) in extra.as_object().expect("fields") {
        b[k] = v.clone();
    }
    b
}

#[tokio::test]
async fn turns_are_carried_into_workers_and_bad_shapes_refused_naming_the_field() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let since = ago(240);
    let turn = json!({"agent": "opencode", "since": since});
    let ok = [
        ("w-turn", json!({"turn": turn, "next_turn_agent": "claude"})),
        ("w-between", json!({"turn": null, "next_turn_agent": null})),
        ("w-old", json!({})),
    ];
    for (w, extra) in &ok {
        let r = h.post_heartbeat(&beat(w, extra.clone())).await;
        assert_eq!(
            r.status(),
            200,
            "{w}: {}",
            r.text().await.unwrap_or_default()
        );
    }
    let bad = [
        (json!({"turn": "opencode"}), "turn"),
        (json!({"turn": {"agent": "opencode"}}), "turn"),
        (
            json!({"turn": {"agent": "opencode", "since": since, "x": 1}}),
            "turn",
        ),
        (
            json!({"turn": {"agent": "claude", "since": since}}),
            "turn.agent",
        ),
        (
            json!({"turn": {"agent": "Opencode", "since": since}}),
            "turn.agent",
        ),
        (
            json!({"turn": {"agent": "opencode", "since": ago(-7200)}}),
            "turn.since",
        ),
        (
            json!({"turn": {"agent": "opencode", "since": ago(-172_800)}}),
            "turn.since",
        ),
        (json!({"active_agent": null, "turn": turn}), "turn.agent"),
        (json!({"next_turn_agent": "Claude"}), "next_turn_agent"),
        (json!({"next_turn_agent": ["claude"]}), "next_turn_agent"),
        (
            json!({"next_turn_agent": "x".repeat(33)}),
            "next_turn_agent",
        ),
    ];
    for (extra, field) in &bad {
        let r = h.post_heartbeat(&beat("w-bad", extra.clone())).await;
        let status = r.status().as_u16();
        let body: Value = r.json().await.expect("error body");
        assert!(matches!(status, 400 | 422), "{extra}: {status} {body}");
        assert_eq!(
            body["error"]["code"], "invalid_heartbeat",
            "{extra}: {body}"
        );
        let msg = body["error"]["message"].as_str().unwrap_or_default();
        let rest = msg.strip_prefix(field).unwrap_or_default();
        assert!(
            rest.starts_with(':') || rest.starts_with(".*:"),
            "{extra}: {msg}"
        );
    }
    let all = entries(&h).await;
    assert!(
        !all.contains_key("w-bad"),
        "nothing stored of a refused heartbeat"
    );
    let w = &all["w-turn"];
    assert_eq!(w["turn"]["agent"], "opencode");
    let sent: DateTime<Utc> = since.parse().expect("time");
    let back: DateTime<Utc> = w["turn"]["since"]
        .as_str()
        .expect("since")
        .parse()
        .expect("time");
    assert_eq!(back, sent);
    assert_eq!(w["next_turn_agent"], "claude");
    let w = &all["w-between"];
    assert!(w.get("turn").is_some_and(Value::is_null), "{w}");
    assert!(w.get("next_turn_agent").is_some_and(Value::is_null), "{w}");
    let w = &all["w-old"];
    assert!(
        w.get("turn").is_none() && w.get("next_turn_agent").is_none(),
        "{w}"
    );
}

fn turning(extra: &str, min_s: u64, max_s: u64) -> Scenario {
    let text = format!(
        "name = \"turns\"\ncycle_s = 0\n{extra}\n[turns]\nmin_s = {min_s}\nmax_s = {max_s}\n"
    );
    Scenario::parse("turns", &text).expect("scenario")
}

fn turn_of(w: &Value) -> Option<(String, DateTime<Utc>)> {
    let t = w.get("turn")?;
    Some((
        t["agent"].as_str()?.to_string(),
        t["since"].as_str()?.parse().ok()?,
    ))
}

fn time(w: &Value, field: &str) -> DateTime<Utc> {
    w[field].as_str().expect("a time").parse().expect("time")
}

/// After a write, a worker in a turn on opencode keeps it (and the
/// revision it runs by, saying it goes to claude next) until its turn of
/// at least 6 s ends; then it switches, and the whole fleet is on the new
/// list once every turn has ended.
#[tokio::test(flavor = "multi_thread")]
async fn after_a_write_a_worker_mid_turn_keeps_its_agent_until_the_turn_ends() {
    const N: usize = 12;
    const MIN_S: i64 = 6;
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let (_stats, stop_tx, sim) = spawn_sim(&h, SimOptions::new(N, turning("", 6, 10)));
    let first = eventually(400, || async {
        let all = entries(&h).await;
        (all.len() == N
            && all
                .values()
                .all(|w| w["in_sync"] == true && turn_of(w).is_some()))
        .then_some(all)
    })
    .await
    .expect("every worker heartbeats, in a turn on opencode");
    assert!(first.values().all(|w| w["active_agent"] == "opencode"));
    let old = first.values().next().expect("a worker")["config_revision"]
        .as_str()
        .expect("rev")
        .to_string();
    let owner = h.client(&h.owner);
    let who = owner.whoami().await.expect("who");
    let new = "[fleet]\nMAC_CODING_AGENTS = [\"claude\", \"opencode\", \"pi\"]\n";
    let written_at = Utc::now();
    let accepted = Writer::new(owner, &who)
        .expect("writer")
        .put_config(new, &old)
        .await
        .expect("put");
    let rev = accepted.revision;
    // Per worker: the turn it was seen holding on the old list.
    let mut holding: HashMap<String, DateTime<Utc>> = HashMap::new();
    let mut switched: HashMap<String, DateTime<Utc>> = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(40);
    while switched.len() < N && Instant::now() < deadline {
        for (id, w) in entries(&h).await {
            let (agent, since) = turn_of(&w).expect("a simulated worker is always in a turn");
            if w["config_revision"] == old.as_str() {
                assert_eq!(w["active_agent"], "opencode", "{w}");
                assert_eq!(agent, "opencode", "{w}");
                // Its turn began before the list reached it.
                assert!(since <= written_at + chrono::Duration::seconds(3), "{w}");
                if w["next_turn_agent"] == "claude" {
                    assert!(!switched.contains_key(&id), "back on the old list: {w}");
                    holding.insert(id, since);
                }
            } else if w["config_revision"] == rev.as_str() && !switched.contains_key(&id) {
                assert_eq!(w["active_agent"], "claude", "{w}");
                assert_eq!(agent, "claude", "a new turn on the new list: {w}");
                assert_eq!(w["agents"], json!(["claude", "opencode", "pi"]));
                if let Some(held_since) = holding.get(&id) {
                    // It switched only once the turn it held had lasted.
                    let at = time(&w, "sent_at");
                    assert!(
                        at - *held_since >= chrono::Duration::seconds(MIN_S - 1),
                        "{id} switched {}s into its turn",
                        (at - *held_since).num_seconds()
                    );
                    assert!(since > *held_since, "{w}");
                }
                switched.insert(id, time(&w, "received_at"));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        switched.len(),
        N,
        "every worker switches once its turn ends"
    );
    assert!(
        holding.len() >= N / 2,
        "most workers were seen holding their turn's agent after the write: {}",
        holding.len()
    );
    // No switch is a failover.
    let log = h
        .client(&h.viewer)
        .failovers(&FailoverQuery::default())
        .await
        .expect("log");
    assert!(log.events.is_empty(), "{:?}", log.events);
    let _ = stop_tx.send(());
    sim.await.expect("sim task").expect("sim ran");
}

/// Turns of 30 s or more, and opencode rate limited for the whole fleet 4 s
/// in: every worker leaves it at once (a failover to pi), its turn going on
/// on pi, long before any turn ends.
#[tokio::test(flavor = "multi_thread")]
async fn a_structured_failure_mid_turn_moves_a_worker_at_once() {
    const N: usize = 8;
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let phase = "[[phases]]\nat_s = 4\nuntil_s = 600\nagents = [\"opencode\"]\nkind = \"rate_limited\"\nstatus = 429\n";
    let started = Instant::now();
    let (_stats, stop_tx, sim) = spawn_sim(&h, SimOptions::new(N, turning(phase, 30, 40)));
    let before = eventually(60, || async {
        let all = entries(&h).await;
        (all.len() == N
            && all
                .values()
                .all(|w| turn_of(w).is_some_and(|(a, _)| a == "opencode")))
        .then_some(all)
    })
    .await
    .expect("every worker in a turn on opencode before the failure");
    let moved = eventually(400, || async {
        let all = entries(&h).await;
        all.values()
            .all(|w| w["active_agent"] == "pi")
            .then_some(all)
    })
    .await
    .expect("every worker moves to pi");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "at once, not at a turn's end: {:?}",
        started.elapsed()
    );
    for (id, w) in &moved {
        let (agent, since) = turn_of(w).expect("still in its turn");
        assert_eq!(agent, "pi", "{w}");
        assert_eq!(
            Some(since),
            turn_of(&before[id]).map(|t| t.1),
            "the same turn: {w}"
        );
        let log = h
            .client(&h.viewer)
            .failovers(&FailoverQuery {
                worker: Some(id.clone()),
                ..FailoverQuery::default()
            })
            .await
            .expect("log");
        let walk: Vec<(&str, Option<&str>)> = log
            .events
            .iter()
            .map(|e| (e.failover.from.as_str(), e.failover.to.as_deref()))
            .collect();
        assert_eq!(walk, [("opencode", Some("pi"))], "{id}");
    }
    let _ = stop_tx.send(());
    sim.await.expect("sim task").expect("sim ran");
}
