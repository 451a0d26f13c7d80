//! `3` Failovers: per-minute counts by cause over the last hour, then the
//! live log, newest first.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::{Col, cell_style, col, empty, fill, fit_line, hub, line, table};
use crate::tui::app::App;
use crate::tui::model::faillog::LogRec;
use crate::tui::model::faillog::{ByKind, WINDOW_MIN};
use crate::tui::ui::fmt;
use crate::tui::ui::theme::Theme;
use crate::wire::CauseKind;

pub const COLS: [Col; 8] = [
    col("AGE", 3, 4, 0),
    col("TIME", 8, 8, 4),
    col("WORKER", 7, 36, 0),
    col("FROM→TO", 12, 40, 0),
    col("CAUSE", 12, 16, 0),
    col("ST", 3, 3, 1),
    col("SOURCE", 6, 10, 3),
    fill("DETAIL", 12, 2),
];

/// Rows above the table (see [`crate::tui::ui::geom::spark_height`]).
pub fn spark_height(app: &App, body: Rect) -> u16 {
    app.spark_rows(body.height)
}

pub fn kind_style(t: &Theme, k: CauseKind) -> Style {
    use ratatui::style::Color;
    if !t.color {
        return Style::new();
    }
    Style::new().fg(match k {
        CauseKind::MissingBinary => Color::Magenta,
        CauseKind::NoToken => Color::Blue,
        CauseKind::PreflightFailed => Color::Cyan,
        CauseKind::Auth => Color::Red,
        CauseKind::RateLimited => Color::Yellow,
        CauseKind::UpstreamStatus => Color::LightRed,
    })
}

/// One bar per minute, scaled to the row's own peak.
pub fn bars(t: &Theme, counts: &[u32]) -> String {
    let glyphs = t.bars();
    let max = counts.iter().copied().max().unwrap_or(0);
    counts
        .iter()
        .map(|&c| {
            if c == 0 || max == 0 {
                glyphs[0]
            } else {
                let steps = (glyphs.len() - 1) as u32;
                glyphs[(c * steps).div_ceil(max).clamp(1, steps) as usize]
            }
        })
        .collect()
}

fn draw_spark(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    if area.height == 0 {
        return;
    }
    const LABEL: usize = 16;
    let minutes = (area.width as usize)
        .saturating_sub(LABEL + 6)
        .clamp(1, WINDOW_MIN as usize);
    let per = app.log.per_minute(app.now(), minutes);
    let total: Vec<u32> = per.iter().map(|m: &ByKind| m.iter().sum()).collect();
    let sum: u32 = total.iter().sum();
    let mut y = area.y;
    let mut put = |l: Line| {
        if y < area.bottom() {
            line(
                Rect {
                    y,
                    height: 1,
                    ..area
                },
                buf,
                fit_line(l, usize::from(area.width), t.ellipsis()),
            );
            y += 1;
        }
    };
    put(Line::styled(
        format!("failovers per minute, last {minutes}m (newest right)"),
        t.muted(),
    ));
    put(Line::from(vec![
        Span::raw(format!("{:<LABEL$}", "all")),
        Span::styled(bars(t, &total), cell_style(app, t.warn())),
        Span::raw(format!(" {sum}")),
    ]));
    let seen = app.log.causes_seen(app.now());
    if area.height >= 2 + seen.len() as u16 && area.height > 3 {
        for k in seen {
            let i = crate::tui::model::faillog::kind_index(k);
            let row: Vec<u32> = per.iter().map(|m| m[i]).collect();
            let n: u32 = row.iter().sum();
            put(Line::from(vec![
                Span::styled(
                    format!("{:<LABEL$}", k.as_str()),
                    cell_style(app, kind_style(t, k)),
                ),
                Span::styled(bars(t, &row), cell_style(app, kind_style(t, k))),
                Span::raw(format!(" {n}")),
            ]));
        }
    } else {
        let mut spans = vec![Span::raw(format!("{:<LABEL$}", "by cause"))];
        let mut any = false;
        for (i, k) in CauseKind::ALL.iter().enumerate() {
            let n: u32 = per.iter().map(|m| m[i]).sum();
            if n > 0 {
                if any {
                    spans.push(Span::styled(format!(" {} ", t.sep()), t.muted()));
                }
                any = true;
                spans.push(Span::styled(
                    format!("{k} {n}"),
                    cell_style(app, kind_style(t, *k)),
                ));
            }
        }
        if !any {
            spans.push(Span::styled("none", t.muted()));
        }
        put(Line::from(spans));
    }
}

pub fn route_text(app: &App, r: &LogRec) -> String {
    format!(
        "{}{}{}",
        hub(&r.from),
        app.theme.arrow(),
        r.to.as_deref().map(hub).unwrap_or("(none)".into())
    )
}

pub fn draw(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let sh = spark_height(app, area);
    draw_spark(app, Rect { height: sh, ..area }, buf);
    let area = Rect {
        y: area.y + sh,
        height: area.height - sh,
        ..area
    };
    let rows_h = area.height.saturating_sub(1) as usize;
    let list = &app.lists.failovers;
    let now = app.now();
    let rows = list
        .window(rows_h)
        .iter()
        .filter_map(|s| app.log.get(*s))
        .map(|r| {
            let to_style = if r.to.is_none() {
                t.no_route()
            } else {
                Style::new()
            };
            vec![
                Span::raw(fmt::age_at(now, r.at)),
                Span::raw(fmt::clock(r.at)),
                Span::raw(hub(&r.worker).into_owned()),
                Span::styled(route_text(app, r), cell_style(app, to_style)),
                Span::styled(r.kind.as_str(), cell_style(app, kind_style(t, r.kind))),
                Span::raw(r.status.map(|s| s.to_string()).unwrap_or_default()),
                Span::raw(r.source.as_str()),
                Span::raw(hub(r.detail.as_deref().unwrap_or("")).into_owned()),
            ]
        })
        .collect();
    table(app, area, buf, &COLS, rows, list.selected_row(rows_h));
    if list.is_empty() {
        empty(
            app,
            area,
            buf,
            if app.log.is_empty() {
                "no failovers logged"
            } else {
                list.emptied
                    .as_deref()
                    .unwrap_or("no failover matches the filter")
            },
        );
    }
}
