//! Property tests over random schemas of the subset and random documents: the streaming
//! validator against the whole-document validator, against every chunking, and against the
//! independent reference in `common/reference.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::reference::{self, RefOutcome};
use common::*;
use jouleclaw_structured::*;
use proptest::prelude::*;

use common::random::{MUTANTS, Rng, gen_doc, object_schema, schema};

fn case(seed: u64, mutate: Option<(u64, u8)>) {
    let mut r = Rng(seed | 1);
    let s = schema(&mut r, 0);
    let text = s.to_string();
    let g = Arc::new(Grammar::compile(text.as_bytes()).unwrap_or_else(|e| panic!("{text}: {e}")));
    // The projection compiles to the same grammar.
    assert_eq!(
        Grammar::compile(g.projection()).unwrap().digest(),
        g.digest(),
        "{text}"
    );
    let mut doc = String::new();
    if gen_doc(&mut r, &s, &mut doc).is_none() {
        return;
    }
    let valid = doc.clone().into_bytes();
    let mut bytes = valid.clone();
    if let Some((at, m)) = mutate {
        let i = (at % bytes.len() as u64) as usize;
        bytes[i] = MUTANTS[m as usize % MUTANTS.len()];
    }
    let whole = outcome(&g, &bytes); // whole, every split and byte-wise agree
    let reference = reference::decide(&s, &bytes, &reference::DEFAULT);
    assert!(
        agree(&whole, &reference),
        "schema {text}\ndoc {:?}\nstream {whole:?}\nreference {reference:?}",
        String::from_utf8_lossy(&bytes)
    );
    if bytes == valid {
        assert_eq!(whole, Ok(()), "generated document refused: {text} {doc:?}");
        // Every strict prefix is incomplete.
        let mut v = StructuredValidator::new(Arc::clone(&g));
        for b in &valid {
            assert_eq!(v.status(), Status::Incomplete);
            v.push(&[*b]).unwrap();
        }
        assert_eq!(v.status(), Status::Incomplete);
    } else if whole.is_ok() {
        // A single-byte mutation the validator accepts is a different valid document.
        assert_eq!(reference, RefOutcome::Accept);
    }
}

/// A valid document of one random schema judged against another random schema: JSON text,
/// mostly of the wrong type somewhere, so the refusal path is what is compared.
fn cross_case(seed: u64) -> Option<bool> {
    let mut r = Rng(seed | 1);
    let a = schema(&mut r, 0);
    let b = schema(&mut r, 0);
    let mut doc = String::new();
    gen_doc(&mut r, &a, &mut doc)?;
    let g = Arc::new(Grammar::compile(b.to_string().as_bytes()).unwrap());
    let whole = outcome(&g, doc.as_bytes());
    let reference = reference::decide(&b, doc.as_bytes(), &reference::DEFAULT);
    assert!(
        agree(&whole, &reference),
        "schema {b}\ndoc {doc:?}\nstream {whole:?}\nreference {reference:?}"
    );
    Some(matches!(reference, RefOutcome::Schema(_)))
}

#[test]
fn cross_schema_documents_exercise_schema_refusals() {
    // Not vacuous: most cross-schema documents are refused with a path to compare.
    let mut compared = 0;
    for seed in 0..600u64 {
        if cross_case(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)) == Some(true) {
            compared += 1;
        }
    }
    assert!(compared > 200, "{compared}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn documents_of_another_schema_agree_with_the_reference_on_path(seed in any::<u64>()) {
        cross_case(seed);
    }

    #[test]
    fn random_valid_documents_of_random_schemas_are_accepted_everywhere(seed in any::<u64>()) {
        case(seed, None);
    }

    #[test]
    fn single_byte_mutations_agree_with_the_reference_in_every_chunking(
        seed in any::<u64>(), at in any::<u64>(), m in any::<u8>(),
    ) {
        case(seed, Some((at, m)));
    }
}

