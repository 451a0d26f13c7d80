//! The owner's pending edit of `MAC_CODING_AGENTS`: plain data, no I/O.
//!
//! It holds the document and revision the edit starts from and the order
//! the owner is building; the document to send is rendered from them by the
//! format-preserving editor, so what is reviewed is what is written.

use super::merge::{self, Choice, Clash, Intent};
use crate::agents_doc::{
    self, DocError, Edited, Op, RebaseError, Sides, commented_out, validate_list,
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
    /// The owner's edit as intents on named agents (each move, add and
    /// remove), replayed onto `base` to give `order`; a rebase replays
    /// them onto the hub's newer list.
    ops: Vec<Intent>,
    /// `ops` replayed onto `base`.
    order: Vec<String>,
    /// The whole document as the owner typed it in `$EDITOR` (its list was
    /// the order then); later moves are made on it. `None`: the hub's
    /// document, changed only in its list.
    typed: Option<String>,
    undo: Vec<Step>,
    redo: Vec<Step>,
}

/// One state of the edit, for undo and redo.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Step {
    ops: Vec<Intent>,
    /// `ops` replayed onto the base (or, for a list no replay gives, one
    /// with a duplicate, that list as set).
    order: Vec<String>,
    typed: Option<String>,
}

impl Step {
    /// Replayed onto `base` (another document's list, after a rebase).
    fn onto(mut self, base: &[String]) -> Step {
        self.order = merge::replay(base, &self.ops);
        self
    }
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

/// How a pending order differs from the order it was begun on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListChanges {
    pub moved: usize,
    pub added: usize,
    pub removed: usize,
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

/// A pending edit that met a change of the list it cannot all be
/// replayed onto: some agents both sides touched in ways that cannot both
/// hold. Everything else of both is kept; each conflicting agent keeps
/// theirs or mine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// Base, theirs and mine, for a side-by-side view.
    pub sides: Sides,
    /// The edit as it was, so nothing typed is lost before the choice.
    pub mine: PendingEdit,
    theirs: PendingEdit,
    /// My intents (and undo/redo) on their document, before the choices.
    onto: PendingEdit,
    /// The agents both touched, each with what theirs and mine did.
    pub clashes: Vec<Clash>,
    /// One per clash: which side it keeps (mine until chosen).
    pub choices: Vec<Choice>,
}

impl Conflict {
    /// The hub's revision the choice would build on.
    pub fn theirs_revision(&self) -> &str {
        &self.theirs.base_revision
    }

    /// The list on the hub now.
    pub fn theirs_order(&self) -> &[String] {
        &self.theirs.base
    }

    /// Keep `choice` for the `i`th conflicting agent.
    pub fn choose(&mut self, i: usize, choice: Choice) {
        if let Some(c) = self.choices.get_mut(i) {
            *c = choice;
        }
    }

    /// The conflicts where mine is kept: each undoes their change.
    pub fn undone(&self) -> Vec<Clash> {
        self.clashes
            .iter()
            .zip(&self.choices)
            .filter(|(_, c)| **c == Choice::Mine)
            .map(|(c, _)| c.clone())
            .collect()
    }

    /// The edit went on on the Ladder over [`Conflict::merged`] (on their
    /// document) before the choice: the choice is made on that edit.
    pub fn follow(&mut self, plan: &PendingEdit) {
        if plan.base_revision == self.theirs.base_revision && plan.base == self.theirs.base {
            self.onto = plan.clone();
        }
    }

    /// My edit replayed onto their document with the choices made: every
    /// intent of mine kept but those on an agent that keeps theirs; undo
    /// and redo walk my steps, resolved the same way.
    pub fn merged(&self) -> PendingEdit {
        let mut edit = self.onto.clone();
        let base = edit.base.clone();
        let resolve = |s: &mut Step| {
            s.ops = merge::resolved(&s.ops, &self.clashes, &self.choices);
            s.order = merge::replay(&base, &s.ops);
        };
        edit.undo.iter_mut().for_each(resolve);
        edit.redo.iter_mut().for_each(resolve);
        let mut now = edit.step();
        resolve(&mut now);
        edit.set_step(now);
        edit
    }

