//! A real reference hub on an ephemeral loopback port, with a token of each
//! role, over a temporary config directory.
#![allow(dead_code)]

pub mod measure;
pub mod proxy;

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

    /// `POST /v1/heartbeats` with the worker token.
    pub async fn post_heartbeat(&self, body: &serde_json::Value) -> reqwest::Response {
        self.http()
            .post(self.path("/v1/heartbeats"))
            .bearer_auth(&self.worker)
            .json(body)
            .send()
            .await
            .expect("heartbeat")
    }

    /// A heartbeat (as JSON) through the client with the worker token,
    /// which the hub must accept.
    pub async fn beat(&self, hb: serde_json::Value) {
        let hb: macfleet::wire::Heartbeat = serde_json::from_value(hb).expect("a heartbeat");
        self.client(&self.worker)
            .heartbeat(&hb)
            .await
            .expect("heartbeat accepted");
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

/// A heartbeat as JSON, built from [`heartbeat`]'s (on claude, its list
/// `[opencode, claude]` both runnable, sent a second ago) by what a test
/// changes: `Beat::new("w-1").list(&["opencode", "pi"]).active(Some("pi"))`.
pub struct Beat(serde_json::Value);

impl Beat {
    pub fn new(worker: &str) -> Beat {
        Beat(heartbeat(worker, None, serde_json::json!([])))
    }

    pub fn host(mut self, host: &str) -> Beat {
        self.0["host"] = host.into();
        self
    }

    /// The host `host-<worker>`.
    pub fn own_host(self) -> Beat {
        let host = format!("host-{}", self.0["worker"].as_str().unwrap_or_default());
        self.host(&host)
    }

    pub fn sent_at(mut self, at: &str) -> Beat {
        self.0["sent_at"] = at.into();
        self
    }

    pub fn rev(mut self, revision: Option<&str>) -> Beat {
        self.0["config_revision"] = revision.into();
        self
    }

    /// Its list, every agent of it runnable (and no other reported).
    pub fn list(mut self, agents: &[&str]) -> Beat {
        self.0["agents"] = agents.into();
        self.0["capabilities"] = serde_json::Value::Object(Default::default());
        for a in agents {
            self = self.cap(a, true, "ok");
        }
        self
    }

    /// The agent it stands on (`None`: no route).
    pub fn active(mut self, agent: Option<&str>) -> Beat {
        self.0["active_agent"] = agent.into();
        self
    }

    /// What it reports of `agent`: its binary found or not, a token, the
    /// preflight's word.
    pub fn cap(mut self, agent: &str, binary: bool, preflight: &str) -> Beat {
        self.0["capabilities"][agent] =
            serde_json::json!({"binary": binary, "token": true, "preflight": preflight});
        self
    }

    /// Exactly these agents reported, each runnable (its list unchanged).
    pub fn only_caps(mut self, agents: &[&str]) -> Beat {
        self.0["capabilities"] = serde_json::Value::Object(Default::default());
        for a in agents {
            self = self.cap(a, true, "ok");
        }
        self
    }

    pub fn failovers(mut self, failovers: serde_json::Value) -> Beat {
        self.0["failovers"] = failovers;
        self
    }

    pub fn json(self) -> serde_json::Value {
        self.0
    }

    pub fn wire(self) -> macfleet::wire::Heartbeat {
        serde_json::from_value(self.0).expect("a heartbeat")
    }
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

/// A process a test spawned, killed (and reaped) when the guard drops: a
/// failing assertion never leaves it running. Every process the tests
/// spawn is held by one.
pub struct Kill(pub std::process::Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl std::ops::Deref for Kill {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Kill {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

/// How to start `macfleet hub` over a directory that holds `hub.toml` and
/// `tokens.toml`.
#[derive(Default, Clone, Copy)]
pub struct Spawn<'a> {
    /// Flags added to the command line.
    pub extra: &'a [&'a str],
    /// Variables added to the environment.
    pub env: &'a [(&'a str, &'a str)],
    /// A fixed loopback port, so that a test can stop the hub and start it
    /// again at the same address (default: an ephemeral one).
    pub port: Option<u16>,
    /// A descriptor limit (soft and hard) set in the child before it runs.
    pub nofile: Option<u64>,
    /// The tokens file, when it is not the directory's `tokens.toml`.
    pub tokens: Option<&'a std::path::Path>,
    /// The database (`--db`), when it is not the hub's default (beside the
    /// config).
    pub db: Option<&'a std::path::Path>,
    /// Leave `NO_COLOR` out of the hub's environment (it is set by
    /// default), for a test of what the hub itself decides about colour.
    pub colour: bool,
    /// Run the hub as `nobody` (uid and gid 65534) when the test runs as
    /// root, who may write any file: a file mode then stops the hub as it
    /// would any user. It runs a copy of the binary in the directory (the
    /// build's may be out of `nobody`'s reach); the test gives the
    /// directory and its files modes `nobody` can use.
    pub as_nobody: bool,
}

/// The real `macfleet hub` binary, the one way the tests start a hub
/// process (`TestHub` is the in-process one): its URL, its log (stderr,
/// collected as it comes, so the hub never blocks on a full pipe) and the
/// guard that kills it.
pub struct HubProcess {
    pub child: Kill,
    pub url: String,
    log: std::sync::Arc<std::sync::Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// A hub process that stopped (or was stopped after 30 s) without saying
/// where it listens: all it wrote to stderr, and how it exited (`None`
/// when it still ran and was killed).
#[derive(Debug)]
pub struct Stopped {
    pub log: String,
    pub status: Option<std::process::ExitStatus>,
}

impl HubProcess {
    /// Start it and wait (at most 30 s) until it says where it listens.
    pub fn spawn(dir: &std::path::Path, how: Spawn<'_>) -> HubProcess {
        Self::try_spawn(dir, how)
            .unwrap_or_else(|log| panic!("the hub did not say where it listens:\n{log}"))
    }

    /// [`HubProcess::spawn`] for a test that expects a refusal: the hub's
    /// log when it stops without listening (it is killed by then).
    pub fn try_spawn(dir: &std::path::Path, how: Spawn<'_>) -> Result<HubProcess, String> {
        Self::start(dir, how).map_err(|s| s.log)
    }

    /// [`HubProcess::try_spawn`] that also says how a refused start exited.
    pub fn start(dir: &std::path::Path, how: Spawn<'_>) -> Result<HubProcess, Stopped> {
        use std::io::{BufRead, BufReader};
        use std::process::{Command, Stdio};
        let listen = format!("127.0.0.1:{}", how.port.unwrap_or(0));
        let tokens = how
            .tokens
            .map_or_else(|| dir.join("tokens.toml"), std::path::Path::to_path_buf);
        let root = unsafe { libc::geteuid() } == 0;
        let mut program = std::path::PathBuf::from(env!("CARGO_BIN_EXE_macfleet"));
        if how.as_nobody && root {
            use std::os::unix::fs::PermissionsExt;
            let copy = dir.join("macfleet");
            if !copy.exists() {
                std::fs::copy(&program, &copy).expect("copy the binary");
                std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755))
                    .expect("chmod");
            }
            program = copy;
        }
        let mut cmd = Command::new(program);
        if how.as_nobody && root {
            use std::os::unix::process::CommandExt;
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(|| {
                    if libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(65534) != 0
                        || libc::setuid(65534) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        cmd.args(["hub", "--config"])
            .arg(dir.join("hub.toml"))
            .arg("--tokens")
            .arg(tokens)
            .args(["--listen", &listen]);
        if let Some(db) = how.db {
            cmd.arg("--db").arg(db);
        }
        if how.colour {
            cmd.env_remove("NO_COLOR");
        } else {
            cmd.env("NO_COLOR", "1");
        }
        cmd.args(how.extra)
            .envs(how.env.iter().copied())
            .env_remove("MAC_HUB_TOKEN")
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .stdout(Stdio::null());
        if let Some(n) = how.nofile {
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
        // A copy of the binary just written may be busy for a moment: a
        // process another test forks meanwhile holds its descriptor until
        // it execs (ETXTBSY).
        let mut tries = 0;
        let mut child = loop {
            match cmd.spawn() {
                Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                r => break Kill(r.expect("hub starts")),
            }
        };
        let stderr = child.stderr.take().expect("stderr");
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let log2 = log.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on ").nth(1) {
                    let url = rest.split_whitespace().next().unwrap_or_default();
                    let _ = tx.send(url.to_string());
                }
                if let Ok(mut l) = log2.lock() {
                    l.push_str(&line);
                    l.push('\n');
                }
            }
        });
        let Ok(url) = rx.recv_timeout(Duration::from_secs(30)) else {
            // Its stderr has closed (it exits) or it hangs: give it 10 s to
            // exit, then kill it; the reader ends at the pipe's end.
            let mut status = None;
            for _ in 0..500 {
                if let Ok(Some(st)) = child.try_wait() {
                    status = Some(st);
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            drop(child);
            let _ = reader.join();
            let log = log.lock().map(|l| l.clone()).unwrap_or_default();
            return Err(Stopped { log, status });
        };
        Ok(HubProcess {
            child,
            url,
            log,
            reader: Some(reader),
        })
    }

    /// What it has written to stderr so far.
    pub fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Its log so far, a line each.
    pub fn lines(&self) -> Vec<String> {
        self.log().lines().map(str::to_string).collect()
    }

    /// Whether a line of its log matches, waiting at most 2 s for it.
    pub async fn logged(&self, matches: impl Fn(&str) -> bool) -> bool {
        let t0 = std::time::Instant::now();
        while t0.elapsed() < Duration::from_secs(2) {
            if self.log().lines().any(&matches) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// Its URL with `p` appended.
    pub fn path(&self, p: &str) -> String {
        format!("{}{p}", self.url)
    }

    /// Kill it, reap it and read its log to the end.
    pub fn stop(&mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        self.log()
    }
}

/// [`HubProcess::spawn`] on an ephemeral port with `extra` flags and a
/// descriptor limit: the guard and the URL.
pub fn spawn_hub(dir: &std::path::Path, extra: &[&str], nofile: Option<u64>) -> (Kill, String) {
    spawn_hub_env(dir, extra, nofile, &[])
}

/// [`spawn_hub`] with variables added to the hub's environment.
pub fn spawn_hub_env(
    dir: &std::path::Path,
    extra: &[&str],
    nofile: Option<u64>,
    env: &[(&str, &str)],
) -> (Kill, String) {
    let h = HubProcess::spawn(
        dir,
        Spawn {
            extra,
            env,
            nofile,
            ..Spawn::default()
        },
    );
    (h.child, h.url)
}

/// [`HubProcess::spawn`] on the fixed loopback `port`: the guard, once it
/// listens.
pub fn hub_on_port(dir: &std::path::Path, port: u16, extra: &[&str]) -> Kill {
    HubProcess::spawn(
        dir,
        Spawn {
            extra,
            port: Some(port),
            ..Spawn::default()
        },
    )
    .child
}

/// A directory with a config and a tokens file holding one token per role;
/// returns (dir, owner, viewer, worker) tokens.
pub fn hub_dir() -> (tempfile::TempDir, String, String, String) {
    let (owner, viewer, worker) = (fake("own"), fake("view"), fake("work"));
    let dir = hub_dir_of(&[
        ("alice", Role::Owner, &owner),
        ("screen", Role::Viewer, &viewer),
        ("fleet", Role::Worker, &worker),
    ]);
    (dir, owner, viewer, worker)
}

/// A directory with [`CONFIG`] as `hub.toml` and a `tokens.toml` holding
/// these tokens (name, role, token).
pub fn hub_dir_of(tokens: &[(&str, Role, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("hub.toml"), CONFIG).expect("config");
    let text: Vec<String> = tokens
        .iter()
        .map(|(name, role, token)| auth::token_entry(name, *role, token))
        .collect();
    std::fs::write(dir.path().join("tokens.toml"), text.join("\n")).expect("tokens");
    dir
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

/// A response header as text (`None`: absent or not text).
pub fn header(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Overwrite `pages` pages in the middle (from a third in) of a stopped
/// hub's database with junk, everything checkpointed into the main file
/// first (so SQLite cannot read around it from the WAL): a real damaged
/// page, which the file still opens with and `quick_check` finds. Returns
/// the file's bytes as left.
pub fn damage_pages(db: &std::path::Path, pages: usize) -> Vec<u8> {
    let c = rusqlite::Connection::open(db).expect("open the database");
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    let page: usize = c
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .expect("page size") as usize;
    drop(c);
    let mut bytes = std::fs::read(db).expect("read the database");
    let count = bytes.len() / page;
    assert!(count > 3 * pages + 3, "{count} pages: too few to damage");
    let from = count / 3 * page;
    for b in &mut bytes[from..from + pages * page] {
        *b = 0xA5;
    }
    std::fs::write(db, &bytes).expect("write the damage");
    bytes
}

/// A writer mid-way through a config written in place: `path` opened,
/// emptied and given `first`, flushed, and held open (the caller writes
/// the rest and closes it).
pub fn start_writing(path: &std::path::Path, first: &[u8]) -> std::fs::File {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(path)
        .expect("open to write");
    f.write_all(first).expect("first part");
    f.flush().expect("flush");
    f
}
