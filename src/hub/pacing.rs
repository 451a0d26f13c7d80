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
