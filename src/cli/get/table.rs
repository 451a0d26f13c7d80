//! Tables for `macfleet get`: columns that fit the terminal, dropping the
//! least important first, every cell terminal-safe.

use std::io::IsTerminal;

use chrono::{DateTime, Utc};

use crate::textsafe::for_terminal;

/// A column: header, priority (0 is kept longest), cells.
struct Column {
    header: &'static str,
    priority: u8,
    cells: Vec<String>,
}

/// The width to fit: the terminal's, else `COLUMNS`, else 160.
pub fn width() -> usize {
    if std::io::stdout().is_terminal() {
        crossterm::terminal::size().map_or(100, |(w, _)| w as usize)
    } else {
        std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(160)
    }
}

/// A cell as a table shows it: hub text scrubbed, controls and bidi
/// escaped.
pub fn safe_cell(c: String) -> String {
    match for_terminal(&c) {
        std::borrow::Cow::Owned(o) => o,
        std::borrow::Cow::Borrowed(_) => c,
    }
}

/// Which columns a table keeps and how wide each is, fitted to `max`
/// columns of text; it writes the table's lines one at a time, so a table
/// need not be held whole to be written.
pub struct Layout {
    /// Per column: its width when kept, `None` when dropped.
    widths: Vec<Option<usize>>,
    max: usize,
}

impl Layout {
    /// `cols`: each column's priority (0 is kept longest) and width (its
    /// widest cell's characters, or its header's bytes if wider). Drops the
    /// least important (highest number), rightmost first, until the rest
    /// fit whole: the TUI's column fitting, without cutting.
    pub fn fit(cols: &[(u8, usize)], max: usize) -> Layout {
        let fits: Vec<crate::text::Fit> = cols
            .iter()
            .map(|&(priority, w)| crate::text::Fit {
                min: w,
                want: w,
                drop: priority.saturating_add(1),
            })
            .collect();
        let kept = crate::text::fit_columns(&fits, max, 2);
        let widths = cols
            .iter()
            .zip(kept)
            .map(|(&(_, w), k)| k.map(|_| w))
            .collect();
        Layout { widths, max }
    }

    /// Whether column `i` is shown.
    pub fn keeps(&self, i: usize) -> bool {
        self.widths.get(i).is_some_and(Option::is_some)
    }

    /// One line of the table into `out` (cleared first): `cells` holds a
    /// cell for every column, kept or not (a dropped one's is not read).
    /// Kept cells are padded to their column's width (the last is not),
    /// two spaces apart; the line is cut to `max` characters and its
    /// trailing blanks trimmed.
    pub fn line(&self, cells: &[&str], out: &mut String) {
        out.clear();
        let kept: Vec<(usize, &str)> = self
            .widths
            .iter()
            .zip(cells)
            .filter_map(|(w, c)| w.map(|w| (w, *c)))
            .collect();
        let mut l = String::new();
        for (i, (w, c)) in kept.iter().enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            l.push_str(c);
            if i + 1 < kept.len() {
                l.push_str(&" ".repeat(w.saturating_sub(c.chars().count())));
            }
        }
        let l: String = l.chars().take(self.max).collect();
        out.push_str(l.trim_end());
        out.push('\n');
    }
}

/// The first `max` characters of `s`: all a table `max` wide can show of
/// a cell, wherever it stands in the line.
pub fn cut(mut s: String, max: usize) -> String {
    if let Some((at, _)) = s.char_indices().nth(max) {
        s.truncate(at);
    }
    s
}

/// Render columns into lines no wider than `max`.
pub fn render_table(columns: Vec<(&'static str, u8, Vec<String>)>, max: usize) -> String {
    let cols: Vec<Column> = columns
        .into_iter()
        .map(|(header, priority, cells)| Column {
            header,
            priority,
            // Every cell holds hub text: scrubbed, controls and bidi escaped.
            cells: cells.into_iter().map(safe_cell).collect(),
        })
        .collect();
    let widths: Vec<(u8, usize)> = cols
        .iter()
        .map(|c| {
            let w = c
                .cells
                .iter()
                .map(|s| s.chars().count())
                .chain([c.header.len()])
                .max()
                .unwrap_or(0);
            (c.priority, w)
        })
        .collect();
    let layout = Layout::fit(&widths, max);
    let rows = cols.first().map_or(0, |c| c.cells.len());
    let mut out = String::new();
    let mut l = String::new();
    let headers: Vec<&str> = cols.iter().map(|c| c.header).collect();
    layout.line(&headers, &mut l);
    out.push_str(&l);
    for r in 0..rows {
        let cells: Vec<&str> = cols.iter().map(|c| c.cells[r].as_str()).collect();
        layout.line(&cells, &mut l);
        out.push_str(&l);
    }
    out
}

/// `3m`, `12s`, `2h`, `4d`.
pub fn age(now: DateTime<Utc>, then: DateTime<Utc>) -> String {
    crate::text::age_at(now, then)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_drops_low_priority_columns_to_fit() {
        let cols = vec![
            ("A", 0, vec!["aaaa".to_string()]),
            ("B", 2, vec!["bbbbbbbbbb".to_string()]),
            ("C", 1, vec!["cc".to_string()]),
        ];
        let wide = render_table(cols.clone(), 80);
        assert!(wide.starts_with("A     B           C\n"), "{wide}");
        let narrow = render_table(cols, 10);
        assert_eq!(narrow, "A     C\naaaa  cc\n");
    }

    #[test]
    fn ages() {
        let now = Utc::now();
        assert_eq!(age(now, now - chrono::Duration::seconds(75)), "1m");
        assert_eq!(age(now, now + chrono::Duration::seconds(5)), "0s");
    }
}
