//! `GET /v1/summary` (issue 22) against the real hub: its counts are the
//! TUI's aggregates of a full `/v1/workers` answer at the same cursor,
//! after heartbeats, sweeper moves and a new revision; `urgent` is the
//! full answer's head in the `urgency` order.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::TestHub;
use futures::StreamExt;
use macfleet::client::{Client, HubEvent, StreamItem, Writer};
use macfleet::tui::model::fleet as tui;
use macfleet::tui::panes::workers::{WorkerSort, compare};
use macfleet::wire::{Capability, Heartbeat, Preflight, Summary, WorkerState, WorkersPage};

/// Worker `i`, with capabilities of every kind.
fn heartbeat(i: usize, rev: &str) -> Heartbeat {
    let mut hb = crate::windows::heartbeat(i, rev);
    let cap = |k: usize| Capability {
        binary: k % 5 != 1,
        token: k % 5 != 2,
        preflight: match k % 5 {
            3 => Preflight::Failed,
            4 => Preflight::Unknown,
            _ => Preflight::Ok,
        },
    };
    hb.capabilities.insert("opencode".into(), cap(i));
    hb.capabilities.insert("claude".into(), cap(i / 2));
    if i % 6 == 0 {
        hb.capabilities.insert("pi".into(), cap(i / 3));
    }
    hb
}

