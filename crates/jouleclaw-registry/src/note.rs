//! C2SP `tlog-checkpoint` bodies, `signed-note` Ed25519 signatures (type 0x01) and
//! `tlog-cosignature` cosignature/v1 signatures (type 0x04).
//!
//! Note framing (text, blank line, signature lines) is the `signed_note` crate's; the key
//! checks and the signature checks are this crate's: every public key is checked once, when it
//! is accepted (prime order, not small order), and every signature with `verify_strict`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use curve25519_dalek::edwards::CompressedEdwardsY;
use ed25519_dalek::{Signature, VerifyingKey};
use jouleclaw_jcr1::cose::Signer as CoseSigner;
use signed_note::{Note, VerificationError, Verifier, Verifiers};

use crate::error::{RegistryError, Result};

/// Signature type byte of an Ed25519 note signature (C2SP signed-note).
pub const ALG_ED25519: u8 = 0x01;
/// Signature type byte of an Ed25519 cosignature/v1 (C2SP tlog-cosignature).
pub const ALG_COSIGNATURE_V1: u8 = 0x04;
/// The longest note this crate reads, in bytes.
pub const MAX_NOTE_BYTES: usize = 64 * 1024;
/// The most signature lines a note may carry.
pub const MAX_NOTE_SIGNATURES: usize = 64;

/// The key ID of a signed-note key: `SHA-256(name || "\n" || type || key)[:4]`, big-endian.
pub fn key_id(name: &str, alg: u8, key: &[u8; 32]) -> u32 {
    let mut material = Vec::with_capacity(33);
    material.push(alg);
    material.extend_from_slice(key);
    signed_note::key_id(name, &material)
}

/// Checks a key name (and a checkpoint origin, which this profile signs under its own name):
/// non-empty, no Unicode white space, no `+`, at most 255 bytes.
pub fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 255 {
        return Err(RegistryError::InvalidName {
            reason: "a key name has 1 to 255 bytes",
        });
    }
    if !signed_note::is_key_name_valid(name) || name.chars().any(char::is_control) {
        return Err(RegistryError::InvalidName {
            reason: "a key name has no white space, control character or '+'",
        });
    }
    Ok(())
}

/// An Ed25519 public key accepted once: on the curve, of prime order, not of small order.
fn accept_key(bytes: &[u8; 32]) -> Result<VerifyingKey> {
    let prime_order = CompressedEdwardsY(*bytes)
        .decompress()
        .is_some_and(|p| p.is_torsion_free() && !p.is_small_order());
    if !prime_order {
        return Err(RegistryError::VerifierKeyInvalid {
            reason: "the Ed25519 key is not a point of prime order",
        });
    }
    VerifyingKey::from_bytes(bytes).map_err(|_| RegistryError::VerifierKeyInvalid {
        reason: "the Ed25519 key does not decode",
    })
}

/// A named Ed25519 key of one signature type: the steward's note key (0x01) or a witness's
/// cosignature key (0x04).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteKey {
    name: String,
    alg: u8,
    key: VerifyingKey,
    id: u32,
}

impl NoteKey {
    /// A key from its parts; the key is checked here, once.
    pub fn new(name: &str, alg: u8, key: &[u8; 32]) -> Result<Self> {
        check_name(name)?;
        if alg != ALG_ED25519 && alg != ALG_COSIGNATURE_V1 {
            return Err(RegistryError::VerifierKeyInvalid {
                reason: "the signature type is neither 0x01 (Ed25519) nor 0x04 (cosignature/v1)",
            });
        }
        let key = accept_key(key)?;
        Ok(Self {
            name: name.to_owned(),
            alg,
            id: key_id(name, alg, key.as_bytes()),
            key,
        })
    }

