//! Hub text made safe for a terminal. Every place where text that came from
//! the hub (or from a worker, or from a tokens file) meets a terminal goes
//! through [`for_terminal`]: the TUI's cells, `macfleet get`'s tables,
//! `macfleet agents` output, and the final error printer.
//!
//! Two things happen, in this order:
//! 1. secrets are scrubbed ([`crate::scrub::scrub`], which itself looks
//!    through invisible characters, so a key split by a zero-width space is
//!    still caught);
//! 2. every character that could drive the terminal or lie about what is on
//!    the screen is shown escaped as `<U+XXXX>`: C0 controls (NUL, BEL, BS,
//!    ESC, CR, LF, …), DEL, C1 controls (U+0080–U+009F, which include 8-bit
//!    CSI and OSC), bidirectional controls (U+202A–202E, U+2066–2069,
//!    U+200E/200F, U+061C), invisible and zero-width characters (U+200B–200D,
//!    U+2060–2064, U+FEFF, U+00AD, tag characters U+E0000–E007F, …) and the
//!    line and paragraph separators U+2028/2029.
//!
//! Escaping ESC breaks every CSI, OSC (OSC 52 clipboard writes, OSC 8
//! links), DCS and APC sequence: what follows it is plain, visible text.
//! Nothing is dropped, so on-call sees that something odd was sent.
//!
//! Clean text (the common case) comes back borrowed, without allocating.
//! The output passes through [`escape`] unchanged. A second `for_terminal`
//! may redact more, never less: an escaped line break joins two lines for
//! the scrubber's line-based rules (a `Cookie:` value runs to the end of its
//! line).
//!
//! See `docs/scrubbing.md`, "Terminal safety".

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal as it is (the scrubber's own
/// character class: it reads through these too).
pub use crate::scrub::is_unsafe;

/// Hub text for one terminal cell or line: secrets scrubbed, and every
/// unsafe character (including `\n` and `\t`) escaped as `<U+XXXX>`.
/// Borrowed when there was nothing to do.
pub fn for_terminal(s: &str) -> Cow<'_, str> {
    then_escape(crate::scrub::scrub(s), false)
}

/// Like [`for_terminal`] for a multi-line message (an error with a TOML
/// excerpt): `\n` and `\t` are kept, everything else is escaped.
pub fn for_terminal_lines(s: &str) -> Cow<'_, str> {
    then_escape(crate::scrub::scrub(s), true)
}

