//! One window's RFC 9942 inclusion receipt, derived from a sealed directory's `seals.cbor` and
//! `receipts.jsonl` for a third party (`spec/STREAM-AT-REST.md` section 5.6; `jouleclaw
//! receipts inclusion DIR --window N`).

use std::path::Path;

use jouleclaw_jcr1::Jcr1Error;
use jouleclaw_jcr1::cose::{self, ValidKey};
use jouleclaw_seal::{MerkleLog, SealVerifier};

use crate::error::{Result, StoreError};
use crate::layout::{self, Input, SEALS_CBOR};
use crate::verify::{MAX_RECEIPTS, verify_dir};

/// A derived inclusion receipt and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DerivedInclusion {
    /// The receipt's window id.
    pub window_id: u64,
    /// Its 0-based line in `receipts.jsonl` (its leaf index).
    pub leaf_index: u64,
    /// BLAKE3 of the line (the leaf entry a verifier of the receipt needs).
    pub content_hash: [u8; 32],
    /// The 0-based item of `seals.cbor` whose checkpoint the receipt is under (the first
    /// verified checkpoint that seals the leaf).
    pub checkpoint_index: u64,
    /// That checkpoint's tree size.
    pub tree_size: u64,
    /// The tagged COSE_Sign1 bytes: byte for byte the item `inclusion.cbor` holds for this line
    /// when the run wrote that file.
    pub receipt: Vec<u8>,
}

/// Derives the inclusion receipt of window `window_id` of the stream directory `dir` under
/// `key` (checked once by the caller): the line of `receipts.jsonl` that decodes to that window, the first checkpoint of
/// `seals.cbor` that verifies under `key` and seals the line's leaf, and the proof from the
/// lines; the receipt is verified before it is returned. Nothing is written.
///
/// Errors: [`StoreError::WindowOutOfRange`] when no decodable line has that window id,
/// [`StoreError::WindowNotSealed`] when no verified checkpoint seals its line (no `seals.cbor`
/// included), [`StoreError::InclusionNotDerivable`] when the derived receipt does not verify
/// (the lines are not the sealed ones) or `seals.cbor` is not a regular file; an I/O error
/// or [`StoreError::NotADirectory`] as [`verify_dir`].
pub fn derive_inclusion_receipt(
    dir: &Path,
    key: &ValidKey,
    window_id: u64,
) -> Result<DerivedInclusion> {
    let report = verify_dir(dir, key, &mut |_, _| {})?;
    let Some((leaf_index, record)) = report
        .receipts
        .iter()
        .enumerate()
        .find(|(_, r)| r.window_id == Some(window_id))
    else {
        return Err(StoreError::WindowOutOfRange {
            window_id,
            first: report.totals.first_window,
            last: report.totals.last_window,
        });
    };
    let leaf_index = leaf_index as u64;
    let path = dir.join(SEALS_CBOR);
    let file = match layout::open_input(&path)? {
        Input::File(f) => f,
        Input::Missing => {
            return Err(StoreError::WindowNotSealed {
                window_id,
                sealed: 0,
            });
        }
        Input::NotRegular(_) => {
            return Err(StoreError::InclusionNotDerivable {
                window_id,
                code: "not_regular_file",
            });
        }
    };
    let mut log = MerkleLog::new(MAX_RECEIPTS);
    for r in &report.receipts {
        // verify_dir reads at most MAX_RECEIPTS lines, so the log never refuses.
        let _ = log.append(&r.content_hash);
    }
    let mut verifier = SealVerifier::new(*key.verifying_key());
    let limit = (report.receipts.len() as u64)
        .saturating_add(1)
        .min(MAX_RECEIPTS);
    let mut sealed = 0u64;
    for (i, item) in cose::SequenceReader::new(file).enumerate() {
        let i = i as u64;
        if i >= limit {
            break;
        }
        let bytes = match item {
            Ok(b) => b,
            // A refused item is skipped, as the verifier skips it.
            Err(Jcr1Error::Cose(_)) => continue,
            Err(_) => {
                return Err(StoreError::io(
                    &path,
                    std::io::Error::other("reading the CBOR sequence failed"),
                ));
            }
        };
        let Ok(checkpoint) = verifier.verify_checkpoint(&bytes) else {
            continue;
        };
        let tree_size = checkpoint.seal.tree_size;
        if tree_size <= leaf_index {
            sealed = sealed.max(tree_size);
            continue;
        }
        let receipt = verifier
            .derive_inclusion_receipt(&bytes, &log, leaf_index, &record.content_hash)
            .map_err(|e| StoreError::InclusionNotDerivable {
                window_id,
                code: e.code(),
            })?;
        return Ok(DerivedInclusion {
            window_id,
            leaf_index,
            content_hash: record.content_hash,
            checkpoint_index: i,
            tree_size,
            receipt,
        });
    }
    Err(StoreError::WindowNotSealed { window_id, sealed })
}
