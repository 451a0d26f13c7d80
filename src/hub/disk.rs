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

use super::{Current, Hub, publish_config};
use crate::agents_doc::{self, DocError};
use crate::wire::{ConfigInvalid, HistoryEntry, KNOWN_AGENTS, OrderSource};

/// History's `by` for a change the hub found on disk.
pub const CHANGED_ON_DISK: &str = "(changed on disk)";

/// How often the fallback looks at the file's identity and size.
const POLL: Duration = Duration::from_secs(1);
/// How long after a watcher's notice the file is read: an editor that
/// writes in place is given time to finish.
const SETTLE: Duration = Duration::from_millis(50);

/// The list of a document that validates, or why it does not.
pub fn judge(bytes: &[u8]) -> Result<Vec<String>, ConfigInvalid> {
    let text = agents_doc::decode(bytes).map_err(|e| describe(e, "", None))?;
    let doc = agents_doc::parse(text).map_err(|e| describe(e, text, None))?;
    agents_doc::locate_in(&doc)
        .map(|l| l.agents)
        .map_err(|e| describe(e, text, Some(&doc)))
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

/// The sentence `/v1/health` and the log say while the document on disk is
/// not in force: the file, the error, its line and column, and what the
/// workers are told meanwhile.
pub fn problem(path: &Path, c: &Current) -> Option<String> {
    let invalid = c.invalid.as_ref()?;
    let at = place(invalid);
    Some(match c.order {
        OrderSource::BuiltIn => format!(
            "{}: no accepted MAC_CODING_AGENTS ({}{at}); every worker is given the built-in order {} until a list that validates is written",
            path.display(),
            invalid.message,
            KNOWN_AGENTS.join(", ")
        ),
        OrderSource::LastAccepted | OrderSource::Document => format!(
            "{}: the document on disk does not validate ({}{at}); workers keep the last accepted list ({}, revision {}) until it is fixed or replaced",
            path.display(),
            invalid.message,
            c.agents.join(", "),
            c.projected
        ),
    })
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
    /// Read the document on disk and take in what changed (see
    /// [`Hub::take_disk_change`]).
    pub async fn notice_disk(&self) -> Arc<Current> {
        let _guard = self.write_lock.lock().await;
        self.take_disk_change().await
    }

    /// Under the write lock: compare the file's bytes with what the hub
    /// last read or wrote. A changed document that validates becomes a new
    /// revision (History `by` = `(changed on disk)`, a `config` event, the
    /// fleet resynced); one that does not is served as it stands but never
    /// projected, and said once in the log. Returns the document now
    /// current.
    pub(crate) async fn take_disk_change(&self) -> Arc<Current> {
        let before = self.current();
        let bytes = match tokio::fs::read(&self.opts.config).await {
            Ok(b) => b,
            Err(e) => {
                // Gone for a moment (an editor's rename) or unreadable: the
                // document in force stands.
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(path = %self.opts.config.display(), error = %e, "cannot read the config to compare it");
                }
                return before;
            }
        };
        if bytes[..] == before.bytes[..] {
            return before;
        }
        let bytes = bytes::Bytes::from(bytes);
        let interval = self.opts.heartbeat_interval_s;
        match judge(&bytes) {
            Ok(agents) => {
                let new = Arc::new(Current::valid(bytes, agents, interval));
                // Fixed back to the list in force: nothing new to record.
                let same = before.order != OrderSource::BuiltIn && new.revision == before.projected;
                if same {
                    self.current.store(new.clone());
                    tracing::info!(revision = %new.revision, "the config on disk validates again");
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
                    f.resync(&new.projected);
                }
                tracing::info!(revision = %new.revision, agents = ?new.agents, "config changed on disk");
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
                if let Some(p) = problem(&self.opts.config, &new) {
                    tracing::error!("{p}");
                }
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

/// Watch the config's directory, and its target's when it is a symlink,
/// for events on the file's name (the database beside it is busy, and
/// ignored). `None` when the platform's watcher cannot be had: the
/// fallback alone notices then.
fn watcher(path: &Path, tx: tokio::sync::mpsc::Sender<()>) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher;
    let mut places = vec![(dir_of(path), path.file_name()?.to_os_string())];
    if let Ok(target) = std::fs::canonicalize(path) {
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
        if ours {
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
        }
    }
    Some(w)
}

/// Notice hand edits of the config while the hub runs, until it stops.
pub(crate) fn spawn_watcher(hub: &Arc<Hub>) -> tokio::task::JoinHandle<()> {
    let path = hub.opts.config.clone();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(1);
    let w = watcher(&path, tx.clone());
    let weak = Arc::downgrade(hub);
    let mut closing = hub.closing.subscribe();
    tokio::spawn(async move {
        // Held for the task's life: the watcher stops when dropped, and the
        // sender keeps `recv` from ending.
        let (_w, _tx) = (w, tx);
        let mut poll = tokio::time::interval(POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut seen = stamp(&path);
        loop {
            tokio::select! {
                _ = rx.recv() => {
                    tokio::time::sleep(SETTLE).await;
                    while rx.try_recv().is_ok() {}
                }
                _ = poll.tick() => {
                    if stamp(&path) == seen {
                        continue;
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
