//! `/v1/health`'s `word` (issue 28): the status word the hub can know, in
//! crate::verdict's order, from a real hub over loopback.

use std::time::Duration;

use crate::common::{TestHub, ago};
use serde_json::{Value, json};

const LIST: &str = "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"pi\", \"claude\", \"codex\"]\n";

async fn health(h: &TestHub) -> Value {
    h.http()
        .get(h.path("/v1/health"))
        .header("accept", "application/json")
        .send()
        .await
        .expect("health")
        .json()
        .await
        .expect("json")
}

/// On rank 0 with every rung below it unable to run: headroom 0, as
/// aug19's workers stand after their upstreams return.
fn beat(worker: &str, rev: &str, cannot_below: bool) -> macfleet::wire::Heartbeat {
    let mut caps = serde_json::Map::new();
    for a in ["opencode", "pi", "claude", "codex"] {
        let ok = a == "opencode" || !cannot_below;
        caps.insert(
            a.into(),
            json!({"binary": ok, "token": true, "preflight": if ok { "ok" } else { "unknown" }}),
        );
    }
    serde_json::from_value(json!({
        "worker": worker, "host": format!("host-{worker}"), "sent_at": ago(1),
        "config_revision": rev, "agents": ["opencode", "pi", "claude", "codex"],
        "active_agent": "opencode", "capabilities": caps, "failovers": [],
    }))
    .expect("heartbeat")
}

#[tokio::test(flavor = "multi_thread")]
async fn health_says_at_risk_then_config_invalid() {
    let h = TestHub::start_with(LIST, |_| {}).await;
    let rev = h.client(&h.viewer).config().await.expect("config").revision;
    let c = h.client(&h.worker);
    for i in 0..4 {
        c.heartbeat(&beat(&format!("w-{i}"), &rev, false))
            .await
            .expect("beat");
    }
    let v = health(&h).await;
    assert_eq!(v["word"], "OK", "{v}");
    assert_eq!(v["status"], "ok", "{v}");
    // Every healthy worker one failure from no route, all on rank 0.
    for i in 0..4 {
        c.heartbeat(&beat(&format!("w-{i}"), &rev, true))
            .await
            .expect("beat");
    }
    let v = health(&h).await;
    assert_eq!(v["word"], "AT RISK 4", "{v}");
    assert_eq!(v["status"], "degraded", "{v}");
    assert!(
        v["problems"]
            .to_string()
            .contains("one failure from no route"),
        "{v}"
    );
    // A hand edit that does not validate is said over the fleet's risk.
    std::fs::write(
        h.config_path(),
        "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \n",
    )
    .expect("edit");
    let mut last = Value::Null;
    for _ in 0..100 {
        last = health(&h).await;
        if last["word"] == "CONFIG INVALID" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(last["word"], "CONFIG INVALID", "{last}");
    assert_eq!(last["status"], "degraded", "{last}");
    // The fleet's risk is still named under a higher word (the 15:16
    // audit: it went from `problems` while get workers still counted it).
    assert!(
        last["problems"]
            .to_string()
            .contains("4 of 4 healthy workers are one failure from no route"),
        "{last}"
    );
}
