//! `registry-leaf/1`: what the registry log records about one call.

use jouleclaw_seal::StreamSeal;
use jouleclaw_stream::canon;

use crate::error::{RegistryError, Result};

/// The value of the leaf's `jc_registry` field.
pub const LEAF_KIND: &str = "registry-leaf/1";

/// The longest `steward` or `stream_id` a leaf carries, in bytes (the seal's own bound).
pub const MAX_LEAF_STRING_BYTES: usize = 4_096;

const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// One call as the registry records it: the call's final seal, named by stream, root, size and
/// the seal document's BLAKE3 content hash.
///
/// Its canonical bytes (JCR-1, keys sorted) are
/// `{"jc_registry":"registry-leaf/1","seal_hash":H,"seal_root":R,"seal_tree_size":N,"steward":S,"stream_id":I}`
/// with `H` and `R` as 64 lowercase hex digits; the log's entry for the leaf is the BLAKE3 hash
/// of those bytes, and its RFC 9162 leaf hash is `SHA-256(0x00 || entry)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryLeaf {
    /// The steward that signed the seal.
    pub steward: String,
    /// The call's stream id.
    pub stream_id: String,
    /// The final seal's Merkle root (RFC 9162, SHA-256).
    pub seal_root: [u8; 32],
    /// The final seal's tree size (the number of window receipts it covers).
    pub seal_tree_size: u64,
    /// BLAKE3 of the final `stream-seal/1` document's canonical bytes.
    pub seal_hash: [u8; 32],
}

impl RegistryLeaf {
    /// The leaf of a final seal. Refuses a seal that is not final: a call is registered once it
    /// has ended.
    pub fn of_final_seal(seal: &StreamSeal) -> Result<Self> {
        if !seal.is_final {
            return Err(RegistryError::SealInvalid {
                reason: "the seal is not the stream's final seal".into(),
            });
        }
        let document = seal.encode().map_err(|e| RegistryError::SealInvalid {
            reason: e.to_string(),
        })?;
        Ok(Self {
            steward: seal.steward.clone(),
            stream_id: seal.stream_id.clone(),
            seal_root: seal.root,
            seal_tree_size: seal.tree_size,
            seal_hash: *blake3::hash(&document).as_bytes(),
        })
    }

    /// The leaf's canonical JSON bytes.
    pub fn encode(&self) -> Result<Vec<u8>> {
        for (field, s) in [("steward", &self.steward), ("stream_id", &self.stream_id)] {
            if s.is_empty() {
                return Err(RegistryError::LeafUnencodable {
                    field,
                    reason: "empty",
                });
            }
            if s.len() > MAX_LEAF_STRING_BYTES {
                return Err(RegistryError::LeafUnencodable {
                    field,
                    reason: "longer than 4,096 bytes",
                });
            }
        }
        if self.seal_tree_size == 0 || self.seal_tree_size > MAX_SAFE_INTEGER {
            return Err(RegistryError::LeafUnencodable {
                field: "seal_tree_size",
                reason: "zero or above 2^53-1",
            });
        }
        let mut out = Vec::with_capacity(256 + self.steward.len() + self.stream_id.len());
        out.extend_from_slice(b"{\"jc_registry\":");
        canon::write_str(&mut out, LEAF_KIND);
        out.extend_from_slice(b",\"seal_hash\":");
        canon::write_hex_str(&mut out, &self.seal_hash);
        out.extend_from_slice(b",\"seal_root\":");
        canon::write_hex_str(&mut out, &self.seal_root);
        out.extend_from_slice(b",\"seal_tree_size\":");
        canon::write_u64(&mut out, self.seal_tree_size).map_err(|_| {
            RegistryError::LeafUnencodable {
                field: "seal_tree_size",
                reason: "above 2^53-1",
            }
        })?;
        out.extend_from_slice(b",\"steward\":");
        canon::write_str(&mut out, &self.steward);
        out.extend_from_slice(b",\"stream_id\":");
        canon::write_str(&mut out, &self.stream_id);
        out.push(b'}');
        Ok(out)
    }

    /// The log entry: BLAKE3 of the canonical bytes.
    pub fn entry(&self) -> Result<[u8; 32]> {
        Ok(*blake3::hash(&self.encode()?).as_bytes())
    }

    /// Compares the leaf with the one derived from a call's verified final seal, naming the
    /// first field that differs.
    pub fn check_matches(&self, derived: &RegistryLeaf) -> Result<()> {
        let field = if self.steward != derived.steward {
            "steward"
        } else if self.stream_id != derived.stream_id {
            "stream_id"
        } else if self.seal_root != derived.seal_root {
            "seal_root"
        } else if self.seal_tree_size != derived.seal_tree_size {
            "seal_tree_size"
        } else if self.seal_hash != derived.seal_hash {
            "seal_hash"
        } else {
            return Ok(());
        };
        Err(RegistryError::LeafMismatch { field })
    }
}
