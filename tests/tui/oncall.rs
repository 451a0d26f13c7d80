//! The on-call screens of issue #11 through `update` and the pure views:
//! the sparkline by the failovers' own times, state changes from the event
//! stream, the status word, the why line per rung, heartbeat age against the
//! threshold, AWAY NOW, failover ↔ worker, the raw record and the `:`
//! command line.

use chrono::TimeDelta;
use crossterm::event::KeyCode;
use macfleet::tui::app::App;
use macfleet::tui::fixture::{self, t0};
use macfleet::tui::msg::Msg;
use macfleet::tui::panes::{failovers::Failovers, workers::Workers};
use macfleet::tui::ui::theme::Theme;

use crate::ui;
use ui::{app, code, key, screen, typed};

/// A worker back-filling its last hour sends old failovers now: each
/// belongs in the minute it happened, not in the minute it arrived.
#[test]
fn the_sparkline_buckets_failovers_by_their_own_time() {
    let (mut a, _) = app(10, false);
    let now = t0();
    let before = a.model().log.per_minute(now, 60);
    let mut r = fixture::failovers(1, now).events.pop().unwrap();
    r.seq = 1000;
    r.failover.id = "w-00000-backfill".into();
    r.failover.at = now - TimeDelta::minutes(30);
    r.received_at = now;
    a.update(Msg::Failover(r));
    a.settle();
    let after = a.model().log.per_minute(now, 60);
    let moved: Vec<usize> = (0..60)
        .filter(|i| before[*i].iter().sum::<u32>() != after[*i].iter().sum::<u32>())
        .collect();
    assert_eq!(
        moved,
        vec![29],
        "one more failover, 30 minutes back (index 59 is the current minute)"
    );
}

fn word_cells(a: &App) -> (String, ratatui::style::Style) {
    let (w, h) = a.size();
    let buf = ui::drawn(a, w, h);
    let top: String = ui::row(&buf, 0);
    (top, buf[(1, 0)].style())
}

/// One word at the top left says whether the fleet is fine, judged from
/// the hub's own states; a hub that does not answer is `HUB DOWN`, not a
/// fleet outage, and the fleet line keeps the last known counts.
#[test]
fn the_status_word_is_the_hubs_verdict_in_colour_and_in_reverse_video() {
    use macfleet::tui::model::verdict::Verdict;
    use macfleet::wire::WorkerState;
    use ratatui::style::{Color, Modifier};
    let now = t0();
    let on_top = |i: usize| {
        let mut w = fixture::worker(i, now);
        w.received_at = now;
        w.state = WorkerState::Healthy;
        w.active_agent = Some("opencode".into());
        w
    };
    let (mut a, m0) = app(0, false);
    // Issue 28: a hub that answers with no worker is not `OK`.
    assert_eq!(
        a.model().verdict(),
        Some(Verdict::NoWorkers),
        "no worker yet: the empty fleet's word"
    );
    a.update(Msg::Workers {
        page: fixture::page((0..5).map(on_top).collect(), now, false, 2),
        at: m0,
    });
    a.settle();
    assert_eq!(a.model().verdict(), Some(Verdict::Ok));
    let (top, style) = word_cells(&a);
    assert!(top.starts_with(" OK  macfleet prod-hub"), "{top}");
    assert_eq!(style.bg, Some(Color::Green));
    // One worker on pi (#1), one stale: DEGRADED 2.
    let mut off = on_top(1);
    off.active_agent = Some("pi".into());
    let mut stale = on_top(2);
    stale.state = WorkerState::Stale;
    a.update(Msg::WorkerEvents(vec![off, stale]));
    a.settle();
    assert_eq!(a.model().verdict(), Some(Verdict::Degraded(2)));
    let (top, style) = word_cells(&a);
    assert!(top.starts_with(" DEGRADED 2  macfleet"), "{top}");
    assert_eq!(style.bg, Some(Color::Yellow));
    // A worker with no route outranks the rest.
    let mut closed = on_top(3);
    closed.active_agent = None;
    a.update(Msg::Workers {
        page: fixture::page(vec![closed], now, true, 3),
        at: m0,
    });
    a.settle();
    assert_eq!(a.model().verdict(), Some(Verdict::NoRoute(1)));
    let (top, style) = word_cells(&a);
    assert!(top.starts_with(" NO ROUTE 1  macfleet"), "{top}");
    assert_eq!(style.bg, Some(Color::Red));
    // The hub goes away: HUB DOWN, and the fleet line keeps the last word
    // of the hub on each worker, with no local aging into lost.
    a.update(Msg::FetchFailed {
        what: macfleet::tui::msg::Fetch::Workers,
        error: "hub unreachable".into(),
        at: m0 + std::time::Duration::from_secs(1),
    });
    a.update(Msg::Tick {
        mono: m0 + std::time::Duration::from_secs(600),
        wall: now,
    });
    a.settle();
    assert_eq!(a.model().verdict(), Some(Verdict::HubDown));
    let rows = screen(&a);
    assert!(rows[0].starts_with(" HUB DOWN  macfleet"), "{}", rows[0]);
    assert!(
        rows[1].starts_with("hub unreachable 9m · last known: NO ROUTE 1"),
        "{}",
        rows[1]
    );
    assert!(rows[1].contains("0 lost"), "{}", rows[1]);
    // NO_COLOR: no colour at all, the word in reverse video.
    let (mut plain, m0) = fixture::app(0, false, Theme::new(true, false), 80, 24);
    plain.update(Msg::Workers {
        page: fixture::page((0..3).map(on_top).collect(), now, false, 2),
        at: m0,
    });
    plain.settle();
    let (top, style) = word_cells(&plain);
    assert!(top.starts_with(" OK "), "{top}");
    assert!(matches!(style.bg, None | Some(Color::Reset)), "{style:?}");
    assert!(matches!(style.fg, None | Some(Color::Reset)), "{style:?}");
    assert!(style.add_modifier.contains(Modifier::REVERSED), "{style:?}");
}

