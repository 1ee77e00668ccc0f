//! Per-request and per-window oracles of the jouleclaw streaming substrate.
//!
//! A per-request [`Oracle`] judges one exchange (input bytes, output bytes) and returns a
//! [`Verdict`]. A [`StreamOracle`] judges a closed [`jouleclaw_stream::StreamWindow`] and may
//! raise a verdict early on the tick that warrants it; its [`WindowVerdict`] is ranked
//! `Fail > Yield > NeedMore > Pass` and has a canonical JSON wire form. Everything here is pure:
//! no clocks, I/O, threads or randomness. The normative contract is `spec/STREAM-ORACLE.md`.
//!
//! The public interface is:
//! - [`Oracle`], [`Verdict`]: the per-request surface, with [`ByteBudgetOracle`] and
//!   [`TextWellFormedOracle`] ([`TextRequirement`]);
//! - [`StreamOracle`], [`WindowContext`], [`WindowVerdict`], [`combine`]: the per-window
//!   surface, the verdict wire forms and the dominance rule;
//! - [`StageEvent`], [`StageOutcome`]: what a pipeline stage reported for a tick;
//! - backends: [`AlwaysPassStream`], [`BargeInDetector`], [`ConservationGate`],
//!   [`FixedStreamOracle`], [`PerTickAdapter`] ([`ExchangeScope`]) and
//!   [`CompositeStreamOracle`];
//! - [`OracleError`], [`Result`]: every refusal, with a stable code.
//!
//! ```
//! use std::sync::Arc;
//! use bytes::Bytes;
//! use jouleclaw_stream::{StreamSpec, StreamWindow, Tick, TickKind, TickMarker, duplex};
//! use jouleclaw_stream_oracle::*;
//!
//! let mut oracle = CompositeStreamOracle::new(
//!     "voice",
//!     vec![
//!         Box::new(AlwaysPassStream),
//!         Box::new(BargeInDetector),
//!         Box::new(PerTickAdapter::new(ByteBudgetOracle::new(2000, 64))),
//!     ],
//! );
//! let mut window = StreamWindow::open(Arc::new(StreamSpec::duplex_voice_default()), 7)?;
//! let ticks = [
//!     Tick::new(7, duplex::ASR, TickKind::Text, Bytes::from_static(b"wait"), 1_400_000_000),
//!     Tick::marker(7, duplex::CONTROL, TickMarker::BargeIn, 1_401_000_000),
//! ];
//! let mut early = None;
//! for tick in ticks {
//!     let pushed = window.push(tick)?;
//!     // The barge-in yields on the tick that carries it, not at window close.
//!     early = early.or(oracle.on_tick(pushed.tick, pushed.direction));
//! }
//! assert_eq!(early, Some(WindowVerdict::Yield { seen_at: 7 }));
//!
//! let verdict = oracle.judge(&window, &WindowContext::default());
//! assert_eq!(verdict.wire_bytes()?, br#"{"kind":"yield","seen_at":7}"#);
//! // The losing signals stay visible.
//! assert_eq!(oracle.last_signals()[0].1, WindowVerdict::pass_by("always-pass-stream"));
//!
//! assert!(ByteBudgetOracle::new(2000, 16).passes(b"hello", b"twenty-six bytes of output"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

mod backends;
mod composite;
mod error;
mod oracle;
mod stream;
mod verdict;

pub use backends::{
    AlwaysPassStream, BargeInDetector, ConservationGate, ExchangeScope, FixedStreamOracle,
    PerTickAdapter,
};
pub use composite::CompositeStreamOracle;
pub use error::{OracleError, Result};
pub use oracle::{ByteBudgetOracle, Oracle, TextRequirement, TextWellFormedOracle};
pub use stream::{StageEvent, StageOutcome, StreamOracle, WindowContext};
pub use verdict::{Verdict, WindowVerdict, combine};
