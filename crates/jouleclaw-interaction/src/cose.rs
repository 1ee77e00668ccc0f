//! The signature: a tagged COSE_Sign1 / Ed25519 with the document attached, in the window
//! receipts' profile with its own content type and subject.

use coset::cbor::value::Value;
use curve25519_dalek::edwards::CompressedEdwardsY;
use ed25519_dalek::{Signature, VerifyingKey};
use jouleclaw_jcr1::cose::{Signer, kid};

use crate::document::InteractionDocument;
use crate::error::{InteractionError, Result};

/// The protected content type (label 3).
pub const INTERACTION_CONTENT_TYPE: &str = "application/vnd.jouleclaw.interaction-metrics+json";

/// The most bytes a signed document may have: the document limit plus 16,384 for the
/// envelope, headers and signature.
pub const MAX_SIGNED_BYTES: usize = crate::document::INTERACTION_LIMITS.max_document_bytes + 16_384;

/// A signed document and the bytes a verifier in another language may want.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedInteraction {
    /// The document.
    pub document: InteractionDocument,
    /// Its canonical bytes (the payload).
    pub payload: Vec<u8>,
    /// BLAKE3 of the payload.
    pub content_hash: [u8; 32],
    /// The serialized protected header.
    pub protected: Vec<u8>,
    /// `Sig_structure` bytes that were signed.
    pub to_be_signed: Vec<u8>,
    /// The tagged COSE_Sign1 (the content of `interaction-metrics.cbor`).
    pub cose_sign1: Vec<u8>,
}

