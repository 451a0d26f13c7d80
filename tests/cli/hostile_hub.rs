//! The real `macfleet` binary against a stand-in hub that does what no real
//! hub would: secrets and terminal escapes in every field of every answer
//! and event, and (below) bodies and streams that never end. Every reader
//! must print hub text scrubbed and escaped, and no misbehaviour may grow a
//! client past 256 MiB.
//!
//! The stand-in is a plain HTTP/1.1 server on a loopback port, one thread a
//! connection, `Connection: close` on every answer; every loop of it is
//! bounded in time.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

// ---------------------------------------------------------------------------
// The stand-in server.

/// One request as the stand-in saw it.
#[derive(Debug, Clone)]
struct Req {
    path: String,
    query: HashMap<String, String>,
}

type Handler = Arc<dyn Fn(&Req, &mut TcpStream) -> std::io::Result<()> + Send + Sync>;

/// A stand-in hub; dropping it stops its accept loop.
struct StandIn {
    url: String,
    stop: Arc<AtomicBool>,
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn stand_in(handler: Handler) -> StandIn {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        let end = Instant::now() + Duration::from_secs(300);
        while !flag.load(Ordering::SeqCst) && Instant::now() < end {
            match listener.accept() {
                Ok((mut s, _)) => {
                    let h = handler.clone();
                    let flag = flag.clone();
                    std::thread::spawn(move || {
                        let _ = s.set_nonblocking(false);
                        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                        let _ = s.set_write_timeout(Some(Duration::from_secs(10)));
                        if let Some(req) = read_head(&mut s) {
                            if !flag.load(Ordering::SeqCst) {
                                let _ = h(&req, &mut s);
                            }
                        }
                        let _ = s.shutdown(std::net::Shutdown::Both);
                    });
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    StandIn { url, stop }
}

fn read_head(s: &mut TcpStream) -> Option<Req> {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = s.read(&mut buf).ok()?;
        if n == 0 || head.len() > 64 * 1024 {
            return None;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&head).into_owned();
    let target = text.lines().next()?.split(' ').nth(1)?.to_string();
    let (path, q) = target.split_once('?').unwrap_or((&target, ""));
    let query = q
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Some(Req {
        path: path.to_string(),
        query,
    })
}

fn answer(
    s: &mut TcpStream,
    status: &str,
    ctype: &str,
    extra: &str,
    body: &[u8],
) -> std::io::Result<()> {
    write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n{extra}\r\n",
        body.len()
    )?;
    s.write_all(body)?;
    s.flush()
}

fn json_answer(s: &mut TcpStream, v: &Value) -> std::io::Result<()> {
    answer(
        s,
        "200 OK",
        "application/json",
        "",
        v.to_string().as_bytes(),
    )
}

fn sse_head(s: &mut TcpStream) -> std::io::Result<()> {
    s.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
    )?;
    s.flush()
}

/// Keep a stream open with comment lines for a bounded while.
fn keep_alive(s: &mut TcpStream, for_: Duration) -> std::io::Result<()> {
    let end = Instant::now() + for_;
    while Instant::now() < end {
        s.write_all(b": keep-alive\n\n")?;
        s.flush()?;
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Hostile text, made at run time.

/// ED, BEL, an OSC 52 clipboard write, an 8-bit CSI (U+009B) and a
/// right-to-left override (U+202E).
const ESCAPES: &str = "\u{1b}[2J\u{7}\u{1b}]52;c;aGVsbG8=\u{7}\u{9b}2J\u{202e}";
/// The same without the OSC, for fields of at most 64 bytes.
const SHORT_ESCAPES: &str = "\u{1b}[2J\u{7}\u{9b}\u{202e}";

struct Hostile {
    /// A token-shaped key (a GitHub personal access token's shape).
    key: String,
    /// The random part of it, which must never be printed.
    needle: String,
    email: String,
}

impl Hostile {
    fn new() -> Hostile {
        let mut seed = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
            | 1;
        const B62: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let mut body: String = (0..33)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                B62[(seed % 62) as usize] as char
            })
            .collect();
        body.push_str("aQ3");
        let key = format!("{}{body}", "ghp_");
        assert!(
            macfleet::scrub::contains_secret(&key),
            "the scrubber catches the test's key"
        );
        Hostile {
            key,
            needle: body,
            email: format!("jo.smith{}@acme.io", seed % 1000),
        }
    }

    /// Escapes, the key and the e-mail: for fields of at most 128 bytes.
    fn long(&self) -> String {
        format!("{ESCAPES} {} {}", self.key, self.email)
    }
    /// At most 64 bytes: short escapes and the key.
    fn mid(&self) -> String {
        format!("{SHORT_ESCAPES} {}", self.key)
    }
    /// At most 64 bytes, without the key (revisions).
    fn rev(&self) -> String {
        format!("r{SHORT_ESCAPES} {}", self.email)
    }
    /// An agent name's 32 bytes at most.
    fn agent(c: char) -> String {
        format!("{c}{SHORT_ESCAPES}x")
    }

    fn failover(&self, at: &str) -> Value {
        json!({
            "id": self.long(), "at": at, "from": Hostile::agent('a'), "to": Hostile::agent('b'),
            "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router",
                      "detail": format!("{} capped {}", self.long(), self.key)}
        })
    }

    fn worker(&self, now: &str, state: &str) -> Value {
        let (a, b) = (Hostile::agent('a'), Hostile::agent('b'));
        let cap = json!({"binary": true, "token": true, "preflight": "ok"});
        json!({
            "worker": self.long(), "host": self.long(), "received_at": now, "sent_at": now,
            "state": state, "config_revision": self.rev(), "in_sync": false,
            "agents": [a, b], "active_agent": b,
            "capabilities": {a.clone(): cap.clone(), b.clone(): cap},
            "last_failover": self.failover(now),
        })
    }

    fn record(&self, seq: u64, now: &str) -> Value {
        let mut r = self.failover(now);
        let m = r.as_object_mut().expect("object");
        m.insert("seq".into(), json!(seq));
        m.insert("worker".into(), json!(self.long()));
        m.insert("host".into(), json!(self.long()));
        m.insert("received_at".into(), json!(now));
        r
    }
}

fn now() -> String {
    macfleet::wire::fmt_time(chrono::Utc::now())
}

/// The stand-in hub whose every answer and event is hostile.
fn hostile_hub(h: Arc<Hostile>) -> StandIn {
    stand_in(Arc::new(move |req: &Req, s: &mut TcpStream| {
        let now = now();
        match req.path.as_str() {
            "/v1/workers" => json_answer(
                s,
                &json!({"now": now, "config_revision": h.rev(), "heartbeat_interval_s": 10,
                        "cursor": format!("c{SHORT_ESCAPES}"), "delta": false,
                        "workers": [h.worker(&now, "healthy")]}),
            ),
            "/v1/failovers" => {
                let head = 3u64;
                let since: u64 = req
                    .query
                    .get("since")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let limit: u64 = req
                    .query
                    .get("limit")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(100);
                let events: Vec<Value> = (since + 1..=head)
                    .take(limit as usize)
                    .map(|q| h.record(q, &now))
                    .collect();
                let next = if events.len() as u64 == limit {
                    since + limit
                } else {
                    head
                };
                json_answer(s, &json!({"events": events, "next": next, "oldest": 1}))
            }
            "/v1/config" => answer(
                s,
                "200 OK",
                "application/toml",
                &format!("ETag: \"r-{}\"\r\n", h.key),
                format!(
                    "# {}\nMAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n",
                    h.key
                )
                .as_bytes(),
            ),
            "/v1/config/history" => json_answer(
                s,
                &json!({"revisions": [{"revision": h.rev(), "at": now, "by": h.mid(),
                        "agents": [Hostile::agent('a')], "previous_agents": [Hostile::agent('b')]}]}),
            ),
            "/v1/events" => {
                sse_head(s)?;
                let w = h.worker(&now, "healthy").to_string();
                let st = h.worker(&now, "stale").to_string();
                let f = h.record(10, &now).to_string();
                let bad = json!({"state": h.long()}).to_string();
                write!(
                    s,
                    "id: 1\nevent: heartbeat\ndata: {w}\n\nid: 2\nevent: state\ndata: {st}\n\n\
                     id: 3\nevent: failover\ndata: {f}\n\n\
                     id: 4\nevent: heartbeat\ndata: {bad}\n\n\
                     id: 5\nevent: x{ESCAPES}\ndata: {{}}\n\n"
                )?;
                s.flush()?;
                keep_alive(s, Duration::from_secs(20))
            }
            _ => answer(s, "404 Not Found", "application/json", "", b"{}"),
        }
    }))
}

/// A stand-in whose every answer is an error with hostile text.
fn erring_hub(h: Arc<Hostile>) -> StandIn {
    stand_in(Arc::new(move |_req: &Req, s: &mut TcpStream| {
        let body = json!({"error": {"code": format!("bad{SHORT_ESCAPES}"), "message": h.long(),
                                    "current_revision": h.rev()}});
        answer(
            s,
            "500 Internal Server Error",
            "application/json",
            "",
            body.to_string().as_bytes(),
        )
    }))
}

// ---------------------------------------------------------------------------
// Running the binary.

fn bin(url: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_macfleet"));
    c.args(args)
        .env_remove("MAC_HUB_URL")
        .env("MAC_HUB_URL", url)
        .env(
            "MAC_HUB_TOKEN",
            format!("{}{}", "mft_test_", "view".repeat(6)),
        )
        .env("XDG_CONFIG_HOME", "/nonexistent-macfleet-test")
        .env("COLUMNS", "400")
        .env_remove("MACFLEET_LOG")
        // With a backtrace asked for, color-eyre resolves one for every
        // error report: some 300 MiB of a debug build's debug info, which
        // is not what these tests measure.
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

struct Ran {
    what: String,
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Run to the end (at most `limit`; killed then).
fn run_for(url: &str, args: &[&str], limit: Duration) -> Ran {
    let mut child = crate::common::Kill(bin(url, args).spawn().expect("macfleet runs"));
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let o = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let e = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let end = Instant::now() + limit;
    let code = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st.code();
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        what: args.join(" "),
        code,
        stdout: o.join().expect("stdout"),
        stderr: e.join().expect("stderr"),
    }
}

/// What must never reach a reader raw.
fn assert_safe(h: &Hostile, r: &Ran) {
    for (name, bytes) in [("stdout", &r.stdout), ("stderr", &r.stderr)] {
        let text = String::from_utf8_lossy(bytes);
        let bad: Vec<char> = text
            .chars()
            .filter(|&c| macfleet::textsafe::is_unsafe(c) && c != '\n')
            .collect();
        assert!(
            bad.is_empty(),
            "`macfleet {}` wrote raw {bad:?} on {name}:\n{text}",
            r.what.escape_debug()
        );
        assert!(
            !text.contains(&h.needle),
            "`macfleet {}` printed the key on {name}:\n{text}",
            r.what.escape_debug()
        );
        // E-mail addresses: as far as the scrubber catches them.
        if macfleet::scrub::contains_secret(&h.email) {
            assert!(!text.contains(&h.email), "{name} of {}:\n{text}", r.what);
        }
    }
}

#[test]
fn every_reader_prints_hub_text_scrubbed_and_escaped() {
    let h = Arc::new(Hostile::new());
    let hub = hostile_hub(h.clone());
    let id = h.long();
    let mut runs: Vec<Vec<String>> = Vec::new();
    for what in ["workers", "failovers", "agents", "history"] {
        for o in ["table", "wide", "json", "jsonl"] {
            runs.push(vec!["get".into(), what.into(), "-o".into(), o.into()]);
        }
    }
    for o in ["table", "json", "jsonl"] {
        runs.push(vec![
            "get".into(),
            "worker".into(),
            id.clone(),
            "-o".into(),
            o.into(),
        ]);
    }
    let snapshots: Vec<Ran> = runs
        .iter()
        .map(|a| {
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            run_for(&hub.url, &a, Duration::from_secs(20))
        })
        .collect();
    for r in &snapshots {
        assert_eq!(
            r.code,
            Some(0),
            "`macfleet {}`: {}",
            r.what.escape_debug(),
            String::from_utf8_lossy(&r.stderr)
        );
        assert_safe(&h, r);
        let out = String::from_utf8_lossy(&r.stdout);
        if r.what.ends_with("-o json") {
            let _: Value =
                serde_json::from_str(&out).unwrap_or_else(|e| panic!("{}: {e}\n{out}", r.what));
        }
        if r.what.ends_with("-o jsonl") {
            for l in out.lines() {
                let _: Value =
                    serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}\n{l}", r.what));
            }
        }
    }
    // The hub's text was shown, escaped: not dropped.
    let table = &snapshots[0];
    assert!(
        String::from_utf8_lossy(&table.stdout).contains("<U+001B>[2J"),
        "{}",
        String::from_utf8_lossy(&table.stdout)
    );

    // --watch, table and jsonl, and the client's own warnings.
    let watches: Vec<Ran> = [
        ["get", "workers", "--watch", "-o", "table"],
        ["get", "workers", "--watch", "-o", "jsonl"],
        ["get", "failovers", "--watch", "-o", "table"],
        ["get", "failovers", "--watch", "-o", "jsonl"],
    ]
    .into_iter()
    .map(|a| {
        let url = hub.url.clone();
        std::thread::spawn(move || run_for(&url, &a, Duration::from_secs(4)))
    })
    .collect::<Vec<_>>()
    .into_iter()
    .map(|t| t.join().expect("watch"))
    .collect();
    for r in &watches {
        assert_safe(&h, r);
        let out = String::from_utf8_lossy(&r.stdout);
        assert!(out.lines().count() >= 2, "`{}` printed:\n{out}", r.what);
    }
    // The stale worker came from the stream; the failover with seq 10 too.
    assert!(String::from_utf8_lossy(&watches[0].stdout).contains("stale"));
    assert!(String::from_utf8_lossy(&watches[3].stdout).contains("\"seq\":10"));
    let warned = String::from_utf8_lossy(&watches[0].stderr);
    assert!(warned.contains("undecodable hub event skipped"), "{warned}");

    // Error answers, in a snapshot and on a stream.
    let bad = erring_hub(h.clone());
    for r in [
        run_for(&bad.url, &["get", "workers"], Duration::from_secs(20)),
        run_for(
            &bad.url,
            &["get", "failovers", "--watch"],
            Duration::from_secs(8),
        ),
    ] {
        assert_safe(&h, &r);
        assert!(!r.stderr.is_empty(), "{} said nothing", r.what);
    }
}

// ---------------------------------------------------------------------------
// A hub that misbehaves: endless bodies and streams.

use crate::pty;

/// The most a client may grow to against any misbehaviour.
const PEAK_LIMIT_KIB: u64 = 256 * 1024;

struct Measured {
    ran: Ran,
    /// VmHWM while it ran (sampled every 10 ms), in KiB.
    peak_kib: u64,
    /// CPU seconds per wall second over the run (sampled before the end).
    cpu_share: f64,
}

fn reader(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            // Keep at most 1 MiB of what it prints.
            if v.len() < 1 << 20 {
                v.extend_from_slice(&buf[..n]);
            }
        }
        v
    })
}

