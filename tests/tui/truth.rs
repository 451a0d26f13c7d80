//! Issue 28's TUI parts: on-call's screens are the truth. A hub replaced
//! at the same address is seen within a poll and said in the header until
//! a key acknowledges it, and `:messages` keeps what the status line said
//! (real `macfleet hub` processes, the binary in a pty); the empty texts
//! of the Failovers view's direction filter (through `update`).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common;
use crate::pty::{self, Pty};
use crate::ui::{app, code, screen, typed};
use crossterm::event::KeyCode;
use macfleet::wire::Role;

const START: Duration = Duration::from_secs(30);

/// Tokens made at run time (no literal secret in a fixture).
fn tokens() -> (String, String) {
    (
        format!("{}{}", "mft_truth_v_", "q".repeat(24)),
        format!("{}{}", "mft_truth_w_", "z".repeat(24)),
    )
}

fn hub_dir() -> tempfile::TempDir {
    let (viewer, worker) = tokens();
    common::hub_dir_of(&[
        ("screen", Role::Viewer, &viewer),
        ("fleet", Role::Worker, &worker),
    ])
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("a free port")
        .local_addr()
        .expect("addr")
        .port()
}

fn start(dir: &Path, port: u16, name: &str) -> pty::Kill {
    pty::hub_on_port(dir, port, &["--heartbeat-interval", "1", "--name", name])
}

/// One heartbeat of `worker` to the hub at `port`.
fn beat(port: u16, worker: &str) {
    let hb = common::Beat::new(worker).wire();
    let c = macfleet::client::Client::new(
        &format!("http://127.0.0.1:{port}"),
        Some(macfleet::client::Token::new(&tokens().1)),
        Default::default(),
    )
    .expect("client");
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(c.heartbeat(&hb))
        .expect("heartbeat accepted");
}

const LINE: &str = "history and log are this hub's";

/// Hub A, the TUI on it; A stops and hub B (the same tokens, another
/// database: another `instance`) starts on the same port. Within one poll
/// the header says another hub answers since when, it stays (10 s, long
/// after the status line's 5 s), `:messages` lists what the status line
/// said, and `Esc` acknowledges the header's line.
#[test]
fn a_replaced_hub_is_seen_within_a_poll_said_until_esc_and_kept_in_messages() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let a_dir = hub_dir();
    let hub_a = start(a_dir.path(), port, "hub-a");
    beat(port, "w-from-a");
    let mut t = Pty::spawn(
        &["--hub", &url, "--read-only"],
        &[("MAC_HUB_TOKEN", &tokens().0)],
    );
    t.wait_for("live", START);
    t.send("2");
    t.wait_for("w-from-a", START);
    // A goes, for long enough that a doubling backoff (1, 2, 4, 8 s…)
    // would wait well past B's start: the TUI retries while B starts.
    drop(hub_a);
    std::thread::sleep(Duration::from_secs(18));
    let b_dir = tempfile::tempdir().expect("tempdir");
    for f in ["hub.toml", "tokens.toml"] {
        std::fs::copy(a_dir.path().join(f), b_dir.path().join(f)).expect("copy");
    }
    let _hub_b = start(b_dir.path(), port, "hub-b");
    let up = Instant::now();
    let s = t.wait_for(LINE, Duration::from_secs(6));
    let seen = up.elapsed();
    assert!(
        seen <= Duration::from_secs(3),
        "another hub seen {seen:?} after it listened (goal: one poll, 2 s):\n{s}"
    );
    let header = s.lines().nth(2).unwrap_or_default().to_string();
    assert!(header.contains("another hub since "), "{s}");
    assert!(header.contains("(Esc: seen)"), "the key is named:\n{s}");
    // Long after the status line's message went, the header keeps it.
    std::thread::sleep(Duration::from_secs(10));
    let s = t.screen();
    assert!(s.contains(LINE), "the header line went by itself:\n{s}");
    assert!(
        !s.contains("another hub answers here"),
        "the status message is still up:\n{s}"
    );
    // What the status line said is kept, with its time.
    t.send(":messages\r");
    let s = t.wait_for("kept of", Duration::from_secs(5));
    assert!(s.contains("another hub answers here (hub-b"), "{s}");
    let said = s
        .lines()
        .find(|l| l.contains("another hub answers here"))
        .unwrap_or_default();
    assert!(
        said.as_bytes().get(2) == Some(&b':') && said.as_bytes().get(5) == Some(&b':'),
        "a time before the message: {said:?}"
    );
    // Esc closes the messages, a second Esc acknowledges the line.
    t.esc();
    let s = t.wait_until("the pane again", Duration::from_secs(5), |s| {
        !s.contains("kept of")
    });
    assert!(s.contains(LINE), "{s}");
    t.esc();
    let s = t.wait_until("the line acknowledged", Duration::from_secs(5), |s| {
        !s.contains(LINE)
    });
    assert!(s.contains("can/run"), "the agents line is back:\n{s}");
}

