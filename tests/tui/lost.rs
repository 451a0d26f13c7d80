//! A write whose answer was lost (issue 27), in the binary: two parties,
//! the real `macfleet hub` behind a stand-in proxy that forwards the `PUT`
//! and drops its answer, and the owner's TUI talking through the proxy.
//! The TUI says "may not have been written: checking", asks the hub again
//! by the write's Idempotency-Key and says `checked: your write R is on the
//! hub`: the edit done, one History entry, never "written while your edit
//! was pending" (its own write taken for a colleague's).

use crate::common::proxy::{State, addr_of, proxy};
use crate::common::{self, HubProcess};
use crate::pty::{self, Pty};

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use macfleet::tui::fixture::DOC;

const START: Duration = Duration::from_secs(30);
const SOON: Duration = Duration::from_secs(15);

/// The hub's document, revision and History's length, asked directly.
fn on_hub(url: &str, owner: &str) -> (String, String, usize) {
    let c = macfleet::client::Client::new(
        url,
        Some(macfleet::client::Token::new(owner)),
        Default::default(),
    )
    .expect("client");
    pty::DocHub::rt().block_on(async {
        let cfg = c.config().await.expect("config");
        let n = c.history().await.expect("history").revisions.len();
        (cfg.text, cfg.revision, n)
    })
}

/// A hub directory over `DOC` and the owner's token.
fn hub_dir() -> (tempfile::TempDir, String) {
    let (dir, owner, _viewer, _worker) = common::hub_dir();
    std::fs::write(dir.path().join("hub.toml"), DOC).expect("config");
    (dir, owner)
}

/// The proxy in front of `hub_url` on a runtime of its own (kept alive by
/// the caller), and its URL.
fn proxied(hub_url: &str) -> (tokio::runtime::Runtime, String, Arc<State>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (addr, state) = rt.block_on(proxy(addr_of(hub_url), false));
    (rt, format!("http://{addr}"), state)
}

/// The owner's TUI through `via`, on the Ladder, one move made and its
/// diff confirmed (`y`).
fn owner_writes_a_move(via: &str, owner: &str) -> Pty {
    let mut t = Pty::spawn(&["--hub", via], &[("MAC_HUB_TOKEN", owner)]);
    t.wait_for("OWNER", START);
    t.wait_for("live", START);
    t.send("1");
    t.wait_for("codex", SOON);
    std::thread::sleep(Duration::from_millis(500));
    t.send("J");
    t.wait_for("EDIT PENDING", SOON);
    t.send("w");
    t.wait_for("write onto revision", SOON);
    t.send("y");
    t
}

fn never_theirs(s: &str) {
    assert!(
        !s.contains("while your edit was pending"),
        "our own write taken for someone else's:\n{s}"
    );
}

