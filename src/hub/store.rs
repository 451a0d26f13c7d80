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

/// What [`sweep_stale_temps`] did with the temporary files a killed
/// config write left behind.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Removed: empty, or the hub's own bytes.
    pub removed: usize,
    /// Kept aside as `<name>.earlier-edit-<UTC time>`: bytes the hub
    /// never wrote (a hand edit swapped out when the hub was killed
    /// between its swap and its swap back).
    pub kept: Vec<PathBuf>,
}

/// Clear the temporary files a config write of `path` left behind when
/// its process was killed mid-write (it cannot clean up after a SIGKILL);
/// called once at start, before anything writes, so restarts do not pile
/// them up. Only names of the exact form the hub makes are looked at:
/// beside the symlink's target when `path` is one the hub follows
/// ([`resolve`]), and beside `path`.
///
/// Such a file holds either the hub's own bytes (its new document, whole
/// or cut short, before the swap; the document it was checked against,
/// after it) or, when the hub was killed between the swap and the swap
/// back, a hand edit that came out of the path. Nothing that may hold
/// someone's bytes is deleted: a file is removed only when it is empty or
/// `ours` says its bytes are the hub's (a document it wrote or took: the
/// file at the path, its history, its write in progress); any other is
/// kept aside beside the config ([`keep_aside`]).
pub fn sweep_stale_temps(
    path: &Path,
    link_dirs: &[PathBuf],
    ours: &dyn Fn(&[u8]) -> bool,
) -> std::io::Result<Swept> {
    let target = match resolve(path, link_dirs)? {
        Ok(t) => t,
        Err(_) => path.to_path_buf(),
    };
    let mut swept = Swept::default();
    sweep_beside(&target, ours, &mut swept)?;
    if target != path {
        sweep_beside(path, ours, &mut swept)?;
    }
    Ok(swept)
}

fn dir_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// The file the hub's config `path` stands for: `path` itself, or, when
/// it is a symlink, the file it resolves to (through every link) if that
/// file lies in `path`'s own directory or in one of `link_dirs`
/// (`--config-link-dir`), compared as canonical paths. `Ok(Err(why))`: a
/// link to anywhere else, which the hub neither reads, serves nor writes
/// (a `hub.toml` pointing at the hub's TLS key or `/etc/passwd`); `why`
/// names no path but the config's, since `/v1/health` says it to anyone.
pub fn resolve(path: &Path, link_dirs: &[PathBuf]) -> std::io::Result<Result<PathBuf, String>> {
    let m = std::fs::symlink_metadata(path)?;
    if !m.file_type().is_symlink() {
        return Ok(Ok(path.to_path_buf()));
    }
    let target = write_target(path)?;
    let own = std::fs::canonicalize(dir_of(path))?;
    let within = target.parent().is_some_and(|t| {
        t == own
            || link_dirs
                .iter()
                .any(|d| std::fs::canonicalize(d).is_ok_and(|d| d == t))
    });
    if within {
        Ok(Ok(target))
    } else {
        Ok(Err(format!(
            "{} is a symlink to a file outside its own directory and every --config-link-dir; the hub does not follow it (point the link into its directory, or name the target's directory with --config-link-dir)",
            path.display()
        )))
    }
}

/// A write refused because the config is a link the hub does not follow
/// (as [`resolve`] says): carried in the `io::Error` so the write's caller
/// can answer it as the config being unusable, whatever the link points
/// at by the time the answer is made (a link repointed out and back while
/// the write ran).
#[derive(Debug)]
pub struct LinkRefused(pub String);

impl std::fmt::Display for LinkRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LinkRefused {}

/// The sentence of a [`LinkRefused`] that `e` carries.
pub fn link_refused(e: &std::io::Error) -> Option<&str> {
    e.get_ref()
        .and_then(|r| r.downcast_ref::<LinkRefused>())
        .map(|l| l.0.as_str())
}

