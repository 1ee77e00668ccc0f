//! jouleclaw-interaction: τ-voice's interaction panel of a voice stream (response latency and
//! rate, yield latency and rate, agent interruptions, selectivity to backchannels, vocal tics
//! and non-directed speech), measured from the ticks, and the signed `interaction-metrics/1`
//! document that binds its events to the stream's window receipts. Normative:
//! `spec/INTERACTION-METRICS-V1.md`.
//!
//! Pure: no clocks, I/O, threads or randomness. Time enters as each tick's `ts_ns`; signing
//! goes through `jouleclaw_jcr1::cose::Signer`. The meter runs beside a pipeline: the caller
//! feeds it the same accepted ticks.
//!
//! The public interface is:
//! - [`InteractionMeter`], [`InteractionConfig`], [`Event`], [`EventKind`]: the measurement;
//! - [`PipelineMeter`]: the meter beside a pipeline (its outcomes and closed windows in, the
//!   bound, signed document out);
//! - [`Panel`], [`PanelBuilder`], [`Counts`], [`pairwise_sum`]: the panel over one or more
//!   streams, float for float as τ-voice computes it;
//! - [`InteractionDocument`], [`Refusal`], [`receipts_root`]: the wire form and its strict
//!   decoder;
//! - [`sign`], [`verify`], [`SignedInteraction`]: the COSE_Sign1;
//! - [`check_receipts`], [`missing`], [`BindingProblem`]: the binding to the receipts;
//! - [`InteractionError`], [`CoseCode`]: every failure, with a stable code.
//!
//! ```
//! use bytes::Bytes;
//! use jouleclaw_interaction::*;
//! use jouleclaw_stream::{ChannelDirection::*, Tick, TickKind, duplex, interaction};
//!
//! const T: u64 = 200_000_000;
//! let mut meter = InteractionMeter::new(InteractionConfig::default())?;
//! let user = |f: u64| Tick::marker(f, duplex::CONTROL, interaction::marker(interaction::USER_SPEECH), f * T);
//! let agent = |f: u64| Tick::new(f, duplex::TTS, TickKind::Audio, Bytes::from(vec![0u8; 4800]), f * T);
//! for f in 0..3 { meter.observe(&user(f), Inbound)?; }          // the user speaks 600 ms
//! for f in 5..9 { meter.observe(&agent(f), Outbound)?; }        // the agent answers 400 ms later
//! meter.observe(&user(12), Inbound)?;
//! meter.observe(&user(13), Inbound)?;
//! let events = meter.finish()?.to_vec();
//! assert_eq!(events[0].kind, EventKind::Response);
//! assert_eq!(events[0].latency_ticks, Some(2));
//! let panel = Panel::of(meter.config(), &events);
//! assert_eq!(panel.response_rate, Some(1.0));
//! # Ok::<(), InteractionError>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

mod beside;
mod bind;
mod cose;
mod document;
mod error;
mod meter;
mod panel;
pub mod tau_voice;

pub use beside::PipelineMeter;
pub use bind::{
    BINDING_CODES, BindingProblem, check_bound_under_root, check_receipts,
    check_receipts_under_root, missing,
};
pub use cose::{
    INTERACTION_CONTENT_TYPE, MAX_SIGNED_BYTES, SignedInteraction, protected_bytes, sig_structure,
    sign, verify,
};
pub use document::{
    INTERACTION_LIMITS, INTERACTION_SCHEMA, INTERACTION_SCHEMA_CODES, InteractionDocument,
    InteractionKind, MAX_NAME_BYTES, Refusal, YIELD_WITHIN_DEADLINE, count_events, receipts_root,
    within_deadline,
};
pub use error::{CoseCode, InteractionError, Result};
pub use meter::{
    DEADLINE_NS, Event, EventKind, InteractionConfig, InteractionMeter, MAX_EVENTS, MAX_FRAMES,
    MAX_WINDOW_NS,
};
pub use panel::{Counts, Panel, PanelBuilder, pairwise_sum};
