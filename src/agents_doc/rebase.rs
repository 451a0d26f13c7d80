//! Replaying an edited order onto a newer document (after a 412).

use std::collections::HashSet;

use super::{DocError, Op, apply, parse, read_raw, set_order, validate_list};

/// What a conflict (412) leaves of a pending order, once the hub's current
/// document is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The hub's change did not touch the list (another key, a comment):
    /// the pending order replayed onto the hub's document, to review again.
    Replayed { text: String },
    /// The hub's list already is the pending order: nothing is left to send.
    AlreadyThere,
    /// The hub's list changed: the three lists for a side-by-side view. The
    /// owner chooses: carry the pending order onto the hub's document as a
    /// new edit, or drop it.
    ListChanged(Sides),
}

/// The list as the edit started from it, as the hub holds it now, and as
/// the owner left it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sides {
    pub base: Vec<String>,
    pub theirs: Vec<String>,
    pub mine: Vec<String>,
}

/// Sort out a conflict: `base` is the document the pending order `mine`
/// was made from, `theirs` the hub's current document.
pub fn classify(base: &str, mine: &[String], theirs: &str) -> Result<Outcome, RebaseError> {
    let base_agents = agents_of(base).map_err(RebaseError::Base)?;
    let their_agents = agents_of(theirs).map_err(RebaseError::Newer)?;
    if their_agents == mine {
        return Ok(Outcome::AlreadyThere);
    }
    if their_agents != base_agents {
        return Ok(Outcome::ListChanged(Sides {
            base: base_agents,
            theirs: their_agents,
            mine: mine.to_vec(),
        }));
    }
    validate_list(mine).map_err(RebaseError::Edited)?;
    set_order(theirs, mine)
        .map(|text| Outcome::Replayed { text })
        .map_err(RebaseError::Newer)
}

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
    fn classify_replays_when_the_hub_changed_another_key_or_a_comment() {
        let theirs = "[fleet]\nretries = 3\nMAC_CODING_AGENTS = [\n  \"opencode\", # cheapest\n  \"pi\",\n  \"claude\",\n]\n";
        let out = classify(BASE, &v(&["claude", "opencode", "pi"]), theirs).expect("classify");
        assert_eq!(
            out,
            Outcome::Replayed {
                text: "[fleet]\nretries = 3\nMAC_CODING_AGENTS = [\n  \"claude\",\n  \"opencode\", # cheapest\n  \"pi\",\n]\n".into()
            }
        );
        // A pending edit that adds and removes replays too.
        let out = classify(BASE, &v(&["cursor", "opencode", "claude"]), theirs).expect("classify");
        let Outcome::Replayed { text } = out else {
            panic!("expected a replay, got {out:?}");
        };
        assert!(text.starts_with("[fleet]\nretries = 3\n"), "{text}");
        assert_eq!(
            crate::agents_doc::locate(&text).expect("valid").agents,
            ["cursor", "opencode", "claude"]
        );
    }

    #[test]
    fn classify_shows_three_lists_when_the_hub_changed_the_list() {
        // Reordered on the hub: the same agents, another order.
        let theirs = "[fleet]\nMAC_CODING_AGENTS = [\"pi\", \"opencode\", \"claude\"]\n";
        let mine = v(&["claude", "opencode", "pi"]);
        assert_eq!(
            classify(BASE, &mine, theirs),
            Ok(Outcome::ListChanged(Sides {
                base: v(&["opencode", "pi", "claude"]),
                theirs: v(&["pi", "opencode", "claude"]),
                mine: mine.clone(),
            }))
        );
        // An agent added on the hub.
        let theirs = "MAC_CODING_AGENTS = \"opencode,pi,claude,codex\"\n";
        let Ok(Outcome::ListChanged(sides)) = classify(BASE, &mine, theirs) else {
            panic!("expected the three lists");
        };
        assert_eq!(sides.theirs, v(&["opencode", "pi", "claude", "codex"]));
    }

    #[test]
    fn classify_sees_when_the_hub_already_holds_the_pending_order() {
        let theirs = "# someone else\nMAC_CODING_AGENTS = [\"claude\", \"opencode\", \"pi\"]\n";
        assert_eq!(
            classify(BASE, &v(&["claude", "opencode", "pi"]), theirs),
            Ok(Outcome::AlreadyThere)
        );
        // A broken pending order is refused, never sent.
        assert_eq!(
            classify(BASE, &v(&["pi", "pi"]), BASE),
            Err(RebaseError::Edited(DocError::Duplicate("pi".into())))
        );
        assert_eq!(
            classify(BASE, &v(&["pi"]), "x = 1\n"),
            Err(RebaseError::Newer(DocError::Missing))
        );
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
