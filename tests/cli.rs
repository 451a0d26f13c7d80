//! The real binary against the real hub: snapshots, exit codes, tokens.

mod common;

use common::{TestHub, macfleet, text};

#[tokio::test(flavor = "multi_thread")]
async fn get_snapshots_and_exit_codes() {
    let h = TestHub::start().await;
    let hb: macfleet::wire::Heartbeat =
        serde_json::from_value(common::heartbeat("w-042", None, serde_json::json!([])))
            .expect("hb");
    h.client(&h.worker).heartbeat(&hb).await.expect("heartbeat");
    let url = h.url();
    let viewer = h.viewer.clone();
    let env = [
        ("MAC_HUB_URL", url.as_str()),
        ("MAC_HUB_TOKEN", viewer.as_str()),
    ];

    let out = tokio::task::spawn_blocking({
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        move || {
            let env: Vec<(&str, &str)> =
                env.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            (
                macfleet(&["get", "workers", "-o", "json"], &env),
                macfleet(&["get", "workers"], &env),
                macfleet(&["get", "agents"], &env),
                macfleet(&["get", "history", "-o", "json"], &env),
            )
        }
    })
    .await
    .expect("join");
    let (json, table, agents, history) = out;
    assert_eq!(json.status.code(), Some(0), "{}", text(&json.stderr));
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("the API's own JSON");
    assert_eq!(v["workers"][0]["worker"], "w-042");
    assert!(v["cursor"].is_string());
    let t = text(&table.stdout);
    assert!(t.starts_with("WORKER"), "{t}");
    assert!(t.contains("w-042") && t.contains("claude #1"), "{t}");
    assert_eq!(
        text(&agents.stdout).lines().take(2).collect::<Vec<_>>(),
        ["0  opencode", "1  claude"]
    );
    let hv: serde_json::Value = serde_json::from_slice(&history.stdout).expect("json");
    assert_eq!(hv["revisions"][0]["by"], "(initial)");
    // No token of ours is ever printed.
    for o in [&json, &table, &agents, &history] {
        assert!(!text(&o.stdout).contains(&h.viewer) && !text(&o.stderr).contains(&h.viewer));
    }

    let worker = h.worker.clone();
    let url2 = url.clone();
    let (forbidden, unreachable, nohub, unknown) = tokio::task::spawn_blocking(move || {
        (
            macfleet(
                &["get", "workers"],
                &[("MAC_HUB_URL", &url2), ("MAC_HUB_TOKEN", &worker)],
            ),
            macfleet(
                &["get", "workers"],
                &[
                    ("MAC_HUB_URL", "http://127.0.0.1:1"),
                    ("MAC_HUB_TOKEN", "x"),
                ],
            ),
            macfleet(&["get", "workers"], &[]),
            macfleet(&["get", "wrokers"], &[]),
        )
    })
    .await
    .expect("join");
    assert_eq!(
        forbidden.status.code(),
        Some(6),
        "{}",
        text(&forbidden.stderr)
    );
    assert_eq!(
        unreachable.status.code(),
        Some(5),
        "{}",
        text(&unreachable.stderr)
    );
    assert_eq!(nohub.status.code(), Some(2));
    assert!(
        text(&nohub.stderr).contains("macfleet demo"),
        "{}",
        text(&nohub.stderr)
    );
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn hub_token_appends_a_hash_and_prints_the_token_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.toml");
    std::fs::write(&tokens, "# our tokens\n").expect("write");
    let p = tokens.to_str().expect("utf-8 path");
    let out = macfleet(
        &[
            "hub", "token", "--name", "alice", "--role", "owner", "--tokens", p,
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let token = text(&out.stdout).trim().to_string();
    assert!(token.starts_with("mft_"));
    let file = std::fs::read_to_string(&tokens).expect("read");
    assert!(file.starts_with("# our tokens\n"), "what was there stays");
    assert!(!file.contains(&token), "only the hash is stored");
    let t = macfleet::hub::auth::Tokens::load(&tokens).expect("loads");
    assert_eq!(t.lookup(&token).map(|p| p.name.as_str()), Some("alice"));
    let again = macfleet(
        &[
            "hub", "token", "--name", "alice", "--role", "viewer", "--tokens", p,
        ],
        &[],
    );
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again.stderr).contains("exists already"));
}
