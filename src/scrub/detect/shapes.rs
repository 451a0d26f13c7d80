//! Two shapes that no prefix announces: a key split into random runs
//! joined by dots (`<16>.<16>.<16>.<16>`), and base64 that decodes to
//! `user:<token>` (`eDpnaHBf…`, GitHub's `x:ghp_…` as a git credential
//! helper or `http.extraheader` writes it), wherever it stands.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use super::{Kind, PRIO_CONTEXT, PRIO_TOKEN, Scanner, Span, classes, is_b64, is_tok, token_at};

/// The shortest piece of a dotted key, and the fewest pieces.
const PIECE_MIN: usize = 12;
const PIECE_MAX: usize = 64;
const PIECES_MIN: usize = 3;
/// Longest dotted word looked at.
const WORD_MAX: usize = 1024;

/// Finds the dots (memchr, through a one-byte automaton): the clean path
/// pays one vectorised pass over a text for this rule.
static DOT: LazyLock<AhoCorasick> =
    LazyLock::new(|| AhoCorasick::new(["."]).expect("one literal pattern"));

fn is_tok_dot(c: u8) -> bool {
    is_tok(c) || c == b'.'
}

/// Whether `piece` reads as words and numbers: every hump of letters (a
/// capital and lower case, lower case, or capitals) has three letters or
/// more (`ProductionWorker2024`, `GPUNode17`, `build-2024-final`). A
/// random run has one- and two-letter humps.
fn reads_as_words(piece: &[u8]) -> bool {
    let mut i = 0;
    while i < piece.len() {
        let c = piece[i];
        let start = i;
        if !c.is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        i += 1;
        if c.is_ascii_uppercase() && piece.get(i).is_some_and(u8::is_ascii_lowercase) {
            while piece.get(i).is_some_and(u8::is_ascii_lowercase) {
                i += 1;
            }
        } else if c.is_ascii_uppercase() {
            // `GPUNode`: the last capital before lower case starts a word.
            while piece.get(i).is_some_and(u8::is_ascii_uppercase)
                && !piece.get(i + 1).is_some_and(u8::is_ascii_lowercase)
            {
                i += 1;
            }
        } else {
            while piece.get(i).is_some_and(u8::is_ascii_lowercase) {
                i += 1;
            }
        }
        if i - start < 3 {
            return false;
        }
    }
    true
}

/// Whether the word `w` (no leading or trailing dot) is a key split by
/// dots: at least three pieces of 12 to 64 token characters, each mixing
/// classes, at most one in four reading as words ([`reads_as_words`]),
/// the whole with upper case, lower case and digits. A hostname, a Java
/// package, a version or a dotted hex hash (no upper case) is not one.
fn is_dotted_key(w: &[u8]) -> bool {
    let (mut n, mut words) = (0, 0);
    for piece in w.split(|&c| c == b'.') {
        if !(PIECE_MIN..=PIECE_MAX).contains(&piece.len()) || classes(piece) < 2 {
            return false;
        }
        n += 1;
        words += usize::from(reads_as_words(piece));
    }
    // A random piece reads as words by chance now and then: one of four
    // may.
    n >= PIECES_MIN && classes(w) == 3 && words <= n / 4
}

/// The dotted keys of `b`, as spans. Each word is read once: a dot inside
/// a word already read is skipped.
pub(super) fn dotted_keys(b: &[u8], out: &mut Vec<Span>) {
    let mut done = 0;
    for m in DOT.find_iter(b) {
        let dot = m.start();
        if dot < done || dot < PIECE_MIN || !b[dot - PIECE_MIN..dot].iter().all(|&c| is_tok(c)) {
            continue;
        }
        let mut s = dot;
        while s > done && dot - s < WORD_MAX && is_tok_dot(b[s - 1]) {
            s -= 1;
        }
        let lim = b.len().min(s + WORD_MAX);
        let mut e = dot;
        while e < lim && is_tok_dot(b[e]) {
            e += 1;
        }
        done = e;
        while s < e && b[s] == b'.' {
            s += 1;
        }
        let mut z = e;
        while z > s && b[z - 1] == b'.' {
            z -= 1;
        }
        let glued = (s > 0 && is_tok_dot(b[s - 1])) || (e < b.len() && is_tok_dot(b[e]));
        if !glued && is_dotted_key(&b[s..z]) {
            out.push(Span {
                start: s,
                end: z,
                kind: Kind::Token,
                // A known shape's own kind wins (a JWT's three parts).
                prio: PRIO_CONTEXT,
            });
        }
    }
}

/// The shortest and the longest base64 credential looked at.
const B64_MIN: usize = 16;
const B64_MAX: usize = 1024;

impl Scanner<'_> {
    /// A base64 word around the trigger at `ms` that decodes to printable
    /// `user:<token of a known family>`: the whole word is a credential.
    pub(super) fn b64_credential(&mut self, ms: usize) {
        use base64::Engine as _;
        use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
        const B64: GeneralPurpose = GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
        );
        let b = self.b;
        if ms < self.b64_done {
            return;
        }
        let mut s = ms;
        while s > self.b64_done && ms - s < B64_MAX && is_b64(b[s - 1]) {
            s -= 1;
        }
        let lim = b.len().min(s + B64_MAX);
        let mut e = ms;
        while e < lim && is_b64(b[e]) {
            e += 1;
        }
        self.b64_done = e;
        for _ in 0..2 {
            if b.get(e) == Some(&b'=') {
                e += 1;
            }
        }
        if e - s < B64_MIN || (s > 0 && is_b64(b[s - 1])) {
            return;
        }
        let Ok(plain) = B64.decode(&b[s..e]) else {
            return;
        };
        if !plain.iter().all(|&c| (0x20..0x7f).contains(&c)) {
            return;
        }
        let Some(colon) = plain.iter().position(|&c| c == b':') else {
            return;
        };
        if token_at(&plain, colon + 1).is_some_and(|(_, t)| t.hit.is_some()) {
            self.emit(s, e, Kind::Authorization, PRIO_TOKEN);
        }
    }
}
