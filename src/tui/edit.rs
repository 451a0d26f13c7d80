//! The owner's pending edit of the list (`J`/`K`/`a`/`d`/`u`/`C-r`/`w` on
//! the Ladder). Plain data: `update` changes it, the Ladder view and the
//! diff screen draw it, and the runner sends what `y` confirmed through the
//! session's `Writer` (the views and `App` never see the writer).
//!
//! The order itself, undo/redo, the document it renders and the rebase
//! after a 412 are [`crate::plan::PendingEdit`]'s; this holds it together
//! with what is on screen: the add prompt, the diff under review, a write
//! in flight, a conflict to choose on.

use chrono::{DateTime, Utc};

use crate::plan::{self, Conflict, PendingEdit, Projection};
use crate::wire::WorkerState;

/// The pending edit and the screen it is on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LadderEdit {
    /// The edit, started from the hub's document by the first edit key.
    /// Kept (never dropped by a new revision) until written or dropped.
    pub plan: Option<PendingEdit>,
    pub mode: Mode,
    /// A 412 came back: the next document fetched is rebased onto.
    pub rebase_wanted: bool,
    /// The last write failed for this reason (5xx, timeout, hub down,
    /// refused); the edit stays and `w` retries.
    pub error: Option<String>,
    /// What the pending order would do to the fleet (recomputed with the
    /// ladder, only while an edit is pending).
    pub projection: Option<Projection>,
    /// After a write: the fleet converging onto the new revision.
    pub rollout: Option<Rollout>,
    /// A document from `$EDITOR` that was not taken, and why: `e` reopens
    /// it, so nothing typed is lost.
    pub draft: Option<Draft>,
    /// Times in a row the editor came back with a document not taken.
    pub reopens: usize,
}

/// A document typed in `$EDITOR` that could not become the pending edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub text: String,
    pub error: String,
}

/// Lines starting with this at the top of the editor's document are ours
/// (why the last one was not taken); they are removed when read back.
pub const NOTE: &str = "# macfleet:";
/// The editor reopens at most this many times in a row on a document that
/// is not taken; then the draft is kept for `e`.
pub const MAX_REOPENS: usize = 20;

/// `error` as TOML comment lines above `text`, for the editor.
pub fn with_notes(error: &str, text: &str) -> String {
    let mut out = String::new();
    let mut first = true;
    for l in error.lines() {
        let lead = if first { "not taken: " } else { "" };
        out.push_str(&format!("{NOTE} {lead}{l}\n"));
        first = false;
    }
    out.push_str(&format!(
        "{NOTE} fix it and save to try again, or quit without saving to cancel.\n\
         {NOTE} these lines are removed; a line number above counts from the line after them.\n"
    ));
    out.push_str(text);
    out
}

/// `text` without the note lines [`with_notes`] put on top.
pub fn strip_notes(text: &str) -> &str {
    let mut rest = text;
    while rest.starts_with(NOTE) {
        rest = rest.find('\n').map_or("", |i| &rest[i + 1..]);
    }
    rest
}

/// How many healthy workers report the revision written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rollout {
    pub revision: String,
    /// Healthy workers that report `revision`.
    pub on: usize,
    pub healthy: usize,
    /// When it was written (the hub's clock as the TUI knows it).
    pub at: Option<DateTime<Utc>>,
    /// The Ladder's cursor is on the convergence line: Enter lists the
    /// workers behind.
    pub selected: bool,
}

/// A worker not on the written revision, and why: stale, lost, or
/// healthy and reporting an older revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behind {
    pub worker: String,
    pub state: WorkerState,
    /// The revision it reported last (`None`: none yet).
    pub revision: Option<String>,
    /// When the hub last heard from it.
    pub heard: DateTime<Utc>,
}

/// At most this many workers behind are listed (the Workers view, filtered
/// on `rev:`, has them all).
pub const BEHIND_MAX: usize = 500;

impl Rollout {
    pub fn behind(&self) -> usize {
        self.healthy.saturating_sub(self.on)
    }
}

