//! What the scripted commands print, against the real hub: `get worker`,
//! the failover filters, `-o wide|jsonl`, `--watch`, a closed pipe,
//! completions and the man page, argument help, and that no token is
//! ever printed.

use crate::common;
use crate::pty;

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{TestHub, macfleet, text};
use serde_json::json;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_macfleet"));
    c.env_remove("MAC_HUB_URL")
        .env_remove("MAC_HUB_TOKEN")
        .env("XDG_CONFIG_HOME", "/nonexistent-macfleet-test")
        .env("COLUMNS", "200");
    c
}

async fn beat(h: &TestHub, worker: &str, failovers: serde_json::Value) {
    h.beat(common::heartbeat(worker, None, failovers)).await
}

/// Run the binary off the async runtime.
async fn run(args: Vec<String>, env: Vec<(String, String)>) -> std::process::Output {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        macfleet(&args, &env)
    })
    .await
    .expect("join")
}

fn env_for(h: &TestHub, token: &str) -> Vec<(String, String)> {
    vec![
        ("MAC_HUB_URL".into(), h.url()),
        ("MAC_HUB_TOKEN".into(), token.to_string()),
    ]
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// A heartbeat of `worker` whose clock reads `skew_s` seconds off the hub's.
async fn beat_skewed(h: &TestHub, worker: &str, skew_s: i64) {
    let at = macfleet::wire::fmt_time(chrono::Utc::now() + chrono::Duration::seconds(skew_s));
    h.beat(common::Beat::new(worker).sent_at(&at).json()).await
}

/// `get worker` names the worker's pool (that of the token that first
/// reported it: the test hub's worker token is `fleet`) and its clock
/// against the hub's past a minute either way, never within it.
#[tokio::test(flavor = "multi_thread")]
async fn get_worker_says_its_pool_and_a_clock_off_the_hubs() {
    let h = TestHub::start().await;
    beat_skewed(&h, "w-ahead", 630).await;
    beat_skewed(&h, "w-behind", -200).await;
    beat_skewed(&h, "w-close", 0).await;
    let env = env_for(&h, &h.viewer);
    let get = |id: &'static str| {
        let env = env.clone();
        async move {
            let o = run(args(&["get", "worker", id]), env).await;
            assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
            text(&o.stdout)
        }
    };
    let t = get("w-ahead").await;
    assert!(t.contains("POOL      fleet\n"), "{t}");
    assert!(t.contains("CLOCK     10m ahead of the hub\n"), "{t}");
    let t = get("w-behind").await;
    assert!(t.contains("CLOCK     3m behind the hub\n"), "{t}");
    let t = get("w-close").await;
    assert!(t.contains("POOL      fleet\n"), "{t}");
    assert!(!t.contains("CLOCK"), "within a minute, nothing: {t}");
}

/// `get worker` says a worker's turn (issue 33): how long it has been on
/// its turn's agent and where its next turn goes; nothing for a worker
/// that reports no turns.
#[tokio::test(flavor = "multi_thread")]
async fn get_worker_says_its_turn() {
    let h = TestHub::start().await;
    let mut b = common::Beat::new("w-turn").json();
    let active = b["active_agent"].as_str().expect("active").to_string();
    b["turn"] = serde_json::json!({"agent": active, "since": common::ago(240)});
    b["next_turn_agent"] = serde_json::json!("pi");
    h.beat(b).await;
    h.beat(common::Beat::new("w-plain").json()).await;
    let env = env_for(&h, &h.viewer);
    let o = run(args(&["get", "worker", "w-turn"]), env.clone()).await;
    let t = text(&o.stdout);
    assert!(
        t.contains(&format!(
            "TURN      on {active} for 4m: switches at its next turn (to pi)\n"
        )),
        "{t}"
    );
    let o = run(args(&["get", "worker", "w-plain"]), env).await;
    assert!(!text(&o.stdout).contains("TURN"), "{}", text(&o.stdout));
}

