//! The owner's document on disk, which owners also edit by hand: judged
//! (does it validate, and if not, why: message, line and column, never a
//! snippet of the text, since `/v1/health` needs no token) and watched, so
//! that a hand edit made while the hub runs becomes a revision (or, when it
//! does not validate, is reported and never projected) instead of being
//! written over unseen.
//!
//! Two paths notice a change: the watcher (the file's directory, and its
//! target's directory when the config is a symlink, through `notify`, with
//! a once-a-second look at the file's identity as a fallback), and a byte
//! compare under the write lock before every write
//! ([`Hub::take_disk_change`]), which catches an edit made the moment
//! before a `PUT`, before the watcher could.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use super::{Current, Hub, publish_config, store};
use crate::agents_doc::{self, DocError};
use crate::wire::{ConfigInvalid, HistoryEntry, KNOWN_AGENTS, OrderSource, ProblemEvent};

/// History's `by` for a change the hub found on disk.
pub const CHANGED_ON_DISK: &str = "(changed on disk)";

/// How often the fallback looks at the file's identity and size.
const POLL: Duration = Duration::from_secs(1);
/// How long after a watcher's notice the file is read: several notices
/// of one edit (a close, then a rename) are read once.
const SETTLE: Duration = Duration::from_millis(50);
/// How long a change the fallback sees must stand before it is read as
/// done: longer than a slow writer's pause between two writes (a script
/// that writes a file in parts). The fallback notices an edit within
/// [`POLL`] + this, about 6 s.
pub const POLL_SETTLE: Duration = Duration::from_secs(5);

/// The list of a document that validates, or why it does not.
pub fn judge(bytes: &[u8]) -> Result<Vec<String>, ConfigInvalid> {
    if let Some(why) = not_taken_why(bytes) {
        return Err(ConfigInvalid {
            message: why,
            line: None,
            column: None,
        });
    }
    let text = agents_doc::decode(bytes).map_err(|e| describe(e, "", None))?;
    let doc = agents_doc::parse(text).map_err(|e| describe(e, text, None))?;
    agents_doc::locate_in(&doc)
        .map(|l| l.agents)
        .map_err(|e| describe(e, text, Some(&doc)))
}

/// Largest file the hub takes as its document (the contract's bound for a
/// `PUT`): one larger does not validate, and is never read whole.
pub const MAX_BYTES: usize = 1024 * 1024;

/// The start of what the hub keeps of a file it did not take: never UTF-8
/// (its first byte is 0xFF), so never served, and never a document.
const NOT_TAKEN: &[u8] = b"\xffmacfleet: not taken\n";

/// What the hub keeps of a file it did not take, in place of its bytes:
/// why (the message it does not validate with), then what changes when
/// the file does (its identity, size and modification time), so that the
/// compare with the disk notices a change and the revision (the ETag a
/// `PUT` names to replace it) follows it.
fn not_taken(why: &str, stamp: &[i64]) -> Vec<u8> {
    let mut out = NOT_TAKEN.to_vec();
    out.extend_from_slice(why.as_bytes());
    out.push(b'\n');
    for n in stamp {
        out.extend_from_slice(format!("{n} ").as_bytes());
    }
    out
}

/// Whether `bytes` (a [`Current`]'s) are the file's own, not a record of
/// a file the hub did not take: what a write may put back.
pub(crate) fn holds_file_bytes(bytes: &[u8]) -> bool {
    !bytes.starts_with(NOT_TAKEN)
}

