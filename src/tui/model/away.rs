//! The Ladder's AWAY NOW: per agent, how many live workers are held off it
//! right now (it stands above the rung they are on in their own list, or
//! they have no route) and by which cause, as the why line of each would
//! say it: the newest failover away from it the TUI holds (the log, the
//! worker's last failover), else what the worker's capability lacks.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::faillog::{ByKind, FailLog, kind_index};
use super::fleet::Fleet;
use crate::wire::{CauseKind, Preflight, WorkerState};

/// How often AWAY NOW is counted at most while the Ladder is on screen.
pub const EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Workers held off one agent now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AwayNow {
    /// By the cause holding them off.
    pub by_kind: ByKind,
    /// Held off with no cause we know (no failover held, and a capability
    /// that is fine or not reported).
    pub unrecorded: u32,
}

impl AwayNow {
    pub fn total(&self) -> u32 {
        self.by_kind.iter().sum::<u32>() + self.unrecorded
    }
}

/// AWAY NOW for every agent any live worker is held off.
pub fn away_now(fleet: &Fleet, log: &FailLog) -> HashMap<String, AwayNow> {
    // The newest failover away from each (worker, agent) in the log.
    let mut newest: HashMap<(&str, &str), (DateTime<Utc>, CauseKind), foldhash::fast::RandomState> =
        HashMap::default();
    // Each dated as the hub can tell: the earlier of its `at` and the receipt.
    for r in &log.records {
        let at = r.at.min(r.received_at);
        let e = newest.entry((&*r.worker, &*r.from)).or_insert((at, r.kind));
        if at > e.0 {
            *e = (at, r.kind);
        }
    }
    let mut out: HashMap<String, AwayNow> = HashMap::new();
    for (_, e) in fleet.iter() {
        if e.state == WorkerState::Lost {
            continue;
        }
        let v = &e.view;
        let above = match e.active_rank() {
            Some(r) => &v.agents[..r],
            None => &v.agents[..],
        };
        for agent in above {
            let mut cause = newest.get(&(&*v.worker, &**agent)).copied();
            if let (Some(last), Some(seen)) = (v.last_failover(), v.last_failover_at()) {
                if *last.from == **agent && cause.is_none_or(|(at, _)| seen >= at) {
                    cause = Some((seen, last.cause.kind));
                }
            }
            let kind = cause
                .map(|c| c.1)
                .or_else(|| match v.capabilities.get(agent) {
                    Some(c) if !c.binary => Some(CauseKind::MissingBinary),
                    Some(c) if !c.token => Some(CauseKind::NoToken),
                    Some(c) if c.preflight == Preflight::Failed => Some(CauseKind::PreflightFailed),
                    _ => None,
                });
            let slot = match out.get_mut(&**agent) {
                Some(s) => s,
                None => out.entry(agent.to_string()).or_default(),
            };
            match kind {
                Some(k) => slot.by_kind[kind_index(k)] += 1,
                None => slot.unrecorded += 1,
            }
        }
    }
    out
}
