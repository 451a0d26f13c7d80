//! The top lines (hub, badge, connection, revision; the fleet at a glance;
//! agents in rank order), the view tabs, and the status line.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{hub, line};
use crate::tui::app::{App, ConnLabel};
use crate::tui::lists::View;
use crate::tui::ui::fmt;

fn row(area: Rect, i: u16) -> Option<Rect> {
    (i < area.height).then(|| Rect {
        y: area.y + i,
        height: 1,
        ..area
    })
}

pub fn conn_text(app: &App) -> String {
    match app.conn_label() {
        ConnLabel::Refused => crate::tui::app::REFUSED.into(),
        ConnLabel::Connecting => "connecting".into(),
        ConnLabel::Live => "live".into(),
        ConnLabel::Polling => "polling".into(),
        ConnLabel::Disconnected(d) => format!(
            "disconnected {}",
            fmt::age(chrono::TimeDelta::seconds(d.as_secs() as i64))
        ),
    }
}

pub fn draw(app: &App, area: Rect, buf: &mut Buffer) {
    let t = &app.theme;
    let sep = Span::styled(format!(" {} ", t.sep()), t.muted());

    // 1: hub, badge, connection, revision.
    if let Some(r) = row(area, 0) {
        let name = app
            .who
            .as_ref()
            .map(|w| w.hub.as_str())
            .unwrap_or(app.hub_label.as_str());
        let mut spans = Vec::new();
        if let Some(v) = app.verdict() {
            spans.push(Span::styled(format!(" {} ", fmt::verdict(v)), t.verdict(v)));
            spans.push(Span::raw(" "));
        }
        spans.push(Span::styled("macfleet ", t.title()));
        match &app.contexts.current {
            // The context first (what the user chose), then the hub's
            // own name when it says another.
            Some(c) => {
                spans.push(Span::styled(
                    super::fit(&hub(c), 24, t.ellipsis()),
                    t.title(),
                ));
                if name != c {
                    spans.push(Span::styled(
                        format!(" ({})", super::fit(&hub(name), 24, t.ellipsis())),
                        t.muted(),
                    ));
                }
            }
            None => spans.push(Span::styled(
                super::fit(&hub(name), 28, t.ellipsis()),
                t.title(),
            )),
        }
        spans.push(Span::raw(" "));
        spans.push(if app.can_write {
            Span::styled(" OWNER ", t.badge_owner())
        } else {
            Span::styled(" READ-ONLY ", t.badge_read_only())
        });
        spans.push(Span::raw(" "));
        let conn_style = match app.conn_label() {
            ConnLabel::Live => t.ok(),
            ConnLabel::Polling | ConnLabel::Connecting => t.warn(),
            ConnLabel::Disconnected(_) | ConnLabel::Refused => t.bad(),
        };
        spans.push(Span::styled(conn_text(app), conn_style));
        if app.is_stale() {
            if let Some(age) = app.data_age() {
                spans.push(Span::styled(
                    format!(
                        " (data {} old)",
                        fmt::age(chrono::TimeDelta::seconds(age.as_secs() as i64))
                    ),
                    t.greyed(),
                ));
            }
        }
        spans.push(sep.clone());
        let rev = if app.fleet.revision.is_empty() {
            app.config.revision.clone().unwrap_or_else(|| "-".into())
        } else {
            app.fleet.revision.clone()
        };
        spans.push(Span::raw(format!("rev {}", hub(&rev))));
        if app.edit.is_pending() {
            spans.push(sep.clone());
            spans.push(Span::styled("EDIT PENDING (w writes)", t.warn()));
        }
        // Who we are and where: shown whole or not at all (a URL cut at the
        // screen's edge reads as a different URL).
        let mut tail = Vec::new();
        if let Some(w) = &app.who {
            tail.push(format!("as {}", hub(&w.name)));
        }
        if app.who.as_ref().is_some_and(|w| w.hub != app.hub_label) {
            tail.push(hub(&app.hub_label).into_owned());
        }
        let mut width = Line::from(spans.clone()).width();
        if width > usize::from(r.width) {
            // The tool's own name is the first thing to go: the status
            // word, the hub and the revision matter more.
            if let Some(i) = spans.iter().position(|s| s.content == "macfleet ") {
                width -= spans.remove(i).width();
            }
        }
        for text in tail {
            let more = sep.width() + Span::raw(text.as_str()).width();
            if width + more > usize::from(r.width) {
                break;
            }
            width += more;
            spans.push(sep.clone());
            spans.push(Span::styled(text, t.muted()));
        }
        line(
            r,
            buf,
            super::fit_line(Line::from(spans), usize::from(r.width), t.ellipsis()),
        );
    }

    // 2: the fleet at a glance; no route first.
    if let Some(r) = row(area, 1) {
        let a = &app.fleet.agg;
        let mut spans = Vec::new();
        if let ConnLabel::Disconnected(d) = app.conn_label() {
            // The hub cannot be asked: what follows is its last judgement,
            // not a fleet outage.
            spans.push(Span::styled(
                format!(
                    "hub unreachable {}",
                    fmt::age(chrono::TimeDelta::seconds(d.as_secs() as i64))
                ),
                t.bad(),
            ));
            spans.push(Span::styled(" · last known: ", t.muted()));
        }
        if a.no_route > 0 {
            spans.push(Span::styled(
                format!("NO ROUTE {}", fmt::count(a.no_route)),
                super::cell_style(app, t.no_route()),
            ));
        } else {
            spans.push(Span::styled("no route 0", t.muted()));
        }
        spans.push(sep.clone());
        spans.push(Span::raw(format!("{} workers: ", fmt::count(a.total))));
        spans.push(Span::styled(
            format!("{} healthy", fmt::count(a.healthy)),
            super::cell_style(app, t.ok()),
        ));
        spans.push(Span::raw(" "));
        spans.push(Span::styled(
            format!("{} stale", fmt::count(a.stale)),
            super::cell_style(app, if a.stale > 0 { t.warn() } else { t.muted() }),
        ));
        spans.push(Span::raw(" "));
        spans.push(Span::styled(
            format!("{} lost", fmt::count(a.lost)),
            super::cell_style(app, if a.lost > 0 { t.bad() } else { t.muted() }),
        ));
        spans.push(sep.clone());
        let rev = hub(&app.fleet.revision).into_owned();
        spans.push(Span::styled(
            format!(
                "{} not on {}",
                fmt::count(a.out_of_sync),
                if rev.is_empty() { "current" } else { &rev }
            ),
            super::cell_style(
                app,
                if a.out_of_sync > 0 {
                    t.warn()
                } else {
                    t.muted()
                },
            ),
        ));
        line(
            r,
            buf,
            super::fit_line(Line::from(spans), usize::from(r.width), t.ellipsis()),
        );
    }

    // 3: agents in rank order: can run / run now.
    if let Some(r) = row(area, 2) {
        let mut spans = vec![Span::styled("can/run ", t.muted())];
        let agents = if app.config.agents.is_empty() {
            app.ladder_agents()
        } else {
            app.config.agents.clone()
        };
        if agents.is_empty() {
            spans.push(Span::styled("(no list yet)", t.muted()));
        }
        for (i, a) in agents.iter().enumerate() {
            if i > 0 {
                spans.push(sep.clone());
            }
            let c = app.fleet.agg.agent(a);
            spans.push(Span::raw(format!("{} ", hub(a))));
            let style = if c.capable == 0 && app.fleet.agg.total > 0 {
                t.bad()
            } else {
                ratatui::style::Style::new()
            };
            spans.push(Span::styled(
                format!("{}/{}", fmt::count(c.capable), fmt::count(c.active)),
                super::cell_style(app, style),
            ));
        }
        line(
            r,
            buf,
            super::fit_line(Line::from(spans), usize::from(r.width), t.ellipsis()),
        );
    }
}

