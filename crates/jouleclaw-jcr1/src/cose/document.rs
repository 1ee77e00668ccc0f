//! The COSE_Sign1 profile, the one definition of its bytes for every kind: the window
//! receipts (`stream-window/1`), the signed documents of a call (`stop-latency/1`,
//! `interaction-metrics/1`, and every later kind) and the seal's checkpoints and inclusion
//! receipts (`stream-seal/1`, payload detached, RFC 9942 proofs in the unprotected header).
//!
//! ```text
//! 18([protected, unprotected, payload, signature])
//! protected = {1: -8, [3: content type,] 4: kid, 15: {1: steward, 2: subject}, extra...}
//! Sig_structure = ["Signature1", protected, h'', payload]
//! ```
//!
//! Deterministic CBOR, every byte fixed: [`Protected`] (and [`protected_bytes`] for a kind
//! with a content type and nothing after label 15), [`sig_structure`], [`envelope`] and
//! [`envelope_with`]; the heads through [`super::cbor`]. A document of a call is attached, its
//! unprotected header `{}`: [`sign`] and [`verify`] apply the profile's checks in one order
//! (`spec/STOP-LATENCY-V1.md` section 6, steps 1-13) and hand back the payload with its CWT
//! claims; the document kind decodes the payload and compares `iss` and `sub` with it.

use coset::cbor::value::Value;
use ed25519_dalek::Signature;

use super::cbor::{self, int_of, read_value};
use super::sign::Signer;
use super::verify::ValidKey;
use crate::error::Jcr1Error;

/// Why a signed document was refused by the profile (or, for the last two, by its claims).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DocumentCoseCode {
    /// Over the document kind's size bound.
    TooLarge,
    /// An untagged COSE_Sign1 (`0x84`).
    Untagged,
    /// Another tag than 18.
    WrongTag,
    /// Not a well-formed COSE_Sign1.
    Malformed,
    /// The payload is detached (`nil`).
    PayloadDetached,
    /// The unprotected header is not `{}`.
    UnprotectedNotEmpty,
    /// `alg` is not -8 (EdDSA).
    AlgNotEdDsa,
    /// The content type is not the document kind's.
    ContentTypeMismatch,
    /// `kid` is not 32 bytes.
    BadKid,
    /// Label 15 is not `{1: tstr, 2: tstr}`.
    BadCwtClaims,
    /// The protected bytes are not the profile's deterministic encoding.
    ProtectedNotCanonical,
    /// The envelope is not the deterministic encoding of its parts (or the signature is not
    /// 64 bytes).
    EnvelopeNotCanonical,
    /// `kid` is not the verifying key's.
    UnknownKid,
    /// The signature does not verify under `verify_strict`, or the key is not a canonical
    /// point of prime order ([`ValidKey`]; with such a key `verify_strict` also refuses any
    /// `R` with a torsion component).
    BadSignature,
    /// CWT `iss` is not the document's steward.
    IssMismatch,
    /// CWT `sub` is not the document's subject.
    SubMismatch,
}

impl DocumentCoseCode {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TooLarge => "cose_too_large",
            Self::Untagged => "cose_untagged",
            Self::WrongTag => "cose_wrong_tag",
            Self::Malformed => "cose_malformed",
            Self::PayloadDetached => "cose_payload_detached",
            Self::UnprotectedNotEmpty => "cose_unprotected_not_empty",
            Self::AlgNotEdDsa => "cose_alg_not_eddsa",
            Self::ContentTypeMismatch => "cose_content_type_mismatch",
            Self::BadKid => "cose_bad_kid",
            Self::BadCwtClaims => "cose_bad_cwt_claims",
            Self::ProtectedNotCanonical => "cose_protected_not_canonical",
            Self::EnvelopeNotCanonical => "cose_envelope_not_canonical",
            Self::UnknownKid => "cose_unknown_kid",
            Self::BadSignature => "cose_bad_signature",
            Self::IssMismatch => "cose_iss_mismatch",
            Self::SubMismatch => "cose_sub_mismatch",
        }
    }
}