/// `:messages` over the fixture: every message of the session in order,
/// newest last, each with its time; the ring keeps the last 1,000.
#[test]
fn messages_lists_what_the_status_line_said_newest_last() {
    let (mut a, _) = app(5, false);
    // `x` off the Ladder says where it works; `r` says refetching.
    crate::ui::key(&mut a, '2');
    crate::ui::key(&mut a, 'x');
    crate::ui::key(&mut a, 'r');
    crate::ui::key(&mut a, ':');
    typed(&mut a, "messages");
    code(&mut a, KeyCode::Enter);
    let s = screen(&a);
    let all = s.join("\n");
    assert!(all.contains("messages: 2 kept of 2 said"), "{all}");
    let drill = s.iter().position(|l| l.contains("x drills on the Ladder"));
    let refetch = s.iter().position(|l| l.contains("refetching"));
    assert!(
        drill.is_some() && refetch.is_some() && drill < refetch,
        "newest last:\n{all}"
    );
    code(&mut a, KeyCode::Esc);
    assert!(!screen(&a).join("\n").contains("kept of"));
}

/// `/dir:up` on the Failovers view with no recovery held says `no
/// recovery matches`, `/dir:down` with no failover `no failover matches`.
#[test]
fn a_direction_filter_with_no_match_names_what_it_shows() {
    let (mut a, _) = app(5, false);
    crate::ui::key(&mut a, '3');
    crate::ui::key(&mut a, '/');
    typed(&mut a, "dir:up");
    code(&mut a, KeyCode::Enter);
    let s = screen(&a).join("\n");
    assert!(s.contains("no recovery matches /dir:up"), "{s}");
    assert!(!s.contains("no failover matches"), "{s}");
    crate::ui::key(&mut a, '/');
    code(&mut a, KeyCode::Backspace);
    code(&mut a, KeyCode::Backspace);
    typed(&mut a, "down worker:nobody");
    code(&mut a, KeyCode::Enter);
    let s = screen(&a).join("\n");
    assert!(
        s.contains("no failover matches /dir:down worker:nobody"),
        "{s}"
    );
}

/// Hub and TUI; the hub's file removed under it: the hub's health says
/// `CONFIG INVALID` (it cannot read or replace its file) while the list
/// in force still validates. The TUI takes that word from the hub, not
/// only its `invalid` field, which stays empty (it showed `OK`).
#[test]
fn the_word_only_the_hub_can_know_is_taken_from_its_health() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let dir = hub_dir();
    let _hub = start(dir.path(), port, "hub-w");
    let c = macfleet::client::Client::new(
        &format!("http://127.0.0.1:{port}"),
        Some(macfleet::client::Token::new(&tokens().1)),
        Default::default(),
    )
    .expect("client");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let hb = common::Beat::new("w-on-top")
        .active(Some("opencode"))
        .wire();
    rt.block_on(c.heartbeat(&hb)).expect("heartbeat accepted");
    let mut t = Pty::spawn(
        &["--hub", &url, "--read-only"],
        &[("MAC_HUB_TOKEN", &tokens().0)],
    );
    t.wait_for("live", START);
    t.send("2");
    let s = t.wait_for("w-on-top", START);
    assert!(!s.starts_with(" CONFIG INVALID "), "{s}");
    std::fs::remove_file(dir.path().join("hub.toml")).expect("rm hub.toml");
    let s = t.wait_until("CONFIG INVALID", Duration::from_secs(15), |s| {
        s.starts_with(" CONFIG INVALID ")
    });
    // The hub says so in its health's word; its `invalid` field is empty.
    let h = rt.block_on(c.health_report()).expect("health");
    assert_eq!(h.word.as_deref(), Some("CONFIG INVALID"), "{h:?}");
    assert!(
        h.config.as_ref().is_none_or(|c| c.invalid.is_none()),
        "{h:?}\n{s}"
    );
}

