//! `macfleet get failovers`: the filters (`--worker`, `--agent`, `--kind`,
//! `--since`), the newest matches (read in windows of the log back from its
//! head), their table and the one-line form `--watch` prints.

use std::io::Write;

use chrono::{DateTime, Utc};
use color_eyre::eyre::{Result, eyre};

use super::out::{line, write_json, write_jsonl};
use super::table::{age, render_table};
use crate::cli::{Exit, GetArgs, Output, exit};
use crate::client::{Client, FailoverQuery, PagePart};
use crate::scrub::scrub;
use crate::wire::{FailoverRecord, FailoversPage};

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
            && self.since.is_none_or(|t| r.seen_at() >= t)
    }

    pub fn query(&self, since: u64, limit: u32) -> FailoverQuery {
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
pub const MAX_PAGES: usize = 200;

/// The newest `limit` failovers that pass `filter`, oldest first. The hub
/// pages forward only, so windows of the log ending at its head are read,
/// each four times the last, until enough match or the log's start (or
/// `--since`) is reached.
pub async fn newest_failovers(
    client: &Client,
    filter: &Filter,
    limit: u32,
) -> Result<FailoversPage> {
    let head = client
        .failovers(&FailoverQuery {
            limit: Some(1),
            since: Some(u64::MAX / 2),
            ..FailoverQuery::default()
        })
        .await?;
    let events = newest_in_log(
        limit,
        (head.next, head.oldest),
        |at| async move {
            let p = client.failovers(&filter.query(at, 1000)).await?;
            Ok((p.events, p.next))
        },
        |e: &FailoverRecord| e.seq,
        |e| {
            (
                filter.matches(e),
                filter.since.is_some_and(|t| e.received_at < t),
            )
        },
    )
    .await?;
    Ok(FailoversPage {
        events,
        next: head.next,
        oldest: head.oldest,
    })
}

/// The newest `limit` records of a log the hub pages forward only (the
/// failover log, the recovery log) that `judge` keeps, oldest first:
/// windows ending at the log's head (`next`, `oldest` as read once) are
/// read with `page(at)`, each four times the last, until enough are kept,
/// the log's start is reached, a record older than the cutoff is seen
/// (`judge`'s second answer), or [`MAX_PAGES`] pages were read.
pub(super) async fn newest_in_log<E, P, Fut>(
    limit: u32,
    (next, oldest): (u64, u64),
    page: P,
    seq: fn(&E) -> u64,
    judge: impl Fn(&E) -> (bool, bool),
) -> Result<Vec<E>>
where
    P: Fn(u64) -> Fut,
    Fut: std::future::Future<Output = Result<(Vec<E>, u64)>>,
{
    let limit = limit.clamp(1, 100_000);
    let floor = oldest.saturating_sub(1);
    let mut window = u64::from(limit).max(256);
    let mut pages = 0;
    loop {
        let start = next.saturating_sub(window).max(floor);
        let mut events: Vec<E> = Vec::new();
        let mut at = start;
        let mut reached_cutoff = false;
        while at < next && pages < MAX_PAGES {
            pages += 1;
            let (got, page_next) = page(at).await?;
            let Some(last_seq) = got.last().map(seq) else {
                break;
            };
            for e in got {
                // `next` is the newest seq when the head was read.
                if seq(&e) > next {
                    break;
                }
                let (keep, older) = judge(&e);
                reached_cutoff |= older;
                if keep {
                    events.push(e);
                }
            }
            at = page_next.max(last_seq);
        }
        if events.len() >= limit as usize || start <= floor || reached_cutoff || pages >= MAX_PAGES
        {
            let skip = events.len().saturating_sub(limit as usize);
            events.drain(..skip);
            return Ok(events);
        }
        window = window.saturating_mul(4);
    }
}

/// `macfleet get failovers` (without `--watch`).
pub async fn snapshot(
    client: &Client,
    args: &GetArgs,
    max: usize,
    out: &mut impl Write,
) -> Result<()> {
    let filter = Filter::from_args(args);
    let page = newest_failovers(client, &filter, args.limit).await?;
    if page.events.is_empty() {
        if let Some(id) = &filter.worker {
            known_worker(client, id).await?;
        }
    }
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
            ("AGE", 0, ev.iter().map(|e| seen_age(now, e)).collect()),
            ("WORKER", 0, ev.iter().map(|e| e.worker.clone()).collect()),
            (
                "FROM → TO",
                0,
                ev.iter()
                    .map(|e| {
                        format!(
                            "{} → {}",
                            e.failover.from,
                            e.failover.to.as_deref().unwrap_or("NO ROUTE")
                        )
                    })
                    .collect(),
            ),
            (
                "CAUSE",
                0,
                ev.iter()
                    .map(|e| e.failover.cause.kind.to_string())
                    .collect(),
            ),
            (
                "STATUS",
                1,
                ev.iter()
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
                2,
                ev.iter()
                    .map(|e| e.failover.cause.source.as_str().into())
                    .collect(),
            ),
            ("HOST", 4, ev.iter().map(|e| e.host.clone()).collect()),
            (
                "DETAIL",
                5,
                ev.iter()
                    .map(|e| e.failover.cause.detail.as_deref().unwrap_or("-").into())
                    .collect(),
            ),
        ],
        max,
    );
    out.write_all(table.as_bytes())?;
    Ok(())
}

/// `--worker ID` matched nothing: is it a worker with no failovers yet, or
/// one the hub does not know? The hub's failover filter answers both with
/// an empty page, so the workers are read (streamed, to the first match):
/// an unknown one exits 1 with the words `get worker ID` uses.
pub async fn known_worker(client: &Client, id: &str) -> Result<()> {
    let mut reader = client.workers_stream(None).await?;
    loop {
        match reader.next().await? {
            PagePart::Head(_) => {}
            PagePart::Item(w) if w.worker == id => return Ok(()),
            PagePart::Item(_) => {}
            PagePart::End(_) => break,
        }
    }
    Err(eyre!(Exit::new(
        exit::ERROR,
        format!(
            "no worker {} reports to this hub (see: macfleet get workers)",
            line(id)
        )
    )))
}

/// A failover's AGE cell: by [`FailoverRecord::seen_at`], with the
/// worker's claim beside it when it dates the failover in the future:
/// `3s (claims 23h ahead)`.
pub fn seen_age(now: DateTime<Utc>, r: &FailoverRecord) -> String {
    let a = age(now, r.seen_at());
    match crate::wire::claimed_ahead_s(r.failover.at, r.received_at) {
        Some(s) => format!(
            "{a} (claims {} ahead)",
            crate::text::age(chrono::TimeDelta::seconds(s))
        ),
        None => a,
    }
}

/// One failover on one line, as `--watch` prints them.
pub fn failover_row(now: DateTime<Utc>, r: &FailoverRecord) -> String {
    let f = &r.failover;
    format!(
        "{:<10} {:>4}  {:<16} {} → {}  {}{}  {}",
        r.seq,
        age(now, r.seen_at()),
        r.worker,
        f.from,
        f.to.as_deref().unwrap_or("NO ROUTE"),
        f.cause.kind,
        f.cause.status.map(|s| format!(" {s}")).unwrap_or_default(),
        f.cause.detail.as_deref().map(scrub).unwrap_or_default(),
    )
}
