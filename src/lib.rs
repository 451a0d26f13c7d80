//! macfleet: a terminal UI and reference hub for a fleet of coding-agent
//! workers. See `docs/architecture.md` for where things live and why.

pub mod agents_doc;
pub mod cli;
pub mod client;
pub mod hub;
pub mod plan;
pub mod query;
pub mod rollout;
pub mod scrub;
pub mod sim;
pub mod text;
pub mod textsafe;
pub mod tui;
pub mod verdict;
pub mod wire;
