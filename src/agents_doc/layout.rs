//! The array form, cut into bytes that belong to *positions* (the `[` line,
//! separators, indentation, blank lines, what stands before `]`, the trailing
//! comma) and bytes that belong to *elements* (the value, its same-line
//! comment, the comment lines directly above it). Re-emitting with the
//! elements in another order moves only element-owned bytes.
//!
//! The array text is cut at the element value spans toml_edit reports. What
//! lies between two values (a *gap*) can only hold spaces, tabs, newlines,
//! comments and commas, and is tokenised here. See `docs/editor.md`.

use std::ops::Range;

/// Why the layout could not be read (never expected for valid TOML).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreadable {
    /// Byte offset in the document where reading stopped.
    pub at: usize,
}

/// The positional text after a value on its line: `pre` `,` `post`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Tail {
    pre: String,
    comma: bool,
    post: String,
}

/// Everything from the first newline of a gap to the next value (or `]`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Break {
    /// The newline ending the first line of the gap.
    nl: String,
    /// Whole lines (each with its newline) that belong to the position:
    /// blank lines, comment blocks set off by a blank line, comma lines.
    lines: Vec<String>,
    /// The text before the value on its line (indentation; a comma in
    /// comma-first style).
    indent: String,
}

/// A separator between two values, or the opener (after `[`) or closer
/// (before `]`). For the opener `tail.pre` is the text on the `[` line.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Gap {
    tail: Tail,
    brk: Option<Break>,
}

/// A comment on a value's line, with the spaces around the comma slot.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Comment {
    pre: String,
    post: String,
    text: String,
    /// Column (in characters) where `#` stood.
    col: usize,
}

/// An element with the bytes it owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Elem {
    pub name: String,
    /// Index in the original list; `None` for an added element.
    pub id: Option<usize>,
    value: String,
    /// Comment lines directly above the value, each with its newline.
    lead: Vec<String>,
    /// The indentation the value had, for re-indenting `lead`.
    indent: Option<String>,
    comment: Option<Comment>,
}

impl Elem {
    /// The comments that go away with the element, one per line, trimmed.
    pub fn comments(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .lead
            .iter()
            .map(|l| l.trim_matches([' ', '\t', '\r', '\n']).to_string())
            .collect();
        if let Some(c) = &self.comment {
            out.push(c.text.clone());
        }
        out
    }
}

/// A comment block set off from the next value by a blank line: it stays
/// between the same unmoved neighbours.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Block {
    lines: Vec<String>,
    /// The separator it stood in (between elements `after` and `after + 1`).
    after: usize,
    /// The original index of the nearest unmoved element before it.
    anchor: Option<usize>,
}

#[derive(Clone, Debug)]
pub(crate) struct ArrayLayout {
    opener: Gap,
    /// `seps[k]` stands between `elems[k]` and `elems[k + 1]`.
    seps: Vec<Gap>,
    closer: Gap,
    pub elems: Vec<Elem>,
    /// The document's line ending, for the rare newline the editor must add.
    nl: String,
    /// Column of `[` in the document.
    start_col: usize,
    /// Column shared by all (at least two) same-line comments, if any.
    align: Option<usize>,
    default_indent: String,
    /// Commas the closer held (the trailing-comma choice).
    closer_commas: usize,
    blocks: Vec<Block>,
}

fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

fn blank_only(s: &str) -> bool {
    s.bytes().all(is_blank)
}

/// Characters between the start of `offset`'s line and `offset`.
pub(crate) fn col_at(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..offset].chars().count()
}

/// `"\r\n"` if the first newline of `text` is one, else `"\n"`.
pub(crate) fn newline_of(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Blank,
    Comment,
    /// Holds a comma (comma-first style or a comma on its own line).
    Other,
}

fn kind(line: &str) -> Kind {
    let t = line
        .trim_end_matches(['\n', '\r'])
        .trim_start_matches([' ', '\t']);
    if t.is_empty() {
        Kind::Blank
    } else if t.starts_with('#') {
        Kind::Comment
    } else {
        Kind::Other
    }
}

/// Commas outside a comment.
fn commas(s: &str) -> usize {
    let code = s.find('#').map_or(s, |i| &s[..i]);
    code.matches(',').count()
}

