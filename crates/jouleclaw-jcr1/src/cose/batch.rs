//! Verifying many receipts at once.
//!
//! There is no batch equation here, on purpose. A batch equation cannot reproduce
//! cofactorless (`verify_strict`) verification for a point with a torsion component: an item's
//! random weight multiplies its torsion part, which vanishes whenever the weight is a multiple
//! of its order, so a key holder can grind an `R = rB + T` (T of small order) or a key
//! `A = aB + T` that passes the batch and fails `verify_strict`, Python's `cryptography` and
//! every other cofactorless verifier (Chalkias, Garillot, Nikolaenko, "Taming the many EdDSAs",
//! 2020). Batching only items whose `R` and key are proven torsion-free (`[L]R = O`) agrees with
//! `verify_strict`, but the check costs about one verification per item. Measured in
//! instructions (callgrind, `examples/batch_cost.rs`, 64 receipts): `verify_strict` alone 421k
//! per item, the raw batch equation 189k, the torsion check plus the batch 554k, 1.3 times
//! `verify_strict`. So every item is verified alone.

use super::verify::{KeyResolver, VerifiedReceipt, verify};
use crate::error::CoseRefusal;

/// Verifies many receipts: one result per item, in order, each exactly what
/// [`verify`](super::verify) returns for that item alone (`verify_strict` on every signature).
pub fn verify_batch(
    items: &[&[u8]],
    resolver: &dyn KeyResolver,
) -> Vec<core::result::Result<VerifiedReceipt, CoseRefusal>> {
    items.iter().map(|bytes| verify(bytes, resolver)).collect()
}