#[tokio::test(flavor = "multi_thread")]
async fn get_worker_filters_and_formats() {
    let h = TestHub::start().await;
    beat(
        &h,
        "w-001",
        json!([
            common::failover("w-001-1", "rate_limited", "opencode route: 429 from upstream"),
            {"id": "w-001-2", "at": "2026-11-29T15:04:00Z", "from": "claude", "to": null,
             "cause": {"kind": "auth", "status": 401, "source": "worker", "detail": "key revoked"}}
        ]),
    )
    .await;
    beat(
        &h,
        "w-002",
        json!([common::failover("w-002-1", "upstream_status", "502")]),
    )
    .await;
    let env = env_for(&h, &h.viewer);

    let one = run(args(&["get", "worker", "w-001"]), env.clone()).await;
    assert_eq!(one.status.code(), Some(0), "{}", text(&one.stderr));
    let t = text(&one.stdout);
    for want in [
        "WORKER    w-001",
        "HOST      gpu-node-17",
        "CAPABILITIES",
        "RANK  AGENT",
        "RECENT FAILOVERS",
        "WHY       opencode: rate_limited 429",
    ] {
        assert!(t.contains(want), "{want:?} in\n{t}");
    }
    let j = run(args(&["get", "worker", "w-001", "-o", "json"]), env.clone()).await;
    let v: serde_json::Value = serde_json::from_slice(&j.stdout).expect("json");
    assert_eq!(v["worker"]["worker"], "w-001");
    assert_eq!(v["recent_failovers"].as_array().map(Vec::len), Some(2));
    let missing = run(args(&["get", "worker", "w-404"]), env.clone()).await;
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).contains("no worker w-404"),
        "{}",
        text(&missing.stderr)
    );
    let no_id = run(args(&["get", "worker"]), env.clone()).await;
    assert_eq!(no_id.status.code(), Some(2));

    // Filters.
    let ids = |o: &std::process::Output| -> Vec<String> {
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        text(&o.stdout)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("one object a line");
                v["id"].as_str().unwrap_or_default().to_string()
            })
            .collect()
    };
    let all = run(args(&["get", "failovers", "-o", "jsonl"]), env.clone()).await;
    assert_eq!(ids(&all), ["w-001-1", "w-001-2", "w-002-1"]);
    let by_worker = run(
        args(&["get", "failovers", "-o", "jsonl", "--worker", "w-002"]),
        env.clone(),
    )
    .await;
    assert_eq!(ids(&by_worker), ["w-002-1"]);
    let by_kind = run(
        args(&["get", "failovers", "-o", "jsonl", "--kind", "auth"]),
        env.clone(),
    )
    .await;
    assert_eq!(ids(&by_kind), ["w-001-2"]);
    let by_agent = run(
        args(&["get", "failovers", "-o", "jsonl", "--agent", "claude"]),
        env.clone(),
    )
    .await;
    assert_eq!(
        ids(&by_agent),
        ["w-001-1", "w-001-2", "w-002-1"],
        "from or to claude"
    );
    // `common::failover` happened an hour ago; w-001-2 on 2026-11-29.
    let recent = run(
        args(&["get", "failovers", "-o", "jsonl", "--since", "10m"]),
        env.clone(),
    )
    .await;
    let expect_recent: [&str; 0] = [];
    assert_eq!(ids(&recent), expect_recent);
    let last_one = run(
        args(&["get", "failovers", "-o", "jsonl", "--limit", "1"]),
        env.clone(),
    )
    .await;
    assert_eq!(ids(&last_one), ["w-002-1"], "newest last");
    let bad_since = run(
        args(&["get", "failovers", "--since", "10parsecs"]),
        env.clone(),
    )
    .await;
    assert_eq!(bad_since.status.code(), Some(2));
    let bad_kind = run(args(&["get", "failovers", "--kind", "nope"]), env.clone()).await;
    assert_eq!(bad_kind.status.code(), Some(2));
    let misplaced = run(args(&["get", "workers", "--kind", "auth"]), env.clone()).await;
    assert_eq!(misplaced.status.code(), Some(2));

    // jsonl and wide everywhere.
    for what in ["workers", "agents", "history"] {
        let o = run(args(&["get", what, "-o", "jsonl"]), env.clone()).await;
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let lines = text(&o.stdout);
        assert!(!lines.is_empty());
        for l in lines.lines() {
            let v: serde_json::Value = serde_json::from_str(l).expect("one object a line");
            assert!(v.is_object(), "{l}");
        }
    }
    let narrow = run(args(&["get", "workers"]), {
        let mut e = env.clone();
        e.push(("COLUMNS".into(), "40".into()));
        e
    })
    .await;
    let wide = run(args(&["get", "workers", "-o", "wide"]), {
        let mut e = env.clone();
        e.push(("COLUMNS".into(), "40".into()));
        e
    })
    .await;
    assert!(
        !text(&narrow.stdout).contains("LAST FAILOVER"),
        "{}",
        text(&narrow.stdout)
    );
    assert!(
        text(&wide.stdout).contains("LAST FAILOVER"),
        "{}",
        text(&wide.stdout)
    );
}

