//! The large-fleet mode through `update`: a summary of a fleet past the
//! threshold makes the header and the Ladder count from it and the
//! Workers view page through the hub's windows; below it nothing changes.

use std::time::Duration;

use crossterm::event::KeyCode;
use macfleet::tui::app::App;
use macfleet::tui::fixture;
use macfleet::tui::model::large::WindowAsk;
use macfleet::tui::msg::{Effect, Msg};

use crate::ui::{self, code, key, screen};

const MILLION: u64 = 1_000_000;

fn summary(a: &mut App, workers: u64, polled: bool) -> Vec<Effect> {
    let at = a.model().mono_now + Duration::from_millis(10);
    a.update(Msg::Summary {
        summary: Box::new(fixture::summary(workers, fixture::t0())),
        at,
        polled,
    })
}

fn windows(fx: &[Effect]) -> Vec<WindowAsk> {
    fx.iter()
        .filter_map(|e| match e {
            Effect::Window(a) => Some(a.clone()),
            _ => None,
        })
        .collect()
}

/// Answer `ask` as a hub of `total` workers would, as the instance the
/// screen holds.
fn answer(a: &mut App, ask: &WindowAsk, total: u64) -> Vec<Effect> {
    let instance = a.model().who.as_ref().and_then(|w| w.instance.clone());
    answer_as(a, ask, total, instance)
}

fn answer_as(a: &mut App, ask: &WindowAsk, total: u64, instance: Option<String>) -> Vec<Effect> {
    let at = a.model().mono_now + Duration::from_millis(10);
    a.update(Msg::Window {
        ask: ask.clone(),
        page: fixture::window(ask, total, fixture::t0()),
        at,
        instance,
    })
}

/// A 40-worker session told of a million: the first window asked, and
/// answered.
fn large_app() -> (App, WindowAsk) {
    let (mut a, _) = ui::app(40, false);
    let fx = summary(&mut a, MILLION, true);
    let asks = windows(&fx);
    assert_eq!(asks.len(), 1, "one window asked at once: {fx:?}");
    let ask = asks[0].clone();
    answer(&mut a, &ask, MILLION);
    (a, ask)
}

fn status_line(a: &App) -> String {
    screen(a).last().cloned().unwrap_or_default()
}

#[test]
fn a_summary_past_the_threshold_gives_the_header_and_the_ladder_their_counts() {
    let (mut a, _) = ui::app(40, false);
    assert!(screen(&a).iter().any(|l| l.contains("40 workers")));
    let fx = summary(&mut a, MILLION, true);
    assert!(
        a.model().large.is_some(),
        "a million workers is a large fleet"
    );
    let ask = windows(&fx);
    assert_eq!(ask.len(), 1, "the rows on screen are asked: {fx:?}");
    assert_eq!(ask[0].query().offset, Some(0));
    assert_eq!(ask[0].query().sort, macfleet::wire::WindowSort::Urgency);
    assert!(
        ask[0].rows >= 38 && ask[0].rows <= 38 + 2 * 100,
        "{:?}",
        ask[0]
    );
    assert_eq!(
        a.model().fleet.len(),
        0,
        "the fleet of 40 is not held any more"
    );
    let s = screen(&a);
    let fleet_line = &s[1];
    assert!(fleet_line.contains("1,000,000 workers"), "{fleet_line}");
    assert!(fleet_line.contains("NO ROUTE 12"), "{fleet_line}");
    assert!(
        fleet_line.contains("230 one failure from no route"),
        "{fleet_line}"
    );
    assert!(fleet_line.contains("20,000 stale"), "{fleet_line}");
    assert!(
        fleet_line.contains("970,000 healthy (10 with no route)"),
        "{fleet_line}"
    );
    assert!(s[0].contains("large fleet"), "{}", s[0]);
    // The Ladder: capable and running from the summary's agents.
    key(&mut a, '1');
    let s = screen(&a).join("\n");
    let opencode = s
        .lines()
        .find(|l| l.contains("opencode") && !l.contains("can/run"))
        .expect("opencode's rung");
    assert!(
        s.contains("can/run opencode 990,000/500,000"),
        "the header's agents line"
    );
    assert!(
        opencode.contains("990,000"),
        "capable from the summary: {opencode}"
    );
    assert!(
        opencode.contains("500,000"),
        "running from the summary: {opencode}"
    );
    assert!(
        opencode.contains("1/2/3"),
        "missing binary/token/preflight: {opencode}"
    );
    assert!(
        s.contains("n/a (large fleet)"),
        "AWAY NOW is not counted over a window"
    );
    // A summary event (not polled) changes the counts, never the mode.
    let mut s2 = fixture::summary(MILLION, fixture::t0());
    s2.no_route = 99;
    let at = a.model().mono_now + Duration::from_millis(20);
    a.update(Msg::Summary {
        summary: Box::new(s2),
        at,
        polled: false,
    });
    assert!(screen(&a)[1].contains("NO ROUTE 99"));
}

