//! `jouleclaw-stack`: one dependency for the whole jouleclaw streaming substrate.
//!
//! Re-exports each member crate under a short name.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub use jouleclaw_stream as stream;
