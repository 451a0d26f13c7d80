//! F3 (issue 27): another hub (another `instance`: a fresh database)
//! answering at the same address while an edit is pending. The screen
//! starts afresh for the new hub, and the pending edit, begun on the old
//! one, is kept as the old hub's draft and said so, never dropped; when
//! the old hub answers there again, its draft is offered. Two real
//! `macfleet hub` processes on one fixed loopback port and the owner's TUI
//! in a pty.

use std::time::Duration;

use crate::common;
use crate::pty::{self, Pty};

use macfleet::tui::fixture::DOC;

const START: Duration = Duration::from_secs(30);
const SOON: Duration = Duration::from_secs(20);

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A hub directory over `DOC` (its own database beside it); the owner's
/// token (the same in every directory: made from the same name).
fn hub_dir() -> (tempfile::TempDir, String) {
    let (dir, owner, _viewer, _worker) = common::hub_dir();
    std::fs::write(dir.path().join("hub.toml"), DOC).expect("config");
    (dir, owner)
}

#[test]
fn a_pending_edit_is_kept_as_the_old_hubs_draft_when_another_hub_answers_there() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let (a_dir, owner) = hub_dir();
    let (b_dir, owner_b) = hub_dir();
    assert_eq!(owner, owner_b, "one owner token on both hubs");
    let mut hub = Some(pty::hub_on_port(a_dir.path(), port, &[]));
    let mut t = Pty::spawn(&["--hub", &url], &[("MAC_HUB_TOKEN", &owner)]);
    t.wait_for("OWNER", START);
    t.wait_for("live", START);
    t.send("1");
    t.wait_for("codex", SOON);
    std::thread::sleep(Duration::from_millis(500));
    t.send("J");
    t.wait_for("EDIT PENDING", SOON);
    // Hub A goes; hub B (another database: another instance) answers at
    // the same address.
    hub.take();
    hub = Some(pty::hub_on_port(b_dir.path(), port, &[]));
    let s = t.wait_for("kept as its draft", START);
    assert!(
        s.contains("your pending edit was begun on the one before"),
        "{s}"
    );
    assert!(!s.contains("EDIT PENDING"), "the new hub's screen:\n{s}");
    // Hub A is back: its draft is offered.
    hub.take();
    hub = Some(pty::hub_on_port(a_dir.path(), port, &[]));
    let s = t.wait_for("a draft from", START);
    assert!(s.contains("o opens it"), "{s}");
    t.send("o");
    t.wait_for("EDIT PENDING", SOON);
    t.send("q");
    t.wait_for("quit anyway?", SOON);
    t.send("y");
    assert!(t.wait_exit(SOON).success());
    drop(hub);
}
