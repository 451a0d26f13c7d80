//! The cohort: which workers get the candidate list first.
//!
//! A worker is in the cohort iff `hash(salt, worker id) < threshold`. The
//! hash is the first 8 bytes (big-endian) of SHA-256 over
//! `"macfleet-cohort-v1\0" ‖ len(salt) as u64 big-endian ‖ salt ‖ worker id`.
//! SHA-256 is chosen because it is fixed by a standard: the same salt and id
//! give the same value in every process, on every Rust version and on every
//! machine (std's `DefaultHasher` is keyed at random per process, foldhash is
//! seeded per process, and neither promises its output across versions). So
//! a restarted hub holds the same cohort, and anyone can recompute it (the
//! known-answer test below was computed with Python's `hashlib`). The salt's
//! length comes before it so that `("ab", "c")` and `("a", "bc")` differ.
//! The hash is ~100 ns a worker, far below a heartbeat's cost.
//!
//! The threshold is fixed when the rollout starts and kept with it, so a
//! worker's membership never changes while the rollout lives: a worker who
//! joins falls in or out by the same rule, and none already there is
//! displaced.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use thiserror::Error;

/// Tells this hash apart from any other SHA-256 use; bump the version only
/// with a new rule (a running rollout keeps its own).
const DOMAIN: &[u8] = b"macfleet-cohort-v1\0";

/// The smallest and largest share of the live workers a cohort may hold,
/// in percent: the same bound for a share and a count. Past half, the rest
/// would be smaller than the cohort, and the guard would compare the
/// cohort with a baseline less sure than itself.
pub const MIN_SHARE_PERCENT: u8 = 1;
pub const MAX_SHARE_PERCENT: u8 = 50;

/// The stable position of a worker in `[0, 2^64)` for this salt.
pub fn position(salt: &str, worker_id: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(DOMAIN);
    h.update((salt.len() as u64).to_be_bytes());
    h.update(salt.as_bytes());
    h.update(worker_id.as_bytes());
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// A cohort: the salt and the threshold below which a worker is in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cohort {
    pub salt: String,
    pub threshold: u64,
}

/// Why a cohort cannot be drawn.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CohortError {
    #[error(
        "a cohort's share must be from {MIN_SHARE_PERCENT}% to {MAX_SHARE_PERCENT}% (got {0}%)"
    )]
    Share(u8),
    #[error("a cohort of workers needs at least 1 worker (got 0)")]
    ZeroCount,
    #[error("{}", too_large(*asked, *live, *max))]
    TooLarge { asked: u64, live: u64, max: u64 },
}

/// `1 worker`, `2 workers`.
pub fn workers(n: u64) -> String {
    format!("{n} worker{}", if n == 1 { "" } else { "s" })
}

fn too_large(asked: u64, live: u64, max: u64) -> String {
    let live_workers = format!("{live} live worker{}", if live == 1 { "" } else { "s" });
    let most = match max {
        0 => {
            "none can be: no rest as large as a cohort would be left to compare it with".to_string()
        }
        m => format!(
            "at most {m}: the rest must be at least as large as the cohort to compare it with"
        ),
    };
    format!(
        "a cohort of {} is more than half of the {live_workers} ({most})",
        workers(asked)
    )
}

impl Cohort {
    /// A share of `percent` of any fleet: the threshold is
    /// `floor(2^64 × percent / 100)`.
    pub fn share(salt: impl Into<String>, percent: u8) -> Result<Cohort, CohortError> {
        if !(MIN_SHARE_PERCENT..=MAX_SHARE_PERCENT).contains(&percent) {
            return Err(CohortError::Share(percent));
        }
        let threshold = ((1u128 << 64) * u128::from(percent) / 100) as u64;
        Ok(Cohort {
            salt: salt.into(),
            threshold,
        })
    }

