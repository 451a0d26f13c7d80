//! A rollout's state and its transitions, pure: the hub passes in the time
//! and the figures, stores the [`Rollout`] (serde, in its database) and acts
//! on what changed (tells the cohort the accepted list after a halt, writes
//! the file on a promotion, sends the step as an SSE `rollout` event).
//!
//! ```text
//!            judge: guard halts             ┌──────── Halted
//!   start ─▶ Baking ─────────────────────────┤
//!            │  bake ended, auto, quiet ─────┼──────── Promoted
//!            │  promote() (owner) ───────────┘
//!            │  abort(owner | hand edit) ─────────────  Aborted
//!            └─ bake ended, manual or too few: waits (still Baking)
//! ```
//!
//! The bake counts only while the hub runs: the hub calls [`Rollout::tick`]
//! with the time it ran since its last tick, never with wall-clock time
//! across a restart. Every transition out of Baking is refused once the
//! rollout has ended ([`NotBaking`], the hub's `409 rollout_not_baking`).

use super::cohort::Cohort;
use super::guard::{self, Figures, Policy, Verdict};
use super::query::{Bake, CohortSpec, Promote};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;
use thiserror::Error;

/// `by` of the steps the hub takes by itself.
pub const BY_GUARD: &str = "(guard)";
/// `by` of an abort by a hand edit: the history's word for it.
pub const BY_HAND_EDIT: &str = "(changed on disk)";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    Baking,
    Promoted,
    Halted,
    Aborted,
}

/// The list a worker is told in its heartbeat's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Told {
    /// The rollout's candidate (a cohort worker while it bakes).
    Candidate,
    /// The accepted list, the one in the file (after a promotion, that is
    /// the candidate the hub has written).
    Accepted,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    Started,
    /// The bake ended and the rollout waits for the owner.
    Waiting,
    Promoted,
    Halted,
    Aborted,
}

/// One step, as History's `rollouts` list and the SSE `rollout` event
/// carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The rollout's id.
    pub id: String,
    pub at: DateTime<Utc>,
    pub by: String,
    pub step: StepKind,
    pub reason: Option<String>,
}

/// Why a rollout whose bake has ended has not promoted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "why")]
pub enum Wait {
    /// `promote=manual`.
    Manual,
    /// Too few cohort workers ran the candidate for the guard to judge.
    TooFew { workers: u64, needed: u64 },
}

/// Why a rollout is aborted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Abort {
    /// `POST /v1/rollouts/current/abort` by this principal.
    Owner(String),
    /// The file was edited by hand while it baked: the accepted list the
    /// rollout was measured against is gone.
    HandEdit,
}

/// The figures of the last judgement: what `GET /v1/rollouts/current`
/// shows, frozen when the rollout ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    /// Live workers in the cohort (on the candidate or not yet).
    pub cohort_workers: u64,
    /// The cohort workers that run the candidate.
    pub cohort: Figures,
    /// The live workers outside the cohort.
    pub rest: Figures,
}

/// What `POST /v1/rollouts` starts from (the hub drew the cohort and the
/// salt, validated the candidate and took its revision).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Start {
    pub id: String,
    pub cohort: Cohort,
    /// What the owner asked for, for display (`10%` or `7`).
    pub asked: CohortSpec,
    pub base_revision: String,
    pub candidate_revision: String,
    pub agents: Vec<String>,
    pub bake: Bake,
    pub promote: Promote,
    /// The cohort workers' figures when it started (the start of a halt's
    /// arrow), when the hub has them.
    pub cohort_before: Option<Figures>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rollout {
    pub id: String,
    /// The salt and threshold; the salt is kept so a restarted hub draws
    /// the same cohort.
    pub cohort: Cohort,
    pub asked: CohortSpec,
    pub base_revision: String,
    pub candidate_revision: String,
    /// The candidate list.
    pub agents: Vec<String>,
    pub started_at: DateTime<Utc>,
    pub by: String,
    pub bake: Bake,
    /// Time counted while the hub ran, at most `bake`.
    pub baked: Duration,
    pub promote: Promote,
    pub state: State,
    /// Why it halted or was aborted.
    pub reason: Option<String>,
    /// Set while the bake has ended and it waits for the owner.
    pub waiting: Option<Wait>,
    pub cohort_before: Option<Figures>,
    pub last: Observation,
    pub steps: Vec<Step>,
}

/// A transition asked of a rollout that has ended.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("rollout {id} is not baking: it is {state}")]
pub struct NotBaking {
    pub id: String,
    pub state: State,
}

