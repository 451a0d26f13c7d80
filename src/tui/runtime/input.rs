//! What reaches the loop from the terminal and the operating system, each
//! from a thread of its own that sends [`Input`] into one tokio channel:
//!
//! - the **reader**: crossterm's blocking `poll`/`read`. A tokio channel
//!   wakes the loop's own task, so a key is drawn in the next frame. (The
//!   loop used to drain crossterm's `EventStream` with `now_or_never()`,
//!   which left a no-op waker in the stream: keys then waited for the next
//!   tick or hub message, 30–740 ms.) The loop itself never calls into
//!   crossterm's reader, so a reader that spins on a dead terminal (crossterm
//!   #793: `read` gives 0 or `EIO` and its loop retries) cannot hold it.
//! - the **watchdog** (Unix): `poll(2)` on the terminal with no events asked
//!   for returns only on a hang-up or an error. A closed pane or a dropped
//!   SSH connection is noticed within [`WATCH_EVERY`] whether or not a
//!   SIGHUP reaches us (a process in its own session gets none).
//! - **signals** (Unix): SIGHUP, SIGTERM and SIGINT.
//!
//! The watchdog and the signal thread also arm [`exit_within`]: the loop
//! gets [`GRACE`] to shut down in order, then the process ends anyway.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossterm::event::Event;
use tokio::sync::mpsc;

