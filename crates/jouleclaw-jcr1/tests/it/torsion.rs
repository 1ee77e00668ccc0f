//! Signatures that only a cofactored or batch equation accepts: every verification entry point
//! refuses them, as `verify_strict`, Python's `cryptography` and noble (zip215: false) do.
//!
//! The forgeries are built by a key holder who knows the nonce `r` and the secret scalar `a`
//! and puts a torsion point `T` into `R = rB + T` (or into the key), then grinds the message
//! until ed25519-dalek's batch equation, whose per-item weights are derived from the inputs,
//! cancels the torsion part. Each test first shows the raw batch equation accepting the forgery,
//! so that it fails when the library's guard is removed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use ed25519_dalek::{Signature, VerifyingKey};
use jouleclaw_jcr1::Result;
use jouleclaw_jcr1::cose::{self, CoseRefusal, SignedReceipt, Signer, SingleKey, SoftwareSigner};
use jouleclaw_testkit::{or_not_run, repo};
use sha2::{Digest, Sha512};

/// How many messages a grind may try. The weight cancels a torsion part of order `n` with
/// probability `1/n` (n <= 8), so failing 400 tries has probability below `(7/8)^400 < 1e-23`.
const GRIND: u64 = 400;

/// Signs with a chosen nonce and a torsion point added to `R` (and optionally to the key).
struct TorsionSigner {
    /// The secret scalar `a`.
    a: Scalar,
    /// The public key: `aB + key_torsion`, encoded as is.
    public: [u8; 32],
    /// The nonce `r`.
    r: Scalar,
    /// Added to `rB`.
    t: EdwardsPoint,
    /// When set, the bytes of `R` (for encodings that `compress` never produces).
    r_encoding: Option<[u8; 32]>,
    /// When set, `S` itself.
    s: Option<Scalar>,
}

impl TorsionSigner {
    fn new(seed: u64, r: Scalar, t: EdwardsPoint, key_torsion: EdwardsPoint) -> Self {
        let a = Scalar::from_bytes_mod_order_wide(&Sha512::digest(seed.to_le_bytes()).into());
        let public = (ED25519_BASEPOINT_POINT * a + key_torsion)
            .compress()
            .to_bytes();
        Self {
            a,
            public,
            r,
            t,
            r_encoding: None,
            s: None,
        }
    }
}

impl Signer for TorsionSigner {
    fn verifying_key(&self) -> VerifyingKey {
        VerifyingKey::from_bytes(&self.public).unwrap()
    }
    fn sign(&self, tbs: &[u8]) -> Result<[u8; 64]> {
        let r_bytes = self
            .r_encoding
            .unwrap_or_else(|| (ED25519_BASEPOINT_POINT * self.r + self.t).compress().0);
        let mut h = Sha512::new();
        h.update(r_bytes);
        h.update(self.public);
        h.update(tbs);
        let k = Scalar::from_bytes_mod_order_wide(&h.finalize().into());
        let s = self.s.unwrap_or(self.r + k * self.a);
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&r_bytes);
        sig[32..].copy_from_slice(s.as_bytes());
        Ok(sig)
    }
}

fn nonce(n: u64) -> Scalar {
    Scalar::from_bytes_mod_order_wide(
        &Sha512::digest([b"nonce".as_slice(), &n.to_le_bytes()].concat()).into(),
    )
}

/// The raw ed25519-dalek batch equation over signed receipts (no guard).
fn raw_batch(items: &[&SignedReceipt], key: &VerifyingKey) -> bool {
    let msgs: Vec<&[u8]> = items.iter().map(|s| s.to_be_signed.as_slice()).collect();
    let sigs: Vec<Signature> = items
        .iter()
        .map(|s| Signature::from_bytes(&s.signature))
        .collect();
    ed25519_dalek::verify_batch(&msgs, &sigs, &vec![*key; items.len()]).is_ok()
}

