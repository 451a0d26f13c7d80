//! The text the detectors see when the input hides a secret from them: a
//! key broken by a zero-width space, spelled with full-width hyphens, or
//! glued to a terminal colour code. A "shadow" copy drops invisible and
//! control characters (ESC among them: the rest of a colour code, `[0m`,
//! is left, and a token right after such a code starts a word, see
//! `detect::token_at`), and maps full-width ASCII and Unicode hyphens to
//! ASCII; the detectors scan it, and every finding is mapped back to the
//! original text. Nothing else is dropped, so a placeholder's `[` is never
//! taken for part of a control sequence.
//!
//! Most text needs none of this: printable ASCII (with `\t`, `\n`, `\r`)
//! and text whose non-ASCII characters are all ordinary is left alone, and
//! costs one pass over its bytes, without allocating.

use std::ops::Range;

/// What one original character becomes in the shadow.
enum Map {
    Keep,
    Drop,
    To(char),
}

fn map(c: char) -> Map {
    match c {
        '\t' | '\n' | '\r' => Map::Keep,
        // Full-width ASCII (U+FF01–U+FF5E) and the ideographic space.
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).map_or(Map::Keep, Map::To),
        '\u{3000}' => Map::To(' '),
        // Hyphens and marks that look like `-` (not the en and em dashes of
        // prose): Unicode hyphens, the minus sign, the hyphen bullet, the
        // Armenian, Hebrew and Mongolian hyphens, the modifier and heavy
        // minus, and the (half-width) katakana prolonged sound mark.
        '\u{2010}'..='\u{2012}'
        | '\u{2212}'
        | '\u{FE63}'
        | '\u{2043}'
        | '\u{058A}'
        | '\u{05BE}'
        | '\u{1806}'
        | '\u{02D7}'
        | '\u{2796}'
        | '\u{30FC}'
        | '\u{FF70}' => Map::To('-'),
        c if super::is_unsafe(c) => Map::Drop,
        _ => Map::Keep,
    }
}

/// Cyrillic and Greek letters drawn like ASCII ones (`а` U+0430 for `a`,
/// `о`, `р`, `с`, `х`, `К`, `Τ`, …): inside a word of ASCII letters and
/// digits (`sk-аnt-…` with a Cyrillic `а`) they are read as those letters.
/// A word written wholly in Cyrillic or Greek is left as it is.
fn homoglyph(c: char) -> Option<char> {
    Some(match c {
        'а' | 'α' => 'a',
        'е' => 'e',
        'о' | 'ο' => 'o',
        'р' | 'ρ' => 'p',
        'с' => 'c',
        'у' => 'y',
        'х' => 'x',
        'і' => 'i',
        'ј' => 'j',
        'ѕ' => 's',
        'ԁ' => 'd',
        'һ' => 'h',
        'ԛ' => 'q',
        'ԝ' => 'w',
        'ν' => 'v',
        'А' | 'Α' => 'A',
        'В' | 'Β' => 'B',
        'Е' | 'Ε' => 'E',
        'Ζ' => 'Z',
        'Н' | 'Η' => 'H',
        'І' | 'Ι' => 'I',
        'Ј' => 'J',
        'К' | 'Κ' => 'K',
        'М' | 'Μ' => 'M',
        'Ν' => 'N',
        'О' | 'Ο' => 'O',
        'Р' | 'Ρ' => 'P',
        'С' => 'C',
        'Ѕ' => 'S',
        'Т' | 'Τ' => 'T',
        'Ү' | 'Υ' => 'Y',
        'Х' | 'Χ' => 'X',
        _ => return None,
    })
}

/// Whether the look-alike at `i` (of `len` bytes) sits in a word of ASCII:
/// the character before or after it is an ASCII letter, digit, `-` or `_`.
fn in_ascii_word(text: &str, i: usize, len: usize) -> bool {
    let near =
        |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    near(text[..i].chars().next_back()) || near(text[i + len..].chars().next())
}

/// The shadow text and, per shadow byte, the original character it came
/// from.
pub(super) struct Shadow {
    pub text: String,
    from: Vec<Range<usize>>,
}

impl Shadow {
    /// The original range of a shadow range (both on `char` boundaries).
    pub fn original(&self, r: Range<usize>) -> Range<usize> {
        if r.is_empty() {
            let at = self.from.get(r.start).map_or(usize::MAX, |f| f.start);
            return at..at;
        }
        self.from[r.start].start..self.from[r.end - 1].end
    }
}

/// A byte that is not printable ASCII, tab or a line break, or is `%`,
/// `\\` or `&` (which may start an escaped character, see [`escaped`]).
/// Written without branches, so a loop over it vectorises.
fn unusual(c: u8) -> bool {
    ((c.wrapping_sub(0x20) >= 0x5f) & (c != b'\t') & (c != b'\n') & (c != b'\r'))
        | (c == b'%')
        | (c == b'\\')
        | (c == b'&')
}

/// The first [`unusual`] byte. Clean text is the common case, so the bytes
/// are looked at 32 at a time without an early exit (which the compiler
/// turns into a few vector compares) and only a chunk that holds one is
/// searched byte by byte: a 200-byte detail costs about a fifth of a
/// byte-by-byte `position`.
fn first_unusual(b: &[u8]) -> Option<usize> {
    const W: usize = 32;
    let mut chunks = b.chunks_exact(W);
    let mut base = 0;
    for chunk in &mut chunks {
        if chunk.iter().fold(0u8, |any, &c| any | u8::from(unusual(c))) != 0 {
            return chunk.iter().position(|&c| unusual(c)).map(|p| base + p);
        }
        base += W;
    }
    chunks
        .remainder()
        .iter()
        .position(|&c| unusual(c))
        .map(|p| base + p)
}

