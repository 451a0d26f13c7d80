//! The runner, end to end: the real binary in a pseudo-terminal.
//!
//! - a key reaches the screen by itself, with the tick and the worker poll
//!   stretched to a minute against a quiet hub (nothing else wakes the
//!   loop: the old loop drew each key only at the next tick or hub answer);
//! - SIGTERM, SIGINT and SIGHUP end it within a second or so, the terminal
//!   restored;
//! - Ctrl-Z under a shell with job control stops it and `fg` brings the
//!   whole screen back;
//! - a resize storm through tiny sizes costs at most about a frame per
//!   16 ms and never kills it.

use std::time::{Duration, Instant};

use crate::pty;
use pty::Pty;

const START: Duration = Duration::from_secs(30);
/// Nothing but a key wakes the loop for this long.
const QUIET: (&str, &str) = ("MACFLEET_TEST_QUIET_MS", "60000");
/// The embedded hub with no workers: no heartbeats, no failovers.
const QUIET_DEMO: [&str; 3] = ["demo", "--workers", "0"];

fn quiet_session() -> Pty {
    let t = Pty::spawn(&QUIET_DEMO, &[QUIET]);
    t.wait_for("OWNER", START);
    // The first fetches are answered; from here the hub is silent.
    t.wait_for("live", START);
    std::thread::sleep(Duration::from_millis(300));
    t
}

#[test]
fn a_key_is_drawn_without_waiting_for_a_tick_or_the_hub() {
    let mut t = quiet_session();
    // Each key changes the screen; each must appear long before the next
    // tick or poll (a minute away). 10 s is generous for a loaded machine.
    let steps = [
        ("1", "AWAY LAST HOUR"),
        ("3", "failovers per minute"),
        ("?", "help: Failovers"),
    ];
    for (key, marker) in steps {
        let t0 = Instant::now();
        t.send(key);
        t.wait_for(marker, Duration::from_secs(10));
        eprintln!("{key:?} → {marker:?} in {:?}", t0.elapsed());
    }
    t.esc();
    t.send("q");
    let st = t.wait_exit(Duration::from_secs(10));
    assert!(st.success(), "{st:?}");
}

fn pid(t: &Pty) -> i32 {
    t.child.process_id().expect("pid") as i32
}

fn ends_on(signal: i32, name: &str) {
    let mut t = quiet_session();
    let t0 = Instant::now();
    // SAFETY: sends a signal to our own child.
    assert_eq!(unsafe { libc::kill(pid(&t), signal) }, 0);
    t.wait_exit(Duration::from_secs(3));
    eprintln!("{name}: exited in {:?}", t0.elapsed());
    let p = t.parser.lock().expect("parser");
    assert!(
        !p.screen().alternate_screen(),
        "{name}: the alternate screen was left"
    );
}

#[test]
fn sigterm_ends_the_tui_and_restores_the_terminal() {
    ends_on(libc::SIGTERM, "SIGTERM");
}

#[test]
fn sigint_ends_the_tui_and_restores_the_terminal() {
    ends_on(libc::SIGINT, "SIGINT");
}

#[test]
fn sighup_ends_the_tui() {
    let t = quiet_session();
    // SAFETY: sends a signal to our own child.
    assert_eq!(unsafe { libc::kill(pid(&t), libc::SIGHUP) }, 0);
    let mut t = t;
    t.wait_exit(Duration::from_secs(3));
}

#[test]
fn ctrl_z_stops_under_job_control_and_fg_redraws_everything() {
    let bin = env!("CARGO_BIN_EXE_macfleet");
    // An interactive shell: job control, as in a real terminal.
    let mut t = Pty::spawn_program(
        "bash",
        &["--norc", "--noprofile", "-i"],
        &[QUIET, ("PS1", "SHELL$ ")],
    );
    t.wait_for("SHELL$", START);
    t.send(&format!("{bin} demo --workers 0\r"));
    t.wait_for("live", START);
    t.send("\x1a"); // Ctrl-Z
    let s = t.wait_for("Stopped", Duration::from_secs(10));
    {
        let p = t.parser.lock().expect("parser");
        assert!(
            !p.screen().alternate_screen(),
            "the shell gets the normal screen back:\n{s}"
        );
    }
    t.send("fg\r");
    let s = t.wait_for("live", Duration::from_secs(10));
    assert!(s.contains("OWNER"), "the whole screen is drawn again:\n{s}");
    {
        let p = t.parser.lock().expect("parser");
        assert!(
            p.screen().alternate_screen(),
            "back on the alternate screen"
        );
    }
    t.send("q");
    // A fresh prompt on the last line (the old prompts are on the normal
    // screen already): only then is the shell reading again.
    t.wait_until("a fresh prompt", Duration::from_secs(10), |s| {
        s.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(str::trim)
            == Some("SHELL$")
    });
    t.send("exit\r");
    t.wait_exit(Duration::from_secs(10));
}

#[test]
fn a_resize_storm_through_tiny_sizes_costs_at_most_a_frame_each_16ms() {
    let mut t = quiet_session();
    let sync = b"\x1b[?2026h";
    let count = |t: &Pty| {
        let b = t.bytes.lock().expect("bytes");
        b.windows(sync.len()).filter(|w| w == sync).count()
    };
    let before = count(&t);
    let t0 = Instant::now();
    let sizes = [(1, 1), (10, 3), (100, 30), (80, 24), (2, 40), (200, 1)];
    for i in 0..400 {
        let (c, r) = sizes[i % sizes.len()];
        t.resize(c, r);
    }
    let storm = t0.elapsed();
    t.resize(10, 3);
    t.wait_for("too small", Duration::from_secs(10));
    t.resize(100, 30);
    t.wait_for("OWNER", Duration::from_secs(10));
    let frames = count(&t) - before;
    let bound = (storm.as_millis() as usize / 16) + 10;
    eprintln!("400 resizes in {storm:?}: {frames} frames (bound {bound})");
    assert!(frames <= bound, "{frames} frames for a {storm:?} storm");
    assert!(
        t.child.try_wait().expect("try_wait").is_none(),
        "still running"
    );
    t.send("q");
    t.wait_exit(Duration::from_secs(10));
}