    /// The share that holds exactly `n` of the `live` workers now (ids
    /// given twice count once), kept as a threshold: the point halfway
    /// between the n-th position and the next, so the share is about
    /// n/live and workers who join later fall in at that rate.
    pub fn count<'a>(
        salt: impl Into<String>,
        n: u64,
        live: impl IntoIterator<Item = &'a str>,
    ) -> Result<Cohort, CohortError> {
        let salt = salt.into();
        let ids: BTreeSet<&str> = live.into_iter().collect();
        let mut positions: Vec<u64> = ids.iter().map(|id| position(&salt, id)).collect();
        positions.sort_unstable();
        let live = positions.len() as u64;
        if n == 0 {
            return Err(CohortError::ZeroCount);
        }
        let max = live / 2;
        if n > max {
            return Err(CohortError::TooLarge {
                asked: n,
                live,
                max,
            });
        }
        // n ≤ live / 2 < live, so both indices exist.
        let last_in = positions[(n - 1) as usize];
        let first_out = positions[n as usize];
        // last_in < first_out: distinct ids collide in 64 bits with
        // odds ~live²/2^65; if they ever did, the later is let in too.
        let threshold = last_in.saturating_add((first_out - last_in).div_ceil(2).max(1));
        Ok(Cohort { salt, threshold })
    }

    /// Whether this worker is in the cohort.
    pub fn contains(&self, worker_id: &str) -> bool {
        position(&self.salt, worker_id) < self.threshold
    }

    /// The share of all workers the threshold holds, 0.0–1.0.
    pub fn fraction(&self) -> f64 {
        self.threshold as f64 / 2f64.powi(64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ids(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}-{i}")).collect()
    }

    /// Computed with Python's hashlib (see the module doc for the
    /// layout), so the rule is pinned independently of this code.
    #[test]
    fn known_answers() {
        assert_eq!(position("salt-a", "worker-1"), 0xdb09a7181b7cb29e);
        assert_eq!(position("salt-a", "worker-2"), 0xc6e94ec866798413);
        assert_eq!(position("", "w"), 0x4860e04f927a3ef9);
        assert_eq!(position("ab", "c"), 0xb2477eaf4a06ee2e);
        assert_eq!(position("a", "bc"), 0x8f83fbe729db7171);
    }

    #[test]
    fn same_salt_same_cohort_after_a_restart() {
        let before = Cohort::share("salt-a", 10).unwrap();
        // What the hub keeps in its database, read back.
        let json = serde_json::to_string(&before).unwrap();
        let after: Cohort = serde_json::from_str(&json).unwrap();
        let all = ids("w", 2_000);
        let a: Vec<bool> = all.iter().map(|id| before.contains(id)).collect();
        let b: Vec<bool> = all.iter().map(|id| after.contains(id)).collect();
        assert_eq!(a, b);
        let other = Cohort::share("salt-b", 10).unwrap();
        let c: Vec<bool> = all.iter().map(|id| other.contains(id)).collect();
        assert_ne!(a, c, "another salt draws another cohort");
    }

    #[test]
    fn a_share_holds_its_share_of_100000_ids() {
        let all = ids("worker", 100_000);
        for percent in [1u8, 10, 25, 50] {
            let c = Cohort::share("salt-a", percent).unwrap();
            let n = all.iter().filter(|id| c.contains(id)).count() as f64;
            let expected = 100_000.0 * f64::from(percent) / 100.0;
            // Binomial sd at 50% is ~158; 0.4 points is 400 workers.
            assert!(
                (n - expected).abs() <= 400.0,
                "{percent}%: {n} of 100000, expected ~{expected}"
            );
        }
    }

    #[test]
    fn share_bounds() {
        assert_eq!(Cohort::share("s", 0), Err(CohortError::Share(0)));
        assert_eq!(Cohort::share("s", 51), Err(CohortError::Share(51)));
        assert!(Cohort::share("s", 1).is_ok());
        assert_eq!(
            Cohort::share("s", 50).unwrap().threshold,
            1u64 << 63,
            "50% is exactly half the hash space"
        );
    }

    #[test]
    fn count_holds_exactly_n() {
        let live = ids("w", 40);
        for n in 1..=20u64 {
            let c = Cohort::count("salt-a", n, live.iter().map(String::as_str)).unwrap();
            let held = live.iter().filter(|id| c.contains(id)).count() as u64;
            assert_eq!(held, n);
        }
    }

    #[test]
    fn count_bounds() {
        let live = ids("w", 9);
        let live = || live.iter().map(String::as_str);
        assert_eq!(Cohort::count("s", 0, live()), Err(CohortError::ZeroCount));
        assert!(Cohort::count("s", 4, live()).is_ok());
        let err = Cohort::count("s", 5, live()).unwrap_err();
        assert_eq!(
            err,
            CohortError::TooLarge {
                asked: 5,
                live: 9,
                max: 4
            }
        );
        assert_eq!(
            err.to_string(),
            "a cohort of 5 workers is more than half of the 9 live workers (at most 4: the rest \
             must be at least as large as the cohort to compare it with)"
        );
        // One of each, in the singular (fresh eyes R6: "a cohort of 1 workers").
        let one = Cohort::count("s", 1, ["a"]).unwrap_err().to_string();
        assert_eq!(
            one,
            "a cohort of 1 worker is more than half of the 1 live worker (none can be: no rest as \
             large as a cohort would be left to compare it with)"
        );
        assert!(Cohort::count("s", 1, std::iter::empty()).is_err());
        // The same id twice is one worker.
        let twice = ["a", "a", "b", "b"];
        assert!(Cohort::count("s", 1, twice).is_ok());
        assert!(Cohort::count("s", 2, twice).is_err());
    }

    #[test]
    fn a_count_keeps_its_share_as_the_fleet_grows() {
        let live = ids("w", 1_000);
        let c = Cohort::count("salt-a", 100, live.iter().map(String::as_str)).unwrap();
        assert!((c.fraction() - 0.1).abs() < 0.03, "{}", c.fraction());
        let joiners = ids("late", 100_000);
        let n = joiners.iter().filter(|id| c.contains(id)).count() as f64;
        let expected = 100_000.0 * c.fraction();
        assert!((n - expected).abs() < 400.0, "{n} vs {expected}");
    }

    proptest! {
        /// Whoever joins, everyone in the cohort stays in and everyone out
        /// stays out: membership is a function of the id alone.
        #[test]
        fn joining_never_moves_another(
            first in proptest::collection::btree_set("[a-z0-9-]{1,12}", 2..60),
            later in proptest::collection::vec("[a-z0-9-]{1,12}", 0..60),
            n_seed in 0u64..1_000,
        ) {
            let first: Vec<&str> = first.iter().map(String::as_str).collect();
            let n = 1 + n_seed % (first.len() as u64 / 2);
            let c = Cohort::count("salt-p", n, first.iter().copied()).unwrap();
            let before: Vec<bool> = first.iter().map(|id| c.contains(id)).collect();
            prop_assert_eq!(before.iter().filter(|b| **b).count() as u64, n);
            // The hub reads the cohort back from its store; joiners come.
            let json = serde_json::to_string(&c).unwrap();
            let kept: Cohort = serde_json::from_str(&json).unwrap();
            let after: Vec<bool> = first.iter().map(|id| kept.contains(id)).collect();
            prop_assert_eq!(before, after);
            for id in &later {
                prop_assert_eq!(kept.contains(id), position("salt-p", id) < c.threshold);
            }
        }
    }
}
