//! The seal profile's COSE structures: byte-for-byte against coset, strict verification, and
//! the torsion filter.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use coset::cbor::value::Value;
use coset::{CborSerializable, CoseSign1, Header, HeaderBuilder, TaggedCborSerializable, iana};
use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
use curve25519_dalek::edwards::EdwardsPoint;
use curve25519_dalek::scalar::Scalar;
use ed25519_dalek::{Signature, VerifyingKey};
use jouleclaw_jcr1::UtcSecond;
use jouleclaw_jcr1::cose::{Signer, SoftwareSigner, kid};
use jouleclaw_seal::*;
use sha2::{Digest, Sha512};

fn entry(i: u64) -> [u8; 32] {
    *blake3::hash(&i.to_le_bytes()).as_bytes()
}

/// A log of `entry(i)` for each `i` of `ids`, in order.
fn log_of(ids: impl IntoIterator<Item = u64>) -> MerkleLog {
    let mut log = MerkleLog::default();
    for i in ids {
        log.append(&entry(i)).unwrap();
    }
    log
}

fn at(secs: i64) -> UtcSecond {
    UtcSecond::from_unix(1_780_617_600 + secs).unwrap()
}

fn coset_protected(seal: &StreamSeal, kid: &[u8; 32]) -> Vec<u8> {
    HeaderBuilder::new()
        .algorithm(iana::Algorithm::EdDSA)
        .key_id(kid.to_vec())
        .value(
            15,
            Value::Map(vec![
                (Value::from(1), Value::Text(seal.steward.clone())),
                (Value::from(2), Value::Text(seal.subject())),
            ]),
        )
        .value(395, Value::from(1))
        .value(-65537, Value::Bytes(seal.encode().unwrap()))
        .build()
        .to_vec()
        .unwrap()
}

fn coset_proof(a: u64, b: u64, path: &[Hash]) -> Vec<u8> {
    Value::Array(vec![
        Value::from(a),
        Value::from(b),
        Value::Array(path.iter().map(|h| Value::Bytes(h.to_vec())).collect()),
    ])
    .to_vec()
    .unwrap()
}

fn coset_unprotected(label: i64, proof: Vec<u8>) -> Header {
    HeaderBuilder::new()
        .value(
            396,
            Value::Map(vec![(
                Value::from(label),
                Value::Array(vec![Value::Bytes(proof)]),
            )]),
        )
        .build()
}

fn coset_envelope(protected: &[u8], unprotected: Header, signature: &[u8]) -> Vec<u8> {
    let sign1 = CoseSign1 {
        protected: coset::ProtectedHeader::from_cbor_bstr(Value::Bytes(protected.to_vec()))
            .unwrap(),
        unprotected,
        payload: None,
        signature: signature.to_vec(),
    };
    sign1.to_tagged_vec().unwrap()
}

/// Every CBOR head size the profile reaches: names of 1 to 4,090 bytes, tree sizes past 2^8,
/// 2^16 and 2^32 in the proof (large sizes through the proof encoder only).
#[test]
fn the_direct_structures_are_byte_identical_to_coset() {
    let signer = SoftwareSigner::rfc8032_test_key();
    let k = kid(&signer.verifying_key());
    let lens = [1, 23, 24, 255, 256, 4090];
    for (i, &steward_len) in lens.iter().enumerate() {
        let stream_id = "x".repeat(lens[lens.len() - 1 - i]);
        let steward = "s".repeat(steward_len);
        let mut sealer = StreamSealer::new(&stream_id, &steward, 1 << 10);
        let mut batches = Vec::new();
        for w in 0..300u64 {
            sealer.append(w * 2, &entry(w), at(w as i64)).unwrap();
            if w == 2 || w == 299 {
                batches.push(sealer.checkpoint(&signer, w == 299).unwrap());
            }
        }
        for b in &batches {
            let c = &b.checkpoint;
            assert_eq!(c.protected, coset_protected(&c.seal, &k));
            // Sig_structure through coset's own builder (detached payload = root).
            let sign1 = CoseSign1::from_tagged_slice(&c.cose_sign1).unwrap();
            assert_eq!(c.to_be_signed, sign1.tbs_detached_data(&c.seal.root, b""));
            let unprotected = match &c.consistency {
                Some(p) => coset_unprotected(-2, coset_proof(p.first_size, p.second_size, &p.path)),
                None => Header::default(),
            };
            assert_eq!(
                c.cose_sign1,
                coset_envelope(&c.protected, unprotected, &c.signature)
            );
            for (j, (_, r)) in b.inclusion.iter().enumerate() {
                let leaf = b.first_leaf + j as u64;
                let path = sealer
                    .log()
                    .inclusion_proof(leaf, c.seal.tree_size)
                    .unwrap();
                let want = coset_envelope(
                    &c.protected,
                    coset_unprotected(-1, coset_proof(c.seal.tree_size, leaf, &path)),
                    &c.signature,
                );
                assert_eq!(*r, want, "leaf {leaf}");
            }
        }
    }
    for (a, b) in [
        (255, 256),
        (65_535, 65_536),
        (1 << 32, (1 << 32) + 1),
        (23, 24),
    ] {
        let inc = inclusion_unprotected(&InclusionProof {
            tree_size: b,
            leaf_index: a,
            path: vec![[9; 32]],
        });
        let want = coset_unprotected(-1, coset_proof(b, a, &[[9; 32]]))
            .to_vec()
            .unwrap();
        assert_eq!(inc, want, "{a} {b}");
    }
}

