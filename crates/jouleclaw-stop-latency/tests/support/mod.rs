//! A scripted stream driven through the pipeline with the meter beside it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bytes::Bytes;
use jouleclaw_jcr1::cose::SoftwareSigner;
use jouleclaw_jcr1::{Estimator, StreamWindowReceipt};
use jouleclaw_pipeline::{ClosedAt, ClosedWindow, Pipeline, PipelineConfig, duplex_voice_oracle};
use jouleclaw_stop_latency::*;
use jouleclaw_stream::{StreamSpec, Tick, TickKind, TickMarker, duplex};

pub const STEWARD: &str = "did:example:steward";
pub const STREAM: &str = "call-1";
pub const MS: u64 = 1_000_000;

/// Everything one run produced.
pub struct Run {
    pub lines: Vec<Vec<u8>>,
    pub receipts: Vec<(StreamWindowReceipt, [u8; 32])>,
    pub barge_ins: Vec<BargeIn>,
    pub doc: StopLatencyDocument,
    pub signed: SignedStopLatency,
}

pub fn window(ts: u64) -> u64 {
    ts / (200 * MS)
}

pub fn tts(ts: u64, len: usize) -> Tick {
    Tick::new(
        window(ts),
        duplex::TTS,
        TickKind::Audio,
        Bytes::from(vec![0u8; len]),
        ts,
    )
}

pub fn mic(ts: u64) -> Tick {
    Tick::new(
        window(ts),
        duplex::MIC,
        TickKind::Audio,
        Bytes::from(vec![1u8; 640]),
        ts,
    )
}

pub fn marker(ts: u64, channel: u32, m: TickMarker) -> Tick {
    Tick::marker(window(ts), channel, m, ts)
}

/// A call: mic audio every 20 ms over `[0, end)`, TTS audio (240 B = 10 ms at 12 kHz) every
/// 10 ms over each `speak` span, barge-ins and outbound starts at the given times.
pub fn call(end: u64, speak: &[(u64, u64)], barge: &[u64], starts: &[u64]) -> Vec<Tick> {
    let mut ticks: Vec<(u64, u8, Tick)> = Vec::new();
    let mut t = 0;
    while t < end {
        ticks.push((t, 1, mic(t)));
        t += 20 * MS;
    }
    for &(a, b) in speak {
        let mut t = a;
        while t < b {
            ticks.push((t, 3, tts(t, 240)));
            t += 10 * MS;
        }
    }
    for &b in barge {
        ticks.push((b, 0, marker(b, duplex::CONTROL, TickMarker::BargeIn)));
    }
    for &s in starts {
        ticks.push((s, 2, marker(s, duplex::TTS, TickMarker::Start)));
    }
    ticks.sort_by_key(|(t, order, _)| (*t, *order));
    ticks.into_iter().map(|(_, _, t)| t).collect()
}

pub fn run(ticks: Vec<Tick>) -> Run {
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let signer = SoftwareSigner::rfc8032_test_key();
    let config = PipelineConfig::new(STEWARD, STREAM).with_closed_at(ClosedAt::StreamTime {
        epoch_unix: 1_780_617_600,
    });
    let mut p = Pipeline::new(
        spec.clone(),
        config,
        duplex_voice_oracle(),
        Estimator::default(),
        Box::new(SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap();
    let mut meter = StopLatencyMeter::new();
    let mut closed: Vec<ClosedWindow> = Vec::new();
    for tick in ticks {
        let dir = spec.channel(tick.channel_id).unwrap().direction;
        let copy = tick.clone();
        let out = p.push(tick).unwrap();
        meter.observe(&copy, dir).unwrap();
        closed.extend(out.closed);
    }
    let fin = p.finish().unwrap();
    closed.extend(fin.last);
    meter.finish();
    let lines: Vec<Vec<u8>> = closed.iter().map(|w| w.canonical.clone()).collect();
    let receipts: Vec<(StreamWindowReceipt, [u8; 32])> = closed
        .iter()
        .map(|w| (w.receipt.clone(), *w.content_hash.as_bytes()))
        .collect();
    let hashes: Vec<[u8; 32]> = receipts.iter().map(|(_, h)| *h).collect();
    let doc = StopLatencyDocument::new(STEWARD, STREAM, meter.barge_ins(), &hashes).unwrap();
    let signed = sign(&signer, &doc).unwrap();
    Run {
        lines,
        receipts,
        barge_ins: meter.barge_ins().to_vec(),
        doc,
        signed,
    }
}

/// Polite: speaks 0.5-1.1 s, barge-in at 1.04 s (stops 50 ms later), speaks again after an
/// outbound start at 1.6 s.
pub fn polite() -> Vec<Tick> {
    call(
        2000 * MS,
        &[(500 * MS, 1090 * MS), (1600 * MS, 1800 * MS)],
        &[1040 * MS],
        &[1600 * MS],
    )
}

/// Rude: barge-in at 1.04 s, speaks on to 1.5 s.
pub fn rude() -> Vec<Tick> {
    call(1800 * MS, &[(500 * MS, 1500 * MS)], &[1040 * MS], &[])
}