/// The Ladder's RUN and AWAY NOW, and the header's `can/run`, from one
/// moment: eight of ten workers fail over opencode → pi 200 ms after the
/// last count; until the next count (a second after the last) the screen
/// shows the last moment whole, then the new one whole. RUN opencode +
/// AWAY NOW opencode is every live worker (opencode is rank 0 of every
/// list) on every frame; the header's opencode figures are the row's.
#[test]
fn run_and_away_now_come_from_one_moment() {
    use macfleet::tui::fixture::{self, t0};
    use macfleet::tui::msg::Msg;
    use macfleet::tui::panes::ladder::Ladder;
    let now = t0();
    let (mut a, m0) = app(0, false);
    let worker = |i: usize, on_pi: bool| {
        let mut w = fixture::worker(i, now);
        w.received_at = now;
        w.state = macfleet::wire::WorkerState::Healthy;
        w.agents = vec!["opencode".into(), "pi".into()];
        w.active_agent = Some(if on_pi { "pi" } else { "opencode" }.into());
        w.last_failover = on_pi.then(|| {
            let mut f = fixture::failover(i, now, false);
            f.from = "opencode".into();
            f.to = Some("pi".into());
            f
        });
        w
    };
    crate::ui::key(&mut a, '1');
    a.update(Msg::Workers {
        page: fixture::page((0..10).map(|i| worker(i, false)).collect(), now, false, 2),
        at: m0 + Duration::from_secs(5),
    });
    a.settle();
    let check = |a: &macfleet::tui::app::App, run: usize, away: u32| {
        let l = a.pane_as::<Ladder>();
        let c = l.agent(a.model(), "opencode");
        let held = l.away_now.get("opencode").map_or(0, |n| n.total());
        let s = screen(a);
        assert_eq!(
            (c.active, held),
            (run, away),
            "RUN and AWAY NOW of opencode:\n{}",
            s.join("\n")
        );
        let want = format!("opencode {}/{}", c.capable, c.active);
        assert!(
            s[2].contains(&want),
            "the header's can/run {want}: {}",
            s[2]
        );
    };
    check(&a, 10, 0);
    a.update(Msg::Workers {
        page: fixture::page((0..8).map(|i| worker(i, true)).collect(), now, true, 3),
        at: m0 + Duration::from_millis(5_200),
    });
    a.settle();
    // Within the second: the last moment, whole (RUN 10, AWAY NOW 0).
    check(&a, 10, 0);
    a.update(Msg::Tick {
        mono: m0 + Duration::from_millis(6_100),
        wall: now,
    });
    a.settle();
    check(&a, 2, 8);
}

