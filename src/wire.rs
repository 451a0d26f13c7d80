//! The hub API v1 wire types, shared by the reference hub, the client, the
//! simulator and the TUI so that the two sides of the wire cannot drift.
//!
//! Validation lives with the types: a value that passed [`Heartbeat::validate`]
//! is safe to store and to show.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The API version this crate speaks.
pub const API_VERSION: &str = "v1";
/// The built-in priority: known agent names, rank 0 first.
pub const KNOWN_AGENTS: [&str; 5] = ["opencode", "pi", "claude", "codex", "cursor"];
/// Longest `detail` of a failover cause, in characters.
pub const MAX_DETAIL_CHARS: usize = 200;
/// Longest worker id, in bytes.
pub const MAX_WORKER_ID: usize = 128;
/// Longest host name, in bytes.
pub const MAX_HOST: usize = 253;
/// Most agents one heartbeat may list.
pub const MAX_AGENTS: usize = 64;
/// Most failovers one heartbeat may carry.
pub const MAX_FAILOVERS_PER_HEARTBEAT: usize = 256;
/// Longest failover id, in bytes.
pub const MAX_FAILOVER_ID: usize = 128;
/// How far ahead of the hub's clock a time a worker sends (`sent_at`, a
/// failover's `at`) may lie: a day of clock skew either way (the hub's
/// clock may be the wrong one, and a heartbeat that arrives is proof of
/// life), no more: the far-future bound keeps every stored time readable.
pub const MAX_AHEAD_S: i64 = 24 * 60 * 60;
/// How far behind the hub's clock it may lie: a worker back-filling after an
/// outage, or a demo replaying the last hour, fits with room to spare.
pub const MAX_BEHIND_S: i64 = 30 * 24 * 60 * 60;

// The fleet's size: the hub caps its workers by a memory budget, and a
// client bounds a workers page by the same default cap.

/// What one more worker of the largest shape the contract accepts (a
/// 128-byte id, a 253-byte host, 64 agents of 32 characters, 64
/// capabilities of 64 other names, a last failover with a 200-character
/// detail) costs the hub, rounded up: 7,381 B of RSS a worker measured
/// between 3,640 and 20,000 of them (`benches/hub_memory.sh`, `own+caps`;
/// docs/performance.md), 9 KiB here. A fleet that reports one list costs
/// about a third of it.
pub const LARGEST_WORKER_BYTES: u64 = 9 * 1024;

/// What a fleet costs the hub besides its workers' own bytes, rounded up:
/// the tables, database caches, event ring and allocator pages of requests
/// in flight a hub grows into with its first few thousand workers (14 to
/// 23 MB measured, the same runs and `tests/hub/resources.rs`).
pub const WORKERS_BASE_BYTES: u64 = 64 << 20;

/// The default `--memory-budget`: what the hub may grow by for the workers
/// it holds, 2.5 GiB (over its own ~35 MiB at start).
pub const DEFAULT_MEMORY_BUDGET: u64 = 2560 << 20;

/// The worker cap a memory budget allows: as many largest-shape workers as
/// fit in it after [`WORKERS_BASE_BYTES`] (at least one).
pub const fn max_workers_for(budget: u64) -> usize {
    let n = budget.saturating_sub(WORKERS_BASE_BYTES) / LARGEST_WORKER_BYTES;
    if n == 0 { 1 } else { n as usize }
}

/// The default worker cap, derived from the default budget: 283,989
/// workers of the largest shape in 2.5 GiB, the 100,000-worker goal with
/// 2.8x headroom.
pub const DEFAULT_MAX_WORKERS: usize = max_workers_for(DEFAULT_MEMORY_BUDGET);

/// The role a token grants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Owner,
    Viewer,
    Worker,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Viewer => "viewer",
            Role::Worker => "worker",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "owner" => Ok(Role::Owner),
            "viewer" => Ok(Role::Viewer),
            "worker" => Ok(Role::Worker),
            other => Err(format!(
                "unknown role {other:?} (expected owner, viewer or worker)"
            )),
        }
    }
}

/// `GET /v1/whoami`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Whoami {
    pub name: String,
    pub role: Role,
    pub hub: String,
    pub api: String,
    /// The hub's identity, kept in its database: a restart of the same hub
    /// keeps it; another hub, or a fresh database, has another. A client
    /// that meets another instance after a reconnect starts afresh.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
}

/// The closed set of structured failures that alone may move a worker down
/// the list. An unknown kind is rejected at deserialisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseKind {
    MissingBinary,
    NoToken,
    PreflightFailed,
    Auth,
    RateLimited,
    UpstreamStatus,
}

impl CauseKind {
    pub const ALL: [CauseKind; 6] = [
        CauseKind::MissingBinary,
        CauseKind::NoToken,
        CauseKind::PreflightFailed,
        CauseKind::Auth,
        CauseKind::RateLimited,
        CauseKind::UpstreamStatus,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CauseKind::MissingBinary => "missing_binary",
            CauseKind::NoToken => "no_token",
            CauseKind::PreflightFailed => "preflight_failed",
            CauseKind::Auth => "auth",
            CauseKind::RateLimited => "rate_limited",
            CauseKind::UpstreamStatus => "upstream_status",
        }
    }

    /// Kinds that come from the hub's router and carry an HTTP status.
    pub fn takes_status(self) -> bool {
        matches!(
            self,
            CauseKind::Auth | CauseKind::RateLimited | CauseKind::UpstreamStatus
        )
    }
}

impl fmt::Display for CauseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for CauseKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CauseKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown cause kind {s:?}"))
    }
}

/// Who observed the failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CauseSource {
    Worker,
    Preflight,
    HubRouter,
}

impl CauseSource {
    pub fn as_str(self) -> &'static str {
        match self {
            CauseSource::Worker => "worker",
            CauseSource::Preflight => "preflight",
            CauseSource::HubRouter => "hub_router",
        }
    }
}

/// The structured reason a worker left an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cause {
    pub kind: CauseKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub source: CauseSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// One move down (or off) the list, as a worker reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failover {
    pub id: String,
    pub at: DateTime<Utc>,
    pub from: String,
    /// `None`: no rung left, the worker failed closed.
    pub to: Option<String>,
    pub cause: Cause,
}

/// Result of a worker's preflight for one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preflight {
    Ok,
    Failed,
    #[default]
    Unknown,
}

/// What a worker can run for one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capability {
    pub binary: bool,
    pub token: bool,
    pub preflight: Preflight,
}

