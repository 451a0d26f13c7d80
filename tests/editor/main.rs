//! The list editor on its own, without a hub: one test binary for its
//! golden cases, its property tests and its fuzz-lite run (each test file
//! under tests/ is a binary that links the whole crate).

mod fuzzlite;
mod golden;
mod props;
