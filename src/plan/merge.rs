//! The owner's edit as intents on named agents, and their replay onto a
//! list someone else changed meanwhile, as a rebase replays commits: pure
//! functions over lists of names, no I/O.
//!
//! Each move, add and remove is recorded as what it meant: "pi goes right
//! before opencode", "cursor goes right after pi", "codex to the top",
//! "remove claude". Replayed onto their list, a move follows its
//! neighbour, not an index, so their own moves stand around it. Only an
//! agent both sides touched in ways that cannot both hold is a conflict
//! ([`Clash`]): both moved it to different places, one removed what the
//! other moved, both added it in different places. Both removing it is
//! none.

use std::collections::HashSet;

/// Where an agent goes, relative to the list it is replayed onto.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Anchor {
    Top,
    Bottom,
    /// Right after this agent.
    After(String),
    /// Right before this agent.
    Before(String),
}

impl std::fmt::Display for Anchor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Anchor::Top => write!(f, "to the top"),
            Anchor::Bottom => write!(f, "to the bottom"),
            Anchor::After(a) => write!(f, "right after {a}"),
            Anchor::Before(a) => write!(f, "right before {a}"),
        }
    }
}

/// One operation of the owner's edit, on a named agent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Intent {
    /// `agent` goes `to` (else `or`, when `to`'s neighbour is gone); an
    /// agent that is no longer listed is not moved.
    Move {
        agent: String,
        to: Anchor,
        or: Anchor,
    },
    /// `agent` is added `to` (else `or`, else at the end); one already
    /// listed is placed there.
    Add {
        agent: String,
        to: Anchor,
        or: Anchor,
    },
    /// `agent` is removed; one already gone stays gone.
    Remove { agent: String },
}

impl Intent {
    pub fn agent(&self) -> &str {
        match self {
            Intent::Move { agent, .. } | Intent::Add { agent, .. } | Intent::Remove { agent } => {
                agent
            }
        }
    }
}

impl std::fmt::Display for Intent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Intent::Move { agent, to, .. } => write!(f, "{agent} goes {to}"),
            Intent::Add { agent, to, .. } => write!(f, "add {agent} {to}"),
            Intent::Remove { agent } => write!(f, "remove {agent}"),
        }
    }
}

fn index_of(list: &[String], anchor: &Anchor) -> Option<usize> {
    let pos = |a: &str| list.iter().position(|x| x == a);
    match anchor {
        Anchor::Top => Some(0),
        Anchor::Bottom => Some(list.len()),
        Anchor::After(a) => pos(a).map(|p| p + 1),
        Anchor::Before(a) => pos(a),
    }
}

/// Apply one intent to `list`.
pub fn apply(list: &mut Vec<String>, op: &Intent) {
    let at = list.iter().position(|x| x == op.agent());
    match op {
        Intent::Move { agent, to, or } => {
            let Some(p) = at else { return };
            list.remove(p);
            let i = index_of(list, to)
                .or_else(|| index_of(list, or))
                .unwrap_or(p.min(list.len()));
            list.insert(i, agent.clone());
        }
        Intent::Add { agent, to, or } => {
            if let Some(p) = at {
                list.remove(p);
            }
            let fallback = at.unwrap_or(list.len()).min(list.len());
            let i = index_of(list, to)
                .or_else(|| index_of(list, or))
                .unwrap_or(fallback);
            list.insert(i, agent.clone());
        }
        Intent::Remove { .. } => {
            if let Some(p) = at {
                list.remove(p);
            }
        }
    }
}

/// `ops` replayed in order onto `list`.
pub fn replay(list: &[String], ops: &[Intent]) -> Vec<String> {
    let mut out = list.to_vec();
    for op in ops {
        apply(&mut out, op);
    }
    out
}

