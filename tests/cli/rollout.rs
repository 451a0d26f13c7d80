//! The staged rollout from the command line (issue 33): the real binary
//! starts one with `--cohort`, follows it with `agents rollout status`
//! (exit 0 baking or promoted, 1 aborted, 7 halted), promotes or aborts it,
//! and says it under `agents show` and `--dry-run`; a write while one
//! bakes exits 3 with one sentence in words. Against a real hub, and a
//! real simulated fleet (`macfleet sim`) where the guard matters.

use crate::common;

use std::time::{Duration, Instant};

use common::{Kill, TestHub, heartbeat, macfleet, text};
use serde_json::Value;

const FLEET: &str = "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n";

/// The real binary as `token`'s holder against `h`, off the runtime.
async fn run(h: &TestHub, token: &str, args: &[&str]) -> std::process::Output {
    let (url, token) = (h.url(), token.to_owned());
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        macfleet(
            &args,
            &[
                ("MAC_HUB_URL", url.as_str()),
                ("MAC_HUB_TOKEN", token.as_str()),
            ],
        )
    })
    .await
    .expect("join")
}

/// Heartbeats from `n` workers on `revision`.
async fn beat_all(h: &TestHub, n: usize, revision: &str) {
    for i in 0..n {
        let r = h
            .post_heartbeat(&heartbeat(
                &format!("w-{i}"),
                Some(revision),
                serde_json::json!([]),
            ))
            .await;
        assert_eq!(r.status().as_u16(), 200);
    }
}

async fn revision(h: &TestHub) -> String {
    h.client(&h.owner).config().await.expect("config").revision
}

fn code(out: &std::process::Output) -> Option<i32> {
    out.status.code()
}

