//! The live crate's integration tests in one binary: the sinks, the substrate, the message
//! formats, capacity, the signed documents beside a live stream, the journal and the JetStream
//! cluster scenarios (`#[ignore]`d where they need nats-server: `.ci/suites/14-live-cluster.sh`,
//! `40-live-journal.sh` and `41-live-nats-current.sh` run them by module, e.g.
//! `cargo test --release -p jouleclaw-live --test it -- --ignored cluster::`). The tests that
//! read their own process's peak resident size (`decode_batch_memory`, `held_stream_memory`,
//! `read_bound`) stay binaries of their own: another test in the same process would move it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod capacity;
mod cluster;
#[path = "../common/mod.rs"]
mod common;
mod escaped_id_canonical;
mod format;
mod interaction;
mod journal;
mod message_v1;
mod misplaced_steward;
mod sinks;
mod stop_latency;
mod substrate;