impl Capability {
    /// Binary, token and preflight all fine.
    pub fn capable(&self) -> bool {
        self.binary && self.token && self.preflight == Preflight::Ok
    }
}

/// `POST /v1/heartbeats` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Heartbeat {
    pub worker: String,
    pub host: String,
    pub sent_at: DateTime<Utc>,
    #[serde(default)]
    pub config_revision: Option<String>,
    pub agents: Vec<String>,
    pub active_agent: Option<String>,
    #[serde(default)]
    pub capabilities: BTreeMap<String, Capability>,
    #[serde(default)]
    pub failovers: Vec<Failover>,
    /// The turn the worker is in (docs/hub-api.md, *Turns*): `None`, the
    /// worker does not say (an older worker: the field is left out);
    /// `Some(None)`, between turns (`"turn": null`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub turn: Option<Option<Turn>>,
    /// The agent it will run at its next turn, under the newest list it
    /// was told (`None`: it does not say, or no rung at its next turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_turn_agent: Option<String>,
}

/// A turn a worker is in: the agent it runs it on and since when (the
/// worker's clock). A turn keeps the agent it began on; a structured
/// failure still moves the worker down at once, and the turn goes on on
/// the agent it moved to. A new list takes effect at the next turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    pub agent: String,
    pub since: DateTime<Utc>,
}

