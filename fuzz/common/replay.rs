// Replays the committed seed corpus of one fuzz target through its property check, shared by
// the crates' `tests/fuzz_corpus.rs` (each includes it beside the target's own properties).

/// Runs `check` on every file of `fuzz/corpus/<target>/` (at least `min` of them, so an
/// emptied corpus is not a pass), each under `catch_unwind` so that the failing file is named.
pub fn replay_committed_corpus(corpus_dir: &str, min: usize, check: fn(&[u8])) {
    let mut files: Vec<_> = std::fs::read_dir(corpus_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(files.len() >= min, "the seed corpus is committed");
    for path in &files {
        let data = std::fs::read(path).unwrap();
        let run = std::panic::catch_unwind(|| check(&data));
        assert!(run.is_ok(), "{}", path.display());
    }
}
