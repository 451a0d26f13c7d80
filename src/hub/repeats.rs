//! A problem that repeats (every batch, every heartbeat, every look at a
//! file) is said once in the log, then as a count once a minute while it
//! goes on, and once more when it ends: never a line per occurrence.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a problem that goes on is said again, with its count.
pub const EVERY: Duration = Duration::from_secs(60);

#[derive(Default)]
pub struct Repeats {
    seen: Mutex<HashMap<&'static str, Seen>>,
}

struct Seen {
    /// When it was last said.
    said: Instant,
    /// Times it happened since.
    since: u64,
}

/// What the caller should log for one occurrence.
#[derive(Debug, PartialEq, Eq)]
pub enum Say {
    /// The first time: say it.
    First,
    /// It goes on: say it with this many occurrences since it was last said.
    Again(u64),
    /// Counted; nothing to say now.
    Quiet,
}

impl Repeats {
    /// One occurrence of the problem `key`.
    pub fn note(&self, key: &'static str) -> Say {
        self.note_at(key, Instant::now())
    }

    fn note_at(&self, key: &'static str, now: Instant) -> Say {
        let Ok(mut seen) = self.seen.lock() else {
            return Say::First;
        };
        match seen.get_mut(key) {
            None => {
                seen.insert(
                    key,
                    Seen {
                        said: now,
                        since: 0,
                    },
                );
                Say::First
            }
            Some(s) => {
                s.since += 1;
                if now.saturating_duration_since(s.said) >= EVERY {
                    let n = s.since;
                    s.said = now;
                    s.since = 0;
                    Say::Again(n)
                } else {
                    Say::Quiet
                }
            }
        }
    }

    /// The problem `key` ended; `Some(n)`: it had happened `n` more times
    /// since it was last said (`None`: it was not going on).
    pub fn ended(&self, key: &'static str) -> Option<u64> {
        self.seen.lock().ok()?.remove(key).map(|s| s.since)
    }

    /// Log `message` at error level for one occurrence of `key`, as
    /// [`Repeats::note`] allows.
    pub fn error(&self, key: &'static str, message: &str) {
        match self.note(key) {
            Say::First => tracing::error!("{message}"),
            Say::Again(n) => {
                tracing::error!(
                    repeated = n,
                    "{message} (again {n} times in the last minute)"
                )
            }
            Say::Quiet => {}
        }
    }

    /// [`Repeats::error`] at warning level.
    pub fn warn(&self, key: &'static str, message: &str) {
        match self.note(key) {
            Say::First => tracing::warn!("{message}"),
            Say::Again(n) => {
                tracing::warn!(
                    repeated = n,
                    "{message} (again {n} times in the last minute)"
                )
            }
            Say::Quiet => {}
        }
    }

    /// Whether `key` is going on.
    pub fn going_on(&self, key: &'static str) -> bool {
        self.seen.lock().is_ok_and(|s| s.contains_key(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn said_once_then_counted_once_a_minute() {
        let r = Repeats::default();
        let t = Instant::now();
        assert_eq!(r.note_at("a", t), Say::First);
        for i in 1..=20 {
            assert_eq!(
                r.note_at("a", t + Duration::from_millis(50 * i)),
                Say::Quiet
            );
        }
        assert_eq!(r.note_at("b", t), Say::First, "another problem is its own");
        assert_eq!(r.note_at("a", t + EVERY), Say::Again(21));
        assert_eq!(
            r.note_at("a", t + EVERY + Duration::from_secs(1)),
            Say::Quiet
        );
        assert!(r.going_on("a"));
        assert_eq!(r.ended("a"), Some(1));
        assert!(!r.going_on("a"));
        assert_eq!(r.ended("a"), None);
        assert_eq!(
            r.note_at("a", t + EVERY * 2),
            Say::First,
            "said again once it recurs"
        );
    }
}
