//! The large-fleet mode: past [`LARGE_FLEET`] workers the TUI holds the
//! hub's summary (`GET /v1/summary`, the `summary` event) and the rows it
//! shows (a window of the hub's sorted, filtered list, plus a margin),
//! never the fleet. The header and the Ladder count from the summary (its
//! counts are [`Aggregates`]); the Workers view pages through windows
//! (`GET /v1/workers?sort=…&q=…&offset=…&limit=…`) as its cursor moves.
//! Below the threshold nothing of this is used.

use std::time::Instant;

use super::fleet::{AgentCounts, Aggregates, Slot};
use crate::wire::{Summary, WindowQuery, WindowSort};

/// Fleets of at least this many workers (by the hub's summary) are shown
/// in large-fleet mode; a session leaves it only below half of it, so a
/// fleet at the line does not flip between modes. Where the hub starts
/// pacing its fleet at its default (20,000 heartbeats a second at 10 s):
/// below it, holding the fleet is cheap (100,000 workers: a first screen
/// in under a second, ~80 MiB, docs/performance.md) and every local
/// nicety, `G` included, answers without a round trip; above it, a window
/// costs the hub a pass per request and the copy grows past 100 MB.
pub const LARGE_FLEET: u64 = 200_000;

/// Overrides [`LARGE_FLEET`] (a number of workers): tests cross the line
/// with a few hundred workers instead of 200,000.
pub const LARGE_ENV: &str = "MACFLEET_LARGE_FLEET";

/// Rows asked beyond each edge of the rows on screen, so `j`/`k` and a
/// page move stay local; a window is asked again when the screen comes
/// within half of this of an edge the window holds.
pub const MARGIN: usize = 100;

/// The threshold: [`LARGE_ENV`] if it is set to a number, else
/// [`LARGE_FLEET`].
pub fn threshold() -> u64 {
    std::env::var(LARGE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(LARGE_FLEET)
}

/// Capability entries of names the fleet's summary does not list one by
/// one (its `other` agent: past 256 names) that weigh as much as
/// [`LARGE_FLEET`] workers. A fleet that reports names of its own (each
/// worker its own 64-agent list, say) costs the TUI each of those names:
/// ~100 bytes held and ~150 of page, where a fleet sharing its names costs
/// a few hundred bytes a worker whatever its lists (issue 30: 30,000
/// workers of 64 names each peaked at 1,117 MiB held whole). 131,072 such
/// entries are about 2,000 such workers, or 13 MB held.
pub const OWN_NAMES_LARGE: u64 = 131_072;

/// The capability entries `s` counts under `other` (names past the 256 it
/// lists): a failing entry may count twice, which only weighs it more.
pub fn own_names(s: &Summary) -> u64 {
    s.agents
        .iter()
        .filter(|a| a.agent == "other")
        .map(|a| a.capable + a.no_binary + a.no_token + a.preflight_failed)
        .sum()
}

/// What the fleet of `s` weighs against the threshold, in workers: its
/// count, or its names of its own scaled so that [`OWN_NAMES_LARGE`] of
/// them weigh `threshold` workers, whichever is more.
pub fn weight(s: &Summary, threshold: u64) -> u64 {
    let names = u128::from(own_names(s)) * u128::from(threshold) / u128::from(OWN_NAMES_LARGE);
    s.workers.max(u64::try_from(names).unwrap_or(u64::MAX))
}

/// Whether the fleet of summary `s` is shown in large-fleet mode, `now`
/// whether it is: from `threshold` on (by its [`weight`]: its count or
/// what its names cost), and until it falls below half of it.
pub fn is_large(s: &Summary, now: bool, threshold: u64) -> bool {
    let w = weight(s, threshold);
    if now {
        w >= threshold / 2
    } else {
        w >= threshold
    }
}

/// A window the Workers view asks for: rows `from..from + rows` of the
/// list as the view orders it (`reverse`: the hub's order turned).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowAsk {
    /// Rises with every ask of a session: an answer older than the one
    /// held is dropped.
    pub seq: u64,
    pub sort: WindowSort,
    pub q: String,
    pub reverse: bool,
    /// The view's first row asked.
    pub from: u64,
    pub rows: u32,
    /// The list's length when it was asked (a reversed view counts from
    /// the hub's end).
    pub total: u64,
}

