//! Issue #21's TUI through `update` and the pure views: recoveries beside
//! failovers (↑ and ↓, interleaved by time, `dir:` filtered), the worker's
//! `back on … since …, after … on …`, headroom on the fleet line, the
//! Ladder and the detail, the drill (`x`), and #17's pool and clock skew
//! in the detail.

use chrono::TimeDelta;
use crossterm::event::KeyCode;
use macfleet::tui::app::{App, Detail};
use macfleet::tui::fixture::{self, t0};
use macfleet::tui::msg::Msg;
use macfleet::tui::panes::failovers::{Failovers, Row};
use macfleet::wire::{RecoveriesPage, RecoveryRecord, WorkerState, WorkerView};

use crate::ui;
use ui::{app, code, key, screen, typed};

fn recovery(seq: u64, worker: &str, secs_ago: i64, from: Option<&str>, to: &str) -> RecoveryRecord {
    RecoveryRecord {
        seq,
        worker: worker.into(),
        host: "gpu-node-001".into(),
        at: t0() - TimeDelta::seconds(secs_ago),
        from: from.map(str::to_string),
        to: to.into(),
        held_off_s: 840,
    }
}

fn recoveries(a: &mut App, events: Vec<RecoveryRecord>) {
    let next = events.iter().map(|r| r.seq).max().unwrap_or(0);
    a.update(Msg::Recoveries {
        page: RecoveriesPage {
            events,
            next,
            oldest: 1,
        },
        fresh: true,
    });
    a.settle();
}

fn rows(a: &App) -> Vec<Row> {
    a.pane_as::<Failovers>().list.rows.clone()
}

/// The fixture's newest failovers are seq 40 (received 88 s ago) and 39
/// (178 s ago): a recovery 120 s ago goes between them, one 10 s ago
/// first; each row marked, the recovery with where it came back from and
/// after how long.
#[test]
fn recoveries_show_among_failovers_by_time_marked_up_and_down() {
    let (mut a, _) = app(60, false);
    recoveries(
        &mut a,
        vec![
            recovery(1, "w-00001", 120, Some("pi"), "opencode"),
            recovery(2, "w-00002", 10, None, "claude"),
        ],
    );
    key(&mut a, '3');
    let r = rows(&a);
    assert_eq!(
        &r[..4],
        [
            Row::Recovery(2),
            Row::Failover(40),
            Row::Recovery(1),
            Row::Failover(39)
        ],
        "newest first, by the hub's time"
    );
    assert_eq!(r.len(), 42);
    let s = screen(&a);
    let up = s
        .iter()
        .find(|l| l.contains("w-00001"))
        .expect("the recovery's row");
    assert!(up.starts_with("↑ 2m"), "{up}");
    for want in ["pi→opencode", "recovered", "host gpu-node-001 after 14m"] {
        assert!(up.contains(want), "{want:?} in {up}");
    }
    let none = s.iter().find(|l| l.contains("w-00002")).expect("row");
    assert!(none.contains("(none)→claude"), "{none}");
    let down = s.iter().find(|l| l.contains("w-00195")).expect("seq 40");
    assert!(down.starts_with("↓ 1m"), "{down}");
    // S turns it: oldest first, the recoveries still in their place.
    key(&mut a, 'S');
    let r = rows(&a);
    assert_eq!(r.last(), Some(&Row::Recovery(2)));
    assert_eq!(r[r.len() - 3], Row::Recovery(1));
    // Enter on a recovery opens it, then its worker; `v` the hub's record;
    // `f` the worker's failovers.
    key(&mut a, 'S');
    code(&mut a, KeyCode::Enter);
    assert_eq!(a.overlay().detail, Some(Detail::Recovery(2)));
    let s = screen(&a).join("\n");
    for want in [
        "recovery 2 · worker w-00002",
        "from        no route",
        "to          claude",
        "held off    14m (840 s",
        "its worker w-00002",
    ] {
        assert!(s.contains(want), "{want:?} in\n{s}");
    }
    key(&mut a, 'v');
    let s = screen(&a).join("\n");
    assert!(s.contains("\"held_off_s\": 840"), "{s}");
    key(&mut a, 'v');
    key(&mut a, 'f');
    assert_eq!(a.pane_as::<Failovers>().list.filter.text, "worker:w-00002$");
}

