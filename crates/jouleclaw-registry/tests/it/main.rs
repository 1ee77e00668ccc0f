//! The registry crate's integration tests in one binary: the appender and the registry.
//! (`vectors.rs`, the generator of committed vectors, is its own.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod appender;
mod registry;
