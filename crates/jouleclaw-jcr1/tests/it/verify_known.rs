//! `cose::verify_known`: a payload the caller holds decoded (found by its BLAKE3) is not decoded
//! again, and everything else is checked and refused as `cose::verify` checks and refuses it.
use crate::common::*;
use jouleclaw_jcr1::cose::{
    self, CoseRefusal, KnownReceipt, Signer, SingleKey, SoftwareSigner, VerifiedKnown,
};
use jouleclaw_testkit::or_not_run;

fn signed(r: &jouleclaw_jcr1::StreamWindowReceipt) -> Vec<u8> {
    cose::sign_receipt(&SoftwareSigner::rfc8032_test_key(), r)
        .unwrap()
        .cose_sign1
}

fn resolver() -> SingleKey {
    SingleKey::new(SoftwareSigner::rfc8032_test_key().verifying_key())
}

#[test]
fn a_known_payload_is_matched_and_an_unknown_one_decoded_as_verify_does() {
    let r = or_not_run!(seed_receipt(1));
    let bytes = signed(&r);
    let plain = cose::verify(&bytes, &resolver()).unwrap();
    // Known: the line's steward, stream and window; the same content hash as verify's.
    let v = cose::verify_known(&bytes, &resolver(), |h| {
        (*h == plain.content_hash).then_some(KnownReceipt {
            steward: &r.steward,
            stream_id: &r.stream_id,
            window_id: r.window_id,
        })
    })
    .unwrap();
    assert_eq!(
        v,
        VerifiedKnown::Known {
            content_hash: plain.content_hash,
            window_id: r.window_id
        }
    );
    // Neighbour: no receipt known by that hash, decoded as verify decodes it.
    let v = cose::verify_known(&bytes, &resolver(), |_| None).unwrap();
    assert_eq!(v, VerifiedKnown::Decoded(Box::new(plain.clone())));
    assert_eq!(v.content_hash(), &plain.content_hash);
    assert_eq!(v.window_id(), r.window_id);
}

#[test]
fn iss_and_sub_are_checked_against_the_known_receipt() {
    let r = or_not_run!(seed_receipt(1));
    let bytes = signed(&r);
    let other_steward = format!("{}x", r.steward);
    let other_stream = format!("{}x", r.stream_id);
    let check = |steward: &str, stream_id: &str, window_id: u64| {
        cose::verify_known(&bytes, &resolver(), |_| {
            Some(KnownReceipt {
                steward,
                stream_id,
                window_id,
            })
        })
    };
    assert_eq!(
        check(&other_steward, &r.stream_id, r.window_id),
        Err(CoseRefusal::IssMismatch)
    );
    assert_eq!(
        check(&r.steward, &other_stream, r.window_id),
        Err(CoseRefusal::SubMismatch)
    );
    assert_eq!(
        check(&r.steward, &r.stream_id, r.window_id + 1),
        Err(CoseRefusal::SubMismatch)
    );
    assert!(check(&r.steward, &r.stream_id, r.window_id).is_ok());
}

#[test]
fn a_bad_signature_is_refused_before_any_lookup() {
    let r = or_not_run!(seed_receipt(1));
    let mut bytes = signed(&r);
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    let looked = std::cell::Cell::new(false);
    let v = cose::verify_known(&bytes, &resolver(), |_| {
        looked.set(true);
        None
    });
    assert_eq!(v, Err(CoseRefusal::BadSignature));
    assert_eq!(
        cose::verify(&bytes, &resolver()).map(|_| ()),
        Err(CoseRefusal::BadSignature)
    );
    assert!(!looked.get());
}
