//! Runs one of the bench routines N times, for instruction counts that do not depend on the
//! machine's load:
//!
//! ```sh
//! cargo build --release -p jouleclaw-structured --example structured_ir
//! for r in whole bytewise chunks serde none; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/structured_ir $r say 1000 2>&1 | grep 'refs'
//! done
//! ```
//!
//! (Ir of a routine - Ir of `none`) / N is the routine's instructions per document.
//!
//! With `tools` instead of `say`/`short` and `JOULECLAW_TOOL_CORPUS` naming a corpus written by
//! `tests/corpus/tool_models.py`, one run is N passes over the valid compact calls of every
//! schema of it that compiles (the bench's `peers/*/tools` set), and the routines are `whole`
//! (`Grammar::validate`), `chunks` (4-16 byte chunks, as the bench), `jsonschema`
//! (`serde_json::from_slice` + `jsonschema::Validator::is_valid`), `compile`
//! (`Grammar::compile_json_schema` of every schema), `compile_jsonschema`
//! (`jsonschema::validator_for` of every parsed schema) and `none`; every routine compiles both
//! sides once first, so the difference to `none` is the routine's alone. It prints the number
//! of schemas, documents and bytes of one pass. `bfcl` is the same over the corpus
//! `JOULECLAW_BFCL_CORPUS` names (written by `tests/corpus/bfcl_corpus.py`: the bench's
//! `peers/*/bfcl` set). `mcp_docs` is the same over the distinct input schemas of the MCP
//! corpus `JOULECLAW_MCP_TOOLS` names, with generated valid arguments (`benches/common/mcp.rs`:
//! the bench's `peers/*/mcp` set).

// An example binary is not library code: a fixture that cannot be built is a bug here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::sync::Arc;

use jouleclaw_structured::{Grammar, StructuredValidator, Toolset, ToolsetOptions};

const SCHEMA: &str = include_str!("../schemas/tool-call.schema.json");

#[path = "../benches/common/mod.rs"]
mod common;

use common::{corpus_set, push_chunked as chunked};

fn tools(routine: &str, var: &str, n: usize) {
    let path = std::env::var(var).expect(var);
    let mut set = Vec::new();
    let items = if var == "JOULECLAW_MCP_TOOLS" {
        common::mcp::mcp_set(&path)
    } else {
        corpus_set(&path)
    };
    for (text, docs) in items {
        let g = Grammar::compile_json_schema(text.as_bytes()).unwrap();
        let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
        let peer = jsonschema::validator_for(&schema).unwrap();
        set.push((Arc::new(g), peer, docs, text, schema));
    }
    for _ in 0..n {
        if routine == "compile" {
            for (_, _, _, text, _) in &set {
                black_box(Grammar::compile_json_schema(black_box(text.as_bytes())).unwrap());
            }
            continue;
        }
        if routine == "compile_jsonschema" {
            for (_, _, _, _, schema) in &set {
                black_box(jsonschema::validator_for(black_box(schema)).unwrap());
            }
            continue;
        }
        for (g, peer, docs, _, _) in &set {
            for d in docs {
                match routine {
                    "whole" => g.validate(black_box(d)).unwrap(),
                    "chunks" => chunked(g, d),
                    "jsonschema" => {
                        let v: serde_json::Value = serde_json::from_slice(black_box(d)).unwrap();
                        assert!(peer.is_valid(&v));
                    }
                    _ => {}
                }
            }
        }
    }
    let docs = set.iter().map(|(_, _, d, _, _)| d.len()).sum::<usize>();
    let bytes = set
        .iter()
        .flat_map(|(_, _, d, _, _)| d)
        .map(Vec::len)
        .sum::<usize>();
    println!("{} schemas, {docs} documents, {bytes} bytes", set.len());
}

