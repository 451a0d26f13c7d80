//! Two actors against one real hub (issue #27, "both changes kept"): the
//! owner's edit in the real binary, in a pseudo-terminal, and a colleague
//! writing meanwhile — `macfleet agents`, a second owner's TUI, or a hand
//! edit of the hub's TOML file. The owner's edit is replayed onto theirs
//! as intents (each move and add on a named agent, relative to its
//! neighbour), so both stand; only an agent both touched is a conflict,
//! chosen agent by agent. The file on disk must end with both changes and
//! every comment.

use crate::common;
use crate::pty;

use std::time::Duration;

use macfleet::tui::fixture::DOC;
use pty::Pty;

const SOON: Duration = Duration::from_secs(10);

/// A real `macfleet hub` over `DOC`.
type Hub = pty::DocHub;

impl Hub {
    /// The hub's file as it stands on disk.
    fn on_disk(&self) -> String {
        std::fs::read_to_string(self.file()).expect("the hub's file")
    }

    /// `macfleet agents ARGS --hub …` as the colleague, which must succeed.
    fn agents(&self, args: &[&str]) {
        let mut all = vec!["agents"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--hub", &self.url]);
        let out = common::macfleet(&all, &[("MAC_HUB_TOKEN", &self.owner)]);
        assert!(out.status.success(), "{}", common::text(&out.stderr));
    }
}

/// Bob's edit: `a cursor` brings cursor back from its commented-out line.
fn bob_adds_cursor(t: &mut Pty) {
    t.send("a");
    t.wait_for("add agent:", SOON);
    t.send("cursor\r");
    t.wait_for("cursor added at rank 2", SOON);
}

/// What both changes make of `DOC`: pi first (alice), cursor back on its
/// own line, its comment with it (bob), every other byte as it was.
const BOTH: &str = "# the fleet's route order\n[fleet]\nMAC_CODING_AGENTS = [\n    \"pi\",       # fast\n    \"opencode\", # cheap\n    \"cursor\",   # no seat yet\n    \"claude\",   # strong\n    \"codex\",    # last\n]\nretries = 2\n";

fn assert_both(doc: &str) {
    assert_eq!(doc, BOTH, "both changes and every comment");
}

/// (a) The colleague is `macfleet agents move pi 0`, written while Bob's
/// add is pending. Before: the Ladder said the list changed and `w`
/// offered only `c carry mine onto theirs`, which wrote Bob's whole list
/// and put opencode back on top. Now the Ladder shows Bob's add replayed
/// onto alice's revision at once (ranks against it), `w` is the diff onto
/// it, and the file ends with both.
#[test]
fn an_add_and_a_colleagues_move_from_the_cli_both_stand() {
    let hub = Hub::start(DOC);
    let mut t = hub.owner_on_ladder();
    bob_adds_cursor(&mut t);
    t.wait_for("EDIT PENDING", SOON);
    hub.agents(&["move", "pi", "0"]);
    let s = t.wait_until("the notice on the Ladder", SOON, |s| {
        s.contains("was pending") && s.contains("by alice via macfleet/")
    });
    assert!(
        s.contains("your edit is replayed onto") && !s.contains("to choose"),
        "no conflict:\n{s}"
    );
    // The Ladder numbers the edit against alice's revision: pi is 0 and
    // unmoved, opencode stays 1, cursor is new at 2.
    let s = t.wait_until("the ranks against the new revision", SOON, |s| {
        s.contains("-→2")
    });
    assert!(!s.contains("0→1"), "ranks against the old base:\n{s}");
    t.send("w");
    let s = t.wait_for("write onto revision", SOON);
    assert!(
        !s.contains("-    \"pi\"") && !s.contains("the hub's list changed"),
        "the diff does not undo alice's move:\n{s}"
    );
    t.send("y");
    t.wait_for("written: revision", SOON);
    assert_both(&hub.on_disk());
    assert_eq!(hub.history_len(), 3, "the seed, alice's, bob's");
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// (b) The colleague edits the hub's TOML file by hand (pi first, and a
/// comment of their own), while Bob's add is pending; the write meets the
/// hub's 412 or the event first, either way the replay keeps both.
#[test]
fn an_add_and_a_hand_edit_of_the_hubs_file_both_stand_with_every_comment() {
    let hub = Hub::start(DOC);
    let mut t = hub.owner_on_ladder();
    bob_adds_cursor(&mut t);
    t.send("w");
    t.wait_for("write onto revision", SOON);
    let hand = DOC
        .replace(
            "    \"opencode\", # cheap\n    \"pi\",       # fast\n",
            "    \"pi\",       # fast\n    \"opencode\", # cheap\n",
        )
        .replace("retries = 2\n", "retries = 2\n# moved pi up by hand\n");
    let tmp = hub.dir.path().join("hub.toml.hand");
    std::fs::write(&tmp, &hand).expect("a hand edit");
    std::fs::rename(&tmp, hub.file()).expect("in place");
    t.wait_until("the hand edit seen", SOON, |s| s.contains("was pending"));
    let s = t.wait_for("write onto revision", SOON);
    assert!(!s.contains("the hub's list changed"), "no conflict:\n{s}");
    t.send("y");
    let s = t.wait_until("the write, or the 412's new diff", SOON, |s| {
        s.contains("written: revision") || s.contains("replayed onto")
    });
    if !s.contains("written: revision") {
        t.send("y");
        t.wait_for("written: revision", SOON);
    }
    assert_eq!(
        hub.on_disk(),
        format!("{BOTH}# moved pi up by hand\n"),
        "both, and the hand edit's comment"
    );
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

/// (a) with a second owner's TUI as the colleague, and a real conflict:
/// alice's TUI moves pi to the top; Bob had moved pi down and added
/// cursor. Only pi is a conflict: the screen shows base, theirs, mine and
/// the merged result; `m` keeps mine for pi and the diff says what that
/// undoes, naming alice; cursor's add stands either way.
#[test]
fn two_owners_move_one_agent_and_the_conflict_is_chosen_agent_by_agent() {
    let hub = Hub::start(DOC);
    let mut alice = hub.owner_on_ladder();
    let mut bob = hub.owner_on_ladder();
    bob_adds_cursor(&mut bob);
    // Bob's pi (rank 1) down to the bottom.
    bob.send("gj");
    for _ in 0..3 {
        bob.send("J");
    }
    bob.wait_for("1→4", SOON);
    // Alice: pi up to the top, written.
    alice.send("gjK");
    alice.wait_for("EDIT PENDING", SOON);
    alice.send("w");
    alice.wait_for("write onto revision", SOON);
    alice.send("y");
    alice.wait_for("written: revision", SOON);
    alice.send("q");
    assert!(alice.wait_exit(SOON).success());
    bob.wait_until("the notice on the Ladder", SOON, |s| {
        s.contains("was pending") && s.contains("by alice")
    });
    bob.send("w");
    let s = bob.wait_for("merged", SOON);
    assert!(
        s.contains("mine (pending)") && s.contains("theirs") && s.contains("base"),
        "{s}"
    );
    assert!(
        s.contains("pi: theirs moved it to #0, mine to #4"),
        "only pi conflicts:\n{s}"
    );
    let s = bob.wait_for("this undoes alice's move of pi to #0", SOON);
    assert_eq!(hub.history_len(), 2, "nothing of bob's sent:\n{s}");
    bob.send("m");
    bob.send("c");
    bob.wait_for("the merged result is pending: w shows", SOON);
    bob.send("w");
    let s = bob.wait_for("write onto revision", SOON);
    assert!(
        s.contains("this undoes alice's move of pi to #0"),
        "said above the diff:\n{s}"
    );
    bob.send("y");
    bob.wait_for("written: revision", SOON);
    assert_eq!(
        hub.on_disk(),
        "# the fleet's route order\n[fleet]\nMAC_CODING_AGENTS = [\n    \"opencode\", # cheap\n    \"cursor\",   # no seat yet\n    \"claude\",   # strong\n    \"codex\",    # last\n    \"pi\",       # fast\n]\nretries = 2\n",
        "mine for pi, cursor's add, every comment"
    );
    bob.send("q");
    assert!(bob.wait_exit(SOON).success());
}

/// The first 12 characters of a revision, as the Ladder names it.
fn short(r: &str) -> String {
    r.chars().take(12).collect()
}

/// F4: `begun on` names the revision the edit now pending began on. The
/// owner's move is replayed onto a colleague's write (`begun on` r1), then
/// undone to nothing; the colleague writes again, the owner begins a new
/// edit on that revision, and the colleague writes a third time. Before:
/// the note of the first write stayed with the new edit (`r2 … while this
/// edit (begun on r1) was pending`) and the third write said `begun on`
/// r1 too. Now the note goes with the edit undone, and the new edit's is
/// `begun on` the revision it began on.
#[test]
fn begun_on_names_the_revision_the_edit_began_on_after_an_undo_to_nothing() {
    let hub = Hub::start(DOC);
    let (_, r1) = hub.config();
    let mut t = hub.owner_on_ladder();
    t.send("J");
    t.wait_for("EDIT PENDING", SOON);
    let retries = |n: u32| DOC.replace("retries = 2", &format!("retries = {n}"));
    hub.other_owner_writes(&retries(3));
    let (_, r2) = hub.config();
    let s = t.wait_for("was pending", SOON);
    assert!(s.contains(&format!("begun on {}", short(&r1))), "{s}");
    t.send("u");
    let s = t.wait_until("nothing pending", SOON, |s| !s.contains("EDIT PENDING"));
    assert!(!s.contains("was pending"), "no edit is pending:\n{s}");
    hub.other_owner_writes(&retries(4));
    let (_, r3) = hub.config();
    t.wait_until("the Ladder on r3", SOON, |s| s.contains(&short(&r3)));
    // A new edit, begun on r3.
    t.send("J");
    let s = t.wait_for("EDIT PENDING", SOON);
    assert!(
        !s.contains("was pending"),
        "the undone edit's note stays with the new edit:\n{s}"
    );
    hub.other_owner_writes(&retries(5));
    let s = t.wait_for("was pending", SOON);
    assert!(
        s.contains(&format!("begun on {}", short(&r3))) && !s.contains(&short(&r2)),
        "the new edit began on {r3}:\n{s}"
    );
    t.send("u");
    t.wait_until("nothing pending", SOON, |s| !s.contains("EDIT PENDING"));
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}
