//! The runner: terminal input, hub messages and ticks under one
//! `tokio::select!`; bursts coalesced (everything pending is applied, then at
//! most one frame); a frame drawn only when its cells differ from the last
//! one, at most ~60 per second.
//!
//! Terminal input, the terminal watchdog and signals each come from a
//! thread of their own through a tokio channel ([`input`]), so a key wakes
//! this task at once and nothing here can block on a dead terminal.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crossterm::event::Event;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use tokio::sync::mpsc;

use super::input::{self, Input};
use super::{draft, editor, net, term, writer};
use crate::client::{Client, ClientError, WriteGrant, Writer};
use crate::tui::app::App;
use crate::tui::keys::{self, Action};
use crate::tui::msg::{Effect, Msg};
use crate::tui::ui::theme::Theme;
use crate::wire::Whoami;

/// How the session looks and behaves; the caller reads flags and `NO_COLOR`.
#[derive(Debug, Clone, Default)]
pub struct TuiOptions {
    /// The hub as the user named it (context or URL), shown until the hub
    /// says its own name.
    pub hub_label: String,
    pub read_only: bool,
    /// Read-only because of `--read-only` (else, when `read_only`, because
    /// of the context): what the edit keys say.
    pub read_only_flag: bool,
    pub ascii: bool,
    pub mouse: bool,
    /// `NO_COLOR` is set (the caller reads the environment).
    pub no_color: bool,
    /// Log here instead of `$XDG_STATE_HOME/macfleet/macfleet.log`.
    pub log_file: Option<PathBuf>,
    /// The context this session is on, when it came from one (shown on
    /// the top line).
    pub context: Option<String>,
    /// The contexts `:ctx` offers.
    pub contexts: Vec<String>,
    /// How `:ctx` connects to one (the caller resolves contexts).
    pub switcher: Option<Switcher>,
    /// What the Workers view says until a worker reports (the demo: its
    /// simulated fleet is starting).
    pub coming: Option<String>,
}

/// What `:ctx` needs to start a session on another context's hub.
pub struct Switched {
    pub client: Client,
    /// `None` for a session that may not write (read-only context, flag).
    pub grant: Option<WriteGrant>,
    /// What to call the hub until it says its name.
    pub label: String,
}

/// Connects to a context by name, or says why not.
pub type SwitchFn = dyn Fn(&str) -> Result<Switched, String> + Send + Sync;

/// [`SwitchFn`], shared.
#[derive(Clone)]
pub struct Switcher(pub std::sync::Arc<SwitchFn>);

impl std::fmt::Debug for Switcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Switcher")
    }
}

const FRAME_MIN: Duration = Duration::from_millis(16);
const TICK: Duration = Duration::from_secs(1);
/// Hub messages applied before the next look at the terminal, so a
/// flooding hub cannot keep a key waiting.
const DRAIN_MAX: usize = 1024;
/// How long the key reader may take to stop before an editor starts.
const EDITOR_PAUSE: Duration = Duration::from_secs(2);

/// The tick, or the test-only stretched one ([`net::QUIET_ENV`]).
pub fn tick_period() -> Duration {
    net::quiet().unwrap_or(TICK)
}

