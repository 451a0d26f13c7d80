//! The hub's event feed for `GET /v1/events`: one sequence for heartbeat,
//! failover, config, state and sync events, a bounded ring for
//! `Last-Event-ID` resume, and a broadcast to live subscribers. Payloads are
//! kept as values and serialised only when a subscriber sends them.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use super::worker::Stored;
use crate::wire::{ConfigEvent, EventKind, FailoverRecord, RecoveryRecord};

#[derive(Debug, Clone)]
pub enum Payload {
    Heartbeat(Arc<Stored>),
    Failover(Arc<FailoverRecord>),
    Config(Arc<ConfigEvent>),
    /// The sweeper moved the worker to `stale` or `lost`: its new view.
    State(Arc<Stored>),
    /// A new revision flipped the worker's `in_sync`: its new view.
    Sync(Arc<Stored>),
    /// A worker back on a higher rung of the same list revision.
    Recovery(Arc<RecoveryRecord>),
    /// The fleet's summary, when it changed (at most once a second).
    Summary(Arc<crate::wire::Summary>),
    /// A rollout's step and the rollout after it (never coalesced).
    Rollout(Arc<crate::rollout::wire::RolloutEvent>),
    /// Something on disk the owner must look at (never coalesced).
    Problem(Arc<crate::wire::ProblemEvent>),
}

impl Payload {
    pub fn kind(&self) -> EventKind {
        match self {
            Payload::Heartbeat(_) => EventKind::Heartbeat,
            Payload::Failover(_) => EventKind::Failover,
            Payload::Config(_) => EventKind::Config,
            Payload::State(_) => EventKind::State,
            Payload::Sync(_) => EventKind::Sync,
            Payload::Recovery(_) => EventKind::Recovery,
            Payload::Summary(_) => EventKind::Summary,
            Payload::Rollout(_) => EventKind::Rollout,
            Payload::Problem(_) => EventKind::Problem,
        }
    }

    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// The worker whose latest view this is, for the events a subscriber
    /// that is behind may be sent only the latest of (`heartbeat`, `state`,
    /// `sync`: each is the worker's whole view). Every other kind is kept.
    pub fn coalesces_by(&self) -> Option<&Arc<str>> {
        match self {
            Payload::Heartbeat(v) | Payload::State(v) | Payload::Sync(v) => Some(v.worker()),
            _ => None,
        }
    }

    pub fn to_json(&self) -> String {
        let r = match self {
            Payload::Heartbeat(v) | Payload::State(v) | Payload::Sync(v) => {
                serde_json::to_string(v.as_ref())
            }
            Payload::Failover(v) => serde_json::to_string(v.as_ref()),
            Payload::Config(v) => serde_json::to_string(v.as_ref()),
            Payload::Recovery(v) => serde_json::to_string(v.as_ref()),
            Payload::Summary(v) => serde_json::to_string(v.as_ref()),
            Payload::Rollout(v) => serde_json::to_string(v.as_ref()),
            Payload::Problem(v) => serde_json::to_string(v.as_ref()),
        };
        r.unwrap_or_else(|_| "{}".into())
    }
}

#[derive(Debug, Clone)]
pub struct Event {
    pub seq: u64,
    pub payload: Payload,
}

/// What one subscriber has yet to be sent, in seq order, coalesced per
/// worker: a worker's `heartbeat`, `state` or `sync` replaces the one of
/// its views still waiting (it is sent at the newer one's place in the
/// order, with its id), so a subscriber that is behind gets each worker's
/// latest view and one worker's flood costs it one entry. `failover`,
/// `recovery`, `config` and `summary` are all kept; only their count
/// bounds the stream ([`Backlog::kept`]).
#[derive(Default)]
pub struct Backlog {
    order: VecDeque<Event>,
    /// Each worker's latest view waiting: its seq.
    latest: HashMap<Arc<str>, u64, foldhash::fast::RandomState>,
    kept: usize,
    coalesced: u64,
}

