//! No key drops an edit, and the words an owner needs (issue 27): C-c asks
//! like `q`; a session that ends without asking (SIGHUP, SIGTERM, the
//! terminal closed) keeps a pending edit as a draft the next session on
//! that hub offers; `d d d` removes three agents; read-only says why; the
//! footers show an owner the edit keys; `?` wraps instead of cutting.
//! Through `update`, and the real binary in a pty against a real hub.

use std::time::Duration;

use crossterm::event::KeyCode;
use macfleet::tui::app::App;
use macfleet::tui::fixture::{self, DOC, REVISION};
use macfleet::tui::model::edit::KeptDraft;
use macfleet::tui::msg::Msg;
use macfleet::tui::overlays::edit::Mode;
use macfleet::tui::panes::ladder::Ladder;
use macfleet::tui::ui::theme::Theme;

use crate::pty::{self, Pty};
use crate::ui::{self, code, ctrl, key};

fn app(can_write: bool) -> App {
    app_at(can_write, 120, 40)
}

fn app_at(can_write: bool, w: u16, h: u16) -> App {
    let (mut a, _) = fixture::app(20, can_write, Theme::new(false, false), w, h);
    key(&mut a, '1');
    a
}

fn screen(a: &App) -> String {
    let (w, h) = a.size();
    ui::text(&ui::drawn(a, w, h))
}

fn status(a: &App) -> String {
    a.status().map(|s| s.text.clone()).unwrap_or_default()
}

fn selected(a: &App) -> Option<String> {
    a.pane_as::<Ladder>().list.selected().cloned()
}

