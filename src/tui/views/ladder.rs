//! `1` Ladder: the list in rank order; who can run each agent, who runs it,
//! and failovers away from it in the last hour by cause.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::{Col, cell_style, col, empty, fill, hub, line, table};
use crate::agents_doc::unknown_agents;
use crate::plan::Rung;
use crate::tui::app::App;
use crate::tui::model::faillog::ByKind;
use crate::tui::ui::fmt;
use crate::wire::CauseKind;

pub const COLS: [Col; 7] = [
    col("#", 1, 7, 0),
    col("AGENT", 8, 24, 0),
    col("CAN", 3, 9, 0),
    col("RUN", 3, 9, 0),
    col("CANNOT (bin/tok/pf)", 19, 19, 2),
    col("AWAY NOW", 8, 40, 1),
    fill("AWAY LAST HOUR", 12, 0),
];

/// `12: upstream_status 10 · missing_binary 2`: live workers held off the
/// agent now, by the cause holding them off (`no cause` when none is known).
pub fn away_now_text(app: &App, agent: &str) -> String {
    let a = app.away_now.get(agent).copied().unwrap_or_default();
    let mut s = away_text(app, &a.by_kind);
    if a.unrecorded > 0 {
        let known: u32 = a.by_kind.iter().sum();
        let detail = if known == 0 {
            String::new()
        } else {
            format!(
                " {} {}",
                app.theme.sep(),
                &s[s.find(": ").map_or(0, |i| i + 2)..]
            )
        };
        s = format!("{}: no cause {}{}", a.total(), a.unrecorded, detail);
    }
    s
}

/// `8 rate_limited 5 · auth 3`
pub fn away_text(app: &App, k: &ByKind) -> String {
    let total: u32 = k.iter().sum();
    if total == 0 {
        return "0".into();
    }
    let mut parts: Vec<(u32, CauseKind)> = CauseKind::ALL
        .iter()
        .enumerate()
        .filter(|(i, _)| k[*i] > 0)
        .map(|(i, c)| (k[i], *c))
        .collect();
    parts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let sep = format!(" {} ", app.theme.sep());
    let detail: Vec<String> = parts.iter().map(|(n, c)| format!("{c} {n}")).collect();
    format!("{total}: {}", detail.join(&sep))
}

/// The rank column: `2` as the hub has it; with an edit pending, a
/// changed rung shows old and new (`2→0`, `-→4` added, `1→-` removed).
fn rank_text(app: &App, agent: &str, pending: Option<&[Rung]>) -> String {
    let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| r.to_string());
    match pending.and_then(|p| p.iter().find(|r| r.agent == agent)) {
        Some(r) if r.changed() => format!("{}{}{}", rank(r.old), app.theme.arrow(), rank(r.new)),
        Some(r) => rank(r.new),
        None => rank(app.config.agents.iter().position(|x| x == agent)),
    }
}

/// The RUN column: workers on the agent now; with an edit pending, the
/// healthy ones on it now and under the new order (`3→5`) when they differ.
fn run_text(app: &App, agent: &str, active: usize) -> String {
    let rung = app
        .edit
        .projection
        .as_ref()
        .and_then(|p| p.rungs.iter().find(|r| r.agent == agent));
    match rung {
        Some(r) if r.projected != r.today => format!(
            "{}{}{}",
            fmt::count(r.today),
            app.theme.arrow(),
            fmt::count(r.projected)
        ),
        _ => fmt::count(active),
    }
}