impl Backlog {
    pub fn push(&mut self, e: Event) {
        match e.payload.coalesces_by() {
            Some(w) => {
                if self.latest.insert(w.clone(), e.seq).is_some() {
                    self.coalesced += 1;
                }
            }
            None => self.kept += 1,
        }
        self.order.push_back(e);
        // Superseded views are skipped when popped, and dropped here once
        // they outnumber the rest.
        if self.order.len() > 2 * (self.latest.len() + self.kept) + 1024 {
            let latest = &self.latest;
            self.order.retain(|e| match e.payload.coalesces_by() {
                Some(w) => latest.get(w) == Some(&e.seq),
                None => true,
            });
        }
    }

    /// The next event to send.
    pub fn pop(&mut self) -> Option<Event> {
        while let Some(e) = self.order.pop_front() {
            match e.payload.coalesces_by() {
                Some(w) => {
                    if self.latest.get(w) == Some(&e.seq) {
                        self.latest.remove(w);
                        return Some(e);
                    }
                }
                None => {
                    self.kept -= 1;
                    return Some(e);
                }
            }
        }
        None
    }

    /// Events waiting that are never coalesced.
    pub fn kept(&self) -> usize {
        self.kept
    }

    /// Events waiting, in all.
    pub fn len(&self) -> usize {
        self.latest.len() + self.kept
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Views replaced by a newer one of their worker before being sent.
    pub fn coalesced(&self) -> u64 {
        self.coalesced
    }
}

struct Ring {
    next: u64,
    events: VecDeque<Event>,
}

pub struct Events {
    ring: Mutex<Ring>,
    capacity: usize,
    tx: broadcast::Sender<Event>,
}

/// What a subscriber gets: what it missed (or that it missed too much), and
/// the live feed.
pub struct Subscription {
    pub replay: Vec<Event>,
    /// The resume point is gone: the client must refetch.
    pub reset: bool,
    /// The seq the subscriber is up to after the replay.
    pub at: u64,
    pub live: broadcast::Receiver<Event>,
}

impl Events {
    /// Sequences start at the start time in milliseconds times 1,000, so an
    /// id from an earlier run of the hub is always below the ring and gets a
    /// `reset`, never a wrong replay.
    pub fn new(capacity: usize) -> Events {
        let start = (chrono::Utc::now().timestamp_millis().max(0) as u64).saturating_mul(1000);
        let (tx, _) = broadcast::channel(capacity.clamp(16, 65_536));
        Events {
            ring: Mutex::new(Ring {
                next: start + 1,
                events: VecDeque::with_capacity(capacity.min(65_536)),
            }),
            capacity: capacity.max(1),
            tx,
        }
    }

    pub fn publish(&self, payload: Payload) {
        self.publish_all(std::iter::once(payload));
    }

    /// Publish several events in order, taking the ring lock once (a sweep
    /// or a resync can move many workers at a time).
    pub fn publish_all(&self, payloads: impl IntoIterator<Item = Payload>) {
        let Ok(mut ring) = self.ring.lock() else {
            return;
        };
        for payload in payloads {
            let ev = Event {
                seq: ring.next,
                payload,
            };
            ring.next += 1;
            if ring.events.len() == self.capacity {
                ring.events.pop_front();
            }
            // Sent under the ring lock so live order equals seq order. (`send`
            // returns at once when nobody listens; asking `receiver_count`
            // first would take the same lock twice.)
            let _ = self.tx.send(ev.clone());
            ring.events.push_back(ev);
        }
    }

    /// Subscribe, resuming after `last_id` when the ring still holds it.
    pub fn subscribe(&self, last_id: Option<u64>) -> Subscription {
        let ring = match self.ring.lock() {
            Ok(r) => r,
            Err(p) => p.into_inner(),
        };
        let live = self.tx.subscribe();
        let head = ring.next - 1;
        let Some(last) = last_id else {
            return Subscription {
                replay: Vec::new(),
                reset: false,
                at: head,
                live,
            };
        };
        let oldest = ring.events.front().map_or(ring.next, |e| e.seq);
        if last > head || last + 1 < oldest {
            return Subscription {
                replay: Vec::new(),
                reset: true,
                at: head,
                live,
            };
        }
        let skip = (last + 1 - oldest) as usize;
        Subscription {
            replay: ring.events.iter().skip(skip).cloned().collect(),
            reset: false,
            at: head,
            live,
        }
    }
}