/// Signs receipts `window_id = 10_000 + i` with `make(i)` until the raw batch equation accepts
/// the forgery at `at` among `good`.
fn grind(good: &[SignedReceipt], at: usize, make: impl Fn(u64) -> TorsionSigner) -> SignedReceipt {
    for i in 0..GRIND {
        let signer = make(i);
        let forged = cose::sign_receipt(&signer, &receipt(10_000 + i)).unwrap();
        let mut all: Vec<&SignedReceipt> = good.iter().collect();
        all.insert(at, &forged);
        if raw_batch(&all, &signer.verifying_key()) {
            return forged;
        }
    }
    panic!("no forgery in {GRIND} tries");
}

/// Every verification entry point refuses `bytes` under `key`, alone and at `at` in `good`
/// (which all verify).
fn refused_everywhere(bytes: &[u8], key: VerifyingKey, good: &[SignedReceipt], at: usize) {
    let resolver = SingleKey::new(key);
    assert_eq!(
        cose::verify(bytes, &resolver).unwrap_err(),
        CoseRefusal::BadSignature
    );
    assert!(!cose::verify_sign1_signature_only(bytes, &key));
    assert_eq!(
        cose::verify_batch(&[bytes], &resolver),
        vec![Err(CoseRefusal::BadSignature)]
    );
    let mut items: Vec<&[u8]> = good.iter().map(|s| s.cose_sign1.as_slice()).collect();
    items.insert(at, bytes);
    let results = cose::verify_batch(&items, &resolver);
    assert_eq!(results.len(), items.len());
    for (i, r) in results.iter().enumerate() {
        if i == at {
            assert_eq!(r, &Err(CoseRefusal::BadSignature), "item {i}");
        } else {
            assert!(r.is_ok(), "item {i}: {r:?}");
        }
    }
    // The streaming sequence reader hands the same items to the same batch.
    let seq: Vec<u8> = items.concat();
    let mut streamed = Vec::new();
    let n =
        cose::verify_sequence(seq.as_slice(), &resolver, 16, |i, r| streamed.push((i, r))).unwrap();
    assert_eq!((n, streamed.len()), (items.len(), items.len()));
    for (k, (i, r)) in streamed.iter().enumerate() {
        assert_eq!(k, *i);
        assert_eq!(r.is_ok(), *i != at, "streamed item {i}: {r:?}");
    }
}

fn good_receipts(signer: &dyn Signer, n: u64) -> Vec<SignedReceipt> {
    (0..n)
        .map(|w| cose::sign_receipt(signer, &receipt(w)).unwrap())
        .collect()
}

#[test]
fn a_mixed_order_r_alone_passes_the_raw_batch_and_is_refused_by_every_entry_point() {
    for (ti, t) in EIGHT_TORSION.iter().enumerate().skip(1) {
        let forged = grind(&[], 0, |i| {
            TorsionSigner::new(1, nonce(i), *t, EdwardsPoint::default())
        });
        let key = TorsionSigner::new(1, Scalar::ONE, *t, EdwardsPoint::default()).verifying_key();
        // R is of mixed order: not small, not torsion-free.
        let r = CompressedEdwardsY(forged.signature[..32].try_into().unwrap())
            .decompress()
            .unwrap();
        assert!(!r.is_small_order() && !r.is_torsion_free(), "torsion {ti}");
        refused_everywhere(&forged.cose_sign1, key, &[], 0);
    }
}

#[test]
fn a_mixed_order_r_hidden_in_a_batch_of_64_is_refused_and_the_other_63_verify() {
    let honest = TorsionSigner::new(
        2,
        Scalar::ZERO,
        EdwardsPoint::default(),
        EdwardsPoint::default(),
    );
    // Honest signatures by the same key: a fresh nonce per receipt, no torsion.
    let good: Vec<SignedReceipt> = (0..63)
        .map(|w| {
            let s = TorsionSigner::new(
                2,
                nonce(1_000_000 + w),
                EdwardsPoint::default(),
                EdwardsPoint::default(),
            );
            cose::sign_receipt(&s, &receipt(w)).unwrap()
        })
        .collect();
    let key = honest.verifying_key();
    let forged = grind(&good, 37, |i| {
        TorsionSigner::new(2, nonce(i), EIGHT_TORSION[4], EdwardsPoint::default())
    });
    refused_everywhere(&forged.cose_sign1, key, &good, 37);
}

