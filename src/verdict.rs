//! The status word: one order of severity, decided here only, for the
//! TUI's header, `macfleet get workers`' summary line and `/v1/health`'s
//! `word`. Pure: figures in, a word out; no I/O, no clock.
//!
//! From the most severe down (the first that holds is the word):
//!
//! | word             | when                                                        |
//! |------------------|-------------------------------------------------------------|
//! | `HUB DOWN`       | the hub does not answer (client side)                       |
//! | `UNAUTHORIZED`   | the hub answers 401 to the token (client side)              |
//! | `FORBIDDEN`      | the hub answers 403 (client side)                           |
//! | `HUB ERROR`      | the hub answers and breaks a bound of the API (client side) |
//! | `NO ROUTE n`     | n live workers have no agent left to run                    |
//! | `BUILT-IN ORDER` | every worker is given the built-in order                    |
//! | `CONFIG INVALID` | the file does not validate, or the hub cannot read or replace it (or it is gone); workers keep the last accepted list |
//! | `DATABASE UNAVAILABLE` | the hub cannot write its database: what must be durable (a failover, a new worker, a config write) is refused 503 |
//! | `AT RISK n`      | over a quarter of healthy workers are one failure from no route |
//! | `ROLLOUT HALTED` | the guard halted the last staged rollout; until the next write or rollout |
//! | `NO WORKERS`     | the hub answers and no worker has reported to it (since its start) |
//! | `DEGRADED n`     | n workers off rank 0, stale or lost                         |
//! | `OK`             | none of the above                                           |

use std::fmt;

/// Over this share of healthy workers one failure from no route is
/// `AT RISK`: the shipped alert `MacfleetHeadroomLow`'s threshold
/// (assets/alerts.yml).
pub const AT_RISK_SHARE: f64 = 0.25;

/// How the client reaches the hub; the hub itself is always [`Reach::Up`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The hub answers within the contract.
    Up,
    /// The hub does not answer.
    Down,
    /// 401 to our token.
    Unauthorized,
    /// 403 to our token.
    Forbidden,
    /// The hub answers and breaks a bound of the API.
    BrokeBound,
}

/// What the word is judged from: the hub's own judgement of each worker,
/// summed, and the state of its list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Figures {
    /// Workers known (any state).
    pub workers: usize,
    pub healthy: usize,
    pub no_route: usize,
    /// Off rank 0, stale or lost.
    pub degraded: usize,
    /// Healthy workers with headroom 0.
    pub one_failure: usize,
    /// Every worker is given the built-in order.
    pub built_in: bool,
    /// The document on disk does not validate (workers keep the last
    /// accepted list), or the hub cannot read or replace it, or it is
    /// gone (the hub's own judgement: a write or the next start would
    /// fail).
    pub config_invalid: bool,
    /// The guard halted the last staged rollout, and nothing was written
    /// since (the hub says it: `/v1/health`'s word).
    pub rollout_halted: bool,
    /// The hub cannot write its database now (`/v1/health`'s
    /// `database.unavailable`): it refuses what must be durable.
    pub database_unavailable: bool,
}

impl Figures {
    /// The figures of the workers a snapshot holds (`macfleet get
    /// workers`), counted as the TUI counts its fleet: off rank 0, stale or
    /// lost is degraded; a lost worker is not a missing route.
    pub fn of_workers(views: &[crate::wire::WorkerView]) -> Figures {
        let mut f = Figures::default();
        for w in views {
            f.add_worker(w);
        }
        f
    }

    /// Counts one more worker of a snapshot into the figures, as
    /// [`Figures::of_workers`] does (for a reader that streams a page and
    /// holds no worker).
    pub fn add_worker(&mut self, w: &crate::wire::WorkerView) {
        use crate::wire::WorkerState;
        self.workers += 1;
        let rank = w
            .active_agent
            .as_ref()
            .and_then(|a| w.agents.iter().position(|x| x == a));
        match w.state {
            WorkerState::Healthy => {
                self.healthy += 1;
                if w.active_agent.is_some() && rank != Some(0) {
                    self.degraded += 1;
                }
            }
            WorkerState::Stale => self.degraded += 1,
            WorkerState::Lost => {
                self.degraded += 1;
                return;
            }
        }
        if w.active_agent.is_none() {
            self.no_route += 1;
        }
        if w.one_failure_from_no_route() {
            self.one_failure += 1;
        }
    }
}