/// How often the watchdog wakes to see whether it should stop (a hang-up
/// ends its `poll` at once).
pub const WATCH_EVERY: Duration = Duration::from_millis(500);
/// How long an orderly shutdown may take before the process exits anyway.
pub const GRACE: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub enum Input {
    Event(Event),
    /// The terminal is gone (hung up, or reading it failed): nothing can be
    /// drawn or restored any more.
    Gone(String),
    /// SIGHUP, SIGTERM or SIGINT.
    Signal(&'static str),
}

/// The loop asks the reader to stay out of the terminal (an editor runs
/// on it: its keys are the editor's).
static PAUSED: AtomicBool = AtomicBool::new(false);
/// The reader saw [`PAUSED`] and is not reading: it looks at the flag
/// again before it next polls the terminal.
static PARKED: AtomicBool = AtomicBool::new(false);
/// The reader thread is running.
static READING: AtomicBool = AtomicBool::new(false);
/// How long the reader's poll waits before it looks at its flags again.
const POLL: Duration = Duration::from_millis(100);

/// Keep the reader out of the terminal, and wait (at most `max`) until it
/// is: crossterm would otherwise take the keys typed into an editor run
/// meanwhile. `false`: the reader did not stop in time (it is left paused;
/// call [`resume_reader`]).
pub async fn pause_reader(max: Duration) -> bool {
    PAUSED.store(true, Ordering::SeqCst);
    let end = Instant::now() + max;
    loop {
        if PARKED.load(Ordering::SeqCst) || !READING.load(Ordering::SeqCst) {
            return true;
        }
        if Instant::now() >= end {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Let the reader read the terminal again.
pub fn resume_reader() {
    PAUSED.store(false, Ordering::SeqCst);
}

/// The reader thread. It ends when the loop drops its receiver or reading
/// fails.
pub fn spawn_reader(tx: mpsc::Sender<Input>) -> std::io::Result<()> {
    READING.store(true, Ordering::SeqCst);
    std::thread::Builder::new()
        .name("tui-input".into())
        .spawn(move || {
            let _reading = Reading;
            loop {
                // Not parked until it has seen the flag: a pause that reads
                // PARKED after this knows the reader checks PAUSED before
                // its next poll.
                PARKED.store(false, Ordering::SeqCst);
                if PAUSED.load(Ordering::SeqCst) {
                    PARKED.store(true, Ordering::SeqCst);
                    if tx.is_closed() {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
                // A bounded poll, so the thread notices a closed channel.
                match crossterm::event::poll(POLL) {
                    Ok(false) => {
                        if tx.is_closed() {
                            return;
                        }
                    }
                    Ok(true) => match crossterm::event::read() {
                        Ok(ev) => {
                            if tx.blocking_send(Input::Event(ev)).is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            let _ = tx.blocking_send(Input::Gone(format!("reading keys: {e}")));
                            return;
                        }
                    },
                    Err(e) => {
                        let _ = tx.blocking_send(Input::Gone(format!("reading keys: {e}")));
                        return;
                    }
                }
            }
        })
        .map(|_| ())
}

/// Marks the reader gone when its thread ends, however it ends.
struct Reading;

impl Drop for Reading {
    fn drop(&mut self) {
        READING.store(false, Ordering::SeqCst);
    }
}

/// End the process `after` from now with `code`, whatever the loop is
/// doing: an orderly shutdown gets that long. Armed once; later calls do
/// nothing.
pub fn exit_within(after: Duration, code: i32) {
    static ARMED: Once = Once::new();
    ARMED.call_once(|| {
        let _ = std::thread::Builder::new()
            .name("tui-deadline".into())
            .spawn(move || {
                std::thread::sleep(after);
                tracing::warn!(code, "orderly shutdown overran its grace; exiting");
                hard_exit(code);
            });
    });
}

/// Exit now, running no destructors and flushing nothing: whatever is
/// stuck (a reader spinning on a dead terminal, a write to one) stays stuck
/// and ends with the process.
fn hard_exit(code: i32) -> ! {
    #[cfg(unix)]
    {
        // SAFETY: `_exit` ends the process; it is async-signal-safe and
        // touches no Rust state.
        unsafe { libc::_exit(code) }
    }
    #[cfg(not(unix))]
    {
        std::process::exit(code)
    }
}

#[cfg(unix)]
pub use unix::{spawn_signals, spawn_watchdog};

#[cfg(not(unix))]
pub fn spawn_watchdog(_tx: mpsc::Sender<Input>) -> std::io::Result<()> {
    Ok(())
}

#[cfg(not(unix))]
pub fn spawn_signals(_tx: mpsc::Sender<Input>) -> std::io::Result<()> {
    Ok(())
}

#[cfg(unix)]
mod unix {
    use std::os::fd::{AsRawFd, OwnedFd, RawFd};

    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use tokio::sync::mpsc;

    use super::{GRACE, Input, WATCH_EVERY, exit_within};

    /// The terminal we read: stdin when it is one, else `/dev/tty` (as
    /// crossterm chooses).
    fn tty() -> std::io::Result<(RawFd, Option<OwnedFd>)> {
        // SAFETY: isatty only inspects the descriptor.
        if unsafe { libc::isatty(libc::STDIN_FILENO) } == 1 {
            return Ok((libc::STDIN_FILENO, None));
        }
        let f = std::fs::OpenOptions::new().read(true).open("/dev/tty")?;
        let fd: OwnedFd = f.into();
        Ok((fd.as_raw_fd(), Some(fd)))
    }

    /// Hang-up or error on `fd`, waiting at most `timeout_ms`.
    fn hung_up(fd: RawFd, timeout_ms: i32) -> bool {
        let mut p = libc::pollfd {
            fd,
            // No events asked for: POLLHUP, POLLERR and POLLNVAL are always
            // reported, and pending input does not wake us.
            events: 0,
            revents: 0,
        };
        // SAFETY: one valid pollfd, for the duration of the call.
        let n = unsafe { libc::poll(&mut p, 1, timeout_ms) };
        n > 0 && p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0
    }

    pub fn spawn_watchdog(tx: mpsc::Sender<Input>) -> std::io::Result<()> {
        let (fd, owned) = tty()?;
        std::thread::Builder::new()
            .name("tui-watchdog".into())
            .spawn(move || {
                let _owned = owned;
                let ms = WATCH_EVERY.as_millis() as i32;
                loop {
                    if hung_up(fd, ms) {
                        crate::tui::runtime::term::forget();
                        crate::tui::runtime::editor::stop_open();
                        tracing::info!("the terminal hung up; exiting");
                        exit_within(GRACE, 129);
                        let _ = tx.try_send(Input::Gone("the terminal hung up".into()));
                        return;
                    }
                    if tx.is_closed() {
                        return;
                    }
                }
            })
            .map(|_| ())
    }

    pub fn spawn_signals(tx: mpsc::Sender<Input>) -> std::io::Result<()> {
        let mut signals = signal_hook::iterator::Signals::new([SIGHUP, SIGTERM, SIGINT])?;
        std::thread::Builder::new()
            .name("tui-signals".into())
            .spawn(move || {
                // The first signal asks for an orderly shutdown; the deadline
                // ends the process if that hangs. A closed channel means
                // the loop has already stopped: the deadline still holds.
                // While `$EDITOR` is open a SIGINT is a Ctrl-C typed in the
                // editor (the terminal sends it to the whole foreground
                // group): it is the editor's, as git leaves it.
                for sig in signals.forever() {
                    let (name, code) = match sig {
                        SIGHUP => ("SIGHUP", 129),
                        SIGINT => ("SIGINT", 130),
                        _ => ("SIGTERM", 143),
                    };
                    if sig == SIGINT && crate::tui::runtime::editor::is_open() {
                        tracing::info!("SIGINT while the editor is open: left to the editor");
                        continue;
                    }
                    tracing::info!(signal = name, "signal; exiting");
                    crate::tui::runtime::editor::stop_open();
                    exit_within(GRACE, code);
                    let _ = tx.try_send(Input::Signal(name));
                    return;
                }
            })
            .map(|_| ())
    }
}
