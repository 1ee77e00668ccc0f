//! The meter's cost per tick beside its peer, the rolling ledger, which every accepted tick
//! already goes through (`meter/ledger_observe` is the floor a per-tick judge costs):
//!
//! - `meter/ledger_observe`: the ledger on an outbound 480-byte audio tick;
//! - `meter/observe_idle`: the meter on the same tick with no barge-in measuring;
//! - `meter/observe_1_open`, `meter/observe_16_open`: with 1 and 16 barge-ins measuring;
//! - `meter/document_sign_100`: a finished stream of 100 windows and 8 barge-ins: the document
//!   built (root over 100 hashes), encoded, decoded back and signed.
//!
//! Run with `cargo bench -p jouleclaw-stop-latency --bench meter -- --warm-up-time 1
//! --measurement-time 2`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::hint::black_box;

use bytes::Bytes;
use criterion::{Criterion, criterion_group, criterion_main};
use jouleclaw_jcr1::cose::SoftwareSigner;
use jouleclaw_stop_latency::{StopLatencyDocument, StopLatencyMeter, sign};
use jouleclaw_stream::{
    ChannelDirection, LedgerPolicy, RollingConservationLedger, Tick, TickKind, TickMarker, duplex,
};

fn audio(ts: u64) -> Tick {
    Tick::new(
        0,
        duplex::TTS,
        TickKind::Audio,
        Bytes::from(vec![0u8; 480]),
        ts,
    )
}

fn meter_with(open: usize) -> StopLatencyMeter {
    let mut m = StopLatencyMeter::new();
    for i in 0..open {
        let b = Tick::marker(0, duplex::CONTROL, TickMarker::BargeIn, i as u64);
        m.observe(&b, ChannelDirection::Inbound).unwrap();
    }
    m
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("meter");
    let tick = audio(1_000);
    let mut ledger = RollingConservationLedger::new(LedgerPolicy::default()).unwrap();
    g.bench_function("ledger_observe", |b| {
        b.iter(|| {
            ledger
                .observe(black_box(&tick), ChannelDirection::Outbound)
                .unwrap()
        })
    });
    for (name, open) in [
        ("observe_idle", 0),
        ("observe_1_open", 1),
        ("observe_16_open", 16),
    ] {
        let mut m = meter_with(open);
        g.bench_function(name, |b| {
            b.iter(|| {
                m.observe(black_box(&tick), ChannelDirection::Outbound)
                    .unwrap()
            })
        });
    }
    let mut m = meter_with(8);
    m.observe(&audio(200_000_000), ChannelDirection::Outbound)
        .unwrap();
    m.finish();
    let hashes: Vec<[u8; 32]> = (0..100u8).map(|i| [i; 32]).collect();
    let signer = SoftwareSigner::rfc8032_test_key();
    g.bench_function("document_sign_100", |b| {
        b.iter(|| {
            let doc =
                StopLatencyDocument::new("did:example:steward", "call-1", m.barge_ins(), &hashes)
                    .unwrap();
            sign(&signer, black_box(&doc)).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