/// A gap cut into its first line and the rest.
struct Parts<'a> {
    first: &'a str,
    rest: Option<(&'a str, Vec<&'a str>, &'a str)>,
}

fn split_gap(gap: &str) -> Parts<'_> {
    let Some(i) = gap.find('\n') else {
        return Parts {
            first: gap,
            rest: None,
        };
    };
    let (first, nl) = if i > 0 && gap.as_bytes()[i - 1] == b'\r' {
        (&gap[..i - 1], &gap[i - 1..=i])
    } else {
        (&gap[..i], &gap[i..=i])
    };
    let mut lines = Vec::new();
    let mut rest = &gap[i + 1..];
    while let Some(j) = rest.find('\n') {
        lines.push(&rest[..=j]);
        rest = &rest[j + 1..];
    }
    Parts {
        first,
        rest: Some((nl, lines, rest)),
    }
}

/// Read the text after a value on its line: spaces, a comma, a comment.
fn parse_tail(first: &str, abs: usize, text: &str) -> Result<(Tail, Option<Comment>), Unreadable> {
    let b = first.as_bytes();
    let mut i = 0;
    while i < b.len() && is_blank(b[i]) {
        i += 1;
    }
    let (pre, comma, post_start) = if b.get(i) == Some(&b',') {
        (&first[..i], true, i + 1)
    } else {
        ("", false, 0)
    };
    let mut j = post_start;
    while j < b.len() && is_blank(b[j]) {
        j += 1;
    }
    let post = &first[post_start..j];
    let rest = &first[j..];
    if rest.is_empty() {
        Ok((
            Tail {
                pre: pre.to_string(),
                comma,
                post: post.to_string(),
            },
            None,
        ))
    } else if rest.starts_with('#') {
        let comment = Comment {
            pre: pre.to_string(),
            post: post.to_string(),
            text: rest.to_string(),
            col: col_at(text, abs + j),
        };
        let tail = Tail {
            pre: String::new(),
            comma,
            post: String::new(),
        };
        Ok((tail, Some(comment)))
    } else {
        Err(Unreadable { at: abs + j })
    }
}

/// The break of a gap; with `lead`, splits off the comment lines directly
/// above the next value. Returns the break, the lead and the indentation.
fn parse_break(
    rest: Option<(&str, Vec<&str>, &str)>,
    lead: bool,
) -> (Option<Break>, Vec<String>, Option<String>) {
    let Some((nl, lines, indent)) = rest else {
        return (None, Vec::new(), None);
    };
    let mut split = lines.len();
    if lead {
        while split > 0 && kind(lines[split - 1]) == Kind::Comment {
            split -= 1;
        }
    }
    let own = lines[split..].iter().map(|s| s.to_string()).collect();
    let brk = Break {
        nl: nl.to_string(),
        lines: lines[..split].iter().map(|s| s.to_string()).collect(),
        indent: indent.to_string(),
    };
    let elem_indent = blank_only(indent).then(|| indent.to_string());
    (Some(brk), own, elem_indent)
}

fn slice(text: &str, r: Range<usize>) -> Result<&str, Unreadable> {
    text.get(r.clone()).ok_or(Unreadable { at: r.start })
}

/// The bytes between element `k - 1` and element `k` of an array whose
/// inside is `inner` (from the opening bracket for `k == 0`, to the closing
/// one for the last).
fn gap_range(inner: &Range<usize>, elements: &[Range<usize>], k: usize) -> Range<usize> {
    let start = if k == 0 {
        inner.start
    } else {
        elements[k - 1].end
    };
    let end = if k == elements.len() {
        inner.end
    } else {
        elements[k].start
    };
    start..end
}