fn demo() -> (SoftwareSigner, Vec<SealBatch>) {
    let signer = SoftwareSigner::rfc8032_test_key();
    let mut sealer = StreamSealer::new("stream-demo", "did:example:steward", 1 << 10);
    let mut out = Vec::new();
    for w in 0..9u64 {
        sealer.append(w + 1, &entry(w), at(w as i64)).unwrap();
        if w == 4 || w == 8 {
            out.push(sealer.checkpoint(&signer, w == 8).unwrap());
        }
    }
    (signer, out)
}

#[test]
fn every_single_byte_change_of_an_inclusion_receipt_is_refused() {
    let (signer, batches) = demo();
    let key = signer.verifying_key();
    let good = batches[1].inclusion[2].1.clone();
    let e = entry(7);
    assert_eq!(
        verify_inclusion_receipt(&good, &e, &key)
            .unwrap()
            .leaf_index,
        7
    );
    let mut refused = 0;
    for i in 0..good.len() {
        for v in [0x01u8, 0x80, 0xff] {
            let mut m = good.clone();
            m[i] ^= v;
            assert!(
                verify_inclusion_receipt(&m, &e, &key).is_err(),
                "byte {i} ^ {v:#x}"
            );
            refused += 1;
        }
        let mut m = good.clone();
        m.remove(i);
        assert!(
            verify_inclusion_receipt(&m, &e, &key).is_err(),
            "byte {i} removed"
        );
        let mut m = good.clone();
        m.insert(i, 0);
        assert!(
            verify_inclusion_receipt(&m, &e, &key).is_err(),
            "0 inserted at {i}"
        );
        refused += 2;
    }
    assert_eq!(refused, good.len() * 5);
}

#[test]
fn every_single_byte_change_of_a_checkpoint_is_refused_or_changes_only_its_consistency_proof() {
    let (signer, batches) = demo();
    let key = signer.verifying_key();
    let good = batches[1].checkpoint.cose_sign1.clone();
    let first = verify_checkpoint(&batches[0].checkpoint.cose_sign1, &key).unwrap();
    let ok = verify_checkpoint(&good, &key).unwrap();
    assert_eq!(verify_consistency_step(&first.seal, &ok), Ok(()));
    for i in 0..good.len() {
        let mut m = good.clone();
        m[i] ^= 0x01;
        // The consistency proof is unprotected: a change there passes the signature but never
        // the consistency step.
        if let Ok(cp) = verify_checkpoint(&m, &key) {
            assert_eq!(cp.seal, ok.seal);
            assert!(
                verify_consistency_step(&first.seal, &cp).is_err(),
                "byte {i}"
            );
        }
    }
}

#[test]
fn a_checkpoint_is_not_an_inclusion_receipt_and_the_reverse() {
    let (signer, batches) = demo();
    let key = signer.verifying_key();
    let cp = &batches[1].checkpoint.cose_sign1;
    assert_eq!(
        verify_inclusion_receipt(cp, &entry(5), &key)
            .unwrap_err()
            .code(),
        "seal_cose_bad_vdp"
    );
    assert_eq!(
        verify_checkpoint(&batches[1].inclusion[0].1, &key)
            .unwrap_err()
            .code(),
        "seal_cose_bad_vdp"
    );
}

