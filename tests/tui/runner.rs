//! End to end: the real `macfleet` binary in a pseudo-terminal
//! (portable-pty + vt100), against the reference hub: `macfleet demo` (its
//! embedded hub and simulated fleet), and `macfleet --hub URL` against a
//! `macfleet hub` process that the test kills and restarts.

use std::time::Duration;

use crate::pty;
use pty::{COLS, Pty, ROWS};

const START: Duration = Duration::from_secs(30);
const DEMO: [&str; 5] = ["demo", "--workers", "20", "--interval", "2"];
const SOON: Duration = Duration::from_secs(10);

#[test]
fn owner_session_shows_the_fleet_live_and_quits_cleanly() {
    let mut t = Pty::spawn(&DEMO, &[]);
    t.wait_for("OWNER", START);
    t.wait_for("live", START);
    let s = t.wait_for("20 workers", START);
    assert!(s.contains(" rev "), "{s}");
    t.send("1");
    t.wait_for("AWAY LAST HOUR", SOON);
    t.send("3");
    t.wait_for("failovers per minute", SOON);
    t.send("?");
    t.wait_for("help: Failovers", SOON);
    t.esc();
    t.send("4");
    t.wait_for("BEFORE", SOON);
    t.send("1");
    t.send("w");
    t.wait_for("nothing to write: no pending edit", SOON);
    t.send("2");
    t.send("/");
    t.send("w-0001");
    t.wait_for("/w-0001_", SOON);
    t.send("\r");
    t.send("\r");
    t.wait_for("capabilities", SOON);
    t.esc();
    t.send("q");
    let st = t.wait_exit(SOON);
    assert!(st.success(), "exit status {st:?}");
    let p = t.parser.lock().unwrap();
    assert!(!p.screen().alternate_screen(), "alternate screen left");
    assert!(!p.screen().hide_cursor(), "cursor shown again");
    let bytes = t.bytes.lock().unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(
        text.contains("\x1b[?2026h"),
        "frames use synchronized output"
    );
    assert!(!text.contains("\x1b[?1003h"), "mouse capture stays off");
}

#[test]
fn no_color_and_ascii_draw_plain_cells() {
    let mut t = Pty::spawn(&[&DEMO[..], &["--ascii"]].concat(), &[("NO_COLOR", "1")]);
    t.wait_for("20 workers", START);
    t.send("j");
    std::thread::sleep(Duration::from_millis(500));
    {
        let p = t.parser.lock().unwrap();
        let sc = p.screen();
        let mut reversed = 0;
        for r in 0..ROWS {
            for c in 0..COLS {
                let cell = sc.cell(r, c).unwrap();
                assert_eq!(cell.fgcolor(), vt100::Color::Default, "({r},{c})");
                assert_eq!(cell.bgcolor(), vt100::Color::Default, "({r},{c})");
                assert!(
                    cell.contents().is_ascii(),
                    "({r},{c}) {:?}",
                    cell.contents()
                );
                if cell.inverse() && cell.bold() {
                    reversed += 1;
                }
            }
        }
        assert!(reversed >= COLS as usize, "a REVERSED|BOLD selection row");
    }
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

#[test]
fn mouse_is_opt_in_button_events_only_and_undone() {
    // A calm fleet (no failovers), so no row jumps to the top mid-test.
    let calm = tempfile::Builder::new()
        .suffix(".toml")
        .tempfile()
        .expect("scenario file");
    std::fs::write(calm.path(), "name = \"calm\"\n").expect("write");
    let calm_path = calm.path().to_str().expect("utf-8").to_string();
    let mut t = Pty::spawn(
        &[&DEMO[..], &["--mouse", "--scenario", &calm_path]].concat(),
        &[],
    );
    // The selection follows its worker as the fleet arrives: go to the top.
    t.wait_for("20 workers", START);
    t.send("g");
    t.wait_for("1/20", SOON);
    // SGR wheel down at column 10, row 10.
    t.send("\x1b[<65;10;10M");
    t.wait_for("2/20", SOON);
    // A left click on the 5th data row (rows are 1-based; data starts on row 6).
    t.send("\x1b[<0;5;10M\x1b[<0;5;10m");
    t.wait_for("5/20", SOON);
    t.send("q");
    assert!(t.wait_exit(SOON).success());
    let bytes = t.bytes.lock().unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.contains("\x1b[?1000h"));
    assert!(!text.contains("\x1b[?1003h"), "no any-motion tracking");
    assert!(text.contains("\x1b[?1000l"), "mouse capture undone");
}

