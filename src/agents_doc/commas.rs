//! The env-style form, `"opencode, claude"`: only the tokens move; the quotes
//! and the whitespace at each position stay.

/// The string cut into position-owned whitespace and element-owned tokens.
#[derive(Clone, Debug)]
pub(crate) struct CommaLayout {
    open: String,
    close: String,
    /// Whitespace before the first token.
    opener: String,
    /// `seps[k]`: whitespace before and after the comma between token `k`
    /// and token `k + 1`.
    seps: Vec<(String, String)>,
    /// Whitespace after the last token.
    closer: String,
    pub tokens: Vec<String>,
    /// The raw text holds escapes: write a fresh string with the same quotes.
    fallback: bool,
}

fn delimiters(raw: &str) -> Option<(&'static str, bool)> {
    for (d, basic) in [("\"\"\"", true), ("'''", false), ("\"", true), ("'", false)] {
        if raw.len() >= 2 * d.len() && raw.starts_with(d) && raw.ends_with(d) {
            return Some((d, basic));
        }
    }
    None
}

impl CommaLayout {
    /// Cut the raw string `raw` (quotes included) whose tokens are `names`.
    pub fn parse(raw: &str, names: &[String]) -> CommaLayout {
        let (delim, basic) = delimiters(raw).unwrap_or(("\"", true));
        let mut layout = CommaLayout {
            open: delim.to_string(),
            close: delim.to_string(),
            opener: String::new(),
            seps: Vec::new(),
            closer: String::new(),
            tokens: names.to_vec(),
            fallback: true,
        };
        let Some(content) = raw.get(delim.len()..raw.len().saturating_sub(delim.len())) else {
            return layout;
        };
        if basic && content.contains('\\') {
            return layout;
        }
        if names.is_empty() {
            if content.trim().is_empty() {
                layout.opener = content.to_string();
                layout.fallback = false;
            }
            return layout;
        }
        let pieces: Vec<&str> = content.split(',').collect();
        if pieces.len() != names.len() {
            return layout;
        }
        let mut leads = Vec::with_capacity(pieces.len());
        let mut trails = Vec::with_capacity(pieces.len());
        for (piece, name) in pieces.iter().zip(names) {
            let token = piece.trim();
            if token != name {
                return layout;
            }
            let lead = piece.len() - piece.trim_start().len();
            let trail = piece.trim_end().len();
            leads.push(&piece[..lead]);
            trails.push(&piece[trail..]);
        }
        layout.opener = leads[0].to_string();
        layout.closer = trails[trails.len() - 1].to_string();
        layout.seps = (1..pieces.len())
            .map(|k| (trails[k - 1].to_string(), leads[k].to_string()))
            .collect();
        layout.fallback = false;
        layout
    }

    pub fn remove(&mut self, r: usize) -> Option<String> {
        let n = self.tokens.len();
        if r >= n {
            return None;
        }
        let token = self.tokens.remove(r);
        if n == 1 || self.fallback {
            return Some(token);
        }
        if r == 0 {
            self.seps.remove(0);
        } else if r == n - 1 {
            self.seps.remove(n - 2);
        } else {
            let b = self.seps.remove(r);
            self.seps[r - 1].1 = b.1;
        }
        Some(token)
    }

    pub fn insert(&mut self, i: usize, name: &str) {
        let n = self.tokens.len();
        let i = i.min(n);
        self.tokens.insert(i, name.to_string());
        if n == 0 || self.fallback {
            return;
        }
        let at = i.min(n - 1);
        // The separator before the insertion point (the first one at 0).
        let near = self.seps.get(at.saturating_sub(1));
        let sep = near.cloned().unwrap_or_default();
        self.seps.insert(at, sep);
    }

    pub fn permute(&mut self, order: &[usize]) {
        self.tokens = super::permuted(std::mem::take(&mut self.tokens), order);
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str(&self.open);
        if self.fallback {
            out.push_str(&self.tokens.join(","));
        } else {
            out.push_str(&self.opener);
            for (k, t) in self.tokens.iter().enumerate() {
                if k > 0 {
                    let (a, b) = self.seps.get(k - 1).map_or(("", ""), |(a, b)| (a, b));
                    out.push_str(a);
                    out.push(',');
                    out.push_str(b);
                }
                out.push_str(t);
            }
            if !self.tokens.is_empty() {
                out.push_str(&self.closer);
            }
        }
        out.push_str(&self.close);
        out
    }
}
