//! COSE_Sign1 structures of the seal profile: the signed checkpoint and its RFC 9942 receipts.
//!
//! One Ed25519 signature per checkpoint over `Sig_structure(protected, root)`; the protected
//! header carries the seal document, so every window's inclusion receipt reuses the same
//! protected bytes and the same signature, and differs only in its unprotected header (its own
//! inclusion proof). The payload (the root) is always detached.
//!
//! Every byte of the envelope is the one COSE profile's (`jouleclaw_jcr1::cose::document`:
//! protected header, Sig_structure, envelope, signature check under a `ValidKey`) and its CBOR
//! heads (`jouleclaw_jcr1::cose::cbor`, writer and reader); this module adds what is the seal's:
//! the `vds` and seal-document header entries, the RFC 9942 proofs of the unprotected header,
//! and the order of the seal's checks and codes.

use coset::cbor::value::Value;
use ed25519_dalek::VerifyingKey;
use jouleclaw_jcr1::cose::cbor::{self, Reader, int_of, read_value};
use jouleclaw_jcr1::cose::document::{self, HeaderValue, Protected};
use jouleclaw_jcr1::cose::{Signer, ValidKey, kid};

use crate::error::{CoseCode, ProofCode, Result, SealError};
use crate::merkle::{Hash, MerkleLog, leaf_hash, root_from_inclusion};
use crate::seal::{StreamSeal, decode_seal};

/// `vds` (RFC 9942): verifiable data structure.
pub const VDS_LABEL: i64 = 395;
/// `vdp` (RFC 9942): verifiable data structure proofs.
pub const VDP_LABEL: i64 = 396;
/// RFC9162_SHA256.
pub const RFC9162_SHA256: i64 = 1;
/// Inclusion proofs inside `vdp`.
pub const INCLUSION_PROOFS: i64 = -1;
/// Consistency proofs inside `vdp`.
pub const CONSISTENCY_PROOFS: i64 = -2;
/// Private-use protected header label carrying the canonical `stream-seal/1` document.
pub const SEAL_DOCUMENT_LABEL: i64 = -65537;

/// An RFC 9162 inclusion proof: `[tree_size, leaf_index, inclusion_path]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InclusionProof {
    /// Leaves in the tree the proof is against.
    pub tree_size: u64,
    /// The leaf's index.
    pub leaf_index: u64,
    /// The audit path, leaf to root.
    pub path: Vec<Hash>,
}

/// An RFC 9162 consistency proof: `[tree_size_1, tree_size_2, consistency_path]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsistencyProof {
    /// The older size.
    pub first_size: u64,
    /// The newer size.
    pub second_size: u64,
    /// The consistency path.
    pub path: Vec<Hash>,
}

/// A signed checkpoint with every intermediate a verifier in another language may want.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCheckpoint {
    /// The seal.
    pub seal: StreamSeal,
    /// Its canonical bytes.
    pub seal_json: Vec<u8>,
    /// The serialized protected header (shared by the checkpoint and its inclusion receipts).
    pub protected: Vec<u8>,
    /// `Sig_structure(protected, root)`, the signed bytes.
    pub to_be_signed: Vec<u8>,
    /// The Ed25519 signature.
    pub signature: [u8; 64],
    /// The consistency proof from the previous checkpoint, if any.
    pub consistency: Option<ConsistencyProof>,
    /// The tagged COSE_Sign1 of the checkpoint itself (a consistency receipt, or a bare signed
    /// root for the first checkpoint).
    pub cose_sign1: Vec<u8>,
}

/// A verified checkpoint (signature checked; the consistency proof is checked against the
/// previous checkpoint by [`crate::check_stream`] or [`verify_consistency_step`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The seal.
    pub seal: StreamSeal,
    /// The consistency proof it carries, if any.
    pub consistency: Option<ConsistencyProof>,
    /// The signer's kid.
    pub kid: [u8; 32],
}

/// A verified inclusion receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedInclusion {
    /// The seal whose root includes the leaf.
    pub seal: StreamSeal,
    /// The leaf's index in the tree.
    pub leaf_index: u64,
    /// The signer's kid.
    pub kid: [u8; 32],
}

/// The protected header: `{1: -8, 4: kid, 15: {1: steward, 2: sub}, 395: 1, -65537:
/// seal_json}` in deterministic CBOR (labels in bytewise order of their encodings).
pub fn protected_bytes(seal: &StreamSeal, seal_json: &[u8], kid: &[u8; 32]) -> Vec<u8> {
    Protected {
        content_type: None,
        kid,
        steward: &seal.steward,
        subject: &seal.subject(),
        extra: &[
            (VDS_LABEL, HeaderValue::Int(RFC9162_SHA256)),
            (SEAL_DOCUMENT_LABEL, HeaderValue::Bytes(seal_json)),
        ],
    }
    .to_bytes()
}

