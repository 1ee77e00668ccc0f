//! [`crate::Profile::JsonSchema`]: JSON Schema 2020-12 meanings for the schemas tool-schema
//! generators write, compiled onto the same grammar nodes as the subset.

use crate::bigint::{self, Big};
use crate::error::{Result, StructuredError as E};
use crate::grammar::{
    Bound, Compiler, Dialect, IgnoredKeyword, Kind, MAX_MEMBERS, MAX_PARALLEL_BRANCHES,
    MAX_SAFE_INTEGER, MAX_SCHEMA_NESTING, NONE, Node, NodeId, UnknownKeywords, Wide, count_2020,
    first_n, invalid, number_text, ptr_push, satisfiable,
};
use crate::json::{Json, Num};
use crate::pattern::PatternError;

/// Annotations: read, not enforced, left out of the projection and the digest, and listed in
/// [`crate::Grammar::ignored_keywords`]. `format` is the 2020-12 format-annotation vocabulary;
/// `discriminator` is OpenAPI's hint beside a `oneOf` (the tag is computed from the branches).
pub(crate) const ANNOTATIONS: &[&str] = &[
    "$comment",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "default",
    "deprecated",
    "discriminator",
    "examples",
    "format",
    "readOnly",
    "writeOnly",
];

/// Keywords this profile enforces (each where the spec says).
const SUPPORTED: &[&str] = &[
    "$ref",
    "additionalItems",
    "additionalProperties",
    "allOf",
    "anyOf",
    "const",
    "dependencies",
    "dependentRequired",
    "enum",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "items",
    "maxItems",
    "maxLength",
    "maxProperties",
    "maximum",
    "minItems",
    "minLength",
    "minProperties",
    "minimum",
    "oneOf",
    "pattern",
    "prefixItems",
    "properties",
    "required",
    "type",
    "uniqueItems",
];

/// JSON Schema 2020-12 (and draft-07) vocabulary this profile does not implement: always
/// refused (`schema_unsupported_keyword`), whatever [`UnknownKeywords`] says, because each is a
/// constraint.
pub(crate) const UNSUPPORTED: &[&str] = &[
    "$anchor",
    "$dynamicAnchor",
    "$dynamicRef",
    "$id",
    "$recursiveAnchor",
    "$recursiveRef",
    "$vocabulary",
    "contains",
    "dependentSchemas",
    "else",
    "if",
    "maxContains",
    "minContains",
    "multipleOf",
    "not",
    "patternProperties",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
];

/// The schema a local `$ref` names, if it resolves.
fn resolve<'a>(root: &'a Json, r: &str) -> Option<&'a Json> {
    let pointer = r.strip_prefix('#')?;
    let mut target = root;
    if pointer.is_empty() {
        return Some(root);
    }
    for seg in pointer.strip_prefix('/')?.split('/') {
        if seg.contains('%') {
            return None;
        }
        let seg = seg.replace("~1", "/").replace("~0", "~");
        target = match target {
            Json::Obj(_) => target.get(&seg)?,
            Json::Arr(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(target)
}

/// Collects the object schemas an `allOf` conjoins: the holder's own keywords (without
/// `allOf`) and each branch, through references (the reference alone, with annotations) and
/// nested `allOf`s, at most 32 deep.
fn all_of_parts<'a>(
    root: &'a Json,
    s: &'a Json,
    depth: u32,
    out: &mut Vec<Vec<(&'a str, &'a Json)>>,
) -> core::result::Result<(), &'static str> {
    if depth > 32 {
        return Err("allOf nested more than 32 deep");
    }
    let Json::Obj(m) = s else {
        return Err("an allOf branch that is not a schema object (a boolean schema)");
    };
    let mut own = Vec::new();
    let mut branches: &[Json] = &[];
    for (k, v) in m {
        match k.as_str() {
            "allOf" => match v {
                Json::Arr(xs) if !xs.is_empty() => branches = xs,
                _ => return Err("must be a non-empty array of schemas"),
            },
            "$ref" => {
                let Json::Str(r) = v else {
                    return Err("a $ref that is not a string");
                };
                let target = resolve(root, r).ok_or("a $ref that does not resolve locally")?;
                all_of_parts(root, target, depth + 1, out)?;
            }
            k if ANNOTATIONS.contains(&k) || k == "title" || k == "description" => {}
            // Containers of definitions (read where references resolve), and the root's
            // dialect (read before).
            "$defs" | "definitions" => {}
            "$schema" if depth == 0 => {}
            k => own.push((k, v)),
        }
    }
    out.push(own);
    for b in branches {
        all_of_parts(root, b, depth + 1, out)?;
    }
    Ok(())
}

/// `allOf` of object schemas as one object schema, where that is exactly its meaning: every
/// part an object schema of `type`, `properties`, `required`, `additionalProperties`,
/// `minProperties`, `maxProperties` (and annotations), one at least typed `object`; a property
/// declared by several parts with the same schema; every closed part
/// (`additionalProperties: false`) declaring every property of the merge (a closed part
/// refuses the others' properties: not a merge). `required` is the union, `maxProperties` the
/// least, `minProperties` the greatest. Anything else is refused with the reason.
fn merge_all_of(root: &Json, s: &Json) -> core::result::Result<Json, &'static str> {
    let mut parts = Vec::new();
    all_of_parts(root, s, 0, &mut parts)?;
    let mut typed = false;
    let mut props: Vec<(String, Json)> = Vec::new();
    let mut required: Vec<Json> = Vec::new();
    let mut closed: Vec<Vec<&str>> = Vec::new();
    let mut max_p: Option<&Json> = None;
    let mut min_p: Option<&Json> = None;
    let num = |v: &Json| match v {
        Json::Num(n) => n.text.parse::<f64>().ok(),
        _ => None,
    };
    for part in &parts {
        let mut names: Vec<&str> = Vec::new();
        let mut is_closed = false;
        for &(k, v) in part {
            match k {
                "type" => match v {
                    Json::Str(t) if t == "object" => typed = true,
                    _ => return Err("allOf of schemas that are not all object schemas"),
                },
                "properties" => {
                    let Json::Obj(m) = v else {
                        return Err("properties that are not an object of schemas");
                    };
                    for (name, schema) in m {
                        names.push(name);
                        match props.iter().find(|(n, _)| n == name) {
                            Some((_, x)) if x != schema => {
                                return Err(
                                    "a property declared by two allOf branches with different schemas",
                                );
                            }
                            Some(_) => {}
                            None => props.push((name.clone(), schema.clone())),
                        }
                    }
                }
                "required" => {
                    let Json::Arr(rs) = v else {
                        return Err("required that is not an array of names");
                    };
                    for r in rs {
                        if !required.contains(r) {
                            required.push(r.clone());
                        }
                    }
                }
                "additionalProperties" => match v {
                    Json::Bool(true) => {}
                    Json::Bool(false) => is_closed = true,
                    _ => {
                        return Err(
                            "additionalProperties as a schema in an allOf branch (it judges the others' properties)",
                        );
                    }
                },
                "maxProperties" => {
                    if max_p.is_none_or(|m| num(v) < num(m)) {
                        max_p = Some(v);
                    }
                }
                "minProperties" => {
                    if min_p.is_none_or(|m| num(v) > num(m)) {
                        min_p = Some(v);
                    }
                }
                _ => {
                    return Err(
                        "an allOf branch with a keyword other than an object schema's properties, required, additionalProperties, minProperties, maxProperties",
                    );
                }
            }
        }
        if is_closed {
            closed.push(names);
        }
    }
    if !typed {
        return Err("allOf of object schemas none of which states \"type\": \"object\"");
    }
    if closed.iter().any(|names| {
        names.len() != props.len() || props.iter().any(|(n, _)| !names.contains(&n.as_str()))
    }) {
        return Err(
            "a closed allOf branch (additionalProperties: false) that does not declare every property of the others",
        );
    }
    let mut m = vec![
        ("type".to_owned(), Json::Str("object".into())),
        ("properties".to_owned(), Json::Obj(props)),
    ];
    if !required.is_empty() {
        m.push(("required".to_owned(), Json::Arr(required)));
    }
    if !closed.is_empty() {
        m.push(("additionalProperties".to_owned(), Json::Bool(false)));
    }
    if let Some(v) = max_p {
        m.push(("maxProperties".to_owned(), v.clone()));
    }
    if let Some(v) = min_p {
        m.push(("minProperties".to_owned(), v.clone()));
    }
    if let Json::Obj(outer) = s {
        for (k, v) in outer {
            if k == "title" || k == "description" {
                m.push((k.clone(), v.clone()));
            }
        }
    }
    Ok(Json::Obj(m))
}

