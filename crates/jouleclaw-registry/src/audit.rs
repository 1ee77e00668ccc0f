//! `registry audit` (spec/CALL-REGISTRY.md section 6): a registry's checkpoint is cosigned by a
//! quorum and agrees with its leaves, calls registered more than once are named, and
//! checkpoints an auditor saw elsewhere agree with the leaves (a fork or a rollback does not).

use std::path::PathBuf;

use crate::disk::{Registry, read_capped};
use crate::{
    CheckpointBody, MAX_NOTE_BYTES, RegistryError, RegistryLog, Result, VerifiedCheckpoint,
    WitnessPolicy, verify_checkpoint_note,
};

/// What [`audit`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryAudit {
    /// The registry's origin (untrusted text: escape it to print it).
    pub origin: String,
    /// The registry's leaves.
    pub calls: u64,
    /// The size of its latest checkpoint.
    pub checkpoint_size: u64,
    /// The valid cosignatures of policy witnesses on it.
    pub cosigned: usize,
    /// The policy's witnesses.
    pub witnesses: usize,
    /// Every problem, in the order found; none for a consistent, witnessed registry.
    pub problems: Vec<AuditProblem>,
}

/// One problem of a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuditProblem {
    /// The latest checkpoint is not cosigned by the policy's quorum.
    NotWitnessed {
        /// Why (`quorum_not_met: ...`).
        why: String,
    },
    /// A checkpoint signed at a size above the registry's leaves: rolled back or forked.
    RolledBack {
        /// Which checkpoint.
        what: String,
        /// Its size.
        size: u64,
        /// The registry's leaves.
        leaves: u64,
    },
    /// A checkpoint whose root the leaves do not give at its size.
    Fork {
        /// Which checkpoint.
        what: String,
        /// Its size.
        size: u64,
    },
    /// A checkpoint seen elsewhere that does not verify.
    SeenUnverified {
        /// Which file.
        what: String,
        /// Why.
        why: String,
    },
    /// A stream id registered more than once: its history was re-minted.
    Reregistered {
        /// The stream id (untrusted text).
        stream_id: String,
        /// Its leaves.
        leaves: Vec<u64>,
    },
    /// Leaves after the checkpoint's size, in no checkpoint.
    Unwitnessed {
        /// How many.
        count: u64,
        /// The checkpoint's size.
        size: u64,
    },
}

impl AuditProblem {
    /// The problem in words, with untrusted text (a stream id) passed through `escape`.
    pub fn describe(&self, escape: impl Fn(&str) -> String) -> String {
        match self {
            Self::NotWitnessed { why } => format!("the latest checkpoint is not witnessed: {why}"),
            Self::RolledBack { what, size, leaves } => format!(
                "{what}: signed at size {size}, but the registry holds {leaves} leaves: it was rolled back or forked"
            ),
            Self::Fork { what, size } => format!(
                "{what}: fork: the steward signed another root at size {size} than these leaves give"
            ),
            Self::SeenUnverified { what, why } => format!("{what}: {why}"),
            Self::Reregistered { stream_id, leaves } => format!(
                "stream {} is registered {} times (leaves {leaves:?}): its history was re-minted",
                escape(stream_id),
                leaves.len()
            ),
            Self::Unwitnessed { count, size } => format!(
                "{count} leaves after the checkpoint's size {size} are in no checkpoint: not witnessed \
                 (`jouleclaw registry witness` signs and submits one that covers them)"
            ),
        }
    }
}

/// Audits the registry `reg` under `policy`, with the checkpoint notes in `seen` (files, each
/// at most [`MAX_NOTE_BYTES`]) obtained elsewhere. A policy of another steward, a registry
/// without a checkpoint or whose checkpoint does not verify, and a `seen` file that cannot be
/// read are errors; everything else found is a problem of the returned audit.
pub fn audit(reg: &Registry, policy: &WitnessPolicy, seen: &[PathBuf]) -> Result<RegistryAudit> {
    if &policy.log != reg.steward() {
        return Err(RegistryError::StewardMismatch {
            message: "the policy names another steward key or origin".into(),
        });
    }
    let mut problems = Vec::new();
    let note = reg.checkpoint().ok_or_else(|| {
        RegistryError::refused(format!("{}: no checkpoint yet", reg.dir().display()))
    })?;
    let latest = verify_checkpoint_note(note, reg.steward(), &policy.witness_keys())
        .map_err(RegistryError::refused)?;
    if let Err(e) = policy.check_quorum(latest.cosignatures.iter().map(|c| c.witness.as_str())) {
        problems.push(AuditProblem::NotWitnessed { why: e.to_string() });
    }
    let log = reg.log();
    agree(log, &latest, "the registry's own checkpoint", &mut problems);
    for path in seen {
        let bytes = read_capped(path, MAX_NOTE_BYTES)?;
        match verify_checkpoint_note(&bytes, reg.steward(), &policy.witness_keys()) {
            Ok(v) => agree(log, &v, &path.display().to_string(), &mut problems),
            Err(e) => problems.push(AuditProblem::SeenUnverified {
                what: path.display().to_string(),
                why: e.to_string(),
            }),
        }
    }
    // Grouped by stream id: every leaf is a seal under the registry's one key, and the seal's
    // `steward` label is the key holder's choice (a re-mint under another label is still one).
    for (stream_id, leaves) in log.reregistered() {
        problems.push(AuditProblem::Reregistered { stream_id, leaves });
    }
    if log.size() > latest.body.size {
        problems.push(AuditProblem::Unwitnessed {
            count: log.size() - latest.body.size,
            size: latest.body.size,
        });
    }
    Ok(RegistryAudit {
        origin: log.origin().to_owned(),
        calls: log.size(),
        checkpoint_size: latest.body.size,
        cosigned: latest.cosignatures.len(),
        witnesses: policy.witnesses.len(),
        problems,
    })
}

/// A checkpoint agrees with the leaves: its size is within them and its root is theirs at it.
fn agree(
    log: &RegistryLog,
    checkpoint: &VerifiedCheckpoint,
    what: &str,
    problems: &mut Vec<AuditProblem>,
) {
    let CheckpointBody { size, root, .. } = checkpoint.body;
    if size > log.size() {
        problems.push(AuditProblem::RolledBack {
            what: what.to_owned(),
            size,
            leaves: log.size(),
        });
        return;
    }
    match log.root_at(size) {
        Ok(r) if r == root => {}
        _ => problems.push(AuditProblem::Fork {
            what: what.to_owned(),
            size,
        }),
    }
}
