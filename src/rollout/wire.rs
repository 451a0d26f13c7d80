//! The rollout's JSON on the wire: `GET /v1/rollouts/current` (and the
//! `201` of `POST /v1/rollouts`, the same shape), the SSE `rollout` event,
//! and History's `rollouts` entries ([`Step`], as the state records it).
//! Field names are the contract's (docs/hub-api.md); add, never rename.
//! Like the other answers of the hub, unknown fields are ignored on
//! reading, so a newer hub can add some.

use super::guard::Figures;
use super::query::Promote;
use super::state::{Rollout, State, Step};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// `GET /v1/rollouts/current`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutView {
    pub id: String,
    /// The candidate list.
    pub agents: Vec<String>,
    pub candidate_revision: String,
    pub base_revision: String,
    pub state: State,
    /// What the owner asked for: `10%` or a count, `7`.
    pub cohort: String,
    /// The share of workers the cohort holds, 0–1 (for a count, the share
    /// it fixed at the start).
    pub cohort_share: f64,
    /// Live workers in the cohort, at the last judgement.
    pub cohort_workers: u64,
    /// Of those, the ones that run the candidate.
    pub cohort_on_candidate: u64,
    pub guard: GuardView,
    /// Why it halted or was aborted; `null` otherwise.
    pub reason: Option<String>,
    /// Why it waits for the owner once its bake has ended; `null` when it
    /// does not wait.
    pub waiting: Option<String>,
    pub time_left_s: u64,
    pub bake_s: u64,
    /// How long it baked (counted while the hub ran, at most `bake_s`):
    /// an ended rollout says when it ended. Absent from an older hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baked_s: Option<u64>,
    pub promote: Promote,
    pub started_at: DateTime<Utc>,
    pub by: String,
    pub steps: Vec<Step>,
}

/// `guard`: the figures of the last judgement, per side (see
/// [`super::guard`]); frozen once the rollout has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuardView {
    /// The cohort workers that run the candidate.
    pub cohort: Figures,
    /// The live workers outside the cohort.
    pub rest: Figures,
}

/// `event: rollout` data: the step taken and the rollout after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RolloutEvent {
    pub step: Step,
    pub rollout: RolloutView,
}

impl RolloutView {
    pub fn of(r: &Rollout) -> RolloutView {
        RolloutView {
            id: r.id.clone(),
            agents: r.agents.clone(),
            candidate_revision: r.candidate_revision.clone(),
            base_revision: r.base_revision.clone(),
            state: r.state,
            cohort: r.asked.to_string(),
            cohort_share: r.cohort.fraction(),
            cohort_workers: r.last.cohort_workers,
            cohort_on_candidate: r.last.cohort.workers,
            guard: GuardView {
                cohort: r.last.cohort,
                rest: r.last.rest,
            },
            reason: r.reason.clone(),
            waiting: r.waiting.map(|w| w.to_string()),
            time_left_s: r.time_left_s(),
            bake_s: r.bake.secs(),
            baked_s: Some(r.baked.as_secs()),
            promote: r.promote,
            started_at: r.started_at,
            by: r.by.clone(),
            steps: r.steps.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollout::{Bake, Cohort, CohortSpec, Observation, Policy, Start};
    use chrono::TimeZone;

    fn halted() -> Rollout {
        let at = Utc.with_ymd_and_hms(2026, 12, 2, 1, 0, 0).unwrap();
        let mut r = Rollout::start(
            Start {
                id: "r1".into(),
                cohort: Cohort::share("salt-a", 10).unwrap(),
                asked: CohortSpec::Share(10),
                base_revision: "rev-a".into(),
                candidate_revision: "rev-b".into(),
                agents: vec!["claude".into()],
                bake: Bake::from_secs(600).unwrap(),
                promote: Promote::Auto,
                cohort_before: None,
            },
            at,
            "alice",
        );
        let side = |workers, no_route| Figures {
            workers,
            no_route,
            observed_s: workers * 60,
            ..Figures::default()
        };
        r.judge(
            Observation {
                cohort_workers: 4,
                cohort: side(4, 3),
                rest: side(36, 0),
            },
            &Policy::default(),
            at,
        );
        r
    }

    #[test]
    fn the_contracts_names() {
        let v = serde_json::to_value(RolloutView::of(&halted())).unwrap();
        for name in [
            "id",
            "agents",
            "candidate_revision",
            "base_revision",
            "state",
            "cohort_workers",
            "cohort_on_candidate",
            "guard",
            "reason",
            "time_left_s",
        ] {
            assert!(v.get(name).is_some(), "{name} missing: {v}");
        }
        assert_eq!(v["state"], "halted");
        assert_eq!(v["cohort_workers"], 4);
        assert_eq!(v["cohort_on_candidate"], 4);
        assert_eq!(v["guard"]["cohort"]["no_route"], 3);
        assert_eq!(v["guard"]["rest"]["workers"], 36);
        assert_eq!(v["time_left_s"], 0);
        assert_eq!(v["cohort"], "10%");
        assert_eq!(
            v["reason"],
            "halted by the guard: no route 0% → 75% in the cohort (rest 0%)"
        );
        assert_eq!(v["steps"][1]["step"], "halted");
    }

    #[test]
    fn json_round_trips() {
        let r = halted();
        let view = RolloutView::of(&r);
        let back: RolloutView =
            serde_json::from_str(&serde_json::to_string(&view).unwrap()).unwrap();
        assert_eq!(back, view);
        let event = RolloutEvent {
            step: r.steps[1].clone(),
            rollout: view,
        };
        let back: RolloutEvent =
            serde_json::from_str(&serde_json::to_string(&event).unwrap()).unwrap();
        assert_eq!(back, event);
        // The state itself, as the hub keeps it in its database.
        let back: Rollout = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn a_newer_hubs_extra_field_is_ignored() {
        let mut v = serde_json::to_value(RolloutView::of(&halted())).unwrap();
        v["later"] = serde_json::json!(1);
        assert!(serde_json::from_value::<RolloutView>(v).is_ok());
    }
}