/// The summary and a full answer taken at the same point of the fleet.
async fn at_one_point(viewer: &Client) -> (Summary, WorkersPage) {
    for _ in 0..20 {
        let s = viewer.summary().await.expect("summary");
        let full = viewer.workers(None).await.expect("full");
        if s.cursor == full.cursor {
            return (s, full);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the fleet never held still for a summary and a full answer");
}

/// The summary agrees with the TUI's aggregates of `full`.
fn agrees(s: &Summary, full: &WorkersPage) {
    let mut ui = tui::Fleet::default();
    ui.set_revision(&full.config_revision);
    for w in &full.workers {
        ui.upsert(w.clone());
    }
    let a = &ui.agg;
    let counts = |s: &Summary| {
        [
            s.workers,
            s.healthy,
            s.stale,
            s.lost,
            s.no_route,
            s.healthy_no_route,
            s.degraded,
            s.out_of_sync,
            s.one_failure_from_no_route,
            s.headroom_known,
        ]
    };
    let want = [
        a.total,
        a.healthy,
        a.stale,
        a.lost,
        a.no_route,
        a.healthy_no_route,
        a.degraded,
        a.out_of_sync,
        a.one_failure,
        a.headroom_known,
    ]
    .map(|n| n as u64);
    assert_eq!(
        counts(s),
        want,
        "workers healthy stale lost no_route healthy_no_route degraded out_of_sync one_failure headroom_known"
    );
    assert_eq!(s.config_revision, full.config_revision);
    // Agents: every one the TUI counts, in the list's order then by name.
    let mut mine: BTreeMap<String, [u64; 6]> = BTreeMap::new();
    for g in &s.agents {
        mine.insert(
            g.agent.clone(),
            [
                g.capable,
                g.active,
                g.no_binary,
                g.no_token,
                g.preflight_failed,
                g.last_rung,
            ],
        );
    }
    let mut theirs: BTreeMap<String, [u64; 6]> = BTreeMap::new();
    for (name, c) in &a.agents {
        let v = [
            c.capable,
            c.active,
            c.no_binary,
            c.no_token,
            c.preflight_failed,
            c.last_rung,
        ]
        .map(|n| n as u64);
        if v.iter().any(|n| *n > 0) {
            theirs.insert(name.clone(), v);
        }
    }
    mine.retain(|_, v| v.iter().any(|n| *n > 0));
    assert_eq!(mine, theirs, "per agent");
    let names: Vec<&str> = s.agents.iter().map(|g| g.agent.as_str()).collect();
    assert_eq!(
        &names[..2],
        ["opencode", "claude"],
        "the list's order first"
    );
    // Revisions: live workers per reported revision, the most common first.
    let mut revs: BTreeMap<Option<String>, u64> = BTreeMap::new();
    for w in full.workers.iter().filter(|w| w.state != WorkerState::Lost) {
        *revs.entry(w.config_revision.clone()).or_default() += 1;
    }
    let got: BTreeMap<Option<String>, u64> = s
        .revisions
        .iter()
        .map(|r| (r.revision.clone(), r.workers))
        .collect();
    assert_eq!(got, revs, "per revision");
    assert!(s.revisions.windows(2).all(|w| w[0].workers >= w[1].workers));
    // The most urgent: the head of the full answer in the urgency order.
    let mut order: Vec<&tui::Entry> = ui.iter().map(|(_, e)| e).collect();
    order.sort_by(|x, y| compare(WorkerSort::Urgency, x, y));
    let head: Vec<&str> = order.iter().take(20).map(|e| &*e.view.worker).collect();
    let urgent: Vec<&str> = s.urgent.iter().map(|w| w.worker.as_str()).collect();
    assert_eq!(urgent, head, "urgent");
    for w in &s.urgent {
        assert_eq!(full.workers.iter().find(|f| f.worker == w.worker), Some(w));
    }
}

#[tokio::test]
async fn the_summary_is_the_aggregates_of_a_full_answer() {
    let h = TestHub::start().await;
    let worker = h.client(&h.worker);
    let viewer = h.client(&h.viewer);
    let owner = h.client(&h.owner);
    let empty = viewer.summary().await.expect("summary of none");
    assert_eq!((empty.workers, empty.urgent.len()), (0, 0));
    let rev = viewer.config().await.expect("config").revision;
    for i in 0..60 {
        worker.heartbeat(&heartbeat(i, &rev)).await.expect("hb");
    }
    let (s, full) = at_one_point(&viewer).await;
    assert_eq!(s.workers, 60);
    agrees(&s, &full);

    // The sweeper: half the fleet falls silent (interval 1 s) and goes
    // stale; the rest heartbeat, a few of them changing rung.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    for i in 30..60 {
        let mut hb = heartbeat(i, &rev);
        if i % 7 == 0 {
            hb.active_agent = Some("opencode".into());
        }
        worker.heartbeat(&hb).await.expect("hb");
    }
    tokio::time::sleep(Duration::from_millis(2600)).await;
    for i in 30..60 {
        worker.heartbeat(&heartbeat(i, &rev)).await.expect("hb");
    }
    let (s, full) = at_one_point(&viewer).await;
    assert!(s.stale >= 25, "the silent half is stale: {}", s.stale);
    agrees(&s, &full);

    // A new revision: every worker on the old one is out of sync.
    let doc = owner.config().await.expect("config");
    let who = owner.whoami().await.expect("who");
    let writer = Writer::new(owner.clone(), &who).expect("an owner");
    let changed = writer
        .put_config(&format!("{}# again\r\n", doc.text), &doc.revision)
        .await
        .expect("put");
    assert_ne!(changed.revision, rev);
    for i in 50..60 {
        worker
            .heartbeat(&heartbeat(i, &changed.revision))
            .await
            .expect("hb");
    }
    let (s, full) = at_one_point(&viewer).await;
    assert!(s.out_of_sync >= 20, "out of sync: {}", s.out_of_sync);
    agrees(&s, &full);
}

/// The next summary event on `events` within `within`.
async fn next_summary(
    events: &mut (impl futures::Stream<Item = StreamItem> + Unpin),
    within: Duration,
) -> Option<(std::time::Instant, Summary)> {
    let end = tokio::time::Instant::now() + within;
    loop {
        let item = tokio::time::timeout_at(end, events.next()).await.ok()??;
        if let StreamItem::Event {
            event: HubEvent::Summary(s),
            ..
        } = item
        {
            return Some((std::time::Instant::now(), *s));
        }
    }
}

#[tokio::test]
async fn the_summary_event_comes_when_named_at_most_once_a_second_when_changed() {
    let h = TestHub::start_with(common::CONFIG, |o| o.heartbeat_interval_s = 30).await;
    let worker = h.client(&h.worker);
    let viewer = h.client(&h.viewer);
    let rev = viewer.config().await.expect("config").revision;
    let mut named = Box::pin(viewer.events(None, &["summary"]));
    let mut all = Box::pin(viewer.events(None, &[]));
    // Heartbeats all along, the fleet growing: the summary changes often.
    let w2 = worker.clone();
    let r2 = rev.clone();
    let feeder = tokio::spawn(async move {
        for i in 0..120 {
            let _ = w2.heartbeat(&heartbeat(i, &r2)).await;
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
    });
    let mut got = Vec::new();
    while got.len() < 4 {
        match next_summary(&mut named, Duration::from_secs(5)).await {
            Some(s) => got.push(s),
            None => break,
        }
    }
    assert!(got.len() >= 4, "summary events while the fleet changes");
    for w in got.windows(2) {
        let gap = w[1].0 - w[0].0;
        assert!(
            gap >= Duration::from_millis(700),
            "at most once a second: {gap:?}"
        );
        assert_ne!(w[0].1.workers, w[1].1.workers, "each one changed");
    }
    feeder.await.expect("feeder");
    // Once the fleet holds still, the last event is what the hub answers,
    // and no more come.
    let last = loop {
        match next_summary(&mut named, Duration::from_millis(2500)).await {
            Some((_, s)) => got.push((std::time::Instant::now(), s)),
            None => break got.last().expect("one").1.clone(),
        }
    };
    let now = viewer.summary().await.expect("summary");
    assert_eq!(last.workers, 120);
    assert_eq!(
        Summary {
            now: last.now,
            cursor: last.cursor.clone(),
            ..now
        },
        last
    );
    // Without `types`, never a summary.
    assert!(
        next_summary(&mut all, Duration::from_millis(1500))
            .await
            .is_none()
    );
}
