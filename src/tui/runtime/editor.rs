//! `e` on the Ladder: the whole document in the user's editor. The runner
//! pauses the key reader and gives the terminal back around [`edit`]; this
//! only writes the file, runs the editor and reads the file back.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};

/// The pid of the editor while one is open (0 when none is).
static OPEN: AtomicI32 = AtomicI32::new(0);

/// An editor is open: the terminal is its (a Ctrl-C typed there is the
/// editor's to handle, as git leaves it while it waits for one).
pub fn is_open() -> bool {
    OPEN.load(Ordering::SeqCst) != 0
}

/// The process is ending: end the editor too, so it does not go on in a
/// terminal the shell has taken back. It gets SIGTERM (vim saves its swap
/// file and restores the terminal).
pub fn stop_open() {
    let pid = OPEN.swap(0, Ordering::SeqCst);
    if pid > 0 {
        tracing::info!(pid, "ending the open editor");
        #[cfg(unix)]
        // SAFETY: kill only sends a signal to the child we started.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

/// The editor to run: `$EDITOR`, else `$VISUAL`, else `vi`. A value may
/// hold arguments (`code -w`, `vim -u NONE`): it runs through `sh`, as git
/// runs `core.editor`.
pub fn command() -> String {
    ["EDITOR", "VISUAL"]
        .into_iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.trim().is_empty())
        .unwrap_or_else(|| "vi".to_string())
}

/// Write `text` to a file of its own (mode 0600, in a private temporary
/// directory that goes away afterwards), run the editor on it, wait, and
/// read back what it left. An editor that exits with an error (`:cq` in
/// vim) is an error: nothing is taken.
pub fn edit(text: &str) -> Result<String, String> {
    edit_with(&command(), text)
}

/// [`edit`] with the editor command given.
pub fn edit_with(editor: &str, text: &str) -> Result<String, String> {
    let dir = tempfile::Builder::new()
        .prefix("macfleet-edit-")
        .tempdir()
        .map_err(|e| format!("no temporary directory: {e}"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("making {} private: {e}", dir.path().display()))?;
    }
    let path = dir.path().join("hub.toml");
    write_private(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    tracing::info!(%editor, "opening the document in the editor");
    // `exec`: the shell becomes the editor, so the pid kept in `OPEN` is
    // the editor's own (a signal to it reaches it, not a shell around it).
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("exec {editor} \"$1\""))
        .arg("macfleet-editor")
        .arg(&path)
        .spawn()
        .map_err(|e| format!("cannot run {editor:?}: {e}"))?;
    OPEN.store(child.id() as i32, Ordering::SeqCst);
    let status = child.wait();
    OPEN.store(0, Ordering::SeqCst);
    let status = status.map_err(|e| format!("waiting for {editor:?}: {e}"))?;
    if !status.success() {
        return Err(format!("{editor:?} exited with {status}"));
    }
    let bytes = std::fs::read(&path).map_err(|e| format!("reading the document back: {e}"))?;
    String::from_utf8(bytes).map_err(|_| "the document is not valid UTF-8".to_string())
}

/// Keep a cancelled draft where it outlives the session: a file of its
/// own (0600) in `$XDG_STATE_HOME/macfleet/drafts/` (0700; by default under
/// `~/.local/state`). Returns its path.
pub fn keep_draft(text: &str) -> Result<String, String> {
    keep_draft_in(&drafts_dir()?, text)
}

/// `$XDG_STATE_HOME/macfleet/drafts/` (by default under `~/.local/state`).
pub fn drafts_dir() -> Result<std::path::PathBuf, String> {
    super::log::default_file()
        .and_then(|f| f.parent().map(|d| d.join("drafts")))
        .ok_or_else(|| "no $XDG_STATE_HOME or $HOME to keep it under".to_string())
}

/// [`keep_draft`] in `dir` (made 0700 if need be): a new file of its own.
pub fn keep_draft_in(dir: &Path, text: &str) -> Result<String, String> {
    let dir = dir.to_path_buf();
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("making {} private: {e}", dir.display()))?;
    }
    let stamp = chrono::Utc::now().format("%Y%m%d-%H%M%S");
    for n in 0..100u32 {
        // Short, so the status line shows it whole.
        let name = match n {
            0 => format!("draft-{stamp}.toml"),
            n => format!("draft-{stamp}-{n}.toml"),
        };
        let path = dir.join(name);
        match write_private(&path, text) {
            Ok(()) => return Ok(path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("writing {}: {e}", path.display())),
        }
    }
    Err(format!("no free file name in {}", dir.display()))
}

/// Write a new file (never over one), mode 0600, synced.
pub fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancelled_draft_is_kept_in_a_private_file_of_its_own() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().expect("tempdir");
        let dir = base.path().join("macfleet").join("drafts");
        let a = keep_draft_in(&dir, "MAC_CODING_AGENTS = [\"pi\", \"pi\"]\n").expect("kept");
        let b = keep_draft_in(&dir, "second\n").expect("kept");
        assert_ne!(a, b, "one file a draft");
        assert!(a.starts_with(dir.to_str().expect("utf-8")), "{a}");
        assert_eq!(
            std::fs::read_to_string(&a).expect("read"),
            "MAC_CODING_AGENTS = [\"pi\", \"pi\"]\n"
        );
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(Path::new(&a)), 0o600);
        assert_eq!(mode(&dir), 0o700);
    }

    /// A scripted editor: `edit` runs it through `sh`, gives it the file,
    /// and reads back what it wrote.
    #[test]
    fn runs_the_editor_on_a_private_copy_and_reads_it_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let seen = dir.path().join("seen");
        let script = dir.path().join("ed.sh");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\nstat -c %a \"$1\" > '{0}'\nstat -c %a \"$(dirname \"$1\")\" >> '{0}'\nsed -i 's/pi/claude/' \"$1\"\n",
                seen.display()
            ),
        )
        .expect("script");
        let cmd = format!("sh {}", script.display());
        let back = edit_with(&cmd, "a = [\"pi\"]\n");
        assert_eq!(back, Ok("a = [\"claude\"]\n".to_string()));
        let modes = std::fs::read_to_string(&seen).expect("seen");
        assert_eq!(modes, "600\n700\n", "a private file in a private directory");
        let failing = edit_with("false", "x");
        assert!(
            failing.as_ref().is_err_and(|e| e.contains("exited")),
            "{failing:?}"
        );
    }
}
