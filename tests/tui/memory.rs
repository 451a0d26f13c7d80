//! What the TUI's failover log costs in memory, counted by the allocator
//! (not read from RSS, which the allocator moves by megabytes on its own):
//! the bytes each held failover costs, and that the log holds flat once
//! it is at its bound (`MAX_RECORDS`) however many more arrive. The soak
//! (`tests/tui/soak.rs`) allows the dashboard to grow by what it holds, using
//! the per-record budget asserted here.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use macfleet::tui::fixture;
use macfleet::tui::model::faillog::{FailLog, MAX_RECORDS};
use macfleet::wire::FailoverRecord;

thread_local! {
    /// Live heap bytes allocated by this thread: the tests of this binary
    /// run on threads of their own, so another test allocating while a
    /// figure is taken does not count. (A `const` cell with no destructor:
    /// reading it never allocates.)
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

fn count(bytes: isize) {
    let _ = LIVE.try_with(|c| c.set(c.get() + bytes));
}

struct Counting;

// SAFETY: every call is forwarded to the system allocator unchanged; the
// counter only observes sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count(l.size() as isize);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        count(-(l.size() as isize));
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        count(new as isize - l.size() as isize);
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// The cost of one held failover the soak may allow (bytes), while the
/// log grows (the deque's doubling included).
const RECORD_BUDGET: isize = 512;
/// What one failover costs once the log is full (bytes): the whole log at
/// `MAX_RECORDS` stays under 50,000 × 256 B = 12.2 MiB. (Held as the wire
/// records were, with a map's half-filled nodes, it was 696 B each.)
const FULL_BUDGET: isize = 256;

/// A failover as the simulator's busy fleet of 1,000 sends them.
fn record(seq: u64) -> FailoverRecord {
    fixture::busy_failover(seq, seq % 1000)
}

#[test]
fn a_held_failover_costs_under_512_bytes_and_the_full_log_holds_flat() {
    let live = || LIVE.with(|c| c.get());
    let empty = live();
    let mut log = FailLog::default();
    // Warm the minute buckets and the map's first nodes.
    for seq in 1..=1_000 {
        log.insert(record(seq));
    }
    let (base, held) = (live(), log.len());
    let n = 10_000u64;
    for seq in 1_001..=1_000 + n {
        log.insert(record(seq));
    }
    let per = (live() - base) / (log.len() - held) as isize;
    eprintln!("one held failover: {per} bytes");
    assert!(per > 100, "the count sees the records ({per} B)");
    assert!(per <= RECORD_BUDGET, "{per} bytes per failover");

    // To the bound, then 20% more: what it holds stays where it was.
    let mut seq = 1_000 + n;
    while log.len() < MAX_RECORDS {
        seq += 1;
        log.insert(record(seq));
    }
    let full = live();
    assert!(
        full - empty <= MAX_RECORDS as isize * FULL_BUDGET,
        "the full log costs {} B a failover",
        (full - empty) / MAX_RECORDS as isize
    );
    for _ in 0..MAX_RECORDS / 5 {
        seq += 1;
        log.insert(record(seq));
    }
    assert_eq!(log.len(), MAX_RECORDS);
    let after = live();
    eprintln!(
        "full log: {} KiB; after {} more: {} KiB",
        full / 1024,
        MAX_RECORDS / 5,
        after / 1024
    );
    // The minute buckets grow with the span of time covered (one per
    // minute of failover times, pruned by the app after an hour): allow
    // them, nothing else.
    let minutes = (MAX_RECORDS / 5 / 4 / 60 + 1) as isize;
    assert!(
        after - full <= full / 100 + minutes * 512,
        "the full log grew from {full} to {after} bytes"
    );

    // Every failover now from a worker never seen before (a fleet that
    // churns its ids): the strings evicted records leave behind go too,
    // however many pass through (without sweeping, each 50,000 would
    // leave ~8 MiB behind). The first 100,000 fill the log with them and
    // let the string table reach the size its sweeps settle at.
    for _ in 0..2 * MAX_RECORDS {
        seq += 1;
        log.insert(fixture::busy_failover(seq, seq));
    }
    let churned = live();
    for _ in 0..MAX_RECORDS {
        seq += 1;
        log.insert(fixture::busy_failover(seq, seq));
    }
    let later = live();
    eprintln!(
        "full log of churning workers: {} KiB; after {} more: {} KiB",
        churned / 1024,
        MAX_RECORDS,
        later / 1024
    );
    let minutes = (MAX_RECORDS / 4 / 60 + 1) as isize;
    assert!(
        later - churned <= churned / 100 + minutes * 512,
        "the churning log grew from {churned} to {later} bytes"
    );
}

/// A recovery as a busy fleet of 1,000 would send them: back from pi to
/// opencode, or from no route.
fn recovery(seq: u64, w: u64) -> macfleet::wire::RecoveryRecord {
    macfleet::wire::RecoveryRecord {
        seq,
        worker: format!("w-{w:05}"),
        host: format!("gpu-node-{:03}", w % 400),
        at: fixture::t0() + chrono::TimeDelta::seconds(seq as i64),
        from: (seq % 5 != 0).then(|| "pi".to_string()),
        to: "opencode".into(),
        held_off_s: seq % 3600,
    }
}

/// The recovery log is held as the failover log is (a deque by seq,
/// strings shared): a held recovery costs under 256 B while the log grows
/// and the full log (`MAX_RECOVERIES`) holds flat, ever-new worker ids
/// included.
#[test]
fn a_held_recovery_costs_under_256_bytes_and_the_full_log_holds_flat() {
    use macfleet::tui::model::reclog::{MAX_RECOVERIES, RecLog};
    let live = || LIVE.with(|c| c.get());
    let empty = live();
    let mut log = RecLog::default();
    for seq in 1..=1_000 {
        log.insert(recovery(seq, seq % 1000));
    }
    let (base, held) = (live(), log.len());
    for seq in 1_001..=11_000 {
        log.insert(recovery(seq, seq % 1000));
    }
    let per = (live() - base) / (log.len() - held) as isize;
    eprintln!("one held recovery: {per} bytes");
    assert!(per > 50, "the count sees the records ({per} B)");
    assert!(per <= 256, "{per} bytes per recovery");
    let mut seq = 11_000;
    while log.len() < MAX_RECOVERIES {
        seq += 1;
        log.insert(recovery(seq, seq % 1000));
    }
    let full = live();
    eprintln!(
        "full recovery log: {} KiB ({} B each)",
        (full - empty) / 1024,
        (full - empty) / MAX_RECOVERIES as isize
    );
    assert!(full - empty <= MAX_RECOVERIES as isize * 160);
    for _ in 0..2 * MAX_RECOVERIES {
        seq += 1;
        log.insert(recovery(seq, seq));
    }
    let churned = live();
    for _ in 0..MAX_RECOVERIES {
        seq += 1;
        log.insert(recovery(seq, seq));
    }
    assert_eq!(log.len(), MAX_RECOVERIES);
    let later = live();
    eprintln!(
        "full log of churning workers: {} KiB; after {} more: {} KiB",
        churned / 1024,
        MAX_RECOVERIES,
        later / 1024
    );
    assert!(
        later - churned <= churned / 100,
        "the churning log grew from {churned} to {later} bytes"
    );
}