/// `mcp`: the MCP corpus `JOULECLAW_MCP_TOOLS` names (written by `tests/corpus/mcp_tools.mjs`)
/// as one toolset of 50 tools (the filesystem server's, then the other servers' in the
/// corpus's order, a name already taken skipped; renamed copies if the corpus has fewer), and
/// one `edit_file` call of the filesystem server. Routines: `toolset_compile`
/// (`Toolset::compile`), `toolset_route` (the call `{"name":"edit_file","arguments":...}` over
/// the toolset's grammar), `toolset_alone` (its arguments over `edit_file`'s own grammar) and
/// `none`.
fn mcp(routine: &str, n: usize) {
    let path = std::env::var("JOULECLAW_MCP_TOOLS").expect("JOULECLAW_MCP_TOOLS");
    let corpus: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let servers = corpus.as_object().unwrap();
    let fs = "@modelcontextprotocol/server-filesystem";
    let base: Vec<serde_json::Value> = servers[fs]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .chain(
            servers
                .iter()
                .filter(|(k, _)| k.as_str() != fs)
                .flat_map(|(_, v)| v["tools"].as_array().unwrap()),
        )
        .cloned()
        .collect();
    let mut tools: Vec<serde_json::Value> = Vec::new();
    for t in &base {
        if tools.len() < 50 && !tools.iter().any(|u| u["name"] == t["name"]) {
            tools.push(t.clone());
        }
    }
    for i in 0.. {
        if tools.len() >= 50 {
            break;
        }
        let mut t = base[i % base.len()].clone();
        t["name"] = serde_json::json!(format!("{}_copy{i}", t["name"].as_str().unwrap()));
        tools.push(t);
    }
    let text = serde_json::to_vec(&serde_json::json!({ "tools": tools })).unwrap();
    let options = ToolsetOptions::default();
    let set = Toolset::compile(&text, &options).unwrap();
    let routed = Arc::new(set.grammar().clone());
    let edit = base.iter().find(|t| t["name"] == "edit_file").unwrap();
    let schema = serde_json::to_vec(&edit["inputSchema"]).unwrap();
    let alone = Arc::new(Grammar::compile_json_schema(&schema).unwrap());
    let args = br#"{"path":"/tmp/some/file.txt","edits":[{"oldText":"hello world","newText":"goodbye world"},{"oldText":"a","newText":"b"}],"dryRun":false}"#;
    let mut call = br#"{"name":"edit_file","arguments":"#.to_vec();
    call.extend_from_slice(args);
    call.push(b'}');
    routed.validate(&call).unwrap();
    alone.validate(args).unwrap();
    for _ in 0..n {
        match routine {
            "toolset_compile" => {
                black_box(Toolset::compile(black_box(&text), &options).unwrap());
            }
            "toolset_route" => routed.validate(black_box(&call)).unwrap(),
            "toolset_alone" => alone.validate(black_box(args)).unwrap(),
            _ => {}
        }
    }
    println!(
        "{} tools, call {} bytes, arguments {} bytes",
        set.tools().len(),
        call.len(),
        args.len()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (routine, which, n) = (
        args[1].as_str(),
        args[2].as_str(),
        args[3].parse::<usize>().unwrap(),
    );
    if which == "tools" {
        tools(routine, "JOULECLAW_TOOL_CORPUS", n);
        return;
    }
    if which == "bfcl" {
        tools(routine, "JOULECLAW_BFCL_CORPUS", n);
        return;
    }
    if which == "mcp_docs" {
        tools(routine, "JOULECLAW_MCP_TOOLS", n);
        return;
    }
    if which == "mcp" {
        mcp(routine, n);
        return;
    }
    let short =
        br#"{"tool": "get_weather", "args": {"city": "Lisbon", "unit": "celsius", "days": 3}}"#
            .to_vec();
    let text = "It is clear and 24 degrees in Lisbon right now, with a light wind from the north. "
        .repeat(18);
    let say = format!(
        r#"{{"tool":"say","args":{{"text":"{text}","confidence":0.875,"interruptible":true,"tags":["weather","lisbon","today"],"reply_to":null}}}}"#
    )
    .into_bytes();
    let doc = if which == "say" { say } else { short };
    let grammar = Arc::new(Grammar::compile(SCHEMA.as_bytes()).unwrap());
    grammar.validate(&doc).unwrap();
    for _ in 0..n {
        match routine {
            "whole" => {
                let mut v = StructuredValidator::new(Arc::clone(&grammar));
                v.push(black_box(&doc)).unwrap();
                v.finish().unwrap();
                black_box(v.usage());
            }
            "bytewise" => {
                let mut v = StructuredValidator::new(Arc::clone(&grammar));
                for b in black_box(&doc).chunks(1) {
                    v.push(b).unwrap();
                }
                v.finish().unwrap();
                black_box(v.usage());
            }
            "chunks" => chunked(&grammar, &doc),
            "serde" => {
                black_box(serde_json::from_slice::<serde_json::Value>(black_box(&doc)).unwrap());
            }
            _ => {}
        }
    }
    println!("{} bytes", doc.len());
}
