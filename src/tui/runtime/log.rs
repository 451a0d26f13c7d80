//! The TUI's log: a file, never the screen. Every line carries the pid, so
//! the lines of several TUIs sharing one file (a bastion's dashboards) can
//! be told apart, and the file is capped: past [`CAP`] it is renamed to
//! `macfleet.log.1` (the one before that is dropped) and a new one begun.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Largest size of the log before it is rotated.
pub const CAP: u64 = 8 * 1024 * 1024;

/// `$XDG_STATE_HOME/macfleet/macfleet.log`, `~/.local/state/...` by default.
pub fn default_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".local").join("state"))
        })?;
    Some(base.join("macfleet").join("macfleet.log"))
}

/// Send tracing to `path` (or the default file). Does nothing when a
/// subscriber is already installed or the file cannot be opened.
pub fn init(path: Option<PathBuf>) {
    let Some(path) = path.or_else(default_file) else {
        return;
    };
    let Ok(log) = CappedLog::open(&path, CAP) else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MACFLEET_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_writer(std::sync::Mutex::new(log))
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init();
}

/// An append-only file that prefixes every line with `pid=N` and rotates
/// itself at `cap` bytes.
pub struct CappedLog {
    path: PathBuf,
    file: File,
    size: u64,
    cap: u64,
    prefix: String,
    at_line_start: bool,
}

impl CappedLog {
    pub fn open(path: &Path, cap: u64) -> io::Result<CappedLog> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        let mut log = CappedLog {
            path: path.to_path_buf(),
            file,
            size,
            cap,
            prefix: format!("pid={} ", std::process::id()),
            at_line_start: true,
        };
        if log.size >= cap {
            log.rotate()?;
        }
        Ok(log)
    }

    fn rotate(&mut self) -> io::Result<()> {
        let mut old = self.path.clone().into_os_string();
        old.push(".1");
        std::fs::rename(&self.path, &old)?;
        self.file = open_append(&self.path)?;
        self.size = 0;
        Ok(())
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    let mut o = OpenOptions::new();
    o.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    o.open(path)
}

impl Write for CappedLog {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.size >= self.cap {
            // Another process may have rotated it already: rename what is
            // there now either way, and start afresh.
            let _ = self.rotate();
        }
        let mut out = Vec::with_capacity(buf.len() + self.prefix.len());
        for line in buf.split_inclusive(|&b| b == b'\n') {
            if self.at_line_start {
                out.extend_from_slice(self.prefix.as_bytes());
            }
            out.extend_from_slice(line);
            self.at_line_start = line.ends_with(b"\n");
        }
        self.file.write_all(&out)?;
        self.size += out.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_carry_the_pid_and_the_file_rotates_at_its_cap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.log");
        let mut log = CappedLog::open(&path, 100).expect("open");
        log.write_all(b"one\ntwo ").expect("write");
        log.write_all(b"halves\n").expect("write");
        let text = std::fs::read_to_string(&path).expect("read");
        let pid = format!("pid={} ", std::process::id());
        assert_eq!(text, format!("{pid}one\n{pid}two halves\n"));
        for _ in 0..10 {
            log.write_all(b"0123456789012345678901234567890123456789\n")
                .expect("write");
        }
        let now = std::fs::metadata(&path).expect("meta").len();
        let old = std::fs::metadata(dir.path().join("m.log.1"))
            .expect("rotated")
            .len();
        assert!(now <= 100 + 60, "current file {now} bytes past its cap");
        assert!(old >= 100, "the rotated file holds the earlier lines");
        let files = std::fs::read_dir(dir.path()).expect("dir").count();
        assert_eq!(files, 2, "one current file and one rotated, no more");
    }

    #[test]
    fn an_oversized_file_is_rotated_on_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.log");
        std::fs::write(&path, vec![b'x'; 500]).expect("write");
        let _log = CappedLog::open(&path, 100).expect("open");
        assert_eq!(std::fs::metadata(&path).expect("meta").len(), 0);
        assert_eq!(
            std::fs::metadata(dir.path().join("m.log.1"))
                .expect("rotated")
                .len(),
            500
        );
    }
}
