//! Behaviour of `update`: keys, filter, sort, selection kept by id across
//! updates, delta application, liveness as the hub judges it, connection states.

use std::time::Duration;

use chrono::TimeDelta;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use macfleet::tui::app::{App, Detail};
use macfleet::tui::fixture::{self, t0};
use macfleet::tui::keys;
use macfleet::tui::model::conn::ConnLabel;
use macfleet::tui::msg::{Effect, Fetch, Msg};
use macfleet::tui::panes::workers::WorkerIndex;
use macfleet::tui::panes::{
    failovers::Failovers, history::History as HistoryPane, ladder::Ladder, workers::Workers,
};
use macfleet::tui::ui::theme::Theme;
use macfleet::wire::{ConfigEvent, WorkerState};

use crate::ui;
use ui::{app, code, help_bindings, help_lines, key, typed};

fn ids(app: &App) -> Vec<String> {
    app.pane_as::<Workers>()
        .list
        .rows
        .slots
        .iter()
        .map(|s| app.model().fleet.get(*s).unwrap().view.worker.to_string())
        .collect()
}

fn selected_id(app: &App) -> String {
    let s = app.pane_as::<Workers>().list.sel.key.expect("a selection");
    app.model().fleet.get(s).unwrap().view.worker.to_string()
}

#[test]
fn view_keys_tab_and_quit() {
    let (mut a, _) = app(10, false);
    assert_eq!(a.view(), "workers");
    key(&mut a, '1');
    assert_eq!(a.view(), "ladder");
    code(&mut a, KeyCode::Tab);
    assert_eq!(a.view(), "workers");
    code(&mut a, KeyCode::Tab);
    code(&mut a, KeyCode::Tab);
    assert_eq!(a.view(), "history");
    code(&mut a, KeyCode::Tab);
    assert_eq!(a.view(), "ladder");
    code(&mut a, KeyCode::BackTab);
    assert_eq!(a.view(), "history");
    key(&mut a, '?');
    assert!(a.overlay().help);
    key(&mut a, 'j'); // ignored under help
    code(&mut a, KeyCode::Esc);
    assert!(!a.overlay().help);
    assert!(!a.quits());
    key(&mut a, 'q');
    assert!(a.quits());
    let (mut a, _) = app(10, false);
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('c'),
        KeyModifiers::CONTROL,
    )));
    assert!(a.quits());
}

#[test]
fn edit_keys_in_a_read_only_session_say_read_only_and_do_nothing() {
    for c in ['J', 'K', 'a', 'd', 'u', 'w'] {
        let (mut a, _) = app(10, false);
        key(&mut a, '1');
        let before = (
            a.model().config.agents.clone(),
            a.pane_as::<Ladder>().list.sel.pos,
        );
        let fx = key(&mut a, c);
        assert!(fx.is_empty());
        assert_eq!(a.status().unwrap().text, "read-only", "key {c}");
        assert_eq!(
            (
                a.model().config.agents.clone(),
                a.pane_as::<Ladder>().list.sel.pos
            ),
            before
        );
    }
    let (mut a, _) = app(10, false);
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('r'),
        KeyModifiers::CONTROL,
    )));
    assert_eq!(a.status().unwrap().text, "read-only");
    let (mut a, _) = app(10, true);
    key(&mut a, '1');
    key(&mut a, 'w');
    assert_eq!(
        a.status().unwrap().text,
        "nothing to write: no pending edit"
    );
    assert!(!a.quits());
}

#[test]
fn default_order_is_most_urgent_first() {
    let (a, _) = app(60, false);
    let rows: Vec<(u8, String)> = a
        .pane_as::<Workers>()
        .list
        .rows
        .slots
        .iter()
        .map(|s| {
            let e = a.model().fleet.get(*s).unwrap();
            (e.urgency(), e.view.worker.to_string())
        })
        .collect();
    let classes: Vec<u8> = rows.iter().map(|r| r.0).collect();
    let mut sorted = classes.clone();
    sorted.sort();
    assert_eq!(classes, sorted, "no route, lost, stale, then healthy");
    assert_eq!(classes[0], 0);
    assert!(
        a.model()
            .fleet
            .get(a.pane_as::<Workers>().list.rows.slots[0])
            .unwrap()
            .no_route()
    );
    // Within healthy: workers with a failover (newest first) before the rest, then by id.
    let healthy: Vec<&(u8, String)> = rows.iter().filter(|r| r.0 == 3).collect();
    let first_plain = healthy
        .iter()
        .position(|r| {
            a.model()
                .fleet
                .by_id(&r.1)
                .unwrap()
                .view
                .last_failover()
                .is_none()
        })
        .unwrap();
    let plain: Vec<&String> = healthy[first_plain..].iter().map(|r| &r.1).collect();
    let mut p2 = plain.clone();
    p2.sort();
    assert_eq!(plain, p2);
}

#[test]
fn filter_narrows_keeps_text_across_views_and_esc_clears_with_recall() {
    let (mut a, _) = app(60, false);
    key(&mut a, '/');
    assert!(a.filter("workers").editing);
    typed(&mut a, "gpu-node-01");
    // Typing applies at once; every row matches.
    assert!(!ids(&a).is_empty());
    assert!(ids(&a).iter().all(|id| id.starts_with("w-0001")));
    assert_eq!(ids(&a).len(), 10);
    code(&mut a, KeyCode::Enter);
    assert!(!a.filter("workers").editing);
    // j is navigation again, not text.
    key(&mut a, 'j');
    assert_eq!(a.filter("workers").text, "gpu-node-01");
    // Switching views keeps what was typed.
    key(&mut a, '3');
    key(&mut a, '2');
    assert_eq!(a.filter("workers").text, "gpu-node-01");
    assert_eq!(ids(&a).len(), 10);
    // Esc clears; ↑ in the prompt recalls.
    code(&mut a, KeyCode::Esc);
    assert_eq!(a.filter("workers").text, "");
    assert_eq!(ids(&a).len(), 60);
    key(&mut a, '/');
    code(&mut a, KeyCode::Up);
    code(&mut a, KeyCode::Enter);
    assert_eq!(ids(&a).len(), 10);
}

