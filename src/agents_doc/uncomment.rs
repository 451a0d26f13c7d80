//! Adding an agent that stands commented out in the list (`# "cursor",` on a
//! line of its own inside the array) brings that line back instead of
//! writing a second one. See `docs/editor.md`, "Adding and removing".

use super::{Form, RawList, parse, read_raw};

/// A commented-out entry found in the array, and the document with it
/// brought back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Uncommented {
    /// The whole document with the line uncommented (and a comma added
    /// where TOML needs one).
    pub text: String,
    /// The index the agent takes in the list.
    pub index: usize,
    /// 1-based line of the entry.
    pub line: usize,
}

/// The index `name` would take if it were brought back from a commented-out
/// line of `text`'s list; `None` when no such line stands in the array.
pub fn commented_out(text: &str, name: &str) -> Option<usize> {
    let doc = parse(text).ok()?;
    let raw = read_raw(&doc).ok()?;
    uncomment(text, &raw, name).map(|u| u.index)
}

/// Bring back the first line of the array that holds only `# "name"` (an
/// optional comma, then an optional comment or note). `None` when there is
/// none, or when the result would not read as the list with `name` added
/// (then the caller writes a fresh element).
pub(crate) fn uncomment(text: &str, raw: &RawList, name: &str) -> Option<Uncommented> {
    if raw.form != Form::Array || raw.agents.iter().any(|a| a == name) {
        return None;
    }
    let (line_start, line_end) = find_line(text, raw, name)?;
    let line = text.get(line_start..line_end)?;
    let index = raw.elements.iter().filter(|e| e.end <= line_start).count();
    let (new_line, has_comma) = rewrite(line, name)?;
    // The one comma of the gap this line stands in: before the line (the
    // entry then needs its own when something follows) or after it (the
    // element before then needs one).
    let prev_end = index.checked_sub(1).map(|i| raw.elements[i].end);
    let comma_before = prev_end
        .and_then(|p| text.get(p..line_start))
        .is_some_and(has_code_comma);
    let next = raw.elements.get(index).map(|e| e.start);
    let mut new_line = new_line;
    if next.is_some() && (prev_end.is_none() || comma_before) && !has_comma {
        new_line = add_comma_after_value(&new_line)?;
    }
    let mut out = String::with_capacity(text.len() + 2);
    match prev_end {
        Some(p) if !comma_before => {
            out.push_str(text.get(..p)?);
            out.push(',');
            out.push_str(text.get(p..line_start)?);
        }
        _ => out.push_str(text.get(..line_start)?),
    }
    out.push_str(&new_line);
    out.push_str(text.get(line_end..)?);
    // Only what reads back as the list with `name` at `index` is used.
    let doc = parse(&out).ok()?;
    let back = read_raw(&doc).ok()?;
    let mut want = raw.agents.clone();
    want.insert(index, name.to_string());
    if back.agents != want {
        return None;
    }
    let (line, _) = super::line_col(text, line_start);
    Some(Uncommented {
        text: out,
        index,
        line,
    })
}

/// Commas outside a comment.
fn has_code_comma(s: &str) -> bool {
    s.lines()
        .any(|l| l.find('#').map_or(l, |i| &l[..i]).contains(','))
}

/// The byte range (without its line ending) of the first whole line inside
/// the array, outside every element, that is a commented-out `name`.
fn find_line(text: &str, raw: &RawList, name: &str) -> Option<(usize, usize)> {
    let inner = text.get(raw.span.clone())?;
    let mut offset = raw.span.start;
    for piece in inner.split_inclusive('\n') {
        let start = offset;
        offset += piece.len();
        // The `[` line is the opener's; only lines that begin inside the
        // array count.
        if start == raw.span.start {
            continue;
        }
        let body = piece.trim_end_matches(['\n', '\r']);
        let end = start + body.len();
        if raw.elements.iter().any(|e| e.start < end && start < e.end) {
            continue;
        }
        if rewrite(body, name).is_some() {
            return Some((start, end));
        }
    }
    None
}