impl core::fmt::Display for DocumentCoseCode {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The bytes of a signed document: what was signed and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedDocument {
    /// The payload (the document's canonical bytes).
    pub payload: Vec<u8>,
    /// The serialized protected header.
    pub protected: Vec<u8>,
    /// The `Sig_structure` bytes that were signed.
    pub to_be_signed: Vec<u8>,
    /// The tagged COSE_Sign1.
    pub cose_sign1: Vec<u8>,
}

/// A document whose envelope, headers and signature [`verify`] accepted, with its claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedDocument {
    /// The payload, still to be decoded by its kind.
    pub payload: Vec<u8>,
    /// The serialized protected header.
    pub protected: Vec<u8>,
    /// The `Sig_structure` bytes that were signed.
    pub to_be_signed: Vec<u8>,
    /// CWT `iss`.
    pub iss: String,
    /// CWT `sub`.
    pub sub: String,
}

/// The value of a protected header entry after the CWT claims (label 15).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderValue<'a> {
    /// An integer.
    Int(i64),
    /// A byte string.
    Bytes(&'a [u8]),
}

/// The protected header of the profile, every kind's:
/// `{1: -8, [3: content type,] 4: kid, 15: {1: steward, 2: subject}, extra...}`. A window
/// receipt and a document of a call carry a content type and nothing after label 15; the
/// seal's checkpoint carries no content type and two entries after it (`vds` and the seal
/// document).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protected<'a> {
    /// Label 3, when the kind has one.
    pub content_type: Option<&'a str>,
    /// Label 4: the RFC 9679 thumbprint of the signing key.
    pub kid: &'a [u8; 32],
    /// CWT `iss`.
    pub steward: &'a str,
    /// CWT `sub`.
    pub subject: &'a str,
    /// The entries after label 15, their labels in the bytewise order of their encodings
    /// (positive labels above 15, then negative ones), as deterministic CBOR requires.
    pub extra: &'a [(i64, HeaderValue<'a>)],
}

impl Protected<'_> {
    /// The header in deterministic CBOR: the protected bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let extra_len: usize = self
            .extra
            .iter()
            .map(|(_, v)| match v {
                HeaderValue::Int(_) => 18,
                HeaderValue::Bytes(b) => 18 + b.len(),
            })
            .sum();
        let ct_len = self.content_type.map_or(0, str::len);
        let mut out =
            Vec::with_capacity(64 + ct_len + self.steward.len() + self.subject.len() + extra_len);
        let entries = 3 + u64::from(self.content_type.is_some()) + self.extra.len() as u64;
        cbor::head(&mut out, 5, entries);
        out.extend_from_slice(&[0x01, 0x27]); // 1 (alg): -8 (EdDSA)
        if let Some(ct) = self.content_type {
            out.push(0x03); // 3 (content type): text
            cbor::string(&mut out, 3, ct.as_bytes());
        }
        out.push(0x04); // 4 (kid): bstr
        cbor::string(&mut out, 2, self.kid);
        out.extend_from_slice(&[0x0f, 0xa2, 0x01]); // 15 (CWT claims): {1 (iss): text
        cbor::string(&mut out, 3, self.steward.as_bytes());
        out.push(0x02); // 2 (sub): text
        cbor::string(&mut out, 3, self.subject.as_bytes());
        for (label, value) in self.extra {
            cbor::int(&mut out, *label);
            match value {
                HeaderValue::Int(i) => cbor::int(&mut out, *i),
                HeaderValue::Bytes(b) => cbor::string(&mut out, 2, b),
            }
        }
        out
    }
}

