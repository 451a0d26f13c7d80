//! Small text helpers for the panes and overlays: counts, lists, clock times; ages come
//! from the shared [`crate::text`].

use chrono::{DateTime, Utc};

pub use crate::text::{age, age_at};
use crate::tui::model::faillog::ByKind;
use crate::tui::model::verdict::Verdict;
use crate::wire::CauseKind;

/// `1234567` -> `1,234,567`: big fleets stay readable.
pub fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `opencode,claude`.
pub fn list<S: AsRef<str>>(agents: &[S]) -> String {
    let mut s = String::new();
    for (i, a) in agents.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(a.as_ref());
    }
    s
}

/// A recovery's `held_off_s` as an age, `14m` (an absurd figure saturates).
pub fn held(s: u64) -> String {
    crate::text::age(
        i64::try_from(s)
            .ok()
            .and_then(chrono::TimeDelta::try_seconds)
            .unwrap_or(chrono::TimeDelta::MAX),
    )
}

/// A time left, `s` seconds, rounded up to what it shows: a 10m bake
/// begun a few seconds ago has `10m left`, not `9m` (an age rounds down);
/// `1h 30m` past an hour, `1d 4h` past a day; seconds under a minute.
pub fn left(s: u64) -> String {
    if s < 60 {
        return format!("{s}s");
    }
    let m = s.div_ceil(60);
    match m {
        ..60 => format!("{m}m"),
        60..1440 if m % 60 == 0 => format!("{}h", m / 60),
        60..1440 => format!("{}h {}m", m / 60, m % 60),
        _ => match s.div_ceil(3600) {
            h if h % 24 == 0 => format!("{}d", h / 24),
            h => format!("{}d {}h", h / 24, h % 24),
        },
    }
}

/// Clock time `15:04:05` for a UTC instant.
pub fn clock(t: DateTime<Utc>) -> String {
    t.format("%H:%M:%S").to_string()
}

/// Date and time `2026-11-29 15:04Z`.
pub fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%MZ").to_string()
}

/// Date and time to the second, `2026-11-29 15:04:05Z`, as the Failovers
/// list shows a failover's time.
pub fn stamp_s(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%SZ").to_string()
}

/// How a history entry came about, as a sentence says it: `written by
/// alice via macfleet/0.1.0 (tui)`, or `changed by hand on disk` for what
/// the hub records as `(changed on disk)` (its wire word in
/// docs/hub-api.md, kept there and in the History's BY column).
/// Terminal-safe.
pub fn written_by(h: &crate::wire::HistoryEntry) -> String {
    if h.by == "(changed on disk)" {
        "changed by hand on disk".to_string()
    } else {
        format!(
            "written by {}",
            crate::tui::ui::hub(&crate::tui::model::config::who(h))
        )
    }
}

/// Who made a revision, as History's BY column and its detail say it:
/// the writer's name, or `changed by hand on disk` for what the hub
/// records as `(changed on disk)` (its wire word, docs/hub-api.md).
/// Terminal-safe.
pub fn by_word(by: &str) -> String {
    if by == crate::rollout::BY_HAND_EDIT {
        "changed by hand on disk".to_string()
    } else {
        crate::tui::ui::hub(by).into_owned()
    }
}

/// The status word: `OK`, `DEGRADED 2`, `NO ROUTE 1,024`, `HUB DOWN`, as
/// the domain words it ([`crate::verdict`]).
pub fn verdict(v: Verdict) -> String {
    v.to_string()
}

/// `8: rate_limited 5 · auth 3`: failovers by cause, most first.
pub fn away(sep: &str, k: &ByKind) -> String {
    let total: u32 = k.iter().sum();
    if total == 0 {
        return "0".into();
    }
    let mut parts: Vec<(u32, CauseKind)> = CauseKind::ALL
        .iter()
        .enumerate()
        .filter(|(i, _)| k[*i] > 0)
        .map(|(i, c)| (k[i], *c))
        .collect();
    parts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let sep = format!(" {sep} ");
    let detail: Vec<String> = parts.iter().map(|(n, c)| format!("{c} {n}")).collect();
    format!("{total}: {}", detail.join(&sep))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_left_rounds_up_to_what_it_shows() {
        let cases = [
            (0, "0s"),
            (59, "59s"),
            (60, "1m"),
            (61, "2m"),
            (597, "10m"),
            (3599, "1h"),
            (3600, "1h"),
            (3601, "1h 1m"),
            (5370, "1h 30m"),
            (86_399, "1d"),
            (86_401, "1d 1h"),
        ];
        for (s, want) in cases {
            assert_eq!(left(s), want, "{s} s");
        }
    }

    #[test]
    fn counts() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(100_000), "100,000");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
