//! The owner's edit screens over the Ladder: the edit keys (`J`/`K`/`a`/
//! `d`/`u`/`C-r`/`w`/`e`, `R` on History), the add prompt, the diff under
//! review, the conflict after a 412 that changed the list, the quit
//! question; what `$EDITOR` and the write came back with. The edit itself
//! is the model's ([`crate::tui::model::edit::LadderEdit`]); this changes
//! it, from the key table's `Add`, `Review`, `Conflict` and `Quitting`
//! scopes, and draws its screens. The runner sends what `y` confirmed
//! through the session's `Writer` (nothing here sees the writer).

use crossterm::event::KeyEvent;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{Ask, Ctx, Frame, Overlay, Yield};
use crate::client::ClientError;
use crate::plan::Choice;
use crate::plan::PendingEdit;
use crate::plan::Rebased;
use crate::tui::ids::{HISTORY, LADDER};
use crate::tui::keys::{self, Action, Hints, Scope};
use crate::tui::model::Model;
use crate::tui::model::config::HistKey;
use crate::tui::model::config::OnDisk;
use crate::tui::model::edit::{
    Draft, KeptDraft, LadderEdit, LostWrite, MAX_REOPENS, Overtaken, Rollout, Undoes, strip_notes, with_notes,
    with_reason,
};
use crate::tui::msg::Effect;
use crate::tui::pane::{Cx, Detail};
use crate::tui::ui::fmt::{age_at, count as count_text};
use crate::tui::ui::{diff_line, fit, fit_line, hub, line, row};
use crate::wire::{ConfigAccepted, WorkerState};

fn say(asks: &mut Vec<Ask>, text: impl Into<String>) {
    asks.push(Ask::Say(text.into()));
}

/// The edit screens over the pane, the draft an earlier session kept on
/// offer, and why this session does not write. The edit itself is the
/// model's (`Model::edit`); this is the screen it is on.
#[derive(Debug, Default)]
pub struct Edit {
    mode: Mode,
    /// The edit screen the quit question was asked over, for when the
    /// answer is to stay.
    quit_back: Option<Mode>,
    /// Why this session does not write (the flag, the context, the
    /// token's role), as the edit keys say it; the runner knows.
    read_only_why: Option<String>,
    /// A draft an earlier session on this hub kept, offered (`o`, `D`),
    /// and how many more wait behind it.
    offered: Option<(KeptDraft, usize)>,
    /// The draft opened or dropped, for the runner to forget.
    settled: Option<String>,
    /// The last revision the stream said was a hand edit of the hub's
    /// file (`by: "(changed on disk)"`), for the words when it overtakes
    /// the edit before the history holds it.
    by_hand: Option<String>,
}

/// What the edit keys act on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Mode {
    /// The Ladder, with the pending order marked.
    #[default]
    Editing,
    /// The add prompt: the name typed so far and why it cannot be added
    /// (validated as it is typed). `unknown`: Enter was pressed on a name
    /// no worker reports and no known agent has (a typo routes nobody):
    /// the prompt asks first, Enter again adds it anyway, Esc goes back to
    /// the name.
    Adding {
        text: String,
        error: Option<String>,
        unknown: bool,
    },
    /// The diff screen: `y` sends exactly `text` with `If-Match: if_match`.
    Review {
        text: String,
        if_match: String,
        diff: String,
        scroll: usize,
    },
    /// The hub's list changed under the edit and some agents were touched
    /// by both (`LadderEdit::conflict`): base, theirs, mine and the merged
    /// result side by side;
    /// `t`/`m` keep theirs or mine for the conflicting agent at `at`, `c`
    /// takes the merged result, `D` drops mine (asks again).
    Conflict { confirm_drop: bool, at: usize },
    /// `q` with a pending edit: `y` quits, anything else stays.
    ConfirmQuit,
    /// `C` on the diff: the cohort's size and the bake asked; Enter sends
    /// the diff's document to a cohort first, Esc goes back to `review`.
    Cohort {
        review: Box<Mode>,
        ask: super::staged::CohortAsk,
    },
    /// `P` (`promote`) or `A` while a rollout bakes: `y` does it, any
    /// other key does not.
    Stepping { promote: bool },
}

impl Edit {
    /// The add prompt, empty (unit tests open it without a hub document).
    #[cfg(test)]
    pub(crate) fn open_add_for_test(&mut self) {
        self.mode = Mode::Adding {
            text: String::new(),
            error: None,
            unknown: false,
        };
    }

    /// The screen the edit is on.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// The add prompt, the diff screen, the conflict screen or the quit
    /// question is open: it takes the keys and the body.
    pub fn takes_keys(&self) -> bool {
        self.mode != Mode::Editing
    }

    pub fn set_read_only_why(&mut self, why: Option<String>) {
        self.read_only_why = why;
    }

    /// Offer a kept draft (`None`: none left), with how many more wait.
    pub fn offer_draft(&mut self, d: Option<KeptDraft>, more: usize) {
        self.offered = d.map(|d| (d, more));
    }

    pub fn offered_draft(&self) -> Option<&KeptDraft> {
        self.offered.as_ref().map(|(d, _)| d)
    }

    pub fn take_settled_draft(&mut self) -> Option<String> {
        self.settled.take()
    }

    /// `q`, C-c, or a prompt's C-c: true when the session quits now (no
    /// edit pending, or asked again); else the quit question opens, over
    /// whatever screen the edit was on.
    pub fn ask_quit(&mut self, m: &Model) -> bool {
        if !m.edit.is_pending() || self.mode == Mode::ConfirmQuit {
            return true;
        }
        let back = std::mem::replace(&mut self.mode, Mode::ConfirmQuit);
        self.quit_back = match back {
            Mode::Adding { .. }
            | Mode::Review { .. }
            | Mode::Conflict { .. }
            | Mode::Cohort { .. } => Some(back),
            _ => None,
        };
        false
    }

    /// The model's conflict goes with the conflict screen: when the screen
    /// (or the one the quit question came from) is no longer it, the
    /// conflict was settled or replaced.
    fn sync(&mut self, m: &mut Model) {
        let on = |md: &Mode| matches!(md, Mode::Conflict { .. });
        let asked_over = self.mode == Mode::ConfirmQuit && self.quit_back.as_ref().is_some_and(on);
        if !(on(&self.mode) || asked_over) {
            m.edit.conflict = None;
        }
        // What was said of the edit goes with it: undone to nothing (or
        // dropped), no colleague's write overtook a pending edit and no
        // choice undoes theirs; the next edit begins on the revision then.
        if !m.edit.is_pending() && m.edit.sending.is_none() {
            m.edit.overtaken = None;
            m.edit.undoes = None;
        }
    }

    /// Why the session does not write, as the edit keys say it.
    pub fn read_only_why(&self) -> &str {
        self.read_only_why.as_deref().unwrap_or("read-only")
    }

    /// An edit key a pane handed on (the Ladder's, `R` on History), on the
    /// row selected there, in a session that holds a writer.
    pub fn edit_key(&mut self, action: Action, selected: Option<Detail>, cx: &mut Ctx) {
        let on_history = cx.pane.id() == HISTORY;
        let (m, asks) = (&mut *cx.model, &mut *cx.asks);
        match selected {
            Some(Detail::Revision(k)) if on_history => self.revert(m, Some(k), asks),
            _ if action == Action::Revert && on_history => self.revert(m, None, asks),
            Some(Detail::Agent(sel)) => self.action(m, action, Some(sel), cx.fx, asks),
            _ => self.action(m, action, None, cx.fx, asks),
        }
        self.sync(m);
    }

    /// The hub's document (`GET /v1/config`): a 412's rebase onto it, or a
    /// colleague's write the pending edit is replayed onto; with no edit
    /// pending and no screen open, the next edit starts from it.
    pub fn document(&mut self, m: &mut Model, text: &str, revision: &str, asks: &mut Vec<Ask>) {
        if std::mem::take(&mut m.edit.rebase_wanted) {
            self.rebase_onto(m, text, revision, asks);
        } else if m.edit.plan.as_ref().map(|p| p.base_revision()) != Some(revision) {
            self.forget_unchanged(m);
            self.overtaken(m, text, revision, asks);
        }
        self.sync(m);
    }

    /// A new document arrived and no edit is pending nor on a screen (the
    /// add prompt keeps what it is adding to): the next edit starts from it.
    pub fn forget_unchanged(&self, m: &mut Model) {
        if !m.edit.is_pending() && m.edit.sending.is_none() && self.mode == Mode::Editing {
            m.edit.plan = None;
        }
    }

    /// The hub answered the write.
    pub fn answer(
        &mut self,
        m: &mut Model,
        r: Result<ConfigAccepted, ClientError>,
        fx: &mut Vec<Effect>,
        asks: &mut Vec<Ask>,
    ) {
        self.written(m, r, fx, asks);
        self.sync(m);
    }