fn cbor_head(out: &mut Vec<u8>, major: u8, n: u64) {
    let m = major << 5;
    if n < 24 {
        out.push(m | n as u8);
    } else if n <= 0xff {
        out.extend_from_slice(&[m | 24, n as u8]);
    } else if n <= 0xffff {
        out.push(m | 25);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else if n <= 0xffff_ffff {
        out.push(m | 26);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(m | 27);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn cbor_bytes(out: &mut Vec<u8>, major: u8, b: &[u8]) {
    cbor_head(out, major, b.len() as u64);
    out.extend_from_slice(b);
}

/// The protected header `{1: -8, 3: content type, 4: kid, 15: {1: steward, 2: subject}}` in
/// deterministic CBOR.
pub fn protected_bytes(steward: &str, subject: &str, kid: &[u8; 32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(96 + steward.len() + subject.len());
    out.push(0xa4);
    out.extend_from_slice(&[0x01, 0x27]);
    out.push(0x03);
    cbor_bytes(&mut out, 3, INTERACTION_CONTENT_TYPE.as_bytes());
    out.push(0x04);
    cbor_bytes(&mut out, 2, kid);
    out.extend_from_slice(&[0x0f, 0xa2, 0x01]);
    cbor_bytes(&mut out, 3, steward.as_bytes());
    out.push(0x02);
    cbor_bytes(&mut out, 3, subject.as_bytes());
    out
}

/// `["Signature1", protected, h'', payload]`.
pub fn sig_structure(protected: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + protected.len() + payload.len());
    out.push(0x84);
    cbor_bytes(&mut out, 3, b"Signature1");
    cbor_bytes(&mut out, 2, protected);
    out.push(0x40);
    cbor_bytes(&mut out, 2, payload);
    out
}

/// `18([protected, {}, payload, signature])`.
fn envelope(protected: &[u8], payload: &[u8], signature: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + protected.len() + payload.len() + signature.len());
    out.extend_from_slice(&[0xd2, 0x84]);
    cbor_bytes(&mut out, 2, protected);
    out.push(0xa0);
    cbor_bytes(&mut out, 2, payload);
    cbor_bytes(&mut out, 2, signature);
    out
}

/// Signs `document`.
pub fn sign(signer: &dyn Signer, document: &InteractionDocument) -> Result<SignedInteraction> {
    let payload = document.encode()?;
    let protected = protected_bytes(
        &document.steward,
        &document.subject(),
        &kid(&signer.verifying_key()),
    );
    let to_be_signed = sig_structure(&protected, &payload);
    let signature = signer
        .sign(&to_be_signed)
        .map_err(|e| InteractionError::Signer {
            detail: format!("{} ({e})", e.code()),
        })?;
    let cose_sign1 = envelope(&protected, &payload, &signature);
    Ok(SignedInteraction {
        document: document.clone(),
        content_hash: *blake3::hash(&payload).as_bytes(),
        payload,
        protected,
        to_be_signed,
        cose_sign1,
    })
}

fn read_value(bytes: &[u8]) -> Option<Value> {
    let mut r: &[u8] = bytes;
    let v: Value = coset::cbor::de::from_reader(&mut r).ok()?;
    r.is_empty().then_some(v)
}

fn int_of(v: &Value) -> Option<i128> {
    match v {
        Value::Integer(i) => Some(i128::from(*i)),
        _ => None,
    }
}

fn prime_order_point(bytes: &[u8; 32]) -> bool {
    CompressedEdwardsY(*bytes)
        .decompress()
        .is_some_and(|p| p.is_torsion_free() && !p.is_small_order())
}

/// Verifies a signed document under `key`, in the order of `spec/INTERACTION-METRICS-V1.md` section 6:
/// envelope, headers, kid, signature (`verify_strict`, prime-order key and `R`), the strict
/// decoder on the payload, then `iss` and `sub` against the document.
pub fn verify(bytes: &[u8], key: &VerifyingKey) -> Result<SignedInteraction> {
    use crate::error::CoseCode as C;
    if bytes.len() > MAX_SIGNED_BYTES {
        return Err(C::TooLarge.into());
    }
    match bytes.first() {
        Some(0xd2) => {}
        Some(0x84) => return Err(C::Untagged.into()),
        Some(b) if b >> 5 == 6 => return Err(C::WrongTag.into()),
        _ => return Err(C::Malformed.into()),
    }
    let v = read_value(bytes).ok_or(C::Malformed)?;
    let Value::Tag(18, inner) = v else {
        return Err(C::WrongTag.into());
    };
    let Value::Array(items) = *inner else {
        return Err(C::Malformed.into());
    };
    let [protected, unprotected, payload, signature] =
        <[Value; 4]>::try_from(items).map_err(|_| C::Malformed)?;
    let (Value::Bytes(protected), Value::Map(unprotected), Value::Bytes(signature)) =
        (protected, unprotected, signature)
    else {
        return Err(C::Malformed.into());
    };
    let payload = match payload {
        Value::Bytes(p) => p,
        Value::Null => return Err(C::PayloadDetached.into()),
        _ => return Err(C::Malformed.into()),
    };
    if !unprotected.is_empty() {
        return Err(C::UnprotectedNotEmpty.into());
    }
    let Some(Value::Map(header)) = read_value(&protected) else {
        return Err(C::Malformed.into());
    };
    let get = |label: i64| {
        header
            .iter()
            .find(|(k, _)| int_of(k) == Some(i128::from(label)))
            .map(|(_, v)| v)
    };
    if get(1).and_then(int_of) != Some(-8) {
        return Err(C::AlgNotEdDsa.into());
    }
    match get(3) {
        Some(Value::Text(t)) if t == INTERACTION_CONTENT_TYPE => {}
        _ => return Err(C::ContentTypeMismatch.into()),
    }
    let kid_value: [u8; 32] = match get(4) {
        Some(Value::Bytes(k)) => k.as_slice().try_into().map_err(|_| C::BadKid)?,
        _ => return Err(C::BadKid.into()),
    };
    let (iss, sub) = match get(15) {
        Some(Value::Map(m)) => match m.as_slice() {
            [(k1, Value::Text(iss)), (k2, Value::Text(sub))]
                if int_of(k1) == Some(1) && int_of(k2) == Some(2) =>
            {
                (iss.clone(), sub.clone())
            }
            _ => return Err(C::BadCwtClaims.into()),
        },
        _ => return Err(C::BadCwtClaims.into()),
    };
    if protected_bytes(&iss, &sub, &kid_value) != protected {
        return Err(C::ProtectedNotCanonical.into());
    }
    if signature.len() != 64 || envelope(&protected, &payload, &signature) != bytes {
        return Err(C::EnvelopeNotCanonical.into());
    }
    if kid_value != kid(key) {
        return Err(C::UnknownKid.into());
    }
    let to_be_signed = sig_structure(&protected, &payload);
    let sig = <[u8; 64]>::try_from(signature.as_slice()).map_err(|_| C::BadSignature)?;
    let mut r = [0u8; 32];
    r.copy_from_slice(&sig[..32]);
    if !prime_order_point(key.as_bytes()) || !prime_order_point(&r) {
        return Err(C::BadSignature.into());
    }
    key.verify_strict(&to_be_signed, &Signature::from_bytes(&sig))
        .map_err(|_| InteractionError::from(C::BadSignature))?;
    let document =
        InteractionDocument::decode(&payload).map_err(InteractionError::PayloadRefused)?;
    if iss != document.steward {
        return Err(C::IssMismatch.into());
    }
    if sub != document.subject() {
        return Err(C::SubMismatch.into());
    }
    Ok(SignedInteraction {
        document,
        content_hash: *blake3::hash(&payload).as_bytes(),
        payload,
        protected,
        to_be_signed,
        cose_sign1: bytes.to_vec(),
    })
}