#[test]
fn window_answers_give_the_rows_and_the_position() {
    let (mut a, ask) = large_app();
    let s = screen(&a);
    assert!(s.iter().any(|l| l.contains("w-00000")), "{s:#?}");
    assert!(
        s.iter().any(|l| l.contains("Workers 1,000,000")),
        "the tab counts the hub's total"
    );
    assert!(
        status_line(&a).contains("1/1,000,000"),
        "{}",
        status_line(&a)
    );
    assert_eq!(
        a.model().fleet.len(),
        ask.rows as usize,
        "only the window is held"
    );
    key(&mut a, 'j');
    key(&mut a, 'j');
    assert!(
        status_line(&a).contains("3/1,000,000"),
        "{}",
        status_line(&a)
    );
    // The Enter detail is of the row under the cursor.
    code(&mut a, KeyCode::Enter);
    assert!(screen(&a).join("\n").contains("w-00002"));
}

#[test]
fn keys_stay_local_within_the_margin_and_ask_past_it() {
    let (mut a, first) = large_app();
    // j within the margin: nothing asked.
    for _ in 0..20 {
        let fx = key(&mut a, 'j');
        assert!(
            windows(&fx).is_empty(),
            "j inside the window asks nothing: {fx:?}"
        );
    }
    // Page down until the screen nears the window's end: one window asked.
    let mut asked = Vec::new();
    for _ in 0..20 {
        asked.extend(windows(&code(&mut a, KeyCode::PageDown)));
        if !asked.is_empty() {
            break;
        }
    }
    assert_eq!(asked.len(), 1, "one window past the margin");
    let next = asked.pop().expect("asked");
    assert!(next.from > first.from && next.seq > first.seq, "{next:?}");
    // Rows not yet held show as such, never as other rows.
    answer(&mut a, &next, MILLION);
    let pos: usize = a.pane().list().cursor().pos;
    assert!(
        screen(&a)
            .iter()
            .any(|l| l.contains(&format!("w-{pos:05}")))
    );
    // G: the end, asked with offset = total − rows.
    let fx = key(&mut a, 'G');
    let g = windows(&fx);
    assert_eq!(g.len(), 1, "{fx:?}");
    assert_eq!(g[0].query().offset, Some(MILLION - u64::from(g[0].rows)));
    assert!(
        status_line(&a).contains("1,000,000/1,000,000"),
        "{}",
        status_line(&a)
    );
    assert!(
        screen(&a).iter().any(|l| l.contains('…')),
        "the end is not held yet"
    );
    answer(&mut a, &g[0], MILLION);
    assert!(screen(&a).iter().any(|l| l.contains("w-999999")));
    // g: back to 0.
    let fx = key(&mut a, 'g');
    let top = windows(&fx);
    assert_eq!(top.len(), 1, "{fx:?}");
    assert_eq!(top[0].query().offset, Some(0));
    answer(&mut a, &top[0], MILLION);
    assert!(status_line(&a).contains("1/1,000,000"));
}

#[test]
fn a_new_sort_or_filter_asks_the_hub_for_its_list() {
    let (mut a, _) = large_app();
    let fx = key(&mut a, 's');
    let w = windows(&fx);
    assert_eq!(w.len(), 1, "{fx:?}");
    assert_eq!(w[0].sort, macfleet::wire::WindowSort::Worker);
    key(&mut a, '/');
    for c in "state:lost".chars() {
        key(&mut a, c);
    }
    let fx = code(&mut a, KeyCode::Enter);
    let _ = fx;
    let asked = a
        .model()
        .large
        .as_ref()
        .and_then(|l| l.asked.clone())
        .expect("asked");
    assert_eq!(asked.q, "state:lost");
    assert_eq!(asked.query().q, "state:lost");
}

