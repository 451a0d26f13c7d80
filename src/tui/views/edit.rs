//! The ladder editor's screens: the diff under review (`w`), the conflict
//! after a 412 that changed the list, and the status-line prompts (add an
//! agent, quit with an edit pending).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{fit, hub, line};
use crate::tui::app::App;
use crate::tui::edit::Mode;
use crate::tui::ui::fmt::{age_at, count as count_text};
use crate::wire::WorkerState;

/// The body, when the editor holds it; false when the view draws it.
pub fn draw_body(app: &App, area: Rect, buf: &mut Buffer) -> bool {
    match &app.edit.mode {
        Mode::Review {
            diff,
            if_match,
            scroll,
            ..
        } => {
            draw_diff(app, area, buf, diff, if_match, *scroll);
            true
        }
        Mode::Conflict {
            conflict,
            confirm_drop,
        } => {
            draw_conflict(app, area, buf, conflict, *confirm_drop);
            true
        }
        _ => false,
    }
}

fn row(area: Rect, i: u16) -> Option<Rect> {
    (i < area.height).then(|| Rect {
        y: area.y + i,
        height: 1,
        ..area
    })
}

fn draw_diff(app: &App, area: Rect, buf: &mut Buffer, diff: &str, rev: &str, scroll: usize) {
    let t = &app.theme;
    if let Some(r) = row(area, 0) {
        line(
            r,
            buf,
            Line::from(vec![
                Span::styled(format!("write onto revision {}", hub(rev)), t.title()),
                Span::styled(
                    format!(
                        "   y sends exactly this {0} n/Esc back {0} j/k scroll",
                        t.sep()
                    ),
                    t.muted(),
                ),
            ]),
        );
    }
    let w = usize::from(area.width);
    for (i, l) in diff.lines().skip(scroll).enumerate() {
        let Some(r) = row(area, i as u16 + 1) else {
            break;
        };
        line(r, buf, diff_line(app, &fit(&hub(l), w, t.ellipsis())));
    }
}

/// One line of a unified diff, coloured: added, removed, hunk, header.
pub fn diff_line(app: &App, l: &str) -> Line<'static> {
    let t = &app.theme;
    let style = if l.starts_with("+++") || l.starts_with("---") {
        t.title()
    } else if l.starts_with('+') {
        t.ok()
    } else if l.starts_with('-') {
        t.bad()
    } else if l.starts_with("@@") {
        t.muted()
    } else {
        ratatui::style::Style::new()
    };
    Line::styled(l.to_string(), style)
}

fn draw_conflict(
    app: &App,
    area: Rect,
    buf: &mut Buffer,
    c: &crate::plan::Conflict,
    confirm_drop: bool,
) {
    let t = &app.theme;
    let s = &c.sides;
    if let Some(r) = row(area, 0) {
        // Who changed it and when, once the history holds that revision.
        let who = app
            .config
            .history
            .iter()
            .find(|h| h.revision == c.theirs_revision())
            .map(|h| {
                format!(
                    " by {}, {} ago",
                    hub(&h.by),
                    crate::tui::ui::fmt::age_at(app.now(), h.at)
                )
            })
            .unwrap_or_default();
        line(
            r,
            buf,
            Line::styled(
                format!(
                    "the hub's list changed (now {}{who}) while you edited it from {}",
                    hub(c.theirs_revision()),
                    hub(c.mine.base_revision())
                ),
                t.warn(),
            ),
        );
    }
    let col_w = (area.width / 3).max(1);
    let cols = [
        (format!("base {}", c.mine.base_revision()), &s.base),
        (format!("theirs {}", c.theirs_revision()), &s.theirs),
        ("mine (pending)".to_string(), &s.mine),
    ];
    for (k, (title, list)) in cols.iter().enumerate() {
        let x = area.x + col_w * k as u16;
        let cell = |i: u16| {
            row(area, i).map(|r| Rect {
                x,
                width: col_w.min(area.x + area.width - x),
                ..r
            })
        };
        if let Some(r) = cell(2) {
            line(
                r,
                buf,
                Line::styled(
                    fit(&hub(title), col_w as usize - 1, t.ellipsis()),
                    t.column_header(),
                ),
            );
        }
        for (i, a) in list.iter().enumerate() {
            if let Some(r) = cell(3 + i as u16) {
                line(
                    r,
                    buf,
                    Line::raw(fit(
                        &format!("{i} {}", hub(a)),
                        col_w as usize - 1,
                        t.ellipsis(),
                    )),
                );
            }
        }
    }
    let n = s.base.len().max(s.theirs.len()).max(s.mine.len()) as u16;
    if let Some(r) = row(area, 4 + n) {
        let text = if confirm_drop {
            "drop your pending order for good? y drops it · any other key keeps it".to_string()
        } else {
            format!(
                "c carry mine onto theirs (a new edit to review) {0} D drop mine (asks again)",
                t.sep()
            )
        };
        line(r, buf, Line::styled(text, t.title()));
    }
}

