//! `macfleet get workers -o json|jsonl` against a real hub process with a
//! fleet of the largest workers the contract accepts: the output is what
//! the whole-page writers (`write_json`, `write_jsonl`) make of the hub's
//! own answer, byte for byte, and the reader streams it: its peak memory
//! stays far under the 128 MiB of docs/reliability.md, where holding the
//! page took it past 250 MiB (benches/json_reader.sh measures it at scale).

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{self, HubProcess, Kill, Spawn};
use macfleet::wire::WorkersPage;

/// Workers posted: about 22 MB of `/v1/workers` (9 KB each, pretty printed
/// 13 KB).
const WORKERS: usize = 2500;
/// The reader's goal (docs/reliability.md).
const READER_LIMIT_KIB: u64 = 128 * 1024;

fn agents() -> Vec<String> {
    (0..64)
        .map(|i| format!("agent-{i:02}-{}", "runner-".repeat(5))[..32].to_string())
        .collect()
}

/// A heartbeat of the largest shape (benches/workers_page.py's): a 128-byte
/// id, a 253-byte host, 64 agents of 32 characters, 64 capabilities and a
/// failover with a 200-character detail.
fn largest(i: usize, agents: &[String]) -> serde_json::Value {
    let at = common::ago(1);
    let id = format!("worker-{i:09}-{}", "rack-east-gpu-".repeat(10))[..128].to_string();
    let label = format!("node-{i:09}-{}", "compute".repeat(9))[..63].to_string();
    let host = format!(
        "{label}.{}.{}.{}",
        "a".repeat(63),
        "b".repeat(63),
        "c".repeat(61)
    );
    let caps: serde_json::Map<String, serde_json::Value> = agents
        .iter()
        .map(|a| {
            (
                a.clone(),
                serde_json::json!({"binary": true, "token": true, "preflight": "ok"}),
            )
        })
        .collect();
    let detail = "upstream answered 429 too many requests; retry after sixty seconds. ".repeat(4)
        [..200]
        .to_string();
    serde_json::json!({
        "worker": id, "host": &host[..253], "sent_at": at,
        "agents": agents, "active_agent": agents[1], "capabilities": caps,
        "failovers": [{
            "id": format!("failover-{i:09}-{}", "event-".repeat(20))[..128].to_string(),
            "at": at, "from": agents[0], "to": agents[1],
            "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router", "detail": detail}
        }]
    })
}

