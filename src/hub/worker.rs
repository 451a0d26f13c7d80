//! One worker as the hub holds it ([`Stored`]), with the part of its
//! heartbeat that rarely changes shared between views ([`Profile`]). Its own
//! module so that the fleet (which keeps them) and the event feed (which
//! carries them) both depend on it and not on each other.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Weak};
use std::time::Instant;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::ingest::HeartbeatIn;
use crate::wire::{Capability, Failover, Lag, Preflight, Turn, WorkerState, WorkerView};

/// What a worker says about itself that rarely changes between two of its
/// heartbeats. Shared by every view that repeats it, so a heartbeat that
/// changes none of it allocates only its new [`Stored`] view.
#[derive(Debug, PartialEq, Eq)]
pub struct Profile {
    /// The worker's id, the fleet map's own key (one allocation per worker).
    pub worker: Arc<str>,
    /// Its agent list and capabilities, shared by every worker that reports
    /// the same ([`Lists`]).
    pub roster: Roster,
    /// Its host, revision and active agent, as one string (see
    /// [`encode`]): a 100,000-worker fleet is cold in cache, and comparing
    /// one contiguous key costs a miss or two where walking the fields
    /// costs a dozen. With the roster's address it is all a heartbeat is
    /// compared against, and it is the only copy of that text.
    pub(super) key: Box<str>,
}

/// Whole numbers inside an ASCII string: `.0` digits of 7 bits each, so
/// every byte of an encoding is below 0x80 and the encoding is a `str`
/// whose text parts are slices of it, with no check and no copy.
#[derive(Clone, Copy)]
struct Digits(usize);

impl Digits {
    /// As many digits as `max` needs (at least one).
    fn for_max(max: usize) -> Digits {
        let mut d = 1;
        while d < 10 && max >> (7 * d) != 0 {
            d += 1;
        }
        Digits(d)
    }

    fn put(self, out: &mut String, n: usize) {
        for i in (0..self.0).rev() {
            out.push(char::from(((n >> (7 * i)) & 0x7f) as u8));
        }
    }

    fn get(self, s: &[u8], at: usize) -> usize {
        s[at..at + self.0]
            .iter()
            .fold(0, |n, b| n << 7 | usize::from(*b))
    }
}

fn flags(c: &Capability) -> u8 {
    let preflight = match c.preflight {
        Preflight::Ok => 0,
        Preflight::Failed => 1,
        Preflight::Unknown => 2,
    };
    u8::from(c.binary) | u8::from(c.token) << 1 | preflight << 2
}

fn capability(f: u8) -> Capability {
    Capability {
        binary: f & 1 != 0,
        token: f & 2 != 0,
        preflight: match f >> 2 {
            0 => Preflight::Ok,
            1 => Preflight::Failed,
            _ => Preflight::Unknown,
        },
    }
}

/// A worker's agent list and capabilities as one allocation: the names
/// once each (the list's in order, then capability names the list does not
/// hold), where each ends, and the capabilities sorted by name (as a
/// `BTreeMap` serialises them), each a name's index and its three flags.
/// 64 agents of 32 characters with a capability each take 2.4 KB, where
/// 64 `String`s, a `BTreeMap` of 64 more and two lookup keys took about
/// 13 KB. Laid out as
/// `d n_names n_agents n_caps end… (index flags)… text`, every number
/// [`Digits`] of `d` digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roster(pub(super) Arc<str>);

/// A [`Roster`]'s layout, read once for a run of lookups.
#[derive(Clone, Copy)]
struct Layout<'a> {
    s: &'a str,
    d: Digits,
    n_agents: usize,
    n_caps: usize,
    caps_at: usize,
    text_at: usize,
}

