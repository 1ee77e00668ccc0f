//! Shared helpers for the structured-output tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

pub mod random;
pub mod reference;

use jouleclaw_structured::*;

pub const TOOL_CALL: &str = include_str!("../../schemas/tool-call.schema.json");

pub fn tool_call() -> Arc<Grammar> {
    Arc::new(Grammar::compile(TOOL_CALL.as_bytes()).unwrap())
}

pub fn grammar(schema: &str) -> Arc<Grammar> {
    Arc::new(Grammar::compile(schema.as_bytes()).unwrap_or_else(|e| panic!("{schema}: {e}")))
}

/// Runs `doc` split at `cuts` (ascending offsets), then finishes.
pub fn run_cuts(g: &Arc<Grammar>, doc: &[u8], cuts: &[usize]) -> Result<(), Refusal> {
    let mut v = StructuredValidator::new(Arc::clone(g));
    let mut at = 0;
    for &c in cuts.iter().chain([doc.len()].iter()) {
        v.push(&doc[at..c])?;
        at = c;
    }
    v.finish()
}

/// Whole, every two-way split and byte-wise agree; returns the outcome.
pub fn outcome(g: &Arc<Grammar>, doc: &[u8]) -> Result<(), Refusal> {
    let whole = g.validate(doc);
    for cut in 0..=doc.len() {
        assert_eq!(
            run_cuts(g, doc, &[cut]),
            whole,
            "split at {cut} of {:?}",
            String::from_utf8_lossy(doc)
        );
    }
    let bytewise: Vec<usize> = (1..doc.len()).collect();
    assert_eq!(
        run_cuts(g, doc, &bytewise),
        whole,
        "byte-wise {:?}",
        String::from_utf8_lossy(doc)
    );
    whole
}

/// Asserts `doc` is refused with `code` at `offset` and `path`, in every chunking.
pub fn refused(g: &Arc<Grammar>, doc: &str, code: &str, offset: u64, path: &str) {
    match outcome(g, doc.as_bytes()) {
        Ok(()) => panic!("{doc} was accepted, expected {code}"),
        Err(r) => assert_eq!(
            (r.code.as_str(), r.offset, r.path.as_str()),
            (code, offset, path),
            "{doc}"
        ),
    }
}

/// Asserts `doc` is accepted in every chunking.
pub fn accepted(g: &Arc<Grammar>, doc: &str) {
    if let Err(r) = outcome(g, doc.as_bytes()) {
        panic!("{doc} refused: {r}");
    }
}

/// The agreement rule between the validator and the reference (`spec/STRUCTURED-OUTPUT.md`).
pub fn agree(stream: &Result<(), Refusal>, reference: &reference::RefOutcome) -> bool {
    match (stream, reference) {
        (Ok(()), reference::RefOutcome::Accept) => true,
        (Err(r), reference::RefOutcome::Schema(p)) => {
            r.code.class() == RefusalClass::Schema && r.path == *p
        }
        (Err(r), reference::RefOutcome::Syntax | reference::RefOutcome::Limit) => {
            r.code.class() != RefusalClass::Control
        }
        _ => false,
    }
}

/// The repository's vector file `path` must hold `built` (see `jouleclaw_testkit::check_generated`;
/// nothing is checked in a crate built alone);
/// `test` is the test target that rewrites it under `JOULECLAW_REGEN_VECTORS=1`.
pub fn check_vectors_file(path: &str, built: &str, test: &str) {
    jouleclaw_testkit::check_generated(
        jouleclaw_testkit::or_not_run!(jouleclaw_testkit::repo::path(path)),
        built,
        &format!("the generator in tests/{test}.rs changed"),
    );
}

/// A vector file's document: pretty JSON with a final newline.
pub fn pretty(doc: &serde_json::Value) -> String {
    let mut s = serde_json::to_string_pretty(doc).unwrap();
    s.push('\n');
    s
}

/// The `limits` object of a vector grammar.
pub fn limits_of(l: &serde_json::Value) -> Limits {
    Limits {
        max_document_bytes: l["max_document_bytes"].as_u64().unwrap(),
        max_depth: l["max_depth"].as_u64().unwrap() as u32,
        max_string_chars: l["max_string_chars"].as_u64().unwrap() as u32,
        max_array_items: l["max_array_items"].as_u64().unwrap() as u32,
        max_number_chars: l["max_number_chars"].as_u64().unwrap() as u32,
    }
}

/// A vector case's `chunks_hex`, decoded.
pub fn chunks_of(case: &serde_json::Value) -> Vec<Vec<u8>> {
    case["chunks_hex"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| hex::decode(h.as_str().unwrap()).unwrap())
        .collect()
}

/// The outcome of one validator fed `chunks` in turn and finished.
pub fn chunked_outcome(g: &Arc<Grammar>, chunks: &[Vec<u8>]) -> Result<(), Refusal> {
    let mut v = StructuredValidator::new(Arc::clone(g));
    chunks
        .iter()
        .try_for_each(|ch| v.push(ch))
        .and_then(|()| v.finish())
}

/// Records a vector case's outcome (with the code, class, offset and path of a refusal) in
/// `case`, after checking it is the hand label: `want` (`"accepted"` or the refusal code) and,
/// for a refusal, `want_path`.
pub fn record_outcome(
    case: &mut serde_json::Value,
    got: Result<(), Refusal>,
    (name, want, want_path): (&str, &str, &str),
) {
    match got {
        Ok(()) => {
            assert_eq!(want, "accepted", "{name}");
            case["outcome"] = serde_json::json!("accepted");
        }
        Err(r) => {
            assert_eq!(
                (r.code.as_str(), r.path.as_str()),
                (want, want_path),
                "{name}"
            );
            case["outcome"] = serde_json::json!("refused");
            case["code"] = serde_json::json!(r.code.as_str());
            case["class"] = serde_json::json!(r.code.class().as_str());
            case["offset"] = serde_json::json!(r.offset);
            case["path"] = serde_json::json!(r.path);
        }
    }
}

/// A vector file of the `jouleclaw-structured-vectors/1` format, as it is written.
pub fn vectors_file(
    comment: &str,
    grammars: Vec<serde_json::Value>,
    cases: Vec<serde_json::Value>,
    compile_refusals: Vec<serde_json::Value>,
) -> String {
    pretty(&serde_json::json!({
        "_comment": comment,
        "format": "jouleclaw-structured-vectors/1",
        "grammars": grammars,
        "cases": cases,
        "compile_refusals": compile_refusals,
    }))
}