// ------------------------------------------------ against a hub process --

/// A `macfleet hub` process on a fixed loopback port (so it can come back
/// on the same address), with an owner and a worker token.
struct HubProc {
    dir: tempfile::TempDir,
    port: u16,
    owner: String,
    worker: String,
    child: Option<pty::Kill>,
}

impl HubProc {
    fn new() -> HubProc {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("hub.toml"),
            "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n",
        )
        .expect("config");
        let owner = format!("{}{}", "mft_pty_", "o".repeat(30));
        let worker = format!("{}{}", "mft_pty_", "w".repeat(30));
        use macfleet::wire::Role;
        let line = macfleet::hub::auth::token_entry;
        std::fs::write(
            dir.path().join("tokens.toml"),
            [
                line("alice", Role::Owner, &owner),
                line("fleet", Role::Worker, &worker),
            ]
            .join("\n"),
        )
        .expect("tokens");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("a free port")
            .local_addr()
            .expect("addr")
            .port();
        let mut h = HubProc {
            dir,
            port,
            owner,
            worker,
            child: None,
        };
        h.start();
        h
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn start(&mut self) {
        self.child = Some(pty::hub_on_port(
            self.dir.path(),
            self.port,
            &["--heartbeat-interval", "1", "--name", "pty-hub"],
        ));
    }

    fn kill(&mut self) {
        // The guard kills and reaps it.
        self.child = None;
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    fn client(&self, token: &str) -> macfleet::client::Client {
        macfleet::client::Client::new(
            &self.url(),
            Some(macfleet::client::Token::new(token)),
            Default::default(),
        )
        .expect("client")
    }

    /// A heartbeat with one failover, as a worker would send it.
    fn post_failover(&self, worker: &str, id: &str) {
        // Times relative to now: the hub refuses times more than 30 days old.
        let now = chrono::Utc::now();
        let sent = macfleet::wire::fmt_time(now);
        let at = macfleet::wire::fmt_time(now - chrono::Duration::seconds(7));
        let hb: macfleet::wire::Heartbeat = serde_json::from_value(serde_json::json!({
            "worker": worker, "host": "gpu-node-7", "sent_at": sent,
            "config_revision": null, "agents": ["opencode", "claude"], "active_agent": "claude",
            "capabilities": {"opencode": {"binary": true, "token": true, "preflight": "ok"},
                             "claude": {"binary": true, "token": true, "preflight": "ok"}},
            "failovers": [{"id": id, "at": at, "from": "opencode", "to": "claude",
                "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router",
                          "detail": "opencode route: 429 from upstream"}}]
        }))
        .expect("heartbeat");
        let c = self.client(&self.worker);
        Self::rt()
            .block_on(c.heartbeat(&hb))
            .expect("heartbeat accepted");
    }

    fn history_len(&self) -> usize {
        let c = self.client(&self.owner);
        Self::rt()
            .block_on(c.history())
            .expect("history")
            .revisions
            .len()
    }
}

impl Drop for HubProc {
    fn drop(&mut self) {
        self.kill();
    }
}

