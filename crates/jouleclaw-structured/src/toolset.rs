//! A whole toolset as one grammar: every tool of an MCP `tools/list` result or an OpenAI
//! `tools` array compiled into one tagged union over the call `{"name": ..., "arguments":
//! {...}}`, so a call is routed by its name as the bytes arrive and its arguments judged by that
//! tool's schema (spec, "Toolsets").

use jouleclaw_stream::canon;

use crate::error::{Result, StructuredError as E};
use crate::grammar::{CompileOptions, Dialect, Grammar, MAX_MEMBERS, MAX_SCHEMA_BYTES};
use crate::json::Json;

/// A tool the toolset left out: its name and why its schema does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedTool {
    /// The tool's name.
    pub name: String,
    /// The compile refusal's stable code (`schema_unsupported_keyword`, ...).
    pub code: &'static str,
    /// The refusal's message.
    pub message: String,
}

/// A compiled toolset: one [`Grammar`] for a call to any of its tools.
#[derive(Debug, Clone)]
pub struct Toolset {
    grammar: Grammar,
    tools: Vec<String>,
    refused: Vec<RefusedTool>,
}

/// How [`Toolset::compile`] reads a toolset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolsetOptions {
    /// How each tool's input schema is read (its profile should be
    /// [`crate::Profile::JsonSchema`]: tool schemas are JSON Schema as generators write it).
    pub compile: CompileOptions,
    /// Refuse the whole toolset when one tool's schema does not compile
    /// ([`StructuredError::ToolRefused`](crate::StructuredError::ToolRefused)) instead of
    /// leaving the tool out.
    pub strict: bool,
}

impl Default for ToolsetOptions {
    fn default() -> Self {
        ToolsetOptions {
            compile: CompileOptions::JSON_SCHEMA,
            strict: false,
        }
    }
}

/// One tool as listed: its name, description and input schema.
struct Tool<'a> {
    name: &'a str,
    description: Option<&'a str>,
    schema: Option<&'a Json>,
}

fn bad(reason: &'static str) -> E {
    E::ToolsetInvalid { reason }
}

fn str_of<'a>(v: Option<&'a Json>, missing: &'static str) -> Result<&'a str> {
    match v {
        Some(Json::Str(s)) if !s.is_empty() => Ok(s),
        _ => Err(bad(missing)),
    }
}

fn description(v: Option<&Json>) -> Option<&str> {
    match v {
        Some(Json::Str(s)) => Some(s),
        _ => None,
    }
}

/// The tools of an MCP `tools/list` result (`{"tools": [...]}`, or the JSON-RPC response that
/// holds it) or an OpenAI `tools` array (`[{"type": "function", "function": {...}}]`, or the
/// flat `{"type": "function", "name": ...}` form).
fn tools_of(doc: &Json) -> Result<Vec<Tool<'_>>> {
    let list = match doc {
        Json::Arr(xs) => xs,
        Json::Obj(_) => {
            let holder = match doc.get("result") {
                Some(r @ Json::Obj(_)) => r,
                _ => doc,
            };
            match holder.get("tools") {
                Some(Json::Arr(xs)) => xs,
                _ => {
                    return Err(bad(
                        "neither an MCP tools/list result ({\"tools\": [...]}) nor an OpenAI tools array",
                    ));
                }
            }
        }
        _ => return Err(bad("a toolset is a JSON object or array")),
    };
    let mut tools = Vec::with_capacity(list.len());
    for t in list {
        if !matches!(t, Json::Obj(_)) {
            return Err(bad("every tool is a JSON object"));
        }
        let tool = if let Some(f @ Json::Obj(_)) = t.get("function") {
            Tool {
                name: str_of(f.get("name"), "a function tool without a name")?,
                description: description(f.get("description")),
                schema: f.get("parameters"),
            }
        } else if t.get("inputSchema").is_some() || t.get("type").is_none() {
            Tool {
                name: str_of(t.get("name"), "a tool without a name")?,
                description: description(t.get("description")),
                schema: t.get("inputSchema"),
            }
        } else {
            Tool {
                name: str_of(t.get("name"), "a function tool without a name")?,
                description: description(t.get("description")),
                schema: t.get("parameters"),
            }
        };
        tools.push(tool);
    }
    Ok(tools)
}

