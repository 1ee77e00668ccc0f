//! The structured-output crate's integration tests in one binary: the JSON Schema profile, the
//! oracle, the properties, the rules, tool sets, traces, the committed fuzz corpus, and the
//! generated tool-call corpus (`tool_corpus`) and real MCP servers' tool lists (`mcp_toolsets`),
//! both `#[ignore]`d: the structured suite runs them by name. (The vector generators
//! `vectors.rs` and `vectors_2020.rs` are their own binaries: the vector files they write name
//! them, by path and by `--test` target, in their `_comment`.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../common/mod.rs"]
mod common;
mod fused_steps;
mod fuzz_corpus;
mod json_schema;
#[path = "../../benches/common/mcp.rs"]
mod mcp;
mod mcp_toolsets;
mod oracle;
mod properties;
mod rules;
mod tool_corpus;
mod toolset;
mod trace;
