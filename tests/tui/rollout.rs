//! The staged rollout in the TUI (issue 33), the real binary in a pty
//! against a real hub and a simulated fleet (`macfleet::sim`, what `macfleet
//! sim` runs): `C` on the diff sends the document to a cohort first with
//! the defaults (10%, 10m) the prompt fills in, the Ladder shows the
//! rollout from the hub's figures, the cohort on the candidate is not
//! "behind", and `P` promotes it; `A` asks, then aborts one another owner
//! started, and a plain write meanwhile is refused (409) with the edit
//! kept and the rollout named; a bad candidate halted by the guard is red
//! with its reason, `ROLLOUT HALTED` is the word, History lists its steps.

use crate::common;
use crate::pty;

use std::sync::Arc;
use std::time::Duration;

use common::{TestHub, eventually};
use macfleet::sim::{Scenario, SimOptions, SimStats};
use pty::Pty;
use serde_json::Value;

const FLEET: &str = "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n";
const START: Duration = Duration::from_secs(30);
const SOON: Duration = Duration::from_secs(15);

/// One worker a host, every agent on every host, no turns: a candidate
/// is taken at the next heartbeat.
fn calm() -> Scenario {
    Scenario::parse("calm", "name = \"calm\"\nworkers_per_host = 1\n").expect("scenario")
}

/// codex is missing on nine hosts in ten: a list of codex alone leaves
/// most workers with no route.
fn codex_scarce() -> Scenario {
    Scenario::parse(
        "codex-scarce",
        "name = \"codex-scarce\"\nworkers_per_host = 1\n[hosts.missing_binary]\ncodex = 0.9\n",
    )
    .expect("scenario")
}

/// The simulated fleet on `h` until the guard drops (a minute at most).
struct Fleet(Option<tokio::sync::oneshot::Sender<()>>);

impl Drop for Fleet {
    fn drop(&mut self) {
        if let Some(stop) = self.0.take() {
            let _ = stop.send(());
        }
    }
}

async fn fleet(h: &TestHub, n: usize, scenario: Scenario) -> Fleet {
    let mut opts = SimOptions::new(n, scenario);
    opts.duration = Some(Duration::from_secs(180));
    opts.turns = None;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(macfleet::sim::run(
        h.client(&h.worker),
        opts,
        Arc::new(SimStats::default()),
        async {
            let _ = stopped.await;
        },
    ));
    let viewer = h.client(&h.viewer);
    eventually(600, || async {
        let p = viewer.workers(None).await.ok()?;
        (p.workers.len() == n && p.workers.iter().all(|w| w.in_sync)).then_some(())
    })
    .await
    .expect("the fleet is in and in sync");
    Fleet(Some(stop))
}

async fn current(h: &TestHub) -> Value {
    h.http()
        .get(h.path("/v1/rollouts/current"))
        .bearer_auth(&h.viewer)
        .send()
        .await
        .expect("get rollout")
        .json()
        .await
        .unwrap_or(Value::Null)
}

/// Another owner (alice, by HTTP) starts a rollout of `agents`.
async fn start_by_hand(h: &TestHub, query: &str, agents: &[&str]) -> Value {
    let base = h.client(&h.owner).config().await.expect("config").revision;
    let list: Vec<String> = agents.iter().map(|a| format!("\"{a}\"")).collect();
    let body = format!("[fleet]\nMAC_CODING_AGENTS = [{}]\n", list.join(", "));
    let r = h
        .http()
        .post(h.path(&format!("/v1/rollouts?{query}")))
        .bearer_auth(&h.owner)
        .header("content-type", "application/toml")
        .header("if-match", format!("\"{base}\""))
        .body(body)
        .send()
        .await
        .expect("post rollout");
    assert_eq!(r.status().as_u16(), 201);
    r.json().await.expect("rollout")
}

/// An owner's session on the Ladder of `url`.
fn owner_on_ladder(url: &str, token: &str) -> Pty {
    let mut t = Pty::spawn(&["--hub", url], &[("MAC_HUB_TOKEN", token)]);
    // Wide enough for the fleet line's last figure and the rollout's.
    t.resize(140, 40);
    t.wait_for("OWNER", START);
    t.wait_for("live", START);
    t.send("1");
    t.wait_for("claude", SOON);
    // The document comes with the first config fetch, after the first page.
    std::thread::sleep(Duration::from_millis(500));
    t
}

