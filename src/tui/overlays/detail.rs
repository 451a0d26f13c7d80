//! `Enter`: the detail of a worker, a failover, an agent or a revision;
//! `v`: the worker, failover, recovery or revision as the hub's JSON.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Widget, Wrap};

use super::{Ask, Ctx, Frame, Overlay, Yield};
use crate::tui::keys::{self, Action, Hints};
use crate::tui::model::Model;
use crate::tui::model::compact::Sym;
use crate::tui::model::config::HistKey;
use crate::tui::model::fleet::Entry;
use crate::tui::pane::{Cx, Detail, Pane};
use crate::tui::ui::fmt;
use crate::tui::ui::{cell_style, diff_line, fit, hub};
use chrono::{DateTime, Utc};

use crate::wire::{Failover, HistoryEntry, MAX_AGENTS, Preflight};

/// The detail open over the pane (`Enter`), or its target as the hub's
/// JSON (`v`). `j`/`k` move the pane's cursor and the detail follows it
/// (on the rollout's list they scroll it); PgUp/PgDn/`g`/`G` scroll the
/// text; Esc closes it (from `v` opened on the list, back to the list).
#[derive(Debug, Default)]
pub struct DetailView {
    detail: Option<Detail>,
    scroll: usize,
    /// `v`: the detail's target as the hub's own JSON record.
    raw: bool,
    /// `v` opened the detail from the list: Esc goes back to the list.
    raw_from_list: bool,
}

impl DetailView {
    pub fn detail(&self) -> Option<&Detail> {
        self.detail.as_ref()
    }

    pub fn is_raw(&self) -> bool {
        self.raw
    }

    /// Open `d` (an [`Ask::Open`], `Enter`).
    pub fn open(&mut self, d: Option<Detail>) {
        self.detail = d;
        self.scroll = 0;
    }

    fn unraw(&mut self) {
        self.raw = false;
        self.scroll = 0;
        if std::mem::take(&mut self.raw_from_list) {
            self.detail = None;
        }
    }

    /// `v` on `target` (the detail open, else the selected row): a row of
    /// the pane's own has a record when the pane gives one.
    fn raw_of(&mut self, target: Option<Detail>, from_list: bool, cx: &mut Ctx) {
        let pane = &*cx.pane;
        let model = &*cx.model;
        match target {
            Some(
                d @ (Detail::Worker(_)
                | Detail::Failover(_)
                | Detail::Recovery(_)
                | Detail::Revision(_)
                | Detail::Staged),
            ) => self.raw_on(d, from_list),
            Some(d @ Detail::Row(..)) if pane.raw(model, &d).is_some() => self.raw_on(d, from_list),
            _ => cx.asks.push(Ask::Say(
                "v shows a worker, a failover, a recovery or a revision as the hub's JSON".into(),
            )),
        }
    }

    fn raw_on(&mut self, d: Detail, from_list: bool) {
        self.detail = Some(d);
        self.raw = true;
        self.raw_from_list = from_list;
        self.scroll = 0;
    }

    fn scroll_by(&mut self, a: Action, page: usize) {
        let s = self.scroll;
        self.scroll = match a {
            Action::Top => 0,
            Action::Bottom => usize::MAX / 2,
            Action::PageDown => s + page,
            Action::PageUp => s.saturating_sub(page),
            _ => s,
        };
    }
}

impl Overlay for DetailView {
    fn key(&mut self, _k: &crossterm::event::KeyEvent, a: Option<Action>, cx: &mut Ctx) -> bool {
        let (Some(a), Some(d)) = (a, self.detail.as_ref()) else {
            return false;
        };
        match a {
            // The rollout's list of workers behind: j/k scroll it.
            Action::Down if matches!(d, Detail::Rollout | Detail::Staged) => self.scroll += 1,
            Action::Up if matches!(d, Detail::Rollout | Detail::Staged) => {
                self.scroll = self.scroll.saturating_sub(1)
            }
            Action::Down | Action::Up => {
                if let Some(m) = a.movement() {
                    cx.pane.list_mut().nav(m, cx.rows);
                }
                let d = cx.pane.selected(cx.model);
                self.open(d);
            }
            a if a.movement().is_some() => self.scroll_by(a, cx.page),
            Action::Back if self.raw => self.unraw(),
            Action::Back => self.detail = None,
            Action::Raw if self.raw => self.unraw(),
            Action::Raw => {
                let d = self.detail.clone();
                self.raw_of(d, false, cx);
            }
            Action::Detail => {}
            _ => return false,
        }
        true
    }

    fn open_on(&mut self, a: Action, cx: &mut Ctx) -> bool {
        match a {
            Action::Detail => {
                let d = cx.pane.selected(cx.model);
                self.open(d);
            }
            Action::Raw => {
                let d = cx.pane.selected(cx.model);
                self.raw_of(d, true, cx);
            }
            _ => return false,
        }
        true
    }

    fn give_way(&mut self, why: Yield) {
        match why {
            Yield::Switch => {
                self.raw = false;
                self.raw_from_list = false;
                self.detail = None;
            }
            Yield::Filter | Yield::Land => self.detail = None,
            Yield::Question => {}
        }
    }

