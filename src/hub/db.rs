//! The embedded database beside the config: the config history and the
//! failover log, in SQLite (WAL, full sync). One writer thread takes
//! failovers off the request path and commits them in batches; readers use
//! their own connection.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use crate::wire::{Cause, Failover, FailoverRecord, HistoryEntry, RecoveryRecord};

/// The `Idempotency-Key`s the hub answers from: the last this many
/// accepted keyed writes, in a table of their own (`idempotency_keys`),
/// however the history is trimmed (hand edits add entries with no key),
/// and carried into a database made afresh (docs/hub-api.md).
pub const KEYS_KEPT: i64 = 10_000;

/// A kept key: the key, its write's revision and list (JSON).
type KeptKey = (String, String, String);

/// Every kept key, oldest first.
fn read_keys(c: &Connection) -> rusqlite::Result<Vec<KeptKey>> {
    let mut st = c.prepare("SELECT key, revision, agents FROM idempotency_keys ORDER BY id")?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    rows.collect()
}

/// Keep each history entry's key in `idempotency_keys` (a database
/// from before the table, or one made of a damaged file's rows), then
/// the last [`KEYS_KEPT`] of them.
fn keys_from_history(c: &Connection) -> rusqlite::Result<()> {
    c.execute_batch(&format!(
        "INSERT OR IGNORE INTO idempotency_keys (key, revision, agents) SELECT idempotency_key, revision, agents FROM history WHERE idempotency_key IS NOT NULL ORDER BY id;
         DELETE FROM idempotency_keys WHERE id <= (SELECT MAX(id) FROM idempotency_keys) - {KEYS_KEPT};"
    ))
}

/// Bounds of what the database keeps.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub failovers: u64,
    pub history: u64,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            failovers: 100_000,
            history: 1_000,
        }
    }
}

/// A failover accepted at ingest, not yet committed.
#[derive(Debug, Clone)]
pub struct NewFailover {
    pub worker: String,
    /// The name of the token that sent it: failover ids are unique per
    /// (worker, token), so one token cannot pre-empt another's id.
    pub token: String,
    /// The pool of that token: the log's bound is shared fairly between
    /// pools.
    pub pool: String,
    pub host: String,
    pub received_at: DateTime<Utc>,
    pub failover: Failover,
}

/// A recovery seen at ingest, not yet committed (it gets its `seq` then).
/// Nobody waits for it: its heartbeat was answered already.
#[derive(Debug, Clone)]
pub struct NewRecovery {
    /// The pool of the worker: the log's bound is shared fairly between
    /// pools, as the failover log's is.
    pub pool: Arc<str>,
    /// The record, its `seq` given when it is committed.
    pub record: RecoveryRecord,
}

/// What a recovery query asks for (as [`FailoverFilter`], without kind).
#[derive(Debug, Clone, Default)]
pub struct RecoveryFilter {
    pub since: u64,
    pub limit: u32,
    pub worker: Option<String>,
    /// `from` or `to` is this agent.
    pub agent: Option<String>,
}

/// What one commit made: the new failover and recovery records, in seq
/// order (handed to [`OnCommit`]).
#[derive(Debug, Default)]
pub struct Commits {
    pub failovers: Vec<FailoverRecord>,
    pub recoveries: Vec<RecoveryRecord>,
}

/// Recoveries waiting for the next batch (at most the log's bound; past it
/// the oldest go, counted in `dropped`).
#[derive(Default)]
struct Pending {
    recoveries: std::collections::VecDeque<NewRecovery>,
    dropped: u64,
}

enum Cmd {
    /// Recoveries are waiting in [`Pending`]: commit them with the next
    /// batch.
    Wake,
    Failovers(Vec<NewFailover>, oneshot::Sender<Result<(), String>>),
    History(HistoryEntry, oneshot::Sender<Result<(), String>>),
    /// Set (or clear) the config write in progress.
    /// With the write's `Idempotency-Key`, which its history entry takes
    /// over when it is recorded.
    Intent(
        Option<HistoryEntry>,
        Option<String>,
        oneshot::Sender<Result<(), String>>,
    ),
    /// Bind the ids waiting in the [`BindQueue`] to their pools, durably:
    /// sent by the first id of a batch, taken with the next commit.
    Binds,
    /// Forget the bindings of workers the hub forgot.
    Unbind(Vec<String>),
    /// Record a staged rollout as it stands now (one row per rollout).
    Rollout(RolloutRow, oneshot::Sender<Result<(), String>>),
    Flush(oneshot::Sender<()>),
    /// Commit what is queued, close the connection and end the writer: a
    /// stopped hub no longer watches (and so never recreates) its file.
    Close(oneshot::Sender<()>),
}

/// A staged rollout as the database keeps it: its id, the
/// `Idempotency-Key` that started it, and the hub's JSON of it
/// (`hub::rollout::Record`), opaque here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutRow {
    pub id: String,
    pub key: Option<String>,
    pub body: String,
}

/// Rollouts kept (their steps are History's `rollouts`).
pub const ROLLOUTS_KEPT: i64 = 100;

/// Errors of the database layer.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database writer is gone")]
    WriterGone,
    #[error("database: {0}")]
    Other(String),
    #[error("database: {0}")]
    Damaged(String),
}

/// What a failover query asks for.
#[derive(Debug, Clone, Default)]
pub struct FailoverFilter {
    pub since: u64,
    pub limit: u32,
    pub worker: Option<String>,
    pub agent: Option<String>,
    pub kind: Option<String>,
}

pub struct Db {
    /// Shared with the writer, which replaces it when it recreates the file.
    read: Arc<Mutex<Connection>>,
    tx: SyncSender<Cmd>,
    head: Arc<AtomicU64>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    unreadable: Unreadable,
    /// The file was there and empty at start (truncated?).
    started_empty: bool,
    path: PathBuf,
    state: Arc<FileState>,
    /// Problems SQLite's `quick_check` found at start (0: none).
    quick_check_problems: u64,
    /// Batches not committed and reads that failed (`GET /metrics`).
    errors: Arc<AtomicU64>,
    /// What a remade file takes from the hub's memory.
    held: Arc<Mutex<Option<HeldBindings>>>,
    /// New worker ids waiting for the next commit.
    binds: Arc<Mutex<BindQueue>>,
    /// Recoveries for the next batch, shared with the writer.
    pending: Arc<Mutex<Pending>>,
    /// The highest committed recovery seq (the recovery log's head).
    recovery_head: Arc<AtomicU64>,
    /// The log's bound (`Bounds::failovers`): recoveries waiting are held
    /// to it too.
    bound: u64,
    /// The instance id, once read.
    instance: Mutex<Option<String>>,
}

/// The worker ids a moment brings, bound in one commit and answered
/// after it (issue 30, "Registering is slow"): the first id of a batch
/// sends the writer one [`Cmd::Binds`], the others only join the queue;
/// the writer takes the whole queue with its next commit (a fresh one
/// starts for the ids that come meanwhile) and answers every id at once.
/// Before, each id went to the writer on a blocking thread of its own,
/// with its own answer.
struct BindQueue {
    ids: Vec<(String, String)>,
    /// `Some` once the batch's commit is done (or failed).
    done: tokio::sync::watch::Sender<Option<Result<(), String>>>,
    /// Its `Cmd::Binds` is on its way to the writer.
    sent: bool,
}

/// The writer is gone: the ids waiting, and any bound after, are told so
/// (the queue stays marked sent, so nobody sends for it again).
fn gone(binds: &Mutex<BindQueue>) {
    if let Ok(mut q) = binds.lock() {
        q.sent = true;
        q.done
            .send_replace(Some(Err(DbError::WriterGone.to_string())));
    }
}

impl BindQueue {
    fn new() -> BindQueue {
        BindQueue {
            ids: Vec::new(),
            done: tokio::sync::watch::channel(None).0,
            sent: false,
        }
    }
}

/// A database opened at start, and what the hub reads of it first: any
/// statement of these that meets damage fails the open, so the file is
/// set aside then rather than the start refused.
struct Opened {
    writer: Connection,
    read: Connection,
    problems: Vec<String>,
    head: u64,
    recovery_head: u64,
    last_history: Option<HistoryEntry>,
    intent: Option<HistoryEntry>,
    instance: Option<String>,
}

impl Opened {
    fn probe(path: &Path) -> Result<Opened, DbError> {
        let writer = open(path)?;
        let read = open(path)?;
        // Damaged pages are said at start, not found out later as rows
        // that silently are not there.
        let problems = quick_check(&read).unwrap_or_else(|e| vec![e.to_string()]);
        let head: u64 = read.query_row("SELECT COALESCE(MAX(seq), 0) FROM failovers", [], |r| {
            r.get::<_, i64>(0)
        })? as u64;
        let recovery_head = read_recovery_head(&read)?;
        let unreadable = Unreadable::default();
        let last_history = read_history(&read, 1, &unreadable)?.into_iter().next();
        // What the hub reads next, read here first.
        read_history(&read, 1_000, &unreadable)?;
        read.query_row("SELECT COUNT(*) FROM worker_pools", [], |r| {
            r.get::<_, i64>(0)
        })?;
        let instance = read
            .query_row("SELECT value FROM meta WHERE key = 'instance'", [], |r| {
                r.get::<_, String>(0)
            })
            .optional()?;
        let intent = read_intent(&read)?;
        Ok(Opened {
            writer,
            read,
            problems,
            head,
            recovery_head,
            last_history,
            intent,
            instance,
        })
    }
}

impl Opened {
    /// Let go of the file without a checkpoint: a damaged file (and its
    /// WAL) is kept as it was found.
    fn close_as_found(self) {
        let no_ckpt = rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE;
        let _ = self.writer.set_db_config(no_ckpt, true);
        let _ = self.read.set_db_config(no_ckpt, true);
    }
}

/// Why a file that failed `quick_check` is damaged, in one line: how
/// many problems, and the first (cut short).
fn failed_quick_check(problems: &[String]) -> String {
    let first: String = problems
        .first()
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
        .chars()
        .take(160)
        .collect();
    let n = problems.len();
    let more = if n >= QUICK_CHECK_MAX { " or more" } else { "" };
    format!("it failed SQLite's quick_check: {n}{more} problems, the first: {first}")
}

/// What became of the database file while the hub ran.
#[derive(Default)]
pub struct FileState {
    /// Times the file was found removed or replaced and made afresh.
    recreated: AtomicU64,
    /// When it last was.
    recreated_at: Mutex<Option<DateTime<Utc>>>,
    /// The last time it was, its rows were copied out of the removed file
    /// (the hub still had it open) into the fresh one.
    recreated_kept: std::sync::atomic::AtomicBool,
    /// Why the file cannot be opened now (`None`: it can).
    unavailable: Mutex<Option<String>>,
    /// Failover records pruned from each pool while it held more than its
    /// fair share of the log's bound.
    dropped: Mutex<std::collections::BTreeMap<String, u64>>,
    /// The last time the file was found damaged and set aside.
    damage: Mutex<Option<Damage>>,
    /// Times it was.
    damaged: AtomicU64,
    /// Statements that met a damaged page (SQLITE_CORRUPT, SQLITE_NOTADB).
    corrupt_statements: AtomicU64,
    /// A read that met damage, for the writer to act on (set the file
    /// aside) within a second: the connection's generation and why.
    read_damage: Mutex<Option<(u64, String)>>,
    /// Files made afresh since the start: a read's damage report of an
    /// older file is not the fresh one's.
    generation: AtomicU64,
    /// Why commits fail though the file is sound (the disk full, an I/O
    /// error, the file read-only): what must be durable is refused with
    /// 503 until commits go through again ([`FAILING_ENDS`] after the
    /// last failure; `None`: they commit), and when it last failed.
    failing: Mutex<Option<(String, std::time::Instant)>>,
    /// Why the database's directory would fail the next start, or the
    /// next remake, though the file is written now (`None`: it would not).
    place: Mutex<Option<String>>,
    /// Repeating problems, said once then counted.
    repeats: crate::hub::repeats::Repeats,
}

/// A damaged database file found and set aside (at start, or under the
/// running hub), and what the fresh one at its path was made from.
#[derive(Debug, Clone)]
pub struct Damage {
    pub at: DateTime<Utc>,
    /// What was wrong with it.
    pub why: String,
    /// Where it was moved (`<name>.damaged-<UTC time>`, with its `-wal`
    /// and `-shm` beside it).
    pub moved_to: PathBuf,
    /// Found when the hub started (not while it ran).
    pub at_start: bool,
    /// What the fresh file holds of it.
    pub kept: Salvage,
}

/// What a fresh database was given from the damaged one and from what the
/// hub held in memory.
#[derive(Debug, Clone, Default)]
pub struct Salvage {
    /// Rows copied from the damaged file, as far as each table read.
    pub failovers: u64,
    pub recoveries: u64,
    pub history: u64,
    pub bindings: u64,
    /// Rollouts (the newest among them: one in progress resumes).
    pub rollouts: u64,
    /// The damaged file's tables whose copy stopped at damage.
    pub stopped: Vec<&'static str>,
    /// The instance id carried over (a TUI sees the same hub).
    pub instance: bool,
    /// Bindings carried from what the hub held in memory.
    pub bindings_held: u64,
    /// The newest history entry carried from memory.
    pub history_head: bool,
    /// The newest rollout carried from memory (one baking bakes on).
    pub rollout_held: bool,
}

