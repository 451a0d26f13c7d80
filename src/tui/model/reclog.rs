//! The recovery log as the TUI holds it: a worker back on a higher rung of
//! the same list revision (`GET /v1/recoveries`, the `recovery` event), the
//! newest by seq, bounded and compact as the failover log is
//! ([`super::faillog`]), the same [`Log`]: strings shared through one
//! interning table, records in a deque ordered by seq.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::compact::Table;
use super::query::{Searchable, starts_ci};
use super::seqlog::{Held, Log};
use crate::wire::RecoveryRecord;

/// Recoveries kept; older ones fall off (the hub keeps more).
pub const MAX_RECOVERIES: usize = 50_000;

/// One held recovery, compact.
#[derive(Debug, Clone)]
pub struct RecRec {
    pub seq: u64,
    pub worker: Arc<str>,
    pub host: Arc<str>,
    /// The hub's clock when the heartbeat that showed the move arrived.
    pub at: DateTime<Utc>,
    /// The rung it left; `None`: it had no route.
    pub from: Option<Arc<str>>,
    pub to: Arc<str>,
    pub held_off_s: u64,
    /// What a plain filter word is looked for in, lower-cased.
    hay: Arc<str>,
}

impl RecRec {
    /// The record as the hub sent it (`v`).
    pub fn record(&self) -> RecoveryRecord {
        RecoveryRecord {
            seq: self.seq,
            worker: self.worker.to_string(),
            host: self.host.to_string(),
            at: self.at,
            from: self.from.as_deref().map(str::to_string),
            to: self.to.to_string(),
            held_off_s: self.held_off_s,
        }
    }

    /// The rung it left, as the row says it.
    pub fn from_text(&self) -> &str {
        self.from.as_deref().unwrap_or("no route")
    }
}

impl Searchable for RecRec {
    fn shows(&self, needle: &str) -> bool {
        self.hay.contains(needle)
    }

    /// The Failovers view's fields (`super::faillog::FIELDS`): a recovery
    /// has no cause, source or status; its `dir` is `up`.
    fn field_starts(&self, field: &str, value: &str) -> bool {
        match field {
            "worker" => starts_ci(&self.worker, value),
            "host" => starts_ci(&self.host, value),
            "from" => starts_ci(self.from_text(), value),
            "to" => starts_ci(&self.to, value),
            "agent" => starts_ci(self.from_text(), value) || starts_ci(&self.to, value),
            "dir" => starts_ci("up", value),
            _ => false,
        }
    }
}

/// The recovery log: [`Log`] of [`RecRec`].
pub type RecLog = Log<RecRec>;

impl Held for RecRec {
    type Wire = RecoveryRecord;
    type Tally = ();
    const MAX: usize = MAX_RECOVERIES;

    fn wire_seq(w: &RecoveryRecord) -> u64 {
        w.seq
    }

    fn seq(&self) -> u64 {
        self.seq
    }

    fn worker(&self) -> &str {
        &self.worker
    }

    fn hold(rec: RecoveryRecord, st: &mut Table<str>) -> RecRec {
        let mut hay = format!(
            "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}recovery",
            rec.worker,
            rec.host,
            rec.from.as_deref().unwrap_or("no route"),
            rec.to
        );
        hay.make_ascii_lowercase();
        RecRec {
            seq: rec.seq,
            worker: st.sym(&rec.worker),
            host: st.sym(&rec.host),
            at: rec.at,
            from: rec.from.as_deref().map(|f| st.sym(f)),
            to: st.sym(&rec.to),
            held_off_s: rec.held_off_s,
            hay: st.sym(&hay),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture;

    fn rec(seq: u64) -> RecoveryRecord {
        RecoveryRecord {
            seq,
            worker: format!("w-{:03}", seq % 7),
            host: "gpu-node-1".into(),
            at: fixture::t0() + chrono::TimeDelta::seconds(seq as i64),
            from: (seq % 3 != 0).then(|| "pi".to_string()),
            to: "opencode".into(),
            held_off_s: 840,
        }
    }

    #[test]
    fn records_stay_in_seq_order_deduplicated_and_give_back_what_the_hub_sent() {
        let mut log = RecLog::default();
        for s in [10, 12, 11, 3, 20, 15, 1] {
            assert!(log.insert(rec(s)), "{s} is new");
        }
        let seqs: Vec<u64> = log.records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, [1, 3, 10, 11, 12, 15, 20]);
        assert!(!log.insert(rec(11)), "a seq already held");
        assert_eq!(log.next, 20);
        for s in seqs {
            assert_eq!(log.get(s).map(|r| r.record()), Some(rec(s)));
        }
        assert_eq!(log.latest_of("w-003").map(|r| r.seq), Some(10));
        let a = log.get(1).expect("held");
        let b = log.get(15).expect("held");
        assert!(Arc::ptr_eq(&a.worker, &b.worker), "same worker, one string");
    }

    #[test]
    fn when_full_the_oldest_go_and_older_ones_are_refused() {
        let mut log = RecLog::default();
        for s in 1..=MAX_RECOVERIES as u64 + 5 {
            log.insert(rec(s));
        }
        assert_eq!(log.len(), MAX_RECOVERIES);
        assert_eq!(log.records.front().map(|r| r.seq), Some(6));
        assert!(!log.insert(rec(2)), "older than all held, and full");
        assert!(log.records.capacity() <= MAX_RECOVERIES + 1);
    }

    #[test]
    fn the_filter_sees_a_recovery_as_up() {
        let mut log = RecLog::default();
        log.insert(rec(1));
        let r = log.get(1).expect("held");
        assert!(r.field_starts("dir", "up"));
        assert!(!r.field_starts("dir", "down"));
        assert!(r.field_starts("agent", "open") && r.field_starts("from", "pi"));
        assert!(!r.field_starts("cause", "rate"));
        assert!(r.shows("recovery") && r.shows("gpu-node"));
    }
}
