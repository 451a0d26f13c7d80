//! The hub's list of agents, its history, and the revision they belong to.

use chrono::{DateTime, Utc};

use crate::wire::HistoryEntry;

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
}

/// One history entry. A revision can come back (a move, an add and a
/// remove return to an earlier hash), so the revision alone is not a key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HistKey {
    pub revision: String,
    pub at: DateTime<Utc>,
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

    /// The history entry a key names.
    pub fn entry(&self, k: &HistKey) -> Option<&HistoryEntry> {
        self.history
            .iter()
            .find(|h| h.at == k.at && h.revision == k.revision)
    }
}