    /// Parses a C2SP verifier key `name+hash+base64(type || key)`; the hash must be the key ID.
    pub fn parse_vkey(vkey: &str) -> Result<Self> {
        let bad = |reason| RegistryError::VerifierKeyInvalid { reason };
        let mut parts = vkey.trim_end_matches('\n').splitn(3, '+');
        let (Some(name), Some(hash), Some(b64)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("a verifier key is name+hash+base64"));
        };
        if hash.len() != 8 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad("the key hash is 8 hex digits"));
        }
        let id = u32::from_str_radix(hash, 16).map_err(|_| bad("the key hash is 8 hex digits"))?;
        let raw = B64
            .decode(b64)
            .map_err(|_| bad("the key is not standard base64"))?;
        let [alg, key @ ..] = raw.as_slice() else {
            return Err(bad("the key is empty"));
        };
        let key: [u8; 32] = key
            .try_into()
            .map_err(|_| bad("an Ed25519 key has 32 bytes after its type"))?;
        let parsed = Self::new(name, *alg, &key)?;
        if parsed.id != id {
            return Err(bad("the key hash is not the key ID of the name and key"));
        }
        Ok(parsed)
    }

    /// The C2SP verifier key text.
    pub fn vkey(&self) -> String {
        let mut raw = Vec::with_capacity(33);
        raw.push(self.alg);
        raw.extend_from_slice(self.key.as_bytes());
        format!("{}+{:08x}+{}", self.name, self.id, B64.encode(raw))
    }

    /// The key name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The signature type byte.
    pub fn alg(&self) -> u8 {
        self.alg
    }

    /// The key ID.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The Ed25519 public key.
    pub fn key(&self) -> &VerifyingKey {
        &self.key
    }
}

/// The message a cosignature/v1 signs: `cosignature/v1\ntime T\n` then the checkpoint body.
pub fn cosignature_message(timestamp: u64, body: &[u8]) -> Vec<u8> {
    let mut m = format!("cosignature/v1\ntime {timestamp}\n").into_bytes();
    m.extend_from_slice(body);
    m
}

impl Verifier for NoteKey {
    fn name(&self) -> &str {
        &self.name
    }

    fn key_id(&self) -> u32 {
        self.id
    }

    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        match self.alg {
            ALG_ED25519 => {
                Signature::from_slice(sig).is_ok_and(|s| self.key.verify_strict(msg, &s).is_ok())
            }
            _ => {
                let Some((stamp, s)) = sig.split_first_chunk::<8>() else {
                    return false;
                };
                let t = u64::from_be_bytes(*stamp);
                t <= i64::MAX as u64
                    && Signature::from_slice(s).is_ok_and(|s| {
                        self.key
                            .verify_strict(&cosignature_message(t, msg), &s)
                            .is_ok()
                    })
            }
        }
    }
}

struct KeySet<'a>(&'a [&'a NoteKey]);

impl Verifiers for KeySet<'_> {
    fn verifier(&self, name: &str, id: u32) -> Result<&dyn Verifier, VerificationError> {
        self.0
            .iter()
            .find(|k| k.name == name && k.id == id)
            .map(|k| *k as &dyn Verifier)
            .ok_or_else(|| VerificationError::UnknownKey {
                name: name.to_owned(),
                id,
            })
    }
}

/// A checkpoint body: origin, tree size and root hash, with no extension lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointBody {
    /// The log's origin line.
    pub origin: String,
    /// The tree size.
    pub size: u64,
    /// The root hash.
    pub root: [u8; 32],
}

impl CheckpointBody {
    /// The three lines, each ending in a newline.
    pub fn text(&self) -> String {
        format!(
            "{}\n{}\n{}\n",
            self.origin,
            self.size,
            B64.encode(self.root)
        )
    }