fn vacuous_names(v: Option<&Json>) -> bool {
    match v {
        Some(Json::Bool(true)) => true,
        Some(Json::Obj(m)) => m.iter().all(|(k, x)| {
            (k == "type" && *x == Json::Str("string".into()))
                || k == "title"
                || k == "description"
                || ANNOTATIONS.contains(&k.as_str())
        }),
        _ => false,
    }
}

const TYPES: &[&str] = &[
    "object", "array", "string", "integer", "number", "boolean", "null",
];

fn keywords_of(ty: &str) -> &'static [&'static str] {
    match ty {
        "object" => &[
            "properties",
            "required",
            "additionalProperties",
            "maxProperties",
            "minProperties",
            "dependentRequired",
            "dependencies",
        ],
        "array" => &[
            "items",
            "maxItems",
            "minItems",
            "prefixItems",
            "additionalItems",
            "uniqueItems",
        ],
        "string" => &["minLength", "maxLength", "pattern"],
        "integer" | "number" => &["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"],
        _ => &[],
    }
}

fn of_type(v: &Json, ty: &str) -> bool {
    match (v, ty) {
        (Json::Str(_), "string") | (Json::Bool(_), "boolean") | (Json::Null, "null") => true,
        (Json::Num(_), "number") => true,
        (Json::Num(n), "integer") => {
            matches!(n.num, Num::Int(i) if i.unsigned_abs() <= MAX_SAFE_INTEGER as u64)
        }
        _ => false,
    }
}

fn safe() -> Big {
    Big::from_i64(MAX_SAFE_INTEGER)
}

fn unreachable_mag() -> Vec<u8> {
    let mut m = vec![b'1'];
    m.extend(core::iter::repeat_n(b'0', 200));
    m
}

impl Compiler {
    fn annotations_of(&self, s: &Json, at: &str) -> Result<(Option<String>, Option<String>)> {
        let get = |k: &str| -> Result<Option<String>> {
            match s.get(k) {
                None => Ok(None),
                Some(Json::Str(t)) => Ok(Some(t.clone())),
                Some(_) => Err(invalid(k, at, "must be a string")),
            }
        };
        Ok((get("title")?, get("description")?))
    }

    pub(crate) fn any_node(&mut self) -> NodeId {
        if let Some(a) = self.any {
            return a;
        }
        let a = self.push_node(Kind::Any, None, None);
        self.any = Some(a);
        a
    }

    fn push_node(
        &mut self,
        kind: Kind,
        title: Option<String>,
        description: Option<String>,
    ) -> NodeId {
        self.nodes.push(Node {
            kind,
            title,
            description,
        });
        // Bounded by the schema size (1 MiB), far below u32::MAX.
        (self.nodes.len() - 1) as NodeId
    }

    /// The compiled `pattern` of `source` within what is left of the schema's pattern budget:
    /// a copy of an earlier one of the same text when its compile can be replayed (the budget
    /// lowered exactly as compiling it again would), else compiled.
    fn pattern(
        &mut self,
        source: &str,
    ) -> core::result::Result<Box<crate::pattern::Pattern>, PatternError> {
        if let Some((pattern, spent)) = self.patterns.iter().find(|(p, _)| p.source == source)
            && spent.replay(&mut self.pattern_budget)
        {
            return Ok(pattern.clone());
        }
        let (pattern, spent) =
            crate::pattern::Pattern::compile_spent(source, &mut self.pattern_budget)?;
        if spent.unbound() && !self.patterns.iter().any(|(p, _)| p.source == source) {
            self.patterns.push((pattern.clone(), spent));
        }
        Ok(pattern)
    }

    fn note(&mut self, at: &str, keyword: &str, annotation: bool) {
        self.ignored.push(IgnoredKeyword {
            at: at.to_owned(),
            keyword: keyword.to_owned(),
            annotation,
        });
    }

    /// Compiles one schema object (or boolean schema) of the 2020-12 profile, at most
    /// [`MAX_SCHEMA_NESTING`] inside one another (through references).
    pub(crate) fn compile_2020(
        &mut self,
        root: &Json,
        s: &Json,
        at: &str,
        depth: u32,
        is_root: bool,
    ) -> Result<NodeId> {
        if self.nesting >= MAX_SCHEMA_NESTING {
            return Err(E::SchemaOverLimit {
                limit: "max_schema_nesting",
                at: at.to_owned(),
            });
        }
        self.nesting += 1;
        let r = self.schema_2020(root, s, at, depth, is_root);
        self.nesting -= 1;
        r
    }

