//! `3` Failovers: per-minute counts by cause over the last hour, then the
//! live log, newest first: failovers (↓) and recoveries (↑, a worker back
//! on a higher rung) interleaved by the hub's time.

use std::cmp::Ordering;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::tui::ids::{FAILOVERS, PaneId};
use crate::tui::model::Model;
use crate::tui::model::faillog::{self, ByKind, FailLog, LogRec, Spark, WINDOW_MIN};
use crate::tui::model::query::Query;
use crate::tui::model::reclog::{RecLog, RecRec};
use crate::tui::pane::{Changes, Cx, Detail, List, ListNav, Pane, SortBy};
use crate::tui::ui::theme::Theme;
use crate::tui::ui::{Col, Table, cell_style, col, empty, fill, fit_line, fmt, geom, hub, line};
use crate::wire::CauseKind;

/// How the Failovers view orders rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailoverSort {
    /// Newest first.
    #[default]
    Time,
    Worker,
    Cause,
    From,
}

impl SortBy for FailoverSort {
    const ALL: &'static [Self] = &FailoverSort::ALL;

    fn name(self) -> &'static str {
        FailoverSort::name(self)
    }
}

impl FailoverSort {
    pub const ALL: [FailoverSort; 4] = [
        FailoverSort::Time,
        FailoverSort::Worker,
        FailoverSort::Cause,
        FailoverSort::From,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FailoverSort::Time => "time",
            FailoverSort::Worker => "worker",
            FailoverSort::Cause => "cause",
            FailoverSort::From => "from",
        }
    }
}

/// One row of the Failovers view: a failover or a recovery, by its seq
/// (each log numbers its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Row {
    /// ↓: a failover.
    Failover(u64),
    /// ↑: a recovery.
    Recovery(u64),
}

impl Row {
    /// The failover's seq, if it is one.
    pub fn failover(self) -> Option<u64> {
        match self {
            Row::Failover(s) => Some(s),
            Row::Recovery(_) => None,
        }
    }
}

/// The Failovers view's rows: the failovers [`index`] gives and the
/// recoveries the filter shows, interleaved. By time, newest first: each
/// by when the hub received it (a failover's `received_at`, a recovery's
/// `at`); by worker or by the rung left, merged on that; by cause, the
/// recoveries (which have none) after every failover.
pub fn rows(
    log: &FailLog,
    recs: &RecLog,
    filter: &Query,
    sort: FailoverSort,
    reverse: bool,
) -> Vec<Row> {
    // Both sides newest first, in the view's order, unreversed.
    let fails = index(log, filter, sort, false);
    let mut ups: Vec<&RecRec> = recs
        .records
        .iter()
        .rev()
        .filter(|r| filter.matches(*r))
        .collect();
    if ups.is_empty() {
        let mut v: Vec<Row> = fails.into_iter().map(Row::Failover).collect();
        if reverse {
            v.reverse();
        }
        return v;
    }
    match sort {
        FailoverSort::Time | FailoverSort::Cause => {}
        FailoverSort::Worker => ups.sort_by(|a, b| a.worker.cmp(&b.worker)),
        FailoverSort::From => ups.sort_by(|a, b| a.from_text().cmp(b.from_text())),
    }
    // Whether the failover goes before the recovery.
    let before = |f: &LogRec, r: &RecRec| match sort {
        FailoverSort::Time => f.received_at >= r.at,
        FailoverSort::Cause => true,
        FailoverSort::Worker => f.worker <= r.worker,
        FailoverSort::From => *f.from <= *r.from_text(),
    };
    let mut out = Vec::with_capacity(fails.len() + ups.len());
    let (mut i, mut j) = (0, 0);
    while i < fails.len() || j < ups.len() {
        let take_fail = match (fails.get(i).and_then(|s| log.get(*s)), ups.get(j)) {
            (Some(f), Some(r)) => before(f, r),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            // A seq the log no longer holds: skip it.
            (None, None) => {
                i += 1;
                continue;
            }
        };
        if take_fail {
            out.push(Row::Failover(fails[i]));
            i += 1;
        } else {
            out.push(Row::Recovery(ups[j].seq));
            j += 1;
        }
    }
    if reverse {
        out.reverse();
    }
    out
}