/// The row of the screen holding `what`, and its first column.
fn find(t: &Pty, what: &str) -> Option<(u16, u16)> {
    let p = t.parser.lock().expect("parser");
    let screen = p.screen();
    let (rows, cols) = screen.size();
    let (rows, cols) = (rows.get(), cols.get());
    for r in 0..rows {
        let row = screen.contents_between(r, 0, r, cols);
        if let Some(i) = row.find(what) {
            return Some((r, row[..i].chars().count() as u16));
        }
    }
    None
}

/// `3` of the convergence line's `3/3 healthy cohort workers on …`.
fn cohort_on(screen: &str) -> Option<u64> {
    let line = screen
        .lines()
        .find(|l| l.contains(" healthy cohort workers on "))?;
    line.trim().split('/').next()?.parse().ok()
}

fn fg(t: &Pty, at: (u16, u16)) -> vt100::Color {
    let p = t.parser.lock().expect("parser");
    p.screen()
        .cell(at.0, at.1)
        .map_or(vt100::Color::Default, |c| c.fgcolor())
}

/// `C` after the review: the prompt has 10% and 10m filled in, Enter
/// starts the rollout with them (the file keeps the accepted document),
/// the Ladder shows it from the hub's figures while the fleet line does
/// not count the cohort on the candidate as behind; the footer offers
/// `P`, and `P`, `y` promotes it: the file holds the candidate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c_with_its_defaults_starts_a_rollout_the_ladder_shows_and_p_promotes() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let _fleet = fleet(&h, 40, calm()).await;
    let (url, owner) = (h.url(), h.owner.clone());
    let mut t = tokio::task::spawn_blocking(move || {
        let mut t = owner_on_ladder(&url, &owner);
        let s = t.screen();
        assert!(!s.contains("P promote"), "nothing bakes: no P\n{s}");
        // The cursor opens on opencode (rank 0): down one rank.
        t.send("J");
        t.wait_for("EDIT PENDING", SOON);
        t.send("w");
        t.wait_for("C cohort first", SOON);
        t.send("C");
        let s = t.wait_for("to a cohort first: cohort", SOON);
        assert!(s.contains(" 10% ") && s.contains(" 10m "), "{s}");
        t.send("\r");
        t.wait_for("started (10% for 10m): the cohort is told", SOON);
        t
    })
    .await
    .expect("pty");
    let v = current(&h).await;
    assert_eq!(v["state"], "baking", "{v}");
    assert_eq!(v["cohort"], "10%");
    assert_eq!(v["bake_s"], 600);
    assert_eq!(v["agents"], serde_json::json!(["claude", "opencode"]));
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        FLEET,
        "the file keeps the accepted document while it bakes"
    );
    let t2 = tokio::task::spawn_blocking(move || {
        let s = t.wait_until("the rollout line", SOON, |s| {
            s.contains("rollout ") && s.contains(" of 40 (10%)") && s.contains("left")
        });
        assert!(s.contains("cohort: no route 0"), "{s}");
        // The convergence line follows the cohort (its size is the hash's).
        t.wait_until("the cohort's convergence line", SOON, |s| {
            cohort_on(s).is_some() && s.contains(" behind (rollout")
        });
        // The footer, once the status line's message has gone.
        t.wait_for("P promote · A abort", SOON);
        t.send("P");
        t.wait_for("every worker gets its list?", SOON);
        t.send("y");
        t.wait_for("promoted", SOON);
        t
    })
    .await
    .expect("pty");
    let v = current(&h).await;
    assert_eq!(v["state"], "promoted", "{v}");
    let disk = std::fs::read_to_string(h.config_path()).expect("read");
    assert!(
        disk.contains("[\"claude\", \"opencode\"]"),
        "the candidate written on promotion:\n{disk}"
    );
    tokio::task::spawn_blocking(move || {
        let mut t = t2;
        // Once promoted the keys go from the footer.
        t.wait_until("P gone", SOON, |s| !s.contains("P promote"));
        t.send("q");
        assert!(t.wait_exit(SOON).success());
    })
    .await
    .expect("pty");
}

