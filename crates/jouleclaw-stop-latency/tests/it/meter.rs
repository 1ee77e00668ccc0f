//! The meter's rules, each with its accepted neighbour, and the meter against the ledger.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use jouleclaw_stop_latency::*;
use jouleclaw_stream::{ChannelDirection::*, TickMarker, WindowConservationFinding, duplex};
use proptest::prelude::*;
use support::*;

fn measure(ticks: &[jouleclaw_stream::Tick]) -> Vec<BargeIn> {
    let spec = jouleclaw_stream::StreamSpec::duplex_voice_default();
    let mut m = StopLatencyMeter::new();
    for t in ticks {
        m.observe(t, spec.channel(t.channel_id).unwrap().direction)
            .unwrap();
    }
    m.finish();
    m.barge_ins().to_vec()
}

#[test]
fn polite_stops_within_the_deadline_and_the_next_start_ends_the_measurement() {
    let b = measure(&polite());
    assert_eq!(b.len(), 1);
    let b = b[0];
    assert_eq!(b.window_id, 5);
    assert_eq!(b.barge_in_ts_ns, 1040 * MS);
    assert_eq!(b.last_audio_ts_ns, Some(1080 * MS));
    assert_eq!(b.stop_latency_ns(), 40 * MS);
    assert_eq!(b.audio_bytes, 5 * 240);
    assert_eq!(b.late_audio_bytes, 0);
    assert_eq!((b.ended_by, b.end_ts_ns), (EndedBy::Start, Some(1600 * MS)));
    assert!(b.within_deadline());
}

#[test]
fn rude_is_late_by_what_it_sent_after_the_deadline() {
    let b = measure(&rude())[0];
    assert_eq!(b.stop_latency_ns(), 450 * MS);
    // 1200 .. 1490 ms: 30 ticks past 1190 ms.
    assert_eq!(b.late_audio_bytes, 30 * 240);
    // 1040 .. 1490 ms (the tick at the barge-in's own time is pushed after it).
    assert_eq!(b.audio_bytes, 46 * 240);
    assert_eq!((b.ended_by, b.end_ts_ns), (EndedBy::StreamEnd, None));
    assert!(!b.within_deadline());
}

#[test]
fn the_deadline_is_strict_as_in_the_ledger() {
    let at = |ts| {
        measure(&[
            marker(0, duplex::CONTROL, TickMarker::BargeIn),
            tts(ts, 240),
        ])[0]
    };
    let on = at(150 * MS);
    assert_eq!((on.late_audio_bytes, on.within_deadline()), (0, true));
    let past = at(150 * MS + 1);
    assert_eq!(
        (past.late_audio_bytes, past.within_deadline()),
        (240, false)
    );
}

#[test]
fn no_audio_after_the_barge_in_is_a_zero_latency() {
    let b = measure(&[
        tts(0, 240),
        marker(50 * MS, duplex::CONTROL, TickMarker::BargeIn),
        mic(60 * MS),
    ])[0];
    assert_eq!(
        (b.last_audio_ts_ns, b.stop_latency_ns(), b.audio_bytes),
        (None, 0, 0)
    );
}

#[test]
fn only_outbound_non_empty_audio_counts() {
    let b = measure(&[
        marker(0, duplex::CONTROL, TickMarker::BargeIn),
        tts(10 * MS, 0),
        mic(20 * MS),
        jouleclaw_stream::Tick::new(
            0,
            duplex::LLM,
            jouleclaw_stream::TickKind::Text,
            bytes::Bytes::from_static(b"words"),
            30 * MS,
        ),
    ])[0];
    assert_eq!((b.last_audio_ts_ns, b.audio_bytes), (None, 0));
    let b = measure(&[
        marker(0, duplex::CONTROL, TickMarker::BargeIn),
        tts(10 * MS, 2),
    ])[0];
    assert_eq!((b.last_audio_ts_ns, b.audio_bytes), (Some(10 * MS), 2));
}

