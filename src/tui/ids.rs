//! The panes' names, typed: a key scope, an ask or a check names a pane
//! by one of these constants, so a typo does not compile. A pane's
//! [`PaneId`] is its name: its `:` command, how the key table's `Only`
//! scope and the `?` help name it. Below everything else of the TUI.

/// A pane, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PaneId(&'static str);

impl PaneId {
    /// A pane's id (a new pane that nothing else names may keep its own
    /// constant in its file).
    pub const fn new(name: &'static str) -> PaneId {
        PaneId(name)
    }

    pub const fn name(self) -> &'static str {
        self.0
    }
}

pub const LADDER: PaneId = PaneId::new("ladder");
pub const WORKERS: PaneId = PaneId::new("workers");
pub const FAILOVERS: PaneId = PaneId::new("failovers");
pub const HISTORY: PaneId = PaneId::new("history");
