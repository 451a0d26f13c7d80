//! Hub I/O: tokio tasks that call the client and answer with [`Msg`]s.
//! They never touch the state; `app` never touches the network.
//!
//! - the event stream (`failover`, `recovery`, `config`, and the hub's own worker moves,
//!   `state` and `sync`; not `heartbeat`: those of a large fleet are too many
//!   for SSE) reconnects by itself with capped backoff; a burst of worker
//!   moves is coalesced into one message;
//! - the poller fetches `GET /v1/workers?since=<cursor>` every 2 s (for the
//!   heartbeats: ages, active agents; state moves come from the stream
//!   within about a second, and from this poll only while it is down), and
//!   failovers and recoveries with `?since=<seq>` while the stream is down,
//!   and once more after it (re)joins;
//! - effects (refetch, config, history) are served as they come.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

use crate::client::{Client, ClientError, FailoverQuery, HubEvent, StreamItem};
use crate::tui::model::config::OnDisk;
use crate::tui::model::large::{self, WindowAsk};
use crate::tui::model::staged::RolloutFeed;
use crate::tui::msg::{Effect, Fetch, Msg};

/// Worker poll period while the hub answers.
pub const POLL_EVERY: Duration = Duration::from_secs(2);

/// Test-only: stretch the runner's 1 s tick and the 2 s worker poll to
/// this many milliseconds, so a test can see whether a key wakes the loop
/// by itself.
pub const QUIET_ENV: &str = "MACFLEET_TEST_QUIET_MS";

/// [`QUIET_ENV`] if set to a number of milliseconds.
pub fn quiet() -> Option<Duration> {
    std::env::var(QUIET_ENV)
        .ok()?
        .parse::<u64>()
        .ok()
        .map(Duration::from_millis)
}

/// [`POLL_EVERY`], or the test-only stretched period ([`QUIET_ENV`]).
fn poll_every() -> Duration {
    quiet().unwrap_or(POLL_EVERY)
}
/// Large-fleet mode: how often the window on screen is asked again
/// (ages, states and rows that moved): each costs the hub a pass over the
/// fleet, so not with every 2 s poll (the summary is).
pub const WINDOW_EVERY: Duration = Duration::from_secs(10);

/// [`WINDOW_EVERY`], or the test-only stretched period ([`QUIET_ENV`]).
fn window_every() -> Duration {
    quiet().unwrap_or(WINDOW_EVERY)
}

/// Longest wait between retries while it does not: no longer than a poll,
/// so a hub that comes back (or another one that takes its address) is
/// seen within one poll, not after a growing backoff (issue 28: ~7 s).
pub const MAX_BACKOFF: Duration = POLL_EVERY;
const PAGE: u32 = 1000;
const NO_CATCH_UP: u64 = u64::MAX;

struct Shared {
    stream_live: AtomicBool,
    /// The stream (re)joined: poll the log once more, from the seq we held
    /// when it joined (`NO_CATCH_UP`: nothing to do). A stream that joins
    /// without a `Last-Event-ID` (it never saw an event) starts at the hub's
    /// present, so what was committed after the last poll and before the
    /// join comes on neither the stream nor, the stream being up, a poll.
    /// Not from `max_seq` at poll time: the stream may have raised it past
    /// the gap by then.
    catch_up_from: AtomicU64,
    /// Highest failover seq delivered (stream or poll).
    max_seq: AtomicU64,
    /// The same two for the recovery log (its seqs are its own).
    rec_catch_up_from: AtomicU64,
    rec_max_seq: AtomicU64,
    refetch: Notify,
    refetch_wanted: AtomicBool,
    /// Told whether the poll round that served a refetch was answered.
    refetch_done: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<bool>>>,
    /// Large-fleet mode, as the poller's summaries decide it
    /// (`large::is_large`, the rule the model applies to the same answers).
    large: AtomicBool,
    /// The mode changed: the stream asks for other kinds.
    mode_changed: Notify,
    /// The window the Workers view asked last: asked again every poll.
    window: std::sync::Mutex<Option<WindowAsk>>,
    /// The hub instance whoami last gave: what a window answer is tagged with.
    instance: std::sync::Mutex<Option<String>>,
    /// When a window was last answered (poll or effect).
    window_at: std::sync::Mutex<Option<Instant>>,
    /// The event stream dropped or (re)joined: the hub may be another one
    /// even if no poll failed in between (replaced within a poll), so the
    /// next round asks who answers.
    ask_whoami: AtomicBool,
}