/// Start, status, the refusals while it bakes, abort: each exit code the
/// README gives, the file on the accepted list throughout.
#[tokio::test(flavor = "multi_thread")]
async fn a_rollout_started_followed_refused_and_aborted_from_the_cli() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let accepted = revision(&h).await;
    beat_all(&h, 10, &accepted).await;
    let none = run(&h, &h.viewer, &["agents", "rollout", "status"]).await;
    assert_eq!(code(&none), Some(1), "{}", text(&none.stderr));
    assert!(text(&none.stderr).contains("no rollout has run"));

    let started = run(
        &h,
        &h.owner,
        &[
            "agents",
            "move",
            "claude",
            "0",
            "--cohort",
            "3",
            "--bake",
            "1h",
            "--promote",
            "manual",
        ],
    )
    .await;
    let err = text(&started.stderr);
    assert_eq!(code(&started), Some(0), "{err}");
    assert!(
        text(&started.stdout).starts_with("--- a/hub.toml"),
        "{}",
        text(&started.stdout)
    );
    // The cohort is counted at the start (fresh eyes R3), and a count is
    // said once, plainly (issue 33: not `3 of the workers (3 now)`).
    assert!(
        err.contains(" started: claude,opencode to a cohort of 3 workers, a 1h bake"),
        "{err}"
    );
    assert!(!err.contains("of the workers"), "{err}");
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        FLEET
    );
    let view = h
        .client(&h.viewer)
        .rollout()
        .await
        .expect("rollout")
        .expect("one");
    let id = view.id.clone();

    let status = run(&h, &h.viewer, &["agents", "rollout"]).await;
    let out = text(&status.stdout);
    assert_eq!(code(&status), Some(0), "{}", text(&status.stderr));
    assert!(
        out.starts_with(&format!("rollout {id} baking: claude,opencode")),
        "{out}"
    );
    // A count's share is where its hash positions fell: its figure is not
    // asserted, only that it is said once, as the share kept.
    assert!(
        out.contains("cohort 3 (a ")
            && out.contains(
                "% share, kept for workers who join): 3 of 10 workers, 0 on the candidate\n"
            ),
        "{out}"
    );
    assert!(!out.contains("of the workers"), "{out}");
    assert!(out.contains("guard, rest:   "), "{out}");
    assert!(
        out.contains("left of a 1h bake, then promote manual"),
        "{out}"
    );

    // show and a dry run say it bakes (fresh eyes R5).
    let show = run(&h, &h.viewer, &["agents", "show"]).await;
    assert_eq!(code(&show), Some(0));
    assert_eq!(text(&show.stdout), "0  opencode\n1  claude\n");
    let shown = text(&show.stderr);
    assert!(
        shown.contains(&format!(
            "rollout {id} is baking: a cohort of 3 workers is told claude,opencode"
        )),
        "{shown}"
    );
    assert!(!shown.contains("of the workers"), "{shown}");
    assert_eq!(shown.matches("3 workers").count(), 1, "said once: {shown}");
    let dry = run(&h, &h.owner, &["agents", "remove", "claude", "--dry-run"]).await;
    assert_eq!(code(&dry), Some(1), "{}", text(&dry.stderr));
    assert!(
        text(&dry.stdout).contains(&format!("rollout {id} is baking")),
        "{}",
        text(&dry.stdout)
    );

    // A plain write: exit 3, the sentence once, in words, nothing on
    // stdout, nothing written.
    let put = run(&h, &h.owner, &["agents", "remove", "claude"]).await;
    let err = text(&put.stderr);
    assert_eq!(code(&put), Some(3), "{err}");
    assert_eq!(text(&put.stdout), "");
    assert!(
        err.starts_with(&format!(
            "not written: conflict: rollout {id} (a cohort of 3 workers, "
        )),
        "{err}"
    );
    assert!(
        err.contains("macfleet agents rollout promote (or abort)"),
        "{err}"
    );
    assert_eq!(err.matches("is baking").count(), 1, "said once: {err}");
    assert!(!err.contains("/v1/"), "no API paths: {err}");
    let again = run(
        &h,
        &h.owner,
        &["agents", "remove", "claude", "--cohort", "10%"],
    )
    .await;
    assert_eq!(code(&again), Some(3), "{}", text(&again.stderr));
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        FLEET
    );

    // A viewer may not abort; the owner does.
    let viewer = run(&h, &h.viewer, &["agents", "rollout", "abort"]).await;
    assert_eq!(code(&viewer), Some(6), "{}", text(&viewer.stderr));
    let abort = run(&h, &h.owner, &["agents", "rollout", "abort"]).await;
    assert_eq!(code(&abort), Some(0), "{}", text(&abort.stderr));
    assert!(text(&abort.stdout).starts_with(&format!("rollout {id} aborted")));
    let status = run(&h, &h.viewer, &["agents", "rollout", "status"]).await;
    assert_eq!(code(&status), Some(1), "{}", text(&status.stderr));
    let out = text(&status.stdout);
    assert!(out.contains("reason: aborted by alice"), "{out}");
    // How long it baked, not the bake it was asked (seconds here).
    assert!(
        baked_for(&out, "aborted", "1h").is_some_and(|b| b.ends_with('s') && !b.contains('m')),
        "{out}"
    );
    assert!(!out.contains("at most"), "{out}");
    let promote = run(&h, &h.owner, &["agents", "rollout", "promote"]).await;
    let err = text(&promote.stderr);
    assert_eq!(code(&promote), Some(3), "{err}");
    assert!(
        err.contains(&format!("rollout {id} is not baking: it is aborted")),
        "{err}"
    );
    assert!(!err.contains("/v1/"), "{err}");
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        FLEET
    );
}

/// `halted after 14s of 10m, promote auto` in `status`: the `14s`.
fn baked_for<'a>(out: &'a str, state: &str, bake: &str) -> Option<&'a str> {
    let head = format!("{state} after ");
    let line = out.lines().find(|l| l.starts_with(&head))?;
    line[head.len()..]
        .split_once(&format!(" of {bake}, promote "))
        .map(|(b, _)| b)
}

/// One worker a host; codex is missing on nine hosts in ten.
const CODEX_SCARCE: &str =
    "name = \"codex-scarce\"\nworkers_per_host = 1\n[hosts.missing_binary]\ncodex = 0.9\n";

