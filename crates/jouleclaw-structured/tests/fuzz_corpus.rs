//! Replays every committed fuzz input (`fuzz/corpus/structured_validate/`) through the fuzz
//! target's own property checks, so that `cargo test` runs them without a fuzzer.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

include!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../fuzz/common/structured_validate.rs"
));

#[test]
fn every_committed_structured_input_holds_the_fuzz_properties() {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/corpus/structured_validate"
    );
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the seed corpus is committed");
    for path in &files {
        let data = std::fs::read(path).unwrap();
        let run = std::panic::catch_unwind(|| check_structured_validate(&data));
        assert!(run.is_ok(), "{}", path.display());
    }
    // Every fuzz schema compiles (the target would panic on the first input otherwise).
    for (i, _) in FUZZ_SCHEMAS.iter().enumerate() {
        check_structured_validate(&[i as u8, 3, b'{', b'}']);
    }
}
