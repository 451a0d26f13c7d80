//! Pacing (docs/hub-api.md, *Pacing*): the interval the hub tells each
//! worker grows with the fleet so the heartbeats reaching it stay within
//! `--max-heartbeats-per-second`, as Nomad scales its clients' heartbeat
//! TTL. The heartbeat answer stays the bytes made once per revision: while
//! the fleet is small it is sent as made, and when the hub paces, its last
//! number (`heartbeat_interval_s`, the last field) is patched per answer.

use bytes::{BufMut, Bytes, BytesMut};
use rand::Rng;

/// The default `--max-heartbeats-per-second`: about a third of a 2-core
/// hub's measured ingest ceiling (docs/performance.md).
pub const DEFAULT_MAX_HEARTBEATS_PER_SECOND: u64 = 20_000;

/// Heartbeats a worker may send at once, past its pace, before the hub
/// refuses them (`429 heartbeat_too_fast`): the demo's back-fill sends at
/// most 20 a worker at its start.
pub const BURST: u64 = 20;

/// The pace the hub enforces on one worker told `told_s`: twice the rate
/// it was told, after a burst of [`BURST`] (a generic cell rate
/// algorithm: one number a worker, the time its next heartbeat is due).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    /// Milliseconds between heartbeats at twice the told rate (0: not
    /// enforced).
    every_ms: u64,
}

impl Pace {
    pub fn of(told_s: u64) -> Pace {
        Pace {
            every_ms: told_s.saturating_mul(500),
        }
    }

    /// Whether a heartbeat at `now_ms` keeps within the pace, given the
    /// worker's `due_ms` (0 for a worker not heard yet); when it does,
    /// `due_ms` moves on. `Err` is how long until one would.
    pub fn admit(self, due_ms: &mut u64, now_ms: u64) -> Result<(), std::time::Duration> {
        if self.every_ms == 0 {
            return Ok(());
        }
        let due = (*due_ms).max(now_ms);
        let tolerance = BURST.saturating_mul(self.every_ms);
        let ahead = due - now_ms;
        if ahead > tolerance {
            return Err(std::time::Duration::from_millis(ahead - tolerance));
        }
        *due_ms = due.saturating_add(self.every_ms);
        Ok(())
    }
}

/// `Retry-After` for a wait: whole seconds, at least 1.
pub fn retry_after_s(wait: std::time::Duration) -> u64 {
    wait.as_millis().div_ceil(1000).max(1) as u64
}

/// The interval the hub tells now, without jitter: the configured `base`
/// while `workers / max_per_s` is below it, that (rounded up) when not.
pub fn nominal(base: u64, max_per_s: u64, workers: usize) -> u64 {
    let paced = (workers as u64).div_ceil(max_per_s.max(1));
    base.max(paced)
}

/// The interval to tell in one answer: `nominal`, and when the hub paces
/// (it is above `base`), up to 10% more in whole seconds, chosen per
/// answer, so a fleet that started at once spreads out.
pub fn told(base: u64, nominal: u64) -> u64 {
    if nominal <= base {
        return nominal;
    }
    nominal + rand::rng().random_range(0..=nominal / 10)
}

/// The heartbeat answer telling `interval`: `projection` itself when it
/// already says so (`base`), else its bytes with the last number replaced.
pub fn answer(projection: &Bytes, base: u64, interval: u64) -> Bytes {
    if interval == base {
        return projection.clone();
    }
    // `{...,"heartbeat_interval_s":10}`: the number runs from the last
    // colon to the closing brace.
    let Some(colon) = projection.iter().rposition(|b| *b == b':') else {
        return projection.clone();
    };
    let mut out = BytesMut::with_capacity(colon + 24);
    out.put_slice(&projection[..=colon]);
    out.put_slice(interval.to_string().as_bytes());
    out.put_u8(b'}');
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Projection;

    #[test]
    fn the_interval_grows_with_the_fleet_past_the_configured_one() {
        assert_eq!(nominal(10, 20_000, 0), 10);
        assert_eq!(nominal(10, 20_000, 200_000), 10);
        assert_eq!(nominal(10, 20_000, 200_001), 11);
        assert_eq!(nominal(10, 20_000, 1_000_000), 50);
        assert_eq!(nominal(10, 500, 100_000), 200);
        for _ in 0..200 {
            assert_eq!(told(10, 10), 10, "no jitter while not pacing");
            let t = told(10, 50);
            assert!((50..=55).contains(&t), "{t}");
        }
    }

    #[test]
    fn a_worker_keeps_a_burst_then_twice_its_told_rate() {
        let pace = Pace::of(10);
        let mut due = 0;
        let t0 = 1_000_000;
        for i in 0..=BURST {
            assert_eq!(pace.admit(&mut due, t0), Ok(()), "burst heartbeat {i}");
        }
        let wait = pace.admit(&mut due, t0).expect_err("past the burst");
        assert_eq!(wait, std::time::Duration::from_millis(5_000));
        assert_eq!(retry_after_s(wait), 5);
        // Refused heartbeats are not counted: 5 s on, one more is taken.
        assert!(pace.admit(&mut due, t0 + 4_999).is_err());
        assert_eq!(pace.admit(&mut due, t0 + 5_000), Ok(()));
        // A worker at twice its told rate (one every 5 s) is always taken.
        let mut due = 0;
        for k in 0..1_000 {
            assert_eq!(pace.admit(&mut due, t0 + k * 5_000), Ok(()), "{k}");
        }
        // Not enforced when nothing was told.
        let mut due = 0;
        for _ in 0..100 {
            assert_eq!(Pace::of(0).admit(&mut due, t0), Ok(()));
        }
        assert_eq!(retry_after_s(std::time::Duration::from_millis(1)), 1);
    }

    #[test]
    fn a_paced_answer_is_the_projection_with_its_interval_patched() {
        let p = Projection {
            config_revision: "7c3e91a0d4f2".into(),
            agents: vec!["opencode".into(), "claude:x".into()],
            heartbeat_interval_s: 10,
        };
        let bytes = Bytes::from(serde_json::to_vec(&p).expect("json"));
        assert_eq!(answer(&bytes, 10, 10).as_ptr(), bytes.as_ptr(), "shared");
        for n in [11, 55, 12_345_678] {
            let got: Projection = serde_json::from_slice(&answer(&bytes, 10, n)).expect("json");
            assert_eq!(
                got,
                Projection {
                    heartbeat_interval_s: n,
                    ..p.clone()
                }
            );
        }
    }
}