    /// The hub's file as it stands on disk does not validate.
    pub fn on_disk(&mut self, m: &mut Model, d: OnDisk, asks: &mut Vec<Ask>) {
        self.disk_invalid(m, d, asks);
        self.sync(m);
    }

    /// `o` or `D` while a draft is offered. `o` makes it the pending edit
    /// again: on the revision it was begun on, or replayed onto the hub's
    /// revision now as a 412 is (`rebase_onto`: the new diff to review, or
    /// base / theirs / mine to choose on). `D` drops it.
    fn draft_key(&mut self, m: &mut Model, action: Action, asks: &mut Vec<Ask>) {
        let Some((d, _)) = self.offered.as_ref() else {
            return;
        };
        let when = draft_time(d, m.now());
        if action == Action::DropDraft {
            let (d, _) = self.offered.take().expect("offered");
            self.settled = Some(d.id);
            asks.push(Ask::Say(format!("the draft from {when} is dropped")));
            return;
        }
        if !m.can_write {
            let why = self.read_only_why.as_deref().unwrap_or("read-only");
            asks.push(Ask::Say(format!("{why}: the draft is kept")));
            return;
        }
        let (Some(text), Some(revision)) = (m.config.text.clone(), m.config.revision.clone())
        else {
            asks.push(Ask::Say(
                "the hub's document has not arrived yet: o again in a moment".into(),
            ));
            return;
        };
        if m.edit.is_pending() || m.edit.sending.is_some() {
            asks.push(Ask::Say(
                "an edit is pending here: write it or undo it (u) before o opens the draft".into(),
            ));
            return;
        }
        let (d, _) = self.offered.take().expect("offered");
        self.settled = Some(d.id.clone());
        // The edit as it stood: its document on the revision it was begun
        // on (its order where the document does not render).
        let restored = PendingEdit::new(d.base.clone(), d.revision.clone()).map(|mut p| {
            if p.set_document(&d.document).is_err() {
                p.set_order(d.order.clone());
            }
            p
        });
        self.mode = Mode::Editing;
        m.edit.error = None;
        m.edit.rollout = None;
        m.edit.overtaken = None;
        asks.push(Ask::Land(LADDER));
        match restored {
            Ok(p) if d.revision == revision => {
                let pending = p.is_pending();
                m.edit.plan = Some(p);
                asks.push(Ask::Say(if pending {
                    format!(
                        "the draft from {when} is pending again on {}: w shows its diff",
                        hub(&revision)
                    )
                } else {
                    format!("the hub already holds the draft from {when}: nothing pending")
                }));
            }
            Ok(p) => {
                // Another revision since: replayed as after a 412.
                m.edit.plan = Some(p);
                self.rebase_onto(m, &text, &revision, asks);
            }
            Err(e) => {
                // Its base does not read as a list (a mend): the document
                // stands whole on the hub's now.
                match PendingEdit::new(text, revision).and_then(|mut p| {
                    p.set_document(&d.document)?;
                    Ok(p)
                }) {
                    Ok(p) => {
                        m.edit.plan = Some(p);
                        asks.push(Ask::Say(format!(
                            "the draft from {when} is pending again (its first document does not read: {e}): w shows its diff"
                        )));
                    }
                    Err(e) => asks.push(Ask::Say(format!(
                        "the draft from {when} cannot be opened: {e} (its file is removed; nothing changed)"
                    ))),
                }
            }
        }
        asks.push(Ask::Reorder);
    }
}

impl Overlay for Edit {
    fn key(&mut self, k: &KeyEvent, _a: Option<Action>, cx: &mut Ctx) -> bool {
        if self.takes_keys() {
            let asked = self.mode == Mode::ConfirmQuit;
            self.screen_key(cx.model, *k, cx.fx, cx.asks);
            if asked && self.mode == Mode::Editing {
                // Stayed: back to the screen the question was asked on
                // (the diff, the conflict, the add prompt and its text).
                if let Some(back) = self.quit_back.take() {
                    self.mode = back;
                }
            }
            self.sync(cx.model);
            return true;
        }
        if self.offered.is_some() {
            if let Some(a) = keys::action_in(Scope::Draft, k) {
                self.draft_key(cx.model, a, cx.asks);
                self.sync(cx.model);
                return true;
            }
        }
        false
    }

    fn give_way(&mut self, _why: Yield) {}

    fn note(&self, m: &Model) -> Option<String> {
        let (d, more) = self.offered.as_ref()?;
        let more = match more {
            0 => String::new(),
            1 => " (1 more after it)".to_string(),
            n => format!(" ({n} more after it)"),
        };
        let rev: String = d.revision.chars().take(12).collect();
        Some(format!(
            "a draft from {} on revision {}{more}: {}",
            draft_time(d, m.now()),
            hub(&rev),
            keys::hints(Hints::Draft, ", ")
        ))
    }

    fn draw_body(&self, f: &Frame, area: Rect, buf: &mut Buffer) -> bool {
        self.body(f.cx, area, buf)
    }

    fn draw_status(&self, f: &Frame, area: Rect, buf: &mut Buffer) -> bool {
        self.status(f.cx, area, buf)
    }
}

/// When a draft was kept, as the offer says it: `19:02Z` the same day
/// (the TUI's clock times are UTC), else with its date.
fn draft_time(d: &KeptDraft, now: chrono::DateTime<chrono::Utc>) -> String {
    if d.at.date_naive() == now.date_naive() {
        d.at.format("%H:%MZ").to_string()
    } else {
        d.at.format("%Y-%m-%d %H:%MZ").to_string()
    }
}

/// The hub's file does not validate and no edit stands on it: what `e`
/// opens and what `$EDITOR` leaves is a mend of it.
fn mending(m: &Model) -> Option<&OnDisk> {
    let d = m.config.on_disk.as_ref()?;
    m.edit
        .plan
        .as_ref()
        .is_none_or(|p| p.base_revision() != d.revision)
        .then_some(d)
}

/// `e` while the hub's file does not validate: the file as it stands on
/// disk, why on top (or the mend the editor last left, not taken).
fn open_disk(m: &mut Model, d: &OnDisk, fx: &mut Vec<Effect>, asks: &mut Vec<Ask>) {
    let text = match &m.edit.draft {
        Some(dr) => with_notes(&dr.error, &dr.text),
        None => {
            let mut why = vec![
                d.sentence(),
                format!(
                    "this is the file as it stands on the hub's disk (revision {}); workers keep {} meanwhile",
                    d.revision,
                    m.in_force().join(", ")
                ),
            ];
            if let Some(order) = m.edit.order() {
                why.push(format!(
                    "your pending order ({}) is set aside when you save here",
                    order.join(", ")
                ));
            }
            with_reason(&why, &d.text)
        }
    };
    m.edit.reopens = 0;
    say(
        asks,
        "the hub's file as it stands on disk is open in $EDITOR, the reason on top",
    );
    fx.push(Effect::OpenEditor { text });
}

/// `e`: the whole document in `$EDITOR`: the draft the editor last left
/// (with why it was not taken on top), else the document as the
/// pending edit would write it.
fn open_editor(m: &mut Model, fx: &mut Vec<Effect>, asks: &mut Vec<Ask>) {
    let Some(plan) = m.edit.plan.as_ref() else {
        return;
    };
    let text = match (&m.edit.draft, plan.render()) {
        (Some(d), _) => with_notes(&d.error, &d.text),
        (None, Ok(t)) => t,
        (None, Err(e)) => with_notes(
            &format!(
                "the pending order cannot be written ({e}); this is the document it stands on"
            ),
            plan.working_text(),
        ),
    };
    m.edit.reopens = 0;
    say(asks, "the document is open in $EDITOR");
    fx.push(Effect::OpenEditor { text });
}

