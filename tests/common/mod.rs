//! A real reference hub on an ephemeral loopback port, with a token of each
//! role, over a temporary config directory.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use macfleet::client::{Client, ClientOptions, Token};
use macfleet::hub::{HubOptions, RunningHub, auth};
use macfleet::wire::Role;

pub const CONFIG: &str = "# the fleet\r\n[fleet]\r\nMAC_CODING_AGENTS = [\r\n  \"opencode\", # first\r\n  \"claude\",\r\n]\r\n\r\n[other]\r\nMAC_CODING_AGENTS = \"x\"\r\n";

pub struct TestHub {
    pub hub: Option<RunningHub>,
    pub dir: tempfile::TempDir,
    pub owner: String,
    pub owner2: String,
    pub viewer: String,
    pub worker: String,
    pub tokens: auth::Tokens,
}

/// Fake tokens, made at run time: no literal secret lives in the repo.
fn fake(name: &str) -> String {
    format!("{}{}", "mft_test_", name.repeat(6))
}

pub fn options(dir: &std::path::Path, tokens: auth::Tokens) -> HubOptions {
    let mut o = HubOptions::new(dir.join("hub.toml"), tokens);
    o.listen = ([127, 0, 0, 1], 0).into();
    o.name = "test-hub".into();
    o.heartbeat_interval_s = 1;
    o.keepalive = Duration::from_millis(300);
    o
}

impl TestHub {
    pub async fn start() -> TestHub {
        Self::start_with(CONFIG, |_| {}).await
    }

    pub async fn start_with(config: &str, tweak: impl FnOnce(&mut HubOptions)) -> TestHub {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("hub.toml"), config).expect("write config");
        let (owner, owner2, viewer, worker) =
            (fake("own"), fake("bob"), fake("view"), fake("work"));
        let line = auth::token_entry;
        let text = [
            line("alice", Role::Owner, &owner),
            line("bob", Role::Owner, &owner2),
            line("screen", Role::Viewer, &viewer),
            line("fleet", Role::Worker, &worker),
        ]
        .join("\n");
        let tokens = auth::Tokens::parse(&text, "test").expect("tokens");
        let mut opts = options(dir.path(), tokens.clone());
        tweak(&mut opts);
        let hub = macfleet::hub::start(opts).await.expect("hub starts");
        TestHub {
            hub: Some(hub),
            dir,
            owner,
            owner2,
            viewer,
            worker,
            tokens,
        }
    }

    pub fn running(&self) -> &RunningHub {
        self.hub.as_ref().expect("running")
    }

    pub fn url(&self) -> String {
        self.running().url()
    }

    pub fn path(&self, p: &str) -> String {
        format!("{}{p}", self.url())
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("hub.toml")
    }

    pub fn client(&self, token: &str) -> Client {
        Client::new(
            &self.url(),
            Some(Token::new(token)),
            ClientOptions::default(),
        )
        .expect("client")
    }

    pub fn http(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .expect("http")
    }

    /// `GET /v1/health` (no token), plain.
    pub async fn health(&self) -> reqwest::Response {
        self.http()
            .get(self.path("/v1/health"))
            .send()
            .await
            .expect("health")
    }

    pub async fn restart(&mut self, tweak: impl FnOnce(&mut HubOptions)) {
        if let Some(h) = self.hub.take() {
            h.stop().await;
        }
        let mut opts = options(self.dir.path(), self.tokens.clone());
        tweak(&mut opts);
        self.hub = Some(macfleet::hub::start(opts).await.expect("hub restarts"));
    }
}

/// `secs` seconds before now on this machine's clock (the hub's, in tests),
/// as the contract writes times: the hub refuses times far from its clock.
pub fn ago(secs: i64) -> String {
    macfleet::wire::fmt_time(chrono::Utc::now() - chrono::Duration::seconds(secs))
}

