//! Why a command failed, and so its exit code.

/// Why a command failed, and so its exit code.
#[derive(Debug)]
pub(crate) enum Failure {
    /// A refusal or a verification failure: exit 1.
    Refused(String),
    /// A usage or I/O error: exit 2.
    Usage(String),
}

impl Failure {
    /// A usage or I/O error about `path`.
    pub(crate) fn io(path: &std::path::Path, e: impl std::fmt::Display) -> Self {
        Self::Usage(format!("{}: {e}", path.display()))
    }
}

impl From<jouleclaw_stack::store::StoreError> for Failure {
    fn from(e: jouleclaw_stack::store::StoreError) -> Self {
        Self::Usage(e.to_string())
    }
}

/// `Result` of a command.
pub(crate) type CmdResult = Result<(), Failure>;
