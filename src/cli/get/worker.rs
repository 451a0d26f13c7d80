//! `macfleet get worker ID`: one worker in full, why it stands on its rung,
//! its capabilities and its recent failovers.

use std::io::Write;

use chrono::{DateTime, Utc};
use color_eyre::eyre::{Result, eyre};

use super::failovers::{Filter, newest_failovers};
use super::out::{line, safe_json};
use super::table::{age, render_table};
use crate::cli::{Exit, Output, exit};
use crate::client::Client;
use crate::wire::{Capability, Failover, FailoverRecord, Preflight, RecoveryRecord, WorkerView};

/// Why a worker stands on its rung: each agent above its active one (every
/// one with no route), with the cause holding it off, since when and how
/// many times in the last hour (the same text as the TUI's detail; see
/// [`crate::text::held_off`]). `back` are the worker's recent recoveries:
/// a hold-off that came back after one began afresh.
pub fn why(
    now: DateTime<Utc>,
    w: &WorkerView,
    recent: &[FailoverRecord],
    back: &[RecoveryRecord],
) -> Vec<String> {
    // Each dated as the hub can tell (the earlier of its `at` and the
    // hub's receipt): a worker's clock ahead does not make a hold-off new.
    let seen: Vec<Failover> = recent
        .iter()
        .map(|r| Failover {
            at: r.seen_at(),
            ..r.failover.clone()
        })
        .chain(w.last_failover.as_ref().map(|f| Failover {
            at: w.last_failover_at().unwrap_or(f.at),
            ..f.clone()
        }))
        .collect();
    let failovers: Vec<&Failover> = seen.iter().collect();
    let back: Vec<&RecoveryRecord> = back.iter().collect();
    // Received long after its time (a back-filled past): no recovery
    // before its receipt could be stamped.
    let late: std::collections::HashSet<&str> = recent
        .iter()
        .filter(|r| crate::wire::received_late(r.failover.at, r.received_at))
        .map(|r| r.failover.id.as_str())
        .chain(w.last_failover.as_ref().and_then(|f| {
            let r = w.last_failover_received_at?;
            crate::wire::received_late(f.at, r).then_some(f.id.as_str())
        }))
        .collect();
    let mut lines: Vec<String> = crate::text::held_off_watched(
        now,
        &w.agents,
        w.active_agent.as_deref(),
        |a| w.capabilities.get(a).copied(),
        &failovers,
        &back,
        |f| late.contains(f.id.as_str()),
    )
    .into_iter()
    .map(|r| format!("{}: {}", r.agent, r.text))
    .collect();
    if lines.is_empty() {
        lines.push(match &w.active_agent {
            Some(_) => "on the top of its list".into(),
            None => "its list is empty".into(),
        });
    }
    lines
}

/// `macfleet get worker ID`.
pub async fn worker(client: &Client, id: &str, output: Output, out: &mut impl Write) -> Result<()> {
    let page = client.workers(None).await?;
    let now = page.now;
    let Some(w) = page.workers.into_iter().find(|w| w.worker == id) else {
        return Err(eyre!(Exit::new(
            exit::ERROR,
            format!(
                "no worker {} reports to this hub (see: macfleet get workers)",
                line(id)
            )
        )));
    };
    let Held { held, recent, back } = held(client, &w, now).await?;
    match output {
        Output::Json | Output::Jsonl => {
            let v = serde_json::json!({"worker": w, "recent_failovers": recent});
            writeln!(out, "{}", safe_json(&v, output == Output::Json)?)?;
            return Ok(());
        }
        Output::Table | Output::Wide => {}
    }
    let rank = w
        .active_agent
        .as_ref()
        .and_then(|a| w.agents.iter().position(|x| x == a));
    let mut text = facts_text(now, &w, rank, &page.config_revision, &held, &back);
    text.push_str(&capabilities_text(&w, rank));
    text.push_str(&recent_text(now, &recent));
    out.write_all(text.as_bytes())?;
    Ok(())
}

