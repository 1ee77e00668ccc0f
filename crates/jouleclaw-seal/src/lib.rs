//! jouleclaw-seal: an RFC 9162 Merkle log over one stream's window receipts, `stream-seal/1`
//! checkpoints signed once per checkpoint, RFC 9942 COSE receipts of inclusion and
//! consistency, and a completeness checker. Normative: `spec/STREAM-SEAL.md`.
//!
//! Pure: no I/O, clock, threads or randomness. Time enters as each receipt's `closed_at`;
//! signing goes through `jouleclaw_jcr1::cose::Signer`.
//!
//! The public interface is:
//! - [`merkle`]: [`Frontier`] (O(log n) append and root), [`MerkleLog`] (proofs for any
//!   earlier size, bounded), [`leaf_hash`], [`root_from_inclusion`], [`verify_inclusion`],
//!   [`root_from_consistency`], [`verify_consistency`];
//! - [`StreamSeal`], [`decode_seal`], [`SealDecoder`], [`seal::json_schema`]: the checkpoint
//!   document;
//! - [`sign_checkpoint`], [`SignedCheckpoint`], [`verify_checkpoint`],
//!   [`verify_inclusion_receipt`], [`verify_consistency_step`], [`SealVerifier`] (one
//!   signature check per checkpoint): the COSE structures;
//! - [`StreamSealer`], [`SealBatch`]: what the pipeline drives;
//! - [`check_stream`], [`ReceiptEntry`], [`Problem`], [`StreamReport`]: completeness;
//! - [`SealError`] and its codes ([`SealCode`], [`ProofCode`], [`CoseCode`]).
//!
//! ```
//! use jouleclaw_jcr1::{UtcSecond, cose::{Signer, SoftwareSigner}};
//! use jouleclaw_seal::*;
//!
//! let signer = SoftwareSigner::rfc8032_test_key();
//! let key = signer.verifying_key();
//! let at = UtcSecond::parse("2026-06-05T00:00:00Z").unwrap();
//! let mut sealer = StreamSealer::new("stream-demo", "did:example:steward", 1 << 10);
//! let hashes: Vec<[u8; 32]> = (0..5u8).map(|i| *blake3::hash(&[i]).as_bytes()).collect();
//! for (w, h) in hashes.iter().enumerate() {
//!     sealer.append(w as u64 + 1, h, at)?;
//! }
//! let batch = sealer.checkpoint(&signer, true)?;
//! assert_eq!(batch.checkpoint.seal.tree_size, 5);
//! // One signature serves every window's inclusion receipt.
//! let (window_id, receipt) = &batch.inclusion[3];
//! let ok = verify_inclusion_receipt(receipt, &hashes[3], &key)?;
//! assert_eq!((*window_id, ok.leaf_index), (4, 3));
//! assert!(verify_inclusion_receipt(receipt, &hashes[2], &key).is_err());
//! // The completeness check over the receipts and the checkpoints.
//! let checkpoint = verify_checkpoint(&batch.checkpoint.cose_sign1, &key)?;
//! let entries: Vec<ReceiptEntry> = hashes.iter().enumerate().map(|(w, h)| ReceiptEntry {
//!     window_id: w as u64 + 1,
//!     content_hash: *h,
//!     stream_id: "stream-demo".into(),
//!     steward: "did:example:steward".into(),
//! }).collect();
//! assert!(check_stream(&entries, &[checkpoint.clone()]).is_complete());
//! let report = check_stream(&entries[..4], &[checkpoint]);
//! assert_eq!(report.problems[0].code(), "missing_window");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

pub mod call_document;
mod complete;
mod cose;
mod error;
pub mod merkle;
pub mod seal;
mod sealer;

pub use complete::{MAX_NAMED_GAPS, Problem, ReceiptEntry, StreamReport, check_stream};
pub use cose::{
    CONSISTENCY_PROOFS, Checkpoint, ConsistencyProof, INCLUSION_PROOFS, InclusionProof,
    MAX_CACHED_SIGNATURES, RFC9162_SHA256, SEAL_DOCUMENT_LABEL, SealVerifier, SignedCheckpoint,
    VDP_LABEL, VDS_LABEL, VerifiedInclusion, consistency_unprotected, inclusion_unprotected,
    protected_bytes, sig_structure, sign_checkpoint, verify_checkpoint, verify_consistency_step,
    verify_inclusion_receipt,
};
pub use error::{CoseCode, ProofCode, Result, SealCode, SealError, SealRefusal};
pub use merkle::{
    DEFAULT_MAX_LEAVES, Frontier, Hash, MerkleLog, leaf_hash, receipts_root, root_from_consistency,
    root_from_inclusion, verify_consistency, verify_inclusion,
};
pub use seal::{
    MAX_SEALED_DOCUMENTS, SCHEMA_ID_V2, SealDecoder, SealedDocuments, StreamSeal, decode_seal,
    document_digest, is_document_kind,
};
pub use sealer::{SealBatch, StreamSealer};
