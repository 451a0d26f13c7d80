//! A hub killed (SIGKILL) in the middle of a stream of accepted writes (and
//! heartbeats), or stopped with SIGTERM,
//! leaves a whole document: the last acknowledged one, or the one in flight,
//! never a torn one; and it starts again on it with history intact.

use crate::common;

use std::process::Child;
use std::time::{Duration, Instant};

use macfleet::client::{Client, ClientError, ClientOptions, Token, Writer};

use common::Kill as HubProcess;

/// Start `macfleet hub` on an ephemeral loopback port; read the URL it prints.
fn spawn_hub(dir: &std::path::Path) -> (HubProcess, String) {
    common::spawn_hub(dir, &[], None)
}

fn doc(n: usize) -> String {
    // Large enough that a torn write would be visible.
    format!(
        "# revision {n}\n[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n{}",
        format!("# padding {n}\n").repeat(4000)
    )
}

/// PUT documents `doc(n)`, `doc(n + 1)`, … over `acked`'s last one (at
/// `revision`) until `kill_after`, start one more, and SIGKILL the hub while
/// it is on its way. `acked` gains every acknowledged document; returns the
/// one that was in flight and the on-disk text.
async fn write_then_kill(
    writer: &Writer,
    mut revision: String,
    mut n: usize,
    kill_after: Duration,
    hub: &mut Child,
    acked: &mut Vec<String>,
) -> String {
    let t0 = Instant::now();
    while t0.elapsed() < kill_after {
        let text = doc(n);
        n += 1;
        match writer.put_config(&text, &revision).await {
            Ok(a) => {
                revision = a.revision;
                acked.push(text);
            }
            Err(e) => panic!("write failed before the kill: {e}"),
        }
    }
    let w2 = writer.clone();
    let text = doc(n);
    let pending = tokio::spawn(async move { w2.put_config(&text, &revision).await });
    tokio::time::sleep(Duration::from_millis(3)).await;
    hub.kill().expect("SIGKILL");
    hub.wait().expect("reaped");
    if let Ok(Ok(_)) = pending.await {
        acked.push(doc(n));
    }
    doc(n)
}

/// The temporary files in `dir`.
fn temps(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("ls")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_mid_write_leaves_one_whole_document() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("hub.toml"), doc(0)).expect("config");
    let owner = format!("{}{}", "mft_crash_", "o".repeat(30));
    std::fs::write(
        dir.path().join("tokens.toml"),
        macfleet::hub::auth::token_entry("alice", macfleet::wire::Role::Owner, &owner),
    )
    .expect("tokens");

    for round in 0..3 {
        let (mut hub, url) = spawn_hub(dir.path());
        let client =
            Client::new(&url, Some(Token::new(&owner)), ClientOptions::default()).expect("client");
        let who = client.whoami().await.expect("whoami");
        let writer = Writer::new(client.clone(), &who).expect("owner");
        let start = client.config().await.expect("config");
        let mut acked = vec![start.text.clone()];
        let kill_after = Duration::from_millis(150 + 170 * round as u64);
        // Kill while a write is on its way.
        let in_flight = write_then_kill(
            &writer,
            start.revision.clone(),
            round * 1000 + 1,
            kill_after,
            &mut hub,
            &mut acked,
        )
        .await;
        let on_disk = std::fs::read_to_string(dir.path().join("hub.toml")).expect("read");
        let last = acked.last().expect("at least the start");
        assert!(
            &on_disk == last || on_disk == in_flight,
            "round {round}: the file is neither the last acknowledged document nor the one in flight ({} bytes)",
            on_disk.len()
        );
        macfleet::agents_doc::locate(&on_disk).expect("a whole, valid document");
        assert!(
            acked.len() > 1,
            "round {round}: some writes were acknowledged before the kill"
        );
        let leftovers = temps(dir.path());
        assert!(
            leftovers.len() <= 1,
            "at most the one interrupted temporary file (the restart clears earlier ones): {leftovers:?}"
        );
    }
    // What a write killed before its rename leaves: the restart clears it.
    std::fs::write(dir.path().join(".hub.toml.Kx9q2Z.tmp"), "half a doc").expect("plant");
    // It starts again on what is there, history included.
    let (mut hub, url) = spawn_hub(dir.path());
    assert_eq!(
        temps(dir.path()),
        Vec::<String>::new(),
        "no temporary file left after a start"
    );
    let client =
        Client::new(&url, Some(Token::new(&owner)), ClientOptions::default()).expect("client");
    let now = client.config().await.expect("config");
    let on_disk = std::fs::read_to_string(dir.path().join("hub.toml")).expect("read");
    assert_eq!(now.text, on_disk);
    let hist = client.history().await.expect("history");
    assert!(
        hist.revisions.len() >= 4,
        "{} revisions kept",
        hist.revisions.len()
    );
    assert_eq!(hist.revisions[0].revision, now.revision);
    let _ = hub.kill();
    let _ = hub.wait();
    // An unreachable hub is exit code 5 through the client.
    let e = client.config().await.expect_err("gone");
    assert!(matches!(e, ClientError::Unreachable(_)), "{e}");
}

