//! The structured-output crate's integration tests in one binary: the JSON Schema profile, the
//! oracle, the properties, the rules, tool sets, traces and the committed fuzz corpus. (The vector
//! generators `vectors.rs` and `vectors_2020.rs`, and `tool_corpus.rs` and `mcp_toolsets.rs`,
//! which the structured suite runs by name, are their own.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../common/mod.rs"]
mod common;
mod fused_steps;
mod fuzz_corpus;
mod json_schema;
mod oracle;
mod properties;
mod rules;
mod toolset;
mod trace;