    /// The edit as it was before this conflict, with the intents made on
    /// [`Conflict::merged`] since (on the Ladder, before the choice)
    /// appended: what to replay onto a newer revision while the conflict
    /// is not chosen on yet, so it stays one.
    pub fn mine_now(&self, plan: &PendingEdit) -> PendingEdit {
        let shown = self.merged();
        let extra = plan
            .ops
            .strip_prefix(shown.ops.as_slice())
            .filter(|_| plan.base_revision == shown.base_revision)
            .unwrap_or_default();
        let mut mine = self.mine.clone();
        if !extra.is_empty() {
            let mut ops = mine.ops.clone();
            ops.extend_from_slice(extra);
            mine.record(ops, mine.typed.clone());
        }
        mine
    }

    /// Carry the pending edit onto the hub's document with the choices
    /// made ([`Conflict::merged`]), as a new edit to review.
    pub fn carry(self) -> PendingEdit {
        self.merged()
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
            ops: Vec::new(),
            typed: None,
            undo: Vec::new(),
            redo: Vec::new(),
        })
    }

    /// Mend a document on the hub that does not validate: `broken` (the
    /// file as it stands on disk, at `revision`) is to be replaced by
    /// `typed`, whose list must be one the hub accepts. `in_force` is the
    /// list workers are told meanwhile, which the Ladder compares the new
    /// order against; the diff is against `broken`, what the owner mends.
    /// Undo goes back to nothing pending.
    pub fn mend(
        broken: impl Into<String>,
        revision: impl Into<String>,
        in_force: Vec<String>,
        typed: &str,
    ) -> Result<Self, DocError> {
        let order = agents_doc::locate(typed)?.agents;
        validate_list(&order)?;
        let mut edit = PendingEdit {
            base_text: broken.into(),
            base_revision: revision.into(),
            order: in_force.clone(),
            base: in_force,
            ops: Vec::new(),
            typed: None,
            undo: Vec::new(),
            redo: Vec::new(),
        };
        edit.change(order, Some(typed.to_string()));
        Ok(edit)
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

    /// The owner's edit as intents on named agents, in the order made.
    pub fn intents(&self) -> &[Intent] {
        &self.ops
    }

    /// Does the pending order (or a document typed in `$EDITOR`) differ
    /// from the hub's document?
    pub fn is_pending(&self) -> bool {
        self.order != self.base || self.typed.is_some()
    }

    /// The document typed in `$EDITOR`, when it changed more than the
    /// order of the list.
    pub fn typed(&self) -> Option<&str> {
        self.typed.as_deref()
    }

    /// The document the pending edit stands on: the one typed in
    /// `$EDITOR`, else the hub's.
    pub fn working_text(&self) -> &str {
        self.typed.as_deref().unwrap_or(&self.base_text)
    }

    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    fn step(&self) -> Step {
        Step {
            ops: self.ops.clone(),
            order: self.order.clone(),
            typed: self.typed.clone(),
        }
    }

    fn restore(&mut self, s: Step) -> Step {
        let now = self.step();
        (self.ops, self.order, self.typed) = (s.ops, s.order, s.typed);
        now
    }

    /// Replace the state with `s` (a rebase, a resolved conflict).
    fn set_step(&mut self, s: Step) {
        (self.ops, self.order, self.typed) = (s.ops, s.order, s.typed);
    }

    /// One undoable step: `ops` become the edit's intents.
    fn record(&mut self, ops: Vec<Intent>, typed: Option<String>) {
        let order = merge::replay(&self.base, &ops);
        self.record_order(ops, order, typed);
    }

    fn record_order(&mut self, ops: Vec<Intent>, order: Vec<String>, typed: Option<String>) {
        if ops != self.ops || order != self.order || typed != self.typed {
            let was = self.step();
            (self.ops, self.order, self.typed) = (ops, order, typed);
            self.undo.push(was);
            self.redo.clear();
        }
    }

    /// One step to `order` (a list back from `$EDITOR`, a revert): the
    /// intents that make it from the order now. A list no intents give
    /// (a duplicate) is kept as set, for [`PendingEdit::check`] to refuse.
    fn change(&mut self, order: Vec<String>, typed: Option<String>) {
        let mut ops = self.ops.clone();
        ops.extend(merge::intents_between(&self.order, &order));
        self.record_order(ops, order, typed);
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
        order.insert(to, a.clone());
        // Moves of one agent in a row are one intent: where it ends.
        let mut ops = self.ops.clone();
        let run = match ops.last() {
            Some(Intent::Move { agent, .. }) if *agent == a => Some(false),
            Some(Intent::Add { agent, .. }) if *agent == a => Some(true),
            _ => None,
        };
        let before = match run {
            Some(_) => {
                ops.pop();
                merge::replay(&self.base, &ops)
            }
            None => self.order.clone(),
        };
        let op = match run {
            Some(true) => merge::add_intent(&order, &a),
            _ => merge::move_intent(&before, &order, &a),
        };
        ops.extend(op);
        self.record(ops, self.typed.clone());
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
        let mut ops = self.ops.clone();
        ops.extend(merge::add_intent(&order, name));
        self.record(ops, self.typed.clone());
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
        let mut ops = self.ops.clone();
        ops.push(Intent::Remove {
            agent: name.clone(),
        });
        self.record(ops, self.typed.clone());
        Ok(name)
    }

    /// Replace the pending order (a document back from `$EDITOR`, a revert
    /// to a history entry). Not validated here: see [`PendingEdit::check`].
    pub fn set_order(&mut self, order: Vec<String>) {
        self.change(order, self.typed.clone());
    }

    /// The whole document as typed in `$EDITOR` becomes the pending edit
    /// (one step: `u` undoes it). It must parse and its list must be one
    /// the hub accepts (empty, duplicate, malformed, too many: refused,
    /// nothing changes). A document that differs from the hub's only as a
    /// reorder of the list would render it is kept as that order alone, so
    /// it rebases like any other move. Returns whether anything changed.
    pub fn set_document(&mut self, text: &str) -> Result<bool, DocError> {
        let order = agents_doc::locate(text)?.agents;
        validate_list(&order)?;
        let plain = agents_doc::apply(&self.base_text, &Op::Set(order.clone()))
            .is_ok_and(|e| e.text == text);
        let typed = (!plain).then(|| text.to_string());
        let before = self.step();
        self.change(order, typed);
        Ok(self.step() != before)
    }

    /// Back one step; `false` when there is nothing to undo.
    pub fn undo(&mut self) -> bool {
        match self.undo.pop() {
            Some(prev) => {
                let now = self.restore(prev);
                self.redo.push(now);
                true
            }
            None => false,
        }
    }

    /// Forward one undone step; `false` when there is nothing to redo.
    pub fn redo(&mut self) -> bool {
        match self.redo.pop() {
            Some(next) => {
                let now = self.restore(next);
                self.undo.push(now);
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

    /// How the pending order differs from the base: agents moved (the
    /// fewest single moves that turn the kept agents' old order into the
    /// new one, so `J` is one move and an agent added on top moves none),
    /// added and removed.
    pub fn changes(&self) -> ListChanges {
        let old: Vec<usize> = self
            .order
            .iter()
            .filter_map(|a| self.base.iter().position(|b| b == a))
            .collect();
        // The longest run of kept agents already in their old order stays.
        let mut best = vec![1usize; old.len()];
        for i in 0..old.len() {
            for j in 0..i {
                if old[j] < old[i] {
                    best[i] = best[i].max(best[j] + 1);
                }
            }
        }
        let stays = best.into_iter().max().unwrap_or(0);
        ListChanges {
            moved: old.len() - stays,
            added: self.order.len() - old.len(),
            removed: self.base.iter().filter(|a| !self.order.contains(a)).count(),
        }
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
        agents_doc::apply(self.working_text(), &Op::Set(self.order.clone()))
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

    /// A document typed in `$EDITOR` on `old_base`, moved onto this edit's
    /// base (the hub's newer document). Where the owner typed only inside
    /// the list, that list is spliced into the newer document (the hub's
    /// other changes are kept); `None` when that is just the newer document
    /// reordered. Where the owner typed outside the list too, the typed
    /// document stays whole: its diff against the newer document shows
    /// what of the hub's change it would undo.
    fn rebased_typed(&self, old_base: &str, typed: String) -> Option<String> {
        let spans = (
            agents_doc::locate(old_base),
            agents_doc::locate(&typed),
            agents_doc::locate(&self.base_text),
        );
        let (Ok(b), Ok(t), Ok(n)) = spans else {
            return Some(typed);
        };
        let only_list = old_base.get(..b.span.start) == typed.get(..t.span.start)
            && old_base.get(b.span.end..) == typed.get(t.span.end..);
        if !only_list {
            return Some(typed);
        }
        let (Some(head), Some(list), Some(tail)) = (
            self.base_text.get(..n.span.start),
            typed.get(t.span.clone()),
            self.base_text.get(n.span.end..),
        ) else {
            return Some(typed);
        };
        let spliced = format!("{head}{list}{tail}");
        let plain =
            agents_doc::apply(&self.base_text, &Op::Set(t.agents)).is_ok_and(|e| e.text == spliced);
        (!plain && spliced != self.base_text).then_some(spliced)
    }

    /// This edit went on while `sent` (the edit as `y` sent it) was being
    /// written, and that write is on the hub as `revision`, whose document
    /// is `text` (what was sent). The steps made since, onto it, one
    /// undoable step each (`u` goes back to what was written): the edit
    /// pending now. `None` when nothing was made since, or it comes back
    /// to what was written.
    pub fn after_written(
        &self,
        sent: &PendingEdit,
        text: &str,
        revision: &str,
    ) -> Option<PendingEdit> {
        let now = self.step();
        let was = sent.step();
        if now == was {
            return None;
        }
        let mut onto = PendingEdit::new(text, revision).ok()?;
        // The steps since, when this edit's history still holds the one
        // sent (it was not undone past it); else the edit as it stands.
        let k = sent.undo.len();
        let since = match self.undo.get(..=k) {
            Some(before) if before[..k] == sent.undo[..] && before[k] == was => &self.undo[k + 1..],
            _ => &[],
        };
        for s in since.iter().chain(std::iter::once(&now)) {
            let typed = s.typed.clone().filter(|t| sent.typed.as_ref() != Some(t));
            onto.change(s.order.clone(), typed);
        }
        onto.is_pending().then_some(onto)
    }

    /// The hub answered 412: replay this order onto its current document
    /// (`theirs` at `revision`), or say how the two lists differ.
    ///
    /// A mend ([`PendingEdit::mend`]) of a document that did not validate
    /// has no list to replay: its whole typed document stands on the hub's
    /// (its diff shows what of the hub's document it changes).
    pub fn rebase(&self, theirs: &str, revision: &str) -> Result<Rebased, RebaseError> {
        if agents_doc::locate(&self.base_text).is_err() {
            let mut fresh = PendingEdit::new(theirs, revision).map_err(RebaseError::Newer)?;
            if let Some(t) = &self.typed {
                fresh.set_document(t).map_err(RebaseError::Edited)?;
            }
            return Ok(if fresh.is_pending() {
                Rebased::Replayed(fresh)
            } else {
                Rebased::AlreadyThere(fresh)
            });
        }
        let fresh = PendingEdit::new(theirs, revision).map_err(RebaseError::Newer)?;
        // My intents onto their list, with my undo and redo: a list left
        // as it was keeps the order exactly (even one no replay gives).
        let same = fresh.base == self.base;
        let mut onto = fresh.clone();
        let theirs_base = fresh.base.clone();
        let mine_onto = |mut s: Step| {
            if same {
                return s;
            }
            s.ops = merge::steadied(&self.base, &theirs_base, &s.ops);
            s.onto(&theirs_base)
        };
        onto.undo = self.undo.iter().cloned().map(mine_onto).collect();
        onto.redo = self.redo.iter().cloned().map(mine_onto).collect();
        let now = mine_onto(self.step());
        onto.set_step(now);
        onto.typed = self
            .typed
            .clone()
            .and_then(|t| onto.rebased_typed(&self.base_text, t));
        let m = merge::merge(&self.base, &fresh.base, &self.ops);
        if same || m.clashes.is_empty() {
            return Ok(if onto.is_pending() {
                Rebased::Replayed(onto)
            } else {
                Rebased::AlreadyThere(onto)
            });
        }
        Ok(Rebased::ListChanged(Box::new(Conflict {
            sides: Sides {
                base: self.base.clone(),
                theirs: fresh.base.clone(),
                mine: self.order.clone(),
            },
            mine: self.clone(),
            theirs: fresh,
            onto,
            choices: vec![Choice::Mine; m.clashes.len()],
            clashes: m.clashes,
        })))
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
    fn changes_count_the_fewest_moves_and_what_was_added_and_removed() {
        let mut e = edit();
        assert_eq!(e.changes(), ListChanges::default());
        e.move_down(0).expect("move");
        assert_eq!(
            e.changes(),
            ListChanges {
                moved: 1,
                added: 0,
                removed: 0
            },
            "J is one move, not two ranks changed"
        );
        let mut e = edit();
        e.add("cursor", Some(0)).expect("add");
        assert_eq!(
            e.changes(),
            ListChanges {
                moved: 0,
                added: 1,
                removed: 0
            },
            "an agent added on top moves none"
        );
        e.remove(3).expect("remove");
        assert_eq!(
            e.changes(),
            ListChanges {
                moved: 0,
                added: 1,
                removed: 1
            }
        );
        let mut e = edit();
        e.set_order(v(&["codex", "claude", "opencode"]));
        assert_eq!(
            e.changes(),
            ListChanges {
                moved: 2,
                added: 0,
                removed: 0
            }
        );
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
        assert_eq!(text, DOC.replace("# \"cursor\",  #", "\"cursor\",   #"));
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

    fn doc_of(list: &[&str]) -> String {
        let items: Vec<String> = list.iter().map(|a| format!("    \"{a}\",\n")).collect();
        format!("MAC_CODING_AGENTS = [\n{}]\n", items.concat())
    }

    /// Review finding F1: my `J` on pi (pi below opencode) and their move
    /// of opencode down to #3. Their list has pi above opencode: it does
    /// not hold my order, and must never be taken as holding it.
    #[test]
    fn a_move_past_an_agent_they_moved_is_not_taken_as_done() {
        let base = doc_of(&["pi", "opencode", "claude", "codex", "cursor"]);
        let mut e = PendingEdit::new(&base, "r1").expect("valid");
        e.move_down(0).expect("J");
        assert_eq!(
            e.order(),
            v(&["opencode", "pi", "claude", "codex", "cursor"])
        );
        let theirs = doc_of(&["pi", "claude", "codex", "opencode", "cursor"]);
        let order = match e.rebase(&theirs, "r2") {
            Ok(Rebased::AlreadyThere(_)) => panic!("their list does not hold my order"),
            Ok(Rebased::Replayed(r)) => r.order().to_vec(),
            Ok(Rebased::ListChanged(c)) => c.merged().order().to_vec(),
            Err(e) => panic!("{e}"),
        };
        let at = |a: &str| order.iter().position(|x| x == a);
        assert!(at("opencode") < at("pi"), "my move stands: {order:?}");
    }

    /// Review finding F2: both moved opencode, to different places (mine
    /// to #0 by three K, theirs to #1): a conflict, not "both stand".
    #[test]
    fn both_moving_one_agent_elsewhere_is_a_conflict() {
        let base = doc_of(&["pi", "claude", "codex", "opencode", "cursor"]);
        let mut e = PendingEdit::new(&base, "r1").expect("valid");
        let mut at = 3;
        for _ in 0..3 {
            at = e.move_up(at).expect("K");
        }
        assert_eq!(
            e.order(),
            v(&["opencode", "pi", "claude", "codex", "cursor"])
        );
        let theirs = doc_of(&["pi", "opencode", "claude", "codex", "cursor"]);
        let Ok(Rebased::ListChanged(c)) = e.rebase(&theirs, "r2") else {
            panic!("expected a conflict on opencode");
        };
        assert_eq!(c.clashes.len(), 1);
        assert_eq!(c.clashes[0].agent, "opencode");
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

    /// Alice moved codex to the top (and wrote a comment of her own);
    /// Bob, meanwhile, brought cursor back: his edit is replayed onto her
    /// document as intents, so both stand, with no conflict, and every
    /// byte of hers stays.
    #[test]
    fn a_rebase_replays_the_intents_so_their_change_of_the_list_stands() {
        let mut e = edit();
        e.add("cursor", None).expect("add");
        assert_eq!(e.intents().len(), 1);
        assert_eq!(
            e.intents()[0].to_string(),
            "add cursor right after opencode"
        );
        let theirs = DOC
            .replace(
                "    \"opencode\", # cheap\n",
                "    \"codex\", # alice: first now\n    \"opencode\", # cheap\n",
            )
            .replace("    \"codex\",\n]", "]");
        let Ok(Rebased::Replayed(r)) = e.rebase(&theirs, "r2") else {
            panic!("both stand: {:?}", e.rebase(&theirs, "r2"));
        };
        assert_eq!(r.base_order(), v(&["codex", "opencode", "claude"]));
        assert_eq!(r.order(), v(&["codex", "opencode", "cursor", "claude"]));
        assert_eq!(
            r.render().expect("render"),
            // Alice's comment ends the shared column: the line's own bytes.
            theirs.replace("# \"cursor\",  #", "\"cursor\",  #"),
            "their document, with cursor back on its line"
        );
        // Undo walks my steps, on their list now.
        let mut u = r.clone();
        assert!(u.undo() && !u.is_pending() && u.redo());
        assert_eq!(u.order(), r.order());
    }

    #[test]
    fn moves_in_a_row_are_one_intent_and_undo_walks_each() {
        let mut e = edit();
        e.move_down(0).expect("J");
        e.move_down(1).expect("J");
        assert_eq!(e.order(), v(&["claude", "codex", "opencode"]));
        assert_eq!(e.intents().len(), 1, "{:?}", e.intents());
        assert_eq!(e.intents()[0].to_string(), "opencode goes to the bottom");
        assert!(e.undo());
        assert_eq!(e.order(), v(&["claude", "opencode", "codex"]));
        assert_eq!(
            e.intents()[0].to_string(),
            "opencode goes right after claude"
        );
        // Onto a list where someone put pi first: opencode still ends last.
        e.redo();
        let theirs = DOC.replace("    \"codex\",\n", "    \"codex\",\n    \"pi\",\n");
        let Ok(Rebased::Replayed(r)) = e.rebase(&theirs, "r2") else {
            panic!("replayed");
        };
        assert_eq!(r.order(), v(&["claude", "codex", "pi", "opencode"]));
    }

    #[test]
    fn a_conflict_is_only_an_agent_both_touched_and_each_keeps_theirs_or_mine() {
        // Mine moved codex to the top and removed claude; theirs removed
        // codex (and left claude alone).
        let mut e = edit();
        e.move_to(2, 0).expect("move");
        e.remove(2).expect("remove claude");
        let theirs = DOC.replace("    \"codex\",\n", "");
        let Ok(Rebased::ListChanged(c)) = e.rebase(&theirs, "r2") else {
            panic!("a conflict on codex");
        };
        assert_eq!(c.clashes.len(), 1, "{:?}", c.clashes);
        assert_eq!(c.clashes[0].agent, "codex");
        assert_eq!(
            c.clashes[0].undoes("alice's"),
            "this undoes alice's removal of codex"
        );
        // Mine until chosen: the Ladder shows my edit on their list.
        assert_eq!(c.merged().order(), v(&["codex", "opencode"]));
        assert_eq!(c.merged().base_revision(), "r2");
        assert_eq!(c.undone().len(), 1);
        let mut t = c.clone();
        t.choose(0, Choice::Theirs);
        assert_eq!(
            t.merged().order(),
            v(&["opencode"]),
            "claude's removal stands"
        );
        assert!(t.undone().is_empty());
        let carried = t.carry();
        let text = carried.render().expect("render");
        assert!(
            !text.contains("\"claude\"") && !text.contains("\"codex\""),
            "{text}"
        );
        // Undo walks back my steps, resolved the same way.
        let mut back = carried.clone();
        assert!(back.undo());
        assert_eq!(back.order(), v(&["opencode", "claude"]));
        assert!(!back.is_pending());
    }

    /// A conflict not chosen on yet, and another revision arrives (a
    /// key elsewhere): it is still a conflict, with a move made on the
    /// Ladder meanwhile kept.
    #[test]
    fn a_conflict_not_chosen_on_stays_one_on_a_newer_revision() {
        let mut e = edit();
        e.move_to(2, 0).expect("codex to the top");
        let theirs = DOC.replace("    \"codex\",\n", "");
        let Ok(Rebased::ListChanged(c)) = e.rebase(&theirs, "r2") else {
            panic!("a conflict on codex");
        };
        let mut shown = c.merged();
        shown.move_to(2, 1).expect("claude up, on the Ladder");
        let mine = c.mine_now(&shown);
        assert_eq!(mine.base_revision(), "r1");
        let newer = theirs.replace("retries = 2", "retries = 3");
        let Ok(Rebased::ListChanged(c2)) = mine.rebase(&newer, "r3") else {
            panic!("still a conflict");
        };
        assert_eq!(c2.clashes.len(), 1);
        assert_eq!(c2.merged().order(), v(&["codex", "claude", "opencode"]));
        // Rebasing what was shown instead would lose the conflict.
        assert!(matches!(
            shown.rebase(&newer, "r3"),
            Ok(Rebased::Replayed(_))
        ));
    }

    #[test]
    fn a_document_typed_in_the_editor_becomes_one_undoable_step() {
        // A plain reorder, as sed would make it: kept as the order alone.
        let mut e = edit();
        let mut moved = edit();
        moved.move_to(2, 0).expect("move");
        let text = moved.render().expect("render");
        assert_eq!(e.set_document(&text), Ok(true));
        assert_eq!(e.typed(), None, "a reorder is an order");
        assert_eq!(e.order(), moved.order());
        assert_eq!(e.render().expect("render"), text);
        assert_eq!(e.set_document(&text), Ok(false), "the same again: no step");
        assert!(e.undo() && !e.is_pending() && !e.undo());

        // A comment changed beside a moved agent: the document is kept as
        // typed, byte for byte, and later moves are made on it.
        let typed = text.replace("# strong", "# strongest");
        assert_eq!(e.set_document(&typed), Ok(true));
        assert_eq!(e.typed(), Some(typed.as_str()));
        assert_eq!(e.render().expect("render"), typed);
        assert!(
            e.diff()
                .expect("diff")
                .contains("+    \"claude\",   # strongest")
        );
        e.move_down(0).expect("move");
        let after = e.render().expect("render");
        assert!(after.contains("# strongest"), "{after}");
        assert_eq!(e.order(), v(&["opencode", "codex", "claude"]));
        assert!(e.undo());
        assert_eq!(e.render().expect("render"), typed);
        assert!(e.undo());
        assert!(!e.is_pending(), "back to the hub's document");
        assert!(e.redo() && e.redo());
        assert_eq!(e.render().expect("render"), after);
        // Only the comment changed, the list's order not: still pending.
        let mut c = edit();
        assert_eq!(
            c.set_document(&DOC.replace("# cheap", "# cheapest")),
            Ok(true)
        );
        assert!(c.is_pending() && c.order() == c.base_order());
    }

    #[test]
    fn a_typed_document_the_hub_would_refuse_changes_nothing() {
        let mut e = edit();
        let dup = DOC.replace("\"codex\",", "\"claude\",");
        assert_eq!(
            e.set_document(&dup),
            Err(DocError::Duplicate("claude".into()))
        );
        let empty = "[fleet]\nMAC_CODING_AGENTS = []\n";
        assert_eq!(e.set_document(empty), Err(DocError::Empty));
        let bad = DOC.replace("\"codex\",", "\"Codex\",");
        assert_eq!(e.set_document(&bad), Err(DocError::BadName("Codex".into())));
        let many: Vec<String> = (0..=MAX_AGENTS).map(|i| format!("\"a{i}\"")).collect();
        let many = format!("MAC_CODING_AGENTS = [{}]\n", many.join(", "));
        assert_eq!(
            e.set_document(&many),
            Err(DocError::TooMany(MAX_AGENTS + 1))
        );
        assert!(matches!(
            e.set_document("MAC_CODING_AGENTS = [\"pi\""),
            Err(DocError::Toml { .. })
        ));
        assert_eq!(e.set_document("retries = 2\n"), Err(DocError::Missing));
        assert!(!e.is_pending() && !e.can_undo(), "nothing changed");
    }

    #[test]
    fn a_typed_list_is_spliced_onto_the_hubs_newer_document() {
        let mut e = edit();
        let mut moved = edit();
        moved.move_to(2, 0).expect("move");
        let typed = moved
            .render()
            .expect("render")
            .replace("# strong", "# best");
        e.set_document(&typed).expect("typed");
        // The hub changed another key: the typed list goes onto theirs.
        let theirs = DOC.replace("retries = 2", "retries = 5");
        let Ok(Rebased::Replayed(r)) = e.rebase(&theirs, "r2") else {
            panic!("expected a replay");
        };
        assert_eq!(
            r.render().expect("render"),
            typed.replace("retries = 2", "retries = 5")
        );
        // Typed outside the list too: kept whole, and the diff against
        // theirs shows what of their change it undoes.
        let mut e = edit();
        let typed = DOC.replace("retries = 2", "retries = 9");
        e.set_document(&typed).expect("typed");
        let Ok(Rebased::Replayed(r)) = e.rebase(&theirs, "r2") else {
            panic!("expected a replay");
        };
        assert_eq!(r.render().expect("render"), typed);
        assert!(
            r.diff()
                .expect("diff")
                .contains("-retries = 5\n+retries = 9\n")
        );
        // Their list changed where mine did not: their removal stands in
        // what was typed, and the rest of what was typed is kept.
        let theirs = DOC.replace("    \"codex\",\n", "");
        let Ok(Rebased::Replayed(r)) = e.rebase(&theirs, "r3") else {
            panic!("expected a replay");
        };
        assert_eq!(r.base_revision(), "r3");
        assert_eq!(
            r.render().expect("render"),
            typed.replace("    \"codex\",\n", "")
        );
        // A conflict keeps it too: theirs removed codex, mine moved it.
        let mut e = edit();
        e.set_document(&typed).expect("typed");
        e.move_to(2, 0).expect("move");
        let Ok(Rebased::ListChanged(c)) = e.rebase(&theirs, "r3") else {
            panic!("expected a conflict");
        };
        let carried = c.carry();
        assert_eq!(carried.base_revision(), "r3");
        assert!(
            carried.render().expect("render").contains("retries = 9"),
            "what was typed is kept"
        );
    }

    #[test]
    fn a_mend_replaces_a_broken_document_and_compares_with_the_list_in_force() {
        let broken = "# the fleet\n[fleet]\nMAC_CODING_AGENTS = [\"opencode\" \"claude\"]\n";
        assert!(
            PendingEdit::new(broken, "rb").is_err(),
            "the base does not parse"
        );
        let fixed = "# the fleet\n[fleet]\nMAC_CODING_AGENTS = [\"claude\", \"opencode\"]\n";
        let in_force = v(&["opencode", "claude"]);
        let mut e = PendingEdit::mend(broken, "rb", in_force.clone(), fixed).expect("mend");
        assert!(e.is_pending());
        assert_eq!(
            e.base_revision(),
            "rb",
            "If-Match names the broken document"
        );
        assert_eq!(e.base_order(), in_force.as_slice());
        assert_eq!(e.order(), v(&["claude", "opencode"]).as_slice());
        assert_eq!(e.render().expect("render"), fixed);
        let diff = e.diff().expect("diff");
        assert!(
            diff.contains("-MAC_CODING_AGENTS = [\"opencode\" \"claude\"]")
                && diff.contains("+MAC_CODING_AGENTS = [\"claude\", \"opencode\"]"),
            "{diff}"
        );
        // Moves are made on the mended document.
        e.move_up(1).expect("move");
        assert!(
            e.render()
                .expect("render")
                .contains("[\"opencode\", \"claude\"]")
        );
        // A mend whose list the hub would refuse is no mend.
        let dup = "[fleet]\nMAC_CODING_AGENTS = [\"pi\", \"pi\"]\n";
        assert!(PendingEdit::mend(broken, "rb", in_force.clone(), dup).is_err());
        assert!(PendingEdit::mend(broken, "rb", in_force.clone(), broken).is_err());
        // The file was mended on the hub meanwhile: the mend stands on it.
        let e = PendingEdit::mend(broken, "rb", in_force, fixed).expect("mend");
        let theirs = "# the fleet\n[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n";
        match e.rebase(theirs, "r2").expect("rebase") {
            Rebased::Replayed(p) => {
                assert_eq!(p.base_revision(), "r2");
                assert_eq!(p.render().expect("render"), fixed);
            }
            other => panic!("{other:?}"),
        }
        match e.rebase(fixed, "r3").expect("rebase") {
            Rebased::AlreadyThere(p) => assert!(!p.is_pending()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn steps_made_while_a_write_was_on_its_way_stand_on_the_written_revision() {
        let mut e = edit();
        e.move_down(0).expect("move");
        let sent = e.clone();
        let written = sent.render().expect("render");
        assert_eq!(
            e.after_written(&sent, &written, "r2"),
            None,
            "nothing since"
        );
        // Two steps after `y`: codex up, then cursor added.
        e.move_up(2).expect("move");
        e.add("cursor", None).expect("add");
        let mut p = e.after_written(&sent, &written, "r2").expect("pending");
        assert_eq!(p.base_revision(), "r2");
        assert_eq!(p.base_order(), sent.order(), "based on what was written");
        assert_eq!(p.order(), e.order(), "the owner's order now");
        assert_eq!(
            p.changes(),
            ListChanges {
                moved: 1,
                added: 1,
                removed: 0
            },
            "only what came after the write is pending"
        );
        assert!(p.undo(), "the add undone");
        assert!(p.undo(), "the move undone");
        assert!(!p.is_pending(), "back to what was written");
        // Undone past the write: the edit as it stands, onto the write.
        let mut e = sent.clone();
        e.undo();
        let p = e.after_written(&sent, &written, "r2").expect("pending");
        assert_eq!(p.order(), edit().order(), "the move taken back");
        // Back to exactly what was written: nothing pending.
        let mut e = sent.clone();
        e.move_up(1).expect("move");
        e.move_down(0).expect("move");
        assert_eq!(e.after_written(&sent, &written, "r2"), None);
    }
}
