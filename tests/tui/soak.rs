//! Soak: the read-only dashboard over a simulated fleet, for a long time,
//! holds flat; and a dashboard whose hub is down costs nothing while it
//! retries. Both are `#[ignore]`d (they take minutes); run them with
//!
//! ```sh
//! MACFLEET_SOAK_MINUTES=30 cargo test --release --test tui soak:: -- --ignored --nocapture
//! ```
//!
//! Each samples resident memory, open descriptors and threads of the TUI
//! (and of the hub) from `/proc`, and asserts the end is within a few
//! percent of the start after warm-up (descriptors and threads: equal, give
//! or take two). The busy-fleet soak compares the peaks of the second
//! minute and of the last minute, sampled every 10 s.

use crate::common;

use crate::pty::{self, Kill};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pty::Pty;

fn minutes(default: u64) -> u64 {
    std::env::var("MACFLEET_SOAK_MINUTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    rss_kib: u64,
    fds: usize,
    threads: u64,
    cpu_ticks: u64,
}

fn sample(pid: u32) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fds")
        .count();
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let rest = &stat[stat.rfind(')').expect("stat") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let cpu_ticks = f[11].parse::<u64>().unwrap_or(0) + f[12].parse::<u64>().unwrap_or(0);
    Sample {
        rss_kib: field("VmRSS:"),
        fds,
        threads: field("Threads:"),
        cpu_ticks,
    }
}

/// The largest of each figure over a window of samples.
fn peak(samples: impl Iterator<Item = Sample>) -> Sample {
    samples
        .reduce(|a, b| Sample {
            rss_kib: a.rss_kib.max(b.rss_kib),
            fds: a.fds.max(b.fds),
            threads: a.threads.max(b.threads),
            cpu_ticks: a.cpu_ticks.max(b.cpu_ticks),
        })
        .expect("at least one sample")
}

/// `extra_kib`: growth allowed on top of `rss_slack` (data the process
/// keeps by design, up to its bound).
fn flat(name: &str, first: Sample, last: Sample, rss_slack: f64, extra_kib: u64) {
    eprintln!("{name}: start {first:?}; end {last:?}; allowed beyond the slack {extra_kib} KiB");
    let grown = last.rss_kib.saturating_sub(extra_kib) as f64 / first.rss_kib.max(1) as f64;
    assert!(
        grown <= 1.0 + rss_slack,
        "{name}: resident memory grew {:.1}% ({} → {} KiB)",
        (grown - 1.0) * 100.0,
        first.rss_kib,
        last.rss_kib
    );
    assert!(
        last.fds <= first.fds + 2,
        "{name}: descriptors {} → {}",
        first.fds,
        last.fds
    );
    assert!(
        last.threads <= first.threads + 2,
        "{name}: threads {} → {}",
        first.threads,
        last.threads
    );
}

/// When the hub's replay ring is full under the busy fleet (seconds).
const HUB_WARM: u64 = 600;
/// Resident bytes a failover the TUI holds may cost: ~300 B live while the
/// log grows, counted by the allocator in `tests/tui/memory.rs` (which
/// asserts ≤ 512 B), plus the allocator's size-class rounding.
const RECORD_BUDGET: u64 = 512;

/// The failovers the TUI holds, from its tab title (`3 Failovers 6,467`).
fn failovers_held(screen: &str) -> Option<u64> {
    let rest = screen.split("3 Failovers ").nth(1)?;
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[test]
#[ignore = "minutes long: MACFLEET_SOAK_MINUTES=30 cargo test --release --test tui soak:: -- --ignored"]
fn the_dashboard_and_the_hub_hold_flat_over_a_busy_fleet() {
    let total = Duration::from_secs(60 * minutes(30).max(12));
    let (dir, _owner, viewer, worker) = common::hub_dir();
    let (hub, url) = common::spawn_hub(dir.path(), &["--heartbeat-interval", "5"], None);
    let hub: Kill = hub;
    let sim = Kill(
        Command::new(env!("CARGO_BIN_EXE_macfleet"))
            .args(["sim", "--workers", "1000", "--scenario", "quota-cap"])
            .env("MAC_HUB_URL", &url)
            .env("MAC_HUB_TOKEN", &worker)
            .env("XDG_CONFIG_HOME", dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sim"),
    );
    let mut tui = Pty::spawn(
        &["--read-only"],
        &[("MAC_HUB_URL", &url), ("MAC_HUB_TOKEN", &viewer)],
    );
    tui.wait_for("1,000 workers", Duration::from_secs(60));
    // The Failovers view for the whole run: the busiest screen (the list
    // and the sparkline redrawn as failovers arrive), and its tab title
    // says how many failovers the TUI holds.
    tui.send("3");
    tui.wait_for("failovers per minute", Duration::from_secs(10));
    let tui_pid = tui.child.process_id().expect("pid");
    let t0 = Instant::now();
    // A sample of both every 10 s; the first window is the second minute
    // (the first fills the screen's lists and the hub's caches), the last
    // is the final minute. A single sample swings with the allocator (the
    // hub's RSS moves ±10% between heartbeat batches), so each window is
    // judged by its peak.
    let mut series: Vec<(u64, Sample, Sample)> = Vec::new();
    // How many failovers the TUI holds (its tab title), at each sample.
    let mut held: Vec<(u64, u64)> = Vec::new();
    while t0.elapsed() < total {
        std::thread::sleep(Duration::from_secs(10));
        assert!(
            tui.child.try_wait().expect("try_wait").is_none(),
            "the dashboard exited"
        );
        let at = t0.elapsed().as_secs();
        series.push((at, sample(tui_pid), sample(hub.0.id())));
        if let Some(n) = failovers_held(&tui.screen()) {
            held.push((at, n));
        }
    }
    let end = t0.elapsed().as_secs();
    for (at, t, h) in series.iter().filter(|(at, ..)| at % 300 < 10) {
        eprintln!(
            "{:>3} min: TUI {} KiB, {} fds, {} threads · hub {} KiB, {} fds, {} threads",
            at / 60,
            t.rss_kib,
            t.fds,
            t.threads,
            h.rss_kib,
            h.fds,
            h.threads
        );
    }
    let window = |from: u64, to: u64| {
        let w: Vec<_> = series
            .iter()
            .filter(|(at, ..)| (from..to).contains(at))
            .collect();
        assert!(!w.is_empty(), "no samples between {from} s and {to} s");
        (peak(w.iter().map(|s| s.1)), peak(w.iter().map(|s| s.2)))
    };
    let (tui_first, _) = window(60, 120);
    // The hub keeps the last 100,000 events for `Last-Event-ID` replay; at
    // this fleet's 200 heartbeats a second that ring is full after about
    // 8.3 minutes, and the hub grows until then (by ~8 MiB, measured). It
    // is judged from minute 10, when every bound it has is reached.
    let (_, hub_first) = window(HUB_WARM, HUB_WARM + 60);
    let (tui_last, hub_last) = window(end.saturating_sub(60), end + 1);
    let screen = tui.screen();
    assert!(screen.contains("live"), "still live at the end:\n{screen}");
    eprintln!("{screen}");
    let written = tui.bytes.lock().expect("bytes").len();
    eprintln!(
        "{} min; {written} bytes written to the terminal",
        t0.elapsed().as_secs() / 60
    );
    // The TUI keeps the newest failovers (up to `MAX_RECORDS`, 50,000) by
    // design: what it holds may grow by what arrived, at most
    // `RECORD_BUDGET` bytes each; anything more is a leak. (That the full
    // log itself holds flat is proved by allocator count in
    // `tests/tui/memory.rs`, where RSS noise does not reach.)
    let held_at = |t: u64| held.iter().rfind(|(at, _)| *at <= t).map_or(0, |h| h.1);
    let arrived = held_at(end).saturating_sub(held_at(120));
    assert!(arrived > 0, "failovers flowed after the second minute");
    let per = (tui_last.rss_kib.saturating_sub(tui_first.rss_kib) * 1024) / arrived;
    eprintln!("TUI: {arrived} failovers arrived after the second minute; growth {per} B each");
    flat(
        "TUI",
        tui_first,
        tui_last,
        0.05,
        arrived * RECORD_BUDGET / 1024,
    );
    flat("hub", hub_first, hub_last, 0.10, 0);
    tui.send("q");
    tui.wait_exit(Duration::from_secs(5));
    drop(sim);
}

#[test]
#[ignore = "minutes long: MACFLEET_SOAK_MINUTES=5 cargo test --release --test tui soak:: -- --ignored"]
fn retrying_a_hub_that_is_down_costs_nothing_measurable() {
    let total = Duration::from_secs(60 * minutes(5).max(3));
    // A port nobody listens on: bind one, note it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let token = format!("{}{}", "mft_soak_", "v".repeat(30));
    let mut tui = Pty::spawn(
        &["--read-only"],
        &[("MAC_HUB_URL", &url), ("MAC_HUB_TOKEN", &token)],
    );
    tui.wait_for("READ-ONLY", Duration::from_secs(30));
    let pid = tui.child.process_id().expect("pid");
    // Every 10 s; the second minute's peak against the last minute's.
    let t0 = Instant::now();
    let mut series: Vec<(u64, Sample)> = Vec::new();
    while t0.elapsed() < total {
        std::thread::sleep(Duration::from_secs(10));
        assert!(
            tui.child.try_wait().expect("try_wait").is_none(),
            "the dashboard exited"
        );
        series.push((t0.elapsed().as_secs(), sample(pid)));
    }
    let end = t0.elapsed().as_secs();
    let window = |from: u64, to: u64| {
        peak(
            series
                .iter()
                .filter(|(at, _)| (from..to).contains(at))
                .map(|s| s.1),
        )
    };
    let (first, last) = (window(60, 120), window(end.saturating_sub(60), end + 1));
    let minutes: Vec<String> = series
        .iter()
        .filter(|(at, _)| at % 300 < 10)
        .map(|(at, s)| format!("{} min {} KiB", at / 60, s.rss_kib))
        .collect();
    eprintln!("TUI retrying: {}", minutes.join(" · "));
    let cpu_first = series
        .iter()
        .find(|(at, _)| *at >= 60)
        .map_or(first.cpu_ticks, |s| s.1.cpu_ticks);
    let hz = 100.0;
    let cpu_ms = (last.cpu_ticks - cpu_first) as f64 * 1000.0 / hz;
    let per_min = cpu_ms / ((end - 60) as f64 / 60.0);
    eprintln!("CPU while retrying: {per_min:.0} ms per minute");
    flat("TUI retrying", first, last, 0.05, 0);
    // A tick a second and a retry every 10 s: well under 1% of a core.
    assert!(per_min < 600.0, "{per_min:.0} ms of CPU per minute");
}