/// The word, most severe first (the derived order is the severity order:
/// a smaller value is more severe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    HubDown,
    Unauthorized,
    Forbidden,
    HubError,
    NoRoute(usize),
    BuiltInOrder,
    ConfigInvalid,
    DatabaseUnavailable,
    AtRisk(usize),
    RolloutHalted,
    NoWorkers,
    Degraded(usize),
    Ok,
}

impl Verdict {
    /// From `AT RISK` up the hub's `status` is `degraded`.
    pub fn is_degraded_status(self) -> bool {
        self <= Verdict::AtRisk(usize::MAX)
    }

    /// Red on screen: what needs someone now (`DEGRADED` is yellow, `OK`
    /// green).
    pub fn is_alarm(self) -> bool {
        self.is_degraded_status() || self == Verdict::RolloutHalted
    }
}

/// Over a quarter of the healthy workers (at least one) are one failure
/// from no route, as `MacfleetHeadroomLow` reads it.
pub fn at_risk(one_failure: usize, healthy: usize) -> bool {
    one_failure > 0 && one_failure as f64 / healthy.max(1) as f64 > AT_RISK_SHARE
}

/// The word. Always `Some` today (an empty fleet is `NO WORKERS`: `OK`
/// would say all is well of a fleet nobody heard from); the `Option` is
/// kept for callers that have nothing to judge yet (the TUI before its
/// first answer).
pub fn verdict(reach: Reach, f: &Figures) -> Option<Verdict> {
    match reach {
        Reach::Down => return Some(Verdict::HubDown),
        Reach::Unauthorized => return Some(Verdict::Unauthorized),
        Reach::Forbidden => return Some(Verdict::Forbidden),
        Reach::BrokeBound => return Some(Verdict::HubError),
        Reach::Up => {}
    }
    Some(if f.no_route > 0 {
        Verdict::NoRoute(f.no_route)
    } else if f.built_in {
        Verdict::BuiltInOrder
    } else if f.config_invalid {
        Verdict::ConfigInvalid
    } else if f.database_unavailable {
        Verdict::DatabaseUnavailable
    } else if at_risk(f.one_failure, f.healthy) {
        Verdict::AtRisk(f.one_failure)
    } else if f.rollout_halted {
        Verdict::RolloutHalted
    } else if f.workers == 0 {
        Verdict::NoWorkers
    } else if f.degraded > 0 {
        Verdict::Degraded(f.degraded)
    } else {
        Verdict::Ok
    })
}

