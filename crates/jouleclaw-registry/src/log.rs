//! The registry log: one leaf per registered call, RFC 9162 SHA-256 (the seal crate's tree).

use std::collections::{BTreeMap, HashMap};

use jouleclaw_jcr1::cose::Signer;
use jouleclaw_seal::{Hash, MerkleLog};

use crate::error::{RegistryError, Result};
use crate::leaf::RegistryLeaf;
use crate::note::{CheckpointBody, check_name, sign_checkpoint_note};

/// The most calls one registry log holds in memory: 32 bytes of leaf hash and about 80 bytes of
/// stream index each (the index keys streams by a 32-byte hash, never by their names), so a
/// full log takes about 120 MB.
pub const DEFAULT_MAX_CALLS: u64 = 1 << 20;

/// What [`RegistryLog::append`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The new leaf's index.
    pub index: u64,
    /// Earlier leaves of the same stream id, whatever their `steward` label (a re-registered
    /// call): an auditor sees them all.
    pub earlier: Vec<u64>,
}

/// A steward's registry log. Pure: the caller stores the leaves and the checkpoints.
///
/// A registry is one signing key's: every leaf is the final seal of a call signed by the
/// registry's key (the one its checkpoints are signed with; the CLI verifies each seal under it
/// before appending). Calls are therefore told apart by stream id alone, which is grouping by
/// (signing key, stream id). The seal's `steward` field is a label the key's holder writes:
/// a call re-minted under another label is the same call registered twice.
#[derive(Debug, Clone)]
pub struct RegistryLog {
    origin: String,
    log: MerkleLog,
    by_stream: HashMap<[u8; 32], Vec<u64>>,
    reregistered: BTreeMap<String, Vec<u64>>,
}

/// The index key of a stream: BLAKE3 of its id.
fn stream_key(stream_id: &str) -> [u8; 32] {
    *blake3::hash(stream_id.as_bytes()).as_bytes()
}

impl RegistryLog {
    /// An empty log for `origin` holding at most `max_calls` leaves.
    pub fn new(origin: &str, max_calls: u64) -> Result<Self> {
        check_name(origin)?;
        Ok(Self {
            origin: origin.to_owned(),
            log: MerkleLog::new(max_calls),
            by_stream: HashMap::new(),
            reregistered: BTreeMap::new(),
        })
    }

    /// The origin line.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The number of leaves.
    pub fn size(&self) -> u64 {
        self.log.size()
    }

    /// Appends a call's leaf.
    pub fn append(&mut self, leaf: &RegistryLeaf) -> Result<Appended> {
        let entry = leaf.entry()?;
        let index = self.log.size();
        self.log
            .append(&entry)
            .map_err(|_| RegistryError::LogFull {
                max_leaves: self.log.max_leaves(),
            })?;
        let slot = self
            .by_stream
            .entry(stream_key(&leaf.stream_id))
            .or_default();
        let earlier = slot.clone();
        slot.push(index);
        if !earlier.is_empty() {
            self.reregistered
                .insert(leaf.stream_id.clone(), slot.clone());
        }
        Ok(Appended { index, earlier })
    }

    /// Every leaf index registered for a stream id, whatever the leaves' `steward` labels.
    pub fn indices_of(&self, stream_id: &str) -> &[u64] {
        self.by_stream
            .get(&stream_key(stream_id))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Whether leaf `index` is `leaf`.
    pub fn holds_at(&self, index: u64, leaf: &RegistryLeaf) -> Result<bool> {
        Ok(self.log.leaf(index) == Some(jouleclaw_seal::leaf_hash(&leaf.entry()?)))
    }

    /// Stream ids registered more than once (under one label or several), with their leaf
    /// indices, sorted by stream id.
    pub fn reregistered(&self) -> Vec<(String, Vec<u64>)> {
        self.reregistered
            .iter()
            .map(|(id, v)| (id.clone(), v.clone()))
            .collect()
    }

    /// The root of the tree of the first `size` leaves.
    pub fn root_at(&self, size: u64) -> Result<Hash> {
        self.log
            .root_at(size)
            .map_err(|_| RegistryError::ConsistencyInvalid)
    }

    /// The checkpoint body at the current size.
    pub fn body(&self) -> CheckpointBody {
        CheckpointBody {
            origin: self.origin.clone(),
            size: self.log.size(),
            root: self.log.root(),
        }
    }

    /// The current checkpoint as a note signed by the steward.
    pub fn sign_checkpoint(&self, signer: &dyn Signer) -> Result<Vec<u8>> {
        sign_checkpoint_note(&self.body(), signer)
    }

    /// The RFC 9162 inclusion proof of leaf `index` in the tree of size `size`.
    pub fn inclusion_proof(&self, index: u64, size: u64) -> Result<Vec<Hash>> {
        self.log
            .inclusion_proof(index, size)
            .map_err(|_| RegistryError::InclusionInvalid)
    }

    /// The RFC 9162 consistency proof from `old` to `new` (empty when `old` is zero, as
    /// tlog-witness asks).
    pub fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<Hash>> {
        if old == 0 {
            return Ok(Vec::new());
        }
        self.log
            .consistency_proof(old, new)
            .map_err(|_| RegistryError::ConsistencyInvalid)
    }
}
