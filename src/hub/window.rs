//! `/v1/workers` windows: the fleet sorted, filtered and paged on the hub
//! (docs/hub-api.md, *Windows*), so a client shows part of a large fleet
//! without holding it. One pass over the fleet's views (taken under its
//! lock, read after it), keeping only the keys of the rows the window can
//! still hold: a bounded heap for a window near the start of the list and,
//! for a deep `offset`, one near its end (`G`; a filter is counted first,
//! in a pass of its own); between the two, a selection over a slim record
//! per matching row. Never a copy of the fleet: the window's rows are
//! shared views.
//!
//! The filter and the `urgency` order are the domain's
//! ([`crate::query::WorkerRow`]), the very functions the TUI's Workers view
//! calls, so both answer alike.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use super::fleet::{Cursor, Fleet, Stored};
use crate::query::{FailoverRow, Query, Searchable, WORKER_FIELDS, WorkerRow};
use crate::wire::{MAX_WINDOW, MAX_WINDOW_QUERY, WindowQuery, WindowSort};

/// Rows in a window when `limit` is not given.
pub const DEFAULT_LIMIT: u32 = 500;

/// Why a window was not answered (400 `invalid_query`); nothing changes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowError {
    #[error("limit is 1 to {MAX_WINDOW}")]
    Limit,
    #[error("q is at most {MAX_WINDOW_QUERY} bytes")]
    QueryTooLong,
    #[error("page and offset cannot be combined: page continues after an earlier window")]
    PageAndOffset,
    #[error("page is not a next_page of this hub's run")]
    BadPage,
    #[error("page was made for another sort or q; ask again from the start")]
    OtherPage,
    /// More terms than a window's pass may test (400 `query_too_costly`).
    #[error("q has {0} terms; a window's filter takes at most {MAX_QUERY_TERMS}")]
    TooCostly(usize),
}

impl WindowError {
    /// The error code the hub answers with (docs/hub-api.md).
    pub fn code(&self) -> &'static str {
        match self {
            WindowError::TooCostly(_) => "query_too_costly",
            _ => "invalid_query",
        }
    }
}

/// Terms a window's `q` may hold: each is tested against every row of the
/// fleet, so 128 of them made one window over 50,000 workers cost 0.33 s.
pub const MAX_QUERY_TERMS: usize = 16;

/// One window of the fleet.
pub struct Window {
    pub cursor: Cursor,
    /// Rows that match `q`, in all.
    pub total: u64,
    /// The index of the first row in the sorted, filtered list.
    pub offset: u64,
    pub workers: Vec<Arc<Stored>>,
    pub next_page: Option<String>,
}

/// A stored worker as the domain's filter reads it.
pub fn row(s: &Stored) -> WorkerRow<'_> {
    let p = &*s.profile;
    let (host, config_revision, active_agent) = p.parts();
    WorkerRow {
        worker: &p.worker,
        host,
        state: s.state,
        active_agent,
        rank: crate::query::rank_in(p.roster.agents(), active_agent),
        config_revision,
        // The detail was scrubbed when the heartbeat was taken in.
        last_failover: s.last_failover.as_deref().map(|f| FailoverRow {
            from: &f.from,
            to: f.to.as_deref(),
            kind: f.cause.kind.as_str(),
            detail: f.cause.detail.as_deref(),
        }),
    }
}

/// A row and what it shows, for one query.
struct Shown<'a> {
    row: WorkerRow<'a>,
    hay: &'a str,
}

impl Searchable for Shown<'_> {
    fn shows(&self, needle: &str) -> bool {
        self.row.shows_in(self.hay, needle)
    }
    fn field_starts(&self, field: &str, value: &str) -> bool {
        self.row.field_starts(field, value)
    }
}

/// A parsed filter, with a buffer for each row's haystack (built only when
/// a term needs it).
pub struct Filter {
    query: Query,
    plain: bool,
    hay: String,
}

