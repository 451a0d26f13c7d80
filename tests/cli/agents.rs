//! `macfleet agents ...`: the real binary editing real files and the real
//! hub's document, with the exit codes the README and docs/operations.md give.

use crate::common;

use common::{TestHub, macfleet, text};
use std::os::unix::fs::PermissionsExt;

const DOC: &str = "# owner's notes\r\n[fleet]\r\nMAC_CODING_AGENTS = [\r\n  \"opencode\", # cheap\r\n  \"pi\",\r\n  \"claude\",   # strong\r\n]\r\n[fleet.staging]\r\nMAC_CODING_AGENTS = [\"pi\"]";

#[test]
fn file_edits_preserve_everything_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("hub.toml");
    std::fs::write(&f, DOC).expect("write");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let p = f.to_str().expect("utf-8");

    // Dry run: the diff under "not written", nothing written, exit 1 for a
    // change and 0 for none (as `kubectl diff`).
    let out = macfleet(
        &["agents", "move", "claude", "0", "--file", p, "--dry-run"],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with(&format!("not written: dry run of {p}\n--- a/")),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stdout).contains("+  \"claude\",   # strong"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(&f).expect("read"), DOC);
    let out = macfleet(
        &["agents", "move", "opencode", "0", "--file", p, "--dry-run"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "");

    // The move: the comment travels, CRLF and the missing final newline stay,
    // the other table is untouched, the mode is kept.
    let out = macfleet(&["agents", "move", "claude", "0", "--file", p], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = std::fs::read_to_string(&f).expect("read");
    assert_eq!(
        after,
        DOC.replace(
            "  \"opencode\", # cheap\r\n  \"pi\",\r\n  \"claude\",   # strong\r\n",
            "  \"claude\",   # strong\r\n  \"opencode\", # cheap\r\n  \"pi\",\r\n"
        )
    );
    let mode = std::fs::metadata(&f).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let show = macfleet(&["agents", "show", "--file", p], &[]);
    assert_eq!(text(&show.stdout), "0  claude\n1  opencode\n2  pi\n");

    // Unknown-but-well-formed names warn; bad input exits 4 and loses nothing.
    let out = macfleet(&["agents", "add", "aider", "--file", p], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("warning"),
        "{}",
        text(&out.stderr)
    );
    let before = std::fs::read(&f).expect("read");
    let too_many: String = (0..=macfleet::wire::MAX_AGENTS)
        .map(|i| format!("a{i}"))
        .collect::<Vec<_>>()
        .join(",");
    for bad in [
        vec!["agents", "add", "pi"],
        vec!["agents", "add", "Not-A-Name"],
        vec!["agents", "remove", "nobody"],
        vec!["agents", "set", "pi,pi"],
        vec!["agents", "move", "pi", "99"],
        // More agents than a worker may report (wire::MAX_AGENTS).
        vec!["agents", "set", &too_many],
    ] {
        let mut args = bad.clone();
        args.extend(["--file", p]);
        let out = macfleet(&args, &[]);
        assert_eq!(out.status.code(), Some(4), "{bad:?}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stderr).lines().count(),
            1,
            "one clear line: {}",
            text(&out.stderr)
        );
        assert_eq!(
            std::fs::read(&f).expect("read"),
            before,
            "{bad:?} left the file alone"
        );
    }
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "[fleet]\nMAC_CODING_AGENTS = [\"pi\"\n").expect("write");
    let out = macfleet(
        &[
            "agents",
            "add",
            "claude",
            "--file",
            broken.to_str().expect("utf-8"),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("line "),
        "says where: {}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hub_edits_go_through_if_match() {
    let h = TestHub::start().await;
    let url = h.url();
    let rev0 = h.client(&h.owner).config().await.expect("config").revision;
    let (owner, viewer) = (h.owner.clone(), h.viewer.clone());
    let outs = tokio::task::spawn_blocking({
        let url = url.clone();
        let rev0 = rev0.clone();
        move || {
            let o = [
                ("MAC_HUB_URL", url.as_str()),
                ("MAC_HUB_TOKEN", owner.as_str()),
            ];
            let v = [
                ("MAC_HUB_URL", url.as_str()),
                ("MAC_HUB_TOKEN", viewer.as_str()),
            ];
            (
                macfleet(
                    &["agents", "move", "claude", "0", "--if-revision", &rev0],
                    &o,
                ),
                macfleet(&["agents", "remove", "claude", "--if-revision", &rev0], &o),
                macfleet(&["agents", "add", "pi"], &v),
                macfleet(&["agents", "add", "pi", "--read-only"], &o),
                macfleet(&["agents", "show"], &v),
            )
        }
    })
    .await
    .expect("join");
    let (moved, stale, viewer_write, read_only, show) = outs;
    assert_eq!(moved.status.code(), Some(0), "{}", text(&moved.stderr));
    assert!(
        text(&moved.stdout).starts_with("--- a/hub.toml"),
        "{}",
        text(&moved.stdout)
    );
    assert_eq!(stale.status.code(), Some(3), "{}", text(&stale.stderr));
    assert_eq!(
        viewer_write.status.code(),
        Some(6),
        "{}",
        text(&viewer_write.stderr)
    );
    assert_eq!(text(&viewer_write.stdout), "", "a refusal, on stderr only");
    assert!(
        text(&viewer_write.stderr).contains("not written: not allowed")
            && text(&viewer_write.stderr).contains("--- a/hub.toml"),
        "{}",
        text(&viewer_write.stderr)
    );
    assert_eq!(
        read_only.status.code(),
        Some(6),
        "{}",
        text(&read_only.stderr)
    );
    assert!(
        text(&show.stdout).starts_with("0  claude\n1  opencode\n"),
        "{}",
        text(&show.stdout)
    );
    let hist = h.client(&h.viewer).history().await.expect("history");
    assert_eq!(hist.revisions.len(), 2, "one write, by the owner");
    assert_eq!(hist.revisions[0].by, "alice");
    // The stored document kept every other byte (CRLF, the other table).
    let stored = std::fs::read_to_string(h.config_path()).expect("read");
    assert!(stored.contains("\r\n[other]\r\nMAC_CODING_AGENTS = \"x\"\r\n"));
    assert!(
        stored.contains("  \"claude\",\r\n  \"opencode\", # first\r\n"),
        "{stored:?}"
    );
}

const FLEET: &str = "# the fleet\n[fleet]\nMAC_CODING_AGENTS = [\n  \"opencode\", # first\n  \"claude\",   # strong\n  \"codex\",    # last resort\n  # \"cursor\",  # no seat yet\n]\nretries = 2\n";

/// A worker's heartbeat: on `active`, able to run `caps`.
fn beat(worker: &str, active: &str, caps: &[&str]) -> serde_json::Value {
    crate::common::Beat::new(worker)
        .host("node-1")
        .sent_at("2026-11-29T15:04:05Z")
        .list(&["opencode", "claude", "codex"])
        .only_caps(caps)
        .active(Some(active))
        .json()
}

#[tokio::test(flavor = "multi_thread")]
async fn hub_edits_refuse_unreported_names_and_dry_run_projects() {
    // A long interval keeps both workers healthy however slow the machine.
    let h = TestHub::start_with(FLEET, |o| o.heartbeat_interval_s = 60).await;
    let http = h.http();
    for hb in [
        beat("w-1", "opencode", &["opencode", "claude", "aider"]),
        beat("w-2", "claude", &["claude"]),
    ] {
        let r = http
            .post(h.path("/v1/heartbeats"))
            .bearer_auth(&h.worker)
            .json(&hb)
            .send()
            .await
            .expect("heartbeat");
        assert!(r.status().is_success(), "{}", r.status());
    }
    let (url, owner) = (h.url(), h.owner.clone());
    let run = move |args: &[&str]| {
        let env = [
            ("MAC_HUB_URL", url.as_str()),
            ("MAC_HUB_TOKEN", owner.as_str()),
        ];
        macfleet(args, &env)
    };
    let stored = || std::fs::read_to_string(h.config_path()).expect("read");
    let outs = tokio::task::spawn_blocking(move || {
        let dry = run(&["agents", "move", "claude", "0", "--dry-run"]);
        let dry_same = run(&["agents", "move", "opencode", "0", "--dry-run"]);
        let typo = run(&["agents", "set", "opencode,pi,bogus"]);
        let seen = run(&["agents", "add", "aider", "--dry-run"]);
        let ro = run(&["agents", "move", "claude", "0", "--read-only"]);
        (dry, dry_same, typo, seen, ro)
    })
    .await
    .expect("join");
    let (dry, dry_same, typo, seen, ro) = outs;

    // --dry-run: the diff under "not written", the projection, exit 1.
    assert_eq!(dry.status.code(), Some(1), "{}", text(&dry.stderr));
    let out = text(&dry.stdout);
    assert!(
        out.starts_with("not written: dry run against revision "),
        "{out}"
    );
    assert!(out.contains("\n--- a/hub.toml\n"), "{out}");
    assert!(out.contains("projection over 2 healthy workers"), "{out}");
    // From the hub's plan over its whole fleet (POST /v1/plan, what the
    // TUI's plan line says), not only the workers read here.
    assert!(
        out.contains("\nthe hub's plan over its 2 workers against revision "),
        "{out}"
    );
    assert!(
        out.contains("\n1 of 2 healthy workers change rung\n"),
        "{out}"
    );
    let metrics = http
        .get(h.path("/metrics"))
        .bearer_auth(&h.owner)
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics");
    assert!(
        metrics.contains("macfleet_hub_requests_total{route=\"/v1/plan\",status=\"200\"} 2"),
        "the two dry runs with a change asked the hub: {}",
        metrics
            .lines()
            .filter(|l| l.contains("/v1/plan"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    // claude first: both workers can run it and would stand on it.
    let claude = out
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some("claude"))
        .expect("a claude row");
    assert_eq!(
        claude.split_whitespace().collect::<Vec<_>>(),
        ["0", "1", "claude", "2", "1", "2"],
        "{out}"
    );
    assert_eq!(
        dry_same.status.code(),
        Some(0),
        "{}",
        text(&dry_same.stderr)
    );
    assert!(
        text(&dry_same.stdout).is_empty(),
        "{}",
        text(&dry_same.stdout)
    );
    assert_eq!(stored(), FLEET, "dry runs write nothing");

    // A name nobody reported and no known agent: refused, nothing lost;
    // the reason and the diff on stderr, nothing on stdout (issue 27).
    assert_eq!(typo.status.code(), Some(4), "{}", text(&typo.stderr));
    assert_eq!(text(&typo.stdout), "", "a refusal prints nothing on stdout");
    let out = text(&typo.stderr);
    assert!(
        out.contains("not written: \"bogus\" is not a known agent"),
        "{out}"
    );
    assert!(out.contains("+  \"bogus\""), "{out}");
    assert!(
        text(&typo.stderr).contains("--force"),
        "{}",
        text(&typo.stderr)
    );
    assert_eq!(stored(), FLEET);
    // A name a worker reported is no typo (and the projection says so).
    assert_eq!(seen.status.code(), Some(1), "{}", text(&seen.stderr));
    assert!(
        !text(&seen.stdout).contains("no worker has reported"),
        "{}",
        text(&seen.stdout)
    );
    // Read-only: the diff, said not written, on stderr.
    assert_eq!(ro.status.code(), Some(6), "{}", text(&ro.stderr));
    assert_eq!(text(&ro.stdout), "", "a refusal prints nothing on stdout");
    assert!(
        text(&ro.stderr).starts_with("not written: read-only")
            && text(&ro.stderr).contains("--- a/hub.toml"),
        "{}",
        text(&ro.stderr)
    );
    assert_eq!(stored(), FLEET);

    // --force writes it; set keeps each kept agent's comment and brings
    // cursor back from its commented-out line.
    let (url, owner) = (h.url(), h.owner.clone());
    let (forced, aider) = tokio::task::spawn_blocking(move || {
        let env = [
            ("MAC_HUB_URL", url.as_str()),
            ("MAC_HUB_TOKEN", owner.as_str()),
        ];
        (
            macfleet(
                &["agents", "set", "claude,opencode,cursor,bogus", "--force"],
                &env,
            ),
            // A name a worker reported goes in without --force.
            macfleet(&["agents", "add", "aider"], &env),
        )
    })
    .await
    .expect("join");
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced.stderr));
    assert!(
        text(&forced.stdout).starts_with("--- a/hub.toml"),
        "{}",
        text(&forced.stdout)
    );
    assert!(
        text(&forced.stderr).contains("set removes codex"),
        "{}",
        text(&forced.stderr)
    );
    assert_eq!(aider.status.code(), Some(0), "{}", text(&aider.stderr));
    assert_eq!(
        stored(),
        "# the fleet\n[fleet]\nMAC_CODING_AGENTS = [\n  \"claude\",   # strong\n  \"opencode\", # first\n  \"cursor\",   # no seat yet\n  \"bogus\",\n  \"aider\",\n]\nretries = 2\n"
    );
}

/// Two actors: a person broke the hub's file by hand (its list still reads,
/// the file does not validate), then an owner runs `agents move`. The
/// command refuses with a sentence naming the hub's file and where, and
/// the hand edit is not written over unseen.
#[tokio::test(flavor = "multi_thread")]
async fn an_edit_onto_a_hub_file_that_does_not_validate_is_refused_with_why() {
    let h = TestHub::start().await;
    let broken = "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"claude\", \"claude\"]\n";
    std::fs::write(h.config_path(), broken).expect("a hand edit");
    let c = h.client(&h.owner);
    common::eventually(200, || async {
        c.config().await.ok().and_then(|d| d.invalid).map(|_| ())
    })
    .await
    .expect("the hub serves the broken file");
    let (url, owner) = (h.url(), h.owner.clone());
    let out = tokio::task::spawn_blocking(move || {
        macfleet(
            &["agents", "move", "opencode", "1"],
            &[
                ("MAC_HUB_URL", url.as_str()),
                ("MAC_HUB_TOKEN", owner.as_str()),
            ],
        )
    })
    .await
    .expect("join");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the hub's file does not validate (line 2, column"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("file"),
        broken,
        "nothing written over it"
    );
    // `get agents` says the list workers keep, not the broken file's.
    let kept = c
        .health_report()
        .await
        .expect("health")
        .config
        .expect("config");
    let (url, viewer) = (h.url(), h.viewer.clone());
    let got = tokio::task::spawn_blocking(move || {
        macfleet(
            &["get", "agents"],
            &[
                ("MAC_HUB_URL", url.as_str()),
                ("MAC_HUB_TOKEN", viewer.as_str()),
            ],
        )
    })
    .await
    .expect("join");
    let shown = text(&got.stdout);
    let want: String = kept
        .agents
        .iter()
        .enumerate()
        .map(|(i, a)| format!("{i}  {a}\n"))
        .collect::<String>();
    assert_eq!(shown, want, "{}", text(&got.stderr));
    assert!(
        text(&got.stderr).contains(&format!("revision {}\n", kept.projected_revision)),
        "{}",
        text(&got.stderr)
    );
    assert!(
        text(&got.stderr).starts_with("warning: the hub's file does not validate (line 2"),
        "{}",
        text(&got.stderr)
    );
}

/// A write the hub refuses (4xx): its reason and the diff on stderr,
/// nothing on stdout (issue 27). A hand edit leaves the hub's file a few
/// bytes under the hub's 1 MiB bound; `agents add cursor` makes a document
/// over it, which the hub answers 413 (exit 4, as validation).
#[tokio::test(flavor = "multi_thread")]
async fn a_write_the_hub_refuses_prints_its_reason_and_diff_on_stderr_only() {
    let h = TestHub::start().await;
    let head = "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n# ";
    let pad = macfleet::hub::disk::MAX_BYTES - head.len() - 8;
    let big = format!("{head}{}\n", "x".repeat(pad));
    std::fs::write(h.config_path(), &big).expect("a hand edit");
    let c = h.client(&h.owner);
    common::eventually(200, || async {
        c.config()
            .await
            .ok()
            .filter(|d| d.text.len() == big.len() && d.invalid.is_none())
            .map(|_| ())
    })
    .await
    .expect("the hub serves the hand edit");
    let (url, owner) = (h.url(), h.owner.clone());
    let out = tokio::task::spawn_blocking(move || {
        macfleet(
            &["agents", "add", "cursor"],
            &[
                ("MAC_HUB_URL", url.as_str()),
                ("MAC_HUB_TOKEN", owner.as_str()),
            ],
        )
    })
    .await
    .expect("join");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert_eq!(text(&out.stdout), "", "nothing on stdout: {err}");
    assert!(err.starts_with("not written: "), "{err}");
    assert!(
        err.contains("+MAC_CODING_AGENTS = [\"opencode\", \"claude\", \"cursor\"]"),
        "the diff: {err}"
    );
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("file"),
        big,
        "nothing written"
    );
}