/// A field that tells "left out" (`None`) from `null` (`Some(None)`):
/// `#[serde(default, deserialize_with = "present")]`.
pub fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Why a worker does not run a revision yet (see [`lag_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lag<'a> {
    /// In a turn on `agent` since `since`: it switches (to `next`, `None`
    /// for no rung) at its next turn.
    InTurn {
        agent: &'a str,
        since: DateTime<Utc>,
        next: Option<&'a str>,
    },
    /// It reports another revision (or none) and no turn explains it.
    Behind,
}

/// Whether a worker that reports `reported` and is in `turn` (with
/// `next`, its `next_turn_agent`) runs `revision`, and if not why: a
/// worker runs a list from the moment it reports its revision (a worker
/// in a turn keeps reporting the revision it runs by until the turn ends);
/// one behind it in a turn whose next agent differs from the turn's is
/// behind because of the turn.
pub fn lag_of<'a>(
    revision: &str,
    reported: Option<&str>,
    turn: Option<(&'a str, DateTime<Utc>)>,
    next: Option<&'a str>,
) -> Option<Lag<'a>> {
    if reported == Some(revision) {
        return None;
    }
    Some(match turn {
        Some((agent, since)) if next != Some(agent) => Lag::InTurn { agent, since, next },
        _ => Lag::Behind,
    })
}

/// The projection every worker inherits: `POST /v1/heartbeats` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Projection {
    pub config_revision: String,
    pub agents: Vec<String>,
    pub heartbeat_interval_s: u64,
}

/// Liveness by the hub's own clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkerState {
    Healthy,
    Stale,
    Lost,
}

impl WorkerState {
    /// Heartbeat intervals after which a silent worker is `stale`.
    pub const STALE_AFTER: u64 = 3;
    /// Heartbeat intervals after which a silent worker is `lost`.
    pub const LOST_AFTER: u64 = 10;

    /// `healthy` within 3 intervals of the last receive, `stale` within 10,
    /// `lost` after.
    pub fn from_age(age_s: f64, interval_s: u64) -> WorkerState {
        let interval = interval_s.max(1) as f64;
        if age_s <= WorkerState::STALE_AFTER as f64 * interval {
            WorkerState::Healthy
        } else if age_s <= WorkerState::LOST_AFTER as f64 * interval {
            WorkerState::Stale
        } else {
            WorkerState::Lost
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WorkerState::Healthy => "healthy",
            WorkerState::Stale => "stale",
            WorkerState::Lost => "lost",
        }
    }
}

/// One worker as the hub sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerView {
    pub worker: String,
    pub host: String,
    pub received_at: DateTime<Utc>,
    pub sent_at: DateTime<Utc>,
    pub state: WorkerState,
    pub config_revision: Option<String>,
    pub in_sync: bool,
    pub agents: Vec<String>,
    pub active_agent: Option<String>,
    pub capabilities: BTreeMap<String, Capability>,
    pub last_failover: Option<Failover>,
    /// When the hub received the heartbeat that carried `last_failover`;
    /// `None` from a hub that does not say (then the view's `received_at`
    /// bounds it). See [`WorkerView::last_failover_at`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failover_received_at: Option<DateTime<Utc>>,
    /// The rungs it left with a failover within the hub's held-off window
    /// and has not run since (docs/hub-api.md, *Headroom*): each with the
    /// newest such failover's time (never after the hub's receipt) and
    /// kind. Empty (left out) from a hub that does not say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_off: Vec<HeldOff>,
    /// Rungs below the active one the worker can still run and that are
    /// not held off now (see docs/hub-api.md, *Headroom*); `None` from a
    /// hub that does not say. 0 with an active agent: one failure from no
    /// route.
    #[serde(default)]
    pub headroom: Option<u32>,
    /// How far the worker's clock is ahead of the hub's, in whole seconds
    /// (`sent_at` less `received_at`; negative: behind); `None` from a hub
    /// that does not say. See [`crate::text::clock_skew`].
    #[serde(default)]
    pub clock_skew_s: Option<i64>,
    /// The pool the worker belongs to (that of the token that first
    /// reported it); `None` from a hub that does not say.
    #[serde(default)]
    pub pool: Option<String>,
    /// The interval the hub told this worker in its last heartbeat's
    /// answer, which its state's thresholds follow (docs/hub-api.md,
    /// *Pacing*); `None` from a hub that does not say: the page's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heartbeat_interval_s: Option<u64>,
    /// Its last heartbeat's `turn` (docs/hub-api.md, *Turns*): `None`, it
    /// reports no turns; `Some(None)`, between turns.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub turn: Option<Option<Turn>>,
    /// Its last heartbeat's `next_turn_agent` (`None`: it reports no turns).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub next_turn_agent: Option<Option<String>>,
    /// In the cohort of the staged rollout baking (told its candidate);
    /// absent (false) otherwise, and from a hub that does not say
    /// (docs/hub-api.md, *Rollouts*).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cohort: bool,
}

/// A rung a worker left with a failover and has not run since, as the
/// hub holds it off (`WorkerView::held_off`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldOff {
    pub agent: String,
    /// The newest failover away from it: the earlier of its `at` and the
    /// hub's receipt.
    pub at: DateTime<Utc>,
    pub kind: CauseKind,
}

impl WorkerView {
    /// The turn it is in, if it says it is in one.
    pub fn in_turn(&self) -> Option<&Turn> {
        self.turn.as_ref()?.as_ref()
    }

    /// Why it does not run `revision` yet (`None`: it runs it); see
    /// [`lag_of`].
    pub fn lag(&self, revision: &str) -> Option<Lag<'_>> {
        lag_of(
            revision,
            self.config_revision.as_deref(),
            self.in_turn().map(|t| (t.agent.as_str(), t.since)),
            self.next_turn_agent.as_ref().and_then(|n| n.as_deref()),
        )
    }

    /// When its last failover happened as far as the hub can tell: the
    /// earlier of its `at` (the worker's claim) and the hub's receipt
    /// (docs/hub-api.md, `last_failover_received_at`). Orders and ages use
    /// this.
    pub fn last_failover_at(&self) -> Option<DateTime<Utc>> {
        let f = self.last_failover.as_ref()?;
        Some(f.at.min(self.last_failover_received_at.unwrap_or(self.received_at)))
    }

    /// Healthy, on a rung, and nothing left below it: the next failure
    /// leaves it with no route.
    pub fn one_failure_from_no_route(&self) -> bool {
        self.state == WorkerState::Healthy
            && self.active_agent.is_some()
            && self.headroom == Some(0)
    }
}

/// One recovery as the hub recorded it: a worker back on a higher rung of
/// the same list revision (its active agent moved up).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryRecord {
    pub seq: u64,
    pub worker: String,
    pub host: String,
    /// The hub's clock when the heartbeat that showed the move arrived.
    pub at: DateTime<Utc>,
    /// The rung it left; `None`: it had no route.
    pub from: Option<String>,
    /// The higher rung it stands on now.
    pub to: String,
    /// How long it was held off `to`: since its failover away from it
    /// within the held-off window (or, when the hub holds none, since the
    /// hub first saw it on `from`).
    pub held_off_s: u64,
}

/// `GET /v1/recoveries` answer (paged as `GET /v1/failovers`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveriesPage {
    pub events: Vec<RecoveryRecord>,
    pub next: u64,
    pub oldest: u64,
}

/// `GET /v1/workers` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkersPage {
    pub now: DateTime<Utc>,
    pub config_revision: String,
    pub heartbeat_interval_s: u64,
    pub cursor: String,
    /// True when `since` was given and honoured: `workers` holds only changes.
    #[serde(default)]
    pub delta: bool,
    pub workers: Vec<WorkerView>,
    /// A window (`sort`, `q`, `limit`, `offset` or `page` asked): the rows
    /// that match `q` in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// A window: the index of its first row in the sorted, filtered list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// A window: the token of the window after it; `None` at the end (and
    /// for a full or delta answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_page: Option<String>,
}

/// The orders of a `/v1/workers` window (docs/hub-api.md, *Windows*).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowSort {
    /// No route (not lost) first, then lost, stale, healthy; the newest
    /// last failover first within each.
    #[default]
    Urgency,
    /// Oldest heartbeat first.
    Age,
    Worker,
    Host,
    /// No route first, then by the active agent's rank.
    Rank,
}

impl WindowSort {
    pub const ALL: [WindowSort; 5] = [
        WindowSort::Urgency,
        WindowSort::Age,
        WindowSort::Worker,
        WindowSort::Host,
        WindowSort::Rank,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            WindowSort::Urgency => "urgency",
            WindowSort::Age => "age",
            WindowSort::Worker => "worker",
            WindowSort::Host => "host",
            WindowSort::Rank => "rank",
        }
    }

    pub fn parse(s: &str) -> Option<WindowSort> {
        WindowSort::ALL.into_iter().find(|w| w.as_str() == s)
    }
}

/// A `/v1/workers` window to ask for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowQuery {
    pub sort: WindowSort,
    /// The filter, in the TUI's language (at most 512 bytes).
    pub q: String,
    /// Rows, 1–10,000.
    pub limit: u32,
    /// Start at this row; `None` with `page`, or from the start.
    pub offset: Option<u64>,
    /// An earlier answer's `next_page`.
    pub page: Option<String>,
}

/// Most rows a window holds.
pub const MAX_WINDOW: u32 = 10_000;
/// Longest filter a window takes, in bytes.
pub const MAX_WINDOW_QUERY: usize = 512;

/// One agent's counts in [`Summary`], over live workers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentSummary {
    pub agent: String,
    /// Binary, token and preflight all fine.
    pub capable: u64,
    /// Running it now.
    pub active: u64,
    pub no_binary: u64,
    pub no_token: u64,
    pub preflight_failed: u64,
    /// Healthy workers running it with nothing left below it.
    pub last_rung: u64,
}

/// Live workers that report one revision (`None`: none reported; the
/// summed rest is named `other`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevisionCount {
    pub revision: Option<String>,
    pub workers: u64,
}

/// `GET /v1/summary` answer (and the `summary` event's data): the fleet's
/// counts as the TUI aggregates them, and its most urgent workers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    pub now: DateTime<Utc>,
    pub config_revision: String,
    pub heartbeat_interval_s: u64,
    pub cursor: String,
    pub workers: u64,
    pub healthy: u64,
    pub stale: u64,
    pub lost: u64,
    pub no_route: u64,
    pub healthy_no_route: u64,
    pub degraded: u64,
    pub out_of_sync: u64,
    pub one_failure_from_no_route: u64,
    pub headroom_known: u64,
    pub agents: Vec<AgentSummary>,
    pub revisions: Vec<RevisionCount>,
    pub urgent: Vec<WorkerView>,
}

/// Most agents a summary lists (the rest are summed as `other`).
pub const MAX_SUMMARY_AGENTS: usize = 256;
/// Most revisions a summary lists (the rest are summed as `other`).
pub const MAX_SUMMARY_REVISIONS: usize = 16;
/// Most urgent workers a summary carries.
pub const MAX_SUMMARY_URGENT: usize = 20;

/// One failover as the hub logged it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailoverRecord {
    pub seq: u64,
    pub worker: String,
    pub host: String,
    pub received_at: DateTime<Utc>,
    #[serde(flatten)]
    pub failover: Failover,
}

impl FailoverRecord {
    /// When it happened as far as the hub can tell: the earlier of the
    /// worker's `at` and the hub's `received_at` (a worker's clock ahead
    /// cannot date a failover in the future). Every order, window and age
    /// uses it; `at` stays the worker's claim.
    pub fn seen_at(&self) -> DateTime<Utc> {
        self.failover.at.min(self.received_at)
    }
}

/// A failover's `at` and the hub's receipt this many seconds apart or
/// fewer either way are one moment: the heartbeat's time in flight and its
/// interval (as `text::CLOCK_SKEW_SHOWN_PAST_S` for a worker's clock).
pub const RECEIPT_SLACK_S: i64 = 60;

/// How far a failover's `at` claims to be after the hub received it, in
/// whole seconds, past [`RECEIPT_SLACK_S`]; `None` otherwise.
pub fn claimed_ahead_s(at: DateTime<Utc>, received_at: DateTime<Utc>) -> Option<i64> {
    let s = (at - received_at).num_seconds();
    (s > RECEIPT_SLACK_S).then_some(s)
}

/// Whether a failover at `at` reached the hub long after it: more than
/// [`RECEIPT_SLACK_S`] before its receipt (a
/// back-filled past, a worker that could not report). The hub was not
/// hearing from the worker then, so a recovery in between (stamped by the
/// hub's clock) could not be recorded.
pub fn received_late(at: DateTime<Utc>, received_at: DateTime<Utc>) -> bool {
    (received_at - at).num_seconds() > RECEIPT_SLACK_S
}

/// `GET /v1/failovers` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailoversPage {
    pub events: Vec<FailoverRecord>,
    /// Pass as `since` to get what comes after this page.
    pub next: u64,
    /// The oldest seq the hub still holds (0 when the log is empty).
    pub oldest: u64,
}

/// `PUT /v1/config` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigAccepted {
    pub revision: String,
    pub agents: Vec<String>,
}

/// One revision of the list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub revision: String,
    pub at: DateTime<Utc>,
    pub by: String,
    pub agents: Vec<String>,
    pub previous_agents: Vec<String>,
    /// The writing client, from the request's `User-Agent` (scrubbed, at
    /// most 64 characters): owners who share a token are told apart by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

/// `GET /v1/config/history` answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct History {
    pub revisions: Vec<HistoryEntry>,
}

/// The kinds of `GET /v1/events` that `?types=` can ask for (`reset` is
/// always sent). `state` and `sync` carry the worker's view, as `heartbeat`
/// does: `state` when the hub's sweeper moves it to `stale` or `lost`,
/// `sync` when a new revision flips its `in_sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    Heartbeat,
    Failover,
    Config,
    State,
    Sync,
    Recovery,
    /// The fleet's [`Summary`], at most once a second when it changed;
    /// only when `types=` names it.
    Summary,
    /// A step of a staged rollout (`crate::rollout::wire::RolloutEvent`):
    /// started, waiting, promoted, halted, aborted; never coalesced.
    Rollout,
    /// Something on disk the owner must look at ([`ProblemEvent`]): a hand
    /// edit the hub kept aside; never coalesced.
    Problem,
}

impl EventKind {
    pub const ALL: [EventKind; 9] = [
        EventKind::Heartbeat,
        EventKind::Failover,
        EventKind::Config,
        EventKind::State,
        EventKind::Sync,
        EventKind::Recovery,
        EventKind::Summary,
        EventKind::Rollout,
        EventKind::Problem,
    ];

    /// The `event:` name on the stream.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Heartbeat => "heartbeat",
            EventKind::Failover => "failover",
            EventKind::Config => "config",
            EventKind::State => "state",
            EventKind::Sync => "sync",
            EventKind::Recovery => "recovery",
            EventKind::Summary => "summary",
            EventKind::Rollout => "rollout",
            EventKind::Problem => "problem",
        }
    }

    /// The names, comma-separated, for error messages.
    pub fn names() -> String {
        EventKind::ALL.map(EventKind::as_str).join(", ")
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for EventKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EventKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown event type {s:?} ({})", EventKind::names()))
    }
}

