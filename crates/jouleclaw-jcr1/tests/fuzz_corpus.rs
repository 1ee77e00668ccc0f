//! Replays every committed fuzz input (`fuzz/corpus/verify_sequence/`) through the fuzz
//! target's own property checks, so that `cargo test` runs them without a fuzzer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fuzz/common/verify_sequence.rs"
));
include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fuzz/common/replay.rs"
));

#[test]
fn every_committed_verify_sequence_input_holds_the_fuzz_properties() {
    replay_committed_corpus(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fuzz/corpus/verify_sequence"
        ),
        8,
        check_verify_sequence,
    );
}
