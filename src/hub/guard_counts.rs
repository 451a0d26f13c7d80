//! The guard's figures of the rollout baking, kept as the fleet's views
//! change (issue 33): each view that enters the fleet (a heartbeat, a
//! sweep's or a resync's restate) adds what it contributes to its side,
//! each view it replaces or evicts takes its own away, so a judgement
//! reads a few sums ([`GuardCounts::observation`]) in place of a pass over
//! every worker under the fleet's lock. At 100,000 workers (a debug
//! build) that pass held the lock a median 26 ms each 2 s, and
//! heartbeats waited on it; the sums are read in microseconds
//! (`benches/judge.rs`, docs/rollout.md).
//!
//! Below both the fleet (which calls it as views change) and
//! `hub/rollout.rs` (whose [`super::rollout::Tracking`] holds it): it
//! knows a view ([`Stored`]) and the domain's [`Figures`], nothing else.
//! [`GuardCounts::observe_pass`] is the same figures in one pass over
//! every view, the reference the sums are tested against.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::worker::Stored;
use crate::rollout::{Figures, Observation, Policy, WorkerFigures};
use crate::wire::WorkerState;

/// A cohort worker counted from its first heartbeat on the candidate.
#[derive(Debug, Clone, Copy)]
struct Counted {
    since: Instant,
    failovers: u64,
}

/// One side's sums, signed so that a view taken away is a sum less
/// (never below 0 while views enter and leave in pairs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Side {
    workers: i64,
    no_route: i64,
    one_failure: i64,
    failovers: i64,
    failing: i64,
    /// Milliseconds from `started` to each counted worker's start, summed
    /// (the rest's all start at `started`: 0).
    since_ms: i64,
}

/// What one view contributes to its side.
struct Part {
    cohort: bool,
    no_route: bool,
    one_failure: bool,
    failovers: u64,
    since_ms: i64,
}

/// The counts of each worker the guard follows and the sums of both
/// sides; see the module doc.
#[derive(Debug, Clone)]
pub struct GuardCounts {
    /// The candidate's revision: a cohort worker counts once it runs it.
    revision: Arc<str>,
    /// When this hub began to track the rollout; the rest is counted from
    /// it.
    started: Instant,
    failover_cap: u64,
    on_candidate: HashMap<Arc<str>, Counted, foldhash::fast::RandomState>,
    rest_failovers: HashMap<Arc<str>, u64, foldhash::fast::RandomState>,
    /// Live cohort workers (on the candidate or not yet).
    cohort_live: i64,
    cohort: Side,
    rest: Side,
}

