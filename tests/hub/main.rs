//! The reference hub's tests, one binary with a module per topic (was eight
//! binaries, each linking the whole crate): the hub in-process or as a
//! `macfleet hub` process, over loopback HTTP. Run one topic with
//! `cargo test --test hub <topic>::`.

#[path = "../common/mod.rs"]
mod common;

/// Every row of the contract over real HTTP.
mod api;
/// SIGKILL in the middle of writes: the file is whole, the hub restarts.
mod crash;
/// A damaged database and a config the hub cannot read or replace
/// (issue 29): noticed, set aside, made afresh, refused with 503.
mod damage;
/// The owner's file and the database under the running hub: hand edits,
/// symlinks, interrupted writes, a removed or damaged database.
mod disk;
/// The `state` and `sync` events held to the contract.
mod events;
/// Hostile requests, clocks stepped under a hub, pools.
mod hostile;
/// `Idempotency-Key` on writes: a retry gets the first answer (issue 27).
mod idempotency;
/// The auth matrix and same-shape runs over every route.
mod matrix;
/// On-call (issue 21): headroom, `GET /metrics`, the alert rules,
/// recoveries, `agents drill`.
mod oncall;
/// Issue 28's words against a real hub: in sync by revision and list, a
/// failover from the future, headroom's reason, the empty fleet, a flooding
/// pool's recoveries.
mod oncall_words;
/// Pacing: a large fleet told longer intervals (issue 22).
mod pacing;
/// `POST /v1/plan`: an order judged over the whole fleet (issue 27).
mod plan;
/// Descriptors, connections, memory at the contract's caps.
mod resources;
/// The staged rollout (issue 33): a cohort first, guarded.
mod rollout;
/// A simulated fleet following an owner's reorder, and aug19's outage.
mod sim;
/// `GET /v1/summary`, kept as the fleet changes (issue 22).
mod summary;
/// On-call's words are the truth (issue 28): durable recoveries, future
/// failovers, in sync by list.
mod truth;
/// Turns (issue 33): `turn` and `next_turn_agent` carried and checked; a
/// simulated fleet switching at its turn boundaries.
mod turns;
/// `/v1/workers` windows: sorted, filtered, paged on the hub (issue 22).
mod windows;
/// `/v1/health`'s status word (issue 28).
mod word;