/// SIGTERM: the hub stops accepting, lets the request in progress finish,
/// closes open event streams, and exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_finishes_writes_closes_streams_and_exits_0() {
    let (dir, owner, viewer, _worker) = common::hub_dir();
    let (mut hub, url) = spawn_hub(dir.path());
    let client =
        Client::new(&url, Some(Token::new(&owner)), ClientOptions::default()).expect("client");
    let who = client.whoami().await.expect("whoami");
    let writer = Writer::new(client.clone(), &who).expect("owner");
    let start = client.config().await.expect("config");
    // An open event stream, read to its end on a task.
    let stream = reqwest::Client::new()
        .get(format!("{url}/v1/events"))
        .bearer_auth(&viewer)
        .send()
        .await
        .expect("events");
    assert_eq!(stream.status(), 200);
    let reader = tokio::spawn(async move {
        let t0 = Instant::now();
        let mut s = stream;
        while let Ok(Some(_)) = s.chunk().await {}
        t0.elapsed()
    });
    // A write in flight when the signal comes.
    let text = doc(7);
    let w = writer.clone();
    let (t2, rev) = (text.clone(), start.revision.clone());
    let put = tokio::spawn(async move { w.put_config(&t2, &rev).await });
    tokio::time::sleep(Duration::from_millis(5)).await;
    // SAFETY: kill(2) on our own child's pid.
    let rc = unsafe { libc::kill(hub.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = hub.try_wait().expect("wait") {
            break Some(st);
        }
        if t0.elapsed() > Duration::from_secs(10) {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let Some(status) = status else {
        let _ = hub.kill();
        let _ = hub.wait();
        panic!("the hub did not exit within 10 s of SIGTERM");
    };
    assert_eq!(status.code(), Some(0), "exit 0 after SIGTERM");
    let closed_after = tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .expect("the stream ended")
        .expect("reader");
    assert!(closed_after < Duration::from_secs(15));
    // The write was either answered (and is on disk) or never started;
    // nothing is torn.
    let on_disk = std::fs::read_to_string(dir.path().join("hub.toml")).expect("read");
    match put.await.expect("put task") {
        Ok(_) => assert_eq!(on_disk, text, "an acknowledged write is on disk"),
        Err(_) => assert!(on_disk == text || on_disk == start.text),
    }
}

/// Kill rounds for the test below: 4 by default; `MACFLEET_CRASH_ROUNDS=N`
/// for a long run (see docs/reliability.md).
fn crash_rounds() -> usize {
    std::env::var("MACFLEET_CRASH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
}

/// Read the whole failover log, page by page (bounded).
async fn whole_log(viewer: &Client) -> Vec<macfleet::wire::FailoverRecord> {
    let mut all = Vec::new();
    let mut since = 0;
    for _ in 0..10_000 {
        let p = viewer
            .failovers(&macfleet::client::FailoverQuery {
                since: Some(since),
                limit: Some(1000),
                ..Default::default()
            })
            .await
            .expect("the log reads");
        let done = p.events.is_empty();
        all.extend(p.events);
        if done || p.next == since {
            break;
        }
        since = p.next;
    }
    all
}

/// Repeated SIGKILL while an owner writes and workers heartbeat with
/// failovers: after every restart the document is the last acknowledged or
/// the one in flight, every acknowledged failover is in the log exactly
/// once (seqs increasing), and the history's newest entry is the document's
/// revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_kills_under_writes_and_heartbeats_lose_nothing_acknowledged() {
    let (dir, owner, viewer_tok, worker_tok) = common::hub_dir();
    std::fs::write(dir.path().join("hub.toml"), doc(0)).expect("config");
    let mut acked_failovers: Vec<String> = Vec::new();
    let mut kills = 0;
    let mut puts_acked = 0;
    for round in 0..crash_rounds() {
        let (mut hub, url) = spawn_hub(dir.path());
        let client = |t: &str| {
            Client::new(&url, Some(Token::new(t)), ClientOptions::default()).expect("client")
        };
        let (owner_c, viewer, worker) = (client(&owner), client(&viewer_tok), client(&worker_tok));
        // Everything acknowledged before this start is there, once.
        let log = whole_log(&viewer).await;
        let ids: Vec<&str> = log.iter().map(|r| r.failover.id.as_str()).collect();
        for id in &acked_failovers {
            assert_eq!(
                ids.iter().filter(|i| *i == id).count(),
                1,
                "round {round}: acknowledged failover {id} is in the log once"
            );
        }
        assert!(log.windows(2).all(|w| w[0].seq < w[1].seq), "seqs increase");
        let now = viewer.config().await.expect("config");
        let hist = viewer.history().await.expect("history");
        assert_eq!(hist.revisions[0].revision, now.revision, "round {round}");
        macfleet::agents_doc::locate(&now.text).expect("a whole document");

        let who = owner_c.whoami().await.expect("whoami");
        let writer = Writer::new(owner_c.clone(), &who).expect("owner");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        // Workers heartbeat with a new failover each time.
        let beats = {
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut acked = Vec::new();
                let mut i = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) && i < 10_000 {
                    let id = format!("r{round}-f{i}");
                    let hb: macfleet::wire::Heartbeat = serde_json::from_value(common::heartbeat(
                        &format!("w-{}", i % 7),
                        None,
                        serde_json::json!([common::failover(&id, "rate_limited", "429")]),
                    ))
                    .expect("hb");
                    match worker.heartbeat(&hb).await {
                        Ok(_) => acked.push(id),
                        Err(_) => break,
                    }
                    i += 1;
                }
                acked
            })
        };
        let mut acked_docs = vec![now.text.clone()];
        let kill_after = Duration::from_millis(200 + 97 * (round as u64 % 5));
        let in_flight = write_then_kill(
            &writer,
            now.revision.clone(),
            round * 1000 + 1,
            kill_after,
            &mut hub,
            &mut acked_docs,
        )
        .await;
        kills += 1;
        puts_acked += acked_docs.len() - 1;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        acked_failovers.extend(beats.await.expect("heartbeats"));
        let on_disk = std::fs::read_to_string(dir.path().join("hub.toml")).expect("read");
        let last = acked_docs.last().expect("at least the start");
        assert!(
            &on_disk == last || on_disk == in_flight,
            "round {round}: neither the last acknowledged document nor the one in flight"
        );
    }
    // The last restart checks the last round.
    let (mut hub, url) = spawn_hub(dir.path());
    let viewer = Client::new(
        &url,
        Some(Token::new(&viewer_tok)),
        ClientOptions::default(),
    )
    .expect("client");
    let log = whole_log(&viewer).await;
    let _ = hub.kill();
    let _ = hub.wait();
    let ids: std::collections::HashSet<&str> = log.iter().map(|r| r.failover.id.as_str()).collect();
    assert_eq!(ids.len(), log.len(), "no failover twice");
    let missing: Vec<_> = acked_failovers
        .iter()
        .filter(|id| !ids.contains(id.as_str()))
        .collect();
    assert!(missing.is_empty(), "acknowledged but lost: {missing:?}");
    eprintln!(
        "{kills} SIGKILLs survived; {puts_acked} config writes and {} failovers acknowledged, all kept ({} in the log)",
        acked_failovers.len(),
        log.len()
    );
    assert!(!acked_failovers.is_empty() && puts_acked > 0);
}