#[test]
fn filter_matches_agent_and_cause_and_is_case_insensitive() {
    let (mut a, _) = app(60, false);
    key(&mut a, '/');
    typed(&mut a, "NO ROUTE");
    assert_eq!(
        ids(&a).len(),
        a.model()
            .fleet
            .iter()
            .filter(|(_, e)| e.view.active_agent.is_none())
            .count()
    );
    code(&mut a, KeyCode::Esc);
    key(&mut a, '/');
    typed(&mut a, "rate_limited");
    code(&mut a, KeyCode::Enter);
    for id in ids(&a) {
        let e = a.model().fleet.by_id(&id).unwrap();
        assert_eq!(
            e.view.last_failover().unwrap().cause.kind.as_str(),
            "rate_limited"
        );
    }
    // Narrowing in place and a fresh rebuild agree.
    let fresh = WorkerIndex::build(
        &a.model().fleet,
        a.pane_as::<Workers>().list.sort,
        false,
        "rate_limited",
    );
    assert_eq!(fresh.slots, a.pane_as::<Workers>().list.rows.slots);
    // Failovers view filters its own rows by worker, agent and cause.
    key(&mut a, '3');
    key(&mut a, '/');
    typed(&mut a, "auth");
    code(&mut a, KeyCode::Enter);
    assert!(!a.pane_as::<Failovers>().list.rows.is_empty());
    for s in &a.pane_as::<Failovers>().list.rows {
        assert_eq!(
            a.model()
                .log
                .get(s.failover().unwrap())
                .unwrap()
                .kind
                .as_str(),
            "auth"
        );
    }
}

#[test]
fn sort_cycles_and_reverses() {
    let (mut a, _) = app(60, false);
    key(&mut a, 's');
    assert_eq!(a.pane_as::<Workers>().list.sort.name(), "worker");
    let v = ids(&a);
    let mut sorted = v.clone();
    sorted.sort();
    assert_eq!(v, sorted);
    key(&mut a, 'S');
    let mut rev = sorted.clone();
    rev.reverse();
    assert_eq!(ids(&a), rev);
    for _ in 0..5 {
        key(&mut a, 's');
    }
    assert_eq!(a.pane_as::<Workers>().list.sort.name(), "urgency");
    // Failovers: newest first by default.
    key(&mut a, '3');
    let seqs = a
        .pane_as::<Failovers>()
        .list
        .rows
        .iter()
        .map(|r| r.failover().unwrap())
        .collect::<Vec<u64>>();
    assert!(seqs.windows(2).all(|w| w[0] > w[1]));
}

#[test]
fn navigation_keys_move_and_scroll() {
    let (mut a, _) = app(200, false);
    let rows = a.body_rows();
    key(&mut a, 'G');
    assert_eq!(a.pane_as::<Workers>().list.sel.pos, 199);
    assert_eq!(a.pane_as::<Workers>().list.sel.offset, 200 - rows);
    key(&mut a, 'g');
    assert_eq!(
        (
            a.pane_as::<Workers>().list.sel.pos,
            a.pane_as::<Workers>().list.sel.offset
        ),
        (0, 0)
    );
    code(&mut a, KeyCode::PageDown);
    assert_eq!(a.pane_as::<Workers>().list.sel.pos, rows);
    code(&mut a, KeyCode::Down);
    code(&mut a, KeyCode::Up);
    key(&mut a, 'k');
    assert_eq!(a.pane_as::<Workers>().list.sel.pos, rows - 1);
    code(&mut a, KeyCode::PageUp);
    assert_eq!(a.pane_as::<Workers>().list.sel.pos, 0);
    key(&mut a, 'k');
    assert_eq!(a.pane_as::<Workers>().list.sel.pos, 0);
}

#[test]
fn selection_is_kept_by_id_when_rows_arrive_and_move() {
    let (mut a, m0) = app(60, false);
    for _ in 0..20 {
        key(&mut a, 'j');
    }
    let chosen = selected_id(&a);
    let pos = a.pane_as::<Workers>().list.sel.pos;
    // Three new no-route workers arrive: they sort above the selection.
    let now = t0();
    let mut delta = Vec::new();
    for i in 1000..1003 {
        let mut w = fixture::worker(i, now);
        w.active_agent = None;
        delta.push(w);
    }
    a.update(Msg::Workers {
        page: fixture::page(delta, now, true, 2),
        at: m0,
    });
    a.settle();
    assert_eq!(selected_id(&a), chosen);
    assert_eq!(a.pane_as::<Workers>().list.sel.pos, pos + 3);
    // The selected worker itself changes class: the cursor follows it.
    let mut w = a.model().fleet.by_id(&chosen).unwrap().to_wire();
    w.active_agent = None;
    a.update(Msg::Workers {
        page: fixture::page(vec![w], now, true, 3),
        at: m0,
    });
    a.settle();
    assert_eq!(selected_id(&a), chosen);
    assert!(a.pane_as::<Workers>().list.sel.pos < 10);
    // The selected worker disappears (full page without it): the cursor stays at its place.
    let pos = a.pane_as::<Workers>().list.sel.pos;
    let rest: Vec<_> = a
        .model()
        .fleet
        .iter()
        .filter(|(_, e)| *e.view.worker != *chosen)
        .map(|(_, e)| e.to_wire())
        .collect();
    a.update(Msg::Workers {
        page: fixture::page(rest, now, false, 4),
        at: m0,
    });
    a.settle();
    assert_eq!(a.pane_as::<Workers>().list.sel.pos, pos);
    assert_ne!(selected_id(&a), chosen);
}