fn not_taken_why(bytes: &[u8]) -> Option<String> {
    let rest = bytes.strip_prefix(NOT_TAKEN)?;
    let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// The hub's config as it compares it with what it last read or wrote:
/// the file's bytes when it takes the file (a regular file of at most
/// [`MAX_BYTES`], the config itself or a link it follows,
/// [`store::resolve`]), else a record of why not ([`not_taken`]). Never
/// more than [`MAX_BYTES`] + 1 bytes are read.
pub fn read_config(path: &Path, link_dirs: &[PathBuf]) -> std::io::Result<Vec<u8>> {
    match store::resolve(path, link_dirs)? {
        Ok(target) => read_file(&target),
        Err(why) => {
            use std::os::unix::fs::MetadataExt;
            let l = std::fs::symlink_metadata(path)?;
            let to = std::fs::read_link(path)?;
            let to = i64::from(crc_of(to.as_os_str().as_encoded_bytes()));
            Ok(not_taken(
                &why,
                &[
                    l.dev() as i64,
                    l.ino() as i64,
                    l.mtime(),
                    l.mtime_nsec(),
                    to,
                ],
            ))
        }
    }
}

/// A cheap fingerprint of a link's text (only compared, never shown).
fn crc_of(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// One file, as [`read_config`] takes it: no link followed, a FIFO or
/// device never waited on, at most [`MAX_BYTES`] + 1 bytes read.
pub(crate) fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?;
    let m = f.metadata()?;
    let stamp = [
        m.dev() as i64,
        m.ino() as i64,
        m.len() as i64,
        m.mtime(),
        m.mtime_nsec(),
    ];
    if m.file_type().is_dir() {
        // Not a document at all: a failure to read it, as before.
        return Err(std::io::Error::from_raw_os_error(libc::EISDIR));
    }
    if !m.file_type().is_file() {
        return Ok(not_taken("not a regular file", &stamp));
    }
    let over = || not_taken(&format!("over {} MiB", MAX_BYTES >> 20), &stamp);
    if m.len() > MAX_BYTES as u64 {
        return Ok(over());
    }
    let mut out = Vec::with_capacity(m.len() as usize);
    f.take(MAX_BYTES as u64 + 1).read_to_end(&mut out)?;
    if out.len() > MAX_BYTES {
        return Ok(over());
    }
    Ok(out)
}

/// Whether some process holds `path` open for writing: `Some(true)` when
/// a read lease cannot be had for that reason (`fcntl(F_SETLEASE)` says
/// `EAGAIN`), `Some(false)` when one can (it is let go at once), `None`
/// when the hub cannot tell (not the file's owner, a filesystem without
/// leases). The lease's break signal is set to `SIGURG`, which is ignored
/// by default, so a writer opening the file in the instant the lease is
/// held costs the hub nothing.
pub(crate) fn writer_holds(path: &Path) -> Option<bool> {
    // Linux's F_SETSIG (the libc crate leaves it out).
    const F_SETSIG: libc::c_int = 10;
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let fd = f.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function owns.
    unsafe {
        if libc::fcntl(fd, F_SETSIG, libc::SIGURG) != 0 {
            return None;
        }
        if libc::fcntl(fd, libc::F_SETLEASE, libc::F_RDLCK) == 0 {
            libc::fcntl(fd, libc::F_SETLEASE, libc::F_UNLCK);
            return Some(false);
        }
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EAGAIN) => Some(true),
        _ => None,
    }
}