/// The detail puts the heartbeat's age against the hub's thresholds, and
/// the Workers AGE column is coloured by the state the hub will assign
/// next, before the hub says so.
#[test]
fn heartbeat_age_against_the_threshold() {
    use macfleet::wire::WorkerState;
    use ratatui::style::Color;
    let now = t0();
    let (mut a, m0) = app(0, false);
    let w = |id: &str, age: i64, state: WorkerState| {
        let mut v = fixture::worker(1, now);
        v.worker = id.into();
        v.received_at = now - TimeDelta::seconds(age);
        v.state = state;
        v
    };
    let page = vec![
        w("w-fresh", 8, WorkerState::Healthy),
        // Past 3 intervals by the hub's rule; its sweeper has not said so yet.
        w("w-due", 35, WorkerState::Healthy),
        w("w-stale", 45, WorkerState::Stale),
        w("w-lost", 700, WorkerState::Lost),
    ];
    a.update(Msg::Workers {
        page: fixture::page(page, now, false, 2),
        at: m0,
    });
    a.settle();
    let text = |a: &App, id: &str| {
        macfleet::tui::overlays::detail::threshold_text(
            &a.cx(),
            a.model().fleet.by_id(id).expect("held"),
        )
    };
    assert_eq!(text(&a, "w-fresh"), "stale in 0:22");
    assert_eq!(text(&a, "w-due"), "stale due now");
    assert_eq!(text(&a, "w-stale"), "stale since 15:03:50 · lost in 0:55");
    assert_eq!(text(&a, "w-lost"), "lost since 14:54:05");
    // The detail line.
    key(&mut a, 'g');
    let pos = a
        .pane_as::<Workers>()
        .list
        .rows
        .slots
        .iter()
        .position(|s| a.model().fleet.get(*s).unwrap().view.worker.as_ref() == "w-fresh")
        .expect("row");
    for _ in 0..pos {
        key(&mut a, 'j');
    }
    code(&mut a, KeyCode::Enter);
    let rows = screen(&a);
    assert!(
        rows.iter()
            .any(|r| r.contains("healthy, heartbeat 8s ago (hub clock) · stale in 0:22")),
        "{rows:#?}"
    );
    code(&mut a, KeyCode::Esc);
    // AGE colours: the due worker's age is yellow though its STATE is healthy.
    let buf = ui::drawn(&a, 120, 40);
    let row_of = |id: &str| {
        (0..40u16)
            .find(|y| ui::row(&buf, *y).starts_with(id))
            .expect("a row")
    };
    let header: String = ui::row(&buf, 4);
    let age_x = header.find("AGE").expect("AGE column") as u16;
    let fg = |id: &str| buf[(age_x, row_of(id))].fg;
    assert_eq!(fg("w-due"), Color::Yellow);
    assert_eq!(fg("w-stale"), Color::Yellow);
    assert_eq!(fg("w-lost"), Color::Red);
    assert!(
        ![Color::Yellow, Color::Red].contains(&fg("w-fresh")),
        "a fresh heartbeat is not coloured"
    );
}