#[test]
fn delta_updates_map_aggregates_and_index_like_a_full_rebuild() {
    let (mut a, m0) = app(500, false);
    let before = a.model().fleet.agg.clone();
    let now = t0();
    let mut delta = Vec::new();
    // 1: a healthy worker loses its route; 2: a new worker; 3: a worker moves to a new revision.
    let mut w1 = a.model().fleet.by_id("w-00001").unwrap().to_wire();
    w1.active_agent = None;
    delta.push(w1);
    delta.push(fixture::worker(9999, now));
    let mut w4 = a.model().fleet.by_id("w-00004").unwrap().to_wire();
    assert_eq!(w4.config_revision.as_deref(), Some("r41"));
    w4.config_revision = Some("r42".into());
    // As the hub says it: the revision and the list it was given.
    w4.in_sync = true;
    delta.push(w4);
    a.update(Msg::Workers {
        page: fixture::page(delta, now, true, 2),
        at: m0,
    });
    a.settle();
    assert_eq!(a.model().fleet.agg.total, before.total + 1);
    assert_eq!(a.model().fleet.agg.no_route, before.no_route + 1);
    assert_eq!(a.model().fleet.agg.out_of_sync, before.out_of_sync - 1);
    assert_eq!(
        a.model().fleet.agg.agent("opencode").active,
        before.agent("opencode").active
    );
    assert_eq!(ids(&a).len(), 501);
    let mut fresh = WorkerIndex::default();
    fresh.rebuild(&a.model().fleet);
    assert_eq!(fresh.slots, a.pane_as::<Workers>().list.rows.slots);
}

#[test]
fn many_random_deltas_keep_index_and_aggregates_exact() {
    let (mut a, m0) = app(400, false);
    let mut now = t0();
    let mut mono = m0;
    for round in 0..30u64 {
        now += TimeDelta::seconds(7);
        mono += Duration::from_secs(7);
        let mut delta = Vec::new();
        for k in 0..15u64 {
            let i = ((round * 131 + k * 37) % 450) as usize;
            let mut w = fixture::worker(i, now);
            if (round + k) % 4 == 0 {
                w.active_agent = None;
            }
            delta.push(w);
        }
        a.update(Msg::Workers {
            page: fixture::page(delta, now, true, round + 2),
            at: mono,
        });
        a.settle();
        let mut fresh = WorkerIndex::default();
        fresh.rebuild(&a.model().fleet);
        assert_eq!(
            fresh.slots,
            a.pane_as::<Workers>().list.rows.slots,
            "round {round}"
        );
        // Aggregates equal a recount.
        let (mut h, mut s, mut l, mut nr) = (0, 0, 0, 0);
        for (_, e) in a.model().fleet.iter() {
            match e.state {
                WorkerState::Healthy => h += 1,
                WorkerState::Stale => s += 1,
                WorkerState::Lost => l += 1,
            }
            if e.no_route() {
                nr += 1;
            }
        }
        let g = &a.model().fleet.agg;
        assert_eq!(
            (g.healthy, g.stale, g.lost, g.no_route),
            (h, s, l, nr),
            "round {round}"
        );
    }
}

#[test]
fn liveness_is_the_hubs_judgement_from_its_events_not_the_tuis_clock() {
    let (mut a, m0) = app(60, false);
    let healthy = a.model().fleet.agg.healthy;
    assert!(healthy > 40);
    // 40 s later with no heartbeat the hub's rule says stale (3 intervals
    // = 30 s), but the hub has not said so yet: the TUI does not judge.
    a.update(Msg::Tick {
        mono: m0 + Duration::from_secs(40),
        wall: t0(),
    });
    a.settle();
    assert_eq!(a.model().fleet.agg.healthy, healthy);
    // The hub's sweeper moves them: `state` events, in one burst.
    let now = t0() + TimeDelta::seconds(40);
    let moved: Vec<_> = fixture::fleet(60, t0())
        .into_iter()
        .filter(|w| w.state == WorkerState::Healthy)
        .map(|mut w| {
            w.state = WorkerState::Stale;
            w
        })
        .collect();
    a.update(Msg::WorkerEvents(moved.clone()));
    a.settle();
    assert_eq!(a.model().fleet.agg.healthy, 0);
    assert_eq!(a.model().fleet.agg.stale + a.model().fleet.agg.lost, 60);
    let mut fresh = WorkerIndex::default();
    fresh.rebuild(&a.model().fleet);
    assert_eq!(fresh.slots, a.pane_as::<Workers>().list.rows.slots);
    // A poll answered before the move but read after it cannot undo it
    // (same heartbeat: the state only moves on)...
    let before: Vec<_> = moved
        .iter()
        .cloned()
        .map(|mut w| {
            w.state = WorkerState::Healthy;
            w
        })
        .collect();
    a.update(Msg::Workers {
        page: fixture::page(before, now, true, 3),
        at: m0 + Duration::from_secs(40),
    });
    a.settle();
    assert_eq!(
        a.model().fleet.agg.healthy,
        0,
        "an older answer does not undo a move"
    );
    // ...but a new heartbeat does, and a late event about an older one is dropped.
    let mut back = moved[0].clone();
    back.received_at = now;
    back.state = WorkerState::Healthy;
    a.update(Msg::Workers {
        page: fixture::page(vec![back], now, true, 4),
        at: m0 + Duration::from_secs(41),
    });
    a.update(Msg::WorkerEvents(vec![moved[0].clone()]));
    a.settle();
    assert_eq!(a.model().fleet.agg.healthy, 1);
    assert_eq!(
        a.model().fleet.by_id(&moved[0].worker).unwrap().state,
        WorkerState::Healthy
    );
}