impl Salvage {
    /// One sentence: what the fresh file holds, and what it could not.
    pub fn sentence(&self) -> String {
        let n = |count: u64, one: &str, many: &str| {
            format!("{count} {}", if count == 1 { one } else { many })
        };
        let mut kept = Vec::new();
        if self.instance {
            kept.push("the hub's instance id".to_string());
        }
        let bindings = self.bindings.max(self.bindings_held);
        kept.push(n(bindings, "pool binding", "pool bindings"));
        if self.history_head && self.history == 0 {
            kept.push("the newest history entry".into());
        } else {
            kept.push(n(self.history, "history entry", "history entries"));
        }
        kept.push(n(self.failovers, "failover record", "failover records"));
        kept.push(n(self.recoveries, "recovery record", "recovery records"));
        if self.rollout_held {
            kept.push("the newest rollout".into());
        } else if self.rollouts > 0 {
            kept.push(n(self.rollouts, "rollout", "rollouts"));
        }
        let mut s = format!("kept {}", kept.join(", "));
        if !self.instance {
            s.push_str("; the instance id is new (a TUI sees another hub)");
        }
        if self.stopped.is_empty() {
            s.push_str("; every row of it that read was copied");
        } else {
            s.push_str(&format!(
                "; lost what did not read of {} (the rows are in the damaged file)",
                self.stopped.join(", ")
            ));
        }
        s
    }
}

/// What the hub holds in memory that a fresh database must keep: every
/// worker id's pool (so a remade file does not free another pool's ids).
pub type HeldBindings = Box<dyn Fn() -> Vec<(String, String)> + Send + 'static>;

/// Whether a SQLite error says the file is damaged (or not a database).
fn is_damage(e: &rusqlite::Error) -> bool {
    use rusqlite::ffi::ErrorCode;
    matches!(
        e.sqlite_error_code(),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
    )
}

impl DbError {
    /// The file is damaged (SQLITE_CORRUPT, SQLITE_NOTADB).
    pub fn is_damage(&self) -> bool {
        match self {
            DbError::Sqlite(e) => is_damage(e),
            DbError::Damaged(_) => true,
            _ => false,
        }
    }
}

/// Whether the hub may make files in `dir` (as the user it runs as).
pub(crate) fn writable(dir: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a NUL-terminated path; access(2) only reads it.
    unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) == 0 }
}

/// Whether the user the hub runs as may write the file at `path` (a file
/// gone is not this question: `true`).
fn file_writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return true;
    };
    // SAFETY: a NUL-terminated path; access(2) only reads it.
    let ok = unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 };
    ok || std::io::Error::last_os_error().kind() == std::io::ErrorKind::NotFound
}

/// The first 16 bytes of every SQLite database file.
const HEADER: &[u8; 16] = b"SQLite format 3\0";

/// What is wrong with the file at `path` as far as its size and header
/// tell, given the largest size it was seen at (`None`: nothing seen).
/// The hub never vacuums, so a live database never shrinks.
fn looks_damaged(path: &Path, seen: u64) -> Option<String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    if len < seen {
        return Some(format!("it shrank from {seen} to {len} bytes"));
    }
    let mut head = [0u8; 100];
    if f.read_exact(&mut head).is_err() {
        return Some(format!("it is {len} bytes long, shorter than a header"));
    }
    if &head[..16] != HEADER {
        return Some("its header is not SQLite's".into());
    }
    // The size the header gives (valid while the change counter matches
    // its "version valid for"): a file shorter than that lost its end.
    let be = |at: usize| u32::from_be_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
    let page = match u16::from_be_bytes([head[16], head[17]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    let pages = u64::from(be(28));
    if be(24) == be(92) && pages > 0 && len < pages * page {
        return Some(format!(
            "it is {len} bytes long, shorter than the {} its header gives",
            pages * page
        ));
    }
    None
}

/// The `-wal` and `-shm` beside `path`.
fn sidecars(path: &Path) -> [PathBuf; 2] {
    let with = |s: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(s);
        PathBuf::from(p)
    };
    [with("-wal"), with("-shm")]
}

/// Move a damaged database (and its `-wal` and `-shm`) aside as
/// `<name>.damaged-<UTC time>` beside it, never over anything: nothing
/// of it is deleted. Returns where it went.
pub fn set_aside(path: &Path) -> std::io::Result<PathBuf> {
    let stamp = Utc::now().format("%Y%m%dT%H%M%SZ");
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "hub.db".into());
    for n in 0..1000u32 {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!(".{n}")
        };
        let to = dir.join(format!("{name}.damaged-{stamp}{suffix}"));
        let taken = std::iter::once(to.clone())
            .chain(sidecars(&to))
            .any(|p| std::fs::symlink_metadata(p).is_ok());
        if taken {
            continue;
        }
        std::fs::rename(path, &to)?;
        for (from, into) in sidecars(path).into_iter().zip(sidecars(&to)) {
            match std::fs::rename(&from, &into) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        return Ok(to);
    }
    Err(std::io::Error::other(format!(
        "every name {name}.damaged-{stamp}.N is taken"
    )))
}

/// What a fresh database is given besides the damaged file's rows.
#[derive(Default)]
struct Carried {
    instance: Option<String>,
    bindings: Vec<(String, String)>,
    history_head: Option<HistoryEntry>,
    intent: Option<HistoryEntry>,
    /// The failover log's head: seqs carry on from it.
    head: u64,
    /// The kept `Idempotency-Key`s, oldest first.
    keys: Vec<KeptKey>,
    /// The recovery log's head, likewise.
    recovery_head: u64,
    /// The newest rollout: a remade file keeps it (a restart resumes it).
    rollout: Option<RolloutRow>,
}

/// Copy what reads of the damaged database at `from` (a copy of it, made
/// in a temporary directory, so the damaged file is left as it was) into
/// `conn`: each table row by row from its start until damage stops it,
/// and from its end back as far as it reads.
fn salvage_rows(conn: &Connection, from: &Path, kept: &mut Salvage) {
    let Ok(tmp) = tempfile::tempdir() else { return };
    let copy = tmp.path().join("salvage.db");
    if std::fs::copy(from, &copy).is_err() {
        return;
    }
    let [wal, _] = sidecars(from);
    let [wal_copy, _] = sidecars(&copy);
    if std::fs::copy(&wal, &wal_copy).is_ok() {
        // SQLite deletes the WAL of a database file shorter than a page
        // (an empty database has none); the copy is given a first page of
        // zeros, so the WAL's pages (page 1 among them) are read.
        if let Some(page) = wal_page_size(&wal_copy) {
            let short = std::fs::metadata(&copy).is_ok_and(|m| m.len() < page);
            if short {
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .open(&copy)
                    .and_then(|f| f.set_len(page));
            }
        }
    }
    let Ok(old) = Connection::open(&copy) else {
        return;
    };
    let _ = old.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    );
    // A file shorter than its header says is refused whole otherwise;
    // with this SQLite reads the pages there are (the copy's schema is
    // never written).
    let _ = old.execute_batch("PRAGMA writable_schema = ON");
    for table in [
        "meta",
        "worker_pools",
        "history",
        "failovers",
        "recoveries",
        "rollouts",
    ] {
        let mut copied = 0u64;
        let mut stopped = false;
        for order in ["ASC", "DESC"] {
            let r = copy_table(&old, conn, table, order, &mut copied);
            stopped |= r.is_err();
            if r.is_ok() {
                break;
            }
        }
        if stopped {
            kept.stopped.push(table);
        }
        match table {
            "worker_pools" => kept.bindings = copied,
            "history" => kept.history = copied,
            "failovers" => kept.failovers = copied,
            "recoveries" => kept.recoveries = copied,
            "rollouts" => kept.rollouts = copied,
            _ => {}
        }
    }
    // Its kept keys, as far as they read (a file older than the table has
    // none; those of its history rows are kept at the remake).
    let mut keys = 0;
    let _ = copy_table(&old, conn, "idempotency_keys", "ASC", &mut keys);
    // Seqs and history ids carry on past what the damaged file had given.
    let _ = (|| -> rusqlite::Result<()> {
        let mut st = old.prepare("SELECT name, seq FROM sqlite_sequence")?;
        let rows = st.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
        for r in rows.flatten() {
            conn.execute(
                "UPDATE sqlite_sequence SET seq = MAX(seq, ?2) WHERE name = ?1",
                params![r.0, r.1],
            )?;
        }
        Ok(())
    })();
}

/// The page size a WAL's header gives, if it is a WAL.
fn wal_page_size(wal: &Path) -> Option<u64> {
    use std::io::Read;
    let mut head = [0u8; 12];
    std::fs::File::open(wal).ok()?.read_exact(&mut head).ok()?;
    let magic = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
    if magic & !1 != 0x377f_0682 {
        return None;
    }
    let page = u32::from_be_bytes([head[8], head[9], head[10], head[11]]);
    (page >= 512).then_some(u64::from(page))
}

/// Copy `table`'s rows from `old` into `new` in rowid `order` until one
/// does not read; `Err` when damage stopped the copy.
fn copy_table(
    old: &Connection,
    new: &Connection,
    table: &str,
    order: &str,
    copied: &mut u64,
) -> rusqlite::Result<()> {
    let mut st = old.prepare(&format!("SELECT * FROM {table} ORDER BY rowid {order}"))?;
    let cols: Vec<String> = st.column_names().iter().map(|c| c.to_string()).collect();
    let marks: Vec<String> = (1..=cols.len()).map(|i| format!("?{i}")).collect();
    let mut ins = new.prepare(&format!(
        "INSERT OR REPLACE INTO {table} ({}) VALUES ({})",
        cols.join(", "),
        marks.join(", ")
    ))?;
    let mut rows = st.query([])?;
    while let Some(row) = rows.next()? {
        let values: Vec<rusqlite::types::Value> = (0..cols.len())
            .map(|i| row.get::<_, rusqlite::types::Value>(i))
            .collect::<rusqlite::Result<_>>()?;
        *copied += ins.execute(rusqlite::params_from_iter(values))? as u64;
    }
    Ok(())
}

/// Make a fresh database at `path` (nothing is there now): open it, copy
/// what reads of the damaged file `from` (if any), then what the hub
/// holds, which wins: its instance id, every pool binding, the newest
/// history entry, a config write in progress, the failover log's head.
fn remake(
    path: &Path,
    from: Option<&Path>,
    carried: &Carried,
) -> Result<(Connection, Salvage), DbError> {
    let mut conn = open(path)?;
    let mut kept = Salvage::default();
    let instance = |c: &Connection| {
        c.query_row("SELECT value FROM meta WHERE key = 'instance'", [], |r| {
            r.get::<_, String>(0)
        })
        .ok()
    };
    if let Some(from) = from {
        let fresh = instance(&conn);
        // One commit for every row copied, not one (and an fsync) a row:
        // a log of 100,000 failovers took minutes, readers waiting.
        let tx = conn.unchecked_transaction()?;
        salvage_rows(&tx, from, &mut kept);
        tx.commit()?;
        // The damaged file's own id replaced the fresh one's.
        kept.instance = instance(&conn) != fresh;
    }
    let tx = conn.transaction()?;
    if let Some(i) = &carried.instance {
        tx.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('instance', ?1)",
            params![i],
        )?;
        kept.instance = true;
    }
    for (worker, pool) in &carried.bindings {
        tx.execute(
            "INSERT OR REPLACE INTO worker_pools (worker, pool) VALUES (?1, ?2)",
            params![worker, pool],
        )?;
    }
    kept.bindings_held = carried.bindings.len() as u64;
    if let Some(h) = &carried.history_head {
        let newest: Option<String> = tx
            .query_row(
                "SELECT revision FROM history ORDER BY id DESC LIMIT 1",
                [],
                |r| r.get(0),
            )
            .optional()?;
        if newest.as_deref() != Some(h.revision.as_str()) {
            insert_history(&tx, h)?;
        }
        kept.history_head = true;
    }
    if let Some(h) = &carried.intent {
        put_entry(&tx, SET_INTENT, h)?;
    }
    // The keys the hub answers from: the damaged file's, then what the
    // hub held (a retry after the remake is still answered once).
    keys_from_history(&tx)?;
    for (key, revision, agents) in &carried.keys {
        tx.execute(
            "INSERT OR IGNORE INTO idempotency_keys (key, revision, agents) VALUES (?1, ?2, ?3)",
            params![key, revision, agents],
        )?;
    }
    if let Some(r) = &carried.rollout {
        put_rollout(&tx, r)?;
        kept.rollout_held = kept.rollouts == 0;
    }
    // Seqs only grow, across the new file too.
    let seq: i64 = tx
        .query_row(
            "SELECT COALESCE(MAX(seq), 0) FROM (SELECT seq FROM sqlite_sequence WHERE name = 'failovers' UNION ALL SELECT MAX(seq) FROM failovers)",
            [],
            |r| r.get(0),
        )
        .unwrap_or(0);
    let head = seq.max(carried.head as i64);
    tx.execute("DELETE FROM sqlite_sequence WHERE name = 'failovers'", [])?;
    tx.execute(
        "INSERT INTO sqlite_sequence (name, seq) VALUES ('failovers', ?1)",
        params![head],
    )?;
    let recovery_head = read_recovery_head(&tx)
        .map_err(|e| DbError::Other(e.to_string()))?
        .max(carried.recovery_head);
    tx.execute("DELETE FROM sqlite_sequence WHERE name = 'recoveries'", [])?;
    tx.execute(
        "INSERT INTO sqlite_sequence (name, seq) VALUES ('recoveries', ?1)",
        params![recovery_head as i64],
    )?;
    tx.commit()?;
    Ok((conn, kept))
}

/// A history entry appended to the history.
const INSERT_HISTORY: &str = "INSERT INTO history (revision, at, by, agents, previous_agents, client) VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

/// A history entry recorded as the write in progress (one row).
const SET_INTENT: &str = "INSERT OR REPLACE INTO config_intent (id, revision, at, by, agents, previous_agents, client) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)";