/// The punctuation a key, prefix or URL is written with, when it is
/// escaped: percent-encoded (`sk%2Dant%2D…`, `%3Fapi_key%3D…`,
/// `https%3A%2F%2Fu%3Apw%40h`), as a JSON or C/Python escape (`\u002d`,
/// `\x2d`), as an HTML character reference (`&#45;`, `&#x2d;`, `&#045;`),
/// and JSON's escaped slash (`redis:\/\/app:pw@host`). A key whose
/// separator is escaped is still that key.
const PUNCT: &[u8] = b"-_.=?&/:@+~#";

/// The escaped punctuation at `i`: what it stands for and its length.
fn escaped(b: &[u8], i: usize) -> Option<(char, usize)> {
    let hex = |k: usize, n: usize| -> Option<u32> {
        let d = b.get(k..k + n)?;
        d.iter()
            .try_fold(0u32, |v, &c| Some(v * 16 + (c as char).to_digit(16)?))
    };
    let (v, len) = match (b.get(i)?, b.get(i + 1)) {
        (b'%', _) => (hex(i + 1, 2)?, 3),
        (b'\\', Some(b'/')) => (u32::from(b'/'), 2),
        (b'\\', Some(b'x' | b'X')) => (hex(i + 2, 2)?, 4),
        (b'\\', Some(b'u' | b'U')) => (hex(i + 2, 4)?, 6),
        (b'&', Some(b'#')) => char_reference(b, i + 2)?,
        _ => return None,
    };
    let c = u8::try_from(v).ok().filter(|c| PUNCT.contains(c))?;
    Some((c as char, len))
}

/// An HTML numeric character reference after its `&#` at `k` (`45;`,
/// `045;`, `x2d;`, `X002D;`): its value and the whole reference's length.
fn char_reference(b: &[u8], k: usize) -> Option<(u32, usize)> {
    let (radix, from) = match b.get(k)? {
        b'x' | b'X' => (16, k + 1),
        _ => (10, k),
    };
    let mut v = 0u32;
    let mut j = from;
    while j < b.len() && j - from < 6 {
        match (b[j] as char).to_digit(radix) {
            Some(d) => v = v * radix + d,
            None => break,
        }
        j += 1;
    }
    (j > from && b.get(j) == Some(&b';')).then_some((v, j + 1 - (k - 2)))
}

/// `None` when the detectors can scan `text` as it is.
pub(super) fn shadow(text: &str) -> Option<Shadow> {
    let b = text.as_bytes();
    let first = first_unusual(b)?;
    // Non-ASCII text is only copied when some character is mapped, and
    // text with `%` when one is a percent-encoded character we read.
    text[first..]
        .char_indices()
        .any(|(i, c)| match c {
            '%' | '\\' | '&' => escaped(b, first + i).is_some(),
            c if c.is_ascii() => !matches!(map(c), Map::Keep),
            c => {
                !matches!(map(c), Map::Keep)
                    || (homoglyph(c).is_some() && in_ascii_word(text, first + i, c.len_utf8()))
            }
        })
        .then(|| build(text))
}

fn build(text: &str) -> Shadow {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut from = Vec::with_capacity(text.len());
    let mut skip_to = 0;
    for (i, c) in text.char_indices() {
        if i < skip_to {
            continue;
        }
        let mut end = i + c.len_utf8();
        let to = if let Some((d, len)) = escaped(b, i) {
            end = i + len;
            skip_to = end;
            d
        } else {
            match map(c) {
                Map::Drop => continue,
                Map::Keep => match homoglyph(c) {
                    Some(a) if in_ascii_word(text, i, c.len_utf8()) => a,
                    _ => c,
                },
                Map::To(t) => t,
            }
        };
        let at = out.len();
        out.push(to);
        for _ in at..out.len() {
            from.push(i..end);
        }
    }
    Shadow { text: out, from }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chunked_scan_finds_the_first_unusual_byte_anywhere() {
        let plain = "opencode route: 429 from upstream\t\r\n".repeat(4);
        for len in 0..plain.len() {
            let b = &plain.as_bytes()[..len];
            assert_eq!(first_unusual(b), None, "{len}");
            for at in 0..len {
                for odd in [0x00, 0x1b, 0x7f, 0x80, 0xff] {
                    let mut v = b.to_vec();
                    v[at] = odd;
                    if at + 1 < len {
                        v[at + 1] = 0x1b;
                    }
                    let want = v.iter().position(|&c| unusual(c));
                    assert_eq!(first_unusual(&v), want, "{len} {at} {odd}");
                }
            }
        }
    }

    #[test]
    fn plain_text_needs_no_shadow() {
        assert!(shadow("").is_none());
        assert!(shadow("429 Too Many Requests\tretry\r\n").is_none());
        assert!(shadow("café 日本語 🚀 — “quoted”").is_none());
    }

    #[test]
    fn shadow_maps_back() {
        let t = "a\u{200B}b\u{FF0D}c\u{1b}[31md";
        let s = shadow(t).expect("needs a shadow");
        assert_eq!(s.text, "ab-c[31md");
        let r = s.original(0..9);
        assert_eq!(r, 0..t.len());
        assert_eq!(&t[s.original(2..3)], "\u{FF0D}");
        assert_eq!(&t[s.original(8..9)], "d");
    }
}