/// `agents rollout status` until `done` holds of its output, at most
/// `within`.
async fn status_until(
    h: &TestHub,
    within: Duration,
    done: impl Fn(&std::process::Output) -> bool,
) -> std::process::Output {
    let began = Instant::now();
    loop {
        let out = run(h, &h.viewer, &["agents", "rollout", "status"]).await;
        if done(&out) || began.elapsed() > within {
            return out;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A simulated fleet of 40 (`macfleet sim`): a bad order (codex alone) to
/// a quarter is halted by the guard within a minute and `status` exits 7;
/// then a good one to a quarter for 10 s promotes itself and `status`
/// exits 0, the file on it.
#[tokio::test(flavor = "multi_thread")]
async fn the_guard_halts_a_bad_order_exit_7_and_a_good_one_promotes_exit_0() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let scenario = h.dir.path().join("codex-scarce.toml");
    std::fs::write(&scenario, CODEX_SCARCE).expect("scenario");
    let _sim = Kill(
        std::process::Command::new(env!("CARGO_BIN_EXE_macfleet"))
            .args(["sim", "--workers", "40", "--duration", "170", "--scenario"])
            .arg(&scenario)
            .env("MAC_HUB_URL", h.url())
            .env("MAC_HUB_TOKEN", &h.worker)
            .env("MACFLEET_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("macfleet sim"),
    );
    let accepted = revision(&h).await;
    let viewer = h.client(&h.viewer);
    common::eventually(600, || async {
        let ws = viewer.workers(None).await.ok()?.workers;
        (ws.len() == 40 && ws.iter().all(|w| w.in_sync)).then_some(())
    })
    .await
    .expect("the fleet is in and in sync");

    let began = Instant::now();
    let bad = run(&h, &h.owner, &["agents", "set", "codex", "--cohort", "25%"]).await;
    assert_eq!(code(&bad), Some(0), "{}", text(&bad.stderr));
    let halted = status_until(&h, Duration::from_secs(70), |o| code(o) == Some(7)).await;
    let out = text(&halted.stdout);
    assert_eq!(code(&halted), Some(7), "{out}{}", text(&halted.stderr));
    assert!(
        began.elapsed() < Duration::from_secs(70),
        "{:?}",
        began.elapsed()
    );
    assert!(out.contains(" halted: codex"), "{out}");
    // A share says its workers once (not `25% (25% of the workers)`), and
    // a halt how long it baked (under the 70 s waited, not `10m at most`).
    assert!(
        out.contains("cohort 25%: ") && out.contains(" of 40 workers, "),
        "{out}"
    );
    assert!(!out.contains("of the workers"), "{out}");
    let baked = baked_for(&out, "halted", "10m").unwrap_or_default();
    assert!(
        baked.ends_with('s') && (!baked.contains('m') || baked.starts_with("1m ")),
        "{out}"
    );
    assert!(
        out.contains("reason: halted by the guard: no route 0% → "),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        FLEET
    );

    let good = run(
        &h,
        &h.owner,
        &[
            "agents", "move", "claude", "0", "--cohort", "25%", "--bake", "10s",
        ],
    )
    .await;
    assert_eq!(code(&good), Some(0), "{}", text(&good.stderr));
    let promoted = status_until(&h, Duration::from_secs(60), |o| {
        text(&o.stdout).contains(" promoted: ")
    })
    .await;
    let out = text(&promoted.stdout);
    assert_eq!(code(&promoted), Some(0), "{out}{}", text(&promoted.stderr));
    assert!(out.contains(" promoted: claude,opencode"), "{out}");
    let now = h.client(&h.owner).config().await.expect("config");
    assert_ne!(now.revision, accepted);
    assert!(
        now.text.contains("\"claude\", \"opencode\""),
        "{}",
        now.text
    );
    let v: Value = serde_json::to_value(
        h.client(&h.viewer)
            .rollout()
            .await
            .expect("rollout")
            .expect("one"),
    )
    .expect("json");
    assert_eq!(v["state"], "promoted");
    // The fleet follows: every worker of the simulated fleet, cohort and
    // rest, reports the promoted revision (at its next turn boundary).
    let on_new = common::eventually(600, || async {
        let ws = viewer.workers(None).await.ok()?.workers;
        let on = ws
            .iter()
            .filter(|w| w.config_revision.as_deref() == Some(now.revision.as_str()) && w.in_sync)
            .count();
        (ws.len() == 40 && on == 40).then_some(on)
    })
    .await;
    assert_eq!(on_new, Some(40), "the whole fleet on {}", now.revision);
}

/// `agents move … --cohort` through the dropping proxy of
/// tests/cli/lost_answer.rs: the first answer to `POST /v1/rollouts` is
/// read from the hub (so the rollout started) and dropped.
async fn start_through_a_dropping_proxy(
    h: &TestHub,
    gone_after_drop: bool,
) -> (std::process::Output, bool) {
    let (addr, state) = crate::lost_answer::proxy_dropping(
        crate::lost_answer::addr_of(&h.url()),
        gone_after_drop,
        b"POST /v1/rollouts",
    )
    .await;
    let (via, token) = (format!("http://{addr}"), h.owner.clone());
    let out = tokio::task::spawn_blocking(move || {
        macfleet(
            &[
                "agents", "move", "claude", "0", "--cohort", "3", "--bake", "1h",
            ],
            &[("MAC_HUB_URL", &via), ("MAC_HUB_TOKEN", &token)],
        )
    })
    .await
    .expect("join");
    (out, state.dropped.load(std::sync::atomic::Ordering::SeqCst))
}

/// A lost answer on starting a rollout is checked by its Idempotency-Key
/// as a write's is: sent again, the hub answers with the rollout the key
/// started (one rollout, not two), exit 0.
#[tokio::test(flavor = "multi_thread")]
async fn a_rollout_whose_start_answer_is_lost_is_checked_and_found_baking() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let accepted = revision(&h).await;
    beat_all(&h, 10, &accepted).await;
    let (out, dropped) = start_through_a_dropping_proxy(&h, false).await;
    let err = text(&out.stderr);
    assert!(dropped, "the answer was dropped");
    assert_eq!(code(&out), Some(0), "{err}");
    let view = h
        .client(&h.viewer)
        .rollout()
        .await
        .expect("rollout")
        .expect("one");
    assert!(
        err.contains("may not have been started: the answer was lost"),
        "{err}"
    );
    assert!(
        err.contains(&format!("checked: rollout {} is baking", view.id)),
        "{err}"
    );
    assert!(!err.contains("not checked"), "{err}");
    assert!(
        text(&out.stdout).starts_with("--- a/hub.toml"),
        "{}",
        text(&out.stdout)
    );
    let (_, steps) = h
        .client(&h.viewer)
        .history_and_rollouts()
        .await
        .expect("history");
    let starts = steps
        .iter()
        .filter(|s| s.step == macfleet::rollout::StepKind::Started)
        .count();
    assert_eq!(starts, 1, "started once: {steps:?}");
}

/// With the hub gone after the drop it cannot be checked: exit 5, the
/// edit it sent on stderr, never said `not written` or `started`.
#[tokio::test(flavor = "multi_thread")]
async fn a_rollout_whose_start_answer_is_lost_with_the_hub_gone_exits_5() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let accepted = revision(&h).await;
    beat_all(&h, 10, &accepted).await;
    let (out, dropped) = start_through_a_dropping_proxy(&h, true).await;
    let err = text(&out.stderr);
    assert!(dropped, "the answer was dropped");
    assert_eq!(code(&out), Some(5), "{err}");
    assert!(
        err.contains("may not have been started: the answer was lost")
            && err.contains("may have been started (not checked)")
            && err.contains("macfleet agents rollout status"),
        "{err}"
    );
    assert!(!err.contains("not written"), "{err}");
    assert_eq!(text(&out.stdout), "", "{}", text(&out.stdout));
}
