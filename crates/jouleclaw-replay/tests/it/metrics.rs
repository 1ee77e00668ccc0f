#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Section 5 metrics the fixtures carry, each against a hand-computed expectation:
//! suffix-missing rate of a one-slot consumer, preview quality per script class, and the
//! fixture-time latencies with their nearest-rank p50/p95.

use jouleclaw_replay::*;
use jouleclaw_testkit::or_not_run;

use crate::events::{ev, ordinary, run};

fn file(prefix: &str) -> Option<(String, Vec<u8>)> {
    let file = crate::corpus::corpus()?
        .into_iter()
        .find(|(name, _)| name.starts_with(prefix))
        .unwrap();
    Some(file)
}

fn report(prefix: &str) -> Option<FixtureReport> {
    let (_, bytes) = file(prefix)?;
    Some(replay_fixture(&parse_fixtures(&bytes).unwrap()[0]))
}

/// `(missing words, final words, missing graphemes, final graphemes)`.
fn suffix(p: &PreviewMetrics) -> (u64, u64, u64, u64) {
    (
        p.suffix_missing_words,
        p.final_words,
        p.suffix_missing_graphemes,
        p.final_graphemes,
    )
}

#[test]
fn suffix_missing_rate_of_a_one_slot_consumer_matches_the_hand_computation() {
    // 01: slot "alpha bravo", final "alpha bravo charlie": 1 of 3 words; " charlie" is 8 of
    // 19 graphemes.
    let p = or_not_run!(report("01_")).preview;
    assert_eq!(suffix(&p), (1, 3, 8, 19));
    assert_eq!(p.suffix_missing_rate_word(), "0.333");
    assert_eq!(p.suffix_missing_rate_grapheme(), "0.421");
    // 07 (CJK): slot "甲乙丁", final "甲乙丁戊": the one word differs (1 of 1); 1 of 4
    // graphemes.
    let p = or_not_run!(report("07_")).preview;
    assert_eq!(suffix(&p), (1, 1, 1, 4));
    assert_eq!(p.suffix_missing_rate_word(), "1.000");
    assert_eq!(p.suffix_missing_rate_grapheme(), "0.250");
    // 38: slot "victor yankee xray", final "victor yankee zulu": a wrong word is missing too
    // (1 of 3 words; "zulu" is 4 of 18 graphemes).
    let p = or_not_run!(report("38_")).preview;
    assert_eq!(suffix(&p), (1, 3, 4, 18));
    // 47 (Hebrew): slot "אלף בית גימ", final "אלף בית גימל": 1 of 3 words, 1 of 12 graphemes.
    let p = or_not_run!(report("47_")).preview;
    assert_eq!(suffix(&p), (1, 3, 1, 12));
    assert_eq!(p.suffix_missing_rate_grapheme(), "0.083");
    // 48 (Arabic): slot "ألف باءَ" (7 graphemes: hamza + fatha is one cluster), final
    // "ألف باءَ تاء" (11): 1 of 3 words; " تاء" is 4 of 11 graphemes.
    let p = or_not_run!(report("48_")).preview;
    assert_eq!(suffix(&p), (1, 3, 4, 11));
    assert_eq!(p.suffix_missing_rate_grapheme(), "0.363");
    // 49 (mixed direction, staged): slot "alpha אלף", final "alpha אלף bravo": 1 of 3 words,
    // 6 of 15 graphemes.
    let p = or_not_run!(report("49_")).preview;
    assert_eq!(suffix(&p), (1, 3, 6, 15));
}