    /// Parses exactly what [`CheckpointBody::text`] writes.
    pub fn parse(text: &[u8]) -> Result<Self> {
        let bad = |reason| RegistryError::CheckpointMalformed { reason };
        let text = std::str::from_utf8(text).map_err(|_| bad("not UTF-8"))?;
        let body = text
            .strip_suffix('\n')
            .ok_or(bad("the body ends without a newline"))?;
        let lines: Vec<&str> = body.split('\n').collect();
        let [origin, size, root] = lines.as_slice() else {
            return Err(bad("a checkpoint of this profile has exactly three lines"));
        };
        check_name(origin).map_err(|_| bad("the origin is not a valid key name"))?;
        let size_ok = !size.is_empty()
            && size.len() <= 20
            && size.bytes().all(|b| b.is_ascii_digit())
            && (*size == "0" || !size.starts_with('0'));
        if !size_ok {
            return Err(bad("the size is a decimal without leading zeroes"));
        }
        let size: u64 = size.parse().map_err(|_| bad("the size is above 2^64-1"))?;
        let root = B64
            .decode(root)
            .map_err(|_| bad("the root hash is not standard base64"))?;
        let root: [u8; 32] = root
            .try_into()
            .map_err(|_| bad("the root hash has 32 bytes"))?;
        let parsed = Self {
            origin: (*origin).to_owned(),
            size,
            root,
        };
        if parsed.text() != text {
            return Err(bad("the body is not in its one canonical form"));
        }
        Ok(parsed)
    }
}

/// A witness's valid cosignature on a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cosignature {
    /// The witness's key name.
    pub witness: String,
    /// The cosignature's timestamp (POSIX seconds).
    pub timestamp: u64,
}

/// A checkpoint whose steward signature verified, with the cosignatures that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedCheckpoint {
    /// The body.
    pub body: CheckpointBody,
    /// Valid cosignatures from the witnesses asked for, one per witness.
    pub cosignatures: Vec<Cosignature>,
    /// The note's exact bytes.
    pub note: Vec<u8>,
}

/// Signs a checkpoint body as a note under the steward's key (key name = origin).
pub fn sign_checkpoint_note(body: &CheckpointBody, signer: &dyn CoseSigner) -> Result<Vec<u8>> {
    check_name(&body.origin)?;
    let key = NoteKey::new(&body.origin, ALG_ED25519, signer.verifying_key().as_bytes())?;
    let text = body.text();
    let sig = signer
        .sign(text.as_bytes())
        .map_err(|e| RegistryError::Signer {
            reason: e.to_string(),
        })?;
    let line =
        signed_note::Signature::new(key.name.clone(), key.id, sig.to_vec()).map_err(|_| {
            RegistryError::InvalidName {
                reason: "the origin is not a valid key name",
            }
        })?;
    let mut out = text.into_bytes();
    out.push(b'\n');
    out.extend_from_slice(&line.to_bytes());
    Ok(out)
}

fn parse_note(note: &[u8]) -> Result<Note> {
    if note.len() > MAX_NOTE_BYTES {
        return Err(RegistryError::NoteMalformed {
            reason: "the note is above 64 KiB",
        });
    }
    let sig_lines = note.windows(3).filter(|w| *w == "—".as_bytes()).count();
    if sig_lines > MAX_NOTE_SIGNATURES {
        return Err(RegistryError::NoteMalformed {
            reason: "more than 64 signature lines",
        });
    }
    Note::from_bytes(note).map_err(|_| RegistryError::NoteMalformed {
        reason: "not a C2SP signed note",
    })
}