/// Run the binary for at most `limit`, killed at once if it grows past
/// [`PEAK_LIMIT_KIB`]; its peak memory and CPU share from /proc
/// (`common::measure::watch`).
fn run_measured(url: &str, args: &[&str], limit: Duration) -> Measured {
    let mut child = crate::common::Kill(bin(url, args).spawn().expect("macfleet runs"));
    let o = reader(child.stdout.take().expect("stdout"));
    let e = reader(child.stderr.take().expect("stderr"));
    let w = crate::common::measure::watch(&mut child.0, limit, PEAK_LIMIT_KIB);
    Measured {
        ran: Ran {
            what: args.join(" "),
            code: w.code(),
            stdout: o.join().expect("stdout"),
            stderr: e.join().expect("stderr"),
        },
        peak_kib: w.peak_kib,
        cpu_share: w.cpu_share,
    }
}

fn report(m: &Measured) {
    eprintln!(
        "`macfleet {}`: peak {} MiB, cpu {:.0}%, exit {:?}",
        m.ran.what,
        m.peak_kib / 1024,
        m.cpu_share * 100.0,
        m.ran.code
    );
}

/// What a misbehaving stand-in does on one path; the others answer well.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Misbehaviour {
    /// `/v1/workers`: the same worker, again and again, in one endless
    /// chunked body.
    WorkersRepeat,
    /// `/v1/workers`: one worker whose host never ends.
    WorkersEndlessElement,
    /// `/v1/workers`: a good answer first, then endless ones.
    WorkersGoodThenEndless,
    /// `/v1/workers`: a 500 whose error body never ends.
    EndlessErrorBody,
    /// `/v1/config`: a document that never ends.
    EndlessConfig,
    /// `/v1/failovers`: valid events, seq rising, past any `limit`.
    EndlessFailovers,
    /// `/v1/config/history`: valid entries, past the 1,000 a hub keeps.
    EndlessHistory,
    /// `/v1/events`: `data:` lines without the blank line that ends an event.
    EndlessEventData,
    /// `/v1/events`: one line that never ends.
    EndlessEventLine,
}

