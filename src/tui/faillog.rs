//! The failover log as the TUI holds it: the newest records by seq (bounded),
//! per-minute counts for the sparkline and the ladder's "away in the last
//! hour", and the Failovers view's index.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, TimeDelta, Utc};

use super::query::{Query, Searchable, starts_ci};
use crate::scrub::scrub;
use crate::wire::{CauseKind, FailoverRecord};

/// Records kept for the log view; older ones fall off (the hub keeps more).
pub const MAX_RECORDS: usize = 50_000;
/// Minutes the per-minute counts cover.
pub const WINDOW_MIN: i64 = 60;

pub fn kind_index(k: CauseKind) -> usize {
    CauseKind::ALL
        .iter()
        .position(|x| *x == k)
        .expect("ALL lists every kind")
}

pub type ByKind = [u32; CauseKind::ALL.len()];

#[derive(Debug, Clone, Default)]
struct Minute {
    by_kind: ByKind,
    /// Failovers away from each agent, by kind.
    away: HashMap<String, ByKind>,
}

#[derive(Debug, Clone)]
pub struct LogRec {
    pub rec: FailoverRecord,
    hay: String,
}

/// Fields a Failovers filter can name (`cause:auth`, `agent:pi`, ...);
/// `agent` is either end of the move.
pub const FIELDS: &[&str] = &[
    "worker", "host", "from", "to", "agent", "cause", "source", "status",
];

impl Searchable for LogRec {
    fn shows(&self, needle: &str) -> bool {
        self.hay.contains(needle)
    }

    fn field_starts(&self, field: &str, value: &str) -> bool {
        let r = &self.rec;
        let f = &r.failover;
        let to = f.to.as_deref().unwrap_or("no route");
        match field {
            "worker" => starts_ci(&r.worker, value),
            "host" => starts_ci(&r.host, value),
            "from" => starts_ci(&f.from, value),
            "to" => starts_ci(to, value),
            "agent" => starts_ci(&f.from, value) || starts_ci(to, value),
            "cause" => starts_ci(f.cause.kind.as_str(), value),
            "source" => starts_ci(f.cause.source.as_str(), value),
            "status" => f
                .cause
                .status
                .is_some_and(|s| starts_ci(&s.to_string(), value)),
            _ => false,
        }
    }
}

#[derive(Debug, Default)]
pub struct FailLog {
    pub records: BTreeMap<u64, LogRec>,
    /// Unix minute (of the failover's own `at`, when the worker moved) ->
    /// counts. Not the receive time: a worker back-filling after an outage
    /// (or the demo posting its last hour) sends old failovers at once, and
    /// they belong in the minutes they happened. Independent of
    /// [`MAX_RECORDS`], so a storm does not make the last hour look calmer.
    minutes: BTreeMap<i64, Minute>,
    /// Highest seq seen; the polling cursor.
    pub next: u64,
}

fn minute_of(t: DateTime<Utc>) -> i64 {
    t.timestamp().div_euclid(60)
}

impl FailLog {
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn clear(&mut self) {
        *self = FailLog::default();
    }

    /// Add one record; false when its seq was already here.
    pub fn insert(&mut self, rec: FailoverRecord) -> bool {
        let seq = rec.seq;
        if self.records.contains_key(&seq) || (seq < self.floor() && self.full()) {
            return false;
        }
        self.next = self.next.max(seq);
        let m = self.minutes.entry(minute_of(rec.failover.at)).or_default();
        let k = kind_index(rec.failover.cause.kind);
        m.by_kind[k] += 1;
        if let Some(a) = m.away.get_mut(&rec.failover.from) {
            a[k] += 1;
        } else {
            let mut a = ByKind::default();
            a[k] += 1;
            m.away.insert(rec.failover.from.clone(), a);
        }
        let hay = haystack(&rec);
        self.records.insert(seq, LogRec { rec, hay });
        while self.records.len() > MAX_RECORDS {
            self.records.pop_first();
        }
        true
    }

    fn full(&self) -> bool {
        self.records.len() >= MAX_RECORDS
    }

    fn floor(&self) -> u64 {
        self.records.keys().next().copied().unwrap_or(0)
    }

    /// Forget minutes that left the window.
    pub fn prune(&mut self, now: DateTime<Utc>) {
        let keep_from = minute_of(now) - WINDOW_MIN;
        self.minutes = self.minutes.split_off(&keep_from);
    }