/// `h` written by `sql` ([`INSERT_HISTORY`] or [`SET_INTENT`]: the same
/// six columns).
fn put_entry(c: &Connection, sql: &str, h: &HistoryEntry) -> rusqlite::Result<usize> {
    c.prepare_cached(sql)?.execute(params![
        h.revision,
        time(h.at),
        h.by,
        serde_json::to_string(&h.agents).unwrap_or_else(|_| "[]".into()),
        serde_json::to_string(&h.previous_agents).unwrap_or_else(|_| "[]".into()),
        h.client,
    ])
}

fn insert_history(c: &Connection, h: &HistoryEntry) -> rusqlite::Result<usize> {
    put_entry(c, INSERT_HISTORY, h)
}

/// The start of the error a command gets while the database cannot be
/// opened at its path: the hub answers 503 `database_unavailable`.
pub const UNAVAILABLE: &str = "database unavailable";

/// How often the writer looks at the file's identity when idle (it also
/// looks before acknowledging every batch).
const IDENTITY_EVERY: Duration = Duration::from_secs(1);
/// How long commits must go through after the last that failed before the
/// database is said to commit again.
const FAILING_ENDS: Duration = Duration::from_secs(10);

/// The identity of the file at `path` (device and inode), or `None` when
/// nothing is there.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The most problems `quick_check` is asked for.
const QUICK_CHECK_MAX: usize = 100;

/// SQLite's `quick_check`: the problems it reports (none is `ok`).
fn quick_check(conn: &Connection) -> Result<Vec<String>, DbError> {
    let mut st = conn.prepare(&format!("PRAGMA quick_check({QUICK_CHECK_MAX})"))?;
    let rows = st.query_map([], |r| r.get::<_, String>(0))?;
    let mut out = Vec::new();
    for r in rows {
        let r = r?;
        if r != "ok" {
            out.push(r);
        }
    }
    Ok(out)
}

const PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;";

