//! Verifying many receipts at once.
//!
//! A batch equation cannot reproduce cofactorless (`verify_strict`) verification for a point
//! with a torsion component: the random weight of an item multiplies its torsion part, which
//! vanishes whenever the weight is a multiple of its order, so a key holder can grind an `R =
//! rB + T` (T of small order) that passes the batch and fails `verify_strict` (Chalkias,
//! Garillot, Nikolaenko, "Taming the many EdDSAs", 2020). An item therefore enters the batch
//! only when the batch provably decides it as `verify_strict` does: its key and its `R` are
//! canonical points of the prime-order subgroup ([`prime_order_r`], [`prime_order_key`]).
//! Every other item is decided by `verify_strict` on its own.

use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use ed25519_dalek::{Signature, VerifyingKey};

use super::verify::{KeyResolver, Prepared, VerifiedReceipt, finish, prepare};
use crate::error::CoseRefusal;

/// Verifies many receipts; one result per item, in order, each exactly what [`super::verify`]
/// returns for that item alone.
///
/// Items that pass checks 1-15 and whose key and `R` are canonical points of prime order
/// (neither small nor mixed order) are checked together with one Ed25519 batch equation; if it
/// fails, each of them is verified on its own so that the result names exactly the bad items.
/// Every other item goes through `verify_strict` alone. Items refused before the signature
/// check are never part of the batch.
pub fn verify_batch(
    items: &[&[u8]],
    resolver: &dyn KeyResolver,
) -> Vec<core::result::Result<VerifiedReceipt, CoseRefusal>> {
    let mut prepared: Vec<Option<core::result::Result<Prepared, CoseRefusal>>> =
        items.iter().map(|b| Some(prepare(b, resolver))).collect();
    // Receipts of one stream share a key: test its order once per run of equal keys.
    let mut last_key: Option<(VerifyingKey, bool)> = None;
    let batchable: Vec<usize> = prepared
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            Some(Ok(p)) => {
                let key_ok = match last_key {
                    Some((k, ok)) if k == p.key => ok,
                    _ => {
                        let ok = prime_order_key(&p.key);
                        last_key = Some((p.key, ok));
                        ok
                    }
                };
                (key_ok && prime_order_r(&p.signature)).then_some(i)
            }
            _ => None,
        })
        .collect();
    let batch_ok = {
        let mut msgs = Vec::with_capacity(batchable.len());
        let mut sigs = Vec::with_capacity(batchable.len());
        let mut keys = Vec::with_capacity(batchable.len());
        for &i in &batchable {
            if let Some(Some(Ok(p))) = prepared.get(i) {
                msgs.push(p.tbs.as_slice());
                sigs.push(p.signature);
                keys.push(p.key);
            }
        }
        !batchable.is_empty() && ed25519_dalek::verify_batch(&msgs, &sigs, &keys).is_ok()
    };
    prepared
        .iter_mut()
        .enumerate()
        .map(|(i, slot)| {
            let p = slot.take().unwrap_or(Err(CoseRefusal::MalformedCbor))?;
            if !(batch_ok && batchable.binary_search(&i).is_ok()) {
                p.key
                    .verify_strict(&p.tbs, &p.signature)
                    .map_err(|_| CoseRefusal::BadSignature)?;
            }
            finish(p)
        })
        .collect()
}

/// `true` when the key is a point of the prime-order subgroup other than the identity: neither
/// weak (small order, which `verify_strict` refuses) nor of mixed order (whose torsion part a
/// batch weight can cancel).
pub(super) fn prime_order_key(key: &VerifyingKey) -> bool {
    prime_order(&key.to_edwards())
}

