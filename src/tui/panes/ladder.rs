//! `1` Ladder: the list in rank order; who can run each agent, who runs it,
//! and failovers away from it in the last hour by cause. With an edit
//! pending, old→new ranks and the projection below the rows; after a
//! write, the rollout's convergence line (`j` past the last agent).

use std::collections::HashMap;
use std::time::Instant;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::agents_doc::unknown_agents;
use crate::plan::Rung;
use crate::tui::ids::{LADDER, PaneId};
use crate::tui::keys::{self, Action, Hints};
use crate::tui::model::Model;
use crate::tui::model::away::{self, AwayNow};
use crate::tui::model::edit::Overtaken;
use crate::tui::model::fleet::AgentCounts;
use crate::tui::model::query::{Query, Searchable, contains_ci, starts_ci};
use crate::tui::pane::{Changes, Cx, Detail, Handled, List, ListNav, Pane, SortBy};
use crate::tui::ui::rollout::short_id;
use crate::tui::ui::theme::Theme;
use crate::tui::ui::{Col, Table, cell_style, col, empty, fill, fmt, hub, line};

/// How the Ladder orders agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LadderSort {
    /// The list's own order, rank 0 first.
    #[default]
    Rank,
    /// Most capable workers first.
    Capable,
    /// Most workers running it first.
    Active,
    /// Most failovers away in the last hour first.
    Away,
}

impl SortBy for LadderSort {
    const ALL: &'static [Self] = &[
        LadderSort::Rank,
        LadderSort::Capable,
        LadderSort::Active,
        LadderSort::Away,
    ];

    fn name(self) -> &'static str {
        match self {
            LadderSort::Rank => "rank",
            LadderSort::Capable => "capable",
            LadderSort::Active => "active",
            LadderSort::Away => "away",
        }
    }
}

/// Fields a Ladder filter can name.
pub const FIELDS: &[&str] = &["agent"];

/// An agent as the Ladder's filter sees it.
pub struct AgentRow<'a>(pub &'a str);

impl Searchable for AgentRow<'_> {
    fn shows(&self, needle: &str) -> bool {
        contains_ci(self.0, needle)
    }

    fn field_starts(&self, field: &str, value: &str) -> bool {
        field == "agent" && starts_ci(self.0, value)
    }
}

/// The Ladder: agents in the list's order, then agents workers run that
/// it lacks.
#[derive(Debug, Default)]
pub struct Ladder {
    pub list: List<Vec<String>, LadderSort>,
    /// AWAY NOW: live workers held off each agent, by cause.
    pub away_now: HashMap<String, AwayNow>,
    /// The per-agent counts (CAN, RUN, CANNOT) of the moment AWAY NOW was
    /// counted: the rows and the header's `can/run` show these while the
    /// Ladder is on screen, so one screen's counts come from one moment
    /// (issue 28: AWAY NOW lagged RUN by up to a second).
    pub counts: HashMap<String, AgentCounts>,
    /// When AWAY NOW was last counted, and whether a change since waits
    /// for the next count (at most one a second: ~27 ms at 100,000
    /// workers).
    away_at: Option<Instant>,
    away_stale: bool,
}

impl Ladder {
    fn rebuild(&mut self, m: &Model, visible: bool, mono: Instant) {
        let now = m.now();
        let l = &self.list;
        let q = Query::parse(&l.filter.text, FIELDS);
        let all = m.ladder_agents();
        let mut rows: Vec<String> = all
            .iter()
            .filter(|a| q.matches(&AgentRow(a)))
            .cloned()
            .collect();
        let emptied = (rows.is_empty() && !q.is_empty()).then(|| {
            q.empty_text("agent", &l.filter.text, |q| {
                all.iter().any(|a| q.matches(&AgentRow(a)))
            })
        });
        self.count_moment(m, visible, mono);
        let l = &self.list;
        let agent = |a: &str| self.agent(m, a);
        match l.sort {
            LadderSort::Rank => {}
            LadderSort::Capable => rows.sort_by_key(|a| std::cmp::Reverse(agent(a).capable)),
            LadderSort::Active => rows.sort_by_key(|a| std::cmp::Reverse(agent(a).active)),
            LadderSort::Away => {
                let away = m.log.away_last_hour(now);
                rows.sort_by_key(|a| {
                    std::cmp::Reverse(
                        away.get(a.as_str())
                            .map(|k| k.iter().sum::<u32>())
                            .unwrap_or(0),
                    )
                })
            }
        }
        if l.reverse {
            rows.reverse();
        }
        self.list.rows = rows;
        self.list.emptied = emptied;
    }

