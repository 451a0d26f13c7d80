//! The owner's pending edit of `MAC_CODING_AGENTS`: plain data, no I/O.
//!
//! It holds the document and revision the edit starts from and the order
//! the owner is building; the document to send is rendered from them by the
//! format-preserving editor, so what is reviewed is what is written.

use crate::agents_doc::{
    self, DocError, Edited, Op, Outcome, RebaseError, Sides, commented_out, validate_list,
};
use crate::wire::is_agent_name;

/// An edit in progress. Operations that cannot apply are refused with a
/// reason and change nothing; [`PendingEdit::check`] says what blocks a
/// write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingEdit {
    base_text: String,
    base_revision: String,
    base: Vec<String>,
    order: Vec<String>,
    undo: Vec<Vec<String>>,
    redo: Vec<Vec<String>>,
}

/// One agent of the pending order (or of the base, if removed), with its
/// rank before and after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rung {
    pub agent: String,
    /// Rank in the pending order; `None`: removed.
    pub new: Option<usize>,
    /// Rank in the document the edit starts from; `None`: added.
    pub old: Option<usize>,
}

impl Rung {
    /// Added, removed or moved.
    pub fn changed(&self) -> bool {
        self.new != self.old
    }
}

/// What is left of a pending edit after the hub answered 412 and its
/// current document was fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rebased {
    /// The hub's change left the list alone: the same order, now on the
    /// hub's document (review its new diff before sending).
    Replayed(PendingEdit),
    /// The hub already holds this order: nothing is pending any more.
    AlreadyThere(PendingEdit),
    /// The hub's list changed: the owner chooses.
    ListChanged(Box<Conflict>),
}

/// A pending order that met another change of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// Base, theirs and mine, for a side-by-side view.
    pub sides: Sides,
    /// The edit as it was, so nothing typed is lost before the choice.
    pub mine: PendingEdit,
    theirs: PendingEdit,
}

impl Conflict {
    /// The hub's revision the choice would build on.
    pub fn theirs_revision(&self) -> &str {
        &self.theirs.base_revision
    }

    /// Carry the pending order onto the hub's document as a new edit to
    /// review; undo goes back to the hub's order.
    pub fn carry(self) -> PendingEdit {
        let mut edit = self.theirs;
        edit.set_order(self.mine.order);
        edit
    }

    /// Drop the pending order: an edit of the hub's document with nothing
    /// pending.
    pub fn drop_mine(self) -> PendingEdit {
        self.theirs
    }
}

impl PendingEdit {
    /// Start an edit of `text` (the hub's document at `revision`).
    pub fn new(text: impl Into<String>, revision: impl Into<String>) -> Result<Self, DocError> {
        let text = text.into();
        let base = agents_doc::locate(&text)?.agents;
        Ok(PendingEdit {
            base_text: text,
            base_revision: revision.into(),
            order: base.clone(),
            base,
            undo: Vec::new(),
            redo: Vec::new(),
        })
    }

    pub fn base_text(&self) -> &str {
        &self.base_text
    }

    pub fn base_revision(&self) -> &str {
        &self.base_revision
    }

    /// The list as the document holds it.
    pub fn base_order(&self) -> &[String] {
        &self.base
    }

    /// The list as the owner has it now.
    pub fn order(&self) -> &[String] {
        &self.order
    }

    /// Does the pending order differ from the document's?
    pub fn is_pending(&self) -> bool {
        self.order != self.base
    }

    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    fn change(&mut self, order: Vec<String>) {
        if order != self.order {
            self.undo.push(std::mem::replace(&mut self.order, order));
            self.redo.clear();
        }
    }

    fn out_of_range(&self, index: usize) -> DocError {
        DocError::IndexOutOfRange {
            index,
            len: self.order.len(),
        }
    }

    /// Move the agent at `from` so that it stands at `to`. Returns `to`.
    pub fn move_to(&mut self, from: usize, to: usize) -> Result<usize, DocError> {
        let len = self.order.len();
        if from >= len {
            return Err(self.out_of_range(from));
        }
        if to >= len {
            return Err(self.out_of_range(to));
        }
        let mut order = self.order.clone();
        let a = order.remove(from);
        order.insert(to, a);
        self.change(order);
        Ok(to)
    }

    /// Move the agent at `at` one rank up (towards 0); at the top, stays.
    /// Returns where it stands now.
    pub fn move_up(&mut self, at: usize) -> Result<usize, DocError> {
        self.move_to(at, at.saturating_sub(1))
    }

    /// Move the agent at `at` one rank down; at the bottom, stays.
    pub fn move_down(&mut self, at: usize) -> Result<usize, DocError> {
        let last = self.order.len().saturating_sub(1);
        self.move_to(at, (at + 1).min(last))
    }

