//! The reference hub: every line of the hub API v1 (`docs/hub-api.md`).
//!
//! - `auth`: tokens (hashed) and roles;
//! - `store`: the owner's TOML file, replaced durably;
//! - `db`: history and failover log in SQLite, written in batches;
//! - `disk`: the document on disk judged, and watched for hand edits;
//! - `worker`: one worker as held (`Stored`, sharing a `Profile`);
//! - `fleet`: every worker's last heartbeat, in memory, with change cursors;
//! - `window`: `/v1/workers` sorted, filtered and paged on the hub;
//! - `pacing`: the interval told grows with the fleet (`--max-heartbeats-per-second`);
//! - `summary`: `GET /v1/summary`, kept as workers change;
//! - `events`: the SSE feed with resume;
//! - `streams`: caps on open event streams;
//! - `rollout`: the staged rollout wired in (issue 33);
//! - `domain`: what the hub does (replace the config, take in a heartbeat);
//! - `api`: the HTTP routes, translating to and from `domain`;
//! - `serve`: the accept loop, with the connection bounds.

pub mod api;
pub mod auth;
pub mod db;
pub mod disk;
pub mod domain;
pub mod events;
pub mod fleet;
pub mod guard_counts;
pub mod ingest;
pub mod metrics;
pub mod pacing;
pub mod place;
pub mod plan;
pub mod prefetch;
pub mod problems;
pub mod recovery;
pub mod repeats;
pub mod rollout;
pub mod room;
pub mod serve;
pub mod store;
pub mod streams;
pub mod summarize;
pub mod summary;
pub mod tls;
pub mod window;
pub mod worker;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::Utc;
use color_eyre::eyre::{Context, Result, bail};

use crate::wire::{
    ConfigEvent, ConfigInvalid, Health, HealthConfig, HealthDatabase, HistoryEntry, KNOWN_AGENTS,
    OrderSource, Projection,
};

// The fleet's sizing is the contract's (a client bounds a workers page by
// the default cap), so it lives with the wire types; the hub's names stay.
pub use crate::wire::{
    DEFAULT_MAX_WORKERS, DEFAULT_MEMORY_BUDGET, LARGEST_WORKER_BYTES, WORKERS_BASE_BYTES,
    max_workers_for,
};

/// A size as `--memory-budget` takes it: a whole number of bytes, or with
/// `KiB`, `MiB` or `GiB` (1024-based; `K`, `M`, `G` the same), room for
/// at least one largest worker.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?} is not a size (like 512MiB, 2GiB)"))?;
    let per: u64 = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" => 1 << 10,
        "M" | "MiB" => 1 << 20,
        "G" | "GiB" => 1 << 30,
        _ => return Err(format!("{s:?}: the unit is B, KiB, MiB or GiB")),
    };
    let bytes = n
        .checked_mul(per)
        .ok_or_else(|| format!("{s:?} is too large"))?;
    let least = WORKERS_BASE_BYTES + LARGEST_WORKER_BYTES;
    if bytes < least {
        return Err(format!(
            "{s:?}: at least {} KiB (room for one worker of the largest shape)",
            least / 1024
        ));
    }
    Ok(bytes)
}

