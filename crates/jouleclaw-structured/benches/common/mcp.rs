//! Valid arguments for the MCP corpus's tools (`tests/corpus/mcp_tools.mjs` writes the corpus):
//! the generator `tests/it/mcp_toolsets.rs` checks calls with, and the `mcp` set the bench and
//! `examples/structured_ir.rs` measure whole documents on.

// Each user takes the part it needs.
#![allow(dead_code)]

use serde_json::{Value, json};

use jouleclaw_structured::Grammar;

/// `v`, or the schema its local `$ref` names (followed until none is left).
pub fn resolve<'a>(root: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => root
            .pointer(r.trim_start_matches('#'))
            .map_or(v, |t| resolve(root, t)),
        None => v,
    }
}

/// A small valid value of `schema` (None when this generator does not know how).
pub fn valid(root: &Value, schema: &Value, depth: u32) -> Option<Value> {
    let s = resolve(root, schema);
    if depth > 8 {
        return None;
    }
    if let Some(c) = s.get("const") {
        return Some(c.clone());
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        return e.first().cloned();
    }
    for k in ["anyOf", "oneOf"] {
        if let Some(b) = s.get(k).and_then(Value::as_array) {
            return b.iter().find_map(|x| valid(root, x, depth + 1));
        }
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts.first()?.as_str()?,
        _ if s.get("properties").is_some() => "object",
        _ => return Some(json!({})),
    };
    Some(match ty {
        "object" => {
            let mut m = serde_json::Map::new();
            for r in s
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let r = r.as_str()?;
                let p = s.get("properties")?.get(r)?;
                m.insert(r.to_owned(), valid(root, p, depth + 1)?);
            }
            Value::Object(m)
        }
        "array" => {
            let n = s.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = s.get("items").unwrap_or(&Value::Null);
            let mut a = Vec::new();
            for _ in 0..n {
                a.push(valid(root, item, depth + 1)?);
            }
            Value::Array(a)
        }
        "string" => {
            if s.get("pattern").is_some() || s.get("format").is_some() {
                return None;
            }
            let n = s.get("minLength").and_then(Value::as_u64).unwrap_or(1) as usize;
            Value::String("x".repeat(n))
        }
        "integer" | "number" => {
            let lo = s
                .get("minimum")
                .or(s.get("exclusiveMinimum"))
                .and_then(Value::as_i64)
                .unwrap_or(0);
            json!(lo.max(0) + 1)
        }
        "boolean" => json!(true),
        "null" => Value::Null,
        _ => return None,
    })
}

/// `args` (whose properties the generator could fill) with every optional property it can
/// make added.
pub fn with_optional(root: &Value, schema: &Value, args: &Value) -> Option<Value> {
    let (Value::Object(m), Some(Value::Object(props))) = (args, schema.get("properties")) else {
        return None;
    };
    let mut x = m.clone();
    for (k, p) in props {
        if !x.contains_key(k)
            && let Some(v) = valid(root, p, 1)
        {
            x.insert(k.clone(), v);
        }
    }
    (x.len() > m.len()).then_some(Value::Object(x))
}

/// Every distinct input schema of the MCP corpus at `path` that `Grammar::compile_json_schema`
/// compiles, with the compact arguments the generator makes for it that `jsonschema` accepts
/// (the required properties only, then with every optional one it can make), in the corpus's
/// order.
pub fn mcp_set(path: &str) -> Vec<(String, Vec<Vec<u8>>)> {
    let corpus: serde_json::Map<String, Value> =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut distinct = std::collections::BTreeSet::new();
    let mut items = Vec::new();
    for list in corpus.values() {
        for t in list["tools"].as_array().unwrap() {
            let schema = &t["inputSchema"];
            let text = serde_json::to_string(schema).unwrap();
            if !distinct.insert(text.clone())
                || Grammar::compile_json_schema(text.as_bytes()).is_err()
            {
                continue;
            }
            let Ok(peer) = jsonschema::validator_for(schema) else {
                continue;
            };
            let mut docs = Vec::new();
            if let Some(args) = valid(schema, schema, 0) {
                let more = with_optional(schema, schema, &args);
                for a in std::iter::once(args).chain(more) {
                    if peer.is_valid(&a) {
                        docs.push(serde_json::to_vec(&a).unwrap());
                    }
                }
            }
            items.push((text, docs));
        }
    }
    items
}
