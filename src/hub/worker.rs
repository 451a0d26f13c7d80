//! One worker as the hub holds it ([`Stored`]), with the part of its
//! heartbeat that rarely changes shared between views ([`Profile`]). Its own
//! module so that the fleet (which keeps them) and the event feed (which
//! carries them) both depend on it and not on each other.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::ingest::HeartbeatIn;
use crate::wire::{Capability, Failover, Preflight, WorkerState, WorkerView};

/// What a worker says about itself that rarely changes between two of its
/// heartbeats. Shared by every view that repeats it, so a heartbeat that
/// changes none of it allocates only its new [`Stored`] view.
#[derive(Debug, PartialEq, Eq)]
pub struct Profile {
    /// The worker's id, the fleet map's own key (one allocation per worker).
    pub worker: Arc<str>,
    pub host: String,
    pub config_revision: Option<String>,
    /// Shared by every worker that reports the same list ([`Lists`]).
    pub agents: Arc<Vec<String>>,
    pub active_agent: Option<String>,
    /// Shared by every worker that reports the same capabilities.
    pub capabilities: Arc<BTreeMap<String, Capability>>,
    /// All of the above but the id, as one length-prefixed string (see
    /// [`encode`]), the two shared lists by their address: a
    /// 100,000-worker fleet is cold in cache, and comparing one contiguous
    /// key costs a miss or two where walking the fields costs a dozen.
    pub(super) key: Box<[u8]>,
}

/// Values shared between workers, found by their encoding; held weakly,
/// so a value no worker uses any more goes (its entry is swept when the
/// table has doubled since the last sweep).
pub(super) struct Shared<T> {
    map: HashMap<Box<[u8]>, Weak<T>, foldhash::fast::RandomState>,
    swept_at: usize,
}

impl<T> Default for Shared<T> {
    fn default() -> Self {
        Shared {
            map: HashMap::default(),
            swept_at: 0,
        }
    }
}

impl<T> Shared<T> {
    /// The shared value encoded as `enc`, made with `make` when there is
    /// none.
    pub(super) fn get(&mut self, enc: &[u8], make: impl FnOnce() -> T) -> Arc<T> {
        if let Some(v) = self.map.get(enc).and_then(Weak::upgrade) {
            return v;
        }
        let v = Arc::new(make());
        self.map.insert(enc.into(), Arc::downgrade(&v));
        if self.map.len() > 2 * self.swept_at + 1024 {
            self.map.retain(|_, w| w.strong_count() > 0);
            self.swept_at = self.map.len();
        }
        v
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}

/// The shared agent lists and capability maps of a fleet, and the scratch
/// buffers their encodings are made in.
#[derive(Default)]
pub(super) struct Lists {
    agents: Shared<Vec<String>>,
    capabilities: Shared<BTreeMap<String, Capability>>,
    scratch: Vec<u8>,
}

impl Lists {
    /// `hb`'s agent list and capabilities, shared with every worker that
    /// reports the same.
    pub(super) fn of(
        &mut self,
        hb: &HeartbeatIn<'_>,
    ) -> (Arc<Vec<String>>, Arc<BTreeMap<String, Capability>>) {
        self.scratch.clear();
        encode_agents(hb, &mut self.scratch);
        let agents = self.agents.get(&self.scratch, || {
            hb.agents.iter().map(|t| t.as_str().to_owned()).collect()
        });
        self.scratch.clear();
        encode_capabilities(hb, &mut self.scratch);
        let capabilities = self.capabilities.get(&self.scratch, || {
            hb.capabilities
                .0
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), *v))
                .collect()
        });
        (agents, capabilities)
    }

    #[cfg(test)]
    pub(super) fn held(&self) -> (usize, usize) {
        (self.agents.len(), self.capabilities.len())
    }
}

