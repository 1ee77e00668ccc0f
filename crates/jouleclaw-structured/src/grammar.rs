//! The compiled grammar: a JSON Schema 2020-12 subset, its limits, its canonical form and
//! digest, and its canonical JSON Schema projection.

use std::borrow::Cow;
use std::sync::Arc;

use jouleclaw_stream::canon;

use crate::error::{Result, StructuredError as E};
use crate::json::{Json, Num};

/// The `$schema` URI of the subset (JSON Schema 2020-12).
pub const SCHEMA_DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

/// The format tag inside the grammar's canonical form.
pub const GRAMMAR_FORMAT: &str = "jouleclaw-structured/1";

/// Most members one object may declare, `enum` values one schema may list and branches one
/// `oneOf` may hold. The validator tracks them in fixed 256-bit sets, so it never allocates
/// per key or per enum value.
pub const MAX_MEMBERS: usize = 256;

/// Most branches of one first-byte class an `anyOf` of the JSON Schema profile may read side by
/// side (objects without a common tag, arrays): the validator keeps one machine per branch
/// while such a value is open, so this bounds its memory and work.
pub const MAX_PARALLEL_BRANCHES: usize = 8;

/// Most schema objects nested in one another while a schema compiles, counted through
/// references (a schema text nests at most 128 levels of JSON, a chain of references does not),
/// and the deepest nesting of unions and of the projection: beyond it `schema_over_limit`
/// (`max_schema_nesting`), before any recursion could exhaust the stack.
pub(crate) const MAX_SCHEMA_NESTING: usize = 128;

/// Most schema objects one projection writes (a schema that reuses one definition in many
/// places is written out at each place; this bounds that growth).
pub const PROJECTION_NODES: u32 = 1 << 16;

/// The largest schema text [`Grammar::compile`] reads.
pub const MAX_SCHEMA_BYTES: usize = 1 << 20;

/// Ceiling of [`Limits::max_number_chars`] (the validator keeps a number token in a fixed
/// buffer of this size).
pub const MAX_NUMBER_CHARS_CEILING: usize = 128;

/// The largest magnitude of an `integer`: `2^53 - 1`.
pub const MAX_SAFE_INTEGER: i64 = canon::MAX_SAFE_INTEGER as i64;

/// The hard limits of a grammar. Each is part of the grammar's canonical form and digest.
///
/// `max_string_chars` and `max_array_items` are folded into the projection as the effective
/// `maxLength` / `maxItems` of every string and array; `max_depth` is checked when the schema
/// is compiled (a document cannot nest deeper than its schema); `max_document_bytes` and
/// `max_number_chars` are checked on the document bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limits {
    /// Largest document, in bytes (whitespace included). Default 65,536.
    pub max_document_bytes: u64,
    /// Deepest container nesting of the schema (the root object or array is depth 1). Default 16.
    pub max_depth: u32,
    /// Longest string value, in characters (Unicode scalar values). Default 4,096.
    pub max_string_chars: u32,
    /// Most elements of one array. Default 1,024.
    pub max_array_items: u32,
    /// Longest number token, in bytes. Default 64, at most 128.
    pub max_number_chars: u32,
}

impl Limits {
    /// The defaults: 64 KiB documents, depth 16, 4,096-character strings, 1,024-element
    /// arrays, 64-byte numbers.
    pub const DEFAULT: Limits = Limits {
        max_document_bytes: 65_536,
        max_depth: 16,
        max_string_chars: 4_096,
        max_array_items: 1_024,
        max_number_chars: 64,
    };

    fn validate(&self) -> Result<()> {
        if self.max_document_bytes == 0 || self.max_document_bytes > canon::MAX_SAFE_INTEGER {
            return Err(E::InvalidLimits {
                field: "max_document_bytes",
            });
        }
        if self.max_depth == 0 || self.max_depth > 64 {
            return Err(E::InvalidLimits { field: "max_depth" });
        }
        if self.max_string_chars == 0 {
            return Err(E::InvalidLimits {
                field: "max_string_chars",
            });
        }
        if self.max_array_items == 0 {
            return Err(E::InvalidLimits {
                field: "max_array_items",
            });
        }
        if self.max_number_chars == 0 || self.max_number_chars as usize > MAX_NUMBER_CHARS_CEILING {
            return Err(E::InvalidLimits {
                field: "max_number_chars",
            });
        }
        Ok(())
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

pub(crate) type NodeId = u32;

/// A 256-bit member set.
pub(crate) type Bits = [u64; 4];

pub(crate) fn bit(i: usize) -> Bits {
    let mut b = [0; 4];
    b[i / 64] = 1 << (i % 64);
    b
}

pub(crate) fn first_n(n: usize) -> Bits {
    let mut b = [0u64; 4];
    for (w, word) in b.iter_mut().enumerate() {
        let lo = w * 64;
        if n >= lo + 64 {
            *word = u64::MAX;
        } else if n > lo {
            *word = (1u64 << (n - lo)) - 1;
        }
    }
    b
}

#[derive(Debug, Clone)]
pub(crate) struct Prop {
    pub(crate) name: String,
    pub(crate) node: NodeId,
}

#[derive(Debug, Clone)]
pub(crate) struct Branch {
    pub(crate) tag_value: String,
    pub(crate) node: NodeId,
    pub(crate) tag_index: u16,
}

/// A `minimum`/`maximum` of a `number`: the token text (a valid JSON number).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bound(pub(crate) String);

/// Exact integer bounds that do not fit the `i64` fast path (inclusive; `None`: no bound a
/// number token of at most `MAX_NUMBER_CHARS_CEILING` bytes can reach).
#[derive(Debug, Clone)]
pub(crate) struct Wide {
    pub(crate) lo: Option<crate::bigint::Big>,
    pub(crate) hi: Option<crate::bigint::Big>,
}

/// `dependentRequired` of an object: (declared property index, the declared properties it
/// requires).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dependent(pub(crate) Vec<(u16, Bits)>);

/// No node: an empty slot of a union's first-byte table.
pub(crate) const NONE: NodeId = NodeId::MAX;

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Object {
        props: Vec<Prop>,
        all: Bits,
        required: Bits,
        max_properties: Option<u32>,
        /// Other properties: `None` closed (`additionalProperties: false`), else the node
        /// their values must match ([`Kind::Any`] when `additionalProperties` is absent).
        extra: Option<NodeId>,
        min_properties: u32,
        /// `dependentRequired` (draft-07's array-form `dependencies`): when the declared
        /// property of the index is present, every declared property of the set must be too.
        /// Boxed (`None` when empty): the schema compiler's frames hold this enum.
        dependent: Option<Box<Dependent>>,
    },
    OneOf {
        tag: String,
        branches: Vec<Branch>,
    },
    Array {
        /// The schemas of the first elements, in order (`prefixItems`, or a draft-07 /
        /// 2019-09 array-form `items`).
        prefix: Vec<NodeId>,
        /// The schema of every later element.
        items: NodeId,
        max_items: u32,
        min_items: u32,
        /// `uniqueItems: true` (JSON Schema profile): no two elements equal as JSON Schema
        /// compares values.
        unique: bool,
    },
    String {
        min: u32,
        max: u32,
        allowed: Option<Vec<String>>,
        /// `pattern` (JSON Schema profile only).
        pattern: Option<Box<crate::pattern::Pattern>>,
    },
    Integer {
        lo: i64,
        hi: i64,
        allowed: Option<Vec<i64>>,
        /// Set when a bound is beyond +-(2^53-1): then these bounds apply, not `lo`/`hi`.
        wide: Option<Box<Wide>>,
    },
    Number {
        min: Option<Bound>,
        max: Option<Bound>,
        xmin: Option<Bound>,
        xmax: Option<Bound>,
        allowed: Option<Vec<Bound>>,
    },
    Boolean {
        allowed: Option<Vec<bool>>,
    },
    Null,
    /// Any well-formed JSON value (the empty schema, `true`, absent `additionalProperties`).
    Any,
    /// `anyOf` / `oneOf` / a type list / an untyped `enum`: decided at the value's first byte.
    Union {
        /// As declared (the projection).
        branches: Vec<NodeId>,
        one_of: bool,
        /// The branch per first-byte class (object, array, string, number, boolean, null), or
        /// [`NONE`]. Filled when the grammar is finished.
        by: [NodeId; 6],
    },
    /// Several branches of one first-byte class (objects without a common tag, arrays) of an
    /// `anyOf`, read side by side: the value is valid when one branch accepts it, refused at the
    /// byte where the last live branch refuses. Made by the JSON Schema profile when a union is
    /// decided (it is the union's first-byte slot, never a declared schema); its branches hold
    /// no other such node (checked at compile time), so at most one set runs at a time.
    Parallel {
        branches: Vec<NodeId>,
    },
    /// A `$ref` while compiling; resolved away before the grammar is used.
    Ref(NodeId),
}

#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
}

