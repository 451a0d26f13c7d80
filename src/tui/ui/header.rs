//! The top lines (hub, badge, connection, revision; the fleet at a glance;
//! agents in rank order), the view tabs, and the status line.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::theme::Theme;
use super::{fmt, hub, line, row};
use crate::tui::keys::{self, Hints};
use crate::tui::model::Model;
use crate::tui::model::conn::{ConnLabel, FORBIDDEN, REFUSED};

pub fn conn_text(m: &Model) -> String {
    match m.conn_label() {
        ConnLabel::Refused => REFUSED.into(),
        ConnLabel::Forbidden => FORBIDDEN.into(),
        ConnLabel::Connecting => "connecting".into(),
        ConnLabel::Live => "live".into(),
        ConnLabel::Polling => "polling".into(),
        ConnLabel::Disconnected(d) => format!(
            "disconnected {}",
            fmt::age(chrono::TimeDelta::seconds(d.as_secs() as i64))
        ),
        ConnLabel::BrokeBound(d) => format!(
            "answers out of contract {}",
            fmt::age(chrono::TimeDelta::seconds(d.as_secs() as i64))
        ),
    }
}

/// An age as the header says it (`3m`).
fn age(d: std::time::Duration) -> String {
    fmt::age(chrono::TimeDelta::seconds(d.as_secs() as i64))
}

fn sep(t: &Theme) -> Span<'static> {
    Span::styled(format!(" {} ", t.sep()), t.muted())
}

/// Per-agent counts of one moment (the Ladder's, counted with AWAY NOW).
pub type Counts = std::collections::HashMap<String, crate::tui::model::fleet::AgentCounts>;

/// The three top lines, from the model; `context` is the context the
/// session is on, if it came from one; `counts`, the per-agent counts the
/// pane on screen shows (the Ladder's moment), so the header agrees with it.
pub fn draw(
    t: &Theme,
    m: &Model,
    context: Option<&str>,
    counts: Option<&Counts>,
    area: Rect,
    buf: &mut Buffer,
) {
    let lines = [
        hub_line(t, m, context, area.width),
        fleet_line(t, m, area.width),
        problems_or_agents_line(t, m, counts),
    ];
    for (i, l) in lines.into_iter().enumerate() {
        if let Some(r) = row(area, i as u16) {
            line(
                r,
                buf,
                super::fit_line(l, usize::from(r.width), t.ellipsis()),
            );
        }
    }
}

/// 1: the status word, the hub, the badge, the connection, the revision,
/// a pending edit or a drill; who we are and where when it fits `width`.
pub fn hub_line(t: &Theme, m: &Model, context: Option<&str>, width: u16) -> Line<'static> {
    let sep = sep(t);
    let mut spans = name_spans(t, m, context);
    spans.extend(state_spans(t, m));
    // Who we are and where: shown whole or not at all (a URL cut at the
    // screen's edge reads as a different URL).
    let mut tail = Vec::new();
    if let Some(w) = &m.who {
        tail.push(format!("as {}", hub(&w.name)));
    }
    if m.who.as_ref().is_some_and(|w| w.hub != m.hub_label) {
        tail.push(hub(&m.hub_label).into_owned());
    }
    let mut used = Line::from(spans.clone()).width();
    if used > usize::from(width) {
        // The tool's own name is the first thing to go: the status
        // word, the hub and the revision matter more.
        if let Some(i) = spans.iter().position(|s| s.content == "macfleet ") {
            used -= spans.remove(i).width();
        }
    }
    for text in tail {
        let more = sep.width() + Span::raw(text.as_str()).width();
        if used + more > usize::from(width) {
            break;
        }
        used += more;
        spans.push(sep.clone());
        spans.push(Span::styled(text, t.muted()));
    }
    Line::from(spans)
}

