//! A pending edit that outlives its session. A session that ends without
//! asking (the terminal closed, SIGHUP, SIGTERM) with an edit pending keeps
//! it where `e` keeps a cancelled draft (`$XDG_STATE_HOME/macfleet/drafts/`,
//! 0700): `draft-….toml` (0600), the document as the edit would have
//! written it under `# macfleet:` lines naming the hub and the revision,
//! and beside it `draft-….json` (0600), what the next session on that hub
//! needs to offer it and replay it: the hub, the revision and document the
//! edit was begun on, the document and order it would write, when.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::editor;
use crate::tui::model::edit::{KeptDraft, NOTE};

/// What is kept of an edit beside its document (`draft-….json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    /// The hub's own name (`whoami`), and the hub as the session named it
    /// (context or URL).
    pub hub: String,
    pub label: String,
    /// The hub's identity (`whoami`'s `instance`): another hub at the same
    /// address is not offered it.
    #[serde(default)]
    pub instance: Option<String>,
    /// The revision the edit was begun on, and that document.
    pub revision: String,
    pub base: String,
    /// The document as the edit would write it, and its order.
    pub document: String,
    pub order: Vec<String>,
    pub saved_at: DateTime<Utc>,
    /// Why the session ended (`SIGHUP`, `the terminal hung up`).
    pub why: String,
}

impl Saved {
    /// This draft belongs to the hub of that identity (by its instance,
    /// else by the name the session gave it).
    pub fn is_of(&self, instance: Option<&str>, label: &str) -> bool {
        match (self.instance.as_deref(), instance) {
            (Some(a), Some(b)) => a == b,
            _ => self.label == label,
        }
    }

    /// The TOML file: the document under lines that say whose it is.
    fn toml(&self) -> String {
        let mut out = format!(
            "{NOTE} a pending edit of {} ({}), begun on revision {}, kept {} when the session ended ({}).\n\
             {NOTE} the next macfleet on this hub offers it: o opens it (replayed onto the hub's revision then), D drops it.\n",
            self.hub,
            self.label,
            self.revision,
            self.saved_at.format("%Y-%m-%d %H:%M:%SZ"),
            self.why
        );
        out.push_str(&self.document);
        out
    }
}

/// Keep `s` in `dir`: the `.toml` and the `.json` beside it (both 0600).
/// Returns the `.toml`'s path.
pub fn save_in(dir: &Path, s: &Saved) -> Result<PathBuf, String> {
    let toml = PathBuf::from(editor::keep_draft_in(dir, &s.toml())?);
    let json = toml.with_extension("json");
    let body = serde_json::to_string_pretty(s).map_err(|e| format!("encoding the draft: {e}"))?;
    editor::write_private(&json, &body).map_err(|e| format!("writing {}: {e}", json.display()))?;
    Ok(toml)
}

/// Keep `s` where drafts are kept.
pub fn save(s: &Saved) -> Result<PathBuf, String> {
    save_in(&editor::drafts_dir()?, s)
}

/// The drafts kept in `dir` for the hub of that identity, newest first.
/// A file that does not read as a draft (a cancelled editor's, which has
/// no `.json`; another program's) is left alone.
pub fn for_hub(dir: &Path, instance: Option<&str>, label: &str) -> Vec<KeptDraft> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<KeptDraft> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "json")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("draft-"))
        })
        .filter_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            let s: Saved = serde_json::from_str(&text).ok()?;
            s.is_of(instance, label).then(|| KeptDraft {
                id: p.display().to_string(),
                at: s.saved_at,
                revision: s.revision,
                base: s.base,
                document: s.document,
                order: s.order,
            })
        })
        .collect();
    out.sort_by(|a, b| b.at.cmp(&a.at).then_with(|| b.id.cmp(&a.id)));
    out
}

/// The drafts kept for that hub where drafts are kept.
pub fn kept_for(instance: Option<&str>, label: &str) -> Vec<KeptDraft> {
    match editor::drafts_dir() {
        Ok(d) => for_hub(&d, instance, label),
        Err(_) => Vec::new(),
    }
}

/// The draft `id` (its `.json`) is taken or dropped: both its files go.
pub fn forget(id: &str) -> Result<(), String> {
    let json = PathBuf::from(id);
    let toml = json.with_extension("toml");
    for p in [&json, &toml] {
        match std::fs::remove_file(p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(format!("removing {}: {e}", p.display())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(instance: Option<&str>, at: &str) -> Saved {
        Saved {
            hub: "prod-hub".into(),
            label: "http://127.0.0.1:7878".into(),
            instance: instance.map(str::to_string),
            revision: "r42".into(),
            base: "MAC_CODING_AGENTS = [\"a\", \"b\"]\n".into(),
            document: "MAC_CODING_AGENTS = [\"b\", \"a\"]\n".into(),
            order: vec!["b".into(), "a".into()],
            saved_at: at.parse().expect("time"),
            why: "SIGHUP".into(),
        }
    }

    #[test]
    fn a_kept_edit_is_two_private_files_found_again_by_its_hub_and_forgotten_whole() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().expect("tempdir");
        let dir = base.path().join("macfleet").join("drafts");
        let old = save_in(&dir, &saved(Some("i1"), "2026-12-01T18:00:00Z")).expect("kept");
        let new = save_in(&dir, &saved(Some("i1"), "2026-12-01T19:02:00Z")).expect("kept");
        save_in(&dir, &saved(Some("i2"), "2026-12-01T19:03:00Z")).expect("kept");
        // A cancelled editor's draft: no `.json`, never offered.
        editor::keep_draft_in(&dir, "x = 1\n").expect("kept");
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        for p in [&old, &new] {
            assert_eq!(mode(p), 0o600);
            assert_eq!(mode(&p.with_extension("json")), 0o600);
        }
        assert_eq!(mode(&dir), 0o700);
        let toml = std::fs::read_to_string(&new).expect("read");
        assert!(
            toml.starts_with("# macfleet: a pending edit of prod-hub"),
            "{toml}"
        );
        assert!(toml.contains("revision r42"), "{toml}");
        assert!(
            toml.ends_with("MAC_CODING_AGENTS = [\"b\", \"a\"]\n"),
            "{toml}"
        );
        let found = for_hub(&dir, Some("i1"), "another label");
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(
            found[0].id,
            new.with_extension("json").display().to_string()
        );
        assert_eq!(found[0].order, vec!["b".to_string(), "a".to_string()]);
        assert!(for_hub(&dir, Some("i9"), "http://127.0.0.1:7878").is_empty());
        forget(&found[0].id).expect("forget");
        assert!(!new.exists() && !new.with_extension("json").exists());
        assert_eq!(for_hub(&dir, Some("i1"), "x").len(), 1);
    }
}
