//! The hub's answers applied to the model, one method each, noting what
//! changed (`Changes`) and saying what the app is to do next ([`Wants`]):
//! `App::update` routes a message here and turns the wants into effects.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::conn::{FORBIDDEN, Fetch, HubClock, REFUSED, Stream};
use super::staged::RolloutFeed;
use super::{Changes, Model};
use crate::rollout::State;
use crate::wire::{
    ConfigEvent, FailoverRecord, FailoversPage, Health, History, RecoveriesPage, RecoveryRecord,
    Whoami, WorkerView,
};

/// After another hub started a fresh screen, its `reset` is not news.
const FRESH_QUIET: Duration = Duration::from_secs(30);

/// What applying an answer asks of the app.
#[derive(Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct Wants {
    /// Fetch the document (`GET /v1/config`).
    pub config: bool,
    /// Fetch the list's history.
    pub history: bool,
    /// Refetch everything.
    pub refetch: bool,
    /// Say this on the status line.
    pub say: Option<String>,
    /// Nothing visible changed (a failover or a recovery already held).
    pub unchanged: bool,
}

impl Wants {
    fn none() -> Wants {
        Wants::default()
    }

    /// The document and its history, when `yes` (a new revision).
    fn document(yes: bool) -> Wants {
        Wants {
            config: yes,
            history: yes,
            ..Wants::default()
        }
    }

    fn unchanged_unless(changed: bool) -> Wants {
        Wants {
            unchanged: !changed,
            ..Wants::default()
        }
    }
}

impl Model {
    /// A tick: the monotonic clock moves; until the hub has said its time,
    /// the wall clock stands for it.
    pub fn tick(&mut self, mono: Instant, wall: DateTime<Utc>) {
        self.advance_mono(mono);
        if self.clock.is_none() {
            self.clock = Some(HubClock {
                hub: wall,
                mono,
                from_hub: false,
            });
        }
    }

    /// `GET /v1/whoami`: another hub answering here is a fresh screen.
    pub fn whoami(&mut self, w: Whoami, ch: &mut Changes) -> Wants {
        self.answered(Fetch::Whoami);
        let (hub, instance) = (w.hub.clone(), w.instance.clone().unwrap_or_default());
        // An edit of the last hub's list is not written to this one;
        // the order typed is named, so nothing typed is lost unsaid.
        let pending = self.edit.pending_order().map(|o| o.join(", "));
        if !self.apply_whoami(w, ch) {
            return Wants::none();
        }
        let edit = pending.map_or(String::new(), |o| {
            format!(
                "; your pending edit of its list ({o}) is not written here: \
                 make it again on this hub's list"
            )
        });
        Wants {
            say: Some(format!(
                "another hub answers here ({hub}, instance {instance}): a fresh screen; the last \
                 hub's fleet, failover log and history are dropped{edit}"
            )),
            ..Wants::default()
        }
    }

    /// `GET /v1/health`: when what it says of its file changed (broken,
    /// mended, broken another way), the document is fetched as it stands.
    pub fn health(&mut self, h: Health) -> Wants {
        let said = h.config.as_ref().and_then(|c| c.invalid.clone());
        let changed = said != self.config.health_said;
        if changed {
            self.config.health_said = said;
        }
        self.health = Some(h);
        Wants {
            config: changed,
            ..Wants::default()
        }
    }

    /// A workers page (see [`Model::apply_workers`]).
    pub fn workers(
        &mut self,
        page: crate::wire::WorkersPage,
        at: Instant,
        ch: &mut Changes,
    ) -> Wants {
        Wants::document(self.apply_workers(page, at, ch))
    }

    /// The hub's summary (large-fleet mode).
    pub fn summary(
        &mut self,
        s: crate::wire::Summary,
        at: Instant,
        polled: bool,
        ch: &mut Changes,
    ) -> Wants {
        Wants::document(self.apply_summary(s, at, polled, ch))
    }

    /// A window of the hub's list (large-fleet mode).
    pub fn window(
        &mut self,
        ask: super::large::WindowAsk,
        page: crate::wire::WorkersPage,
        at: Instant,
        instance: Option<String>,
        ch: &mut Changes,
    ) -> Wants {
        Wants::document(self.apply_window(ask, page, at, instance, ch))
    }

    /// A page of the failover log (`fresh`: from its start).
    pub fn failovers(&mut self, page: FailoversPage, fresh: bool, ch: &mut Changes) -> Wants {
        self.answered(Fetch::Failovers);
        self.log.take_page(page.events, page.next, fresh);
        ch.log = true;
        Wants::none()
    }

    /// A `failover` event.
    pub fn failover(&mut self, r: FailoverRecord, ch: &mut Changes) -> Wants {
        let new = self.log.insert(r);
        ch.log |= new;
        Wants::unchanged_unless(new)
    }