/// The status word, `macfleet`, the context and the hub's name, the badge.
fn name_spans(t: &Theme, m: &Model, context: Option<&str>) -> Vec<Span<'static>> {
    let name = m
        .who
        .as_ref()
        .map(|w| w.hub.as_str())
        .unwrap_or(m.hub_label.as_str());
    let mut spans = Vec::new();
    if let Some(v) = m.verdict() {
        spans.push(Span::styled(format!(" {} ", fmt::verdict(v)), t.verdict(v)));
        spans.push(Span::raw(" "));
    }
    spans.push(Span::styled("macfleet ", t.title()));
    match context {
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
    spans.push(if m.can_write {
        Span::styled(" OWNER ", t.badge_owner())
    } else {
        Span::styled(" READ-ONLY ", t.badge_read_only())
    });
    spans.push(Span::raw(" "));
    spans
}

/// The connection (and the data's age when stale), the large-fleet mode,
/// the revision, a pending edit, a drill.
fn state_spans(t: &Theme, m: &Model) -> Vec<Span<'static>> {
    let sep = sep(t);
    let mut spans = Vec::new();
    let conn_style = match m.conn_label() {
        ConnLabel::Live => t.ok(),
        ConnLabel::Polling | ConnLabel::Connecting => t.warn(),
        ConnLabel::Disconnected(_)
        | ConnLabel::BrokeBound(_)
        | ConnLabel::Refused
        | ConnLabel::Forbidden => t.bad(),
    };
    spans.push(Span::styled(conn_text(m), conn_style));
    if m.is_stale() {
        if let Some(a) = m.data_age() {
            spans.push(Span::styled(format!(" (data {} old)", age(a)), t.greyed()));
        }
    }
    if let Some(l) = &m.large {
        // The counts are the hub's summary; said with their age when
        // it has not come for a while (the screen tells the truth).
        let mut text = "large fleet".to_string();
        if let Some(a) = l.summary_age(m.mono_now).filter(|a| a.as_secs() >= 10) {
            text.push_str(&format!(" (counts {} old)", age(a)));
        }
        spans.push(sep.clone());
        spans.push(Span::styled(text, t.muted()));
    }
    spans.push(sep.clone());
    let rev = if m.fleet.revision.is_empty() {
        m.config.revision.clone().unwrap_or_else(|| "-".into())
    } else {
        m.fleet.revision.clone()
    };
    spans.push(Span::raw(format!("rev {}", hub(&rev))));
    if m.edit.is_pending() {
        spans.push(sep.clone());
        spans.push(Span::styled("EDIT PENDING (w writes)", t.warn()));
    }
    if !m.drill.is_empty() {
        // A drill shows where workers would land, not where they are.
        spans.push(sep.clone());
        spans.push(Span::styled(
            format!("DRILL {} down (nothing written)", hub(&m.drill.join(", "))),
            t.warn(),
        ));
    }
    spans
}