impl Rollout {
    pub fn start(s: Start, at: DateTime<Utc>, by: &str) -> Rollout {
        let cohort = match s.asked {
            CohortSpec::Share(_) => s.asked.to_string(),
            CohortSpec::Count(n) => super::cohort::workers(n),
        };
        let reason = format!(
            "to a cohort of {cohort} for {}, promote={}",
            s.bake, s.promote
        );
        let mut r = Rollout {
            id: s.id,
            cohort: s.cohort,
            asked: s.asked,
            base_revision: s.base_revision,
            candidate_revision: s.candidate_revision,
            agents: s.agents,
            started_at: at,
            by: by.to_owned(),
            bake: s.bake,
            baked: Duration::ZERO,
            promote: s.promote,
            state: State::Baking,
            reason: None,
            waiting: None,
            cohort_before: s.cohort_before,
            last: Observation::default(),
            steps: Vec::new(),
        };
        r.record(at, by, StepKind::Started, Some(reason));
        r
    }

    pub fn is_baking(&self) -> bool {
        self.state == State::Baking
    }

    /// Counts `ran`, the time the hub ran since its last tick, into the
    /// bake (up to its length); nothing once it has ended.
    pub fn tick(&mut self, ran: Duration) {
        if self.is_baking() {
            self.baked = self.baked.saturating_add(ran).min(self.bake.duration());
        }
    }

    pub fn bake_ended(&self) -> bool {
        self.baked >= self.bake.duration()
    }

    /// Whole seconds of bake left, rounded up; 0 once the bake has ended
    /// or the rollout has.
    pub fn time_left_s(&self) -> u64 {
        if !self.is_baking() {
            return 0;
        }
        let left = self.bake.duration().saturating_sub(self.baked);
        left.as_secs() + u64::from(left.subsec_nanos() > 0)
    }

    /// Judges the figures (see [`guard::judge`]) and takes the step they
    /// call for: a halt at any time, at the bake's end a promotion (auto,
    /// the guard quiet) or a wait for the owner. Returns the step taken,
    /// if any. An ended rollout keeps its last figures and takes none.
    pub fn judge(&mut self, obs: Observation, policy: &Policy, at: DateTime<Utc>) -> Option<&Step> {
        if !self.is_baking() {
            return None;
        }
        self.last = obs;
        let verdict = guard::judge(&obs.cohort, &obs.rest, policy);
        if let Verdict::Halt(reason) = verdict {
            let reason = match &self.cohort_before {
                Some(before) => reason.with_before(before),
                None => reason,
            };
            self.state = State::Halted;
            self.reason = Some(reason.to_string());
            self.waiting = None;
            return Some(self.record(at, BY_GUARD, StepKind::Halted, self.reason.clone()));
        }
        if !self.bake_ended() {
            return None;
        }
        let wait = match (self.promote, verdict) {
            (Promote::Manual, _) => Wait::Manual,
            (Promote::Auto, Verdict::TooFew { workers, needed }) => {
                Wait::TooFew { workers, needed }
            }
            (Promote::Auto, _) => {
                self.state = State::Promoted;
                self.waiting = None;
                return Some(self.record(at, BY_GUARD, StepKind::Promoted, None));
            }
        };
        // One step when it starts to wait, another only if why changes
        // kind (the counts of TooFew move with every judgement).
        let same = std::mem::discriminant;
        if self.waiting.is_some_and(|w| same(&w) == same(&wait)) {
            self.waiting = Some(wait);
            return None;
        }
        self.waiting = Some(wait);
        Some(self.record(at, BY_GUARD, StepKind::Waiting, Some(wait.to_string())))
    }

    /// The owner promotes, at any time while it bakes.
    pub fn promote(&mut self, at: DateTime<Utc>, by: &str) -> Result<&Step, NotBaking> {
        self.ensure_baking()?;
        self.state = State::Promoted;
        self.waiting = None;
        Ok(self.record(at, by, StepKind::Promoted, None))
    }

    /// The owner aborts, or a hand edit of the file does.
    pub fn abort(&mut self, why: Abort, at: DateTime<Utc>) -> Result<&Step, NotBaking> {
        self.ensure_baking()?;
        let (by, reason) = match why {
            Abort::Owner(by) => {
                let reason = format!("aborted by {by}");
                (by, reason)
            }
            Abort::HandEdit => (
                BY_HAND_EDIT.to_owned(),
                "aborted: the file was edited by hand while the rollout baked".to_owned(),
            ),
        };
        self.state = State::Aborted;
        self.waiting = None;
        self.reason = Some(reason);
        Ok(self.record(at, &by, StepKind::Aborted, self.reason.clone()))
    }

    /// Which list this worker is told now.
    pub fn told(&self, worker_id: &str) -> Told {
        if self.is_baking() && self.cohort.contains(worker_id) {
            Told::Candidate
        } else {
            Told::Accepted
        }
    }

    /// `/v1/workers`' `cohort`: the worker is in the cohort (whatever the
    /// state; the hub says it while a rollout bakes).
    pub fn in_cohort(&self, worker_id: &str) -> bool {
        self.cohort.contains(worker_id)
    }