impl<'a> Layout<'a> {
    fn of(s: &'a str) -> Layout<'a> {
        let b = s.as_bytes();
        let d = Digits(usize::from(b[0]));
        let num = |i: usize| d.get(b, 1 + i * d.0);
        let (n_names, n_agents, n_caps) = (num(0), num(1), num(2));
        let caps_at = 1 + (3 + n_names) * d.0;
        Layout {
            s,
            d,
            n_agents,
            n_caps,
            caps_at,
            text_at: caps_at + n_caps * (d.0 + 1),
        }
    }

    fn end(&self, j: usize) -> usize {
        self.d.get(self.s.as_bytes(), 1 + (3 + j) * self.d.0)
    }

    fn name(&self, j: usize) -> &'a str {
        let start = if j == 0 { 0 } else { self.end(j - 1) };
        &self.s[self.text_at + start..self.text_at + self.end(j)]
    }

    fn cap(&self, j: usize) -> (&'a str, Capability) {
        let at = self.caps_at + j * (self.d.0 + 1);
        let b = self.s.as_bytes();
        (self.name(self.d.get(b, at)), capability(b[at + self.d.0]))
    }
}

impl Roster {
    fn layout(&self) -> Layout<'_> {
        Layout::of(&self.0)
    }

    /// The agent list, in order.
    pub fn agents(&self) -> impl ExactSizeIterator<Item = &str> + DoubleEndedIterator + Clone {
        let l = self.layout();
        (0..l.n_agents).map(move |i| l.name(i))
    }

    /// The capabilities, sorted by name.
    pub fn capabilities(
        &self,
    ) -> impl ExactSizeIterator<Item = (&str, Capability)> + DoubleEndedIterator + Clone {
        let l = self.layout();
        (0..l.n_caps).map(move |j| l.cap(j))
    }

    /// The capability reported for `agent`, if any.
    pub fn capability(&self, agent: &str) -> Option<Capability> {
        let l = self.layout();
        let (mut lo, mut hi) = (0, l.n_caps);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let (name, c) = l.cap(mid);
            match name.cmp(agent) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(c),
            }
        }
        None
    }

    /// Whether two workers share this one value.
    pub fn ptr_eq(&self, other: &Roster) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Its address: the same for every worker that shares it.
    pub fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as *const u8 as usize
    }

    /// `hb`'s list and capabilities (these in the order `order` gives).
    fn build(hb: &HeartbeatIn<'_>, order: &[usize]) -> Roster {
        let caps = &hb.capabilities.0;
        let mut names: Vec<&str> = hb.agents.iter().map(|t| t.as_str()).collect();
        let mut index: HashMap<&str, usize, foldhash::fast::RandomState> = HashMap::default();
        if !caps.is_empty() {
            for (i, a) in names.iter().enumerate().rev() {
                index.insert(a, i);
            }
        }
        let cap_names: Vec<usize> = order
            .iter()
            .map(|&j| {
                let name = caps[j].0.as_str();
                *index.entry(name).or_insert_with(|| {
                    names.push(name);
                    names.len() - 1
                })
            })
            .collect();
        let text: usize = names.iter().map(|n| n.len()).sum();
        let d = Digits::for_max(text.max(names.len()).max(order.len()));
        let mut out =
            String::with_capacity(1 + (3 + names.len()) * d.0 + order.len() * (d.0 + 1) + text);
        out.push(char::from(d.0 as u8));
        for n in [names.len(), hb.agents.len(), order.len()] {
            d.put(&mut out, n);
        }
        let mut end = 0;
        for n in &names {
            end += n.len();
            d.put(&mut out, end);
        }
        for (&j, &i) in order.iter().zip(&cap_names) {
            d.put(&mut out, i);
            out.push(char::from(flags(&caps[j].1)));
        }
        for n in &names {
            out.push_str(n);
        }
        Roster(out.into())
    }

    /// Whether this is `hb`'s list and capabilities (these in `order`).
    fn matches(&self, hb: &HeartbeatIn<'_>, order: &[usize]) -> bool {
        let l = self.layout();
        let caps = &hb.capabilities.0;
        l.n_agents == hb.agents.len()
            && l.n_caps == order.len()
            && hb
                .agents
                .iter()
                .enumerate()
                .all(|(i, a)| l.name(i) == a.as_str())
            && order.iter().enumerate().all(|(k, &j)| {
                let (name, c) = l.cap(k);
                name == caps[j].0.as_str() && c == caps[j].1
            })
    }
}

