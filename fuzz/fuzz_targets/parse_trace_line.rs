//! Tick trace lines through the parser, the canonical writer and a pipeline
//! (spec/TICK-TRACE.md). The properties are `jouleclaw_testkit::fuzz::check_parse_trace_line`
//! (`crates/jouleclaw-testkit/src/fuzz/parse_trace_line.rs`), which the corpus replay test in
//! `crates/jouleclaw-pipeline/tests/pipeline/fuzz_corpus.rs` runs on every committed input.
#![no_main]

use libfuzzer_sys::fuzz_target;

use jouleclaw_testkit::fuzz::check_parse_trace_line;

fuzz_target!(|data: &[u8]| {
    check_parse_trace_line(data);
});
