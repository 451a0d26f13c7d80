//! The filter language lives in the domain ([`crate::query`]): the hub
//! answers `/v1/workers?q=` with the same parser and the same fields.

pub use crate::query::*;
