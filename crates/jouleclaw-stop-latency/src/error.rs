//! Every failure of the crate, with a stable code.

use core::fmt;

use crate::document::Refusal;

/// Why a signed document was refused by the COSE profile every document kind shares
/// (`jouleclaw_jcr1::cose::document`), with its stable codes.
pub use jouleclaw_jcr1::cose::document::DocumentCoseCode as CoseCode;

/// Every failure of the crate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopLatencyError {
    /// A barge-in past [`crate::MAX_BARGE_INS`].
    TooManyBargeIns {
        /// The bound.
        max: usize,
    },
    /// A tick after [`crate::StopLatencyMeter::finish`].
    Finished,
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

impl StopLatencyError {
    /// The stable code: `too_many_barge_ins`, `meter_finished`, `unencodable`, `signer_failed`,
    /// a [`CoseCode`], or the payload's refusal code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::TooManyBargeIns { .. } => "too_many_barge_ins",
            Self::Finished => "meter_finished",
            Self::Unencodable { .. } => "unencodable",
            Self::Signer { .. } => "signer_failed",
            Self::Cose(c) => c.as_str(),
            Self::PayloadRefused(r) => r.code,
        }
    }
}

impl From<CoseCode> for StopLatencyError {
    fn from(c: CoseCode) -> Self {
        Self::Cose(c)
    }
}

impl fmt::Display for StopLatencyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooManyBargeIns { max } => {
                write!(f, "more than {max} barge-ins in one stream")
            }
            Self::Finished => write!(f, "the stream has ended: the meter takes no more ticks"),
            Self::Unencodable { reason } => write!(f, "stop-latency/1 not encodable: {reason}"),
            Self::Signer { detail } => write!(f, "signer failed: {detail}"),
            Self::Cose(c) => write!(f, "signed stop-latency/1 refused: {}", c.as_str()),
            Self::PayloadRefused(r) => write!(f, "payload refused: {r}"),
        }
    }
}

impl std::error::Error for StopLatencyError {}

/// The crate's `Result`.
pub type Result<T, E = StopLatencyError> = core::result::Result<T, E>;