fn v(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

/// C-c from every screen that takes keys over the Ladder (the filter
/// prompt, the add prompt, the diff, the `:` line) asks too, and staying
/// goes back to that screen as it was.
#[test]
fn ctrl_c_from_every_prompt_and_screen_asks_and_staying_goes_back_to_it() {
    // The diff under review.
    let mut a = app(true);
    key(&mut a, 'J');
    key(&mut a, 'w');
    assert!(matches!(*a.edit_mode(), Mode::Review { .. }));
    ctrl(&mut a, 'c');
    assert!(!a.quits());
    assert_eq!(*a.edit_mode(), Mode::ConfirmQuit);
    key(&mut a, 'n');
    assert!(
        matches!(*a.edit_mode(), Mode::Review { .. }),
        "back on the diff: {:?}",
        *a.edit_mode()
    );
    // The add prompt, with what was typed.
    let mut a = app(true);
    key(&mut a, 'J');
    key(&mut a, 'a');
    key(&mut a, 'c');
    key(&mut a, 'u');
    ctrl(&mut a, 'c');
    assert!(!a.quits());
    assert_eq!(*a.edit_mode(), Mode::ConfirmQuit);
    code(&mut a, KeyCode::Esc);
    assert!(
        matches!(a.edit_mode(), Mode::Adding { text, .. } if text == "cu"),
        "{:?}",
        *a.edit_mode()
    );
    // The filter prompt and the `:` line: closed, the question answers.
    for open in ['/', ':'] {
        let mut a = app(true);
        key(&mut a, 'J');
        key(&mut a, open);
        ctrl(&mut a, 'c');
        assert!(!a.quits(), "{open}");
        assert_eq!(*a.edit_mode(), Mode::ConfirmQuit, "{open}");
        key(&mut a, 'y');
        assert!(a.quits(), "{open}: y answers the question, not the prompt");
    }
}

/// `d` leaves the cursor in its place, on the agent that moved up into it
/// (vim, k9s), so `d d d` removes three; at the end of the list the
/// cursor goes to the new last agent. It used to follow the removed agent
/// to the bottom, and the next `d` said "select an agent of the list".
#[test]
fn d_d_d_removes_the_next_agent_each_time_and_the_last_one_goes_to_the_new_last() {
    let mut a = app(true);
    assert_eq!(selected(&a).as_deref(), Some("opencode"));
    key(&mut a, 'd');
    assert_eq!(selected(&a).as_deref(), Some("pi"), "{}", screen(&a));
    key(&mut a, 'd');
    key(&mut a, 'd');
    assert_eq!(a.model().edit.order(), Some(&v(&["codex"])[..]));
    assert_eq!(selected(&a).as_deref(), Some("codex"));
    assert_eq!(status(&a), "claude removed (u undoes)");
    // At the end: the new last agent.
    let mut b = app(true);
    key(&mut b, 'G');
    assert_eq!(selected(&b).as_deref(), Some("codex"));
    key(&mut b, 'd');
    assert_eq!(selected(&b).as_deref(), Some("claude"));
    key(&mut b, 'd');
    assert_eq!(b.model().edit.order(), Some(&v(&["opencode", "pi"])[..]));
    assert_eq!(selected(&b).as_deref(), Some("pi"));
}

fn kept(revision: &str, document: &str) -> KeptDraft {
    KeptDraft {
        id: "/state/macfleet/drafts/draft-20261201-190200.json".into(),
        at: fixture::t0() - chrono::TimeDelta::minutes(40),
        revision: revision.into(),
        base: DOC.into(),
        document: document.into(),
        order: v(&["pi", "opencode", "claude", "codex"]),
    }
}

fn pi_first() -> String {
    DOC.replace(
        "    \"opencode\", # cheap\n    \"pi\",       # fast\n",
        "    \"pi\",       # fast\n    \"opencode\", # cheap\n",
    )
}

/// A draft kept by an earlier session on this hub is offered on the
/// status line (`a draft from 14:24Z on revision r42: o opens it, D drops
/// it`); `o` makes it the pending edit again on its revision, and the
/// runner is told to forget its files.
#[test]
fn an_offered_draft_on_the_same_revision_is_pending_again_after_o() {
    let mut a = app(true);
    a.offer_draft(Some(kept(REVISION, &pi_first())), 0);
    let s = screen(&a);
    let at = (fixture::t0() - chrono::TimeDelta::minutes(40)).format("%H:%MZ");
    assert!(
        s.contains(&format!(
            "a draft from {at} on revision {REVISION}: o opens it, D drops it"
        )),
        "{s}"
    );
    // Other keys are the pane's meanwhile.
    key(&mut a, 'j');
    assert!(a.offered_draft().is_some());
    key(&mut a, 'o');
    assert_eq!(
        a.model().edit.order(),
        Some(&v(&["pi", "opencode", "claude", "codex"])[..])
    );
    assert!(a.offered_draft().is_none());
    assert_eq!(
        a.take_settled_draft().as_deref(),
        Some("/state/macfleet/drafts/draft-20261201-190200.json")
    );
    assert!(
        status(&a).contains("is pending again on r42"),
        "{}",
        status(&a)
    );
    key(&mut a, 'w');
    let Mode::Review { text, .. } = a.edit_mode() else {
        panic!("{:?}", *a.edit_mode());
    };
    assert_eq!(text, &pi_first());
}

/// A draft begun on an older revision is replayed onto the hub's document
/// now, as after a 412: their change outside the list and the draft's
/// order both stand, shown as the diff to review.
#[test]
fn an_offered_draft_from_an_older_revision_is_replayed_onto_the_current_document() {
    let mut a = app(true);
    a.update(Msg::Agents {
        revision: "r44".into(),
        agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
        text: DOC.replace("retries = 2", "retries = 3"),
    });
    a.offer_draft(Some(kept(REVISION, &pi_first())), 1);
    assert!(
        screen(&a).contains("on revision r42 (1 more after it): o opens it"),
        "{}",
        screen(&a)
    );
    key(&mut a, 'o');
    let Mode::Review { text, if_match, .. } = a.edit_mode() else {
        panic!("replayed to review: {:?}", *a.edit_mode());
    };
    assert_eq!(if_match, "r44");
    assert_eq!(text, &pi_first().replace("retries = 2", "retries = 3"));
    assert!(a.take_settled_draft().is_some());
}

#[test]
fn d_drops_an_offered_draft_and_a_read_only_session_cannot_open_one() {
    let mut a = app(true);
    a.offer_draft(Some(kept(REVISION, &pi_first())), 0);
    key(&mut a, 'D');
    assert!(a.offered_draft().is_none());
    assert!(!a.model().edit.is_pending());
    assert!(a.take_settled_draft().is_some());
    assert!(status(&a).contains("is dropped"), "{}", status(&a));
    // No offer: D is nothing on the Ladder.
    key(&mut a, 'D');
    assert!(a.take_settled_draft().is_none());

    let mut r = app(false);
    r.set_read_only_why(Some("read-only: started with --read-only".into()));
    r.offer_draft(Some(kept(REVISION, &pi_first())), 0);
    key(&mut r, 'o');
    assert!(r.offered_draft().is_some(), "kept for an owner's session");
    assert!(r.take_settled_draft().is_none());
    assert_eq!(
        status(&r),
        "read-only: started with --read-only: the draft is kept"
    );
}

/// The edit keys of a session that does not write say why, as the runner
/// knows it (the flag, the context, the token's role).
#[test]
fn read_only_says_why() {
    let mut a = app(false);
    let why = "read-only: the token of \"wall\" has the viewer role; only an owner writes the list";
    a.set_read_only_why(Some(why.into()));
    for c in ['J', 'd', 'a', 'w', 'e'] {
        assert!(key(&mut a, c).is_empty());
        assert_eq!(status(&a), why, "{c}");
    }
    key(&mut a, '4');
    key(&mut a, 'R');
    assert_eq!(status(&a), why);
}

/// The Ladder's footer shows an owner the edit keys; History's footer and
/// its detail show `R revert` to an owner; a read-only session is shown
/// neither.
#[test]
fn the_footers_show_an_owner_the_keys_that_edit() {
    for (w, h) in [(80, 24), (120, 40)] {
        let mut a = app_at(true, w, h);
        let last = |a: &App| screen(a).lines().last().unwrap_or_default().to_string();
        assert!(
            last(&a).starts_with("J/K move · a add · d remove · w write · e editor · ? help"),
            "{w}x{h}: {}",
            last(&a)
        );
        key(&mut a, '4');
        assert!(last(&a).contains("R revert"), "{}", last(&a));
        code(&mut a, KeyCode::Enter);
        assert!(
            last(&a).contains("R revert") && last(&a).starts_with("Esc close"),
            "{}",
            last(&a)
        );
        let mut r = app_at(false, w, h);
        assert!(!last(&r).contains("J/K move"), "{}", last(&r));
        key(&mut r, '4');
        assert!(!last(&r).contains("R revert"), "{}", last(&r));
    }
}

/// `?` wraps what a key does under itself at 80 and 120 columns instead
/// of cutting it, on every pane, for an owner and for a read-only session
/// (its edit keys greyed under a line that says so), none of it lost at
/// the bottom either.
#[test]
fn the_help_wraps_its_lines_instead_of_cutting_them() {
    for (w, h) in [(80, 24), (120, 40)] {
        for can_write in [true, false] {
            for pane in ['1', '2', '3', '4'] {
                let mut a = app_at(can_write, w, h);
                key(&mut a, pane);
                key(&mut a, '?');
                let s = screen(&a);
                let boxed: Vec<&str> = s.lines().filter(|l| l.contains('│')).collect();
                assert!(!boxed.is_empty(), "{s}");
                for l in &boxed {
                    assert!(!l.contains('…'), "{w}x{h} pane {pane}: cut:\n{s}");
                }
                // Nothing lost at the bottom: the last lines are there.
                assert!(s.contains("f:v$ whole"), "{w}x{h} pane {pane}:\n{s}");
                if pane == '1' {
                    for word in ["$EDITOR", "w, y)", "fields agent"] {
                        assert!(s.contains(word), "{w}x{h}: {word}:\n{s}");
                    }
                    assert_eq!(
                        s.contains("read-only: these keys do nothing"),
                        !can_write,
                        "{s}"
                    );
                }
            }
        }
    }
}

/// A hand edit of the hub's file under a pending edit reads `changed by
/// hand on disk`, not `written by (changed on disk)` (the hub's word for
/// it in the history, which the History view keeps).
#[test]
fn a_hand_edit_under_a_pending_edit_reads_changed_by_hand_on_disk() {
    use macfleet::wire::{History, HistoryEntry};
    let mut a = app(true);
    key(&mut a, 'J');
    a.update(Msg::History(History {
        revisions: vec![HistoryEntry {
            revision: "r44".into(),
            at: fixture::t0() - chrono::TimeDelta::seconds(5),
            by: "(changed on disk)".into(),
            agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
            previous_agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
            client: None,
        }],
    }));
    a.update(Msg::Agents {
        revision: "r44".into(),
        agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
        text: DOC.replace("retries = 2", "retries = 3"),
    });
    let s = screen(&a);
    assert!(
        s.contains(
            "! r44 changed by hand on disk, 5s ago, while this edit (begun on r42) was pending"
        ),
        "{s}"
    );
    assert!(!s.contains("written by (changed on disk)"), "{s}");
}

// The binary in a pty against a real hub.

const START: Duration = Duration::from_secs(30);
const SOON: Duration = Duration::from_secs(10);

/// A real `macfleet hub` over the fixture's document.
type Hub = pty::DocHub;

/// An owner's session on the Ladder, its state (drafts) in `state`.
fn owner(hub: &Hub, state: &std::path::Path) -> Pty {
    let s = state.to_str().expect("utf-8");
    hub.owner_on_ladder_with(&[("XDG_STATE_HOME", s)])
}

fn drafts(state: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(state.join("macfleet").join("drafts"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn signal(t: &Pty, sig: i32) {
    let pid = t.child.process_id().expect("pid") as i32;
    // SAFETY: a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

/// C-c with an edit pending asks like `q` (it exited 0 at once and the
/// edit was gone); `n` stays, and the hub saw nothing.
#[test]
fn ctrl_c_with_a_pending_edit_asks_in_the_binary() {
    let hub = Hub::start(DOC);
    let state = tempfile::tempdir().expect("tempdir");
    let mut t = owner(&hub, state.path());
    t.send("J");
    t.wait_for("EDIT PENDING", SOON);
    t.send("\x03");
    t.wait_for("quit anyway?", SOON);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        t.child.try_wait().expect("try_wait").is_none(),
        "C-c with an edit pending ended the session:\n{}",
        t.screen()
    );
    t.send("n");
    t.wait_until("the question gone", SOON, |s| !s.contains("quit anyway?"));
    assert!(t.screen().contains("EDIT PENDING"), "{}", t.screen());
    t.send("\x03");
    t.wait_for("quit anyway?", SOON);
    t.send("y");
    assert!(t.wait_exit(SOON).success());
    assert!(drafts(state.path()).is_empty(), "y quits: no draft");
    assert_eq!(hub.config().0, DOC, "nothing was written");
}

/// `d d d` on the Ladder removes opencode, pi and claude; `w`'s diff and
/// the hub's document after `y` hold codex alone (it removed one, then
/// said "select an agent of the list to remove it").
#[test]
fn d_d_d_removes_three_agents_in_the_binary() {
    let hub = Hub::start(DOC);
    let state = tempfile::tempdir().expect("tempdir");
    let mut t = owner(&hub, state.path());
    for n in 1..=3 {
        t.send("d");
        t.wait_until(&format!("{n} removed"), SOON, |s| {
            s.matches("→-").count() == n
        });
    }
    let s = t.screen();
    assert!(!s.contains("select an agent"), "{s}");
    assert!(s.contains("3→0 codex"), "{s}");
    t.send("w");
    t.wait_for("write onto revision", SOON);
    t.send("y");
    t.wait_for("written: revision", SOON);
    let (doc, _) = hub.config();
    let list = macfleet::agents_doc::locate(&doc).expect("a list").agents;
    assert_eq!(list, vec!["codex".to_string()], "{doc}");
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// SIGHUP with an edit pending keeps it as a 0600 draft naming the hub
/// and the revision; a colleague then changes the hub's document; the
/// next owner session on the hub offers it, `o` replays it onto their
/// revision (both stand) and `y` writes it. SIGTERM keeps one too, and
/// `D` in the next session drops it (its files go). Before, the edit was
/// gone with the session.
#[test]
fn sighup_and_sigterm_keep_the_pending_edit_and_the_next_session_offers_it() {
    use std::os::unix::fs::PermissionsExt;
    let hub = Hub::start(DOC);
    let state = tempfile::tempdir().expect("tempdir");
    let (_, r1) = hub.config();
    let short: String = r1.chars().take(12).collect();

    let mut t = owner(&hub, state.path());
    t.send("J");
    t.wait_for("EDIT PENDING", SOON);
    signal(&t, libc::SIGHUP);
    t.wait_exit(SOON);
    let kept = drafts(state.path());
    assert_eq!(
        kept.len(),
        2,
        "a .toml and a .json: {kept:?}\n{}",
        t.log_tail()
    );
    for p in &kept {
        let mode = std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", p.display());
    }
    let toml = std::fs::read_to_string(&kept[1]).expect("the toml");
    assert!(toml.contains(&format!("begun on revision {r1}")), "{toml}");
    assert!(toml.ends_with(&pi_first()), "{toml}");
    drop(t);

    // Two actors: a colleague's write outside the list meanwhile.
    hub.other_owner_writes(&DOC.replace("retries = 2", "retries = 5"));
    let mut t = owner(&hub, state.path());
    t.wait_for(&format!("on revision {short}"), SOON);
    let s = t.wait_for("o opens it, D drops it", SOON);
    assert!(s.contains("a draft from "), "{s}");
    t.send("o");
    let s = t.wait_for("write onto revision", SOON);
    assert!(s.contains("+    \"pi\",       # fast"), "{s}");
    t.send("y");
    t.wait_for("written: revision", SOON);
    let (doc, _) = hub.config();
    assert_eq!(doc, pi_first().replace("retries = 2", "retries = 5"));
    assert!(drafts(state.path()).is_empty(), "opened: its files go");

    // SIGTERM keeps one too; the next session's D drops it.
    t.send("J");
    t.wait_for("EDIT PENDING", SOON);
    signal(&t, libc::SIGTERM);
    t.wait_exit(SOON);
    assert_eq!(drafts(state.path()).len(), 2, "{}", t.log_tail());
    drop(t);
    let mut t = owner(&hub, state.path());
    t.wait_for("o opens it, D drops it", SOON);
    t.send("D");
    t.wait_for("is dropped", SOON);
    assert!(drafts(state.path()).is_empty());
    assert!(!t.screen().contains("EDIT PENDING"), "{}", t.screen());
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// The token's role, said in the binary: a viewer's token on a session
/// not started read-only.
#[test]
fn a_viewers_session_says_why_it_does_not_write() {
    let hub = Hub::start(DOC);
    let mut t = Pty::spawn(&["--hub", &hub.url], &[("MAC_HUB_TOKEN", &hub.viewer)]);
    t.wait_for("READ-ONLY", START);
    t.send("1");
    t.wait_for("codex", SOON);
    t.send("J");
    t.wait_for(
        "read-only: the token of \"screen\" has the viewer role; only an owner writes the list",
        SOON,
    );
    t.send("q");
    assert!(t.wait_exit(SOON).success());
    let mut t = Pty::spawn(
        &["--hub", &hub.url, "--read-only"],
        &[("MAC_HUB_TOKEN", &hub.owner)],
    );
    t.wait_for("READ-ONLY", START);
    t.send("1");
    t.wait_for("codex", SOON);
    t.send("d");
    t.wait_for("read-only: started with --read-only", SOON);
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// The terminal closed under an owner with an edit pending: the binary on
/// a pty that is not its controlling terminal (its own session, so no
/// SIGHUP: the watchdog notices the hang-up), the master closed. The edit
/// is kept as a draft all the same, within the second the shutdown gets.
#[test]
fn a_terminal_that_closes_under_a_pending_edit_keeps_it() {
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    use std::time::Instant;

    let hub = Hub::start(DOC);
    let state = tempfile::tempdir().expect("tempdir");
    let (master, slave) = pty::openpty();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_macfleet"));
    cmd.args(["--hub", &hub.url])
        .env("TERM", "xterm-256color")
        .env("MAC_HUB_TOKEN", &hub.owner)
        .env("XDG_STATE_HOME", state.path())
        .env("XDG_CONFIG_HOME", state.path())
        .env_remove("NO_COLOR")
        .env_remove("MAC_HUB_URL")
        .stdin(Stdio::from(slave.try_clone().expect("dup")))
        .stdout(Stdio::from(slave.try_clone().expect("dup")))
        .stderr(Stdio::from(slave));
    // SAFETY: setsid is async-signal-safe: a session of its own, so
    // closing the master sends it no SIGHUP.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = pty::Kill(cmd.spawn().expect("spawn"));
    let mut m = std::fs::File::from(master);
    // SAFETY: makes our own descriptor non-blocking.
    unsafe {
        let fl = libc::fcntl(m.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(m.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
    let mut seen = Vec::new();
    let read_until = |m: &mut std::fs::File, what: &str, seen: &mut Vec<u8>| {
        let end = Instant::now() + START;
        let mut buf = [0u8; 8192];
        while !String::from_utf8_lossy(seen).contains(what) {
            assert!(Instant::now() < end, "no {what:?} on the terminal");
            match m.read(&mut buf) {
                Ok(n) => seen.extend_from_slice(&buf[..n]),
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
        seen.clear();
    };
    read_until(&mut m, "live", &mut seen);
    m.write_all(b"1").expect("key");
    read_until(&mut m, "codex", &mut seen);
    std::thread::sleep(Duration::from_millis(500));
    m.write_all(b"J").expect("key");
    read_until(&mut m, "EDIT PENDING", &mut seen);
    drop(m);
    let end = Instant::now() + SOON;
    while child.try_wait().expect("try_wait").is_none() {
        assert!(
            Instant::now() < end,
            "still running after its terminal closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let kept = drafts(state.path());
    assert_eq!(kept.len(), 2, "a .toml and a .json: {kept:?}");
    let toml = std::fs::read_to_string(&kept[1]).expect("the toml");
    assert!(toml.contains("the terminal hung up"), "{toml}");
    assert!(toml.ends_with(&pi_first()), "{toml}");
}