/// The Failovers view's failover rows, as seqs.
pub fn index(log: &FailLog, filter: &Query, sort: FailoverSort, reverse: bool) -> Vec<u64> {
    let shown = log.records.iter().rev().filter(|r| filter.matches(*r));
    if sort == FailoverSort::Time {
        // Already newest first: no records to sort, only seqs to collect.
        let mut v: Vec<u64> = shown.map(|r| r.seq).collect();
        if reverse {
            v.reverse();
        }
        return v;
    }
    let mut v: Vec<&LogRec> = shown.collect();
    // Stable sort over newest-first input keeps newest first on ties.
    v.sort_by(|ra, rb| match sort {
        FailoverSort::Time => Ordering::Equal,
        FailoverSort::Worker => ra.worker.cmp(&rb.worker),
        FailoverSort::Cause => ra.kind.cmp(&rb.kind),
        FailoverSort::From => ra.from.cmp(&rb.from),
    });
    if reverse {
        v.reverse();
    }
    v.into_iter().map(|r| r.seq).collect()
}

/// What a filter shows, as its empty text names it: `dir:up` the
/// recoveries (`no recovery matches`), `dir:down` the failovers; else
/// both, or only failovers while no recovery is held.
fn shown_kind(q: &Query, recs: &RecLog) -> &'static str {
    let dir = q
        .terms
        .iter()
        .filter(|t| t.field == Some("dir"))
        .map(|t| (crate::query::starts_ci("up", &t.needle), t.negate))
        .map(|(up, negate)| up != negate)
        .next_back();
    match dir {
        Some(true) => "recovery",
        Some(false) => "failover",
        None if recs.is_empty() => "failover",
        None => "failover or recovery",
    }
}

/// The Failovers pane: failovers and recoveries.
#[derive(Debug, Default)]
pub struct Failovers {
    pub list: List<Vec<Row>, FailoverSort>,
    /// Under a filter, the sparkline of the failovers it shows (`None`:
    /// no filter, the whole log's).
    pub spark: Option<Spark>,
}

impl Pane for Failovers {
    fn id(&self) -> PaneId {
        FAILOVERS
    }

    fn title(&self) -> &'static str {
        "Failovers"
    }

    fn list(&self) -> &dyn ListNav {
        &self.list
    }

    fn list_mut(&mut self) -> &mut dyn ListNav {
        &mut self.list
    }

    fn settle(&mut self, m: &Model, ch: &Changes, _visible: bool, _mono: Instant) -> bool {
        let own = self.list.take_mark();
        if !(own || ch.log) {
            return false;
        }
        let l = &self.list;
        let q = Query::parse(&l.filter.text, faillog::FIELDS);
        let rows = rows(&m.log, &m.recs, &q, l.sort, l.reverse);
        let emptied = (rows.is_empty() && !q.is_empty()).then(|| {
            q.empty_text(shown_kind(&q, &m.recs), &l.filter.text, |q| {
                m.log.records.iter().any(|r| q.matches(r))
                    || m.recs.records.iter().any(|r| q.matches(r))
            })
        });
        self.spark = (!q.is_empty()).then(|| {
            Spark::of(rows.iter().filter_map(|r| match r {
                Row::Failover(s) => m.log.get(*s),
                Row::Recovery(_) => None,
            }))
        });
        let l = &mut self.list;
        l.rows = rows;
        l.emptied = emptied;
        l.resync();
        true
    }

    fn above(&self, m: &Model, body_h: u16) -> u16 {
        self.spark_height(m, body_h)
    }

    fn fields(&self) -> (&'static [&'static str], Option<&'static str>) {
        (faillog::FIELDS, Some("dir:up ↑ recoveries, dir:down ↓"))
    }

    fn selected(&self, _m: &Model) -> Option<Detail> {
        Some(match self.list.selected().copied()? {
            Row::Failover(s) => Detail::Failover(s),
            Row::Recovery(s) => Detail::Recovery(s),
        })
    }

    fn draw(&self, cx: &Cx, area: Rect, buf: &mut Buffer) {
        self.draw_failovers(cx, area, buf)
    }

    fn row_ids(&self, _m: &Model) -> Vec<String> {
        self.list
            .rows
            .iter()
            .map(|r| match r {
                Row::Failover(s) => s.to_string(),
                Row::Recovery(s) => format!("up{s}"),
            })
            .collect()
    }
}

