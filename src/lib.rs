#![doc = include_str!("../README.md")]
//!
//! This crate, `jouleclaw-stack`, re-exports each member crate under a short name. The
//! `voice` and `replay` features (on by default) bring in the transcriber seam (an HTTP client
//! on tokio and hyper) and the commit-replay oracle; without them the facade compiles no HTTP
//! stack. The `cli` feature (on by default) builds the `jouleclaw` command.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use jouleclaw_jcr1 as jcr1;
#[cfg(feature = "live")]
pub use jouleclaw_live as live;
pub use jouleclaw_pipeline as pipeline;
#[cfg(feature = "registry")]
pub use jouleclaw_registry as registry;
#[cfg(feature = "replay")]
pub use jouleclaw_replay as replay;
pub use jouleclaw_seal as seal;
pub use jouleclaw_store as store;
pub use jouleclaw_stream as stream;
pub use jouleclaw_stream_oracle as oracle;
pub use jouleclaw_structured as structured;
#[cfg(feature = "voice")]
pub use jouleclaw_voice as voice;