    fn shows(&self) -> Option<&Detail> {
        self.detail.as_ref()
    }

    fn holds_clicks(&self) -> bool {
        self.detail.is_some()
    }

    fn hints(&self, m: &Model) -> Option<Hints> {
        Some(match self.detail.as_ref()? {
            Detail::Rollout | Detail::Staged => Hints::Rollout,
            Detail::Revision(_) if m.can_write => Hints::RevisionDetail,
            _ => Hints::Detail,
        })
    }

    fn draw_body(&self, f: &Frame, area: Rect, buf: &mut Buffer) -> bool {
        let Some(d) = &self.detail else {
            return false;
        };
        draw(f.cx, f.pane, d, self.scroll, self.raw, area, buf);
        true
    }
}

/// Where a worker stands: `on claude (#2)`, `on x (not in its list)`,
/// `NO ROUTE`. Ranks are the worker's own list, rank 0 first.
pub fn why_head(e: &Entry) -> String {
    match (&e.view.active_agent, e.active_rank()) {
        (Some(a), Some(r)) => format!("on {} (#{r})", hub(a)),
        (Some(a), None) => format!("on {} (not in its list)", hub(a)),
        (None, _) => "NO ROUTE".to_string(),
    }
}

/// Every rung above the one the worker stands on (all of them with no
/// route) and what holds it off, from the failovers the TUI holds for it
/// (the log and its last failover) and its recoveries, as `get worker`
/// says it: each failover dated as the hub can tell (the earlier of its
/// `at` and the hub's receipt), and one the hub received long after its
/// time (the demo's back-filled hour) claims no more than the records
/// show (`since at least …`): see [`crate::text::held_off_watched`].
pub fn why_rungs(cx: &Cx, e: &Entry) -> Vec<crate::text::RungWhy> {
    let v = &e.view;
    let mut late = std::collections::HashSet::new();
    // Late only by a receipt the hub says (a hub that does not say bounds
    // the time by the view's, and proves nothing late).
    let mut seen = |f: Failover, received: DateTime<Utc>, said: bool| {
        if said && crate::wire::received_late(f.at, received) {
            late.insert(f.id.clone());
        }
        Failover {
            at: f.at.min(received),
            ..f
        }
    };
    let mut held: Vec<Failover> = cx
        .model
        .log
        .of_worker(&v.worker)
        .map(|r| seen(r.failover(), r.received_at, true))
        .collect();
    if let Some(last) = v.last_failover() {
        let received = v.last_failover_received_at();
        held.push(seen(
            last.clone(),
            received.unwrap_or(v.received_at),
            received.is_some(),
        ));
    }
    let failovers: Vec<&Failover> = held.iter().collect();
    // Its recoveries: a hold-off that came back after one began afresh.
    let back: Vec<crate::wire::RecoveryRecord> = cx
        .model
        .recs
        .records
        .iter()
        .filter(|r| *r.worker == *v.worker)
        .map(|r| r.record())
        .collect();
    let back: Vec<&crate::wire::RecoveryRecord> = back.iter().collect();
    crate::text::held_off_watched(
        cx.now,
        &v.agents,
        v.active_agent.as_deref(),
        |a| v.capabilities.get(a).copied(),
        &failovers,
        &back,
        |f| late.contains(&f.id),
    )
}

/// Why a worker stands on its rung, on one line, e.g.
/// `on claude (#2): opencode rate_limited 429 (hub_router) since 15:01:05
/// (3m ago), 1 in the last hour; pi missing binary, no failover recorded`.
pub fn why(cx: &Cx, e: &Entry) -> String {
    let head = why_head(e);
    let rungs = why_rungs(cx, e);
    if rungs.is_empty() {
        if e.view.active_agent.is_some() {
            format!("{head}: the top of its list")
        } else {
            format!("{head}: its list is empty")
        }
    } else {
        let reasons: Vec<String> = rungs
            .iter()
            .map(|r| format!("{} {}", hub(&r.agent), hub(&r.text)))
            .collect();
        format!("{head}: {}", reasons.join("; "))
    }
}

/// The heartbeat's age against the hub's thresholds (3 and 10 heartbeat
/// intervals, the interval the hub announces): `stale in 0:22` while
/// healthy, `stale since 08:24:10 · lost in 1:10` while stale, `lost since
/// 08:25:20`. "Since" is when the hub's rule turned; its sweeper decides
/// within about a second. A threshold passed that the hub has not acted on
/// yet reads `stale due now`.
pub fn threshold_text(cx: &Cx, e: &Entry) -> String {
    use crate::wire::WorkerState;
    let interval = chrono::TimeDelta::seconds(cx.model.fleet.interval_s.max(1) as i64);
    let received = e.view.received_at;
    let stale_at = received + interval * WorkerState::STALE_AFTER as i32;
    let lost_at = received + interval * WorkerState::LOST_AFTER as i32;
    let now = cx.now;
    let left = |at: chrono::DateTime<chrono::Utc>| {
        let s = (at - now).num_seconds().max(0);
        format!("{}:{:02}", s / 60, s % 60)
    };
    match e.state {
        WorkerState::Healthy if now < stale_at => format!("stale in {}", left(stale_at)),
        WorkerState::Healthy => "stale due now".to_string(),
        WorkerState::Stale if now < lost_at => format!(
            "stale since {} {} lost in {}",
            fmt::clock(stale_at),
            cx.theme.sep(),
            left(lost_at)
        ),
        WorkerState::Stale => format!("stale since {}, lost due now", fmt::clock(stale_at)),
        WorkerState::Lost => format!("lost since {}", fmt::clock(lost_at)),
    }
}

