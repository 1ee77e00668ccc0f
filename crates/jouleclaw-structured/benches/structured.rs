//! Criterion benches of the structured-output validator, beside serde_json parsing the same
//! documents (group `oracle`):
//!
//! - `structured_output_per_byte/whole/<doc>`: compile once, then validate a document pushed
//!   in one chunk and finished;
//! - `structured_output_per_byte/bytewise/<doc>`: the same document pushed one byte at a time;
//! - `serde_json_from_slice/<doc>`: `serde_json::from_slice::<serde_json::Value>` on the same
//!   bytes (syntax only, no schema).
//!
//! Documents: `tool_call` (a short `get_weather` call) and `say` (a `say` call with 1.5 KB of
//! text, tags and a number), both valid for `schemas/tool-call.schema.json`. Throughput is in
//! bytes, so the per-byte ratio is read off one run. Run with
//! `cargo bench -p jouleclaw-structured -- --warm-up-time 1 --measurement-time 3`. Times on a
//! shared machine swing with its load; `examples/structured_ir.rs` runs the same routines for
//! instruction counts under callgrind, which do not.
//!
//! Group `peers` (`benches/README.md`, structured-output section): the same schemas and
//! documents through this grammar and through the `jsonschema` crate:
//!
//! - `structured/chunks_4_16/<set>`: every document streamed in LLM-token-sized chunks
//!   (4 to 16 bytes, cycling), then finished; `structured/whole/<set>`: one chunk;
//! - `jsonschema/parse_validate/<set>`: `serde_json::from_slice` then `Validator::is_valid`;
//!   `jsonschema/validate_parsed/<set>`: `is_valid` on the parsed value only;
//! - `compile/structured/<set>` (`Grammar::compile_json_schema`) and `compile/jsonschema/<set>`
//!   (`jsonschema::validator_for`), per schema.
//!
//! Sets: `tool_call` (the tool-call schema and its two documents); when
//! `JOULECLAW_TOOL_CORPUS` names a corpus written by `tests/corpus/tool_models.py`, `tools`: every
//! schema of it that compiles, with its valid compact calls (Pydantic's `model_dump_json()`);
//! when `JOULECLAW_BFCL_CORPUS` names the corpus `tests/corpus/bfcl_corpus.py` writes, `bfcl`:
//! the same of the Berkeley Function Calling Leaderboard's function schemas and their compact
//! ground-truth calls; when `JOULECLAW_MCP_TOOLS` names the corpus `tests/corpus/mcp_tools.mjs`
//! writes, `mcp`: every distinct input schema of it that compiles, with generated valid
//! arguments (`benches/common/mcp.rs`). Sets with many schemas take 10 samples a function.

// A bench binary is not library code: a fixture that cannot be built is a bug in the bench.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jouleclaw_structured::{Grammar, StructuredValidator};

mod common;

use common::{Item, corpus_set, push_chunked};

const SCHEMA: &str = include_str!("../schemas/tool-call.schema.json");

fn documents() -> Vec<(&'static str, Vec<u8>)> {
    let short =
        br#"{"tool": "get_weather", "args": {"city": "Lisbon", "unit": "celsius", "days": 3}}"#;
    let text = "It is clear and 24 degrees in Lisbon right now, with a light wind from the north. "
        .repeat(18);
    let say = format!(
        r#"{{"tool":"say","args":{{"text":"{text}","confidence":0.875,"interruptible":true,"tags":["weather","lisbon","today"],"reply_to":null}}}}"#
    );
    vec![("tool_call", short.to_vec()), ("say", say.into_bytes())]
}

fn oracle(c: &mut Criterion) {
    let grammar = Arc::new(Grammar::compile(SCHEMA.as_bytes()).unwrap());
    let mut g = c.benchmark_group("oracle");
    for (name, doc) in documents() {
        // Every fixture is checked once before it is measured.
        grammar.validate(&doc).unwrap();
        serde_json::from_slice::<serde_json::Value>(&doc).unwrap();
        g.throughput(Throughput::Bytes(doc.len() as u64));
        g.bench_function(format!("structured_output_per_byte/whole/{name}"), |b| {
            b.iter(|| {
                let mut v = StructuredValidator::new(Arc::clone(&grammar));
                v.push(black_box(&doc)).unwrap();
                v.finish().unwrap();
                black_box(v.usage())
            })
        });
        g.bench_function(format!("structured_output_per_byte/bytewise/{name}"), |b| {
            b.iter(|| {
                let mut v = StructuredValidator::new(Arc::clone(&grammar));
                for byte in black_box(&doc).chunks(1) {
                    v.push(byte).unwrap();
                }
                v.finish().unwrap();
                black_box(v.usage())
            })
        });
        g.bench_function(format!("serde_json_from_slice/{name}"), |b| {
            b.iter(|| {
                black_box(serde_json::from_slice::<serde_json::Value>(black_box(&doc)).unwrap())
            })
        });
    }
    g.finish();
}

/// A compiled schema on both sides, with its documents.
type Compiled<'a> = (Arc<Grammar>, jsonschema::Validator, &'a Vec<Vec<u8>>);

