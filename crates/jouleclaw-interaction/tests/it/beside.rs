//! `PipelineMeter`: the meter fed beside a real pipeline, as `jouleclaw run` and the Python
//! binding feed it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bytes::Bytes;
use jouleclaw_interaction::{
    EventKind, InteractionConfig, InteractionMeter, PipelineMeter, check_receipts, verify,
};
use jouleclaw_jcr1::Estimator;
use jouleclaw_jcr1::cose::{Signer as _, SoftwareSigner};
use jouleclaw_pipeline::{ClosedWindow, Pipeline, PipelineConfig, duplex_voice_oracle};
use jouleclaw_stream::{StreamSpec, Tick, TickKind, duplex, interaction};

const FRAME: u64 = 200_000_000;

fn pipeline(spec: &Arc<StreamSpec>) -> Pipeline {
    Pipeline::new(
        spec.clone(),
        PipelineConfig::new("did:example:steward", "call-1"),
        duplex_voice_oracle(),
        Estimator::default(),
        Box::new(SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap()
}

/// The user speaks frames 0-2, the agent answers in frames 4-6, the user speaks 9-10.
fn ticks() -> Vec<Tick> {
    let mut out = Vec::new();
    for f in 0..12u64 {
        let t = f * FRAME;
        let w = t / FRAME;
        out.push(Tick::new(
            w,
            duplex::MIC,
            TickKind::Audio,
            Bytes::from(vec![0u8; 640]),
            t,
        ));
        if matches!(f, 0..=2 | 9 | 10) {
            let m = interaction::marker(interaction::USER_SPEECH);
            out.push(Tick::marker(w, duplex::CONTROL, m, t + 1_000_000));
        }
        if (4..=6).contains(&f) {
            let b = Bytes::from(vec![0u8; 240]);
            out.push(Tick::new(w, duplex::TTS, TickKind::Audio, b, t + 2_000_000));
        }
    }
    out
}

fn content_hashes(windows: &[ClosedWindow]) -> Vec<[u8; 32]> {
    windows.iter().map(|w| *w.content_hash.as_bytes()).collect()
}

#[test]
fn the_document_is_bound_to_every_window_the_pipeline_closed() {
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let mut p = pipeline(&spec);
    let mut meter = PipelineMeter::new(InteractionConfig::default()).unwrap();
    let mut bare = InteractionMeter::new(InteractionConfig::default()).unwrap();
    let mut windows = Vec::new();
    for t in ticks() {
        let outcome = p.push(t.clone()).unwrap();
        meter.push(&t, &outcome, &spec).unwrap();
        bare.observe(&t, outcome.direction).unwrap();
        windows.extend(outcome.closed);
    }
    let last = p.end_windows().unwrap().unwrap();
    meter.closed(&last);
    windows.push(last);
    assert_eq!(meter.content_hashes(), content_hashes(&windows).as_slice());
    let signer = SoftwareSigner::rfc8032_test_key();
    let signed = meter
        .finish_signed(&signer, "did:example:steward", "call-1")
        .unwrap();
    let doc = &signed.document;
    // The same events as the bare meter fed the same ticks.
    assert_eq!(doc.events, bare.finish().unwrap());
    assert_eq!(doc.events[0].kind, EventKind::Response);
    assert_eq!(doc.events[0].latency_ticks, Some(1));
    assert_eq!(doc.window_count, 12);
    let receipts: Vec<_> = windows
        .iter()
        .map(|w| (w.receipt.clone(), *w.content_hash.as_bytes()))
        .collect();
    assert!(check_receipts(doc, &receipts).is_empty());
    // Without the last window (a meter that missed `closed`), the binding fails.
    assert!(!check_receipts(doc, &receipts[..11]).is_empty());
    let v = verify(&signed.cose_sign1, &signer.verifying_key()).unwrap();
    assert_eq!(&v.document, doc);
    // After finish the meter refuses ticks and changes nothing.
    let t = Tick::new(20, duplex::MIC, TickKind::Audio, Bytes::new(), 20 * FRAME);
    let outcome = pipeline(&spec).push(t.clone()).unwrap();
    assert_eq!(
        meter.push(&t, &outcome, &spec).unwrap_err().code(),
        "meter_finished"
    );
    assert_eq!(meter.meter().frame_count(), 12);
}
