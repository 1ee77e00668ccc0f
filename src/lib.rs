//! `jouleclaw-stack`: one dependency for the whole jouleclaw streaming substrate.
//!
//! Re-exports each member crate under a short name.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use jouleclaw_jcr1 as jcr1;
pub use jouleclaw_replay as replay;
pub use jouleclaw_stream as stream;
pub use jouleclaw_stream_oracle as oracle;
pub use jouleclaw_voice as voice;
pub mod pipeline;
