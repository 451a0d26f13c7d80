//! What the TUI knows, below everything that shows it: the session, the
//! connection and the hub's clock, the fleet, the failover log, the list
//! and its history, the owner's pending edit, the status word. Nothing
//! here imports `app`, `panes`, `overlays` or `ui`; `update` changes it,
//! panes and overlays read it.

pub mod apply;
pub mod away;
pub mod compact;
pub mod config;
pub mod conn;
pub mod edit;
pub mod faillog;
pub mod fleet;
pub mod large;
pub mod query;
pub mod reclog;
pub mod said;
pub mod seqlog;
pub mod staged;
pub mod verdict;

use std::time::{Duration, Instant};

use chrono::{DateTime, TimeDelta, Utc};

use self::compact::addr;
use self::config::{Config, HistKey};
use self::conn::{Conn, ConnLabel, Fetch, HubClock, Stream};
use self::edit::{BEHIND_MAX, Behind, LadderEdit};
use self::faillog::FailLog;
use self::fleet::{Entry, Fleet, Slot};
use self::large::{Large, WindowAsk};
use self::reclog::RecLog;
use self::staged::Staged;
use self::verdict::Verdict;
use crate::plan::{self, PendingEdit};
use crate::wire::{
    ConfigEvent, History, HistoryEntry, KNOWN_AGENTS, Whoami, WorkerState, WorkersPage,
};

/// Re-anchor the hub clock only when the estimate is this far off, so that
/// network jitter does not make ages jump back and forth.
const CLOCK_SLACK_MS: i64 = 1500;

/// What changed in the model since the last settle.
#[derive(Debug, Default)]
pub struct Changes {
    /// Workers updated, added, removed or whose derived state moved.
    pub slots: Vec<Slot>,
    /// A full page replaced the fleet.
    pub all_workers: bool,
    /// The failover log or the recovery log.
    pub log: bool,
    /// The list, its document or the pending edit.
    pub agents: bool,
    /// The list's history.
    pub history: bool,
}

impl Changes {
    /// The fleet changed.
    pub fn fleet(&self) -> bool {
        self.all_workers || !self.slots.is_empty()
    }

    pub fn any(&self) -> bool {
        self.fleet() || self.log || self.agents || self.history
    }
}

/// Everything the TUI holds from the hub, and the owner's pending edit.
#[derive(Debug)]
pub struct Model {
    pub hub_label: String,
    pub who: Option<Whoami>,
    /// The session holds a writer. Nothing here sees the writer itself.
    pub can_write: bool,
    pub clock: Option<HubClock>,
    pub mono_now: Instant,
    pub conn: Conn,
    pub fleet: Fleet,
    pub log: FailLog,
    /// Recoveries: workers back on a higher rung.
    pub recs: RecLog,
    pub config: Config,
    /// The owner's pending edit of the list.
    pub edit: LadderEdit,
    /// The hub's staged rollout, as last heard (issue 33).
    pub staged: Staged,
    /// When another hub (another `instance`) last started a fresh screen.
    pub fresh_at: Option<Instant>,
    /// Another hub answers here: the header says so until a key
    /// acknowledges it (`Esc`).
    pub another_hub: Option<said::AnotherHub>,
    /// Every status message of the session, with its time (`:messages`).
    pub said: said::Messages,
    /// The hub's own report of itself (`GET /v1/health`, JSON).
    pub health: Option<crate::wire::Health>,
    /// The drill (`x` on the Ladder): the rungs marked down, in the order
    /// they were marked. Nothing is written.
    pub drill: Vec<String>,
    /// Where every healthy worker would land with those rungs down
    /// (`plan::drill_grouped`, as `macfleet agents drill` prints it).
    pub drill_projection: Option<plan::Projection>,
    /// Large-fleet mode (`large::LARGE_FLEET`): the summary and the window
    /// on screen; `None` while the TUI holds the whole fleet.
    pub large: Option<Large>,
    /// What the Workers view says while no worker has reported, when the
    /// session knows more than the hub (the demo: its fleet is starting).
    pub coming: Option<String>,
}

