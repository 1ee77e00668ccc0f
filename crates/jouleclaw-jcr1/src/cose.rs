//! COSE_Sign1 / Ed25519 signing and verification of stream-window/1 receipts.
//!
//! The profile (`spec/JCR1-COSE-PROFILE.md`): tagged COSE_Sign1 (tag 18); attached payload = the
//! receipt's canonical bytes; external_aad empty; protected header, labels ascending,
//! `{1: -8, 3: CONTENT_TYPE, 4: kid, 15: {1: steward, 2: receipt id}}`; unprotected header
//! empty. `kid` is the RFC 9679 COSE Key Thumbprint (SHA-256) of the Ed25519 key.
//!
//! Signing goes through the [`Signer`] seam (a software key by default); the exact bytes that
//! get signed are available ([`SignedReceipt::to_be_signed`], [`to_be_signed`]).

use core::fmt;
use std::io::Write as _;
use std::path::Path;

use coset::cbor::value::Value;
use coset::{
    CborSerializable, CoseSign1, CoseSign1Builder, Header, HeaderBuilder, Label,
    TaggedCborSerializable, iana,
};
use ed25519_dalek::{Signature, SigningKey, VerifyingKey};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

use crate::decode::decode_receipt;
pub use crate::error::CoseRefusal;
use crate::error::{Jcr1Error, Result};
use crate::receipt::StreamWindowReceipt;

pub use ed25519_dalek::VerifyingKey as PublicKey;

/// The protected content type (label 3): a media type with exactly one `/`.
pub const CONTENT_TYPE: &str = "application/vnd.jouleclaw.stream-window+json";

/// CWT claims header label (RFC 9597).
pub const CWT_CLAIMS_LABEL: i64 = 15;

/// The RFC 8032 section 7.1 TEST 1 secret seed: the published test key of every signed vector.
pub const RFC8032_TEST1_SEED: [u8; 32] = [
    0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a, 0xf4, 0x92, 0xec, 0x2c, 0xc4,
    0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32, 0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60,
];

/// The RFC 9679 COSE Key Thumbprint of an Ed25519 key: SHA-256 over the deterministic CBOR of
/// `{1: 1, -1: 6, -2: x}` (kty OKP, crv Ed25519, x).
pub fn kid(key: &VerifyingKey) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update([0xa3, 0x01, 0x01, 0x20, 0x06, 0x21, 0x58, 0x20]);
    h.update(key.as_bytes());
    h.finalize().into()
}

/// Produces Ed25519 signatures over to-be-signed bytes: a software key, an HSM, a remote signer.
pub trait Signer {
    /// The public key.
    fn verifying_key(&self) -> VerifyingKey;
    /// Signs `tbs` (the COSE Sig_structure bytes).
    fn sign(&self, tbs: &[u8]) -> Result<[u8; 64]>;
}

impl<T: Signer + ?Sized> Signer for &T {
    fn verifying_key(&self) -> VerifyingKey {
        (**self).verifying_key()
    }
    fn sign(&self, tbs: &[u8]) -> Result<[u8; 64]> {
        (**self).sign(tbs)
    }
}

impl<T: Signer + ?Sized> Signer for Box<T> {
    fn verifying_key(&self) -> VerifyingKey {
        (**self).verifying_key()
    }
    fn sign(&self, tbs: &[u8]) -> Result<[u8; 64]> {
        (**self).sign(tbs)
    }
}

/// An Ed25519 key held in memory. The secret is zeroized on drop and never printed.
pub struct SoftwareSigner {
    key: SigningKey,
}

impl fmt::Debug for SoftwareSigner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SoftwareSigner")
            .field(
                "public_key",
                &hex::encode(self.key.verifying_key().as_bytes()),
            )
            .finish_non_exhaustive()
    }
}