/// `event: config` data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigEvent {
    pub revision: String,
    pub at: DateTime<Utc>,
    pub by: String,
    pub agents: Vec<String>,
}

/// `event: problem` data: something on disk the owner must look at, said
/// when the hub finds it (`/v1/health` says it too, while it lasts).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProblemEvent {
    pub at: DateTime<Utc>,
    /// What kind: `hand_edit_kept` (a hand edit a config write swapped
    /// out, kept aside as `path`); sent to a subscriber on connect, each of
    /// the problems health says (`crate::hub::problems`), also `config`,
    /// `database_unavailable`, `database_recreated`, `database_damaged`,
    /// `database_corrupt`, `database_place`, `database_quick_check`.
    pub kind: String,
    /// The file it is about.
    pub path: String,
    /// The sentence, as health says it.
    pub message: String,
}

/// The header of `GET /v1/config` that carries [`ConfigInvalid`].
pub const CONFIG_INVALID_HEADER: &str = "macfleet-config-invalid";

/// Why the config document on disk is not in force: `GET /v1/health`'s
/// `config.invalid`, and the `Macfleet-Config-Invalid` header of
/// `GET /v1/config`. The message names the error, never a snippet of the
/// text; `line` and `column` (1-based, the column in characters) are there
/// when the error has a place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigInvalid {
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
}

impl ConfigInvalid {
    /// The longest message a client keeps from the header (the rest is cut).
    pub const MAX_MESSAGE: usize = 1024;

    /// Read a `Macfleet-Config-Invalid` header value (`line=L; column=C;
    /// message="..."`, `line` and `column` optional). `None` when it is not
    /// of that shape; a message longer than [`Self::MAX_MESSAGE`] is cut.
    pub fn from_header(v: &str) -> Option<ConfigInvalid> {
        let mut rest = v.trim_start();
        let (mut line, mut column) = (None, None);
        loop {
            if let Some(r) = rest.strip_prefix("line=") {
                let (n, r) = r.split_once(';')?;
                line = Some(n.trim().parse().ok()?);
                rest = r.trim_start();
            } else if let Some(r) = rest.strip_prefix("column=") {
                let (n, r) = r.split_once(';')?;
                column = Some(n.trim().parse().ok()?);
                rest = r.trim_start();
            } else {
                break;
            }
        }
        let quoted = rest.strip_prefix("message=\"")?;
        let mut message = String::new();
        let mut chars = quoted.chars();
        for kept in 0.. {
            if kept == Self::MAX_MESSAGE {
                message.push('…');
                break;
            }
            match chars.next()? {
                '"' => break,
                '\\' => message.push(chars.next()?),
                c => message.push(c),
            }
        }
        Some(ConfigInvalid {
            message,
            line,
            column,
        })
    }