/// How to run a hub.
#[derive(Debug, Clone)]
pub struct HubOptions {
    pub config: PathBuf,
    /// The tokens at start; the live table is [`Hub::tokens`].
    pub tokens: auth::Tokens,
    /// The tokens file SIGHUP rereads (`None`: the table never changes).
    pub tokens_file: Option<PathBuf>,
    pub listen: SocketAddr,
    pub name: String,
    /// Where the history and the failover log live; default beside the
    /// config, `<config stem>.db`.
    pub db: Option<PathBuf>,
    pub heartbeat_interval_s: u64,
    /// Most heartbeats a second the hub paces its fleet to
    /// (`--max-heartbeats-per-second`): the interval it tells grows past
    /// `heartbeat_interval_s` beyond `workers / this`.
    pub max_heartbeats_per_second: u64,
    pub keepalive: Duration,
    pub bounds: db::Bounds,
    /// Events kept for `Last-Event-ID` resume.
    pub event_ring: usize,
    pub allow_plaintext: bool,
    /// PEM certificate chain and key: serve HTTPS.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Connection bounds: cap, head and body timeouts.
    pub limits: serve::Limits,
    /// Most workers the hub holds; a heartbeat from a new worker past it
    /// is refused (503 `fleet_full`).
    pub max_workers: usize,
    /// A worker not heard from for this long is forgotten.
    pub evict_after: Duration,
    /// Event-stream bounds: caps and each subscriber's buffer.
    pub streams: api::StreamLimits,
    /// Watch the config file for hand edits (on by default; tests turn it
    /// off to see the byte compare before a write alone).
    pub watch_config: bool,
    /// A failover older than this no longer holds its rung off when
    /// headroom is judged (`--held-off-window`, default 1 h).
    pub held_off_window: Duration,
    /// Directories a config that is a symlink may point into, beside its
    /// own (`--config-link-dir`): a link to anywhere else is not taken.
    pub config_link_dirs: Vec<PathBuf>,
    /// The rollout guard's margins and minimum counts (docs/rollout.md,
    /// *The guard*; tests shorten the time a failover rate needs).
    pub guard: crate::rollout::Policy,
}

impl HubOptions {
    pub fn new(config: PathBuf, tokens: auth::Tokens) -> HubOptions {
        HubOptions {
            config,
            tokens,
            tokens_file: None,
            listen: SocketAddr::from(([127, 0, 0, 1], 7878)),
            name: "macfleet-hub".into(),
            db: None,
            heartbeat_interval_s: 10,
            max_heartbeats_per_second: pacing::DEFAULT_MAX_HEARTBEATS_PER_SECOND,
            keepalive: Duration::from_secs(15),
            bounds: db::Bounds::default(),
            event_ring: 100_000,
            allow_plaintext: false,
            tls: None,
            limits: serve::Limits::default(),
            streams: api::StreamLimits::default(),
            max_workers: DEFAULT_MAX_WORKERS,
            evict_after: Duration::from_secs(24 * 60 * 60),
            watch_config: true,
            held_off_window: fleet::DEFAULT_HELD_OFF_WINDOW,
            config_link_dirs: Vec::new(),
            guard: crate::rollout::Policy::default(),
        }
    }

    pub fn db_path(&self) -> PathBuf {
        self.db
            .clone()
            .unwrap_or_else(|| self.config.with_extension("db"))
    }
}

/// The document as it stands on disk and what every worker is told. The
/// two part when the document on disk does not validate: it is served as
/// it stands (its own revision, the ETag a `PUT` must name to replace it)
/// while workers keep the last accepted list, or the built-in order when
/// none was ever accepted.
pub struct Current {
    /// The document on disk, byte for byte, as last read or written.
    pub bytes: bytes::Bytes,
    /// Its revision: the ETag, what `If-Match` must name.
    pub revision: String,
    /// The list every worker is told.
    pub agents: Vec<String>,
    /// The revision every worker is told: `revision` when the document
    /// validates, the last accepted one when it does not, or
    /// [`BUILT_IN_REVISION`].
    pub projected: String,
    /// The serialised heartbeat answer, made once per revision.
    pub projection: bytes::Bytes,
    pub order: OrderSource,
    /// Why the document on disk is not in force.
    pub invalid: Option<ConfigInvalid>,
}

/// The revision workers are told with the built-in order.
pub const BUILT_IN_REVISION: &str = "built-in";

pub(crate) fn projection_of(revision: &str, agents: &[String], interval_s: u64) -> bytes::Bytes {
    serde_json::to_vec(&Projection {
        config_revision: revision.to_string(),
        agents: agents.to_vec(),
        heartbeat_interval_s: interval_s,
    })
    .unwrap_or_default()
    .into()
}

impl Current {
    /// A document that validates, with its list.
    fn valid(bytes: bytes::Bytes, agents: Vec<String>, interval_s: u64) -> Current {
        let revision = store::revision_of(&bytes);
        Current {
            projection: projection_of(&revision, &agents, interval_s),
            projected: revision.clone(),
            bytes,
            revision,
            agents,
            order: OrderSource::Document,
            invalid: None,
        }
    }