impl WindowAsk {
    /// The hub's query for it.
    pub fn query(&self) -> WindowQuery {
        let offset = if self.reverse {
            self.total.saturating_sub(self.from + u64::from(self.rows))
        } else {
            self.from
        };
        WindowQuery {
            sort: self.sort,
            q: self.q.clone(),
            limit: self.rows.max(1),
            offset: Some(offset),
            page: None,
        }
    }

    /// Whether `other` asks for the same list (sort, filter, direction).
    pub fn same_list(&self, other: &WindowAsk) -> bool {
        (self.sort, &self.q, self.reverse) == (other.sort, &other.q, other.reverse)
    }
}

/// The rows held: slots of the fleet in the view's order, the first at
/// row `base` of a list of `total`.
#[derive(Debug, Clone, Default)]
pub struct Window {
    /// What it answered.
    pub ask: Option<WindowAsk>,
    pub total: u64,
    pub base: u64,
    pub slots: Vec<Slot>,
    /// When it arrived.
    pub at: Option<Instant>,
}

/// What a large-fleet session holds besides the window's workers.
#[derive(Debug, Clone, Default)]
pub struct Large {
    /// The hub's last summary (its counts are the fleet's aggregates).
    pub summary: Option<Summary>,
    /// When it arrived.
    pub summary_at: Option<Instant>,
    pub window: Window,
    /// The newest window asked.
    pub asked: Option<WindowAsk>,
    next_seq: u64,
}

impl Large {
    /// A new ask for the view's rows `from..from + rows`; `None` when the
    /// same is already asked (and not yet answered) or held.
    pub fn ask(
        &mut self,
        sort: WindowSort,
        q: &str,
        reverse: bool,
        from: u64,
        rows: u32,
        total: u64,
    ) -> Option<WindowAsk> {
        let same = |a: &WindowAsk| {
            (a.sort, a.q.as_str(), a.reverse, a.from, a.rows) == (sort, q, reverse, from, rows)
        };
        if self.asked.as_ref().is_some_and(same) {
            return None;
        }
        self.next_seq += 1;
        let a = WindowAsk {
            seq: self.next_seq,
            sort,
            q: q.to_string(),
            reverse,
            from,
            rows,
            total,
        };
        self.asked = Some(a.clone());
        Some(a)
    }

    /// Whether an answer to `ask` is to be taken: it answers the list the
    /// view shows now, and is not older than the window held.
    pub fn takes(&self, ask: &WindowAsk) -> bool {
        let current = self.asked.as_ref().is_none_or(|a| a.same_list(ask));
        let newer = self.window.ask.as_ref().is_none_or(|w| ask.seq >= w.seq);
        current && newer
    }

    /// The summary's age at `mono`.
    pub fn summary_age(&self, mono: Instant) -> Option<std::time::Duration> {
        self.summary_at.map(|t| mono.saturating_duration_since(t))
    }
}

