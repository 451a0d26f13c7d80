//! The staged rollout of a new list (issue 33), the domain alone: which
//! workers form the cohort, the query that starts a rollout, the guard
//! that compares the cohort on the candidate with the rest, the rollout's
//! state and its transitions, and its JSON. Pure: no I/O, no clock, no
//! randomness (the hub draws the salt and passes the time in). Nothing here
//! imports the hub, the client, the CLI or the TUI; they call this.
//! See docs/rollout.md.

mod cohort;
mod guard;
mod query;
mod state;
pub mod wire;

pub use cohort::{Cohort, CohortError, MAX_SHARE_PERCENT, MIN_SHARE_PERCENT, position};
pub use guard::{Figures, Measure, Policy, Reason, Verdict, WorkerFigures, judge};
pub use query::{
    Bake, CohortSpec, DEFAULT_BAKE_S, DEFAULT_SHARE_PERCENT, MAX_BAKE_S, MIN_BAKE_S, Promote,
    QueryError, RolloutQuery,
};
pub use state::{
    Abort, BY_GUARD, BY_HAND_EDIT, NotBaking, Observation, Rollout, Start, State, Step, StepKind,
    Told, Wait,
};
