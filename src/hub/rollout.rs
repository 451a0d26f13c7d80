//! The staged rollout wired into the hub (issue 33): `POST /v1/rollouts`
//! starts one over a cohort, the heartbeat answers tell the cohort the
//! candidate ([`Tracking`], held by the fleet), a judging loop compares the
//! cohort on the candidate with the rest every [`JUDGE_EVERY`]
//! ([`crate::rollout::judge`]) and halts, waits or promotes, the owner
//! promotes or aborts, and a hand edit of the file aborts it. The rollout
//! lives in the database (one row per rollout, [`Record`] as JSON): a hub
//! restarted mid-bake resumes it with the same cohort. The domain's rules
//! are `crate::rollout`'s; this file only acts on them. See
//! docs/rollout.md.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use serde::{Deserialize, Serialize};

use super::db::RolloutRow;
use super::domain::ReplaceError;
use super::events::Payload;
use super::guard_counts::GuardCounts;
use super::worker::Stored;
use super::{Hub, store};
use crate::agents_doc::{self, DocError};
use crate::rollout::wire::{RolloutEvent, RolloutView};
use crate::rollout::{
    Abort, BY_GUARD, Cohort, Figures, Observation, Policy, Rollout, RolloutQuery, Start, State,
    Step, StepKind, WorkerFigures,
};
use crate::wire::WorkerState;

/// How often the guard judges a rollout that bakes (and the bake is
/// counted): a cohort where most workers on the candidate have no route
/// halts within a judgement of the heartbeat that showed it.
pub const JUDGE_EVERY: Duration = Duration::from_secs(2);

/// A rollout as the database keeps it: the domain's state, the candidate
/// document (written through the one write path when it is promoted), and
/// the `Idempotency-Key` that started it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub rollout: Rollout,
    pub document: String,
    #[serde(default)]
    pub key: Option<String>,
}

/// What the fleet holds of the rollout baking: the cohort, the candidate's
/// revision and heartbeat answer, and the guard's counts, kept as the
/// fleet's views change ([`GuardCounts`]: a cohort worker from its first
/// heartbeat on the candidate; the rest's failovers from the start).
#[derive(Debug, Clone)]
pub struct Tracking {
    pub cohort: Cohort,
    /// The candidate's revision: a cohort worker is in sync on it (and
    /// its list, `agents`).
    pub revision: String,
    pub agents: Arc<[String]>,
    /// The heartbeat answer of a cohort worker (made once).
    pub projection: bytes::Bytes,
    /// When this hub began to track it (its start, or the resume).
    pub started: Instant,
    /// The guard's sums; the fleet keeps them as its views change.
    pub counts: GuardCounts,
}

impl Tracking {
    /// What a cohort worker is told.
    pub fn given(&self) -> super::worker::Given<'_> {
        super::worker::Given {
            revision: &self.revision,
            agents: Some(&self.agents),
        }
    }

    /// The tracking of `r` from now, its heartbeat answer telling
    /// `interval_s`, the guard counting as `policy` says.
    pub fn of(r: &Rollout, interval_s: u64, policy: &Policy) -> Tracking {
        let started = Instant::now();
        Tracking {
            cohort: r.cohort.clone(),
            revision: r.candidate_revision.clone(),
            agents: r.agents.clone().into(),
            projection: super::projection_of(&r.candidate_revision, &r.agents, interval_s),
            started,
            counts: GuardCounts::new(&r.candidate_revision, started, policy),
        }
    }
}

/// One worker as the guard counts it at the start (nothing on the
/// candidate yet).
fn figures_of(v: &Stored) -> WorkerFigures {
    let no_route = v.profile.active_agent().is_none();
    WorkerFigures {
        no_route,
        one_failure: !no_route && v.one_failure_from_no_route(),
        failovers: 0,
        observed_s: 0,
    }
}

/// At the start, in one pass: the cohort's healthy workers as they stand
/// before the candidate (where a halt's arrow starts), and the first
/// observation: the live workers the cohort holds, none on the candidate
/// yet, and the rest's healthy workers.
fn first_figures<'a>(
    views: impl Iterator<Item = &'a Arc<Stored>>,
    cohort: &Cohort,
    policy: &Policy,
) -> (Figures, Observation) {
    let mut before = Figures::default();
    let mut first = Observation::default();
    for v in views.filter(|v| v.state != WorkerState::Lost) {
        let inside = cohort.contains(v.worker());
        first.cohort_workers += u64::from(inside);
        if v.state != WorkerState::Healthy {
            continue;
        }
        let w = figures_of(v);
        if inside {
            before.add(w, policy);
        } else {
            first.rest.add(w, policy);
        }
    }
    (before, first)
}

