//! The JSON Schema 2020-12 profile (`Profile::JsonSchema`): each rule of
//! `spec/STRUCTURED-OUTPUT.md` "The JSON Schema profile" with its accepted neighbour.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::*;
use jouleclaw_structured::*;

fn js(schema: &str) -> Arc<Grammar> {
    Arc::new(
        Grammar::compile_json_schema(schema.as_bytes()).unwrap_or_else(|e| panic!("{schema}: {e}")),
    )
}

fn js_err(schema: &str) -> (String, Option<String>) {
    let e = Grammar::compile_json_schema(schema.as_bytes()).unwrap_err();
    (e.code().to_owned(), e.keyword().map(str::to_owned))
}

#[test]
fn an_absent_additional_properties_allows_other_well_formed_properties() {
    let g = js(r#"{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}"#);
    accepted(
        &g,
        r#"{"city":"Lisbon","units":{"a":[1,2.5e3,"x",true,null,{}]},"n":-0}"#,
    );
    accepted(&g, r#"{"cit":1,"city":"x"}"#);
    // The other property's value is still checked as I-JSON.
    refused(&g, r#"{"city":"x","u":[1,]}"#, "syntax", 19, "/u");
    refused(
        &g,
        r#"{"city":"x","u":"\ud800"}"#,
        "lone_surrogate",
        23,
        "/u",
    );
    // Duplicate keys are refused among other properties too (path: the object).
    refused(
        &g,
        r#"{"city":"x","u":1,"u":2}"#,
        "duplicate_property",
        20,
        "",
    );
    refused(
        &g,
        r#"{"city":"x","u":{"k":1,"k":2}}"#,
        "duplicate_property",
        25,
        "/u",
    );
    refused(
        &g,
        r#"{"city":"x","city":"y"}"#,
        "duplicate_property",
        17,
        "",
    );
    // Declared properties keep their schemas.
    refused(&g, r#"{"city":5}"#, "wrong_type", 8, "/city");
    refused(&g, r#"{"u":1}"#, "missing_property", 6, "");
    // additionalProperties false stays closed, as in the subset.
    let closed =
        js(r#"{"type":"object","properties":{"a":{"type":"null"}},"additionalProperties":false}"#);
    refused(&closed, r#"{"b":1}"#, "unknown_property", 2, "");
}

#[test]
fn additional_properties_as_a_schema_checks_every_other_value() {
    let g = js(r#"{"type":"object","additionalProperties":{"type":"integer","maximum":9}}"#);
    accepted(&g, r#"{"a":1,"b":9}"#);
    refused(&g, r#"{"a":1,"b":10}"#, "above_maximum", 12, "/b");
    refused(&g, r#"{"a~/b":"x"}"#, "wrong_type", 8, "/a~0~1b");
}

#[test]
fn an_open_object_may_require_a_property_it_does_not_declare() {
    // JSON Schema: the member must be there, with any value the other members may take.
    let g = js(r#"{"type":"object","required":["adults","kids"]}"#);
    accepted(&g, r#"{"kids":[],"adults":{"n":2},"pets":1}"#);
    refused(&g, r#"{"adults":2}"#, "missing_property", 11, "");
    // With a schema for other members, the required one takes that schema.
    let typed = js(
        r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"],"additionalProperties":{"type":"integer"}}"#,
    );
    accepted(&typed, r#"{"b":7,"a":"x"}"#);
    refused(&typed, r#"{"a":"x","b":"7"}"#, "wrong_type", 13, "/b");
    refused(&typed, r#"{"a":"x"}"#, "missing_property", 8, "");
    // A closed object naming an undeclared property could hold no document: refused.
    assert_eq!(
        js_err(r#"{"type":"object","required":["a"],"additionalProperties":false}"#),
        ("schema_invalid_keyword".into(), Some("required".into()))
    );
    // Named twice is still refused.
    assert_eq!(
        js_err(r#"{"type":"object","required":["a","a"]}"#),
        ("schema_invalid_keyword".into(), Some("required".into()))
    );
}

#[test]
fn a_keyword_of_another_type_is_refused_by_default_and_ignored_on_request() {
    // `maxItems` on an array's integer items (a schema of BFCL's): the author meant the array.
    let s = br#"{"type":"array","items":{"type":"integer","maxItems":2}}"#;
    let e = Grammar::compile_json_schema(s).unwrap_err();
    assert_eq!(
        (e.code(), e.keyword()),
        ("schema_unsupported_keyword", Some("maxItems"))
    );
    let ignore = CompileOptions {
        unknown_keywords: UnknownKeywords::Ignore,
        ..CompileOptions::JSON_SCHEMA
    };
    let g = Arc::new(Grammar::compile_with(s, &ignore).unwrap());
    assert_eq!(
        g.ignored_keywords(),
        [IgnoredKeyword {
            at: "/items".into(),
            keyword: "maxItems".into(),
            annotation: false
        }]
    );
    // JSON Schema's meaning: it constrains nothing (three items pass), the type still does.
    accepted(&g, "[1,2,3]");
    refused(&g, r#"[1,"2"]"#, "wrong_type", 3, "/1");
    // A keyword of one of the listed types is enforced, not ignored.
    let listed =
        Grammar::compile_with(br#"{"type":["integer","array"],"maxItems":1}"#, &ignore).unwrap();
    assert!(listed.ignored_keywords().is_empty());
    refused(&Arc::new(listed), "[1,2]", "too_many_items", 2, "");
}

#[test]
fn free_form_values_are_bounded_by_the_depth_limit() {
    let l = Limits {
        max_depth: 3,
        ..Limits::DEFAULT
    };
    let g = Arc::new(
        Grammar::compile_with(
            br#"{"type":"object"}"#,
            &CompileOptions {
                limits: l,
                ..CompileOptions::JSON_SCHEMA
            },
        )
        .unwrap(),
    );
    accepted(&g, r#"{"a":[[1]]}"#);
    refused(&g, r#"{"a":[[[1]]]}"#, "too_deep", 7, "/a/0/0");
    assert_eq!(RefusalCode::TooDeep.class(), RefusalClass::Limit);
}

#[test]
fn annotations_are_ignored_reported_and_left_out_of_the_digest() {
    let plain = js(r#"{"type":"object","properties":{"d":{"type":"string"}}}"#);
    let annotated = js(
        r#"{"type":"object","properties":{"d":{"type":"string","format":"date","default":"x","examples":["y"],"deprecated":true,"readOnly":false,"writeOnly":false,"$comment":"c"}}}"#,
    );
    assert_eq!(plain.digest(), annotated.digest());
    let got: Vec<(&str, &str, bool)> = annotated
        .ignored_keywords()
        .iter()
        .map(|k| (k.at.as_str(), k.keyword.as_str(), k.annotation))
        .collect();
    assert_eq!(
        got,
        [
            ("/properties/d", "$comment", true),
            ("/properties/d", "default", true),
            ("/properties/d", "deprecated", true),
            ("/properties/d", "examples", true),
            ("/properties/d", "format", true),
            ("/properties/d", "readOnly", true),
            ("/properties/d", "writeOnly", true),
        ]
    );
    // format is an annotation: a string that is not a date is accepted, as 2020-12 says.
    accepted(&annotated, r#"{"d":"not a date"}"#);
    assert!(plain.ignored_keywords().is_empty());
    // title and description stay in the projection (the model reads them), as in the subset.
    let titled = js(r#"{"type":"object","title":"T","properties":{"d":{"type":"string"}}}"#);
    assert_ne!(titled.digest(), plain.digest());
    // The subset still refuses annotations it does not know.
    let e = Grammar::compile(br#"{"type":"string","default":"x"}"#).unwrap_err();
    assert_eq!(e.code(), "schema_unsupported_keyword");
}

#[test]
fn a_schema_the_subset_compiles_has_the_same_digest_in_both_profiles() {
    for s in [
        TOOL_CALL,
        r#"{"type":"array","items":{"type":"integer","minimum":-3,"maximum":7}}"#,
        r#"{"type":"number","minimum":0.1,"maximum":1e300}"#,
    ] {
        let a = Grammar::compile(s.as_bytes()).unwrap();
        let b = Grammar::compile_json_schema(s.as_bytes()).unwrap();
        assert_eq!(a.canonical_form(), b.canonical_form(), "{s}");
    }
}

#[test]
fn unknown_keywords_are_refused_by_default_and_ignored_on_request() {
    let s = br#"{"type":"object","properties":{"q":{"type":"string","optional":true}}}"#;
    let e = Grammar::compile_json_schema(s).unwrap_err();
    assert_eq!(
        (e.code(), e.keyword()),
        ("schema_unknown_keyword", Some("optional"))
    );
    let g = Grammar::compile_with(
        s,
        &CompileOptions {
            unknown_keywords: UnknownKeywords::Ignore,
            ..CompileOptions::JSON_SCHEMA
        },
    )
    .unwrap();
    assert_eq!(
        g.ignored_keywords(),
        [IgnoredKeyword {
            at: "/properties/q".into(),
            keyword: "optional".into(),
            annotation: false
        }]
    );
    // 2020-12 constraints this profile does not implement are refused under both choices.
    for opts in [
        CompileOptions::JSON_SCHEMA,
        CompileOptions {
            unknown_keywords: UnknownKeywords::Ignore,
            ..CompileOptions::JSON_SCHEMA
        },
    ] {
        for (schema, kw) in [
            (r#"{"type":"string","pattern":"^(?=a)"}"#, "pattern"),
            (r#"{"type":"integer","multipleOf":2}"#, "multipleOf"),
            (r#"{"not":{"type":"null"}}"#, "not"),
            // Draft-07's and 2019-09's, not 2020-12's (the default dialect).
            (
                r#"{"type":"array","additionalItems":false}"#,
                "additionalItems",
            ),
        ] {
            let e = Grammar::compile_with(schema.as_bytes(), &opts).unwrap_err();
            assert_eq!(
                (e.code(), e.keyword()),
                ("schema_unsupported_keyword", Some(kw))
            );
        }
    }
}

#[test]
fn const_and_enum_need_no_type() {
    let g = js(
        r#"{"type":"object","properties":{"name":{"const":"get_weather"},"n":{"enum":[1,"two",null,true]}},"required":["name"]}"#,
    );
    accepted(&g, r#"{"name":"get_weather"}"#);
    accepted(&g, r#"{"name":"get_weather","n":1.0}"#);
    accepted(&g, r#"{"name":"get_weather","n":"two"}"#);
    accepted(&g, r#"{"name":"get_weather","n":null}"#);
    refused(
        &g,
        r#"{"name":"get_time"}"#,
        "value_not_allowed",
        13,
        "/name",
    );
    refused(
        &g,
        r#"{"name":"get_weather","n":false}"#,
        "value_not_allowed",
        26,
        "/n",
    );
    refused(
        &g,
        r#"{"name":"get_weather","n":2}"#,
        "value_not_allowed",
        27,
        "/n",
    );
    refused(
        &g,
        r#"{"name":"get_weather","n":[]}"#,
        "wrong_type",
        26,
        "/n",
    );
    assert_eq!(js_err(r#"{"enum":[{"a":1}]}"#).0, "schema_invalid_keyword");
}

#[test]
fn unions_are_decided_by_the_first_byte_of_the_value() {
    // Pydantic's Optional[str].
    let g = js(r#"{"anyOf":[{"type":"string","maxLength":3},{"type":"null"}],"default":null}"#);
    accepted(&g, r#""abc""#);
    accepted(&g, "null");
    refused(&g, r#""abcd""#, "string_too_long", 4, "");
    refused(&g, "1", "wrong_type", 0, "");
    // A type list is the same union.
    let t = js(r#"{"type":["string","null"],"minLength":2}"#);
    accepted(&t, "null");
    refused(&t, r#""a""#, "string_too_short", 2, "");
    refused(&t, "true", "wrong_type", 0, "");
    // integer | number: the number holds both.
    let n = js(r#"{"anyOf":[{"type":"integer"},{"type":"number"}]}"#);
    accepted(&n, "1.5");
    // Objects: a tagged union (tag first), as oneOf in the subset.
    let o = js(r#"{"anyOf":[
        {"type":"object","properties":{"k":{"const":"a"},"x":{"type":"integer"}},"required":["k"]},
        {"type":"object","properties":{"k":{"const":"b"}},"required":["k"]}]}"#);
    accepted(&o, r#"{"k":"a","x":1}"#);
    refused(&o, r#"{"k":"a","x":"s"}"#, "wrong_type", 13, "/x");
    refused(&o, r#"{"k":"c"}"#, "unknown_tag", 6, "/k");
    // Two branches one first byte cannot tell apart are refused at compile time.
    for s in [
        r#"{"anyOf":[{"type":"string"},{"type":"string","maxLength":2}]}"#,
        r#"{"oneOf":[{"type":"object"},{"type":"object","properties":{"a":{}}}]}"#,
        r#"{"oneOf":[{"type":"integer"},{"type":"number"}]}"#,
    ] {
        assert_eq!(
            js_err(s),
            ("schema_ambiguous_union".into(), Some("anyOf".into())),
            "{s}"
        );
    }
}

/// `"type": "object"` beside a union holds in JSON Schema too (both apply): a union whose
/// branches are all objects keeps it, one with a branch of another type (or a free-form
/// branch, which takes non-objects) is refused rather than read without it.
#[test]
fn type_object_beside_a_union_admits_only_object_branches() {
    let g = js(r#"{"type":"object","anyOf":[
        {"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},
        {"type":"object","properties":{"b":{"type":"null"}},"required":["b"]}]}"#);
    accepted(&g, r#"{"a":1}"#);
    accepted(&g, r#"{"b":null}"#);
    refused(&g, "[]", "wrong_type", 0, "");
    let t = js(r##"{"type":"object","oneOf":[
        {"type":"object","properties":{"k":{"const":"x"}},"required":["k"]},
        {"$ref":"#/$defs/Y"}],"$defs":{"Y":{"type":"object","properties":{"k":{"const":"y"}},"required":["k"]}}}"##);
    accepted(&t, r#"{"k":"y"}"#);
    for s in [
        r#"{"type":"object","anyOf":[{"type":"string"}]}"#,
        r#"{"type":"object","anyOf":[{"type":"object"},{"type":"null"}]}"#,
        r#"{"type":"object","oneOf":[{"type":"string"},{"type":"integer"}]}"#,
        r#"{"type":"object","anyOf":[{"type":"array"},{"type":"array","items":{"type":"integer"}}]}"#,
        r#"{"type":"object","anyOf":[{},{"type":"object","properties":{"a":{}}}]}"#,
        r##"{"type":"object","anyOf":[{"$ref":"#/$defs/S"},{"type":"object"}],"$defs":{"S":{"type":["object","string"]}}}"##,
    ] {
        assert_eq!(
            js_err(s),
            ("schema_unsupported_keyword".into(), Some("type".into())),
            "{s}"
        );
    }
}

/// Pydantic's `Union[Cat, Dog]` without a discriminator: two closed object models.
const CAT_OR_DOG: &str = r#"{"type":"object","required":["pet"],"properties":{"pet":{"anyOf":[
    {"type":"object","additionalProperties":false,"required":["name","lives"],
     "properties":{"name":{"type":"string"},"lives":{"type":"integer","maximum":9}}},
    {"type":"object","additionalProperties":false,"required":["name","breed"],
     "properties":{"name":{"type":"string"},"breed":{"type":"string"}}}]}}}"#;

#[test]
fn untagged_object_unions_are_read_side_by_side() {
    let g = js(CAT_OR_DOG);
    accepted(&g, r#"{"pet":{"name":"Tom","lives":9}}"#);
    accepted(&g, r#"{"pet":{"breed":"pug","name":"Rex"}}"#);
    // The cat lives longest (the dog refuses the key `lives` at its `l`): the cat's refusal,
    // at its byte, with its path below the union's.
    refused(
        &g,
        r#"{"pet":{"name":"Tom","lives":"9"}}"#,
        "wrong_type",
        29,
        "/pet/lives",
    );
    refused(
        &g,
        r#"{"pet":{"name":"Tom","lives":10}}"#,
        "above_maximum",
        30,
        "/pet/lives",
    );
    // Both refuse at one byte (the `}` that misses lives and breed): the first declared names it.
    refused(
        &g,
        r#"{"pet":{"name":"Tom"}}"#,
        "missing_property",
        20,
        "/pet",
    );
    // Two branches refusing one byte with different codes: the first declared names it.
    let tie = js(
        r#"{"anyOf":[{"type":"object","properties":{"n":{"type":"string","maxLength":1}}},
        {"type":"object","properties":{"n":{"enum":["ab"]}}}]}"#,
    );
    refused(&tie, r#"{"n":"ac"}"#, "string_too_long", 7, "/n");
    let tie = js(
        r#"{"anyOf":[{"type":"object","properties":{"n":{"enum":["ab"]}}},
        {"type":"object","properties":{"n":{"type":"string","maxLength":1}}}]}"#,
    );
    refused(&tie, r#"{"n":"ac"}"#, "value_not_allowed", 7, "/n");
    // A key neither declares: refused at its close (it is a prefix of `name`).
    refused(&g, r#"{"pet":{"nam":1}}"#, "unknown_property", 12, "/pet");
    refused(&g, r#"{"pet":[]}"#, "wrong_type", 7, "/pet");
    // Truncated inside the value.
    let mut v = StructuredValidator::new(Arc::clone(&g));
    v.push(br#"{"pet":{"name":"Tom""#).unwrap();
    assert_eq!(v.finish().unwrap_err().code.as_str(), "truncated");
    // What may come next is what either branch takes.
    let mut v = StructuredValidator::new(Arc::clone(&g));
    v.push(br#"{"pet":{"name":"Tom",""#).unwrap();
    let next = v.expected_next();
    assert!(next.allows(b'l') && next.allows(b'b') && !next.allows(b'z'));
    // Work does not depend on the chunking, and counts every branch's machine.
    let doc = br#"{"pet":{"name":"Tom","lives":9}}"#;
    let work = |size: usize| {
        let mut v = StructuredValidator::new(Arc::clone(&g));
        doc.chunks(size).for_each(|c| v.push(c).unwrap());
        v.finish().unwrap();
        v.usage().work
    };
    assert_eq!(work(1), work(doc.len()));
    assert_eq!(work(5), work(doc.len()));
    let single = js(
        r#"{"type":"object","required":["pet"],"properties":{"pet":{"type":"object","additionalProperties":false,"required":["name","lives"],
     "properties":{"name":{"type":"string"},"lives":{"type":"integer","maximum":9}}}}}"#,
    );
    let mut v = StructuredValidator::new(single);
    v.push(doc).unwrap();
    assert!(work(doc.len()) > v.usage().work);
}

#[test]
fn arrays_of_several_element_schemas_are_read_side_by_side() {
    let g = js(
        r#"{"anyOf":[{"type":"array","items":{"type":"integer"}},{"type":"array","items":{"type":"string"},"maxItems":2}]}"#,
    );
    accepted(&g, "[1,2,3]");
    accepted(&g, r#"["a","b"]"#);
    accepted(&g, "[]");
    // The integers' branch lives longer (the strings' refuses `1` at once).
    refused(&g, r#"[1,"a"]"#, "wrong_type", 3, "/1");
    refused(&g, r#"["a","b","c"]"#, "too_many_items", 8, "");
    refused(&g, "{}", "wrong_type", 0, "");
}

#[test]
fn side_by_side_values_are_bounded() {
    // A branch's containers count from the union's depth (max_depth 3: the root, `p`, `a`).
    let limits = Limits {
        max_depth: 3,
        ..Limits::DEFAULT
    };
    let opts = CompileOptions {
        limits,
        ..CompileOptions::JSON_SCHEMA
    };
    let g = Arc::new(
        Grammar::compile_with(
            br#"{"type":"object","properties":{"p":{"anyOf":[
            {"type":"object","properties":{"a":{}},"additionalProperties":false},
            {"type":"object","properties":{"b":{"type":"integer"}},"additionalProperties":false}]}}}"#,
            &opts,
        )
        .unwrap(),
    );
    accepted(&g, r#"{"p":{"a":{"x":1}}}"#);
    refused(&g, r#"{"p":{"a":{"x":{}}}}"#, "too_deep", 15, "/p/a/x");
    // No value read side by side holds another (here through a property), nor through
    // recursion; at most MAX_PARALLEL_BRANCHES branches; oneOf without a tag stays refused.
    let pair = r#"[{"type":"object","properties":{"x":{"type":"null"}}},{"type":"object","properties":{"y":{"type":"null"}}}]"#;
    let nested = format!(
        r#"{{"anyOf":[{{"type":"object","properties":{{"q":{{"anyOf":{pair}}}}}}},{{"type":"object","properties":{{"r":{{"type":"null"}}}}}}]}}"#
    );
    assert_eq!(
        js_err(&nested),
        ("schema_ambiguous_union".into(), Some("anyOf".into()))
    );
    // Side by side beside each other (two properties, one shared definition) is not nested.
    let siblings = format!(
        r##"{{"$defs":{{"P":{{"anyOf":{pair}}}}},"type":"object","properties":{{"a":{{"$ref":"#/$defs/P"}},"b":{{"$ref":"#/$defs/P"}},"c":{{"anyOf":{pair}}}}}}}"##
    );
    let g = js(&siblings);
    accepted(&g, r#"{"a":{"x":null},"b":{"y":null},"c":{"x":null}}"#);
    let recursive = r##"{"$defs":{"T":{"anyOf":[{"type":"object","properties":{"k":{"$ref":"#/$defs/T"}}},{"type":"object","properties":{"v":{"type":"null"}}}]}},"$ref":"#/$defs/T"}"##;
    assert_eq!(
        js_err(recursive),
        ("schema_ambiguous_union".into(), Some("anyOf".into()))
    );
    let branches = |n: usize| {
        let b: Vec<String> = (0..n)
            .map(|i| format!(r#"{{"type":"object","properties":{{"p{i}":{{"type":"null"}}}}}}"#))
            .collect();
        format!(r#"{{"anyOf":[{}]}}"#, b.join(","))
    };
    assert!(Grammar::compile_json_schema(branches(MAX_PARALLEL_BRANCHES).as_bytes()).is_ok());
    assert_eq!(
        js_err(&branches(MAX_PARALLEL_BRANCHES + 1)),
        ("schema_ambiguous_union".into(), Some("anyOf".into()))
    );
    let one_of = format!(r#"{{"oneOf":{pair}}}"#);
    assert_eq!(
        js_err(&one_of),
        ("schema_ambiguous_union".into(), Some("anyOf".into()))
    );
}

/// `count` definitions `{prefix}0..`, each a union of a reference to the next (the last one to
/// `last`) and `null`.
fn chain(prefix: &str, count: usize, last: &str) -> Vec<String> {
    (0..count)
        .map(|i| {
            let next = if i + 1 == count {
                last.to_owned()
            } else {
                format!("#/$defs/{prefix}{}", i + 1)
            };
            format!(r#""{prefix}{i}":{{"anyOf":[{{"$ref":"{next}"}},{{"type":"null"}}]}}"#)
        })
        .collect()
}

/// A schema nests at most 128 levels of JSON, but a chain of references nests without that
/// bound: compiling it, flattening its unions and writing its projection are bounded
/// (`schema_over_limit`), never a stack overflow.
#[test]
fn chains_of_references_are_bounded() {
    let over = |s: &str| {
        let e = Grammar::compile_json_schema(s.as_bytes()).unwrap_err();
        assert_eq!(e.code(), "schema_over_limit", "{e}");
    };
    // One chain of 1,000 definitions (68 KB), through unions and through properties.
    let mut defs = chain("U", 1000, "#/$defs/S");
    defs.push(r#""S":{"type":"string"}"#.into());
    over(&format!(
        r##"{{"$defs":{{{}}},"$ref":"#/$defs/U0"}}"##,
        defs.join(",")
    ));
    let props: Vec<String> = (0..1000)
        .map(|i| {
            format!(
                r##""P{i}":{{"type":"object","properties":{{"n":{{"$ref":"#/$defs/P{}"}}}}}}"##,
                i + 1
            )
        })
        .chain([r#""P1000":{"type":"null"}"#.to_owned()])
        .collect();
    over(&format!(
        r##"{{"$defs":{{{}}},"$ref":"#/$defs/P0"}}"##,
        props.join(",")
    ));
    // Layers of 40 that each end in the layer compiled before: each compiles within the bound,
    // but the unions nest 40 x 40 deep.
    let mut defs = vec![r#""L0_0":{"type":"string"}"#.to_owned()];
    let mut members = Vec::new();
    for k in 1..40 {
        defs.extend(chain(
            &format!("L{k}_"),
            40,
            &format!("#/$defs/L{}_0", k - 1),
        ));
        members.push(format!(r##""m{k}":{{"$ref":"#/$defs/L{k}_0"}}"##));
    }
    over(&format!(
        r#"{{"type":"object","properties":{{{}}},"$defs":{{{}}}}}"#,
        members.join(","),
        defs.join(",")
    ));
    // The same layers through properties (no union): the projection's nesting is bounded.
    let mut defs = vec![r#""Q0_0":{"type":"string"}"#.to_owned()];
    let mut members = Vec::new();
    for k in 1..40 {
        for i in 0..40 {
            let next = if i == 39 {
                format!("#/$defs/Q{}_0", k - 1)
            } else {
                format!("#/$defs/Q{k}_{}", i + 1)
            };
            defs.push(format!(
                r#""Q{k}_{i}":{{"type":"object","properties":{{"n":{{"$ref":"{next}"}}}}}}"#
            ));
        }
        members.push(format!(r##""m{k}":{{"$ref":"#/$defs/Q{k}_0"}}"##));
    }
    over(&format!(
        r#"{{"type":"object","properties":{{{}}},"$defs":{{{}}}}}"#,
        members.join(","),
        defs.join(",")
    ));
    // The accepted neighbour: a chain of 30.
    let mut defs = chain("U", 30, "#/$defs/S");
    defs.push(r#""S":{"type":"string"}"#.into());
    let g = js(&format!(
        r##"{{"$defs":{{{}}},"$ref":"#/$defs/U0"}}"##,
        defs.join(",")
    ));
    accepted(&g, r#""x""#);
    accepted(&g, "null");
}

#[test]
fn patterns_are_matched_as_the_bytes_arrive() {
    // Anchored: refused at the first byte no continuation can match.
    let g = js(r#"{"type":"string","pattern":"^[A-Z]{3}-\\d{2}$"}"#);
    accepted(&g, r#""ABC-12""#);
    refused(&g, r#""ABc-12""#, "pattern_mismatch", 3, "");
    refused(&g, r#""ABC-123""#, "pattern_mismatch", 7, "");
    // Ends without a match: refused at the closing quote.
    refused(&g, r#""ABC-1""#, "pattern_mismatch", 6, "");
    // Escapes are matched decoded: \u0041 is A.
    accepted(&g, r#""\u0041BC-12""#);
    refused(&g, r#""\u0061BC-12""#, "pattern_mismatch", 6, "");
    // Unanchored, as JSON Schema reads `pattern`: a match anywhere; nothing refused early.
    let any = js(r#"{"type":"string","pattern":"[0-9]+","maxLength":8}"#);
    accepted(&any, r#""ab7cd""#);
    refused(&any, r#""abcd""#, "pattern_mismatch", 5, "");
    refused(&any, r#""1234567890""#, "string_too_long", 9, "");
    // ECMA-262 meanings: `.` is not a line terminator, \d is ASCII; a non-ASCII character is
    // one character.
    let dot = js(r#"{"type":"string","pattern":"^.$"}"#);
    accepted(&dot, r#""é""#);
    refused(&dot, r#""\r""#, "pattern_mismatch", 2, "");
    refused(
        &js(r#"{"type":"string","pattern":"^\\d$"}"#),
        r#""٣""#,
        "pattern_mismatch",
        1,
        "",
    );
    // A pattern no string matches refuses at the opening quote; inside an object, with the
    // member's path; beside an enum, both hold.
    refused(
        &js(r#"{"type":"string","pattern":"a^"}"#),
        r#""a""#,
        "pattern_mismatch",
        0,
        "",
    );
    let o = js(
        r#"{"type":"object","properties":{"id":{"type":"string","pattern":"^u-"},"k":{"enum":["ab","ac"],"type":"string","pattern":"b"}}}"#,
    );
    refused(&o, r#"{"id":"v-1"}"#, "pattern_mismatch", 7, "/id");
    accepted(&o, r#"{"id":"u-1","k":"ab"}"#);
    refused(&o, r#"{"k":"ac"}"#, "pattern_mismatch", 8, "/k");
    // The projection states the pattern as written, and compiles back to the same grammar.
    let p = String::from_utf8(g.projection().to_vec()).unwrap();
    assert!(p.contains(r#""pattern":"^[A-Z]{3}-\\d{2}$""#), "{p}");
    assert_eq!(
        Grammar::compile_json_schema(g.projection())
            .unwrap()
            .digest(),
        g.digest()
    );
    // The subset still refuses it; forms read otherwise by ECMA-262 are refused, named.
    let e = Grammar::compile(br#"{"type":"string","pattern":"a"}"#).unwrap_err();
    assert_eq!(e.code(), "schema_unsupported_keyword");
    for p in [r"^(?=a)", r"(?i)a", r"\\bx", r"\\p{L}", r"(a)\\1"] {
        let s = format!(r#"{{"type":"string","pattern":"{p}"}}"#);
        assert_eq!(
            js_err(&s),
            ("schema_unsupported_keyword".into(), Some("pattern".into())),
            "{p}"
        );
    }
    assert_eq!(
        js_err(r#"{"type":"string","pattern":5}"#).0,
        "schema_invalid_keyword"
    );
    assert_eq!(
        js_err(r#"{"type":"integer","pattern":"a"}"#).0,
        "schema_unsupported_keyword"
    );
    let huge = format!(
        r#"{{"type":"string","pattern":"^(a|b)*a{}$"}}"#,
        "(a|b)".repeat(24)
    );
    assert_eq!(js_err(&huge).0, "schema_over_limit");
}

fn patterns(ps: &[&str]) -> String {
    let props: Vec<String> = ps
        .iter()
        .enumerate()
        .map(|(i, p)| format!(r#""p{i}":{{"type":"string","pattern":{}}}"#, quoted(p)))
        .collect();
    format!(
        r#"{{"type":"object","properties":{{{}}}}}"#,
        props.join(",")
    )
}

fn quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn over_limit(schema: &str) -> (&'static str, String) {
    match Grammar::compile_json_schema(schema.as_bytes()) {
        Err(StructuredError::SchemaOverLimit { limit, at }) => (limit, at),
        other => panic!("{schema}: {other:?}"),
    }
}

#[test]
fn pattern_compilation_is_bounded_in_work_before_it_is_done() {
    // A 12-character pattern that took seconds of CPU (its automaton's states grow past every
    // budget), alone and ten times in one schema: refused within the schema's work budget.
    let bad = "(.{0,9}){99}";
    assert_eq!(
        over_limit(&patterns(&[bad])),
        ("max_pattern_work", "/properties/p0/pattern".to_owned())
    );
    assert_eq!(over_limit(&patterns(&[bad; 10])).0, "max_pattern_work");
    // Another way past the bound: the automaton outgrows 1 MiB before the budget.
    assert_eq!(
        Grammar::compile_json_schema(patterns(&["[ab]*a[ab]{19}"]).as_bytes())
            .unwrap_err()
            .code(),
        "schema_over_limit"
    );
    // The budget is the schema's, not each pattern's: a pattern that fits alone...
    let dear = ".{1,100}";
    let g = js(&patterns(&[dear]));
    accepted(&g, r#"{"p0":"x"}"#);
    refused(&g, r#"{"p0":""}"#, "pattern_mismatch", 7, "/p0");
    // ...does not fit three times.
    assert_eq!(
        over_limit(&patterns(&[dear, dear, dear])),
        ("max_pattern_work", "/properties/p2/pattern".to_owned())
    );
    // Accepted neighbours: what tool schemas write, many times over.
    let iso = r"^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z))$";
    let uuid = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
    let email = r"^[^@\s]+@[^@\s]+\.[^@\s]+$";
    let mut many = vec![iso, uuid, email, "^.{1,100}$"];
    many.extend([r"^[A-Z]{3}-\d{4}$"; 200]);
    let g = js(&patterns(&many));
    accepted(
        &g,
        r#"{"p0":"2024-02-29T12:30:00Z","p1":"0123abcd-0000-4000-8000-00000000abcd","p2":"a@b.pt","p3":"é","p4":"ABC-1234"}"#,
    );
    refused(&g, r#"{"p0":"2023-02-29"}"#, "pattern_mismatch", 16, "/p0");
    refused(&g, r#"{"p4":"ABC-12345"}"#, "pattern_mismatch", 15, "/p4");
}

#[test]
fn local_references_compile_once_and_recursion_is_bounded() {
    let g = js(
        r##"{"$defs":{"Node":{"type":"object","properties":{"v":{"type":"integer"},
        "kids":{"type":"array","items":{"$ref":"#/$defs/Node"}},
        "parent":{"anyOf":[{"$ref":"#/$defs/Node"},{"type":"null"}]}},"required":["v"]}},
        "$ref":"#/$defs/Node"}"##,
    );
    accepted(
        &g,
        r#"{"v":1,"kids":[{"v":2,"kids":[]},{"v":3,"parent":null}]}"#,
    );
    refused(
        &g,
        r#"{"v":1,"kids":[{"v":"2"}]}"#,
        "wrong_type",
        20,
        "/kids/0/v",
    );
    let nest = |n: usize| format!("{}null{}", r#"{"v":0,"parent":"#.repeat(n), "}".repeat(n));
    accepted(&g, &nest(16));
    refused(&g, &nest(17), "too_deep", 16 * 16, &"/parent".repeat(16));
    // The projection writes the cycle once, under $defs, and compiles again to the same digest.
    let p = std::str::from_utf8(g.projection()).unwrap();
    assert!(p.contains(r##""$ref":"#/$defs/r0""##), "{p}");
    let again = Grammar::compile_json_schema(g.projection()).unwrap();
    assert_eq!(again.digest(), g.digest());
    // A non-recursive reference is written inline: the definition's name is not in the digest.
    let a = js(
        r##"{"$defs":{"A":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/A"}},"type":"object"}"##,
    );
    let b = js(
        r##"{"$defs":{"B":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/B"}},"type":"object"}"##,
    );
    assert_eq!(a.digest(), b.digest());
    assert_eq!(
        js_err(r##"{"$ref":"#/$defs/none"}"##).0,
        "schema_invalid_keyword"
    );
    assert_eq!(
        js_err(r##"{"$ref":"https://example.com/s.json"}"##).0,
        "schema_invalid_keyword"
    );
    assert_eq!(
        js_err(r##"{"$defs":{"a":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}"##).0,
        "schema_invalid_keyword"
    );
}

#[test]
fn integer_bounds_of_any_size_are_exact() {
    let g =
        js(r#"{"type":"integer","minimum":18446744073709551615,"maximum":18446744073709551625}"#);
    accepted(&g, "18446744073709551620");
    refused(&g, "18446744073709551626", "above_maximum", 19, "");
    refused(&g, "18446744073709551614", "below_minimum", 19, "");
    refused(&g, "-1", "below_minimum", 0, "");
    // "2" can only grow past the maximum: impossible at its first digit.
    refused(&g, "2", "below_minimum", 0, "");
    let p = std::str::from_utf8(g.projection()).unwrap();
    assert!(p.contains(r#""minimum":18446744073709551615"#), "{p}");
    // Fractional and exclusive bounds become inclusive integers (same digest as the plain one).
    let x = js(r#"{"type":"integer","exclusiveMinimum":0,"maximum":9.5}"#);
    let y = js(r#"{"type":"integer","minimum":1,"maximum":9}"#);
    assert_eq!(x.digest(), y.digest());
    refused(&x, "0", "below_minimum", 0, "");
    accepted(&x, "9");
    refused(&x, "10", "above_maximum", 1, "");
    // A bound no document integer reaches is no bound on that side.
    let z = js(r#"{"type":"integer","maximum":1e300}"#);
    accepted(&z, &"9".repeat(60));
}

#[test]
fn decimal_bounds_finer_than_binary64_are_exact() {
    let g = js(r#"{"type":"number","exclusiveMinimum":0.1000000000000000000001,"maximum":0.3}"#);
    refused(&g, "0.1", "below_minimum", 3, "");
    refused(&g, "0.1000000000000000000001", "below_minimum", 24, "");
    accepted(&g, "0.10000000000000000000011");
    accepted(&g, "0.3");
    refused(&g, "0.30000000000000000001", "above_maximum", 22, "");
    let p = std::str::from_utf8(g.projection()).unwrap();
    assert!(
        p.contains(r#""exclusiveMinimum":1000000000000000000001e-22"#),
        "{p}"
    );
}

#[test]
fn min_items_and_min_properties_are_checked_at_the_close() {
    let g = js(
        r#"{"type":"object","minProperties":2,"properties":{"l":{"type":"array","minItems":2,"items":{"type":"integer"}}}}"#,
    );
    accepted(&g, r#"{"l":[1,2],"x":0}"#);
    refused(&g, r#"{"l":[1],"x":0}"#, "too_few_items", 7, "/l");
    refused(&g, r#"{"l":[1,2]}"#, "too_few_properties", 10, "");
    let a = js(r#"{"type":"array","minItems":1}"#);
    refused(&a, "[]", "too_few_items", 1, "");
    accepted(&a, r#"[{"any":["thing"]}]"#);
}

#[test]
fn one_schema_all_of_and_boolean_schemas() {
    let g = js(
        r#"{"type":"object","properties":{"u":{"allOf":[{"enum":["c","f"]}],"description":"unit"},"x":true}}"#,
    );
    accepted(&g, r#"{"u":"c","x":{"y":1}}"#);
    refused(&g, r#"{"u":"k"}"#, "value_not_allowed", 6, "/u");
    assert!(
        g.ignored_keywords()
            .iter()
            .any(|k| k.keyword == "description")
    );
    // Several schemas that are not object schemas to merge: refused, with the reason.
    assert_eq!(
        js_err(r#"{"allOf":[{},{}]}"#),
        ("schema_invalid_keyword".into(), Some("allOf".into()))
    );
    assert_eq!(
        js_err(r#"{"properties":{"a":false},"type":"object"}"#).0,
        "schema_invalid_keyword"
    );
}

#[test]
fn property_names_that_only_say_string_constrain_nothing() {
    let g = js(
        r#"{"type":"object","propertyNames":{"type":"string"},"additionalProperties":{"type":"integer"}}"#,
    );
    accepted(&g, r#"{"a":1}"#);
    let e = Grammar::compile_json_schema(br#"{"type":"object","propertyNames":{"maxLength":2}}"#)
        .unwrap_err();
    assert_eq!(
        (e.code(), e.keyword()),
        ("schema_unsupported_keyword", Some("propertyNames"))
    );
}

#[test]
fn identical_any_of_branches_are_one_branch() {
    // Refused as ambiguous before: two branches of one JSON type, though the same schema.
    let g = js(r#"{"anyOf":[{"type":"string","maxLength":3},{"type":"string","maxLength":3}]}"#);
    accepted(&g, r#""abc""#);
    refused(&g, r#""abcd""#, "string_too_long", 4, "");
    refused(&g, "1", "wrong_type", 0, "");
    // Annotations aside, and through objects, nested unions and references.
    js(r#"{"anyOf":[{"type":"string","title":"a"},{"type":"string","description":"b"}]}"#);
    let o = js(
        r##"{"$defs":{"P":{"type":"object","properties":{"n":{"type":"integer","maximum":3}},"required":["n"]}},
        "anyOf":[{"$ref":"#/$defs/P"},{"type":"object","properties":{"n":{"type":"integer","maximum":3}},"required":["n"]},{"type":"null"}]}"##,
    );
    accepted(&o, r#"{"n":3}"#);
    accepted(&o, "null");
    refused(&o, r#"{"n":4}"#, "above_maximum", 5, "/n");
    // Neighbours: branches that differ stay ambiguous; `oneOf` of identical branches matches
    // no value (a value matching one matches both), so it stays refused.
    assert_eq!(
        js_err(r#"{"anyOf":[{"type":"string","maxLength":3},{"type":"string","maxLength":4}]}"#).0,
        "schema_ambiguous_union"
    );
    assert_eq!(
        js_err(r#"{"oneOf":[{"type":"string"},{"type":"string"}]}"#).0,
        "schema_ambiguous_union"
    );
}

#[test]
fn a_schema_object_that_accepts_no_value_is_refused_at_compile_time() {
    for (schema, keyword, at) in [
        // Compiled before to a grammar that accepted nothing: no integer within
        // +-(2^53-1) is at most -(2^53+1).
        (
            r#"{"type":"integer","maximum":-9007199254740993}"#,
            "maximum",
            "",
        ),
        (
            r#"{"type":"integer","minimum":9007199254740993}"#,
            "maximum",
            "",
        ),
        (
            r#"{"type":"integer","minimum":1.5,"maximum":1.7}"#,
            "maximum",
            "",
        ),
        (
            r#"{"type":"integer","exclusiveMinimum":1,"exclusiveMaximum":2}"#,
            "maximum",
            "",
        ),
        (
            r#"{"type":"integer","minimum":1,"enum":[-1,0]}"#,
            "enum",
            "",
        ),
        (
            r#"{"type":"number","minimum":2,"maximum":1.5}"#,
            "maximum",
            "",
        ),
        (
            r#"{"type":"number","exclusiveMinimum":1,"maximum":1}"#,
            "maximum",
            "",
        ),
        (
            r#"{"type":"number","minimum":1,"exclusiveMaximum":1}"#,
            "exclusiveMaximum",
            "",
        ),
        (
            r#"{"type":"string","minLength":5,"maxLength":3}"#,
            "maxLength",
            "",
        ),
        (
            r#"{"type":"array","minItems":3,"maxItems":2}"#,
            "maxItems",
            "",
        ),
        (
            r#"{"type":"object","properties":{"a":{},"b":{}},"required":["a","b"],"maxProperties":1}"#,
            "maxProperties",
            "",
        ),
        (
            r#"{"type":"object","minProperties":2,"maxProperties":1}"#,
            "maxProperties",
            "",
        ),
        // Wherever it stands (an optional property, a type list).
        (
            r#"{"type":"object","properties":{"a":{"type":"string","minLength":2,"maxLength":1}}}"#,
            "maxLength",
            "/properties/a",
        ),
        (
            r#"{"type":["integer","null"],"maximum":-9007199254740993}"#,
            "maximum",
            "",
        ),
    ] {
        match Grammar::compile_json_schema(schema.as_bytes()) {
            Err(e @ StructuredError::Unsatisfiable { .. }) => {
                assert_eq!(e.code(), "schema_unsatisfiable", "{schema}");
                assert_eq!(e.keyword(), Some(keyword), "{schema}");
                let StructuredError::Unsatisfiable { at: got, .. } = e else {
                    unreachable!()
                };
                assert_eq!(got, at, "{schema}");
            }
            other => panic!("{schema}: {other:?}"),
        }
    }
    // Accepted neighbours: a range of one value, an open side, the bound at the edge.
    let g = js(r#"{"type":"integer","maximum":-9007199254740991}"#);
    accepted(&g, "-9007199254740991");
    refused(&g, "-9007199254740990", "above_maximum", 16, "");
    accepted(
        &js(r#"{"type":"integer","minimum":1.5,"maximum":2.7}"#),
        "2",
    );
    accepted(
        &js(r#"{"type":"number","exclusiveMinimum":1,"maximum":1.5}"#),
        "1.2",
    );
    accepted(
        &js(r#"{"type":"string","minLength":3,"maxLength":3}"#),
        r#""abc""#,
    );
    accepted(
        &js(r#"{"type":"array","minItems":2,"maxItems":2}"#),
        "[1,2]",
    );
    accepted(
        &js(
            r#"{"type":"object","properties":{"a":{},"b":{}},"required":["a","b"],"maxProperties":2}"#,
        ),
        r#"{"a":1,"b":2}"#,
    );
    // The subset keeps compiling them, as its vectors fix.
    assert!(Grammar::compile(br#"{"type":"string","minLength":5,"maxLength":3}"#).is_ok());
}

const DRAFT7: &str = "http://json-schema.org/draft-07/schema#";
const DRAFT2019: &str = "https://json-schema.org/draft/2019-09/schema";

fn with_dialect(uri: &str, rest: &str) -> String {
    format!(r#"{{"$schema":"{uri}",{rest}}}"#)
}

#[test]
fn prefix_items_judge_the_first_elements_and_items_the_rest() {
    let g = js(
        r#"{"type":"array","prefixItems":[{"type":"string"},{"type":"integer","minimum":0}],"items":{"type":"boolean"}}"#,
    );
    accepted(&g, r#"["a",1,true,false]"#);
    accepted(&g, r#"["a"]"#);
    accepted(&g, "[]");
    refused(&g, "[1]", "wrong_type", 1, "/0");
    refused(&g, r#"["a",-1]"#, "below_minimum", 6, "/1");
    refused(&g, r#"["a",1,2]"#, "wrong_type", 7, "/2");
    // `items: false`: nothing after the first ones (Pydantic's and Zod's tuples).
    let t = js(
        r#"{"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],"items":false,"minItems":2}"#,
    );
    accepted(&t, r#"["a",1]"#);
    refused(&t, r#"["a",1,2]"#, "too_many_items", 6, "");
    refused(&t, r#"["a"]"#, "too_few_items", 4, "");
    // Without `items`, later elements are free-form.
    accepted(
        &js(r#"{"type":"array","prefixItems":[{"type":"null"}]}"#),
        r#"[null,{"x":[1]},"y"]"#,
    );
    // The projection states them and compiles back to the same grammar.
    let p = String::from_utf8(t.projection().to_vec()).unwrap();
    assert!(
        p.contains(r#""prefixItems":[{"maxLength":4096,"type":"string"}"#),
        "{p}"
    );
    assert_eq!(
        Grammar::compile_json_schema(t.projection())
            .unwrap()
            .digest(),
        t.digest()
    );
    // Refused neighbours: an empty or non-array prefixItems; more than 256.
    assert_eq!(
        js_err(r#"{"type":"array","prefixItems":[]}"#),
        ("schema_invalid_keyword".into(), Some("prefixItems".into()))
    );
    let many = format!(
        r#"{{"type":"array","prefixItems":[{}]}}"#,
        vec!["{}"; 257].join(",")
    );
    assert_eq!(js_err(&many).0, "schema_over_limit");
    // `minItems` beyond what `items: false` allows accepts nothing.
    assert_eq!(
        js_err(r#"{"type":"array","prefixItems":[{}],"items":false,"minItems":2}"#).0,
        "schema_unsatisfiable"
    );
}

#[test]
fn draft_07_and_2019_09_schemas_compile_with_their_meanings() {
    // The `$schema` line zod-to-json-schema writes, with `definitions`: the same grammar (and
    // digest) as the 2020-12 spelling.
    let body = r##""type":"object","properties":{"p":{"$ref":"#/definitions/P"}},"definitions":{"P":{"type":"string","maxLength":3}},"required":["p"],"additionalProperties":false"##;
    let d7 = js(&with_dialect(DRAFT7, body));
    let d20 = js(&format!("{{{body}}}"));
    assert_eq!(d7.digest(), d20.digest());
    accepted(&d7, r#"{"p":"abc"}"#);
    refused(&d7, r#"{"p":"abcd"}"#, "string_too_long", 9, "/p");
    for uri in [
        "http://json-schema.org/draft-07/schema",
        "https://json-schema.org/draft-07/schema#",
        DRAFT2019,
        "https://json-schema.org/draft/2019-09/schema#",
        "https://json-schema.org/draft/2020-12/schema#",
    ] {
        js(&with_dialect(uri, r#""type":"null""#));
    }
    // Array-form `items` is draft-07's and 2019-09's prefixItems; `additionalItems` the rest.
    for uri in [DRAFT7, DRAFT2019] {
        let t = js(&with_dialect(
            uri,
            r#""type":"array","items":[{"type":"string"},{"type":"integer"}],"additionalItems":false"#,
        ));
        accepted(&t, r#"["a",1]"#);
        refused(&t, r#"["a",1,2]"#, "too_many_items", 6, "");
        refused(&t, "[1]", "wrong_type", 1, "/0");
        let rest = js(&with_dialect(
            uri,
            r#""type":"array","items":[{"type":"string"}],"additionalItems":{"type":"integer"}"#,
        ));
        accepted(&rest, r#"["a",1,2]"#);
        refused(&rest, r#"["a",1,"b"]"#, "wrong_type", 7, "/2");
        // The same as 2020-12's prefixItems.
        assert_eq!(
            rest.digest(),
            js(r#"{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"}}"#)
                .digest()
        );
        // Beside one `items` schema, `additionalItems` does nothing (listed as ignored).
        let one = js(&with_dialect(
            uri,
            r#""type":"array","items":{"type":"integer"},"additionalItems":false"#,
        ));
        accepted(&one, "[1,2,3]");
        assert!(
            one.ignored_keywords()
                .iter()
                .any(|k| k.keyword == "additionalItems")
        );
        // Refused neighbours: 2020-12's prefixItems is not this dialect's vocabulary.
        assert_eq!(
            js_err(&with_dialect(uri, r#""type":"array","prefixItems":[{}]"#)),
            (
                "schema_unsupported_keyword".into(),
                Some("prefixItems".into())
            )
        );
        // `dependencies` in its schema form (dependentSchemas) is not implemented (2019-09:
        // not its vocabulary at all).
        assert_eq!(
            js_err(&with_dialect(
                uri,
                r#""type":"object","properties":{"a":{}},"dependencies":{"a":{"required":["b"]}}"#
            )),
            (
                "schema_unsupported_keyword".into(),
                Some("dependencies".into())
            )
        );
    }
    // 2020-12 reads array-form items as an error and additionalItems as not its own.
    assert_eq!(
        js_err(r#"{"type":"array","items":[{"type":"string"}]}"#),
        ("schema_invalid_keyword".into(), Some("items".into()))
    );
    // Other dialects are refused with their own code.
    for uri in [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "https://json-schema.org/draft/2021-01/schema",
        "http://json-schema.org/schema#",
        "https://example.com/my-meta",
    ] {
        assert_eq!(
            js_err(&with_dialect(uri, r#""type":"null""#)),
            ("schema_unsupported_dialect".into(), Some("$schema".into())),
            "{uri}"
        );
    }
    // `$schema` below the root is still refused.
    assert_eq!(
        js_err(&format!(
            r#"{{"type":"array","items":{{"$schema":"{DRAFT7}","type":"null"}}}}"#
        ))
        .0,
        "schema_unsupported_keyword"
    );
}

#[test]
fn counts_written_as_integer_valued_numbers_are_those_integers() {
    // JSON Schema takes `maxLength: 2.0`; the subset did not, nor did this profile.
    let g = js(r#"{"type":"string","maxLength":2.0,"minLength":1e0}"#);
    assert_eq!(
        g.digest(),
        js(r#"{"type":"string","maxLength":2,"minLength":1}"#).digest()
    );
    accepted(&g, r#""ab""#);
    refused(&g, r#""abc""#, "string_too_long", 3, "");
    refused(&g, r#""""#, "string_too_short", 1, "");
    let a = js(r#"{"type":"array","maxItems":20e-1,"minItems":1.0}"#);
    accepted(&a, "[1,2]");
    refused(&a, "[1,2,3]", "too_many_items", 4, "");
    let o = js(r#"{"type":"object","maxProperties":1.0,"minProperties":0.0}"#);
    refused(&o, r#"{"a":1,"b":2}"#, "too_many_properties", 6, "");
    // Refused neighbours: a fraction, a negative, beyond 2^32-1; the subset stays strict.
    for s in [
        r#"{"type":"string","maxLength":2.5}"#,
        r#"{"type":"string","maxLength":-1.0}"#,
        r#"{"type":"string","maxLength":5e9}"#,
    ] {
        assert_eq!(
            js_err(s),
            ("schema_invalid_keyword".into(), Some("maxLength".into())),
            "{s}"
        );
    }
    assert_eq!(
        Grammar::compile(br#"{"type":"string","maxLength":2.0}"#)
            .unwrap_err()
            .code(),
        "schema_invalid_keyword"
    );
}

/// `schema` compiles, and each document gets `jsonschema`'s answer (the peer, whole
/// documents), in every chunking.
fn agrees_with_jsonschema(schema: &str, docs: &[&str]) -> Arc<Grammar> {
    let g = js(schema);
    let peer = jsonschema::validator_for(&serde_json::from_str(schema).unwrap()).unwrap();
    for d in docs {
        let want = peer.is_valid(&serde_json::from_str(d).unwrap());
        let got = outcome(&g, d.as_bytes());
        assert_eq!(got.is_ok(), want, "{schema}\n{d}: {got:?}");
    }
    g
}

#[test]
fn all_of_object_schemas_merge_where_that_is_their_meaning() {
    // Composition as OpenAPI and Zod's .and() write it: a base by reference and more.
    let schema = r##"{"$defs":{"Base":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}},
      "allOf":[{"$ref":"#/$defs/Base"},{"type":"object","properties":{"name":{"type":"string","maxLength":3}},"required":["name"],"maxProperties":3}]}"##;
    let g = agrees_with_jsonschema(
        schema,
        &[
            r#"{"id":1,"name":"ab"}"#,
            r#"{"id":1,"name":"ab","x":null}"#,
            r#"{"id":1}"#,
            r#"{"name":"ab"}"#,
            r#"{"id":"1","name":"ab"}"#,
            r#"{"id":1,"name":"abcd"}"#,
            r#"{"id":1,"name":"ab","x":1,"y":2}"#,
        ],
    );
    refused(
        &g,
        r#"{"id":1,"name":"abcd"}"#,
        "string_too_long",
        19,
        "/name",
    );
    refused(&g, r#"{"name":"ab"}"#, "missing_property", 12, "");
    // The same grammar as the merged object written out.
    assert_eq!(
        g.digest(),
        js(r#"{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string","maxLength":3}},"required":["id","name"],"maxProperties":3}"#)
            .digest()
    );
    // Closed parts that declare every property; the holder's own keywords are a part too.
    agrees_with_jsonschema(
        r#"{"type":"object","properties":{"a":{"type":"string"}},"allOf":[{"properties":{"a":{"type":"string"},"b":{"type":"null"}},"additionalProperties":false},{"required":["b"]}]}"#,
        &[
            r#"{"a":"x","b":null}"#,
            r#"{"b":null}"#,
            r#"{"a":"x"}"#,
            r#"{"a":"x","b":null,"c":1}"#,
            r#"{"a":1,"b":null}"#,
        ],
    );
    // Refused with a reason where a merge is not the meaning.
    for (schema, why) in [
        (
            r#"{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false},{"type":"object","properties":{"b":{"type":"string"}}}]}"#,
            "closed allOf branch",
        ),
        (
            r#"{"allOf":[{"type":"object","properties":{"a":{"type":"string"}}},{"type":"object","properties":{"a":{"type":"string","maxLength":2}}}]}"#,
            "different schemas",
        ),
        (
            r#"{"allOf":[{"properties":{"a":{"type":"string"}}},{"required":["a"]}]}"#,
            "none of which states",
        ),
        (
            r#"{"allOf":[{"type":"string"},{"maxLength":3}]}"#,
            "not all object schemas",
        ),
        (
            r#"{"allOf":[{"type":"object"},{"type":"object","anyOf":[{"required":["a"]}]}]}"#,
            "other than",
        ),
        (r#"{"allOf":[{"type":"object"},true]}"#, "boolean schema"),
    ] {
        let e = Grammar::compile_json_schema(schema.as_bytes()).unwrap_err();
        assert_eq!(
            (e.code(), e.keyword()),
            ("schema_invalid_keyword", Some("allOf")),
            "{schema}"
        );
        assert!(e.to_string().contains(why), "{schema}: {e}");
    }
}

#[test]
fn unique_items_false_constrains_nothing() {
    let g = js(r#"{"type":"array","items":{"type":"integer"},"uniqueItems":false}"#);
    accepted(&g, "[1,1]");
    assert_eq!(
        g.digest(),
        js(r#"{"type":"array","items":{"type":"integer"}}"#).digest()
    );
    // Its neighbour, `true`, refuses a repeat; it is in the digest.
    let t = js(r#"{"type":"array","items":{"type":"integer"},"uniqueItems":true}"#);
    refused(&t, "[1,1]", "duplicate_item", 4, "");
    assert_ne!(g.digest(), t.digest());
    // Anything but a boolean is refused.
    assert_eq!(
        js_err(r#"{"type":"array","items":{"type":"integer"},"uniqueItems":1}"#),
        ("schema_invalid_keyword".into(), Some("uniqueItems".into()))
    );
    // An array keyword: refused beside another type, as every keyword of another type.
    assert_eq!(
        js_err(r#"{"type":"string","uniqueItems":true}"#).1,
        Some("uniqueItems".into())
    );
}

/// `uniqueItems: true`: a repeated element is refused at the `,` or `]` that ends it
/// (`duplicate_item`, path the array), equality as JSON Schema's (numbers by value, objects
/// whatever their member order, strings after their escapes), agreeing with `jsonschema` on
/// whole documents and in every chunking (`outcome` splits every way).
#[test]
fn unique_items_refuses_a_repeated_element_where_it_ends() {
    let strings = r#"{"type":"array","items":{"type":"string"},"uniqueItems":true}"#;
    let g = agrees_with_jsonschema(
        strings,
        &[
            r#"[]"#,
            r#"["a"]"#,
            r#"["a","b","ab"]"#,
            r#"["a","b","a"]"#,
            r#"["a" , "a"]"#,
            r#"["\u0061","a"]"#,
            r#"["é","\u00e9"]"#,
            r#"["a\"","a\u0022"]"#,
            r#"["",""]"#,
            r#"["","x"]"#,
        ],
    );
    refused(&g, r#"["a","b","a"]"#, "duplicate_item", 12, "");
    refused(&g, r#"["a" , "a" ]"#, "duplicate_item", 11, "");
    refused(&g, r#"["x","\u0078",1]"#, "duplicate_item", 13, "");
    accepted(&g, r#"["a","b","c"]"#);
    // Any values: numbers by value, objects in any member order, arrays in order.
    let any = r#"{"type":"array","uniqueItems":true}"#;
    let g = agrees_with_jsonschema(
        any,
        &[
            r#"[1,1.0]"#,
            r#"[1,"1"]"#,
            r#"[1,true]"#,
            r#"[0,false]"#,
            r#"[null,"null"]"#,
            r#"[100,1e2]"#,
            r#"[-0,0]"#,
            r#"[0.5,5e-1]"#,
            r#"[{"a":1,"b":2},{"b":2,"a":1}]"#,
            r#"[{"a":1,"b":2},{"b":2,"a":1.5}]"#,
            r#"[{"a":{"c":[1,{"d":null}]}},{"a":{"c":[1,{"d":null}]}}]"#,
            r#"[[1,2],[2,1]]"#,
            r#"[[1,2],[1,2]]"#,
            r#"[[],{}]"#,
            r#"[[],[]]"#,
            r#"[{},{}]"#,
            r#"[{"a":"b"},{"ab":""}]"#,
            r#"[true,false,null,0,"",[],{}]"#,
        ],
    );
    refused(
        &g,
        r#"[{"a":1,"b":2},{"b":2,"a":1}]"#,
        "duplicate_item",
        28,
        "",
    );
    refused(&g, "[1,2,3,1.0]", "duplicate_item", 10, "");
    // Exact: 1 and a number binary64 rounds to 1 differ (a stated deviation: jsonschema reads
    // numbers as binary64).
    accepted(&g, "[1,1.0000000000000000000001]");
    // Nested: the path is the array that holds the repeat; an inner array's repeat is its own.
    let nested = r#"{"type":"object","properties":{"m":{"type":"array","items":{"type":"array","items":{"type":"integer"},"uniqueItems":true},"uniqueItems":true}}}"#;
    let g = agrees_with_jsonschema(
        nested,
        &[
            r#"{"m":[[1,2],[2,1]]}"#,
            r#"{"m":[[1,2],[1,2]]}"#,
            r#"{"m":[[1,1]]}"#,
            r#"{"m":[[1],[2],[3,4],[1]]}"#,
        ],
    );
    refused(&g, r#"{"m":[[1,2],[1,2]]}"#, "duplicate_item", 17, "/m");
    refused(&g, r#"{"m":[[3],[1,1]]}"#, "duplicate_item", 14, "/m/1");
    // The first elements of a prefixItems array count too, and a union element read side by
    // side is one element.
    let g = agrees_with_jsonschema(
        r#"{"type":"array","prefixItems":[{"type":"integer"}],"items":{"anyOf":[{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"integer"}},"required":["b"]},{"type":"integer"}]},"uniqueItems":true}"#,
        &[
            "[1,2]",
            "[1,1]",
            r#"[1,{"a":1},{"a":1}]"#,
            r#"[1,{"a":1},{"b":1}]"#,
            r#"[1,{"b":1,"c":2},{"c":2,"b":1}]"#,
        ],
    );
    refused(&g, "[1,1]", "duplicate_item", 4, "");
    // Inside a branch read side by side: the branch's array judges its own elements.
    let g = agrees_with_jsonschema(
        r#"{"anyOf":[{"type":"object","properties":{"t":{"type":"array","items":{"type":"string"},"uniqueItems":true}},"required":["t"]},{"type":"object","properties":{"u":{"type":"integer"}},"required":["u"]}]}"#,
        &[
            r#"{"t":["a","b"]}"#,
            r#"{"t":["a","a"]}"#,
            r#"{"u":1}"#,
            r#"{"u":1,"t":["a","a"]}"#,
        ],
    );
    // The branch that lived longest reports: the other one, at the closing brace.
    refused(&g, r#"{"t":["a","a"]}"#, "missing_property", 14, "");
    accepted(&g, r#"{"t":["a","b"]}"#);
}

/// The chunking property on generated arrays with repeats: every split of the document gives
/// the answer of the whole, which is `jsonschema`'s.
#[test]
fn unique_items_agrees_with_jsonschema_on_generated_arrays_in_every_split() {
    let schema = r#"{"type":"array","uniqueItems":true,"maxItems":12}"#;
    let g = js(schema);
    let peer = jsonschema::validator_for(&serde_json::from_str(schema).unwrap()).unwrap();
    let atoms = [
        "1",
        "1.0",
        "2",
        "-0",
        "0",
        "true",
        "false",
        "null",
        r#""a""#,
        r#""\u0061""#,
        r#""b""#,
        "[]",
        "{}",
        "[1]",
        "[1.0]",
        r#"{"k":1}"#,
        r#"{"k":1,"j":[2]}"#,
        r#"{"j":[2.0],"k":1}"#,
    ];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    let (mut refused_n, mut accepted_n) = (0, 0);
    for _ in 0..300 {
        let len = next(6);
        let elems: Vec<&str> = (0..len).map(|_| atoms[next(atoms.len())]).collect();
        let doc = format!("[{}]", elems.join(if next(2) == 0 { "," } else { " , " }));
        let want = peer.is_valid(&serde_json::from_str(&doc).unwrap());
        let got = outcome(&g, doc.as_bytes());
        assert_eq!(got.is_ok(), want, "{doc}: {got:?}");
        if let Err(r) = got {
            assert_eq!(
                (r.code.as_str(), r.path.as_str()),
                ("duplicate_item", ""),
                "{doc}"
            );
            refused_n += 1;
        } else {
            accepted_n += 1;
        }
    }
    assert!(
        refused_n > 50 && accepted_n > 50,
        "{refused_n} {accepted_n}"
    );
}

#[test]
fn dependent_required_and_draft_07_dependencies_require_the_named_properties() {
    let body = r#""type":"object","properties":{"card":{"type":"string"},"cvv":{"type":"string"},"zip":{"type":"string"}}"#;
    let docs = [
        r#"{"card":"1","cvv":"2","zip":"3"}"#,
        r#"{"card":"1"}"#,
        r#"{"card":"1","cvv":"2"}"#,
        r#"{"zip":"3"}"#,
        r#"{}"#,
    ];
    let g = agrees_with_jsonschema(
        &format!(r#"{{{body},"dependentRequired":{{"card":["cvv","zip"]}}}}"#),
        &docs,
    );
    refused(&g, r#"{"card":"1","cvv":"2"}"#, "missing_property", 21, "");
    let d7 = agrees_with_jsonschema(
        &with_dialect(
            DRAFT7,
            &format!(r#"{body},"dependencies":{{"card":["cvv","zip"]}}"#),
        ),
        &docs,
    );
    // The same grammar and digest in both spellings; the projection writes dependentRequired.
    assert_eq!(d7.digest(), g.digest());
    let p = String::from_utf8(g.projection().to_vec()).unwrap();
    assert!(
        p.contains(r#""dependentRequired":{"card":["cvv","zip"]}"#),
        "{p}"
    );
    assert_eq!(
        Grammar::compile_json_schema(g.projection())
            .unwrap()
            .digest(),
        g.digest()
    );
    // Refused neighbours: each keyword outside its dialects; an undeclared name; a repeat.
    assert_eq!(
        js_err(&format!(r#"{{{body},"dependencies":{{"card":["cvv"]}}}}"#)),
        (
            "schema_unsupported_keyword".into(),
            Some("dependencies".into())
        )
    );
    assert_eq!(
        js_err(&with_dialect(
            DRAFT7,
            &format!(r#"{body},"dependentRequired":{{"card":["cvv"]}}"#)
        )),
        (
            "schema_unsupported_keyword".into(),
            Some("dependentRequired".into())
        )
    );
    assert_eq!(
        js_err(&format!(
            r#"{{{body},"dependentRequired":{{"card":["pin"]}}}}"#
        )),
        (
            "schema_invalid_keyword".into(),
            Some("dependentRequired".into())
        )
    );
    assert_eq!(
        js_err(&format!(
            r#"{{{body},"dependentRequired":{{"card":["cvv","cvv"]}}}}"#
        )),
        (
            "schema_invalid_keyword".into(),
            Some("dependentRequired".into())
        )
    );
}
