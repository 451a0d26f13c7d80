//! The TUI's state and its one step: `update(&mut App, Msg) -> Vec<Effect>`.
//!
//! `App` is a composition with private fields: the model (what the hub
//! said, and the owner's pending edit), the panes (one per view, each
//! owning its rows, sort and filter), what is open over them (overlays),
//! and the status line. `update` is pure: it changes the state and may ask
//! for hub work ([`Effect`]); it routes keys to the overlay or pane that
//! takes them and runs what they ask of it ([`Ask`]). `settle` recomputes
//! derived rows once per burst of messages, before a frame is drawn, never
//! while drawing. This is the only `impl App`.

use std::time::{Duration, Instant};

use crossterm::event::{KeyEvent, KeyEventKind, MouseEventKind};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::ids::FAILOVERS;
use super::keys::{self, Action, Hints, Move};
use super::model::Model;
use super::model::apply::Wants;
use super::model::conn::Stream;
use super::model::edit::KeptDraft;
use super::model::staged::RolloutFeed;
use super::msg::{Effect, Msg};
use super::overlays::edit::Mode;
use super::overlays::{self, Ask, Ctx, Frame, Open, Overlays, Yield};
pub use super::pane::{Changes, Cx, Detail, Filter, Handled, Pane, PaneId};
use super::panes;
use super::ui::theme::Theme;
use super::ui::{self, geom, header};

/// How long a status-line message stays.
const STATUS_TTL: Duration = Duration::from_secs(5);

/// A message on the status line, and when it was said.
#[derive(Debug, Clone)]
pub struct Status {
    pub text: String,
    pub at: Instant,
}

pub struct App {
    model: Model,
    /// Every view, in tab order, and the one on screen.
    panes: Vec<Box<dyn Pane>>,
    current: usize,
    /// What opens over the pane, top first: the command line, the edit
    /// screens, the help, a detail.
    overlay: Overlays,
    status: Option<Status>,
    theme: Theme,
    /// The terminal's size (width, height).
    size: (u16, u16),
    /// What changed in the model since the last settle.
    changes: Changes,
    /// Something visible may have changed since the last frame.
    dirty: bool,
    quit: bool,
}

impl App {
    pub fn new(hub_label: impl Into<String>, can_write: bool, theme: Theme, now: Instant) -> App {
        let panes = panes::all();
        let current = panes
            .iter()
            .position(|p| p.id() == panes::FIRST)
            .unwrap_or(0);
        App {
            model: Model::new(hub_label.into(), can_write, now),
            panes,
            current,
            overlay: Overlays::default(),
            status: None,
            theme,
            size: (80, 24),
            changes: Changes::default(),
            dirty: true,
            quit: false,
        }
    }

    // What the runner and tests read and set.

