#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Rule 5's classification gate: a `command` or `unknown` candidate is never written as text,
//! in either mode; the audit counts a command written as text.

use jouleclaw_replay::*;
use jouleclaw_testkit::or_not_run;

use crate::events::{ev, ordinary, run, staged, writes};

/// target f1, start, one hypothesis, release, a final of `class`, and (staged) a commit.
fn trace(mode: Mode, text: &str, class: CandidateClass) -> Vec<Event> {
    let mut v = vec![
        ev(
            0,
            EventKind::Target(TargetSnapshot {
                focus_id: "f1".into(),
                caret_version: 1,
                editable: true,
            }),
        ),
        ev(
            10,
            EventKind::HoldStart {
                duration_ms: None,
                energy_band: None,
            },
        ),
        ev(
            300,
            EventKind::Hypothesis {
                text: "alpha".into(),
                decode_id: None,
            },
        ),
        ev(500, EventKind::HoldRelease),
        ev(
            700,
            EventKind::FinalDecode {
                text: text.into(),
                decode_id: None,
                class,
            },
        ),
    ];
    if mode.staged {
        v.push(ev(900, EventKind::StageCommit));
    }
    v
}

/// Runs [`trace`] in `mode`.
fn run_trace(mode: Mode, text: &str, class: CandidateClass) -> (ReplayState, Vec<Step>) {
    run(mode, &trace(mode, text, class))
}

#[test]
fn ordinary_mode_writes_a_dictation_final_and_withholds_a_command_or_unknown_one() {
    let (s, steps) = run_trace(ordinary(), "alpha bravo", CandidateClass::Dictation);
    assert_eq!(writes(&s), ["alpha bravo"]);
    assert_eq!(steps[4].outcome, StepOutcome::Accepted(Action::Written));
    for (class, reason) in [
        (CandidateClass::Command, WithheldReason::CommandCandidate),
        (CandidateClass::Unknown, WithheldReason::UnknownCandidate),
    ] {
        let (s, steps) = run_trace(ordinary(), "alpha bravo", class);
        assert!(s.external_writes().is_empty(), "{class:?} was written");
        assert_eq!(
            steps[4].outcome,
            StepOutcome::Accepted(Action::Withheld(reason))
        );
        // Counted as the burst's one finalization, and reported as withheld.
        assert_eq!(s.finalizations().len(), 1);
        assert_eq!(s.withheld().len(), 1);
        assert_eq!(s.withheld()[0].reason, reason);
        assert_eq!(s.phase(), Phase::Sealed);
    }
}

#[test]
fn staged_mode_stages_a_dictation_final_and_never_stages_a_command_or_unknown_one() {
    let (s, _) = run_trace(staged(), "alpha bravo", CandidateClass::Dictation);
    assert_eq!(writes(&s), ["alpha bravo"]);
    for class in [CandidateClass::Command, CandidateClass::Unknown] {
        let (s, steps) = run_trace(staged(), "alpha bravo", class);
        assert!(s.external_writes().is_empty());
        assert!(s.review_chunks().is_empty());
        assert_eq!(s.finalizations().len(), 1);
        // Nothing waits for review, so the explicit commit finds nothing.
        assert_eq!(
            steps[5].outcome,
            StepOutcome::Rejected(Rejection::NothingStaged)
        );
    }
}

#[test]
fn classification_is_evaluated_before_the_empty_result_gate() {
    let (s, _) = run_trace(ordinary(), "  ", CandidateClass::Command);
    assert_eq!(s.withheld()[0].reason, WithheldReason::CommandCandidate);
    let (s, _) = run_trace(ordinary(), "  ", CandidateClass::Dictation);
    assert_eq!(s.withheld()[0].reason, WithheldReason::EmptyFinal);
}

