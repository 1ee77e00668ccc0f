//! The jcr1 crate's integration tests in one binary: the decoder, the committed fuzz corpus, key files,
//! minting, CBOR sequences, small-order keys and `verify_known`. (`conformance.rs` and `cose.rs`, the generators of
//! committed vectors, are their own.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../common/mod.rs"]
mod common;
mod decoder;
mod fuzz_corpus;
mod keyfile;
mod mint;
mod sequence;
mod torsion;
mod verify_known;