/// How [`replace_checked`] ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Replaced {
    /// The new document is in place, durably.
    Done,
    /// What was swapped out was not what the write was checked against (a
    /// hand edit landed in between): it was swapped back, and the new
    /// document is not on disk.
    Raced,
    /// [`Replaced::Raced`], and two hand edits landed: the later stands,
    /// the earlier was kept aside here (`<name>.earlier-edit-<UTC time>`).
    RacedKept(PathBuf),
}

/// `renameat2(2)` with `flags` (`RENAME_EXCHANGE`, `RENAME_NOREPLACE`).
fn rename2(from: &Path, to: &Path, flags: libc::c_uint) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let from = std::ffi::CString::new(from.as_os_str().as_bytes())?;
    let to = std::ffi::CString::new(to.as_os_str().as_bytes())?;
    // SAFETY: two NUL-terminated paths that outlive the call.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            from.as_ptr(),
            libc::AT_FDCWD,
            to.as_ptr(),
            flags,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The filesystem (or kernel) has no such `renameat2` flag.
fn unsupported(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS))
}

/// Replace the hub's config `path` (resolved by [`resolve`]: a link the
/// hub does not follow is an error, never written through) with `bytes`,
/// as [`write_atomic`] does, but only over the document the write was
/// checked against: the new file, written and fsynced beside the old, is
/// swapped in with `renameat2(RENAME_EXCHANGE)`, and what came out is
/// given to `was` (true: the document the write was checked against). If
/// it was not (a hand edit renamed into place, or written in place, after
/// the check), it is swapped back and [`Replaced::Raced`] is returned:
/// the hand edit stands, and nothing of the write remains.
///
/// Nothing that came out of the path is deleted unless it is the hub's
/// own new file (by inode) or the document the write was checked against.
/// A second hand edit renamed over the new file between the swap and the
/// swap back comes out of the swap back instead of the new file: it is the
/// newer, so it is swapped in too, and the earlier hand edit, which then
/// comes out, is kept beside the config as
/// `<name>.earlier-edit-<UTC time>` (never over anything), with a warning
/// in the log; and so on for a third (see [`settle_swapped`]).
///
/// Where the filesystem has no `RENAME_EXCHANGE` (`EINVAL`/`ENOSYS`), the
/// file is compared once more (`was` on `path` itself) and the new one
/// renamed over it: a hand edit landing between that compare and the
/// rename (microseconds) is replaced. A path with no file yet is taken
/// with `RENAME_NOREPLACE`, so a file made meanwhile is never replaced.
///
/// The new file keeps the mode of the file it replaces; where there is
/// none (the config was removed), it gets `new_mode` (the mode the file
/// last had, as the hub saw it), else tempfile's 0600.
pub fn replace_checked(
    path: &Path,
    link_dirs: &[PathBuf],
    bytes: &[u8],
    new_mode: Option<u32>,
    was: &dyn Fn(&Path) -> bool,
) -> std::io::Result<Replaced> {
    let stall_back = |round: u32| {
        if round == 0 {
            fault_stall("the swap back");
        }
    };
    replace_checked_hooked(path, link_dirs, bytes, new_mode, was, &stall_back)
}