/// The protected header `{1: -8, 3: content_type, 4: kid, 15: {1: steward, 2: subject}}` in
/// deterministic CBOR.
pub fn protected_bytes(
    content_type: &str,
    steward: &str,
    subject: &str,
    kid: &[u8; 32],
) -> Vec<u8> {
    Protected {
        content_type: Some(content_type),
        kid,
        steward,
        subject,
        extra: &[],
    }
    .to_bytes()
}

/// `["Signature1", protected, h'', payload]` (RFC 9052 section 4.4, empty external_aad); for a
/// detached payload, the payload the verifier supplies (the seal's root).
pub fn sig_structure(protected: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + protected.len() + payload.len());
    out.push(0x84); // array(4)
    cbor::string(&mut out, 3, b"Signature1");
    cbor::string(&mut out, 2, protected);
    out.push(0x40); // external_aad: empty bstr
    cbor::string(&mut out, 2, payload);
    out
}

/// `18([protected, {}, payload, signature])`.
pub fn envelope(protected: &[u8], payload: &[u8], signature: &[u8]) -> Vec<u8> {
    envelope_with(protected, &[0xa0], Some(payload), signature)
}

/// `18([protected, unprotected, payload or nil, signature])`: `unprotected` is the
/// unprotected header's bytes (`{}` is `0xa0`; the seal's RFC 9942 proofs), `None` a detached
/// payload (`nil`).
pub fn envelope_with(
    protected: &[u8],
    unprotected: &[u8],
    payload: Option<&[u8]>,
    signature: &[u8],
) -> Vec<u8> {
    let len = payload.map_or(0, <[u8]>::len);
    let mut out =
        Vec::with_capacity(16 + protected.len() + unprotected.len() + len + signature.len());
    out.extend_from_slice(&[0xd2, 0x84]); // tag 18, array(4)
    cbor::string(&mut out, 2, protected);
    out.extend_from_slice(unprotected);
    match payload {
        Some(p) => cbor::string(&mut out, 2, p),
        None => out.push(0xf6),
    }
    cbor::string(&mut out, 2, signature);
    out
}

/// `verify_strict` of `signature` over `to_be_signed` under a key already accepted
/// ([`ValidKey`]: canonical, not small order, torsion-free). With such a key `verify_strict`
/// also refuses any `R` with a torsion component, since `[s]B - [k]A` then has none: no
/// separate check of `R`. `false` for a signature that is not 64 bytes.
pub fn signature_verifies(key: &ValidKey, to_be_signed: &[u8], signature: &[u8]) -> bool {
    let Ok(sig) = <[u8; 64]>::try_from(signature) else {
        return false;
    };
    key.verifying_key()
        .verify_strict(to_be_signed, &Signature::from_bytes(&sig))
        .is_ok()
}

/// Signs `payload` (a document's canonical bytes) under `content_type`, with CWT `iss`
/// `steward` and `sub` `subject`. The signer's refusal passes through.
pub fn sign(
    signer: &dyn Signer,
    content_type: &str,
    steward: &str,
    subject: &str,
    payload: Vec<u8>,
) -> Result<SignedDocument, Jcr1Error> {
    let protected = protected_bytes(
        content_type,
        steward,
        subject,
        &super::kid(&signer.verifying_key()),
    );
    let to_be_signed = sig_structure(&protected, &payload);
    let signature = signer.sign(&to_be_signed)?;
    let cose_sign1 = envelope(&protected, &payload, &signature);
    Ok(SignedDocument {
        payload,
        protected,
        to_be_signed,
        cose_sign1,
    })
}