impl ArrayLayout {
    /// Cut the array at `span` in `text`, whose element values stand at
    /// `elements` and decode to `names`.
    pub fn parse(
        text: &str,
        span: Range<usize>,
        elements: &[Range<usize>],
        names: &[String],
    ) -> Result<ArrayLayout, Unreadable> {
        let whole = slice(text, span.clone())?;
        if !whole.starts_with('[') || !whole.ends_with(']') || whole.len() < 2 {
            return Err(Unreadable { at: span.start });
        }
        let inner = span.start + 1..span.end - 1;
        let nl = if whole.contains('\n') {
            newline_of(whole)
        } else {
            newline_of(text)
        };
        let mut layout = ArrayLayout::blank(nl, col_at(text, span.start));
        if elements.is_empty() {
            layout.parse_empty(slice(text, inner.clone())?);
            return Ok(layout);
        }
        if names.len() != elements.len() {
            return Err(Unreadable { at: span.start });
        }
        // Opener.
        let r0 = gap_range(&inner, elements, 0);
        let parts = split_gap(slice(text, r0.clone())?);
        if commas(parts.first) > 0 {
            return Err(Unreadable { at: r0.start });
        }
        layout.opener.tail.pre = parts.first.to_string();
        let (brk, lead, indent) = parse_break(parts.rest, true);
        layout.opener.brk = brk;
        layout.parse_elements(text, &inner, elements, names, lead, indent)?;
        layout.finish();
        Ok(layout)
    }

    /// A layout with nothing in it yet.
    fn blank(nl: &str, start_col: usize) -> ArrayLayout {
        let gap = || Gap {
            tail: Tail::default(),
            brk: None,
        };
        ArrayLayout {
            opener: gap(),
            seps: Vec::new(),
            closer: gap(),
            elems: Vec::new(),
            nl: nl.to_string(),
            start_col,
            align: None,
            default_indent: String::new(),
            closer_commas: 0,
            blocks: Vec::new(),
        }
    }

    /// Each element with the gap after it: a separator, or the closer
    /// after the last. `lead` and `indent` are what the opener's break
    /// left for the first element.
    fn parse_elements(
        &mut self,
        text: &str,
        inner: &Range<usize>,
        elements: &[Range<usize>],
        names: &[String],
        mut lead: Vec<String>,
        mut indent: Option<String>,
    ) -> Result<(), Unreadable> {
        let n = elements.len();
        for k in 0..n {
            let value = slice(text, elements[k].clone())?;
            let r = gap_range(inner, elements, k + 1);
            let gap = slice(text, r.clone())?;
            let parts = split_gap(gap);
            let (tail, comment) = parse_tail(parts.first, r.start, text)?;
            self.elems.push(Elem {
                name: names[k].clone(),
                id: Some(k),
                value: value.to_string(),
                lead: std::mem::take(&mut lead),
                indent: indent.take(),
                comment,
            });
            let last = k + 1 == n;
            let (mut brk, l, i) = parse_break(parts.rest, !last);
            if !last
                && let Some(b) = &mut brk
                && b.lines.iter().any(|l| kind(l) == Kind::Comment)
                && b.lines.iter().all(|l| kind(l) != Kind::Other)
            {
                self.blocks.push(Block {
                    lines: std::mem::take(&mut b.lines),
                    after: k,
                    anchor: Some(k),
                });
            }
            let g = Gap { tail, brk };
            if last {
                self.closer_commas = g.commas();
                self.closer = g;
            } else {
                if g.commas() != 1 {
                    return Err(Unreadable { at: r.start });
                }
                self.seps.push(g);
            }
            lead = l;
            indent = i;
        }
        Ok(())
    }

    /// An empty array: keep its inside as the opener and closer.
    fn parse_empty(&mut self, inner: &str) {
        let parts = split_gap(inner);
        match parts.rest {
            None => {
                // `[ ]`: elements will go in as `["a", "b"]`.
                self.opener.tail.pre = String::new();
            }
            Some((nl, lines, indent)) => {
                self.opener.tail.pre = parts.first.to_string();
                let guess = lines
                    .iter()
                    .rev()
                    .find(|l| kind(l) == Kind::Comment)
                    .map(|l| {
                        let t = l.trim_start_matches([' ', '\t']);
                        l[..l.len() - t.len()].to_string()
                    })
                    .unwrap_or_else(|| format!("{indent}    "));
                self.opener.brk = Some(Break {
                    nl: nl.to_string(),
                    lines: lines.iter().map(|s| s.to_string()).collect(),
                    indent: guess.clone(),
                });
                self.closer = Gap {
                    tail: Tail {
                        pre: String::new(),
                        comma: true,
                        post: String::new(),
                    },
                    brk: Some(Break {
                        nl: nl.to_string(),
                        lines: Vec::new(),
                        indent: indent.to_string(),
                    }),
                };
                self.closer_commas = 1;
                self.default_indent = guess;
            }
        }
    }

