//! A problem the hub knows (issue 29): sent to each new subscriber of the
//! event stream when it connects (`event: problem`), parsed by the client
//! and shown on the status line as `hub: <sentence>`, scrubbed.

use std::time::Duration;

use chrono::Utc;
use macfleet::tui::msg::Msg;
use macfleet::wire::ProblemEvent;

use crate::pty::{DocHub, Pty};
use crate::ui::app;

/// The binary against a real hub whose document does not validate: the
/// problem health says (the config's), sent on connect, reaches the
/// status line. Before: the client skipped `problem` events, and the TUI
/// did not ask for them.
#[test]
fn a_problem_the_hub_knows_at_connect_reaches_the_status_line() {
    let hub = DocHub::start("[fleet]\nMAC_CODING_AGENTS = [\"claude\" \"pi\"]\n");
    let mut t = Pty::spawn(
        &["--hub", &hub.url],
        &[("MAC_HUB_TOKEN", hub.viewer.as_str())],
    );
    // The header's line 3 says health's problems too (from the poll): the
    // event's own is the status line, under the panes.
    let on_status_line = |s: &str| {
        s.lines()
            .skip(4)
            .any(|l| l.contains("hub: ") && l.contains("no accepted MAC_CODING_AGENTS"))
    };
    let screen = t.wait_until(
        "the problem on the status line",
        Duration::from_secs(30),
        on_status_line,
    );
    eprintln!("{screen}");
    t.send("q");
}

/// The sentence is the hub's text: a secret in it is scrubbed.
#[test]
fn a_problem_event_is_said_scrubbed() {
    let (mut a, _) = app(3, false);
    // An Anthropic key's shape (93 characters after the prefix), built here.
    let body: String = (0..93)
        .map(|i| char::from(b"aB3dE5gH7jK9mN"[i % 14]))
        .collect();
    let key = format!("{}{body}", "sk-ant-api03-");
    a.update(Msg::HubProblem(ProblemEvent {
        at: Utc::now(),
        kind: "hand_edit_kept".into(),
        path: "/srv/hub.toml.kept".into(),
        message: format!("a hand edit kept aside # {key}"),
    }));
    let said = a.status().expect("said").text.clone();
    assert!(said.starts_with("hub: a hand edit kept aside"), "{said}");
    assert!(!said.contains(&key), "{said}");
}
