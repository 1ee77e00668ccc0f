#![doc = include_str!("../README.md")]
//!
//! This crate, `jouleclaw-stack`, re-exports each member crate under a short name and adds the
//! [`pipeline`] that drives them.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use jouleclaw_jcr1 as jcr1;
pub use jouleclaw_replay as replay;
pub use jouleclaw_stream as stream;
pub use jouleclaw_stream_oracle as oracle;
pub use jouleclaw_voice as voice;
pub mod pipeline;