/// Two actors: the hub's `hub.toml` is made a symlink to a file outside
/// its directory (the hub does not follow it) after the hub last read it
/// (its watcher off, so the owner's `agents move` reads the document
/// still in force), then the owner moves an agent. The hub refuses the
/// `PUT` with 503 `config_unavailable` (nothing changed); the command says
/// `not written: …` with the code and exits 1, never `hub unreachable`
/// with exit 5 (issue 29, fresh-eyes F4: 8d205fc's client fix, end to
/// end). Nothing is written through the link.
#[tokio::test(flavor = "multi_thread")]
async fn a_move_onto_a_config_the_hub_will_not_follow_is_not_written_and_exits_1() {
    let h = TestHub::start_with(crate::common::CONFIG, |o| o.watch_config = false).await;
    let outside = tempfile::tempdir().expect("tempdir");
    let target = outside.path().join("elsewhere.toml");
    let target_text = "[fleet]\nMAC_CODING_AGENTS = [\"pi\"]\n";
    std::fs::write(&target, target_text).expect("target");
    let config = h.config_path();
    std::fs::remove_file(&config).expect("rm");
    std::os::unix::fs::symlink(&target, &config).expect("symlink");
    let (url, owner) = (h.url(), h.owner.clone());
    let out = tokio::task::spawn_blocking(move || {
        macfleet(
            &["agents", "move", "claude", "0"],
            &[
                ("MAC_HUB_URL", url.as_str()),
                ("MAC_HUB_TOKEN", owner.as_str()),
            ],
        )
    })
    .await
    .expect("join");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with("not written: ") && err.contains("config_unavailable"),
        "{err}"
    );
    assert!(!err.contains("unreachable"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&target).expect("target"),
        target_text,
        "nothing written through the link"
    );
    assert!(
        std::fs::symlink_metadata(&config)
            .expect("link")
            .file_type()
            .is_symlink()
    );
}

