//! Colours, marks and borders. Two axes: colour or `NO_COLOR`, Unicode or
//! `--ascii`. Under `NO_COLOR` no style carries a colour at all; emphasis is
//! made with modifiers only (crossterm's own NO_COLOR handling would erase
//! reverse video, so the caller reads `NO_COLOR` and we never emit colours).

use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::border;

use crate::wire::WorkerState;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
    pub ascii: bool,
}

const ASCII_BORDER: border::Set<'static> = border::Set {
    top_left: "+",
    top_right: "+",
    bottom_left: "+",
    bottom_right: "+",
    vertical_left: "|",
    vertical_right: "|",
    horizontal_top: "-",
    horizontal_bottom: "-",
};

impl Theme {
    pub fn new(no_color: bool, ascii: bool) -> Theme {
        Theme {
            color: !no_color,
            ascii,
        }
    }

    /// `color` in a colour theme, `plain` (modifiers only) under NO_COLOR.
    fn pick(&self, color: Style, plain: Style) -> Style {
        if self.color { color } else { plain }
    }

    fn fg(&self, c: Color) -> Style {
        self.pick(Style::new().fg(c), Style::new())
    }

    /// Black on `bg`, bold; reverse video under NO_COLOR.
    fn badge(&self, bg: Color) -> Style {
        self.pick(
            Style::new()
                .fg(Color::Black)
                .bg(bg)
                .add_modifier(Modifier::BOLD),
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
        )
    }

    /// The selected row.
    pub fn selected(&self) -> Style {
        self.badge(Color::Cyan)
    }

    /// A worker or count with no route: the first thing the eye must find.
    pub fn no_route(&self) -> Style {
        self.fg(Color::Red).add_modifier(Modifier::BOLD)
    }

    pub fn state(&self, s: WorkerState) -> Style {
        match s {
            WorkerState::Healthy => self.fg(Color::Green),
            WorkerState::Stale => self.fg(Color::Yellow),
            WorkerState::Lost => self.pick(
                Style::new().fg(Color::Red),
                Style::new().add_modifier(Modifier::BOLD),
            ),
        }
    }

    pub fn warn(&self) -> Style {
        self.fg(Color::Yellow)
    }

    pub fn ok(&self) -> Style {
        self.fg(Color::Green)
    }

    pub fn bad(&self) -> Style {
        self.fg(Color::Red)
    }

    /// Secondary text: column headers' neighbours, hints.
    pub fn muted(&self) -> Style {
        self.fg(Color::DarkGray)
    }

    /// Data shown while the hub is away: greyed, so it reads as old.
    pub fn greyed(&self) -> Style {
        self.pick(
            Style::new().fg(Color::DarkGray),
            Style::new().add_modifier(Modifier::DIM),
        )
    }

    pub fn title(&self) -> Style {
        Style::new().add_modifier(Modifier::BOLD)
    }

    pub fn column_header(&self) -> Style {
        self.pick(
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
        )
    }

    /// The status word: green `OK`, yellow `DEGRADED`, red from `AT RISK`
    /// up (`NO ROUTE`, `HUB DOWN`, `HUB ERROR`, `CONFIG INVALID`, …);
    /// reverse video under NO_COLOR.
    pub fn verdict(&self, v: crate::tui::model::verdict::Verdict) -> Style {
        use crate::tui::model::verdict::Verdict;
        self.badge(match v {
            Verdict::Ok => Color::Green,
            Verdict::Degraded(_) | Verdict::NoWorkers => Color::Yellow,
            _ => Color::Red,
        })
    }

    pub fn badge_owner(&self) -> Style {
        self.badge(Color::Yellow)
    }

    pub fn badge_read_only(&self) -> Style {
        self.badge(Color::Cyan)
    }

    pub fn tab_active(&self) -> Style {
        self.fg(Color::Yellow)
            .add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }

    pub fn border(&self) -> border::Set<'static> {
        if self.ascii {
            ASCII_BORDER
        } else {
            border::PLAIN
        }
    }

    pub fn arrow(&self) -> &'static str {
        if self.ascii { "->" } else { "→" }
    }

    /// A failover's mark in the Failovers view: the worker moved down its
    /// list (`v` under `--ascii`).
    pub fn down(&self) -> &'static str {
        if self.ascii { "v" } else { "↓" }
    }

    /// A recovery's mark: the worker is back up its list (`^`).
    pub fn up(&self) -> &'static str {
        if self.ascii { "^" } else { "↑" }
    }

    /// Beside the sorted column's title: `▼` the column's values fall down
    /// the rows, `▲` they rise (`v` / `^` under `--ascii`).
    pub fn sort_mark(&self, descending: bool) -> &'static str {
        match (self.ascii, descending) {
            (false, true) => "▼",
            (false, false) => "▲",
            (true, true) => "v",
            (true, false) => "^",
        }
    }

    pub fn sep(&self) -> &'static str {
        if self.ascii { "|" } else { "·" }
    }

    pub fn yes(&self) -> &'static str {
        if self.ascii { "y" } else { "✓" }
    }

    pub fn no(&self) -> &'static str {
        if self.ascii { "x" } else { "✗" }
    }

    pub fn ellipsis(&self) -> &'static str {
        if self.ascii { "~" } else { "…" }
    }

    /// Bars for a sparkline, lowest first; index 0 is "none".
    pub fn bars(&self) -> &'static [&'static str] {
        if self.ascii {
            &[" ", ".", ":", "-", "=", "+", "*", "#", "@"]
        } else {
            &[" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"]
        }
    }
}
