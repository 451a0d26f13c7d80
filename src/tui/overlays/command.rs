//! The `:` command line, as in k9s: `:<pane>` (`:workers`, `:failovers`,
//! `:ladder`, `:history`: every pane by its name), `:<worker id>` (its
//! detail), `:ctx`, the context switcher, and `:messages`, every status
//! message of the session with its time (newest last, scrollable, Esc
//! closes). Bad input says what was wrong and keeps what was typed. Its
//! keys are the key table's `Command`, `Picker` and `Switching` scopes.
//! `Esc` over a pane also acknowledges the header's "another hub" line.

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Widget};

use super::{Ask, Ctx, Frame, Overlay, Yield};
use crate::textsafe::for_terminal as hub;
use crate::tui::ids::{PaneId, WORKERS};
use crate::tui::keys::{self, Action, Hints, Scope};
use crate::tui::model::Model;
use crate::tui::msg::Effect;
use crate::tui::pane::Detail;
use crate::tui::ui::theme::Theme;
use crate::tui::ui::{fit, line};

/// What `:` knows besides a worker id, for the error and the hint: the
/// panes by name (the one a session opens on first, then on in tab
/// order) and `ctx`.
pub fn commands(panes: &[&'static str], first: &str) -> Vec<&'static str> {
    let at = panes.iter().position(|p| *p == first).unwrap_or(0);
    let mut out: Vec<&'static str> = panes[at..].iter().chain(&panes[..at]).copied().collect();
    out.push("ctx");
    out.push("messages");
    out
}

/// The `:` prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CmdLine {
    pub editing: bool,
    pub text: String,
    /// What was wrong with the last command run (the text is kept).
    pub error: Option<String>,
}

/// The contexts `:ctx` offers, and where the session is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Contexts {
    /// Names in `$XDG_CONFIG_HOME/macfleet/config.toml`, sorted.
    pub names: Vec<String>,
    /// The context this session is on, if it came from one.
    pub current: Option<String>,
    /// The switcher is open, its cursor here.
    pub picker: Option<usize>,
    /// A pending edit would be dropped by switching to this one: asking.
    pub confirm: Option<String>,
    /// Asked the runner to switch to this one; until it answers.
    pub switching: Option<String>,
}

/// The `:` command line and the `:ctx` switcher.
#[derive(Debug, Default)]
pub struct Command {
    /// The `:` command line.
    pub cmd: CmdLine,
    /// The contexts `:ctx` switches between, and the current one.
    pub contexts: Contexts,
    /// `:messages` is open: how many of the newest messages are scrolled
    /// out below its bottom line (0: the newest is the last line).
    pub messages: Option<usize>,
}

impl Command {
    /// The contexts `:ctx` offers, and the one the session is on.
    pub fn set_contexts(&mut self, names: Vec<String>, current: Option<String>) {
        self.contexts.names = names;
        self.contexts.current = current;
    }

    /// The context the session is on, if it came from one.
    pub fn current(&self) -> Option<&str> {
        self.contexts.current.as_deref()
    }
}

impl Overlay for Command {
    fn key(&mut self, k: &KeyEvent, a: Option<Action>, cx: &mut Ctx) -> bool {
        if !self.cmd.editing && self.contexts.picker.is_none() && self.contexts.confirm.is_none()
        {
            if let Some(back) = self.messages {
                return scroll_messages(self, back, a, cx.model.said.len(), cx.page);
            }
        }
        key(self, cx.model, cx.names, cx.first, *k, cx.fx, cx.asks)
    }

    fn open_on(&mut self, a: Action, cx: &mut Ctx) -> bool {
        // Esc with nothing else to close or clear: the header's line
        // about another hub is seen.
        if a == Action::Back
            && cx.model.another_hub.is_some()
            && cx.pane.list().filter().text.is_empty()
        {
            cx.model.another_hub = None;
            return true;
        }
        if a == Action::Command {
            open(self);
        }
        a == Action::Command
    }

    fn give_way(&mut self, why: Yield) {
        if why == Yield::Question {
            self.cmd.editing = false;
        }
        self.messages = None;
    }

    fn holds_clicks(&self) -> bool {
        self.messages.is_some()
    }