/// The agent lists and capabilities of a fleet, each held once for every
/// worker that reports the same, found by a hash of what the heartbeat
/// says (the table holds no copy of the text: an entry is 24 bytes). Held
/// weakly, so a roster no worker uses any more goes; its entry is swept
/// when the table has doubled since the last sweep. Two different rosters
/// of one hash (64 bits, seeded per run) are both correct, the later one
/// found.
#[derive(Default)]
pub(super) struct Lists {
    map: HashMap<u64, Weak<str>, foldhash::fast::RandomState>,
    hasher: foldhash::fast::RandomState,
    swept_at: usize,
    /// The capabilities' order by name, reused for each heartbeat.
    order: Vec<usize>,
}

impl Lists {
    /// `hb`'s agent list and capabilities, shared with every worker that
    /// reports the same.
    pub(super) fn of(&mut self, hb: &HeartbeatIn<'_>) -> Roster {
        let caps = &hb.capabilities.0;
        self.order.clear();
        self.order.extend(0..caps.len());
        if !caps.windows(2).all(|w| w[0].0 < w[1].0) {
            self.order.sort_by(|a, b| caps[*a].0.cmp(&caps[*b].0));
        }
        let mut h = self.hasher.build_hasher();
        h.write_usize(hb.agents.len());
        for a in &hb.agents {
            h.write_usize(a.as_str().len());
            h.write(a.as_str().as_bytes());
        }
        h.write_usize(caps.len());
        for &j in &self.order {
            let name = caps[j].0.as_str();
            h.write_usize(name.len());
            h.write(name.as_bytes());
            h.write_u8(flags(&caps[j].1));
        }
        let hash = h.finish();
        if let Some(r) = self.map.get(&hash).and_then(Weak::upgrade) {
            let r = Roster(r);
            if r.matches(hb, &self.order) {
                return r;
            }
        }
        let r = Roster::build(hb, &self.order);
        self.map.insert(hash, Arc::downgrade(&r.0));
        if self.map.len() > 2 * self.swept_at + 1024 {
            self.map.retain(|_, w| w.strong_count() > 0);
            self.swept_at = self.map.len();
        }
        r
    }

    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.map.len()
    }
}

/// The key of a profile: its host, revision and active agent, as one
/// string that two heartbeats share exactly when they say the same. Laid
/// out as `d host (0 | 1 + revision) (0 | 1 + active) text…`, the numbers
/// their lengths in [`Digits`] of `d` digits, so no two different profiles
/// encode alike.
pub(super) fn encode(hb: &HeartbeatIn<'_>, out: &mut String) {
    let host = hb.host.as_str();
    let rev = hb.config_revision.as_ref().map(|t| t.as_str());
    let active = hb.active_agent.as_ref().map(|t| t.as_str());
    let len = |s: Option<&str>| s.map_or(0, |s| s.len() + 1);
    let d = Digits::for_max(host.len().max(len(rev)).max(len(active)));
    out.clear();
    out.push(char::from(d.0 as u8));
    d.put(out, host.len());
    d.put(out, len(rev));
    d.put(out, len(active));
    out.push_str(host);
    out.push_str(rev.unwrap_or(""));
    out.push_str(active.unwrap_or(""));
}

impl Profile {
    pub(super) fn of(key: &str, worker: Arc<str>, roster: Roster) -> Profile {
        Profile {
            worker,
            roster,
            key: key.into(),
        }
    }

    /// The key's three parts: host, revision, active agent (one decode;
    /// a pass that reads more than one takes them here).
    pub fn parts(&self) -> (&str, Option<&str>, Option<&str>) {
        let b = self.key.as_bytes();
        let d = Digits(usize::from(b[0]));
        let (host, rev, active) = (d.get(b, 1), d.get(b, 1 + d.0), d.get(b, 1 + 2 * d.0));
        let at = 1 + 3 * d.0;
        let part = |from: usize, len: usize| (len > 0).then(|| &self.key[from..from + len - 1]);
        (
            &self.key[at..at + host],
            part(at + host, rev),
            part(at + host + rev.saturating_sub(1), active),
        )
    }