/// AWAY NOW: per agent, the live workers held off it right now and by
/// which cause, beside the last hour's count.
#[test]
fn the_ladder_counts_workers_held_off_each_agent_now_by_cause() {
    use macfleet::wire::{CauseKind, FailoverRecord, WorkerState};
    let now = t0();
    let (mut a, m0) = app(0, false);
    let mut closed = fixture::worker(1, now);
    closed.worker = "w-closed".into();
    closed.active_agent = None;
    for c in closed.capabilities.values_mut() {
        c.binary = true;
        c.token = true;
        c.preflight = macfleet::wire::Preflight::Ok;
    }
    closed.capabilities.get_mut("pi").unwrap().binary = false;
    let mut away_opencode = fixture::failover(1, now - TimeDelta::minutes(2), false);
    away_opencode.id = "w-closed-1".into();
    away_opencode.cause.kind = CauseKind::UpstreamStatus;
    away_opencode.cause.status = Some(503);
    closed.last_failover = None;
    let mut on_pi = fixture::worker(2, now);
    on_pi.worker = "w-on-pi".into();
    on_pi.active_agent = Some("pi".into());
    let mut rl = fixture::failover(2, now - TimeDelta::minutes(1), false);
    rl.cause.kind = CauseKind::RateLimited;
    rl.cause.status = Some(429);
    on_pi.last_failover = Some(rl);
    let mut lost = fixture::worker(3, now);
    lost.worker = "w-lost".into();
    lost.active_agent = None;
    lost.state = WorkerState::Lost;
    a.update(Msg::Workers {
        page: fixture::page(vec![closed, on_pi, lost], now, false, 2),
        at: m0,
    });
    a.update(Msg::Failovers {
        page: macfleet::wire::FailoversPage {
            events: vec![FailoverRecord {
                seq: 1,
                worker: "w-closed".into(),
                host: "h".into(),
                received_at: now,
                failover: away_opencode,
            }],
            next: 1,
            oldest: 1,
        },
        fresh: true,
    });
    // Counted while the Ladder is on screen.
    key(&mut a, '1');
    a.settle();
    let text = |a: &App, agent: &str| {
        macfleet::tui::panes::ladder::away_now_text(
            &a.pane_as::<macfleet::tui::panes::ladder::Ladder>().away_now,
            a.theme().sep(),
            agent,
        )
    };
    assert_eq!(
        text(&a, "opencode"),
        "2: rate_limited 1 · upstream_status 1"
    );
    assert_eq!(text(&a, "pi"), "1: missing_binary 1");
    // claude can be run and no cause is known: said as such, not hidden.
    assert_eq!(text(&a, "claude"), "1: no cause 1");
    assert_eq!(text(&a, "codex"), "1: no cause 1");
    let rows = screen(&a);
    let header = &rows[4];
    assert!(
        header.contains("AWAY NOW") && header.contains("AWAY LAST HOUR"),
        "{header}"
    );
    let opencode = rows
        .iter()
        .find(|r| r.starts_with("0 opencode"))
        .expect("row");
    assert!(
        opencode.contains("2: rate_limited 1 · upstream_status 1"),
        "{opencode}"
    );
    // Counted at most once a second (a pass over the fleet and the log):
    // a change waits for the next tick, and is counted then.
    let mut more = fixture::worker(5, now);
    more.worker = "w-more".into();
    more.active_agent = None;
    more.last_failover = None;
    for c in more.capabilities.values_mut() {
        c.binary = true;
        c.token = true;
        c.preflight = macfleet::wire::Preflight::Ok;
    }
    a.update(Msg::Workers {
        page: fixture::page(vec![more], now, true, 3),
        at: m0,
    });
    a.settle();
    assert_eq!(
        text(&a, "opencode"),
        "2: rate_limited 1 · upstream_status 1"
    );
    a.update(Msg::Tick {
        mono: m0 + std::time::Duration::from_secs(1),
        wall: now,
    });
    a.settle();
    assert_eq!(
        text(&a, "opencode"),
        "3: no cause 1 · rate_limited 1 · upstream_status 1"
    );
}