/// Run the TUI until the user quits, a signal arrives or the terminal goes
/// away. Never exits because the hub went away.
///
/// `grant` is `None` for read-only sessions: they can never hold the one
/// write path. An owner's session gets its [`Writer`] once the hub confirms
/// the token is an owner's, whenever that is (a hub down at launch
/// included). `App`, the panes and the overlays never see the writer.
///
/// The caller installs its error and panic hooks first (`main` does);
/// the terminal's own panic hook runs before them.
pub async fn run(
    client: Client,
    grant: Option<WriteGrant>,
    opts: TuiOptions,
) -> color_eyre::Result<()> {
    super::log::init(opts.log_file.clone());
    let grant = if opts.read_only { None } else { grant };
    let theme = Theme::new(opts.no_color, opts.ascii);
    let mut app = App::new(opts.hub_label.clone(), false, theme, Instant::now());
    app.set_contexts(opts.contexts.clone(), opts.context.clone());
    app.set_coming(opts.coming.clone());
    tracing::info!(hub = %opts.hub_label, may_write = grant.is_some(), "tui starting");

    let (term, _guard) = term::enter(opts.mouse)?;
    let (in_tx, in_rx) = mpsc::channel::<Input>(256);
    input::spawn_reader(in_tx.clone())?;
    if let Err(e) = input::spawn_watchdog(in_tx.clone()) {
        tracing::warn!(error = %e, "no terminal watchdog");
    }
    input::spawn_signals(in_tx)?;

    let (tx, rx) = mpsc::channel::<Msg>(4096);
    let (fx_tx, fx_rx) = mpsc::unbounded_channel::<Effect>();
    let hub_tx = tx.clone();
    let net = net::spawn(client, tx, fx_rx);

    let (w, h) = crossterm::terminal::size()?;
    let mut ui = Ui {
        app,
        term,
        mouse: opts.mouse,
        fx: fx_tx,
        grant,
        writer: None,
        hub_tx,
        editor: None,
        net,
        switcher: opts.switcher.clone(),
        read_only: opts.read_only,
        read_only_flag: opts.read_only_flag,
        label: opts.hub_label.clone(),
        context: opts.context.clone(),
        who: None,
        drafts: Vec::new(),
        drafts_of: None,
        switch_to: None,
        frame: Buffer::empty(Rect::new(0, 0, w, h)),
        last: None,
        resized: false,
        last_draw: Instant::now() - FRAME_MIN,
        started: Instant::now(),
    };
    ui.apply(Msg::Resize(w, h));
    ui.apply(tick());
    ui.say_read_only();
    let end = ui.run(in_rx, rx).await;
    // A session that ends without asking (not `q`) keeps a pending edit.
    let kept = match &end {
        End::Quit => None,
        End::Signal(s) => ui.keep_pending(s),
        End::TerminalGone(why) => ui.keep_pending(why),
        End::Failed(e) => ui.keep_pending(&e.to_string()),
    };
    drop(ui);
    if let Some(path) = kept {
        // Said where it can still be read: the screen restored first.
        drop(_guard);
        if !term::is_gone() {
            eprintln!(
                "macfleet: the pending edit is kept in {}: the next macfleet on this hub offers it",
                path.display()
            );
        }
    }
    match end {
        End::Quit => tracing::info!("tui done: quit"),
        End::Signal(s) => tracing::info!(signal = s, "tui done: signal"),
        End::TerminalGone(why) => tracing::info!(%why, "tui done: the terminal is gone"),
        End::Failed(e) => {
            tracing::warn!(error = %e, "tui failed");
            return Err(e);
        }
    }
    Ok(())
}