    /// AWAY NOW and the per-agent counts beside it, in one pass at one
    /// moment: only while the Ladder shows it, at most once a second (a
    /// tick counts what waited).
    fn count_moment(&mut self, m: &Model, visible: bool, mono: Instant) {
        if m.large.is_some() {
            // Large-fleet mode holds the rows on screen, not the fleet:
            // AWAY NOW is not counted over them (it would be a lie); the
            // counts are the summary's.
            self.away_now.clear();
            self.counts.clear();
            self.away_at = None;
            self.away_stale = false;
        } else if visible {
            let due = self
                .away_at
                .is_none_or(|t| mono.saturating_duration_since(t) >= away::EVERY);
            if due {
                self.away_now = away::away_now(&m.fleet, &m.log);
                self.counts = m.fleet.agg.agents.clone();
                self.away_at = Some(mono);
                self.away_stale = false;
            } else {
                self.away_stale = true;
            }
        }
    }

    /// The counts of `agent` as the Ladder shows them: those of the
    /// moment AWAY NOW was counted, else (never counted, large-fleet
    /// mode) the fleet's now.
    pub fn agent(&self, m: &Model, agent: &str) -> AgentCounts {
        match self.away_at {
            Some(_) => self.counts.get(agent).copied().unwrap_or_default(),
            None => m.fleet.agg.agent(agent),
        }
    }

    /// The counts the header's `can/run` shows while the Ladder is on
    /// screen (those of its moment), if it has counted one.
    pub fn moment(&self) -> Option<&HashMap<String, AgentCounts>> {
        self.away_at.map(|_| &self.counts)
    }
}

impl Ladder {
    /// `x`: the selected rung marked down in the drill, or cleared.
    /// Nothing is written, in any session.
    fn drill(&self, m: &mut Model, t: &Theme) -> Handled {
        let Some(Detail::Agent(agent)) = self.selected(m) else {
            return Handled::Yes;
        };
        Handled::Say(match m.toggle_drill(&agent) {
            Ok(true) => format!(
                "drill: {} down {} nothing is written {} x on it again clears it",
                hub(&agent),
                t.sep(),
                t.sep()
            ),
            Ok(false) if m.drill.is_empty() => "drill cleared".to_string(),
            Ok(false) => format!("drill: {} back up", hub(&agent)),
            Err(e) => hub(&e).into_owned(),
        })
    }
}

impl Pane for Ladder {
    fn id(&self) -> PaneId {
        LADDER
    }

