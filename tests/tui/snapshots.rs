//! Every view at 80x24 and 120x40, with a fixed clock and a fixture fleet,
//! as insta snapshots of a ratatui TestBackend; plus style assertions where
//! styles carry meaning.

use crossterm::event::KeyCode;
use macfleet::tui::app::App;
use macfleet::tui::fixture;
use macfleet::tui::msg::Msg;
use macfleet::tui::panes::workers::Workers;
use macfleet::tui::ui::theme::Theme;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

use crate::ui;
use ui::{code, key};

const SIZES: [(u16, u16); 2] = [(80, 24), (120, 40)];

fn color() -> Theme {
    Theme::new(false, false)
}

fn render(app: &mut App) -> Terminal<TestBackend> {
    app.settle();
    let mut t = Terminal::new(TestBackend::new(app.size().0, app.size().1)).expect("test terminal");
    t.draw(|f| app.draw(f.buffer_mut())).expect("draw");
    t
}

fn buffer(app: &mut App) -> Buffer {
    render(app).backend().buffer().clone()
}

fn snap<R>(name: &str, setup: impl Fn(&mut App) -> R, theme: Theme, can_write: bool) {
    for (w, h) in SIZES {
        let (mut app, _) = fixture::app(60, can_write, theme, w, h);
        setup(&mut app);
        let t = render(&mut app);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), t.backend());
    }
}

#[test]
fn ladder_view() {
    snap("ladder", |a| key(a, '1'), color(), true);
}

#[test]
fn workers_view() {
    snap("workers", |a| key(a, '2'), color(), false);
}

#[test]
fn failovers_view() {
    snap("failovers", |a| key(a, '3'), color(), false);
}

#[test]
fn history_view() {
    snap("history", |a| key(a, '4'), color(), true);
}

#[test]
fn worker_detail() {
    snap(
        "worker_detail",
        |a| {
            key(a, '2');
            code(a, KeyCode::Enter);
        },
        color(),
        false,
    );
}

#[test]
fn failover_detail() {
    snap(
        "failover_detail",
        |a| {
            key(a, '3');
            code(a, KeyCode::Enter);
        },
        color(),
        false,
    );
}

#[test]
fn help_overlay() {
    snap(
        "help_ladder",
        |a| {
            key(a, '1');
            key(a, '?');
        },
        color(),
        true,
    );
}

#[test]
fn ascii_no_color_workers() {
    snap(
        "ascii_workers_detail",
        |a| {
            key(a, '2');
            key(a, 'j');
            code(a, KeyCode::Enter);
        },
        Theme::new(true, true),
        false,
    );
}

#[test]
fn filter_prompt_and_disconnected() {
    snap(
        "disconnected_filtered",
        |a| {
            key(a, '2');
            key(a, '/');
            for c in "claude".chars() {
                key(a, c);
            }
            code(a, KeyCode::Enter);
            let at = a.model().mono_now + std::time::Duration::from_secs(3);
            a.update(Msg::FetchFailed {
                what: macfleet::tui::msg::Fetch::Workers,
                error: "hub unreachable: connection refused".into(),
                at,
            });
            a.update(Msg::Tick {
                mono: at + std::time::Duration::from_secs(12),
                wall: fixture::t0(),
            });
        },
        color(),
        false,
    );
}

// ---- styles that carry meaning ----

fn find(buf: &Buffer, text: &str) -> Option<(u16, u16)> {
    let a = buf.area;
    for y in 0..a.height {
        let row = ui::row(buf, y);
        if let Some(i) = row.find(text) {
            // Columns are cells; the rows here are ASCII up to the match.
            let x = row[..i].chars().count() as u16;
            return Some((x, y));
        }
    }
    None
}

