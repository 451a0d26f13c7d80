//! The characters that must not reach a terminal as they are: controls,
//! bidirectional overrides, invisible and zero-width characters. The
//! scrubber reads through them (a key split by a zero-width space is still a
//! key) and `textsafe` escapes them. Here, below both, so that `textsafe`
//! depends on `scrub` and not the other way round.

/// Whether `c` must not reach a terminal as it is.
pub fn is_unsafe(c: char) -> bool {
    let u = c as u32;
    if u < 0x80 {
        return u < 0x20 || u == 0x7f;
    }
    matches!(u,
        0x80..=0x9f          // C1 controls
        | 0xad               // soft hyphen
        | 0x34f              // combining grapheme joiner
        | 0x61c              // Arabic letter mark (bidi)
        | 0x115f | 0x1160    // Hangul fillers (render blank)
        | 0x17b4 | 0x17b5    // Khmer invisible vowels
        | 0x180b..=0x180f    // Mongolian variation selectors and vowel separator
        | 0x200b..=0x200f    // ZWSP, ZWNJ, ZWJ, LRM, RLM
        | 0x2028..=0x202e    // line/paragraph separators, LRE RLE PDF LRO RLO
        | 0x2060..=0x206f    // word joiner, invisible operators, LRI RLI FSI PDI, …
        | 0x3164             // Hangul filler
        | 0xfe00..=0xfe0f    // variation selectors
        | 0xfeff             // zero-width no-break space (BOM)
        | 0xffa0             // half-width Hangul filler
        | 0xfff9..=0xfffb    // interlinear annotation controls
        | 0x1bca0..=0x1bca3  // shorthand format controls
        | 0x1d173..=0x1d17a  // musical symbol format controls
        | 0xe0000..=0xe007f  // tag characters ("ASCII smuggling")
        | 0xe0100..=0xe01ef // variation selectors supplement
    )
}