/// `back on opencode since 07:10:12, after 14m on pi` (`… with no route`
/// when it had none).
pub fn back_on_text(r: &crate::tui::model::reclog::RecRec) -> String {
    let held = fmt::held(r.held_off_s);
    let was = match &r.from {
        Some(f) => format!("on {}", hub(f)),
        None => "with no route".to_string(),
    };
    format!(
        "back on {} since {}, after {held} {was}",
        hub(&r.to),
        fmt::clock(r.at)
    )
}

fn kv(cx: &Cx, k: &str, v: impl Into<String>) -> Line<'static> {
    Line::from(vec![label(cx, k), Span::raw(v.into())])
}

/// A worker's detail; `highlight` marks one of its failovers (by id) in
/// its recent failovers, shown even when older than the ten newest.
fn worker_lines(cx: &Cx, id: &str, highlight: Option<&str>) -> Vec<Line<'static>> {
    let Some(e) = cx.model.fleet.by_id(id) else {
        return vec![Line::raw(format!(
            "worker {} is no longer reported",
            hub(id)
        ))];
    };
    let mut out = worker_head(cx, e);
    worker_notes(cx, e, &mut out);
    why_lines(cx, e, &mut out);
    capability_lines(cx, e, &mut out);
    recent_failover_lines(cx, e, highlight, &mut out);
    out
}

/// A label in the detail's key column, muted.
fn label(cx: &Cx, k: &str) -> Span<'static> {
    Span::styled(format!("{k:<12}"), cx.theme.muted())
}

/// Who it is, its state and heartbeat, its revision, its list.
fn worker_head(cx: &Cx, e: &Entry) -> Vec<Line<'static>> {
    let t = cx.theme;
    let v = &e.view;
    vec![
        kv(cx, "worker", hub(&v.worker).into_owned()),
        kv(cx, "host", hub(&v.host).into_owned()),
        Line::from(vec![
            label(cx, "state"),
            Span::styled(
                e.state.as_str(),
                cell_style(cx.theme, cx.stale, t.state(e.state)),
            ),
            // Heartbeating, and yet nothing to run: said beside the word.
            Span::styled(
                if e.no_route() { " but no route" } else { "" },
                cell_style(cx.theme, cx.stale, t.no_route()),
            ),
            Span::raw(format!(
                ", heartbeat {} ago (hub clock) {} {}, sent {}",
                fmt::age_at(cx.now, v.received_at),
                t.sep(),
                threshold_text(cx, e),
                fmt::clock(v.sent_at)
            )),
        ]),
        kv(
            cx,
            "revision",
            format!(
                "{} ({})",
                hub(v.config_revision.as_deref().unwrap_or("-")),
                revision_note(cx, e)
            ),
        ),
        kv(cx, "its list", hub(&fmt::list(&v.agents)).into_owned()),
    ]
}

/// Beside its revision: `in sync`; `out of sync: on the fleet's revision
/// with another list: cursor, claude` (what it reports, as `get worker`
/// says it); `fleet is on 4c2e…`.
fn revision_note(cx: &Cx, e: &Entry) -> String {
    let fleet = &cx.model.fleet.revision;
    if e.in_sync {
        "in sync".to_string()
    } else if crate::tui::model::fleet::other_list(e, fleet) {
        format!(
            "out of sync: on the fleet's revision with another list: {}",
            hub(&e.view.agents.join(", "))
        )
    } else {
        format!("fleet is on {}", hub(fleet))
    }
}

/// The lines only some workers have: its pool, a skewed clock, its
/// headroom while it runs something, a recovery.
fn worker_notes(cx: &Cx, e: &Entry, out: &mut Vec<Line<'static>>) {
    let t = cx.theme;
    let v = &e.view;
    if let Some(p) = &v.pool {
        out.push(kv(cx, "pool", hub(p).into_owned()));
    }
    if let Some(c) = v.clock_skew_s.and_then(crate::text::clock_skew) {
        out.push(Line::from(vec![
            label(cx, "clock"),
            Span::styled(c, cell_style(cx.theme, cx.stale, t.warn())),
        ]));
    }
    // The words of `get worker`'s HEADROOM: which rungs are held off by a
    // recent failover, which it cannot run.
    if let Some(text) = crate::text::headroom_text(cx.now, &e.to_wire()) {
        let style = if v.headroom == Some(0) {
            t.warn()
        } else {
            Style::new()
        };
        out.push(Line::from(vec![
            label(cx, "headroom"),
            Span::styled(hub(&text).into_owned(), cell_style(cx.theme, cx.stale, style)),
        ]));
    }
    if let Some(r) = cx.model.back_on(&v.worker) {
        out.push(Line::from(vec![
            label(cx, "recovered"),
            Span::styled(back_on_text(r), cell_style(cx.theme, cx.stale, t.ok())),
        ]));
    }
}

