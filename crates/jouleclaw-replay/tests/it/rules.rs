#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! One test per oracle rule (1-8), each failing if the rule is removed, with the accepted
//! neighbour of every refusal.

use jouleclaw_replay::*;
use jouleclaw_testkit::{or_not_run, repo};

use crate::events::*;

#[test]
fn rule1_duplicate_start_is_rejected_without_changing_state() {
    let mut s = ReplayState::new(ordinary());
    s.apply(&target(0, "f1", 1, true));
    s.apply(&start(10));
    s.apply(&hyp(20, "alpha"));
    let before = s.clone();
    let step = s.apply(&start(30));
    assert_eq!(rejected(&step), Some(Rejection::DuplicateStart));
    assert_eq!(step.path, vec![Phase::Recording]);
    // Nothing but the event counter moved.
    assert_eq!(s.burst_id(), before.burst_id());
    assert_eq!(s.last_hypothesis(), Some("alpha"));
    assert_eq!(s.events_seen(), before.events_seen() + 1);
    // Neighbour: from sealed, a start opens a new, unique burst.
    s.apply(&release(40));
    s.apply(&fin(50, "alpha"));
    assert_eq!(s.phase(), Phase::Sealed);
    let step = s.apply(&start(60));
    assert_eq!(step.outcome, StepOutcome::Accepted(Action::BurstOpened));
    assert_eq!(s.burst_id(), 2);
}

#[test]
fn rule2_hypotheses_update_the_private_preview_and_never_write() {
    for mode in [ordinary(), staged()] {
        let (s, _) = run(
            mode,
            &[
                target(0, "f1", 1, true),
                start(10),
                hyp(20, "alpha bravo"),
                hyp(30, "alpha bravo charlie"),
            ],
        );
        assert_eq!(s.last_hypothesis(), Some("alpha bravo charlie"));
        assert_eq!(s.stable_prefix(), "alpha bravo");
        assert!(s.external_writes().is_empty());
        assert!(s.review_chunks().is_empty());
    }
}

#[test]
fn rule2_a_stable_prefix_creates_no_delivery_permission() {
    // Two agreeing hypotheses, then the burst dies: nothing is delivered.
    let (s, _) = run(
        ordinary(),
        &[
            target(0, "f1", 1, true),
            start(10),
            hyp(20, "alpha bravo"),
            hyp(30, "alpha bravo"),
            failure(40, FailureCategory::Decode),
        ],
    );
    assert_eq!(s.stable_prefix(), "alpha bravo");
    assert!(s.external_writes().is_empty());
}

#[test]
fn rule3_a_pause_is_recorded_and_cannot_finalize() {
    let (s, steps) = run(
        ordinary(),
        &[
            target(0, "f1", 1, true),
            start(10),
            ev(
                20,
                EventKind::Pause {
                    duration_ms: 30_000,
                },
            ),
            fin(30_020, "alpha"),
        ],
    );
    assert_eq!(
        steps[2].outcome,
        StepOutcome::Accepted(Action::PauseRecorded)
    );
    assert_eq!(s.paused_ms(), 30_000);
    assert_eq!(s.phase(), Phase::Recording);
    assert_eq!(rejected(&steps[3]), Some(Rejection::FinalBeforeRelease));
    assert!(s.finalizations().is_empty());
}

#[test]
fn rule4_release_grants_permission_once_and_finals_write_once() {
    let (s, steps) = run(
        ordinary(),
        &[
            target(0, "f1", 1, true),
            start(10),
            release(20),
            release(30),
            fin_id(40, "alpha", "d1"),
            fin_id(50, "alpha", "d2"),
            release(60),
        ],
    );
    assert_eq!(steps[2].outcome, StepOutcome::Accepted(Action::Released));
    assert_eq!(rejected(&steps[3]), Some(Rejection::RepeatedRelease));
    assert_eq!(rejected(&steps[5]), Some(Rejection::DuplicateFinal));
    assert_eq!(rejected(&steps[6]), Some(Rejection::RepeatedRelease));
    assert_eq!(writes(&s), ["alpha"]);
    assert_eq!(s.finalizations().len(), 1);
}

#[test]
fn rule4_a_stale_decode_id_cannot_write() {
    let (s, steps) = run(
        ordinary(),
        &[
            target(0, "f1", 1, true),
            start(10),
            release(20),
            fin_id(30, "alpha", "d1"),
            start(40),
            release(50),
            fin_id(60, "alpha", "d1"),
            fin_id(70, "bravo", "d2"),
        ],
    );
    assert_eq!(rejected(&steps[6]), Some(Rejection::StaleFinal));
    assert_eq!(steps[7].outcome, StepOutcome::Accepted(Action::Written));
    assert_eq!(writes(&s), ["alpha", "bravo"]);
}

