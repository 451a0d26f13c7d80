//! The staged rollout's line under the Ladder's rows (issue 33), as text
//! from the hub's own figures (`GET /v1/rollouts/current`): while it
//! bakes, `rollout 4c2e… to 4 of 40 (10%) · 6m left · cohort: no route 0,
//! 0.1 failovers/min · rest: no route 0, 0.0 failovers/min`; a halt with
//! its reason; a promotion or an abort. Cut to the width part by part from
//! the end (the rest's figures go first, the head and a halt's reason
//! stay), so what is left always reads whole.

use std::time::Duration;

use super::{fit, fmt, hub};
use crate::rollout::State;
use crate::rollout::wire::RolloutView;

/// How the line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// It bakes.
    Baking,
    /// The guard halted it: red.
    Halted,
    Promoted,
    Aborted,
}

/// The rollout's id as the line names it: its first four characters.
pub fn short_id(id: &str, ellipsis: &str) -> String {
    let head: String = id.chars().take(4).collect();
    if head.len() < id.len() {
        format!("{}{ellipsis}", hub(&head))
    } else {
        hub(&head).into_owned()
    }
}

/// `no route 0, 0.1 failovers/min` of one side of the guard.
fn side(f: &crate::rollout::Figures) -> String {
    let minutes = f.observed_s as f64 / 60.0;
    let rate = if minutes > 0.0 {
        f.failovers as f64 / minutes
    } else {
        0.0
    };
    format!("no route {}, {rate:.1} failovers/min", f.no_route)
}

/// The share asked for: `10%` as asked, or the share a count fixed.
fn share(v: &RolloutView) -> String {
    if v.cohort.ends_with('%') {
        hub(&v.cohort).into_owned()
    } else {
        format!("{:.0}%", v.cohort_share * 100.0)
    }
}

/// The line's parts, first the one that must stay.
fn parts(v: &RolloutView, last_known: Option<Duration>, ellipsis: &str) -> (Vec<String>, Tone) {
    let id = short_id(&v.id, ellipsis);
    let known = last_known.map_or(String::new(), |d| {
        let d = chrono::TimeDelta::from_std(d).unwrap_or(chrono::TimeDelta::MAX);
        format!(" (last known, {} ago)", fmt::age(d))
    });
    let reason = v.reason.as_deref().map(|r| hub(r).into_owned());
    match v.state {
        State::Baking => {
            let all = v.cohort_workers + v.guard.rest.workers;
            let mut head = format!(
                "rollout {id}{known} to {} of {} ({})",
                fmt::count(v.cohort_workers as usize),
                fmt::count(all as usize),
                share(v)
            );
            if v.cohort_on_candidate < v.cohort_workers {
                head.push_str(&format!(
                    ", {} on it",
                    fmt::count(v.cohort_on_candidate as usize)
                ));
            }
            let time = match &v.waiting {
                Some(_) => "bake over: waiting for the owner".to_string(),
                None => format!("{} left", fmt::held(v.time_left_s)),
            };
            let cohort = format!("cohort: {}", side(&v.guard.cohort));
            let rest = format!("rest: {}", side(&v.guard.rest));
            (vec![head, time, cohort, rest], Tone::Baking)
        }
        State::Halted => (
            vec![
                format!(
                    "rollout {id}{known} {}",
                    reason.unwrap_or_else(|| "halted by the guard".into())
                ),
                "the cohort is back on the accepted list".into(),
            ],
            Tone::Halted,
        ),
        State::Promoted => (
            vec![
                format!("rollout {id}{known} promoted"),
                "every worker is told it".into(),
            ],
            Tone::Promoted,
        ),
        State::Aborted => (
            vec![
                format!(
                    "rollout {id}{known} {}",
                    reason.unwrap_or_else(|| "aborted".into())
                ),
                "every worker is told the accepted list".into(),
            ],
            Tone::Aborted,
        ),
    }
}

