//! A structural byte and the key quote or the comma and closing brace after it are read in one
//! step; the outcome (refusal, its offset and path, the work counted) is the one the machine
//! gives fed one byte at a time, refusals at the quote included.

use std::sync::Arc;

use jouleclaw_structured::{Grammar, Refusal, RefusalCode, StructuredValidator, Usage};

fn grammar(schema: &str) -> Arc<Grammar> {
    Arc::new(Grammar::compile_json_schema(schema.as_bytes()).unwrap())
}

/// The document pushed in chunks of `size` bytes, then finished: the result and the usage.
fn chunked(g: &Arc<Grammar>, doc: &[u8], size: usize) -> (Result<(), Refusal>, Usage) {
    let mut v = StructuredValidator::new(Arc::clone(g));
    for chunk in doc.chunks(size) {
        if let Err(refusal) = v.push(chunk) {
            return (Err(refusal), v.usage());
        }
    }
    let result = v.finish();
    (result, v.usage())
}

/// Whole, byte by byte and in chunks of 2 and 3 give one outcome; returns it.
fn outcome(schema: &str, doc: &str) -> Result<(), Refusal> {
    let g = grammar(schema);
    let whole = chunked(&g, doc.as_bytes(), doc.len().max(1));
    assert_eq!(g.validate(doc.as_bytes()), whole.0, "{doc}");
    for size in [1, 2, 3] {
        assert_eq!(
            chunked(&g, doc.as_bytes(), size),
            whole,
            "{doc} in chunks of {size}"
        );
    }
    whole.0
}

fn refused(schema: &str, doc: &str) -> (RefusalCode, u64, String) {
    let r = outcome(schema, doc).unwrap_err();
    (r.code, r.offset, r.path)
}

/// An object schema's members: `a` an integer, `b` a boolean or null, `o` an object with a
/// number `p`; the object is completed by `object(more)`.
const MEMBERS: &str = r#""type":"object","properties":{"a":{"type":"integer"},
    "b":{"type":["boolean","null"]},"o":{"type":"object","properties":{"p":{"type":"number"}}}}"#;

fn object(more: &str) -> String {
    format!("{{{MEMBERS}{more}}}")
}

#[test]
fn keys_after_braces_numbers_literals_and_objects_are_read_as_byte_by_byte() {
    let open = object("");
    for doc in [
        r#"{"a":1,"b":true}"#,
        r#"{"b":null,"a":-2}"#,
        r#"{"o":{"p":1.5},"a":3}"#,
        r#"{"o":{"p":1e2}}"#,
        r#"{"o":{},"b":false}"#,
        r#"{"a":1,"x":[1,{"y":2}],"b":null}"#,
    ] {
        assert_eq!(outcome(&open, doc), Ok(()), "{doc}");
    }
}

#[test]
fn a_key_quote_refused_after_a_brace_or_a_comma_is_refused_at_its_own_offset() {
    // Nothing may follow `{`: the quote is refused.
    let closed = r#"{"type":"object","additionalProperties":false}"#;
    assert_eq!(
        refused(closed, r#"{"a":1}"#),
        (RefusalCode::UnknownProperty, 1, String::new())
    );
    let none = r#"{"type":"object","maxProperties":0}"#;
    assert_eq!(
        refused(none, r#"{"a":1}"#),
        (RefusalCode::TooManyProperties, 1, String::new())
    );
    // After a number, a literal and an object: refused at the comma that would exceed it.
    let one = object(r#","maxProperties":1"#);
    for (doc, at) in [
        (r#"{"a":1,"b":true}"#, 6),
        (r#"{"b":true,"a":1}"#, 9),
        (r#"{"o":{"p":2},"a":1}"#, 12),
    ] {
        assert_eq!(
            refused(&one, doc),
            (RefusalCode::TooManyProperties, at, String::new()),
            "{doc}"
        );
    }
    // A required property missing at the closing brace after a number or an object.
    let required = object(r#","required":["b"]"#);
    assert_eq!(
        refused(&required, r#"{"a":1}"#),
        (RefusalCode::MissingProperty, 6, String::new())
    );
    assert_eq!(
        refused(&required, r#"{"o":{"p":1}}"#),
        (RefusalCode::MissingProperty, 12, String::new())
    );
}
