//! The owner's TOML config file: read at start, replaced durably on every
//! accepted `PUT`. The file is the truth; its revision is a hash of its bytes,
//! so the revision survives any restart or crash without a second record.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The revision of a document: the first 12 hex digits of its SHA-256.
pub fn revision_of(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    hex::encode(&digest[..6])
}

/// The directory `path` lives in and the prefix of the temporary files
/// [`write_atomic`] makes there (`.hub.toml.` for `hub.toml`).
fn temp_place(path: &Path) -> (PathBuf, String) {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".into());
    (dir, format!(".{file_name}."))
}

/// Remove the temporary files a [`write_atomic`] of `path` left behind
/// when its process was killed mid-write (it cannot clean up after a
/// SIGKILL); called once at start, before anything writes. Returns how
/// many were removed. Only names of the exact form it makes are touched.
pub fn remove_stale_temps(path: &Path) -> std::io::Result<usize> {
    let (dir, prefix) = temp_place(path);
    let mut removed = 0;
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(middle) = name
            .strip_prefix(prefix.as_str())
            .and_then(|r| r.strip_suffix(".tmp"))
        else {
            continue;
        };
        // tempfile's random part: six alphanumerics.
        if middle.len() == 6
            && middle.bytes().all(|b| b.is_ascii_alphanumeric())
            && entry.file_type()?.is_file()
        {
            std::fs::remove_file(entry.path())?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Replace `path` with `bytes` so that, whatever happens, the path holds
/// either the old or the new document whole: a temporary file in the same
/// directory is written and fsynced, renamed over the old one, and the
/// directory is fsynced. The file mode of an existing file is kept.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let (dir, prefix) = temp_place(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    tmp.write_all(bytes)?;
    if let Ok(meta) = std::fs::metadata(path) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    std::fs::File::open(&dir)?.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_whole_and_keeps_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("hub.toml");
        std::fs::write(&p, "old").expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        write_atomic(&p, b"new\r\n").expect("atomic write");
        assert_eq!(std::fs::read(&p).expect("read"), b"new\r\n");
        let mode = std::fs::metadata(&p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let leftovers = std::fs::read_dir(dir.path()).expect("ls").count();
        assert_eq!(leftovers, 1, "no temporary file left behind");
    }

    #[test]
    fn stale_temps_of_this_file_go_and_nothing_else() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("hub.toml");
        write_atomic(&path, b"a = 1\n").expect("write");
        let keep = [
            "hub.toml",
            ".hub.toml.swp",
            ".hub.toml.ABCDEFG.tmp",
            ".other.toml.Ab12Cd.tmp",
            "hub.toml.Ab12Cd.tmp",
        ];
        for k in &keep[1..] {
            std::fs::write(dir.path().join(k), "x").expect("write");
        }
        for stale in [".hub.toml.Ab12Cd.tmp", ".hub.toml.zz9ZZ9.tmp"] {
            std::fs::write(dir.path().join(stale), "half a doc").expect("write");
        }
        std::fs::create_dir(dir.path().join(".hub.toml.dir123.tmp")).expect("dir");
        assert_eq!(remove_stale_temps(&path).expect("sweep"), 2);
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        let mut want: Vec<String> = keep.iter().map(|s| s.to_string()).collect();
        want.push(".hub.toml.dir123.tmp".into());
        want.sort();
        assert_eq!(left, want);
        assert_eq!(std::fs::read(&path).expect("read"), b"a = 1\n");
        assert_eq!(remove_stale_temps(&path).expect("again"), 0);
    }

    #[test]
    fn revision_is_content_hash() {
        assert_eq!(revision_of(b"a"), revision_of(b"a"));
        assert_ne!(revision_of(b"a"), revision_of(b"b"));
        assert_eq!(revision_of(b"a").len(), 12);
    }
}
