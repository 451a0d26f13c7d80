//! What the hub does, apart from HTTP: replace the config
//! ([`Hub::replace_config`]) and take in a heartbeat ([`Hub::ingest`]).
//! `api` parses requests, calls one of these, and maps the result to a
//! status; the guarantees are tested here directly as well as over HTTP.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::auth::Principal;
use super::db::{NewFailover, UNAVAILABLE};
use super::events::Payload;
use super::ingest::HeartbeatIn;
use super::{Current, Hub, publish_config, store};
use crate::agents_doc::{self, DocError};
use crate::wire::{HistoryEntry, Invalid, OrderSource};

/// Why a config was not replaced.
#[derive(Debug, thiserror::Error)]
pub enum ReplaceError {
    /// Not UTF-8, not TOML, or no usable `MAC_CODING_AGENTS`.
    #[error(transparent)]
    Doc(#[from] DocError),
    /// `If-Match` names another revision than the current one.
    #[error("the document is at revision {current} now")]
    Mismatch { current: String },
    /// `If-Match` names the current revision only as a weak ETag
    /// (`W/"…"`, what a viewer's `GET` is given): `If-Match` compares
    /// strongly (RFC 9110 13.1.1), so it is 412 all the same, with a
    /// sentence that says to send the strong one.
    #[error("If-Match names revision {current} only weakly")]
    WeakMatch { current: String },
    /// The database cannot be opened at its path: nothing was written.
    #[error("{0}")]
    Unavailable(String),
    /// The disk or the runtime failed; the old document stands.
    #[error("{0}")]
    Internal(String),
    /// The config is one the hub does not replace (a link out of its
    /// directory, found while the write was made): nothing was written.
    #[error("{0}")]
    ConfigUnusable(String),
    /// The `Idempotency-Key` is held by a write of another document.
    #[error("the Idempotency-Key was sent with another document (revision {first})")]
    KeyReused { first: String },
    /// A staged rollout bakes: the list changes by its promotion or after
    /// its end (409 `rollout_in_progress`).
    #[error("rollout {id} is baking")]
    RolloutInProgress { id: String },
}

/// What a `PUT` carrying an `Idempotency-Key` the hub holds is answered:
/// the first answer, the accepted revision and its list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    pub revision: String,
    pub agents: Vec<String>,
}

/// What a config write did.
pub enum Replaced {
    /// Judged now: the document current after it.
    Now(Arc<Current>),
    /// A retry of a write the hub holds, by its key: nothing written.
    Replayed(Replay),
}

/// `If-Match` against the current revision: only strong comparison
/// counts (RFC 9110 13.1.1); a weak ETag naming it is told apart so the
/// 412 can say to send the strong one.
pub(crate) fn check_if_match(if_match: &str, current: &str) -> Result<(), ReplaceError> {
    let tags = || if_match.split(',').map(str::trim);
    if tags().any(|v| v == "*" || (!v.starts_with("W/") && v.trim_matches('"') == current)) {
        return Ok(());
    }
    let weakly = tags().any(|v| {
        v.strip_prefix("W/")
            .is_some_and(|t| t.trim_matches('"') == current)
    });
    let current = current.to_owned();
    Err(if weakly {
        ReplaceError::WeakMatch { current }
    } else {
        ReplaceError::Mismatch { current }
    })
}

fn db_error(e: impl std::fmt::Display) -> ReplaceError {
    match e.to_string() {
        m if m.contains(UNAVAILABLE) => ReplaceError::Unavailable(m),
        m => ReplaceError::Internal(m),
    }
}

/// Why a heartbeat was not taken in. Nothing is stored in any case.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// A new worker while the fleet is at its cap.
    #[error("the hub holds its maximum of {max} workers")]
    FleetFull { max: usize },
    /// The failover log's queue is full, or its commit is late: retry.
    #[error("the failover log is behind")]
    Overloaded,
    /// The worker id belongs to another pool (the one that first reported
    /// it).
    #[error("worker {worker} belongs to another pool")]
    OtherPool { worker: String },
    /// The database cannot be opened at its path: nothing acknowledged.
    #[error("{0}")]
    Unavailable(String),
    /// The worker sends far faster than it was told (pacing): nothing of
    /// this heartbeat is applied; it may send again after `wait`.
    #[error("heartbeats are sent faster than the interval told")]
    TooFast { wait: Duration },
    #[error("{0}")]
    Internal(String),
}