/// The editor closed: what it left becomes the pending edit, or the
/// editor opens again with why it was not taken on top.
pub fn edited(
    m: &mut Model,
    sent: String,
    back: Result<String, String>,
    fx: &mut Vec<Effect>,
    asks: &mut Vec<Ask>,
) {
    let back = match back {
        Ok(b) => b,
        Err(e) => {
            if cancel_draft(m, fx) {
                say(
                    asks,
                    format!(
                        "the editor failed: {e}: cancelled, e opens the hub's document (keeping what you typed as a file)"
                    ),
                );
            } else {
                say(asks, format!("the editor failed: {e} (nothing changed)"));
            }
            return;
        }
    };
    let body = strip_notes(&back);
    if body == strip_notes(&sent) {
        say(
            asks,
            if cancel_draft(m, fx) {
                "the editor closed with the document unchanged: cancelled, e opens the hub's document (keeping what you typed as a file)"
            } else {
                "the editor closed with the document unchanged: cancelled"
            },
        );
        return;
    }
    if let Some(d) = mending(m).cloned() {
        match PendingEdit::mend(d.text, d.revision, m.in_force(), body) {
            Ok(p) => {
                m.edit.plan = Some(p);
                m.edit.draft = None;
                m.edit.reopens = 0;
                m.edit.error = None;
                m.edit.rollout = None;
                m.edit.overtaken = None;
                say(
                    asks,
                    "the mended document is pending: w shows its diff against the file on disk (u undoes)",
                );
                asks.push(Ask::Land(LADDER));
                asks.push(Ask::Reorder);
            }
            Err(e) => not_taken(m, body, e.to_string(), fx, asks),
        }
        return;
    }
    let plan = match m.plan_mut() {
        Ok(p) => p,
        Err(e) => return say(asks, e),
    };
    match plan.set_document(body) {
        Ok(changed) => {
            m.edit.draft = None;
            m.edit.reopens = 0;
            m.edit.error = None;
            if changed {
                m.edit.rollout = None;
            }
            say(
                asks,
                if m.edit.is_pending() {
                    "the document from $EDITOR is pending: review it, then w (u undoes)"
                } else {
                    "the document from $EDITOR is the hub's: nothing pending"
                },
            );
            asks.push(Ask::Land(LADDER));
            asks.push(Ask::Reorder);
        }
        Err(e) => not_taken(m, body, e.to_string(), fx, asks),
    }
}

/// What `$EDITOR` left was not taken: kept as the draft `e` reopens, and
/// the editor opens again with why on top (at most [`MAX_REOPENS`] times
/// in a row).
fn not_taken(m: &mut Model, body: &str, error: String, fx: &mut Vec<Effect>, asks: &mut Vec<Ask>) {
    m.edit.draft = Some(Draft {
        text: body.to_string(),
        error: error.clone(),
    });
    m.edit.reopens += 1;
    if m.edit.reopens > MAX_REOPENS {
        say(
            asks,
            format!("not taken: {error} (what you typed is kept: e reopens it)"),
        );
        return;
    }
    say(asks, format!("not taken: {error}: the editor opens again"));
    fx.push(Effect::OpenEditor {
        text: with_notes(&error, body),
    });
}

/// Quitting the editor on a draft not taken cancels it: the next `e`
/// opens the hub's document (as the pending edit would write it), and
/// the draft is kept as a file (its path comes back in
/// [`draft_kept`]), so nothing typed is lost. False when there was none.
fn cancel_draft(m: &mut Model, fx: &mut Vec<Effect>) -> bool {
    let Some(d) = m.edit.draft.take() else {
        return false;
    };
    m.edit.reopens = 0;
    fx.push(Effect::KeepDraft { text: d.text });
    true
}

/// Where the cancelled draft was kept.
pub fn draft_kept(kept: Result<String, String>, asks: &mut Vec<Ask>) {
    say(
        asks,
        match kept {
            // The path first: it is what a narrow status line must keep.
            Ok(path) => {
                format!("what you typed is kept in {path}: cancelled, e opens the hub's document")
            }
            Err(e) => format!(
                "cancelled: e opens the hub's document; what you typed could not be kept: {e}"
            ),
        },
    );
}

const CONFLICT_SAY: &str = "the hub's list changed where yours did: t/m keep theirs or mine for each agent both changed, c takes the merged result, D drops yours";

/// The writer of `revision` as the undo note names them: `alice's`, `the
/// hand edit's` (the file changed on disk), `their` (not in the history
/// yet).
fn whose(m: &Model, revision: &str) -> String {
    match m.config.written(revision) {
        // `(changed on disk)`: a name in brackets is no person's.
        Some(h) if h.by.starts_with('(') => "the hand edit's".into(),
        Some(h) => format!("{}'s", h.by),
        None => "their".into(),
    }
}

/// Above the diff: what of a colleague's change the edit undoes, for each
/// conflict settled with mine that the edit still holds.
pub fn undo_notes(m: &Model) -> Vec<String> {
    let (Some(u), Some(p)) = (&m.edit.undoes, &m.edit.plan) else {
        return Vec::new();
    };
    if p.base_revision() != u.revision {
        return Vec::new();
    }
    let pos = |l: &[String], a: &str| l.iter().position(|x| x == a);
    let who = whose(m, &u.revision);
    u.clashes
        .iter()
        .filter(|c| pos(p.order(), &c.agent) != pos(p.base_order(), &c.agent))
        .map(|c| c.undoes(&who))
        .collect()
}

/// No worker reports the name, no known agent has it, and it is not in the
/// list the edit began on: most likely a typo.
fn unheard_of(m: &Model, name: &str) -> bool {
    !crate::wire::KNOWN_AGENTS.contains(&name)
        && !m.fleet.agg.agents.contains_key(name)
        && !m
            .edit
            .plan
            .as_ref()
            .is_some_and(|p| p.base_order().iter().any(|a| a == name))
}

/// The name the add prompt could have meant: the closest it offers, at
/// most two edits away.
pub fn meant(m: &Model, name: &str) -> Option<String> {
    m.add_choices()
        .into_iter()
        .map(|c| (distance(name, &c), c))
        .filter(|(d, _)| *d <= 2)
        .min()
        .map(|(_, c)| c)
}

/// Edits (insert, delete, replace, swap of neighbours) between two names.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    d[0] = (0..=b.len()).collect();
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
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

fn draw_diff(cx: &Cx, area: Rect, buf: &mut Buffer, diff: &str, rev: &str, scroll: usize) {
    let t = cx.theme;
    if let Some(r) = row(area, 0) {
        line(
            r,
            buf,
            Line::from(vec![
                Span::styled(
                    match &cx.model.config.on_disk {
                        Some(d) if d.revision == rev => format!(
                            "replace the hub's file that does not validate (revision {})",
                            hub(rev)
                        ),
                        _ => format!("write onto revision {}", hub(rev)),
                    },
                    t.title(),
                ),
                Span::styled(
                    format!(
                        "   {}",
                        keys::hints(Hints::Review, &format!(" {} ", t.sep()))
                    ),
                    t.muted(),
                ),
            ]),
        );
    }
    let w = usize::from(area.width);
    // What of a colleague's change this undoes comes first.
    let notes = undo_notes(cx.model);
    for (i, l) in notes.iter().enumerate() {
        if let Some(r) = row(area, 1 + i as u16) {
            line(
                r,
                buf,
                fit_line(Line::styled(hub(l).into_owned(), t.bad()), w, t.ellipsis()),
            );
        }
    }
    let plan = plan_lines(cx, w);
    let below = 1 + notes.len() as u16;
    for (i, l) in plan.iter().enumerate() {
        if let Some(r) = row(area, below + i as u16) {
            line(
                r,
                buf,
                fit_line(Line::styled(l.clone(), t.title()), w, t.ellipsis()),
            );
        }
    }
    let top = below + plan.len() as u16;
    for (i, l) in diff.lines().skip(scroll).enumerate() {
        let Some(r) = row(area, i as u16 + top) else {
            break;
        };
        line(r, buf, diff_line(t, &fit(&hub(l), w, t.ellipsis())));
    }
}

/// Above the diff, as terraform's `Plan:` line: what the order changes
/// (agents moved, added, removed) and what that does to the fleet (healthy
/// workers that change rung, no route now → then), from the projection the
/// Ladder shows.
/// One line where it fits `width`, else the fleet's part on a line of its
/// own.
pub fn plan_lines(cx: &Cx, width: usize) -> Vec<String> {
    let (list, fleet) = plan_parts(cx);
    let Some(fleet) = fleet else {
        return vec![list];
    };
    let one = format!("{list} {} {fleet}", cx.theme.sep());
    if one.chars().count() <= width {
        vec![one]
    } else {
        vec![list, format!("      {fleet}")]
    }
}

fn plan_parts(cx: &Cx) -> (String, Option<String>) {
    let t = cx.theme;
    let c = cx
        .model
        .edit
        .plan
        .as_ref()
        .map(|p| p.changes())
        .unwrap_or_default();
    let agents = if c.moved == 1 { "agent" } else { "agents" };
    let list = format!(
        "Plan: {} {agents} moved, {} added, {} removed",
        count_text(c.moved),
        count_text(c.added),
        count_text(c.removed)
    );
    let fleet = cx.model.edit.projection.as_ref().map(|p| {
        format!(
            "{} of {} healthy workers change rung {} no route {}{}{}",
            count_text(p.change_rung),
            count_text(p.healthy),
            t.sep(),
            count_text(p.no_route_today),
            t.arrow(),
            count_text(p.no_route),
        )
    });
    (list, fleet)
}