#[test]
fn rule4_the_wrong_stop_control_grants_nothing() {
    let (s, steps) = run(
        ordinary(),
        &[start(10), ev(20, EventKind::HandsfreeStop), fin(30, "x")],
    );
    assert_eq!(rejected(&steps[1]), Some(Rejection::WrongStopControl));
    assert_eq!(rejected(&steps[2]), Some(Rejection::FinalBeforeRelease));
    assert_eq!(s.phase(), Phase::Recording);
    let handsfree = Mode {
        activation: Activation::Handsfree,
        ..ordinary()
    };
    let (s, steps) = run(
        handsfree,
        &[
            target(0, "f1", 1, true),
            start(10),
            release(20),
            ev(30, EventKind::HandsfreeStop),
            fin(40, "x"),
        ],
    );
    assert_eq!(rejected(&steps[2]), Some(Rejection::WrongStopControl));
    assert_eq!(steps[3].outcome, StepOutcome::Accepted(Action::Released));
    assert_eq!(writes(&s), ["x"]);
}

#[test]
fn rule5_ordinary_final_is_gated_then_written_once() {
    let (s, steps) = run(
        ordinary(),
        &[
            target(0, "f1", 1, true),
            start(10),
            release(20),
            fin(30, "alpha"),
        ],
    );
    assert_eq!(steps[3].outcome, StepOutcome::Accepted(Action::Written));
    assert_eq!(
        steps[3].path,
        vec![Phase::Released, Phase::FinalReady, Phase::Sealed]
    );
    assert_eq!(writes(&s), ["alpha"]);
    let w = &s.external_writes()[0];
    assert_eq!((w.burst_id, w.event_index, w.op), (1, 3, WriteOp::Insert));
}

#[test]
fn rule5_empty_final_and_ineligible_targets_are_withheld() {
    let cases: Vec<(Vec<Event>, WithheldReason)> = vec![
        (vec![target(0, "f1", 1, true)], WithheldReason::EmptyFinal),
        (vec![], WithheldReason::NoTarget),
        (vec![target(0, "f1", 1, false)], WithheldReason::NotEditable),
        (
            vec![
                target(0, "f1", 1, true),
                failure(1, FailureCategory::TargetLost),
            ],
            WithheldReason::TargetLost,
        ),
    ];
    for (prefix, reason) in cases {
        let text = if reason == WithheldReason::EmptyFinal {
            "  "
        } else {
            "alpha"
        };
        let mut events = prefix;
        events.extend([start(10), release(20), fin(30, text)]);
        let (s, steps) = run(ordinary(), &events);
        assert_eq!(
            steps.last().unwrap().outcome,
            StepOutcome::Accepted(Action::Withheld(reason)),
            "{reason:?}"
        );
        assert!(s.external_writes().is_empty());
        assert_eq!(s.finalizations().len(), 1);
        assert_eq!(s.withheld()[0].reason, reason);
    }
}

#[test]
fn rule5_staged_final_appends_one_nonempty_chunk_and_does_not_write() {
    let (s, _) = run(
        staged(),
        &[
            target(0, "f1", 1, true),
            start(10),
            release(20),
            fin(30, "alpha"),
        ],
    );
    assert_eq!(s.phase(), Phase::StagedPending);
    assert!(s.external_writes().is_empty());
    assert_eq!(s.review_chunks().len(), 1);
    let (s, _) = run(
        staged(),
        &[
            target(0, "f1", 1, true),
            start(10),
            release(20),
            fin(30, " "),
        ],
    );
    assert!(s.review_chunks().is_empty());
    assert_eq!(s.phase(), Phase::Sealed);
}

#[test]
fn rule6_stage_commit_writes_reviewed_text_at_the_explicit_action() {
    let base = [
        target(0, "f1", 1, true),
        start(10),
        release(20),
        fin(30, "alpha"),
    ];
    let mut events = base.to_vec();
    events.push(ev(40, EventKind::StageCommit));
    let (s, steps) = run(staged(), &events);
    assert_eq!(steps[4].outcome, StepOutcome::Accepted(Action::Committed));
    assert_eq!(writes(&s), ["alpha"]);
    assert_eq!(s.external_writes()[0].event_index, 4);
    assert!(s.review_chunks().is_empty());
    assert_eq!(s.phase(), Phase::Sealed);
    // Not in ordinary mode; not with nothing staged.
    let (_, steps) = run(ordinary(), &[ev(0, EventKind::StageCommit)]);
    assert_eq!(rejected(&steps[0]), Some(Rejection::NotStaged));
    let (_, steps) = run(staged(), &[ev(0, EventKind::StageCommit)]);
    assert_eq!(rejected(&steps[0]), Some(Rejection::NothingStaged));
}

