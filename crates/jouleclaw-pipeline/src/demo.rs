//! The demo fixture: the scripted duplex-voice story of the wave-47 demo
//! (`examples/wave47_streaming_pipeline.rs`), shared with the shipped trace
//! `conformance/traces/duplex-demo.jsonl`, its golden receipts (`examples/golden/`), the
//! `jouleclaw run` defaults and the benches.
//!
//! Thirteen 200 ms windows (2.6 s) of a voice agent asked about the weather:
//!
//! | window | what happens                                                                 |
//! |--------|------------------------------------------------------------------------------|
//! | 0-2    | the user asks; ASR text; a weather tool answers on the substrate channel     |
//! | 3-5    | the agent answers in LLM text and TTS audio                                  |
//! | 6      | the user barges in at 1.24 s: `Yield` on that tick; TTS stops within 90 ms   |
//! | 7-8    | the user asks again; the agent answers                                       |
//! | 9      | a TTS burst outruns the rolling budget: `Hallucination`                      |
//! | 10     | a second barge-in at 2.02 s; TTS still flows at 2.19 s: `BargeInIgnored`     |
//! | 11-12  | the agent stops; the user says thanks; the session ends                      |
//!
//! Every audio payload is zero-filled (silence), so the trace can name it by length.

use crate::{
    ClosedAt, ClosedWindow, Pipeline, PipelineConfig, Result, TickOutcome, duplex_voice_oracle,
};
use bytes::Bytes;
use jouleclaw_jcr1::Estimator;
use jouleclaw_jcr1::cose::SoftwareSigner;
use jouleclaw_stream::{StreamSpec, Tick, TickKind, TickMarker, duplex};
use std::sync::Arc;

/// The demo's steward (the seed vectors').
pub const STEWARD: &str = "did:keri:EJ9testStewardAID000000000000000";
/// The demo's stream id (the seed vectors').
pub const STREAM_ID: &str = "stream-demo";
/// Stream time 0 of the demo: 2026-06-05T00:00:00Z, the seed vectors' day, so window 1
/// closes at `00:00:00`, window 7 at `00:00:01` and window 12 at `00:00:02`, as there.
pub const EPOCH_UNIX: i64 = 1_780_617_600;
/// Windows in the story.
pub const WINDOWS: u64 = 13;
/// The size of the window-9 TTS burst that outruns the rolling budget.
pub const BURST_BYTES: usize = 13_670;

const MS: u64 = 1_000_000;

fn at(ms: u64) -> u64 {
    ms * MS
}

fn payload(window: u64, channel: u32, kind: TickKind, bytes: Bytes, ms: u64) -> Tick {
    Tick::new(window, channel, kind, bytes, at(ms))
}

fn mic(w: u64, ms: u64) -> Tick {
    let pcm = Bytes::from(vec![0u8; duplex::MIC_BYTES_PER_WINDOW]);
    payload(w, duplex::MIC, TickKind::Audio, pcm, ms)
}

fn tts(w: u64, len: usize, ms: u64) -> Tick {
    payload(
        w,
        duplex::TTS,
        TickKind::Audio,
        Bytes::from(vec![0u8; len]),
        ms,
    )
}

fn text(w: u64, channel: u32, s: &'static str, ms: u64) -> Tick {
    payload(
        w,
        channel,
        TickKind::Text,
        Bytes::from_static(s.as_bytes()),
        ms,
    )
}

fn marker(w: u64, channel: u32, m: TickMarker, ms: u64) -> Tick {
    Tick::marker(w, channel, m, at(ms))
}