/// Why: where it stands, then every rung above it and what holds it off.
fn why_lines(cx: &Cx, e: &Entry, out: &mut Vec<Line<'static>>) {
    let t = cx.theme;
    let rungs = why_rungs(cx, e);
    let head_style = if e.no_route() {
        cell_style(cx.theme, cx.stale, t.no_route())
    } else {
        Style::new()
    };
    let head = match (rungs.is_empty(), e.view.active_agent.is_some()) {
        (false, true) => format!("{}, held off the rungs above:", why_head(e)),
        (false, false) => format!("{}, held off every rung:", why_head(e)),
        (true, true) => format!("{}: the top of its list", why_head(e)),
        (true, false) => format!("{}: its list is empty", why_head(e)),
    };
    out.push(Line::from(vec![
        label(cx, "why"),
        Span::styled(head, head_style),
    ]));
    for r in &rungs {
        let style = if r.contradiction {
            cell_style(cx.theme, cx.stale, t.bad())
        } else {
            Style::new()
        };
        out.push(Line::from(vec![
            Span::raw(format!("  #{:<2} {:<10} ", r.rank, hub(&r.agent))),
            Span::styled(hub(&r.text).into_owned(), style),
        ]));
    }
}

/// The capabilities table: every agent of its list, then those it
/// reports beyond it.
fn capability_lines(cx: &Cx, e: &Entry, out: &mut Vec<Line<'static>>) {
    let t = cx.theme;
    let v = &e.view;
    out.extend([
        Line::raw(""),
        Line::styled("capabilities", t.title()),
        Line::styled(
            format!(
                "  {:<3} {:<14} {:<7} {:<6} {:<10} {:<8} {}",
                "#", "agent", "binary", "token", "preflight", "capable", "active"
            ),
            t.column_header(),
        ),
    ]);
    let mut names: Vec<&Sym> = v.agents.iter().collect();
    for a in v.capabilities.keys() {
        if !names.contains(&a) {
            names.push(a);
        }
    }
    let mark = |b: bool| if b { t.yes() } else { t.no() };
    for (i, a) in names.iter().enumerate() {
        let rank = if i < v.agents.len() {
            i.to_string()
        } else {
            "-".into()
        };
        let active = v.active_agent.as_deref() == Some(&***a);
        let (bin, tok, pf, cap) = match v.capabilities.get(a) {
            Some(c) => (
                mark(c.binary),
                mark(c.token),
                match c.preflight {
                    Preflight::Ok => "ok",
                    Preflight::Failed => "failed",
                    Preflight::Unknown => "unknown",
                },
                c.capable(),
            ),
            None => ("?", "?", "?", false),
        };
        let style = if cap {
            Style::new()
        } else {
            cell_style(cx.theme, cx.stale, t.bad())
        };
        out.push(Line::styled(
            format!(
                "  {:<3} {:<14} {:<7} {:<6} {:<10} {:<8} {}",
                rank,
                hub(a),
                bin,
                tok,
                pf,
                mark(cap),
                if active { "<- active" } else { "" }
            ),
            style,
        ));
    }
}

/// Its ten newest failovers, the highlighted one (even when older), and
/// the last the hub holds of it; each once.
fn recent_failover_lines(
    cx: &Cx,
    e: &Entry,
    highlight: Option<&str>,
    out: &mut Vec<Line<'static>>,
) {
    let t = cx.theme;
    let v = &e.view;
    out.push(Line::raw(""));
    out.push(Line::styled("recent failovers", t.title()));
    let mut any = false;
    let mut shown = std::collections::HashSet::new();
    let mut line = |f: &Failover, seen: DateTime<Utc>| {
        if !shown.insert(f.id.clone()) {
            return;
        }
        any = true;
        if highlight == Some(f.id.as_str()) {
            out.push(Line::styled(
                format!(
                    "{} {}",
                    if t.ascii { ">" } else { "▶" },
                    failover_line(cx, f, seen)
                ),
                t.selected(),
            ));
        } else {
            out.push(Line::raw(format!("  {}", failover_line(cx, f, seen))));
        }
    };
    let mut newest = cx.model.log.of_worker(&v.worker);
    for r in newest.by_ref().take(10) {
        line(&r.failover(), r.at.min(r.received_at));
    }
    if let Some(h) = highlight {
        if let Some(r) = newest.find(|r| &*r.id == h) {
            line(&r.failover(), r.at.min(r.received_at));
        }
    }
    if let (Some(f), Some(seen)) = (v.last_failover(), v.last_failover_at()) {
        line(f, seen);
    }
    if !any {
        out.push(Line::styled("  none", t.muted()));
    }
}

