#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Every shipped fixture validates and meets its expectations.

use jouleclaw_replay::*;
use jouleclaw_testkit::{or_not_run, repo};

/// Every `.jsonl` file of `conformance/replay` as (file name, bytes), in name order (`None`
/// in a crate built alone).
pub(crate) fn corpus() -> Option<Vec<(String, Vec<u8>)>> {
    let dir = repo::path("conformance/replay")?;
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    files.sort();
    let files = files
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    Some(files)
}

#[test]
fn every_shipped_fixture_validates_and_meets_its_expectations() {
    let files = or_not_run!(corpus());
    assert!(files.len() >= 30, "only {} fixture files", files.len());
    let report = replay_corpus(&files);
    let text = report.render_text();
    assert!(report.all_expectations_hold(), "{text}");
    assert_eq!(report.totals.invalid_files, 0, "{text}");
    assert_eq!(report.totals.failed, 0, "{text}");
    assert!(report.totals.safety.is_clean(), "{text}");
    assert_eq!(
        report.totals.passed + report.totals.known_defect,
        report.totals.traces
    );
}

#[test]
fn known_defect_fixtures_are_reported_separately_and_never_pass() {
    let report = replay_corpus(&or_not_run!(corpus()));
    assert!(report.totals.known_defect >= 1);
    for f in &report.files {
        for r in f.result.as_ref().unwrap() {
            if r.known_defect.is_some() {
                assert!(!r.passed(), "{} counted as passing", r.id);
            }
        }
    }
    let text = report.render_text();
    assert!(text.contains("known defects (never counted as passing):"));
    let json = report.to_json();
    assert!(
        json["totals"]["known_defect"].as_u64().unwrap() >= 1,
        "{json}"
    );
}

#[test]
fn the_negative_cases_the_rules_imply_are_all_present() {
    let files = or_not_run!(corpus());
    let all: Vec<Fixture> = files
        .iter()
        .flat_map(|(_, b)| parse_fixtures(b).unwrap())
        .collect();
    let kinds: Vec<&str> = all
        .iter()
        .flat_map(|f| f.events.iter().map(|e| e.kind.name()))
        .collect();
    for kind in [
        "hold_start",
        "hypothesis",
        "pause",
        "hold_release",
        "handsfree_stop",
        "final_decode",
        "target",
        "stage_commit",
        "stage_discard",
        "late_partial",
        "failure",
    ] {
        assert!(kinds.contains(&kind), "no fixture uses {kind}");
    }
    let mut codes: Vec<&'static str> = Vec::new();
    for f in &all {
        let r = replay_fixture(f);
        codes.extend(r.rejections.iter().map(|(_, c)| *c));
    }
    for code in [
        "duplicate_start",
        "repeated_release",
        "wrong_stop_control",
        "hypothesis_outside_burst",
        "final_before_release",
        "duplicate_final",
        "final_after_seal",
        "stale_final",
        "late_partial_ignored",
        "not_staged",
        "nothing_staged",
        "target_ineligible",
        "no_open_burst",
    ] {
        assert!(codes.contains(&code), "no fixture exercises {code}");
    }
}

#[test]
fn a_tampered_expectation_makes_the_corpus_fail() {
    let mut files = or_not_run!(corpus());
    let (_, bytes) = files
        .iter_mut()
        .find(|(n, _)| n.starts_with("01_"))
        .unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    *bytes = text
        .replace(
            r#""target_writes":["alpha bravo charlie"]"#,
            r#""target_writes":["alpha bravo"]"#,
        )
        .into_bytes();
    let report = replay_corpus(&files);
    assert!(!report.all_expectations_hold());
    assert_eq!(report.totals.failed, 1);
}

#[test]
fn the_corpus_holds_every_candidate_class_in_both_modes_and_every_reported_script_class() {
    let mut seen: Vec<(bool, CandidateClass, bool)> = Vec::new();
    let mut scripts: Vec<ScriptClass> = Vec::new();
    for (_, bytes) in or_not_run!(corpus()) {
        for f in parse_fixtures(&bytes).unwrap() {
            let r = replay_fixture(&f);
            scripts.push(r.script);
            for e in &f.events {
                if let EventKind::FinalDecode { class, .. } = &e.kind {
                    let withheld = r
                        .withheld
                        .iter()
                        .any(|(_, c)| *c == "command_candidate" || *c == "unknown_candidate");
                    seen.push((f.mode.staged, *class, withheld));
                }
            }
        }
    }
    for staged in [false, true] {
        for class in [
            CandidateClass::Dictation,
            CandidateClass::Command,
            CandidateClass::Unknown,
        ] {
            assert!(
                seen.iter().any(|(s, c, _)| *s == staged && *c == class),
                "no {class:?} final with staged={staged}"
            );
        }
    }
    for script in [
        ScriptClass::Latin,
        ScriptClass::Cjk,
        ScriptClass::Rtl,
        ScriptClass::MixedDirection,
    ] {
        assert!(scripts.contains(&script), "no {script:?} trace");
    }
    let report = replay_corpus(&or_not_run!(corpus()));
    assert_eq!(report.totals.withheld_command, 2);
    assert_eq!(report.totals.withheld_unknown, 2);
    assert_eq!(report.totals.safety.commands_written_as_text, 0);
}