    fn title(&self) -> &'static str {
        "Ladder"
    }

    fn list(&self) -> &dyn ListNav {
        &self.list
    }

    fn list_mut(&mut self) -> &mut dyn ListNav {
        &mut self.list
    }

    fn settle(&mut self, m: &Model, ch: &Changes, visible: bool, mono: Instant) -> bool {
        let own = self.list.take_mark();
        if !(own || ch.fleet() || ch.log || ch.agents) {
            return false;
        }
        self.rebuild(m, visible, mono);
        self.list.resync();
        true
    }

    fn shown(&mut self) {
        self.list.mark();
        self.away_at = None;
    }

    fn tick(&mut self) -> bool {
        if self.away_stale {
            self.list.mark();
        }
        self.away_stale
    }

    fn selected(&self, _m: &Model) -> Option<Detail> {
        self.list.selected().cloned().map(Detail::Agent)
    }

    fn select(&mut self, _m: &Model, d: &Detail) -> bool {
        let Detail::Agent(agent) = d else {
            return false;
        };
        match self.list.rows.iter().position(|r| r == agent) {
            Some(i) => {
                self.list.select(i);
                true
            }
            None => false,
        }
    }

    /// While a rollout is followed: `j` past the last agent puts the
    /// cursor on the convergence line, Enter there lists the workers
    /// behind.
    fn handle(&mut self, a: Action, m: &mut Model, detail: Option<&Detail>, t: &Theme) -> Handled {
        if detail.is_some() {
            // Over a detail the edit keys and the drill do nothing.
            return match a.is_edit() || a == Action::Drill {
                true => Handled::Yes,
                false => Handled::No,
            };
        }
        if a.is_edit() {
            return Handled::Edit(a, self.selected(m));
        }
        if a == Action::Drill {
            return self.drill(m, t);
        }
        let c = self.list.cursor();
        let staged = m.staged.shown(&m.config.history, m.now()).is_some();
        m.staged.selected &= staged;
        if m.staged.selected || (staged && a == Action::Down && c.pos + 1 >= c.len) {
            return staged_key(a, m);
        }
        let Some(r) = m.edit.rollout.as_mut() else {
            return Handled::No;
        };
        if r.selected {
            return match a {
                Action::Detail => Handled::Open(Detail::Rollout),
                // Up from the convergence line: the rollout line above it.
                Action::Up => {
                    r.selected = false;
                    m.staged.selected = staged;
                    Handled::Yes
                }
                Action::Down | Action::Bottom | Action::PageDown => Handled::Yes,
                a => {
                    if a.movement().is_some() {
                        r.selected = false;
                    }
                    Handled::No
                }
            };
        }
        if a == Action::Down && c.pos + 1 >= c.len {
            r.selected = true;
            return Handled::Yes;
        }
        Handled::No
    }

    fn hints(&self) -> Hints {
        Hints::Ladder
    }

    fn fields(&self) -> (&'static [&'static str], Option<&'static str>) {
        (FIELDS, None)
    }

    fn draw(&self, cx: &Cx, area: Rect, buf: &mut Buffer) {
        self.draw_ladder(cx, area, buf)
    }

    fn row_ids(&self, _m: &Model) -> Vec<String> {
        self.list.rows.clone()
    }
}

impl Ladder {
    fn draw_ladder(&self, cx: &Cx, area: Rect, buf: &mut Buffer) {
        let t = cx.theme;
        let rows_h = area.height.saturating_sub(1) as usize;
        let list = &self.list;
        let away = cx.model.log.away_last_hour(cx.now);
        let unknown = unknown_agents(&cx.model.ladder_agents());
        let pending = cx
            .model
            .edit
            .plan
            .as_ref()
            .filter(|p| p.is_pending())
            .map(|p| p.rungs());
        let rows = list
            .window(rows_h)
            .iter()
            .map(|a| {
                let c = self.agent(cx.model, a);
                let rank = rank_text(cx, a, pending.as_deref());
                let mut name = hub(a).into_owned();
                if unknown.contains(a) {
                    name.push('?');
                }
                let drilled = cx.model.drill.contains(a);
                if drilled {
                    name.push_str(" (down)");
                }
                let name_style = if drilled { t.bad() } else { Style::new() };
                let can_style = if c.capable == 0 && cx.model.fleet.agg.total > 0 {
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
                    Span::styled(name, cell_style(cx.theme, cx.stale, name_style)),
                    Span::styled(
                        fmt::count(c.capable),
                        cell_style(cx.theme, cx.stale, can_style),
                    ),
                    Span::raw(run_text(cx, a, c.active)),
                    Span::raw(format!(
                        "{}/{}/{}",
                        fmt::count(c.no_binary),
                        fmt::count(c.no_token),
                        fmt::count(c.preflight_failed)
                    )),
                    if cx.model.large.is_some() {
                        Span::styled("n/a (large fleet)", t.muted())
                    } else {
                        let now = self.away_now.get(a.as_str()).map_or(0, |n| n.total());
                        let style = if now > 0 { t.warn() } else { t.muted() };
                        Span::styled(
                            away_now_text(&self.away_now, t.sep(), a),
                            cell_style(cx.theme, cx.stale, style),
                        )
                    },
                    Span::styled(
                        fmt::away(t.sep(), &k),
                        cell_style(cx.theme, cx.stale, away_style),
                    ),
                ]
            })
            .collect();
        let used = list.window(rows_h).len();
        let on_rollout = cx.model.edit.rollout.as_ref().is_some_and(|r| r.selected);
        let selected = list.selected_row(rows_h).filter(|_| !on_rollout);
        let sorted = None;
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
        draw_projection(cx, area, buf, used);
        if list.is_empty() {
            let msg = list.emptied.as_deref().unwrap_or("no agents list yet");
            empty(cx.theme, area, buf, msg);
        }
    }
}

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
pub fn away_now_text(away_now: &HashMap<String, AwayNow>, sep: &str, agent: &str) -> String {
    let a = away_now.get(agent).copied().unwrap_or_default();
    let mut s = fmt::away(sep, &a.by_kind);
    if a.unrecorded > 0 {
        let known: u32 = a.by_kind.iter().sum();
        let detail = if known == 0 {
            String::new()
        } else {
            format!(" {} {}", sep, &s[s.find(": ").map_or(0, |i| i + 2)..])
        };
        s = format!("{}: no cause {}{}", a.total(), a.unrecorded, detail);
    }
    s
}

