//! The stop-latency crate's integration tests in one binary: the document and the meter.
//! (`vectors.rs`, the generator of committed vectors, is its own.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod document;
mod meter;
#[path = "../support/mod.rs"]
mod support;
// Kept at tests/vectors.rs, the path the vector file it generates names.
#[path = "../vectors.rs"]
mod vectors;