/// Why the loop stopped.
enum End {
    Quit,
    Signal(&'static str),
    TerminalGone(String),
    Failed(color_eyre::Report),
}

/// The loop's state: the app and what draws it.
struct Ui {
    app: App,
    term: term::Term,
    mouse: bool,
    fx: mpsc::UnboundedSender<Effect>,
    grant: Option<WriteGrant>,
    /// The one write path, once the hub said we are an owner. Held for the
    /// ladder editor's writes.
    writer: Option<Writer>,
    /// Where a write's answer goes (the hub tasks' channel).
    hub_tx: mpsc::Sender<Msg>,
    /// A document to open in `$EDITOR` before the next frame.
    editor: Option<String>,
    /// The hub tasks of this session; replaced by a context switch.
    net: net::Net,
    switcher: Option<Switcher>,
    read_only: bool,
    /// Read-only by `--read-only` (else by the context, when `read_only`).
    read_only_flag: bool,
    /// The hub as the session named it, and the context it came from.
    label: String,
    context: Option<String>,
    /// What the hub last said of us (its name and instance name a draft).
    who: Option<Whoami>,
    /// Drafts kept for this hub not offered yet (the app shows one).
    drafts: Vec<crate::tui::model::edit::KeptDraft>,
    /// The hub whose drafts were looked for (its instance, else label).
    drafts_of: Option<String>,
    /// `:ctx` chose this context: switch before the next frame.
    switch_to: Option<String>,
    frame: Buffer,
    last: Option<Buffer>,
    /// The terminal changed size since the last frame: what it shows is
    /// undefined (reflowed, cut), so the next frame clears and writes
    /// every cell, even at a size drawn before.
    resized: bool,
    last_draw: Instant,
    started: Instant,
}

impl Ui {
    async fn run(&mut self, mut input: mpsc::Receiver<Input>, mut hub: mpsc::Receiver<Msg>) -> End {
        let mut ticker = tokio::time::interval(tick_period());
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            let due = self.app.is_dirty().then(|| self.last_draw + FRAME_MIN);
            let frame_due = async {
                match due {
                    Some(t) => tokio::time::sleep_until(t.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                Some(i) = input.recv() => {
                    if let Some(end) = self.input(i) {
                        return end;
                    }
                }
                Some(m) = hub.recv() => self.apply(m),
                _ = ticker.tick() => self.apply(tick()),
                _ = frame_due => {}
            }
            // Coalesce: take what is already waiting before drawing.
            while let Ok(i) = input.try_recv() {
                if let Some(end) = self.input(i) {
                    return end;
                }
            }
            for _ in 0..DRAIN_MAX {
                match hub.try_recv() {
                    Ok(m) => self.apply(m),
                    Err(_) => break,
                }
            }
            // The editor, and again while it brings back a document that
            // is not taken (the app stops asking after MAX_REOPENS).
            for _ in 0..=crate::tui::model::edit::MAX_REOPENS + 1 {
                let Some(text) = self.editor.take() else {
                    break;
                };
                if let Some(end) = self.run_editor(text).await {
                    return end;
                }
            }
            if let Some(name) = self.switch_to.take() {
                match self.switch_context(&name) {
                    Ok(rx) => hub = rx,
                    Err(error) => self.apply(Msg::SwitchFailed { error }),
                }
            }
            if self.app.quits() {
                return End::Quit;
            }
            if let Err(e) = self.draw_if_due() {
                if term::is_gone() {
                    return End::TerminalGone(e.to_string());
                }
                return End::Failed(e.into());
            }
        }
    }

    /// Apply one message; hand its effects to the hub tasks.
    fn apply(&mut self, m: Msg) {
        let t = Instant::now();
        let full_page = matches!(&m, Msg::Workers { page, .. } if !page.delta);
        let mut kept_for_old = None;
        let whoami = if let Msg::Whoami(who) = &m {
            // Another hub answers here: the update drops what the screen
            // held of the old one, a pending edit kept first as its draft.
            kept_for_old = self.keep_for_replaced(who);
            // The writer exists only for an owner's token in a session that
            // was granted one.
            self.writer = self.grant.as_ref().and_then(|g| g.writer(who));
            self.app.set_can_write(self.writer.is_some());
            self.who = Some(who.clone());
            self.say_read_only();
            true
        } else {
            false
        };
        let effects = self.app.update(m);
        if let Some(said) = kept_for_old {
            self.app.say(said);
        }
        if whoami {
            self.look_for_drafts();
        }
        self.settle_drafts();
        for e in effects {
            match e {
                Effect::Write { text, if_match } => self.write(text, if_match, None),
                Effect::Recheck {
                    text,
                    if_match,
                    key,
                } => self.write(text, if_match, Some(key)),
                e @ (Effect::StartRollout { .. } | Effect::RolloutStep { .. }) => self.rollout(e),
                // Only a session that may write edits the document.
                Effect::OpenEditor { text } if self.writer.is_some() => self.editor = Some(text),
                Effect::OpenEditor { .. } => {}
                Effect::KeepDraft { text } => {
                    let kept = editor::keep_draft(&text);
                    self.apply(Msg::DraftKept(kept));
                }
                Effect::SwitchContext(name) => self.switch_to = Some(name),
                e => {
                    let _ = self.fx.send(e);
                }
            }
        }
        if full_page {
            tracing::info!(
                ms = t.elapsed().as_millis() as u64,
                since_start_ms = self.started.elapsed().as_millis() as u64,
                "full workers page applied"
            );
        }
    }

    /// `:ctx`: a new session on the named context's hub. The old hub tasks
    /// are stopped and their channel dropped (nothing late from the old hub
    /// reaches the new state); the state starts afresh, keeping the size,
    /// the theme and the contexts. Returns the new hub channel.
    fn switch_context(&mut self, name: &str) -> Result<mpsc::Receiver<Msg>, String> {
        let Some(sw) = &self.switcher else {
            return Err("this session was not started from a context".into());
        };
        let s = (sw.0)(name)?;
        tracing::info!(context = name, "switching context");
        let (tx, rx) = mpsc::channel::<Msg>(4096);
        let (fx_tx, fx_rx) = mpsc::unbounded_channel::<Effect>();
        self.net = net::spawn(s.client, tx.clone(), fx_rx);
        self.fx = fx_tx;
        self.hub_tx = tx;
        self.grant = if self.read_only { None } else { s.grant };
        self.writer = None;
        self.label = s.label.clone();
        self.context = Some(name.to_string());
        self.who = None;
        self.drafts.clear();
        self.drafts_of = None;
        // A document waiting for `$EDITOR` belonged to the old hub.
        self.editor = None;
        let old = &self.app;
        let mut app = App::new(s.label, false, *old.theme(), Instant::now());
        app.set_contexts(old.overlay().contexts.names.clone(), Some(name.to_string()));
        let (w, h) = old.size();
        self.app = app;
        self.apply(Msg::Resize(w, h));
        self.apply(tick());
        self.say_read_only();
        self.app.say(format!("switched to {name}"));
        Ok(rx)
    }

    /// Why this session does not write, for the edit keys to say: the
    /// flag, the context, the token's role, or that the hub has not said
    /// yet; `None` once it holds a writer.
    fn say_read_only(&mut self) {
        let why = if self.writer.is_some() {
            None
        } else if self.grant.is_none() && self.read_only_flag {
            Some("read-only: started with --read-only".to_string())
        } else if self.grant.is_none() {
            Some(match &self.context {
                Some(c) => format!("read-only: the context {c:?} is read-only"),
                None => "read-only: this session does not write".to_string(),
            })
        } else if let Some(who) = &self.who {
            Some(format!(
                "read-only: the token of {:?} has the {} role; only an owner writes the list",
                who.name, who.role
            ))
        } else {
            Some(
                "read-only until the hub says whose token this is (it has not answered yet)"
                    .to_string(),
            )
        };
        self.app.set_read_only_why(why);
    }

    /// Once the hub has said who it is (and that we may write): the
    /// drafts an earlier session on it kept, the newest offered.
    fn look_for_drafts(&mut self) {
        let Some(who) = &self.who else {
            return;
        };
        let of = who.instance.clone().unwrap_or_else(|| self.label.clone());
        if self.writer.is_none() || self.drafts_of.as_deref() == Some(of.as_str()) {
            return;
        }
        self.drafts_of = Some(of);
        self.drafts = draft::kept_for(who.instance.as_deref(), &self.label);
        // Oldest last: `pop` offers the newest first.
        self.drafts.reverse();
        if !self.drafts.is_empty() {
            tracing::info!(drafts = self.drafts.len(), "drafts kept for this hub");
        }
        self.offer_next();
    }

    fn offer_next(&mut self) {
        let next = self.drafts.pop();
        let more = self.drafts.len();
        self.app.offer_draft(next, more);
    }

    /// The offered draft was opened or dropped: its files go, the next one
    /// (if any) is offered.
    fn settle_drafts(&mut self) {
        let Some(id) = self.app.take_settled_draft() else {
            return;
        };
        if let Err(e) = draft::forget(&id) {
            tracing::warn!(error = %e, "a draft could not be removed");
            self.app.say(format!("the draft could not be removed: {e}"));
        }
        self.offer_next();
    }

    /// `whoami` names another hub (another `instance`) than the one this
    /// session held: a pending edit, begun on the old hub, is kept as its
    /// draft (the old hub's next session offers it), never dropped. What
    /// to say once the screen is the new hub's.
    fn keep_for_replaced(&self, who: &Whoami) -> Option<String> {
        let old = self.who.as_ref()?.instance.as_deref()?;
        if who.instance.as_deref().is_none_or(|new| new == old) {
            return None;
        }
        let why = format!("another hub answered at its address, not instance {old}");
        let path = self.keep_pending(&why)?;
        Some(format!(
            "another hub answers here: your pending edit was begun on the one before (instance {old}); kept as its draft ({}), offered when that hub answers again",
            path.display()
        ))
    }

    /// The session ends without asking: a pending edit is kept as a draft
    /// (the document it would write, the hub, its revision). Its path.
    fn keep_pending(&self, why: &str) -> Option<PathBuf> {
        let m = self.app.model();
        if !m.edit.is_pending() {
            return None;
        }
        let plan = m.edit.plan.as_ref()?;
        let who = self.who.as_ref();
        let saved = draft::Saved {
            hub: who.map_or_else(|| self.label.clone(), |w| w.hub.clone()),
            label: self.label.clone(),
            instance: who.and_then(|w| w.instance.clone()),
            revision: plan.base_revision().to_string(),
            base: plan.base_text().to_string(),
            document: plan
                .render()
                .unwrap_or_else(|_| plan.working_text().to_string()),
            order: plan.order().to_vec(),
            saved_at: chrono::Utc::now(),
            why: why.to_string(),
        };
        match draft::save(&saved) {
            Ok(path) => {
                tracing::info!(path = %path.display(), %why, "the pending edit is kept as a draft");
                Some(path)
            }
            Err(e) => {
                tracing::warn!(error = %e, "the pending edit could not be kept");
                None
            }
        }
    }

    /// Send exactly the reviewed document through the one `Writer`
    /// (`writer::send`: a lost answer is checked by its key). Without a
    /// writer nothing is sent.
    fn write(&self, text: String, if_match: String, key: Option<String>) {
        writer::send(
            self.writer.clone(),
            self.hub_tx.clone(),
            text,
            if_match,
            key,
        );
    }

    /// A staged rollout started, promoted or aborted through the one
    /// `Writer`; the answer comes back as `Msg::RolloutStarted` or
    /// `Msg::RolloutStepped`. Without a writer nothing is sent.
    fn rollout(&self, e: Effect) {
        let tx = self.hub_tx.clone();
        let w = self.writer.clone();
        tokio::spawn(async move {
            let no = || {
                ClientError::Forbidden(
                    "this session holds no writer (read-only, or not an owner): nothing was sent"
                        .into(),
                )
            };
            let msg = match e {
                Effect::StartRollout {
                    text,
                    if_match,
                    query,
                } => Msg::RolloutStarted(match &w {
                    Some(w) => w.start_rollout(&text, &if_match, &query).await,
                    None => Err(no()),
                }),
                Effect::RolloutStep { promote } => Msg::RolloutStepped {
                    promote,
                    result: match &w {
                        Some(w) => w.rollout_step(promote).await,
                        None => Err(no()),
                    },
                },
                _ => return,
            };
            tracing::info!("rollout step answered");
            let _ = tx.send(msg).await;
        });
    }

    /// `e`: the terminal handed to `$EDITOR` on `text` and taken back, the
    /// key reader kept out of it meanwhile (it would take the editor's
    /// keys). The editor runs on a blocking thread; hub messages wait in
    /// their channel. What it left goes to the app as `Msg::Edited`.
    async fn run_editor(&mut self, text: String) -> Option<End> {
        if !input::pause_reader(EDITOR_PAUSE).await {
            input::resume_reader();
            self.app
                .say("the terminal's key reader did not stop: the editor was not started");
            self.app.mark_dirty();
            return None;
        }
        term::leave();
        let sent = text.clone();
        let back = tokio::task::spawn_blocking(move || editor::edit(&text))
            .await
            .unwrap_or_else(|e| Err(format!("the editor's thread failed: {e}")));
        let resumed = term::resume(&mut self.term, self.mouse);
        input::resume_reader();
        if let Err(e) = resumed {
            if term::is_gone() {
                return Some(End::TerminalGone(e.to_string()));
            }
            return Some(End::Failed(e.into()));
        }
        // Everything is drawn again on the cleared screen, at the size the
        // terminal has now.
        self.last = None;
        self.app.mark_dirty();
        if let Ok((w, h)) = crossterm::terminal::size() {
            self.apply(Msg::Resize(w, h));
        }
        // The editor may have been open for minutes: the clock first, so
        // that what the app says about the document stays its while.
        self.apply(tick());
        self.apply(Msg::Edited { sent, back });
        None
    }

    /// A terminal event, a hang-up or a signal. `Some` ends the loop.
    fn input(&mut self, i: Input) -> Option<End> {
        match i {
            Input::Event(Event::Key(k)) if keys::runner_action_for(&k) == Some(Action::Suspend) => {
                if let Err(e) = term::suspend(&mut self.term, self.mouse) {
                    return Some(End::Failed(e.into()));
                }
                // Everything is drawn again on the cleared screen.
                self.last = None;
                self.app.mark_dirty();
                if let Ok((w, h)) = crossterm::terminal::size() {
                    self.apply(Msg::Resize(w, h));
                }
            }
            Input::Event(Event::Key(k)) => self.apply(Msg::Key(k)),
            Input::Event(Event::Mouse(m)) => self.apply(Msg::Mouse(m)),
            Input::Event(Event::Resize(w, h)) => {
                self.resized = true;
                self.apply(Msg::Resize(w, h));
            }
            Input::Event(_) => {}
            Input::Gone(why) => {
                term::forget();
                return Some(End::TerminalGone(why));
            }
            Input::Signal(s) => return Some(End::Signal(s)),
        }
        None
    }

    /// Settle and draw when something changed and a frame is due; write
    /// only when the cells differ from the last frame written.
    fn draw_if_due(&mut self) -> std::io::Result<()> {
        if !self.app.is_dirty() || self.last_draw.elapsed() < FRAME_MIN {
            return Ok(());
        }
        let t = Instant::now();
        self.app.settle();
        tracing::debug!(us = t.elapsed().as_micros() as u64, "settled");
        self.app.take_dirty();
        let area = Rect::new(0, 0, self.app.size().0, self.app.size().1);
        if self.frame.area != area {
            self.frame.resize(area);
            self.last = None;
        }
        if std::mem::take(&mut self.resized) {
            // Clears the screen and forgets ratatui's last frame (no
            // cursor-position query in fullscreen).
            self.term.resize(area)?;
            self.last = None;
        }
        let t = Instant::now();
        draw(&self.app, &mut self.frame);
        tracing::debug!(us = t.elapsed().as_micros() as u64, "frame drawn");
        // An idle screen writes nothing: skip frames equal to the last.
        if self.last.as_ref() != Some(&self.frame) {
            if let Some(now) = term::present(&mut self.term, &self.frame)? {
                // The terminal changed size before its event was read:
                // draw again at the size it has (the event, when it comes,
                // only repeats it).
                self.resized = true;
                self.apply(Msg::Resize(now.width, now.height));
            }
            // `draw` resets the whole buffer, so the old frame can be
            // reused as the next scratch buffer instead of cloned.
            match &mut self.last {
                Some(l) if l.area == self.frame.area => std::mem::swap(l, &mut self.frame),
                _ => self.last = Some(self.frame.clone()),
            }
            self.last_draw = Instant::now();
        }
        Ok(())
    }
}

/// Smallest window the panes are drawn in; below it the screen says so.
pub const MIN_SIZE: (u16, u16) = (20, 4);

/// The screen (`App::draw`), or a note that the window is too small for it.
pub fn draw(app: &App, buf: &mut Buffer) {
    let a = buf.area;
    if a.width < MIN_SIZE.0 || a.height < MIN_SIZE.1 {
        buf.reset();
        let text = ["window too small", "too small", "small"]
            .into_iter()
            .find(|t| t.len() <= a.width as usize)
            .unwrap_or("");
        if a.height > 0 && a.width > 0 {
            buf.set_string(
                a.x,
                a.y + a.height / 2,
                text,
                ratatui::style::Style::default(),
            );
        }
        return;
    }
    app.draw(buf);
}

fn tick() -> Msg {
    Msg::Tick {
        mono: Instant::now(),
        wall: chrono::Utc::now(),
    }
}
