//! `macfleet demo --headless`, the real binary: the moment it prints its
//! hub's URL and a token, the hub already holds the scenario's last hour
//! (failovers with past times, and History beyond the hub's own entry), and
//! a live failover arrives within 5 s of launch. Ctrl-C stops it and
//! removes its temporary directory.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;
use macfleet::client::{Client, ClientOptions, FailoverQuery, Token};

/// A demo child process, interrupted (SIGINT, as Ctrl-C) and reaped when
/// dropped.
struct Demo {
    child: Child,
    url: String,
    token: String,
    /// When the live fleet started, as the demo says.
    live_since: Option<chrono::DateTime<Utc>>,
    tmp: Option<std::path::PathBuf>,
    /// Every line the demo printed to stderr so far, and the rest to come.
    said: Vec<String>,
    rx: std::sync::mpsc::Receiver<String>,
    _cfg: tempfile::TempDir,
}

impl Demo {
    /// Start the demo and read its stderr until it has printed the URL, the
    /// token and its temporary directory (at most 60 s).
    fn start(scenario: &str) -> Demo {
        let cfg = tempfile::tempdir().expect("tempdir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_macfleet"))
            .args(["demo", "--headless", "--scenario", scenario])
            .env_remove("MAC_HUB_URL")
            .env_remove("MAC_HUB_TOKEN")
            .env("XDG_CONFIG_HOME", cfg.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("macfleet demo starts");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut demo = Demo {
            child,
            url: String::new(),
            token: String::new(),
            live_since: None,
            tmp: None,
            said: Vec::new(),
            rx,
            _cfg: cfg,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while demo.tmp.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = demo.rx.recv_timeout(left).unwrap_or_else(|_| {
                panic!("the demo printed its URL, token and directory in time")
            });
            demo.said.push(line.clone());
            if let Some(u) = line.trim().strip_prefix("export MAC_HUB_URL=") {
                demo.url = u.to_string();
            } else if let Some(t) = line.trim().strip_prefix("export MAC_HUB_TOKEN=") {
                // `"$(cat PATH)"`: the token is in a file, never printed.
                let path = t
                    .strip_prefix("\"$(cat ")
                    .and_then(|p| p.strip_suffix(")\""))
                    .unwrap_or_else(|| panic!("the token is read from a file: {t}"));
                let meta = std::fs::metadata(path).expect("token file");
                assert_eq!(
                    std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
                    0o600,
                    "only its owner reads the token file"
                );
                demo.token = std::fs::read_to_string(path)
                    .expect("token file")
                    .trim()
                    .to_string();
            } else if let Some(rest) = line.strip_prefix("live since ") {
                let at = rest.split_once(": ").map_or(rest, |(at, _)| at);
                demo.live_since = Some(at.parse().expect("an RFC 3339 time"));
            } else if let Some(rest) = line.split("and removes ").nth(1) {
                demo.tmp = Some(rest.trim().into());
            }
        }
        assert!(demo.url.starts_with("http://127.0.0.1:"), "{}", demo.url);
        assert!(!demo.token.is_empty());
        demo
    }

    fn client(&self) -> Client {
        Client::new(
            &self.url,
            Some(Token::new(self.token.clone())),
            ClientOptions::default(),
        )
        .expect("client")
    }