/// What the edit keys act on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Mode {
    /// The Ladder, with the pending order marked.
    #[default]
    Editing,
    /// The add prompt: the name typed so far and why it cannot be added
    /// (validated as it is typed).
    Adding { text: String, error: Option<String> },
    /// The diff screen: `y` sends exactly `text` with `If-Match: if_match`.
    Review {
        text: String,
        if_match: String,
        diff: String,
        scroll: usize,
    },
    /// `y` was pressed: the write is on its way.
    Sending { if_match: String },
    /// The hub's list changed under the edit: base, theirs and mine side
    /// by side; `c` carries mine onto theirs, `D` drops mine (asks again).
    Conflict {
        conflict: Box<Conflict>,
        confirm_drop: bool,
    },
    /// `q` with a pending edit: `y` quits, anything else stays.
    ConfirmQuit,
}

impl LadderEdit {
    /// An edit is waiting to be written.
    pub fn is_pending(&self) -> bool {
        self.plan.as_ref().is_some_and(|p| p.is_pending())
            || matches!(self.mode, Mode::Conflict { .. })
    }

    /// The pending order, if an edit changed it.
    pub fn order(&self) -> Option<&[String]> {
        self.plan
            .as_ref()
            .filter(|p| p.is_pending())
            .map(|p| p.order())
    }

    /// The add prompt, the diff screen, the conflict screen or the quit
    /// question is open:
    /// it takes the keys and the body.
    pub fn takes_keys(&self) -> bool {
        !matches!(self.mode, Mode::Editing | Mode::Sending { .. })
    }
}

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{App, Detail, View};
use super::keys::Action;
use super::lists::Pane;
use super::model::compact::addr;
use super::model::fleet::Entry;
use super::msg::Effect;
use crate::client::ClientError;
use crate::wire::{ConfigAccepted, KNOWN_AGENTS};

impl App {
    /// The projection of the pending order over the workers held now.
    pub(super) fn refresh_projection(&mut self) {
        if let Some(r) = &mut self.edit.rollout {
            let (mut on, mut healthy) = (0, 0);
            for (_, e) in self.fleet.iter() {
                if e.state == crate::wire::WorkerState::Healthy {
                    healthy += 1;
                    if e.view.config_revision.as_deref() == Some(r.revision.as_str()) {
                        on += 1;
                    }
                }
            }
            (r.on, r.healthy) = (on, healthy);
        }
        let Some(new) = self.edit.order().map(|o| o.to_vec()) else {
            self.edit.projection = None;
            return;
        };
        // Workers that report the same list, active agent and capabilities
        // share those values (interned): project each shape once, with how
        // many workers have it (a 100,000-worker fleet has a few hundred).
        let mut shapes: std::collections::HashMap<_, (&Entry, usize), foldhash::fast::RandomState> =
            Default::default();
        for (_, e) in self.fleet.iter() {
            let v = &e.view;
            let active = v.active_agent.as_ref().map_or(0, addr);
            let shape = (addr(&v.agents), active, v.capabilities.ptr(), e.state);
            shapes.entry(shape).or_insert((e, 0)).1 += 1;
        }
        let groups: Vec<(&Entry, usize)> = shapes.into_values().collect();
        let today = match &self.edit.plan {
            Some(p) => p.base_order().to_vec(),
            None => self.config.agents.clone(),
        };
        self.edit.projection = Some(plan::project_grouped(&groups, &today, &new));
    }

    /// The agent under the cursor on the Ladder.
    fn selected_agent(&self) -> Option<String> {
        self.lists.ladder.selected().cloned()
    }

    /// The edit, started from the hub's document if none is open.
    fn plan_mut(&mut self) -> Option<&mut PendingEdit> {
        if self.edit.plan.is_none() {
            let (Some(text), Some(rev)) = (&self.config.text, &self.config.revision) else {
                self.say("the hub's document has not arrived yet: try again in a moment");
                return None;
            };
            match PendingEdit::new(text.clone(), rev.clone()) {
                Ok(p) => self.edit.plan = Some(p),
                Err(e) => {
                    self.say(format!("cannot edit this document: {e}"));
                    return None;
                }
            }
        }
        self.edit.plan.as_mut()
    }