/// Enter on a failover shows it in full with its worker's detail below,
/// the failover highlighted among the worker's; `f` from a worker's detail
/// opens the Failovers view filtered to that worker.
#[test]
fn from_a_failover_to_its_worker_and_back_to_its_failovers() {
    use macfleet::tui::app::Detail;
    use ratatui::style::Color;
    let (mut a, _) = app(60, false);
    key(&mut a, '3');
    // An older failover than the ten newest of its worker is still shown.
    key(&mut a, 'G');
    code(&mut a, KeyCode::Enter);
    let Some(Detail::Failover(seq)) = a.overlay().detail.clone() else {
        panic!("a failover's detail: {:?}", a.overlay().detail);
    };
    let rec = a.model().log.get(seq).expect("held").record();
    let buf = ui::drawn(&a, 120, 40);
    let rows: Vec<String> = (0..40u16).map(|y| ui::row(&buf, y)).collect();
    assert!(
        rows[4].contains(&format!("failover {seq} · worker {}", rec.worker)),
        "{}",
        rows[4]
    );
    assert!(
        rows.iter()
            .any(|r| r.contains(&format!("its worker {}", rec.worker))),
        "{rows:#?}"
    );
    // The worker's capability matrix and why are there too.
    assert!(rows.iter().any(|r| r.contains("capabilities")), "{rows:#?}");
    // The failover is the highlighted line among its recent failovers.
    let y = rows
        .iter()
        .position(|r| r.contains("▶"))
        .expect("a highlighted failover") as u16;
    assert!(rows[y as usize].contains(rec.failover.cause.kind.as_str()));
    let x = rows[y as usize]
        .find('▶')
        .map(|i| rows[y as usize][..i].chars().count())
        .unwrap() as u16;
    assert_eq!(
        buf[(x, y)].bg,
        Color::Cyan,
        "highlighted as the selection is"
    );
    assert_eq!(
        rows.iter().filter(|r| r.contains("▶")).count(),
        1,
        "one failover highlighted"
    );
    // f: its worker's failovers.
    key(&mut a, 'f');
    a.settle();
    assert_eq!(a.view(), "failovers");
    assert_eq!(a.overlay().detail, None);
    assert_eq!(
        a.pane_as::<Failovers>().list.filter.text,
        format!("worker:{}$", rec.worker)
    );
    assert!(!a.pane_as::<Failovers>().list.rows.is_empty());
    for s in &a.pane_as::<Failovers>().list.rows {
        assert_eq!(
            *a.model().log.get(s.failover().unwrap()).unwrap().worker,
            *rec.worker
        );
    }
    // From the Workers view's detail too.
    key(&mut a, '2');
    code(&mut a, KeyCode::Enter);
    let Some(Detail::Worker(id)) = a.overlay().detail.clone() else {
        panic!("a worker's detail");
    };
    key(&mut a, 'f');
    assert_eq!(
        a.pane_as::<Failovers>().list.filter.text,
        format!("worker:{id}$")
    );
    // Nowhere to go from an agent.
    key(&mut a, '1');
    key(&mut a, 'f');
    assert_eq!(a.view(), "ladder");
    assert!(a.status().unwrap().text.contains("no worker here"));
}

/// The failover detail gives its times to the second, as the list does.
#[test]
fn the_failover_detail_shows_its_time_to_the_second() {
    let (mut a, _) = app(10, false);
    key(&mut a, '3');
    code(&mut a, KeyCode::Enter);
    let seq = a
        .pane_as::<Failovers>()
        .list
        .sel
        .key
        .and_then(|r| r.failover())
        .expect("a failover");
    let r = a.model().log.get(seq).expect("held").record();
    let rows = screen(&a);
    let at = r.failover.at.format("%Y-%m-%d %H:%M:%SZ").to_string();
    assert!(
        rows.iter()
            .any(|l| l.contains(&format!("at          {at}"))),
        "{rows:#?}"
    );
    let list_time = r.failover.at.format("%H:%M:%S").to_string();
    assert!(at.contains(&list_time));
}

