//! The parts of `macfleet get` beyond one table: `get worker ID`, the
//! failover filters (`--worker`, `--agent`, `--kind`, `--since`), `-o jsonl`,
//! and `--watch`, which follows the hub's event stream.

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use chrono::{DateTime, Utc};
use color_eyre::eyre::{Result, eyre};
use futures::StreamExt;
use serde::Serialize;

use super::{Exit, GetArgs, GetWhat, Output, exit};
use crate::client::{Client, FailoverQuery, HubEvent, StreamItem};
use crate::scrub::scrub;
use crate::wire::{Capability, Failover, FailoverRecord, FailoversPage, Preflight, WorkerView};

/// `30s`, `10m`, `2h`, `7d` (a bare number is seconds).
pub fn parse_duration(s: &str) -> Result<chrono::Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: i64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration: write 30s, 10m, 2h or 7d"))?;
    let secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{s:?}: the unit is s, m, h or d")),
    };
    n.checked_mul(secs)
        .filter(|s| *s <= 3650 * 86_400)
        .map(chrono::Duration::seconds)
        .ok_or_else(|| format!("{s:?} is longer than ten years"))
}

/// Refuse flags that do not go with what is asked (exit 2), before any
/// hub is asked anything.
pub fn check(args: &GetArgs) -> Result<()> {
    let filtered = args.worker.is_some()
        || args.agent.is_some()
        || args.kind.is_some()
        || args.since.is_some();
    let usage = |m: &str| Err(eyre!(Exit::new(exit::USAGE, m.to_string())));
    if args.what != GetWhat::Failovers && filtered {
        return usage("--worker, --agent, --kind and --since filter `get failovers` only");
    }
    if args.what != GetWhat::Worker && args.id.is_some() {
        return usage("an ID goes with `get worker ID` only");
    }
    if args.watch && !matches!(args.what, GetWhat::Workers | GetWhat::Failovers) {
        return usage("--watch follows `get workers` or `get failovers`");
    }
    Ok(())
}

/// `get worker ID` and `--watch`; `None` for the snapshots `get` prints
/// itself.
pub async fn run(client: &Client, args: &GetArgs, out: &mut impl Write) -> Option<Result<()>> {
    match (args.what, args.watch) {
        (GetWhat::Worker, false) => {
            let id = args.id.as_deref().unwrap_or_default();
            Some(worker(client, id, args.output, out).await)
        }
        (GetWhat::Workers, true) => Some(watch_workers(client, args.output, out).await),
        (GetWhat::Failovers, true) => Some(
            watch_failovers(
                client,
                &Filter::from_args(args),
                args.limit,
                args.output,
                out,
            )
            .await,
        ),
        _ => None,
    }
}

/// The failover filters of `get failovers`, as the hub and `--since` see them.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub worker: Option<String>,
    pub agent: Option<String>,
    pub kind: Option<crate::wire::CauseKind>,
    /// Only failovers at or after this time.
    pub since: Option<DateTime<Utc>>,
}

impl Filter {
    pub fn from_args(args: &GetArgs) -> Filter {
        Filter {
            worker: args.worker.clone(),
            agent: args.agent.clone(),
            kind: args.kind,
            since: args.since.map(|d| Utc::now() - d),
        }
    }

    /// The same test the hub applies, for events from the stream.
    pub fn matches(&self, r: &FailoverRecord) -> bool {
        let f = &r.failover;
        self.worker.as_ref().is_none_or(|w| *w == r.worker)
            && self
                .agent
                .as_ref()
                .is_none_or(|a| *a == f.from || f.to.as_ref() == Some(a))
            && self.kind.is_none_or(|k| k == f.cause.kind)
            && self.since.is_none_or(|t| f.at >= t)
    }

    fn query(&self, since: u64, limit: u32) -> FailoverQuery {
        FailoverQuery {
            since: Some(since),
            limit: Some(limit),
            worker: self.worker.clone(),
            agent: self.agent.clone(),
            kind: self.kind,
        }
    }
}

