//! Properties of the structured-output validator (spec/STRUCTURED-OUTPUT.md) on arbitrary bytes,
//! checked by the fuzz target `structured_validate` and by
//! `crates/jouleclaw-structured/tests/it/fuzz_corpus.rs`. The first byte picks a schema of the
//! JSON Schema profile (unions read side by side, patterns, open objects, references), the
//! second a chunk size; the rest is the document. For every input: no panic; the outcome of the
//! whole document, of the chunked feed and of a byte-by-byte feed are equal; so are the usage
//! counters; a refusal's offset is within the document.

/// The schemas a fuzz input picks from with its first byte.
pub const FUZZ_SCHEMAS: &[&str] = &[
    r#"{"type":"object","properties":{"m":{"anyOf":[{"type":"object","properties":{"a":{"type":"integer","maximum":9},"s":{"type":"string","pattern":"^x+$"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"string","maxLength":3}},"required":["b"],"additionalProperties":false}]}}}"#,
    r#"{"anyOf":[{"type":"array","items":{"type":"integer"}},{"type":"array","items":{"type":"string","pattern":"[a-c]"},"maxItems":2},{"type":"null"}]}"#,
    r#"{"type":"string","pattern":"^[A-Z]{2}(-\\d{1,3})?$|^ok"}"#,
    r##"{"$defs":{"N":{"type":"object","properties":{"v":{"type":"integer"},"k":{"type":"array","items":{"$ref":"#/$defs/N"}}},"required":["v"]}},"$ref":"#/$defs/N"}"##,
    r#"{"type":"object","required":["q","r"],"properties":{"q":{"enum":["ab","ac",1,null]},"t":{"type":["string","null"],"pattern":"b"}}}"#,
];

/// The properties above, for one fuzz input; panics on a violation.
pub fn check_structured_validate(data: &[u8]) {
    use std::sync::Arc;
    let [pick, size, doc @ ..] = data else {
        return;
    };
    let schema = FUZZ_SCHEMAS[usize::from(*pick) % FUZZ_SCHEMAS.len()];
    let g = Arc::new(
        jouleclaw_structured::Grammar::compile_json_schema(schema.as_bytes())
            .expect("every fuzz schema compiles"),
    );
    let feed = |chunk: usize| {
        let mut v = jouleclaw_structured::StructuredValidator::new(Arc::clone(&g));
        let mut out = Ok(());
        for c in doc.chunks(chunk) {
            out = v.push(c);
            if out.is_err() {
                break;
            }
        }
        let out = out.and_then(|()| v.finish());
        (out, v.usage())
    };
    let whole = g.validate(doc);
    let (chunked, usage) = feed(usize::from(*size % 17) + 1);
    let (bytewise, usage1) = feed(1);
    assert_eq!(chunked, whole, "chunked");
    assert_eq!(bytewise, whole, "byte by byte");
    assert_eq!(usage, usage1, "usage");
    if let Err(r) = &whole {
        assert!(
            r.offset <= doc.len() as u64,
            "offset {} of {}",
            r.offset,
            doc.len()
        );
    }
}
