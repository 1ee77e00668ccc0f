//! The `jouleclaw` command's integration tests in one binary: each file of `tests/` is a
//! module of it, kept at its path (a vector file names its generator by that path), with the
//! shared `support`. The ones that need a server or a model are `#[ignore]`d and run by their
//! suite by module (`cargo test --test it -- --ignored registry::`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../adversarial.rs"]
mod adversarial;
#[path = "../audit_jobs.rs"]
mod audit_jobs;
#[path = "../cli.rs"]
mod cli;
#[path = "../cli_wyoming.rs"]
mod cli_wyoming;
#[path = "../demo.rs"]
mod demo;
#[path = "../interaction_cli.rs"]
mod interaction_cli;
#[path = "../live_cli.rs"]
mod live_cli;
#[path = "../registry.rs"]
mod registry;
#[path = "../report.rs"]
mod report;
#[path = "../stop_latency_cli.rs"]
mod stop_latency_cli;
#[path = "../support/mod.rs"]
mod support;