#[test]
fn each_small_order_r_is_refused_even_when_the_raw_batch_accepts_it() {
    // R = T exactly (r = 0), S = k·a: [S]B - [k]A = O, so only the torsion part remains.
    let good = good_receipts(&SoftwareSigner::rfc8032_test_key(), 0);
    for (ti, t) in EIGHT_TORSION.iter().enumerate() {
        let forged = grind(&good, 0, |_| {
            TorsionSigner::new(3, Scalar::ZERO, *t, EdwardsPoint::default())
        });
        let key = TorsionSigner::new(3, Scalar::ZERO, *t, EdwardsPoint::default()).verifying_key();
        assert!(
            CompressedEdwardsY(forged.signature[..32].try_into().unwrap())
                .decompress()
                .unwrap()
                .is_small_order(),
            "torsion {ti}"
        );
        refused_everywhere(&forged.cose_sign1, key, &good, 0);
    }
    // The non-canonical encodings of small-order points: y + p for y = 0 and 1, and the sign
    // bit on the two points with x = 0.
    let mut encodings = Vec::new();
    for low in [0xed, 0xee] {
        let mut b = [0xff; 32];
        b[0] = low;
        b[31] = 0x7f;
        encodings.push(b);
        b[31] = 0xff;
        encodings.push(b);
    }
    for t in [EIGHT_TORSION[0], EIGHT_TORSION[4]] {
        let mut b = t.compress().0;
        b[31] |= 0x80;
        encodings.push(b);
    }
    for enc in encodings {
        assert!(
            CompressedEdwardsY(enc)
                .decompress()
                .unwrap()
                .is_small_order()
        );
        let forged = grind(&good, 0, |_| TorsionSigner {
            r_encoding: Some(enc),
            ..TorsionSigner::new(
                3,
                Scalar::ZERO,
                EdwardsPoint::default(),
                EdwardsPoint::default(),
            )
        });
        let key = TorsionSigner::new(
            3,
            Scalar::ZERO,
            EdwardsPoint::default(),
            EdwardsPoint::default(),
        )
        .verifying_key();
        refused_everywhere(&forged.cose_sign1, key, &good, 0);
    }
}

#[test]
fn identity_r_with_s_zero_under_each_small_order_key_is_refused() {
    let good = good_receipts(&SoftwareSigner::rfc8032_test_key(), 0);
    for (ti, t) in EIGHT_TORSION.iter().enumerate() {
        let signer = TorsionSigner {
            a: Scalar::ZERO,
            public: t.compress().0,
            r: Scalar::ZERO,
            t: EdwardsPoint::default(),
            r_encoding: None,
            s: Some(Scalar::ZERO),
        };
        let key = signer.verifying_key();
        assert!(key.is_weak(), "torsion {ti}");
        let forged = cose::sign_receipt(&signer, &receipt(1)).unwrap();
        assert_eq!(forged.signature[..32], EdwardsPoint::default().compress().0);
        if ti == 0 {
            // Under the identity key the cofactorless equation holds: only the strict
            // small-order checks refuse it.
            let sig = Signature::from_bytes(&forged.signature);
            assert!(key.verify_strict(&forged.to_be_signed, &sig).is_err());
            assert!(raw_batch(&[&forged], &key));
        }
        refused_everywhere(&forged.cose_sign1, key, &good, 0);
    }
}