/// 2: the fleet at a glance, no route first (after what the connection
/// makes of it: last known figures), its last part fitted to `width`.
pub fn fleet_line(t: &Theme, m: &Model, width: u16) -> Line<'static> {
    let stale = m.is_stale();
    let sep = sep(t);
    let a = &m.fleet.agg;
    let mut spans = last_known_spans(t, m);
    if stale && m.data_age().is_none() {
        // Nothing was ever fetched: no figure is known, not zero.
        spans.push(Span::styled("nothing fetched yet", t.muted()));
        return Line::from(spans);
    }
    if a.no_route > 0 {
        spans.push(Span::styled(
            format!("NO ROUTE {}", fmt::count(a.no_route)),
            super::cell_style(t, stale, t.no_route()),
        ));
    } else {
        spans.push(Span::styled("no route 0", t.muted()));
    }
    // `style` when `n` is not zero, else muted.
    let when = |n: usize, style| super::cell_style(t, stale, if n > 0 { style } else { t.muted() });
    if a.headroom_known > 0 {
        // Healthy workers with nothing left below their rung: the next
        // failure is a no route (a worker with none already is above).
        spans.push(sep.clone());
        spans.push(Span::styled(
            format!("{} one failure from no route", fmt::count(a.one_failure)),
            when(a.one_failure, t.warn()),
        ));
    }
    spans.push(sep.clone());
    spans.push(Span::raw(format!("{} workers: ", fmt::count(a.total))));
    spans.push(Span::styled(
        format!("{} healthy", fmt::count(a.healthy)),
        super::cell_style(t, stale, t.ok()),
    ));
    if a.healthy_no_route > 0 {
        // Heartbeating is not having a route: never one without the other.
        spans.push(Span::styled(
            format!(" ({} with no route)", fmt::count(a.healthy_no_route)),
            super::cell_style(t, stale, t.no_route()),
        ));
    }
    spans.push(Span::raw(" "));
    spans.push(Span::styled(
        format!("{} stale", fmt::count(a.stale)),
        when(a.stale, t.warn()),
    ));
    spans.push(Span::raw(" "));
    spans.push(Span::styled(
        format!("{} lost", fmt::count(a.lost)),
        when(a.lost, t.bad()),
    ));
    spans.push(sep.clone());
    let used = Line::from(spans.clone()).width();
    spans.push(not_on_span(
        t,
        m,
        when(a.out_of_sync, t.warn()),
        usize::from(width).saturating_sub(used),
    ));
    Line::from(spans)
}

/// `3 not on 7c3e91a0d4f2`: live workers not on the revision they were
/// told. While a staged rollout bakes its cohort is told the candidate:
/// on it, a cohort worker is not behind, and the line says whose it is:
/// `(cohort: rollout 4c2e…)`, shorter when `room` is short (`(cohort
/// 4c2e…)`, then the revision cut too), and left out whole rather than
/// cut (the Ladder's rollout line names it).
fn not_on_span(t: &Theme, m: &Model, style: ratatui::style::Style, room: usize) -> Span<'static> {
    let rev = hub(&m.fleet.revision).into_owned();
    let rev = if rev.is_empty() {
        "current".into()
    } else {
        rev
    };
    let n = fmt::count(m.fleet.agg.out_of_sync);
    let plain = format!("{n} not on {rev}");
    let Some(v) = m.staged.baking() else {
        return Span::styled(plain, style);
    };
    let id = super::rollout::short_id(&v.id, t.ellipsis());
    let short_rev = super::fit(&rev, 8, t.ellipsis());
    let text = [
        format!("{plain} (cohort: rollout {id})"),
        format!("{plain} (cohort {id})"),
        format!("{n} not on {short_rev} (cohort {id})"),
    ]
    .into_iter()
    .find(|s| s.chars().count() <= room)
    .unwrap_or(plain);
    Span::styled(text, style)
}

/// What the fleet line's figures are when the hub cannot be asked, breaks
/// the API or refuses the token: its last judgement, not a fleet outage.
fn last_known_spans(t: &Theme, m: &Model) -> Vec<Span<'static>> {
    // With nothing fetched, the line ends after the cause (`nothing
    // fetched yet` follows).
    let known = m.data_age().is_some();
    let data = age(m.data_age().unwrap_or_default());
    if let ConnLabel::Disconnected(d) = m.conn_label() {
        vec![
            Span::styled(format!("hub unreachable {}", age(d)), t.bad()),
            Span::styled(if known { " · last known: " } else { " · " }, t.muted()),
        ]
    } else if let ConnLabel::BrokeBound(d) = m.conn_label() {
        // The hub answers, out of the contract: its answers are
        // refused, and what follows is the last one that kept it.
        let known = if known {
            format!("last known {data} ago: ")
        } else {
            String::new()
        };
        vec![Span::styled(
            format!("hub broke the API {} · {known}", age(d)),
            t.bad(),
        )]
    } else if let Some(d) = m.refused_for() {
        // The hub answers and refuses the token: a replaced hub, or a
        // revoked token. What follows is the last hub that took it.
        let word = if m.conn.refused {
            "token refused"
        } else {
            "token forbidden"
        };
        let known = if known {
            format!(" · last known {data} ago: ")
        } else {
            " · ".to_string()
        };
        vec![
            Span::styled(format!("{word} {}", age(d)), t.bad()),
            Span::styled(known, t.muted()),
        ]
    } else {
        Vec::new()
    }
}

