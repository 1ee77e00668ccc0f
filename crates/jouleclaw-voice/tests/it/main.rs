//! The voice crate's integration tests in one binary: the pipeline stage, the whisper server client
//! and hostile Wyoming servers. (`voice_turn_vectors.rs`, the generator of committed vectors, and
//! `wyoming_real.rs`, which the Wyoming suite runs by name, are their own.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod pipeline_stage;
mod whisper_server;
mod wyoming_hostile;
