//! The hub's staged rollout (issue 33) as the TUI last heard of it: the
//! newest rollout (`GET /v1/rollouts/current`, polled with the workers,
//! and the SSE `rollout` event at each step), and the steps History's
//! answer lists. Plain data: the Ladder draws its line from it, the
//! status word reads whether a halt still stands, and the fleet judges the
//! cohort on the candidate in sync. Nothing here re-judges the rollout:
//! its figures, its time left and its state are the hub's, shown as last
//! known (with their age) when they cannot be refreshed.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::rollout::wire::{RolloutEvent, RolloutView};
use crate::rollout::{State, Step, StepKind};
use crate::wire::HistoryEntry;

/// How long the Ladder still shows a rollout promoted or aborted.
pub const ENDED_SHOWN: chrono::TimeDelta = chrono::TimeDelta::minutes(10);

/// What the hub said of its rollouts.
#[derive(Debug, Clone, PartialEq)]
pub enum RolloutFeed {
    /// `GET /v1/rollouts/current`: the newest (`None`: none has run).
    Current(Option<Box<RolloutView>>),
    /// The SSE `rollout` event: a step and the rollout after it.
    Step(Box<RolloutEvent>),
    /// `GET /v1/rollouts/current` failed: what is held is last known.
    Unread(String),
    /// History's `rollouts`: the steps of the newest rollouts, newest first.
    Steps(Vec<Step>),
}

/// The newest rollout as last heard, and History's steps.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Staged {
    /// `None`: none heard of yet, or none has run.
    pub view: Option<RolloutView>,
    /// When the hub last answered about it (a poll or an event).
    pub at: Option<Instant>,
    /// Why the last poll was not answered, while it is not.
    pub unread: Option<String>,
    /// History's steps of the newest rollouts, newest first.
    pub steps: Vec<Step>,
    /// The Ladder's cursor is on the rollout's line (Enter: its detail).
    pub selected: bool,
}

impl Staged {
    /// Take what the hub said at `at`. True when the rollout held changed
    /// (its state, figures or time left).
    pub fn apply(&mut self, feed: RolloutFeed, at: Instant) -> bool {
        let before = self.view.clone();
        match feed {
            RolloutFeed::Current(v) => {
                self.view = v.map(|v| *v);
                self.at = Some(at);
                self.unread = None;
            }
            RolloutFeed::Step(ev) => {
                let ev = *ev;
                if !self.steps.contains(&ev.step) {
                    self.steps.insert(0, ev.step);
                }
                self.view = Some(ev.rollout);
                self.at = Some(at);
                self.unread = None;
            }
            RolloutFeed::Unread(why) => {
                self.unread = Some(why);
                return false;
            }
            RolloutFeed::Steps(steps) => {
                let changed = self.steps != steps;
                self.steps = steps;
                return changed;
            }
        }
        before != self.view
    }

    /// The rollout baking, if one does.
    pub fn baking(&self) -> Option<&RolloutView> {
        self.view.as_ref().filter(|v| v.state == State::Baking)
    }

    /// The candidate the cohort is told while one bakes.
    pub fn candidate(&self) -> Option<&str> {
        self.baking().map(|v| v.candidate_revision.as_str())
    }

    /// When the rollout held ended (its last step), if it has.
    pub fn ended_at(&self) -> Option<DateTime<Utc>> {
        let v = self.view.as_ref().filter(|v| v.state != State::Baking)?;
        let end =
            |k: StepKind| matches!(k, StepKind::Promoted | StepKind::Halted | StepKind::Aborted);
        Some(
            v.steps
                .iter()
                .rev()
                .find(|s| end(s.step))
                .map_or(v.started_at, |s| s.at),
        )
    }

    /// The guard halted the newest rollout and nothing was written since
    /// (no revision in `history` newer than the halt): `ROLLOUT HALTED`
    /// holds, until the next write or rollout, as the hub's word does.
    pub fn halt_stands(&self, history: &[HistoryEntry]) -> bool {
        let Some(v) = self.view.as_ref().filter(|v| v.state == State::Halted) else {
            return false;
        };
        let at = self.ended_at().unwrap_or(v.started_at);
        !history.iter().any(|h| h.at > at)
    }

    /// The rollout the Ladder shows: the one baking; a halt while it
    /// stands; a promotion or an abort for [`ENDED_SHOWN`] after it, by
    /// the hub's clock `now`.
    pub fn shown(&self, history: &[HistoryEntry], now: DateTime<Utc>) -> Option<&RolloutView> {
        let v = self.view.as_ref()?;
        match v.state {
            State::Baking => Some(v),
            State::Halted => self.halt_stands(history).then_some(v),
            State::Promoted | State::Aborted => {
                let end = self.ended_at()?;
                (now - end < ENDED_SHOWN).then_some(v)
            }
        }
    }

    /// How old what is held is, when the hub cannot be asked about it
    /// now (`None`: fresh).
    pub fn last_known(&self, now: Instant, stale: bool) -> Option<Duration> {
        if self.unread.is_none() && !stale {
            return None;
        }
        Some(
            self.at
                .map_or(Duration::ZERO, |t| now.saturating_duration_since(t)),
        )
    }
}