/// A [`DocError`] as message, line and column, naming no value of the
/// document (a name in the list may be a pasted secret).
fn describe(e: DocError, text: &str, doc: Option<&toml_edit::Document<&str>>) -> ConfigInvalid {
    let raw = doc.and_then(|d| agents_doc::read_raw(d).ok());
    let at = |offset: usize| {
        let (l, c) = agents_doc::line_col(text, offset);
        (Some(l), Some(c))
    };
    // The element `i` of the list, or the whole value (the comma form).
    let element = |i: usize| match &raw {
        Some(r) => at(r.elements.get(i).map_or(r.span.start, |s| s.start)),
        None => (None, None),
    };
    let index_where = |bad: &dyn Fn(usize, &String) -> bool| {
        raw.as_ref()
            .and_then(|r| r.agents.iter().enumerate().position(|(i, a)| bad(i, a)))
    };
    let (message, (line, column)) = match e {
        DocError::NotUtf8 { line, column } => {
            ("not valid UTF-8".to_string(), (Some(line), Some(column)))
        }
        DocError::Toml {
            message,
            line,
            column,
        } => (
            format!("not TOML: {}", one_line(&message)),
            (Some(line), Some(column)),
        ),
        DocError::BadName(_) => {
            let i = index_where(&|_, a| !crate::wire::is_agent_name(a));
            (
                format!(
                    "MAC_CODING_AGENTS: element {} is not an agent name (names match ^[a-z][a-z0-9_-]{{0,31}}$)",
                    i.map_or("?".into(), |i| (i + 1).to_string())
                ),
                i.map_or((None, None), element),
            )
        }
        DocError::Duplicate(_) => {
            let list = raw.as_ref().map(|r| r.agents.clone()).unwrap_or_default();
            let i = index_where(&|i, a| list[..i].contains(a));
            (
                format!(
                    "MAC_CODING_AGENTS names an agent twice (element {} repeats an earlier one)",
                    i.map_or("?".into(), |i| (i + 1).to_string())
                ),
                i.map_or((None, None), element),
            )
        }
        // These name no value of the document.
        other => (
            other.to_string(),
            raw.as_ref().map_or((None, None), |r| at(r.span.start)),
        ),
    };
    ConfigInvalid {
        message: crate::scrub::scrub(&message).into_owned(),
        line,
        column,
    }
}

/// toml_edit's messages run over lines (`invalid array\nexpected ...`).
fn one_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

fn place(invalid: &ConfigInvalid) -> String {
    match (invalid.line, invalid.column) {
        (Some(l), Some(c)) => format!(", line {l}, column {c}"),
        (Some(l), None) => format!(", line {l}"),
        _ => String::new(),
    }
}

/// The log's key for a document on disk that does not validate.
const CONFIG_INVALID: &str = "config-invalid";

/// The sentence `/v1/health` and the log say while the document on disk is
/// not in force: the file, the error, its line and column, and what the
/// workers are told meanwhile.
pub fn problem(path: &Path, c: &Current) -> Option<String> {
    let invalid = c.invalid.as_ref()?;
    let at = place(invalid);
    let told = told(c);
    Some(match c.order {
        OrderSource::BuiltIn => format!(
            "{}: no accepted MAC_CODING_AGENTS ({}{at}); {told}",
            path.display(),
            invalid.message,
        ),
        OrderSource::LastAccepted | OrderSource::Document => format!(
            "{}: the document on disk does not validate ({}{at}); {told}",
            path.display(),
            invalid.message,
        ),
    })
}

/// What every worker is told while the document on disk is not in force.
pub fn told(c: &Current) -> String {
    match c.order {
        OrderSource::BuiltIn => format!(
            "every worker is given the built-in order {} until a list that validates is written",
            KNOWN_AGENTS.join(", ")
        ),
        OrderSource::LastAccepted | OrderSource::Document => format!(
            "workers keep the last accepted list ({}, revision {}) until it is fixed or replaced",
            c.agents.join(", "),
            c.projected
        ),
    }
}

/// The sentence for hand edits of `config` kept aside as `kept`.
fn kept_sentence(config: &Path, kept: &[PathBuf]) -> String {
    let kept: Vec<String> = kept.iter().map(|k| k.display().to_string()).collect();
    format!(
        "a hand edit of {} that a config write swapped out (the hub killed mid-write, or two edits renamed in during one) is kept aside as {} (nothing deleted): compare it with the config and merge it by hand; said until the owner's next write",
        config.display(),
        kept.join(", ")
    )
}

/// The `Macfleet-Config-Invalid` header: `line=L; column=C;
/// message="..."` (`line` and `column` only when the error has a place;
/// the message as an HTTP quoted string, printable ASCII).
pub fn header_value(invalid: &ConfigInvalid) -> String {
    let mut out = String::new();
    if let Some(l) = invalid.line {
        out.push_str(&format!("line={l}; "));
    }
    if let Some(c) = invalid.column {
        out.push_str(&format!("column={c}; "));
    }
    out.push_str("message=\"");
    for ch in invalid.message.chars() {
        match ch {
            '"' | '\\' => {
                out.push('\\');
                out.push(ch);
            }
            ' '..='~' => out.push(ch),
            _ => out.push('?'),
        }
    }
    out.push('"');
    out
}