/// A compiled structured-output grammar: one object from which the streaming validator
/// ([`crate::StructuredValidator`]), the whole-document validator ([`Grammar::validate`]) and
/// the canonical JSON Schema projection ([`Grammar::projection`]) are all generated.
///
/// Cheap to share: wrap it in an [`Arc`] once and hand clones to validators and oracles.
#[derive(Debug, Clone)]
pub struct Grammar {
    pub(crate) nodes: Vec<Node>,
    pub(crate) root: NodeId,
    pub(crate) limits: Limits,
    projection: Vec<u8>,
    canonical: Vec<u8>,
    digest: blake3::Hash,
    ignored: Vec<IgnoredKeyword>,
    /// The member-text tries of the nodes (derived; not in the canonical form).
    pub(crate) tries: crate::trie::Tries,
    /// Some array node has `uniqueItems: true` (derived): validators keep the text of its
    /// elements.
    pub(crate) unique: bool,
}

/// Which reading of the schema [`Grammar::compile_with`] applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Profile {
    /// The closed subset of `jouleclaw-structured/1` ([`Grammar::compile`]): every object
    /// states `additionalProperties: false`, every schema a `type` (or `oneOf`), no
    /// annotation but `title`/`description`, no `$ref`.
    Subset,
    /// JSON Schema 2020-12 meanings for what tool-schema generators write: absent
    /// `additionalProperties` allows other properties, annotations are ignored (and
    /// reported), `anyOf`/`oneOf`/type lists decided at a value's first byte or read side by
    /// side, untyped `const`/`enum`, local `$ref`/`$defs` (recursion bounded by `max_depth`),
    /// exact bounds of any size, `minItems`/`minProperties`/`exclusiveMinimum`/
    /// `exclusiveMaximum`, `pattern` (ECMA-262's regular part, as a deterministic automaton).
    JsonSchema,
}

/// What [`Profile::JsonSchema`] does with a keyword that is neither JSON Schema 2020-12
/// vocabulary nor an annotation (`optional`, `x-foo`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UnknownKeywords {
    /// Refuse the schema (`schema_unknown_keyword`): the default. A keyword the author wrote
    /// may be a constraint; ignoring it would accept documents the author meant to refuse.
    Refuse,
    /// Ignore it as JSON Schema does, and list it in [`Grammar::ignored_keywords`].
    Ignore,
}

/// How [`Grammar::compile_with`] reads a schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CompileOptions {
    /// The grammar's limits.
    pub limits: Limits,
    /// The reading of the schema.
    pub profile: Profile,
    /// Keywords outside JSON Schema (only [`Profile::JsonSchema`]; the subset refuses them).
    pub unknown_keywords: UnknownKeywords,
}

impl CompileOptions {
    /// [`Profile::JsonSchema`], [`Limits::DEFAULT`], unknown keywords refused.
    pub const JSON_SCHEMA: CompileOptions = CompileOptions {
        limits: Limits::DEFAULT,
        profile: Profile::JsonSchema,
        unknown_keywords: UnknownKeywords::Refuse,
    };
    /// [`Profile::Subset`] with [`Limits::DEFAULT`] (what [`Grammar::compile`] does).
    pub const SUBSET: CompileOptions = CompileOptions {
        limits: Limits::DEFAULT,
        profile: Profile::Subset,
        unknown_keywords: UnknownKeywords::Refuse,
    };
}

/// A keyword [`Profile::JsonSchema`] read and did not enforce: an annotation, or an unknown
/// keyword under [`UnknownKeywords::Ignore`]. None of them is in the projection or the digest.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IgnoredKeyword {
    /// JSON Pointer of the schema object that holds it.
    pub at: String,
    /// The keyword.
    pub keyword: String,
    /// `true` for an annotation (`default`, `examples`, `format`, ...), `false` for an unknown
    /// keyword ignored by choice.
    pub annotation: bool,
}

