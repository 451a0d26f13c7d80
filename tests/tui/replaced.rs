//! A hub replaced under a dashboard, at the same address: one that refuses
//! the token (401) shows `UNAUTHORIZED` with every figure labelled last
//! known; one that takes the token but is another hub (another `instance`:
//! a fresh database) starts a fresh screen, never mixing two hubs' data.
//! And `macfleet get workers --watch` ends on a refused token (exit 6).
//! Real `macfleet hub` processes on one fixed loopback port.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common;
use crate::pty::{self, Pty};
use crate::ui::{app, screen};
use macfleet::tui::msg::Msg;
use macfleet::wire::Role;

const START: Duration = Duration::from_secs(30);
const SOON: Duration = Duration::from_secs(20);

/// Tokens made at run time, by a salt, so two hubs can hold different ones.
fn tokens(salt: &str) -> (String, String) {
    (
        format!("{}{}", "mft_repl_v_", salt.repeat(8)),
        format!("{}{}", "mft_repl_w_", salt.repeat(8)),
    )
}

/// A hub directory (config, tokens) holding the viewer and worker tokens of `salt`.
fn hub_dir(salt: &str) -> tempfile::TempDir {
    let (viewer, worker) = tokens(salt);
    common::hub_dir_of(&[
        ("screen", Role::Viewer, &viewer),
        ("fleet", Role::Worker, &worker),
    ])
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("addr")
        .port()
}

fn start(dir: &Path, port: u16, name: &str) -> pty::Kill {
    pty::hub_on_port(dir, port, &["--heartbeat-interval", "1", "--name", name])
}

/// One heartbeat of `worker` to the hub at `port`, with the worker token of `salt`.
fn beat(port: u16, salt: &str, worker: &str) {
    let hb = common::Beat::new(worker).wire();
    let c = macfleet::client::Client::new(
        &format!("http://127.0.0.1:{port}"),
        Some(macfleet::client::Token::new(&tokens(salt).1)),
        Default::default(),
    )
    .expect("client");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(c.heartbeat(&hb))
        .expect("heartbeat accepted");
}

#[test]
fn a_replaced_hub_is_unauthorized_then_a_fresh_screen_never_the_old_fleet() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let a_dir = hub_dir("a");
    let hub_a = start(a_dir.path(), port, "hub-a");
    beat(port, "a", "w-from-a");
    let viewer = tokens("a").0;
    let mut t = Pty::spawn(
        &["--hub", &url, "--read-only"],
        &[("MAC_HUB_TOKEN", &viewer)],
    );
    t.wait_for("live", START);
    t.send("2");
    let s = t.wait_for("w-from-a", SOON);
    assert!(s.contains("1 workers"), "{s}");

    // Hub A goes; hub B comes at the same address, with other tokens.
    drop(hub_a);
    let b_dir = hub_dir("b");
    let hub_b = start(b_dir.path(), port, "hub-b");
    let s = t.wait_for("UNAUTHORIZED", SOON);
    let top = t.top_line();
    assert!(top.starts_with(" UNAUTHORIZED "), "the status word:\n{s}");
    assert!(
        top.contains("unauthorized: the hub refused this token"),
        "{s}"
    );
    // Every figure of the last hub that took the token is labelled as such,
    // with its age; its worker is still on screen, greyed, not called live.
    let fleet_line = s.lines().nth(1).unwrap_or_default().to_string();
    assert!(
        fleet_line.contains("token refused") && fleet_line.contains("last known"),
        "{s}"
    );
    assert!(fleet_line.contains(" ago: "), "{s}");
    assert!(s.contains("w-from-a"), "{s}");
    assert!(!top.contains(" live"), "{s}");

    // Hub B goes; hub C comes: the same tokens as A, a fresh database, so
    // another instance. The screen starts afresh: A's worker is gone.
    drop(hub_b);
    let c_dir = tempfile::tempdir().expect("tempdir");
    for f in ["hub.toml", "tokens.toml"] {
        std::fs::copy(a_dir.path().join(f), c_dir.path().join(f)).expect("copy");
    }
    let _hub_c = start(c_dir.path(), port, "hub-c");
    beat(port, "a", "w-from-c");
    // The fresh start is said.
    t.wait_for("another hub answers here", SOON);
    let s = t.wait_for("w-from-c", SOON);
    assert!(!s.contains("w-from-a"), "two hubs' data mixed:\n{s}");
    assert!(s.contains("1 workers"), "{s}");
    assert!(!t.top_line().contains("UNAUTHORIZED"), "{s}");
}

