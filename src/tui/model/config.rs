//! The hub's list of agents, its history, and the revision they belong to.

use chrono::{DateTime, Utc};

use crate::wire::{ConfigInvalid, HistoryEntry};

#[derive(Debug, Default)]
pub struct Config {
    /// The list in rank order.
    pub agents: Vec<String>,
    pub revision: Option<String>,
    /// The whole document at `revision` (what an edit starts from).
    pub text: Option<String>,
    /// The revision whose config we asked for last (asked once).
    pub requested: Option<String>,
    /// Newest first, as the hub sends it.
    pub history: Vec<HistoryEntry>,
    /// The hub's file as it stands on disk, when it does not validate
    /// (`GET /v1/config` answered it with `Macfleet-Config-Invalid`):
    /// workers keep the list in force, a write on `revision` above gets
    /// 412, and `e` opens this text to mend it.
    pub on_disk: Option<OnDisk>,
    /// The hub's health last said this of its file (`config.invalid`): a
    /// change of it fetches the document again.
    pub health_said: Option<ConfigInvalid>,
}

/// The document on the hub's disk that does not validate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnDisk {
    /// Its own revision (the `ETag`): a write that replaces it names it.
    pub revision: String,
    pub text: String,
    pub reason: ConfigInvalid,
}

impl OnDisk {
    /// `the hub's file does not validate (line 2, column 31): not TOML: …`.
    pub fn sentence(&self) -> String {
        match self.reason.place() {
            Some(p) => format!(
                "the hub's file does not validate ({p}): {}",
                self.reason.message
            ),
            None => format!("the hub's file does not validate: {}", self.reason.message),
        }
    }
}

/// One history entry. A revision can come back (a move, an add and a
/// remove return to an earlier hash), so the revision alone is not a key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HistKey {
    /// The revision; for a rollout's step, the rollout's id.
    pub revision: String,
    pub at: DateTime<Utc>,
    /// A staged rollout's step (History's `rollouts`), not a revision.
    pub step: Option<crate::rollout::StepKind>,
}

/// Who wrote an entry: `alice`, or `alice via macfleet-agents/0.3` when
/// the hub recorded the writing client (owners who share a token are told
/// apart by it). Hub text: make it terminal-safe before drawing.
pub fn who(h: &HistoryEntry) -> String {
    match h.client.as_deref().filter(|c| !c.is_empty()) {
        Some(c) => format!("{} via {c}", h.by),
        None => h.by.clone(),
    }
}

impl Config {
    /// The newest history entry of a revision.
    pub fn written(&self, revision: &str) -> Option<&HistoryEntry> {
        self.history.iter().find(|h| h.revision == revision)
    }

    /// The history entry a key names (none for a rollout's step).
    pub fn entry(&self, k: &HistKey) -> Option<&HistoryEntry> {
        if k.step.is_some() {
            return None;
        }
        self.history
            .iter()
            .find(|h| h.at == k.at && h.revision == k.revision)
    }
}