/// `v`: the selected worker or failover as the hub's own JSON, scrubbed,
/// scrollable; Esc goes back to where `v` was pressed.
#[test]
fn v_shows_the_hubs_json_scrubbed_and_scrollable() {
    use macfleet::tui::app::Detail;
    let (mut a, m0) = app(10, false);
    // A failover whose detail carries a token: the hub scrubs at ingest,
    // and the screen scrubs again whatever a hub sends.
    let token = format!("{}{}", "mft_", "Zq3".repeat(15));
    let mut r = fixture::failovers(1, t0()).events.pop().unwrap();
    r.seq = 500;
    r.failover.cause.detail = Some(format!("upstream said Bearer {token}"));
    a.update(Msg::Failover(r));
    let _ = m0;
    key(&mut a, '3');
    a.settle();
    assert_eq!(
        a.pane_as::<Failovers>().list.sel.key,
        Some(macfleet::tui::panes::failovers::Row::Failover(500))
    );
    key(&mut a, 'v');
    assert!(a.overlay().raw);
    assert_eq!(a.overlay().detail, Some(Detail::Failover(500)));
    let rows = screen(&a);
    let all = rows.join("\n");
    assert!(
        rows[4].contains("failover 500 · the hub's JSON, scrubbed"),
        "{}",
        rows[4]
    );
    assert!(all.contains("\"seq\": 500,"), "{all}");
    assert!(all.contains("\"kind\":"), "{all}");
    assert!(all.contains("[redacted:"), "{all}");
    assert!(!all.contains(&token), "the token is never drawn");
    code(&mut a, KeyCode::Esc);
    assert!(!a.overlay().raw);
    assert_eq!(a.overlay().detail, None, "back to the list");

    // A worker, from its detail: Esc goes back to the detail.
    key(&mut a, '2');
    code(&mut a, KeyCode::Enter);
    let Some(Detail::Worker(id)) = a.overlay().detail.clone() else {
        panic!("a worker's detail");
    };
    key(&mut a, 'v');
    let lines = macfleet::tui::overlays::detail::raw_lines(&a.cx(), &Detail::Worker(id.clone()))
        .expect("held");
    let wire = a.model().fleet.by_id(&id).unwrap().to_wire();
    let back: macfleet::wire::WorkerView =
        serde_json::from_str(&lines.join("\n")).expect("the JSON parses back");
    assert_eq!(back, wire, "the record as the hub sent it");
    // Scrollable at 80x24: the record is longer than the screen.
    a.update(Msg::Resize(80, 24));
    let first = screen(&a)[5].clone();
    assert!(lines.len() > 20, "{}", lines.len());
    code(&mut a, KeyCode::PageDown);
    let after = screen(&a)[5].clone();
    assert_ne!(first, after, "PgDn scrolls the JSON");
    code(&mut a, KeyCode::Esc);
    assert!(!a.overlay().raw);
    assert_eq!(a.overlay().detail, Some(Detail::Worker(id)));
    assert_eq!(a.view(), "workers");
    // An agent has no record of the hub's own.
    key(&mut a, '1');
    key(&mut a, 'v');
    assert!(!a.overlay().raw);
    assert!(a.status().unwrap().text.starts_with("v shows"));
}

/// `:` jumps as in k9s; bad input says what was wrong and keeps the text.
#[test]
fn colon_jumps_to_views_and_workers_and_says_what_was_wrong() {
    use macfleet::tui::app::Detail;
    let (mut a, _) = app(60, false);
    for (cmd, view) in [
        ("ladder", "ladder"),
        ("history", "history"),
        ("failovers", "failovers"),
        ("workers", "workers"),
    ] {
        key(&mut a, ':');
        assert!(a.overlay().cmd.editing);
        typed(&mut a, cmd);
        assert!(
            screen(&a)[39].starts_with(&format!(":{cmd}_")),
            "{}",
            screen(&a)[39]
        );
        code(&mut a, KeyCode::Enter);
        assert_eq!(a.view(), view, ":{cmd}");
        assert!(!a.overlay().cmd.editing);
    }
    // A worker by id: its detail, the cursor on its row.
    key(&mut a, '3');
    key(&mut a, ':');
    typed(&mut a, "w-00042");
    code(&mut a, KeyCode::Enter);
    a.settle();
    assert_eq!(a.view(), "workers");
    assert_eq!(a.overlay().detail, Some(Detail::Worker("w-00042".into())));
    let sel = a.pane_as::<Workers>().list.sel.key.expect("a selection");
    assert_eq!(&*a.model().fleet.get(sel).unwrap().view.worker, "w-00042");
    code(&mut a, KeyCode::Esc);
    // Bad input: the error, the text kept, the prompt still open.
    key(&mut a, ':');
    typed(&mut a, "wrokers");
    code(&mut a, KeyCode::Enter);
    assert!(a.overlay().cmd.editing);
    assert_eq!(a.overlay().cmd.text, "wrokers");
    let status = screen(&a)[39].clone();
    assert!(
        status.starts_with(":wrokers_   unknown command wrokers: try :workers :failovers"),
        "{status}"
    );
    // Fixing it in place works.
    for _ in 0..7 {
        code(&mut a, KeyCode::Backspace);
    }
    typed(&mut a, "w-99999");
    code(&mut a, KeyCode::Enter);
    assert_eq!(
        a.overlay().cmd.error.as_deref(),
        Some("no worker w-99999 reports to this hub")
    );
    assert_eq!(a.overlay().cmd.text, "w-99999");
    code(&mut a, KeyCode::Esc);
    assert!(!a.overlay().cmd.editing);
    assert_eq!(a.overlay().cmd.text, "");
    // `q` typed into the prompt is text, not quit.
    key(&mut a, ':');
    key(&mut a, 'q');
    assert!(!a.quits());
    code(&mut a, KeyCode::Esc);
    // No contexts configured: said so.
    key(&mut a, ':');
    typed(&mut a, "ctx");
    code(&mut a, KeyCode::Enter);
    assert!(
        a.overlay()
            .cmd
            .error
            .as_deref()
            .unwrap_or_default()
            .starts_with("no contexts in"),
        "{:?}",
        a.overlay().cmd.error
    );
}