    /// What the TUI knows (read-only).
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// What is open over the pane (read-only).
    pub fn overlay(&self) -> Open<'_> {
        self.overlay.open()
    }

    /// The screen the owner's edit is on (the Ladder, the add prompt, the
    /// diff, the conflict, the quit question).
    pub fn edit_mode(&self) -> &Mode {
        self.overlay.edit.mode()
    }

    pub fn theme(&self) -> &Theme {
        &self.theme
    }

    pub fn size(&self) -> (u16, u16) {
        self.size
    }

    pub fn status(&self) -> Option<&Status> {
        self.status.as_ref()
    }

    /// The user asked to quit.
    pub fn quits(&self) -> bool {
        self.quit
    }

    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// The model changed since the panes were last settled: the next
    /// frame (or key) settles them.
    pub fn is_unsettled(&self) -> bool {
        self.changes.any()
    }

    /// Something visible may have changed (the runner's own events).
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// A frame is being drawn: whether one was due.
    pub fn take_dirty(&mut self) -> bool {
        std::mem::take(&mut self.dirty)
    }

    /// Whether the session holds a writer (the runner knows).
    pub fn set_can_write(&mut self, can: bool) {
        self.model.can_write = can;
    }

    /// Why the session does not write, for the edit keys to say
    /// (`read-only: started with --read-only`); the runner knows.
    pub fn set_read_only_why(&mut self, why: Option<String>) {
        self.overlay.edit.set_read_only_why(why);
    }

    /// Offer a draft an earlier session on this hub kept (`None`: none
    /// left), with how many more wait behind it.
    pub fn offer_draft(&mut self, d: Option<KeptDraft>, more: usize) {
        self.overlay.edit.offer_draft(d, more);
        self.dirty = true;
    }

    /// The draft on offer.
    pub fn offered_draft(&self) -> Option<&KeptDraft> {
        self.overlay.edit.offered_draft()
    }

    /// The draft opened or dropped since last asked: the runner removes
    /// its files.
    pub fn take_settled_draft(&mut self) -> Option<String> {
        self.overlay.edit.take_settled_draft()
    }

    /// What the Workers view says until a worker reports (the demo: its
    /// fleet is starting), instead of that none has reported yet.
    pub fn set_coming(&mut self, text: Option<String>) {
        self.model.coming = text;
    }

    /// The contexts `:ctx` offers, and the one the session is on.
    pub fn set_contexts(&mut self, names: Vec<String>, current: Option<String>) {
        self.overlay.command.set_contexts(names, current);
    }

    /// What a frame is drawn from.
    pub fn cx(&self) -> Cx<'_> {
        Cx::new(&self.model, &self.theme)
    }

    /// The pane on screen, by name.
    pub fn view(&self) -> &'static str {
        self.pane().name()
    }

    /// The pane on screen.
    pub fn pane(&self) -> &dyn Pane {
        self.panes[self.current].as_ref()
    }

    fn pane_mut(&mut self) -> &mut dyn Pane {
        self.panes[self.current].as_mut()
    }

    /// Every pane, in tab order.
    pub fn panes(&self) -> impl Iterator<Item = &dyn Pane> {
        self.panes.iter().map(|p| p.as_ref())
    }

    /// A pane as its own type (tests read its rows through this).
    pub fn pane_as<P: Pane>(&self) -> &P {
        self.panes
            .iter()
            .find_map(|p| p.as_ref().downcast::<P>())
            .expect("every pane type is in panes::all")
    }

    fn names(&self) -> Vec<&'static str> {
        self.panes.iter().map(|p| p.name()).collect()
    }

    /// The filter of the pane `name`.
    pub fn filter(&self, name: &str) -> &Filter {
        let p = self
            .panes
            .iter()
            .find(|p| p.name() == name)
            .unwrap_or(&self.panes[self.current]);
        p.list().filter()
    }

    /// The current pane's table (data rows, below the column header).
    pub fn table_area(&self) -> Rect {
        let body = geom::areas(geom::screen(self.size)).body;
        let above = self.pane().above(&self.model, body.height);
        geom::table_in(body, above)
    }

    /// Rows the current pane's table shows at the current size.
    pub fn body_rows(&self) -> usize {
        self.table_area().height as usize
    }

    /// A status-line message, kept with its time for `:messages`.
    pub fn say(&mut self, text: impl Into<String>) {
        let text = text.into();
        self.model.said(&text);
        self.status = Some(Status {
            text,
            at: self.model.mono_now,
        });
    }

    /// Recompute derived rows from what changed. Cheap when nothing did.
    pub fn settle(&mut self) {
        // States are the hub's (pages and `state` events): the TUI never
        // ages workers into stale or lost on its own clock, so an
        // unreachable hub leaves its last judgement standing.
        let ch = std::mem::take(&mut self.changes);
        let marked = self.panes.iter().any(|p| p.list().is_marked());
        if !(ch.any() || marked) {
            return;
        }
        let now = self.model.now();
        self.model.log.prune(now);
        let mono = self.model.mono_now;
        let mut any = false;
        for (i, p) in self.panes.iter_mut().enumerate() {
            any |= p.settle(&self.model, &ch, i == self.current, mono);
        }
        if any {
            // The projection and the rollout's counts follow the fleet
            // and the edit.
            self.model.refresh_projection();
        }
        self.rescroll();
        self.dirty = true;
    }

    fn rescroll(&mut self) {
        let rows = self.body_rows();
        self.pane_mut().list_mut().scroll(rows);
    }

    /// The current pane's filter text or sort changed: recompute its rows.
    fn reorder(&mut self) {
        self.pane_mut().list_mut().mark();
        self.settle();
        self.rescroll();
    }

    /// Run what an overlay asked for, in order.
    fn run(&mut self, asks: Vec<Ask>) {
        for a in asks {
            match a {
                Ask::Say(t) => self.say(t),
                Ask::Reorder => self.reorder(),
                Ask::Select(d) => {
                    let m = &self.model;
                    if self.panes[self.current].select(m, &d) {
                        self.rescroll();
                    }
                }
                Ask::Show(name) => {
                    if let Some(i) = self.index_of(name) {
                        self.switch(i);
                    }
                }
                Ask::Land(name) => {
                    if let Some(i) = self.index_of(name) {
                        self.overlay.give_way(Yield::Land);
                        self.current = i;
                    }
                }
                Ask::Open(d) => self.overlay.detail.open(Some(d)),
                Ask::Quit => self.ask_quit(),
            }
        }
    }

    fn index_of(&self, id: PaneId) -> Option<usize> {
        self.panes.iter().position(|p| p.id() == id)
    }

    /// The one step: a key, the mouse, a resize or a tick for the app; a
    /// hub answer for the model to apply (`Model::whoami`, `workers`, …,
    /// in `model/apply.rs`), or for the edit overlay when it answers the
    /// edit; then what that asks for, and one frame marked due.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        let mut fx = Vec::new();
        let mut asks = Vec::new();
        let paging = msg.pages();
        let (m, ch) = (&mut self.model, &mut self.changes);
        let edit = &mut self.overlay.edit;
        let wants = match msg {
            Msg::Key(k) => {
                // Keys act on what is on screen: bring the indices up to date.
                self.settle();
                self.key(k, &mut fx);
                None
            }
            Msg::Mouse(e) => {
                self.settle();
                self.mouse(e);
                None
            }
            Msg::Resize(w, h) => {
                self.size = (w, h);
                self.rescroll();
                Some(Wants::default())
            }
            Msg::Tick { mono, wall } => {
                self.tick(mono, wall);
                Some(Wants::default())
            }
            Msg::Whoami(w) => Some(m.whoami(w, ch)),
            Msg::Health(h) => Some(m.health(h)),
            Msg::Workers { page, at } => Some(m.workers(page, at, ch)),
            Msg::Summary {
                summary,
                at,
                polled,
            } => Some(m.summary(*summary, at, polled, ch)),
            Msg::Window {
                ask,
                page,
                at,
                instance,
            } => Some(m.window(ask, page, at, instance, ch)),
            Msg::Failovers { page, fresh } => Some(m.failovers(page, fresh, ch)),
            Msg::Failover(r) => Some(m.failover(r, ch)),
            Msg::Recoveries { page, fresh } => Some(m.recoveries(page, fresh, ch)),
            Msg::Recovery(r) => Some(m.recovery(r, ch)),
            Msg::WorkerEvents(views) => Some(m.worker_events(views, ch)),
            Msg::Config(ev) => {
                edit.heard(&ev.revision, &ev.by);
                let w = m.config_event(ev, ch);
                if w.config {
                    edit.forget_unchanged(m);
                }
                Some(w)
            }
            Msg::History(h) => Some(m.history(h, ch)),
            Msg::Rollout { feed, at } => Some(m.rollout(feed, at, ch)),
            Msg::StreamUp => Some(m.stream(Stream::Up)),
            Msg::StreamDown { error, retry_in } => Some(m.stream(Stream::Down { error, retry_in })),
            Msg::Reset => Some(m.reset()),
            Msg::FetchFailed { what, error, at } => Some(m.fetch_failed(what, at, Some(error))),
            Msg::OutOfBounds { what, error, at } => Some(m.out_of_bounds(what, at, error)),
            Msg::Refused { what, at } => Some(m.fetch_failed(what, at, None)),
            Msg::Forbidden { what, at } => Some(m.refused_role(what, at)),
            msg @ (Msg::Agents { .. }
            | Msg::DiskInvalid(_)
            | Msg::Edited { .. }
            | Msg::DraftKept(_)
            | Msg::Written(_)
            | Msg::WriteLost { .. }
            | Msg::WriteChecked(_)
            | Msg::WriteUnknown { .. }
            | Msg::RolloutStarted(_)
            | Msg::RolloutStepped { .. }) => {
                self.edit_answer(msg, &mut fx, &mut asks);
                Some(Wants::default())
            }
            Msg::SwitchFailed { error } => Some(Wants {
                say: Some(overlays::command::switch_failed(
                    &mut self.overlay.command,
                    &error,
                )),
                ..Wants::default()
            }),
            Msg::HubProblem(p) => Some(Wants {
                say: Some(format!(
                    "hub: {}",
                    crate::textsafe::for_terminal(&p.message)
                )),
                ..Wants::default()
            }),
            Msg::Refetched { ok } => Some(Wants {
                say: Some(
                    if ok {
                        "refetch finished"
                    } else {
                        "refetch failed; retrying"
                    }
                    .into(),
                ),
                ..Wants::default()
            }),
        };
        if let Some(w) = wants {
            self.want(w, &mut fx, &mut asks);
        }
        self.run(asks);
        if paging && self.model.large.is_some() {
            // Large-fleet mode: the rows the cursor needs are asked as
            // soon as it needs them (a settle is cheap: the fleet held is
            // a window).
            self.settle();
            self.ask_windows(&mut fx);
        }
        fx
    }

    /// What answers the edit: the edit overlay applies it (the document,
    /// `$EDITOR`'s draft, the write's answer), the Ladder follows.
    fn edit_answer(&mut self, msg: Msg, fx: &mut Vec<Effect>, asks: &mut Vec<Ask>) {
        let (m, edit) = (&mut self.model, &mut self.overlay.edit);
        let ch = &mut self.changes;
        match msg {
            Msg::Agents {
                revision,
                agents,
                text,
            } => {
                // A write whose outcome is unknown is asked by its key
                // before the edit meets this revision.
                edit.recheck_lost(m, fx, asks);
                m.document(revision.clone(), agents, text.clone());
                edit.document(m, &text, &revision, asks);
                ch.agents = true;
            }
            Msg::DiskInvalid(d) => {
                edit.on_disk(m, d, asks);
                ch.agents = true;
            }
            Msg::Edited { sent, back } => {
                overlays::edit::edited(m, sent, back, fx, asks);
                ch.agents = true;
            }
            Msg::DraftKept(kept) => {
                overlays::edit::draft_kept(kept, asks);
            }
            Msg::Written(r) => {
                edit.answer(m, r, fx, asks);
                ch.agents = true;
            }
            Msg::WriteLost { why } => edit.write_lost(m, why, asks),
            Msg::WriteChecked(r) => {
                edit.write_checked(m, r, fx, asks);
                ch.agents = true;
            }
            Msg::WriteUnknown {
                text,
                if_match,
                key,
                error,
            } => {
                let lost = crate::tui::model::edit::LostWrite {
                    text,
                    if_match,
                    key,
                };
                edit.write_unknown(m, lost, error, asks);
                ch.agents = true;
            }
            Msg::RolloutStarted(r) => {
                if let Ok(v) = &r {
                    let feed = RolloutFeed::Current(Some(Box::new(v.clone())));
                    let _ = m.rollout(feed, m.mono_now, ch);
                }
                edit.rollout_started(m, r, fx, asks);
                ch.agents = true;
            }
            Msg::RolloutStepped { promote, result } => {
                if let Ok(v) = &result {
                    let feed = RolloutFeed::Current(Some(Box::new(v.clone())));
                    let _ = m.rollout(feed, m.mono_now, ch);
                }
                overlays::staged::stepped(promote, &result, fx, asks);
                ch.agents = true;
            }
            _ => {}
        }
    }

    /// What applying a message asks for, as effects and asks; the frame
    /// is due unless nothing visible changed.
    fn want(&mut self, w: Wants, fx: &mut Vec<Effect>, asks: &mut Vec<Ask>) {
        if w.config {
            fx.push(Effect::FetchConfig);
        }
        if w.history {
            fx.push(Effect::FetchHistory);
        }
        if w.refetch {
            fx.push(Effect::Refetch);
        }
        if let Some(t) = w.say {
            asks.push(Ask::Say(t));
        }
        self.dirty |= !w.unchanged;
    }

    /// A tick: the clock moves, an old status message goes, the panes that
    /// wait for time are told. Ages may have moved; the runner compares
    /// the rendered frame with the last one and writes nothing if equal.
    fn tick(&mut self, mono: Instant, wall: chrono::DateTime<chrono::Utc>) {
        self.model.tick(mono, wall);
        let now = self.model.mono_now;
        if self
            .status
            .as_ref()
            .is_some_and(|s| now.saturating_duration_since(s.at) >= STATUS_TTL)
        {
            self.status = None;
        }
        for p in &mut self.panes {
            p.tick();
        }
    }

    /// The windows the panes need and do not hold, as effects.
    fn ask_windows(&mut self, fx: &mut Vec<Effect>) {
        for p in &mut self.panes {
            if let Some(a) = p.ask_window(&mut self.model) {
                fx.push(Effect::Window(a));
            }
        }
    }

    /// A key: the filter prompt while it is open; else the overlays, top
    /// first, then the pane, then the keys every pane shares.
    fn key(&mut self, k: KeyEvent, fx: &mut Vec<Effect>) {
        if k.kind == KeyEventKind::Release {
            return;
        }
        if self.pane().list().filter().editing {
            self.filter_key(k);
            return;
        }
        let action = keys::action_for(&k);
        let mut asks = Vec::new();
        if self.overlaid(|o, cx| o.key(&k, action, cx), fx, &mut asks) {
            self.dirty = true;
            self.run(asks);
            return;
        }
        let Some(action) = action else {
            return;
        };
        self.dirty = true;
        if !self.pane_key(action, fx) {
            self.shared_key(action, fx);
        }
    }

    /// Hand the overlays a key (or an action), with what they act on.
    fn overlaid(
        &mut self,
        f: impl FnOnce(&mut Overlays, &mut Ctx) -> bool,
        fx: &mut Vec<Effect>,
        asks: &mut Vec<Ask>,
    ) -> bool {
        let rows = self.body_rows();
        let page = self.size.1.saturating_sub(8).max(1) as usize;
        let names = self.names();
        let mut cx = Ctx {
            model: &mut self.model,
            pane: self.panes[self.current].as_mut(),
            names: &names,
            first: panes::FIRST.name(),
            rows,
            page,
            fx,
            asks,
        };
        f(&mut self.overlay, &mut cx)
    }

    /// A key of the pane on screen: its own actions (the Ladder's edit
    /// keys and drill, History's revert), moving its cursor. False when it
    /// is not the pane's.
    fn pane_key(&mut self, action: Action, fx: &mut Vec<Effect>) -> bool {
        if action.is_edit() && !self.model.can_write {
            let why = self.overlay.edit.read_only_why().to_string();
            self.say(why);
            return true;
        }
        let i = self.current;
        let over = self.overlay.shows();
        match self.panes[i].handle(action, &mut self.model, over, &self.theme) {
            Handled::No => {}
            Handled::Yes => return true,
            Handled::Open(d) => {
                self.overlay.detail.open(Some(d));
                return true;
            }
            Handled::Say(text) => {
                self.say(text);
                return true;
            }
            Handled::Edit(a, sel) => {
                let mut asks = Vec::new();
                self.overlaid(
                    |o, cx| {
                        o.edit.edit_key(a, sel, cx);
                        true
                    },
                    fx,
                    &mut asks,
                );
                self.run(asks);
                return true;
            }
        }
        if action == Action::Drill {
            self.say("x drills on the Ladder (1): it marks the selected rung down");
            return true;
        }
        if let Some(m) = action.movement() {
            self.nav(m);
            return true;
        }
        // Another pane's edit key does nothing here.
        action.is_edit()
    }

    /// `q`, C-c, or a prompt's C-c: quit, or with an edit pending ask
    /// first (`y` quits, any other key stays), whichever key it was: no
    /// key drops an edit unasked. Asked again (`y`, C-c at the question),
    /// it quits.
    fn ask_quit(&mut self) {
        if self.overlay.edit.ask_quit(&self.model) {
            self.quit = true;
            return;
        }
        // The question holds the status line and the keys: nothing typed
        // goes to a prompt under it.
        self.overlay.give_way(Yield::Question);
        self.pane_mut().list_mut().filter_mut().editing = false;
    }

    /// The keys every pane shares (the key table's `Global` scope).
    fn shared_key(&mut self, action: Action, fx: &mut Vec<Effect>) {
        let mut asks = Vec::new();
        if self.overlaid(|o, cx| o.open_on(action, cx), fx, &mut asks) {
            self.run(asks);
            return;
        }
        match action {
            Action::Quit => self.ask_quit(),
            Action::ShowView(i) if i < self.panes.len() => self.switch(i),
            Action::NextView => self.switch((self.current + 1) % self.panes.len()),
            Action::PrevView => {
                self.switch((self.current + self.panes.len() - 1) % self.panes.len())
            }
            Action::Filter => {
                self.overlay.give_way(Yield::Filter);
                self.pane_mut().list_mut().filter_mut().editing = true;
            }
            Action::Sort => {
                self.pane_mut().list_mut().next_sort();
                self.reorder();
            }
            Action::SortReverse => {
                self.pane_mut().list_mut().flip();
                self.reorder();
            }
            Action::Back if !self.pane().list().filter().text.is_empty() => {
                let f = self.pane_mut().list_mut().filter_mut();
                f.recall = std::mem::take(&mut f.text);
                self.reorder();
            }
            Action::WorkerFailovers => self.worker_failovers(),
            Action::Refetch => {
                self.say("refetching");
                fx.push(Effect::Refetch);
            }
            _ => {}
        }
    }

    /// A key in the filter prompt: the prompt's bindings (see
    /// [`keys::prompt_keys`]), else a character is text.
    fn filter_key(&mut self, k: KeyEvent) {
        self.dirty = true;
        let action = keys::prompt_action_for(&k);
        let f = self.pane_mut().list_mut().filter_mut();
        match (action, k.code) {
            (Some(Action::Quit), _) => {
                self.ask_quit();
                return;
            }
            (Some(Action::PromptEraseAll), _) => f.text.clear(),
            (Some(Action::PromptErase), _) => {
                f.text.pop();
            }
            (Some(Action::PromptKeep), _) => {
                f.editing = false;
                return;
            }
            (Some(Action::PromptClear), _) => {
                f.editing = false;
                if !f.text.is_empty() {
                    f.recall = std::mem::take(&mut f.text);
                }
            }
            (Some(Action::PromptRecall), _) => {
                if f.text.is_empty() {
                    f.text = f.recall.clone();
                }
            }
            (None, _) if keys::text_char(&k).is_some() => {
                f.text.extend(keys::text_char(&k));
            }
            _ => return,
        }
        self.reorder();
    }

    /// Show the `i`th pane.
    fn switch(&mut self, i: usize) {
        self.overlay.give_way(Yield::Switch);
        if i != self.current {
            self.panes[i].shown();
        }
        self.current = i;
        self.rescroll();
    }

    fn nav(&mut self, m: Move) {
        let rows = self.body_rows();
        self.pane_mut().list_mut().nav(m, rows);
    }

    /// The worker in view: the one whose detail is open (a failover's
    /// detail is its worker's too), else the selected worker or failover.
    fn worker_in_view(&self) -> Option<String> {
        match self
            .overlay
            .shows()
            .cloned()
            .or_else(|| self.pane().selected(&self.model))?
        {
            Detail::Worker(id) => Some(id),
            Detail::Failover(seq) => self.model.log.get(seq).map(|r| r.worker.to_string()),
            Detail::Recovery(seq) => self.model.recs.get(seq).map(|r| r.worker.to_string()),
            Detail::Agent(_)
            | Detail::Revision(_)
            | Detail::Rollout
            | Detail::Staged
            | Detail::Row(..) => None,
        }
    }

    /// `f`: the Failovers pane, filtered to the worker in view.
    fn worker_failovers(&mut self) {
        let Some(id) = self.worker_in_view() else {
            self.say("no worker here: f works on a worker or a failover");
            return;
        };
        let Some(i) = self.index_of(FAILOVERS) else {
            return;
        };
        self.switch(i);
        let f = self.pane_mut().list_mut().filter_mut();
        // The whole id: `mac-1` is not `mac-12`.
        f.text = format!("worker:{id}$");
        f.editing = false;
        self.reorder();
    }

    fn mouse(&mut self, e: crossterm::event::MouseEvent) {
        match e.kind {
            MouseEventKind::ScrollDown => self.nav(Move::Down),
            MouseEventKind::ScrollUp => self.nav(Move::Up),
            MouseEventKind::Down(crossterm::event::MouseButton::Left) => {
                if self.overlay.holds_clicks() {
                    return;
                }
                let t = self.table_area();
                if let Some(row) = geom::row_at(t, self.pane().list().cursor(), e.column, e.row) {
                    self.pane_mut().list_mut().select(row);
                }
            }
            _ => return,
        }
        self.dirty = true;
    }

    /// Draw the whole screen: the header and tabs, the body (an overlay's
    /// that holds it, else the pane's), the status line (likewise), and
    /// what overlays draw over everything (the switcher, the help).
    pub fn draw(&self, buf: &mut Buffer) {
        let area = buf.area;
        buf.reset();
        if area.width == 0 || area.height == 0 {
            return;
        }
        let cx = self.cx();
        let t = &self.theme;
        let m = &self.model;
        let o = &self.overlay;
        let a = geom::areas(area);
        let pane = self.pane();
        let list = pane.list();
        let titles: Vec<&str> = self.panes.iter().map(|p| p.title()).collect();
        let names = self.names();
        // On the Ladder the header's can/run are its moment's, as its rows.
        let counts = (pane.id() == super::ids::LADDER)
            .then(|| self.pane_as::<panes::ladder::Ladder>().moment())
            .flatten();
        header::draw(t, m, o.command.current(), counts, a.header, buf);
        let filter = list.filter();
        header::draw_tabs(
            t,
            &header::Tabs {
                titles: &titles,
                current: self.current,
                len: list.cursor().len,
                sort: list.sort_name(),
                reversed: list.reversed(),
                filter: (!filter.text.is_empty() && !filter.editing)
                    .then_some(filter.text.as_str()),
            },
            a.tabs,
            buf,
        );
        let f = Frame {
            cx: &cx,
            pane,
            names: &names,
            titles: &titles,
            first: panes::FIRST.name(),
        };
        if o.draw_body(&f, a.body, buf) {
            // The diff under review, a conflict to choose on, a detail.
        } else if m.conn.last_ok.is_none() {
            // Nothing from the hub yet: say where we are trying.
            let mut text = format!("connecting to {}", ui::hub(&m.hub_label));
            if let Some(e) = &m.conn.last_error {
                text.push_str(&format!(" {} {}", t.sep(), ui::hub(e)));
            }
            ui::empty(t, a.body, buf, &text);
        } else {
            pane.draw(&cx, a.body, buf);
        }
        if a.status.height > 0 && !o.draw_status(&f, a.status, buf) {
            let c = list.cursor();
            // An owner is shown the keys that edit; a read-only session
            // the ones it has.
            let hints = o.hints(m).unwrap_or(match pane.hints() {
                Hints::Ladder if m.can_write && m.staged.baking().is_some() => Hints::LadderRollout,
                Hints::Ladder if m.can_write => Hints::LadderOwner,
                Hints::History if !m.can_write => Hints::List,
                h => h,
            });
            let note = o.note(m);
            let status = header::Status {
                typing: filter.editing.then_some(filter.text.as_str()),
                message: self
                    .status
                    .as_ref()
                    .map(|s| s.text.as_str())
                    .or(note.as_deref()),
                hub_error: m.conn.last_error.as_deref().filter(|_| cx.stale),
                hints,
                pos: c.pos,
                len: c.len,
            };
            header::draw_status(t, &status, a.status, a.body, buf);
        }
        o.draw_over(&f, &a, area, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyCode, KeyModifiers};

    fn press(a: &mut App, code: KeyCode) {
        a.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    }

    /// Alt with a character is not text in any prompt: the add prompt
    /// took `Alt-x` as `x` while the filter and `:` did not.
    #[test]
    fn alt_characters_are_not_text_in_the_add_prompt() {
        let mut a = App::new("hub", true, Theme::new(false, false), Instant::now());
        a.overlay.edit.open_add_for_test();
        let alt = |c| Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::ALT));
        a.update(alt('x'));
        a.update(Msg::Key(KeyEvent::new(
            KeyCode::Char('p'),
            KeyModifiers::SHIFT,
        )));
        assert_eq!(
            *a.edit_mode(),
            Mode::Adding {
                text: "p".into(),
                error: None,
                unknown: false
            }
        );
    }

    #[test]
    fn views_cycle_both_ways() {
        let mut a = App::new("hub", false, Theme::new(false, false), Instant::now());
        for _ in 0..a.panes.len() {
            let here = a.view();
            press(&mut a, KeyCode::Tab);
            press(&mut a, KeyCode::BackTab);
            assert_eq!(a.view(), here);
            press(&mut a, KeyCode::Tab);
        }
        press(&mut a, KeyCode::Char('1'));
        assert_eq!(a.view(), "ladder");
        press(&mut a, KeyCode::BackTab);
        assert_eq!(a.view(), "history");
    }
}
