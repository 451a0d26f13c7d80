//! The staged rollout's line under the Ladder's rows (issue 33), as text
//! from the hub's own figures (`GET /v1/rollouts/current`): while it
//! bakes, `rollout 4c2e… to 4 of 40 (10%) · 6m left · cohort: no route 0,
//! 0.1 failovers/min · rest: no route 0, 0.0 failovers/min`; a halt with
//! its reason; a promotion or an abort. Cut to the width part by part from
//! the end (the rest's figures go first, the head and a halt's reason
//! stay), so what is left always reads whole.

use std::time::Duration;

use ratatui::text::{Line, Span};

use super::theme::Theme;
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
                None => format!("{} left", fmt::left(v.time_left_s)),
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

/// A label of the detail, as the detail overlay's (`{k:<12}`, muted).
fn kv(t: &Theme, k: &str, v: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{k:<12}"), t.muted()),
        Span::raw(v),
    ])
}

/// `halted after 14s of 10m`, `4m left of 10m, then promote auto`.
fn bake_words(v: &RolloutView) -> String {
    let bake = fmt::held(v.bake_s);
    match (v.state, v.baked_s) {
        (State::Baking, _) if v.waiting.is_some() => {
            format!("baked its {bake}: waiting for the owner")
        }
        (State::Baking, _) => format!(
            "{} left of {bake}, then promote {}",
            fmt::left(v.time_left_s),
            v.promote
        ),
        (state, Some(b)) => format!("{state} after {} of {bake}", fmt::held(b)),
        (state, None) => format!("{state} (a {bake} bake)"),
    }
}

/// `10%: 4 of 40 workers, 4 on the candidate`; a count with the share it
/// fixed.
fn cohort_words(v: &RolloutView) -> String {
    let all = v.cohort_workers + v.guard.rest.workers;
    let asked = if v.cohort.ends_with('%') {
        hub(&v.cohort).into_owned()
    } else {
        format!("{} (a {} share, kept)", hub(&v.cohort), share(v))
    };
    format!(
        "{asked}: {} of {} workers, {} on the candidate",
        fmt::count(v.cohort_workers as usize),
        fmt::count(all as usize),
        fmt::count(v.cohort_on_candidate as usize)
    )
}

/// One side's row of the guard's table.
fn guard_row(name: &str, f: &crate::rollout::Figures) -> String {
    format!(
        "{name:<12}{:>8}  {:>12}  {:>12}  {:>13.2}",
        fmt::count(f.workers as usize),
        format!("{} ({:.0}%)", f.no_route, f.no_route_share() * 100.0),
        format!("{} ({:.0}%)", f.one_failure, f.one_failure_share() * 100.0),
        f.failovers_per_min()
    )
}

/// Enter on the Ladder's rollout line: the rollout's title and its lines
/// (state and bake, candidate and base, cohort, the guard's figures side
/// by side, why it waits, halted or was aborted, and its steps), in the
/// detail overlay's shape; `(last known, 2m ago)` when the hub cannot be
/// asked.
pub fn detail(
    t: &Theme,
    v: Option<&RolloutView>,
    last_known: Option<Duration>,
) -> (String, Vec<Line<'static>>) {
    let Some(v) = v else {
        return (
            "rollout".into(),
            vec![Line::raw("no rollout has run on this hub")],
        );
    };
    let title = format!("rollout {} {} {}", hub(&v.id), t.sep(), v.state);
    let mut out = Vec::new();
    if let Some(d) = last_known {
        let d = chrono::TimeDelta::from_std(d).unwrap_or(chrono::TimeDelta::MAX);
        out.push(Line::styled(
            format!("last known, {} ago: the hub cannot be asked", fmt::age(d)),
            t.greyed(),
        ));
    }
    let state_style = match v.state {
        State::Halted => t.bad(),
        _ => t.title(),
    };
    out.push(Line::from(vec![
        Span::styled(format!("{:<12}", "state"), t.muted()),
        Span::styled(bake_words(v), state_style),
    ]));
    out.push(kv(
        t,
        "candidate",
        format!(
            "{} {} revision {}",
            hub(&v.agents.join(", ")),
            t.sep(),
            hub(&v.candidate_revision)
        ),
    ));
    out.push(kv(
        t,
        "onto",
        format!("{} (the accepted list)", hub(&v.base_revision)),
    ));
    out.push(kv(
        t,
        "started",
        format!(
            "by {} at {}",
            hub(&v.by),
            v.started_at.format("%Y-%m-%d %H:%M:%SZ")
        ),
    ));
    out.push(kv(t, "cohort", cohort_words(v)));
    if let Some(w) = &v.waiting {
        out.push(kv(t, "waiting", hub(w).into_owned()));
    }
    if let Some(r) = &v.reason {
        out.push(Line::from(vec![
            Span::styled(format!("{:<12}", "reason"), t.muted()),
            Span::styled(hub(r).into_owned(), state_style),
        ]));
    }
    out.push(Line::raw(""));
    out.push(Line::styled(
        format!(
            "{:<12}{:>8}  {:>12}  {:>12}  {:>13}",
            "guard", "workers", "no route", "one failure", "failovers/min"
        ),
        t.title(),
    ));
    out.push(Line::raw(guard_row("cohort", &v.guard.cohort)));
    out.push(Line::raw(guard_row("rest", &v.guard.rest)));
    out.push(Line::raw(""));
    out.push(Line::styled("steps", t.title()));
    for s in &v.steps {
        out.push(Line::raw(format!(
            "{}  {:<10} {:<9} {}",
            s.at.format("%m-%d %H:%M:%S"),
            hub(&s.by),
            format!("{:?}", s.step).to_lowercase(),
            s.reason.as_deref().map(hub).unwrap_or_default()
        )));
    }
    (title, out)
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

    /// Issue 33, tried as a new owner: a 10m bake begun 3 s ago read
    /// `9m left` (an age, rounded down); the time left rounds up.
    #[test]
    fn a_bake_just_begun_has_all_of_it_left() {
        let mut v = baking();
        v.time_left_s = 597;
        assert!(
            at(&v, 120, None).contains(" · 10m left · "),
            "{}",
            at(&v, 120, None)
        );
        v.time_left_s = 3 * 3600 - 5;
        assert!(
            at(&v, 120, None).contains(" · 3h left · "),
            "{}",
            at(&v, 120, None)
        );
        v.time_left_s = 5400 - 30;
        assert!(
            at(&v, 120, None).contains(" · 1h 30m left · "),
            "{}",
            at(&v, 120, None)
        );
        v.time_left_s = 42;
        assert!(
            at(&v, 120, None).contains(" · 42s left · "),
            "{}",
            at(&v, 120, None)
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
