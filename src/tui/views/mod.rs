//! Views are pure functions of [`App`]: they read state and write cells into
//! a buffer, nothing else. Rows are built only for the visible window.

pub mod detail;
pub mod failovers;
pub mod header;
pub mod help;
pub mod history;
pub mod ladder;
pub mod workers;

use std::borrow::Cow;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Row, StatefulWidget, Table, TableState, Widget};

use super::app::{App, View};

/// Lines above the body: top line, fleet glance, agents, tabs.
pub const HEADER_ROWS: u16 = 4;

/// Where things go on a screen of `area`.
#[derive(Debug, Clone, Copy)]
pub struct Areas {
    pub header: Rect,
    pub tabs: Rect,
    pub body: Rect,
    pub status: Rect,
}

pub fn areas(area: Rect) -> Areas {
    let h = area.height;
    let header_h = (HEADER_ROWS - 1).min(h);
    let tabs_h = 1.min(h - header_h);
    let status_h = 1.min(h - header_h - tabs_h);
    let body_h = h - header_h - tabs_h - status_h;
    let header = Rect {
        height: header_h,
        ..area
    };
    let tabs = Rect {
        y: area.y + header_h,
        height: tabs_h,
        ..area
    };
    let body = Rect {
        y: tabs.y + tabs_h,
        height: body_h,
        ..area
    };
    let status = Rect {
        y: body.y + body_h,
        height: status_h,
        ..area
    };
    Areas {
        header,
        tabs,
        body,
        status,
    }
}

fn screen(app: &App) -> Rect {
    Rect::new(0, 0, app.size.0, app.size.1)
}

/// The table's data area in the current view (below its column header).
pub fn table_area(app: &App) -> Rect {
    let body = areas(screen(app)).body;
    let top = match app.view {
        View::Failovers => failovers::spark_height(app, body),
        _ => 0,
    } + 1;
    let top = top.min(body.height);
    Rect {
        y: body.y + top,
        height: body.height - top,
        ..body
    }
}

/// Data rows the current view shows at the current size.
pub fn body_rows(app: &App) -> usize {
    table_area(app).height as usize
}

/// The row index under a mouse click, if it is on a row.
pub fn row_at(app: &App, x: u16, y: u16) -> Option<usize> {
    let t = table_area(app);
    if x < t.x || x >= t.right() || y < t.y || y >= t.bottom() {
        return None;
    }
    // The offset the view draws with (see `table`'s callers), not only
    // the stored one.
    let (pos, offset, len) = app.cursor();
    let (offset, _) = window(pos, offset, len, t.height as usize);
    let row = offset + (y - t.y) as usize;
    (row < len).then_some(row)
}

/// Draw the whole screen.
pub fn draw(app: &App, buf: &mut Buffer) {
    let area = buf.area;
    buf.reset();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let a = areas(area);
    header::draw(app, a.header, buf);
    header::draw_tabs(app, a.tabs, buf);
    if let Some(d) = &app.detail {
        detail::draw(app, d, a.body, buf);
    } else {
        match app.view {
            View::Ladder => ladder::draw(app, a.body, buf),
            View::Workers => workers::draw(app, a.body, buf),
            View::Failovers => failovers::draw(app, a.body, buf),
            View::History => history::draw(app, a.body, buf),
        }
    }
    header::draw_status(app, a.status, buf);
    if app.help {
        help::draw(app, area, buf);
    }
}

/// Hub text, scrubbed and made terminal-safe before it is drawn.
pub fn hub(s: &str) -> Cow<'_, str> {
    crate::textsafe::for_terminal(s)
}

/// `s` cut to `width` characters with an ellipsis.
pub fn fit(s: &str, width: usize, ellipsis: &str) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let keep = width.saturating_sub(ellipsis.chars().count());
    let mut out: String = s.chars().take(keep).collect();
    out.push_str(ellipsis);
    out
}

/// A table column: its header, width (`None` fills the rest) and the
/// priority by which it is dropped when the screen is narrow (higher goes first).
#[derive(Debug, Clone, Copy)]
pub struct Col {
    pub title: &'static str,
    pub width: Option<u16>,
    pub min: u16,
    pub drop: u8,
}

