//! The hub's own accept loop, in place of `axum::serve`, so that one slow or
//! hostile client cannot hold the hub (issue #10 item 2):
//!
//! - a request head must arrive whole within [`Limits::header_timeout`]; the
//!   same clock closes a keep-alive connection that sends nothing (hyper
//!   starts it whenever the connection waits for a head);
//! - a request body must arrive within [`Limits::body_timeout`] (the
//!   handlers' `read_body`);
//! - at most [`Limits::max_connections`] connections are open, kept below the
//!   process's descriptor limit; a new one past the cap evicts the connection
//!   that has been idle longest (no request in progress: a slow head, an idle
//!   keep-alive), and is turned away with a 503 only when every connection is
//!   busy;
//! - `accept` failing for want of descriptors (`EMFILE`, `ENFILE`) evicts an
//!   idle connection and carries on; it never ends the loop;
//! - the answers hyper writes itself, before any handler sees the request
//!   (400 for a request it cannot parse, 431 for a head over 64 KiB or
//!   more than 100 headers, and 414 for a target over 65,534 bytes, which
//!   the head limit makes 431 first), get the JSON error body every other
//!   answer has ([`JsonErrors`]). Targets over 8 KiB inside the head limit
//!   are the router's 414 (`api::MAX_TARGET`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

/// How long and how many: the connection-level bounds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Most connections open at once (further kept below the descriptor
    /// limit, see [`Limits::effective_max_connections`]).
    pub max_connections: usize,
    /// Time to send a whole request head (and the TLS handshake), and the
    /// longest a keep-alive connection may sit idle.
    pub header_timeout: Duration,
    /// Time to send a whole request body.
    pub body_timeout: Duration,
    /// Longest an answer may wait on a client that does not read it (a
    /// stalled event stream, a page nobody takes); then the connection is
    /// closed. Above the event stream's keep-alive interval, which wakes an
    /// idle stream.
    pub stall_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 16_384,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            stall_timeout: Duration::from_secs(60),
        }
    }
}

/// The largest request head (request line and headers) read: past it,
/// 431 `headers_too_large`.
const MAX_HEAD: usize = 64 * 1024;

/// Descriptors kept free for everything but client connections: the
/// database and its WAL, the config's temporary file, the listener, logs.
const FD_RESERVE: u64 = 64;

/// The soft limit on open descriptors, when the platform says.
pub fn fd_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own and nothing else.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) };
    // rlim_t is u64 here, but not on every platform.
    #[allow(clippy::unnecessary_cast)]
    let cur = lim.rlim_cur as u64;
    (rc == 0 && lim.rlim_cur != libc::RLIM_INFINITY).then_some(cur)
}

/// Raise the soft descriptor limit to the hard one (what servers usually
/// do at start); returns the soft limit in force afterwards.
pub fn raise_fd_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: as above; setrlimit reads the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let want = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &want) != 0 {
                tracing::debug!("could not raise the descriptor limit");
            }
        }
    }
    fd_limit()
}

impl Limits {
    /// The cap in force: the configured one, lowered to leave
    /// [`FD_RESERVE`] descriptors free under the process's limit.
    pub fn effective_max_connections(&self) -> usize {
        let by_fds = fd_limit().map_or(u64::MAX, |n| n.saturating_sub(FD_RESERVE).max(8));
        self.max_connections
            .min(usize::try_from(by_fds).unwrap_or(usize::MAX))
            .max(1)
    }
}

/// One open connection, as the accept loop sees it.
struct ConnState {
    /// Requests in progress (a streamed answer counts until it ends).
    busy: AtomicUsize,
    /// When the connection last went idle, in ms since the loop started.
    idle_since: AtomicU64,
    /// When the answer's body was last asked for more, in ms since the loop
    /// started, plus one; 0 while no answer is being sent.
    polled: AtomicU64,
    /// Told to close (evicted).
    kill: Notify,
}

/// Every open connection, for the cap and for eviction.
struct Registry {
    start: Instant,
    next_id: AtomicU64,
    conns: Mutex<HashMap<u64, Arc<ConnState>>>,
    /// Connections evicted and turned away, for the log and the tests.
    evicted: AtomicU64,
    refused: AtomicU64,
    stalled: AtomicU64,
    /// Notified when the last connection closes.
    empty: Notify,
}