fn worker_json(id: &str, now: &str) -> Value {
    json!({"worker": id, "host": "gpu-node-1", "received_at": now, "sent_at": now,
           "state": "healthy", "config_revision": "r1", "in_sync": true,
           "agents": ["opencode", "claude"], "active_agent": "opencode",
           "capabilities": {}, "last_failover": null})
}

fn chunk(s: &mut TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    write!(s, "{:x}\r\n", bytes.len())?;
    s.write_all(bytes)?;
    s.write_all(b"\r\n")
}

/// A chunked answer: `first`, then `unit` over and over until the client
/// goes away or a minute has passed.
fn endless(s: &mut TcpStream, head: &str, first: &[u8], unit: &[u8]) -> std::io::Result<()> {
    write!(
        s,
        "HTTP/1.1 {head}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )?;
    chunk(s, first)?;
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        chunk(s, unit)?;
    }
    Ok(())
}

/// A failovers page whose events never end, each a new seq.
fn endless_records(s: &mut TcpStream, now: &str, since: u64) -> std::io::Result<()> {
    write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )?;
    chunk(s, b"{\"next\":0,\"oldest\":1,\"events\":[")?;
    let end = Instant::now() + Duration::from_secs(60);
    let mut seq = since + 1;
    while Instant::now() < end {
        let mut batch = String::new();
        for _ in 0..64 {
            let r = json!({"seq": seq, "worker": "w-1", "host": "gpu-node-1", "received_at": now,
                           "id": format!("f-{seq}"), "at": now, "from": "opencode", "to": "claude",
                           "cause": {"kind": "auth", "status": 401, "source": "worker"}});
            batch.push_str(&format!("{r},"));
            seq += 1;
        }
        chunk(s, batch.as_bytes())?;
    }
    Ok(())
}