/// A canonical JSON value used to write the projection: its texts borrowed from the grammar
/// (or static) where they are, owned only where they are made.
enum CVal<'a> {
    Bool(bool),
    Int(i64),
    Num(Cow<'a, str>),
    Str(Cow<'a, str>),
    Arr(Vec<CVal<'a>>),
    Obj(Vec<(Cow<'a, str>, CVal<'a>)>),
}

/// Orders `a` and `b` by their UTF-16 code units (the canonical form's key order). Below
/// U+E000 a character's UTF-16 code unit is its code point, and UTF-8 bytes order as code
/// points: when neither string holds a byte from 0xEE up (the lead bytes of U+E000 and above),
/// the byte order is the UTF-16 order.
fn utf16_cmp(a: &str, b: &str) -> core::cmp::Ordering {
    if a.bytes().chain(b.bytes()).all(|c| c < 0xee) {
        return a.as_bytes().cmp(b.as_bytes());
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

fn write_cval(out: &mut Vec<u8>, v: &CVal<'_>) {
    match v {
        CVal::Bool(true) => out.extend_from_slice(b"true"),
        CVal::Bool(false) => out.extend_from_slice(b"false"),
        CVal::Int(i) => {
            // Safe integers without an allocation; any other as `to_string` writes it (the
            // same decimal text).
            if canon::write_i64(out, *i).is_err() {
                out.extend_from_slice(i.to_string().as_bytes());
            }
        }
        CVal::Num(t) => out.extend_from_slice(t.as_bytes()),
        CVal::Str(s) => canon::write_str(out, s),
        CVal::Arr(a) => {
            out.push(b'[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_cval(out, x);
            }
            out.push(b']');
        }
        CVal::Obj(m) if m.is_sorted_by(|x, y| utf16_cmp(&x.0, &y.0).is_le()) => {
            // Already in the canonical order: written as it is, without sorting a copy.
            write_members(out, m.iter());
        }
        CVal::Obj(m) => {
            let mut keys: Vec<&(Cow<'_, str>, CVal<'_>)> = m.iter().collect();
            keys.sort_by(|x, y| utf16_cmp(&x.0, &y.0));
            write_members(out, keys.into_iter());
        }
    }
}

/// An object's members, in the order given.
fn write_members<'a, 'b: 'a>(
    out: &mut Vec<u8>,
    members: impl Iterator<Item = &'a (Cow<'b, str>, CVal<'b>)>,
) {
    out.push(b'{');
    for (i, (k, x)) in members.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        canon::write_str(out, k);
        out.push(b':');
        write_cval(out, x);
    }
    out.push(b'}');
}

pub(crate) fn ptr_push(at: &str, seg: &str) -> String {
    let mut s = String::with_capacity(at.len() + seg.len() + 1);
    s.push_str(at);
    s.push('/');
    for c in seg.chars() {
        match c {
            '~' => s.push_str("~0"),
            '/' => s.push_str("~1"),
            c => s.push(c),
        }
    }
    s
}

const ANNOTATIONS: &[&str] = &["title", "description"];

/// Every keyword of the subset (each allowed only where `spec/STRUCTURED-OUTPUT.md` says).
const SUBSET: &[&str] = &[
    "type",
    "oneOf",
    "properties",
    "required",
    "additionalProperties",
    "maxProperties",
    "items",
    "maxItems",
    "minLength",
    "maxLength",
    "enum",
    "const",
    "minimum",
    "maximum",
];

pub(crate) struct Compiler {
    pub(crate) nodes: Vec<Node>,
    pub(crate) limits: Limits,
    pub(crate) unknown: UnknownKeywords,
    pub(crate) ignored: Vec<IgnoredKeyword>,
    pub(crate) refs: std::collections::HashMap<String, NodeId>,
    pub(crate) any: Option<NodeId>,
    pub(crate) union_at: std::collections::HashMap<NodeId, String>,
    /// The side-by-side nodes made while deciding unions, with their union's pointer.
    pub(crate) parallel_at: Vec<(NodeId, String)>,
    /// The unions that stand beside `"type": "object"` (each branch must be an object).
    pub(crate) object_unions: std::collections::HashSet<NodeId>,
    /// Schema objects being compiled, one inside another (through references).
    pub(crate) nesting: usize,
    /// What is left of [`crate::pattern::PATTERN_WORK_BUDGET`] for this schema's patterns.
    pub(crate) pattern_budget: u64,
    /// The patterns compiled so far whose compile can be replayed (see
    /// [`crate::pattern::Spent::replay`]): a text met again is cloned, not compiled again.
    pub(crate) patterns: Vec<(Box<crate::pattern::Pattern>, crate::pattern::Spent)>,
    /// The dialect the root's `$schema` names (2020-12 when absent).
    pub(crate) dialect: Dialect,
}

/// The JSON Schema dialects [`Profile::JsonSchema`] reads, named by the root's `$schema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Draft-07 (`http://json-schema.org/draft-07/schema#`).
    Draft7,
    /// Draft 2019-09.
    Draft2019,
    /// Draft 2020-12 (also when `$schema` is absent).
    Draft2020,
}

impl Dialect {
    /// The dialect a `$schema` URI names (with or without an empty fragment; draft-07's over
    /// `http` or `https`), or `None`.
    pub(crate) fn of(uri: &str) -> Option<Dialect> {
        let bare = uri.strip_suffix('#').unwrap_or(uri);
        match bare {
            SCHEMA_DIALECT => Some(Dialect::Draft2020),
            "https://json-schema.org/draft/2019-09/schema" => Some(Dialect::Draft2019),
            "http://json-schema.org/draft-07/schema"
            | "https://json-schema.org/draft-07/schema" => Some(Dialect::Draft7),
            _ => None,
        }
    }
}

/// Refuses a schema object of `kind` that no value matches (`schema_unsatisfiable`), naming
/// the keyword that leaves nothing.
pub(crate) fn satisfiable(kind: &Kind, at: &str) -> Result<()> {
    use core::cmp::Ordering::{Equal, Greater};
    let cmp = |a: &Bound, b: &Bound| crate::decimal::cmp(a.0.as_bytes(), b.0.as_bytes());
    let none: Option<&'static str> = match kind {
        Kind::Integer {
            lo,
            hi,
            allowed,
            wide: None,
        } => {
            if lo > hi {
                Some("maximum")
            } else if allowed
                .as_ref()
                .is_some_and(|a| a.iter().all(|v| v < lo || v > hi))
            {
                Some("enum")
            } else {
                None
            }
        }
        Kind::Integer { wide: Some(w), .. } => match (&w.lo, &w.hi) {
            (Some(l), Some(h)) if l > h => Some("maximum"),
            _ => None,
        },
        Kind::Number {
            min,
            max,
            xmin,
            xmax,
            ..
        } => {
            let pair = |a: &Option<Bound>, b: &Option<Bound>, strict: bool| match (a, b) {
                (Some(a), Some(b)) => {
                    let o = cmp(a, b);
                    o == Greater || (strict && o == Equal)
                }
                _ => false,
            };
            if pair(min, max, false) || pair(xmin, max, true) {
                Some("maximum")
            } else if pair(min, xmax, true) || pair(xmin, xmax, true) {
                Some("exclusiveMaximum")
            } else {
                None
            }
        }
        Kind::String { min, max, .. } if min > max => Some("maxLength"),
        Kind::Array {
            max_items,
            min_items,
            ..
        } if min_items > max_items => Some("maxItems"),
        Kind::Object {
            required,
            max_properties: Some(m),
            min_properties,
            ..
        } => {
            let req: u32 = required.iter().map(|w| w.count_ones()).sum();
            if req > *m || min_properties > m {
                Some("maxProperties")
            } else {
                None
            }
        }
        _ => None,
    };
    match none {
        Some(keyword) => Err(E::Unsatisfiable {
            keyword,
            at: at.to_owned(),
        }),
        None => Ok(()),
    }
}