/// `1,024`.
fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Verdict::HubDown => f.write_str("HUB DOWN"),
            Verdict::Unauthorized => f.write_str("UNAUTHORIZED"),
            Verdict::Forbidden => f.write_str("FORBIDDEN"),
            Verdict::HubError => f.write_str("HUB ERROR"),
            Verdict::NoRoute(n) => write!(f, "NO ROUTE {}", count(n)),
            Verdict::BuiltInOrder => f.write_str("BUILT-IN ORDER"),
            Verdict::ConfigInvalid => f.write_str("CONFIG INVALID"),
            Verdict::DatabaseUnavailable => f.write_str("DATABASE UNAVAILABLE"),
            Verdict::AtRisk(n) => write!(f, "AT RISK {}", count(n)),
            Verdict::RolloutHalted => f.write_str("ROLLOUT HALTED"),
            Verdict::NoWorkers => f.write_str("NO WORKERS"),
            Verdict::Degraded(n) => write!(f, "DEGRADED {}", count(n)),
            Verdict::Ok => f.write_str("OK"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_wrong() -> Figures {
        Figures {
            workers: 40,
            healthy: 40,
            no_route: 2,
            degraded: 5,
            one_failure: 38,
            built_in: true,
            config_invalid: true,
            rollout_halted: true,
            database_unavailable: true,
        }
    }

    /// Each word wins over every one below it: take the figures where
    /// everything is wrong and put right one thing at a time, top down.
    #[test]
    fn the_order_of_severity() {
        let mut f = all_wrong();
        let v = |r, f: &Figures| verdict(r, f).map(|v| v.to_string());
        assert_eq!(v(Reach::Down, &f).as_deref(), Some("HUB DOWN"));
        assert_eq!(v(Reach::Unauthorized, &f).as_deref(), Some("UNAUTHORIZED"));
        assert_eq!(v(Reach::Forbidden, &f).as_deref(), Some("FORBIDDEN"));
        assert_eq!(v(Reach::BrokeBound, &f).as_deref(), Some("HUB ERROR"));
        let mut seen = Vec::new();
        for fix in 0..7 {
            seen.push(verdict(Reach::Up, &f).expect("a word"));
            match fix {
                0 => f.no_route = 0,
                1 => f.built_in = false,
                2 => f.config_invalid = false,
                3 => f.database_unavailable = false,
                4 => f.one_failure = 10,
                5 => f.rollout_halted = false,
                _ => f.degraded = 0,
            }
        }
        seen.push(verdict(Reach::Up, &f).expect("a word"));
        let words: Vec<String> = seen.iter().map(|v| v.to_string()).collect();
        assert_eq!(
            words,
            [
                "NO ROUTE 2",
                "BUILT-IN ORDER",
                "CONFIG INVALID",
                "DATABASE UNAVAILABLE",
                "AT RISK 38",
                "ROLLOUT HALTED",
                "DEGRADED 5",
                "OK"
            ]
        );
        // The derived order is the same order.
        let mut sorted = seen.clone();
        sorted.sort();
        assert_eq!(sorted, seen);
        assert!(Verdict::HubError < Verdict::NoRoute(0));
    }

    /// aug19 after its upstreams return: every healthy worker on rank 0
    /// and one failure from no route is `AT RISK`, not `OK`.
    #[test]
    fn one_failure_from_no_route_is_at_risk_past_a_quarter() {
        let f = |one_failure, degraded| Figures {
            workers: 40,
            healthy: 40,
            degraded,
            one_failure,
            ..Figures::default()
        };
        assert_eq!(verdict(Reach::Up, &f(40, 0)), Some(Verdict::AtRisk(40)));
        assert_eq!(verdict(Reach::Up, &f(11, 3)), Some(Verdict::AtRisk(11)));
        // Exactly a quarter does not page (the alert is `> 0.25`).
        assert_eq!(verdict(Reach::Up, &f(10, 3)), Some(Verdict::Degraded(3)));
        assert_eq!(verdict(Reach::Up, &f(10, 0)), Some(Verdict::Ok));
        assert!(at_risk(1, 0));
        assert!(!at_risk(0, 0));
    }

    #[test]
    fn an_invalid_file_is_said_over_a_calm_fleet() {
        let f = Figures {
            workers: 3,
            healthy: 3,
            config_invalid: true,
            ..Figures::default()
        };
        assert_eq!(verdict(Reach::Up, &f), Some(Verdict::ConfigInvalid));
        // And with no workers at all.
        let none = Figures {
            config_invalid: true,
            ..Figures::default()
        };
        assert_eq!(verdict(Reach::Up, &none), Some(Verdict::ConfigInvalid));
    }

    /// No worker ever reported: not `OK` (nothing is known to be well),
    /// and below every word about the list (an empty fleet of a hub whose
    /// file does not validate is `CONFIG INVALID`).
    #[test]
    fn an_empty_fleet_is_no_workers() {
        let v = verdict(Reach::Up, &Figures::default());
        assert_eq!(v, Some(Verdict::NoWorkers));
        assert_eq!(v.map(|v| v.to_string()).as_deref(), Some("NO WORKERS"));
        assert!(Verdict::RolloutHalted < Verdict::NoWorkers);
        assert!(Verdict::NoWorkers < Verdict::Degraded(0));
        assert!(!Verdict::NoWorkers.is_degraded_status());
        assert!(!Verdict::NoWorkers.is_alarm());
        let halted = Figures {
            rollout_halted: true,
            ..Figures::default()
        };
        assert_eq!(verdict(Reach::Up, &halted), Some(Verdict::RolloutHalted));
        assert_eq!(
            verdict(Reach::Down, &Figures::default()),
            Some(Verdict::HubDown)
        );
    }

    #[test]
    fn degraded_status_from_at_risk_up() {
        assert!(Verdict::AtRisk(1).is_degraded_status());
        assert!(Verdict::ConfigInvalid.is_degraded_status());
        assert!(Verdict::NoRoute(1).is_degraded_status());
        assert!(!Verdict::Degraded(4).is_degraded_status());
        assert!(!Verdict::Ok.is_degraded_status());
        assert_eq!(Verdict::NoRoute(1024).to_string(), "NO ROUTE 1,024");
    }
}