#[test]
fn a_write_whose_answer_is_lost_is_checked_by_its_key_and_found_on_the_hub() {
    let (dir, owner) = hub_dir();
    let hub = HubProcess::spawn(dir.path(), common::Spawn::default());
    let (_rt, via, state) = proxied(&hub.url);
    let mut t = owner_writes_a_move(&via, &owner);
    let s = t.wait_for("checked: your write", SOON);
    assert!(
        state.dropped.load(Ordering::SeqCst),
        "the answer was dropped"
    );
    let (text, revision, n) = on_hub(&hub.url, &owner);
    assert!(
        s.contains(&format!("checked: your write {revision} is on the hub")),
        "{s}"
    );
    assert_ne!(text, DOC, "the move is on the hub");
    assert_eq!(n, 2, "written once: one History entry for the one write");
    let s = t.wait_until("the edit done", SOON, |s| !s.contains("EDIT PENDING"));
    never_theirs(&s);
    // Nothing pending: q quits without asking.
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

#[test]
fn a_lost_answer_the_hub_cannot_be_asked_about_is_asked_again_when_it_is_back() {
    let (dir, owner) = hub_dir();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let mut hub = Some(pty::hub_on_port(dir.path(), port, &[]));
    let (rt, via, state) = proxied(&url);
    let mut t = owner_writes_a_move(&via, &owner);
    rt.block_on(async {
        tokio::time::timeout(START, state.told.notified())
            .await
            .expect("the PUT reached the hub through the proxy")
    });
    // The hub has written and answered; its answer was dropped. It goes
    // away before the TUI can ask again.
    hub.take();
    let s = t.wait_for("may not have been written", SOON);
    never_theirs(&s);
    // Every re-send fails (about 4 s): the outcome is unknown, the edit kept.
    let s = t.wait_for("asked again by its key", SOON);
    assert!(s.contains("EDIT PENDING"), "the edit is kept:\n{s}");
    never_theirs(&s);
    // The hub is back, on the revision our write made.
    hub = Some(pty::hub_on_port(dir.path(), port, &[]));
    let s = t.wait_for("checked: your write", START);
    let (text, revision, n) = on_hub(&url, &owner);
    assert!(
        s.contains(&format!("checked: your write {revision} is on the hub")),
        "{s}"
    );
    assert_ne!(text, DOC);
    assert_eq!(n, 2, "written once");
    let s = t.wait_until("the edit done", SOON, |s| !s.contains("EDIT PENDING"));
    never_theirs(&s);
    t.send("q");
    assert!(t.wait_exit(SOON).success());
    drop(hub);
}

/// What the owner does while a write's outcome is not known stands on
/// that write once it is found: `J` while the lost answer is checked, `a`
/// while it waits for the hub, then the hub is back with the first write
/// on it. Before: the check found the write and the edit was cleared, the
/// later move and add gone without a word (and `J` while checking said
/// only "a write is on its way"). Now they are a pending edit onto the
/// written revision, written by `w` `y` alone, never with the first.
#[test]
fn changes_made_while_a_lost_write_is_checked_stand_on_it_as_a_pending_edit() {
    let (dir, owner) = hub_dir();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let mut hub = Some(pty::hub_on_port(dir.path(), port, &[]));
    let (rt, via, state) = proxied(&url);
    // opencode one down: pi, opencode, claude, codex (the write).
    let mut t = owner_writes_a_move(&via, &owner);
    rt.block_on(async {
        tokio::time::timeout(START, state.told.notified())
            .await
            .expect("the PUT reached the hub through the proxy")
    });
    hub.take();
    t.wait_for("may not have been written: checking", SOON);
    // While it is checked: opencode one more down (the cursor is on it).
    // Its words may take the status line from the check's, so what is
    // waited on is the Ladder: the move, then the unknown outcome's line.
    t.send("J");
    t.wait_for("0→2 opencode", SOON);
    t.wait_for("last write may not have been written", SOON);
    // While it waits for the hub: cursor added.
    t.send("a");
    t.wait_for("add agent:", SOON);
    t.send("cursor\r");
    t.wait_for("cursor added at rank", SOON);
    let mut mine = macfleet::plan::PendingEdit::new(DOC, "r").expect("DOC");
    mine.move_down(0).expect("the written move");
    let written = mine.render().expect("render");
    mine.move_down(1).expect("J while checking");
    mine.add("cursor", None).expect("a while unknown");
    hub = Some(pty::hub_on_port(dir.path(), port, &[]));
    let s = t.wait_for("checked: your write", START);
    let (text, revision, n) = on_hub(&url, &owner);
    assert!(
        s.contains(&format!("checked: your write {revision} is on the hub")),
        "{s}"
    );
    assert_eq!(
        text, written,
        "the first write alone: the rest not written with it"
    );
    assert_eq!(n, 2, "written once");
    let s = t.wait_until("the later changes pending", SOON, |s| {
        s.contains("EDIT PENDING") && s.contains("cursor")
    });
    never_theirs(&s);
    t.send("w");
    let s = t.wait_for(&format!("write onto revision {revision}"), SOON);
    assert!(
        s.contains("+    \"cursor\""),
        "the add is in the diff:\n{s}"
    );
    t.send("y");
    t.wait_for("written: revision", SOON);
    let (text, _, n) = on_hub(&url, &owner);
    let order = macfleet::agents_doc::locate(&text).expect("a list").agents;
    assert_eq!(order, mine.order(), "the move and the add made meanwhile");
    assert_eq!(n, 3, "the first write, then the later changes");
    t.send("q");
    assert!(t.wait_exit(SOON).success());
    drop(hub);
}