/// An event-stream answer: `unit` over and over (not chunked: the stream
/// ends when the connection does).
fn endless_sse(s: &mut TcpStream, first: &[u8], unit: &[u8]) -> std::io::Result<()> {
    sse_head(s)?;
    s.write_all(first)?;
    let end = Instant::now() + Duration::from_secs(60);
    while Instant::now() < end {
        s.write_all(unit)?;
    }
    Ok(())
}

/// A stand-in that answers every path well but `bad`'s; it counts the
/// event-stream connections.
fn misbehaving_hub(bad: Misbehaviour, streams: Arc<std::sync::atomic::AtomicUsize>) -> StandIn {
    use Misbehaviour::*;
    let polls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    stand_in(Arc::new(move |req: &Req, s: &mut TcpStream| {
        let now = now();
        let page_head = format!(
            "{{\"now\":\"{now}\",\"config_revision\":\"r1\",\"heartbeat_interval_s\":10,\"cursor\":\"c1-1\",\"delta\":false,\"workers\":["
        );
        match (req.path.as_str(), bad) {
            ("/v1/workers", WorkersRepeat) => {
                let unit = format!("{},", worker_json("w-1", &now));
                endless(
                    s,
                    "200 OK\r\nContent-Type: application/json",
                    page_head.as_bytes(),
                    unit.repeat(64).as_bytes(),
                )
            }
            ("/v1/workers", WorkersGoodThenEndless)
                if polls.fetch_add(1, Ordering::SeqCst) == 0 =>
            {
                json_answer(
                    s,
                    &json!({"now": now, "config_revision": "r1", "heartbeat_interval_s": 10,
                            "cursor": "c1-1", "delta": false, "workers": [worker_json("w-1", &now)]}),
                )
            }
            ("/v1/workers", WorkersEndlessElement | WorkersGoodThenEndless) => {
                let first = format!("{page_head}{{\"worker\":\"w-1\",\"host\":\"");
                endless(
                    s,
                    "200 OK\r\nContent-Type: application/json",
                    first.as_bytes(),
                    &[b'a'; 16384],
                )
            }
            ("/v1/workers", EndlessErrorBody) => endless(
                s,
                "500 Internal Server Error\r\nContent-Type: application/json",
                b"{\"error\":{\"code\":\"internal\",\"message\":\"",
                &[b'a'; 16384],
            ),
            ("/v1/config", EndlessConfig) => endless(
                s,
                "200 OK\r\nContent-Type: application/toml\r\nETag: \"r1\"",
                b"MAC_CODING_AGENTS = [\"opencode\"]\n# ",
                &[b'a'; 16384],
            ),
            ("/v1/failovers", EndlessFailovers) => {
                let since = req.query.get("since").and_then(|v| v.parse::<u64>().ok());
                endless_records(s, &now, since.unwrap_or(0))
            }
            ("/v1/config/history", EndlessHistory) => {
                let unit = format!(
                    "{},",
                    json!({"revision": "r1", "at": now, "by": "alice",
                           "agents": ["opencode"], "previous_agents": ["claude"]})
                );
                endless(
                    s,
                    "200 OK\r\nContent-Type: application/json",
                    b"{\"revisions\":[",
                    unit.repeat(64).as_bytes(),
                )
            }
            ("/v1/events", EndlessEventData) => {
                streams.fetch_add(1, Ordering::SeqCst);
                let line = format!("data: {}\n", "d".repeat(1000));
                endless_sse(s, b"event: heartbeat\n", line.repeat(16).as_bytes())
            }
            ("/v1/events", EndlessEventLine) => {
                streams.fetch_add(1, Ordering::SeqCst);
                endless_sse(s, b"data: ", &[b'x'; 16384])
            }
            ("/v1/events", _) => {
                streams.fetch_add(1, Ordering::SeqCst);
                sse_head(s)?;
                keep_alive(s, Duration::from_secs(30))
            }
            ("/v1/workers", _) => json_answer(
                s,
                &json!({"now": now, "config_revision": "r1", "heartbeat_interval_s": 10,
                        "cursor": "c1-1", "delta": false, "workers": [worker_json("w-1", &now)]}),
            ),
            ("/v1/whoami", _) => json_answer(
                s,
                &json!({"name": "screen", "role": "viewer", "hub": "stand-in", "api": "v1"}),
            ),
            ("/v1/failovers", _) => json_answer(s, &json!({"events": [], "next": 0, "oldest": 0})),
            ("/v1/config", _) => answer(
                s,
                "200 OK",
                "application/toml",
                "ETag: \"r1\"\r\n",
                b"MAC_CODING_AGENTS = [\"opencode\", \"claude\"]\n",
            ),
            ("/v1/config/history", _) => json_answer(s, &json!({"revisions": []})),
            _ => answer(s, "404 Not Found", "application/json", "", b"{}"),
        }
    }))
}

