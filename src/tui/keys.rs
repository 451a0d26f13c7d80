//! The key table. Key handling and the `?` help are both generated from
//! [`BINDINGS`], so they cannot disagree.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::lists::{Move, View};

/// What a key asks for. `update` decides what it means in the current state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    ViewLadder,
    ViewWorkers,
    ViewFailovers,
    ViewHistory,
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
    // Ladder edits (see `edit`); a read-only session refuses them.
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
        )
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

/// Where a binding is listed in the help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Every view.
    Global,
    /// Only the named view.
    Only(View),
    /// The filter prompt, where other keys are text.
    Prompt,
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
    pub help: &'static str,
    pub scope: Scope,
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
    }
}

use Scope::{Global, Only, Prompt};

pub const BINDINGS: &[Binding] = &[
    b(&[k('1')], "1", Action::ViewLadder, "Ladder view", Global),
    b(&[k('2')], "2", Action::ViewWorkers, "Workers view", Global),
    b(
        &[k('3')],
        "3",
        Action::ViewFailovers,
        "Failovers view",
        Global,
    ),
    b(&[k('4')], "4", Action::ViewHistory, "History view", Global),
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
    b(
        &[k('f')],
        "f",
        Action::WorkerFailovers,
        "this worker's failovers",
        Global,
    ),
    b(
        &[k('v')],
        "v",
        Action::Raw,
        "raw JSON, as the hub sent it",
        Global,
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
        &[k('J')],
        "J",
        Action::MoveAgentDown,
        "move the selected agent down",
        Only(View::Ladder),
    ),
    b(
        &[k('K')],
        "K",
        Action::MoveAgentUp,
        "move the selected agent up",
        Only(View::Ladder),
    ),
    b(
        &[k('a')],
        "a",
        Action::AddAgent,
        "add an agent",
        Only(View::Ladder),
    ),
    b(
        &[k('d')],
        "d",
        Action::RemoveAgent,
        "remove the selected agent",
        Only(View::Ladder),
    ),
    b(
        &[k('u')],
        "u",
        Action::Undo,
        "undo a pending edit",
        Only(View::Ladder),
    ),
    b(
        &[ctrl('r')],
        "C-r",
        Action::Redo,
        "redo a pending edit",
        Only(View::Ladder),
    ),
    b(
        &[k('w')],
        "w",
        Action::Write,
        "write: diff, then y sends",
        Only(View::Ladder),
    ),
    b(
        &[k('e')],
        "e",
        Action::EditDocument,
        "edit the whole document in $EDITOR (then w, y)",
        Only(View::Ladder),
    ),
    b(
        &[k('R')],
        "R",
        Action::Revert,
        "revert to this revision's order (a pending edit to review)",
        Only(View::History),
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
];

/// The action bound to a key press, whatever the view: edit keys are
/// recognised everywhere so that a read-only session can always say no.
pub fn action_for(ev: &KeyEvent) -> Option<Action> {
    find(ev, |s| s != Prompt)
}

/// The action bound to a key press in the filter prompt; `None` for a key
/// that is text (or nothing).
pub fn prompt_action_for(ev: &KeyEvent) -> Option<Action> {
    find(ev, |s| s == Prompt)
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
    BINDINGS
        .iter()
        .filter(|b| scope(b.scope))
        .find(|b| b.keys.iter().any(|k| k.code == ev.code && k.mods == mods))
        .map(|b| b.action)
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

/// Bindings listed in the help of `view`, in table order.
pub fn help_for(view: View) -> impl Iterator<Item = &'static Binding> {
    BINDINGS.iter().filter(move |b| match b.scope {
        Global => true,
        Only(v) => v == view,
        Prompt => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, mods: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, mods)
    }

    #[test]
    fn every_key_is_bound_once_in_the_views_and_once_in_the_prompt() {
        for prompt in [false, true] {
            let mut seen = Vec::new();
            for b in BINDINGS.iter().filter(|b| (b.scope == Prompt) == prompt) {
                for k in b.keys {
                    assert!(!seen.contains(k), "{k:?} bound twice");
                    seen.push(*k);
                }
            }
        }
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
        let help = prompt_help("·", false);
        assert!(help.contains("C-u erase all"), "{help}");
        assert!(
            help.starts_with("Enter keep · Esc clear · ↑ recall"),
            "{help}"
        );
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
    fn help_lists_edit_keys_only_on_the_ladder() {
        assert!(help_for(View::Ladder).any(|b| b.action == Action::Write));
        assert!(!help_for(View::Workers).any(|b| b.action == Action::Write));
        assert!(help_for(View::Workers).any(|b| b.action == Action::Filter));
    }
}