/// Another owner's rollout bakes (to a cohort of 5): once the cohort runs
/// the candidate the fleet line counts none of it behind; the owner's
/// plain write is refused
/// (409), the edit stays pending and the screen names the rollout; `A`
/// asks (any other key keeps it baking), `A` `y` aborts it, and the kept
/// edit then writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_while_it_bakes_is_kept_and_a_aborts_after_asking() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let _fleet = fleet(&h, 20, calm()).await;
    // A count: exactly 5 of the 20 are in the cohort.
    let started = start_by_hand(&h, "cohort=5&bake=10m", &["claude", "opencode"]).await;
    let id = started["id"].as_str().expect("id").to_string();
    let short: String = id.chars().take(4).collect();
    let (url, owner) = (h.url(), h.owner.clone());
    let t = tokio::task::spawn_blocking(move || {
        let mut t = owner_on_ladder(&url, &owner);
        t.wait_for(&format!("rollout {short}"), SOON);
        // Once the cohort runs the candidate (the hub's figures), the fleet
        // line does not count it behind, and names the rollout.
        let s = t.wait_until("the cohort on the candidate, not behind", SOON, |s| {
            s.contains(" to 5 of 20 (") && !s.contains(" on it ") && s.contains(" 0 not on ")
        });
        assert!(s.contains(&format!("(cohort: rollout {short}")), "{s}");
        // opencode below claude: a plain write (y), not to a cohort.
        t.send("J");
        t.wait_for("EDIT PENDING", SOON);
        t.send("w");
        t.wait_for("write onto revision", SOON);
        t.send("y");
        let s = t.wait_for("not written: rollout", SOON);
        assert!(s.contains(&format!("rollout {short}")), "{s}");
        let s = t.wait_for("last write failed: rollout", SOON);
        assert!(s.contains("EDIT PENDING"), "the edit is kept:\n{s}");
        // Asked: any other key keeps it baking.
        t.send("A");
        t.wait_for("the cohort goes back to the accepted list?", SOON);
        t.send("n");
        t.wait_for("nothing sent", SOON);
        t
    })
    .await
    .expect("pty");
    assert_eq!(current(&h).await["state"], "baking");
    assert_eq!(
        h.client(&h.owner)
            .history()
            .await
            .expect("h")
            .revisions
            .len(),
        1
    );
    let t = tokio::task::spawn_blocking(move || {
        let mut t = t;
        t.send("A");
        t.wait_for("the cohort goes back to the accepted list?", SOON);
        t.send("y");
        t.wait_for("aborted: the cohort goes back", SOON);
        t.wait_for("aborted by alice", SOON);
        // The refusal was the rollout's: it has ended, so it goes.
        let s = t.wait_until("the refusal gone", SOON, |s| {
            !s.contains("last write failed")
        });
        assert!(s.contains("EDIT PENDING"), "{s}");
        t
    })
    .await
    .expect("pty");
    let v = current(&h).await;
    assert_eq!(v["state"], "aborted", "{v}");
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        FLEET
    );
    tokio::task::spawn_blocking(move || {
        let mut t = t;
        // The kept edit writes now.
        t.send("w");
        t.wait_for("write onto revision", SOON);
        t.send("y");
        t.wait_for("written: revision", SOON);
        t.send("q");
        assert!(t.wait_exit(SOON).success());
    })
    .await
    .expect("pty");
    let disk = std::fs::read_to_string(h.config_path()).expect("read");
    assert!(disk.contains("[\"claude\", \"opencode\"]"), "{disk}");
}

/// A bad candidate (codex alone, missing on most hosts) to a quarter of
/// the fleet: the guard halts it, and a read-only dashboard shows the
/// halt in red with its reason, `ROLLOUT HALTED` as the word, and the
/// rollout's steps in History.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_halt_is_red_with_its_reason_and_history_lists_the_steps() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let _fleet = fleet(&h, 40, codex_scarce()).await;
    let (url, viewer) = (h.url(), h.viewer.clone());
    let t = tokio::task::spawn_blocking(move || {
        let mut t = Pty::spawn(&["--hub", &url], &[("MAC_HUB_TOKEN", &viewer)]);
        t.resize(140, 40);
        t.wait_for("READ-ONLY", START);
        t.wait_for("live", START);
        t.send("1");
        t.wait_for("claude", SOON);
        t
    })
    .await
    .expect("pty");
    start_by_hand(&h, "cohort=25%25&bake=10m", &["codex"]).await;
    tokio::task::spawn_blocking(move || {
        let mut t = t;
        let s = t.wait_for("halted by the guard: no route", Duration::from_secs(75));
        assert!(
            t.top_line().contains("ROLLOUT HALTED") || t.top_line().contains("NO ROUTE"),
            "{s}"
        );
        let at = find(&t, "halted by the guard").expect("the line");
        assert_eq!(fg(&t, at), vt100::Color::Idx(1), "red:\n{s}");
        // Once the cohort is back on the accepted list, the word.
        t.wait_until("the word", Duration::from_secs(30), |_| {
            t.top_line().contains("ROLLOUT HALTED")
        });
        assert!(!s.contains("P promote"), "a viewer is offered no P:\n{s}");
        t.send("4");
        let s = t.wait_for("rollout halted: halted by the guard", SOON);
        assert!(s.contains("rollout started"), "{s}");
        assert!(s.contains("(guard)"), "{s}");
        t.send("q");
        assert!(t.wait_exit(SOON).success());
    })
    .await
    .expect("pty");
}