/// A signer with an arbitrary scalar `a`, nonce scalar `r` and torsion points added to `A`
/// and `R`: RFC 8032 signing by hand.
struct Crafted {
    a: Scalar,
    r: Scalar,
    a_torsion: EdwardsPoint,
    r_torsion: EdwardsPoint,
}

impl Crafted {
    fn public(&self) -> EdwardsPoint {
        ED25519_BASEPOINT_POINT * self.a + self.a_torsion
    }
    fn k(&self, r_point: &EdwardsPoint, tbs: &[u8]) -> Scalar {
        let mut h = Sha512::new();
        h.update(r_point.compress().as_bytes());
        h.update(self.public().compress().as_bytes());
        h.update(tbs);
        Scalar::from_bytes_mod_order_wide(&h.finalize().into())
    }
}

impl Signer for Crafted {
    fn verifying_key(&self) -> VerifyingKey {
        VerifyingKey::from_bytes(self.public().compress().as_bytes()).unwrap()
    }
    fn sign(&self, tbs: &[u8]) -> jouleclaw_jcr1::Result<[u8; 64]> {
        let big_r = ED25519_BASEPOINT_POINT * self.r + self.r_torsion;
        let k = self.k(&big_r, tbs);
        let s = self.r + k * self.a;
        let mut out = [0u8; 64];
        out[..32].copy_from_slice(big_r.compress().as_bytes());
        out[32..].copy_from_slice(s.as_bytes());
        Ok(out)
    }
}

fn seal_at(secs: i64) -> StreamSeal {
    let mut log = MerkleLog::new(4);
    log.append(&entry(0)).unwrap();
    StreamSeal {
        stream_id: "s".into(),
        steward: "did:example:s".into(),
        tree_size: 1,
        root: log.root(),
        first_window_id: 0,
        last_window_id: 0,
        empty_windows_skipped: 0,
        closed_at: at(secs),
        is_final: true,
        documents: None,
    }
}

#[test]
fn a_clean_hand_made_signature_verifies_so_the_crafting_is_right() {
    let s = Crafted {
        a: Scalar::from(123_456_789u64),
        r: Scalar::from(987_654_321u64),
        a_torsion: EdwardsPoint::default(),
        r_torsion: EdwardsPoint::default(),
    };
    let cp = sign_checkpoint(&s, &seal_at(0), None).unwrap();
    assert!(verify_checkpoint(&cp.cose_sign1, &s.verifying_key()).is_ok());
}

/// A key `A = aB + T` with `T` of order 8 passes `verify_strict` whenever `8 | k`; the seal
/// refuses it anyway. Deleting the torsion check makes this test fail.
#[test]
fn a_key_with_a_torsion_component_is_refused_where_verify_strict_accepts() {
    let s = Crafted {
        a: Scalar::from(123_456_789u64),
        r: Scalar::from(987_654_321u64),
        a_torsion: EIGHT_TORSION[1],
        r_torsion: EdwardsPoint::default(),
    };
    let key = s.verifying_key();
    assert!(!key.is_weak());
    let mut reused = SealVerifier::new(key);
    let mut found = 0;
    for secs in 0..120 {
        if found == 2 {
            break;
        }
        let cp = sign_checkpoint(&s, &seal_at(secs), None).unwrap();
        let sig = Signature::from_bytes(&cp.signature);
        if key.verify_strict(&cp.to_be_signed, &sig).is_ok() {
            assert_eq!(
                verify_checkpoint(&cp.cose_sign1, &key).unwrap_err().code(),
                "seal_cose_torsion"
            );
            // A verifier made once for the key (its torsion check run once) refuses it at
            // every checkpoint, the second time too.
            for _ in 0..2 {
                assert_eq!(
                    reused.verify_checkpoint(&cp.cose_sign1).unwrap_err().code(),
                    "seal_cose_torsion"
                );
            }
            found += 1;
        } else {
            assert!(verify_checkpoint(&cp.cose_sign1, &key).is_err());
        }
    }
    // k is uniform mod 8: one message in eight passes verify_strict.
    assert_eq!(found, 2);
}

