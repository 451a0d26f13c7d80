//! The operations on the list, and the splice back into the document.

use std::collections::{HashMap, HashSet};

use super::commas::CommaLayout;
use super::layout::{ArrayLayout, Unreadable};
use super::uncomment::uncomment;
use super::{
    DocError, Form, RawList, line_col, parse, read_raw, split_comma, unknown_agent_warning,
    unknown_agents, validate_list,
};
use crate::wire::is_agent_name;

/// One change to the order of `MAC_CODING_AGENTS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Move an agent so that it stands at `index` (0-based) afterwards.
    Move { name: String, index: usize },
    /// Replace the list: a permutation, or a new list.
    Set(Vec<String>),
    /// Add an agent at `index` (default: the end).
    Add { name: String, index: Option<usize> },
    /// Remove an agent.
    Remove(String),
}

impl Op {
    /// Read `move NAME INDEX`, `set A,B,C` (or `set A B C`), `add NAME
    /// [INDEX]`, `remove NAME`.
    pub fn parse(s: &str) -> Result<Op, String> {
        let words: Vec<&str> = s.split_whitespace().collect();
        let index = |w: &str| {
            w.parse::<usize>()
                .map_err(|_| format!("{w:?} is not an index"))
        };
        match words.as_slice() {
            ["move", name, i] => Ok(Op::Move {
                name: name.to_string(),
                index: index(i)?,
            }),
            ["set", rest @ ..] if !rest.is_empty() => Ok(Op::Set(
                rest.iter()
                    .flat_map(|w| w.split(','))
                    .filter(|w| !w.is_empty())
                    .map(str::to_string)
                    .collect(),
            )),
            ["add", name] => Ok(Op::Add {
                name: name.to_string(),
                index: None,
            }),
            ["add", name, i] => Ok(Op::Add {
                name: name.to_string(),
                index: Some(index(i)?),
            }),
            ["remove", name] => Ok(Op::Remove(name.to_string())),
            _ => Err(format!(
                "not an operation: {s:?} (expected move NAME INDEX, set A,B,C, add NAME [INDEX] or remove NAME)"
            )),
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Op::Move { name, index } => write!(f, "move {name} {index}"),
            Op::Set(list) => write!(f, "set {}", list.join(",")),
            Op::Add {
                name,
                index: Some(i),
            } => write!(f, "add {name} {i}"),
            Op::Add { name, index: None } => write!(f, "add {name}"),
            Op::Remove(name) => write!(f, "remove {name}"),
        }
    }
}

/// The result of an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    /// The whole new document.
    pub text: String,
    pub before: Vec<String>,
    pub after: Vec<String>,
    /// Things the owner should know: unknown agent names, comments that
    /// went away with a removed agent.
    pub warnings: Vec<String>,
}

impl Edited {
    pub fn changed(&self) -> bool {
        self.before != self.after
    }
}

/// The list an operation asks for, from the list as it stands.
pub fn target_of(current: &[String], op: &Op) -> Result<Vec<String>, DocError> {
    let position = |name: &str| {
        current
            .iter()
            .position(|a| a == name)
            .ok_or_else(|| DocError::NoSuchAgent(name.to_string()))
    };
    let target = match op {
        Op::Set(list) => list.clone(),
        Op::Move { name, index } => {
            validate_list(current)?;
            let from = position(name)?;
            if *index >= current.len() {
                return Err(DocError::IndexOutOfRange {
                    index: *index,
                    len: current.len(),
                });
            }
            let mut t = current.to_vec();
            let a = t.remove(from);
            t.insert(*index, a);
            t
        }
        Op::Add { name, index } => {
            validate_list(current)?;
            if !is_agent_name(name) {
                return Err(DocError::BadName(name.clone()));
            }
            if current.contains(name) {
                return Err(DocError::Duplicate(name.clone()));
            }
            let index = index.unwrap_or(current.len());
            if index > current.len() {
                return Err(DocError::IndexOutOfRange {
                    index,
                    len: current.len(),
                });
            }
            let mut t = current.to_vec();
            t.insert(index, name.clone());
            t
        }
        Op::Remove(name) => {
            validate_list(current)?;
            let at = position(name)?;
            if current.len() == 1 {
                return Err(DocError::Empty);
            }
            let mut t = current.to_vec();
            t.remove(at);
            t
        }
    };
    validate_list(&target)?;
    Ok(target)
}

