//! Replays every committed fuzz input (`fuzz/corpus/parse_trace_line/`) through the fuzz
//! target's own property checks, so that `cargo test` runs them without a fuzzer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fuzz/common/parse_trace_line.rs"
));

#[test]
fn every_committed_trace_line_input_holds_the_fuzz_properties() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/corpus/parse_trace_line"
    );
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the seed corpus is committed");
    for path in &files {
        let data = std::fs::read(path).unwrap();
        let run = std::panic::catch_unwind(|| check_parse_trace_line(&data));
        assert!(run.is_ok(), "{}", path.display());
    }
    // The properties are not vacuous: a line the parser accepts reaches them.
    check_parse_trace_line(br#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":4}"#);
}
