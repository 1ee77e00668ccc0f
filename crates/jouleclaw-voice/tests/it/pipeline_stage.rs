//! The turn stage inside the pipeline: mic audio in, an ASR text tick in the same stream, signed
//! receipts out; a failed turn fails its window early and in the receipt.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use jouleclaw_jcr1::cose::{self, Signer, SingleKey, SoftwareSigner};
use jouleclaw_pipeline::{Pipeline, TickOutcome};
use jouleclaw_stream::{Tick, TickKind, TickMarker, duplex};
use jouleclaw_stream_oracle::{
    AlwaysPassStream, BargeInDetector, CompositeStreamOracle, StreamOracle, WindowVerdict,
};
use jouleclaw_voice::{
    Heard, LevelMeter, Provenance, TURN_STAGE_NAME, TableAnswer, TableTranscriber,
    TranscriptionOracle, TurnLog, TurnStage, VoiceError, VoiceTurn, WavAudio,
};

const PCM: usize = 6_400;

fn pipeline(table: TableTranscriber) -> Pipeline {
    pipeline_with_log(table).0
}

/// The pipeline and the handle on its turn stage's last turn.
fn pipeline_with_log(table: TableTranscriber) -> (Pipeline, TurnLog) {
    let stage = TurnStage::new(table);
    let log = stage.log();
    let oracle = CompositeStreamOracle::new(
        "voice",
        vec![
            Box::new(AlwaysPassStream),
            Box::new(BargeInDetector),
            Box::new(TranscriptionOracle::new()),
        ],
    );
    let p = crate::voice_pipeline("call-voice", oracle).with_stage(Box::new(stage));
    (p, log)
}

fn pcm() -> Vec<u8> {
    vec![3u8; PCM]
}

fn mic_marker(m: TickMarker, ts_ns: u64) -> Tick {
    Tick::marker(ts_ns / 200_000_000, duplex::MIC, m, ts_ns)
}

fn mic_audio(ts_ns: u64) -> Tick {
    mic_pcm(ts_ns, pcm())
}

fn mic_pcm(ts_ns: u64, pcm: Vec<u8>) -> Tick {
    Tick::new(
        ts_ns / 200_000_000,
        duplex::MIC,
        TickKind::Audio,
        Bytes::from(pcm),
        ts_ns,
    )
}

/// Start, one chunk of `pcm`, EndOfTurn through `p`; returns the turn the stage recorded.
fn one_turn(p: &mut Pipeline, log: &TurnLog, pcm: Vec<u8>) -> VoiceTurn {
    let before = log.closed();
    p.push(mic_marker(TickMarker::Start, 0)).unwrap();
    p.push(mic_pcm(10_000_000, pcm)).unwrap();
    p.push(mic_marker(TickMarker::EndOfTurn, 250_000_000))
        .unwrap();
    assert_eq!(log.closed(), before + 1);
    log.last().unwrap().turn
}

fn table(answer: TableAnswer) -> TableTranscriber {
    TableTranscriber::new().with_row(&WavAudio::from_pcm16_mono_16k(&pcm()).unwrap(), answer)
}

#[test]
fn mic_audio_becomes_an_asr_text_tick_in_the_same_window_and_receipt() {
    let (mut p, log) = pipeline_with_log(table(TableAnswer::Say("turn on the light".into())));
    let start = p.push(mic_marker(TickMarker::Start, 0)).unwrap();
    assert_eq!(start.stages.len(), 1);
    assert_eq!(start.stages[0].stage, TURN_STAGE_NAME);
    assert_eq!(start.stages[0].result, Ok(vec![]));
    p.push(mic_audio(10_000_000)).unwrap();
    let end: TickOutcome = p
        .push(mic_marker(TickMarker::EndOfTurn, 250_000_000))
        .unwrap();
    // Window 0 (start + audio) closed when the EndOfTurn of window 1 arrived.
    let w0 = end.closed.clone().unwrap();
    assert_eq!(w0.receipt.tick_count, 2);
    assert_eq!(w0.receipt.inbound_bytes, PCM as u64);
    let produced = end.stages[0].result.as_ref().unwrap();
    assert_eq!(produced.len(), 1);
    let asr = &produced[0].tick;
    assert_eq!(
        (asr.window_id, asr.channel_id, asr.ts_ns),
        (1, duplex::ASR, 250_000_000)
    );
    assert_eq!(&asr.bytes[..], b"turn on the light");
    // The produced tick is marked as heard by its channel: no second tick joins the window.
    assert_eq!(Provenance::of(asr), Provenance::Voice);
    // The measurement beside the words, for the caller of the pipeline.
    let turn = log.last().unwrap();
    assert_eq!((turn.window_id, turn.ts_ns), (1, 250_000_000));
    assert_eq!(turn.turn.heard, Heard::Said("turn on the light".into()));
    let mut meter = LevelMeter::new();
    meter.push_pcm16le(&pcm()).unwrap();
    assert_eq!(turn.turn.measurement, meter.measurement());
    assert_eq!(turn.turn.measurement.samples(), (PCM / 2) as u64);
    assert!(!turn.turn.measurement.is_silent());
    let w1 = p.close_window().unwrap().unwrap();
    // The marker and the produced ASR text tick are both in window 1's record.
    assert_eq!(w1.receipt.tick_count, 2);
    assert_eq!(w1.receipt.inbound_bytes, 17);
    assert!(w1.receipt.verdict.is_pass(), "{:?}", w1.receipt.verdict);
    let key = SingleKey::new(SoftwareSigner::rfc8032_test_key().verifying_key());
    for w in [&w0, &w1] {
        let v = cose::verify(w.cose_sign1().unwrap(), &key).unwrap();
        assert_eq!(v.receipt, w.receipt);
    }
}

