//! The embedded database beside the config: the config history and the
//! failover log, in SQLite (WAL, full sync). One writer thread takes
//! failovers off the request path and commits them in batches; readers use
//! their own connection.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use crate::wire::{Cause, Failover, FailoverRecord, HistoryEntry};

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
    pub host: String,
    pub received_at: DateTime<Utc>,
    pub failover: Failover,
}

enum Cmd {
    Failovers(Vec<NewFailover>, oneshot::Sender<Result<(), String>>),
    History(HistoryEntry, oneshot::Sender<Result<(), String>>),
    Flush(oneshot::Sender<()>),
}

/// Errors of the database layer.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("database: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database writer is gone")]
    WriterGone,
    #[error("database: {0}")]
    Other(String),
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
    read: Mutex<Connection>,
    tx: SyncSender<Cmd>,
    head: Arc<AtomicU64>,
    writer: Mutex<Option<std::thread::JoinHandle<()>>>,
    unreadable: Unreadable,
    /// The file was there and empty at start (truncated?).
    started_empty: bool,
    /// Batches not committed and reads that failed (`GET /metrics`).
    errors: Arc<AtomicU64>,
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
  UNIQUE (worker, id, token)
);
CREATE INDEX IF NOT EXISTS failovers_by_worker ON failovers (worker, seq);
CREATE INDEX IF NOT EXISTS failovers_by_kind ON failovers (kind, seq);
CREATE INDEX IF NOT EXISTS failovers_by_from ON failovers (from_agent, seq);
CREATE INDEX IF NOT EXISTS failovers_by_to ON failovers (to_agent, seq);
";

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
    migrate_v1(&mut conn)?;
    conn.execute_batch(SCHEMA)?;
    Ok(conn)
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

/// Called with the failovers of each committed batch, in seq order.
pub type OnCommit = Box<dyn Fn(Vec<FailoverRecord>) + Send + 'static>;

impl Db {
    /// Open (or create) the database and start its writer thread.
    pub fn open(path: &Path, bounds: Bounds, on_commit: OnCommit) -> Result<Db, DbError> {
        let started_empty = std::fs::metadata(path).is_ok_and(|m| m.len() == 0);
        if started_empty {
            tracing::warn!(
                path = %path.display(),
                "the database file is empty (truncated?): starting a fresh history and failover log"
            );
        }
        let writer_conn = open(path)?;
        let read = open(path)?;
        let head: u64 = read.query_row("SELECT COALESCE(MAX(seq), 0) FROM failovers", [], |r| {
            r.get::<_, i64>(0)
        })? as u64;
        let head = Arc::new(AtomicU64::new(head));
        let (tx, rx) = std::sync::mpsc::sync_channel(4096);
        let head2 = head.clone();
        let errors = Arc::new(AtomicU64::new(0));
        let errors2 = errors.clone();
        let writer = std::thread::Builder::new()
            .name("macfleet-db".into())
            .spawn(move || writer_loop(writer_conn, rx, bounds, head2, on_commit, &errors2))
            .map_err(|e| DbError::Other(format!("cannot start the writer thread: {e}")))?;
        Ok(Db {
            read: Mutex::new(read),
            tx,
            head,
            writer: Mutex::new(Some(writer)),
            unreadable: Unreadable::default(),
            started_empty,
            errors,
        })
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

    /// Wait until everything queued so far is committed.
    pub async fn flush(&self) -> Result<(), DbError> {
        let (tx, rx) = oneshot::channel();
        self.send(Cmd::Flush(tx)).await?;
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

    fn with_read<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, DbError>,
    ) -> Result<T, DbError> {
        let conn = self
            .read
            .lock()
            .map_err(|_| DbError::Other("read connection poisoned".into()))?;
        let r = f(&conn);
        if r.is_err() {
            self.errors.fetch_add(1, Ordering::Relaxed);
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

    /// Newest first.
    pub fn history(&self, limit: u32) -> Result<Vec<HistoryEntry>, DbError> {
        self.with_read(|c| {
            let mut st = c.prepare_cached(
                "SELECT id, revision, at, by, agents, previous_agents FROM history ORDER BY id DESC LIMIT ?1",
            )?;
            let rows = st.query_map(params![limit], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })?;
            let mut out = Vec::new();
            for row in rows {
                let (id, revision, at, by, agents_text, previous) = row?;
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
                    })
                })();
                match entry {
                    Ok(e) => out.push(e),
                    Err(e) => self.unreadable.note("history", id as u64, &e),
                }
            }
            Ok(out)
        })
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
        let mut sql = String::from(
            "SELECT seq, worker, host, received_at, id, at, from_agent, to_agent, kind, status, source, detail \
             FROM failovers WHERE seq > ?1",
        );
        let mut args: Vec<rusqlite::types::Value> = vec![(f.since as i64).into()];
        if let Some(w) = &f.worker {
            args.push(w.clone().into());
            sql.push_str(&format!(" AND worker = ?{}", args.len()));
        }
        if let Some(a) = &f.agent {
            args.push(a.clone().into());
            let n = args.len();
            sql.push_str(&format!(" AND (from_agent = ?{n} OR to_agent = ?{n})"));
        }
        if let Some(k) = &f.kind {
            args.push(k.clone().into());
            sql.push_str(&format!(" AND kind = ?{}", args.len()));
        }
        args.push(i64::from(f.limit).into());
        sql.push_str(&format!(" ORDER BY seq LIMIT ?{}", args.len()));
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

    /// Stop the writer after it has committed everything queued.
    pub fn close(&self) {
        let handle = self.writer.lock().ok().and_then(|mut h| h.take());
        if let Some(h) = handle {
            let (tx, _rx) = oneshot::channel();
            let _ = self.tx.send(Cmd::Flush(tx));
            // Dropping our sender is not enough (clones live in tasks); the
            // writer exits when every sender is gone, so just detach here.
            drop(h);
        }
    }
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