/// What the hub holds of a worker's failovers and recoveries.
struct Held {
    /// The last hour's (up to 200) and the ten newest: the why lines' counts.
    held: Vec<FailoverRecord>,
    /// The ten newest, shown.
    recent: Vec<FailoverRecord>,
    /// The last hour's recoveries (none from a hub older than the log).
    back: Vec<RecoveryRecord>,
}

async fn held(client: &Client, w: &WorkerView, now: DateTime<Utc>) -> Result<Held> {
    let filter = Filter {
        worker: Some(w.worker.clone()),
        ..Filter::default()
    };
    // The last hour's (up to 200) for the why lines' counts; ten shown.
    let hour = Filter {
        since: Some(now - chrono::Duration::hours(1)),
        ..filter.clone()
    };
    let mut held = newest_failovers(client, &hour, 200).await?.events;
    let recent = newest_failovers(client, &filter, 10).await?.events;
    held.extend(recent.iter().cloned());
    let back = super::recoveries::Filter {
        worker: Some(w.worker.clone()),
        since: hour.since,
        ..Default::default()
    };
    // A hub older than the recovery log answers 404: no recovery known.
    let back = match super::recoveries::newest_recoveries(client, &back, 200).await {
        Ok(page) => page.events,
        Err(e)
            if e.downcast_ref::<crate::client::ClientError>()
                .is_some_and(|c| {
                    matches!(c, crate::client::ClientError::Hub { status: 404, .. })
                }) =>
        {
            Vec::new()
        }
        Err(e) => return Err(e),
    };
    Ok(Held { held, recent, back })
}

/// The worker's facts, one `KEY value` a line, and why it stands on its rung.
fn facts_text(
    now: DateTime<Utc>,
    w: &WorkerView,
    rank: Option<usize>,
    hub_revision: &str,
    held: &[FailoverRecord],
    back: &[RecoveryRecord],
) -> String {
    let age = |t| age(now, t);
    let mut text = String::new();
    let mut kv = |k: &str, v: String| text.push_str(&format!("{k:<10}{}\n", line(&v)));
    kv("WORKER", w.worker.clone());
    kv("HOST", w.host.clone());
    if let Some(p) = &w.pool {
        kv("POOL", p.clone());
    }
    kv(
        "STATE",
        format!(
            "{} (heard {} ago, sent {} ago by its clock)",
            w.state.as_str(),
            age(w.received_at),
            age(w.sent_at)
        ),
    );
    // Its clock against the hub's, past a minute either way (within it,
    // the heartbeat's time in flight is most of it).
    if let Some(c) = w.clock_skew_s.and_then(crate::text::clock_skew) {
        kv("CLOCK", c);
    }
    kv("REVISION", revision_text(w, hub_revision));
    kv(
        "ACTIVE",
        match (&w.active_agent, rank) {
            (Some(a), Some(r)) => format!("{a} (#{r})"),
            (Some(a), None) => format!("{a} (not in its list)"),
            (None, _) => "NO ROUTE".into(),
        },
    );
    if let Some(t) = turn_text(now, w) {
        kv("TURN", t);
    }
    if let Some(h) = crate::text::headroom_text(now, w) {
        kv("HEADROOM", h);
    }
    for (i, line) in why(now, w, held, back).into_iter().enumerate() {
        kv(if i == 0 { "WHY" } else { "" }, line);
    }
    text
}

/// `REVISION`: what it reports and whether that is what it was given
/// (docs/hub-api.md, `in_sync`: the revision and its list): `4c2e (in
/// sync)`, `4c2e (out of sync: on the hub's revision with another list:
/// cursor, claude)`, `9f1a (out of sync: the hub is at 4c2e)`.
fn revision_text(w: &WorkerView, hub_revision: &str) -> String {
    let rev = w.config_revision.as_deref().unwrap_or("none");
    if w.in_sync {
        return format!("{rev} (in sync)");
    }
    if !w.cohort && w.config_revision.as_deref() == Some(hub_revision) {
        return format!(
            "{rev} (out of sync: on the hub's revision with another list: {})",
            w.agents.join(", ")
        );
    }
    format!("{rev} (out of sync: the hub is at {hub_revision})")
}

