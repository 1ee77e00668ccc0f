//! The stream oracle's integration tests in one binary: the backends, dominance, the interaction
//! markers and the wire form.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod backends;
mod dominance;
mod interaction_markers;
mod wire;