/// Apply `op` to the document. Changes only the bytes of the list's value;
/// a no-op returns `text` byte for byte. An agent the edit adds that stands
/// commented out in the array (`# "cursor",`) is brought back from that
/// line; `add NAME` without an index then keeps it where it stands.
pub fn apply(text: &str, op: &Op) -> Result<Edited, DocError> {
    let doc = parse(text)?;
    let raw = read_raw(&doc)?;
    let uncommented_at = |name: &str| uncomment(text, &raw, name).map(|u| u.index);
    let target = match op {
        Op::Add { name, index: None } if is_agent_name(name) => match uncommented_at(name) {
            Some(at) => target_of(
                &raw.agents,
                &Op::Add {
                    name: name.clone(),
                    index: Some(at),
                },
            )?,
            None => target_of(&raw.agents, op)?,
        },
        _ => target_of(&raw.agents, op)?,
    };
    let mut warnings: Vec<String> = unknown_agents(&target)
        .into_iter()
        .map(|a| unknown_agent_warning(&a))
        .collect();
    if target == raw.agents {
        return Ok(Edited {
            text: text.to_string(),
            before: raw.agents,
            after: target,
            warnings,
        });
    }
    // The one agent a move moves; for other edits the agents that stay are
    // the longest run already in order.
    let moved = match op {
        Op::Move { name, .. } => Some(name.as_str()),
        _ => None,
    };
    let working = bring_back(text, &raw, &target, &mut warnings)?;
    let out = match &working {
        None => splice(text, &raw, &target, moved, &mut warnings)?,
        Some(w) => {
            let doc = parse(w)?;
            splice(w, &read_raw(&doc)?, &target, moved, &mut warnings)?
        }
    };
    Ok(Edited {
        text: out,
        before: raw.agents,
        after: target,
        warnings,
    })
}

/// The agents of `target` that `raw` lacks and `text` holds commented out
/// in the array, uncommented one by one: the text with them back (each
/// named in `warnings`), or `None` when there is none.
fn bring_back(
    text: &str,
    raw: &RawList,
    target: &[String],
    warnings: &mut Vec<String>,
) -> Result<Option<String>, DocError> {
    let mut working: Option<String> = None;
    for name in target.iter().filter(|n| !raw.agents.contains(*n)) {
        let current = working.as_deref().unwrap_or(text);
        let back = if working.is_some() {
            let doc = parse(current)?;
            uncomment(current, &read_raw(&doc)?, name)
        } else {
            uncomment(current, raw, name)
        };
        if let Some(u) = back {
            warnings.push(format!(
                "{name:?} is brought back from its commented-out line {}",
                u.line
            ));
            working = Some(u.text);
        }
    }
    Ok(working)
}

/// Re-emit the list `raw` of `text` as `target` and splice it in.
fn splice(
    text: &str,
    raw: &RawList,
    target: &[String],
    moved: Option<&str>,
    warnings: &mut Vec<String>,
) -> Result<String, DocError> {
    let unsupported = |at: usize| {
        let (line, column) = line_col(text, at);
        DocError::Unsupported { line, column }
    };
    let value = match raw.form {
        Form::Array => {
            let mut layout = ArrayLayout::parse(text, raw.span.clone(), &raw.elements, &raw.agents)
                .map_err(|Unreadable { at }| unsupported(at))?;
            restructure(&mut layout, target, moved, warnings);
            layout.render()
        }
        Form::CommaString => {
            let raw_text = text.get(raw.span.clone()).unwrap_or_default();
            let mut layout = CommaLayout::parse(raw_text, &raw.agents);
            restructure(&mut layout, target, moved, warnings);
            layout.render()
        }
    };
    if !reads_as(&value, raw.form, target) {
        return Err(unsupported(raw.span.start));
    }
    let (Some(head), Some(rest)) = (text.get(..raw.span.start), text.get(raw.span.end..)) else {
        return Err(unsupported(raw.span.start));
    };
    let mut out = String::with_capacity(head.len() + value.len() + rest.len());
    out.push_str(head);
    out.push_str(&value);
    out.push_str(rest);
    Ok(out)
}

/// Put the list in the order `agents` (which may add or drop agents).
pub fn set_order(text: &str, agents: &[String]) -> Result<String, DocError> {
    apply(text, &Op::Set(agents.to_vec())).map(|e| e.text)
}

/// Does the new value text read back as `target`?
fn reads_as(value: &str, form: Form, target: &[String]) -> bool {
    let Ok(v) = value.parse::<toml_edit::Value>() else {
        return false;
    };
    match (form, v) {
        (Form::Array, toml_edit::Value::Array(a)) => {
            a.len() == target.len() && a.iter().zip(target).all(|(v, t)| v.as_str() == Some(t))
        }
        (Form::CommaString, toml_edit::Value::String(s)) => split_comma(s.value()) == target,
        _ => false,
    }
}

