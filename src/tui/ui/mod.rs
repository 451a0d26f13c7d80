//! Drawing helpers that take what they draw as arguments, never the
//! state: the theme, screen geometry, text formatting, the header and
//! status line, and the table every pane draws its rows with. Nothing here
//! imports `app`, `panes` or `overlays`.

pub mod fmt;
pub mod geom;
pub mod header;
pub mod rollout;
pub mod theme;

use std::borrow::Cow;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Row, StatefulWidget, TableState, Widget};

use self::theme::Theme;
use crate::text;

/// Hub text, scrubbed and made terminal-safe before it is drawn.
pub fn hub(s: &str) -> Cow<'_, str> {
    crate::textsafe::for_terminal(s)
}

/// `s` cut to `width` characters, ending in the ellipsis when cut.
pub fn fit(s: &str, width: usize, ellipsis: &str) -> String {
    text::ellipsize(s, width, ellipsis).into_owned()
}

/// A table column: its header, its narrowest useful width, the most it can
/// use (`None`: as much as is left), and the priority by which it is
/// dropped when even the narrowest widths do not fit (0 never; higher goes
/// first). Between `min` and `max` a column gets what its visible cells
/// need, so space goes where the text is; see [`text::fit_columns`].
#[derive(Debug, Clone, Copy)]
pub struct Col {
    pub title: &'static str,
    pub min: u16,
    pub max: Option<u16>,
    pub drop: u8,
}

pub const fn col(title: &'static str, min: u16, max: u16, drop: u8) -> Col {
    Col {
        title,
        min,
        max: Some(max),
        drop,
    }
}

pub const fn fill(title: &'static str, min: u16, drop: u8) -> Col {
    Col {
        title,
        min,
        max: None,
        drop,
    }
}

/// The width of each column for these visible `rows` in `width` cells
/// (`None`: dropped).
pub fn widths(cols: &[Col], rows: &[Vec<Span<'_>>], width: u16) -> Vec<Option<usize>> {
    widths_marked(cols, rows, width, None)
}

/// [`widths`], the title of column `marked` one cell wider (its sort mark).
fn widths_marked(
    cols: &[Col],
    rows: &[Vec<Span<'_>>],
    width: u16,
    marked: Option<usize>,
) -> Vec<Option<usize>> {
    let fits: Vec<text::Fit> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let content = rows
                .iter()
                .filter_map(|r| r.get(i))
                .map(|s| s.width())
                .max()
                .unwrap_or(0)
                .max(text::width(c.title) + usize::from(marked == Some(i)));
            text::Fit {
                min: c.min as usize,
                want: c.max.map_or(content, |m| content.min(m as usize)),
                drop: c.drop,
            }
        })
        .collect();
    text::fit_columns(&fits, width as usize, 1)
}

/// A table of the visible window: its columns, the visible rows only (one
/// span per column), the selected row's index among them, and the sorted
/// column (its index, and whether its values fall down the rows), marked
/// in its title: `AGE▼`, `WORKER^`.
pub struct Table<'a> {
    pub cols: &'a [Col],
    pub rows: Vec<Vec<Span<'static>>>,
    pub selected: Option<usize>,
    pub sorted: Option<(usize, bool)>,
}

/// Draw the table `r` at `area`, greyed when the data is `stale`. Every
/// cell wider than its column is cut with the theme's ellipsis.
pub fn table(t: &Theme, stale: bool, area: Rect, buf: &mut Buffer, r: Table<'_>) {
    let Table {
        cols,
        rows,
        selected,
        sorted,
    } = r;
    let ell = t.ellipsis();
    let w = widths_marked(cols, &rows, area.width, sorted.map(|(i, _)| i));
    let cut = |s: Span<'static>, w: usize| -> Line<'static> {
        if s.width() <= w {
            Line::from(s)
        } else {
            Line::from(Span::styled(fit(&s.content, w, ell), s.style))
        }
    };
    let constraints: Vec<Constraint> = w
        .iter()
        .flatten()
        .map(|w| Constraint::Length(*w as u16))
        .collect();
    let header = Row::new(cols.iter().zip(&w).enumerate().filter_map(|(i, (c, w))| {
        // Titles are written with Unicode arrows; `--ascii` gets "->".
        let mut title = if t.ascii && c.title.contains('→') {
            c.title.replace('→', "->")
        } else {
            c.title.to_string()
        };
        let mark = sorted
            .filter(|(col, _)| *col == i)
            .map(|(_, d)| t.sort_mark(d));
        w.map(|w| match mark {
            // The mark is never the part cut off: the title gives way.
            Some(m) => {
                let keep = w.saturating_sub(1);
                title = fit(&title, keep, ell);
                title.push_str(m);
                Line::from(Span::raw(title))
            }
            None => cut(Span::raw(title), w),
        })
    }))
    .style(t.column_header());
    let row_style = if stale { t.greyed() } else { Style::new() };
    let rows: Vec<Row> = rows
        .into_iter()
        .map(|cells| {
            Row::new(
                cells
                    .into_iter()
                    .zip(&w)
                    .filter_map(|(c, w)| w.map(|w| cut(c, w))),
            )
            .style(row_style)
        })
        .collect();
    let table = ratatui::widgets::Table::new(rows, constraints)
        .header(header)
        .column_spacing(1)
        .flex(ratatui::layout::Flex::Start)
        .row_highlight_style(t.selected());
    let mut state = TableState::default().with_selected(selected);
    StatefulWidget::render(table, area, buf, &mut state);
}

/// Style for a cell: its own, or grey when the data is old.
pub fn cell_style(t: &Theme, stale: bool, s: Style) -> Style {
    if stale { t.greyed() } else { s }
}

/// A line of text written at `area` (clipped).
pub fn line(area: Rect, buf: &mut Buffer, l: Line<'_>) {
    l.render(area, buf);
}

/// `l` in at most `width` cells: whole when it fits, else cut inside the
/// span that crosses the edge, which ends in the ellipsis.
pub fn fit_line<'a>(l: Line<'a>, width: usize, ellipsis: &str) -> Line<'a> {
    if l.width() <= width {
        return l;
    }
    let mut out = Vec::with_capacity(l.spans.len());
    let mut used = 0;
    for s in l.spans {
        let w = s.width();
        if used + w < width {
            used += w;
            out.push(s);
        } else {
            out.push(Span::styled(
                fit(&s.content, width - used, ellipsis),
                s.style,
            ));
            break;
        }
    }
    Line::from(out).style(l.style)
}

/// Text shown in an empty view.
pub fn empty(t: &Theme, area: Rect, buf: &mut Buffer, text: &str) {
    if area.height < 2 {
        return;
    }
    let r = Rect {
        y: area.y + 1,
        height: 1,
        ..area
    };
    line(r, buf, Line::styled(format!("  {text}"), t.muted()));
}

/// One line of a unified diff, coloured: added, removed, hunk, header.
pub fn diff_line(t: &Theme, l: &str) -> Line<'static> {
    let style = if l.starts_with("+++") || l.starts_with("---") {
        t.title()
    } else if l.starts_with('+') {
        t.ok()
    } else if l.starts_with('-') {
        t.bad()
    } else if l.starts_with("@@") {
        t.muted()
    } else {
        Style::new()
    };
    Line::styled(l.to_string(), style)
}

/// The `i`th line of `area`, if it has one.
pub fn row(area: Rect, i: u16) -> Option<Rect> {
    (i < area.height).then(|| Rect {
        y: area.y + i,
        height: 1,
        ..area
    })
}