/// The anchors of the agent at `i` in `after`, which stood at `from` before
/// (`None`: it was added): the neighbour on the side it came from first
/// (moved up: the one below it, "right before"; moved down: the one above
/// it, "right after"), the other as the fallback; the ends as "to the
/// top" and "to the bottom".
fn anchors(after: &[String], i: usize, from: Option<usize>) -> (Anchor, Anchor) {
    let above = i.checked_sub(1).and_then(|j| after.get(j)).cloned();
    let below = after.get(i + 1).cloned();
    let after_above = above.map_or(Anchor::Top, Anchor::After);
    let before_below = below.map_or(Anchor::Bottom, Anchor::Before);
    if i == 0 {
        return (Anchor::Top, before_below);
    }
    if i + 1 == after.len() && from.is_some() {
        return (Anchor::Bottom, after_above);
    }
    match from {
        Some(f) if i < f => (before_below, after_above),
        _ => (after_above, before_below),
    }
}

/// The intent of moving `agent` so that `before` becomes `after` (both
/// holding it); `None` when it did not move.
pub fn move_intent(before: &[String], after: &[String], agent: &str) -> Option<Intent> {
    let from = before.iter().position(|a| a == agent)?;
    let i = after.iter().position(|a| a == agent)?;
    if before == after {
        return None;
    }
    let (to, or) = anchors(after, i, Some(from));
    Some(Intent::Move {
        agent: agent.to_string(),
        to,
        or,
    })
}

/// The intent of adding `agent` where it stands in `after`.
pub fn add_intent(after: &[String], agent: &str) -> Option<Intent> {
    let i = after.iter().position(|a| a == agent)?;
    let (to, or) = anchors(after, i, None);
    Some(Intent::Add {
        agent: agent.to_string(),
        to,
        or,
    })
}

/// Kept agents (in both lists) that are not in a longest run kept in
/// order: the fewest that moved to turn `from` into `to`.
pub fn moved(from: &[String], to: &[String]) -> Vec<String> {
    let kept: Vec<&String> = to.iter().filter(|a| from.contains(a)).collect();
    let old: Vec<usize> = kept
        .iter()
        .filter_map(|a| from.iter().position(|b| b == *a))
        .collect();
    let n = old.len();
    let mut best = vec![1usize; n];
    let mut prev = vec![usize::MAX; n];
    for i in 0..n {
        for j in 0..i {
            if old[j] < old[i] && best[j] + 1 > best[i] {
                best[i] = best[j] + 1;
                prev[i] = j;
            }
        }
    }
    let mut stays = HashSet::new();
    if let Some(mut i) = (0..n).max_by_key(|&i| (best[i], std::cmp::Reverse(i))) {
        loop {
            stays.insert(i);
            if prev[i] == usize::MAX {
                break;
            }
            i = prev[i];
        }
    }
    (0..n)
        .filter(|i| !stays.contains(i))
        .map(|i| kept[i].clone())
        .collect()
}

fn longest_run(old: &[usize]) -> usize {
    let mut best = vec![1usize; old.len()];
    for i in 0..old.len() {
        for j in 0..i {
            if old[j] < old[i] {
                best[i] = best[i].max(best[j] + 1);
            }
        }
    }
    best.into_iter().max().unwrap_or(0)
}

/// Kept agents that may have moved to turn `from` into `to`: those some
/// fewest-moves reading of the change moves. A swap of two neighbours
/// may be either one's move, so both count; an agent in every longest
/// run kept in order surely stayed.
pub fn maybe_moved(from: &[String], to: &[String]) -> Vec<String> {
    let kept: Vec<&String> = to.iter().filter(|a| from.contains(a)).collect();
    let old: Vec<usize> = kept
        .iter()
        .filter_map(|a| from.iter().position(|b| b == *a))
        .collect();
    let all = longest_run(&old);
    (0..old.len())
        .filter(|&i| {
            let mut without = old.clone();
            without.remove(i);
            longest_run(&without) == all
        })
        .map(|i| kept[i].clone())
        .collect()
}