/// `true` when the signature's `R` is the canonical encoding (`y < p`) of a point of the
/// prime-order subgroup other than the identity. Only then does the batch equation decide this
/// item as `verify_strict` does, which compares the encoding of `[s]B - [k]A` with `R`'s bytes
/// and refuses a small-order `R`. Costs a decompression and a scalar multiplication by the
/// group order, about one single verification.
pub(super) fn prime_order_r(sig: &Signature) -> bool {
    let bytes = *sig.r_bytes();
    canonical_y(&bytes)
        && CompressedEdwardsY(bytes)
            .decompress()
            .is_some_and(|r| prime_order(&r))
}

fn prime_order(p: &EdwardsPoint) -> bool {
    !p.is_small_order() && p.is_torsion_free()
}

/// `true` when the low 255 bits, little-endian, are below `p = 2^255 - 19`. A point with
/// `x = 0` and the sign bit set is also non-canonical, but those two points have small order.
fn canonical_y(bytes: &[u8; 32]) -> bool {
    let mut y = *bytes;
    y[31] &= 0x7f;
    // y >= p exactly when bytes 1..31 are all 0xff (byte 31: 0x7f) and byte 0 >= 0xed.
    !(y[31] == 0x7f && y[1..31].iter().all(|&b| b == 0xff) && y[0] >= 0xed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};

    fn sig_with_r(r: [u8; 32]) -> Signature {
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&r);
        Signature::from_bytes(&sig)
    }

    /// Every encoding of a small-order point (each torsion point, `y + p` where it fits in 255
    /// bits, either sign bit) and every mixed-order point `P + T` is kept out of the batch; the
    /// prime-order multiples of the base point are let in.
    #[test]
    fn only_canonical_prime_order_points_enter_the_batch() {
        let mut small = Vec::new();
        for t in EIGHT_TORSION {
            let mut y = t.compress().to_bytes();
            y[31] &= 0x7f;
            for sign in [0, 0x80] {
                let mut r = y;
                r[31] |= sign;
                small.push(r);
            }
            // y + p fits in 255 bits only for y < 19.
            if y[1..].iter().all(|&b| b == 0) && y[0] < 19 {
                let mut r = [0xff; 32];
                r[0] = 0xed + y[0];
                r[31] = 0x7f;
                small.push(r);
                r[31] = 0xff;
                small.push(r);
            }
        }
        for r in &small {
            if let Some(point) = CompressedEdwardsY(*r).decompress() {
                assert!(point.is_small_order(), "{}", hex::encode(r));
                assert!(!prime_order_r(&sig_with_r(*r)), "{}", hex::encode(r));
                if let Ok(key) = VerifyingKey::from_bytes(r) {
                    assert!(!prime_order_key(&key), "{}", hex::encode(r));
                }
            }
        }
        let mut p = ED25519_BASEPOINT_POINT;
        for i in 0..64 {
            assert!(prime_order_r(&sig_with_r(p.compress().to_bytes())), "{i}");
            let key = VerifyingKey::from_bytes(&p.compress().to_bytes()).unwrap();
            assert!(prime_order_key(&key), "{i}");
            for (ti, t) in EIGHT_TORSION.iter().enumerate().skip(1) {
                let mixed = (p + t).compress().to_bytes();
                assert!(!prime_order_r(&sig_with_r(mixed)), "{i} + T{ti}");
                let key = VerifyingKey::from_bytes(&mixed).unwrap();
                assert!(!prime_order_key(&key), "{i} + T{ti}");
            }
            p += ED25519_BASEPOINT_POINT;
        }
    }

    #[test]
    fn canonical_y_is_below_p() {
        let p_minus_1 = {
            let mut b = [0xff; 32];
            b[0] = 0xec;
            b[31] = 0x7f;
            b
        };
        assert!(canonical_y(&p_minus_1));
        let mut p = p_minus_1;
        p[0] = 0xed;
        assert!(!canonical_y(&p));
        p[31] = 0xff; // the sign bit is not part of y
        assert!(!canonical_y(&p));
        assert!(canonical_y(&[0; 32]));
        let mut high = [0xff; 32];
        high[31] = 0x7e;
        assert!(canonical_y(&high));
    }
}