impl SoftwareSigner {
    /// A signer from a 32-byte secret seed.
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        Self {
            key: SigningKey::from_bytes(seed),
        }
    }

    /// The RFC 8032 TEST 1 key. Public: never use it for anything but tests and demos.
    pub fn rfc8032_test_key() -> Self {
        Self::from_seed(&RFC8032_TEST1_SEED)
    }

    /// A fresh key from the operating system's randomness.
    pub fn generate() -> Self {
        Self {
            key: SigningKey::generate(&mut rand_core::OsRng),
        }
    }

    /// Parses a secret key file: 64 lowercase hex digits, optionally followed by one newline.
    pub fn from_key_file_text(text: &str) -> Result<Self> {
        let seed = Zeroizing::new(parse_key_hex(text)?);
        Ok(Self::from_seed(&seed))
    }

    /// Reads a secret key file.
    pub fn read_key_file(path: &Path) -> Result<Self> {
        let text =
            Zeroizing::new(
                std::fs::read_to_string(path).map_err(|_| Jcr1Error::KeyFile {
                    detail: "cannot read the key file",
                })?,
            );
        Self::from_key_file_text(&text)
    }

    /// The secret key file text: the seed in lowercase hex and a newline.
    pub fn key_file_text(&self) -> Zeroizing<String> {
        Zeroizing::new(format!("{}\n", hex::encode(self.key.to_bytes())))
    }

    /// Writes the secret key file, creating it with mode 0600 (on Unix); refuses to overwrite.
    pub fn write_key_file(&self, path: &Path) -> Result<()> {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(path).map_err(|_| Jcr1Error::KeyFile {
            detail: "cannot create the key file (does it already exist?)",
        })?;
        f.write_all(self.key_file_text().as_bytes())
            .map_err(|_| Jcr1Error::KeyFile {
                detail: "cannot write the key file",
            })
    }
}

impl Signer for SoftwareSigner {
    fn verifying_key(&self) -> VerifyingKey {
        self.key.verifying_key()
    }
    fn sign(&self, tbs: &[u8]) -> Result<[u8; 64]> {
        use ed25519_dalek::Signer as _;
        Ok(self.key.sign(tbs).to_bytes())
    }
}

fn parse_key_hex(text: &str) -> Result<[u8; 32]> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    if body.len() != 64 || !body.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(Jcr1Error::KeyFile {
            detail: "expected 64 lowercase hex digits and at most one trailing newline",
        });
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(body, &mut out).map_err(|_| Jcr1Error::KeyFile { detail: "not hex" })?;
    Ok(out)
}

/// Parses a public key file (64 lowercase hex digits, optional trailing newline).
pub fn parse_public_key_text(text: &str) -> Result<VerifyingKey> {
    VerifyingKey::from_bytes(&parse_key_hex(text)?).map_err(|_| Jcr1Error::KeyFile {
        detail: "not a valid Ed25519 public key",
    })
}

/// The public key file text: lowercase hex and a newline.
pub fn public_key_text(key: &VerifyingKey) -> String {
    format!("{}\n", hex::encode(key.as_bytes()))
}

/// The profile's protected header for a receipt.
pub fn protected_header(steward: &str, receipt_id: &str, kid: &[u8; 32]) -> Header {
    HeaderBuilder::new()
        .algorithm(iana::Algorithm::EdDSA)
        .content_type(CONTENT_TYPE.to_owned())
        .key_id(kid.to_vec())
        .value(
            CWT_CLAIMS_LABEL,
            Value::Map(vec![
                (Value::from(1), Value::Text(steward.to_owned())),
                (Value::from(2), Value::Text(receipt_id.to_owned())),
            ]),
        )
        .build()
}

/// A signed receipt and every intermediate a verifier in another language may want.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedReceipt {
    /// The tagged COSE_Sign1 bytes.
    pub cose_sign1: Vec<u8>,
    /// The payload: the receipt's canonical bytes.
    pub payload: Vec<u8>,
    /// The serialized protected header.
    pub protected: Vec<u8>,
    /// The Sig_structure bytes that were signed.
    pub to_be_signed: Vec<u8>,
    /// The Ed25519 signature.
    pub signature: [u8; 64],
}

/// Signs arbitrary headers and payload as a tagged COSE_Sign1 with empty external_aad (the
/// generic path the receipt profile is built on; used to reproduce peer vectors).
pub fn sign1(
    signer: &dyn Signer,
    protected: Header,
    unprotected: Header,
    payload: Vec<u8>,
) -> Result<SignedReceipt> {
    let mut tbs_seen = Vec::new();
    let mut sig_seen = [0u8; 64];
    let sign1 = CoseSign1Builder::new()
        .protected(protected)
        .unprotected(unprotected)
        .payload(payload.clone())
        .try_create_signature(b"", |tbs| {
            tbs_seen = tbs.to_vec();
            sig_seen = signer.sign(tbs)?;
            Ok::<_, Jcr1Error>(sig_seen.to_vec())
        })?
        .build();
    let protected = sign1
        .protected
        .clone()
        .to_vec()
        .map_err(|_| cbor_failure())?;
    let cose_sign1 = sign1.to_tagged_vec().map_err(|_| cbor_failure())?;
    Ok(SignedReceipt {
        cose_sign1,
        payload,
        protected,
        to_be_signed: tbs_seen,
        signature: sig_seen,
    })
}

