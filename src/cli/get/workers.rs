//! The `get workers` table, built as the page streams in: each worker is
//! kept only as its row's cells (scrubbed, escaped, cut to what a line of
//! the table can show; hosts and agent names interned), never as the
//! decoded worker, so the table of the largest fleet the client takes stays
//! a few hundred bytes a worker (docs/performance.md, *The table*). The
//! rows are sorted (no route first, then the least healthy, then by id)
//! and written a line at a time once the page has ended. No I/O but the
//! writer it is given.

use std::cmp::Reverse;
use std::collections::HashSet;
use std::io::Write;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::table::{Layout, age, cut, safe_cell};
use crate::verdict::Figures;
use crate::wire::{CauseKind, WorkerState, WorkerView};

/// The columns: header and priority (0 is kept longest).
const COLUMNS: [(&str, u8); 8] = [
    ("WORKER", 0),
    ("STATE", 0),
    ("ACTIVE", 0),
    ("HEADROOM", 1),
    ("AGE", 1),
    ("SYNC", 2),
    ("HOST", 3),
    ("LAST FAILOVER", 4),
];
const AGE: usize = 4;
const LAST: usize = 7;

/// Rows a chunk holds: the rows grow a chunk at a time, never a copy of
/// them all.
const CHUNK: usize = 4096;

/// A worker's last failover, for its cell (which needs the page's `now`).
struct Last {
    from: Arc<str>,
    to: Option<Arc<str>>,
    kind: CauseKind,
    status: Option<u16>,
    at: DateTime<Utc>,
}

/// One worker as the table shows it.
struct Row {
    /// The id as sent: the sort's last key.
    id: Box<str>,
    /// Its cell, when that differs from `id` (escaped, or cut).
    shown: Option<Box<str>>,
    state: WorkerState,
    /// The ACTIVE cell (`claude #1`, `NO ROUTE`).
    active: Arc<str>,
    routed: bool,
    headroom: Option<u32>,
    received_at: DateTime<Utc>,
    sync: Sync,
    host: Arc<str>,
    last: Option<Box<Last>>,
}

/// The SYNC cell: `yes`; `list` on the hub's revision with another list
/// (docs/hub-api.md, `in_sync`); `no` behind it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sync {
    Yes,
    OtherList,
    Behind,
}

impl Sync {
    fn of(w: &WorkerView, hub_revision: Option<&str>) -> Sync {
        if w.in_sync {
            Sync::Yes
        } else if !w.cohort
            && w.config_revision.is_some()
            && w.config_revision.as_deref() == hub_revision
        {
            Sync::OtherList
        } else {
            Sync::Behind
        }
    }

    fn cell(self) -> &'static str {
        match self {
            Sync::Yes => "yes",
            Sync::OtherList => "list",
            Sync::Behind => "no",
        }
    }
}

/// The summary's counts (stderr), over every worker of the page.
#[derive(Default)]
pub struct Counts {
    pub healthy: usize,
    pub stale: usize,
    pub lost: usize,
    pub no_route: usize,
    pub one_failure: usize,
    /// Live workers not in sync (another revision, or another list).
    pub out_of_sync: usize,
}

/// The table of a `GET /v1/workers` page, a worker at a time.
pub struct WorkersTable {
    max: usize,
    chunks: Vec<Vec<Row>>,
    names: HashSet<Arc<str>>,
    /// Per column, the widest cell's characters (the header's bytes if
    /// wider); AGE's and LAST FAILOVER's are known only with `now`.
    widths: [usize; 8],
    pub counts: Counts,
    /// The status word's figures.
    pub figures: Figures,
    /// The revision the hub projects (the page's head).
    hub_revision: Option<String>,
}

impl WorkersTable {
    /// A table to fit `max` columns of text (`usize::MAX`: `-o wide`).
    pub fn new(max: usize) -> WorkersTable {
        WorkersTable {
            max,
            chunks: Vec::new(),
            names: HashSet::new(),
            widths: COLUMNS.map(|(h, _)| h.len()),
            counts: Counts::default(),
            figures: Figures::default(),
            hub_revision: None,
        }
    }

    /// The revision the hub projects, from the page's head: a worker on
    /// it with another list is `list` in SYNC.
    pub fn hub_revision(&mut self, revision: &str) {
        self.hub_revision = Some(revision.to_string());
    }