/// The test hook `MACFLEET_FAULT_STALL_IN_SWAP_MS`: a config write waits
/// this long before its exchange and again before its first swap back
/// (saying so in the log), so a test can rename hand edits in at those
/// moments. Unset, nothing.
fn fault_stall(before: &str) {
    use std::sync::LazyLock;
    static STALL: LazyLock<Option<std::time::Duration>> = LazyLock::new(|| {
        std::env::var("MACFLEET_FAULT_STALL_IN_SWAP_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .map(std::time::Duration::from_millis)
    });
    if let Some(d) = *STALL {
        tracing::warn!("fault hook: a config write stalls before {before}");
        std::thread::sleep(d);
    }
}

/// [`replace_checked`], calling `before_swap_back(round)` right before each
/// exchange that puts a hand edit back (round 0: the first swap back): a
/// unit test renames more hand edits in there.
fn replace_checked_hooked(
    path: &Path,
    link_dirs: &[PathBuf],
    bytes: &[u8],
    new_mode: Option<u32>,
    was: &dyn Fn(&Path) -> bool,
    before_swap_back: &dyn Fn(u32),
) -> std::io::Result<Replaced> {
    let target = match resolve(path, link_dirs) {
        Ok(Ok(t)) => t,
        Ok(Err(why)) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                LinkRefused(why),
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => path.to_path_buf(),
        Err(e) => return Err(e),
    };
    let path = target.as_path();
    let (dir, prefix) = temp_place(path);
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .tempfile_in(&dir)?;
    tmp.write_all(bytes)?;
    match (std::fs::metadata(path), new_mode) {
        (Ok(meta), _) => tmp.as_file().set_permissions(meta.permissions())?,
        (Err(_), Some(mode)) => {
            use std::os::unix::fs::PermissionsExt;
            tmp.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))?
        }
        (Err(_), None) => {}
    }
    tmp.as_file().sync_all()?;
    let ours = inode(tmp.path())?;
    // Removed when dropped, until the swap: after it, the temporary name
    // holds what came out, which is removed only once known to be ours.
    let tmp = tmp.into_temp_path();
    fault_stall("the swap");
    let sync_dir = || std::fs::File::open(&dir)?.sync_all();
    match rename2(&tmp, path, libc::RENAME_EXCHANGE) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && tmp.exists() => {
            // No file at the path: only if none appears meanwhile.
            return match rename2(&tmp, path, libc::RENAME_NOREPLACE) {
                Ok(()) => {
                    sync_dir()?;
                    Ok(Replaced::Done)
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Replaced::Raced),
                Err(e) if unsupported(&e) => make_by_link(tmp, path, &dir),
                Err(e) => Err(e),
            };
        }
        Err(e) if unsupported(&e) => return replace_by_compare(tmp, path, &dir, was),
        Err(e) => return Err(e),
    }
    // From here the temporary name holds what came out of the path: never
    // deleted by a drop (an error below leaves it, and says so).
    let swapped = tmp.keep().map_err(|e| e.error)?;
    if was(&swapped) {
        // The document checked against: its bytes are the hub's.
        std::fs::remove_file(&swapped)?;
        sync_dir()?;
        return Ok(Replaced::Done);
    }
    let settled = settle_swapped(path, &swapped, ours, before_swap_back);
    if let Err(e) = &settled {
        tracing::error!(path = %path.display(), kept = %swapped.display(), error = %e, "a config write could not put a hand edit back; what came out of the config is kept under the temporary name");
    }
    let kept = settled?;
    sync_dir()?;
    Ok(kept.map_or(Replaced::Raced, Replaced::RacedKept))
}

/// The fallback where the filesystem has no `RENAME_EXCHANGE`: compare
/// the file at `path` once more (`was`), then rename the new file (`tmp`,
/// written and fsynced beside it) over it. A hand edit landing between
/// that compare and the rename (microseconds) is replaced.
fn replace_by_compare(
    tmp: tempfile::TempPath,
    path: &Path,
    dir: &Path,
    was: &dyn Fn(&Path) -> bool,
) -> std::io::Result<Replaced> {
    if !was(path) {
        return Ok(Replaced::Raced);
    }
    tmp.persist(path).map_err(|e| e.error)?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(Replaced::Done)
}

/// The fallback where the filesystem has no `RENAME_NOREPLACE` and no
/// file is at `path`: a hard link never replaces a file made meanwhile
/// ([`Replaced::Raced`] then), and the temporary name goes once linked.
fn make_by_link(tmp: tempfile::TempPath, path: &Path, dir: &Path) -> std::io::Result<Replaced> {
    match std::fs::hard_link(&tmp, path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(Replaced::Raced),
        Err(e) => return Err(e),
    }
    tmp.close()?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(Replaced::Done)
}