fn draw_conflict(
    cx: &Cx,
    area: Rect,
    buf: &mut Buffer,
    c: &crate::plan::Conflict,
    confirm_drop: bool,
    at: usize,
) {
    let t = cx.theme;
    draw_conflict_head(cx, area, buf, c);
    let n = draw_conflict_columns(cx, area, buf, c);
    let y = draw_clashes(cx, area, buf, c, at, 4 + n);
    if let Some(r) = row(area, y + 1) {
        let text = if confirm_drop {
            format!(
                "drop your pending order for good? {} · any other key keeps it",
                keys::hints(Hints::Dropping, " · ")
            )
        } else {
            keys::hints(Hints::Conflict, &format!(" {} ", t.sep()))
        };
        let w = usize::from(area.width);
        line(r, buf, Line::styled(fit(&text, w, t.ellipsis()), t.title()));
    }
}

/// The conflict's first two rows: the hub's list changed, by whom and
/// when, while you edited it from which revision.
fn draw_conflict_head(cx: &Cx, area: Rect, buf: &mut Buffer, c: &crate::plan::Conflict) {
    let t = cx.theme;
    let Some(r) = row(area, 0) else {
        return;
    };
    // Who changed it and when, once the history holds that revision.
    let who = cx
        .model
        .config
        .history
        .iter()
        .find(|h| h.revision == c.theirs_revision())
        .map(|h| {
            // A hand edit is no one's: `changed by hand on disk`, not
            // `by (changed on disk)`, the hub's word for it.
            let by = if h.by == "(changed on disk)" {
                crate::tui::ui::fmt::written_by(h)
            } else {
                format!("by {}", hub(&crate::tui::model::config::who(h)))
            };
            format!(" {by}, {} ago", age_at(cx.now, h.at))
        })
        .unwrap_or_default();
    // Two rows, wrapped at spaces: at 80 columns the revisions, who
    // and the base do not fit one; a third row's worth is cut, marked.
    let text = format!(
        "the hub's list changed (now {}{who}) while you edited it from {}",
        hub(c.theirs_revision()),
        hub(c.mine.base_revision())
    );
    let w = usize::from(r.width);
    let mut rows = crate::tui::ui::header::wrap(&text, w.max(1));
    if rows.len() > 2 {
        let rest = rows[1..].join(" ");
        rows.truncate(1);
        rows.push(fit(&rest, w, t.ellipsis()));
    }
    for (i, text) in rows.into_iter().enumerate() {
        if let Some(r) = row(area, i as u16) {
            line(r, buf, Line::styled(text, t.warn()));
        }
    }
}

/// The four lists side by side (base, theirs, mine, merged), clashing
/// agents marked; the rows the longest list takes.
fn draw_conflict_columns(cx: &Cx, area: Rect, buf: &mut Buffer, c: &crate::plan::Conflict) -> u16 {
    let t = cx.theme;
    let s = &c.sides;
    let merged = c.merged();
    let col_w = (area.width / 4).max(1);
    let cols = [
        (format!("base {}", c.mine.base_revision()), &s.base),
        (format!("theirs {}", c.theirs_revision()), &s.theirs),
        ("mine (pending)".to_string(), &s.mine),
        ("merged".to_string(), &merged.order().to_vec()),
    ];
    let clashing = |a: &str| c.clashes.iter().any(|k| k.agent == a);
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
                let text = fit(&format!("{i} {}", hub(a)), col_w as usize - 1, t.ellipsis());
                let style = if clashing(a) {
                    t.warn()
                } else {
                    ratatui::style::Style::new()
                };
                line(r, buf, Line::styled(text, style));
            }
        }
    }
    s.base
        .len()
        .max(s.theirs.len())
        .max(s.mine.len())
        .max(merged.order().len()) as u16
}

/// Each agent both changed, from row `y`: what each side did, the choice
/// (`at` under the cursor), and what keeping mine undoes. The row after them.
fn draw_clashes(
    cx: &Cx,
    area: Rect,
    buf: &mut Buffer,
    c: &crate::plan::Conflict,
    at: usize,
    mut y: u16,
) -> u16 {
    let t = cx.theme;
    let who = whose(cx.model, c.theirs_revision());
    let w = usize::from(area.width);
    for (i, (k, choice)) in c.clashes.iter().zip(&c.choices).enumerate() {
        let Some(r) = row(area, y) else { break };
        let mark = if i == at { ">" } else { " " };
        let kept = match choice {
            Choice::Mine => "keeps mine",
            Choice::Theirs => "keeps theirs",
        };
        let text = format!("{mark} {} {} {kept}", hub(&k.describe()), t.sep());
        let style = if i == at { t.title() } else { t.warn() };
        line(r, buf, Line::styled(fit(&text, w, t.ellipsis()), style));
        y += 1;
        if *choice == Choice::Mine {
            // What keeping mine undoes, on a line of its own.
            let Some(r) = row(area, y) else { break };
            let note = format!("    {}", hub(&k.undoes(&who)));
            line(r, buf, Line::styled(fit(&note, w, t.ellipsis()), t.bad()));
            y += 1;
        }
    }
    y
}

/// Why a worker in a turn lags: `in a turn on claude for 4m: switches at
/// its next turn (to opencode)`.
pub fn in_turn_text(now: chrono::DateTime<chrono::Utc>, turn: &crate::tui::model::edit::InTurn) -> String {
    let to = match &turn.next {
        Some(a) => hub(a),
        None => "no rung".into(),
    };
    format!(
        "in a turn on {} for {}: switches at its next turn (to {to})",
        hub(&turn.agent),
        age_at(now, turn.since)
    )
}

