//! The owner's staged rollout keys (issue 33), for the edit overlay: `C`
//! on the diff asks the cohort's size and the bake (the hub's defaults,
//! 10% and 10m, filled in) and sends the reviewed document to a cohort
//! first; `P` and `A` ask, then promote or abort the rollout baking. What
//! the hub answers is applied here. Everything goes through the one
//! `Writer` the runner holds ([`Effect::StartRollout`],
//! [`Effect::RolloutStep`]); nothing here sees it.

use ratatui::text::{Line, Span};

use super::Ask;
use crate::client::ClientError;
use crate::rollout::wire::RolloutView;
use crate::rollout::{Bake, CohortSpec, DEFAULT_BAKE_S, DEFAULT_SHARE_PERCENT, RolloutQuery};
use crate::tui::keys::{self, Action, Hints};
use crate::tui::model::Model;
use crate::tui::model::edit::{LadderEdit, Rollout};
use crate::tui::msg::Effect;
use crate::tui::ui::rollout::short_id;
use crate::tui::ui::theme::Theme;
use crate::tui::ui::{fmt, hub};

fn say(asks: &mut Vec<Ask>, text: impl Into<String>) {
    asks.push(Ask::Say(text.into()));
}

/// `C` on the diff: the cohort's size and the bake as typed, and which
/// of the two takes the keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CohortAsk {
    pub size: String,
    pub bake: String,
    /// 0: the size, 1: the bake.
    pub field: usize,
    /// Why Enter did not start it.
    pub error: Option<String>,
}

impl Default for CohortAsk {
    fn default() -> Self {
        CohortAsk {
            size: format!("{DEFAULT_SHARE_PERCENT}%"),
            bake: Bake::from_secs(DEFAULT_BAKE_S).map_or_else(|| "10m".into(), |b| b.to_string()),
            field: 0,
            error: None,
        }
    }
}

/// What a key of the prompt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asked {
    /// Typing: stay.
    Stay,
    /// Esc: back to the diff.
    Back,
    /// Enter on values that read: start it with this query.
    Start(RolloutQuery),
}

impl CohortAsk {
    /// The prompt filled in with what `C` asked before (a 412's rebase).
    pub fn of(q: &RolloutQuery) -> CohortAsk {
        CohortAsk {
            size: q.cohort.to_string(),
            bake: q.bake.to_string(),
            ..CohortAsk::default()
        }
    }

    fn field_mut(&mut self) -> &mut String {
        if self.field == 0 {
            &mut self.size
        } else {
            &mut self.bake
        }
    }

    /// A key of the prompt (the key table's `CohortAsk` scope; `typed`,
    /// the character of a key that is text there).
    pub fn key(&mut self, action: Option<Action>, typed: Option<char>) -> Asked {
        match action {
            Some(Action::Cancel) => return Asked::Back,
            Some(Action::Accept) => match self.query() {
                Ok(q) => return Asked::Start(q),
                Err(e) => self.error = Some(e),
            },
            Some(Action::Complete) => self.field = 1 - self.field.min(1),
            Some(Action::Erase) => {
                self.field_mut().pop();
                self.error = None;
            }
            Some(Action::EraseAll) => {
                self.field_mut().clear();
                self.error = None;
            }
            Some(_) => {}
            None => {
                if let Some(c) = typed.filter(|c| !c.is_control()) {
                    if self.field_mut().chars().count() < 16 {
                        self.field_mut().push(c);
                    }
                    self.error = None;
                }
            }
        }
        Asked::Stay
    }

    /// The query the values make (`promote=auto`, the hub's default), or
    /// why they do not read: the hub's own sentences.
    pub fn query(&self) -> Result<RolloutQuery, String> {
        let cohort: CohortSpec = self.size.trim().parse().map_err(|e| format!("{e}"))?;
        let bake: Bake = self.bake.trim().parse().map_err(|e| format!("{e}"))?;
        Ok(RolloutQuery {
            cohort,
            bake,
            ..RolloutQuery::default()
        })
    }