    /// A document that does not validate, projecting `agents` at
    /// `projected` (the last accepted list, or the built-in order).
    fn not_valid(
        bytes: bytes::Bytes,
        invalid: ConfigInvalid,
        projected: String,
        agents: Vec<String>,
        order: OrderSource,
        interval_s: u64,
    ) -> Current {
        Current {
            revision: store::revision_of(&bytes),
            projection: projection_of(&projected, &agents, interval_s),
            projected,
            bytes,
            agents,
            order,
            invalid: Some(invalid),
        }
    }

    /// The built-in order, for a document that does not validate when no
    /// list was ever accepted.
    fn built_in(bytes: bytes::Bytes, invalid: ConfigInvalid, interval_s: u64) -> Current {
        Current::not_valid(
            bytes,
            invalid,
            BUILT_IN_REVISION.into(),
            KNOWN_AGENTS.map(String::from).to_vec(),
            OrderSource::BuiltIn,
            interval_s,
        )
    }

    /// The document on disk as text, when it is UTF-8.
    pub fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes).ok()
    }
}

/// Everything the routes share.
pub struct Hub {
    pub opts: HubOptions,
    /// Read on every heartbeat without taking a lock or a reference count.
    pub current: arc_swap::ArcSwap<Current>,
    /// Serialises config writes: compare-and-replace happens under it.
    pub write_lock: tokio::sync::Mutex<()>,
    pub fleet: Mutex<fleet::Fleet>,
    /// Every worker id's pool (the one that first reported it), as the
    /// database holds it.
    pub pools: Mutex<std::collections::HashMap<Arc<str>, Arc<str>>>,
    /// When lost workers were last looked for eviction (monotonic).
    last_eviction: Mutex<std::time::Instant>,
    /// Every revision this hub has told workers (its History's, and each
    /// new one as it is published): a heartbeat's `config_revision` is
    /// kept only when it is one of them, so a worker cannot publish text of
    /// its own through it.
    issued: Mutex<std::collections::HashSet<String>>,
    /// Who may call, reread from `opts.tokens_file` on SIGHUP.
    pub tokens: auth::TokenTable,
    pub db: db::Db,
    pub events: Arc<events::Events>,
    /// Open event streams, capped per token and in total.
    pub streams: Arc<streams::StreamSlots>,
    /// Flips to true when the hub stops, so open event streams end and a
    /// graceful shutdown does not wait on them.
    pub closing: tokio::sync::watch::Sender<bool>,
    /// The hub's counters for `GET /metrics`.
    pub metrics: Arc<metrics::HubMetrics>,
    /// Repeating problems (the config's place, refused writes), said once
    /// in the log, then counted once a minute.
    pub repeats: repeats::Repeats,
    /// Hand edits a config write swapped out and kept aside (beside the
    /// config, `<name>.earlier-edit-<UTC time>`): by the start, from the
    /// temporary files a killed write left ([`store::sweep_stale_temps`]),
    /// or by a write while the hub ran. Said in health until the owner's
    /// next write.
    pub kept_aside: Mutex<Vec<PathBuf>>,
    /// The staged rollouts (`/v1/rollouts`): the newest, and the word.
    pub rollouts: rollout::Rollouts,
    /// What the sweeper's last look at the config's place found.
    pub config_place: place::ConfigPlace,
}

pub use place::config_unusable;

impl Hub {
    pub fn current(&self) -> Arc<Current> {
        self.current.load_full()
    }

    /// The interval the hub tells a fleet of `workers` now, without jitter.
    pub fn interval_for(&self, workers: usize) -> u64 {
        pacing::nominal(
            self.opts.heartbeat_interval_s,
            self.opts.max_heartbeats_per_second,
            workers,
        )
    }

    /// The interval the hub tells now, without jitter.
    pub fn interval_now(&self) -> u64 {
        let workers = self.fleet.lock().map(|f| f.len()).unwrap_or(0);
        self.interval_for(workers)
    }