/// `dir:up` keeps the recoveries, `dir:down` the failovers, `!dir:up`
/// too; other fields hold for both; the help says so.
#[test]
fn the_dir_field_filters_one_way() {
    let (mut a, _) = app(60, false);
    recoveries(
        &mut a,
        vec![
            recovery(1, "w-00001", 120, Some("pi"), "opencode"),
            recovery(2, "w-00002", 10, None, "claude"),
        ],
    );
    key(&mut a, '3');
    let filter = |a: &mut App, f: &str| {
        key(a, '/');
        ui::ctrl(a, 'u');
        typed(a, f);
        code(a, KeyCode::Enter);
        rows(a)
    };
    assert_eq!(
        filter(&mut a, "dir:up"),
        [Row::Recovery(2), Row::Recovery(1)]
    );
    let down = filter(&mut a, "dir:down");
    assert_eq!(down.len(), 40);
    assert!(down.iter().all(|r| matches!(r, Row::Failover(_))));
    assert_eq!(filter(&mut a, "!dir:up"), down);
    assert_eq!(filter(&mut a, "dir:up to:claude"), [Row::Recovery(2)]);
    assert_eq!(filter(&mut a, "w-00001"), [Row::Recovery(1)]);
    let s = screen(&a).join("\n");
    assert!(s.contains("w-00001"), "{s}");
    // A cause names failovers only: a recovery has none.
    assert!(
        filter(&mut a, "cause:auth")
            .iter()
            .all(|r| matches!(r, Row::Failover(_)))
    );
    filter(&mut a, "dir:up w-0404");
    let s = screen(&a).join("\n");
    assert!(
        s.contains("no recovery matches /dir:up w-0404 (w-0404 emptied it)"),
        "{s}"
    );
    key(&mut a, '?');
    let help = ui::help_lines(&a).join("\n");
    assert!(help.contains("status dir"), "{help}");
    assert!(help.contains("dir:up ↑ recoveries, dir:down ↓"), "{help}");
}

fn on(i: usize, agent: Option<&str>, headroom: Option<u32>) -> WorkerView {
    let now = t0();
    let mut w = fixture::worker(i, now);
    w.received_at = now;
    w.sent_at = now;
    w.state = WorkerState::Healthy;
    w.active_agent = agent.map(str::to_string);
    w.headroom = headroom;
    w
}

fn page(a: &mut App, workers: Vec<WorkerView>) {
    let m = a.model().mono_now;
    a.update(Msg::Workers {
        page: fixture::page(workers, t0(), true, 9),
        at: m,
    });
    a.settle();
}

fn detail_of(a: &mut App, id: &str) -> String {
    key(a, ':');
    typed(a, id);
    code(a, KeyCode::Enter);
    let s = screen(a).join("\n");
    code(a, KeyCode::Esc);
    s
}

/// While it stands on the rung it came back to: `back on opencode since
/// 15:02:05, after 14m on pi`; a failover after it, or another rung, and
/// the line goes.
#[test]
fn the_worker_detail_says_where_it_is_back_on_while_it_stays() {
    let (mut a, _) = app(10, false);
    page(&mut a, vec![on(1, Some("opencode"), Some(2))]);
    recoveries(
        &mut a,
        vec![recovery(1, "w-00001", 120, Some("pi"), "opencode")],
    );
    let s = detail_of(&mut a, "w-00001");
    assert!(
        s.contains("recovered   back on opencode since 15:02:05, after 14m on pi"),
        "{s}"
    );
    // Moved on to pi again (the failover not yet in): no longer on that rung.
    page(&mut a, vec![on(1, Some("pi"), Some(1))]);
    let s = detail_of(&mut a, "w-00001");
    assert!(!s.contains("back on"), "{s}");
    // Back on opencode, but a failover of it arrived after the recovery.
    page(&mut a, vec![on(1, Some("opencode"), Some(2))]);
    assert!(detail_of(&mut a, "w-00001").contains("back on opencode"));
    let mut f = fixture::failovers(1, t0()).events.remove(0);
    f.seq = 100;
    f.worker = "w-00001".into();
    f.received_at = t0() - TimeDelta::seconds(30);
    a.update(Msg::Failover(f));
    a.settle();
    let s = detail_of(&mut a, "w-00001");
    assert!(!s.contains("back on"), "{s}");
}

/// Healthy workers on a rung with nothing below it are counted on the
/// fleet line and on the Ladder (by rung); a worker with no route is not
/// (it has none already), nor a stale one; the detail says each one's.
#[test]
fn headroom_shows_on_the_fleet_line_the_ladder_and_the_detail() {
    let (mut a, _) = app(0, false);
    let mut stale = on(5, Some("codex"), Some(0));
    stale.state = WorkerState::Stale;
    page(
        &mut a,
        vec![
            on(1, Some("opencode"), Some(0)),
            on(2, Some("pi"), Some(0)),
            on(3, Some("pi"), Some(2)),
            on(4, None, Some(0)),
            stale,
        ],
    );
    let agg = &a.model().fleet.agg;
    assert_eq!((agg.one_failure, agg.healthy_no_route), (2, 1));
    key(&mut a, '1');
    let s = screen(&a);
    assert!(
        s[1].contains("NO ROUTE 1 · 2 one failure from no route · 5 workers"),
        "{}",
        s[1]
    );
    let all = s.join("\n");
    assert!(
        all.contains("2 healthy workers one failure from no route: opencode 1 · pi 1"),
        "{all}"
    );
    let d = detail_of(&mut a, "w-00001");
    assert!(
        d.contains("headroom    0: one failure from no route"),
        "{d}"
    );
    let d = detail_of(&mut a, "w-00003");
    assert!(
        d.contains("headroom    2: 2 rungs below its own it can still run"),
        "{d}"
    );
    assert!(
        !detail_of(&mut a, "w-00004").contains("headroom"),
        "no route: none"
    );
    // An older hub says nothing of headroom: nor does the TUI.
    let (mut old, _) = app(0, false);
    page(&mut old, vec![on(1, Some("opencode"), None)]);
    key(&mut old, '1');
    let all = screen(&old).join("\n");
    assert!(!all.contains("one failure"), "{all}");
}