/// The line at `width`: as many parts as fit whole, joined by `sep`; the
/// first cut with `ellipsis` when even it does not fit.
pub fn line_text(
    v: &RolloutView,
    last_known: Option<Duration>,
    sep: &str,
    ellipsis: &str,
    width: usize,
) -> (String, Tone) {
    let (parts, tone) = parts(v, last_known, ellipsis);
    let mut text = String::new();
    for p in parts {
        let more = if text.is_empty() {
            p
        } else {
            format!("{text} {sep} {p}")
        };
        if more.chars().count() > width {
            if text.is_empty() {
                text = fit(&more, width, ellipsis);
            }
            break;
        }
        text = more;
    }
    (text, tone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rollout::Figures;
    use crate::rollout::wire::GuardView;

    fn baking() -> RolloutView {
        let at = chrono::DateTime::parse_from_rfc3339("2026-12-02T06:00:00Z")
            .map(|t| t.with_timezone(&chrono::Utc))
            .unwrap();
        RolloutView {
            id: "4c2e9a1b07d3f5e8".into(),
            agents: vec!["claude".into(), "opencode".into()],
            candidate_revision: "9d0e1f2a3b4c".into(),
            base_revision: "7c3e91a0d4f2".into(),
            state: State::Baking,
            cohort: "10%".into(),
            cohort_share: 0.1,
            cohort_workers: 4,
            cohort_on_candidate: 4,
            guard: GuardView {
                cohort: Figures {
                    workers: 4,
                    failovers: 1,
                    failing: 1,
                    observed_s: 480,
                    ..Figures::default()
                },
                rest: Figures {
                    workers: 36,
                    one_failure: 1,
                    failovers: 2,
                    failing: 2,
                    observed_s: 4320,
                    ..Figures::default()
                },
            },
            reason: None,
            waiting: None,
            time_left_s: 360,
            bake_s: 600,
            baked_s: Some(240),
            promote: crate::rollout::Promote::Auto,
            started_at: at,
            by: "alice".into(),
            steps: vec![],
        }
    }

    fn at(v: &RolloutView, width: usize, known: Option<Duration>) -> String {
        line_text(v, known, "·", "…", width).0
    }

    #[test]
    fn the_line_while_it_bakes_at_120_and_80_columns() {
        let v = baking();
        insta::assert_snapshot!(
            at(&v, 120, None),
            @"rollout 4c2e… to 4 of 40 (10%) · 6m left · cohort: no route 0, 0.1 failovers/min · rest: no route 0, 0.0 failovers/min"
        );
        // 80 columns: the rest's figures go whole, the cohort's stay.
        insta::assert_snapshot!(
            at(&v, 80, None),
            @"rollout 4c2e… to 4 of 40 (10%) · 6m left · cohort: no route 0, 0.1 failovers/min"
        );
        insta::assert_snapshot!(
            at(&v, 80, Some(Duration::from_secs(130))),
            @"rollout 4c2e… (last known, 2m ago) to 4 of 40 (10%) · 6m left"
        );
        // Narrower than the head: the head, cut.
        insta::assert_snapshot!(at(&v, 20, None), @"rollout 4c2e… to 4…");
    }

    #[test]
    fn a_count_a_cohort_not_all_on_it_and_a_wait() {
        let mut v = baking();
        v.cohort = "7".into();
        v.cohort_share = 0.175;
        v.cohort_workers = 7;
        v.cohort_on_candidate = 5;
        v.waiting = Some("the bake has ended: waiting for the owner".into());
        v.time_left_s = 0;
        insta::assert_snapshot!(
            at(&v, 80, None),
            @"rollout 4c2e… to 7 of 43 (18%), 5 on it · bake over: waiting for the owner"
        );
    }

    #[test]
    fn a_halt_keeps_its_reason_at_80_columns() {
        let mut v = baking();
        v.state = State::Halted;
        v.reason = Some("halted by the guard: no route 0% → 75% in the cohort (rest 0%)".into());
        let (text, tone) = line_text(&v, None, "·", "…", 80);
        assert_eq!(tone, Tone::Halted);
        insta::assert_snapshot!(
            text,
            @"rollout 4c2e… halted by the guard: no route 0% → 75% in the cohort (rest 0%)"
        );
        insta::assert_snapshot!(
            at(&v, 60, None),
            @"rollout 4c2e… halted by the guard: no route 0% → 75% in the…"
        );
    }
}