    /// Remember `revision` as one this hub told workers.
    pub(crate) fn issue(&self, revision: &str) {
        if let Ok(mut s) = self.issued.lock() {
            s.insert(revision.to_string());
        }
    }

    /// Whether `revision` is one this hub told workers (the one in force
    /// is checked first: nearly every heartbeat reports it).
    pub fn issued(&self, revision: &str) -> bool {
        let c = self.current.load();
        revision == c.projected
            || revision == c.revision
            || self.issued.lock().is_ok_and(|s| s.contains(revision))
    }

    /// What `GET /v1/health` answers in JSON: `degraded`, with a sentence
    /// for each problem, while the document on disk is not in force.
    pub fn health(&self) -> Health {
        let c = self.current();
        let problems: Vec<String> = self
            .problems_now(&c)
            .into_iter()
            .map(|p| p.message)
            .collect();
        let (recreated, recreated_at) = self.db.recreated();
        let unavailable = self.db.unavailable();
        let damaged = self.db.quick_check_problems();
        Health {
            status: if problems.is_empty() {
                "ok"
            } else {
                "degraded"
            }
            .into(),
            problems,
            built_in_order: c.order == OrderSource::BuiltIn,
            config: Some(HealthConfig {
                order: c.order,
                projected_revision: c.projected.clone(),
                agents: c.agents.clone(),
                invalid: c.invalid.clone(),
            }),
            database: HealthDatabase {
                unreadable_rows_skipped: self.db.unreadable_rows(),
                started_empty: self.db.started_empty(),
                quick_check_problems: damaged,
                recreated,
                recreated_at,
                unavailable: unavailable.is_some(),
                failovers_dropped: self.db.dropped(),
            },
            // The handler adds the word (it needs the fleet and the rollout).
            word: None,
        }
    }
}

/// A hub serving in the background (for `demo` and tests).
pub struct RunningHub {
    pub addr: SocketAddr,
    pub hub: Arc<Hub>,
    /// The accept loop's counters (open, evicted, refused connections).
    pub conns: serve::Stats,
    task: tokio::task::JoinHandle<()>,
}