fn then_escape(s: Cow<'_, str>, keep_lines: bool) -> Cow<'_, str> {
    match s {
        Cow::Borrowed(b) => escape(b, keep_lines),
        Cow::Owned(o) => match escape(&o, keep_lines) {
            Cow::Borrowed(_) => Cow::Owned(o),
            Cow::Owned(e) => Cow::Owned(e),
        },
    }
}

fn unsafe_here(c: char, keep_lines: bool) -> bool {
    is_unsafe(c) && !(keep_lines && (c == '\n' || c == '\t'))
}

/// Only the escaping step, without scrubbing: unsafe characters become
/// `<U+XXXX>` (`\n` and `\t` kept when `keep_lines`).
pub fn escape(s: &str, keep_lines: bool) -> Cow<'_, str> {
    let b = s.as_bytes();
    // Fast path: printable ASCII has nothing to escape.
    let Some(first) = b
        .iter()
        .position(|&c| !(0x20..0x7f).contains(&c))
        .and_then(|i| {
            s[i..]
                .char_indices()
                .find(|&(_, c)| unsafe_here(c, keep_lines))
                .map(|(j, _)| i + j)
        })
    else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 16);
    out.push_str(&s[..first]);
    for c in s[first..].chars() {
        if unsafe_here(c, keep_lines) {
            // Writing to a String cannot fail.
            let _ = write!(out, "<U+{:04X}>", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// JSON text (as `serde_json` writes it) made safe for a terminal without
/// changing the value it encodes: every unsafe character, which can only sit
/// inside a JSON string, becomes a `\uXXXX` escape (a surrogate pair above
/// U+FFFF). `serde_json` already escapes C0 controls; this adds DEL, C1,
/// bidi and invisible characters.
pub fn json_for_terminal(json: &str) -> Cow<'_, str> {
    if !json.chars().any(|c| is_unsafe(c) && c != '\n') {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 32);
    for c in json.chars() {
        if is_unsafe(c) && c != '\n' {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{:04x}", u);
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_text_is_borrowed() {
        for s in [
            "",
            "opencode → pi rate_limited 429 3s",
            "café, naïve, 日本語, emoji 🚀",
            "tabs\tand\nlines",
        ] {
            if s.contains(['\t', '\n']) {
                assert!(matches!(for_terminal_lines(s), Cow::Borrowed(_)), "{s:?}");
            } else {
                assert!(matches!(for_terminal(s), Cow::Borrowed(_)), "{s:?}");
            }
        }
    }

    #[test]
    fn controls_are_escaped() {
        let osc52 = "x\u{1b}]52;c;aGVsbG8=\u{7}y";
        assert_eq!(for_terminal(osc52), "x<U+001B>]52;c;aGVsbG8=<U+0007>y");
        assert_eq!(for_terminal("a\u{1b}[2Jb"), "a<U+001B>[2Jb");
        assert_eq!(for_terminal("a\rb\0c\u{7f}"), "a<U+000D>b<U+0000>c<U+007F>");
        assert_eq!(for_terminal("8-bit CSI \u{9b}2J"), "8-bit CSI <U+009B>2J");
        assert_eq!(for_terminal("a\nb\tc"), "a<U+000A>b<U+0009>c");
        assert_eq!(for_terminal_lines("a\nb\tc\rd"), "a\nb\tc<U+000D>d");
    }

    #[test]
    fn bidi_and_invisible_are_escaped() {
        assert_eq!(
            for_terminal("ok \u{202E}gnp.exe\u{202C}"),
            "ok <U+202E>gnp.exe<U+202C>"
        );
        for c in [
            '\u{200B}',
            '\u{200D}',
            '\u{200E}',
            '\u{2066}',
            '\u{2069}',
            '\u{2028}',
            '\u{2029}',
            '\u{FEFF}',
            '\u{E0041}',
            '\u{E007F}',
            '\u{061C}',
            '\u{00AD}',
        ] {
            let s = format!("a{c}b");
            let out = for_terminal(&s);
            assert_eq!(out, format!("a<U+{:04X}>b", c as u32));
            assert!(!out.contains(c));
        }
    }

    #[test]
    fn escaping_is_idempotent() {
        let s = "x\u{1b}]8;;http://e\u{7}\u{202E}y\u{E0041}\n";
        let once = for_terminal(s).into_owned();
        assert_eq!(for_terminal(&once), once);
        assert!(once.chars().all(|c| !is_unsafe(c)));
    }

    /// Found by fuzzing: a cookie header ends at its line break, and once
    /// the break is escaped a second pass reads one long line.
    #[test]
    fn a_second_pass_redacts_more_never_less() {
        let value = "ab12CD".repeat(5);
        let s = format!(" \nSet-Cookie: session={value}; Path=/; HttpOnly\n x");
        let once = for_terminal(&s).into_owned();
        assert!(!once.contains(&value), "{once}");
        assert!(once.ends_with("<U+000A> x"), "{once}");
        assert_eq!(escape(&once, false), once);
        let twice = for_terminal(&once);
        assert!(!twice.contains(&value));
        assert!(twice.chars().all(|c| !is_unsafe(c)));
    }

    #[test]
    fn secrets_are_scrubbed_and_escaped() {
        let key = format!("{}{}", "sk-ant-api03-", "Ab3dEf6h".repeat(5));
        let coloured = format!("\u{1b}[31m{key}\u{1b}[0m");
        let out = for_terminal(&coloured);
        assert!(!out.contains(&key[12..]), "{out}");
        assert!(out.contains("[redacted:anthropic-key]"), "{out}");
        assert!(!out.contains('\u{1b}'));
    }

    #[test]
    fn json_keeps_its_value() {
        let v = serde_json::json!({"detail": "ok \u{202E}gnp.exe\u{202C} \u{9b} \u{E0041}"});
        let text = serde_json::to_string_pretty(&v).expect("serialises");
        let safe = json_for_terminal(&text);
        assert!(safe.chars().all(|c| !is_unsafe(c) || c == '\n'), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).expect("still JSON");
        assert_eq!(back, v);
        let clean = serde_json::to_string_pretty(&serde_json::json!({"a": "b"})).expect("ser");
        assert!(matches!(json_for_terminal(&clean), Cow::Borrowed(_)));
    }
}
