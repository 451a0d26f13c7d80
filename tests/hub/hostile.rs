//! What a hostile or broken client sends, against the real reference hub on
//! a loopback port: each gets a precise 4xx with the JSON error body, and
//! nothing the hub stores changes or becomes unreadable.

use crate::common;

use common::{HubProcess, Spawn, TestHub, ago, eventually, failover, heartbeat};
use macfleet::client::FailoverQuery;
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn json_of(resp: reqwest::Response) -> (StatusCode, Value) {
    let status = resp.status();
    let v = resp.json::<Value>().await.unwrap_or(Value::Null);
    (status, v)
}

async fn post_heartbeat(h: &TestHub, body: &Value) -> (StatusCode, Value) {
    json_of(h.post_heartbeat(body).await).await
}

/// Wait until the log holds `n` failovers (they are committed in batches).
async fn failovers_logged(h: &TestHub, n: usize) -> Vec<String> {
    let viewer = h.client(&h.viewer);
    eventually(100, || async {
        let p = viewer.failovers(&FailoverQuery::default()).await.ok()?;
        (p.events.len() == n).then(|| p.events.into_iter().map(|e| e.failover.id).collect())
    })
    .await
    .unwrap_or_else(|| panic!("{n} failovers logged"))
}

/// Issue #10 item 1: times that parse but land outside year 1..9999 in UTC
/// (or far from the hub's clock) are refused with 422, name the field, and
/// store nothing; times up to a week (and more) back are accepted, since the
/// demo back-fills the last hour through the API.
#[tokio::test]
async fn failover_times_far_from_the_hubs_clock_are_refused() {
    let h = TestHub::start().await;
    let with_at = |id: &str, at: &str| {
        let mut f = failover(id, "rate_limited", "429 from upstream");
        f["at"] = json!(at);
        heartbeat("w-time", None, json!([f]))
    };
    let week_ago = ago(7 * 24 * 3600);
    let (s, v) = post_heartbeat(&h, &with_at("ok-week", &week_ago)).await;
    assert_eq!(s, StatusCode::OK, "a week back is accepted: {v}");
    let (s, v) = post_heartbeat(&h, &with_at("ok-now", &ago(0))).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    failovers_logged(&h, 2).await;

    let bad = [
        "9999-12-31T23:59:59-23:59".to_string(),
        "0000-01-01T00:00:00+23:59".to_string(),
        "9999-12-31T23:59:59Z".to_string(),
        "0001-01-01T00:00:00Z".to_string(),
        ago(-25 * 3600),
        ago(31 * 24 * 3600),
    ];
    for (i, at) in bad.iter().enumerate() {
        let (s, v) = post_heartbeat(&h, &with_at(&format!("bad-{i}"), at)).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{at}: {v}");
        assert_eq!(v["error"]["code"], "invalid_heartbeat", "{at}");
        let msg = v["error"]["message"].as_str().unwrap_or("");
        assert!(msg.starts_with("failovers[0].at:"), "{at}: {msg}");
        assert!(!msg.contains(at.as_str()), "the message names, not echoes");
    }
    // The heartbeat's own time is judged the same way.
    let mut hb = heartbeat("w-time", None, json!([]));
    hb["sent_at"] = json!("9999-12-31T23:59:59-23:59");
    let (s, v) = post_heartbeat(&h, &hb).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("sent_at:")
    );

    // Nothing of the refused ones was stored; the log still reads.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let viewer = h.client(&h.viewer);
    let p = viewer
        .failovers(&FailoverQuery::default())
        .await
        .expect("the log reads");
    let ids: Vec<&str> = p.events.iter().map(|e| e.failover.id.as_str()).collect();
    assert_eq!(ids, ["ok-week", "ok-now"]);
    let w = viewer.workers(None).await.expect("workers");
    assert_eq!(w.workers.len(), 1);
}

