//! jouleclaw-stop-latency: how fast a voice agent stopped talking after each barge-in, and the
//! signed `stop-latency/1` document that binds those measurements to the stream's window
//! receipts. Normative: `spec/STOP-LATENCY-V1.md`.
//!
//! Pure: no clocks, I/O, threads or randomness. Time enters as each tick's `ts_ns`; signing
//! goes through `jouleclaw_jcr1::cose::Signer`. The meter runs beside a pipeline: the caller
//! feeds it the same accepted ticks.
//!
//! The public interface is:
//! - [`StopLatencyMeter`], [`BargeIn`], [`EndedBy`], [`percentile`], [`summary`]: the
//!   measurement;
//! - [`StopLatencyDocument`], [`Refusal`], [`receipts_root`]: the wire form and its strict
//!   decoder;
//! - [`sign`], [`verify`], [`SignedStopLatency`]: the COSE_Sign1;
//! - [`check_receipts`], [`required`], [`missing`], [`BindingProblem`]: the binding to the
//!   receipts;
//! - [`StopLatencyError`], [`CoseCode`]: every failure, with a stable code.
//!
//! ```
//! use bytes::Bytes;
//! use jouleclaw_jcr1::cose::{Signer, SoftwareSigner, ValidKey};
//! use jouleclaw_stop_latency::*;
//! use jouleclaw_stream::{ChannelDirection::*, Tick, TickKind, TickMarker, duplex};
//!
//! let mut meter = StopLatencyMeter::new();
//! let tts = |ts: u64| Tick::new(ts / 200_000_000, duplex::TTS, TickKind::Audio, Bytes::from(vec![0u8; 480]), ts);
//! meter.observe(&tts(10_000_000), Outbound)?;
//! meter.observe(&Tick::marker(0, duplex::CONTROL, TickMarker::BargeIn, 40_000_000), Inbound)?;
//! meter.observe(&tts(100_000_000), Outbound)?;
//! meter.observe(&tts(230_000_000), Outbound)?; // 190 ms after the barge-in
//! meter.finish();
//! let b = meter.barge_ins()[0];
//! assert_eq!((b.stop_latency_ns(), b.late_audio_bytes), (190_000_000, 480));
//! assert!(!b.within_deadline());
//!
//! let doc = StopLatencyDocument::new("did:example:steward", "call-1", meter.barge_ins(), &[[7; 32], [8; 32]])?;
//! let signer = SoftwareSigner::rfc8032_test_key();
//! let signed = sign(&signer, &doc)?;
//! // The verifier's key, checked once when it is made (canonical, not small order, torsion-free).
//! let key = ValidKey::new(signer.verifying_key()).expect("a signer's key is of prime order");
//! assert_eq!(verify(&signed.cose_sign1, &key)?.document, doc);
//! # Ok::<(), StopLatencyError>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

mod bind;
mod cose;
mod document;
mod error;
mod meter;

pub use bind::{
    BINDING_CODES, BindingProblem, check_bound_under_root, check_receipts,
    check_receipts_under_root, missing, required,
};
pub use cose::{
    MAX_SIGNED_BYTES, STOP_LATENCY_CONTENT_TYPE, SignedStopLatency, protected_bytes, sig_structure,
    sign, verify,
};
pub use document::{
    MAX_NAME_BYTES, Refusal, STOP_LATENCY_LIMITS, STOP_LATENCY_SCHEMA, STOP_LATENCY_SCHEMA_CODES,
    STOP_LATENCY_SCHEMA_V2, StopLatencyDocument, StopLatencyKind, Vantage, VantagePoint,
    receipts_root,
};
pub use error::{CoseCode, Result, StopLatencyError};
pub use meter::{
    BargeIn, DEADLINE_NS, EndedBy, MAX_BARGE_INS, StopLatencyMeter, percentile, summary,
};