fn cbor_failure() -> Jcr1Error {
    Jcr1Error::Signer {
        detail: "CBOR serialization failed".into(),
    }
}

/// The Sig_structure bytes the profile signs for `receipt` under `key`.
pub fn to_be_signed(receipt: &StreamWindowReceipt, key: &VerifyingKey) -> Result<Vec<u8>> {
    let payload = receipt.encode()?;
    let protected = protected_bytes(&receipt.steward, &receipt.id(), &kid(key));
    Ok(sig_structure(&protected, &payload))
}

/// Signs `receipt` under the profile.
pub fn sign_receipt(signer: &dyn Signer, receipt: &StreamWindowReceipt) -> Result<SignedReceipt> {
    let payload = receipt.encode()?;
    sign_payload(signer, receipt, payload)
}

/// Signs already-encoded canonical receipt bytes (as returned by minting) without re-encoding.
pub fn sign_payload(
    signer: &dyn Signer,
    receipt: &StreamWindowReceipt,
    payload: Vec<u8>,
) -> Result<SignedReceipt> {
    // The profile fixes every byte around the payload, so the structures are written directly:
    // the same bytes `sign1` produces through coset (tested), without building CBOR values.
    let key = signer.verifying_key();
    let protected = protected_bytes(&receipt.steward, &receipt.id(), &kid(&key));
    let to_be_signed = sig_structure(&protected, &payload);
    let signature = signer.sign(&to_be_signed)?;
    let cose_sign1 = envelope(&protected, Some(&payload), &signature);
    Ok(SignedReceipt {
        cose_sign1,
        payload,
        protected,
        to_be_signed,
        signature,
    })
}

