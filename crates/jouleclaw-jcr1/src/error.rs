//! The crate's one error type.

use core::fmt;

use crate::refusal::Refusal;

/// Every failure of this crate. [`Jcr1Error::code`] is stable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Jcr1Error {
    /// The strict decoder refused a document.
    Refused(Refusal),
    /// A value cannot be encoded canonically (a counter above `2^53-1`, an empty name, a float).
    Unencodable {
        /// The field or JSON path.
        field: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// The energy source could not be read.
    Energy {
        /// What failed.
        detail: String,
    },
    /// COSE_Sign1 verification or parsing refused the input.
    Cose(CoseRefusal),
    /// A key file is malformed.
    KeyFile {
        /// What is wrong.
        detail: &'static str,
    },
    /// A public key was refused for verification (`cose::ValidKey::new`): a non-canonical
    /// encoding, a small-order (weak) key or one with a torsion component.
    KeyRefused {
        /// Which check failed.
        detail: &'static str,
    },
    /// The signer failed.
    Signer {
        /// What failed.
        detail: String,
    },
    /// Reading or writing a file or stream failed; carries the operating system's error.
    Io {
        /// What was being done (`"reading the key file"`, ...).
        action: &'static str,
        /// The error's kind (`NotFound`, `AlreadyExists`, `PermissionDenied`, ...).
        kind: std::io::ErrorKind,
        /// The operating system's message, e.g. `File exists (os error 17)`.
        message: String,
    },
}

impl Jcr1Error {
    /// A stable code: the refusal code for [`Jcr1Error::Refused`] and [`Jcr1Error::Cose`], else
    /// one code per variant.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Refused(r) => r.code.as_str(),
            Self::Unencodable { .. } => "unencodable",
            Self::Energy { .. } => "energy_unavailable",
            Self::Cose(c) => c.as_str(),
            Self::KeyFile { .. } => "bad_key_file",
            Self::KeyRefused { .. } => "key_refused",
            Self::Signer { .. } => "signer_failed",
            Self::Io { .. } => "io_failed",
        }
    }

    /// An [`Jcr1Error::Io`] for `error` while doing `action`.
    pub fn io(action: &'static str, error: &std::io::Error) -> Self {
        Self::Io {
            action,
            kind: error.kind(),
            message: error.to_string(),
        }
    }
}

impl fmt::Display for Jcr1Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(r) => write!(f, "{r}"),
            Self::Unencodable { field, reason } => {
                write!(f, "cannot encode {field} canonically: {reason}")
            }
            Self::Energy { detail } => write!(f, "energy reading failed: {detail}"),
            Self::Cose(c) => write!(f, "COSE_Sign1 refused ({})", c.as_str()),
            Self::KeyFile { detail } => write!(f, "bad key file: {detail}"),
            Self::KeyRefused { detail } => write!(f, "public key refused: {detail}"),
            Self::Signer { detail } => write!(f, "signer failed: {detail}"),
            Self::Io {
                action, message, ..
            } => write!(f, "{action}: {message}"),
        }
    }
}

impl std::error::Error for Jcr1Error {}

impl From<Refusal> for Jcr1Error {
    fn from(r: Refusal) -> Self {
        Self::Refused(r)
    }
}

/// Why a COSE_Sign1 was refused. [`CoseRefusal::as_str`] is stable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CoseRefusal {
    /// Not well-formed CBOR, not a COSE_Sign1, or bytes after it.
    MalformedCbor,
    /// A COSE_Sign1 without CBOR tag 18.
    Untagged,
    /// A CBOR tag other than 18.
    WrongTag,
    /// No `alg` in the protected header.
    AlgMissing,
    /// `alg` is not -8 (EdDSA).
    AlgNotEdDsa,
    /// `alg` in the unprotected header.
    AlgUnprotected,
    /// `kid` in the unprotected header.
    KidUnprotected,
    /// Any other unprotected header parameter.
    UnprotectedNotEmpty,
    /// A `crit` parameter.
    CritPresent,
    /// A protected label outside `{1, 3, 4, 15}`.
    UnknownProtectedLabel,
    /// Content type is not the profile's (`cose::CONTENT_TYPE`).
    ContentTypeMismatch,
    /// `kid` missing or not 32 bytes.
    BadKid,
    /// No key for this `kid`.
    UnknownKid,
    /// Label 15 missing or not exactly `{1: tstr, 2: tstr}`.
    BadCwtClaims,
    /// The protected header is not byte-for-byte the profile's deterministic encoding.
    ProtectedNotCanonical,
    /// The envelope is not the deterministic encoding of its parts (a long-form or
    /// indefinite length, for instance), so one receipt would have several valid encodings.
    EnvelopeNotCanonical,
    /// The payload is detached (nil).
    PayloadDetached,
    /// The Ed25519 signature does not verify (strictly).
    BadSignature,
    /// The payload is not a canonical stream-window/1 receipt.
    PayloadRefused(Refusal),
    /// CWT `iss` differs from the receipt's `steward`.
    IssMismatch,
    /// CWT `sub` differs from the receipt's `id`.
    SubMismatch,
    /// In a CBOR sequence: the payload's length head declares more than
    /// `cose::MAX_PAYLOAD_BYTES` (the receipt limit); refused before the payload is read.
    PayloadTooLarge,
    /// In a CBOR sequence: the item is longer than `cose::MAX_ITEM_BYTES`; refused without
    /// storing the rest of it.
    ItemTooLarge,
}

impl CoseRefusal {
    /// The stable code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MalformedCbor => "cose_malformed",
            Self::Untagged => "cose_untagged",
            Self::WrongTag => "cose_wrong_tag",
            Self::AlgMissing => "cose_alg_missing",
            Self::AlgNotEdDsa => "cose_alg_not_eddsa",
            Self::AlgUnprotected => "cose_alg_unprotected",
            Self::KidUnprotected => "cose_kid_unprotected",
            Self::UnprotectedNotEmpty => "cose_unprotected_not_empty",
            Self::CritPresent => "cose_crit_present",
            Self::UnknownProtectedLabel => "cose_unknown_protected_label",
            Self::ContentTypeMismatch => "cose_content_type_mismatch",
            Self::BadKid => "cose_bad_kid",
            Self::UnknownKid => "cose_unknown_kid",
            Self::BadCwtClaims => "cose_bad_cwt_claims",
            Self::ProtectedNotCanonical => "cose_protected_not_canonical",
            Self::EnvelopeNotCanonical => "cose_envelope_not_canonical",
            Self::PayloadDetached => "cose_payload_detached",
            Self::BadSignature => "cose_bad_signature",
            Self::PayloadRefused(_) => "cose_payload_refused",
            Self::IssMismatch => "cose_iss_mismatch",
            Self::SubMismatch => "cose_sub_mismatch",
            Self::PayloadTooLarge => "cose_payload_too_large",
            Self::ItemTooLarge => "cose_item_too_large",
        }
    }
}

impl fmt::Display for CoseRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PayloadRefused(r) => write!(f, "{}: {r}", self.as_str()),
            _ => f.write_str(self.as_str()),
        }
    }
}

impl From<CoseRefusal> for Jcr1Error {
    fn from(c: CoseRefusal) -> Self {
        Jcr1Error::Cose(c)
    }
}

/// `Result` with [`Jcr1Error`].
pub type Result<T, E = Jcr1Error> = core::result::Result<T, E>;