/// The summary's counts as the TUI's own aggregates.
pub fn aggregates(s: &Summary) -> Aggregates {
    let n = |x: u64| usize::try_from(x).unwrap_or(usize::MAX);
    Aggregates {
        total: n(s.workers),
        healthy: n(s.healthy),
        stale: n(s.stale),
        lost: n(s.lost),
        no_route: n(s.no_route),
        healthy_no_route: n(s.healthy_no_route),
        degraded: n(s.degraded),
        out_of_sync: n(s.out_of_sync),
        one_failure: n(s.one_failure_from_no_route),
        headroom_known: n(s.headroom_known),
        agents: s
            .agents
            .iter()
            .map(|a| {
                (
                    a.agent.clone(),
                    AgentCounts {
                        capable: n(a.capable),
                        active: n(a.active),
                        no_binary: n(a.no_binary),
                        no_token: n(a.no_token),
                        preflight_failed: n(a.preflight_failed),
                        last_rung: n(a.last_rung),
                    },
                )
            })
            .collect(),
        from_hub: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A summary of `workers` workers and, past its 256 named agents,
    /// `other` capability entries of names of their own.
    fn summary(workers: u64, other: Option<u64>) -> Summary {
        let agent = |name: &str, capable| crate::wire::AgentSummary {
            agent: name.into(),
            capable,
            active: 0,
            no_binary: 0,
            no_token: 0,
            preflight_failed: 0,
            last_rung: 0,
        };
        let mut agents = vec![agent("opencode", workers)];
        agents.extend(other.map(|n| agent("other", n)));
        Summary {
            now: chrono::Utc::now(),
            config_revision: "r".into(),
            heartbeat_interval_s: 10,
            cursor: "c".into(),
            workers,
            healthy: workers,
            stale: 0,
            lost: 0,
            no_route: 0,
            healthy_no_route: 0,
            degraded: 0,
            out_of_sync: 0,
            one_failure_from_no_route: 0,
            headroom_known: workers,
            agents,
            revisions: Vec::new(),
            urgent: Vec::new(),
        }
    }

    #[test]
    fn the_mode_is_entered_at_the_threshold_and_left_below_half() {
        assert!(!is_large(&summary(19_999, None), false, 20_000));
        assert!(is_large(&summary(20_000, None), false, 20_000));
        assert!(is_large(&summary(10_000, true.then_some(0)), true, 20_000));
        assert!(!is_large(&summary(9_999, None), true, 20_000));
    }

    /// Issue 30: 30,000 workers each with 64 names of its own are shown by
    /// windows, as 200,000 sharing their names are; 30,000 sharing theirs
    /// are held whole.
    #[test]
    fn a_fleet_of_names_of_its_own_is_large_by_what_it_costs() {
        let own = summary(30_000, Some(30_000 * 64 - 256));
        assert!(is_large(&own, false, LARGE_FLEET));
        assert!(!is_large(&summary(30_000, None), false, LARGE_FLEET));
        // About 2,000 such workers cross the line; half of it keeps the mode.
        assert!(!is_large(
            &summary(1_900, Some(1_900 * 64)),
            false,
            LARGE_FLEET
        ));
        assert!(is_large(
            &summary(2_100, Some(2_100 * 64)),
            false,
            LARGE_FLEET
        ));
        assert!(is_large(
            &summary(1_100, Some(1_100 * 64)),
            true,
            LARGE_FLEET
        ));
        assert!(!is_large(&summary(900, Some(900 * 64)), true, LARGE_FLEET));
        // A threshold set for a test weighs the names the same way.
        assert!(is_large(&summary(10, Some(OWN_NAMES_LARGE)), false, 300));
        assert!(!is_large(
            &summary(10, Some(OWN_NAMES_LARGE / 2)),
            false,
            300
        ));
    }

    #[test]
    fn a_reversed_window_is_asked_from_the_hubs_end() {
        let mut l = Large::default();
        let a = l
            .ask(WindowSort::Age, "", true, 0, 50, 1_000)
            .expect("a first ask");
        assert_eq!(a.query().offset, Some(950));
        assert!(l.ask(WindowSort::Age, "", true, 0, 50, 1_000).is_none());
        let b = l
            .ask(WindowSort::Age, "", false, 0, 50, 1_000)
            .expect("another list");
        assert_eq!(b.query().offset, Some(0));
        assert!(
            !l.takes(&a),
            "an answer to the other direction is not this view's"
        );
        assert!(l.takes(&b));
    }
}