/// The status line, when a prompt of the editor holds it.
pub fn draw_status(app: &App, area: Rect, buf: &mut Buffer) -> bool {
    let t = &app.theme;
    let l = match &app.edit.mode {
        Mode::Adding { text, error } => {
            let mut spans = vec![
                Span::styled("add agent: ", t.title()),
                Span::raw(hub(text).into_owned()),
                Span::styled("_", t.title()),
                Span::raw("   "),
            ];
            match error {
                Some(e) => spans.push(Span::styled(hub(e).into_owned(), t.bad())),
                None => {
                    let offer = app
                        .add_choices()
                        .into_iter()
                        .filter(|c| c.starts_with(text.as_str()))
                        .collect::<Vec<_>>()
                        .join(" ");
                    spans.push(Span::styled(
                        format!(
                            "Enter adds {0} Tab completes {0} Esc cancels {0} {1}",
                            t.sep(),
                            hub(&offer)
                        ),
                        t.muted(),
                    ))
                }
            }
            Line::from(spans)
        }
        Mode::ConfirmQuit => Line::styled(
            "an edit is pending and not written: quit anyway? y quits · any other key stays",
            t.warn(),
        ),
        Mode::Sending { if_match } => Line::styled(
            format!("writing onto {}{}", hub(if_match), t.ellipsis()),
            t.warn(),
        ),
        _ => return false,
    };
    line(
        area,
        buf,
        super::fit_line(l, usize::from(area.width), t.ellipsis()),
    );
    true
}

/// Enter on the convergence line: the workers not yet on the revision
/// written, and why (healthy on an older revision and for how long since
/// the write, stale, lost).
pub fn rollout_title_and_lines(app: &App) -> (String, Vec<Line<'static>>) {
    let t = &app.theme;
    let Some(r) = &app.edit.rollout else {
        return ("rollout".into(), vec![Line::raw("no write to follow")]);
    };
    let now = app.now();
    let (behind, all) = app.rollout_behind();
    let since =
        r.at.map(|at| format!(", written {} ago", age_at(now, at)))
            .unwrap_or_default();
    let count = |s: WorkerState| behind.iter().filter(|b| b.state == s).count();
    let mut out = vec![
        Line::from(vec![Span::styled(
            format!(
                "{}/{} healthy workers on {}{since}",
                count_text(r.on),
                count_text(r.healthy),
                hub(&r.revision)
            ),
            t.title(),
        )]),
        Line::raw(format!(
            "behind: {} healthy on an older revision {sep} {} stale {sep} {} lost (not on it)",
            count_text(r.behind()),
            count_text(count(WorkerState::Stale)),
            count_text(count(WorkerState::Lost)),
            sep = t.sep()
        )),
        Line::raw(""),
    ];
    if all == 0 {
        out.push(Line::styled("every worker reports it", t.ok()));
    }
    for b in &behind {
        let rev = b.revision.as_deref().map_or("no revision".into(), hub);
        let heard = age_at(now, b.heard);
        let (why, style) = match b.state {
            WorkerState::Healthy => (
                format!("healthy, still reports {rev}: last heard {heard} ago"),
                t.warn(),
            ),
            WorkerState::Stale => (format!("stale: last heard {heard} ago, on {rev}"), t.warn()),
            WorkerState::Lost => (format!("lost: last heard {heard} ago, on {rev}"), t.bad()),
        };
        out.push(Line::from(vec![
            Span::raw(format!("{:<14} ", hub(&b.worker))),
            Span::styled(why, style),
        ]));
    }
    if all > behind.len() {
        out.push(Line::styled(
            format!(
                "{} more: the Workers view, filtered on !rev:{}, has them all",
                count_text(all - behind.len()),
                hub(&r.revision)
            ),
            t.muted(),
        ));
    }
    (format!("rollout of {}", hub(&r.revision)), out)
}
