//! `:` jumps and `v` in the real binary, in a pty, against the demo's real
//! hub: what a person types reaches the screen (the same paths are tested
//! through `update` in `tests/tui/oncall.rs`).

use std::time::Duration;

use crate::pty;
use pty::Pty;

const START: Duration = Duration::from_secs(30);
const SOON: Duration = Duration::from_secs(10);

#[test]
fn colon_jumps_to_a_worker_v_shows_its_json_and_a_bad_command_keeps_its_text() {
    let mut t = Pty::spawn(&["demo", "--workers", "6"], &[]);
    t.wait_for("6 workers", START);

    t.send(":w-00003\r");
    let s = t.wait_for("worker w-00003", SOON);
    assert!(s.contains("host"), "the worker's detail:\n{s}");

    t.send("v");
    let s = t.wait_for("the hub's JSON", SOON);
    assert!(s.contains("\"worker\": \"w-00003\""), "its record:\n{s}");
    assert!(!s.contains("mft_"), "no token on the screen:\n{s}");
    t.esc();
    t.esc();

    t.send(":failovers\r");
    t.wait_for("failovers per minute", SOON);

    t.send(":bogus");
    t.send("\r");
    let s = t.wait_for("unknown command bogus", SOON);
    assert!(s.contains(":bogus"), "what was typed is kept:\n{s}");
    t.esc();
    t.esc();
    t.send("q");
    let st = t.wait_exit(SOON);
    assert!(st.success(), "{st:?}");
}
