//! The driver: window order, refusals that change nothing, poisoning, the demo story.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bytes::Bytes;
use jouleclaw_jcr1::Estimator;
use jouleclaw_jcr1::cose::{self, Signer, SingleKey, SoftwareSigner};
use jouleclaw_pipeline::*;
use jouleclaw_stream::{
    LedgerPolicy, StreamSpec, Tick, TickKind, WindowConservationFinding, duplex,
};
use jouleclaw_stream_oracle::WindowVerdict;

fn spec() -> Arc<StreamSpec> {
    Arc::new(StreamSpec::duplex_voice_default())
}

fn pipeline() -> Pipeline {
    Pipeline::new(
        spec(),
        PipelineConfig::new("did:example:s", "s1"),
        duplex_voice_oracle(),
        Estimator::default(),
        Box::new(SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap()
}

fn mic(w: u64, ts_ns: u64) -> Tick {
    Tick::new(
        w,
        duplex::MIC,
        TickKind::Audio,
        Bytes::from(vec![0u8; 640]),
        ts_ns,
    )
}

#[test]
fn refused_tick_changes_nothing_even_when_it_would_open_a_window() {
    let mut p = pipeline();
    p.push(mic(0, 0)).unwrap();
    // Unknown channel in window 1: refused before window 0 closes.
    let bad = Tick::new(1, 99, TickKind::Audio, Bytes::new(), 200_000_000);
    let e = p.push(bad).unwrap_err();
    assert_eq!(e.code(), "tick_unknown_channel");
    assert_eq!(p.open_window_id(), Some(0));
    // Accepted neighbour: the same tick on a real channel closes window 0.
    let out = p.push(mic(1, 200_000_000)).unwrap();
    assert_eq!(out.closed.unwrap().receipt.window_id, 0);
    assert_eq!(p.open_window_id(), Some(1));
}

#[test]
fn windows_only_move_forward() {
    let mut p = pipeline();
    p.push(mic(2, 400_000_000)).unwrap();
    let e = p.push(mic(1, 200_000_000)).unwrap_err();
    assert_eq!(e, PipelineError::WindowRegressed { current: 2, got: 1 });
    p.close_window().unwrap().unwrap();
    // Still refused after window 2 closed.
    assert_eq!(
        p.push(mic(2, 400_000_001)).unwrap_err().code(),
        "trace_window_regressed"
    );
    assert!(p.push(mic(3, 600_000_000)).unwrap().closed.is_none());
}

#[test]
fn close_window_is_none_without_an_open_window() {
    let mut p = pipeline();
    assert_eq!(p.close_window().unwrap(), None);
    p.push(mic(0, 0)).unwrap();
    assert!(p.close_window().unwrap().is_some());
    assert_eq!(p.close_window().unwrap(), None);
}

#[test]
fn ledger_summary_is_read_before_the_next_window_resets_it() {
    let mut p = pipeline();
    // Outbound with no inbound: hallucination in window 0.
    let tts = Tick::new(
        0,
        duplex::TTS,
        TickKind::Audio,
        Bytes::from(vec![0u8; 100]),
        0,
    );
    assert_eq!(
        p.push(tts).unwrap().finding,
        WindowConservationFinding::Hallucination { unaccounted: 100 }
    );
    let out = p.push(mic(1, 200_000_000)).unwrap();
    let closed = out.closed.unwrap();
    assert_eq!(
        closed.receipt.conservation,
        WindowConservationFinding::Hallucination { unaccounted: 100 }
    );
    // The conservation ledger reports; the verdict still passes.
    assert!(closed.receipt.verdict.is_pass());
}

#[test]
fn closed_at_follows_the_configured_clock() {
    assert_eq!(ClosedAt::Fixed(7).unix_for(9_000_000_000), 7);
    let st = ClosedAt::StreamTime { epoch_unix: 100 };
    assert_eq!(st.unix_for(999_999_999), 100);
    assert_eq!(st.unix_for(1_000_000_000), 101);
    assert_eq!(
        ClosedAt::StreamTime {
            epoch_unix: i64::MAX
        }
        .unix_for(2_000_000_000),
        i64::MAX
    );
}

#[test]
fn a_failed_close_poisons_the_pipeline() {
    // A clock outside years 0000-9999 cannot be minted.
    let mut p = Pipeline::new(
        spec(),
        PipelineConfig::new("s", "x").with_closed_at(ClosedAt::Fixed(i64::MAX)),
        duplex_voice_oracle(),
        Estimator::default(),
        Box::new(SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap();
    p.push(mic(0, 0)).unwrap();
    assert_eq!(p.close_window().unwrap_err().code(), "unencodable");
    assert_eq!(p.push(mic(1, 200_000_000)), Err(PipelineError::Poisoned));
    assert_eq!(p.close_window(), Err(PipelineError::Poisoned));
}

#[test]
fn new_refuses_empty_names_and_bad_policy() {
    let make = |cfg: PipelineConfig| {
        Pipeline::new(
            spec(),
            cfg,
            duplex_voice_oracle(),
            Estimator::default(),
            Box::new(SoftwareSigner::rfc8032_test_key()),
        )
        .map(|_| ())
    };
    assert_eq!(
        make(PipelineConfig::new("", "x")).unwrap_err().code(),
        "unencodable"
    );
    assert_eq!(
        make(PipelineConfig::new("s", "")).unwrap_err().code(),
        "unencodable"
    );
    let policy = LedgerPolicy {
        window_count: 0,
        ..LedgerPolicy::default()
    };
    assert_eq!(
        make(PipelineConfig::new("s", "x").with_policy(policy))
            .unwrap_err()
            .code(),
        "ledger_invalid_policy"
    );
    assert!(make(PipelineConfig::new("s", "x")).is_ok());
}

#[test]
fn demo_story_shows_yield_hallucination_and_barge_in_ignored() {
    let run = demo::run().unwrap();
    assert_eq!(run.windows.len() as u64, demo::WINDOWS);
    let kinds: Vec<(&str, &str)> = run
        .windows
        .iter()
        .map(|w| {
            (
                w.receipt.verdict.kind_str(),
                w.receipt.conservation.kind_str(),
            )
        })
        .collect();
    for (i, (v, c)) in kinds.iter().enumerate() {
        let want = match i {
            6 => ("yield", "conforming"),
            9 => ("pass", "hallucination"),
            10 => ("yield", "barge_in_ignored"),
            _ => ("pass", "conforming"),
        };
        assert_eq!((*v, *c), want, "window {i}");
    }
    // The yield is reported early, at the barge-in tick, with its time.
    let early: Vec<&TickOutcome> = run.outcomes.iter().filter(|o| o.early.is_some()).collect();
    assert_eq!(early.len(), 2);
    assert_eq!(early[0].ts_ns, 1_240_000_000);
    assert_eq!(early[0].early, Some(WindowVerdict::Yield { seen_at: 6 }));
    assert_eq!(run.windows[6].early[0].ts_ns, 1_240_000_000);
    // BargeInIgnored is flagged on the late outbound tick itself.
    let flagged = run
        .outcomes
        .iter()
        .find(|o| o.finding.kind_str() == "barge_in_ignored")
        .unwrap();
    assert_eq!(flagged.ts_ns, 2_190_000_000);
    // Every receipt verifies under the test key.
    let key = SingleKey::new(SoftwareSigner::rfc8032_test_key().verifying_key());
    for w in &run.windows {
        let v = cose::verify(w.cose_sign1().unwrap(), &key).unwrap();
        assert_eq!(v.receipt, w.receipt);
    }
}

#[test]
fn format_ts_trims_trailing_zeros() {
    assert_eq!(format_ts(0), "0s");
    assert_eq!(format_ts(1_240_000_000), "1.24s");
    assert_eq!(format_ts(2_000_000_000), "2s");
    assert_eq!(format_ts(1), "0.000000001s");
}

#[test]
fn names_too_long_for_a_late_receipt_are_refused_when_the_pipeline_is_built() {
    let make = |steward: &str, stream_id: &str| {
        Pipeline::new(
            spec(),
            PipelineConfig::new(steward, stream_id),
            duplex_voice_oracle(),
            Estimator::default(),
            Box::new(SoftwareSigner::rfc8032_test_key()),
        )
        .map(|_| ())
    };
    // The receipt id is `{stream_id}:{window_id:04}`, at most 4,096 bytes: with a 16-digit
    // window id the stream id may have 4,096 - 17 = 4,079 bytes.
    assert!(make("s", &"x".repeat(4_079)).is_ok());
    let e = make("s", &"x".repeat(4_080)).unwrap_err();
    assert_eq!(e.code(), "unencodable");
    assert!(make(&"s".repeat(4_096), "x").is_ok());
    assert_eq!(
        make(&"s".repeat(4_097), "x").unwrap_err().code(),
        "unencodable"
    );
}