/// `Sig_structure = ["Signature1", protected, h'', root]` (RFC 9052 section 4.4): the
/// profile's, with the detached root as the payload.
pub fn sig_structure(protected: &[u8], root: &Hash) -> Vec<u8> {
    document::sig_structure(protected, root)
}

fn proof_bytes(a: u64, b: u64, path: &[Hash]) -> Vec<u8> {
    let mut out = Vec::with_capacity(24 + 34 * path.len());
    out.push(0x83);
    cbor::head(&mut out, 0, a);
    cbor::head(&mut out, 0, b);
    cbor::head(&mut out, 4, path.len() as u64);
    for h in path {
        cbor::string(&mut out, 2, h);
    }
    out
}

/// The unprotected header `{396: {label: [<<[a, b, path]>>]}}`.
fn vdp_bytes(label: i64, a: u64, b: u64, path: &[Hash]) -> Vec<u8> {
    let inner = proof_bytes(a, b, path);
    let mut out = Vec::with_capacity(16 + inner.len());
    out.push(0xa1);
    cbor::int(&mut out, VDP_LABEL);
    out.push(0xa1);
    cbor::int(&mut out, label);
    out.push(0x81);
    cbor::string(&mut out, 2, &inner);
    out
}

/// The inclusion receipt's unprotected header.
pub fn inclusion_unprotected(p: &InclusionProof) -> Vec<u8> {
    vdp_bytes(INCLUSION_PROOFS, p.tree_size, p.leaf_index, &p.path)
}

/// The checkpoint's unprotected header: `{}` without a consistency proof.
pub fn consistency_unprotected(p: Option<&ConsistencyProof>) -> Vec<u8> {
    match p {
        Some(p) => vdp_bytes(CONSISTENCY_PROOFS, p.first_size, p.second_size, &p.path),
        None => vec![0xa0],
    }
}

/// `18([protected, unprotected, nil, signature])`: the profile's envelope, payload detached.
fn envelope(protected: &[u8], unprotected: &[u8], signature: &[u8]) -> Vec<u8> {
    document::envelope_with(protected, unprotected, None, signature)
}

/// Signs a checkpoint: one signature over `Sig_structure(protected, seal.root)`.
/// `consistency` must lead from the previous checkpoint's size to `seal.tree_size`
/// (`None` for the first checkpoint, or when the size did not change).
pub fn sign_checkpoint(
    signer: &dyn Signer,
    seal: &StreamSeal,
    consistency: Option<ConsistencyProof>,
) -> Result<SignedCheckpoint> {
    if let Some(c) = &consistency
        && (c.second_size != seal.tree_size || c.first_size == 0 || c.first_size >= c.second_size)
    {
        return Err(ProofCode::SizesOutOfOrder.into());
    }
    let seal_json = seal.encode()?;
    let protected = protected_bytes(seal, &seal_json, &kid(&signer.verifying_key()));
    let to_be_signed = sig_structure(&protected, &seal.root);
    let signature = signer.sign(&to_be_signed).map_err(|e| SealError::Signer {
        detail: format!("{} ({e})", e.code()),
    })?;
    let cose_sign1 = envelope(
        &protected,
        &consistency_unprotected(consistency.as_ref()),
        &signature,
    );
    Ok(SignedCheckpoint {
        seal: seal.clone(),
        seal_json,
        protected,
        to_be_signed,
        signature,
        consistency,
        cose_sign1,
    })
}

impl SignedCheckpoint {
    /// The RFC 9942 inclusion receipt for `proof` (against this checkpoint's tree size), reusing
    /// the checkpoint's protected header and signature. No signing happens here.
    pub fn inclusion_receipt(&self, proof: &InclusionProof) -> Result<Vec<u8>> {
        if proof.tree_size != self.seal.tree_size {
            return Err(ProofCode::TreeSizeMismatch.into());
        }
        Ok(envelope(
            &self.protected,
            &inclusion_unprotected(proof),
            &self.signature,
        ))
    }

