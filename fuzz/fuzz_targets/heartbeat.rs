//! Heartbeat bodies through both parsers: the hub's borrowed
//! `HeartbeatIn::parse` and the wire type `wire::Heartbeat`. They accept and
//! refuse the same bodies, read the same values, and validation says the
//! same of both. Never panics.
//!
//! Input: the body as is, or (byte 0 odd) spliced into a valid heartbeat
//! at a spot picked by byte 1, so that most inputs reach validation.
//!
//! `RUSTC_BOOTSTRAP=1 cargo fuzz run heartbeat`

#![no_main]
#![allow(dead_code, unused_imports)]

use libfuzzer_sys::fuzz_target;

#[path = "../../src/scrub/mod.rs"]
mod scrub;

#[path = "../../src/textsafe.rs"]
mod textsafe;

#[path = "../../src/wire.rs"]
mod wire;

#[path = "../../src/hub/ingest.rs"]
mod ingest;

use ingest::HeartbeatIn;
use wire::Heartbeat;

const VALID: &str = r#"{"worker":"w-1","host":"h1","sent_at":"2026-11-29T15:04:05Z","config_revision":"0123456789ab","agents":["pi","claude"],"active_agent":"pi","capabilities":{"pi":{"binary":true,"token":true,"preflight":"ok"}},"failovers":[{"id":"f-1","at":"2026-11-29T15:04:00Z","from":"pi","to":"claude","cause":{"kind":"rate_limited","status":429,"source":"hub_router","detail":"429 from upstream"}}]}"#;

/// Spots in `VALID` where a value starts (after `":`), or inside a string.
fn spots() -> Vec<usize> {
    let b = VALID.as_bytes();
    (1..b.len()).filter(|&i| b[i - 1] == b':' || b[i - 1] == b'"').collect()
}

fuzz_target!(|data: &[u8]| {
    let body: Vec<u8> = match data {
        [op, at, rest @ ..] if op % 2 == 1 => {
            let s = spots();
            let i = s[*at as usize % s.len()];
            // Replace the value (or string) at that spot with the input.
            let end = VALID[i..]
                .find([',', '}', ']', '"'])
                .map_or(VALID.len(), |e| i + e);
            let mut v = VALID.as_bytes()[..i].to_vec();
            v.extend_from_slice(rest);
            v.extend_from_slice(&VALID.as_bytes()[end..]);
            v
        }
        _ => data.to_vec(),
    };
    let wire: Result<Heartbeat, _> = serde_json::from_slice(&body);
    let ours = HeartbeatIn::parse(&body);
    match (wire, ours) {
        (Ok(w), Ok(mut o)) => {
            // The wire type's map is sorted; ours keeps the order sent.
            o.capabilities.0.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(HeartbeatIn::from(&w), o);
            assert_eq!(
                w.validate().map_err(|e| e.to_string()),
                o.validate().map_err(|e| e.to_string())
            );
        }
        (Err(w), Err(o)) => {
            assert_eq!(w.classify(), o.classify(), "{w} / {o}");
        }
        (w, o) => panic!(
            "parsers disagree on {:?}: wire {w:?}, hub {o:?}",
            String::from_utf8_lossy(&body)
        ),
    }
});