impl Registry {
    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64
    }

    fn len(&self) -> usize {
        self.conns.lock().map_or(0, |c| c.len())
    }

    fn add(&self) -> (u64, Arc<ConnState>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let st = Arc::new(ConnState {
            busy: AtomicUsize::new(0),
            idle_since: AtomicU64::new(self.now_ms()),
            polled: AtomicU64::new(0),
            kill: Notify::new(),
        });
        if let Ok(mut c) = self.conns.lock() {
            c.insert(id, st.clone());
        }
        (id, st)
    }

    fn remove(&self, id: u64) {
        if let Ok(mut c) = self.conns.lock() {
            c.remove(&id);
            if c.is_empty() {
                self.empty.notify_waiters();
            }
        }
    }

    /// Close every connection whose answer has not been read for `stall`.
    fn close_stalled(&self, stall: Duration) -> usize {
        let now = self.now_ms() + 1;
        let stall = stall.as_millis() as u64;
        let Ok(mut conns) = self.conns.lock() else {
            return 0;
        };
        let before = conns.len();
        conns.retain(|_, c| {
            let polled = c.polled.load(Ordering::Relaxed);
            let stalled = polled != 0 && now.saturating_sub(polled) > stall;
            if stalled {
                c.kill.notify_one();
            }
            !stalled
        });
        let n = before - conns.len();
        self.stalled.fetch_add(n as u64, Ordering::Relaxed);
        if conns.is_empty() && n > 0 {
            self.empty.notify_waiters();
        }
        n
    }

    /// Close the connection idle the longest; false when all are busy.
    fn evict_idlest(&self) -> bool {
        let Ok(mut conns) = self.conns.lock() else {
            return false;
        };
        let victim = conns
            .iter()
            .filter(|(_, c)| c.busy.load(Ordering::Acquire) == 0)
            .min_by_key(|(_, c)| c.idle_since.load(Ordering::Relaxed))
            .map(|(id, _)| *id);
        match victim.and_then(|id| conns.remove(&id)) {
            Some(c) => {
                // A stored permit: the task closes even if it is not yet
                // waiting.
                c.kill.notify_one();
                self.evicted.fetch_add(1, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }
}

/// A request in progress on a connection; dropped when its answer's body is
/// done (or dropped).
struct Busy {
    conn: Arc<ConnState>,
    reg: Arc<Registry>,
}

impl Busy {
    fn new(conn: Arc<ConnState>, reg: Arc<Registry>) -> Busy {
        conn.busy.fetch_add(1, Ordering::AcqRel);
        Busy { conn, reg }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.conn.polled.store(0, Ordering::Relaxed);
        self.conn
            .idle_since
            .store(self.reg.now_ms(), Ordering::Relaxed);
        self.conn.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// An answer's body that keeps its connection marked busy until it ends,
/// and notes when the connection last asked it for more.
struct Tracked {
    inner: Body,
    busy: Busy,
}

impl Tracked {
    fn new(inner: Body, busy: Busy) -> Tracked {
        let t = Tracked { inner, busy };
        t.touch();
        t
    }

    fn touch(&self) {
        let now = self.busy.reg.now_ms() + 1;
        self.busy.conn.polled.store(now, Ordering::Relaxed);
    }
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        self.touch();
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// What the loop answers a connection it has no room for, before closing.
const FULL_BODY: &str = "{\"error\":{\"code\":\"overloaded\",\"message\":\"the hub has no room for another connection\"}}\n";

/// Refusals in progress at once; past it a connection is simply closed.
const REFUSING: usize = 64;

/// Answer a connection the hub has no room for: read its request head
/// (briefly: an HTTP client takes an answer sent before its request as a
/// broken connection), send the 503, close. Bounded in number and time, so
/// refusing cannot itself hold the hub.
fn refuse(mut stream: tokio::net::TcpStream, refusing: &Arc<tokio::sync::Semaphore>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(permit) = refusing.clone().try_acquire_owned() else {
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        let _ = tokio::time::timeout(Duration::from_millis(500), async {
            let mut head = Vec::with_capacity(1024);
            let mut buf = [0u8; 1024];
            while head.len() < 8192 && !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let _ = stream.write_all(full_response().as_bytes()).await;
            let _ = stream.shutdown().await;
        })
        .await;
    });
}

fn full_response() -> String {
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{FULL_BODY}",
        FULL_BODY.len()
    )
}

/// The JSON error body for an answer hyper writes by itself: the request
/// never reached a handler, so no handler could give it one.
fn http_layer_error(status: u16) -> Option<(&'static str, &'static str)> {
    match status {
        400 => Some(("bad_request", "the request is not valid HTTP/1.1")),
        414 => Some(("uri_too_long", "the request target is too long")),
        431 => Some((
            "headers_too_large",
            "the request head is over 64 KiB or has more than 100 headers",
        )),
        _ => None,
    }
}

/// hyper's own answer to a request it could not parse, given the JSON error
/// body. hyper writes exactly `HTTP/1.x <400|414|431> <reason>` with
/// `connection: close`, `content-length: 0` and `date`, alone in one write,
/// and then closes; `None` for anything else, which passes untouched.
fn with_json_body(head: &[u8]) -> Option<Vec<u8>> {
    // hyper's answer is about 110 bytes; anything longer (an answer's body
    // flushed after its handler finished) is passed on without a look.
    if head.len() > 256 || !head.starts_with(b"HTTP/1.") {
        return None;
    }
    let text = std::str::from_utf8(head).ok()?;
    let text = text.strip_suffix("\r\n\r\n")?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next()?;
    let rest = status_line
        .strip_prefix("HTTP/1.1 ")
        .or_else(|| status_line.strip_prefix("HTTP/1.0 "))?;
    let (code, message) = http_layer_error(rest.get(..3)?.parse().ok()?)?;
    let mut headers = Vec::new();
    let mut empty_body = false;
    for line in lines {
        let (name, value) = line.split_once(": ")?;
        match name.to_ascii_lowercase().as_str() {
            "content-length" if value == "0" => empty_body = true,
            "connection" | "date" => headers.push(line),
            _ => return None,
        }
    }
    if !empty_body {
        return None;
    }
    let body = serde_json::json!({"error": {"code": code, "message": message}}).to_string();
    let mut out = format!(
        "{status_line}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for h in headers {
        out.push_str(h);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.push_str(&body);
    Some(out.into_bytes())
}

/// A connection's I/O that gives hyper's own 400/414/431 answers the JSON
/// error body ([`with_json_body`]). Only a write made while no request is
/// in progress on the connection is looked at (hyper's answer to a request
/// it could not parse is the only answer written then), so no handler's
/// answer is ever touched. The rewritten answer is written out before any
/// flush or shutdown completes.
struct JsonErrors<I> {
    inner: I,
    conn: Arc<ConnState>,
    /// A rewritten answer, and how much of it is written.
    pending: Vec<u8>,
    written: usize,
}

impl<I: AsyncWrite + Unpin> JsonErrors<I> {
    fn new(inner: I, conn: Arc<ConnState>) -> Self {
        JsonErrors {
            inner,
            conn,
            pending: Vec::new(),
            written: 0,
        }
    }

    /// Write out what is pending.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while self.written < self.pending.len() {
            let n = std::task::ready!(
                Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.written..])
            )?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.pending.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }

    /// Take `buf` as a rewritten answer when it is hyper's own; the caller
    /// then reports it written whole.
    fn rewrite(
        &mut self,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Option<Poll<std::io::Result<usize>>> {
        if self.conn.busy.load(Ordering::Acquire) != 0 {
            return None;
        }
        self.pending = with_json_body(buf)?;
        self.written = 0;
        Some(match self.drain(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            // Pending: the rest goes out on the flush that follows.
            _ => Poll::Ready(Ok(buf.len())),
        })
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for JsonErrors<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for JsonErrors<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        std::task::ready!(self.drain(cx))?;
        if let Some(r) = self.rewrite(cx, buf) {
            return r;
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        std::task::ready!(self.drain(cx))?;
        let mut nonempty = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(only), None) = (nonempty.next(), nonempty.next()) {
            if let Some(r) = self.rewrite(cx, only) {
                return r;
            }
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        std::task::ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        std::task::ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Counters of the loop, for tests and the log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnStats {
    pub open: usize,
    pub evicted: u64,
    pub refused: u64,
    /// Closed because their answer went unread for the stall timeout.
    pub stalled: u64,
}

/// A handle on a running accept loop's counters.
#[derive(Clone)]
pub struct Stats(Arc<Registry>);

impl Stats {
    pub fn get(&self) -> ConnStats {
        ConnStats {
            open: self.0.len(),
            evicted: self.0.evicted.load(Ordering::Relaxed),
            refused: self.0.refused.load(Ordering::Relaxed),
            stalled: self.0.stalled.load(Ordering::Relaxed),
        }
    }
}

/// Serve `app` on `listener` until `shutdown` turns true; then stop
/// accepting, ask every connection to finish its request and close, and
/// wait for them (at most `drain`).
pub fn spawn(
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    app: Router,
    limits: Limits,
    mut shutdown: watch::Receiver<bool>,
    drain: Duration,
) -> (Stats, tokio::task::JoinHandle<()>) {
    let reg = Arc::new(Registry {
        start: Instant::now(),
        next_id: AtomicU64::new(0),
        conns: Mutex::new(HashMap::new()),
        evicted: AtomicU64::new(0),
        refused: AtomicU64::new(0),
        stalled: AtomicU64::new(0),
        empty: Notify::new(),
    });
    let stats = Stats(reg.clone());
    let cap = limits.effective_max_connections();
    tracing::debug!(cap, "connection cap");
    let task = tokio::spawn(async move {
        let refusing = Arc::new(tokio::sync::Semaphore::new(REFUSING));
        let mut last_warn: Option<Instant> = None;
        let mut sweep = tokio::time::interval(Duration::from_millis(500));
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut warn = |what: &str, e: &std::io::Error| {
            if last_warn.is_none_or(|t| t.elapsed() >= Duration::from_secs(1)) {
                tracing::warn!(error = %e, "{what}");
                last_warn = Some(Instant::now());
            }
        };
        loop {
            let accepted = tokio::select! {
                r = listener.accept() => r,
                _ = shutdown.wait_for(|s| *s) => break,
                _ = sweep.tick() => {
                    let n = reg.close_stalled(limits.stall_timeout);
                    if n > 0 {
                        tracing::info!(closed = n, "closed connections whose answers went unread");
                    }
                    continue;
                }
            };
            let (stream, peer) = match accepted {
                Ok(c) => c,
                Err(e) => {
                    let out_of_fds = matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
                    if out_of_fds {
                        warn(
                            "accept: out of descriptors; evicting an idle connection",
                            &e,
                        );
                        reg.evict_idlest();
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    } else {
                        warn("accept failed", &e);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    continue;
                }
            };
            if reg.len() >= cap && !reg.evict_idlest() {
                reg.refused.fetch_add(1, Ordering::Relaxed);
                refuse(stream, &refusing);
                continue;
            }
            let _ = stream.set_nodelay(true);
            let (id, conn) = reg.add();
            let ctx = ConnCtx {
                reg: reg.clone(),
                conn,
                app: app.clone(),
                limits,
                shutdown: shutdown.clone(),
            };
            let tls = tls.clone();
            tokio::spawn(async move {
                let reg = ctx.reg.clone();
                match tls {
                    None => ctx.serve(stream).await,
                    Some(acceptor) => {
                        let hs = tokio::select! {
                            r = tokio::time::timeout(limits.header_timeout, acceptor.accept(stream)) => r,
                            () = ctx.conn.kill.notified() => { reg.remove(id); return; }
                        };
                        match hs {
                            Ok(Ok(tls)) => ctx.serve(tls).await,
                            Ok(Err(e)) => {
                                tracing::debug!(%peer, error = %e, "TLS handshake failed")
                            }
                            Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                        }
                    }
                }
                reg.remove(id);
            });
        }
        drop(listener);
        // Every connection saw the same shutdown signal; wait for them.
        let _ = tokio::time::timeout(drain, async {
            loop {
                let empty = reg.empty.notified();
                if reg.len() == 0 {
                    return;
                }
                empty.await;
            }
        })
        .await;
    });
    (stats, task)
}

struct ConnCtx {
    reg: Arc<Registry>,
    conn: Arc<ConnState>,
    app: Router,
    limits: Limits,
    shutdown: watch::Receiver<bool>,
}

impl ConnCtx {
    async fn serve<I>(mut self, io: I)
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let svc = TowerToHyperService::new(self.app.clone());
        let (conn, reg) = (self.conn.clone(), self.reg.clone());
        let svc = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let busy = Busy::new(conn.clone(), reg.clone());
            let fut = hyper::service::Service::call(&svc, req);
            async move {
                let resp = match fut.await {
                    Ok(r) => r,
                    Err(never) => match never {},
                };
                Ok::<_, Infallible>(resp.map(|inner| Body::new(Tracked::new(inner, busy))))
            }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.limits.header_timeout)
            .max_buf_size(MAX_HEAD)
            .max_header_size(MAX_HEAD);
        let io = JsonErrors::new(io, self.conn.clone());
        let c = builder.serve_connection(TokioIo::new(io), svc);
        tokio::pin!(c);
        tokio::select! {
            r = c.as_mut() => {
                if let Err(e) = r {
                    tracing::debug!(error = %e, "connection ended");
                }
                return;
            }
            () = self.conn.kill.notified() => return,
            _ = self.shutdown.wait_for(|s| *s) => {}
        }
        // Shutting down: finish the request in progress, then close.
        c.as_mut().graceful_shutdown();
        tokio::select! {
            _ = c.as_mut() => {}
            () = self.conn.kill.notified() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATE: &str = "date: Mon, 30 Nov 2026 13:25:03 GMT";

    fn hyper_head(status: &str) -> String {
        format!("HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: 0\r\n{DATE}\r\n\r\n")
    }

    #[test]
    fn hypers_own_answers_get_the_json_body() {
        for (status, code) in [
            ("400 Bad Request", "bad_request"),
            ("414 URI Too Long", "uri_too_long"),
            ("431 Request Header Fields Too Large", "headers_too_large"),
        ] {
            let out = with_json_body(hyper_head(status).as_bytes()).expect(status);
            let out = String::from_utf8(out).expect("utf-8");
            let (head, body) = out.split_once("\r\n\r\n").expect("a head");
            assert!(
                head.starts_with(&format!("HTTP/1.1 {status}\r\n")),
                "{head}"
            );
            assert!(head.contains("\r\ncontent-type: application/json\r\n"));
            assert!(head.contains(&format!("\r\ncontent-length: {}\r\n", body.len())));
            assert!(head.contains("\r\nconnection: close\r\n") && head.contains(DATE));
            let v: serde_json::Value = serde_json::from_str(body).expect("json");
            assert_eq!(v["error"]["code"], code);
        }
    }

    #[test]
    fn every_other_write_passes_untouched() {
        let json_404 =
            "HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n";
        let with_body = format!("{}{{}}", hyper_head("400 Bad Request"));
        let tail_then_head = format!("ok{}", hyper_head("400 Bad Request"));
        let other_header = "HTTP/1.1 400 Bad Request\r\nx-a: b\r\ncontent-length: 0\r\n\r\n";
        let not_empty = "HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 2\r\n\r\n";
        let padded = hyper_head(&format!("400 Bad Request\r\nx-pad: {}", "p".repeat(300)));
        for w in [
            hyper_head("200 OK"),
            hyper_head("413 Payload Too Large"),
            hyper_head("503 Service Unavailable"),
            json_404.to_string(),
            with_body,
            tail_then_head,
            other_header.to_string(),
            not_empty.to_string(),
            padded,
            "HTTP/1.1 400".to_string(),
            String::new(),
        ] {
            assert_eq!(with_json_body(w.as_bytes()), None, "{w:?}");
        }
        assert_eq!(with_json_body(&[0xff, 0xfe]), None);
    }
}
