//! The TUI's state and its one step: `update(&mut App, Msg) -> Vec<Effect>`.
//!
//! State is plain data. `update` changes it and may ask for hub work
//! ([`Effect`]); `settle` recomputes derived indices (sorted, filtered rows)
//! once per burst of messages, before a frame is drawn, never while drawing.

use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

use ratatui::layout::Rect;

use super::edit::{LadderEdit, Mode};
use super::keys::{self, Action};
use super::lists::{AgentRow, HISTORY_FIELDS, HistorySort, LADDER_FIELDS, LadderSort, Lists, Pane};
pub use super::lists::{Detail, Filter, HistKey, View};
use super::model::conn::{Conn, HubClock, Stream};
pub use super::model::conn::{ConnLabel, REFUSED};
use super::model::faillog::{self, FailLog};
use super::model::fleet::{Fleet, Slot};
use super::model::query::Query;
use super::msg::{Effect, Fetch, Msg};
use super::ui::geom;
use super::ui::theme::Theme;
use crate::wire::{HistoryEntry, Whoami};

/// How long a status-line message stays.
const STATUS_TTL: Duration = Duration::from_secs(5);
/// Re-anchor the hub clock only when the estimate is this far off, so that
/// network jitter does not make ages jump back and forth.
const CLOCK_SLACK_MS: i64 = 1500;

#[derive(Debug, Clone)]
pub struct Status {
    pub text: String,
    pub at: Instant,
}

/// What changed since the last settle: derived rows to recompute.
#[derive(Debug, Default)]
struct Todo {
    /// Workers updated, added, removed or whose derived state moved.
    slots: Vec<Slot>,
    /// A full page replaced the fleet.
    all_workers: bool,
    /// The Workers filter or sort changed.
    workers_index: bool,
    ladder: bool,
    failovers: bool,
    history: bool,
}

impl Todo {
    /// The log changed: its list, and the ladder's failovers-away counts.
    fn failovers_changed(&mut self) {
        self.failovers = true;
        self.ladder = true;
    }
}

/// The hub's list of agents, its history, and the revision they belong to.
#[derive(Debug, Default)]
pub struct Config {
    /// The list in rank order.
    pub agents: Vec<String>,
    pub revision: Option<String>,
    /// The whole document at `revision` (what an edit starts from).
    pub text: Option<String>,
    /// The revision whose config we asked for last (asked once).
    requested: Option<String>,
    /// Newest first, as the hub sends it.
    pub history: Vec<HistoryEntry>,
}

/// What is on screen besides the list: which view, the overlays, the size.
#[derive(Debug)]
pub struct Screen {
    pub view: View,
    pub help: bool,
    pub detail: Option<Detail>,
    pub detail_scroll: usize,
    /// `v`: the detail's target as the hub's own JSON record.
    pub raw: bool,
    /// `v` opened the detail from the list: Esc goes back to the list.
    pub raw_from_list: bool,
}

pub struct App {
    pub hub_label: String,
    pub who: Option<Whoami>,
    /// The session holds a writer. Views never see the writer itself.
    pub can_write: bool,
    pub theme: Theme,
    pub screen: Screen,
    /// The terminal's size (width, height).
    pub size: (u16, u16),
    pub clock: Option<HubClock>,
    pub mono_now: Instant,
    pub conn: Conn,
    pub fleet: Fleet,
    pub log: FailLog,
    pub config: Config,
    /// The four list views: rows, selection, sort, filter.
    pub lists: Lists,
    /// The owner's pending edit of the list.
    pub edit: LadderEdit,
    /// The Ladder's AWAY NOW: live workers held off each agent, by cause.
    pub away_now: std::collections::HashMap<String, super::model::away::AwayNow>,
    /// When AWAY NOW was last counted, and whether a change since waits
    /// for the next count (at most one a second: ~27 ms at 100,000
    /// workers).
    away_at: Option<Instant>,
    away_stale: bool,
    /// The `:` command line.
    pub cmd: super::command::CmdLine,
    /// The contexts `:ctx` switches between, and the current one.
    pub contexts: super::command::Contexts,
    todo: Todo,
    pub status: Option<Status>,
    /// Something visible may have changed since the last frame.
    pub dirty: bool,
    pub quit: bool,
}