    /// Inclusion receipts for leaves `first..last` (`last <= tree_size`) from `log`, whose
    /// first `tree_size` leaves must be the sealed ones (the root is checked).
    pub fn inclusion_receipts(
        &self,
        log: &MerkleLog,
        first: u64,
        last: u64,
    ) -> Result<Vec<Vec<u8>>> {
        let n = self.seal.tree_size;
        if log.root_at(n)? != self.seal.root {
            return Err(ProofCode::RootMismatch.into());
        }
        if first > last || last > n {
            return Err(SealError::SizeOutOfRange {
                size: last,
                tree_size: n,
            });
        }
        (first..last)
            .map(|i| {
                let path = log.inclusion_proof(i, n)?;
                self.inclusion_receipt(&InclusionProof {
                    tree_size: n,
                    leaf_index: i,
                    path,
                })
            })
            .collect()
    }
}

/// What the envelope parser extracts.
struct Parsed {
    seal: StreamSeal,
    protected: Vec<u8>,
    unprotected: Unprotected,
    unprotected_bytes: Vec<u8>,
    signature: Vec<u8>,
    kid: [u8; 32],
}

/// The unprotected header as [`parse`] read it.
enum Unprotected {
    /// `{}`.
    Empty,
    /// `{396: {label: [<<[a, b, path]>>]}}` read by [`parse_fast`]: its bytes are exactly
    /// [`vdp_bytes`]`(label, a, b, path)`.
    Proof {
        label: i64,
        a: u64,
        b: u64,
        path: Vec<Hash>,
    },
    /// Anything else, as the general CBOR reader decoded it.
    Value(Value),
}

/// Envelope and protected header checks shared by checkpoints and inclusion receipts, in the
/// order of the spec's verification table. `key_kid` is `kid(key)`.
///
/// A checkpoint or receipt exactly as [`sign_checkpoint`] writes them is read by
/// [`parse_fast`] without building CBOR values; anything else (and every refusal) goes
/// through the general reader below, so each input gets the answer and code it always got.
fn parse(bytes: &[u8], key_kid: &[u8; 32]) -> Result<Parsed> {
    if let Some(p) = parse_fast(bytes, key_kid) {
        return Ok(p);
    }
    parse_general(bytes, key_kid)
}

/// The envelope of a checkpoint or receipt in exactly the form [`sign_checkpoint`] and
/// [`SignedCheckpoint::inclusion_receipt`] write (deterministic encoding, the protected header's
/// five entries in their order, an empty unprotected header or one proof): `None` for anything
/// else, which [`parse_general`] then reads and refuses as it always did. What this accepts,
/// [`parse_general`] accepts with the same result: the protected header is compared byte for
/// byte with [`protected_bytes`] of the decoded seal (so `alg`, `vds`, `iss` and `sub` hold),
/// the envelope with [`envelope`] of its parts, and the proof with [`vdp_bytes`].
fn parse_fast(bytes: &[u8], key_kid: &[u8; 32]) -> Option<Parsed> {
    let mut c = Reader::new(bytes);
    c.lit(&[0xd2, 0x84])?;
    let protected = c.string(2)?;
    // The unprotected header runs to the nil and the 64-byte signature at the end.
    let end = c.rest().len().checked_sub(3 + 64)?;
    let (unprotected_bytes, tail) = c.rest().split_at(end);
    let signature = tail.strip_prefix(&[0xf6, 0x58, 0x40])?;

    let mut h = Reader::new(protected);
    h.lit(&[0xa5, 0x01, 0x27, 0x04, 0x58, 0x20])?;
    let kid_value: [u8; 32] = h.take(32)?.try_into().ok()?;
    h.lit(&[0x0f, 0xa2, 0x01])?;
    h.string(3)?;
    h.lit(&[0x02])?;
    h.string(3)?;
    h.lit(&[0x19, 0x01, 0x8b, 0x01, 0x3a, 0x00, 0x01, 0x00, 0x00])?;
    let seal_json = h.string(2)?;
    if !h.is_empty() || kid_value != *key_kid {
        return None;
    }
    let seal = decode_seal(seal_json).ok()?;
    if protected_bytes(&seal, seal_json, &kid_value) != protected {
        return None;
    }
    let unprotected = fast_unprotected(unprotected_bytes)?;
    if envelope(protected, unprotected_bytes, signature) != bytes {
        return None;
    }
    Some(Parsed {
        seal,
        protected: protected.to_vec(),
        unprotected,
        unprotected_bytes: unprotected_bytes.to_vec(),
        signature: signature.to_vec(),
        kid: kid_value,
    })
}

