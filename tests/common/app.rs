//! Driving the TUI's `App` through `update` in tests: the fixture fleet at
//! 120x40, keys as the terminal sends them, the screen as text.
#![allow(dead_code)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use macfleet::tui::app::App;
use macfleet::tui::fixture;
use macfleet::tui::msg::{Effect, Msg};
use macfleet::tui::ui::theme::Theme;

/// The fixture fleet of `n` workers at 120x40, colours on.
pub fn app(n: usize, can_write: bool) -> (App, std::time::Instant) {
    fixture::app(n, can_write, Theme::new(false, false), 120, 40)
}

pub fn key(app: &mut App, c: char) -> Vec<Effect> {
    app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::NONE,
    )))
}

pub fn code(app: &mut App, c: KeyCode) -> Vec<Effect> {
    app.update(Msg::Key(KeyEvent::new(c, KeyModifiers::NONE)))
}

pub fn ctrl(app: &mut App, c: char) -> Vec<Effect> {
    app.update(Msg::Key(KeyEvent::new(
        KeyCode::Char(c),
        KeyModifiers::CONTROL,
    )))
}

pub fn typed(app: &mut App, s: &str) {
    for c in s.chars() {
        key(app, c);
    }
}

/// The screen the views draw at the app's size, one string a row.
pub fn screen(a: &App) -> Vec<String> {
    let (w, h) = a.size();
    let mut buf = ratatui::buffer::Buffer::empty(ratatui::layout::Rect::new(0, 0, w, h));
    a.draw(&mut buf);
    (0..h)
        .map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>())
        .collect()
}

/// The help of the pane on screen, every line, as text.
pub fn help_lines(a: &App) -> Vec<String> {
    let titles: Vec<&str> = a.panes().map(|p| p.title()).collect();
    let p = a.pane();
    let of = macfleet::tui::overlays::help::Of {
        pane: p.name(),
        title: p.title(),
        titles: &titles,
        can_write: a.model().can_write,
    };
    macfleet::tui::overlays::help::lines(a.theme(), &of)
        .iter()
        .map(|l| l.to_string())
        .collect()
}

/// The key table's help of the pane on screen.
pub fn help_bindings(a: &App) -> Vec<macfleet::tui::keys::HelpLine> {
    let titles: Vec<&str> = a.panes().map(|p| p.title()).collect();
    macfleet::tui::keys::help_for(a.view(), &titles, a.theme().ascii)
}
