//! A log of the hub's the TUI holds (the failovers, the recoveries): the
//! newest records by seq, bounded, deduplicated, compact. One type,
//! [`Log`], with one instance a kind ([`super::faillog::FailLog`],
//! [`super::reclog::RecLog`]): what differs is the record ([`Held`]: its
//! compact form, its bound, what else the log counts of it).

use std::collections::VecDeque;
use std::fmt::Debug;

use super::compact::Table;

/// A record a [`Log`] holds: the compact form of one the hub sends.
pub trait Held: Sized {
    /// The record as the hub sends it.
    type Wire;
    /// What the log counts of every record new to it, besides holding it
    /// (the failovers' per-minute counts; `()` for none). It outlives the
    /// records: an evicted record stays counted.
    type Tally: Default + Debug;
    /// Records kept; older ones fall off (the hub keeps more).
    const MAX: usize;
    fn wire_seq(w: &Self::Wire) -> u64;
    fn seq(&self) -> u64;
    /// The worker it is of.
    fn worker(&self) -> &str;
    /// Count `w`, new to the log, in the tally.
    fn count(_tally: &mut Self::Tally, _w: &Self::Wire) {}
    /// Its compact form, its strings shared through `strings`.
    fn hold(w: Self::Wire, strings: &mut Table<str>) -> Self;
}

#[derive(Debug)]
pub struct Log<R: Held> {
    /// Oldest first, by seq. A deque, not a map: records come almost
    /// always newest last, and a map's half-filled nodes cost about as
    /// much again as the records themselves.
    pub records: VecDeque<R>,
    /// Highest seq seen; the polling cursor.
    pub next: u64,
    /// What the log counts besides its records ([`Held::Tally`]).
    pub(super) tally: R::Tally,
    /// The strings the held records share (swept whenever the table has
    /// doubled, so what evicted records leave behind goes too).
    pub(super) strings: Table<str>,
}

impl<R: Held> Default for Log<R> {
    fn default() -> Self {
        Log {
            records: VecDeque::new(),
            next: 0,
            tally: R::Tally::default(),
            strings: Table::default(),
        }
    }
}

impl<R: Held> Log<R> {
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn clear(&mut self) {
        *self = Log::default();
    }

    /// Add one record; false when its seq was already here (or it is older
    /// than everything a full log holds).
    pub fn insert(&mut self, w: R::Wire) -> bool {
        let seq = R::wire_seq(&w);
        let Some(at) = seat(&self.records, seq, R::seq, R::MAX) else {
            return false;
        };
        self.next = self.next.max(seq);
        R::count(&mut self.tally, &w);
        let held = R::hold(w, &mut self.strings);
        put(&mut self.records, at, held, R::MAX);
        true
    }

    /// A page of the hub's log (`fresh`: from its start, what was held
    /// goes): every record taken, the cursor moved on to `next`.
    pub fn take_page(&mut self, events: Vec<R::Wire>, next: u64, fresh: bool) {
        if fresh {
            self.clear();
        }
        for w in events {
            self.insert(w);
        }
        self.next = self.next.max(next);
    }

    pub fn get(&self, seq: u64) -> Option<&R> {
        let i = self.records.binary_search_by_key(&seq, R::seq).ok()?;
        self.records.get(i)
    }

    /// The records of one worker, newest first.
    pub fn of_worker<'a>(&'a self, worker: &'a str) -> impl Iterator<Item = &'a R> + 'a {
        self.records
            .iter()
            .rev()
            .filter(move |r| r.worker() == worker)
    }

    /// The worker's newest record.
    pub fn latest_of(&self, worker: &str) -> Option<&R> {
        self.records.iter().rev().find(|r| r.worker() == worker)
    }
}

/// Where a record of `seq` goes in `records` (held oldest first by seq, at
/// most `max` of them): `Some(None)` at the back (the usual case, records
/// come newest last), `Some(Some(i))` at `i` (a backfill), `None` when it
/// is held already or older than everything a full log holds.
fn seat<T>(
    records: &VecDeque<T>,
    seq: u64,
    seq_of: impl Fn(&T) -> u64,
    max: usize,
) -> Option<Option<usize>> {
    match records.back() {
        Some(last) if seq_of(last) >= seq => match records.binary_search_by_key(&seq, &seq_of) {
            Ok(_) => None,
            Err(_) if records.len() >= max && records.front().is_some_and(|f| seq < seq_of(f)) => {
                None
            }
            Err(i) => Some(Some(i)),
        },
        _ => Some(None),
    }
}

/// Put `rec` where [`seat`] said, the oldest going past `max`.
fn put<T>(records: &mut VecDeque<T>, at: Option<usize>, rec: T, max: usize) {
    if records.len() == records.capacity() {
        // Double, but never past the bound (plus the one over it before
        // the oldest goes): 31% of a doubled deque would otherwise sit
        // empty once the log is full.
        let len = records.len();
        let want = (len * 2).clamp(1_024.min(max + 1), max + 1);
        records.reserve_exact(want.saturating_sub(len).max(1));
    }
    match at {
        Some(i) => records.insert(i, rec),
        None => records.push_back(rec),
    }
    while records.len() > max {
        records.pop_front();
    }
}
