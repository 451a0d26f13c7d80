//! Text for a terminal, shared by the commands (`cli`) and the TUI: compact
//! ages, text cut to a width with an ellipsis, and table columns fitted to
//! a width. Widths are counted in characters.

use std::borrow::Cow;

use chrono::{DateTime, TimeDelta, Utc};

/// A compact age: `12s`, `3m`, `5h`, `2d`. Future times (clock skew) read `0s`.
pub fn age(d: TimeDelta) -> String {
    let s = d.num_seconds().max(0);
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m", s / 60)
    } else if s < 86_400 {
        format!("{}h", s / 3600)
    } else {
        format!("{}d", s / 86_400)
    }
}

/// Skews of this many seconds or fewer either way are not shown: the skew
/// includes the heartbeat's time in flight (docs/hub-api.md, `clock_skew_s`).
pub const CLOCK_SKEW_SHOWN_PAST_S: i64 = 60;

/// A worker's clock against the hub's, from `clock_skew_s` (its clock less
/// the hub's): `10m ahead of the hub` (600), `2h behind the hub` (-7200);
/// `None` within [`CLOCK_SKEW_SHOWN_PAST_S`] either way.
pub fn clock_skew(skew_s: i64) -> Option<String> {
    if skew_s.abs() <= CLOCK_SKEW_SHOWN_PAST_S {
        return None;
    }
    let word = if skew_s > 0 { "ahead of" } else { "behind" };
    Some(format!(
        "{} {word} the hub",
        age(TimeDelta::try_seconds(skew_s.saturating_abs()).unwrap_or(TimeDelta::MAX))
    ))
}

/// Age of `then` at `now`.
pub fn age_at(now: DateTime<Utc>, then: DateTime<Utc>) -> String {
    age(now - then)
}

/// A failover's cause as one short phrase:
/// `rate_limited 429 (hub_router) 3m ago`.
pub fn cause_text(now: DateTime<Utc>, f: &crate::wire::Failover) -> String {
    let c = &f.cause;
    let mut s = c.kind.as_str().to_string();
    if let Some(st) = c.status {
        s.push_str(&format!(" {st}"));
    }
    s.push_str(&format!(
        " ({}) {} ago",
        c.source.as_str(),
        age_at(now, f.at)
    ));
    s
}

/// Why a worker does not stand on one rung of its list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RungWhy {
    /// Rank in the worker's own list, rank 0 first.
    pub rank: usize,
    pub agent: String,
    /// `rate_limited 429 (hub_router) since 14:01:05 (3m ago), 2 in the last hour`.
    pub text: String,
    /// The worker can run this rung and no cause for leaving it is known:
    /// the screen names it as a contradiction, not as an explanation.
    pub contradiction: bool,
}

/// What a capability lacks for the agent to be used, if anything.
pub fn lack(cap: Option<&crate::wire::Capability>) -> Option<&'static str> {
    use crate::wire::Preflight;
    match cap {
        None => Some("not reported"),
        Some(c) if !c.binary => Some("missing binary"),
        Some(c) if !c.token => Some("no token"),
        Some(c) if c.preflight == Preflight::Failed => Some("preflight failed"),
        Some(c) if c.preflight == Preflight::Unknown => Some("preflight unknown"),
        _ => None,
    }
}

/// Why a capability keeps a rung from being run, in the words of a
/// failover's kind: `missing_binary`, `no_token`, `preflight_failed`,
/// `preflight_unknown`, `not_reported`; `None` when it is capable.
fn cannot_run(cap: Option<&crate::wire::Capability>) -> Option<&'static str> {
    use crate::wire::Preflight;
    match cap {
        None => Some("not_reported"),
        Some(c) if !c.binary => Some("missing_binary"),
        Some(c) if !c.token => Some("no_token"),
        Some(c) if c.preflight == Preflight::Failed => Some("preflight_failed"),
        Some(c) if c.preflight == Preflight::Unknown => Some("preflight_unknown"),
        _ => None,
    }
}