    /// Is `name` one the owner may add now? For validation as it is typed.
    pub fn check_name(&self, name: &str) -> Result<(), DocError> {
        if !is_agent_name(name) {
            return Err(DocError::BadName(name.to_string()));
        }
        if self.order.iter().any(|a| a == name) {
            return Err(DocError::Duplicate(name.to_string()));
        }
        Ok(())
    }

    /// Where `add(name, None)` puts `name`: where it stands commented out
    /// in the document (after the same agent, if that one is still listed),
    /// else at the end.
    pub fn add_position(&self, name: &str) -> usize {
        let end = self.order.len();
        if self.base.iter().any(|a| a == name) {
            return end;
        }
        match commented_out(&self.base_text, name) {
            Some(0) => 0,
            Some(p) => self
                .base
                .get(p - 1)
                .and_then(|before| self.order.iter().position(|a| a == before))
                .map_or(end, |q| q + 1),
            None => end,
        }
    }

    /// Add `name` at `index` (default: see [`PendingEdit::add_position`]).
    /// Returns where it stands.
    pub fn add(&mut self, name: &str, index: Option<usize>) -> Result<usize, DocError> {
        self.check_name(name)?;
        let at = index.unwrap_or_else(|| self.add_position(name));
        if at > self.order.len() {
            return Err(self.out_of_range(at));
        }
        let mut order = self.order.clone();
        order.insert(at, name.to_string());
        self.change(order);
        Ok(at)
    }

    /// Remove the agent at `at`; the list may become empty (then
    /// [`PendingEdit::check`] blocks the write). Returns its name.
    pub fn remove(&mut self, at: usize) -> Result<String, DocError> {
        let name = self
            .order
            .get(at)
            .cloned()
            .ok_or_else(|| self.out_of_range(at))?;
        let mut order = self.order.clone();
        order.remove(at);
        self.change(order);
        Ok(name)
    }

    /// Replace the pending order (a document back from `$EDITOR`, a revert
    /// to a history entry). Not validated here: see [`PendingEdit::check`].
    pub fn set_order(&mut self, order: Vec<String>) {
        self.change(order);
    }

    /// Back one step; `false` when there is nothing to undo.
    pub fn undo(&mut self) -> bool {
        match self.undo.pop() {
            Some(prev) => {
                self.redo.push(std::mem::replace(&mut self.order, prev));
                true
            }
            None => false,
        }
    }

    /// Forward one undone step; `false` when there is nothing to redo.
    pub fn redo(&mut self) -> bool {
        match self.redo.pop() {
            Some(next) => {
                self.undo.push(std::mem::replace(&mut self.order, next));
                true
            }
            None => false,
        }
    }

    /// The pending order, each agent with its old rank, then the agents it
    /// removes.
    pub fn rungs(&self) -> Vec<Rung> {
        let old = |a: &String| self.base.iter().position(|b| b == a);
        let mut out: Vec<Rung> = self
            .order
            .iter()
            .enumerate()
            .map(|(i, a)| Rung {
                agent: a.clone(),
                new: Some(i),
                old: old(a),
            })
            .collect();
        for (i, a) in self.base.iter().enumerate() {
            if !self.order.contains(a) {
                out.push(Rung {
                    agent: a.clone(),
                    new: None,
                    old: Some(i),
                });
            }
        }
        out
    }

    /// What blocks a write: an empty list, a duplicate, a malformed name,
    /// more agents than the hub accepts.
    pub fn check(&self) -> Result<(), DocError> {
        validate_list(&self.order)
    }

    /// The whole new document with its warnings (comments that go with a
    /// removed agent, unknown names, lines brought back).
    pub fn edited(&self) -> Result<Edited, DocError> {
        self.check()?;
        agents_doc::apply(&self.base_text, &Op::Set(self.order.clone()))
    }

    /// The whole document to send: every byte outside the list kept.
    pub fn render(&self) -> Result<String, DocError> {
        self.edited().map(|e| e.text)
    }

    /// The unified diff of [`PendingEdit::render`] against the document.
    pub fn diff(&self) -> Result<String, DocError> {
        let new = self.render()?;
        Ok(agents_doc::unified_diff(
            &self.base_text,
            &new,
            &format!("hub {}", self.base_revision),
            "edited",
        ))
    }

