//! The on-call screens of issue #11 through `update` and the pure views:
//! the sparkline by the failovers' own times, state changes from the event
//! stream, the status word, the why line per rung, heartbeat age against the
//! threshold, AWAY NOW, failover ↔ worker, the raw record and the `:`
//! command line.

use chrono::TimeDelta;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use macfleet::tui::app::App;
use macfleet::tui::fixture::{self, t0};
use macfleet::tui::msg::Msg;
use macfleet::tui::theme::Theme;
use macfleet::tui::views;

fn app(n: usize, can_write: bool) -> (App, std::time::Instant) {
    fixture::app(n, can_write, Theme::new(false, false), 120, 40)
}

#[allow(dead_code)]
fn key(app: &mut App, c: char) -> Vec<macfleet::tui::msg::Effect> {
    app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )))
}

#[allow(dead_code)]
fn code(app: &mut App, c: KeyCode) -> Vec<macfleet::tui::msg::Effect> {
    app.update(Msg::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}

#[allow(dead_code)]
fn screen(a: &App) -> Vec<String> {
    let (w, h) = a.size;
    let mut buf = ratatui::buffer::Buffer::empty(ratatui::layout::Rect::new(0, 0, w, h));
    views::draw(a, &mut buf);
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect()
}

/// A worker back-filling its last hour sends old failovers now: each
/// belongs in the minute it happened, not in the minute it arrived.
#[test]
fn the_sparkline_buckets_failovers_by_their_own_time() {
    let (mut a, _) = app(10, false);
    let now = t0();
    let before = a.log.per_minute(now, 60);
    let mut r = fixture::failovers(1, now).events.pop().unwrap();
    r.seq = 1000;
    r.failover.id = "w-00000-backfill".into();
    r.failover.at = now - TimeDelta::minutes(30);
    r.received_at = now;
    a.update(Msg::Failover(r));
    a.settle();
    let after = a.log.per_minute(now, 60);
    let moved: Vec<usize> = (0..60)
        .filter(|i| before[*i].iter().sum::<u32>() != after[*i].iter().sum::<u32>())
        .collect();
    assert_eq!(
        moved,
        vec![29],
        "one more failover, 30 minutes back (index 59 is the current minute)"
    );
}
