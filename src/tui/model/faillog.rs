//! The failover log as the TUI holds it: the newest records by seq (bounded),
//! per-minute counts for the sparkline and the ladder's "away in the last
//! hour", and the Failovers view's index.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, TimeDelta, Utc};

use super::compact::Table;
use super::query::{Searchable, starts_ci};
use super::seqlog::{Held, Log};
use crate::scrub::scrub;
use crate::wire::{Cause, CauseKind, CauseSource, Failover, FailoverRecord};

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
pub struct Minute {
    by_kind: ByKind,
    /// Failovers away from each agent, by kind.
    away: HashMap<String, ByKind>,
}

/// One held failover, compact: its strings are shared with every other
/// record that repeats them (a fleet repeats its worker ids, hosts, agents
/// and details thousands of times), so a held failover costs about a
/// third of the wire record it came from (`tests/tui/memory.rs`).
#[derive(Debug, Clone)]
pub struct LogRec {
    pub seq: u64,
    pub worker: Arc<str>,
    pub host: Arc<str>,
    pub received_at: DateTime<Utc>,
    pub id: Box<str>,
    /// When the worker moved (its clock).
    pub at: DateTime<Utc>,
    pub from: Arc<str>,
    /// `None`: no rung left, the worker failed closed.
    pub to: Option<Arc<str>>,
    pub kind: CauseKind,
    pub status: Option<u16>,
    pub source: CauseSource,
    pub detail: Option<Arc<str>>,
    /// What a plain filter word is looked for in, lower-cased.
    hay: Arc<str>,
}

impl LogRec {
    /// The failover as the worker reported it.
    pub fn failover(&self) -> Failover {
        Failover {
            id: self.id.to_string(),
            at: self.at,
            from: self.from.to_string(),
            to: self.to.as_deref().map(str::to_string),
            cause: Cause {
                kind: self.kind,
                status: self.status,
                source: self.source,
                detail: self.detail.as_deref().map(str::to_string),
            },
        }
    }

    /// The record as the hub sent it (`v`).
    pub fn record(&self) -> FailoverRecord {
        FailoverRecord {
            seq: self.seq,
            worker: self.worker.to_string(),
            host: self.host.to_string(),
            received_at: self.received_at,
            failover: self.failover(),
        }
    }
}

/// Fields a Failovers filter can name (`cause:auth`, `agent:pi`, ...);
/// `agent` is either end of the move, `dir` its direction: `down` a
/// failover, `up` a recovery (the view shows both).
pub const FIELDS: &[&str] = &[
    "worker", "host", "from", "to", "agent", "cause", "source", "status", "dir",
];

impl Searchable for LogRec {
    fn shows(&self, needle: &str) -> bool {
        self.hay.contains(needle)
    }

    fn field_starts(&self, field: &str, value: &str) -> bool {
        let r = self;
        let to = r.to.as_deref().unwrap_or("no route");
        match field {
            "worker" => starts_ci(&r.worker, value),
            "host" => starts_ci(&r.host, value),
            "from" => starts_ci(&r.from, value),
            "to" => starts_ci(to, value),
            "agent" => starts_ci(&r.from, value) || starts_ci(to, value),
            "cause" => starts_ci(r.kind.as_str(), value),
            "source" => starts_ci(r.source.as_str(), value),
            "status" => r.status.is_some_and(|s| starts_ci(&s.to_string(), value)),
            "dir" => starts_ci("down", value),
            _ => false,
        }
    }
}

/// The failover log: [`Log`] of [`LogRec`], which also counts every
/// failover in its minute.
pub type FailLog = Log<LogRec>;

/// Unix minute (of the failover's own `at`, when the worker moved) ->
/// counts. Not the receive time: a worker back-filling after an outage (or
/// the demo posting its last hour) sends old failovers at once, and they
/// belong in the minutes they happened. Independent of [`MAX_RECORDS`], so
/// a storm does not make the last hour look calmer.
pub type Minutes = BTreeMap<i64, Minute>;

impl Held for LogRec {
    type Wire = FailoverRecord;
    type Tally = Minutes;
    const MAX: usize = MAX_RECORDS;

    fn wire_seq(w: &FailoverRecord) -> u64 {
        w.seq
    }

    fn seq(&self) -> u64 {
        self.seq
    }

    fn worker(&self) -> &str {
        &self.worker
    }

    fn count(minutes: &mut Minutes, rec: &FailoverRecord) {
        let m = minutes.entry(minute_of(rec.failover.at)).or_default();
        let k = kind_index(rec.failover.cause.kind);
        m.by_kind[k] += 1;
        if let Some(a) = m.away.get_mut(&rec.failover.from) {
            a[k] += 1;
        } else {
            let mut a = ByKind::default();
            a[k] += 1;
            m.away.insert(rec.failover.from.clone(), a);
        }
    }

    fn hold(rec: FailoverRecord, st: &mut Table<str>) -> LogRec {
        let hay = st.sym(&haystack(&rec));
        let f = rec.failover;
        LogRec {
            seq: rec.seq,
            worker: st.sym(&rec.worker),
            host: st.sym(&rec.host),
            received_at: rec.received_at,
            id: f.id.into_boxed_str(),
            at: f.at,
            from: st.sym(&f.from),
            to: f.to.as_deref().map(|t| st.sym(t)),
            kind: f.cause.kind,
            status: f.cause.status,
            source: f.cause.source,
            detail: f.cause.detail.as_deref().map(|d| st.sym(d)),
            hay,
        }
    }
}