/// The clear error: one line naming the hub and the bound.
fn assert_refused(m: &Measured, hub: &str, on: &str, bound: &str) {
    let err = String::from_utf8_lossy(&m.ran.stderr);
    let want = format!("the hub at {hub} broke a bound of the API on {on}: {bound}");
    assert!(
        err.contains(&want),
        "`macfleet {}` said:\n{err}\nnot: {want}",
        m.ran.what
    );
}

fn assert_small(m: &Measured) {
    report(m);
    assert!(
        m.peak_kib > 0 && m.peak_kib <= PEAK_LIMIT_KIB,
        "`macfleet {}` peaked at {} MiB (at most {} MiB)",
        m.ran.what,
        m.peak_kib / 1024,
        PEAK_LIMIT_KIB / 1024
    );
}

fn snapshot_case(bad: Misbehaviour, args: &[&str], on: &str, bound: &str) {
    let streams = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let hub = misbehaving_hub(bad, streams);
    let m = run_measured(&hub.url, args, Duration::from_secs(40));
    assert_small(&m);
    assert_eq!(
        m.ran.code,
        Some(1),
        "{bad:?}: {}",
        String::from_utf8_lossy(&m.ran.stderr)
    );
    assert_refused(&m, &hub.url, on, bound);
}

#[test]
fn an_endless_workers_body_of_one_worker_again_stops_at_the_second() {
    snapshot_case(
        Misbehaviour::WorkersRepeat,
        &["get", "workers"],
        "GET /v1/workers",
        "it lists a worker twice",
    );
}

