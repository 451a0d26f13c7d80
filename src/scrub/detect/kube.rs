//! A Kubernetes `Secret` as YAML (what `kubectl get secret -o yaml`, a
//! `helm template` or an agent's `cat` prints): every value under its
//! `data:` (base64 of the secret) and `stringData:` (the secret in clear)
//! is a secret, whatever its key is called (`extra`, `.dockercfg`,
//! `ca.pem`), so the key name cannot tell. The trigger is `secret`; it
//! counts only as the whole value of a `kind:` line, so `ExternalSecret`,
//! `SopsSecret` and `SecretStore` do not. The manifest is the text between
//! `---` lines, at most [`WINDOW`] bytes either side of the `kind:` line,
//! and `data:` must sit at the `kind:` line's indentation (the top level).

use super::{Kind, PRIO_CONTEXT, Scanner, is_space, reference_at, scan_while};

/// Where `needle` first starts in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Where `needle` last starts in `hay`.
fn find_last(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// How far from its `kind:` line a manifest's `data:` is looked for.
const WINDOW: usize = 4096;

/// A `data:` value shorter than this (base64, before its `=` padding) is
/// not taken: `YmFyCg==` is what gitleaks' own false positives hold.
const MIN_BASE64: usize = 10;

/// The line `i` is in: `(start, end)`, end at its `\n` or the text's end;
/// looked for no further than [`WINDOW`] either way (a longer line is cut
/// there: no manifest has one).
fn line_at(b: &[u8], i: usize) -> (usize, usize) {
    let lo = i.saturating_sub(WINDOW);
    let hi = b.len().min(i + WINDOW);
    let s = b[lo..i]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(lo, |p| lo + p + 1);
    let e = b[i..hi]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(hi, |p| i + p);
    (s, e)
}

/// Leading blanks of a line.
fn indent(line: &[u8]) -> usize {
    line.iter()
        .take_while(|&&c| c == b' ' || c == b'\t')
        .count()
}

/// A document separator: `---` at the start of a line, then blanks.
fn is_separator(line: &[u8]) -> bool {
    line.starts_with(b"---") && line[3..].iter().all(|&c| is_space(c))
}

/// Blank, or only a comment.
fn is_empty_line(line: &[u8]) -> bool {
    let rest = &line[indent(line)..];
    rest.iter().all(|&c| is_space(c)) || rest.starts_with(b"#")
}

impl Scanner<'_> {
    /// `kind: Secret` at `ms..me` (any case, any quotes): redact the
    /// values of its manifest's `data:` and `stringData:`.
    pub(super) fn kube(&mut self, ms: usize, me: usize) {
        let b = self.b;
        if ms < self.kube_done {
            return;
        }
        if ms > 0 && b[ms - 1] == b'"' {
            self.kube_json(ms, me);
        }
        // `Secret`, in quotes or not, is the whole value of a `kind:` line:
        // checked on the bytes just before it first, so that text without
        // line ends (`secret secret …`) costs no scan of its line.
        let quote = (ms > 0 && matches!(b[ms - 1], b'"' | b'\'')).then(|| b[ms - 1]);
        let before = b[..ms - usize::from(quote.is_some())].trim_ascii_end();
        if !before.ends_with(b"kind:") {
            return;
        }
        let mut e = me;
        if let Some(q) = quote {
            if b.get(e) != Some(&q) {
                return;
            }
            e += 1;
        }
        let (ls, le) = line_at(b, ms);
        if !b[e..le].iter().all(|&c| is_space(c)) {
            return;
        }
        let head = &b[ls..ms - usize::from(quote.is_some())];
        let ind = indent(head);
        let key = head[ind..].trim_ascii_end();
        if key != b"kind:" {
            return;
        }
        // The manifest: back and on to a `---` line, within the window.
        let lo = ms.saturating_sub(WINDOW);
        let mut start = ls;
        while start > lo {
            let (ps, pe) = line_at(b, start - 1);
            if ps < lo || is_separator(&b[ps..pe]) {
                break;
            }
            start = ps;
        }
        let hi = b.len().min(ms + WINDOW);
        let mut end = le;
        while end < hi {
            let (ns, ne) = line_at(b, end + 1);
            if ne > hi || is_separator(&b[ns..ne]) {
                break;
            }
            end = ne;
        }
        self.kube_done = end;
        // Each top-level `data:` / `stringData:` in it.
        let mut i = start;
        while i < end {
            let (s, e) = line_at(b, i);
            let line = &b[s..e];
            let body = line[indent(line)..].trim_ascii_end();
            if indent(line) == ind && (body == b"data:" || body == b"stringData:") {
                i = self.kube_block(e, end, ind, body == b"data:");
            } else {
                i = e + 1;
            }
        }
    }

    /// The JSON form, `"kind": "Secret"` (`kubectl get -o json`, an error
    /// that prints the object, the `last-applied-configuration`
    /// annotation, with its quotes escaped or not): the string values of
    /// its object's `"data": {…}` and `"stringData": {…}`. The object runs
    /// from the `"apiVersion"` before the kind (kubectl writes it first)
    /// to the next one, within the window.
    fn kube_json(&mut self, ms: usize, me: usize) {
        let b = self.b;
        let esc = ms >= 2 && b[ms - 2] == b'\\';
        let q: &[u8] = if esc { b"\\\"" } else { b"\"" };
        if !b[me..].starts_with(q) {
            return;
        }
        // Back over `"kind": `.
        let mut k = ms - q.len();
        while k > 0 && is_space(b[k - 1]) {
            k -= 1;
        }
        if k == 0 || b[k - 1] != b':' {
            return;
        }
        k -= 1;
        while k > 0 && is_space(b[k - 1]) {
            k -= 1;
        }
        let kind_key = [q, b"kind", q].concat();
        if !b[..k].ends_with(&kind_key) {
            return;
        }
        let api = [q, b"apiVersion", q].concat();
        let lo = ms.saturating_sub(WINDOW);
        let hi = b.len().min(me + WINDOW);
        let start = find_last(&b[lo..ms], &api).map_or(lo, |p| lo + p);
        let end = find(&b[me..hi], &api).map_or(hi, |p| me + p);
        self.kube_done = end;
        for name in [&b"data"[..], b"stringData"] {
            let key = [q, name, q].concat();
            let mut i = start;
            while let Some(p) = find(&b[i..end], &key) {
                i += p + key.len();
                i = self.kube_json_object(i, end, q, name == b"data");
            }
        }
    }

    /// After a `"data"` key: `: { "k": "v", … }`; every value. Returns
    /// where reading stopped.
    fn kube_json_object(&mut self, mut i: usize, end: usize, q: &[u8], base64: bool) -> usize {
        let b = self.b;
        let blank = |i: usize| scan_while(&b[..end], i, |c| c.is_ascii_whitespace());
        i = blank(i);
        if b.get(i) != Some(&b':') {
            return i;
        }
        i = blank(i + 1);
        if b.get(i) != Some(&b'{') {
            return i;
        }
        i += 1;
        // At most as many entries as there are bytes: bounded by `end`.
        loop {
            i = blank(i);
            if i >= end || b[i] != q[0] || !b[i..end].starts_with(q) {
                return i;
            }
            // The key, then `:`, then the value in quotes.
            let Some(p) = find(&b[i + q.len()..end], q) else {
                return end;
            };
            i = blank(i + q.len() + p + q.len());
            if b.get(i) != Some(&b':') {
                return i;
            }
            i = blank(i + 1);
            if !b[i..end].starts_with(q) {
                return i;
            }
            let vs = i + q.len();
            let Some(p) = find(&b[vs..end], q) else {
                return end;
            };
            let ve = vs + p;
            self.kube_value(vs, ve, base64);
            i = blank(ve + q.len());
            match b.get(i) {
                Some(b',') => i += 1,
                _ => return i,
            }
        }
    }

    /// The entries of a `data:` block that starts after `from` (its lines
    /// indented deeper than `ind`); the offset where it ends.
    fn kube_block(&mut self, from: usize, end: usize, ind: usize, base64: bool) -> usize {
        let b = self.b;
        let mut i = from + 1;
        let mut entry_ind = None;
        while i < end {
            let (s, e) = line_at(b, i);
            let line = &b[s..e];
            if is_empty_line(line) {
                i = e + 1;
                continue;
            }
            let n = indent(line);
            if n <= ind {
                return s;
            }
            if *entry_ind.get_or_insert(n) != n {
                // Deeper than an entry: the rest of a block scalar already
                // taken, or something this reader does not know.
                i = e + 1;
                continue;
            }
            // `key: value`; the key may be quoted, and starts with a dot
            // (`.dockercfg`) or holds one (`ca.pem`).
            let Some(colon) = line[n..]
                .windows(2)
                .position(|w| w[0] == b':' && is_space(w[1]))
                .map(|p| s + n + p)
                .or_else(|| line.ends_with(b":").then(|| e - 1))
            else {
                i = e + 1;
                continue;
            };
            let vs = colon + 1 + b[colon + 1..e].iter().take_while(|&&c| is_space(c)).count();
            let value = b[vs..e].trim_ascii_end();
            let ve = vs + value.len();
            if matches!(value, b"|" | b"|-" | b"|+" | b">" | b">-" | b">+") {
                i = self.kube_scalar(e, end, n);
                continue;
            }
            self.kube_value(vs, ve, base64);
            i = e + 1;
        }
        end
    }

    /// A block scalar (`key: |`): its lines deeper than `ind` after
    /// `from`, redacted from the first one's text to the last one's end.
    fn kube_scalar(&mut self, from: usize, end: usize, ind: usize) -> usize {
        let b = self.b;
        let mut i = from + 1;
        let (mut a, mut z) = (None, 0);
        while i < end {
            let (s, e) = line_at(b, i);
            let line = &b[s..e];
            if !line.iter().all(|&c| is_space(c)) {
                if indent(line) <= ind {
                    break;
                }
                a.get_or_insert(s + indent(line));
                z = s + line.trim_ascii_end().len();
            }
            i = e + 1;
        }
        if let Some(a) = a
            && reference_at(b, a).is_none_or(|r| r < z)
        {
            self.emit(a, z, Kind::Secret, PRIO_CONTEXT);
        }
        i.min(end)
    }

    /// One entry's value, `vs..ve` on its line, quotes and all.
    fn kube_value(&mut self, mut vs: usize, mut ve: usize, base64: bool) {
        let b = self.b;
        if ve > vs + 1 && matches!(b[vs], b'"' | b'\'') && b[ve - 1] == b[vs] {
            vs += 1;
            ve -= 1;
        }
        if vs >= ve || self.stands_in(vs, ve) {
            return;
        }
        let v = &b[vs..ve];
        if base64 {
            let body = v.strip_suffix(b"==").or(v.strip_suffix(b"=")).unwrap_or(v);
            let b64 = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'-' | b'_');
            if body.len() < MIN_BASE64 || !body.iter().all(b64) {
                return;
            }
        }
        self.emit(vs, ve, Kind::Secret, PRIO_CONTEXT);
    }
}