impl Hub {
    /// Hand edits a config write swapped out and kept aside (`kept`): said
    /// in health until the owner's next write, and published once each as
    /// an `event: problem`.
    pub(crate) fn note_kept(&self, kept: Vec<PathBuf>) {
        if kept.is_empty() {
            return;
        }
        for k in &kept {
            let message = kept_sentence(&self.opts.config, std::slice::from_ref(k));
            self.events
                .publish(super::events::Payload::Problem(Arc::new(ProblemEvent {
                    at: Utc::now(),
                    kind: "hand_edit_kept".into(),
                    path: k.display().to_string(),
                    message,
                })));
        }
        if let Ok(mut held) = self.kept_aside.lock() {
            held.extend(kept);
        }
    }

    /// Health's sentence for the hand edits kept aside, if any.
    pub(crate) fn kept_problem(&self) -> Option<String> {
        let held = self.kept_aside.lock().ok()?;
        (!held.is_empty()).then(|| kept_sentence(&self.opts.config, &held))
    }

    /// The owner wrote the config: the hand edits kept aside before are
    /// theirs to have merged, and no longer said.
    pub(crate) fn owner_wrote(&self) {
        let had = self
            .kept_aside
            .lock()
            .map(|mut k| std::mem::take(&mut *k))
            .unwrap_or_default();
        if !had.is_empty() {
            tracing::info!(
                kept = had.len(),
                "the owner wrote the config: the hand edits kept aside are no longer reported (the files stay)"
            );
        }
    }

    /// Read the document on disk and take in what changed (see
    /// [`Hub::take_disk_change`]).
    pub async fn notice_disk(&self) -> Arc<Current> {
        let _guard = self.write_lock.lock().await;
        self.take_disk_change().await
    }

    /// Under the write lock, once [`Hub::take_disk_change`] gave `before`:
    /// replace the file with `bytes` only over `before`'s document
    /// ([`store::replace_checked`]). [`store::Replaced::Raced`]: a hand
    /// edit landed after the compare, and stands.
    pub(crate) async fn write_config(
        &self,
        bytes: bytes::Bytes,
        before: &Current,
    ) -> std::io::Result<store::Replaced> {
        let (path, dirs) = (self.opts.config.clone(), self.opts.config_link_dirs.clone());
        let known = before.bytes.clone();
        let mode = self.config_place.mode();
        tokio::task::spawn_blocking(move || {
            store::replace_checked(&path, &dirs, &bytes, mode, &|p| {
                read_file(p).is_ok_and(|b| b[..] == known[..])
            })
        })
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
    }