/// Issue #10 item 1, the database already poisoned (by an older hub, or by
/// hand): an unreadable row is skipped and the rest of the page, the
/// filters, the paging and the history all still answer, across a restart.
#[tokio::test]
async fn an_unreadable_stored_row_never_takes_a_page_down() {
    let mut h = TestHub::start().await;
    // A rung it can run below its active one: a lone worker one failure
    // from no route is AT RISK and health `degraded` (issue 28).
    let fo = |id: &str| {
        let mut hb = heartbeat("w-db", None, json!([failover(id, "rate_limited", "429")]));
        hb["agents"] = json!(["opencode", "claude", "pi"]);
        hb["capabilities"]["pi"] = json!({"binary": true, "token": true, "preflight": "ok"});
        hb
    };
    for id in ["before-1", "before-2"] {
        let (s, v) = post_heartbeat(&h, &fo(id)).await;
        assert_eq!(s, StatusCode::OK, "{v}");
    }
    failovers_logged(&h, 2).await;
    if let Some(hub) = h.hub.take() {
        hub.stop().await;
    }
    // Poison the file the way the hub did, plus a row no time
    // parser would take, and an unreadable history entry.
    let db = rusqlite::Connection::open(h.dir.path().join("hub.db")).expect("open the db");
    let insert = "INSERT INTO failovers (worker, host, received_at, id, at, from_agent, to_agent, kind, status, source, detail) \
                  VALUES ('w-db', 'gpu-node-17', ?1, ?2, ?3, 'opencode', 'claude', 'rate_limited', 429, 'hub_router', 'x')";
    let now = ago(0);
    for (id, at, received) in [
        ("poison-1", "+10000-01-01T23:58:59Z", now.as_str()),
        ("poison-2", "2026-11-29T15:03:58Z", "yesterday"),
        ("poison-3", "2026-11-29T15:03:58Z", "+10000-01-01T23:58:59Z"),
    ] {
        db.execute(insert, rusqlite::params![received, id, at])
            .expect("insert a bad row");
    }
    db.execute(
        "INSERT INTO history (revision, at, by, agents, previous_agents) VALUES ('rbad', '+10000-01-01T23:58:59Z', 'x', '[]', '[]')",
        [],
    )
    .expect("insert a bad history row");
    drop(db);
    h.restart(|_| {}).await;

    let (s, v) = post_heartbeat(&h, &fo("after-1")).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    let ids = failovers_logged(&h, 3).await;
    assert_eq!(ids, ["before-1", "before-2", "after-1"]);
    let viewer = h.client(&h.viewer);
    // A filter that meets the bad rows, and paging one row at a time: every
    // page answers, and the pages together hold every readable row.
    let by_worker = viewer
        .failovers(&FailoverQuery {
            worker: Some("w-db".into()),
            ..Default::default()
        })
        .await
        .expect("worker filter");
    assert_eq!(by_worker.events.len(), 3);
    let mut since = 0;
    let mut paged = Vec::new();
    for _ in 0..20 {
        let p = viewer
            .failovers(&FailoverQuery {
                since: Some(since),
                limit: Some(1),
                ..Default::default()
            })
            .await
            .expect("every page answers");
        paged.extend(p.events.into_iter().map(|e| e.failover.id));
        if p.next == since {
            break;
        }
        since = p.next;
    }
    assert_eq!(paged, ["before-1", "before-2", "after-1"]);
    // Each bad row counted once: three failovers, and the history entry the
    // hub met at start when it looked for the newest revision.
    let db = &h.running().hub.db;
    assert_eq!(db.unreadable_rows(), 4);
    // The history answers without the bad entry.
    let hist = viewer.history().await.expect("history reads");
    assert!(!hist.revisions.is_empty());
    assert!(hist.revisions.iter().all(|r| r.revision != "rbad"));
    assert_eq!(
        hist.revisions
            .iter()
            .filter(|r| r.by == "(initial)")
            .count(),
        1,
        "the restart found the newest readable revision and recorded none"
    );
    assert_eq!(db.unreadable_rows(), 4);
    // /v1/health reports them (JSON form; the text form stays `ok`).
    let r = h
        .http()
        .get(h.path("/v1/health"))
        .header("accept", "application/json")
        .send()
        .await
        .expect("health");
    let (s, v) = json_of(r).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(v["status"], "ok", "{v}");
    assert_eq!(v["database"]["unreadable_rows_skipped"], 4, "{v}");
    assert_eq!(v["database"]["started_empty"], false, "{v}");
    assert_eq!(h.health().await.text().await.expect("text"), "ok");
    // And the scripted command a person runs exits 0.
    let env = [
        ("MAC_HUB_URL".to_string(), h.url()),
        ("MAC_HUB_TOKEN".to_string(), h.viewer.clone()),
    ];
    let out = tokio::task::spawn_blocking(move || {
        let env: Vec<(&str, &str)> = env.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        common::macfleet(&["get", "failovers", "-o", "json"], &env)
    })
    .await
    .expect("macfleet ran");
    assert!(
        out.status.success(),
        "get failovers: {}",
        common::text(&out.stderr)
    );
    assert!(common::text(&out.stdout).contains("after-1"));
}