pub const fn col(title: &'static str, width: u16, drop: u8) -> Col {
    Col {
        title,
        width: Some(width),
        min: width,
        drop,
    }
}

pub const fn fill(title: &'static str, min: u16, drop: u8) -> Col {
    Col {
        title,
        width: None,
        min,
        drop,
    }
}

/// Which of `cols` fit in `width`, dropping by priority; returns a mask.
pub fn fit_columns(cols: &[Col], width: u16) -> Vec<bool> {
    let mut keep = vec![true; cols.len()];
    loop {
        let n = keep.iter().filter(|k| **k).count() as u16;
        let need: u16 = cols
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(c, _)| c.min)
            .sum::<u16>()
            + n.saturating_sub(1);
        if need <= width {
            return keep;
        }
        // Drop the highest-priority-to-drop column still kept (last one on ties).
        let victim = cols
            .iter()
            .enumerate()
            .filter(|(i, c)| keep[*i] && c.drop > 0)
            .max_by_key(|(i, c)| (c.drop, *i))
            .map(|(i, _)| i);
        match victim {
            Some(i) => keep[i] = false,
            None => return keep,
        }
    }
}

/// Draw a table of the visible window. `rows` are the visible rows only;
/// `selected` is the selected row's index among them.
pub fn table(
    app: &App,
    area: Rect,
    buf: &mut Buffer,
    cols: &[Col],
    keep: &[bool],
    rows: Vec<Vec<Span<'static>>>,
    selected: Option<usize>,
) {
    let t = &app.theme;
    let widths: Vec<Constraint> = cols
        .iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(c, _)| match c.width {
            Some(w) => Constraint::Length(w),
            None => Constraint::Fill(1),
        })
        .collect();
    let header = Row::new(
        cols.iter()
            .zip(keep)
            .filter(|(_, k)| **k)
            // Titles are written with Unicode arrows; `--ascii` gets "->".
            .map(|(c, _)| {
                if t.ascii && c.title.contains('→') {
                    std::borrow::Cow::Owned(c.title.replace('→', "->"))
                } else {
                    std::borrow::Cow::Borrowed(c.title)
                }
            }),
    )
    .style(t.column_header());
    let row_style = if app.is_stale() {
        t.greyed()
    } else {
        Style::new()
    };
    let rows: Vec<Row> = rows
        .into_iter()
        .map(|cells| {
            Row::new(
                cells
                    .into_iter()
                    .zip(keep)
                    .filter(|(_, k)| **k)
                    .map(|(c, _)| Line::from(c)),
            )
            .style(row_style)
        })
        .collect();
    let table = Table::new(rows, widths)
        .header(header)
        .column_spacing(1)
        .row_highlight_style(t.selected());
    let mut state = TableState::default().with_selected(selected);
    StatefulWidget::render(table, area, buf, &mut state);
}

/// Offset that keeps `pos` visible in `rows` rows, starting from `offset`
/// (and leaves no blank rows at the bottom when the list shrank), and the
/// end of the window.
pub fn window(pos: usize, offset: usize, len: usize, rows: usize) -> (usize, usize) {
    let rows = rows.max(1);
    let mut off = offset;
    if pos < off {
        off = pos;
    } else if pos >= off + rows {
        off = pos + 1 - rows;
    }
    off = off.min(len.saturating_sub(rows));
    let end = (off + rows).min(len);
    (off, end)
}

/// Style for a cell: its own, or grey when the data is old.
pub fn cell_style(app: &App, s: Style) -> Style {
    if app.is_stale() {
        app.theme.greyed()
    } else {
        s
    }
}

/// A line of text written at `area` (clipped).
pub fn line(area: Rect, buf: &mut Buffer, l: Line<'_>) {
    l.render(area, buf);
}

/// Text shown in an empty view.
pub fn empty(app: &App, area: Rect, buf: &mut Buffer, text: &str) {
    if area.height < 2 {
        return;
    }
    let r = Rect {
        y: area.y + 1,
        height: 1,
        ..area
    };
    line(r, buf, Line::styled(format!("  {text}"), app.theme.muted()));
}