/// Appends a CBOR head in its shortest form (RFC 8949 section 4.2.1).
fn cbor_head(out: &mut Vec<u8>, major: u8, n: u64) {
    let m = major << 5;
    if n < 24 {
        out.push(m | n as u8);
    } else if n <= 0xff {
        out.extend_from_slice(&[m | 24, n as u8]);
    } else if n <= 0xffff {
        out.push(m | 25);
        out.extend_from_slice(&(n as u16).to_be_bytes());
    } else if n <= 0xffff_ffff {
        out.push(m | 26);
        out.extend_from_slice(&(n as u32).to_be_bytes());
    } else {
        out.push(m | 27);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

/// Appends a byte string (major type 2) or text string (major type 3).
fn cbor_string(out: &mut Vec<u8>, major: u8, b: &[u8]) {
    cbor_head(out, major, b.len() as u64);
    out.extend_from_slice(b);
}

/// The profile's protected header bytes: what coset writes for [`protected_header`].
fn protected_bytes(steward: &str, receipt_id: &str, kid: &[u8; 32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(96 + CONTENT_TYPE.len() + steward.len() + receipt_id.len());
    out.push(0xa4); // map(4)
    out.extend_from_slice(&[0x01, 0x27]); // 1 (alg): -8 (EdDSA)
    out.push(0x03); // 3 (content type): text
    cbor_string(&mut out, 3, CONTENT_TYPE.as_bytes());
    out.push(0x04); // 4 (kid): bstr
    cbor_string(&mut out, 2, kid);
    out.extend_from_slice(&[0x0f, 0xa2]); // 15 (CWT claims): map(2)
    out.push(0x01); // 1 (iss): text
    cbor_string(&mut out, 3, steward.as_bytes());
    out.push(0x02); // 2 (sub): text
    cbor_string(&mut out, 3, receipt_id.as_bytes());
    out
}

/// `Sig_structure` for COSE_Sign1 with empty external_aad (RFC 9052 section 4.4).
fn sig_structure(protected: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + protected.len() + payload.len());
    out.push(0x84); // array(4)
    cbor_string(&mut out, 3, b"Signature1");
    cbor_string(&mut out, 2, protected);
    out.push(0x40); // external_aad: empty bstr
    cbor_string(&mut out, 2, payload);
    out
}

/// The tagged COSE_Sign1 with an empty unprotected header; a detached payload is `nil`.
fn envelope(protected: &[u8], payload: Option<&[u8]>, signature: &[u8]) -> Vec<u8> {
    let len = payload.map_or(0, <[u8]>::len);
    let mut out = Vec::with_capacity(32 + protected.len() + len + signature.len());
    out.extend_from_slice(&[0xd2, 0x84]); // tag 18, array(4)
    cbor_string(&mut out, 2, protected);
    out.push(0xa0); // unprotected: empty map
    match payload {
        Some(p) => cbor_string(&mut out, 2, p),
        None => out.push(0xf6),
    }
    cbor_string(&mut out, 2, signature);
    out
}

/// Chooses the verification key by `kid`.
pub trait KeyResolver {
    /// The key whose thumbprint is `kid`, if known.
    fn resolve(&self, kid: &[u8]) -> Option<VerifyingKey>;
}

/// A resolver that knows exactly one key.
#[derive(Debug, Clone)]
pub struct SingleKey {
    key: VerifyingKey,
    kid: [u8; 32],
}

impl SingleKey {
    /// The resolver for `key`.
    pub fn new(key: VerifyingKey) -> Self {
        Self {
            kid: kid(&key),
            key,
        }
    }
}

impl KeyResolver for SingleKey {
    fn resolve(&self, kid: &[u8]) -> Option<VerifyingKey> {
        (kid == self.kid).then_some(self.key)
    }
}

/// A verified receipt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedReceipt {
    /// The decoded receipt.
    pub receipt: StreamWindowReceipt,
    /// BLAKE3 of the payload.
    pub content_hash: blake3::Hash,
    /// The signer's kid.
    pub kid: [u8; 32],
}

/// What [`prepare`] extracts for the signature check.
struct Prepared {
    payload: Vec<u8>,
    key: VerifyingKey,
    kid: [u8; 32],
    iss: String,
    sub: String,
    signature: Signature,
    tbs: Vec<u8>,
}

fn classify_envelope(bytes: &[u8]) -> core::result::Result<(), CoseRefusal> {
    match bytes.first() {
        Some(0xd2) => Ok(()),
        Some(0x84) => Err(CoseRefusal::Untagged),
        Some(b) if b >> 5 == 6 => Err(CoseRefusal::WrongTag),
        _ => Err(CoseRefusal::MalformedCbor),
    }
}

/// The profile's fields of a COSE_Sign1 that passed every envelope and header check.
#[derive(Debug, PartialEq, Eq)]
struct Parts {
    protected: Vec<u8>,
    payload: Vec<u8>,
    signature: Vec<u8>,
    kid: [u8; 32],
    iss: String,
    sub: String,
}

fn prepare(
    bytes: &[u8],
    resolver: &dyn KeyResolver,
) -> core::result::Result<Prepared, CoseRefusal> {
    let parts = match read_profile(bytes) {
        Some(parts) => parts,
        None => parse_general(bytes)?,
    };
    let key = resolver
        .resolve(&parts.kid)
        .ok_or(CoseRefusal::UnknownKid)?;
    let signature =
        Signature::from_slice(&parts.signature).map_err(|_| CoseRefusal::BadSignature)?;
    let tbs = sig_structure(&parts.protected, &parts.payload);
    Ok(Prepared {
        payload: parts.payload,
        key,
        kid: parts.kid,
        iss: parts.iss,
        sub: parts.sub,
        signature,
        tbs,
    })
}

/// A cursor over CBOR bytes for [`read_profile`].
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn expect(&mut self, want: &[u8]) -> Option<()> {
        self.0 = self.0.strip_prefix(want)?;
        Some(())
    }

    /// A definite-length byte (major 2) or text (major 3) string's contents.
    fn string(&mut self, major: u8) -> Option<&'a [u8]> {
        let (&first, rest) = self.0.split_first()?;
        if first >> 5 != major {
            return None;
        }
        let (len, rest) = match first & 0x1f {
            n @ 0..=23 => (u64::from(n), rest),
            n @ 24..=27 => {
                let width = 1usize << (n - 24);
                let (arg, rest) = rest.split_at_checked(width)?;
                (
                    arg.iter().fold(0u64, |acc, &b| acc << 8 | u64::from(b)),
                    rest,
                )
            }
            _ => return None,
        };
        let (contents, rest) = rest.split_at_checked(usize::try_from(len).ok()?)?;
        self.0 = rest;
        Some(contents)
    }
}