/// Issue #10 item 7: worker tokens authenticate a pool, not a worker, so
/// any token of a worker's pool may report for it; but one token cannot
/// pre-empt another's failover id: ids are unique per (worker, token). A
/// retry from the same token is still ignored. (Another pool's token may not
/// report for the worker at all: `another_pools_token_cannot_speak_for_a_worker`.)
#[tokio::test]
async fn a_token_cannot_preempt_another_tokens_failover_id() {
    use macfleet::hub::auth;
    use macfleet::wire::Role;
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("hub.toml"), common::CONFIG).expect("config");
    let tok = |n: &str| format!("{}{}", "mft_test_", n.repeat(8));
    let (viewer, pool_a, pool_b) = (tok("v"), tok("a"), tok("b"));
    // Two tokens of one pool (a rotation, say): a worker id belongs to one
    // pool, so only tokens of that pool can report for it at all.
    let text = [
        auth::token_entry("screen", Role::Viewer, &viewer),
        auth::token_entry_in_pool("pool-a", Role::Worker, Some("shared"), &pool_a),
        auth::token_entry_in_pool("pool-b", Role::Worker, Some("shared"), &pool_b),
    ]
    .join("\n");
    let tokens = auth::Tokens::parse(&text, "test").expect("tokens");
    let hub = macfleet::hub::start(common::options(dir.path(), tokens))
        .await
        .expect("hub");
    let http = reqwest::Client::new();
    let post = |token: &str, detail: &str| {
        http.post(format!("{}/v1/heartbeats", hub.url()))
            .bearer_auth(token)
            .json(&heartbeat(
                "w-1",
                None,
                json!([failover("w-1-000001", "rate_limited", detail)]),
            ))
            .send()
    };
    for (token, detail) in [
        (&pool_b, "forged"),
        (&pool_a, "real"),
        (&pool_a, "real, retried"),
    ] {
        let r = post(token, detail).await.expect("post");
        assert_eq!(r.status(), StatusCode::OK);
    }
    let client = macfleet::client::Client::new(
        &hub.url(),
        Some(macfleet::client::Token::new(&viewer)),
        macfleet::client::ClientOptions::default(),
    )
    .expect("client");
    let got = eventually(100, || async {
        let p = client.failovers(&FailoverQuery::default()).await.ok()?;
        (p.events.len() == 2).then_some(p)
    })
    .await
    .expect("both failovers logged");
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let p = client
        .failovers(&FailoverQuery::default())
        .await
        .expect("failovers");
    assert_eq!(p.events.len(), 2, "the retry was ignored");
    let details: Vec<_> = got
        .events
        .iter()
        .map(|e| e.failover.cause.detail.clone().unwrap_or_default())
        .collect();
    assert_eq!(details, ["forged", "real"]);
    hub.stop().await;
}

/// Issue #10 item 8: the hub's log holds no ANSI colour codes when it is
/// written to a file (and nothing of a token).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_log_has_no_ansi_when_not_a_terminal() {
    let (dir, owner, _viewer, _worker) = common::hub_dir();
    let mut hub = HubProcess::spawn(
        dir.path(),
        Spawn {
            colour: true,
            env: &[("MACFLEET_LOG", "debug")],
            ..Spawn::default()
        },
    );
    let url = hub.url.clone();
    let client = macfleet::client::Client::new(
        &url,
        Some(macfleet::client::Token::new(&owner)),
        macfleet::client::ClientOptions::default(),
    )
    .expect("client");
    let rev = client.config().await.expect("config").revision;
    let r = reqwest::Client::new()
        .put(format!("{url}/v1/config"))
        .bearer_auth(&owner)
        .header("content-type", "application/toml")
        .header("if-match", format!("\"{rev}\""))
        .body("[fleet]\nMAC_CODING_AGENTS = [\"claude\"]\n")
        .send()
        .await
        .expect("put");
    assert_eq!(r.status(), StatusCode::OK);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let text = hub.stop();
    assert!(text.contains("config replaced"), "{text}");
    assert!(!text.contains('\u{1b}'), "ANSI in the log: {text:?}");
    assert!(!text.contains(&owner), "a token in the log");
}

