//! The key table: every key of every scope (the panes, the filter prompt,
//! the add prompt, the diff under review, the conflict, the quit and
//! switch questions, the `:` command line and the context switcher), as
//! data with a description. Key handling, the `?` help and every hint on
//! screen are generated from [`BINDINGS`] and [`HINTS`], so they cannot
//! disagree. A new key is a line in [`BINDINGS`] (and, to show it in a
//! hint, in [`HINTS`]); `update` decides what its [`Action`] means.

use super::ids::{HISTORY, LADDER, PaneId};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// What a key asks for. `update` decides what it means in the current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The pane of this number (0 based; the digit keys, one per pane).
    ShowView(usize),
    NextView,
    PrevView,
    Down,
    Up,
    Top,
    Bottom,
    PageDown,
    PageUp,
    Filter,
    Sort,
    SortReverse,
    Detail,
    Back,
    Help,
    Refetch,
    Quit,
    /// The Failovers view filtered to the worker in view (`worker:<id>`).
    WorkerFailovers,
    /// The worker, failover or revision in view as the hub's JSON.
    Raw,
    /// The `:` command line.
    Command,
    // In the filter prompt (scope `Prompt`): every other key is text.
    PromptKeep,
    PromptClear,
    PromptRecall,
    PromptErase,
    PromptEraseAll,
    // Ladder edits (see `overlays::edit`); a read-only session refuses them.
    MoveAgentDown,
    MoveAgentUp,
    AddAgent,
    RemoveAgent,
    Undo,
    Redo,
    Write,
    /// The whole document in `$EDITOR`; what comes back is the pending edit.
    EditDocument,
    /// On History: the selected revision's order as a pending edit.
    Revert,
    /// On the diff under review: write it to a cohort first (a staged
    /// rollout), asking its size and bake.
    Cohort,
    /// On the Ladder: promote the staged rollout baking (asks first).
    Promote,
    /// On the Ladder: abort the staged rollout baking (asks first).
    Abort,
    /// On the Ladder: mark the selected rung down in the drill (again
    /// clears it). Writes nothing, so a read-only session has it too.
    Drill,
    // The prompts and questions over a pane (add, review, conflict, quit,
    // `:`, the context switcher, the switch question).
    /// Enter: add the name, run the command, switch to the context.
    Accept,
    /// Leave the prompt or screen without doing it.
    Cancel,
    /// Tab: complete the name typed.
    Complete,
    /// Backspace: erase a character.
    Erase,
    /// Erase everything typed.
    EraseAll,
    /// `y`: send, quit, drop, switch: what the question asked.
    Yes,
    /// `c` on the conflict: take the merged result (both edits, each
    /// conflicting agent as chosen).
    Carry,
    /// `t` on the conflict: the selected agent keeps theirs.
    KeepTheirs,
    /// `m` on the conflict: the selected agent keeps mine.
    KeepMine,
    /// `D` on the conflict: drop mine (asks again).
    DropMine,
    /// `o` while a draft an earlier session kept is offered: it becomes
    /// the pending edit again.
    OpenDraft,
    /// `D` while a draft is offered: drop it (its files too).
    DropDraft,
    ScrollDown,
    ScrollUp,
    /// Ctrl-Z: give the terminal back to the shell and stop (the runner's,
    /// whatever is on screen: scope `Runner`).
    Suspend,
}

impl Action {
    /// Keys that would change the hub's document.
    pub fn is_edit(self) -> bool {
        matches!(
            self,
            Action::MoveAgentDown
                | Action::MoveAgentUp
                | Action::AddAgent
                | Action::RemoveAgent
                | Action::Undo
                | Action::Redo
                | Action::Write
                | Action::EditDocument
                | Action::Revert
                | Action::Promote
                | Action::Abort
        )
    }

    /// Keys that act on a staged rollout while it bakes (listed only then).
    pub fn is_rollout_step(self) -> bool {
        matches!(self, Action::Promote | Action::Abort)
    }

    /// The cursor move this action is, if it is one.
    pub fn movement(self) -> Option<Move> {
        Some(match self {
            Action::Down => Move::Down,
            Action::Up => Move::Up,
            Action::Top => Move::Top,
            Action::Bottom => Move::Bottom,
            Action::PageDown => Move::PageDown,
            Action::PageUp => Move::PageUp,
            _ => return None,
        })
    }
}

/// A cursor move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Down,
    Up,
    Top,
    Bottom,
    PageDown,
    PageUp,
}

/// Where a binding holds: its scope is what is on screen taking keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every pane.
    Global,
    /// Only this pane.
    Only(PaneId),
    /// The filter prompt, where other keys are text.
    Prompt,
    /// The add prompt (`a`), where other keys are text.
    Add,
    /// The diff under review (`w`).
    Review,
    /// The conflict after a 412 that changed the list.
    Conflict,
    /// `q` with an edit pending: the question.
    Quitting,
    /// The `:` command line, where other keys are text.
    Command,
    /// The `:ctx` switcher.
    Picker,
    /// `:ctx` with an edit pending: the question.
    Switching,
    /// A draft an earlier session on this hub kept is offered: these keys
    /// answer it, every other key is the pane's.
    Draft,
    /// `C` on the diff: the cohort's size and the bake asked, where other
    /// keys are text.
    CohortAsk,
    /// `P` or `A` while a rollout bakes: the question.
    Stepping,
    /// Whatever is on screen, before the app sees the key: the keys of the
    /// terminal itself, which the runner owns (Ctrl-Z). The `?` help does
    /// not list them.
    Runner,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