    pub fn host(&self) -> &str {
        self.parts().0
    }

    pub fn config_revision(&self) -> Option<&str> {
        self.parts().1
    }

    pub fn active_agent(&self) -> Option<&str> {
        self.parts().2
    }
}

/// What a worker is told: a revision and its list. A worker is in sync
/// when it reports both (docs/hub-api.md, `in_sync`): one on the revision
/// with another list is the per-worker accident the list exists to end.
#[derive(Debug, Clone, Copy)]
pub struct Given<'a> {
    pub revision: &'a str,
    /// `None`: only the revision is judged (callers that name a revision
    /// alone: unit tests and benches).
    pub agents: Option<&'a [String]>,
}

impl<'a> From<&'a str> for Given<'a> {
    fn from(revision: &'a str) -> Given<'a> {
        Given {
            revision,
            agents: None,
        }
    }
}

impl<'a> From<&'a String> for Given<'a> {
    fn from(revision: &'a String) -> Given<'a> {
        Given::from(revision.as_str())
    }
}

impl Given<'_> {
    /// Whether `profile` reports what was given: the revision and the list.
    pub fn holds(&self, profile: &Profile) -> bool {
        profile.config_revision() == Some(self.revision)
            && self
                .agents
                .is_none_or(|given| profile.roster.agents().eq(given.iter().map(String::as_str)))
    }
}

impl super::Current {
    /// What every worker outside a rollout's cohort is told.
    pub fn given(&self) -> Given<'_> {
        Given {
            revision: &self.projected,
            agents: Some(&self.agents),
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
    /// In the cohort of the rollout baking (told its candidate); false
    /// when none bakes.
    pub cohort: bool,
    pub last_failover: Option<Arc<Failover>>,
    /// When the hub received the heartbeat that carried `last_failover`.
    pub last_failover_received_at: Option<DateTime<Utc>>,
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
    /// The interval its last heartbeat's answer told it (pacing), which
    /// its state's thresholds follow; 0: the hub's configured one.
    pub told_s: u32,
    /// Its `turn` and `next_turn_agent`, when it says either (`None`: an
    /// older worker that says nothing of turns). Shared with the view
    /// before when it repeats them, so a heartbeat in the same turn
    /// allocates nothing for it.
    pub turning: Option<Arc<Turning>>,
}

/// What a worker says of its turns (docs/hub-api.md, *Turns*).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turning {
    /// `None`: between turns.
    pub turn: Option<Turn>,
    pub next_turn_agent: Option<Box<str>>,
}

impl Turning {
    /// `hb`'s, reusing `before`'s when it says the same; `None` when it
    /// says nothing of turns.
    pub(super) fn of(hb: &HeartbeatIn<'_>, before: Option<&Arc<Turning>>) -> Option<Arc<Turning>> {
        let next = hb.next_turn_agent.as_ref().map(|t| t.as_str());
        if hb.turn.is_none() && next.is_none() {
            return None;
        }
        let turn = hb.in_turn();
        if let Some(b) = before {
            let same_turn = match (&b.turn, turn) {
                (None, None) => true,
                (Some(t), Some((agent, since))) => t.agent == agent && t.since == since,
                _ => false,
            };
            if same_turn && b.next_turn_agent.as_deref() == next {
                return Some(b.clone());
            }
        }
        Some(Arc::new(Turning {
            turn: turn.map(|(agent, since)| Turn {
                agent: agent.to_string(),
                since,
            }),
            next_turn_agent: next.map(Box::from),
        }))
    }
}

/// A rung a worker left with a failover and has not run since; serialises
/// as a [`crate::wire::HeldOff`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Held {
    pub agent: String,
    /// The failover's time (the worker's clock, never after the hub's
    /// receipt).
    pub at: DateTime<Utc>,
    /// That failover's kind.
    pub kind: crate::wire::CauseKind,
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
    agents: Agents<'a>,
    active_agent: Option<&'a str>,
    capabilities: Capabilities<'a>,
    last_failover: Option<&'a Failover>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_failover_received_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    held_off: &'a [Held],
    headroom: Option<u32>,
    clock_skew_s: i64,
    pool: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    heartbeat_interval_s: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    turn: Option<Option<&'a Turn>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_turn_agent: Option<Option<&'a str>>,
    /// In the cohort of the rollout baking (docs/hub-api.md, Rollouts).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    cohort: bool,
}