/// Every refusal says `not written: <why>` on stderr, with the diff it
/// would have made where there is one, and nothing on stdout (issue 27,
/// the 11:20 audit): `--if-revision` with a revision the hub has left
/// (exit 3, the diff onto the hub's document now), and an edit that does
/// not hold, `set opencode,opencode` (exit 4, no document to diff),
/// through the hub and on a file. Two actors: another write moves the hub
/// on between the owner's look and the owner's edit.
#[tokio::test(flavor = "multi_thread")]
async fn every_refusal_says_not_written_with_its_reason_and_diff_on_stderr() {
    let h = TestHub::start().await;
    let old = h.client(&h.owner).config().await.expect("config").revision;
    // Bob writes first: the hub moves on from `old`.
    let bob = h.client(&h.owner2);
    let who = bob.whoami().await.expect("whoami");
    let w = macfleet::client::Writer::new(bob.clone(), &who).expect("an owner");
    let cfg = bob.config().await.expect("config");
    let theirs = cfg.text.replace("[other]", "# bob was here\r\n[other]");
    let now = w
        .put_config(&theirs, &cfg.revision)
        .await
        .expect("bob's write")
        .revision;
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("hub.toml");
    std::fs::write(&f, DOC).expect("write");
    let (url, owner) = (h.url(), h.owner.clone());
    let path = f.to_str().expect("utf-8").to_string();
    let (stale, twice, twice_file) = tokio::task::spawn_blocking({
        let old = old.clone();
        move || {
            let env = [
                ("MAC_HUB_URL", url.as_str()),
                ("MAC_HUB_TOKEN", owner.as_str()),
            ];
            (
                macfleet(
                    &["agents", "move", "claude", "0", "--if-revision", &old],
                    &env,
                ),
                macfleet(&["agents", "set", "opencode,opencode"], &env),
                macfleet(
                    &["agents", "set", "opencode,opencode", "--file", &path],
                    &[],
                ),
            )
        }
    })
    .await
    .expect("join");
    let err = text(&stale.stderr);
    assert_eq!(stale.status.code(), Some(3), "{err}");
    assert_eq!(text(&stale.stdout), "", "nothing on stdout: {err}");
    assert!(
        err.starts_with(&format!(
            "not written: the edit is meant for revision {old}, and the hub is on {now}"
        )),
        "{err}"
    );
    assert!(
        err.contains("--- a/hub.toml") && err.contains("+  \"claude\","),
        "the diff onto the hub's document now: {err}"
    );
    for (out, what) in [
        (&twice, "hub.toml"),
        (&twice_file, f.to_str().expect("utf-8")),
    ] {
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{err}");
        assert_eq!(text(&out.stdout), "", "nothing on stdout: {err}");
        assert!(
            err.starts_with(&format!("not written: {what}: ")) && err.contains("twice"),
            "{err}"
        );
    }
    let after = h.client(&h.owner).config().await.expect("config");
    assert_eq!(after.revision, now, "nothing written");
    assert_eq!(std::fs::read_to_string(&f).expect("read"), DOC);
}