#[test]
fn rule6_ineligible_target_or_failed_injection_keeps_text_buffered() {
    let mut events = vec![
        target(0, "f1", 1, false),
        start(10),
        release(20),
        fin(30, "alpha"),
    ];
    events.push(ev(40, EventKind::StageCommit));
    let (s, steps) = run(staged(), &events);
    assert_eq!(rejected(&steps[4]), Some(Rejection::TargetIneligible));
    assert_eq!(s.review_chunks().len(), 1);

    let events = vec![
        target(0, "f1", 1, true),
        start(10),
        release(20),
        fin(30, "alpha"),
        failure(35, FailureCategory::InjectBeforeEffect),
        ev(40, EventKind::StageCommit),
    ];
    let (s, steps) = run(staged(), &events);
    assert_eq!(
        steps[5].outcome,
        StepOutcome::Accepted(Action::CommitFailed)
    );
    assert_eq!(s.review_chunks().len(), 1);
    assert!(s.external_writes().is_empty());
    assert_eq!(s.armed_fault(), None);
}

#[test]
fn rule6_an_indeterminate_commit_is_flagged_and_never_replayed() {
    let events = vec![
        target(0, "f1", 1, true),
        start(10),
        release(20),
        fin(30, "alpha"),
        failure(35, FailureCategory::InjectAfterPartialEffect),
        ev(40, EventKind::StageCommit),
        ev(50, EventKind::StageCommit),
    ];
    let (s, steps) = run(staged(), &events);
    assert_eq!(
        steps[5].outcome,
        StepOutcome::Accepted(Action::Indeterminate)
    );
    assert_eq!(rejected(&steps[6]), Some(Rejection::NothingStaged));
    assert_eq!(s.indeterminate().len(), 1);
    assert!(s.external_writes().is_empty());
    assert!(s.review_chunks().is_empty());
}

#[test]
fn rule6_an_indeterminate_ordinary_write_is_flagged_and_the_next_burst_is_independent() {
    let events = vec![
        target(0, "f1", 1, true),
        start(10),
        release(20),
        failure(25, FailureCategory::InjectAfterPartialEffect),
        fin(30, "alpha"),
        start(40),
        release(50),
        fin(60, "bravo"),
    ];
    let (s, steps) = run(ordinary(), &events);
    assert_eq!(
        steps[4].outcome,
        StepOutcome::Accepted(Action::Indeterminate)
    );
    assert_eq!(writes(&s), ["bravo"]);
    assert_eq!(s.indeterminate()[0].text, "alpha");
}

#[test]
fn rule7_nothing_writes_after_seal_and_target_changes_withhold() {
    let (s, steps) = run(
        ordinary(),
        &[
            target(0, "f1", 1, true),
            start(10),
            release(20),
            fin(30, "alpha"),
            hyp(40, "alpha bravo"),
            ev(
                50,
                EventKind::LatePartial {
                    text: "alpha bravo".into(),
                    decode_id: None,
                },
            ),
        ],
    );
    assert_eq!(rejected(&steps[4]), Some(Rejection::HypothesisOutsideBurst));
    assert_eq!(rejected(&steps[5]), Some(Rejection::LatePartialIgnored));
    assert_eq!(writes(&s), ["alpha"]);
    for moved in [target(15, "f2", 1, true), target(15, "f1", 2, true)] {
        let (s, _) = run(
            ordinary(),
            &[
                target(0, "f1", 1, true),
                start(10),
                moved,
                release(20),
                fin(30, "alpha"),
            ],
        );
        assert!(s.external_writes().is_empty());
        assert_eq!(s.withheld()[0].reason, WithheldReason::TargetChanged);
    }
    // Neighbour: an editable-only refresh of the same focus and caret is not a move.
    let (s, _) = run(
        ordinary(),
        &[
            target(0, "f1", 1, true),
            start(10),
            target(15, "f1", 1, true),
            release(20),
            fin(30, "alpha"),
        ],
    );
    assert_eq!(writes(&s), ["alpha"]);
}

