//! The TUI's state and its one step: `update(&mut App, Msg) -> Vec<Effect>`.
//!
//! State is plain data. `update` changes it and may ask for hub work
//! ([`Effect`]); `settle` recomputes derived indices (sorted, filtered rows)
//! once per burst of messages, before a frame is drawn, never while drawing.

use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

use super::faillog::{self, FailLog, FailoverSort};
use super::fleet::{Fleet, Slot, WorkerIndex, WorkerSort};
use super::keys::{self, Action};
use super::msg::{Effect, Fetch, Msg};
use super::theme::Theme;
use super::views;
use crate::wire::{HistoryEntry, Whoami};

/// How long a status-line message stays.
const STATUS_TTL: Duration = Duration::from_secs(5);
/// Re-anchor the hub clock only when the estimate is this far off, so that
/// network jitter does not make ages jump back and forth.
const CLOCK_SLACK_MS: i64 = 1500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum View {
    Ladder,
    Workers,
    Failovers,
    History,
}

impl View {
    pub const ALL: [View; 4] = [View::Ladder, View::Workers, View::Failovers, View::History];

    pub fn index(self) -> usize {
        match self {
            View::Ladder => 0,
            View::Workers => 1,
            View::Failovers => 2,
            View::History => 3,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            View::Ladder => "Ladder",
            View::Workers => "Workers",
            View::Failovers => "Failovers",
            View::History => "History",
        }
    }

    fn next(self) -> View {
        View::ALL[(self.index() + 1) % 4]
    }

    fn prev(self) -> View {
        View::ALL[(self.index() + 3) % 4]
    }

    /// Sort columns this view cycles through with `s`.
    pub fn sorts(self) -> &'static [&'static str] {
        match self {
            View::Ladder => &["rank", "capable", "active", "away"],
            View::Workers => &["urgency", "worker", "host", "age", "rank", "failover"],
            View::Failovers => &["time", "worker", "cause", "from"],
            View::History => &["time", "by"],
        }
    }
}

/// What `Enter` opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    Worker(String),
    Failover(u64),
    Agent(String),
    Revision(String),
}

/// The filter of one view. `text` survives switching views; Esc clears it
/// but keeps it in `recall` (↑ in the prompt brings it back).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub text: String,
    pub editing: bool,
    pub recall: String,
}

#[derive(Debug, Clone, Default)]
pub struct ViewState {
    pub filter: Filter,
    pub sort: usize,
    pub reverse: bool,
}

/// The cursor of one list, kept by key so that rows arriving or moving do
/// not make it jump.
#[derive(Debug, Clone)]
pub struct Sel<K> {
    pub key: Option<K>,
    pub pos: usize,
    pub offset: usize,
}

impl<K> Default for Sel<K> {
    fn default() -> Self {
        Sel {
            key: None,
            pos: 0,
            offset: 0,
        }
    }
}

impl<K: Clone + PartialEq> Sel<K> {
    /// After the index changed: follow the selected key; if it left the
    /// index, stay at the same position.
    pub fn resync(&mut self, index: &[K]) {
        if let Some(k) = &self.key {
            if index.get(self.pos) == Some(k) {
                return;
            }
            if let Some(p) = index.iter().position(|x| x == k) {
                self.pos = p;
                return;
            }
        }
        self.pos = self.pos.min(index.len().saturating_sub(1));
        self.key = index.get(self.pos).cloned();
    }

    pub fn set(&mut self, index: &[K], pos: usize) {
        self.pos = pos.min(index.len().saturating_sub(1));
        self.key = index.get(self.pos).cloned();
    }

    /// Keep the cursor inside a window of `rows` rows.
    pub fn scroll(&mut self, len: usize, rows: usize) {
        self.offset = views::window(self.pos, self.offset, len, rows).0;
    }