/// The tables and indexes (no pragmas: this also runs inside the
/// migration's transaction).
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS history (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  revision TEXT NOT NULL,
  at TEXT NOT NULL,
  by TEXT NOT NULL,
  agents TEXT NOT NULL,
  previous_agents TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS failovers (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  worker TEXT NOT NULL,
  host TEXT NOT NULL,
  received_at TEXT NOT NULL,
  id TEXT NOT NULL,
  at TEXT NOT NULL,
  from_agent TEXT NOT NULL,
  to_agent TEXT,
  kind TEXT NOT NULL,
  status INTEGER,
  source TEXT NOT NULL,
  detail TEXT,
  token TEXT NOT NULL DEFAULT '',
  pool TEXT NOT NULL DEFAULT '',
  UNIQUE (worker, id, token)
);
CREATE TABLE IF NOT EXISTS worker_pools (
  worker TEXT PRIMARY KEY,
  pool TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS failovers_by_pool ON failovers (pool, seq);
CREATE TABLE IF NOT EXISTS config_intent (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  revision TEXT NOT NULL,
  at TEXT NOT NULL,
  by TEXT NOT NULL,
  agents TEXT NOT NULL,
  previous_agents TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS rollouts (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  idempotency_key TEXT,
  body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS failovers_by_worker ON failovers (worker, seq);
CREATE INDEX IF NOT EXISTS failovers_by_kind ON failovers (kind, seq);
CREATE INDEX IF NOT EXISTS failovers_by_from ON failovers (from_agent, seq);
CREATE INDEX IF NOT EXISTS failovers_by_to ON failovers (to_agent, seq);
CREATE TABLE IF NOT EXISTS recoveries (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  worker TEXT NOT NULL,
  host TEXT NOT NULL,
  at TEXT NOT NULL,
  from_agent TEXT,
  to_agent TEXT NOT NULL,
  held_off_s INTEGER NOT NULL,
  pool TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS recoveries_by_pool ON recoveries (pool, seq);
CREATE INDEX IF NOT EXISTS recoveries_by_worker ON recoveries (worker, seq);
";

/// A test hook for `tests/hub/damage.rs`: with `MACFLEET_TEST_MAX_PAGE_COUNT`
/// set, every connection is given SQLite's `max_page_count` pragma, so the
/// database meets `SQLITE_FULL` (what a full disk gives) once it holds that
/// many pages, without a filesystem to fill (a tmpfs needs a mount). Unset
/// (always, outside that test), nothing.
fn test_max_pages() -> Option<i64> {
    use std::sync::LazyLock;
    static PAGES: LazyLock<Option<i64>> = LazyLock::new(|| {
        std::env::var("MACFLEET_TEST_MAX_PAGE_COUNT")
            .ok()
            .and_then(|v| v.parse().ok())
    });
    *PAGES
}

fn open(path: &Path) -> Result<Connection, DbError> {
    let mut conn = Connection::open(path)?;
    // SQLite opens a file it may not write read-only, without a word;
    // every later write would fail (and switching to WAL fails first, with
    // a message that does not name the file). Refuse to start instead.
    if conn.is_readonly(rusqlite::MAIN_DB)? {
        return Err(DbError::Other(format!(
            "{} is read-only: the hub must be able to write its history and failover log",
            path.display()
        )));
    }
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.execute_batch(PRAGMAS)?;
    if let Some(n) = test_max_pages() {
        conn.pragma_update(None, "max_page_count", n)?;
    }
    migrate_v1(&mut conn)?;
    migrate_v2(&conn)?;
    conn.execute_batch(SCHEMA)?;
    // History entries gained the writing client (`User-Agent`).
    for table in ["history", "config_intent"] {
        let has: bool = conn.query_row(
            &format!("SELECT COUNT(*) > 0 FROM pragma_table_info('{table}') WHERE name = 'client'"),
            [],
            |r| r.get(0),
        )?;
        if !has {
            conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN client TEXT"))?;
        }
    }
    // ... and the write's `Idempotency-Key` (a retry is answered from it).
    for table in ["history", "config_intent"] {
        let has: bool = conn.query_row(
            &format!(
                "SELECT COUNT(*) > 0 FROM pragma_table_info('{table}') WHERE name = 'idempotency_key'"
            ),
            [],
            |r| r.get(0),
        )?;
        if !has {
            conn.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN idempotency_key TEXT"
            ))?;
        }
    }
    conn.execute_batch(
        "CREATE INDEX IF NOT EXISTS history_by_key ON history (idempotency_key) WHERE idempotency_key IS NOT NULL;
         CREATE TABLE IF NOT EXISTS idempotency_keys (
           id INTEGER PRIMARY KEY AUTOINCREMENT,
           key TEXT NOT NULL UNIQUE,
           revision TEXT NOT NULL,
           agents TEXT NOT NULL
         );",
    )?;
    keys_from_history(&conn)?;
    // The recovery log's seqs begin at the first start with it in Unix
    // milliseconds × 1,000 (as the in-memory log's did at every start),
    // then carry on: a `since` from before is below `oldest`, never above
    // the head.
    let start = (Utc::now().timestamp_millis().max(0) as u64).saturating_mul(1000);
    conn.execute(
        "INSERT INTO sqlite_sequence (name, seq) SELECT 'recoveries', ?1 \
         WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'recoveries')",
        params![start as i64],
    )?;
    // This database's identity: a restart keeps it, a fresh database (or
    // another hub's) has another, so a client can tell a replaced hub.
    conn.execute(
        "INSERT OR IGNORE INTO meta (key, value) VALUES ('instance', ?1)",
        params![new_instance()],
    )?;
    Ok(conn)
}

/// A fresh instance id: 16 hex digits of randomness.
fn new_instance() -> String {
    use rand::RngCore;
    let mut b = [0u8; 8];
    rand::rng().fill_bytes(&mut b);
    hex::encode(b)
}

/// A database from before pools: the failover log gains `pool`, which for
/// the old rows is their token's name (a token's pool by default).
fn migrate_v2(conn: &Connection) -> Result<(), DbError> {
    let has_table: bool = conn.query_row(
        "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'failovers'",
        [],
        |r| r.get(0),
    )?;
    let has_pool: bool = conn.query_row(
        "SELECT COUNT(*) > 0 FROM pragma_table_info('failovers') WHERE name = 'pool'",
        [],
        |r| r.get(0),
    )?;
    if !has_table || has_pool {
        return Ok(());
    }
    tracing::info!("migrating the failover log: records gain their pool");
    conn.execute_batch(
        "BEGIN;
         ALTER TABLE failovers ADD COLUMN pool TEXT NOT NULL DEFAULT '';
         UPDATE failovers SET pool = token;
         COMMIT;",
    )?;
    Ok(())
}

/// A database from before failover ids were scoped by token: ids were
/// unique per worker. Rebuild the table with the `token` column (empty for
/// the old rows) and the wider unique key, in one transaction; seqs kept.
fn migrate_v1(conn: &mut Connection) -> Result<(), DbError> {
    let has_table: bool = conn.query_row(
        "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'failovers'",
        [],
        |r| r.get(0),
    )?;
    if !has_table {
        return Ok(());
    }
    let has_token: bool = conn.query_row(
        "SELECT COUNT(*) > 0 FROM pragma_table_info('failovers') WHERE name = 'token'",
        [],
        |r| r.get(0),
    )?;
    if has_token {
        return Ok(());
    }
    tracing::info!("migrating the failover log: ids become unique per (worker, token)");
    let tx = conn.transaction()?;
    tx.execute_batch(
        "ALTER TABLE failovers RENAME TO failovers_v1;
         DROP INDEX IF EXISTS failovers_by_worker;
         DROP INDEX IF EXISTS failovers_by_kind;
         DROP INDEX IF EXISTS failovers_by_from;
         DROP INDEX IF EXISTS failovers_by_to;",
    )?;
    tx.execute_batch(SCHEMA)?;
    tx.execute_batch(
        "INSERT INTO failovers (seq, worker, host, received_at, id, at, from_agent, to_agent, kind, status, source, detail, token)
           SELECT seq, worker, host, received_at, id, at, from_agent, to_agent, kind, status, source, detail, '' FROM failovers_v1;
         DROP TABLE failovers_v1;",
    )?;
    tx.commit()?;
    Ok(())
}

/// What the writer takes of the file opened at start.
struct FromFile {
    conn: Connection,
    last_history: Option<HistoryEntry>,
    intent: Option<HistoryEntry>,
    instance: Option<String>,
}

/// The file at `path` opened at start, and the problems `quick_check`
/// found in it (0 when none, or when it was not damaged). A damaged file
/// (cut short, its header gone, failing `quick_check`) is set aside and
/// the hub starts on a fresh one ([`start_afresh`]).
fn open_at_start(
    path: &Path,
    started_empty: bool,
    state: &FileState,
) -> Result<(Opened, u64), DbError> {
    // A file cut short (or its header gone) is damaged before SQLite
    // reads a page of it.
    let [wal, _] = sidecars(path);
    let wal_len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    let cut = if started_empty {
        // SQLite would delete the WAL of an empty file, and what it
        // holds with it: a file truncated under a hub that was killed.
        (wal_len > 0 && wal_page_size(&wal).is_some())
            .then(|| format!("it is 0 bytes long, beside a WAL of {wal_len} bytes"))
    } else {
        looks_damaged(path, 0)
    };
    let probed = match cut {
        Some(why) => Err(DbError::Damaged(why)),
        None => Opened::probe(path),
    };
    // A file that opens but fails `quick_check` (pages overwritten) is
    // damaged too: set aside and made afresh of what reads, rather than
    // run on with rows that silently are not there.
    let mut found_at_start = 0;
    let probed = match probed {
        Ok(o) if !o.problems.is_empty() => {
            found_at_start = o.problems.len() as u64;
            let why = failed_quick_check(&o.problems);
            o.close_as_found();
            Err(DbError::Damaged(why))
        }
        other => other,
    };
    let o = match probed {
        Ok(o) => {
            if started_empty {
                tracing::warn!(
                    path = %path.display(),
                    "the database file is empty (truncated?): starting a fresh history and failover log"
                );
            }
            o
        }
        Err(e) if e.is_damage() => start_afresh(path, e, state)?,
        Err(e) => return Err(e),
    };
    if !o.problems.is_empty() {
        tracing::error!(
            path = %path.display(),
            problems = o.problems.len(),
            first = %o.problems[0],
            "the database failed SQLite's quick_check: some history or failovers may be unreadable or gone"
        );
    }
    Ok((o, found_at_start))
}

/// A damaged file is set aside (never deleted) and the hub starts on a
/// fresh one made of what reads of it, instead of refusing to start, ever
/// again, on the same error; said in the log and kept for health.
fn start_afresh(path: &Path, e: DbError, state: &FileState) -> Result<Opened, DbError> {
    let why = e.to_string();
    let moved = set_aside(path).map_err(|io| {
        DbError::Other(format!(
            "{} is damaged ({why}) and cannot be moved aside: {io}",
            path.display()
        ))
    })?;
    let (conn, kept) = remake(path, Some(&moved), &Carried::default())?;
    drop(conn);
    let o = Opened::probe(path)?;
    tracing::error!(
        path = %path.display(),
        moved_to = %moved.display(),
        "the database is damaged ({why}): moved aside to {} and started on a fresh one: {}",
        moved.display(),
        kept.sentence()
    );
    state.damaged.store(1, Ordering::Release);
    if let Ok(mut d) = state.damage.lock() {
        *d = Some(Damage {
            at: Utc::now(),
            why,
            moved_to: moved,
            at_start: true,
            kept,
        });
    }
    Ok(o)
}

/// Called with the failovers and recoveries of each committed batch, in
/// seq order.
pub type OnCommit = Box<dyn Fn(Commits) + Send + 'static>;

impl Db {
    /// Open (or create) the database and start its writer thread.
    pub fn open(path: &Path, bounds: Bounds, on_commit: OnCommit) -> Result<Db, DbError> {
        let started_empty = std::fs::metadata(path).is_ok_and(|m| m.len() == 0);
        let state = Arc::new(FileState::default());
        let (opened, found_at_start) = open_at_start(path, started_empty, &state)?;
        let (tx, rx) = std::sync::mpsc::sync_channel(4096);
        let db = Db {
            read: Arc::new(Mutex::new(opened.read)),
            tx,
            head: Arc::new(AtomicU64::new(opened.head)),
            writer: Mutex::new(None),
            unreadable: Unreadable::default(),
            started_empty,
            path: path.to_path_buf(),
            state,
            quick_check_problems: found_at_start.max(opened.problems.len() as u64),
            errors: Arc::new(AtomicU64::new(0)),
            held: Arc::new(Mutex::new(None)),
            binds: Arc::new(Mutex::new(BindQueue::new())),
            pending: Arc::new(Mutex::new(Pending::default())),
            recovery_head: Arc::new(AtomicU64::new(opened.recovery_head)),
            bound: bounds.failovers,
            instance: Mutex::new(opened.instance.clone()),
        };
        let from_file = FromFile {
            conn: opened.writer,
            last_history: opened.last_history,
            intent: opened.intent,
            instance: opened.instance,
        };
        let writer = db.writer(from_file, bounds, on_commit)?;
        let writer = std::thread::Builder::new()
            .name("macfleet-db".into())
            .spawn(move || writer_loop(writer, rx))
            .map_err(|e| DbError::Other(format!("cannot start the writer thread: {e}")))?;
        if let Ok(mut w) = db.writer.lock() {
            *w = Some(writer);
        }
        Ok(db)
    }

    /// The writer of this database, sharing its handles, from what the
    /// file held at start (the logs counted per pool as far as they read,
    /// the kept keys, the newest rollout).
    fn writer(&self, f: FromFile, bounds: Bounds, on_commit: OnCommit) -> Result<Writer, DbError> {
        let read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        // A damaged log is counted as far as it reads.
        let counts = pool_counts(&read, "failovers").unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot count the failover log's records per pool");
            PoolCounts::new()
        });
        let recovery_counts = pool_counts(&read, "recoveries").unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot count the recovery log's records per pool");
            PoolCounts::new()
        });
        let keys = read_keys(&read)?;
        let rollout = newest_rollout(&read).unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot read the newest rollout");
            None
        });
        drop(read);
        Ok(Writer {
            conn: f.conn,
            path: self.path.clone(),
            id: file_id(&self.path),
            size: std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0),
            suspect: None,
            read: self.read.clone(),
            state: self.state.clone(),
            last_history: f.last_history,
            intent: f.intent,
            keys,
            instance: f.instance,
            rollout,
            held: self.held.clone(),
            head: self.head.clone(),
            recovery_head: self.recovery_head.clone(),
            pending: self.pending.clone(),
            bounds,
            on_commit,
            counts,
            recovery_counts,
            errors: self.errors.clone(),
            binds: self.binds.clone(),
            probed: None,
        })
    }

    /// What a database made afresh under the running hub takes from its
    /// memory: every worker id's pool (`f` is asked at that moment).
    pub fn hold_bindings(&self, f: HeldBindings) {
        if let Ok(mut h) = self.held.lock() {
            *h = Some(f);
        }
    }

    /// The last damaged file found and set aside, if any.
    pub fn damage(&self) -> (u64, Option<Damage>) {
        (
            self.state.damaged.load(Ordering::Acquire),
            self.state.damage.lock().ok().and_then(|d| d.clone()),
        )
    }

    /// Statements that met damage (SQLITE_CORRUPT, SQLITE_NOTADB) since
    /// the hub started.
    pub fn corrupt_statements(&self) -> u64 {
        self.state.corrupt_statements.load(Ordering::Relaxed)
    }

    /// Why the database's place (its directory, the file's mode) would
    /// fail the next start or a remake, though the file is written now.
    pub fn place_problem(&self) -> Option<String> {
        self.state.place.lock().ok().and_then(|p| p.clone())
    }

    /// Repeating problems of the database, said once then counted (the
    /// routes refusing writes for it share them).
    pub fn repeats(&self) -> &crate::hub::repeats::Repeats {
        &self.state.repeats
    }

    /// Queue failovers for the next batch. `None` when the queue is full
    /// (the caller answers 503 and the worker retries; ids make it safe);
    /// otherwise a receiver that answers once the batch is committed.
    pub fn queue_failovers(
        &self,
        batch: Vec<NewFailover>,
    ) -> Result<Option<oneshot::Receiver<Result<(), String>>>, DbError> {
        let (tx, rx) = oneshot::channel();
        match self.tx.try_send(Cmd::Failovers(batch, tx)) {
            Ok(()) => Ok(Some(rx)),
            Err(TrySendError::Full(_)) => Ok(None),
            Err(TrySendError::Disconnected(_)) => Err(DbError::WriterGone),
        }
    }

    /// Record a config revision; returns once it is committed.
    pub async fn record_history(&self, entry: HistoryEntry) -> Result<(), DbError> {
        let (tx, rx) = oneshot::channel();
        self.send(Cmd::History(entry, tx)).await?;
        rx.await
            .map_err(|_| DbError::WriterGone)?
            .map_err(DbError::Other)
    }

    /// Record, durably, the config write about to replace the file (its
    /// revision and author, as its history entry will say), or clear it
    /// (`None`). A history entry of that revision clears it in the same
    /// transaction; a hub killed between the rename and that entry finds
    /// it at start ([`Db::intent`]) and records the write as its author's.
    pub async fn record_intent(&self, entry: Option<HistoryEntry>) -> Result<(), DbError> {
        self.record_intent_keyed(entry, None).await
    }

    /// [`Db::record_intent`] with the write's `Idempotency-Key`: the
    /// history entry of that revision keeps it ([`Db::keyed`]), also when
    /// it is recorded by the next start after a kill.
    pub async fn record_intent_keyed(
        &self,
        entry: Option<HistoryEntry>,
        key: Option<String>,
    ) -> Result<(), DbError> {
        let (tx, rx) = oneshot::channel();
        self.send(Cmd::Intent(entry, key, tx)).await?;
        rx.await
            .map_err(|_| DbError::WriterGone)?
            .map_err(DbError::Other)
    }

    /// Record a rollout as it stands; returns once it is committed.
    pub async fn record_rollout(&self, row: RolloutRow) -> Result<(), DbError> {
        let (tx, rx) = oneshot::channel();
        self.send(Cmd::Rollout(row, tx)).await?;
        rx.await
            .map_err(|_| DbError::WriterGone)?
            .map_err(DbError::Other)
    }

    /// The newest rollouts' bodies, newest first.
    pub fn rollouts(&self, limit: u32) -> Result<Vec<String>, DbError> {
        self.with_read(|c| {
            let mut st = c.prepare("SELECT body FROM rollouts ORDER BY seq DESC LIMIT ?1")?;
            let rows = st.query_map(params![limit], |r| r.get::<_, String>(0))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    /// The rollout started with this `Idempotency-Key`, if one was.
    pub fn rollout_by_key(&self, key: &str) -> Result<Option<String>, DbError> {
        self.with_read(|c| {
            Ok(c.query_row(
                "SELECT body FROM rollouts WHERE idempotency_key = ?1 ORDER BY seq DESC LIMIT 1",
                params![key],
                |r| r.get::<_, String>(0),
            )
            .optional()?)
        })
    }

    /// This database's instance id (see [`open`]): what `whoami` says.
    pub fn instance(&self) -> Result<String, DbError> {
        // Never changes (a file made afresh keeps it): read once, so a
        // damaged page never makes the hub look like another.
        if let Some(i) = self.instance.lock().ok().and_then(|i| i.clone()) {
            return Ok(i);
        }
        let read = self.with_read(|c| {
            Ok(
                c.query_row("SELECT value FROM meta WHERE key = 'instance'", [], |r| {
                    r.get::<_, String>(0)
                })?,
            )
        })?;
        if let Ok(mut i) = self.instance.lock() {
            *i = Some(read.clone());
        }
        Ok(read)
    }

    /// The config write in progress when the hub last stopped, if its
    /// history entry was never recorded.
    pub fn intent(&self) -> Result<Option<HistoryEntry>, DbError> {
        self.with_read(read_intent)
    }

    /// Wait until everything queued so far is committed.
    pub async fn flush(&self) -> Result<(), DbError> {
        let (tx, rx) = oneshot::channel();
        self.send(Cmd::Flush(tx)).await?;
        rx.await.map_err(|_| DbError::WriterGone)
    }

    /// Commit everything queued so far, then end the writer and close its
    /// connection; later writes fail with [`DbError::WriterGone`]. Called
    /// when the hub stops, so that nothing of a stopped hub still holds or
    /// watches the file (a hub started on the same path next is alone).
    pub async fn shut_down(&self) -> Result<(), DbError> {
        let (tx, rx) = oneshot::channel();
        self.send(Cmd::Close(tx)).await?;
        rx.await.map_err(|_| DbError::WriterGone)
    }

    async fn send(&self, cmd: Cmd) -> Result<(), DbError> {
        let tx = self.tx.clone();
        tokio::task::spawn_blocking(move || tx.send(cmd).map_err(|_| DbError::WriterGone))
            .await
            .map_err(|_| DbError::WriterGone)?
    }

    /// The highest committed failover seq.
    pub fn head(&self) -> u64 {
        self.head.load(Ordering::Acquire)
    }

    /// Queue a recovery for the next batch; never waits (its heartbeat is
    /// answered without the disk). Its `recovery` event is published once
    /// it is committed, with its seq. Past the log's bound of recoveries
    /// waiting (a writer that cannot commit), the oldest waiting is dropped
    /// and counted ([`Db::recoveries_dropped`]).
    pub fn queue_recovery(&self, r: NewRecovery) {
        let bound = usize::try_from(self.bound.max(1)).unwrap_or(usize::MAX);
        let first = match self.pending.lock() {
            Ok(mut p) => {
                let first = p.recoveries.is_empty();
                p.recoveries.push_back(r);
                while p.recoveries.len() > bound {
                    p.recoveries.pop_front();
                    p.dropped += 1;
                }
                first
            }
            Err(_) => return,
        };
        // One wake for what gathers until the writer takes it; a full
        // queue means the writer is busy and takes it with its next batch.
        if first {
            let _ = self.tx.try_send(Cmd::Wake);
        }
    }

    /// Recoveries dropped before they were committed (the writer could not
    /// keep up, or could not commit, while the log's bound of them waited).
    pub fn recoveries_dropped(&self) -> u64 {
        self.pending.lock().map(|p| p.dropped).unwrap_or(0)
    }

    /// The highest committed recovery seq (or the log's seed when it has
    /// none yet).
    pub fn recovery_head(&self) -> u64 {
        self.recovery_head.load(Ordering::Acquire)
    }

    /// Recoveries, oldest first after `since`, as `GET /v1/failovers`
    /// pages: `next` is the last one's seq when the page is full, else the
    /// head (read before the rows, so it never passes an uncommitted one).
    pub fn recoveries(&self, f: &RecoveryFilter) -> Result<crate::wire::RecoveriesPage, DbError> {
        let head = self.recovery_head();
        let (sql, args) = log_query(
            "SELECT seq, worker, host, at, from_agent, to_agent, held_off_s FROM recoveries",
            f.since,
            f.worker.as_deref(),
            f.agent.as_deref(),
            None,
            f.limit,
        );
        self.with_read(|c| {
            let mut st = c.prepare_cached(&sql)?;
            let rows = st.query_map(rusqlite::params_from_iter(args.iter()), |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, String>(5)?,
                    r.get::<_, i64>(6)?,
                ))
            })?;
            let mut events = Vec::new();
            let mut scanned = 0u32;
            let mut last = None;
            for row in rows {
                let (seq, worker, host, at, from, to, held) = row?;
                scanned += 1;
                last = Some(seq as u64);
                match parse_time(&at) {
                    Ok(at) => events.push(RecoveryRecord {
                        seq: seq as u64,
                        worker,
                        host,
                        at,
                        from,
                        to,
                        held_off_s: held.max(0) as u64,
                    }),
                    Err(e) => self.unreadable.note("recoveries", seq as u64, &e),
                }
            }
            let oldest: i64 =
                c.query_row("SELECT COALESCE(MIN(seq), 0) FROM recoveries", [], |r| {
                    r.get(0)
                })?;
            let next = if scanned == f.limit {
                last.unwrap_or(f.since)
            } else {
                head.max(last.unwrap_or(0))
            };
            Ok(crate::wire::RecoveriesPage {
                events,
                next,
                oldest: oldest.max(0) as u64,
            })
        })
    }

    fn with_read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let conn = self
            .read
            .lock()
            .map_err(|_| DbError::Other("read connection poisoned".into()))?;
        let r = f(&conn);
        if let Err(e) = &r {
            self.errors.fetch_add(1, Ordering::Relaxed);
            if e.is_damage() {
                // The writer sets the file aside within a second.
                self.state
                    .corrupt_statements
                    .fetch_add(1, Ordering::Relaxed);
                let generation = self.state.generation.load(Ordering::Acquire);
                if let Ok(mut d) = self.state.read_damage.lock() {
                    *d = Some((generation, format!("a read met damage: {e}")));
                }
                // Woken now rather than at its next look.
                let (tx, _) = oneshot::channel();
                let _ = self.tx.try_send(Cmd::Flush(tx));
            }
        }
        r
    }

    /// Batches that failed to commit and reads that failed since the hub
    /// started (`macfleet_hub_db_errors_total`).
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// The newest readable entry (an unreadable one is skipped, see
    /// [`Db::history`]).
    pub fn latest_history(&self) -> Result<Option<HistoryEntry>, DbError> {
        Ok(self.history(16)?.into_iter().next())
    }

    /// The write that carried `Idempotency-Key: key`, if the hub still
    /// holds it (one of the last [`KEYS_KEPT`]): its revision and list
    /// (the first answer).
    pub fn keyed(&self, key: &str) -> Result<Option<(String, Vec<String>)>, DbError> {
        self.with_read(|c| {
            let row = c
                .prepare_cached("SELECT revision, agents FROM idempotency_keys WHERE key = ?1")?
                .query_row(params![key], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
                })
                .optional()?;
            match row {
                None => Ok(None),
                Some((revision, agents)) => Ok(Some((
                    revision,
                    serde_json::from_str(&agents).map_err(|e| DbError::Other(e.to_string()))?,
                ))),
            }
        })
    }

    /// Newest first.
    pub fn history(&self, limit: u32) -> Result<Vec<HistoryEntry>, DbError> {
        self.with_read(|c| read_history(c, limit, &self.unreadable))
    }

    /// The oldest seq still held (0 when the log is empty).
    pub fn oldest(&self) -> Result<u64, DbError> {
        self.with_read(|c| {
            Ok(
                c.query_row("SELECT COALESCE(MIN(seq), 0) FROM failovers", [], |r| {
                    r.get::<_, i64>(0)
                })? as u64,
            )
        })
    }

    /// Oldest first after `since`. A stored row that cannot be read back
    /// (written by an older hub that let a bad time in, or edited by hand)
    /// is skipped, logged once and counted, never allowed to fail the page.
    pub fn failovers(&self, f: &FailoverFilter) -> Result<FailoverScan, DbError> {
        let (sql, args) = log_query(
            "SELECT seq, worker, host, received_at, id, at, from_agent, to_agent, kind, status, source, detail \
             FROM failovers",
            f.since,
            f.worker.as_deref(),
            f.agent.as_deref(),
            f.kind.as_deref(),
            f.limit,
        );
        self.with_read(|c| {
            let mut st = c.prepare_cached(&sql)?;
            let rows = st.query_map(rusqlite::params_from_iter(args.iter()), row_to_record)?;
            let mut scan = FailoverScan::default();
            for r in rows {
                let (seq, record) = r?;
                scan.scanned += 1;
                scan.last = Some(seq);
                match record {
                    Ok(rec) => scan.records.push(rec),
                    Err(e) => self.unreadable.note("failovers", seq, &e),
                }
            }
            Ok(scan)
        })
    }

    /// How many distinct stored rows were found unreadable (and skipped)
    /// since the hub started.
    pub fn unreadable_rows(&self) -> u64 {
        self.unreadable.count.load(Ordering::Relaxed)
    }

    /// Whether the file was there but empty when the hub started (a
    /// truncated database: the history and failover log began afresh).
    pub fn started_empty(&self) -> bool {
        self.started_empty
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Problems SQLite's `quick_check` found at start.
    pub fn quick_check_problems(&self) -> u64 {
        self.quick_check_problems
    }

    /// Times the file was found removed or replaced under the running hub
    /// and made afresh at its path, and when it last was.
    /// Whether the last file made afresh at the path kept the removed
    /// file's rows.
    pub fn recreated_kept(&self) -> bool {
        self.state.recreated_kept.load(Ordering::Acquire)
    }

    pub fn recreated(&self) -> (u64, Option<DateTime<Utc>>) {
        (
            self.state.recreated.load(Ordering::Acquire),
            self.state.recreated_at.lock().ok().and_then(|t| *t),
        )
    }

    /// Failover records pruned per pool while it held more than its fair
    /// share of the log's bound (pools that lost none are not listed).
    pub fn dropped(&self) -> std::collections::BTreeMap<String, u64> {
        self.state
            .dropped
            .lock()
            .map(|d| d.clone())
            .unwrap_or_default()
    }

    /// Bind `worker` to `pool`, durably; returns once committed, in one
    /// commit with every other id bound meanwhile ([`BindQueue`]).
    pub async fn bind(&self, worker: &str, pool: &str) -> Result<(), DbError> {
        let (mut done, first) = {
            let mut q = self
                .binds
                .lock()
                .map_err(|_| DbError::Other("the bind queue's lock is poisoned".into()))?;
            q.ids.push((worker.to_string(), pool.to_string()));
            let first = !std::mem::replace(&mut q.sent, true);
            (q.done.subscribe(), first)
        };
        if first {
            let sent = match self.tx.try_send(Cmd::Binds) {
                Ok(()) => Ok(()),
                Err(TrySendError::Full(cmd)) => self.send(cmd).await,
                Err(TrySendError::Disconnected(_)) => Err(DbError::WriterGone),
            };
            if let Err(e) = sent {
                // The writer is gone: every id of this batch hears it.
                gone(&self.binds);
                return Err(e);
            }
        }
        let answer = done
            .wait_for(Option::is_some)
            .await
            .map_err(|_| DbError::WriterGone)?
            .clone();
        match answer {
            Some(Ok(())) => Ok(()),
            Some(Err(e)) => Err(DbError::Other(e)),
            None => Err(DbError::WriterGone),
        }
    }

    /// Forget the bindings of `workers` (the hub forgot them); not waited
    /// for.
    pub fn unbind(&self, workers: Vec<String>) {
        if !workers.is_empty() {
            let _ = self.tx.try_send(Cmd::Unbind(workers));
        }
    }

    /// Every worker id's pool.
    pub fn bindings(&self) -> Result<Vec<(String, String)>, DbError> {
        self.with_read(|c| {
            let mut st = c.prepare("SELECT worker, pool FROM worker_pools")?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    /// Why the database cannot be opened or written at its path now, if
    /// it cannot (what must be durable is refused with 503 meanwhile).
    pub fn unavailable(&self) -> Option<String> {
        let failing = || {
            let f = self.state.failing.lock().ok()?;
            f.as_ref().map(|(why, _)| why.clone())
        };
        let u = self.state.unavailable.lock().ok().and_then(|u| u.clone());
        u.or_else(failing)
    }

    /// Stop the writer after it has committed everything queued, and wait
    /// for it to end (its connection closed).
    pub fn close(&self) {
        let handle = self.writer.lock().ok().and_then(|mut h| h.take());
        if let Some(h) = handle {
            let (tx, _rx) = oneshot::channel();
            let _ = self.tx.send(Cmd::Close(tx));
            let _ = h.join();
        }
    }
}

/// A page of a log (`select` ends with its `FROM`): after `since`, by
/// worker, agent (`from` or `to`) and kind when given, oldest first, at
/// most `limit`; the statement and its arguments.
fn log_query(
    select: &str,
    since: u64,
    worker: Option<&str>,
    agent: Option<&str>,
    kind: Option<&str>,
    limit: u32,
) -> (String, Vec<rusqlite::types::Value>) {
    let mut sql = format!("{select} WHERE seq > ?1");
    let mut args: Vec<rusqlite::types::Value> = vec![(since.min(i64::MAX as u64) as i64).into()];
    if let Some(w) = worker {
        args.push(w.to_string().into());
        sql.push_str(&format!(" AND worker = ?{}", args.len()));
    }
    if let Some(a) = agent {
        args.push(a.to_string().into());
        let n = args.len();
        sql.push_str(&format!(" AND (from_agent = ?{n} OR to_agent = ?{n})"));
    }
    if let Some(k) = kind {
        args.push(k.to_string().into());
        sql.push_str(&format!(" AND kind = ?{}", args.len()));
    }
    args.push(i64::from(limit).into());
    sql.push_str(&format!(" ORDER BY seq LIMIT ?{}", args.len()));
    (sql, args)
}

/// The config write in progress recorded in `c`, if any.
/// A rollout's row, inserted or replaced by its id; only the newest
/// [`ROLLOUTS_KEPT`] are kept.
fn put_rollout(tx: &Connection, r: &RolloutRow) -> Result<(), DbError> {
    tx.execute(
        "INSERT INTO rollouts (id, idempotency_key, body) VALUES (?1, ?2, ?3) \
         ON CONFLICT (id) DO UPDATE SET body = excluded.body",
        params![r.id, r.key, r.body],
    )?;
    tx.execute(
        "DELETE FROM rollouts WHERE seq <= (SELECT MAX(seq) FROM rollouts) - ?1",
        params![ROLLOUTS_KEPT],
    )?;
    Ok(())
}

/// The newest rollout's row, if any.
fn newest_rollout(c: &Connection) -> Result<Option<RolloutRow>, DbError> {
    Ok(c.query_row(
        "SELECT id, idempotency_key, body FROM rollouts ORDER BY seq DESC LIMIT 1",
        [],
        |r| {
            Ok(RolloutRow {
                id: r.get(0)?,
                key: r.get(1)?,
                body: r.get(2)?,
            })
        },
    )
    .optional()?)
}

fn read_intent(c: &Connection) -> Result<Option<HistoryEntry>, DbError> {
    let row = c
                .query_row(
                    "SELECT revision, at, by, agents, previous_agents, client FROM config_intent WHERE id = 1",
                    [],
                    |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, String>(2)?,
                            r.get::<_, String>(3)?,
                            r.get::<_, String>(4)?,
                            r.get::<_, Option<String>>(5)?,
                        ))
                    },
                )
                .optional()?;
    let Some((revision, at, by, agents, previous, client)) = row else {
        return Ok(None);
    };
    let list = |t: &str| -> Result<Vec<String>, DbError> {
        serde_json::from_str(t).map_err(|e| DbError::Other(e.to_string()))
    };
    Ok(Some(HistoryEntry {
        revision,
        at: parse_time(&at)?,
        by,
        agents: list(&agents)?,
        previous_agents: list(&previous)?,
        client,
    }))
}

