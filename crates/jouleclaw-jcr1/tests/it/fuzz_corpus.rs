//! Replays every committed fuzz input (`fuzz/corpus/verify_sequence/`) through the fuzz
//! target's own property checks, so that `cargo test` runs them without a fuzzer.

use jouleclaw_testkit::corpus::replay_committed_corpus;
use jouleclaw_testkit::fuzz::check_verify_sequence;

#[test]
fn every_committed_verify_sequence_input_holds_the_fuzz_properties() {
    replay_committed_corpus("verify_sequence", 8, check_verify_sequence);
}
