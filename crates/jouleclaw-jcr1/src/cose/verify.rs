//! Single-receipt verification under the profile.

use coset::{CoseSign1, TaggedCborSerializable};
use ed25519_dalek::{Signature, VerifyingKey};

use super::kid;
use super::profile::{PartsRef, parse_general, read_profile, sig_structure};
use crate::decode::decode_receipt;
use crate::error::{CoseRefusal, Jcr1Error};
use crate::receipt::StreamWindowReceipt;

/// An Ed25519 public key accepted for verification: the canonical encoding of a point of the
/// prime-order subgroup other than the identity, that is, not of small order (not weak) and
/// without a torsion component. The checks run once, in [`ValidKey::new`]; [`verify`] and
/// [`verify_batch`](super::verify_batch) take the key as accepted and do not repeat them.
///
/// Why the torsion check: `verify_strict` refuses small-order keys but not a key with a
/// torsion component (`A = aB + T`): its holder can pick `R` so that the torsion cancels in the
/// cofactorless equation, and other strict verifiers (Python's `cryptography` via the profile's
/// point checks, noble with `zip215: false` plus `isTorsionFree`, Go's checks) refuse such
/// signatures. With a torsion-free key, `verify_strict` itself refuses any `R` with a torsion
/// component, since `[s]B - [k]A` then has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ValidKey {
    key: VerifyingKey,
}

impl ValidKey {
    /// Accepts `key` after three checks (one scalar multiplication, `[L]A = O`, and one point
    /// compression): its encoding is canonical (`y < p`, no sign bit on `x = 0`), it is not of
    /// small order, and it has no torsion component. Refuses with [`Jcr1Error::KeyRefused`]
    /// (code `key_refused`) naming the failed check.
    pub fn new(key: VerifyingKey) -> Result<Self, Jcr1Error> {
        let point = key.to_edwards();
        if point.compress().to_bytes() != key.to_bytes() {
            return Err(Jcr1Error::KeyRefused {
                detail: "not the canonical encoding of an Ed25519 public key",
            });
        }
        if point.is_small_order() {
            return Err(Jcr1Error::KeyRefused {
                detail: "a small-order (weak) Ed25519 public key",
            });
        }
        if !point.is_torsion_free() {
            return Err(Jcr1Error::KeyRefused {
                detail: "an Ed25519 public key with a torsion component (not of prime order)",
            });
        }
        Ok(Self { key })
    }

    /// The key.
    pub fn verifying_key(&self) -> &VerifyingKey {
        &self.key
    }
}

impl TryFrom<VerifyingKey> for ValidKey {
    type Error = Jcr1Error;

    fn try_from(key: VerifyingKey) -> Result<Self, Jcr1Error> {
        Self::new(key)
    }
}

/// Chooses the verification key by `kid`.
///
/// A resolver holds keys already accepted ([`ValidKey`]): the key checks run when a key is
/// added, not on every receipt.
pub trait KeyResolver {
    /// The accepted key whose thumbprint is `kid`. `Err(CoseRefusal::UnknownKid)` when no key
    /// has this thumbprint; `Err(CoseRefusal::BadSignature)` when the key with this thumbprint
    /// was refused when it was added (no signature verifies under it).
    fn resolve(&self, kid: &[u8]) -> Result<ValidKey, CoseRefusal>;
}

/// A resolver that knows exactly one key, checked once when the resolver is made.
#[derive(Debug, Clone)]
pub struct SingleKey {
    /// The key if [`ValidKey::new`] accepted it, else why not.
    key: Result<ValidKey, Jcr1Error>,
    kid: [u8; 32],
}

impl SingleKey {
    /// The resolver for `key`. The key is checked here, once ([`ValidKey::new`]); a refused key
    /// is remembered, and every receipt under its `kid` is then refused with
    /// `cose_bad_signature`, as a signature under such a key never verifies. See
    /// [`SingleKey::try_new`] to refuse the key itself, and [`SingleKey::key_refusal`].
    pub fn new(key: VerifyingKey) -> Self {
        Self {
            kid: kid(&key),
            key: ValidKey::new(key),
        }
    }

    /// The resolver for `key`, or why the key is refused ([`ValidKey::new`]).
    pub fn try_new(key: VerifyingKey) -> Result<Self, Jcr1Error> {
        ValidKey::new(key).map(Self::from_valid)
    }

    /// The resolver for a key already accepted.
    pub fn from_valid(key: ValidKey) -> Self {
        Self {
            kid: kid(key.verifying_key()),
            key: Ok(key),
        }
    }