    fn draw_body(&self, f: &Frame, area: Rect, buf: &mut Buffer) -> bool {
        let Some(back) = self.messages else {
            return false;
        };
        draw_messages(f.cx.theme, &f.cx.model.said, back, area, buf);
        true
    }

    fn draw_status(&self, f: &Frame, area: Rect, buf: &mut Buffer) -> bool {
        draw_status(f.cx.theme, self, &commands(f.names, f.first), area, buf)
    }

    fn draw_over(&self, f: &Frame, a: &crate::tui::ui::geom::Areas, _s: Rect, buf: &mut Buffer) {
        draw_picker(f.cx.theme, self, a.body, buf);
    }
}

/// `:` opens the prompt.
pub fn open(o: &mut Command) {
    o.cmd = CmdLine {
        editing: true,
        ..CmdLine::default()
    };
}

/// A key while the command line, the switcher or the switch question is
/// up; false when none of them is (the key is not theirs).
pub fn key(
    o: &mut Command,
    m: &Model,
    panes: &[&'static str],
    first: &str,
    k: KeyEvent,
    fx: &mut Vec<Effect>,
    asks: &mut Vec<Ask>,
) -> bool {
    if o.contexts.confirm.is_some() {
        let name = o.contexts.confirm.take().unwrap_or_default();
        if keys::action_in(Scope::Switching, &k) == Some(Action::Yes) {
            switch_to(o, name, fx, asks);
        } else {
            asks.push(Ask::Say("still here: the pending edit is kept".into()));
        }
        return true;
    }
    if let Some(sel) = o.contexts.picker {
        let n = o.contexts.names.len();
        match keys::action_in(Scope::Picker, &k) {
            Some(Action::Cancel) => o.contexts.picker = None,
            Some(Action::Down) => o.contexts.picker = Some((sel + 1).min(n.saturating_sub(1))),
            Some(Action::Up) => o.contexts.picker = Some(sel.saturating_sub(1)),
            Some(Action::Accept) => {
                o.contexts.picker = None;
                if let Some(name) = o.contexts.names.get(sel).cloned() {
                    choose_context(o, m, name, fx, asks);
                }
            }
            _ => {}
        }
        return true;
    }
    if !o.cmd.editing {
        return false;
    }
    match keys::action_in(Scope::Command, &k) {
        Some(Action::Quit) => asks.push(Ask::Quit),
        Some(Action::EraseAll) => o.cmd.text.clear(),
        Some(Action::Cancel) => o.cmd = CmdLine::default(),
        Some(Action::Erase) => {
            o.cmd.text.pop();
            o.cmd.error = None;
        }
        Some(Action::Accept) => run(o, m, panes, first, asks),
        Some(_) => {}
        None => {
            if let Some(c) = keys::text_char(&k) {
                o.cmd.text.push(c);
                o.cmd.error = None;
            }
        }
    }
    true
}

fn run(o: &mut Command, m: &Model, panes: &[&'static str], first: &str, asks: &mut Vec<Ask>) {
    let text = o.cmd.text.trim().to_string();
    if let Some(p) = panes.iter().find(|p| **p == text) {
        o.cmd = CmdLine::default();
        asks.push(Ask::Show(PaneId::new(p)));
        return;
    }
    if text == "messages" {
        o.cmd = CmdLine::default();
        o.messages = Some(0);
        return;
    }
    if text == "ctx" {
        if o.contexts.names.is_empty() {
            o.cmd.error = Some(
                "no contexts in $XDG_CONFIG_HOME/macfleet/config.toml (macfleet context add NAME --hub URL)"
                    .into(),
            );
            return;
        }
        o.cmd = CmdLine::default();
        let at = o
            .contexts
            .current
            .as_ref()
            .and_then(|c| o.contexts.names.iter().position(|n| n == c))
            .unwrap_or(0);
        o.contexts.picker = Some(at);
        return;
    }
    if m.fleet.slot_of(&text).is_some() {
        o.cmd = CmdLine::default();
        // The cursor on it when the filter shows it; its detail opens
        // either way.
        let d = Detail::Worker(text);
        asks.push(Ask::Show(WORKERS));
        asks.push(Ask::Select(d.clone()));
        asks.push(Ask::Open(d));
        return;
    }
    let list = commands(panes, first)
        .iter()
        .map(|c| format!(":{c}"))
        .collect::<Vec<_>>()
        .join(" ");
    o.cmd.error = Some(if text.is_empty() {
        format!("type a command: {list}, or a worker id")
    } else if m.large.is_some() && text.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        // Large-fleet mode holds the rows on screen, not the fleet: the
        // hub is asked through the Workers filter.
        format!(
            "{} is not on screen (a large fleet: only the rows shown are held); on the Workers \
             view, /worker:{}$ asks the hub for it",
            hub(&text),
            hub(&text)
        )
    } else if text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text.contains(|c: char| c.is_ascii_digit())
    {
        format!("no worker {} reports to this hub", hub(&text))
    } else {
        format!("unknown command {}: try {list}, or a worker id", hub(&text))
    });
}

fn choose_context(
    o: &mut Command,
    m: &Model,
    name: String,
    fx: &mut Vec<Effect>,
    asks: &mut Vec<Ask>,
) {
    if o.contexts.current.as_deref() == Some(name.as_str()) {
        asks.push(Ask::Say(format!("already on {name}")));
    } else if m.edit.is_pending() {
        o.contexts.confirm = Some(name);
    } else {
        switch_to(o, name, fx, asks);
    }
}

fn switch_to(o: &mut Command, name: String, fx: &mut Vec<Effect>, asks: &mut Vec<Ask>) {
    asks.push(Ask::Say(format!("connecting to {name}")));
    o.contexts.switching = Some(name.clone());
    fx.push(Effect::SwitchContext(name));
}

/// The runner could not switch: why, for the status line; this session
/// goes on.
pub fn switch_failed(o: &mut Command, error: &str) -> String {
    o.contexts.switching = None;
    format!("cannot switch: {}", hub(error))
}

/// The prompt or the question, if either is up; true when drawn.
pub fn draw_status(
    t: &Theme,
    o: &Command,
    commands: &[&str],
    area: Rect,
    buf: &mut Buffer,
) -> bool {
    if let Some(name) = &o.contexts.confirm {
        line(
            area,
            buf,
            Line::styled(
                fit(
                    &format!(
                        "an edit is pending on this hub and is not carried to {}: {}, any other key stays",
                        hub(name),
                        keys::hints(Hints::Switching, ", ")
                    ),
                    area.width as usize,
                    t.ellipsis(),
                ),
                t.warn(),
            ),
        );
        return true;
    }
    if !o.cmd.editing {
        return false;
    }
    let mut spans = vec![
        Span::styled(":", t.title()),
        Span::raw(hub(&o.cmd.text).into_owned()),
        Span::styled("_", t.title()),
        Span::raw("   "),
    ];
    let used = o.cmd.text.chars().count() + 5;
    let room = (area.width as usize).saturating_sub(used);
    match &o.cmd.error {
        Some(e) => spans.push(Span::styled(fit(e, room, t.ellipsis()), t.bad())),
        None => spans.push(Span::styled(
            fit(
                &format!(
                    "{1} {0} a worker id {0} {2}",
                    t.sep(),
                    commands.join(&format!(" {} ", t.sep())),
                    keys::hints(Hints::Command, &format!(" {} ", t.sep()))
                ),
                room,
                t.ellipsis(),
            ),
            t.muted(),
        )),
    }
    line(area, buf, Line::from(spans));
    true
}

/// A key while `:messages` is open: the cursor keys scroll it (by
/// message), `Esc` closes it; other keys go on (a digit shows a pane and
/// closes it, `:` opens the prompt over it).
fn scroll_messages(o: &mut Command, back: usize, a: Option<Action>, n: usize, page: usize) -> bool {
    let last = n.saturating_sub(1);
    let to = match a {
        Some(Action::Back) => {
            o.messages = None;
            return true;
        }
        Some(Action::Up) => back + 1,
        Some(Action::Down) => back.saturating_sub(1),
        Some(Action::PageUp) => back + page.max(1),
        Some(Action::PageDown) => back.saturating_sub(page.max(1)),
        Some(Action::Top) => last,
        Some(Action::Bottom) => 0,
        _ => return false,
    };
    o.messages = Some(to.min(last));
    true
}

/// `:messages`: a title line, then the messages with their times, oldest
/// at the top and the newest last (`back` of the newest scrolled out
/// below), each wrapped to the width so no word of it is lost.
pub fn draw_messages(
    t: &Theme,
    said: &crate::tui::model::said::Messages,
    back: usize,
    area: Rect,
    buf: &mut Buffer,
) {
    if area.height == 0 {
        return;
    }
    let kept = said.len();
    let title = format!(
        "messages: {} kept of {} said this session (the last {}), newest last {} j/k PgUp/PgDn g/G scroll {} Esc closes",
        crate::tui::ui::fmt::count(kept),
        crate::tui::ui::fmt::count(said.total() as usize),
        crate::tui::ui::fmt::count(crate::tui::model::said::KEPT),
        t.sep(),
        t.sep()
    );
    line(
        Rect { height: 1, ..area },
        buf,
        Line::styled(fit(&title, area.width as usize, t.ellipsis()), t.title()),
    );
    let rows = usize::from(area.height - 1);
    if kept == 0 {
        if rows > 0 {
            let r = Rect {
                y: area.y + 1,
                height: 1,
                ..area
            };
            line(r, buf, Line::styled("nothing said yet", t.muted()));
        }
        return;
    }
    let width = usize::from(area.width).max(12);
    // From the bottom message up, until the rows are filled.
    let mut lines: Vec<Line<'static>> = Vec::new();
    for m in said.iter().rev().skip(back) {
        if lines.len() >= rows {
            break;
        }
        let stamp = m.at.format("%H:%M:%S").to_string();
        let wrapped = crate::tui::ui::header::wrap(&hub(&m.text), width - 10);
        let mut own: Vec<Line<'static>> = wrapped
            .into_iter()
            .enumerate()
            .map(|(i, w)| {
                let lead = if i == 0 {
                    Span::styled(format!("{stamp}  "), t.muted())
                } else {
                    Span::raw(" ".repeat(10))
                };
                Line::from(vec![lead, Span::raw(w)])
            })
            .collect();
        own.reverse();
        lines.extend(own);
    }
    lines.truncate(rows);
    lines.reverse();
    let top = area.y + 1;
    for (i, l) in lines.into_iter().enumerate() {
        let r = Rect {
            y: top + i as u16,
            height: 1,
            ..area
        };
        line(r, buf, l);
    }
}

/// The `:ctx` switcher: the contexts, the current one marked.
pub fn draw_picker(t: &Theme, o: &Command, body: Rect, buf: &mut Buffer) {
    let Some(sel) = o.contexts.picker else {
        return;
    };
    let names = &o.contexts.names;
    // Wide enough for its title (the keys it takes) and its names, never
    // wider than the screen: at 80x24 the title is whole.
    let title = format!(" contexts ({}) ", keys::hints(Hints::Picker, ", "));
    let width = (names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(20, 60)
        + 8)
    .max(title.chars().count() + 2) as u16;
    let width = width.min(body.width.saturating_sub(2));
    let title = if title.chars().count() + 2 <= usize::from(width) {
        title
    } else {
        " contexts ".to_string()
    };
    let height = (names.len() as u16 + 2).min(body.height);
    let area = Rect {
        x: body.x + 2.min(body.width),
        y: body.y,
        width,
        height,
    };
    Clear.render(area, buf);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_set(t.border())
        .title(Span::styled(title, t.title()));
    let inner = block.inner(area);
    block.render(area, buf);
    let rows = inner.height as usize;
    let first = sel.saturating_sub(rows.saturating_sub(1));
    for (i, name) in names.iter().enumerate().skip(first).take(rows) {
        let current = o.contexts.current.as_deref() == Some(name.as_str());
        let text = format!(
            "{} {}",
            if current { "*" } else { " " },
            fit(
                &hub(name),
                inner.width.saturating_sub(2) as usize,
                t.ellipsis()
            )
        );
        let style = if i == sel {
            t.selected()
        } else {
            ratatui::style::Style::new()
        };
        line(
            Rect {
                y: inner.y + (i - first) as u16,
                height: 1,
                ..inner
            },
            buf,
            Line::styled(format!("{text:<w$}", w = inner.width as usize), style),
        );
    }
}
