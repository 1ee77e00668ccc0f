//! The crate's one error enum; every refusal has a stable code.

use std::fmt;
use std::path::PathBuf;

/// A refusal or failure of the registry crate. [`RegistryError::code`] is stable: a code never
/// changes meaning (spec/CALL-REGISTRY.md, "Refusal codes").
///
/// Its `Display` is what the `jouleclaw` command prints: `code: why` for a refusal of bytes
/// (a note, a policy, a proof, a leaf) and for a registration's outcome (the codes of
/// spec/CALL-REGISTRY.md section 3.1); the message alone, which names its file, for an error
/// about files ([`RegistryError::Io`], [`RegistryError::FileRefused`],
/// [`RegistryError::Locked`], [`RegistryError::StewardMismatch`], [`RegistryError::Refused`]).
/// [`RegistryError::is_refusal`] tells a refusal (exit 1) from a usage or I/O error (exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// A leaf field cannot be written (empty, too long, above 2^53-1).
    LeafUnencodable {
        /// The field.
        field: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// The log is at its documented size bound.
    LogFull {
        /// The bound.
        max_leaves: u64,
    },
    /// An origin or key name is not a valid C2SP signed-note key name.
    InvalidName {
        /// What was wrong.
        reason: &'static str,
    },
    /// A checkpoint note is not a well-formed `tlog-checkpoint` of this profile.
    CheckpointMalformed {
        /// What was wrong.
        reason: &'static str,
    },
    /// The checkpoint is for another origin than expected.
    OriginMismatch,
    /// A signed note is malformed (C2SP signed-note framing, sizes, base64).
    NoteMalformed {
        /// What was wrong.
        reason: &'static str,
    },
    /// The steward's signature on a checkpoint is missing.
    StewardSignatureMissing,
    /// A signature line from a trusted key does not verify.
    SignatureInvalid {
        /// The key name on the line.
        name: String,
    },
    /// A verifier key (`name+hash+base64`) is malformed, of another type, or weak.
    VerifierKeyInvalid {
        /// What was wrong.
        reason: &'static str,
    },
    /// The policy file is malformed.
    PolicyMalformed {
        /// 1-based line number.
        line: usize,
        /// What was wrong.
        reason: &'static str,
    },
    /// Fewer witnesses than the policy's quorum cosigned the checkpoint.
    QuorumNotMet {
        /// Valid cosignatures from distinct policy witnesses.
        have: usize,
        /// The quorum.
        need: usize,
    },
    /// A `tlog-proof` file is malformed.
    ProofMalformed {
        /// What was wrong.
        reason: &'static str,
    },
    /// The inclusion proof does not lead from the call's leaf to the checkpoint's root.
    InclusionInvalid,
    /// The consistency proof does not verify, or the sizes cannot be proved consistent.
    ConsistencyInvalid,
    /// The call's final seal does not verify or is not final.
    SealInvalid {
        /// What was wrong.
        reason: String,
    },
    /// The call's leaf names another stream, steward, root, size or seal than the files.
    LeafMismatch {
        /// The field that differs.
        field: &'static str,
    },
    /// Two checkpoints signed by the steward prove two different histories.
    Fork {
        /// The size at which the views differ.
        size: u64,
    },
    /// The signer failed.
    Signer {
        /// The signer's message.
        reason: String,
    },
    /// A file or directory of a registry, a run or a policy could not be opened, read,
    /// written or synced (exit 2).
    Io {
        /// What failed, with the path first.
        message: String,
    },
    /// A file refused unread or unused (exit 2): not a regular file (a planted symbolic link or
    /// FIFO), longer than its bound, not UTF-8, a policy or a registry configuration that does
    /// not parse.
    FileRefused {
        /// Why, with the path first.
        message: String,
    },
    /// Another writer holds the registry directory's lock (exit 2).
    Locked {
        /// The registry directory.
        dir: PathBuf,
    },
    /// The registry, the steward's key and the policy name different stewards (exit 2).
    StewardMismatch {
        /// Which disagree.
        message: String,
    },
    /// A call, a run directory or a registry's content is refused (exit 1): a final seal that
    /// does not verify or is not final, a torn or foreign leaf line, a proof of another call.
    Refused {
        /// Why, with the file first when there is one.
        message: String,
    },
    /// `registry_unusable`: the registry cannot be opened, read or locked, or it, the key and
    /// the policy name different stewards. Nothing was appended (exit 2).
    RegistryUnusable {
        /// Why.
        message: String,
    },
    /// `registration_refused`: the call cannot be registered (no final seal that verifies
    /// under the steward's key, the registry full). Nothing was appended (exit 1).
    RegistrationRefused {
        /// Why.
        message: String,
    },
    /// `run_unreadable`: the run directory's `seals.cbor` cannot be opened or read. Nothing
    /// was appended (exit 2).
    RunUnreadable {
        /// Why.
        message: String,
    },
    /// `registry_write_failed`: writing the leaf, the checkpoint or the call's proof failed.
    /// The registry may hold the leaf; its checkpoint and the proof may be older (exit 2).
    RegistryWriteFailed {
        /// Why.
        message: String,
    },
    /// `not_witnessed`: the leaf, the checkpoint and the call's proof are written, but fewer
    /// witnesses than the policy's quorum cosigned (exit 1).
    NotWitnessed {
        /// Why (`quorum_not_met: ...` and what to do).
        message: String,
    },
}