#[test]
fn a_weak_key_is_refused_whatever_the_signature() {
    // Every small-order key A = T with a = 0: S = r and R = rB, so [S]B - [k]A = R - [k]T,
    // which the raw batch accepts whenever its weight cancels [k]T.
    for (ti, t) in EIGHT_TORSION.iter().enumerate().skip(1) {
        let forged = grind(&[], 0, |i| TorsionSigner {
            a: Scalar::ZERO,
            public: t.compress().0,
            r: nonce(i),
            t: EdwardsPoint::default(),
            r_encoding: None,
            s: None,
        });
        let key = VerifyingKey::from_bytes(&t.compress().0).unwrap();
        assert!(key.is_weak(), "torsion {ti}");
        refused_everywhere(&forged.cose_sign1, key, &[], 0);
    }
}

#[test]
fn a_mixed_order_key_is_refused_even_where_verify_strict_accepts() {
    // A = aB + T. verify_strict accepts exactly when [k]T = O; the raw batch also whenever the
    // weight cancels [k]T. Grind a forgery that the raw batch accepts and verify_strict refuses.
    let good: Vec<SignedReceipt> = Vec::new();
    let t = EIGHT_TORSION[4];
    let mut found = None;
    for i in 0..GRIND {
        let signer = TorsionSigner::new(4, nonce(i), EdwardsPoint::default(), t);
        let key = signer.verifying_key();
        let s = cose::sign_receipt(&signer, &receipt(20_000 + i)).unwrap();
        let strict = key
            .verify_strict(&s.to_be_signed, &Signature::from_bytes(&s.signature))
            .is_ok();
        if !strict && raw_batch(&[&s], &key) {
            found = Some((s, key));
            break;
        }
    }
    let (forged, key) = found.expect("a forgery");
    refused_everywhere(&forged.cose_sign1, key, &good, 0);
    // And one that verify_strict accepts ([k]T = O) is refused all the same: the key has a
    // torsion component, which Python's, JavaScript's and Go's strict verifiers refuse
    // (conformance/stream-window-signed-negative-extra-vectors.json, cases 6 and 11).
    for i in 0..GRIND {
        let signer = TorsionSigner::new(4, nonce(i), EdwardsPoint::default(), t);
        let s = cose::sign_receipt(&signer, &receipt(30_000 + i)).unwrap();
        let sig = Signature::from_bytes(&s.signature);
        if key.verify_strict(&s.to_be_signed, &sig).is_ok() {
            refused_everywhere(&s.cose_sign1, key, &good, 0);
            return;
        }
    }
    panic!("no signature that verify_strict accepts");
}

#[test]
fn honest_signatures_still_take_the_batch_and_verify() {
    let good = good_receipts(&SoftwareSigner::rfc8032_test_key(), 64);
    let key = SoftwareSigner::rfc8032_test_key().verifying_key();
    assert!(raw_batch(&good.iter().collect::<Vec<_>>(), &key));
    let items: Vec<&[u8]> = good.iter().map(|s| s.cose_sign1.as_slice()).collect();
    let results = cose::verify_batch(&items, &SingleKey::new(key));
    for (w, r) in results.iter().enumerate() {
        assert_eq!(r.as_ref().unwrap().receipt, receipt(w as u64));
    }
}

/// The strict-Ed25519 negative vectors the other-language verifiers refuse (S >= L,
/// non-canonical, invalid, small-order and mixed-order R and keys): every Rust entry point
/// refuses each one too, so nothing Rust reports verified is refused elsewhere.
#[test]
fn every_strict_negative_vector_is_refused_by_every_entry_point() {
    let text = or_not_run!(repo::file(
        "conformance/stream-window-signed-negative-extra-vectors.json"
    ));
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 11);
    for case in cases {
        let n = &case["n"];
        let cose_bytes = hex::decode(case["cose_sign1_hex"].as_str().unwrap()).unwrap();
        let key_bytes: [u8; 32] = hex::decode(case["public_key_hex"].as_str().unwrap())
            .unwrap()
            .try_into()
            .unwrap();
        // Some keys are not even points; those cannot reach verification at all.
        let Ok(key) = jouleclaw_jcr1::cose::PublicKey::from_bytes(&key_bytes) else {
            continue;
        };
        let resolver = jouleclaw_jcr1::cose::SingleKey::new(key);
        assert!(
            jouleclaw_jcr1::cose::verify(&cose_bytes, &resolver).is_err(),
            "case {n}: verify accepted it"
        );
        assert!(
            jouleclaw_jcr1::cose::verify_batch(&[&cose_bytes], &resolver)[0].is_err(),
            "case {n}: verify_batch accepted it"
        );
        assert!(
            !jouleclaw_jcr1::cose::verify_sign1_signature_only(&cose_bytes, &key),
            "case {n}: verify_sign1_signature_only accepted it"
        );
    }
}