    /// Work out alignment and the default indentation.
    fn finish(&mut self) {
        let cols: Vec<&Comment> = self
            .elems
            .iter()
            .filter_map(|e| e.comment.as_ref())
            .collect();
        self.align = match cols.first() {
            Some(c)
                if cols.len() >= 2
                    && cols
                        .iter()
                        .all(|d| d.col == c.col && d.post.bytes().all(|b| b == b' ')) =>
            {
                Some(c.col)
            }
            _ => None,
        };
        let indent = std::iter::once(&self.opener)
            .chain(self.seps.iter())
            .filter_map(|g| g.brk.as_ref())
            .map(|b| &b.indent)
            .find(|i| blank_only(i))
            .cloned();
        self.default_indent = match (indent, &self.closer.brk) {
            (Some(i), _) => i,
            (None, Some(b)) if blank_only(&b.indent) => format!("{}    ", b.indent),
            _ => String::new(),
        };
    }

    pub fn names(&self) -> Vec<String> {
        self.elems.iter().map(|e| e.name.clone()).collect()
    }

    /// A new element, quoted like its neighbour.
    pub fn new_elem(&self, name: &str, near: usize) -> Elem {
        let single = self
            .elems
            .get(near)
            .or_else(|| self.elems.last())
            .is_some_and(|e| e.value.starts_with('\''));
        let value = if single {
            format!("'{name}'")
        } else {
            format!("\"{name}\"")
        };
        Elem {
            name: name.to_string(),
            id: None,
            value,
            lead: Vec::new(),
            indent: None,
            comment: None,
        }
    }

    /// Drop the element at `r` and one separator, keeping the positional
    /// lines of both gaps around it. Returns the element.
    pub fn remove(&mut self, r: usize) -> Option<Elem> {
        let n = self.elems.len();
        if r >= n {
            return None;
        }
        let elem = self.elems.remove(r);
        if n == 1 || self.seps.len() + 1 != n {
            return Some(elem);
        }
        if r == 0 {
            let b = self.seps.remove(0);
            let brk = match (self.opener.brk.take(), b.brk) {
                (None, None) => None,
                (None, Some(y)) => has_lines(&y).then_some(y),
                (Some(x), None) => Some(x),
                (Some(x), Some(y)) => Some(Break {
                    lines: join_lines(x.lines, y.lines),
                    nl: x.nl,
                    indent: x.indent,
                }),
            };
            self.opener.brk = brk;
            self.opener.fix_commas(0);
        } else if r == n - 1 {
            let a = self.seps.remove(n - 2);
            let brk = match (a.brk, self.closer.brk.take()) {
                (None, None) => None,
                (Some(x), None) => has_lines(&x).then(|| Break {
                    nl: x.nl,
                    lines: x.lines,
                    indent: String::new(),
                }),
                (None, Some(y)) => Some(y),
                (Some(x), Some(y)) => Some(Break {
                    lines: join_lines(x.lines, y.lines),
                    nl: y.nl,
                    indent: y.indent,
                }),
            };
            self.closer.brk = brk;
            let want = self.closer_commas;
            self.closer.fix_commas(want);
        } else {
            let b = self.seps.remove(r);
            let a = &mut self.seps[r - 1];
            let brk = match (a.brk.take(), b.brk) {
                (None, None) => None,
                (Some(x), None) => Some(x),
                (None, Some(y)) => has_lines(&y).then_some(y),
                (Some(x), Some(y)) => Some(Break {
                    lines: join_lines(x.lines, y.lines),
                    nl: x.nl,
                    indent: y.indent,
                }),
            };
            a.brk = brk;
            a.fix_commas(1);
        }
        Some(elem)
    }