    /// `line 2, column 31` (or what of it is known), for a sentence.
    pub fn place(&self) -> Option<String> {
        match (self.line, self.column) {
            (Some(l), Some(c)) => Some(format!("line {l}, column {c}")),
            (Some(l), None) => Some(format!("line {l}")),
            _ => None,
        }
    }
}

/// Where the list the hub projects to every worker comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderSource {
    /// The document on disk, which validates.
    Document,
    /// The last accepted list (in the database): the document on disk does
    /// not validate.
    LastAccepted,
    /// [`KNOWN_AGENTS`]: no list was ever accepted and the document has
    /// none that validates.
    BuiltIn,
}

/// `GET /v1/health` with `Accept: application/json`. A client reads
/// `status`, `problems` (sentences to show as they are), `built_in_order`
/// and `config`; an older hub's answer has only `status` and `database`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// `ok` or `degraded`.
    pub status: String,
    #[serde(default)]
    pub problems: Vec<String>,
    /// Every worker is given the built-in order (`config.order` is
    /// `built_in`).
    #[serde(default)]
    pub built_in_order: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<HealthConfig>,
    pub database: HealthDatabase,
    /// The status word as the hub can know it (`crate::verdict`'s
    /// `Display`: `CONFIG INVALID`, `BUILT-IN ORDER`, `AT RISK 40`, …),
    /// added to the JSON by the handler; `None` from an older hub. The TUI
    /// takes the words only the hub can know from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub word: Option<String>,
}

/// The config part of [`Health`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthConfig {
    pub order: OrderSource,
    /// The revision workers are told (`built-in` for the built-in order).
    pub projected_revision: String,
    /// The agents workers are told.
    pub agents: Vec<String>,
    /// Why the document on disk is not in force (`null` when it is).
    pub invalid: Option<ConfigInvalid>,
}

/// The database part of [`Health`]: counts only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthDatabase {
    pub unreadable_rows_skipped: u64,
    pub started_empty: bool,
    /// Problems SQLite's `quick_check` found at start (damaged pages).
    #[serde(default)]
    pub quick_check_problems: u64,
    /// Times the file was found removed or replaced while the hub ran and
    /// made afresh at its path (the history and the failover log began
    /// afresh then), and when it last was.
    #[serde(default)]
    pub recreated: u64,
    #[serde(default)]
    pub recreated_at: Option<DateTime<Utc>>,
    /// The database cannot be opened at its path now: heartbeats with
    /// failovers get 503 `database_unavailable`.
    #[serde(default)]
    pub unavailable: bool,
    /// Failover records each pool lost to the log's bound while it held
    /// more than its fair share (its own oldest first); pools that lost
    /// none are not listed.
    #[serde(default)]
    pub failovers_dropped: BTreeMap<String, u64>,
}

/// The JSON error body: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_revision: Option<String>,
}

/// What is wrong with a value that came over the wire.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct Invalid {
    pub field: String,
    pub problem: String,
}

fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Invalid {
    Invalid {
        field: field.into(),
        problem: problem.into(),
    }
}

/// `^[a-z][a-z0-9_-]{0,31}$`
pub fn is_agent_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 32
        && b[0].is_ascii_lowercase()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_' || *c == b'-')
}

/// Worker ids: 1 to 128 of `[A-Za-z0-9._:-]`, starting alphanumeric (UUIDs fit).
pub fn is_worker_id(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_WORKER_ID
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'))
}

/// Host names: 1 to 253 of `[A-Za-z0-9._-]`, starting alphanumeric.
pub fn is_host(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= MAX_HOST
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

/// Revisions the hub hands out are short and printable; a worker echoes one.
fn is_revision(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// An id that free text would not flag but that no fleet names a worker
/// or host by: a secret's key word with a value after it
/// (`password.hunter2`, `api-key-X`, `token:X`), or a run of 32 or more
/// characters of the token alphabet mixing upper case, lower case and
/// digits, or 40 or more mixing both cases (a macfleet token's body
/// without its `mft_`, a provider key without its prefix). Host names are
/// lower case, pod and instance ids hex or lower case: none of them mixes
/// the cases over 32 characters.
pub fn id_secret_shaped(s: &str) -> bool {
    // Words that name nothing but a secret take any separator; words a
    // service may well be named by (`token-refresher-3`, `secret-store`)
    // only `:`, the one separator of the id alphabet that reads as "is".
    const ANY: [&str; 5] = ["password", "passwd", "apikey", "api-key", "api_key"];
    const COLON: [&str; 4] = ["token", "secret", "pwd", "creds"];
    let lower = s.to_ascii_lowercase();
    let b = lower.as_bytes();
    let keyed = |w: &str, seps: &[u8]| {
        let mut from = 0;
        while let Some(i) = lower[from..].find(w) {
            let at = from + i;
            let end = at + w.len();
            let starts_segment = at == 0 || !b[at - 1].is_ascii_alphanumeric();
            let rest = &b[end..];
            if starts_segment
                && rest.len() >= 2
                && seps.contains(&rest[0])
                && rest[1..].iter().any(u8::is_ascii_alphanumeric)
            {
                return true;
            }
            from = end;
        }
        false
    };
    if ANY.iter().any(|w| keyed(w, b"._:-")) || COLON.iter().any(|w| keyed(w, b":")) {
        return true;
    }
    let long_run = s
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .any(|run| {
            // A 43-character token body lacks a digit once in 1,400
            // bodies: past 40 characters both cases are enough.
            run.len() >= 32
                && run.bytes().any(|b| b.is_ascii_uppercase())
                && run.bytes().any(|b| b.is_ascii_lowercase())
                && (run.len() >= 40 || run.bytes().any(|b| b.is_ascii_digit()))
        });
    // A key cut into pieces under 32 by `.` or `:` (`<31>.<31>`): a piece
    // of 20 or more mixing upper case, lower case and digits that is not
    // words (`ProductionWorker2024` is).
    long_run
        || s.split(|c: char| !c.is_ascii_alphanumeric()).any(|seg| {
            seg.len() >= 20
                && seg.bytes().any(|b| b.is_ascii_uppercase())
                && seg.bytes().any(|b| b.is_ascii_lowercase())
                && seg.bytes().any(|b| b.is_ascii_digit())
                && !camel_words(seg)
        })
}

/// Whether `seg` reads as camel-case words and numbers: every run of
/// letters is a capital and lower case, lower case, or capitals, of three
/// letters or more (`ProductionWorker2024`, `GPUNode17`). A random run has
/// one- and two-letter humps.
fn camel_words(seg: &str) -> bool {
    let b = seg.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i].is_ascii_digit() {
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            continue;
        }
        if b[i].is_ascii_uppercase() && b.get(i + 1).is_some_and(u8::is_ascii_lowercase) {
            i += 1;
            while i < b.len() && b[i].is_ascii_lowercase() {
                i += 1;
            }
        } else if b[i].is_ascii_uppercase() {
            while i < b.len()
                && b[i].is_ascii_uppercase()
                && !b.get(i + 1).is_some_and(u8::is_ascii_lowercase)
            {
                i += 1;
            }
            // `GPUNode`: the last capital starts the next word.
            if i == start {
                i += 1;
            }
        } else {
            while i < b.len() && b[i].is_ascii_lowercase() {
                i += 1;
            }
        }
        if i - start < 3 {
            return false;
        }
    }
    true
}

