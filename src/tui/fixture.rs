//! A deterministic fleet for tests, snapshots and benchmarks: no network,
//! a fixed hub clock.

use std::collections::BTreeMap;
use std::time::Instant;

use chrono::{DateTime, TimeDelta, Utc};

use super::app::App;
use super::msg::Msg;
use super::ui::theme::Theme;
use crate::wire::{
    Capability, Cause, CauseKind, CauseSource, Failover, FailoverRecord, FailoversPage, History,
    HistoryEntry, Preflight, WorkerState, WorkerView, WorkersPage,
};

/// The fixed hub clock: 2026-11-29T15:04:05Z.
pub fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-29T15:04:05Z")
        .expect("valid")
        .with_timezone(&Utc)
}

pub const LADDER: [&str; 4] = ["opencode", "pi", "claude", "codex"];
pub const REVISION: &str = "r42";

/// The hub's document at [`REVISION`]: [`LADDER`] with a comment beside
/// each agent, a commented-out `cursor` and a key after the list.
pub const DOC: &str = "# the fleet's route order\n[fleet]\nMAC_CODING_AGENTS = [\n    \"opencode\", # cheap\n    \"pi\",       # fast\n    # \"cursor\",  # no seat yet\n    \"claude\",   # strong\n    \"codex\",    # last\n]\nretries = 2\n";

fn ladder() -> Vec<String> {
    LADDER.iter().map(|s| s.to_string()).collect()
}

