//! `macfleet get workers --watch` and `get failovers --watch`: the fleet or
//! the newest failovers now, then what the hub's event stream brings.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use color_eyre::eyre::Result;
use futures::StreamExt;

use super::failovers::{Filter, MAX_PAGES, failover_row, newest_failovers};
use super::out::{line, write_jsonl};
use crate::cli::Output;
use crate::client::{Client, ClientError, Fingerprints, HubEvent, PagePart, StreamItem};
use crate::wire::{FailoverRecord, WorkerView};

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

/// What about a worker is worth a new line when it changes: its state,
/// active agent, sync and last failover (by a fingerprint of its id).
#[derive(PartialEq, Eq)]
struct Key {
    failover: Option<u128>,
    active: Option<Arc<str>>,
    state: crate::wire::WorkerState,
    in_sync: bool,
}

/// The last [`Key`] shown of each worker, by a fingerprint of its id:
/// tens of bytes a worker whatever its id's length, agent names shared.
#[derive(Default)]
struct Shown {
    keys: HashMap<u128, Key>,
    names: HashSet<Arc<str>>,
    prints: Fingerprints,
}

impl Shown {
    /// Whether `w` differs from what was last shown of it (noted if so).
    fn changed(&mut self, w: &WorkerView) -> bool {
        let active = w.active_agent.as_deref().map(|a| match self.names.get(a) {
            Some(n) => n.clone(),
            None => {
                let n: Arc<str> = Arc::from(a);
                self.names.insert(n.clone());
                n
            }
        });
        let key = Key {
            failover: w.last_failover.as_ref().map(|f| self.prints.of(&f.id)),
            active,
            state: w.state,
            in_sync: w.in_sync,
        };
        let id = self.prints.of(&w.worker);
        if self.keys.get(&id) == Some(&key) {
            return false;
        }
        self.keys.insert(id, key);
        true
    }
}

/// Every worker of a fresh page through `show`, each as it is read: the
/// page is never held whole.
async fn show_page(
    client: &Client,
    out: &mut impl Write,
    show: &mut impl FnMut(&WorkerView, &mut dyn Write) -> Result<()>,
) -> Result<()> {
    let mut reader = client.workers_stream(None).await?;
    loop {
        match reader.next().await? {
            PagePart::Head(_) => {}
            PagePart::Item(w) => show(&w, out)?,
            PagePart::End(_) => return Ok(()),
        }
    }
}

/// `get workers --watch`: the fleet now, then a line for every worker
/// whose state, active agent, sync or last failover changes.
pub async fn watch_workers(client: &Client, output: Output, out: &mut impl Write) -> Result<()> {
    let mut seen = Shown::default();
    let mut events = client.events(None, &["heartbeat", "state", "sync"]);
    wait_connected(&mut events).await;
    let json = matches!(output, Output::Json | Output::Jsonl);
    if !json {
        writeln!(
            out,
            "{:<20} {:<16} {:<8} {:<16} SYNC",
            "AT", "WORKER", "STATE", "ACTIVE"
        )?;
    }
    let mut show = |w: &WorkerView, out: &mut dyn Write| -> Result<()> {
        if !seen.changed(w) {
            return Ok(());
        }
        if json {
            write_jsonl(out, [w])?;
        } else {
            writeln!(out, "{}", line(&worker_row(Utc::now(), w)))?;
        }
        Ok(out.flush()?)
    };
    show_page(client, out, &mut show).await?;
    let mut hangup = Hangup::watch();
    loop {
        let item = tokio::select! {
            item = events.next() => item,
            // `| head -1` is done: end now, quietly, not at the next event.
            () = hangup.closed() => return Ok(()),
        };
        let Some(item) = item else { break };
        match item {
            StreamItem::Event {
                event: HubEvent::Heartbeat(w) | HubEvent::State(w) | HubEvent::Sync(w),
                ..
            } => show(&w, out)?,
            StreamItem::Event {
                event: HubEvent::Reset,
                ..
            } => show_page(client, out, &mut show).await?,
            StreamItem::Disconnected { error, retry_in } => {
                refused(client).await?;
                eprintln!(
                    "macfleet: {} (again in {}s)",
                    line(&error),
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
            write_jsonl(out, [r])?;
        } else {
            writeln!(out, "{}", line(&failover_row(Utc::now(), r)))?;
        }
        Ok(out.flush()?)
    };
    for r in &page.events {
        show(r, out)?;
    }
    let mut hangup = Hangup::watch();
    loop {
        let item = tokio::select! {
            item = events.next() => item,
            // `| head -1` is done: end now, quietly, not at the next event.
            () = hangup.closed() => return Ok(()),
        };
        let Some(item) = item else { break };
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
                refused(client).await?;
                eprintln!(
                    "macfleet: {} (again in {}s)",
                    line(&error),
                    retry_in.as_secs().max(1)
                );
            }
            _ => {}
        }
    }
    Ok(())
}

/// The stream broke: if the hub now refuses the token (401, 403: a
/// replaced hub, a revoked token), that is the end of the watch (its
/// sentence, exit 6), not a break to wait out.
pub(super) async fn refused(client: &Client) -> Result<()> {
    match client.whoami().await {
        Err(
            e @ (ClientError::Unauthorized(_) | ClientError::Forbidden(_) | ClientError::NoToken),
        ) => Err(e.into()),
        _ => Ok(()),
    }
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

/// Watches stdout for its reader going away (a pipe whose reader closed
/// reports `POLLERR`, a terminal that hung up `POLLHUP`), so `--watch`
/// ends within a moment of `| head` exiting instead of at its next write.
/// A file never reports it. Dropping it stops the watch within 200 ms.
pub(super) struct Hangup {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Hangup {
    pub(super) fn watch() -> Hangup {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let task = tokio::task::spawn_blocking(move || {
            while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                let mut fd = libc::pollfd {
                    fd: libc::STDOUT_FILENO,
                    // Nothing asked: POLLERR, POLLHUP and POLLNVAL always come.
                    events: 0,
                    revents: 0,
                };
                // SAFETY: one valid pollfd, for the length given.
                let n = unsafe { libc::poll(&mut fd, 1, 200) };
                let gone = libc::POLLERR | libc::POLLHUP | libc::POLLNVAL;
                if n > 0 && fd.revents & gone != 0 {
                    return;
                }
                if n < 0 {
                    // poll itself failed (EINTR): never claim the reader is gone.
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        });
        Hangup { stop, task }
    }

    /// Resolves once stdout's reader is gone.
    pub(super) async fn closed(&mut self) {
        if (&mut self.task).await.is_ok() && !self.stop.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        std::future::pending::<()>().await;
    }
}

impl Drop for Hangup {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