/// Reads the profile's deterministic encoding directly. `Some` only when `bytes` is exactly
/// `envelope(protected_bytes(iss, sub, kid), payload, signature)` with UTF-8 `iss`/`sub` and an
/// attached payload: an input on which every check of [`parse_general`] passes with these same
/// values. Anything else returns `None` and goes through [`parse_general`], which names the
/// refusal.
fn read_profile(bytes: &[u8]) -> Option<Parts> {
    let mut c = Cursor(bytes);
    c.expect(&[0xd2, 0x84])?; // tag 18, array(4)
    let protected = c.string(2)?;
    c.expect(&[0xa0])?; // unprotected: empty map
    let payload = c.string(2)?;
    let signature = c.string(2)?;
    if !c.0.is_empty() {
        return None;
    }
    let mut h = Cursor(protected);
    h.expect(&[0xa4, 0x01, 0x27, 0x03])?; // map(4), alg: EdDSA, content type
    if h.string(3)? != CONTENT_TYPE.as_bytes() {
        return None;
    }
    h.expect(&[0x04])?;
    let kid: [u8; 32] = h.string(2)?.try_into().ok()?;
    h.expect(&[0x0f, 0xa2, 0x01])?; // CWT claims: map(2), iss
    let iss = core::str::from_utf8(h.string(3)?).ok()?;
    h.expect(&[0x02])?; // sub
    let sub = core::str::from_utf8(h.string(3)?).ok()?;
    if !h.0.is_empty() {
        return None;
    }
    // Shortest-form heads throughout: the bytes must be what the writers produce.
    if protected_bytes(iss, sub, &kid) != protected
        || envelope(protected, Some(payload), signature) != bytes
    {
        return None;
    }
    Some(Parts {
        protected: protected.to_vec(),
        payload: payload.to_vec(),
        signature: signature.to_vec(),
        kid,
        iss: iss.to_owned(),
        sub: sub.to_owned(),
    })
}

/// Every envelope and header check, in order, on coset's parse of any input.
fn parse_general(bytes: &[u8]) -> core::result::Result<Parts, CoseRefusal> {
    classify_envelope(bytes)?;
    let sign1 = CoseSign1::from_tagged_slice(bytes).map_err(|_| CoseRefusal::MalformedCbor)?;
    let u = &sign1.unprotected;
    if u.alg.is_some() {
        return Err(CoseRefusal::AlgUnprotected);
    }
    if !u.key_id.is_empty() {
        return Err(CoseRefusal::KidUnprotected);
    }
    if !u.is_empty() {
        return Err(CoseRefusal::UnprotectedNotEmpty);
    }
    let p = &sign1.protected.header;
    if !p.crit.is_empty() {
        return Err(CoseRefusal::CritPresent);
    }
    match &p.alg {
        None => return Err(CoseRefusal::AlgMissing),
        Some(coset::Algorithm::Assigned(iana::Algorithm::EdDSA)) => {}
        Some(_) => return Err(CoseRefusal::AlgNotEdDsa),
    }
    if !p.iv.is_empty()
        || !p.partial_iv.is_empty()
        || !p.counter_signatures.is_empty()
        || p.rest
            .iter()
            .any(|(l, _)| *l != Label::Int(CWT_CLAIMS_LABEL))
    {
        return Err(CoseRefusal::UnknownProtectedLabel);
    }
    if p.content_type != Some(coset::ContentType::Text(CONTENT_TYPE.to_owned())) {
        return Err(CoseRefusal::ContentTypeMismatch);
    }
    let kid: [u8; 32] = p
        .key_id
        .as_slice()
        .try_into()
        .map_err(|_| CoseRefusal::BadKid)?;
    let (iss, sub) = cwt_claims(p).ok_or(CoseRefusal::BadCwtClaims)?;
    // The received protected bytes must be exactly what the profile produces for these values
    // (label order, integer and length encodings, no duplicates).
    let canonical = protected_bytes(&iss, &sub, &kid);
    let Some(protected) = sign1.protected.original_data.as_deref() else {
        return Err(CoseRefusal::ProtectedNotCanonical);
    };
    if protected != canonical.as_slice() {
        return Err(CoseRefusal::ProtectedNotCanonical);
    }
    // The deterministic encoding of the parts (the received protected bytes, every other length
    // in its shortest form): the input must already be exactly that.
    let expected = envelope(protected, sign1.payload.as_deref(), &sign1.signature);
    if expected != bytes {
        return Err(CoseRefusal::EnvelopeNotCanonical);
    }
    let protected = protected.to_vec();
    let Some(payload) = sign1.payload else {
        return Err(CoseRefusal::PayloadDetached);
    };
    Ok(Parts {
        protected,
        payload,
        signature: sign1.signature,
        kid,
        iss,
        sub,
    })
}

fn cwt_claims(h: &Header) -> Option<(String, String)> {
    let (_, v) = h
        .rest
        .iter()
        .find(|(l, _)| *l == Label::Int(CWT_CLAIMS_LABEL))?;
    let Value::Map(m) = v else { return None };
    match m.as_slice() {
        [(k1, Value::Text(iss)), (k2, Value::Text(sub))]
            if *k1 == Value::from(1) && *k2 == Value::from(2) =>
        {
            Some((iss.clone(), sub.clone()))
        }
        _ => None,
    }
}

