//! The document, its signature and its binding to the receipts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use jouleclaw_jcr1::cose::{Signer, SoftwareSigner, ValidKey};
use jouleclaw_stop_latency::*;
use jouleclaw_stream_oracle::WindowVerdict;
use support::*;

/// A vantage at `point` with `excluded_buffer_ns` left out of the figures.
fn vantage(point: VantagePoint, excluded_buffer_ns: Option<u64>) -> Option<Vantage> {
    Some(Vantage {
        point,
        excluded_buffer_ns,
    })
}

/// The code the decoder refuses `text` with.
fn refusal(text: &str) -> &'static str {
    StopLatencyDocument::decode(text.as_bytes())
        .unwrap_err()
        .code
}

fn key() -> ValidKey {
    ValidKey::new(SoftwareSigner::rfc8032_test_key().verifying_key()).unwrap()
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
    let other = ValidKey::new(SoftwareSigner::from_seed(&[7; 32]).verifying_key()).unwrap();
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

#[test]
fn a_stated_vantage_is_stop_latency_2_and_signs_and_decodes_to_itself() {
    let r = run(rude());
    let mut doc = r.doc.clone();
    doc.vantage = vantage(VantagePoint::Sent, Some(200 * MS));
    assert_eq!(doc.schema_id(), "stop-latency/2");
    let bytes = doc.encode().unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(text.contains(r#""jc_stop_latency":"stop-latency/2","receipts_root""#));
    assert!(text.contains(r#""vantage":{"excluded_buffer_ns":200000000,"point":"sent"}"#));
    assert_eq!(StopLatencyDocument::decode(&bytes).unwrap(), doc);
    let signed = sign(&SoftwareSigner::rfc8032_test_key(), &doc).unwrap();
    assert_eq!(verify(&signed.cose_sign1, &key()).unwrap().document, doc);
    // The values bind to the receipts as a stop-latency/1 document's do.
    assert!(check_receipts(&doc, &r.receipts).is_empty());
    // Unknown buffer: null; played: accepted.
    doc.vantage = vantage(VantagePoint::Played, None);
    let bytes = doc.encode().unwrap();
    assert!(
        String::from_utf8(bytes.clone())
            .unwrap()
            .contains(r#""vantage":{"excluded_buffer_ns":null,"point":"played"}"#)
    );
    assert_eq!(StopLatencyDocument::decode(&bytes).unwrap(), doc);
    // Without a vantage the same document is stop-latency/1, byte for byte as before.
    assert_eq!(r.doc.schema_id(), "stop-latency/1");
    assert_eq!(r.doc.encode().unwrap(), r.signed.payload);
}

#[test]
fn the_vantage_rules_refuse_each_fault_and_its_neighbour_passes() {
    let r = run(polite());
    let mut doc = r.doc.clone();
    doc.vantage = vantage(VantagePoint::Sent, Some(0));
    let good = String::from_utf8(doc.encode().unwrap()).unwrap();
    assert!(StopLatencyDocument::decode(good.as_bytes()).is_ok());
    let refused = |from: &str, to: &str| {
        assert!(good.contains(from), "{from}");
        refusal(&good.replacen(from, to, 1))
    };
    assert_eq!(
        refused(r#""point":"sent""#, r#""point":"heard""#),
        "bad_vantage"
    );
    assert_eq!(refused(r#""point":"sent""#, r#""point":1"#), "wrong_type");
    assert_eq!(
        refused(r#""excluded_buffer_ns":0"#, r#""excluded_buffer_ns":-1"#),
        "negative_unsigned"
    );
    assert_eq!(
        refused(r#""excluded_buffer_ns":0"#, r#""excluded_buffer_ns":true"#),
        "wrong_type"
    );
    assert_eq!(refused(r#""excluded_buffer_ns":0,"#, ""), "missing_field");
    assert_eq!(
        refused(r#""point":"sent""#, r#""point":"sent","x":1"#),
        "unknown_field"
    );
    assert_eq!(
        refused(
            r#""vantage":{"excluded_buffer_ns":0,"point":"sent"}"#,
            r#""vantage":null"#
        ),
        "null"
    );
    // stop-latency/2 without its vantage; stop-latency/1 with one.
    let v1 = String::from_utf8(r.doc.encode().unwrap()).unwrap();
    let without = v1.replacen("stop-latency/1", "stop-latency/2", 1);
    assert_eq!(refusal(&without), "missing_field");
    let with = good.replacen("stop-latency/2", "stop-latency/1", 1);
    assert_eq!(refusal(&with), "unknown_field");
    // Any other id reads the stop-latency/1 field set: a vantage is then unknown, and
    // without one the id itself is refused.
    let other_with = good.replacen("stop-latency/2", "stop-latency/3", 1);
    assert_eq!(refusal(&other_with), "unknown_field");
    let other_without = v1.replacen("stop-latency/1", "stop-latency/3", 1);
    assert_eq!(refusal(&other_without), "wrong_schema");
}

/// The verifier's key is a `ValidKey`, checked once where it is made: a non-canonical encoding,
/// a small-order key and a key with a torsion component are refused there (`key_refused`, each
/// with its check named) and never reach `verify`; the prime-order neighbour verifies.
#[test]
fn the_verifier_key_is_checked_once_where_it_is_made() {
    for (enc, detail) in [
        (
            "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
            "not the canonical encoding of an Ed25519 public key",
        ),
        (
            "0100000000000000000000000000000000000000000000000000000000000000",
            "a small-order (weak) Ed25519 public key",
        ),
        (
            // -B = B + (0, -1): the base point plus the point of order 2.
            "9599999999999999999999999999999999999999999999999999999999999999",
            "an Ed25519 public key with a torsion component (not of prime order)",
        ),
    ] {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(enc, &mut bytes).unwrap();
        let key = ed25519_dalek::VerifyingKey::from_bytes(&bytes).unwrap();
        let e = ValidKey::new(key).unwrap_err();
        assert_eq!(e.code(), "key_refused", "{enc}");
        assert_eq!(
            e.to_string(),
            format!("public key refused: {detail}"),
            "{enc}"
        );
    }
    let r = run(polite());
    assert_eq!(
        verify(&r.signed.cose_sign1, &key()).unwrap().document,
        r.doc
    );
}