/// A hub killed between a write's rename and its history entry (held there
/// by the test hook `MACFLEET_FAULT_STALL_AFTER_RENAME_MS`) starts again
/// with the write recorded as its author's, not as a hand edit, and workers
/// told the new revision.
#[tokio::test(flavor = "multi_thread")]
async fn a_write_killed_after_its_rename_is_recorded_as_its_authors() {
    let (dir, owner, _viewer, worker) = common::hub_dir();
    let (child, url) = common::spawn_hub_env(
        dir.path(),
        &[],
        None,
        &[("MACFLEET_FAULT_STALL_AFTER_RENAME_MS", "30000")],
    );
    let mut hub: HubProcess = child;
    let client =
        Client::new(&url, Some(Token::new(&owner)), ClientOptions::default()).expect("client");
    let who = client.whoami().await.expect("whoami");
    let writer = Writer::new(client.clone(), &who).expect("owner");
    let start = client.config().await.expect("config");
    let text = doc(1);
    let (w, t, r) = (writer.clone(), text.clone(), start.revision.clone());
    let pending = tokio::spawn(async move { w.put_config(&t, &r).await });
    // The rename has happened when the file holds the new document.
    let path = dir.path().join("hub.toml");
    let t0 = Instant::now();
    while std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the write never landed"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    hub.kill().expect("SIGKILL");
    hub.wait().expect("reaped");
    assert!(pending.await.expect("task").is_err(), "never acknowledged");
    drop(hub);
    let (child, url) = common::spawn_hub(dir.path(), &[], None);
    let _hub: HubProcess = child;
    let http = reqwest::Client::new();
    let client =
        Client::new(&url, Some(Token::new(&owner)), ClientOptions::default()).expect("client");
    let now = client.config().await.expect("config");
    assert_eq!(now.text, text);
    let hist = client.history().await.expect("history");
    let newest = &hist.revisions[0];
    assert_eq!(
        (newest.revision.as_str(), newest.by.as_str()),
        (now.revision.as_str(), "alice"),
        "{:?}",
        hist.revisions
    );
    assert!(
        !hist.revisions.iter().any(|h| h.by == "(changed on disk)"),
        "{:?}",
        hist.revisions
    );
    let p: serde_json::Value = http
        .post(format!("{url}/v1/heartbeats"))
        .bearer_auth(&worker)
        .json(&common::heartbeat("w-1", None, serde_json::json!([])))
        .send()
        .await
        .expect("heartbeat")
        .json()
        .await
        .expect("projection");
    assert_eq!(p["config_revision"], now.revision.as_str());
}

