#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The commit-safety stream oracle over replay markers on the control channel.

use std::sync::Arc;

use crate::events::ordinary;
use bytes::Bytes;
use jouleclaw_replay::*;
use jouleclaw_stream::{
    ChannelDirection, StreamSpec, StreamWindow, Tick, TickKind, TickMarker, duplex,
};
use jouleclaw_stream_oracle::{StreamOracle, WindowContext, WindowVerdict};
use jouleclaw_testkit::{or_not_run, repo};

/// The events of the repository's first replay fixture (`None` in a crate built alone).
fn events() -> Option<Vec<Event>> {
    let line = repo::file("conformance/replay/01_single_hold_burst.jsonl")?;
    Some(parse_fixtures(line.as_bytes()).unwrap().remove(0).events)
}

/// Window `id` holding `markers` on the control channel (plus one mic tick).
fn window(id: u64, markers: Vec<TickMarker>) -> StreamWindow {
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let mut w = StreamWindow::open(spec, id).unwrap();
    let base = id * 200_000_000;
    w.push(Tick::new(
        id,
        duplex::MIC,
        TickKind::Audio,
        Bytes::from(vec![0u8; 640]),
        base,
    ))
    .unwrap();
    for (i, m) in markers.into_iter().enumerate() {
        w.push(Tick::marker(id, duplex::CONTROL, m, base + 1 + i as u64))
            .unwrap();
    }
    w
}

fn judge(o: &mut CommitSafetyOracle, w: &StreamWindow) -> WindowVerdict {
    o.judge(w, &WindowContext::default())
}

#[test]
fn markers_round_trip_canonically() {
    for e in or_not_run!(events()) {
        let m = encode_event(&e);
        let TickMarker::Custom(text) = &m else {
            panic!()
        };
        assert!(text.starts_with("replay/1 {"));
        assert_eq!(decode_marker(&m).unwrap().unwrap(), ReplayRecord::Event(e));
    }
    let e = Event {
        t_ms: 5,
        kind: EventKind::Hypothesis {
            text: "a\"b".into(),
            decode_id: Some("d1".into()),
        },
    };
    assert_eq!(
        event_json(&e),
        r#"{"decode_id":"d1","kind":"hypothesis","t_ms":5,"text":"a\"b"}"#
    );
    let w = encode_observed_write(9, "x");
    assert_eq!(
        decode_marker(&w).unwrap().unwrap(),
        ReplayRecord::ObservedWrite {
            t_ms: 9,
            text: "x".into()
        }
    );
    // Not replay records.
    assert!(decode_marker(&TickMarker::BargeIn).is_none());
    assert!(decode_marker(&TickMarker::Custom("other/1 {}".into())).is_none());
    // Prefixed but invalid.
    let bad = decode_marker(&TickMarker::Custom(
        "replay/1 {\"kind\":\"nope\",\"t_ms\":1}".into(),
    ));
    assert_eq!(bad.unwrap().unwrap_err().code(), "invalid_replay_marker");
}

#[test]
fn open_burst_needs_more_then_passes_after_the_final() {
    let ev = or_not_run!(events());
    let mut o = CommitSafetyOracle::new(ordinary());
    // target, hold_start, hypothesis, hypothesis, hold_release | final_decode
    let w0 = window(0, ev[..5].iter().map(encode_event).collect());
    let v = judge(&mut o, &w0);
    assert!(matches!(v, WindowVerdict::NeedMore { .. }), "{v:?}");
    let w1 = window(
        1,
        vec![
            encode_event(&ev[5]),
            encode_observed_write(1200, "alpha bravo charlie"),
        ],
    );
    let v = judge(&mut o, &w1);
    assert_eq!(v, WindowVerdict::pass_by(COMMIT_SAFETY_ORACLE_NAME));
    assert_eq!(o.observed_writes(), 1);
    assert_eq!(o.state().phase(), Phase::Sealed);
}