    /// Under the write lock: compare the file's bytes with what the hub
    /// last read or wrote. A changed document that validates becomes a new
    /// revision (History `by` = `(changed on disk)`, a `config` event, the
    /// fleet resynced); one that does not is served as it stands but never
    /// projected, and said once in the log. Returns the document now
    /// current.
    pub(crate) async fn take_disk_change(&self) -> Arc<Current> {
        let before = self.current();
        let (path, dirs) = (self.opts.config.clone(), self.opts.config_link_dirs.clone());
        let known = before.bytes.clone();
        // A file that differs from what the hub knows is taken only once
        // no one holds it open for writing (where the hub can tell): a
        // writer mid-way (a pause between two writes) is not done.
        let read = tokio::task::spawn_blocking(move || {
            let bytes = read_config(&path, &dirs)?;
            if bytes[..] == known[..] {
                return Ok(None);
            }
            let target = store::resolve(&path, &dirs).ok().and_then(Result::ok);
            if target.and_then(|t| writer_holds(&t)) == Some(true) {
                tracing::debug!(path = %path.display(), "the config is being written; taken once its writer is done");
                return Ok(None);
            }
            Ok(Some(bytes))
        })
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())));
        let bytes = match read {
            Ok(Some(b)) => b,
            Ok(None) => return before,
            Err(e) => {
                // Gone for a moment (an editor's rename) or unreadable: the
                // document in force stands.
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(path = %self.opts.config.display(), error = %e, "cannot read the config to compare it");
                }
                return before;
            }
        };
        let bytes = bytes::Bytes::from(bytes);
        let interval = self.opts.heartbeat_interval_s;
        match judge(&bytes) {
            Ok(agents) => {
                let new = Arc::new(Current::valid(bytes, agents, interval));
                // Fixed back to the list in force: nothing new to record.
                let same = before.order != OrderSource::BuiltIn && new.revision == before.projected;
                if same {
                    self.current.store(new.clone());
                    // Said once with the problem's end, not at every return
                    // of a flapping file (the 16:03 check: 112 in 20 s).
                    if self.repeats.ended(CONFIG_INVALID).is_some() {
                        tracing::info!(revision = %new.revision, "the config on disk validates again");
                    }
                    return new;
                }
                if let Err(e) = self
                    .db
                    .record_history(HistoryEntry {
                        revision: new.revision.clone(),
                        at: Utc::now(),
                        by: CHANGED_ON_DISK.into(),
                        agents: new.agents.clone(),
                        previous_agents: before.agents.clone(),
                        client: None,
                    })
                    .await
                {
                    tracing::error!(error = %e, "history not recorded");
                }
                // Swapped once History has it: whoever sees the new
                // revision finds its entry.
                self.current.store(new.clone());
                publish_config(self, &new, CHANGED_ON_DISK);
                if let Ok(mut f) = self.fleet.lock() {
                    f.resync(new.given());
                }
                // A rollout baking is aborted: its base is gone.
                self.rollouts.written();
                self.rollout_hand_edit().await;
                tracing::info!(revision = %new.revision, agents = ?new.agents, "config changed on disk");
                let _ = self.repeats.ended(CONFIG_INVALID);
                new
            }
            Err(invalid) => {
                let order = match before.order {
                    OrderSource::BuiltIn => OrderSource::BuiltIn,
                    _ => OrderSource::LastAccepted,
                };
                let new = Arc::new(Current::not_valid(
                    bytes,
                    invalid,
                    before.projected.clone(),
                    before.agents.clone(),
                    order,
                    interval,
                ));
                self.current.store(new.clone());
                // Once, then counted once a minute: a link flapping in and
                // out of the directory makes the same invalid document again
                // and again (the 15:16 audit: 303 lines in 20 s); another
                // mistake is another message, said at once.
                if let (Some(p), Some(i)) = (problem(&self.opts.config, &new), &new.invalid) {
                    self.repeats.error_each(CONFIG_INVALID, &i.message, &p);
                }
                self.rollout_hand_edit().await;
                new
            }
        }
    }
}

/// What the fallback compares: the file's identity, size and times (and
/// the link's, when the config is a symlink that may be repointed).
fn stamp(path: &Path) -> Option<[i64; 8]> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    let l = std::fs::symlink_metadata(path).ok()?;
    Some([
        m.dev() as i64,
        m.ino() as i64,
        m.len() as i64,
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
        l.ino() as i64,
    ])
}

fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whether a watcher's event says a writer is done with the file: it
/// closed it after writing (inotify's close-write), a rename put it in
/// place, or a symlink was made (whole at once). A write, or a file just
/// created, is a writer still at work, and waited out.
fn writer_done(ev: &notify::Event) -> bool {
    use notify::EventKind;
    use notify::event::{AccessKind, AccessMode, CreateKind, ModifyKind};
    match ev.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Modify(ModifyKind::Name(_)) => true,
        EventKind::Create(CreateKind::File | CreateKind::Any | CreateKind::Other) => ev
            .paths
            .iter()
            .any(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())),
        _ => false,
    }
}

