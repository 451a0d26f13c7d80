//! A stand-in proxy (tokio TCP on 127.0.0.1) in front of a real hub that
//! forwards every request and drops the answer of the first one whose
//! request line starts so (`PUT /v1/config` by default): the hub has
//! written, the client never hears it (issue 27, a write whose answer was
//! lost). Used by the CLI's (lost_answer, rollout) and the TUI's tests.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy has done, shared with its connections.
#[derive(Default)]
pub struct State {
    /// The answer of the first `PUT /v1/config` has been dropped.
    pub dropped: AtomicBool,
    /// After the drop, forward nothing more (the hub is gone).
    gone_after_drop: bool,
    gone: AtomicBool,
    pub told: tokio::sync::Notify,
    /// The request line whose answer is dropped starts so.
    dropping: &'static [u8],
}

/// Start the proxy in front of `upstream`; its address.
pub async fn proxy(upstream: SocketAddr, gone_after_drop: bool) -> (SocketAddr, Arc<State>) {
    proxy_dropping(upstream, gone_after_drop, b"PUT /v1/config").await
}

/// The proxy, dropping the first answer to a request whose line starts
/// with `dropping` (`b"POST /v1/rollouts"`: tests/cli/rollout.rs).
pub async fn proxy_dropping(
    upstream: SocketAddr,
    gone_after_drop: bool,
    dropping: &'static [u8],
) -> (SocketAddr, Arc<State>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let state = Arc::new(State {
        gone_after_drop,
        dropping,
        ..State::default()
    });
    let s = state.clone();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::spawn(connection(client, upstream, s.clone()));
        }
    });
    (addr, state)
}

/// One client connection, piped to a connection of its own to the hub.
/// The answer that follows the first `PUT /v1/config` is read from the hub
/// (so the hub has answered: the write is done) and never passed on; the
/// client's connection is closed instead.
async fn connection(client: TcpStream, upstream: SocketAddr, state: Arc<State>) {
    if state.gone.load(Ordering::SeqCst) {
        return;
    }
    let Ok(up) = TcpStream::connect(upstream).await else {
        return;
    };
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = up.into_split();
    let put_sent = AtomicBool::new(false);
    let to_hub = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match cr.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if state.gone.load(Ordering::SeqCst) {
                return;
            }
            if buf[..n].starts_with(state.dropping) && !state.dropped.load(Ordering::SeqCst) {
                put_sent.store(true, Ordering::SeqCst);
            }
            if uw.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    let to_client = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match ur.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            if put_sent.load(Ordering::SeqCst) && !state.dropped.swap(true, Ordering::SeqCst) {
                if state.gone_after_drop {
                    state.gone.store(true, Ordering::SeqCst);
                }
                state.told.notify_one();
                return;
            }
            if cw.write_all(&buf[..n]).await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        () = to_hub => {}
        () = to_client => {}
    }
}

/// The socket address of a hub's `http://127.0.0.1:port` URL.
pub fn addr_of(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("a loopback address")
}
