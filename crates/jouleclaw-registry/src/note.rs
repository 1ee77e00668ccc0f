//! C2SP `tlog-checkpoint` bodies, `signed-note` Ed25519 signatures (type 0x01) and
//! `tlog-cosignature` cosignature/v1 signatures (type 0x04).
//!
//! Note framing (text, blank line, signature lines) is the `signed_note` crate's; the key
//! checks and the signature checks are this crate's: every public key is checked once, when it
//! is accepted, by the one key rule of every signed kind (`jouleclaw_jcr1::cose::ValidKey`:
//! canonical encoding, not small order, torsion-free), and every signature with
//! `verify_strict`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use ed25519_dalek::{Signature, VerifyingKey};
use jouleclaw_jcr1::Jcr1Error;
use jouleclaw_jcr1::cose::{Signer as CoseSigner, ValidKey};
use signed_note::{Note, Verifier};

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

/// An Ed25519 public key accepted once, by the one key rule of every signed kind
/// ([`ValidKey::new`]): a curve point, its canonical encoding, not of small order, without a
/// torsion component. Refused with `verifier_key_invalid`, the reason naming the failed check.
fn accept_key(bytes: &[u8; 32]) -> Result<ValidKey> {
    let key = VerifyingKey::from_bytes(bytes).map_err(|_| RegistryError::VerifierKeyInvalid {
        reason: "the Ed25519 key is not a point of prime order",
    })?;
    ValidKey::new(key).map_err(|e| RegistryError::VerifierKeyInvalid {
        reason: match e {
            Jcr1Error::KeyRefused { detail } => detail,
            _ => "the Ed25519 key is not a point of prime order",
        },
    })
}

/// A named Ed25519 key of one signature type: the steward's note key (0x01) or a witness's
/// cosignature key (0x04).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoteKey {
    name: String,
    alg: u8,
    key: ValidKey,
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
            id: key_id(name, alg, key.verifying_key().as_bytes()),
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
        raw.extend_from_slice(self.key.verifying_key().as_bytes());
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
        self.key.verifying_key()
    }

    /// The public key as it was accepted (checked once, when this key was made).
    pub fn valid_key(&self) -> &ValidKey {
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
                Signature::from_slice(sig).is_ok_and(|s| self.key().verify_strict(msg, &s).is_ok())
            }
            _ => {
                let Some((stamp, s)) = sig.split_first_chunk::<8>() else {
                    return false;
                };
                let t = u64::from_be_bytes(*stamp);
                t <= i64::MAX as u64
                    && Signature::from_slice(s).is_ok_and(|s| {
                        self.key()
                            .verify_strict(&cosignature_message(t, msg), &s)
                            .is_ok()
                    })
            }
        }
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
    /// The cosignature's timestamp (POSIX seconds): of a witness with several valid lines, the
    /// earliest.
    pub timestamp: u64,
}

/// A checkpoint whose steward signature verified, with the cosignatures that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedCheckpoint {
    /// The body.
    pub body: CheckpointBody,
    /// Valid cosignatures from the witnesses asked for, one per witness, in the order of their
    /// first lines in the note.
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

/// A note's framing (the `signed_note` crate's) and its signature lines, every one of them in
/// order (the crate's own verification skips a second line of a key it has seen; this one
/// does not). Bounds: 64 KiB and 64 signature lines, counted as lines of the signature block
/// (an em dash in the body is not a signature line).
fn parse_note(note: &[u8]) -> Result<(Note, Vec<signed_note::Signature>)> {
    let bad = |reason| RegistryError::NoteMalformed { reason };
    if note.len() > MAX_NOTE_BYTES {
        return Err(bad("the note is above 64 KiB"));
    }
    let cut = note
        .windows(2)
        .rposition(|w| w == b"\n\n")
        .ok_or(bad("not a C2SP signed note"))?;
    let block = note[cut + 2..]
        .strip_suffix(b"\n")
        .ok_or(bad("not a C2SP signed note"))?;
    if block.split(|&b| b == b'\n').count() > MAX_NOTE_SIGNATURES {
        return Err(bad("more than 64 signature lines"));
    }
    let parsed = Note::from_bytes(note).map_err(|_| bad("not a C2SP signed note"))?;
    let lines = block
        .split(|&b| b == b'\n')
        .map(signed_note::Signature::from_bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| bad("not a C2SP signed note"))?;
    Ok((parsed, lines))
}

