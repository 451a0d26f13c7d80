//! The recovery log: workers back on a higher rung of the same list
//! revision (`fleet::Recovery`, found by `Fleet::record_moves_at`), paged like
//! the failover log (`GET /v1/recoveries`). Kept in memory, bounded like
//! the failover log (`db::Bounds::failovers`); its seqs start at the hub's
//! start time in milliseconds × 1,000, so a `since` from an earlier run
//! reads as pruned (`oldest`) and never as a wrong page.

use std::collections::VecDeque;
use std::sync::Mutex;

use std::sync::Arc;

use super::Hub;
use super::events::Payload;
use super::fleet::Recovery;
use crate::wire::{RecoveriesPage, RecoveryRecord};

impl Hub {
    /// Log a recovery, count it and publish it (`recovery` event). Called
    /// under the fleet lock, right after the heartbeat that showed it.
    pub(crate) fn record_recovery(&self, r: Recovery) {
        let rec = self.recoveries.record(r);
        self.metrics.recovery(&rec);
        self.events.publish(Payload::Recovery(Arc::new(rec)));
    }
}

/// What a recovery query asks for (as `db::FailoverFilter`, without kind).
#[derive(Debug, Clone, Default)]
pub struct RecoveryFilter {
    pub since: u64,
    pub limit: u32,
    pub worker: Option<String>,
    /// `from` or `to` is this agent.
    pub agent: Option<String>,
}

struct Log {
    next: u64,
    records: VecDeque<RecoveryRecord>,
}

pub struct Recoveries {
    log: Mutex<Log>,
    capacity: usize,
}

impl Recoveries {
    pub fn new(capacity: u64) -> Recoveries {
        let start = (chrono::Utc::now().timestamp_millis().max(0) as u64).saturating_mul(1000);
        Recoveries {
            log: Mutex::new(Log {
                next: start + 1,
                records: VecDeque::new(),
            }),
            capacity: usize::try_from(capacity.max(1)).unwrap_or(usize::MAX),
        }
    }

    /// Give `r` the next seq and keep it (dropping the oldest past the
    /// bound); returns the record as logged.
    pub fn record(&self, r: Recovery) -> RecoveryRecord {
        let mut log = match self.log.lock() {
            Ok(l) => l,
            Err(p) => p.into_inner(),
        };
        let rec = RecoveryRecord {
            seq: log.next,
            worker: r.worker,
            host: r.host,
            at: r.at,
            from: r.from,
            to: r.to,
            held_off_s: r.held_off_s,
        };
        log.next += 1;
        if log.records.len() >= self.capacity {
            log.records.pop_front();
        }
        log.records.push_back(rec.clone());
        rec
    }

    /// Oldest first after `since`, as `GET /v1/failovers` pages: `next` is
    /// the last event's seq when the page is full, else the head.
    pub fn page(&self, f: &RecoveryFilter) -> RecoveriesPage {
        let log = match self.log.lock() {
            Ok(l) => l,
            Err(p) => p.into_inner(),
        };
        let head = log.next - 1;
        let oldest = log.records.front().map_or(0, |r| r.seq);
        let start = log.records.partition_point(|r| r.seq <= f.since);
        let limit = f.limit as usize;
        let matches = |r: &&RecoveryRecord| {
            f.worker.as_ref().is_none_or(|w| r.worker == *w)
                && f.agent
                    .as_ref()
                    .is_none_or(|a| r.to == *a || r.from.as_ref() == Some(a))
        };
        let events: Vec<RecoveryRecord> = log
            .records
            .range(start..)
            .filter(matches)
            .take(limit)
            .cloned()
            .collect();
        let next = if events.len() == limit {
            events.last().map_or(f.since, |r| r.seq)
        } else {
            head
        };
        RecoveriesPage {
            events,
            next,
            oldest,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(worker: &str, from: Option<&str>, to: &str) -> Recovery {
        Recovery {
            worker: worker.into(),
            host: "h".into(),
            at: chrono::Utc::now(),
            from: from.map(String::from),
            to: to.into(),
            held_off_s: 60,
        }
    }

    #[test]
    fn pages_filter_and_bound_like_the_failover_log() {
        let log = Recoveries::new(3);
        let first = log.record(rec("w-1", Some("pi"), "opencode")).seq;
        log.record(rec("w-2", None, "pi"));
        log.record(rec("w-1", Some("claude"), "pi"));
        log.record(rec("w-3", Some("pi"), "opencode"));
        let all = log.page(&RecoveryFilter {
            since: 0,
            limit: 10,
            ..Default::default()
        });
        assert_eq!(all.events.len(), 3, "bounded at 3");
        assert_eq!(all.oldest, first + 1);
        assert_eq!(all.next, first + 3, "not full: the head");
        let full = log.page(&RecoveryFilter {
            since: 0,
            limit: 1,
            ..Default::default()
        });
        assert_eq!(full.next, first + 1, "full: the last one's seq");
        let pi = log.page(&RecoveryFilter {
            since: 0,
            limit: 10,
            agent: Some("pi".into()),
            ..Default::default()
        });
        assert_eq!(pi.events.len(), 3);
        let w1 = log.page(&RecoveryFilter {
            since: 0,
            limit: 10,
            worker: Some("w-1".into()),
            agent: Some("claude".into()),
        });
        assert_eq!(w1.events.len(), 1);
        assert_eq!(w1.events[0].from.as_deref(), Some("claude"));
    }
}
