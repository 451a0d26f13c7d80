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

/// Render columns into lines no wider than `max`.
pub fn render_table(columns: Vec<(&'static str, u8, Vec<String>)>, max: usize) -> String {
    let mut cols: Vec<Column> = columns
        .into_iter()
        .map(|(header, priority, cells)| Column {
            header,
            priority,
            // Every cell holds hub text: scrubbed, controls and bidi escaped.
            cells: cells
                .into_iter()
                .map(|c| {
                    let safe = match for_terminal(&c) {
                        std::borrow::Cow::Owned(o) => Some(o),
                        std::borrow::Cow::Borrowed(_) => None,
                    };
                    safe.unwrap_or(c)
                })
                .collect(),
        })
        .collect();
    let widths = |cols: &[Column]| -> Vec<usize> {
        cols.iter()
            .map(|c| {
                c.cells
                    .iter()
                    .map(|s| s.chars().count())
                    .chain([c.header.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    };
    // Drop the least important (highest number), rightmost first, until the
    // rest fit whole: the TUI's column fitting, without cutting.
    let fits: Vec<crate::text::Fit> = widths(&cols)
        .into_iter()
        .zip(&cols)
        .map(|(w, c)| crate::text::Fit {
            min: w,
            want: w,
            drop: c.priority.saturating_add(1),
        })
        .collect();
    let kept = crate::text::fit_columns(&fits, max, 2);
    let mut kept = kept.iter();
    cols.retain(|_| kept.next().is_some_and(|w| w.is_some()));
    let w = widths(&cols);
    let rows = cols.first().map_or(0, |c| c.cells.len());
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            l.push_str(c);
            if i + 1 < cells.len() {
                l.push_str(&" ".repeat(w[i].saturating_sub(c.chars().count())));
            }
        }
        let l: String = l.chars().take(max).collect();
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(cols.iter().map(|c| c.header).collect(), &mut out);
    for r in 0..rows {
        line(cols.iter().map(|c| c.cells[r].as_str()).collect(), &mut out);
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
