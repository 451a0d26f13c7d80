//! A write whose answer was lost (issue 27): `macfleet agents …` against a
//! real hub process behind a stand-in proxy (tokio TCP on 127.0.0.1) that
//! forwards the `PUT` and drops its answer. The CLI checks before it
//! reports: the write found on the hub is exit 0 and says so; with the hub
//! gone after the drop it cannot check, and says that, exit 5.

use crate::common::{self, HubProcess, macfleet, text};

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the proxy has done, shared with its connections.
#[derive(Default)]
pub(crate) struct State {
    /// The answer of the first `PUT /v1/config` has been dropped.
    pub(crate) dropped: AtomicBool,
    /// After the drop, forward nothing more (the hub is gone).
    gone_after_drop: bool,
    gone: AtomicBool,
    pub(crate) told: tokio::sync::Notify,
    /// The request line whose answer is dropped starts so.
    dropping: &'static [u8],
}

/// Start the proxy in front of `upstream`; its address.
async fn proxy(upstream: SocketAddr, gone_after_drop: bool) -> (SocketAddr, Arc<State>) {
    proxy_dropping(upstream, gone_after_drop, b"PUT /v1/config").await
}

/// The proxy, dropping the first answer to a request whose line starts
/// with `dropping` (`b"POST /v1/rollouts"`: tests/cli/rollout.rs).
pub(crate) async fn proxy_dropping(
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

async fn history_len(url: &str, token: &str) -> usize {
    let client = macfleet::client::Client::new(
        url,
        Some(macfleet::client::Token::new(token)),
        macfleet::client::ClientOptions::default(),
    )
    .expect("client");
    client.history().await.expect("history").revisions.len()
}

pub(crate) fn addr_of(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("a loopback address")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_whose_answer_is_dropped_is_checked_and_found_on_the_hub() {
    let (dir, owner, _viewer, _worker) = common::hub_dir();
    let hub = HubProcess::spawn(dir.path(), common::Spawn::default());
    let before = history_len(&hub.url, &owner).await;
    let (addr, state) = proxy(addr_of(&hub.url), false).await;
    let via = format!("http://{addr}");
    let out = tokio::task::spawn_blocking({
        let (via, owner) = (via.clone(), owner.clone());
        move || {
            macfleet(
                &["agents", "move", "claude", "0"],
                &[("MAC_HUB_URL", &via), ("MAC_HUB_TOKEN", &owner)],
            )
        }
    })
    .await
    .expect("join");
    let err = text(&out.stderr);
    assert!(
        state.dropped.load(Ordering::SeqCst),
        "the answer was dropped"
    );
    assert_eq!(out.status.code(), Some(0), "{err}");
    let now = macfleet::client::Client::new(
        &hub.url,
        Some(macfleet::client::Token::new(&owner)),
        macfleet::client::ClientOptions::default(),
    )
    .expect("client")
    .config()
    .await
    .expect("config");
    assert!(
        err.contains("may not have been written: the answer was lost"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "checked: your write {} is on the hub",
            now.revision
        )),
        "{err}"
    );
    assert!(
        text(&out.stdout).starts_with("--- a/hub.toml"),
        "the diff of what was written: {}",
        text(&out.stdout)
    );
    assert_eq!(
        history_len(&hub.url, &owner).await,
        before + 1,
        "written once"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_whose_answer_is_dropped_with_the_hub_gone_exits_5_saying_it_may_be_on_the_hub() {
    let (dir, owner, _viewer, _worker) = common::hub_dir();
    let hub = HubProcess::spawn(dir.path(), common::Spawn::default());
    let (addr, state) = proxy(addr_of(&hub.url), true).await;
    let via = format!("http://{addr}");
    let run = tokio::task::spawn_blocking({
        let (via, owner) = (via.clone(), owner.clone());
        move || {
            macfleet(
                &["agents", "move", "claude", "0"],
                &[("MAC_HUB_URL", &via), ("MAC_HUB_TOKEN", &owner)],
            )
        }
    });
    tokio::time::timeout(Duration::from_secs(30), state.told.notified())
        .await
        .expect("the PUT reached the proxy");
    drop(hub);
    let t0 = std::time::Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the CLI ends")
        .expect("join");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains("may not have been written: the answer was lost"),
        "{err}"
    );
    assert!(
        err.contains("could not be asked whether it landed")
            && err.contains("it may be on the hub"),
        "{err}"
    );
    assert!(
        !err.contains("not written:"),
        "never said not written: {err}"
    );
    assert_eq!(
        text(&out.stdout),
        "",
        "nothing on stdout: {}",
        text(&out.stdout)
    );
    eprintln!("checked for {:?} before exit 5", t0.elapsed());
}