/// What the re-emitting layouts can do.
trait Editable {
    fn names(&self) -> Vec<String>;
    /// Remove the element at `r`; returns the comments that went with it.
    fn remove_at(&mut self, r: usize) -> Vec<String>;
    fn insert_at(&mut self, i: usize, name: &str);
    fn permute(&mut self, order: &[usize]);
    /// Before any change: which original elements stay where they were.
    fn anchor(&mut self, _unmoved: &[bool]) {}
    /// After the changes: put back what was anchored.
    fn place(&mut self) {}
}

impl Editable for ArrayLayout {
    fn names(&self) -> Vec<String> {
        ArrayLayout::names(self)
    }
    fn remove_at(&mut self, r: usize) -> Vec<String> {
        self.remove(r).map(|e| e.comments()).unwrap_or_default()
    }
    fn insert_at(&mut self, i: usize, name: &str) {
        let e = self.new_elem(name, i);
        self.insert(i, e);
    }
    fn permute(&mut self, order: &[usize]) {
        ArrayLayout::permute(self, order);
    }
    fn anchor(&mut self, unmoved: &[bool]) {
        ArrayLayout::anchor(self, unmoved);
    }
    fn place(&mut self) {
        self.place_blocks();
    }
}

impl Editable for CommaLayout {
    fn names(&self) -> Vec<String> {
        self.tokens.clone()
    }
    fn remove_at(&mut self, r: usize) -> Vec<String> {
        self.remove(r);
        Vec::new()
    }
    fn insert_at(&mut self, i: usize, name: &str) {
        self.insert(i, name);
    }
    fn permute(&mut self, order: &[usize]) {
        CommaLayout::permute(self, order);
    }
}

/// Turn the layout's list into `target` (unique names): drop what is not
/// in it, add what is new at its target index, then reorder.
fn restructure<E: Editable>(
    ed: &mut E,
    target: &[String],
    moved: Option<&str>,
    warnings: &mut Vec<String>,
) {
    let wanted: HashSet<&str> = target.iter().map(String::as_str).collect();
    let names = ed.names();
    let mut seen = HashSet::new();
    let keep: Vec<bool> = names
        .iter()
        .map(|n| wanted.contains(n.as_str()) && seen.insert(n.as_str()))
        .collect();
    let unmoved = unmoved(&names, &keep, target, moved);
    ed.anchor(&unmoved);
    for i in (0..names.len()).rev() {
        if !keep[i] {
            let lost = ed.remove_at(i);
            if !lost.is_empty() {
                warnings.push(format!(
                    "removing {:?} also removes its comments: {}",
                    names[i],
                    lost.join(" / ")
                ));
            }
        }
    }
    let mut present: HashSet<String> = ed.names().into_iter().collect();
    let mut len = present.len();
    for (t, name) in target.iter().enumerate() {
        if !present.contains(name) {
            ed.insert_at(t.min(len), name);
            present.insert(name.clone());
            len += 1;
        }
    }
    let index: HashMap<String, usize> = ed
        .names()
        .into_iter()
        .enumerate()
        .map(|(i, n)| (n, i))
        .collect();
    let order: Vec<usize> = target
        .iter()
        .filter_map(|n| index.get(n).copied())
        .collect();
    ed.permute(&order);
    ed.place();
}

/// Which of the kept `names` stay where they are: all but the one a move
/// moves, or else the longest run of them already in `target`'s order.
fn unmoved(names: &[String], keep: &[bool], target: &[String], moved: Option<&str>) -> Vec<bool> {
    match moved {
        Some(m) => keep.iter().zip(names).map(|(k, n)| *k && n != m).collect(),
        None => {
            let old: HashMap<&str, usize> = names
                .iter()
                .enumerate()
                .filter(|(i, _)| keep[*i])
                .map(|(i, n)| (n.as_str(), i))
                .collect();
            let seq: Vec<usize> = target
                .iter()
                .filter_map(|n| old.get(n.as_str()).copied())
                .collect();
            let mut unmoved = vec![false; names.len()];
            for i in longest_increasing(&seq) {
                unmoved[i] = true;
            }
            unmoved
        }
    }
}

/// The values of a longest strictly increasing subsequence of `seq`.
fn longest_increasing(seq: &[usize]) -> Vec<usize> {
    // tails[l]: index into seq of the smallest tail of a run of length l + 1.
    let mut tails: Vec<usize> = Vec::new();
    let mut prev: Vec<Option<usize>> = vec![None; seq.len()];
    for (i, &x) in seq.iter().enumerate() {
        let l = tails.partition_point(|&t| seq[t] < x);
        prev[i] = l.checked_sub(1).map(|p| tails[p]);
        if l == tails.len() {
            tails.push(i);
        } else {
            tails[l] = i;
        }
    }
    let mut out = Vec::with_capacity(tails.len());
    let mut at = tails.last().copied();
    while let Some(i) = at {
        out.push(seq[i]);
        at = prev[i];
    }
    out.reverse();
    out
}