/// The story's ticks, in stream order.
pub fn ticks() -> Vec<Tick> {
    use TickMarker::{BargeIn, End, EndOfTurn, Start};
    use duplex::{ASR, CONTROL, LLM, SUBSTRATE, TTS};
    let tts_frame = duplex::TTS_BYTES_PER_WINDOW;
    vec![
        // 0-2: the user asks.
        marker(0, CONTROL, Start, 0),
        mic(0, 0),
        mic(1, 200),
        text(1, ASR, "what's the weather in lisbon", 350),
        mic(2, 400),
        marker(2, CONTROL, EndOfTurn, 520),
        text(
            2,
            SUBSTRATE,
            r#"{"city":"Lisbon","sky":"clear","temp_c":24,"wind_kmh":11}"#,
            560,
        ),
        // 3-5: the agent answers.
        mic(3, 600),
        marker(3, TTS, Start, 605),
        text(
            3,
            LLM,
            "It's clear and 24 degrees in Lisbon right now.",
            610,
        ),
        tts(3, tts_frame, 630),
        mic(4, 800),
        tts(4, tts_frame, 810),
        mic(5, 1000),
        tts(5, tts_frame, 1010),
        // 6: barge-in; the agent stops within the deadline.
        mic(6, 1200),
        tts(6, tts_frame, 1210),
        marker(6, CONTROL, BargeIn, 1240),
        tts(6, 1200, 1300),
        marker(6, TTS, End, 1330),
        // 7-8: the user asks again; the agent answers.
        mic(7, 1400),
        text(7, ASR, "and tomorrow in porto", 1500),
        marker(7, CONTROL, EndOfTurn, 1580),
        mic(8, 1600),
        text(
            8,
            SUBSTRATE,
            r#"{"city":"Porto","sky":"rain","temp_c":17}"#,
            1620,
        ),
        marker(8, TTS, Start, 1630),
        text(8, LLM, "Tomorrow Porto gets rain and 17 degrees.", 1640),
        tts(8, tts_frame, 1660),
        // 9: a burst of outbound audio nothing accounts for.
        mic(9, 1800),
        tts(9, tts_frame, 1810),
        tts(9, BURST_BYTES, 1850),
        // 10: barge-in ignored: outbound 170 ms later.
        mic(10, 2000),
        marker(10, CONTROL, BargeIn, 2020),
        tts(10, 1200, 2060),
        tts(10, 1200, 2190),
        // 11-12: the agent stops; thanks; the end.
        mic(11, 2200),
        marker(11, TTS, End, 2210),
        text(11, ASR, "ok thanks", 2300),
        marker(11, CONTROL, EndOfTurn, 2380),
        mic(12, 2400),
        marker(12, CONTROL, End, 2590),
    ]
}

/// The demo's pipeline: the duplex-voice spec and oracle, `closed_at` in stream time from
/// [`EPOCH_UNIX`], the default ledger policy and energy [`Estimator`], signed with the RFC
/// 8032 TEST 1 key (public: for demos and tests only).
pub fn pipeline() -> Result<Pipeline> {
    Pipeline::new(
        Arc::new(StreamSpec::duplex_voice_default()),
        PipelineConfig::new(STEWARD, STREAM_ID).with_closed_at(ClosedAt::StreamTime {
            epoch_unix: EPOCH_UNIX,
        }),
        duplex_voice_oracle(),
        Estimator::default(),
        Box::new(SoftwareSigner::rfc8032_test_key()),
    )
}

/// A run of the story: every tick's outcome (with its closed window moved out) and every
/// closed window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoRun {
    /// The ticks, in order.
    pub ticks: Vec<Tick>,
    /// Each tick's outcome; `closed` is always `None` here (see `windows`).
    pub outcomes: Vec<TickOutcome>,
    /// The closed windows, in order.
    pub windows: Vec<ClosedWindow>,
}

/// Runs the story through [`pipeline`].
pub fn run() -> Result<DemoRun> {
    let mut p = pipeline()?;
    let ticks = ticks();
    let mut outcomes = Vec::with_capacity(ticks.len());
    let mut windows = Vec::new();
    for tick in &ticks {
        let mut outcome = p.push(tick.clone())?;
        windows.extend(outcome.closed.take());
        outcomes.push(outcome);
    }
    windows.extend(p.close_window()?);
    Ok(DemoRun {
        ticks,
        outcomes,
        windows,
    })
}