/// Verifies a checkpoint note: the body is of this profile and for `steward`'s origin, the
/// steward's signature verifies, and every signature line of a key in `witnesses` verifies,
/// each one (a second line of a trusted key that does not verify is refused, not skipped);
/// lines of other keys are ignored, as the spec says. Returns the valid cosignatures, one per
/// witness, at the earliest time among its valid lines.
pub fn verify_checkpoint_note(
    note: &[u8],
    steward: &NoteKey,
    witnesses: &[NoteKey],
) -> Result<VerifiedCheckpoint> {
    let (parsed, lines) = parse_note(note)?;
    let body = CheckpointBody::parse(parsed.text())?;
    if body.origin != steward.name {
        return Err(RegistryError::OriginMismatch);
    }
    let witnesses: Vec<&NoteKey> = witnesses
        .iter()
        .filter(|w| w.alg == ALG_COSIGNATURE_V1)
        .collect();
    let mut steward_signed = false;
    let mut cosignatures: Vec<Cosignature> = Vec::new();
    for line in &lines {
        let is = |k: &NoteKey| k.name == line.name() && k.id == line.id();
        let key = if is(steward) {
            steward
        } else if let Some(w) = witnesses.iter().find(|w| is(w)) {
            w
        } else {
            continue;
        };
        if !key.verify(parsed.text(), line.signature()) {
            return Err(RegistryError::SignatureInvalid {
                name: line.name().to_owned(),
            });
        }
        if key.alg == ALG_ED25519 {
            steward_signed = true;
            continue;
        }
        let Some(stamp) = line.signature().first_chunk::<8>() else {
            continue;
        };
        let timestamp = u64::from_be_bytes(*stamp);
        match cosignatures.iter_mut().find(|c| c.witness == key.name) {
            Some(c) => c.timestamp = c.timestamp.min(timestamp),
            None => cosignatures.push(Cosignature {
                witness: key.name.clone(),
                timestamp,
            }),
        }
    }
    if !steward_signed {
        return Err(RegistryError::StewardSignatureMissing);
    }
    Ok(VerifiedCheckpoint {
        body,
        cosignatures,
        note: note.to_vec(),
    })
}

/// Adds a witness's `add-checkpoint` answer to a note: of the lines of a key in `witnesses`
/// (the witness that answered), each must verify (one that does not refuses the answer), and
/// the first is kept unless the note already holds a line of that key; lines of other keys are
/// dropped, as the protocol says. So a note holds at most one line per witness, and an answer
/// adds at most one line per key given however many it sends: a witness that answers with a
/// hundred valid lines cannot push the note past its bounds or the other witnesses' lines out.
/// The merged note is checked against the bounds (64 KiB, 64 signature lines); an answer that
/// would take it past them is refused and the note is left as it was.
pub fn merge_cosignatures(note: &[u8], response: &[u8], witnesses: &[NoteKey]) -> Result<Vec<u8>> {
    let (parsed, existing) = parse_note(note)?;
    let text = parsed.text().to_vec();
    if response.len() > MAX_NOTE_BYTES {
        return Err(RegistryError::NoteMalformed {
            reason: "the response is above 64 KiB",
        });
    }
    let response = std::str::from_utf8(response).map_err(|_| RegistryError::NoteMalformed {
        reason: "the response is not UTF-8",
    })?;
    let mut holds: Vec<(String, u32)> = existing
        .iter()
        .map(|s| (s.name().to_owned(), s.id()))
        .collect();
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
            .find(|k| k.alg == ALG_COSIGNATURE_V1 && k.name == sig.name() && k.id == sig.id())
        else {
            continue;
        };
        if !key.verify(&text, sig.signature()) {
            return Err(RegistryError::SignatureInvalid {
                name: sig.name().to_owned(),
            });
        }
        if holds.iter().any(|(n, id)| *n == key.name && *id == key.id) {
            continue;
        }
        holds.push((key.name.clone(), key.id));
        out.extend_from_slice(&sig.to_bytes());
    }
    parse_note(&out)?;
    Ok(out)
}

/// A witness's cosignature/v1 line (C2SP tlog-cosignature) over a checkpoint note's body at
/// `timestamp`, signed by `signer` under `key` (a type 0x04 key of the signer's public key):
/// what a witness answers `add-checkpoint` with. For stand-ins of a witness in tests.
pub fn cosignature_line(
    note: &[u8],
    key: &NoteKey,
    signer: &dyn CoseSigner,
    timestamp: u64,
) -> Result<Vec<u8>> {
    if key.alg != ALG_COSIGNATURE_V1 || *key.key() != signer.verifying_key() {
        return Err(RegistryError::VerifierKeyInvalid {
            reason: "the key is not the signer's cosignature/v1 key",
        });
    }
    if timestamp > i64::MAX as u64 {
        return Err(RegistryError::NoteMalformed {
            reason: "a cosignature time is at most 2^63-1",
        });
    }
    let (parsed, _) = parse_note(note)?;
    let sig = signer
        .sign(&cosignature_message(timestamp, parsed.text()))
        .map_err(|e| RegistryError::Signer {
            reason: e.to_string(),
        })?;
    let mut raw = timestamp.to_be_bytes().to_vec();
    raw.extend_from_slice(&sig);
    let line = signed_note::Signature::new(key.name.clone(), key.id, raw).map_err(|_| {
        RegistryError::InvalidName {
            reason: "the witness name is not a valid key name",
        }
    })?;
    Ok(line.to_bytes())
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