#[test]
fn an_endless_worker_entry_stops_at_its_bound() {
    snapshot_case(
        Misbehaviour::WorkersEndlessElement,
        &["get", "workers", "-o", "json"],
        "GET /v1/workers",
        "worker entry 0 is over 64 KiB",
    );
}

#[test]
fn an_endless_error_body_stops_at_its_bound() {
    snapshot_case(
        Misbehaviour::EndlessErrorBody,
        &["get", "workers"],
        "its 500 answer to /v1/workers",
        "an error body over 64 KiB",
    );
}

#[test]
fn an_endless_config_stops_at_its_bound() {
    snapshot_case(
        Misbehaviour::EndlessConfig,
        &["get", "agents"],
        "GET /v1/config",
        "a config document over 1 MiB",
    );
}

#[test]
fn an_endless_failovers_page_stops_past_its_limit() {
    snapshot_case(
        Misbehaviour::EndlessFailovers,
        &["get", "failovers"],
        "GET /v1/failovers",
        "it holds more events than the 1 asked for",
    );
}

#[test]
fn an_endless_history_stops_past_what_a_hub_keeps() {
    snapshot_case(
        Misbehaviour::EndlessHistory,
        &["get", "history"],
        "GET /v1/config/history",
        "it holds more than 1000 revisions",
    );
}

/// `--watch` against an endless stream: it refuses it, says so, stays
/// small and cool, and reconnects with backoff.
fn watch_case(bad: Misbehaviour, bound: &str) {
    let streams = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let hub = misbehaving_hub(bad, streams.clone());
    let m = run_measured(
        &hub.url,
        &["get", "failovers", "--watch"],
        Duration::from_secs(6),
    );
    assert_small(&m);
    assert_refused(&m, &hub.url, "GET /v1/events", bound);
    let n = streams.load(Ordering::SeqCst);
    // 250 ms, 500 ms, 1 s, 2 s: three to five connections in six seconds.
    assert!((3..=6).contains(&n), "{n} connections to /v1/events in 6 s");
    assert!(
        m.cpu_share < 0.6,
        "`--watch` used {:.0}% of a core",
        m.cpu_share * 100.0
    );
}

#[test]
fn watch_refuses_endless_event_data_and_reconnects() {
    watch_case(
        Misbehaviour::EndlessEventData,
        "an event's data over 256 KiB",
    );
}

#[test]
fn watch_refuses_an_endless_event_line_and_reconnects() {
    watch_case(
        Misbehaviour::EndlessEventLine,
        "an event-stream line over 256 KiB",
    );
}

/// The TUI in a pty against a misbehaving hub: its peak memory while it
/// runs, and the screen.
fn tui_case(bad: Misbehaviour) -> (pty::Pty, Arc<std::sync::atomic::AtomicUsize>, StandIn) {
    let streams = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let hub = misbehaving_hub(bad, streams.clone());
    let token = format!("{}{}", "mft_test_", "view".repeat(6));
    let mut p = pty::Pty::spawn(
        &["--read-only"],
        &[
            ("MAC_HUB_URL", hub.url.as_str()),
            ("MAC_HUB_TOKEN", token.as_str()),
        ],
    );
    p.resize(220, 30);
    (p, streams, hub)
}