/// Another owner (bob) writes a change outside the list, so the TUI's
/// next send meets a 412 whose rebase replays the edit.
async fn colleague_writes_outside_the_list(h: &TestHub) {
    let base = h.client(&h.owner2).config().await.expect("config").revision;
    let r = h
        .http()
        .put(h.path("/v1/config"))
        .bearer_auth(&h.owner2)
        .header("content-type", "application/toml")
        .header("if-match", format!("\"{base}\""))
        .body(format!("# bob was here\n{FLEET}"))
        .send()
        .await
        .expect("put");
    assert_eq!(r.status().as_u16(), 200);
}

/// `C` whose start meets a 412 (bob wrote while the cohort's question
/// was open): the edit is rebased onto bob's document and stays one for a
/// cohort: `y` on the new diff asks for the cohort again (the values
/// asked before filled in) and Enter starts the rollout; nothing is
/// written to everyone, the file is bob's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_412_on_c_keeps_the_edit_for_a_cohort_through_the_rebase() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let _fleet = fleet(&h, 10, calm()).await;
    let (url, owner) = (h.url(), h.owner.clone());
    let t = tokio::task::spawn_blocking(move || {
        let mut t = owner_on_ladder(&url, &owner);
        t.send("J");
        t.wait_for("EDIT PENDING", SOON);
        t.send("w");
        t.wait_for("C cohort first", SOON);
        t.send("C");
        t.wait_for("to a cohort first: cohort", SOON);
        // The size asked: 30% (not the default), kept through the rebase.
        t.send("\u{15}30%");
        t.wait_for(" 30% ", SOON);
        t
    })
    .await
    .expect("pty");
    colleague_writes_outside_the_list(&h).await;
    let bob = h.client(&h.viewer).config().await.expect("config");
    let seen = format!("rev {}", bob.revision.get(..12).unwrap_or(&bob.revision));
    let t = tokio::task::spawn_blocking(move || {
        let mut t = t;
        // The TUI has seen bob's revision before the start is sent (the
        // question's box still holds the diff onto the old one).
        t.wait_for(&seen, SOON);
        t.send("\r");
        t.wait_until("the diff onto bob's document", SOON, |s| {
            s.contains("C cohort first") && s.contains("# bob was here")
        });
        t.send("y");
        let s = t.wait_until("the cohort's question again", SOON, |s| {
            s.contains("to a cohort first: cohort") || s.contains("written: revision")
        });
        assert!(
            !s.contains("written: revision"),
            "y wrote to everyone:\n{s}"
        );
        assert!(s.contains(" 30% ") && s.contains(" 10m "), "{s}");
        t.send("\r");
        t.wait_for("started (30% for 10m): the cohort is told", SOON);
        t
    })
    .await
    .expect("pty");
    let v = current(&h).await;
    assert_eq!(v["state"], "baking", "{v}");
    assert_eq!(v["cohort"], "30%");
    assert_eq!(v["base_revision"], bob.revision.as_str(), "{v}");
    assert_eq!(v["agents"], serde_json::json!(["claude", "opencode"]));
    assert_eq!(
        std::fs::read_to_string(h.config_path()).expect("read"),
        format!("# bob was here\n{FLEET}"),
        "not written to everyone: the file is bob's"
    );
    tokio::task::spawn_blocking(move || {
        let mut t = t;
        t.send("q");
        let _ = t.wait_exit(SOON);
    })
    .await
    .expect("pty");
}

