//! Every refusal code with a test and its accepted neighbour; compile-time refusals; the
//! validator's contract (push never accepts, sticky refusals, cancel, usage, expected-next).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::*;
use jouleclaw_structured::*;

const S: &str = r#"{
  "type": "object", "additionalProperties": false, "required": ["name", "n"], "maxProperties": 4,
  "properties": {
    "name": {"type": "string", "minLength": 2, "maxLength": 5},
    "n": {"type": "integer", "minimum": -5, "maximum": 120},
    "kind": {"type": "string", "enum": ["alpha", "alps", "beta"]},
    "x": {"type": "number", "minimum": -1.5, "maximum": 2.5},
    "ok": {"type": "boolean", "const": true},
    "list": {"type": "array", "items": {"type": "integer", "enum": [1, 22, -3]}, "maxItems": 2},
    "none": {"type": "null"}
  }
}"#;

fn s() -> Arc<Grammar> {
    grammar(S)
}

/// Offset of the `k`-th byte after the first occurrence of `needle` in `doc`.
fn at(doc: &str, needle: &str, k: usize) -> u64 {
    (doc.find(needle)
        .unwrap_or_else(|| panic!("{needle} in {doc}"))
        + k) as u64
}

fn refused_bytes(g: &Arc<Grammar>, doc: &[u8], code: &str, offset: u64) {
    let r = outcome(g, doc).unwrap_err();
    assert_eq!((r.code.as_str(), r.offset), (code, offset), "{doc:?}");
}

