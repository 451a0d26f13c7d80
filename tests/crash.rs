//! A hub killed (SIGKILL) in the middle of a stream of accepted writes
//! leaves a whole document: the last acknowledged one, or the one in flight,
//! never a torn one; and it starts again on it with history intact.

mod common;

use std::process::Child;
use std::time::{Duration, Instant};

use macfleet::client::{Client, ClientError, ClientOptions, Token, Writer};

/// Start `macfleet hub` on an ephemeral loopback port; read the URL it prints.
fn spawn_hub(dir: &std::path::Path) -> (Child, String) {
    common::spawn_hub(dir, &[], None)
}

fn doc(n: usize) -> String {
    // Large enough that a torn write would be visible.
    format!(
        "# revision {n}\n[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n{}",
        format!("# padding {n}\n").repeat(4000)
    )
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
        let mut revision = start.revision.clone();
        let mut acked = vec![start.text.clone()];
        let kill_after = Duration::from_millis(150 + 170 * round as u64);
        let t0 = Instant::now();
        let mut n = round * 1000 + 1;
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
        // Kill while a write is on its way.
        let w2 = writer.clone();
        let text = doc(n);
        let rev2 = revision.clone();
        let pending = tokio::spawn(async move { w2.put_config(&text, &rev2).await });
        let in_flight = doc(n);
        tokio::time::sleep(Duration::from_millis(3)).await;
        hub.kill().expect("SIGKILL");
        hub.wait().expect("reaped");
        if let Ok(Ok(_)) = pending.await {
            acked.push(doc(n));
        }
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
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .expect("ls")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(
            leftovers.len() <= 1,
            "at most the one interrupted temporary file: {leftovers:?}"
        );
    }
    // It starts again on what is there, history included.
    let (mut hub, url) = spawn_hub(dir.path());
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