#[test]
fn a_window_from_another_instance_or_an_older_ask_is_never_mixed_in() {
    let (mut a, first) = large_app();
    let before: Vec<String> = screen(&a);
    // Another hub instance answered (the hub at this address was replaced).
    let mut other = first.clone();
    other.from = 500;
    let mut page = fixture::window(&other, MILLION, fixture::t0());
    page.workers
        .iter_mut()
        .for_each(|w| w.worker = format!("x-{}", w.worker));
    let at = a.model().mono_now + Duration::from_millis(10);
    a.update(Msg::Window {
        ask: first.clone(),
        page,
        at,
        instance: Some("another-instance".into()),
    });
    assert!(
        !screen(&a).join("\n").contains("x-w-"),
        "another instance's rows are not shown"
    );
    assert_eq!(screen(&a), before);
    // An older ask answered after a newer one: dropped.
    let fx = key(&mut a, 'G');
    let g = windows(&fx).pop().expect("G asks");
    answer(&mut a, &g, MILLION);
    answer(&mut a, &first, MILLION);
    assert!(status_line(&a).contains("1,000,000/1,000,000"));
    assert!(
        screen(&a).iter().any(|l| l.contains("w-999999")),
        "the newer window stands"
    );
}

#[test]
fn a_worker_move_of_a_row_not_held_is_not_held() {
    let (mut a, ask) = large_app();
    let held = a.model().fleet.len();
    assert_eq!(held, ask.rows as usize);
    let mut far = fixture::worker(900_000, fixture::t0());
    far.state = macfleet::wire::WorkerState::Stale;
    let mut near = fixture::worker(1, fixture::t0());
    near.state = macfleet::wire::WorkerState::Lost;
    a.update(Msg::WorkerEvents(vec![far, near]));
    assert_eq!(
        a.model().fleet.len(),
        held,
        "a worker not on screen is not taken in"
    );
    assert_eq!(
        a.model().fleet.by_id("w-00001").map(|e| e.state),
        Some(macfleet::wire::WorkerState::Lost),
        "a row held follows the hub's move"
    );
    // The counts stay the summary's, whatever the rows held say.
    assert_eq!(a.model().fleet.agg.total, MILLION as usize);
}

#[test]
fn the_summarys_urgent_workers_are_the_first_rows_until_a_window_answers() {
    let (mut a, _) = ui::app(40, false);
    let mut s = fixture::summary(MILLION, fixture::t0());
    s.urgent = (500_000..500_020)
        .map(|i| fixture::worker(i, fixture::t0()))
        .collect();
    let at = a.model().mono_now + Duration::from_millis(10);
    let fx = a.update(Msg::Summary {
        summary: Box::new(s),
        at,
        polled: true,
    });
    let screen_now = screen(&a).join("\n");
    assert!(screen_now.contains("w-500000"), "{screen_now}");
    assert!(screen_now.contains("w-500019"), "{screen_now}");
    assert!(
        status_line(&a).contains("1/1,000,000"),
        "{}",
        status_line(&a)
    );
    // The window is asked all the same, and its answer replaces them.
    let ask = windows(&fx).pop().expect("the window is asked");
    answer(&mut a, &ask, MILLION);
    let s = screen(&a).join("\n");
    assert!(s.contains("w-00000") && !s.contains("w-500000"), "{s}");
}

#[test]
fn below_the_threshold_nothing_changes() {
    let (mut a, _) = ui::app(40, false);
    let before = screen(&a);
    let fx = summary(&mut a, 40, true);
    assert!(a.model().large.is_none());
    assert!(windows(&fx).is_empty());
    assert_eq!(a.model().fleet.len(), 40);
    assert_eq!(screen(&a), before);
    // And a session that leaves the mode holds the fleet again.
    summary(&mut a, MILLION, true);
    assert!(a.model().large.is_some());
    summary(&mut a, 9_000, true);
    assert!(a.model().large.is_none(), "below half the threshold");
}

