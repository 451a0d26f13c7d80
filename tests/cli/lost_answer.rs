//! A write whose answer was lost (issue 27): `macfleet agents …` against a
//! real hub process behind a stand-in proxy (tokio TCP on 127.0.0.1) that
//! forwards the `PUT` and drops its answer. The CLI checks before it
//! reports: the write found on the hub is exit 0 and says so; with the hub
//! gone after the drop it cannot check, and says that, exit 5.

use crate::common::proxy::proxy;
// tests/cli/rollout.rs drops a rollout's answer through the same proxy.
pub(crate) use crate::common::proxy::{addr_of, proxy_dropping};
use crate::common::{self, HubProcess, macfleet, text};

use std::sync::atomic::Ordering;
use std::time::Duration;

async fn history_len(url: &str, token: &str) -> usize {
    let client = macfleet::client::Client::new(
        url,
        Some(macfleet::client::Token::new(token)),
        macfleet::client::ClientOptions::default(),
    )
    .expect("client");
    client.history().await.expect("history").revisions.len()
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
