//! `macfleet agents ...`: the real binary editing real files and the real
//! hub's document, with the exit codes of product.md.

mod common;

use common::{TestHub, macfleet, text};
use std::os::unix::fs::PermissionsExt;

const DOC: &str = "# owner's notes\r\n[fleet]\r\nMAC_CODING_AGENTS = [\r\n  \"opencode\", # cheap\r\n  \"pi\",\r\n  \"claude\",   # strong\r\n]\r\n[fleet.staging]\r\nMAC_CODING_AGENTS = [\"pi\"]";

#[test]
fn file_edits_preserve_everything_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("hub.toml");
    std::fs::write(&f, DOC).expect("write");
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let p = f.to_str().expect("utf-8");

    // Dry run: the diff, nothing written.
    let out = macfleet(
        &["agents", "move", "claude", "0", "--file", p, "--dry-run"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("+  \"claude\",   # strong"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(std::fs::read_to_string(&f).expect("read"), DOC);

    // The move: the comment travels, CRLF and the missing final newline stay,
    // the other table is untouched, the mode is kept.
    let out = macfleet(&["agents", "move", "claude", "0", "--file", p], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let after = std::fs::read_to_string(&f).expect("read");
    assert_eq!(
        after,
        DOC.replace(
            "  \"opencode\", # cheap\r\n  \"pi\",\r\n  \"claude\",   # strong\r\n",
            "  \"claude\",   # strong\r\n  \"opencode\", # cheap\r\n  \"pi\",\r\n"
        )
    );
    let mode = std::fs::metadata(&f).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let show = macfleet(&["agents", "show", "--file", p], &[]);
    assert_eq!(text(&show.stdout), "0  claude\n1  opencode\n2  pi\n");

    // Unknown-but-well-formed names warn; bad input exits 4 and loses nothing.
    let out = macfleet(&["agents", "add", "aider", "--file", p], &[]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("warning"),
        "{}",
        text(&out.stderr)
    );
    let before = std::fs::read(&f).expect("read");
    for bad in [
        vec!["agents", "add", "pi"],
        vec!["agents", "add", "Not-A-Name"],
        vec!["agents", "remove", "nobody"],
        vec!["agents", "set", "pi,pi"],
        vec!["agents", "move", "pi", "99"],
    ] {
        let mut args = bad.clone();
        args.extend(["--file", p]);
        let out = macfleet(&args, &[]);
        assert_eq!(out.status.code(), Some(4), "{bad:?}: {}", text(&out.stderr));
        assert_eq!(
            text(&out.stderr).lines().count(),
            1,
            "one clear line: {}",
            text(&out.stderr)
        );
        assert_eq!(
            std::fs::read(&f).expect("read"),
            before,
            "{bad:?} left the file alone"
        );
    }
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "[fleet]\nMAC_CODING_AGENTS = [\"pi\"\n").expect("write");
    let out = macfleet(
        &[
            "agents",
            "add",
            "claude",
            "--file",
            broken.to_str().expect("utf-8"),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(4));
    assert!(
        text(&out.stderr).contains("line "),
        "says where: {}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn hub_edits_go_through_if_match() {
    let h = TestHub::start().await;
    let url = h.url();
    let rev0 = h.client(&h.owner).config().await.expect("config").revision;
    let (owner, viewer) = (h.owner.clone(), h.viewer.clone());
    let outs = tokio::task::spawn_blocking({
        let url = url.clone();
        let rev0 = rev0.clone();
        move || {
            let o = [
                ("MAC_HUB_URL", url.as_str()),
                ("MAC_HUB_TOKEN", owner.as_str()),
            ];
            let v = [
                ("MAC_HUB_URL", url.as_str()),
                ("MAC_HUB_TOKEN", viewer.as_str()),
            ];
            (
                macfleet(
                    &["agents", "move", "claude", "0", "--if-revision", &rev0],
                    &o,
                ),
                macfleet(&["agents", "remove", "claude", "--if-revision", &rev0], &o),
                macfleet(&["agents", "add", "pi"], &v),
                macfleet(&["agents", "add", "pi", "--read-only"], &o),
                macfleet(&["agents", "show"], &v),
            )
        }
    })
    .await
    .expect("join");
    let (moved, stale, viewer_write, read_only, show) = outs;
    assert_eq!(moved.status.code(), Some(0), "{}", text(&moved.stderr));
    assert!(
        text(&moved.stdout).starts_with("--- a/hub.toml"),
        "{}",
        text(&moved.stdout)
    );
    assert_eq!(stale.status.code(), Some(3), "{}", text(&stale.stderr));
    assert_eq!(
        viewer_write.status.code(),
        Some(6),
        "{}",
        text(&viewer_write.stderr)
    );
    assert_eq!(
        read_only.status.code(),
        Some(6),
        "{}",
        text(&read_only.stderr)
    );
    assert!(
        text(&show.stdout).starts_with("0  claude\n1  opencode\n"),
        "{}",
        text(&show.stdout)
    );
    let hist = h.client(&h.viewer).history().await.expect("history");
    assert_eq!(hist.revisions.len(), 2, "one write, by the owner");
    assert_eq!(hist.revisions[0].by, "alice");
    // The stored document kept every other byte (CRLF, the other table).
    let stored = std::fs::read_to_string(h.config_path()).expect("read");
    assert!(stored.contains("\r\n[other]\r\nMAC_CODING_AGENTS = \"x\"\r\n"));
    assert!(
        stored.contains("  \"claude\",\r\n  \"opencode\", # first\r\n"),
        "{stored:?}"
    );
}
