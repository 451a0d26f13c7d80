//! The status word at the top left, readable from across the room. The
//! order of severity is the domain's ([`crate::verdict`], the same for the
//! CLI and the hub); this only reads the screen's figures into it. It is
//! judged from the hub's own judgement of each worker only (the TUI never
//! re-judges the fleet on its own clock); while the hub cannot be reached
//! the word is `HUB DOWN`, while it answers out of the contract `HUB
//! ERROR`, and the fleet line keeps the last known counts with their age.

use super::conn::ConnLabel;
use super::fleet::Aggregates;
pub use crate::verdict::Verdict;
use crate::verdict::{Figures, Reach};

/// What the hub says of its list: the built-in order given, the file
/// not validating, the last staged rollout halted by its guard (and
/// nothing written since).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lists {
    pub built_in: bool,
    pub config_invalid: bool,
    pub rollout_halted: bool,
    /// The hub cannot write its database now.
    pub database_unavailable: bool,
}

/// The figures of the screen as the domain judges them.
pub fn figures(a: &Aggregates, l: Lists) -> Figures {
    Figures {
        workers: a.total,
        healthy: a.healthy,
        no_route: a.no_route,
        degraded: a.degraded,
        one_failure: a.one_failure,
        built_in: l.built_in,
        config_invalid: l.config_invalid,
        rollout_halted: l.rollout_halted,
        database_unavailable: l.database_unavailable,
    }
}

/// The word for the screen; `None` while there is nothing to judge yet (no
/// answer from the hub); an empty fleet of a hub that answers is `NO
/// WORKERS` (the domain's word).
pub fn verdict(conn: ConnLabel, a: &Aggregates, lists: Lists) -> Option<Verdict> {
    let reach = match conn {
        ConnLabel::Disconnected(_) => Reach::Down,
        ConnLabel::Refused => Reach::Unauthorized,
        ConnLabel::Forbidden => Reach::Forbidden,
        ConnLabel::BrokeBound(_) => Reach::BrokeBound,
        ConnLabel::Connecting => return None,
        ConnLabel::Live | ConnLabel::Polling => Reach::Up,
    };
    crate::verdict::verdict(reach, &figures(a, lists))
}
