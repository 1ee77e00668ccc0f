//! `conformance/structured-output-2020-vectors.json`: vectors of the JSON Schema 2020-12
//! profile (`Profile::JsonSchema`), in the format of `structured-output-vectors.json` plus a
//! `"profile": "json_schema"` on every grammar; its generator (the hand-labelled corpus
//! below), the stale-file check, and the check of every vector whole, at every split and
//! byte-wise. Regenerate with
//! `JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-structured --test vectors_2020`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::*;
use jouleclaw_structured::*;
use jouleclaw_testkit::{or_not_run, repo};
use serde_json::{Value, json};

/// The checked-in vectors, a file of the repository (read through `jouleclaw_testkit::repo`).
const PATH: &str = "conformance/structured-output-2020-vectors.json";

const WEATHER: &str = r#"{"title":"get_weather","type":"object","required":["city"],
 "properties":{"city":{"type":"string","maxLength":12,"description":"City"},
  "unit":{"enum":["celsius","fahrenheit"],"default":"celsius"},
  "days":{"anyOf":[{"type":"integer","exclusiveMinimum":0,"maximum":14},{"type":"null"}],"default":null},
  "note":{"type":["string","null"],"format":"email"}}}"#;

const TREE: &str = r##"{"$defs":{"Node":{"type":"object","additionalProperties":false,"required":["v"],
 "properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/Node"},"maxItems":3}}}},
 "$ref":"#/$defs/Node"}"##;

const BOUNDS: &str = r#"{"type":"object","additionalProperties":false,
 "properties":{"big":{"type":"integer","minimum":18446744073709551615,"maximum":18446744073709551625},
  "fine":{"type":"number","exclusiveMinimum":0.1000000000000000000001,"maximum":0.3},
  "k":{"const":"tool"},"l":{"type":"array","minItems":2,"items":{"type":"boolean"}}},
 "minProperties":1}"#;

const PETS: &str = r#"{"type":"object","required":["pet"],"properties":{"pet":{"anyOf":[
 {"type":"object","required":["kind"],"properties":{"kind":{"const":"cat"},"lives":{"type":"integer","maximum":9}}},
 {"type":"object","required":["kind"],"properties":{"kind":{"const":"dog"}}}]},
 "extra":{"additionalProperties":{"type":"string"},"type":"object"}}}"#;

/// An open object requiring members it does not declare (a BFCL schema's shape).
const HOUSEHOLD: &str = r#"{"type":"object","required":["city","population"],
 "properties":{"city":{"type":"string"},
  "population":{"type":"object","required":["adults","children"]}}}"#;

/// Untagged unions read side by side (Pydantic's `Union[Card, Bank]`; two array schemas).
const PAYMENT: &str = r#"{"type":"object","required":["amount","method"],
 "properties":{"amount":{"type":"integer","exclusiveMinimum":0},
  "method":{"anyOf":[
   {"type":"object","required":["card_number","expiry"],
    "properties":{"card_number":{"type":"string","maxLength":19},"expiry":{"type":"string"}}},
   {"type":"object","required":["iban"],
    "properties":{"iban":{"type":"string","maxLength":34},"holder":{"anyOf":[{"type":"string"},{"type":"null"}]}}}]},
  "tags":{"anyOf":[{"type":"array","items":{"type":"integer"}},
   {"type":"array","items":{"type":"string"},"maxItems":2}]}}}"#;

/// `pattern`: ECMA-262's regular part, matched as the decoded bytes arrive.
const CODES: &str = r#"{"type":"object","required":["sku"],
 "properties":{"sku":{"type":"string","pattern":"^[A-Z]{3}-\\d{4}$"},
  "note":{"type":"string","pattern":"ok","maxLength":10}}}"#;

/// A union nested in a union is one union of their branches: a tagged pair beside an untagged
/// model is read side by side, three branches, none with its tag first.
const NESTED: &str = r#"{"type":"object","required":["v"],"properties":{"v":{"anyOf":[
 {"anyOf":[{"type":"object","required":["kind"],"properties":{"kind":{"const":"a"},"x":{"type":"integer"}}},
  {"type":"object","required":["kind"],"properties":{"kind":{"const":"b"}}}]},
 {"type":"object","required":["y"],"properties":{"y":{"type":"integer","maximum":3}}}]}}}"#;

