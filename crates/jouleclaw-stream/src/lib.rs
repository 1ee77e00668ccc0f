//! Pure tick and window types and the rolling byte-conservation ledger of the jouleclaw
//! streaming substrate.
//!
//! A stream is cut into fixed windows of ticks (200 ms by default). A [`StreamWindow`] validates
//! and holds one window's ticks; a [`RollingConservationLedger`] judges every tick against a
//! rolling byte budget and the barge-in deadline. Nothing here reads a clock, performs I/O,
//! spawns threads or draws randomness: time enters as each tick's `ts_ns`.
//!
//! The public interface is:
//! - [`Tick`], [`TickKind`], [`TickMarker`], [`TickKindTag`]: the unit of a stream;
//! - [`StreamSpec`], [`ValidatedSpec`], [`ChannelSpec`], [`ChannelDirection`], [`duplex`]: its
//!   layout, validated once and indexed by channel id;
//! - [`StreamWindow`]: one validated window, with its canonical JSON and content hash;
//! - [`RollingConservationLedger`], [`LedgerPolicy`], [`WindowConservationFinding`];
//! - [`canon`]: the canonical JSON (JCR-1) writing primitives shared by the stack;
//! - [`StreamError`]: every refusal, with a stable code.
//!
//! ```
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use jouleclaw_stream::*;
//!
//! let spec = Arc::new(StreamSpec::duplex_voice_default());
//! let mut ledger = RollingConservationLedger::new(LedgerPolicy::default())?;
//! let mut window = StreamWindow::open(spec, 0)?;
//!
//! let mic = Tick::new(0, duplex::MIC, TickKind::Audio, Bytes::from(vec![0u8; 6400]), 0);
//! let pushed = window.push(mic)?;
//! let finding = ledger.observe(pushed.tick, pushed.direction)?;
//! assert_eq!(finding, WindowConservationFinding::Conforming);
//!
//! // More outbound than anything accounts for.
//! let tts = Tick::new(0, duplex::TTS, TickKind::Audio, Bytes::from(vec![0u8; 8000]), 1_000);
//! let pushed = window.push(tts)?;
//! let finding = ledger.observe(pushed.tick, pushed.direction)?;
//! assert_eq!(finding, WindowConservationFinding::Hallucination { unaccounted: 1600 });
//!
//! // The window's canonical JSON (spec/STREAM-SUBSTRATE.md) and its BLAKE3 content hash.
//! let json = format!(
//!     concat!(
//!         r#"{{"schema":"jouleclaw-window/1","tick_window_ms":200,"ticks":["#,
//!         r#"{{"blake3":"{}","channel_id":1,"kind":"audio","len":6400,"ts_ns":0}},"#,
//!         r#"{{"blake3":"{}","channel_id":3,"kind":"audio","len":8000,"ts_ns":1000}}],"#,
//!         r#""window_id":0}}"#,
//!     ),
//!     blake3::hash(&[0u8; 6400]).to_hex(),
//!     blake3::hash(&[0u8; 8000]).to_hex(),
//! );
//! assert_eq!(String::from_utf8(window.canonical_json()).unwrap(), json);
//! assert_eq!(
//!     window.content_hash().to_hex().as_str(),
//!     "9da0ceaacc391992ff9936c8df64a3e557e0ada2bbc50cccbf11f5403ddac7e2"
//! );
//! # Ok::<(), StreamError>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

pub mod canon;
mod codes;
mod error;
pub mod interaction;
pub mod json_scan;
mod ledger;
mod spec;
mod tick;
mod window;

pub use error::{Result, StreamError};
pub use ledger::{LedgerPolicy, RollingConservationLedger, TickEvent, WindowConservationFinding};
pub use spec::{
    BARGE_IN_DEADLINE_MS, ChannelDirection, ChannelSpec, DEFAULT_TICK_WINDOW_MS, NS_PER_MS,
    StreamSpec, ValidatedSpec, duplex,
};
pub use tick::{Tick, TickKind, TickKindTag, TickMarker};
pub use window::{Pushed, StreamWindow, WINDOW_SCHEMA};