/// `    # "pi",  # note` → `    "pi",  # note`; `# "pi",  note` →
/// `"pi",  # note` (free text after the entry becomes a comment). Returns
/// the new line and whether it holds the entry's comma.
fn rewrite(line: &str, name: &str) -> Option<(String, bool)> {
    let t = line.trim_start_matches([' ', '\t']);
    let indent = &line[..line.len() - t.len()];
    let t = t.strip_prefix('#')?.trim_start_matches([' ', '\t']);
    let quote = t.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let rest = t[1..].strip_prefix(name)?.strip_prefix(quote)?;
    let value = &t[..name.len() + 2];
    let after = rest.trim_start_matches([' ', '\t']);
    let (pre_comma, comma, rest) = match after.strip_prefix(',') {
        Some(r) => (&rest[..rest.len() - after.len()], true, r),
        None => ("", false, rest),
    };
    let note = rest.trim_start_matches([' ', '\t']);
    let spaces = &rest[..rest.len() - note.len()];
    let mut out = format!("{indent}{value}{pre_comma}");
    if comma {
        out.push(',');
    }
    match note {
        "" => {}
        n if n.starts_with('#') => {
            out.push_str(spaces);
            out.push_str(n);
        }
        n => {
            // A note such as `waiting for credits` must not become code.
            out.push_str(if spaces.is_empty() { " " } else { spaces });
            out.push_str("# ");
            out.push_str(n);
        }
    }
    Some((out, comma))
}

/// `"pi"  # x` → `"pi",  # x`: a comma right after the value.
fn add_comma_after_value(line: &str) -> Option<String> {
    let t = line.trim_start_matches([' ', '\t']);
    let quote = t.chars().next()?;
    let close = t[1..].find(quote)? + 2;
    let at = line.len() - t.len() + close;
    Some(format!("{},{}", &line[..at], &line[at..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, name: &str) -> Option<Uncommented> {
        let doc = parse(text).expect("toml");
        let raw = read_raw(&doc).expect("list");
        uncomment(text, &raw, name)
    }

    #[test]
    fn rewrites_the_line() {
        assert_eq!(
            rewrite("    # \"pi\",  # back soon", "pi"),
            Some(("    \"pi\",  # back soon".into(), true))
        );
        assert_eq!(rewrite("  #'pi'", "pi"), Some(("  'pi'".into(), false)));
        assert_eq!(
            rewrite("    # \"pi\",  waiting for credits", "pi"),
            Some(("    \"pi\",  # waiting for credits".into(), true))
        );
        assert_eq!(rewrite("    # \"pie\",", "pi"), None);
        assert_eq!(rewrite("    # pi: later", "pi"), None);
        assert_eq!(rewrite("    \"pi\",", "pi"), None);
    }

    #[test]
    fn commas_where_toml_needs_them() {
        // After the last element of an array without a trailing comma.
        let u = run(
            "A = 1\nMAC_CODING_AGENTS = [\n  \"opencode\"\n  # \"pi\"\n]\n",
            "pi",
        )
        .expect("uncommented");
        assert_eq!(
            u.text,
            "A = 1\nMAC_CODING_AGENTS = [\n  \"opencode\",\n  \"pi\"\n]\n"
        );
        assert_eq!((u.index, u.line), (1, 4));
        // Before an element, without its own comma.
        let u = run(
            "MAC_CODING_AGENTS = [\n  # \"pi\"   # soon\n  \"opencode\",\n]\n",
            "pi",
        )
        .expect("uncommented");
        assert_eq!(
            u.text,
            "MAC_CODING_AGENTS = [\n  \"pi\",   # soon\n  \"opencode\",\n]\n"
        );
        assert_eq!(u.index, 0);
    }

    #[test]
    fn only_whole_lines_inside_the_array() {
        // On the `[` line, after a value, outside the array, or already listed.
        for text in [
            "MAC_CODING_AGENTS = [ # \"pi\"\n  \"opencode\",\n]\n",
            "MAC_CODING_AGENTS = [\n  \"opencode\", # \"pi\"\n]\n",
            "# \"pi\",\nMAC_CODING_AGENTS = [\n  \"opencode\",\n]\n",
            "MAC_CODING_AGENTS = [\n  \"pi\",\n  # \"pi\",\n]\n",
            "MAC_CODING_AGENTS = \"opencode\" # \"pi\"\n",
        ] {
            assert_eq!(run(text, "pi"), None, "{text}");
        }
        assert_eq!(
            commented_out(
                "MAC_CODING_AGENTS = [\n  \"opencode\",\n  # \"pi\",\n]\n",
                "pi"
            ),
            Some(1)
        );
    }
}