#[test]
fn get_watch_ends_on_a_refused_token_with_exit_6() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let a_dir = hub_dir("a");
    let hub_a = start(a_dir.path(), port, "hub-a");
    beat(port, "a", "w-from-a");
    let cfg = tempfile::tempdir().expect("tempdir");
    let mut child = pty::Kill(
        std::process::Command::new(env!("CARGO_BIN_EXE_macfleet"))
            .args(["--hub", &url, "get", "workers", "--watch"])
            .env_remove("MAC_HUB_URL")
            .env("MAC_HUB_TOKEN", tokens("a").0)
            .env("XDG_CONFIG_HOME", cfg.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("macfleet runs"),
    );
    std::thread::sleep(Duration::from_secs(2));
    drop(hub_a);
    let b_dir = hub_dir("b");
    let _hub_b = start(b_dir.path(), port, "hub-b");
    let end = Instant::now() + SOON;
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        assert!(
            Instant::now() < end,
            "--watch went on against a hub that refuses its token"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut err = String::new();
    use std::io::Read;
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert_eq!(status.code(), Some(6), "{err}");
    assert!(err.contains("refused the token (401)"), "{err}");
}

// Through `update`: the same, one message at a time.

fn who(instance: &str) -> macfleet::wire::Whoami {
    macfleet::wire::Whoami {
        name: "screen".into(),
        role: macfleet::wire::Role::Viewer,
        hub: "hub".into(),
        api: "1".into(),
        instance: Some(instance.into()),
    }
}

/// A hub that answers 403 is `FORBIDDEN`, 401 `UNAUTHORIZED`: the status
/// word, and the fleet line labels its counts last known with their age.
#[test]
fn a_refused_or_forbidden_token_is_the_status_word_and_the_figures_are_last_known() {
    use macfleet::tui::model::verdict::Verdict;
    use macfleet::tui::msg::Fetch;
    use std::time::Duration;
    for (forbidden, word) in [(false, "UNAUTHORIZED"), (true, "FORBIDDEN")] {
        let (mut a, m0) = app(5, false);
        let at = m0 + Duration::from_secs(30);
        a.update(if forbidden {
            Msg::Forbidden {
                what: Fetch::Workers,
                at,
            }
        } else {
            Msg::Refused {
                what: Fetch::Workers,
                at,
            }
        });
        a.settle();
        let want = if forbidden {
            Verdict::Forbidden
        } else {
            Verdict::Unauthorized
        };
        assert_eq!(a.model().verdict(), Some(want));
        let s = screen(&a);
        assert!(s[0].starts_with(&format!(" {word} ")), "{}", s[0]);
        assert!(s[1].contains(" · last known 30s ago: "), "{}", s[1]);
        assert!(s[1].contains("5 workers"), "{}", s[1]);
    }
}

/// After a reconnect, a hub with another `instance` is another hub: the
/// screen starts afresh (fleet, log, list and history dropped) and says
/// so. The same instance (a restart) keeps everything.
#[test]
fn another_instance_starts_a_fresh_screen_the_same_one_keeps_it() {
    let (mut a, _) = app(5, false);
    // The fixture's hub again (a restart keeps its instance): nothing goes.
    let same = a
        .model()
        .who
        .as_ref()
        .and_then(|w| w.instance.clone())
        .expect("an instance");
    a.update(Msg::Whoami(who(&same)));
    a.settle();
    assert_eq!(a.model().fleet.agg.total, 5);
    assert!(!a.model().log.is_empty());
    a.update(Msg::Whoami(who("1a2b3c4d5e6f7081")));
    a.settle();
    assert_eq!(a.model().fleet.agg.total, 0);
    assert!(a.model().log.is_empty());
    assert!(a.model().config.history.is_empty());
    assert!(a.model().config.revision.is_none());
    let s = screen(&a).join("\n");
    assert!(s.contains("another hub answers here"), "{s}");
}

/// A pending edit of the last hub's list is not written to another hub
/// (two hubs' data never mix), and the screen says so and names the order
/// typed, so nothing the owner typed goes unsaid (a hub replaced under an
/// owner with a pending `J` dropped it with a word only of the fleet).
#[test]
fn another_instance_names_the_pending_edit_it_does_not_write() {
    let (mut a, _) = app(5, true);
    crate::ui::key(&mut a, '1');
    crate::ui::key(&mut a, 'J');
    let order = a.model().edit.order().expect("J made an edit").join(", ");
    a.update(Msg::Whoami(who("1a2b3c4d5e6f7081")));
    a.settle();
    assert!(!a.model().edit.is_pending());
    let s = screen(&a).join("\n");
    assert!(
        s.contains(&format!(
            "your pending edit of its list ({order}) is not written here"
        )),
        "{s}"
    );
}
