//! The guard: is the cohort on the candidate clearly worse than the rest?
//!
//! The hub sums, for each side, the workers it counts ([`Figures`], one
//! worker at a time through [`Figures::add`]): the cohort's side holds only
//! the cohort workers that run the candidate (a worker in a turn on the
//! accepted list is not the candidate's doing), the rest's side every live
//! worker outside the cohort. Both are judged at the same moment, so a
//! fleet-wide outage weighs on both and is not blamed on the candidate:
//! the guard compares, it never halts on a threshold alone.
//!
//! [`judge`] halts on the first of three measures that holds (the
//! [`Policy::default`] figures):
//!
//! | measure | halts when (all of) | why these figures |
//! |---|---|---|
//! | no route (share of workers with no agent left) | ≥ 2 cohort workers have no route, and the cohort's share is ≥ 25 points above the rest's | one noisy worker is never enough: 1 of 4 is 25% and stays quiet; 2 of 4 (50%) or 3 of 4 (75%) against a rest at 0% halt. In a cohort of 100, 2 with no route (2%) is noise and needs 25 more. |
//! | one failure from no route (share) | ≥ 3 cohort workers are one failure away, and the cohort's share is ≥ 50 points above the rest's | softer than no route (the workers still run), and a shorter list may be what the owner meant: it halts only when it is most of the cohort (3 of 4 against a rest at ≤ 25%) |
//! | failovers per worker-minute | more than half the cohort's workers failed over (and ≥ 2), the cohort was watched ≥ 1 minute a worker, and its rate is ≥ 3× the rest's and ≥ 0.2 a worker-minute above it; each worker counts at most 3 failovers | one worker's burst weighs 3 at most, and one worker is never more than half of a cohort of 2 or more; the minute a worker keeps the first seconds after a switch from reading as a rate |
//!
//! Then, when nothing halts: fewer than 3 cohort workers on the candidate
//! is [`Verdict::TooFew`] (the bake's end waits for the owner: a quiet guard
//! over 2 workers says little), else [`Verdict::Quiet`]. A halt needs no
//! minimum cohort: 2 workers of 2 with no route are harm enough.
//!
//! There is no "sustained" rule: the hub judges every few seconds and the
//! first judgement that holds halts. Two or more cohort workers with no
//! route at once while the rest has none is not noise, and the contract
//! asks for a halt within 60 s; a rule that waited for several judgements
//! would spend that time for nothing the counts above do not already buy.
//! An empty rest (a fleet that is all cohort) reads as 0: the cohort is
//! then judged against no harm at all.

use serde::{Deserialize, Serialize};
use std::fmt;

/// What one worker contributes, as the hub sees it when it judges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WorkerFigures {
    pub no_route: bool,
    /// On a rung with nothing left below it (and not no route).
    pub one_failure: bool,
    /// Failovers since it was first counted (for the cohort: since it took
    /// the candidate; for the rest: since the rollout started).
    pub failovers: u64,
    /// How long it has been counted, in seconds.
    pub observed_s: u64,
}

/// One side's sums.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figures {
    /// Workers counted.
    pub workers: u64,
    pub no_route: u64,
    pub one_failure: u64,
    /// Failovers, each worker's capped at [`Policy::failover_cap`] when
    /// added through [`Figures::add`].
    pub failovers: u64,
    /// Workers with at least one failover.
    pub failing: u64,
    /// Worker-seconds observed.
    pub observed_s: u64,
}

/// The margins and minimum counts; [`Policy::default`] is the documented
/// set (see the module doc), tests may tune it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Policy {
    /// Cohort workers on the candidate needed to call the guard quiet.
    pub min_cohort: u64,
    pub no_route_min: u64,
    /// Share points (0.25 = 25 points) above the rest.
    pub no_route_margin: f64,
    pub one_failure_min: u64,
    pub one_failure_margin: f64,
    pub failing_min: u64,
    /// Failovers one worker adds at most.
    pub failover_cap: u64,
    /// Seconds observed a counted cohort worker, on average, before a rate
    /// is read.
    pub failover_min_observed_s: u64,
    pub failover_ratio: f64,
    /// Failovers a worker-minute above the rest.
    pub failover_margin: f64,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            min_cohort: 3,
            no_route_min: 2,
            no_route_margin: 0.25,
            one_failure_min: 3,
            one_failure_margin: 0.50,
            failing_min: 2,
            failover_cap: 3,
            failover_min_observed_s: 60,
            failover_ratio: 3.0,
            failover_margin: 0.2,
        }
    }
}