/// A worker's headroom and, for every rung below its own it cannot fall
/// back to, which reason: held off by a recent failover (the hub's
/// `held_off`) or a capability it lacks. `None` with no route or a hub
/// that does not say its headroom. The TUI's detail and `macfleet get
/// worker` both print it:
/// `0: one failure from no route (held off: #2 claude rate_limited 2m ago;
/// cannot run: #4 cursor missing_binary)`, `0: one failure from no route
/// (nothing below its rung)`, `1: 1 rung below its own it can still run
/// (held off: #2 claude rate_limited 2m ago)`.
pub fn headroom_text(now: DateTime<Utc>, w: &crate::wire::WorkerView) -> Option<String> {
    let h = w.headroom?;
    let active = w.active_agent.as_deref()?;
    let below = match w.agents.iter().position(|a| a == active) {
        Some(r) => r + 1,
        None => w.agents.len(),
    };
    let (mut held, mut cannot) = (Vec::new(), Vec::new());
    for (rank, agent) in w.agents.iter().enumerate().skip(below) {
        if let Some(why) = cannot_run(w.capabilities.get(agent)) {
            cannot.push(format!("#{rank} {agent} {why}"));
        } else if let Some(x) = w.held_off.iter().find(|x| x.agent == *agent) {
            held.push(format!(
                "#{rank} {agent} {} {} ago",
                x.kind,
                age_at(now, x.at)
            ));
        }
    }
    let mut why: Vec<String> = Vec::new();
    if !held.is_empty() {
        why.push(format!("held off: {}", held.join(", ")));
    }
    if !cannot.is_empty() {
        why.push(format!("cannot run: {}", cannot.join(", ")));
    }
    let why = match (why.is_empty(), h) {
        (false, _) => format!(" ({})", why.join("; ")),
        (true, 0) => " (nothing below its rung)".to_string(),
        (true, _) => String::new(),
    };
    Some(match h {
        0 => format!("0: one failure from no route{why}"),
        1 => format!("1: 1 rung below its own it can still run{why}"),
        _ => format!("{h}: {h} rungs below its own it can still run{why}"),
    })
}

/// For every rung above the one a worker stands on (every rung when it
/// has no route), the cause holding it off, since when and how many times
/// in the last hour, one entry per rung in rank order. The TUI's detail and
/// `macfleet get worker` both print these.
///
/// - `agents` is the worker's own list, `active` its active agent;
/// - `capability` answers what the worker reports for an agent;
/// - `failovers` are the worker's failovers known to the caller (the log's
///   and its `last_failover`), in any order, repeats allowed;
/// - `recoveries` are the worker's recoveries known to the caller, in any
///   order: a recovery onto a rung (or above it) is a time the worker stood
///   on it again, so a hold-off that came back after it began afresh.
///
/// A rung is explained by the newest failover away from it (a worker that
/// left a rung passes it over without a new record until it stands on it
/// again), else by what its capability lacks; a rung the worker can run
/// and left with no recorded cause is a contradiction, named as such.
///
/// "since" is when the current hold-off of the rung began: the first
/// failover away from it since the worker last stood on it or above it
/// (as far as the failovers and recoveries tell: a failover onto the rung or
/// from a rung above it, a recovery onto it or above it); "last" is the newest, when it is another:
/// `rate_limited 429 (hub_router) since 08:03:10 (4m), last 46s ago, 13 in
/// the last hour`.
pub fn held_off<S: AsRef<str>>(
    now: DateTime<Utc>,
    agents: &[S],
    active: Option<&str>,
    capability: impl Fn(&str) -> Option<crate::wire::Capability>,
    failovers: &[&crate::wire::Failover],
    recoveries: &[&crate::wire::RecoveryRecord],
) -> Vec<RungWhy> {
    held_off_watched(
        now,
        agents,
        active,
        capability,
        failovers,
        recoveries,
        |_| false,
    )
}

