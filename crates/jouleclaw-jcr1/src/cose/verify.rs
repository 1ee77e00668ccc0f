//! Single-receipt verification under the profile.

use coset::{CoseSign1, TaggedCborSerializable};
use ed25519_dalek::{Signature, VerifyingKey};

use super::kid;
use super::profile::{PartsRef, parse_general, read_profile, sig_structure};
use crate::decode::decode_receipt;
use crate::error::CoseRefusal;
use crate::receipt::StreamWindowReceipt;

/// Chooses the verification key by `kid`.
pub trait KeyResolver {
    /// The key whose thumbprint is `kid`, if known.
    fn resolve(&self, kid: &[u8]) -> Option<VerifyingKey>;
}

/// A resolver that knows exactly one key.
#[derive(Debug, Clone)]
pub struct SingleKey {
    key: VerifyingKey,
    kid: [u8; 32],
}

impl SingleKey {
    /// The resolver for `key`.
    pub fn new(key: VerifyingKey) -> Self {
        Self {
            kid: kid(&key),
            key,
        }
    }
}

impl KeyResolver for SingleKey {
    fn resolve(&self, kid: &[u8]) -> Option<VerifyingKey> {
        (kid == self.kid).then_some(self.key)
    }
}

/// A verified receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedReceipt {
    /// The decoded receipt.
    pub receipt: StreamWindowReceipt,
    /// BLAKE3 of the payload.
    pub content_hash: blake3::Hash,
    /// The signer's kid.
    pub kid: [u8; 32],
}

/// What [`prepare`] extracts for the signature check. The payload is the tail of the
/// Sig_structure (`tbs[payload_at..]`): one copy of it, not two.
pub(super) struct Prepared {
    pub(super) key: VerifyingKey,
    pub(super) kid: [u8; 32],
    pub(super) iss: String,
    pub(super) sub: String,
    pub(super) signature: Signature,
    pub(super) tbs: Vec<u8>,
    pub(super) payload_at: usize,
}

impl Prepared {
    fn payload(&self) -> &[u8] {
        self.tbs.get(self.payload_at..).unwrap_or_default()
    }
}

/// Checks 1-15 of the profile and the Sig_structure for check 16.
pub(super) fn prepare(
    bytes: &[u8],
    resolver: &dyn KeyResolver,
) -> core::result::Result<Prepared, CoseRefusal> {
    match read_profile(bytes) {
        Some(parts) => prepare_parts(&parts, resolver),
        None => prepare_parts(&parse_general(bytes)?.as_ref(), resolver),
    }
}

fn prepare_parts(
    parts: &PartsRef<'_>,
    resolver: &dyn KeyResolver,
) -> core::result::Result<Prepared, CoseRefusal> {
    let key = resolver
        .resolve(&parts.kid)
        .ok_or(CoseRefusal::UnknownKid)?;
    let signature =
        Signature::from_slice(parts.signature).map_err(|_| CoseRefusal::BadSignature)?;
    let tbs = sig_structure(parts.protected, parts.payload);
    Ok(Prepared {
        key,
        kid: parts.kid,
        iss: parts.iss.to_owned(),
        sub: parts.sub.to_owned(),
        signature,
        payload_at: tbs.len() - parts.payload.len(),
        tbs,
    })
}

/// Checks 17-19: the payload's strict decode and the CWT claims against it.
pub(super) fn finish(p: Prepared) -> core::result::Result<VerifiedReceipt, CoseRefusal> {
    let payload = p.payload();
    let receipt = decode_receipt(payload).map_err(CoseRefusal::PayloadRefused)?;
    if receipt.steward != p.iss {
        return Err(CoseRefusal::IssMismatch);
    }
    if receipt.id() != p.sub {
        return Err(CoseRefusal::SubMismatch);
    }
    Ok(VerifiedReceipt {
        receipt,
        content_hash: blake3::hash(payload),
        kid: p.kid,
    })
}

/// Verifies one tagged COSE_Sign1 under the profile: envelope and headers, the key by `kid`,
/// `verify_strict` over the Sig_structure built from the received protected bytes, the strict
/// canonical decoder on the payload, and `iss`/`sub` against `steward`/`id`.
pub fn verify(
    bytes: &[u8],
    resolver: &dyn KeyResolver,
) -> core::result::Result<VerifiedReceipt, CoseRefusal> {
    let p = prepare(bytes, resolver)?;
    if !torsion_free(&p.key) {
        return Err(CoseRefusal::BadSignature);
    }
    p.key
        .verify_strict(&p.tbs, &p.signature)
        .map_err(|_| CoseRefusal::BadSignature)?;
    finish(p)
}

/// `true` when the public key is a point of the prime-order subgroup (`[L]A = O`).
///
/// `verify_strict` refuses small-order keys but not a key with a torsion component
/// (`A = aB + T`): its holder can pick `R` so that the torsion cancels in the cofactorless
/// equation, and other strict verifiers (Python's `cryptography` via the profile's point checks,
/// noble with `zip215: false` plus `isTorsionFree`, Go's checks) refuse such signatures. With a
/// torsion-free key, `verify_strict` itself refuses any `R` with a torsion component, since
/// `[s]B - [k]A` then has none.
pub(crate) fn torsion_free(key: &VerifyingKey) -> bool {
    curve25519_dalek::edwards::CompressedEdwardsY(key.to_bytes())
        .decompress()
        .is_some_and(|p| p.is_torsion_free())
}

/// Verifies a COSE_Sign1 signature with `key` without the receipt profile (any headers, any
/// payload): for peer vectors such as cose-wg's.
pub fn verify_sign1_signature_only(bytes: &[u8], key: &VerifyingKey) -> bool {
    let Ok(sign1) = CoseSign1::from_tagged_slice(bytes) else {
        return false;
    };
    let Ok(sig) = Signature::from_slice(&sign1.signature) else {
        return false;
    };
    torsion_free(key) && key.verify_strict(&sign1.tbs_data(b""), &sig).is_ok()
}