#[test]
fn an_empty_slot_misses_the_whole_final_and_a_burst_without_final_is_not_measured() {
    let start = ev(
        10,
        EventKind::HoldStart {
            duration_ms: None,
            energy_band: None,
        },
    );
    let fin = ev(
        300,
        EventKind::FinalDecode {
            text: "alpha bravo".into(),
            decode_id: None,
            class: CandidateClass::Dictation,
        },
    );
    let events = vec![start.clone(), ev(200, EventKind::HoldRelease), fin];
    let (s, steps) = run(ordinary(), &events);
    let p = preview_metrics(&events, &steps, s.finalizations());
    assert_eq!(suffix(&p), (2, 2, 11, 11));
    assert_eq!(p.suffix_missing_rate_word(), "1.000");
    let events = vec![
        start,
        ev(
            100,
            EventKind::Hypothesis {
                text: "alpha".into(),
                decode_id: None,
            },
        ),
        ev(
            200,
            EventKind::Failure {
                category: FailureCategory::Decode,
            },
        ),
    ];
    let (s, steps) = run(ordinary(), &events);
    let p = preview_metrics(&events, &steps, s.finalizations());
    assert_eq!(suffix(&p), (0, 0, 0, 0));
    assert_eq!(p.suffix_missing_rate_word(), "n/a");
    assert_eq!(p.suffix_missing_rate_grapheme(), "n/a");
}

#[test]
fn right_to_left_and_combining_mark_agreement_is_compared_in_logical_order() {
    use AgreementUnit::*;
    assert_eq!(stable_prefix("אלף בית", "אלף בית גימ", Word), "אלף בית");
    assert_eq!(stable_prefix("אלף בית גי", "אלף בית גימ", Word), "אלף בית");
    // Hamza then hamza + fatha: the cluster has not agreed yet.
    assert_eq!(stable_prefix("ألف باء", "ألف باءَ", Grapheme), "ألف با");
    assert_eq!(stable_prefix("ألف باء", "ألف باءَ", Word), "ألف");
    let p = or_not_run!(report("48_")).preview;
    assert_eq!(p.first_stable_prefix_ms_word, [390]);
    assert_eq!(p.first_stable_prefix_ms_grapheme, [390]);
}

#[test]
fn script_classes_follow_the_letters_of_the_trace() {
    assert_eq!(script_class(["alpha"]), ScriptClass::Latin);
    assert_eq!(script_class(["e\u{301}t\u{e9}"]), ScriptClass::Latin);
    assert_eq!(script_class(["甲乙"]), ScriptClass::Cjk);
    assert_eq!(script_class(["甲 alpha"]), ScriptClass::Cjk);
    assert_eq!(script_class(["한글", "かな"]), ScriptClass::Cjk);
    assert_eq!(script_class(["אלף"]), ScriptClass::Rtl);
    assert_eq!(script_class(["ألف باءَ"]), ScriptClass::Rtl);
    assert_eq!(script_class(["alpha", "אלף"]), ScriptClass::MixedDirection);
    assert_eq!(script_class(["甲 ألف"]), ScriptClass::MixedDirection);
    assert_eq!(script_class(["привет"]), ScriptClass::Other);
    assert_eq!(script_class(["alpha привет"]), ScriptClass::Other);
    assert_eq!(script_class(["", "12 ?"]), ScriptClass::Other);
    for (prefix, class) in [
        ("01_", ScriptClass::Latin),
        ("07_", ScriptClass::Cjk),
        ("47_", ScriptClass::Rtl),
        ("48_", ScriptClass::Rtl),
        ("49_", ScriptClass::MixedDirection),
    ] {
        assert_eq!(or_not_run!(report(prefix)).script, class, "{prefix}");
    }
}