/// [`held_off`], where `late(f)` says the hub received `f` long after its
/// `at` (the demo's back-filled hour; a worker that could not report for a
/// while): the hub was not watching then, and a recovery is stamped by the
/// hub's own clock, so a hold-off that began with such a failover may have
/// been broken by a return nobody could record. Its line does not claim
/// more than the records show: `since at least 10:32:51 (56m), last …`.
pub fn held_off_watched<S: AsRef<str>>(
    now: DateTime<Utc>,
    agents: &[S],
    active: Option<&str>,
    capability: impl Fn(&str) -> Option<crate::wire::Capability>,
    failovers: &[&crate::wire::Failover],
    recoveries: &[&crate::wire::RecoveryRecord],
    late: impl Fn(&crate::wire::Failover) -> bool,
) -> Vec<RungWhy> {
    // No route, or an active agent outside its list: every rung is left.
    let above = match active.and_then(|a| agents.iter().position(|x| x.as_ref() == a)) {
        Some(r) => &agents[..r],
        None => agents,
    };
    let hour_ago = now - TimeDelta::hours(1);
    above
        .iter()
        .enumerate()
        .map(|(rank, agent)| {
            let agent = agent.as_ref();
            let mut seen = std::collections::HashSet::new();
            let away: Vec<&crate::wire::Failover> = failovers
                .iter()
                .copied()
                .filter(|f| f.from == agent && seen.insert(f.id.as_str()))
                .collect();
            let newest = away.iter().max_by_key(|f| f.at);
            // The worker last stood on this rung or above it: a failover
            // onto it, or away from a rung above it, or a recovery onto it
            // or a rung above it.
            let stood = last_stood(agent, &above[..rank], failovers, recoveries);
            let began = away
                .iter()
                .filter(|f| stood.is_none_or(|s| f.at > s))
                .min_by_key(|f| f.at);
            let in_hour = away.iter().filter(|f| f.at > hour_ago).count();
            let (text, contradiction) = match (newest, lack(capability(agent).as_ref())) {
                (Some(f), _) => {
                    let began = began.copied().map(|b| (b, late(b)));
                    (failover_why(now, f, began, in_hour), false)
                }
                (None, Some(l)) => (format!("{l}, no failover recorded"), false),
                (None, None) => (
                    format!("contradiction: can run {agent}, skipped with no recorded cause"),
                    true,
                ),
            };
            RungWhy {
                rank,
                agent: agent.to_string(),
                text,
                contradiction,
            }
        })
        .collect()
}

/// When the worker last stood on `agent` or a rung above it (`higher`), as
/// far as the records tell: a failover onto it, or away from a rung above
/// it, or a recovery onto it or a rung above it.
fn last_stood<S: AsRef<str>>(
    agent: &str,
    higher: &[S],
    failovers: &[&crate::wire::Failover],
    recoveries: &[&crate::wire::RecoveryRecord],
) -> Option<DateTime<Utc>> {
    let on_or_above = |a: &str| a == agent || higher.iter().any(|x| x.as_ref() == a);
    failovers
        .iter()
        .filter(|f| f.to.as_deref() == Some(agent) || higher.iter().any(|a| a.as_ref() == f.from))
        .map(|f| f.at)
        .chain(
            recoveries
                .iter()
                .filter(|r| on_or_above(&r.to))
                .map(|r| r.at),
        )
        .max()
}