#[test]
fn a_hub_outage_is_not_a_fleet_outage() {
    let (mut a, m0) = app(60, false);
    let (healthy, stale, lost) = (
        a.model().fleet.agg.healthy,
        a.model().fleet.agg.stale,
        a.model().fleet.agg.lost,
    );
    assert!(healthy > 40);
    let t1 = m0 + Duration::from_secs(2);
    a.update(Msg::FetchFailed {
        what: Fetch::Workers,
        error: "hub unreachable".into(),
        at: t1,
    });
    // Well past every threshold, with the hub unreachable all along.
    for s in [40, 200, 3600] {
        a.update(Msg::Tick {
            mono: t1 + Duration::from_secs(s),
            wall: t0(),
        });
        a.settle();
        assert_eq!(
            (
                a.model().fleet.agg.healthy,
                a.model().fleet.agg.stale,
                a.model().fleet.agg.lost
            ),
            (healthy, stale, lost),
            "{s}s into an outage the hub's last judgement stands"
        );
    }
    let buf = ui::drawn(&a, 120, 40);
    let row: String = ui::row(&buf, 1);
    assert!(
        row.starts_with("hub unreachable 1h") && row.contains("last known:"),
        "{row}"
    );
    assert!(row.contains(&format!("{healthy} healthy")), "{row}");
    // The hub answers again, with its own judgement of each worker.
    let later = t0() + TimeDelta::seconds(3600);
    let judged: Vec<_> = fixture::fleet(60, t0())
        .into_iter()
        .map(|mut w| {
            w.state = WorkerState::Lost;
            w
        })
        .collect();
    a.update(Msg::Workers {
        page: fixture::page(judged, later, true, 9),
        at: t1 + Duration::from_secs(3601),
    });
    a.settle();
    assert_eq!(
        a.model().fleet.agg.lost,
        60,
        "an hour without heartbeats: lost"
    );
}

#[test]
fn connection_states() {
    let (mut a, m0) = app(5, false);
    assert_eq!(a.model().conn_label(), ConnLabel::Live);
    a.update(Msg::StreamDown {
        error: "event stream broke".into(),
        retry_in: Duration::from_secs(1),
    });
    assert_eq!(a.model().conn_label(), ConnLabel::Polling);
    let t1 = m0 + Duration::from_secs(3);
    a.update(Msg::FetchFailed {
        what: Fetch::Workers,
        error: "hub unreachable".into(),
        at: t1,
    });
    a.update(Msg::Tick {
        mono: t1 + Duration::from_secs(12),
        wall: t0(),
    });
    assert_eq!(
        a.model().conn_label(),
        ConnLabel::Disconnected(Duration::from_secs(12))
    );
    assert!(a.model().is_stale());
    // A failed config fetch alone does not mark the hub gone.
    let (mut b, m0) = app(5, false);
    b.update(Msg::FetchFailed {
        what: Fetch::History,
        error: "x".into(),
        at: m0,
    });
    assert_eq!(b.model().conn_label(), ConnLabel::Live);
    // The hub answers again.
    a.update(Msg::StreamUp);
    a.update(Msg::Workers {
        page: fixture::page(Vec::new(), t0(), true, 9),
        at: t1 + Duration::from_secs(13),
    });
    assert_eq!(a.model().conn_label(), ConnLabel::Live);
}

#[test]
fn stream_events_effects_and_dedupe() {
    let (mut a, m0) = app(5, false);
    let n = a.model().log.len();
    let rec = fixture::failovers(41, t0()).events.pop().unwrap();
    assert_eq!(rec.seq, 41);
    a.update(Msg::Failover(rec.clone()));
    a.update(Msg::Failover(rec));
    a.settle();
    assert_eq!(a.model().log.len(), n + 1);
    assert_eq!(
        a.pane_as::<Failovers>().list.rows[0],
        macfleet::tui::panes::failovers::Row::Failover(41)
    );
    assert_eq!(a.update(Msg::Reset), vec![Effect::Refetch]);
    assert_eq!(key(&mut a, 'r'), vec![Effect::Refetch]);
    let fx = a.update(Msg::Config(ConfigEvent {
        revision: "r43".into(),
        at: t0(),
        by: "alice".into(),
        agents: vec!["claude".into(), "opencode".into()],
    }));
    // The event carries the list only: the document (the base of an edit)
    // is fetched at once, or every edit key would wait for `r`.
    assert_eq!(fx, vec![Effect::FetchConfig, Effect::FetchHistory]);
    a.settle();
    assert_eq!(
        a.model().config.agents,
        vec!["claude".to_string(), "opencode".to_string()]
    );
    assert_eq!(
        a.model().fleet.agg.out_of_sync,
        a.model().fleet.agg.total - a.model().fleet.agg.lost
    );
    // A workers page on a revision we have no list for asks for the config once.
    let mut p = fixture::page(Vec::new(), t0(), true, 5);
    p.config_revision = "r44".into();
    let fx = a.update(Msg::Workers {
        page: p.clone(),
        at: m0,
    });
    assert_eq!(fx, vec![Effect::FetchConfig, Effect::FetchHistory]);
    assert!(a.update(Msg::Workers { page: p, at: m0 }).is_empty());
}

#[test]
fn enter_opens_detail_esc_closes_and_j_follows() {
    let (mut a, _) = app(60, false);
    code(&mut a, KeyCode::Enter);
    let first = selected_id(&a);
    assert_eq!(a.overlay().detail, Some(Detail::Worker(first.clone())));
    key(&mut a, 'j');
    let second = selected_id(&a);
    assert_ne!(first, second);
    assert_eq!(a.overlay().detail, Some(Detail::Worker(second)));
    code(&mut a, KeyCode::Esc);
    assert_eq!(a.overlay().detail, None);
    key(&mut a, '3');
    code(&mut a, KeyCode::Enter);
    assert!(matches!(a.overlay().detail, Some(Detail::Failover(40))));
}

#[test]
fn why_a_worker_stands_on_its_rung() {
    let (mut a, m0) = app(1, false);
    let now = t0();
    let mut w = fixture::worker(0, now);
    w.active_agent = Some("claude".into());
    let mut f = fixture::failover(0, now - TimeDelta::minutes(3), false);
    f.cause.kind = macfleet::wire::CauseKind::RateLimited;
    f.cause.status = Some(429);
    f.cause.source = macfleet::wire::CauseSource::HubRouter;
    w.last_failover = Some(f);
    w.capabilities.get_mut("pi").unwrap().binary = false;
    a.update(Msg::Workers {
        page: fixture::page(vec![w], now, false, 2),
        at: m0,
    });
    a.settle();
    let e = a.model().fleet.by_id("w-00000").unwrap();
    assert_eq!(
        macfleet::tui::overlays::detail::why(&a.cx(), e),
        "on claude (#2): opencode rate_limited 429 (hub_router) since 14:04:06 (59m), \
         last 3m ago, 2 in the last hour; pi missing binary, no failover recorded"
    );
}

