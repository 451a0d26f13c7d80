//! What opens over a pane: the owner's edit screens (the add prompt, the
//! diff under review, the conflict, the quit question: `edit`), the `:`
//! command line and the context switcher (`command`), a row's detail
//! (`detail`) and the help (`help`). Each takes its keys from its scope of
//! the key table and asks the app for what is beyond it through [`Ask`]s,
//! which `App` runs in order after the overlay returns (as gitui's
//! components push internal events on a queue).

pub mod command;
pub mod detail;
pub mod edit;
pub mod help;

use self::command::{CmdLine, Contexts};
use super::pane::Detail;

/// What an overlay asks the app to do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    /// A message on the status line.
    Say(String),
    /// The current pane's rows are out of date (its list or the edit
    /// changed): rebuild them now.
    Reorder,
    /// Put the current pane's cursor on this row, if it shows it.
    Select(Detail),
    /// Show this pane, as its key does.
    Show(&'static str),
    /// Land on this pane with nothing open over it (after an edit taken
    /// from `$EDITOR` or a revert).
    Land(&'static str),
    /// Open this detail.
    Open(Detail),
    Quit,
}

/// What is open over the pane, besides the edit screens (the model's
/// pending edit holds those).
#[derive(Debug, Default)]
pub struct Overlays {
    pub help: bool,
    pub detail: Option<Detail>,
    pub detail_scroll: usize,
    /// `v`: the detail's target as the hub's own JSON record.
    pub raw: bool,
    /// `v` opened the detail from the list: Esc goes back to the list.
    pub raw_from_list: bool,
    /// The `:` command line.
    pub cmd: CmdLine,
    /// The contexts `:ctx` switches between, and the current one.
    pub contexts: Contexts,
}