/// Intents that turn `from` into `to`, as one edit (a list back from
/// `$EDITOR`, a revert): the removals, the additions where they stand,
/// then the moves of the agents outside the longest run kept in order,
/// each right after the agent it follows in `to`. Replayed onto `from`
/// they give `to` exactly.
pub fn intents_between(from: &[String], to: &[String]) -> Vec<Intent> {
    let mut ops = Vec::new();
    for a in from {
        if !to.contains(a) {
            ops.push(Intent::Remove { agent: a.clone() });
        }
    }
    let movers: HashSet<String> = moved(from, to).into_iter().collect();
    for (i, a) in to.iter().enumerate() {
        let fresh = !from.contains(a);
        if !fresh && !movers.contains(a) {
            continue;
        }
        let to_anchor = i
            .checked_sub(1)
            .map_or(Anchor::Top, |j| Anchor::After(to[j].clone()));
        let or = to
            .get(i + 1)
            .cloned()
            .map_or(Anchor::Bottom, Anchor::Before);
        ops.push(if fresh {
            Intent::Add {
                agent: a.clone(),
                to: to_anchor,
                or,
            }
        } else {
            Intent::Move {
                agent: a.clone(),
                to: to_anchor,
                or,
            }
        });
    }
    ops
}

/// How both sides touched one agent in ways that cannot both hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClashKind {
    /// Both moved it, to different places.
    BothMoved,
    /// They removed what I moved.
    TheyRemoved,
    /// I removed what they moved.
    MineRemoved,
    /// Both added it, in different places.
    BothAdded,
}

/// A conflict on one agent: where the base, their list and my edit put
/// it (`None`: not listed there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clash {
    pub agent: String,
    pub kind: ClashKind,
    pub base: Option<usize>,
    pub theirs: Option<usize>,
    /// Where my edit, replayed with mine kept for this agent, puts it.
    pub mine: Option<usize>,
}

/// Which side a conflicting agent keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Choice {
    Theirs,
    #[default]
    Mine,
}

impl Clash {
    /// What keeping mine for this agent undoes of their change, said
    /// above the diff: `this undoes alice's move of pi to #0`. `who` is
    /// the writer's possessive or a phrase (`alice's`, `their`).
    pub fn undoes(&self, who: &str) -> String {
        let a = &self.agent;
        let at = |r: Option<usize>| r.map_or("-".to_string(), |r| format!("#{r}"));
        match self.kind {
            ClashKind::BothMoved | ClashKind::MineRemoved => {
                format!("this undoes {who} move of {a} to {}", at(self.theirs))
            }
            ClashKind::TheyRemoved => format!("this undoes {who} removal of {a}"),
            ClashKind::BothAdded => {
                format!("this undoes {who} adding {a} at {}", at(self.theirs))
            }
        }
    }

    /// What each side did, for the conflict screen.
    pub fn describe(&self) -> String {
        let a = &self.agent;
        let at = |r: Option<usize>| r.map_or("-".to_string(), |r| format!("#{r}"));
        match self.kind {
            ClashKind::BothMoved => format!(
                "{a}: theirs moved it to {}, mine to {}",
                at(self.theirs),
                at(self.mine)
            ),
            ClashKind::TheyRemoved => {
                format!("{a}: theirs removed it, mine moved it to {}", at(self.mine))
            }
            ClashKind::MineRemoved => {
                format!(
                    "{a}: theirs moved it to {}, mine removed it",
                    at(self.theirs)
                )
            }
            ClashKind::BothAdded => format!(
                "{a}: both added it, theirs at {}, mine at {}",
                at(self.theirs),
                at(self.mine)
            ),
        }
    }
}

/// My intents replayed onto their list, and the agents on which they
/// cannot both hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge {
    /// Every intent replayed, each conflicting agent as mine has it.
    pub merged: Vec<String>,
    pub clashes: Vec<Clash>,
    /// The intents as replayed ([`steadied`]).
    pub ops: Vec<Intent>,
}

