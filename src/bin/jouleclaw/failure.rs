//! Why a command failed, and so its exit code.

use jouleclaw_stack::store::StoreError;

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

/// The one mapping of the store's errors: a refusal of the input (the window asked for has no
/// receipt, is not sealed, or its inclusion receipt cannot be derived) exits 1; an I/O error, a
/// path that is not a directory, a refused destination, a locked directory, an unencodable
/// summary (and an error of a later version of the store) exit 2.
impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::WindowOutOfRange { .. }
            | StoreError::WindowNotSealed { .. }
            | StoreError::InclusionNotDerivable { .. } => Self::Refused(e.to_string()),
            StoreError::Io { .. }
            | StoreError::NotADirectory { .. }
            | StoreError::Destination { .. }
            | StoreError::Locked { .. }
            | StoreError::Summary { .. } => Self::Usage(e.to_string()),
            _ => Self::Usage(e.to_string()),
        }
    }
}

/// `Result` of a command.
pub(crate) type CmdResult = Result<(), Failure>;

#[cfg(test)]
mod tests {
    use super::*;

    fn exit_code(e: StoreError) -> u8 {
        match Failure::from(e) {
            Failure::Refused(_) => 1,
            Failure::Usage(_) => 2,
        }
    }

    #[test]
    fn a_store_refusal_exits_1() {
        assert_eq!(
            exit_code(StoreError::WindowOutOfRange {
                window_id: 9,
                first: Some(0),
                last: Some(3),
            }),
            1
        );
        assert_eq!(
            exit_code(StoreError::WindowNotSealed {
                window_id: 2,
                sealed: 0,
            }),
            1
        );
        assert_eq!(
            exit_code(StoreError::InclusionNotDerivable {
                window_id: 2,
                code: "proof_root_mismatch",
            }),
            1
        );
    }

    #[test]
    fn a_store_io_or_usage_error_exits_2() {
        let path = std::path::PathBuf::from("d");
        assert_eq!(
            exit_code(StoreError::Io {
                path: path.clone(),
                source: std::io::Error::other("read failed"),
            }),
            2
        );
        assert_eq!(
            exit_code(StoreError::NotADirectory { path: path.clone() }),
            2
        );
        assert_eq!(
            exit_code(StoreError::Destination {
                path: path.clone(),
                reason: "is a directory",
            }),
            2
        );
        assert_eq!(exit_code(StoreError::Locked { path }), 2);
    }
}