fn inode(path: &Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path)?;
    Ok((m.dev(), m.ino()))
}

/// How many hand edits renamed in one after another during one swap back
/// are put in place before the one out is simply kept aside.
const SWAP_BACK_ROUNDS: u32 = 16;

/// After a swap put the hub's new file (inode `ours`) at `path` and a hand
/// edit came out into `swapped`: put the hand edit back, and make sure
/// whatever comes out is the hub's own file before deleting it.
///
/// Each exchange puts the file held in `swapped` at `path` and takes out
/// what was there. If that is the file the hub had put there before (no
/// one renamed anything in since), the file now at `path` stands: what
/// came out is the hub's new file (removed) or an earlier hand edit
/// displaced for a later one (kept aside, [`keep_aside`]). Anything else
/// came out because someone renamed it over what the hub had put there:
/// it is the newest hand edit, and goes back in the next round. Every
/// file another writer renamed onto `path` thus either stands at `path`,
/// is replaced there by that writer's own later rename, or is kept.
fn settle_swapped(
    path: &Path,
    swapped: &Path,
    ours: (u64, u64),
    before_swap_back: &dyn Fn(u32),
) -> std::io::Result<Option<PathBuf>> {
    let mut placed = ours;
    for round in 0..SWAP_BACK_ROUNDS {
        let held = inode(swapped)?;
        before_swap_back(round);
        rename2(swapped, path, libc::RENAME_EXCHANGE)?;
        let out = inode(swapped)?;
        if out != placed {
            // Renamed in over what the hub had put there: the newest.
            placed = held;
            continue;
        }
        if out == ours {
            std::fs::remove_file(swapped)?;
            return Ok(None);
        }
        let kept = keep_aside(path, swapped)?;
        tracing::warn!(path = %path.display(), kept = %kept.display(), "two hand edits were renamed into place during a config write; the later stands, the earlier is kept");
        return Ok(Some(kept));
    }
    let kept = keep_aside(path, swapped)?;
    tracing::warn!(path = %path.display(), kept = %kept.display(), "hand edits kept being renamed into place during a config write; the last one out is kept");
    Ok(Some(kept))
}

/// Move `from` (beside `path`) to `<name>.earlier-edit-<UTC time>`, never
/// over anything (a hard link, then the old name removed). Returns where.
fn keep_aside(path: &Path, from: &Path) -> std::io::Result<PathBuf> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.6fZ");
    let dir = dir_of(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "config".into());
    for n in 0..1000u32 {
        let suffix = if n == 0 {
            String::new()
        } else {
            format!(".{n}")
        };
        let to = dir.join(format!("{name}.earlier-edit-{stamp}{suffix}"));
        match std::fs::hard_link(from, &to) {
            Ok(()) => {
                std::fs::remove_file(from)?;
                return Ok(to);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "every name {name}.earlier-edit-{stamp}.N is taken"
    )))
}

fn sweep_beside(
    path: &Path,
    ours: &dyn Fn(&[u8]) -> bool,
    swept: &mut Swept,
) -> std::io::Result<()> {
    let (dir, prefix) = temp_place(path);
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
        if middle.len() != 6
            || !middle.bytes().all(|b| b.is_ascii_alphanumeric())
            || !entry.file_type()?.is_file()
        {
            continue;
        }
        let temp = entry.path();
        if holds_only_ours(&temp, ours)? {
            std::fs::remove_file(&temp)?;
            swept.removed += 1;
        } else {
            swept.kept.push(keep_aside(path, &temp)?);
        }
    }
    Ok(())
}