impl RunningHub {
    pub fn url(&self) -> String {
        let scheme = if self.hub.opts.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    /// Stop accepting, close open streams, let requests in progress finish
    /// (at most 5 s), and commit what is queued.
    pub async fn stop(mut self) {
        self.hub.closing.send_replace(true);
        let _ = tokio::time::timeout(Duration::from_secs(6), &mut self.task).await;
        self.task.abort();
        self.hub.keep_rollout().await;
        let _ = self.hub.db.shut_down().await;
    }
}

/// Open the config and the database, and build the shared state.
pub async fn open(opts: HubOptions) -> Result<Arc<Hub>> {
    if !opts.listen.ip().is_loopback() && !opts.allow_plaintext && opts.tls.is_none() {
        bail!(
            "refusing to listen on {} in plain HTTP: give --tls-cert and --tls-key, or --allow-plaintext (behind a TLS proxy), or listen on loopback",
            opts.listen
        );
    }
    let bytes = disk::read_config(&opts.config, &opts.config_link_dirs)
        .wrap_err_with(|| format!("cannot read the config {}", opts.config.display()))?;
    let events = Arc::new(events::Events::new(opts.event_ring));
    let hub_metrics = Arc::new(metrics::HubMetrics::default());
    let db = open_db(&opts, &events, &hub_metrics)?;
    let latest = db.latest_history().wrap_err("cannot read the history")?;
    // A write the hub was killed in, between its rename and its history
    // entry (`None` once the entry is there).
    let intent = db.intent().wrap_err("cannot read the write in progress")?;
    let known: std::collections::HashSet<String> = db
        .history(1_000)
        .wrap_err("cannot read the history")?
        .into_iter()
        .map(|h| h.revision)
        .chain(intent.as_ref().map(|i| i.revision.clone()))
        .collect();
    let kept_at_start = sweep_config_temps(&opts, &bytes, &known);
    let bytes = bytes::Bytes::from(bytes);
    let (current, reconciled) = current_at_start(&opts, &db, bytes, latest, intent).await?;
    // An intent whose write never landed (killed before the rename, or
    // the file edited since) is dropped.
    if db
        .intent()
        .wrap_err("cannot read the write in progress")?
        .is_some()
    {
        db.record_intent(None)
            .await
            .wrap_err("cannot clear the write in progress")?;
    }
    let pools = pools_of(&db)?;
    let mut issued = known;
    issued.insert(current.revision.clone());
    issued.insert(current.projected.clone());
    let hub = Arc::new(hub_at_start(
        opts,
        current,
        db,
        events,
        hub_metrics,
        pools,
        issued,
    ));
    hold_bindings(&hub);
    hub.note_kept(kept_at_start);
    // The `config` event the interrupted write never sent.
    if let Some(by) = reconciled {
        publish_config(&hub, &hub.current(), &by);
    }
    // A rollout that baked when the hub stopped bakes on.
    hub.resume_rollout().await;
    Ok(hub)
}

/// The hub's shared state at start, from what was opened and read.
fn hub_at_start(
    opts: HubOptions,
    current: Current,
    db: db::Db,
    events: Arc<events::Events>,
    hub_metrics: Arc<metrics::HubMetrics>,
    pools: std::collections::HashMap<Arc<str>, Arc<str>>,
    issued: std::collections::HashSet<String>,
) -> Hub {
    let epoch = Utc::now().timestamp_millis().max(0) as u64;
    Hub {
        current: arc_swap::ArcSwap::from_pointee(current),
        write_lock: tokio::sync::Mutex::new(()),
        fleet: Mutex::new(
            fleet::Fleet::new(epoch)
                .publishing(events.clone())
                .holding_off(opts.held_off_window),
        ),
        pools: Mutex::new(pools),
        last_eviction: Mutex::new(std::time::Instant::now()),
        issued: Mutex::new(issued),
        tokens: auth::TokenTable::new(opts.tokens.clone(), opts.tokens_file.clone()),
        db,
        events,
        streams: streams::StreamSlots::new(opts.streams.per_token, opts.streams.total),
        closing: tokio::sync::watch::Sender::new(false),
        metrics: hub_metrics,
        repeats: repeats::Repeats::default(),
        kept_aside: Mutex::new(Vec::new()),
        rollouts: rollout::Rollouts::judging_by(opts.guard),
        config_place: place::ConfigPlace::new(&opts.config, &opts.config_link_dirs),
        opts,
    }
}

/// The database, whose writer counts and publishes each committed
/// failover and recovery.
fn open_db(
    opts: &HubOptions,
    events: &Arc<events::Events>,
    hub_metrics: &Arc<metrics::HubMetrics>,
) -> Result<db::Db> {
    let (ev2, metrics2) = (events.clone(), hub_metrics.clone());
    let db_path = opts.db_path();
    db::Db::open(
        &db_path,
        opts.bounds,
        Box::new(move |commits: db::Commits| {
            metrics2.failovers(&commits.failovers);
            for r in commits.failovers {
                ev2.publish(events::Payload::Failover(Arc::new(r)));
            }
            for r in commits.recoveries {
                metrics2.recovery(&r);
                ev2.publish(events::Payload::Recovery(Arc::new(r)));
            }
        }),
    )
    .wrap_err_with(|| format!("cannot open the database {}", db_path.display()))
}

/// The document in force at start, from the file's `bytes`, and the
/// author of an interrupted write that landed (its `config` event is
/// still to send). A valid file that is not History's newest entry is
/// recorded: the interrupted write's, or a hand edit made while the hub
/// was down. An invalid one is never projected.
async fn current_at_start(
    opts: &HubOptions,
    db: &db::Db,
    bytes: bytes::Bytes,
    latest: Option<HistoryEntry>,
    intent: Option<HistoryEntry>,
) -> Result<(Current, Option<String>)> {
    let agents = match disk::judge(&bytes) {
        Ok(agents) => agents,
        Err(invalid) => return Ok((not_in_force(opts, bytes, invalid, latest), None)),
    };
    let current = Current::valid(bytes, agents, opts.heartbeat_interval_s);
    if latest.as_ref().map(|h| h.revision.as_str()) == Some(current.revision.as_str()) {
        return Ok((current, None));
    }
    let (entry, reconciled) = match intent {
        // The interrupted write landed: it is its author's.
        Some(i) if i.revision == current.revision => {
            tracing::warn!(
                revision = %i.revision,
                by = %i.by,
                "the last config write was interrupted after the file was replaced; recorded as its author's"
            );
            let by = i.by.clone();
            (i, Some(by))
        }
        // The file was edited while the hub was down.
        _ => (
            HistoryEntry {
                revision: current.revision.clone(),
                at: Utc::now(),
                by: if latest.is_some() {
                    disk::CHANGED_ON_DISK.into()
                } else {
                    "(initial)".into()
                },
                agents: current.agents.clone(),
                previous_agents: latest.map(|h| h.agents).unwrap_or_default(),
                client: None,
            },
            None,
        ),
    };
    db.record_history(entry)
        .await
        .wrap_err("cannot record the history")?;
    Ok((current, reconciled))
}

/// Never projected: the last accepted list stands (the owner's order), or
/// the built-in one when none was ever accepted. Loudly.
fn not_in_force(
    opts: &HubOptions,
    bytes: bytes::Bytes,
    invalid: ConfigInvalid,
    latest: Option<HistoryEntry>,
) -> Current {
    let current = match latest {
        Some(h) => Current::not_valid(
            bytes,
            invalid,
            h.revision,
            h.agents,
            OrderSource::LastAccepted,
            opts.heartbeat_interval_s,
        ),
        None => Current::built_in(bytes, invalid, opts.heartbeat_interval_s),
    };
    if let Some(problem) = disk::problem(&opts.config, &current) {
        tracing::warn!("{problem}");
    }
    current
}

/// Every worker id's pool, as the database holds them, one shared name
/// per pool.
fn pools_of(db: &db::Db) -> Result<std::collections::HashMap<Arc<str>, Arc<str>>> {
    let mut pools = std::collections::HashMap::new();
    let mut names: std::collections::HashMap<String, Arc<str>> = Default::default();
    for (worker, pool) in db.bindings().wrap_err("cannot read the workers' pools")? {
        let pool = names
            .entry(pool)
            .or_insert_with_key(|p| Arc::from(p.as_str()))
            .clone();
        pools.insert(Arc::from(worker), pool);
    }
    Ok(pools)
}

/// A database made afresh under the running hub keeps every worker id's
/// pool, from memory: a remade file never frees another pool's ids.
fn hold_bindings(hub: &Arc<Hub>) {
    let weak = Arc::downgrade(hub);
    hub.db.hold_bindings(Box::new(move || {
        let Some(hub) = weak.upgrade() else {
            return Vec::new();
        };
        hub.pools
            .lock()
            .map(|p| {
                p.iter()
                    .map(|(w, pool)| (w.to_string(), pool.to_string()))
                    .collect()
            })
            .unwrap_or_default()
    }));
}

/// At start, before anything writes: clear the temporary files a killed
/// config write left beside the config, keeping aside (never deleting)
/// any that holds bytes the hub never wrote: a hand edit swapped out of
/// the path by a write killed before it could swap it back. The hub's
/// own bytes are the file at the path (`on_disk`) and the documents of
/// its history and of its write in progress (`known` revisions). Returns
/// where what was kept went, said in the log here and in health.
fn sweep_config_temps(
    opts: &HubOptions,
    on_disk: &[u8],
    known: &std::collections::HashSet<String>,
) -> Vec<PathBuf> {
    let ours = |b: &[u8]| b == on_disk || known.contains(&store::revision_of(b));
    match store::sweep_stale_temps(&opts.config, &opts.config_link_dirs, &ours) {
        Ok(swept) => {
            if swept.removed > 0 {
                tracing::warn!(
                    removed = swept.removed,
                    "removed temporary files an interrupted config write left behind"
                );
            }
            for k in &swept.kept {
                tracing::warn!(path = %opts.config.display(), kept = %k.display(), "an interrupted config write left bytes the hub never wrote (a hand edit it had swapped out): kept aside, not deleted; compare it with the config");
            }
            swept.kept
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot clear leftover temporary files");
            Vec::new()
        }
    }
}

/// Publish a config change to the event feed.
pub(crate) fn publish_config(hub: &Hub, c: &Current, by: &str) {
    hub.issue(&c.projected);
    hub.events
        .publish(events::Payload::Config(Arc::new(ConfigEvent {
            revision: c.revision.clone(),
            at: Utc::now(),
            by: by.to_string(),
            agents: c.agents.clone(),
        })));
}

/// Forget workers not heard from for `evict_after` (checked about once a
/// minute: a full pass over the fleet), by the monotonic clock.
fn evict_lost(hub: &Hub) {
    let now = std::time::Instant::now();
    let Ok(mut last) = hub.last_eviction.lock() else {
        return;
    };
    if now.saturating_duration_since(*last) < Duration::from_secs(60) {
        return;
    }
    *last = now;
    drop(last);
    let gone = match hub.fleet.lock() {
        Ok(mut f) => f.evict(now, hub.opts.evict_after),
        Err(_) => Vec::new(),
    };
    let n = gone.len();
    // A forgotten worker's id is free again: its pool binding goes too.
    if let Ok(mut pools) = hub.pools.lock() {
        for id in &gone {
            pools.remove(id);
        }
    }
    hub.db
        .unbind(gone.iter().map(|id| id.to_string()).collect());
    if n > 0 {
        tracing::info!(
            evicted = n,
            after_s = hub.opts.evict_after.as_secs(),
            "forgot long-lost workers"
        );
    }
}

fn spawn_sweeper(hub: &Arc<Hub>) -> tokio::task::JoinHandle<()> {
    let weak = Arc::downgrade(hub);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut last_summary = None;
        loop {
            tick.tick().await;
            let Some(hub) = weak.upgrade() else { return };
            let interval = hub.opts.heartbeat_interval_s;
            if let Ok(mut f) = hub.fleet.lock() {
                f.sweep(std::time::Instant::now(), Utc::now(), interval);
            }
            evict_lost(&hub);
            place::look_at_the_config(&hub).await;
            hub.publish_summary(&mut last_summary);
        }
    })
}