#[test]
fn help_is_generated_from_the_key_table() {
    let (mut a, _) = app(5, true);
    for v in ['1', '2', '3', '4'] {
        key(&mut a, v);
        let text: String = help_lines(&a).iter().map(|l| l.clone() + "\n").collect();
        // P and A are listed only while a staged rollout bakes.
        for b in help_bindings(&a)
            .into_iter()
            .filter(|b| !b.action.is_rollout_step())
        {
            assert!(
                text.contains(&b.help),
                "{:?} help lacks {:?}",
                a.view(),
                b.help
            );
        }
        // Every key of every scope finds its own action (a digit names
        // its pane).
        for b in keys::BINDINGS {
            for (i, k) in b.keys.iter().enumerate() {
                let ev = KeyEvent::new(k.code, k.mods);
                let want = match b.action {
                    keys::Action::ShowView(_) => keys::Action::ShowView(i),
                    a => a,
                };
                assert_eq!(keys::action_in(b.scope, &ev), Some(want), "{b:?}");
            }
        }
    }
}

#[test]
fn an_idle_tick_changes_no_cell_unless_an_age_does() {
    let (mut a, m0) = app(60, false);
    key(&mut a, '4'); // History: ages in minutes and hours
    let draw = |a: &App| ui::drawn(a, 120, 40);
    let before = draw(&a);
    a.update(Msg::Tick {
        mono: m0 + Duration::from_secs(1),
        wall: t0(),
    });
    a.settle();
    assert_eq!(
        draw(&a),
        before,
        "nothing visible changed: the runner writes nothing"
    );
    a.update(Msg::Tick {
        mono: m0 + Duration::from_secs(61),
        wall: t0(),
    });
    a.settle();
    assert_ne!(draw(&a), before, "20m became 21m");
}

#[test]
fn resize_keeps_the_cursor_visible() {
    let (mut a, _) = app(200, false);
    for _ in 0..30 {
        key(&mut a, 'j');
    }
    a.update(Msg::Resize(80, 24));
    let rows = a.body_rows();
    let s = &a.pane_as::<Workers>().list.sel;
    assert!(s.pos >= s.offset && s.pos < s.offset + rows);
}

#[test]
fn incremental_index_matches_a_rebuild_for_every_sort_and_direction() {
    use macfleet::tui::panes::workers::WorkerSort;
    for sort in WorkerSort::ALL {
        for reverse in [false, true] {
            let (mut a, m0) = app(300, false);
            // The sort as the keys choose it: `s` to the column, `S` to reverse.
            let n = WorkerSort::ALL
                .iter()
                .position(|s| *s == sort)
                .expect("a sort");
            for _ in 0..n {
                key(&mut a, 's');
            }
            if reverse {
                key(&mut a, 'S');
            }
            let rows = &a.pane_as::<Workers>().list.rows;
            assert_eq!((rows.sort, rows.reverse), (sort, reverse));
            let mut now = t0();
            for round in 0..6u64 {
                now += TimeDelta::seconds(9);
                let delta: Vec<_> = (0..12u64)
                    .map(|k| {
                        let mut w = fixture::worker(((round * 53 + k * 29) % 330) as usize, now);
                        w.host = if k % 2 == 0 {
                            format!("h{}", (round + k) % 5)
                        } else {
                            // Longer than the 24 bytes a sort key holds.
                            format!("a-very-long-host-name-prefix-{}", (round + k) % 3)
                        };
                        w
                    })
                    .collect();
                a.update(Msg::Workers {
                    page: fixture::page(delta, now, true, round + 2),
                    at: m0 + Duration::from_secs(9 * (round + 1)),
                });
                a.settle();
                let fresh = WorkerIndex::build(&a.model().fleet, sort, reverse, "");
                assert_eq!(
                    fresh.slots,
                    a.pane_as::<Workers>().list.rows.slots,
                    "{sort:?} reverse={reverse} round {round}"
                );
            }
        }
    }
}

#[test]
fn shift_tab_as_tmux_reports_it_goes_to_the_previous_view() {
    let (mut a, _) = app(10, false);
    assert_eq!(a.view(), "workers");
    // tmux sends `\e[Z`; crossterm reports BackTab with SHIFT.
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::BackTab,
        KeyModifiers::SHIFT,
    )));
    assert_eq!(a.view(), "ladder");
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::BackTab,
        KeyModifiers::SHIFT,
    )));
    assert_eq!(a.view(), "history");
}

/// A failover from the stream, `seq` on worker `i`, at the fixture's clock.
fn streamed(seq: u64, i: usize) -> macfleet::wire::FailoverRecord {
    let mut r = fixture::failovers(1, t0()).events.pop().unwrap();
    r.seq = seq;
    r.worker = format!("w-{i:05}");
    r.failover.id = format!("w-{i:05}-{seq}");
    r
}

#[test]
fn failovers_arriving_keep_a_cursor_at_the_top_on_the_newest() {
    let (mut a, _) = app(10, false);
    key(&mut a, '3');
    // The view opens on its first row: the newest.
    assert_eq!(a.pane_as::<Failovers>().list.sel.pos, 0);
    assert_eq!(
        a.pane_as::<Failovers>().list.sel.key,
        Some(macfleet::tui::panes::failovers::Row::Failover(40))
    );
    for seq in 41..80 {
        a.update(Msg::Failover(streamed(seq, seq as usize % 7)));
        a.settle();
        assert_eq!(a.pane_as::<Failovers>().list.sel.pos, 0, "seq {seq}");
        assert_eq!(
            a.pane_as::<Failovers>().list.sel.key,
            Some(macfleet::tui::panes::failovers::Row::Failover(seq)),
            "the newest"
        );
        assert_eq!(a.pane_as::<Failovers>().list.sel.offset, 0);
    }
    let footer = |a: &App| {
        let buf = ui::drawn(a, 120, 40);
        ui::row(&buf, 39)
    };
    assert!(footer(&a).trim_end().ends_with("1/79"), "{}", footer(&a));
}