const fn k(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        mods: KeyModifiers::NONE,
    }
}

const fn ctrl(c: char) -> Key {
    Key {
        code: KeyCode::Char(c),
        mods: KeyModifiers::CONTROL,
    }
}

const fn code(code: KeyCode) -> Key {
    Key {
        code,
        mods: KeyModifiers::NONE,
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Binding {
    pub keys: &'static [Key],
    /// How the keys are written in the help.
    pub label: &'static str,
    pub action: Action,
    /// What it does, as the help says it.
    pub help: &'static str,
    pub scope: Scope,
    /// How many of `keys` a hint names (the first ones).
    pub shown: usize,
    /// Panes where this key does nothing (the help leaves it out there).
    pub not_on: &'static [PaneId],
}

const fn b(
    keys: &'static [Key],
    label: &'static str,
    action: Action,
    help: &'static str,
    scope: Scope,
) -> Binding {
    Binding {
        keys,
        label,
        action,
        help,
        scope,
        shown: 1,
        not_on: &[],
    }
}

/// A binding of every pane but `panes`, where it does nothing.
const fn not_on(mut b: Binding, panes: &'static [PaneId]) -> Binding {
    b.not_on = panes;
    b
}

/// A binding whose hint names its first `shown` keys (`n/Esc back`).
const fn shown(mut b: Binding, shown: usize) -> Binding {
    b.shown = shown;
    b
}

use Scope::{
    Add, CohortAsk, Command, Conflict, Draft, Global, Only, Picker, Prompt, Quitting, Review,
    Runner, Stepping, Switching,
};

const DIGITS: &[Key] = &[
    k('1'),
    k('2'),
    k('3'),
    k('4'),
    k('5'),
    k('6'),
    k('7'),
    k('8'),
    k('9'),
];

pub const BINDINGS: &[Binding] = &[
    // The digit of each pane (the help lists one line per pane).
    b(DIGITS, "1-9", Action::ShowView(0), "view", Global),
    b(
        &[code(KeyCode::Tab)],
        "Tab",
        Action::NextView,
        "next view",
        Global,
    ),
    b(
        &[code(KeyCode::BackTab)],
        "S-Tab",
        Action::PrevView,
        "previous view",
        Global,
    ),
    b(
        &[k('j'), code(KeyCode::Down)],
        "j ↓",
        Action::Down,
        "cursor down",
        Global,
    ),
    b(
        &[k('k'), code(KeyCode::Up)],
        "k ↑",
        Action::Up,
        "cursor up",
        Global,
    ),
    b(
        &[k('g'), code(KeyCode::Home)],
        "g Home",
        Action::Top,
        "first row",
        Global,
    ),
    b(
        &[k('G'), code(KeyCode::End)],
        "G End",
        Action::Bottom,
        "last row",
        Global,
    ),
    b(
        &[code(KeyCode::PageDown), ctrl('f')],
        "PgDn",
        Action::PageDown,
        "page down",
        Global,
    ),
    b(
        &[code(KeyCode::PageUp), ctrl('b')],
        "PgUp",
        Action::PageUp,
        "page up",
        Global,
    ),
    b(
        &[k('/')],
        "/",
        Action::Filter,
        "filter this view (Esc clears)",
        Global,
    ),
    b(
        &[k('s')],
        "s",
        Action::Sort,
        "cycle the sort column",
        Global,
    ),
    b(
        &[k('S')],
        "S",
        Action::SortReverse,
        "reverse the sort",
        Global,
    ),
    b(
        &[code(KeyCode::Enter)],
        "Enter",
        Action::Detail,
        "detail of the selected row",
        Global,
    ),
    b(
        &[code(KeyCode::Esc)],
        "Esc",
        Action::Back,
        "close / clear the filter",
        Global,
    ),
    // A worker's failovers: there is no worker on the Ladder or History.
    not_on(
        b(
            &[k('f')],
            "f",
            Action::WorkerFailovers,
            "this worker's failovers",
            Global,
        ),
        &[LADDER, HISTORY],
    ),
    // The hub's JSON of a worker, failover, recovery or revision: an
    // agent of the Ladder has none.
    not_on(
        b(
            &[k('v')],
            "v",
            Action::Raw,
            "raw JSON, as the hub sent it",
            Global,
        ),
        &[LADDER],
    ),
    b(
        &[k(':')],
        ":",
        Action::Command,
        "jump: :workers :ladder :ctx, a worker id",
        Global,
    ),
    b(&[k('?')], "?", Action::Help, "this help", Global),
    b(
        &[k('r')],
        "r",
        Action::Refetch,
        "refetch everything now",
        Global,
    ),
    b(&[k('q'), ctrl('c')], "q C-c", Action::Quit, "quit", Global),
    b(
        &[ctrl('z')],
        "C-z",
        Action::Suspend,
        "suspend: back to the shell, `fg` returns",
        Runner,
    ),
    b(
        &[k('J')],
        "J",
        Action::MoveAgentDown,
        "move the selected agent down",
        Only(LADDER),
    ),
    b(
        &[k('K')],
        "K",
        Action::MoveAgentUp,
        "move the selected agent up",
        Only(LADDER),
    ),
    b(
        &[k('a')],
        "a",
        Action::AddAgent,
        "add an agent",
        Only(LADDER),
    ),
    b(
        &[k('d')],
        "d",
        Action::RemoveAgent,
        "remove the selected agent",
        Only(LADDER),
    ),
    b(
        &[k('u')],
        "u",
        Action::Undo,
        "undo a pending edit",
        Only(LADDER),
    ),
    b(
        &[ctrl('r')],
        "C-r",
        Action::Redo,
        "redo a pending edit",
        Only(LADDER),
    ),
    b(
        &[k('w')],
        "w",
        Action::Write,
        "write: diff, then y sends",
        Only(LADDER),
    ),
    b(
        &[k('e')],
        "e",
        Action::EditDocument,
        "edit the whole document in $EDITOR (then w, y)",
        Only(LADDER),
    ),
    b(
        &[k('x')],
        "x",
        Action::Drill,
        "drill: mark this rung down/up",
        Only(LADDER),
    ),
    b(
        &[k('P')],
        "P",
        Action::Promote,
        "promote the staged rollout baking: every worker gets it (asks first)",
        Only(LADDER),
    ),
    b(
        &[k('A')],
        "A",
        Action::Abort,
        "abort the staged rollout baking: the cohort goes back (asks first)",
        Only(LADDER),
    ),
    b(
        &[k('R')],
        "R",
        Action::Revert,
        "revert to this revision's order (a pending edit to review)",
        Only(HISTORY),
    ),
    b(
        &[code(KeyCode::Enter)],
        "Enter",
        Action::PromptKeep,
        "keep",
        Prompt,
    ),
    b(
        &[code(KeyCode::Esc)],
        "Esc",
        Action::PromptClear,
        "clear",
        Prompt,
    ),
    b(
        &[code(KeyCode::Up)],
        "↑",
        Action::PromptRecall,
        "recall",
        Prompt,
    ),
    b(
        &[code(KeyCode::Backspace)],
        "Bksp",
        Action::PromptErase,
        "erase",
        Prompt,
    ),
    b(
        &[ctrl('u')],
        "C-u",
        Action::PromptEraseAll,
        "erase all",
        Prompt,
    ),
    b(&[ctrl('c')], "C-c", Action::Quit, "quit", Prompt),
    // The add prompt (`a`).
    b(
        &[code(KeyCode::Enter)],
        "Enter",
        Action::Accept,
        "add the name",
        Add,
    ),
    b(
        &[code(KeyCode::Tab)],
        "Tab",
        Action::Complete,
        "complete the name",
        Add,
    ),
    b(
        &[code(KeyCode::Esc)],
        "Esc",
        Action::Cancel,
        "cancel (on the question about a name nobody reports: back to the name)",
        Add,
    ),
    b(
        &[ctrl('u')],
        "C-u",
        Action::PromptEraseAll,
        "erase all",
        Add,
    ),
    b(
        &[code(KeyCode::Backspace)],
        "Bksp",
        Action::Erase,
        "erase",
        Add,
    ),
    b(&[ctrl('c')], "C-c", Action::Quit, "quit", Add),
    // The diff under review (`w`).
    b(
        &[k('y')],
        "y",
        Action::Yes,
        "send exactly this document",
        Review,
    ),
    b(
        &[k('C')],
        "C",
        Action::Cohort,
        "send it to a cohort first: asks its size and bake (10%, 10m)",
        Review,
    ),
    shown(
        b(
            &[k('n'), code(KeyCode::Esc)],
            "n Esc",
            Action::Cancel,
            "back to the Ladder",
            Review,
        ),
        2,
    ),
    b(
        &[k('j'), code(KeyCode::Down)],
        "j ↓",
        Action::ScrollDown,
        "scroll down",
        Review,
    ),
    b(
        &[k('k'), code(KeyCode::Up)],
        "k ↑",
        Action::ScrollUp,
        "scroll up",
        Review,
    ),
    b(&[ctrl('c')], "C-c", Action::Quit, "quit", Review),
    // The conflict: agents both edits touched in ways that cannot both hold.
    b(
        &[k('t')],
        "t",
        Action::KeepTheirs,
        "keep theirs for the selected agent",
        Conflict,
    ),
    b(
        &[k('m')],
        "m",
        Action::KeepMine,
        "keep mine for the selected agent",
        Conflict,
    ),
    b(
        &[k('j'), code(KeyCode::Down)],
        "j ↓",
        Action::ScrollDown,
        "next conflicting agent",
        Conflict,
    ),
    b(
        &[k('k'), code(KeyCode::Up)],
        "k ↑",
        Action::ScrollUp,
        "previous conflicting agent",
        Conflict,
    ),
    b(
        &[k('c')],
        "c",
        Action::Carry,
        "take the merged result (a new edit to review)",
        Conflict,
    ),
    b(
        &[k('D')],
        "D",
        Action::DropMine,
        "drop mine (asks again)",
        Conflict,
    ),
    b(
        &[k('y')],
        "y",
        Action::Yes,
        "after D: drop mine for good",
        Conflict,
    ),
    b(&[ctrl('c')], "C-c", Action::Quit, "quit", Conflict),
    // `q` with an edit pending.
    b(
        &[k('y'), k('q')],
        "y q",
        Action::Yes,
        "quit anyway",
        Quitting,
    ),
    b(&[ctrl('c')], "C-c", Action::Quit, "quit anyway", Quitting),
    // The `:` command line.
    b(
        &[code(KeyCode::Enter)],
        "Enter",
        Action::Accept,
        "run the command",
        Command,
    ),
    b(
        &[code(KeyCode::Esc)],
        "Esc",
        Action::Cancel,
        "cancel",
        Command,
    ),
    b(
        &[code(KeyCode::Backspace)],
        "Bksp",
        Action::Erase,
        "erase",
        Command,
    ),
    b(&[ctrl('u')], "C-u", Action::EraseAll, "erase all", Command),
    b(&[ctrl('c')], "C-c", Action::Quit, "quit", Command),
    // The `:ctx` switcher.
    b(
        &[code(KeyCode::Enter)],
        "Enter",
        Action::Accept,
        "switch to it",
        Picker,
    ),
    b(
        &[code(KeyCode::Esc), k('q')],
        "Esc q",
        Action::Cancel,
        "close",
        Picker,
    ),
    b(
        &[code(KeyCode::Down), k('j')],
        "↓ j",
        Action::Down,
        "next context",
        Picker,
    ),
    b(
        &[code(KeyCode::Up), k('k')],
        "↑ k",
        Action::Up,
        "previous context",
        Picker,
    ),
    // `:ctx` with an edit pending.
    b(
        &[k('y')],
        "y",
        Action::Yes,
        "switch, dropping the edit",
        Switching,
    ),
    // `C` on the diff: the cohort's size and the bake.
    b(
        &[code(KeyCode::Enter)],
        "Enter",
        Action::Accept,
        "start the rollout",
        CohortAsk,
    ),
    b(
        &[code(KeyCode::Tab)],
        "Tab",
        Action::Complete,
        "the other field",
        CohortAsk,
    ),
    b(
        &[code(KeyCode::Esc)],
        "Esc",
        Action::Cancel,
        "back to the diff",
        CohortAsk,
    ),
    b(
        &[code(KeyCode::Backspace)],
        "Bksp",
        Action::Erase,
        "erase",
        CohortAsk,
    ),
    b(
        &[ctrl('u')],
        "C-u",
        Action::EraseAll,
        "erase the field",
        CohortAsk,
    ),
    b(&[ctrl('c')], "C-c", Action::Quit, "quit", CohortAsk),
    // `P` or `A` while a rollout bakes.
    b(&[k('y')], "y", Action::Yes, "promote or abort it", Stepping),
    b(&[ctrl('c')], "C-c", Action::Quit, "quit", Stepping),
    // A draft kept by an earlier session on this hub, offered.
    b(
        &[k('o')],
        "o",
        Action::OpenDraft,
        "open the draft: it is the pending edit again",
        Draft,
    ),
    b(
        &[k('D')],
        "D",
        Action::DropDraft,
        "drop the draft (its file too)",
        Draft,
    ),
];

/// A hint names keys by their actions: each group is written as its
/// actions' keys joined by `/` (`j/k`), groups joined by `or` (a space
/// unless it says otherwise), then the word.
#[derive(Debug, Clone, Copy)]
pub struct Hint {
    pub keys: &'static [&'static [Action]],
    pub word: &'static str,
    pub or: &'static str,
}

const fn h(keys: &'static [&'static [Action]], word: &'static str) -> Hint {
    Hint {
        keys,
        word,
        or: " ",
    }
}

