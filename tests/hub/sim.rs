//! The simulator against the real hub: the fleet shows up, reports
//! structured failovers, walks its list rung by rung to no route, and
//! follows an owner's reorder within an interval.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{TestHub, eventually};
use macfleet::client::{FailoverQuery, Writer};
use macfleet::sim::{Scenario, SimOptions, SimStats, Start};

const FLEET: &str = "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"pi\", \"claude\"]\n";

fn aug19() -> Scenario {
    Scenario::load("aug19").expect("scenario")
}

pub(crate) type SimTask = tokio::task::JoinHandle<color_eyre::eyre::Result<()>>;

/// Run a simulated fleet against `h` (for at most 60 s) until the sender
/// is used or dropped.
pub(crate) fn spawn_sim(
    h: &TestHub,
    mut opts: SimOptions,
) -> (Arc<SimStats>, tokio::sync::oneshot::Sender<()>, SimTask) {
    let stats = Arc::new(SimStats::default());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    opts.duration = Some(Duration::from_secs(60));
    let sim = tokio::spawn(macfleet::sim::run(
        h.client(&h.worker),
        opts,
        stats.clone(),
        async {
            let _ = stop_rx.await;
        },
    ));
    (stats, stop_tx, sim)
}

#[tokio::test]
async fn fleet_heartbeats_and_follows_a_reorder() {
    let h = TestHub::start_with(FLEET, |_| {}).await;
    let viewer = h.client(&h.viewer);
    let (stats, stop_tx, sim) = spawn_sim(&h, SimOptions::new(30, aug19()));
    let page = eventually(600, || async {
        let p = viewer.workers(None).await.ok()?;
        (p.workers.len() == 30 && p.workers.iter().all(|w| w.in_sync)).then_some(p)
    })
    .await
    .expect("all 30 workers heartbeat and sync");
    // Every worker stands on the first rung it can run.
    for w in &page.workers {
        let first_capable = w
            .agents
            .iter()
            .find(|a| w.capabilities.get(*a).is_some_and(|c| c.capable()));
        assert_eq!(w.active_agent.as_ref(), first_capable, "{}", w.worker);
    }
    // The owner puts claude first: within a few intervals the fleet follows.
    let owner = h.client(&h.owner);
    let doc = owner.config().await.expect("config");
    let who = owner.whoami().await.expect("who");
    let reordered = "[fleet]\nMAC_CODING_AGENTS = [\"claude\", \"opencode\", \"pi\"]\n";
    let accepted = Writer::new(owner, &who)
        .expect("writer")
        .put_config(reordered, &doc.revision)
        .await
        .expect("put");
    let moved = eventually(600, || async {
        let p = viewer.workers(None).await.ok()?;
        p.workers
            .iter()
            .all(|w| {
                w.config_revision.as_deref() == Some(accepted.revision.as_str())
                    && w.agents == ["claude", "opencode", "pi"]
                    && (w.active_agent.as_deref() == Some("claude")
                        || !w.capabilities.get("claude").is_some_and(|c| c.capable()))
            })
            .then_some(p)
    })
    .await;
    assert!(moved.is_some(), "the fleet follows the new order");
    let _ = stop_tx.send(());
    sim.await.expect("sim task").expect("sim ran");
    assert!(stats.ok.load(std::sync::atomic::Ordering::Relaxed) >= 60);
    assert_eq!(stats.failed.load(std::sync::atomic::Ordering::Relaxed), 0);
    // The log holds only structured failovers (none yet at this point of
    // aug19, whose outage starts at 30 s), and the query works.
    let log = viewer
        .failovers(&FailoverQuery::default())
        .await
        .expect("log");
    assert!(log.events.iter().all(|e| e.worker.starts_with("w-")));
}