#[test]
fn cjk_and_rtl_traces_are_reported_apart_from_latin() {
    let files: Option<Vec<_>> = ["01_", "07_", "38_", "47_", "48_", "49_"]
        .iter()
        .map(|p| file(p))
        .collect();
    let files = or_not_run!(files);
    let report = replay_corpus(&files);
    assert!(report.all_expectations_hold(), "{}", report.render_text());
    let by = &report.totals.by_script;
    assert_eq!(
        by.keys().copied().collect::<Vec<_>>(),
        [
            ScriptClass::Latin,
            ScriptClass::Cjk,
            ScriptClass::Rtl,
            ScriptClass::MixedDirection
        ]
    );
    let latin = &by[&ScriptClass::Latin];
    assert_eq!(latin.traces, 2);
    // 01 (1/3, 8/19) + 38 (1/3, 4/18).
    assert_eq!(suffix(&latin.preview), (2, 6, 12, 37));
    // 38's churn: word prefixes "", "victor whiskey", "victor", "victor yankee xray":
    // " whiskey" retracted = 8; grapheme prefixes "victor whiskey", "victor ",
    // "victor yankee xray": "whiskey" = 7.
    assert_eq!(latin.preview.prefix_churn_chars_word, 8);
    assert_eq!(latin.preview.prefix_churn_chars_grapheme, 7);
    let rtl = &by[&ScriptClass::Rtl];
    assert_eq!(rtl.traces, 2);
    // 47 (1/3, 1/12) + 48 (1/3, 4/11): 5/23 = 0.2173...
    assert_eq!(suffix(&rtl.preview), (2, 6, 5, 23));
    assert_eq!(rtl.preview.suffix_missing_rate_word(), "0.333");
    assert_eq!(rtl.preview.suffix_missing_rate_grapheme(), "0.217");
    let cjk = &by[&ScriptClass::Cjk];
    // 07: word agreement never sees a prefix; grapheme agreement does, 390 ms after start.
    assert!(cjk.preview.first_stable_prefix_ms_word.is_empty());
    assert_eq!(cjk.preview.first_stable_prefix_ms_grapheme, [390]);
    assert_eq!(by[&ScriptClass::MixedDirection].traces, 1);
    let json = report.to_json();
    assert_eq!(json["by_script"]["rtl"]["traces"], 2);
    assert_eq!(
        json["by_script"]["rtl"]["preview"]["suffix_missing_rate_grapheme"],
        "0.217"
    );
    assert_eq!(json["by_script"]["cjk"]["traces"], 1);
    assert!(json["by_script"].get("other").is_none());
    assert_eq!(json["files"][3]["fixtures"][0]["script"], "rtl");
    let text = report.render_text();
    assert!(text.contains("script rtl: traces 2"), "{text}");
    assert!(text.contains("script mixed_direction: traces 1"), "{text}");
}

/// Five bursts; release-to-delivery 100, 300, 200, 700 and one withheld final (not measured);
/// onset-to-first-useful-preview 120 (after a blank preview), 40, 300, none, 10.
const LATENCY_TRACE: &str = r#"{"id":"latency","description":"hand-computed latencies","mode":{"activation":"hold","staged":false,"streaming":true},"events":[{"t_ms":0,"kind":"target","focus_id":"f1","caret_version":1,"editable":true},{"t_ms":0,"kind":"hold_start"},{"t_ms":50,"kind":"hypothesis","text":"  "},{"t_ms":120,"kind":"hypothesis","text":"alpha"},{"t_ms":400,"kind":"hold_release"},{"t_ms":500,"kind":"final_decode","text":"alpha"},{"t_ms":1000,"kind":"hold_start"},{"t_ms":1040,"kind":"hypothesis","text":"bravo"},{"t_ms":1100,"kind":"final_decode","text":"early"},{"t_ms":1200,"kind":"hold_release"},{"t_ms":1500,"kind":"final_decode","text":"bravo"},{"t_ms":2000,"kind":"hold_start"},{"t_ms":2300,"kind":"hypothesis","text":"charlie"},{"t_ms":2400,"kind":"hold_release"},{"t_ms":2500,"kind":"hold_release"},{"t_ms":2600,"kind":"final_decode","text":"charlie"},{"t_ms":3000,"kind":"hold_start"},{"t_ms":3100,"kind":"hold_release"},{"t_ms":3800,"kind":"final_decode","text":"delta"},{"t_ms":4000,"kind":"hold_start"},{"t_ms":4010,"kind":"hypothesis","text":"echo"},{"t_ms":4100,"kind":"hold_release"},{"t_ms":4150,"kind":"target","focus_id":"f1","caret_version":2,"editable":true},{"t_ms":4200,"kind":"final_decode","text":"echo"}],"expect":{"target_writes":["alpha","bravo","charlie","delta"],"staged_chunks":[],"finalizations":5,"no_pre_release_writes":true,"no_forbidden_deletions":true}}"#;