pub(crate) fn invalid(keyword: &str, at: &str, reason: &'static str) -> E {
    E::InvalidKeyword {
        keyword: keyword.to_owned(),
        at: at.to_owned(),
        reason,
    }
}

/// The `required` member set of an object declaring `props`: only declared names, each once.
pub(crate) fn required_bits(v: Option<&Json>, props: &[Prop], at: &str) -> Result<Bits> {
    let mut required = [0u64; 4];
    match v {
        None => {}
        Some(Json::Arr(names)) => {
            for n in names {
                let Json::Str(n) = n else {
                    return Err(invalid("required", at, "must be an array of strings"));
                };
                let Some(i) = props.iter().position(|p| p.name == *n) else {
                    return Err(invalid("required", at, "names an undeclared property"));
                };
                let b = bit(i);
                if (0..4).any(|w| required[w] & b[w] != 0) {
                    return Err(invalid("required", at, "names a property twice"));
                }
                for w in 0..4 {
                    required[w] |= b[w];
                }
            }
        }
        Some(_) => return Err(invalid("required", at, "must be an array of strings")),
    }
    Ok(required)
}

pub(crate) fn count(v: &Json, keyword: &str, at: &str) -> Result<u32> {
    match v {
        Json::Num(crate::json::Number {
            num: Num::Int(i), ..
        }) => {
            u32::try_from(*i).map_err(|_| invalid(keyword, at, "must be an integer in [0, 2^32-1]"))
        }
        _ => Err(invalid(keyword, at, "must be an integer in [0, 2^32-1]")),
    }
}

/// [`count`] as JSON Schema reads it: any number whose value is a non-negative integer
/// (`2.0`, `2e0`, `20e-1`), exactly, from its token text.
pub(crate) fn count_2020(v: &Json, keyword: &str, at: &str) -> Result<u32> {
    if let Json::Num(n) = v
        && !matches!(n.num, Num::Int(_))
        && let Ok(b) = crate::bigint::round(&n.text, false)
        && crate::bigint::round(&n.text, true).as_ref() == Ok(&b)
        && let Some(i) = b.to_i64()
    {
        return u32::try_from(i)
            .map_err(|_| invalid(keyword, at, "must be an integer in [0, 2^32-1]"));
    }
    count(v, keyword, at)
}

fn safe_int(v: &Json, keyword: &str, at: &str) -> Result<i64> {
    match v {
        Json::Num(crate::json::Number {
            num: Num::Int(i), ..
        }) if i.unsigned_abs() <= MAX_SAFE_INTEGER as u64 => Ok(*i),
        _ => Err(invalid(
            keyword,
            at,
            "must be an integer within +-(2^53-1) for an integer schema",
        )),
    }
}

pub(crate) fn number_text(v: &Json, keyword: &str, at: &str) -> Result<String> {
    match v {
        Json::Num(n) => match n.num {
            Num::Int(i) => Ok(i.to_string()),
            Num::Float(f) if f.is_finite() => Ok(crate::bigint::canonical_decimal(&n.text, f)),
            Num::Float(_) => Err(invalid(keyword, at, "must be a number")),
        },
        _ => Err(invalid(keyword, at, "must be a number")),
    }
}

impl Compiler {
    fn add(&mut self, node: Node) -> NodeId {
        self.nodes.push(node);
        // The node count is bounded by the schema size (1 MiB), far below u32::MAX.
        (self.nodes.len() - 1) as NodeId
    }

