//! A problem that repeats (every batch, every heartbeat, every look at a
//! file) is said once in the log, then as a count once a minute while it
//! goes on, and once more when it ends: never a line per occurrence. A
//! problem that comes and goes (a flapping disk, a file removed and put
//! back) is one problem for a minute after it was last said: its returns
//! are counted with its occurrences, and its end is said once, not once
//! a flip.

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
    /// What was said (its message's hash): another message under the same
    /// key is another problem, said at once.
    what: u64,
    /// When it was last said.
    said: Instant,
    /// Times it happened since.
    since: u64,
    /// When it ended (and it has not happened since).
    over: Option<Instant>,
    /// Its end was said since it was last said.
    end_said: bool,
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
    /// One occurrence of the problem `key`, whatever its message says.
    pub fn note(&self, key: &'static str) -> Say {
        self.note_at(key, 0, Instant::now())
    }

    fn note_at(&self, key: &'static str, what: u64, now: Instant) -> Say {
        let Ok(mut seen) = self.seen.lock() else {
            return Say::First;
        };
        let fresh = Seen {
            what,
            said: now,
            since: 0,
            over: None,
            end_said: false,
        };
        match seen.get_mut(key) {
            // Over for a minute or longer: new again.
            // Over for a minute or longer, or another problem under the
            // same key (the config a directory after it was unreadable):
            // new again, its count its own.
            Some(s)
                if s.what != what
                    || s.over
                        .is_some_and(|t| now.saturating_duration_since(t) >= EVERY) =>
            {
                *s = fresh;
                Say::First
            }
            None => {
                seen.insert(key, fresh);
                Say::First
            }
            Some(s) => {
                s.since += 1;
                s.over = None;
                if now.saturating_duration_since(s.said) >= EVERY {
                    let n = s.since;
                    s.said = now;
                    s.since = 0;
                    s.end_said = false;
                    Say::Again(n)
                } else {
                    Say::Quiet
                }
            }
        }
    }

    /// The problem `key` ended; `Some(n)`: say so (it had happened `n`
    /// more times since it was last said); `None`: it was not going on, or
    /// its end was already said since it was (a flip of a problem that
    /// comes and goes, counted quietly).
    pub fn ended(&self, key: &'static str) -> Option<u64> {
        self.ended_at(key, Instant::now())
    }

    fn ended_at(&self, key: &'static str, now: Instant) -> Option<u64> {
        let mut seen = self.seen.lock().ok()?;
        let s = seen.get_mut(key)?;
        if let Some(t) = s.over {
            if now.saturating_duration_since(t) >= EVERY {
                seen.remove(key);
            }
            return None;
        }
        s.over = Some(now);
        if s.end_said {
            return None;
        }
        s.end_said = true;
        Some(s.since)
    }

    /// Log `message` at error level for one occurrence of `key`, as
    /// [`Repeats::note`] allows.
    pub fn error(&self, key: &'static str, message: &str) {
        error_as(self.note(key), message);
    }

    /// [`Repeats::error`] for a key whose problems `which` tells apart (a
    /// part of the message that names the problem, not what changes with
    /// every occurrence), as [`Repeats::warn_each`] does by the message.
    pub fn error_each(&self, key: &'static str, which: &str, message: &str) {
        error_as(self.note_at(key, what(which), Instant::now()), message);
    }

    /// [`Repeats::error`] at warning level.
    pub fn warn(&self, key: &'static str, message: &str) {
        warn_as(self.note(key), message);
    }

    /// [`Repeats::warn`] for a key whose message names which problem it
    /// is (the config unreadable, or a directory): another message is
    /// another problem, said at once with a count of its own.
    pub fn warn_each(&self, key: &'static str, message: &str) {
        let say = self.note_at(key, what(message), Instant::now());
        warn_as(say, message);
    }

    /// Whether `key` is going on.
    pub fn going_on(&self, key: &'static str) -> bool {
        self.seen
            .lock()
            .is_ok_and(|s| s.get(key).is_some_and(|s| s.over.is_none()))
    }
}

/// Log `message` at error level as `say` tells.
fn error_as(say: Say, message: &str) {
    match say {
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

/// Log `message` at warning level as `say` tells.
fn warn_as(say: Say, message: &str) {
    match say {
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

/// A message's hash: which problem it says.
fn what(message: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    message.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message every test problem says (one problem a key).
    const M: u64 = 7;

    #[test]
    fn said_once_then_counted_once_a_minute() {
        let r = Repeats::default();
        let t = Instant::now();
        assert_eq!(r.note_at("a", M, t), Say::First);
        for i in 1..=20 {
            assert_eq!(
                r.note_at("a", M, t + Duration::from_millis(50 * i)),
                Say::Quiet
            );
        }
        assert_eq!(
            r.note_at("b", M, t),
            Say::First,
            "another problem is its own"
        );
        assert_eq!(r.note_at("a", M, t + EVERY), Say::Again(21));
        assert_eq!(
            r.note_at("a", M, t + EVERY + Duration::from_secs(1)),
            Say::Quiet
        );
        assert!(r.going_on("a"));
        let end = t + EVERY + Duration::from_secs(2);
        assert_eq!(r.ended_at("a", end), Some(1));
        assert!(!r.going_on("a"));
        assert_eq!(r.ended_at("a", end), None);
        assert_eq!(
            r.note_at("a", M, t + EVERY * 3),
            Say::First,
            "said again once it recurs, a minute on"
        );
    }

    #[test]
    fn a_problem_that_comes_and_goes_is_said_once_a_minute_not_once_a_flip() {
        let r = Repeats::default();
        let t = Instant::now();
        let mut said = Vec::new();
        // On for a second, off for a second, for three minutes.
        for s in 0..180u64 {
            let now = t + Duration::from_secs(s);
            if s % 2 == 0 {
                match r.note_at("a", M, now) {
                    Say::Quiet => {}
                    other => said.push(format!("{s}: {other:?}")),
                }
            } else if let Some(n) = r.ended_at("a", now) {
                said.push(format!("{s}: ended after {n}"));
            }
        }
        assert_eq!(
            said,
            [
                "0: First",
                "1: ended after 0",
                "60: Again(30)",
                "61: ended after 0",
                "120: Again(30)",
                "121: ended after 0"
            ],
            "{said:?}"
        );
    }

    /// The 13:51 audit: the config unreadable, mended, then a directory
    /// within the minute: the second problem is said at once, with no
    /// count of the first's; its end is said too.
    #[test]
    fn another_problem_under_the_same_key_is_said_at_once() {
        let r = Repeats::default();
        let t = Instant::now();
        let s = |n| t + Duration::from_secs(n);
        assert_eq!(r.note_at("config", 1, s(0)), Say::First);
        for n in 1..3 {
            assert_eq!(r.note_at("config", 1, s(n)), Say::Quiet);
        }
        assert_eq!(r.ended_at("config", s(3)), Some(2));
        assert_eq!(r.note_at("config", 2, s(5)), Say::First, "a new problem");
        assert_eq!(r.note_at("config", 2, s(6)), Say::Quiet);
        assert_eq!(r.ended_at("config", s(8)), Some(1), "its end is said");
        // The same problem back within the minute stays counted quietly.
        assert_eq!(r.note_at("config", 2, s(9)), Say::Quiet);
    }
}