/// Whether the file at `temp` is empty or holds bytes `ours` knows; one
/// larger than any document the hub writes (1 MiB) is not read.
fn holds_only_ours(temp: &Path, ours: &dyn Fn(&[u8]) -> bool) -> std::io::Result<bool> {
    use std::io::Read;
    const BOUND: u64 = 1 << 20;
    let f = std::fs::File::open(temp)?;
    let len = f.metadata()?.len();
    if len == 0 {
        return Ok(true);
    }
    if len > BOUND {
        return Ok(false);
    }
    let mut bytes = Vec::with_capacity(len as usize);
    f.take(BOUND + 1).read_to_end(&mut bytes)?;
    Ok(bytes.is_empty() || ours(&bytes))
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
        let ours = |b: &[u8]| b == b"half a doc";
        let swept = sweep_stale_temps(&path, &[], &ours).expect("sweep");
        assert_eq!(
            swept,
            Swept {
                removed: 2,
                kept: vec![]
            }
        );
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
        let swept = sweep_stale_temps(&path, &[], &ours).expect("again");
        assert_eq!(swept, Swept::default());
    }

    /// A hub killed between its swap and its swap back leaves a hand edit
    /// under the temporary name: the sweep at start keeps it aside (not a
    /// byte lost), and removes an empty one (a write killed before its
    /// first byte).
    #[test]
    fn a_stale_temp_holding_bytes_the_hub_never_wrote_is_kept_aside() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("hub.toml");
        std::fs::write(&path, "the hub's").expect("write");
        let hand = dir.path().join(".hub.toml.Xy12Zw.tmp");
        std::fs::write(&hand, "# a hand edit\n").expect("write");
        std::fs::write(dir.path().join(".hub.toml.Em0ty0.tmp"), "").expect("write");
        let ours = |b: &[u8]| b == b"the hub's";
        let swept = sweep_stale_temps(&path, &[], &ours).expect("sweep");
        assert_eq!(swept.removed, 1);
        assert_eq!(swept.kept.len(), 1, "{swept:?}");
        let kept = &swept.kept[0];
        let name = kept
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with("hub.toml.earlier-edit-"), "{name}");
        assert_eq!(std::fs::read(kept).expect("kept"), b"# a hand edit\n");
        assert!(!hand.exists());
        assert_eq!(std::fs::read_dir(dir.path()).expect("ls").count(), 2);
        assert_eq!(std::fs::read(&path).expect("read"), b"the hub's");
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
        // Not beside a target the hub does not follow.
        let ours = |b: &[u8]| b == b"x";
        let swept = sweep_stale_temps(&link, &[], &ours).expect("sweep");
        assert_eq!(swept, Swept::default());
        let named = [b.path().to_path_buf()];
        let swept = sweep_stale_temps(&link, &named, &ours).expect("sweep");
        assert_eq!(swept.removed, 1);
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
    fn a_link_is_followed_only_into_its_own_directory_or_a_named_one() {
        let a = tempfile::tempdir().expect("tempdir");
        let b = tempfile::tempdir().expect("tempdir");
        let link = a.path().join("hub.toml");
        // Within its own directory (through a second link too).
        let beside = a.path().join("fleet.toml");
        std::fs::write(&beside, "beside").expect("write");
        std::os::unix::fs::symlink("fleet.toml", &link).expect("symlink");
        let want = std::fs::canonicalize(&beside).expect("canonical");
        assert_eq!(resolve(&link, &[]).expect("resolve"), Ok(want));
        // Elsewhere: not followed, and the reason names no target.
        let away = b.path().join("hub.key");
        std::fs::write(&away, "key").expect("write");
        std::fs::remove_file(&link).expect("rm");
        std::os::unix::fs::symlink(&away, &link).expect("symlink");
        let why = resolve(&link, &[]).expect("resolve").expect_err("outside");
        assert!(why.contains("outside its own directory"), "{why}");
        assert!(!why.contains(&b.path().display().to_string()), "{why}");
        let e = replace_checked(&link, &[], b"new", None, &|_| true).expect_err("refused");
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        assert_eq!(std::fs::read(&away).expect("read"), b"key");
        // Named with --config-link-dir: followed and written through.
        let named = [b.path().to_path_buf()];
        let want = std::fs::canonicalize(&away).expect("canonical");
        assert_eq!(resolve(&link, &named).expect("resolve"), Ok(want));
        let done = replace_checked(&link, &named, b"new", None, &|_| true).expect("written");
        assert_eq!(done, Replaced::Done);
        assert_eq!(std::fs::read(&away).expect("read"), b"new");
        assert!(
            std::fs::symlink_metadata(&link)
                .expect("meta")
                .file_type()
                .is_symlink()
        );
    }

    #[test]
    fn a_checked_replace_swaps_back_when_the_file_is_not_what_was_checked() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("hub.toml");
        std::fs::write(&p, "hand edit").expect("write");
        let was = |q: &Path| std::fs::read(q).is_ok_and(|b| b == b"checked");
        assert_eq!(
            replace_checked(&p, &[], b"new", None, &was).expect("raced"),
            Replaced::Raced
        );
        assert_eq!(std::fs::read(&p).expect("read"), b"hand edit");
        std::fs::write(&p, "checked").expect("write");
        assert_eq!(
            replace_checked(&p, &[], b"new", None, &was).expect("done"),
            Replaced::Done
        );
        assert_eq!(std::fs::read(&p).expect("read"), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).expect("ls").count(), 1);
        // No file yet: made, never over one made meanwhile.
        let q = dir.path().join("new.toml");
        assert_eq!(
            replace_checked(&q, &[], b"first", None, &|_| true).expect("made"),
            Replaced::Done
        );
        assert_eq!(std::fs::read(&q).expect("read"), b"first");
    }

    /// The double race: a second hand edit renamed in over the new file
    /// between the swap and the swap back (the hook stands for the editor
    /// there). The later stands at the path, the earlier is kept beside it,
    /// nothing of either is deleted; with a third renamed in during the
    /// next swap back, the newest stands and the one the hub took out is
    /// kept (the one the third replaced was replaced by its own writer).
    #[test]
    fn a_second_hand_edit_during_the_swap_back_is_kept_not_deleted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("hub.toml");
        let rename_in = |text: &str| {
            let t = dir.path().join(".edit.tmp");
            std::fs::write(&t, text).expect("write the edit");
            std::fs::rename(&t, &p).expect("rename the edit in");
        };
        let was = |q: &Path| std::fs::read(q).is_ok_and(|b| b == b"checked");
        let listing = || {
            let mut names: Vec<(String, String)> = std::fs::read_dir(dir.path())
                .expect("ls")
                .map(|e| {
                    let e = e.expect("entry");
                    let name = e.file_name().to_string_lossy().into_owned();
                    let text = std::fs::read_to_string(e.path()).expect("read");
                    let name = match name.split_once(".earlier-edit-") {
                        Some((head, _)) => format!("{head}.earlier-edit-*"),
                        None => name,
                    };
                    (name, text)
                })
                .collect();
            names.sort();
            names
        };
        std::fs::write(&p, "edit 1").expect("write");
        let hook = |round: u32| {
            if round == 0 {
                rename_in("edit 2");
            }
        };
        let r = replace_checked_hooked(&p, &[], b"new", None, &was, &hook).expect("raced");
        assert!(
            matches!(&r, Replaced::RacedKept(k) if k.to_string_lossy().contains(".earlier-edit-")),
            "{r:?}"
        );
        assert_eq!(
            listing(),
            vec![
                ("hub.toml".into(), "edit 2".into()),
                ("hub.toml.earlier-edit-*".into(), "edit 1".into()),
            ]
        );
        for f in std::fs::read_dir(dir.path()).expect("ls") {
            let f = f.expect("entry").path();
            if f != p {
                std::fs::remove_file(f).expect("rm");
            }
        }
        // A third, renamed in over the second while the hub puts it back.
        std::fs::write(&p, "edit 1").expect("write");
        let hook = |round: u32| match round {
            0 => rename_in("edit 2"),
            1 => rename_in("edit 3"),
            _ => {}
        };
        let r = replace_checked_hooked(&p, &[], b"new", None, &was, &hook).expect("raced");
        assert!(matches!(r, Replaced::RacedKept(_)), "{r:?}");
        assert_eq!(
            listing(),
            vec![
                ("hub.toml".into(), "edit 3".into()),
                ("hub.toml.earlier-edit-*".into(), "edit 2".into()),
            ]
        );
        // No second edit: the first stands, only the hub's file goes.
        for f in std::fs::read_dir(dir.path()).expect("ls") {
            let f = f.expect("entry").path();
            if f != p {
                std::fs::remove_file(f).expect("rm");
            }
        }
        std::fs::write(&p, "edit 1").expect("write");
        let r = replace_checked_hooked(&p, &[], b"new", None, &was, &|_| {}).expect("raced");
        assert_eq!(r, Replaced::Raced);
        assert_eq!(listing(), vec![("hub.toml".into(), "edit 1".into())]);
    }

    /// The fallbacks for a filesystem without `RENAME_EXCHANGE` or
    /// `RENAME_NOREPLACE` (ext4 and tmpfs have both, so the syscall path
    /// cannot be made to fail here; `unsupported` is what chooses them).
    #[test]
    fn the_fallbacks_without_exchange_compare_and_never_replace_a_new_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("hub.toml");
        let new_temp = |text: &str| {
            let mut t = tempfile::Builder::new()
                .prefix(".hub.toml.")
                .suffix(".tmp")
                .tempfile_in(dir.path())
                .expect("temp");
            t.write_all(text.as_bytes()).expect("write");
            t.into_temp_path()
        };
        let count = || std::fs::read_dir(dir.path()).expect("ls").count();
        let was = |q: &Path| std::fs::read(q).is_ok_and(|b| b == b"checked");
        std::fs::write(&p, "hand edit").expect("write");
        let r = replace_by_compare(new_temp("new"), &p, dir.path(), &was).expect("raced");
        assert_eq!(r, Replaced::Raced);
        assert_eq!(std::fs::read(&p).expect("read"), b"hand edit");
        assert_eq!(count(), 1, "the new file is dropped");
        std::fs::write(&p, "checked").expect("write");
        let r = replace_by_compare(new_temp("new"), &p, dir.path(), &was).expect("done");
        assert_eq!(r, Replaced::Done);
        assert_eq!(std::fs::read(&p).expect("read"), b"new");
        assert_eq!(count(), 1);
        // No file yet: made by a link, never over one made meanwhile.
        let q = dir.path().join("new.toml");
        let r = make_by_link(new_temp("first"), &q, dir.path()).expect("made");
        assert_eq!(r, Replaced::Done);
        assert_eq!(std::fs::read(&q).expect("read"), b"first");
        let r = make_by_link(new_temp("second"), &q, dir.path()).expect("raced");
        assert_eq!(r, Replaced::Raced);
        assert_eq!(std::fs::read(&q).expect("read"), b"first");
        assert_eq!(count(), 2);
        for errno in [libc::EINVAL, libc::ENOSYS] {
            assert!(unsupported(&std::io::Error::from_raw_os_error(errno)));
        }
        assert!(!unsupported(&std::io::Error::from_raw_os_error(
            libc::EXDEV
        )));
    }

    #[test]
    fn revision_is_content_hash() {
        assert_eq!(revision_of(b"a"), revision_of(b"a"));
        assert_ne!(revision_of(b"a"), revision_of(b"b"));
        assert_eq!(revision_of(b"a").len(), 12);
    }
}