    fn schema_2020(
        &mut self,
        root: &Json,
        s: &Json,
        at: &str,
        depth: u32,
        is_root: bool,
    ) -> Result<NodeId> {
        let members = match s {
            Json::Bool(true) => return Ok(self.any_node()),
            Json::Bool(false) => {
                return Err(invalid(
                    "type",
                    at,
                    "the false schema (nothing valid) is not supported",
                ));
            }
            Json::Obj(m) => m,
            _ => {
                return Err(invalid(
                    "type",
                    at,
                    "a schema must be a JSON object or a boolean",
                ));
            }
        };
        let mut keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        let (title, description) = self.annotations_of(s, at)?;
        let mut constraints: Vec<&str> = Vec::new();
        for k in &keys {
            match *k {
                "title" | "description" => {}
                "$schema" => {
                    if !is_root {
                        return Err(E::UnsupportedKeyword {
                            keyword: "$schema".into(),
                            at: at.to_owned(),
                        });
                    }
                    let Some(Json::Str(uri)) = s.get("$schema") else {
                        return Err(invalid("$schema", at, "must be a dialect URI"));
                    };
                    self.dialect = Dialect::of(uri)
                        .ok_or_else(|| E::UnsupportedDialect { uri: uri.clone() })?;
                }
                "$defs" | "definitions" => {
                    if !matches!(s.get(k), Some(Json::Obj(_))) {
                        return Err(invalid(k, at, "must be an object of schemas"));
                    }
                }
                k if ANNOTATIONS.contains(&k) => self.note(at, k, true),
                // Keys are strings: `propertyNames` of `{"type":"string"}` (what Zod writes for
                // a record) or `true` constrains nothing. Any other is refused below.
                "propertyNames" if vacuous_names(s.get("propertyNames")) => {}
                // `uniqueItems: false` constrains nothing; `true` is an array keyword.
                "uniqueItems" if s.get("uniqueItems") == Some(&Json::Bool(false)) => {}
                "uniqueItems" if s.get("uniqueItems") != Some(&Json::Bool(true)) => {
                    return Err(invalid("uniqueItems", at, "must be a boolean"));
                }
                // Array-form `items` and `additionalItems` are draft-07's and 2019-09's;
                // `prefixItems` is 2020-12's: each is refused in the other dialects.
                "additionalItems" if self.dialect == Dialect::Draft2020 => {
                    return Err(E::UnsupportedKeyword {
                        keyword: (*k).to_owned(),
                        at: at.to_owned(),
                    });
                }
                "dependencies" if self.dialect != Dialect::Draft7 => {
                    return Err(E::UnsupportedKeyword {
                        keyword: (*k).to_owned(),
                        at: at.to_owned(),
                    });
                }
                "dependentRequired" if self.dialect == Dialect::Draft7 => {
                    return Err(E::UnsupportedKeyword {
                        keyword: (*k).to_owned(),
                        at: at.to_owned(),
                    });
                }
                "prefixItems" if self.dialect != Dialect::Draft2020 => {
                    return Err(E::UnsupportedKeyword {
                        keyword: (*k).to_owned(),
                        at: at.to_owned(),
                    });
                }
                k if SUPPORTED.contains(&k) => constraints.push(k),
                k if UNSUPPORTED.contains(&k) => {
                    return Err(E::UnsupportedKeyword {
                        keyword: k.to_owned(),
                        at: at.to_owned(),
                    });
                }
                k => match self.unknown {
                    UnknownKeywords::Refuse => {
                        return Err(E::UnknownKeyword {
                            keyword: k.to_owned(),
                            at: at.to_owned(),
                        });
                    }
                    UnknownKeywords::Ignore => self.note(at, k, false),
                },
            }
        }
        let get = |k: &str| s.get(k);
        let only = |allowed: &[&str]| -> Result<()> {
            match constraints.iter().find(|k| !allowed.contains(k)) {
                Some(k) => Err(E::UnsupportedKeyword {
                    keyword: (*k).to_owned(),
                    at: at.to_owned(),
                }),
                None => Ok(()),
            }
        };

        // A reference (or a one-schema allOf, the older spelling of a reference with
        // annotations): its own title/description are not the target's, so they are listed.
        if let Some(r) = get("$ref") {
            only(&["$ref"])?;
            self.drop_annotations(at, &title, &description);
            return self.reference(root, r, at);
        }
        if let Some(all) = get("allOf") {
            let Json::Arr(xs) = all else {
                return Err(invalid("allOf", at, "must be an array of schemas"));
            };
            if let ([one], Ok(())) = (xs.as_slice(), only(&["allOf"])) {
                self.drop_annotations(at, &title, &description);
                return self.compile_2020(root, one, &ptr_push(at, "allOf/0"), depth, false);
            }
            // Several schemas (or one beside other constraints): merged where JSON Schema's
            // meaning is exactly a merge of object schemas, else refused with the reason.
            let merged = merge_all_of(root, s).map_err(|reason| invalid("allOf", at, reason))?;
            return self.compile_2020(root, &merged, at, depth, is_root);
        }
        for (kw, one_of) in [("anyOf", false), ("oneOf", true)] {
            let Some(v) = get(kw) else { continue };
            if one_of && get("anyOf").is_some() {
                return Err(E::UnsupportedKeyword {
                    keyword: "oneOf".into(),
                    at: at.to_owned(),
                });
            }
            if let Some(t) = get("type")
                && *t != Json::Str("object".into())
            {
                return Err(E::UnsupportedKeyword {
                    keyword: "type".into(),
                    at: at.to_owned(),
                });
            }
            only(&[kw, "type"])?;
            let Json::Arr(xs) = v else {
                return Err(invalid(kw, at, "must be an array of schemas"));
            };
            if xs.is_empty() {
                return Err(invalid(kw, at, "must not be empty"));
            }
            if xs.len() > MAX_MEMBERS {
                return Err(E::SchemaOverLimit {
                    limit: "max_members",
                    at: at.to_owned(),
                });
            }
            let bat = ptr_push(at, kw);
            let mut branches = Vec::with_capacity(xs.len());
            for (i, x) in xs.iter().enumerate() {
                branches.push(self.compile_2020(
                    root,
                    x,
                    &ptr_push(&bat, &i.to_string()),
                    depth,
                    false,
                )?);
            }
            let id = self.push_node(
                Kind::Union {
                    branches,
                    one_of,
                    by: [NONE; 6],
                },
                title,
                description,
            );
            self.union_at.insert(id, at.to_owned());
            if get("type").is_some() {
                self.object_unions.insert(id);
            }
            return Ok(id);
        }

        let values: Option<Vec<Json>> = match (get("enum"), get("const")) {
            (Some(_), Some(_)) => return Err(invalid("const", at, "enum and const together")),
            (None, None) => None,
            (None, Some(c)) => Some(vec![c.clone()]),
            (Some(Json::Arr(vs)), None) => {
                if vs.is_empty() {
                    return Err(invalid("enum", at, "must not be empty"));
                }
                if vs.len() > MAX_MEMBERS {
                    return Err(E::SchemaOverLimit {
                        limit: "max_members",
                        at: ptr_push(at, "enum"),
                    });
                }
                for (i, v) in vs.iter().enumerate() {
                    if vs[..i].contains(v) {
                        return Err(invalid("enum", at, "values must be unique"));
                    }
                }
                Some(vs.clone())
            }
            (Some(_), None) => return Err(invalid("enum", at, "must be an array")),
        };
        let vkw = if get("const").is_some() {
            "const"
        } else {
            "enum"
        };
        if let Some(vs) = &values
            && vs.iter().any(|v| matches!(v, Json::Obj(_) | Json::Arr(_)))
        {
            return Err(invalid(
                vkw,
                at,
                "object and array values are not supported",
            ));
        }
        let mut types: Vec<&str> = match get("type") {
            None => Vec::new(),
            Some(Json::Str(t)) => vec![t.as_str()],
            Some(Json::Arr(ts)) if !ts.is_empty() => {
                let mut out = Vec::new();
                for t in ts {
                    match t {
                        Json::Str(t) if !out.contains(&t.as_str()) => out.push(t.as_str()),
                        _ => {
                            return Err(invalid(
                                "type",
                                at,
                                "a type list holds distinct type names",
                            ));
                        }
                    }
                }
                out
            }
            Some(_) => return Err(invalid("type", at, "must be a type name or a list of them")),
        };
        if let Some(t) = types.iter().find(|t| !TYPES.contains(t)) {
            let _ = t;
            return Err(invalid("type", at, "unknown type name"));
        }
        let typed = !types.is_empty();
        if !typed {
            match &values {
                // An untyped enum/const: the types of its members (numbers as `number`, so
                // 1.0 equals 1 as JSON Schema has it).
                Some(vs) => {
                    for ty in ["string", "number", "boolean", "null"] {
                        if vs.iter().any(|v| of_type(v, ty)) {
                            types.push(ty);
                        }
                    }
                    only(&["enum", "const"])?;
                }
                None => {
                    if let Some(k) = constraints.first() {
                        let _ = k;
                        return Err(E::MissingKeyword {
                            keyword: "type",
                            at: at.to_owned(),
                        });
                    }
                    return Ok(self.push_node(Kind::Any, title, description));
                }
            }
        }
        // integer is a part of number: a list naming both means number.
        if types.contains(&"number") {
            types.retain(|t| *t != "integer");
        }
        for k in &constraints {
            let k = *k;
            if matches!(k, "type" | "enum" | "const") {
                continue;
            }
            if !types.iter().any(|t| keywords_of(t).contains(&k)) {
                // It constrains only values of types the schema already refuses: JSON Schema
                // ignores it, and so does `UnknownKeywords::Ignore` (listed). Refused by
                // default: it is most often misplaced (`maxItems` on an array's `items`), a
                // constraint the author meant and no validator applies.
                if self.unknown == UnknownKeywords::Ignore {
                    self.note(at, k, false);
                    continue;
                }
                return Err(E::UnsupportedKeyword {
                    keyword: k.to_owned(),
                    at: at.to_owned(),
                });
            }
        }
        if let Some(vs) = &values
            && typed
            && let Some(_) = vs.iter().find(|v| !types.iter().any(|t| of_type(v, t)))
        {
            return Err(invalid(vkw, at, "value is not of the schema's type"));
        }
        let mut nodes = Vec::with_capacity(types.len());
        for ty in &types {
            let vs: Option<Vec<Json>> = values
                .as_ref()
                .map(|vs| vs.iter().filter(|v| of_type(v, ty)).cloned().collect());
            if vs.as_ref().is_some_and(|v| v.is_empty()) {
                continue;
            }
            let kind = self.typed_2020(root, s, ty, at, depth, vs)?;
            // A type that accepts nothing here is refused, even in a type list: the author
            // wrote bounds that leave no value of it.
            satisfiable(&kind, at)?;
            nodes.push(kind);
        }
        if nodes.len() == 1
            && let Some(kind) = nodes.pop()
        {
            return Ok(self.push_node(kind, title, description));
        }
        let mut branches = Vec::with_capacity(nodes.len());
        for kind in nodes {
            branches.push(self.push_node(kind, None, None));
        }
        let id = self.push_node(
            Kind::Union {
                branches,
                one_of: false,
                by: [NONE; 6],
            },
            title,
            description,
        );
        self.union_at.insert(id, at.to_owned());
        Ok(id)
    }