/// Bind and serve in the background.
pub async fn start(opts: HubOptions) -> Result<RunningHub> {
    let listen = opts.listen;
    let tls = match &opts.tls {
        Some((cert, key)) => Some(tokio_rustls::TlsAcceptor::from(tls::server_config(
            cert, key,
        )?)),
        None => None,
    };
    let hub = open(opts).await?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .wrap_err_with(|| format!("cannot listen on {listen}"))?;
    let addr = listener.local_addr()?;
    let app = api::router(hub.clone());
    let sweeper = spawn_sweeper(&hub);
    let judge = rollout::spawn_judge(&hub);
    let watcher = if hub.opts.watch_config {
        disk::spawn_watcher(&hub)
    } else {
        tokio::spawn(async {})
    };
    let (conns, serving) = serve::spawn(
        listener,
        tls,
        app,
        hub.opts.limits,
        hub.closing.subscribe(),
        Duration::from_secs(5),
    );
    let task = tokio::spawn(async move {
        if let Err(e) = serving.await {
            tracing::error!(error = %e, "hub server stopped");
        }
        sweeper.abort();
        judge.abort();
        watcher.abort();
    });
    Ok(RunningHub {
        addr,
        hub,
        conns,
        task,
    })
}

/// Ctrl-C or SIGTERM, whichever comes first: both are caught from the
/// call on (the future only waits), so a signal sent the moment after
/// never finds the default action (death by the signal) in place.
fn stop_signal() -> Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut int = signal(SignalKind::interrupt()).wrap_err("cannot listen for Ctrl-C")?;
        let mut term = signal(SignalKind::terminate()).wrap_err("cannot listen for SIGTERM")?;
        Ok(async move {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        })
    }
    #[cfg(not(unix))]
    {
        Ok(async {
            let _ = tokio::signal::ctrl_c().await;
        })
    }
}