impl App {
    pub fn new(hub_label: impl Into<String>, can_write: bool, theme: Theme, now: Instant) -> App {
        App {
            hub_label: hub_label.into(),
            who: None,
            can_write,
            theme,
            screen: Screen {
                view: View::Workers,
                help: false,
                detail: None,
                detail_scroll: 0,
                raw: false,
                raw_from_list: false,
            },
            size: (80, 24),
            clock: None,
            mono_now: now,
            conn: Conn {
                stream: Stream::Connecting,
                last_ok: None,
                failing_since: None,
                last_error: None,
                refused: false,
            },
            fleet: Fleet::default(),
            log: FailLog::default(),
            config: Config::default(),
            lists: Lists::default(),
            edit: LadderEdit::default(),
            away_now: Default::default(),
            away_at: None,
            away_stale: false,
            cmd: Default::default(),
            contexts: Default::default(),
            todo: Todo {
                ladder: true,
                failovers: true,
                history: true,
                ..Todo::default()
            },
            status: None,
            dirty: true,
            quit: false,
        }
    }

    /// The view on screen.
    pub fn view(&self) -> View {
        self.screen.view
    }

    /// The hub's time now, as best we know it.
    pub fn now(&self) -> DateTime<Utc> {
        match self.clock {
            Some(c) => {
                let el = self.mono_now.saturating_duration_since(c.mono);
                c.hub + TimeDelta::from_std(el).unwrap_or(TimeDelta::zero())
            }
            None => DateTime::UNIX_EPOCH,
        }
    }

    pub fn conn_label(&self) -> ConnLabel {
        if self.conn.refused {
            ConnLabel::Refused
        } else if let Some(t) = self.conn.failing_since {
            ConnLabel::Disconnected(self.mono_now.saturating_duration_since(t))
        } else if self.conn.last_ok.is_none() {
            ConnLabel::Connecting
        } else if self.conn.stream == Stream::Up {
            ConnLabel::Live
        } else {
            ConnLabel::Polling
        }
    }

    /// The status word, from the hub's own judgement of each worker.
    pub fn verdict(&self) -> Option<super::model::verdict::Verdict> {
        super::model::verdict::verdict(self.conn_label(), &self.fleet.agg)
    }

    /// The data on screen is from a hub we cannot currently reach (or
    /// that refuses our token).
    pub fn is_stale(&self) -> bool {
        self.conn.refused || matches!(self.conn_label(), ConnLabel::Disconnected(_))
    }

    /// Age of the last good data.
    pub fn data_age(&self) -> Option<Duration> {
        self.conn
            .last_ok
            .map(|t| self.mono_now.saturating_duration_since(t))
    }

    /// The current view's list.
    pub fn pane(&self) -> &dyn Pane {
        self.lists.pane(self.screen.view)
    }

    fn pane_mut(&mut self) -> &mut dyn Pane {
        self.lists.pane_mut(self.screen.view)
    }

    pub fn filter(&self, v: View) -> &Filter {
        self.lists.pane(v).filter()
    }

    /// Rows the Failovers view puts above its table in a body `body_h` tall.
    pub fn spark_rows(&self, body_h: u16) -> u16 {
        geom::spark_height(body_h, self.log.causes_seen(self.now()).len())
    }

    /// The current view's table (data rows, below the column header).
    pub fn table_area(&self) -> Rect {
        let body = geom::areas(geom::screen(self.size)).body;
        let above = match self.screen.view {
            View::Failovers => self.spark_rows(body.height),
            _ => 0,
        };
        geom::table_in(body, above)
    }

    /// Rows the current view's table shows at the current size.
    pub fn body_rows(&self) -> usize {
        self.table_area().height as usize
    }

