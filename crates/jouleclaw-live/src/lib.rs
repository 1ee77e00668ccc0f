//! jouleclaw-live: many real-time jouleclaw streams on tokio, windows closed on the clock,
//! receipts and `stream-seal/1` checkpoints handed to a sink (files or a NATS JetStream
//! cluster), and the auditor that reads them back. Normative: `spec/LIVE.md`.
//!
//! The public interface is:
//! - [`Substrate`], [`SubstrateConfig`], [`StreamHandle`], [`VerdictEvent`],
//!   [`StreamSummary`], [`SubstrateStats`]: the runtime;
//! - [`Clock`], [`TokioClock`]: the injected clock;
//! - [`ReceiptSink`], [`SinkBatch`], [`ReceiptItem`], [`SinkContext`], [`SinkStats`],
//!   [`StreamStatus`], [`escape_id`], [`unescape_id`], [`check_ids`]: the sink seam;
//! - [`journal`]: the JetStream sink's write-ahead journal and its replay;
//! - [`FileSink`] ([`file`](mod@file)): the file sink (with each stream's
//!   [`file::STOP_LATENCY_CBOR`]);
//! - [`jetstream`]: [`jetstream::JetStreamSink`], [`jetstream::JetStreamConfig`], the message
//!   format ([`jetstream::encode_batch`], [`jetstream::decode_batch`]) and
//!   [`jetstream::read_back`];
//! - [`audit`]: the auditor: [`audit::audit_source`] (the one stream verifier,
//!   `jouleclaw_store::verify_stream`, over a `jouleclaw_store::source::StreamSource`, with
//!   what the storage knows and the signed documents' binding), over a stream folder
//!   ([`audit::audit_stream_dir`], [`audit::stream_dirs`]), a JetStream read-back
//!   ([`audit::audit_nats_stream`], its records a [`audit::StreamRecords`]), each held stream
//!   served as a [`audit::HeldStream`]
//!   ([`audit::StreamDocuments`]); [`audit::Stored`], [`audit::StreamAudit`] and its typed
//!   [`audit::Problem`]s (the signed documents and their binding to the receipts are the
//!   stream verifier's);
//! - `registry` (feature `registry`): `registry::collect_stored` and
//!   `registry::register_stored`, registering the sealed calls a cluster holds in a call registry
//!   (the library of `jouleclaw registry add-stored`);
//! - [`synth`]: synthetic duplex calls, a bounded latency histogram, the schedule and
//!   [`synth::Capacity`] (whether a run kept up with it: the load generator);
//! - [`tokio`]: the runtime crate, re-exported;
//! - [`LiveError`], [`Result`]: every failure, with a stable code.
//!
//! ```
//! use std::sync::Arc;
//! use jouleclaw_jcr1::cose::SoftwareSigner;
//! use jouleclaw_live::*;
//! use jouleclaw_stream::{Tick, TickMarker, duplex};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
//! let dir = std::env::temp_dir().join(format!("jc-live-doc-{}", std::process::id()));
//! let substrate = Substrate::start(
//!     SubstrateConfig::new("did:example:steward"),
//!     Arc::new(TokioClock::new(1_780_617_600)),
//!     Arc::new(SoftwareSigner::rfc8032_test_key()),
//!     Box::new(FileSink::new(&dir)?),
//! )?;
//! let call = substrate.open_stream("call-1")?;
//! let now = call.now_ns();
//! let verdict = call.push(Tick::marker(now / call.window_ns(), duplex::CONTROL, TickMarker::BargeIn, now))?;
//! assert!(matches!(verdict, Some(jouleclaw_stream_oracle::WindowVerdict::Yield { .. })));
//! let summary = call.close().await?;
//! assert_eq!((summary.windows, summary.checkpoints), (1, 1));
//! substrate.shutdown().await?;
//! assert!(dir.join("call-1").join(file::SEALS_CBOR).exists());
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

pub mod audit;
mod clock;
mod error;
pub mod file;
pub mod jetstream;
pub mod journal;
#[cfg(feature = "registry")]
pub mod registry;
mod sink;
mod substrate;
pub mod synth;

/// The tokio this crate runs on (callers build their runtime with it).
pub use tokio;

pub use clock::{BoxFuture, Clock, TokioClock};
pub use error::{LiveError, Result};
pub use file::FileSink;
pub use sink::{
    LAG_BUCKETS_MS, MAX_ESCAPED_ID_BYTES, MAX_PREFIX_BYTES, ReceiptItem, ReceiptSink, SinkBatch,
    SinkContext, SinkStats, StreamStatus, check_ids, escape_id, unescape_id,
};
pub use substrate::{
    FINDING_KINDS, StreamHandle, StreamSummary, Substrate, SubstrateConfig, SubstrateStats,
    VERDICT_KINDS, VerdictEvent,
};
