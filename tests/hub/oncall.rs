//! On-call's view of a real hub (issue 21): headroom on every worker,
//! `GET /metrics` (checked by `promtool`), the alert rules (checked and
//! unit-tested by `promtool`, and fired by a real `prometheus` scraping a
//! hub under aug19), recoveries (log, event, counter, `get recoveries`,
//! the simulator's quota-cap), and `agents drill`.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crate::common::{Kill, TestHub, ago, eventually, macfleet, text};
use macfleet::client::{FailoverQuery, HubEvent, StreamItem};
use macfleet::sim::{Scenario, SimOptions, SimStats, Start};
use serde_json::{Value, json};

const LIST: &str = "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"pi\", \"claude\", \"codex\"]\n";

/// A heartbeat on `LIST` (revision `rev`), standing on `active`, with
/// every agent runnable but those in `cannot`.
fn beat_json(
    worker: &str,
    rev: Option<&str>,
    active: Option<&str>,
    cannot: &[&str],
    failovers: Value,
) -> Value {
    let mut b = crate::common::Beat::new(worker)
        .own_host()
        .rev(rev)
        .list(&["opencode", "pi", "claude", "codex"])
        .active(active)
        .failovers(failovers);
    for a in cannot {
        b = b.cap(a, false, "unknown");
    }
    b.json()
}

fn failover(id: &str, secs_ago: i64, from: &str, to: Option<&str>) -> Value {
    json!({"id": id, "at": ago(secs_ago), "from": from, "to": to,
           "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router"}})
}

async fn post(h: &TestHub, body: Value) {
    h.beat(body).await
}

async fn revision(h: &TestHub) -> String {
    h.client(&h.viewer).config().await.expect("config").revision
}

async fn headroom(h: &TestHub, worker: &str) -> Option<u32> {
    let page = h.client(&h.viewer).workers(None).await.expect("workers");
    page.workers
        .iter()
        .find(|w| w.worker == worker)
        .and_then(|w| w.headroom)
}

/// Run the binary off the async runtime.
async fn run(h: &TestHub, token: &str, args: &[&str]) -> std::process::Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let env = [
        ("MAC_HUB_URL".to_string(), h.url()),
        ("MAC_HUB_TOKEN".to_string(), token.to_string()),
    ];
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = env.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        macfleet(&args, &env)
    })
    .await
    .expect("join")
}

async fn scrape(h: &TestHub, token: Option<&str>) -> reqwest::Response {
    let mut rb = h.http().get(h.path("/metrics"));
    if let Some(t) = token {
        rb = rb.bearer_auth(t);
    }
    rb.send().await.expect("scrape")
}