/// The hub's rollouts: the newest (baking or ended) and the word.
pub struct Rollouts {
    latest: Mutex<Option<Arc<Record>>>,
    /// `ROLLOUT HALTED`: the newest rollout was halted by the guard, and
    /// nothing was written since.
    halted: AtomicBool,
    /// When the bake was last counted (monotonic: only while the hub runs).
    ticked: Mutex<Instant>,
    /// Bake counted since the rollout was last recorded.
    unsaved: Mutex<Duration>,
    pub policy: Policy,
}

impl Default for Rollouts {
    fn default() -> Self {
        Rollouts {
            latest: Mutex::new(None),
            halted: AtomicBool::new(false),
            ticked: Mutex::new(Instant::now()),
            unsaved: Mutex::new(Duration::ZERO),
            policy: Policy::default(),
        }
    }
}

impl Rollouts {
    /// None yet, the guard judging by `policy`.
    pub fn judging_by(policy: Policy) -> Rollouts {
        Rollouts {
            policy,
            ..Rollouts::default()
        }
    }

    /// The newest rollout, if one has run.
    pub fn latest(&self) -> Option<Arc<Record>> {
        self.latest.lock().ok().and_then(|l| l.clone())
    }

    /// The id of the rollout baking, if one is.
    pub fn baking_id(&self) -> Option<String> {
        self.latest()
            .filter(|r| r.rollout.is_baking())
            .map(|r| r.rollout.id.clone())
    }

    /// The status word says `ROLLOUT HALTED`.
    pub fn halted(&self) -> bool {
        self.halted.load(Ordering::Acquire)
    }

    /// A new revision was written: the word no longer says a halt.
    pub fn written(&self) {
        self.halted.store(false, Ordering::Release);
    }

    fn set(&self, rec: Arc<Record>) {
        if rec.rollout.state == State::Halted {
            self.halted.store(true, Ordering::Release);
        }
        if let Ok(mut l) = self.latest.lock() {
            *l = Some(rec);
        }
    }

    /// A judgement counted `ran` more of the bake; whether to record it
    /// now: when its figures `moved`, or once [`SAVE_BAKE_EVERY`] of bake
    /// has gone unrecorded.
    fn unsaved(&self, ran: Duration, moved: bool) -> bool {
        let Ok(mut u) = self.unsaved.lock() else {
            return true;
        };
        *u += ran;
        if moved || *u >= SAVE_BAKE_EVERY {
            *u = Duration::ZERO;
            return true;
        }
        false
    }

    /// The time since the bake was last counted; counts from now.
    fn ran(&self) -> Duration {
        match self.ticked.lock() {
            Ok(mut t) => {
                let now = Instant::now();
                let ran = now.saturating_duration_since(*t);
                *t = now;
                ran
            }
            Err(_) => Duration::ZERO,
        }
    }
}

/// Why a rollout request was refused; nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum RolloutError {
    #[error(transparent)]
    Doc(#[from] DocError),
    /// `cohort` cannot be drawn over this fleet (400 `invalid_query`).
    #[error("{0}")]
    Query(String),
    #[error("rollout {id} is baking: promote or abort it first")]
    InProgress { id: String },
    #[error("rollout {id} is not baking: it is {state}")]
    NotBaking { id: String, state: State },
    #[error("no rollout has run on this hub")]
    NoRollout,
    /// The candidate's list is the list in force.
    #[error("the candidate's list is the list in force ({0}): nothing to roll out")]
    NoChange(String),
    /// The key started a rollout of another document or with other
    /// options (`first` says which).
    #[error("the Idempotency-Key started another rollout ({first})")]
    KeyReused { first: String },
    /// The compare with the document on disk failed, or the write of a
    /// promotion did.
    #[error(transparent)]
    Replace(#[from] ReplaceError),
    /// The database cannot record it: nothing changed.
    #[error("{0}")]
    Unavailable(String),
}

/// What `POST /v1/rollouts` did.
pub enum Started {
    Now(RolloutView),
    /// A retry by its `Idempotency-Key`: the rollout it started, as it
    /// stands.
    Replayed(RolloutView),
}

fn random_hex(bytes: usize) -> String {
    use rand::RngCore;
    let mut b = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut b);
    hex::encode(b)
}