/// Pages per window, and windows, read at most: a bound on requests.
const MAX_PAGES: usize = 200;

/// The newest `limit` failovers that pass `filter`, oldest first. The hub
/// pages forward only, so windows of the log ending at its head are read,
/// each four times the last, until enough match or the log's start (or
/// `--since`) is reached.
pub async fn newest_failovers(
    client: &Client,
    filter: &Filter,
    limit: u32,
) -> Result<FailoversPage> {
    let limit = limit.clamp(1, 100_000);
    let head = client
        .failovers(&FailoverQuery {
            limit: Some(1),
            since: Some(u64::MAX / 2),
            ..FailoverQuery::default()
        })
        .await?;
    let floor = head.oldest.saturating_sub(1);
    let mut window = u64::from(limit).max(256);
    let mut pages = 0;
    loop {
        let start = head.next.saturating_sub(window).max(floor);
        let mut events: Vec<FailoverRecord> = Vec::new();
        let mut at = start;
        let mut reached_cutoff = false;
        while at < head.next && pages < MAX_PAGES {
            pages += 1;
            let page = client.failovers(&filter.query(at, 1000)).await?;
            let Some(last) = page.events.last() else {
                break;
            };
            let last_seq = last.seq;
            for e in page.events {
                // `head.next` is the newest seq when the head was read.
                if e.seq > head.next {
                    break;
                }
                if filter.since.is_some_and(|t| e.received_at < t) {
                    reached_cutoff = true;
                }
                if filter.matches(&e) {
                    events.push(e);
                }
            }
            at = page.next.max(last_seq);
        }
        let done = events.len() >= limit as usize
            || start <= floor
            || reached_cutoff
            || pages >= MAX_PAGES;
        if done {
            let skip = events.len().saturating_sub(limit as usize);
            events.drain(..skip);
            return Ok(FailoversPage {
                events,
                next: head.next,
                oldest: head.oldest,
            });
        }
        window = window.saturating_mul(4);
    }
}