    /// A page of the recovery log (`fresh`: from its start).
    pub fn recoveries(&mut self, page: RecoveriesPage, fresh: bool, ch: &mut Changes) -> Wants {
        self.answered(Fetch::Recoveries);
        self.recs.take_page(page.events, page.next, fresh);
        ch.log = true;
        Wants::none()
    }

    /// A `recovery` event.
    pub fn recovery(&mut self, r: RecoveryRecord, ch: &mut Changes) -> Wants {
        let new = self.recs.insert(r);
        ch.log |= new;
        Wants::unchanged_unless(new)
    }

    /// The hub's worker moves (`state` and `sync` events). In large-fleet
    /// mode only the rows held are kept fresh (the next window places
    /// them); the rest are not held.
    pub fn worker_events(&mut self, views: Vec<WorkerView>, ch: &mut Changes) -> Wants {
        let large = self.large.is_some();
        for w in views {
            if large && self.fleet.slot_of(&w.worker).is_none() {
                continue;
            }
            ch.slots.extend(self.fleet.apply_hub(w));
        }
        Wants::none()
    }

    /// A `config` event: the history is fetched, the document too when
    /// the revision is new.
    pub fn config_event(&mut self, ev: ConfigEvent, ch: &mut Changes) -> Wants {
        let changed = self.apply_config(ev, ch);
        Wants {
            config: changed,
            history: true,
            ..Wants::default()
        }
    }

    /// The document (`GET /v1/config`) as it validates: the list in force.
    pub fn document(&mut self, revision: String, agents: Vec<String>, text: String) {
        self.config.on_disk = None;
        self.config.agents = agents;
        self.config.revision = Some(revision);
        self.config.text = Some(text);
    }

    /// The list's history (see [`Model::apply_history`]).
    pub fn history(&mut self, h: History, ch: &mut Changes) -> Wants {
        self.apply_history(h, ch);
        Wants::none()
    }

    pub fn stream(&mut self, s: Stream) -> Wants {
        self.conn.stream = s;
        Wants::none()
    }

    /// The hub lost our place in its event log: refetch, saying so unless
    /// another hub just started a fresh screen (it never held our place,
    /// and saying so would hide that it is another hub).
    pub fn reset(&mut self) -> Wants {
        let fresh = self
            .fresh_at
            .is_some_and(|t| self.mono_now.saturating_duration_since(t) < FRESH_QUIET);
        Wants {
            refetch: true,
            say: (!fresh).then(|| "the hub lost our place in its event log; refetching".into()),
            ..Wants::default()
        }
    }

    /// A request failed (`refused`: a 401).
    pub fn fetch_failed(&mut self, what: Fetch, at: Instant, error: Option<String>) -> Wants {
        match error {
            Some(e) => self.failed(what, at, e, false),
            None => self.failed(what, at, REFUSED.to_string(), true),
        }
        Wants::none()
    }

    /// What the hub said of its staged rollout at `at`: the Ladder's line
    /// and the status word follow it, the cohort on the candidate is in
    /// sync while it bakes, and a write to a cohort first follows it (over
    /// the whole fleet once promoted; no more once halted or aborted).
    pub fn rollout(&mut self, feed: RolloutFeed, at: Instant, ch: &mut Changes) -> Wants {
        self.advance_mono(at);
        let changed = self.staged.apply(feed, at);
        ch.slots
            .extend(self.fleet.set_candidate(self.staged.candidate()));
        if let Some(r) = self.edit.rollout.as_mut().filter(|r| r.cohort) {
            let v = self.staged.view.as_ref();
            match v
                .filter(|v| v.candidate_revision == r.revision)
                .map(|v| v.state)
            {
                Some(State::Promoted) => r.cohort = false,
                Some(State::Halted | State::Aborted) => self.edit.rollout = None,
                Some(State::Baking) | None => {}
            }
        }
        if self.edit.waited_on.is_some() && self.staged.view.is_some() {
            let ended = self.staged.baking().map(|v| &v.id) != self.edit.waited_on.as_ref();
            if ended {
                // Refused while it baked; it has ended: `w` writes now.
                self.edit.waited_on = None;
                self.edit.error = None;
            }
        }
        ch.agents |= changed;
        // The age of what is held shows on the line once it is unread.
        Wants::default()
    }

    /// The hub's answer broke a bound of the API.
    pub fn out_of_bounds(&mut self, what: Fetch, at: Instant, error: String) -> Wants {
        self.broke_bound(what, at, error);
        Wants::none()
    }

    /// A 403.
    pub fn refused_role(&mut self, what: Fetch, at: Instant) -> Wants {
        self.forbidden(what, at, FORBIDDEN.to_string());
        Wants::none()
    }
}
