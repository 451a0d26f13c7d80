//! Arbitrary documents and operations through the MAC_CODING_AGENTS editor.
//! It must never panic; an edit it accepts must read back as the list it
//! reported, leave every byte outside the list alone, and never fail with
//! `Unsupported` (the editor's "my layout engine gave up").
//!
//! Input: byte 0 picks the operation, byte 1 the index, byte 2 the agent;
//! the rest is the document.

#![no_main]
#![allow(dead_code, unused_imports)]

use libfuzzer_sys::fuzz_target;

#[path = "../../src/wire.rs"]
mod wire;

// wire.rs refuses secret-shaped ids with the scrubber.
#[path = "../../src/scrub/mod.rs"]
mod scrub;

#[path = "../../src/textsafe.rs"]
mod textsafe;

#[path = "../../src/agents_doc/mod.rs"]
mod agents_doc;

use agents_doc::{DocError, Op, apply, decode, locate, rebase, unified_diff};

const NAMES: [&str; 8] = [
    "opencode", "pi", "claude", "codex", "cursor", "zed", "Bad", "",
];

fuzz_target!(|data: &[u8]| {
    if data.len() < 3 {
        return;
    }
    let (head, body) = data.split_at(3);
    let Ok(text) = decode(body) else {
        return;
    };
    let current = locate(text).map(|l| l.agents).unwrap_or_default();
    let pick = |i: u8| -> String {
        if !current.is_empty() && i % 2 == 0 {
            current[(i as usize / 2) % current.len()].clone()
        } else {
            NAMES[(i as usize / 2) % NAMES.len()].to_string()
        }
    };
    let index = match head[1] {
        255 => usize::MAX,
        i => i as usize % (current.len() + 2),
    };
    let op = match head[0] % 5 {
        0 => Op::Move {
            name: pick(head[2]),
            index,
        },
        1 => Op::Add {
            name: pick(head[2]),
            index: (head[1] % 3 != 0).then_some(index),
        },
        2 => Op::Remove(pick(head[2])),
        3 => {
            // A rotation of the current list, maybe with one agent swapped.
            let mut list = current.clone();
            if !list.is_empty() {
                let k = head[1] as usize % list.len();
                list.rotate_left(k);
            }
            if head[2] % 3 == 0 {
                list.push(pick(head[2] / 3));
            } else if head[2] % 3 == 1 && list.len() > 1 {
                list.pop();
            }
            Op::Set(list)
        }
        _ => Op::Set(current.iter().rev().cloned().collect()),
    };
    match apply(text, &op) {
        Ok(e) => {
            let doc = agents_doc::parse(text).expect("an edited document parses");
            let before = agents_doc::read_raw(&doc).expect("an edited document has the list");
            let after = locate(&e.text).expect("the edit reads back");
            assert_eq!(after.agents, e.after, "the list reads back as reported");
            assert_eq!(&text[..before.span.start], &e.text[..after.span.start]);
            assert_eq!(&text[before.span.end..], &e.text[after.span.end..]);
            if e.before == e.after {
                assert_eq!(e.text, text, "a no-op changed bytes");
            } else {
                // Replaying the same order onto the original is the same edit
                // (a move names the agent that moves; a bare order may pick
                // the other one of two adjacent agents).
                let again = rebase(text, &e.after, text).expect("rebase onto itself");
                if !matches!(op, Op::Move { .. }) {
                    assert_eq!(again, e.text);
                }
                let _ = unified_diff(text, &e.text, "a", "b");
            }
        }
        Err(DocError::Unsupported { line, column }) => {
            panic!("layout engine gave up at {line}:{column} on {op:?}:\n{text}");
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "multi-line error: {msg}");
        }
    }
});