    /// An edit key on the Ladder, in a session that holds a writer.
    pub(super) fn edit_action(&mut self, action: Action, fx: &mut Vec<Effect>) {
        if matches!(self.edit.mode, Mode::Sending { .. }) {
            self.say("a write is on its way");
            return;
        }
        if action == Action::EditDocument {
            if self.plan_mut().is_some() {
                self.open_editor(fx);
            }
            return;
        }
        let sel = self.selected_agent();
        let Some(plan) = self.plan_mut() else {
            return;
        };
        let at = sel
            .as_ref()
            .and_then(|a| plan.order().iter().position(|x| x == a));
        let result: Result<String, String> = match action {
            Action::MoveAgentDown | Action::MoveAgentUp => match at {
                None => Err("select an agent of the list to move it".into()),
                Some(i) => {
                    let r = if action == Action::MoveAgentDown {
                        plan.move_down(i)
                    } else {
                        plan.move_up(i)
                    };
                    r.map(|to| {
                        format!(
                            "{} to rank {to} (u undoes)",
                            sel.as_deref().unwrap_or_default()
                        )
                    })
                    .map_err(|e| e.to_string())
                }
            },
            Action::RemoveAgent => match at {
                None => Err("select an agent of the list to remove it".into()),
                Some(i) => plan
                    .remove(i)
                    .map(|a| format!("{a} removed (u undoes)"))
                    .map_err(|e| e.to_string()),
            },
            Action::Undo => Ok(if plan.undo() {
                "undone"
            } else {
                "nothing to undo"
            }
            .into()),
            Action::Redo => Ok(if plan.redo() {
                "redone"
            } else {
                "nothing to redo"
            }
            .into()),
            Action::AddAgent => {
                self.edit.mode = Mode::Adding {
                    text: String::new(),
                    error: None,
                };
                return;
            }
            Action::Write => {
                self.review();
                return;
            }
            _ => return,
        };
        match result {
            Ok(t) => self.say(t),
            Err(e) => self.say(e),
        }
        self.edit.error = None;
        self.edit.rollout = None;
        self.reorder();
        if let Some(a) = sel {
            self.follow(&a);
        }
    }

    /// `e`: the whole document in `$EDITOR`: the draft the editor last left
    /// (with why it was not taken on top), else the document as the
    /// pending edit would write it.
    fn open_editor(&mut self, fx: &mut Vec<Effect>) {
        let Some(plan) = self.edit.plan.as_ref() else {
            return;
        };
        let text = match (&self.edit.draft, plan.render()) {
            (Some(d), _) => with_notes(&d.error, &d.text),
            (None, Ok(t)) => t,
            (None, Err(e)) => with_notes(
                &format!(
                    "the pending order cannot be written ({e}); this is the document it stands on"
                ),
                plan.working_text(),
            ),
        };
        self.edit.reopens = 0;
        self.say("the document is open in $EDITOR");
        fx.push(Effect::OpenEditor { text });
    }

    /// The editor closed: what it left becomes the pending edit, or the
    /// editor opens again with why it was not taken on top.
    pub(super) fn edited(
        &mut self,
        sent: String,
        back: Result<String, String>,
        fx: &mut Vec<Effect>,
    ) {
        let back = match back {
            Ok(b) => b,
            Err(e) => {
                self.say(format!("the editor failed: {e} (nothing changed)"));
                return;
            }
        };
        let body = strip_notes(&back);
        if body == strip_notes(&sent) {
            self.say(if self.edit.draft.is_some() {
                "the editor closed with the document unchanged: cancelled (e reopens what you typed)"
            } else {
                "the editor closed with the document unchanged: cancelled"
            });
            return;
        }
        let Some(plan) = self.plan_mut() else {
            return;
        };
        match plan.set_document(body) {
            Ok(changed) => {
                self.edit.draft = None;
                self.edit.reopens = 0;
                self.edit.error = None;
                if changed {
                    self.edit.rollout = None;
                }
                self.say(if self.edit.is_pending() {
                    "the document from $EDITOR is pending: review it, then w (u undoes)"
                } else {
                    "the document from $EDITOR is the hub's: nothing pending"
                });
                self.screen.detail = None;
                self.screen.view = View::Ladder;
                self.reorder();
            }
            Err(e) => {
                let error = e.to_string();
                self.edit.draft = Some(Draft {
                    text: body.to_string(),
                    error: error.clone(),
                });
                self.edit.reopens += 1;
                if self.edit.reopens > MAX_REOPENS {
                    self.say(format!(
                        "not taken: {error} (what you typed is kept: e reopens it)"
                    ));
                    return;
                }
                self.say(format!("not taken: {error}: the editor opens again"));
                fx.push(Effect::OpenEditor {
                    text: with_notes(&error, body),
                });
            }
        }
    }