/// Two candidate tags: the smaller name by code point (U+FF21 before U+1F600, whose UTF-16
/// code units sort first) is the tag.
const ASTRAL_TAG: &str = r#"{"anyOf":[
 {"type":"object","required":["\uff21","\ud83d\ude00"],"properties":{"\uff21":{"const":"a"},"\ud83d\ude00":{"const":"x"}}},
 {"type":"object","required":["\uff21","\ud83d\ude00"],"properties":{"\uff21":{"const":"b"},"\ud83d\ude00":{"const":"y"}}}]}"#;

/// A tagged pair behind a reference beside a third tagged model: one tagged union of three.
const NESTED_TAGGED: &str = r##"{"$defs":{"AB":{"anyOf":[
  {"type":"object","required":["k"],"properties":{"k":{"const":"a"},"x":{"type":"integer"}}},
  {"type":"object","required":["k"],"properties":{"k":{"const":"b"}}}]}},
 "anyOf":[{"$ref":"#/$defs/AB"},
  {"type":"object","required":["k"],"properties":{"k":{"const":"c"},"y":{"type":"integer","maximum":3}}}]}"##;

/// Free-form values: a union with a free-form branch is free-form (beside two closed object
/// models or two array schemas), and a repeated key is refused at any depth inside one.
const FREE_FORM: &str = r#"{"type":"object","properties":{
 "v":{"anyOf":[{},
  {"type":"object","required":["a"],"properties":{"a":{"type":"integer"}},"additionalProperties":false},
  {"type":"object","required":["b"],"properties":{"b":{"type":"integer"}},"additionalProperties":false}]},
 "w":{"anyOf":[true,{"type":"array","items":{"type":"integer"}},{"type":"array","items":{"type":"string"}}]}}}"#;

/// `uniqueItems: true` (Pydantic's `set[str]`, and any values): a repeat is refused at the `,`
/// or `]` after it, equality as JSON Schema's.
const TAGS: &str = r#"{"type":"object","required":["tags"],"properties":{
 "tags":{"type":"array","items":{"type":"string"},"uniqueItems":true},
 "points":{"type":"array","uniqueItems":true}}}"#;

fn grammars() -> Vec<(&'static str, &'static str, Limits)> {
    let shallow = Limits {
        max_depth: 3,
        ..Limits::DEFAULT
    };
    vec![
        ("weather", WEATHER, Limits::DEFAULT),
        ("tree", TREE, shallow),
        ("bounds", BOUNDS, Limits::DEFAULT),
        ("pets", PETS, Limits::DEFAULT),
        ("household", HOUSEHOLD, Limits::DEFAULT),
        ("payment", PAYMENT, Limits::DEFAULT),
        ("codes", CODES, Limits::DEFAULT),
        ("nested union", NESTED, Limits::DEFAULT),
        ("astral tag", ASTRAL_TAG, Limits::DEFAULT),
        ("nested tagged union", NESTED_TAGGED, Limits::DEFAULT),
        ("free form", FREE_FORM, Limits::DEFAULT),
        ("tags", TAGS, Limits::DEFAULT),
    ]
}

