//! Every failure of the crate, with a stable code.

use core::fmt;

use crate::document::Refusal;

/// Why a signed document was refused by the COSE profile every document kind shares
/// (`jouleclaw_jcr1::cose::document`), with its stable codes.
pub use jouleclaw_jcr1::cose::document::DocumentCoseCode as CoseCode;

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