    /// The workers not on the written revision, healthy ones reporting an
    /// older revision first, then stale, then lost (each by id); at most
    /// [`BEHIND_MAX`], and how many there are in all.
    pub fn rollout_behind(&self) -> (Vec<Behind>, usize) {
        let Some(r) = &self.edit.rollout else {
            return (Vec::new(), 0);
        };
        let rank = |s: WorkerState| match s {
            WorkerState::Healthy => 0,
            WorkerState::Stale => 1,
            WorkerState::Lost => 2,
        };
        let mut all: Vec<Behind> = self
            .fleet
            .iter()
            .filter(|(_, e)| e.view.config_revision.as_deref() != Some(r.revision.as_str()))
            .map(|(_, e)| Behind {
                worker: e.view.worker.to_string(),
                state: e.state,
                revision: e.view.config_revision.as_deref().map(str::to_string),
                heard: e.view.received_at,
            })
            .collect();
        let n = all.len();
        all.sort_by(|a, b| {
            rank(a.state)
                .cmp(&rank(b.state))
                .then_with(|| a.worker.cmp(&b.worker))
        });
        all.truncate(BEHIND_MAX);
        (all, n)
    }

    /// Keys on the Ladder while a rollout is followed: `j` past the last
    /// agent puts the cursor on the convergence line, Enter there lists the
    /// workers behind (`j`/`k` scroll that list). True when the key was
    /// taken.
    pub(super) fn rollout_key(&mut self, action: Action) -> bool {
        if self.screen.view != View::Ladder {
            return false;
        }
        if self.screen.detail == Some(Detail::Rollout) {
            let s = &mut self.screen.detail_scroll;
            match action {
                Action::Down => *s += 1,
                Action::Up => *s = s.saturating_sub(1),
                _ => return false,
            }
            return true;
        }
        if self.screen.detail.is_some() {
            return false;
        }
        let c = self.lists.ladder.cursor();
        let Some(r) = self.edit.rollout.as_mut() else {
            return false;
        };
        if r.selected {
            match action {
                Action::Detail => {
                    self.screen.detail = Some(Detail::Rollout);
                    self.screen.detail_scroll = 0;
                }
                Action::Up => r.selected = false,
                Action::Down | Action::Bottom | Action::PageDown => {}
                a => {
                    if a.movement().is_some() {
                        r.selected = false;
                    }
                    return false;
                }
            }
            return true;
        }
        if action == Action::Down && c.pos + 1 >= c.len {
            r.selected = true;
            return true;
        }
        false
    }

    /// Put the Ladder's cursor on `agent` (it moves with the agent).
    fn follow(&mut self, agent: &str) {
        let at = self.lists.ladder.rows.iter().position(|r| r == agent);
        if let Some(i) = at {
            self.lists.ladder.select(i);
            self.reorder();
        }
    }

    /// `R` on History: the selected revision's order becomes the pending
    /// order (on the hub's current document), shown on the Ladder to review.
    pub(super) fn revert_to_selected(&mut self) {
        if matches!(self.edit.mode, Mode::Sending { .. }) {
            self.say("a write is on its way");
            return;
        }
        let Some(entry) = self
            .lists
            .history
            .selected()
            .and_then(|k| self.history_entry(k))
            .map(|h| (h.revision.clone(), h.agents.clone()))
        else {
            self.say("select a revision to revert to");
            return;
        };
        let (revision, agents) = entry;
        let Some(plan) = self.plan_mut() else {
            return;
        };
        plan.set_order(agents);
        let pending = plan.is_pending();
        if pending {
            self.screen.detail = None;
            self.screen.view = View::Ladder;
            self.edit.rollout = None;
        }
        self.say(if pending {
            format!("{revision}'s order is pending: review it, then w (u undoes)")
        } else {
            format!("the hub already holds {revision}'s order")
        });
        self.reorder();
    }

