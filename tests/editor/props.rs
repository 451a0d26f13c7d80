//! Property tests for the MAC_CODING_AGENTS editor over generated layouts
//! with comments: the new order holds, every comment appears once and on the
//! element it described, the result parses, bytes outside the list do not
//! change, and (with a trailing comma) a move and its inverse restore the
//! input byte for byte.

use std::collections::HashMap;

use macfleet::agents_doc::{Op, apply, locate};
use proptest::prelude::*;
use proptest::sample::subsequence;

const POOL: [&str; 10] = [
    "opencode", "pi", "claude", "codex", "cursor", "gemini", "aider", "goose", "amp", "qwen",
];

#[derive(Debug, Clone)]
struct ElemSpec {
    name: String,
    /// Number of comment lines directly above.
    lead: usize,
    /// A same-line comment and the whitespace before it.
    same: Option<String>,
    /// A blank line before the element (a position's).
    blank_before: bool,
    /// A comment block set off by a blank line before the element.
    block_before: bool,
}

#[derive(Debug, Clone)]
struct ArrSpec {
    elems: Vec<ElemSpec>,
    multiline: bool,
    /// First element on the `[` line.
    hanging: bool,
    indent: String,
    trailing_comma: bool,
    crlf: bool,
    open_comment: bool,
    close_comments: usize,
    aligned: bool,
    sep_ws: String,
    place: u8,
    final_newline: bool,
}

/// A comment's text names its kind, its element and a number, so the checks
/// can find it. Lead comments look like commented-out entries.
fn lead_text(name: &str, k: usize) -> String {
    format!("\"zz\", lead-of-{name}-{k}")
}

impl ArrSpec {
    fn nl(&self) -> &'static str {
        if self.crlf { "\r\n" } else { "\n" }
    }

    fn array(&self) -> String {
        let nl = self.nl();
        let n = self.elems.len();
        let mut s = String::from("[");
        if !self.multiline {
            for (i, e) in self.elems.iter().enumerate() {
                s.push_str(&format!("\"{}\"", e.name));
                if i + 1 < n {
                    s.push(',');
                    s.push_str(&self.sep_ws);
                } else if self.trailing_comma {
                    s.push(',');
                }
            }
            s.push(']');
            return s;
        }
        if self.open_comment && !self.hanging {
            s.push_str(" # open-comment");
        }
        if !self.hanging {
            s.push_str(nl);
        }
        for (i, e) in self.elems.iter().enumerate() {
            let mut line = String::new();
            if i > 0 || !self.hanging {
                if i > 0 && e.blank_before {
                    s.push_str(nl);
                }
                if i > 0 && e.block_before {
                    s.push_str(&format!("{}# block-before-{}{nl}{nl}", self.indent, e.name));
                }
                for k in 0..e.lead {
                    s.push_str(&format!("{}# {}{nl}", self.indent, lead_text(&e.name, k)));
                }
                line.push_str(&self.indent);
            } else {
                line.push(' ');
            }
            line.push_str(&format!("\"{}\"", e.name));
            if i + 1 < n || self.trailing_comma {
                line.push(',');
            }
            if let Some(ws) = &e.same {
                let ws = if self.aligned {
                    // Align every same-line comment at column 30.
                    let col = line.chars().count() + if i == 0 && self.hanging { 21 } else { 0 };
                    " ".repeat(30usize.saturating_sub(col).max(1))
                } else {
                    ws.clone()
                };
                line.push_str(&format!("{ws}# same-of-{}", e.name));
            }
            s.push_str(&line);
            s.push_str(nl);
        }
        for k in 0..self.close_comments {
            s.push_str(&format!("{}# close-comment-{k}{nl}", self.indent));
        }
        s.push(']');
        s
    }

    fn document(&self) -> String {
        let nl = self.nl();
        let arr = self.array();
        let mut d = format!("# fleet config{nl}title = \"x\"{nl}");
        match self.place {
            0 => d.push_str(&format!("MAC_CODING_AGENTS = {arr} # after{nl}[other]{nl}MAC_CODING_AGENTS = [\"pi\"]{nl}")),
            1 => d.push_str(&format!("[fleet]{nl}a = 1{nl}MAC_CODING_AGENTS = {arr}{nl}b = [1, # c{nl}2]{nl}[fleet.staging]{nl}MAC_CODING_AGENTS = \"pi,claude\"{nl}")),
            _ => d.push_str(&format!("fleet.a = 1{nl}x = 2{nl}fleet.MAC_CODING_AGENTS = {arr}{nl}fleet.b = 3{nl}")),
        }
        d.push_str("tail = true");
        if self.final_newline {
            d.push_str(nl);
        }
        d
    }

    fn names(&self) -> Vec<String> {
        self.elems.iter().map(|e| e.name.clone()).collect()
    }

    /// Layouts where a move and its inverse must restore the input: a
    /// trailing comma, no detached blocks (rule 5 anchors them to unmoved
    /// neighbours, which an inverse move cannot undo when the moved element
    /// stood next to one), no first element on the `[` line.
    fn invertible(&self) -> bool {
        self.trailing_comma && !self.hanging && self.elems.iter().all(|e| !e.block_before)
    }
}