/// `{}`, or one proof `{396: {label: [<<[a, b, path]>>]}}` whose bytes are exactly
/// [`vdp_bytes`] of what it holds; `None` for anything else.
fn fast_unprotected(bytes: &[u8]) -> Option<Unprotected> {
    if bytes == [0xa0] {
        return Some(Unprotected::Empty);
    }
    let mut c = Reader::new(bytes);
    c.lit(&[0xa1, 0x19, 0x01, 0x8c, 0xa1])?;
    let label = match c.rest().first()? {
        0x20 => INCLUSION_PROOFS,
        0x21 => CONSISTENCY_PROOFS,
        _ => return None,
    };
    c.take(1)?;
    c.lit(&[0x81])?;
    let p = c.string(2)?;
    if !c.is_empty() {
        return None;
    }
    let mut q = Reader::new(p);
    q.lit(&[0x83])?;
    let a = q.head(0)?;
    let b = q.head(0)?;
    let n = q.head(4)?;
    let mut path = Vec::new();
    for _ in 0..n {
        path.push(<[u8; 32]>::try_from(q.string(2)?).ok()?);
    }
    if !q.is_empty() || vdp_bytes(label, a, b, &path) != bytes {
        return None;
    }
    Some(Unprotected::Proof { label, a, b, path })
}

/// The general reader of [`parse`], in the order of the spec's verification table.
fn parse_general(bytes: &[u8], key_kid: &[u8; 32]) -> Result<Parsed> {
    match bytes.first() {
        Some(0xd2) => {}
        Some(0x84) => return Err(CoseCode::Untagged.into()),
        Some(b) if b >> 5 == 6 => return Err(CoseCode::WrongTag.into()),
        _ => return Err(CoseCode::Malformed.into()),
    }
    let v = read_value(bytes).ok_or(CoseCode::Malformed)?;
    let Value::Tag(18, inner) = v else {
        return Err(CoseCode::WrongTag.into());
    };
    let Value::Array(items) = *inner else {
        return Err(CoseCode::Malformed.into());
    };
    let [protected, unprotected, payload, signature] =
        <[Value; 4]>::try_from(items).map_err(|_| CoseCode::Malformed)?;
    let (Value::Bytes(protected), Value::Map(_), Value::Bytes(signature)) =
        (&protected, &unprotected, &signature)
    else {
        return Err(CoseCode::Malformed.into());
    };
    let Some(Value::Map(header)) = read_value(protected) else {
        return Err(CoseCode::Malformed.into());
    };
    let get = |label: i64| {
        header
            .iter()
            .find(|(k, _)| int_of(k) == Some(i128::from(label)))
            .map(|(_, v)| v)
    };
    if get(1).and_then(int_of) != Some(-8) {
        return Err(CoseCode::AlgNotEdDsa.into());
    }
    if get(VDS_LABEL).and_then(int_of) != Some(i128::from(RFC9162_SHA256)) {
        return Err(CoseCode::VdsNotRfc9162.into());
    }
    let Some(Value::Bytes(seal_json)) = get(SEAL_DOCUMENT_LABEL) else {
        return Err(CoseCode::SealMissing.into());
    };
    let seal = decode_seal(seal_json)?;
    let kid_value: [u8; 32] = match get(4) {
        Some(Value::Bytes(k)) => k.as_slice().try_into().map_err(|_| CoseCode::BadKid)?,
        _ => return Err(CoseCode::BadKid.into()),
    };
    let (iss, sub) = match get(15) {
        Some(Value::Map(m)) => match m.as_slice() {
            [(k1, Value::Text(iss)), (k2, Value::Text(sub))]
                if int_of(k1) == Some(1) && int_of(k2) == Some(2) =>
            {
                (iss.clone(), sub.clone())
            }
            _ => return Err(CoseCode::IssMismatch.into()),
        },
        _ => return Err(CoseCode::IssMismatch.into()),
    };
    if iss != seal.steward {
        return Err(CoseCode::IssMismatch.into());
    }
    if sub != seal.subject() {
        return Err(CoseCode::SubMismatch.into());
    }
    if protected_bytes(&seal, seal_json, &kid_value) != *protected {
        return Err(CoseCode::ProtectedNotCanonical.into());
    }
    if !matches!(payload, Value::Null) {
        return Err(CoseCode::PayloadAttached.into());
    }
    // The unprotected header's bytes: what lies between the protected bstr and the nil.
    let mut head = Vec::new();
    cbor::string(&mut head, 2, protected);
    let start = 2 + head.len();
    let end = bytes.len().saturating_sub(1 + 2 + 64);
    let unprotected_bytes = bytes.get(start..end).unwrap_or_default().to_vec();
    if envelope(protected, &unprotected_bytes, signature) != bytes || signature.len() != 64 {
        return Err(CoseCode::EnvelopeNotCanonical.into());
    }
    if kid_value != *key_kid {
        return Err(CoseCode::UnknownKid.into());
    }
    Ok(Parsed {
        seal,
        protected: protected.clone(),
        unprotected: Unprotected::Value(unprotected),
        unprotected_bytes,
        signature: signature.clone(),
        kid: kid_value,
    })
}

