//! `:ctx` for real: the `macfleet` binary in a pty on one context's hub
//! switches to another context's hub (two `macfleet hub` processes), and
//! the top line names the context it is on.

use crate::common;
use crate::pty;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use pty::Pty;

const SOON: Duration = Duration::from_secs(20);

#[test]
fn ctx_reconnects_to_the_chosen_contexts_hub() {
    let (one_dir, _, one_viewer, _) = common::hub_dir();
    let (two_dir, _, two_viewer, two_worker) = common::hub_dir();
    // Both killed on drop, a failing assertion included.
    let (one, one_url) = common::spawn_hub(one_dir.path(), &["--name", "hub-one"], None);
    let _one = one;
    let (two, two_url) = common::spawn_hub(two_dir.path(), &["--name", "hub-two"], None);
    let _two = two;
    // A worker on the second hub only, so its screen tells them apart.
    let c = macfleet::client::Client::new(
        &two_url,
        Some(macfleet::client::Token::new(&two_worker)),
        Default::default(),
    )
    .expect("client");
    let hb: macfleet::wire::Heartbeat = serde_json::from_value(serde_json::json!({
        "worker": "w-on-two", "host": "h2", "sent_at": macfleet::wire::fmt_time(chrono::Utc::now()),
        "agents": ["opencode", "claude"], "active_agent": "opencode",
        "capabilities": {"opencode": {"binary": true, "token": true, "preflight": "ok"}}
    }))
    .expect("heartbeat");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(c.heartbeat(&hb))
        .expect("heartbeat accepted");

    // Contexts with their own (private) token files.
    let cfg = tempfile::tempdir().expect("config home");
    let dir = cfg.path().join("macfleet");
    std::fs::create_dir_all(&dir).expect("dir");
    for (name, token) in [("one", &one_viewer), ("two", &two_viewer)] {
        let p = dir.join(format!("{name}.token"));
        std::fs::write(&p, token).expect("token file");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    std::fs::write(
        dir.join("config.toml"),
        format!(
            "current = \"one\"\n[contexts.one]\nhub = \"{one_url}\"\ntoken_file = \"{}\"\n\
             [contexts.two]\nhub = \"{two_url}\"\ntoken_file = \"{}\"\n",
            dir.join("one.token").display(),
            dir.join("two.token").display()
        ),
    )
    .expect("config");
    let home = cfg.path().to_str().expect("utf-8");

    let mut t = Pty::spawn(&[], &[("XDG_CONFIG_HOME", home)]);
    t.wait_until("context one on hub-one", SOON, |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.contains("one (hub-one)"))
    });
    t.wait_for("no workers have reported yet", SOON);
    t.send(":ctx");
    t.wait_for(":ctx_", SOON);
    t.send("\r");
    let s = t.wait_for("contexts (Enter switches", SOON);
    assert!(s.contains("* one"), "{s}");
    t.send("j");
    t.send("\r");
    let s = t.wait_until("on context two", SOON, |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.contains("two (hub-two)"))
            && s.contains("w-on-two")
    });
    assert!(!s.contains("hub-one"), "nothing of the old hub stays: {s}");
    assert!(s.contains("1 workers"), "{s}");
    t.send("q");
    assert!(t.wait_exit(SOON).success());
}