impl Filter {
    pub fn new(q: &str) -> Filter {
        let query = Query::parse(q, WORKER_FIELDS);
        let plain = query.terms.iter().any(|t| t.field.is_none());
        Filter {
            query,
            plain,
            hay: String::new(),
        }
    }

    pub fn matches(&mut self, s: &Stored) -> bool {
        if self.query.is_empty() {
            return true;
        }
        let row = row(s);
        if self.plain {
            row.haystack_into(&mut self.hay);
        }
        self.query.matches(&Shown {
            row,
            hay: &self.hay,
        })
    }
}

/// A row's place in a sort: two numbers, a text, then the id (so the
/// order is total). Orders exactly as the TUI's `WorkerSort` `compare`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key<'a> {
    a: u64,
    b: u64,
    s: &'a str,
    id: &'a str,
}

pub fn key(sort: WindowSort, v: &Stored) -> Key<'_> {
    let p = &*v.profile;
    let id = &*p.worker;
    let (a, b, s) = match sort {
        WindowSort::Urgency => {
            let u = crate::query::urgency(p.active_agent().is_some(), v.state);
            let fo = crate::query::failover_key(v.last_failover_at());
            (u as u64, fo, "")
        }
        WindowSort::Age => (crate::query::time_key(v.received_at), 0, ""),
        WindowSort::Worker => (0, 0, ""),
        WindowSort::Host => (0, 0, p.host()),
        WindowSort::Rank => {
            let r = crate::query::rank_in(p.roster.agents(), p.active_agent());
            (r.map_or(0, |r| r as u64 + 1), 0, "")
        }
    };
    Key { a, b, s, id }
}

/// A `next_page` token: the run, the sort and filter it was made for, and
/// the last row's key.
struct Token {
    epoch: u64,
    sort: WindowSort,
    q: u64,
    a: u64,
    b: u64,
    s: String,
    id: String,
}

/// FNV-1a: stable across requests (a token names its filter by it).
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

fn hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<String> {
    if s.len() % 2 != 0 || s.len() > 2 * 512 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect();
    String::from_utf8(bytes?).ok()
}

impl Token {
    fn encode(epoch: u64, sort: WindowSort, q: &str, k: &Key<'_>) -> String {
        format!(
            "p{epoch}.{}.{:x}.{:x}.{:x}.{}.{}",
            sort.as_str(),
            fnv(q),
            k.a,
            k.b,
            hex(k.s),
            hex(k.id)
        )
    }

    fn parse(t: &str) -> Option<Token> {
        let mut it = t.strip_prefix('p')?.split('.');
        let mut next = || it.next();
        let token = Token {
            epoch: next()?.parse().ok()?,
            sort: WindowSort::parse(next()?)?,
            q: u64::from_str_radix(next()?, 16).ok()?,
            a: u64::from_str_radix(next()?, 16).ok()?,
            b: u64::from_str_radix(next()?, 16).ok()?,
            s: unhex(next()?)?,
            id: unhex(next()?)?,
        };
        next().is_none().then_some(token)
    }

    fn key(&self) -> Key<'_> {
        Key {
            a: self.a,
            b: self.b,
            s: &self.s,
            id: &self.id,
        }
    }
}

/// A key and its row, ordered by the key alone.
struct Ranked<'a>(Key<'a>, &'a Arc<Stored>);

impl PartialEq for Ranked<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl Eq for Ranked<'_> {}
impl PartialOrd for Ranked<'_> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ranked<'_> {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.cmp(&o.0)
    }
}