/// Below the rows: after a write, the rollout's convergence line; with an
/// edit pending, the projection's summary and its warnings, as far as
/// there is room.
fn draw_projection(app: &App, area: Rect, buf: &mut Buffer, used: usize) {
    let t = &app.theme;
    if let Some(r) = &app.edit.rollout {
        let text = format!(
            "{}/{} healthy workers on {} {} {} behind",
            fmt::count(r.on),
            fmt::count(r.healthy),
            hub(&r.revision),
            t.sep(),
            fmt::count(r.behind())
        );
        let mut style = if r.behind() == 0 { t.ok() } else { t.warn() };
        let text = if r.selected {
            style = t.selected();
            format!("{text} {} Enter lists the workers behind and why", t.sep())
        } else {
            text
        };
        let y = area.y + 2 + used as u16;
        if y < area.y + area.height {
            let r = Rect {
                y,
                height: 1,
                ..area
            };
            line(
                r,
                buf,
                super::fit_line(
                    Line::styled(text, style),
                    usize::from(area.width),
                    t.ellipsis(),
                ),
            );
        }
    }
    let Some(p) = &app.edit.projection else {
        return;
    };
    let mut lines = Vec::new();
    if let Some(e) = &app.edit.error {
        lines.push(Line::styled(
            format!(
                "last write failed: {} (the edit is kept: w retries)",
                hub(e)
            ),
            t.bad(),
        ));
    }
    lines.extend([Line::styled(
        format!(
            "pending order over {} healthy workers {} no route {}{}{}",
            fmt::count(p.healthy),
            t.sep(),
            fmt::count(p.no_route_today),
            t.arrow(),
            fmt::count(p.no_route)
        ),
        t.title(),
    )]);
    for w in &p.warnings {
        lines.push(Line::styled(format!("! {}", hub(&w.to_string())), t.warn()));
    }
    let top = area.y + 2 + used as u16;
    for (i, l) in lines.into_iter().enumerate() {
        let y = top + i as u16;
        if y >= area.y + area.height {
            break;
        }
        let r = Rect {
            y,
            height: 1,
            ..area
        };
        line(
            r,
            buf,
            super::fit_line(l, usize::from(area.width), t.ellipsis()),
        );
    }
}

pub fn draw(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let rows_h = area.height.saturating_sub(1) as usize;
    let list = &app.lists.ladder;
    let away = app.log.away_last_hour(app.now());
    let unknown = unknown_agents(&app.ladder_agents());
    let pending = app
        .edit
        .plan
        .as_ref()
        .filter(|p| p.is_pending())
        .map(|p| p.rungs());
    let rows = list
        .window(rows_h)
        .iter()
        .map(|a| {
            let c = app.fleet.agg.agent(a);
            let rank = rank_text(app, a, pending.as_deref());
            let mut name = hub(a).into_owned();
            if unknown.contains(a) {
                name.push('?');
            }
            let can_style = if c.capable == 0 && app.fleet.agg.total > 0 {
                t.bad()
            } else {
                Style::new()
            };
            let k = away.get(a.as_str()).copied().unwrap_or_default();
            let away_style = if k.iter().sum::<u32>() > 0 {
                t.warn()
            } else {
                t.muted()
            };
            vec![
                Span::raw(rank),
                Span::raw(name),
                Span::styled(fmt::count(c.capable), cell_style(app, can_style)),
                Span::raw(run_text(app, a, c.active)),
                Span::raw(format!(
                    "{}/{}/{}",
                    fmt::count(c.no_binary),
                    fmt::count(c.no_token),
                    fmt::count(c.preflight_failed)
                )),
                {
                    let now = app.away_now.get(a.as_str()).map_or(0, |n| n.total());
                    let style = if now > 0 { t.warn() } else { t.muted() };
                    Span::styled(away_now_text(app, a), cell_style(app, style))
                },
                Span::styled(away_text(app, &k), cell_style(app, away_style)),
            ]
        })
        .collect();
    let used = list.window(rows_h).len();
    let on_rollout = app.edit.rollout.as_ref().is_some_and(|r| r.selected);
    let selected = list.selected_row(rows_h).filter(|_| !on_rollout);
    table(app, area, buf, &COLS, rows, selected);
    draw_projection(app, area, buf, used);
    if list.is_empty() {
        let msg = list.emptied.as_deref().unwrap_or("no agents list yet");
        empty(app, area, buf, msg);
    }
}
