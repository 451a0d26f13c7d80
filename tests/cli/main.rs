//! The command line's tests, one binary with a module per topic (was seven
//! binaries, each linking the whole crate): the real `macfleet` binary
//! against real hubs, and against a stand-in hub for what no real hub would
//! do. Run one topic with `cargo test --test cli <topic>::`.

#[path = "../common/mod.rs"]
mod common;
#[path = "../common/pty.rs"]
mod pty;

/// Agents' scripted edits, on a file and through a hub.
mod agents;
/// Snapshots, exit codes and the options each command takes.
mod basics;
/// Contexts: the file, the current one, tokens from files.
mod context;
/// `macfleet demo --headless`: its hub, its last hour, a live failover.
mod demo;
/// Every reader against a stand-in hub that misbehaves or sends secrets.
mod hostile_hub;
/// `hub token`, TLS, token names.
mod hub_ops;
/// A write whose answer was lost, behind a proxy that drops it (issue 27).
mod lost_answer;
/// What the scripted commands print, `--watch`, completions, help.
mod output;
/// The staged rollout: `--cohort`, `agents rollout`, their exit codes.
mod rollout;
/// `get workers -o json|jsonl`: streamed, the same bytes, small.
mod workers_json;