#[test]
fn no_route_is_red() {
    let (mut app, _) = fixture::app(60, false, color(), 80, 24);
    key(&mut app, '2');
    let buf = buffer(&mut app);
    // The status word (black on red), the fleet line's count and the
    // row's ACTIVE cell.
    let (x, y) = find(&buf, "NO ROUTE 5").expect("status word");
    assert_eq!((x, y), (1, 0));
    assert_eq!(buf[(x, y)].bg, Color::Red);
    let row1: String = ui::row(&buf, 1);
    let (x, y) = (row1.find("NO ROUTE 5").expect("header count") as u16, 1);
    assert_eq!(buf[(x, y)].fg, Color::Red);
    assert!(buf[(x, y)].modifier.contains(Modifier::BOLD));
    // Second row (first is selected): a no-route worker, its cells red;
    // its STATE says `no route`, never `healthy`.
    let y2 = 6;
    let row: String = ui::row(&buf, y2);
    assert!(row.contains("no route (none)"), "{row}");
    assert!(!row.contains("healthy"), "{row}");
    let x2 = row.find("no route").unwrap() as u16;
    assert_eq!(buf[(x2, y2)].fg, Color::Red);
    assert_eq!(buf[(0, y2)].fg, Color::Red, "the worker id is red too");
}

#[test]
fn no_color_has_no_colour_and_reversed_bold_selection() {
    for view in ['1', '2', '3', '4'] {
        let (mut app, _) = fixture::app(60, true, Theme::new(true, false), 120, 40);
        key(&mut app, view);
        key(&mut app, 'j');
        let buf = buffer(&mut app);
        for c in &buf.content {
            assert_eq!(c.fg, Color::Reset, "view {view}: fg colour under NO_COLOR");
            assert_eq!(c.bg, Color::Reset, "view {view}: bg colour under NO_COLOR");
        }
        // The selected row (second data row) is REVERSED|BOLD across its width.
        let y = if view == '3' {
            let body = macfleet::tui::ui::geom::areas(buf.area).body;
            body.y + macfleet::tui::panes::failovers::spark_height(app.model(), body.height) + 2
        } else {
            macfleet::tui::ui::geom::HEADER_ROWS + 2
        };
        for x in [0u16, 10, 60] {
            let m = buf[(x, y)].modifier;
            assert!(
                m.contains(Modifier::REVERSED | Modifier::BOLD),
                "view {view}: cell ({x},{y}) is {m:?}"
            );
        }
        assert!(!buf[(0, y + 1)].modifier.contains(Modifier::REVERSED));
    }
}

#[test]
fn ascii_theme_draws_only_ascii() {
    for setup in ["1", "2", "3", "4", "2\n", "3\n", "1?", "4\n"] {
        let (mut app, _) = fixture::app(60, true, Theme::new(true, true), 120, 40);
        for c in setup.chars() {
            if c == '\n' {
                code(&mut app, KeyCode::Enter);
            } else {
                key(&mut app, c);
            }
        }
        let buf = buffer(&mut app);
        for (i, c) in buf.content.iter().enumerate() {
            assert!(
                c.symbol().is_ascii(),
                "{setup:?}: non-ASCII {:?} at {i}",
                c.symbol()
            );
        }
    }
}

#[test]
fn disconnected_data_stays_greyed_with_its_age() {
    let (mut app, m0) = fixture::app(60, false, color(), 80, 24);
    key(&mut app, '2');
    let at = m0 + std::time::Duration::from_secs(2);
    app.update(Msg::FetchFailed {
        what: macfleet::tui::msg::Fetch::Workers,
        error: "hub unreachable: connection refused".into(),
        at,
    });
    app.update(Msg::Tick {
        mono: at + std::time::Duration::from_secs(12),
        wall: fixture::t0(),
    });
    let buf = buffer(&mut app);
    assert!(find(&buf, "disconnected 12s").is_some());
    assert!(find(&buf, "data 14s old").is_some());
    assert_eq!(
        app.pane_as::<Workers>().list.rows.slots.len(),
        60,
        "last data kept"
    );
    // A data row (not the selected one) is grey, no-route red included.
    let y = macfleet::tui::ui::geom::HEADER_ROWS + 2;
    for x in [0u16, 30, 40] {
        assert_eq!(buf[(x, y)].fg, Color::DarkGray, "({x},{y})");
    }
    // The hub comes back: colour returns.
    let now = fixture::t0() + chrono::TimeDelta::seconds(16);
    app.update(Msg::Workers {
        page: fixture::page(Vec::new(), now, true, 2),
        at: at + std::time::Duration::from_secs(14),
    });
    let buf = buffer(&mut app);
    assert!(find(&buf, "live").is_some());
    assert_ne!(buf[(0, y)].fg, Color::DarkGray);
}