/// Ask the CPU for what the pass will read of the rows ahead
/// ([`super::prefetch`]): each row is a chain of allocations (its view, its
/// profile, the profile's text, its last failover), so the view `FAR` rows
/// ahead, the profile of the one `MID` ahead (its view has arrived by
/// then), the text and failover of the one `NEAR` ahead. Nothing is read
/// that the pass would not read anyway.
#[inline(always)]
fn warm(views: &[Arc<Stored>], i: usize) {
    use super::prefetch::hint;
    const FAR: usize = 24;
    const MID: usize = 12;
    const NEAR: usize = 4;
    if let Some(v) = views.get(i + FAR) {
        hint(Arc::as_ptr(v));
    }
    if let Some(v) = views.get(i + MID) {
        hint(Arc::as_ptr(&v.profile));
    }
    if let Some(v) = views.get(i + NEAR) {
        hint(v.profile.key.as_ptr());
        if let Some(f) = &v.last_failover {
            hint(Arc::as_ptr(f));
        }
    }
}

/// The first `limit` of the largest `tail` matching keys, in order: a
/// window near the end of the list (`G`), from a min-heap of `tail` keys
/// kept while the fleet is read, as a window near its start is.
fn end_of<'a>(
    views: &'a [Arc<Stored>],
    filter: &mut Filter,
    sort: WindowSort,
    tail: usize,
    limit: usize,
) -> Vec<Ranked<'a>> {
    if tail == 0 {
        return Vec::new();
    }
    let mut heap: BinaryHeap<std::cmp::Reverse<Ranked<'a>>> = BinaryHeap::with_capacity(tail + 1);
    for (i, v) in views.iter().enumerate() {
        warm(views, i);
        if !filter.matches(v) {
            continue;
        }
        let k = key(sort, v);
        if heap.len() == tail && heap.peek().is_some_and(|low| k <= low.0.0) {
            continue;
        }
        heap.push(std::cmp::Reverse(Ranked(k, v)));
        if heap.len() > tail {
            heap.pop();
        }
    }
    // Largest first, turned: the `tail` last rows in order.
    let mut rows: Vec<Ranked<'a>> = heap.into_sorted_vec().into_iter().map(|r| r.0).collect();
    rows.reverse();
    rows.truncate(limit);
    rows
}

/// Rows `skip..skip + limit` of the matching rows, in order, for a window
/// far from both ends: a selection over a slim record per matching row,
/// 24 bytes, in a vector sized once (a key and its row are 56): for `host`
/// and `worker` the text (the id for `worker`) and where the row is, for
/// the other orders their two numbers and where it is (their text is
/// empty); rows that tie on the record are ordered by id, read from the
/// view.
fn middle_of<'a>(
    views: &'a [Arc<Stored>],
    filter: &mut Filter,
    sort: WindowSort,
    total: usize,
    skip: usize,
    limit: usize,
) -> Vec<Ranked<'a>> {
    let at = |i: u32| &views[i as usize];
    let rows: Vec<u32> = match sort {
        WindowSort::Host | WindowSort::Worker => {
            let worker = sort == WindowSort::Worker;
            select(
                views,
                filter,
                total,
                skip,
                limit,
                |k: &Key<'a>, i| (if worker { k.id } else { k.s }, i),
                |x: &(&str, u32), y: &(&str, u32)| {
                    x.0.cmp(y.0)
                        .then_with(|| at(x.1).profile.worker.cmp(&at(y.1).profile.worker))
                },
                |x| x.1,
                sort,
            )
        }
        WindowSort::Urgency | WindowSort::Age | WindowSort::Rank => select(
            views,
            filter,
            total,
            skip,
            limit,
            |k: &Key<'a>, i| (k.a, k.b, i),
            |x: &(u64, u64, u32), y: &(u64, u64, u32)| {
                (x.0, x.1)
                    .cmp(&(y.0, y.1))
                    .then_with(|| at(x.2).profile.worker.cmp(&at(y.2).profile.worker))
            },
            |x| x.2,
            sort,
        ),
    };
    rows.into_iter()
        .map(|i| Ranked(key(sort, at(i)), at(i)))
        .collect()
}

