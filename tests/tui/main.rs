//! The TUI's tests, one binary with a module per topic (was fifteen
//! binaries, each linking the whole crate). The harnesses are shared:
//! `common` starts hubs (with the hub's tests), `ui` drives `App` through
//! `update` and reads a drawn buffer as text, `pty` runs the real binary
//! in a pseudo-terminal and holds the kill-on-drop guard for every process
//! a test spawns.
//!
//! Run one topic with `cargo test --test tui <topic>::`; the soak is
//! `MACFLEET_SOAK_MINUTES=30 cargo test --release --test tui soak:: -- --ignored`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/pty.rs"]
mod pty;
#[path = "../common/app.rs"]
mod ui;

/// aug19's outage: every no-route worker's why names a cause for every rung.
mod aug19;
/// `:ctx` between two real hubs.
mod ctx;
/// The owner's edit through `update`.
mod edit;
/// The loop: keys, signals, job control, resize storms (the binary in a pty).
mod event_loop;
/// A stream the hub's proxy refuses: polling, then live again.
mod fallback;
/// A terminal that goes away under the binary.
mod hangup;
/// A problem the hub knows, on connect, to the status line (issue 29).
mod hub_problem;
/// `:` jumps, `v` and a bad command in the binary.
mod jump;
/// No key drops an edit (C-c, SIGHUP, SIGTERM: a draft offered next
/// time; `d d d`), and the words an owner needs.
mod keep;
/// The owner's edit in the binary against `macfleet hub`.
mod ladder;
/// The large-fleet mode through `update`: summaries and windows.
mod large;
/// A write whose answer was lost: checked by its key (the binary behind a
/// proxy that drops the answer).
mod lost;
/// The failover log's live heap, by a counting allocator.
mod memory;
/// Two actors' edits of the list merged in the binary against one hub.
mod merge;
/// The on-call screens through `update`.
mod oncall;
/// Issue #21's TUI: recoveries, headroom, the drill; #17's pool and clock.
mod recovery;
/// A hub replaced under a dashboard; `get --watch` on a refused token.
mod replaced;
/// A pending edit when another hub answers at its address: kept as the
/// old hub's draft (the binary, two hubs on one port).
mod replaced_edit;
/// The staged rollout (issue 33) in the binary against a hub and a
/// simulated fleet: `C`, the Ladder's line, `P`, `A`, a 409 kept, a halt.
mod rollout;
/// The real runner in a pty against the demo and a hub killed under it.
mod runner;
/// Every screen as an insta snapshot of a `TestBackend`.
mod snapshots;
/// Hours against a busy fleet (ignored).
mod soak;
/// State from the event stream.
mod stream;
/// Issue 28's TUI: a replaced hub said until acknowledged, `:messages`,
/// HUB ERROR's last known, one moment's counts, the hub's word.
mod truth;
/// `update`: keys, filters, sorts, deltas, connection states.
mod update;
/// Words an owner needs: a hand edit's name, the viewer's help.
mod words;