/// Newest first; an unreadable entry is skipped and noted.
fn read_history(
    c: &Connection,
    limit: u32,
    unreadable: &Unreadable,
) -> Result<Vec<HistoryEntry>, DbError> {
    let mut st = c.prepare_cached(
        "SELECT id, revision, at, by, agents, previous_agents, client FROM history ORDER BY id DESC LIMIT ?1",
    )?;
    let rows = st.query_map(params![limit], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
            r.get::<_, String>(4)?,
            r.get::<_, String>(5)?,
            r.get::<_, Option<String>>(6)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, revision, at, by, agents_text, previous, client) = row?;
        let agents = |text: &str| -> Result<Vec<String>, DbError> {
            serde_json::from_str(text).map_err(|e| DbError::Other(e.to_string()))
        };
        let entry = (|| -> Result<HistoryEntry, DbError> {
            Ok(HistoryEntry {
                revision,
                at: parse_time(&at)?,
                by,
                agents: agents(&agents_text)?,
                previous_agents: agents(&previous)?,
                client,
            })
        })();
        match entry {
            Ok(e) => out.push(e),
            Err(e) => unreadable.note("history", id as u64, &e),
        }
    }
    Ok(out)
}

/// One page's worth of the failover log as scanned: the readable records,
/// and how far the scan went (counting rows skipped as unreadable), so that
/// paging moves past a bad row instead of stopping on it.
#[derive(Debug, Default)]
pub struct FailoverScan {
    pub records: Vec<FailoverRecord>,
    /// Rows the query returned, readable or not.
    pub scanned: u32,
    /// The seq of the last row scanned.
    pub last: Option<u64>,
}

/// Stored rows found unreadable: each logged once (up to a bound on what
/// is remembered), all counted.
#[derive(Default)]
struct Unreadable {
    count: AtomicU64,
    seen: Mutex<std::collections::HashSet<(&'static str, u64)>>,
}

impl Unreadable {
    /// Rows remembered, so a bad row read on every page logs once.
    const REMEMBER: usize = 10_000;

    fn note(&self, table: &'static str, id: u64, e: &DbError) {
        let Ok(mut seen) = self.seen.lock() else {
            return;
        };
        if seen.len() < Self::REMEMBER && seen.insert((table, id)) {
            self.count.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(table, id, error = %e, "unreadable row skipped");
        }
    }
}

type RowResult = Result<FailoverRecord, DbError>;

fn row_to_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<(u64, RowResult)> {
    let seq: i64 = r.get(0)?;
    let worker: String = r.get(1)?;
    let host: String = r.get(2)?;
    let received_at: String = r.get(3)?;
    let id: String = r.get(4)?;
    let at: String = r.get(5)?;
    let from: String = r.get(6)?;
    let to: Option<String> = r.get(7)?;
    let kind: String = r.get(8)?;
    let status: Option<i64> = r.get(9)?;
    let source: String = r.get(10)?;
    let detail: Option<String> = r.get(11)?;
    Ok((
        seq as u64,
        (|| {
            let kind = kind.parse().map_err(DbError::Other)?;
            let source = serde_json::from_value(serde_json::Value::String(source))
                .map_err(|e| DbError::Other(e.to_string()))?;
            Ok(FailoverRecord {
                seq: seq as u64,
                worker,
                host,
                received_at: parse_time(&received_at)?,
                failover: Failover {
                    id,
                    at: parse_time(&at)?,
                    from,
                    to,
                    cause: Cause {
                        kind,
                        status: status.and_then(|s| u16::try_from(s).ok()),
                        source,
                        // Served through the scrubber: a row stored before
                        // a rule existed (or by an older hub) is covered too.
                        detail: detail.map(crate::scrub::scrub_string),
                    },
                },
            })
        })(),
    ))
}

fn parse_time(s: &str) -> Result<DateTime<Utc>, DbError> {
    DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| DbError::Other(format!("bad time {s:?} in the database: {e}")))
}

fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

const MAX_BATCH: usize = 2_000;

/// Answered once a command's batch is committed (or failed).
type Ack = oneshot::Sender<Result<(), String>>;

/// The writer thread's state: its connection and what it needs to make the
/// file afresh when it is removed under the running hub.
struct Writer {
    conn: Connection,
    path: PathBuf,
    /// The identity of the file `conn` writes (`None`: there is none).
    id: Option<(u64, u64)>,
    /// The largest size the file was seen at: a live database never
    /// shrinks (the hub never vacuums).
    size: u64,
    /// A statement met damage in the file (SQLITE_CORRUPT, SQLITE_NOTADB).
    suspect: Option<String>,
    read: Arc<Mutex<Connection>>,
    state: Arc<FileState>,
    /// The newest history entry, to begin a new file's history with (the
    /// list in force survives a restart).
    last_history: Option<HistoryEntry>,
    /// The config write in progress, as committed.
    intent: Option<HistoryEntry>,
    /// The kept `Idempotency-Key`s, as committed: a file made afresh
    /// keeps them.
    keys: Vec<KeptKey>,
    /// This database's instance id: a file made afresh keeps it.
    instance: Option<String>,
    /// The newest rollout, as committed: a file made afresh keeps it.
    rollout: Option<RolloutRow>,
    /// Every worker id's pool, from the hub's memory.
    held: Arc<Mutex<Option<HeldBindings>>>,
    head: Arc<AtomicU64>,
    recovery_head: Arc<AtomicU64>,
    /// Recoveries for the next batch.
    pending: Arc<Mutex<Pending>>,
    bounds: Bounds,
    on_commit: OnCommit,
    /// Failover records held per pool.
    counts: PoolCounts,
    /// Recovery records held per pool.
    recovery_counts: PoolCounts,
    /// Batches not committed (`GET /metrics`), shared with the `Db`.
    errors: Arc<AtomicU64>,
    /// New worker ids waiting for the next commit, shared with the `Db`.
    binds: Arc<Mutex<BindQueue>>,
    /// When the room probe last ran ([`crate::hub::room`]).
    probed: Option<std::time::Instant>,
}

/// Failover records held per pool.
type PoolCounts = std::collections::HashMap<String, u64>;

/// Records held per pool in `table` (`failovers` or `recoveries`).
fn pool_counts(conn: &Connection, table: &str) -> Result<PoolCounts, DbError> {
    let mut st = conn.prepare(&format!("SELECT pool, COUNT(*) FROM {table} GROUP BY pool"))?;
    let rows = st.query_map([], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64))
    })?;
    Ok(rows.collect::<Result<PoolCounts, _>>()?)
}

/// How many records each pool may keep under `bound`: max-min fair (a pool
/// under an equal share keeps all it has, the rest is shared among the
/// others), so one pool's flood evicts only its own oldest records.
fn fair_shares(counts: &PoolCounts, bound: u64) -> PoolCounts {
    let mut pools: Vec<(&String, u64)> = counts.iter().map(|(p, c)| (p, *c)).collect();
    pools.sort_by_key(|(_, c)| *c);
    let mut left = bound;
    let mut out = PoolCounts::new();
    let n = pools.len() as u64;
    for (i, (p, c)) in pools.into_iter().enumerate() {
        let fair = left / (n - i as u64).max(1);
        let keep = c.min(fair);
        left -= keep;
        out.insert(p.clone(), keep);
    }
    out
}

impl Writer {
    /// Make sure `conn` writes a sound file at the path: when the file
    /// was removed or replaced, make it afresh there; when it is damaged
    /// (shrunk, its header gone, a statement met damage), move it aside as
    /// `<name>.damaged-<UTC time>` and make it afresh from what reads of it
    /// and what the hub holds (its instance id, every pool binding, the
    /// newest history entry, the failover log's head), and say so. `Err`
    /// when it cannot be.
    fn ensure_file(&mut self) -> Result<(), String> {
        let now = file_id(&self.path);
        let same = now.is_some() && now == self.id;
        let damage = if same {
            match self
                .suspect
                .take()
                .or_else(|| self.read_damage())
                .or_else(|| looks_damaged(&self.path, self.size))
            {
                None => {
                    self.seen_sound();
                    return Ok(());
                }
                Some(why) => Some(why),
            }
        } else {
            None
        };
        let made = match &damage {
            Some(raw) => {
                let why = format!("{}: {raw}", self.path.display());
                // The error names the reason as found, never an earlier
                // error's sentence: a file that cannot be moved aside is
                // looked at again every second, and each look must say the
                // same one sentence, not wrap the last one.
                let r = set_aside(&self.path)
                    .map_err(|e| {
                        DbError::Other(format!(
                            "it is damaged ({raw}) and cannot be moved aside: {e}"
                        ))
                    })
                    .and_then(|moved| {
                        self.reopen(Some(&moved))
                            .map(|kept| (moved, kept))
                            .map_err(|e| {
                                DbError::Other(format!("damaged ({why}), moved aside: {e}"))
                            })
                    });
                match r {
                    Ok((moved, kept)) => {
                        tracing::error!(
                            path = %self.path.display(),
                            moved_to = %moved.display(),
                            "the database was damaged under the running hub ({why}): moved aside to {} and made afresh at its path: {}",
                            moved.display(),
                            kept.sentence()
                        );
                        self.state.damaged.fetch_add(1, Ordering::AcqRel);
                        if let Ok(mut d) = self.state.damage.lock() {
                            *d = Some(Damage {
                                at: Utc::now(),
                                why,
                                moved_to: moved,
                                at_start: false,
                                kept,
                            });
                        }
                        Ok(())
                    }
                    Err(e) => {
                        // Looked at again on the next commit and second,
                        // for the reason found, not for this error.
                        self.suspect = Some(raw.clone());
                        Err(e)
                    }
                }
            }
            None => {
                // Removed (not replaced): the hub's connection still reads
                // the unlinked file, so what it held is copied out first and
                // carried into the fresh one, as for a damaged file (the
                // 15:16 audit: acknowledged failovers were gone after `rm`).
                let copy = (self.id.is_some() && !self.path.exists())
                    .then(|| self.copy_removed())
                    .flatten();
                if self.id.is_some() {
                    tracing::error!(
                        path = %self.path.display(),
                        kept = copy.is_some(),
                        "the database file was removed or replaced while the hub ran; making it afresh at its path{}",
                        if copy.is_some() {
                            ", with the rows it held (the hub still had it open)"
                        } else {
                            ": the history and the failover log begin afresh now"
                        }
                    );
                }
                let r = self.reopen(copy.as_deref()).map(|_| ());
                self.state
                    .recreated_kept
                    .store(copy.is_some() && r.is_ok(), Ordering::Release);
                if let Some(c) = &copy {
                    for p in std::iter::once(c.clone()).chain(sidecars(c)) {
                        let _ = std::fs::remove_file(p);
                    }
                }
                r
            }
        };
        match made {
            Ok(()) => {
                self.state.recreated.fetch_add(1, Ordering::AcqRel);
                if let Ok(mut at) = self.state.recreated_at.lock() {
                    *at = Some(Utc::now());
                }
                if let Ok(mut u) = self.state.unavailable.lock() {
                    *u = None;
                }
                let _ = self.state.repeats.ended("database-unavailable");
                self.seen_sound();
                Ok(())
            }
            Err(e) => {
                let why = format!("{UNAVAILABLE}: {}: {e}", self.path.display());
                self.state.repeats.error("database-unavailable", &why);
                if let Ok(mut u) = self.state.unavailable.lock() {
                    *u = Some(why.clone());
                }
                if damage.is_none() {
                    self.id = None;
                }
                Err(why)
            }
        }
    }

    /// What a read of the file in use met (SQLITE_CORRUPT, SQLITE_NOTADB),
    /// taken once; a report about a file since made afresh is dropped.
    fn read_damage(&self) -> Option<String> {
        let (generation, why) = self.state.read_damage.lock().ok()?.take()?;
        (generation == self.state.generation.load(Ordering::Acquire)).then_some(why)
    }

    /// A commit failed though the file is sound: when the cause is the
    /// disk's or the file's (full, an I/O error, read-only, cannot be
    /// opened), what must be durable is refused with 503
    /// `database_unavailable` until a commit succeeds, and health says
    /// why; the error as the caller passes it on.
    fn commit_failed(&self, e: &DbError) -> String {
        use rusqlite::ffi::ErrorCode;
        let code = match e {
            DbError::Sqlite(e) => e.sqlite_error_code(),
            _ => None,
        };
        let cause = match code {
            Some(ErrorCode::DiskFull) => "the disk is full",
            Some(ErrorCode::SystemIoFailure) => "an I/O error",
            Some(ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => "it is read-only",
            Some(ErrorCode::CannotOpen) => "it cannot be opened",
            _ => return e.to_string(),
        };
        let why = format!(
            "{UNAVAILABLE}: {} cannot be written ({cause}: {e})",
            self.path.display()
        );
        if let Ok(mut f) = self.state.failing.lock() {
            *f = Some((why.clone(), std::time::Instant::now()));
        }
        why
    }

    /// A commit went through: commits are taken again once none failed for
    /// [`FAILING_ENDS`] (a full disk lets small commits through between
    /// refused ones: health and the log do not flap with each).
    fn commits_again(&self) {
        let was = self
            .state
            .failing
            .lock()
            .ok()
            .and_then(|mut f| match f.as_ref() {
                Some((_, at)) if at.elapsed() >= FAILING_ENDS => f.take().map(|(why, _)| why),
                _ => None,
            });
        if let Some(why) = was {
            let n = self.state.repeats.ended("database-batch").unwrap_or(0);
            tracing::info!(
                path = %self.path.display(),
                refused_since_said = n,
                "the database commits again (it was: {why})"
            );
        }
    }

    /// While commits fail and nothing is written, find out without a
    /// commit whether the disk has room again ([`crate::hub::room`]): at
    /// most every [`crate::hub::room::PROBE_EVERY`], the first that long after the
    /// last failure. When it has, commits are taken again, said once.
    fn probe_room(&mut self) {
        use crate::hub::room;
        let since_failed = match self.state.failing.lock() {
            Ok(f) => match f.as_ref() {
                Some((_, at)) => at.elapsed(),
                None => return,
            },
            Err(_) => return,
        };
        let probed_lately = self
            .probed
            .is_some_and(|at| at.elapsed() < room::PROBE_EVERY);
        if since_failed < room::PROBE_EVERY || probed_lately {
            return;
        }
        self.probed = Some(std::time::Instant::now());
        let found = if file_writable(&self.path) {
            room::probe(&self.path, &self.conn)
        } else {
            Err("the file cannot be written".into())
        };
        let free = match found {
            Ok(free) => free,
            Err(why) => {
                tracing::debug!(path = %self.path.display(), "no room for the database yet: {why}");
                return;
            }
        };
        let was = self.state.failing.lock().ok().and_then(|mut f| f.take());
        if let Some((why, _)) = was {
            let n = self.state.repeats.ended("database-batch").unwrap_or(0);
            tracing::info!(
                path = %self.path.display(),
                free_mib = free / (1024 * 1024),
                refused_since_said = n,
                "the database has room again, found without a commit: commits are taken again (it was: {why})"
            );
        }
    }

    /// The file is sound now: remember its size, and whether its place
    /// would let the next start (or a remake) make its `-wal`, `-shm` or a
    /// fresh file.
    fn seen_sound(&mut self) {
        if let Ok(m) = std::fs::metadata(&self.path) {
            self.size = self.size.max(m.len());
        }
        let dir = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let dir_problem = (!writable(&dir)).then(|| {
            format!(
                "the database's directory {} cannot be written by the hub: the file is written now, but the next start will fail (SQLite makes its -wal and -shm there) and a removed or damaged file cannot be made afresh",
                dir.display()
            )
        });
        // `chmod 444 hub.db` under the hub: its open connections still
        // write, but the next start refuses the file.
        let file_problem = (!file_writable(&self.path)).then(|| {
            format!(
                "the database {} cannot be written by the hub now (its mode or owner changed): the open file is written still, but the next start will refuse it as read-only",
                self.path.display()
            )
        });
        for (key, problem, fixed) in [
            (
                "database-place",
                &dir_problem,
                "the database's directory can be written again",
            ),
            (
                "database-mode",
                &file_problem,
                "the database file can be written again",
            ),
        ] {
            match problem {
                Some(p) => self.state.repeats.warn(key, p),
                None => {
                    if self.state.repeats.ended(key).is_some() {
                        tracing::info!(path = %self.path.display(), "{fixed}");
                    }
                }
            }
        }
        let problem = match (dir_problem, file_problem) {
            (Some(d), Some(f)) => Some(format!("{f}; {d}")),
            (d, f) => f.or(d),
        };
        if let Ok(mut p) = self.state.place.lock() {
            *p = problem;
        }
    }

    /// Make the file afresh at the path (from the damaged file `from`,
    /// set aside, when there is one) and point both connections at it.
    /// A copy of the removed file's rows, made through the connection that
    /// still holds it (`VACUUM INTO` a file beside the path); `None` when it
    /// cannot be made (the directory read-only, say): the fresh file then
    /// begins afresh, as before.
    fn copy_removed(&self) -> Option<PathBuf> {
        let stamp = Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "hub.db".into());
        let to = self.path.with_file_name(format!("{name}.removed-{stamp}"));
        let target = to.to_str()?;
        match self.conn.execute("VACUUM INTO ?1", [target]) {
            Ok(_) => Some(to),
            Err(e) => {
                tracing::warn!(error = %e, "the removed database's rows could not be copied out");
                let _ = std::fs::remove_file(&to);
                None
            }
        }
    }