    /// Insert `elem` at `i` (at most the length), adding a separator styled
    /// like its neighbour.
    pub fn insert(&mut self, i: usize, elem: Elem) {
        let n = self.elems.len();
        let i = i.min(n);
        if n == 0 {
            self.elems.push(elem);
            return;
        }
        let at = i.min(n - 1);
        // The separator before the insertion point (the first one at 0).
        let near = self.seps.get(at.saturating_sub(1));
        let mut sep = match near {
            Some(g) => Gap {
                tail: g.tail.clone(),
                brk: g.brk.as_ref().map(|b| Break {
                    nl: b.nl.clone(),
                    lines: Vec::new(),
                    indent: b.indent.clone(),
                }),
            },
            None => match &self.opener.brk {
                Some(b) => Gap {
                    tail: Tail::default(),
                    brk: Some(Break {
                        nl: b.nl.clone(),
                        lines: Vec::new(),
                        indent: if blank_only(&b.indent) {
                            b.indent.clone()
                        } else {
                            self.default_indent.clone()
                        },
                    }),
                },
                None => Gap {
                    tail: Tail {
                        pre: String::new(),
                        comma: true,
                        post: " ".to_string(),
                    },
                    brk: None,
                },
            },
        };
        sep.fix_commas(1);
        self.elems.insert(i, elem);
        self.seps.insert(at, sep);
    }

    /// Put the elements in the order of `order` (indices into `elems`).
    pub fn permute(&mut self, order: &[usize]) {
        self.elems = super::permuted(std::mem::take(&mut self.elems), order);
    }

    /// Anchor each detached comment block to the nearest element before it
    /// that does not move (`unmoved` by original index).
    pub fn anchor(&mut self, unmoved: &[bool]) {
        for b in &mut self.blocks {
            b.anchor = (0..=b.after).rev().find(|&i| unmoved.get(i) == Some(&true));
        }
    }

    /// Put the detached blocks back: right after their anchor, or after the
    /// `[` line when nothing before them stayed.
    pub fn place_blocks(&mut self) {
        let blocks = std::mem::take(&mut self.blocks);
        let mut to_closer: Vec<String> = Vec::new();
        for b in blocks {
            let at = b
                .anchor
                .and_then(|id| self.elems.iter().position(|e| e.id == Some(id)));
            let gap = match at {
                None => &mut self.opener,
                Some(j) if j + 1 < self.elems.len() => match self.seps.get_mut(j) {
                    Some(g) => g,
                    None => &mut self.closer,
                },
                Some(_) => {
                    to_closer = join_lines(to_closer, b.lines);
                    continue;
                }
            };
            match &mut gap.brk {
                Some(brk) => brk.lines = join_lines(std::mem::take(&mut brk.lines), b.lines),
                None => {
                    gap.brk = Some(Break {
                        nl: self.nl.clone(),
                        lines: b.lines,
                        indent: self.default_indent.clone(),
                    })
                }
            }
        }
        if !to_closer.is_empty() {
            match &mut self.closer.brk {
                Some(brk) => brk.lines = join_lines(to_closer, std::mem::take(&mut brk.lines)),
                None => {
                    self.closer.brk = Some(Break {
                        nl: self.nl.clone(),
                        lines: to_closer,
                        indent: String::new(),
                    })
                }
            }
        }
    }

    /// The array text, `[` to `]`.
    pub fn render(&self) -> String {
        let mut w = Writer {
            out: String::new(),
            col: self.start_col,
        };
        w.push("[");
        w.push(&self.opener.tail.pre);
        let Some(first) = self.elems.first() else {
            if let Some(b) = &self.opener.brk {
                w.push(&b.nl);
                for l in &b.lines {
                    w.push(l);
                }
            }
            if let Some(b) = &self.closer.brk {
                w.push(&b.indent);
            }
            w.push("]");
            return w.out;
        };
        self.emit_break(&mut w, self.opener.brk.as_ref(), false, Some(first));
        w.push(&first.value);
        for (k, e) in self.elems.iter().enumerate().skip(1) {
            let prev = &self.elems[k - 1];
            let sep = self.seps.get(k - 1).unwrap_or(&self.closer);
            self.emit_tail(&mut w, &sep.tail, prev);
            self.emit_break(&mut w, sep.brk.as_ref(), prev.comment.is_some(), Some(e));
            w.push(&e.value);
        }
        if let Some(last) = self.elems.last() {
            self.emit_tail(&mut w, &self.closer.tail, last);
            self.emit_break(
                &mut w,
                self.closer.brk.as_ref(),
                last.comment.is_some(),
                None,
            );
        }
        w.push("]");
        w.out
    }

