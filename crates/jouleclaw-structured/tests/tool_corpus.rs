//! The tool-call corpus generated at test time from real generators (Pydantic v2's
//! `model_json_schema()`, OpenAI's strict function-calling schema from its Python SDK):
//! `tests/corpus/tool_models.py` writes it, `.ci/suites/40-structured.sh` runs this test with
//! `tests/corpus/zod_models.mjs` adds Zod 4's `z.toJSONSchema()` models when npm is there;
//! `JOULECLAW_TOOL_CORPUS=<file> cargo test -p jouleclaw-structured --test tool_corpus -- --ignored`.
//! When `JOULECLAW_TOOL_CORPUS_ZOD=1`, the corpus must hold the Zod models.
//!
//! For every schema as generated: it compiles with `Grammar::compile_json_schema`, or is refused
//! with a code the spec lists for that keyword. For every call: the whole-document outcome
//! agrees with Python's `jsonschema` on the same schema; valid calls pass whole, at every split
//! and byte by byte; mutated calls are refused at the first impossible byte and JSON Pointer the
//! generator computed independently.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use jouleclaw_structured::*;
use serde_json::Value;

/// Models whose schemas use a 2020-12 constraint the grammar does not implement: refused at
/// compile time with this code and keyword (spec, "The JSON Schema profile").
const REFUSED: &[(&str, &str, &str)] = &[
    ("PatternTool", "schema_unsupported_keyword", "pattern"),
    ("SetTool", "schema_unsupported_keyword", "uniqueItems"),
    ("TupleTool", "schema_unsupported_keyword", "prefixItems"),
    // Zod's `z.iso.datetime()` writes a `pattern` beside its `format`.
    ("annotate", "schema_unsupported_keyword", "pattern"),
];

#[test]
#[ignore = "needs the generated corpus: JOULECLAW_TOOL_CORPUS (see .ci/suites/40-structured.sh)"]
fn the_generated_tool_corpus_agrees_with_jsonschema_byte_by_byte() {
    let path = std::env::var("JOULECLAW_TOOL_CORPUS")
        .expect("JOULECLAW_TOOL_CORPUS names the corpus tests/corpus/tool_models.py wrote");
    let corpus: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let models = corpus["models"].as_array().unwrap();
    let (mut compiled, mut refused, mut valid, mut mutated, mut exact) = (0, 0, 0, 0, 0);
    let mut failures = Vec::new();
    for m in models {
        let name = m["name"].as_str().unwrap();
        let base = name.split('/').next().unwrap();
        let text = m["schema_text"].as_str().unwrap();
        let g = match Grammar::compile_json_schema(text.as_bytes()) {
            Ok(g) => Arc::new(g),
            Err(e) => {
                match REFUSED.iter().find(|(b, ..)| *b == base) {
                    Some((_, code, kw)) if (e.code(), e.keyword()) == (*code, Some(*kw)) => {
                        refused += 1
                    }
                    _ => failures.push(format!("{name}: refused: {e}")),
                }
                continue;
            }
        };
        if REFUSED.iter().any(|(b, ..)| *b == base) {
            failures.push(format!("{name}: compiled, expected a refusal"));
        }
        compiled += 1;
        for c in m["cases"].as_array().unwrap() {
            let cname = format!("{name}: {}", c["name"].as_str().unwrap());
            let doc = c["doc"].as_str().unwrap().as_bytes();
            let want = c["jsonschema_valid"].as_bool().unwrap();
            // Token-sized chunks (4-16 bytes), every two-way split and byte-wise agree.
            let got = common::outcome(&g, doc);
            for size in [4, 7, 16] {
                let mut v = StructuredValidator::new(Arc::clone(&g));
                let r = doc
                    .chunks(size)
                    .try_for_each(|ch| v.push(ch))
                    .and_then(|()| v.finish());
                assert_eq!(r, got, "{cname}: chunks of {size}");
            }
            if got.is_ok() != want {
                failures.push(format!("{cname}: grammar {got:?}, jsonschema valid={want}"));
                continue;
            }
            if c["valid"].as_bool() == Some(true) {
                valid += 1;
                continue;
            }
            mutated += 1;
            if let (Err(r), Some(offset)) = (&got, c["offset"].as_u64()) {
                if r.offset != offset {
                    failures.push(format!(
                        "{cname}: refused at {} ({r}), first impossible byte {offset}",
                        r.offset
                    ));
                    continue;
                }
                if r.code.class() == RefusalClass::Schema
                    && let Some(p) = c["path"].as_str()
                    && r.path != p
                {
                    failures.push(format!("{cname}: path {:?}, expected {p:?}", r.path));
                    continue;
                }
                exact += 1;
            }
        }
    }
    println!(
        "tool corpus ({}): {} schemas: {compiled} compiled, {refused} refused as listed; \
         {valid} valid calls accepted, {mutated} mutated calls agree with jsonschema, {exact} \
         refused at the computed first impossible byte",
        corpus["generators"],
        models.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(compiled >= 30, "only {compiled} schemas compiled");
    if std::env::var_os("JOULECLAW_TOOL_CORPUS_ZOD").is_some() {
        assert!(
            models.iter().any(|m| m["source"] == "zod"),
            "no Zod models in the corpus"
        );
    }
    assert!(exact > 0 && valid > 0);
}
