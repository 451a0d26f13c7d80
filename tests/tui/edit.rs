//! The ladder editor through `update`: moves, add (and uncomment), remove,
//! undo/redo, the diff screen, the write effect and each answer to it.

use crossterm::event::KeyCode;
use macfleet::client::ClientError;
use macfleet::tui::app::App;
use macfleet::tui::fixture::{self, DOC, REVISION};
use macfleet::tui::msg::{Effect, Msg};
use macfleet::tui::overlays::edit::Mode;
use macfleet::tui::panes::{history::History as HistoryPane, ladder::Ladder};
use macfleet::tui::ui::theme::Theme;
use macfleet::wire::ConfigAccepted;

use crate::ui;
use ui::{code, ctrl, key};

fn app(can_write: bool) -> App {
    let (mut a, _) = fixture::app(20, can_write, Theme::new(false, false), 120, 40);
    key(&mut a, '1');
    assert_eq!(a.view(), "ladder");
    a
}

fn order(app: &App) -> Vec<String> {
    app.model()
        .edit
        .order()
        .map(|o| o.to_vec())
        .unwrap_or_else(|| app.model().config.agents.clone())
}

fn v(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

fn screen_text(app: &App) -> String {
    let (w, h) = app.size();
    ui::text(&ui::drawn(app, w, h))
}

fn status(app: &App) -> String {
    app.status().map(|s| s.text.clone()).unwrap_or_default()
}

#[test]
fn j_and_k_move_the_selected_agent_and_the_cursor_follows_it() {
    let mut a = app(true);
    assert_eq!(
        a.pane_as::<Ladder>().list.selected().map(String::as_str),
        Some("opencode")
    );
    assert!(!a.model().edit.is_pending());
    assert!(key(&mut a, 'J').is_empty(), "an edit sends nothing");
    assert_eq!(order(&a), v(&["pi", "opencode", "claude", "codex"]));
    assert!(a.model().edit.is_pending());
    assert_eq!(
        a.pane_as::<Ladder>().list.selected().map(String::as_str),
        Some("opencode")
    );
    key(&mut a, 'J');
    assert_eq!(order(&a), v(&["pi", "claude", "opencode", "codex"]));
    key(&mut a, 'K');
    key(&mut a, 'K');
    assert_eq!(order(&a), v(&["opencode", "pi", "claude", "codex"]));
    assert!(
        !a.model().edit.is_pending(),
        "back where it started: nothing pending"
    );
    assert_eq!(
        a.model().config.agents,
        v(&["opencode", "pi", "claude", "codex"])
    );
}

#[test]
fn undo_and_redo_walk_the_steps() {
    let mut a = app(true);
    key(&mut a, 'J');
    key(&mut a, 'J');
    key(&mut a, 'u');
    assert_eq!(order(&a), v(&["pi", "opencode", "claude", "codex"]));
    key(&mut a, 'u');
    assert!(!a.model().edit.is_pending());
    key(&mut a, 'u');
    assert_eq!(status(&a), "nothing to undo");
    ctrl(&mut a, 'r');
    ctrl(&mut a, 'r');
    assert_eq!(order(&a), v(&["pi", "claude", "opencode", "codex"]));
    ctrl(&mut a, 'r');
    assert_eq!(status(&a), "nothing to redo");
}

#[test]
fn d_removes_and_a_brings_a_commented_out_name_back_in_its_place() {
    let mut a = app(true);
    code(&mut a, KeyCode::Down); // pi
    key(&mut a, 'd');
    assert_eq!(order(&a), v(&["opencode", "claude", "codex"]));
    // The removed agent stays on the Ladder, marked, until written.
    assert!(a.pane_as::<Ladder>().list.rows.iter().any(|r| r == "pi"));
    key(&mut a, 'u');
    key(&mut a, 'a');
    assert!(matches!(*a.edit_mode(), Mode::Adding { .. }));
    for c in "cursor".chars() {
        key(&mut a, c);
    }
    assert!(matches!(a.edit_mode(), Mode::Adding { error: None, .. }));
    code(&mut a, KeyCode::Enter);
    assert_eq!(*a.edit_mode(), Mode::Editing);
    // `# "cursor"` stands after pi in the document: it comes back there.
    assert_eq!(
        order(&a),
        v(&["opencode", "pi", "cursor", "claude", "codex"])
    );
    let Some(plan) = &a.model().edit.plan else {
        panic!("an edit")
    };
    let text = plan.render().expect("renders");
    assert!(text.contains("    \"cursor\",   # no seat yet\n"), "{text}");
    assert!(!text.contains("# \"cursor\""), "no second line: {text}");
}

#[test]
fn the_add_prompt_validates_as_you_type_and_keeps_what_was_typed() {
    let mut a = app(true);
    key(&mut a, 'a');
    for c in "claude".chars() {
        key(&mut a, c);
    }
    let Mode::Adding { text, error, .. } = a.edit_mode() else {
        panic!("the prompt")
    };
    assert_eq!(text, "claude");
    assert!(
        error.as_deref().is_some_and(|e| e.contains("claude")),
        "{error:?}"
    );
    code(&mut a, KeyCode::Enter);
    assert!(matches!(a.edit_mode(), Mode::Adding { text, .. } if text == "claude"));
    assert!(!a.model().edit.is_pending());
    code(&mut a, KeyCode::Esc);
    assert_eq!(*a.edit_mode(), Mode::Editing);
    key(&mut a, 'a');
    key(&mut a, 'B');
    assert!(
        matches!(a.edit_mode(), Mode::Adding { error: Some(_), .. }),
        "a malformed name"
    );
}

/// The typo guard asks before the harm: a name nobody reports and no
/// known agent has is not added on the first Enter; the prompt asks (Enter
/// again adds it anyway, Esc goes back to the name, kept).
#[test]
fn a_name_nobody_reports_is_asked_about_before_it_is_added() {
    let mut a = app(true);
    key(&mut a, 'a');
    ui::typed(&mut a, "gemnii");
    code(&mut a, KeyCode::Enter);
    assert!(
        matches!(a.edit_mode(), Mode::Adding { text, unknown: true, .. } if text == "gemnii"),
        "{:?}",
        *a.edit_mode()
    );
    assert!(!a.model().edit.is_pending(), "nothing added yet");
    let s = screen_text(&a);
    assert!(
        s.contains("add \"gemnii\"? no worker reports it and it is not a known agent")
            && s.contains("Enter adds it anyway")
            && s.contains("Esc goes back to the name"),
        "{s}"
    );
    code(&mut a, KeyCode::Esc);
    assert!(
        matches!(a.edit_mode(), Mode::Adding { text, unknown: false, .. } if text == "gemnii"),
        "Esc goes back keeping the text: {:?}",
        *a.edit_mode()
    );
    code(&mut a, KeyCode::Enter);
    code(&mut a, KeyCode::Enter);
    assert_eq!(*a.edit_mode(), Mode::Editing);
    assert!(order(&a).contains(&"gemnii".to_string()), "added anyway");
    // A name workers report (or a known agent) is added at once.
    key(&mut a, 'a');
    ui::typed(&mut a, "cursor");
    code(&mut a, KeyCode::Enter);
    assert_eq!(*a.edit_mode(), Mode::Editing);
    assert!(order(&a).contains(&"cursor".to_string()));
}

/// `C-u` clears the add prompt as it clears the filter prompt; a hint with
/// nothing to offer ends with the hints, not a dangling separator.
#[test]
fn ctrl_u_clears_the_add_prompt_and_a_hint_with_nothing_to_offer_ends_cleanly() {
    let mut a = app(true);
    key(&mut a, 'a');
    ui::typed(&mut a, "zzz");
    let (w, h) = a.size();
    let last = ui::row(&ui::drawn(&a, w, h), h - 1);
    assert!(
        last.trim_end().ends_with("Esc cancels"),
        "nothing to offer: the line ends with the hints: {last:?}"
    );
    ctrl(&mut a, 'u');
    assert!(
        matches!(a.edit_mode(), Mode::Adding { text, error: None, .. } if text.is_empty()),
        "{:?}",
        *a.edit_mode()
    );
    ui::typed(&mut a, "cu");
    let last = ui::row(&ui::drawn(&a, w, h), h - 1);
    assert!(
        last.contains("· cursor"),
        "the offer after the hints: {last:?}"
    );
}

#[test]
fn w_shows_the_whole_documents_diff_and_y_sends_exactly_it() {
    let mut a = app(true);
    assert!(key(&mut a, 'w').is_empty());
    assert_eq!(status(&a), "nothing to write: no pending edit");
    key(&mut a, 'J');
    assert!(key(&mut a, 'w').is_empty(), "w only shows the diff");
    let Mode::Review {
        text,
        if_match,
        diff,
        ..
    } = a.edit_mode().clone()
    else {
        panic!("the diff screen")
    };
    assert_eq!(if_match, REVISION);
    assert!(
        diff.contains(
            "\n+    \"pi\",       # fast\n     \"opencode\", # cheap\n-    \"pi\",       # fast\n"
        ),
        "{diff}"
    );
    assert!(text.ends_with("]\nretries = 2\n"));
    assert!(code(&mut a, KeyCode::Esc).is_empty());
    assert_eq!(*a.edit_mode(), Mode::Editing);
    assert!(a.model().edit.is_pending(), "n/Esc keeps the edit");
    key(&mut a, 'w');
    let fx = key(&mut a, 'y');
    assert_eq!(
        fx,
        vec![Effect::Write {
            text: text.clone(),
            if_match: REVISION.into()
        }]
    );
    assert!(key(&mut a, 'y').is_empty(), "one write at a time");
    let fx = a.update(Msg::Written(Ok(ConfigAccepted {
        revision: "r43".into(),
        agents: v(&["pi", "opencode", "claude", "codex"]),
    })));
    assert!(fx.contains(&Effect::FetchConfig));
    assert!(!a.model().edit.is_pending());
    assert_eq!(a.model().config.revision.as_deref(), Some("r43"));
    assert!(status(&a).contains("r43"));
}

#[test]
fn a_failed_write_keeps_the_edit_and_w_retries() {
    let mut a = app(true);
    key(&mut a, 'J');
    key(&mut a, 'w');
    let sent = key(&mut a, 'y');
    a.update(Msg::Written(Err(ClientError::Unreachable(
        "connection refused".into(),
    ))));
    assert!(a.model().edit.is_pending());
    assert_eq!(*a.edit_mode(), Mode::Editing);
    assert!(status(&a).contains("connection refused"), "{}", status(&a));
    assert_eq!(
        a.model().edit.error.as_deref(),
        Some("hub unreachable: connection refused")
    );
    a.settle();
    let screen = screen_text(&a);
    assert!(
        screen.contains("last write failed: hub unreachable"),
        "{screen}"
    );
    key(&mut a, 'w');
    assert_eq!(key(&mut a, 'y'), sent, "the same document again");
}

fn conflict() -> ClientError {
    ClientError::Conflict {
        current_revision: Some("r44".into()),
        message: String::new(),
    }
}

#[test]
fn a_412_over_another_key_replays_the_order_and_shows_the_new_diff() {
    let mut a = app(true);
    key(&mut a, 'J');
    key(&mut a, 'w');
    key(&mut a, 'y');
    let fx = a.update(Msg::Written(Err(conflict())));
    assert!(fx.contains(&Effect::FetchConfig));
    assert!(a.model().edit.is_pending());
    let theirs = DOC.replace("retries = 2", "retries = 3");
    a.update(Msg::Agents {
        revision: "r44".into(),
        agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
        text: theirs,
    });
    let Mode::Review { text, if_match, .. } = a.edit_mode().clone() else {
        panic!("the new diff to confirm, not {:?}", *a.edit_mode())
    };
    assert_eq!(if_match, "r44");
    assert!(text.contains("retries = 3"), "theirs is kept: {text}");
    assert!(
        text.find("\"pi\"") < text.find("\"opencode\""),
        "mine is kept: {text}"
    );
}

/// A colleague's write reaches the TUI while `J` is pending: the edit is
/// replayed onto their document at once and the Ladder says so (who, when,
/// whether the list was touched); `w` diffs onto their revision. When they
/// changed the list, `w` shows the conflict's choice before any diff.
#[test]
fn a_colleagues_write_under_a_pending_edit_is_said_on_the_ladder_and_w_diffs_onto_it() {
    use macfleet::wire::{History, HistoryEntry};
    let mut a = app(true);
    key(&mut a, 'J');
    let entry = |rev: &str, agents: &[&str]| HistoryEntry {
        revision: rev.into(),
        at: fixture::t0() - chrono::TimeDelta::seconds(5),
        by: "bob".into(),
        agents: agents.iter().map(|s| s.to_string()).collect(),
        previous_agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
        client: None,
    };
    a.update(Msg::History(History {
        revisions: vec![entry("r44", &fixture::LADDER)],
    }));
    a.update(Msg::Agents {
        revision: "r44".into(),
        agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
        text: DOC.replace("retries = 2", "retries = 3"),
    });
    assert!(a.model().edit.is_pending(), "the edit is kept");
    let s = screen_text(&a);
    assert!(
        s.contains("! r44 written by bob, 5s ago, while this edit (begun on r42) was pending")
            && s.contains("it left the list alone"),
        "{s}"
    );
    key(&mut a, 'w');
    let Mode::Review {
        text,
        if_match,
        diff,
        ..
    } = a.edit_mode().clone()
    else {
        panic!("the diff, not {:?}", *a.edit_mode())
    };
    assert_eq!(if_match, "r44", "onto the hub's revision now");
    assert!(text.contains("retries = 3"), "theirs kept: {text}");
    assert!(
        !diff.contains("retries"),
        "their change is not undone: {diff}"
    );
    // An open diff is remade onto a newer write that removed the agent
    // this edit moved: the choice comes first.
    let theirs = DOC.replace("    \"opencode\", # cheap\n", "");
    a.update(Msg::History(History {
        revisions: vec![entry("r45", &["pi", "claude", "codex"])],
    }));
    a.update(Msg::Agents {
        revision: "r45".into(),
        agents: v(&["pi", "claude", "codex"]),
        text: theirs,
    });
    assert!(
        matches!(*a.edit_mode(), Mode::Conflict { .. }),
        "{:?}",
        *a.edit_mode()
    );
    code(&mut a, KeyCode::Esc);
    assert!(
        matches!(*a.edit_mode(), Mode::Conflict { .. }),
        "a choice, not a diff"
    );
    key(&mut a, 'c');
    key(&mut a, 'w');
    let Mode::Review { if_match, .. } = a.edit_mode().clone() else {
        panic!("the diff after the choice, not {:?}", *a.edit_mode())
    };
    assert_eq!(if_match, "r45");
    assert_eq!(a.model().edit.overtaken, None, "chosen: the notice goes");
}

/// The stale-edit notice and the conflict name the writing client, as
/// History does: owners who share a token are told apart by it.
#[test]
fn the_notice_of_a_colleagues_write_names_their_client() {
    use macfleet::wire::{History, HistoryEntry};
    let mut a = app(true);
    key(&mut a, 'J');
    // They removed opencode, which this edit moved: a conflict.
    let theirs = DOC.replace("    \"opencode\", # cheap\n", "");
    a.update(Msg::History(History {
        revisions: vec![HistoryEntry {
            revision: "r44".into(),
            at: fixture::t0() - chrono::TimeDelta::seconds(5),
            by: "alice".into(),
            agents: v(&["pi", "claude", "codex"]),
            previous_agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
            client: Some("curl/8.5.0".into()),
        }],
    }));
    a.update(Msg::Agents {
        revision: "r44".into(),
        agents: v(&["pi", "claude", "codex"]),
        text: theirs,
    });
    let s = screen_text(&a);
    assert!(
        s.contains("r44 written by alice via curl/8.5.0, 5s ago"),
        "{s}"
    );
    key(&mut a, 'w');
    let s = screen_text(&a);
    assert!(
        s.contains("by alice via curl/8.5.0, 5s ago"),
        "the conflict names it:\n{s}"
    );
}

#[test]
fn a_412_that_changed_the_list_asks_carry_or_drop_and_drop_asks_twice() {
    let mut a = app(true);
    key(&mut a, 'J');
    key(&mut a, 'w');
    key(&mut a, 'y');
    a.update(Msg::Written(Err(conflict())));
    // They removed opencode, which this edit moved (J).
    let theirs = DOC.replace("    \"opencode\", # cheap\n", "");
    a.update(Msg::Agents {
        revision: "r44".into(),
        agents: v(&["pi", "claude", "codex"]),
        text: theirs.clone(),
    });
    assert!(
        matches!(*a.edit_mode(), Mode::Conflict { .. }),
        "{:?}",
        *a.edit_mode()
    );
    assert!(a.model().edit.is_pending());
    key(&mut a, 'D');
    key(&mut a, 'x');
    assert!(
        matches!(
            *a.edit_mode(),
            Mode::Conflict {
                confirm_drop: false,
                ..
            }
        ),
        "a second key is needed"
    );
    key(&mut a, 'c');
    assert_eq!(*a.edit_mode(), Mode::Editing);
    let plan = a.model().edit.plan.clone().expect("carried");
    assert_eq!(plan.base_revision(), "r44");
    assert_eq!(plan.order(), &v(&["pi", "opencode", "claude", "codex"])[..]);

    // The same conflict again, dropped this time.
    let mut b = app(true);
    key(&mut b, 'J');
    key(&mut b, 'w');
    key(&mut b, 'y');
    b.update(Msg::Written(Err(conflict())));
    b.update(Msg::Agents {
        revision: "r44".into(),
        agents: v(&["pi", "claude", "codex"]),
        text: theirs,
    });
    key(&mut b, 'D');
    assert!(matches!(
        *b.edit_mode(),
        Mode::Conflict {
            confirm_drop: true,
            ..
        }
    ));
    key(&mut b, 'y');
    assert_eq!(*b.edit_mode(), Mode::Editing);
    assert!(!b.model().edit.is_pending());
}

fn alice_wrote(rev: &str, agents: &[&str]) -> Msg {
    Msg::History(macfleet::wire::History {
        revisions: vec![macfleet::wire::HistoryEntry {
            revision: rev.into(),
            at: fixture::t0() - chrono::TimeDelta::seconds(5),
            by: "alice".into(),
            agents: v(agents),
            previous_agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
            client: None,
        }],
    })
}

/// The rank column, row by row, as drawn: `["0 pi", "1→2 opencode", …]`.
fn ranks(a: &App) -> Vec<String> {
    a.model()
        .edit
        .plan
        .as_ref()
        .map(|p| {
            p.rungs()
                .iter()
                .map(|r| {
                    let n = |x: Option<usize>| x.map_or("-".to_string(), |x| x.to_string());
                    if r.changed() {
                        format!("{}→{} {}", n(r.old), n(r.new), r.agent)
                    } else {
                        format!("{} {}", n(r.new), r.agent)
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Issue #27: Bob's `J` (opencode right after pi) is pending; alice moves
/// codex to the top. The list changed, but not where Bob's did: his edit
/// is replayed onto hers as intents, both stand, no conflict; the Ladder
/// numbers his edit against her revision at once, and `w` is the diff onto
/// it. Before, `w` offered only carrying Bob's whole list, which put
/// codex back last.
#[test]
fn a_colleagues_change_of_the_list_elsewhere_and_mine_both_stand() {
    let mut a = app(true);
    key(&mut a, 'J');
    a.update(alice_wrote("r44", &["codex", "opencode", "pi", "claude"]));
    a.update(Msg::Agents {
        revision: "r44".into(),
        agents: v(&["codex", "opencode", "pi", "claude"]),
        text: DOC.replace("    \"codex\",    # last\n", "").replace(
            "    \"opencode\"",
            "    \"codex\",    # last\n    \"opencode\"",
        ),
    });
    let s = screen_text(&a);
    assert!(
        s.contains("it changed the list: your edit is replayed onto r44, both stand"),
        "{s}"
    );
    // The Ladder's ranks are against r44 (codex 0, unmoved), not r42.
    assert_eq!(
        ranks(&a),
        v(&["0 codex", "2→1 pi", "1→2 opencode", "3 claude"]),
        "{s}"
    );
    assert!(s.contains("2→1 pi") && s.contains("1→2 opencode"), "{s}");
    key(&mut a, 'w');
    let Mode::Review {
        text,
        if_match,
        diff,
        ..
    } = a.edit_mode().clone()
    else {
        panic!("the diff, no conflict: {:?}", *a.edit_mode())
    };
    assert_eq!(if_match, "r44");
    assert!(
        !diff.contains("-    \"codex\"") && !diff.contains("+    \"codex\""),
        "alice's move is not undone:\n{diff}"
    );
    let order: Vec<&str> = ["codex", "pi", "opencode", "claude"].to_vec();
    let at = |n: &str| text.find(&format!("\"{n}\"")).expect("listed");
    assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "{text}");
    assert!(
        text.contains("\"codex\",    # last"),
        "their comment kept: {text}"
    );
}

/// Issue #27: both moved pi — Bob to the bottom, alice to the top. Only pi
/// conflicts; the Ladder shows Bob's edit replayed onto alice's revision
/// (ranks against it, not against the base that is gone); `w` shows base,
/// theirs, mine and the merged result; `t` keeps theirs for pi, `m` mine,
/// and keeping mine says above the diff what it undoes, naming alice.
#[test]
fn a_real_conflict_is_chosen_per_agent_and_says_what_mine_undoes() {
    let pi_down = |a: &mut App| {
        key(a, 'a');
        ui::typed(a, "cursor");
        code(a, KeyCode::Enter);
        key(a, 'g');
        key(a, 'j');
        for _ in 0..3 {
            key(a, 'J');
        }
    };
    let alice = |a: &mut App| {
        a.update(alice_wrote("r44", &["pi", "opencode", "claude", "codex"]));
        a.update(Msg::Agents {
            revision: "r44".into(),
            agents: v(&["pi", "opencode", "claude", "codex"]),
            text: DOC.replace(
                "    \"opencode\", # cheap\n    \"pi\",       # fast\n",
                "    \"pi\",       # fast\n    \"opencode\", # cheap\n",
            ),
        });
    };
    let mut a = app(true);
    pi_down(&mut a);
    assert_eq!(
        order(&a),
        v(&["opencode", "cursor", "claude", "codex", "pi"])
    );
    alice(&mut a);
    // Against r44: pi was 0 there (it was 1 on r42).
    assert!(ranks(&a).contains(&"0→4 pi".to_string()), "{:?}", ranks(&a));
    assert_eq!(
        a.model().edit.plan.as_ref().map(|p| p.base_revision()),
        Some("r44")
    );
    key(&mut a, 'w');
    assert!(matches!(*a.edit_mode(), Mode::Conflict { .. }));
    let s = screen_text(&a);
    for want in [
        "base r42",
        "theirs r44",
        "mine (pending)",
        "merged",
        "> pi: theirs moved it to #0, mine to #4 · keeps mine",
        "this undoes alice's move of pi to #0",
    ] {
        assert!(s.contains(want), "{want:?} in\n{s}");
    }
    assert!(!s.contains("cursor: "), "cursor is no conflict:\n{s}");
    // A newer revision (another key) before the choice: still a conflict.
    let mut n = app(true);
    pi_down(&mut n);
    alice(&mut n);
    n.update(Msg::Agents {
        revision: "r45".into(),
        agents: v(&["pi", "opencode", "claude", "codex"]),
        text: DOC
            .replace(
                "    \"opencode\", # cheap\n    \"pi\",       # fast\n",
                "    \"pi\",       # fast\n    \"opencode\", # cheap\n",
            )
            .replace("retries = 2", "retries = 3"),
    });
    key(&mut n, 'w');
    assert!(
        matches!(*n.edit_mode(), Mode::Conflict { .. }),
        "the conflict is not lost: {:?}",
        *n.edit_mode()
    );
    // t: theirs for pi; cursor's add stands.
    let mut t = app(true);
    pi_down(&mut t);
    alice(&mut t);
    key(&mut t, 'w');
    key(&mut t, 't');
    assert!(screen_text(&t).contains("keeps theirs"));
    key(&mut t, 'c');
    assert_eq!(
        order(&t),
        v(&["pi", "opencode", "cursor", "claude", "codex"])
    );
    key(&mut t, 'w');
    let s = screen_text(&t);
    assert!(
        s.contains("write onto revision r44") && !s.contains("this undoes"),
        "{s}"
    );
    // m: mine for pi, said above the diff.
    key(&mut a, 'm');
    key(&mut a, 'c');
    assert_eq!(
        order(&a),
        v(&["opencode", "cursor", "claude", "codex", "pi"])
    );
    key(&mut a, 'w');
    let s = screen_text(&a);
    let note = s.find("this undoes alice's move of pi to #0").expect(&s);
    assert!(
        note < s.find("Plan:").expect("the plan line"),
        "above the diff:\n{s}"
    );
    // u walks back Bob's steps (the add, three J) on alice's list.
    code(&mut a, KeyCode::Esc);
    key(&mut a, 'u');
    assert_eq!(
        order(&a),
        v(&["opencode", "cursor", "claude", "pi", "codex"])
    );
    for _ in 0..3 {
        key(&mut a, 'u');
    }
    assert!(!a.model().edit.is_pending(), "back to alice's list");
    assert_eq!(order(&a), v(&["pi", "opencode", "claude", "codex"]));
}

#[test]
fn q_with_a_pending_edit_asks_first() {
    let mut a = app(true);
    key(&mut a, 'J');
    key(&mut a, 'q');
    assert!(!a.quits());
    assert_eq!(*a.edit_mode(), Mode::ConfirmQuit);
    key(&mut a, 'n');
    assert!(!a.quits() && a.model().edit.is_pending());
    key(&mut a, '?');
    key(&mut a, 'q');
    assert!(!a.quits(), "from the help too");
    assert_eq!(*a.edit_mode(), Mode::ConfirmQuit);
    key(&mut a, 'y');
    assert!(a.quits());
    // C-c asks like q (it quit at once, the edit lost); at the question
    // it is the answer that quits.
    let mut b = app(true);
    key(&mut b, 'J');
    ctrl(&mut b, 'c');
    assert!(!b.quits(), "C-c with an edit pending asks");
    assert_eq!(*b.edit_mode(), Mode::ConfirmQuit);
    assert!(screen_text(&b).contains("quit anyway?"));
    key(&mut b, 'n');
    assert!(!b.quits() && b.model().edit.is_pending());
    ctrl(&mut b, 'c');
    ctrl(&mut b, 'c');
    assert!(b.quits());
    // With nothing pending C-c quits at once.
    let mut c = app(true);
    ctrl(&mut c, 'c');
    assert!(c.quits());
}

#[test]
fn a_read_only_session_changes_nothing_and_sends_nothing() {
    let mut a = app(false);
    for c in ['J', 'K', 'a', 'd', 'u', 'w', 'y', 'e', 'R'] {
        let fx = key(&mut a, c);
        assert!(fx.is_empty(), "{c}: no write, no editor: {fx:?}");
        assert!(!a.model().edit.is_pending());
    }
    assert!(ctrl(&mut a, 'r').is_empty());
    assert_eq!(a.model().edit.plan, None);
    assert_eq!(status(&a), "read-only");
}

#[test]
fn the_projection_follows_the_pending_order_and_warns() {
    let mut a = app(true);
    assert_eq!(a.model().edit.projection, None);
    key(&mut a, 'J');
    let p = a.model().edit.projection.clone().expect("a projection");
    assert_eq!(p.healthy, a.model().fleet.agg.healthy);
    let pi = p.rungs.iter().find(|r| r.agent == "pi").expect("pi");
    assert_eq!((pi.old_rank, pi.rank), (Some(1), Some(0)));
    assert!(pi.projected > pi.today, "pi on top draws workers: {pi:?}");
    assert!(p.moves_workers());
    key(&mut a, 'a');
    for c in "zed-typo".chars() {
        key(&mut a, c);
    }
    code(&mut a, KeyCode::Enter);
    code(&mut a, KeyCode::Enter);
    let p = a.model().edit.projection.clone().expect("a projection");
    assert!(
        p.warnings
            .iter()
            .any(|w| w.to_string().contains("zed-typo")),
        "{:?}",
        p.warnings
    );
    key(&mut a, 'u');
    key(&mut a, 'u');
    assert_eq!(
        a.model().edit.projection,
        None,
        "nothing pending, nothing projected"
    );
}

/// Above the diff, as terraform's `Plan:` line: agents moved / added /
/// removed, the healthy workers that change rung (each counted: its rung
/// under the new order is not the agent it runs now), no route now → then.
#[test]
fn the_diff_has_a_plan_line_above_it() {
    let mut a = app(true);
    key(&mut a, 'J');
    a.settle();
    key(&mut a, 'w');
    let new = a.model().edit.order().expect("pending").to_vec();
    let wire: Vec<macfleet::wire::WorkerView> = a
        .model()
        .fleet
        .iter()
        .map(|(_, e)| e.view.to_wire(e.state, e.in_sync))
        .collect();
    let healthy: Vec<_> = wire
        .iter()
        .filter(|w| w.state == macfleet::wire::WorkerState::Healthy)
        .collect();
    let change = healthy
        .iter()
        .filter(|w| macfleet::plan::rung_of(*w, &new).0 != w.active_agent.as_deref())
        .count();
    assert!(change > 0, "J moves workers in this fleet");
    let p = a.model().edit.projection.clone().expect("projection");
    let want = format!(
        "Plan: 1 agent moved, 0 added, 0 removed · {change} of {} healthy workers change rung · no route {}→{}",
        healthy.len(),
        p.no_route_today,
        p.no_route
    );
    let lines = ui::lines(&ui::drawn(&a, 120, 40));
    let at = lines
        .iter()
        .position(|l| l.contains("write onto revision"))
        .expect("the diff's header");
    assert!(
        lines[at + 1].contains(&want),
        "{}\n{want}",
        lines.join("\n")
    );
    assert!(
        lines[at + 2].starts_with("---") || lines[at + 2].contains("--- "),
        "the diff below it:\n{}",
        lines.join("\n")
    );
}

/// The TUI projects its own compact workers; `agents --dry-run` projects
/// the hub's wire workers. Same fleet, same answer.
#[test]
fn the_tui_projects_as_the_cli_does() {
    let (mut a, _) = fixture::app(500, true, Theme::new(false, false), 120, 40);
    key(&mut a, '1');
    for c in ['J', 'j', 'J', 'a', 'z', 'e', 'd'] {
        key(&mut a, c);
    }
    code(&mut a, KeyCode::Enter);
    code(&mut a, KeyCode::Enter);
    a.settle();
    let new = a.model().edit.order().expect("pending").to_vec();
    let wire: Vec<macfleet::wire::WorkerView> = a
        .model()
        .fleet
        .iter()
        .map(|(_, e)| e.view.to_wire(e.state, e.in_sync))
        .collect();
    assert!(wire.iter().any(|w| w.active_agent.is_none()));
    let cli = macfleet::plan::project(&wire, &a.model().config.agents, &new);
    assert!(cli.moves_workers());
    assert_eq!(a.model().edit.projection.as_ref(), Some(&cli));
}

#[test]
fn after_a_write_the_convergence_line_counts_healthy_workers_on_it() {
    let mut a = app(true);
    key(&mut a, 'J');
    key(&mut a, 'w');
    key(&mut a, 'y');
    a.update(Msg::Written(Ok(ConfigAccepted {
        revision: "r43".into(),
        agents: v(&["pi", "opencode", "claude", "codex"]),
    })));
    a.settle();
    let r = a.model().edit.rollout.clone().expect("a rollout");
    assert_eq!(r.revision, "r43");
    assert_eq!((r.on, r.healthy), (0, a.model().fleet.agg.healthy));
    assert_eq!(r.behind(), a.model().fleet.agg.healthy);
    key(&mut a, 'J');
    assert!(status(&a).contains("not arrived yet"), "{}", status(&a));
    assert!(
        !a.model().edit.is_pending(),
        "no edit without the new document"
    );
    a.update(Msg::Agents {
        revision: "r43".into(),
        agents: v(&["pi", "opencode", "claude", "codex"]),
        text: DOC.replace(
            "    \"opencode\", # cheap\n    \"pi\",       # fast\n",
            "    \"pi\",       # fast\n    \"opencode\", # cheap\n",
        ),
    });
    key(&mut a, 'J');
    assert!(a.model().edit.is_pending());
    assert_eq!(a.model().edit.rollout, None, "a new edit ends it");
}

#[test]
fn an_empty_list_is_refused_before_it_reaches_the_hub_and_the_edit_stays() {
    let mut a = app(true);
    for _ in 0..4 {
        key(&mut a, 'g');
        key(&mut a, 'd');
    }
    assert_eq!(order(&a), Vec::<String>::new());
    assert!(a.model().edit.is_pending());
    assert!(key(&mut a, 'w').is_empty(), "nothing sent");
    assert_eq!(*a.edit_mode(), Mode::Editing, "no diff to confirm");
    assert!(status(&a).starts_with("cannot write:"), "{}", status(&a));
    assert!(status(&a).ends_with("(the edit is kept)"), "{}", status(&a));
    key(&mut a, 'u');
    assert_eq!(order(&a), v(&["codex"]), "every step can be undone");
}

#[test]
fn r_on_history_prepares_a_revert_as_a_pending_edit() {
    let (mut a, _) = fixture::app(20, true, Theme::new(false, false), 120, 40);
    key(&mut a, '4');
    assert_eq!(a.view(), "history");
    // The newest entry is the current order: nothing to revert.
    key(&mut a, 'R');
    assert!(!a.model().edit.is_pending(), "{}", status(&a));
    // Down to the first entry whose order differs from the hub's now.
    let mut want = a.model().config.agents.clone();
    for _ in 0..a.model().config.history.len() {
        code(&mut a, KeyCode::Down);
        let k = a
            .pane_as::<HistoryPane>()
            .list
            .selected()
            .cloned()
            .expect("an entry");
        want = a.model().history_entry(&k).expect("entry").agents.clone();
        if want != a.model().config.agents {
            break;
        }
    }
    assert_ne!(
        want,
        a.model().config.agents,
        "the fixture holds an older order"
    );
    assert!(key(&mut a, 'R').is_empty(), "a revert sends nothing");
    assert_eq!(a.view(), "ladder");
    assert_eq!(order(&a), want);
    assert!(a.model().edit.is_pending());
    key(&mut a, 'u');
    assert!(!a.model().edit.is_pending(), "u undoes it");

    let (mut r, _) = fixture::app(20, false, Theme::new(false, false), 120, 40);
    key(&mut r, '4');
    code(&mut r, KeyCode::Down);
    key(&mut r, 'R');
    assert_eq!(status(&r), "read-only");
    assert_eq!(r.model().edit.plan, None);
}

fn edited(app: &mut App, sent: &str, back: &str) -> Vec<Effect> {
    app.update(Msg::Edited {
        sent: sent.into(),
        back: Ok(back.into()),
    })
}

fn opened(fx: &[Effect]) -> String {
    match fx {
        [Effect::OpenEditor { text }] => text.clone(),
        _ => panic!("the editor should open, not {fx:?}"),
    }
}

#[test]
fn e_opens_the_whole_document_and_what_comes_back_is_the_pending_edit() {
    let mut a = app(true);
    let sent = opened(&key(&mut a, 'e'));
    assert_eq!(sent, DOC, "the hub's document, whole");
    assert!(!a.model().edit.is_pending(), "opening changes nothing");
    // The editor moved codex to the top and reworded pi's comment.
    let back = DOC
        .replace("    \"codex\",    # last\n", "")
        .replace(
            "MAC_CODING_AGENTS = [\n",
            "MAC_CODING_AGENTS = [\n    \"codex\",    # last\n",
        )
        .replace("# fast", "# fastest");
    assert!(edited(&mut a, &sent, &back).is_empty(), "taken: no reopen");
    assert_eq!(order(&a), v(&["codex", "opencode", "pi", "claude"]));
    assert!(a.model().edit.is_pending());
    assert!(status(&a).contains("pending"), "{}", status(&a));
    // The projection follows it, and w shows and y sends exactly it.
    assert!(a.model().edit.projection.is_some());
    key(&mut a, 'w');
    let Mode::Review { text, diff, .. } = a.edit_mode().clone() else {
        panic!("the diff screen, not {:?}", *a.edit_mode())
    };
    assert_eq!(text, back);
    assert!(diff.contains("+    \"pi\",       # fastest"), "{diff}");
    assert_eq!(
        key(&mut a, 'y'),
        vec![Effect::Write {
            text: back,
            if_match: REVISION.into()
        }]
    );
}

#[test]
fn a_document_not_taken_reopens_with_the_error_on_top_and_nothing_typed_lost() {
    let mut a = app(true);
    let sent = opened(&key(&mut a, 'e'));
    let dup = DOC.replace("\"codex\",    # last", "\"pi\",    # again");
    let again = opened(&edited(&mut a, &sent, &dup));
    assert!(
        again.starts_with("# macfleet: not taken: MAC_CODING_AGENTS names \"pi\" twice\n"),
        "{again}"
    );
    assert!(
        again.ends_with(&dup),
        "what was typed is all there: {again}"
    );
    assert!(!a.model().edit.is_pending(), "nothing taken");
    // Reopened and fixed (the notes left in place): the notes go, the
    // fix is taken.
    let reopened = again.clone();
    let fixed = again.replace("\"pi\",    # again", "\"codex\",    # last");
    let fixed = fixed
        .replacen("    \"opencode\", # cheap\n", "", 1)
        .replacen(
            "    \"claude\",   # strong\n",
            "    \"claude\",   # strong\n    \"opencode\", # cheap\n",
            1,
        );
    assert!(edited(&mut a, &reopened, &fixed).is_empty());
    assert_eq!(order(&a), v(&["pi", "claude", "opencode", "codex"]));
    let Some(plan) = &a.model().edit.plan else {
        panic!("an edit")
    };
    let text = plan.render().expect("renders");
    assert!(!text.contains("macfleet:"), "the notes are gone: {text}");
    assert!(text.starts_with("# the fleet's route order\n"), "{text}");
    assert_eq!(a.model().edit.draft, None);
    // An editor that failed changes nothing.
    let fx = a.update(Msg::Edited {
        sent: text.clone(),
        back: Err("\"vi\" exited with exit status: 1".into()),
    });
    assert!(fx.is_empty());
    assert!(status(&a).contains("nothing changed"), "{}", status(&a));
    assert_eq!(order(&a), v(&["pi", "claude", "opencode", "codex"]));
}

/// Quitting the editor after a document was not taken cancels: the next
/// `e` opens the hub's document (not the broken draft with its notes), and
/// the draft is kept as a file whose path the status line names.
#[test]
fn cancelling_the_editor_after_a_document_not_taken_returns_to_the_hubs() {
    let mut a = app(true);
    let sent = opened(&key(&mut a, 'e'));
    let dup = DOC.replace("\"codex\",    # last", "\"pi\",    # again");
    let again = opened(&edited(&mut a, &sent, &dup));
    // Quit without saving: the file holds what the editor was given.
    let fx = edited(&mut a, &again, &again);
    assert_eq!(
        fx,
        vec![Effect::KeepDraft { text: dup.clone() }],
        "the draft kept as a file"
    );
    assert!(status(&a).contains("cancelled"), "{}", status(&a));
    assert_eq!(a.model().edit.draft, None);
    assert!(!a.model().edit.is_pending());
    a.update(Msg::DraftKept(Ok(
        "/state/macfleet/drafts/hub-1.toml".into()
    )));
    assert!(
        status(&a).starts_with("what you typed is kept in /state/macfleet/drafts/hub-1.toml"),
        "{}",
        status(&a)
    );
    let next = opened(&key(&mut a, 'e'));
    assert_eq!(next, DOC, "e opens the hub's document, not the draft");
    // `:cq` (an editor that fails) on a draft not taken cancels the same way.
    let again = opened(&edited(&mut a, &next, &dup));
    let fx = a.update(Msg::Edited {
        sent: again,
        back: Err("\"vi\" exited with exit status: 1".into()),
    });
    assert_eq!(fx, vec![Effect::KeepDraft { text: dup }]);
    assert_eq!(opened(&key(&mut a, 'e')), DOC);
}

#[test]
fn the_editor_coming_back_unchanged_cancels_and_says_so() {
    let mut a = app(true);
    let sent = opened(&key(&mut a, 'e'));
    assert!(edited(&mut a, &sent, &sent).is_empty());
    assert!(!a.model().edit.is_pending());
    assert_eq!(
        status(&a),
        "the editor closed with the document unchanged: cancelled"
    );
    // With a pending move, e opens the document as it would be written.
    key(&mut a, 'J');
    let sent = opened(&key(&mut a, 'e'));
    assert!(sent.find("\"pi\"") < sent.find("\"opencode\""), "{sent}");
    assert!(edited(&mut a, &sent, &sent).is_empty());
    assert_eq!(order(&a), v(&["pi", "opencode", "claude", "codex"]), "kept");
}

#[test]
fn an_editor_that_never_brings_a_valid_document_stops_reopening() {
    let mut a = app(true);
    let mut sent = opened(&key(&mut a, 'e'));
    let mut rounds = 0;
    for i in 0..100 {
        let bad = format!("{}\nMAC_CODING_AGENTS = []\n# {i}\n", DOC);
        let fx = edited(&mut a, &sent, &bad);
        rounds += 1;
        match fx.as_slice() {
            [Effect::OpenEditor { text }] => sent = text.clone(),
            [] => break,
            _ => panic!("{fx:?}"),
        }
    }
    assert_eq!(rounds, macfleet::tui::model::edit::MAX_REOPENS + 1);
    assert!(status(&a).contains("e reopens it"), "{}", status(&a));
    assert!(a.model().edit.draft.is_some());
}

/// After `J`, `w`, `y` and the hub's 200 (revision r43): the workers in
/// `on` report r43 (a delta page), the others what they reported before.
fn written_and_partly_rolled_out(a: &mut App, on: &[usize]) {
    key(a, 'J');
    key(a, 'w');
    key(a, 'y');
    a.update(Msg::Written(Ok(ConfigAccepted {
        revision: "r43".into(),
        agents: v(&["pi", "opencode", "claude", "codex"]),
    })));
    let now = fixture::t0();
    let workers = on
        .iter()
        .map(|&i| macfleet::wire::WorkerView {
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
    a.settle();
}

/// Issue 33: workers behind the written revision because they are in a
/// turn they will leave for the new list are counted on the convergence
/// line and listed with why: `in a turn on opencode for 4m: switches at
/// its next turn (to pi)`.
#[test]
fn workers_behind_in_a_turn_say_why_on_the_line_and_in_its_list() {
    use macfleet::wire::Turn;
    let mut a = app(true);
    written_and_partly_rolled_out(&mut a, &[0, 1, 2]);
    let now = fixture::t0();
    let turning = [8, 9]
        .iter()
        .map(|&i| macfleet::wire::WorkerView {
            turn: Some(Some(Turn {
                agent: "opencode".into(),
                since: now - chrono::TimeDelta::minutes(4),
            })),
            next_turn_agent: Some(Some("pi".into())),
            ..fixture::worker(i, now)
        })
        .collect();
    let mut page = fixture::page(turning, now, true, 3);
    page.config_revision = "r43".into();
    a.update(Msg::Workers {
        page,
        at: a.model().mono_now,
    });
    a.settle();
    let r = a.model().edit.rollout.clone().expect("a rollout");
    assert_eq!((r.on, r.healthy, r.in_turn), (3, 18, 2), "{r:?}");
    let (behind, _) = a.model().rollout_behind();
    let w8 = behind
        .iter()
        .find(|b| b.worker == "w-00008")
        .expect("w-00008 behind");
    assert_eq!(
        w8.in_turn
            .as_ref()
            .map(|t| (t.agent.as_str(), t.next.as_deref())),
        Some(("opencode", Some("pi")))
    );
    assert!(behind.iter().filter(|b| b.in_turn.is_some()).count() == 2);
    let s = screen_text(&a);
    assert!(
        s.contains("15 behind, 2 in a turn: they switch at their next turn"),
        "{s}"
    );
    key(&mut a, 'G');
    key(&mut a, 'j');
    code(&mut a, KeyCode::Enter);
    let s = screen_text(&a);
    assert!(
        s.contains("2 of them in a turn: each switches at its next turn"),
        "{s}"
    );
    assert!(
        s.contains(
            "w-00008        in a turn on opencode for 4m: switches at its next turn (to pi)"
        ),
        "{s}"
    );
    assert!(
        s.contains("w-00004        healthy, still reports r41: last heard"),
        "{s}"
    );
}

#[test]
fn enter_on_the_convergence_line_lists_the_workers_behind_and_why() {
    use macfleet::tui::app::Detail;
    use macfleet::wire::WorkerState;
    let mut a = app(true);
    written_and_partly_rolled_out(&mut a, &[0, 1, 2]);
    let r = a.model().edit.rollout.clone().expect("a rollout");
    assert_eq!((r.on, r.healthy), (3, 18), "{r:?}");
    let (behind, all) = a.model().rollout_behind();
    // In the fixture w-00003 is stale and w-00007 lost.
    assert_eq!(all, 17, "20 workers, 3 on r43");
    assert_eq!(behind.len(), 17);
    let last: Vec<(&str, WorkerState)> = behind[15..]
        .iter()
        .map(|b| (b.worker.as_str(), b.state))
        .collect();
    assert_eq!(
        last,
        [
            ("w-00003", WorkerState::Stale),
            ("w-00007", WorkerState::Lost)
        ]
    );
    let healthy = behind
        .iter()
        .take_while(|b| b.state == WorkerState::Healthy)
        .count();
    assert_eq!(healthy, r.behind(), "the healthy ones behind come first");
    assert!(
        behind[healthy..]
            .iter()
            .all(|b| b.state != WorkerState::Healthy),
        "{behind:?}"
    );
    assert!(behind.iter().all(|b| b.revision.as_deref() != Some("r43")));
    assert!(
        behind
            .iter()
            .any(|b| b.worker == "w-00004" && b.revision.as_deref() == Some("r41")),
        "w-00004 reports an older revision"
    );
    // The cursor goes past the last agent onto the line; Enter lists them.
    key(&mut a, 'G');
    assert!(!a.model().edit.rollout.as_ref().is_some_and(|r| r.selected));
    key(&mut a, 'j');
    assert!(a.model().edit.rollout.as_ref().is_some_and(|r| r.selected));
    let s = screen_text(&a);
    assert!(s.contains("Enter lists the workers behind"), "{s}");
    code(&mut a, KeyCode::Enter);
    assert_eq!(a.overlay().detail, Some(Detail::Rollout));
    let s = screen_text(&a);
    assert!(s.contains("rollout of r43"), "{s}");
    assert!(s.contains("3/18 healthy workers on r43"), "{s}");
    assert!(
        s.contains("behind: 15 healthy on an older revision · 1 stale · 1 lost (not on it)"),
        "{s}"
    );
    assert!(
        s.contains("w-00004        healthy, still reports r41: last heard"),
        "{s}"
    );
    assert!(
        s.contains("w-00003        stale: last heard 1m ago, on r42"),
        "{s}"
    );
    // j scrolls the list, it does not leave it.
    key(&mut a, 'j');
    assert_eq!(a.overlay().detail, Some(Detail::Rollout));
    code(&mut a, KeyCode::Esc);
    assert_eq!(a.overlay().detail, None);
    key(&mut a, 'k');
    assert!(!a.model().edit.rollout.as_ref().is_some_and(|r| r.selected));
    code(&mut a, KeyCode::Enter);
    assert_eq!(
        a.overlay().detail,
        Some(Detail::Agent("codex".into())),
        "back on the last agent"
    );
}

#[test]
fn a_412_after_the_editor_keeps_what_was_typed_and_says_what_it_undoes() {
    let mut a = app(true);
    let sent = opened(&key(&mut a, 'e'));
    // Typed outside the list: retries.
    let typed = DOC.replace("retries = 2", "retries = 9");
    edited(&mut a, &sent, &typed);
    key(&mut a, 'w');
    key(&mut a, 'y');
    a.update(Msg::Written(Err(conflict())));
    let theirs = DOC.replace("# the fleet's route order", "# the fleet's order");
    a.update(Msg::Agents {
        revision: "r44".into(),
        agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
        text: theirs,
    });
    let Mode::Review { text, diff, .. } = a.edit_mode().clone() else {
        panic!("the new diff, not {:?}", *a.edit_mode())
    };
    assert_eq!(text, typed, "what was typed, whole");
    assert!(
        diff.contains("-# the fleet's order\n+# the fleet's route order\n"),
        "{diff}"
    );
    assert!(status(&a).contains("kept whole"), "{}", status(&a));
}

fn broken() -> (String, macfleet::tui::model::config::OnDisk) {
    let text = format!("{DOC}[human]\nimportant =\n");
    let d = macfleet::tui::model::config::OnDisk {
        revision: "rb".into(),
        text: text.clone(),
        reason: macfleet::wire::ConfigInvalid {
            message: "not TOML: expected a value".into(),
            line: Some(12),
            column: Some(12),
        },
    };
    (text, d)
}

/// The hub's file was broken by hand under a pending edit and `y` met the
/// 412: the refetch brings the file as it stands on disk, which does not
/// validate. The edit is kept, the diff closes saying why, `w` is held with
/// a sentence (never a diff onto a revision that is gone, and nothing
/// asked of the hub again and again), and `e` opens the file on disk with
/// the reason on top; what the editor leaves is a mend, reviewed against
/// the file on disk and written with `If-Match` naming it.
#[test]
fn a_412_onto_a_file_that_does_not_validate_holds_w_and_e_mends_it() {
    let mut a = app(true);
    key(&mut a, 'J');
    key(&mut a, 'w');
    key(&mut a, 'y');
    let fx = a.update(Msg::Written(Err(conflict())));
    assert!(fx.contains(&Effect::FetchConfig));
    let (text, on_disk) = broken();
    let fx = a.update(Msg::DiskInvalid(on_disk));
    assert!(fx.is_empty(), "nothing asked again: {fx:?}");
    assert!(matches!(*a.edit_mode(), Mode::Editing));
    assert!(a.model().edit.is_pending(), "the edit is kept");
    let s = screen_text(&a);
    assert!(
        s.contains("not written: the hub's file does not validate (line 12, column 12)"),
        "{s}"
    );

    let fx = key(&mut a, 'w');
    assert!(fx.is_empty(), "{fx:?}");
    assert!(matches!(*a.edit_mode(), Mode::Editing), "no diff");
    let s = screen_text(&a);
    assert!(
        s.contains(&format!(
            "cannot write onto revision {REVISION}: the hub's file does not validate"
        )),
        "{s}"
    );

    let fx = key(&mut a, 'e');
    let [Effect::OpenEditor { text: opened }] = fx.as_slice() else {
        panic!("the editor, not {fx:?}")
    };
    assert!(
        opened.starts_with(
            "# macfleet: the hub's file does not validate (line 12, column 12): not TOML: expected a value\n"
        ),
        "{opened}"
    );
    assert!(
        opened.contains("# macfleet: your pending order (pi, opencode, "),
        "what is set aside is named: {opened}"
    );
    assert!(opened.ends_with(&text), "the file as it stands: {opened}");

    let mended = text.replace("important =\n", "important = true\n");
    a.update(Msg::Edited {
        sent: opened.clone(),
        back: Ok(mended.clone()),
    });
    assert!(screen_text(&a).contains("the mended document is pending"));
    key(&mut a, 'w');
    let Mode::Review {
        text: to_send,
        if_match,
        diff,
        ..
    } = a.edit_mode().clone()
    else {
        panic!("the diff, not {:?}", *a.edit_mode())
    };
    assert_eq!(if_match, "rb", "the broken file is what it replaces");
    assert_eq!(to_send, mended);
    assert!(
        diff.contains("-important =") && diff.contains("+important = true"),
        "{diff}"
    );
    assert!(
        screen_text(&a).contains("replace the hub's file that does not validate (revision rb)"),
        "{}",
        screen_text(&a)
    );
    let fx = key(&mut a, 'y');
    assert!(
        fx.contains(&Effect::Write {
            text: mended,
            if_match: "rb".into()
        }),
        "{fx:?}"
    );
}

/// With nothing pending, an edit key on a file that does not validate says
/// so and what opens it; the health's word about the file asks for the
/// document once per change of it, not with every poll.
#[test]
fn a_file_that_does_not_validate_is_asked_for_once_and_edit_keys_say_why() {
    use macfleet::wire::{Health, HealthConfig, HealthDatabase, OrderSource};
    let mut a = app(true);
    let (_, on_disk) = broken();
    let health = |invalid: Option<macfleet::wire::ConfigInvalid>| Health {
        status: if invalid.is_some() { "degraded" } else { "ok" }.into(),
        problems: vec![],
        built_in_order: false,
        config: Some(HealthConfig {
            order: OrderSource::LastAccepted,
            projected_revision: REVISION.into(),
            agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
            invalid,
        }),
        database: HealthDatabase {
            unreadable_rows_skipped: 0,
            started_empty: false,
            quick_check_problems: 0,
            recreated: 0,
            recreated_at: None,
            unavailable: false,
            failovers_dropped: Default::default(),
        },
        word: None,
    };
    let bad = Some(on_disk.reason.clone());
    assert!(
        a.update(Msg::Health(health(bad.clone())))
            .contains(&Effect::FetchConfig)
    );
    assert!(
        !a.update(Msg::Health(health(bad.clone())))
            .contains(&Effect::FetchConfig)
    );
    a.update(Msg::DiskInvalid(on_disk));
    assert!(
        !a.update(Msg::Health(health(bad)))
            .contains(&Effect::FetchConfig)
    );
    key(&mut a, 'J');
    assert!(!a.model().edit.is_pending());
    let s = screen_text(&a);
    assert!(
        s.contains("the hub's file does not validate (line 12, column 12): not TOML: expected a value: e opens it"),
        "{s}"
    );
    // Mended on disk: health says so, the document is asked for again,
    // and it is an edit like any other.
    assert!(
        a.update(Msg::Health(health(None)))
            .contains(&Effect::FetchConfig)
    );
    a.update(Msg::Agents {
        revision: REVISION.into(),
        agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
        text: DOC.into(),
    });
    key(&mut a, 'J');
    assert!(a.model().edit.is_pending());
}

/// A hand edit of the hub's file that changed an agent the edit moved:
/// the conflict's heading says `changed by hand on disk`, not `by
/// (changed on disk)` (issue 27, "Words an owner needs").
#[test]
fn a_conflict_with_a_hand_edit_says_changed_by_hand_on_disk() {
    use macfleet::wire::{History, HistoryEntry};
    let (mut a, _) = fixture::app(20, true, Theme::new(false, false), 120, 40);
    a.settle();
    key(&mut a, '1');
    key(&mut a, 'J');
    key(&mut a, 'w');
    key(&mut a, 'y');
    a.update(Msg::Written(Err(conflict())));
    a.update(Msg::History(History {
        revisions: vec![HistoryEntry {
            revision: "r44".into(),
            at: fixture::t0() - chrono::TimeDelta::seconds(5),
            by: "(changed on disk)".into(),
            agents: v(&["pi", "claude", "codex"]),
            previous_agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
            client: None,
        }],
    }));
    a.update(Msg::Agents {
        revision: "r44".into(),
        agents: v(&["pi", "claude", "codex"]),
        text: DOC.replace("    \"opencode\", # cheap\n", ""),
    });
    assert!(matches!(*a.edit_mode(), Mode::Conflict { .. }));
    let s = screen_text(&a);
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("the hub's list changed (now r44 changed by hand on disk, 5s ago) while you edited it from "),
        "{s}"
    );
    assert!(!flat.contains("by (changed on disk)"), "{s}");
}

/// At 80 columns the conflict's first line (their revision, who wrote it
/// and through what, when, and the base the edit began on) wraps onto a
/// second row instead of losing its end at the screen's edge.
#[test]
fn the_conflict_says_who_and_the_base_whole_at_80_columns() {
    use macfleet::wire::{History, HistoryEntry};
    let (mut a, _) = fixture::app(20, true, Theme::new(false, false), 80, 24);
    a.settle();
    key(&mut a, '1');
    key(&mut a, 'J');
    key(&mut a, 'w');
    key(&mut a, 'y');
    a.update(Msg::Written(Err(conflict())));
    a.update(Msg::History(History {
        revisions: vec![HistoryEntry {
            revision: "r44".into(),
            at: fixture::t0() - chrono::TimeDelta::seconds(5),
            by: "demo-owner".into(),
            agents: v(&["pi", "claude", "codex"]),
            previous_agents: fixture::LADDER.iter().map(|s| s.to_string()).collect(),
            client: Some("macfleet/0.1.0 (agents)".into()),
        }],
    }));
    // They removed opencode, which `J` moved: a conflict.
    a.update(Msg::Agents {
        revision: "r44".into(),
        agents: v(&["pi", "claude", "codex"]),
        text: DOC.replace("    \"opencode\", # cheap\n", ""),
    });
    assert!(matches!(*a.edit_mode(), Mode::Conflict { .. }));
    let s = screen_text(&a);
    let flat = s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!(
            "the hub's list changed (now r44 by demo-owner via macfleet/0.1.0 (agents), 5s ago) while you edited it from {REVISION}"
        )),
        "{s}"
    );
}

/// F4 (issue 27): a colleague's write overtook the edit (`begun on r42`,
/// the note names r44); `y` then meets a 412 (r45 came in between) and the
/// edit is replayed onto r45. The note follows it: r45, still begun on r42.
/// Before, it said the order stood on r44, a revision that was gone.
#[test]
fn a_412_after_a_colleagues_write_moves_the_note_to_the_revision_replayed_onto() {
    let mut a = app(true);
    key(&mut a, 'J');
    let doc = |n: u32| DOC.replace("retries = 2", &format!("retries = {n}"));
    let agents = || fixture::LADDER.iter().map(|s| s.to_string()).collect();
    a.update(Msg::Agents {
        revision: "r44".into(),
        agents: agents(),
        text: doc(3),
    });
    let s = screen_text(&a);
    assert!(
        s.contains("(begun on r42)") && s.contains("stands on r44"),
        "{s}"
    );
    key(&mut a, 'w');
    key(&mut a, 'y');
    a.update(Msg::Written(Err(conflict())));
    a.update(Msg::Agents {
        revision: "r45".into(),
        agents: agents(),
        text: doc(4),
    });
    assert!(matches!(*a.edit_mode(), Mode::Review { .. }));
    code(&mut a, KeyCode::Esc);
    let s = screen_text(&a);
    assert!(
        s.contains("! r45 written") && s.contains("(begun on r42)") && s.contains("stands on r45"),
        "{s}"
    );
    assert!(!s.contains("r44"), "a revision that is gone:\n{s}");
}

/// An add after a write is a new edit, as a move is: the written
/// revision's convergence line ends and the pending edit's lines take the
/// place under the rows. Before, both were drawn on one row, the shorter
/// over the longer (`… no route 0→0in a turn: they switch …`, seen in
/// tmux).
#[test]
fn an_add_after_a_write_ends_the_convergence_line_as_a_move_does() {
    let mut a = app(true);
    written_and_partly_rolled_out(&mut a, &[0, 1]);
    let doc = DOC.replace(
        "    \"opencode\", # cheap\n    \"pi\",       # fast\n",
        "    \"pi\",       # fast\n    \"opencode\", # cheap\n",
    );
    a.update(Msg::Agents {
        revision: "r43".into(),
        agents: v(&["pi", "opencode", "claude", "codex"]),
        text: doc,
    });
    assert!(screen_text(&a).contains("healthy workers on r43"));
    key(&mut a, 'a');
    ui::typed(&mut a, "cursor");
    code(&mut a, KeyCode::Enter);
    assert!(a.model().edit.is_pending(), "{}", status(&a));
    assert_eq!(a.model().edit.rollout, None, "a new edit ends it");
    let s = screen_text(&a);
    assert!(
        s.contains("pending order over") && !s.contains("healthy workers on r43"),
        "{s}"
    );
}

/// A write whose answer was lost and whose hub could not be asked has an
/// unknown outcome: the Ladder's line under the rows says so, never
/// `last write failed` (seen in tmux: `last write failed: may not have
/// been written: …`, which said both).
#[test]
fn a_write_whose_outcome_is_unknown_is_not_said_to_have_failed() {
    let mut a = app(true);
    key(&mut a, 'J');
    key(&mut a, 'w');
    let fx = key(&mut a, 'y');
    let Some(Effect::Write { text, if_match }) =
        fx.into_iter().find(|e| matches!(e, Effect::Write { .. }))
    else {
        panic!("the write")
    };
    a.update(Msg::WriteLost {
        why: "hub unreachable".into(),
    });
    a.update(Msg::WriteUnknown {
        text,
        if_match,
        key: "k1".into(),
        error: "the answer to the write was lost (hub unreachable)".into(),
    });
    let s = screen_text(&a);
    assert!(
        s.contains("last write may not have been written") && !s.contains("last write failed"),
        "{s}"
    );
}