fn pos(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

impl GuardCounts {
    /// Nothing counted yet: the rollout of `revision` tracked from
    /// `started`, each worker's failovers capped as `policy` says.
    pub fn new(revision: &str, started: Instant, policy: &Policy) -> GuardCounts {
        GuardCounts {
            revision: Arc::from(revision),
            started,
            failover_cap: policy.failover_cap,
            on_candidate: HashMap::default(),
            rest_failovers: HashMap::default(),
            cohort_live: 0,
            cohort: Side::default(),
            rest: Side::default(),
        }
    }

    fn ms_after_start(&self, at: Instant) -> i64 {
        let ms = at.saturating_duration_since(self.started).as_millis();
        i64::try_from(ms).unwrap_or(i64::MAX)
    }

    /// What `v` adds to a side, if it is counted: a healthy cohort worker
    /// that runs the candidate and was seen doing so, or a healthy worker
    /// outside the cohort.
    fn part(&self, v: &Stored) -> Option<Part> {
        if v.state != WorkerState::Healthy {
            return None;
        }
        let (failovers, since_ms) = if v.cohort {
            if !v.runs(&self.revision) {
                return None;
            }
            let c = self.on_candidate.get(v.worker())?;
            (c.failovers, self.ms_after_start(c.since))
        } else {
            let failovers = self.rest_failovers.get(v.worker()).copied().unwrap_or(0);
            (failovers, 0)
        };
        let no_route = v.profile.active_agent().is_none();
        Some(Part {
            cohort: v.cohort,
            no_route,
            one_failure: !no_route && v.one_failure_from_no_route(),
            failovers,
            since_ms,
        })
    }

    /// Adds (`sign` 1) or takes away (`sign` -1) what `v` contributes.
    fn apply(&mut self, v: &Stored, sign: i64) {
        if v.state == WorkerState::Lost {
            return;
        }
        if v.cohort {
            self.cohort_live += sign;
        }
        let Some(p) = self.part(v) else { return };
        let cap = self.failover_cap;
        let side = if p.cohort {
            &mut self.cohort
        } else {
            &mut self.rest
        };
        side.workers += sign;
        side.no_route += sign * i64::from(p.no_route);
        side.one_failure += sign * i64::from(p.one_failure);
        side.failovers += sign * i64::try_from(p.failovers.min(cap)).unwrap_or(0);
        side.failing += sign * i64::from(p.failovers > 0);
        side.since_ms += sign * p.since_ms;
    }

    /// `v` entered the fleet (a new view of its worker).
    pub fn enter(&mut self, v: &Stored) {
        self.apply(v, 1);
    }

    /// `v` left it (replaced by a newer view, or evicted).
    pub fn leave(&mut self, v: &Stored) {
        self.apply(v, -1);
    }

    /// A heartbeat recorded as `v` (replacing `before`), carrying
    /// `failovers`, arrived at `at`: a cohort worker is counted from its
    /// first heartbeat on the candidate, its failovers from then; the
    /// rest's failovers from the start.
    pub fn heartbeat(&mut self, before: Option<&Stored>, v: &Stored, failovers: u64, at: Instant) {
        if let Some(b) = before {
            self.leave(b);
        }
        if v.cohort {
            if v.runs(&self.revision) {
                let c = self
                    .on_candidate
                    .entry(v.worker().clone())
                    .or_insert(Counted {
                        since: at,
                        failovers: 0,
                    });
                c.failovers += failovers;
            }
        } else if failovers > 0 {
            *self.rest_failovers.entry(v.worker().clone()).or_default() += failovers;
        }
        self.enter(v);
    }

    /// The sums again from every view (when the views' `cohort` changed
    /// under them: the rollout started or resumed).
    pub fn rebuild<'a>(&mut self, views: impl Iterator<Item = &'a Arc<Stored>>) {
        self.cohort_live = 0;
        self.cohort = Side::default();
        self.rest = Side::default();
        for v in views {
            self.enter(v);
        }
    }

    fn figures(s: &Side, observed_ms: i64) -> Figures {
        Figures {
            workers: pos(s.workers),
            no_route: pos(s.no_route),
            one_failure: pos(s.one_failure),
            failovers: pos(s.failovers),
            failing: pos(s.failing),
            observed_s: pos(observed_ms) / 1000,
        }
    }

    /// The guard's figures at `now`, from the sums. The rest's time
    /// observed is its workers times the time since the start, in whole
    /// seconds; the cohort's the sum of each worker's time since its
    /// start, to the millisecond, floored once.
    pub fn observation(&self, now: Instant) -> Observation {
        let now_ms = self.ms_after_start(now);
        let rest_s = i64::try_from(now.saturating_duration_since(self.started).as_secs())
            .unwrap_or(i64::MAX);
        let cohort_ms = self
            .cohort
            .workers
            .saturating_mul(now_ms)
            .saturating_sub(self.cohort.since_ms);
        Observation {
            cohort_workers: pos(self.cohort_live),
            cohort: Self::figures(&self.cohort, cohort_ms),
            rest: Self::figures(&self.rest, self.rest.workers.saturating_mul(rest_s) * 1000),
        }
    }

    /// The same figures in one pass over `views` (the reference the sums
    /// are tested against, and what the judge walked before them).
    pub fn observe_pass<'a>(
        &self,
        views: impl Iterator<Item = &'a Arc<Stored>>,
        now: Instant,
    ) -> Observation {
        let policy = Policy {
            failover_cap: self.failover_cap,
            ..Policy::default()
        };
        let mut obs = Observation::default();
        for v in views.filter(|v| v.state != WorkerState::Lost) {
            obs.cohort_workers += u64::from(v.cohort);
            let Some(p) = self.part(v) else { continue };
            let since = if p.cohort {
                now.saturating_duration_since(self.started)
                    .saturating_sub(std::time::Duration::from_millis(pos(p.since_ms)))
            } else {
                now.saturating_duration_since(self.started)
            };
            let w = WorkerFigures {
                no_route: p.no_route,
                one_failure: p.one_failure,
                failovers: p.failovers,
                observed_s: since.as_secs(),
            };
            let side = if p.cohort {
                &mut obs.cohort
            } else {
                &mut obs.rest
            };
            side.add(w, &policy);
        }
        obs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::fleet::Fleet;
    use crate::hub::rollout::Tracking;
    use crate::rollout::{Bake, Cohort, CohortSpec, Promote, Rollout, Start};
    use chrono::{DateTime, TimeZone, Utc};
    use std::time::Duration;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 2, 18, 0, 0)
            .single()
            .expect("time")
    }

    fn rollout() -> Rollout {
        Rollout::start(
            Start {
                id: "r1".into(),
                cohort: Cohort::share("salt-sums", 40).expect("share"),
                asked: CohortSpec::Share(40),
                base_revision: "rev-a".into(),
                candidate_revision: "rev-b".into(),
                agents: vec!["pi".into(), "claude".into()],
                bake: Bake::from_secs(600).expect("bake"),
                promote: Promote::Auto,
                cohort_before: None,
            },
            t0(),
            "alice",
        )
    }

    /// A small deterministic generator (no outside input).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % n
        }
    }

    fn beat(f: &mut Fleet, r: &mut Lcg, i: u64, at: DateTime<Utc>, m: Instant) {
        let agents: Vec<String> = match r.next(3) {
            0 => vec!["pi".into()],
            _ => vec!["pi".into(), "claude".into()],
        };
        let active = match r.next(5) {
            0 => None,
            1 => Some("claude".to_string()),
            _ => Some("pi".to_string()),
        };
        let revision = if r.next(3) == 0 { "rev-a" } else { "rev-b" };
        let failovers = (0..r.next(4) / 2)
            .map(|k| crate::wire::Failover {
                id: format!("f-{i}-{k}-{}", r.next(1 << 30)),
                at,
                from: "pi".into(),
                to: active.clone(),
                cause: crate::wire::Cause {
                    kind: crate::wire::CauseKind::ALL[0],
                    status: None,
                    source: crate::wire::CauseSource::HubRouter,
                    detail: None,
                },
            })
            .collect();
        let hb = crate::wire::Heartbeat {
            worker: format!("w-{i}"),
            host: "h".into(),
            sent_at: at,
            config_revision: Some(revision.into()),
            agents,
            active_agent: active,
            capabilities: Default::default(),
            failovers,
            turn: None,
            next_turn_agent: None,
        };
        f.record_at(&(&hb).into(), at, m, &Arc::from("p"), "rev-a");
    }

    fn same(sums: &Observation, pass: &Observation, when: &str) {
        let counts = |x: &Figures| Figures {
            observed_s: 0,
            ..*x
        };
        assert_eq!(sums.cohort_workers, pass.cohort_workers, "{when}");
        assert_eq!(counts(&sums.cohort), counts(&pass.cohort), "{when}");
        assert_eq!(sums.rest, pass.rest, "{when}");
        // Floored once against floored a worker.
        let (a, b) = (sums.cohort.observed_s, pass.cohort.observed_s);
        assert!(a >= b && a - b <= sums.cohort.workers, "{when}: {a} {b}");
    }

    /// Heartbeats on and off the candidate, with and without a route and
    /// failovers, sweeps that move workers stale and lost, a resync and
    /// evictions: the sums always read what a pass over every view reads.
    #[test]
    fn the_sums_read_what_a_pass_over_every_view_reads() {
        let (t0, m0) = (t0(), Instant::now());
        let mut f = Fleet::new(1);
        let mut r = Lcg(33);
        for i in 0..40 {
            beat(&mut f, &mut r, i, t0, m0);
        }
        let tracking = Tracking::of(&rollout(), 15, &Policy::default());
        f.set_rollout(Some(tracking), "rev-a");
        let mut checked = 0;
        for step in 1..=400u64 {
            let (at, m) = (
                t0 + chrono::Duration::seconds(step as i64),
                m0 + Duration::from_millis(step * 1000 + r.next(900)),
            );
            match r.next(40) {
                0 => {
                    f.sweep(m + Duration::from_secs(r.next(400)), at, 15);
                }
                1 => f.resync("rev-a"),
                2 => {
                    f.evict(m, Duration::from_secs(120));
                }
                _ => {
                    let i = r.next(60);
                    beat(&mut f, &mut r, i, at, m)
                }
            }
            if step % 10 == 0 {
                let t = f.rollout().expect("tracking");
                let now = m + Duration::from_millis(r.next(5000));
                let sums = t.counts.observation(now);
                same(
                    &sums,
                    &t.counts.observe_pass(f.views(), now),
                    &format!("step {step}"),
                );
                checked += u64::from(sums.cohort.workers > 0 && sums.rest.workers > 0);
            }
        }
        assert!(checked > 10, "both sides were seldom counted: {checked}");
    }
}
