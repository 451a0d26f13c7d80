//! The characters that must not reach a terminal as they are: controls,
//! bidirectional overrides, format characters and every
//! Default_Ignorable_Code_Point, assigned or not. The scrubber reads
//! through them (a key split by a zero-width space is still a key) and
//! `textsafe` escapes them. Here, below both, so that `textsafe` depends on
//! `scrub` and not the other way round.
//!
//! The ranges are Unicode 15.1's `Default_Ignorable_Code_Point`
//! (DerivedCoreProperties.txt, which reserves whole blocks, such as
//! U+E0000–U+E0FFF and U+FFF0–U+FFF8, for characters to be ignored even
//! before they are assigned) and its general category `Cf` (format
//! characters: the Arabic and Syriac number and abbreviation marks, the
//! Kaithi and Egyptian hieroglyph format controls, …), plus the C0 and C1
//! controls, DEL and the line and paragraph separators.

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
        | 0x600..=0x605      // Arabic number signs (Cf)
        | 0x61c              // Arabic letter mark (bidi)
        | 0x6dd              // Arabic end of ayah (Cf)
        | 0x70f              // Syriac abbreviation mark (Cf)
        | 0x890 | 0x891      // Arabic pound and piastre marks above (Cf)
        | 0x8e2              // Arabic disputed end of ayah (Cf)
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
        | 0xfff0..=0xfff8    // reserved default-ignorable (unassigned)
        | 0xfff9..=0xfffb    // interlinear annotation controls
        | 0x110bd | 0x110cd  // Kaithi number signs (Cf)
        | 0x13430..=0x1343f  // Egyptian hieroglyph format controls (Cf)
        | 0x1bca0..=0x1bca3  // shorthand format controls
        | 0x1d173..=0x1d17a  // musical symbol format controls
        | 0xe0000..=0xe0fff  // tags ("ASCII smuggling"), variation selectors
                             // supplement, and the rest of the plane-14
                             // block reserved default-ignorable
    )
}

#[cfg(test)]
mod tests {
    use super::is_unsafe;

    /// Unicode 15.1, DerivedCoreProperties.txt, `Default_Ignorable_Code_Point`.
    const DEFAULT_IGNORABLE: &[(u32, u32)] = &[
        (0x00AD, 0x00AD),
        (0x034F, 0x034F),
        (0x061C, 0x061C),
        (0x115F, 0x1160),
        (0x17B4, 0x17B5),
        (0x180B, 0x180F),
        (0x200B, 0x200F),
        (0x202A, 0x202E),
        (0x2060, 0x206F),
        (0x3164, 0x3164),
        (0xFE00, 0xFE0F),
        (0xFEFF, 0xFEFF),
        (0xFFA0, 0xFFA0),
        (0xFFF0, 0xFFF8),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0000, 0xE0FFF),
    ];

    /// Unicode 15.1, general category `Cf`.
    const FORMAT: &[(u32, u32)] = &[
        (0x00AD, 0x00AD),
        (0x0600, 0x0605),
        (0x061C, 0x061C),
        (0x06DD, 0x06DD),
        (0x070F, 0x070F),
        (0x0890, 0x0891),
        (0x08E2, 0x08E2),
        (0x180E, 0x180E),
        (0x200B, 0x200F),
        (0x202A, 0x202E),
        (0x2060, 0x2064),
        (0x2066, 0x206F),
        (0xFEFF, 0xFEFF),
        (0xFFF9, 0xFFFB),
        (0x110BD, 0x110BD),
        (0x110CD, 0x110CD),
        (0x13430, 0x1343F),
        (0x1BCA0, 0x1BCA3),
        (0x1D173, 0x1D17A),
        (0xE0001, 0xE0001),
        (0xE0020, 0xE007F),
    ];

    #[test]
    fn every_default_ignorable_and_format_character_is_unsafe() {
        for &(lo, hi) in DEFAULT_IGNORABLE.iter().chain(FORMAT) {
            for u in lo..=hi {
                let c = char::from_u32(u).expect("a scalar value");
                assert!(is_unsafe(c), "U+{u:04X}");
            }
        }
    }

    #[test]
    fn ordinary_text_is_safe() {
        for c in "aZ9 -_~ é ß ж 日本 ー 🚀 \u{2013}\u{2014}\u{3000}\u{0627}\u{05D0}".chars()
        {
            assert!(!is_unsafe(c), "{c:?}");
        }
    }
}