/// A valid heartbeat as JSON.
pub fn heartbeat(
    worker: &str,
    revision: Option<&str>,
    failovers: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({
        "worker": worker,
        "host": "gpu-node-17",
        "sent_at": ago(1),
        "config_revision": revision,
        "agents": ["opencode", "claude"],
        "active_agent": "claude",
        "capabilities": {
            "opencode": {"binary": true, "token": true, "preflight": "ok"},
            "claude": {"binary": true, "token": true, "preflight": "ok"}
        },
        "failovers": failovers
    })
}

/// A valid failover as JSON, an hour old: inside the hub's time window,
/// and older than the "last 10 minutes" some tests filter on.
pub fn failover(id: &str, kind: &str, detail: &str) -> serde_json::Value {
    serde_json::json!({
        "id": id, "at": ago(3600), "from": "opencode", "to": "claude",
        "cause": {"kind": kind, "status": 429, "source": "hub_router", "detail": detail}
    })
}

/// Poll `f` until it returns `Some`, at most `tries` times, 50 ms apart.
pub async fn eventually<T, F, Fut>(tries: usize, mut f: F) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    for _ in 0..tries {
        if let Some(v) = f().await {
            return Some(v);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// Run the real `macfleet` binary with a clean environment (no hub, no
/// token, an empty config home) plus `env`.
pub fn macfleet(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let cfg = tempfile::tempdir().expect("tempdir");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_macfleet"));
    cmd.args(args)
        .env_remove("MAC_HUB_URL")
        .env_remove("MAC_HUB_TOKEN")
        .env("XDG_CONFIG_HOME", cfg.path())
        .env("COLUMNS", "200");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("macfleet runs")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Start the real `macfleet hub` binary on an ephemeral loopback port over
/// `dir` (which holds `hub.toml` and `tokens.toml`), with `extra` flags and,
/// when given, a descriptor limit (soft and hard) set in the child before
/// it runs. Returns the child and the URL it printed.
pub fn spawn_hub(
    dir: &std::path::Path,
    extra: &[&str],
    nofile: Option<u64>,
) -> (std::process::Child, String) {
    spawn_hub_env(dir, extra, nofile, &[])
}

/// [`spawn_hub`] with `env` set in the hub's environment.
pub fn spawn_hub_env(
    dir: &std::path::Path,
    extra: &[&str],
    nofile: Option<u64>,
    env: &[(&str, &str)],
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_macfleet"));
    cmd.args(["hub", "--config"])
        .arg(dir.join("hub.toml"))
        .arg("--tokens")
        .arg(dir.join("tokens.toml"))
        .args(["--listen", "127.0.0.1:0"])
        .args(extra)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .stderr(Stdio::piped())
        .stdout(Stdio::null());
    if let Some(n) = nofile {
        use std::os::unix::process::CommandExt;
        // SAFETY: setrlimit is async-signal-safe, touches only the child,
        // and the closure allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: n as libc::rlim_t,
                    rlim_max: n as libc::rlim_t,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let mut child = cmd.spawn().expect("hub starts");
    let stderr = child.stderr.take().expect("stderr");
    let mut lines = BufReader::new(stderr).lines();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        let Some(Ok(line)) = lines.next() else { break };
        if let Some(rest) = line.split("listening on ").nth(1) {
            let url = rest.split_whitespace().next().expect("url").to_string();
            // Keep draining stderr so the hub never blocks on a full pipe.
            std::thread::spawn(move || for _ in lines.by_ref() {});
            return (child, url);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the hub did not say where it listens");
}

/// A directory with a config and a tokens file holding one token per role;
/// returns (dir, owner, viewer, worker) tokens.
pub fn hub_dir() -> (tempfile::TempDir, String, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("hub.toml"), CONFIG).expect("config");
    let (owner, viewer, worker) = (fake("own"), fake("view"), fake("work"));
    let text = [
        auth::token_entry("alice", Role::Owner, &owner),
        auth::token_entry("screen", Role::Viewer, &viewer),
        auth::token_entry("fleet", Role::Worker, &worker),
    ]
    .join("\n");
    std::fs::write(dir.path().join("tokens.toml"), text).expect("tokens");
    (dir, owner, viewer, worker)
}

/// The resident set of a process, in KiB, from /proc.
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}
