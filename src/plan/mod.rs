//! The owner's plan for `MAC_CODING_AGENTS` before it is sent: the pending
//! edit (its intents, order, undo/redo, the document it renders, a rebase
//! after a 412 that replays the intents onto the hub's list)
//! and the projection of what the new order would do to the fleet. Plain
//! data and pure functions, for the TUI and for `macfleet agents`.

mod merge;
mod pending;
mod projection;

pub use merge::{
    Anchor, Choice, Clash, ClashKind, Intent, Merge, add_intent, intents_between, maybe_moved,
    merge, move_intent, moved, replay, resolved, steadied,
};
pub use pending::{Conflict, ListChanges, PendingEdit, Rebased, Rung};
pub use projection::{
    Projection, RungForecast, Seat, Warning, drill, drill_grouped, project, project_grouped,
    rung_of, seen_agents, unreported,
};
