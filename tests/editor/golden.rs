//! Golden tests for the MAC_CODING_AGENTS editor: each case under
//! `tests/golden/<case>/` holds `input.toml`, `op.txt` (one operation per
//! line, applied in turn) and either `expected.toml` (compared byte for
//! byte) or `expected.err` (a part of the error message).

use std::fs;
use std::path::{Path, PathBuf};

use macfleet::agents_doc::{Op, apply, locate, set_order, unified_diff};

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)
        .expect("tests/golden exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn visible(s: &str) -> String {
    s.replace('\r', "\\r").replace('\t', "\\t")
}

fn run(dir: &Path) -> Result<(), String> {
    let name = dir.file_name().and_then(|n| n.to_str()).unwrap_or("?");
    let input = fs::read(dir.join("input.toml")).map_err(|e| format!("{name}: {e}"))?;
    let input = String::from_utf8(input).map_err(|e| format!("{name}: {e}"))?;
    let ops = fs::read_to_string(dir.join("op.txt")).map_err(|e| format!("{name}: {e}"))?;
    let mut text = input.clone();
    let mut result = Ok(());
    for line in ops.lines().filter(|l| !l.trim().is_empty()) {
        let op = Op::parse(line).map_err(|e| format!("{name}: {e}"))?;
        match apply(&text, &op) {
            Ok(e) => text = e.text,
            Err(e) => {
                result = Err(e.to_string());
                break;
            }
        }
    }
    if let Ok(expected) = fs::read(dir.join("expected.toml")) {
        let expected = String::from_utf8(expected).map_err(|e| format!("{name}: {e}"))?;
        if let Err(e) = result {
            return Err(format!("{name}: expected an edit, got error: {e}"));
        }
        if text != expected {
            return Err(format!(
                "{name}: output differs from expected.toml\n{}",
                visible(&unified_diff(&expected, &text, "expected", "actual"))
            ));
        }
        // The result reads back, and setting the order it already has is a
        // byte-for-byte no-op.
        let after = locate(&text).map_err(|e| format!("{name}: result does not parse: {e}"))?;
        let again = set_order(&text, &after.agents).map_err(|e| format!("{name}: {e}"))?;
        if again != text {
            return Err(format!("{name}: a no-op edit changed the result"));
        }
        if let Ok(before) = locate(&input) {
            let same = set_order(&input, &before.agents).map_err(|e| format!("{name}: {e}"))?;
            if same != input {
                return Err(format!("{name}: a no-op edit changed the input"));
            }
        }
        Ok(())
    } else {
        let want = fs::read_to_string(dir.join("expected.err"))
            .map_err(|_| format!("{name}: needs expected.toml or expected.err"))?;
        match result {
            Ok(()) => Err(format!("{name}: expected an error, got\n{text}")),
            Err(e) if e.contains(want.trim()) => {
                if e.contains('\n') {
                    Err(format!("{name}: error message spans lines: {e}"))
                } else {
                    Ok(())
                }
            }
            Err(e) => Err(format!(
                "{name}: error {e:?} does not contain {:?}",
                want.trim()
            )),
        }
    }
}

#[test]
fn golden_cases() {
    let dirs = cases();
    assert!(dirs.len() >= 20, "only {} golden cases", dirs.len());
    let failures: Vec<String> = dirs.iter().filter_map(|d| run(d).err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {} golden cases failed:\n\n{}",
        failures.len(),
        dirs.len(),
        failures.join("\n\n")
    );
}