    fn nav(&mut self, index: &[K], action: Action, rows: usize) -> bool {
        let len = index.len();
        if len == 0 {
            return false;
        }
        let page = rows.max(1);
        let pos = match action {
            Action::Down => (self.pos + 1).min(len - 1),
            Action::Up => self.pos.saturating_sub(1),
            Action::Top => 0,
            Action::Bottom => len - 1,
            Action::PageDown => (self.pos + page).min(len - 1),
            Action::PageUp => self.pos.saturating_sub(page),
            _ => return false,
        };
        let before = (self.pos, self.offset);
        self.set(index, pos);
        self.scroll(len, rows);
        before != (self.pos, self.offset)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stream {
    Connecting,
    Up,
    Down { error: String, retry_in: Duration },
}

/// Connection as the top line tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnLabel {
    Connecting,
    Live,
    Polling,
    Disconnected(Duration),
}

#[derive(Debug, Clone)]
pub struct Conn {
    pub stream: Stream,
    /// Last good answer from the hub.
    pub last_ok: Option<Instant>,
    /// First failure of the current run of failures.
    pub failing_since: Option<Instant>,
    pub last_error: Option<String>,
}

/// The hub's clock: its `now` at a local monotonic instant.
#[derive(Debug, Clone, Copy)]
pub struct HubClock {
    pub hub: DateTime<Utc>,
    pub mono: Instant,
    /// From the hub (true) or the local wall clock until the hub answers.
    pub from_hub: bool,
}

#[derive(Debug, Clone)]
pub struct Status {
    pub text: String,
    pub at: Instant,
}

/// Small lists to rebuild at the next settle.
#[derive(Debug, Default, Clone, Copy)]
struct Lists {
    ladder: bool,
    failovers: bool,
    history: bool,
}

impl Lists {
    const ALL: Lists = Lists {
        ladder: true,
        failovers: true,
        history: true,
    };

    fn any(self) -> bool {
        self.ladder || self.failovers || self.history
    }

    /// The log changed: its list, and the ladder's failovers-away counts.
    fn failovers_changed(&mut self) {
        self.failovers = true;
        self.ladder = true;
    }
}

pub struct App {
    pub hub_label: String,
    pub who: Option<Whoami>,
    /// The session holds a writer. Views never see the writer itself.
    pub can_write: bool,
    pub theme: Theme,
    pub view: View,
    pub help: bool,
    pub detail: Option<Detail>,
    pub detail_scroll: usize,
    pub size: (u16, u16),
    pub clock: Option<HubClock>,
    pub mono_now: Instant,
    pub conn: Conn,
    pub fleet: Fleet,
    pub log: FailLog,
    pub history: Vec<HistoryEntry>,
    /// The list in rank order, and the revision it belongs to.
    pub ladder: Vec<String>,
    pub ladder_revision: Option<String>,
    config_requested: Option<String>,

    pub views: [ViewState; 4],
    pub workers: WorkerIndex,
    pub workers_sel: Sel<Slot>,
    pub ladder_rows: Vec<String>,
    pub ladder_sel: Sel<String>,
    pub failover_rows: Vec<u64>,
    pub failover_sel: Sel<u64>,
    pub history_rows: Vec<String>,
    pub history_sel: Sel<String>,