/// 3: the hub's own problems, when it has any (they matter more than the
/// agents' counts, which the Ladder shows too); else the agents in rank
/// order: can run / run now.
pub fn problems_or_agents_line(t: &Theme, m: &Model, counts: Option<&Counts>) -> Line<'static> {
    let stale = m.is_stale();
    if let Some(a) = &m.another_hub {
        // Until a key acknowledges it: what is on screen is another
        // hub's (its own problems follow, cut at the edge if need be).
        let mut text = another_hub_text(a);
        if let Some(p) = m.hub_problems() {
            text.push_str(&format!(" {} hub: {}", t.sep(), hub(&p)));
        }
        return Line::from(Span::styled(text, t.warn()));
    }
    if let Some(p) = m.hub_problems() {
        return Line::from(Span::styled(
            // What a hub we cannot reach said last is last known.
            match (stale, m.data_age()) {
                (true, Some(a)) => format!("hub (last known, {} ago): {}", age(a), hub(&p)),
                (true, None) => format!("hub (last known): {}", hub(&p)),
                (false, _) => format!("hub: {}", hub(&p)),
            },
            t.bad(),
        ));
    }
    let mut spans = vec![Span::styled("can/run ", t.muted())];
    let agents = if m.config.agents.is_empty() {
        m.ladder_agents()
    } else {
        m.config.agents.clone()
    };
    if agents.is_empty() {
        spans.push(Span::styled("(no list yet)", t.muted()));
    }
    for (i, a) in agents.iter().enumerate() {
        if i > 0 {
            spans.push(sep(t));
        }
        let c = match counts {
            Some(k) => k.get(a).copied().unwrap_or_default(),
            None => m.fleet.agg.agent(a),
        };
        spans.push(Span::raw(format!("{} ", hub(a))));
        let style = if c.capable == 0 && m.fleet.agg.total > 0 {
            t.bad()
        } else {
            ratatui::style::Style::new()
        };
        spans.push(Span::styled(
            format!("{}/{}", fmt::count(c.capable), fmt::count(c.active)),
            super::cell_style(t, stale, style),
        ));
    }
    Line::from(spans)
}

/// `another hub since 19:02: history and log are this hub's (Esc: seen)`.
pub fn another_hub_text(a: &crate::tui::model::said::AnotherHub) -> String {
    format!(
        "another hub since {}: history and log are this hub's (Esc: seen)",
        a.since.format("%H:%M")
    )
}

/// The tabs line: what it names.
pub struct Tabs<'a> {
    pub titles: &'a [&'a str],
    pub current: usize,
    /// Rows of the current pane.
    pub len: usize,
    pub sort: &'a str,
    pub reversed: bool,
    /// The current pane's filter, when one is set and not being typed.
    pub filter: Option<&'a str>,
}

pub fn draw_tabs(t: &Theme, tabs: &Tabs, area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    let mut spans = Vec::new();
    for (i, title) in tabs.titles.iter().enumerate() {
        spans.push(Span::raw(" "));
        if i == tabs.current {
            spans.push(Span::styled(
                format!("{} {} {}", i + 1, title, fmt::count(tabs.len)),
                t.tab_active(),
            ));
        } else {
            spans.push(Span::styled(format!("{} {}", i + 1, title), t.muted()));
        }
        spans.push(Span::raw(" "));
    }
    let dir = if tabs.reversed { ", reversed" } else { "" };
    spans.push(Span::styled(
        format!("{} sort {}{}", t.sep(), tabs.sort, dir),
        t.muted(),
    ));
    if let Some(f) = tabs.filter {
        spans.push(Span::styled(format!(" {} /{}", t.sep(), f), t.warn()));
    }
    line(
        area,
        buf,
        super::fit_line(Line::from(spans), usize::from(area.width), t.ellipsis()),
    );
}