/// Extracts the one proof of `{396: {label: [bstr]}}`; `None` when the header is `{}`.
fn one_proof(unprotected: Unprotected, label: i64) -> Result<Option<(u64, u64, Vec<Hash>)>> {
    let unprotected = match unprotected {
        Unprotected::Empty => return Ok(None),
        Unprotected::Proof {
            label: l,
            a,
            b,
            path,
        } => {
            // Read whole by `fast_unprotected`: only the label can still be wrong here.
            return if l == label {
                Ok(Some((a, b, path)))
            } else {
                Err(CoseCode::BadVdp.into())
            };
        }
        Unprotected::Value(v) => v,
    };
    let Value::Map(m) = &unprotected else {
        return Err(CoseCode::BadVdp.into());
    };
    if m.is_empty() {
        return Ok(None);
    }
    let [(k, Value::Map(vdp))] = m.as_slice() else {
        return Err(CoseCode::BadVdp.into());
    };
    let [(k2, Value::Array(proofs))] = vdp.as_slice() else {
        return Err(CoseCode::BadVdp.into());
    };
    if int_of(k) != Some(i128::from(VDP_LABEL)) || int_of(k2) != Some(i128::from(label)) {
        return Err(CoseCode::BadVdp.into());
    }
    let [Value::Bytes(p)] = proofs.as_slice() else {
        return Err(CoseCode::BadVdp.into());
    };
    let Some(Value::Array(parts)) = read_value(p) else {
        return Err(CoseCode::ProofMalformed.into());
    };
    let [a, b, Value::Array(path)] = parts.as_slice() else {
        return Err(CoseCode::ProofMalformed.into());
    };
    let uint = |v: &Value| {
        int_of(v)
            .and_then(|i| u64::try_from(i).ok())
            .ok_or(CoseCode::ProofMalformed)
    };
    let (a, b) = (uint(a)?, uint(b)?);
    let mut hashes = Vec::with_capacity(path.len());
    for e in path {
        let Value::Bytes(e) = e else {
            return Err(CoseCode::ProofMalformed.into());
        };
        hashes.push(<[u8; 32]>::try_from(e.as_slice()).map_err(|_| ProofCode::BadElement)?);
    }
    if proof_bytes(a, b, &hashes) != *p {
        return Err(CoseCode::ProofMalformed.into());
    }
    Ok(Some((a, b, hashes)))
}

/// The profile's signature check ([`document::signature_verifies`]) under a key accepted
/// once ([`ValidKey`], made by [`SealVerifier::new`]); `None`, a key [`ValidKey`] refused, is
/// refused as `torsion` (a signature that is not 64 bytes first, as `bad_signature`). `R` is
/// not checked apart: with a torsion-free key `verify_strict` refuses any `R` with a torsion
/// component (`bad_signature`).
fn check_signature(key: Option<&ValidKey>, tbs: &[u8], signature: &[u8]) -> Result<()> {
    if signature.len() != 64 {
        return Err(CoseCode::BadSignature.into());
    }
    let Some(key) = key else {
        return Err(CoseCode::Torsion.into());
    };
    if document::signature_verifies(key, tbs, signature) {
        Ok(())
    } else {
        Err(CoseCode::BadSignature.into())
    }
}

/// Verifies an RFC 9942 inclusion receipt for the leaf whose entry is `leaf_content_hash`
/// (the receipt's BLAKE3 content hash): envelope and headers, the seal document, the proof
/// against the seal's `tree_size` and `root`, then the signature over the recomputed root.
pub fn verify_inclusion_receipt(
    cose: &[u8],
    leaf_content_hash: &[u8; 32],
    key: &VerifyingKey,
) -> Result<VerifiedInclusion> {
    SealVerifier::new(*key).verify_inclusion_receipt(cose, leaf_content_hash)
}

