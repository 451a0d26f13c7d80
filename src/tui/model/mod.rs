//! What the TUI knows, below everything that shows it: the fleet, the
//! failover log, the connection and the hub's clock, the status word.
//! Nothing here imports `app`, `panes`, `overlays` or `ui`.

pub mod away;
pub mod compact;
pub mod conn;
pub mod faillog;
pub mod fleet;
pub mod query;
pub mod verdict;