/// `macfleet hub`: serve until Ctrl-C or SIGTERM; then finish requests in
/// progress, close streams, and return (exit 0).
pub async fn serve(opts: HubOptions) -> Result<()> {
    let fds = serve::raise_fd_limit();
    let running = start(opts).await?;
    // Before the line that says where it listens: whoever reads that line
    // may stop it or reload its tokens at once.
    let stop = stop_signal()?;
    let reloader = reload_tokens_on_sighup(&running.hub)?;
    let c = running.hub.current();
    eprintln!(
        "macfleet hub {:?} listening on {} (config revision {}, agents {})",
        running.hub.opts.name,
        running.url(),
        c.projected,
        c.agents.join(",")
    );
    if let Some(problem) = disk::problem(&running.hub.opts.config, &c) {
        eprintln!("warning: {problem}");
    }
    tracing::info!(
        descriptors = fds,
        max_connections = running.hub.opts.limits.effective_max_connections(),
        "connection bounds"
    );
    tracing::info!(
        max_workers = running.hub.opts.max_workers,
        largest_worker_bytes = LARGEST_WORKER_BYTES,
        "worker cap (--max-workers, or --memory-budget / the largest worker's cost)"
    );
    stop.await;
    reloader.abort();
    eprintln!("stopping");
    running.stop().await;
    Ok(())
}

