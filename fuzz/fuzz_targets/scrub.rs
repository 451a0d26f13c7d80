//! The scrubber and the terminal-safe printer on arbitrary text.
//!
//! - never panics;
//! - idempotent: `scrub(scrub(x)) == scrub(x)`, and `for_terminal`'s
//!   output passes through the escaping unchanged;
//! - clean text comes back borrowed and identical;
//! - `for_terminal` leaves no control, bidi or invisible character;
//! - a corpus secret planted anywhere in the input never comes back: byte 0
//!   picks the secret, byte 1 where it goes, the rest is the text around it.
//!
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run scrub`

#![no_main]
#![allow(dead_code, unused_imports)]

use std::borrow::Cow;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;

#[path = "../../src/scrub/mod.rs"]
mod scrub;

#[path = "../../src/textsafe.rs"]
mod textsafe;

static CORPUS: LazyLock<Vec<scrub::corpus::Entry>> = LazyLock::new(scrub::corpus::secrets);

fn check_idempotent(x: &str) {
    let once = scrub::scrub(x);
    if let Cow::Borrowed(b) = &once {
        assert_eq!(*b, x);
    }
    let twice = scrub::scrub(&once);
    assert_eq!(twice, once, "scrub is not idempotent on {x:?}");
    let shown = textsafe::for_terminal(x);
    assert!(shown.chars().all(|c| !textsafe::is_unsafe(c)), "{shown:?}");
    // Escaping is idempotent. A second `for_terminal` may redact more (an
    // escaped line break joins lines for the line-based rules), never less.
    assert_eq!(textsafe::escape(&shown, false), shown, "escape is not idempotent on {x:?}");
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let (head, body) = data.split_at(2);
    let text = String::from_utf8_lossy(body);
    check_idempotent(&text);

    // A corpus secret planted in the text. Only a plain separator on each
    // side: a secret glued to arbitrary characters may legitimately read
    // as a longer, different word.
    let e = &CORPUS[head[0] as usize % CORPUS.len()];
    let mut at = (head[1] as usize * text.len()) / 256;
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let planted = format!("{} \n{}\n {}", &text[..at], e.detail, &text[at..]);
    let out = scrub::scrub(&planted);
    // libFuzzer copies compared strings into its inputs: a piece of the
    // secret already in the text around it proves nothing.
    if !scrub::corpus::leaked(&text, &e.needle) {
        assert!(
            !scrub::corpus::leaked(&out, &e.needle),
            "{} survived in {out:?}",
            e.family
        );
    }
    check_idempotent(&planted);
});