/// `ValidKey::new`'s detail for a key with a torsion component.
const TORSION_DETAIL: &str = "an Ed25519 public key with a torsion component (not of prime order)";

/// The detail of `ValidKey::new`'s refusal of `key`.
fn key_refusal(key: VerifyingKey) -> &'static str {
    match cose::ValidKey::new(key).unwrap_err() {
        jouleclaw_jcr1::Jcr1Error::KeyRefused { detail } => detail,
        other => panic!("{other:?}"),
    }
}

#[test]
fn valid_key_refuses_each_small_order_key_the_identity_included() {
    // The identity is torsion-free ([L]O = O): only the small-order check refuses it.
    for (ti, t) in EIGHT_TORSION.iter().enumerate() {
        let key = VerifyingKey::from_bytes(&t.compress().0).unwrap();
        assert_eq!(
            key_refusal(key),
            "a small-order (weak) Ed25519 public key",
            "torsion {ti}"
        );
        let e = cose::SingleKey::try_new(key).unwrap_err();
        assert_eq!(e.code(), "key_refused");
        // The infallible constructor remembers the refusal; every receipt under the key's kid
        // is refused with the code a bad signature gets, before any signature check.
        let resolver = SingleKey::new(key);
        assert!(resolver.key_refusal().is_some());
        assert_eq!(
            cose::KeyResolver::resolve(&resolver, &cose::kid(&key)),
            Err(CoseRefusal::BadSignature)
        );
    }
}

#[test]
fn valid_key_refuses_a_key_with_a_torsion_component_and_accepts_its_prime_order_part() {
    for (ti, t) in EIGHT_TORSION.iter().enumerate().skip(1) {
        let signer = TorsionSigner::new(5, Scalar::ONE, EdwardsPoint::default(), *t);
        let key = signer.verifying_key();
        assert!(!key.is_weak(), "torsion {ti}");
        assert_eq!(key_refusal(key), TORSION_DETAIL, "torsion {ti}");
    }
    let honest = TorsionSigner::new(
        5,
        Scalar::ONE,
        EdwardsPoint::default(),
        EdwardsPoint::default(),
    );
    let valid = cose::ValidKey::new(honest.verifying_key()).unwrap();
    assert_eq!(valid.verifying_key(), &honest.verifying_key());
    let resolver = SingleKey::new(honest.verifying_key());
    assert!(resolver.key_refusal().is_none());
    let kid = cose::kid(&honest.verifying_key());
    assert_eq!(cose::KeyResolver::resolve(&resolver, &kid), Ok(valid));
    assert_eq!(
        cose::KeyResolver::resolve(&resolver, &[0; 32]),
        Err(CoseRefusal::UnknownKid)
    );
}

#[test]
fn valid_key_refuses_every_non_canonical_encoding_by_its_encoding() {
    // y + p for y < 19 and the sign bit on x = 0: the encodings `compress` never produces.
    // None of these points is of prime order (each is small or mixed order), so the other
    // checks would refuse them too; the encoding check names the fault first, as the other
    // languages' verifiers do.
    let mut encodings = Vec::new();
    for y in 0u8..19 {
        for sign in [0u8, 0x80] {
            let mut enc = [0xff; 32];
            enc[0] = 0xed + y;
            enc[31] = 0x7f | sign;
            encodings.push(enc);
        }
    }
    for t in [EIGHT_TORSION[0], EIGHT_TORSION[4]] {
        let mut enc = t.compress().0;
        enc[31] |= 0x80;
        encodings.push(enc);
    }
    let mut refused = 0;
    for enc in encodings {
        let Ok(key) = VerifyingKey::from_bytes(&enc) else {
            continue;
        };
        assert_ne!(key.to_edwards().compress().0, enc);
        assert_eq!(
            key_refusal(key),
            "not the canonical encoding of an Ed25519 public key",
            "{}",
            hex::encode(enc)
        );
        refused += 1;
    }
    assert!(
        refused >= 6,
        "only {refused} non-canonical encodings decompress"
    );
}

