//! The agents-list document: finding `MAC_CODING_AGENTS` in the hub's TOML
//! config, validating it, and (in `edit`) changing its order and nothing else.

use std::ops::Range;

use crate::wire::{KNOWN_AGENTS, MAX_AGENTS, is_agent_name};

mod commas;
mod diff;
mod edit;
mod layout;
mod rebase;
mod uncomment;

pub use diff::unified_diff;
pub use edit::{Edited, Op, apply, set_order, target_of};
pub use rebase::{Outcome, RebaseError, Sides, classify, rebase};
pub use uncomment::commented_out;

/// Where the list stands in the document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// `MAC_CODING_AGENTS = ...` at top level.
    TopLevel,
    /// Inside a `[fleet]` table (or an inline `fleet = { ... }`).
    FleetTable,
    /// The dotted key `fleet.MAC_CODING_AGENTS = ...`.
    FleetDotted,
}

impl Place {
    pub fn describe(self) -> &'static str {
        match self {
            Place::TopLevel => "top-level MAC_CODING_AGENTS",
            Place::FleetTable => "MAC_CODING_AGENTS in [fleet]",
            Place::FleetDotted => "dotted key fleet.MAC_CODING_AGENTS",
        }
    }
}

/// How the owner wrote the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// `["opencode", "claude"]`
    Array,
    /// `"opencode,claude"`
    CommaString,
}

/// The list as found: its agents, its form, where it stands, and the byte
/// span of its value in the document text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located {
    pub agents: Vec<String>,
    pub form: Form,
    pub place: Place,
    pub span: Range<usize>,
}

/// Why a document or a list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DocError {
    #[error("not valid UTF-8 at line {line}, column {column}")]
    NotUtf8 { line: usize, column: usize },
    #[error("not TOML: {message} (line {line}, column {column})")]
    Toml {
        message: String,
        line: usize,
        column: usize,
    },
    #[error(
        "MAC_CODING_AGENTS is missing (expected at top level, in [fleet], or as fleet.MAC_CODING_AGENTS)"
    )]
    Missing,
    #[error("MAC_CODING_AGENTS stands in two places: {} and {}", .0.describe(), .1.describe())]
    Ambiguous(Place, Place),
    #[error("MAC_CODING_AGENTS must be an array of strings or a comma-separated string")]
    WrongType,
    #[error("MAC_CODING_AGENTS is empty")]
    Empty,
    #[error("MAC_CODING_AGENTS has {0} agents; the hub accepts at most {max}", max = MAX_AGENTS)]
    TooMany(usize),
    #[error("MAC_CODING_AGENTS names {0:?} twice")]
    Duplicate(String),
    #[error(
        "MAC_CODING_AGENTS: {0:?} is not an agent name (names match ^[a-z][a-z0-9_-]{{0,31}}$)"
    )]
    BadName(String),
    #[error("no agent named {0:?} in MAC_CODING_AGENTS")]
    NoSuchAgent(String),
    #[error("index {index} is out of range (the list has {len} agents)")]
    IndexOutOfRange { index: usize, len: usize },
    #[error(
        "cannot rewrite MAC_CODING_AGENTS at line {line}, column {column} without disturbing its layout; edit it by hand"
    )]
    Unsupported { line: usize, column: usize },
}