/// [`middle_of`]'s selection over records `R` made by `make` from each
/// matching row's key and index, ordered by `cmp`: the indices of rows
/// `skip..skip + limit`, in order.
#[allow(clippy::too_many_arguments)]
fn select<'a, R>(
    views: &'a [Arc<Stored>],
    filter: &mut Filter,
    total: usize,
    skip: usize,
    limit: usize,
    make: impl Fn(&Key<'a>, u32) -> R,
    cmp: impl Fn(&R, &R) -> Ordering,
    index: impl Fn(&R) -> u32,
    sort: WindowSort,
) -> Vec<u32> {
    let mut slim: Vec<R> = Vec::with_capacity(total);
    for (i, v) in views.iter().enumerate() {
        warm(views, i);
        if filter.matches(v) {
            // The fleet is bounded far below u32::MAX rows (--max-workers).
            slim.push(make(&key(sort, v), u32::try_from(i).unwrap_or(u32::MAX)));
        }
    }
    let skip = skip.min(slim.len());
    if skip > 0 && skip < slim.len() {
        slim.select_nth_unstable_by(skip, &cmp);
    }
    let rest = &mut slim[skip..];
    let n = limit.min(rest.len());
    if n < rest.len() {
        rest.select_nth_unstable_by(n, &cmp);
    }
    let rest = &mut rest[..n];
    rest.sort_unstable_by(&cmp);
    rest.iter().map(index).collect()
}

/// Windows whose end lies within this many rows of the list's start, or
/// that lie within this many of its end, are kept in a bounded heap while
/// the fleet is read; one between selects over a slim record of every
/// matching row instead ([`middle_of`]).
pub const HEAP_ROWS: u64 = 4 * MAX_WINDOW as u64;

impl Fleet {
    /// The window `w` asks for, in one pass over the fleet.
    pub fn window(&self, w: &WindowQuery) -> Result<Window, WindowError> {
        self.window_in(w, HEAP_ROWS)
    }

    /// What a window is computed over, taken under the fleet's lock: every
    /// view (shared, not copied: a pointer each) and the cursor, so the
    /// pass itself runs with the lock released and ingest goes on.
    pub fn window_source(&self) -> (Vec<Arc<Stored>>, Cursor) {
        (self.views().cloned().collect(), self.cursor())
    }

    /// [`Fleet::window`], with a heap for windows ending within
    /// `heap_rows`.
    fn window_in(&self, w: &WindowQuery, heap_rows: u64) -> Result<Window, WindowError> {
        precheck(w)?;
        let (views, cursor) = self.window_source();
        window_over(&views, cursor, w, heap_rows)
    }
}

/// The window's own bounds, checked before anything of the fleet is taken.
pub fn precheck(w: &WindowQuery) -> Result<(), WindowError> {
    if w.limit == 0 || w.limit > MAX_WINDOW {
        return Err(WindowError::Limit);
    }
    if w.q.len() > MAX_WINDOW_QUERY {
        return Err(WindowError::QueryTooLong);
    }
    let terms = Query::parse(&w.q, WORKER_FIELDS).terms.len();
    if terms > MAX_QUERY_TERMS {
        return Err(WindowError::TooCostly(terms));
    }
    Ok(())
}

/// The hub's window passes, apart from ingest: one thread a core, each at
/// a lower priority (nice 10) than the runtime's, so a pass never holds a
/// thread heartbeats need; at most `queue` passes wait for one, and past
/// that a window is refused (`503 overloaded`).
pub struct Passes {
    jobs: std::sync::mpsc::SyncSender<Job>,
    queue: usize,
}

type Job = Box<dyn FnOnce() + Send>;

/// Every thread's pass is busy and the queue is full: try again shortly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("every window pass is busy and {0} more wait; retry shortly")]
pub struct Overloaded(pub usize);

/// Window passes that may wait for a thread, a core.
pub const QUEUED_PER_CORE: usize = 8;

