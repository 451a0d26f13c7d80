//! The status word at the top left, readable from across the room: `OK`,
//! `DEGRADED n`, `NO ROUTE n`, `HUB DOWN`, or `UNAUTHORIZED` / `FORBIDDEN`
//! when the hub answers and refuses the token. It is judged from the hub's
//! own judgement of each worker only (the TUI never re-judges the fleet on
//! its own clock); while the hub cannot be reached the word is `HUB DOWN`
//! and the fleet line keeps the last known counts with their age.

use super::conn::ConnLabel;
use super::fleet::Aggregates;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Every live worker on rank 0, none stale or lost.
    Ok,
    /// Workers off rank 0, stale or lost (how many), none without a route.
    Degraded(usize),
    /// Live workers with no route left (how many).
    NoRoute(usize),
    /// The hub does not answer: the fleet's state is unknown.
    HubDown,
    /// The hub gives every worker the built-in order (its document has no
    /// list that validates and none was ever accepted).
    BuiltInOrder,
    /// The hub answers 401 to our token (a replaced hub, a revoked token):
    /// what is on screen is the last known of the hub that took it.
    Unauthorized,
    /// The hub answers 403.
    Forbidden,
}

/// The word for the screen; `None` while there is nothing to judge yet (no
/// answer from the hub, no worker reported).
pub fn verdict(conn: ConnLabel, a: &Aggregates, built_in: bool) -> Option<Verdict> {
    match conn {
        ConnLabel::Disconnected(_) => return Some(Verdict::HubDown),
        ConnLabel::Refused => return Some(Verdict::Unauthorized),
        ConnLabel::Forbidden => return Some(Verdict::Forbidden),
        ConnLabel::Connecting => return None,
        ConnLabel::Live | ConnLabel::Polling => {}
    }
    if built_in {
        // Louder than the fleet: every worker runs an order nobody chose.
        Some(Verdict::BuiltInOrder)
    } else if a.total == 0 {
        None
    } else if a.no_route > 0 {
        Some(Verdict::NoRoute(a.no_route))
    } else if a.degraded > 0 {
        Some(Verdict::Degraded(a.degraded))
    } else {
        Some(Verdict::Ok)
    }
}
