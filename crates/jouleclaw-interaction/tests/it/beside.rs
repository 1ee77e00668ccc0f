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
    let key = jouleclaw_jcr1::cose::ValidKey::new(signer.verifying_key()).unwrap();
    let v = verify(&signed.cose_sign1, &key).unwrap();
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

/// The verifier's key is a `ValidKey`, checked once where it is made: a non-canonical encoding,
/// a small-order key and a key with a torsion component are refused there (`key_refused`, each
/// with its check named) and never reach `verify`; the prime-order neighbour verifies.
#[test]
fn the_verifier_key_is_checked_once_where_it_is_made() {
    use jouleclaw_interaction::{InteractionDocument, sign};
    use jouleclaw_jcr1::cose::ValidKey;
    // y = p + 1 (the identity, not in its canonical encoding), the identity, and -B (the base
    // point plus the point of order 2): each a curve point, each refused, none reaching `verify`.
    let mut non_canonical = [0xff; 32];
    non_canonical[0] = 0xee;
    non_canonical[31] = 0x7f;
    let mut small_order = [0; 32];
    small_order[0] = 1;
    let mut torsion = [0x99; 32];
    torsion[0] = 0x95;
    let refused: Vec<String> = [non_canonical, small_order, torsion]
        .iter()
        .map(|k| {
            let key = ed25519_dalek::VerifyingKey::from_bytes(k).unwrap();
            let e = ValidKey::new(key).unwrap_err();
            format!("{}: {e}", e.code())
        })
        .collect();
    assert_eq!(
        refused,
        [
            "key_refused: public key refused: not the canonical encoding of an Ed25519 public key",
            "key_refused: public key refused: a small-order (weak) Ed25519 public key",
            "key_refused: public key refused: an Ed25519 public key with a torsion component (not of prime order)",
        ]
    );
    let signer = SoftwareSigner::rfc8032_test_key();
    let doc = InteractionDocument::new(
        "did:example:steward",
        "call-1",
        InteractionConfig::default(),
        3,
        &[],
        &[[7; 32]],
    )
    .unwrap();
    let signed = sign(&signer, &doc).unwrap();
    let key = ValidKey::new(signer.verifying_key()).unwrap();
    assert_eq!(verify(&signed.cose_sign1, &key).unwrap().document, doc);
}