/// The pool the worker belongs to, and its clock when more than a minute
/// off the hub's (either way); nothing within a minute.
#[test]
fn the_worker_detail_names_its_pool_and_a_clock_off_the_hubs() {
    let (mut a, _) = app(0, false);
    let with = |i, skew| {
        let mut w = on(i, Some("opencode"), Some(1));
        w.pool = Some("gpu-fleet".into());
        w.clock_skew_s = Some(skew);
        w
    };
    page(&mut a, vec![with(1, 600), with(2, -180), with(3, 59)]);
    let d = detail_of(&mut a, "w-00001");
    assert!(d.contains("pool        gpu-fleet"), "{d}");
    assert!(d.contains("clock       10m ahead of the hub"), "{d}");
    assert!(detail_of(&mut a, "w-00002").contains("clock       3m behind the hub"));
    let d = detail_of(&mut a, "w-00003");
    assert!(
        d.contains("pool        gpu-fleet") && !d.contains("clock "),
        "{d}"
    );
}

/// `x` on the Ladder marks the selected rung down, in a read-only session
/// too (nothing is written: no effect at all); the RUN column and the line
/// under the rows show the drill's projection, the same as `plan::drill`
/// over the wire workers (what `macfleet agents drill` prints); the top
/// line says a drill is shown; `x` again clears it.
#[test]
fn x_drills_a_rung_down_and_writes_nothing() {
    let (mut a, _) = app(60, false);
    key(&mut a, '1');
    assert_eq!(
        a.pane().selected(a.model()),
        Some(Detail::Agent("opencode".into()))
    );
    let fx = key(&mut a, 'x');
    assert!(fx.is_empty(), "{fx:?}");
    a.settle();
    assert_eq!(a.model().drill, ["opencode"]);
    let wire: Vec<WorkerView> = a.model().fleet.iter().map(|(_, e)| e.to_wire()).collect();
    let list = a.model().config.agents.clone();
    let cli = macfleet::plan::drill(&wire, &list, &["opencode".to_string()]);
    let p = a.model().drill_projection.clone().expect("a projection");
    assert_eq!(p, cli);
    assert!(p.change_rung > 0 && p.moves_workers(), "{p:?}");
    let s = screen(&a);
    assert!(
        s[0].contains("DRILL opencode down (nothing written)"),
        "{}",
        s[0]
    );
    let rung = |agent: &str| p.rungs.iter().find(|r| r.agent == agent).expect("rung");
    let row = s
        .iter()
        .find(|l| l.contains("opencode (down)"))
        .expect("the row");
    let want = format!("{}→{}", rung("opencode").today, rung("opencode").projected);
    assert!(row.contains(&want), "{want} in {row}");
    let all = s.join("\n");
    let want = format!(
        "drill: opencode down · {} of {} healthy workers change rung · no route {}→{}",
        p.change_rung, p.healthy, p.no_route_today, p.no_route
    );
    assert!(all.contains(&want), "{want:?} in\n{all}");
    assert!(all.contains("nothing is written"), "{all}");
    // A second rung: both down.
    key(&mut a, 'j');
    key(&mut a, 'x');
    a.settle();
    assert_eq!(a.model().drill, ["opencode", "pi"]);
    let both = macfleet::plan::drill(&wire, &list, &["opencode".into(), "pi".into()]);
    assert_eq!(a.model().drill_projection.as_ref(), Some(&both));
    // Again on each: cleared, the top line back.
    key(&mut a, 'x');
    key(&mut a, 'k');
    key(&mut a, 'x');
    a.settle();
    assert!(a.model().drill.is_empty() && a.model().drill_projection.is_none());
    let s = screen(&a);
    assert!(!s[0].contains("DRILL"), "{}", s[0]);
    assert!(!s.join("\n").contains("(down)"));
    // Elsewhere `x` says where it works.
    key(&mut a, '2');
    key(&mut a, 'x');
    assert!(a.model().drill.is_empty());
    let st = a.status().map(|s| s.text.clone()).unwrap_or_default();
    assert!(st.contains("x drills on the Ladder"), "{st}");
    // The help and the hints name it.
    key(&mut a, '1');
    assert!(ui::help_bindings(&a).iter().any(|b| b.label == "x"));
    let last = screen(&a).last().cloned().unwrap_or_default();
    assert!(last.contains("x drill"), "{last}");
}