fn inclusion_inner(
    v: &mut SealVerifier,
    cose: &[u8],
    leaf_content_hash: &[u8; 32],
) -> Result<VerifiedInclusion> {
    let p = parse(cose, &v.kid)?;
    let (tree_size, leaf_index, path) =
        one_proof(p.unprotected, INCLUSION_PROOFS)?.ok_or(CoseCode::BadVdp)?;
    let proof = InclusionProof {
        tree_size,
        leaf_index,
        path,
    };
    if inclusion_unprotected(&proof) != p.unprotected_bytes {
        return Err(CoseCode::EnvelopeNotCanonical.into());
    }
    let InclusionProof {
        tree_size,
        leaf_index,
        path,
    } = proof;
    if tree_size != p.seal.tree_size {
        return Err(ProofCode::TreeSizeMismatch.into());
    }
    let root = root_from_inclusion(leaf_index, tree_size, &leaf_hash(leaf_content_hash), &path)?;
    if root != p.seal.root {
        return Err(ProofCode::RootMismatch.into());
    }
    v.check(&sig_structure(&p.protected, &root), &p.signature)?;
    Ok(VerifiedInclusion {
        seal: p.seal,
        leaf_index,
        kid: p.kid,
    })
}

/// Verifies a checkpoint on its own: envelope and headers, the seal document, the shape of
/// its consistency proof (second size = the seal's `tree_size`, first size smaller), and the
/// signature over the seal's root. The proof itself needs the previous checkpoint
/// ([`verify_consistency_step`]).
pub fn verify_checkpoint(cose: &[u8], key: &VerifyingKey) -> Result<Checkpoint> {
    SealVerifier::new(*key).verify_checkpoint(cose)
}

fn checkpoint_inner(v: &mut SealVerifier, cose: &[u8]) -> Result<Checkpoint> {
    let p = parse(cose, &v.kid)?;
    let consistency =
        one_proof(p.unprotected, CONSISTENCY_PROOFS)?.map(|(first_size, second_size, path)| {
            ConsistencyProof {
                first_size,
                second_size,
                path,
            }
        });
    if consistency_unprotected(consistency.as_ref()) != p.unprotected_bytes {
        return Err(CoseCode::EnvelopeNotCanonical.into());
    }
    if let Some(c) = &consistency {
        if c.second_size != p.seal.tree_size {
            return Err(ProofCode::TreeSizeMismatch.into());
        }
        if c.first_size == 0 || c.first_size >= c.second_size {
            return Err(ProofCode::SizesOutOfOrder.into());
        }
    }
    v.check(&sig_structure(&p.protected, &p.seal.root), &p.signature)?;
    Ok(Checkpoint {
        seal: p.seal,
        consistency,
        kid: p.kid,
    })
}

/// The most distinct verified signatures a [`SealVerifier`] remembers; it forgets them all
/// when full (and verifies again).
pub const MAX_CACHED_SIGNATURES: usize = 1 << 16;

/// Verifies the checkpoints and inclusion receipts of one key: the key's torsion check runs
/// once, when the verifier is made, and the signature checks (the torsion check of `R` and
/// `verify_strict`) once per distinct `(Sig_structure, signature)`: the inclusion receipts of
/// one checkpoint share both, so a stream costs one signature check per checkpoint. Every
/// other check runs for every input. A key with a torsion component is refused (`torsion`)
/// at every signature check, as before. Memory: at most [`MAX_CACHED_SIGNATURES`] 32-byte
/// digests.
#[derive(Debug, Clone)]
pub struct SealVerifier {
    /// The key as [`ValidKey::new`] accepted it; `None` when it refused it.
    key: Option<ValidKey>,
    kid: [u8; 32],
    verified: std::collections::HashSet<[u8; 32]>,
}

impl SealVerifier {
    /// A verifier for `key` (its torsion check runs here, once).
    pub fn new(key: VerifyingKey) -> Self {
        Self {
            key: ValidKey::new(key).ok(),
            kid: kid(&key),
            verified: std::collections::HashSet::new(),
        }
    }

    /// [`verify_inclusion_receipt`] with the signature cache.
    pub fn verify_inclusion_receipt(
        &mut self,
        cose: &[u8],
        leaf_content_hash: &[u8; 32],
    ) -> Result<VerifiedInclusion> {
        inclusion_inner(self, cose, leaf_content_hash)
    }

    /// [`verify_checkpoint`] with the signature cache.
    pub fn verify_checkpoint(&mut self, cose: &[u8]) -> Result<Checkpoint> {
        checkpoint_inner(self, cose)
    }

