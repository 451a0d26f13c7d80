//! Every worker's last heartbeat, in memory, keyed by id. Each change gets
//! a sequence number so that `GET /v1/workers?since=` answers only what
//! changed; a sweeper moves workers to `stale` and `lost` by the hub's own
//! clock and counts that as a change too.

use std::collections::{BTreeMap, HashMap};
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
    view: Arc<WorkerView>,
    seq: u64,
}

pub struct Fleet {
    epoch: u64,
    seq: u64,
    workers: HashMap<String, Entry>,
    by_seq: BTreeMap<u64, String>,
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
            workers: HashMap::new(),
            by_seq: BTreeMap::new(),
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
        if let Some(old) = self.workers.get_mut(id) {
            self.by_seq.remove(&old.seq);
            old.seq = seq;
            old.view = view;
            self.by_seq.insert(seq, id.to_string());
        } else {
            self.by_seq.insert(seq, id.to_string());
            self.workers.insert(id.to_string(), Entry { view, seq });
        }
    }

    /// Record a validated (and scrubbed) heartbeat; returns the new view.
    pub fn record(
        &mut self,
        hb: Heartbeat,
        received_at: DateTime<Utc>,
        current_revision: &str,
    ) -> Arc<WorkerView> {
        let last_failover = match hb.failovers.last() {
            Some(f) => Some(f.clone()),
            None => self
                .workers
                .get(&hb.worker)
                .and_then(|e| e.view.last_failover.clone()),
        };
        let in_sync = hb.config_revision.as_deref() == Some(current_revision);
        let view = Arc::new(WorkerView {
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
        });
        let id = view.worker.clone();
        self.bump(&id, view.clone());
        view
    }

    /// Recompute every worker's state from the hub's clock; workers whose
    /// state moved count as changed.
    pub fn sweep(&mut self, now: DateTime<Utc>, interval_s: u64) -> usize {
        let moved: Vec<(String, Arc<WorkerView>)> = self
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
        let changed: Vec<(String, Arc<WorkerView>)> = self
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
    /// this run). Sorted by worker id for a full answer.
    pub fn snapshot(&self, since: Option<Cursor>) -> Snapshot {
        match since {
            Some(c) if c.epoch == self.epoch && c.seq <= self.seq => Snapshot {
                cursor: self.cursor(),
                delta: true,
                workers: self
                    .by_seq
                    .range(c.seq + 1..)
                    .filter_map(|(_, id)| self.workers.get(id).map(|e| e.view.clone()))
                    .collect(),
            },
            _ => Snapshot {
                cursor: self.cursor(),
                delta: false,
                workers: self.workers.values().map(|e| e.view.clone()).collect(),
            },
        }
    }
}