/// `get failovers --watch -o jsonl` prints a failover posted after it
/// started, as one JSON object on one line.
#[tokio::test(flavor = "multi_thread")]
async fn watch_receives_a_failover_posted_after_it_started() {
    let h = TestHub::start().await;
    beat(
        &h,
        "w-001",
        json!([common::failover("before-1", "rate_limited", "x")]),
    )
    .await;
    let mut child = common::Kill(
        bin()
            .args(["get", "failovers", "--watch", "-o", "jsonl"])
            .env("MAC_HUB_URL", h.url())
            .env("MAC_HUB_TOKEN", &h.viewer)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn"),
    );
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let first = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the snapshot");
    assert!(first.contains("\"before-1\""), "{first}");
    beat(
        &h,
        "w-003",
        json!([common::failover("after-1", "auth", "y")]),
    )
    .await;
    let next = rx.recv_timeout(Duration::from_secs(20));
    let _ = child.kill();
    let _ = child.wait();
    let next = next.expect("the failover posted after --watch started");
    let v: serde_json::Value = serde_json::from_str(&next).expect("one JSON object a line");
    assert_eq!(v["id"], "after-1");
    assert_eq!(v["worker"], "w-003");
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_workers_prints_a_line_when_a_worker_changes() {
    let h = TestHub::start().await;
    beat(&h, "w-001", json!([])).await;
    let mut child = common::Kill(
        bin()
            .args(["get", "workers", "--watch"])
            .env("MAC_HUB_URL", h.url())
            .env("MAC_HUB_TOKEN", &h.viewer)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn"),
    );
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stdout = child.stdout.take().expect("stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let header = rx.recv_timeout(Duration::from_secs(20)).expect("header");
    assert!(header.starts_with("AT"), "{header}");
    let first = rx.recv_timeout(Duration::from_secs(20)).expect("w-001");
    assert!(first.contains("w-001"), "{first}");
    beat(&h, "w-009", json!([])).await;
    let next = rx.recv_timeout(Duration::from_secs(20));
    let _ = child.kill();
    let _ = child.wait();
    let next = next.expect("a line for the new worker");
    assert!(
        next.contains("w-009") && next.contains("claude #1"),
        "{next}"
    );
}

/// `macfleet get … | head`: the reader closes the pipe early; the command
/// ends quietly with 0, never `Broken pipe` and never an abort.
#[tokio::test(flavor = "multi_thread")]
async fn a_closed_pipe_ends_the_command_quietly() {
    let h = TestHub::start().await;
    let many: Vec<serde_json::Value> = (0..400)
        .map(|i| {
            common::failover(
                &format!("f-{i}"),
                "rate_limited",
                &"long detail ".repeat(10),
            )
        })
        .collect();
    for chunk in many.chunks(50) {
        beat(&h, "w-001", json!(chunk)).await;
    }
    for fmt in ["json", "jsonl", "table"] {
        let mut child = common::Kill(
            bin()
                .args(["get", "failovers", "--limit", "400", "-o", fmt])
                .env("MAC_HUB_URL", h.url())
                .env("MAC_HUB_TOKEN", &h.viewer)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn"),
        );
        // Read one line, then close our end, as `head -1` does.
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("a first line");
        drop(stdout);
        let status = tokio::task::spawn_blocking(move || {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            (child.wait().expect("wait"), err)
        })
        .await
        .expect("join");
        let (st, err) = status;
        assert_eq!(st.code(), Some(0), "-o {fmt}: {st:?} {err}");
        assert!(
            !err.contains("Broken pipe") && !err.contains("panicked"),
            "-o {fmt}: {err}"
        );
    }
}

#[test]
fn completions_and_the_man_page_are_generated() {
    for (shell, mark) in [
        ("bash", "_macfleet()"),
        ("zsh", "#compdef macfleet"),
        ("fish", "complete -c macfleet"),
    ] {
        let o = macfleet(&["completions", shell], &[]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let t = text(&o.stdout);
        assert!(t.contains(mark), "{shell}: {}", &t[..t.len().min(200)]);
        assert!(t.contains("context") && t.contains("tls-init"), "{shell}");
    }
    let man = macfleet(&["man"], &[]);
    assert_eq!(man.status.code(), Some(0));
    let m = text(&man.stdout);
    assert!(
        m.starts_with(".ie") || m.contains(".TH macfleet"),
        "{}",
        &m[..m.len().min(200)]
    );
    assert!(m.contains("completions"));
}

/// Every argument of every command says what it is, and the TUI's own
/// flags are on the TUI's commands only.
#[test]
fn every_argument_has_a_description() {
    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for a in cmd.get_arguments() {
            let id = a.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if a.get_help().is_none() && a.get_long_help().is_none() {
                missing.push(format!("{path} {id}"));
            }
        }
        for s in cmd.get_subcommands() {
            if s.get_name() == "help" {
                continue;
            }
            if s.get_about().is_none() {
                missing.push(format!("{path} {} (the command)", s.get_name()));
            }
            walk(s, &format!("{path} {}", s.get_name()), missing);
        }
    }
    let cmd = macfleet::cli::options::command();
    let mut missing = Vec::new();
    walk(&cmd, "macfleet", &mut missing);
    assert!(missing.is_empty(), "no description: {missing:?}");

    let has = |path: &[&str], flag: &str| -> bool {
        let mut c = &cmd;
        for p in path {
            c = c.find_subcommand(p).expect("subcommand");
        }
        c.get_arguments().any(|a| a.get_long() == Some(flag))
    };
    assert!(has(&[], "ascii") && has(&[], "mouse"));
    assert!(has(&["demo"], "ascii") && has(&["demo"], "mouse"));
    for path in [&["get"][..], &["hub"], &["context", "add"]] {
        // clap propagates globals when building; a sub-command's own list
        // before that holds only its own arguments.
        assert!(!has(path, "ascii") && !has(path, "mouse"), "{path:?}");
    }
    let help = macfleet(&["get", "--help"], &[]);
    let t = text(&help.stdout);
    assert!(!t.contains("--ascii") && !t.contains("--mouse"), "{t}");
    assert!(t.contains("--watch") && t.contains("--since"), "{t}");
}

/// Messages read as sentences.
#[tokio::test(flavor = "multi_thread")]
async fn messages_read_as_sentences() {
    let h = TestHub::start().await;
    let no_token = run(args(&["--hub", &h.url(), "get", "workers"]), Vec::new()).await;
    assert_eq!(no_token.status.code(), Some(6));
    assert_eq!(
        text(&no_token.stderr).trim(),
        "macfleet: no token: set MAC_HUB_TOKEN or a context's token_file"
    );
    let conflict = macfleet::client::ClientError::Conflict {
        current_revision: Some("3bd135d03720".into()),
        message: "the document changed".into(),
    };
    let s = conflict.to_string();
    assert!(
        !s.contains("Some(") && s.contains("revision 3bd135d03720"),
        "{s}"
    );
}

/// A token's text appears in no output of any command, at any verbosity:
/// successes, refusals and failures, on stdout and stderr.
#[tokio::test(flavor = "multi_thread")]
async fn no_token_is_ever_printed() {
    let h = TestHub::start().await;
    beat(&h, "w-001", json!([common::failover("f-1", "auth", "401")])).await;
    let secrets = [h.owner.clone(), h.viewer.clone(), h.worker.clone()];
    let dead = "http://127.0.0.1:9".to_string();
    let mut runs = Vec::new();
    // The owner's token succeeds, the worker's is refused (403): both paths.
    for token in [&h.owner, &h.worker] {
        for level in ["info", "trace"] {
            for a in [
                &["get", "workers"][..],
                &["get", "workers", "-o", "json"],
                &["get", "worker", "w-001"],
                &["get", "failovers", "-o", "wide"],
                &["get", "agents", "-o", "jsonl"],
                &["get", "history"],
                &["agents", "show"],
            ] {
                let mut env = env_for(&h, token);
                env.push(("MACFLEET_LOG".into(), level.into()));
                runs.push(run(args(a), env).await);
            }
            // Unreachable, and a plaintext refusal.
            let env = vec![
                ("MAC_HUB_URL".to_string(), dead.clone()),
                ("MAC_HUB_TOKEN".to_string(), token.to_string()),
                ("MACFLEET_LOG".to_string(), level.to_string()),
            ];
            runs.push(run(args(&["get", "workers"]), env.clone()).await);
            runs.push(
                run(
                    args(&["--hub", "http://hub.example:7878", "get", "workers"]),
                    env,
                )
                .await,
            );
        }
    }
    assert!(runs.iter().any(|o| o.status.code() == Some(0)));
    assert!(runs.iter().any(|o| o.status.code() == Some(5)));
    assert!(runs.iter().any(|o| o.status.code() == Some(6)));
    for o in &runs {
        for t in &secrets {
            assert!(!text(&o.stdout).contains(t.as_str()), "a token on stdout");
            assert!(!text(&o.stderr).contains(t.as_str()), "a token on stderr");
        }
    }
    // In a panic message: every type that holds a token prints it redacted.
    let client = h.client(&h.owner);
    let target = macfleet::cli::context::Target {
        hub: h.url(),
        token: Some(macfleet::client::Token::new(h.owner.clone())),
        read_only: false,
        label: "x".into(),
        ca_cert: None,
    };
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        panic!("{client:?} {target:?}")
    }));
    let msg = caught
        .err()
        .and_then(|p| p.downcast_ref::<String>().cloned())
        .expect("a panic message");
    assert!(!msg.contains(&h.owner) && msg.contains("redacted"), "{msg}");
}

