//! Replays every committed fuzz input (`fuzz/corpus/structured_validate/`) through the fuzz
//! target's own property checks, so that `cargo test` runs them without a fuzzer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fuzz/common/structured_validate.rs"
));
include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fuzz/common/replay.rs"
));

#[test]
fn every_committed_structured_input_holds_the_fuzz_properties() {
    replay_committed_corpus(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fuzz/corpus/structured_validate"
        ),
        10,
        check_structured_validate,
    );
    // Every fuzz schema compiles (the target would panic on the first input otherwise).
    for (i, _) in FUZZ_SCHEMAS.iter().enumerate() {
        check_structured_validate(&[i as u8, 3, b'{', b'}']);
    }
}