/// An `R` with a torsion component under a clean key: refused, by `verify_strict` itself (the
/// cofactorless equation cannot hold: `[s]B - [k]A` has no torsion component), so the seal
/// checks no `R` apart.
#[test]
fn a_signature_r_with_a_torsion_component_is_refused() {
    for (t, torsion) in EIGHT_TORSION.iter().enumerate().skip(1) {
        let s = Crafted {
            a: Scalar::from(5u64),
            r: Scalar::from(7u64),
            a_torsion: EdwardsPoint::default(),
            r_torsion: *torsion,
        };
        let cp = sign_checkpoint(&s, &seal_at(0), None).unwrap();
        let sig = Signature::from_bytes(&cp.signature);
        assert!(
            s.verifying_key()
                .verify_strict(&cp.to_be_signed, &sig)
                .is_err(),
            "{t}"
        );
        assert_eq!(
            verify_checkpoint(&cp.cose_sign1, &s.verifying_key())
                .unwrap_err()
                .code(),
            "seal_cose_bad_signature",
            "{t}"
        );
    }
}

#[test]
fn the_sealer_refuses_non_increasing_windows_and_anything_after_the_final_seal() {
    let signer = SoftwareSigner::rfc8032_test_key();
    let mut sealer = StreamSealer::new("s", "st", 8);
    assert_eq!(
        sealer.checkpoint(&signer, false).unwrap_err().code(),
        "size_out_of_range"
    );
    sealer.append(3, &entry(0), at(0)).unwrap();
    assert_eq!(
        sealer.append(3, &entry(1), at(0)).unwrap_err().code(),
        "window_not_increasing"
    );
    assert_eq!(
        sealer.append(2, &entry(1), at(0)).unwrap_err().code(),
        "window_not_increasing"
    );
    assert_eq!(sealer.size(), 1);
    let b = sealer.checkpoint(&signer, false).unwrap();
    assert_eq!((b.first_leaf, b.inclusion.len()), (0, 1));
    // A checkpoint at an unchanged size carries no consistency proof and no new receipts.
    let b = sealer.checkpoint(&signer, true).unwrap();
    assert_eq!((b.first_leaf, b.inclusion.len()), (1, 0));
    assert!(b.checkpoint.consistency.is_none());
    assert_eq!(
        sealer.append(4, &entry(1), at(0)).unwrap_err().code(),
        "seal_finished"
    );
    assert_eq!(
        sealer.checkpoint(&signer, true).unwrap_err().code(),
        "seal_finished"
    );
}

#[test]
fn empty_windows_skipped_counts_the_gaps_between_first_and_last() {
    let signer = SoftwareSigner::rfc8032_test_key();
    let mut sealer = StreamSealer::new("s", "st", 8);
    for w in [5, 6, 9, 12] {
        sealer.append(w, &entry(w), at(0)).unwrap();
    }
    let seal = sealer.checkpoint(&signer, true).unwrap().checkpoint.seal;
    assert_eq!(
        (
            seal.first_window_id,
            seal.last_window_id,
            seal.empty_windows_skipped
        ),
        (5, 12, 4)
    );
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any edit of a valid receipt or checkpoint (several bytes changed, cut or extended)
        /// is refused without panicking, unless it leaves the bytes unchanged.
        #[test]
        fn random_edits_never_panic_and_never_pass_as_another_leaf(
            edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
            cut in any::<prop::sample::Index>(),
            mode in 0u8..3,
        ) {
            let (signer, batches) = demo();
            let key = signer.verifying_key();
            let good = batches[1].inclusion[1].1.clone();
            let mut m = good.clone();
            match mode {
                0 => for (i, v) in &edits {
                    let at = i.index(m.len());
                    m[at] = *v;
                },
                1 => m.truncate(cut.index(m.len())),
                _ => m.extend(edits.iter().map(|(_, v)| *v)),
            }
            let r = verify_inclusion_receipt(&m, &entry(6), &key);
            prop_assert_eq!(r.is_ok(), m == good);
            prop_assert!(verify_inclusion_receipt(&m, &entry(5), &key).is_err());
            let _ = verify_checkpoint(&m, &key);
        }
    }
}