/// aug19 from just before its outage: every worker fails closed, and for
/// every rung of its list the log holds the structured failover away from
/// it, the walk ending in `to: null`.
#[tokio::test]
async fn aug19_no_route_workers_have_a_failover_away_from_every_rung() {
    const LIST: [&str; 4] = ["opencode", "pi", "claude", "cursor"];
    let h = TestHub::start_with(
        "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"pi\", \"claude\", \"cursor\"]\n",
        |_| {},
    )
    .await;
    let viewer = h.client(&h.viewer);
    let mut opts = SimOptions::new(40, aug19());
    // The outage runs from 30 s to 90 s of the cycle: start a second
    // before it.
    opts.start = Start::At(29);
    let (stats, stop_tx, sim) = spawn_sim(&h, opts);
    let page = eventually(400, || async {
        let p = viewer.workers(None).await.ok()?;
        (p.workers.len() == 40 && p.workers.iter().all(|w| w.active_agent.is_none())).then_some(p)
    })
    .await
    .expect("all 40 workers fail closed in the outage");
    let mut missing_cursor = 0;
    for w in &page.workers {
        assert_eq!(w.agents, LIST);
        let log = viewer
            .failovers(&FailoverQuery {
                worker: Some(w.worker.clone()),
                limit: Some(1000),
                ..FailoverQuery::default()
            })
            .await
            .expect("the worker's failovers");
        assert!(log.events.iter().all(|e| e.worker == w.worker));
        // The walk, rung by rung, in the order the worker took it.
        let walk: Vec<(&str, Option<&str>)> = log
            .events
            .iter()
            .map(|e| (e.failover.from.as_str(), e.failover.to.as_deref()))
            .collect();
        assert_eq!(
            walk,
            [
                ("opencode", Some("pi")),
                ("pi", Some("claude")),
                ("claude", Some("cursor")),
                ("cursor", None)
            ],
            "{}",
            w.worker
        );
        for e in &log.events {
            let cause = &e.failover.cause;
            let cursor_missing = e.failover.from == "cursor"
                && w.capabilities.get("cursor").is_some_and(|c| !c.binary);
            if cursor_missing {
                missing_cursor += 1;
                assert_eq!(cause.kind, macfleet::wire::CauseKind::MissingBinary);
            } else {
                assert_eq!(cause.kind, macfleet::wire::CauseKind::UpstreamStatus);
                assert_eq!(cause.status, Some(503));
            }
        }
        // The view's last failover is the walk's end: no route.
        assert_eq!(
            w.last_failover
                .as_ref()
                .map(|f| (f.from.as_str(), f.to.as_deref())),
            Some(("cursor", None))
        );
    }
    assert!(
        missing_cursor > 0,
        "some host lacks cursor (a worker-side cause on the walk)"
    );
    let _ = stop_tx.send(());
    sim.await.expect("sim task").expect("sim ran");
    assert_eq!(stats.failed.load(std::sync::atomic::Ordering::Relaxed), 0);
}

/// The demo's back-fill (issue 30, pacing): the demo's own settings (a 5 s
/// interval, aug19, 40 workers, the last hour posted before the live
/// start) send each worker up to 20 back-fill heartbeats at once, then
/// the live ones, and not one is refused: the hub's burst
/// (`hub::pacing::BURST`) holds the back-fill whole, so a normal demo never
/// meets `429 heartbeat_too_fast`.
#[tokio::test]
async fn the_demos_backfill_fits_the_burst_and_meets_no_429() {
    const WORKERS: u64 = 40;
    let h = TestHub::start_with(FLEET, |o| o.heartbeat_interval_s = 5).await;
    let mut opts = SimOptions::new(WORKERS as usize, aug19());
    opts.start = Start::FirstEvent;
    opts.backfill = Some(macfleet::sim::Backfill {
        span: Duration::from_secs(3600),
        step: Duration::from_secs(5),
    });
    let (stats, stop_tx, sim) = spawn_sim(&h, opts);
    // The back-fill, then more than one live interval.
    tokio::time::sleep(Duration::from_secs(8)).await;
    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(Duration::from_secs(20), sim).await;
    let sent = stats.sent.load(std::sync::atomic::Ordering::Relaxed);
    let failed = stats.failed.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("{}", stats.summary());
    assert!(
        sent >= WORKERS * macfleet::hub::pacing::BURST / 2,
        "the back-fill sent a burst a worker: {}",
        stats.summary()
    );
    assert_eq!(failed, 0, "none refused: {}", stats.summary());
}