/// Wait (at most `ms`) for the hub to exit; its status, or None if it still
/// runs (then it is killed).
fn exit_within(child: &mut std::process::Child, ms: u64) -> Option<std::process::ExitStatus> {
    for _ in 0..ms / 20 {
        if let Ok(Some(st)) = child.try_wait() {
            return Some(st);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// A SIGTERM or SIGHUP sent the moment the hub says where it listens is
/// caught: SIGTERM stops it in order (exit 0), SIGHUP rereads the tokens and
/// it serves on. Before, the line came before the handlers, and a
/// supervisor quick off the mark killed the hub by the signal's default
/// action (seen as a flaky exit status here under load).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_right_after_the_listening_line_is_caught() {
    let (dir, ..) = common::hub_dir();
    for round in 0..20 {
        let (sig, name) = if round % 2 == 0 {
            (libc::SIGTERM, "SIGTERM")
        } else {
            (libc::SIGHUP, "SIGHUP")
        };
        let mut hub = HubProcess::spawn(dir.path(), Spawn::default());
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(hub.child.id() as libc::pid_t, sig) };
        if sig == libc::SIGHUP {
            let health = reqwest::Client::new()
                .get(hub.path("/v1/health"))
                .timeout(std::time::Duration::from_secs(10))
                .send()
                .await
                .map(|r| r.status());
            let alive = hub.child.try_wait().expect("try_wait").is_none();
            let log = hub.stop();
            assert!(
                alive && health.is_ok(),
                "round {round}: {name} killed the hub ({health:?}): {log}"
            );
        } else {
            let st = exit_within(&mut hub.child, 10_000);
            let log = hub.stop();
            assert!(
                st.is_some_and(|s| s.success()),
                "round {round}: {name} gave {st:?}: {log}"
            );
        }
    }
}

/// Issue #10 item 8: a `hub.db` the hub may not write stops it at start
/// with an error naming the file (SQLite would open it read-only without a
/// word, and every failover would then answer 500). Proved with a real
/// read-only file: when the test runs as root (who may write any file),
/// the hub runs as `nobody`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_database_stops_the_start_naming_the_file() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, ..) = common::hub_dir();
    let db_path = dir.path().join("hub.db");
    // A real hub.db, made by the hub (WAL mode, its tables, one history
    // entry), left by an orderly stop.
    let mut hub = HubProcess::spawn(dir.path(), Spawn::default());
    unsafe { libc::kill(hub.child.id() as i32, libc::SIGTERM) };
    let stopped = exit_within(&mut hub.child, 10_000);
    assert!(stopped.is_some_and(|s| s.success()));
    let size = std::fs::metadata(&db_path).expect("hub.db").len();
    assert!(size > 0);
    let root = unsafe { libc::geteuid() } == 0;
    // Readable, not writable, by the user the hub runs as; the directory
    // and the other files readable (and the directory writable: the file,
    // not the place, is read-only).
    let mode = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod")
    };
    mode(dir.path(), 0o777);
    mode(&dir.path().join("hub.toml"), 0o666);
    mode(&dir.path().join("tokens.toml"), 0o644);
    mode(&db_path, 0o444);
    let before = std::fs::read(&db_path).expect("read");
    let how = Spawn {
        as_nobody: root,
        ..Spawn::default()
    };
    let (log, status) = match HubProcess::start(dir.path(), how) {
        Ok(mut hub) => (hub.stop(), None),
        Err(stopped) => (stopped.log, stopped.status),
    };
    let status = status.unwrap_or_else(|| panic!("the hub kept running on a read-only db: {log}"));
    assert!(!status.success(), "{log}");
    assert!(log.contains("is read-only"), "{log}");
    assert!(log.contains(&db_path.display().to_string()), "{log}");
    assert!(!log.contains("listening on"), "{log}");
    assert_eq!(
        std::fs::read(&db_path).expect("read"),
        before,
        "the file is untouched"
    );
}