/// The binary in a pty against a real `macfleet hub` holding more workers
/// than the threshold (lowered to 200 by `MACFLEET_LARGE_FLEET`, so 300
/// workers cross it): the Workers view is the hub's windows, `G` and `g`
/// jump, the total follows the hub's summary, and the fleet is never
/// fetched whole.
#[test]
fn the_binary_pages_a_hub_past_the_threshold_and_never_fetches_the_fleet() {
    use crate::common;
    use crate::pty::Pty;

    const N: usize = 300;
    const SOON: Duration = Duration::from_secs(20);
    let (dir, _owner, viewer, worker) = common::hub_dir();
    let (_hub, url) = common::spawn_hub(dir.path(), &["--heartbeat-interval", "60"], None);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = macfleet::client::Client::new(
        &url,
        Some(macfleet::client::Token::new(&worker)),
        Default::default(),
    )
    .expect("client");
    let beat = |i: usize| {
        let hb: macfleet::wire::Heartbeat = serde_json::from_value(common::heartbeat(
            &format!("w-{i:04}"),
            None,
            serde_json::json!([]),
        ))
        .expect("heartbeat");
        let c = client.clone();
        async move { c.heartbeat(&hb).await.expect("heartbeat accepted") }
    };
    rt.block_on(async {
        for chunk in (0..N).collect::<Vec<_>>().chunks(50) {
            futures::future::join_all(chunk.iter().map(|&i| beat(i))).await;
        }
    });
    let mut t = Pty::spawn(
        &["--hub", &url, "--read-only"],
        &[("MAC_HUB_TOKEN", &viewer), ("MACFLEET_LARGE_FLEET", "200")],
    );
    // The position, on the status line (the agents line says `300/300` too).
    let at = |t: &Pty, pos: &str| {
        let want = format!(" {pos}");
        t.wait_until(&format!("the status line at {pos}"), SOON, |s| {
            s.lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.trim_end().ends_with(&want))
        })
    };
    let s = at(&t, "1/300");
    assert!(t.top_line().contains("large fleet"), "{s}");
    assert!(
        s.contains("Workers 300"),
        "the tab counts the hub's total:\n{s}"
    );
    assert!(s.contains("w-0000"), "{s}");
    // G: the hub's last row; g: its first.
    t.send("G");
    at(&t, "300/300");
    let s = t.wait_for("w-0299", SOON);
    assert!(!s.contains("w-0000"), "{s}");
    t.send("g");
    at(&t, "1/300");
    t.wait_for("w-0000", SOON);
    // A filter is the hub's: one worker.
    t.send("/worker:w-0123$\r");
    let s = at(&t, "1/1");
    assert!(s.contains("w-0123") && !s.contains("w-0124"), "{s}");
    t.esc();
    at(&t, "1/300");
    // A new worker: the summary's total and the window follow it.
    rt.block_on(beat(N));
    at(&t, "1/301");
    let log = t.log_tail();
    assert!(log.contains("large=true"), "{log}");
    assert!(
        !log.contains("full workers page"),
        "a large fleet is never fetched whole:\n{log}"
    );
}

/// A million workers stream failovers by the thousand a second, and a
/// settle rebuilds the Failovers view over its whole log: in large-fleet
/// mode a failover or recovery is settled with the next frame or key, not
/// one settle each (a demo of a million answered keys in 0.3–0.5 s while
/// its TUI settled after every event). What the events bring still shows,
/// and a key still asks its window at once.
#[test]
fn a_burst_of_failovers_waits_for_the_frame_not_a_settle_each() {
    let (mut a, _) = large_app();
    a.settle();
    assert!(!a.is_unsettled());
    for seq in 0..500u64 {
        a.update(Msg::Failover(fixture::busy_failover(1_000_000 + seq, seq)));
        assert!(
            a.is_unsettled(),
            "failover {seq} was settled at once, not with the frame"
        );
    }
    a.settle();
    assert!(!a.is_unsettled());
    key(&mut a, '3');
    assert!(
        screen(&a).iter().any(|l| l.contains("w-00499")),
        "the burst's newest failover is in the view once the frame settles"
    );
    key(&mut a, '2');
    a.update(Msg::Failover(fixture::busy_failover(2_000_000, 7)));
    let fx = key(&mut a, 'G');
    assert_eq!(windows(&fx).len(), 1, "G asks its window at once: {fx:?}");
}

/// Issue 30: a fleet whose workers report names of their own (30,000
/// workers, each its own 64 agents: the summary counts them under `other`)
/// costs the TUI each name, so it is shown by windows as a million workers
/// are; the same count sharing its names is held whole.
#[test]
fn a_fleet_of_names_of_its_own_is_shown_by_windows_by_what_it_costs() {
    let told = |other: Option<u64>| {
        let (mut a, _) = ui::app(40, false);
        let mut s = fixture::summary(30_000, fixture::t0());
        if let Some(n) = other {
            let mut o = s.agents[0].clone();
            o.agent = "other".into();
            (o.capable, o.active, o.no_binary, o.no_token) = (n, 0, 0, 0);
            (o.preflight_failed, o.last_rung) = (0, 0);
            s.agents.push(o);
        }
        let at = a.model().mono_now + Duration::from_millis(10);
        let fx = a.update(Msg::Summary {
            summary: Box::new(s),
            at,
            polled: true,
        });
        (a, windows(&fx))
    };
    let (own, asks) = told(Some(30_000 * 64 - 256));
    assert!(
        own.model().large.is_some(),
        "30,000 workers of 64 names of their own are a large fleet"
    );
    assert_eq!(asks.len(), 1, "the rows on screen are asked as a window");
    assert!(screen(&own).iter().any(|l| l.contains("large fleet")));
    let (shared, asks) = told(None);
    assert!(
        shared.model().large.is_none(),
        "30,000 sharing their names are held whole"
    );
    assert!(asks.is_empty());
}