fn tui_peak(p: &pty::Pty, for_: Duration) -> u64 {
    let pid = p.child.process_id().expect("pid");
    let end = Instant::now() + for_;
    let mut peak = 0;
    while Instant::now() < end {
        peak = peak.max(crate::common::measure::vm_hwm_kib(pid).unwrap_or(0));
        assert!(
            peak <= PEAK_LIMIT_KIB,
            "the TUI peaked past {} MiB",
            peak / 1024
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    eprintln!("TUI: peak {} MiB", peak / 1024);
    peak
}

#[test]
fn the_tui_refuses_an_endless_workers_body_and_says_so() {
    let (p, _streams, hub) = tui_case(Misbehaviour::WorkersEndlessElement);
    let want = format!(
        "the hub at {} broke a bound of the API on GET /v1/workers",
        hub.url
    );
    p.wait_for(&want, Duration::from_secs(20));
    let peak = tui_peak(&p, Duration::from_secs(5));
    assert!(peak > 0 && peak <= PEAK_LIMIT_KIB);
    p.wait_for("worker entry 0 is over 64 KiB", Duration::from_secs(5));
}

#[test]
fn the_tui_refuses_an_endless_event_stream_keeps_its_data_and_reconnects() {
    for bad in [
        Misbehaviour::EndlessEventData,
        Misbehaviour::EndlessEventLine,
    ] {
        let (p, streams, _hub) = tui_case(bad);
        // Its data came from the polls; the stream was refused, not `live`.
        p.wait_for("polling", Duration::from_secs(20));
        let peak = tui_peak(&p, Duration::from_secs(5));
        assert!(peak > 0 && peak <= PEAK_LIMIT_KIB);
        let screen = p.screen();
        assert!(!screen.contains("live"), "{bad:?}:\n{screen}");
        assert!(
            screen.contains("1 worker") || screen.contains("w-1"),
            "{bad:?}: its data:\n{screen}"
        );
        let n = streams.load(Ordering::SeqCst);
        assert!(
            n >= 2,
            "{bad:?}: {n} stream connections: it did not reconnect"
        );
        let log = p.log_tail();
        assert!(
            log.contains("broke a bound of the API on GET /v1/events"),
            "{bad:?}: {log}"
        );
    }
}

#[test]
fn the_tui_keeps_its_last_good_fleet_when_the_next_answer_is_refused() {
    let (p, _streams, hub) = tui_case(Misbehaviour::WorkersGoodThenEndless);
    p.wait_for("1 worker", Duration::from_secs(20));
    let want = format!(
        "the hub at {} broke a bound of the API on GET /v1/workers",
        hub.url
    );
    let screen = p.wait_for(&want, Duration::from_secs(30));
    assert!(screen.contains("1 worker"), "its last good data:\n{screen}");
    let peak = tui_peak(&p, Duration::from_secs(3));
    assert!(peak > 0 && peak <= PEAK_LIMIT_KIB);
}

/// The screen is a reader too: the TUI against the stand-in whose every
/// field and event holds a key, an e-mail and terminal escapes, through
/// every view, a worker's and a failover's detail and `v`'s raw JSON. No
/// key or e-mail is drawn, and none of the hub's escapes (an OSC 52
/// clipboard write, BEL, an 8-bit CSI, a bidi override) reaches the
/// terminal: they are drawn as `<U+…>` marks.
#[test]
fn the_tui_draws_hub_text_scrubbed_and_escaped() {
    let h = Arc::new(Hostile::new());
    let hub = hostile_hub(h.clone());
    let token = format!("{}{}", "mft_test_", "view".repeat(6));
    let mut p = pty::Pty::spawn(
        &["--read-only"],
        &[
            ("MAC_HUB_URL", hub.url.as_str()),
            ("MAC_HUB_TOKEN", token.as_str()),
        ],
    );
    p.resize(220, 30);
    p.wait_for("<U+", Duration::from_secs(20));
    let check = |p: &pty::Pty, step: &str| {
        let screen = p.screen();
        assert!(
            !screen.contains(&h.needle),
            "{step}: the key drawn:\n{screen}"
        );
        assert!(
            !screen.contains(&h.email),
            "{step}: the e-mail drawn:\n{screen}"
        );
        let raw = p.bytes.lock().expect("bytes").clone();
        let raw = String::from_utf8_lossy(&raw);
        for (what, bad) in [
            ("OSC 52", "\u{1b}]52"),
            ("BEL", "\u{7}"),
            ("8-bit CSI", "\u{9b}"),
            ("RLO", "\u{202e}"),
        ] {
            assert!(
                !raw.contains(bad),
                "{step}: a raw {what} reached the terminal"
            );
        }
        assert!(!raw.contains(&h.needle), "{step}: the key written");
    };
    check(&p, "workers");
    for (keys, step) in [
        ("2", "workers view"),
        ("\r", "worker detail"),
        ("v", "worker JSON"),
        ("\u{1b}", "back"),
        ("3", "failovers view"),
        ("\r", "failover detail"),
        ("v", "failover JSON"),
        ("\u{1b}", "back"),
        ("4", "history"),
        ("1", "ladder"),
    ] {
        p.send(keys);
        std::thread::sleep(Duration::from_millis(400));
        check(&p, step);
    }
    p.send("q");
    let _ = p.wait_exit(Duration::from_secs(10));
}

// ---------------------------------------------------------------------------
// `get workers -o json|jsonl` streams: a page that breaks mid-way.

/// How a streamed `/v1/workers` page goes wrong after its third worker.
#[derive(Clone, Copy, Debug)]
enum MidPage {
    /// The body stops half-way through the fourth worker: its
    /// `Content-Length` promises more, and the connection closes.
    Cut,
    /// The fourth worker's id is over the contract's 128 bytes.
    OutOfBounds,
}

fn mid_page_hub(how: MidPage) -> StandIn {
    stand_in(Arc::new(move |req: &Req, s: &mut TcpStream| {
        if req.path != "/v1/workers" {
            return answer(s, "404 Not Found", "application/json", "", b"{}");
        }
        let now = now();
        let mut workers: Vec<Value> = (1..=4)
            .map(|i| worker_json(&format!("w-{i}"), &now))
            .collect();
        if let MidPage::OutOfBounds = how {
            workers[3]["worker"] = json!("w".repeat(129));
        }
        let body = json!({"now": now, "config_revision": "r1", "heartbeat_interval_s": 10,
                          "cursor": "c1-4", "delta": false, "workers": workers})
        .to_string();
        match how {
            MidPage::OutOfBounds => json_answer(s, &serde_json::from_str(&body)?),
            MidPage::Cut => {
                let third = body.find("\"w-4\"").expect("the fourth worker");
                write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                )?;
                s.write_all(&body.as_bytes()[..third])?;
                s.flush()
            }
        }
    }))
}

/// The workers the output holds whole, by id, in order.
fn ids_in(stdout: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l
                .strip_prefix("\"worker\": \"")
                .or_else(|| l.split_once("\"worker\":\"").map(|(_, r)| r))?;
            Some(rest.split('"').next()?.to_string())
        })
        .collect()
}

