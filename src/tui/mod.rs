//! The terminal UI: state and its update step (`app`), messages (`msg`),
//! keys (`keys`), one file per view (`views`), the theme, the hub I/O tasks
//! (`net`) and the runner (`run`). See `docs/tui.md`.

pub mod app;
pub mod away;
pub mod command;
pub mod compact;
pub mod edit;
pub mod editor;
pub mod faillog;
#[doc(hidden)]
pub mod fixture;
pub mod fleet;
pub mod fmt;
pub mod geom;
pub mod input;
pub mod keys;
pub mod lists;
pub mod log;
pub mod msg;
pub mod net;
pub mod query;
pub mod run;
pub mod term;
pub mod theme;
pub mod verdict;
pub mod views;

pub use run::{TuiOptions, run};
