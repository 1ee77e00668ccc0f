//! The stream crate's integration tests in one binary: the ledger, the window, the spec's limits
//! and the interaction markers. (`hash_vectors.rs`, the generator of committed vectors, is its own.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod interaction_markers;
mod ledger;
mod spec_limits;
mod window;
// Kept at tests/hash_vectors.rs, the path the vector file it generates names.
#[path = "../hash_vectors.rs"]
mod hash_vectors;