fn arr_spec(max: usize) -> impl Strategy<Value = ArrSpec> {
    (1..=max)
        .prop_flat_map(|n| subsequence(POOL.to_vec(), n).prop_shuffle())
        .prop_flat_map(|names| {
            let n = names.len();
            let elems = proptest::collection::vec(
                (
                    0usize..3,
                    prop_oneof![
                        Just(None),
                        Just(Some(" ".to_string())),
                        Just(Some("   ".to_string())),
                        Just(Some("\t".to_string())),
                    ],
                    proptest::bool::weighted(0.2),
                    proptest::bool::weighted(0.15),
                ),
                n,
            );
            (
                (Just(names), elems),
                any::<bool>(),
                proptest::bool::weighted(0.2),
                prop_oneof![Just("    "), Just("  "), Just("\t")],
                any::<bool>(),
                proptest::bool::weighted(0.3),
                any::<bool>(),
                0usize..3,
                any::<bool>(),
                prop_oneof![Just(" "), Just(""), Just("  ")],
                0u8..3,
                any::<bool>(),
            )
        })
        .prop_map(
            |(
                (names, elems),
                multiline,
                hanging,
                indent,
                trailing_comma,
                crlf,
                open_comment,
                close_comments,
                aligned,
                sep_ws,
                place,
                final_newline,
            )| {
                let elems = names
                    .into_iter()
                    .zip(elems)
                    .enumerate()
                    .map(|(i, (name, (lead, same, blank, block)))| ElemSpec {
                        name: name.to_string(),
                        lead: if hanging && i == 0 { 0 } else { lead },
                        same,
                        blank_before: blank,
                        block_before: block,
                    })
                    .collect();
                ArrSpec {
                    elems,
                    multiline,
                    hanging,
                    indent: indent.to_string(),
                    trailing_comma,
                    crlf,
                    open_comment,
                    close_comments,
                    aligned,
                    sep_ws: sep_ws.to_string(),
                    place,
                    final_newline,
                }
            },
        )
}

/// Which element each comment in the list sits with: `same-of-*` comments by
/// the value on their line, `lead-of-*` lines by the value right below them
/// (comment lines only in between). Detached ones map to `None`.
fn attachments(text: &str) -> Vec<(String, Option<String>)> {
    let Ok(loc) = locate(text) else {
        return Vec::new();
    };
    let arr = &text[loc.span];
    let mut out = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    for line in arr.split('\n') {
        let line = line.trim_end_matches('\r');
        let (code, comment) = match line.find('#') {
            Some(i) => (&line[..i], Some(line[i + 1..].trim().to_string())),
            None => (line, None),
        };
        let values: Vec<&str> = code.split('"').skip(1).step_by(2).collect();
        if values.is_empty() {
            if let Some(c) = comment {
                if code.trim().is_empty() {
                    pending.push(c);
                    continue;
                }
                out.push((c, None));
            }
            // A blank line or a bracket: what was pending is detached.
            for c in pending.drain(..) {
                out.push((c, None));
            }
            continue;
        }
        for c in pending.drain(..) {
            out.push((c, Some(values[0].to_string())));
        }
        if let Some(c) = comment {
            out.push((c, values.last().map(|v| v.to_string())));
        }
    }
    for c in pending {
        out.push((c, None));
    }
    out
}

