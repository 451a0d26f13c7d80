//! Screen geometry in one place: where the header, tabs, body and status
//! line go, where a list's table sits in the body, which rows a list shows
//! and which row a click hits. Everything here takes sizes, never the state,
//! so `app` (scrolling, clicks) and the panes (drawing) agree by construction.

use ratatui::layout::Rect;

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

/// The whole screen of a terminal `size` (width, height).
pub fn screen(size: (u16, u16)) -> Rect {
    Rect::new(0, 0, size.0, size.1)
}

/// Rows the Failovers view puts above its table in a body `body_h` rows
/// tall: a title line, one sparkline for all causes and, when the screen is
/// tall enough, one per cause seen in the hour (`causes_seen`); else a legend.
pub fn spark_height(body_h: u16, causes_seen: usize) -> u16 {
    let want = if body_h >= 30 {
        2 + causes_seen as u16
    } else {
        3
    };
    want.min(body_h / 3)
}

/// A list table's data area (below its column header) in `body`, when the
/// view puts `above` rows of its own above the table.
pub fn table_in(body: Rect, above: u16) -> Rect {
    let top = (above + 1).min(body.height);
    Rect {
        y: body.y + top,
        height: body.height - top,
        ..body
    }
}

/// A list table's data area on a screen of `size`.
pub fn table_area(size: (u16, u16), above: u16) -> Rect {
    table_in(areas(screen(size)).body, above)
}

/// Where a list's cursor stands: its position, the first row shown, and
/// how many rows the list has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cursor {
    pub pos: usize,
    pub offset: usize,
    pub len: usize,
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

/// The rows `c` shows in a table of `rows` rows: (first, end).
pub fn visible(c: Cursor, rows: usize) -> (usize, usize) {
    window(c.pos, c.offset, c.len, rows)
}

/// The list row under a click at (`x`, `y`), if it is on a row of the table
/// drawn at `table` with cursor `c`.
pub fn row_at(table: Rect, c: Cursor, x: u16, y: u16) -> Option<usize> {
    if x < table.x || x >= table.right() || y < table.y || y >= table.bottom() {
        return None;
    }
    // The offset the view draws with, not only the stored one.
    let (offset, _) = visible(c, table.height as usize);
    let row = offset + (y - table.y) as usize;
    (row < c.len).then_some(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_keeps_the_cursor_visible_and_leaves_no_blank_rows() {
        assert_eq!(window(0, 0, 100, 10), (0, 10));
        assert_eq!(window(15, 0, 100, 10), (6, 16));
        assert_eq!(window(3, 6, 100, 10), (3, 13));
        // The list shrank under the offset.
        assert_eq!(window(4, 50, 12, 10), (2, 12));
    }

    #[test]
    fn a_click_hits_the_row_drawn() {
        let t = table_area((80, 24), 0);
        assert_eq!(t.y, HEADER_ROWS + 1);
        let c = Cursor {
            pos: 30,
            offset: 0,
            len: 40,
        };
        // The view draws rows 30-rows+1..=30; the top data line is that first row.
        let rows = t.height as usize;
        assert_eq!(row_at(t, c, 1, t.y), Some(31 - rows));
        assert_eq!(row_at(t, c, 1, t.y - 1), None, "the column header");
        assert_eq!(row_at(t, c, t.right(), t.y), None);
    }
}