fn finish(p: Prepared) -> core::result::Result<VerifiedReceipt, CoseRefusal> {
    let payload = p.payload;
    let receipt = decode_receipt(&payload).map_err(CoseRefusal::PayloadRefused)?;
    if receipt.steward != p.iss {
        return Err(CoseRefusal::IssMismatch);
    }
    if receipt.id() != p.sub {
        return Err(CoseRefusal::SubMismatch);
    }
    Ok(VerifiedReceipt {
        receipt,
        content_hash: blake3::hash(&payload),
        kid: p.kid,
    })
}

/// Verifies one tagged COSE_Sign1 under the profile: envelope and headers, the key by `kid`,
/// `verify_strict` over the Sig_structure built from the received protected bytes, the strict
/// canonical decoder on the payload, and `iss`/`sub` against `steward`/`id`.
pub fn verify(
    bytes: &[u8],
    resolver: &dyn KeyResolver,
) -> core::result::Result<VerifiedReceipt, CoseRefusal> {
    let p = prepare(bytes, resolver)?;
    p.key
        .verify_strict(&p.tbs, &p.signature)
        .map_err(|_| CoseRefusal::BadSignature)?;
    finish(p)
}

/// Verifies many receipts with one Ed25519 batch equation. Returns one result per item, in
/// order. When the batch equation fails, every item is verified on its own so that the caller
/// learns exactly which receipts are bad; items refused before the signature check are never
/// part of the batch.
///
/// The batch keeps `verify_strict`'s guarantees: weak (small-order) keys and small-order `R`
/// values are sent to the single-item path, which refuses them.
pub fn verify_batch(
    items: &[&[u8]],
    resolver: &dyn KeyResolver,
) -> Vec<core::result::Result<VerifiedReceipt, CoseRefusal>> {
    let mut prepared: Vec<Option<core::result::Result<Prepared, CoseRefusal>>> =
        items.iter().map(|b| Some(prepare(b, resolver))).collect();
    // Receipts of one stream share a key: test its order once per run of equal keys.
    let mut last_key: Option<(VerifyingKey, bool)> = None;
    let batchable: Vec<usize> = prepared
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p {
            Some(Ok(p)) => {
                let weak = match last_key {
                    Some((k, weak)) if k == p.key => weak,
                    _ => {
                        let weak = p.key.is_weak();
                        last_key = Some((p.key, weak));
                        weak
                    }
                };
                (!weak && !small_order_r(&p.signature)).then_some(i)
            }
            _ => None,
        })
        .collect();
    let batch_ok = {
        let mut msgs = Vec::with_capacity(batchable.len());
        let mut sigs = Vec::with_capacity(batchable.len());
        let mut keys = Vec::with_capacity(batchable.len());
        for &i in &batchable {
            if let Some(Ok(p)) = &prepared[i] {
                msgs.push(p.tbs.as_slice());
                sigs.push(p.signature);
                keys.push(p.key);
            }
        }
        !batchable.is_empty() && ed25519_dalek::verify_batch(&msgs, &sigs, &keys).is_ok()
    };
    prepared
        .iter_mut()
        .enumerate()
        .map(|(i, slot)| {
            let p = slot.take().unwrap_or(Err(CoseRefusal::MalformedCbor))?;
            if !(batch_ok && batchable.binary_search(&i).is_ok()) {
                p.key
                    .verify_strict(&p.tbs, &p.signature)
                    .map_err(|_| CoseRefusal::BadSignature)?;
            }
            finish(p)
        })
        .collect()
}

/// The low 255 bits of every encoding that decompresses to a point of small order: the `y`
/// coordinates of the eight torsion points (seven distinct values), including `y + p` where
/// that still fits in 255 bits (for `y` = 0 and 1). The sign bit does not matter. libsodium's
/// `has_small_order` keeps the same list; a test derives it from the torsion points.
const SMALL_ORDER_Y: [[u8; 32]; 7] = [
    [0; 32],
    [
        1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0,
    ],
    [
        0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98,
        0xf0, 0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53,
        0xfc, 0x05,
    ],
    [
        0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67,
        0x0f, 0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac,
        0x03, 0x7a,
    ],
    p_plus(0xec),
    p_plus(0xed),
    p_plus(0xee),
];

/// `2^255 - 19 + (low - 0xed)` little-endian: `p - 1`, `p`, `p + 1`.
const fn p_plus(low: u8) -> [u8; 32] {
    let mut b = [0xff; 32];
    b[0] = low;
    b[31] = 0x7f;
    b
}

