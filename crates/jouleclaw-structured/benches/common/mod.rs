//! What the criterion bench (`benches/structured.rs`) and the instruction-count example
//! (`examples/structured_ir.rs`) share: the corpus sets and the chunked feed, so that both
//! measure the same documents the same way.

pub mod mcp;

use std::hint::black_box;
use std::sync::Arc;

use jouleclaw_structured::{Grammar, StructuredValidator};

/// A schema's text and its valid documents.
pub type Item = (String, Vec<Vec<u8>>);

/// LLM-token-sized chunk sizes, cycled.
pub const CHUNKS: [usize; 8] = [4, 7, 11, 16, 5, 13, 8, 9];

/// Every schema of the corpus at `path` (the format of `tests/corpus/tool_models.py` and
/// `tests/corpus/bfcl_corpus.py`) that `Grammar::compile_json_schema` compiles, with its valid
/// compact calls (a schema without any still counts for compile).
pub fn corpus_set(path: &str) -> Vec<Item> {
    let corpus: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut items = Vec::new();
    for m in corpus["models"].as_array().unwrap() {
        let text = m["schema_text"].as_str().unwrap().to_owned();
        if Grammar::compile_json_schema(text.as_bytes()).is_err() {
            continue;
        }
        let docs: Vec<Vec<u8>> = m["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| {
                c["valid"].as_bool() == Some(true)
                    && !c["name"].as_str().unwrap().ends_with("indented")
            })
            .map(|c| c["doc"].as_str().unwrap().as_bytes().to_vec())
            .collect();
        items.push((text, docs));
    }
    items
}

/// `d` pushed in [`CHUNKS`]-sized chunks, then finished (a valid document).
pub fn push_chunked(grammar: &Arc<Grammar>, d: &[u8]) {
    let mut v = StructuredValidator::new(Arc::clone(grammar));
    let mut at = 0;
    let mut k = 0;
    while at < d.len() {
        let end = (at + CHUNKS[k % CHUNKS.len()]).min(d.len());
        v.push(black_box(&d[at..end])).unwrap();
        at = end;
        k += 1;
    }
    v.finish().unwrap();
    black_box(v.usage());
}