/// A test hook for `tests/crash.rs`: with `MACFLEET_FAULT_STALL_AFTER_RENAME_MS`
/// set, a config write waits that long between its rename and its history
/// entry, so a test can kill the hub exactly there. Unset (always, outside
/// that test), nothing.
async fn fault_stall_after_rename() {
    use std::sync::LazyLock;
    static STALL: LazyLock<Option<Duration>> = LazyLock::new(|| {
        std::env::var("MACFLEET_FAULT_STALL_AFTER_RENAME_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(Duration::from_millis)
    });
    if let Some(d) = *STALL {
        tokio::time::sleep(d).await;
    }
}

/// How long a heartbeat with failovers waits for their commit.
const COMMIT_WAIT: Duration = Duration::from_secs(10);

impl Hub {
    /// Replace the config with `bytes` if `if_match` (entity tags, already
    /// checked for syntax) names the current revision: validate, then under
    /// the write lock compare, write durably, swap, record history, resync
    /// the fleet and publish. Returns the document now current (the same
    /// one, for identical bytes).
    pub async fn replace_config(
        &self,
        by: &str,
        if_match: &str,
        bytes: bytes::Bytes,
    ) -> Result<Arc<Current>, ReplaceError> {
        self.replace_config_from(by, None, if_match, bytes).await
    }

    /// [`Hub::replace_config`] with the writing client (the request's
    /// `User-Agent`) recorded in History beside `by`.
    pub async fn replace_config_from(
        &self,
        by: &str,
        client: Option<&str>,
        if_match: &str,
        bytes: bytes::Bytes,
    ) -> Result<Arc<Current>, ReplaceError> {
        match self
            .replace_config_keyed(by, client, if_match, None, bytes)
            .await?
        {
            Replaced::Now(c) => Ok(c),
            Replaced::Replayed(_) => Err(ReplaceError::Internal("a replay without a key".into())),
        }
    }

    /// The first answer to the write that carried `key`, if the hub holds
    /// it; [`ReplaceError::KeyReused`] when that write sent another
    /// document than `bytes` (a revision is the hash of the bytes).
    pub fn replay_of(&self, key: &str, bytes: &[u8]) -> Result<Option<Replay>, ReplaceError> {
        let keyed = self.db.keyed(key).map_err(|e| match e.is_damage() {
            true => ReplaceError::Unavailable(format!("{UNAVAILABLE}: {e}")),
            false => db_error(e),
        });
        let Some((revision, agents)) = keyed? else {
            return Ok(None);
        };
        if revision != store::revision_of(bytes) {
            return Err(ReplaceError::KeyReused { first: revision });
        }
        Ok(Some(Replay { revision, agents }))
    }

    /// [`Hub::replace_config_from`] with the request's `Idempotency-Key`
    /// (already checked for shape): a key the hub holds is answered with
    /// the first answer under the write lock, before `If-Match` is judged,
    /// so a retry racing its first attempt never writes twice; otherwise
    /// the key is recorded with the history entry.
    pub async fn replace_config_keyed(
        &self,
        by: &str,
        client: Option<&str>,
        if_match: &str,
        key: Option<&str>,
        bytes: bytes::Bytes,
    ) -> Result<Replaced, ReplaceError> {
        let text = agents_doc::decode(&bytes)?;
        let located = agents_doc::locate(text)?;
        let _guard = self.write_lock.lock().await;
        if let Some(key) = key {
            if let Some(r) = self.replay_of(key, &bytes)? {
                return Ok(Replaced::Replayed(r));
            }
        }
        if let Some(id) = self.rollouts.baking_id() {
            return Err(ReplaceError::RolloutInProgress { id });
        }
        let r = self
            .replace_locked(by, client, if_match, key, bytes, located.agents)
            .await;
        if matches!(r, Ok(Replaced::Now(_))) {
            self.owner_wrote();
        }
        r
    }

    /// [`Hub::replace_config_keyed`] once the write lock is held (the
    /// caller holds it) and the document validated to `agents`: compare,
    /// write durably, swap, record, publish. A rollout's promotion writes
    /// through here.
    pub(crate) async fn replace_locked(
        &self,
        by: &str,
        client: Option<&str>,
        if_match: &str,
        key: Option<&str>,
        bytes: bytes::Bytes,
        agents: Vec<String>,
    ) -> Result<Replaced, ReplaceError> {
        // The file may have been edited by hand since the hub last read it,
        // the moment before this write, before the watcher could notice:
        // such an edit is taken in first, so that a `PUT` made on the older
        // revision gets 412 and never writes over it unseen.
        let before = self.take_disk_change().await;
        check_if_match(if_match, &before.revision)?;
        let new = Current::valid(bytes.clone(), agents, self.opts.heartbeat_interval_s);
        if new.revision == before.revision {
            return Ok(Replaced::Now(before));
        }
        // The list in force brought back over a document that did not
        // validate: nothing new for History, the feed or the fleet.
        let restores = before.order != OrderSource::BuiltIn && new.revision == before.projected;
        let entry = HistoryEntry {
            revision: new.revision.clone(),
            at: Utc::now(),
            by: by.to_string(),
            agents: new.agents.clone(),
            previous_agents: before.agents.clone(),
            client: client.map(str::to_string),
        };
        // Durably, before the rename: a hub killed between the rename and
        // the history entry records this write as `by`'s when it starts,
        // not as a hand edit.
        if !restores {
            self.db
                .record_intent_keyed(Some(entry.clone()), key.map(str::to_string))
                .await
                .map_err(db_error)?;
        }
        let written = self
            .write_config(bytes.clone(), &before)
            .await
            .map_err(|e| match store::link_refused(&e) {
                Some(why) => ReplaceError::ConfigUnusable(why.to_owned()),
                None => ReplaceError::Internal(e.to_string()),
            });
        if !matches!(written, Ok(store::Replaced::Done)) && !restores {
            let _ = self.db.record_intent(None).await;
        }
        match written {
            Ok(store::Replaced::Done) => {}
            // A hand edit landed after the compare: it stands, and is
            // taken as one; this write was made on an older document.
            Ok(raced @ (store::Replaced::Raced | store::Replaced::RacedKept(_))) => {
                if let store::Replaced::RacedKept(kept) = raced {
                    self.note_kept(vec![kept]);
                }
                let now = self.take_disk_change().await;
                return Err(ReplaceError::Mismatch {
                    current: now.revision.clone(),
                });
            }
            Err(e) => return Err(e),
        }
        fault_stall_after_rename().await;
        let new = Arc::new(new);
        if restores {
            self.current.store(new.clone());
            tracing::info!(%by, revision = %new.revision, "config replaced with the list in force");
            return Ok(Replaced::Now(new));
        }
        // Nothing is acknowledged that History lacks: a write whose entry
        // cannot be recorded (the disk full) is undone and refused.
        if let Err(e) = self.db.record_history(entry).await {
            return Err(self.undo_write(by, &before, &new, e).await);
        }
        // Swapped once History has it: whoever sees the new revision finds
        // its entry.
        self.current.store(new.clone());
        // A write ends the word `ROLLOUT HALTED`.
        self.rollouts.written();
        // The `config` event first, then the `sync` flips it causes.
        publish_config(self, &new, by);
        if let Ok(mut f) = self.fleet.lock() {
            f.resync(new.given());
        }
        tracing::info!(%by, revision = %new.revision, agents = ?new.agents, "config replaced");
        Ok(Replaced::Now(new))
    }

    /// Under the write lock, after `new` was swapped in over `before` and
    /// its history entry could not be recorded (`e`): put `before`'s
    /// document back (over `new`'s bytes only) and drop the intent, so the
    /// write is refused with nothing changed (503 when the database cannot
    /// be written). Where the document cannot be put back (the file not
    /// `before`'s bytes, a hand edit since, the config's disk full too),
    /// the hub follows the file as it stands and the write is an internal
    /// failure: its intent is kept, so a restart records it as `by`'s.
    async fn undo_write(
        &self,
        by: &str,
        before: &Current,
        new: &Arc<Current>,
        e: super::db::DbError,
    ) -> ReplaceError {
        let back = if super::disk::holds_file_bytes(&before.bytes) {
            self.write_config(before.bytes.clone(), new).await
        } else {
            Err(std::io::Error::other(
                "the document before was not a file the hub took",
            ))
        };
        match back {
            Ok(store::Replaced::Done) => {
                let _ = self.db.record_intent(None).await;
                self.repeats.warn(
                    "config-write-undone",
                    &format!("a config write was undone, nothing changed: its history entry could not be recorded ({e})"),
                );
                db_error(e)
            }
            Ok(raced @ (store::Replaced::Raced | store::Replaced::RacedKept(_))) => {
                if let store::Replaced::RacedKept(kept) = raced {
                    self.note_kept(vec![kept]);
                }
                let _ = self.db.record_intent(None).await;
                let now = self.take_disk_change().await;
                tracing::error!(revision = %new.revision, error = %e, "a config write's history entry could not be recorded, and a hand edit landed before it could be undone");
                ReplaceError::Mismatch {
                    current: now.revision.clone(),
                }
            }
            Err(io) => {
                self.current.store(new.clone());
                publish_config(self, new, by);
                if let Ok(mut f) = self.fleet.lock() {
                    f.resync(new.given());
                }
                ReplaceError::Internal(format!(
                    "the config was replaced but its history entry could not be recorded ({e}) nor the write undone ({io}): it is in force, and a restart records it from its intent"
                ))
            }
        }
    }

    /// Take in a parsed heartbeat sent with the token named `token`,
    /// received at `received_at` (the hub's clock): validate it (times
    /// included), refuse a new worker past the cap, scrub, commit its
    /// failovers (answered once they are on disk), record the worker and
    /// publish. Returns the projection every worker inherits.
    pub async fn ingest(
        &self,
        who: &Principal,
        mut hb: HeartbeatIn<'_>,
        received_at: DateTime<Utc>,
    ) -> Result<bytes::Bytes, IngestError> {
        // Liveness is judged by the monotonic clock from here.
        let arrived = std::time::Instant::now();
        hb.validate_at(received_at)?;
        // Heartbeats in flight may pass this check together, so the fleet
        // can exceed the cap by at most the requests in progress.
        // The worker's pace is judged under the same lock (hub/pacing.rs).
        let (admitted, paced) = self
            .fleet
            .lock()
            .map(|mut f| {
                let paced = f.paces(hb.worker.as_str(), arrived);
                (f.admits(hb.worker.as_str(), self.opts.max_workers), paced)
            })
            .map_err(|_| IngestError::Internal("fleet lock poisoned".into()))?;
        if let Err(wait) = paced {
            return Err(IngestError::TooFast { wait });
        }
        if !admitted {
            return Err(IngestError::FleetFull {
                max: self.opts.max_workers,
            });
        }
        let pool = self.claim(hb.worker.as_str(), &who.pool).await?;
        // A revision is the hub's own word: one it never issued (a worker
        // of another hub, or text of the worker's own) is not published.
        if hb
            .config_revision
            .as_ref()
            .is_some_and(|r| !self.issued(r.as_str()))
        {
            hb.config_revision = None;
        }
        for f in &mut hb.failovers {
            f.cause.detail = f.cause.detail.take().map(crate::scrub::scrub_string);
        }
        if !hb.failovers.is_empty() {
            let batch: Vec<NewFailover> = hb
                .failovers
                .iter()
                .map(|f| NewFailover {
                    worker: hb.worker.as_str().to_owned(),
                    token: who.name.clone(),
                    pool: pool.to_string(),
                    host: hb.host.as_str().to_owned(),
                    received_at,
                    failover: f.clone(),
                })
                .collect();
            let committed = self
                .db
                .queue_failovers(batch)
                .map_err(|e| IngestError::Internal(e.to_string()))?
                .ok_or(IngestError::Overloaded)?;
            // Answered once the failovers are on disk: an acknowledged
            // failover survives a crash. (Batched with every other
            // heartbeat's, so a storm costs one commit per batch.)
            match tokio::time::timeout(COMMIT_WAIT, committed).await {
                Ok(Ok(Ok(()))) => {}
                Ok(Ok(Err(e))) if e.starts_with(UNAVAILABLE) => {
                    return Err(IngestError::Unavailable(e));
                }
                Ok(Ok(Err(e))) => return Err(IngestError::Internal(e)),
                Ok(Err(_)) => return Err(IngestError::Internal("database writer is gone".into())),
                Err(_) => return Err(IngestError::Overloaded),
            }
        }
        let Ok(mut fleet) = self.fleet.lock() else {
            return Err(IngestError::Internal("fleet lock poisoned".into()));
        };
        // Read under the fleet lock: a config PUT stores the new document
        // and then resyncs the fleet under this lock, so the revision this
        // heartbeat is judged against is never older than the last resync.
        // A guard, not a clone: no await follows.
        let current = self.current.load();
        // Paced: the interval told grows with the fleet, and the worker's
        // thresholds follow what it was told.
        let base = self.opts.heartbeat_interval_s;
        let told = super::pacing::told(base, self.interval_for(fleet.len()));
        fleet.telling(told);
        let (view, recovery) =
            fleet.record_moves_at(&hb, received_at, arrived, &pool, current.given());
        // A cohort worker of the rollout baking is told the candidate.
        let candidate = match fleet.rollout() {
            Some(r) if view.cohort => Some(r.projection.clone()),
            _ => None,
        };
        // Published under the fleet lock, like the sweeper's `state` and a
        // resync's `sync` events: the feed's order is the order of change, so
        // a client that applies views in feed order ends with the latest.
        self.events.publish(Payload::Heartbeat(view));
        if let Some(r) = recovery {
            self.record_recovery(r);
        }
        drop(fleet);
        let projection = candidate.as_ref().unwrap_or(&current.projection);
        Ok(super::pacing::answer(projection, base, told))
    }
}

impl Hub {
    /// The pool `worker` belongs to: the one that first reported it, bound
    /// durably (in the database) before the first heartbeat is answered,
    /// so a restart does not hand it to whoever speaks first. Another
    /// pool's heartbeat for it is refused.
    async fn claim(&self, worker: &str, pool: &Arc<str>) -> Result<Arc<str>, IngestError> {
        let poisoned = || IngestError::Internal("pool lock poisoned".into());
        {
            let mut pools = self.pools.lock().map_err(|_| poisoned())?;
            match pools.get(worker) {
                Some(p) if **p == **pool => return Ok(p.clone()),
                Some(_) => {
                    return Err(IngestError::OtherPool {
                        worker: worker.to_string(),
                    });
                }
                None => {
                    pools.insert(Arc::from(worker), pool.clone());
                }
            }
        }
        if let Err(e) = self.db.bind(worker, pool).await {
            if let Ok(mut pools) = self.pools.lock() {
                pools.remove(worker);
            }
            let e = e.to_string();
            return Err(if e.contains(UNAVAILABLE) {
                IngestError::Unavailable(e)
            } else {
                IngestError::Internal(e)
            });
        }
        Ok(pool.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::{HubOptions, auth, open};
    use crate::wire::Role;

    fn pool() -> Principal {
        Principal {
            name: "fleet".into(),
            role: Role::Worker,
            pool: Arc::from("fleet"),
        }
    }

    async fn hub(dir: &std::path::Path, tweak: impl FnOnce(&mut HubOptions)) -> Arc<Hub> {
        std::fs::write(
            dir.join("hub.toml"),
            "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n",
        )
        .expect("config");
        let tok = format!("{}{}", "mft_test_", "o".repeat(20));
        let tokens = auth::Tokens::parse(&auth::token_entry("alice", Role::Owner, &tok), "t")
            .expect("tokens");
        let mut o = HubOptions::new(dir.join("hub.toml"), tokens);
        tweak(&mut o);
        open(o).await.expect("hub opens")
    }

    fn heartbeat(worker: &str, at: DateTime<Utc>, failover_id: Option<&str>) -> String {
        let fo = failover_id.map_or(String::new(), |id| {
            format!(
                r#","failovers":[{{"id":"{id}","at":"{}","from":"opencode","to":"claude","cause":{{"kind":"rate_limited","status":429,"source":"hub_router"}}}}]"#,
                crate::wire::fmt_time(at)
            )
        });
        format!(
            r#"{{"worker":"{worker}","host":"h1","sent_at":"{}","agents":["opencode","claude"],"active_agent":"claude"{fo}}}"#,
            crate::wire::fmt_time(at)
        )
    }

    /// Failovers in the log.
    fn logged(hub: &Hub) -> usize {
        let all = crate::hub::db::FailoverFilter {
            limit: 10,
            ..Default::default()
        };
        hub.db.failovers(&all).expect("log").records.len()
    }

    #[tokio::test]
    async fn replace_compares_writes_and_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hub = hub(dir.path(), |_| {}).await;
        let r0 = hub.current().revision.clone();
        let doc = "[fleet]\nMAC_CODING_AGENTS = [\"claude\", \"opencode\"]\n";
        let stale = hub
            .replace_config("alice", "\"nope\"", doc.into())
            .await
            .map(|_| ())
            .expect_err("a stale If-Match");
        assert!(matches!(stale, ReplaceError::Mismatch { ref current } if *current == r0));
        let bad = hub
            .replace_config("alice", "*", "MAC_CODING_AGENTS = []".into())
            .await
            .map(|_| ())
            .expect_err("empty");
        assert!(matches!(bad, ReplaceError::Doc(DocError::Empty)));
        assert_eq!(hub.current().revision, r0, "nothing changed");
        let new = hub
            .replace_config("alice", &format!("\"{r0}\""), doc.into())
            .await
            .expect("replaced");
        assert_eq!(new.agents, ["claude", "opencode"]);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("hub.toml")).expect("read"),
            doc
        );
        let h = hub.db.history(10).expect("history");
        assert_eq!(
            (h[0].by.as_str(), h[0].revision.as_str()),
            ("alice", new.revision.as_str())
        );
        // The same bytes again: the same revision, no new history.
        let same = hub
            .replace_config("alice", "*", doc.into())
            .await
            .expect("no-op");
        assert_eq!(same.revision, new.revision);
        assert_eq!(hub.db.history(10).expect("history").len(), h.len());
    }

    #[tokio::test]
    async fn ingest_validates_caps_commits_and_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let hub = hub(dir.path(), |o| o.max_workers = 1).await;
        let now = Utc::now();
        let body = heartbeat("w-1", now, Some("f-1"));
        let hb = HeartbeatIn::parse(body.as_bytes()).expect("parses");
        let projection = hub.ingest(&pool(), hb, now).await.expect("taken in");
        let p: crate::wire::Projection = serde_json::from_slice(&projection).expect("projection");
        assert_eq!(p.agents, ["opencode", "claude"]);
        // Committed before the answer: the log holds it now.
        assert_eq!(logged(&hub), 1);
        // A second worker is past the cap; nothing of it is stored.
        let body = heartbeat("w-2", now, Some("f-2"));
        let hb = HeartbeatIn::parse(body.as_bytes()).expect("parses");
        let e = hub.ingest(&pool(), hb, now).await.expect_err("full");
        assert!(matches!(e, IngestError::FleetFull { max: 1 }));
        // A time from the far future is refused by the hub's clock.
        let body = heartbeat("w-1", now + chrono::Duration::hours(25), None);
        let hb = HeartbeatIn::parse(body.as_bytes()).expect("parses");
        let e = hub.ingest(&pool(), hb, now).await.expect_err("ahead");
        assert!(
            matches!(e, IngestError::Invalid(ref i) if i.field == "sent_at"),
            "{e}"
        );
        hub.db.flush().await.expect("flush");
        assert_eq!(logged(&hub), 1);
        assert_eq!(hub.fleet.lock().map(|f| f.len()).unwrap_or(0), 1);
    }
}