/// A hint whose key groups are alternatives (`? or Esc closes`).
const fn either(keys: &'static [&'static [Action]], word: &'static str) -> Hint {
    Hint {
        keys,
        word,
        or: " or ",
    }
}

/// Where a line of hints is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hints {
    /// The status line under a pane.
    List,
    /// The status line under the Ladder.
    Ladder,
    /// The status line under the Ladder, for an owner: the edit keys first.
    LadderOwner,
    /// The same while a staged rollout bakes: its keys first.
    LadderRollout,
    /// `C`: the cohort's size and the bake asked.
    CohortAsk,
    /// `P` or `A`: the question.
    Stepping,
    /// The status line under History (an owner's: `R revert`).
    History,
    /// The status line under a detail.
    Detail,
    /// The status line under a revision's detail, for an owner.
    RevisionDetail,
    /// The status line under the rollout's list of workers behind.
    Rollout,
    /// The diff under review.
    Review,
    Conflict,
    /// The conflict after `D`.
    Dropping,
    Quitting,
    Add,
    /// The add prompt's question about a name nobody reports.
    AddUnknown,
    Command,
    Picker,
    Switching,
    /// The offer of a draft an earlier session kept.
    Draft,
    /// The bottom of a detail's box.
    DetailBox,
    /// The bottom of the raw JSON's box.
    RawBox,
    /// The bottom of the help's box.
    HelpBox,
    /// The Ladder's convergence line, when the cursor is on it.
    Convergence,
    /// The Ladder's staged rollout line, when the cursor is on it.
    StagedLine,
}