/// Issue #10 item 8: a `hub.db` truncated to zero bytes starts a fresh
/// history, and the hub says so: a warning in its log, and
/// `started_empty` in `/v1/health` (JSON form). A database that was not
/// empty is not reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_database_is_warned_about_and_reported() {
    let (dir, owner, ..) = common::hub_dir();
    let db_path = dir.path().join("hub.db");
    for (round, empty) in [(0, true), (1, false)] {
        if empty {
            std::fs::File::create(&db_path).expect("an empty hub.db");
        }
        let hub = HubProcess::try_spawn(dir.path(), Spawn::default());
        let url = hub.as_ref().ok().map(|h| h.url.clone());
        let health = match &url {
            Some(url) => reqwest::Client::new()
                .get(format!("{url}/v1/health"))
                .header("accept", "application/json")
                .send()
                .await
                .ok(),
            None => None,
        };
        let health: Value = match health {
            Some(r) => r.json().await.unwrap_or(Value::Null),
            None => Value::Null,
        };
        // The fresh history works: a write is recorded.
        let history_len = match &url {
            Some(url) if empty => {
                let client = macfleet::client::Client::new(
                    url,
                    Some(macfleet::client::Token::new(&owner)),
                    macfleet::client::ClientOptions::default(),
                )
                .expect("client");
                client.history().await.map(|h| h.revisions.len()).ok()
            }
            _ => Some(1),
        };
        let log = match hub {
            Ok(mut hub) => hub.stop(),
            Err(log) => log,
        };
        assert!(url.is_some(), "round {round}: the hub did not start: {log}");
        assert_eq!(health["status"], "ok", "round {round}: {health}");
        assert_eq!(
            health["database"]["started_empty"], empty,
            "round {round}: {health}"
        );
        assert_eq!(health["database"]["unreadable_rows_skipped"], 0);
        assert_eq!(
            log.contains("the database file is empty (truncated?)"),
            empty,
            "round {round}: {log}"
        );
        assert_eq!(history_len, Some(1), "round {round}: the initial revision");
    }
}

/// A tokens file whose bad line holds a real token (made at run time, as
/// `hub token` makes them): the error, at start and on SIGHUP, says the
/// message, line and column, never the token (the TOML parser's own text
/// quotes the line).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokens_file_parse_error_never_prints_the_token() {
    let tok = macfleet::hub::auth::generate_token();
    let bad = format!("[[tokens]]\nname = \"alice\"\nrole = \"owner\"\nsha256 = {tok}\n");
    // At start: refused, and said without the token.
    let (dir, owner, ..) = common::hub_dir();
    let good = std::fs::read_to_string(dir.path().join("tokens.toml")).expect("tokens");
    std::fs::write(dir.path().join("tokens.toml"), &bad).expect("bad tokens");
    let stopped = HubProcess::start(dir.path(), Spawn::default())
        .err()
        .expect("the hub refuses to start");
    let st = stopped.status.expect("the hub stops");
    assert!(!st.success());
    let log = stopped.log;
    assert!(!log.contains(&tok) && !log.contains(&tok[4..14]), "{log}");
    assert!(log.contains("(line 4, column 10)"), "{log}");
    // On SIGHUP: the previous tokens stay, and the log says why without it.
    std::fs::write(dir.path().join("tokens.toml"), &good).expect("good tokens");
    let mut hub = HubProcess::spawn(dir.path(), Spawn::default());
    let url = hub.url.clone();
    std::fs::write(dir.path().join("tokens.toml"), &bad).expect("bad tokens");
    // SAFETY: kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(hub.child.id() as libc::pid_t, libc::SIGHUP) };
    assert_eq!(rc, 0);
    let said = eventually(100, || async {
        let text = hub.log();
        text.contains("tokens file not reread").then_some(text)
    })
    .await;
    let whoami = reqwest::Client::new()
        .get(format!("{url}/v1/whoami"))
        .bearer_auth(&owner)
        .send()
        .await
        .map(|r| r.status());
    hub.stop();
    let log = said.expect("the SIGHUP failure is logged");
    assert!(!log.contains(&tok) && !log.contains(&tok[4..14]), "{log}");
    assert!(log.contains("(line 4, column 10)"), "{log}");
    assert_eq!(whoami.ok(), Some(StatusCode::OK), "the old tokens stay");
}

/// The demo's hub lives in a directory only its user can enter (0700),
/// and its files (config, database and the database's WAL and shared
/// memory) only its user can read (0600).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_hubs_directory_and_files_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let demo = macfleet::cli::demo::start_hub(1).await.expect("demo hub");
    let mode =
        |p: &std::path::Path| std::fs::metadata(p).expect("metadata").permissions().mode() & 0o777;
    assert_eq!(mode(demo.dir.path()), 0o700);
    let mut seen = Vec::new();
    for e in std::fs::read_dir(demo.dir.path()).expect("ls") {
        let e = e.expect("entry");
        seen.push(e.file_name().to_string_lossy().into_owned());
        assert_eq!(mode(&e.path()), 0o600, "{:?}", e.file_name());
    }
    seen.sort();
    assert!(
        seen.contains(&"hub.toml".to_string()) && seen.contains(&"hub.db".to_string()),
        "{seen:?}"
    );
    demo.hub.stop().await;
}

