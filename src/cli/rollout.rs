//! `macfleet agents rollout [status|promote|abort]`, and the rollout as
//! the other `agents` commands say it: an edit started as a rollout
//! (`--cohort`), a rollout baking under `agents show` and `--dry-run`, and
//! a write refused with `409` because one bakes, in words (what to run),
//! never the hub's API paths.
//!
//! `status` exits by the rollout's state: 0 baking or promoted, 1 aborted,
//! [`super::exit::HALTED`] (7) halted; 1 when none has run.

use std::io::Write;

use clap::ValueEnum;
use color_eyre::eyre::{Result, eyre};

use super::{Exit, Global, connect, exit};
use crate::client::{Client, ClientError, Writer};
use crate::rollout::wire::RolloutView;
use crate::rollout::{Bake, CohortSpec, Figures, Promote, State};
use crate::textsafe::for_terminal;

/// What `agents rollout` does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Action {
    /// The newest rollout: its state, cohort, the guard's figures, time
    /// left and the reason of a halt or an abort.
    #[default]
    Status,
    /// Write the candidate to every worker now (owner).
    Promote,
    /// End it: the cohort goes back to the accepted list (owner).
    Abort,
}

/// `--cohort 10%` or `--cohort 4`: the hub's own rule (1% to 50%, or a
/// count), said as the flag.
pub fn parse_cohort(s: &str) -> Result<CohortSpec, String> {
    s.parse::<CohortSpec>()
        .map_err(|e| e.to_string().replacen("cohort=", "", 1))
}

/// `--bake 10m`: 10s to 24h.
pub fn parse_bake(s: &str) -> Result<Bake, String> {
    s.parse::<Bake>()
        .map_err(|e| e.to_string().replacen("bake=", "", 1))
}

/// `--promote auto|manual`.
pub fn parse_promote(s: &str) -> Result<Promote, String> {
    s.parse::<Promote>()
        .map_err(|e| e.to_string().replacen("promote=", "", 1))
}

/// The exit code of `status` for a rollout in `state`.
pub fn exit_of(state: State) -> i32 {
    match state {
        State::Baking | State::Promoted => exit::OK,
        State::Aborted => exit::ERROR,
        State::Halted => exit::HALTED,
    }
}

fn short(rev: &str) -> &str {
    rev.get(..12).unwrap_or(rev)
}

/// `6m 12s`, `45s`, `1h 5m`, `1h`.
pub fn duration_text(s: u64) -> String {
    match s {
        s if s >= 3600 && s % 3600 / 60 == 0 => format!("{}h", s / 3600),
        s if s >= 3600 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        s if s >= 60 && s % 60 != 0 => format!("{}m {}s", s / 60, s % 60),
        s if s >= 60 => format!("{}m", s / 60),
        s => format!("{s}s"),
    }
}

fn workers(n: u64) -> String {
    format!("{n} worker{}", if n == 1 { "" } else { "s" })
}

/// One side of the guard: `3 workers: no route 2 (67%), one failure 0
/// (0%), failovers 0.4/min`.
fn side_text(f: &Figures) -> String {
    format!(
        "{}: no route {} ({:.0}%), one failure from no route {} ({:.0}%), failovers {:.2}/min",
        workers(f.workers),
        f.no_route,
        f.no_route_share() * 100.0,
        f.one_failure,
        f.one_failure_share() * 100.0,
        f.failovers_per_min()
    )
}

/// What `agents rollout status` prints: the state first, then the
/// cohort, the guard's figures cohort against rest, the time left and
/// why it ended or waits.
pub fn status_text(v: &RolloutView) -> String {
    let mut out = format!(
        "rollout {} {}: {} (revision {}) onto {}, started by {} at {}\n",
        v.id,
        v.state,
        v.agents.join(","),
        short(&v.candidate_revision),
        short(&v.base_revision),
        v.by,
        v.started_at.format("%Y-%m-%d %H:%M:%SZ"),
    );
    out.push_str(&cohort_text(v));
    out.push_str(&format!("guard, cohort: {}\n", side_text(&v.guard.cohort)));
    out.push_str(&format!("guard, rest:   {}\n", side_text(&v.guard.rest)));
    out.push_str(&bake_text(v));
    if let Some(w) = &v.waiting {
        out.push_str(&format!("waiting: {w}\n"));
    }
    if let Some(r) = &v.reason {
        out.push_str(&format!("reason: {r}\n"));
    }
    out
}

/// `cohort 25%: 10 of 40 workers, 10 on the candidate`; a count says the
/// share it fixed: `cohort 3 (a 31% share, kept for workers who join): 3
/// of 10 workers, 3 on the candidate`. The workers are the cohort's and
/// the rest's at the last judgement.
fn cohort_text(v: &RolloutView) -> String {
    let all = v.cohort_workers + v.guard.rest.workers;
    let share = if v.cohort.ends_with('%') {
        String::new()
    } else {
        format!(
            " (a {}% share, kept for workers who join)",
            share_percent(v.cohort_share)
        )
    };
    format!(
        "cohort {}{share}: {} of {}, {} on the candidate\n",
        v.cohort,
        v.cohort_workers,
        workers(all),
        v.cohort_on_candidate
    )
}

/// A share as people say it: whole percents, `<1` below one.
fn share_percent(f: f64) -> String {
    match f * 100.0 {
        p if p > 0.0 && p < 1.0 => "<1".to_string(),
        p => format!("{p:.0}"),
    }
}

