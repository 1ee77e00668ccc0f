//! [`StreamSealer`]: one stream's log, and the checkpoints and inclusion receipts it yields.

use jouleclaw_jcr1::UtcSecond;
use jouleclaw_jcr1::cose::Signer;

use crate::cose::{ConsistencyProof, SignedCheckpoint, sign_checkpoint};
use crate::error::{Result, SealError};
use crate::merkle::{Hash, MerkleLog};
use crate::seal::{SealedDocuments, StreamSeal};

/// What one checkpoint yields: the signed checkpoint (for `seals.cbor`) and one inclusion
/// receipt per window appended since the previous checkpoint, in leaf order (for
/// `inclusion.cbor`), or none from a sealer that mints none
/// ([`StreamSealer::without_inclusion_receipts`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealBatch {
    /// The checkpoint.
    pub checkpoint: SignedCheckpoint,
    /// Leaf index of the first receipt in `inclusion`.
    pub first_leaf: u64,
    /// `(window_id, inclusion receipt)` for leaves `first_leaf..tree_size`; empty from a
    /// sealer that mints none ([`StreamSealer::without_inclusion_receipts`]).
    pub inclusion: Vec<(u64, Vec<u8>)>,
}

/// Appends one stream's receipts (window id and content hash) and seals them on demand. Pure:
/// time enters as each receipt's `closed_at`, signing through the [`Signer`] seam.
#[derive(Debug, Clone)]
pub struct StreamSealer {
    stream_id: String,
    steward: String,
    log: MerkleLog,
    window_ids: Vec<u64>,
    last_closed_at: Option<UtcSecond>,
    previous: Option<(u64, Hash)>,
    finished: bool,
    inclusion_receipts: bool,
}

impl StreamSealer {
    /// A sealer for one stream whose log holds at most `max_leaves` receipts.
    pub fn new(stream_id: &str, steward: &str, max_leaves: u64) -> Self {
        Self {
            stream_id: stream_id.to_owned(),
            steward: steward.to_owned(),
            log: MerkleLog::new(max_leaves),
            window_ids: Vec::new(),
            last_closed_at: None,
            previous: None,
            finished: false,
            inclusion_receipts: true,
        }
    }

    /// This sealer without inclusion receipts: its checkpoints' [`SealBatch::inclusion`] is
    /// empty. Each of them is derivable, byte for byte, from the checkpoint and the receipts
    /// it seals ([`SignedCheckpoint::inclusion_receipts`], `spec/STREAM-AT-REST.md` layout
    /// `stream-at-rest/2`), so a writer that stores none need not mint them.
    pub fn without_inclusion_receipts(mut self) -> Self {
        self.inclusion_receipts = false;
        self
    }

    /// Receipts appended so far.
    pub fn size(&self) -> u64 {
        self.log.size()
    }

    /// Receipts appended since the last checkpoint.
    pub fn pending(&self) -> u64 {
        self.log.size() - self.previous.map_or(0, |(n, _)| n)
    }

    /// The log (for proofs).
    pub fn log(&self) -> &MerkleLog {
        &self.log
    }

    /// Appends a receipt; returns its leaf index. Window ids must increase; nothing may follow
    /// the final seal. Refusals change nothing.
    pub fn append(
        &mut self,
        window_id: u64,
        content_hash: &[u8; 32],
        closed_at: UtcSecond,
    ) -> Result<u64> {
        if self.finished {
            return Err(SealError::Finished);
        }
        if let Some(&previous) = self.window_ids.last()
            && window_id <= previous
        {
            return Err(SealError::WindowNotIncreasing {
                previous,
                window_id,
            });
        }
        let index = self.log.size();
        self.log.append(content_hash)?;
        self.window_ids.push(window_id);
        self.last_closed_at = Some(closed_at);
        Ok(index)
    }

    /// Signs a checkpoint over every receipt appended so far and builds the inclusion receipts
    /// of the ones appended since the previous checkpoint (unless the sealer mints none). `is_final` closes the stream.
    /// Needs at least one receipt.
    pub fn checkpoint(&mut self, signer: &dyn Signer, is_final: bool) -> Result<SealBatch> {
        self.checkpoint_with(signer, is_final, None)
    }

    /// Signs the final checkpoint as a `stream-seal/2` seal that also commits to `documents`:
    /// each signed document of the call by kind, with the SHA-256 of its COSE_Sign1 bytes
    /// ([`crate::seal::document_digest`]). Closes the stream. An empty map states that the call
    /// has no document.
    pub fn finish_with_documents(
        &mut self,
        signer: &dyn Signer,
        documents: SealedDocuments,
    ) -> Result<SealBatch> {
        self.checkpoint_with(signer, true, Some(documents))
    }

    fn checkpoint_with(
        &mut self,
        signer: &dyn Signer,
        is_final: bool,
        documents: Option<SealedDocuments>,
    ) -> Result<SealBatch> {
        if self.finished {
            return Err(SealError::Finished);
        }
        let n = self.log.size();
        let (Some(&first), Some(&last), Some(closed_at)) = (
            self.window_ids.first(),
            self.window_ids.last(),
            self.last_closed_at,
        ) else {
            return Err(SealError::SizeOutOfRange {
                size: 0,
                tree_size: 0,
            });
        };
        let root = self.log.root();
        let seal = StreamSeal {
            stream_id: self.stream_id.clone(),
            steward: self.steward.clone(),
            tree_size: n,
            root,
            first_window_id: first,
            last_window_id: last,
            empty_windows_skipped: (last - first + 1) - n,
            closed_at,
            is_final,
            documents,
        };
        let first_leaf = self.previous.map_or(0, |(p, _)| p);
        let consistency = match self.previous {
            Some((p, _)) if p < n => Some(ConsistencyProof {
                first_size: p,
                second_size: n,
                path: self.log.consistency_proof(p, n)?,
            }),
            _ => None,
        };
        let checkpoint = sign_checkpoint(signer, &seal, consistency)?;
        let inclusion = if self.inclusion_receipts {
            let receipts = checkpoint.inclusion_receipts(&self.log, first_leaf, n)?;
            (first_leaf..n)
                .zip(receipts)
                .map(|(i, r)| (self.window_ids[i as usize], r))
                .collect()
        } else {
            Vec::new()
        };
        self.previous = Some((n, root));
        self.finished = is_final;
        Ok(SealBatch {
            checkpoint,
            first_leaf,
            inclusion,
        })
    }
}