    /// `w`: the diff screen of the whole document, or why it cannot be
    /// written.
    fn review(&mut self) {
        let Some(plan) = self.edit.plan.as_ref().filter(|p| p.is_pending()) else {
            self.say("nothing to write: no pending edit");
            return;
        };
        let made = plan
            .check()
            .and_then(|()| Ok((plan.render()?, plan.diff()?)));
        match made {
            Ok((text, diff)) => {
                self.edit.mode = Mode::Review {
                    text,
                    if_match: plan.base_revision().to_string(),
                    diff,
                    scroll: 0,
                }
            }
            Err(e) => self.say(format!("cannot write: {e} (the edit is kept)")),
        }
    }

    /// A key while the add prompt, the diff, the conflict or the quit
    /// question is open.
    pub(super) fn edit_key(&mut self, k: KeyEvent, fx: &mut Vec<Effect>) {
        let ctrl = k.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && k.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        match &mut self.edit.mode {
            Mode::Editing | Mode::Sending { .. } => {}
            Mode::ConfirmQuit => {
                if matches!(k.code, KeyCode::Char('y') | KeyCode::Char('q')) {
                    self.quit = true;
                } else {
                    self.edit.mode = Mode::Editing;
                }
            }
            Mode::Adding { text, .. } => match k.code {
                KeyCode::Esc => self.edit.mode = Mode::Editing,
                KeyCode::Enter => self.add_typed(),
                KeyCode::Tab => {
                    if let Some(c) = self
                        .add_choices()
                        .into_iter()
                        .find(|c| c.starts_with(&*text_of(&self.edit.mode)))
                    {
                        self.set_add_text(c);
                    }
                }
                KeyCode::Backspace => {
                    text.pop();
                    let t = text.clone();
                    self.set_add_text(t);
                }
                KeyCode::Char(c) if !ctrl => {
                    text.push(c);
                    let t = text.clone();
                    self.set_add_text(t);
                }
                _ => {}
            },
            Mode::Review {
                text,
                if_match,
                scroll,
                ..
            } => match k.code {
                KeyCode::Char('y') => {
                    let (text, if_match) = (text.clone(), if_match.clone());
                    self.say(format!("writing onto {if_match}"));
                    self.edit.mode = Mode::Sending {
                        if_match: if_match.clone(),
                    };
                    fx.push(Effect::Write { text, if_match });
                }
                KeyCode::Char('n') | KeyCode::Esc => self.edit.mode = Mode::Editing,
                KeyCode::Down | KeyCode::Char('j') => *scroll += 1,
                KeyCode::Up | KeyCode::Char('k') => *scroll = scroll.saturating_sub(1),
                _ => {}
            },
            Mode::Conflict {
                conflict,
                confirm_drop,
            } => match k.code {
                KeyCode::Char('c') => {
                    let c = (**conflict).clone();
                    self.edit.plan = Some(c.carry());
                    self.edit.mode = Mode::Editing;
                    self.say("your order now stands on the hub's document: review it, then w");
                    self.reorder();
                }
                KeyCode::Char('D') if !*confirm_drop => *confirm_drop = true,
                KeyCode::Char('y') if *confirm_drop => {
                    let c = (**conflict).clone();
                    self.edit.plan = Some(c.drop_mine());
                    self.edit.mode = Mode::Editing;
                    self.say("your pending edit was dropped");
                    self.reorder();
                }
                _ => *confirm_drop = false,
            },
        }
    }

    /// Names the add prompt offers: the known agents and those workers
    /// report, minus those already listed.
    pub fn add_choices(&self) -> Vec<String> {
        let listed: &[String] = self
            .edit
            .plan
            .as_ref()
            .map(|p| p.order())
            .unwrap_or(&self.config.agents);
        let mut out: Vec<String> = KNOWN_AGENTS.iter().map(|s| s.to_string()).collect();
        for a in self.fleet.agg.agents.keys() {
            if !out.contains(a) {
                out.push(a.clone());
            }
        }
        out.retain(|a| !listed.contains(a));
        out.sort();
        out
    }

    fn set_add_text(&mut self, t: String) {
        let error = if t.is_empty() {
            None
        } else {
            self.edit
                .plan
                .as_ref()
                .and_then(|p| p.check_name(&t).err())
                .map(|e| e.to_string())
        };
        self.edit.mode = Mode::Adding { text: t, error };
    }