/// A hub whose summary breaks a bound of the API before anything was
/// fetched: `HUB ERROR`, and the fleet line says `nothing fetched yet`
/// (not `last known 0s ago: … 0 workers`, frozen). The workers page still
/// answers: its rows are shown, the word stays `HUB ERROR` (the summary
/// still breaks it), the figures are labelled last known and their age
/// ticks; the summary answering within its bounds ends it.
#[test]
fn hub_error_says_nothing_fetched_yet_and_a_broken_summary_does_not_blank_the_rest() {
    use macfleet::tui::app::App;
    use macfleet::tui::fixture::{self, t0};
    use macfleet::tui::model::verdict::Verdict;
    use macfleet::tui::msg::{Fetch, Msg};
    use macfleet::tui::ui::theme::Theme;
    let now = t0();
    let m0 = Instant::now();
    let mut a = App::new("http://127.0.0.1:9", false, Theme::new(false, false), m0);
    a.update(Msg::Resize(120, 40));
    let error = "the hub at http://127.0.0.1:9 broke a bound of the API on GET /v1/summary: over 1 MiB; refused";
    a.update(Msg::OutOfBounds {
        what: Fetch::Summary,
        error: error.into(),
        at: m0 + Duration::from_secs(1),
    });
    a.update(Msg::Tick {
        mono: m0 + Duration::from_secs(20),
        wall: now,
    });
    a.settle();
    assert_eq!(a.model().verdict(), Some(Verdict::HubError));
    let s = screen(&a);
    assert!(s[1].contains("nothing fetched yet"), "{}", s[1]);
    assert!(!s[1].contains("0 workers"), "{}", s[1]);
    assert!(!s[1].contains("last known"), "{}", s[1]);
    // The workers page answers (the poller goes on past the summary).
    let mut w = fixture::worker(0, now);
    w.received_at = now;
    w.state = macfleet::wire::WorkerState::Healthy;
    a.update(Msg::Workers {
        page: fixture::page(vec![w], now, false, 2),
        at: m0 + Duration::from_secs(21),
    });
    a.update(Msg::Tick {
        mono: m0 + Duration::from_secs(25),
        wall: now,
    });
    a.settle();
    assert_eq!(a.model().verdict(), Some(Verdict::HubError));
    let s = screen(&a);
    assert!(s[1].contains("last known 4s ago: "), "{}", s[1]);
    assert!(s[1].contains("1 workers"), "{}", s[1]);
    assert!(s.join("\n").contains("w-00000"), "{}", s.join("\n"));
    let all = s.join("\n");
    assert!(all.contains("GET /v1/summary: over 1 MiB"), "{all}");
    a.update(Msg::Summary {
        summary: Box::new(fixture::summary(1, now)),
        at: m0 + Duration::from_secs(26),
        polled: true,
    });
    a.settle();
    assert_ne!(a.model().verdict(), Some(Verdict::HubError));
}

/// A proxy in front of the hub at `upstream` that answers `GET
/// /v1/summary` with an endless body and passes everything else on (each
/// request on a connection of its own: `Connection: close` is added).
/// Threads, bounded: each endless answer stops after 20 s or when the
/// client hangs up.
fn endless_summary_proxy(upstream: std::net::SocketAddr) -> std::net::SocketAddr {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr");
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut b = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 65_536 {
                    match c.read(&mut b) {
                        Ok(1) => head.push(b[0]),
                        _ => return,
                    }
                }
                if head.starts_with(b"GET /v1/summary") {
                    let _ = c.write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n",
                    );
                    let unit = format!("{:x}\r\n{}\r\n", 4096, "[".repeat(4096));
                    let end = Instant::now() + Duration::from_secs(20);
                    while Instant::now() < end && c.write_all(unit.as_bytes()).is_ok() {}
                    return;
                }
                let Ok(mut up) = std::net::TcpStream::connect(upstream) else {
                    return;
                };
                let text =
                    String::from_utf8_lossy(&head).replacen("\r\n", "\r\nConnection: close\r\n", 1);
                if up.write_all(text.as_bytes()).is_err() {
                    return;
                }
                let mut back = up.try_clone().expect("clone");
                let mut to = c.try_clone().expect("clone");
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut back, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Both);
                });
                let _ = std::io::copy(&mut c, &mut up);
            });
        }
    });
    addr
}