/// The hints of each place, and the scope whose keys they name.
pub const HINTS: &[(Hints, Scope, &[Hint])] = &[
    (
        Hints::List,
        Global,
        &[
            h(&[&[Action::Help]], "help"),
            h(&[&[Action::Filter]], "filter"),
            h(&[&[Action::Sort]], "sort"),
            h(&[&[Action::Detail]], "detail"),
            h(&[&[Action::Refetch]], "refetch"),
            h(&[&[Action::Quit]], "quit"),
        ],
    ),
    (
        Hints::Ladder,
        Only(LADDER),
        &[
            h(&[&[Action::Help]], "help"),
            h(&[&[Action::Filter]], "filter"),
            h(&[&[Action::Sort]], "sort"),
            h(&[&[Action::Detail]], "detail"),
            h(&[&[Action::Drill]], "drill"),
            h(&[&[Action::Refetch]], "refetch"),
            h(&[&[Action::Quit]], "quit"),
        ],
    ),
    (
        Hints::LadderOwner,
        Only(LADDER),
        &[
            h(&[&[Action::MoveAgentDown, Action::MoveAgentUp]], "move"),
            h(&[&[Action::AddAgent]], "add"),
            h(&[&[Action::RemoveAgent]], "remove"),
            h(&[&[Action::Write]], "write"),
            h(&[&[Action::EditDocument]], "editor"),
            h(&[&[Action::Help]], "help"),
            h(&[&[Action::Quit]], "quit"),
        ],
    ),
    (
        Hints::LadderRollout,
        Only(LADDER),
        &[
            h(&[&[Action::Promote]], "promote"),
            h(&[&[Action::Abort]], "abort"),
            h(&[&[Action::MoveAgentDown, Action::MoveAgentUp]], "move"),
            h(&[&[Action::Write]], "write"),
            h(&[&[Action::Help]], "help"),
            h(&[&[Action::Quit]], "quit"),
        ],
    ),
    (
        Hints::CohortAsk,
        CohortAsk,
        &[
            h(&[&[Action::Accept]], "starts it"),
            h(&[&[Action::Complete]], "other field"),
            h(&[&[Action::Cancel]], "back"),
        ],
    ),
    (
        Hints::Stepping,
        Stepping,
        &[h(&[&[Action::Yes]], "yes, any other key no")],
    ),
    (
        Hints::History,
        Only(HISTORY),
        &[
            h(&[&[Action::Help]], "help"),
            h(&[&[Action::Filter]], "filter"),
            h(&[&[Action::Sort]], "sort"),
            h(&[&[Action::Detail]], "detail"),
            h(&[&[Action::Revert]], "revert"),
            h(&[&[Action::Refetch]], "refetch"),
            h(&[&[Action::Quit]], "quit"),
        ],
    ),
    (
        Hints::Detail,
        Global,
        &[
            h(&[&[Action::Back]], "close"),
            h(&[&[Action::Down, Action::Up]], "next"),
            h(&[&[Action::PageUp, Action::PageDown]], "scroll"),
            h(&[&[Action::Help]], "help"),
        ],
    ),
    (
        Hints::RevisionDetail,
        Only(HISTORY),
        &[
            h(&[&[Action::Back]], "close"),
            h(&[&[Action::Down, Action::Up]], "next"),
            h(&[&[Action::PageUp, Action::PageDown]], "scroll"),
            h(&[&[Action::Revert]], "revert"),
            h(&[&[Action::Help]], "help"),
        ],
    ),
    (
        Hints::Rollout,
        Global,
        &[
            h(&[&[Action::Back]], "close"),
            h(
                &[
                    &[Action::Down, Action::Up],
                    &[Action::PageUp, Action::PageDown],
                ],
                "scroll",
            ),
            h(&[&[Action::Help]], "help"),
        ],
    ),
    (
        Hints::Review,
        Review,
        &[
            h(&[&[Action::Yes]], "sends exactly this"),
            h(&[&[Action::Cohort]], "cohort first"),
            h(&[&[Action::Cancel]], "back"),
            h(&[&[Action::ScrollDown, Action::ScrollUp]], "scroll"),
        ],
    ),
    (
        Hints::Conflict,
        Conflict,
        &[
            h(&[&[Action::KeepTheirs]], "theirs"),
            h(&[&[Action::KeepMine]], "mine"),
            h(&[&[Action::ScrollDown, Action::ScrollUp]], "agent"),
            h(&[&[Action::Carry]], "take the merged result"),
            h(&[&[Action::DropMine]], "drop mine (asks again)"),
        ],
    ),
    (
        Hints::Dropping,
        Conflict,
        &[h(&[&[Action::Yes]], "drops it")],
    ),
    (Hints::Quitting, Quitting, &[h(&[&[Action::Yes]], "quits")]),
    (
        Hints::Add,
        Add,
        &[
            h(&[&[Action::Accept]], "adds"),
            h(&[&[Action::Complete]], "completes"),
            h(&[&[Action::Cancel]], "cancels"),
        ],
    ),
    (
        Hints::AddUnknown,
        Add,
        &[
            h(&[&[Action::Accept]], "adds it anyway"),
            h(&[&[Action::Cancel]], "goes back to the name"),
        ],
    ),
    (
        Hints::Command,
        Command,
        &[
            h(&[&[Action::Accept]], "go"),
            h(&[&[Action::Cancel]], "cancel"),
        ],
    ),
    (
        Hints::Picker,
        Picker,
        &[
            h(&[&[Action::Accept]], "switches"),
            h(&[&[Action::Cancel]], "closes"),
        ],
    ),
    (
        Hints::Switching,
        Switching,
        &[h(&[&[Action::Yes]], "switches (the edit is dropped)")],
    ),
    (
        Hints::Draft,
        Draft,
        &[
            h(&[&[Action::OpenDraft]], "opens it"),
            h(&[&[Action::DropDraft]], "drops it"),
        ],
    ),
    (Hints::DetailBox, Global, &[h(&[&[Action::Back]], "close")]),
    (Hints::RawBox, Global, &[h(&[&[Action::Back]], "back")]),
    (
        Hints::Convergence,
        Global,
        &[h(&[&[Action::Detail]], "lists the workers behind and why")],
    ),
    (
        Hints::StagedLine,
        Global,
        &[h(
            &[&[Action::Detail]],
            "its detail: cohort, bake, guard, steps",
        )],
    ),
    (
        Hints::HelpBox,
        Global,
        &[either(&[&[Action::Help], &[Action::Back]], "closes")],
    ),
];