impl Hub {
    /// The newest rollout as `GET /v1/rollouts/current` shows it.
    pub fn rollout_view(&self) -> Option<RolloutView> {
        self.rollouts.latest().map(|r| RolloutView::of(&r.rollout))
    }

    /// Every step of the newest rollouts, newest first (History's
    /// `rollouts`).
    pub fn rollout_steps(&self, limit: u32) -> Vec<Step> {
        let bodies = match self.db.rollouts(limit) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the rollouts");
                Vec::new()
            }
        };
        let latest = self.rollouts.latest();
        let mut steps: Vec<Step> = Vec::new();
        for body in bodies {
            let Ok(rec) = serde_json::from_str::<Record>(&body) else {
                continue;
            };
            // The newest as it stands in memory (a tick may be unsaved).
            let rec = match &latest {
                Some(l) if l.rollout.id == rec.rollout.id => (**l).clone(),
                _ => rec,
            };
            steps.extend(rec.rollout.steps.into_iter().rev());
        }
        steps
    }

    fn row_of(rec: &Record) -> Option<RolloutRow> {
        match serde_json::to_string(rec) {
            Ok(body) => Some(RolloutRow {
                id: rec.rollout.id.clone(),
                key: rec.key.clone(),
                body,
            }),
            Err(e) => {
                tracing::error!(error = %e, "a rollout could not be serialised");
                None
            }
        }
    }

    /// Record `rec` durably, then hold it: refused (nothing changed) when
    /// the database cannot record it.
    async fn save(&self, rec: Record) -> Result<Arc<Record>, RolloutError> {
        let row = Self::row_of(&rec)
            .ok_or_else(|| RolloutError::Unavailable("the rollout cannot be recorded".into()))?;
        self.db
            .record_rollout(row)
            .await
            .map_err(|e| RolloutError::Unavailable(e.to_string()))?;
        let rec = Arc::new(rec);
        self.rollouts.set(rec.clone());
        Ok(rec)
    }

    /// Hold `rec` whatever the database says (a step the hub takes by
    /// itself: a halt must act even when it cannot be recorded).
    async fn save_anyway(&self, rec: Record) -> Arc<Record> {
        if let Some(row) = Self::row_of(&rec) {
            if let Err(e) = self.db.record_rollout(row).await {
                tracing::error!(error = %e, id = %rec.rollout.id, "rollout step not recorded");
            }
        }
        let rec = Arc::new(rec);
        self.rollouts.set(rec.clone());
        rec
    }

    fn publish_step(&self, rec: &Record, step: &Step) {
        tracing::info!(
            id = %rec.rollout.id,
            step = ?step.step,
            by = %step.by,
            reason = step.reason.as_deref().unwrap_or(""),
            "rollout"
        );
        self.events.publish(Payload::Rollout(Arc::new(RolloutEvent {
            step: step.clone(),
            rollout: RolloutView::of(&rec.rollout),
        })));
    }

    /// The cohort is told the candidate from the next heartbeat on.
    fn track(&self, r: &Rollout) {
        self.issue(&r.candidate_revision);
        let t = Tracking::of(r, self.opts.heartbeat_interval_s, &self.rollouts.policy);
        let accepted = self.current();
        if let Ok(mut f) = self.fleet.lock() {
            f.set_rollout(Some(t), accepted.given());
        }
        self.rollouts.ran();
    }

    /// Everyone is told the accepted list again.
    fn untrack(&self) {
        let accepted = self.current();
        if let Ok(mut f) = self.fleet.lock() {
            f.set_rollout(None, accepted.given());
        }
    }

    /// `POST /v1/rollouts`: validate the candidate, compare `If-Match`
    /// with the document on disk, draw the cohort and start baking.
    pub async fn start_rollout(
        &self,
        by: &str,
        if_match: &str,
        key: Option<&str>,
        q: RolloutQuery,
        bytes: bytes::Bytes,
    ) -> Result<Started, RolloutError> {
        let text = agents_doc::decode(&bytes)?;
        let located = agents_doc::locate(text)?;
        let candidate_revision = store::revision_of(&bytes);
        let _guard = self.write_lock.lock().await;
        if let Some(key) = key {
            let first = self
                .db
                .rollout_by_key(key)
                .map_err(|e| RolloutError::Unavailable(e.to_string()))?;
            if let Some(rec) = first.and_then(|b| serde_json::from_str::<Record>(&b).ok()) {
                // The same key with the same document but other options
                // is another request, not a retry of the first.
                let r = &rec.rollout;
                if r.candidate_revision != candidate_revision
                    || (r.asked, r.bake, r.promote) != (q.cohort, q.bake, q.promote)
                {
                    return Err(RolloutError::KeyReused {
                        first: format!(
                            "candidate revision {}, cohort={}, bake={}, promote={}",
                            r.candidate_revision, r.asked, r.bake, r.promote
                        ),
                    });
                }
                let now = match self.rollouts.latest() {
                    Some(l) if l.rollout.id == rec.rollout.id => l.rollout.clone(),
                    _ => rec.rollout,
                };
                return Ok(Started::Replayed(RolloutView::of(&now)));
            }
        }
        if let Some(id) = self.rollouts.baking_id() {
            return Err(RolloutError::InProgress { id });
        }
        let before = self.take_disk_change().await;
        super::domain::check_if_match(if_match, &before.revision)?;
        if located.agents == before.agents {
            return Err(RolloutError::NoChange(before.agents.join(",")));
        }
        let policy = self.rollouts.policy;
        let (cohort, cohort_before, first) = {
            let f = self
                .fleet
                .lock()
                .map_err(|_| RolloutError::Unavailable("fleet lock poisoned".into()))?;
            let live: Vec<Arc<str>> = f
                .views()
                .filter(|v| v.state != WorkerState::Lost)
                .map(|v| v.worker().clone())
                .collect();
            let cohort = q
                .cohort
                .draw(random_hex(8), live.iter().map(|w| &**w))
                .map_err(|e| RolloutError::Query(e.to_string()))?;
            let (before, first) = first_figures(f.views(), &cohort, &policy);
            (cohort, (before.workers > 0).then_some(before), first)
        };
        let mut rollout = Rollout::start(
            Start {
                id: random_hex(8),
                cohort,
                asked: q.cohort,
                base_revision: before.revision.clone(),
                candidate_revision,
                agents: located.agents,
                bake: q.bake,
                promote: q.promote,
                cohort_before,
            },
            Utc::now(),
            by,
        );
        // The 201 says the cohort as it is drawn, not an empty guard
        // until the first judgement.
        rollout.last = first;
        let rec = self
            .save(Record {
                rollout,
                document: text.to_owned(),
                key: key.map(str::to_owned),
            })
            .await?;
        self.rollouts.written();
        self.track(&rec.rollout);
        if let Some(step) = rec.rollout.steps.last() {
            self.publish_step(&rec, step);
        }
        Ok(Started::Now(RolloutView::of(&rec.rollout)))
    }

    /// `POST /v1/rollouts/current/promote`.
    pub async fn promote_rollout(&self, by: &str) -> Result<RolloutView, RolloutError> {
        let _guard = self.write_lock.lock().await;
        let rec = self.rollouts.latest().ok_or(RolloutError::NoRollout)?;
        let mut r = rec.rollout.clone();
        r.promote(Utc::now(), by)
            .map_err(|e| RolloutError::NotBaking {
                id: e.id,
                state: e.state,
            })?;
        self.promote_locked(&rec, r, by).await
    }

    /// `POST /v1/rollouts/current/abort`.
    pub async fn abort_rollout(&self, by: &str) -> Result<RolloutView, RolloutError> {
        let _guard = self.write_lock.lock().await;
        let rec = self.rollouts.latest().ok_or(RolloutError::NoRollout)?;
        let mut r = rec.rollout.clone();
        let step = r
            .abort(Abort::Owner(by.to_owned()), Utc::now())
            .map_err(|e| RolloutError::NotBaking {
                id: e.id,
                state: e.state,
            })?
            .clone();
        let rec = self
            .save(Record {
                rollout: r,
                ..(*rec).clone()
            })
            .await?;
        self.untrack();
        self.publish_step(&rec, &step);
        Ok(RolloutView::of(&rec.rollout))
    }

    /// Under the write lock, `r` already promoted: write the candidate
    /// through the one write path (History records it as `by`'s; a revert
    /// undoes it), then record the step and tell everyone the new list.
    async fn promote_locked(
        &self,
        rec: &Record,
        r: Rollout,
        by: &str,
    ) -> Result<RolloutView, RolloutError> {
        let written = self
            .replace_locked(
                by,
                None,
                &format!("\"{}\"", r.base_revision),
                None,
                bytes::Bytes::from(rec.document.clone()),
                r.agents.clone(),
            )
            .await;
        match written {
            Ok(_) => {}
            // The file changed by hand under it: that edit was taken
            // first, and aborted the rollout.
            Err(ReplaceError::Mismatch { .. }) => {
                self.rollout_hand_edit().await;
                let now = self.rollouts.latest().ok_or(RolloutError::NoRollout)?;
                return Err(RolloutError::NotBaking {
                    id: now.rollout.id.clone(),
                    state: now.rollout.state,
                });
            }
            Err(e) => return Err(e.into()),
        }
        let step = r.steps.last().cloned();
        let rec = self
            .save_anyway(Record {
                rollout: r,
                ..rec.clone()
            })
            .await;
        self.untrack();
        if let Some(step) = step {
            self.publish_step(&rec, &step);
        }
        Ok(RolloutView::of(&rec.rollout))
    }

    /// Under the write lock, when the file changed by hand: a rollout
    /// baking is aborted (the accepted list it was measured against is
    /// gone) and everyone is told the list in force.
    pub(crate) async fn rollout_hand_edit(&self) {
        let Some(rec) = self.rollouts.latest().filter(|r| r.rollout.is_baking()) else {
            return;
        };
        let mut r = rec.rollout.clone();
        let Ok(step) = r.abort(Abort::HandEdit, Utc::now()).cloned() else {
            return;
        };
        let rec = self
            .save_anyway(Record {
                rollout: r,
                ..(*rec).clone()
            })
            .await;
        self.untrack();
        self.publish_step(&rec, &step);
    }

    /// One judgement: count the bake since the last, take the guard's
    /// figures, and act on the step the rollout takes (halt: the cohort
    /// back on the accepted list; promote; wait). The figures are the
    /// sums the fleet keeps ([`observe_now`]): no pass over the workers. A
    /// judgement where only time moved is kept in memory and recorded at
    /// most every [`SAVE_BAKE_EVERY`] of bake (and when the hub stops).
    pub async fn judge_rollout(self: &Arc<Hub>) {
        let _guard = self.write_lock.lock().await;
        let ran = self.rollouts.ran();
        let Some(rec) = self.rollouts.latest().filter(|r| r.rollout.is_baking()) else {
            return;
        };
        let policy = self.rollouts.policy;
        let mut r = rec.rollout.clone();
        r.tick(ran);
        let Some(obs) = observe_now(self) else {
            return;
        };
        let step = r.judge(obs, &policy, Utc::now()).cloned();
        match step {
            None => {
                let moved = !same_but_time(&r.last, &rec.rollout.last);
                let rec = Record {
                    rollout: r,
                    ..(*rec).clone()
                };
                if self.rollouts.unsaved(ran, moved) {
                    self.save_anyway(rec).await;
                } else {
                    self.rollouts.set(Arc::new(rec));
                }
            }
            Some(step) if step.step == StepKind::Promoted => {
                if let Err(e) = self.promote_locked(&rec, r, BY_GUARD).await {
                    tracing::error!(error = %e, id = %rec.rollout.id, "the rollout could not be promoted; tried again at the next judgement");
                }
            }
            Some(step) => {
                let ended = step.step == StepKind::Halted;
                let rec = self
                    .save_anyway(Record {
                        rollout: r,
                        ..(*rec).clone()
                    })
                    .await;
                if ended {
                    self.untrack();
                }
                self.publish_step(&rec, &step);
            }
        }
    }

    /// When the hub stops: the bake counted since the last record of a
    /// rollout baking is recorded, so a restart resumes from it.
    pub(crate) async fn keep_rollout(&self) {
        let _guard = self.write_lock.lock().await;
        let ran = self.rollouts.ran();
        let Some(rec) = self.rollouts.latest().filter(|r| r.rollout.is_baking()) else {
            return;
        };
        let mut r = rec.rollout.clone();
        r.tick(ran);
        self.save_anyway(Record {
            rollout: r,
            ..(*rec).clone()
        })
        .await;
    }

    /// At open: the newest rollout from the database. One that baked
    /// resumes with its cohort (the bake counts on from what it had
    /// counted) when the file still holds its base; a file that holds the
    /// candidate was being promoted when the hub stopped (promoted); any
    /// other file was edited by hand meanwhile (aborted).
    pub(crate) async fn resume_rollout(&self) {
        let body = match self.db.rollouts(1) {
            Ok(b) => b.into_iter().next(),
            Err(e) => {
                tracing::error!(error = %e, "cannot read the rollouts");
                None
            }
        };
        let Some(body) = body else { return };
        let rec: Record = match serde_json::from_str(&body) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, "the newest rollout cannot be read; not resumed");
                return;
            }
        };
        let r = &rec.rollout;
        if r.state == State::Halted {
            let halted_at = r.steps.last().map(|s| s.at);
            let written_since = self
                .db
                .latest_history()
                .ok()
                .flatten()
                .is_some_and(|h| Some(h.at) > halted_at);
            self.rollouts.set(Arc::new(rec.clone()));
            if written_since {
                self.rollouts.written();
            }
            return;
        }
        if !r.is_baking() {
            self.rollouts.set(Arc::new(rec));
            return;
        }
        let current = self.current();
        if current.revision == r.base_revision {
            tracing::info!(id = %r.id, time_left_s = r.time_left_s(), "rollout resumed");
            let rec = Arc::new(rec);
            self.rollouts.set(rec.clone());
            self.track(&rec.rollout);
            return;
        }
        let mut r = r.clone();
        let step = if current.revision == r.candidate_revision {
            r.promote(Utc::now(), BY_GUARD).cloned()
        } else {
            r.abort(Abort::HandEdit, Utc::now()).cloned()
        };
        let rec = self
            .save_anyway(Record {
                rollout: r,
                ..rec.clone()
            })
            .await;
        if let Ok(step) = step {
            self.publish_step(&rec, &step);
        }
    }
}