/// Writes `v` as JSON text (numbers as their exact tokens), with every local `$ref` moved
/// under `base` and the root's `$schema` left out.
fn write(out: &mut Vec<u8>, v: &Json, base: &str, root: bool) {
    match v {
        Json::Null => out.extend_from_slice(b"null"),
        Json::Bool(true) => out.extend_from_slice(b"true"),
        Json::Bool(false) => out.extend_from_slice(b"false"),
        Json::Num(n) => out.extend_from_slice(n.text.as_bytes()),
        Json::Str(s) => canon::write_str(out, s),
        Json::Arr(xs) => {
            out.push(b'[');
            for (i, x) in xs.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(out, x, base, false);
            }
            out.push(b']');
        }
        Json::Obj(m) => {
            out.push(b'{');
            let mut first = true;
            for (k, x) in m {
                if root && k == "$schema" {
                    continue;
                }
                if !first {
                    out.push(b',');
                }
                first = false;
                canon::write_str(out, k);
                out.push(b':');
                match (k.as_str(), x) {
                    ("$ref", Json::Str(r)) if r.starts_with('#') => {
                        canon::write_str(out, &format!("#{base}{}", &r[1..]));
                    }
                    _ => write(out, x, base, false),
                }
            }
            out.push(b'}');
        }
    }
}

/// The dialect a tool's schema declares, if any.
fn declared(schema: &Json) -> Option<&str> {
    match schema.get("$schema") {
        Some(Json::Str(u)) => Some(u),
        _ => None,
    }
}

/// The toolset's schema: `{"$schema": ..., "$defs": {"t0": schema0, ...}, "oneOf": [{call of
/// tool 0}, ...]}`.
fn combined(kept: &[(&Tool<'_>, &Json)], dialect_uri: Option<&str>) -> Vec<u8> {
    // {"$schema":..., "$defs":{"t0": schema0, ...}, "oneOf":[{call of tool 0}, ...]}
    let mut out = Vec::with_capacity(4096 * kept.len());
    out.push(b'{');
    if let Some(u) = dialect_uri {
        out.extend_from_slice(b"\"$schema\":");
        canon::write_str(&mut out, u);
        out.push(b',');
    }
    out.extend_from_slice(b"\"$defs\":{");
    for (i, (_, schema)) in kept.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        canon::write_str(&mut out, &format!("t{i}"));
        out.push(b':');
        write(&mut out, schema, &format!("/$defs/t{i}"), true);
    }
    out.extend_from_slice(b"},\"oneOf\":[");
    for (i, (t, _)) in kept.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"type\":\"object\",\"additionalProperties\":false,");
        if let Some(d) = t.description {
            out.extend_from_slice(b"\"description\":");
            canon::write_str(&mut out, d);
            out.push(b',');
        }
        out.extend_from_slice(b"\"required\":[\"name\",\"arguments\"],\"properties\":{\"name\":{\"type\":\"string\",\"const\":");
        canon::write_str(&mut out, t.name);
        out.extend_from_slice(b"},\"arguments\":{\"$ref\":");
        canon::write_str(&mut out, &format!("#/$defs/t{i}"));
        out.extend_from_slice(b"}}}");
    }
    out.extend_from_slice(b"]}");
    out
}