/// The TUI's log file, at trace level, holds no token: the session starts,
/// goes live against the real hub, and quits.
#[tokio::test(flavor = "multi_thread")]
async fn the_tui_log_file_holds_no_token() {
    let h = TestHub::start().await;
    beat(&h, "w-001", json!([common::failover("f-1", "auth", "401")])).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("tui.log");
    let (url, owner) = (h.url(), h.owner.clone());
    let log2 = log.clone();
    tokio::task::spawn_blocking(move || {
        let mut t = pty::Pty::spawn(
            &["--log-file", log2.to_str().expect("utf-8")],
            &[
                ("MAC_HUB_URL", url.as_str()),
                ("MAC_HUB_TOKEN", owner.as_str()),
                ("MACFLEET_LOG", "trace"),
            ],
        );
        t.wait_for("w-001", Duration::from_secs(30));
        t.send("q");
        t.wait_exit(Duration::from_secs(10));
    })
    .await
    .expect("join");
    let written = std::fs::read_to_string(&log).expect("the log file");
    assert!(!written.is_empty(), "trace wrote something");
    for t in [&h.owner, &h.viewer, &h.worker] {
        assert!(!written.contains(t.as_str()), "a token in the TUI's log");
    }
}

/// `macfleet get failovers --watch -o jsonl | head -1` on a quiet fleet: the
/// watch notices its reader is gone by itself and ends within a second,
/// quietly, with 0 (it used to wait for the next event to write into the
/// closed pipe).
#[tokio::test(flavor = "multi_thread")]
async fn watch_ends_when_its_reader_goes_away_on_a_quiet_fleet() {
    let h = TestHub::start().await;
    beat(
        &h,
        "w-001",
        json!([common::failover("w-001-1", "rate_limited", "429")]),
    )
    .await;
    // A recovery, for `get recoveries --watch`: back from claude (#1) to
    // opencode (#0) on the same revision.
    let rev = h.client(&h.viewer).config().await.expect("config").revision;
    let mut hb = common::heartbeat("w-002", Some(&rev), json!([]));
    let post = |hb: serde_json::Value| {
        let hb: macfleet::wire::Heartbeat = serde_json::from_value(hb).expect("hb");
        let c = h.client(&h.worker);
        async move { c.heartbeat(&hb).await.expect("heartbeat") }
    };
    hb["active_agent"] = "claude".into();
    post(hb.clone()).await;
    hb["active_agent"] = "opencode".into();
    post(hb).await;
    for what in ["failovers", "workers", "recoveries"] {
        let mut child = common::Kill(
            bin()
                .args(["get", what, "--watch", "-o", "jsonl"])
                .env("MAC_HUB_URL", h.url())
                .env("MAC_HUB_TOKEN", &h.viewer)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn"),
        );
        let (closed_at, st, err) = tokio::task::spawn_blocking(move || {
            // Read one line, then close our end, as `head -1` does.
            let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
            let mut line = String::new();
            stdout.read_line(&mut line).expect("a first line");
            assert!(line.starts_with('{'), "{line}");
            drop(stdout);
            let closed_at = std::time::Instant::now();
            // Nothing happens on the fleet: at most 5 s, then it is a hang.
            let st = loop {
                if let Some(st) = child.try_wait().expect("try_wait") {
                    break Some(st);
                }
                if closed_at.elapsed() > Duration::from_secs(5) {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = e.read_to_string(&mut err);
            }
            (closed_at.elapsed(), st, err)
        })
        .await
        .expect("join");
        let st =
            st.unwrap_or_else(|| panic!("get {what} --watch still ran 5 s after its reader left"));
        assert_eq!(st.code(), Some(0), "get {what} --watch: {err}");
        assert!(
            closed_at < Duration::from_secs(1),
            "get {what} --watch took {closed_at:?} to notice"
        );
        assert!(err.trim().is_empty(), "quietly: {err}");
    }
}

/// What people read and what scripts read: `get workers` keeps stdout to
/// the header and the rows (its summary goes to stderr), `get worker`'s
/// recent failovers are a table, a near-miss `--kind` is told the right
/// one, and an unreachable hub is one sentence naming it.
#[tokio::test(flavor = "multi_thread")]
async fn outputs_read_well_for_people_and_scripts() {
    let h = TestHub::start().await;
    beat(
        &h,
        "w-001",
        json!([
            common::failover("w-001-1", "rate_limited", "opencode route: 429 from upstream"),
            {"id": "w-001-2", "at": common::ago(60), "from": "claude", "to": null,
             "cause": {"kind": "auth", "status": 401, "source": "worker", "detail": "key revoked"}}
        ]),
    )
    .await;
    beat(&h, "w-002", json!([])).await;
    let env = env_for(&h, &h.viewer);

    let workers = run(args(&["get", "workers"]), env.clone()).await;
    assert_eq!(workers.status.code(), Some(0), "{}", text(&workers.stderr));
    let out = text(&workers.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "header and two rows only:\n{out}");
    assert!(
        lines[0].starts_with("WORKER") && lines[1..].iter().all(|l| l.starts_with("w-00")),
        "{out}"
    );
    let err = text(&workers.stderr);
    assert!(
        err.contains("2 workers: 2 healthy, 0 stale, 0 lost, 0 with no route, 2 one failure from no route; revision "),
        "{err}"
    );

    let one = run(args(&["get", "worker", "w-001"]), env.clone()).await;
    let t = text(&one.stdout);
    let table: Vec<&str> = t
        .split("RECENT FAILOVERS\n")
        .nth(1)
        .expect("a recent failovers part")
        .lines()
        .collect();
    assert!(
        table[0].starts_with("SEQ  AGE")
            && table[0].contains("FROM → TO")
            && table[0].contains("CAUSE"),
        "a header:\n{t}"
    );
    let col = |l: &str, w: &str| l.find(w).map(|b| l[..b].chars().count());
    let cause = col(table[0], "CAUSE");
    assert_eq!(col(table[1], "auth"), cause, "aligned:\n{t}");
    assert_eq!(col(table[2], "rate_limited"), cause, "aligned:\n{t}");
    assert_eq!(
        col(table[1], "key revoked"),
        col(table[0], "DETAIL"),
        "aligned:\n{t}"
    );

    let kind = run(
        args(&["get", "failovers", "--kind", "ratelimited"]),
        env.clone(),
    )
    .await;
    assert_eq!(kind.status.code(), Some(2));
    let e = text(&kind.stderr);
    assert!(
        e.contains("did you mean rate_limited?")
            && e.contains(
                "missing_binary, no_token, preflight_failed, auth, rate_limited, upstream_status"
            ),
        "{e}"
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let dead = format!("http://127.0.0.1:{port}");
    let gone = run(
        args(&["get", "workers"]),
        vec![
            ("MAC_HUB_URL".into(), dead.clone()),
            ("MAC_HUB_TOKEN".into(), h.viewer.clone()),
        ],
    )
    .await;
    assert_eq!(gone.status.code(), Some(5));
    let e = text(&gone.stderr);
    assert_eq!(
        e.trim(),
        format!(
            "macfleet: hub unreachable: nothing answers at {dead} (connection refused); \
             check that the hub is running and that the URL and port are right"
        ),
        "one sentence"
    );
}

/// `get worker`'s "since" is when the current hold-off of a rung began: a
/// worker held off opencode 40 minutes ago that came back on it (a
/// recovery the hub recorded) and was held off again says the second time,
/// not the first (quota-cap's cycle: a cap, its end, the next cap).
#[tokio::test(flavor = "multi_thread")]
async fn get_worker_since_starts_after_the_latest_recovery_onto_the_rung() {
    let h = TestHub::start().await;
    let post = |active: &str, failovers: serde_json::Value| {
        let mut hb = common::heartbeat("w-cap", None, failovers);
        hb["active_agent"] = json!(active);
        let hb: macfleet::wire::Heartbeat = serde_json::from_value(hb).expect("hb");
        let c = h.client(&h.worker);
        async move { c.heartbeat(&hb).await.expect("heartbeat") }
    };
    let away = |id: &str, at: String| {
        json!({"id": id, "at": at, "from": "opencode", "to": "claude",
               "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router",
                         "detail": "opencode route: 429 from upstream"}})
    };
    post("claude", json!([away("cap-1", common::ago(2400))])).await;
    post("opencode", json!([])).await; // the cap ended: a recovery
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let again = chrono::Utc::now();
    post(
        "claude",
        json!([away("cap-2", macfleet::wire::fmt_time(again))]),
    )
    .await;
    let env = env_for(&h, &h.viewer);
    let back = run(args(&["get", "recoveries"]), env.clone()).await;
    assert!(
        text(&back.stdout).contains("w-cap"),
        "{}",
        text(&back.stdout)
    );
    let one = run(args(&["get", "worker", "w-cap"]), env).await;
    let t = text(&one.stdout);
    assert_eq!(one.status.code(), Some(0), "{}", text(&one.stderr));
    let line = t
        .lines()
        .find(|l| l.contains("opencode: rate_limited"))
        .unwrap_or_else(|| panic!("a why line for opencode:\n{t}"));
    let since = format!("since {}", again.format("%H:%M:%S"));
    assert!(
        line.contains(&since) && !line.contains(", last "),
        "the hold-off began with cap-2 ({since}), not cap-1:\n{line}"
    );
    assert!(line.contains("2 in the last hour"), "{line}");
}

/// Scripts read stdout (issue 27): `get agents` and `agents show` print
/// only the list there, one `RANK  NAME` a line, the revision on stderr;
/// `get failovers --worker` of a worker the hub does not know says so on
/// stderr and exits 1 (a known worker with no failovers is no error).
#[tokio::test(flavor = "multi_thread")]
async fn scripts_read_only_the_list_and_an_unknown_worker_is_said() {
    let h = TestHub::start().await;
    beat(
        &h,
        "w-001",
        json!([common::failover("w-001-1", "auth", "401")]),
    )
    .await;
    beat(&h, "w-002", json!([])).await;
    let rev = h.client(&h.viewer).config().await.expect("config").revision;
    let env = env_for(&h, &h.viewer);
    for a in [&["get", "agents"][..], &["agents", "show"]] {
        let o = run(args(a), env.clone()).await;
        assert_eq!(o.status.code(), Some(0), "{a:?}: {}", text(&o.stderr));
        assert_eq!(text(&o.stdout), "0  opencode\n1  claude\n", "{a:?}");
        assert!(
            text(&o.stderr).contains(&format!("revision {rev}\n")),
            "{a:?}: {}",
            text(&o.stderr)
        );
    }
    for output in ["table", "json"] {
        let nosuch = run(
            args(&["get", "failovers", "--worker", "nosuch", "-o", output]),
            env.clone(),
        )
        .await;
        assert_eq!(nosuch.status.code(), Some(1), "{}", text(&nosuch.stderr));
        assert_eq!(text(&nosuch.stdout), "", "nothing on stdout");
        assert!(
            text(&nosuch.stderr).contains("no worker nosuch reports to this hub"),
            "{}",
            text(&nosuch.stderr)
        );
    }
    let quiet = run(
        args(&["get", "failovers", "--worker", "w-002"]),
        env.clone(),
    )
    .await;
    assert_eq!(quiet.status.code(), Some(0), "{}", text(&quiet.stderr));
    let one = run(
        args(&["get", "failovers", "--worker", "w-001"]),
        env.clone(),
    )
    .await;
    assert_eq!(one.status.code(), Some(0), "{}", text(&one.stderr));
    assert!(text(&one.stdout).contains("w-001"), "{}", text(&one.stdout));
}

/// `get workers`' summary leads with the status word, from the one function
/// the TUI and `/v1/health` use (issue 28): `OK` over a worker with a rung
/// below it, `AT RISK 1` once one of two healthy workers stands on its last
/// rung (over a quarter), the same word `/v1/health` says.
#[tokio::test(flavor = "multi_thread")]
async fn get_workers_says_the_word_the_hub_says() {
    let h = TestHub::start().await;
    let mut v = common::heartbeat("w-001", None, json!([]));
    v["active_agent"] = json!("opencode");
    let hb: macfleet::wire::Heartbeat = serde_json::from_value(v).expect("hb");
    h.client(&h.worker).heartbeat(&hb).await.expect("heartbeat");
    let env = env_for(&h, &h.viewer);
    let hub_word = || async {
        let v: serde_json::Value = reqwest::Client::new()
            .get(format!("{}/v1/health", h.url().trim_end_matches('/')))
            .header("accept", "application/json")
            .send()
            .await
            .expect("health")
            .json()
            .await
            .expect("json");
        v["word"].as_str().unwrap_or_default().to_string()
    };

    let calm = run(args(&["get", "workers"]), env.clone()).await;
    let err = text(&calm.stderr);
    assert!(err.starts_with("OK · 1 workers: 1 healthy"), "{err}");
    assert_eq!(hub_word().await, "OK");

    beat(&h, "w-002", json!([])).await;
    let risky = run(args(&["get", "workers"]), env).await;
    let err = text(&risky.stderr);
    assert!(
        err.starts_with("AT RISK 1 · 2 workers: 2 healthy, 0 stale, 0 lost, 0 with no route, 1 one failure from no route"),
        "{err}"
    );
    assert_eq!(hub_word().await, "AT RISK 1");
}
