//! Writes the MCP set the bench measures (`benches/common/mcp.rs`: every distinct input schema
//! of the MCP corpus that compiles, with its generated valid compact arguments) in the corpus
//! shape `tests/corpus/tool_models.py` writes (`{"models": [{"name", "schema_text", "cases":
//! [{"name", "doc", "valid"}]}]}`), so that `benches/llguidance_peer.py` measures llguidance on
//! the same set.
//!
//! ```sh
//! cargo run --release -p jouleclaw-structured --example mcp_corpus -- MCP_TOOLS.json > mcp-corpus.json
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

// Only the MCP set of the shared bench code is used here.
#[allow(dead_code)]
#[path = "../benches/common/mod.rs"]
mod common;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: mcp_corpus MCP_TOOLS.json");
    let models: Vec<serde_json::Value> = common::mcp::mcp_set(&path)
        .into_iter()
        .enumerate()
        .map(|(i, (text, docs))| {
            let cases: Vec<serde_json::Value> = docs
                .iter()
                .enumerate()
                .map(|(k, d)| {
                    serde_json::json!({
                        "name": format!("call {k}"),
                        "doc": String::from_utf8(d.clone()).unwrap(),
                        "valid": true,
                    })
                })
                .collect();
            serde_json::json!({"name": format!("mcp schema {i}"), "schema_text": text, "cases": cases})
        })
        .collect();
    println!("{}", serde_json::json!({ "models": models }));
}