impl Passes {
    /// `threads` passes at a time, `queue` waiting.
    pub fn new(threads: usize, queue: usize) -> Passes {
        let (jobs, rx) = std::sync::mpsc::sync_channel::<Job>(queue);
        let rx = Arc::new(std::sync::Mutex::new(rx));
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("window-{i}"))
                .spawn(move || {
                    lower_priority();
                    loop {
                        let job = match rx.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => return,
                        };
                        match job {
                            Ok(job) => job(),
                            Err(_) => return,
                        }
                    }
                });
            if let Err(e) = spawned {
                tracing::error!(error = %e, "a window thread could not start");
            }
        }
        Passes { jobs, queue }
    }

    /// The hub's own: a thread a core, [`QUEUED_PER_CORE`] waiting a core.
    pub fn hub() -> &'static Passes {
        static PASSES: std::sync::LazyLock<Passes> = std::sync::LazyLock::new(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            Passes::new(cores, cores * QUEUED_PER_CORE)
        });
        &PASSES
    }

    /// Run `f` on a window thread, or `Overloaded` when the queue is full.
    /// A pass whose caller has gone by its turn is skipped.
    pub async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Overloaded> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move || {
            if !tx.is_closed() {
                let _ = tx.send(f());
            }
        });
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(std::sync::mpsc::TrySendError::Full(_)) => {
                return Err(Overloaded(self.queue));
            }
            Err(std::sync::mpsc::TrySendError::Disconnected(_)) => return Err(Overloaded(0)),
        }
        rx.await.map_err(|_| Overloaded(0))
    }
}

/// This thread at nice 10 (Linux: a thread's own priority), so the
/// runtime's threads come first when both want a core.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority take and return plain integers.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        let _ = libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

