//! A hub killed (SIGKILL) in the middle of a stream of accepted writes
//! leaves a whole document: the last acknowledged one, or the one in flight,
//! never a torn one; and it starts again on it with history intact.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use macfleet::client::{Client, ClientError, ClientOptions, Token, Writer};

/// Start `macfleet hub` on an ephemeral loopback port; read the URL it prints.
fn spawn_hub(dir: &std::path::Path) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_macfleet"))
        .args(["hub", "--config"])
        .arg(dir.join("hub.toml"))
        .arg("--tokens")
        .arg(dir.join("tokens.toml"))
        .args(["--listen", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("hub starts");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line.split("listening on ").nth(1) {
            let url = rest.split_whitespace().next().expect("url").to_string();
            // Keep draining stderr so the hub never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines.by_ref() {});
            return (child, url);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the hub did not say where it listens");
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