/// The field name is built only on failure: validation runs on every
/// heartbeat and must not allocate when all is well.
fn check_agent(field: impl FnOnce() -> String, name: &str) -> Result<(), Invalid> {
    if is_agent_name(name) {
        no_secret(field, name)
    } else {
        Err(invalid(
            field(),
            "agent names match ^[a-z][a-z0-9_-]{0,31}$".to_string(),
        ))
    }
}

impl Cause {
    pub fn validate(&self, field: &str) -> Result<(), Invalid> {
        if self.kind.takes_status() && self.status.is_none() {
            return Err(invalid(
                format!("{field}.status"),
                format!("{} carries the HTTP status the router saw", self.kind),
            ));
        }
        if let Some(status) = self.status {
            if !(100..=599).contains(&status) {
                return Err(invalid(
                    format!("{field}.status"),
                    "an HTTP status is 100 to 599",
                ));
            }
        }
        if let Some(detail) = &self.detail {
            if detail.chars().count() > MAX_DETAIL_CHARS {
                return Err(invalid(
                    format!("{field}.detail"),
                    format!("at most {MAX_DETAIL_CHARS} characters"),
                ));
            }
            if detail.chars().any(|c| c.is_control() && c != '\t') {
                return Err(invalid(
                    format!("{field}.detail"),
                    "control characters are not allowed",
                ));
            }
        }
        Ok(())
    }
}

impl Failover {
    pub fn validate(&self, field: &str) -> Result<(), Invalid> {
        if self.id.is_empty()
            || self.id.len() > MAX_FAILOVER_ID
            || !self
                .id
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b':' | b'-'))
        {
            return Err(invalid(
                format!("{field}.id"),
                "1 to 128 of [A-Za-z0-9._:-]",
            ));
        }
        no_secret(|| format!("{field}.id"), &self.id)?;
        check_agent(|| format!("{field}.from"), &self.from)?;
        if let Some(to) = &self.to {
            check_agent(|| format!("{field}.to"), to)?;
            if to == &self.from {
                return Err(invalid(format!("{field}.to"), "equals from"));
            }
        }
        self.cause.validate(&format!("{field}.cause"))
    }
}

impl Heartbeat {
    /// What the hub checks before it stores anything, but the times.
    pub fn validate(&self) -> Result<(), Invalid> {
        validate_heartbeat(HeartbeatFields {
            worker: &self.worker,
            host: &self.host,
            config_revision: self.config_revision.as_deref(),
            agents: self.agents.iter().map(String::as_str),
            active_agent: self.active_agent.as_deref(),
            capabilities: self.capabilities.keys().map(String::as_str),
            failovers: &self.failovers,
            turn: self
                .turn
                .as_ref()
                .and_then(Option::as_ref)
                .map(|t| (t.agent.as_str(), t.since)),
            sent_at: self.sent_at,
            next_turn_agent: self.next_turn_agent.as_deref(),
        })
    }

    /// Everything the hub checks before it stores anything, its times
    /// judged by `now`.
    pub fn validate_at(&self, now: DateTime<Utc>) -> Result<(), Invalid> {
        self.validate()?;
        let since = self.turn.as_ref().and_then(Option::as_ref).map(|t| t.since);
        check_heartbeat_times(self.sent_at, &self.failovers, since, now)
    }
}

/// A heartbeat's fields as borrowed text, whatever holds them: the wire type
/// above, or the hub's allocation-free parse of a request body. Both are
/// checked by [`validate_heartbeat`], so the two cannot accept different
/// heartbeats.
pub struct HeartbeatFields<'a, A, C> {
    pub worker: &'a str,
    pub host: &'a str,
    pub config_revision: Option<&'a str>,
    /// The listed agents, in order.
    pub agents: A,
    pub active_agent: Option<&'a str>,
    /// The capability map's keys (distinct).
    pub capabilities: C,
    pub failovers: &'a [Failover],
    /// The turn's agent and start, when the worker is in one.
    pub turn: Option<(&'a str, DateTime<Utc>)>,
    pub sent_at: DateTime<Utc>,
    pub next_turn_agent: Option<&'a str>,
}

/// Names and ids are published to every viewer as they are (scrubbing an
/// id would merge two workers): one shaped like a credential (`ghp_…` fits
/// the worker-id charset) is refused, not stored.
fn no_secret(field: impl FnOnce() -> String, value: &str) -> Result<(), Invalid> {
    if crate::scrub::contains_secret(value) || id_secret_shaped(value) {
        Err(invalid(
            field(),
            "looks like a credential; ids and names are shown to every viewer",
        ))
    } else {
        Ok(())
    }
}

