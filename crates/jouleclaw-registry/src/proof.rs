//! The offline proof of one call: a C2SP `tlog-proof@v1` file whose `extra` data is the call's
//! final seal (its COSE_Sign1 checkpoint), whose index and inclusion proof place the call's
//! leaf in the registry, and whose checkpoint carries the witnesses' cosignatures.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use jouleclaw_seal::{Hash, StreamSeal, leaf_hash, root_from_inclusion, verify_checkpoint};

use crate::error::{RegistryError, Result};
use crate::leaf::RegistryLeaf;
use crate::note::{VerifiedCheckpoint, verify_checkpoint_note};
use crate::policy::WitnessPolicy;

/// The first line of a proof.
pub const PROOF_HEADER: &str = "c2sp.org/tlog-proof@v1";
/// The longest proof file read, in bytes.
pub const MAX_PROOF_BYTES: usize = 256 * 1024;
/// The most inclusion-proof lines (a tree of at most 2^63 leaves).
pub const MAX_PROOF_HASHES: usize = 63;

/// A parsed, not yet verified, proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallProof {
    /// The call's final seal, a COSE_Sign1 `stream-seal/1` checkpoint.
    pub seal_cose: Vec<u8>,
    /// The leaf's index in the registry.
    pub index: u64,
    /// The inclusion proof, leaf's sibling first.
    pub path: Vec<Hash>,
    /// The registry checkpoint note with its signatures.
    pub checkpoint: Vec<u8>,
}

impl CallProof {
    /// The file's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = format!(
            "{PROOF_HEADER}\nextra {}\nindex {}\n",
            B64.encode(&self.seal_cose),
            self.index
        )
        .into_bytes();
        for h in &self.path {
            out.extend_from_slice(B64.encode(h).as_bytes());
            out.push(b'\n');
        }
        out.push(b'\n');
        out.extend_from_slice(&self.checkpoint);
        out
    }

    /// Parses a proof file; the `extra` line is required (it carries the seal).
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let bad = |reason| RegistryError::ProofMalformed { reason };
        if bytes.len() > MAX_PROOF_BYTES {
            return Err(bad("the proof is above 256 KiB"));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8"))?;
        let (head, checkpoint) = text
            .split_once("\n\n")
            .ok_or(bad("no empty line before the checkpoint"))?;
        let mut lines = head.split('\n');
        if lines.next() != Some(PROOF_HEADER) {
            return Err(bad("the first line is not c2sp.org/tlog-proof@v1"));
        }
        let extra = lines
            .next()
            .and_then(|l| l.strip_prefix("extra "))
            .ok_or(bad("no extra line with the call's final seal"))?;
        let seal_cose = B64
            .decode(extra)
            .map_err(|_| bad("the extra data is not base64"))?;
        let index = lines
            .next()
            .and_then(|l| l.strip_prefix("index "))
            .ok_or(bad("no index line"))?;
        let index_ok = !index.is_empty()
            && index.len() <= 20
            && index.bytes().all(|b| b.is_ascii_digit())
            && (index == "0" || !index.starts_with('0'));
        if !index_ok {
            return Err(bad("the index is a decimal without leading zeroes"));
        }
        let index: u64 = index
            .parse()
            .map_err(|_| bad("the index is above 2^64-1"))?;
        let mut path = Vec::new();
        for line in lines {
            if path.len() == MAX_PROOF_HASHES {
                return Err(bad("more than 63 inclusion-proof hashes"));
            }
            let h = B64
                .decode(line)
                .map_err(|_| bad("a proof hash is not base64"))?;
            path.push(h.try_into().map_err(|_| bad("a proof hash has 32 bytes"))?);
        }
        let proof = Self {
            seal_cose,
            index,
            path,
            checkpoint: checkpoint.as_bytes().to_vec(),
        };
        if proof.encode() != bytes {
            return Err(bad("the proof is not in its one canonical form"));
        }
        Ok(proof)
    }
}

/// What a verified proof establishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedCall {
    /// The call's final seal (signature verified under the steward key).
    pub seal: StreamSeal,
    /// The leaf derived from it.
    pub leaf: RegistryLeaf,
    /// The leaf's index.
    pub index: u64,
    /// The cosigned registry checkpoint.
    pub checkpoint: VerifiedCheckpoint,
    /// When the policy's quorum had cosigned ([`WitnessPolicy::quorum_time`]).
    witnessed_by: Option<u64>,
}

impl VerifiedCall {
    /// When the policy's quorum had cosigned: the `quorum`-th earliest of the witnesses'
    /// cosignature times ([`WitnessPolicy::quorum_time`]). The call's final seal existed by
    /// then; a witness outside the quorum (or one inside it) that backdates its cosignature
    /// does not move it.
    pub fn witnessed_by(&self) -> Option<u64> {
        self.witnessed_by
    }

    /// The earliest cosignature time of any policy witness: what one witness says, not a
    /// bound the quorum stands behind.
    pub fn earliest_cosignature(&self) -> Option<u64> {
        self.checkpoint
            .cosignatures
            .iter()
            .map(|c| c.timestamp)
            .min()
    }
}

/// Verifies a call's proof offline under a policy: the seal verifies under the policy's steward
/// key and is final; the leaf derived from it is included at `index` in the checkpoint's tree;
/// the checkpoint is signed by the steward under the policy's origin and cosigned by a quorum.
pub fn verify_call_proof(proof: &CallProof, policy: &WitnessPolicy) -> Result<VerifiedCall> {
    // The log key was accepted once, as a `ValidKey`, when the policy was read.
    let seal = verify_checkpoint(&proof.seal_cose, policy.log.key())
        .map_err(|e| RegistryError::SealInvalid {
            reason: e.to_string(),
        })?
        .seal;
    let leaf = RegistryLeaf::of_final_seal(&seal)?;
    let checkpoint =
        verify_checkpoint_note(&proof.checkpoint, &policy.log, &policy.witness_keys())?;
    policy.check_quorum(checkpoint.cosignatures.iter().map(|c| c.witness.as_str()))?;
    let root = root_from_inclusion(
        proof.index,
        checkpoint.body.size,
        &leaf_hash(&leaf.entry()?),
        &proof.path,
    )
    .map_err(|_| RegistryError::InclusionInvalid)?;
    if root != checkpoint.body.root {
        return Err(RegistryError::InclusionInvalid);
    }
    Ok(VerifiedCall {
        seal,
        leaf,
        index: proof.index,
        witnessed_by: policy.quorum_time(&checkpoint.cosignatures),
        checkpoint,
    })
}

/// Compares two checkpoints an auditor holds, both already verified under the steward's key:
/// equal sizes with different roots are a fork; otherwise `proof` (RFC 9162 consistency from
/// the smaller to the larger) must verify, and a proof that does not is a fork too.
pub fn check_no_fork(a: &VerifiedCheckpoint, b: &VerifiedCheckpoint, proof: &[Hash]) -> Result<()> {
    let (small, large) = if a.body.size <= b.body.size {
        (a, b)
    } else {
        (b, a)
    };
    if small.body.origin != large.body.origin {
        return Err(RegistryError::OriginMismatch);
    }
    if small.body.size == large.body.size {
        return if small.body.root == large.body.root {
            Ok(())
        } else {
            Err(RegistryError::Fork {
                size: small.body.size,
            })
        };
    }
    if small.body.size == 0 {
        return Ok(());
    }
    jouleclaw_seal::verify_consistency(
        small.body.size,
        large.body.size,
        &small.body.root,
        &large.body.root,
        proof,
    )
    .map_err(|_| RegistryError::Fork {
        size: small.body.size,
    })
}