/// The shared profile of signed documents (`cose::document`, used by stop-latency/1 and /2
/// and interaction-metrics/1): it takes a key already accepted ([`cose::ValidKey`]), and a key
/// with a torsion component is refused when the key is made (`key_refused`), even where the
/// cofactorless equation holds; an `R` with a torsion component under a prime-order key is
/// refused by `verify_strict` itself (no separate check of `R`).
#[test]
fn the_document_profile_refuses_a_torsion_key_and_a_mixed_order_r() {
    use cose::document::{self, DocumentCoseCode};
    const CT: &str = "application/vnd.jouleclaw.test+json";
    // A' = aB + T (T of order 2), R = rB, S = r + k·a: [S]B = R + [k]A' exactly when k is
    // even. Find such a message; verify_strict accepts it, the profile must not.
    let mut found = 0;
    for n in 0..64u64 {
        let signer = TorsionSigner::new(5, nonce(n), EdwardsPoint::default(), EIGHT_TORSION[4]);
        let key = signer.verifying_key();
        let signed = document::sign(
            &signer,
            CT,
            "did:example:s",
            "s:doc",
            format!("doc {n}").into_bytes(),
        )
        .unwrap();
        let sig = Signature::from_bytes(
            &signed.cose_sign1[signed.cose_sign1.len() - 64..]
                .try_into()
                .unwrap(),
        );
        if key.verify_strict(&signed.to_be_signed, &sig).is_ok() {
            found += 1;
            assert_eq!(key_refusal(key), TORSION_DETAIL, "message {n}");
            assert_eq!(
                cose::ValidKey::new(key).unwrap_err().code(),
                "key_refused",
                "message {n}"
            );
        }
    }
    assert!(found > 0, "no message made the cofactorless equation hold");
    // A prime-order key and R = rB + T, T of order 8: refused, and so by verify_strict alone.
    let signer = TorsionSigner::new(6, nonce(1), EIGHT_TORSION[1], EdwardsPoint::default());
    let key = signer.verifying_key();
    let signed = document::sign(&signer, CT, "did:example:s", "s:doc", b"doc".to_vec()).unwrap();
    let sig = Signature::from_bytes(
        &signed.cose_sign1[signed.cose_sign1.len() - 64..]
            .try_into()
            .unwrap(),
    );
    assert!(key.verify_strict(&signed.to_be_signed, &sig).is_err());
    let key = cose::ValidKey::new(key).unwrap();
    assert_eq!(
        document::verify(&signed.cose_sign1, &key, CT, 1 << 20).unwrap_err(),
        DocumentCoseCode::BadSignature
    );
    // The neighbour: the same signer without torsion verifies, and its claims come back.
    let signer = TorsionSigner::new(
        6,
        nonce(1),
        EdwardsPoint::default(),
        EdwardsPoint::default(),
    );
    let key = cose::ValidKey::new(signer.verifying_key()).unwrap();
    let signed = document::sign(&signer, CT, "did:example:s", "s:doc", b"doc".to_vec()).unwrap();
    let v = document::verify(&signed.cose_sign1, &key, CT, 1 << 20).unwrap();
    assert_eq!(
        (v.iss.as_str(), v.sub.as_str(), v.payload.as_slice()),
        ("did:example:s", "s:doc", &b"doc"[..])
    );
    assert_eq!(
        document::verify(&signed.cose_sign1, &key, "application/other+json", 1 << 20).unwrap_err(),
        DocumentCoseCode::ContentTypeMismatch
    );
}