/// Everything the hub checks before it stores a heartbeat.
pub fn validate_heartbeat<'a, A, C>(h: HeartbeatFields<'a, A, C>) -> Result<(), Invalid>
where
    A: ExactSizeIterator<Item = &'a str>,
    C: ExactSizeIterator<Item = &'a str>,
{
    if !is_worker_id(h.worker) {
        return Err(invalid("worker", "1 to 128 of [A-Za-z0-9._:-]"));
    }
    no_secret(|| "worker".into(), h.worker)?;
    if !is_host(h.host) {
        return Err(invalid("host", "1 to 253 of [A-Za-z0-9._-]"));
    }
    no_secret(|| "host".into(), h.host)?;
    if let Some(rev) = h.config_revision {
        // Its charset only: the hub keeps it only when it issued it, so it
        // is checked against those, never by the scrubber's guesses.
        if !is_revision(rev) {
            return Err(invalid("config_revision", "not a revision"));
        }
    }
    if h.agents.len() > MAX_AGENTS {
        return Err(invalid("agents", format!("at most {MAX_AGENTS}")));
    }
    for (i, a) in h.agents.enumerate() {
        check_agent(|| format!("agents[{i}]"), a)?;
    }
    if let Some(active) = h.active_agent {
        check_agent(|| "active_agent".into(), active)?;
    }
    if h.capabilities.len() > MAX_AGENTS {
        return Err(invalid("capabilities", format!("at most {MAX_AGENTS}")));
    }
    for name in h.capabilities {
        check_agent(|| "capabilities".into(), name)?;
    }
    if h.failovers.len() > MAX_FAILOVERS_PER_HEARTBEAT {
        return Err(invalid(
            "failovers",
            format!("at most {MAX_FAILOVERS_PER_HEARTBEAT} per heartbeat"),
        ));
    }
    for (i, f) in h.failovers.iter().enumerate() {
        f.validate(&format!("failovers[{i}]"))?;
    }
    if let Some((agent, since)) = h.turn {
        check_agent(|| "turn.agent".into(), agent)?;
        if h.active_agent != Some(agent) {
            return Err(invalid(
                "turn.agent",
                "a turn runs on the active agent (a worker with no route is in no turn)",
            ));
        }
        if since > h.sent_at {
            return Err(invalid("turn.since", "after sent_at"));
        }
    }
    if let Some(next) = h.next_turn_agent {
        check_agent(|| "next_turn_agent".into(), next)?;
    }
    Ok(())
}

/// A time a worker sent must lie within [`MAX_BEHIND_S`] before and
/// [`MAX_AHEAD_S`] after `now`, the hub's clock. Besides refusing nonsense,
/// this keeps every stored time inside years 1 to 9999 in UTC, the only
/// ones RFC 3339 can write and read back (`9999-12-31T23:59:59-23:59` is
/// year 10000 in UTC).
pub fn check_time(
    field: impl FnOnce() -> String,
    t: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<(), Invalid> {
    let ahead = t.signed_duration_since(now).num_seconds();
    if ahead > MAX_AHEAD_S {
        return Err(invalid(
            field(),
            format!(
                "more than {} hours ahead of the hub's clock",
                MAX_AHEAD_S / 3600
            ),
        ));
    }
    if -ahead > MAX_BEHIND_S {
        return Err(invalid(
            field(),
            format!(
                "more than {} days behind the hub's clock",
                MAX_BEHIND_S / 86_400
            ),
        ));
    }
    Ok(())
}

/// The times of a heartbeat, judged by the hub's clock `now`.
pub fn check_heartbeat_times(
    sent_at: DateTime<Utc>,
    failovers: &[Failover],
    turn_since: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(), Invalid> {
    check_time(|| "sent_at".into(), sent_at, now)?;
    if let Some(since) = turn_since {
        check_time(|| "turn.since".into(), since, now)?;
    }
    for (i, f) in failovers.iter().enumerate() {
        check_time(|| format!("failovers[{i}].at"), f.at, now)?;
    }
    Ok(())
}

/// RFC 3339 with whole seconds and `Z`, as the contract writes times.
pub fn fmt_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod id_tests {
    use super::id_secret_shaped;

    #[test]
    fn ids_shaped_like_secrets_are_told_from_fleet_names() {
        // A token body as `macfleet hub token` makes them, without `mft_`.
        let body = crate::hub::auth::generate_token()
            .trim_start_matches("mft_")
            .to_string();
        let hidden = [
            body.clone(),
            format!("w-{body}"),
            "password.hunter2".to_string(),
            "db-password-x7".to_string(),
            "api-key-42".to_string(),
            "API_KEY.abc".to_string(),
            "token:abc123".to_string(),
        ];
        for id in &hidden {
            assert!(id_secret_shaped(id), "{id} passed as an id");
        }
        let kept = [
            "w-00017",
            "gpu-node-17.example.internal",
            "worker-7d9f8b6c5-x2x4q",
            "token-refresher-3",
            "secret-store-1",
            "3f2b9c1e-8a4d-4e2b-9c1a-2b3c4d5e6f70",
            "i-0abcdef1234567890",
            "mac-mini-42.local",
            "passwords-team-box",
            "ip-10-0-12-34.eu-west-1.compute.internal",
        ];
        for id in kept {
            assert!(!id_secret_shaped(id), "{id} refused");
        }
    }

    /// Issue 29's names: a secret's name glued to a value, an account
    /// number, a balance, and a key cut into pieces under 32 characters by
    /// `.` or `:`. Each is refused as the hub refuses every id and name
    /// (`no_secret`: free-text detection or the id shapes), and ordinary
    /// fleet names still pass.
    #[test]
    fn secret_names_and_split_keys_are_refused_and_fleet_names_pass() {
        let refused_by = |id: &str| crate::scrub::contains_secret(id) || id_secret_shaped(id);
        // Random text built at run time: never a literal secret.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut pick = |n: usize, set: &[u8]| -> String {
            (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    set[(x % set.len() as u64) as usize] as char
                })
                .collect()
        };
        const B62: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        const DIGITS: &[u8] = b"0123456789";
        let mixed = |s: String| format!("aQ3{s}");
        let split = format!("{}.{}", mixed(pick(28, B62)), mixed(pick(28, B62)));
        let split_colon = format!("{}:{}", mixed(pick(28, B62)), mixed(pick(28, B62)));
        let hidden = [
            format!("token_{}", mixed(pick(17, B62))),
            format!("secret-{}", mixed(pick(17, B62))),
            format!("db-pass-{}", mixed(pick(9, B62))),
            format!("account-{}", pick(12, DIGITS)),
            "balance-12.40".to_string(),
            "credit-left-12.40-USD".to_string(),
            split,
            split_colon,
        ];
        for id in &hidden {
            assert!(refused_by(id), "{id} passed as an id");
        }
        for id in [
            "w-00042",
            "node-0005",
            "opencode",
            "claude-code",
            "codex",
            "f-1",
            "fo-2026-12-01T21:00:00Z-3",
            "01JF3K8ZQ6W9XGJ5T2M4N7P8RS",
            "3f2b9c1e-8a4d-4e2b-9c1a-2b3c4d5e6f70",
            "token-refresher-3",
            "secret-store-1",
            "account-service-2",
            "balance-worker-1",
            "passwords-team-box",
            "ProductionWorker2024.fleet.internal",
            "Johns-MacBook-Pro.local",
            "worker-7d9f8b6c5-x2x4q",
            "i-0abcdef1234567890",
        ] {
            assert!(!refused_by(id), "{id} refused");
        }
    }
}

