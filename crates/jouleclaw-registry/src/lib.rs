//! jouleclaw-registry: a steward's call registry. One RFC 9162 leaf per call's final seal;
//! checkpoints as C2SP `tlog-checkpoint` notes signed with the steward's Ed25519 key
//! (`signed-note`); witness cosignatures (`tlog-cosignature`, cosignature/v1); one offline
//! proof file per call (`tlog-proof@v1`); witness policies with a quorum. Normative:
//! `spec/CALL-REGISTRY.md`.
//!
//! The bytes (leaves, the log, notes, policies, proofs) are pure: no I/O, clock, threads or
//! randomness. The registry on disk, its writer and the witness client are apart from them:
//! [`Registry`] reads a registry directory (bounded, no planted symbolic link followed) and
//! locks it, [`Appender`] registers calls (a sealed run directory or a final seal), [`collect`]
//! asks the policy's witnesses at once (its HTTP client behind the `witness-http` feature),
//! [`verify_run`] and [`verify_stored_call`] check a registered call's proof on disk. The
//! `jouleclaw registry` command parses arguments and prints what these return.
//!
//! The public interface is:
//! - [`RegistryLeaf`]: the leaf bytes of one call;
//! - [`RegistryLog`], [`Appended`]: the log, its checkpoints and proofs;
//! - [`NoteKey`], [`CheckpointBody`], [`sign_checkpoint_note`], [`verify_checkpoint_note`],
//!   [`merge_cosignatures`], [`cosignature_line`], [`VerifiedCheckpoint`], [`Cosignature`]: notes and cosignatures;
//! - [`WitnessPolicy`], [`PolicyWitness`]: policies;
//! - [`CallProof`], [`verify_call_proof`], [`VerifiedCall`], [`check_no_fork`]: proofs;
//! - [`Registry`], [`read_policy`], [`read_policy_for`], [`final_seal_of`], [`read_capped`],
//!   [`write_file`], [`write_run_proof`], [`prepare_stored_call`] and the file names and bounds ([`PROOF_FILE`], [`LEAVES_FILE`], ...): the
//!   registry and a run on disk;
//! - [`Appender`], [`Registration`], [`Quorum`], [`witness_again`], [`Rewitnessed`],
//!   [`Resign`]: the writer;
//! - [`audit`], [`RegistryAudit`], [`AuditProblem`]: a registry's audit;
//! - [`collect`], [`WITNESS_TIMEOUT`], [`WITNESS_ATTEMPTS`], [`WITNESS_BACKOFF`]: the witness
//!   client;
//! - [`verify_run`], [`verify_stored_call`]: a registered call on disk;
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
//!
//! A call registered on disk, as `jouleclaw registry add` registers it: a registry directory,
//! a sealed call's final seal (here from `jouleclaw_seal::StreamSealer`), its proof, verified.
//!
//! ```
//! use jouleclaw_jcr1::{UtcSecond, cose::{Signer, SoftwareSigner}};
//! use jouleclaw_registry::*;
//!
//! let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
//! let steward = SoftwareSigner::from_seed(&[7; 32]);
//! let key = NoteKey::new("registry.example/steward", ALG_ED25519, steward.verifying_key().as_bytes())?;
//! Registry::create(&tmp.path().join("reg"), &key, &[])?;
//!
//! let mut sealer = jouleclaw_seal::StreamSealer::new("call-1", "did:example:steward", 1 << 10);
//! let at = UtcSecond::parse("2026-06-05T00:00:00Z").ok_or("time")?;
//! sealer.append(1, blake3::hash(b"window 1").as_bytes(), at).map_err(|e| e.to_string())?;
//! let seal = sealer.checkpoint(&steward, true).map_err(|e| e.to_string())?.checkpoint.cose_sign1;
//!
//! let mut appender = Appender::open(&tmp.path().join("reg"), steward, None, None)?;
//! let call = appender.register_seal(seal)?;
//! assert_eq!((call.index, call.size), (0, 1));
//! call.witnessed()?; // no policy: nothing to wait for
//! let proof = CallProof::parse(&call.proof)?;
//! assert_eq!(proof.index, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

mod appender;
mod audit;
mod disk;
mod error;
mod leaf;
mod log;
mod note;
mod policy;
mod proof;
mod run;
mod witness;

pub use appender::{Appender, Quorum, Registration, Resign, Rewitnessed, witness_again};
pub use audit::{AuditProblem, RegistryAudit, audit};
pub use disk::{
    CHECKPOINT_FILE, CONFIG_FILE, LEAVES_FILE, LOCK_FILE, MAX_CONFIG_BYTES, MAX_LEAF_LINE_BYTES,
    MAX_SEALS, MAX_STORED_NOTE_BYTES, PROOF_FILE, Registry, final_seal_of, prepare_stored_call,
    read_capped, read_policy, read_policy_for, write_file, write_run_proof,
};
pub use run::{verify_run, verify_stored_call};
pub use witness::{WITNESS_ATTEMPTS, WITNESS_BACKOFF, WITNESS_TIMEOUT, collect};

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
