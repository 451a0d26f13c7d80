//! What runs the TUI: the loop (`run`), the terminal, the input threads,
//! the hub tasks (`net`), `$EDITOR` and the log file.

pub mod draft;
pub mod editor;
pub mod input;
pub mod log;
pub mod net;
pub mod run;
pub mod term;
pub mod writer;

pub use run::{TuiOptions, run};