/// (grammar, name, document, expected code or "accepted", expected path).
fn corpus() -> Vec<(
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
)> {
    vec![
        (
            "weather",
            "a call with an other property",
            r#"{"city":"Lisbon","x":{"y":[1,null]}}"#,
            "accepted",
            "",
        ),
        (
            "weather",
            "all properties, whitespace",
            "{ \"city\" : \"Porto\", \"unit\":\"celsius\", \"days\": 3, \"note\": null }",
            "accepted",
            "",
        ),
        (
            "weather",
            "days null",
            r#"{"city":"Porto","days":null}"#,
            "accepted",
            "",
        ),
        (
            "weather",
            "days 0 (exclusiveMinimum 0)",
            r#"{"city":"Porto","days":0}"#,
            "below_minimum",
            "/days",
        ),
        (
            "weather",
            "days 15",
            r#"{"city":"Porto","days":15}"#,
            "above_maximum",
            "/days",
        ),
        (
            "weather",
            "days a string",
            r#"{"city":"Porto","days":"3"}"#,
            "wrong_type",
            "/days",
        ),
        (
            "weather",
            "unit not a member",
            r#"{"city":"Porto","unit":"kelvin"}"#,
            "value_not_allowed",
            "/unit",
        ),
        (
            "weather",
            "note a number",
            r#"{"city":"Porto","note":5}"#,
            "wrong_type",
            "/note",
        ),
        (
            "weather",
            "note not an email (format is an annotation)",
            r#"{"city":"Porto","note":"no"}"#,
            "accepted",
            "",
        ),
        (
            "weather",
            "city missing",
            r#"{"x":1}"#,
            "missing_property",
            "",
        ),
        (
            "weather",
            "an other property twice",
            r#"{"city":"a","x":1,"x":2}"#,
            "duplicate_property",
            "",
        ),
        (
            "weather",
            "an other property with a lone surrogate",
            r#"{"city":"a","x":"\udc00"}"#,
            "lone_surrogate",
            "/x",
        ),
        (
            "tree",
            "a tree",
            r#"{"v":1,"kids":[{"v":2}]}"#,
            "accepted",
            "",
        ),
        (
            "tree",
            "a wrong leaf",
            r#"{"v":1,"kids":[{"v":2.5}]}"#,
            "wrong_type",
            "/kids/0/v",
        ),
        (
            "tree",
            "deeper than max_depth",
            r#"{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}"#,
            "too_deep",
            "/kids/0/kids",
        ),
        (
            "tree",
            "an undeclared key",
            r#"{"v":1,"w":2}"#,
            "unknown_property",
            "",
        ),
        (
            "bounds",
            "big within",
            r#"{"big":18446744073709551620}"#,
            "accepted",
            "",
        ),
        (
            "bounds",
            "big above",
            r#"{"big":18446744073709551626}"#,
            "above_maximum",
            "/big",
        ),
        (
            "bounds",
            "big below",
            r#"{"big":18446744073709551614}"#,
            "below_minimum",
            "/big",
        ),
        (
            "bounds",
            "fine just above the exclusive minimum",
            r#"{"fine":0.10000000000000000000011}"#,
            "accepted",
            "",
        ),
        (
            "bounds",
            "fine at the exclusive minimum",
            r#"{"fine":1000000000000000000001e-22}"#,
            "below_minimum",
            "/fine",
        ),
        (
            "bounds",
            "fine 0.1 (binary64 would round the bound to it)",
            r#"{"fine":0.1}"#,
            "below_minimum",
            "/fine",
        ),
        (
            "bounds",
            "const without type",
            r#"{"k":"tool"}"#,
            "accepted",
            "",
        ),
        (
            "bounds",
            "const without type, other value",
            r#"{"k":"tools"}"#,
            "value_not_allowed",
            "/k",
        ),
        (
            "bounds",
            "minItems",
            r#"{"l":[true]}"#,
            "too_few_items",
            "/l",
        ),
        (
            "bounds",
            "minItems met",
            r#"{"l":[true,false]}"#,
            "accepted",
            "",
        ),
        ("bounds", "minProperties", r#"{}"#, "too_few_properties", ""),
        (
            "pets",
            "a cat",
            r#"{"pet":{"kind":"cat","lives":7},"extra":{"a":"b"}}"#,
            "accepted",
            "",
        ),
        (
            "pets",
            "a dog with an other property",
            r#"{"pet":{"kind":"dog","age":3}}"#,
            "accepted",
            "",
        ),
        (
            "pets",
            "a cat with too many lives",
            r#"{"pet":{"kind":"cat","lives":10}}"#,
            "above_maximum",
            "/pet/lives",
        ),
        (
            "pets",
            "an unknown kind",
            r#"{"pet":{"kind":"cow"}}"#,
            "unknown_tag",
            "/pet/kind",
        ),
        (
            "pets",
            "a pet that is a string",
            r#"{"pet":"cat"}"#,
            "wrong_type",
            "/pet",
        ),
        (
            "pets",
            "an extra value of the wrong type",
            r#"{"pet":{"kind":"dog"},"extra":{"a":1}}"#,
            "wrong_type",
            "/extra/a",
        ),
        (
            "household",
            "required members not declared, any values",
            r#"{"city":"Oslo","population":{"children":[],"adults":2,"pets":1}}"#,
            "accepted",
            "",
        ),
        (
            "household",
            "an undeclared required member missing",
            r#"{"city":"Oslo","population":{"adults":2}}"#,
            "missing_property",
            "/population",
        ),
        (
            "household",
            "a declared required member missing",
            r#"{"population":{"adults":2,"children":0}}"#,
            "missing_property",
            "",
        ),
        (
            "payment",
            "a card",
            r#"{"amount":12,"method":{"card_number":"4111111111111111","expiry":"12/29"}}"#,
            "accepted",
            "",
        ),
        (
            "payment",
            "a bank account, tags of strings",
            r#"{"amount":3,"method":{"holder":null,"iban":"PT50"},"tags":["a","b"]}"#,
            "accepted",
            "",
        ),
        (
            "payment",
            "a member only the open bank branch takes",
            r#"{"amount":1,"method":{"iban":"PT50","card_number":5}}"#,
            "accepted",
            "",
        ),
        (
            "payment",
            "both branches miss members at one byte",
            r#"{"amount":1,"method":{"expiry":"12/29"}}"#,
            "missing_property",
            "/method",
        ),
        (
            "payment",
            "the card branch refuses first, the bank branch at the close",
            r#"{"amount":1,"method":{"card_number":"4111","expiry":7}}"#,
            "missing_property",
            "/method",
        ),
        (
            "payment",
            "a repeated key in a branch",
            r#"{"amount":1,"method":{"iban":"x","iban":"y"}}"#,
            "duplicate_property",
            "/method",
        ),
        (
            "payment",
            "tags of both kinds",
            r#"{"amount":1,"method":{"iban":"x"},"tags":[1,"a"]}"#,
            "wrong_type",
            "/tags/1",
        ),
        (
            "payment",
            "three string tags",
            r#"{"amount":1,"method":{"iban":"x"},"tags":["a","b","c"]}"#,
            "too_many_items",
            "/tags",
        ),
        (
            "codes",
            "a code, a note matching anywhere",
            r#"{"sku":"ABC-1234","note":"it is ok."}"#,
            "accepted",
            "",
        ),
        (
            "codes",
            "an escaped code",
            r#"{"sku":"\u0041BC-1234"}"#,
            "accepted",
            "",
        ),
        (
            "codes",
            "a lower-case letter",
            r#"{"sku":"ABc-1234"}"#,
            "pattern_mismatch",
            "/sku",
        ),
        (
            "codes",
            "a digit too many",
            r#"{"sku":"ABC-12345"}"#,
            "pattern_mismatch",
            "/sku",
        ),
        (
            "codes",
            "a code ending early",
            r#"{"sku":"ABC-123"}"#,
            "pattern_mismatch",
            "/sku",
        ),
        (
            "codes",
            "a note without a match",
            r#"{"sku":"ABC-1234","note":"fine"}"#,
            "pattern_mismatch",
            "/note",
        ),
        (
            "nested union",
            "a tagged branch with its tag after another member",
            r#"{"v":{"x":1,"kind":"a"}}"#,
            "accepted",
            "",
        ),
        (
            "nested union",
            "the untagged branch refuses last",
            r#"{"v":{"kind":"a","x":"s"}}"#,
            "missing_property",
            "/v",
        ),
        (
            "nested union",
            "the three branches refuse one byte",
            r#"{"v":{"y":5}}"#,
            "missing_property",
            "/v",
        ),
        (
            "astral tag",
            "the tag smaller by code point first",
            "{\"\u{ff21}\":\"a\",\"\u{1f600}\":\"x\"}",
            "accepted",
            "",
        ),
        (
            "astral tag",
            "the other candidate first",
            "{\"\u{1f600}\":\"x\",\"\u{ff21}\":\"a\"}",
            "tag_not_first",
            "",
        ),
        (
            "nested tagged union",
            "the outer branch's tag selects it",
            r#"{"k":"c","y":5}"#,
            "above_maximum",
            "/y",
        ),
        (
            "nested tagged union",
            "a nested branch's tag selects it",
            r#"{"k":"a","x":"s"}"#,
            "wrong_type",
            "/x",
        ),
        (
            "free form",
            "an object neither model takes, in a free-form union",
            r#"{"v":{"c":1}}"#,
            "accepted",
            "",
        ),
        (
            "free form",
            "an array neither array schema takes, in a free-form union",
            r#"{"w":[1,"a"]}"#,
            "accepted",
            "",
        ),
        (
            "free form",
            "a repeated key two levels inside another property",
            r#"{"u":{"z":{"k":1,"k":2}}}"#,
            "duplicate_property",
            "/u/z",
        ),
        (
            "free form",
            "a repeated key in an array of a free-form union",
            r#"{"w":[{"k":1,"k":2}]}"#,
            "duplicate_property",
            "/w/0",
        ),
        (
            "tree",
            "an undeclared key sharing a present key's first byte",
            r#"{"v":1,"vx":2}"#,
            "unknown_property",
            "",
        ),
        (
            "weather",
            "an other property sharing a present key's first byte",
            r#"{"city":"Faro","country":"PT","c":1}"#,
            "accepted",
            "",
        ),
        (
            "weather",
            "a declared property twice, after an other one with its first byte",
            r#"{"city":"Faro","c":1,"city":"Porto"}"#,
            "duplicate_property",
            "",
        ),
        (
            "tags",
            "distinct tags",
            r#"{"tags":["a","b","ab"]}"#,
            "accepted",
            "",
        ),
        (
            "tags",
            "a repeated tag",
            r#"{"tags":["a","b","a"]}"#,
            "duplicate_item",
            "/tags",
        ),
        (
            "tags",
            "a tag repeated through an escape, the last element",
            r#"{"tags":["b","\u0062"] }"#,
            "duplicate_item",
            "/tags",
        ),
        (
            "tags",
            "objects equal whatever their member order",
            r#"{"tags":[],"points":[{"x":1,"y":2},{"y":2,"x":1}]}"#,
            "duplicate_item",
            "/points",
        ),
        (
            "tags",
            "numbers equal by value",
            r#"{"tags":[],"points":[0.5,5e-1]}"#,
            "duplicate_item",
            "/points",
        ),
        (
            "tags",
            "distinct values of every type",
            r#"{"tags":[],"points":[[1,2],[2,1],{"x":1},1,"1",true,null,{}]}"#,
            "accepted",
            "",
        ),
    ]
}

/// (name, schema text, code, keyword): schemas the profile refuses.
fn compile_refusals() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    vec![
        (
            "pattern",
            r#"{"type":"string","pattern":"^(?!x)[a-z]+$"}"#,
            "schema_unsupported_keyword",
            "pattern",
        ),
        (
            "unknown keyword",
            r#"{"type":"string","optional":true}"#,
            "schema_unknown_keyword",
            "optional",
        ),
        (
            "two string branches",
            r#"{"anyOf":[{"type":"string"},{"type":"string","maxLength":1}]}"#,
            "schema_ambiguous_union",
            "anyOf",
        ),
        (
            "uniqueItems",
            r#"{"type":"array","uniqueItems":1}"#,
            "schema_invalid_keyword",
            "uniqueItems",
        ),
        (
            "a remote reference",
            r#"{"$ref":"https://example.com/s.json"}"#,
            "schema_invalid_keyword",
            "$ref",
        ),
        (
            "a keyword of another type (unknown keywords refused)",
            r#"{"type":"array","items":{"type":"integer","maxItems":100}}"#,
            "schema_unsupported_keyword",
            "maxItems",
        ),
        (
            "a closed object requiring an undeclared member",
            r#"{"type":"object","required":["a"],"additionalProperties":false}"#,
            "schema_invalid_keyword",
            "required",
        ),
        (
            "enum members not of the type",
            r#"{"type":"boolean","enum":["True","False"]}"#,
            "schema_invalid_keyword",
            "enum",
        ),
        (
            "type object beside a union of another type",
            r#"{"type":"object","anyOf":[{"type":"string"}]}"#,
            "schema_unsupported_keyword",
            "type",
        ),
    ]
}

