//! The real `macfleet` binary in a pseudo-terminal (portable-pty), its
//! screen kept by a vt100 parser; a bare pty pair for a test that needs
//! one that is not the child's controlling terminal; and [`Kill`], the
//! kill-on-drop guard for every other process a test spawns. Used by the
//! TUI's tests (`tests/tui/`) and `cli_output`, not by every test.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

pub const COLS: u16 = 100;
pub const ROWS: u16 = 30;

pub struct Pty {
    pub parser: Arc<Mutex<vt100::Parser>>,
    pub bytes: Arc<Mutex<Vec<u8>>>,
    writer: Box<dyn Write + Send>,
    master: Box<dyn MasterPty + Send>,
    pub child: Box<dyn Child + Send + Sync>,
    /// The reader saw the end of the output (every slave end closed).
    eof: Arc<std::sync::atomic::AtomicBool>,
    _dir: tempfile::TempDir,
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

impl Pty {
    /// Start `macfleet args…` in a `COLS`x`ROWS` terminal, with a clean
    /// environment (no hub, no token, empty config and state homes) plus `env`.
    pub fn spawn(args: &[&str], env: &[(&str, &str)]) -> Pty {
        Pty::spawn_program(env!("CARGO_BIN_EXE_macfleet"), args, env)
    }

    /// Like [`Pty::spawn`], for another program (a shell around macfleet).
    pub fn spawn_program(program: &str, args: &[&str], env: &[(&str, &str)]) -> Pty {
        let dir = tempfile::tempdir().expect("tempdir");
        let pair = native_pty_system()
            .openpty(PtySize {
                rows: ROWS,
                cols: COLS,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("pty");
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        cmd.env("TERM", "xterm-256color");
        cmd.env("XDG_STATE_HOME", dir.path());
        cmd.env("XDG_CONFIG_HOME", dir.path());
        cmd.env_remove("NO_COLOR");
        cmd.env_remove("MAC_HUB_URL");
        cmd.env_remove("MAC_HUB_TOKEN");
        // tests/tui/stream.rs stretches the in-process poller's period by
        // setting this in the test binary's own environment; a TUI spawned
        // after it would inherit a minute-long poll (and miss a replaced
        // hub or the hub's word). Only a test that passes it gets it.
        cmd.env_remove(macfleet::tui::runtime::net::QUIET_ENV);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = pair.slave.spawn_command(cmd).expect("spawn");
        drop(pair.slave);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            std::num::NonZeroU16::new(ROWS).expect("rows"),
            std::num::NonZeroU16::new(COLS).expect("cols"),
            0,
        )));
        let bytes = Arc::new(Mutex::new(Vec::new()));
        let mut reader = pair.master.try_clone_reader().expect("reader");
        let (p, b) = (parser.clone(), bytes.clone());
        let eof = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let done = eof.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                p.lock().expect("parser").process(&buf[..n]);
                b.lock().expect("bytes").extend_from_slice(&buf[..n]);
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let writer = pair.master.take_writer().expect("writer");
        Pty {
            parser,
            bytes,
            writer,
            master: pair.master,
            child,
            eof,
            _dir: dir,
        }
    }

