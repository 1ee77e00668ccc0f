//! CBOR sequences of COSE_Sign1 items through the streaming reader and `verify_sequence`
//! (spec/JCR1-COSE-PROFILE.md, "CBOR sequences"). The properties live in
//! `fuzz/common/verify_sequence.rs`, which the corpus replay test in
//! `crates/jouleclaw-jcr1/tests/fuzz_corpus.rs` runs on every committed input.
#![no_main]

use libfuzzer_sys::fuzz_target;

include!("../common/verify_sequence.rs");

fuzz_target!(|data: &[u8]| {
    check_verify_sequence(data);
});