/// While it bakes, the time left; once ended, how long it baked: `halted
/// after 14s of 10m` (an older hub that does not say: `baked 10m at
/// most`).
fn bake_text(v: &RolloutView) -> String {
    let bake = duration_text(v.bake_s);
    match (v.state, v.baked_s) {
        (State::Baking, _) => format!(
            "{} left of a {bake} bake, then promote {}\n",
            duration_text(v.time_left_s),
            v.promote
        ),
        (state, Some(baked)) => format!(
            "{state} after {} of {bake}, promote {}\n",
            duration_text(baked),
            v.promote
        ),
        (_, None) => format!("baked {bake} at most, promote {}\n", v.promote),
    }
}

/// The cohort as a sentence says it, once and plainly: a share with the
/// workers it holds (`10% of the workers (4 now)`), a count as the workers
/// it is (`a cohort of 3 workers`; `(4 now)` only when workers who joined
/// made it more or fewer). `held` is how many it holds now, when known.
pub fn cohort_words(cohort: &str, held: Option<u64>) -> String {
    match (cohort.parse::<u64>(), held) {
        (Ok(n), Some(h)) if h != n => format!("a cohort of {} ({h} now)", workers(n)),
        (Ok(n), _) => format!("a cohort of {}", workers(n)),
        (Err(_), Some(h)) => format!("{cohort} of the workers ({h} now)"),
        (Err(_), None) => format!("{cohort} of the workers"),
    }
}

/// One line for `agents show` and `--dry-run` while a rollout bakes: what
/// the cohort is told, and that a write waits for its end.
pub fn baking_line(v: &RolloutView) -> String {
    format!(
        "rollout {} is baking: {} {} told {} (revision {}), {} left; a write is refused until it is promoted or aborted (macfleet agents rollout status|promote|abort)",
        v.id,
        cohort_words(&v.cohort, Some(v.cohort_workers)),
        // A cohort is told; a share of the workers are.
        if v.cohort.parse::<u64>().is_ok() {
            "is"
        } else {
            "are"
        },
        v.agents.join(","),
        short(&v.candidate_revision),
        duration_text(v.time_left_s)
    )
}

/// The rollout baking, if one is; `None` too when the hub cannot say
/// (an older hub without rollouts, an error): the caller goes on without.
pub async fn baking(client: &Client) -> Option<RolloutView> {
    match client.rollout().await {
        Ok(Some(v)) if v.state == State::Baking => Some(v),
        _ => None,
    }
}

/// A `409` as a sentence for people: a rollout baking is named with what
/// to run about it; any other error as the client says it.
pub async fn in_words(client: &Client, e: &ClientError) -> String {
    match e {
        ClientError::InConflict { code, message } if code == "rollout_in_progress" => {
            let id = match baking(client).await {
                Some(v) => format!(
                    "{} ({}, {} left)",
                    v.id,
                    cohort_words(&v.cohort, None),
                    duration_text(v.time_left_s)
                ),
                None => message.split_whitespace().nth(1).unwrap_or("").to_string(),
            };
            format!(
                "conflict: rollout {} is baking, and the list changes only when it is promoted: run macfleet agents rollout promote (or abort), then write again",
                for_terminal(&id)
            )
        }
        ClientError::InConflict { message, .. } => {
            format!("conflict: {}", for_terminal(&without_paths(message)))
        }
        e => crate::scrub::scrub(&e.to_string()).into_owned(),
    }
}

/// The hub's sentence without a bracket naming API paths (`(POST
/// /v1/…)`): the CLI says what to run instead.
fn without_paths(message: &str) -> String {
    match message.find(" (POST /v1/") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

/// `agents rollout status|promote|abort`.
pub async fn run(global: &Global, action: Action) -> Result<i32> {
    let (client, target) = connect(global)?;
    let view = match action {
        Action::Status => match client.rollout().await? {
            Some(v) => v,
            None => {
                return Err(eyre!(Exit::new(
                    exit::ERROR,
                    "no rollout has run on this hub (start one with an agents edit and --cohort)"
                )));
            }
        },
        Action::Promote | Action::Abort => {
            if global.read_only || target.read_only {
                return Err(eyre!(Exit::new(
                    exit::NOT_ALLOWED,
                    "read-only: this session does not write (drop --read-only, or use a context that is not read_only)"
                )));
            }
            let who = client.whoami().await?;
            let Some(writer) = Writer::new(client.clone(), &who) else {
                return Err(eyre!(Exit::new(
                    exit::NOT_ALLOWED,
                    format!(
                        "not allowed: the token of {:?} has the {} role; only an owner promotes or aborts a rollout",
                        who.name, who.role
                    )
                )));
            };
            match writer.rollout_step(action == Action::Promote).await {
                Ok(v) => v,
                Err(e) => {
                    let code = e.exit_code();
                    return Err(eyre!(Exit::new(code, in_words(&client, &e).await)));
                }
            }
        }
    };
    let mut out = std::io::stdout().lock();
    out.write_all(crate::textsafe::for_terminal_lines(&status_text(&view)).as_bytes())?;
    out.flush()?;
    Ok(match action {
        Action::Status => exit_of(view.state),
        Action::Promote | Action::Abort => exit::OK,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        for (s, said) in [
            (0, "0s"),
            (45, "45s"),
            (60, "1m"),
            (372, "6m 12s"),
            (3600, "1h"),
            (3900, "1h 5m"),
        ] {
            assert_eq!(duration_text(s), said);
        }
    }
}