/// A judgement that only counted time is recorded once this much bake
/// has gone unrecorded: a hub killed outright loses at most this much of
/// its bake, and bakes that much longer after its restart.
pub const SAVE_BAKE_EVERY: Duration = Duration::from_secs(30);

/// Whether two judgements' figures differ only in the time observed
/// (which grows at every judgement).
fn same_but_time(a: &Observation, b: &Observation) -> bool {
    let counts = |f: &Figures| Figures {
        observed_s: 0,
        ..*f
    };
    a.cohort_workers == b.cohort_workers
        && counts(&a.cohort) == counts(&b.cohort)
        && counts(&a.rest) == counts(&b.rest)
}

/// The guard's figures now: the sums the fleet keeps as its views change
/// ([`GuardCounts::observation`]), read under its lock in microseconds
/// (no pass over the workers). `None` when the lock is poisoned or
/// nothing is tracked: the next judgement comes [`JUDGE_EVERY`] later.
fn observe_now(hub: &Hub) -> Option<Observation> {
    let began = Instant::now();
    let f = hub.fleet.lock().ok()?;
    let waited = began.elapsed();
    let obs = f.rollout().map(|t| t.counts.observation(Instant::now()));
    drop(f);
    let locked = began.elapsed();
    // How long the lock was waited for (heartbeats hold it) and held
    // (the judge's cost to the fleet).
    tracing::debug!(
        waited_us = waited.as_micros() as u64,
        held_us = locked.saturating_sub(waited).as_micros() as u64,
        locked_us = locked.as_micros() as u64,
        "rollout judged"
    );
    obs
}

/// The judging loop: every [`JUDGE_EVERY`] while the hub runs.
pub fn spawn_judge(hub: &Arc<Hub>) -> tokio::task::JoinHandle<()> {
    let weak = Arc::downgrade(hub);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(JUDGE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tick.tick().await;
            let Some(hub) = weak.upgrade() else { return };
            hub.judge_rollout().await;
        }
    })
}