/// `:ctx` offers the contexts, asks before a pending edit would be left
/// behind, and asks the runner to switch; the top line names the context.
#[test]
fn ctx_switches_context_and_asks_first_when_an_edit_is_pending() {
    use macfleet::tui::msg::Effect;
    let (mut a, _) = app(10, true);
    a.set_contexts(
        vec!["lab".into(), "prod".into(), "staging".into()],
        Some("prod".into()),
    );
    let top = screen(&a)[0].clone();
    assert!(top.contains("macfleet prod (prod-hub)"), "{top}");
    key(&mut a, ':');
    typed(&mut a, "ctx");
    code(&mut a, KeyCode::Enter);
    assert_eq!(
        a.overlay().contexts.picker,
        Some(1),
        "the cursor on the current one"
    );
    let rows = screen(&a);
    assert!(rows.iter().any(|r| r.contains("* prod")), "{rows:#?}");
    assert!(rows.iter().any(|r| r.contains("  staging")), "{rows:#?}");
    // The current one again: nothing to do.
    assert!(code(&mut a, KeyCode::Enter).is_empty());
    assert_eq!(a.status().unwrap().text, "already on prod");
    key(&mut a, ':');
    typed(&mut a, "ctx");
    code(&mut a, KeyCode::Enter);
    key(&mut a, 'j');
    assert_eq!(
        code(&mut a, KeyCode::Enter),
        vec![Effect::SwitchContext("staging".into())]
    );
    // With an edit pending: asked first; any key but y stays.
    let (mut a, _) = app(10, true);
    a.set_contexts(vec!["prod".into(), "staging".into()], Some("prod".into()));
    key(&mut a, '1');
    key(&mut a, 'J');
    assert!(a.model().edit.is_pending());
    key(&mut a, ':');
    typed(&mut a, "ctx");
    code(&mut a, KeyCode::Enter);
    key(&mut a, 'j');
    assert!(code(&mut a, KeyCode::Enter).is_empty(), "not yet");
    assert_eq!(a.overlay().contexts.confirm.as_deref(), Some("staging"));
    assert!(
        screen(&a)[39].starts_with("an edit is pending on this hub and is not carried to staging"),
        "{}",
        screen(&a)[39]
    );
    assert!(key(&mut a, 'n').is_empty());
    assert!(a.model().edit.is_pending(), "the edit is kept");
    key(&mut a, ':');
    typed(&mut a, "ctx");
    code(&mut a, KeyCode::Enter);
    key(&mut a, 'j');
    code(&mut a, KeyCode::Enter);
    assert_eq!(
        key(&mut a, 'y'),
        vec![Effect::SwitchContext("staging".into())]
    );
    // The runner could not connect: said, and this session goes on.
    a.update(Msg::SwitchFailed {
        error: "no context named staging".into(),
    });
    assert!(
        a.status()
            .unwrap()
            .text
            .starts_with("cannot switch: no context named staging")
    );
}

