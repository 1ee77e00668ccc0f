//! Runs one of the bench routines N times, for instruction counts that do not depend on the
//! machine's load:
//!
//! ```sh
//! cargo build --release -p jouleclaw-structured --example structured_ir
//! for r in whole bytewise serde none; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/structured_ir $r say 1000 2>&1 | grep 'refs'
//! done
//! ```
//!
//! (Ir of a routine - Ir of `none`) / N is the routine's instructions per document.

// An example binary is not library code: a fixture that cannot be built is a bug here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::sync::Arc;

use jouleclaw_structured::{Grammar, StructuredValidator};

const SCHEMA: &str = include_str!("../schemas/tool-call.schema.json");

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (routine, which, n) = (
        args[1].as_str(),
        args[2].as_str(),
        args[3].parse::<usize>().unwrap(),
    );
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
            "serde" => {
                black_box(serde_json::from_slice::<serde_json::Value>(black_box(&doc)).unwrap());
            }
            _ => {}
        }
    }
    println!("{} bytes", doc.len());
}