    fn drop_annotations(&mut self, at: &str, title: &Option<String>, description: &Option<String>) {
        if title.is_some() {
            self.note(at, "title", true);
        }
        if description.is_some() {
            self.note(at, "description", true);
        }
    }

    fn reference(&mut self, root: &Json, r: &Json, at: &str) -> Result<NodeId> {
        let Json::Str(r) = r else {
            return Err(invalid("$ref", at, "must be a string"));
        };
        let Some(pointer) = r.strip_prefix('#') else {
            return Err(invalid(
                "$ref",
                at,
                "only local references (#...) are supported",
            ));
        };
        if let Some(&id) = self.refs.get(pointer) {
            return Ok(id);
        }
        let mut target = root;
        if !pointer.is_empty() {
            let Some(rest) = pointer.strip_prefix('/') else {
                return Err(invalid("$ref", at, "must be a JSON Pointer fragment"));
            };
            for seg in rest.split('/') {
                if seg.contains('%') {
                    return Err(invalid(
                        "$ref",
                        at,
                        "percent-encoded pointers are not supported",
                    ));
                }
                let seg = seg.replace("~1", "/").replace("~0", "~");
                target = match target {
                    Json::Obj(_) => target.get(&seg),
                    Json::Arr(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
                    _ => None,
                }
                .ok_or_else(|| invalid("$ref", at, "does not resolve within the schema"))?;
            }
        }
        let slot = self.push_node(Kind::Ref(NONE), None, None);
        self.refs.insert(pointer.to_owned(), slot);
        // A definition's nesting is counted from itself (it may be used at many depths); the
        // document's depth is bounded where it is read (`too_deep`).
        let body = self.compile_2020(root, target, pointer, 0, pointer.is_empty())?;
        self.nodes[slot as usize].kind = Kind::Ref(body);
        Ok(slot)
    }

    fn typed_2020(
        &mut self,
        root: &Json,
        s: &Json,
        ty: &str,
        at: &str,
        depth: u32,
        values: Option<Vec<Json>>,
    ) -> Result<Kind> {
        let get = |k: &str| s.get(k);
        let over = |at: &str| E::SchemaOverLimit {
            limit: "max_depth",
            at: at.to_owned(),
        };
        Ok(match ty {
            "object" => {
                if depth >= self.limits.max_depth {
                    return Err(over(at));
                }
                let extra = match get("additionalProperties") {
                    None | Some(Json::Bool(true)) => Some(self.any_node()),
                    Some(Json::Bool(false)) => None,
                    Some(x @ Json::Obj(_)) => Some(self.compile_2020(
                        root,
                        x,
                        &ptr_push(at, "additionalProperties"),
                        depth + 1,
                        false,
                    )?),
                    Some(_) => {
                        return Err(invalid("additionalProperties", at, "must be a schema"));
                    }
                };
                let declared: &[(String, Json)] = match get("properties") {
                    None => &[],
                    Some(Json::Obj(m)) => m,
                    Some(_) => return Err(invalid("properties", at, "must be an object")),
                };
                if declared.len() > MAX_MEMBERS {
                    return Err(E::SchemaOverLimit {
                        limit: "max_members",
                        at: ptr_push(at, "properties"),
                    });
                }
                let pat = ptr_push(at, "properties");
                let mut props = Vec::with_capacity(declared.len());
                for (name, sub) in declared {
                    let node =
                        self.compile_2020(root, sub, &ptr_push(&pat, name), depth + 1, false)?;
                    props.push(crate::grammar::Prop {
                        name: name.clone(),
                        node,
                    });
                }
                // An open object's `required` may name a property it does not declare: JSON
                // Schema then requires that member, with any value the other members may take,
                // which is a declared property of the other members' schema. (A closed object
                // naming one can hold no document: refused by `required_bits`.)
                if let (Some(other), Some(Json::Arr(names))) = (extra, get("required")) {
                    for n in names {
                        if let Json::Str(n) = n
                            && !props.iter().any(|p| p.name == *n)
                        {
                            props.push(crate::grammar::Prop {
                                name: n.clone(),
                                node: other,
                            });
                        }
                    }
                    if props.len() > MAX_MEMBERS {
                        return Err(E::SchemaOverLimit {
                            limit: "max_members",
                            at: ptr_push(at, "required"),
                        });
                    }
                }
                let required = crate::grammar::required_bits(get("required"), &props, at)?;
                let max_properties = get("maxProperties")
                    .map(|v| count_2020(v, "maxProperties", at))
                    .transpose()?;
                let min_properties = get("minProperties")
                    .map(|v| count_2020(v, "minProperties", at))
                    .transpose()?
                    .unwrap_or(0);
                let dependent = self.dependent_required(s, &props, at)?;
                Kind::Object {
                    all: first_n(props.len()),
                    props,
                    required,
                    max_properties,
                    extra,
                    min_properties,
                    dependent,
                }
            }
            "array" => {
                if depth >= self.limits.max_depth {
                    return Err(over(at));
                }
                let max_items = match get("maxItems") {
                    Some(v) => count_2020(v, "maxItems", at)?.min(self.limits.max_array_items),
                    None => self.limits.max_array_items,
                };
                let min_items = get("minItems")
                    .map(|v| count_2020(v, "minItems", at))
                    .transpose()?
                    .unwrap_or(0);
                // The first elements' schemas and the keyword of the rest: 2020-12's
                // `prefixItems` + `items`, or the older array-form `items` + `additionalItems`.
                let (first, first_kw, rest, rest_kw) = match (self.dialect, get("items")) {
                    (Dialect::Draft2020, items) => match get("prefixItems") {
                        None => (None, "prefixItems", items, "items"),
                        Some(Json::Arr(xs)) if !xs.is_empty() => {
                            (Some(xs), "prefixItems", items, "items")
                        }
                        Some(_) => {
                            return Err(invalid(
                                "prefixItems",
                                at,
                                "must be a non-empty array of schemas",
                            ));
                        }
                    },
                    (_, Some(Json::Arr(xs))) => {
                        (Some(xs), "items", get("additionalItems"), "additionalItems")
                    }
                    (_, items) => {
                        // Beside one `items` schema, `additionalItems` does nothing.
                        if get("additionalItems").is_some() {
                            self.note(at, "additionalItems", false);
                        }
                        (None, "items", items, "items")
                    }
                };
                let mut prefix = Vec::new();
                if let Some(xs) = first {
                    if xs.len() > MAX_MEMBERS {
                        return Err(E::SchemaOverLimit {
                            limit: "max_members",
                            at: ptr_push(at, first_kw),
                        });
                    }
                    let pat = ptr_push(at, first_kw);
                    for (i, x) in xs.iter().enumerate() {
                        prefix.push(self.compile_2020(
                            root,
                            x,
                            &ptr_push(&pat, &i.to_string()),
                            depth + 1,
                            false,
                        )?);
                    }
                }
                let mut max_items = max_items;
                let items = match rest {
                    None => self.any_node(),
                    // No element after the first ones (none at all without them).
                    Some(Json::Bool(false)) => {
                        // At most 256 (`MAX_MEMBERS`).
                        max_items = max_items.min(prefix.len() as u32);
                        self.any_node()
                    }
                    Some(x @ (Json::Obj(_) | Json::Bool(_))) => {
                        self.compile_2020(root, x, &ptr_push(at, rest_kw), depth + 1, false)?
                    }
                    Some(_) => return Err(invalid(rest_kw, at, "must be one schema")),
                };
                Kind::Array {
                    prefix,
                    items,
                    max_items,
                    min_items,
                    unique: get("uniqueItems") == Some(&Json::Bool(true)),
                }
            }
            "string" => {
                let min = get("minLength")
                    .map(|v| count_2020(v, "minLength", at))
                    .transpose()?
                    .unwrap_or(0);
                let max = match get("maxLength") {
                    Some(v) => count_2020(v, "maxLength", at)?.min(self.limits.max_string_chars),
                    None => self.limits.max_string_chars,
                };
                let allowed = values.map(|vs| {
                    vs.into_iter()
                        .filter_map(|v| match v {
                            Json::Str(t) => Some(t),
                            _ => None,
                        })
                        .collect()
                });
                let pattern = match get("pattern") {
                    None => None,
                    Some(Json::Str(p)) => Some(self.pattern(p).map_err(|e| match e {
                        PatternError::Unsupported(reason) => E::UnsupportedPattern {
                            at: at.to_owned(),
                            reason,
                        },
                        PatternError::TooLarge => E::SchemaOverLimit {
                            limit: "max_pattern_bytes",
                            at: ptr_push(at, "pattern"),
                        },
                        PatternError::OverBudget => E::SchemaOverLimit {
                            limit: "max_pattern_work",
                            at: ptr_push(at, "pattern"),
                        },
                    })?),
                    Some(_) => return Err(invalid("pattern", at, "must be a string")),
                };
                Kind::String {
                    min,
                    max,
                    allowed,
                    pattern,
                }
            }
            "integer" => self.integer_2020(s, at, values)?,
            "number" => {
                let bound = |k: &str| -> Result<Option<Bound>> {
                    get(k).map(|v| number_text(v, k, at).map(Bound)).transpose()
                };
                let allowed = match values {
                    None => None,
                    Some(vs) => {
                        let mut out = Vec::with_capacity(vs.len());
                        for v in &vs {
                            out.push(Bound(number_text(v, "enum", at)?));
                        }
                        Some(out)
                    }
                };
                Kind::Number {
                    min: bound("minimum")?,
                    max: bound("maximum")?,
                    xmin: bound("exclusiveMinimum")?,
                    xmax: bound("exclusiveMaximum")?,
                    allowed,
                }
            }
            "boolean" => Kind::Boolean {
                allowed: values.map(|vs| {
                    vs.into_iter()
                        .filter_map(|v| match v {
                            Json::Bool(b) => Some(b),
                            _ => None,
                        })
                        .collect()
                }),
            },
            _ => Kind::Null,
        })
    }

    /// An integer's bounds as exact inclusive integers: `minimum` rounded up,
    /// `exclusiveMinimum` rounded down plus one, and so on; a side not declared is +-(2^53-1)
    /// (as in the subset); a declared side beyond any document integer is no bound (or, for a
    /// minimum beyond every integer, a bound no integer meets).
    fn integer_2020(&mut self, s: &Json, at: &str, values: Option<Vec<Json>>) -> Result<Kind> {
        let text = |k: &str| -> Result<Option<String>> {
            match s.get(k) {
                None => Ok(None),
                Some(Json::Num(n)) if !n.text.is_empty() => Ok(Some(n.text.clone())),
                Some(_) => Err(invalid(k, at, "must be a number")),
            }
        };
        let huge = Big {
            neg: false,
            mag: unreachable_mag(),
        };
        // None: no bound on that side.
        let mut lo: Option<Option<Big>> = None;
        let mut hi: Option<Option<Big>> = None;
        let tighter_lo = |cur: Option<Option<Big>>, new: Option<Big>| match (cur, new) {
            (None, n) => Some(n),
            (Some(None), n) => Some(n),
            (Some(Some(c)), None) => Some(Some(c)),
            (Some(Some(c)), Some(n)) => Some(Some(if n > c { n } else { c })),
        };
        let tighter_hi = |cur: Option<Option<Big>>, new: Option<Big>| match (cur, new) {
            (None, n) => Some(n),
            (Some(None), n) => Some(n),
            (Some(Some(c)), None) => Some(Some(c)),
            (Some(Some(c)), Some(n)) => Some(Some(if n < c { n } else { c })),
        };
        let neg_huge = Big {
            neg: true,
            mag: unreachable_mag(),
        };
        // A bound's integer: `text` rounded (up for `minimum` and `exclusiveMaximum`), then
        // stepped past itself when exclusive. A text beyond every integer on the bound's own
        // side (`round`'s error equal to `lower`) bounds nothing; beyond them on the other side
        // it leaves no integer (`beyond`).
        let bound = |t: &str, up: bool, step: fn(&Big) -> Big, lower: bool, beyond: &Big| {
            match bigint::round(t, up) {
                Ok(b) => Some(step(&b)),
                Err(side) if side == lower => None,
                Err(_) => Some(beyond.clone()),
            }
        };
        if let Some(t) = text("minimum")? {
            lo = tighter_lo(lo, bound(&t, true, Big::clone, true, &huge));
        }
        if let Some(t) = text("exclusiveMinimum")? {
            lo = tighter_lo(lo, bound(&t, false, Big::succ, true, &huge));
        }
        if let Some(t) = text("maximum")? {
            hi = tighter_hi(hi, bound(&t, false, Big::clone, false, &neg_huge));
        }
        if let Some(t) = text("exclusiveMaximum")? {
            hi = tighter_hi(hi, bound(&t, true, Big::pred, false, &neg_huge));
        }
        let s_max = safe();
        let s_min = Big::from_i64(-MAX_SAFE_INTEGER);
        let lo = lo.unwrap_or(Some(s_min.clone()));
        let hi = hi.unwrap_or(Some(s_max.clone()));
        let allowed: Option<Vec<i64>> = values.map(|vs| {
            vs.iter()
                .filter_map(|v| match v.num().map(|n| &n.num) {
                    Some(Num::Int(i)) => Some(*i),
                    _ => None,
                })
                .collect()
        });
        let small = |b: &Option<Big>| {
            b.as_ref()
                .and_then(Big::to_i64)
                .filter(|v| v.unsigned_abs() <= MAX_SAFE_INTEGER as u64)
        };
        if let (Some(l), Some(h)) = (small(&lo), small(&hi)) {
            return Ok(Kind::Integer {
                lo: l,
                hi: h,
                allowed,
                wide: None,
            });
        }
        if let Some(a) = allowed {
            // Enum members are within +-(2^53-1): the wide bounds only filter them.
            let kept: Vec<i64> = a
                .into_iter()
                .filter(|&v| {
                    let b = Big::from_i64(v);
                    lo.as_ref().is_none_or(|l| b >= *l) && hi.as_ref().is_none_or(|h| b <= *h)
                })
                .collect();
            if kept.is_empty() {
                return Err(invalid("enum", at, "no member lies within the bounds"));
            }
            return Ok(Kind::Integer {
                lo: -MAX_SAFE_INTEGER,
                hi: MAX_SAFE_INTEGER,
                allowed: Some(kept),
                wide: None,
            });
        }
        Ok(Kind::Integer {
            lo: -MAX_SAFE_INTEGER,
            hi: MAX_SAFE_INTEGER,
            allowed: None,
            wide: Some(Box::new(Wide { lo, hi })),
        })
    }

    /// Resolves references and decides every union's first-byte table. Returns the root.
    pub(crate) fn finish(&mut self, root: NodeId) -> Result<NodeId> {
        let n = self.nodes.len();
        let mut resolved: Vec<NodeId> = (0..n as NodeId).collect();
        for (i, r) in resolved.iter_mut().enumerate() {
            let mut t = i as NodeId;
            let mut steps = 0;
            while let Kind::Ref(next) = self.nodes[t as usize].kind {
                t = next;
                steps += 1;
                if steps > n || t == NONE {
                    return Err(invalid(
                        "$ref",
                        "",
                        "a reference cycle that holds no schema",
                    ));
                }
            }
            *r = t;
        }
        let fix = |x: &mut NodeId| *x = resolved[*x as usize];
        for node in &mut self.nodes {
            match &mut node.kind {
                Kind::Object { props, extra, .. } => {
                    props.iter_mut().for_each(|p| fix(&mut p.node));
                    if let Some(x) = extra {
                        fix(x);
                    }
                }
                Kind::OneOf { branches, .. } => branches.iter_mut().for_each(|b| fix(&mut b.node)),
                Kind::Array { prefix, items, .. } => {
                    prefix.iter_mut().for_each(&fix);
                    fix(items);
                }
                Kind::Union { branches, .. } => branches.iter_mut().for_each(fix),
                _ => {}
            }
        }
        for u in 0..n {
            if matches!(self.nodes[u].kind, Kind::Union { .. }) {
                let by = self.decide_union(u as NodeId)?;
                if let Kind::Union { by: b, .. } = &mut self.nodes[u].kind {
                    *b = by;
                }
            }
        }
        self.no_nested_parallel()?;
        Ok(resolved[root as usize])
    }

    /// A value read side by side holds no other such value (at any depth, through references
    /// and recursion): the branches' machines are then plain ones, and the work and memory of
    /// one value are bounded by [`MAX_PARALLEL_BRANCHES`] machines, not a power of it.
    fn no_nested_parallel(&self) -> Result<()> {
        if self.parallel_at.is_empty() {
            return Ok(());
        }
        // The nodes from which a side-by-side node is reachable: one walk back from all of
        // them over the reversed edges (linear in the grammar, however many there are).
        let n = self.nodes.len();
        let mut parents: Vec<Vec<NodeId>> = vec![Vec::new(); n];
        for (id, node) in self.nodes.iter().enumerate() {
            let mut edge = |c: NodeId| {
                if let Some(p) = parents.get_mut(c as usize) {
                    // Bounded by the schema size (1 MiB), far below u32::MAX.
                    p.push(id as NodeId);
                }
            };
            match &node.kind {
                Kind::Object { props, extra, .. } => {
                    props
                        .iter()
                        .map(|p| p.node)
                        .chain(*extra)
                        .for_each(&mut edge);
                }
                Kind::OneOf { branches, .. } => branches.iter().for_each(|b| edge(b.node)),
                Kind::Array { prefix, items, .. } => {
                    prefix.iter().chain([items]).for_each(|&i| edge(i));
                }
                Kind::Union { branches, by, .. } => {
                    branches.iter().chain(by.iter()).for_each(|&b| edge(b));
                }
                Kind::Parallel { branches } => branches.iter().for_each(|&b| edge(b)),
                Kind::Ref(t) => edge(*t),
                _ => {}
            }
        }
        let mut reaches = vec![false; n];
        let mut todo: Vec<NodeId> = self.parallel_at.iter().map(|(p, _)| *p).collect();
        while let Some(id) = todo.pop() {
            let Some(slot) = reaches.get_mut(id as usize) else {
                continue;
            };
            if std::mem::replace(slot, true) {
                continue;
            }
            if let Some(ps) = parents.get(id as usize) {
                todo.extend(ps.iter().copied());
            }
        }
        for (p, at) in &self.parallel_at {
            if let Kind::Parallel { branches } = &self.nodes[*p as usize].kind
                && branches
                    .iter()
                    .any(|&b| reaches.get(b as usize).copied().unwrap_or(false))
            {
                return Err(E::AmbiguousUnion { at: at.clone() });
            }
        }
        Ok(())
    }

    /// `dependentRequired` (2019-09, 2020-12) or draft-07's `dependencies` in its array form,
    /// over declared properties only. Never inlined: the schema compiler recurses through
    /// the caller, whose frame stays small.
    #[inline(never)]
    fn dependent_required(
        &self,
        s: &Json,
        props: &[crate::grammar::Prop],
        at: &str,
    ) -> Result<Option<Box<crate::grammar::Dependent>>> {
        let kw = if self.dialect == Dialect::Draft7 {
            "dependencies"
        } else {
            "dependentRequired"
        };
        let Some(v) = s.get(kw) else {
            return Ok(None);
        };
        let Json::Obj(m) = v else {
            return Err(invalid(
                kw,
                at,
                "must be an object of arrays of property names",
            ));
        };
        let index = |n: &str| props.iter().position(|p| p.name == n);
        let mut out = Vec::with_capacity(m.len());
        for (name, need) in m {
            let Json::Arr(names) = need else {
                // draft-07's schema form is dependentSchemas, not implemented.
                return Err(E::UnsupportedKeyword {
                    keyword: kw.to_owned(),
                    at: at.to_owned(),
                });
            };
            let Some(i) = index(name) else {
                return Err(invalid(
                    kw,
                    at,
                    "names a property not declared in properties (only declared ones are tracked)",
                ));
            };
            let mut bits = [0u64; 4];
            for (j, n) in names.iter().enumerate() {
                let Json::Str(n) = n else {
                    return Err(invalid(
                        kw,
                        at,
                        "must be an object of arrays of property names",
                    ));
                };
                if names[..j].contains(&Json::Str(n.clone())) {
                    return Err(invalid(kw, at, "names a property twice"));
                }
                let Some(k) = index(n) else {
                    return Err(invalid(
                        kw,
                        at,
                        "names a property not declared in properties (only declared ones are tracked)",
                    ));
                };
                bits[k / 64] |= 1 << (k % 64);
            }
            // At most 256 properties.
            out.push((i as u16, bits));
        }
        Ok(Some(Box::new(crate::grammar::Dependent(out))))
    }

    /// Whether nodes `a` and `b` accept the same values because they are the same schema
    /// (annotations aside), compared structurally; `false` when unsure (past
    /// [`MAX_SCHEMA_NESTING`] levels).
    fn same(&self, a: NodeId, b: NodeId, depth: usize) -> bool {
        if a == b {
            return true;
        }
        if depth >= MAX_SCHEMA_NESTING {
            return false;
        }
        let (Some(x), Some(y)) = (self.nodes.get(a as usize), self.nodes.get(b as usize)) else {
            return false;
        };
        let d = depth + 1;
        let all = |xs: &[NodeId], ys: &[NodeId]| {
            xs.len() == ys.len() && xs.iter().zip(ys).all(|(&p, &q)| self.same(p, q, d))
        };
        match (&x.kind, &y.kind) {
            (
                Kind::Object {
                    props: p1,
                    all: a1,
                    required: r1,
                    max_properties: m1,
                    extra: e1,
                    min_properties: n1,
                    dependent: d1,
                },
                Kind::Object {
                    props: p2,
                    all: a2,
                    required: r2,
                    max_properties: m2,
                    extra: e2,
                    min_properties: n2,
                    dependent: d2,
                },
            ) => {
                d1 == d2
                    && a1 == a2
                    && r1 == r2
                    && m1 == m2
                    && n1 == n2
                    && p1.len() == p2.len()
                    && p1
                        .iter()
                        .zip(p2)
                        .all(|(p, q)| p.name == q.name && self.same(p.node, q.node, d))
                    && match (e1, e2) {
                        (None, None) => true,
                        (Some(p), Some(q)) => self.same(*p, *q, d),
                        _ => false,
                    }
            }
            (
                Kind::OneOf {
                    tag: t1,
                    branches: b1,
                },
                Kind::OneOf {
                    tag: t2,
                    branches: b2,
                },
            ) => {
                t1 == t2
                    && b1.len() == b2.len()
                    && b1.iter().zip(b2).all(|(p, q)| {
                        p.tag_value == q.tag_value
                            && p.tag_index == q.tag_index
                            && self.same(p.node, q.node, d)
                    })
            }
            (
                Kind::Array {
                    prefix: f1,
                    items: i1,
                    max_items: m1,
                    min_items: n1,
                    unique: u1,
                },
                Kind::Array {
                    prefix: f2,
                    items: i2,
                    max_items: m2,
                    min_items: n2,
                    unique: u2,
                },
            ) => m1 == m2 && n1 == n2 && u1 == u2 && all(f1, f2) && self.same(*i1, *i2, d),
            (
                Kind::String {
                    min: n1,
                    max: m1,
                    allowed: a1,
                    pattern: p1,
                },
                Kind::String {
                    min: n2,
                    max: m2,
                    allowed: a2,
                    pattern: p2,
                },
            ) => {
                n1 == n2
                    && m1 == m2
                    && a1 == a2
                    && p1.as_ref().map(|p| &p.source) == p2.as_ref().map(|p| &p.source)
            }
            (
                Kind::Integer {
                    lo: l1,
                    hi: h1,
                    allowed: a1,
                    wide: w1,
                },
                Kind::Integer {
                    lo: l2,
                    hi: h2,
                    allowed: a2,
                    wide: w2,
                },
            ) => {
                l1 == l2
                    && h1 == h2
                    && a1 == a2
                    && match (w1, w2) {
                        (None, None) => true,
                        (Some(p), Some(q)) => p.lo == q.lo && p.hi == q.hi,
                        _ => false,
                    }
            }
            (
                Kind::Number {
                    min: a1,
                    max: b1,
                    xmin: c1,
                    xmax: d1,
                    allowed: e1,
                },
                Kind::Number {
                    min: a2,
                    max: b2,
                    xmin: c2,
                    xmax: d2,
                    allowed: e2,
                },
            ) => a1 == a2 && b1 == b2 && c1 == c2 && d1 == d2 && e1 == e2,
            (Kind::Boolean { allowed: a1 }, Kind::Boolean { allowed: a2 }) => a1 == a2,
            (Kind::Null, Kind::Null) | (Kind::Any, Kind::Any) => true,
            (
                Kind::Union {
                    branches: b1,
                    one_of: o1,
                    ..
                },
                Kind::Union {
                    branches: b2,
                    one_of: o2,
                    ..
                },
            ) => o1 == o2 && all(b1, b2),
            (Kind::Parallel { branches: b1 }, Kind::Parallel { branches: b2 }) => all(b1, b2),
            (Kind::Ref(p), Kind::Ref(q)) => self.same(*p, *q, d),
            _ => false,
        }
    }

    /// The leaf branches of a union, flattened through nested unions.
    fn leaves(&self, u: NodeId, seen: &mut Vec<NodeId>, out: &mut Vec<NodeId>) -> Result<()> {
        if seen.contains(&u) {
            return Err(invalid("anyOf", "", "a union that contains itself"));
        }
        if seen.len() >= MAX_SCHEMA_NESTING {
            return Err(E::SchemaOverLimit {
                limit: "max_schema_nesting",
                at: String::new(),
            });
        }
        seen.push(u);
        if let Kind::Union { branches, .. } = &self.nodes[u as usize].kind {
            for &b in branches {
                if matches!(self.nodes[b as usize].kind, Kind::Union { .. }) {
                    self.leaves(b, seen, out)?;
                } else {
                    out.push(b);
                }
            }
        }
        seen.pop();
        Ok(())
    }

    fn decide_union(&mut self, u: NodeId) -> Result<[NodeId; 6]> {
        let at = self.union_at.get(&u).cloned().unwrap_or_default();
        let one_of = matches!(
            self.nodes[u as usize].kind,
            Kind::Union { one_of: true, .. }
        );
        let mut leaves = Vec::new();
        self.leaves(u, &mut Vec::new(), &mut leaves)?;
        // `anyOf` of identical branches is its one branch (for `oneOf` a value matching one
        // matches both, so it stays refused).
        if !one_of {
            let mut distinct: Vec<NodeId> = Vec::with_capacity(leaves.len());
            for &b in &leaves {
                if !distinct.iter().any(|&d| self.same(d, b, 0)) {
                    distinct.push(b);
                }
            }
            leaves = distinct;
        }
        // `"type": "object"` beside the union applies too: a branch of another type (or a
        // free-form one) would take values JSON Schema refuses, so it is refused here.
        if self.object_unions.contains(&u)
            && leaves.iter().any(|&b| {
                !matches!(
                    self.nodes[b as usize].kind,
                    Kind::Object { .. } | Kind::OneOf { .. }
                )
            })
        {
            return Err(E::UnsupportedKeyword {
                keyword: "type".into(),
                at,
            });
        }
        let mut classes: [Vec<NodeId>; 6] = Default::default();
        for &b in &leaves {
            let c = match &self.nodes[b as usize].kind {
                Kind::Any => {
                    if one_of {
                        return Err(E::AmbiguousUnion { at });
                    }
                    return Ok([b; 6]);
                }
                Kind::Object { .. } | Kind::OneOf { .. } => 0,
                Kind::Array { .. } => 1,
                Kind::String { .. } => 2,
                Kind::Integer { .. } | Kind::Number { .. } => 3,
                Kind::Boolean { .. } => 4,
                _ => 5,
            };
            classes[c].push(b);
        }
        let mut by = [NONE; 6];
        for (c, ids) in classes.iter().enumerate() {
            by[c] = match ids.as_slice() {
                [] => NONE,
                [one] => *one,
                many => {
                    let all_objects = many
                        .iter()
                        .all(|&b| matches!(self.nodes[b as usize].kind, Kind::Object { .. }));
                    let tagged = if c == 0 && all_objects {
                        self.find_tag(many)
                    } else {
                        None
                    };
                    if let Some((tag, branches)) = tagged {
                        // Objects: a tagged union (distinct consts, so anyOf = oneOf here).
                        self.push_node(Kind::OneOf { tag, branches }, None, None)
                    } else if c <= 1 && !one_of {
                        // Objects without a common tag, or arrays: read side by side.
                        if many.len() > MAX_PARALLEL_BRANCHES {
                            return Err(E::AmbiguousUnion { at });
                        }
                        let p = self.push_node(
                            Kind::Parallel {
                                branches: many.to_vec(),
                            },
                            None,
                            None,
                        );
                        self.parallel_at.push((p, at.clone()));
                        p
                    } else if c == 3 && !one_of {
                        // integer | number: the unconstrained number holds them all.
                        match many.iter().find(|&&b| {
                            matches!(
                                &self.nodes[b as usize].kind,
                                Kind::Number {
                                    min: None,
                                    max: None,
                                    xmin: None,
                                    xmax: None,
                                    allowed: None
                                }
                            )
                        }) {
                            Some(&b) => b,
                            None => return Err(E::AmbiguousUnion { at }),
                        }
                    } else if c == 4 && !one_of {
                        let mut allowed = Some(Vec::new());
                        for &b in many {
                            if let Kind::Boolean { allowed: a } = &self.nodes[b as usize].kind {
                                match (a, &mut allowed) {
                                    (Some(a), Some(acc)) => acc.extend(a.iter().copied()),
                                    _ => allowed = None,
                                }
                            }
                        }
                        self.push_node(Kind::Boolean { allowed }, None, None)
                    } else if c == 5 && !one_of {
                        many[0]
                    } else {
                        return Err(E::AmbiguousUnion { at });
                    }
                }
            };
        }
        Ok(by)
    }
}