    fn compile(&mut self, s: &Json, at: &str, depth: u32, root: bool) -> Result<NodeId> {
        let Json::Obj(members) = s else {
            return Err(E::InvalidKeyword {
                keyword: "type".into(),
                at: at.to_owned(),
                reason: "a schema must be a JSON object (boolean schemas are not supported)",
            });
        };
        // Keywords are checked in sorted order, so the one named by a refusal does not depend
        // on the order the schema lists them in.
        let mut keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
        keys.sort_unstable();
        let get = |k: &str| s.get(k);
        let annotation = |k: &str| -> Result<Option<String>> {
            match get(k) {
                None => Ok(None),
                Some(Json::Str(t)) => Ok(Some(t.clone())),
                Some(_) => Err(invalid(k, at, "must be a string")),
            }
        };
        let title = annotation("title")?;
        let description = annotation("description")?;
        if let Some(d) = get("$schema") {
            if !root {
                return Err(E::UnsupportedKeyword {
                    keyword: "$schema".into(),
                    at: at.to_owned(),
                });
            }
            if *d != Json::Str(SCHEMA_DIALECT.into()) {
                return Err(invalid("$schema", at, "must be the 2020-12 dialect URI"));
            }
        }
        let common = |k: &str| ANNOTATIONS.contains(&k) || (root && k == "$schema");
        // Keywords outside the subset anywhere are named before anything else is checked.
        for k in &keys {
            if !(common(k) || SUBSET.contains(k)) {
                return Err(E::UnsupportedKeyword {
                    keyword: (*k).to_owned(),
                    at: at.to_owned(),
                });
            }
        }

        if let Some(one_of) = get("oneOf") {
            for k in &keys {
                if !(common(k) || *k == "oneOf" || *k == "type") {
                    return Err(E::UnsupportedKeyword {
                        keyword: (*k).to_owned(),
                        at: at.to_owned(),
                    });
                }
            }
            if let Some(t) = get("type")
                && *t != Json::Str("object".into())
            {
                return Err(invalid("type", at, "beside oneOf, type must be \"object\""));
            }
            let kind = self.one_of(one_of, &ptr_push(at, "oneOf"), depth)?;
            return Ok(self.add(Node {
                kind,
                title,
                description,
            }));
        }

        let ty = match get("type") {
            None => {
                return Err(E::MissingKeyword {
                    keyword: "type",
                    at: at.to_owned(),
                });
            }
            Some(Json::Str(t)) => t.as_str(),
            Some(Json::Arr(_)) => {
                return Err(invalid("type", at, "type lists are not supported"));
            }
            Some(_) => return Err(invalid("type", at, "must be a string")),
        };
        let allowed_for: &[&str] = match ty {
            "object" => &[
                "properties",
                "required",
                "additionalProperties",
                "maxProperties",
            ],
            "array" => &["items", "maxItems"],
            "string" => &["minLength", "maxLength", "enum", "const"],
            "integer" => &["minimum", "maximum", "enum", "const"],
            "number" => &["minimum", "maximum"],
            "boolean" | "null" => &["enum", "const"],
            _ => return Err(invalid("type", at, "unknown type name")),
        };
        for k in &keys {
            if !(common(k) || *k == "type" || allowed_for.contains(k)) {
                return Err(E::UnsupportedKeyword {
                    keyword: (*k).to_owned(),
                    at: at.to_owned(),
                });
            }
        }
        let values = |check: &dyn Fn(&Json) -> bool| -> Result<Option<Vec<Json>>> {
            match (get("enum"), get("const")) {
                (Some(_), Some(_)) => Err(invalid("const", at, "enum and const together")),
                (None, None) => Ok(None),
                (None, Some(c)) => {
                    if check(c) {
                        Ok(Some(vec![c.clone()]))
                    } else {
                        Err(invalid("const", at, "value is not of the schema's type"))
                    }
                }
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
                        if !check(v) {
                            return Err(invalid("enum", at, "value is not of the schema's type"));
                        }
                        if vs[..i].contains(v) {
                            return Err(invalid("enum", at, "values must be unique"));
                        }
                    }
                    Ok(Some(vs.clone()))
                }
                (Some(_), None) => Err(invalid("enum", at, "must be an array")),
            }
        };
        let kind = match ty {
            "object" => self.object(s, at, depth)?,
            "array" => {
                if depth >= self.limits.max_depth {
                    return Err(E::SchemaOverLimit {
                        limit: "max_depth",
                        at: at.to_owned(),
                    });
                }
                let Some(items) = get("items") else {
                    return Err(E::MissingKeyword {
                        keyword: "items",
                        at: at.to_owned(),
                    });
                };
                let max_items = match get("maxItems") {
                    Some(v) => count(v, "maxItems", at)?.min(self.limits.max_array_items),
                    None => self.limits.max_array_items,
                };
                let items = self.compile(items, &ptr_push(at, "items"), depth + 1, false)?;
                Kind::Array {
                    prefix: Vec::new(),
                    items,
                    max_items,
                    min_items: 0,
                    unique: false,
                }
            }
            "string" => {
                let min = get("minLength")
                    .map(|v| count(v, "minLength", at))
                    .transpose()?
                    .unwrap_or(0);
                let max = match get("maxLength") {
                    Some(v) => count(v, "maxLength", at)?.min(self.limits.max_string_chars),
                    None => self.limits.max_string_chars,
                };
                let allowed = values(&|v| matches!(v, Json::Str(_)))?.map(|vs| {
                    vs.into_iter()
                        .filter_map(|v| match v {
                            Json::Str(t) => Some(t),
                            _ => None,
                        })
                        .collect()
                });
                Kind::String {
                    min,
                    max,
                    allowed,
                    pattern: None,
                }
            }
            "integer" => {
                let lo = get("minimum")
                    .map(|v| safe_int(v, "minimum", at))
                    .transpose()?
                    .unwrap_or(-MAX_SAFE_INTEGER);
                let hi = get("maximum")
                    .map(|v| safe_int(v, "maximum", at))
                    .transpose()?
                    .unwrap_or(MAX_SAFE_INTEGER);
                let allowed = values(&|v| {
                    matches!(v.num(), Some(n) if matches!(n.num, Num::Int(i) if i.unsigned_abs() <= MAX_SAFE_INTEGER as u64))
                })?
                .map(|vs| {
                    vs.into_iter()
                        .filter_map(|v| match v.num().map(|n| &n.num) {
                            Some(Num::Int(i)) => Some(*i),
                            _ => None,
                        })
                        .collect()
                });
                Kind::Integer {
                    lo,
                    hi,
                    allowed,
                    wide: None,
                }
            }
            "number" => Kind::Number {
                min: get("minimum")
                    .map(|v| number_text(v, "minimum", at).map(Bound))
                    .transpose()?,
                max: get("maximum")
                    .map(|v| number_text(v, "maximum", at).map(Bound))
                    .transpose()?,
                xmin: None,
                xmax: None,
                allowed: None,
            },
            "boolean" => Kind::Boolean {
                allowed: values(&|v| matches!(v, Json::Bool(_)))?.map(|vs| {
                    vs.into_iter()
                        .filter_map(|v| match v {
                            Json::Bool(b) => Some(b),
                            _ => None,
                        })
                        .collect()
                }),
            },
            _ => {
                values(&|v| matches!(v, Json::Null))?;
                Kind::Null
            }
        };
        Ok(self.add(Node {
            kind,
            title,
            description,
        }))
    }

    fn object(&mut self, s: &Json, at: &str, depth: u32) -> Result<Kind> {
        if depth >= self.limits.max_depth {
            return Err(E::SchemaOverLimit {
                limit: "max_depth",
                at: at.to_owned(),
            });
        }
        match s.get("additionalProperties") {
            Some(Json::Bool(false)) => {}
            Some(_) => {
                return Err(invalid(
                    "additionalProperties",
                    at,
                    "only false is supported (objects are closed)",
                ));
            }
            None => {
                return Err(E::MissingKeyword {
                    keyword: "additionalProperties",
                    at: at.to_owned(),
                });
            }
        }
        let declared: &[(String, Json)] = match s.get("properties") {
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
            let node = self.compile(sub, &ptr_push(&pat, name), depth + 1, false)?;
            props.push(Prop {
                name: name.clone(),
                node,
            });
        }
        let required = required_bits(s.get("required"), &props, at)?;
        let max_properties = s
            .get("maxProperties")
            .map(|v| count(v, "maxProperties", at))
            .transpose()?;
        Ok(Kind::Object {
            all: first_n(props.len()),
            props,
            required,
            max_properties,
            extra: None,
            min_properties: 0,
            dependent: None,
        })
    }

    fn one_of(&mut self, v: &Json, at: &str, depth: u32) -> Result<Kind> {
        let Json::Arr(branches) = v else {
            return Err(invalid("oneOf", at, "must be an array of object schemas"));
        };
        if branches.is_empty() {
            return Err(invalid("oneOf", at, "must not be empty"));
        }
        if branches.len() > MAX_MEMBERS {
            return Err(E::SchemaOverLimit {
                limit: "max_members",
                at: at.to_owned(),
            });
        }
        let mut ids = Vec::with_capacity(branches.len());
        for (i, b) in branches.iter().enumerate() {
            let bat = ptr_push(at, &i.to_string());
            if b.get("type") != Some(&Json::Str("object".into())) || b.get("oneOf").is_some() {
                return Err(invalid(
                    "oneOf",
                    at,
                    "every branch must be an object schema (type \"object\")",
                ));
            }
            ids.push(self.compile(b, &bat, depth, false)?);
        }
        if let Some((tag, branches)) = self.find_tag(&ids) {
            return Ok(Kind::OneOf { tag, branches });
        }
        Err(invalid(
            "oneOf",
            at,
            "branches need a required tag property whose schema is a string const, distinct per branch",
        ))
    }

    /// The tag of object nodes `ids`: a property every branch requires, as a string const,
    /// with distinct values. Several candidates: the smallest name (byte order) of the first
    /// branch's properties.
    pub(crate) fn find_tag(&self, ids: &[NodeId]) -> Option<(String, Vec<Branch>)> {
        let tag_of = |node: NodeId, name: &str| -> Option<(String, u16)> {
            let Kind::Object {
                props, required, ..
            } = &self.nodes[node as usize].kind
            else {
                return None;
            };
            let i = props.iter().position(|p| p.name == name)?;
            let b = bit(i);
            if (0..4).all(|w| required[w] & b[w] == 0) {
                return None;
            }
            match &self.nodes[props[i].node as usize].kind {
                Kind::String {
                    allowed: Some(a), ..
                } if a.len() == 1 => Some((a[0].clone(), i as u16)),
                _ => None,
            }
        };
        let Kind::Object { props: first, .. } = &self.nodes[*ids.first()? as usize].kind else {
            return None;
        };
        let mut names: Vec<&str> = first.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        for name in names {
            let mut out: Vec<Branch> = Vec::with_capacity(ids.len());
            for &id in ids {
                match tag_of(id, name) {
                    Some((value, tag_index)) if !out.iter().any(|b| b.tag_value == value) => out
                        .push(Branch {
                            tag_value: value,
                            node: id,
                            tag_index,
                        }),
                    _ => break,
                }
            }
            if out.len() == ids.len() {
                return Some((name.to_owned(), out));
            }
        }
        None
    }
}