/// A rollout baking on the fixture fleet of 60 (its revision `r42`), as
/// the hub's JSON says it, with its two first steps.
fn fixture_rollout(m0: std::time::Instant) -> macfleet::tui::msg::Msg {
    let v: macfleet::rollout::wire::RolloutView = serde_json::from_value(serde_json::json!({
        "id": "4c2e9a1b07d3f5e8", "agents": ["claude", "opencode"],
        "candidate_revision": "9d0e1f2a3b4c", "base_revision": "r42",
        "state": "baking", "cohort": "10%", "cohort_share": 0.1,
        "cohort_workers": 6, "cohort_on_candidate": 6,
        "guard": {"cohort": {"workers": 6, "no_route": 0, "one_failure": 1, "failovers": 2, "failing": 1, "observed_s": 1440},
                  "rest": {"workers": 54, "no_route": 0, "one_failure": 2, "failovers": 5, "failing": 4, "observed_s": 12960}},
        "reason": null, "waiting": null, "time_left_s": 360, "bake_s": 600, "baked_s": 240,
        "promote": "auto", "started_at": "2026-11-29T15:00:05Z", "by": "alice",
        "steps": [{"id": "4c2e9a1b07d3f5e8", "at": "2026-11-29T15:00:05Z", "by": "alice",
                   "step": "started", "reason": "to a cohort of 10% for 10m, promote=auto"}]
    }))
    .expect("a rollout view");
    macfleet::tui::msg::Msg::Rollout {
        feed: macfleet::tui::model::staged::RolloutFeed::Current(Some(Box::new(v))),
        at: m0,
    }
}

fn screen_of(
    app: &mut macfleet::tui::app::App,
) -> ratatui::Terminal<ratatui::backend::TestBackend> {
    app.settle();
    let (w, h) = app.size();
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).expect("terminal");
    t.draw(|f| app.draw(f.buffer_mut())).expect("draw");
    t
}

fn row_text(t: &ratatui::Terminal<ratatui::backend::TestBackend>, y: u16) -> String {
    let buf = t.backend().buffer();
    (0..buf.area.width)
        .map(|x| buf[(x, y)].symbol().to_string())
        .collect::<String>()
        .trim_end()
        .to_string()
}

/// `j` past the last agent puts the cursor on the rollout line, Enter
/// there opens the rollout's detail (cohort, bake, the guard's figures
/// side by side, its steps), Esc closes it; at 80x24 and 120x40. The
/// fleet line keeps its cohort note whole: in full where it fits,
/// shortened, or left out (never cut mid-word).
#[test]
fn enter_on_the_rollout_line_opens_its_detail() {
    use crate::ui::{code, key};
    use crossterm::event::KeyCode;
    for (w, h) in [(80u16, 24u16), (120, 40)] {
        let (mut app, m0) = macfleet::tui::fixture::app(
            60,
            true,
            macfleet::tui::ui::theme::Theme::new(false, false),
            w,
            h,
        );
        app.update(fixture_rollout(m0));
        key(&mut app, '1');
        key(&mut app, 'G');
        key(&mut app, 'j');
        insta::assert_snapshot!(
            format!("rollout_line_selected_{w}x{h}"),
            screen_of(&mut app).backend()
        );
        code(&mut app, KeyCode::Enter);
        let t = screen_of(&mut app);
        insta::assert_snapshot!(format!("rollout_detail_{w}x{h}"), t.backend());
        code(&mut app, KeyCode::Esc);
        let after = format!("{:?}", screen_of(&mut app).backend());
        assert!(!after.contains("failovers/min "), "closed:\n{after}");
    }
    // The fixture's line is 107 columns with the note in full.
    for (w, note) in [
        (90u16, "6 not on r42"),
        (100, "6 not on r42 (cohort 4c2e…)"),
        (120, "6 not on r42 (cohort: rollout 4c2e…)"),
    ] {
        let (mut app, m0) = macfleet::tui::fixture::app(
            60,
            true,
            macfleet::tui::ui::theme::Theme::new(false, false),
            w,
            40,
        );
        app.update(fixture_rollout(m0));
        let line = row_text(&screen_of(&mut app), 1);
        assert!(line.ends_with(note), "{w} columns: {line:?}");
        assert!(line.chars().count() <= usize::from(w), "{line:?}");
    }
}
