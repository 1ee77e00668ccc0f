//! Replays every committed fuzz input (`fuzz/corpus/structured_validate/`) through the fuzz
//! target's own property checks, so that `cargo test` runs them without a fuzzer.

use jouleclaw_testkit::corpus::replay_committed_corpus;
use jouleclaw_testkit::fuzz::{FUZZ_SCHEMAS, check_structured_validate};

#[test]
fn every_committed_structured_input_holds_the_fuzz_properties() {
    replay_committed_corpus("structured_validate", 10, check_structured_validate);
    // Every fuzz schema compiles (the target would panic on the first input otherwise).
    for i in 0..FUZZ_SCHEMAS.len() {
        let pick = u8::try_from(i).expect("a handful of schemas");
        check_structured_validate(&[pick, 3, b'{', b'}']);
    }
}
