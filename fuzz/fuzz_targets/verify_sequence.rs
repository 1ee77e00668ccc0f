//! CBOR sequences of COSE_Sign1 items through the streaming reader and `verify_sequence`
//! (spec/JCR1-COSE-PROFILE.md, "CBOR sequences"). The properties are
//! `jouleclaw_testkit::fuzz::check_verify_sequence`
//! (`crates/jouleclaw-testkit/src/fuzz/verify_sequence.rs`), which the corpus replay test in
//! `crates/jouleclaw-jcr1/tests/it/fuzz_corpus.rs` runs on every committed input.
#![no_main]

use libfuzzer_sys::fuzz_target;

use jouleclaw_testkit::fuzz::check_verify_sequence;

fuzz_target!(|data: &[u8]| {
    check_verify_sequence(data);
});