/// Verifies a checkpoint note: the body is of this profile and for `steward`'s origin, the
/// steward's signature verifies, and every signature line of a key in `witnesses` verifies
/// (lines of other keys are ignored, as the spec says). Returns the valid cosignatures.
pub fn verify_checkpoint_note(
    note: &[u8],
    steward: &NoteKey,
    witnesses: &[NoteKey],
) -> Result<VerifiedCheckpoint> {
    let parsed = parse_note(note)?;
    let body = CheckpointBody::parse(parsed.text())?;
    if body.origin != steward.name {
        return Err(RegistryError::OriginMismatch);
    }
    let mut keys: Vec<&NoteKey> = vec![steward];
    keys.extend(witnesses.iter().filter(|w| w.alg == ALG_COSIGNATURE_V1));
    let (verified, _unknown) = parsed.verify(&KeySet(&keys)).map_err(|e| match e {
        signed_note::NoteError::InvalidSignature { name, .. } => {
            RegistryError::SignatureInvalid { name }
        }
        signed_note::NoteError::UnverifiedNote => RegistryError::StewardSignatureMissing,
        _ => RegistryError::NoteMalformed {
            reason: "ambiguous or mismatched keys",
        },
    })?;
    if !verified
        .iter()
        .any(|s| s.name() == steward.name && s.id() == steward.id)
    {
        return Err(RegistryError::StewardSignatureMissing);
    }
    let mut cosignatures: Vec<Cosignature> = Vec::new();
    for s in verified
        .iter()
        .filter(|s| !(s.name() == steward.name && s.id() == steward.id))
    {
        let Some(stamp) = s.signature().first_chunk::<8>() else {
            continue;
        };
        if cosignatures.iter().all(|c| c.witness != s.name()) {
            cosignatures.push(Cosignature {
                witness: s.name().to_owned(),
                timestamp: u64::from_be_bytes(*stamp),
            });
        }
    }
    Ok(VerifiedCheckpoint {
        body,
        cosignatures,
        note: note.to_vec(),
    })
}

/// Adds the signature lines of a witness's `add-checkpoint` response to a note, keeping only
/// lines that verify under one of `witnesses` (a line from an unknown key is dropped, as the
/// protocol says; one that claims a known key and does not verify is refused).
pub fn merge_cosignatures(note: &[u8], response: &[u8], witnesses: &[NoteKey]) -> Result<Vec<u8>> {
    let parsed = parse_note(note)?;
    let text = parsed.text().to_vec();
    if response.len() > MAX_NOTE_BYTES {
        return Err(RegistryError::NoteMalformed {
            reason: "the response is above 64 KiB",
        });
    }
    let response = std::str::from_utf8(response).map_err(|_| RegistryError::NoteMalformed {
        reason: "the response is not UTF-8",
    })?;
    let mut out = note.to_vec();
    for line in response.split_inclusive('\n') {
        let Some(bare) = line.strip_suffix('\n') else {
            return Err(RegistryError::NoteMalformed {
                reason: "a line ends without a newline",
            });
        };
        let sig = signed_note::Signature::from_bytes(bare.as_bytes()).map_err(|_| {
            RegistryError::NoteMalformed {
                reason: "not a signature line",
            }
        })?;
        let Some(key) = witnesses
            .iter()
            .find(|k| k.name == sig.name() && k.id == sig.id())
        else {
            continue;
        };
        if !key.verify(&text, sig.signature()) {
            return Err(RegistryError::SignatureInvalid {
                name: sig.name().to_owned(),
            });
        }
        let encoded = sig.to_bytes();
        if !out.windows(encoded.len()).any(|w| w == encoded.as_slice()) {
            out.extend_from_slice(&encoded);
        }
    }
    Ok(out)
}

/// The body of a C2SP tlog-witness `add-checkpoint` request: `old N`, the consistency proof
/// (one base64 hash a line), an empty line, the checkpoint note.
pub fn add_checkpoint_request(old_size: u64, proof: &[[u8; 32]], note: &[u8]) -> Vec<u8> {
    let mut body = format!("old {old_size}\n").into_bytes();
    for h in proof {
        body.extend_from_slice(B64.encode(h).as_bytes());
        body.push(b'\n');
    }
    body.push(b'\n');
    body.extend_from_slice(note);
    body
}

/// The tree size in a witness's `409 Conflict` answer (`text/x.tlog.size`: a decimal and a
/// newline), if the body is one.
pub fn conflict_size(body: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(body).ok()?.strip_suffix('\n')?;
    let canonical = !text.is_empty()
        && text.len() <= 20
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    if canonical { text.parse().ok() } else { None }
}