impl Failovers {
    /// Rows above the table: the sparkline of what the filter shows.
    fn spark_height(&self, m: &Model, body_h: u16) -> u16 {
        match &self.spark {
            Some(sp) => geom::spark_height(body_h, sp.causes_seen(m.now()).len()),
            None => spark_height(m, body_h),
        }
    }

    fn draw_failovers(&self, cx: &Cx, area: Rect, buf: &mut Buffer) {
        let sh = self.spark_height(cx.model, area.height);
        draw_spark(cx, self.spark.as_ref(), Rect { height: sh, ..area }, buf);
        let area = Rect {
            y: area.y + sh,
            height: area.height - sh,
            ..area
        };
        let rows_h = area.height.saturating_sub(1) as usize;
        let list = &self.list;
        let rows = list
            .window(rows_h)
            .iter()
            .filter_map(|row| match row {
                Row::Failover(s) => cx.model.log.get(*s).map(|r| failover_row(cx, r)),
                Row::Recovery(s) => cx.model.recs.get(*s).map(|r| recovery_row(cx, r)),
            })
            .collect();
        let (col, desc) = match list.sort {
            FailoverSort::Time => (2, true),
            FailoverSort::Worker => (3, false),
            FailoverSort::From => (4, false),
            FailoverSort::Cause => (5, false),
        };
        let sorted = Some((col, desc != list.reverse));
        let selected = list.selected_row(rows_h);
        cx.table(
            area,
            buf,
            Table {
                cols: &COLS,
                rows,
                selected,
                sorted,
            },
        );
        if list.is_empty() {
            empty(
                cx.theme,
                area,
                buf,
                if cx.model.log.is_empty() && cx.model.recs.is_empty() {
                    "no failovers logged"
                } else {
                    list.emptied
                        .as_deref()
                        .unwrap_or("no failover matches the filter")
                },
            );
        }
    }
}

/// A failover's row, marked ↓.
fn failover_row(cx: &Cx, r: &LogRec) -> Vec<Span<'static>> {
    let t = cx.theme;
    let to_style = if r.to.is_none() {
        t.no_route()
    } else {
        Style::new()
    };
    vec![
        Span::styled(t.down(), cell_style(t, cx.stale, t.warn())),
        Span::raw(fmt::age_at(cx.now, r.at)),
        Span::raw(fmt::clock(r.at)),
        Span::raw(hub(&r.worker).into_owned()),
        Span::styled(route_text(cx, r), cell_style(t, cx.stale, to_style)),
        Span::styled(
            r.kind.as_str(),
            cell_style(t, cx.stale, kind_style(t, r.kind)),
        ),
        Span::raw(r.status.map(|s| s.to_string()).unwrap_or_default()),
        Span::raw(r.source.as_str()),
        Span::raw(hub(r.detail.as_deref().unwrap_or("")).into_owned()),
    ]
}

/// A recovery's row, marked ↑: `↑ … w-17 pi→opencode recovered … host
/// gpu-node-17 after 14m`.
fn recovery_row(cx: &Cx, r: &RecRec) -> Vec<Span<'static>> {
    let t = cx.theme;
    vec![
        Span::styled(t.up(), cell_style(t, cx.stale, t.ok())),
        Span::raw(fmt::age_at(cx.now, r.at)),
        Span::raw(fmt::clock(r.at)),
        Span::raw(hub(&r.worker).into_owned()),
        Span::styled(recovery_route(cx, r), cell_style(t, cx.stale, t.ok())),
        Span::styled("recovered", cell_style(t, cx.stale, t.ok())),
        Span::raw(""),
        Span::raw(""),
        Span::raw(recovery_detail(r)),
    ]
}