#[test]
fn rule7_the_reducer_never_emits_a_deletion() {
    let files = [
        or_not_run!(repo::file("conformance/replay/38_preview_churn.jsonl")),
        or_not_run!(repo::file(
            "conformance/replay/17_focus_change_before_write.jsonl"
        )),
    ];
    for f in files {
        for fx in parse_fixtures(f.as_bytes()).unwrap() {
            let (s, _) = run(fx.mode, &fx.events);
            assert!(s.external_writes().iter().all(|w| w.op == WriteOp::Insert));
        }
    }
}

#[test]
fn rule8_final_before_stop_is_never_counted_and_failures_keep_the_boundary() {
    let (s, steps) = run(
        ordinary(),
        &[target(0, "f1", 1, true), start(10), fin(20, "early")],
    );
    assert_eq!(rejected(&steps[2]), Some(Rejection::FinalBeforeRelease));
    assert!(s.finalizations().is_empty());
    let (s, steps) = run(
        ordinary(),
        &[
            target(0, "f1", 1, true),
            start(10),
            failure(20, FailureCategory::Decode),
            release(30),
            fin(40, "alpha"),
        ],
    );
    assert_eq!(steps[2].outcome, StepOutcome::Accepted(Action::BurstFailed));
    assert_eq!(rejected(&steps[3]), Some(Rejection::RepeatedRelease));
    assert_eq!(rejected(&steps[4]), Some(Rejection::FinalAfterSeal));
    assert!(s.external_writes().is_empty());
    let (_, steps) = run(ordinary(), &[release(0), fin(10, "x")]);
    assert_eq!(rejected(&steps[0]), Some(Rejection::NoOpenBurst));
    assert_eq!(rejected(&steps[1]), Some(Rejection::NoOpenBurst));
}

#[test]
fn out_of_order_events_are_rejected_and_change_nothing() {
    let mut s = ReplayState::new(ordinary());
    s.apply(&target(0, "f1", 1, true));
    s.apply(&start(100));
    let before = s.clone();
    let step = s.apply(&release(50));
    assert_eq!(rejected(&step), Some(Rejection::NonMonotonicTime));
    assert_eq!(s.phase(), before.phase());
    // Neighbour: an equal time is accepted.
    let step = s.apply(&release(100));
    assert_eq!(step.outcome, StepOutcome::Accepted(Action::Released));
}

#[test]
fn audit_counts_every_kind_of_forbidden_write() {
    let events = vec![
        target(0, "f1", 1, true),
        start(10),
        hyp(20, "alpha"),
        release(30),
        fin(40, "alpha"),
        ev(
            50,
            EventKind::LatePartial {
                text: "z".into(),
                decode_id: None,
            },
        ),
    ];
    let (s, steps) = run(ordinary(), &events);
    let t = TargetSnapshot {
        focus_id: "f1".into(),
        caret_version: 1,
        editable: true,
    };
    let w = |i: usize, text: &str, op: WriteOp| ExternalWrite {
        event_index: i,
        t_ms: events[i].t_ms,
        burst_id: 1,
        op,
        text: text.into(),
        target: t.clone(),
    };
    let input = |writes: &[ExternalWrite]| {
        audit(&AuditInput {
            mode: ordinary(),
            events: &events,
            steps: &steps,
            writes,
            finalizations: s.finalizations(),
            indeterminate: s.indeterminate(),
            review_chunks: s.review_chunks(),
        })
    };
    // The reducer's own log is clean.
    assert!(input(s.external_writes()).is_clean());
    // A partial typed before release.
    let c = input(&[w(2, "alpha", WriteOp::Insert)]);
    assert_eq!((c.pre_release_writes, c.forbidden_writes), (1, 1));
    // A duplicate final and a late partial write: the late partial is a late write, not a
    // second final.
    let c = input(&[
        w(4, "alpha", WriteOp::Insert),
        w(4, "alpha", WriteOp::Insert),
        w(5, "z", WriteOp::Insert),
    ]);
    assert_eq!(c.duplicate_finals, 1);
    assert_eq!(c.late_writes_after_seal, 1);
    assert_eq!(c.forbidden_writes, 2);
    // Deleting more than was inserted.
    let c = input(&[
        w(4, "alpha", WriteOp::Insert),
        w(5, "", WriteOp::Delete { chars: 9 }),
    ]);
    assert_eq!(c.forbidden_deletions, 1);
    let c = input(&[
        w(4, "alpha", WriteOp::Insert),
        w(5, "", WriteOp::Delete { chars: 5 }),
    ]);
    assert_eq!(c.forbidden_deletions, 0);
    // Staged leak: a final written directly in staged mode.
    let c = audit(&AuditInput {
        mode: staged(),
        events: &events,
        steps: &steps,
        writes: &[w(4, "alpha", WriteOp::Insert)],
        finalizations: s.finalizations(),
        indeterminate: s.indeterminate(),
        review_chunks: s.review_chunks(),
    });
    assert_eq!(c.staged_leaks, 1);
    // A finalization without a release is a premature endpoint.
    let fake = [Finalization {
        event_index: 2,
        t_ms: 20,
        burst_id: 1,
        text: "alpha".into(),
    }];
    let c = audit(&AuditInput {
        mode: ordinary(),
        events: &events,
        steps: &steps,
        writes: &[],
        finalizations: &fake,
        indeterminate: &[],
        review_chunks: &[],
    });
    assert_eq!(c.premature_hold_endpoints, 1);
    // A replayed indeterminate delivery is unresolved.
    let ind = [IndeterminateDelivery {
        event_index: 4,
        burst_id: 1,
        text: "alpha".into(),
    }];
    let c = audit(&AuditInput {
        mode: ordinary(),
        events: &events,
        steps: &steps,
        writes: &[w(5, "alpha", WriteOp::Insert)],
        finalizations: s.finalizations(),
        indeterminate: &ind,
        review_chunks: &[],
    });
    assert_eq!(c.unresolved_indeterminate, 1);
    // Re-sent by a late partial: a late write, not a second final.
    assert_eq!((c.duplicate_finals, c.late_writes_after_seal), (0, 1));
    // Re-sent as a final delivery after being flagged: a duplicate final as well.
    let ind = [IndeterminateDelivery {
        event_index: 3,
        burst_id: 1,
        text: "alpha".into(),
    }];
    let c = audit(&AuditInput {
        mode: ordinary(),
        events: &events,
        steps: &steps,
        writes: &[w(4, "alpha", WriteOp::Insert)],
        finalizations: s.finalizations(),
        indeterminate: &ind,
        review_chunks: &[],
    });
    assert_eq!((c.unresolved_indeterminate, c.duplicate_finals), (1, 1));
}

