//! Replays every committed fuzz input (`fuzz/corpus/parse_trace_line/`) through the fuzz
//! target's own property checks, so that `cargo test` runs them without a fuzzer.

use jouleclaw_testkit::corpus::replay_committed_corpus;
use jouleclaw_testkit::fuzz::check_parse_trace_line;

#[test]
fn every_committed_trace_line_input_holds_the_fuzz_properties() {
    replay_committed_corpus("parse_trace_line", 10, check_parse_trace_line);
    // The properties are not vacuous: a line the parser accepts reaches them.
    check_parse_trace_line(br#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":4}"#);
}