fn opts(limits: Limits) -> CompileOptions {
    CompileOptions {
        limits,
        ..CompileOptions::JSON_SCHEMA
    }
}

fn limits_json(l: Limits) -> Value {
    json!({
        "max_document_bytes": l.max_document_bytes,
        "max_depth": l.max_depth,
        "max_string_chars": l.max_string_chars,
        "max_array_items": l.max_array_items,
        "max_number_chars": l.max_number_chars,
    })
}

fn build() -> String {
    let mut gs = Vec::new();
    let mut compiled = std::collections::BTreeMap::new();
    for (name, schema, limits) in grammars() {
        let g = Arc::new(Grammar::compile_with(schema.as_bytes(), &opts(limits)).unwrap());
        gs.push(json!({
            "name": name,
            "profile": "json_schema",
            "schema_text": schema,
            "limits": limits_json(limits),
            "canonical_form": String::from_utf8(g.canonical_form().to_vec()).unwrap(),
            "digest": g.digest().to_hex().to_string(),
            "oracle_name": format!("structured:{}", g.digest_prefix()),
            "ignored_keywords": g.ignored_keywords().iter().map(|k| json!({"at": k.at, "keyword": k.keyword, "annotation": k.annotation})).collect::<Vec<_>>(),
        }));
        compiled.insert(name, g);
    }
    let mut cases = Vec::new();
    for (i, (gname, name, doc, want, want_path)) in corpus().into_iter().enumerate() {
        let g = &compiled[gname];
        let doc = doc.as_bytes();
        let mut case = json!({
            "grammar": gname,
            "name": name,
            "chunks_hex": doc.chunks(4 + i % 13).map(hex::encode).collect::<Vec<_>>(),
            "document": std::str::from_utf8(doc).unwrap(),
        });
        record_outcome(&mut case, outcome(g, doc), (name, want, want_path));
        cases.push(case);
    }
    let refusals: Vec<Value> = compile_refusals()
        .into_iter()
        .map(|(name, schema, code, keyword)| {
            let e = Grammar::compile_json_schema(schema.as_bytes()).unwrap_err();
            assert_eq!((e.code(), e.keyword()), (code, Some(keyword)), "{name}");
            json!({"name": name, "profile": "json_schema", "schema_text": schema, "code": code, "keyword": keyword})
        })
        .collect();
    vectors_file(
        "Structured-output vectors of the JSON Schema 2020-12 profile \
            (spec/STRUCTURED-OUTPUT.md, \"The JSON Schema profile\"), generated by \
            crates/jouleclaw-structured/tests/vectors_2020.rs (JOULECLAW_REGEN_VECTORS=1 cargo test \
            -p jouleclaw-structured --test vectors_2020); a test fails when this file is stale. \
            Each grammar is compiled from schema_text with Profile::JsonSchema; the rest is as in \
            structured-output-vectors.json.",
        gs,
        cases,
        refusals,
    )
}

