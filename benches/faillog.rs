//! The TUI's failover log at its bound (50,000 held): one failover
//! arriving (insert, the oldest evicted), the Failovers view's index
//! rebuilt unfiltered, with a plain word, a field and sorted by worker;
//! and the Ladder's AWAY NOW over 100,000 workers and that log. Run the
//! same file against an older commit to compare (docs/performance.md).

// What the binary ships with (src/main.rs), so the figures are its own.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use macfleet::tui::fixture;
use macfleet::tui::model::faillog::{self, FailLog, MAX_RECORDS};
use macfleet::tui::model::query::Query;
use macfleet::tui::msg::Msg;
use macfleet::tui::panes::failovers::{self, FailoverSort};
use macfleet::tui::ui::theme::Theme;
use macfleet::wire::FailoverRecord;

/// A failover as the simulator's busy fleet sends them (1,000 workers).
fn record(seq: u64) -> FailoverRecord {
    fixture::busy_failover(seq, seq % 1000)
}

fn full() -> (FailLog, u64) {
    let mut log = FailLog::default();
    let n = MAX_RECORDS as u64;
    for seq in 1..=n {
        log.insert(record(seq));
    }
    (log, n)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("faillog_50k");
    let (mut log, mut seq) = full();
    g.bench_function("insert_one", |b| {
        b.iter(|| {
            seq += 1;
            black_box(log.insert(record(seq)));
        })
    });
    let (log, _) = full();
    let fields = faillog::FIELDS;
    for (name, text, sort) in [
        ("index_all", "", FailoverSort::Time),
        ("index_word", "w-0004", FailoverSort::Time),
        ("index_field", "cause:auth", FailoverSort::Time),
        ("index_by_worker", "", FailoverSort::Worker),
    ] {
        let q = Query::parse(text, fields);
        g.bench_function(name, |b| {
            b.iter(|| black_box(failovers::index(&log, &q, sort, false)))
        });
    }
    g.finish();
}

fn away(c: &mut Criterion) {
    let now = fixture::t0();
    let (mut a, m0) = fixture::app(0, false, Theme::new(false, false), 200, 50);
    a.update(Msg::Workers {
        page: fixture::page(fixture::fleet(100_000, now), now, false, 2),
        at: m0,
    });
    a.update(Msg::Failovers {
        page: fixture::failovers(MAX_RECORDS, now),
        fresh: true,
    });
    a.settle();
    assert_eq!(a.model().log.len(), MAX_RECORDS);
    let mut g = c.benchmark_group("away_now");
    g.sample_size(20);
    g.bench_function("100k_workers_50k_failovers", |b| {
        b.iter(|| {
            black_box(macfleet::tui::model::away::away_now(
                &a.model().fleet,
                &a.model().log,
            ))
        })
    });
    g.finish();
}

criterion_group!(benches, bench, away);
criterion_main!(benches);