    pending: Vec<Slot>,
    rebuild_workers: bool,
    /// Which of the small lists (ladder, failovers, history) to rebuild.
    lists: Lists,

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
            view: View::Workers,
            help: false,
            detail: None,
            detail_scroll: 0,
            size: (80, 24),
            clock: None,
            mono_now: now,
            conn: Conn {
                stream: Stream::Connecting,
                last_ok: None,
                failing_since: None,
                last_error: None,
            },
            fleet: Fleet::default(),
            log: FailLog::default(),
            history: Vec::new(),
            ladder: Vec::new(),
            ladder_revision: None,
            config_requested: None,
            views: Default::default(),
            workers: WorkerIndex::default(),
            workers_sel: Sel::default(),
            ladder_rows: Vec::new(),
            ladder_sel: Sel::default(),
            failover_rows: Vec::new(),
            failover_sel: Sel::default(),
            history_rows: Vec::new(),
            history_sel: Sel::default(),
            pending: Vec::new(),
            rebuild_workers: false,
            lists: Lists::ALL,
            status: None,
            dirty: true,
            quit: false,
        }
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
        if let Some(t) = self.conn.failing_since {
            ConnLabel::Disconnected(self.mono_now.saturating_duration_since(t))
        } else if self.conn.last_ok.is_none() {
            ConnLabel::Connecting
        } else if self.conn.stream == Stream::Up {
            ConnLabel::Live
        } else {
            ConnLabel::Polling
        }
    }

    /// The data on screen is from a hub we cannot currently reach.
    pub fn is_stale(&self) -> bool {
        matches!(self.conn_label(), ConnLabel::Disconnected(_))
    }

    /// Age of the last good data.
    pub fn data_age(&self) -> Option<Duration> {
        self.conn
            .last_ok
            .map(|t| self.mono_now.saturating_duration_since(t))
    }

    pub fn workers_sort(&self) -> WorkerSort {
        WorkerSort::ALL[self.views[1].sort]
    }

    pub fn failovers_sort(&self) -> FailoverSort {
        FailoverSort::ALL[self.views[2].sort]
    }

    pub fn filter(&self, v: View) -> &Filter {
        &self.views[v.index()].filter
    }

    /// Rows the current view's table shows at the current size.
    pub fn body_rows(&self) -> usize {
        views::body_rows(self)
    }

    fn say(&mut self, text: impl Into<String>) {
        self.status = Some(Status {
            text: text.into(),
            at: self.mono_now,
        });
    }

    fn ok(&mut self, at: Instant) {
        self.conn.last_ok = Some(at.max(self.conn.last_ok.unwrap_or(at)));
        self.conn.failing_since = None;
        self.conn.last_error = None;
    }

    fn advance_mono(&mut self, t: Instant) {
        if t > self.mono_now {
            self.mono_now = t;
        }
    }

    /// Recompute derived indices from what changed. Cheap when nothing did.
    pub fn settle(&mut self) {
        let now = self.now();
        let mut changed = std::mem::take(&mut self.pending);
        if self.clock.is_some() {
            changed.extend(self.fleet.advance(now));
        }
        let workers_changed = self.rebuild_workers || !changed.is_empty();
        if self.rebuild_workers {
            self.rebuild_workers = false;
            self.workers.rebuild(&self.fleet);
        } else if !changed.is_empty() {
            self.workers.apply_changes(&self.fleet, &changed);
        }
        if workers_changed {
            // The ladder's counts come from the workers; the failover and
            // history lists do not depend on them.
            self.lists.ladder = true;
        }
        let lists = std::mem::take(&mut self.lists);
        if workers_changed || lists.any() {
            self.log.prune(now);
            if lists.ladder {
                self.rebuild_ladder(now);
                self.ladder_sel.resync(&self.ladder_rows);
            }
            if lists.failovers {
                self.rebuild_failovers();
                self.failover_sel.resync(&self.failover_rows);
            }
            if lists.history {
                self.rebuild_history();
                self.history_sel.resync(&self.history_rows);
            }
            self.workers_sel.resync(&self.workers.slots);
            self.rescroll();
            self.dirty = true;
        }
    }

    fn rescroll(&mut self) {
        let rows = self.body_rows();
        match self.view {
            View::Ladder => self.ladder_sel.scroll(self.ladder_rows.len(), rows),
            View::Workers => self.workers_sel.scroll(self.workers.slots.len(), rows),
            View::Failovers => self.failover_sel.scroll(self.failover_rows.len(), rows),
            View::History => self.history_sel.scroll(self.history_rows.len(), rows),
        }
    }

    /// Every agent worth a ladder row: the list in rank order, then agents
    /// workers report that the list does not hold (a worker behind on its
    /// revision, or an unknown name).
    pub fn ladder_agents(&self) -> Vec<String> {
        let mut out = self.ladder.clone();
        let mut extra: Vec<&String> = self
            .fleet
            .agg
            .agents
            .iter()
            .filter(|(a, c)| (c.active > 0 || c.capable > 0) && !self.ladder.contains(a))
            .map(|(a, _)| a)
            .collect();
        extra.sort();
        out.extend(extra.into_iter().cloned());
        out
    }

    fn rebuild_ladder(&mut self, now: DateTime<Utc>) {
        let f = self.views[0].filter.text.to_lowercase();
        let mut rows: Vec<String> = self
            .ladder_agents()
            .into_iter()
            .filter(|a| f.is_empty() || a.contains(&f))
            .collect();
        let agg = &self.fleet.agg;
        match self.views[0].sort {
            1 => rows.sort_by_key(|a| std::cmp::Reverse(agg.agent(a).capable)),
            2 => rows.sort_by_key(|a| std::cmp::Reverse(agg.agent(a).active)),
            3 => {
                let away = self.log.away_last_hour(now);
                rows.sort_by_key(|a| {
                    std::cmp::Reverse(
                        away.get(a.as_str())
                            .map(|k| k.iter().sum::<u32>())
                            .unwrap_or(0),
                    )
                })
            }
            _ => {}
        }
        if self.views[0].reverse {
            rows.reverse();
        }
        self.ladder_rows = rows;
    }

    fn rebuild_failovers(&mut self) {
        let fv = &self.views[2];
        self.failover_rows = faillog::index(
            &self.log,
            &fv.filter.text.to_lowercase(),
            FailoverSort::ALL[fv.sort],
            fv.reverse,
        );
    }

    /// History: newest first as the hub sends it.
    fn rebuild_history(&mut self) {
        let hv = &self.views[3];
        let f = hv.filter.text.to_lowercase();
        let mut rows: Vec<&HistoryEntry> = self
            .history
            .iter()
            .filter(|h| {
                f.is_empty()
                    || h.revision.to_lowercase().contains(&f)
                    || h.by.to_lowercase().contains(&f)
                    || h.agents.iter().any(|a| a.contains(&f))
                    || h.previous_agents.iter().any(|a| a.contains(&f))
            })
            .collect();
        if hv.sort == 1 {
            rows.sort_by(|a, b| a.by.cmp(&b.by));
        }
        if hv.reverse {
            rows.reverse();
        }
        self.history_rows = rows.into_iter().map(|h| h.revision.clone()).collect();
    }

    /// Apply the current view's filter text.
    fn refilter(&mut self) {
        match self.view {
            View::Workers => {
                let text = self.views[1].filter.text.clone();
                self.workers.set_filter(&self.fleet, &text);
                self.workers_sel.resync(&self.workers.slots);
            }
            _ => self.lists = Lists::ALL,
        }
        self.settle();
        self.rescroll();
    }

    fn resort(&mut self) {
        if self.view == View::Workers {
            let (s, r) = (self.workers_sort(), self.views[1].reverse);
            self.workers.set_sort(&self.fleet, s, r);
            self.workers_sel.resync(&self.workers.slots);
        } else {
            self.lists = Lists::ALL;
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
                let now = self.now();
                self.pending
                    .extend(self.fleet.set_interval(page.heartbeat_interval_s));
                self.pending
                    .extend(self.fleet.set_revision(&page.config_revision));
                self.pending.extend(self.fleet.advance(now));
                if page.delta {
                    for w in page.workers {
                        let slot = self.fleet.upsert(w);
                        self.pending.push(slot);
                    }
                } else {
                    self.fleet.replace_all(page.workers);
                    self.rebuild_workers = true;
                }
                if self.ladder_revision.as_deref() != Some(page.config_revision.as_str())
                    && self.config_requested.as_deref() != Some(page.config_revision.as_str())
                {
                    self.config_requested = Some(page.config_revision.clone());
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
                self.lists.failovers_changed();
                self.dirty = true;
            }
            Msg::Failover(r) => {
                if self.log.insert(r) {
                    self.lists.failovers_changed();
                    self.dirty = true;
                }
            }
            Msg::Config(ev) => {
                self.ladder = ev.agents;
                self.ladder_revision = Some(ev.revision.clone());
                self.pending.extend(self.fleet.set_revision(&ev.revision));
                self.lists.ladder = true;
                self.dirty = true;
                fx.push(Effect::FetchHistory);
            }
            Msg::Agents { revision, agents } => {
                self.ladder = agents;
                self.ladder_revision = Some(revision);
                self.lists.ladder = true;
                self.dirty = true;
            }
            Msg::History(h) => {
                self.history = h.revisions;
                if self.ladder.is_empty() {
                    if let Some(newest) = self.history.first() {
                        self.ladder = newest.agents.clone();
                        self.ladder_revision = Some(newest.revision.clone());
                    }
                }
                self.lists.ladder = true;
                self.lists.history = true;
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
                self.conn.last_error = Some(error);
                self.dirty = true;
            }
        }
        fx
    }

    fn key(&mut self, k: KeyEvent, fx: &mut Vec<Effect>) {
        if k.kind == KeyEventKind::Release {
            return;
        }
        let vi = self.view.index();
        if self.views[vi].filter.editing {
            self.filter_key(k);
            return;
        }
        let Some(action) = keys::action_for(&k) else {
            return;
        };
        self.dirty = true;
        if self.help {
            match action {
                Action::Help | Action::Back => self.help = false,
                Action::Quit => self.quit = true,
                _ => {}
            }
            return;
        }
        if action.is_edit() {
            self.say(if self.can_write {
                "editing arrives in a later version"
            } else {
                "read-only"
            });
            return;
        }
        match action {
            Action::Quit => self.quit = true,
            Action::ViewLadder => self.switch(View::Ladder),
            Action::ViewWorkers => self.switch(View::Workers),
            Action::ViewFailovers => self.switch(View::Failovers),
            Action::ViewHistory => self.switch(View::History),
            Action::NextView => self.switch(self.view.next()),
            Action::PrevView => self.switch(self.view.prev()),
            Action::Down
            | Action::Up
            | Action::Top
            | Action::Bottom
            | Action::PageDown
            | Action::PageUp => {
                if self.detail.is_some() && !matches!(action, Action::Down | Action::Up) {
                    // PgUp/PgDn/g/G scroll the detail text.
                    self.scroll_detail(action);
                } else {
                    self.nav(action);
                    if self.detail.is_some() {
                        self.detail = self.selected_detail();
                        self.detail_scroll = 0;
                    }
                }
            }
            Action::Filter => {
                self.detail = None;
                self.views[vi].filter.editing = true;
            }
            Action::Sort => {
                let n = self.view.sorts().len();
                self.views[vi].sort = (self.views[vi].sort + 1) % n;
                self.resort();
            }
            Action::SortReverse => {
                self.views[vi].reverse = !self.views[vi].reverse;
                self.resort();
            }
            Action::Detail if self.detail.is_none() => {
                self.detail = self.selected_detail();
                self.detail_scroll = 0;
            }
            Action::Back => {
                if self.detail.is_some() {
                    self.detail = None;
                } else if !self.views[vi].filter.text.is_empty() {
                    let f = &mut self.views[vi].filter;
                    f.recall = std::mem::take(&mut f.text);
                    self.refilter();
                }
            }
            Action::Help => self.help = true,
            Action::Refetch => {
                self.say("refetching");
                fx.push(Effect::Refetch);
            }
            _ => {}
        }
    }

    fn filter_key(&mut self, k: KeyEvent) {
        let vi = self.view.index();
        self.dirty = true;
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        let f = &mut self.views[vi].filter;
        match k.code {
            KeyCode::Char('c') if ctrl => {
                self.quit = true;
                return;
            }
            KeyCode::Char('u') if ctrl => f.text.clear(),
            KeyCode::Char(c) if !ctrl => f.text.push(c),
            KeyCode::Backspace => {
                f.text.pop();
            }
            KeyCode::Enter => {
                f.editing = false;
                return;
            }
            KeyCode::Esc => {
                f.editing = false;
                if !f.text.is_empty() {
                    f.recall = std::mem::take(&mut f.text);
                }
            }
            KeyCode::Up => {
                if f.text.is_empty() {
                    f.text = f.recall.clone();
                }
            }
            _ => return,
        }
        self.refilter();
    }

    fn switch(&mut self, v: View) {
        self.view = v;
        self.detail = None;
        self.rescroll();
    }

    fn nav(&mut self, action: Action) {
        let rows = self.body_rows();
        match self.view {
            View::Ladder => self.ladder_sel.nav(&self.ladder_rows, action, rows),
            View::Workers => self.workers_sel.nav(&self.workers.slots, action, rows),
            View::Failovers => self.failover_sel.nav(&self.failover_rows, action, rows),
            View::History => self.history_sel.nav(&self.history_rows, action, rows),
        };
    }

    fn scroll_detail(&mut self, action: Action) {
        let page = self.size.1.saturating_sub(8).max(1) as usize;
        self.detail_scroll = match action {
            Action::Top => 0,
            Action::Bottom => usize::MAX / 2,
            Action::PageDown => self.detail_scroll + page,
            Action::PageUp => self.detail_scroll.saturating_sub(page),
            _ => self.detail_scroll,
        };
    }

    /// The selected row's detail target, if any row is selected.
    pub fn selected_detail(&self) -> Option<Detail> {
        match self.view {
            View::Ladder => self.ladder_sel.key.clone().map(Detail::Agent),
            View::Workers => self
                .workers_sel
                .key
                .and_then(|s| self.fleet.get(s))
                .map(|e| Detail::Worker(e.view.worker.to_string())),
            View::Failovers => self.failover_sel.key.map(Detail::Failover),
            View::History => self.history_sel.key.clone().map(Detail::Revision),
        }
    }

    fn mouse(&mut self, m: crossterm::event::MouseEvent) {
        match m.kind {
            MouseEventKind::ScrollDown => self.nav(Action::Down),
            MouseEventKind::ScrollUp => self.nav(Action::Up),
            MouseEventKind::Down(crossterm::event::MouseButton::Left) => {
                if self.detail.is_some() || self.help {
                    return;
                }
                if let Some(row) = views::row_at(self, m.column, m.row) {
                    match self.view {
                        View::Ladder => self.ladder_sel.set(&self.ladder_rows, row),
                        View::Workers => self.workers_sel.set(&self.workers.slots, row),
                        View::Failovers => self.failover_sel.set(&self.failover_rows, row),
                        View::History => self.history_sel.set(&self.history_rows, row),
                    }
                }
            }
            _ => return,
        }
        self.dirty = true;
    }

    /// Cursor state of the current view: (position, offset, rows).
    pub fn cursor(&self) -> (usize, usize, usize) {
        match self.view {
            View::Ladder => (
                self.ladder_sel.pos,
                self.ladder_sel.offset,
                self.ladder_rows.len(),
            ),
            View::Workers => (
                self.workers_sel.pos,
                self.workers_sel.offset,
                self.workers.slots.len(),
            ),
            View::Failovers => (
                self.failover_sel.pos,
                self.failover_sel.offset,
                self.failover_rows.len(),
            ),
            View::History => (
                self.history_sel.pos,
                self.history_sel.offset,
                self.history_rows.len(),
            ),
        }
    }
}
