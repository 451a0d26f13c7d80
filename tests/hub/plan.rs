//! `POST /v1/plan` (issue 27, "The plan at any size") against a real
//! `macfleet hub` process: what an order would do over the whole fleet, from
//! the projection the TUI draws; a viewer may ask; nothing is written; bad
//! agents are refused as a `PUT`'s.

use crate::common;

use std::time::Duration;

use common::HubProcess;
use macfleet::client::{Client, ClientError, ClientOptions, Token};

/// A heartbeat: on `active`, `caps` runnable, the other agent of the list
/// reported but not runnable.
fn beat(worker: &str, active: &str, caps: &[&str]) -> serde_json::Value {
    let cap = |a: &str| {
        let ok = caps.contains(&a);
        serde_json::json!({"binary": ok, "token": true, "preflight": "ok"})
    };
    serde_json::json!({
        "worker": worker, "host": "h", "sent_at": common::ago(1),
        "config_revision": null, "agents": ["opencode", "claude"],
        "active_agent": active,
        "capabilities": {"opencode": cap("opencode"), "claude": cap("claude")},
        "failovers": []
    })
}

fn client(url: &str, token: &str) -> Client {
    Client::new(url, Some(Token::new(token)), ClientOptions::default()).expect("client")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plan_counts_the_whole_fleet_writes_nothing_and_refuses_bad_agents() {
    let (dir, owner, viewer, worker) = common::hub_dir();
    let hub = HubProcess::spawn(dir.path(), common::Spawn::default());
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("http");
    // w1 on claude, opencode held off; w2 on opencode, both runnable; w3
    // on opencode, the only one it can run.
    for b in [
        beat("w1", "claude", &["opencode", "claude"]),
        beat("w2", "opencode", &["opencode", "claude"]),
        beat("w3", "opencode", &["opencode"]),
    ] {
        let r = http
            .post(format!("{}/v1/heartbeats", hub.url))
            .bearer_auth(&worker)
            .json(&b)
            .send()
            .await
            .expect("heartbeat");
        assert_eq!(r.status().as_u16(), 200);
    }
    let before = client(&hub.url, &owner).config().await.expect("config");
    let history = client(&hub.url, &owner).history().await.expect("history");
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // A viewer asks.
    let p = client(&hub.url, &viewer)
        .plan(&names(&["claude", "opencode"]))
        .await
        .expect("plan");
    assert_eq!(p.config_revision, before.revision);
    assert_eq!(p.current_agents, names(&["opencode", "claude"]));
    assert_eq!((p.workers, p.healthy), (3, 3));
    let rung = |p: &macfleet::wire::PlanAnswer, a: &str| {
        let r = p.rungs.iter().find(|r| r.agent == a).expect("rung");
        (r.rank, r.before, r.after)
    };
    assert_eq!(rung(&p, "claude"), (Some(0), 1, 2));
    assert_eq!(rung(&p, "opencode"), (Some(1), 2, 1));
    assert_eq!(p.change_rung, 1, "w2 moves to claude");
    assert_eq!((p.no_route.before, p.no_route.after), (0, 0));
    // Removing opencode: w3 has no route.
    let p = client(&hub.url, &owner)
        .plan(&names(&["claude"]))
        .await
        .expect("plan");
    assert_eq!(rung(&p, "opencode"), (None, 2, 0));
    assert_eq!((p.no_route.before, p.no_route.after), (0, 1));
    assert_eq!(p.change_rung, 2);
    assert!(
        p.warnings.iter().any(|w| w.contains("removing opencode")),
        "{:?}",
        p.warnings
    );
    // Bad agents: 422 invalid_agents, as a PUT's; not the shape: 400.
    for bad in [vec![], names(&["claude", "claude"]), names(&["Claude"])] {
        match client(&hub.url, &owner).plan(&bad).await {
            Err(ClientError::Validation { code, .. }) => assert_eq!(code, "invalid_agents"),
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    for body in [
        "not json",
        "{\"agents\": \"claude\"}",
        "{\"agents\": [], \"x\": 1}",
    ] {
        let r = http
            .post(format!("{}/v1/plan", hub.url))
            .bearer_auth(&owner)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("plan");
        assert_eq!(r.status().as_u16(), 400, "{body}");
    }
    // A body not of the shape is told which part is wrong, never serde's
    // words; an array is no plan, whatever it holds ([["claude"]] was
    // taken for {"agents": ["claude"]}, a 200).
    for (body, says) in [
        ("[\"pi\"]", "the body is an array, not an object"),
        ("[[\"claude\"]]", "the body is an array, not an object"),
        (
            "{\"agents\": \"claude\"}",
            "\"agents\" is a string, not an array of strings",
        ),
        (
            "{\"agents\": [\"claude\", 3]}",
            "agents[1] is a number, not a string",
        ),
        ("{\"agents\": [\"claude\"", "not JSON: "),
    ] {
        let r = http
            .post(format!("{}/v1/plan", hub.url))
            .bearer_auth(&owner)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("plan");
        assert_eq!(r.status().as_u16(), 400, "{body}");
        let e: serde_json::Value = r.json().await.expect("json");
        let message = e["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(e["error"]["code"], "bad_request", "{body}: {e}");
        assert!(message.starts_with(says), "{body}: {message}");
        assert!(
            message.ends_with("the body is {\"agents\": [\"name\", ...]}"),
            "{body}: {message}"
        );
        assert!(
            !message.contains("PlanRequest") && !message.contains("sequence"),
            "{message}"
        );
        if says.starts_with("not JSON") {
            assert_eq!(
                (e["error"]["line"].as_u64(), e["error"]["column"].is_u64()),
                (Some(1), true),
                "{e}"
            );
        }
    }
    // A worker may not ask.
    let r = http
        .post(format!("{}/v1/plan", hub.url))
        .bearer_auth(&worker)
        .json(&serde_json::json!({"agents": ["claude"]}))
        .send()
        .await
        .expect("plan");
    assert_eq!(r.status().as_u16(), 403);
    // Nothing written.
    let after = client(&hub.url, &owner).config().await.expect("config");
    assert_eq!(after, before);
    let now = client(&hub.url, &owner).history().await.expect("history");
    assert_eq!(now.revisions.len(), history.revisions.len());
    // Counted under its own route, as every route of the contract.
    let m = client(&hub.url, &owner).metrics().await.expect("metrics");
    assert!(
        m.contains("macfleet_hub_requests_total{route=\"/v1/plan\",status=\"200\"} 2"),
        "{}",
        m.lines()
            .filter(|l| l.contains("/v1/plan") || l.contains("other"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}