/// A rung's why-line from its newest failover `f`: the cause, when the
/// hold-off `began` (if earlier than `f`; with whether the hub received it
/// late, then `since at least`) and how many failovers away from it the
/// last hour saw.
fn failover_why(
    now: DateTime<Utc>,
    f: &crate::wire::Failover,
    began: Option<(&crate::wire::Failover, bool)>,
    in_hour: usize,
) -> String {
    let c = &f.cause;
    let mut s = c.kind.as_str().to_string();
    if let Some(st) = c.status {
        s.push_str(&format!(" {st}"));
    }
    s.push_str(&format!(" ({}) ", c.source.as_str()));
    let at_least = if began.is_some_and(|(_, late)| late) {
        "at least "
    } else {
        ""
    };
    match began.map(|(b, _)| b).filter(|b| b.at < f.at) {
        Some(b) => s.push_str(&format!(
            "since {at_least}{} ({}), last {} ago",
            b.at.format("%H:%M:%S"),
            age_at(now, b.at),
            age_at(now, f.at),
        )),
        None => s.push_str(&format!(
            "since {at_least}{} ({} ago)",
            f.at.format("%H:%M:%S"),
            age_at(now, f.at),
        )),
    }
    s.push_str(&format!(", {in_hour} in the last hour"));
    s
}

/// Width of `s` in columns (one per character).
pub fn width(s: &str) -> usize {
    s.chars().count()
}

/// `s` in at most `width` columns: whole when it fits, else cut and ending
/// in `ellipsis`, so a cut is never silent.
pub fn ellipsize<'a>(s: &'a str, width: usize, ellipsis: &str) -> Cow<'a, str> {
    if self::width(s) <= width {
        return Cow::Borrowed(s);
    }
    let ell = self::width(ellipsis);
    if width < ell {
        return Cow::Owned(ellipsis.chars().take(width).collect());
    }
    let mut out: String = s.chars().take(width - ell).collect();
    // A cut right after a space reads as a whole word: say it was cut there.
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out.push_str(ellipsis);
    Cow::Owned(out)
}

/// A table column as the fitter sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    /// Narrowest useful width: below its content's width the column is cut
    /// with an ellipsis, never below this.
    pub min: usize,
    /// Width of its widest content (the header's included): more is waste.
    pub want: usize,
    /// When the minimums do not fit: 0 is never dropped, otherwise the
    /// highest goes first (the rightmost on ties).
    pub drop: u8,
}

/// The width of each column in `total` columns with `gap` between kept
/// columns; `None` for a dropped one.
///
/// - Columns are dropped by [`Fit::drop`] while the kept columns' minimums
///   (each at most its content) do not fit, and while more than one is left.
/// - Every kept column gets its minimum, and the spare columns are shared
///   out evenly among the columns still short of their content, so a short
///   column never takes room a cut one needs.
/// - If a column is still cut, the droppable column that carries least (by
///   `drop`) among those shown whole is dropped when that alone lets every
///   other column show whole: a redundant column never costs a cut one.
pub fn fit_columns(cols: &[Fit], total: usize, gap: usize) -> Vec<Option<usize>> {
    let mut keep = vec![true; cols.len()];
    while needed(cols, &keep, gap) > total && keep.iter().filter(|k| **k).count() > 1 {
        let victim = cols
            .iter()
            .enumerate()
            .filter(|(i, c)| keep[*i] && c.drop > 0)
            .max_by_key(|(i, c)| (c.drop, *i))
            .map(|(i, _)| i);
        match victim {
            Some(i) => keep[i] = false,
            None => break,
        }
    }
    let widths = allocate(cols, &keep, total, gap);
    if !any_cut(cols, &widths) {
        return widths;
    }
    let mut victims: Vec<usize> = (0..cols.len())
        .filter(|i| cols[*i].drop > 0 && widths[*i] == Some(cols[*i].want))
        .collect();
    victims.sort_by_key(|i| std::cmp::Reverse((cols[*i].drop, *i)));
    for i in victims {
        let mut k = keep.clone();
        k[i] = false;
        let w = allocate(cols, &k, total, gap);
        if !any_cut(cols, &w) {
            return w;
        }
    }
    widths
}

/// A column's narrowest width: its minimum, at most its content.
fn floor(c: &Fit) -> usize {
    c.min.min(c.want)
}

/// The columns the kept ones need at their floors, gaps included.
fn needed(cols: &[Fit], keep: &[bool], gap: usize) -> usize {
    let n = keep.iter().filter(|k| **k).count();
    cols.iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| floor(c))
        .sum::<usize>()
        + gap * n.saturating_sub(1)
}