    /// Why the key was refused when this resolver was made; `None` when it was accepted.
    pub fn key_refusal(&self) -> Option<&Jcr1Error> {
        self.key.as_ref().err()
    }
}

impl KeyResolver for SingleKey {
    fn resolve(&self, kid: &[u8]) -> Result<ValidKey, CoseRefusal> {
        if kid != self.kid {
            return Err(CoseRefusal::UnknownKid);
        }
        self.key.clone().map_err(|_| CoseRefusal::BadSignature)
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
    pub(super) key: ValidKey,
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
    let key = resolver.resolve(&parts.kid)?;
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
/// canonical decoder on the payload, and `iss`/`sub` against `steward`/`id`. The key comes
/// from the resolver as a [`ValidKey`], checked when it was accepted, not here.
pub fn verify(
    bytes: &[u8],
    resolver: &dyn KeyResolver,
) -> core::result::Result<VerifiedReceipt, CoseRefusal> {
    let p = prepare(bytes, resolver)?;
    p.key
        .verifying_key()
        .verify_strict(&p.tbs, &p.signature)
        .map_err(|_| CoseRefusal::BadSignature)?;
    finish(p)
}

/// Verifies a COSE_Sign1 signature with `key` without the receipt profile (any headers, any
/// payload): for peer vectors such as cose-wg's. The key is checked ([`ValidKey::new`]) on
/// each call: this is not the receipt path.
pub fn verify_sign1_signature_only(bytes: &[u8], key: &VerifyingKey) -> bool {
    let Ok(sign1) = CoseSign1::from_tagged_slice(bytes) else {
        return false;
    };
    let Ok(sig) = Signature::from_slice(&sign1.signature) else {
        return false;
    };
    ValidKey::new(*key).is_ok() && key.verify_strict(&sign1.tbs_data(b""), &sig).is_ok()
}

/// A receipt the caller already holds strictly decoded (`decode_receipt` accepted its exact
/// bytes), found by its content hash for [`verify_known`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownReceipt<'a> {
    /// Its `steward`.
    pub steward: &'a str,
    /// Its `stream_id`.
    pub stream_id: &'a str,
    /// Its `window_id`.
    pub window_id: u64,
}

/// What [`verify_known`] accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifiedKnown {
    /// The payload is a receipt the caller holds (its BLAKE3 is one the caller knows): not
    /// decoded again.
    Known {
        /// BLAKE3 of the payload.
        content_hash: blake3::Hash,
        /// The known receipt's `window_id`.
        window_id: u64,
    },
    /// Any other payload, decoded as [`verify`] decodes it.
    Decoded(Box<VerifiedReceipt>),
}

impl VerifiedKnown {
    /// BLAKE3 of the payload.
    pub fn content_hash(&self) -> &blake3::Hash {
        match self {
            Self::Known { content_hash, .. } => content_hash,
            Self::Decoded(v) => &v.content_hash,
        }
    }

    /// The receipt's `window_id`.
    pub fn window_id(&self) -> u64 {
        match self {
            Self::Known { window_id, .. } => *window_id,
            Self::Decoded(v) => v.receipt.window_id,
        }
    }
}

/// [`verify`] for a verifier that already holds strictly decoded receipts by their content
/// hash (a stream directory's lines): the same checks in the same order (checks 1-16, then
/// the payload, then `iss` and `sub`) and the same refusals, except that a payload whose BLAKE3
/// `known` returns a receipt for is not decoded again: those exact bytes decoded to that
/// receipt (BLAKE3 is collision resistant), so `iss` and `sub` are checked against its
/// `steward` and id. Any other payload is decoded as [`verify`] decodes it.
pub fn verify_known<'k>(
    bytes: &[u8],
    resolver: &dyn KeyResolver,
    known: impl FnOnce(&blake3::Hash) -> Option<KnownReceipt<'k>>,
) -> core::result::Result<VerifiedKnown, CoseRefusal> {
    let p = prepare(bytes, resolver)?;
    p.key
        .verifying_key()
        .verify_strict(&p.tbs, &p.signature)
        .map_err(|_| CoseRefusal::BadSignature)?;
    let content_hash = blake3::hash(p.payload());
    let Some(k) = known(&content_hash) else {
        return finish(p).map(|v| VerifiedKnown::Decoded(Box::new(v)));
    };
    if k.steward != p.iss {
        return Err(CoseRefusal::IssMismatch);
    }
    if !crate::decode::is_receipt_id(&p.sub, k.stream_id, k.window_id) {
        return Err(CoseRefusal::SubMismatch);
    }
    Ok(VerifiedKnown::Known {
        content_hash,
        window_id: k.window_id,
    })
}