impl Model {
    pub fn new(hub_label: String, can_write: bool, now: Instant) -> Model {
        Model {
            hub_label,
            who: None,
            can_write,
            clock: None,
            mono_now: now,
            conn: Conn {
                stream: Stream::Connecting,
                last_ok: None,
                failing_since: None,
                last_error: None,
                refused: false,
                forbidden: false,
                broke_bound: false,
                broken: None,
            },
            fleet: Fleet::default(),
            log: FailLog::default(),
            recs: RecLog::default(),
            config: Config::default(),
            edit: LadderEdit::default(),
            staged: Staged::default(),
            fresh_at: None,
            another_hub: None,
            said: said::Messages::default(),
            health: None,
            drill: Vec::new(),
            drill_projection: None,
            large: None,
            coming: None,
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
        if self.conn.refused {
            ConnLabel::Refused
        } else if self.conn.forbidden {
            ConnLabel::Forbidden
        } else if let Some(t) = self.conn.failing_since {
            let d = self.mono_now.saturating_duration_since(t);
            if self.conn.broke_bound {
                ConnLabel::BrokeBound(d)
            } else {
                ConnLabel::Disconnected(d)
            }
        } else if let Some(b) = &self.conn.broken {
            ConnLabel::BrokeBound(self.mono_now.saturating_duration_since(b.since))
        } else if self.conn.last_ok.is_none() {
            ConnLabel::Connecting
        } else if self.conn.stream == Stream::Up {
            ConnLabel::Live
        } else {
            ConnLabel::Polling
        }
    }

    /// The status word, from the hub's own judgement of each worker; the
    /// words only the hub can know (`CONFIG INVALID`: its file cannot be
    /// read, replaced or is gone, as well as not validating; `BUILT-IN
    /// ORDER`) are taken from its health's `word` too.
    pub fn verdict(&self) -> Option<Verdict> {
        let h = self.health.as_ref();
        let says = |v: Verdict| {
            h.and_then(|h| h.word.as_deref())
                .is_some_and(|w| w == v.to_string())
        };
        let built_in = h.is_some_and(|h| h.built_in_order) || says(Verdict::BuiltInOrder);
        // The red banner's "does not validate": the hub's health, or the
        // file as the screen last read it.
        let invalid = h
            .and_then(|h| h.config.as_ref())
            .is_some_and(|c| c.invalid.is_some())
            || self.config.on_disk.is_some()
            || says(Verdict::ConfigInvalid);
        let halted = self.staged.halt_stands(&self.config.history);
        let database =
            h.is_some_and(|h| h.database.unavailable) || says(Verdict::DatabaseUnavailable);
        verdict::verdict(
            self.conn_label(),
            &self.fleet.agg,
            verdict::Lists {
                built_in,
                config_invalid: invalid,
                rollout_halted: halted,
                database_unavailable: database,
            },
        )
    }

    /// The data on screen is from a hub we cannot currently reach (or
    /// that refuses our token).
    pub fn is_stale(&self) -> bool {
        self.conn.refused
            || self.conn.forbidden
            || matches!(
                self.conn_label(),
                ConnLabel::Disconnected(_) | ConnLabel::BrokeBound(_)
            )
    }

    /// The hub's problems as one banner line, when it says it is degraded
    /// (or gives the built-in order): a document on disk that does not
    /// validate first, as `the hub's file does not validate (line 2,
    /// column 33); workers keep …: <the parser's words>`, then its other problems as it words them.
    pub fn hub_problems(&self) -> Option<String> {
        let h = self.health.as_ref()?;
        if h.status == "ok" && !h.built_in_order {
            return None;
        }
        let mut parts = Vec::new();
        let invalid = h
            .config
            .as_ref()
            .and_then(|c| c.invalid.as_ref().map(|i| (c, i)));
        if let Some((c, i)) = invalid {
            let mut at = String::new();
            if let Some(l) = i.line {
                at.push_str(&format!(" (line {l}"));
                if let Some(col) = i.column {
                    at.push_str(&format!(", column {col}"));
                }
                at.push(')');
            }
            let keep = match c.order {
                crate::wire::OrderSource::BuiltIn => format!(
                    "every worker is given the built-in order ({})",
                    c.agents.join(", ")
                ),
                _ => format!(
                    "workers keep the last accepted list ({}, revision {})",
                    c.agents.join(", "),
                    c.projected_revision
                ),
            };
            // Where and what workers are told first: a line cut at the
            // screen's edge loses the parser's words, not those.
            parts.push(format!(
                "the hub's file does not validate{at}; {keep}: {}",
                i.message
            ));
        }
        parts.extend(
            h.problems
                .iter()
                .filter(|p| invalid.is_none() || !p.contains("does not validate"))
                .cloned(),
        );
        if parts.is_empty() {
            parts.push(if h.built_in_order {
                "every worker is given the built-in order".into()
            } else {
                "the hub says it is degraded".into()
            });
        }
        Some(parts.join(" · "))
    }

    /// How long the hub has refused our token (401 or 403), if it does.
    pub fn refused_for(&self) -> Option<Duration> {
        (self.conn.refused || self.conn.forbidden).then(|| {
            self.conn.failing_since.map_or(Duration::ZERO, |t| {
                self.mono_now.saturating_duration_since(t)
            })
        })
    }

    /// `GET /v1/whoami` answered. True when it is another hub than the
    /// one the screen holds (another `instance` after a reconnect): the
    /// fleet, the log, the list and its history, and a pending edit, all
    /// of the other hub, are dropped, so two hubs' data never mix.
    pub fn apply_whoami(&mut self, w: Whoami, ch: &mut Changes) -> bool {
        let other = matches!(
            (self.who.as_ref().and_then(|o| o.instance.as_deref()), w.instance.as_deref()),
            (Some(old), Some(new)) if old != new
        );
        self.who = Some(w);
        if other {
            self.fleet = Fleet::default();
            self.log = FailLog::default();
            self.recs = RecLog::default();
            self.config = Config::default();
            self.edit = LadderEdit::default();
            self.staged = Staged::default();
            self.health = None;
            self.drill.clear();
            self.drill_projection = None;
            self.large = None;
            self.fresh_at = Some(self.mono_now);
            self.another_hub = Some(said::AnotherHub { since: self.now() });
            ch.all_workers = true;
            ch.log = true;
            ch.agents = true;
            ch.history = true;
        }
        other
    }

    /// A status message said now: kept for `:messages`.
    pub fn said(&mut self, text: &str) {
        let at = self.now();
        self.said.push(at, text);
    }

    /// Age of the last good data.
    pub fn data_age(&self) -> Option<Duration> {
        self.conn
            .last_ok
            .map(|t| self.mono_now.saturating_duration_since(t))
    }

    /// A good answer from the hub at `at`.
    pub fn ok(&mut self, at: Instant) {
        self.conn.last_ok = Some(at.max(self.conn.last_ok.unwrap_or(at)));
        self.conn.failing_since = None;
        // What a request that still breaks a bound said stays on the
        // status line until it answers within it.
        self.conn.last_error = self.conn.broken.as_ref().map(|b| b.error.clone());
        self.conn.refused = false;
        self.conn.forbidden = false;
        self.conn.broke_bound = false;
    }

    /// `what` answered within the API's bounds: a bound it broke is mended.
    pub fn answered(&mut self, what: Fetch) {
        if self.conn.broken.as_ref().is_some_and(|b| b.what == what) {
            self.conn.broken = None;
            if self.conn.failing_since.is_none() {
                self.conn.last_error = None;
            }
        }
    }

    pub fn advance_mono(&mut self, t: Instant) {
        if t > self.mono_now {
            self.mono_now = t;
        }
    }

    /// `GET /v1/workers` answered at `at`: the clock pinned to the hub's
    /// `now`, the workers applied. True when the document of the page's
    /// revision is to be fetched (with its history).
    pub fn apply_workers(&mut self, page: WorkersPage, at: Instant, ch: &mut Changes) -> bool {
        self.advance_mono(at);
        self.answered(Fetch::Workers);
        self.ok(at);
        if self.large.is_some() {
            // A page asked before the session crossed into large-fleet
            // mode: the fleet is not held any more.
            return false;
        }
        self.pin_clock(page.now, at);
        self.fleet.set_interval(page.heartbeat_interval_s);
        ch.slots
            .extend(self.fleet.set_revision(&page.config_revision));
        if page.delta {
            let fleet = &mut self.fleet;
            ch.slots
                .extend(page.workers.into_iter().filter_map(|w| fleet.apply_hub(w)));
        } else {
            self.fleet.replace_all(page.workers);
            ch.all_workers = true;
        }
        self.wants_config(&page.config_revision)
    }

    /// The hub's `now` at `at`, pinned to the local clock when the
    /// estimate is off by more than the slack.
    fn pin_clock(&mut self, now: DateTime<Utc>, at: Instant) {
        let anchor = match self.clock {
            Some(c) if c.from_hub => {
                let el = at.saturating_duration_since(c.mono);
                let est = c.hub + TimeDelta::from_std(el).unwrap_or_default();
                (est - now).num_milliseconds().abs() > CLOCK_SLACK_MS
            }
            _ => true,
        };
        if anchor {
            self.clock = Some(HubClock {
                hub: now,
                mono: at,
                from_hub: true,
            });
        }
    }

    /// True when the document of revision `rev` is to be fetched (with
    /// its history): not held, and not asked already.
    fn wants_config(&mut self, rev: &str) -> bool {
        let c = &mut self.config;
        let missing = c.revision.as_deref() != Some(rev) || c.text.is_none();
        if missing && c.requested.as_deref() != Some(rev) {
            c.requested = Some(rev.to_string());
            return true;
        }
        false
    }

    /// `GET /v1/summary` (or the `summary` event) at `at`. A polled one
    /// decides the mode (`large::is_large`): crossing into large-fleet
    /// mode drops the fleet held (the window is asked by the Workers view),
    /// leaving it drops the window (the poller fetches the whole fleet).
    /// In large-fleet mode its counts are the fleet's. True when the
    /// document of its revision is to be fetched.
    pub fn apply_summary(
        &mut self,
        s: crate::wire::Summary,
        at: Instant,
        polled: bool,
        ch: &mut Changes,
    ) -> bool {
        self.advance_mono(at);
        if polled {
            self.answered(Fetch::Summary);
            let large = large::is_large(&s, self.large.is_some(), large::threshold());
            if large != self.large.is_some() {
                self.large = large.then(Large::default);
                let revision = std::mem::take(&mut self.fleet.revision);
                self.fleet = Fleet::default();
                self.fleet.revision = revision;
                ch.all_workers = true;
            }
        }
        let Some(l) = &self.large else {
            return false;
        };
        if l.summary_at.is_some_and(|t| t > at) {
            return false;
        }
        self.ok(at);
        self.fleet.set_summary(large::aggregates(&s));
        let rev = s.config_revision.clone();
        self.fleet.set_interval(s.heartbeat_interval_s);
        self.pin_clock(s.now, at);
        // Until a window answers, the summary's most urgent workers are
        // the first rows of the default view (urgency, no filter): a
        // first screen with rows needs no pass of the hub over its fleet.
        let first_rows = self
            .large
            .as_ref()
            .is_some_and(|l| l.window.at.is_none() && !s.urgent.is_empty());
        if first_rows {
            let ids: Vec<String> = s.urgent.iter().map(|w| w.worker.clone()).collect();
            self.fleet.replace_all(s.urgent.clone());
            let slots = ids.iter().filter_map(|id| self.fleet.slot_of(id)).collect();
            if let Some(l) = &mut self.large {
                l.window = large::Window {
                    ask: None,
                    total: s.workers,
                    base: 0,
                    slots,
                    at: None,
                };
            }
            ch.all_workers = true;
        }
        if let Some(l) = &mut self.large {
            l.summary_at = Some(at);
            l.summary = Some(s);
        }
        ch.slots.extend(self.fleet.set_revision(&rev));
        ch.agents = true;
        self.wants_config(&rev)
    }

    /// A window answered `ask` (large-fleet mode), asked of the hub
    /// `instance`. Dropped when the session is not in large-fleet mode,
    /// when it is from another hub instance than the one on screen, or
    /// when it answers another list than the view shows or is older than
    /// the window held. Else its workers are the fleet held, in the view's
    /// order. True when the document of its revision is to be fetched.
    pub fn apply_window(
        &mut self,
        ask: WindowAsk,
        page: WorkersPage,
        at: Instant,
        instance: Option<String>,
        ch: &mut Changes,
    ) -> bool {
        self.advance_mono(at);
        let held = self.who.as_ref().and_then(|w| w.instance.as_deref());
        if let (Some(held), Some(asked)) = (held, instance.as_deref()) {
            if held != asked {
                return false;
            }
        }
        let Some(l) = &self.large else {
            return false;
        };
        if !l.takes(&ask) {
            return false;
        }
        self.ok(at);
        self.pin_clock(page.now, at);
        self.fleet.set_interval(page.heartbeat_interval_s);
        ch.slots
            .extend(self.fleet.set_revision(&page.config_revision));
        let total = page.total.unwrap_or(page.workers.len() as u64);
        let offset = page.offset.unwrap_or(0);
        let n = page.workers.len() as u64;
        let mut ids: Vec<String> = page.workers.iter().map(|w| w.worker.clone()).collect();
        self.fleet.replace_all(page.workers);
        let base = if ask.reverse {
            ids.reverse();
            total.saturating_sub(offset + n)
        } else {
            offset
        };
        let slots = ids.iter().filter_map(|id| self.fleet.slot_of(id)).collect();
        let l = self.large.get_or_insert_with(Large::default);
        l.window = large::Window {
            ask: Some(ask),
            total,
            base,
            slots,
            at: Some(at),
        };
        ch.all_workers = true;
        self.wants_config(&page.config_revision)
    }

    /// A new revision from the event stream. True when the document
    /// changed and its text is to be fetched (and an edit neither pending
    /// nor on a screen is to start from it: the edit overlay's
    /// `forget_unchanged`).
    pub fn apply_config(&mut self, ev: ConfigEvent, ch: &mut Changes) -> bool {
        let changed = self.config.revision.as_deref() != Some(ev.revision.as_str());
        if changed {
            // The event carries only the list, so the text is fetched now.
            // Until it is in, every edit key says it has not arrived; a
            // colleague's write must not leave the owner there until `r`.
            self.config.text = None;
            self.config.requested = Some(ev.revision.clone());
        }
        self.config.agents = ev.agents;
        self.config.revision = Some(ev.revision.clone());
        ch.slots.extend(self.fleet.set_revision(&ev.revision));
        ch.agents = true;
        changed
    }

    /// The list's history; until the list itself is known, its newest
    /// entry stands for it.
    pub fn apply_history(&mut self, h: History, ch: &mut Changes) {
        let c = &mut self.config;
        c.history = h.revisions;
        if c.agents.is_empty() {
            if let Some(newest) = c.history.first() {
                c.agents = newest.agents.clone();
                c.revision = Some(newest.revision.clone());
            }
        }
        ch.agents = true;
        ch.history = true;
    }

    /// A request failed at `at` (`refused`: the hub answered 401). Only the
    /// worker poll (and whoami) decide "disconnected": they are the
    /// requests that run all the time.
    pub fn failed(&mut self, what: Fetch, at: Instant, error: String, refused: bool) {
        self.advance_mono(at);
        if matches!(what, Fetch::Workers | Fetch::Whoami) && self.conn.failing_since.is_none() {
            self.conn.failing_since = Some(at);
        }
        if what == Fetch::Config && !refused {
            // Ask again with the next poll: an edit needs the text.
            self.config.requested = None;
        }
        self.conn.refused |= refused;
        self.conn.last_error = Some(error);
    }

    /// The hub's answer to `what` at `at` broke a bound of the API
    /// (`error` names the request and the bound): the word is `HUB ERROR`
    /// while the worker poll meets it, and what is on screen is the last
    /// known.
    pub fn broke_bound(&mut self, what: Fetch, at: Instant, error: String) {
        self.failed(what, at, error.clone(), false);
        if matches!(what, Fetch::Workers | Fetch::Whoami) {
            self.conn.broke_bound = true;
        }
        if !matches!(what, Fetch::Config | Fetch::History) {
            let since = match &self.conn.broken {
                Some(b) if b.what == what => b.since,
                _ => at,
            };
            self.conn.broken = Some(conn::Broken { what, since, error });
        }
    }

    /// The hub answered 403 to `what` at `at`.
    pub fn forbidden(&mut self, what: Fetch, at: Instant, error: String) {
        self.failed(what, at, error, false);
        self.conn.forbidden = true;
    }

    /// The worker's newest recovery while it still stands on the rung it
    /// came back to: it runs that agent, and no failover of it came in
    /// after the recovery (one away and back again is a recovery of its own).
    pub fn back_on(&self, worker: &str) -> Option<&reclog::RecRec> {
        let r = self.recs.latest_of(worker)?;
        let e = self.fleet.by_id(worker)?;
        if e.view.active_agent.as_deref() != Some(&*r.to) {
            return None;
        }
        let failed_since = self
            .log
            .of_worker(worker)
            .next()
            .is_some_and(|f| f.received_at > r.at);
        (!failed_since).then_some(r)
    }

    /// The history entry a key names.
    pub fn history_entry(&self, k: &HistKey) -> Option<&HistoryEntry> {
        self.config.entry(k)
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

    /// The edit, started from the hub's document if none is open; why not
    /// when it cannot be.
    pub fn plan_mut(&mut self) -> Result<&mut PendingEdit, String> {
        if let (None, Some(d)) = (&self.edit.plan, &self.config.on_disk) {
            return Err(format!(
                "{}: e opens it as it stands on disk to mend it",
                d.sentence()
            ));
        }
        if self.edit.plan.is_none() {
            let (Some(text), Some(rev)) = (&self.config.text, &self.config.revision) else {
                return Err("the hub's document has not arrived yet: try again in a moment".into());
            };
            match PendingEdit::new(text.clone(), rev.clone()) {
                Ok(p) => self.edit.plan = Some(p),
                Err(e) => return Err(format!("cannot edit this document: {e}")),
            }
        }
        self.edit.plan.as_mut().ok_or_else(String::new)
    }

    /// The list workers are told now: the hub's health says which (the
    /// last accepted one, or the built-in order, while its file does not
    /// validate), else the list of the document held.
    pub fn in_force(&self) -> Vec<String> {
        self.health
            .as_ref()
            .and_then(|h| h.config.as_ref())
            .map_or_else(|| self.config.agents.clone(), |c| c.agents.clone())
    }

    /// The projection of the pending order over the workers held now, and
    /// the rollout's counts.
    pub fn refresh_projection(&mut self) {
        if let Some(l) = &self.large {
            // The fleet is not held: the rollout counts from the summary
            // (live workers per revision), and nothing is projected over
            // the few rows on screen.
            if let (Some(r), Some(s)) = (&mut self.edit.rollout, &l.summary) {
                let on = s
                    .revisions
                    .iter()
                    .filter(|c| c.revision.as_deref() == Some(r.revision.as_str()))
                    .map(|c| c.workers)
                    .sum::<u64>();
                r.on = usize::try_from(on).unwrap_or(usize::MAX);
                r.healthy = usize::try_from(s.healthy + s.stale).unwrap_or(usize::MAX);
            }
            self.edit.projection = None;
            self.drill_projection = None;
            return;
        }
        if let Some(r) = &mut self.edit.rollout {
            let (mut on, mut healthy, mut in_turn) = (0, 0, 0);
            // A write to a cohort first is followed over its cohort.
            let followed = self
                .fleet
                .iter()
                .filter(|(_, e)| !r.cohort || e.view.cohort);
            for (_, e) in followed {
                if e.state == WorkerState::Healthy {
                    healthy += 1;
                    match e.view.lag(&r.revision) {
                        None => on += 1,
                        Some(crate::wire::Lag::InTurn { .. }) => in_turn += 1,
                        Some(crate::wire::Lag::Behind) => {}
                    }
                }
            }
            (r.on, r.healthy, r.in_turn) = (on, healthy, in_turn);
        }
        self.refresh_drill();
        let Some(new) = self.edit.order().map(|o| o.to_vec()) else {
            self.edit.projection = None;
            return;
        };
        let groups = self.shapes();
        let today = match &self.edit.plan {
            Some(p) => p.base_order().to_vec(),
            None => self.config.agents.clone(),
        };
        self.edit.projection = Some(plan::project_grouped(&groups, &today, &new));
    }

    /// Workers that report the same list, active agent and capabilities
    /// share those values (interned): each shape once, with how many
    /// workers have it (a 100,000-worker fleet has a few hundred), for the
    /// projections.
    fn shapes(&self) -> Vec<(&Entry, usize)> {
        let mut shapes: std::collections::HashMap<_, (&Entry, usize), foldhash::fast::RandomState> =
            Default::default();
        for (_, e) in self.fleet.iter() {
            let v = &e.view;
            let active = v.active_agent.as_ref().map_or(0, addr);
            let shape = (
                addr(&v.agents),
                active,
                v.capabilities.ptr(),
                e.state,
                v.headroom,
            );
            shapes.entry(shape).or_insert((e, 0)).1 += 1;
        }
        shapes.into_values().collect()
    }

    /// `x` on the Ladder: mark `agent` down in the drill, or clear it if
    /// it is marked. Only a rung of the hub's list can be drilled (an
    /// agent it lacks routes no worker). Nothing is written.
    pub fn toggle_drill(&mut self, agent: &str) -> Result<bool, String> {
        if let Some(i) = self.drill.iter().position(|a| a == agent) {
            self.drill.remove(i);
            self.refresh_drill();
            return Ok(false);
        }
        if let Some(l) = &self.large {
            let n = l.summary.as_ref().map_or(0, |s| s.workers);
            return Err(format!(
                "the drill projects every worker, and this session holds only the rows on \
                 screen of {n} (large-fleet mode): `macfleet agents drill {agent}` fetches the fleet to project it"
            ));
        }
        if !self.config.agents.iter().any(|a| a == agent) {
            return Err(format!(
                "{agent} is not a rung of the hub's list: no worker is routed to it, nothing to drill"
            ));
        }
        self.drill.push(agent.to_string());
        self.refresh_drill();
        Ok(true)
    }

    /// The drill's projection over the workers held now, onto the hub's
    /// list (a rung the list no longer holds leaves the drill).
    pub fn refresh_drill(&mut self) {
        let list = &self.config.agents;
        self.drill.retain(|a| list.contains(a));
        if self.drill.is_empty() {
            self.drill_projection = None;
            return;
        }
        let p = plan::drill_grouped(&self.shapes(), &self.config.agents, &self.drill);
        self.drill_projection = Some(p);
    }

    /// The workers not on the written revision, healthy ones reporting an
    /// older revision first, then stale, then lost (each by id); at most
    /// [`BEHIND_MAX`], and how many there are in all.
    pub fn rollout_behind(&self) -> (Vec<Behind>, usize) {
        let Some(r) = &self.edit.rollout else {
            return (Vec::new(), 0);
        };
        let rank = |s: WorkerState| match s {
            WorkerState::Healthy => 0,
            WorkerState::Stale => 1,
            WorkerState::Lost => 2,
        };
        let mut all: Vec<Behind> = self
            .fleet
            .iter()
            .filter(|(_, e)| e.view.config_revision.as_deref() != Some(r.revision.as_str()))
            .filter(|(_, e)| !r.cohort || e.view.cohort)
            .map(|(_, e)| Behind {
                worker: e.view.worker.to_string(),
                state: e.state,
                revision: e.view.config_revision.as_deref().map(str::to_string),
                heard: e.view.received_at,
                in_turn: edit::InTurn::of(e.view.lag(&r.revision)),
            })
            .collect();
        let n = all.len();
        all.sort_by(|a, b| {
            rank(a.state)
                .cmp(&rank(b.state))
                .then_with(|| a.worker.cmp(&b.worker))
        });
        all.truncate(BEHIND_MAX);
        (all, n)
    }

    /// Names the add prompt offers: the known agents and those workers
    /// report, minus those already listed.
    pub fn add_choices(&self) -> Vec<String> {
        let listed: &[String] = self
            .edit
            .plan
            .as_ref()
            .map(|p| p.order())
            .unwrap_or(&self.config.agents);
        let mut out: Vec<String> = KNOWN_AGENTS.iter().map(|s| s.to_string()).collect();
        for a in self.fleet.agg.agents.keys() {
            if !out.contains(a) {
                out.push(a.clone());
            }
        }
        out.retain(|a| !listed.contains(a));
        out.sort();
        out
    }
}