/// One failover of the detail, aged from `seen` (the earlier of its `at`
/// and the hub's receipt; the failover's own detail shows both).
fn failover_line(cx: &Cx, f: &Failover, seen: DateTime<Utc>) -> String {
    let mut s = format!(
        "{:>4} {}{}{} {}",
        fmt::age_at(cx.now, seen),
        hub(&f.from),
        cx.theme.arrow(),
        f.to.as_deref().map(hub).unwrap_or("(none)".into()),
        f.cause.kind
    );
    if let Some(st) = f.cause.status {
        s.push_str(&format!(" {st}"));
    }
    s.push_str(&format!(" ({})", f.cause.source.as_str()));
    if let Some(d) = &f.cause.detail {
        s.push_str(&format!(" \"{}\"", hub(d)));
    }
    s
}

fn failover_lines(cx: &Cx, seq: u64) -> Vec<Line<'static>> {
    let Some(r) = cx.model.log.get(seq) else {
        return vec![Line::raw(format!("failover {seq} is no longer held"))];
    };
    let f = &r.failover();
    let c = &f.cause;
    let t = cx.theme;
    let now = cx.now;
    vec![
        kv(cx, "seq", r.seq.to_string()),
        kv(cx, "id", hub(&f.id).into_owned()),
        kv(
            cx,
            "worker",
            format!("{} on {}", hub(&r.worker), hub(&r.host)),
        ),
        kv(
            cx,
            "at",
            format!(
                "{} ({} ago, worker clock)",
                fmt::stamp_s(f.at),
                fmt::age_at(now, f.at)
            ),
        ),
        kv(
            cx,
            "received",
            format!(
                "{} ({} ago, hub clock)",
                fmt::stamp_s(r.received_at),
                fmt::age_at(now, r.received_at)
            ),
        ),
        kv(cx, "from", hub(&f.from).into_owned()),
        Line::from(vec![
            Span::styled(format!("{:<12}", "to"), t.muted()),
            match &f.to {
                Some(to) => Span::raw(hub(to).into_owned()),
                None => Span::styled(
                    "(none): no route, the worker failed closed",
                    cell_style(cx.theme, cx.stale, t.no_route()),
                ),
            },
        ]),
        Line::raw(""),
        Line::styled("cause", t.title()),
        kv(cx, "  kind", c.kind.as_str()),
        kv(
            cx,
            "  status",
            c.status
                .map(|s| s.to_string())
                .unwrap_or_else(|| "-".into()),
        ),
        kv(cx, "  source", c.source.as_str()),
        kv(
            cx,
            "  detail",
            hub(c.detail.as_deref().unwrap_or("-")).into_owned(),
        ),
    ]
}

fn agent_lines(cx: &Cx, agent: &str) -> Vec<Line<'static>> {
    let c = cx.model.fleet.agg.agent(agent);
    let rank = cx
        .model
        .config
        .agents
        .iter()
        .position(|a| a == agent)
        .map(|r| format!("#{r}"))
        .unwrap_or_else(|| "not in the list".into());
    let away = cx.model.log.away_last_hour(cx.now);
    let k = away.get(agent).copied().unwrap_or_default();
    vec![
        kv(cx, "agent", hub(agent).into_owned()),
        kv(cx, "rank", rank),
        kv(
            cx,
            "can run",
            format!("{} live workers", fmt::count(c.capable)),
        ),
        kv(
            cx,
            "runs now",
            format!("{} live workers", fmt::count(c.active)),
        ),
        kv(cx, "no binary", fmt::count(c.no_binary)),
        kv(cx, "no token", fmt::count(c.no_token)),
        kv(
            cx,
            "preflight",
            format!("{} failed", fmt::count(c.preflight_failed)),
        ),
        kv(cx, "away (1h)", fmt::away(cx.theme.sep(), &k)),
    ]
}

fn revision_lines(cx: &Cx, k: &HistKey) -> Vec<Line<'static>> {
    let Some(h) = cx.model.history_entry(k) else {
        return vec![Line::raw(format!(
            "revision {} is no longer held",
            hub(&k.revision)
        ))];
    };
    let added: Vec<&String> = h
        .agents
        .iter()
        .filter(|a| !h.previous_agents.contains(a))
        .collect();
    let removed: Vec<&String> = h
        .previous_agents
        .iter()
        .filter(|a| !h.agents.contains(a))
        .collect();
    let mut out = vec![
        kv(cx, "revision", hub(&h.revision).into_owned()),
        kv(
            cx,
            "at",
            format!("{} ({} ago)", fmt::stamp(h.at), fmt::age_at(cx.now, h.at)),
        ),
        kv(cx, "by", crate::tui::ui::fmt::by_word(&h.by)),
        kv(
            cx,
            "client",
            h.client
                .as_deref()
                .map_or("not recorded".into(), hub)
                .into_owned(),
        ),
        kv(
            cx,
            "before",
            hub(&fmt::list(&h.previous_agents)).into_owned(),
        ),
        kv(cx, "after", hub(&fmt::list(&h.agents)).into_owned()),
    ];
    if !added.is_empty() {
        out.push(kv(
            cx,
            "added",
            added
                .iter()
                .map(|a| hub(a).into_owned())
                .collect::<Vec<_>>()
                .join(","),
        ));
    }
    if !removed.is_empty() {
        out.push(kv(
            cx,
            "removed",
            removed
                .iter()
                .map(|a| hub(a).into_owned())
                .collect::<Vec<_>>()
                .join(","),
        ));
    }
    out.extend(diff_lines(cx, h));
    out
}

