//! End to end: the real runner in a pseudo-terminal (portable-pty + vt100),
//! against the reference hub with a simulated fleet.
//!
//! The child is this test binary itself, re-run with `MACFLEET_TUI_CHILD`
//! set: `tui_child` then starts an in-process demo hub and simulator (the
//! same ones `macfleet demo` uses) and calls `macfleet::tui::run` exactly as
//! `main` does, with a real terminal on a pty.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, PtySize, native_pty_system};

const COLS: u16 = 100;
const ROWS: u16 = 30;

// ---------------------------------------------------------------- child --

#[test]
fn tui_child() {
    if std::env::var_os("MACFLEET_TUI_CHILD").is_none() {
        return;
    }
    let flag = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        use macfleet::client::{Client, ClientOptions, Writer};
        let demo = macfleet::cli::demo::start_hub(2).await.expect("demo hub");
        let url = demo.hub.url();
        let sim_client =
            Client::new(&url, Some(demo.worker.clone()), ClientOptions::default()).expect("client");
        let scenario = macfleet::sim::Scenario::load("quota-cap").expect("scenario");
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(macfleet::sim::run(
            sim_client,
            macfleet::sim::SimOptions::new(20, scenario),
            Arc::new(macfleet::sim::SimStats::default()),
            async {
                let _ = stop_rx.await;
            },
        ));
        let read_only = flag("CHILD_READ_ONLY");
        let token = if read_only {
            demo.viewer.clone()
        } else {
            demo.owner.clone()
        };
        let client = Client::new(&url, Some(token), ClientOptions::default()).expect("client");
        let who = client.whoami().await.expect("whoami");
        let writer = Writer::new(client.clone(), &who);
        let log_file = std::env::var_os("CHILD_LOG").map(Into::into);
        let macfleet::cli::demo::DemoHub { hub, dir, .. } = demo;
        let _dir = dir;
        if let Some(secs) = std::env::var("CHILD_STOP_HUB_AFTER")
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
        {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(secs)).await;
                let _ = stop_tx.send(());
                hub.stop().await;
            });
        } else {
            std::mem::forget(hub);
        }
        macfleet::tui::run(
            client,
            writer,
            macfleet::tui::TuiOptions {
                hub_label: url,
                read_only,
                ascii: flag("CHILD_ASCII"),
                mouse: flag("CHILD_MOUSE"),
                no_color: flag("NO_COLOR"),
                log_file,
            },
        )
        .await
        .expect("tui ran");
    });
}

// --------------------------------------------------------------- parent --

struct Pty {
    parser: Arc<Mutex<vt100::Parser>>,
    bytes: Arc<Mutex<Vec<u8>>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    _dir: tempfile::TempDir,
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

impl Pty {
    fn spawn(env: &[(&str, &str)]) -> Pty {
        let dir = tempfile::tempdir().expect("tempdir");
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("pty");
        let mut cmd = CommandBuilder::new(std::env::current_exe().expect("test binary"));
        cmd.args(["--exact", "tui_child", "--nocapture", "--test-threads=1"]);
        cmd.env("MACFLEET_TUI_CHILD", "1");
        cmd.env("TERM", "xterm-256color");
        cmd.env("XDG_STATE_HOME", dir.path());
        cmd.env("CHILD_LOG", dir.path().join("tui.log"));
        cmd.env_remove("NO_COLOR");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pair.slave.spawn_command(cmd).expect("spawn");
        drop(pair.slave);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZeroU16::new(ROWS).unwrap(),
            std::num::NonZeroU16::new(COLS).unwrap(),
            0,
        )));
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let mut reader = pair.master.try_clone_reader().expect("reader");
        let (p, b) = (parser.clone(), bytes.clone());
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                p.lock().unwrap().process(&buf[..n]);
                b.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let writer = pair.master.take_writer().expect("writer");
        // Keep the master alive for the child's lifetime.
        std::mem::forget(pair.master);
        Pty {
            parser,
            bytes,
            writer,
            child,
            _dir: dir,
        }
    }

    fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn wait_for(&self, what: &str, timeout: Duration) -> String {
        let end = Instant::now() + timeout;
        loop {
            let s = self.screen();
            if s.contains(what) {
                return s;
            }
            if Instant::now() > end {
                panic!("{what:?} did not appear within {timeout:?}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).expect("write");
        self.writer.flush().expect("flush");
    }

    /// Esc alone: a key right behind it would read as Alt+key.
    fn esc(&mut self) {
        self.send("\x1b");
        std::thread::sleep(Duration::from_millis(150));
    }

    fn wait_exit(&mut self, timeout: Duration) -> portable_pty::ExitStatus {
        let end = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                return st;
            }
            if Instant::now() > end {
                panic!("the TUI did not exit; screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

const START: Duration = Duration::from_secs(30);
const SOON: Duration = Duration::from_secs(10);

#[test]
fn owner_session_shows_the_fleet_live_and_quits_cleanly() {
    let mut t = Pty::spawn(&[]);
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
    t.send("w");
    t.wait_for("editing arrives in a later version", SOON);
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
fn read_only_session_refuses_edit_keys() {
    let mut t = Pty::spawn(&[("CHILD_READ_ONLY", "1")]);
    t.wait_for("READ-ONLY", START);
    t.wait_for("20 workers", START);
    t.send("1");
    t.send("J");
    t.wait_for("read-only", SOON);
    // Ctrl-c quits too.
    t.send("\x03");
    assert!(t.wait_exit(SOON).success());
}

#[test]
fn a_lost_hub_is_shown_not_fatal() {
    let mut t = Pty::spawn(&[("CHILD_STOP_HUB_AFTER", "3")]);
    t.wait_for("20 workers", START);
    let s = t.wait_for("disconnected", Duration::from_secs(20));
    assert!(s.contains("20 workers"), "last data kept:\n{s}");
    assert!(s.contains("old)"), "data age shown:\n{s}");
    std::thread::sleep(Duration::from_secs(3));
    assert!(t.child.try_wait().unwrap().is_none(), "still running");
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}

#[test]
fn no_color_and_ascii_draw_plain_cells() {
    let mut t = Pty::spawn(&[("NO_COLOR", "1"), ("CHILD_ASCII", "1")]);
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
    let mut t = Pty::spawn(&[("CHILD_MOUSE", "1")]);
    t.wait_for("1/20", START);
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