/// `ops` (made on `base`) for a replay onto `theirs`: an intent placed
/// beside an agent their change may have moved is placed beside its
/// other neighbour instead, when that one stayed ("cursor right after pi"
/// becomes "cursor right before claude" when they moved pi to the top),
/// so it stays where it was put among the agents that did not move.
///
/// A move's first anchor is the agent it passed ("pi right after
/// opencode" for `J` on pi above opencode): that order is what the move
/// meant, so the other neighbour stands in only where it keeps it on their
/// list. Otherwise the move follows the agent it passed, wherever they put
/// it: their list, with pi still above opencode, does not hold my order.
pub fn steadied(base: &[String], theirs: &[String], ops: &[Intent]) -> Vec<Intent> {
    let moved: HashSet<String> = maybe_moved(base, theirs).into_iter().collect();
    let shaky = |a: &Anchor| matches!(a, Anchor::After(x) | Anchor::Before(x) if moved.contains(x));
    ops.iter()
        .map(|o| match o {
            Intent::Move { agent, to, or }
                if shaky(to) && !shaky(or) && keeps(theirs, agent, or, to) =>
            {
                Intent::Move {
                    agent: agent.clone(),
                    to: or.clone(),
                    or: to.clone(),
                }
            }
            Intent::Add { agent, to, or } if shaky(to) && !shaky(or) => Intent::Add {
                agent: agent.clone(),
                to: or.clone(),
                or: to.clone(),
            },
            o => o.clone(),
        })
        .collect()
}

/// Whether moving `agent` to `instead` on `list` keeps it on the side of
/// `meant`'s agent that `meant` says (after it for `After`, before it for
/// `Before`; the ends always hold).
fn keeps(list: &[String], agent: &str, instead: &Anchor, meant: &Anchor) -> bool {
    let mut l = list.to_vec();
    apply(
        &mut l,
        &Intent::Move {
            agent: agent.to_string(),
            to: instead.clone(),
            or: meant.clone(),
        },
    );
    let pos = |a: &str| l.iter().position(|x| x == a);
    match meant {
        Anchor::After(x) => pos(agent) > pos(x),
        Anchor::Before(x) => pos(agent) < pos(x),
        Anchor::Top | Anchor::Bottom => true,
    }
}

/// Replay `ops` (made on `base`) onto `theirs` and find the conflicts.
pub fn merge(base: &[String], theirs: &[String], ops: &[Intent]) -> Merge {
    let ops = &steadied(base, theirs, ops)[..];
    let mut touched: Vec<&str> = Vec::new();
    for op in ops {
        if !touched.contains(&op.agent()) {
            touched.push(op.agent());
        }
    }
    let mine = replay(base, ops);
    let their_moved = maybe_moved(base, theirs);
    let mut clashes = Vec::new();
    for a in touched {
        let without: Vec<Intent> = ops.iter().filter(|o| o.agent() != a).cloned().collect();
        if replay(base, &without) == mine {
            continue; // my edit left it where it was
        }
        let in_base = base.iter().any(|x| x == a);
        let in_theirs = theirs.iter().any(|x| x == a);
        let in_mine = mine.iter().any(|x| x == a);
        let kept_mine = resolve(ops, a, ClashKind::TheyRemoved, Choice::Mine);
        let with = replay(theirs, &kept_mine);
        let kind = if in_base && !in_theirs {
            if !in_mine {
                continue; // both removed it
            }
            ClashKind::TheyRemoved
        } else {
            let theirs_touched = if in_base {
                their_moved.iter().any(|x| x == a)
            } else {
                in_theirs
            };
            if !theirs_touched || with == replay(theirs, &without) {
                continue; // they left it alone, or both put it in one place
            }
            match (in_base, in_mine) {
                (false, _) => ClashKind::BothAdded,
                (true, false) => ClashKind::MineRemoved,
                (true, true) => ClashKind::BothMoved,
            }
        };
        let pos = |l: &[String]| l.iter().position(|x| x == a);
        clashes.push(Clash {
            agent: a.to_string(),
            kind,
            base: pos(base),
            theirs: pos(theirs),
            mine: pos(&with),
        });
    }
    Merge {
        merged: replay(theirs, ops),
        clashes,
        ops: ops.to_vec(),
    }
}