fn writer_loop(
    mut conn: Connection,
    rx: Receiver<Cmd>,
    bounds: Bounds,
    head: Arc<AtomicU64>,
    on_commit: OnCommit,
    errors: &AtomicU64,
) {
    while let Ok(first) = rx.recv() {
        let mut failovers: Vec<NewFailover> = Vec::new();
        let mut acks: Vec<oneshot::Sender<Result<(), String>>> = Vec::new();
        let mut history: Vec<(HistoryEntry, oneshot::Sender<Result<(), String>>)> = Vec::new();
        let mut flushes: Vec<oneshot::Sender<()>> = Vec::new();
        let mut take = |cmd: Cmd| match cmd {
            Cmd::Failovers(v, ack) => {
                failovers.extend(v);
                acks.push(ack);
            }
            Cmd::History(e, tx) => history.push((e, tx)),
            Cmd::Flush(tx) => flushes.push(tx),
        };
        take(first);
        let mut n = 1;
        while n < MAX_BATCH {
            match rx.try_recv() {
                Ok(cmd) => {
                    take(cmd);
                    n += 1;
                }
                Err(_) => break,
            }
        }
        match commit(&mut conn, &failovers, &history, bounds) {
            Ok(records) => {
                if let Some(last) = records.last() {
                    head.store(last.seq, Ordering::Release);
                }
                for (_, tx) in history {
                    let _ = tx.send(Ok(()));
                }
                for tx in acks {
                    let _ = tx.send(Ok(()));
                }
                if !records.is_empty() {
                    on_commit(records);
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "database batch failed");
                errors.fetch_add(1, Ordering::Relaxed);
                for (_, tx) in history {
                    let _ = tx.send(Err(e.to_string()));
                }
                for tx in acks {
                    let _ = tx.send(Err(e.to_string()));
                }
            }
        }
        for tx in flushes {
            let _ = tx.send(());
        }
    }
}

fn commit(
    conn: &mut Connection,
    failovers: &[NewFailover],
    history: &[(HistoryEntry, oneshot::Sender<Result<(), String>>)],
    bounds: Bounds,
) -> Result<Vec<FailoverRecord>, DbError> {
    let tx = conn.transaction()?;
    let mut records = Vec::with_capacity(failovers.len());
    {
        let mut ins = tx.prepare_cached(
            "INSERT OR IGNORE INTO failovers (worker, host, received_at, id, at, from_agent, to_agent, kind, status, source, detail, token) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
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
            ])?;
            if changed == 1 {
                records.push(FailoverRecord {
                    seq: tx.last_insert_rowid() as u64,
                    worker: f.worker.clone(),
                    host: f.host.clone(),
                    received_at: f.received_at,
                    failover: f.failover.clone(),
                });
            }
        }
        let mut hist = tx.prepare_cached(
            "INSERT INTO history (revision, at, by, agents, previous_agents) VALUES (?1, ?2, ?3, ?4, ?5)",
        )?;
        for (h, _) in history {
            hist.execute(params![
                h.revision,
                time(h.at),
                h.by,
                serde_json::to_string(&h.agents).unwrap_or_else(|_| "[]".into()),
                serde_json::to_string(&h.previous_agents).unwrap_or_else(|_| "[]".into()),
            ])?;
        }
    }
    if let Some(last) = records.last() {
        let floor = last.seq.saturating_sub(bounds.failovers);
        // Prune in steps of ~1% to keep each batch cheap.
        let oldest: i64 = tx.query_row("SELECT COALESCE(MIN(seq), 0) FROM failovers", [], |r| {
            r.get(0)
        })?;
        if (oldest as u64) + bounds.failovers / 100 < floor {
            tx.execute(
                "DELETE FROM failovers WHERE seq <= ?1",
                params![floor as i64],
            )?;
        }
    }
    if !history.is_empty() {
        let newest: Option<i64> = tx
            .query_row("SELECT MAX(id) FROM history", [], |r| r.get(0))
            .optional()?
            .flatten();
        if let Some(newest) = newest {
            tx.execute(
                "DELETE FROM history WHERE id <= ?1",
                params![newest - bounds.history as i64],
            )?;
        }
    }
    tx.commit()?;
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(idx, 4);
        drop(t);
        // Opening again is a no-op.
        open(&path).expect("opens again");
    }
}