    pub(super) fn say(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            at: self.mono_now,
        });
    }

    fn ok(&mut self, at: Instant) {
        self.conn.last_ok = Some(at.max(self.conn.last_ok.unwrap_or(at)));
        self.conn.failing_since = None;
        self.conn.last_error = None;
        self.conn.refused = false;
    }

    fn advance_mono(&mut self, t: Instant) {
        if t > self.mono_now {
            self.mono_now = t;
        }
    }

    /// Recompute derived indices from what changed. Cheap when nothing did.
    pub fn settle(&mut self) {
        let now = self.now();
        // States are the hub's (pages and `state` events): the TUI never
        // ages workers into stale or lost on its own clock, so an
        // unreachable hub leaves its last judgement standing.
        let changed = std::mem::take(&mut self.todo.slots);
        let w = &mut self.lists.workers;
        let mut workers_changed = std::mem::take(&mut self.todo.workers_index);
        if workers_changed {
            w.rows.set_sort(&self.fleet, w.sort, w.reverse);
            w.rows.set_filter(&self.fleet, &w.filter.text);
        }
        if std::mem::take(&mut self.todo.all_workers) {
            workers_changed = true;
            w.rows.rebuild(&self.fleet);
        } else if !changed.is_empty() {
            workers_changed = true;
            w.rows.apply_changes(&self.fleet, &changed);
        }
        if workers_changed {
            // The ladder's counts come from the workers; the failover and
            // history lists do not depend on them.
            self.todo.ladder = true;
        }
        let (ladder, failovers, history) = (
            std::mem::take(&mut self.todo.ladder),
            std::mem::take(&mut self.todo.failovers),
            std::mem::take(&mut self.todo.history),
        );
        if workers_changed || ladder || failovers || history {
            self.log.prune(now);
            if ladder {
                self.rebuild_ladder(now);
                self.lists.ladder.resync();
            }
            if failovers {
                self.rebuild_failovers();
                self.lists.failovers.resync();
            }
            if history {
                self.rebuild_history();
                self.lists.history.resync();
            }
            self.lists.workers.resync();
            self.note_workers_emptied();
            self.rescroll();
            self.dirty = true;
        }
    }

    /// When the Workers filter left no row, which of its terms did it.
    fn note_workers_emptied(&mut self) {
        let w = &self.lists.workers;
        let q = &w.rows.filter;
        let emptied = (w.is_empty() && !q.is_empty() && !self.fleet.is_empty()).then(|| {
            q.empty_text("worker", &w.filter.text, |q| {
                self.fleet.iter().any(|(_, e)| q.matches(e))
            })
        });
        self.lists.workers.emptied = emptied;
    }

    fn rescroll(&mut self) {
        let rows = self.body_rows();
        self.pane_mut().scroll(rows);
    }

    /// Every agent worth a ladder row: the list in rank order, then agents
    /// workers report that the list does not hold (a worker behind on its
    /// revision, or an unknown name).
    /// With an edit pending: the pending order, then the agents it removed.
    pub fn ladder_agents(&self) -> Vec<String> {
        let mut list = self.config.agents.clone();
        if let Some(p) = self.edit.plan.as_ref().filter(|p| p.is_pending()) {
            list = p.order().to_vec();
            list.extend(
                p.rungs()
                    .into_iter()
                    .filter(|r| r.new.is_none())
                    .map(|r| r.agent),
            );
        }
        let list = &list;
        let mut out = list.clone();
        let mut extra: Vec<&String> = self
            .fleet
            .agg
            .agents
            .iter()
            .filter(|(a, c)| (c.active > 0 || c.capable > 0) && !list.contains(a))
            .map(|(a, _)| a)
            .collect();
        extra.sort();
        out.extend(extra.into_iter().cloned());
        out
    }

    fn rebuild_ladder(&mut self, now: DateTime<Utc>) {
        let l = &self.lists.ladder;
        let q = Query::parse(&l.filter.text, LADDER_FIELDS);
        let all = self.ladder_agents();
        let mut rows: Vec<String> = all
            .iter()
            .filter(|a| q.matches(&AgentRow(a)))
            .cloned()
            .collect();
        let emptied = (rows.is_empty() && !q.is_empty()).then(|| {
            q.empty_text("agent", &l.filter.text, |q| {
                all.iter().any(|a| q.matches(&AgentRow(a)))
            })
        });
        let agg = &self.fleet.agg;
        match l.sort {
            LadderSort::Rank => {}
            LadderSort::Capable => rows.sort_by_key(|a| std::cmp::Reverse(agg.agent(a).capable)),
            LadderSort::Active => rows.sort_by_key(|a| std::cmp::Reverse(agg.agent(a).active)),
            LadderSort::Away => {
                let away = self.log.away_last_hour(now);
                rows.sort_by_key(|a| {
                    std::cmp::Reverse(
                        away.get(a.as_str())
                            .map(|k| k.iter().sum::<u32>())
                            .unwrap_or(0),
                    )
                })
            }
        }
        if l.reverse {
            rows.reverse();
        }
        self.lists.ladder.rows = rows;
        self.lists.ladder.emptied = emptied;
        // A pass over the fleet and the log: only while the Ladder shows
        // it, at most once a second (a tick counts what waited).
        if self.screen.view == View::Ladder {
            let due = self.away_at.is_none_or(|t| {
                self.mono_now.saturating_duration_since(t) >= super::model::away::EVERY
            });
            if due {
                self.away_now = super::model::away::away_now(&self.fleet, &self.log);
                self.away_at = Some(self.mono_now);
                self.away_stale = false;
            } else {
                self.away_stale = true;
            }
        }
        self.refresh_projection();
    }

    fn rebuild_failovers(&mut self) {
        let l = &self.lists.failovers;
        let q = Query::parse(&l.filter.text, faillog::FIELDS);
        let rows = faillog::index(&self.log, &q, l.sort, l.reverse);
        let emptied = (rows.is_empty() && !q.is_empty()).then(|| {
            q.empty_text("failover", &l.filter.text, |q| {
                self.log.records.iter().any(|r| q.matches(r))
            })
        });
        let l = &mut self.lists.failovers;
        l.rows = rows;
        l.emptied = emptied;
    }

    /// History: newest first as the hub sends it; one row per entry.
    fn rebuild_history(&mut self) {
        let l = &self.lists.history;
        let q = Query::parse(&l.filter.text, HISTORY_FIELDS);
        let all = &self.config.history;
        let mut rows: Vec<&HistoryEntry> = all.iter().filter(|h| q.matches(*h)).collect();
        let emptied = (rows.is_empty() && !q.is_empty()).then(|| {
            q.empty_text("revision", &l.filter.text, |q| {
                all.iter().any(|h| q.matches(h))
            })
        });
        if l.sort == HistorySort::By {
            rows.sort_by(|a, b| a.by.cmp(&b.by));
        }
        if l.reverse {
            rows.reverse();
        }
        let rows = rows
            .into_iter()
            .map(|h| HistKey {
                revision: h.revision.clone(),
                at: h.at,
            })
            .collect();
        self.lists.history.rows = rows;
        self.lists.history.emptied = emptied;
    }

    /// The history entry a key names.
    pub fn history_entry(&self, k: &HistKey) -> Option<&HistoryEntry> {
        self.config
            .history
            .iter()
            .find(|h| h.at == k.at && h.revision == k.revision)
    }

    /// The current view's filter text or sort changed: recompute its rows.
    pub(super) fn reorder(&mut self) {
        match self.screen.view {
            View::Workers => self.todo.workers_index = true,
            View::Ladder => self.todo.ladder = true,
            View::Failovers => self.todo.failovers = true,
            View::History => self.todo.history = true,
        }
        self.settle();
        self.rescroll();
    }

    /// The one step.
    pub fn update(&mut self, msg: Msg) -> Vec<Effect> {
        let mut fx = Vec::new();
        match msg {
            Msg::Key(k) => {
                // Keys act on what is on screen: bring the indices up to date.
                self.settle();
                self.key(k, &mut fx);
            }
            Msg::Mouse(m) => {
                self.settle();
                self.mouse(m);
            }
            Msg::Resize(w, h) => {
                self.size = (w, h);
                self.rescroll();
                self.dirty = true;
            }
            Msg::Tick { mono, wall } => {
                self.advance_mono(mono);
                if self.clock.is_none() {
                    self.clock = Some(HubClock {
                        hub: wall,
                        mono,
                        from_hub: false,
                    });
                }
                if let Some(s) = &self.status {
                    if self.mono_now.saturating_duration_since(s.at) >= STATUS_TTL {
                        self.status = None;
                    }
                }
                if self.away_stale {
                    self.todo.ladder = true;
                }
                // Ages may have moved; the runner compares the rendered
                // frame with the last one and writes nothing if equal.
                self.dirty = true;
            }
            Msg::Whoami(w) => {
                self.who = Some(w);
                self.dirty = true;
            }
            Msg::Workers { page, at } => {
                self.advance_mono(at);
                self.ok(at);
                let anchor = match self.clock {
                    Some(c) if c.from_hub => {
                        let el = at.saturating_duration_since(c.mono);
                        let est = c.hub + TimeDelta::from_std(el).unwrap_or_default();
                        (est - page.now).num_milliseconds().abs() > CLOCK_SLACK_MS
                    }
                    _ => true,
                };
                if anchor {
                    self.clock = Some(HubClock {
                        hub: page.now,
                        mono: at,
                        from_hub: true,
                    });
                }
                let slots = &mut self.todo.slots;
                self.fleet.set_interval(page.heartbeat_interval_s);
                slots.extend(self.fleet.set_revision(&page.config_revision));
                if page.delta {
                    slots.extend(
                        page.workers
                            .into_iter()
                            .filter_map(|w| self.fleet.apply_hub(w)),
                    );
                } else {
                    self.fleet.replace_all(page.workers);
                    self.todo.all_workers = true;
                }
                let rev = page.config_revision.as_str();
                let c = &mut self.config;
                let missing = c.revision.as_deref() != Some(rev) || c.text.is_none();
                if missing && c.requested.as_deref() != Some(rev) {
                    c.requested = Some(page.config_revision.clone());
                    fx.push(Effect::FetchConfig);
                    fx.push(Effect::FetchHistory);
                }
                self.dirty = true;
            }
            Msg::Failovers { page, fresh } => {
                if fresh {
                    self.log.clear();
                }
                for r in page.events {
                    self.log.insert(r);
                }
                self.log.next = self.log.next.max(page.next);
                self.todo.failovers_changed();
                self.dirty = true;
            }
            Msg::Failover(r) => {
                if self.log.insert(r) {
                    self.todo.failovers_changed();
                    self.dirty = true;
                }
            }
            Msg::WorkerEvents(views) => {
                let slots = &mut self.todo.slots;
                slots.extend(views.into_iter().filter_map(|w| self.fleet.apply_hub(w)));
                self.dirty = true;
            }
            Msg::Config(ev) => {
                if self.config.revision.as_deref() != Some(ev.revision.as_str()) {
                    // The document changed: the event carries only its list,
                    // so fetch the text now. Until it is in, every edit key
                    // says it has not arrived; a colleague's write must not
                    // leave the owner there until `r`.
                    self.config.text = None;
                    self.config.requested = Some(ev.revision.clone());
                    self.forget_unchanged_edit();
                    fx.push(Effect::FetchConfig);
                }
                self.config.agents = ev.agents;
                self.config.revision = Some(ev.revision.clone());
                self.todo
                    .slots
                    .extend(self.fleet.set_revision(&ev.revision));
                self.todo.ladder = true;
                self.dirty = true;
                fx.push(Effect::FetchHistory);
            }
            Msg::Agents {
                revision,
                agents,
                text,
            } => {
                self.config.agents = agents;
                self.config.revision = Some(revision.clone());
                self.config.text = Some(text.clone());
                if std::mem::take(&mut self.edit.rebase_wanted) {
                    self.rebase_onto(&text, &revision);
                } else if self.edit.plan.as_ref().map(|p| p.base_revision())
                    != Some(revision.as_str())
                {
                    self.forget_unchanged_edit();
                }
                self.todo.ladder = true;
                self.dirty = true;
            }
            Msg::Edited { sent, back } => {
                self.edited(sent, back, &mut fx);
                self.todo.ladder = true;
                self.dirty = true;
            }
            Msg::Written(r) => {
                self.written(r, &mut fx);
                self.todo.ladder = true;
                self.dirty = true;
            }
            Msg::History(h) => {
                let c = &mut self.config;
                c.history = h.revisions;
                if c.agents.is_empty() {
                    if let Some(newest) = c.history.first() {
                        c.agents = newest.agents.clone();
                        c.revision = Some(newest.revision.clone());
                    }
                }
                self.todo.ladder = true;
                self.todo.history = true;
                self.dirty = true;
            }
            Msg::StreamUp => {
                self.conn.stream = Stream::Up;
                self.dirty = true;
            }
            Msg::StreamDown { error, retry_in } => {
                self.conn.stream = Stream::Down { error, retry_in };
                self.dirty = true;
            }
            Msg::Reset => {
                self.say("the hub lost our place in its event log; refetching");
                fx.push(Effect::Refetch);
                self.dirty = true;
            }
            Msg::FetchFailed { what, error, at } => {
                self.advance_mono(at);
                // Only the worker poll decides "disconnected": it is the
                // request that runs all the time.
                if matches!(what, Fetch::Workers | Fetch::Whoami)
                    && self.conn.failing_since.is_none()
                {
                    self.conn.failing_since = Some(at);
                }
                if what == Fetch::Config {
                    // Ask again with the next poll: an edit needs the text.
                    self.config.requested = None;
                }
                self.conn.last_error = Some(error);
                self.dirty = true;
            }
            Msg::Refused { what, at } => {
                self.advance_mono(at);
                if matches!(what, Fetch::Workers | Fetch::Whoami)
                    && self.conn.failing_since.is_none()
                {
                    self.conn.failing_since = Some(at);
                }
                self.conn.refused = true;
                self.conn.last_error = Some(REFUSED.to_string());
                self.dirty = true;
            }
            Msg::SwitchFailed { error } => self.switch_failed(&error),
            Msg::Refetched { ok } => {
                self.say(if ok {
                    "refetch finished"
                } else {
                    "refetch failed; retrying"
                });
                self.dirty = true;
            }
        }
        fx
    }

    fn key(&mut self, k: KeyEvent, fx: &mut Vec<Effect>) {
        if k.kind == KeyEventKind::Release {
            return;
        }
        if self.pane().filter().editing {
            self.filter_key(k);
            return;
        }
        if self.command_key(k, fx) {
            return;
        }
        if self.edit.takes_keys() {
            self.dirty = true;
            self.edit_key(k, fx);
            return;
        }
        let Some(action) = keys::action_for(&k) else {
            return;
        };
        self.dirty = true;
        if self.screen.help {
            match action {
                Action::Help | Action::Back => self.screen.help = false,
                Action::Quit if self.edit.is_pending() && k.code == KeyCode::Char('q') => {
                    self.screen.help = false;
                    self.edit.mode = Mode::ConfirmQuit;
                }
                Action::Quit => self.quit = true,
                _ => {}
            }
            return;
        }
        if action.is_edit() {
            if !self.can_write {
                self.say("read-only");
            } else if action == Action::Revert && self.screen.view == View::History {
                self.revert_to_selected();
            } else if self.screen.view == View::Ladder && self.screen.detail.is_none() {
                self.edit_action(action, fx);
            }
            return;
        }
        if action == Action::Quit && self.edit.is_pending() && k.code == KeyCode::Char('q') {
            self.edit.mode = Mode::ConfirmQuit;
            return;
        }
        if self.rollout_key(action) {
            return;
        }
        if let Some(m) = action.movement() {
            if self.screen.detail.is_some() && !matches!(action, Action::Down | Action::Up) {
                // PgUp/PgDn/g/G scroll the detail text.
                self.scroll_detail(action);
            } else {
                self.nav(m);
                if self.screen.detail.is_some() {
                    self.screen.detail = self.selected_detail();
                    self.screen.detail_scroll = 0;
                }
            }
            return;
        }
        match action {
            Action::Quit => self.quit = true,
            Action::ViewLadder => self.switch(View::Ladder),
            Action::ViewWorkers => self.switch(View::Workers),
            Action::ViewFailovers => self.switch(View::Failovers),
            Action::ViewHistory => self.switch(View::History),
            Action::NextView => self.switch(self.screen.view.next()),
            Action::PrevView => self.switch(self.screen.view.prev()),
            Action::Filter => {
                self.screen.detail = None;
                self.pane_mut().filter_mut().editing = true;
            }
            Action::Sort => {
                self.pane_mut().next_sort();
                self.reorder();
            }
            Action::SortReverse => {
                self.pane_mut().flip();
                self.reorder();
            }
            Action::Detail if self.screen.detail.is_none() => {
                self.screen.detail = self.selected_detail();
                self.screen.detail_scroll = 0;
            }
            Action::Raw => self.toggle_raw(),
            Action::Back if self.screen.raw => {
                self.screen.raw = false;
                self.screen.detail_scroll = 0;
                if std::mem::take(&mut self.screen.raw_from_list) {
                    self.screen.detail = None;
                }
            }
            Action::Back => {
                if self.screen.detail.is_some() {
                    self.screen.detail = None;
                } else if !self.pane().filter().text.is_empty() {
                    let f = self.pane_mut().filter_mut();
                    f.recall = std::mem::take(&mut f.text);
                    self.reorder();
                }
            }
            Action::Help => self.screen.help = true,
            Action::WorkerFailovers => self.worker_failovers(),
            Action::Command => self.open_command(),
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
        let f = self.pane_mut().filter_mut();
        match (action, k.code) {
            (Some(Action::Quit), _) => {
                self.quit = true;
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
            (None, KeyCode::Char(c))
                if !k
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
            {
                f.text.push(c)
            }
            _ => return,
        }
        self.reorder();
    }

    pub(super) fn switch(&mut self, v: View) {
        self.screen.raw = false;
        self.screen.raw_from_list = false;
        if v == View::Ladder && self.screen.view != v {
            self.todo.ladder = true;
            self.away_at = None;
        }
        self.screen.view = v;
        self.screen.detail = None;
        self.rescroll();
    }

    fn nav(&mut self, m: super::lists::Move) {
        let rows = self.body_rows();
        self.pane_mut().nav(m, rows);
    }

    fn scroll_detail(&mut self, action: Action) {
        let page = self.size.1.saturating_sub(8).max(1) as usize;
        let s = &mut self.screen.detail_scroll;
        *s = match action {
            Action::Top => 0,
            Action::Bottom => usize::MAX / 2,
            Action::PageDown => *s + page,
            Action::PageUp => s.saturating_sub(page),
            _ => *s,
        };
    }

    /// The worker in view: the one whose detail is open (a failover's
    /// detail is its worker's too), else the selected worker or failover.
    pub fn worker_in_view(&self) -> Option<String> {
        match self
            .screen
            .detail
            .clone()
            .or_else(|| self.selected_detail())?
        {
            Detail::Worker(id) => Some(id),
            Detail::Failover(seq) => self.log.get(seq).map(|r| r.worker.to_string()),
            Detail::Agent(_) | Detail::Revision(_) | Detail::Rollout => None,
        }
    }

    /// `v`: the worker, failover or revision in view as the hub's JSON;
    /// again (or Esc) goes back.
    fn toggle_raw(&mut self) {
        let s = &mut self.screen;
        if s.raw {
            s.raw = false;
            s.detail_scroll = 0;
            if std::mem::take(&mut s.raw_from_list) {
                s.detail = None;
            }
            return;
        }
        let from_list = s.detail.is_none();
        let target = s.detail.clone().or_else(|| self.selected_detail());
        match target {
            Some(d @ (Detail::Worker(_) | Detail::Failover(_) | Detail::Revision(_))) => {
                let s = &mut self.screen;
                s.detail = Some(d);
                s.raw = true;
                s.raw_from_list = from_list;
                s.detail_scroll = 0;
            }
            _ => self.say("v shows a worker, a failover or a revision as the hub's JSON"),
        }
    }

    /// `f`: the Failovers view, filtered to the worker in view.
    fn worker_failovers(&mut self) {
        let Some(id) = self.worker_in_view() else {
            self.say("no worker here: f works on a worker or a failover");
            return;
        };
        self.switch(View::Failovers);
        let f = self.pane_mut().filter_mut();
        // The whole id: `mac-1` is not `mac-12`.
        f.text = format!("worker:{id}$");
        f.editing = false;
        self.reorder();
    }

    /// The selected row's detail target, if any row is selected.
    pub fn selected_detail(&self) -> Option<Detail> {
        let l = &self.lists;
        match self.screen.view {
            View::Ladder => l.ladder.selected().cloned().map(Detail::Agent),
            View::Workers => l
                .workers
                .selected()
                .and_then(|s| self.fleet.get(*s))
                .map(|e| Detail::Worker(e.view.worker.to_string())),
            View::Failovers => l.failovers.selected().copied().map(Detail::Failover),
            View::History => l.history.selected().cloned().map(Detail::Revision),
        }
    }

    fn mouse(&mut self, m: crossterm::event::MouseEvent) {
        match m.kind {
            MouseEventKind::ScrollDown => self.nav(super::lists::Move::Down),
            MouseEventKind::ScrollUp => self.nav(super::lists::Move::Up),
            MouseEventKind::Down(crossterm::event::MouseButton::Left) => {
                if self.screen.detail.is_some() || self.screen.help {
                    return;
                }
                let t = self.table_area();
                if let Some(row) = geom::row_at(t, self.pane().cursor(), m.column, m.row) {
                    self.pane_mut().select(row);
                }
            }
            _ => return,
        }
        self.dirty = true;
    }
}
