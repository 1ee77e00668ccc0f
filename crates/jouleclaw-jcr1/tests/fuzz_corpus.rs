//! Replays every committed fuzz input (`fuzz/corpus/verify_sequence/`) through the fuzz
//! target's own property checks, so that `cargo test` runs them without a fuzzer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fuzz/common/verify_sequence.rs"
));

#[test]
fn every_committed_verify_sequence_input_holds_the_fuzz_properties() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/corpus/verify_sequence"
    );
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 8, "the seed corpus is committed");
    for path in &files {
        let data = std::fs::read(path).unwrap();
        let run = std::panic::catch_unwind(|| check_verify_sequence(&data));
        assert!(run.is_ok(), "{}", path.display());
    }
}
