//! The terminal UI: state and its update step (`app`), messages (`msg`),
//! keys (`keys`), one file per view (`views`), the theme, and the hub I/O
//! tasks. See `docs/tui.md`.

pub mod app;
pub mod faillog;
pub mod fleet;
pub mod fmt;
pub mod keys;
pub mod msg;
pub mod theme;
pub mod views;