/// libfaketime's library, as Debian's `faketime` package installs it.
const FAKETIME: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// The real `macfleet hub` with its wall clock stepped under it by
/// libfaketime (the monotonic clock left alone): liveness is judged by the
/// time since each heartbeat arrived, a skew of up to a day either way is
/// taken and shown (`clock_skew_s`), absurd times are still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stepped_hub_clock_neither_keeps_the_silent_alive_nor_refuses_the_live() {
    assert!(
        std::path::Path::new(FAKETIME).exists(),
        "this test needs libfaketime: apt-get install faketime (.ci/run installs it)"
    );
    let (dir, _owner, viewer, worker) = common::hub_dir();
    let offset = dir.path().join("faketime");
    std::fs::write(&offset, "+0\n").expect("offset");
    let offset_s = offset.to_string_lossy().into_owned();
    let (child, url) = common::spawn_hub_env(
        dir.path(),
        &["--heartbeat-interval", "1"],
        None,
        &[
            ("LD_PRELOAD", FAKETIME),
            ("FAKETIME_TIMESTAMP_FILE", offset_s.as_str()),
            ("FAKETIME_NO_CACHE", "1"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
        ],
    );
    let _hub = child;
    let http = reqwest::Client::new();
    let workers = || async {
        let v: Value = http
            .get(format!("{url}/v1/workers"))
            .bearer_auth(&viewer)
            .send()
            .await
            .expect("workers")
            .json()
            .await
            .expect("page");
        v
    };
    let post = |body: Value| {
        let http = http.clone();
        let (url, worker) = (url.clone(), worker.clone());
        async move {
            let r = http
                .post(format!("{url}/v1/heartbeats"))
                .bearer_auth(&worker)
                .json(&body)
                .send()
                .await
                .expect("heartbeat");
            let s = r.status();
            (s, r.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    // The hub's clock as it says it, less this machine's, in seconds.
    let hub_ahead = || async {
        let v = workers().await;
        let now: chrono::DateTime<chrono::Utc> =
            v["now"].as_str().and_then(|t| t.parse().ok()).expect("now");
        (now - chrono::Utc::now()).num_seconds()
    };
    let step = |to: &'static str, want_s: i64| {
        std::fs::write(&offset, format!("{to}\n")).expect("step");
        async move {
            let t0 = std::time::Instant::now();
            loop {
                if (hub_ahead().await - want_s).abs() < 30 {
                    return;
                }
                assert!(
                    t0.elapsed().as_secs() < 5,
                    "the hub's clock did not step to {to}"
                );
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    };
    let worker_view = |v: &Value, id: &str| {
        v["workers"]
            .as_array()
            .and_then(|w| w.iter().find(|w| w["worker"] == id).cloned())
            .unwrap_or(Value::Null)
    };

    // Forward 25 h for one heartbeat, then back: the silent worker goes
    // stale by the time since it arrived, not 25 h later.
    step("+25h", 25 * 3600).await;
    let (s, v) = post(heartbeat("w-silent", None, json!([]))).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    step("+0", 0).await;
    let w = worker_view(&workers().await, "w-silent");
    assert!(w["clock_skew_s"].as_i64() < Some(-24 * 3600), "{w}");
    // What is shown is clamped: no heartbeat from the hub's future.
    let time = |v: &Value| -> chrono::DateTime<chrono::Utc> {
        v.as_str().and_then(|t| t.parse().ok()).expect("a time")
    };
    let t0 = std::time::Instant::now();
    loop {
        let page = workers().await;
        let w = worker_view(&page, "w-silent");
        if time(&w["received_at"]) <= time(&page["now"]) {
            break;
        }
        assert!(
            t0.elapsed().as_secs() < 3,
            "received_at from the future: {w}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let t0 = std::time::Instant::now();
    loop {
        let w = worker_view(&workers().await, "w-silent");
        if w["state"] != "healthy" {
            break;
        }
        assert!(
            t0.elapsed().as_secs() < 8,
            "still healthy after {:?}: {w}",
            t0.elapsed()
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }

    // Back 10 minutes: a correctly clocked worker is taken, healthy, and
    // its record says its clock is 10 minutes ahead of the hub's.
    step("-10m", -600).await;
    let (s, v) = post(heartbeat(
        "w-live",
        None,
        json!([failover("f-1", "auth", "x")]),
    ))
    .await;
    assert_eq!(s, StatusCode::OK, "a live worker is taken: {v}");
    let w = worker_view(&workers().await, "w-live");
    assert_eq!(w["state"], "healthy", "{w}");
    let skew = w["clock_skew_s"].as_i64().expect("clock_skew_s");
    assert!((560..=640).contains(&skew), "{w}");
    // Absurd times are still refused: two days ahead of the hub.
    let mut far = heartbeat("w-live", None, json!([]));
    far["sent_at"] = json!(ago(-2 * 24 * 3600));
    let (s, v) = post(far).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("sent_at: more than 24 hours ahead"),
        "{v}"
    );
}

/// Worker tokens of two pools (`a`, and `b` with two tokens: one rotated
/// under a new name keeps its pool), an owner and a viewer, written to
/// `dir/tokens.toml`; the tokens.
pub(crate) fn pool_tokens(dir: &std::path::Path) -> (String, String, String, String, String) {
    use macfleet::hub::auth::{token_entry, token_entry_in_pool};
    use macfleet::wire::Role;
    let fake = |s: &str| format!("{}{}", "mft_pool_", s.repeat(8));
    let (a, b, b2, owner, viewer) = (fake("a"), fake("b"), fake("c"), fake("o"), fake("v"));
    let text = [
        token_entry("a", Role::Worker, &a),
        token_entry_in_pool("b-2026-11", Role::Worker, Some("b"), &b),
        token_entry_in_pool("b-2026-12", Role::Worker, Some("b"), &b2),
        token_entry("alice", Role::Owner, &owner),
        token_entry("screen", Role::Viewer, &viewer),
    ]
    .join("\n");
    std::fs::write(dir.join("tokens.toml"), text).expect("tokens");
    (a, b, b2, owner, viewer)
}

/// A worker id belongs to the pool that first reported it, durably:
/// another pool's heartbeat for it gets 409 `worker_of_another_pool` and
/// changes nothing, across a restart too; a token of the same pool (a
/// rotated one) may go on; `/v1/workers` names the pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_pools_token_cannot_speak_for_a_worker() {
    let (dir, ..) = common::hub_dir();
    let (a, b, b2, _owner, viewer) = pool_tokens(dir.path());
    let post = |url: String, token: String, body: Value| async move {
        let r = reqwest::Client::new()
            .post(format!("{url}/v1/heartbeats"))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .expect("heartbeat");
        let s = r.status();
        (s, r.json::<Value>().await.unwrap_or(Value::Null))
    };
    let w1 = |url: String| {
        let viewer = viewer.clone();
        async move {
            let v: Value = reqwest::Client::new()
                .get(format!("{url}/v1/workers"))
                .bearer_auth(viewer)
                .send()
                .await
                .expect("workers")
                .json()
                .await
                .expect("page");
            v["workers"]
                .as_array()
                .and_then(|w| w.iter().find(|w| w["worker"] == "w-1").cloned())
                .unwrap_or(Value::Null)
        }
    };
    let (child, url) = common::spawn_hub(dir.path(), &[], None);
    let hub = child;
    let no_route = json!([failover("f-b", "auth", "no route")]);
    let (s, v) = post(url.clone(), b.clone(), heartbeat("w-1", None, no_route)).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    assert_eq!(w1(url.clone()).await["pool"], "b");
    // Pool a speaks for b's worker: refused, nothing changes.
    let harmless = json!([failover("f-a", "rate_limited", "harmless")]);
    let (s, v) = post(
        url.clone(),
        a.clone(),
        heartbeat("w-1", None, harmless.clone()),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{v}");
    assert_eq!(v["error"]["code"], "worker_of_another_pool", "{v}");
    let w = w1(url.clone()).await;
    assert_eq!(w["last_failover"]["id"], "f-b", "{w}");
    // b's rotated token, another name, the same pool: taken.
    let (s, v) = post(url.clone(), b2.clone(), heartbeat("w-1", None, json!([]))).await;
    assert_eq!(s, StatusCode::OK, "{v}");
    // a's own worker is a's.
    let (s, _) = post(url.clone(), a.clone(), heartbeat("w-2", None, json!([]))).await;
    assert_eq!(s, StatusCode::OK);
    drop(hub);
    // After a restart the binding holds, whoever speaks first.
    let (child, url) = common::spawn_hub(dir.path(), &[], None);
    let _hub = child;
    let (s, v) = post(url.clone(), a.clone(), heartbeat("w-1", None, harmless)).await;
    assert_eq!(s, StatusCode::CONFLICT, "after a restart: {v}");
    let (s, _) = post(url.clone(), b.clone(), heartbeat("w-1", None, json!([]))).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(w1(url).await["pool"], "b");
}

/// `macfleet hub token --pool NAME` writes the pool; without it the pool
/// is the token's name; `--pool` is for worker tokens only.
#[test]
fn hub_token_takes_a_pool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tokens.toml");
    let f = file.to_string_lossy().into_owned();
    let out = common::macfleet(
        &[
            "hub",
            "token",
            "--name",
            "fleet-2026-12",
            "--role",
            "worker",
            "--pool",
            "fleet",
            "--tokens",
            &f,
        ],
        &[],
    );
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let token = common::text(&out.stdout).trim().to_string();
    let text = std::fs::read_to_string(&file).expect("tokens");
    assert!(text.contains("pool = \"fleet\""), "{text}");
    let t = macfleet::hub::auth::Tokens::parse(&text, "t").expect("parses");
    assert_eq!(t.lookup(&token).map(|p| &*p.pool), Some("fleet"));
    let out = common::macfleet(
        &[
            "hub", "token", "--name", "ops", "--role", "worker", "--tokens", &f,
        ],
        &[],
    );
    let token = common::text(&out.stdout).trim().to_string();
    let t = macfleet::hub::auth::Tokens::load(&file).expect("parses");
    assert_eq!(t.lookup(&token).map(|p| &*p.pool), Some("ops"));
    let out = common::macfleet(
        &[
            "hub", "token", "--name", "al", "--role", "owner", "--pool", "x", "--tokens", &f,
        ],
        &[],
    );
    assert!(!out.status.success());
    assert!(common::text(&out.stderr).contains("--pool is for worker tokens"));
}

/// One pool's flood cannot evict another pool's failovers: the log's bound
/// is shared fairly, so pool b's 50 records survive pool a's flood past the
/// bound; a's oldest go, and health counts them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_pools_flood_evicts_only_its_own_failovers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b, _b2, _owner, viewer) = pool_tokens(dir.path());
    let text = std::fs::read_to_string(dir.path().join("tokens.toml")).expect("tokens");
    let tokens = macfleet::hub::auth::Tokens::parse(&text, "t").expect("tokens");
    let h = TestHub::start_with(common::CONFIG, |o| o.tokens = tokens).await;
    let http = reqwest::Client::new();
    let post = |token: &str, body: Value| {
        let req = http
            .post(h.path("/v1/heartbeats"))
            .bearer_auth(token)
            .json(&body);
        async move { req.send().await.expect("heartbeat").status() }
    };
    let bs: Vec<Value> = (0..50)
        .map(|i| failover(&format!("b-{i}"), "auth", "no route"))
        .collect();
    assert_eq!(
        post(&b, heartbeat("w-b", None, Value::Array(bs))).await,
        StatusCode::OK
    );
    // Past the default bound of 100,000 (and its 1% step).
    const FLOOD: usize = 102_000;
    const PER: usize = 250;
    let t0 = std::time::Instant::now();
    let bodies: Vec<Value> = (0..FLOOD / PER)
        .map(|k| {
            let fos: Vec<Value> = (0..PER)
                .map(|i| failover(&format!("a-{k}-{i}"), "rate_limited", "cap"))
                .collect();
            // A worker of its own for each: eight workers sending 51 each
            // at once would be refused 429 past their pace (issue 30).
            heartbeat(&format!("w-a{k}"), None, Value::Array(fos))
        })
        .collect();
    let mut sent =
        futures::stream::iter(bodies.into_iter().map(|body| post(&a, body))).buffer_unordered(4);
    use futures::StreamExt;
    while let Some(s) = sent.next().await {
        assert_eq!(s, StatusCode::OK, "a pool's heartbeats are always taken");
    }
    eprintln!("{FLOOD} failovers from pool a in {:?}", t0.elapsed());
    let viewer_c = h.client(&viewer);
    let q = FailoverQuery {
        worker: Some("w-b".into()),
        limit: Some(1000),
        ..Default::default()
    };
    let page = viewer_c.failovers(&q).await.expect("b's records");
    assert_eq!(page.events.len(), 50, "pool b's records all survive");
    let health: Value = http
        .get(h.path("/v1/health"))
        .header("accept", "application/json")
        .send()
        .await
        .expect("health")
        .json()
        .await
        .expect("json");
    let dropped = health["database"]["failovers_dropped"]["a"]
        .as_u64()
        .unwrap_or(0);
    assert!(dropped >= 1_000, "a's own oldest went: {health}");
    assert!(
        health["database"]["failovers_dropped"].get("b").is_none(),
        "{health}"
    );
}