pub fn draw_tabs(app: &App, area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    let t = &app.theme;
    let mut spans = Vec::new();
    for v in View::ALL {
        spans.push(Span::raw(" "));
        if v == app.view() {
            let len = app.pane().cursor().len;
            spans.push(Span::styled(
                format!("{} {} {}", v.index() + 1, v.title(), fmt::count(len)),
                t.tab_active(),
            ));
        } else {
            spans.push(Span::styled(
                format!("{} {}", v.index() + 1, v.title()),
                t.muted(),
            ));
        }
        spans.push(Span::raw(" "));
    }
    let pane = app.pane();
    let dir = if pane.reversed() { ", reversed" } else { "" };
    spans.push(Span::styled(
        format!("{} sort {}{}", t.sep(), pane.sort_name(), dir),
        t.muted(),
    ));
    let filter = pane.filter();
    if !filter.text.is_empty() && !filter.editing {
        spans.push(Span::styled(
            format!(" {} /{}", t.sep(), filter.text),
            t.warn(),
        ));
    }
    line(
        area,
        buf,
        super::fit_line(Line::from(spans), usize::from(area.width), t.ellipsis()),
    );
}

pub fn draw_status(app: &App, area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    if super::edit::draw_status(app, area, buf) {
        return;
    }
    if super::command::draw_status(app, area, buf) {
        return;
    }
    let t = &app.theme;
    let filter = app.pane().filter();
    if filter.editing {
        line(
            area,
            buf,
            Line::from(vec![
                Span::styled("/", t.title()),
                Span::raw(filter.text.clone()),
                Span::styled("_", t.title()),
                Span::styled(
                    format!(
                        "   {}",
                        super::fit(
                            &crate::tui::keys::prompt_help(t.sep(), t.ascii),
                            usize::from(area.width).saturating_sub(filter.text.chars().count() + 5),
                            t.ellipsis()
                        )
                    ),
                    t.muted(),
                ),
            ]),
        );
        return;
    }
    let c = app.pane().cursor();
    let (pos, len) = (c.pos, c.len);
    let right = if len > 0 {
        format!("{}/{}", fmt::count(pos + 1), fmt::count(len))
    } else {
        "0/0".to_string()
    };
    let left: Line = if let Some(s) = &app.status {
        Line::styled(s.text.clone(), t.warn())
    } else if let (true, Some(e)) = (app.is_stale(), &app.conn.last_error) {
        Line::styled(
            format!(
                "hub: {}",
                super::fit(
                    &hub(e),
                    area.width.saturating_sub(12) as usize,
                    t.ellipsis()
                )
            ),
            t.bad(),
        )
    } else if app.screen.detail == Some(crate::tui::app::Detail::Rollout) {
        Line::styled(
            format!("Esc close {0} j/k PgUp/PgDn scroll {0} ? help", t.sep()),
            t.muted(),
        )
    } else if app.screen.detail.is_some() {
        Line::styled(
            format!(
                "Esc close {0} j/k next {0} PgUp/PgDn scroll {0} ? help",
                t.sep()
            ),
            t.muted(),
        )
    } else {
        Line::styled(
            format!(
                "? help {0} / filter {0} s sort {0} Enter detail {0} r refetch {0} q quit",
                t.sep()
            ),
            t.muted(),
        )
    };
    line(area, buf, left);
    let w = right.chars().count() as u16;
    if area.width > w + 1 {
        let r = Rect {
            x: area.right() - w,
            width: w,
            ..area
        };
        // Clear what the left part wrote under the counter.
        buf.set_string(
            r.x.saturating_sub(1),
            r.y,
            " ".repeat(w as usize + 1),
            t.muted(),
        );
        line(r, buf, Line::styled(right, t.muted()));
    }
}
