//! Real MCP servers' tool lists as toolsets (`spec/STRUCTURED-OUTPUT.md`, "Toolsets"): the
//! file `JOULECLAW_MCP_TOOLS` names is written at test time by `tests/corpus/mcp_tools.mjs`
//! from servers installed from npm (`.ci/suites/40-structured.sh`), never copied into the
//! repository. For each server: the toolset compiles (refused tools named), and for each kept
//! tool a valid call, a call of an unknown name and off-schema arguments get the answer the
//! `jsonschema` crate gives the arguments, whole and in every chunking, the unknown name at
//! the byte that leaves every name.

use std::sync::Arc;

use crate::common::*;
use crate::mcp::{valid, with_optional};
use jouleclaw_structured::*;
use serde_json::{Value, json};

fn call(name: &str, args: &Value) -> String {
    format!(r#"{{"name":{},"arguments":{}}}"#, json!(name), args)
}

/// At least this share of the corpus's distinct input schemas compile as written (measured:
/// spec/STRUCTURED-OUTPUT.md, "What this does not claim": 245 of 246, 99.6 %).
const MCP_MIN_COMPILED_PERCENT: usize = 99;

/// `args` with each of its members in turn given a value of another JSON type, and with an
/// undeclared member added.
fn mutations(args: &Value) -> Vec<Value> {
    let Value::Object(m) = args else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in m {
        let mut x = m.clone();
        x.insert(
            k.clone(),
            if v.is_string() {
                json!(12345)
            } else {
                json!("text")
            },
        );
        out.push(Value::Object(x));
    }
    let mut x = m.clone();
    x.insert("~extra".into(), json!(1));
    out.push(Value::Object(x));
    out
}

/// The grammar's answer for `name`'s arguments `args` agrees with the peer's: accepted when
/// the peer finds no error, else refused, a schema-class refusal with a path the peer
/// reports (below `/arguments`), in every chunking.
fn agrees(g: &Arc<Grammar>, peer: &jsonschema::Validator, name: &str, args: &Value) -> bool {
    let doc = call(name, args);
    let got = outcome(g, doc.as_bytes());
    let paths: Vec<String> = peer
        .iter_errors(args)
        .map(|e| format!("/arguments{}", e.instance_path.as_str()))
        .collect();
    match got {
        Ok(()) => paths.is_empty(),
        Err(r) if r.code.class() == RefusalClass::Schema => paths.contains(&r.path),
        Err(_) => false,
    }
}

#[test]
#[ignore = "reads the MCP corpus .ci/suites/40-structured.sh writes (JOULECLAW_MCP_TOOLS)"]
fn real_mcp_servers_tool_lists_route_and_judge_calls() {
    let path = std::env::var("JOULECLAW_MCP_TOOLS").expect("JOULECLAW_MCP_TOOLS");
    let corpus: serde_json::Map<String, Value> =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    assert!(!corpus.is_empty());
    // The compile rate as written: each distinct input schema alone.
    let mut distinct = std::collections::BTreeSet::new();
    let mut refusals = std::collections::BTreeMap::<(String, String), usize>::new();
    let mut compiled = 0;
    for list in corpus.values() {
        for t in list["tools"].as_array().unwrap() {
            let text = serde_json::to_string(&t["inputSchema"]).unwrap();
            if !distinct.insert(text.clone()) {
                continue;
            }
            match Grammar::compile_json_schema(text.as_bytes()) {
                Ok(_) => compiled += 1,
                Err(e) => {
                    let kw = e.keyword().unwrap_or("").to_owned();
                    eprintln!("refused as written: {}: {e}", t["name"]);
                    *refusals.entry((e.code().to_owned(), kw)).or_default() += 1;
                }
            }
        }
    }
    let n = distinct.len();
    let (mut tools_seen, mut kept_total, mut calls) = (0, 0, 0);
    let (mut mutated, mut disagree) = (0, Vec::new());
    for (server, list) in &corpus {
        let text = serde_json::to_vec(list).unwrap();
        let set = Toolset::compile(&text, &ToolsetOptions::default())
            .unwrap_or_else(|e| panic!("{server}: {e}"));
        let listed = list["tools"].as_array().unwrap();
        tools_seen += listed.len();
        kept_total += set.tools().len();
        for r in set.refused() {
            eprintln!("{server}: {} refused: {} ({})", r.name, r.code, r.message);
        }
        let g = Arc::new(set.grammar().clone());
        let names: Vec<&str> = set.tools().iter().map(String::as_str).collect();
        // An unknown name: refused at the byte that leaves every tool's name.
        let unknown = "zz_not_a_tool";
        let leave = (1..=unknown.len())
            .find(|&i| !names.iter().any(|n| n.starts_with(&unknown[..i])))
            .unwrap()
            - 1;
        let code = if names.len() == 1 {
            "value_not_allowed"
        } else {
            "unknown_tag"
        };
        refused(
            &g,
            &call(unknown, &json!({})),
            code,
            9 + leave as u64,
            "/name",
        );
        for t in listed {
            let name = t["name"].as_str().unwrap();
            if !names.contains(&name) {
                continue;
            }
            let schema = &t["inputSchema"];
            let peer = jsonschema::validator_for(schema).unwrap();
            let prefix = format!(r#"{{"name":{},"arguments":"#, json!(name));
            // Off-schema: arguments of another type.
            assert!(!peer.is_valid(&json!([])));
            refused(
                &g,
                &call(name, &json!([])),
                "wrong_type",
                prefix.len() as u64,
                "/arguments",
            );
            calls += 1;
            let Some(args) = valid(schema, schema, 0) else {
                continue;
            };
            if !peer.is_valid(&args) {
                continue;
            }
            accepted(&g, &call(name, &args));
            calls += 1;
            // Every optional property the generator can make, and mutations of both: each
            // member of another type, an undeclared member.
            let fuller = with_optional(schema, schema, &args).filter(|x| peer.is_valid(x));
            if let Some(x) = &fuller {
                accepted(&g, &call(name, x));
                calls += 1;
            }
            for base in std::iter::once(&args).chain(fuller.as_ref()) {
                for m in mutations(base) {
                    mutated += 1;
                    if !agrees(&g, &peer, name, &m) {
                        disagree.push(format!("{server} {name}: {m}"));
                    }
                }
            }
            // Each required property removed in turn: the peer's answer, at `}` with the path.
            if let Value::Object(m) = &args {
                for k in m.keys() {
                    let mut fewer = m.clone();
                    fewer.remove(k);
                    let fewer = Value::Object(fewer);
                    let doc = call(name, &fewer);
                    let got = outcome(&g, doc.as_bytes());
                    assert_eq!(
                        got.is_ok(),
                        peer.is_valid(&fewer),
                        "{server} {doc}: {got:?}"
                    );
                    calls += 1;
                }
            }
        }
    }
    eprintln!(
        "mcp corpus: {} servers, {tools_seen} tools, {n} distinct input schemas, {compiled} \
         compiled as written ({:.1} %), refused: {refusals:?}; as toolsets: {kept_total} tools \
         kept; {calls} calls agree with jsonschema (valid, unknown name, wrong type, missing \
         property), {mutated} mutated calls (a member of another type, an undeclared member): \
         {} disagree",
        corpus.len(),
        100.0 * compiled as f64 / n as f64,
        disagree.len(),
    );
    assert!(disagree.is_empty(), "{disagree:#?}");
    assert!(calls > 0 && mutated > 0);
    assert!(
        compiled * 100 >= n * MCP_MIN_COMPILED_PERCENT,
        "{compiled} of {n} compiled"
    );
}