#[test]
fn without_the_stage_no_asr_tick_joins_the_window() {
    // The accepted neighbour of the rule above: the same ticks without a stage.
    let oracle = CompositeStreamOracle::new("voice", vec![Box::new(AlwaysPassStream)]);
    let mut p = crate::voice_pipeline("call-voice", oracle);
    p.push(mic_marker(TickMarker::Start, 0)).unwrap();
    p.push(mic_audio(10_000_000)).unwrap();
    let end = p
        .push(mic_marker(TickMarker::EndOfTurn, 250_000_000))
        .unwrap();
    assert!(end.stages.is_empty());
    let w1 = p.close_window().unwrap().unwrap();
    assert_eq!((w1.receipt.tick_count, w1.receipt.inbound_bytes), (1, 0));
}

#[test]
fn a_failed_turn_fails_its_window_early_and_in_the_receipt() {
    let (mut p, log) = pipeline_with_log(table(TableAnswer::Fail(VoiceError::Connect {
        endpoint: "unix:/run/whisper.sock".into(),
        reason: "connection refused".into(),
    })));
    p.push(mic_marker(TickMarker::Start, 0)).unwrap();
    p.push(mic_audio(10_000_000)).unwrap();
    let end = p
        .push(mic_marker(TickMarker::EndOfTurn, 250_000_000))
        .unwrap();
    let failure = end.stages[0].result.clone().unwrap_err();
    assert_eq!(failure.code, "engine_connect");
    // The oracle learnt of the failure before it saw the tick: the Fail is early.
    assert!(
        matches!(end.early, Some(WindowVerdict::Fail { .. })),
        "{:?}",
        end.early
    );
    // The failed turn was measured too, and carries its code, not an empty sentence.
    let turn = log.last().unwrap().turn;
    assert_eq!(turn.heard, Heard::Failed("engine_connect".into()));
    assert_eq!(turn.measurement.samples(), (PCM / 2) as u64);
    let w1 = p.close_window().unwrap().unwrap();
    match &w1.receipt.verdict {
        WindowVerdict::Fail { oracle, reason } => {
            assert_eq!(oracle, "transcription");
            assert!(reason.contains("engine_connect"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // Only the marker is in the window: a failed turn produces no text tick.
    assert_eq!(w1.receipt.tick_count, 1);
}

#[test]
fn an_end_of_turn_without_a_turn_is_a_refused_input_not_a_failed_turn() {
    let mut p = pipeline(table(TableAnswer::Say("x".into())));
    let end = p.push(mic_marker(TickMarker::EndOfTurn, 0)).unwrap();
    assert_eq!(
        end.stages[0].result.as_ref().unwrap_err().code,
        "turn_not_open"
    );
    assert_eq!(end.early, None);
    assert!(p.close_window().unwrap().unwrap().receipt.verdict.is_pass());
}

#[test]
fn other_stages_events_do_not_reach_the_transcription_oracle() {
    use jouleclaw_stream_oracle::{StageEvent, StageOutcome};
    let mut oracle = TranscriptionOracle::new();
    let end = mic_marker(TickMarker::EndOfTurn, 0);
    let failed = StageOutcome::Failed {
        code: "engine_connect",
        message: "m",
    };
    oracle.on_stage_event(&StageEvent {
        stage: "other",
        tick: &end,
        outcome: failed,
    });
    assert_eq!(oracle.pending(), 0);
    oracle.on_stage_event(&StageEvent {
        stage: TURN_STAGE_NAME,
        tick: &end,
        outcome: failed,
    });
    assert_eq!(oracle.pending(), 1);
}

#[test]
fn every_turn_through_the_pipeline_ends_in_a_measurement_with_or_without_words() {
    // Words plus measurement.
    let (mut p, log) = pipeline_with_log(table(TableAnswer::Say("hello".into())));
    let said = one_turn(&mut p, &log, pcm());
    assert_eq!(said.heard.text(), Some("hello"));
    assert_eq!(said.measurement.duration_ns(), 200_000_000);
    assert!(!said.measurement.is_silent());

    // No engine: the measurement and no text, and no text tick in the window.
    let (mut p, log) = pipeline_with_log(TableTranscriber::always(TableAnswer::Unasked));
    let unasked = one_turn(&mut p, &log, pcm());
    assert_eq!(unasked.heard, Heard::Unasked);
    assert_eq!(unasked.measurement, said.measurement);
    assert!(
        !String::from_utf8(unasked.encode().unwrap())
            .unwrap()
            .contains("text")
    );
    assert_eq!(p.close_window().unwrap().unwrap().receipt.tick_count, 1);

    // A muted microphone: empty words, and a measurement that says silence.
    let muted = vec![0u8; PCM];
    let (mut p, log) = pipeline_with_log(TableTranscriber::new().with_row(
        &WavAudio::from_pcm16_mono_16k(&muted).unwrap(),
        TableAnswer::Say(String::new()),
    ));
    let silent = one_turn(&mut p, &log, muted);
    assert_eq!(silent.heard, Heard::Said(String::new()));
    assert!(silent.measurement.is_silent());
    assert_eq!(silent.measurement.peak_dbfs_hundredths(), None);
    assert_eq!(silent.measurement.samples(), (PCM / 2) as u64);
    // The empty words still join the window as a text tick of zero bytes.
    let w = p.close_window().unwrap().unwrap();
    assert_eq!((w.receipt.tick_count, w.receipt.inbound_bytes), (2, 0));
}