#[test]
fn a_failover_appears_unasked_and_a_lost_hub_is_shown_not_fatal() {
    let mut hub = HubProc::new();
    let url = hub.url();
    let mut t = Pty::spawn(&["--hub", &url], &[("MAC_HUB_TOKEN", &hub.owner)]);
    t.wait_for("OWNER", START);
    t.wait_for("live", START);
    t.send("3");
    t.wait_for("failovers per minute", SOON);
    // Posted to the hub, shown without a key press.
    hub.post_failover("w-pty-1", "pty-1");
    let s = t.wait_for("w-pty-1", SOON);
    assert!(s.contains("rate_limited"), "{s}");
    t.send("2");
    t.wait_for("1 workers", SOON);
    // The hub goes away: a banner, the data kept, the TUI still running.
    hub.kill();
    let s = t.wait_for("disconnected", Duration::from_secs(20));
    assert!(s.contains("w-pty-1"), "last data kept:\n{s}");
    // Long past the lost threshold (10 intervals of 1 s), the hub's last
    // judgement still stands: a hub outage is not a fleet outage.
    let state = |s: &str| {
        let row = s
            .lines()
            .find(|l| l.contains("w-pty-1"))
            .unwrap_or_default();
        ["healthy", "stale", "lost"]
            .into_iter()
            .find(|w| row.split_whitespace().any(|x| x == *w))
            .map(str::to_string)
    };
    let before = state(&s);
    assert!(before.is_some(), "w-pty-1's row shows its state:\n{s}");
    std::thread::sleep(Duration::from_secs(12));
    let s = t.screen();
    assert!(s.contains("hub unreachable"), "{s}");
    assert!(s.contains("last known:"), "{s}");
    assert!(t.top_line().starts_with(" HUB DOWN "), "{}", t.top_line());
    assert_eq!(
        state(&s),
        before,
        "the worker's state moved on our clock:\n{s}"
    );
    assert!(
        t.child.try_wait().expect("try_wait").is_none(),
        "still running"
    );
    // It comes back on the same address: the TUI reconnects by itself
    // (backoff capped at 10 s) and shows new events again.
    hub.start();
    t.wait_for("live", Duration::from_secs(25));
    hub.post_failover("w-pty-2", "pty-2");
    t.wait_for("w-pty-2", Duration::from_secs(15));
    t.send("q");
    assert!(t.wait_exit(SOON).success());
    let p = t.parser.lock().expect("parser");
    assert!(!p.screen().alternate_screen(), "alternate screen left");
}

#[test]
fn read_only_session_sends_no_write_whatever_keys_it_gets() {
    let hub = HubProc::new();
    let url = hub.url();
    // An owner's token, but --read-only: the session holds no writer.
    let mut t = Pty::spawn(
        &["--read-only", "--hub", &url],
        &[("MAC_HUB_TOKEN", &hub.owner)],
    );
    t.wait_for("READ-ONLY", START);
    t.send("1");
    for keys in [
        "J", "K", "a", "d", "u", "\x12", "w", "y", "\r", "j", "J", "w", "y", "e", "R", "c", "D",
        "y",
    ] {
        t.send(keys);
        std::thread::sleep(Duration::from_millis(40));
    }
    t.wait_for("read-only", SOON);
    // Ctrl-c quits too.
    t.send("\x03");
    assert!(t.wait_exit(SOON).success());
    assert_eq!(hub.history_len(), 1, "the hub saw no write");
    let doc = HubProc::rt()
        .block_on(hub.client(&hub.owner).config())
        .expect("config");
    assert_eq!(
        doc.text,
        "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n"
    );
}

#[test]
fn no_hub_configured_says_how_to_get_one() {
    let mut t = Pty::spawn(&[], &[]);
    let st = t.wait_exit(SOON);
    assert_eq!(st.exit_code(), 2);
    let s = t.screen();
    assert!(
        s.contains("macfleet demo") && s.contains("--hub URL"),
        "{s}"
    );
}

/// A demo past `PREPARE_BEHIND` opens its TUI at once while its fleet is
/// made and registers: until the first worker reports, the Workers view
/// says that the demo's workers are starting (not that none has reported,
/// as of a hub whose fleet is silent), then shows them as they come.
#[test]
fn a_large_demo_says_its_fleet_is_starting_then_shows_it() {
    let mut t = Pty::spawn(&["demo", "--workers", "120000"], &[]);
    let s = t.wait_until("the starting note, then rows", START, |s| {
        s.contains("120,000 simulated workers are starting") || s.contains("w-0")
    });
    assert!(
        s.contains("the demo's 120,000 simulated workers are starting: they appear as they report"),
        "the first screen names the fleet that is coming:\n{s}"
    );
    assert!(!s.contains("no workers have reported yet"), "{s}");
    let s = t.wait_until("a worker row", Duration::from_secs(120), |s| {
        s.lines().any(|l| l.starts_with("w-"))
    });
    assert!(!s.contains("simulated workers are starting"), "{s}");
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}
