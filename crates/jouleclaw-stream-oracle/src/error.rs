//! The crate's one error type.

use core::fmt;

/// Why a verdict could not be written.
///
/// Every variant leaves the value it was raised by (and any output buffer) unchanged.
/// [`OracleError::code`] gives a stable string per variant for logs and wire formats.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OracleError {
    /// A `yield` verdict's `seen_at` exceeds `2^53 - 1` and has no canonical JSON encoding.
    SeenAtUnsafe {
        /// The refused window id.
        seen_at: u64,
    },
}

impl OracleError {
    /// A stable code naming the rule that refused; it never changes meaning.
    pub fn code(&self) -> &'static str {
        match self {
            Self::SeenAtUnsafe { .. } => "verdict_seen_at_unsafe",
        }
    }
}

impl fmt::Display for OracleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SeenAtUnsafe { seen_at } => write!(
                f,
                "yield seen_at {seen_at} exceeds 2^53-1 and has no canonical JSON encoding"
            ),
        }
    }
}

impl std::error::Error for OracleError {}

/// `Result` with [`OracleError`].
pub type Result<T, E = OracleError> = core::result::Result<T, E>;