/// "since" is when the current hold-off of a rung began (the first
/// failover away from it since the worker last stood on it or above it),
/// "last" the newest: `since 14:56:00 (8m), last 2m ago, 3 in the last
/// hour`. One failover alone keeps `since … (… ago)`.
#[test]
fn since_is_when_the_hold_off_began_and_last_the_newest_failover() {
    use macfleet::wire::{CauseKind, CauseSource, FailoverRecord, FailoversPage};
    let (mut a, m0) = app(1, false);
    let now = t0();
    let mut w = fixture::worker(0, now);
    w.active_agent = Some("claude".into());
    w.last_failover = None;
    a.update(Msg::Workers {
        page: fixture::page(vec![w], now, false, 2),
        at: m0,
    });
    let rec = |seq: u64, mins: i64, from: &str, to: &str| {
        let mut f = fixture::failover(0, now - TimeDelta::minutes(mins), false);
        f.id = format!("f-{seq}");
        f.from = from.into();
        f.to = Some(to.into());
        f.cause.kind = CauseKind::RateLimited;
        f.cause.status = Some(429);
        f.cause.source = CauseSource::HubRouter;
        FailoverRecord {
            seq,
            worker: "w-00000".into(),
            host: "gpu-node-000".into(),
            received_at: f.at,
            failover: f,
        }
    };
    a.update(Msg::Failovers {
        page: FailoversPage {
            events: vec![
                // An earlier hold-off of pi, over: the worker came back onto
                // pi (and stood on opencode, above it) at 10m.
                rec(1, 30, "pi", "claude"),
                rec(2, 10, "opencode", "pi"),
                // The current one: began at 8m, the newest at 2m.
                rec(3, 8, "pi", "claude"),
                rec(4, 5, "pi", "claude"),
                rec(5, 2, "pi", "claude"),
            ],
            next: 5,
            oldest: 1,
        },
        fresh: true,
    });
    a.settle();
    let e = a.model().fleet.by_id("w-00000").unwrap();
    let why = macfleet::tui::overlays::detail::why(&a.cx(), e);
    let start = (now - TimeDelta::minutes(8)).format("%H:%M:%S").to_string();
    assert!(
        why.contains(&format!(
            "pi rate_limited 429 (hub_router) since {start} (8m), last 2m ago, 4 in the last hour"
        )),
        "{why}"
    );
    // opencode (rank 0): one failover, so `since` is it.
    let one = (now - TimeDelta::minutes(10))
        .format("%H:%M:%S")
        .to_string();
    assert!(
        why.contains(&format!(
            "opencode rate_limited 429 (hub_router) since {one} (10m ago), 1 in the last hour"
        )),
        "{why}"
    );
}

/// A quota cap that ended and came back: the hub recorded the worker's
/// recovery onto opencode between the two caps, so opencode's "since" is
/// the second cap's start, not the first's.
#[test]
fn since_starts_again_after_a_recovery_onto_the_rung() {
    use macfleet::wire::{CauseKind, CauseSource, FailoverRecord, FailoversPage, RecoveryRecord};
    let (mut a, m0) = app(1, false);
    let now = t0();
    let mut w = fixture::worker(0, now);
    w.active_agent = Some("pi".into());
    w.last_failover = None;
    a.update(Msg::Workers {
        page: fixture::page(vec![w], now, false, 2),
        at: m0,
    });
    let away = |seq: u64, mins: i64| {
        let mut f = fixture::failover(0, now - TimeDelta::minutes(mins), false);
        f.id = format!("f-{seq}");
        f.from = "opencode".into();
        f.to = Some("pi".into());
        f.cause.kind = CauseKind::RateLimited;
        f.cause.status = Some(429);
        f.cause.source = CauseSource::HubRouter;
        FailoverRecord {
            seq,
            worker: "w-00000".into(),
            host: "gpu-node-000".into(),
            received_at: f.at,
            failover: f,
        }
    };
    a.update(Msg::Failovers {
        page: FailoversPage {
            events: vec![away(1, 50), away(2, 40), away(3, 9), away(4, 3)],
            next: 4,
            oldest: 1,
        },
        fresh: true,
    });
    a.update(Msg::Recovery(RecoveryRecord {
        seq: 1,
        worker: "w-00000".into(),
        host: "gpu-node-000".into(),
        at: now - TimeDelta::minutes(20),
        from: Some("pi".into()),
        to: "opencode".into(),
        held_off_s: 30 * 60,
    }));
    a.settle();
    let e = a.model().fleet.by_id("w-00000").unwrap();
    let why = macfleet::tui::overlays::detail::why(&a.cx(), e);
    let start = (now - TimeDelta::minutes(9)).format("%H:%M:%S").to_string();
    assert!(
        why.contains(&format!(
            "opencode rate_limited 429 (hub_router) since {start} (9m), last 3m ago, 4 in the last hour"
        )),
        "{why}"
    );
}

