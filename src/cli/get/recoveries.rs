//! `macfleet get recoveries`: workers back on a higher rung, like `get
//! failovers` — the filters (`--worker`, `--agent`, `--since`), the newest
//! matches (windows of the log read back from its head), the table, and
//! `--watch` (the `recovery` events as they come).

use std::io::Write;

use chrono::{DateTime, Utc};
use color_eyre::eyre::Result;
use futures::StreamExt;

use super::failovers::MAX_PAGES;
use super::out::{write_json, write_jsonl};
use super::table::{age, render_table};
use crate::cli::{GetArgs, Output};
use crate::client::{Client, FailoverQuery, HubEvent, StreamItem};
use crate::wire::{RecoveriesPage, RecoveryRecord};

/// The filters of `get recoveries`.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub worker: Option<String>,
    pub agent: Option<String>,
    pub since: Option<DateTime<Utc>>,
}

impl Filter {
    pub fn from_args(args: &GetArgs) -> Filter {
        Filter {
            worker: args.worker.clone(),
            agent: args.agent.clone(),
            since: args.since.map(|d| Utc::now() - d),
        }
    }

    /// The hub's test, for events from the stream, and `--since`.
    pub fn matches(&self, r: &RecoveryRecord) -> bool {
        self.worker.as_ref().is_none_or(|w| *w == r.worker)
            && self
                .agent
                .as_ref()
                .is_none_or(|a| *a == r.to || r.from.as_ref() == Some(a))
            && self.since.is_none_or(|t| r.at >= t)
    }

    fn query(&self, since: u64, limit: u32) -> FailoverQuery {
        FailoverQuery {
            since: Some(since),
            limit: Some(limit),
            worker: self.worker.clone(),
            agent: self.agent.clone(),
            kind: None,
        }
    }
}

/// The newest `limit` recoveries that pass `filter`, oldest first (read as
/// `newest_failovers` reads the failover log).
pub async fn newest_recoveries(
    client: &Client,
    filter: &Filter,
    limit: u32,
) -> Result<RecoveriesPage> {
    let head = client
        .recoveries(&FailoverQuery {
            limit: Some(1),
            since: Some(u64::MAX / 2),
            ..FailoverQuery::default()
        })
        .await?;
    let events = super::failovers::newest_in_log(
        limit,
        (head.next, head.oldest),
        |at| async move {
            let p = client.recoveries(&filter.query(at, 1000)).await?;
            Ok((p.events, p.next))
        },
        |e: &RecoveryRecord| e.seq,
        |e| (filter.matches(e), filter.since.is_some_and(|t| e.at < t)),
    )
    .await?;
    Ok(RecoveriesPage {
        events,
        next: head.next,
        oldest: head.oldest,
    })
}

fn from(r: &RecoveryRecord) -> &str {
    r.from.as_deref().unwrap_or("NO ROUTE")
}

/// A duration as `14m`, `2h`, `45s`.
fn span(s: u64) -> String {
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// `macfleet get recoveries` (without `--watch`).
pub async fn snapshot(
    client: &Client,
    args: &GetArgs,
    max: usize,
    out: &mut impl Write,
) -> Result<()> {
    let page = newest_recoveries(client, &Filter::from_args(args), args.limit).await?;
    if args.output == Output::Json {
        return write_json(out, &page);
    }
    if args.output == Output::Jsonl {
        return write_jsonl(out, &page.events);
    }
    let now = Utc::now();
    let ev = &page.events;
    let table = render_table(
        vec![
            ("SEQ", 3, ev.iter().map(|e| e.seq.to_string()).collect()),
            ("AGE", 0, ev.iter().map(|e| age(now, e.at)).collect()),
            ("WORKER", 0, ev.iter().map(|e| e.worker.clone()).collect()),
            (
                "FROM → TO",
                0,
                ev.iter()
                    .map(|e| format!("{} → {}", from(e), e.to))
                    .collect(),
            ),
            (
                "HELD OFF",
                1,
                ev.iter().map(|e| span(e.held_off_s)).collect(),
            ),
            ("HOST", 2, ev.iter().map(|e| e.host.clone()).collect()),
        ],
        max,
    );
    out.write_all(table.as_bytes())?;
    Ok(())
}

/// One recovery on one line, as `--watch` prints them.
pub fn recovery_row(now: DateTime<Utc>, r: &RecoveryRecord) -> String {
    format!(
        "{:<16} {:>4}  {:<16} {} → {}  after {}",
        r.seq,
        age(now, r.at),
        r.worker,
        from(r),
        r.to,
        span(r.held_off_s)
    )
}

/// `get recoveries --watch`: the newest that pass the filter, then each new
/// one as the hub records it.
pub async fn watch(
    client: &Client,
    filter: &Filter,
    limit: u32,
    output: Output,
    out: &mut impl Write,
) -> Result<()> {
    let mut events = client.events(None, &["recovery"]);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while let Some(item) = events.next().await {
            if item == StreamItem::Connected {
                return;
            }
        }
    })
    .await;
    let page = newest_recoveries(client, filter, limit).await?;
    let json = matches!(output, Output::Json | Output::Jsonl);
    let mut last = page.events.last().map_or(0, |e| e.seq);
    if !json {
        writeln!(
            out,
            "{:<16} {:>4}  {:<16} FROM → TO  HELD OFF",
            "SEQ", "AGE", "WORKER"
        )?;
    }
    let show = |r: &RecoveryRecord, out: &mut dyn Write| -> Result<()> {
        if json {
            write_jsonl(out, [r])?;
        } else {
            let row = recovery_row(Utc::now(), r);
            writeln!(out, "{}", crate::textsafe::for_terminal(&row))?;
        }
        Ok(out.flush()?)
    };
    for r in &page.events {
        show(r, out)?;
    }
    let mut hangup = super::watch::Hangup::watch();
    loop {
        let item = tokio::select! {
            item = events.next() => item,
            // `| head -1` is done: end now, quietly, not at the next event.
            () = hangup.closed() => return Ok(()),
        };
        let Some(item) = item else { break };
        match item {
            StreamItem::Event {
                event: HubEvent::Recovery(r),
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
                for _ in 0..MAX_PAGES {
                    let page = client.recoveries(&filter.query(last, 1000)).await?;
                    let before = last;
                    for r in &page.events {
                        if r.seq > last {
                            last = r.seq;
                            if filter.matches(r) {
                                show(r, out)?;
                            }
                        }
                    }
                    if last == before {
                        break;
                    }
                }
            }
            StreamItem::Disconnected { error, retry_in } => {
                super::watch::refused(client).await?;
                eprintln!(
                    "macfleet: {} (again in {}s)",
                    crate::textsafe::for_terminal(&error),
                    retry_in.as_secs().max(1)
                );
            }
            _ => {}
        }
    }
    Ok(())
}
