//! How `macfleet get` writes hub data. Every path that prints hub text goes
//! through here or through [`crate::textsafe::for_terminal`]: `-o json` and
//! `-o jsonl` scrub every string of the JSON (object keys too: capability
//! maps are keyed by agent names) and then escape control, bidirectional and
//! invisible characters as `\uXXXX`, so the output is still valid JSON and
//! decodes to the scrubbed text; a line of text is scrubbed and escaped as
//! `<U+XXXX>`.

use std::borrow::Cow;
use std::io::{Seek, Write};

use color_eyre::eyre::{Result, eyre};
use serde::Serialize;
use serde_json::Value;

use crate::client::{PagePart, PageReader};
use crate::textsafe::{for_terminal, json_for_terminal};
use crate::wire::{WorkerView, WorkersPage};

/// Every string in `v` (values and keys) through the scrubber.
pub fn scrub_value(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Cow::Owned(o) = crate::scrub::scrub(s) {
                *s = o;
            }
        }
        Value::Array(a) => a.iter_mut().for_each(scrub_value),
        Value::Object(m) => {
            let dirty = m
                .keys()
                .any(|k| matches!(crate::scrub::scrub(k), Cow::Owned(_)));
            if dirty {
                let old = std::mem::take(m);
                for (k, mut val) in old {
                    scrub_value(&mut val);
                    let mut key = crate::scrub::scrub(&k).into_owned();
                    // Two keys that scrub alike stay two entries.
                    while m.contains_key(&key) {
                        key.push('\'');
                    }
                    m.insert(key, val);
                }
            } else {
                m.values_mut().for_each(scrub_value);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// `value` as JSON text that is safe on a terminal: scrubbed, then every
/// unsafe character escaped (`pretty` or compact).
pub fn safe_json(value: &impl Serialize, pretty: bool) -> Result<String> {
    let mut v = serde_json::to_value(value)?;
    scrub_value(&mut v);
    let text = if pretty {
        serde_json::to_string_pretty(&v)?
    } else {
        serde_json::to_string(&v)?
    };
    Ok(json_for_terminal(&text).into_owned())
}

/// One JSON document, pretty.
pub fn write_json(out: &mut impl Write, value: &impl Serialize) -> Result<()> {
    writeln!(out, "{}", safe_json(value, true)?)?;
    Ok(())
}

/// Items as JSON, one a line.
pub fn write_jsonl<'a, T: Serialize + 'a>(
    out: &mut (impl Write + ?Sized),
    items: impl IntoIterator<Item = &'a T>,
) -> Result<()> {
    for item in items {
        writeln!(out, "{}", safe_json(item, false)?)?;
    }
    Ok(())
}

/// How `get workers -o json` spells `"workers": [` … `]` around the
/// workers: what `serde_json`'s pretty printer writes for the whole page.
const LIST_OPEN: &[u8] = b"[\n";
const LIST_NEXT: &[u8] = b",\n";
const LIST_CLOSE: &[u8] = b"\n  ]\n}\n";
const LIST_EMPTY: &[u8] = b"[]\n}\n";

/// The page's own fields as [`write_json`] writes them, up to (and not
/// holding) its list: `{` … `"workers": `. `workers` is the page's last key
/// in the map `serde_json` sorts, as in the struct.
fn page_head(page: &WorkersPage) -> Result<String> {
    let empty = WorkersPage {
        workers: Vec::new(),
        ..page.clone()
    };
    let text = safe_json(&empty, true)?;
    match text.strip_suffix("[]\n}") {
        Some(head) if head.ends_with("\"workers\": ") => Ok(head.to_string()),
        _ => Err(eyre!(
            "internal: the page's JSON does not end with its workers list"
        )),
    }
}

/// One worker as it sits in [`write_json`]'s page: pretty, each line
/// indented two levels, after the separator its place asks.
fn write_worker(out: &mut impl Write, first: bool, w: &WorkerView) -> Result<()> {
    out.write_all(if first { LIST_OPEN } else { LIST_NEXT })?;
    let text = safe_json(w, true)?;
    for (i, l) in text.split('\n').enumerate() {
        if i > 0 {
            out.write_all(b"\n")?;
        }
        out.write_all(b"    ")?;
        out.write_all(l.as_bytes())?;
    }
    Ok(())
}

/// `get workers -o json`, streamed: each worker is read, checked (the
/// client's bounds), scrubbed and written before the next is read, and the
/// output is byte for byte what [`write_json`] writes for the whole page.
/// The page's own fields come first, so when a hub sends them after its
/// list (the reference hub never does) the written workers wait in an
/// anonymous temporary file (mode 0600, gone when closed) until they come.
/// An error mid-page (a body cut, an element out of bounds) ends the output
/// where it is, with no closing `]` and `}`: a reader sees invalid JSON,
/// never a shorter document that looks whole, and the command exits
/// non-zero with the client's sentence.
pub async fn stream_workers_json(
    out: &mut impl Write,
    reader: &mut PageReader<'_, WorkersPage, WorkerView>,
) -> Result<()> {
    let mut head_written = false;
    let mut spool: Option<std::io::BufWriter<std::fs::File>> = None;
    let mut n = 0usize;
    loop {
        match reader.next().await? {
            PagePart::Head(page) => {
                out.write_all(page_head(&page)?.as_bytes())?;
                head_written = true;
            }
            PagePart::Item(w) => {
                if head_written {
                    write_worker(out, n == 0, &w)?;
                } else {
                    let file = match spool.as_mut() {
                        Some(f) => f,
                        None => spool.insert(std::io::BufWriter::new(tempfile::tempfile()?)),
                    };
                    write_worker(file, n == 0, &w)?;
                }
                n += 1;
            }
            PagePart::End(page) => {
                if !head_written {
                    out.write_all(page_head(&page)?.as_bytes())?;
                    if let Some(spool) = spool.take() {
                        let mut file = spool.into_inner().map_err(|e| e.into_error())?;
                        file.seek(std::io::SeekFrom::Start(0))?;
                        std::io::copy(&mut file, out)?;
                    }
                }
                out.write_all(if n == 0 { LIST_EMPTY } else { LIST_CLOSE })?;
                return Ok(());
            }
        }
    }
}

/// `get workers -o jsonl`, streamed: each worker a line, written before
/// the next is read. An error mid-page ends the lines where they are (each
/// written line is a whole, checked worker) and the command exits
/// non-zero: the exit code says the list is short.
pub async fn stream_workers_jsonl(
    out: &mut impl Write,
    reader: &mut PageReader<'_, WorkersPage, WorkerView>,
) -> Result<()> {
    loop {
        match reader.next().await? {
            PagePart::Head(_) => {}
            PagePart::Item(w) => write_jsonl(out, [&w])?,
            PagePart::End(_) => return Ok(()),
        }
    }
}

/// A line of text holding hub text, for a terminal.
pub fn line(s: &str) -> Cow<'_, str> {
    for_terminal(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page of hostile text: a key, escapes and bidi characters in its
    /// values and in its capability keys.
    fn hostile_page(key: &str) -> WorkersPage {
        let nasty = format!("x\u{1b}]52;c;aGk=\u{7} \u{9b}2J \u{202e} {key}");
        let workers: Vec<Value> = (0..5)
            .map(|i| {
                serde_json::json!({
                    "worker": format!("w-{i}"), "host": format!("h{i}"),
                    "received_at": "2026-11-29T15:04:05Z", "sent_at": "2026-11-29T15:04:05Z",
                    "state": "healthy", "config_revision": "r1", "in_sync": true,
                    "agents": ["opencode", "k\u{202e}"], "active_agent": "opencode",
                    "capabilities": {
                        format!("c\u{9b}{i}"): {"binary": true, "token": false, "preflight": "ok"}
                    },
                    "last_failover": {"id": "f-1", "at": "2026-11-29T15:04:00Z",
                        "from": "opencode", "to": null,
                        "cause": {"kind": "auth", "status": 401, "source": "worker",
                                  "detail": nasty.clone()}},
                    "headroom": i
                })
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "now": "2026-11-29T15:04:05Z", "config_revision": "r1",
            "heartbeat_interval_s": 10, "cursor": "c1-5", "delta": false,
            "workers": workers,
        }))
        .expect("a page")
    }

    /// `body` as `/v1/workers`' answer in `pieces` chunks, streamed.
    async fn streamed(body: &str, pieces: usize, jsonl: bool) -> Vec<u8> {
        let size = body.len().div_ceil(pieces).max(1);
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> = body
            .as_bytes()
            .chunks(size)
            .map(|c| Ok(c.to_vec()))
            .collect();
        let resp = reqwest::Response::from(hyper::Response::new(reqwest::Body::wrap_stream(
            futures::stream::iter(chunks),
        )));
        let client = crate::client::Client::new("http://127.0.0.1:1", None, Default::default())
            .expect("client");
        let mut reader = client.workers_reader(resp);
        let mut out = Vec::new();
        if jsonl {
            stream_workers_jsonl(&mut out, &mut reader)
                .await
                .expect("jsonl");
        } else {
            stream_workers_json(&mut out, &mut reader)
                .await
                .expect("json");
        }
        out
    }

    #[tokio::test]
    async fn streamed_json_is_what_the_whole_page_writers_write() {
        let key = format!("{}{}", "ghp_", "aQ3".repeat(12));
        let page = hostile_page(&key);
        let mut want = Vec::new();
        write_json(&mut want, &page).expect("json");
        let mut want_lines = Vec::new();
        write_jsonl(&mut want_lines, &page.workers).expect("jsonl");
        assert!(!String::from_utf8_lossy(&want).contains(&key));
        // The reference hub's order (the list last), and the list first:
        // then the written workers wait in a file for the page's fields.
        let body = serde_json::to_string(&page).expect("body");
        let list = serde_json::to_string(&page.workers).expect("list");
        let mut empty = page.clone();
        empty.workers.clear();
        let fields = serde_json::to_string(&empty).expect("fields");
        let fields = fields
            .strip_prefix('{')
            .and_then(|f| f.strip_suffix(",\"workers\":[]}"))
            .expect("the list is last");
        let after = format!("{{\"workers\":{list},{fields}}}");
        for pieces in [1, 7, 300, body.len()] {
            let got = streamed(&body, pieces, false).await;
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
                "{pieces} pieces"
            );
            let got = streamed(&body, pieces, true).await;
            assert_eq!(got, want_lines, "jsonl in {pieces} pieces");
            let got = streamed(&after, pieces, false).await;
            assert_eq!(
                String::from_utf8_lossy(&got),
                String::from_utf8_lossy(&want),
                "the list first, {pieces} pieces"
            );
        }
        let mut want = Vec::new();
        write_json(&mut want, &empty).expect("json");
        let body = serde_json::to_string(&empty).expect("body");
        assert_eq!(streamed(&body, 3, false).await, want);
    }

    #[test]
    fn json_is_scrubbed_escaped_and_still_json() {
        let key = format!("{}{}", "ghp_", "aQ3".repeat(12));
        let v = serde_json::json!({
            "a": format!("x\u{1b}]52;c;aGk=\u{7} \u{9b}2J \u{202e} {key}"),
            format!("k\u{202e}"): [1, null, "\u{9b}"],
        });
        let out = safe_json(&v, false).expect("json");
        assert!(!out.contains(&key), "{out}");
        assert!(
            !out.chars().any(crate::textsafe::is_unsafe),
            "escaped: {out:?}"
        );
        let back: Value = serde_json::from_str(&out).expect("still JSON");
        assert!(back["a"].as_str().is_some_and(|s| s.contains('\u{9b}')));
    }
}