/// SIGHUP rereads the tokens file: a token is revoked or rotated without a
/// restart, and a revoked token's open event streams end. A bad file keeps
/// the tokens in force and says why.
fn reload_tokens_on_sighup(hub: &Arc<Hub>) -> Result<tokio::task::JoinHandle<()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hup = signal(SignalKind::hangup()).wrap_err("cannot listen for SIGHUP")?;
        let weak = Arc::downgrade(hub);
        Ok(tokio::spawn(async move {
            while hup.recv().await.is_some() {
                let Some(hub) = weak.upgrade() else { return };
                match hub.tokens.reload() {
                    Ok(n) => {
                        if let Some(path) = hub.tokens.file() {
                            auth::warn_if_open_to_others(path);
                        }
                        tracing::info!(tokens = n, "SIGHUP: tokens file reread");
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "SIGHUP: tokens file not reread; the previous tokens stay in force");
                    }
                }
            }
        }))
    }
    #[cfg(not(unix))]
    {
        let _ = hub;
        Ok(tokio::spawn(async {}))
    }
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    #[test]
    fn the_default_cap_is_the_default_budget_over_the_largest_worker() {
        assert_eq!(DEFAULT_MAX_WORKERS, 283_989);
        let used = WORKERS_BASE_BYTES + DEFAULT_MAX_WORKERS as u64 * LARGEST_WORKER_BYTES;
        assert!(used <= DEFAULT_MEMORY_BUDGET);
        assert!(used + LARGEST_WORKER_BYTES > DEFAULT_MEMORY_BUDGET);
        assert_eq!(parse_size("2560MiB"), Ok(DEFAULT_MEMORY_BUDGET));
        assert_eq!(max_workers_for(96 << 20), 3_640);
        assert_eq!(max_workers_for(0), 1);
    }

    #[test]
    fn sizes_take_binary_units_and_refuse_the_rest() {
        assert_eq!(parse_size("67118080"), Ok(67_118_080));
        assert_eq!(parse_size("70000K"), Ok(70_000 << 10));
        assert_eq!(parse_size("512 MiB"), Ok(512 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        for bad in [
            "",
            "MiB",
            "1.5GiB",
            "2GB",
            "-1MiB",
            "9KiB",
            "99999999999999GiB",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?}");
        }
        assert!(
            parse_size("12parsecs").is_err_and(|e| e.contains("the unit is B, KiB, MiB or GiB"))
        );
    }
}
