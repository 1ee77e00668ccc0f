//! COSE_Sign1 / Ed25519 signing and verification of stream-window/1 receipts.
//!
//! The profile (`spec/JCR1-COSE-PROFILE.md`): tagged COSE_Sign1 (tag 18); attached payload = the
//! receipt's canonical bytes; external_aad empty; protected header, labels ascending,
//! `{1: -8, 3: CONTENT_TYPE, 4: kid, 15: {1: steward, 2: receipt id}}`; unprotected header
//! empty. `kid` is the RFC 9679 COSE Key Thumbprint (SHA-256) of the Ed25519 key.
//!
//! Signing goes through the [`Signer`] seam (a software key by default); the exact bytes that
//! get signed are available ([`SignedReceipt::to_be_signed`], [`to_be_signed`]).
//!
//! The modules below `cose` are private; everything public is re-exported here: the profile's
//! exact bytes ([`protected_header`]), signing ([`sign_receipt`]), verifying one receipt
//! ([`verify`]) or many ([`verify_batch`]) under keys checked once ([`ValidKey`]), reading a
//! CBOR sequence as a stream ([`SequenceReader`], [`verify_sequence`]), and key files
//! ([`read_public_key_file`], [`SoftwareSigner::read_key_file`]). Two modules are public: the
//! profile's bytes for every kind ([`document`]) and the CBOR heads they are made of ([`cbor`]).

mod batch;
pub mod cbor;
pub mod document;
mod keyfile;
mod profile;
mod sequence;
mod sign;
mod verify;

use ed25519_dalek::VerifyingKey;
use sha2::{Digest, Sha256};

pub use crate::error::CoseRefusal;
pub use batch::verify_batch;
pub use keyfile::{
    LoosePermissions, MAX_KEY_FILE_BYTES, PUBLIC_KEY_MODE, PUBLIC_KEY_PREFIX, SECRET_KEY_MODE,
    SECRET_KEY_PREFIX, check_secret_key_permissions, parse_public_key_text, public_key_from_bytes,
    public_key_text, read_public_key_file, write_key_pair, write_public_key_file,
};
pub use profile::protected_header;
pub use sequence::{
    MAX_BATCH_ITEMS, MAX_ITEM_BYTES, MAX_NESTING, MAX_PAYLOAD_BYTES, SequenceReader,
    read_single_item, split_cbor_sequence, verify_sequence,
};
pub use sign::{
    SignedReceipt, Signer, SoftwareSigner, sign_payload, sign_receipt, sign1, to_be_signed,
};
pub use verify::{
    KeyResolver, KnownReceipt, SingleKey, ValidKey, VerifiedKnown, VerifiedReceipt, verify,
    verify_known, verify_sign1_signature_only,
};

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
