//! Whether the config's place lets the hub read and replace it, looked at
//! once a second by the sweeper. `/v1/health` serves what the last look
//! found (a request costs no syscall); a `PUT` looks again for itself
//! ([`config_unusable`]), since it must be refused precisely.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::{Current, Hub, db, disk, store};

/// How long the sweeper waits before it looks again at a config it found
/// missing: an editor's rename leaves the name empty for a moment.
const MISSING_AGAIN: Duration = Duration::from_millis(200);

/// Why the config at `path` cannot be read or replaced now, as the user
/// the hub runs as (`None`: it can; a file missing for a moment, between
/// an editor's rename and the next, is not a problem). What the sweeper
/// says once a second in health, and what a `PUT` is refused for (503
/// `config_unavailable`) rather than acknowledged with nothing on disk.
///
/// The path is resolved as every read and write resolves it
/// ([`store::resolve`] with `link_dirs`, `--config-link-dir`): a link the
/// hub does not follow, or one that points nowhere, cannot be replaced
/// either, and says why without naming its target.
pub fn config_unusable(path: &Path, link_dirs: &[PathBuf]) -> Option<String> {
    let shown = path.display();
    let target = match store::resolve(path, link_dirs) {
        Ok(Ok(t)) => t,
        Ok(Err(why)) => return Some(why),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
                return Some(format!(
                    "the config {shown} is a symlink to a file that does not exist: a write would not replace its target"
                ));
            }
            return None;
        }
        Err(e) => return Some(format!("the config {shown} cannot be looked at ({e})")),
    };
    match std::fs::metadata(&target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return Some(format!("the config {shown} cannot be looked at ({e})")),
        Ok(m) if m.is_dir() => {
            return Some(format!(
                "the config {shown} is a directory, not a file: a write cannot replace it and the next start cannot read it"
            ));
        }
        Ok(m) if !m.is_file() => {
            return Some(format!("the config {shown} is not a regular file"));
        }
        Ok(_) => {
            if let Err(e) = std::fs::File::open(&target) {
                return Some(format!(
                    "the config {shown} cannot be read by the hub ({e}): the next start would fail, and a write would keep the file's mode"
                ));
            }
        }
    }
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    (!db::writable(&dir)).then(|| {
        format!(
            "the config's directory {} cannot be written by the hub: a write cannot replace {shown}",
            dir.display()
        )
    })
}

/// What one look at the config found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// Why it cannot be read or replaced ([`config_unusable`]).
    pub unusable: Option<String>,
    /// No file at its path (nor a link): removed, and not put back.
    pub missing: bool,
    /// The file's mode bits, when there is one.
    pub mode: Option<u32>,
}

/// Look at the config once: its place, whether it is there, its mode.
pub fn look(path: &Path, link_dirs: &[PathBuf]) -> Found {
    use std::os::unix::fs::PermissionsExt;
    let unusable = config_unusable(path, link_dirs);
    let target = store::resolve(path, link_dirs).ok().and_then(Result::ok);
    let meta = target.as_deref().map(std::fs::metadata);
    let missing = unusable.is_none()
        && match &meta {
            Some(Err(e)) => e.kind() == std::io::ErrorKind::NotFound,
            Some(Ok(_)) => false,
            None => std::fs::symlink_metadata(path)
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound),
        };
    let mode = match meta {
        Some(Ok(m)) if m.is_file() => Some(m.permissions().mode() & 0o7777),
        _ => None,
    };
    Found {
        unusable,
        missing,
        mode,
    }
}

/// What the sweeper last found, for health and for a write that makes the
/// file afresh.
#[derive(Default)]
pub struct ConfigPlace {
    found: Mutex<Found>,
    /// The mode the file last had (kept while it is missing).
    mode: Mutex<Option<u32>>,
}

impl ConfigPlace {
    /// Seeded with a look at start.
    pub fn new(path: &Path, link_dirs: &[PathBuf]) -> ConfigPlace {
        let found = look(path, link_dirs);
        ConfigPlace {
            mode: Mutex::new(found.mode),
            found: Mutex::new(found),
        }
    }

    /// The last look.
    pub fn found(&self) -> Found {
        self.found.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// The mode the config file last had: a `PUT` that makes it afresh
    /// (it was removed) gives the new file this mode.
    pub fn mode(&self) -> Option<u32> {
        self.mode.lock().ok().and_then(|m| *m)
    }

    fn set(&self, found: Found) {
        if let (Some(m), Ok(mut mode)) = (found.mode, self.mode.lock()) {
            *mode = Some(m);
        }
        if let Ok(mut f) = self.found.lock() {
            *f = found;
        }
    }

    /// Whether the last look found a problem (a write would be refused,
    /// or the next start would fail).
    pub fn in_trouble(&self) -> bool {
        let f = self.found();
        f.unusable.is_some() || f.missing
    }

    /// The problems health says of the config, as sentences: the document
    /// not in force ([`disk::problem`]), the place (from the last look).
    /// A link the hub does not follow is one sentence: not served, and
    /// not written.
    pub fn problems(&self, path: &Path, c: &Current) -> Vec<String> {
        let f = self.found();
        let refused = f
            .unusable
            .as_deref()
            .filter(|why| c.invalid.as_ref().is_some_and(|i| i.message == *why));
        let mut out = Vec::new();
        match (refused, &f.unusable) {
            (Some(why), _) => out.push(format!(
                "{why}: it is not served, and config writes are refused (503 config_unavailable) until it is fixed; {}",
                disk::told(c)
            )),
            (None, unusable) => {
                out.extend(disk::problem(path, c));
                out.extend(unusable.as_ref().map(|p| {
                    format!(
                        "{p}; config writes are refused (503 config_unavailable) until it is fixed"
                    )
                }));
            }
        }
        if f.missing {
            out.push(missing_sentence(path, self.mode()));
        }
        out
    }
}

fn missing_sentence(path: &Path, mode: Option<u32>) -> String {
    let mode = mode.map_or_else(|| "0600".to_string(), |m| format!("{m:04o}"));
    format!(
        "the config {} is gone (removed?): the hub serves and projects the document it last read, but the next start cannot read it; a PUT makes it afresh (mode {mode}, as the file had)",
        path.display()
    )
}

/// Once a second: look at the config, keep what was found for health, and
/// say in the log, once (then a count once a minute), that it cannot be
/// read or replaced, or is gone; and when that ends.
pub(crate) async fn look_at_the_config(hub: &Hub) {
    const UNUSABLE: &str = "config-unusable";
    const MISSING: &str = "config-missing";
    let (path, dirs) = (&hub.opts.config, &hub.opts.config_link_dirs);
    let mut found = look(path, dirs);
    if found.missing {
        tokio::time::sleep(MISSING_AGAIN).await;
        found = look(path, dirs);
    }
    match &found.unusable {
        Some(p) => hub.repeats.warn_each(
            UNUSABLE,
            &format!("{p}; config writes are refused (503 config_unavailable)"),
        ),
        None => {
            if hub.repeats.ended(UNUSABLE).is_some() {
                tracing::info!(path = %path.display(), "the config can be read and replaced again");
            }
        }
    }
    if found.missing {
        hub.repeats
            .warn(MISSING, &missing_sentence(path, hub.config_place.mode()));
    } else if hub.repeats.ended(MISSING).is_some() {
        tracing::info!(path = %path.display(), "the config is there again");
    }
    hub.config_place.set(found);
}