/// Each kept column at its floor, then the spare columns shared out one at
/// a time to the columns still short of their content.
fn allocate(cols: &[Fit], keep: &[bool], total: usize, gap: usize) -> Vec<Option<usize>> {
    let mut widths: Vec<Option<usize>> = cols
        .iter()
        .zip(keep)
        .map(|(c, k)| k.then(|| floor(c)))
        .collect();
    let mut spare = total.saturating_sub(needed(cols, keep, gap));
    // Round by round, one column to each column still short; every
    // round hands out at least one, so this ends within `total` rounds.
    while spare > 0 {
        let mut gave = false;
        for (w, c) in widths.iter_mut().zip(cols) {
            if let Some(w) = w {
                if spare > 0 && *w < c.want {
                    *w += 1;
                    spare -= 1;
                    gave = true;
                }
            }
        }
        if !gave {
            break;
        }
    }
    widths
}

/// Whether any kept column is narrower than its content.
fn any_cut(cols: &[Fit], widths: &[Option<usize>]) -> bool {
    widths
        .iter()
        .zip(cols)
        .any(|(w, c)| w.is_some_and(|w| w < c.want))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages() {
        assert_eq!(age(TimeDelta::seconds(-4)), "0s");
        assert_eq!(age(TimeDelta::seconds(59)), "59s");
        assert_eq!(age(TimeDelta::seconds(61)), "1m");
        assert_eq!(age(TimeDelta::seconds(7200)), "2h");
        assert_eq!(age(TimeDelta::days(3)), "3d");
    }

    #[test]
    fn a_cut_always_ends_in_the_ellipsis() {
        assert_eq!(ellipsize("opencode", 8, "…"), "opencode");
        assert_eq!(ellipsize("opencode", 7, "…"), "openco…");
        assert_eq!(ellipsize("opencode", 7, "…").chars().count(), 7);
        assert_eq!(
            ellipsize("rate limited (account)", 15, "…"),
            "rate limited (…"
        );
        // Cut right after a word: no dangling space before the ellipsis.
        assert_eq!(ellipsize("rate limited now", 14, "~"), "rate limited~");
        assert_eq!(ellipsize("abc", 0, "…"), "");
        assert_eq!(ellipsize("abcdef", 2, "..."), "..");
    }

    #[test]
    fn every_rung_above_is_explained_or_named_a_contradiction() {
        use crate::wire::{Capability, Cause, CauseKind, CauseSource, Failover, Preflight};
        let now: DateTime<Utc> = "2026-11-29T15:00:00Z".parse().expect("time");
        let away = |id: &str, mins: i64, from: &str| Failover {
            id: id.into(),
            at: now - TimeDelta::minutes(mins),
            from: from.into(),
            to: Some("codex".into()),
            cause: Cause {
                kind: CauseKind::RateLimited,
                status: Some(429),
                source: CauseSource::HubRouter,
                detail: None,
            },
        };
        let (a, b, c) = (
            away("1", 90, "opencode"),
            away("2", 20, "opencode"),
            away("3", 5, "opencode"),
        );
        let ok = Capability {
            binary: true,
            token: true,
            preflight: Preflight::Ok,
        };
        let caps = |agent: &str| match agent {
            "claude" => Some(Capability {
                binary: false,
                ..ok
            }),
            "cursor" => None,
            _ => Some(ok),
        };
        let list = ["opencode", "pi", "claude", "cursor", "codex"];
        // `b` twice (the log and the last failover): counted once.
        let why = held_off(now, &list, Some("codex"), caps, &[&a, &b, &c, &b], &[]);
        let text: Vec<(usize, &str, &str, bool)> = why
            .iter()
            .map(|r| (r.rank, r.agent.as_str(), r.text.as_str(), r.contradiction))
            .collect();
        assert_eq!(
            text,
            [
                (
                    0,
                    "opencode",
                    // Held off since the first of them (nothing says it ran
                    // opencode since), the newest 5m ago.
                    "rate_limited 429 (hub_router) since 13:30:00 (1h), last 5m ago, 2 in the last hour",
                    false
                ),
                (
                    1,
                    "pi",
                    "contradiction: can run pi, skipped with no recorded cause",
                    true
                ),
                (2, "claude", "missing binary, no failover recorded", false),
                (3, "cursor", "not reported, no failover recorded", false),
            ]
        );
        // On rank 0: nothing above. No route: every rung.
        assert!(held_off(now, &list, Some("opencode"), caps, &[], &[]).is_empty());
        assert_eq!(held_off(now, &list, None, caps, &[], &[]).len(), 5);

        // The quota-cap cycle: held off opencode at 13:30, back on it at
        // 14:40 (a recovery, not a failover), held off again at 14:50 and
        // 14:55. The hold-off began at 14:50, not 13:30.
        let back = crate::wire::RecoveryRecord {
            seq: 1,
            worker: "w".into(),
            host: "h".into(),
            at: now - TimeDelta::minutes(20),
            from: Some("codex".into()),
            to: "opencode".into(),
            held_off_s: 70 * 60,
        };
        let (d, e) = (away("4", 10, "opencode"), away("5", 5, "opencode"));
        let why = held_off(now, &list, Some("codex"), caps, &[&a, &d, &e], &[&back]);
        assert_eq!(
            why[0].text,
            "rate_limited 429 (hub_router) since 14:50:00 (10m), last 5m ago, 2 in the last hour"
        );
        // A recovery onto a rung above pi is standing above pi too: pi's
        // hold-off from 14:10 ended there, the one from 14:52 is new.
        let (p1, p2, p3) = (away("6", 50, "pi"), away("7", 8, "pi"), away("8", 3, "pi"));
        let why = held_off(now, &list, Some("codex"), caps, &[&p1, &p2, &p3], &[&back]);
        assert_eq!(
            why[1].text,
            "rate_limited 429 (hub_router) since 14:52:00 (8m), last 3m ago, 3 in the last hour"
        );
    }

    fn f(min: usize, want: usize, drop: u8) -> Fit {
        Fit { min, want, drop }
    }

    #[test]
    fn short_columns_get_their_content_and_the_rest_goes_to_the_cut_one() {
        // A 7-character id, a long detail: the id gets 7, the detail the rest.
        let w = fit_columns(&[f(6, 7, 0), f(4, 4, 1), f(12, 200, 2)], 40, 1);
        assert_eq!(w, vec![Some(7), Some(4), Some(27)]);
        // Everything fits: each column its content.
        let w = fit_columns(&[f(6, 7, 0), f(12, 20, 2)], 80, 1);
        assert_eq!(w, vec![Some(7), Some(20)]);
    }

    #[test]
    fn columns_are_dropped_only_when_the_minimums_do_not_fit() {
        let cols = [f(10, 30, 0), f(10, 30, 2), f(10, 30, 1)];
        assert_eq!(
            fit_columns(&cols, 32, 1),
            vec![Some(10), Some(10), Some(10)]
        );
        assert_eq!(fit_columns(&cols, 31, 1), vec![Some(15), None, Some(15)]);
        assert_eq!(fit_columns(&cols, 12, 1), vec![Some(12), None, None]);
        // A column shown whole gives way when that ends every cut.
        let cols = [f(8, 8, 0), f(17, 17, 2), f(20, 45, 0)];
        assert_eq!(fit_columns(&cols, 60, 1), vec![Some(8), None, Some(45)]);
        // Not when a cut would remain anyway.
        assert_eq!(fit_columns(&cols, 50, 1), vec![Some(8), Some(17), Some(23)]);
        // Never below one column, even when it does not fit.
        assert_eq!(
            fit_columns(&[f(10, 10, 1), f(10, 10, 2)], 5, 2),
            vec![Some(10), None]
        );
    }
}