/// (set name, items) per set.
fn peer_sets() -> Vec<(&'static str, Vec<Item>)> {
    let mut sets = vec![(
        "tool_call",
        vec![(
            SCHEMA.to_owned(),
            documents().into_iter().map(|(_, d)| d).collect(),
        )],
    )];
    for (set, var) in [
        ("tools", "JOULECLAW_TOOL_CORPUS"),
        ("bfcl", "JOULECLAW_BFCL_CORPUS"),
    ] {
        if let Ok(path) = std::env::var(var) {
            sets.push((set, corpus_set(&path)));
        }
    }
    if let Ok(path) = std::env::var("JOULECLAW_MCP_TOOLS") {
        sets.push(("mcp", common::mcp::mcp_set(&path)));
    }
    sets
}

/// The slowest single byte: for every byte of every document, the validator at that byte's
/// prefix is cloned 64 times and the byte pushed into each clone; the fastest of those pushes is
/// the byte's cost (a single push is below the clock's resolution for one run, so this reads
/// the clock around each push and keeps the minimum, which load cannot lower). Printed, not
/// asserted.
fn slowest_byte(set: &str, items: &[Item]) {
    let mut worst = (0u128, String::new());
    for (text, docs) in items {
        let grammar = Arc::new(Grammar::compile_json_schema(text.as_bytes()).unwrap());
        for d in docs {
            let mut at = StructuredValidator::new(Arc::clone(&grammar));
            for i in 0..d.len() {
                let mut best = u128::MAX;
                for _ in 0..64 {
                    let mut v = at.clone();
                    let t = std::time::Instant::now();
                    black_box(v.push(black_box(&d[i..=i]))).unwrap();
                    best = best.min(t.elapsed().as_nanos());
                }
                if best > worst.0 {
                    worst = (
                        best,
                        format!(
                            "byte {i} of {:?}",
                            String::from_utf8_lossy(&d[..d.len().min(40)])
                        ),
                    );
                }
                at.push(&d[i..=i]).unwrap();
            }
        }
    }
    eprintln!(
        "peers/{set}: slowest single byte {} ns ({})",
        worst.0, worst.1
    );
}

fn peers(c: &mut Criterion) {
    let mut g = c.benchmark_group("peers");
    for (set, items) in peer_sets() {
        slowest_byte(set, &items);
        g.sample_size(100);
        let compiled: Vec<Compiled<'_>> = items
            .iter()
            .map(|(text, docs)| {
                let grammar = Arc::new(Grammar::compile_json_schema(text.as_bytes()).unwrap());
                let schema: serde_json::Value = serde_json::from_str(text).unwrap();
                let peer = jsonschema::validator_for(&schema).unwrap();
                for d in docs {
                    grammar.validate(d).unwrap();
                    assert!(peer.is_valid(&serde_json::from_slice(d).unwrap()));
                }
                (grammar, peer, docs)
            })
            .collect();
        let bytes: u64 = items
            .iter()
            .flat_map(|(_, d)| d)
            .map(|d| d.len() as u64)
            .sum();
        g.throughput(Throughput::Bytes(bytes));
        g.bench_function(format!("structured/chunks_4_16/{set}"), |b| {
            b.iter(|| {
                for (grammar, _, docs) in &compiled {
                    for d in docs.iter() {
                        push_chunked(grammar, d);
                    }
                }
            })
        });
        g.bench_function(format!("structured/whole/{set}"), |b| {
            b.iter(|| {
                for (grammar, _, docs) in &compiled {
                    for d in docs.iter() {
                        black_box(grammar.validate(black_box(d)).is_ok());
                    }
                }
            })
        });
        g.bench_function(format!("jsonschema/parse_validate/{set}"), |b| {
            b.iter(|| {
                for (_, peer, docs) in &compiled {
                    for d in docs.iter() {
                        let v: serde_json::Value = serde_json::from_slice(black_box(d)).unwrap();
                        black_box(peer.is_valid(&v));
                    }
                }
            })
        });
        let parsed: Vec<Vec<serde_json::Value>> = compiled
            .iter()
            .map(|(_, _, docs)| {
                docs.iter()
                    .map(|d| serde_json::from_slice(d).unwrap())
                    .collect()
            })
            .collect();
        g.bench_function(format!("jsonschema/validate_parsed/{set}"), |b| {
            b.iter(|| {
                for ((_, peer, _), vs) in compiled.iter().zip(&parsed) {
                    for v in vs {
                        black_box(peer.is_valid(black_box(v)));
                    }
                }
            })
        });
        g.throughput(Throughput::Elements(items.len() as u64));
        // Compiling thousands of schemas takes tens of milliseconds an iteration.
        if items.len() > 1000 {
            g.sample_size(10);
        }
        g.bench_function(format!("compile/structured/{set}"), |b| {
            b.iter(|| {
                for (text, _) in &items {
                    black_box(Grammar::compile_json_schema(black_box(text.as_bytes())).unwrap());
                }
            })
        });
        let values: Vec<serde_json::Value> = items
            .iter()
            .map(|(t, _)| serde_json::from_str(t).unwrap())
            .collect();
        g.bench_function(format!("compile/jsonschema/{set}"), |b| {
            b.iter(|| {
                for v in &values {
                    black_box(jsonschema::validator_for(black_box(v)).unwrap());
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, oracle, peers);
criterion_main!(benches);
