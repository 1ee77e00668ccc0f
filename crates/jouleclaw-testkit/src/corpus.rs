//! The committed fuzz seed corpora and their replay through a target's property check.

use std::path::PathBuf;

/// The folder of a target's committed seed corpus, `fuzz/corpus/<target>/` of the repository
/// (found by [`crate::repo::path`]: `None` in a crate built alone).
#[track_caller]
pub fn committed_corpus(target: &str) -> Option<PathBuf> {
    crate::repo::path(&format!("fuzz/corpus/{target}"))
}

/// Runs `check` on every file of `fuzz/corpus/<target>/` (at least `min` of them, so an
/// emptied corpus is not a pass), each under `catch_unwind` so that the failing file is named.
/// A crate built alone, without the repository's `fuzz/corpus/`, replays nothing.
#[track_caller]
pub fn replay_committed_corpus(target: &str, min: usize, check: fn(&[u8])) {
    let Some(dir) = committed_corpus(target) else {
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    files.sort();
    assert!(
        files.len() >= min,
        "the seed corpus {} is committed ({} files, at least {min} expected)",
        dir.display(),
        files.len()
    );
    for path in &files {
        let data =
            std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let run = std::panic::catch_unwind(|| check(&data));
        assert!(run.is_ok(), "{}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refuse_nonempty(data: &[u8]) {
        assert!(data.is_empty());
    }

    #[test]
    fn every_committed_corpus_is_found() {
        for t in ["verify_sequence", "parse_trace_line", "structured_validate"] {
            assert!(committed_corpus(t).is_some_and(|d| d.is_dir()), "{t}");
        }
    }

    #[test]
    fn a_failing_input_fails_the_replay_and_too_few_inputs_do_too() {
        let failing = std::panic::catch_unwind(|| {
            replay_committed_corpus("parse_trace_line", 1, refuse_nonempty)
        });
        assert!(failing.is_err());
        let too_few = std::panic::catch_unwind(|| {
            replay_committed_corpus("parse_trace_line", usize::MAX, |_| {})
        });
        assert!(too_few.is_err());
        replay_committed_corpus("parse_trace_line", 1, |_| {});
    }
}
