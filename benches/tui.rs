//! The Workers view's frame at 200x50 with 100, 10,000 and 100,000 workers,
//! a keystroke (filter, sort, cursor) at 100,000, and a 1,000-worker delta
//! applied to a 100,000-worker model, and the owner's move on the Ladder
//! with an edit pending at 100,000.

// What the binary ships with (src/main.rs), so the figures are its own.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use macfleet::tui::app::App;
use macfleet::tui::fixture::{self, t0};
use macfleet::tui::msg::Msg;
use macfleet::tui::ui::theme::Theme;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

fn app(n: usize) -> App {
    fixture::app(n, false, Theme::new(false, false), 200, 50).0
}

fn frame(c: &mut Criterion) {
    let mut g = c.benchmark_group("workers_frame_200x50");
    for n in [100usize, 10_000, 100_000] {
        let a = app(n);
        let mut buf = Buffer::empty(Rect::new(0, 0, 200, 50));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                a.draw(&mut buf);
                black_box(&buf);
            })
        });
    }
    g.finish();
}

fn delta(c: &mut Criterion) {
    let mut g = c.benchmark_group("delta_1000_into_100000");
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(10));
    let base = app(100_000);
    let now = t0() + chrono::TimeDelta::seconds(1);
    let page = |round: usize| {
        let workers = (0..1000)
            .map(|k| {
                let i = (k * 97 + round) % 100_000;
                let mut w = fixture::worker(i, now);
                if k % 7 == 0 {
                    w.active_agent = None;
                }
                w
            })
            .collect();
        fixture::page(workers, now, true, 2)
    };
    g.bench_function("apply_and_settle", |b| {
        b.iter_batched_ref(
            || (clone_app(&base), page(0)),
            |(a, p)| {
                let at = a.model().mono_now;
                a.update(Msg::Workers {
                    page: p.clone(),
                    at,
                });
                a.settle();
            },
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

/// A key as the loop takes it: update, then settle.
fn press(a: &mut App, code: KeyCode) {
    a.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    a.settle();
}

/// Rebuild an equal app (App is not Clone: it is only ever built from messages).
fn clone_app(a: &App) -> App {
    let _ = a;
    app(100_000)
}

fn keystroke(c: &mut Criterion) {
    let mut g = c.benchmark_group("keystroke_at_100000");
    g.sample_size(20);
    let mut a = app(100_000);
    g.bench_function("cursor_down", |b| {
        b.iter(|| press(&mut a, KeyCode::Char('j')))
    });
    let mut a = app(100_000);
    press(&mut a, KeyCode::Char('/'));
    g.bench_function("filter_type_and_delete", |b| {
        b.iter(|| {
            // A filter that widens again: a full filter + sort of 100,000.
            press(&mut a, KeyCode::Char('7'));
            press(&mut a, KeyCode::Backspace);
        })
    });
    let mut a = app(100_000);
    g.bench_function("sort_cycle", |b| {
        b.iter(|| press(&mut a, KeyCode::Char('s')))
    });
    g.finish();
}

/// The owner on the Ladder of a 100,000-worker fleet with an edit pending:
/// each move recounts the projection (where every healthy worker would
/// land on the new order).
fn owner(c: &mut Criterion) {
    let mut g = c.benchmark_group("owner_at_100000");
    g.sample_size(10);
    let (mut a, _) = fixture::app(100_000, true, Theme::new(false, false), 200, 50);
    press(&mut a, KeyCode::Char('1'));
    press(&mut a, KeyCode::Char('J'));
    assert!(a.model().edit.projection.is_some(), "an edit is pending");
    g.bench_function("move_down_and_up", |b| {
        b.iter(|| {
            press(&mut a, KeyCode::Char('J'));
            press(&mut a, KeyCode::Char('K'));
        })
    });
    g.finish();
}

criterion_group!(benches, frame, delta, keystroke, owner);
criterion_main!(benches);