/// Watch the config's directory, and its target's when it is a symlink
/// the hub follows, for a writer done with the file's name (the database
/// beside it is busy, and ignored). `None` when the platform's watcher
/// cannot be had, or a directory cannot be watched: the fallback alone
/// notices then.
fn watcher(
    path: &Path,
    link_dirs: &[PathBuf],
    tx: tokio::sync::mpsc::Sender<()>,
) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let mut places = vec![(dir_of(path), path.file_name()?.to_os_string())];
    if let Ok(Ok(target)) = store::resolve(path, link_dirs) {
        if let Some(name) = target.file_name() {
            places.push((dir_of(&target), name.to_os_string()));
        }
    }
    let names: Vec<_> = places.iter().map(|(_, n)| n.clone()).collect();
    let mut w = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let Ok(ev) = res else { return };
        let ours = ev
            .paths
            .iter()
            .any(|p| p.file_name().is_some_and(|n| names.iter().any(|m| m == n)));
        if ours && writer_done(&ev) {
            let _ = tx.try_send(());
        }
    })
    .map_err(|e| tracing::warn!(error = %e, "cannot watch the config; looking at it once a second instead"))
    .ok()?;
    let mut dirs: Vec<PathBuf> = places.into_iter().map(|(d, _)| d).collect();
    dirs.dedup();
    for d in dirs {
        if let Err(e) = w.watch(&d, notify::RecursiveMode::NonRecursive) {
            tracing::warn!(dir = %d.display(), error = %e, "cannot watch the config's directory; looking at it once a second instead");
            return None;
        }
    }
    Some(w)
}

