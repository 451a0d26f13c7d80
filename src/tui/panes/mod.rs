//! One file per view: its list, its sort, how it rebuilds its rows from
//! the model, and how it draws them (each a [`Pane`]). The tabs, the digit
//! keys, the `:` commands and the help are generated from [`all`], so a
//! new view is its file and its line in the list below.

use super::ids::{PaneId, WORKERS};
use super::pane::Pane;

/// The pane a session opens on.
pub const FIRST: PaneId = WORKERS;

macro_rules! panes {
    ($($file:ident :: $pane:ident),* $(,)?) => {
        $(pub mod $file;)*

        /// Every pane, in tab order.
        pub fn all() -> Vec<Box<dyn Pane>> {
            vec![$(Box::new($file::$pane::default())),*]
        }
    };
}

panes![
    ladder::Ladder,
    workers::Workers,
    failovers::Failovers,
    history::History,
];