/// A roster's agent list, serialised as a JSON array of its names.
struct Agents<'a>(&'a Roster);

impl Serialize for Agents<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.agents())
    }
}

/// A roster's capabilities, serialised as a JSON object in name order (as
/// a `BTreeMap` is).
struct Capabilities<'a>(&'a Roster);

impl Serialize for Capabilities<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.capabilities())
    }
}

impl Serialize for Stored {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let p = &*self.profile;
        let (host, config_revision, active_agent) = p.parts();
        ViewRef {
            worker: &p.worker,
            host,
            received_at: self.received_at,
            sent_at: self.sent_at,
            state: self.state,
            config_revision,
            in_sync: self.in_sync,
            agents: Agents(&p.roster),
            active_agent,
            capabilities: Capabilities(&p.roster),
            last_failover: self.last_failover.as_deref(),
            last_failover_received_at: self.last_failover_received_at,
            held_off: self.held.as_deref().unwrap_or_default(),
            headroom: Some(self.headroom),
            clock_skew_s: self.clock_skew_s,
            pool: &self.pool,
            heartbeat_interval_s: self.told_interval(),
            turn: self.turning.as_deref().map(|t| t.turn.as_ref()),
            next_turn_agent: self
                .turning
                .as_deref()
                .map(|t| t.next_turn_agent.as_deref()),
            cohort: self.cohort,
        }
        .serialize(s)
    }
}

impl Stored {
    pub fn worker(&self) -> &Arc<str> {
        &self.profile.worker
    }

    /// When its last failover happened as far as the hub can tell: the
    /// earlier of the worker's `at` and the hub's receipt. The urgency
    /// order and the summary's urgent workers use this, never `at` alone
    /// (a failover dated a day ahead is not the newest for a day).
    pub fn last_failover_at(&self) -> Option<DateTime<Utc>> {
        let f = self.last_failover.as_deref()?;
        Some(match self.last_failover_received_at {
            Some(r) => f.at.min(r),
            None => f.at,
        })
    }

