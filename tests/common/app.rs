//! Driving the TUI's `App` through `update` in tests: the fixture fleet at
//! 120x40, keys as the terminal sends them, the screen as text.
#![allow(dead_code)]

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use macfleet::tui::app::App;
use macfleet::tui::fixture;
use macfleet::tui::msg::{Effect, Msg};
use macfleet::tui::ui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

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

/// The screen `App::draw` draws at `w`x`h`, as ratatui's buffer.
pub fn drawn(a: &App, w: u16, h: u16) -> Buffer {
    let mut buf = Buffer::empty(Rect::new(0, 0, w, h));
    a.draw(&mut buf);
    buf
}

/// Row `y` of a buffer as text (the one buffer-to-text of the TUI's
/// tests; `TestBackend` and insta read it for the snapshots).
pub fn row(buf: &Buffer, y: u16) -> String {
    let a = buf.area;
    (a.x..a.x + a.width).map(|x| buf[(x, y)].symbol()).collect()
}

/// A buffer as text, one string a row.
pub fn lines(buf: &Buffer) -> Vec<String> {
    let a = buf.area;
    (a.y..a.y + a.height).map(|y| row(buf, y)).collect()
}

/// A buffer as text, each row ending in a newline.
pub fn text(buf: &Buffer) -> String {
    lines(buf).into_iter().map(|l| l + "\n").collect()
}

/// The screen drawn at the app's size, one string a row.
pub fn screen(a: &App) -> Vec<String> {
    let (w, h) = a.size();
    lines(&drawn(a, w, h))
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
        rolling: a.model().staged.baking().is_some(),
        fields: p.fields(),
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
