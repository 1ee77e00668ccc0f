//! The signature: a tagged COSE_Sign1 / Ed25519 with the document attached, in the window
//! receipts' profile with its own content type and subject.

use jouleclaw_jcr1::cose::{Signer, ValidKey, document};
use jouleclaw_seal::call_document::{self, VerifyRefusal};

use crate::document::StopLatencyDocument;
use crate::error::{Result, StopLatencyError};

/// The protected content type (label 3).
pub const STOP_LATENCY_CONTENT_TYPE: &str = "application/vnd.jouleclaw.stop-latency+json";

/// The most bytes a signed document may have: the document limit plus 16,384 for the
/// envelope, headers and signature.
pub const MAX_SIGNED_BYTES: usize =
    crate::document::STOP_LATENCY_LIMITS.max_document_bytes + 16_384;

/// A signed document and the bytes a verifier in another language may want (its
/// `cose_sign1` is the content of the stream's file).
pub type SignedStopLatency = call_document::Signed<StopLatencyDocument>;

/// The protected header `{1: -8, 3: STOP_LATENCY_CONTENT_TYPE, 4: kid, 15: {1: steward, 2: subject}}` in
/// deterministic CBOR (`jouleclaw_jcr1::cose::document::protected_bytes`).
pub fn protected_bytes(steward: &str, subject: &str, kid: &[u8; 32]) -> Vec<u8> {
    document::protected_bytes(STOP_LATENCY_CONTENT_TYPE, steward, subject, kid)
}

/// `["Signature1", protected, h'', payload]`.
pub fn sig_structure(protected: &[u8], payload: &[u8]) -> Vec<u8> {
    document::sig_structure(protected, payload)
}

/// Signs `document` in the shared document profile under its content type and subject.
pub fn sign(signer: &dyn Signer, document: &StopLatencyDocument) -> Result<SignedStopLatency> {
    let payload = document.encode()?;
    call_document::sign(
        signer,
        STOP_LATENCY_CONTENT_TYPE,
        &document.steward,
        &document.subject(),
        document.clone(),
        payload,
    )
    .map_err(|e| StopLatencyError::Signer {
        detail: format!("{} ({e})", e.code()),
    })
}

/// Verifies a signed document under `key`, in the order of `spec/STOP-LATENCY-V1.md` section 6:
/// the shared document profile (envelope, headers, kid, `verify_strict`:
/// `jouleclaw_jcr1::cose::document::verify`), then the strict decoder on the payload, then
/// `iss` and `sub` against the document (`jouleclaw_seal::call_document::verify`). The key is
/// one already accepted ([`ValidKey`]: canonical, not small order, torsion-free), checked once
/// where the caller made it; [`ValidKey::new`] refuses any other with `key_refused`.
pub fn verify(bytes: &[u8], key: &ValidKey) -> Result<SignedStopLatency> {
    call_document::verify(
        bytes,
        key,
        STOP_LATENCY_CONTENT_TYPE,
        MAX_SIGNED_BYTES,
        StopLatencyDocument::decode,
        |d| (d.steward.as_str(), d.subject()),
    )
    .map_err(|e| match e {
        VerifyRefusal::Cose(c) => c.into(),
        VerifyRefusal::Payload(r) => StopLatencyError::PayloadRefused(r),
    })
}