    /// The wire type's value (for tests and callers that want owned data).
    pub fn to_view(&self) -> WorkerView {
        let p = &*self.profile;
        WorkerView {
            worker: p.worker.to_string(),
            host: p.host().to_string(),
            received_at: self.received_at,
            sent_at: self.sent_at,
            state: self.state,
            config_revision: p.config_revision().map(str::to_string),
            in_sync: self.in_sync,
            agents: p.roster.agents().map(str::to_string).collect(),
            active_agent: p.active_agent().map(str::to_string),
            capabilities: p
                .roster
                .capabilities()
                .map(|(a, c)| (a.to_string(), c))
                .collect(),
            last_failover: self.last_failover.as_deref().cloned(),
            last_failover_received_at: self.last_failover_received_at,
            held_off: self
                .held
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|h| crate::wire::HeldOff {
                    agent: h.agent.clone(),
                    at: h.at,
                    kind: h.kind,
                })
                .collect(),
            headroom: Some(self.headroom),
            clock_skew_s: Some(self.clock_skew_s),
            pool: Some(self.pool.to_string()),
            heartbeat_interval_s: self.told_interval(),
            turn: self.turning.as_deref().map(|t| t.turn.clone()),
            next_turn_agent: self
                .turning
                .as_deref()
                .map(|t| t.next_turn_agent.as_deref().map(str::to_string)),
            cohort: self.cohort,
        }
    }

    /// The interval it was told, when the hub recorded one.
    pub fn told_interval(&self) -> Option<u64> {
        (self.told_s > 0).then_some(self.told_s as u64)
    }

    /// The turn it is in, if it says it is in one: its agent and start.
    pub fn turn(&self) -> Option<(&str, DateTime<Utc>)> {
        let t = self.turning.as_deref()?.turn.as_ref()?;
        Some((t.agent.as_str(), t.since))
    }

    /// The agent it says it runs at its next turn.
    pub fn next_turn_agent(&self) -> Option<&str> {
        self.turning.as_deref()?.next_turn_agent.as_deref()
    }

    /// Why it does not run `revision` yet (`None`: it runs it): in a turn
    /// it will leave for another agent ([`Lag::InTurn`], "behind because
    /// in a turn"), or simply behind. The rollout's guard counts a cohort
    /// worker on the candidate only once this is `None` for the
    /// candidate's revision.
    pub fn lag(&self, revision: &str) -> Option<Lag<'_>> {
        crate::wire::lag_of(
            revision,
            self.profile.config_revision(),
            self.turn(),
            self.next_turn_agent(),
        )
    }

    /// Whether it runs `revision`: [`Stored::lag`] is `None`.
    pub fn runs(&self, revision: &str) -> bool {
        self.lag(revision).is_none()
    }

    /// Healthy, on a rung, and nothing left below it.
    pub fn one_failure_from_no_route(&self) -> bool {
        self.state == WorkerState::Healthy
            && self.profile.active_agent().is_some()
            && self.headroom == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::fleet::Fleet;
    use crate::wire::Heartbeat;

    /// Heartbeat bodies of every shape a roster and a key encode: caps in
    /// and out of name order, naming agents outside the list, a repeated
    /// agent, nothing at all, JSON escapes, the largest valid shape.
    fn bodies() -> Vec<String> {
        let base = r#""sent_at":"2026-11-29T15:04:05Z""#;
        let cap = |b: bool, t: bool, p: &str| {
            format!(r#"{{"binary":{b},"token":{t},"preflight":"{p}"}}"#)
        };
        let agents: Vec<String> = (0..64).map(|i| format!("a{i:02}{:029}", 7)).collect();
        let caps: Vec<String> = agents
            .iter()
            .rev()
            .enumerate()
            .map(|(i, a)| format!(r#""{a}":{}"#, cap(i % 2 == 0, i % 3 == 0, "ok")))
            .collect();
        vec![
            format!(
                r#"{{"worker":"w-1","host":"h1",{base},"config_revision":"r1","agents":["pi","claude","codex"],"active_agent":"claude","capabilities":{{"pi":{},"claude":{},"codex":{}}}}}"#,
                cap(true, true, "ok"),
                cap(false, true, "failed"),
                cap(true, false, "unknown")
            ),
            format!(
                r#"{{"worker":"w-2","host":"h2",{base},"agents":["pi","pi","zed"],"active_agent":"cursor","capabilities":{{"zed":{},"cursor":{},"aider":{}}}}}"#,
                cap(true, true, "ok"),
                cap(true, true, "unknown"),
                cap(false, false, "failed")
            ),
            format!(r#"{{"worker":"w-3","host":"h3",{base},"agents":[],"active_agent":null}}"#),
            format!(
                r#"{{"worker":"w-5","host":"h5",{base},"agents":["pi","claude"],"active_agent":"claude","turn":{{"agent":"claude","since":"2026-11-29T15:00:00Z"}},"next_turn_agent":"pi"}}"#
            ),
            format!(
                r#"{{"worker":"w-6","host":"h6",{base},"agents":["pi"],"active_agent":"pi","turn":null,"next_turn_agent":null}}"#
            ),
            format!(
                r#"{{"worker":"w-7","host":"h7",{base},"agents":["pi"],"active_agent":"pi","next_turn_agent":"pi"}}"#
            ),
            format!(
                r#"{{"worker":"w-4","host":"h\u0034",{base},"agents":["p\u0069"],"active_agent":"\u0070i","capabilities":{{"p\u0069":{}}}}}"#,
                cap(true, true, "ok")
            ),
            format!(
                r#"{{"worker":"{}","host":"{}",{base},"config_revision":"{}","agents":{},"active_agent":"{}","capabilities":{{{}}}}}"#,
                format_args!("w{:0127}", 7),
                format_args!("h{:0252}", 7),
                "r".repeat(64),
                serde_json::to_string(&agents).expect("json"),
                agents[1],
                caps.join(",")
            ),
        ]
    }

    /// The wire type's JSON, with the two fields the hub adds after it.
    /// The wire type's JSON of the view, its skew and pool as given.
    fn wire_json(v: &WorkerView, skew: i64, pool: &str) -> String {
        let v = WorkerView {
            clock_skew_s: Some(skew),
            pool: Some(pool.to_string()),
            ..v.clone()
        };
        serde_json::to_string(&v).expect("serialises")
    }

    #[test]
    fn stored_views_serialise_byte_for_byte_as_the_wire_type() {
        let mut f = Fleet::new(1);
        let now = chrono::Utc::now();
        for body in bodies() {
            let hb = HeartbeatIn::parse(body.as_bytes()).expect("parses");
            hb.validate().expect("valid");
            let wire: Heartbeat = serde_json::from_str(&body).expect("the wire type");
            let stored = f.record(&hb, now, "r1");
            let view = stored.to_view();
            // What the worker said, every field, back from the compact form.
            assert_eq!(view.worker, wire.worker, "{body}");
            assert_eq!(view.host, wire.host, "{body}");
            assert_eq!(view.config_revision, wire.config_revision, "{body}");
            assert_eq!(view.agents, wire.agents, "{body}");
            assert_eq!(view.active_agent, wire.active_agent, "{body}");
            assert_eq!(view.capabilities, wire.capabilities, "{body}");
            // A worker that says either of its turns has both in its
            // entry (`null` for what it left out).
            let says = wire.turn.is_some() || wire.next_turn_agent.is_some();
            let turn = wire.turn.clone().or(says.then_some(None));
            assert_eq!(view.turn, turn, "{body}");
            assert_eq!(
                view.next_turn_agent.clone().flatten(),
                wire.next_turn_agent,
                "{body}"
            );
            for (name, c) in &wire.capabilities {
                assert_eq!(stored.profile.roster.capability(name), Some(*c), "{body}");
            }
            assert_eq!(stored.profile.roster.capability("nobody"), None);
            let json = serde_json::to_string(&*stored).expect("serialises");
            assert_eq!(json, wire_json(&view, stored.clock_skew_s, ""), "{body}");
        }
    }

    /// Names and lengths past what one or two 7-bit digits hold (no
    /// heartbeat the hub takes has them, but the encoding has no limit).
    #[test]
    fn long_texts_take_more_digits() {
        let mut f = Fleet::new(1);
        let long = "a".repeat(20_000);
        let cap = Capability {
            binary: true,
            token: false,
            preflight: Preflight::Failed,
        };
        let host = "h".repeat(300);
        let h = Heartbeat {
            worker: "w-1".into(),
            host: host.clone(),
            sent_at: chrono::Utc::now(),
            config_revision: Some(long.clone()),
            agents: vec![long.clone(), "pi".into()],
            active_agent: Some(long.clone()),
            capabilities: [(long.clone(), cap), ("zz".into(), cap)].into(),
            failovers: vec![],
            turn: None,
            next_turn_agent: None,
        };
        let stored = f.record(&(&h).into(), chrono::Utc::now(), "r1");
        let view = stored.to_view();
        assert_eq!(view.host, host);
        assert_eq!(view.config_revision.as_deref(), Some(&*long));
        assert_eq!(view.active_agent.as_deref(), Some(&*long));
        assert_eq!(view.agents, h.agents);
        assert_eq!(view.capabilities, h.capabilities);
    }

    /// A worker's `turn` and `next_turn_agent` are carried into its entry
    /// as sent (`null` between turns, left out for a worker that says
    /// nothing of turns); a heartbeat in the same turn shares the stored
    /// value; `lag` says a worker in a turn it will leave is behind
    /// because of it.
    #[test]
    fn turns_are_carried_shared_and_explain_a_lag() {
        let mut f = Fleet::new(1);
        let now = chrono::Utc::now();
        let base = r#""worker":"w-1","host":"h1","sent_at":"2026-11-29T15:04:05Z","agents":["pi","claude"],"active_agent":"pi""#;
        let entry = |f: &mut Fleet, body: &str, rev: &str| {
            let hb = HeartbeatIn::parse(body.as_bytes()).expect("parses");
            hb.validate().expect("valid");
            let v = f.record(&hb, now, rev);
            let json: serde_json::Value = serde_json::to_value(&*v).expect("json");
            (v, json)
        };
        let (old, json) = entry(&mut f, &format!("{{{base}}}"), "r1");
        assert!(json.get("turn").is_none() && json.get("next_turn_agent").is_none());
        assert!(old.turning.is_none() && old.turn().is_none());
        let in_turn = format!(
            r#"{{{base},"config_revision":"r1","turn":{{"agent":"pi","since":"2026-11-29T15:00:00Z"}},"next_turn_agent":"claude"}}"#
        );
        let (a, json) = entry(&mut f, &in_turn, "r2");
        assert_eq!(
            json["turn"],
            serde_json::json!({"agent": "pi", "since": "2026-11-29T15:00:00Z"})
        );
        assert_eq!(json["next_turn_agent"], "claude");
        let (b, _) = entry(&mut f, &in_turn, "r2");
        let (ta, tb) = (a.turning.as_ref(), b.turning.as_ref());
        assert!(Arc::ptr_eq(ta.expect("a"), tb.expect("b")), "shared");
        // Told r2, still on r1 in a turn it leaves for claude.
        let since = "2026-11-29T15:00:00Z".parse().expect("time");
        assert_eq!(
            b.lag("r2"),
            Some(Lag::InTurn {
                agent: "pi",
                since,
                next: Some("claude")
            })
        );
        assert!(b.runs("r1") && !b.runs("r2"));
        // In a turn it keeps at its next turn: merely behind.
        let keeps = in_turn.replace(r#""next_turn_agent":"claude""#, r#""next_turn_agent":"pi""#);
        let (c, _) = entry(&mut f, &keeps, "r2");
        assert_eq!(c.lag("r2"), Some(Lag::Behind));
        assert!(!Arc::ptr_eq(tb.expect("b"), c.turning.as_ref().expect("c")));
        let between =
            format!(r#"{{{base},"config_revision":"r2","turn":null,"next_turn_agent":null}}"#);
        let (d, json) = entry(&mut f, &between, "r2");
        assert!(json["turn"].is_null() && json.get("turn").is_some());
        assert!(json["next_turn_agent"].is_null() && json.get("next_turn_agent").is_some());
        assert_eq!(d.lag("r2"), None);
        assert_eq!(old.lag("r2"), Some(Lag::Behind), "no revision at all");
    }

    /// Capabilities sent in another order are the same roster; one
    /// capability changed is another.
    #[test]
    fn equal_rosters_are_one_value_whatever_the_order_sent() {
        let mut lists = Lists::default();
        let one = br#"{"worker":"w","host":"h","sent_at":"2026-11-29T15:04:05Z","agents":["pi","claude"],"active_agent":"pi","capabilities":{"pi":{"binary":true,"token":true,"preflight":"ok"},"claude":{"binary":true,"token":true,"preflight":"ok"}}}"#;
        let two = br#"{"worker":"w","host":"h","sent_at":"2026-11-29T15:04:05Z","agents":["pi","claude"],"active_agent":"pi","capabilities":{"claude":{"binary":true,"token":true,"preflight":"ok"},"pi":{"binary":true,"token":true,"preflight":"ok"}}}"#;
        let a = lists.of(&HeartbeatIn::parse(one).expect("parses"));
        let b = lists.of(&HeartbeatIn::parse(two).expect("parses"));
        assert!(a.ptr_eq(&b));
        let three = String::from_utf8_lossy(two).replace(
            r#""token":true,"preflight":"ok"}}"#,
            r#""token":false,"preflight":"ok"}}"#,
        );
        let c = lists.of(&HeartbeatIn::parse(three.as_bytes()).expect("parses"));
        assert!(!a.ptr_eq(&c));
        assert_eq!(c.capability("pi").map(|c| c.token), Some(false));
        assert_eq!(lists.held(), 2);
    }
}