#[test]
fn the_checked_in_vectors_are_what_the_generator_builds() {
    check_vectors_file(PATH, &build(), "vectors_2020");
}

#[test]
fn every_vector_holds_whole_at_every_split_and_byte_wise() {
    let v: Value = serde_json::from_str(&or_not_run!(repo::file(PATH))).unwrap();
    let mut grammars = std::collections::BTreeMap::new();
    for g in v["grammars"].as_array().unwrap() {
        let limits = limits_of(&g["limits"]);
        let c = Grammar::compile_with(g["schema_text"].as_str().unwrap().as_bytes(), &opts(limits))
            .unwrap();
        assert_eq!(
            c.canonical_form(),
            g["canonical_form"].as_str().unwrap().as_bytes()
        );
        assert_eq!(c.digest().to_hex().as_str(), g["digest"].as_str().unwrap());
        // The projection compiles again (in the profile) to the same digest.
        let again = Grammar::compile_with(c.projection(), &opts(limits)).unwrap();
        assert_eq!(again.digest(), c.digest(), "{}", g["name"]);
        grammars.insert(g["name"].as_str().unwrap().to_owned(), Arc::new(c));
    }
    for c in v["cases"].as_array().unwrap() {
        let g = &grammars[c["grammar"].as_str().unwrap()];
        let chunks = chunks_of(c);
        let chunked = chunked_outcome(g, &chunks);
        let whole = outcome(g, &chunks.concat());
        assert_eq!(chunked, whole, "{}", c["name"]);
        match whole {
            Ok(()) => assert_eq!(c["outcome"], "accepted", "{}", c["name"]),
            Err(r) => {
                assert_eq!(c["code"], r.code.as_str(), "{}", c["name"]);
                assert_eq!(c["offset"], r.offset, "{}", c["name"]);
                assert_eq!(c["path"], r.path.as_str(), "{}", c["name"]);
            }
        }
    }
    for r in v["compile_refusals"].as_array().unwrap() {
        let e = Grammar::compile_json_schema(r["schema_text"].as_str().unwrap().as_bytes())
            .unwrap_err();
        assert_eq!(e.code(), r["code"]);
        assert_eq!(e.keyword(), r["keyword"].as_str());
    }
}