/// The action bound to a key press in the panes, whatever the pane: edit
/// keys are recognised everywhere so that a read-only session can always
/// say no.
pub fn action_for(ev: &KeyEvent) -> Option<Action> {
    find(ev, |s| matches!(s, Global | Only(_)))
}

/// The action the runner takes on a key press before the app sees it,
/// whatever is on screen (scope `Runner`: Ctrl-Z).
pub fn runner_action_for(ev: &KeyEvent) -> Option<Action> {
    find(ev, |s| s == Runner)
}

/// The character a key types in a prompt where other keys are text (the
/// filter, the `:` line, the add prompt): a character with neither Ctrl
/// nor Alt (Shift is in the character already). The three prompts agree.
pub fn text_char(ev: &KeyEvent) -> Option<char> {
    match ev.code {
        KeyCode::Char(c)
            if ev.kind != KeyEventKind::Release
                && !ev
                    .modifiers
                    .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT) =>
        {
            Some(c)
        }
        _ => None,
    }
}

/// The action bound to a key press in the filter prompt; `None` for a key
/// that is text (or nothing).
pub fn prompt_action_for(ev: &KeyEvent) -> Option<Action> {
    action_in(Prompt, ev)
}

/// The action bound to a key press in `scope` (for `Global`, any pane's);
/// `None` for a key that is text there, or nothing.
pub fn action_in(scope: Scope, ev: &KeyEvent) -> Option<Action> {
    match scope {
        Global | Only(_) => action_for(ev),
        s => find(ev, |b| b == s),
    }
}