/// `pi→opencode`; `(none)→opencode` when it had no route.
pub fn recovery_route(cx: &Cx, r: &RecRec) -> String {
    format!(
        "{}{}{}",
        r.from.as_deref().map(hub).unwrap_or("(none)".into()),
        cx.theme.arrow(),
        hub(&r.to)
    )
}

/// `host gpu-node-17 after 14m`: where, and how long it was held off.
pub fn recovery_detail(r: &RecRec) -> String {
    format!("host {} after {}", hub(&r.host), fmt::held(r.held_off_s))
}

pub const COLS: [Col; 9] = [
    col("", 1, 1, 0),
    col("AGE", 3, 4, 0),
    col("TIME", 8, 8, 4),
    col("WORKER", 7, 36, 0),
    col("FROM→TO", 12, 40, 0),
    col("CAUSE", 12, 16, 0),
    col("ST", 3, 3, 1),
    col("SOURCE", 6, 10, 3),
    fill("DETAIL", 12, 2),
];

/// Rows above the table in a body `body_h` tall (see
/// [`crate::tui::ui::geom::spark_height`]).
pub fn spark_height(m: &Model, body_h: u16) -> u16 {
    geom::spark_height(body_h, m.log.causes_seen(m.now()).len())
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

/// The sparkline of the whole log, or of what the filter shows (`spark`).
fn draw_spark(cx: &Cx, spark: Option<&Spark>, area: Rect, buf: &mut Buffer) {
    let t = cx.theme;
    if area.height == 0 {
        return;
    }
    const LABEL: usize = 16;
    let minutes = (area.width as usize)
        .saturating_sub(LABEL + 6)
        .clamp(1, WINDOW_MIN as usize);
    let per = match spark {
        Some(sp) => sp.per_minute(cx.now, minutes),
        None => cx.model.log.per_minute(cx.now, minutes),
    };
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
        if spark.is_some() {
            format!("failovers per minute that match the filter, last {minutes}m (newest right)")
        } else {
            format!("failovers per minute, last {minutes}m (newest right)")
        },
        t.muted(),
    ));
    put(Line::from(vec![
        Span::raw(format!("{:<LABEL$}", "all")),
        Span::styled(bars(t, &total), cell_style(cx.theme, cx.stale, t.warn())),
        Span::raw(format!(" {sum}")),
    ]));
    let seen = match spark {
        Some(sp) => sp.causes_seen(cx.now),
        None => cx.model.log.causes_seen(cx.now),
    };
    if area.height >= 2 + seen.len() as u16 && area.height > 3 {
        for k in seen {
            let i = crate::tui::model::faillog::kind_index(k);
            let row: Vec<u32> = per.iter().map(|m| m[i]).collect();
            let n: u32 = row.iter().sum();
            put(Line::from(vec![
                Span::styled(
                    format!("{:<LABEL$}", k.as_str()),
                    cell_style(cx.theme, cx.stale, kind_style(t, k)),
                ),
                Span::styled(
                    bars(t, &row),
                    cell_style(cx.theme, cx.stale, kind_style(t, k)),
                ),
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
                    cell_style(cx.theme, cx.stale, kind_style(t, *k)),
                ));
            }
        }
        if !any {
            spans.push(Span::styled("none", t.muted()));
        }
        put(Line::from(spans));
    }
}

pub fn route_text(cx: &Cx, r: &LogRec) -> String {
    format!(
        "{}{}{}",
        hub(&r.from),
        cx.theme.arrow(),
        r.to.as_deref().map(hub).unwrap_or("(none)".into())
    )
}
