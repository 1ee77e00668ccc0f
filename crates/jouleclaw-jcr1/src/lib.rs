//! JCR-1: canonical JSON, stream-window/1 receipts, and their COSE_Sign1 / Ed25519 signatures.
//!
//! A receipt is minted per closed window, encoded to canonical JSON (RFC 8785 subset),
//! content-addressed by BLAKE3 and signed as a tagged COSE_Sign1. The strict decoder accepts a
//! byte string only if it is exactly the canonical encoding of a valid receipt, and decides the
//! same way whether the bytes arrive whole or one at a time.
//!
//! The public interface is:
//! - [`StreamWindowReceipt`], [`EnergyProvenance`], [`UtcSecond`]: the receipt;
//! - [`decode_receipt`], [`ReceiptDecoder`], [`Progress`], [`Limits`], [`Refusal`],
//!   [`RefusalCode`]: strict decoding;
//! - [`encode_value`], [`decode_canonical_value`]: generic canonical JSON;
//! - [`schema`]: the one schema object and its JSON Schema;
//! - [`ReceiptMinter`], [`Clock`], [`EnergySource`], [`Estimator`], [`RaplReader`]: minting;
//! - [`cose`]: signing and verification (one receipt, many, or a CBOR sequence read as a stream
//!   in bounded memory), key files;
//! - [`Jcr1Error`]: every failure, with a stable code.
//!
//! ```
//! use jouleclaw_jcr1::*;
//!
//! let receipt = StreamWindowReceipt {
//!     closed_at: UtcSecond::parse("2026-06-05T00:00:00Z").unwrap(),
//!     steward: "did:keri:EJ9testStewardAID000000000000000".into(),
//!     stream_id: "stream-demo".into(),
//!     window_id: 1,
//!     window_hash: blake3::Hash::from_bytes([0xaa; 32]),
//!     tick_count: 4,
//!     inbound_bytes: 6400,
//!     outbound_bytes: 4800,
//!     joules_uj: 350,
//!     energy_provenance: EnergyProvenance::Estimator,
//!     verdict: jouleclaw_stream_oracle::WindowVerdict::pass_by("always-pass-stream"),
//!     conservation: jouleclaw_stream::WindowConservationFinding::Conforming,
//! };
//! let bytes = receipt.encode()?;
//! // The seed's first conformance vector.
//! assert_eq!(
//!     blake3::hash(&bytes).to_hex().as_str(),
//!     "ee359043b4fc4a4b25b7cd5f47c631f0c675a478e3b4c3883bc908fb00948615"
//! );
//! assert_eq!(decode_receipt(&bytes)?, receipt);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

pub mod cose;
mod decode;
mod error;
pub mod fields;
mod mint;
mod receipt;
mod refusal;
pub mod schema;
mod strict;
mod time;
mod value;

pub use decode::{Progress, ReceiptDecoder, decode_canonical_value, decode_receipt};
pub use error::{Jcr1Error, Result};
pub use mint::{
    Clock, EnergyReading, EnergySource, Estimator, FixedClock, Minted, NoClock, RaplReader,
    ReceiptMinter, SystemClock,
};
pub use receipt::{EnergyProvenance, StreamWindowReceipt, receipt_id, write_conservation};
pub use refusal::{Refusal, RefusalCode};
pub use strict::Limits;
pub use time::UtcSecond;
pub use value::encode_value;
