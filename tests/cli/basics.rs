//! The real binary against the real hub: snapshots, exit codes, tokens.

use crate::common;

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

/// A command takes only the options it uses: the others are a usage error
/// (2) that names them, whether typed after the command or before it, and
/// `--help` does not offer them. The demo never starts for one it ignores.
#[test]
fn options_a_command_does_not_use_are_usage_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.toml");
    let t = tokens.to_str().expect("utf-8 path");
    let cases: [&[&str]; 6] = [
        &["demo", "--hub", "http://127.0.0.1:9", "--headless"],
        &["--hub", "http://127.0.0.1:9", "demo", "--headless"],
        &["agents", "show", "--dry-run", "--force"],
        &[
            "hub",
            "token",
            "--name",
            "n",
            "--role",
            "owner",
            "--tokens",
            t,
            "--hub",
            "http://127.0.0.1:9",
        ],
        &[
            "hub",
            "token",
            "--name",
            "n",
            "--role",
            "owner",
            "--tokens",
            t,
            "--read-only",
            "--allow-plaintext",
        ],
        &["agents", "add", "pi", "--file", t, "--force"],
    ];
    for args in cases {
        let out = bounded(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        assert!(err.contains("--"), "{args:?} names the option: {err}");
        assert!(
            out.stdout.is_empty(),
            "{args:?} printed: {}",
            text(&out.stdout)
        );
    }
    assert!(!tokens.exists(), "no token was made by a refused command");
    let help = text(&macfleet(&["demo", "--help"], &[]).stdout);
    assert!(
        !help.contains("--hub") && !help.contains("--ca-cert"),
        "{help}"
    );
    assert!(
        help.contains("never printed"),
        "--headless says where the token is:\n{help}"
    );
    let help = text(&macfleet(&["hub", "token", "--help"], &[]).stdout);
    assert!(
        !help.contains("--read-only") && !help.contains("--allow-plaintext"),
        "{help}"
    );
}

#[test]
fn an_unknown_scenario_is_a_usage_error_that_lists_them() {
    let out = bounded(&["demo", "--scenario", "nosuch", "--headless"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    for s in ["steady", "quota-cap", "aug19"] {
        assert!(err.contains(s), "lists {s}: {err}");
    }
}

/// The binary with a clean environment, killed if it runs past 20 s (a
/// demo that took an option it should refuse would run until stopped).
fn bounded(args: &[&str]) -> std::process::Output {
    let cfg = tempfile::tempdir().expect("tempdir");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_macfleet"))
        .args(args)
        .env_remove("MAC_HUB_URL")
        .env_remove("MAC_HUB_TOKEN")
        .env("XDG_CONFIG_HOME", cfg.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("macfleet runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// An error the CLI explains in a sentence costs no backtrace, whatever
/// the shell sets: with `RUST_BACKTRACE=1` color-eyre resolved one for
/// every error (the whole binary's line tables read in: 155 MiB and 0.45 s
/// for `hub unreachable`), and printed none of it. The sentence and the
/// exit code stay.
#[test]
fn an_explained_error_costs_no_backtrace_under_rust_backtrace() {
    let cfg = tempfile::tempdir().expect("tempdir");
    // A port nothing listens on: the connection is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    for bt in ["1", "full"] {
        let run = crate::common::measure::run_peak(
            std::process::Command::new(env!("CARGO_BIN_EXE_macfleet"))
                .args([
                    "get",
                    "agents",
                    "--hub",
                    &format!("http://127.0.0.1:{port}"),
                ])
                .env_remove("RUST_LIB_BACKTRACE")
                .env("MAC_HUB_TOKEN", format!("{}{}", "mft_", "x".repeat(40)))
                .env("XDG_CONFIG_HOME", cfg.path())
                .env("RUST_BACKTRACE", bt),
            std::time::Duration::from_secs(20),
        );
        let err = text(&run.output.stderr);
        assert_eq!(run.output.status.code(), Some(5), "hub unreachable: {err}");
        assert!(err.contains("macfleet: "), "a sentence: {err}");
        assert!(!err.to_lowercase().contains("backtrace"), "{err}");
        eprintln!(
            "RUST_BACKTRACE={bt}: peak {} KiB, {:?}",
            run.peak_kib, run.wall
        );
        assert!(
            run.peak_kib < 48 * 1024,
            "RUST_BACKTRACE={bt}: an explained error peaked at {} KiB",
            run.peak_kib
        );
    }
}