fn mix(i: usize) -> u64 {
    // A small integer hash: deterministic variety without a RNG.
    let mut x = i as u64 ^ 0x9e37_79b9_7f4a_7c15;
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

const KINDS: [(CauseKind, Option<u16>, CauseSource); 5] = [
    (CauseKind::RateLimited, Some(429), CauseSource::HubRouter),
    (CauseKind::Auth, Some(401), CauseSource::HubRouter),
    (CauseKind::MissingBinary, None, CauseSource::Preflight),
    (CauseKind::UpstreamStatus, Some(503), CauseSource::HubRouter),
    (CauseKind::NoToken, None, CauseSource::Worker),
];

pub fn failover(i: usize, at: DateTime<Utc>, to_none: bool) -> Failover {
    let (kind, status, source) = KINDS[(mix(i) % 5) as usize];
    Failover {
        id: format!("w-{i:05}-{:06}", mix(i) % 1000),
        at,
        from: "opencode".into(),
        to: if to_none { None } else { Some("claude".into()) },
        cause: Cause {
            kind,
            status,
            source,
            detail: Some(format!("opencode route: {kind} from upstream")),
        },
    }
}

/// Worker `i` as the hub reports it at `now`. Every 13th has no route,
/// every 17th is stale, every 23rd lost, every 5th failed over recently,
/// every 11th is behind on its revision.
pub fn worker(i: usize, now: DateTime<Utc>) -> WorkerView {
    let h = mix(i);
    let age = if i % 23 == 7 {
        600
    } else if i % 17 == 3 {
        60
    } else {
        (h % 25) as i64
    };
    let received_at = now - TimeDelta::seconds(age);
    let no_route = i % 13 == 5;
    let mut caps = BTreeMap::new();
    for (k, a) in LADDER.iter().enumerate() {
        let cap = Capability {
            binary: !(a == &"pi" && i % 3 == 0),
            token: !(no_route && k < 3 || a == &"codex" && i % 4 == 0),
            preflight: if no_route {
                Preflight::Failed
            } else {
                Preflight::Ok
            },
        };
        caps.insert(a.to_string(), cap);
    }
    let failed_over = i % 5 == 0 || no_route;
    let active = if no_route {
        None
    } else if failed_over {
        Some("claude".to_string())
    } else {
        Some("opencode".to_string())
    };
    let last_failover = failed_over.then(|| {
        failover(
            i,
            now - TimeDelta::seconds(30 + (h % 3000) as i64),
            no_route,
        )
    });
    WorkerView {
        worker: format!("w-{i:05}"),
        host: format!("gpu-node-{:03}", i % 400),
        received_at,
        sent_at: received_at - TimeDelta::seconds(1),
        state: WorkerState::from_age(age as f64, 10),
        config_revision: Some(if i % 11 == 4 { "r41" } else { REVISION }.to_string()),
        in_sync: i % 11 != 4,
        agents: ladder(),
        active_agent: active,
        capabilities: caps,
        last_failover,
        last_failover_received_at: None,
        held_off: Vec::new(),
        headroom: None,
        clock_skew_s: None,
        pool: None,
        heartbeat_interval_s: None,
        turn: None,
        next_turn_agent: None,
        cohort: false,
    }
}

pub fn page(workers: Vec<WorkerView>, now: DateTime<Utc>, delta: bool, cursor: u64) -> WorkersPage {
    WorkersPage {
        now,
        config_revision: REVISION.into(),
        heartbeat_interval_s: 10,
        cursor: format!("c{cursor}"),
        delta,
        workers,
        total: None,
        offset: None,
        next_page: None,
    }
}

pub fn fleet(n: usize, now: DateTime<Utc>) -> Vec<WorkerView> {
    (0..n).map(|i| worker(i, now)).collect()
}

/// `n` failovers over the last hour, seq 1..=n, oldest first.
pub fn failovers(n: usize, now: DateTime<Utc>) -> FailoversPage {
    let events: Vec<FailoverRecord> = (0..n)
        .map(|k| {
            let i = k * 5;
            let ago = ((n - k) as i64 * 3599) / n.max(1) as i64;
            let at = now - TimeDelta::seconds(ago);
            FailoverRecord {
                seq: k as u64 + 1,
                worker: format!("w-{i:05}"),
                host: format!("gpu-node-{:03}", i % 400),
                received_at: at + TimeDelta::seconds(1),
                failover: Failover {
                    id: format!("w-{i:05}-log{k}"),
                    ..failover(i, at, i % 13 == 5)
                },
            }
        })
        .collect();
    FailoversPage {
        next: n as u64,
        oldest: 1.min(n as u64),
        events,
    }
}

pub fn history(now: DateTime<Utc>) -> History {
    let entry = |rev: &str, mins: i64, by: &str, agents: &[&str], prev: &[&str]| HistoryEntry {
        revision: rev.into(),
        at: now - TimeDelta::minutes(mins),
        by: by.into(),
        agents: agents.iter().map(|s| s.to_string()).collect(),
        previous_agents: prev.iter().map(|s| s.to_string()).collect(),
        // The writing client the hub recorded (none before it recorded it).
        client: match rev {
            "r42" => Some("macfleet/0.1.0".into()),
            "r41" => Some("curl/8.5.0".into()),
            _ => None,
        },
    };
    History {
        revisions: vec![
            entry(
                "r42",
                20,
                "alice",
                &LADDER,
                &["pi", "opencode", "claude", "codex"],
            ),
            entry(
                "r41",
                180,
                "bob",
                &["pi", "opencode", "claude", "codex"],
                &["opencode", "claude"],
            ),
            entry("r40", 3000, "alice", &["opencode", "claude"], &[]),
        ],
    }
}

/// An app fed with `n` workers, 40 failovers and three revisions, at the
/// fixed clock, stream up, sized `w`x`h`.
pub fn app(n: usize, can_write: bool, theme: Theme, w: u16, h: u16) -> (App, Instant) {
    let m0 = Instant::now();
    let now = t0();
    let mut app = App::new("http://127.0.0.1:7878", can_write, theme, m0);
    app.update(Msg::Resize(w, h));
    app.update(Msg::Whoami(crate::wire::Whoami {
        name: if can_write { "alice" } else { "wall" }.into(),
        role: if can_write {
            crate::wire::Role::Owner
        } else {
            crate::wire::Role::Viewer
        },
        hub: "prod-hub".into(),
        api: "v1".into(),
        instance: Some("0f1e2d3c4b5a6978".into()),
    }));
    app.update(Msg::Workers {
        page: page(fleet(n, now), now, false, 1),
        at: m0,
    });
    app.update(Msg::Agents {
        revision: REVISION.into(),
        agents: ladder(),
        text: DOC.into(),
    });
    app.update(Msg::History(history(now)));
    app.update(Msg::Failovers {
        page: failovers(40, now),
        fresh: true,
    });
    app.update(Msg::StreamUp);
    app.settle();
    (app, m0)
}

/// Failover `seq` from worker `w`, as the simulator's busy fleet sends
/// them (a quota cap: the same shapes, lengths and causes; ids of
/// realistic length; four a second from 2026-11-30 12:00). For the memory
/// test and the failover log's benches.
pub fn busy_failover(seq: u64, w: u64) -> FailoverRecord {
    let at = DateTime::<Utc>::from_timestamp(1_796_040_000, 0).expect("a time")
        + TimeDelta::seconds((seq / 4) as i64);
    let kind = [
        CauseKind::RateLimited,
        CauseKind::UpstreamStatus,
        CauseKind::Auth,
    ][(seq % 3) as usize];
    FailoverRecord {
        seq,
        worker: format!("w-{w:05}"),
        host: format!("node-{:04}", w % 250),
        received_at: at,
        failover: Failover {
            id: format!("{:08x}-{:04x}-4000-8000-{:012x}", seq, seq % 65_536, seq),
            at,
            from: "opencode".to_string(),
            to: Some("claude".to_string()),
            cause: Cause {
                kind,
                status: (kind == CauseKind::UpstreamStatus).then_some(503),
                source: CauseSource::HubRouter,
                detail: Some("route: upstream answered 503 Service Unavailable".to_string()),
            },
        },
    }
}

/// A summary of a fleet of `workers` at `now` (large-fleet mode's
/// counts): spread over the states and agents so every count differs.
pub fn summary(workers: u64, now: DateTime<Utc>) -> crate::wire::Summary {
    use crate::wire::{AgentSummary, RevisionCount};
    let lost = workers / 100;
    let stale = workers / 50;
    let agent = |name: &str, k: u64| AgentSummary {
        agent: name.into(),
        capable: workers.saturating_sub(lost + k * 1_000),
        active: if k == 0 {
            workers / 2
        } else {
            workers / (4 * k)
        },
        no_binary: 10 * k + 1,
        no_token: 20 * k + 2,
        preflight_failed: 30 * k + 3,
        last_rung: k,
    };
    crate::wire::Summary {
        now,
        config_revision: REVISION.into(),
        heartbeat_interval_s: 50,
        cursor: "c1-1".into(),
        workers,
        healthy: workers.saturating_sub(lost + stale),
        stale,
        lost,
        no_route: 12,
        healthy_no_route: 10,
        degraded: 4_100,
        out_of_sync: 30,
        one_failure_from_no_route: 230,
        headroom_known: workers.saturating_sub(lost),
        agents: LADDER
            .iter()
            .enumerate()
            .map(|(k, a)| agent(a, k as u64))
            .collect(),
        revisions: vec![
            RevisionCount {
                revision: Some(REVISION.into()),
                workers: workers.saturating_sub(lost + 30),
            },
            RevisionCount {
                revision: None,
                workers: 30,
            },
        ],
        urgent: Vec::new(),
    }
}

/// The hub's answer to `ask` over a list of `total` workers, worker `i`
/// at row `i` of the hub's order ([`worker`]`(i)`).
pub fn window(ask: &super::model::large::WindowAsk, total: u64, now: DateTime<Utc>) -> WorkersPage {
    let q = ask.query();
    let offset = q.offset.unwrap_or(0).min(total);
    let end = (offset + u64::from(q.limit)).min(total);
    let mut p = page(
        (offset..end).map(|i| worker(i as usize, now)).collect(),
        now,
        false,
        1,
    );
    p.total = Some(total);
    p.offset = Some(offset);
    p.next_page = (end < total).then(|| format!("p{end}"));
    p
}
