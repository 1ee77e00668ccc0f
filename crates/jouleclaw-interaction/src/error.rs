//! Every failure of the crate, with a stable code.

use core::fmt;

use crate::document::Refusal;

/// Why a signed document was refused, before its payload was decoded (or after: `iss`/`sub`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CoseCode {
    /// Over [`crate::MAX_SIGNED_BYTES`].
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
    /// The content type is not [`crate::INTERACTION_CONTENT_TYPE`].
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
    /// The signature does not verify (or the key or `R` has a torsion component).
    BadSignature,
    /// CWT `iss` is not the document's steward.
    IssMismatch,
    /// CWT `sub` is not `<stream_id>:interaction-metrics`.
    SubMismatch,
}

impl CoseCode {
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

/// Every failure of the crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InteractionError {
    /// A detection window or the frame length out of range.
    BadConfig {
        /// Which value, and why.
        reason: String,
    },
    /// A tick of a frame past [`crate::MAX_FRAMES`].
    TooManyFrames {
        /// The bound.
        max: u64,
    },
    /// More events than [`crate::MAX_EVENTS`].
    TooManyEvents {
        /// The bound.
        max: usize,
    },
    /// A tick after [`crate::InteractionMeter::finish`].
    Finished,
    /// Panels over different detection windows cannot be added.
    ConfigMismatch,
    /// A document the decoder would refuse (nothing was written).
    Unencodable {
        /// Why.
        reason: String,
    },
    /// The signer failed.
    Signer {
        /// Its code and message.
        detail: String,
    },
    /// The signed envelope was refused.
    Cose(CoseCode),
    /// The signature verified and the payload was refused by the strict decoder.
    PayloadRefused(Refusal),
}

impl InteractionError {
    /// The stable code: `bad_config`, `too_many_frames`, `too_many_events`,
    /// `meter_finished`, `config_mismatch`, `unencodable`, `signer_failed`, a [`CoseCode`], or
    /// the payload's refusal code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadConfig { .. } => "bad_config",
            Self::TooManyFrames { .. } => "too_many_frames",
            Self::TooManyEvents { .. } => "too_many_events",
            Self::Finished => "meter_finished",
            Self::ConfigMismatch => "config_mismatch",
            Self::Unencodable { .. } => "unencodable",
            Self::Signer { .. } => "signer_failed",
            Self::Cose(c) => c.as_str(),
            Self::PayloadRefused(r) => r.code,
        }
    }
}

impl From<CoseCode> for InteractionError {
    fn from(c: CoseCode) -> Self {
        Self::Cose(c)
    }
}

impl fmt::Display for InteractionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadConfig { reason } => write!(f, "bad detection config: {reason}"),
            Self::TooManyFrames { max } => write!(f, "a tick past frame {max} of the stream"),
            Self::TooManyEvents { max } => write!(f, "more than {max} interaction events"),
            Self::Finished => write!(f, "the stream has ended: the meter takes no more ticks"),
            Self::ConfigMismatch => write!(f, "panels measured with different detection windows"),
            Self::Unencodable { reason } => {
                write!(f, "interaction-metrics/1 not encodable: {reason}")
            }
            Self::Signer { detail } => write!(f, "signer failed: {detail}"),
            Self::Cose(c) => write!(f, "signed interaction-metrics/1 refused: {}", c.as_str()),
            Self::PayloadRefused(r) => write!(f, "payload refused: {r}"),
        }
    }
}

impl std::error::Error for InteractionError {}

/// The crate's `Result`.
pub type Result<T, E = InteractionError> = core::result::Result<T, E>;
