#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! LocalAgreement-2, word and grapheme based.

use jouleclaw_replay::*;
use jouleclaw_testkit::{or_not_run, repo};

#[test]
fn word_agreement_is_the_common_prefix_of_whole_words() {
    use AgreementUnit::Word;
    assert_eq!(
        stable_prefix("alpha bravo", "alpha bravo charlie", Word),
        "alpha bravo"
    );
    assert_eq!(stable_prefix("alpha bra", "alpha bravo", Word), "alpha");
    assert_eq!(
        stable_prefix("alpha  bravo x", "alpha bravo y", Word),
        "alpha bravo"
    );
    assert_eq!(stable_prefix("", "alpha", Word), "");
    assert_eq!(stable_prefix("bravo", "alpha", Word), "");
    // Space-free text is one word until it agrees entirely.
    assert_eq!(stable_prefix("甲乙丙", "甲乙丁", Word), "");
}

#[test]
fn grapheme_agreement_handles_text_without_spaces_and_combining_marks() {
    use AgreementUnit::Grapheme;
    assert_eq!(stable_prefix("甲乙丙", "甲乙丁", Grapheme), "甲乙");
    // "e" then "e" + combining acute: the cluster has not agreed yet.
    assert_eq!(stable_prefix("cafe", "cafe\u{301}", Grapheme), "caf");
    assert_eq!(stable_prefix("👍🏽a", "👍🏽b", Grapheme), "👍🏽");
}

#[test]
fn churn_and_staleness_helpers() {
    assert_eq!(retracted_chars("alpha bravo", "alpha"), 6);
    assert_eq!(retracted_chars("alpha", "alpha bravo"), 0);
    assert_eq!(incorrect_graphemes("甲乙丙", "甲乙丁戊"), 1);
    assert_eq!(incorrect_graphemes("alpha", "alpha bravo"), 0);
}

#[test]
fn preview_metrics_of_a_churning_burst() {
    let churn = or_not_run!(repo::bytes("conformance/replay/38_preview_churn.jsonl"));
    let f = parse_fixtures(&churn).unwrap();
    let r = replay_fixture(&f[0]);
    // Prefixes: "victor whiskey" -> "victor" (retracts " whiskey", 8 chars) ->
    // "victor yankee xray" (retracts nothing).
    assert_eq!(r.preview.prefix_churn_chars_word, 8);
    assert_eq!(r.preview.first_stable_prefix_ms_word, vec![390]);
    assert_eq!(r.preview.repeated_full_decodes, 1);
    // Shown previews vs final "victor yankee zulu": "victor whiskey" (200..400, 7 wrong),
    // "victor whiskey xray" (400..600, 12 wrong), "victor yankee xray" (600..800 and
    // 800..1100, 4 wrong each).
    assert_eq!(
        r.preview.stale_preview_char_ms,
        200 * 7 + 200 * 12 + 200 * 4 + 300 * 4
    );
    assert!(r.passed());
}
