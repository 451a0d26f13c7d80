//! The terminal: raw mode, alternate screen, optional mouse capture, a
//! 64 KiB buffered writer whose flushes we decide, and a restore that runs on
//! every exit, a panic included.

use std::io::{self, BufWriter, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::event::DisableMouseCapture;
use crossterm::terminal::{
    BeginSynchronizedUpdate, Clear, ClearType, EndSynchronizedUpdate, EnterAlternateScreen,
    LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use crossterm::{cursor, execute, queue};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::buffer::Buffer;

/// Whether the terminal is in our modes (so restore runs once).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Mouse capture was turned on and must be turned off.
static MOUSE: AtomicBool = AtomicBool::new(false);
/// The terminal is gone (hung up): nothing is written to it any more, and
/// restoring it is skipped, not retried.
static GONE: AtomicBool = AtomicBool::new(false);

/// The terminal hung up: stop writing to it.
pub fn forget() {
    GONE.store(true, Ordering::SeqCst);
}

/// Whether the terminal hung up.
pub fn is_gone() -> bool {
    GONE.load(Ordering::SeqCst)
}

/// Stdout behind a 64 KiB buffer. `flush` is deferred while `hold` is set,
/// so that a whole frame (sync begin, diff, cursor, sync end) leaves in one
/// `write()`.
pub struct Out {
    inner: BufWriter<Stdout>,
}

/// Set while a frame is being written: `Out::flush` waits for the frame's end.
static HOLD: AtomicBool = AtomicBool::new(false);

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if is_gone() {
            // Swallow: a frame for a closed terminal is not an error.
            return Ok(buf.len());
        }
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        if HOLD.load(Ordering::Relaxed) || is_gone() {
            Ok(())
        } else {
            self.inner.flush()
        }
    }
}

pub type Term = Terminal<CrosstermBackend<Out>>;

/// Leave our terminal modes. Safe to call more than once, from a panic hook too.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) || is_gone() {
        return;
    }
    let mut out = io::stdout();
    // A panic in the middle of a frame must not leave the screen frozen.
    let _ = queue!(out, EndSynchronizedUpdate);
    if MOUSE.swap(false, Ordering::SeqCst) {
        let _ = queue!(out, DisableMouseCapture);
    }
    let _ = execute!(out, LeaveAlternateScreen, cursor::Show);
    let _ = disable_raw_mode();
}

/// Restores the terminal when dropped.
pub struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Enter raw mode and the alternate screen; install the panic hook (after
/// whatever hook is there, e.g. color-eyre's, which it then calls).
pub fn enter(mouse: bool) -> io::Result<(Term, Guard)> {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        prev(info);
    }));
    let guard = Guard;
    modes_on(mouse)?;
    Ok((new_term()?, guard))
}

/// A terminal whose last frame is blank: the next draw writes every cell.
/// (`Terminal::clear` would ask the terminal for the cursor position and
/// wait for an answer that our input thread reads.)
fn new_term() -> io::Result<Term> {
    let backend = CrosstermBackend::new(Out {
        inner: BufWriter::with_capacity(64 * 1024, io::stdout()),
    });
    Terminal::new(backend)
}

/// Raw mode, the alternate screen, a hidden cursor, and mouse capture if
/// asked for.
fn modes_on(mouse: bool) -> io::Result<()> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = io::stdout();
    execute!(out, EnterAlternateScreen, cursor::Hide)?;
    if mouse {
        // Button events only (1000) in SGR encoding (1006). crossterm's
        // EnableMouseCapture also turns on any-motion tracking (1003), which
        // makes every mouse move SSH traffic.
        MOUSE.store(true, Ordering::SeqCst);
        out.write_all(b"\x1b[?1000h\x1b[?1006h")?;
        out.flush()?;
    }
    Ok(())
}

/// Ctrl-Z: give the terminal back to the shell and stop, as htop and vim
/// do; on `fg`, take it again. The caller redraws everything afterwards.
/// A process the shell cannot resume (an orphaned process group) is not
/// stopped: the kernel discards the signal and this returns at once.
pub fn suspend(term: &mut Term, mouse: bool) -> io::Result<()> {
    if is_gone() {
        return Ok(());
    }
    restore();
    #[cfg(unix)]
    // SAFETY: raise sends a signal to this process; SIGTSTP's default
    // action stops it until SIGCONT.
    unsafe {
        libc::raise(libc::SIGTSTP);
    }
    modes_on(mouse)?;
    execute!(io::stdout(), Clear(ClearType::All))?;
    *term = new_term()?;
    Ok(())
}

/// Draw `frame` (already rendered) inside synchronized output, in one write.
pub fn present(term: &mut Term, frame: &Buffer) -> io::Result<()> {
    HOLD.store(true, Ordering::Relaxed);
    let res = (|| {
        queue!(term.backend_mut(), BeginSynchronizedUpdate)?;
        term.draw(|f| {
            let buf = f.buffer_mut();
            if buf.area == frame.area {
                buf.content.clone_from(&frame.content);
            } else {
                // The terminal changed size under us: the next resize event
                // redraws at the right size; draw what fits now.
                buf.merge(frame);
            }
        })?;
        queue!(term.backend_mut(), EndSynchronizedUpdate)
    })();
    HOLD.store(false, Ordering::Relaxed);
    ratatui::backend::Backend::flush(term.backend_mut())?;
    res
}