/// The rank column: `2` as the hub has it; with an edit pending, a
/// changed rung shows old and new (`2→0`, `-→4` added, `1→-` removed).
fn rank_text(cx: &Cx, agent: &str, pending: Option<&[Rung]>) -> String {
    let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| r.to_string());
    match pending.and_then(|p| p.iter().find(|r| r.agent == agent)) {
        Some(r) if r.changed() => format!("{}{}{}", rank(r.old), cx.theme.arrow(), rank(r.new)),
        Some(r) => rank(r.new),
        None => rank(cx.model.config.agents.iter().position(|x| x == agent)),
    }
}

/// The RUN column: workers on the agent now; with a drill shown, the
/// healthy ones on it now and with the drilled rungs down (`3→5`) when
/// they differ; else, with an edit pending, now and under the new order.
fn run_text(cx: &Cx, agent: &str, active: usize) -> String {
    let rung = cx
        .model
        .drill_projection
        .as_ref()
        .or(cx.model.edit.projection.as_ref())
        .and_then(|p| p.rungs.iter().find(|r| r.agent == agent));
    match rung {
        Some(r) if r.projected != r.today => format!(
            "{}{}{}",
            fmt::count(r.today),
            cx.theme.arrow(),
            fmt::count(r.projected)
        ),
        _ => fmt::count(active),
    }
}

/// Below the rows: after a write, the rollout's convergence line; with an
/// edit pending, the projection's summary and its warnings, as far as
/// there is room.
fn draw_projection(cx: &Cx, area: Rect, buf: &mut Buffer, used: usize) {
    let t = cx.theme;
    let mut used = used;
    if let Some((text, bad)) = headroom_text(cx) {
        let style = if bad { t.warn() } else { t.muted() };
        under_rows(
            cx,
            area,
            buf,
            used,
            Line::styled(text, cell_style(t, cx.stale, style)),
        );
        used += 1;
    }
    for (text, style) in drill_lines(cx) {
        under_rows(cx, area, buf, used, Line::styled(text, style));
        used += 1;
    }
    if let Some(l) = staged_line(cx, usize::from(area.width)) {
        under_rows(cx, area, buf, used, l);
        used += 1;
    }
    if let Some(l) = rollout_line(cx) {
        under_rows(cx, area, buf, used, l);
        used += 1;
    }
    for (i, l) in pending_lines(cx).into_iter().enumerate() {
        under_rows(cx, area, buf, used + i, l);
    }
}

/// Line `at` of those under the Ladder's rows (after its two top rows),
/// cut to the width; nothing past the bottom.
fn under_rows(cx: &Cx, area: Rect, buf: &mut Buffer, at: usize, l: Line<'static>) {
    let y = usize::from(area.y) + 2 + at;
    if y >= usize::from(area.y) + usize::from(area.height) {
        return;
    }
    let r = Rect {
        y: y as u16,
        height: 1,
        ..area
    };
    let t = cx.theme;
    line(
        r,
        buf,
        crate::tui::ui::fit_line(l, usize::from(area.width), t.ellipsis()),
    );
}