#[test]
fn an_unauthorized_observed_write_fails_early_and_at_judge() {
    let ev = or_not_run!(events());
    let mut o = CommitSafetyOracle::new(ordinary());
    // The system under test types the partial before release.
    let mut markers: Vec<TickMarker> = ev[..3].iter().map(encode_event).collect();
    markers.push(encode_observed_write(310, "alpha"));
    let w = window(0, markers);
    let mut early = None;
    for t in w.ticks() {
        if let Some(v) = o.on_tick(t, ChannelDirection::Inbound) {
            early = Some(v);
        }
    }
    assert!(matches!(early, Some(WindowVerdict::Fail { .. })));
    let v = judge(&mut o, &w);
    match v {
        WindowVerdict::Fail { oracle, reason } => {
            assert_eq!(oracle, COMMIT_SAFETY_ORACLE_NAME);
            assert!(reason.contains("not authorized"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // on_tick then judge applied each record once.
    assert_eq!(o.steps().len(), 3);
}

#[test]
fn judge_alone_matches_on_tick_then_judge() {
    let ev = or_not_run!(events());
    let markers: Vec<TickMarker> = ev.iter().map(encode_event).collect();
    let w = window(0, markers);
    let mut a = CommitSafetyOracle::new(ordinary());
    let va = judge(&mut a, &w);
    let mut b = CommitSafetyOracle::new(ordinary());
    for t in w.ticks() {
        assert!(b.on_tick(t, ChannelDirection::Inbound).is_none());
    }
    let vb = judge(&mut b, &w);
    assert_eq!(va, vb);
    assert!(va.is_pass());
    assert_eq!(a.state(), b.state());
    assert_eq!(a.steps().len(), ev.len());
}

#[test]
fn a_wrong_text_or_a_corrupt_marker_fails() {
    let ev = or_not_run!(events());
    let mut markers: Vec<TickMarker> = ev.iter().map(encode_event).collect();
    markers.push(encode_observed_write(1200, "alpha bravo"));
    let mut o = CommitSafetyOracle::new(ordinary());
    assert!(matches!(
        judge(&mut o, &window(0, markers)),
        WindowVerdict::Fail { .. }
    ));
    // A duplicate observed write: the second is not authorized.
    let mut markers: Vec<TickMarker> = ev.iter().map(encode_event).collect();
    markers.push(encode_observed_write(1200, "alpha bravo charlie"));
    markers.push(encode_observed_write(1300, "alpha bravo charlie"));
    let mut o = CommitSafetyOracle::new(ordinary());
    assert!(matches!(
        judge(&mut o, &window(0, markers)),
        WindowVerdict::Fail { .. }
    ));
    // The next window, with nothing wrong in it, passes again.
    assert!(judge(&mut o, &window(1, vec![])).is_pass());
    let mut o = CommitSafetyOracle::new(ordinary());
    let corrupt = TickMarker::Custom("replay/1 {\"kind\":".into());
    assert!(matches!(
        judge(&mut o, &window(0, vec![corrupt])),
        WindowVerdict::Fail { .. }
    ));
    // Replay-prefixed markers off the control channel, and other markers, are ignored.
    let mut o = CommitSafetyOracle::new(ordinary());
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let mut w = StreamWindow::open(spec, 0).unwrap();
    w.push(Tick::marker(
        0,
        duplex::ASR,
        encode_observed_write(1, "x"),
        1,
    ))
    .unwrap();
    w.push(Tick::marker(0, duplex::CONTROL, TickMarker::BargeIn, 2))
        .unwrap();
    assert!(judge(&mut o, &w).is_pass());
}

fn fail_reason(v: WindowVerdict) -> String {
    match v {
        WindowVerdict::Fail { oracle, reason } => {
            assert_eq!(oracle, COMMIT_SAFETY_ORACLE_NAME);
            reason
        }
        other => panic!("expected Fail, got {other:?}"),
    }
}

#[test]
fn regression_a_damaged_replay_prefix_fails_instead_of_being_ignored() {
    // Ignoring these would silently drop the focus change they carry.
    let body = r#"{"caret_version":2,"editable":true,"focus_id":"f2","kind":"target","t_ms":5}"#;
    for text in [
        format!("replay/1{body}"),
        format!("replay/2 {body}"),
        format!("replay/ {body}"),
        "replay/1".to_owned(),
    ] {
        let m = TickMarker::Custom(text.clone());
        let e = decode_marker(&m).unwrap().unwrap_err();
        assert_eq!(e.code(), "invalid_replay_marker", "{text}");
        let mut o = CommitSafetyOracle::new(ordinary());
        let reason = fail_reason(judge(&mut o, &window(0, vec![m])));
        assert!(reason.contains("invalid replay marker"), "{reason}");
    }
    // Neighbour: other namespaces stay ignored.
    for text in ["replayed", "other/1 {}", "Replay/1 {}"] {
        assert!(decode_marker(&TickMarker::Custom(text.into())).is_none());
    }
}

#[test]
fn regression_a_repeated_key_in_a_marker_fails() {
    // serde_json would keep the last `kind` and feed a different event than the first reads.
    let m = TickMarker::Custom(
        r#"replay/1 {"kind":"hold_release","kind":"hold_start","t_ms":1}"#.into(),
    );
    let e = decode_marker(&m).unwrap().unwrap_err();
    assert!(e.to_string().contains("marker.kind"), "{e}");
    let mut o = CommitSafetyOracle::new(ordinary());
    fail_reason(judge(&mut o, &window(0, vec![m])));
    assert!(o.steps().is_empty());
}

#[test]
fn regression_an_out_of_order_record_fails_the_window() {
    let ev = or_not_run!(events());
    let mut markers: Vec<TickMarker> = ev[..4].iter().map(encode_event).collect();
    // A focus change stamped before the last record: refused by the reducer, and reported.
    markers.push(encode_event(&Event {
        t_ms: 1,
        kind: EventKind::Target(TargetSnapshot {
            focus_id: "f2".into(),
            caret_version: 1,
            editable: true,
        }),
    }));
    let mut o = CommitSafetyOracle::new(ordinary());
    let reason = fail_reason(judge(&mut o, &window(0, markers)));
    assert!(
        reason.contains("earlier than the previous record"),
        "{reason}"
    );
    assert_eq!(o.state().target().map(|t| t.focus_id.as_str()), Some("f1"));
}

#[test]
fn regression_the_encoder_never_alters_an_unsafe_integer() {
    let e = Event {
        t_ms: u64::MAX,
        kind: EventKind::HoldRelease,
    };
    assert_eq!(
        event_json(&e),
        format!(r#"{{"kind":"hold_release","t_ms":{}}}"#, u64::MAX)
    );
    let err = decode_marker(&encode_event(&e)).unwrap().unwrap_err();
    assert_eq!(err.code(), "invalid_replay_marker");
    let mut o = CommitSafetyOracle::new(ordinary());
    fail_reason(judge(&mut o, &window(0, vec![encode_event(&e)])));
}

#[test]
fn regression_a_long_session_is_judged_without_rescanning_it_per_record() {
    // 200 dictated bursts, 20 hypotheses each. Re-auditing the whole log on every record made
    // this cubic (minutes); it must stay well under a second in a release build.
    let mut evs = vec![Event {
        t_ms: 0,
        kind: EventKind::Target(TargetSnapshot {
            focus_id: "f1".into(),
            caret_version: 1,
            editable: true,
        }),
    }];
    let mut t = 0;
    let mut next = || {
        t += 1;
        t
    };
    for b in 0..200 {
        evs.push(Event {
            t_ms: next(),
            kind: EventKind::HoldStart {
                duration_ms: None,
                energy_band: None,
            },
        });
        for h in 0..20 {
            evs.push(Event {
                t_ms: next(),
                kind: EventKind::Hypothesis {
                    text: format!("w{b} {h}"),
                    decode_id: None,
                },
            });
        }
        evs.push(Event {
            t_ms: next(),
            kind: EventKind::HoldRelease,
        });
        evs.push(Event {
            t_ms: next(),
            kind: EventKind::FinalDecode {
                text: format!("w{b}"),
                decode_id: None,
                class: CandidateClass::Dictation,
            },
        });
    }
    let mut o = CommitSafetyOracle::new(ordinary());
    for (id, chunk) in evs.chunks(50).enumerate() {
        let w = window(id as u64, chunk.iter().map(encode_event).collect());
        assert!(!matches!(judge(&mut o, &w), WindowVerdict::Fail { .. }));
    }
    assert_eq!(o.state().external_writes().len(), 200);
    // The audit reruns only when a record changed one of the logs it judges (a final's write
    // and finalization land in one step), never once per record: work, not time, is bounded.
    assert!(evs.len() > 4_000);
    assert!(
        o.audits_run() <= 2 * 200,
        "{} audits for {} records",
        o.audits_run(),
        evs.len()
    );
}