    /// Ctrl-C (`INT`) or `TERM`, then wait (bounded) for a clean exit;
    /// what it printed, from start to end, never holds its token.
    fn interrupt(&mut self, signal: &str) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status();
        for _ in 0..200 {
            if let Ok(Some(status)) = self.child.try_wait() {
                // The reader thread ends with the pipe; bounded by the loop.
                while let Ok(line) = self.rx.recv_timeout(Duration::from_secs(2)) {
                    self.said.push(line);
                }
                assert!(!self.token.is_empty());
                assert!(
                    self.said.iter().all(|l| !l.contains(&self.token)),
                    "the token was printed"
                );
                return status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        panic!("the demo did not stop within 10 s of Ctrl-C");
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `stop`: the signal that ends the demo (`INT` as Ctrl-C, or `TERM` as a
/// service manager sends); either removes its directory.
async fn first_screen_then_live_failover(scenario: &str, stop: &str) {
    let launched = Instant::now();
    let launched_at = Utc::now();
    let mut demo = Demo::start(scenario);
    let client = demo.client();

    // At once: the last hour's failovers, spread over the hour.
    let page = client
        .failovers(&FailoverQuery {
            limit: Some(1000),
            ..FailoverQuery::default()
        })
        .await
        .expect("failovers");
    assert!(
        page.events.len() >= 10,
        "{scenario}: the last hour has failovers on the first screen ({})",
        page.events.len()
    );
    let oldest = page
        .events
        .iter()
        .map(|e| e.failover.at)
        .min()
        .expect("some");
    assert!(
        oldest < launched_at - chrono::Duration::minutes(45),
        "{scenario}: they reach back most of an hour (oldest {oldest})"
    );
    assert!(page.events.iter().all(|e| e.failover.at <= Utc::now()));
    // Enough distinct minutes for a sparkline, not one burst.
    let minutes: std::collections::BTreeSet<i64> = page
        .events
        .iter()
        .map(|e| (launched_at - e.failover.at).num_minutes())
        .collect();
    assert!(minutes.len() >= 5, "{scenario}: {minutes:?}");
    // History: the hub's own entry and the owner's change.
    let history = client.history().await.expect("history");
    assert!(history.revisions.len() >= 2, "{history:?}");
    assert_eq!(history.revisions[0].by, "demo-owner");
    assert_ne!(
        history.revisions[0].agents,
        history.revisions[0].previous_agents
    );

    // Everything posted before the live fleet started is dated before it.
    let live_since = demo.live_since.expect("the demo says when it went live");
    assert!(live_since >= launched_at);
    let backfilled = page
        .events
        .iter()
        .filter(|e| e.failover.at < live_since)
        .count();
    assert!(
        backfilled >= 10,
        "{scenario}: {backfilled} from the last hour"
    );

    // A live failover (one dated after the live start) within 5 s of launch.
    let mut since = 0;
    let live = loop {
        let p = client
            .failovers(&FailoverQuery {
                since: Some(since),
                limit: Some(1000),
                ..FailoverQuery::default()
            })
            .await
            .expect("failovers");
        since = p.next;
        if let Some(e) = p.events.into_iter().find(|e| e.failover.at >= live_since) {
            break e;
        }
        assert!(
            launched.elapsed() < Duration::from_secs(5),
            "{scenario}: no live failover within 5 s of launch"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(live.failover.cause.kind.takes_status(), "{live:?}");

    let status = demo.interrupt(stop);
    assert!(status.success(), "{status:?}");
    let tmp = demo.tmp.clone().expect("dir");
    assert!(!tmp.exists(), "{} removed", tmp.display());
}

#[tokio::test]
async fn quota_cap_demo_starts_with_its_last_hour_and_a_live_failover() {
    first_screen_then_live_failover("quota-cap", "INT").await;
}

#[tokio::test]
async fn aug19_demo_starts_with_its_last_hour_and_a_live_failover() {
    first_screen_then_live_failover("aug19", "TERM").await;
}

#[tokio::test]
async fn steady_demo_starts_with_its_last_hour_and_a_live_failover() {
    first_screen_then_live_failover("steady", "INT").await;
}

/// `macfleet demo --scenario bad-order`: the demo's owner writes a bad
/// candidate (cursor, codex: missing or capped on most workers) to a
/// quarter of the fleet as a rollout; the cohort's no route rises and the
/// guard halts it within a minute of the launch, the file never on it.
#[tokio::test]
async fn the_bad_order_demo_is_halted_by_the_guard_within_a_minute() {
    let launched = Instant::now();
    let mut demo = Demo::start("bad-order");
    assert!(
        demo.said
            .iter()
            .any(|l| l.starts_with("rollout ") && l.contains(" started: cursor,codex to 25% of")),
        "the demo says the rollout it started: {:?}",
        demo.said
    );
    let client = demo.client();
    let halted = loop {
        let v = client
            .rollout()
            .await
            .expect("rollout")
            .expect("the demo started one");
        if v.state == macfleet::rollout::State::Halted {
            break v;
        }
        assert!(
            launched.elapsed() < Duration::from_secs(60),
            "not halted within a minute of the launch: {v:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let reason = halted.reason.clone().unwrap_or_default();
    assert!(
        reason.starts_with("halted by the guard: no route "),
        "{reason}"
    );
    assert!(halted.guard.cohort.no_route >= 2, "{halted:?}");
    let doc = client.config().await.expect("config");
    assert!(
        doc.text.contains("\"opencode\""),
        "the file keeps the accepted list: {}",
        doc.text
    );
    assert_eq!(
        macfleet::agents_doc::locate(&doc.text)
            .expect("list")
            .agents[0],
        "opencode"
    );
    let history = client.history().await.expect("history");
    assert!(history.revisions.iter().all(|r| r.agents[0] != "cursor"));
    let status = demo.interrupt("INT");
    assert!(status.success(), "{status:?}");
}

/// `macfleet demo --scenario good-order`: the same fleet as bad-order, a
/// candidate every worker can run (claude, opencode, pi) to a quarter for
/// 30 s: the guard stays quiet and the hub promotes it by itself after the
/// bake; the file is on the candidate and every worker of the demo's fleet
/// reports it.
#[tokio::test]
async fn the_good_order_demo_is_promoted_after_its_bake_and_the_fleet_follows() {
    let launched = Instant::now();
    let mut demo = Demo::start("good-order");
    assert!(
        demo.said
            .iter()
            .any(|l| l.starts_with("rollout ")
                && l.contains(" started: claude,opencode,pi to 25% of")),
        "the demo says the rollout it started: {:?}",
        demo.said
    );
    let client = demo.client();
    let promoted = loop {
        let v = client
            .rollout()
            .await
            .expect("rollout")
            .expect("the demo started one");
        assert_ne!(v.state, macfleet::rollout::State::Halted, "{v:?}");
        if v.state == macfleet::rollout::State::Promoted {
            break v;
        }
        assert!(
            launched.elapsed() < Duration::from_secs(120),
            "not promoted within 2 minutes of the launch: {v:?}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(promoted.cohort_on_candidate >= 3, "{promoted:?}");
    assert_eq!(promoted.guard.cohort.no_route, 0, "{promoted:?}");
    let doc = client.config().await.expect("config");
    assert_eq!(doc.revision, promoted.candidate_revision);
    assert_eq!(
        macfleet::agents_doc::locate(&doc.text)
            .expect("list")
            .agents,
        ["claude", "opencode", "pi"]
    );
    let history = client.history().await.expect("history");
    assert_eq!(history.revisions[0].revision, promoted.candidate_revision);
    assert_eq!(history.revisions[0].by, "(guard)");
    let mut on_new = (0, 0);
    for _ in 0..120 {
        let ws = client.workers(None).await.expect("workers").workers;
        let on = ws
            .iter()
            .filter(|w| w.in_sync && w.config_revision.as_deref() == Some(doc.revision.as_str()))
            .count();
        on_new = (on, ws.len());
        if on == ws.len() && on > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        on_new.0 == on_new.1 && on_new.0 > 0,
        "on the new revision: {on_new:?}"
    );
    eprintln!(
        "promoted {:?} after the launch; {} workers on {}",
        launched.elapsed(),
        on_new.0,
        doc.revision
    );
    let status = demo.interrupt("INT");
    assert!(status.success(), "{status:?}");
}