#[test]
fn tiny_and_odd_sizes_never_panic() {
    for (w, h) in [
        (1, 1),
        (2, 2),
        (10, 3),
        (20, 5),
        (40, 10),
        (60, 12),
        (300, 8),
        (81, 25),
    ] {
        for setup in ["1", "2", "3", "4", "2\n", "3\n", "1\n", "4\n", "?", "2/x"] {
            let (mut app, _) = fixture::app(30, true, color(), w, h);
            for c in setup.chars() {
                if c == '\n' {
                    code(&mut app, KeyCode::Enter);
                } else {
                    key(&mut app, c);
                }
            }
            for _ in 0..5 {
                key(&mut app, 'j');
            }
            let _ = buffer(&mut app);
        }
    }
}

#[test]
fn a_row_per_visible_line_and_nothing_past_the_edge_at_80x24() {
    // Every data row of the Workers view is one line: worker ids at column 0.
    let (mut app, _) = fixture::app(60, false, color(), 80, 24);
    let buf = buffer(&mut app);
    let t = app.table_area();
    for y in t.y..t.bottom() {
        assert_eq!(buf[(0, y)].symbol(), "w", "row {y}");
    }
    // The status line's counter ends at the last column.
    assert_eq!(buf[(79, 23)].symbol(), "0");
}

/// The top line's trailing "as NAME" (and hub URL) is shown whole or not at
/// all: a name or URL cut at the edge reads as another one.
#[test]
fn top_line_never_cuts_who_or_where() {
    let top = |w: u16, stale: bool| {
        let (mut app, _) = fixture::app(60, false, color(), w, 24);
        if stale {
            let at = app.model().mono_now + std::time::Duration::from_secs(3);
            app.update(Msg::FetchFailed {
                what: macfleet::tui::msg::Fetch::Workers,
                error: "hub unreachable".into(),
                at,
            });
            app.update(Msg::Tick {
                mono: at + std::time::Duration::from_secs(12),
                wall: fixture::t0(),
            });
        }
        ui::row(&buffer(&mut app), 0)
    };
    // Wide enough: shown whole.
    assert!(top(120, true).contains("as wall"), "{}", top(120, true));
    // The disconnected banner leaves no room at 80 columns: left out whole.
    let narrow = top(80, true);
    assert!(narrow.contains("rev r42"), "{narrow}");
    assert!(!narrow.contains(" as "), "{narrow}");
    assert!(narrow.trim_end().ends_with("rev r42"), "{narrow}");
}

/// `--ascii`: no arrow glyph anywhere, column titles included.
#[test]
fn ascii_screens_hold_no_arrow_glyphs() {
    for (view, title) in [('3', "FROM->TO"), ('4', "BEFORE -> AFTER")] {
        let (mut app, _) = fixture::app(60, false, Theme::new(false, true), 120, 40);
        key(&mut app, view);
        let buf = buffer(&mut app);
        let screen = ui::lines(&buf).join("\n");
        assert!(screen.contains(title), "{screen}");
        assert!(!screen.contains('→'), "{screen}");
    }
}

fn screen_text(buf: &Buffer) -> String {
    ui::text(buf)
}