    /// The RFC 9942 inclusion receipt of leaf `leaf_index` under a stored checkpoint (its
    /// `cose_sign1` bytes, as in a seals file), derived from `log` (whose first `tree_size`
    /// leaves must be the sealed ones) and verified before it is returned: the checkpoint's
    /// protected header and signature around the unprotected header of
    /// `PATH(leaf_index, D[tree_size])`, byte for byte what
    /// [`SignedCheckpoint::inclusion_receipt`] made when the checkpoint was signed. No signing
    /// happens here. Refused as [`verify_inclusion_receipt`] refuses (the checkpoint's header
    /// checks, `proof_root_mismatch` when the log's leaves are not the sealed ones, the
    /// signature), `proof_index_out_of_range` for a leaf the checkpoint does not seal, and
    /// `size_out_of_range` when the log holds fewer leaves than the checkpoint seals.
    pub fn derive_inclusion_receipt(
        &mut self,
        checkpoint: &[u8],
        log: &MerkleLog,
        leaf_index: u64,
        leaf_content_hash: &[u8; 32],
    ) -> Result<Vec<u8>> {
        let p = parse(checkpoint, &self.kid)?;
        let tree_size = p.seal.tree_size;
        if leaf_index >= tree_size {
            return Err(ProofCode::IndexOutOfRange.into());
        }
        let proof = InclusionProof {
            tree_size,
            leaf_index,
            path: log.inclusion_proof(leaf_index, tree_size)?,
        };
        let receipt = envelope(&p.protected, &inclusion_unprotected(&proof), &p.signature);
        let verified = inclusion_inner(self, &receipt, leaf_content_hash)?;
        if verified.leaf_index != leaf_index {
            return Err(ProofCode::IndexOutOfRange.into());
        }
        Ok(receipt)
    }

    fn check(&mut self, tbs: &[u8], signature: &[u8]) -> Result<()> {
        let mut h = blake3::Hasher::new();
        h.update(signature);
        h.update(tbs);
        let id: [u8; 32] = *h.finalize().as_bytes();
        if signature.len() == 64 && self.verified.contains(&id) {
            return Ok(());
        }
        check_signature(self.key.as_ref(), tbs, signature)?;
        if self.verified.len() >= MAX_CACHED_SIGNATURES {
            self.verified.clear();
        }
        self.verified.insert(id);
        Ok(())
    }
}

/// Checks that `next` extends `previous`: its consistency proof leads from the previous root
/// to its own root (or, without a proof, both seal the same tree).
pub fn verify_consistency_step(previous: &StreamSeal, next: &Checkpoint) -> Result<(), ProofCode> {
    match &next.consistency {
        None => {
            if previous.tree_size == next.seal.tree_size && previous.root == next.seal.root {
                Ok(())
            } else if previous.tree_size != next.seal.tree_size {
                Err(ProofCode::TreeSizeMismatch)
            } else {
                Err(ProofCode::RootMismatch)
            }
        }
        Some(c) => {
            if c.first_size != previous.tree_size {
                return Err(ProofCode::TreeSizeMismatch);
            }
            crate::merkle::verify_consistency(
                c.first_size,
                c.second_size,
                &previous.root,
                &next.seal.root,
                &c.path,
            )
        }
    }
}

#[cfg(test)]
mod fast_path_tests {
    //! [`parse_fast`] is a shortcut: it may decline anything, but what it accepts the general
    //! reader accepts with the same result, and [`parse`] answers every input as the general
    //! reader does (the same value or the same code).

    use super::*;
    use crate::sealer::StreamSealer;
    use jouleclaw_jcr1::UtcSecond;
    use jouleclaw_jcr1::cose::SoftwareSigner;

    /// Checkpoints (the first without a proof, later ones with one, the final seal with its
    /// documents list) and inclusion receipts of one stream.
    fn inputs() -> (Vec<Vec<u8>>, [u8; 32]) {
        let signer = SoftwareSigner::rfc8032_test_key();
        let mut sealer = StreamSealer::new("stream-demo", "did:example:steward", 64);
        let mut out = Vec::new();
        for w in 0..6u64 {
            let closed = UtcSecond::from_unix(1_780_617_600 + w as i64).ok_or(w);
            let Ok(closed) = closed else {
                return (out, [0; 32]);
            };
            if sealer
                .append(w + 1, blake3::hash(&w.to_le_bytes()).as_bytes(), closed)
                .is_err()
            {
                return (out, [0; 32]);
            }
            if w % 2 == 1 {
                let Ok(batch) = sealer.checkpoint(&signer, w == 5) else {
                    return (out, [0; 32]);
                };
                out.push(batch.checkpoint.cose_sign1.clone());
                out.extend(batch.inclusion.iter().take(2).map(|(_, r)| r.clone()));
            }
        }
        (out, kid(&signer.verifying_key()))
    }