    /// Failovers away from each agent over the last hour, by kind.
    pub fn away_last_hour(&self, now: DateTime<Utc>) -> HashMap<&str, ByKind> {
        let from = minute_of(now - TimeDelta::minutes(WINDOW_MIN)) + 1;
        let mut out: HashMap<&str, ByKind> = HashMap::new();
        for (_, m) in self.minutes.range(from..) {
            for (agent, counts) in &m.away {
                let e = out.entry(agent.as_str()).or_default();
                for (x, y) in e.iter_mut().zip(counts) {
                    *x += y;
                }
            }
        }
        out
    }

    /// Per-minute counts by kind, oldest minute first, `minutes` long and
    /// ending with the current minute.
    pub fn per_minute(&self, now: DateTime<Utc>, minutes: usize) -> Vec<ByKind> {
        let last = minute_of(now);
        let first = last - minutes as i64 + 1;
        let mut out = vec![ByKind::default(); minutes];
        for (m, b) in self.minutes.range(first..=last) {
            out[(m - first) as usize] = b.by_kind;
        }
        out
    }

    /// Causes with at least one failover in the last hour, in `CauseKind::ALL` order.
    pub fn causes_seen(&self, now: DateTime<Utc>) -> Vec<CauseKind> {
        let per = self.per_minute(now, WINDOW_MIN as usize);
        CauseKind::ALL
            .iter()
            .enumerate()
            .filter(|(i, _)| per.iter().any(|m| m[*i] > 0))
            .map(|(_, k)| *k)
            .collect()
    }

    pub fn get(&self, seq: u64) -> Option<&FailoverRecord> {
        self.records.get(&seq).map(|r| &r.rec)
    }

    /// The newest records of one worker, newest first.
    pub fn of_worker<'a>(
        &'a self,
        worker: &'a str,
    ) -> impl Iterator<Item = &'a FailoverRecord> + 'a {
        self.records
            .values()
            .rev()
            .filter(move |r| r.rec.worker == worker)
            .map(|r| &r.rec)
    }
}

fn haystack(r: &FailoverRecord) -> String {
    let f = &r.failover;
    let mut s = format!(
        "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
        r.worker,
        r.host,
        f.from,
        f.to.as_deref().unwrap_or("no route"),
        f.cause.kind.as_str(),
        f.cause.source.as_str(),
    );
    if let Some(st) = f.cause.status {
        s.push('\u{1f}');
        s.push_str(&st.to_string());
    }
    if let Some(d) = &f.cause.detail {
        s.push('\u{1f}');
        s.push_str(&scrub(d));
    }
    s.make_ascii_lowercase();
    s
}

/// How the Failovers view orders rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FailoverSort {
    /// Newest first.
    #[default]
    Time,
    Worker,
    Cause,
    From,
}

impl FailoverSort {
    pub const ALL: [FailoverSort; 4] = [
        FailoverSort::Time,
        FailoverSort::Worker,
        FailoverSort::Cause,
        FailoverSort::From,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FailoverSort::Time => "time",
            FailoverSort::Worker => "worker",
            FailoverSort::Cause => "cause",
            FailoverSort::From => "from",
        }
    }
}

/// The Failovers view's rows, as seqs.
pub fn index(log: &FailLog, filter: &Query, sort: FailoverSort, reverse: bool) -> Vec<u64> {
    let mut v: Vec<u64> = log
        .records
        .iter()
        .rev()
        .filter(|(_, r)| filter.matches(*r))
        .map(|(s, _)| *s)
        .collect();
    if sort != FailoverSort::Time {
        let key = |seq: &u64| -> &FailoverRecord { &log.records[seq].rec };
        v.sort_by(|a, b| {
            let (ra, rb) = (key(a), key(b));
            let o = match sort {
                FailoverSort::Time => Ordering::Equal,
                FailoverSort::Worker => ra.worker.cmp(&rb.worker),
                FailoverSort::Cause => ra.failover.cause.kind.cmp(&rb.failover.cause.kind),
                FailoverSort::From => ra.failover.from.cmp(&rb.failover.from),
            };
            // Stable sort over newest-first input keeps newest first on ties.
            o
        });
    }
    if reverse {
        v.reverse();
    }
    v
}