/// `true` when `R` decompresses to a point of small order, which `verify_strict` refuses and
/// batch verification would not. A table lookup instead of a decompression (a field
/// exponentiation) per signature. An `R` that does not decompress at all is left in the batch:
/// the batch then fails and every item is verified on its own with `verify_strict`.
fn small_order_r(sig: &Signature) -> bool {
    let mut y = *sig.r_bytes();
    y[31] &= 0x7f;
    SMALL_ORDER_Y.contains(&y)
}

/// Verifies a COSE_Sign1 signature with `key` without the receipt profile (any headers, any
/// payload): for peer vectors such as cose-wg's.
pub fn verify_sign1_signature_only(bytes: &[u8], key: &VerifyingKey) -> bool {
    let Ok(sign1) = CoseSign1::from_tagged_slice(bytes) else {
        return false;
    };
    let Ok(sig) = Signature::from_slice(&sign1.signature) else {
        return false;
    };
    key.verify_strict(&sign1.tbs_data(b""), &sig).is_ok()
}

/// Splits an RFC 8742 CBOR sequence into its items' bytes without interpreting them beyond
/// well-formedness. Refuses (with the index of the bad item) a sequence that ends inside an item
/// or contains bytes that are not CBOR.
pub fn split_cbor_sequence(bytes: &[u8]) -> core::result::Result<Vec<&[u8]>, usize> {
    let mut items = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let mut reader: &[u8] = rest;
        let parsed: core::result::Result<Value, _> = coset::cbor::de::from_reader(&mut reader);
        if parsed.is_err() {
            return Err(items.len());
        }
        let used = rest.len() - reader.len();
        if used == 0 {
            return Err(items.len());
        }
        items.push(&rest[..used]);
        rest = &rest[used..];
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(steward: &str, stream_id: &str, window_id: u64) -> StreamWindowReceipt {
        StreamWindowReceipt {
            closed_at: crate::UtcSecond::from_unix(1_780_617_600).unwrap(),
            steward: steward.into(),
            stream_id: stream_id.into(),
            window_id,
            window_hash: blake3::Hash::from_bytes([0xaa; 32]),
            tick_count: 4,
            inbound_bytes: 6400,
            outbound_bytes: 4800,
            joules_uj: 350,
            energy_provenance: crate::EnergyProvenance::Estimator,
            verdict: jouleclaw_stream_oracle::WindowVerdict::pass_by("always-pass-stream"),
            conservation: jouleclaw_stream::WindowConservationFinding::Conforming,
        }
    }

    /// The direct writers against coset, at every CBOR length-head size the profile can reach
    /// (steward and stream id near the decoder's 4,096-byte string limit, payloads past 64 KiB).
    #[test]
    fn direct_encoding_is_byte_identical_to_coset() {
        let signer = SoftwareSigner::rfc8032_test_key();
        let lens = [1, 23, 24, 255, 256, 4090];
        for (i, &steward_len) in lens.iter().enumerate() {
            let stream_len = lens[lens.len() - 1 - i];
            let r = receipt(&"s".repeat(steward_len), &"x".repeat(stream_len), i as u64);
            for payload in [
                r.encode().unwrap(),
                Vec::new(),
                vec![b'a'; 23],
                vec![b'a'; 65_535],
                vec![b'a'; 65_536],
            ] {
                let header = protected_header(&r.steward, &r.id(), &kid(&signer.verifying_key()));
                let via_coset = sign1(&signer, header, Header::default(), payload.clone()).unwrap();
                let direct = sign_payload(&signer, &r, payload).unwrap();
                assert_eq!(
                    direct, via_coset,
                    "steward {steward_len}, stream id {stream_len}"
                );
            }
        }
    }

    /// The direct reader may only take inputs the general path accepts, with the same fields.
    #[test]
    fn read_profile_agrees_with_the_general_path_on_every_mutation() {
        let signer = SoftwareSigner::rfc8032_test_key();
        let r = receipt(
            "did:keri:EJ9testStewardAID000000000000000",
            "stream-demo",
            7,
        );
        let good = sign_receipt(&signer, &r).unwrap().cose_sign1;
        let parts = read_profile(&good).unwrap();
        assert_eq!(Ok(&parts), parse_general(&good).as_ref());
        assert_eq!(parts.payload, r.encode().unwrap());
        assert_eq!(
            (parts.iss.as_str(), parts.sub.as_str()),
            (
                "did:keri:EJ9testStewardAID000000000000000",
                "stream-demo:0007"
            )
        );

        let mut inputs = vec![Vec::new(), good[..good.len() - 1].to_vec()];
        for i in 0..good.len() {
            for v in [
                0x00, 0x01, 0x18, 0x40, 0x58, 0x59, 0x5f, 0x60, 0x78, 0x7f, 0xa0, 0xf6, 0xff,
            ] {
                let mut m = good.clone();
                m[i] = v;
                inputs.push(m);
            }
            let mut m = good.clone();
            m[i] ^= 0x80;
            inputs.push(m);
            let mut m = good.clone();
            m.insert(i, 0x00);
            inputs.push(m);
        }
        // Long-form heads around the payload and the protected header.
        let protected = parts.protected.clone();
        let mut long = vec![0xd2, 0x84, 0x59];
        long.extend_from_slice(&(protected.len() as u16).to_be_bytes());
        long.extend_from_slice(&protected);
        long.push(0xa0);
        cbor_string(&mut long, 2, &parts.payload);
        cbor_string(&mut long, 2, &parts.signature);
        inputs.push(long);

        let mut taken = 0;
        for m in &inputs {
            if let Some(fast) = read_profile(m) {
                assert_eq!(Ok(&fast), parse_general(m).as_ref(), "{}", hex::encode(m));
                taken += 1;
            }
        }
        // Payload-byte mutations keep the structure; everything else falls back.
        assert!(taken > 0 && taken < inputs.len());
    }

    #[test]
    fn small_order_table_is_exactly_the_torsion_encodings() {
        use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
        use curve25519_dalek::edwards::CompressedEdwardsY;
        let mut derived: Vec<[u8; 32]> = Vec::new();
        for t in EIGHT_TORSION {
            let mut y = t.compress().to_bytes();
            y[31] &= 0x7f;
            let mut ys = vec![y];
            // y + p fits in 255 bits only for y < 19.
            if y[1..].iter().all(|&b| b == 0) && y[0] < 19 {
                ys.push(p_plus(0xed + y[0]));
            }
            for y in ys {
                for sign in [0, 0x80] {
                    let mut r = y;
                    r[31] |= sign;
                    let point = CompressedEdwardsY(r).decompress().unwrap();
                    assert!(point.is_small_order());
                    let mut sig = [0u8; 64];
                    sig[..32].copy_from_slice(&r);
                    assert!(
                        small_order_r(&Signature::from_bytes(&sig)),
                        "{}",
                        hex::encode(r)
                    );
                }
                if !derived.contains(&y) {
                    derived.push(y);
                }
            }
        }
        derived.sort_unstable();
        let mut table = SMALL_ORDER_Y.to_vec();
        table.sort_unstable();
        assert_eq!(derived, table);
        // Points of large order, and a signature's real R, are not in the table.
        let mut p = ED25519_BASEPOINT_POINT;
        for _ in 0..64 {
            let mut sig = [0u8; 64];
            sig[..32].copy_from_slice(&p.compress().to_bytes());
            assert!(!small_order_r(&Signature::from_bytes(&sig)));
            p += ED25519_BASEPOINT_POINT + EIGHT_TORSION[1];
        }
    }

    #[test]
    fn detached_envelope_matches_coset() {
        let protected = protected_bytes("did:example:s", "s:0001", &[7; 32]);
        let sign1 = CoseSign1 {
            protected: coset::ProtectedHeader {
                original_data: Some(protected.clone()),
                header: protected_header("did:example:s", "s:0001", &[7; 32]),
            },
            unprotected: Header::default(),
            payload: None,
            signature: vec![1; 64],
        };
        assert_eq!(
            envelope(&protected, None, &[1; 64]),
            sign1.to_tagged_vec().unwrap()
        );
    }

    #[test]
    fn cbor_heads_are_shortest_form() {
        for (n, want) in [
            (0u64, vec![0x40]),
            (23, vec![0x57]),
            (24, vec![0x58, 24]),
            (255, vec![0x58, 0xff]),
            (256, vec![0x59, 0x01, 0x00]),
            (65_535, vec![0x59, 0xff, 0xff]),
            (65_536, vec![0x5a, 0x00, 0x01, 0x00, 0x00]),
            (u64::from(u32::MAX), vec![0x5a, 0xff, 0xff, 0xff, 0xff]),
            (
                u64::from(u32::MAX) + 1,
                vec![0x5b, 0, 0, 0, 0x01, 0, 0, 0, 0],
            ),
        ] {
            let mut out = Vec::new();
            cbor_head(&mut out, 2, n);
            assert_eq!(out, want, "{n}");
        }
    }
}