fn find(ev: &KeyEvent, scope: impl Fn(Scope) -> bool) -> Option<Action> {
    if ev.kind == KeyEventKind::Release {
        return None;
    }
    let mods = match ev.code {
        // Shift is already in the character ('J'); terminals disagree on
        // whether they also report it.
        KeyCode::Char(_) => ev.modifiers - KeyModifiers::SHIFT,
        // Shift-Tab: tmux sends `\e[Z`, which crossterm reports as BackTab
        // *with* SHIFT; some terminals leave SHIFT out.
        KeyCode::BackTab => ev.modifiers - KeyModifiers::SHIFT,
        _ => ev.modifiers,
    };
    BINDINGS.iter().filter(|b| scope(b.scope)).find_map(|b| {
        let i = b
            .keys
            .iter()
            .position(|k| k.code == ev.code && k.mods == mods)?;
        Some(match b.action {
            // The digit names the pane.
            Action::ShowView(_) => Action::ShowView(i),
            a => a,
        })
    })
}

/// Bindings of the filter prompt, in table order.
pub fn prompt_keys() -> impl Iterator<Item = &'static Binding> {
    BINDINGS.iter().filter(|b| b.scope == Prompt)
}

/// The filter prompt's keys in one line: `Enter keep · Esc clear · …`.
pub fn prompt_help(sep: &str, ascii: bool) -> String {
    prompt_keys()
        .map(|b| format!("{} {}", label(b, ascii), b.help))
        .collect::<Vec<_>>()
        .join(&format!(" {sep} "))
}

/// How a binding's keys are written (`--ascii` spells the arrows).
pub fn label(b: &Binding, ascii: bool) -> String {
    if ascii {
        b.label.replace('↓', "Down").replace('↑', "Up")
    } else {
        b.label.to_string()
    }
}

/// A key's name in a hint.
pub fn key_name(k: &Key) -> String {
    let name = match k.code {
        KeyCode::Char(c) => c.to_string(),
        KeyCode::Enter => "Enter".into(),
        KeyCode::Esc => "Esc".into(),
        KeyCode::Tab => "Tab".into(),
        KeyCode::BackTab => "S-Tab".into(),
        KeyCode::Backspace => "Bksp".into(),
        KeyCode::Up => "↑".into(),
        KeyCode::Down => "↓".into(),
        KeyCode::Home => "Home".into(),
        KeyCode::End => "End".into(),
        KeyCode::PageUp => "PgUp".into(),
        KeyCode::PageDown => "PgDn".into(),
        other => format!("{other:?}"),
    };
    if k.mods.contains(KeyModifiers::CONTROL) {
        format!("C-{name}")
    } else {
        name
    }
}

