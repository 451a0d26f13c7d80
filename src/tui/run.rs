//! The runner: terminal events, hub messages and ticks under one
//! `tokio::select!`; bursts coalesced (everything pending is applied, then at
//! most one frame); a frame drawn only when its cells differ from the last
//! one, at most ~60 per second.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::{Event, EventStream};
use futures::{FutureExt, StreamExt};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use tokio::sync::mpsc;

use super::app::App;
use super::msg::{Effect, Msg};
use super::theme::Theme;
use super::{net, term, views};
use crate::client::{Client, Writer};

/// How the session looks and behaves; the caller reads flags and `NO_COLOR`.
#[derive(Debug, Clone, Default)]
pub struct TuiOptions {
    /// The hub as the user named it (context or URL), shown until the hub
    /// says its own name.
    pub hub_label: String,
    pub read_only: bool,
    pub ascii: bool,
    pub mouse: bool,
    /// `NO_COLOR` is set (the caller reads the environment).
    pub no_color: bool,
    /// Log here instead of `$XDG_STATE_HOME/macfleet/macfleet.log`.
    pub log_file: Option<PathBuf>,
}

const FRAME_MIN: Duration = Duration::from_millis(16);
const TICK: Duration = Duration::from_secs(1);

/// `$XDG_STATE_HOME/macfleet/macfleet.log`, `~/.local/state/...` by default.
pub fn default_log_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local").join("state"))
        })?;
    Some(base.join("macfleet").join("macfleet.log"))
}

/// Send tracing to a file, never the screen. Does nothing when a subscriber
/// is already installed or the file cannot be opened.
fn init_logging(path: Option<PathBuf>) {
    let Some(path) = path.or_else(default_log_file) else {
        return;
    };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let Ok(file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MACFLEET_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_writer(std::sync::Mutex::new(file))
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init();
}

/// Run the TUI until the user quits. Never exits because the hub went away.
/// `writer` is `None` for read-only sessions; the views never see it.
pub async fn run(
    client: Client,
    writer: Option<Writer>,
    opts: TuiOptions,
) -> color_eyre::Result<()> {
    crate::cli::install_error_hooks();
    init_logging(opts.log_file.clone());
    // Ladder editing arrives in a later version; until then the writer is
    // only held, and a read-only session holds none.
    let writer = if opts.read_only { None } else { writer };
    let theme = Theme::new(opts.no_color, opts.ascii);
    let mut app = App::new(
        opts.hub_label.clone(),
        writer.is_some(),
        theme,
        Instant::now(),
    );
    tracing::info!(hub = %opts.hub_label, owner = writer.is_some(), "tui starting");

    let (mut term, _guard) = term::enter(opts.mouse)?;
    let (tx, mut rx) = mpsc::channel::<Msg>(4096);
    let (fx_tx, fx_rx) = mpsc::unbounded_channel::<Effect>();
    let _net = net::spawn(client, tx, fx_rx);

    let (w, h) = crossterm::terminal::size()?;
    app.update(Msg::Resize(w, h));
    app.update(tick());

    let mut events = EventStream::new();
    let mut ticker = tokio::time::interval(TICK);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    #[cfg(unix)]
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    #[cfg(unix)]
    let mut sighup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;

    let mut frame = Buffer::empty(Rect::new(0, 0, w, h));
    let mut last: Option<Buffer> = None;
    let mut last_draw = Instant::now() - FRAME_MIN;

    let started = Instant::now();
    let mut apply = |app: &mut App, m: Msg| {
        let t = Instant::now();
        let full_page = matches!(&m, Msg::Workers { page, .. } if !page.delta);
        for e in app.update(m) {
            let _ = fx_tx.send(e);
        }
        if full_page {
            tracing::info!(
                ms = t.elapsed().as_millis() as u64,
                since_start_ms = started.elapsed().as_millis() as u64,
                "full workers page applied"
            );
        }
    };

    loop {
        let due = app.dirty.then(|| last_draw + FRAME_MIN);
        let sleep = async {
            match due {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending().await,
            }
        };
        #[cfg(unix)]
        let signal = async {
            tokio::select! {
                _ = sigterm.recv() => {},
                _ = sighup.recv() => {},
            }
        };
        #[cfg(not(unix))]
        let signal = std::future::pending::<()>();
        tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(ev)) => term_event(&mut app, ev, &mut apply),
                Some(Err(e)) => return Err(e.into()),
                None => break,
            },
            Some(m) = rx.recv() => apply(&mut app, m),
            _ = ticker.tick() => apply(&mut app, tick()),
            _ = sleep => {},
            _ = signal => break,
        }
        // Coalesce: take everything already waiting before drawing.
        while let Ok(m) = rx.try_recv() {
            apply(&mut app, m);
        }
        while let Some(Some(Ok(ev))) = events.next().now_or_never() {
            term_event(&mut app, ev, &mut apply);
        }
        if app.quit {
            break;
        }
        if app.dirty && last_draw.elapsed() >= FRAME_MIN {
            let t = Instant::now();
            app.settle();
            tracing::debug!(us = t.elapsed().as_micros() as u64, "settled");
            app.dirty = false;
            let area = Rect::new(0, 0, app.size.0, app.size.1);
            if frame.area != area {
                frame.resize(area);
                last = None;
            }
            let t = Instant::now();
            views::draw(&app, &mut frame);
            tracing::debug!(us = t.elapsed().as_micros() as u64, "frame drawn");
            // An idle screen writes nothing: skip frames equal to the last.
            if last.as_ref() != Some(&frame) {
                term::present(&mut term, &frame)?;
                // `draw` resets the whole buffer, so the old frame can be
                // reused as the next scratch buffer instead of cloned.
                match &mut last {
                    Some(l) if l.area == frame.area => std::mem::swap(l, &mut frame),
                    _ => last = Some(frame.clone()),
                }
                last_draw = Instant::now();
            }
        }
    }
    drop(term);
    tracing::info!("tui done");
    Ok(())
}

fn tick() -> Msg {
    Msg::Tick {
        mono: Instant::now(),
        wall: chrono::Utc::now(),
    }
}

fn term_event(app: &mut App, ev: Event, apply: &mut impl FnMut(&mut App, Msg)) {
    match ev {
        Event::Key(k) => apply(app, Msg::Key(k)),
        Event::Mouse(m) => apply(app, Msg::Mouse(m)),
        Event::Resize(w, h) => apply(app, Msg::Resize(w, h)),
        _ => {}
    }
}