/// `POST /v1/plan` body: the order to judge, rank 0 first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanRequest {
    pub agents: Vec<String>,
}

/// One rung of a plan: healthy workers on it before (under the hub's list
/// now) and after (under the asked order).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanRung {
    pub agent: String,
    /// Rank in the asked order; `null`: the order removes it.
    pub rank: Option<usize>,
    /// Rank in the hub's list now; `null`: the order adds it.
    pub old_rank: Option<usize>,
    /// Healthy workers that report they can run it.
    pub can: usize,
    pub before: usize,
    pub after: usize,
    /// Healthy workers that reach it without having reported a capability
    /// for it (assumed to pass it by).
    pub unreported: usize,
}

/// Healthy workers with no route, before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BeforeAfter {
    pub before: usize,
    pub after: usize,
}

/// `POST /v1/plan` answer: what the asked order would do over the whole
/// fleet, from the projection the TUI draws (`plan::project`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanAnswer {
    /// The revision whose list the plan is judged against.
    pub config_revision: String,
    /// That list (the hub's now).
    pub current_agents: Vec<String>,
    /// The asked order.
    pub agents: Vec<String>,
    /// Workers the hub holds, and of them healthy.
    pub workers: usize,
    pub healthy: usize,
    /// The asked order's rungs in rank order, then those it removes.
    pub rungs: Vec<PlanRung>,
    /// Healthy workers that would stand on another rung.
    pub change_rung: usize,
    pub no_route: BeforeAfter,
    /// What the owner should see before writing the order, as sentences.
    pub warnings: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hub indexes its `?types=` filter by `kind as usize`.
    #[test]
    fn event_kinds_index_their_own_list_and_parse_their_names() {
        for (i, k) in EventKind::ALL.into_iter().enumerate() {
            assert_eq!(k as usize, i);
            assert_eq!(k.as_str().parse::<EventKind>(), Ok(k));
        }
        assert!("stale".parse::<EventKind>().is_err());
    }

    fn sample() -> Heartbeat {
        serde_json::from_str(
            r#"{
  "worker": "w-017", "host": "gpu-node-17", "sent_at": "2026-11-29T15:04:05Z",
  "config_revision": "r42", "agents": ["opencode", "claude"], "active_agent": "claude",
  "capabilities": {
    "opencode": {"binary": true, "token": true, "preflight": "ok"},
    "claude":   {"binary": true, "token": true, "preflight": "ok"}
  },
  "failovers": [{"id": "w-017-000193", "at": "2026-11-29T15:03:58Z", "from": "opencode",
     "to": "claude", "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router",
     "detail": "opencode route: 429 from upstream"}}]
}"#,
        )
        .expect("the contract's own example parses")
    }

    #[test]
    fn contract_example_parses_and_validates() {
        let hb = sample();
        hb.validate().expect("valid");
        assert_eq!(hb.failovers[0].cause.kind, CauseKind::RateLimited);
        assert_eq!(hb.failovers[0].cause.status, Some(429));
    }

    #[test]
    fn unknown_cause_kind_is_rejected() {
        let text = serde_json::to_string(&sample())
            .expect("serialises")
            .replace("rate_limited", "transcript_said_so");
        assert!(serde_json::from_str::<Heartbeat>(&text).is_err());
    }

    #[test]
    fn validation_bounds() {
        let mut hb = sample();
        hb.failovers[0].cause.detail = Some("x".repeat(201));
        assert_eq!(
            hb.validate().expect_err("too long").field,
            "failovers[0].cause.detail"
        );
        let mut hb = sample();
        hb.failovers[0].cause.status = None;
        assert_eq!(
            hb.validate()
                .expect_err("rate_limited needs its status")
                .field,
            "failovers[0].cause.status"
        );
        let mut hb = sample();
        hb.failovers[0].cause.status = Some(42);
        assert!(hb.validate().is_err());
        let mut hb = sample();
        hb.worker = "w 1".into();
        assert!(hb.validate().is_err());
        let mut hb = sample();
        hb.worker = "5f0c6d1e-8a7b-4c3d-9e2f-1a2b3c4d5e6f".into();
        hb.validate().expect("uuid worker ids are fine");
        let mut hb = sample();
        hb.agents.push("Claude".into());
        assert!(hb.validate().is_err());
    }

    #[test]
    fn times_are_judged_by_the_hubs_clock() {
        let now: DateTime<Utc> = "2026-11-30T12:00:00Z".parse().expect("time");
        let mut hb = sample();
        hb.sent_at = now;
        hb.failovers[0].at = now - chrono::Duration::days(7);
        hb.validate_at(now).expect("a week back is fine");
        hb.failovers[0].at = now + chrono::Duration::seconds(MAX_AHEAD_S);
        hb.validate_at(now).expect("the skew bound itself is fine");
        // The issue's poison: both parse, both land outside year 1..9999.
        for bad in ["9999-12-31T23:59:59-23:59", "0000-01-01T00:00:00+23:59"] {
            hb.failovers[0].at = DateTime::parse_from_rfc3339(bad)
                .expect("chrono parses it")
                .with_timezone(&Utc);
            let e = hb.validate_at(now).expect_err(bad);
            assert_eq!(e.field, "failovers[0].at", "{bad}");
            assert!(hb.validate().is_ok(), "validate() leaves times alone");
        }
        hb.failovers[0].at = now;
        hb.sent_at = now + chrono::Duration::seconds(MAX_AHEAD_S + 1);
        assert_eq!(hb.validate_at(now).expect_err("ahead").field, "sent_at");
        hb.sent_at = now - chrono::Duration::seconds(MAX_BEHIND_S + 1);
        assert_eq!(hb.validate_at(now).expect_err("behind").field, "sent_at");
    }

    #[test]
    fn agent_names() {
        assert!(is_agent_name("opencode"));
        assert!(is_agent_name("a"));
        assert!(is_agent_name(&format!("a{}", "b".repeat(31))));
        assert!(!is_agent_name(&format!("a{}", "b".repeat(32))));
        assert!(!is_agent_name("9lives"));
        assert!(!is_agent_name(""));
        assert!(!is_agent_name("claude code"));
    }

    #[test]
    fn state_from_age() {
        assert_eq!(WorkerState::from_age(29.0, 10), WorkerState::Healthy);
        assert_eq!(WorkerState::from_age(31.0, 10), WorkerState::Stale);
        assert_eq!(WorkerState::from_age(101.0, 10), WorkerState::Lost);
    }
}