/// The binary against a real hub behind a proxy whose `GET /v1/summary`
/// never ends: `HUB ERROR`, and the workers, their rows and the failover
/// log still come (the poller goes on past the broken summary; it blanked
/// them), labelled last known.
#[test]
fn a_broken_summary_is_hub_error_and_the_other_panes_still_fill() {
    let port = free_port();
    let dir = hub_dir();
    let _hub = start(dir.path(), port, "hub-e");
    beat(port, "w-behind-proxy");
    let proxy = endless_summary_proxy(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
    let url = format!("http://{proxy}");
    let mut t = Pty::spawn(
        &["--hub", &url, "--read-only"],
        &[("MAC_HUB_TOKEN", &tokens().0)],
    );
    t.send("2");
    t.wait_for("w-behind-proxy", START);
    let s = t.wait_until("HUB ERROR", START, |s| s.starts_with(" HUB ERROR "));
    let fleet = s.lines().nth(1).unwrap_or_default();
    assert!(fleet.contains("hub broke the API"), "{s}");
    assert!(
        fleet.contains("last known") && fleet.contains("1 workers"),
        "{s}"
    );
    assert!(s.contains("w-behind-proxy"), "{s}");
}

/// A hub that answers with no worker reported: the word is `NO WORKERS`
/// (the domain's, issue 28), not none and not `OK`.
#[test]
fn an_empty_fleet_that_answers_is_no_workers() {
    use macfleet::tui::app::App;
    use macfleet::tui::fixture::{self, t0};
    use macfleet::tui::msg::Msg;
    use macfleet::tui::ui::theme::Theme;
    let m0 = Instant::now();
    let mut a = App::new("http://127.0.0.1:9", false, Theme::new(false, false), m0);
    a.update(Msg::Resize(120, 40));
    a.update(Msg::Workers {
        page: fixture::page(vec![], t0(), false, 1),
        at: m0,
    });
    a.settle();
    let s = screen(&a);
    assert!(s[0].starts_with(" NO WORKERS "), "{}", s[0]);
}

/// A fixture worker heard now, healthy, on `agent` of opencode, pi,
/// claude, codex, every rung capable, no failover.
fn on_now(i: usize, id: &str, agent: &str) -> macfleet::wire::WorkerView {
    use macfleet::tui::fixture::{self, t0};
    let mut w = fixture::worker(i, t0());
    w.worker = id.into();
    w.received_at = t0();
    w.sent_at = t0();
    w.state = macfleet::wire::WorkerState::Healthy;
    w.active_agent = Some(agent.into());
    for c in w.capabilities.values_mut() {
        *c = macfleet::wire::Capability {
            binary: true,
            token: true,
            preflight: macfleet::wire::Preflight::Ok,
        };
    }
    w.last_failover = None;
    w
}

/// A page of `workers` (a full one), then the Workers view on screen.
fn workers_app(workers: Vec<macfleet::wire::WorkerView>) -> macfleet::tui::app::App {
    use macfleet::tui::fixture::{self, t0};
    let (mut a, m0) = app(0, false);
    a.update(macfleet::tui::msg::Msg::Resize(200, 50));
    a.update(macfleet::tui::msg::Msg::Workers {
        page: fixture::page(workers, t0(), false, 2),
        at: m0,
    });
    a.settle();
    crate::ui::key(&mut a, '2');
    a
}

/// The worker's detail (`:id` Enter), as text, closed again.
fn detail(a: &mut macfleet::tui::app::App, id: &str) -> String {
    crate::ui::key(a, ':');
    typed(a, id);
    code(a, KeyCode::Enter);
    let s = screen(a).join("\n");
    code(a, KeyCode::Esc);
    s
}

/// A failover its worker dates 23 h ahead, received 10 minutes ago, is
/// ordered and aged by the hub's receipt (the earlier of the two, as the
/// hub and `get workers` do): after a failover a minute old in the
/// urgency order, `10m` in LAST FAILOVER and the detail, not `0s`; the
/// detail still shows the worker's claim as evidence.
#[test]
fn a_failover_claimed_ahead_is_ordered_and_aged_by_its_receipt() {
    use chrono::TimeDelta;
    use macfleet::tui::fixture::{self, t0};
    let now = t0();
    let failed = |i: usize, id: &str, at, received| {
        let mut w = on_now(i, id, "claude");
        let mut f = fixture::failover(i, at, false);
        f.id = format!("{id}-f");
        w.last_failover = Some(f);
        w.last_failover_received_at = Some(received);
        w
    };
    let ahead = failed(
        1,
        "w-ahead",
        now + TimeDelta::hours(23),
        now - TimeDelta::minutes(10),
    );
    let recent = failed(
        2,
        "w-recent",
        now - TimeDelta::minutes(1),
        now - TimeDelta::minutes(1),
    );
    let mut a = workers_app(vec![ahead, recent]);
    let s = screen(&a);
    let row = |id: &str| s.iter().position(|l| l.contains(id)).expect(id);
    assert!(
        row("w-recent") < row("w-ahead"),
        "the newer failover first:\n{}",
        s.join("\n")
    );
    let line = &s[row("w-ahead")];
    assert!(
        line.trim_end().ends_with(" 10m"),
        "aged by its receipt: {line}"
    );
    let d = detail(&mut a, "w-ahead");
    let recent = d
        .lines()
        .skip_while(|l| !l.contains("recent failovers"))
        .nth(1)
        .unwrap_or_default();
    let recent = recent.trim_start_matches(['│', '|', ' ']);
    assert!(recent.starts_with("10m "), "{recent}\n{d}");
}

/// A worker on the fleet's revision reporting another list is out of
/// sync as the hub says: counted, `list` in SYNC (as `get workers`), and
/// its detail names what it reports.
#[test]
fn a_worker_on_the_revision_with_another_list_is_shown_out_of_sync() {
    let mut other = on_now(1, "w-other-list", "cursor");
    other.agents = vec!["cursor".into(), "claude".into()];
    other.in_sync = false;
    let mut a = workers_app(vec![on_now(2, "w-same", "opencode"), other]);
    assert_eq!(a.model().fleet.agg.out_of_sync, 1);
    let s = screen(&a);
    let line = s.iter().find(|l| l.contains("w-other-list")).expect("row");
    assert!(line.contains(" list "), "SYNC says list: {line}");
    let d = detail(&mut a, "w-other-list");
    assert!(
        d.contains("r42 (out of sync: on the fleet's revision with another list: cursor, claude)"),
        "{d}"
    );
}

/// The detail's headroom in `get worker`'s words: which rungs below its
/// own are held off by a recent failover, which it cannot run.
#[test]
fn the_detail_says_why_headroom_is_short_as_get_worker_does() {
    use chrono::TimeDelta;
    use macfleet::tui::fixture::t0;
    use macfleet::wire::{CauseKind, HeldOff};
    let mut w = on_now(1, "w-short", "pi");
    w.headroom = Some(0);
    w.held_off = vec![HeldOff {
        agent: "claude".into(),
        at: t0() - TimeDelta::minutes(2),
        kind: CauseKind::RateLimited,
    }];
    w.capabilities.get_mut("codex").expect("codex").binary = false;
    let want = macfleet::text::headroom_text(t0(), &w).expect("said");
    assert_eq!(
        want,
        "0: one failure from no route (held off: #2 claude rate_limited 2m ago; \
         cannot run: #3 codex missing_binary)"
    );
    let mut a = workers_app(vec![w]);
    let d = detail(&mut a, "w-short");
    assert!(d.contains(&format!("headroom    {want}")), "{d}");
}

/// A failover the hub received long after its time (the demo's
/// back-filled hour) begins no hold-off the records can vouch for: the
/// why line says `since at least …`, as `get worker` does.
#[test]
fn a_why_line_from_a_back_filled_failover_says_since_at_least() {
    use chrono::TimeDelta;
    use macfleet::tui::fixture::{self, t0};
    use macfleet::wire::{FailoverRecord, FailoversPage};
    let mut a = workers_app(vec![on_now(1, "w-back", "pi")]);
    let mut f = fixture::failover(1, t0() - TimeDelta::minutes(56), false);
    f.to = Some("pi".into());
    a.update(macfleet::tui::msg::Msg::Failovers {
        page: FailoversPage {
            events: vec![FailoverRecord {
                seq: 1,
                worker: "w-back".into(),
                host: "h".into(),
                received_at: t0(),
                failover: f,
            }],
            next: 1,
            oldest: 1,
        },
        fresh: true,
    });
    a.settle();
    let d = detail(&mut a, "w-back");
    let why = d
        .lines()
        .find(|l| l.contains("#0  opencode"))
        .unwrap_or_default();
    assert!(why.contains("since at least "), "{why}\n{d}");
}