async fn post_fleet(url: &str, token: &str) {
    let http = reqwest::Client::new();
    let agents = std::sync::Arc::new(agents());
    let tasks: Vec<_> = (0..8)
        .map(|k| {
            let (http, url, token, agents) = (
                http.clone(),
                url.to_string(),
                token.to_string(),
                agents.clone(),
            );
            tokio::spawn(async move {
                for i in (k..WORKERS).step_by(8) {
                    let r = http
                        .post(format!("{url}/v1/heartbeats"))
                        .bearer_auth(&token)
                        .json(&largest(i, &agents))
                        .send()
                        .await
                        .expect("the hub answers");
                    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap_or_default());
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("poster");
    }
}

struct Measured {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    peak_kib: u64,
}

/// The binary with its whole stdout kept (in a file) and its peak memory
/// (`common::measure::watch`); killed past 60 s or twice the limit.
fn run_measured(url: &str, token: &str, args: &[&str]) -> Measured {
    let out = tempfile::tempfile().expect("stdout file");
    let mut child = Kill(
        Command::new(env!("CARGO_BIN_EXE_macfleet"))
            .args(args)
            .env("XDG_CONFIG_HOME", "/nonexistent-macfleet-test")
            .env("MAC_HUB_URL", url)
            .env("MAC_HUB_TOKEN", token)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("dup"))
            .stderr(Stdio::piped())
            .spawn()
            .expect("macfleet runs"),
    );
    let mut err = child.stderr.take().expect("stderr");
    let errs = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let w = common::measure::watch(&mut child.0, Duration::from_secs(60), 2 * READER_LIMIT_KIB);
    let mut stdout = Vec::new();
    let mut out = out;
    use std::io::Seek;
    out.seek(std::io::SeekFrom::Start(0)).expect("seek");
    out.read_to_end(&mut stdout).expect("stdout");
    Measured {
        code: w.code(),
        stdout,
        stderr: errs.join().expect("stderr"),
        peak_kib: w.peak_kib,
    }
}

/// The page's `now` (the hub's clock at each answer) as one fixed line.
fn without_now(json: &[u8]) -> String {
    String::from_utf8_lossy(json)
        .lines()
        .map(|l| {
            if l.starts_with("  \"now\": ") {
                "  \"now\": …,"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn get_workers_json_streams_the_same_output_within_its_memory_goal() {
    let (dir, _owner, viewer, worker) = common::hub_dir();
    let hub = HubProcess::spawn(
        dir.path(),
        Spawn {
            extra: &["--heartbeat-interval", "600"],
            ..Spawn::default()
        },
    );
    post_fleet(&hub.url, &worker).await;

    // What the whole-page writers make of the hub's own answer.
    let body = reqwest::Client::new()
        .get(format!("{}/v1/workers", hub.url))
        .bearer_auth(&viewer)
        .send()
        .await
        .expect("the hub answers")
        .bytes()
        .await
        .expect("a body");
    let page: WorkersPage = serde_json::from_slice(&body).expect("a page");
    assert_eq!(page.workers.len(), WORKERS);
    let mut want_json = Vec::new();
    macfleet::cli::get::out::write_json(&mut want_json, &page).expect("json");
    let mut want_jsonl = Vec::new();
    macfleet::cli::get::out::write_jsonl(&mut want_jsonl, &page.workers).expect("jsonl");
    drop(page);

    let (url, token) = (hub.url.clone(), viewer.clone());
    let json = tokio::task::spawn_blocking(move || {
        run_measured(&url, &token, &["get", "workers", "-o", "json"])
    })
    .await
    .expect("join");
    eprintln!(
        "`get workers -o json` of {WORKERS} largest workers ({} MB): peak {} MiB",
        json.stdout.len() / 1_000_000,
        json.peak_kib / 1024
    );
    assert_eq!(json.code, Some(0), "{}", json.stderr);
    assert!(
        without_now(&json.stdout) == without_now(&want_json),
        "`-o json` is not what write_json makes of the page ({} bytes, want {})",
        json.stdout.len(),
        want_json.len()
    );
    assert!(
        json.peak_kib > 0 && json.peak_kib <= READER_LIMIT_KIB,
        "`get workers -o json` peaked at {} MiB (at most {} MiB)",
        json.peak_kib / 1024,
        READER_LIMIT_KIB / 1024
    );

    let (url, token) = (hub.url.clone(), viewer.clone());
    let jsonl = tokio::task::spawn_blocking(move || {
        run_measured(&url, &token, &["get", "workers", "-o", "jsonl"])
    })
    .await
    .expect("join");
    eprintln!("`get workers -o jsonl`: peak {} MiB", jsonl.peak_kib / 1024);
    assert_eq!(jsonl.code, Some(0), "{}", jsonl.stderr);
    assert!(
        jsonl.stdout == want_jsonl,
        "`-o jsonl` is not what write_jsonl makes of the page's workers"
    );
    assert!(jsonl.peak_kib > 0 && jsonl.peak_kib <= READER_LIMIT_KIB);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_empty_fleet_is_the_same_empty_page() {
    let (dir, _owner, viewer, _worker) = common::hub_dir();
    let hub = HubProcess::spawn(dir.path(), Spawn::default());
    let body = reqwest::Client::new()
        .get(format!("{}/v1/workers", hub.url))
        .bearer_auth(&viewer)
        .send()
        .await
        .expect("the hub answers")
        .bytes()
        .await
        .expect("a body");
    let page: WorkersPage = serde_json::from_slice(&body).expect("a page");
    let mut want = Vec::new();
    macfleet::cli::get::out::write_json(&mut want, &page).expect("json");
    let (url, token) = (hub.url.clone(), viewer.clone());
    let got = tokio::task::spawn_blocking(move || {
        run_measured(&url, &token, &["get", "workers", "-o", "json"])
    })
    .await
    .expect("join");
    assert_eq!(got.code, Some(0), "{}", got.stderr);
    assert_eq!(without_now(&got.stdout), without_now(&want));
    assert!(String::from_utf8_lossy(&got.stdout).contains("\"workers\": []\n}"));
}