/// `items` in the order of `order` (indices into `items`); an index out of
/// range or repeated is skipped. Shared by the array and comma layouts.
pub(crate) fn permuted<T>(items: Vec<T>, order: &[usize]) -> Vec<T> {
    let mut old: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order
        .iter()
        .filter_map(|&i| old.get_mut(i).and_then(Option::take))
        .collect()
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let mut start = offset;
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Decode bytes as UTF-8 or say where they stop being it.
pub fn decode(bytes: &[u8]) -> Result<&str, DocError> {
    std::str::from_utf8(bytes).map_err(|e| {
        let valid = e.valid_up_to();
        // The valid prefix is UTF-8 by construction.
        let prefix = std::str::from_utf8(&bytes[..valid]).unwrap_or_default();
        let (line, column) = line_col(prefix, valid);
        DocError::NotUtf8 { line, column }
    })
}

/// Parse the document, mapping a TOML error to line and column.
pub fn parse(text: &str) -> Result<toml_edit::Document<&str>, DocError> {
    toml_edit::Document::parse(text).map_err(|e| {
        let (line, column) = line_col(text, e.span().map_or(0, |s| s.start));
        DocError::Toml {
            message: e.message().trim().to_string(),
            line,
            column,
        }
    })
}

const KEY: &str = "MAC_CODING_AGENTS";

/// Find `MAC_CODING_AGENTS` and read it. Validates the list.
pub fn locate(text: &str) -> Result<Located, DocError> {
    let doc = parse(text)?;
    locate_in(&doc)
}

/// The same, on an already parsed document.
pub fn locate_in(doc: &toml_edit::Document<&str>) -> Result<Located, DocError> {
    let raw = read_raw(doc)?;
    validate_list(&raw.agents)?;
    Ok(Located {
        agents: raw.agents,
        form: raw.form,
        place: raw.place,
        span: raw.span,
    })
}

/// The list as written, before validation: what the editor works from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawList {
    pub agents: Vec<String>,
    pub form: Form,
    pub place: Place,
    /// The value's span in the document text.
    pub span: Range<usize>,
    /// For the array form, each element's value span (quotes included).
    pub elements: Vec<Range<usize>>,
}

/// The value of `MAC_CODING_AGENTS` and where it stands. Never creates keys.
fn find<'d>(doc: &'d toml_edit::Document<&str>) -> Result<(Place, &'d toml_edit::Item), DocError> {
    let root = doc.as_table();
    let mut found: Vec<(Place, &toml_edit::Item)> = Vec::new();
    if let Some(item) = root.get(KEY) {
        found.push((Place::TopLevel, item));
    }
    if let Some(fleet) = root.get("fleet") {
        let hit = match fleet {
            toml_edit::Item::Table(t) => {
                let place = if t.is_dotted() {
                    Place::FleetDotted
                } else {
                    Place::FleetTable
                };
                t.get(KEY).map(|item| (place, item))
            }
            // `Item::get` reads an inline table's keys without creating any.
            toml_edit::Item::Value(toml_edit::Value::InlineTable(_)) => {
                fleet.get(KEY).map(|item| (Place::FleetTable, item))
            }
            _ => None,
        };
        if let Some(hit) = hit {
            found.push(hit);
        }
    }
    match found.as_slice() {
        [] => Err(DocError::Missing),
        [one] => Ok(*one),
        [a, b, ..] => Err(DocError::Ambiguous(a.0, b.0)),
    }
}

/// Find and read the list without validating its names.
pub(crate) fn read_raw(doc: &toml_edit::Document<&str>) -> Result<RawList, DocError> {
    let (place, item) = find(doc)?;
    let value = item.as_value().ok_or(DocError::WrongType)?;
    let span = value.span().ok_or(DocError::WrongType)?;
    let (agents, form, elements) = match value {
        toml_edit::Value::Array(arr) => {
            let mut agents = Vec::with_capacity(arr.len());
            let mut elements = Vec::with_capacity(arr.len());
            for v in arr.iter() {
                agents.push(v.as_str().ok_or(DocError::WrongType)?.to_string());
                elements.push(v.span().ok_or(DocError::WrongType)?);
            }
            (agents, Form::Array, elements)
        }
        toml_edit::Value::String(s) => (split_comma(s.value()), Form::CommaString, Vec::new()),
        _ => return Err(DocError::WrongType),
    };
    Ok(RawList {
        agents,
        form,
        place,
        span,
        elements,
    })
}

/// The agents of an env-style `"opencode, claude"` string.
pub fn split_comma(s: &str) -> Vec<String> {
    if s.trim().is_empty() {
        return Vec::new();
    }
    s.split(',').map(|t| t.trim().to_string()).collect()
}

/// Non-empty, no duplicates, every name well-formed, and no more agents
/// than a worker may report in a heartbeat ([`MAX_AGENTS`]).
pub fn validate_list(agents: &[String]) -> Result<(), DocError> {
    if agents.is_empty() {
        return Err(DocError::Empty);
    }
    if agents.len() > MAX_AGENTS {
        return Err(DocError::TooMany(agents.len()));
    }
    for (i, a) in agents.iter().enumerate() {
        if !is_agent_name(a) {
            return Err(DocError::BadName(a.clone()));
        }
        if agents[..i].contains(a) {
            return Err(DocError::Duplicate(a.clone()));
        }
    }
    Ok(())
}