/// The window `w` over `views` (a [`Fleet::window_source`]), with a heap
/// for windows ending within `heap_rows`.
pub fn window_over(
    views: &[Arc<Stored>],
    cursor: Cursor,
    w: &WindowQuery,
    heap_rows: u64,
) -> Result<Window, WindowError> {
    precheck(w)?;
    let after = match &w.page {
        Some(_) if w.offset.is_some() => return Err(WindowError::PageAndOffset),
        Some(t) => {
            let t = Token::parse(t).ok_or(WindowError::BadPage)?;
            if t.epoch != cursor.epoch {
                return Err(WindowError::BadPage);
            }
            if t.sort != w.sort || t.q != fnv(&w.q) {
                return Err(WindowError::OtherPage);
            }
            Some(t)
        }
        None => None,
    };
    let after_key = after.as_ref().map(Token::key);
    let skip = w.offset.unwrap_or(0);
    let limit = w.limit as u64;
    let mut filter = Filter::new(&w.q);
    let (mut total, mut before) = (0u64, 0u64);
    // A page continues from its token with no offset: always the heap.
    let rows: Vec<Ranked<'_>> = if after_key.is_some() || skip.saturating_add(limit) <= heap_rows {
        // The smallest `skip + limit` keys past the token, kept in a
        // max-heap of that size.
        let cap = (skip + limit) as usize;
        let mut heap: BinaryHeap<Ranked<'_>> = BinaryHeap::with_capacity(cap + 1);
        for (i, v) in views.iter().enumerate() {
            warm(views, i);
            if !filter.matches(v) {
                continue;
            }
            total += 1;
            let k = key(w.sort, v);
            if after_key.as_ref().is_some_and(|a| k <= *a) {
                before += 1;
                continue;
            }
            if heap.len() == cap && heap.peek().is_some_and(|top| k >= top.0) {
                continue;
            }
            heap.push(Ranked(k, v));
            if heap.len() > cap {
                heap.pop();
            }
        }
        let mut rows = heap.into_sorted_vec();
        rows.drain(..(skip as usize).min(rows.len()));
        rows
    } else {
        // A deep offset (no page: the two are not combined). The rows the
        // window can reach lie within `tail` of the end: counted first
        // when a filter narrows the fleet (a pass of the filter alone).
        total = if filter.query.is_empty() {
            views.len() as u64
        } else {
            let mut n = 0u64;
            for (i, v) in views.iter().enumerate() {
                warm(views, i);
                n += u64::from(filter.matches(v));
            }
            n
        };
        let tail = total.saturating_sub(skip);
        if tail <= heap_rows {
            end_of(views, &mut filter, w.sort, tail as usize, limit as usize)
        } else {
            middle_of(
                views,
                &mut filter,
                w.sort,
                total as usize,
                skip as usize,
                limit as usize,
            )
        }
    };
    let offset = before + skip.min(total - before);
    let shown = rows.len() as u64;
    let next_page = match rows.last() {
        Some(last) if offset + shown < total => {
            Some(Token::encode(cursor.epoch, w.sort, &w.q, &last.0))
        }
        _ => None,
    };
    Ok(Window {
        cursor,
        total,
        offset,
        workers: rows.into_iter().map(|r| r.1.clone()).collect(),
        next_page,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::model::fleet as tui;
    use crate::tui::panes::workers::{WorkerSort, compare};
    use crate::wire::{Cause, CauseKind, CauseSource, Failover, Heartbeat};
    use chrono::{TimeZone, Utc};
    use std::time::{Duration, Instant};

    #[test]
    fn a_query_of_more_than_sixteen_terms_is_too_costly() {
        let q = |q: String| WindowQuery {
            q,
            limit: 1,
            ..Default::default()
        };
        let at_most = (0..MAX_QUERY_TERMS)
            .map(|i| format!("!w{i}"))
            .collect::<Vec<_>>();
        assert_eq!(precheck(&q(at_most.join(" "))), Ok(()));
        let past = format!("{} !w99", at_most.join(" "));
        let e = precheck(&q(past)).expect_err("17 terms");
        assert_eq!(e, WindowError::TooCostly(17));
        assert_eq!(e.code(), "query_too_costly");
        assert_eq!(WindowError::Limit.code(), "invalid_query");
        // Plain words gather into one term, however many.
        assert_eq!(
            precheck(&q("a b c d e f g h i j k l m n o p q r".into())),
            Ok(())
        );
    }

    #[tokio::test]
    async fn passes_run_one_a_thread_queue_to_their_bound_and_refuse_past_it() {
        use std::task::Poll;
        let passes = Passes::new(1, 2);
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let release_rx = Arc::new(std::sync::Mutex::new(release_rx));
        let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
        // One running (held until released), two waiting: each is queued
        // by its first poll.
        let mut held = Vec::new();
        for i in 0..3 {
            let rx = release_rx.clone();
            let started = started_tx.clone();
            let mut f = Box::pin(passes.run(move || {
                let _ = started.send(());
                let _ = rx.lock().map(|r| r.recv_timeout(Duration::from_secs(20)));
                i
            }));
            assert!(futures::poll!(&mut f).is_pending(), "pass {i} waits");
            if i == 0 {
                started_rx
                    .recv_timeout(Duration::from_secs(10))
                    .expect("the first pass runs");
            }
            held.push(f);
        }
        let mut past = Box::pin(passes.run(|| ()));
        assert_eq!(futures::poll!(&mut past), Poll::Ready(Err(Overloaded(2))));
        for _ in 0..3 {
            let _ = release_tx.send(());
        }
        let mut done = Vec::new();
        for f in held {
            done.push(
                tokio::time::timeout(Duration::from_secs(20), f)
                    .await
                    .expect("in time")
                    .expect("ran"),
            );
        }
        assert_eq!(done, [0, 1, 2]);
        assert_eq!(passes.run(|| 7).await, Ok(7), "room again");
    }

    /// A fleet of every kind of row: routes on each rung, none, an active
    /// agent off its list, failovers of each kind with details, two
    /// revisions, and healthy, stale and lost workers; the hub's fleet and
    /// the TUI's, fed the same views.
    fn fleets() -> (Fleet, tui::Fleet) {
        let t0 = Utc
            .with_ymd_and_hms(2026, 11, 29, 15, 0, 0)
            .single()
            .expect("time");
        let m0 = Instant::now();
        let mut hub = Fleet::new(1);
        let agents = ["opencode", "claude", "pi"];
        for i in 0..90usize {
            let active = match i % 5 {
                0..=2 => Some(agents[i % 3].to_string()),
                3 => None,
                _ => Some("codex".into()),
            };
            let failovers = (i % 4 != 0)
                .then(|| Failover {
                    id: format!("f-{i}"),
                    at: t0 + chrono::Duration::seconds((i % 7) as i64),
                    from: agents[(i + 1) % 3].into(),
                    to: (i % 6 != 0).then(|| agents[i % 3].into()),
                    cause: Cause {
                        kind: CauseKind::ALL[i % CauseKind::ALL.len()],
                        status: None,
                        source: CauseSource::HubRouter,
                        detail: (i % 3 == 0).then(|| format!("Upstream said 429 Too Many {i}")),
                    },
                })
                .into_iter()
                .collect();
            let hb = Heartbeat {
                worker: format!("mac-{:02}", (i * 37) % 90),
                host: format!("Node-{}.lan", i % 11),
                sent_at: t0,
                config_revision: Some(if i % 8 == 0 { "r0" } else { "r1" }.into()),
                agents: agents.map(String::from).to_vec(),
                active_agent: active,
                capabilities: Default::default(),
                failovers,
                turn: None,
                next_turn_agent: None,
            };
            // Heard at different times: some go stale, some lost.
            let ago = [0u64, 5, 40, 200][i % 4] + (i as u64 % 3);
            let at = t0 + chrono::Duration::seconds(300 - ago as i64);
            let arrived = m0 + Duration::from_secs(300 - ago);
            hub.record_at(&(&hb).into(), at, arrived, &Arc::from("p"), "r1");
        }
        hub.sweep(
            m0 + Duration::from_secs(300),
            t0 + chrono::Duration::seconds(300),
            10,
        );
        let mut ui = tui::Fleet::default();
        ui.set_revision("r1");
        ui.set_interval(10);
        for v in hub.views() {
            ui.upsert(v.to_view());
        }
        (hub, ui)
    }

    const QUERIES: &[&str] = &[
        "",
        "stale",
        "LOST",
        "opencode #0",
        "pi #2",
        "codex #?",
        "no route",
        "node-3",
        "node-1 !stale",
        "rate_limited",
        "too many",
        "upstream said 429",
        "state:h",
        "!state:healthy",
        "agent:no",
        "agent:pi$",
        "rank:1",
        "!rank:0",
        "cause:auth",
        "rev:r0",
        "worker:mac-1",
        "worker:mac-1$",
        "host:node-10",
        "claude pi",
        "state:stale cause:rate",
    ];

    /// The hub's filter and orders give the TUI's answers on the same
    /// workers: the rows each query keeps, in each sort's order.
    #[test]
    fn the_hubs_windows_answer_as_the_tuis_workers_view() {
        let (hub, ui) = fleets();
        let sorts = [
            (WindowSort::Urgency, WorkerSort::Urgency),
            (WindowSort::Age, WorkerSort::Age),
            (WindowSort::Worker, WorkerSort::Worker),
            (WindowSort::Host, WorkerSort::Host),
            (WindowSort::Rank, WorkerSort::Rank),
        ];
        let states: std::collections::HashSet<_> = ui.iter().map(|(_, e)| e.state).collect();
        assert_eq!(states.len(), 3, "healthy, stale and lost rows");
        let mut nonempty = 0;
        for q in QUERIES {
            let tq = Query::parse(q, tui::FIELDS);
            for (ws, ts) in sorts {
                let mut want: Vec<&tui::Entry> = ui
                    .iter()
                    .map(|(_, e)| e)
                    .filter(|e| e.matches(&tq))
                    .collect();
                want.sort_by(|a, b| compare(ts, a, b));
                let want: Vec<&str> = want.iter().map(|e| &*e.view.worker).collect();
                let got = hub
                    .window(&WindowQuery {
                        sort: ws,
                        q: q.to_string(),
                        limit: MAX_WINDOW,
                        offset: None,
                        page: None,
                    })
                    .expect("a window");
                let got: Vec<&str> = got.workers.iter().map(|w| &**w.worker()).collect();
                assert_eq!(got, want, "q={q:?} sort={}", ws.as_str());
                nonempty += usize::from(!want.is_empty() && want.len() < 90);
            }
        }
        assert!(nonempty >= 5 * (QUERIES.len() - 3), "queries that narrow");
    }

    /// A window is the slice of the full order it names, wherever it
    /// starts and whichever way it is reached (offset, page; the heap near
    /// the start, the heap near the end, or the selection between), with
    /// and without a filter.
    #[test]
    fn offsets_and_pages_slice_the_one_order() {
        let (hub, _) = fleets();
        let sorts = [
            WindowSort::Urgency,
            WindowSort::Age,
            WindowSort::Worker,
            WindowSort::Host,
            WindowSort::Rank,
        ];
        for (sort, q) in sorts
            .into_iter()
            .flat_map(|s| ["", "!state:healthy"].map(|q| (s, q)))
        {
            let ask = |offset, limit, page, heap| {
                hub.window_in(
                    &WindowQuery {
                        sort,
                        q: q.to_string(),
                        limit,
                        offset,
                        page,
                    },
                    heap,
                )
                .expect("window")
            };
            let all: Vec<Arc<str>> = ask(None, 90, None, HEAP_ROWS)
                .workers
                .iter()
                .map(|w| w.worker().clone())
                .collect();
            let n = all.len();
            assert!(n > 20, "{q:?}: {n} rows");
            assert_eq!(n == 90, q.is_empty());
            // 20: a window ending past row 20 is a deep one, reached from
            // the end when it lies within 20 of it, else by selection.
            for heap in [HEAP_ROWS, 20, 0] {
                for (offset, limit) in [
                    (0, 7),
                    (13, 20),
                    (n as u64 - 15, 10),
                    (n as u64 - 5, 10),
                    (85, 10),
                    (90, 5),
                    (200, 5),
                ] {
                    let w = ask(Some(offset), limit, None, heap);
                    let ids: Vec<Arc<str>> = w.workers.iter().map(|w| w.worker().clone()).collect();
                    let from = (offset as usize).min(n);
                    let to = (from + limit as usize).min(n);
                    assert_eq!(
                        ids,
                        all[from..to],
                        "sort {} q {q:?} heap {heap} offset {offset} limit {limit}",
                        sort.as_str()
                    );
                    assert_eq!(w.total as usize, n);
                    assert_eq!(w.offset as usize, from);
                    assert_eq!(w.next_page.is_some(), to < n);
                }
                let mut seen = Vec::new();
                let mut page = None;
                for _ in 0..20 {
                    let w = ask(None, 8, page.take(), heap);
                    assert_eq!(w.offset as usize, seen.len());
                    seen.extend(w.workers.iter().map(|w| w.worker().clone()));
                    match w.next_page {
                        Some(p) => page = Some(p),
                        None => break,
                    }
                }
                assert_eq!(seen, all);
            }
        }
    }

    #[test]
    fn tokens_read_back_and_refuse_what_is_not_one() {
        let k = Key {
            a: 3,
            b: u64::MAX,
            s: "host.example",
            id: "mac-07",
        };
        let t = Token::encode(42, WindowSort::Host, "state:lost", &k);
        let back = Token::parse(&t).expect("parses");
        assert_eq!(back.key(), k);
        assert_eq!(back.epoch, 42);
        assert_eq!(back.sort, WindowSort::Host);
        assert_eq!(back.q, fnv("state:lost"));
        for bad in [
            "",
            "p",
            "p1.host.0.0.0.",
            "x1.worker.0.0.0..",
            &format!("{t}.00"),
        ] {
            assert!(Token::parse(bad).is_none(), "{bad:?}");
        }
        assert!(Token::parse(&t.replace(".686f7374", ".6g6f7374")).is_none());
    }
}
