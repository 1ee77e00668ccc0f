//! The crate's error: what stops a directory from being read or written at all.

use std::path::PathBuf;

/// Why the store could not read or write a directory. A directory that was read and found
/// wanting is not an error: its problems are in the [`DirReport`](crate::DirReport).
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// Reading or writing a file failed.
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The path given as a stream directory is not a directory.
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// An output destination that must not be replaced (a directory, a symbolic link, one of
    /// the command's inputs).
    Destination {
        /// The destination.
        path: PathBuf,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A file a writer only ever creates is already there: a run directory's file where the
    /// writer never writes over another run, or a stream's signed document.
    Exists {
        /// The file found.
        path: PathBuf,
    },
    /// A name that is not one of a run directory's files ([`RUN_FILES`](crate::layout::RUN_FILES)),
    /// or one staged twice.
    NotARunFile {
        /// The name.
        name: String,
    },
    /// Another writer holds the directory's lock.
    Locked {
        /// The directory.
        path: PathBuf,
    },
    /// `summary.json` could not be encoded.
    Summary {
        /// The cause.
        source: serde_json::Error,
    },
    /// No decodable line of `receipts.jsonl` has this window id.
    WindowOutOfRange {
        /// The window asked for.
        window_id: u64,
        /// The first receipt's window id, if any.
        first: Option<u64>,
        /// The last receipt's window id, if any.
        last: Option<u64>,
    },
    /// The window's receipt is there, but no checkpoint that verifies seals its line.
    WindowNotSealed {
        /// The window asked for.
        window_id: u64,
        /// The most receipts a verified checkpoint seals (0 without one).
        sealed: u64,
    },
    /// The inclusion receipt derived for the window does not verify (the lines are not the
    /// sealed ones), or `seals.cbor` cannot be read as a file.
    InclusionNotDerivable {
        /// The window asked for.
        window_id: u64,
        /// Why: the seal crate's refusal code, or `not_regular_file`.
        code: &'static str,
    },
}

impl StoreError {
    /// A stable code for the variant.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Io { .. } => "io",
            Self::NotADirectory { .. } => "not_a_directory",
            Self::Destination { .. } => "refused_destination",
            Self::Exists { .. } => "exists",
            Self::NotARunFile { .. } => "not_a_run_file",
            Self::Locked { .. } => "locked",
            Self::Summary { .. } => "summary_unencodable",
            Self::WindowOutOfRange { .. } => "window_out_of_range",
            Self::WindowNotSealed { .. } => "window_not_sealed",
            Self::InclusionNotDerivable { .. } => "inclusion_not_derivable",
        }
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Self::NotADirectory { path } => write!(f, "{}: not a directory", path.display()),
            Self::Destination { path, reason } => {
                write!(f, "{}: {reason}; refusing to replace it", path.display())
            }
            Self::Exists { path } => {
                write!(
                    f,
                    "{}: exists; a writer never writes over it",
                    path.display()
                )
            }
            Self::NotARunFile { name } => {
                write!(f, "{name:?}: not a run directory's file, or staged twice")
            }
            Self::Locked { path } => write!(
                f,
                "{}: another writer holds this directory's lock",
                path.display()
            ),
            Self::Summary { source } => write!(f, "summary.json: {source}"),
            Self::WindowOutOfRange {
                window_id,
                first,
                last,
            } => match (first, last) {
                (Some(a), Some(b)) => write!(
                    f,
                    "window_out_of_range: no receipt of window {window_id} in receipts.jsonl \
                     (its receipts are of windows {a}..={b}, empty windows have none)"
                ),
                _ => write!(
                    f,
                    "window_out_of_range: no receipt of window {window_id}: receipts.jsonl \
                     holds no receipt"
                ),
            },
            Self::WindowNotSealed { window_id, sealed } => write!(
                f,
                "window_not_sealed: window {window_id}'s receipt is not sealed by any checkpoint \
                 that verifies (they seal the first {sealed} receipts)"
            ),
            Self::InclusionNotDerivable { window_id, code } => write!(
                f,
                "inclusion_not_derivable ({code}): no verified inclusion receipt can be \
                 derived for window {window_id}{}",
                if *code == "not_regular_file" {
                    ": seals.cbor is not a regular file"
                } else {
                    ": the receipts are not the sealed ones"
                }
            ),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Summary { source } => Some(source),
            _ => None,
        }
    }
}

/// `Result` with [`StoreError`].
pub type Result<T> = core::result::Result<T, StoreError>;
