//! How `macfleet get` writes hub data. Every path that prints hub text goes
//! through here or through [`crate::textsafe::for_terminal`]: `-o json` and
//! `-o jsonl` scrub every string of the JSON (object keys too: capability
//! maps are keyed by agent names) and then escape control, bidirectional and
//! invisible characters as `\uXXXX`, so the output is still valid JSON and
//! decodes to the scrubbed text; a line of text is scrubbed and escaped as
//! `<U+XXXX>`.

use std::borrow::Cow;
use std::io::Write;

use color_eyre::eyre::Result;
use serde::Serialize;
use serde_json::Value;

use crate::textsafe::{for_terminal, json_for_terminal};

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

/// A line of text holding hub text, for a terminal.
pub fn line(s: &str) -> Cow<'_, str> {
    for_terminal(s)
}

#[cfg(test)]
mod tests {
    use super::*;

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