impl Grammar {
    /// Compiles a schema (JSON text) with [`Limits::DEFAULT`].
    pub fn compile(schema: &[u8]) -> Result<Grammar> {
        Self::compile_with_limits(schema, Limits::DEFAULT)
    }

    /// Compiles a schema (JSON text) with `limits`. Refuses anything outside the subset
    /// (`spec/STRUCTURED-OUTPUT.md`) with a stable code naming the keyword.
    pub fn compile_with_limits(schema: &[u8], limits: Limits) -> Result<Grammar> {
        Self::compile_with(
            schema,
            &CompileOptions {
                limits,
                ..CompileOptions::SUBSET
            },
        )
    }

    /// Compiles a schema with JSON Schema 2020-12 meanings ([`Profile::JsonSchema`],
    /// [`Limits::DEFAULT`], unknown keywords refused): what tool-schema generators write.
    pub fn compile_json_schema(schema: &[u8]) -> Result<Grammar> {
        Self::compile_with(schema, &CompileOptions::JSON_SCHEMA)
    }

    /// Compiles a schema (JSON text) as `options` say.
    pub fn compile_with(schema: &[u8], options: &CompileOptions) -> Result<Grammar> {
        let limits = options.limits;
        limits.validate()?;
        if schema.len() > MAX_SCHEMA_BYTES {
            return Err(E::SchemaOverLimit {
                limit: "max_schema_bytes",
                at: String::new(),
            });
        }
        let json = Json::parse(schema).map_err(|message| E::SchemaNotJson { message })?;
        let mut c = Compiler {
            nodes: Vec::new(),
            limits,
            unknown: options.unknown_keywords,
            ignored: Vec::new(),
            refs: std::collections::HashMap::new(),
            any: None,
            union_at: std::collections::HashMap::new(),
            parallel_at: Vec::new(),
            object_unions: std::collections::HashSet::new(),
            nesting: 0,
            pattern_budget: crate::pattern::PATTERN_WORK_BUDGET,
            patterns: Vec::new(),
            dialect: Dialect::Draft2020,
        };
        let root = match options.profile {
            Profile::Subset => c.compile(&json, "", 0, true)?,
            Profile::JsonSchema => {
                let r = c.compile_2020(&json, &json, "", 0, true)?;
                c.finish(r)?
            }
        };
        let nodes = c.nodes;
        let tries = crate::trie::Tries::build(&nodes);
        let unique = nodes
            .iter()
            .any(|n| matches!(n.kind, Kind::Array { unique: true, .. }));
        let mut g = Grammar {
            unique,
            tries,
            nodes,
            root,
            limits,
            projection: Vec::new(),
            canonical: Vec::new(),
            digest: blake3::hash(b""),
            ignored: c.ignored,
        };
        let proj = g.project_root()?;
        let mut projection = Vec::with_capacity(schema.len());
        write_cval(&mut projection, &proj);
        let l = limits;
        let canonical_val = CVal::Obj(vec![
            ("grammar".into(), CVal::Str(GRAMMAR_FORMAT.into())),
            (
                "limits".into(),
                CVal::Obj(vec![
                    (
                        "max_array_items".into(),
                        CVal::Int(i64::from(l.max_array_items)),
                    ),
                    ("max_depth".into(), CVal::Int(i64::from(l.max_depth))),
                    (
                        "max_document_bytes".into(),
                        // Validated below 2^53.
                        CVal::Int(l.max_document_bytes as i64),
                    ),
                    (
                        "max_number_chars".into(),
                        CVal::Int(i64::from(l.max_number_chars)),
                    ),
                    (
                        "max_string_chars".into(),
                        CVal::Int(i64::from(l.max_string_chars)),
                    ),
                ]),
            ),
        ]);
        // The schema's key sorts last ("grammar" < "limits" < "schema"): the canonical form is
        // the other two members, then the projection already written.
        let mut canonical = Vec::with_capacity(projection.len() + 160);
        write_cval(&mut canonical, &canonical_val);
        canonical.pop();
        canonical.extend_from_slice(b",\"schema\":");
        canonical.extend_from_slice(&projection);
        canonical.push(b'}');
        g.digest = blake3::hash(&canonical);
        g.projection = projection;
        g.canonical = canonical;
        Ok(g)
    }