/// `ops` with one conflicting agent's intents resolved: theirs drops
/// mine on it; mine keeps them, a move of an agent they removed becoming
/// an add at the same place.
fn resolve(ops: &[Intent], agent: &str, kind: ClashKind, choice: Choice) -> Vec<Intent> {
    ops.iter()
        .filter(|o| choice == Choice::Mine || o.agent() != agent)
        .map(|o| match o {
            Intent::Move { agent: a, to, or } if a == agent && kind == ClashKind::TheyRemoved => {
                Intent::Add {
                    agent: a.clone(),
                    to: to.clone(),
                    or: or.clone(),
                }
            }
            o => o.clone(),
        })
        .collect()
}

/// `ops` with every clash resolved by its choice (`choices[i]` for
/// `clashes[i]`; a missing choice keeps mine).
pub fn resolved(ops: &[Intent], clashes: &[Clash], choices: &[Choice]) -> Vec<Intent> {
    let mut out = ops.to_vec();
    for (i, c) in clashes.iter().enumerate() {
        let choice = choices.get(i).copied().unwrap_or_default();
        out = resolve(&out, &c.agent, c.kind, choice);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    fn mv(before: &[String], from: usize, to: usize) -> (Vec<String>, Intent) {
        let mut after = before.to_vec();
        let a = after.remove(from);
        after.insert(to, a.clone());
        let op = move_intent(before, &after, &a).expect("moved");
        (after, op)
    }

    #[test]
    fn a_move_is_recorded_against_its_neighbour() {
        let base = v(&["opencode", "pi", "claude", "codex"]);
        // K on claude: it goes right before pi.
        let (_, op) = mv(&base, 2, 1);
        assert_eq!(op.to_string(), "claude goes right before pi");
        // J on opencode: right after pi.
        let (_, op) = mv(&base, 0, 1);
        assert_eq!(op.to_string(), "opencode goes right after pi");
        let (_, op) = mv(&base, 3, 0);
        assert_eq!(op.to_string(), "codex goes to the top");
        let (_, op) = mv(&base, 0, 3);
        assert_eq!(op.to_string(), "opencode goes to the bottom");
        assert_eq!(move_intent(&base, &base, "pi"), None);
        let after = v(&["opencode", "pi", "cursor", "claude", "codex"]);
        assert_eq!(
            add_intent(&after, "cursor").map(|o| o.to_string()),
            Some("add cursor right after pi".into())
        );
    }

    #[test]
    fn alices_move_and_bobs_add_both_stand() {
        let base = v(&["opencode", "pi", "claude", "codex"]);
        let theirs = v(&["pi", "opencode", "claude", "codex"]);
        let mine = v(&["opencode", "pi", "cursor", "claude", "codex"]);
        let ops = vec![add_intent(&mine, "cursor").expect("add")];
        let m = merge(&base, &theirs, &ops);
        assert_eq!(m.clashes, vec![]);
        // pi moved (or opencode: a swap of neighbours reads either way),
        // so cursor keeps to claude, which stayed.
        assert_eq!(
            m.merged,
            v(&["pi", "opencode", "cursor", "claude", "codex"])
        );
        assert_eq!(m.ops[0].to_string(), "add cursor right before claude");
    }

    #[test]
    fn moves_of_different_agents_both_stand_and_follow_their_neighbours() {
        let base = v(&["opencode", "pi", "claude", "codex"]);
        // They moved claude to the top; I moved opencode down one (J).
        let theirs = v(&["claude", "opencode", "pi", "codex"]);
        let (_, op) = mv(&base, 0, 1);
        let m = merge(&base, &theirs, &[op]);
        assert!(m.clashes.is_empty());
        assert_eq!(m.merged, v(&["claude", "pi", "opencode", "codex"]));
        // They removed claude; mine moved pi right before claude: it
        // falls back to its other neighbour.
        let theirs = v(&["opencode", "pi", "codex"]);
        let (_, op) = mv(&base, 3, 2);
        assert_eq!(op.to_string(), "codex goes right before claude");
        let m = merge(&base, &theirs, &[op]);
        assert!(m.clashes.is_empty());
        assert_eq!(m.merged, v(&["opencode", "pi", "codex"]));
    }

    #[test]
    fn a_swap_of_neighbours_may_be_either_ones_move() {
        let base = v(&["a", "b", "c", "d"]);
        assert_eq!(
            maybe_moved(&base, &v(&["b", "a", "c", "d"])),
            v(&["b", "a"])
        );
        assert_eq!(maybe_moved(&base, &v(&["c", "a", "b", "d"])), v(&["c"]));
        assert_eq!(maybe_moved(&base, &base), Vec::<String>::new());
        // Mine moved a down one, theirs put b first: the same list, no
        // conflict; mine moved a to the bottom: a conflict, as b's move
        // may have been a's.
        let theirs = v(&["b", "a", "c", "d"]);
        let (_, op) = mv(&base, 0, 1);
        assert!(merge(&base, &theirs, &[op]).clashes.is_empty());
        let (_, op) = mv(&base, 0, 3);
        assert_eq!(merge(&base, &theirs, &[op]).clashes.len(), 1);
    }

    #[test]
    fn both_removing_an_agent_is_no_conflict() {
        let base = v(&["opencode", "pi", "claude"]);
        let theirs = v(&["opencode", "claude"]);
        let ops = vec![Intent::Remove { agent: "pi".into() }];
        let m = merge(&base, &theirs, &ops);
        assert!(m.clashes.is_empty());
        assert_eq!(m.merged, theirs);
    }

    #[test]
    fn the_conflicts_are_where_both_touched_one_agent() {
        let base = v(&["opencode", "pi", "claude", "codex"]);
        // Both moved pi, to different places.
        let theirs = v(&["pi", "opencode", "claude", "codex"]);
        let (_, op) = mv(&base, 1, 3);
        let m = merge(&base, &theirs, std::slice::from_ref(&op));
        assert_eq!(
            m.clashes,
            vec![Clash {
                agent: "pi".into(),
                kind: ClashKind::BothMoved,
                base: Some(1),
                theirs: Some(0),
                mine: Some(3),
            }]
        );
        assert_eq!(
            m.clashes[0].undoes("alice's"),
            "this undoes alice's move of pi to #0"
        );
        let ops = [op];
        assert_eq!(
            replay(&theirs, &resolved(&ops, &m.clashes, &[Choice::Theirs])),
            theirs
        );
        assert_eq!(
            replay(&theirs, &resolved(&ops, &m.clashes, &[Choice::Mine])),
            v(&["opencode", "claude", "codex", "pi"])
        );
        // Both moved it to the same place: no conflict.
        let (_, op) = mv(&base, 1, 0);
        assert!(merge(&base, &theirs, &[op]).clashes.is_empty());
        // They removed what I moved: mine brings it back where I put it.
        let theirs = v(&["opencode", "claude", "codex"]);
        let (_, op) = mv(&base, 1, 0);
        let m = merge(&base, &theirs, std::slice::from_ref(&op));
        assert_eq!(m.clashes.len(), 1);
        assert_eq!(m.clashes[0].kind, ClashKind::TheyRemoved);
        assert_eq!(m.clashes[0].mine, Some(0));
        let ops = [op];
        assert_eq!(
            replay(&theirs, &resolved(&ops, &m.clashes, &[Choice::Mine])),
            v(&["pi", "opencode", "claude", "codex"])
        );
        assert_eq!(
            replay(&theirs, &resolved(&ops, &m.clashes, &[Choice::Theirs])),
            theirs
        );
        // I removed what they moved.
        let theirs = v(&["pi", "opencode", "claude", "codex"]);
        let ops = [Intent::Remove { agent: "pi".into() }];
        let m = merge(&base, &theirs, &ops);
        assert_eq!(m.clashes.len(), 1);
        assert_eq!(m.clashes[0].kind, ClashKind::MineRemoved);
        assert_eq!(
            replay(&theirs, &resolved(&ops, &m.clashes, &[Choice::Theirs])),
            theirs
        );
    }

    fn list() -> impl Strategy<Value = Vec<String>> {
        proptest::sample::subsequence(vec!["a", "b", "c", "d", "e", "f", "g"], 1..=7)
            .prop_shuffle()
            .prop_map(|l| l.into_iter().map(String::from).collect())
    }

    /// A random edit as the owner makes it: moves, adds, removes.
    fn edit(base: &[String], steps: &[(u8, usize, usize)]) -> (Vec<String>, Vec<Intent>) {
        let mut cur = base.to_vec();
        let mut ops = Vec::new();
        let fresh = ["x", "y", "z"];
        for &(k, i, j) in steps {
            match k % 3 {
                0 if !cur.is_empty() => {
                    let (f, t) = (i % cur.len(), j % cur.len());
                    let mut after = cur.clone();
                    let a = after.remove(f);
                    after.insert(t, a.clone());
                    ops.extend(move_intent(&cur, &after, &a));
                    cur = after;
                }
                1 => {
                    let Some(name) = fresh.iter().find(|n| !cur.iter().any(|c| c == *n)) else {
                        continue;
                    };
                    cur.insert(j % (cur.len() + 1), name.to_string());
                    ops.extend(add_intent(&cur, name));
                }
                _ if !cur.is_empty() => {
                    let a = cur.remove(i % cur.len());
                    ops.push(Intent::Remove { agent: a });
                }
                _ => {}
            }
        }
        (cur, ops)
    }

    proptest! {
        #[test]
        fn replaying_the_intents_onto_their_own_base_gives_the_edit(
            base in list(),
            steps in proptest::collection::vec((0u8..3, 0usize..8, 0usize..8), 0..8),
        ) {
            let (mine, ops) = edit(&base, &steps);
            prop_assert_eq!(replay(&base, &ops), mine.clone());
            // Unchanged underneath: nothing to merge, no conflict.
            let m = merge(&base, &base, &ops);
            prop_assert!(m.clashes.is_empty());
            prop_assert_eq!(m.merged, mine);
        }

        #[test]
        fn between_two_lists_the_intents_give_the_second(a in list(), b in list()) {
            prop_assert_eq!(replay(&a, &intents_between(&a, &b)), b);
        }

        #[test]
        fn a_merge_without_conflicts_keeps_both_sides(
            base in list(),
            mine_steps in proptest::collection::vec((0u8..3, 0usize..8, 0usize..8), 0..5),
            their_steps in proptest::collection::vec((0u8..3, 0usize..8, 0usize..8), 0..5),
        ) {
            let (mine, ops) = edit(&base, &mine_steps);
            let (theirs, _) = edit(&base, &their_steps);
            let m = merge(&base, &theirs, &ops);
            let touched: HashSet<&str> = ops.iter().map(|o| o.agent()).collect();
            // Never a duplicate, whatever the two did.
            let set: HashSet<&String> = m.merged.iter().collect();
            prop_assert_eq!(set.len(), m.merged.len());
            for a in &base {
                let kept = m.merged.contains(a);
                if !touched.contains(a.as_str()) {
                    // What I did not touch is as they left it.
                    prop_assert_eq!(kept, theirs.contains(a));
                }
                if !mine.contains(a) && !theirs.contains(a) {
                    prop_assert!(!kept, "both removed {}", a);
                }
            }
            // Theirs for every conflict: none of their placements undone
            // for an agent I did not touch, mine dropped where they clash.
            let all_theirs = vec![Choice::Theirs; m.clashes.len()];
            let r = replay(&theirs, &resolved(&ops, &m.clashes, &all_theirs));
            for c in &m.clashes {
                prop_assert_eq!(
                    r.contains(&c.agent),
                    theirs.contains(&c.agent) || !base.contains(&c.agent)
                );
            }
            // Their relative order of agents I did not touch stands.
            let untouched = |l: &[String]| -> Vec<String> {
                l.iter().filter(|a| !touched.contains(a.as_str())).cloned().collect()
            };
            prop_assert_eq!(untouched(&m.merged), untouched(&theirs));
        }
    }
}