/// What the guard measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Measure {
    NoRoute,
    OneFailure,
    Failovers,
}

/// Why the guard halted: the measure, the cohort's and the rest's figure,
/// and where the arrow starts (see [`Reason::with_before`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reason {
    pub measure: Measure,
    /// The cohort's figure before the candidate, when the hub had one; the
    /// arrow starts at the rest's figure without it.
    pub before: Option<f64>,
    pub cohort: f64,
    pub rest: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    Quiet,
    Halt(Reason),
    /// Nothing halts, but too few cohort workers run the candidate to call
    /// it quiet.
    TooFew {
        workers: u64,
        needed: u64,
    },
}

impl Figures {
    /// Adds one worker, its failovers capped at `policy.failover_cap`.
    pub fn add(&mut self, w: WorkerFigures, policy: &Policy) {
        self.workers += 1;
        self.no_route += u64::from(w.no_route);
        self.one_failure += u64::from(w.one_failure && !w.no_route);
        self.failovers += w.failovers.min(policy.failover_cap);
        self.failing += u64::from(w.failovers > 0);
        self.observed_s = self.observed_s.saturating_add(w.observed_s);
    }

    fn share(&self, n: u64) -> f64 {
        if self.workers == 0 {
            0.0
        } else {
            n as f64 / self.workers as f64
        }
    }

    pub fn no_route_share(&self) -> f64 {
        self.share(self.no_route)
    }

    pub fn one_failure_share(&self) -> f64 {
        self.share(self.one_failure)
    }

    /// Failovers per worker-minute; 0 when nothing was observed.
    pub fn failovers_per_min(&self) -> f64 {
        if self.observed_s == 0 {
            0.0
        } else {
            self.failovers as f64 * 60.0 / self.observed_s as f64
        }
    }

    /// This side's figure for `m` (a share 0–1, or a rate).
    pub fn value(&self, m: Measure) -> f64 {
        match m {
            Measure::NoRoute => self.no_route_share(),
            Measure::OneFailure => self.one_failure_share(),
            Measure::Failovers => self.failovers_per_min(),
        }
    }
}

/// The guard's judgement; see the module doc.
pub fn judge(cohort: &Figures, rest: &Figures, policy: &Policy) -> Verdict {
    // A margin met exactly holds (2 of 8 is 25 points over 0%), whatever
    // the last bit of the division says.
    let above = |c: f64, r: f64, margin: f64| c - r >= margin - 1e-9;
    let halt = |measure| {
        Verdict::Halt(Reason {
            measure,
            before: None,
            cohort: cohort.value(measure),
            rest: rest.value(measure),
        })
    };
    if cohort.no_route >= policy.no_route_min
        && above(
            cohort.no_route_share(),
            rest.no_route_share(),
            policy.no_route_margin,
        )
    {
        return halt(Measure::NoRoute);
    }
    if cohort.one_failure >= policy.one_failure_min
        && above(
            cohort.one_failure_share(),
            rest.one_failure_share(),
            policy.one_failure_margin,
        )
    {
        return halt(Measure::OneFailure);
    }
    let (c, r) = (cohort.failovers_per_min(), rest.failovers_per_min());
    if cohort.failing >= policy.failing_min
        && cohort.failing * 2 > cohort.workers
        && cohort.observed_s
            >= policy
                .failover_min_observed_s
                .saturating_mul(cohort.workers)
        && c >= r * policy.failover_ratio
        && above(c, r, policy.failover_margin)
    {
        return halt(Measure::Failovers);
    }
    if cohort.workers < policy.min_cohort {
        return Verdict::TooFew {
            workers: cohort.workers,
            needed: policy.min_cohort,
        };
    }
    Verdict::Quiet
}