/// The hub's staged rollout while it bakes (and a halt while it stands,
/// a promotion or an abort for a while after it), from its own figures;
/// last known with its age when it cannot be asked.
fn staged_line(cx: &Cx, width: usize) -> Option<Line<'static>> {
    use crate::tui::ui::rollout::{Tone, line_text};
    let m = cx.model;
    let v = m.staged.shown(&m.config.history, m.now())?;
    let known = m.staged.last_known(m.mono_now, m.is_stale());
    let t = cx.theme;
    let (text, tone) = line_text(v, known, t.sep(), t.ellipsis(), width);
    let style = match tone {
        Tone::Halted => t.bad(),
        Tone::Baking => t.warn(),
        Tone::Promoted => t.ok(),
        Tone::Aborted => t.muted(),
    };
    let style = if known.is_some() && tone != Tone::Halted {
        t.greyed()
    } else {
        style
    };
    if m.staged.selected {
        // The cursor on it: Enter opens its detail (said when it fits).
        let hint = keys::hints(Hints::StagedLine, "");
        let (text, _) = line_text(
            v,
            known,
            t.sep(),
            t.ellipsis(),
            width.saturating_sub(hint.chars().count() + 3),
        );
        return Some(Line::styled(
            format!("{text} {} {hint}", t.sep()),
            t.selected(),
        ));
    }
    Some(Line::styled(text, style))
}

/// A key while the Ladder's rollout line is shown and the cursor is on it
/// (or `j` past the last agent puts it there): Enter opens its detail,
/// `j` goes on to the convergence line when there is one, `k` back to the
/// rows.
fn staged_key(a: Action, m: &mut Model) -> Handled {
    if !m.staged.selected {
        m.staged.selected = true;
        return Handled::Yes;
    }
    match a {
        Action::Detail => Handled::Open(Detail::Staged),
        Action::Up => {
            m.staged.selected = false;
            Handled::Yes
        }
        Action::Down => {
            if let Some(r) = m.edit.rollout.as_mut() {
                m.staged.selected = false;
                r.selected = true;
            }
            Handled::Yes
        }
        Action::Bottom | Action::PageDown => Handled::Yes,
        a => {
            if a.movement().is_some() {
                m.staged.selected = false;
            }
            Handled::No
        }
    }
}

/// After a write: how many healthy workers are on the revision written.
fn rollout_line(cx: &Cx) -> Option<Line<'static>> {
    let t = cx.theme;
    let r = cx.model.edit.rollout.as_ref()?;
    let mut text = format!(
        "{}/{} healthy {}workers on {} {} {} behind",
        fmt::count(r.on),
        fmt::count(r.healthy),
        if r.cohort { "cohort " } else { "" },
        hub(&r.revision),
        t.sep(),
        fmt::count(r.behind())
    );
    if r.cohort {
        // The rest are told the accepted list: not behind, not counted.
        let id = cx.model.staged.baking().map(|v| short_id(&v.id, t.ellipsis()));
        text.push_str(&match id {
            Some(id) => format!(" (rollout {id}: the rest keep the accepted list)"),
            None => " (a rollout: the rest keep the accepted list)".to_string(),
        });
    }
    if r.in_turn > 0 {
        text.push_str(&format!(
            ", {} in a turn: they switch at their next turn",
            fmt::count(r.in_turn)
        ));
    }
    let mut style = if r.behind() == 0 { t.ok() } else { t.warn() };
    let text = if r.selected {
        style = t.selected();
        format!("{text} {} {}", t.sep(), keys::hints(Hints::Convergence, ""))
    } else {
        text
    };
    Some(Line::styled(text, style))
}

