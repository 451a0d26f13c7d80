//! The TUI never outlives its terminal. The real binary on a pseudo-terminal
//! that is *not* its controlling terminal (it runs in a session of its own,
//! as `setsid` makes, so no SIGHUP reaches it), whose master side the test
//! then closes: what a closed tmux pane or a dropped SSH connection does to
//! a TUI under a leader that forwards no hang-up. crossterm's reader spins
//! on such a terminal (crossterm #793); the TUI must notice by itself and
//! exit within about a second, every time.
//!
//! `MACFLEET_HANGUP_ROUNDS` (default 8) sets how many times; the closing
//! note of the change that added this ran it 100 times.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::pty::{self, Kill};

/// CPU time (user + system) of `pid` in clock ticks, if it still exists.
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

fn one_round(round: usize) -> Duration {
    let (master, slave) = pty::openpty();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_macfleet"));
    cmd.args(["demo", "--workers", "3"])
        .env("TERM", "xterm-256color")
        .env("XDG_STATE_HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path())
        .env_remove("NO_COLOR")
        .env_remove("MAC_HUB_URL")
        .env_remove("MAC_HUB_TOKEN")
        .stdin(Stdio::from(slave.try_clone().expect("dup")))
        .stdout(Stdio::from(slave.try_clone().expect("dup")))
        .stderr(Stdio::from(slave));
    // SAFETY: setsid is async-signal-safe. A new session with no
    // controlling terminal: closing the master sends this process no SIGHUP.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = Kill(cmd.spawn().expect("spawn"));
    let pid = child.id();

    // Read the master until the first frame is on it, at most 30 s.
    let mut m = File::from(master);
    // SAFETY: makes our own descriptor non-blocking.
    unsafe {
        let fl = libc::fcntl(m.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(m.as_raw_fd(), libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
    let mut seen = Vec::new();
    let end = Instant::now() + Duration::from_secs(30);
    let mut buf = [0u8; 8192];
    while !String::from_utf8_lossy(&seen).contains("OWNER") {
        assert!(
            Instant::now() < end,
            "round {round}: no first frame; got {:?}",
            String::from_utf8_lossy(&seen)
        );
        match m.read(&mut buf) {
            Ok(n) => seen.extend_from_slice(&buf[..n]),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    // Let it settle into its loop (a few frames and ticks), then hang up.
    std::thread::sleep(Duration::from_millis(300 + (round as u64 % 5) * 170));
    let cpu_before = cpu_ticks(pid).unwrap_or(0);
    let t0 = Instant::now();
    drop(m);
    let limit = Duration::from_secs(5);
    loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            let took = t0.elapsed();
            eprintln!("round {round}: exited {st} {took:?} after the hang-up");
            return took;
        }
        if t0.elapsed() > limit {
            let spent = cpu_ticks(pid).unwrap_or(0).saturating_sub(cpu_before);
            drop(child);
            panic!(
                "round {round}: still running {limit:?} after its terminal closed \
                 ({spent} CPU ticks spent meanwhile)"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_tui_whose_terminal_closes_exits_by_itself_every_time() {
    let rounds: usize = std::env::var("MACFLEET_HANGUP_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let mut worst = Duration::ZERO;
    for r in 0..rounds {
        worst = worst.max(one_round(r));
    }
    eprintln!("{rounds} rounds, slowest exit {worst:?}");
}