    /// The hub answered 412: replay this order onto its current document
    /// (`theirs` at `revision`), or say how the two lists differ.
    pub fn rebase(&self, theirs: &str, revision: &str) -> Result<Rebased, RebaseError> {
        let outcome = agents_doc::classify(&self.base_text, &self.order, theirs)?;
        let fresh = PendingEdit::new(theirs, revision).map_err(RebaseError::Newer)?;
        let onto_theirs = |mut edit: PendingEdit| {
            edit.undo = self.undo.clone();
            edit.redo = self.redo.clone();
            edit.order = self.order.clone();
            edit
        };
        Ok(match outcome {
            Outcome::Replayed { .. } => Rebased::Replayed(onto_theirs(fresh)),
            Outcome::AlreadyThere => Rebased::AlreadyThere(onto_theirs(fresh)),
            Outcome::ListChanged(sides) => Rebased::ListChanged(Box::new(Conflict {
                sides,
                mine: self.clone(),
                theirs: fresh,
            })),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::MAX_AGENTS;

    const DOC: &str = "# the fleet\n[fleet]\nMAC_CODING_AGENTS = [\n    \"opencode\", # cheap\n    # \"cursor\",  # no seat yet\n    \"claude\",   # strong\n    \"codex\",\n]\nretries = 2\n";

    fn edit() -> PendingEdit {
        PendingEdit::new(DOC, "r1").expect("valid")
    }

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn moves_up_down_and_to_an_index() {
        let mut e = edit();
        assert!(!e.is_pending());
        assert_eq!(e.move_up(0), Ok(0), "the top stays");
        assert!(!e.can_undo(), "a move that moves nothing is no step");
        assert_eq!(e.move_down(0), Ok(1));
        assert_eq!(e.order(), v(&["claude", "opencode", "codex"]));
        assert_eq!(e.move_down(2), Ok(2), "the bottom stays");
        assert_eq!(e.move_to(2, 0), Ok(0));
        assert_eq!(e.order(), v(&["codex", "claude", "opencode"]));
        assert!(e.is_pending());
        assert_eq!(
            e.move_to(3, 0),
            Err(DocError::IndexOutOfRange { index: 3, len: 3 })
        );
        assert_eq!(
            e.order(),
            v(&["codex", "claude", "opencode"]),
            "refused: unchanged"
        );
    }

    #[test]
    fn render_keeps_every_byte_outside_the_list_and_comments_travel() {
        // The commented-out line stands directly above claude: it is
        // claude's, and travels with it.
        let mut e = edit();
        e.move_to(1, 0).expect("move");
        let text = e.render().expect("render");
        assert_eq!(
            text,
            "# the fleet\n[fleet]\nMAC_CODING_AGENTS = [\n    # \"cursor\",  # no seat yet\n    \"claude\",   # strong\n    \"opencode\", # cheap\n    \"codex\",\n]\nretries = 2\n"
        );
        assert!(
            e.diff()
                .expect("diff")
                .starts_with("--- hub r1\n+++ edited\n")
        );
        // Nothing pending renders the document itself.
        assert_eq!(edit().render().expect("render"), DOC);
        assert_eq!(edit().diff().expect("diff"), "");
    }

    #[test]
    fn add_brings_back_a_commented_out_agent_where_it_stood() {
        let mut e = edit();
        assert_eq!(e.add_position("cursor"), 1);
        assert_eq!(e.add("cursor", None), Ok(1));
        assert_eq!(
            e.rungs()[1],
            Rung {
                agent: "cursor".into(),
                new: Some(1),
                old: None
            }
        );
        let text = e.render().expect("render");
        assert_eq!(text, DOC.replace("# \"cursor\",", "\"cursor\","));
        assert_eq!(text.matches("cursor").count(), 1, "one line, not two");
        // A name with no such line goes to the end.
        let mut e = edit();
        assert_eq!(e.add("pi", None), Ok(3));
        assert!(
            e.render()
                .expect("render")
                .contains("    \"codex\",\n    \"pi\",\n]")
        );
        // After a move, it follows the agent it stood after.
        let mut e = edit();
        e.move_to(0, 2).expect("move");
        assert_eq!(e.add("cursor", None), Ok(3));
    }

    #[test]
    fn add_refuses_bad_names_and_duplicates_and_changes_nothing() {
        let mut e = edit();
        assert_eq!(
            e.check_name("Cursor"),
            Err(DocError::BadName("Cursor".into()))
        );
        assert_eq!(
            e.add("claude", None),
            Err(DocError::Duplicate("claude".into()))
        );
        assert_eq!(
            e.add("bad name", None),
            Err(DocError::BadName("bad name".into()))
        );
        assert_eq!(
            e.add("pi", Some(9)),
            Err(DocError::IndexOutOfRange { index: 9, len: 3 })
        );
        assert!(!e.is_pending() && !e.can_undo());
    }

    #[test]
    fn remove_undo_redo() {
        let mut e = edit();
        assert_eq!(e.remove(1), Ok("claude".into()));
        e.move_to(1, 0).expect("move");
        assert_eq!(e.order(), v(&["codex", "opencode"]));
        assert_eq!(
            e.rungs(),
            vec![
                Rung {
                    agent: "codex".into(),
                    new: Some(0),
                    old: Some(2)
                },
                Rung {
                    agent: "opencode".into(),
                    new: Some(1),
                    old: Some(0)
                },
                Rung {
                    agent: "claude".into(),
                    new: None,
                    old: Some(1)
                },
            ]
        );
        assert!(e.undo());
        assert_eq!(e.order(), v(&["opencode", "codex"]));
        assert!(e.undo());
        assert!(!e.is_pending());
        assert!(!e.undo(), "nothing left to undo");
        assert!(e.redo());
        assert!(e.redo());
        assert_eq!(e.order(), v(&["codex", "opencode"]));
        assert!(!e.redo());
        // A new step after an undo drops what could be redone.
        assert!(e.undo());
        e.add("pi", Some(0)).expect("add");
        assert!(!e.can_redo());
        assert_eq!(
            e.remove(5),
            Err(DocError::IndexOutOfRange { index: 5, len: 3 })
        );
    }

    #[test]
    fn check_blocks_a_write_with_its_reason_and_keeps_the_edit() {
        let mut e = edit();
        for _ in 0..3 {
            e.remove(0).expect("remove");
        }
        assert_eq!(e.check(), Err(DocError::Empty));
        assert_eq!(e.render(), Err(DocError::Empty));
        assert!(e.is_pending(), "the edit stays");
        e.set_order(v(&["pi", "claude", "pi"]));
        assert_eq!(e.check(), Err(DocError::Duplicate("pi".into())));
        e.set_order(v(&["pi", "Claude"]));
        assert_eq!(e.check(), Err(DocError::BadName("Claude".into())));
        e.set_order((0..=MAX_AGENTS).map(|i| format!("a{i}")).collect());
        assert_eq!(e.check(), Err(DocError::TooMany(MAX_AGENTS + 1)));
        e.set_order(v(&["pi"]));
        assert_eq!(e.check(), Ok(()));
        assert!(e.undo());
        assert_eq!(
            e.order().len(),
            MAX_AGENTS + 1,
            "undo walks back through the refused ones"
        );
    }

    #[test]
    fn rebase_replays_when_the_hub_changed_something_else() {
        let mut e = edit();
        e.move_to(2, 0).expect("move");
        let theirs = DOC.replace("retries = 2", "retries = 5");
        let Ok(Rebased::Replayed(r)) = e.rebase(&theirs, "r2") else {
            panic!("expected a replay");
        };
        assert_eq!(r.base_revision(), "r2");
        assert_eq!(r.order(), e.order());
        let text = r.render().expect("render");
        assert!(text.ends_with("retries = 5\n"), "{text}");
        assert_eq!(r.diff().expect("diff").lines().next(), Some("--- hub r2"));
        // Undo still walks the owner's steps.
        let mut r = r;
        assert!(r.undo() && !r.is_pending());
    }

    #[test]
    fn rebase_when_the_hub_changed_the_list_offers_carry_or_drop() {
        let mut e = edit();
        e.move_to(2, 0).expect("move");
        let theirs = DOC
            .replace("    \"codex\",\n", "")
            .replace("retries = 2", "retries = 5");
        let Ok(Rebased::ListChanged(c)) = e.rebase(&theirs, "r2") else {
            panic!("expected a conflict");
        };
        assert_eq!(c.sides.base, v(&["opencode", "claude", "codex"]));
        assert_eq!(c.sides.theirs, v(&["opencode", "claude"]));
        assert_eq!(c.sides.mine, v(&["codex", "opencode", "claude"]));
        assert_eq!(c.mine, e, "nothing typed is lost");
        assert_eq!(c.theirs_revision(), "r2");
        let carried = c.clone().carry();
        assert_eq!(carried.base_revision(), "r2");
        assert_eq!(carried.order(), v(&["codex", "opencode", "claude"]));
        assert!(carried.render().expect("render").ends_with("retries = 5\n"));
        let mut back = carried.clone();
        assert!(
            back.undo() && !back.is_pending(),
            "undo goes back to theirs"
        );
        let dropped = c.drop_mine();
        assert!(!dropped.is_pending());
        assert_eq!(dropped.base_text(), theirs);
        // The hub already holds the order.
        let theirs = DOC.replace(
            "    \"opencode\", # cheap\n    # \"cursor\",  # no seat yet\n    \"claude\",   # strong\n    \"codex\",\n",
            "    \"codex\",\n    \"opencode\",\n    \"claude\",\n",
        );
        let Ok(Rebased::AlreadyThere(done)) = e.rebase(&theirs, "r3") else {
            panic!("expected already there");
        };
        assert!(!done.is_pending());
    }
}