/// While an order is pending: the last write's failure, a colleague's
/// write that overtook it, its projection and its warnings.
fn pending_lines(cx: &Cx) -> Vec<Line<'static>> {
    let t = cx.theme;
    let Some(p) = &cx.model.edit.projection else {
        return vec![];
    };
    let mut lines = Vec::new();
    if let Some(e) = &cx.model.edit.error {
        // A write whose answer was lost did not fail: its outcome is not
        // known until the hub is asked by its key.
        let text = if cx.model.edit.lost.is_some() {
            format!(
                "last write {}: asked again by its key when the hub answers (the edit is kept)",
                hub(e)
            )
        } else {
            format!("last write failed: {} (the edit is kept: w retries)", hub(e))
        };
        lines.push(Line::styled(text, t.bad()));
    }
    if let Some(o) = &cx.model.edit.overtaken {
        for l in overtaken_text(cx, o) {
            lines.push(Line::styled(l, t.warn()));
        }
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
    lines
}

/// Under the rows while a drill is shown: what it assumes and where the
/// healthy workers would land (the RUN column has it rung by rung):
/// `drill: opencode down · 31 of 40 healthy workers change rung · no route
/// 0→9`, then `nothing is written · x on a marked rung clears it`.
pub fn drill_lines(cx: &Cx) -> Vec<(String, Style)> {
    let t = cx.theme;
    let Some(p) = &cx.model.drill_projection else {
        return Vec::new();
    };
    let bad = p.no_route > p.no_route_today;
    vec![
        (
            format!(
                "drill: {} down {} {} of {} healthy workers change rung {} no route {}{}{}",
                hub(&cx.model.drill.join(", ")),
                t.sep(),
                fmt::count(p.change_rung),
                fmt::count(p.healthy),
                t.sep(),
                fmt::count(p.no_route_today),
                t.arrow(),
                fmt::count(p.no_route)
            ),
            cell_style(t, cx.stale, if bad { t.bad() } else { t.warn() }),
        ),
        (
            format!(
                "  a projection over the workers held now: nothing is written {} x on a marked rung clears it",
                t.sep()
            ),
            t.muted(),
        ),
    ]
}

/// Under the rows: how many healthy workers are one failure from no route
/// and on which rungs (`3 healthy workers one failure from no route: pi 2 ·
/// codex 1`), and whether that is news; `None` from a hub that does not
/// report headroom.
pub fn headroom_text(cx: &Cx) -> Option<(String, bool)> {
    let agg = &cx.model.fleet.agg;
    if agg.headroom_known == 0 {
        return None;
    }
    if agg.one_failure == 0 {
        return Some((
            "no healthy worker is one failure from no route".into(),
            false,
        ));
    }
    let by: Vec<String> = cx
        .model
        .ladder_agents()
        .iter()
        .map(|a| (a, agg.agent(a).last_rung))
        .filter(|(_, n)| *n > 0)
        .map(|(a, n)| format!("{} {}", hub(a), fmt::count(n)))
        .collect();
    let n = agg.one_failure;
    Some((
        format!(
            "{} healthy worker{} one failure from no route: {}",
            fmt::count(n),
            if n == 1 { "" } else { "s" },
            by.join(&format!(" {} ", cx.theme.sep()))
        ),
        true,
    ))
}

/// A colleague wrote while the edit was pending: who, when (from the
/// history, once it holds the revision), then whether they touched the
/// list and what `w` does now.
fn overtaken_text(cx: &Cx, o: &Overtaken) -> [String; 2] {
    let short = |r: &str| hub(&r.chars().take(12).collect::<String>()).into_owned();
    let (done, who) = match cx.model.config.written(&o.revision) {
        Some(h) => (
            fmt::written_by(h),
            format!(", {} ago,", fmt::age_at(cx.now, h.at)),
        ),
        None => ("written".to_string(), String::new()),
    };
    let what = if o.conflict.is_some() {
        format!(
            "  it changed agents your edit changed: the Ladder shows yours replayed onto {} (mine where both did), w shows theirs and yours to choose",
            short(&o.revision)
        )
    } else if o.merged {
        format!(
            "  it changed the list: your edit is replayed onto {}, both stand (w shows the diff onto it)",
            short(&o.revision)
        )
    } else {
        format!(
            "  it left the list alone: your order now stands on {} (w shows the diff onto it)",
            short(&o.revision)
        )
    };
    [
        format!(
            "! {} {done}{who} while this edit (begun on {}) was pending",
            short(&o.revision),
            short(&o.from)
        ),
        what,
    ]
}