#[test]
fn syntax_is_refused_at_the_byte_and_its_neighbour_accepted() {
    let d = r#"{"name":"ab","n":1,}"#;
    refused(&s(), d, "syntax", at(d, ",}", 1), "");
    accepted(&s(), r#"{"name":"ab","n":1}"#);
    let d = r#"{"name":"ab","n":01}"#;
    refused(&s(), d, "syntax", at(d, "01", 1), "/n");
    accepted(&s(), r#" { "name" : "ab" , "n" : 0 } "#);
}

#[test]
fn invalid_utf8_is_refused_and_valid_utf8_accepted() {
    refused_bytes(&s(), b"{\"name\":\"a\xff\",\"n\":1}", "invalid_utf8", 10);
    refused_bytes(
        &s(),
        b"{\"name\":\"a\xed\xa0\x80\",\"n\":1}",
        "invalid_utf8",
        11,
    );
    refused_bytes(
        &s(),
        b"{\"name\":\"a\xc0\xaf\",\"n\":1}",
        "invalid_utf8",
        10,
    );
    accepted(&s(), "{\"name\":\"a\u{e9}\u{1f600}\",\"n\":1}");
}

#[test]
fn raw_control_characters_are_refused_and_escaped_ones_accepted() {
    let d = "{\"name\":\"a\tb\",\"n\":1}";
    refused(&s(), d, "control_character", 10, "/name");
    accepted(&s(), r#"{"name":"a\tb","n":1}"#);
}

#[test]
fn invalid_escapes_are_refused_and_valid_ones_accepted() {
    let d = r#"{"name":"a\qb","n":1}"#;
    refused(&s(), d, "invalid_escape", at(d, "q", 0), "/name");
    let d = r#"{"name":"a\u00g1","n":1}"#;
    refused(&s(), d, "invalid_escape", at(d, "g", 0), "/name");
    accepted(&s(), r#"{"name":"a\u00E9\/\"","n":1}"#);
}

#[test]
fn lone_surrogates_are_refused_and_pairs_accepted_as_one_character() {
    let d = r#"{"name":"\ud800x","n":1}"#;
    refused(&s(), d, "lone_surrogate", at(d, "x", 0), "/name");
    let d = r#"{"name":"\udc00x","n":1}"#;
    refused(&s(), d, "lone_surrogate", at(d, "0x", 0), "/name");
    let d = r#"{"name":"\ud83d\u0041","n":1}"#;
    refused(&s(), d, "lone_surrogate", at(d, "0041", 3), "/name");
    // One pair is one character: 5 of them fit maxLength 5.
    accepted(
        &s(),
        r#"{"name":"\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00","n":1}"#,
    );
}

#[test]
fn trailing_bytes_are_refused_and_trailing_whitespace_accepted() {
    let d = r#"{"name":"ab","n":1} x"#;
    refused(&s(), d, "trailing_bytes", at(d, "x", 0), "");
    let d = r#"{"name":"ab","n":1}{}"#;
    refused(&s(), d, "trailing_bytes", at(d, "}{", 1), "");
    accepted(&s(), "{\"name\":\"ab\",\"n\":1} \r\n\t");
}

#[test]
fn truncated_and_empty_documents_are_refused_at_finish() {
    let d = r#"{"name":"ab","n":1"#;
    refused(&s(), d, "truncated", d.len() as u64, "/n");
    refused(&s(), "  ", "empty_document", 2, "");
    refused(&s(), "", "empty_document", 0, "");
    let g = grammar(r#"{"type":"integer","maximum":50}"#);
    accepted(&g, "42");
    refused(&g, "-", "truncated", 1, "");
    refused(&g, "51", "above_maximum", 1, "");
}

#[test]
fn the_document_limit_is_exact() {
    let doc = r#"{"name":"ab","n":1}"#;
    let limits = Limits {
        max_document_bytes: doc.len() as u64,
        ..Limits::DEFAULT
    };
    let g = Arc::new(Grammar::compile_with_limits(S.as_bytes(), limits).unwrap());
    accepted(&g, doc);
    refused(
        &g,
        &format!("{doc} "),
        "document_too_large",
        doc.len() as u64,
        "",
    );
    refused(
        &g,
        &format!(" {doc}"),
        "document_too_large",
        doc.len() as u64,
        "/n",
    );
}

#[test]
fn number_tokens_are_bounded_by_max_number_chars() {
    let limits = Limits {
        max_number_chars: 8,
        ..Limits::DEFAULT
    };
    let g = Arc::new(Grammar::compile_with_limits(S.as_bytes(), limits).unwrap());
    accepted(&g, r#"{"name":"ab","n":1,"x":1.250000}"#);
    let d = r#"{"name":"ab","n":1,"x":1.2500000}"#;
    refused(&g, d, "number_too_long", at(d, "1.25", 8), "/x");
}

#[test]
fn wrong_types_are_refused_at_their_first_character() {
    let d = r#"{"name":"ab","n":"1"}"#;
    refused(&s(), d, "wrong_type", at(d, "\"1", 0), "/n");
    let d = r#"{"name":"ab","n":1.0}"#;
    refused(&s(), d, "wrong_type", at(d, ".", 0), "/n");
    let d = r#"{"name":"ab","n":1e2}"#;
    refused(&s(), d, "wrong_type", at(d, "e2", 0), "/n");
    let d = r#"{"name":["ab"],"n":1}"#;
    refused(&s(), d, "wrong_type", at(d, "[", 0), "/name");
    let d = r#"{"name":"ab","n":1,"none":false}"#;
    refused(&s(), d, "wrong_type", at(d, "false", 0), "/none");
    refused(&s(), "[]", "wrong_type", 0, "");
    accepted(&s(), r#"{"name":"ab","n":-0,"none":null,"x":-1.5e0}"#);
}

#[test]
fn unknown_properties_are_refused_as_soon_as_no_declared_key_matches() {
    let d = r#"{"zz":1}"#;
    refused(&s(), d, "unknown_property", 2, "");
    let d = r#"{"name":"ab","nx":1}"#;
    refused(&s(), d, "unknown_property", at(d, "x", 0), "");
    let d = r#"{"n":1,"nam":"ab"}"#;
    refused(&s(), d, "unknown_property", at(d, "nam\"", 3), "");
    // A key that can only continue into a present property or an undeclared name is refused
    // at that byte as unknown: nothing repeats (it was `duplicate_property`).
    let d = r#"{"name":"ab","nam":1}"#;
    refused(&s(), d, "unknown_property", at(d, "am\":1", 0), "");
    let d = r#"{"name":"ab","n":1,"list":[1],"kind":"beta","ok":true}"#;
    refused(&s(), d, "too_many_properties", at(d, ",\"ok", 0), "");
    // Escaped keys are decoded before matching.
    accepted(&s(), r#"{"\u006eame":"ab","n":1}"#);
    let g = grammar(
        r#"{"type":"object","additionalProperties":false,"properties":{"a":{"type":"null"}}}"#,
    );
    refused(&g, r#"{"a":null,"b":1}"#, "unknown_property", 9, "");
    accepted(&g, r#"{"a":null}"#);
}

#[test]
fn duplicate_properties_are_refused_and_distinct_ones_accepted() {
    // A repeat is `duplicate_property` when the whole key is read (another declared name,
    // `name`, shares its text up to the closing quote).
    let d = r#"{"n":1,"n":2,"name":"ab"}"#;
    refused(&s(), d, "duplicate_property", at(d, "n\":2", 1), "");
    accepted(&s(), r#"{"n":1,"name":"ab"}"#);
    // Refused before its end, at the byte that leaves every absent declared name: there the
    // key may still become an undeclared one, so it is `unknown_property` (the object allows
    // no property with that prefix), at the same byte as before.
    let d = r#"{"name":"ab","name":"cd","n":1}"#;
    refused(&s(), d, "unknown_property", at(d, "e\":\"cd", 0) - 2, "");
}

/// A closed object: an undeclared key whose first byte matches a present key is refused as
/// `unknown_property` at that byte (no absent declared name starts with it); it was refused as
/// `duplicate_property` although nothing repeats (BFCL's bank.calculate_balance call with
/// `"type"` after `"transactions"`). An open object takes it; a real repeat stays a duplicate.
#[test]
fn an_undeclared_key_sharing_a_present_keys_first_byte_is_no_duplicate() {
    let closed = grammar(
        r#"{"type":"object","additionalProperties":false,"required":["account"],"properties":{
            "account":{"type":"string"},"transactions":{"type":"array","items":{"type":"integer"}},"starting_balance":{"type":"number"}}}"#,
    );
    let d = r#"{"account":"x","transactions":[],"type":"credit"}"#;
    refused(&closed, d, "unknown_property", at(d, "type", 0), "");
    let d = r#"{"account":"x","transactions":[],"transactions":[]}"#;
    refused(
        &closed,
        d,
        "unknown_property",
        at(d, "transactions\":[]}", 0),
        "",
    );
    accepted(
        &closed,
        r#"{"account":"x","transactions":[],"starting_balance":0.0}"#,
    );
    // With a longer name still absent, the key is read to its end: a repeat is a duplicate.
    let two = grammar(
        r#"{"type":"object","additionalProperties":false,"properties":{
            "transactions":{"type":"array","items":{"type":"integer"}},"transactions_total":{"type":"integer"}}}"#,
    );
    let d = r#"{"transactions":[],"transactions":[]}"#;
    refused(&two, d, "duplicate_property", at(d, "\":[]}", 0), "");
    let d = r#"{"transactions":[],"type":1}"#;
    refused(&two, d, "unknown_property", at(d, "ype", 0), "");
    accepted(&two, r#"{"transactions":[],"transactions_total":0}"#);
    // The BFCL schema as written (open): the call is accepted; a repeat is still refused.
    let open = Arc::new(
        Grammar::compile_json_schema(
            br#"{"type":"object","required":["account"],"properties":{"account":{"type":"string"},
            "transactions":{"type":"array","items":{"type":"object","properties":{
            "amount":{"type":"number"},"type":{"type":"string","enum":["credit","debit"]}}}},
            "starting_balance":{"type":"number"}}}"#,
        )
        .unwrap(),
    );
    accepted(
        &open,
        r#"{"account":"00125648","transactions":[],"type":"credit","starting_balance":0.0}"#,
    );
    let d = r#"{"account":"x","transactions":[],"transactions":[]}"#;
    refused(&open, d, "duplicate_property", at(d, "\":[]}", 0), "");
}

#[test]
fn missing_required_properties_are_refused_at_the_closing_brace() {
    let d = r#"{"name":"ab"}"#;
    refused(&s(), d, "missing_property", 12, "");
    let d = r#"{"name":"ab","n":1,"list":[{}]}"#;
    refused(&s(), d, "wrong_type", at(d, "{}", 0), "/list/0");
    accepted(&s(), r#"{"name":"ab","n":1}"#);
}

#[test]
fn too_many_properties_is_refused_at_the_comma_that_would_exceed_it() {
    let d = r#"{"name":"ab","n":1,"kind":"beta","ok":true,"none":null}"#;
    refused(&s(), d, "too_many_properties", at(d, ",\"none", 0), "");
    accepted(&s(), r#"{"name":"ab","n":1,"kind":"beta","ok":true}"#);
}

#[test]
fn one_of_needs_its_tag_first_and_a_known_tag_value() {
    let g = tool_call();
    let d = r#"{"args":{"text":"hi"},"tool":"say"}"#;
    refused(&g, d, "tag_not_first", 2, "");
    // The tag's key read as one run of plain bytes refuses where byte by byte does (every
    // split is compared): past its end, before it, and at a byte that leaves it.
    let d = r#"{"toolx":"say","args":{"text":"hi"}}"#;
    refused(&g, d, "tag_not_first", at(d, "x", 0), "");
    let d = r#"{"to":"say","args":{"text":"hi"}}"#;
    refused(&g, d, "tag_not_first", at(d, "\":", 0), "");
    let d = r#"{"tXol":"say","args":{"text":"hi"}}"#;
    refused(&g, d, "tag_not_first", 3, "");
    // Its work is the same whole and byte by byte (one unit per tag byte compared).
    let call = br#"{"tool":"say","args":{"text":"hi"}}"#;
    let mut whole = StructuredValidator::new(Arc::clone(&g));
    whole.push(call).unwrap();
    let mut bytewise = StructuredValidator::new(Arc::clone(&g));
    for b in call {
        bytewise.push(&[*b]).unwrap();
    }
    assert_eq!(whole.usage(), bytewise.usage());
    let d = r#"{"tool":"sax","args":{"text":"hi"}}"#;
    refused(&g, d, "unknown_tag", at(d, "x", 0), "/tool");
    let d = r#"{"tool":"say"}"#;
    refused(&g, d, "missing_property", at(d, "}", 0), "");
    refused(&g, "{}", "missing_property", 1, "");
    let d = r#"{"tool":7}"#;
    refused(&g, d, "wrong_type", at(d, "7", 0), "/tool");
    accepted(&g, r#"{"tool":"say","args":{"text":"hi"}}"#);
    accepted(
        &g,
        r#"{"tool":"set_timer","args":{"seconds":60,"label":"tea"}}"#,
    );
    // After the tag, the branch's own rules apply.
    let d = r#"{"tool":"set_timer","args":{"text":"hi"}}"#;
    refused(&g, d, "unknown_property", at(d, "text", 0), "/args");
}

#[test]
fn enum_values_are_refused_as_soon_as_no_member_matches() {
    let d = r#"{"name":"ab","n":1,"kind":"alpx"}"#;
    refused(&s(), d, "value_not_allowed", at(d, "x", 0), "/kind");
    let d = r#"{"name":"ab","n":1,"kind":"alp"}"#;
    refused(&s(), d, "value_not_allowed", at(d, "alp\"", 3), "/kind");
    let d = r#"{"name":"ab","n":1,"ok":false}"#;
    refused(&s(), d, "value_not_allowed", at(d, "false", 0), "/ok");
    let d = r#"{"name":"ab","n":1,"list":[3]}"#;
    refused(&s(), d, "value_not_allowed", at(d, "3", 0), "/list/0");
    let d = r#"{"name":"ab","n":1,"list":[2]}"#;
    refused(&s(), d, "value_not_allowed", at(d, "2]", 1), "/list/0");
    let d = r#"{"name":"ab","n":1,"list":[-1]}"#;
    refused(&s(), d, "value_not_allowed", at(d, "-1", 1), "/list/0");
    accepted(&s(), r#"{"name":"ab","n":1,"kind":"alps","list":[22,-3]}"#);
    accepted(&s(), r#"{"name":"ab","n":1,"kind":"\u0061lpha"}"#);
}

#[test]
fn string_lengths_count_characters_and_refuse_at_the_exceeding_one() {
    let d = r#"{"name":"a","n":1}"#;
    refused(&s(), d, "string_too_short", at(d, "a\"", 1), "/name");
    let d = r#"{"name":"abcdef","n":1}"#;
    refused(&s(), d, "string_too_long", at(d, "f", 0), "/name");
    let d = r#"{"name":"abcde\u00e9","n":1}"#;
    refused(&s(), d, "string_too_long", at(d, "\\u", 0), "/name");
    let d = "{\"name\":\"abcd\u{e9}\u{e9}\",\"n\":1}";
    refused(
        &s(),
        d,
        "string_too_long",
        at(d, "\u{e9}\u{e9}", 2),
        "/name",
    );
    accepted(&s(), "{\"name\":\"abc\u{e9}\u{1f600}\",\"n\":1}");
    accepted(&s(), r#"{"name":"abcd\u00e9","n":1}"#);
}

#[test]
fn integer_bounds_refuse_at_the_first_digit_no_completion_can_satisfy() {
    let d = r#"{"name":"ab","n":121}"#;
    refused(&s(), d, "above_maximum", at(d, "121", 2), "/n");
    let d = r#"{"name":"ab","n":-6}"#;
    refused(&s(), d, "below_minimum", at(d, "6", 0), "/n");
    let d = r#"{"name":"ab","n":99999999999999999999}"#;
    refused(&s(), d, "above_maximum", at(d, "999", 2), "/n");
    accepted(&s(), r#"{"name":"ab","n":120}"#);
    accepted(&s(), r#"{"name":"ab","n":-5}"#);
    // Without bounds, integers are exact within +-(2^53-1).
    let g = grammar(r#"{"type":"integer"}"#);
    accepted(&g, "9007199254740991");
    accepted(&g, "-9007199254740991");
    refused(&g, "9007199254740992", "above_maximum", 15, "");
    refused(&g, "-9007199254740992", "below_minimum", 16, "");
    let g = grammar(r#"{"type":"integer","minimum":3}"#);
    refused(&g, "-0", "below_minimum", 0, "");
    accepted(&g, "30");
    refused(&g, "2", "below_minimum", 1, "");
}

#[test]
fn number_bounds_are_exact_decimals_decided_when_the_number_ends() {
    let d = r#"{"name":"ab","n":1,"x":2.5000000000000000001}"#;
    refused(&s(), d, "above_maximum", at(d, "}", 0), "/x");
    let d = r#"{"name":"ab","n":1,"x":-15e-1}"#;
    accepted(&s(), d);
    let d = r#"{"name":"ab","n":1,"x":-1.5000000000000000001}"#;
    refused(&s(), d, "below_minimum", at(d, "}", 0), "/x");
    accepted(&s(), r#"{"name":"ab","n":1,"x":2.5}"#);
    accepted(&s(), r#"{"name":"ab","n":1,"x":0.25E1}"#);
}

#[test]
fn too_many_items_is_refused_at_the_comma_that_would_exceed_max_items() {
    let d = r#"{"name":"ab","n":1,"list":[1,22,1]}"#;
    refused(&s(), d, "too_many_items", at(d, ",1]", 0), "/list");
    accepted(&s(), r#"{"name":"ab","n":1,"list":[1,22]}"#);
    let g = grammar(r#"{"type":"array","items":{"type":"null"},"maxItems":0}"#);
    accepted(&g, "[ ]");
    refused(&g, "[null]", "too_many_items", 1, "");
}

#[test]
fn cancel_refuses_an_open_stream_and_changes_nothing_after_acceptance() {
    let g = s();
    let mut v = StructuredValidator::new(Arc::clone(&g));
    v.push(br#"{"name":"ab""#).unwrap();
    v.cancel("barge-in");
    let r = v.finish().unwrap_err();
    assert_eq!((r.code, r.offset), (RefusalCode::Cancelled, 12));
    assert_eq!(v.cancel_reason(), Some("barge-in"));
    // Sticky: more bytes, another cancel, finish: the same refusal.
    assert_eq!(v.push(br#","n":1}"#).unwrap_err(), r);
    v.cancel("again");
    assert_eq!(v.cancel_reason(), Some("barge-in"));
    assert_eq!(v.status(), Status::Refused(r));

    let mut v = StructuredValidator::new(g);
    v.push(br#"{"name":"ab","n":1}"#).unwrap();
    v.finish().unwrap();
    v.cancel("too late");
    assert_eq!(v.status(), Status::Accepted);
    assert_eq!(v.cancel_reason(), None);
}

#[test]
fn a_push_after_acceptance_is_refused_and_the_acceptance_stands() {
    let mut v = StructuredValidator::new(s());
    v.push(br#"{"name":"ab","n":1}"#).unwrap();
    v.finish().unwrap();
    let r = v.push(b" ").unwrap_err();
    assert_eq!(r.code, RefusalCode::AfterFinish);
    assert_eq!(v.status(), Status::Accepted);
    assert_eq!(v.finish(), Ok(()));
    // Its neighbour: before finish, the same byte is fine.
    let mut v = StructuredValidator::new(s());
    v.push(br#"{"name":"ab","n":1}"#).unwrap();
    assert_eq!(v.push(b" "), Ok(()));
}

#[test]
fn push_never_accepts_and_every_strict_prefix_is_incomplete() {
    let doc = br#"{"name":"ab","n":12,"x":0.5,"list":[1,-3]}"#;
    let g = s();
    let mut v = StructuredValidator::new(Arc::clone(&g));
    for (i, b) in doc.iter().enumerate() {
        assert_eq!(v.status(), Status::Incomplete, "before byte {i}");
        v.push(&[*b]).unwrap();
        if i + 1 < doc.len() {
            let mut early = v.clone();
            assert!(
                early.finish().is_err(),
                "prefix of {} bytes finished",
                i + 1
            );
        }
    }
    assert_eq!(v.status(), Status::Incomplete);
    v.finish().unwrap();
    assert_eq!(v.status(), Status::Accepted);
}

#[test]
fn refusals_are_sticky() {
    let mut v = StructuredValidator::new(s());
    let r = v.push(br#"{"zz""#).unwrap_err();
    assert_eq!(r.code, RefusalCode::UnknownProperty);
    assert_eq!(v.push(b"").unwrap_err(), r);
    assert_eq!(v.push(br#":1}"#).unwrap_err(), r);
    assert_eq!(v.finish().unwrap_err(), r);
    assert_eq!(v.usage().bytes, 2);
}

#[test]
fn usage_counts_bytes_and_candidate_comparisons() {
    let g = s();
    let mut v = StructuredValidator::new(Arc::clone(&g));
    let doc = br#"{"name":"ab","n":1}"#;
    v.push(doc).unwrap();
    let u = v.usage();
    assert_eq!(u.bytes, doc.len() as u64);
    // Key bytes are compared against the declared names: more work than bytes.
    assert!(u.work > u.bytes, "{u:?}");
    let plain = grammar(r#"{"type":"string"}"#);
    let mut v = StructuredValidator::new(plain);
    v.push(b"\"abcdef\"").unwrap();
    assert_eq!(v.usage(), Usage { bytes: 8, work: 8 });
}

#[test]
fn expected_next_is_the_set_of_bytes_push_would_take() {
    let g = tool_call();
    let mut v = StructuredValidator::new(Arc::clone(&g));
    v.push(br#"{"tool":""#).unwrap();
    let e = v.expected_next();
    let allowed: Vec<u8> = e.iter().collect();
    assert_eq!(
        allowed,
        b"\\gs".to_vec(),
        "{:?}",
        String::from_utf8_lossy(&allowed)
    );
    assert!(!e.can_finish());
    // The set is exact: every allowed byte is taken, every other refused.
    for b in 0..=255u8 {
        assert_eq!(v.clone().push(&[b]).is_ok(), e.allows(b), "{b}");
    }
    assert_eq!(
        v.usage().bytes,
        9,
        "expected_next leaves the validator as it was"
    );
    v.push(br#"say","args":{"text":"hi"}}"#).unwrap();
    let e = v.expected_next();
    assert!(e.can_finish());
    assert_eq!(e.iter().collect::<Vec<_>>(), b"\t\n\r ".to_vec());
    v.finish().unwrap();
    assert_eq!(v.expected_next().count(), 0);
}

#[test]
fn every_refusal_code_is_exercised_by_this_file() {
    let src = concat!(include_str!("rules.rs"), include_str!("json_schema.rs"));
    for c in RefusalCode::ALL {
        let quoted = format!("\"{}\"", c.as_str());
        let variant = format!("RefusalCode::{c:?}");
        assert!(
            src.contains(&quoted) || src.contains(&variant),
            "{} has no test",
            c.as_str()
        );
        assert_eq!(RefusalCode::from_str_code(c.as_str()), Some(*c));
    }
}

// ---------------------------------------------------------------------------------------------
// Compile time
// ---------------------------------------------------------------------------------------------

fn compile_err(schema: &str) -> StructuredError {
    Grammar::compile(schema.as_bytes()).map(|_| ()).unwrap_err()
}

#[test]
fn unsupported_keywords_are_refused_at_compile_time_naming_the_keyword() {
    for (schema, keyword) in [
        (r#"{"type":"string","pattern":"^a"}"#, "pattern"),
        (r#"{"type":"string","format":"email"}"#, "format"),
        (r#"{"type":"integer","maxLength":3}"#, "maxLength"),
        (
            r#"{"type":"array","items":{"type":"null"},"minItems":1}"#,
            "minItems",
        ),
        (
            r#"{"type":"object","additionalProperties":false,"patternProperties":{}}"#,
            "patternProperties",
        ),
        (
            r##"{"$ref":"#/$defs/a","$defs":{"a":{"type":"null"}}}"##,
            "$defs",
        ),
        (
            r#"{"type":"number","exclusiveMinimum":0}"#,
            "exclusiveMinimum",
        ),
        (r#"{"type":"number","enum":[1.5]}"#, "enum"),
        (r#"{"type":"null","default":null}"#, "default"),
        (
            r#"{"type":"array","items":{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"null"}}"#,
            "$schema",
        ),
        (
            r#"{"oneOf":[{"type":"object","additionalProperties":false}],"properties":{}}"#,
            "properties",
        ),
    ] {
        let e = compile_err(schema);
        assert_eq!(
            (e.code(), e.keyword()),
            ("schema_unsupported_keyword", Some(keyword)),
            "{schema}"
        );
    }
    // The neighbours, inside the subset, compile.
    for schema in [
        r#"{"type":"string","maxLength":3,"title":"t","description":"d"}"#,
        r#"{"type":"integer","maximum":3}"#,
        r#"{"type":"array","items":{"type":"null"},"maxItems":1}"#,
        r#"{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"null"}"#,
    ] {
        Grammar::compile(schema.as_bytes()).unwrap();
    }
}

#[test]
fn the_unsupported_keyword_named_does_not_depend_on_key_order() {
    let a = compile_err(r#"{"type":"string","pattern":"x","format":"y"}"#);
    let b = compile_err(r#"{"format":"y","pattern":"x","type":"string"}"#);
    assert_eq!(a, b);
    assert_eq!(a.keyword(), Some("format"));
}

#[test]
fn invalid_and_missing_keywords_are_refused_with_their_codes() {
    for (schema, code, keyword) in [
        (
            r#"{"type":"object","additionalProperties":true}"#,
            "schema_invalid_keyword",
            "additionalProperties",
        ),
        (
            r#"{"type":"object"}"#,
            "schema_missing_keyword",
            "additionalProperties",
        ),
        (r#"{"type":"array"}"#, "schema_missing_keyword", "items"),
        (r#"{"maxLength":3}"#, "schema_missing_keyword", "type"),
        (
            r#"{"type":["string","null"]}"#,
            "schema_invalid_keyword",
            "type",
        ),
        (r#"{"type":"text"}"#, "schema_invalid_keyword", "type"),
        (
            r#"{"type":"string","maxLength":-1}"#,
            "schema_invalid_keyword",
            "maxLength",
        ),
        (
            r#"{"type":"string","enum":["a","a"]}"#,
            "schema_invalid_keyword",
            "enum",
        ),
        (
            r#"{"type":"string","enum":[]}"#,
            "schema_invalid_keyword",
            "enum",
        ),
        (
            r#"{"type":"string","const":1}"#,
            "schema_invalid_keyword",
            "const",
        ),
        (
            r#"{"type":"integer","minimum":1.5}"#,
            "schema_invalid_keyword",
            "minimum",
        ),
        (
            r#"{"type":"integer","maximum":9007199254740992}"#,
            "schema_invalid_keyword",
            "maximum",
        ),
        (
            r#"{"type":"object","additionalProperties":false,"required":["a"]}"#,
            "schema_invalid_keyword",
            "required",
        ),
        (
            r#"{"oneOf":[{"type":"object","additionalProperties":false,"properties":{"k":{"type":"string"}}}]}"#,
            "schema_invalid_keyword",
            "oneOf",
        ),
        (
            r#"{"oneOf":[{"type":"string"}]}"#,
            "schema_invalid_keyword",
            "oneOf",
        ),
    ] {
        let e = compile_err(schema);
        assert_eq!((e.code(), e.keyword()), (code, Some(keyword)), "{schema}");
    }
    assert_eq!(
        compile_err(r#"{"type":"null","type":"null"}"#).code(),
        "schema_not_json"
    );
    assert_eq!(compile_err("true").code(), "schema_invalid_keyword");
}

#[test]
fn compile_limits_are_enforced_at_their_exact_value() {
    let nest = |depth: usize| {
        let mut s = r#"{"type":"null"}"#.to_owned();
        for _ in 0..depth {
            s = format!(r#"{{"type":"array","items":{s}}}"#);
        }
        s
    };
    let limits = |d| Limits {
        max_depth: d,
        ..Limits::DEFAULT
    };
    Grammar::compile_with_limits(nest(3).as_bytes(), limits(3)).unwrap();
    let e = Grammar::compile_with_limits(nest(4).as_bytes(), limits(3)).unwrap_err();
    assert_eq!(e.code(), "schema_over_limit");
    let props = |n: usize| {
        let p: Vec<String> = (0..n)
            .map(|i| format!(r#""p{i}":{{"type":"null"}}"#))
            .collect();
        format!(
            r#"{{"type":"object","additionalProperties":false,"properties":{{{}}}}}"#,
            p.join(",")
        )
    };
    let g = grammar(&props(256));
    accepted(&g, r#"{"p255":null,"p0":null}"#);
    assert_eq!(compile_err(&props(257)).code(), "schema_over_limit");
    let bad = Limits {
        max_number_chars: 129,
        ..Limits::DEFAULT
    };
    assert_eq!(
        Grammar::compile_with_limits(b"{\"type\":\"null\"}", bad)
            .unwrap_err()
            .code(),
        "limits_invalid"
    );
}

// ---------------------------------------------------------------------------------------------
// Digest and projection
// ---------------------------------------------------------------------------------------------

#[test]
fn the_digest_ignores_whitespace_key_order_and_spelling_of_the_same_meaning() {
    let a = grammar(S);
    let reordered = r#"{"properties":{"none":{"type":"null"},"list":{"maxItems":2,"items":{"enum":[1,22,-3],"type":"integer"},"type":"array"},"ok":{"const":true,"type":"boolean"},"x":{"maximum":2.5,"minimum":-1.5,"type":"number"},"kind":{"enum":["alpha","alps","beta"],"type":"string"},"n":{"maximum":120,"minimum":-5,"type":"integer"},"name":{"maxLength":5,"minLength":2,"type":"string"}},"maxProperties":4,"required":["n","name"],"additionalProperties":false,"type":"object"}"#;
    let b = grammar(reordered);
    assert_eq!(a.digest(), b.digest());
    assert_eq!(a.canonical_form(), b.canonical_form());
    // const and a one-member enum mean the same; so do a missing and a 0 minLength.
    let c = grammar(r#"{"type":"string","const":"x","minLength":0}"#);
    let d = grammar(r#"{"type":"string","enum":["x"]}"#);
    assert_eq!(c.digest(), d.digest());
    // The projection compiles back to the same grammar.
    let e = Arc::new(Grammar::compile(a.projection()).unwrap());
    assert_eq!(e.digest(), a.digest());
    let t = tool_call();
    assert_eq!(
        Grammar::compile(t.projection()).unwrap().digest(),
        t.digest()
    );
}

#[test]
fn the_digest_changes_when_the_meaning_or_a_limit_changes() {
    let a = grammar(S);
    let changed = S.replace(r#""maxLength": 5"#, r#""maxLength": 6"#);
    assert_ne!(grammar(&changed).digest(), a.digest());
    let changed = S.replace(r#""required": ["name", "n"]"#, r#""required": ["name"]"#);
    assert_ne!(grammar(&changed).digest(), a.digest());
    let limits = Limits {
        max_document_bytes: 1000,
        ..Limits::DEFAULT
    };
    let l = Grammar::compile_with_limits(S.as_bytes(), limits).unwrap();
    assert_ne!(l.digest(), a.digest());
    assert_eq!(l.digest(), blake3::hash(l.canonical_form()));
    assert!(a.canonical_form().starts_with(br#"{"grammar":"jouleclaw-structured/1","limits":{"max_array_items":1024,"max_depth":16,"max_document_bytes":65536,"max_number_chars":64,"max_string_chars":4096},"schema":{"#));
    assert_eq!(a.digest_prefix(), a.digest().to_hex()[..16]);
}

#[test]
fn the_projection_states_the_effective_limits() {
    let g = grammar(r#"{"type":"array","items":{"type":"string"}}"#);
    assert_eq!(
        g.projection(),
        br#"{"$schema":"https://json-schema.org/draft/2020-12/schema","items":{"maxLength":4096,"type":"string"},"maxItems":1024,"type":"array"}"#
    );
    let g = grammar(r#"{"type":"integer","maximum":3}"#);
    assert_eq!(
        g.projection(),
        br#"{"$schema":"https://json-schema.org/draft/2020-12/schema","maximum":3,"minimum":-9007199254740991,"type":"integer"}"#
    );
}
