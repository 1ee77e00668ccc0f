//! The jcr1 crate's integration tests in one binary: the conformance vectors (the seed's, the
//! extended and negative receipts, the JSON Schema), COSE_Sign1 signing and verification (the
//! signed vectors), the decoder, the committed fuzz corpus, key files, minting, CBOR sequences,
//! small-order keys and `verify_known`. The vector files these tests generate are read and
//! rewritten through `jouleclaw_testkit::repo`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../common/mod.rs"]
mod common;
mod conformance;
// Kept at tests/cose.rs, the path the vector file it generates names.
#[path = "../cose.rs"]
mod cose;
mod decoder;
mod fuzz_corpus;
mod keyfile;
mod mint;
mod sequence;
mod torsion;
mod verify_known;
