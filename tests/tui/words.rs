//! Words an owner needs (issue 27, the 11:20 audit): History's BY column
//! and its detail say `changed by hand on disk` whole (not `(changed on
//! dis…`); the status line after a hand edit under a pending edit says the
//! revision was changed by hand on disk, not "written"; a viewer's `?`
//! lists `x drill` among the keys that work, not under "these keys do
//! nothing". Through `update`, drawn into a buffer.

use crossterm::event::KeyCode;
use macfleet::tui::app::App;
use macfleet::tui::fixture::{self, DOC};
use macfleet::tui::msg::Msg;
use macfleet::tui::ui::theme::Theme;
use macfleet::wire::{ConfigEvent, History, HistoryEntry};

use crate::ui::{self, code, key};

fn app(can_write: bool, w: u16, h: u16) -> App {
    let (mut a, _) = fixture::app(20, can_write, Theme::new(false, false), w, h);
    key(&mut a, '1');
    a
}

fn screen(a: &App) -> String {
    let (w, h) = a.size();
    ui::text(&ui::drawn(a, w, h))
}

fn status(a: &App) -> String {
    a.status().map(|s| s.text.clone()).unwrap_or_default()
}

fn ladder() -> Vec<String> {
    fixture::LADDER.iter().map(|s| s.to_string()).collect()
}

/// A hand edit of the hub's file as the history records it: `r44`, 5 s ago.
fn hand_edit() -> HistoryEntry {
    HistoryEntry {
        revision: "r44".into(),
        at: fixture::t0() - chrono::TimeDelta::seconds(5),
        by: "(changed on disk)".into(),
        agents: ladder(),
        previous_agents: ladder(),
        client: None,
    }
}

#[test]
fn history_says_changed_by_hand_on_disk_whole_in_its_column_and_detail() {
    for w in [100, 120] {
        let mut a = app(true, w, 30);
        a.update(Msg::History(History {
            revisions: vec![hand_edit()],
        }));
        key(&mut a, '4');
        let s = screen(&a);
        let row = s
            .lines()
            .find(|l| l.contains("r44"))
            .unwrap_or_else(|| panic!("the row of r44:\n{s}"));
        assert!(row.contains("changed by hand on disk"), "{w} cols: {row}");
        assert!(!row.contains("(changed on dis"), "{w} cols: {row}");
        code(&mut a, KeyCode::Enter);
        let s = screen(&a);
        let by = s
            .lines()
            .find(|l| l.contains("by") && l.contains("disk"))
            .unwrap_or_else(|| panic!("the detail's by line:\n{s}"));
        assert!(by.contains("changed by hand on disk"), "{w} cols: {by}");
        assert!(!by.contains("(changed on disk)"), "{w} cols: {by}");
    }
}

/// The status line under a hand edit, whether the history or only the
/// stream's event has said who made it when the document arrives.
#[test]
fn a_hand_edit_under_a_pending_edit_is_said_changed_by_hand_on_the_status_line() {
    for history_first in [true, false] {
        let mut a = app(true, 120, 40);
        key(&mut a, 'J');
        if history_first {
            a.update(Msg::History(History {
                revisions: vec![hand_edit()],
            }));
        } else {
            a.update(Msg::Config(ConfigEvent {
                revision: "r44".into(),
                at: fixture::t0(),
                by: "(changed on disk)".into(),
                agents: ladder(),
            }));
        }
        a.update(Msg::Agents {
            revision: "r44".into(),
            agents: ladder(),
            text: DOC.replace("retries = 2", "retries = 3"),
        });
        let st = status(&a);
        assert!(
            st.contains("r44 was changed by hand on disk while your edit was pending"),
            "history first {history_first}: {st}"
        );
        assert!(!st.contains("was written"), "{st}");
    }
}

/// A colleague's write still reads "written".
#[test]
fn a_colleagues_write_under_a_pending_edit_is_still_said_written() {
    let mut a = app(true, 120, 40);
    key(&mut a, 'J');
    a.update(Msg::History(History {
        revisions: vec![HistoryEntry {
            by: "bob".into(),
            ..hand_edit()
        }],
    }));
    a.update(Msg::Agents {
        revision: "r44".into(),
        agents: ladder(),
        text: DOC.replace("retries = 2", "retries = 3"),
    });
    let st = status(&a);
    assert!(
        st.contains("r44 was written while your edit was pending"),
        "{st}"
    );
}

/// A viewer's `?` on the Ladder: `x drill` works there, so it is listed
/// above the read-only heading; every key under the heading is an edit key.
#[test]
fn a_viewers_help_lists_x_drill_among_the_keys_that_work() {
    let a = app(false, 120, 40);
    let lines = ui::help_lines(&a);
    let head = lines
        .iter()
        .position(|l| l.contains("read-only: these keys do nothing"))
        .unwrap_or_else(|| panic!("the read-only heading:\n{}", lines.join("\n")));
    let drill = lines
        .iter()
        .position(|l| l.contains("drill"))
        .unwrap_or_else(|| panic!("x drill:\n{}", lines.join("\n")));
    assert!(
        drill < head,
        "x drill under the heading:\n{}",
        lines.join("\n")
    );
    // Under the heading, up to the filter prompt's keys: only edit keys.
    let prompt = lines
        .iter()
        .position(|l| l.contains("in the filter prompt"))
        .unwrap_or(lines.len());
    for l in &lines[head + 1..prompt] {
        assert!(!l.contains("drill"), "{l}");
    }
    // An owner's help has no heading.
    let owner = ui::help_lines(&app(true, 120, 40));
    assert!(!owner.iter().any(|l| l.contains("do nothing")));
}
