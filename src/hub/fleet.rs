//! Every worker's last heartbeat, in memory, keyed by id. Each change gets
//! a sequence number so that `GET /v1/workers?since=` answers only what
//! changed; a sweeper moves workers to `stale` and `lost` by the hub's own
//! clock and counts that as a change too.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::wire::{Heartbeat, WorkerState, WorkerView};

/// The opaque cursor clients pass back: `c<epoch>-<seq>`. The epoch (the
/// hub's start time) makes a cursor from an earlier run a full refetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub epoch: u64,
    pub seq: u64,
}

impl Cursor {
    pub fn parse(s: &str) -> Option<Cursor> {
        let rest = s.strip_prefix('c')?;
        let (e, q) = rest.split_once('-')?;
        Some(Cursor {
            epoch: e.parse().ok()?,
            seq: q.parse().ok()?,
        })
    }
}

impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "c{}-{}", self.epoch, self.seq)
    }
}

struct Entry {
    /// The map's own key, shared with the change log.
    key: Arc<str>,
    view: Arc<WorkerView>,
    seq: u64,
}

/// Every worker's last view, and a log of changes in seq order. The log is
/// append-only with lazy deletion: an entry counts only if it is still its
/// worker's latest change. It is compacted when it grows past four times the
/// fleet, so a change costs amortised O(1) and a delta is a binary search
/// plus a scan of what changed.
pub struct Fleet {
    epoch: u64,
    seq: u64,
    workers: HashMap<Arc<str>, Entry, foldhash::fast::RandomState>,
    log: std::collections::VecDeque<(u64, Arc<str>)>,
}

/// A consistent copy of what `GET /v1/workers` answers, taken under the
/// lock and serialised outside it.
pub struct Snapshot {
    pub cursor: Cursor,
    pub delta: bool,
    pub workers: Vec<Arc<WorkerView>>,
}