#[test]
fn the_class_field_is_optional_defaults_to_dictation_and_is_validated() {
    let base = r#"{"id":"c","description":"d","mode":{"activation":"hold","staged":false,"streaming":true},"events":[{"t_ms":0,"kind":"hold_start"},{"t_ms":1,"kind":"hold_release"},{"t_ms":2,"kind":"final_decode","text":"a"CLASS}],"expect":{"target_writes":[],"staged_chunks":[],"finalizations":1,"no_pre_release_writes":true,"no_forbidden_deletions":true}}"#;
    let class_of = |f: &Fixture| match &f.events[2].kind {
        EventKind::FinalDecode { class, .. } => *class,
        other => panic!("{other:?}"),
    };
    let absent = parse_fixtures(base.replace("CLASS", "").as_bytes()).unwrap();
    assert_eq!(class_of(&absent[0]), CandidateClass::Dictation);
    for (name, class) in [
        ("dictation", CandidateClass::Dictation),
        ("command", CandidateClass::Command),
        ("unknown", CandidateClass::Unknown),
    ] {
        let line = base.replace("CLASS", &format!(r#","class":"{name}""#));
        assert_eq!(
            class_of(&parse_fixtures(line.as_bytes()).unwrap()[0]),
            class
        );
    }
    let e = parse_fixtures(base.replace("CLASS", r#","class":"query""#).as_bytes()).unwrap_err();
    assert_eq!(e.code(), "unknown_final_class");
    assert_eq!(e.field(), Some("events[2].class"));
    assert_eq!(e.line(), Some(1));
    let e = parse_fixtures(base.replace("CLASS", r#","class":1"#).as_bytes()).unwrap_err();
    assert_eq!(e.code(), "wrong_type");
    // Only a final carries a class.
    let on_hyp = base.replace(
        r#"{"t_ms":1,"kind":"hold_release"}"#,
        r#"{"t_ms":1,"kind":"hypothesis","text":"a","class":"command"},{"t_ms":1,"kind":"hold_release"}"#,
    );
    let e = parse_fixtures(on_hyp.replace("CLASS", "").as_bytes()).unwrap_err();
    assert_eq!(e.code(), "unknown_field");
    assert_eq!(e.field(), Some("events[1].class"));
}

#[test]
fn markers_carry_a_non_default_class_and_omit_the_default() {
    let fin = |class| Event {
        t_ms: 7,
        kind: EventKind::FinalDecode {
            text: "a".into(),
            decode_id: None,
            class,
        },
    };
    assert_eq!(
        event_json(&fin(CandidateClass::Dictation)),
        r#"{"kind":"final_decode","t_ms":7,"text":"a"}"#
    );
    assert_eq!(
        event_json(&fin(CandidateClass::Command)),
        r#"{"class":"command","kind":"final_decode","t_ms":7,"text":"a"}"#
    );
    for class in [
        CandidateClass::Dictation,
        CandidateClass::Command,
        CandidateClass::Unknown,
    ] {
        let m = encode_event(&fin(class));
        assert_eq!(
            decode_marker(&m).unwrap().unwrap(),
            ReplayRecord::Event(fin(class))
        );
    }
}

fn audit_of(mode: Mode, events: &[Event], forged: Vec<ExternalWrite>) -> SafetyCounts {
    let (s, steps) = run(mode, events);
    audit(&AuditInput {
        mode,
        events,
        steps: &steps,
        writes: &forged,
        finalizations: s.finalizations(),
        indeterminate: s.indeterminate(),
        review_chunks: s.review_chunks(),
    })
}

fn write_at(event_index: usize, text: &str) -> ExternalWrite {
    ExternalWrite {
        event_index,
        t_ms: 0,
        burst_id: 1,
        op: WriteOp::Insert,
        text: text.into(),
        target: TargetSnapshot {
            focus_id: "f1".into(),
            caret_version: 1,
            editable: true,
        },
    }
}

#[test]
fn the_audit_counts_a_command_written_as_text_and_not_a_dictation_final() {
    // Ordinary: the final itself written.
    for class in [CandidateClass::Command, CandidateClass::Unknown] {
        let c = audit_of(
            ordinary(),
            &trace(ordinary(), "alpha bravo", class),
            vec![write_at(4, "alpha bravo")],
        );
        assert_eq!(c.commands_written_as_text, 1, "{class:?}");
        assert_eq!(c.forbidden_writes, 1);
        assert_eq!(
            SafetyCounts {
                commands_written_as_text: 0,
                forbidden_writes: 0,
                ..c
            },
            SafetyCounts::default(),
            "no other rule is broken"
        );
    }
    let c = audit_of(
        ordinary(),
        &trace(ordinary(), "alpha bravo", CandidateClass::Dictation),
        vec![write_at(4, "alpha bravo")],
    );
    assert!(c.is_clean(), "{c:?}");
    // Staged: the command committed as text at the explicit action.
    let c = audit_of(
        staged(),
        &trace(staged(), "alpha bravo", CandidateClass::Command),
        vec![write_at(5, "alpha bravo")],
    );
    assert_eq!(c.commands_written_as_text, 1);
    assert_eq!(c.forbidden_writes, 1);
    let c = audit_of(
        staged(),
        &trace(staged(), "alpha bravo", CandidateClass::Dictation),
        vec![write_at(5, "alpha bravo")],
    );
    assert!(c.is_clean(), "{c:?}");
}

fn corpus(prefixes: &[&str]) -> Option<Vec<(String, Vec<u8>)>> {
    let out: Vec<(String, Vec<u8>)> = crate::corpus::corpus()?
        .into_iter()
        .filter(|(name, _)| prefixes.iter().any(|x| name.starts_with(x)))
        .collect();
    assert_eq!(out.len(), prefixes.len());
    Some(out)
}

#[test]
fn the_class_fixtures_hold_and_their_withheld_candidates_are_counted_and_reported() {
    let report = replay_corpus(&or_not_run!(corpus(&[
        "41_", "42_", "43_", "44_", "45_", "46_"
    ])));
    assert!(report.all_expectations_hold(), "{}", report.render_text());
    assert_eq!(report.totals.passed, 6);
    // 42 and 45 withhold a command; 43 and 46 an unknown candidate.
    assert_eq!(report.totals.withheld_command, 2);
    assert_eq!(report.totals.withheld_unknown, 2);
    assert_eq!(report.totals.safety.commands_written_as_text, 0);
    let json = report.to_json();
    assert_eq!(json["totals"]["withheld_command"], 2);
    assert_eq!(json["safety"]["commands_written_as_text"], 0);
    let f46 = &json["files"][5]["fixtures"][0];
    assert_eq!(f46["id"], "staged_final_class_unknown");
    assert_eq!(
        f46["withheld"],
        serde_json::json!([{"burst_id": 2, "reason": "unknown_candidate"}])
    );
    assert!(
        report
            .render_text()
            .contains("classification: withheld_command=2 withheld_unknown=2")
    );
}
