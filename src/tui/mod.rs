//! The terminal UI. From the bottom up: what it knows (`model`), drawing
//! helpers that take what they draw (`ui`), the key table (`keys`), what a
//! view is (`pane`) and one file per view (`panes`), what opens over them
//! (`overlays`), the state and its one step (`app`, with `msg`), and what
//! runs it all (`runtime`). See `docs/tui.md`.

pub mod app;
#[doc(hidden)]
pub mod fixture;
pub mod ids;
pub mod keys;
pub mod model;
pub mod msg;
pub mod overlays;
pub mod pane;
pub mod panes;
pub mod runtime;
pub mod ui;

pub use runtime::{TuiOptions, run};