/// Every comment once; element comments on their element.
fn check_comments(spec: &ArrSpec, out: &str, removed: Option<&str>) -> Result<(), TestCaseError> {
    let att = attachments(out);
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (c, _) in &att {
        *seen.entry(c.as_str()).or_default() += 1;
    }
    for (c, n) in &seen {
        prop_assert_eq!(*n, 1, "comment {:?} appears {} times in\n{}", c, n, out);
    }
    let mut expected = 0;
    for e in &spec.elems {
        let gone = removed == Some(e.name.as_str());
        if spec.multiline && e.same.is_some() {
            let c = format!("same-of-{}", e.name);
            let got = att.iter().find(|(t, _)| *t == c);
            if gone {
                prop_assert!(got.is_none(), "{} survived removal", c);
            } else {
                expected += 1;
                prop_assert_eq!(
                    got.map(|g| g.1.clone()),
                    Some(Some(e.name.clone())),
                    "{} in\n{}",
                    c,
                    out
                );
            }
        }
        for k in 0..e.lead {
            if !spec.multiline {
                continue;
            }
            let c = lead_text(&e.name, k);
            let got = att.iter().find(|(t, _)| *t == c);
            if gone {
                prop_assert!(got.is_none(), "{} survived removal", c);
            } else {
                expected += 1;
                prop_assert_eq!(
                    got.map(|g| g.1.clone()),
                    Some(Some(e.name.clone())),
                    "{} in\n{}",
                    c,
                    out
                );
            }
        }
    }
    let positional = att
        .iter()
        .filter(|(t, _)| {
            t.starts_with("block-") || t.starts_with("close-") || t.starts_with("open-")
        })
        .count();
    let want_positional = if spec.multiline {
        spec.elems.iter().skip(1).filter(|e| e.block_before).count()
            + spec.close_comments
            + usize::from(spec.open_comment && !spec.hanging)
    } else {
        0
    };
    prop_assert_eq!(
        positional,
        want_positional,
        "positional comments in\n{}",
        out
    );
    prop_assert_eq!(att.len(), expected + want_positional);
    Ok(())
}