    fn reopen(&mut self, from: Option<&Path>) -> Result<Salvage, DbError> {
        // The old connections let go first, without a checkpoint: a
        // closing connection deletes its `-wal` by name, which would be the
        // new file's, and a damaged file is kept as it was found.
        let no_ckpt = rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE;
        let _ = self.conn.set_db_config(no_ckpt, true);
        self.conn = Connection::open_in_memory()?;
        // Held until the fresh file is in: a reader meanwhile waits for it
        // rather than meeting a connection with no tables (a 500).
        let shared = self.read.clone();
        let mut r = shared.lock().unwrap_or_else(|p| p.into_inner());
        let _ = r.set_db_config(no_ckpt, true);
        *r = Connection::open_in_memory()?;
        let bindings = match self.held.lock() {
            Ok(h) => h.as_ref().map(|f| f()).unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        let carried = Carried {
            instance: self.instance.clone(),
            bindings,
            history_head: self.last_history.clone(),
            intent: self.intent.clone(),
            head: self.head.load(Ordering::Acquire),
            keys: self.keys.clone(),
            recovery_head: self.recovery_head.load(Ordering::Acquire),
            rollout: self.rollout.clone(),
        };
        let (conn, kept) = remake(&self.path, from, &carried)?;
        let read = open(&self.path)?;
        self.id = file_id(&self.path);
        self.size = 0;
        self.conn = conn;
        self.counts = pool_counts(&read, "failovers").unwrap_or_default();
        self.recovery_counts = pool_counts(&read, "recoveries").unwrap_or_default();
        if let Ok(h) = read_recovery_head(&read) {
            self.recovery_head.fetch_max(h, Ordering::AcqRel);
        }
        if let Ok(keys) = read_keys(&read) {
            self.keys = keys;
        }
        if let Some(h) = from.and(read_history(&read, 1, &Unreadable::default()).ok()) {
            if let Some(h) = h.into_iter().next() {
                self.last_history = Some(h);
            }
        }
        let head: i64 = read
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM failovers", [], |r| {
                r.get(0)
            })
            .unwrap_or(0);
        self.head.fetch_max(head as u64, Ordering::AcqRel);
        *r = read;
        // Reads of the old file no longer count against this one.
        self.state.generation.fetch_add(1, Ordering::AcqRel);
        if let Ok(mut d) = self.state.read_damage.lock() {
            *d = None;
        }
        Ok(kept)
    }

    /// Commit a batch into the file at the path, checking the file's
    /// identity before and after: a batch committed into a file removed
    /// meanwhile is committed again into the new one, so nothing is
    /// acknowledged that a restart would not find.
    fn commit_durably(&mut self, batch: &Batch<'_>) -> Result<Commits, String> {
        for _ in 0..3 {
            self.ensure_file()?;
            let mut counts = self.counts.clone();
            let mut recovery_counts = self.recovery_counts.clone();
            let (records, dropped) = match commit(
                &mut self.conn,
                batch,
                self.bounds,
                &mut counts,
                &mut recovery_counts,
            ) {
                Ok(c) => c,
                // Not into a damaged file: it is set aside, made afresh, and
                // the batch committed again there.
                Err(e) if e.is_damage() => {
                    self.state
                        .corrupt_statements
                        .fetch_add(1, Ordering::Relaxed);
                    self.suspect = Some(format!("a commit met damage: {e}"));
                    continue;
                }
                Err(e) => return Err(self.commit_failed(&e)),
            };
            let same = file_id(&self.path).is_some() && file_id(&self.path) == self.id;
            if same && self.suspect.is_none() {
                // Damaged between the look before and the commit: the
                // commit went into a file no restart would read.
                if let Some(why) = looks_damaged(&self.path, self.size) {
                    self.suspect = Some(why);
                    continue;
                }
            }
            if same {
                self.commits_again();
                self.counts = counts;
                self.recovery_counts = recovery_counts;
                if !dropped.is_empty() {
                    if let Ok(mut d) = self.state.dropped.lock() {
                        for (p, n) in dropped {
                            *d.entry(p).or_default() += n;
                        }
                    }
                }
                return Ok(records);
            }
        }
        Err(format!(
            "{UNAVAILABLE}: {} keeps being removed or damaged",
            self.path.display()
        ))
    }
}

impl Writer {
    fn has_pending(&self) -> bool {
        self.pending.lock().is_ok_and(|p| !p.recoveries.is_empty())
    }