    /// The status line while it asks.
    pub fn line(&self, t: &Theme) -> Line<'static> {
        let field = |i: usize, text: &str| {
            let style = if self.field == i {
                t.selected()
            } else {
                t.title()
            };
            Span::styled(format!(" {} ", hub(text)), style)
        };
        let mut spans = vec![
            Span::styled("to a cohort first: cohort", t.title()),
            field(0, &self.size),
            Span::styled("bake", t.title()),
            field(1, &self.bake),
            Span::raw("  "),
        ];
        spans.push(match &self.error {
            Some(e) => Span::styled(hub(e).into_owned(), t.bad()),
            None => Span::styled(
                keys::hints(Hints::CohortAsk, &format!(" {} ", t.sep())),
                t.muted(),
            ),
        });
        Line::from(spans)
    }
}

/// The rollout baking as a sentence names it: `rollout 4c2e… (to 4 of 40,
/// 6m left)`.
pub fn named(v: &RolloutView, ellipsis: &str) -> String {
    format!(
        "rollout {} (to {} of {}, {} left)",
        short_id(&v.id, ellipsis),
        fmt::count(v.cohort_workers as usize),
        fmt::count((v.cohort_workers + v.guard.rest.workers) as usize),
        fmt::left(v.time_left_s)
    )
}

/// `P` or `A`: true when there is a rollout baking to ask about, else
/// says why not.
pub fn can_step(m: &Model, asks: &mut Vec<Ask>) -> bool {
    if m.staged.baking().is_some() {
        return true;
    }
    say(
        asks,
        "no staged rollout bakes: P and A act on one while it bakes (C on the diff starts one)",
    );
    false
}

/// The question `P` or `A` asks on the status line.
pub fn step_question(m: &Model, promote: bool, t: &Theme) -> Line<'static> {
    let what = match m.staged.baking() {
        Some(v) => named(v, t.ellipsis()),
        None => "the rollout".into(),
    };
    let text = if promote {
        format!("promote {what}: every worker gets its list?")
    } else {
        format!("abort {what}: the cohort goes back to the accepted list?")
    };
    Line::styled(
        format!("{text} {}", keys::hints(Hints::Stepping, " · ")),
        t.warn(),
    )
}

/// `y` to the question: the step goes to the hub.
pub fn confirm_step(promote: bool, fx: &mut Vec<Effect>, asks: &mut Vec<Ask>) {
    say(
        asks,
        if promote {
            "promoting the rollout…"
        } else {
            "aborting the rollout…"
        },
    );
    fx.push(Effect::RolloutStep { promote });
}

/// The hub started the rollout: the edit is done (the file keeps the
/// accepted document), the Ladder follows the candidate over the cohort.
pub fn started(m: &mut Model, v: &RolloutView, fx: &mut Vec<Effect>, asks: &mut Vec<Ask>) {
    say(
        asks,
        format!(
            "rollout {} started ({} for {}): the cohort is told {}; P promotes, A aborts",
            short_id(&v.id, "…"),
            hub(&v.cohort),
            fmt::held(v.bake_s),
            hub(&v.candidate_revision)
        ),
    );
    m.edit = LadderEdit {
        rollout: Some(Rollout {
            revision: v.candidate_revision.clone(),
            at: Some(m.now()),
            cohort: true,
            ..Rollout::default()
        }),
        ..LadderEdit::default()
    };
    m.refresh_projection();
    fx.push(Effect::FetchHistory);
}

/// The hub answered `P` or `A`.
pub fn stepped(
    promote: bool,
    r: &Result<RolloutView, ClientError>,
    fx: &mut Vec<Effect>,
    asks: &mut Vec<Ask>,
) {
    let what = if promote { "promote" } else { "abort" };
    match r {
        Ok(v) => {
            let id = short_id(&v.id, "…");
            say(
                asks,
                if promote {
                    format!("rollout {id} promoted: every worker is told it")
                } else {
                    format!("rollout {id} aborted: the cohort goes back to the accepted list")
                },
            );
            fx.push(Effect::FetchHistory);
        }
        Err(ClientError::InConflict { message, .. }) => {
            say(
                asks,
                format!("not done: {} (nothing bakes now)", hub(message)),
            );
        }
        Err(e) => say(asks, format!("{what} failed: {e}")),
    }
}

/// A write refused with `409 rollout_in_progress`: what the screen says,
/// naming the rollout (as the TUI knows it, else as the hub said it).
pub fn in_progress(m: &Model, message: &str) -> String {
    match m.staged.baking() {
        Some(v) => format!(
            "{} bakes: the list changes by its promotion; P promotes it, A aborts it, then w writes this edit",
            named(v, "…")
        ),
        None => hub(message).into_owned(),
    }
}