#[test]
fn the_seal_verifier_checks_each_signature_once_and_never_lets_a_changed_one_through() {
    let (signer, batches) = demo();
    let key = signer.verifying_key();
    let mut v = SealVerifier::new(key);
    for b in &batches {
        assert_eq!(
            v.verify_checkpoint(&b.checkpoint.cose_sign1).unwrap(),
            verify_checkpoint(&b.checkpoint.cose_sign1, &key).unwrap()
        );
        for (j, (_, r)) in b.inclusion.iter().enumerate() {
            let e = entry(b.first_leaf + j as u64);
            assert_eq!(
                v.verify_inclusion_receipt(r, &e).unwrap(),
                verify_inclusion_receipt(r, &e, &key).unwrap()
            );
        }
    }
    // The same signature under another protected header (the seal changed to final): the
    // cache is keyed by the signed bytes too, so this is checked and refused.
    let cp = &batches[0].checkpoint;
    let mut changed = cp.seal.clone();
    changed.is_final = true;
    let protected = protected_bytes(&changed, &changed.encode().unwrap(), &kid(&key));
    let mut forged = vec![0xd2, 0x84, 0x59];
    forged.extend_from_slice(&(protected.len() as u16).to_be_bytes());
    forged.extend_from_slice(&protected);
    forged.extend_from_slice(&[0xa0, 0xf6, 0x58, 0x40]);
    forged.extend_from_slice(&cp.signature);
    assert_eq!(
        v.verify_checkpoint(&forged).unwrap_err().code(),
        "seal_cose_bad_signature"
    );
    // A flipped signature bit on an already verified receipt.
    let mut bad = batches[0].inclusion[0].1.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    assert_eq!(
        v.verify_inclusion_receipt(&bad, &entry(0))
            .unwrap_err()
            .code(),
        "seal_cose_bad_signature"
    );
}

/// A stored checkpoint and the receipts' log give back every inclusion receipt the sealer
/// issued, byte for byte; a log whose leaves are not the sealed ones, a leaf past the
/// checkpoint, a log shorter than the tree, another key and a flipped signature are refused.
#[test]
fn inclusion_receipts_derived_from_stored_checkpoints_are_the_issued_ones() {
    let signer = SoftwareSigner::rfc8032_test_key();
    let mut sealer = StreamSealer::new("s", "did:example:steward", DEFAULT_MAX_LEAVES);
    let mut issued: Vec<(Vec<u8>, u64, Vec<u8>)> = Vec::new();
    for i in 0..11u64 {
        sealer.append(i * 2, &entry(i), at(i as i64)).unwrap();
        if (i + 1) % 4 == 0 || i == 10 {
            let b = sealer.checkpoint(&signer, i == 10).unwrap();
            for (k, (_, r)) in b.inclusion.into_iter().enumerate() {
                issued.push((b.checkpoint.cose_sign1.clone(), b.first_leaf + k as u64, r));
            }
        }
    }
    assert_eq!(issued.len(), 11);
    let log = log_of(0..11);
    let mut v = SealVerifier::new(signer.verifying_key());
    for (checkpoint, leaf, receipt) in &issued {
        let derived = v
            .derive_inclusion_receipt(checkpoint, &log, *leaf, &entry(*leaf))
            .unwrap();
        assert_eq!(&derived, receipt, "leaf {leaf}");
    }
    let (first_checkpoint, _, _) = &issued[0];
    // A log whose leaf 2 is not the sealed one, and a log shorter than the tree.
    let other = log_of((0..11u64).map(|i| if i == 2 { 99 } else { i }));
    let short = log_of(0..3);
    for (why, log, leaf, content, code) in [
        (
            "a leaf the first checkpoint (4 leaves) does not seal",
            &log,
            4,
            4,
            "proof_index_out_of_range",
        ),
        (
            "the wrong content for leaf 1",
            &log,
            1,
            2,
            "proof_root_mismatch",
        ),
        (
            "leaf 2 is not the sealed one",
            &other,
            0,
            0,
            "proof_root_mismatch",
        ),
        (
            "a log shorter than the tree",
            &short,
            0,
            0,
            "size_out_of_range",
        ),
    ] {
        let e = v
            .derive_inclusion_receipt(first_checkpoint, log, leaf, &entry(content))
            .unwrap_err();
        assert_eq!(e.code(), code, "{why}");
    }
    // Another key's verifier refuses the checkpoint (its kid).
    let other_key = SoftwareSigner::from_seed(&[7; 32]).verifying_key();
    assert!(
        SealVerifier::new(other_key)
            .derive_inclusion_receipt(first_checkpoint, &log, 0, &entry(0))
            .is_err()
    );
    // A flipped signature bit: the derived receipt does not verify.
    let mut flipped = first_checkpoint.clone();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    assert_eq!(
        SealVerifier::new(signer.verifying_key())
            .derive_inclusion_receipt(&flipped, &log, 0, &entry(0))
            .unwrap_err()
            .code(),
        "seal_cose_bad_signature"
    );
}