    /// What a caller sees of a parse: the fields, or the code; and each proof label's reading.
    fn seen(p: Result<Parsed>) -> String {
        match p {
            Err(e) => format!("refused {e:?}"),
            Ok(p) => {
                let head = format!(
                    "{:?} {:?} {:?} {:?} {:?}",
                    p.seal, p.protected, p.unprotected_bytes, p.signature, p.kid
                );
                let proof = |label| {
                    let u = match &p.unprotected {
                        Unprotected::Empty => Unprotected::Empty,
                        Unprotected::Proof { label, a, b, path } => Unprotected::Proof {
                            label: *label,
                            a: *a,
                            b: *b,
                            path: path.clone(),
                        },
                        Unprotected::Value(v) => Unprotected::Value(v.clone()),
                    };
                    format!("{:?}", one_proof(u, label))
                };
                format!(
                    "{head} {} {}",
                    proof(INCLUSION_PROOFS),
                    proof(CONSISTENCY_PROOFS)
                )
            }
        }
    }

    #[test]
    fn fast_path_answers_as_the_general_reader() {
        let (inputs, key_kid) = inputs();
        assert_eq!(inputs.len(), 9, "three checkpoints, two receipts each");
        let mut fast = 0;
        let mut cases = 0;
        for input in &inputs {
            // The input itself, then every single-byte change and every truncation.
            let mut variants = vec![input.clone()];
            for i in 0..input.len() {
                for flip in [0x01u8, 0x20, 0x80] {
                    let mut m = input.clone();
                    m[i] ^= flip;
                    variants.push(m);
                }
                variants.push(input[..i].to_vec());
            }
            let mut longer = input.clone();
            longer.push(0x00);
            variants.push(longer);
            // The protected bstr's length in a longer head than needed: not deterministic.
            assert_eq!(input[2], 0x59, "a protected header of 256 to 65,535 bytes");
            variants.push([&[0xd2, 0x84, 0x5a, 0, 0], &input[3..]].concat());
            for m in variants {
                cases += 1;
                let general = seen(parse_general(&m, &key_kid));
                if let Some(p) = parse_fast(&m, &key_kid) {
                    fast += 1;
                    assert_eq!(seen(Ok(p)), general, "fast path differs on {m:02x?}");
                }
                assert_eq!(seen(parse(&m, &key_kid)), general);
            }
        }
        // Every unchanged input takes the fast path; most changes do not (a changed signature
        // or proof hash still reads, to be refused by the signature or proof check).
        assert!(fast >= inputs.len(), "fast path taken {fast} times");
        assert!(fast < cases / 2, "fast path taken {fast} of {cases}");
    }

    #[test]
    fn fast_path_answers_as_the_general_reader_after_insertions_and_deletions() {
        // Structural changes the single-byte flips do not make: a byte deleted, or one of a
        // few inserted (a zero, nil, an empty map, a break, an indefinite-length map start), at
        // every position; and the empty unprotected header as an indefinite-length map.
        let (inputs, key_kid) = inputs();
        assert_eq!(inputs.len(), 9, "three checkpoints, two receipts each");
        let mut fast = 0;
        for input in &inputs {
            let mut variants = Vec::new();
            for i in 0..input.len() {
                let mut m = input.clone();
                m.remove(i);
                variants.push(m);
                for b in [0x00u8, 0xf6, 0xa0, 0xff, 0xbf] {
                    let mut m = input.clone();
                    m.insert(i, b);
                    variants.push(m);
                }
            }
            let sig_at = input.len() - 3 - 64;
            if input[sig_at - 1] == 0xa0 {
                variants.push([&input[..sig_at - 1], &[0xbf, 0xff][..], &input[sig_at..]].concat());
            }
            for m in variants {
                let general = seen(parse_general(&m, &key_kid));
                if let Some(p) = parse_fast(&m, &key_kid) {
                    fast += 1;
                    assert_eq!(seen(Ok(p)), general, "fast path differs on {m:02x?}");
                }
                assert_eq!(seen(parse(&m, &key_kid)), general);
            }
        }
        // No insertion or deletion leaves the profile's bytes: the fast path takes none.
        assert_eq!(fast, 0);
    }

    #[test]
    fn another_kid_is_declined_by_the_fast_path_and_refused() {
        let (inputs, key_kid) = inputs();
        let mut other = key_kid;
        other[0] ^= 1;
        for input in &inputs {
            assert!(parse_fast(input, &key_kid).is_some());
            assert!(parse_fast(input, &other).is_none());
            assert_eq!(
                seen(parse(input, &other)),
                format!("refused {:?}", SealError::from(CoseCode::UnknownKid))
            );
        }
    }
}