/// The running tasks; dropping this aborts them.
pub struct Net {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Net {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

pub fn spawn(client: Client, tx: mpsc::Sender<Msg>, fx: mpsc::UnboundedReceiver<Effect>) -> Net {
    let shared = Arc::new(Shared {
        stream_live: AtomicBool::new(false),
        catch_up_from: AtomicU64::new(NO_CATCH_UP),
        max_seq: AtomicU64::new(0),
        rec_catch_up_from: AtomicU64::new(NO_CATCH_UP),
        rec_max_seq: AtomicU64::new(0),
        refetch: Notify::new(),
        refetch_wanted: AtomicBool::new(false),
        refetch_done: std::sync::Mutex::new(None),
        large: AtomicBool::new(false),
        mode_changed: Notify::new(),
        window: std::sync::Mutex::new(None),
        instance: std::sync::Mutex::new(None),
        window_at: std::sync::Mutex::new(None),
        ask_whoami: AtomicBool::new(false),
    });
    let tasks = vec![
        tokio::spawn(stream_task(client.clone(), tx.clone(), shared.clone())),
        tokio::spawn(poll_task(client.clone(), tx.clone(), shared.clone())),
        tokio::spawn(effect_task(client, tx, fx, shared)),
    ];
    Net { tasks }
}

async fn send(tx: &mpsc::Sender<Msg>, m: Msg) -> bool {
    tx.send(m).await.is_ok()
}

/// Worker views (`state`, `sync`) sent to `update` in one message at most.
const WORKER_BATCH: usize = 4096;
/// How long the stream task waits for the next worker event of a burst.
const BURST_GAP: Duration = Duration::from_millis(5);

/// The kinds the stream asks for: the hub's worker moves while the fleet
/// is held; in large-fleet mode the summary instead (a move of a worker
/// not on screen is not held, and those of a large fleet are many).
fn stream_types(large: bool) -> &'static [&'static str] {
    if large {
        &[
            "failover", "recovery", "config", "summary", "rollout", "problem",
        ]
    } else {
        &[
            "failover", "recovery", "config", "state", "sync", "rollout", "problem",
        ]
    }
}

async fn stream_task(client: Client, tx: mpsc::Sender<Msg>, sh: Arc<Shared>) {
    let mut mode = sh.large.load(Ordering::SeqCst);
    let mut events = Box::pin(client.events(None, stream_types(mode)));
    // An event read past the end of a burst of worker events.
    let mut carry: Option<StreamItem> = None;
    let mut ended = false;
    while !ended {
        let item = match carry.take() {
            Some(i) => i,
            None => tokio::select! {
                i = events.next() => match i {
                    Some(i) => i,
                    None => return,
                },
                _ = sh.mode_changed.notified() => {
                    let now = sh.large.load(Ordering::SeqCst);
                    if now != mode {
                        // Another mode asks for other kinds: a new stream
                        // (the poller catches the log up from its join).
                        mode = now;
                        sh.stream_live.store(false, Ordering::SeqCst);
                        events = Box::pin(client.events(None, stream_types(mode)));
                    }
                    continue;
                }
            },
        };
        let msg = match item {
            StreamItem::Connected => {
                sh.stream_live.store(true, Ordering::SeqCst);
                sh.ask_whoami.store(true, Ordering::SeqCst);
                let held = sh.max_seq.load(Ordering::SeqCst);
                sh.catch_up_from.fetch_min(held, Ordering::SeqCst);
                let held = sh.rec_max_seq.load(Ordering::SeqCst);
                sh.rec_catch_up_from.fetch_min(held, Ordering::SeqCst);
                Msg::StreamUp
            }
            StreamItem::Disconnected { error, retry_in } => {
                sh.stream_live.store(false, Ordering::SeqCst);
                sh.ask_whoami.store(true, Ordering::SeqCst);
                tracing::info!(%error, ?retry_in, "event stream down");
                Msg::StreamDown { error, retry_in }
            }
            StreamItem::Event { event, .. } => match event {
                HubEvent::Failover(r) => {
                    sh.max_seq.fetch_max(r.seq, Ordering::SeqCst);
                    Msg::Failover(*r)
                }
                HubEvent::Recovery(r) => {
                    sh.rec_max_seq.fetch_max(r.seq, Ordering::SeqCst);
                    Msg::Recovery(*r)
                }
                HubEvent::Config(c) => Msg::Config(c),
                HubEvent::Summary(summary) => Msg::Summary {
                    summary,
                    at: Instant::now(),
                    polled: false,
                },
                HubEvent::Reset => Msg::Reset,
                HubEvent::State(w) | HubEvent::Sync(w) => {
                    // A burst (a new revision flips `in_sync` fleet-wide, a
                    // partition stales a rack) becomes one message: more
                    // are taken while they come within `BURST_GAP` of each
                    // other (a lone event waits that long, no more).
                    let mut batch = vec![*w];
                    while batch.len() < WORKER_BATCH {
                        match tokio::time::timeout(BURST_GAP, events.next()).await {
                            Ok(Some(StreamItem::Event {
                                event: HubEvent::State(w) | HubEvent::Sync(w),
                                ..
                            })) => batch.push(*w),
                            Ok(Some(other)) => {
                                carry = Some(other);
                                break;
                            }
                            Ok(None) => {
                                ended = true;
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    Msg::WorkerEvents(batch)
                }
                HubEvent::Rollout(ev) => Msg::Rollout {
                    feed: RolloutFeed::Step(ev),
                    at: Instant::now(),
                },
                HubEvent::Problem(p) => Msg::HubProblem(*p),
                HubEvent::Heartbeat(_) => continue,
            },
        };
        if !send(&tx, msg).await {
            return;
        }
    }
}

fn failed(what: Fetch, e: impl std::fmt::Display) -> Msg {
    Msg::FetchFailed {
        what,
        error: e.to_string(),
        at: Instant::now(),
    }
}

/// A failed request: a 401 is its own message (the token, not the hub).
fn refused_or_failed(what: Fetch, e: &ClientError) -> Msg {
    match e {
        ClientError::Unauthorized(_) => Msg::Refused {
            what,
            at: Instant::now(),
        },
        ClientError::Forbidden(_) => Msg::Forbidden {
            what,
            at: Instant::now(),
        },
        e @ ClientError::OutOfBounds { .. } => Msg::OutOfBounds {
            what,
            error: e.to_string(),
            at: Instant::now(),
        },
        e => failed(what, e),
    }
}

/// Page through the failover log from `since`; `fresh` marks the first page
/// of a full refetch. Returns false when a request failed.
async fn pull_failovers(
    client: &Client,
    tx: &mpsc::Sender<Msg>,
    sh: &Shared,
    since: Option<u64>,
    mut fresh: bool,
) -> bool {
    let mut since = since;
    loop {
        let q = FailoverQuery {
            since,
            limit: Some(PAGE),
            ..FailoverQuery::default()
        };
        match client.failovers(&q).await {
            Ok(page) => {
                let n = page.events.len();
                let next = page.next;
                if let Some(last) = page.events.last() {
                    sh.max_seq.fetch_max(last.seq, Ordering::SeqCst);
                }
                if (n > 0 || fresh) && !send(tx, Msg::Failovers { page, fresh }).await {
                    return true;
                }
                fresh = false;
                if n < PAGE as usize || since == Some(next) {
                    return true;
                }
                since = Some(next);
            }
            Err(e) => {
                tracing::warn!(error = %e, "failovers fetch failed");
                let _ = send(tx, refused_or_failed(Fetch::Failovers, &e)).await;
                return false;
            }
        }
    }
}

/// How [`pull_recoveries`] went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pulled {
    Done,
    Failed,
    /// The hub has no `GET /v1/recoveries` (404: older than recoveries):
    /// not asked again on this hub.
    Unsupported,
}

/// Page through the recovery log from `since`, as [`pull_failovers`] does
/// the failover log (the client holds each page to the same bounds and
/// order: `FailoverQuery::log_query`, `LogOrder`).
async fn pull_recoveries(
    client: &Client,
    tx: &mpsc::Sender<Msg>,
    sh: &Shared,
    since: Option<u64>,
    mut fresh: bool,
) -> Pulled {
    let mut since = since;
    // Bounded: a hub that keeps answering full pages of new seqs is read
    // at most this many pages a round (the rest comes next round).
    for _ in 0..1_000 {
        let q = FailoverQuery {
            since,
            limit: Some(PAGE),
            ..FailoverQuery::default()
        };
        match client.recoveries(&q).await {
            Ok(page) => {
                let n = page.events.len();
                let next = page.next;
                if let Some(last) = page.events.last() {
                    sh.rec_max_seq.fetch_max(last.seq, Ordering::SeqCst);
                }
                if (n > 0 || fresh) && !send(tx, Msg::Recoveries { page, fresh }).await {
                    return Pulled::Done;
                }
                fresh = false;
                if n < PAGE as usize || since == Some(next) {
                    return Pulled::Done;
                }
                since = Some(next);
            }
            Err(ClientError::Hub { status: 404, .. }) => {
                tracing::info!("the hub keeps no recoveries (404): not asked again");
                return Pulled::Unsupported;
            }
            Err(e) => {
                tracing::warn!(error = %e, "recoveries fetch failed");
                let _ = send(tx, refused_or_failed(Fetch::Recoveries, &e)).await;
                return Pulled::Failed;
            }
        }
    }
    Pulled::Done
}

/// The app is gone (its channel closed): the task ends.
struct Gone;

/// What the poller holds from one round to the next.
struct Poller {
    client: Client,
    tx: mpsc::Sender<Msg>,
    sh: Arc<Shared>,
    /// The workers page's `?since=` cursor (`None`: a full page).
    cursor: Option<String>,
    need_whoami: bool,
    need_failovers: bool,
    need_recoveries: bool,
    /// False once this hub answered 404 to `GET /v1/recoveries`.
    recoveries_kept: bool,
    /// False once it answered 404 to `GET /v1/summary` (older than
    /// summaries: its fleet is held whole, as before).
    summaries: bool,
    /// False once it answered a 404 other than `no_rollout` to `GET
    /// /v1/rollouts/current` (older than staged rollouts).
    rollouts: bool,
    /// The hub's identity as whoami last gave it: another one after a
    /// reconnect is another hub (replaced at the same address, or a fresh
    /// database), and nothing held of the old one is asked after.
    instance: Option<String>,
}

async fn poll_task(client: Client, tx: mpsc::Sender<Msg>, sh: Arc<Shared>) {
    let mut p = Poller {
        client,
        tx,
        sh,
        cursor: None,
        need_whoami: true,
        need_failovers: true,
        need_recoveries: true,
        recoveries_kept: true,
        summaries: true,
        rollouts: true,
        instance: None,
    };
    let mut backoff = Duration::from_secs(1);
    loop {
        let Ok(ok) = p.round().await else {
            return;
        };
        let wait = if ok {
            backoff = Duration::from_secs(1);
            poll_every()
        } else {
            let w = backoff;
            backoff = (backoff * 2).min(MAX_BACKOFF);
            w
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = p.sh.refetch.notified() => {}
        }
        if p.tx.is_closed() {
            return;
        }
    }
}

impl Poller {
    async fn send(&self, m: Msg) -> Result<(), Gone> {
        if send(&self.tx, m).await {
            Ok(())
        } else {
            Err(Gone)
        }
    }

    /// One round: who answers (when asked), the summary, the fleet (its
    /// page, or the window on screen), then the two logs. `Ok(true)` when
    /// the hub answered all of it.
    async fn round(&mut self) -> Result<bool, Gone> {
        let sh = self.sh.clone();
        let refetching = sh.refetch_wanted.swap(false, Ordering::SeqCst);
        if refetching {
            self.cursor = None;
            self.need_failovers = true;
            self.need_recoveries = true;
        }
        // Taken before this round's pull, so a join after it waits for the next.
        let catch_up = sh.catch_up_from.swap(NO_CATCH_UP, Ordering::SeqCst);
        let rec_catch_up = sh.rec_catch_up_from.swap(NO_CATCH_UP, Ordering::SeqCst);
        let mut ok = true;
        if sh.ask_whoami.swap(false, Ordering::SeqCst) {
            self.need_whoami = true;
        }
        if self.need_whoami {
            ok = self.whoami().await?;
        }
        if ok && self.summaries {
            // The summary first: a large fleet is never fetched whole.
            ok = self.summary().await?;
        }
        if ok && sh.large.load(Ordering::SeqCst) {
            ok = self.window(refetching).await?;
        } else if ok {
            ok = self.workers().await?;
        }
        if ok && self.rollouts {
            // Not a round's failure: the line says it is last known.
            self.rollout().await?;
        }
        if ok {
            ok = self.failovers(catch_up).await;
        }
        // The recovery log, on the same terms as the failover log.
        if ok && self.recoveries_kept {
            ok = self.recoveries(rec_catch_up).await;
        }
        if !ok {
            sh.rec_catch_up_from
                .fetch_min(rec_catch_up, Ordering::SeqCst);
            sh.catch_up_from.fetch_min(catch_up, Ordering::SeqCst);
            // Ask who answers again once it answers: the hub that comes
            // back may be another one.
            self.need_whoami = true;
        }
        if refetching {
            let done = sh.refetch_done.lock().ok().and_then(|mut d| d.take());
            if let Some(done) = done {
                let _ = done.send(ok);
            }
        }
        Ok(ok)
    }

    async fn whoami(&mut self) -> Result<bool, Gone> {
        match self.client.whoami().await {
            Ok(w) => {
                self.need_whoami = false;
                if self.instance.is_some() && w.instance.is_some() && w.instance != self.instance {
                    self.another_hub();
                }
                if w.instance.is_some() {
                    self.instance.clone_from(&w.instance);
                    if let Ok(mut i) = self.sh.instance.lock() {
                        i.clone_from(&w.instance);
                    }
                }
                self.send(Msg::Whoami(w)).await?;
                Ok(true)
            }
            Err(e) => {
                self.send(refused_or_failed(Fetch::Whoami, &e)).await?;
                Ok(false)
            }
        }
    }

    /// Whoami names another hub than the last: nothing held of the old one
    /// is asked after, its own summary decides the mode, and nothing asked
    /// of the last one is asked again.
    fn another_hub(&mut self) {
        let sh = &self.sh;
        self.cursor = None;
        self.need_failovers = true;
        self.need_recoveries = true;
        self.recoveries_kept = true;
        sh.max_seq.store(0, Ordering::SeqCst);
        sh.catch_up_from.store(NO_CATCH_UP, Ordering::SeqCst);
        sh.rec_max_seq.store(0, Ordering::SeqCst);
        sh.rec_catch_up_from.store(NO_CATCH_UP, Ordering::SeqCst);
        self.summaries = true;
        self.rollouts = true;
        sh.large.store(false, Ordering::SeqCst);
        sh.mode_changed.notify_one();
        if let Ok(mut win) = sh.window.lock() {
            *win = None;
        }
    }

    /// `GET /v1/summary`, which decides the mode (`large::is_large`).
    async fn summary(&mut self) -> Result<bool, Gone> {
        match self.client.summary().await {
            Ok(summary) => {
                let sh = &self.sh;
                let was = sh.large.load(Ordering::SeqCst);
                let now = large::is_large(&summary, was, large::threshold());
                if now != was {
                    tracing::info!(workers = summary.workers, large = now, "fleet mode");
                    sh.large.store(now, Ordering::SeqCst);
                    sh.mode_changed.notify_one();
                    if !now {
                        self.cursor = None;
                        if let Ok(mut w) = sh.window.lock() {
                            *w = None;
                        }
                    }
                }
                let msg = Msg::Summary {
                    summary: Box::new(summary),
                    at: Instant::now(),
                    polled: true,
                };
                self.send(msg).await?;
                Ok(true)
            }
            Err(ClientError::Hub { status: 404, .. }) => {
                tracing::info!("the hub keeps no summary (404): the fleet is held whole");
                self.summaries = false;
                Ok(true)
            }
            Err(e @ ClientError::OutOfBounds { .. }) => {
                // `HUB ERROR`, and the round goes on: the fleet, the logs
                // and the health are still asked (one broken endpoint must
                // not blank the panes the others fill), in the mode held.
                tracing::warn!(error = %e, "summary broke a bound");
                self.send(refused_or_failed(Fetch::Summary, &e)).await?;
                Ok(true)
            }
            Err(e) => {
                tracing::warn!(error = %e, "summary poll failed");
                self.send(refused_or_failed(Fetch::Workers, &e)).await?;
                Ok(false)
            }
        }
    }

    /// Large-fleet mode: the rows on screen, asked again (ages, states and
    /// rows that moved) when due, never the fleet; then the hub's health.
    async fn window(&self, refetching: bool) -> Result<bool, Gone> {
        let sh = &self.sh;
        let ask = sh.window.lock().ok().and_then(|w| w.clone());
        let due = sh
            .window_at
            .lock()
            .ok()
            .and_then(|t| *t)
            .is_none_or(|t| t.elapsed() >= window_every());
        let mut ok = true;
        if let (Some(ask), true) = (ask, due || refetching) {
            ok = fetch_window(&self.client, &self.tx, sh, ask).await;
        }
        if ok {
            self.health().await?;
        }
        Ok(ok)
    }

    /// The workers page since the cursor (a full one without), then the
    /// hub's health.
    async fn workers(&mut self) -> Result<bool, Gone> {
        let asked = Instant::now();
        match self.client.workers(self.cursor.as_deref()).await {
            Ok(page) => {
                if !page.delta {
                    tracing::info!(
                        workers = page.workers.len(),
                        ms = asked.elapsed().as_millis() as u64,
                        "full workers page fetched and parsed"
                    );
                }
                self.cursor = Some(page.cursor.clone());
                let at = Instant::now();
                self.send(Msg::Workers { page, at }).await?;
                self.health().await?;
                Ok(true)
            }
            Err(e) => {
                tracing::warn!(error = %e, "workers poll failed");
                self.send(refused_or_failed(Fetch::Workers, &e)).await?;
                Ok(false)
            }
        }
    }

    /// `GET /v1/rollouts/current`: the newest staged rollout (`None`: none
    /// has run). A hub without rollouts is not asked again.
    async fn rollout(&mut self) -> Result<(), Gone> {
        let feed = match self.client.rollout().await {
            Ok(v) => RolloutFeed::Current(v.map(Box::new)),
            Err(ClientError::Hub { status: 404, .. }) => {
                tracing::info!("the hub has no staged rollouts (404): not asked again");
                self.rollouts = false;
                return Ok(());
            }
            Err(e) => {
                tracing::debug!(error = %e, "rollout not read");
                RolloutFeed::Unread(e.to_string())
            }
        };
        let at = Instant::now();
        self.send(Msg::Rollout { feed, at }).await
    }

    /// The hub's own problems (a hand edit that does not validate, the
    /// built-in order, its database). An older hub answers only text:
    /// nothing to show, no error.
    async fn health(&self) -> Result<(), Gone> {
        match self.client.health_report().await {
            Ok(h) => self.send(Msg::Health(h)).await,
            Err(e) => {
                tracing::debug!(error = %e, "health not read");
                Ok(())
            }
        }
    }

    /// The failover log: whole when it must be, else from where we were
    /// while the stream is down or just joined (what the stream also
    /// delivers is deduplicated by seq). False when it was not answered.
    async fn failovers(&mut self, catch_up: u64) -> bool {
        let sh = &self.sh;
        if self.need_failovers {
            let ok = pull_failovers(&self.client, &self.tx, sh, None, true).await;
            self.need_failovers = !ok;
            ok
        } else if catch_up != NO_CATCH_UP || !sh.stream_live.load(Ordering::SeqCst) {
            let since = sh.max_seq.load(Ordering::SeqCst).min(catch_up);
            pull_failovers(&self.client, &self.tx, sh, Some(since), false).await
        } else {
            true
        }
    }

    /// The recovery log, as [`Poller::failovers`]; a hub without one is
    /// not asked again. False when it was not answered.
    async fn recoveries(&mut self, rec_catch_up: u64) -> bool {
        let sh = &self.sh;
        let pulled = if self.need_recoveries {
            let p = pull_recoveries(&self.client, &self.tx, sh, None, true).await;
            self.need_recoveries = p == Pulled::Failed;
            p
        } else if rec_catch_up != NO_CATCH_UP || !sh.stream_live.load(Ordering::SeqCst) {
            let since = sh.rec_max_seq.load(Ordering::SeqCst).min(rec_catch_up);
            pull_recoveries(&self.client, &self.tx, sh, Some(since), false).await
        } else {
            Pulled::Done
        };
        match pulled {
            Pulled::Failed => false,
            Pulled::Unsupported => {
                self.recoveries_kept = false;
                true
            }
            Pulled::Done => true,
        }
    }
}

/// A window of `GET /v1/workers` (large-fleet mode), tagged with the hub
/// instance whoami last gave; true when it was answered.
async fn fetch_window(
    client: &Client,
    tx: &mpsc::Sender<Msg>,
    sh: &Shared,
    ask: WindowAsk,
) -> bool {
    let instance = sh.instance.lock().ok().and_then(|i| i.clone());
    let asked = Instant::now();
    match client.window(&ask.query()).await {
        Ok(page) => {
            if let Ok(mut t) = sh.window_at.lock() {
                *t = Some(Instant::now());
            }
            tracing::debug!(
                rows = page.workers.len(),
                ms = asked.elapsed().as_millis() as u64,
                "window fetched"
            );
            let msg = Msg::Window {
                ask,
                page,
                at: Instant::now(),
                instance,
            };
            let _ = send(tx, msg).await;
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "window fetch failed");
            let _ = send(tx, refused_or_failed(Fetch::Workers, &e)).await;
            false
        }
    }
}

/// `GET /v1/config`; true when it was answered. A document that does not
/// validate (the hub says so with `Macfleet-Config-Invalid`, or its list
/// cannot be read here) is the file as it stands on disk: it is sent as
/// such, never asked again and again.
async fn fetch_config(client: &Client, tx: &mpsc::Sender<Msg>) -> bool {
    match client.config().await {
        Ok(doc) => {
            let found = crate::agents_doc::locate(&doc.text);
            let msg = match (doc.invalid, found) {
                (None, Ok(found)) => Msg::Agents {
                    revision: doc.revision,
                    agents: found.agents,
                    text: doc.text,
                },
                (Some(reason), _) => Msg::DiskInvalid(OnDisk {
                    revision: doc.revision,
                    text: doc.text,
                    reason,
                }),
                (None, Err(e)) => Msg::DiskInvalid(OnDisk {
                    revision: doc.revision,
                    text: doc.text,
                    reason: crate::wire::ConfigInvalid {
                        message: e.to_string(),
                        line: None,
                        column: None,
                    },
                }),
            };
            let _ = send(tx, msg).await;
            true
        }
        Err(e) => {
            let _ = send(tx, refused_or_failed(Fetch::Config, &e)).await;
            false
        }
    }
}

/// `GET /v1/config/history` (and the steps of the newest rollouts it
/// lists); true when it was answered.
async fn fetch_history(client: &Client, tx: &mpsc::Sender<Msg>) -> bool {
    match client.history_and_rollouts().await {
        Ok((h, steps)) => {
            let _ = send(tx, Msg::History(h)).await;
            let feed = RolloutFeed::Steps(steps);
            let at = Instant::now();
            let _ = send(tx, Msg::Rollout { feed, at }).await;
            true
        }
        Err(e) => {
            let _ = send(tx, refused_or_failed(Fetch::History, &e)).await;
            false
        }
    }
}

async fn effect_task(
    client: Client,
    tx: mpsc::Sender<Msg>,
    mut fx: mpsc::UnboundedReceiver<Effect>,
    sh: Arc<Shared>,
) {
    while let Some(e) = fx.recv().await {
        match e {
            Effect::Refetch => {
                // The poller refetches workers and failovers; this task the
                // config and history. `Refetched` follows both.
                let (done, polled) = tokio::sync::oneshot::channel();
                if let Ok(mut d) = sh.refetch_done.lock() {
                    *d = Some(done);
                }
                sh.refetch_wanted.store(true, Ordering::SeqCst);
                sh.refetch.notify_one();
                let config = fetch_config(&client, &tx).await;
                let history = fetch_history(&client, &tx).await;
                let polled = polled.await.unwrap_or(false);
                let _ = send(
                    &tx,
                    Msg::Refetched {
                        ok: config && history && polled,
                    },
                )
                .await;
            }
            Effect::FetchConfig => {
                fetch_config(&client, &tx).await;
            }
            Effect::FetchHistory => {
                fetch_history(&client, &tx).await;
            }
            Effect::Window(ask) => {
                if let Ok(mut w) = sh.window.lock() {
                    *w = Some(ask.clone());
                }
                fetch_window(&client, &tx, &sh, ask).await;
            }
            // The runner sends writes through its `Writer`, runs the editor
            // and switches contexts itself; never here.
            Effect::Write { .. }
            | Effect::Recheck { .. }
            | Effect::StartRollout { .. }
            | Effect::RolloutStep { .. }
            | Effect::OpenEditor { .. }
            | Effect::KeepDraft { .. }
            | Effect::SwitchContext(_) => {}
        }
        if tx.is_closed() {
            return;
        }
    }
}
