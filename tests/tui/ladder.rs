//! End to end: the owner reorders the ladder in the real binary, in a
//! pseudo-terminal, against a real `macfleet hub` on loopback.

use crate::common;
use crate::pty;

use std::time::Duration;

use macfleet::tui::fixture::DOC;
use pty::Pty;

const START: Duration = Duration::from_secs(30);
const SOON: Duration = Duration::from_secs(10);

/// A hub over `DOC` (comments beside each agent, a key after the list).
type Hub = pty::DocHub;

impl Hub {
    fn document(&self) -> String {
        self.config().0
    }
}

#[test]
fn reorder_write_confirm_stores_the_new_order_and_every_other_byte() {
    let hub = Hub::start(DOC);
    assert_eq!(hub.document(), DOC);
    let mut t = hub.owner_on_ladder();
    // The cursor opens on opencode (rank 0): down one rank.
    t.send("J");
    let s = t.wait_for("EDIT PENDING", SOON);
    assert!(s.contains("0→1"), "the old and new rank of opencode:\n{s}");
    assert_eq!(hub.history_len(), 1, "an edit alone sends nothing");
    t.send("w");
    let s = t.wait_for("write onto revision", SOON);
    assert!(s.contains("+    \"pi\",       # fast"), "{s}");
    t.send("y");
    t.wait_for("written: revision", SOON);
    // No worker runs on this hub: the rollout line says so.
    t.wait_for("0/0 healthy workers on", SOON);
    let want = DOC.replace(
        "    \"opencode\", # cheap\n    \"pi\",       # fast\n",
        "    \"pi\",       # fast\n    \"opencode\", # cheap\n",
    );
    assert_ne!(want, DOC);
    assert_eq!(
        hub.document(),
        want,
        "the new order, each comment beside its agent"
    );
    assert_eq!(hub.history_len(), 2);
    // Nothing pending any more: q quits without asking.
    t.wait_until("the pending mark gone", SOON, |s| {
        !s.contains("EDIT PENDING")
    });
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

#[test]
fn undo_before_writing_sends_nothing_and_q_with_an_edit_asks() {
    let hub = Hub::start(DOC);
    let mut t = hub.owner_on_ladder();
    t.send("J");
    t.wait_for("EDIT PENDING", SOON);
    t.send("u");
    t.wait_until("the pending mark gone", SOON, |s| {
        !s.contains("EDIT PENDING")
    });
    t.send("w");
    t.wait_for("nothing to write", SOON);
    t.send("J");
    t.wait_for("EDIT PENDING", SOON);
    t.send("q");
    t.wait_for("quit anyway?", SOON);
    t.send("n");
    t.wait_until("the question gone", SOON, |s| !s.contains("quit anyway?"));
    assert!(
        t.child.try_wait().expect("try_wait").is_none(),
        "still running"
    );
    t.send("q");
    t.wait_for("quit anyway?", SOON);
    t.send("y");
    assert!(t.wait_exit(SOON).success());
    assert_eq!(hub.history_len(), 1, "the hub saw no write");
    assert_eq!(hub.document(), DOC);
}

/// Two actors: with nothing pending in the TUI, a colleague writes from the
/// command line (the real binary, the same hub). The TUI takes the
/// revision from the event stream and must have the new document to edit
/// within a second, without `r`: it once answered every edit key with "the
/// hub's document has not arrived yet" until refetched by hand.
#[test]
fn after_a_colleagues_write_the_owner_edits_at_once_without_refetching() {
    let hub = Hub::start(DOC);
    let mut t = hub.owner_on_ladder();
    let out = common::macfleet(
        &["agents", "move", "claude", "0", "--hub", &hub.url],
        &[("MAC_HUB_TOKEN", &hub.owner)],
    );
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let theirs = hub.document();
    let rev = Hub::rt()
        .block_on(hub.client().config())
        .expect("config")
        .revision;
    let short: String = rev.chars().take(12).collect();
    t.wait_until("the colleague's revision on the top line", SOON, |_| {
        t.top_line().contains(&short)
    });
    // Within a second of the event the document is in: the first edit key
    // after it is taken, never refused as not arrived.
    std::thread::sleep(Duration::from_secs(1));
    t.send("gJ");
    let s = t.wait_until("the edit taken", SOON, |s| {
        s.contains("EDIT PENDING") || s.contains("has not arrived")
    });
    assert!(
        !s.contains("has not arrived"),
        "refused after their write:\n{s}"
    );
    t.send("w");
    let s = t.wait_for("write onto revision", SOON);
    assert!(s.contains(&short), "the diff is onto their revision:\n{s}");
    t.send("y");
    t.wait_for("written: revision", SOON);
    let doc = hub.document();
    assert_ne!(doc, theirs, "mine is written on top of theirs");
    assert!(
        doc.find("\"opencode\"") < doc.find("\"claude\""),
        "their move kept, mine on top of it:\n{doc}"
    );
    assert_eq!(hub.history_len(), 3, "theirs and mine");
    // History tells the TUI's write from the command line's.
    let h = Hub::rt().block_on(hub.client().history()).expect("history");
    let client = |i: usize| h.revisions[i].client.clone().unwrap_or_default();
    assert!(client(0).ends_with("(tui)"), "mine: {}", client(0));
    assert!(client(1).ends_with("(agents)"), "theirs: {}", client(1));
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// Two actors: with `J` pending, a colleague writes another key of the
/// document. The Ladder says so at once (who, and that the list was left
/// alone), and `w` shows the diff onto the hub's revision now, never onto
/// the one that is gone: `y` is taken without a 412.
#[test]
fn a_colleagues_write_under_a_pending_edit_is_said_at_once_and_w_diffs_onto_it() {
    let hub = Hub::start(DOC);
    let mut t = hub.owner_on_ladder();
    t.send("J");
    t.wait_for("EDIT PENDING", SOON);
    let theirs = DOC.replace("retries = 2", "retries = 3");
    hub.other_owner_writes(&theirs);
    let rev = Hub::rt()
        .block_on(hub.client().config())
        .expect("config")
        .revision;
    let short: String = rev.chars().take(12).collect();
    let s = t.wait_until("the notice on the Ladder, with who", SOON, |s| {
        s.contains("was pending") && s.contains("by alice via macfleet/")
    });
    assert!(s.contains("left the list alone"), "{s}");
    assert!(s.contains(&format!("! {short} written by alice")), "{s}");
    t.send("w");
    let s = t.wait_for("write onto revision", SOON);
    assert!(s.contains(&short), "the diff is onto their revision:\n{s}");
    assert!(
        !s.contains("-retries") && !s.contains("+retries"),
        "the diff does not undo their change:\n{s}"
    );
    t.send("y");
    let s = t.wait_for("written: revision", SOON);
    assert!(!s.contains("replayed onto"), "no 412 on the way:\n{s}");
    assert_eq!(hub.document(), swapped(&theirs), "both changes stored");
    assert_eq!(hub.history_len(), 3);
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// Two actors: with `J` (opencode down one) pending in the TUI, a colleague
/// moves opencode to the bottom with `macfleet agents` (the real binary,
/// the same hub). The Ladder says their write changed what ours did, and
/// `w` shows the conflict's choice before any diff; nothing of ours is sent
/// before the choice. (A move of another agent is no conflict: see
/// `merge::`.)
#[test]
fn a_colleagues_change_of_the_list_under_a_pending_edit_asks_before_any_diff() {
    let hub = Hub::start(DOC);
    let mut t = hub.owner_on_ladder();
    t.send("J");
    t.wait_for("EDIT PENDING", SOON);
    let out = common::macfleet(
        &["agents", "move", "opencode", "3", "--hub", &hub.url],
        &[("MAC_HUB_TOKEN", &hub.owner)],
    );
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let s = t.wait_until("the notice on the Ladder, with who", SOON, |s| {
        s.contains("was pending") && s.contains("by alice via macfleet/")
    });
    assert!(s.contains("it changed agents your edit changed"), "{s}");
    t.send("w");
    let s = t.wait_for("the hub's list changed", SOON);
    assert!(
        !s.contains("write onto revision"),
        "no diff before the choice:\n{s}"
    );
    assert!(s.contains("mine (pending)"), "{s}");
    assert_eq!(hub.history_len(), 2, "nothing of ours sent");
    t.send("c");
    t.wait_for("the merged result is pending", SOON);
    t.send("w");
    t.wait_for("write onto revision", SOON);
    t.send("y");
    t.wait_for("written: revision", SOON);
    let doc = hub.document();
    assert!(
        doc.find("\"pi\"") < doc.find("\"opencode\""),
        "mine carried onto theirs:\n{doc}"
    );
    assert_eq!(hub.history_len(), 3);
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

fn swapped(doc: &str) -> String {
    doc.replace(
        "    \"opencode\", # cheap\n    \"pi\",       # fast\n",
        "    \"pi\",       # fast\n    \"opencode\", # cheap\n",
    )
}

#[test]
fn a_concurrent_write_of_another_key_is_replayed_and_both_are_stored() {
    let hub = Hub::start(DOC);
    let mut t = hub.owner_on_ladder();
    t.send("J");
    t.send("w");
    t.wait_for("write onto revision", SOON);
    let theirs = DOC.replace("retries = 2", "retries = 3");
    hub.other_owner_writes(&theirs);
    t.send("y");
    // Either `y` met the 412 (the new diff to confirm), or the TUI had
    // already remade the open diff onto their revision and `y` sent that.
    let s = t.wait_until("the 412's new diff, or the write", SOON, |s| {
        s.contains("replayed onto") || s.contains("written: revision")
    });
    if s.contains("replayed onto") {
        assert!(
            s.contains("write onto revision"),
            "the new diff to confirm:\n{s}"
        );
        assert_eq!(hub.history_len(), 2, "nothing of ours sent yet");
        t.send("y");
        t.wait_for("written: revision", SOON);
    }
    assert_eq!(hub.document(), swapped(&theirs), "both changes stored");
    assert_eq!(hub.history_len(), 3);
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

#[test]
fn a_concurrent_change_of_the_list_asks_and_carrying_mine_keeps_theirs_around_it() {
    let hub = Hub::start(DOC);
    let mut t = hub.owner_on_ladder();
    t.send("J");
    t.send("w");
    t.wait_for("write onto revision", SOON);
    // They removed opencode, which `J` moved: a conflict.
    let theirs = DOC.replace("    \"opencode\", # cheap\n", "");
    hub.other_owner_writes(&theirs);
    t.send("y");
    let s = t.wait_for("the hub's list changed", SOON);
    // Who changed it, from the history (the other owner used alice's token).
    let s = if s.contains("by alice") {
        s
    } else {
        t.wait_for("by alice", SOON)
    };
    assert!(s.contains("theirs") && s.contains("mine (pending)"), "{s}");
    t.send("c");
    t.wait_for("the merged result is pending", SOON);
    assert_eq!(
        hub.history_len(),
        2,
        "nothing of ours sent before the choice"
    );
    t.send("w");
    t.wait_for("write onto revision", SOON);
    t.send("y");
    t.wait_for("written: revision", SOON);
    let doc = hub.document();
    assert!(
        doc.find("\"pi\"") < doc.find("\"opencode\""),
        "mine:\n{doc}"
    );
    assert!(doc.ends_with("]\nretries = 2\n"), "{doc}");
    assert_eq!(hub.history_len(), 3);
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// A hub on a fixed loopback port, so that it can be stopped and started
/// again at the same address.
struct Restartable {
    dir: tempfile::TempDir,
    child: Option<pty::Kill>,
    port: u16,
    owner: String,
}

impl Restartable {
    fn new() -> Restartable {
        let (dir, owner, _viewer, _worker) = common::hub_dir();
        std::fs::write(dir.path().join("hub.toml"), DOC).expect("config");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut h = Restartable {
            dir,
            child: None,
            port,
            owner,
        };
        h.start();
        h
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn start(&mut self) {
        self.child = Some(pty::hub_on_port(self.dir.path(), self.port, &[]));
    }

    fn stop(&mut self) {
        // The guard kills and reaps it.
        self.child = None;
    }

    fn document(&self) -> String {
        let c = macfleet::client::Client::new(
            &self.url(),
            Some(macfleet::client::Token::new(&self.owner)),
            Default::default(),
        )
        .expect("client");
        Hub::rt().block_on(c.config()).expect("config").text
    }
}

impl Drop for Restartable {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn the_hub_down_during_the_write_keeps_the_edit_and_w_retries_once_it_is_back() {
    let mut hub = Restartable::new();
    let mut t = Pty::spawn(&["--hub", &hub.url()], &[("MAC_HUB_TOKEN", &hub.owner)]);
    t.wait_for("OWNER", START);
    t.wait_for("live", START);
    t.send("1");
    t.wait_for("codex", SOON);
    std::thread::sleep(Duration::from_millis(500));
    t.send("J");
    t.send("w");
    t.wait_for("write onto revision", SOON);
    hub.stop();
    t.send("y");
    let s = t.wait_for("write failed", Duration::from_secs(20));
    assert!(s.contains("EDIT PENDING"), "the edit stays:\n{s}");
    assert_eq!(hub.document_if_up(), None);
    hub.start();
    t.wait_for("live", Duration::from_secs(25));
    t.send("w");
    t.wait_for("write onto revision", SOON);
    t.send("y");
    let s = t.wait_until("written, or replayed first", SOON, |s| {
        s.contains("written: revision") || s.contains("replayed onto")
    });
    if s.contains("replayed onto") {
        t.send("y");
        t.wait_for("written: revision", SOON);
    }
    assert_eq!(hub.document(), swapped(DOC));
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

impl Restartable {
    /// The document, or `None` while nothing listens.
    fn document_if_up(&self) -> Option<String> {
        std::net::TcpStream::connect(("127.0.0.1", self.port))
            .ok()
            .map(|_| self.document())
    }
}

#[test]
fn in_the_demo_the_simulated_fleet_converges_onto_the_written_order() {
    let mut t = Pty::spawn(&["demo", "--workers", "5", "--interval", "1"], &[]);
    t.wait_for("OWNER", START);
    t.wait_for("live", START);
    t.send("1");
    t.wait_for("AWAY LAST HOUR", SOON);
    t.wait_for("5 healthy", START);
    std::thread::sleep(Duration::from_millis(500));
    t.send("J");
    let s = t.wait_for("EDIT PENDING", SOON);
    assert!(s.contains("pending order over 5 healthy workers"), "{s}");
    t.send("w");
    t.wait_for("write onto revision", SOON);
    t.send("y");
    t.wait_for("written: revision", SOON);
    t.wait_for("healthy workers on", SOON);
    // Every simulated worker picks the new revision up on a heartbeat.
    t.wait_for("5/5 healthy workers on", Duration::from_secs(30));
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// A scripted `$EDITOR`: `body` runs under `sh` with the document's path
/// in `$1` and a directory of its own in `$D` (for what it saw). Returns
/// the directory and the `EDITOR` value.
fn script_editor(body: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ed.sh");
    let text = format!("#!/bin/sh\nD='{}'\n{body}\n", dir.path().display());
    std::fs::write(&path, text).expect("script");
    let editor = format!("sh {}", path.display());
    (dir, editor)
}

/// sed: opencode's line (and its comment) after pi's.
const SWAP: &str = r#"sed -i '/"opencode", # cheap/{h;d};/"pi",  *# fast/G' "$1""#;

/// `y` on the diff screen, then the stored document.
fn write_and_read(t: &mut Pty, hub: &Hub) -> String {
    t.send("w");
    t.wait_for("write onto revision", SOON);
    t.send("y");
    t.wait_for("written: revision", SOON);
    hub.document()
}

#[test]
fn e_with_a_scripted_editor_stores_its_order_and_every_other_byte() {
    let hub = Hub::start(DOC);
    let (dir, editor) = script_editor(&format!("cp \"$1\" \"$D/seen\"\n{SWAP}"));
    let mut t = hub.owner_on_ladder_with(&[("EDITOR", &editor)]);
    t.send("e");
    let s = t.wait_for("EDIT PENDING", SOON);
    assert!(s.contains("from $EDITOR is pending"), "{s}");
    assert!(s.contains("0→1"), "opencode's old and new rank:\n{s}");
    let seen = std::fs::read_to_string(dir.path().join("seen")).expect("the editor ran");
    assert_eq!(seen, DOC, "the editor was given the whole document");
    assert_eq!(hub.history_len(), 1, "nothing sent before w and y");
    assert_eq!(write_and_read(&mut t, &hub), swapped(DOC));
    assert_eq!(hub.history_len(), 2);
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

#[test]
fn e_reopens_a_document_not_taken_with_the_error_on_top_and_then_takes_the_fix() {
    let hub = Hub::start(DOC);
    // First pass: codex becomes a second pi (refused). Second pass: what
    // it was given is kept, then fixed and reordered.
    let (dir, editor) = script_editor(&format!(
        r#"n=$(ls "$D" | grep -c '^seen')
cp "$1" "$D/seen$n"
if [ "$n" = 0 ]; then
  sed -i 's/"codex",    # last/"pi", # again/' "$1"
else
  sed -i 's/"pi", # again/"codex",    # last/' "$1"
  {SWAP}
fi"#
    ));
    let mut t = hub.owner_on_ladder_with(&[("EDITOR", &editor)]);
    t.send("e");
    t.wait_for("EDIT PENDING", SOON);
    let second = std::fs::read_to_string(dir.path().join("seen1")).expect("reopened");
    assert!(
        second.starts_with("# macfleet: not taken: MAC_CODING_AGENTS names \"pi\" twice\n"),
        "{second}"
    );
    assert!(
        second.ends_with(&DOC.replace("\"codex\",    # last", "\"pi\", # again")),
        "nothing typed lost:\n{second}"
    );
    assert!(
        !dir.path().join("seen2").exists(),
        "taken on the second pass"
    );
    assert_eq!(write_and_read(&mut t, &hub), swapped(DOC));
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// A real `$EDITOR` leaves a document that is not taken, then is quit
/// without saving: the draft is kept as a 0600 file under
/// `$XDG_STATE_HOME/macfleet/drafts/` whose path the status line names, and
/// the next `e` opens the hub's document, not the draft with its notes.
#[test]
fn cancelling_the_editor_on_a_draft_keeps_it_as_a_file_and_e_opens_the_hubs() {
    use std::os::unix::fs::PermissionsExt;
    let hub = Hub::start(DOC);
    let state = tempfile::tempdir().expect("tempdir");
    // First pass: codex becomes a second pi (refused); later passes leave
    // the file as they found it (quit without saving).
    let (dir, editor) = script_editor(
        r#"n=$(ls "$D" | grep -c '^seen')
cp "$1" "$D/seen$n"
if [ "$n" = 0 ]; then
  sed -i 's/"codex",    # last/"pi", # again/' "$1"
fi"#,
    );
    let state_home = state.path().to_str().expect("utf-8").to_string();
    let mut t = hub.owner_on_ladder_with(&[("EDITOR", &editor), ("XDG_STATE_HOME", &state_home)]);
    t.send("e");
    t.wait_for("what you typed is kept in", SOON);
    let drafts = state.path().join("macfleet").join("drafts");
    let files: Vec<_> = std::fs::read_dir(&drafts)
        .expect("the drafts directory")
        .map(|e| e.expect("entry").path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(
        std::fs::read_to_string(&files[0]).expect("the draft"),
        DOC.replace("\"codex\",    # last", "\"pi\", # again"),
        "what was typed, without the notes"
    );
    let mode = std::fs::metadata(&files[0])
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    t.send("e");
    t.wait_for(
        "the editor closed with the document unchanged: cancelled",
        SOON,
    );
    let third = std::fs::read_to_string(dir.path().join("seen2")).expect("opened again");
    assert_eq!(third, DOC, "e opens the hub's document");
    assert_eq!(hub.history_len(), 1, "nothing sent");
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

#[test]
fn the_editors_keys_go_to_the_editor_not_to_the_tui() {
    let hub = Hub::start(DOC);
    // The editor reads a line from the terminal: the TUI's key reader
    // must not take it (it would read "cheapest" as keys, `e` among them).
    // The line is typed while the editor sleeps, so a reader that still
    // polls the terminal would have all the time it needs to take it.
    let (dir, editor) = script_editor(
        r#"touch "$D/started"
sleep 1
IFS= read -r word
sed -i "s/# cheap\$/# $word/" "$1""#,
    );
    let mut t = hub.owner_on_ladder_with(&[("EDITOR", &editor)]);
    t.send("e");
    let started = dir.path().join("started");
    let end = std::time::Instant::now() + SOON;
    while !started.exists() {
        assert!(std::time::Instant::now() < end, "the editor did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    t.send("cheapest\r");
    let s = t.wait_for("EDIT PENDING", SOON);
    assert!(!s.contains("quit anyway"), "{s}");
    assert_eq!(
        write_and_read(&mut t, &hub),
        DOC.replace("# cheap\n", "# cheapest\n")
    );
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// Wait (bounded) for `path` to exist.
fn wait_file(path: &std::path::Path) {
    let t0 = std::time::Instant::now();
    while !path.exists() {
        assert!(t0.elapsed() < SOON, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(t: &Pty, sig: i32) {
    let pid = t.child.process_id().expect("pid") as i32;
    // SAFETY: kill only sends a signal to our child.
    assert_eq!(unsafe { libc::kill(pid, sig) }, 0);
}

/// A Ctrl-C typed in the editor reaches the whole foreground group as
/// SIGINT: it is the editor's, and macfleet stays (as git does).
#[test]
fn sigint_while_the_editor_is_open_is_left_to_the_editor() {
    let hub = Hub::start(DOC);
    let (dir, editor) = script_editor(&format!(
        "trap '' INT\ntouch \"$D/started\"\nsleep 1\n{SWAP}"
    ));
    let mut t = hub.owner_on_ladder_with(&[("EDITOR", &editor)]);
    t.send("e");
    wait_file(&dir.path().join("started"));
    signal(&t, libc::SIGINT);
    let s = t.wait_for("EDIT PENDING", SOON);
    assert!(s.contains("from $EDITOR is pending"), "{s}");
    assert_eq!(write_and_read(&mut t, &hub), swapped(DOC));
    // Without an editor open, SIGINT ends it as before.
    signal(&t, libc::SIGINT);
    t.wait_exit(SOON);
}

/// `pid` is running (not gone, not a zombie waiting to be reaped).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|st| st.rsplit(") ").next().map(|r| !r.starts_with('Z')))
        .unwrap_or(false)
}

/// SIGTERM while the editor is open ends macfleet and the editor with it:
/// nothing goes on in a terminal the shell has taken back. macfleet runs
/// under a shell here, as from a prompt: it is not the terminal's session
/// leader, so its exit sends the editor no SIGHUP.
#[test]
fn sigterm_while_the_editor_is_open_ends_the_editor_too() {
    let hub = Hub::start(DOC);
    let (dir, editor) =
        script_editor("echo $$ > \"$D/pid.tmp\"\nmv \"$D/pid.tmp\" \"$D/pid\"\nsleep 15");
    let bin = env!("CARGO_BIN_EXE_macfleet");
    let mut t = Pty::spawn_program(
        "sh",
        &["-c", "\"$0\" \"$@\"; sleep 30", bin, "--hub", &hub.url],
        &[("MAC_HUB_TOKEN", &hub.owner), ("EDITOR", &editor)],
    );
    t.wait_for("OWNER", START);
    t.wait_for("live", START);
    t.send("1");
    t.wait_for("codex", SOON);
    let sh = t.child.process_id().expect("pid");
    let children = format!("/proc/{sh}/task/{sh}/children");
    let macfleet: i32 = std::fs::read_to_string(&children)
        .expect("children")
        .split_whitespace()
        .next()
        .expect("macfleet under the shell")
        .parse()
        .expect("a pid");
    t.send("e");
    let pid_file = dir.path().join("pid");
    wait_file(&pid_file);
    let editor: i32 = std::fs::read_to_string(&pid_file)
        .expect("pid")
        .trim()
        .parse()
        .expect("a pid");
    // SAFETY: kill only sends a signal to our grandchild.
    assert_eq!(unsafe { libc::kill(macfleet, libc::SIGTERM) }, 0);
    let t0 = std::time::Instant::now();
    while running(macfleet) {
        assert!(t0.elapsed() < SOON, "macfleet did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
    while running(editor) {
        assert!(t0.elapsed() < SOON, "the editor {editor} outlived macfleet");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_read_only_session_given_every_edit_key_sends_no_write_and_runs_no_editor() {
    let hub = Hub::start(DOC);
    let (dir, editor) = script_editor(&format!("touch \"$D/ran\"\n{SWAP}"));
    let mut t = Pty::spawn(
        &["--hub", &hub.url, "--read-only"],
        &[("MAC_HUB_TOKEN", &hub.owner), ("EDITOR", &editor)],
    );
    t.wait_for("READ-ONLY", START);
    t.wait_for("live", START);
    t.send("1");
    t.wait_for("codex", SOON);
    std::thread::sleep(Duration::from_millis(500));
    for k in ["J", "K", "d", "a", "u", "\x12", "e", "w", "y"] {
        t.send(k);
        t.wait_for("read-only", SOON);
    }
    t.send("4");
    t.wait_for("(initial)", SOON);
    t.send("jR");
    t.send("e");
    std::thread::sleep(Duration::from_millis(800));
    let s = t.screen();
    assert!(!s.contains("EDIT PENDING"), "{s}");
    assert!(
        !dir.path().join("ran").exists(),
        "no editor in a read-only session"
    );
    assert_eq!(hub.history_len(), 1, "the hub saw no write");
    assert_eq!(hub.document(), DOC);
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

#[test]
fn an_empty_list_is_refused_before_it_reaches_the_hub() {
    let hub = Hub::start(DOC);
    let mut t = hub.owner_on_ladder();
    for _ in 0..4 {
        t.send("gd");
    }
    t.wait_for("EDIT PENDING", SOON);
    t.send("w");
    let s = t.wait_for("cannot write", SOON);
    assert!(s.contains("MAC_CODING_AGENTS is empty"), "{s}");
    assert!(
        !s.contains("write onto revision"),
        "no diff to confirm:\n{s}"
    );
    assert_eq!(hub.history_len(), 1, "nothing sent");
    assert_eq!(hub.document(), DOC);
    t.send("q");
    t.wait_for("quit anyway?", SOON);
    t.send("y");
    assert!(t.wait_exit(SOON).success());
}

#[test]
fn an_owner_session_started_while_the_hub_was_down_writes_once_it_answers() {
    let mut hub = Restartable::new();
    hub.stop();
    let mut t = Pty::spawn(&["--hub", &hub.url()], &[("MAC_HUB_TOKEN", &hub.owner)]);
    t.wait_until("no hub to talk to yet", START, |s| {
        s.contains("connecting") || s.contains("disconnected")
    });
    std::thread::sleep(Duration::from_millis(1500));
    hub.start();
    t.wait_for("live", Duration::from_secs(25));
    t.send("1");
    t.wait_for("codex", SOON);
    std::thread::sleep(Duration::from_millis(500));
    t.send("J");
    let s = t.wait_for("EDIT PENDING", SOON);
    assert!(!s.contains("read-only"), "{s}");
    t.send("w");
    t.wait_for("write onto revision", SOON);
    t.send("y");
    t.wait_for("written: revision", SOON);
    assert_eq!(hub.document(), swapped(DOC));
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// Two actors: while the owner has `J` pending in the TUI, a person edits
/// the hub's file by hand and breaks it. The TUI shows it (a banner naming
/// the line), `w` is held with a sentence instead of a diff onto a revision
/// the hub no longer holds, and `e` opens the file as it stands on disk
/// with the reason on top; the mend is reviewed against that file and
/// written over it (its `If-Match` names the broken file), keeping the
/// hand edit's lines, and the banner goes.
#[test]
fn a_broken_hand_edit_under_a_pending_edit_is_shown_held_and_mended_from_e() {
    let hub = Hub::start(DOC);
    let (dir, editor) = script_editor(&format!(
        "cp \"$1\" \"$D/seen\"\nsed -i 's/^important =$/important = true/' \"$1\"\n{SWAP}"
    ));
    let mut t = hub.owner_on_ladder_with(&[("EDITOR", &editor)]);
    t.send("J");
    t.wait_for("EDIT PENDING", SOON);
    let broken = format!("{DOC}[human]\nimportant =\n");
    std::fs::write(hub.dir.path().join("hub.toml"), &broken).expect("a hand edit");
    t.wait_for("hub's file does not validate (line 12", SOON);
    t.wait_for("w is held until it is mended", SOON);
    t.send("w");
    let s = t.wait_for("cannot write onto revision", SOON);
    assert!(s.contains("e opens it as it stands on disk"), "{s}");
    assert!(s.contains("EDIT PENDING"), "the edit is kept:\n{s}");
    t.send("e");
    t.wait_for("the mended document is pending", SOON);
    let seen = std::fs::read_to_string(dir.path().join("seen")).expect("the editor ran");
    assert!(
        seen.starts_with("# macfleet: the hub's file does not validate (line 12"),
        "{seen}"
    );
    assert!(seen.ends_with(&broken), "the file as it stands:\n{seen}");
    t.send("w");
    t.wait_for("replace the hub's file that does not validate", SOON);
    t.send("y");
    t.wait_for("written: revision", SOON);
    assert_eq!(
        hub.document(),
        swapped(&broken.replace("important =\n", "important = true\n"))
    );
    t.wait_until("the banner goes", SOON, |s| {
        !s.contains("does not validate")
    });
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// A hub that never accepted a list runs the fleet on the built-in order,
/// and the owner mends it from the TUI: the status word says
/// `BUILT-IN ORDER`, `e` opens the document as it stands with the reason
/// on top, and the write that brings a valid list ends it.
#[test]
fn the_owner_ends_the_built_in_order_from_e() {
    let doc = "# ours\n[fleet]\nMAC_CODING_AGENTS = [\"claude\" \"pi\"]\nretries = 2\n";
    let hub = Hub::start(doc);
    let (dir, editor) = script_editor(
        "cp \"$1\" \"$D/seen\"\nsed -i 's/\"claude\" \"pi\"/\"claude\", \"pi\"/' \"$1\"",
    );
    let mut t = Pty::spawn(
        &["--hub", &hub.url],
        &[("MAC_HUB_TOKEN", hub.owner.as_str()), ("EDITOR", &editor)],
    );
    t.wait_for("BUILT-IN ORDER", START);
    t.send("1");
    t.wait_for("does not validate", SOON);
    std::thread::sleep(Duration::from_millis(500));
    t.send("e");
    t.wait_for("the mended document is pending", SOON);
    let seen = std::fs::read_to_string(dir.path().join("seen")).expect("the editor ran");
    assert!(
        seen.starts_with("# macfleet: the hub's file does not validate (line 3"),
        "{seen}"
    );
    assert!(seen.ends_with(doc), "{seen}");
    t.send("w");
    t.wait_for("replace the hub's file that does not validate", SOON);
    t.send("y");
    t.wait_for("written: revision", SOON);
    assert_eq!(
        hub.document(),
        doc.replace("\"claude\" \"pi\"", "\"claude\", \"pi\"")
    );
    t.wait_until("the built-in order ends", SOON, |s| {
        !s.contains("BUILT-IN ORDER") && !s.contains("does not validate")
    });
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}
