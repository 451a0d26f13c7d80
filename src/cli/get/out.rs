//! How `macfleet get` writes hub data: one JSON document, or one object a
//! line.

use std::io::Write;

use color_eyre::eyre::Result;
use serde::Serialize;

use crate::textsafe::json_for_terminal;

/// One JSON document, pretty.
pub fn write_json(out: &mut impl Write, value: &impl Serialize) -> Result<()> {
    let json = serde_json::to_string_pretty(value)?;
    writeln!(out, "{}", json_for_terminal(&json))?;
    Ok(())
}

/// Items as JSON, one a line.
pub fn write_jsonl<'a, T: Serialize + 'a>(
    out: &mut impl Write,
    items: impl IntoIterator<Item = &'a T>,
) -> Result<()> {
    for item in items {
        serde_json::to_writer(&mut *out, item)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}