/// The value of the sample `series` (name and labels as written) in `text`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn headroom_counts_runnable_rungs_below_that_are_not_held_off() {
    let h = TestHub::start_with(LIST, |_| {}).await;
    let rev = revision(&h).await;
    let r = Some(rev.as_str());
    // On the top rung, codex not installed: pi and claude below.
    post(
        &h,
        beat_json("w-1", r, Some("opencode"), &["codex"], json!([])),
    )
    .await;
    assert_eq!(headroom(&h, "w-1").await, Some(2));
    // Left claude ten minutes ago and came back up to pi: claude is held
    // off (not run since), codex is not.
    post(
        &h,
        beat_json(
            "w-2",
            r,
            Some("pi"),
            &[],
            json!([failover("f-1", 600, "claude", Some("codex"))]),
        ),
    )
    .await;
    assert_eq!(headroom(&h, "w-2").await, Some(1));
    // It runs claude again: the hold ends.
    post(&h, beat_json("w-2", r, Some("claude"), &[], json!([]))).await;
    assert_eq!(headroom(&h, "w-2").await, Some(1), "codex below claude");
    post(&h, beat_json("w-2", r, Some("pi"), &[], json!([]))).await;
    assert_eq!(headroom(&h, "w-2").await, Some(2), "claude counts again");
    // On the last rung: one failure from no route; with no route: 0.
    post(&h, beat_json("w-3", r, Some("codex"), &[], json!([]))).await;
    post(&h, beat_json("w-4", r, None, &[], json!([]))).await;
    assert_eq!(headroom(&h, "w-3").await, Some(0));
    assert_eq!(headroom(&h, "w-4").await, Some(0));
    let page = h.client(&h.viewer).workers(None).await.expect("workers");
    let one: Vec<&str> = page
        .workers
        .iter()
        .filter(|w| w.one_failure_from_no_route())
        .map(|w| w.worker.as_str())
        .collect();
    assert_eq!(one, ["w-3"]);
    // `get workers` shows it, and the fleet line counts them.
    let out = run(&h, &h.viewer, &["get", "workers", "-o", "wide"]).await;
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("HEADROOM"), "{stdout}");
    let w1 = stdout
        .lines()
        .find(|l| l.starts_with("w-1 "))
        .expect("w-1 row");
    assert!(
        w1.contains("opencode #0  2 ") || w1.split_whitespace().any(|c| c == "2"),
        "{w1}"
    );
    // The fleet line is for people: on stderr (stdout holds the table).
    let stderr = text(&out.stderr);
    assert!(stderr.contains("1 one failure from no route"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failover_older_than_the_held_off_window_no_longer_holds() {
    let h = TestHub::start_with(LIST, |o| o.held_off_window = Duration::from_secs(300)).await;
    let rev = revision(&h).await;
    let r = Some(rev.as_str());
    post(
        &h,
        beat_json(
            "w-1",
            r,
            Some("pi"),
            &[],
            json!([
                failover("f-1", 600, "claude", Some("codex")),
                failover("f-2", 60, "codex", None)
            ]),
        ),
    )
    .await;
    // claude's failover is ten minutes old, past the 5-minute window; codex's
    // is a minute old.
    assert_eq!(headroom(&h, "w-1").await, Some(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_need_a_token_and_carry_bounded_fleet_series() {
    let h = TestHub::start_with(LIST, |_| {}).await;
    let rev = revision(&h).await;
    let r = Some(rev.as_str());
    post(
        &h,
        beat_json("w-secret-id-1", r, Some("opencode"), &["codex"], json!([])),
    )
    .await;
    post(
        &h,
        beat_json(
            "w-2",
            r,
            None,
            &[],
            json!([failover("f-1", 30, "codex", None)]),
        ),
    )
    .await;
    post(&h, beat_json("w-3", r, Some("codex"), &[], json!([]))).await;
    // An agent outside the list, reported as active: labelled `other`.
    let mut odd = beat_json("w-4", None, Some("zedagent"), &[], json!([]));
    odd["agents"] = json!(["zedagent", "opencode"]);
    post(&h, odd).await;

    let none = scrape(&h, None).await;
    assert_eq!(none.status(), 401);
    for token in [&h.owner, &h.viewer, &h.worker] {
        assert_eq!(scrape(&h, Some(token)).await.status(), 200);
    }
    let resp = scrape(&h, Some(&h.viewer)).await;
    let ct = resp.headers()["content-type"]
        .to_str()
        .expect("ct")
        .to_string();
    assert!(ct.starts_with("text/plain; version=0.0.4"), "{ct}");
    let body = resp.text().await.expect("body");
    let v = |s: &str| sample(&body, s).unwrap_or_else(|| panic!("{s} in\n{body}"));
    assert_eq!(v("macfleet_workers{state=\"healthy\"}"), 4.0);
    assert_eq!(v("macfleet_workers{state=\"lost\"}"), 0.0);
    assert_eq!(v("macfleet_workers_no_route"), 1.0);
    assert_eq!(
        v("macfleet_workers_one_failure_from_no_route"),
        1.0,
        "w-3 on codex"
    );
    assert_eq!(
        v("macfleet_workers_behind_revision"),
        1.0,
        "w-4 reports none"
    );
    assert_eq!(
        v("macfleet_workers_by_agent{agent=\"opencode\",rung=\"0\"}"),
        1.0
    );
    assert_eq!(
        v("macfleet_workers_by_agent{agent=\"other\",rung=\"other\"}"),
        1.0
    );
    assert_eq!(
        v("macfleet_failovers_total{kind=\"rate_limited\",from=\"codex\",to=\"none\"}"),
        1.0
    );
    assert_eq!(v("macfleet_rung_workers_held_off{agent=\"codex\"}"), 1.0);
    assert_eq!(
        v(&format!("macfleet_config_info{{revision=\"{rev}\"}}")),
        1.0
    );
    assert_eq!(v("macfleet_order_built_in"), 0.0);
    assert_eq!(v("macfleet_hub_db_errors_total"), 0.0);
    assert_eq!(v("macfleet_hub_sse_subscribers"), 0.0);
    assert!(v("macfleet_hub_requests_total{route=\"/v1/heartbeats\",status=\"200\"}") >= 4.0);
    assert_eq!(
        v("macfleet_hub_requests_total{route=\"/metrics\",status=\"401\"}"),
        1.0
    );
    // Never a worker id or a host, and no agent outside the list.
    for word in ["w-secret-id-1", "host-w", "zedagent"] {
        assert!(!body.contains(word), "{word} in\n{body}");
    }

    // A refused heartbeat counts under its code.
    let refused = h
        .http()
        .post(h.path("/v1/heartbeats"))
        .bearer_auth(&h.worker)
        .header("content-type", "application/json")
        .body("{\"worker\": 1}")
        .send()
        .await
        .expect("post");
    assert_eq!(refused.status(), 422);
    let body = scrape(&h, Some(&h.viewer))
        .await
        .text()
        .await
        .expect("body");
    assert_eq!(
        sample(
            &body,
            "macfleet_hub_heartbeats_refused_total{reason=\"invalid_heartbeat\"}"
        ),
        Some(1.0),
        "{body}"
    );

    // promtool reads it as valid exposition.
    let mut check = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool (Debian package prometheus; .ci/run installs it)");
    std::io::Write::write_all(check.stdin.as_mut().expect("stdin"), body.as_bytes())
        .expect("write");
    drop(check.stdin.take());
    let out = check.wait_with_output().expect("promtool");
    assert!(
        out.status.success(),
        "promtool check metrics: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).trim().is_empty() && text(&out.stderr).trim().is_empty(),
        "promtool lint: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_built_in_order_shows_in_the_metrics() {
    let h = TestHub::start_with("[fleet]\nother = 1\n", |_| {}).await;
    let body = scrape(&h, Some(&h.viewer))
        .await
        .text()
        .await
        .expect("body");
    assert_eq!(
        sample(&body, "macfleet_order_built_in"),
        Some(1.0),
        "{body}"
    );
    assert_eq!(
        sample(&body, "macfleet_config_info{revision=\"built-in\"}"),
        Some(1.0)
    );
}

fn assets(file: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets")
        .join(file)
}

#[test]
fn the_alert_rules_load_and_pass_their_unit_tests() {
    let check = Command::new("promtool")
        .args(["check", "rules"])
        .arg(assets("alerts.yml"))
        .output()
        .expect("promtool (Debian package prometheus; .ci/run installs it)");
    assert!(
        check.status.success(),
        "{}{}",
        text(&check.stdout),
        text(&check.stderr)
    );
    let rules = std::fs::read_to_string(assets("alerts.yml")).expect("rules");
    for alert in [
        "MacfleetNoRoute",
        "MacfleetNoRouteFleet",
        "MacfleetHeadroomLow",
        "MacfleetRungDown",
        "MacfleetConvergenceStuck",
        "MacfleetBuiltInOrder",
        "MacfleetHubDatabase",
        "MacfleetConfigInvalid",
        "MacfleetHubUnreachable",
        "MacfleetHubAbsent",
        "MacfleetWorkersLost",
        "MacfleetRolloutHalted",
    ] {
        assert!(rules.contains(&format!("alert: {alert}\n")), "{alert}");
    }
    assert_eq!(rules.matches("summary:").count(), 12, "a summary on each");
    let test = Command::new("promtool")
        .args(["test", "rules"])
        .arg(assets("alerts.test.yml"))
        .output()
        .expect("promtool");
    assert!(
        test.status.success(),
        "{}{}",
        text(&test.stdout),
        text(&test.stderr)
    );
}

/// A `prometheus` process on loopback in its own directory, killed on drop.
struct Prometheus {
    _child: Kill,
    url: String,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl Prometheus {
    fn start(hub: &str, token: &str) -> Prometheus {
        let dir = tempfile::tempdir().expect("tempdir");
        let cred = dir.path().join("token");
        std::fs::write(&cred, token).expect("token file");
        let target = hub.trim_start_matches("http://");
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {rules}\nscrape_configs:\n  - job_name: macfleet\n    authorization:\n      credentials_file: {cred}\n    static_configs:\n      - targets: ['{target}']\n",
            rules = assets("alerts.yml").display(),
            cred = cred.display(),
        );
        std::fs::write(dir.path().join("prometheus.yml"), config).expect("config");
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("prometheus (Debian package prometheus; .ci/run installs it)");
        Prometheus {
            _child: Kill(child),
            url: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        }
    }
}

/// Run a simulated fleet against `h` until the sender is used or dropped
/// (at most 90 s).
fn spawn_sim(h: &TestHub, mut opts: SimOptions) -> tokio::sync::oneshot::Sender<()> {
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    opts.duration = Some(Duration::from_secs(90));
    tokio::spawn(macfleet::sim::run(
        h.client(&h.worker),
        opts,
        Arc::new(SimStats::default()),
        async {
            let _ = stop_rx.await;
        },
    ));
    stop_tx
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_prometheus_scraping_a_hub_under_aug19_raises_the_no_route_alert() {
    let h = TestHub::start_with(
        "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"pi\", \"claude\", \"codex\", \"cursor\"]\n",
        |_| {},
    )
    .await;
    let mut opts = SimOptions::new(12, Scenario::load("aug19").expect("aug19"));
    // The outage runs from 30 s to 90 s of the cycle: start just before.
    opts.start = Start::At(29);
    let _stop = spawn_sim(&h, opts);
    let prom = Prometheus::start(&h.url(), &h.viewer);
    let http = h.http();
    // Bounded: 60 s at most (scrapes and evaluations every second).
    let state = eventually(1200, || async {
        let v: Value = http
            .get(format!("{}/api/v1/alerts", prom.url))
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        v["data"]["alerts"].as_array()?.iter().find_map(|a| {
            (a["labels"]["alertname"] == "MacfleetNoRoute")
                .then(|| a["state"].as_str().map(str::to_string))
                .flatten()
        })
    })
    .await
    .expect("MacfleetNoRoute pending or firing within 60 s");
    assert!(state == "pending" || state == "firing", "{state}");
    // The scrape itself was healthy.
    let targets: Value = http
        .get(format!("{}/api/v1/targets", prom.url))
        .send()
        .await
        .expect("targets")
        .json()
        .await
        .expect("json");
    assert_eq!(
        targets["data"]["activeTargets"][0]["health"], "up",
        "{targets}"
    );
}

/// The recovery log once it holds `n` (within 5 s): recoveries commit
/// with the next batch, after their heartbeat is answered.
async fn recoveries_once(
    viewer: &macfleet::client::Client,
    n: usize,
) -> macfleet::wire::RecoveriesPage {
    eventually(100, || async {
        let p = viewer.recoveries(&FailoverQuery::default()).await.ok()?;
        (p.events.len() >= n).then_some(p)
    })
    .await
    .unwrap_or_else(|| panic!("{n} recoveries within 5 s"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_move_back_up_the_same_list_is_a_recovery_and_a_new_order_is_not() {
    let h = TestHub::start_with(LIST, |_| {}).await;
    let viewer = h.client(&h.viewer);
    let mut events = Box::pin(viewer.events(None, &["recovery"]));
    tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(item) = futures::StreamExt::next(&mut events).await {
            if item == StreamItem::Connected {
                return;
            }
        }
    })
    .await
    .expect("stream up");
    let rev = revision(&h).await;
    let r = Some(rev.as_str());
    post(
        &h,
        beat_json(
            "w-1",
            r,
            Some("pi"),
            &[],
            json!([failover("f-1", 300, "opencode", Some("pi"))]),
        ),
    )
    .await;
    // Back on opencode: a recovery, held off about five minutes, committed
    // with the next batch (the heartbeat does not wait for it).
    post(&h, beat_json("w-1", r, Some("opencode"), &[], json!([]))).await;
    let page = recoveries_once(&viewer, 1).await;
    assert_eq!(page.events.len(), 1, "{page:?}");
    let rec = &page.events[0];
    assert_eq!(
        (
            rec.worker.as_str(),
            rec.host.as_str(),
            rec.from.as_deref(),
            rec.to.as_str()
        ),
        ("w-1", "host-w-1", Some("pi"), "opencode")
    );
    assert!((295..=320).contains(&rec.held_off_s), "{}", rec.held_off_s);
    assert_eq!(page.oldest, rec.seq);
    let ev = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match futures::StreamExt::next(&mut events).await {
                Some(StreamItem::Event {
                    event: HubEvent::Recovery(r),
                    ..
                }) => return *r,
                Some(_) => continue,
                None => panic!("stream ended"),
            }
        }
    })
    .await
    .expect("a recovery event");
    assert_eq!(&ev, rec);

    // From no route back onto a rung is one too.
    post(&h, beat_json("w-2", r, None, &[], json!([]))).await;
    post(&h, beat_json("w-2", r, Some("claude"), &[], json!([]))).await;
    // A move down, or sideways onto the same rank, is not.
    post(&h, beat_json("w-2", r, Some("codex"), &[], json!([]))).await;

    // The owner reorders: the worker follows the new list onto what is now
    // its rank 0. A new order, not a recovery.
    let doc = "[fleet]\nMAC_CODING_AGENTS = [\"codex\", \"opencode\", \"pi\", \"claude\"]\n";
    let owner = h.client(&h.owner);
    let who = owner.whoami().await.expect("whoami");
    let writer = macfleet::client::Writer::new(owner, &who).expect("owner");
    let new = writer.put_config(doc, &rev).await.expect("put").revision;
    let mut reordered = beat_json("w-2", Some(&new), Some("codex"), &[], json!([]));
    reordered["agents"] = json!(["codex", "opencode", "pi", "claude"]);
    post(&h, reordered).await;

    let all = recoveries_once(&viewer, 2).await;
    let moves: Vec<(&str, Option<&str>, &str)> = all
        .events
        .iter()
        .map(|e| (e.worker.as_str(), e.from.as_deref(), e.to.as_str()))
        .collect();
    assert_eq!(
        moves,
        [("w-1", Some("pi"), "opencode"), ("w-2", None, "claude")]
    );
    // Paging and filters as the failover log's.
    let one = viewer
        .recoveries(&FailoverQuery {
            limit: Some(1),
            ..Default::default()
        })
        .await
        .expect("page");
    assert_eq!((one.events.len(), one.next), (1, all.events[0].seq));
    let by = viewer
        .recoveries(&FailoverQuery {
            agent: Some("claude".into()),
            ..Default::default()
        })
        .await
        .expect("agent");
    assert_eq!(by.events.len(), 1);
    assert_eq!(by.next, all.events[1].seq, "not full: the head");
    let bad = h
        .http()
        .get(h.path("/v1/recoveries?limit=0"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("get");
    assert_eq!(bad.status(), 400);
    let worker = h
        .http()
        .get(h.path("/v1/recoveries"))
        .bearer_auth(&h.worker)
        .send()
        .await
        .expect("get");
    assert_eq!(worker.status(), 403);

    // Counted, labelled against the list in force.
    let body = scrape(&h, Some(&h.viewer))
        .await
        .text()
        .await
        .expect("body");
    assert_eq!(
        sample(
            &body,
            "macfleet_recoveries_total{from=\"pi\",to=\"opencode\"}"
        ),
        Some(1.0),
        "{body}"
    );
    assert_eq!(
        sample(
            &body,
            "macfleet_recoveries_total{from=\"none\",to=\"claude\"}"
        ),
        Some(1.0)
    );

    // `get recoveries`: table, filters, JSON.
    let out = run(&h, &h.viewer, &["get", "recoveries"]).await;
    let table = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        table.contains("pi → opencode") && table.contains("NO ROUTE → claude"),
        "{table}"
    );
    assert!(
        table.contains("HELD OFF") && table.contains("5m"),
        "{table}"
    );
    let out = run(
        &h,
        &h.viewer,
        &["get", "recoveries", "--worker", "w-2", "-o", "json"],
    )
    .await;
    let page: macfleet::wire::RecoveriesPage =
        serde_json::from_slice(&out.stdout).expect("json page");
    assert_eq!(page.events.len(), 1);
    assert_eq!(page.events[0].to, "claude");
    let out = run(&h, &h.viewer, &["get", "recoveries", "--kind", "auth"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[tokio::test(flavor = "multi_thread")]
async fn get_recoveries_watch_prints_each_new_one() {
    let h = TestHub::start_with(LIST, |_| {}).await;
    let rev = revision(&h).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_macfleet"))
        .args(["get", "recoveries", "--watch", "-o", "jsonl"])
        .env("MAC_HUB_URL", h.url())
        .env("MAC_HUB_TOKEN", &h.viewer)
        .env("XDG_CONFIG_HOME", "/nonexistent-macfleet-test")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let _kill = Kill(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // Give the watcher a moment to subscribe (bounded by its own 5 s wait).
    tokio::time::sleep(Duration::from_millis(700)).await;
    let r = Some(rev.as_str());
    post(&h, beat_json("w-9", r, Some("claude"), &[], json!([]))).await;
    post(&h, beat_json("w-9", r, Some("pi"), &[], json!([]))).await;
    let line = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(10)))
        .await
        .expect("join")
        .expect("a line within 10 s");
    let rec: macfleet::wire::RecoveryRecord = serde_json::from_str(&line).expect("jsonl");
    assert_eq!((rec.worker.as_str(), rec.to.as_str()), ("w-9", "pi"));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_simulators_quota_cap_recovers_when_its_caps_end() {
    let h = TestHub::start_with(
        "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"pi\", \"claude\", \"codex\", \"cursor\"]\n",
        |_| {},
    )
    .await;
    let mut opts = SimOptions::new(16, Scenario::load("quota-cap").expect("quota-cap"));
    // The caps on opencode end at 200 s of the cycle: start a little before.
    opts.start = Start::At(195);
    let _stop = spawn_sim(&h, opts);
    let viewer = h.client(&h.viewer);
    let page = eventually(400, || async {
        let p = viewer.recoveries(&FailoverQuery::default()).await.ok()?;
        (!p.events.is_empty()).then_some(p)
    })
    .await
    .expect("recoveries within 20 s");
    assert!(page.events.iter().all(|e| e.to == "opencode"), "{page:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn agents_drill_projects_rungs_down_and_writes_nothing() {
    let h = TestHub::start_with(LIST, |_| {}).await;
    let rev = revision(&h).await;
    let r = Some(rev.as_str());
    post(
        &h,
        beat_json("w-1", r, Some("opencode"), &["codex"], json!([])),
    )
    .await;
    post(
        &h,
        beat_json(
            "w-2",
            r,
            Some("opencode"),
            &["pi", "claude", "codex"],
            json!([]),
        ),
    )
    .await;
    post(
        &h,
        beat_json("w-3", r, Some("pi"), &["opencode"], json!([])),
    )
    .await;
    let history = h
        .client(&h.viewer)
        .history()
        .await
        .expect("history")
        .revisions
        .len();
    let out = run(&h, &h.owner, &["agents", "drill", "opencode", "pi"]).await;
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}{stdout}", text(&out.stderr));
    assert!(stdout.starts_with("drill: opencode, pi down"), "{stdout}");
    // w-1 lands on claude, w-3 on claude, w-2 has nothing left.
    let claude = stdout
        .lines()
        .find(|l| l.contains(" claude "))
        .expect("claude row");
    assert!(claude.trim_end().ends_with('2'), "{claude}");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("opencode") && l.ends_with("down")),
        "{stdout}"
    );
    assert!(
        stdout.contains("1 of 3 healthy workers would have no route (0 today)"),
        "{stdout}"
    );
    // Nothing written.
    assert_eq!(revision(&h).await, rev);
    assert_eq!(
        h.client(&h.viewer)
            .history()
            .await
            .expect("history")
            .revisions
            .len(),
        history
    );
    // A rung not in the list, or not a name: usage errors.
    let out = run(&h, &h.owner, &["agents", "drill", "cursor"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = run(&h, &h.owner, &["agents", "drill", "Not-A-Name"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    // It takes no --file, and needs a name.
    let out = run(&h, &h.owner, &["agents", "--file", "x.toml", "drill", "pi"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = run(&h, &h.owner, &["agents", "drill"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
