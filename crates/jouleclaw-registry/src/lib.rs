//! jouleclaw-registry: a steward's call registry. One RFC 9162 leaf per call's final seal;
//! checkpoints as C2SP `tlog-checkpoint` notes signed with the steward's Ed25519 key
//! (`signed-note`); witness cosignatures (`tlog-cosignature`, cosignature/v1); one offline
//! proof file per call (`tlog-proof@v1`); witness policies with a quorum. Normative:
//! `spec/CALL-REGISTRY.md`.
//!
//! Pure: no I/O, clock, threads or randomness. The `jouleclaw` CLI stores the registry and
//! speaks the `tlog-witness` protocol; this crate builds and checks the bytes.
//!
//! The public interface is:
//! - [`RegistryLeaf`]: the leaf bytes of one call;
//! - [`RegistryLog`], [`Appended`]: the log, its checkpoints and proofs;
//! - [`NoteKey`], [`CheckpointBody`], [`sign_checkpoint_note`], [`verify_checkpoint_note`],
//!   [`merge_cosignatures`], [`cosignature_line`], [`VerifiedCheckpoint`], [`Cosignature`]: notes and cosignatures;
//! - [`WitnessPolicy`], [`PolicyWitness`]: policies;
//! - [`CallProof`], [`verify_call_proof`], [`VerifiedCall`], [`check_no_fork`]: proofs;
//! - [`RegistryError`] and its stable codes.
//!
//! ```
//! use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
//! use jouleclaw_registry::*;
//!
//! let steward = SoftwareSigner::rfc8032_test_key();
//! let mut log = RegistryLog::new("registry.example/steward", 1 << 10)?;
//! let leaf = RegistryLeaf {
//!     steward: "did:example:steward".into(),
//!     stream_id: "call-1".into(),
//!     seal_root: [7; 32],
//!     seal_tree_size: 13,
//!     seal_hash: [9; 32],
//! };
//! assert_eq!(log.append(&leaf)?.index, 0);
//! let note = log.sign_checkpoint(&steward)?;
//! let key = NoteKey::new("registry.example/steward", 0x01, steward.verifying_key().as_bytes())?;
//! let checked = verify_checkpoint_note(&note, &key, &[])?;
//! assert_eq!(checked.body.size, 1);
//! # Ok::<(), RegistryError>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

mod error;
mod leaf;
mod log;
mod note;
mod policy;
mod proof;

pub use error::{RegistryError, Result};
pub use leaf::{LEAF_KIND, MAX_LEAF_STRING_BYTES, RegistryLeaf};
pub use log::{Appended, DEFAULT_MAX_CALLS, RegistryLog};
pub use note::{
    ALG_COSIGNATURE_V1, ALG_ED25519, CheckpointBody, Cosignature, MAX_NOTE_BYTES,
    MAX_NOTE_SIGNATURES, NoteKey, VerifiedCheckpoint, add_checkpoint_request, check_name,
    conflict_size, cosignature_line, cosignature_message, key_id, merge_cosignatures,
    sign_checkpoint_note, verify_checkpoint_note,
};
pub use policy::{MAX_POLICY_BYTES, MAX_POLICY_WITNESSES, PolicyWitness, WitnessPolicy};
pub use proof::{
    CallProof, MAX_PROOF_BYTES, MAX_PROOF_HASHES, PROOF_HEADER, VerifiedCall, check_no_fork,
    verify_call_proof,
};