/// The binding of `action` in `scope`.
/// A pane's own scope (`Only`) has every pane's keys too.
pub fn binding(scope: Scope, action: Action) -> Option<&'static Binding> {
    let find = |s: Scope| BINDINGS.iter().find(|b| b.scope == s && b.action == action);
    match scope {
        Only(_) => find(scope).or_else(|| find(Global)),
        s => find(s),
    }
}

/// The hints of `at`, each `keys word`, joined by `join`: `? help · /
/// filter · …`.
pub fn hints(at: Hints, join: &str) -> String {
    let Some((_, scope, list)) = HINTS.iter().find(|(h, _, _)| *h == at) else {
        return String::new();
    };
    list.iter()
        .map(|h| {
            let keys: Vec<String> = h
                .keys
                .iter()
                .map(|group| {
                    group
                        .iter()
                        .filter_map(|a| binding(*scope, *a))
                        .flat_map(|b| b.keys.iter().take(b.shown).map(key_name))
                        .collect::<Vec<_>>()
                        .join("/")
                })
                .collect();
            format!("{} {}", keys.join(h.or), h.word)
        })
        .collect::<Vec<_>>()
        .join(join)
}

/// One line of the help: the keys as written, what they do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelpLine {
    pub label: String,
    pub help: String,
    pub action: Action,
}