#[test]
fn cut_text_ends_in_an_ellipsis_and_space_goes_where_the_text_is() {
    let at_80 = |view: char| {
        let (mut app, _) = fixture::app(60, false, color(), 80, 24);
        key(&mut app, view);
        screen_text(&buffer(&mut app))
    };
    // Ladder: CANNOT is kept at 80 columns; the away text is cut with "…".
    let s = at_80('1');
    assert!(s.contains("CANNOT (bin/tok/pf)"), "{s}");
    assert!(s.contains("0/15/5"), "{s}");
    assert!(s.contains("missing_binary 11…"), "{s}");
    assert!(s.contains("rate…"), "{s}");
    // Workers: a 7-character id gets 7 columns; the last failover is whole.
    let s = at_80('2');
    assert!(s.contains("\nw-00005 "), "{s}");
    assert!(s.contains("opencode→claude rate_limited 429 6m"), "{s}");
    // Failovers: every DETAIL cell that is cut says so.
    let s = at_80('3');
    let rows: Vec<&str> = s.lines().filter(|l| l.contains("opencode→")).collect();
    assert!(!rows.is_empty());
    for r in rows {
        assert!(r.trim_end().ends_with('…'), "cut without an ellipsis: {r}");
    }
    // History: the before → after is whole; WHEN gives way for it.
    let s = at_80('4');
    assert!(
        s.contains("pi,opencode,claude,codex → opencode,pi,claude,codex"),
        "{s}"
    );
    // ASCII cuts with "~".
    let (mut app, _) = fixture::app(60, false, Theme::new(true, true), 80, 24);
    key(&mut app, '3');
    let s = screen_text(&buffer(&mut app));
    assert!(s.contains("opencode rout~"), "{s}");
    assert!(!s.contains('…'), "{s}");
}

#[test]
fn ladder_with_a_pending_edit_and_its_projection() {
    snap(
        "ladder_pending",
        |a| {
            key(a, '1');
            key(a, 'J');
            key(a, 'G');
            key(a, 'd');
        },
        color(),
        true,
    );
}

#[test]
fn write_shows_the_documents_diff() {
    snap(
        "ladder_diff",
        |a| {
            key(a, '1');
            key(a, 'J');
            key(a, 'w');
        },
        color(),
        true,
    );
}

#[test]
fn a_412_that_changed_the_list_shows_base_theirs_and_mine() {
    snap(
        "ladder_conflict",
        |a| {
            key(a, '1');
            key(a, 'J');
            key(a, 'w');
            key(a, 'y');
            a.update(Msg::Written(Err(macfleet::client::ClientError::Conflict {
                current_revision: Some("r44".into()),
                message: String::new(),
            })));
            // They removed opencode, which `J` moved: a conflict.
            a.update(Msg::Agents {
                revision: "r44".into(),
                agents: ["pi", "claude", "codex"].map(String::from).to_vec(),
                text: fixture::DOC.replace("    \"opencode\", # cheap\n", ""),
            });
            let mut h = fixture::history(fixture::t0());
            h.revisions.insert(
                0,
                macfleet::wire::HistoryEntry {
                    revision: "r44".into(),
                    at: fixture::t0() - chrono::TimeDelta::minutes(2),
                    by: "bob".into(),
                    agents: ["pi", "claude", "codex"].map(String::from).to_vec(),
                    previous_agents: fixture::LADDER.map(String::from).to_vec(),
                    client: None,
                },
            );
            a.update(Msg::History(h));
        },
        color(),
        true,
    );
}

/// `J`, `w`, `y`, the hub's 200 (r43), then workers 0..10 report r43.
fn written_r43(a: &mut App) {
    key(a, '1');
    key(a, 'J');
    key(a, 'w');
    key(a, 'y');
    a.update(Msg::Written(Ok(macfleet::wire::ConfigAccepted {
        revision: "r43".into(),
        agents: ["pi", "opencode", "claude", "codex"]
            .map(String::from)
            .to_vec(),
    })));
    let now = fixture::t0();
    let workers = (0..10)
        .map(|i| macfleet::wire::WorkerView {
            config_revision: Some("r43".into()),
            in_sync: true,
            ..fixture::worker(i, now)
        })
        .collect();
    let mut page = fixture::page(workers, now, true, 2);
    page.config_revision = "r43".into();
    a.update(Msg::Workers {
        page,
        at: a.model().mono_now,
    });
}