/// A recovery in full: where the worker came back from and to, when the
/// hub saw it, and how long it had been held off.
fn recovery_lines(cx: &Cx, r: &crate::tui::model::reclog::RecRec) -> Vec<Line<'static>> {
    vec![
        kv(cx, "seq", r.seq.to_string()),
        kv(
            cx,
            "worker",
            format!("{} on {}", hub(&r.worker), hub(&r.host)),
        ),
        kv(
            cx,
            "at",
            format!(
                "{} ({} ago, hub clock: the heartbeat that showed the move)",
                fmt::stamp_s(r.at),
                fmt::age_at(cx.now, r.at)
            ),
        ),
        kv(
            cx,
            "from",
            r.from
                .as_deref()
                .map_or("no route".to_string(), |f| hub(f).into_owned()),
        ),
        kv(cx, "to", hub(&r.to).into_owned()),
        kv(
            cx,
            "held off",
            format!(
                "{} ({} s: since its failover away from {}, or since the hub saw it below)",
                fmt::held(r.held_off_s),
                r.held_off_s,
                hub(&r.to)
            ),
        ),
    ]
}

/// The detail `d`: the pane's own when it draws it ([`Pane::detail`]),
/// else one the panes share.
pub fn lines_of(cx: &Cx, pane: &dyn Pane, d: &Detail) -> (String, Vec<Line<'static>>) {
    match pane.detail(cx, d) {
        Some(t) => (t.title, t.lines),
        None => lines(cx, d),
    }
}

/// A detail the panes share (a worker, a failover, a recovery, an agent,
/// a revision, the rollout).
pub fn lines(cx: &Cx, d: &Detail) -> (String, Vec<Line<'static>>) {
    match d {
        Detail::Worker(id) => (format!("worker {}", hub(id)), worker_lines(cx, id, None)),
        Detail::Failover(seq) => {
            // The failover in full, then its worker's detail with this
            // failover highlighted among its recent ones.
            let mut lines = failover_lines(cx, *seq);
            let title = match cx.model.log.get(*seq) {
                Some(r) => {
                    lines.push(Line::raw(""));
                    lines.push(Line::styled(
                        format!("its worker {} (f: its failovers)", hub(&r.worker)),
                        cx.theme.title(),
                    ));
                    lines.extend(worker_lines(cx, &r.worker, Some(&r.id)));
                    format!(
                        "failover {seq} {} worker {}",
                        cx.theme.sep(),
                        hub(&r.worker)
                    )
                }
                None => format!("failover {seq}"),
            };
            (title, lines)
        }
        Detail::Recovery(seq) => {
            // The recovery, then its worker's detail.
            let Some(r) = cx.model.recs.get(*seq) else {
                return (
                    format!("recovery {seq}"),
                    vec![Line::raw(format!("recovery {seq} is no longer held"))],
                );
            };
            let mut lines = recovery_lines(cx, r);
            lines.push(Line::raw(""));
            lines.push(Line::styled(
                format!("its worker {} (f: its failovers)", hub(&r.worker)),
                cx.theme.title(),
            ));
            lines.extend(worker_lines(cx, &r.worker, None));
            (
                format!(
                    "recovery {seq} {} worker {}",
                    cx.theme.sep(),
                    hub(&r.worker)
                ),
                lines,
            )
        }
        Detail::Agent(a) => (format!("agent {}", hub(a)), agent_lines(cx, a)),
        Detail::Revision(k) => (
            format!("revision {}", hub(&k.revision)),
            revision_lines(cx, k),
        ),
        Detail::Rollout => super::edit::rollout_title_and_lines(cx),
        Detail::Staged => crate::tui::ui::rollout::detail(
            cx.theme,
            cx.model.staged.view.as_ref(),
            cx.model.staged.last_known(cx.model.mono_now, cx.model.is_stale()),
        ),
        // The pane that showed it is gone from under it.
        Detail::Row(_, key) => (
            hub(key).into_owned(),
            vec![Line::raw(format!("{} is no longer held", hub(key)))],
        ),
    }
}

/// `v`: the record as the hub sent it, pretty JSON, one string a line,
/// each scrubbed and made safe for the terminal. `None` when the TUI no
/// longer holds it (or it has no record of the hub's own: an agent).
pub fn raw_lines(cx: &Cx, d: &Detail) -> Option<Vec<String>> {
    let json = match d {
        Detail::Worker(id) => serde_json::to_string_pretty(&cx.model.fleet.by_id(id)?.to_wire()),
        Detail::Failover(seq) => serde_json::to_string_pretty(&cx.model.log.get(*seq)?.record()),
        Detail::Recovery(seq) => serde_json::to_string_pretty(&cx.model.recs.get(*seq)?.record()),
        Detail::Revision(k) => serde_json::to_string_pretty(cx.model.history_entry(k)?),
        Detail::Staged => serde_json::to_string_pretty(cx.model.staged.view.as_ref()?),
        // The rollout is the TUI's own list, not a record of the hub's; a
        // pane's own row has the record its pane gives (`raw_lines_of`).
        Detail::Agent(_) | Detail::Rollout | Detail::Row(..) => return None,
    }
    .ok()?;
    Some(json.lines().map(|l| hub(l).into_owned()).collect())
}