/// The status line under a pane: what it says.
pub struct Status<'a> {
    /// The filter being typed.
    pub typing: Option<&'a str>,
    /// A message of the moment.
    pub message: Option<&'a str>,
    /// The hub's last error, while the data is stale.
    pub hub_error: Option<&'a str>,
    /// The hints, when nothing else is said.
    pub hints: Hints,
    /// The cursor's row and the rows (`3/40`).
    pub pos: usize,
    pub len: usize,
}

/// The status line at `area`; a message longer than it wraps onto the
/// bottom rows of `body` above it.
pub fn draw_status(t: &Theme, s: &Status, area: Rect, body: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    if let Some(text) = s.typing {
        line(
            area,
            buf,
            Line::from(vec![
                Span::styled("/", t.title()),
                Span::raw(text.to_string()),
                Span::styled("_", t.title()),
                Span::styled(
                    format!(
                        "   {}",
                        super::fit(
                            &keys::prompt_help(t.sep(), t.ascii),
                            usize::from(area.width).saturating_sub(text.chars().count() + 5),
                            t.ellipsis()
                        )
                    ),
                    t.muted(),
                ),
            ]),
        );
        return;
    }
    let (pos, len) = (s.pos, s.len);
    let right = if len > 0 {
        format!("{}/{}", fmt::count(pos + 1), fmt::count(len))
    } else {
        "0/0".to_string()
    };
    let left: Line = if let Some(msg) = s.message {
        let room = usize::from(area.width).saturating_sub(right.chars().count() + 1);
        let rows = wrap(msg, room.max(1));
        // A message longer than the line goes on over the rows above it
        // (its end is never the part lost); the last row stays here.
        let above = rows.len().saturating_sub(1).min(usize::from(body.height));
        let first = rows.len() - 1 - above;
        for (k, text) in rows[first..rows.len() - 1].iter().enumerate() {
            let y = body.bottom() - above as u16 + k as u16;
            let r = Rect {
                y,
                height: 1,
                ..area
            };
            buf.set_string(r.x, r.y, " ".repeat(usize::from(r.width)), t.warn());
            line(r, buf, Line::styled(text.clone(), t.warn()));
        }
        let last = rows.last().cloned().unwrap_or_default();
        if first > 0 {
            // Even taller than the body: its start goes, marked.
            Line::styled(format!("{}{last}", t.ellipsis()), t.warn())
        } else {
            Line::styled(last, t.warn())
        }
    } else if let Some(e) = s.hub_error {
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
    } else {
        Line::styled(keys::hints(s.hints, &format!(" {} ", t.sep())), t.muted())
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

/// `text` in rows of at most `width` columns, broken at spaces where it
/// can be (a word longer than a row is cut across rows).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut rows = vec![String::new()];
    for word in text.split(' ') {
        let cur = rows.last().map_or(0, |r| r.chars().count());
        let w = word.chars().count();
        if cur > 0 && cur + 1 + w <= width {
            if let Some(r) = rows.last_mut() {
                r.push(' ');
                r.push_str(word);
            }
            continue;
        }
        if cur > 0 {
            rows.push(String::new());
        }
        let mut chars = word.chars().peekable();
        while chars.peek().is_some() {
            let piece: String = chars.by_ref().take(width).collect();
            if let Some(r) = rows.last_mut() {
                if r.is_empty() {
                    r.push_str(&piece);
                } else {
                    rows.push(piece);
                }
            }
        }
    }
    rows
}
