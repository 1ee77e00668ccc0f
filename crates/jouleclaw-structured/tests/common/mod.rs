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