    fn emit_tail(&self, w: &mut Writer, tail: &Tail, e: &Elem) {
        match &e.comment {
            None => {
                w.push(&tail.pre);
                if tail.comma {
                    w.push(",");
                }
                w.push(&tail.post);
            }
            Some(c) => {
                w.push(&c.pre);
                if tail.comma {
                    w.push(",");
                }
                match self.align {
                    Some(col) if c.post.bytes().all(|b| b == b' ') => {
                        let min = usize::from(!c.post.is_empty());
                        let pad = col.saturating_sub(w.col).max(min);
                        w.push(&" ".repeat(pad));
                    }
                    _ => w.push(&c.post),
                }
                w.push(&c.text);
            }
        }
    }

    fn emit_break(
        &self,
        w: &mut Writer,
        brk: Option<&Break>,
        after_comment: bool,
        next: Option<&Elem>,
    ) {
        let lead: &[String] = next.map_or(&[], |e| &e.lead);
        let old_indent = next.and_then(|e| e.indent.as_deref());
        match brk {
            Some(b) => {
                w.push(&b.nl);
                for l in &b.lines {
                    w.push(l);
                }
                let new_indent = blank_only(&b.indent).then_some(b.indent.as_str());
                for l in lead {
                    w.push(&reindent(l, old_indent, new_indent));
                }
                w.push(&b.indent);
            }
            None if after_comment || !lead.is_empty() => {
                // The editor must break the line: a comment now ends it, or
                // comment lines must stand above the value.
                w.push(&self.nl);
                let indent = match next {
                    Some(e) => e.indent.as_deref().unwrap_or(&self.default_indent),
                    None => "",
                };
                for l in lead {
                    w.push(&reindent(l, old_indent, Some(indent)));
                }
                w.push(indent);
            }
            None => {}
        }
    }
}

fn has_lines(b: &Break) -> bool {
    !b.lines.is_empty()
}

/// Concatenate two runs of lines, keeping at most the longer run of blank
/// lines where they meet.
fn join_lines(x: Vec<String>, y: Vec<String>) -> Vec<String> {
    let xb = x
        .iter()
        .rev()
        .take_while(|l| kind(l) == Kind::Blank)
        .count();
    let yb = y.iter().take_while(|l| kind(l) == Kind::Blank).count();
    let skip = xb.min(yb);
    let mut out = x;
    out.extend(y.into_iter().skip(skip));
    out
}

/// Swap a comment line's indentation `old` for `new` when it had exactly the
/// indentation of its value.
fn reindent(line: &str, old: Option<&str>, new: Option<&str>) -> String {
    if let (Some(old), Some(new)) = (old, new)
        && let Some(rest) = line.strip_prefix(old)
        && rest.starts_with('#')
    {
        return format!("{new}{rest}");
    }
    line.to_string()
}

impl Gap {
    fn commas(&self) -> usize {
        usize::from(self.tail.comma)
            + self.brk.as_ref().map_or(0, |b| {
                b.lines.iter().map(|l| commas(l)).sum::<usize>() + commas(&b.indent)
            })
    }

    /// Make the gap hold exactly `want` (0 or 1) commas: extra ones go from
    /// comma lines, then the indentation, then the tail; a missing one is
    /// added after the value.
    fn fix_commas(&mut self, want: usize) {
        let mut have = self.commas();
        while have > want {
            if let Some(b) = &mut self.brk {
                if let Some(pos) = b.lines.iter().rposition(|l| commas(l) > 0) {
                    let line = remove_comma(&b.lines[pos]);
                    if kind(&line) == Kind::Blank {
                        b.lines.remove(pos);
                    } else {
                        b.lines[pos] = line;
                    }
                    have -= 1;
                    continue;
                }
                if commas(&b.indent) > 0 {
                    b.indent = remove_comma(&b.indent);
                    have -= 1;
                    continue;
                }
            }
            if self.tail.comma {
                self.tail.comma = false;
                have -= 1;
                continue;
            }
            break;
        }
        if have < want {
            self.tail.comma = true;
        }
    }
}

fn remove_comma(s: &str) -> String {
    let code = s.find('#').unwrap_or(s.len());
    match s[..code].find(',') {
        Some(i) => format!("{}{}", &s[..i], &s[i + 1..]),
        None => s.to_string(),
    }
}

struct Writer {
    out: String,
    col: usize,
}

impl Writer {
    fn push(&mut self, s: &str) {
        self.out.push_str(s);
        match s.rfind('\n') {
            Some(i) => self.col = s[i + 1..].chars().count(),
            None => self.col += s.chars().count(),
        }
    }
}
