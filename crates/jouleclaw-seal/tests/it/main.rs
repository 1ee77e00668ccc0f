//! The seal crate's integration tests in one binary: completeness, COSE, the Merkle tree and the
//! seal document. (`vectors.rs` and `vectors_v2.rs`, the generators of committed vectors, are their own.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod completeness;
mod cose;
mod merkle;
mod seal_doc;