#[test]
fn failovers_arriving_keep_a_cursor_moved_down_on_its_item() {
    let (mut a, _) = app(10, false);
    key(&mut a, '3');
    for _ in 0..3 {
        key(&mut a, 'j');
    }
    let chosen = a
        .pane_as::<Failovers>()
        .list
        .sel
        .key
        .and_then(|r| r.failover())
        .expect("a selection");
    assert_eq!(a.pane_as::<Failovers>().list.sel.pos, 3);
    let offset = a.pane_as::<Failovers>().list.sel.offset;
    for (n, seq) in (41..46).enumerate() {
        a.update(Msg::Failover(streamed(seq, 3)));
        a.settle();
        assert_eq!(
            a.pane_as::<Failovers>().list.sel.key,
            Some(macfleet::tui::panes::failovers::Row::Failover(chosen)),
            "seq {seq}"
        );
        assert_eq!(a.pane_as::<Failovers>().list.sel.pos, 3 + n + 1);
        // The window does not move while the item stays on screen.
        assert_eq!(a.pane_as::<Failovers>().list.sel.offset, offset);
    }
    code(&mut a, KeyCode::Enter);
    assert_eq!(a.overlay().detail, Some(Detail::Failover(chosen)));
}

#[test]
fn a_revision_that_comes_back_is_its_own_history_row_with_its_own_diff() {
    use macfleet::wire::{History, HistoryEntry};
    let (mut a, _) = app(10, true);
    let e = |rev: &str, mins: i64, agents: &[&str], prev: &[&str]| HistoryEntry {
        revision: rev.into(),
        at: t0() - TimeDelta::minutes(mins),
        by: "alice".into(),
        agents: agents.iter().map(|s| s.to_string()).collect(),
        previous_agents: prev.iter().map(|s| s.to_string()).collect(),
        client: None,
    };
    // add cursor, then remove it: the list returns to revision ra.
    a.update(Msg::History(History {
        revisions: vec![
            e("ra", 1, &["opencode", "pi"], &["opencode", "pi", "cursor"]),
            e("rb", 2, &["opencode", "pi", "cursor"], &["opencode", "pi"]),
            e("ra", 3, &["opencode", "pi"], &["pi", "opencode"]),
        ],
    }));
    key(&mut a, '4');
    assert_eq!(a.pane_as::<HistoryPane>().list.rows.len(), 3);
    let screen = |a: &App| {
        let buf = ui::drawn(a, 120, 40);
        (0..40).map(|y| ui::row(&buf, y) + "\n").collect::<String>()
    };
    let s = screen(&a);
    assert!(s.contains("opencode,pi,cursor → opencode,pi"), "{s}");
    assert!(s.contains("pi,opencode → opencode,pi"), "{s}");
    // Enter on each `ra` row names its own entry and tells its own change.
    code(&mut a, KeyCode::Enter);
    let Some(Detail::Revision(newest)) = a.overlay().detail.clone() else {
        panic!("a revision detail");
    };
    assert_eq!(newest.at, t0() - TimeDelta::minutes(1));
    assert!(screen(&a).contains("removed"), "{}", screen(&a));
    code(&mut a, KeyCode::Esc);
    key(&mut a, 'G');
    code(&mut a, KeyCode::Enter);
    let Some(Detail::Revision(oldest)) = a.overlay().detail.clone() else {
        panic!("a revision detail");
    };
    assert_eq!(oldest.revision, newest.revision);
    assert_eq!(oldest.at, t0() - TimeDelta::minutes(3));
    let s = screen(&a);
    assert!(!s.contains("removed"), "a reorder removes nothing: {s}");
    assert!(s.contains("pi,opencode"), "{s}");
}

#[test]
fn filters_match_state_rank_cause_fields_and_negation() {
    let (mut a, m0) = app(60, false);
    // 40 s without a heartbeat: every worker is stale or lost by the clock.
    let (mut b, _) = app(60, false);
    b.update(Msg::Tick {
        mono: m0 + Duration::from_secs(40),
        wall: t0(),
    });
    key(&mut b, '/');
    typed(&mut b, "stale");
    let stale = ids(&b);
    assert!(!stale.is_empty());
    for id in &stale {
        assert_eq!(
            b.model().fleet.by_id(id).unwrap().state,
            WorkerState::Stale,
            "{id}"
        );
    }
    let count = |a: &App, f: &dyn Fn(&macfleet::tui::model::fleet::Entry) -> bool| {
        a.model().fleet.iter().filter(|(_, e)| f(e)).count()
    };
    let filter = |a: &mut App, text: &str| {
        code(a, KeyCode::Esc);
        key(a, '/');
        code(
            a,
            KeyCode::Char('u'), // typed as text: Ctrl-U is below
        );
        a.update(Msg::Key(KeyEvent::new(
            KeyCode::Char('u'),
            KeyModifiers::CONTROL,
        )));
        typed(a, text);
        code(a, KeyCode::Enter);
        ids(a)
    };
    // The active agent with its rank, as the row shows it.
    let rows = filter(&mut a, "opencode #0");
    assert_eq!(
        rows.len(),
        count(&a, &|e| e.view.active_agent.as_deref() == Some("opencode")
            && e.active_rank() == Some(0))
    );
    assert!(!rows.is_empty());
    let rows = filter(&mut a, "state:lost");
    assert_eq!(rows.len(), a.model().fleet.agg.lost);
    assert!(!rows.is_empty());
    let rows = filter(&mut a, "cause:auth");
    assert_eq!(
        rows.len(),
        count(&a, &|e| e.view.last_failover().is_some_and(|f| f
            .cause
            .kind
            .as_str()
            == "auth"))
    );
    assert!(!rows.is_empty());
    let rows = filter(&mut a, "agent:pi");
    assert_eq!(
        rows.len(),
        count(&a, &|e| e.view.active_agent.as_deref() == Some("pi"))
    );
    let rows = filter(&mut a, "!state:healthy");
    assert_eq!(
        rows.len(),
        a.model().fleet.agg.stale + a.model().fleet.agg.lost
    );
    // A host filter, then narrowing in place agrees with a rebuild.
    let rows = filter(&mut a, "gpu-node-01 !cause:auth");
    assert!(!rows.is_empty());
    let fresh = WorkerIndex::build(
        &a.model().fleet,
        a.pane_as::<Workers>().list.sort,
        false,
        "gpu-node-01 !cause:auth",
    );
    assert_eq!(fresh.slots, a.pane_as::<Workers>().list.rows.slots);
    // Failovers: fields of their own.
    key(&mut a, '3');
    key(&mut a, '/');
    typed(&mut a, "cause:auth");
    code(&mut a, KeyCode::Enter);
    assert!(!a.pane_as::<Failovers>().list.rows.is_empty());
    for s in &a.pane_as::<Failovers>().list.rows {
        assert_eq!(
            a.model()
                .log
                .get(s.failover().unwrap())
                .unwrap()
                .kind
                .as_str(),
            "auth"
        );
    }
}

