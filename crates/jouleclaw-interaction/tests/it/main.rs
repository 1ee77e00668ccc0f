//! The interaction metrics' integration tests in one binary: the rules, their properties and the
//! metrics beside the receipts. (`vectors.rs`, the generator of committed vectors, is its own.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod beside;
#[path = "../common/mod.rs"]
mod common;
mod properties;
mod rules;
// Kept at tests/vectors.rs, the path the vector file it generates names.
#[path = "../vectors.rs"]
mod vectors;