/// The hub's own problems on screen, from a real hub's `GET /v1/health`:
/// a hand edit that does not validate is a banner naming what workers
/// keep; a hub with no list that ever validated is `BUILT-IN ORDER`.
#[tokio::test]
async fn the_hubs_own_problems_are_a_banner_and_the_built_in_order_a_status_word() {
    use crate::common::{TestHub, eventually};
    let h = TestHub::start().await;
    let c = h.client(&h.viewer);
    std::fs::write(
        h.config_path(),
        "[fleet]\nMAC_CODING_AGENTS = [\"opencode\" \"claude\"]\n",
    )
    .expect("a hand edit");
    let health = eventually(200, || async {
        let r = c.health_report().await.ok()?;
        (r.status == "degraded").then_some(r)
    })
    .await
    .expect("the hub says it is degraded");
    let (mut a, _) = app(5, false);
    a.update(Msg::Health(health));
    a.settle();
    let s = screen(&a);
    assert!(
        s[2].starts_with("hub: the hub's file does not validate (line 2, column "),
        "{}",
        s[2]
    );
    assert!(s[2].contains("line 2"), "{}", s[2]);
    // Whole in the model (the line is cut at the screen's edge).
    let whole = a.model().hub_problems().expect("a banner");
    assert!(
        whole.contains("; workers keep the last accepted list (opencode, claude"),
        "{whole}"
    );
    assert!(!s[0].contains("BUILT-IN ORDER"), "{}", s[0]);
    // The hub cannot be reached now: what it said is last known.
    a.update(Msg::FetchFailed {
        what: macfleet::tui::msg::Fetch::Workers,
        error: "connection refused".into(),
        at: std::time::Instant::now(),
    });
    a.settle();
    let s = screen(&a);
    assert!(
        s[2].starts_with("hub (last known, ") && s[2].contains("the hub's file does not validate"),
        "{}",
        s[2]
    );

    let b = TestHub::start_with("[fleet]\nMAC_CODING_AGENTS = 3\n", |_| {}).await;
    let health = b.client(&b.viewer).health_report().await.expect("health");
    assert!(health.built_in_order, "{health:?}");
    let (mut a, _) = app(5, false);
    a.update(Msg::Health(health));
    a.settle();
    let s = screen(&a);
    assert!(s[0].starts_with(" BUILT-IN ORDER "), "{}", s[0]);
    assert!(
        s[2].starts_with("hub: the hub's file does not validate"),
        "{}",
        s[2]
    );
    let whole = a.model().hub_problems().expect("a banner");
    assert!(
        whole.contains("every worker is given the built-in order"),
        "{whole}"
    );
}

/// A hub whose answer to the worker poll breaks a bound of the API is
/// `HUB ERROR` (issue 28), not `HUB DOWN`: it answers, out of the
/// contract, and the request and the bound are on the status line.
#[test]
fn a_hub_breaking_a_bound_is_hub_error_not_hub_down() {
    use macfleet::tui::model::verdict::Verdict;
    use macfleet::wire::WorkerState;
    let now = t0();
    let (mut a, m0) = app(0, false);
    let mut w = fixture::worker(0, now);
    w.received_at = now;
    w.state = WorkerState::Healthy;
    w.active_agent = Some("opencode".into());
    a.update(Msg::Workers {
        page: fixture::page(vec![w], now, false, 2),
        at: m0,
    });
    a.settle();
    let error = "the hub at http://127.0.0.1:9 broke a bound of the API on GET /v1/summary: over 1 MiB; refused";
    a.update(Msg::OutOfBounds {
        what: macfleet::tui::msg::Fetch::Workers,
        error: error.into(),
        at: m0 + std::time::Duration::from_secs(1),
    });
    a.update(Msg::Tick {
        mono: m0 + std::time::Duration::from_secs(20),
        wall: now,
    });
    a.settle();
    assert_eq!(a.model().verdict(), Some(Verdict::HubError));
    let rows = screen(&a);
    assert!(rows[0].starts_with(" HUB ERROR  macfleet"), "{}", rows[0]);
    assert!(
        !rows.join("\n").contains("disconnected"),
        "{}",
        rows.join("\n")
    );
    assert!(
        rows.join("\n").contains("last known"),
        "{}",
        rows.join("\n")
    );
}
