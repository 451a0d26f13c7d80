//! The owner's pending edit of the list (`J`/`K`/`a`/`d`/`u`/`C-r`/`w` on
//! the Ladder). Plain data: `overlays::edit` changes it, the Ladder pane and
//! the diff screen draw it, and the runner sends what `y` confirmed through
//! the session's `Writer` (nothing here or above it sees the writer).
//!
//! The order itself, undo/redo, the document it renders and the rebase
//! after a 412 are [`crate::plan::PendingEdit`]'s; this holds it together
//! with a write in flight and a conflict to choose on. Which screen is
//! open over it (the add prompt, the diff, the conflict, the quit
//! question) is the edit overlay's (`overlays::edit::Mode`).

use chrono::{DateTime, Utc};

use crate::plan::{Clash, Conflict, PendingEdit, Projection};
use crate::wire::WorkerState;

/// The pending edit and the screen it is on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LadderEdit {
    /// The edit, started from the hub's document by the first edit key.
    /// Kept (never dropped by a new revision) until written or dropped.
    pub plan: Option<PendingEdit>,
    /// `y` was pressed on the diff: the write is on its way, with this
    /// `If-Match`.
    pub sending: Option<String>,
    /// The edit as `y` sent it, while that write's outcome is not known:
    /// what the owner does meanwhile (the edit goes on while a lost answer
    /// is checked) is replayed onto the written revision once the write is
    /// found on the hub, a pending edit again (never written with it).
    pub sent: Option<Box<PendingEdit>>,
    /// The write on its way lost its answer (why): it is being asked
    /// again by its key ("may not have been written: checking").
    pub checking: Option<String>,
    /// A write whose answer was lost and whose hub could not be asked:
    /// it may be on the hub. Asked again by its key ([`LostWrite`]) when
    /// the hub next answers, before the edit meets any new revision.
    pub lost: Option<LostWrite>,
    /// The hub's list changed under the edit and some agents were touched
    /// by both: base, theirs, mine and the merged result, to choose on
    /// (the edit overlay's conflict screen shows it).
    pub conflict: Option<Box<Conflict>>,
    /// A 412 came back: the next document fetched is rebased onto.
    pub rebase_wanted: bool,
    /// `C` sent this edit to a cohort first with this query: until it is
    /// started, written or the owner says otherwise, `y` on its diff (a
    /// 412's rebase, a retry) asks for the cohort again, never writes to
    /// everyone.
    pub cohort_wanted: Option<crate::rollout::RolloutQuery>,
    /// The last write failed for this reason (5xx, timeout, hub down,
    /// refused); the edit stays and `w` retries.
    pub error: Option<String>,
    /// The last write was refused because this staged rollout baked
    /// (`409 rollout_in_progress`): once it ends, that failure is no
    /// longer true and goes.
    pub waited_on: Option<String>,
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
    /// A colleague wrote while this edit was pending: said on the Ladder
    /// until the edit is written or dropped.
    pub overtaken: Option<Overtaken>,
    /// A conflict was settled keeping mine for some agents: what of their
    /// change that undoes, said above the diff until written or dropped.
    pub undoes: Option<Undoes>,
}

/// A write whose outcome is unknown: exactly what was sent and its
/// Idempotency-Key, to send again as the same write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostWrite {
    pub text: String,
    pub if_match: String,
    pub key: String,
}

/// The conflicts settled with mine: each undoes a change of `revision`'s
/// writer (`this undoes alice's move of pi to #0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undoes {
    pub revision: String,
    pub clashes: Vec<Clash>,
}

/// Another write reached the hub while an edit was pending. The edit was
/// replayed onto it at once (so `w` shows the diff onto the revision the
/// hub holds), or, when their write changed the list too, `w` shows the
/// conflict to choose on before any diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overtaken {
    /// The revision the edit was begun on.
    pub from: String,
    /// The hub's revision now.
    pub revision: String,
    /// Their write changed the list: `w` opens this choice first.
    pub conflict: Option<Box<Conflict>>,
    /// Their write changed the list and the edit was replayed onto it
    /// with no conflict: both stand.
    pub merged: bool,
}

/// A document typed in `$EDITOR` that could not become the pending edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Draft {
    pub text: String,
    pub error: String,
}

/// A pending edit a session kept as a draft when it ended without asking
/// (the terminal closed, SIGHUP, SIGTERM), offered by the next session on
/// that hub: `o` makes it the pending edit again (replayed onto the hub's
/// revision now, as after a 412), `D` drops it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptDraft {
    /// The runner's name for it (where it is kept).
    pub id: String,
    /// When it was kept.
    pub at: DateTime<Utc>,
    /// The revision the edit was begun on, and that document.
    pub revision: String,
    pub base: String,
    /// The document as the edit would have written it.
    pub document: String,
    /// The pending order (what stands when the document does not render).
    pub order: Vec<String>,
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

/// `lines` (why the document is opened, as they are) as TOML comment lines
/// above `text`, for the editor: the hub's file as it stands on disk.
pub fn with_reason(lines: &[String], text: &str) -> String {
    let mut out = String::new();
    for l in lines.iter().flat_map(|l| l.lines()) {
        out.push_str(&format!("{NOTE} {l}\n"));
    }
    out.push_str(&format!(
        "{NOTE} mend it and save: w shows the diff before anything is written; quit without saving to cancel.\n\
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
    /// Healthy workers behind it because they are in a turn they will
    /// leave for the new list at its end (docs/hub-api.md, *Turns*).
    pub in_turn: usize,
    /// When it was written (the hub's clock as the TUI knows it).
    pub at: Option<DateTime<Utc>>,
    /// It went to a cohort first (`C`): `revision` is the staged
    /// rollout's candidate, and the counts and the list behind are of the
    /// cohort's workers only (the rest are told the accepted list). Once
    /// promoted it is followed over the whole fleet.
    pub cohort: bool,
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
    /// Behind because it is in a turn: it switches at the turn's end.
    pub in_turn: Option<InTurn>,
}

/// A worker's turn that keeps it off the written list until it ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InTurn {
    pub agent: String,
    pub since: DateTime<Utc>,
    /// Where the new list puts it (`None`: no rung).
    pub next: Option<String>,
}

impl InTurn {
    /// From a worker's lag, when the lag is a turn.
    pub fn of(lag: Option<crate::wire::Lag<'_>>) -> Option<InTurn> {
        match lag? {
            crate::wire::Lag::InTurn { agent, since, next } => Some(InTurn {
                agent: agent.to_string(),
                since,
                next: next.map(str::to_string),
            }),
            crate::wire::Lag::Behind => None,
        }
    }
}

/// At most this many workers behind are listed (the Workers view, filtered
/// on `rev:`, has them all).
pub const BEHIND_MAX: usize = 500;

impl Rollout {
    pub fn behind(&self) -> usize {
        self.healthy.saturating_sub(self.on)
    }
}

impl LadderEdit {
    /// An edit is waiting to be written.
    pub fn is_pending(&self) -> bool {
        self.plan.as_ref().is_some_and(|p| p.is_pending()) || self.conflict.is_some()
    }

    /// The pending order, if an edit changed it.
    pub fn order(&self) -> Option<&[String]> {
        self.plan
            .as_ref()
            .filter(|p| p.is_pending())
            .map(|p| p.order())
    }

    /// The order the owner has pending, in a conflict too (mine, kept
    /// until the choice).
    pub fn pending_order(&self) -> Option<&[String]> {
        match &self.conflict {
            Some(conflict) => Some(conflict.mine.order()),
            None => self.order(),
        }
    }
}