    /// Resize the terminal (the child gets SIGWINCH). The parser takes the
    /// new size first: the child draws at the new size only after the
    /// signal, so its next frame is never parsed into the old grid (and
    /// clipped away) while bytes from older frames still in flight are
    /// overwritten by that frame.
    pub fn resize(&mut self, cols: u16, rows: u16) {
        if let (Some(r), Some(c)) = (
            std::num::NonZeroU16::new(rows),
            std::num::NonZeroU16::new(cols),
        ) {
            self.parser.lock().expect("parser").set_size(r, c);
        }
        self.master
            .resize(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("resize");
    }

    /// The end of the TUI's own log (its state home is this pty's temp
    /// dir), for failure messages.
    pub fn log_tail(&self) -> String {
        let path = self._dir.path().join("macfleet").join("macfleet.log");
        match std::fs::read_to_string(&path) {
            Ok(log) => {
                let lines: Vec<&str> = log.lines().collect();
                let from = lines.len().saturating_sub(40);
                format!("log ({}):\n{}", path.display(), lines[from..].join("\n"))
            }
            Err(e) => format!("no log at {}: {e}", path.display()),
        }
    }

    pub fn screen(&self) -> String {
        self.parser.lock().expect("parser").screen().contents()
    }

    /// The first row of the screen: hub, badge, connection, revision.
    pub fn top_line(&self) -> String {
        self.screen().lines().next().unwrap_or_default().to_string()
    }

    /// Wait (polling every 50 ms, at most `timeout`) until `what` is on the
    /// screen; the screen then.
    pub fn wait_for(&self, what: &str, timeout: Duration) -> String {
        self.wait_until(&format!("{what:?}"), timeout, |s| s.contains(what))
    }

    /// Wait (polling every 50 ms, at most `timeout`) until the screen meets
    /// `ok`; the screen then. Panics naming `what` and showing the screen.
    pub fn wait_until(&self, what: &str, timeout: Duration, ok: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + timeout;
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            if Instant::now() > end {
                panic!(
                    "{what} did not appear within {timeout:?}; screen:\n{s}\n{}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).expect("write");
        self.writer.flush().expect("flush");
    }

    /// Esc alone: a key right behind it would read as Alt+key.
    pub fn esc(&mut self) {
        self.send("\x1b");
        std::thread::sleep(Duration::from_millis(150));
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> portable_pty::ExitStatus {
        let end = Instant::now() + timeout;
        loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                // What it wrote last (leaving the alternate screen) may
                // still be in the pty: read to the end before the caller
                // looks at the screen (bounded; a grandchild holding the
                // slave open keeps it from ending).
                let drained = Instant::now() + Duration::from_secs(2);
                while !self.eof.load(std::sync::atomic::Ordering::SeqCst)
                    && Instant::now() < drained
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                return st;
            }
            if Instant::now() > end {
                panic!("the TUI did not exit; screen:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

#[allow(unused_imports)]
pub use crate::common::{Kill, hub_on_port};

/// A bare pty pair (master, slave) of 100x30, the master close-on-exec.
#[cfg(unix)]
pub fn openpty() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    use std::os::fd::{FromRawFd, OwnedFd};
    let (mut m, mut s) = (0, 0);
    let ws = libc::winsize {
        ws_row: ROWS,
        ws_col: COLS,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty writes two descriptors; the null name and termios
    // pointers are allowed.
    let r = unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), std::ptr::null(), &ws) };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    // The master must not leak into the child, or closing ours closes
    // nothing.
    // SAFETY: sets a flag on our own descriptor.
    unsafe { libc::fcntl(m, libc::F_SETFD, libc::FD_CLOEXEC) };
    // SAFETY: both descriptors are fresh and ours.
    unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s)) }
}

/// A real `macfleet hub` over `doc`, with a token of each role, killed on
/// drop: what the binary's tests in a pty edit against.
pub struct DocHub {
    pub dir: tempfile::TempDir,
    _child: Kill,
    pub url: String,
    pub owner: String,
    pub viewer: String,
}

impl DocHub {
    /// A hub over `doc`, which may not validate.
    pub fn start(doc: &str) -> DocHub {
        let (dir, owner, viewer, _worker) = crate::common::hub_dir();
        std::fs::write(dir.path().join("hub.toml"), doc).expect("config");
        let (child, url) = crate::common::spawn_hub(dir.path(), &[], None);
        DocHub {
            dir,
            _child: child,
            url,
            owner,
            viewer,
        }
    }

    /// The hub's file.
    pub fn file(&self) -> std::path::PathBuf {
        self.dir.path().join("hub.toml")
    }

    pub fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    /// A client with the owner's token.
    pub fn client(&self) -> macfleet::client::Client {
        macfleet::client::Client::new(
            &self.url,
            Some(macfleet::client::Token::new(&self.owner)),
            Default::default(),
        )
        .expect("client")
    }

    /// The hub's document and its revision.
    pub fn config(&self) -> (String, String) {
        let c = Self::rt().block_on(self.client().config()).expect("config");
        (c.text, c.revision)
    }

    pub fn history_len(&self) -> usize {
        Self::rt()
            .block_on(self.client().history())
            .expect("history")
            .revisions
            .len()
    }

    /// Another owner writes `text` over the current revision.
    pub fn other_owner_writes(&self, text: &str) {
        let c = self.client();
        Self::rt().block_on(async {
            let who = c.whoami().await.expect("whoami");
            let w = macfleet::client::Writer::new(c.clone(), &who).expect("an owner");
            let rev = c.config().await.expect("config").revision;
            w.put_config(text, &rev).await.expect("their write");
        });
    }

    /// An owner's session on the Ladder, once the hub's document is in.
    pub fn owner_on_ladder(&self) -> Pty {
        self.owner_on_ladder_with(&[])
    }

    /// An owner's session on the Ladder with `env` added (an `EDITOR`, a
    /// state home), once the hub's document is in.
    pub fn owner_on_ladder_with(&self, env: &[(&str, &str)]) -> Pty {
        let mut all = vec![("MAC_HUB_TOKEN", self.owner.as_str())];
        all.extend_from_slice(env);
        let mut t = Pty::spawn(&["--hub", &self.url], &all);
        t.wait_for("OWNER", Duration::from_secs(30));
        t.wait_for("live", Duration::from_secs(30));
        t.send("1");
        t.wait_for("codex", Duration::from_secs(10));
        // The document (not only the list) arrives with the first config
        // fetch, right after the first workers page.
        std::thread::sleep(Duration::from_millis(500));
        t
    }
}