#[test]
fn release_to_delivery_and_onset_to_first_useful_preview_match_the_hand_computation() {
    let fx = parse_fixtures(LATENCY_TRACE.as_bytes()).unwrap().remove(0);
    let (_, steps) = run(ordinary(), &fx.events);
    let l = latency_metrics(&fx.events, &steps);
    assert_eq!(l.release_to_final_delivery_ms, [100, 300, 200, 700]);
    assert_eq!(l.onset_to_first_useful_preview_ms, [120, 40, 300, 10]);
    // Captured audio 400 + 200 + 400 + 100 + 100 ms; decoder outputs 3 + 3 (one final
    // before release, rejected, still a decode) + 2 + 1 + 2.
    assert_eq!((l.decodes, l.captured_ms), (11, 1200));
    assert_eq!(l.decodes_per_minute(), "550.000");
    let report = replay_corpus(&[("latency.jsonl".into(), LATENCY_TRACE.into())]);
    assert!(report.all_expectations_hold(), "{}", report.render_text());
    let json = report.to_json();
    let lat = &json["latency"];
    // Sorted [100, 200, 300, 700]: p50 is rank ceil(2) = 2, p95 rank ceil(3.8) = 4.
    assert_eq!(lat["release_to_final_delivery_ms_p50"], 200);
    assert_eq!(lat["release_to_final_delivery_ms_p95"], 700);
    // Sorted [10, 40, 120, 300].
    assert_eq!(lat["onset_to_first_useful_preview_ms_p50"], 40);
    assert_eq!(lat["onset_to_first_useful_preview_ms_p95"], 300);
    assert_eq!(lat["decodes_per_minute"], "550.000");
    assert!(report.render_text().contains(
        "release_to_final_delivery_ms n=4 p50=200 p95=700 onset_to_first_useful_preview_ms n=4 p50=40 p95=300"
    ));
}

#[test]
fn staged_delivery_is_the_append_to_the_review_buffer_withheld_finals_and_unreleased_bursts_are_not_measured()
 {
    // 46: burst 1 released at 400, staged at 600; burst 2's unknown final is withheld.
    let l = or_not_run!(report("46_")).latency;
    assert_eq!(l.release_to_final_delivery_ms, [200]);
    assert_eq!(l.onset_to_first_useful_preview_ms, [190, 200]);
    // 42: the command final is withheld, so no delivery latency.
    let l = or_not_run!(report("42_")).latency;
    assert!(l.release_to_final_delivery_ms.is_empty());
    assert_eq!(l.onset_to_first_useful_preview_ms, [290]);
    let l = or_not_run!(report("13_")).latency;
    // 13: start 10, release 500 (490 ms); hypothesis and the rejected early final: 2 decodes.
    assert_eq!((l.decodes, l.captured_ms), (2, 490));
    assert_eq!(l.decodes_per_minute(), "244.897");
    // 15: start 10, release 300 (290 ms); the final and the late partial after the seal.
    let l = or_not_run!(report("15_")).latency;
    assert_eq!((l.decodes, l.captured_ms), (2, 290));
    assert_eq!(l.decodes_per_minute(), "413.793");
    // 23: the decode failure seals the burst; its later release is rejected, so the burst was
    // never released and is not measured.
    let l = or_not_run!(report("23_")).latency;
    assert_eq!((l.decodes, l.captured_ms), (0, 0));
    assert_eq!(l.decodes_per_minute(), "n/a");
}

#[test]
fn nearest_rank_percentiles_match_the_definition() {
    let s: Vec<u64> = (1..=20).rev().collect();
    assert_eq!(nearest_rank_percentile(&s, 50), Some(10));
    assert_eq!(nearest_rank_percentile(&s, 95), Some(19));
    assert_eq!(nearest_rank_percentile(&s, 100), Some(20));
    assert_eq!(nearest_rank_percentile(&s, 1), Some(1));
    assert_eq!(nearest_rank_percentile(&[7], 50), Some(7));
    assert_eq!(nearest_rank_percentile(&[7], 95), Some(7));
    assert_eq!(nearest_rank_percentile(&[], 50), None);
    assert_eq!(nearest_rank_percentile(&s, 0), None);
    assert_eq!(nearest_rank_percentile(&s, 101), None);
    let json = replay_corpus(&[or_not_run!(file("13_"))]).to_json();
    // Fixture 13 never delivers: the percentiles are null, not zero.
    assert!(json["latency"]["release_to_final_delivery_ms_p50"].is_null());
}
