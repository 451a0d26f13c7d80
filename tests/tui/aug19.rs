//! aug19 on the real hub with the simulated fleet: in the outage every
//! worker fails closed, and the why line of every one of them, in the TUI's
//! detail and in `macfleet get worker`, names a cause for every rung.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{TestHub, eventually};
use macfleet::client::FailoverQuery;
use macfleet::sim::{Scenario, SimOptions, SimStats, Start};
use macfleet::tui::app::App;
use macfleet::tui::msg::Msg;
use macfleet::tui::ui::theme::Theme;

#[tokio::test]
async fn every_no_route_workers_why_line_names_a_cause_for_every_rung() {
    const LIST: [&str; 4] = ["opencode", "pi", "claude", "cursor"];
    let h = TestHub::start_with(
        "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"pi\", \"claude\", \"cursor\"]\n",
        |_| {},
    )
    .await;
    let viewer = h.client(&h.viewer);
    let mut opts = SimOptions::new(40, Scenario::load("aug19").expect("scenario"));
    // The outage runs from 30 s to 90 s of the cycle: start a second before it.
    opts.start = Start::At(29);
    opts.duration = Some(Duration::from_secs(60));
    let stats = Arc::new(SimStats::default());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let sim = tokio::spawn(macfleet::sim::run(
        h.client(&h.worker),
        opts,
        stats,
        async {
            let _ = stop_rx.await;
        },
    ));
    let page = eventually(400, || async {
        let p = viewer.workers(None).await.ok()?;
        (p.workers.len() == 40 && p.workers.iter().all(|w| w.active_agent.is_none())).then_some(p)
    })
    .await
    .expect("all 40 workers fail closed in the outage");
    // Every failover the walk logged is committed before its heartbeat's 200.
    let log = viewer
        .failovers(&FailoverQuery {
            limit: Some(1000),
            ..FailoverQuery::default()
        })
        .await
        .expect("the log");
    assert!(log.events.len() >= 160, "{} failovers", log.events.len());
    let _ = stop_tx.send(());

    // The TUI, fed what the hub answered.
    let m0 = Instant::now();
    let mut app = App::new(h.url(), false, Theme::new(false, false), m0);
    app.update(Msg::Resize(120, 40));
    app.update(Msg::Workers {
        page: page.clone(),
        at: m0,
    });
    app.update(Msg::Failovers {
        page: log.clone(),
        fresh: true,
    });
    app.settle();
    let mut causes = std::collections::BTreeSet::new();
    for w in &page.workers {
        let e = app.model().fleet.by_id(&w.worker).expect("held");
        let rungs = macfleet::tui::overlays::detail::why_rungs(&app.cx(), e);
        let line = macfleet::tui::overlays::detail::why(&app.cx(), e);
        assert_eq!(
            rungs.iter().map(|r| r.agent.as_str()).collect::<Vec<_>>(),
            LIST,
            "{line}"
        );
        for r in &rungs {
            assert!(!r.contradiction, "{line}");
            let kind = r.text.split(' ').next().unwrap_or_default();
            assert!(
                ["upstream_status", "missing_binary"].contains(&kind),
                "{}: rung {} has no cause: {line}",
                w.worker,
                r.agent
            );
            assert!(r.text.contains(" since ") && r.text.contains("in the last hour"));
            causes.insert(kind.to_string());
        }
        assert!(
            line.starts_with("NO ROUTE: opencode upstream_status 503"),
            "{line}"
        );
        // `macfleet get worker` says the same, rung by rung.
        let mine: Vec<_> = log
            .events
            .iter()
            .filter(|r| r.worker == w.worker)
            .cloned()
            .collect();
        let cli = macfleet::cli::get::worker::why(page.now, w, &mine, &[]);
        let tui: Vec<String> = rungs
            .iter()
            .map(|r| format!("{}: {}", r.agent, r.text))
            .collect();
        assert_eq!(cli, tui, "{}", w.worker);
    }
    assert!(causes.contains("upstream_status"), "{causes:?}");
    // Heartbeating is not having a route: no fleet line and no row calls
    // these workers healthy without saying they have no route, and the
    // hub's word stays on the fleet line.
    crate::ui::key(&mut app, '2');
    app.settle();
    let s = crate::ui::screen(&app);
    let healthy = app.model().fleet.agg.healthy;
    assert!(healthy > 0, "{s:?}");
    assert!(
        s[1].contains(&format!("{healthy} healthy ({healthy} with no route)")),
        "{}",
        s[1]
    );
    for row in s.iter().filter(|l| l.contains("w-")) {
        assert!(
            !row.contains("healthy"),
            "a no-route row called healthy: {row}"
        );
        assert!(row.contains("no route") || row.contains("stale"), "{row}");
    }
    sim.await.expect("sim task").expect("sim ran");
}