impl Fleet {
    pub fn new(epoch: u64) -> Fleet {
        Fleet {
            epoch,
            seq: 0,
            workers: HashMap::default(),
            log: std::collections::VecDeque::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.workers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.workers.is_empty()
    }

    fn bump(&mut self, id: &str, view: Arc<WorkerView>) {
        self.seq += 1;
        let seq = self.seq;
        let key = match self.workers.get_mut(id) {
            Some(e) => {
                e.view = view;
                e.seq = seq;
                e.key.clone()
            }
            None => {
                let key: Arc<str> = Arc::from(id);
                self.workers.insert(
                    key.clone(),
                    Entry {
                        key: key.clone(),
                        view,
                        seq,
                    },
                );
                key
            }
        };
        self.log.push_back((seq, key));
        self.compact();
    }

    fn compact(&mut self) {
        if self.log.len() > 4 * self.workers.len() + 1024 {
            let workers = &self.workers;
            self.log
                .retain(|(seq, id)| workers.get(id).is_some_and(|e| e.seq == *seq));
        }
    }

    /// Record a validated (and scrubbed) heartbeat; returns the new view.
    pub fn record(
        &mut self,
        hb: Heartbeat,
        received_at: DateTime<Utc>,
        current_revision: &str,
    ) -> Arc<WorkerView> {
        let in_sync = hb.config_revision.as_deref() == Some(current_revision);
        let last = hb.failovers.last().cloned();
        let make = |hb: Heartbeat, last_failover| {
            Arc::new(WorkerView {
                worker: hb.worker,
                host: hb.host,
                received_at,
                sent_at: hb.sent_at,
                state: WorkerState::Healthy,
                config_revision: hb.config_revision,
                in_sync,
                agents: hb.agents,
                active_agent: hb.active_agent,
                capabilities: hb.capabilities,
                last_failover,
            })
        };
        self.seq += 1;
        let seq = self.seq;
        // One hash lookup for a worker the hub knows already.
        if let Some(e) = self.workers.get_mut(hb.worker.as_str()) {
            let last = last.or_else(|| e.view.last_failover.clone());
            let view = make(hb, last);
            e.view = view.clone();
            e.seq = seq;
            self.log.push_back((seq, e.key.clone()));
            self.compact();
            return view;
        }
        let view = make(hb, last);
        let key: Arc<str> = Arc::from(view.worker.as_str());
        self.workers.insert(
            key.clone(),
            Entry {
                key: key.clone(),
                view: view.clone(),
                seq,
            },
        );
        self.log.push_back((seq, key));
        self.compact();
        view
    }

    /// Recompute every worker's state from the hub's clock; workers whose
    /// state moved count as changed.
    pub fn sweep(&mut self, now: DateTime<Utc>, interval_s: u64) -> usize {
        let moved: Vec<(Arc<str>, Arc<WorkerView>)> = self
            .workers
            .iter()
            .filter_map(|(id, e)| {
                let age = (now - e.view.received_at).num_milliseconds() as f64 / 1000.0;
                let state = WorkerState::from_age(age, interval_s);
                (state != e.view.state).then(|| {
                    let mut v = (*e.view).clone();
                    v.state = state;
                    (id.clone(), Arc::new(v))
                })
            })
            .collect();
        let n = moved.len();
        for (id, v) in moved {
            self.bump(&id, v);
        }
        n
    }

    /// A new config revision changes every worker's `in_sync`.
    pub fn resync(&mut self, revision: &str) {
        let changed: Vec<(Arc<str>, Arc<WorkerView>)> = self
            .workers
            .iter()
            .filter_map(|(id, e)| {
                let in_sync = e.view.config_revision.as_deref() == Some(revision);
                (in_sync != e.view.in_sync).then(|| {
                    let mut v = (*e.view).clone();
                    v.in_sync = in_sync;
                    (id.clone(), Arc::new(v))
                })
            })
            .collect();
        for (id, v) in changed {
            self.bump(&id, v);
        }
    }

    pub fn cursor(&self) -> Cursor {
        Cursor {
            epoch: self.epoch,
            seq: self.seq,
        }
    }

    /// Everyone, or only what changed after `since` (when it is a cursor of
    /// this run), in the order of change.
    pub fn snapshot(&self, since: Option<Cursor>) -> Snapshot {
        match since {
            Some(c) if c.epoch == self.epoch && c.seq <= self.seq => {
                let start = self.log.partition_point(|(seq, _)| *seq <= c.seq);
                Snapshot {
                    cursor: self.cursor(),
                    delta: true,
                    workers: self
                        .log
                        .range(start..)
                        .filter_map(|(seq, id)| {
                            self.workers
                                .get(id)
                                .filter(|e| e.seq == *seq)
                                .map(|e| e.view.clone())
                        })
                        .collect(),
                }
            }
            _ => Snapshot {
                cursor: self.cursor(),
                delta: false,
                workers: self.workers.values().map(|e| e.view.clone()).collect(),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn hb(id: &str) -> Heartbeat {
        Heartbeat {
            worker: id.into(),
            host: "h".into(),
            sent_at: Utc::now(),
            config_revision: Some("r1".into()),
            agents: vec!["pi".into()],
            active_agent: Some("pi".into()),
            capabilities: Default::default(),
            failovers: vec![],
        }
    }

    #[test]
    fn deltas_hold_each_changed_worker_once_and_survive_compaction() {
        let t0 = Utc
            .with_ymd_and_hms(2026, 11, 29, 15, 0, 0)
            .single()
            .expect("time");
        let mut f = Fleet::new(7);
        for i in 0..10 {
            f.record(hb(&format!("w-{i}")), t0, "r1");
        }
        let c = f.cursor();
        // Many changes to a few workers, enough to force compactions.
        for round in 0..2000 {
            f.record(hb(&format!("w-{}", round % 3)), t0, "r1");
        }
        let d = f.snapshot(Some(c));
        assert!(d.delta);
        let mut ids: Vec<&str> = d.workers.iter().map(|w| w.worker.as_str()).collect();
        ids.sort_unstable();
        assert_eq!(ids, ["w-0", "w-1", "w-2"]);
        assert!(f.log.len() <= 4 * f.workers.len() + 1024 + 1);
        assert!(f.snapshot(Some(f.cursor())).workers.is_empty());
        assert_eq!(f.snapshot(None).workers.len(), 10);
        // Another run's cursor is a full answer.
        let other = f.snapshot(Some(Cursor { epoch: 8, seq: 1 }));
        assert!(!other.delta);
    }

    #[test]
    fn sweep_moves_by_the_hubs_clock() {
        let t0 = Utc
            .with_ymd_and_hms(2026, 11, 29, 15, 0, 0)
            .single()
            .expect("time");
        let mut f = Fleet::new(1);
        f.record(hb("w-1"), t0, "r1");
        let c = f.cursor();
        assert_eq!(f.sweep(t0 + chrono::Duration::seconds(29), 10), 0);
        assert_eq!(f.sweep(t0 + chrono::Duration::seconds(31), 10), 1);
        assert_eq!(f.sweep(t0 + chrono::Duration::seconds(101), 10), 1);
        let d = f.snapshot(Some(c));
        assert_eq!(d.workers.len(), 1);
        assert_eq!(d.workers[0].state, WorkerState::Lost);
        f.resync("r2");
        assert!(!f.snapshot(None).workers[0].in_sync);
    }
}
