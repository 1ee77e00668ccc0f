//! The tool-call corpus generated at test time from real generators (Pydantic v2's
//! `model_json_schema()`, OpenAI's strict function-calling schema from its Python SDK):
//! `tests/corpus/tool_models.py` writes it, `.ci/suites/40-structured.sh` runs this test with
//! `tests/corpus/zod_models.mjs` adds Zod 4's `z.toJSONSchema()` models when npm is there;
//! `JOULECLAW_TOOL_CORPUS=<file> cargo test -p jouleclaw-structured --test it -- --ignored
//! tool_corpus::`.
//! When `JOULECLAW_TOOL_CORPUS_ZOD=1`, the corpus must hold the Zod models.
//!
//! For every schema as generated: it compiles with `Grammar::compile_json_schema`, or is refused
//! with a code the spec lists for that keyword. For every call: the whole-document outcome
//! agrees with Python's `jsonschema` on the same schema; valid calls pass whole, at every split
//! and byte by byte; mutated calls are refused at the first impossible byte and JSON Pointer the
//! generator computed independently.

use std::sync::Arc;

use jouleclaw_structured::*;
use serde_json::Value;

/// Models whose schemas use a 2020-12 constraint the grammar does not implement: refused at
/// compile time with this code and keyword (spec, "The JSON Schema profile"). (`TupleTool`,
/// `tuple[int, int]` as `prefixItems`, compiles since `prefixItems` is built, and `SetTool`,
/// `set[str]` as `uniqueItems: true`, since `uniqueItems` is: their calls are checked against
/// `jsonschema` as every compiled model's.) None is left.
const REFUSED: &[(&str, &str, &str)] = &[];

/// The corpus file that the environment variable `var` names, which `tests/corpus/<script>`
/// wrote.
fn corpus_named_by(var: &str, script: &str) -> Value {
    let path = std::env::var(var)
        .unwrap_or_else(|_| panic!("{var} names the corpus tests/corpus/{script} wrote"));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

#[test]
#[ignore = "needs the generated corpus: JOULECLAW_TOOL_CORPUS (see .ci/suites/40-structured.sh)"]
fn the_generated_tool_corpus_agrees_with_jsonschema_byte_by_byte() {
    let corpus = corpus_named_by("JOULECLAW_TOOL_CORPUS", "tool_models.py");
    let models = corpus["models"].as_array().unwrap();
    let (mut compiled, mut refused) = (0, 0);
    let mut tally = Tally::default();
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
        check_cases(name, &g, m, Splits::Every, &mut tally, &mut failures);
    }
    println!(
        "tool corpus ({}): {} schemas: {compiled} compiled, {refused} refused as listed; \
         {} valid calls accepted, {} mutated calls agree with jsonschema, {} \
         refused at the computed first impossible byte",
        corpus["generators"],
        models.len(),
        tally.valid,
        tally.mutated,
        tally.exact,
    );
    no_failures(&failures);
    assert!(compiled >= 30, "only {compiled} schemas compiled");
    if std::env::var_os("JOULECLAW_TOOL_CORPUS_ZOD").is_some() {
        assert!(
            models.iter().any(|m| m["source"] == "zod"),
            "no Zod models in the corpus"
        );
    }
    assert!(tally.exact > 0 && tally.valid > 0);
}

fn no_failures(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The counts of a corpus run.
#[derive(Default)]
struct Tally {
    /// Valid calls accepted.
    valid: usize,
    /// Other calls (mutated, or a ground truth `jsonschema` refuses) whose outcome agrees.
    mutated: usize,
    /// Of those, refused at the first impossible byte the generator computed (and its path).
    exact: usize,
}

/// How many ways each call is cut besides whole, 4-, 7- and 16-byte chunks.
#[derive(Clone, Copy)]
enum Splits {
    /// Every two-way split and byte by byte (`common::outcome`).
    Every,
    /// Byte by byte only (linear in the call: the large corpus).
    Bytewise,
}

/// Checks every case of corpus model `m` on `g`: the outcome agrees with `jsonschema`'s, every
/// chunking agrees with the whole document, a valid call passes, a mutated call with a computed
/// first impossible byte is refused there (and at its path, for a schema refusal).
fn check_cases(
    name: &str,
    g: &Arc<Grammar>,
    m: &Value,
    splits: Splits,
    tally: &mut Tally,
    failures: &mut Vec<String>,
) {
    for c in m["cases"].as_array().unwrap() {
        let cname = format!("{name}: {}", c["name"].as_str().unwrap());
        let doc = c["doc"].as_str().unwrap().as_bytes();
        let want = c["jsonschema_valid"].as_bool().unwrap();
        let got = match splits {
            Splits::Every => crate::common::outcome(g, doc),
            Splits::Bytewise => {
                let whole = g.validate(doc);
                let cuts: Vec<usize> = (1..doc.len()).collect();
                assert_eq!(
                    crate::common::run_cuts(g, doc, &cuts),
                    whole,
                    "{cname}: byte by byte"
                );
                whole
            }
        };
        for size in [4, 7, 16] {
            let mut v = StructuredValidator::new(Arc::clone(g));
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
            tally.valid += 1;
            continue;
        }
        tally.mutated += 1;
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
            tally.exact += 1;
        }
    }
}