#[test]
fn the_convergence_line_and_the_workers_behind_it() {
    snap(
        "ladder_convergence",
        |a| {
            written_r43(a);
            key(a, 'G');
            key(a, 'j');
        },
        color(),
        true,
    );
    snap(
        "rollout_detail",
        |a| {
            written_r43(a);
            key(a, 'G');
            key(a, 'j');
            code(a, KeyCode::Enter);
        },
        color(),
        true,
    );
    let (mut app, _) = fixture::app(60, true, color(), 120, 40);
    written_r43(&mut app);
    key(&mut app, 'G');
    key(&mut app, 'j');
    let s = screen_text(&buffer(&mut app));
    assert!(
        s.contains("healthy workers on r43 · ") && s.contains("Enter lists the workers behind"),
        "{s}"
    );
    code(&mut app, KeyCode::Enter);
    let s = screen_text(&buffer(&mut app));
    assert!(s.contains("healthy workers on r43, written"), "{s}");
    assert!(
        s.contains("w-00015        healthy, still reports r41: last heard"),
        "{s}"
    );
    key(&mut app, 'G');
    let s = screen_text(&buffer(&mut app));
    assert!(s.contains("w-00053        lost: last heard"), "{s}");
}

#[test]
fn a_revisions_detail_shows_its_diff() {
    let open_r41 = |a: &mut App| {
        key(a, '4');
        key(a, 'j');
        code(a, KeyCode::Enter);
    };
    snap("revision_detail", open_r41, color(), true);
    let (mut app, _) = fixture::app(60, true, color(), 120, 40);
    open_r41(&mut app);
    let s = screen_text(&buffer(&mut app));
    // r41 made [opencode, claude] into [pi, opencode, claude, codex].
    for want in [
        "--- r40",
        "+++ r41",
        "+    \"pi\",",
        "     \"opencode\",",
        "+    \"codex\",",
    ] {
        assert!(s.contains(want), "{want:?} in\n{s}");
    }
    let buf = buffer(&mut app);
    let (x, y) = find(&buf, "+    \"pi\",").expect("the added line");
    assert_eq!(buf[(x, y)].fg, Color::Green, "added lines are green");
}

#[test]
fn the_projection_warns_before_anything_is_sent() {
    let setup = |a: &mut App| {
        key(a, '1');
        // claude (9 healthy workers run it now) removed; a typo added and moved to the top.
        key(a, 'j');
        key(a, 'j');
        key(a, 'd');
        key(a, 'a');
        for c in "zed".chars() {
            key(a, c);
        }
        // A name nobody reports: the prompt asks, Enter adds it anyway.
        code(a, KeyCode::Enter);
        code(a, KeyCode::Enter);
        key(a, 'G');
        key(a, 'k');
        for _ in 0..4 {
            key(a, 'K');
        }
    };
    snap("ladder_warnings", setup, color(), true);
    let (mut app, _) = fixture::app(60, true, color(), 120, 40);
    setup(&mut app);
    let s = screen_text(&buffer(&mut app));
    for want in [
        "! rank 0 zed can be run by only 0 of 53 healthy workers",
        "! no healthy worker can run zed, placed above",
        "! removing claude, which 9 healthy workers run now",
        "! \"zed\" is not a known agent and no worker has reported it",
    ] {
        assert!(s.contains(want), "{want:?} in\n{s}");
    }
    let buf = buffer(&mut app);
    let (x, y) = find(&buf, "! removing claude").expect("the warning");
    assert_eq!(buf[(x, y)].fg, Color::Yellow, "warnings stand out");
}

/// `:ctx`'s popup at 80x24 and 120x40: its title (the keys it takes) whole.
#[test]
fn ctx_picker() {
    snap(
        "ctx_picker",
        |a| {
            a.set_contexts(
                vec!["prod".into(), "staging".into(), "lab".into()],
                Some("prod".into()),
            );
            key(a, ':');
            for c in "ctx".chars() {
                key(a, c);
            }
            code(a, KeyCode::Enter);
        },
        color(),
        false,
    );
    let (mut app, _) = fixture::app(60, false, color(), 80, 24);
    app.set_contexts(vec!["prod".into(), "staging".into()], Some("prod".into()));
    key(&mut app, ':');
    for c in "ctx".chars() {
        key(&mut app, c);
    }
    code(&mut app, KeyCode::Enter);
    let t = render(&mut app);
    let s = format!("{:?}", t.backend());
    let title = format!(
        " contexts ({}) ",
        macfleet::tui::keys::hints(macfleet::tui::keys::Hints::Picker, ", ")
    );
    assert!(
        s.contains(&title),
        "the popup's title is cut at 80x24:\n{s}"
    );
}