    /// The root's projection, `$schema` added; nodes on a reference cycle go to `$defs`
    /// (named `r0`, `r1`, ... in the order a depth-first walk meets them) and are referenced
    /// with `$ref`; every other node is written inline.
    fn project_root(&self) -> Result<CVal<'_>> {
        let heads = self.cycle_heads();
        let mut budget = PROJECTION_NODES;
        let mut root = self.project(self.root, &heads, true, &mut budget, 0)?;
        let mut defs = Vec::new();
        for (i, &h) in heads.iter().enumerate() {
            defs.push((
                format!("r{i}").into(),
                self.project(h, &heads, true, &mut budget, 0)?,
            ));
        }
        if let CVal::Obj(m) = &mut root {
            if !defs.is_empty() {
                m.push(("$defs".into(), CVal::Obj(defs)));
            }
            m.push(("$schema".into(), CVal::Str(SCHEMA_DIALECT.into())));
        }
        Ok(root)
    }

    fn children(&self, id: NodeId) -> Vec<NodeId> {
        match &self.nodes[id as usize].kind {
            Kind::Object { props, extra, .. } => {
                props.iter().map(|p| p.node).chain(*extra).collect()
            }
            Kind::OneOf { branches, .. } => branches.iter().map(|b| b.node).collect(),
            Kind::Array { prefix, items, .. } => prefix.iter().copied().chain([*items]).collect(),
            Kind::Union { branches, .. } | Kind::Parallel { branches } => branches.clone(),
            Kind::Ref(t) => vec![*t],
            _ => Vec::new(),
        }
    }

    /// The targets of back edges of a depth-first walk from the root, in the order met.
    fn cycle_heads(&self) -> Vec<NodeId> {
        // 0 unvisited, 1 on the walk's stack, 2 done.
        let mut state = vec![0u8; self.nodes.len()];
        let mut heads = Vec::new();
        let mut stack: Vec<(NodeId, Vec<NodeId>, usize)> = Vec::new();
        state[self.root as usize] = 1;
        stack.push((self.root, self.children(self.root), 0));
        while let Some((id, kids, i)) = stack.last_mut() {
            if let Some(&k) = kids.get(*i) {
                *i += 1;
                match state[k as usize] {
                    0 => {
                        state[k as usize] = 1;
                        let c = self.children(k);
                        stack.push((k, c, 0));
                    }
                    1 if !heads.contains(&k) => heads.push(k),
                    _ => {}
                }
            } else {
                state[*id as usize] = 2;
                stack.pop();
            }
        }
        heads
    }

    fn project(
        &self,
        id: NodeId,
        heads: &[NodeId],
        inline: bool,
        budget: &mut u32,
        depth: usize,
    ) -> Result<CVal<'_>> {
        if depth >= MAX_SCHEMA_NESTING {
            return Err(E::SchemaOverLimit {
                limit: "max_schema_nesting",
                at: String::new(),
            });
        }
        if !inline && let Some(i) = heads.iter().position(|&h| h == id) {
            return Ok(CVal::Obj(vec![(
                "$ref".into(),
                CVal::Str(format!("#/$defs/r{i}").into()),
            )]));
        }
        *budget = budget.checked_sub(1).ok_or(E::SchemaOverLimit {
            limit: "max_projection_nodes",
            at: String::new(),
        })?;
        let node = &self.nodes[id as usize];
        let mut sub = |n: NodeId| self.project(n, heads, false, budget, depth + 1);
        let mut m: Vec<(Cow<'_, str>, CVal<'_>)> = Vec::new();
        let ty = |t: &'static str| (Cow::Borrowed("type"), CVal::Str(Cow::Borrowed(t)));
        fn values<'a>(m: &mut Vec<(Cow<'a, str>, CVal<'a>)>, vs: Vec<CVal<'a>>) {
            if vs.len() == 1 {
                if let Some(v) = vs.into_iter().next() {
                    m.push(("const".into(), v));
                }
            } else {
                m.push(("enum".into(), CVal::Arr(vs)));
            }
        }
        match &node.kind {
            Kind::Object {
                props,
                required,
                max_properties,
                extra,
                min_properties,
                dependent,
                ..
            } => {
                m.push(ty("object"));
                if let Some(dependent) = dependent {
                    let names = |b: &Bits| -> Vec<&str> {
                        let mut v: Vec<&str> = props
                            .iter()
                            .enumerate()
                            .filter(|(i, _)| b[i / 64] & (1u64 << (i % 64)) != 0)
                            .map(|(_, p)| p.name.as_str())
                            .collect();
                        v.sort_by(|a, b| utf16_cmp(a, b));
                        v
                    };
                    let mut deps = Vec::with_capacity(dependent.0.len());
                    for (i, need) in &dependent.0 {
                        if let Some(p) = props.get(usize::from(*i)) {
                            deps.push((
                                Cow::Borrowed(p.name.as_str()),
                                CVal::Arr(
                                    names(need)
                                        .into_iter()
                                        .map(|n| CVal::Str(Cow::Borrowed(n)))
                                        .collect(),
                                ),
                            ));
                        }
                    }
                    m.push(("dependentRequired".into(), CVal::Obj(deps)));
                }
                match extra {
                    None => m.push(("additionalProperties".into(), CVal::Bool(false))),
                    Some(x) if matches!(self.nodes[*x as usize].kind, Kind::Any) => {}
                    Some(x) => m.push(("additionalProperties".into(), sub(*x)?)),
                }
                let mut ps = Vec::with_capacity(props.len());
                for p in props {
                    ps.push((Cow::Borrowed(p.name.as_str()), sub(p.node)?));
                }
                m.push(("properties".into(), CVal::Obj(ps)));
                let mut req: Vec<&str> = props
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| {
                        let b = bit(*i);
                        (0..4).any(|w| required[w] & b[w] != 0)
                    })
                    .map(|(_, p)| p.name.as_str())
                    .collect();
                req.sort_by(|a, b| utf16_cmp(a, b));
                if !req.is_empty() {
                    m.push((
                        "required".into(),
                        CVal::Arr(
                            req.into_iter()
                                .map(|r| CVal::Str(Cow::Borrowed(r)))
                                .collect(),
                        ),
                    ));
                }
                if let Some(n) = max_properties {
                    m.push(("maxProperties".into(), CVal::Int(i64::from(*n))));
                }
                if *min_properties > 0 {
                    m.push((
                        "minProperties".into(),
                        CVal::Int(i64::from(*min_properties)),
                    ));
                }
            }
            Kind::OneOf { branches, .. } => {
                let mut bs = Vec::with_capacity(branches.len());
                for b in branches {
                    bs.push(sub(b.node)?);
                }
                m.push(("oneOf".into(), CVal::Arr(bs)));
            }
            Kind::Union {
                branches, one_of, ..
            } => {
                let mut bs = Vec::with_capacity(branches.len());
                for b in branches {
                    bs.push(sub(*b)?);
                }
                let k = if *one_of { "oneOf" } else { "anyOf" };
                m.push((k.into(), CVal::Arr(bs)));
            }
            Kind::Parallel { branches } => {
                let mut bs = Vec::with_capacity(branches.len());
                for b in branches {
                    bs.push(sub(*b)?);
                }
                m.push(("anyOf".into(), CVal::Arr(bs)));
            }
            Kind::Array {
                prefix,
                items,
                max_items,
                min_items,
                unique,
            } => {
                m.push(ty("array"));
                if !prefix.is_empty() {
                    let mut ps = Vec::with_capacity(prefix.len());
                    for p in prefix {
                        ps.push(sub(*p)?);
                    }
                    m.push(("prefixItems".into(), CVal::Arr(ps)));
                }
                m.push(("items".into(), sub(*items)?));
                m.push(("maxItems".into(), CVal::Int(i64::from(*max_items))));
                if *min_items > 0 {
                    m.push(("minItems".into(), CVal::Int(i64::from(*min_items))));
                }
                if *unique {
                    m.push(("uniqueItems".into(), CVal::Bool(true)));
                }
            }
            Kind::String {
                min,
                max,
                allowed,
                pattern,
            } => {
                m.push(ty("string"));
                m.push(("maxLength".into(), CVal::Int(i64::from(*max))));
                if *min > 0 {
                    m.push(("minLength".into(), CVal::Int(i64::from(*min))));
                }
                if let Some(a) = allowed {
                    values(
                        &mut m,
                        a.iter()
                            .map(|s| CVal::Str(Cow::Borrowed(s.as_str())))
                            .collect(),
                    );
                }
                if let Some(p) = pattern {
                    m.push((
                        "pattern".into(),
                        CVal::Str(Cow::Borrowed(p.source.as_str())),
                    ));
                }
            }
            Kind::Integer {
                lo,
                hi,
                allowed,
                wide,
            } => {
                m.push(ty("integer"));
                match wide {
                    None => {
                        m.push(("minimum".into(), CVal::Int(*lo)));
                        m.push(("maximum".into(), CVal::Int(*hi)));
                    }
                    Some(w) => {
                        if let Some(b) = &w.lo {
                            m.push(("minimum".into(), CVal::Num(b.to_string().into())));
                        }
                        if let Some(b) = &w.hi {
                            m.push(("maximum".into(), CVal::Num(b.to_string().into())));
                        }
                    }
                }
                if let Some(a) = allowed {
                    values(&mut m, a.iter().map(|i| CVal::Int(*i)).collect());
                }
            }
            Kind::Number {
                min,
                max,
                xmin,
                xmax,
                allowed,
            } => {
                m.push(ty("number"));
                for (k, b) in [
                    ("minimum", min),
                    ("maximum", max),
                    ("exclusiveMinimum", xmin),
                    ("exclusiveMaximum", xmax),
                ] {
                    if let Some(b) = b {
                        m.push((k.into(), CVal::Num(Cow::Borrowed(b.0.as_str()))));
                    }
                }
                if let Some(a) = allowed {
                    values(
                        &mut m,
                        a.iter()
                            .map(|b| CVal::Num(Cow::Borrowed(b.0.as_str())))
                            .collect(),
                    );
                }
            }
            Kind::Boolean { allowed } => {
                m.push(ty("boolean"));
                if let Some(a) = allowed {
                    values(&mut m, a.iter().map(|b| CVal::Bool(*b)).collect());
                }
            }
            Kind::Null => m.push(ty("null")),
            Kind::Any => {}
            Kind::Ref(t) => return sub(*t),
        }
        if let Some(t) = &node.title {
            m.push(("title".into(), CVal::Str(Cow::Borrowed(t.as_str()))));
        }
        if let Some(d) = &node.description {
            m.push(("description".into(), CVal::Str(Cow::Borrowed(d.as_str()))));
        }
        Ok(CVal::Obj(m))
    }

    /// The keywords [`Profile::JsonSchema`] read and did not enforce (annotations such as
    /// `default`, `examples`, `format`; unknown keywords under [`UnknownKeywords::Ignore`]), in
    /// the order met. Empty for [`Profile::Subset`], which refuses them.
    pub fn ignored_keywords(&self) -> &[IgnoredKeyword] {
        &self.ignored
    }

    /// The grammar's limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The canonical JSON Schema projection: the JSON Schema 2020-12 document the cascade hands
    /// its model provider, in canonical form (keys sorted by UTF-16 code units, no whitespace).
    /// It states the effective limits (`maxLength`, `maxItems`, integer `minimum`/`maximum`)
    /// and `additionalProperties: false` on every object, so a JSON Schema validator given it
    /// accepts what this grammar accepts, up to the rules in `spec/STRUCTURED-OUTPUT.md`.
    /// Compiling it again gives the same grammar and digest.
    pub fn projection(&self) -> &[u8] {
        &self.projection
    }

    /// The canonical form the digest covers:
    /// `{"grammar":"jouleclaw-structured/1","limits":{...},"schema":<projection>}`.
    pub fn canonical_form(&self) -> &[u8] {
        &self.canonical
    }

    /// BLAKE3 of [`Grammar::canonical_form`]: changes when the schema's meaning or a limit
    /// changes, not when whitespace or key order does. Compares in constant time.
    pub fn digest(&self) -> blake3::Hash {
        self.digest
    }

    /// The first 16 hex digits of the digest (64 bits), used in oracle names.
    pub fn digest_prefix(&self) -> String {
        let hex = self.digest.to_hex();
        hex.as_str()[..16].to_owned()
    }

    /// The whole-document validator: validates a complete document held in memory.
    ///
    /// It runs the grammar's machine over the slice in one step, so it refuses exactly what a
    /// stream of the same bytes in any chunks refuses, with the same code, offset and path.
    pub fn validate(self: &Arc<Self>, document: &[u8]) -> core::result::Result<(), crate::Refusal> {
        let mut v = crate::StructuredValidator::new(Arc::clone(self));
        v.push(document)?;
        v.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::utf16_cmp;

    /// The byte-order shortcut orders every pair as UTF-16 code units do, on both sides of
    /// U+E000 (where UTF-8 and UTF-16 orders part: U+FFFF sorts after U+10000 in UTF-16).
    #[test]
    fn utf16_cmp_is_the_utf16_order() {
        let texts = [
            "",
            "a",
            "ab",
            "b",
            "Z",
            "~",
            "\u{7f}",
            "é",
            "\u{d7ff}",
            "\u{e000}",
            "\u{ffff}",
            "\u{10000}",
            "a\u{10000}",
            "a\u{ffff}",
            "\u{10ffff}",
            "ж",
            "schema",
            "limits",
        ];
        let mut parted = false;
        for a in texts {
            for b in texts {
                let want = a.encode_utf16().cmp(b.encode_utf16());
                assert_eq!(utf16_cmp(a, b), want, "{a:?} {b:?}");
                parted |= want != a.as_bytes().cmp(b.as_bytes());
            }
        }
        // The set holds pairs the byte order gets wrong.
        assert!(parted);
    }
}