/// `v` on `d`: the pane's own record of it when it gives one, else
/// [`raw_lines`].
pub fn raw_lines_of(cx: &Cx, pane: &dyn Pane, d: &Detail) -> Option<Vec<String>> {
    match pane.raw(cx.model, d) {
        Some(json) => Some(json.lines().map(|l| hub(l).into_owned()).collect()),
        None => raw_lines(cx, d),
    }
}

/// A detail's bordered box, drawn: what is inside it, the first of `len`
/// lines shown there (the scroll, kept inside the text), and the text's
/// style (greyed while the data is stale).
fn boxed(
    cx: &Cx,
    area: Rect,
    buf: &mut Buffer,
    title: String,
    bottom: Hints,
    scroll: usize,
    len: usize,
) -> (Rect, usize, Style) {
    let bottom = format!(" {} ", keys::hints(bottom, " "));
    let t = cx.theme;
    let block = Block::default()
        .borders(Borders::ALL)
        .border_set(t.border())
        .title(Span::styled(title, t.title()))
        .title_bottom(Span::styled(bottom, t.muted()));
    let inner = block.inner(area);
    block.render(area, buf);
    let scroll = scroll.min(len.saturating_sub(inner.height as usize));
    let style = if cx.stale { t.greyed() } else { Style::new() };
    (inner, scroll, style)
}

fn draw_raw(cx: &Cx, pane: &dyn Pane, d: &Detail, scroll: usize, area: Rect, buf: &mut Buffer) {
    let t = cx.theme;
    let what = match d {
        Detail::Worker(id) => format!("worker {}", hub(id)),
        Detail::Failover(seq) => format!("failover {seq}"),
        Detail::Recovery(seq) => format!("recovery {seq}"),
        Detail::Revision(k) => format!("revision {}", hub(&k.revision)),
        Detail::Agent(a) => format!("agent {}", hub(a)),
        Detail::Rollout => "rollout".to_string(),
        Detail::Staged => "the staged rollout".to_string(),
        Detail::Row(_, key) => hub(key).into_owned(),
    };
    let lines =
        raw_lines_of(cx, pane, d).unwrap_or_else(|| vec![format!("{what} is no longer held")]);
    let title = format!(" {what} {} the hub's JSON, scrubbed ", t.sep());
    let (inner, scroll, style) = boxed(cx, area, buf, title, Hints::RawBox, scroll, lines.len());
    // Only the visible lines are cut and drawn (no wrapping: JSON keeps its shape).
    for (i, l) in lines
        .iter()
        .skip(scroll)
        .take(inner.height as usize)
        .enumerate()
    {
        let r = Rect {
            y: inner.y + i as u16,
            height: 1,
            ..inner
        };
        Line::styled(fit(l, inner.width as usize, t.ellipsis()), style).render(r, buf);
    }
}

/// The detail `d` (`raw`: as the hub's JSON), its text scrolled by
/// `scroll` lines.
pub fn draw(
    cx: &Cx,
    pane: &dyn Pane,
    d: &Detail,
    scroll: usize,
    raw: bool,
    area: Rect,
    buf: &mut Buffer,
) {
    if raw {
        return draw_raw(cx, pane, d, scroll, area, buf);
    }
    let (title, lines) = lines_of(cx, pane, d);
    let title = format!(" {title} ");
    let (inner, scroll, style) = boxed(cx, area, buf, title, Hints::DetailBox, scroll, lines.len());
    // Detail texts are short (tens of lines), so wrapping them all is cheap.
    Paragraph::new(lines)
        .style(style)
        .wrap(Wrap { trim: false })
        .scroll((scroll.min(u16::MAX as usize) as u16, 0))
        .render(inner, buf);
}

/// The list as the document writes it, one agent a line.
fn list_text(agents: &[String]) -> String {
    let mut s = String::from("MAC_CODING_AGENTS = [\n");
    for a in agents {
        s.push_str(&format!("    {a:?},\n"));
    }
    s.push_str("]\n");
    s
}

