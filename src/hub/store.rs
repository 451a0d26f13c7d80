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

/// The file a write of `path` replaces: `path` itself, or, when it is a
/// symlink, the file it points to (through every link), so that the link
/// stays a link and the target (a git checkout, say) gets the document. A
/// link that points nowhere is an error: replacing it with a plain file
/// would leave the target behind unseen.
pub fn write_target(path: &Path) -> std::io::Result<PathBuf> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(path).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!(
                    "{} is a symlink to a file that cannot be reached: {e}",
                    path.display()
                ),
            )
        }),
        _ => Ok(path.to_path_buf()),
    }
}

/// Remove the temporary files a [`write_atomic`] of `path` left behind
/// when its process was killed mid-write (it cannot clean up after a
/// SIGKILL); called once at start, before anything writes. Returns how
/// many were removed. Only names of the exact form it makes are touched:
/// beside the symlink's target when `path` is one, and beside `path`.
pub fn remove_stale_temps(path: &Path) -> std::io::Result<usize> {
    let target = write_target(path)?;
    let mut removed = remove_stale_temps_beside(&target)?;
    if target != path {
        removed += remove_stale_temps_beside(path)?;
    }
    Ok(removed)
}

fn remove_stale_temps_beside(path: &Path) -> std::io::Result<usize> {
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
/// directory is fsynced. The file mode of an existing file is kept. When
/// `path` is a symlink, all of this happens beside its target
/// ([`write_target`]): the link is left as it is.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let target = write_target(path)?;
    let path = target.as_path();
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
    fn a_symlink_is_written_through_and_stays_a_link() {
        let a = tempfile::tempdir().expect("tempdir");
        let b = tempfile::tempdir().expect("tempdir");
        let target = b.path().join("fleet.toml");
        std::fs::write(&target, "old").expect("write");
        let link = a.path().join("hub.toml");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        write_atomic(&link, b"new").expect("write through");
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("meta")
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_link(&link).expect("link"), target);
        assert_eq!(std::fs::read(&target).expect("read"), b"new");
        assert_eq!(std::fs::read_dir(a.path()).expect("ls").count(), 1);
        assert_eq!(std::fs::read_dir(b.path()).expect("ls").count(), 1);
        // A temp a killed write left beside the target is cleared.
        std::fs::write(b.path().join(".fleet.toml.Ab12Cd.tmp"), "x").expect("temp");
        assert_eq!(remove_stale_temps(&link).expect("sweep"), 1);
        // A dangling link is refused, not replaced by a plain file.
        std::fs::remove_file(&target).expect("rm");
        assert!(write_atomic(&link, b"x").is_err());
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("meta")
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn revision_is_content_hash() {
        assert_eq!(revision_of(b"a"), revision_of(b"a"));
        assert_ne!(revision_of(b"a"), revision_of(b"b"));
        assert_eq!(revision_of(b"a").len(), 12);
    }
}