/// The help of the pane `pane` (its name) among panes titled `titles`, in
/// table order: every pane's keys that do something there, then its own;
/// the digit keys as one line per pane.
pub fn help_for(pane: &str, titles: &[&str], ascii: bool) -> Vec<HelpLine> {
    let mut out = Vec::new();
    for b in BINDINGS {
        match b.scope {
            Global if !b.not_on.iter().any(|p| p.name() == pane) => {}
            Only(p) if p.name() == pane => {}
            _ => continue,
        }
        if let Action::ShowView(_) = b.action {
            for (i, t) in titles.iter().enumerate().take(b.keys.len()) {
                out.push(HelpLine {
                    label: key_name(&b.keys[i]),
                    help: format!("{t} {}", b.help),
                    action: Action::ShowView(i),
                });
            }
            continue;
        }
        out.push(HelpLine {
            label: label(b, ascii),
            help: b.help.to_string(),
            action: b.action,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn every_key_is_bound_once_in_each_scope() {
        let scopes = [
            Prompt, Add, Review, Conflict, Quitting, Command, Picker, Switching, Draft, CohortAsk,
            Stepping,
        ];
        // The panes' keys: Global and every Only together (an Only key is
        // recognised in every pane, so that a read-only one can say no).
        let mut seen = Vec::new();
        for b in BINDINGS
            .iter()
            .filter(|b| matches!(b.scope, Global | Only(_)))
        {
            for k in b.keys {
                assert!(!seen.contains(k), "{k:?} bound twice");
                seen.push(*k);
            }
        }
        for s in scopes {
            let mut seen = Vec::new();
            for b in BINDINGS.iter().filter(|b| b.scope == s) {
                for k in b.keys {
                    assert!(!seen.contains(k), "{k:?} bound twice in {s:?}");
                    seen.push(*k);
                }
            }
        }
    }

    #[test]
    fn every_hint_names_keys_its_scope_binds() {
        for (at, scope, list) in HINTS {
            for h in list.iter() {
                for a in h.keys.iter().flat_map(|g| g.iter()) {
                    assert!(
                        binding(*scope, *a).is_some(),
                        "{at:?}: {a:?} is not bound in {scope:?}"
                    );
                }
            }
            assert!(!hints(*at, " · ").is_empty());
        }
    }

    #[test]
    fn hints_are_written_from_the_keys() {
        assert_eq!(
            hints(Hints::List, " · "),
            "? help · / filter · s sort · Enter detail · r refetch · q quit"
        );
        assert_eq!(
            hints(Hints::Review, " · "),
            "y sends exactly this · C cohort first · n/Esc back · j/k scroll"
        );
        assert_eq!(
            hints(Hints::LadderRollout, " · "),
            "P promote · A abort · J/K move · w write · ? help · q quit"
        );
        assert_eq!(
            hints(Hints::Rollout, " · "),
            "Esc close · j/k PgUp/PgDn scroll · ? help"
        );
        assert_eq!(hints(Hints::Picker, ", "), "Enter switches, Esc closes");
        assert_eq!(
            hints(Hints::Ladder, " · "),
            "? help · / filter · s sort · Enter detail · x drill · r refetch · q quit"
        );
        assert_eq!(hints(Hints::HelpBox, ""), "? or Esc closes");
        assert_eq!(
            hints(Hints::LadderOwner, " · "),
            "J/K move · a add · d remove · w write · e editor · ? help · q quit"
        );
        assert_eq!(
            hints(Hints::History, " · "),
            "? help · / filter · s sort · Enter detail · R revert · r refetch · q quit"
        );
        assert_eq!(
            hints(Hints::RevisionDetail, " · "),
            "Esc close · j/k next · PgUp/PgDn scroll · R revert · ? help"
        );
        assert_eq!(hints(Hints::Draft, ", "), "o opens it, D drops it");
    }

    #[test]
    fn the_prompt_has_its_own_keys_and_leaves_the_rest_as_text() {
        let enter = press(KeyCode::Enter, KeyModifiers::NONE);
        assert_eq!(action_for(&enter), Some(Action::Detail));
        assert_eq!(prompt_action_for(&enter), Some(Action::PromptKeep));
        let ctrl_u = press(KeyCode::Char('u'), KeyModifiers::CONTROL);
        assert_eq!(prompt_action_for(&ctrl_u), Some(Action::PromptEraseAll));
        let q = press(KeyCode::Char('q'), KeyModifiers::NONE);
        assert_eq!(prompt_action_for(&q), None);
        assert_eq!(action_in(Command, &q), None);
        assert_eq!(action_in(Picker, &q), Some(Action::Cancel));
        let help = prompt_help("·", false);
        assert!(help.contains("C-u erase all"), "{help}");
        assert!(
            help.starts_with("Enter keep · Esc clear · ↑ recall"),
            "{help}"
        );
    }

    #[test]
    fn q_and_ctrl_c_are_both_quit_in_every_scope_that_takes_text() {
        let q = press(KeyCode::Char('q'), KeyModifiers::NONE);
        let ctrl_c = press(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(action_for(&q), Some(Action::Quit));
        assert_eq!(action_for(&ctrl_c), Some(Action::Quit));
        for s in [Prompt, Add, Review, Conflict, Quitting, Command] {
            assert_eq!(action_in(s, &ctrl_c), Some(Action::Quit), "{s:?}");
        }
    }

    #[test]
    fn a_digit_names_its_pane() {
        assert_eq!(
            action_for(&press(KeyCode::Char('1'), KeyModifiers::NONE)),
            Some(Action::ShowView(0))
        );
        assert_eq!(
            action_for(&press(KeyCode::Char('4'), KeyModifiers::NONE)),
            Some(Action::ShowView(3))
        );
        let help = help_for("workers", &["Ladder", "Workers"], false);
        assert_eq!(help[0].label, "1");
        assert_eq!(help[1].help, "Workers view");
    }

    #[test]
    fn shifted_letters_match_with_or_without_shift_reported() {
        assert_eq!(
            action_for(&press(KeyCode::Char('J'), KeyModifiers::SHIFT)),
            Some(Action::MoveAgentDown)
        );
        assert_eq!(
            action_for(&press(KeyCode::Char('J'), KeyModifiers::NONE)),
            Some(Action::MoveAgentDown)
        );
        assert_eq!(
            action_for(&press(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Action::Quit)
        );
        assert_eq!(
            action_for(&press(KeyCode::Char('c'), KeyModifiers::NONE)),
            None
        );
    }

    #[test]
    fn shift_tab_is_the_previous_view_with_or_without_shift_reported() {
        for mods in [KeyModifiers::SHIFT, KeyModifiers::NONE] {
            assert_eq!(
                action_for(&press(KeyCode::BackTab, mods)),
                Some(Action::PrevView)
            );
        }
        assert_eq!(
            action_for(&press(KeyCode::BackTab, KeyModifiers::CONTROL)),
            None
        );
    }

    #[test]
    fn the_ladders_help_lists_only_keys_that_do_something_there() {
        let t = ["Ladder", "Workers", "Failovers", "History"];
        let on = |pane: &str, a: Action| help_for(pane, &t, false).iter().any(|b| b.action == a);
        for a in [Action::WorkerFailovers, Action::Raw] {
            assert!(!on("ladder", a), "{a:?} on the Ladder");
            assert!(on("workers", a) && on("failovers", a), "{a:?}");
        }
        assert!(!on("history", Action::WorkerFailovers));
        assert!(on("history", Action::Raw) && on("history", Action::Revert));
        for a in [Action::Drill, Action::Write, Action::Detail, Action::Sort] {
            assert!(on("ladder", a), "{a:?}");
        }
    }

    #[test]
    fn help_lists_edit_keys_only_on_the_ladder() {
        let t = ["Ladder", "Workers"];
        assert!(
            help_for("ladder", &t, false)
                .iter()
                .any(|b| b.action == Action::Write)
        );
        assert!(
            !help_for("workers", &t, false)
                .iter()
                .any(|b| b.action == Action::Write)
        );
        assert!(
            help_for("workers", &t, false)
                .iter()
                .any(|b| b.action == Action::Filter)
        );
    }

    /// Ctrl-Z is the table's, in a scope of its own the runner reads
    /// first: no pane, prompt or question has it, nor the `?` help.
    #[test]
    fn ctrl_z_is_the_runners_key_in_the_table() {
        let ctrl_z = press(KeyCode::Char('z'), KeyModifiers::CONTROL);
        assert_eq!(runner_action_for(&ctrl_z), Some(Action::Suspend));
        assert_eq!(
            runner_action_for(&press(KeyCode::Char('z'), KeyModifiers::NONE)),
            None
        );
        assert_eq!(action_for(&ctrl_z), None);
        assert_eq!(text_char(&ctrl_z), None);
        let mut up = ctrl_z;
        up.kind = KeyEventKind::Release;
        assert_eq!(runner_action_for(&up), None);
        assert!(
            !help_for("ladder", &["Ladder"], false)
                .iter()
                .any(|h| h.action == Action::Suspend)
        );
    }
}
