//! A whole toolset as one grammar (`spec/STRUCTURED-OUTPUT.md`, "Toolsets"): routing by name
//! as the bytes arrive, arguments judged by the named tool's schema, refused tools named.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use common::*;
use jouleclaw_structured::*;

/// A `tools/list` result as MCP servers built with the TypeScript SDK publish it (zod-to-json-
/// schema's draft-07 line, `definitions`, a tool whose schema this profile refuses).
const MCP: &str = r##"{"tools":[
 {"name":"read_file","description":"Read a file","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"number","description":"first N lines"}},"required":["path"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}},
 {"name":"read_multiple_files","inputSchema":{"type":"object","properties":{"paths":{"type":"array","items":{"type":"string"}}},"required":["paths"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}},
 {"name":"edit_file","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"edits":{"type":"array","items":{"$ref":"#/definitions/Edit"}},"dryRun":{"type":"boolean","default":false}},"required":["path","edits"],"additionalProperties":false,"definitions":{"Edit":{"type":"object","properties":{"oldText":{"type":"string"},"newText":{"type":"string"}},"required":["oldText","newText"],"additionalProperties":false}},"$schema":"http://json-schema.org/draft-07/schema#"}},
 {"name":"move_file","inputSchema":{"type":"object","properties":{"source":{"type":"string"},"destination":{"type":"string"}},"required":["source","destination"],"not":{"required":["x"]},"$schema":"http://json-schema.org/draft-07/schema#"}},
 {"name":"list_allowed_directories","inputSchema":{"type":"object","properties":{},"$schema":"http://json-schema.org/draft-07/schema#"}}
]}"##;

fn mcp() -> (Toolset, Arc<Grammar>) {
    let t = Toolset::compile(MCP.as_bytes(), &ToolsetOptions::default()).unwrap();
    let g = Arc::new(t.grammar().clone());
    (t, g)
}

#[test]
fn a_call_is_routed_by_its_name_and_judged_by_that_tool() {
    let (t, g) = mcp();
    assert_eq!(
        t.tools(),
        [
            "read_file",
            "read_multiple_files",
            "edit_file",
            "list_allowed_directories"
        ]
    );
    // Valid calls, whole and in every chunking.
    accepted(
        &g,
        r#"{"name":"read_file","arguments":{"path":"/a","head":3}}"#,
    );
    accepted(
        &g,
        r#"{"name":"read_multiple_files","arguments":{"paths":["/a","/b"]}}"#,
    );
    accepted(
        &g,
        r#"{"name":"edit_file","arguments":{"path":"/a","edits":[{"oldText":"x","newText":"y"}],"dryRun":true}}"#,
    );
    accepted(&g, r#"{"name":"list_allowed_directories","arguments":{}}"#);
    // An unknown name fails at the byte that leaves every name: "read_" continues two names,
    // "read_x" none.
    refused(
        &g,
        r#"{"name":"read_xyz","arguments":{}}"#,
        "unknown_tag",
        14,
        "/name",
    );
    refused(
        &g,
        r#"{"name":"move_file","arguments":{}}"#,
        "unknown_tag",
        9,
        "/name",
    );
    // A name that is a prefix of another is refused at its closing quote.
    refused(
        &g,
        r#"{"name":"read","arguments":{}}"#,
        "unknown_tag",
        13,
        "/name",
    );
    // Off-schema arguments, with the path below /arguments.
    refused(
        &g,
        r#"{"name":"read_file","arguments":{"path":1}}"#,
        "wrong_type",
        40,
        "/arguments/path",
    );
    refused(
        &g,
        r#"{"name":"edit_file","arguments":{"path":"/a","edits":[{"oldText":"x"}]}}"#,
        "missing_property",
        68,
        "/arguments/edits/0",
    );
    refused(
        &g,
        r#"{"name":"read_file","arguments":{"path":"/a","mode":1}}"#,
        "unknown_property",
        46,
        "/arguments",
    );
    refused(
        &g,
        r#"{"name":"read_file","arguments":{"head":3}}"#,
        "missing_property",
        41,
        "/arguments",
    );
    // The name comes first (the tag rule), and the call object is closed.
    refused(
        &g,
        r#"{"arguments":{},"name":"read_file"}"#,
        "tag_not_first",
        2,
        "",
    );
    refused(
        &g,
        r#"{"name":"read_file","arguments":{"path":"/a"},"id":1}"#,
        "unknown_property",
        45,
        "",
    );
    refused(&g, r#"{"name":"read_file"}"#, "missing_property", 19, "");
}

#[test]
fn a_refused_tool_is_named_with_its_code_or_refuses_the_toolset() {
    let (t, _) = mcp();
    assert_eq!(t.refused().len(), 1);
    let r = &t.refused()[0];
    assert_eq!(
        (r.name.as_str(), r.code),
        ("move_file", "schema_unsupported_keyword")
    );
    assert!(r.message.contains("\"not\""), "{}", r.message);
    let strict = Toolset::compile(
        MCP.as_bytes(),
        &ToolsetOptions {
            strict: true,
            ..ToolsetOptions::default()
        },
    )
    .unwrap_err();
    assert_eq!(strict.code(), "toolset_tool_refused");
    let StructuredError::ToolRefused { name, source } = strict else {
        panic!()
    };
    assert_eq!(
        (name.as_str(), source.code()),
        ("move_file", "schema_unsupported_keyword")
    );
    // Its neighbour: without the refused tool, strict compiles the same grammar.
    let without: String = MCP
        .lines()
        .filter(|l| !l.contains("move_file"))
        .collect::<Vec<_>>()
        .join("\n");
    let s = Toolset::compile(
        without.as_bytes(),
        &ToolsetOptions {
            strict: true,
            ..ToolsetOptions::default()
        },
    )
    .unwrap();
    assert_eq!(s.grammar().digest(), t.grammar().digest());
    assert!(s.refused().is_empty());
}

#[test]
fn the_digest_covers_the_whole_toolset() {
    let (t, _) = mcp();
    // Another tool's schema changes it; whitespace and the JSON-RPC envelope do not.
    let changed = MCP.replace(
        r#""paths":{"type":"array""#,
        r#""paths":{"type":"array","maxItems":9"#,
    );
    assert_ne!(
        Toolset::compile(changed.as_bytes(), &ToolsetOptions::default())
            .unwrap()
            .grammar()
            .digest(),
        t.grammar().digest()
    );
    let rpc = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#,
        MCP.replace('\n', "")
    );
    assert_eq!(
        Toolset::compile(rpc.as_bytes(), &ToolsetOptions::default())
            .unwrap()
            .grammar()
            .digest(),
        t.grammar().digest()
    );
}

#[test]
fn openai_tools_arrays_compile_too() {
    let tools = r##"[
      {"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"enum":["c","f"]}},"required":["city"],"additionalProperties":false},"strict":true}},
      {"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{"tz":{"type":"string"}}}}},
      {"type":"function","name":"get_date","parameters":{"type":"object","properties":{"$defs":{"type":"string"}},"$defs":{"D":{"type":"integer"}},"required":["$defs"]}}
    ]"##;
    let t = Toolset::compile(tools.as_bytes(), &ToolsetOptions::default()).unwrap();
    assert_eq!(t.tools(), ["get_weather", "get_time", "get_date"]);
    let g = Arc::new(t.into_grammar());
    accepted(
        &g,
        r#"{"name":"get_weather","arguments":{"city":"Porto","unit":"c"}}"#,
    );
    accepted(
        &g,
        r#"{"name":"get_time","arguments":{"tz":"UTC","x":[1]}}"#,
    );
    accepted(&g, r#"{"name":"get_date","arguments":{"$defs":"x"}}"#);
    refused(
        &g,
        r#"{"name":"get_weather","arguments":{"city":"Porto","unit":"k"}}"#,
        "value_not_allowed",
        58,
        "/arguments/unit",
    );
    refused(&g, r#"{"name":"get_x"#, "unknown_tag", 13, "/name");
    // A one-tool toolset routes too (the name is then the only value allowed).
    let one = Toolset::compile(
        br#"[{"type":"function","function":{"name":"ping"}}]"#,
        &ToolsetOptions::default(),
    )
    .unwrap();
    let g = Arc::new(one.into_grammar());
    accepted(&g, r#"{"name":"ping","arguments":{}}"#);
    refused(
        &g,
        r#"{"name":"pong","arguments":{}}"#,
        "value_not_allowed",
        10,
        "/name",
    );
}

#[test]
fn what_is_not_a_toolset_is_refused() {
    for (text, code) in [
        (r#"{"tools":{}}"#, "toolset_invalid"),
        (r#"{"type":"object"}"#, "toolset_invalid"),
        ("[]", "toolset_invalid"),
        (
            r#"[{"type":"function","function":{"description":"x"}}]"#,
            "toolset_invalid",
        ),
        (
            r#"{"tools":[{"name":"a","inputSchema":{}},{"name":"a","inputSchema":{}}]}"#,
            "toolset_invalid",
        ),
        (
            r#"{"tools":[{"name":"a","inputSchema":{"not":{}}}]}"#,
            "toolset_invalid",
        ),
        (
            r#"{"tools":[{"name":"a","inputSchema":{}},]}"#,
            "schema_not_json",
        ),
        (
            r#"{"tools":[{"name":"a","inputSchema":{"$schema":"http://json-schema.org/draft-04/schema#"}}]}"#,
            "toolset_invalid",
        ),
    ] {
        let e = Toolset::compile(text.as_bytes(), &ToolsetOptions::default()).unwrap_err();
        assert_eq!(e.code(), code, "{text}: {e}");
    }
}
