//! Small text helpers shared by the views: ages, counts, lists.

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

/// Age of `then` at `now`.
pub fn age_at(now: DateTime<Utc>, then: DateTime<Utc>) -> String {
    age(now - then)
}

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

/// Clock time `15:04:05` for a UTC instant.
pub fn clock(t: DateTime<Utc>) -> String {
    t.format("%H:%M:%S").to_string()
}

/// Date and time `2026-11-29 15:04Z`.
pub fn stamp(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%MZ").to_string()
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
    fn counts() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(100_000), "100,000");
        assert_eq!(count(1_234_567), "1,234,567");
    }
}