fn mid_page_case(how: MidPage, output: &str, code: i32, said: &str) {
    let hub = mid_page_hub(how);
    let r = run_for(
        &hub.url,
        &["get", "workers", "-o", output],
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.code, Some(code), "{how:?} -o {output}: {err}");
    assert!(
        err.contains(said),
        "{how:?} -o {output} said:\n{err}\nnot: {said}"
    );
    // The three workers before the break were streamed out, whole.
    assert_eq!(
        ids_in(&r.stdout),
        ["w-1", "w-2", "w-3"],
        "{how:?} -o {output} wrote:\n{}",
        String::from_utf8_lossy(&r.stdout)
    );
    if output == "json" {
        // A document without its end: no reader takes it for the fleet.
        assert!(
            serde_json::from_slice::<Value>(&r.stdout).is_err(),
            "{how:?}: a page cut short printed a whole JSON document"
        );
    } else {
        for l in String::from_utf8_lossy(&r.stdout).lines() {
            serde_json::from_str::<Value>(l).expect("each line a whole worker");
        }
    }
}

#[test]
fn a_workers_body_cut_mid_page_ends_streamed_json_unfinished_and_fails() {
    // The sentence and exit code a cut body always had.
    let said = "could not read the hub's answer: the answer of";
    mid_page_case(MidPage::Cut, "json", 1, said);
    mid_page_case(MidPage::Cut, "jsonl", 1, said);
}

#[test]
fn a_worker_out_of_bounds_mid_page_ends_streamed_json_unfinished_and_fails() {
    let said = "broke a bound of the API on GET /v1/workers: a worker id is over 128 bytes";
    mid_page_case(MidPage::OutOfBounds, "json", 1, said);
    mid_page_case(MidPage::OutOfBounds, "jsonl", 1, said);
}

/// A hub may send the page's own fields after its list (the reference hub
/// never does): `-o json` is still the page as `write_json` writes it.
#[test]
fn page_fields_after_the_list_still_print_the_same_document() {
    let hub = stand_in(Arc::new(move |req: &Req, s: &mut TcpStream| {
        if req.path != "/v1/workers" {
            return answer(s, "404 Not Found", "application/json", "", b"{}");
        }
        let now = "2026-11-29T15:04:05Z";
        let workers: Vec<String> = (1..=3)
            .map(|i| worker_json(&format!("w-{i}"), now).to_string())
            .collect();
        let body = format!(
            "{{\"workers\": [{}], \"now\": \"{now}\", \"config_revision\": \"r1\", \
             \"heartbeat_interval_s\": 10, \"cursor\": \"c1-3\", \"delta\": false}}",
            workers.join(",")
        );
        answer(s, "200 OK", "application/json", "", body.as_bytes())
    }));
    let r = run_for(
        &hub.url,
        &["get", "workers", "-o", "json"],
        Duration::from_secs(30),
    );
    assert_eq!(r.code, Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    let now = "2026-11-29T15:04:05Z";
    let page: macfleet::wire::WorkersPage = serde_json::from_value(json!({
        "now": now, "config_revision": "r1", "heartbeat_interval_s": 10, "cursor": "c1-3",
        "delta": false,
        "workers": (1..=3).map(|i| worker_json(&format!("w-{i}"), now)).collect::<Vec<_>>()
    }))
    .expect("a page");
    let mut want = Vec::new();
    macfleet::cli::get::out::write_json(&mut want, &page).expect("json");
    assert_eq!(
        String::from_utf8_lossy(&r.stdout),
        String::from_utf8_lossy(&want)
    );
}

/// A large page is read while it is written, so it may take longer than the
/// 30 s a request is given: a hub that sends its page slowly but steadily
/// (a worker every 8 s, 34 s in all) is read to the end.
#[test]
fn a_page_that_takes_longer_than_a_request_is_still_streamed_whole() {
    let hub = stand_in(Arc::new(move |req: &Req, s: &mut TcpStream| {
        if req.path != "/v1/workers" {
            return answer(s, "404 Not Found", "application/json", "", b"{}");
        }
        let now = now();
        write!(
            s,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )?;
        let head = format!(
            "{{\"now\":\"{now}\",\"config_revision\":\"r1\",\"heartbeat_interval_s\":10,\"cursor\":\"c1-4\",\"delta\":false,\"workers\":["
        );
        chunk(s, head.as_bytes())?;
        for i in 1..=4 {
            std::thread::sleep(Duration::from_secs(8));
            let sep = if i > 1 { "," } else { "" };
            chunk(
                s,
                format!("{sep}{}", worker_json(&format!("w-{i}"), &now)).as_bytes(),
            )?;
            s.flush()?;
        }
        std::thread::sleep(Duration::from_secs(2));
        chunk(s, b"]}")?;
        s.write_all(b"0\r\n\r\n")?;
        s.flush()
    }));
    let r = run_for(
        &hub.url,
        &["get", "workers", "-o", "jsonl"],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, Some(0), "{}", String::from_utf8_lossy(&r.stderr));
    assert_eq!(ids_in(&r.stdout), ["w-1", "w-2", "w-3", "w-4"]);
}
