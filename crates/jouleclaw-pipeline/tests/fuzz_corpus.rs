//! Replays every committed fuzz input (`fuzz/corpus/parse_trace_line/`) through the fuzz
//! target's own property checks, so that `cargo test` runs them without a fuzzer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fuzz/common/parse_trace_line.rs"
));
include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fuzz/common/replay.rs"
));

#[test]
fn every_committed_trace_line_input_holds_the_fuzz_properties() {
    replay_committed_corpus(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fuzz/corpus/parse_trace_line"
        ),
        10,
        check_parse_trace_line,
    );
    // The properties are not vacuous: a line the parser accepts reaches them.
    check_parse_trace_line(br#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":4}"#);
}
