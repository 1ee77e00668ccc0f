//! The per-window pipeline of a jouleclaw stream: ticks in, signed `stream-window/1` receipts
//! out.
//!
//! [`Pipeline`] drives one stream through the whole chain of the substrate, in the order the
//! driver contract of `spec/STREAM-ORACLE.md` fixes:
//!
//! 1. every tick is validated by its [`StreamWindow`](jouleclaw_stream::StreamWindow);
//! 2. the rolling conservation ledger judges it on the spot ([`TickOutcome::finding`]: a
//!    `BargeInIgnored` is flagged on the late outbound tick);
//! 3. each [`Stage`] sees it and may produce ticks (a transcriber's turn stage turns mic audio
//!    into an ASR text tick); the oracles learn each stage's result as data;
//! 4. the composite stream oracle sees it; an early verdict (the `Yield` of a barge-in) is
//!    reported at that tick with its `ts_ns` ([`TickOutcome::early`]); ticks the stages produced
//!    follow, through window, ledger and oracles;
//! 5. when a tick of a later window arrives, or on [`Pipeline::close_window`], the open window
//!    closes: the oracle judges it with the ledger's window summary, a receipt is minted at the
//!    window's end in stream time ([`ClosedAt`]) and signed as a tagged COSE_Sign1, and the result
//!    comes back as a [`ClosedWindow`]. A window that held no tick never opens, so it has no
//!    receipt.
//!
//! The pipeline is two halves cut at the window boundary, each usable on its own:
//!
//! - a [`Judge`] owns the open window, the ledger, the oracles and the stages (steps 1 to 4
//!   and the judgement of step 5): ticks in, early verdicts per tick and a [`JudgedWindow`]
//!   per closed window out;
//! - a [`Notary`] mints, hashes, signs and seals a [`JudgedWindow`] under the
//!   [`SigningPolicy`] (the rest of step 5) and signs the final checkpoint.
//!
//! [`Pipeline`] drives both on one thread. A runtime that answers early verdicts on one thread
//! and signs on another (`jouleclaw-live`) drives the halves itself, handing each
//! [`JudgedWindow`] over (it is `Send`, as are both halves and the pipeline); the receipts are
//! byte for byte the pipeline's.
//!
//! Everything here is pure: no clocks, I/O, threads or randomness. Time enters as each tick's
//! `ts_ns` and as [`ClosedAt`]; the signer is whatever
//! [`Signer`](jouleclaw_jcr1::cose::Signer) the caller hands in, and a stage is the caller's own
//! code. File handling belongs to the caller (the `jouleclaw` command reads traces and writes
//! receipts).
//!
//! A tick the window refuses changes nothing. A failure while a window closes (an unencodable
//! receipt, a failing energy source or signer) or a produced tick its window refuses leaves the
//! pipeline unusable: every later call returns [`PipelineError::Poisoned`], because the oracle
//! and the ledger have already moved on.
//!
//! The public interface is:
//! - [`Pipeline`], [`PipelineConfig`], [`ClosedAt`], [`SigningPolicy`], [`WindowSignatures`]:
//!   the driver and how it signs (one signature per window, or one per checkpoint of the
//!   stream's Merkle log, `spec/STREAM-SEAL.md`);
//! - [`Judge`], [`JudgedTick`], [`JudgedWindow`], [`Notary`]: the driver's two halves;
//! - [`Finished`]: the end of a stream and its final seal;
//! - [`TickOutcome`], [`EarlyVerdict`], [`StageReport`], [`ProducedTick`], [`ClosedWindow`]:
//!   what it reports; [`format_ts`] writes stream time for people;
//! - [`Stage`], [`StageFailure`]: the stage seam;
//! - [`duplex_voice_oracle`], [`duplex_voice_backends`]: the default composite oracle;
//! - [`trace`]: the tick trace and stream spec file formats of `spec/TICK-TRACE.md`;
//! - [`demo`]: the scripted duplex-voice story (the demo's fixture);
//! - [`PipelineError`], [`Result`]: every failure, with a stable code.
//!
//! ```
//! use std::sync::Arc;
//! use jouleclaw_jcr1::Estimator;
//! use jouleclaw_jcr1::cose::{self, SingleKey, Signer, SoftwareSigner};
//! use jouleclaw_pipeline::*;
//! use jouleclaw_stream::{StreamSpec, Tick, TickMarker, duplex};
//! use jouleclaw_stream_oracle::WindowVerdict;
//!
//! let spec = Arc::new(StreamSpec::duplex_voice_default());
//! let signer = SoftwareSigner::rfc8032_test_key();
//! let key = signer.verifying_key();
//! let mut pipeline = Pipeline::new(
//!     spec.clone(),
//!     PipelineConfig::new("did:example:steward", "call-1"),
//!     duplex_voice_oracle(),
//!     Estimator::default(),
//!     Box::new(signer),
//! )?;
//!
//! // The barge-in yields on its own tick, long before the window closes.
//! let line = br#"{"ts_ns":40000000,"channel_id":0,"kind":"marker","marker":"barge_in"}"#;
//! let tick = trace::parse_trace_line(line, &spec)?.expect("not a blank line");
//! let outcome = pipeline.push(tick)?;
//! assert_eq!(outcome.early, Some(WindowVerdict::Yield { seen_at: 0 }));
//! assert_eq!(outcome.ts_ns, 40_000_000);
//!
//! // A tick of window 1 closes window 0: judged, minted, signed.
//! let outcome = pipeline.push(Tick::marker(1, duplex::CONTROL, TickMarker::Silence, 200_000_000))?;
//! let closed = outcome.closed.expect("window 0 closed");
//! assert_eq!(closed.receipt.verdict, WindowVerdict::Yield { seen_at: 0 });
//! let verified = cose::verify(closed.cose_sign1().expect("signed"), &SingleKey::new(key)).expect("verifies");
//! assert_eq!(verified.content_hash, closed.content_hash);
//!
//! let last = pipeline.close_window()?.expect("window 1 was open");
//! assert_eq!(last.receipt.window_id, 1);
//! # Ok::<(), PipelineError>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

pub mod demo;
mod driver;
mod error;
mod judge;
mod notary;
mod stage;
pub mod trace;

pub use driver::{
    ClosedAt, ClosedWindow, EarlyVerdict, Finished, Pipeline, PipelineConfig, ProducedTick,
    SigningPolicy, StageReport, TickOutcome, WindowSignatures, duplex_voice_backends,
    duplex_voice_oracle, format_ts,
};
pub use error::{PipelineError, Result};
pub use judge::{Judge, JudgedTick, JudgedWindow};
pub use notary::Notary;
pub use stage::{Stage, StageFailure};
