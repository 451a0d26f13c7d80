//! `macfleet context …` on real files, the precedence of flags, environment
//! and contexts, and the refusal of a token file others can read.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{TestHub, macfleet, text};

const COMMENTED: &str = "# my hubs\ncurrent = \"lab\" # the one I use\n\n# the lab, on my desk\n[contexts.lab]\nhub = \"http://127.0.0.1:1\" # nothing listens\n";

fn config(dir: &Path) -> std::path::PathBuf {
    dir.join("macfleet").join("config.toml")
}

fn write_config(dir: &Path, body: &str) {
    std::fs::create_dir_all(dir.join("macfleet")).expect("mkdir");
    std::fs::write(config(dir), body).expect("write config");
}

fn token_file(dir: &Path, name: &str, token: &str, mode: u32) -> String {
    let p = dir.join(name);
    std::fs::write(&p, format!("{token}\n")).expect("write token");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
    p.display().to_string()
}

fn run(cfg: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let home = cfg.display().to_string();
    let mut all: Vec<(&str, &str)> = vec![("XDG_CONFIG_HOME", home.as_str())];
    all.extend_from_slice(env);
    macfleet(args, &all)
}

#[test]
fn context_commands_edit_the_file_and_keep_its_comments() {
    let cfg = tempfile::tempdir().expect("tempdir");
    write_config(cfg.path(), COMMENTED);
    let tok = token_file(cfg.path(), "prod.token", "not-used-here", 0o600);
    let ca = cfg.path().join("ca.pem");

    let add = run(
        cfg.path(),
        &[
            "context",
            "add",
            "prod",
            "--hub",
            "https://hub.example:7878",
            "--token-file",
            &tok,
            "--read-only",
            "--ca-cert",
            ca.to_str().expect("utf-8"),
        ],
        &[],
    );
    assert_eq!(add.status.code(), Some(0), "{}", text(&add.stderr));
    let after_add = std::fs::read_to_string(config(cfg.path())).expect("read");
    assert!(after_add.starts_with(COMMENTED), "{after_add}");
    let parsed: toml::Table = toml::from_str(&after_add).expect("TOML");
    let prod = &parsed["contexts"]["prod"];
    assert_eq!(prod["hub"].as_str(), Some("https://hub.example:7878"));
    assert_eq!(prod["token_file"].as_str(), Some(tok.as_str()));
    assert_eq!(prod["read_only"].as_bool(), Some(true));
    assert_eq!(prod["ca_cert"].as_str(), ca.to_str());

    // A second add of the same name is refused and changes nothing.
    let again = run(
        cfg.path(),
        &["context", "add", "prod", "--hub", "https://x:1"],
        &[],
    );
    assert_eq!(again.status.code(), Some(2));
    assert!(
        text(&again.stderr).contains("exists already"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(config(cfg.path())).expect("read"),
        after_add
    );

    let list = run(cfg.path(), &["context", "list"], &[]);
    let l = text(&list.stdout);
    assert!(l.starts_with("CURRENT  NAME"), "{l}");
    assert!(l.lines().any(|r| r.starts_with("*        lab")), "{l}");
    assert!(
        l.lines()
            .any(|r| r.contains("prod") && r.contains("https://hub.example:7878")),
        "{l}"
    );

    assert_eq!(
        text(&run(cfg.path(), &["context", "current"], &[]).stdout),
        "lab\n"
    );
    let used = run(cfg.path(), &["context", "use", "prod"], &[]);
    assert_eq!(used.status.code(), Some(0), "{}", text(&used.stderr));
    assert_eq!(
        text(&run(cfg.path(), &["context", "current"], &[]).stdout),
        "prod\n"
    );
    let after_use = std::fs::read_to_string(config(cfg.path())).expect("read");
    assert!(
        after_use.contains("# my hubs\n") && after_use.contains("# the lab, on my desk\n"),
        "{after_use}"
    );

    let unknown = run(cfg.path(), &["context", "use", "nope"], &[]);
    assert_eq!(unknown.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(config(cfg.path())).expect("read"),
        after_use
    );

    let removed = run(cfg.path(), &["context", "remove", "prod"], &[]);
    assert_eq!(removed.status.code(), Some(0), "{}", text(&removed.stderr));
    let after_remove = std::fs::read_to_string(config(cfg.path())).expect("read");
    assert!(
        !after_remove.contains("prod") && !after_remove.contains("current ="),
        "{after_remove}"
    );
    assert!(
        after_remove.contains("# the lab, on my desk\n[contexts.lab]"),
        "{after_remove}"
    );
    let none = run(cfg.path(), &["context", "current"], &[]);
    assert_eq!(none.status.code(), Some(1));
    assert!(
        text(&none.stderr).contains("no current context"),
        "{}",
        text(&none.stderr)
    );

    // Bad input: a name that is not one, a URL with credentials.
    let bad = run(
        cfg.path(),
        &["context", "add", "a b", "--hub", "https://x:1"],
        &[],
    );
    assert_eq!(bad.status.code(), Some(2));
    let creds = run(
        cfg.path(),
        &["context", "add", "c", "--hub", "https://u:p@x:1"],
        &[],
    );
    assert_eq!(creds.status.code(), Some(2), "{}", text(&creds.stderr));
    assert_eq!(
        std::fs::read_to_string(config(cfg.path())).expect("read"),
        after_remove
    );
}

#[test]
fn add_creates_the_file_when_there_is_none() {
    let cfg = tempfile::tempdir().expect("tempdir");
    let add = run(
        cfg.path(),
        &["context", "add", "lab", "--hub", "http://127.0.0.1:7878"],
        &[],
    );
    assert_eq!(add.status.code(), Some(0), "{}", text(&add.stderr));
    let used = run(cfg.path(), &["context", "use", "lab"], &[]);
    assert_eq!(used.status.code(), Some(0), "{}", text(&used.stderr));
    let t: toml::Table =
        toml::from_str(&std::fs::read_to_string(config(cfg.path())).expect("read")).expect("TOML");
    assert_eq!(t["current"].as_str(), Some("lab"));
    assert_eq!(
        t["contexts"]["lab"]["hub"].as_str(),
        Some("http://127.0.0.1:7878")
    );
}

/// Flags, then MAC_HUB_URL / MAC_HUB_TOKEN, then the context. Hub a ranks
/// opencode first, hub b claude: the answer says which hub was asked.
#[tokio::test(flavor = "multi_thread")]
async fn precedence_flags_then_environment_then_context() {
    let a = TestHub::start().await;
    let b = TestHub::start_with(
        "[fleet]\nMAC_CODING_AGENTS = [\"claude\", \"opencode\"]\n",
        |_| {},
    )
    .await;
    let cfg = tempfile::tempdir().expect("tempdir");
    let viewer_a = token_file(cfg.path(), "a.token", &a.viewer, 0o600);
    write_config(
        cfg.path(),
        &format!(
            "current = \"a\"\n[contexts.a]\nhub = \"{}\"\ntoken_file = \"{viewer_a}\"\n[contexts.b]\nhub = \"{}\"\n",
            a.url(),
            b.url()
        ),
    );
    let wrong = format!("{}{}", "mft_", "wrong".repeat(8));
    let (ua, ub, tb) = (a.url(), b.url(), b.viewer.clone());
    let cfgp = cfg.path().to_path_buf();
    let outs = tokio::task::spawn_blocking(move || {
        let with = |extra: &[&str], env: &[(&str, &str)]| {
            let mut args: Vec<&str> = extra.to_vec();
            args.extend_from_slice(&["get", "agents", "-o", "json"]);
            run(&cfgp, &args, env)
        };
        vec![
            // 0: the current context alone: hub a, its token file.
            with(&[], &[]),
            // 1: MAC_HUB_URL beats the current context; its token is MAC_HUB_TOKEN.
            with(
                &[],
                &[("MAC_HUB_URL", ub.as_str()), ("MAC_HUB_TOKEN", tb.as_str())],
            ),
            // 2: --hub beats MAC_HUB_URL.
            with(
                &["--hub", ua.as_str()],
                &[("MAC_HUB_URL", ub.as_str()), ("MAC_HUB_TOKEN", tb.as_str())],
            ),
            // 3: --context beats MAC_HUB_URL.
            with(
                &["--context", "b"],
                &[("MAC_HUB_URL", ua.as_str()), ("MAC_HUB_TOKEN", tb.as_str())],
            ),
            // 4: MAC_HUB_URL without a token: the context's token is not sent there.
            with(&[], &[("MAC_HUB_URL", ub.as_str())]),
            // 5: an unknown --context is a usage error.
            with(&["--context", "nope"], &[]),
            // 6: MAC_HUB_TOKEN beats the context's token_file.
            with(&[], &[("MAC_HUB_TOKEN", wrong.as_str())]),
        ]
    })
    .await
    .expect("join");
    let first = |o: &std::process::Output| -> String {
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
        v["agents"][0].as_str().unwrap_or_default().to_string()
    };
    assert_eq!(first(&outs[0]), "opencode");
    assert_eq!(first(&outs[1]), "claude");
    assert_eq!(first(&outs[2]), "opencode");
    assert_eq!(first(&outs[3]), "claude");
    assert_eq!(outs[4].status.code(), Some(6));
    assert!(
        text(&outs[4].stderr).contains("no token: set MAC_HUB_TOKEN or a context's token_file"),
        "{}",
        text(&outs[4].stderr)
    );
    assert_eq!(outs[5].status.code(), Some(2));
    assert!(
        text(&outs[5].stderr).contains("no context named nope"),
        "{}",
        text(&outs[5].stderr)
    );
    assert_eq!(outs[6].status.code(), Some(6));
    assert!(
        text(&outs[6].stderr).contains("refused the token"),
        "{}",
        text(&outs[6].stderr)
    );
    for o in &outs {
        for t in [&a.viewer, &b.viewer] {
            assert!(!text(&o.stdout).contains(t.as_str()) && !text(&o.stderr).contains(t.as_str()));
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_file_others_can_read_is_refused() {
    let h = TestHub::start().await;
    let cfg = tempfile::tempdir().expect("tempdir");
    let tok = token_file(cfg.path(), "loose.token", &h.viewer, 0o644);
    write_config(
        cfg.path(),
        &format!(
            "current = \"lab\"\n[contexts.lab]\nhub = \"{}\"\ntoken_file = \"{tok}\"\n",
            h.url()
        ),
    );
    let cfgp = cfg.path().to_path_buf();
    let loose = tokio::task::spawn_blocking(move || run(&cfgp, &["get", "agents"], &[]))
        .await
        .expect("join");
    assert_eq!(loose.status.code(), Some(6));
    let e = text(&loose.stderr);
    assert!(
        e.contains(&tok) && e.contains("mode 0644") && e.contains("chmod 600"),
        "{e}"
    );
    assert!(loose.stdout.is_empty());
    assert!(!e.contains(&h.viewer));

    std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let cfgp = cfg.path().to_path_buf();
    let tight = tokio::task::spawn_blocking(move || run(&cfgp, &["get", "agents"], &[]))
        .await
        .expect("join");
    assert_eq!(tight.status.code(), Some(0), "{}", text(&tight.stderr));
    assert!(text(&tight.stdout).starts_with("0  opencode"));

    // `context add` refuses it too, and writes nothing.
    std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let before = std::fs::read_to_string(config(cfg.path())).expect("read");
    let add = run(
        cfg.path(),
        &[
            "context",
            "add",
            "x",
            "--hub",
            "https://x:1",
            "--token-file",
            &tok,
        ],
        &[],
    );
    assert_eq!(add.status.code(), Some(6), "{}", text(&add.stderr));
    assert_eq!(
        std::fs::read_to_string(config(cfg.path())).expect("read"),
        before
    );
}
