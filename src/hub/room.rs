//! Whether the database's disk has room again, found without a commit: a
//! commit that fails for a full disk makes the hub refuse what must be
//! durable, and only a commit that went through said it could take them
//! again. With nothing being written, nothing ever did, and health stayed
//! `degraded` for good. A probe commit would not do: on a nearly full disk
//! it fills the room it looks for, and health would flap with each. The
//! writer asks [`probe`] instead, at most every [`PROBE_EVERY`] while
//! commits fail: the free space over a margin, a small side file written,
//! synced and removed in the database's directory, and room under the
//! database's own page limit.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

/// How often, at most, the probe runs while commits fail (and how long
/// after the last failure it first does).
pub const PROBE_EVERY: Duration = Duration::from_secs(5);

/// The free space the database's filesystem must have, as the hub's user
/// may use it, before the probe says there is room: far more than a batch
/// takes, so a nearly full disk is not said to have room.
pub const MARGIN: u64 = 64 * 1024 * 1024;

/// How much the probe writes (and syncs) into its side file: a few pages,
/// what a small commit takes.
const PROBE_BYTES: usize = 64 * 1024;

/// Pages the database must be able to grow by under its page limit.
const PAGES_FREE: i64 = 64;

/// The side file the probe writes beside the database at `db`.
pub fn side_file(db: &Path) -> PathBuf {
    let mut name = db.file_name().unwrap_or_default().to_os_string();
    name.push(".room-probe");
    db.with_file_name(name)
}

/// Whether the database at `db`, written through `conn`, has room for a
/// commit now: `Ok` with the free bytes, or why not, in a few words.
pub fn probe(db: &Path, conn: &Connection) -> Result<u64, String> {
    let dir = match db.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let free = free_bytes(&dir).map_err(|e| format!("its free space cannot be read ({e})"))?;
    if free < MARGIN {
        return Err(format!(
            "{} MiB free, under the {} MiB margin",
            free / (1024 * 1024),
            MARGIN / (1024 * 1024)
        ));
    }
    write_side_file(&side_file(db)).map_err(|e| format!("a probe write failed ({e})"))?;
    page_room(conn)?;
    Ok(free)
}

/// The bytes free on the filesystem holding `dir` to an unprivileged
/// user (`statvfs`'s `f_bavail`).
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: a zeroed statvfs is a valid value of a plain C struct.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a struct statvfs(3) fills.
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // The fields' widths differ between platforms.
    #[allow(clippy::useless_conversion)]
    let (avail, frsize) = (u64::from(s.f_bavail), u64::from(s.f_frsize));
    Ok(avail.saturating_mul(frsize))
}

/// Write [`PROBE_BYTES`] to `path`, sync it, and remove it (removed
/// whether the write went through or not).
fn write_side_file(path: &Path) -> std::io::Result<()> {
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        f.write_all(&[0u8; PROBE_BYTES])?;
        f.sync_all()
    })();
    let removed = std::fs::remove_file(path);
    written?;
    removed
}

/// Whether the database may grow by [`PAGES_FREE`] pages under its
/// `max_page_count` (always, unless a limit was set: the test hook
/// [`quota_from_file`] sets one).
fn page_room(conn: &Connection) -> Result<(), String> {
    if let Some(n) = quota_from_file() {
        conn.pragma_update(None, "max_page_count", n)
            .map_err(|e| format!("the test page limit cannot be set ({e})"))?;
    }
    let pragma = |name: &str| -> Result<i64, String> {
        conn.pragma_query_value(None, name, |r| r.get(0))
            .map_err(|e| format!("its {name} cannot be read ({e})"))
    };
    let (pages, max, free) = (
        pragma("page_count")?,
        pragma("max_page_count")?,
        pragma("freelist_count")?,
    );
    if max - pages + free < PAGES_FREE {
        return Err(format!(
            "the database holds {pages} of its {max} pages, {free} free"
        ));
    }
    Ok(())
}

/// A test hook for `tests/hub/damage.rs`: with `MACFLEET_TEST_MAX_PAGE_COUNT_FILE`
/// naming a file that holds a number, each probe gives the writer's
/// connection that `max_page_count`, so a test that filled the database
/// through `MACFLEET_TEST_MAX_PAGE_COUNT` can give it room again, as an
/// operator freeing a disk would. Unset (always, outside that test), nothing.
fn quota_from_file() -> Option<i64> {
    let path = std::env::var_os("MACFLEET_TEST_MAX_PAGE_COUNT_FILE")?;
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_side_file_sits_beside_the_database_and_is_removed() {
        let dir = std::env::temp_dir().join(format!("macfleet-room-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory");
        let db = dir.join("hub.db");
        assert_eq!(side_file(&db), dir.join("hub.db.room-probe"));
        write_side_file(&side_file(&db)).expect("a probe write");
        assert!(!side_file(&db).exists());
        let _ = std::fs::remove_dir(&dir);
    }

    #[test]
    fn a_database_at_its_page_limit_has_no_room() {
        let conn = Connection::open_in_memory().expect("sqlite");
        assert_eq!(page_room(&conn), Ok(()));
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .expect("a table");
        let pages: i64 = conn
            .pragma_query_value(None, "page_count", |r| r.get(0))
            .expect("page_count");
        conn.pragma_update(None, "max_page_count", pages + 1)
            .expect("max_page_count");
        let why = page_room(&conn).expect_err("no room");
        assert!(why.contains("pages"), "{why}");
    }
}