impl Reason {
    /// The arrow starts at the cohort's own figure before the candidate
    /// (the hub's figures for the cohort workers when the rollout started),
    /// so the sentence reads as what the candidate changed; the guard
    /// itself judges against the rest, named in brackets.
    pub fn with_before(mut self, before: &Figures) -> Reason {
        self.before = Some(before.value(self.measure));
        self
    }
}

impl Measure {
    pub fn as_str(self) -> &'static str {
        match self {
            Measure::NoRoute => "no route",
            Measure::OneFailure => "one failure from no route",
            Measure::Failovers => "failovers",
        }
    }

    fn show(self, v: f64) -> String {
        match self {
            Measure::NoRoute | Measure::OneFailure => format!("{:.0}%", v * 100.0),
            Measure::Failovers => format!("{v:.1}/min"),
        }
    }
}

/// `halted by the guard: no route 0% → 75% in the cohort (rest 0%)`.
impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let m = self.measure;
        write!(
            f,
            "halted by the guard: {} {} → {} in the cohort (rest {})",
            m.as_str(),
            m.show(self.before.unwrap_or(self.rest)),
            m.show(self.cohort),
            m.show(self.rest)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(workers: u64, no_route: u64, one_failure: u64) -> Figures {
        Figures {
            workers,
            no_route,
            one_failure,
            observed_s: workers * 300,
            ..Figures::default()
        }
    }

    fn p() -> Policy {
        Policy::default()
    }

    fn measure(v: Verdict) -> Option<Measure> {
        match v {
            Verdict::Halt(r) => Some(r.measure),
            _ => None,
        }
    }

    #[test]
    fn one_of_four_with_no_route_is_not_halted() {
        assert_eq!(judge(&side(4, 1, 0), &side(36, 0, 0), &p()), Verdict::Quiet);
    }

    #[test]
    fn most_of_the_cohort_with_no_route_halts_with_the_issues_words() {
        let v = judge(&side(4, 3, 0), &side(36, 0, 0), &p());
        let Verdict::Halt(r) = v else { panic!("{v:?}") };
        assert_eq!(
            r.with_before(&side(4, 0, 0)).to_string(),
            "halted by the guard: no route 0% → 75% in the cohort (rest 0%)"
        );
        // Without a figure from before, the arrow starts at the rest's.
        let v = judge(&side(4, 3, 0), &side(36, 4, 0), &p());
        let Verdict::Halt(r) = v else { panic!("{v:?}") };
        assert_eq!(
            r.to_string(),
            "halted by the guard: no route 11% → 75% in the cohort (rest 11%)"
        );
    }

    #[test]
    fn a_rest_as_bad_is_not_the_cohorts_fault() {
        assert_eq!(
            judge(&side(4, 3, 0), &side(36, 27, 0), &p()),
            Verdict::Quiet
        );
        assert_eq!(
            judge(&side(4, 3, 0), &side(36, 20, 0), &p()),
            Verdict::Quiet
        );
        assert_eq!(
            judge(&side(10, 0, 8), &side(90, 0, 60), &p()),
            Verdict::Quiet
        );
    }

    #[test]
    fn one_workers_burst_of_failovers_does_not_halt_a_cohort_of_four() {
        let policy = p();
        let sum = |failovers: &[u64]| {
            let mut f = Figures::default();
            for &n in failovers {
                let w = WorkerFigures {
                    failovers: n,
                    observed_s: 150,
                    ..WorkerFigures::default()
                };
                f.add(w, &policy);
            }
            f
        };
        let rest = sum(&[0; 36]);
        let cohort = sum(&[50, 1, 0, 0]);
        assert_eq!(cohort.failovers, 4, "the burst counts 3");
        assert_eq!(judge(&cohort, &rest, &policy), Verdict::Quiet);
        // Three of four failing over is the candidate's doing.
        let v = judge(&sum(&[50, 1, 2, 0]), &rest, &policy);
        let Verdict::Halt(r) = v else { panic!("{v:?}") };
        assert_eq!(
            r.to_string(),
            "halted by the guard: failovers 0.0/min → 0.6/min in the cohort (rest 0.0/min)"
        );
    }

    #[test]
    fn failovers_need_time_observed_and_a_margin_over_the_rest() {
        let c = Figures {
            workers: 4,
            failovers: 4,
            failing: 4,
            observed_s: 4 * 30,
            ..Figures::default()
        };
        let r = Figures {
            workers: 36,
            observed_s: 36 * 30,
            ..Figures::default()
        };
        // 30 s a worker: too early to read a rate.
        assert_eq!(judge(&c, &r, &p()), Verdict::Quiet);
        let c = Figures {
            observed_s: 4 * 120,
            ..c
        };
        assert_eq!(measure(judge(&c, &r, &p())), Some(Measure::Failovers));
        // The rest fails over at the same rate: not the candidate.
        let r = Figures {
            failovers: 36,
            failing: 36,
            observed_s: 36 * 120,
            ..r
        };
        assert_eq!(judge(&c, &r, &p()), Verdict::Quiet);
    }

    #[test]
    fn too_few_to_judge_unless_the_harm_is_plain() {
        assert_eq!(
            judge(&side(2, 0, 0), &side(38, 0, 0), &p()),
            Verdict::TooFew {
                workers: 2,
                needed: 3
            }
        );
        assert_eq!(
            judge(&side(0, 0, 0), &side(40, 0, 0), &p()),
            Verdict::TooFew {
                workers: 0,
                needed: 3
            }
        );
        assert_eq!(
            measure(judge(&side(2, 2, 0), &side(38, 0, 0), &p())),
            Some(Measure::NoRoute)
        );
    }

    /// Edge counts: (cohort workers, no route, one failure), (rest
    /// workers, no route, one failure) → the measure that halts.
    #[test]
    fn edge_counts() {
        use Measure::*;
        type Counts = (u64, u64, u64);
        let table: &[(Counts, Counts, Option<Measure>)] = &[
            ((3, 1, 0), (30, 0, 0), None),
            ((3, 2, 0), (30, 0, 0), Some(NoRoute)),
            ((4, 1, 0), (36, 0, 0), None),
            ((4, 2, 0), (36, 0, 0), Some(NoRoute)),
            ((4, 2, 0), (36, 9, 0), Some(NoRoute)), // 50% vs 25%: 25 points
            ((4, 2, 0), (36, 10, 0), None),         // 50% vs 28%
            ((4, 4, 0), (36, 27, 0), Some(NoRoute)), // 100% vs 75%: 25 points
            ((8, 2, 0), (72, 0, 0), Some(NoRoute)), // 25% vs 0%
            ((9, 2, 0), (81, 0, 0), None),          // 22% vs 0%
            ((100, 2, 0), (900, 0, 0), None),
            ((100, 30, 0), (900, 45, 0), Some(NoRoute)), // 30% vs 5%
            ((4, 0, 2), (36, 0, 0), None),
            ((4, 0, 3), (36, 0, 0), Some(OneFailure)),
            ((4, 0, 3), (36, 0, 9), Some(OneFailure)), // 75% vs 25%
            ((4, 0, 3), (36, 0, 10), None),
            ((6, 0, 3), (54, 0, 0), Some(OneFailure)), // 50% vs 0%
            ((7, 0, 3), (63, 0, 0), None),             // 43% vs 0%
            ((4, 1, 3), (36, 0, 0), Some(OneFailure)),
            ((1, 1, 0), (39, 0, 0), None),
            ((3, 3, 0), (0, 0, 0), Some(NoRoute)),
        ];
        for (c, r, want) in table {
            let v = judge(&side(c.0, c.1, c.2), &side(r.0, r.1, r.2), &p());
            assert_eq!(measure(v), *want, "cohort {c:?} rest {r:?}: {v:?}");
        }
    }

    #[test]
    fn a_no_route_worker_is_not_also_one_failure() {
        let mut f = Figures::default();
        f.add(
            WorkerFigures {
                no_route: true,
                one_failure: true,
                ..WorkerFigures::default()
            },
            &p(),
        );
        assert_eq!((f.no_route, f.one_failure), (1, 0));
    }
}
