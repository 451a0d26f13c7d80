//! Running a hub for real, through the real binary: the tokens file's mode,
//! rotation and revocation by SIGHUP, TLS from `hub tls-init`, and what a
//! certificate error says.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{HubProcess, Spawn, TestHub, macfleet, text};

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).expect("stat").permissions().mode() & 0o777
}

/// `macfleet hub token`: the token on stdout, the file 0600.
fn new_token(tokens: &Path, name: &str, role: &str) -> String {
    let out = macfleet(
        &[
            "hub",
            "token",
            "--name",
            name,
            "--role",
            role,
            "--tokens",
            tokens.to_str().expect("utf-8"),
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let token = text(&out.stdout).trim().to_string();
    assert!(token.starts_with("mft_") && token.len() == 47, "{token:?}");
    assert!(!text(&out.stderr).contains(&token));
    token
}

/// The real hub as a child process over `dir` and `tokens`, its log at
/// trace level.
fn start(dir: &Path, tokens: &Path, extra: &[&str]) -> HubProcess {
    std::fs::write(dir.join("hub.toml"), common::CONFIG).expect("config");
    HubProcess::spawn(
        dir,
        Spawn {
            extra,
            env: &[("MACFLEET_LOG", "trace")],
            tokens: Some(tokens),
            ..Spawn::default()
        },
    )
}

fn hup(hub: &HubProcess) {
    let st = Command::new("kill")
        .args(["-HUP", &hub.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(st.success());
}

async fn whoami(http: &reqwest::Client, url: &str, token: &str) -> u16 {
    http.get(format!("{url}/v1/whoami"))
        .bearer_auth(token)
        .send()
        .await
        .map_or(0, |r| r.status().as_u16())
}

/// Poll until `whoami` answers `want`, at most 10 s.
async fn until_status(http: &reqwest::Client, url: &str, token: &str, want: u16) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if whoami(http, url, token).await == want {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// The tokens file without the `[[tokens]]` entry named `name`.
fn without(text: &str, name: &str) -> String {
    text.split("[[tokens]]")
        .filter(|b| !b.trim().is_empty() && !b.contains(&format!("name = \"{name}\"")))
        .map(|b| format!("[[tokens]]{b}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_file_is_private_and_sighup_revokes_and_rotates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.toml");
    let alice = new_token(&tokens, "alice", "viewer");
    assert_eq!(mode(&tokens), 0o600, "created 0600");
    let bob = new_token(&tokens, "bob", "viewer");
    assert_eq!(mode(&tokens), 0o600, "kept 0600 when appending");
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let carol = new_token(&tokens, "carol", "owner");
    assert_eq!(
        mode(&tokens),
        0o600,
        "a loose file is tightened when appending"
    );
    let file = std::fs::read_to_string(&tokens).expect("read");
    for t in [&alice, &bob, &carol] {
        assert!(!file.contains(t.as_str()), "only hashes in the file");
    }

    // The hub warns about a tokens file others can read.
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let hub = start(dir.path(), &tokens, &[]);
    assert!(
        hub.log()
            .contains("has mode 0640: group or others can read it"),
        "{}",
        hub.log()
    );
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).expect("chmod");

    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("http");
    assert_eq!(whoami(&http, &hub.url, &alice).await, 200);
    assert_eq!(whoami(&http, &hub.url, &bob).await, 200);

    // alice follows the event stream.
    let stream_http = reqwest::Client::new();
    let mut stream = stream_http
        .get(format!("{}/v1/events", hub.url))
        .bearer_auth(&alice)
        .send()
        .await
        .expect("events");
    assert_eq!(stream.status().as_u16(), 200);

    // Revoke alice: rewrite the file without her, SIGHUP.
    std::fs::write(&tokens, without(&file, "alice")).expect("rewrite");
    hup(&hub);
    assert!(
        until_status(&http, &hub.url, &alice, 401).await,
        "alice revoked"
    );
    assert_eq!(whoami(&http, &hub.url, &bob).await, 200, "bob untouched");
    // Her open stream ends (keep-alive comments aside), within 10 s.
    let ended = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            match stream.chunk().await {
                Ok(Some(_)) => continue,
                Ok(None) | Err(_) => return true,
            }
        }
    })
    .await;
    assert_eq!(ended, Ok(true), "a revoked token's stream is closed");

    // Rotate: a new token for alice is in force after the next SIGHUP.
    let alice2 = new_token(&tokens, "alice", "viewer");
    assert_eq!(
        whoami(&http, &hub.url, &alice2).await,
        401,
        "not before SIGHUP"
    );
    hup(&hub);
    assert!(until_status(&http, &hub.url, &alice2, 200).await, "rotated");
    assert_eq!(
        whoami(&http, &hub.url, &alice).await,
        401,
        "the old one stays revoked"
    );

    // A broken file keeps the tokens in force, and the log says so.
    std::fs::write(&tokens, "[[tokens]]\nname = 1\n").expect("break");
    hup(&hub);
    let t0 = Instant::now();
    while !hub.log().contains("tokens file not reread") && t0.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        hub.log().contains("tokens file not reread"),
        "{}",
        hub.log()
    );
    assert_eq!(whoami(&http, &hub.url, &bob).await, 200);
    assert_eq!(whoami(&http, &hub.url, &alice2).await, 200);

    // At trace level the hub's log holds no token.
    let log = hub.log();
    for t in [&alice, &alice2, &bob, &carol] {
        assert!(!log.contains(t.as_str()), "a token in the hub's log");
    }
}

#[test]
fn token_names_with_control_characters_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.toml");
    let bad = "[[tokens]]\nname = \"evil\\u001b]52;c;aGk=\\u0007\"\nrole = \"viewer\"\nsha256 = \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n";
    std::fs::write(&tokens, bad).expect("write");
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let config = dir.path().join("hub.toml");
    std::fs::write(&config, common::CONFIG).expect("config");
    let out = macfleet(
        &[
            "hub",
            "--config",
            config.to_str().expect("utf-8"),
            "--tokens",
            tokens.to_str().expect("utf-8"),
            "--listen",
            "127.0.0.1:0",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let e = text(&out.stderr);
    assert!(e.contains("control, bidirectional or invisible"), "{e}");
    assert!(!e.contains('\u{1b}'), "no escape reaches the terminal");
}

fn tls_init(dir: &Path, names: &[&str]) -> (PathBuf, PathBuf, PathBuf) {
    let mut args = vec!["hub", "tls-init", "--dir", dir.to_str().expect("utf-8")];
    for n in names {
        args.extend_from_slice(&["--name", n]);
    }
    let out = macfleet(&args, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    (dir.join("ca.pem"), dir.join("hub.pem"), dir.join("hub.key"))
}

#[tokio::test(flavor = "multi_thread")]
async fn tls_init_makes_a_hub_with_tls_in_two_commands() {
    let certs = tempfile::tempdir().expect("tempdir");
    let (ca, cert, key) = tls_init(certs.path(), &["localhost", "127.0.0.1"]);
    assert_eq!(mode(&key), 0o600, "the key is private");
    assert_eq!(mode(&ca), 0o644);
    // Again without --force: refused, nothing replaced.
    let before = std::fs::read(&ca).expect("read");
    let again = macfleet(
        &[
            "hub",
            "tls-init",
            "--dir",
            certs.path().to_str().expect("utf-8"),
        ],
        &[],
    );
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(std::fs::read(&ca).expect("read"), before);

    let h = TestHub::start_with(common::CONFIG, |o| {
        o.tls = Some((cert.clone(), key.clone()))
    })
    .await;
    let port = h.running().addr.port();
    let viewer = h.viewer.clone();
    let ca_s = ca.display().to_string();
    let (trusted, by_name, untrusted) = tokio::task::spawn_blocking(move || {
        let env = [("MAC_HUB_TOKEN", viewer.as_str())];
        let ip = format!("https://127.0.0.1:{port}");
        let name = format!("https://localhost:{port}");
        (
            macfleet(&["--hub", &ip, "--ca-cert", &ca_s, "get", "agents"], &env),
            macfleet(&["--hub", &name, "--ca-cert", &ca_s, "get", "agents"], &env),
            macfleet(&["--hub", &ip, "get", "agents"], &env),
        )
    })
    .await
    .expect("join");
    for o in [&trusted, &by_name] {
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert!(
            text(&o.stdout).starts_with("0  opencode"),
            "{}",
            text(&o.stdout)
        );
    }
    assert_eq!(untrusted.status.code(), Some(5));
    let e = text(&untrusted.stderr);
    assert!(
        e.contains("not signed by a CA this machine trusts") && e.contains("--ca-cert"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_ca_certificate_served_as_the_hubs_own_is_explained() {
    // What `openssl req -x509` makes: a self-signed certificate with CA:TRUE.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = params.self_signed(&key).expect("cert");
    let (cert_p, key_p) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
    std::fs::write(&cert_p, cert.pem()).expect("write");
    std::fs::write(&key_p, key.serialize_pem()).expect("write");
    let h = TestHub::start_with(common::CONFIG, |o| {
        o.tls = Some((cert_p.clone(), key_p.clone()))
    })
    .await;
    let url = format!("https://127.0.0.1:{}", h.running().addr.port());
    let viewer = h.viewer.clone();
    let ca = cert_p.display().to_string();
    let out = tokio::task::spawn_blocking(move || {
        macfleet(
            &["--hub", &url, "--ca-cert", &ca, "get", "agents"],
            &[("MAC_HUB_TOKEN", viewer.as_str())],
        )
    })
    .await
    .expect("join");
    assert_eq!(out.status.code(), Some(5));
    let e = text(&out.stderr);
    assert!(
        e.contains("serves a CA certificate as its own") && e.contains("macfleet hub tls-init"),
        "{e}"
    );
}

/// A token's name stands in History's `by` and in `whoami`: an e-mail
/// address there would publish an account identifier. `hub token` refuses
/// one; a tokens file that already holds one is reported at start and the
/// name is shown redacted everywhere, stable and distinct per name.
#[tokio::test(flavor = "multi_thread")]
async fn e_mail_shaped_token_names_are_refused_or_shown_redacted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.toml");
    let t = tokens.to_str().expect("utf-8").to_string();
    let email = ["jo.smith", "@", "acme.example"].concat();
    let out = tokio::task::spawn_blocking({
        let (t, email) = (t.clone(), email.clone());
        move || {
            macfleet(
                &[
                    "hub", "token", "--name", &email, "--role", "owner", "--tokens", &t,
                ],
                &[],
            )
        }
    })
    .await
    .expect("join");
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("e-mail"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "no token printed");
    assert!(!tokens.exists(), "nothing written");

    let token = macfleet::hub::auth::generate_token();
    std::fs::write(
        &tokens,
        macfleet::hub::auth::token_entry(&email, macfleet::wire::Role::Owner, &token),
    )
    .expect("tokens");
    std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let hub = start(dir.path(), &tokens, &[]);
    let (url, log) = (hub.url.clone(), hub.log());
    assert!(log.contains("redacted-email-"), "reported at start:\n{log}");
    assert!(!log.contains(&email) && !log.contains("jo.smith"), "{log}");
    let c = macfleet::client::Client::new(
        &url,
        Some(macfleet::client::Token::new(&token)),
        Default::default(),
    )
    .expect("client");
    let who = c.whoami().await.expect("whoami");
    assert!(who.name.starts_with("redacted-email-"), "{}", who.name);
    let w = macfleet::client::Writer::new(c.clone(), &who).expect("still an owner");
    let doc = c.config().await.expect("config");
    let next = doc.text.replace("\"claude\"", "\"pi\"");
    w.put_config(&next, &doc.revision).await.expect("write");
    let h = c.history().await.expect("history");
    assert_eq!(h.revisions[0].by, who.name, "History's by is the stand-in");
    let raw = serde_json::to_string(&h).expect("json");
    assert!(!raw.contains("jo.smith"), "{raw}");
}
