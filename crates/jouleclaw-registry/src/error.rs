//! The crate's one error enum; every refusal has a stable code.

use std::fmt;

/// A refusal of the registry crate. [`RegistryError::code`] is stable: a code never changes
/// meaning (spec/CALL-REGISTRY.md, "Refusal codes").
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
        }
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
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
        }
    }
}

impl std::error::Error for RegistryError {}

/// The crate's result type.
pub type Result<T, E = RegistryError> = std::result::Result<T, E>;