impl RegistryError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::LeafUnencodable { .. } => "leaf_unencodable",
            Self::LogFull { .. } => "registry_full",
            Self::InvalidName { .. } => "invalid_name",
            Self::CheckpointMalformed { .. } => "checkpoint_malformed",
            Self::OriginMismatch => "origin_mismatch",
            Self::NoteMalformed { .. } => "note_malformed",
            Self::StewardSignatureMissing => "steward_signature_missing",
            Self::SignatureInvalid { .. } => "signature_invalid",
            Self::VerifierKeyInvalid { .. } => "verifier_key_invalid",
            Self::PolicyMalformed { .. } => "policy_malformed",
            Self::QuorumNotMet { .. } => "quorum_not_met",
            Self::ProofMalformed { .. } => "proof_malformed",
            Self::InclusionInvalid => "inclusion_invalid",
            Self::ConsistencyInvalid => "consistency_invalid",
            Self::SealInvalid { .. } => "seal_invalid",
            Self::LeafMismatch { .. } => "leaf_mismatch",
            Self::Fork { .. } => "fork",
            Self::Signer { .. } => "signer_failed",
            Self::Io { .. } => "io_failed",
            Self::FileRefused { .. } => "file_refused",
            Self::Locked { .. } => "registry_locked",
            Self::StewardMismatch { .. } => "steward_mismatch",
            Self::Refused { .. } => "refused",
            Self::RegistryUnusable { .. } => "registry_unusable",
            Self::RegistrationRefused { .. } => "registration_refused",
            Self::RunUnreadable { .. } => "run_unreadable",
            Self::RegistryWriteFailed { .. } => "registry_write_failed",
            Self::NotWitnessed { .. } => "not_witnessed",
        }
    }

    /// `true` for a refusal of what was given (a command exits 1), `false` for a file, a lock
    /// or a write that failed, or for arguments that do not fit together (exit 2).
    pub fn is_refusal(&self) -> bool {
        !matches!(
            self,
            Self::Io { .. }
                | Self::FileRefused { .. }
                | Self::Locked { .. }
                | Self::StewardMismatch { .. }
                | Self::RegistryUnusable { .. }
                | Self::RunUnreadable { .. }
                | Self::RegistryWriteFailed { .. }
        )
    }

    /// `registry_unusable` with this error's message (what opening a registry to append to
    /// reports for any error).
    pub fn into_unusable(self) -> Self {
        Self::RegistryUnusable {
            message: self.to_string(),
        }
    }

    /// `registry_write_failed` with this error's message.
    pub fn into_write_failed(self) -> Self {
        Self::RegistryWriteFailed {
            message: self.to_string(),
        }
    }

    /// An I/O error about `path`.
    pub(crate) fn io(path: &std::path::Path, e: impl fmt::Display) -> Self {
        Self::Io {
            message: format!("{}: {e}", path.display()),
        }
    }

    /// A file refused: `path: why`.
    pub(crate) fn file(path: &std::path::Path, why: impl fmt::Display) -> Self {
        Self::FileRefused {
            message: format!("{}: {why}", path.display()),
        }
    }

    /// A refusal with its message.
    pub(crate) fn refused(why: impl fmt::Display) -> Self {
        Self::Refused {
            message: why.to_string(),
        }
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io { message }
            | Self::FileRefused { message }
            | Self::StewardMismatch { message }
            | Self::Refused { message } => return f.write_str(message),
            Self::Locked { dir } => {
                return write!(
                    f,
                    "{}: another jouleclaw is writing this registry",
                    dir.display()
                );
            }
            _ => {}
        }
        write!(f, "{}: ", self.code())?;
        match self {
            Self::LeafUnencodable { field, reason } => write!(f, "leaf field {field}: {reason}"),
            Self::LogFull { max_leaves } => {
                write!(f, "the registry holds its bound of {max_leaves} calls")
            }
            Self::InvalidName { reason } => write!(f, "{reason}"),
            Self::CheckpointMalformed { reason } => write!(f, "{reason}"),
            Self::OriginMismatch => write!(f, "the checkpoint is for another origin"),
            Self::NoteMalformed { reason } => write!(f, "{reason}"),
            Self::StewardSignatureMissing => {
                write!(
                    f,
                    "the checkpoint carries no signature of the steward's key"
                )
            }
            Self::SignatureInvalid { name } => {
                write!(f, "the signature line of {name:?} does not verify")
            }
            Self::VerifierKeyInvalid { reason } => write!(f, "{reason}"),
            Self::PolicyMalformed { line, reason } => write!(f, "line {line}: {reason}"),
            Self::QuorumNotMet { have, need } => write!(
                f,
                "{have} of the policy's witnesses cosigned the checkpoint; the quorum is {need}"
            ),
            Self::ProofMalformed { reason } => write!(f, "{reason}"),
            Self::InclusionInvalid => {
                write!(
                    f,
                    "the inclusion proof does not lead to the checkpoint's root"
                )
            }
            Self::ConsistencyInvalid => write!(f, "the consistency proof does not verify"),
            Self::SealInvalid { reason } => write!(f, "{reason}"),
            Self::LeafMismatch { field } => {
                write!(
                    f,
                    "the registered leaf's {field} differs from the call's files"
                )
            }
            Self::Fork { size } => write!(
                f,
                "two checkpoints signed by the steward disagree at size {size}: the registry forked"
            ),
            Self::Signer { reason } => write!(f, "{reason}"),
            Self::RegistryUnusable { message }
            | Self::RegistrationRefused { message }
            | Self::RunUnreadable { message }
            | Self::RegistryWriteFailed { message }
            | Self::NotWitnessed { message } => f.write_str(message),
            Self::Io { .. }
            | Self::FileRefused { .. }
            | Self::Locked { .. }
            | Self::StewardMismatch { .. }
            | Self::Refused { .. } => Ok(()),
        }
    }
}

impl std::error::Error for RegistryError {}

/// The crate's result type.
pub type Result<T, E = RegistryError> = std::result::Result<T, E>;
