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
    Cose(crate::cose::CoseRefusal),
    /// A key file is malformed.
    KeyFile {
        /// What is wrong.
        detail: &'static str,
    },
    /// The signer failed.
    Signer {
        /// What failed.
        detail: String,
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
            Self::Signer { .. } => "signer_failed",
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
            Self::Signer { detail } => write!(f, "signer failed: {detail}"),
        }
    }
}

impl std::error::Error for Jcr1Error {}

impl From<Refusal> for Jcr1Error {
    fn from(r: Refusal) -> Self {
        Self::Refused(r)
    }
}

/// `Result` with [`Jcr1Error`].
pub type Result<T, E = Jcr1Error> = core::result::Result<T, E>;