/// New worker ids are bound in batches (issue 30, "Registering is slow":
/// one commit for the ids of a moment, each answered after it), still
/// durably. Three rounds of 64 first heartbeats sent at once, the hub
/// SIGKILLed the moment the first answer arrives: after a restart every id
/// that was answered 200 belongs to the pool that registered it (another
/// pool's heartbeat for it gets 409 `worker_of_another_pool`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_id_survives_a_kill_right_after_its_first_answer() {
    use macfleet::wire::Role;
    use reqwest::StatusCode;
    let mine = format!("{}{}", "mft_test_", "mine".repeat(6));
    let theirs = format!("{}{}", "mft_test_", "thrs".repeat(6));
    let dir = common::hub_dir_of(&[("a", Role::Worker, &mine), ("b", Role::Worker, &theirs)]);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("http");
    let post = |url: String, token: String, id: String| {
        let http = http.clone();
        async move {
            let r = http
                .post(format!("{url}/v1/heartbeats"))
                .bearer_auth(token)
                .json(&common::heartbeat(&id, None, serde_json::json!([])))
                .send()
                .await;
            (id, r.map(|r| r.status()))
        }
    };
    let mut answered = Vec::new();
    for round in 0..3 {
        let (mut hub, url) = spawn_hub(dir.path());
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for i in 0..64 {
            let (tx, fut) = (
                tx.clone(),
                post(url.clone(), mine.clone(), format!("r{round}-{i}")),
            );
            tokio::spawn(async move {
                let _ = tx.send(fut.await);
            });
        }
        drop(tx);
        let mut ok = Vec::new();
        let mut killed = false;
        while let Some((id, status)) = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("answers")
        {
            if let Ok(StatusCode::OK) = status {
                if !killed {
                    hub.kill().expect("SIGKILL");
                    killed = true;
                }
                ok.push(id);
            }
        }
        assert!(killed, "round {round}: no first heartbeat was answered");
        let _ = hub.wait();
        answered.extend(ok);
    }
    let (_hub, url) = spawn_hub(dir.path());
    for id in &answered {
        let (_, s) = post(url.clone(), theirs.clone(), id.clone()).await;
        assert_eq!(
            s.expect("answer"),
            StatusCode::CONFLICT,
            "{id} was answered, then lost its pool in the kill ({} answered in all)",
            answered.len()
        );
    }
    eprintln!(
        "{} ids answered before the kills, all bound",
        answered.len()
    );
}