    fn ensure_baking(&self) -> Result<(), NotBaking> {
        if self.is_baking() {
            Ok(())
        } else {
            Err(NotBaking {
                id: self.id.clone(),
                state: self.state,
            })
        }
    }

    fn record(
        &mut self,
        at: DateTime<Utc>,
        by: &str,
        step: StepKind,
        reason: Option<String>,
    ) -> &Step {
        self.steps.push(Step {
            id: self.id.clone(),
            at,
            by: by.to_owned(),
            step,
            reason,
        });
        &self.steps[self.steps.len() - 1]
    }
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Baking => "baking",
            State::Promoted => "promoted",
            State::Halted => "halted",
            State::Aborted => "aborted",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wait::Manual => {
                f.write_str("the bake has ended: waiting for the owner (promote=manual)")
            }
            Wait::TooFew { workers, needed } => write!(
                f,
                "the bake has ended: waiting for the owner, {workers} cohort worker{} ran the \
                 candidate and the guard needs {needed} to judge",
                if *workers == 1 { "" } else { "s" }
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 2, 1, 0, 0).unwrap()
    }

    fn start(promote: Promote) -> Rollout {
        Rollout::start(
            Start {
                id: "r1".into(),
                cohort: Cohort::share("salt-a", 10).unwrap(),
                asked: CohortSpec::Share(10),
                base_revision: "rev-a".into(),
                candidate_revision: "rev-b".into(),
                agents: vec!["claude".into(), "codex".into()],
                bake: Bake::from_secs(600).unwrap(),
                promote,
                cohort_before: Some(side(4, 0)),
            },
            t0(),
            "alice",
        )
    }

    fn side(workers: u64, no_route: u64) -> Figures {
        Figures {
            workers,
            no_route,
            observed_s: workers * 120,
            ..Figures::default()
        }
    }

    fn obs(cohort: Figures) -> Observation {
        Observation {
            cohort_workers: cohort.workers,
            cohort,
            rest: side(36, 0),
        }
    }

    fn kinds(r: &Rollout) -> Vec<StepKind> {
        r.steps.iter().map(|s| s.step).collect()
    }

    #[test]
    fn the_bake_counts_only_the_time_ticked() {
        let mut r = start(Promote::Auto);
        assert_eq!(r.time_left_s(), 600);
        r.tick(Duration::from_millis(1_500));
        assert_eq!(r.time_left_s(), 599, "rounded up");
        // A restart: the hub was down an hour and ticks only what it ran.
        let mut r: Rollout = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        r.tick(Duration::from_secs(60));
        assert_eq!(r.time_left_s(), 539);
        r.tick(Duration::from_secs(10_000));
        assert_eq!(r.baked, Duration::from_secs(600), "capped at the bake");
        assert_eq!(r.time_left_s(), 0);
        assert!(r.bake_ended());
    }

    #[test]
    fn a_halt_at_any_time_with_the_issues_words() {
        let mut r = start(Promote::Auto);
        r.tick(Duration::from_secs(5));
        assert!(r.judge(obs(side(4, 1)), &Policy::default(), t0()).is_none());
        assert!(r.is_baking());
        let step = r
            .judge(obs(side(4, 3)), &Policy::default(), t0())
            .cloned()
            .unwrap();
        assert_eq!(step.step, StepKind::Halted);
        assert_eq!(step.by, BY_GUARD);
        assert_eq!(
            step.reason.as_deref(),
            Some("halted by the guard: no route 0% → 75% in the cohort (rest 0%)")
        );
        assert_eq!(r.state, State::Halted);
        assert_eq!(r.time_left_s(), 0);
        // Frozen: later figures change nothing.
        assert!(r.judge(obs(side(4, 0)), &Policy::default(), t0()).is_none());
        assert_eq!(r.last.cohort.no_route, 3);
        assert_eq!(kinds(&r), [StepKind::Started, StepKind::Halted]);
    }

    #[test]
    fn a_quiet_bake_promotes_itself_at_its_end_not_before() {
        let mut r = start(Promote::Auto);
        r.tick(Duration::from_secs(599));
        assert!(r.judge(obs(side(4, 0)), &Policy::default(), t0()).is_none());
        r.tick(Duration::from_secs(1));
        let step = r.judge(obs(side(4, 0)), &Policy::default(), t0()).unwrap();
        assert_eq!(
            (step.step, step.by.as_str()),
            (StepKind::Promoted, BY_GUARD)
        );
        assert_eq!(r.state, State::Promoted);
    }

    #[test]
    fn manual_waits_for_the_owner_and_says_so_once() {
        let mut r = start(Promote::Manual);
        r.tick(Duration::from_secs(600));
        let step = r.judge(obs(side(4, 0)), &Policy::default(), t0()).unwrap();
        assert_eq!(step.step, StepKind::Waiting);
        assert_eq!(
            step.reason.as_deref(),
            Some("the bake has ended: waiting for the owner (promote=manual)")
        );
        assert!(r.judge(obs(side(4, 0)), &Policy::default(), t0()).is_none());
        assert!(r.is_baking());
        assert_eq!(r.waiting, Some(Wait::Manual));
        // The guard still halts while it waits.
        assert_eq!(
            r.judge(obs(side(4, 4)), &Policy::default(), t0())
                .unwrap()
                .step,
            StepKind::Halted
        );
    }

    #[test]
    fn too_few_waits_then_promotes_once_enough_ran_it() {
        let mut r = start(Promote::Auto);
        r.tick(Duration::from_secs(600));
        let step = r.judge(obs(side(2, 0)), &Policy::default(), t0()).unwrap();
        assert_eq!(
            step.reason.as_deref(),
            Some(
                "the bake has ended: waiting for the owner, 2 cohort workers ran the candidate \
                 and the guard needs 3 to judge"
            )
        );
        assert!(r.judge(obs(side(1, 0)), &Policy::default(), t0()).is_none());
        assert_eq!(
            r.waiting,
            Some(Wait::TooFew {
                workers: 1,
                needed: 3
            })
        );
        let step = r.judge(obs(side(3, 0)), &Policy::default(), t0()).unwrap();
        assert_eq!(step.step, StepKind::Promoted);
        assert_eq!(
            kinds(&r),
            [StepKind::Started, StepKind::Waiting, StepKind::Promoted]
        );
    }

    #[test]
    fn promote_and_abort_only_while_baking() {
        let mut r = start(Promote::Auto);
        let step = r.promote(t0(), "alice").unwrap();
        assert_eq!((step.step, step.by.as_str()), (StepKind::Promoted, "alice"));
        let err = r.promote(t0(), "alice").unwrap_err();
        assert_eq!(err.to_string(), "rollout r1 is not baking: it is promoted");
        assert!(r.abort(Abort::Owner("bob".into()), t0()).is_err());

        let mut r = start(Promote::Manual);
        let step = r.abort(Abort::Owner("bob".into()), t0()).unwrap();
        assert_eq!(step.reason.as_deref(), Some("aborted by bob"));
        assert_eq!(r.state, State::Aborted);
        assert!(r.promote(t0(), "alice").is_err());

        let mut r = start(Promote::Auto);
        let step = r.abort(Abort::HandEdit, t0()).unwrap().clone();
        assert_eq!(step.by, BY_HAND_EDIT);
        assert!(step.reason.unwrap().contains("edited by hand"));
        let err = r.abort(Abort::HandEdit, t0()).unwrap_err();
        assert_eq!(err.state, State::Aborted);
    }

    #[test]
    fn told_the_candidate_only_in_the_cohort_while_baking() {
        let mut r = start(Promote::Auto);
        let ids: Vec<String> = (0..200).map(|i| format!("w-{i}")).collect();
        let inside: Vec<&String> = ids.iter().filter(|id| r.in_cohort(id)).collect();
        assert!(!inside.is_empty() && inside.len() < 60, "{}", inside.len());
        for id in &ids {
            let want = if r.in_cohort(id) {
                Told::Candidate
            } else {
                Told::Accepted
            };
            assert_eq!(r.told(id), want);
        }
        r.judge(obs(side(4, 4)), &Policy::default(), t0());
        assert_eq!(r.state, State::Halted);
        assert!(ids.iter().all(|id| r.told(id) == Told::Accepted));
        assert!(inside.iter().all(|id| r.in_cohort(id)));
    }

    #[test]
    fn steps_carry_the_rollouts_id_and_serialize_as_history_lists_them() {
        let r = start(Promote::Auto);
        let json = serde_json::to_value(&r.steps[0]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "id": "r1",
                "at": "2026-12-02T01:00:00Z",
                "by": "alice",
                "step": "started",
                "reason": "to a cohort of 10% for 10m, promote=auto",
            })
        );
    }

    #[test]
    fn a_count_is_said_in_workers_singular_or_plural() {
        for (n, said) in [(1, "1 worker"), (4, "4 workers")] {
            let mut r = start(Promote::Manual);
            r.steps.clear();
            let r = Rollout::start(
                Start {
                    id: "r2".into(),
                    cohort: r.cohort.clone(),
                    asked: CohortSpec::Count(n),
                    base_revision: r.base_revision,
                    candidate_revision: r.candidate_revision,
                    agents: r.agents,
                    bake: r.bake,
                    promote: r.promote,
                    cohort_before: None,
                },
                t0(),
                "alice",
            );
            assert_eq!(
                r.steps[0].reason.as_deref(),
                Some(format!("to a cohort of {said} for 10m, promote=manual").as_str())
            );
        }
    }
}