#[test]
fn an_empty_result_says_which_filter_emptied_it() {
    let (mut a, _) = app(60, false);
    key(&mut a, '/');
    typed(&mut a, "gpu-node-01 state:lost");
    code(&mut a, KeyCode::Enter);
    assert!(ids(&a).is_empty());
    let buf = ui::drawn(&a, 120, 40);
    let screen: String = (0..40).map(|y| ui::row(&buf, y) + "\n").collect();
    assert!(
        screen.contains("no worker matches /gpu-node-01 state:lost (state:lost emptied it)"),
        "{screen}"
    );
}

#[test]
fn ctrl_u_in_the_filter_prompt_erases_and_the_prompt_help_lists_it() {
    let (mut a, _) = app(60, false);
    key(&mut a, '/');
    typed(&mut a, "gpu");
    a.update(Msg::Key(KeyEvent::new(
        KeyCode::Char('u'),
        KeyModifiers::CONTROL,
    )));
    assert_eq!(a.filter("workers").text, "");
    assert!(a.filter("workers").editing);
    let text: String = help_lines(&a).iter().map(|l| l.clone() + "\n").collect();
    for b in keys::prompt_keys() {
        assert!(text.contains(b.help), "help lacks {:?}", b.help);
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("C-u") && l.trim_end().ends_with("erase all")),
        "{text}"
    );
}

fn top_line(a: &App) -> String {
    let buf = ui::drawn(a, 120, 40);
    ui::row(&buf, 0)
}

#[test]
fn a_refused_token_says_so_on_the_top_line() {
    let (mut a, m0) = app(5, false);
    a.update(Msg::Refused {
        what: Fetch::Workers,
        at: m0 + Duration::from_secs(1),
    });
    let top = top_line(&a);
    assert!(
        top.contains("unauthorized: the hub refused this token"),
        "{top}"
    );
    assert!(!top.contains("disconnected"), "{top}");
    assert_eq!(a.model().conn_label(), ConnLabel::Refused);
    // The hub takes the token again.
    a.update(Msg::Workers {
        page: fixture::page(Vec::new(), t0(), true, 9),
        at: m0 + Duration::from_secs(3),
    });
    assert!(!top_line(&a).contains("unauthorized"));
}

#[test]
fn before_the_first_answer_the_body_says_where_it_is_connecting() {
    let m0 = std::time::Instant::now();
    let mut a = App::new("http://127.0.0.1:7878", false, Theme::new(false, false), m0);
    a.update(Msg::Resize(100, 30));
    a.settle();
    let buf = ui::drawn(&a, 100, 30);
    let screen: String = (0..30).map(|y| ui::row(&buf, y) + "\n").collect();
    assert!(
        screen.contains("connecting to http://127.0.0.1:7878"),
        "{screen}"
    );
    // Keys work at once: q quits.
    key(&mut a, 'q');
    assert!(a.quits());
}

#[test]
fn r_says_when_the_refetch_finished() {
    let (mut a, _) = app(5, false);
    assert_eq!(key(&mut a, 'r'), vec![Effect::Refetch]);
    assert_eq!(a.status().unwrap().text, "refetching");
    a.update(Msg::Refetched { ok: true });
    assert_eq!(a.status().unwrap().text, "refetch finished");
    a.update(Msg::Refetched { ok: false });
    assert_eq!(a.status().unwrap().text, "refetch failed; retrying");
}

/// Every sort column of every pane puts its rows in an order of its own
/// (on the fixture, no two columns agree, and reversing reverses), so a
/// column added to a pane's sort that does not sort fails here.
#[test]
fn every_sort_of_every_pane_orders_its_rows() {
    let (mut a, _) = app(60, true);
    // Failovers away from three agents, so that away counts differ from
    // the ranks.
    let mut page = fixture::failovers(40, a.model().now());
    for (k, r) in page.events.iter_mut().enumerate() {
        if k % 2 == 0 {
            r.failover.from = "codex".into();
        } else if k % 5 == 1 {
            r.failover.from = "pi".into();
        }
    }
    a.update(Msg::Failovers { page, fresh: true });
    // Hosts that do not follow the worker ids.
    let now = a.model().now();
    let hosts: Vec<_> = (0..60)
        .map(|i| {
            let mut w = fixture::worker(i, now);
            w.host = format!("host-{}", (i * 7) % 60);
            w
        })
        .collect();
    a.update(Msg::Workers {
        page: fixture::page(hosts, now, true, 2),
        at: a.model().mono_now,
    });
    a.settle();
    let names: Vec<&str> = a.panes().map(|p| p.name()).collect();
    for (i, name) in names.iter().enumerate() {
        key(&mut a, char::from(b'1' + i as u8));
        assert_eq!(a.view(), *name);
        let n = a.pane().list().sort_count();
        let mut orders: Vec<(&str, Vec<String>)> = Vec::new();
        for _ in 0..n {
            let sort = a.pane().list().sort_name();
            let rows = a.pane().row_ids(a.model());
            assert!(rows.len() > 2, "{name}: too few rows to tell sorts apart");
            key(&mut a, 'S');
            let mut back = a.pane().row_ids(a.model());
            back.reverse();
            assert_eq!(back, rows, "{name} by {sort}: S does not reverse it");
            key(&mut a, 'S');
            orders.push((sort, rows));
            key(&mut a, 's');
        }
        for (x, (sx, ox)) in orders.iter().enumerate() {
            for (sy, oy) in &orders[x + 1..] {
                assert_ne!(
                    ox, oy,
                    "{name}: sorting by {sx} and by {sy} gives one order"
                );
            }
        }
    }
}

