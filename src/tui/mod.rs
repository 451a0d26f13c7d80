//! The terminal UI: state and its update step (`app`), messages (`msg`),
//! keys (`keys`), one file per view (`views`), the theme, the hub I/O tasks
//! (`net`) and the runner (`run`). See `docs/tui.md`.

pub mod app;
pub mod command;
pub mod edit;
#[doc(hidden)]
pub mod fixture;
pub mod keys;
pub mod lists;
pub mod model;
pub mod msg;
pub mod runtime;
pub mod ui;
pub mod views;

pub use runtime::{TuiOptions, run};