#[test]
fn regression_a_partial_typed_before_release_does_not_make_the_final_a_duplicate() {
    // An injector that types the partial and then the final: one pre-release write, and the
    // final is the burst's first final delivery, not a duplicate one.
    let events = vec![
        target(0, "f1", 1, true),
        start(10),
        hyp(20, "alpha"),
        release(30),
        fin(40, "alpha"),
    ];
    let (s, steps) = run(ordinary(), &events);
    let t = TargetSnapshot {
        focus_id: "f1".into(),
        caret_version: 1,
        editable: true,
    };
    let w = |i: usize| ExternalWrite {
        event_index: i,
        t_ms: events[i].t_ms,
        burst_id: 1,
        op: WriteOp::Insert,
        text: "alpha".into(),
        target: t.clone(),
    };
    let c = audit(&AuditInput {
        mode: ordinary(),
        events: &events,
        steps: &steps,
        writes: &[w(2), w(4)],
        finalizations: s.finalizations(),
        indeterminate: s.indeterminate(),
        review_chunks: s.review_chunks(),
    });
    assert_eq!(c.pre_release_writes, 1);
    assert_eq!(c.duplicate_finals, 0);
    assert_eq!(c.forbidden_writes, 1);
}

#[test]
fn regression_a_target_lost_before_the_burst_is_not_a_move_during_it() {
    // The target is lost while idle; the burst starts without one and the target that
    // appears during it is the burst's own. The audit agrees: nothing moved.
    let events = [
        target(0, "f1", 1, true),
        failure(5, FailureCategory::TargetLost),
        start(10),
        target(15, "f1", 1, true),
        release(20),
        fin(30, "alpha"),
    ];
    let (s, steps) = run(ordinary(), &events);
    assert_eq!(writes(&s), ["alpha"]);
    let c = audit(&AuditInput {
        mode: ordinary(),
        events: &events,
        steps: &steps,
        writes: s.external_writes(),
        finalizations: s.finalizations(),
        indeterminate: s.indeterminate(),
        review_chunks: s.review_chunks(),
    });
    assert!(c.is_clean(), "{c:?}");
    // Neighbour: lost during the burst, the target that comes back (same focus and caret) is
    // not trusted, and the final is withheld.
    let (s, _) = run(
        ordinary(),
        &[
            target(0, "f1", 1, true),
            start(10),
            failure(12, FailureCategory::TargetLost),
            target(15, "f1", 1, true),
            release(20),
            fin(30, "alpha"),
        ],
    );
    assert!(s.external_writes().is_empty());
    assert_eq!(s.withheld()[0].reason, WithheldReason::TargetChanged);
}