/// Owners who share a token are told apart by the writing client: History
/// shows each entry's `client` beside `by`, in the table and the detail,
/// and `client:` filters on it.
#[test]
fn history_shows_the_writing_client_beside_by() {
    use macfleet::wire::{History, HistoryEntry};
    let (mut a, _) = app(10, true);
    let e = |rev: &str, mins: i64, client: Option<&str>| HistoryEntry {
        revision: rev.into(),
        at: t0() - TimeDelta::minutes(mins),
        by: "alice".into(),
        agents: vec!["opencode".into(), "pi".into()],
        previous_agents: vec!["pi".into(), "opencode".into()],
        client: client.map(str::to_string),
    };
    a.update(Msg::History(History {
        revisions: vec![
            e("rc", 1, Some("curl/8.5.0")),
            e("rb", 2, Some("macfleet/0.4.0")),
            e("ra", 3, None),
        ],
    }));
    key(&mut a, '4');
    let screen = |a: &App| ui::text(&ui::drawn(a, 120, 40));
    let s = screen(&a);
    let header = s.lines().find(|l| l.contains("REV")).expect("the header");
    assert!(
        header.find("BY") < header.find("CLIENT"),
        "CLIENT beside BY: {header}"
    );
    let row = |rev: &str| {
        s.lines()
            .find(|l| l.contains(rev))
            .expect("a row")
            .to_string()
    };
    assert!(
        row("rc").contains("alice") && row("rc").contains("curl/8.5.0"),
        "{s}"
    );
    assert!(row("rb").contains("macfleet/0.4.0"), "{s}");
    code(&mut a, KeyCode::Enter);
    let s = screen(&a);
    let client = s.lines().find(|l| l.contains("client")).unwrap_or_default();
    assert!(client.contains("curl/8.5.0"), "the detail names it:\n{s}");
    code(&mut a, KeyCode::Esc);
    key(&mut a, '/');
    typed(&mut a, "client:curl");
    code(&mut a, KeyCode::Enter);
    assert_eq!(a.pane_as::<HistoryPane>().list.rows.len(), 1);
}

/// The Failovers sparkline counts what the filter shows, not the whole log.
#[test]
fn the_failovers_sparkline_follows_the_filter() {
    let (mut a, _) = app(60, false);
    key(&mut a, '3');
    a.settle();
    let all_of = |a: &App| -> u32 {
        let s = ui::screen(a);
        let row = s
            .iter()
            .find(|l| l.starts_with("all "))
            .cloned()
            .unwrap_or_default();
        row.split_whitespace()
            .last()
            .and_then(|n| n.parse().ok())
            .unwrap_or(u32::MAX)
    };
    let whole = all_of(&a);
    key(&mut a, '/');
    typed(&mut a, "cause:auth");
    code(&mut a, KeyCode::Enter);
    a.settle();
    let shown = a.pane().list().cursor().len as u32;
    assert!(shown > 0 && shown < whole, "{shown} of {whole}");
    assert_eq!(all_of(&a), shown, "{:#?}", ui::screen(&a));
    assert!(
        ui::screen(&a)
            .iter()
            .any(|l| l.contains("that match the filter")),
        "{:#?}",
        ui::screen(&a)
    );
}

/// The sorted column is marked in its header, ▲ rising, ▼ falling (`^`,
/// `v` under `--ascii`), and `S` turns the mark.
#[test]
fn the_sorted_column_is_marked_in_its_header() {
    let header = |a: &App| -> String {
        ui::screen(a)
            .into_iter()
            .find(|l| l.contains("WORKER"))
            .unwrap_or_default()
    };
    let (mut a, _) = app(60, false);
    key(&mut a, '3');
    a.settle();
    assert!(header(&a).contains("TIME▼"), "{}", header(&a));
    key(&mut a, 's');
    a.settle();
    assert!(header(&a).contains("WORKER▲"), "{}", header(&a));
    key(&mut a, 'S');
    a.settle();
    assert!(header(&a).contains("WORKER▼"), "{}", header(&a));
    key(&mut a, '2');
    a.settle();
    assert!(header(&a).contains("STATE▼"), "{}", header(&a));
    let (mut b, _) = fixture::app(60, false, Theme::new(false, true), 120, 40);
    key(&mut b, '2');
    key(&mut b, 's');
    b.settle();
    assert!(header(&b).contains("WORKER^"), "{}", header(&b));
}

/// A status message longer than the line is never cut: it goes on over
/// the rows above, its end on screen.
#[test]
fn a_long_status_message_keeps_its_end() {
    let (mut a, _) = fixture::app(60, false, Theme::new(false, false), 80, 24);
    let long = format!(
        "{} and this is THE-END",
        "a context that cannot be used, ".repeat(5)
    );
    a.update(Msg::SwitchFailed { error: long });
    a.settle();
    let s = ui::screen(&a).join("\n");
    assert!(s.contains("THE-END"), "{s}");
}