/// A heartbeat of `worker` on the test hub's list [opencode, pi, claude],
/// standing on `active`, every agent runnable.
fn beat(worker: &str, rev: &str, active: &str, failovers: serde_json::Value) -> serde_json::Value {
    crate::common::Beat::new(worker)
        .own_host()
        .rev(Some(rev))
        .list(&["opencode", "pi", "claude"])
        .active(Some(active))
        .failovers(failovers)
        .json()
}

/// The real binary in a pty on a real hub: a worker fails over from
/// opencode to pi (14 minutes ago), the Failovers view shows it `↓`; its
/// next heartbeat is back on opencode, the hub records a recovery, and
/// without a key press the view shows it `↑` above the failover
/// (`pi→opencode recovered … after 14m`, from the `recovery` event: the
/// polls are stretched to a minute); Enter
/// on it opens it and its worker, which says where it is back on. A dashboard
/// started afterwards has it from the start.
#[test]
fn a_worker_back_up_shows_as_a_recovery_and_in_its_detail_in_the_binary() {
    use crate::common::TestHub;
    use std::time::Duration;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let h = rt.block_on(TestHub::start_with(
        "[fleet]\nMAC_CODING_AGENTS = [\"opencode\", \"pi\", \"claude\"]\n",
        |_| {},
    ));
    let rev = rt
        .block_on(h.client(&h.viewer).config())
        .expect("config")
        .revision;
    let post = |body: serde_json::Value| {
        let hb: macfleet::wire::Heartbeat = serde_json::from_value(body).expect("heartbeat");
        rt.block_on(h.client(&h.worker).heartbeat(&hb))
            .expect("accepted");
    };
    let away = serde_json::json!([{
        "id": "w-up-1", "at": crate::common::ago(840), "from": "opencode", "to": "pi",
        "cause": {"kind": "rate_limited", "status": 429, "source": "hub_router"}
    }]);
    post(beat("w-up", &rev, "pi", away));
    // Polls stretched to a minute: after the first round, only the event
    // stream can bring the recovery.
    let mut t = crate::pty::Pty::spawn(
        &["--hub", &h.url()],
        &[
            ("MAC_HUB_TOKEN", &h.viewer),
            ("MACFLEET_TEST_QUIET_MS", "60000"),
        ],
    );
    t.wait_for("READ-ONLY", Duration::from_secs(30));
    t.send("3");
    t.wait_for("opencode→pi", Duration::from_secs(15));
    t.wait_until("the stream `live`", Duration::from_secs(15), |s| {
        s.lines().next().is_some_and(|l| l.contains("live"))
    });
    // No key press from here on: the recovery comes by the event stream.
    post(beat("w-up", &rev, "opencode", serde_json::json!([])));
    let s = t.wait_for("recovered", Duration::from_secs(15));
    let rows: Vec<&str> = s.lines().filter(|l| l.contains("w-up")).collect();
    assert_eq!(rows.len(), 2, "{s}");
    assert!(rows[0].starts_with("↑ "), "the recovery first: {s}");
    for want in ["pi→opencode", "recovered", "host host-w-up after 14m"] {
        assert!(rows[0].contains(want), "{want:?} in {}", rows[0]);
    }
    assert!(
        rows[1].starts_with("↓ ") && rows[1].contains("opencode→pi"),
        "{s}"
    );
    t.send("\r");
    let d = t.wait_for("back on opencode since", Duration::from_secs(10));
    assert!(d.contains(", after 14m on pi"), "{d}");
    // The filter's `dir:` keeps one way.
    t.esc();
    t.send("/dir:down\r");
    let s = t.wait_until("only the failover", Duration::from_secs(10), |s| {
        !s.contains("recovered") && s.contains("opencode→pi")
    });
    assert!(s.contains("dir:down"), "{s}");
    drop(t);
    // A dashboard started after it fetches the log at start
    // (`GET /v1/recoveries`: the stream does not replay it).
    let mut t = crate::pty::Pty::spawn(
        &["--hub", &h.url()],
        &[
            ("MAC_HUB_TOKEN", &h.viewer),
            ("MACFLEET_TEST_QUIET_MS", "60000"),
        ],
    );
    t.wait_for("READ-ONLY", Duration::from_secs(30));
    t.send("3");
    let s = t.wait_for("recovered", Duration::from_secs(15));
    assert!(s.contains("pi→opencode"), "{s}");
}