fn text(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn encode_agents(hb: &HeartbeatIn<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(&(hb.agents.len() as u32).to_le_bytes());
    for a in &hb.agents {
        text(out, a.as_str());
    }
}

fn encode_capabilities(hb: &HeartbeatIn<'_>, out: &mut Vec<u8>) {
    out.extend_from_slice(&(hb.capabilities.0.len() as u32).to_le_bytes());
    for (name, c) in &hb.capabilities.0 {
        text(out, name.as_str());
        let preflight = match c.preflight {
            Preflight::Ok => 0,
            Preflight::Failed => 1,
            Preflight::Unknown => 2,
        };
        out.push(u8::from(c.binary) | u8::from(c.token) << 1 | preflight << 2);
    }
}

/// The profile part of a heartbeat, as a byte string that two heartbeats
/// share exactly when they say the same (in the same order), given its
/// shared `agents` and `capabilities` (by address: equal lists are one
/// value). Every piece is length-prefixed, so no two different profiles
/// encode alike.
pub(super) fn encode(
    hb: &HeartbeatIn<'_>,
    agents: &Arc<Vec<String>>,
    capabilities: &Arc<BTreeMap<String, Capability>>,
    out: &mut Vec<u8>,
) {
    fn opt(out: &mut Vec<u8>, s: Option<&str>) {
        match s {
            None => out.push(0),
            Some(s) => {
                out.push(1);
                text(out, s);
            }
        }
    }
    out.clear();
    text(out, hb.host.as_str());
    opt(out, hb.config_revision.as_ref().map(|t| t.as_str()));
    opt(out, hb.active_agent.as_ref().map(|t| t.as_str()));
    out.extend_from_slice(&(Arc::as_ptr(agents) as usize).to_le_bytes());
    out.extend_from_slice(&(Arc::as_ptr(capabilities) as usize).to_le_bytes());
}

impl Profile {
    pub(super) fn of(
        hb: &HeartbeatIn<'_>,
        key: &[u8],
        worker: Arc<str>,
        agents: Arc<Vec<String>>,
        capabilities: Arc<BTreeMap<String, Capability>>,
    ) -> Profile {
        Profile {
            worker,
            host: hb.host.as_str().to_owned(),
            config_revision: hb.config_revision.as_ref().map(|t| t.as_str().to_owned()),
            agents,
            active_agent: hb.active_agent.as_ref().map(|t| t.as_str().to_owned()),
            capabilities,
            key: key.into(),
        }
    }
}

/// One worker as the hub holds it: serialises to exactly a
/// [`WorkerView`]'s JSON (tested below), with the parts that rarely change
/// shared between successive views.
#[derive(Debug, Clone)]
pub struct Stored {
    pub profile: Arc<Profile>,
    /// The pool the worker belongs to (the one that first reported it).
    pub pool: Arc<str>,
    /// The hub's wall clock when the heartbeat arrived (shown; never used
    /// to judge liveness).
    pub received_at: DateTime<Utc>,
    /// The hub's monotonic clock when it arrived: liveness and eviction.
    pub arrived: Instant,
    pub sent_at: DateTime<Utc>,
    /// How far the worker's clock is ahead of the hub's (negative: behind),
    /// in whole seconds: `sent_at` less `received_at`.
    pub clock_skew_s: i64,
    pub state: WorkerState,
    pub in_sync: bool,
    pub last_failover: Option<Arc<Failover>>,
    /// Rungs below the active one it can still run and that are not held
    /// off, judged at `received_at` (see [`super::fleet::headroom_of`]).
    pub headroom: u32,
    /// The rungs it left with a failover within the held-off window (as of
    /// `received_at`) and has not run since, with the time of the last such
    /// failover (at most one per agent of its list).
    pub held: Option<Arc<[Held]>>,
    /// When the hub first saw it on its current active agent (or with no
    /// route).
    pub active_since: DateTime<Utc>,
}

/// A rung a worker left with a failover and has not run since.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub agent: String,
    /// The failover's time (the worker's clock, never after the hub's
    /// receipt).
    pub at: DateTime<Utc>,
}

/// [`WorkerView`]'s fields, in its order, borrowed.
#[derive(Serialize)]
struct ViewRef<'a> {
    worker: &'a str,
    host: &'a str,
    received_at: DateTime<Utc>,
    sent_at: DateTime<Utc>,
    state: WorkerState,
    config_revision: Option<&'a str>,
    in_sync: bool,
    agents: &'a [String],
    active_agent: Option<&'a str>,
    capabilities: &'a BTreeMap<String, Capability>,
    last_failover: Option<&'a Failover>,
    headroom: Option<u32>,
    clock_skew_s: i64,
    pool: &'a str,
}

impl Serialize for Stored {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = &*self.profile;
        ViewRef {
            worker: &p.worker,
            host: &p.host,
            received_at: self.received_at,
            sent_at: self.sent_at,
            state: self.state,
            config_revision: p.config_revision.as_deref(),
            in_sync: self.in_sync,
            agents: &p.agents,
            active_agent: p.active_agent.as_deref(),
            capabilities: &p.capabilities,
            last_failover: self.last_failover.as_deref(),
            headroom: Some(self.headroom),
            clock_skew_s: self.clock_skew_s,
            pool: &self.pool,
        }
        .serialize(s)
    }
}

impl Stored {
    pub fn worker(&self) -> &Arc<str> {
        &self.profile.worker
    }

    /// The wire type's value (for tests and callers that want owned data).
    pub fn to_view(&self) -> WorkerView {
        let p = &*self.profile;
        WorkerView {
            worker: p.worker.to_string(),
            host: p.host.clone(),
            received_at: self.received_at,
            sent_at: self.sent_at,
            state: self.state,
            config_revision: p.config_revision.clone(),
            in_sync: self.in_sync,
            agents: p.agents.to_vec(),
            active_agent: p.active_agent.clone(),
            capabilities: (*p.capabilities).clone(),
            last_failover: self.last_failover.as_deref().cloned(),
            headroom: Some(self.headroom),
            clock_skew_s: Some(self.clock_skew_s),
            pool: Some(self.pool.to_string()),
            heartbeat_interval_s: None,
        }
    }

    /// Healthy, on a rung, and nothing left below it.
    pub fn one_failure_from_no_route(&self) -> bool {
        self.state == WorkerState::Healthy
            && self.profile.active_agent.is_some()
            && self.headroom == 0
    }
}