/// The text outside the list's value is unchanged, and the result parses.
fn check_outside(input: &str, out: &str) -> Result<(), TestCaseError> {
    let a = locate(input).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let b = locate(out).map_err(|e| TestCaseError::fail(format!("{e} in\n{out}")))?;
    prop_assert_eq!(&input[..a.span.start], &out[..b.span.start]);
    prop_assert_eq!(&input[a.span.end..], &out[b.span.end..]);
    prop_assert!(toml_edit::Document::parse(out).is_ok());
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 200,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn move_keeps_comments_and_outside(spec in arr_spec(7), pick in any::<prop::sample::Index>(), to in any::<prop::sample::Index>()) {
        let input = spec.document();
        let names = spec.names();
        let name = names[pick.index(names.len())].clone();
        let index = to.index(names.len());
        let e = apply(&input, &Op::Move { name: name.clone(), index }).map_err(|e| TestCaseError::fail(format!("{e} on\n{input}")))?;
        let mut want = names.clone();
        let from = want.iter().position(|n| *n == name).unwrap_or(0);
        let x = want.remove(from);
        want.insert(index, x);
        prop_assert_eq!(&e.after, &want);
        prop_assert_eq!(locate(&e.text).map(|l| l.agents).ok(), Some(want));
        check_outside(&input, &e.text)?;
        check_comments(&spec, &e.text, None)?;
        if from == index {
            prop_assert_eq!(&e.text, &input);
        }
    }

    #[test]
    fn move_then_inverse_restores(spec in arr_spec(7).prop_filter("invertible layout", ArrSpec::invertible), pick in any::<prop::sample::Index>(), to in any::<prop::sample::Index>()) {
        let input = spec.document();
        let names = spec.names();
        let from = pick.index(names.len());
        let name = names[from].clone();
        let index = to.index(names.len());
        let once = apply(&input, &Op::Move { name: name.clone(), index }).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let back = apply(&once.text, &Op::Move { name, index: from }).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&back.text, &input, "after the first move:\n{}", once.text);
    }

    #[test]
    fn set_permutation(spec in arr_spec(7), order in any::<u64>()) {
        let input = spec.document();
        let mut want = spec.names();
        // A deterministic shuffle from the generated seed.
        let mut seed = order;
        for i in (1..want.len()).rev() {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            want.swap(i, (seed >> 33) as usize % (i + 1));
        }
        let e = apply(&input, &Op::Set(want.clone())).map_err(|e| TestCaseError::fail(format!("{e} on\n{input}")))?;
        prop_assert_eq!(locate(&e.text).map(|l| l.agents).ok(), Some(want));
        check_outside(&input, &e.text)?;
        check_comments(&spec, &e.text, None)?;
    }

    #[test]
    fn add_and_remove(spec in arr_spec(6), pick in any::<prop::sample::Index>(), at in any::<prop::sample::Index>()) {
        let input = spec.document();
        let names = spec.names();
        // Add a new agent somewhere.
        let new = POOL.iter().find(|p| !names.iter().any(|n| n == *p)).map(|s| s.to_string()).unwrap_or_else(|| "zeta".into());
        let index = at.index(names.len() + 1);
        let e = apply(&input, &Op::Add { name: new.clone(), index: Some(index) }).map_err(|e| TestCaseError::fail(format!("{e} on\n{input}")))?;
        let mut want = names.clone();
        want.insert(index, new.clone());
        prop_assert_eq!(locate(&e.text).map(|l| l.agents).ok(), Some(want));
        check_outside(&input, &e.text)?;
        check_comments(&spec, &e.text, None)?;
        // Remove one (if more than one).
        if names.len() > 1 {
            let gone = names[pick.index(names.len())].clone();
            let e = apply(&input, &Op::Remove(gone.clone())).map_err(|e| TestCaseError::fail(format!("{e} on\n{input}")))?;
            let want: Vec<String> = names.iter().filter(|n| **n != gone).cloned().collect();
            prop_assert_eq!(locate(&e.text).map(|l| l.agents).ok(), Some(want));
            check_outside(&input, &e.text)?;
            check_comments(&spec, &e.text, Some(&gone))?;
        }
    }

    #[test]
    fn comma_form_moves_only_tokens(
        names in (1usize..=6).prop_flat_map(|n| subsequence(POOL.to_vec(), n).prop_shuffle()),
        ws in proptest::collection::vec(prop_oneof![Just(""), Just(" "), Just("  "), Just("\t")], 12),
        literal in any::<bool>(),
        pick in any::<prop::sample::Index>(),
        to in any::<prop::sample::Index>(),
    ) {
        let q = if literal { "'" } else { "\"" };
        let pieces: Vec<String> = names.iter().enumerate().map(|(i, n)| format!("{}{n}{}", ws[2 * i], ws[2 * i + 1])).collect();
        let input = format!("[fleet]\nMAC_CODING_AGENTS = {q}{}{q} # env\nx = 1\n", pieces.join(","));
        let name = names[pick.index(names.len())].to_string();
        let index = to.index(names.len());
        let e = apply(&input, &Op::Move { name, index }).map_err(|e| TestCaseError::fail(format!("{e} on\n{input}")))?;
        check_outside(&input, &e.text)?;
        // With the tokens blanked out, the text is the same.
        let blank = |s: &str| POOL.iter().fold(s.to_string(), |acc, p| acc.replace(p, "_"));
        prop_assert_eq!(blank(&e.text), blank(&input));
        prop_assert_eq!(locate(&e.text).map(|l| l.agents).ok(), Some(e.after.clone()));
    }
}
