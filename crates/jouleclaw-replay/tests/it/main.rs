//! The replay oracle's integration tests in one binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod adapter;
mod agreement;
mod audit_reference;
mod classification;
mod corpus;
mod events;
mod metrics;
mod oracle;
mod report;
mod rules;
mod validation;