#[test]
fn the_reference_can_fail_a_wrong_validator() {
    // The agreement rule is not vacuous: a refusal with another path, or of another class,
    // does not agree.
    let r = Refusal {
        code: RefusalCode::WrongType,
        offset: 0,
        path: "/a".into(),
    };
    assert!(agree(&Err(r.clone()), &RefOutcome::Schema("/a".into())));
    assert!(!agree(&Err(r.clone()), &RefOutcome::Schema("/b".into())));
    assert!(!agree(&Err(r), &RefOutcome::Accept));
    assert!(!agree(&Ok(()), &RefOutcome::Syntax));
    let syn = Refusal {
        code: RefusalCode::Syntax,
        offset: 0,
        path: "/a".into(),
    };
    assert!(!agree(&Err(syn), &RefOutcome::Schema("/a".into())));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn arbitrary_bytes_are_judged_the_same_in_any_chunking(
        prefix in prop_oneof![Just(&br#"{"tool":"say","args":{"text":""#[..]), Just(&b"{"[..]), Just(&b""[..])],
        tail in proptest::collection::vec(any::<u8>(), 0..48),
        cut in any::<usize>(),
    ) {
        let g = tool_call();
        let mut doc = prefix.to_vec();
        doc.extend_from_slice(&tail);
        let whole = g.validate(&doc);
        let c = cut % (doc.len() + 1);
        prop_assert_eq!(run_cuts(&g, &doc, &[c]), whole.clone());
        let bytewise: Vec<usize> = (1..doc.len()).collect();
        prop_assert_eq!(run_cuts(&g, &doc, &bytewise), whole);
    }

    #[test]
    fn arbitrary_schema_text_compiles_or_is_refused_with_a_code(
        s in proptest::collection::vec(prop_oneof![
            Just("{".to_owned()), Just("}".to_owned()), Just(",".to_owned()), Just(":".to_owned()),
            Just("[".to_owned()), Just("]".to_owned()), Just("\"type\"".to_owned()),
            Just("\"object\"".to_owned()), Just("\"string\"".to_owned()), Just("\"oneOf\"".to_owned()),
            Just("\"properties\"".to_owned()), Just("\"additionalProperties\"".to_owned()),
            Just("false".to_owned()), Just("\"items\"".to_owned()), Just("\"enum\"".to_owned()),
            Just("1".to_owned()), Just("\"a\"".to_owned()), Just("\"required\"".to_owned()),
        ], 0..40),
    ) {
        let text = s.concat();
        match Grammar::compile(text.as_bytes()) {
            Ok(g) => {
                // Whatever compiles projects to a schema that compiles to the same digest.
                prop_assert_eq!(Grammar::compile(g.projection()).unwrap().digest(), g.digest());
            }
            Err(e) => prop_assert!(e.code().starts_with("schema_"), "{}", e.code()),
        }
    }
}

/// Two random object schemas tagged by a shared required string constant would be a tagged
/// union (its own rule), not read side by side.
fn could_be_tagged(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    let consts = |s: &serde_json::Value| -> Vec<String> {
        let req = s["required"].as_array().cloned().unwrap_or_default();
        s["properties"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, v)| {
                        req.iter().any(|r| r == *k)
                            && (v.get("const").is_some() || v.get("enum").is_some())
                    })
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default()
    };
    let ca = consts(a);
    consts(b).iter().any(|k| ca.contains(k))
}

/// `anyOf` of two untagged object schemas against each schema alone: accepted exactly when one
/// of them accepts, and refused at the later of their two refusals, with that one's code and
/// path (the first schema's on a tie), in every chunking.
fn side_by_side_case(seed: u64, mutate: Option<(u64, u8)>) -> Option<()> {
    let mut r = Rng(seed | 1);
    let (a, b) = (object_schema(&mut r, 1), object_schema(&mut r, 1));
    if could_be_tagged(&a, &b) {
        return None;
    }
    let union = serde_json::json!({"anyOf": [a, b]}).to_string();
    let compiled = Grammar::compile_json_schema(union.as_bytes());
    if let Err(e) = &compiled
        && e.code() == "schema_unsatisfiable"
    {
        // A part of a branch accepts no value: the profile refuses the union, and that branch
        // alone.
        let alone = |s: &serde_json::Value| {
            Grammar::compile_json_schema(s.to_string().as_bytes())
                .err()
                .map(|e| e.code())
        };
        assert!(
            [alone(&a), alone(&b)].contains(&Some("schema_unsatisfiable")),
            "{union}"
        );
        return None;
    }
    let u = Arc::new(compiled.unwrap_or_else(|e| panic!("{union}: {e}")));
    let (ga, gb) = (
        Arc::new(Grammar::compile_json_schema(a.to_string().as_bytes()).unwrap()),
        Arc::new(Grammar::compile_json_schema(b.to_string().as_bytes()).unwrap()),
    );
    let mut doc = String::new();
    let from = if r.coin() { &a } else { &b };
    gen_doc(&mut r, from, &mut doc)?;
    let mut bytes = doc.into_bytes();
    if let Some((at, m)) = mutate {
        let i = (at % bytes.len() as u64) as usize;
        bytes[i] = MUTANTS[m as usize % MUTANTS.len()];
    }
    let got = outcome(&u, &bytes);
    let want = match (ga.validate(&bytes), gb.validate(&bytes)) {
        (Ok(()), _) | (_, Ok(())) => Ok(()),
        (Err(x), Err(y)) => Err(if y.offset > x.offset { y } else { x }),
    };
    assert_eq!(got, want, "{union}\n{:?}", String::from_utf8_lossy(&bytes));
    Some(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn untagged_object_unions_decide_as_their_branches_do(
        seed in any::<u64>(), at in any::<u64>(), m in any::<u8>(), mutate in any::<bool>(),
    ) {
        side_by_side_case(seed, mutate.then_some((at, m)));
    }
}

#[test]
fn side_by_side_cases_are_not_vacuous() {
    let run = (0..400u64)
        .filter(|&s| {
            side_by_side_case(s.wrapping_mul(0x9e37_79b9_7f4a_7c15), Some((s, 3))).is_some()
        })
        .count();
    // About a third of the random pairs hold a part that accepts no value (`minLength` over
    // `maxLength`, more required properties than `maxProperties`, ...), which the profile
    // refuses at compile time (259 of these 400 run).
    assert!(run > 240, "{run}");
}

/// `pattern` against the `regex` crate's `is_match` on the decoded string (the patterns avoid
/// the classes whose ECMA-262 meaning the profile rewrites), with random JSON escapes, in every
/// chunking (where each refusal falls is pinned by the unit tests of `json_schema.rs`).
fn pattern_case(seed: u64) {
    const PATTERNS: &[&str] = &[
        "^[a-c]{2,4}$",
        "ab|ba",
        "^(x|yz)*$",
        "c[^d]d",
        "^[^a]+b$",
        "é{2}",
    ];
    const CHARS: &[char] = &['a', 'b', 'c', 'd', 'x', 'y', 'z', 'é', '\n'];
    let mut r = Rng(seed | 1);
    let pat = *r.pick(PATTERNS);
    let schema = format!(
        r#"{{"type":"string","pattern":{}}}"#,
        serde_json::json!(pat)
    );
    let g = Arc::new(Grammar::compile_json_schema(schema.as_bytes()).unwrap());
    let text: String = (0..r.below(7)).map(|_| *r.pick(CHARS)).collect();
    let mut doc = String::from("\"");
    for c in text.chars() {
        match c {
            '\n' => doc.push_str("\\n"),
            c if r.below(3) == 0 => doc.push_str(&format!("\\u{:04x}", c as u32)),
            c => doc.push(c),
        }
    }
    doc.push('"');
    let want = regex::Regex::new(pat).unwrap().is_match(&text);
    let got = outcome(&g, doc.as_bytes());
    assert_eq!(got.is_ok(), want, "{pat} {doc}: {got:?}");
    if let Err(e) = got {
        assert_eq!(e.code.as_str(), "pattern_mismatch", "{pat} {doc}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn patterns_agree_with_the_regex_crate_in_every_chunking(seed in any::<u64>()) {
        pattern_case(seed);
    }
}
