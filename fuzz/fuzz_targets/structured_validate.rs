//! Arbitrary documents through the structured-output validator of the JSON Schema profile
//! (spec/STRUCTURED-OUTPUT.md). The properties are
//! `jouleclaw_testkit::fuzz::check_structured_validate`
//! (`crates/jouleclaw-testkit/src/fuzz/structured_validate.rs`), which the corpus replay test in
//! `crates/jouleclaw-structured/tests/it/fuzz_corpus.rs` runs on every committed input.
#![no_main]

use libfuzzer_sys::fuzz_target;

use jouleclaw_testkit::fuzz::check_structured_validate;

fuzz_target!(|data: &[u8]| {
    check_structured_validate(data);
});