fn minute_of(t: DateTime<Utc>) -> i64 {
    t.timestamp().div_euclid(60)
}

/// Per-minute counts by cause of some of the records (those a filter
/// shows), each in the minute of its own `at`: the Failovers sparkline
/// under a filter. Built when the rows are, read per frame.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spark(BTreeMap<i64, ByKind>);

impl Spark {
    pub fn of<'a>(recs: impl Iterator<Item = &'a LogRec>) -> Spark {
        let mut m: BTreeMap<i64, ByKind> = BTreeMap::new();
        for r in recs {
            m.entry(minute_of(r.at)).or_default()[kind_index(r.kind)] += 1;
        }
        Spark(m)
    }

    /// As [`FailLog::per_minute`].
    pub fn per_minute(&self, now: DateTime<Utc>, minutes: usize) -> Vec<ByKind> {
        let last = minute_of(now);
        let first = last - minutes as i64 + 1;
        let mut out = vec![ByKind::default(); minutes];
        for (m, b) in self.0.range(first..=last) {
            out[(m - first) as usize] = *b;
        }
        out
    }

    /// As [`FailLog::causes_seen`].
    pub fn causes_seen(&self, now: DateTime<Utc>) -> Vec<CauseKind> {
        let per = self.per_minute(now, WINDOW_MIN as usize);
        CauseKind::ALL
            .iter()
            .enumerate()
            .filter(|(i, _)| per.iter().any(|m| m[*i] > 0))
            .map(|(_, k)| *k)
            .collect()
    }
}

impl FailLog {
    /// Forget minutes that left the window.
    pub fn prune(&mut self, now: DateTime<Utc>) {
        let keep_from = minute_of(now) - WINDOW_MIN;
        self.tally = self.tally.split_off(&keep_from);
    }

    /// Failovers away from each agent over the last hour, by kind.
    pub fn away_last_hour(&self, now: DateTime<Utc>) -> HashMap<&str, ByKind> {
        let from = minute_of(now - TimeDelta::minutes(WINDOW_MIN)) + 1;
        let mut out: HashMap<&str, ByKind> = HashMap::new();
        for (_, m) in self.tally.range(from..) {
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
        for (m, b) in self.tally.range(first..=last) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::fixture;

    fn rec(seq: u64) -> FailoverRecord {
        let mut r = fixture::failovers(1, fixture::t0()).events.remove(0);
        r.seq = seq;
        r.worker = format!("w-{:03}", seq % 7);
        r.failover.id = format!("id-{seq}");
        r
    }

    fn seqs(log: &FailLog) -> Vec<u64> {
        log.records.iter().map(|r| r.seq).collect()
    }

    #[test]
    fn records_stay_in_seq_order_whatever_order_they_come_in() {
        let mut log = FailLog::default();
        for s in [10, 12, 11, 3, 20, 15, 1] {
            assert!(log.insert(rec(s)), "{s} is new");
        }
        assert_eq!(seqs(&log), [1, 3, 10, 11, 12, 15, 20]);
        assert!(!log.insert(rec(11)), "a seq already held");
        assert!(!log.insert(rec(20)), "the newest again");
        assert_eq!(log.len(), 7);
        assert_eq!(log.next, 20);
        assert_eq!(log.get(15).map(|r| &*r.id), Some("id-15"));
        assert!(log.get(14).is_none());
        let of: Vec<u64> = log.of_worker("w-003").map(|r| r.seq).collect();
        assert_eq!(of, [10, 3], "newest first, that worker only");
    }

    #[test]
    fn a_held_record_gives_back_what_the_hub_sent() {
        let mut log = FailLog::default();
        let mut page = fixture::failovers(40, fixture::t0()).events;
        // One with no route and no status, one with every field.
        page[0].failover.to = None;
        page[1].failover.cause.status = None;
        page[2].failover.cause.detail = None;
        for r in &page {
            log.insert(r.clone());
        }
        for r in &page {
            let held = log.get(r.seq).expect("held");
            assert_eq!(&held.record(), r);
            assert_eq!(
                serde_json::to_string(&held.record()).expect("json"),
                serde_json::to_string(r).expect("json")
            );
        }
    }

    #[test]
    fn when_full_the_oldest_go_and_older_ones_are_refused() {
        let mut log = FailLog::default();
        for s in 1..=MAX_RECORDS as u64 + 5 {
            log.insert(rec(s));
        }
        assert_eq!(log.len(), MAX_RECORDS);
        assert_eq!(log.records.front().map(|r| r.seq), Some(6));
        assert!(!log.insert(rec(2)), "older than all held, and full");
        // A gap inside what is held is filled, and the oldest goes.
        log.records.retain(|r| r.seq != 100);
        log.insert(rec(MAX_RECORDS as u64 + 6));
        assert!(log.insert(rec(100)));
        assert_eq!(log.len(), MAX_RECORDS);
        assert_eq!(log.records.front().map(|r| r.seq), Some(7));
        assert!(
            log.records.capacity() <= MAX_RECORDS + 1,
            "never doubled past the bound"
        );
        let s = seqs(&log);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn strings_are_shared() {
        let mut log = FailLog::default();
        for s in 1..=100 {
            log.insert(rec(s));
        }
        let a = log.get(1).expect("held");
        let b = log.get(8).expect("held");
        assert!(Arc::ptr_eq(&a.worker, &b.worker), "same worker, one string");
        assert!(Arc::ptr_eq(&a.from, &b.from));
        // Seven workers, one host, two agents, one detail, seven hays.
        assert!(log.strings.len() <= 20, "{}", log.strings.len());
    }
}
