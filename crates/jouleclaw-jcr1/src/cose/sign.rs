//! Signing: the [`Signer`] seam, the software key, and the profile's signing functions.

use core::fmt;

use coset::{CborSerializable, CoseSign1Builder, Header, TaggedCborSerializable};
use ed25519_dalek::{SigningKey, VerifyingKey};

use super::RFC8032_TEST1_SEED;
use super::profile::{envelope, protected_bytes, sig_structure};
use crate::cose::kid;
use crate::error::{Jcr1Error, Result};
use crate::receipt::StreamWindowReceipt;

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
    pub(super) key: SigningKey,
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::cose::profile::protected_header;

    /// A receipt of the test fixture, for this module's and the profile reader's tests.
    pub(crate) fn receipt(steward: &str, stream_id: &str, window_id: u64) -> StreamWindowReceipt {
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
}