/// `CAPABILITIES`: one agent of its list a row.
/// Its turn (issue 33), when it reports turns: `on claude for 4m:
/// switches at its next turn (to pi)`, `between turns`.
fn turn_text(now: DateTime<Utc>, w: &WorkerView) -> Option<String> {
    let next = w.next_turn_agent.clone().flatten();
    Some(match w.turn.as_ref()? {
        None => "between turns".into(),
        Some(t) if next.as_deref() == Some(t.agent.as_str()) => format!(
            "on {} for {} (stays on it at its next turn)",
            t.agent,
            age(now, t.since)
        ),
        Some(t) => format!(
            "on {} for {}: switches at its next turn (to {})",
            t.agent,
            age(now, t.since),
            next.as_deref().unwrap_or("no rung")
        ),
    })
}

fn capabilities_text(w: &WorkerView, rank: Option<usize>) -> String {
    let mut text = String::new();
    text.push_str("\nCAPABILITIES\n");
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    let caps: Vec<(usize, &String, Option<&Capability>)> = w
        .agents
        .iter()
        .enumerate()
        .map(|(i, a)| (i, a, w.capabilities.get(a)))
        .collect();
    text.push_str(&render_table(
        vec![
            ("RANK", 0, caps.iter().map(|c| c.0.to_string()).collect()),
            ("AGENT", 0, caps.iter().map(|c| c.1.clone()).collect()),
            (
                "BINARY",
                0,
                caps.iter()
                    .map(|c| c.2.map_or("-".into(), |c| yes(c.binary)))
                    .collect(),
            ),
            (
                "TOKEN",
                0,
                caps.iter()
                    .map(|c| c.2.map_or("-".into(), |c| yes(c.token)))
                    .collect(),
            ),
            (
                "PREFLIGHT",
                0,
                caps.iter()
                    .map(|c| c.2.map_or("-".into(), |c| preflight(c.preflight)))
                    .collect(),
            ),
            (
                "ACTIVE",
                0,
                caps.iter()
                    .map(|c| if Some(c.0) == rank { "*" } else { "" }.into())
                    .collect(),
            ),
        ],
        usize::MAX,
    ));
    text
}

/// `RECENT FAILOVERS`: the newest ten, oldest first.
fn recent_text(now: DateTime<Utc>, recent: &[FailoverRecord]) -> String {
    let mut text = String::new();
    text.push_str("\nRECENT FAILOVERS\n");
    if recent.is_empty() {
        text.push_str("none in the hub's log\n");
    } else {
        let r: Vec<&FailoverRecord> = recent.iter().rev().collect();
        text.push_str(&render_table(
            vec![
                ("SEQ", 0, r.iter().map(|e| e.seq.to_string()).collect()),
                (
                    "AGE",
                    0,
                    r.iter()
                        .map(|e| super::failovers::seen_age(now, e))
                        .collect(),
                ),
                (
                    "FROM → TO",
                    0,
                    r.iter().map(|e| route(&e.failover)).collect(),
                ),
                (
                    "CAUSE",
                    0,
                    r.iter()
                        .map(|e| e.failover.cause.kind.to_string())
                        .collect(),
                ),
                (
                    "STATUS",
                    0,
                    r.iter()
                        .map(|e| {
                            e.failover
                                .cause
                                .status
                                .map_or("-".into(), |s| s.to_string())
                        })
                        .collect(),
                ),
                (
                    "SOURCE",
                    0,
                    r.iter()
                        .map(|e| e.failover.cause.source.as_str().into())
                        .collect(),
                ),
                (
                    "DETAIL",
                    0,
                    r.iter()
                        .map(|e| e.failover.cause.detail.as_deref().unwrap_or("-").into())
                        .collect(),
                ),
            ],
            usize::MAX,
        ));
    }
    text
}

/// `from → to` (`NO ROUTE` when it had none).
fn route(f: &Failover) -> String {
    format!("{} → {}", f.from, f.to.as_deref().unwrap_or("NO ROUTE"))
}

fn preflight(p: Preflight) -> String {
    match p {
        Preflight::Ok => "ok",
        Preflight::Failed => "failed",
        Preflight::Unknown => "unknown",
    }
    .into()
}