    /// The recoveries waiting, oldest first.
    fn take_pending(&self) -> Vec<NewRecovery> {
        match self.pending.lock() {
            Ok(mut p) => p.recoveries.drain(..).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Recoveries a failed batch did not commit, back at the front.
    fn put_back(&self, recoveries: Vec<NewRecovery>) {
        if let Ok(mut p) = self.pending.lock() {
            for r in recoveries.into_iter().rev() {
                p.recoveries.push_front(r);
            }
            let bound = usize::try_from(self.bounds.failovers.max(1)).unwrap_or(usize::MAX);
            while p.recoveries.len() > bound {
                p.recoveries.pop_front();
                p.dropped += 1;
            }
        }
    }
}

/// The commands of one batch, as taken from the queue.
#[derive(Default)]
struct Taken {
    failovers: Vec<NewFailover>,
    acks: Vec<Ack>,
    history: Vec<(HistoryEntry, Ack)>,
    intents: Vec<(Option<HistoryEntry>, Option<String>, Ack)>,
    take_binds: bool,
    unbinds: Vec<String>,
    rollouts: Vec<(RolloutRow, Ack)>,
    flushes: Vec<oneshot::Sender<()>>,
    close: Option<oneshot::Sender<()>>,
}

impl Taken {
    /// `first` and whatever else is queued now, at most [`MAX_BATCH`].
    fn from_queue(first: Cmd, rx: &Receiver<Cmd>) -> Taken {
        let mut t = Taken::default();
        t.take(first);
        let mut n = 1;
        while n < MAX_BATCH {
            match rx.try_recv() {
                Ok(cmd) => {
                    t.take(cmd);
                    n += 1;
                }
                Err(_) => break,
            }
        }
        t
    }

    fn take(&mut self, cmd: Cmd) {
        match cmd {
            Cmd::Wake => {}
            Cmd::Failovers(v, ack) => {
                self.failovers.extend(v);
                self.acks.push(ack);
            }
            Cmd::History(e, tx) => self.history.push((e, tx)),
            Cmd::Intent(e, key, tx) => self.intents.push((e, key, tx)),
            Cmd::Binds => self.take_binds = true,
            Cmd::Unbind(ws) => self.unbinds.extend(ws),
            Cmd::Rollout(r, tx) => self.rollouts.push((r, tx)),
            Cmd::Flush(tx) => self.flushes.push(tx),
            Cmd::Close(tx) => self.close = Some(tx),
        }
    }
}

/// The next command, waiting for one; on each idle second the file's
/// identity is looked at and the room probed, and recoveries waiting wake
/// a batch. `None`: every sender is gone.
fn next_command(w: &mut Writer, rx: &Receiver<Cmd>) -> Option<Cmd> {
    loop {
        match rx.recv_timeout(IDENTITY_EVERY) {
            Ok(cmd) => return Some(cmd),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                // Noticed within about a second even when nothing is written.
                let _ = w.ensure_file();
                w.probe_room();
                if w.has_pending() {
                    return Some(Cmd::Wake);
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
        }
    }
}

fn writer_loop(mut w: Writer, rx: Receiver<Cmd>) {
    while let Some(first) = next_command(&mut w, &rx) {
        let mut t = Taken::from_queue(first, &rx);
        // Every id queued until this moment, in this commit.
        let binds = if t.take_binds {
            w.binds
                .lock()
                .ok()
                .map(|mut q| std::mem::replace(&mut *q, BindQueue::new()))
        } else {
            None
        };
        let bound: &[(String, String)] = binds.as_ref().map_or(&[], |q| &q.ids);
        // Every recovery seen so far joins this batch, whatever woke it.
        let recoveries = w.take_pending();
        let batch = Batch {
            failovers: &t.failovers,
            recoveries: &recoveries,
            history: &t.history,
            intents: &t.intents,
            binds: bound,
            unbinds: &t.unbinds,
            rollouts: &t.rollouts,
        };
        let flushes = std::mem::take(&mut t.flushes);
        let close = t.close.take();
        match w.commit_durably(&batch) {
            Ok(records) => w.committed(t, binds.as_ref(), records),
            Err(e) => w.not_committed(t, binds.as_ref(), recoveries, &e),
        }
        for tx in flushes {
            let _ = tx.send(());
        }
        if let Some(tx) = close {
            gone(&w.binds);
            // The connection closes as the writer is dropped, before the
            // answer: whoever waits on it finds the file let go.
            drop(w);
            let _ = tx.send(());
            return;
        }
    }
}

impl Writer {
    /// A batch committed: what it changed is kept (the newest rollout,
    /// heads, history, keys, the write in progress), every waiter
    /// answered, and the new records published.
    fn committed(&mut self, t: Taken, binds: Option<&BindQueue>, records: Commits) {
        if let Some((r, _)) = t.rollouts.last() {
            self.rollout = Some(r.clone());
        }
        for (_, tx) in t.rollouts {
            let _ = tx.send(Ok(()));
        }
        if let Some(last) = records.failovers.last() {
            self.head.store(last.seq, Ordering::Release);
        }
        if let Some(last) = records.recoveries.last() {
            self.recovery_head.fetch_max(last.seq, Ordering::AcqRel);
        }
        if let Some((h, _)) = t.history.last() {
            self.last_history = Some(h.clone());
            // A keyed write's key is kept: read them as committed.
            match read_keys(&self.conn) {
                Ok(keys) => self.keys = keys,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the kept idempotency keys")
                }
            }
        }
        // The write in progress, as a remade file must hold it.
        if let Some((i, _, _)) = t.intents.last() {
            self.intent = i.clone();
        }
        if self
            .intent
            .as_ref()
            .is_some_and(|i| t.history.iter().any(|(h, _)| h.revision == i.revision))
        {
            self.intent = None;
        }
        let done = t.history.into_iter().map(|(_, tx)| tx);
        let done = done.chain(t.intents.into_iter().map(|(_, _, tx)| tx));
        for tx in done {
            let _ = tx.send(Ok(()));
        }
        if let Some(q) = binds {
            q.done.send_replace(Some(Ok(())));
        }
        for tx in t.acks {
            let _ = tx.send(Ok(()));
        }
        if !records.failovers.is_empty() || !records.recoveries.is_empty() {
            (self.on_commit)(records);
        }
    }

    /// A batch not committed: its recoveries back in the queue (nobody
    /// waits for them), said once then counted, every waiter told why.
    fn not_committed(
        &mut self,
        t: Taken,
        binds: Option<&BindQueue>,
        recoveries: Vec<NewRecovery>,
        e: &str,
    ) {
        self.put_back(recoveries);
        self.state
            .repeats
            .error("database-batch", &format!("database batch failed: {e}"));
        self.errors.fetch_add(1, Ordering::Relaxed);
        let waiting = t.history.into_iter().map(|(_, tx)| tx);
        for tx in waiting.chain(t.intents.into_iter().map(|(_, _, tx)| tx)) {
            let _ = tx.send(Err(e.to_string()));
        }
        if let Some(q) = binds {
            q.done.send_replace(Some(Err(e.to_string())));
        }
        let waiting = t.rollouts.into_iter().map(|(_, tx)| tx);
        for tx in waiting.chain(t.acks) {
            let _ = tx.send(Err(e.to_string()));
        }
    }
}

/// A commit's new records, and the failover records each pool lost to
/// the log's bound.
type Committed = (Commits, Vec<(String, u64)>);

/// What one commit writes.
struct Batch<'a> {
    failovers: &'a [NewFailover],
    recoveries: &'a [NewRecovery],
    history: &'a [(HistoryEntry, Ack)],
    intents: &'a [(Option<HistoryEntry>, Option<String>, Ack)],
    binds: &'a [(String, String)],
    unbinds: &'a [String],
    rollouts: &'a [(RolloutRow, Ack)],
}

/// Commit a batch; `counts` (records held per pool) is kept up to date.
/// Returns the new failover records and how many records each pool lost
/// to the log's bound.
fn commit(
    conn: &mut Connection,
    batch: &Batch<'_>,
    bounds: Bounds,
    counts: &mut PoolCounts,
    recovery_counts: &mut PoolCounts,
) -> Result<Committed, DbError> {
    let tx = conn.transaction()?;
    write_bindings(&tx, batch)?;
    let records = insert_failovers(&tx, batch.failovers, counts)?;
    let recovered = insert_recoveries(&tx, batch.recoveries, recovery_counts)?;
    if !recovered.is_empty() {
        prune(&tx, "recoveries", recovery_counts, bounds.failovers)?;
    }
    // Intents before history: a write's intent is committed before its
    // rename, so its history entry always comes in a later batch.
    write_intents(&tx, batch.intents)?;
    write_history(&tx, batch.history)?;
    let dropped = if records.is_empty() {
        Vec::new()
    } else {
        prune(&tx, "failovers", counts, bounds.failovers)?
    };
    if !batch.history.is_empty() {
        prune_history(&tx, bounds.history)?;
    }
    tx.commit()?;
    let committed = Commits {
        failovers: records,
        recoveries: recovered,
    };
    Ok((committed, dropped))
}

/// A batch's rollouts, new worker ids' pools and forgotten workers.
fn write_bindings(tx: &Connection, batch: &Batch<'_>) -> Result<(), DbError> {
    for (r, _) in batch.rollouts {
        put_rollout(tx, r)?;
    }
    if !batch.binds.is_empty() {
        let mut bind = tx
            .prepare_cached("INSERT OR REPLACE INTO worker_pools (worker, pool) VALUES (?1, ?2)")?;
        for (worker, pool) in batch.binds {
            bind.execute(params![worker, pool])?;
        }
    }
    for worker in batch.unbinds {
        tx.execute(
            "DELETE FROM worker_pools WHERE worker = ?1",
            params![worker],
        )?;
    }
    Ok(())
}

/// Insert `failovers` (a repeated id is ignored); `counts` kept up to
/// date. Returns the new records.
fn insert_failovers(
    tx: &Connection,
    failovers: &[NewFailover],
    counts: &mut PoolCounts,
) -> Result<Vec<FailoverRecord>, DbError> {
    let mut records = Vec::with_capacity(failovers.len());
    let mut ins = tx.prepare_cached(
        "INSERT OR IGNORE INTO failovers (worker, host, received_at, id, at, from_agent, to_agent, kind, status, source, detail, token, pool) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?;
    for f in failovers {
        let c = &f.failover.cause;
        let changed = ins.execute(params![
            f.worker,
            f.host,
            time(f.received_at),
            f.failover.id,
            time(f.failover.at),
            f.failover.from,
            f.failover.to,
            c.kind.as_str(),
            c.status,
            c.source.as_str(),
            c.detail,
            f.token,
            f.pool,
        ])?;
        if changed == 1 {
            *counts.entry(f.pool.clone()).or_default() += 1;
            records.push(FailoverRecord {
                seq: tx.last_insert_rowid() as u64,
                worker: f.worker.clone(),
                host: f.host.clone(),
                received_at: f.received_at,
                failover: f.failover.clone(),
            });
        }
    }
    Ok(records)
}

/// The config writes in progress (`None`: none is).
fn write_intents(
    tx: &Connection,
    intents: &[(Option<HistoryEntry>, Option<String>, Ack)],
) -> Result<(), DbError> {
    for (i, key, _) in intents {
        match i {
            Some(h) => {
                tx.execute(
                    "INSERT OR REPLACE INTO config_intent (id, revision, at, by, agents, previous_agents, client, idempotency_key) VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        h.revision,
                        time(h.at),
                        h.by,
                        serde_json::to_string(&h.agents).unwrap_or_else(|_| "[]".into()),
                        serde_json::to_string(&h.previous_agents)
                            .unwrap_or_else(|_| "[]".into()),
                        h.client,
                        key,
                    ],
                )?;
            }
            None => {
                tx.execute("DELETE FROM config_intent", [])?;
            }
        }
    }
    Ok(())
}

/// History entries, each with its write's key (kept in the table of kept
/// keys too, which outlives the entry); its write no longer in progress.
fn write_history(tx: &Connection, history: &[(HistoryEntry, Ack)]) -> Result<(), DbError> {
    for (h, _) in history {
        put_entry(tx, INSERT_HISTORY, h)?;
        tx.execute(
            "UPDATE history SET idempotency_key = (SELECT idempotency_key FROM config_intent WHERE revision = ?1) WHERE id = last_insert_rowid()",
            params![h.revision],
        )?;
        tx.execute(
            "INSERT OR IGNORE INTO idempotency_keys (key, revision, agents) SELECT idempotency_key, revision, agents FROM history WHERE id = last_insert_rowid() AND idempotency_key IS NOT NULL",
            [],
        )?;
        tx.execute(
            "DELETE FROM idempotency_keys WHERE id <= (SELECT MAX(id) FROM idempotency_keys) - ?1",
            params![KEYS_KEPT],
        )?;
        tx.execute(
            "DELETE FROM config_intent WHERE revision = ?1",
            params![h.revision],
        )?;
    }
    Ok(())
}

/// Keep the newest `bound` history entries.
fn prune_history(tx: &Connection, bound: u64) -> Result<(), DbError> {
    let newest: Option<i64> = tx
        .query_row("SELECT MAX(id) FROM history", [], |r| r.get(0))
        .optional()?
        .flatten();
    if let Some(newest) = newest {
        tx.execute(
            "DELETE FROM history WHERE id <= ?1",
            params![newest - bound as i64],
        )?;
    }
    Ok(())
}

/// Past `bound` (in steps of ~1%, to keep each batch cheap), each pool
/// over its fair share of `table` (`failovers` or `recoveries`) loses its
/// own oldest records down to it. Returns how many each pool lost.
fn prune(
    tx: &Connection,
    table: &str,
    counts: &mut PoolCounts,
    bound: u64,
) -> Result<Vec<(String, u64)>, DbError> {
    let mut dropped = Vec::new();
    let total: u64 = counts.values().sum();
    if total <= bound + bound / 100 {
        return Ok(dropped);
    }
    let shares = fair_shares(counts, bound);
    let sql = format!(
        "DELETE FROM {table} WHERE seq IN (SELECT seq FROM {table} WHERE pool = ?1 ORDER BY seq LIMIT ?2)"
    );
    for (pool, keep) in shares {
        let held = counts.get(&pool).copied().unwrap_or(0);
        if held <= keep {
            continue;
        }
        let n = tx.execute(&sql, params![pool, (held - keep) as i64])? as u64;
        counts.insert(pool.clone(), held - n);
        dropped.push((pool, n));
    }
    counts.retain(|_, c| *c > 0);
    Ok(dropped)
}

/// Insert `recoveries` (each gets its seq), counted per pool.
fn insert_recoveries(
    tx: &Connection,
    recoveries: &[NewRecovery],
    counts: &mut PoolCounts,
) -> Result<Vec<RecoveryRecord>, DbError> {
    let mut out = Vec::with_capacity(recoveries.len());
    let mut ins = tx.prepare_cached(
        "INSERT INTO recoveries (worker, host, at, from_agent, to_agent, held_off_s, pool) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for NewRecovery { pool, record: r } in recoveries {
        ins.execute(params![
            r.worker,
            r.host,
            time(r.at),
            r.from,
            r.to,
            i64::try_from(r.held_off_s).unwrap_or(i64::MAX),
            &**pool,
        ])?;
        *counts.entry(pool.to_string()).or_default() += 1;
        out.push(RecoveryRecord {
            seq: tx.last_insert_rowid() as u64,
            ..r.clone()
        });
    }
    Ok(out)
}

/// The recovery log's head: the last seq it gave (or was seeded with).
fn read_recovery_head(c: &Connection) -> rusqlite::Result<u64> {
    c.query_row(
        "SELECT COALESCE(MAX(seq), 0) FROM (SELECT seq FROM sqlite_sequence WHERE name = 'recoveries' UNION ALL SELECT MAX(seq) FROM recoveries)",
        [],
        |r| r.get::<_, i64>(0),
    )
    .map(|s| s.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An intent survives a reopen; the history entry of its revision
    /// clears it in the same commit; another revision's entry does not.
    #[tokio::test]
    async fn a_write_intent_is_durable_and_cleared_by_its_history_entry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("hub.db");
        let entry = |rev: &str| HistoryEntry {
            revision: rev.into(),
            at: Utc::now(),
            by: "alice".into(),
            agents: vec!["pi".into()],
            previous_agents: vec!["claude".into()],
            client: Some("macfleet/0.1.0".into()),
        };
        {
            let db = Db::open(&path, Bounds::default(), Box::new(|_| {})).expect("open");
            db.record_intent(Some(entry("r2"))).await.expect("intent");
            db.record_history(entry("r1")).await.expect("other");
            db.close();
        }
        let db = Db::open(&path, Bounds::default(), Box::new(|_| {})).expect("reopen");
        let i = db.intent().expect("read").expect("kept");
        assert_eq!((i.revision.as_str(), i.by.as_str()), ("r2", "alice"));
        assert_eq!(i.previous_agents, ["claude"]);
        db.record_history(entry("r2")).await.expect("entry");
        assert!(db.intent().expect("read").is_none());
        db.record_intent(Some(entry("r3"))).await.expect("intent");
        db.record_intent(None).await.expect("clear");
        assert!(db.intent().expect("read").is_none());
    }

    /// A key is kept apart from the history (issue 27): entries without
    /// a key (hand edits) trim the history past the write that carried
    /// it, and the hub still answers from it, after a reopen too; only the
    /// last [`KEYS_KEPT`] keys are kept.
    #[tokio::test]
    async fn a_key_outlives_its_history_entry() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("hub.db");
        let bounds = Bounds {
            history: 2,
            ..Bounds::default()
        };
        let entry = |rev: &str| HistoryEntry {
            revision: rev.into(),
            at: Utc::now(),
            by: "alice".into(),
            agents: vec!["pi".into()],
            previous_agents: vec!["claude".into()],
            client: None,
        };
        {
            let db = Db::open(&path, bounds, Box::new(|_| {})).expect("open");
            db.record_intent_keyed(Some(entry("r1")), Some("k1".into()))
                .await
                .expect("intent");
            db.record_history(entry("r1")).await.expect("entry");
            for r in ["r2", "r3", "r4"] {
                db.record_history(entry(r)).await.expect("hand edit");
            }
            let held: Vec<String> = db
                .history(10)
                .expect("history")
                .into_iter()
                .map(|h| h.revision)
                .collect();
            assert_eq!(held, ["r4", "r3"], "the history was trimmed");
            let kept = db.keyed("k1").expect("read");
            assert_eq!(kept, Some(("r1".to_string(), vec!["pi".to_string()])));
            db.close();
        }
        let db = Db::open(&path, bounds, Box::new(|_| {})).expect("reopen");
        assert!(db.keyed("k1").expect("read").is_some(), "after a reopen");
        assert!(db.keyed("k2").expect("read").is_none());
    }

    /// A damaged file is moved aside with its `-wal` and `-shm`, byte for
    /// byte, and never over another set aside in the same second.
    #[test]
    fn a_damaged_file_is_set_aside_never_over_another() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("hub.db");
        let mut moved = Vec::new();
        for round in 0..3u8 {
            std::fs::write(&path, [round; 10]).expect("db");
            std::fs::write(dir.path().join("hub.db-wal"), [round; 3]).expect("wal");
            moved.push(set_aside(&path).expect("set aside"));
            assert!(!path.exists() && !dir.path().join("hub.db-wal").exists());
        }
        for (round, to) in moved.iter().enumerate() {
            let name = to.file_name().expect("name").to_string_lossy().into_owned();
            assert!(name.starts_with("hub.db.damaged-"), "{name}");
            assert_eq!(std::fs::read(to).expect("kept"), [round as u8; 10]);
            let [wal, _] = sidecars(to);
            assert_eq!(std::fs::read(wal).expect("its wal"), [round as u8; 3]);
        }
        assert!(looks_damaged(&moved[0], 0).is_some_and(|w| w.contains("shorter than a header")));
        std::fs::write(&moved[0], [0u8; 200]).expect("a page of zeros");
        assert_eq!(
            looks_damaged(&moved[0], 0).as_deref(),
            Some("its header is not SQLite's")
        );
        assert!(
            looks_damaged(&moved[0], 4096).is_some_and(|w| w.contains("shrank from 4096 to 200"))
        );
    }

    /// A database from before ids were scoped by token keeps its rows and
    /// seqs, and takes the same id from a second token.
    #[test]
    fn a_v1_database_is_migrated_in_place() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("old.db");
        {
            let c = Connection::open(&path).expect("open");
            c.execute_batch(
                "CREATE TABLE failovers (
                  seq INTEGER PRIMARY KEY AUTOINCREMENT, worker TEXT NOT NULL, host TEXT NOT NULL,
                  received_at TEXT NOT NULL, id TEXT NOT NULL, at TEXT NOT NULL,
                  from_agent TEXT NOT NULL, to_agent TEXT, kind TEXT NOT NULL, status INTEGER,
                  source TEXT NOT NULL, detail TEXT, UNIQUE (worker, id));
                 CREATE INDEX failovers_by_worker ON failovers (worker, seq);
                 INSERT INTO failovers VALUES (41, 'w-1', 'h', '2026-11-29T15:04:05Z', 'f-1',
                   '2026-11-29T15:04:00Z', 'pi', 'claude', 'rate_limited', 429, 'hub_router', NULL);",
            )
            .expect("old schema");
        }
        let mut c = open(&path).expect("migrates");
        let (seq, token): (i64, String) = c
            .query_row("SELECT seq, token FROM failovers", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("the old row");
        assert_eq!((seq, token.as_str()), (41, ""));
        let t = c.transaction().expect("tx");
        let n = t
            .execute(
                "INSERT OR IGNORE INTO failovers (worker, host, received_at, id, at, from_agent, kind, source, token) \
                 VALUES ('w-1', 'h', 'x', 'f-1', 'x', 'pi', 'auth', 'worker', 'pool-b')",
                [],
            )
            .expect("insert");
        assert_eq!(n, 1, "the same id from another token is a new row");
        let seq: i64 = t
            .query_row("SELECT MAX(seq) FROM failovers", [], |r| r.get(0))
            .expect("max");
        assert_eq!(seq, 42, "seqs carry on");
        let idx: i64 = t
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'failovers' AND name LIKE 'failovers_by_%'",
                [],
                |r| r.get(0),
            )
            .expect("indexes");
        assert_eq!(idx, 5, "by worker, kind, from, to and pool");
        drop(t);
        // Opening again is a no-op.
        open(&path).expect("opens again");
    }
}
