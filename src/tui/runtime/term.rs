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
use ratatui::layout::Rect;

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
    resume(term, mouse)
}

/// Give the terminal back (modes off, main screen), as for Ctrl-Z, so that
/// another program (`$EDITOR`) can use it; [`resume`] takes it again.
pub fn leave() {
    restore();
}

/// Take the terminal again after [`leave`] or a stop: our modes, a cleared
/// screen, and a fresh `Terminal` whose next draw writes every cell.
pub fn resume(term: &mut Term, mouse: bool) -> io::Result<()> {
    if is_gone() {
        return Ok(());
    }
    modes_on(mouse)?;
    execute!(io::stdout(), Clear(ClearType::All))?;
    *term = new_term()?;
    Ok(())
}

/// Draw `frame` (already rendered) inside synchronized output, in one write.
/// `Some(area)` when the terminal had already changed size to `area`: only
/// the cells that fit were drawn, and the caller draws again at that size.
pub fn present(term: &mut Term, frame: &Buffer) -> io::Result<Option<Rect>> {
    HOLD.store(true, Ordering::Relaxed);
    let res = (|| {
        queue!(term.backend_mut(), BeginSynchronizedUpdate)?;
        let stale = blit(term, frame)?;
        queue!(term.backend_mut(), EndSynchronizedUpdate)?;
        Ok(stale)
    })();
    HOLD.store(false, Ordering::Relaxed);
    ratatui::backend::Backend::flush(term.backend_mut())?;
    res
}

/// Hand `frame` to ratatui, which writes the cells that differ from the
/// last frame. ratatui sizes its own buffer to the terminal as it is now
/// (a resize may have landed since `frame` was rendered, its event not yet
/// read): that buffer's area must stay as ratatui made it (its diff panics
/// on buffers of different widths, which a resize storm once reached), so
/// only the cells inside both are copied, and the new area is returned.
pub fn blit<B: ratatui::backend::Backend>(
    term: &mut Terminal<B>,
    frame: &Buffer,
) -> Result<Option<Rect>, B::Error> {
    let mut stale = None;
    term.draw(|f| {
        let buf = f.buffer_mut();
        if buf.area == frame.area {
            buf.content.clone_from(&frame.content);
            return;
        }
        stale = Some(buf.area);
        let both = buf.area.intersection(frame.area);
        for y in both.top()..both.bottom() {
            for x in both.left()..both.right() {
                if let (Some(to), Some(from)) = (buf.cell_mut((x, y)), frame.cell((x, y))) {
                    to.clone_from(from);
                }
            }
        }
    })?;
    Ok(stale)
}

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;

    use super::*;

    fn frame(w: u16, h: u16, text: &str) -> Buffer {
        let mut b = Buffer::empty(Rect::new(0, 0, w, h));
        b.set_string(0, 0, text, ratatui::style::Style::default());
        b
    }

    /// A resize storm: the terminal changes size between rendering a frame
    /// and writing it. ratatui's diff panicked on that (buffers of
    /// different widths) and ended the TUI.
    #[test]
    fn a_frame_for_an_old_size_draws_what_fits_and_names_the_new_size() {
        let mut term = Terminal::new(TestBackend::new(10, 3)).expect("terminal");
        assert_eq!(
            blit(&mut term, &frame(10, 3, "too small")).expect("blit"),
            None
        );
        for (w, h) in [(80, 24), (2, 40), (200, 1), (1, 1), (10, 3)] {
            term.backend_mut().resize(w, h);
            let old = frame(10, 3, "too small");
            let now = blit(&mut term, &old).expect("blit");
            let area = Rect::new(0, 0, w, h);
            if (w, h) == (10, 3) {
                assert_eq!(now, None, "same size, drawn as is");
            } else {
                assert_eq!(now, Some(area), "the new size is reported");
            }
            // What fits of the old frame is on the screen.
            let shown = term.backend().buffer().clone();
            let row: String = (0..w.min(9))
                .filter_map(|x| shown.cell((x, 0)).map(|c| c.symbol().to_string()))
                .collect();
            assert_eq!(row, "too small"[..w.min(9) as usize], "{w}x{h}");
        }
    }
}