    fn add_typed(&mut self) {
        let name = text_of(&self.edit.mode);
        let Some(plan) = self.edit.plan.as_mut() else {
            self.edit.mode = Mode::Editing;
            return;
        };
        match plan.add(&name, None) {
            Ok(at) => {
                self.edit.mode = Mode::Editing;
                self.say(format!("{name} added at rank {at} (u undoes)"));
                self.reorder();
            }
            Err(e) => {
                // The prompt stays open with what was typed.
                self.edit.mode = Mode::Adding {
                    text: name,
                    error: Some(e.to_string()),
                };
            }
        }
    }

    /// A new document arrived and no edit is pending: the next edit starts
    /// from it.
    pub(super) fn forget_unchanged_edit(&mut self) {
        if !self.edit.is_pending() && matches!(self.edit.mode, Mode::Editing) {
            self.edit.plan = None;
        }
    }

    /// The hub answered the write.
    pub(super) fn written(&mut self, r: Result<ConfigAccepted, ClientError>, fx: &mut Vec<Effect>) {
        match r {
            Ok(acc) => {
                self.say(format!("written: revision {}", acc.revision));
                self.config.agents = acc.agents;
                self.config.revision = Some(acc.revision.clone());
                self.config.text = None;
                self.edit = LadderEdit {
                    rollout: Some(Rollout {
                        revision: acc.revision,
                        at: Some(self.now()),
                        ..Rollout::default()
                    }),
                    ..LadderEdit::default()
                };
                self.refresh_projection();
                fx.push(Effect::FetchConfig);
                fx.push(Effect::FetchHistory);
            }
            Err(ClientError::Conflict { .. }) => {
                self.edit.mode = Mode::Editing;
                self.edit.rebase_wanted = true;
                self.say("the hub's document changed since this edit began: fetching it to rebase");
                fx.push(Effect::FetchConfig);
                fx.push(Effect::FetchHistory);
            }
            Err(e) => {
                self.edit.mode = Mode::Editing;
                let e = e.to_string();
                self.say(format!("write failed: {e} (the edit is kept: w retries)"));
                self.edit.error = Some(e);
            }
        }
    }

    /// After a 412: the pending order onto the hub's current document.
    pub(super) fn rebase_onto(&mut self, theirs: &str, revision: &str) {
        let Some(plan) = self.edit.plan.as_ref() else {
            return;
        };
        match plan.rebase(theirs, revision) {
            Ok(crate::plan::Rebased::Replayed(p)) => {
                let whole = p
                    .typed()
                    .is_some_and(|t| differs_outside_list(t, p.base_text()));
                self.edit.plan = Some(p);
                self.review();
                self.say(if whole {
                    format!(
                        "onto {revision}: the document from $EDITOR is kept whole; its new diff shows what of the other change it undoes (y sends)"
                    )
                } else {
                    format!("replayed onto {revision}: review the new diff (y sends)")
                });
            }
            Ok(crate::plan::Rebased::AlreadyThere(p)) => {
                self.edit.plan = Some(p);
                self.edit.mode = Mode::Editing;
                self.say(format!("the hub already holds this order at {revision}"));
            }
            Ok(crate::plan::Rebased::ListChanged(c)) => {
                self.edit.mode = Mode::Conflict {
                    conflict: c,
                    confirm_drop: false,
                };
                self.say("the list changed on the hub: c carries yours onto theirs, D drops yours");
            }
            Err(e) => self.say(format!(
                "cannot rebase onto {revision}: {e} (the edit is kept)"
            )),
        }
        if self.screen.view != View::Ladder {
            self.dirty = true;
        }
    }
}

/// Two documents differ outside their lists (or either has none).
fn differs_outside_list(a: &str, b: &str) -> bool {
    match (crate::agents_doc::locate(a), crate::agents_doc::locate(b)) {
        (Ok(x), Ok(y)) => {
            a.get(..x.span.start) != b.get(..y.span.start)
                || a.get(x.span.end..) != b.get(y.span.end..)
        }
        _ => true,
    }
}

fn text_of(m: &Mode) -> String {
    match m {
        Mode::Adding { text, .. } => text.clone(),
        _ => String::new(),
    }
}
