//! LocalAgreement-2: the stable prefix of the last two hypotheses.
//!
//! These functions compute a *preview quality* signal only. Nothing in this module returns or
//! grants a write: the reducer never consults a stable prefix when deciding what to deliver.

use unicode_segmentation::UnicodeSegmentation;

/// The unit a stable prefix is measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgreementUnit {
    /// Whitespace-separated words (languages that put spaces between words).
    Word,
    /// Extended grapheme clusters (CJK text without spaces, combining marks, emoji).
    Grapheme,
}

impl AgreementUnit {
    /// `"word"` or `"grapheme"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Word => "word",
            Self::Grapheme => "grapheme",
        }
    }
}

/// The LocalAgreement-2 stable prefix of two successive full hypotheses: the longest common
/// prefix of `previous` and `current` in whole `unit`s, returned as a slice of `current`.
///
/// Word mode compares the sequences of whitespace-separated words; the returned slice ends at
/// the end of the last agreed word (interior whitespace is taken from `current`). A word that
/// is still growing (`"bra"` then `"bravo"`) is not agreed. Grapheme mode compares extended
/// grapheme clusters, so a base letter whose combining mark has not arrived yet is not agreed.
///
/// ```
/// use jouleclaw_replay::{stable_prefix, AgreementUnit};
/// assert_eq!(stable_prefix("alpha bra", "alpha bravo", AgreementUnit::Word), "alpha");
/// assert_eq!(stable_prefix("甲乙丙", "甲乙丁", AgreementUnit::Grapheme), "甲乙");
/// ```
pub fn stable_prefix<'a>(previous: &str, current: &'a str, unit: AgreementUnit) -> &'a str {
    match unit {
        AgreementUnit::Word => {
            let mut end = 0;
            let mut prev = words(previous);
            for (start, word) in words(current) {
                match prev.next() {
                    Some((_, p)) if p == word => end = start + word.len(),
                    _ => break,
                }
            }
            &current[..end]
        }
        AgreementUnit::Grapheme => {
            let mut end = 0;
            let mut prev = previous.graphemes(true);
            for (start, g) in current.grapheme_indices(true) {
                match prev.next() {
                    Some(p) if p == g => end = start + g.len(),
                    _ => break,
                }
            }
            &current[..end]
        }
    }
}

/// Whitespace-separated words with their byte offsets.
fn words(s: &str) -> impl Iterator<Item = (usize, &str)> {
    s.split_whitespace().map(move |w| {
        // `w` is a subslice of `s`, so the pointer difference is its byte offset.
        (w.as_ptr() as usize - s.as_ptr() as usize, w)
    })
}

/// Number of characters (Unicode scalar values) of `old` that `new` retracts or changes: the
/// characters of `old` beyond its longest common character prefix with `new`.
pub fn retracted_chars(old: &str, new: &str) -> u64 {
    let common = old
        .chars()
        .zip(new.chars())
        .take_while(|(a, b)| a == b)
        .count();
    (old.chars().count() - common) as u64
}

/// Number of grapheme clusters of `shown` that are not a correct prefix of `reference`: the
/// clusters after their longest common grapheme prefix.
pub fn incorrect_graphemes(shown: &str, reference: &str) -> u64 {
    let common = shown
        .graphemes(true)
        .zip(reference.graphemes(true))
        .take_while(|(a, b)| a == b)
        .count();
    (shown.graphemes(true).count() - common) as u64
}
