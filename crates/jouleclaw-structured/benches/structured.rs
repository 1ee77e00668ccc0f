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

// A bench binary is not library code: a fixture that cannot be built is a bug in the bench.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use jouleclaw_structured::{Grammar, StructuredValidator};

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

criterion_group!(benches, oracle);
criterion_main!(benches);
