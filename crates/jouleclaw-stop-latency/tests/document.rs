//! The document, its signature and its binding to the receipts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_stop_latency::*;
use jouleclaw_stream_oracle::WindowVerdict;
use support::*;

fn key() -> jouleclaw_jcr1::cose::PublicKey {
    SoftwareSigner::rfc8032_test_key().verifying_key()
}

#[test]
fn a_signed_document_verifies_and_decodes_to_itself() {
    let r = run(rude());
    let v = verify(&r.signed.cose_sign1, &key()).unwrap();
    assert_eq!(v.document, r.doc);
    assert_eq!(v.content_hash, r.signed.content_hash);
    assert_eq!(
        StopLatencyDocument::decode(&r.signed.payload).unwrap(),
        r.doc
    );
    assert_eq!(r.doc.summary(), Some((450 * MS, 450 * MS, 450 * MS)));
}

#[test]
fn another_key_and_any_flipped_byte_are_refused() {
    let r = run(polite());
    let other = SoftwareSigner::from_seed(&[7; 32]).verifying_key();
    assert_eq!(
        verify(&r.signed.cose_sign1, &other).unwrap_err().code(),
        "cose_unknown_kid"
    );
    for i in 0..r.signed.cose_sign1.len() {
        let mut b = r.signed.cose_sign1.clone();
        b[i] ^= 0x01;
        assert!(verify(&b, &key()).is_err(), "byte {i} flipped was accepted");
    }
}

#[test]
fn the_receipts_bind_the_document() {
    let r = run(polite());
    assert!(check_receipts(&r.doc, &r.receipts).is_empty());
    assert!(required(
        &r.receipts
            .iter()
            .map(|(x, _)| x.clone())
            .collect::<Vec<_>>()
    ));
    let codes = |doc: &StopLatencyDocument,
                 rs: &[(jouleclaw_jcr1::StreamWindowReceipt, [u8; 32])]| {
        check_receipts(doc, rs)
            .iter()
            .map(|p| p.code)
            .collect::<Vec<_>>()
    };
    // A receipt removed: count and root.
    let mut fewer = r.receipts.clone();
    fewer.pop();
    assert_eq!(
        codes(&r.doc, &fewer),
        ["window_count_mismatch", "root_mismatch"]
    );
    // A receipt altered: root only.
    let mut altered = r.receipts.clone();
    altered[0].1[0] ^= 1;
    assert_eq!(codes(&r.doc, &altered), ["root_mismatch"]);
    // The barge-in's entry deleted from the document.
    let mut doc = r.doc.clone();
    doc.barge_ins.clear();
    assert_eq!(codes(&doc, &r.receipts), ["yield_unlisted"]);
    // An entry naming a window without a barge-in.
    let mut doc = r.doc.clone();
    doc.barge_ins[0].window_id = 1;
    assert_eq!(
        codes(&doc, &r.receipts),
        ["barge_in_not_yielded", "yield_unlisted"]
    );
    // A window that has no receipt.
    let mut doc = r.doc.clone();
    doc.barge_ins[0].window_id = 99;
    assert_eq!(
        codes(&doc, &r.receipts),
        ["barge_in_window_missing", "yield_unlisted"]
    );
    // Another stream's document.
    let mut doc = r.doc.clone();
    doc.stream_id = "call-2".into();
    assert_eq!(codes(&doc, &r.receipts), ["stream_mismatch"]);
    // A fail verdict dominates the yield: still bound.
    let mut failed = r.receipts.clone();
    let w = failed.iter().position(|(x, _)| x.window_id == 5).unwrap();
    failed[w].0.verdict = WindowVerdict::fail("x", "y");
    // (the content hashes are the caller's: only the verdict changed here)
    assert!(codes(&r.doc, &failed).is_empty());
    failed[w].0.verdict = WindowVerdict::need_more("x", "y");
    assert_eq!(codes(&r.doc, &failed), ["barge_in_not_yielded"]);
}

#[test]
fn removal_is_detected_when_a_barge_in_exists() {
    let r = run(polite());
    let receipts: Vec<_> = r.receipts.iter().map(|(x, _)| x.clone()).collect();
    assert_eq!(missing(&receipts).unwrap().code, "stop_latency_missing");
    let quiet = run(call(1000 * MS, &[(0, 500 * MS)], &[], &[]));
    let receipts: Vec<_> = quiet.receipts.iter().map(|(x, _)| x.clone()).collect();
    assert!(missing(&receipts).is_none());
    assert!(quiet.doc.barge_ins.is_empty());
}

#[test]
fn the_encoder_refuses_what_the_decoder_would() {
    let r = run(polite());
    let mut doc = r.doc.clone();
    doc.steward.clear();
    assert_eq!(doc.encode().unwrap_err().code(), "unencodable");
    let mut doc = r.doc.clone();
    doc.barge_ins[0].ended_by = EndedBy::Open;
    assert_eq!(doc.encode().unwrap_err().code(), "unencodable");
    let mut doc = r.doc.clone();
    doc.barge_ins[0].late_audio_bytes = 1;
    assert_eq!(doc.encode().unwrap_err().code(), "unencodable");
}

mod mutations {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        /// Any byte of a valid document changed: the decoder refuses it, or what it accepts
        /// encodes back to exactly those bytes (one document, one encoding).
        #[test]
        fn a_changed_byte_is_refused_or_is_another_canonical_document(at in 0usize..4096, to in any::<u8>()) {
            let r = run(rude());
            let mut bytes = r.signed.payload.clone();
            let i = at % bytes.len();
            bytes[i] = to;
            if let Ok(doc) = StopLatencyDocument::decode(&bytes) {
                prop_assert_eq!(doc.encode().unwrap(), bytes);
            }
        }
    }
}