/// Verifies a signed document of `content_type` under `key`, in this order (the first failing
/// check is the refusal): at most `max_bytes`; tag 18 (`0x84`: untagged, another tag:
/// wrong_tag); a well-formed 4-array of bstr, map, bstr or nil, bstr and nothing after it;
/// payload attached; unprotected header `{}`; protected a map with `alg` -8; the content type;
/// a 32-byte `kid`; label 15 exactly `{1: tstr, 2: tstr}`; the protected bytes exactly
/// [`protected_bytes`] of these values; the envelope exactly [`envelope`] of its parts with a
/// 64-byte signature; `kid` the key's; `verify_strict` over the Sig_structure. The caller then
/// decodes the payload and compares `iss` and `sub`.
///
/// The key is one already accepted ([`ValidKey`]: canonical, not small order, torsion-free),
/// checked once where the caller made it, not here: [`ValidKey::new`] refuses any other
/// (`key_refused`), under which no signature would verify.
pub fn verify(
    bytes: &[u8],
    key: &ValidKey,
    content_type: &str,
    max_bytes: usize,
) -> Result<VerifiedDocument, DocumentCoseCode> {
    use DocumentCoseCode as C;
    if bytes.len() > max_bytes {
        return Err(C::TooLarge);
    }
    match bytes.first() {
        Some(0xd2) => {}
        Some(0x84) => return Err(C::Untagged),
        Some(b) if b >> 5 == 6 => return Err(C::WrongTag),
        _ => return Err(C::Malformed),
    }
    let v = read_value(bytes).ok_or(C::Malformed)?;
    let Value::Tag(18, inner) = v else {
        return Err(C::WrongTag);
    };
    let Value::Array(items) = *inner else {
        return Err(C::Malformed);
    };
    let [protected, unprotected, payload, signature] =
        <[Value; 4]>::try_from(items).map_err(|_| C::Malformed)?;
    let (Value::Bytes(protected), Value::Map(unprotected), Value::Bytes(signature)) =
        (protected, unprotected, signature)
    else {
        return Err(C::Malformed);
    };
    let payload = match payload {
        Value::Bytes(p) => p,
        Value::Null => return Err(C::PayloadDetached),
        _ => return Err(C::Malformed),
    };
    if !unprotected.is_empty() {
        return Err(C::UnprotectedNotEmpty);
    }
    let Some(Value::Map(header)) = read_value(&protected) else {
        return Err(C::Malformed);
    };
    let get = |label: i64| {
        header
            .iter()
            .find(|(k, _)| int_of(k) == Some(i128::from(label)))
            .map(|(_, v)| v)
    };
    if get(1).and_then(int_of) != Some(-8) {
        return Err(C::AlgNotEdDsa);
    }
    match get(3) {
        Some(Value::Text(t)) if t == content_type => {}
        _ => return Err(C::ContentTypeMismatch),
    }
    let kid_value: [u8; 32] = match get(4) {
        Some(Value::Bytes(k)) => k.as_slice().try_into().map_err(|_| C::BadKid)?,
        _ => return Err(C::BadKid),
    };
    let (iss, sub) = match get(15) {
        Some(Value::Map(m)) => match m.as_slice() {
            [(k1, Value::Text(iss)), (k2, Value::Text(sub))]
                if int_of(k1) == Some(1) && int_of(k2) == Some(2) =>
            {
                (iss.clone(), sub.clone())
            }
            _ => return Err(C::BadCwtClaims),
        },
        _ => return Err(C::BadCwtClaims),
    };
    if protected_bytes(content_type, &iss, &sub, &kid_value) != protected {
        return Err(C::ProtectedNotCanonical);
    }
    if signature.len() != 64 || envelope(&protected, &payload, &signature) != bytes {
        return Err(C::EnvelopeNotCanonical);
    }
    if kid_value != super::kid(key.verifying_key()) {
        return Err(C::UnknownKid);
    }
    let to_be_signed = sig_structure(&protected, &payload);
    let sig = <[u8; 64]>::try_from(signature.as_slice()).map_err(|_| C::BadSignature)?;
    key.verifying_key()
        .verify_strict(&to_be_signed, &Signature::from_bytes(&sig))
        .map_err(|_| C::BadSignature)?;
    Ok(VerifiedDocument {
        payload,
        protected,
        to_be_signed,
        iss,
        sub,
    })
}