/// Notice hand edits of the config while the hub runs, until it stops:
/// when the watcher says a writer is done with the file, or, in the
/// fallback, once a change has stood for [`POLL_SETTLE`] and no writer
/// holds the file open ([`writer_holds`]; where the hub cannot tell and
/// the watcher runs, the watcher's word is waited for).
pub(crate) fn spawn_watcher(hub: &Arc<Hub>) -> tokio::task::JoinHandle<()> {
    let path = hub.opts.config.clone();
    let dirs = hub.opts.config_link_dirs.clone();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(1);
    let w = watcher(&path, &dirs, tx.clone());
    let watching = w.is_some();
    let weak = Arc::downgrade(hub);
    let mut closing = hub.closing.subscribe();
    tokio::spawn(async move {
        // Held for the task's life: the watcher stops when dropped, and the
        // sender keeps `recv` from ending.
        let (_w, _tx) = (w, tx);
        let mut poll = tokio::time::interval(POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut seen = stamp(&path);
        // When the fallback last saw the file change, while not yet taken.
        let mut changed: Option<std::time::Instant> = None;
        loop {
            tokio::select! {
                _ = rx.recv() => {
                    tokio::time::sleep(SETTLE).await;
                    while rx.try_recv().is_ok() {}
                }
                _ = poll.tick() => {
                    let now = stamp(&path);
                    if now != seen {
                        seen = now;
                        changed = Some(std::time::Instant::now());
                        continue;
                    }
                    if changed.is_none_or(|t| t.elapsed() < POLL_SETTLE) {
                        continue;
                    }
                    let target = store::resolve(&path, &dirs).ok().and_then(Result::ok);
                    match target.and_then(|t| writer_holds(&t)) {
                        Some(true) => continue,
                        None if watching => continue,
                        _ => {}
                    }
                }
                r = closing.changed() => {
                    if r.is_err() || *closing.borrow() {
                        return;
                    }
                    continue;
                }
            }
            seen = stamp(&path);
            changed = None;
            let Some(hub) = weak.upgrade() else { return };
            hub.notice_disk().await;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_reads_back_as_the_hub_wrote_it() {
        for invalid in [
            ConfigInvalid {
                message: r#"not TOML: missing comma, expected `,` or "]" \ here"#.into(),
                line: Some(2),
                column: Some(31),
            },
            ConfigInvalid {
                message: "MAC_CODING_AGENTS is empty".into(),
                line: Some(4),
                column: None,
            },
            ConfigInvalid {
                message: "no MAC_CODING_AGENTS".into(),
                line: None,
                column: None,
            },
        ] {
            let v = header_value(&invalid);
            assert_eq!(ConfigInvalid::from_header(&v), Some(invalid), "{v}");
        }
        // Not the shape: nothing, never a guess.
        for v in [
            "",
            "line=x; message=\"a\"",
            "message=\"unterminated",
            "line=2",
        ] {
            assert_eq!(ConfigInvalid::from_header(v), None, "{v}");
        }
        // A long message is cut, and says so.
        let long = format!("message=\"{}\"", "a".repeat(5000));
        let m = ConfigInvalid::from_header(&long).expect("read").message;
        assert_eq!(m.chars().count(), ConfigInvalid::MAX_MESSAGE + 1);
        assert!(m.ends_with('…'));
    }

    #[test]
    fn judged_errors_have_a_place_and_quote_nothing() {
        // Not an agent name (upper case, too long): a pasted token.
        let secret = format!("{}{}", "mft_", "Qx7Zp".repeat(9));
        let doc = format!("[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"{secret}\"]\n");
        let e = judge(doc.as_bytes()).expect_err("bad name");
        assert!(!e.message.contains("Qx7Zp"), "{e:?}");
        assert!(e.message.contains("element 2"), "{e:?}");
        assert_eq!((e.line, e.column), (Some(2), Some(34)));
        let e = judge(b"[fleet]\nMAC_CODING_AGENTS = [\"pi\", \"pi\"]\n").expect_err("dup");
        assert_eq!((e.line, e.column), (Some(2), Some(28)), "{e:?}");
        let bad = format!("[fleet]\nMAC_CODING_AGENTS = [\"opencode\" \"{secret}\"]\n");
        let e = judge(bad.as_bytes()).expect_err("not toml");
        assert!(e.message.starts_with("not TOML"), "{e:?}");
        assert!(
            !e.message.contains("Qx7Zp") && !e.message.contains('\n'),
            "{e:?}"
        );
        assert_eq!(e.line, Some(2));
        let e = judge(b"[other]\nx = 1\n").expect_err("missing");
        assert!(e.message.contains("missing") && e.line.is_none(), "{e:?}");
        let e = judge(b"a = 1\n\xff").expect_err("utf-8");
        assert_eq!((e.line, e.column), (Some(2), Some(1)));
        assert_eq!(
            judge(b"MAC_CODING_AGENTS = \"pi, claude\"").expect("valid"),
            ["pi", "claude"]
        );
    }

    #[test]
    fn a_file_is_read_within_its_bound_and_a_writer_is_seen() {
        use std::io::Write;
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("hub.toml");
        std::fs::write(&p, "a = 1\n").expect("write");
        assert_eq!(read_file(&p).expect("read"), b"a = 1\n");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .expect("open");
        assert_eq!(writer_holds(&p), Some(true));
        f.write_all(&vec![b'#'; MAX_BYTES]).expect("grow");
        drop(f);
        assert_eq!(writer_holds(&p), Some(false));
        let big = read_file(&p).expect("read");
        assert!(big.len() < 200, "not read whole: {}", big.len());
        let e = judge(&big).expect_err("over");
        assert_eq!(e.message, "over 1 MiB");
        // Another file's record differs; the same file's is the same.
        assert_eq!(read_file(&p).expect("again"), big);
        assert!(std::str::from_utf8(&big).is_err(), "never served");
    }

    #[test]
    fn header_is_printable_and_quoted() {
        let h = header_value(&ConfigInvalid {
            message: "bad \"x\" \\ é".into(),
            line: Some(3),
            column: Some(7),
        });
        assert_eq!(h, r#"line=3; column=7; message="bad \"x\" \\ ?""#);
        assert!(axum::http::HeaderValue::from_str(&h).is_ok());
    }
}