/// A revision's change as a unified diff of its list against the one
/// before it (the hub's history keeps each revision's list, not its whole
/// document). For the detail of a History entry.
pub fn diff_lines(cx: &Cx, h: &HistoryEntry) -> Vec<Line<'static>> {
    let t = cx.theme;
    let hist = &cx.model.config.history;
    // Newest first: the entry before this one in time is the next one.
    let before = hist
        .iter()
        .position(|x| x.revision == h.revision && x.at == h.at)
        .and_then(|i| hist.get(i + 1))
        .map(|p| hub(&p.revision).into_owned());
    let old = if h.previous_agents.is_empty() {
        String::new()
    } else {
        list_text(&h.previous_agents)
    };
    // The whole list as context: it is short (at most MAX_AGENTS lines).
    let diff = similar::TextDiff::from_lines(&old, &list_text(&h.agents))
        .unified_diff()
        .context_radius(MAX_AGENTS + 2)
        .header(
            &before.unwrap_or_else(|| "before".into()),
            &hub(&h.revision),
        )
        .to_string();
    let mut out = vec![
        Line::raw(""),
        Line::styled(
            "diff of the list (the history keeps lists, not whole documents):",
            t.muted(),
        ),
    ];
    if diff.is_empty() {
        out.push(Line::raw(
            "the list did not change (another key or a comment did)",
        ));
    }
    out.extend(diff.lines().map(|l| diff_line(t, &hub(l))));
    out
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use ratatui::buffer::Buffer;
    use ratatui::layout::Rect;
    use ratatui::text::Line;

    use super::{Ctx, DetailView, Frame, Overlay};
    use crate::tui::keys::Action;
    use crate::tui::model::{Changes, Model};
    use crate::tui::pane::{Cx, Detail, DetailText, List, ListNav, Pane, PaneId, SortBy};
    use crate::tui::ui::theme::Theme;

    const HOSTS: PaneId = PaneId::new("hosts");

    #[derive(Debug, Clone, Copy, PartialEq, Default)]
    struct ByName;
    impl SortBy for ByName {
        const ALL: &'static [Self] = &[ByName];
        fn name(self) -> &'static str {
            "name"
        }
    }

    /// A view of its own, with its own detail: nothing else of the TUI
    /// knows its rows.
    struct Hosts(List<Vec<String>, ByName>);
    impl Pane for Hosts {
        fn id(&self) -> PaneId {
            HOSTS
        }
        fn title(&self) -> &'static str {
            "Hosts"
        }
        fn list(&self) -> &dyn ListNav {
            &self.0
        }
        fn list_mut(&mut self) -> &mut dyn ListNav {
            &mut self.0
        }
        fn settle(&mut self, _m: &Model, _ch: &Changes, _v: bool, _mono: Instant) -> bool {
            false
        }
        fn selected(&self, _m: &Model) -> Option<Detail> {
            let k = self.0.selected()?;
            Some(Detail::Row(HOSTS, k.clone()))
        }
        fn detail(&self, _cx: &Cx, d: &Detail) -> Option<DetailText> {
            let Detail::Row(HOSTS, k) = d else {
                return None;
            };
            Some(DetailText {
                title: format!("host {k}"),
                lines: vec![Line::raw(format!("{k} runs 3 workers"))],
            })
        }
        fn raw(&self, _m: &Model, d: &Detail) -> Option<String> {
            let Detail::Row(HOSTS, k) = d else {
                return None;
            };
            Some(format!("{{\n  \"host\": \"{k}\"\n}}"))
        }
        fn draw(&self, _cx: &Cx, _area: Rect, _buf: &mut Buffer) {}
        fn row_ids(&self, _m: &Model) -> Vec<String> {
            self.0.rows.clone()
        }
    }

    fn text(buf: &Buffer) -> String {
        let a = buf.area;
        (a.top()..a.bottom())
            .map(|y| {
                (a.left()..a.right())
                    .map(|x| buf[(x, y)].symbol())
                    .collect::<String>()
                    + "\n"
            })
            .collect()
    }

    /// `Enter` and `v` on a row of a pane's own open the detail and the
    /// record that pane gives, drawn by the detail overlay.
    #[test]
    fn a_pane_draws_the_detail_of_its_own_rows() {
        let mut model = Model::new("hub".into(), false, Instant::now());
        let mut pane = Hosts(List::default());
        pane.0.rows = vec!["mac-a".into(), "mac-b".into()];
        pane.0.resync();
        let theme = Theme::new(true, true);
        let mut view = DetailView::default();
        let draw = |view: &DetailView, model: &Model, pane: &Hosts| {
            let cx = Cx::new(model, &theme);
            let f = Frame {
                cx: &cx,
                pane,
                names: &["hosts"],
                titles: &["Hosts"],
                first: "hosts",
            };
            let area = Rect::new(0, 0, 40, 6);
            let mut buf = Buffer::empty(area);
            assert!(view.draw_body(&f, area, &mut buf));
            text(&buf)
        };
        for (a, want) in [
            (Action::Detail, "mac-a runs 3 workers"),
            (Action::Raw, "\"host\": \"mac-a\""),
        ] {
            let (mut fx, mut asks) = (vec![], vec![]);
            let mut cx = Ctx {
                model: &mut model,
                pane: &mut pane,
                names: &["hosts"],
                first: "hosts",
                rows: 10,
                page: 5,
                fx: &mut fx,
                asks: &mut asks,
            };
            assert!(view.open_on(a, &mut cx));
            assert_eq!(asks, vec![], "{a:?}");
            assert_eq!(view.detail(), Some(&Detail::Row(HOSTS, "mac-a".into())));
            let screen = draw(&view, &model, &pane);
            assert!(screen.contains(want), "{a:?}:\n{screen}");
            view.give_way(super::Yield::Switch);
        }
    }
}