    /// Workers added.
    pub fn len(&self) -> usize {
        self.figures.workers
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A cell of hub text, scrubbed and escaped, its width counted into
    /// column `col`, cut to what a line can show.
    fn cell(&mut self, col: usize, text: String) -> String {
        let safe = safe_cell(text);
        let n = safe.chars().count();
        self.widths[col] = self.widths[col].max(n);
        cut(safe, self.max)
    }

    fn name(&mut self, s: &str) -> Arc<str> {
        if let Some(n) = self.names.get(s) {
            return n.clone();
        }
        let n: Arc<str> = Arc::from(s);
        self.names.insert(n.clone());
        n
    }

    /// One more worker of the page.
    pub fn add(&mut self, w: &WorkerView) {
        self.figures.add_worker(w);
        self.count(w);
        // An id is kept as sent (it is the sort's key), its cell beside it
        // only when that differs.
        let shown = safe_cell(w.worker.clone());
        self.widths[0] = self.widths[0].max(shown.chars().count());
        let shown = (shown != w.worker).then(|| cut(shown, self.max).into_boxed_str());
        let active = match &w.active_agent {
            Some(a) => {
                let r = w.agents.iter().position(|x| x == a);
                format!("{a}{}", r.map(|r| format!(" #{r}")).unwrap_or_default())
            }
            None => "NO ROUTE".into(),
        };
        let active = self.cell(2, active);
        let host = self.cell(6, w.host.clone());
        let headroom = w.headroom.map_or(1, |h| h.to_string().len());
        self.widths[1] = self.widths[1].max(w.state.as_str().len());
        self.widths[3] = self.widths[3].max(headroom);
        let sync = Sync::of(w, self.hub_revision.as_deref());
        self.widths[5] = self.widths[5].max(sync.cell().len());
        let last = w.last_failover.as_ref().map(|f| {
            Box::new(Last {
                from: self.name(&f.from),
                to: f.to.as_deref().map(|t| self.name(t)),
                kind: f.cause.kind,
                status: f.cause.status,
                at: w.last_failover_at().unwrap_or(f.at),
            })
        });
        let row = Row {
            id: w.worker.as_str().into(),
            shown,
            state: w.state,
            active: self.name(&active),
            routed: w.active_agent.is_some(),
            headroom: w.headroom,
            received_at: w.received_at,
            sync,
            host: self.name(&host),
            last,
        };
        match self.chunks.last_mut() {
            Some(c) if c.len() < CHUNK => c.push(row),
            _ => {
                let mut c = Vec::with_capacity(CHUNK);
                c.push(row);
                self.chunks.push(c);
            }
        }
    }

    fn count(&mut self, w: &WorkerView) {
        let c = &mut self.counts;
        match w.state {
            WorkerState::Healthy => c.healthy += 1,
            WorkerState::Stale => c.stale += 1,
            WorkerState::Lost => c.lost += 1,
        }
        c.no_route += usize::from(w.active_agent.is_none());
        c.one_failure += usize::from(w.one_failure_from_no_route());
        c.out_of_sync += usize::from(w.state != WorkerState::Lost && !w.in_sync);
    }

    fn row(&self, i: u32) -> &Row {
        let i = i as usize;
        &self.chunks[i / CHUNK][i % CHUNK]
    }

    /// The rows in the table's order: no route first, then the least
    /// healthy, then by id.
    fn order(&self) -> Vec<u32> {
        let n = u32::try_from(self.len()).unwrap_or(u32::MAX);
        let mut order: Vec<u32> = (0..n).collect();
        order.sort_by(|a, b| {
            let (a, b) = (self.row(*a), self.row(*b));
            (a.routed, Reverse(a.state), &a.id).cmp(&(b.routed, Reverse(b.state), &b.id))
        });
        order
    }

    /// The LAST FAILOVER cell of `r` at `now`.
    fn last_cell(&self, r: &Row, now: DateTime<Utc>) -> String {
        let Some(f) = &r.last else {
            return "-".into();
        };
        let brief = format!(
            "{} → {} {}{} {}",
            f.from,
            f.to.as_deref().unwrap_or("NO ROUTE"),
            f.kind,
            f.status.map(|s| format!(" {s}")).unwrap_or_default(),
            age(now, f.at)
        );
        cut(safe_cell(brief), self.max)
    }

    /// The columns kept at `now`, the widths of AGE and LAST FAILOVER
    /// counted over every row.
    fn layout(&self, now: DateTime<Utc>) -> Layout {
        let mut widths = self.widths;
        for r in self.chunks.iter().flatten() {
            widths[AGE] = widths[AGE].max(age(now, r.received_at).len());
        }
        widths[LAST] = self
            .chunks
            .iter()
            .flatten()
            .map(|r| self.last_cell(r, now).chars().count())
            .fold(widths[LAST], usize::max);
        let cols: Vec<(u8, usize)> = COLUMNS.iter().map(|c| c.1).zip(widths).collect();
        Layout::fit(&cols, self.max)
    }

    /// The table (its header and a line a worker) at the page's `now`,
    /// into `out` a line at a time.
    pub fn write(&self, now: DateTime<Utc>, out: &mut impl Write) -> std::io::Result<()> {
        let layout = self.layout(now);
        let mut line = String::new();
        layout.line(&COLUMNS.map(|c| c.0), &mut line);
        out.write_all(line.as_bytes())?;
        let (show_age, show_last) = (layout.keeps(AGE), layout.keeps(LAST));
        for i in self.order() {
            let r = self.row(i);
            let headroom = r.headroom.map_or("-".into(), |h| h.to_string());
            let age = if show_age {
                age(now, r.received_at)
            } else {
                String::new()
            };
            let last = if show_last {
                self.last_cell(r, now)
            } else {
                String::new()
            };
            let cells = [
                r.shown.as_deref().unwrap_or(&r.id),
                r.state.as_str(),
                &r.active,
                &headroom,
                &age,
                r.sync.cell(),
                &r.host,
                &last,
            ];
            layout.line(&cells, &mut line);
            out.write_all(line.as_bytes())?;
        }
        Ok(())
    }
}