impl Toolset {
    /// Compiles a toolset (an MCP `tools/list` result or an OpenAI `tools` array, at most
    /// [`MAX_SCHEMA_BYTES`] of JSON text). Every tool's input schema is compiled alone first; a
    /// tool whose schema is refused is left out and listed in [`Toolset::refused`] (or, with
    /// [`ToolsetOptions::strict`], the toolset is refused naming it). The others form one
    /// grammar for the call `{"name": NAME, "arguments": {...}}`: `name` first (the tag), one of
    /// the tools' names, then `arguments` judged by that tool's schema.
    pub fn compile(text: &[u8], options: &ToolsetOptions) -> Result<Toolset> {
        if text.len() > MAX_SCHEMA_BYTES {
            return Err(E::SchemaOverLimit {
                limit: "max_schema_bytes",
                at: String::new(),
            });
        }
        let doc = Json::parse(text).map_err(|message| E::SchemaNotJson { message })?;
        let tools = tools_of(&doc)?;
        if tools.is_empty() {
            return Err(bad("the toolset lists no tool"));
        }
        if tools.len() > MAX_MEMBERS {
            return Err(E::SchemaOverLimit {
                limit: "max_members",
                at: String::new(),
            });
        }
        for (i, t) in tools.iter().enumerate() {
            if tools[..i].iter().any(|u| u.name == t.name) {
                return Err(bad("two tools share a name"));
            }
        }
        let empty = Json::Obj(vec![("type".into(), Json::Str("object".into()))]);
        // The toolset's dialect: the first one a tool declares (2020-12 when none does).
        let dialect_uri = tools
            .iter()
            .filter_map(|t| t.schema.and_then(declared))
            .next()
            .map(str::to_owned);
        let dialect = dialect_uri.as_deref().and_then(Dialect::of);
        let schemas: Vec<(&Tool<'_>, &Json)> = tools
            .iter()
            .map(|t| (t, t.schema.unwrap_or(&empty)))
            .collect();
        let mixed = |schema: &Json| declared(schema).is_some_and(|d| Dialect::of(d) != dialect);
        // Most toolsets compile whole: one compile. Otherwise each tool alone, to name the ones
        // refused, then the others together.
        if !schemas.iter().any(|(_, s)| mixed(s))
            && let Ok(grammar) = Grammar::compile_with(
                &combined(&schemas, dialect_uri.as_deref()),
                &options.compile,
            )
        {
            return Ok(Toolset {
                grammar,
                tools: schemas.iter().map(|(t, _)| t.name.to_owned()).collect(),
                refused: Vec::new(),
            });
        }
        let mut kept: Vec<(&Tool<'_>, &Json)> = Vec::new();
        let mut refused = Vec::new();
        for &(t, schema) in &schemas {
            let mut alone = Vec::new();
            write(&mut alone, schema, "", false);
            let mut result = Grammar::compile_with(&alone, &options.compile).map(|_| ());
            if result.is_ok() && mixed(schema) {
                result = Err(E::ToolsetInvalid {
                    reason: "the tool declares another dialect than the toolset's first",
                });
            }
            match result {
                Ok(()) => kept.push((t, schema)),
                Err(e) if options.strict => {
                    return Err(E::ToolRefused {
                        name: t.name.to_owned(),
                        source: Box::new(e),
                    });
                }
                Err(e) => refused.push(RefusedTool {
                    name: t.name.to_owned(),
                    code: e.code(),
                    message: e.to_string(),
                }),
            }
        }
        if kept.is_empty() {
            return Err(bad("no tool's schema compiles"));
        }
        let out = combined(&kept, dialect_uri.as_deref());
        let grammar = Grammar::compile_with(&out, &options.compile)?;
        Ok(Toolset {
            grammar,
            tools: kept.iter().map(|(t, _)| t.name.to_owned()).collect(),
            refused,
        })
    }

    /// The grammar of a call to any of the toolset's tools; its digest covers every tool.
    pub fn grammar(&self) -> &Grammar {
        &self.grammar
    }

    /// The grammar, owned.
    pub fn into_grammar(self) -> Grammar {
        self.grammar
    }

    /// The names of the tools the grammar holds, in the order listed.
    pub fn tools(&self) -> &[String] {
        &self.tools
    }

    /// The tools left out, each with its compile refusal, in the order listed.
    pub fn refused(&self) -> &[RefusedTool] {
        &self.refused
    }
}