/// Items as JSON, one a line.
pub fn write_jsonl<'a, T: Serialize + 'a>(
    out: &mut impl Write,
    items: impl IntoIterator<Item = &'a T>,
) -> Result<()> {
    for item in items {
        serde_json::to_writer(&mut *out, item)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Why a worker stands on its rung: each agent above its active one (every
/// one with no route), with the cause holding it off, since when and how
/// many times in the last hour (the same text as the TUI's detail; see
/// [`crate::text::held_off`]).
pub fn why(now: DateTime<Utc>, w: &WorkerView, recent: &[FailoverRecord]) -> Vec<String> {
    let mut failovers: Vec<&Failover> = recent.iter().map(|r| &r.failover).collect();
    failovers.extend(w.last_failover.as_ref());
    let mut lines: Vec<String> = crate::text::held_off(
        now,
        &w.agents,
        w.active_agent.as_deref(),
        |a| w.capabilities.get(a).copied(),
        &failovers,
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
                scrub(id)
            )
        )));
    };
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
    match output {
        Output::Json | Output::Jsonl => {
            let v = serde_json::json!({"worker": w, "recent_failovers": recent});
            if output == Output::Json {
                serde_json::to_writer_pretty(&mut *out, &v)?;
            } else {
                serde_json::to_writer(&mut *out, &v)?;
            }
            writeln!(out)?;
            return Ok(());
        }
        Output::Table | Output::Wide => {}
    }
    let age = |t| super::get::age(now, t);
    let rank = w
        .active_agent
        .as_ref()
        .and_then(|a| w.agents.iter().position(|x| x == a));
    let mut text = String::new();
    let mut kv = |k: &str, v: String| text.push_str(&format!("{k:<10}{v}\n"));
    kv("WORKER", w.worker.clone());
    kv("HOST", w.host.clone());
    kv(
        "STATE",
        format!(
            "{} (heard {} ago, sent {} ago by its clock)",
            w.state.as_str(),
            age(w.received_at),
            age(w.sent_at)
        ),
    );
    kv(
        "REVISION",
        format!(
            "{} ({})",
            w.config_revision.as_deref().unwrap_or("none"),
            if w.in_sync {
                "in sync".to_string()
            } else {
                format!("the hub is at {}", page.config_revision)
            }
        ),
    );
    kv(
        "ACTIVE",
        match (&w.active_agent, rank) {
            (Some(a), Some(r)) => format!("{a} (#{r})"),
            (Some(a), None) => format!("{a} (not in its list)"),
            (None, _) => "NO ROUTE".into(),
        },
    );
    for (i, line) in why(now, &w, &held).into_iter().enumerate() {
        kv(if i == 0 { "WHY" } else { "" }, line);
    }
    text.push_str("\nCAPABILITIES\n");
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    let caps: Vec<(usize, &String, Option<&Capability>)> = w
        .agents
        .iter()
        .enumerate()
        .map(|(i, a)| (i, a, w.capabilities.get(a)))
        .collect();
    text.push_str(&super::get::render_table(
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
    text.push_str("\nRECENT FAILOVERS\n");
    if recent.is_empty() {
        text.push_str("none in the hub's log\n");
    } else {
        for r in recent.iter().rev() {
            text.push_str(&failover_row(now, r));
            text.push('\n');
        }
    }
    out.write_all(scrub(&text).as_bytes())?;
    Ok(())
}

fn preflight(p: Preflight) -> String {
    match p {
        Preflight::Ok => "ok",
        Preflight::Failed => "failed",
        Preflight::Unknown => "unknown",
    }
    .into()
}

/// One failover on one line, as `--watch` prints them.
pub fn failover_row(now: DateTime<Utc>, r: &FailoverRecord) -> String {
    let f = &r.failover;
    format!(
        "{:<10} {:>4}  {:<16} {} → {}  {}{}  {}",
        r.seq,
        super::get::age(now, f.at),
        r.worker,
        f.from,
        f.to.as_deref().unwrap_or("NO ROUTE"),
        f.cause.kind,
        f.cause.status.map(|s| format!(" {s}")).unwrap_or_default(),
        f.cause.detail.as_deref().map(scrub).unwrap_or_default(),
    )
}

/// One worker on one line, as `--watch` prints them.
fn worker_row(now: DateTime<Utc>, w: &WorkerView) -> String {
    let active = match &w.active_agent {
        Some(a) => {
            let r = w.agents.iter().position(|x| x == a);
            format!("{a}{}", r.map(|r| format!(" #{r}")).unwrap_or_default())
        }
        None => "NO ROUTE".into(),
    };
    format!(
        "{} {:<16} {:<8} {:<16} {}",
        crate::wire::fmt_time(now),
        w.worker,
        w.state.as_str(),
        active,
        if w.in_sync { "in sync" } else { "behind" }
    )
}

/// What about a worker is worth a new line when it changes.
fn worker_key(
    w: &WorkerView,
) -> (
    crate::wire::WorkerState,
    Option<String>,
    bool,
    Option<String>,
) {
    (
        w.state,
        w.active_agent.clone(),
        w.in_sync,
        w.last_failover.as_ref().map(|f| f.id.clone()),
    )
}

/// `get workers --watch`: the fleet now, then a line for every worker
/// whose state, active agent, sync or last failover changes.
pub async fn watch_workers(client: &Client, output: Output, out: &mut impl Write) -> Result<()> {
    let mut seen: HashMap<String, _> = HashMap::new();
    let mut events = client.events(None, &["heartbeat", "state", "sync"]);
    wait_connected(&mut events).await;
    let page = client.workers(None).await?;
    let json = matches!(output, Output::Json | Output::Jsonl);
    if !json {
        writeln!(
            out,
            "{:<20} {:<16} {:<8} {:<16} SYNC",
            "AT", "WORKER", "STATE", "ACTIVE"
        )?;
    }
    let mut show = |w: &WorkerView, out: &mut dyn Write| -> Result<()> {
        let key = worker_key(w);
        if seen.get(&w.worker) == Some(&key) {
            return Ok(());
        }
        seen.insert(w.worker.clone(), key);
        if json {
            serde_json::to_writer(&mut *out, w)?;
            out.write_all(b"\n")?;
        } else {
            writeln!(out, "{}", scrub(&worker_row(Utc::now(), w)))?;
        }
        Ok(out.flush()?)
    };
    for w in &page.workers {
        show(w, out)?;
    }
    while let Some(item) = events.next().await {
        match item {
            StreamItem::Event {
                event: HubEvent::Heartbeat(w) | HubEvent::State(w) | HubEvent::Sync(w),
                ..
            } => show(&w, out)?,
            StreamItem::Event {
                event: HubEvent::Reset,
                ..
            } => {
                for w in &client.workers(None).await?.workers {
                    show(w, out)?;
                }
            }
            StreamItem::Disconnected { error, retry_in } => {
                eprintln!(
                    "macfleet: {} (again in {}s)",
                    scrub(&error),
                    retry_in.as_secs().max(1)
                );
            }
            _ => {}
        }
    }
    Ok(())
}

/// `get failovers --watch`: the newest failovers that pass the filter, then
/// each new one as the hub logs it.
pub async fn watch_failovers(
    client: &Client,
    filter: &Filter,
    limit: u32,
    output: Output,
    out: &mut impl Write,
) -> Result<()> {
    // Subscribe first, so nothing logged while the snapshot is read is lost;
    // what the snapshot already printed is skipped by its seq.
    let mut events = client.events(None, &["failover"]);
    wait_connected(&mut events).await;
    let page = newest_failovers(client, filter, limit).await?;
    let json = matches!(output, Output::Json | Output::Jsonl);
    let mut last = page.events.last().map_or(0, |e| e.seq);
    if !json {
        writeln!(
            out,
            "{:<10} {:>4}  {:<16} FROM → TO  CAUSE  DETAIL",
            "SEQ", "AGE", "WORKER"
        )?;
    }
    let show = |r: &FailoverRecord, out: &mut dyn Write| -> Result<()> {
        if json {
            serde_json::to_writer(&mut *out, r)?;
            out.write_all(b"\n")?;
        } else {
            writeln!(out, "{}", scrub(&failover_row(Utc::now(), r)))?;
        }
        Ok(out.flush()?)
    };
    for r in &page.events {
        show(r, out)?;
    }
    while let Some(item) = events.next().await {
        match item {
            StreamItem::Event {
                event: HubEvent::Failover(r),
                ..
            } if r.seq > last => {
                last = r.seq;
                if filter.matches(&r) {
                    show(&r, out)?;
                }
            }
            StreamItem::Event {
                event: HubEvent::Reset,
                ..
            } => {
                // Read what the stream could not replay from the log.
                let mut at = last;
                for _ in 0..MAX_PAGES {
                    let page = client.failovers(&filter.query(at, 1000)).await?;
                    for r in &page.events {
                        if r.seq <= last {
                            continue;
                        }
                        last = r.seq;
                        if filter.matches(r) {
                            show(r, out)?;
                        }
                    }
                    if page.next <= at {
                        break;
                    }
                    at = page.next;
                }
            }
            StreamItem::Disconnected { error, retry_in } => {
                eprintln!(
                    "macfleet: {} (again in {}s)",
                    scrub(&error),
                    retry_in.as_secs().max(1)
                );
            }
            _ => {}
        }
    }
    Ok(())
}

/// Wait (a bounded while) for the stream to say it is connected, so what
/// is read next is not older than what it will deliver.
async fn wait_connected(events: &mut (impl futures::Stream<Item = StreamItem> + Unpin)) {
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(item) = events.next().await {
            if item == StreamItem::Connected {
                return;
            }
        }
    })
    .await;
}
