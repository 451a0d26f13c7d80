//! "Fuzz-lite" on stable: arbitrary strings and TOML-shaped fragments
//! through every operation. Nothing may panic; an accepted edit reads back
//! as reported and leaves the bytes outside the list alone; the layout
//! engine never gives up (`Unsupported`).

use macfleet::agents_doc::{DocError, Op, apply, locate, rebase, unified_diff};
use proptest::prelude::*;

const FRAGMENTS: [&str; 40] = [
    "MAC_CODING_AGENTS",
    " = ",
    "=",
    "[",
    "]",
    "[fleet]",
    "fleet.",
    "[fleet.staging]",
    "\"pi\"",
    "\"opencode\"",
    "'claude'",
    "\"codex\"",
    "\"Bad\"",
    ",",
    ", ",
    " ,",
    "#",
    "# c, \"x\",",
    "\n",
    "\r\n",
    "\t",
    " ",
    "    ",
    "\"",
    "'",
    "\"\"\"",
    "'''",
    "\\u0070",
    "é",
    "日本",
    "1",
    "{",
    "}",
    "fleet = {",
    "\"opencode,claude\"",
    "'pi, codex'",
    "[[fleet]]",
    "x = 1\n",
    "\\",
    "\r",
];

fn doc() -> impl Strategy<Value = String> {
    prop_oneof![
        // Arbitrary text.
        ".{0,80}",
        // TOML-shaped: fragments in any order.
        proptest::collection::vec(proptest::sample::select(FRAGMENTS.to_vec()), 0..40)
            .prop_map(|v| v.concat()),
        // A valid list with fragments spliced into its inside.
        (
            proptest::collection::vec(proptest::sample::select(FRAGMENTS.to_vec()), 0..6),
            proptest::collection::vec(proptest::sample::select(FRAGMENTS.to_vec()), 0..6),
            0u8..3,
        )
            .prop_map(|(a, b, place)| {
                let arr = format!(
                    "[{}\"opencode\",{}\"pi\", # x\n  \"claude\"{}]",
                    a.concat(),
                    b.concat(),
                    a.concat()
                );
                match place {
                    0 => format!("MAC_CODING_AGENTS = {arr}\n"),
                    1 => format!("[fleet]\nMAC_CODING_AGENTS = {arr}"),
                    _ => format!("fleet.MAC_CODING_AGENTS = {arr}\r\n"),
                }
            }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let name = prop_oneof![
        Just("opencode".to_string()),
        Just("pi".to_string()),
        Just("claude".to_string()),
        Just("cursor".to_string()),
        Just("Bad".to_string()),
        Just(String::new()),
        "[a-z]{1,4}",
    ];
    let index = prop_oneof![0usize..5, Just(usize::MAX)];
    prop_oneof![
        (name.clone(), index.clone()).prop_map(|(name, index)| Op::Move { name, index }),
        (name.clone(), proptest::option::of(index))
            .prop_map(|(name, index)| Op::Add { name, index }),
        name.clone().prop_map(Op::Remove),
        proptest::collection::vec(name, 0..6).prop_map(Op::Set),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn never_panics(text in doc(), op in op()) {
        match apply(&text, &op) {
            Ok(e) => {
                let after = locate(&e.text).map_err(|err| TestCaseError::fail(format!("{err} in\n{}", e.text)))?;
                prop_assert_eq!(&after.agents, &e.after);
                if e.before == e.after {
                    prop_assert_eq!(&e.text, &text);
                } else {
                    let doc = toml_edit::Document::parse(text.as_str()).map_err(|err| TestCaseError::fail(err.to_string()))?;
                    let _ = doc;
                    let prefix_len = after.span.start;
                    let suffix_len = e.text.len() - after.span.end;
                    prop_assert!(text.starts_with(&e.text[..prefix_len]));
                    prop_assert!(text.ends_with(&e.text[after.span.end..]));
                    prop_assert!(prefix_len + suffix_len <= text.len());
                    let _ = unified_diff(&text, &e.text, "a", "b");
                    let _ = rebase(&text, &e.after, &text);
                }
            }
            Err(DocError::Unsupported { line, column }) => {
                return Err(TestCaseError::fail(format!("layout engine gave up at {line}:{column} on {op:?}:\n{text}")));
            }
            Err(e) => prop_assert!(!e.to_string().contains('\n')),
        }
    }
}