/// Well-formed names outside the built-in set: a warning, not an error.
pub fn unknown_agents(agents: &[String]) -> Vec<String> {
    agents
        .iter()
        .filter(|a| !KNOWN_AGENTS.contains(&a.as_str()))
        .cloned()
        .collect()
}

/// What `apply` and `agents show` say of a name outside [`KNOWN_AGENTS`].
pub fn unknown_agent_warning(a: &str) -> String {
    format!(
        "{a:?} is not a known agent (known: {})",
        KNOWN_AGENTS.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_place_and_form() {
        let l = locate("MAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n").expect("top");
        assert_eq!(l.place, Place::TopLevel);
        assert_eq!(l.agents, ["opencode", "claude"]);
        let l = locate("[fleet]\nMAC_CODING_AGENTS = \"pi, codex\"\n").expect("fleet");
        assert_eq!(l.place, Place::FleetTable);
        assert_eq!(l.form, Form::CommaString);
        assert_eq!(l.agents, ["pi", "codex"]);
        let text = "name = 1\nfleet.MAC_CODING_AGENTS = [\"pi\"]\n";
        let l = locate(text).expect("dotted");
        assert_eq!(l.place, Place::FleetDotted);
        assert_eq!(&text[l.span.clone()], "[\"pi\"]");
    }

    #[test]
    fn refuses_two_places_and_ignores_other_tables() {
        let text = "MAC_CODING_AGENTS = [\"pi\"]\n[fleet]\nMAC_CODING_AGENTS = [\"claude\"]\n";
        assert_eq!(
            locate(text),
            Err(DocError::Ambiguous(Place::TopLevel, Place::FleetTable))
        );
        let text =
            "[fleet.staging]\nMAC_CODING_AGENTS = [\"pi\"]\n[other]\nMAC_CODING_AGENTS = [\"x\"]\n";
        assert_eq!(locate(text), Err(DocError::Missing));
    }

    #[test]
    fn bad_lists() {
        assert_eq!(locate("MAC_CODING_AGENTS = []"), Err(DocError::Empty));
        // The wire's bound, on both sides: a list every heartbeat can carry.
        let names = |n: usize| {
            (0..n)
                .map(|i| format!("a{i}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let at_most = format!("MAC_CODING_AGENTS = {:?}", names(MAX_AGENTS));
        assert_eq!(locate(&at_most).map(|l| l.agents.len()), Ok(MAX_AGENTS));
        let over = format!("MAC_CODING_AGENTS = {:?}", names(MAX_AGENTS + 1));
        assert_eq!(
            locate(&over).map(|l| l.agents.len()),
            Err(DocError::TooMany(MAX_AGENTS + 1))
        );
        assert_eq!(
            locate("MAC_CODING_AGENTS = [\"pi\", \"pi\"]"),
            Err(DocError::Duplicate("pi".into()))
        );
        assert_eq!(
            locate("MAC_CODING_AGENTS = [\"Pi\"]"),
            Err(DocError::BadName("Pi".into()))
        );
        assert_eq!(locate("MAC_CODING_AGENTS = 3"), Err(DocError::WrongType));
        let many: Vec<String> = (0..=MAX_AGENTS).map(|i| format!("\"a{i}\"")).collect();
        let text = format!("MAC_CODING_AGENTS = [{}]", many.join(","));
        assert_eq!(locate(&text), Err(DocError::TooMany(MAX_AGENTS + 1)));
        let text = format!("MAC_CODING_AGENTS = [{}]", many[..MAX_AGENTS].join(","));
        assert_eq!(locate(&text).map(|l| l.agents.len()), Ok(MAX_AGENTS));
        match locate("a = \n") {
            Err(DocError::Toml { line, .. }) => assert_eq!(line, 1),
            other => panic!("expected a TOML error, got {other:?}"),
        }
        assert_eq!(
            decode(b"a = 1\nb = \"\xff\""),
            Err(DocError::NotUtf8 { line: 2, column: 6 })
        );
    }
}