/// Enter on the convergence line: the workers not yet on the revision
/// written, and why (healthy on an older revision and for how long since
/// the write, stale, lost).
pub fn rollout_title_and_lines(cx: &Cx) -> (String, Vec<Line<'static>>) {
    let t = cx.theme;
    let Some(r) = &cx.model.edit.rollout else {
        return ("rollout".into(), vec![Line::raw("no write to follow")]);
    };
    let now = cx.now;
    let (behind, all) = cx.model.rollout_behind();
    let since =
        r.at.map(|at| format!(", written {} ago", age_at(now, at)))
            .unwrap_or_default();
    let count = |s: WorkerState| behind.iter().filter(|b| b.state == s).count();
    let mut out = vec![
        Line::from(vec![Span::styled(
            format!(
                "{}/{} healthy {}workers on {}{since}",
                count_text(r.on),
                count_text(r.healthy),
                if r.cohort { "cohort " } else { "" },
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
    if r.in_turn > 0 {
        out.insert(
            2,
            Line::raw(format!(
                "{} of them in a turn: each switches at its next turn",
                count_text(r.in_turn)
            )),
        );
    }
    if all == 0 {
        out.push(Line::styled("every worker reports it", t.ok()));
    }
    for b in &behind {
        let rev = b.revision.as_deref().map_or("no revision".into(), hub);
        let heard = age_at(now, b.heard);
        let (why, style) = match (b.state, &b.in_turn) {
            (WorkerState::Healthy, Some(turn)) => (in_turn_text(now, turn), t.warn()),
            (WorkerState::Healthy, None) => (
                format!("healthy, still reports {rev}: last heard {heard} ago"),
                t.warn(),
            ),
            (WorkerState::Stale, _) => {
                (format!("stale: last heard {heard} ago, on {rev}"), t.warn())
            }
            (WorkerState::Lost, _) => (format!("lost: last heard {heard} ago, on {rev}"), t.bad()),
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

/// The keys that change the list, which go on while a write whose answer
/// was lost is checked by its key.
fn goes_on_while_checking(action: Action) -> bool {
    matches!(
        action,
        Action::MoveAgentDown
            | Action::MoveAgentUp
            | Action::RemoveAgent
            | Action::AddAgent
            | Action::Undo
            | Action::Redo
    )
}

/// A key that changes the list (`J`/`K`/`d`/`u`/`C-r`) on the agent `sel`:
/// what the status line says, or why nothing changed; `None` for any other
/// key. `follow` is where the cursor goes after it.
fn list_key(
    plan: &mut PendingEdit,
    action: Action,
    sel: Option<&str>,
    follow: &mut Option<String>,
) -> Option<Result<String, String>> {
    let at = sel.and_then(|a| plan.order().iter().position(|x| x == a));
    Some(match action {
        Action::MoveAgentDown | Action::MoveAgentUp => match at {
            None => Err("select an agent of the list to move it".into()),
            Some(i) => {
                let r = if action == Action::MoveAgentDown {
                    plan.move_down(i)
                } else {
                    plan.move_up(i)
                };
                r.map(|to| format!("{} to rank {to} (u undoes)", sel.unwrap_or_default()))
                    .map_err(|e| e.to_string())
            }
        },
        Action::RemoveAgent => match at {
            None => Err("select an agent of the list to remove it".into()),
            Some(i) => plan
                .remove(i)
                .map(|a| {
                    let o = plan.order();
                    *follow = o.get(i).or(o.last()).cloned();
                    format!("{a} removed (u undoes)")
                })
                .map_err(|e| e.to_string()),
        },
        Action::Undo => Ok(if plan.undo() { "undone" } else { "nothing to undo" }.into()),
        Action::Redo => Ok(if plan.redo() { "redone" } else { "nothing to redo" }.into()),
        _ => return None,
    })
}

impl Edit {
    /// An edit key on the Ladder, in a session that holds a writer.
    /// While a write whose answer was lost is checked by its key, the
    /// list's keys go on (what they do is replayed onto the write once it
    /// is found on the hub); `w`, `e` and the rest wait for its answer.
    fn action(
        &mut self,
        m: &mut Model,
        action: Action,
        sel: Option<String>,
        fx: &mut Vec<Effect>,
        asks: &mut Vec<Ask>,
    ) {
        if action.is_rollout_step() {
            return self.ask_step(m, action, asks);
        }
        if m.edit.sending.is_some() && m.edit.checking.is_some() && !goes_on_while_checking(action) {
            say(asks, "a write is checked by its key: this key waits for its answer (J/K/a/d/u go on)");
            return;
        }
        if m.edit.sending.is_some() && m.edit.checking.is_none() {
            say(asks, "a write is on its way");
            return;
        }
        if action == Action::EditDocument {
            if let Some(d) = mending(m).cloned() {
                return open_disk(m, &d, fx, asks);
            }
            match m.plan_mut() {
                Ok(_) => open_editor(m, fx, asks),
                Err(e) => say(asks, e),
            }
            return;
        }
        let plan = match m.plan_mut() {
            Ok(p) => p,
            Err(e) => return say(asks, e),
        };
        match action {
            Action::AddAgent => {
                self.mode = Mode::Adding {
                    text: String::new(),
                    error: None,
                    unknown: false,
                };
                return;
            }
            Action::Write => return self.review(m, asks),
            _ => {}
        }
        // Where the cursor goes after the key: with the agent (a move), or
        // (`d`) on the agent now in its place, as in vim and k9s, so `d d d`
        // removes three; past the end, the new last one.
        let mut follow = sel.clone();
        let Some(result) = list_key(plan, action, sel.as_deref(), &mut follow) else {
            return;
        };
        match result {
            Ok(t) => say(asks, t),
            Err(e) => say(asks, e),
        }
        m.edit.error = None;
        m.edit.rollout = None;
        asks.push(Ask::Reorder);
        if let Some(a) = follow {
            asks.push(Ask::Select(Detail::Agent(a)));
            asks.push(Ask::Reorder);
        }
    }

    /// `P` or `A`: the question, when a rollout bakes.
    fn ask_step(&mut self, m: &Model, action: Action, asks: &mut Vec<Ask>) {
        if super::staged::can_step(m, asks) {
            self.mode = Mode::Stepping {
                promote: action == Action::Promote,
            };
        }
    }

    /// `GET /v1/config` answered the file on disk, which does not validate:
    /// held as such (workers keep the list in force). A write that met it (a
    /// 412 asked for it) or a diff on screen goes back to the Ladder, saying
    /// why; `w` is held and `e` opens the file until it is mended.
    fn disk_invalid(&mut self, m: &mut Model, d: OnDisk, asks: &mut Vec<Ask>) {
        let rebase = std::mem::take(&mut m.edit.rebase_wanted);
        let reviewing = matches!(self.mode, Mode::Review { .. });
        let new = m.config.on_disk.as_ref() != Some(&d);
        let sentence = d.sentence();
        m.config.on_disk = Some(d);
        if m.config.agents.is_empty() {
            m.config.agents = m.in_force();
        }
        if rebase || (reviewing && new) {
            self.mode = Mode::Editing;
        }
        let kept = if m.edit.is_pending() {
            " (your edit is kept)"
        } else {
            ""
        };
        if rebase {
            say(
                asks,
                format!(
                    "not written: {sentence}; e opens it as it stands on disk, the reason on top{kept}"
                ),
            );
        } else if new && (reviewing || m.edit.is_pending()) {
            say(
                asks,
                format!(
                    "{sentence}: w is held until it is mended; e opens it as it stands on disk{kept}"
                ),
            );
        }
    }

    /// `R` on History: the selected revision's order becomes the pending
    /// order (on the hub's current document), shown on the Ladder to review.
    fn revert(&mut self, m: &mut Model, selected: Option<HistKey>, asks: &mut Vec<Ask>) {
        if m.edit.sending.is_some() {
            say(asks, "a write is on its way");
            return;
        }
        let Some(entry) = selected
            .and_then(|k| m.history_entry(&k))
            .map(|h| (h.revision.clone(), h.agents.clone()))
        else {
            say(asks, "select a revision to revert to");
            return;
        };
        let (revision, agents) = entry;
        let plan = match m.plan_mut() {
            Ok(p) => p,
            Err(e) => return say(asks, e),
        };
        plan.set_order(agents);
        let pending = plan.is_pending();
        if pending {
            asks.push(Ask::Land(LADDER));
            m.edit.rollout = None;
        }
        say(
            asks,
            if pending {
                format!("{revision}'s order is pending: review it, then w (u undoes)")
            } else {
                format!("the hub already holds {revision}'s order")
            },
        );
        asks.push(Ask::Reorder);
    }

    /// `w`: the diff screen of the whole document, or why it cannot be
    /// written.
    fn review(&mut self, m: &mut Model, asks: &mut Vec<Ask>) {
        if let Some(mut c) = m.edit.overtaken.as_ref().and_then(|o| o.conflict.clone()) {
            // Their write touched agents this edit touched too: choose before
            // any diff, on the edit as it stands now (moves made since count).
            if let Some(p) = &m.edit.plan {
                c.follow(p);
            }
            self.open_conflict(m, c);
            say(asks, CONFLICT_SAY);
            return;
        }
        if let Some(d) = mending(m) {
            let on = m
                .edit
                .plan
                .as_ref()
                .filter(|p| p.is_pending())
                .map(|p| format!("cannot write onto revision {}: ", p.base_revision()))
                .unwrap_or_default();
            let kept = if on.is_empty() {
                ""
            } else {
                " (your edit is kept)"
            };
            say(
                asks,
                format!(
                    "{on}{}; e opens it as it stands on disk to mend it{kept}",
                    d.sentence()
                ),
            );
            return;
        }
        let Some(plan) = m.edit.plan.as_ref().filter(|p| p.is_pending()) else {
            say(asks, "nothing to write: no pending edit");
            return;
        };
        let made = plan
            .check()
            .and_then(|()| Ok((plan.render()?, plan.diff()?)));
        match made {
            Ok((text, diff)) => {
                self.mode = Mode::Review {
                    text,
                    if_match: plan.base_revision().to_string(),
                    diff,
                    scroll: 0,
                }
            }
            Err(e) => say(asks, format!("cannot write: {e} (the edit is kept)")),
        }
    }

    /// A key while the add prompt, the diff, the conflict or the quit
    /// question is open (the key table's `Add`, `Review`, `Conflict` and
    /// `Quitting` scopes).
    fn screen_key(
        &mut self,
        m: &mut Model,
        k: KeyEvent,
        fx: &mut Vec<Effect>,
        asks: &mut Vec<Ask>,
    ) {
        let scope = match self.mode {
            Mode::Editing => return,
            Mode::ConfirmQuit => Scope::Quitting,
            Mode::Adding { .. } => Scope::Add,
            Mode::Review { .. } => Scope::Review,
            Mode::Conflict { .. } => Scope::Conflict,
            Mode::Cohort { .. } => Scope::CohortAsk,
            Mode::Stepping { .. } => Scope::Stepping,
        };
        let action = keys::action_in(scope, &k);
        if action == Some(Action::Quit) {
            asks.push(Ask::Quit);
            return;
        }
        match self.mode {
            Mode::Editing => {}
            Mode::ConfirmQuit => {
                if action == Some(Action::Yes) {
                    asks.push(Ask::Quit);
                } else {
                    self.mode = Mode::Editing;
                }
            }
            Mode::Adding { .. } => self.add_key(m, action, &k, asks),
            Mode::Review { .. } => self.review_key(m, action, fx, asks),
            Mode::Conflict { .. } => self.conflict_key(m, action, asks),
            Mode::Cohort { .. } => self.cohort_key(m, action, &k, fx, asks),
            Mode::Stepping { promote } => {
                self.mode = Mode::Editing;
                if action == Some(Action::Yes) {
                    super::staged::confirm_step(promote, fx, asks);
                } else {
                    say(asks, "nothing sent: the rollout bakes on");
                }
            }
        }
    }

    /// A key of the cohort prompt: typed into its field, or Enter sends
    /// the diff's document to a cohort first (Esc: back to the diff).
    fn cohort_key(
        &mut self,
        m: &mut Model,
        action: Option<Action>,
        k: &KeyEvent,
        fx: &mut Vec<Effect>,
        asks: &mut Vec<Ask>,
    ) {
        use super::staged::Asked;
        let Mode::Cohort { review, ask } = &mut self.mode else {
            return;
        };
        match ask.key(action, keys::text_char(k)) {
            Asked::Stay => {}
            Asked::Back => {
                // Esc on the cohort's question: the owner's `y` writes to
                // everyone again.
                if m.edit.cohort_wanted.take().is_some() {
                    say(asks, "not to a cohort: y writes to every worker, C asks for a cohort");
                }
                self.mode = (**review).clone();
            }
            Asked::Start(query) => {
                let Mode::Review { text, if_match, .. } = &**review else {
                    self.mode = Mode::Editing;
                    return;
                };
                let (text, if_match) = (text.clone(), if_match.clone());
                say(
                    asks,
                    format!("sending to a cohort first ({query}) onto {if_match}"),
                );
                m.edit.sending = Some(if_match.clone());
                m.edit.cohort_wanted = Some(query);
                self.mode = Mode::Editing;
                fx.push(Effect::StartRollout {
                    text,
                    if_match,
                    query,
                });
            }
        }
    }

    /// A key of the add prompt: the name typed, completed, taken.
    fn add_key(
        &mut self,
        m: &mut Model,
        action: Option<Action>,
        k: &KeyEvent,
        asks: &mut Vec<Ask>,
    ) {
        let Mode::Adding { text, unknown, .. } = &mut self.mode else {
            return;
        };
        match action {
            // Esc on the question goes back to the name, kept.
            Some(Action::Cancel) if *unknown => *unknown = false,
            Some(Action::Cancel) => self.mode = Mode::Editing,
            Some(Action::Accept) => self.add_typed(m, asks),
            Some(Action::PromptEraseAll) => self.set_add_text(m, String::new()),
            Some(Action::Complete) => {
                let typed = text.clone();
                if let Some(c) = m
                    .add_choices()
                    .into_iter()
                    .find(|c| c.starts_with(typed.as_str()))
                {
                    self.set_add_text(m, c);
                }
            }
            Some(Action::Erase) => {
                text.pop();
                let t = text.clone();
                self.set_add_text(m, t);
            }
            Some(_) => {}
            None => {
                if let Some(c) = keys::text_char(k) {
                    text.push(c);
                    let t = text.clone();
                    self.set_add_text(m, t);
                }
            }
        }
    }

    /// A key of the diff under review: `y` writes it.
    fn review_key(
        &mut self,
        m: &mut Model,
        action: Option<Action>,
        fx: &mut Vec<Effect>,
        asks: &mut Vec<Ask>,
    ) {
        let Mode::Review {
            text,
            if_match,
            scroll,
            ..
        } = &mut self.mode
        else {
            return;
        };
        match action {
            Some(Action::Cohort) => {
                self.mode = Mode::Cohort {
                    review: Box::new(self.mode.clone()),
                    ask: super::staged::CohortAsk::default(),
                };
            }
            Some(Action::Yes) if m.edit.cohort_wanted.is_some() => {
                let ask = m.edit.cohort_wanted.as_ref().map(super::staged::CohortAsk::of);
                self.mode = Mode::Cohort {
                    review: Box::new(self.mode.clone()),
                    ask: ask.unwrap_or_default(),
                };
                say(asks, "this edit goes to a cohort first: Enter starts it (Esc: back to the diff, where y then writes to everyone)");
            }
            Some(Action::Yes) => {
                let (text, if_match) = (text.clone(), if_match.clone());
                say(asks, format!("writing onto {if_match}"));
                m.edit.sending = Some(if_match.clone());
                m.edit.sent = m.edit.plan.clone().map(Box::new);
                self.mode = Mode::Editing;
                fx.push(match m.edit.lost.take() {
                    // The write whose outcome is unknown, again: its key.
                    Some(l) if l.text == text && l.if_match == if_match => Effect::Recheck {
                        text,
                        if_match,
                        key: l.key,
                    },
                    _ => Effect::Write { text, if_match },
                });
            }
            Some(Action::Cancel) => self.mode = Mode::Editing,
            Some(Action::ScrollDown) => *scroll += 1,
            Some(Action::ScrollUp) => *scroll = scroll.saturating_sub(1),
            _ => {}
        }
    }

    /// A key of the conflict screen: a side for the clash under the
    /// cursor, carry the merge, or drop the edit (asked twice).
    fn conflict_key(&mut self, m: &mut Model, action: Option<Action>, asks: &mut Vec<Ask>) {
        let Mode::Conflict { confirm_drop, at } = &mut self.mode else {
            return;
        };
        let Some(conflict) = m.edit.conflict.as_mut() else {
            self.mode = Mode::Editing;
            return;
        };
        match action {
            Some(a @ (Action::KeepTheirs | Action::KeepMine)) => {
                *confirm_drop = false;
                let choice = if a == Action::KeepMine {
                    Choice::Mine
                } else {
                    Choice::Theirs
                };
                conflict.choose(*at, choice);
                // The Ladder shows the merged result as chosen so far.
                let merged = conflict.merged();
                let clashes = conflict.clashes.len();
                m.edit.plan = Some(merged);
                if *at + 1 < clashes {
                    *at += 1;
                }
                asks.push(Ask::Reorder);
            }
            Some(Action::ScrollDown) => {
                *confirm_drop = false;
                *at = (*at + 1).min(conflict.clashes.len().saturating_sub(1));
            }
            Some(Action::ScrollUp) => {
                *confirm_drop = false;
                *at = at.saturating_sub(1);
            }
            Some(Action::Carry) => self.carry_conflict(m, asks),
            Some(Action::DropMine) if !*confirm_drop => *confirm_drop = true,
            Some(Action::Yes) if *confirm_drop => {
                let c = self.close_conflict(m);
                m.edit.plan = Some(c.drop_mine());
                m.edit.overtaken = None;
                m.edit.undoes = None;
                say(asks, "your pending edit was dropped");
                asks.push(Ask::Reorder);
            }
            _ => *confirm_drop = false,
        }
    }

    /// `c` on the conflict: the merged result is the pending edit, with
    /// what it undoes of theirs.
    fn carry_conflict(&mut self, m: &mut Model, asks: &mut Vec<Ask>) {
        let c = self.close_conflict(m);
        let undone = c.undone();
        let revision = c.theirs_revision().to_string();
        m.edit.plan = Some(c.carry());
        m.edit.overtaken = None;
        m.edit.undoes = (!undone.is_empty()).then_some(Undoes {
            revision,
            clashes: undone,
        });
        say(
            asks,
            if m.edit.undoes.is_some() {
                "the merged result is pending: w shows the diff and what it undoes"
            } else {
                "the merged result is pending, theirs where both changed an agent: w shows the diff"
            },
        );
        asks.push(Ask::Reorder);
    }

    /// The conflict `c` to choose on (the model holds it, this screen the
    /// choice under the cursor).
    fn open_conflict(&mut self, m: &mut Model, c: Box<crate::plan::Conflict>) {
        m.edit.conflict = Some(c);
        self.mode = Mode::Conflict {
            confirm_drop: false,
            at: 0,
        };
    }

    /// The conflict is settled (carried or dropped): back to the Ladder.
    fn close_conflict(&mut self, m: &mut Model) -> Box<crate::plan::Conflict> {
        self.mode = Mode::Editing;
        m.edit.conflict.take().expect("a conflict on screen")
    }

    fn set_add_text(&mut self, m: &mut Model, t: String) {
        let error = if t.is_empty() {
            None
        } else {
            m.edit
                .plan
                .as_ref()
                .and_then(|p| p.check_name(&t).err())
                .map(|e| e.to_string())
        };
        self.mode = Mode::Adding {
            text: t,
            error,
            unknown: false,
        };
    }

    fn add_typed(&mut self, m: &mut Model, asks: &mut Vec<Ask>) {
        let name = text_of(&self.mode);
        let asked = matches!(self.mode, Mode::Adding { unknown: true, .. });
        let valid = m
            .edit
            .plan
            .as_ref()
            .is_some_and(|p| p.check_name(&name).is_ok());
        if valid && !asked && unheard_of(m, &name) {
            // Ask before the harm: Enter again adds it anyway.
            self.mode = Mode::Adding {
                text: name,
                error: None,
                unknown: true,
            };
            return;
        }
        let Some(plan) = m.edit.plan.as_mut() else {
            self.mode = Mode::Editing;
            return;
        };
        match plan.add(&name, None) {
            Ok(at) => {
                self.mode = Mode::Editing;
                // A new edit ends the last write's line, as a move does.
                m.edit.error = None;
                m.edit.rollout = None;
                say(asks, format!("{name} added at rank {at} (u undoes)"));
                asks.push(Ask::Reorder);
            }
            Err(e) => {
                // The prompt stays open with what was typed.
                self.mode = Mode::Adding {
                    text: name,
                    error: Some(e.to_string()),
                    unknown: false,
                };
            }
        }
    }

    /// The hub answered the write.
    fn written(
        &mut self,
        m: &mut Model,
        r: Result<ConfigAccepted, ClientError>,
        fx: &mut Vec<Effect>,
        asks: &mut Vec<Ask>,
    ) {
        self.answered(m, r, false, fx, asks);
    }

    /// The hub's answer to a write: `checked` when it is the answer to a
    /// write whose first answer was lost, asked again by its key.
    fn answered(
        &mut self,
        m: &mut Model,
        r: Result<ConfigAccepted, ClientError>,
        checked: bool,
        fx: &mut Vec<Effect>,
        asks: &mut Vec<Ask>,
    ) {
        let not_written = if checked {
            "checked: not written"
        } else {
            "not written"
        };
        let sent = m.edit.sent.take();
        match r {
            Ok(acc) => self.on_the_hub(m, acc, sent, checked, fx, asks),
            Err(ClientError::Conflict { .. }) => {
                self.mode = Mode::Editing;
                m.edit.sending = None;
                m.edit.rebase_wanted = true;
                say(
                    asks,
                    if checked {
                        "checked: not written, the hub's document changed first: fetching it to rebase (w retries)"
                    } else {
                        "the hub's document changed since this edit began: fetching it to rebase"
                    },
                );
                fx.push(Effect::FetchConfig);
                fx.push(Effect::FetchHistory);
            }
            Err(ClientError::InConflict { code, message }) if code == "rollout_in_progress" => {
                // A rollout bakes: the edit waits for it, kept.
                self.mode = Mode::Editing;
                m.edit.sending = None;
                let e = super::staged::in_progress(m, &message);
                say(asks, format!("{not_written}: {e} (the edit is kept)"));
                m.edit.error = Some(e);
                m.edit.waited_on = m.staged.baking().map(|v| v.id.clone());
            }
            Err(e) => {
                self.mode = Mode::Editing;
                m.edit.sending = None;
                m.edit.waited_on = None;
                let e = e.to_string();
                say(
                    asks,
                    if checked {
                        format!("{not_written}: {e} (the edit is kept: w retries)")
                    } else {
                        format!("write failed: {e} (the edit is kept: w retries)")
                    },
                );
                m.edit.error = Some(e);
            }
        }
    }

    /// The write is on the hub as `acc` (`checked`: found by its key):
    /// the edit is done. What the owner did while its outcome was not
    /// known (`sent` is the edit as written) stands on it, pending, never
    /// written with it.
    fn on_the_hub(
        &mut self,
        m: &mut Model,
        acc: ConfigAccepted,
        sent: Option<Box<PendingEdit>>,
        checked: bool,
        fx: &mut Vec<Effect>,
        asks: &mut Vec<Ask>,
    ) {
        let since = sent.and_then(|sent| {
            let text = sent.render().ok()?;
            m.edit.plan.as_ref()?.after_written(&sent, &text, &acc.revision)
        });
        let more = if since.is_some() {
            "; what you changed since is pending onto it (w shows its diff)"
        } else {
            ""
        };
        say(
            asks,
            if checked {
                format!("checked: your write {} is on the hub{more}", acc.revision)
            } else {
                format!("written: revision {}{more}", acc.revision)
            },
        );
        m.config.agents = acc.agents;
        m.config.revision = Some(acc.revision.clone());
        m.config.text = None;
        // A new edit pending ends the written one's line, as a key would.
        let rollout = since.is_none().then(|| Rollout {
            revision: acc.revision,
            at: Some(m.now()),
            ..Rollout::default()
        });
        m.edit = LadderEdit {
            plan: since,
            rollout,
            ..LadderEdit::default()
        };
        if !matches!(self.mode, Mode::Adding { .. }) {
            // The add prompt opened while checking keeps its name.
            self.mode = Mode::Editing;
        }
        m.refresh_projection();
        fx.push(Effect::FetchConfig);
        fx.push(Effect::FetchHistory);
    }

    /// The answer to the write on its way was lost (`why`): it is asked
    /// again by its key; the status line says so until the hub answers.
    pub fn write_lost(&mut self, m: &mut Model, why: String, asks: &mut Vec<Ask>) {
        if m.edit.sending.is_none() {
            return;
        }
        say(asks, checking_words(&why));
        m.edit.checking = Some(why);
    }

    /// A write whose answer was lost, asked again by its key: on the hub
    /// (the edit is done; it is not someone else's write) or not written
    /// (the edit is kept, as a refused write's is).
    pub fn write_checked(
        &mut self,
        m: &mut Model,
        r: Result<ConfigAccepted, ClientError>,
        fx: &mut Vec<Effect>,
        asks: &mut Vec<Ask>,
    ) {
        m.edit.checking = None;
        m.edit.lost = None;
        self.answered(m, r, true, fx, asks);
        self.sync(m);
    }

    /// A write whose answer was lost and whose hub could not be asked: it
    /// may be on the hub. The edit is kept with what was sent and its key,
    /// asked again as soon as the hub answers ([`Edit::recheck_lost`]).
    pub fn write_unknown(&mut self, m: &mut Model, lost: LostWrite, error: String, asks: &mut Vec<Ask>) {
        if !matches!(self.mode, Mode::Adding { .. }) {
            self.mode = Mode::Editing;
        }
        m.edit.sending = None;
        m.edit.checking = None;
        m.edit.lost = Some(lost);
        // `sent` stays: the write is asked again, and what is done
        // meanwhile goes onto it if it is found.
        say(
            asks,
            "may not have been written: asked again by its key when the hub answers (the edit is kept)",
        );
        m.edit.error = Some(format!("may not have been written: {error}"));
        self.sync(m);
    }

    /// The hub answers again (a document arrived) and a write's outcome is
    /// unknown: ask it by the write's key before the edit meets the new
    /// revision, so our own write is never taken for a colleague's.
    pub fn recheck_lost(&mut self, m: &mut Model, fx: &mut Vec<Effect>, asks: &mut Vec<Ask>) {
        if m.edit.sending.is_some() {
            return;
        }
        let Some(lost) = m.edit.lost.clone() else {
            return;
        };
        m.edit.sending = Some(lost.if_match.clone());
        m.edit.checking = Some("the hub answers again".into());
        say(asks, checking_words("the hub answers again"));
        fx.push(Effect::Recheck {
            text: lost.text,
            if_match: lost.if_match,
            key: lost.key,
        });
    }

    /// The hub answered `C`'s rollout: started (the edit is done), or
    /// refused as a write is (a 412 rebases, a 409 names the rollout
    /// baking, anything else keeps the edit).
    pub fn rollout_started(
        &mut self,
        m: &mut Model,
        r: Result<crate::rollout::wire::RolloutView, ClientError>,
        fx: &mut Vec<Effect>,
        asks: &mut Vec<Ask>,
    ) {
        match r {
            Ok(v) => {
                self.mode = Mode::Editing;
                super::staged::started(m, &v, fx, asks);
            }
            Err(e) => {
                let rebase = matches!(e, ClientError::Conflict { .. });
                self.written(m, Err(e), fx, asks);
                if rebase {
                    say(asks, "the hub's document changed since this edit began: fetching it to rebase; y on the new diff asks for the cohort again");
                }
            }
        }
        self.sync(m);
    }

    /// The stream said who made `revision` (`by`, the hub's word).
    pub fn heard(&mut self, revision: &str, by: &str) {
        if by == crate::rollout::BY_HAND_EDIT {
            self.by_hand = Some(revision.to_string());
        }
    }

    /// How `revision` came about, as the status line says it after it:
    /// `R was changed by hand on disk` for a hand edit of the hub's file,
    /// else `R was written`.
    fn came_about(&self, m: &Model, revision: &str) -> String {
        let by_hand = match m.config.written(revision) {
            Some(h) => h.by == crate::rollout::BY_HAND_EDIT,
            None => self.by_hand.as_deref() == Some(revision),
        };
        if by_hand {
            format!("{revision} was changed by hand on disk")
        } else {
            format!("{revision} was written")
        }
    }

    /// A newer document than the pending edit's came in (a colleague wrote):
    /// the edit is replayed onto it at once, and an open diff is remade onto
    /// it, so `w` never shows a diff against a revision that is gone; when
    /// their write changed the list, `w` (or the open diff) shows the conflict
    /// to choose on first. A write on its way is left to the 412 it meets.
    fn overtaken(&mut self, m: &mut Model, theirs: &str, revision: &str, asks: &mut Vec<Ask>) {
        if m.edit.sending.is_some() || !m.edit.is_pending() {
            return;
        }
        let Some(plan) = m.edit.plan.as_ref() else {
            return;
        };
        if plan.base_revision() == revision {
            return;
        }
        let from = m
            .edit
            .overtaken
            .as_ref()
            .map_or_else(|| plan.base_revision().to_string(), |o| o.from.clone());
        let open = matches!(self.mode, Mode::Review { .. } | Mode::Conflict { .. });
        // A conflict not chosen on yet stays one on the newer revision: the
        // edit as it was before it (with what was done on the Ladder since)
        // is replayed, not the merged result shown meanwhile, which keeps
        // mine for the conflicting agents.
        let outstanding = match &self.mode {
            Mode::Conflict { .. } => m.edit.conflict.as_deref(),
            _ => m
                .edit
                .overtaken
                .as_ref()
                .and_then(|o| o.conflict.as_deref()),
        };
        let source = outstanding.map_or_else(|| plan.clone(), |c| c.mine_now(plan));
        let came = self.came_about(m, revision);
        match source.rebase(theirs, revision) {
            Ok(Rebased::Replayed(p)) => {
                let merged = p.base_order() != source.base_order();
                m.edit.plan = Some(p);
                m.edit.overtaken = Some(Overtaken {
                    from,
                    revision: revision.to_string(),
                    conflict: None,
                    merged,
                });
                if open {
                    self.review(m, asks);
                }
                let onto = if open {
                    "the diff is onto it: y sends"
                } else {
                    "w shows the diff onto it"
                };
                say(
                    asks,
                    if merged {
                        format!(
                            "{came} while your edit was pending and changed the list: your edit is replayed onto it, both stand ({onto})"
                        )
                    } else {
                        format!(
                            "{came} while your edit was pending; it left the list alone: your order now stands on it ({onto})"
                        )
                    },
                );
            }
            Ok(Rebased::AlreadyThere(p)) => {
                m.edit.plan = Some(p);
                self.mode = Mode::Editing;
                m.edit.overtaken = None;
                say(
                    asks,
                    format!(
                        "{came} while your edit was pending and holds your order: nothing pending"
                    ),
                );
            }
            Ok(Rebased::ListChanged(c)) => {
                // The Ladder shows the edit replayed onto their list (mine
                // kept where both touched an agent, until chosen).
                m.edit.plan = Some(c.merged());
                m.edit.overtaken = Some(Overtaken {
                    from,
                    revision: revision.to_string(),
                    conflict: Some(c),
                    merged: true,
                });
                if open {
                    self.review(m, asks);
                } else {
                    say(
                        asks,
                        format!(
                            "{came} while your edit was pending and changed agents yours did: w shows theirs and yours to choose"
                        ),
                    );
                }
            }
            Err(e) => say(
                asks,
                format!("cannot replay your edit onto {revision}: {e} (the edit is kept)"),
            ),
        }
    }

    /// After a 412: the pending order onto the hub's current document.
    fn rebase_onto(&mut self, m: &mut Model, theirs: &str, revision: &str, asks: &mut Vec<Ask>) {
        let Some(plan) = m.edit.plan.as_ref() else {
            return;
        };
        // `C`'s edit stays one for a cohort (a 412 on its start).
        let y = if m.edit.cohort_wanted.is_some() {
            "y asks for the cohort again"
        } else {
            "y sends"
        };
        match plan.rebase(theirs, revision) {
            Ok(crate::plan::Rebased::Replayed(p)) => {
                let whole = p
                    .typed()
                    .is_some_and(|t| differs_outside_list(t, p.base_text()));
                let merged = p.base_order() != plan.base_order();
                // Said on the Ladder as an overtaking write is: the edit
                // stands on `revision` now, begun where it was.
                if let Some(o) = m.edit.overtaken.as_mut() {
                    o.revision = revision.to_string();
                    o.conflict = None;
                    o.merged |= merged;
                }
                m.edit.plan = Some(p);
                self.review(m, asks);
                say(
                    asks,
                    if whole {
                        format!(
                            "onto {revision}: the document from $EDITOR is kept whole; its new diff shows what of the other change it undoes ({y})"
                        )
                    } else if merged {
                        format!(
                            "replayed onto {revision}: their change of the list and yours both stand; review the new diff ({y})"
                        )
                    } else {
                        format!("replayed onto {revision}: review the new diff ({y})")
                    },
                );
            }
            Ok(crate::plan::Rebased::AlreadyThere(p)) => {
                m.edit.plan = Some(p);
                m.edit.overtaken = None;
                self.mode = Mode::Editing;
                say(
                    asks,
                    format!("the hub already holds this order at {revision}"),
                );
            }
            Ok(crate::plan::Rebased::ListChanged(c)) => {
                m.edit.plan = Some(c.merged());
                self.open_conflict(m, c);
                say(asks, CONFLICT_SAY);
                asks.push(Ask::Reorder);
            }
            Err(e) => say(
                asks,
                format!("cannot rebase onto {revision}: {e} (the edit is kept)"),
            ),
        }
    }

    /// The body, when the editor holds it; false when the view draws it.
    fn body(&self, cx: &Cx, area: Rect, buf: &mut Buffer) -> bool {
        match &self.mode {
            Mode::Conflict { confirm_drop, at } => {
                let Some(conflict) = cx.model.edit.conflict.as_ref() else {
                    return false;
                };
                draw_conflict(cx, area, buf, conflict, *confirm_drop, *at);
                true
            }
            // The diff stays under the cohort's question.
            Mode::Cohort { review, .. } => review_body(review, cx, area, buf),
            review => review_body(review, cx, area, buf),
        }
    }

    /// The status line, when a prompt of the editor holds it.
    fn status(&self, cx: &Cx, area: Rect, buf: &mut Buffer) -> bool {
        let t = cx.theme;
        let sending = cx.model.edit.sending.as_ref();
        let l = match &self.mode {
            Mode::Adding {
                text,
                unknown: true,
                ..
            } => {
                let meant = meant(cx.model, text)
                    .map(|c| format!(" (did you mean {}?)", hub(&c)))
                    .unwrap_or_default();
                Line::from(vec![
                    Span::styled(
                        format!(
                            "add {:?}? no worker reports it and it is not a known agent{meant}: ",
                            hub(text)
                        ),
                        t.warn(),
                    ),
                    Span::styled(
                        keys::hints(Hints::AddUnknown, &format!(" {} ", t.sep())),
                        t.title(),
                    ),
                ])
            }
            Mode::Adding { text, error, .. } => {
                let mut spans = vec![
                    Span::styled("add agent: ", t.title()),
                    Span::raw(hub(text).into_owned()),
                    Span::styled("_", t.title()),
                    Span::raw("   "),
                ];
                match error {
                    Some(e) => spans.push(Span::styled(hub(e).into_owned(), t.bad())),
                    None => {
                        let offer = cx
                            .model
                            .add_choices()
                            .into_iter()
                            .filter(|c| c.starts_with(text.as_str()))
                            .collect::<Vec<_>>()
                            .join(" ");
                        let mut s = keys::hints(Hints::Add, &format!(" {} ", t.sep()));
                        if !offer.is_empty() {
                            // Nothing to offer: the hints end the line.
                            s.push_str(&format!(" {} {}", t.sep(), hub(&offer)));
                        }
                        spans.push(Span::styled(s, t.muted()))
                    }
                }
                Line::from(spans)
            }
            Mode::ConfirmQuit => Line::styled(
                format!(
                    "an edit is pending and not written: quit anyway? {} · any other key stays",
                    keys::hints(Hints::Quitting, " · ")
                ),
                t.warn(),
            ),
            Mode::Cohort { ask, .. } => ask.line(t),
            Mode::Stepping { promote } => super::staged::step_question(cx.model, *promote, t),
            Mode::Editing | Mode::Review { .. } | Mode::Conflict { .. } => match sending {
                Some(_) if cx.model.edit.checking.is_some() => Line::styled(
                    format!(
                        "{}{}",
                        checking_words(cx.model.edit.checking.as_deref().unwrap_or("")),
                        t.ellipsis()
                    ),
                    t.warn(),
                ),
                Some(if_match) => Line::styled(
                    format!("writing onto {}{}", hub(if_match), t.ellipsis()),
                    t.warn(),
                ),
                None => return false,
            },
        };
        line(
            area,
            buf,
            fit_line(l, usize::from(area.width), t.ellipsis()),
        );
        true
    }
}

/// What the status line says while a write whose answer was lost is
/// asked again by its key.
fn checking_words(why: &str) -> String {
    format!("may not have been written: checking by its key ({why})")
}

/// The review's diff as the editor's body: true when `mode` is a review.
fn review_body(mode: &Mode, cx: &Cx, area: Rect, buf: &mut Buffer) -> bool {
    let Mode::Review {
        diff,
        if_match,
        scroll,
        ..
    } = mode
    else {
        return false;
    };
    draw_diff(cx, area, buf, diff, if_match, *scroll);
    true
}
