//! Verdict wire forms: byte-equal to the seed vectors' verdict objects, and the forms this
//! crate defines for `fail` and `need_more`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jouleclaw_stream::canon::MAX_SAFE_INTEGER;
use jouleclaw_stream_oracle::{OracleError, WindowVerdict};
use jouleclaw_testkit::{or_not_run, repo};
use serde_json::Value;

/// An independent canonical encoder: keys sorted explicitly (never relying on serde_json's map
/// order), no whitespace, strings and integers as serde_json writes them.
fn reference_canon(v: &Value) -> String {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        serde_json::to_string(k).unwrap(),
                        reference_canon(&map[k.as_str()])
                    )
                })
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(reference_canon).collect();
            format!("[{}]", items.join(","))
        }
        Value::Number(n) => {
            assert!(n.is_u64() || n.is_i64(), "integers only");
            n.to_string()
        }
        other => serde_json::to_string(other).unwrap(),
    }
}

fn seed_verdicts() -> Option<Vec<Value>> {
    // The seed's vectors as checked in with the project (jouleclaw-jcr1's conformance tests
    // check that this copy equals the seed's reference file).
    let text = repo::file("conformance/stream-window-vectors.json")?;
    let doc: Value = serde_json::from_str(&text).unwrap();
    let verdicts = doc["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["receipt"]["verdict"].clone())
        .collect();
    Some(verdicts)
}

#[test]
fn pass_and_yield_match_the_seed_vectors_byte_for_byte() {
    let verdicts = or_not_run!(seed_verdicts());
    assert_eq!(verdicts.len(), 3);
    let ours = [
        WindowVerdict::pass_by("always-pass-stream"),
        WindowVerdict::Yield { seen_at: 7 },
        WindowVerdict::pass_by("always-pass-stream"),
    ];
    for (seed, ours) in verdicts.iter().zip(&ours) {
        let expected = reference_canon(seed);
        assert_eq!(
            String::from_utf8(ours.wire_bytes().unwrap()).unwrap(),
            expected
        );
        assert_eq!(seed["kind"].as_str(), Some(ours.kind_str()));
    }
    // The literal forms the spec quotes.
    assert_eq!(
        ours[0].wire_bytes().unwrap(),
        br#"{"chain":["always-pass-stream"],"kind":"pass"}"#
    );
    assert_eq!(
        ours[1].wire_bytes().unwrap(),
        br#"{"kind":"yield","seen_at":7}"#
    );
}

#[test]
fn fail_and_need_more_forms() {
    let fail = WindowVerdict::fail("byte-budget", "too long");
    assert_eq!(
        fail.wire_bytes().unwrap(),
        br#"{"kind":"fail","oracle":"byte-budget","reason":"too long"}"#
    );
    let need = WindowVerdict::need_more("per-turn:json-document", "turn open");
    assert_eq!(
        need.wire_bytes().unwrap(),
        br#"{"kind":"need_more","oracle":"per-turn:json-document","reason":"turn open"}"#
    );
}

#[test]
fn every_form_equals_the_reference_encoding_of_its_json_value() {
    let tricky = "q\"b\\s\n\t\u{1}/\u{7f}\u{2028}é😀";
    let cases = [
        WindowVerdict::Pass { chain: vec![] },
        WindowVerdict::Pass {
            chain: vec!["a".into(), tricky.into(), "c".into()],
        },
        WindowVerdict::Yield { seen_at: 0 },
        WindowVerdict::Yield {
            seen_at: MAX_SAFE_INTEGER,
        },
        WindowVerdict::fail(tricky, tricky),
        WindowVerdict::need_more("", tricky),
    ];
    for v in &cases {
        let value = match v {
            WindowVerdict::Pass { chain } => serde_json::json!({"kind": "pass", "chain": chain}),
            WindowVerdict::Yield { seen_at } => {
                serde_json::json!({"kind": "yield", "seen_at": seen_at})
            }
            WindowVerdict::Fail { oracle, reason } | WindowVerdict::NeedMore { oracle, reason } => {
                serde_json::json!({"kind": v.kind_str(), "oracle": oracle, "reason": reason})
            }
        };
        let bytes = v.wire_bytes().unwrap();
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            reference_canon(&value),
            "{v:?}"
        );
    }
}

#[test]
fn yield_above_the_safe_integer_bound_is_refused_and_writes_nothing() {
    let mut out = b"prefix".to_vec();
    let at_bound = WindowVerdict::Yield {
        seen_at: MAX_SAFE_INTEGER,
    };
    at_bound.write_wire(&mut out).unwrap();
    assert_eq!(
        out,
        b"prefix{\"kind\":\"yield\",\"seen_at\":9007199254740991}"
    );

    let mut out = b"prefix".to_vec();
    for seen_at in [MAX_SAFE_INTEGER + 1, u64::MAX] {
        let err = WindowVerdict::Yield { seen_at }
            .write_wire(&mut out)
            .unwrap_err();
        assert_eq!(err, OracleError::SeenAtUnsafe { seen_at });
        assert_eq!(err.code(), "verdict_seen_at_unsafe");
        assert!(err.to_string().contains(&seen_at.to_string()));
        assert_eq!(out, b"prefix");
        assert!(WindowVerdict::Yield { seen_at }.wire_bytes().is_err());
    }
}

#[test]
fn rank_and_kind_table() {
    let table = [
        (WindowVerdict::pass_by("x"), 0, "pass"),
        (WindowVerdict::need_more("x", "r"), 1, "need_more"),
        (WindowVerdict::Yield { seen_at: 1 }, 2, "yield"),
        (WindowVerdict::fail("x", "r"), 3, "fail"),
    ];
    for (v, rank, kind) in table {
        assert_eq!(v.rank(), rank);
        assert_eq!(v.kind_str(), kind);
        assert_eq!(v.is_pass(), rank == 0);
    }
}