#[test]
fn only_an_outbound_start_ends_a_measurement() {
    let inbound_start = measure(&[
        marker(0, duplex::CONTROL, TickMarker::BargeIn),
        marker(10 * MS, duplex::MIC, TickMarker::Start),
        tts(20 * MS, 240),
    ])[0];
    assert_eq!(inbound_start.ended_by, EndedBy::StreamEnd);
    assert_eq!(inbound_start.last_audio_ts_ns, Some(20 * MS));
    let outbound_start = measure(&[
        marker(0, duplex::CONTROL, TickMarker::BargeIn),
        marker(10 * MS, duplex::TTS, TickMarker::Start),
        tts(20 * MS, 240),
    ])[0];
    assert_eq!(outbound_start.ended_by, EndedBy::Start);
    assert_eq!(outbound_start.last_audio_ts_ns, None);
}

#[test]
fn a_second_barge_in_before_the_agent_stops_is_measured_too() {
    let b = measure(&[
        marker(0, duplex::CONTROL, TickMarker::BargeIn),
        tts(100 * MS, 240),
        marker(120 * MS, duplex::CONTROL, TickMarker::BargeIn),
        tts(300 * MS, 240),
    ]);
    assert_eq!(b.len(), 2);
    assert_eq!(b[0].stop_latency_ns(), 300 * MS);
    assert_eq!(b[0].late_audio_bytes, 240);
    assert_eq!(b[1].stop_latency_ns(), 180 * MS);
    assert_eq!((b[1].audio_bytes, b[1].late_audio_bytes), (240, 240));
}

#[test]
fn too_many_barge_ins_and_ticks_after_the_end_are_refused_unchanged() {
    let mut m = StopLatencyMeter::new();
    let b = marker(0, duplex::CONTROL, TickMarker::BargeIn);
    for _ in 0..MAX_BARGE_INS {
        m.observe(&b, Inbound).unwrap();
    }
    assert_eq!(
        m.observe(&b, Inbound).unwrap_err().code(),
        "too_many_barge_ins"
    );
    assert_eq!(m.barge_ins().len(), MAX_BARGE_INS);
    let mut m = StopLatencyMeter::new();
    m.finish();
    assert_eq!(m.observe(&b, Inbound).unwrap_err().code(), "meter_finished");
    assert!(m.barge_ins().is_empty());
}

#[test]
fn percentiles_are_nearest_rank() {
    let v: Vec<u64> = (1..=20).collect();
    assert_eq!(percentile(&v, 50), Some(10));
    assert_eq!(percentile(&v, 95), Some(19));
    assert_eq!(percentile(&v, 100), Some(20));
    assert_eq!(percentile(&[7], 95), Some(7));
    assert_eq!(percentile(&[], 50), None);
    assert_eq!(percentile(&[3, 1, 2], 50), Some(2));
}

fn ledger_flagged(r: &Run) -> bool {
    r.receipts.iter().any(|(rc, _)| {
        matches!(
            rc.conservation,
            WindowConservationFinding::BargeInIgnored { .. }
        )
    })
}

#[test]
fn the_pipeline_flags_rude_and_not_polite_as_the_meter_does() {
    let polite = run(polite());
    assert!(!ledger_flagged(&polite));
    assert!(polite.barge_ins.iter().all(|b| b.late_audio_bytes == 0));
    let rude = run(rude());
    assert!(ledger_flagged(&rude));
    assert!(rude.barge_ins.iter().any(|b| b.late_audio_bytes > 0));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    /// With TTS audio the only outbound payload and inbound barge-ins, some barge-in has late
    /// audio exactly when the ledger flags `barge_in_ignored` in some window.
    #[test]
    fn late_audio_exactly_when_the_ledger_flags_the_barge_in(
        speak in prop::collection::vec((0u64..150, 1u64..60), 0..4),
        barge in prop::collection::vec(0u64..200, 0..4),
        starts in prop::collection::vec(0u64..200, 0..3),
    ) {
        let speak: Vec<(u64, u64)> = speak.iter().map(|&(a, l)| (a * 10 * MS, (a + l) * 10 * MS)).collect();
        let barge: Vec<u64> = barge.iter().map(|b| b * 10 * MS + 5 * MS).collect();
        let starts: Vec<u64> = starts.iter().map(|s| s * 10 * MS + 7 * MS).collect();
        let r = run(call(2000 * MS, &speak, &barge, &starts));
        prop_assert_eq!(r.barge_ins.len(), barge.len());
        prop_assert_eq!(r.barge_ins.iter().any(|b| b.late_audio_bytes > 0), ledger_flagged(&r));
        prop_assert!(check_receipts(&r.doc, &r.receipts).is_empty());
    }
}
