//! Replaying an edited order onto a newer document (after a 412).

use std::collections::HashSet;

use super::{DocError, Op, apply, parse, read_raw, validate_list};

/// Why an edit could not be replayed onto the hub's newer document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RebaseError {
    #[error(
        "the hub's MAC_CODING_AGENTS no longer holds the agents the edit started from ({})",
        describe(.added_on_hub, .removed_on_hub)
    )]
    AgentsDiffer {
        added_on_hub: Vec<String>,
        removed_on_hub: Vec<String>,
    },
    #[error("the document the edit started from: {0}")]
    Base(DocError),
    #[error("the edited order: {0}")]
    Edited(DocError),
    #[error("the hub's document: {0}")]
    Newer(DocError),
}

fn describe(added: &[String], removed: &[String]) -> String {
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("added on the hub: {}", added.join(", ")));
    }
    if !removed.is_empty() {
        parts.push(format!("removed on the hub: {}", removed.join(", ")));
    }
    parts.join("; ")
}

fn agents_of(text: &str) -> Result<Vec<String>, DocError> {
    let doc = parse(text)?;
    Ok(read_raw(&doc)?.agents)
}

/// Replay the order `edited` (made from `base`) onto `newer`. Works when
/// `newer` holds the same agents as `base` (or already as `edited`);
/// otherwise says which agents the hub added or removed.
pub fn rebase(base: &str, edited: &[String], newer: &str) -> Result<String, RebaseError> {
    let base_agents = agents_of(base).map_err(RebaseError::Base)?;
    validate_list(edited).map_err(RebaseError::Edited)?;
    let newer_agents = agents_of(newer).map_err(RebaseError::Newer)?;
    let set = |v: &[String]| v.iter().cloned().collect::<HashSet<String>>();
    let (b, n, e) = (set(&base_agents), set(&newer_agents), set(edited));
    if n != b && n != e {
        let mut added: Vec<String> = Vec::new();
        for a in &newer_agents {
            if !b.contains(a) && !added.contains(a) {
                added.push(a.clone());
            }
        }
        let mut removed: Vec<String> = Vec::new();
        for a in &base_agents {
            if !n.contains(a) && !removed.contains(a) {
                removed.push(a.clone());
            }
        }
        return Err(RebaseError::AgentsDiffer {
            added_on_hub: added,
            removed_on_hub: removed,
        });
    }
    apply(newer, &Op::Set(edited.to_vec()))
        .map(|e| e.text)
        .map_err(RebaseError::Newer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    const BASE: &str =
        "[fleet]\nMAC_CODING_AGENTS = [\n  \"opencode\", # cheap\n  \"pi\",\n  \"claude\",\n]\n";

    #[test]
    fn replays_onto_a_newer_document_with_the_same_agents() {
        // The hub gained a comment and another key, and someone swapped two.
        let newer = "[fleet]\nretries = 3\nMAC_CODING_AGENTS = [\n  \"pi\",\n  # keep opencode cheap\n  \"opencode\", # cheap\n  \"claude\",\n]\n";
        let out = rebase(BASE, &v(&["claude", "opencode", "pi"]), newer).expect("rebase");
        assert_eq!(
            out,
            "[fleet]\nretries = 3\nMAC_CODING_AGENTS = [\n  \"claude\",\n  # keep opencode cheap\n  \"opencode\", # cheap\n  \"pi\",\n]\n"
        );
    }

    #[test]
    fn names_the_agents_that_differ() {
        let newer = "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"claude\", \"cursor\"]\n";
        let err = rebase(BASE, &v(&["claude", "opencode", "pi"]), newer).unwrap_err();
        assert_eq!(
            err,
            RebaseError::AgentsDiffer {
                added_on_hub: v(&["cursor"]),
                removed_on_hub: v(&["pi"]),
            }
        );
        assert_eq!(
            err.to_string(),
            "the hub's MAC_CODING_AGENTS no longer holds the agents the edit started from (added on the hub: cursor; removed on the hub: pi)"
        );
    }

    #[test]
    fn an_edit_that_added_an_agent_replays_when_the_hub_did_too() {
        let newer = "MAC_CODING_AGENTS = \"opencode,pi,claude,cursor\"\n";
        let out = rebase(BASE, &v(&["cursor", "opencode", "pi", "claude"]), newer).expect("rebase");
        assert_eq!(out, "MAC_CODING_AGENTS = \"cursor,opencode,pi,claude\"\n");
        // Same agents as the base: the edit's added agent goes in.
        let newer = "MAC_CODING_AGENTS = \"claude,pi,opencode\"\n";
        let out = rebase(BASE, &v(&["cursor", "opencode", "pi", "claude"]), newer).expect("rebase");
        assert_eq!(out, "MAC_CODING_AGENTS = \"cursor,opencode,pi,claude\"\n");
    }

    #[test]
    fn says_which_document_is_broken() {
        let err = rebase("x = [", &v(&["pi"]), BASE).unwrap_err();
        assert!(
            matches!(err, RebaseError::Base(DocError::Toml { .. })),
            "{err}"
        );
        let err = rebase(BASE, &v(&["pi", "pi"]), BASE).unwrap_err();
        assert_eq!(err, RebaseError::Edited(DocError::Duplicate("pi".into())));
        let err = rebase(BASE, &v(&["pi"]), "a = 1\n").unwrap_err();
        assert_eq!(err, RebaseError::Newer(DocError::Missing));
    }
}
