//! What the status line said this session, with when (`:messages`): a
//! bounded ring of the last [`KEPT`] messages, oldest first, so nothing
//! said is lost because it was brief. And the note a replaced hub leaves
//! in the header until a key acknowledges it.

use std::collections::VecDeque;

use chrono::{DateTime, Utc};

/// Messages kept; the oldest goes first.
pub const KEPT: usize = 1_000;

/// One status message and when it was said (the hub's time as the screen
/// knows it, the wall clock until a hub has said its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub at: DateTime<Utc>,
    pub text: String,
}

/// The last [`KEPT`] status messages, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Messages {
    ring: VecDeque<Said>,
    /// Messages said in all (more than are kept once past [`KEPT`]).
    total: u64,
}

impl Messages {
    /// Keep `text`, said at `at`; the oldest goes past [`KEPT`]. The same
    /// text said again at once (a key repeated) is kept once.
    pub fn push(&mut self, at: DateTime<Utc>, text: &str) {
        if self
            .ring
            .back()
            .is_some_and(|l| l.text == text && l.at == at)
        {
            return;
        }
        if self.ring.len() == KEPT {
            self.ring.pop_front();
        }
        self.ring.push_back(Said {
            at,
            text: text.to_string(),
        });
        self.total += 1;
    }

    pub fn len(&self) -> usize {
        self.ring.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    /// Messages said this session (kept or not).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Said> + ExactSizeIterator {
        self.ring.iter()
    }
}

/// Another hub answers where the last one did (another `instance`): said
/// in the header until a key acknowledges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnotherHub {
    /// When the screen saw it (the screen's clock, as [`Said::at`]).
    pub since: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_last_thousand_in_order() {
        let mut m = Messages::default();
        let t0 = DateTime::UNIX_EPOCH;
        for i in 0..1_500 {
            m.push(t0 + chrono::TimeDelta::seconds(i), &format!("m{i}"));
        }
        assert_eq!(m.len(), KEPT);
        assert_eq!(m.total(), 1_500);
        assert_eq!(m.iter().next().map(|s| s.text.as_str()), Some("m500"));
        assert_eq!(m.iter().last().map(|s| s.text.as_str()), Some("m1499"));
    }

    #[test]
    fn the_same_text_at_the_same_moment_is_kept_once() {
        let mut m = Messages::default();
        let t0 = DateTime::UNIX_EPOCH;
        m.push(t0, "refetching");
        m.push(t0, "refetching");
        m.push(t0 + chrono::TimeDelta::seconds(1), "refetching");
        assert_eq!(m.len(), 2);
    }
}