/// The compile refusals the third-party corpus may meet, each a code the spec lists for what
/// its schemas hold (spec/STRUCTURED-OUTPUT.md, "The JSON Schema profile"): BFCL's non-standard
/// `optional` keyword, an `enum` whose members are not of the schema's `type` (`"type":
/// "boolean"` with `["True", "False", "dontcare"]`), and `maxItems` on an array's integer
/// `items` (a keyword of another type, refused by default).
const BFCL_REFUSALS: &[(&str, &str)] = &[
    ("schema_unknown_keyword", "optional"),
    ("schema_invalid_keyword", "enum"),
    ("schema_unsupported_keyword", "maxItems"),
];

/// At least this share of the third-party schemas compiles as written (the bar).
const BFCL_MIN_COMPILED_PERCENT: usize = 95;

#[test]
#[ignore = "needs the BFCL corpus: JOULECLAW_BFCL_CORPUS (see .ci/suites/40-structured.sh)"]
fn third_party_function_schemas_compile_as_written_and_agree_with_jsonschema() {
    let corpus = corpus_named_by("JOULECLAW_BFCL_CORPUS", "bfcl_corpus.py");
    let models = corpus["models"].as_array().unwrap();
    let mut refusals = std::collections::BTreeMap::<(String, String), usize>::new();
    let (mut compiled, mut with_calls, mut ignoring) = (0, 0, 0);
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for m in models {
        let name = m["name"].as_str().unwrap();
        let text = m["schema_text"].as_str().unwrap();
        let g = match Grammar::compile_json_schema(text.as_bytes()) {
            Ok(g) => Arc::new(g),
            Err(e) => {
                let kw = e.keyword().unwrap_or("").to_owned();
                if !BFCL_REFUSALS.contains(&(e.code(), kw.as_str())) {
                    failures.push(format!("{name}: refused, not as listed: {e}"));
                }
                *refusals.entry((e.code().to_owned(), kw)).or_default() += 1;
                // The other choice: keywords ignored as JSON Schema ignores them, which is
                // what `jsonschema` decided the calls with.
                let ignore = CompileOptions {
                    unknown_keywords: UnknownKeywords::Ignore,
                    ..CompileOptions::JSON_SCHEMA
                };
                if let Ok(g) = Grammar::compile_with(text.as_bytes(), &ignore) {
                    ignoring += 1;
                    check_cases(
                        name,
                        &Arc::new(g),
                        m,
                        Splits::Bytewise,
                        &mut tally,
                        &mut failures,
                    );
                }
                continue;
            }
        };
        compiled += 1;
        with_calls += usize::from(!m["cases"].as_array().unwrap().is_empty());
        check_cases(name, &g, m, Splits::Bytewise, &mut tally, &mut failures);
    }
    let n = models.len();
    println!(
        "bfcl corpus ({}): {n} distinct schemas, {compiled} compiled as written ({:.1} %), \
         refused: {refusals:?}, of which {ignoring} compile with UnknownKeywords::Ignore; \
         {with_calls} schemas compiled as written have ground-truth calls; of all compiled: {} \
         valid calls accepted, {} other calls agree with jsonschema, {} of them refused at the \
         computed first impossible byte",
        corpus["generators"],
        100.0 * compiled as f64 / n as f64,
        tally.valid,
        tally.mutated,
        tally.exact,
    );
    no_failures(&failures);
    assert!(n >= 3000, "only {n} schemas in the corpus");
    assert!(
        compiled * 100 >= n * BFCL_MIN_COMPILED_PERCENT,
        "{compiled} of {n} compiled"
    );
    assert!(tally.valid >= 1000 && tally.exact >= 1000);
}
