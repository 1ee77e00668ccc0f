//! The one schema object for stream-window/1.
//!
//! The strict decoder resolves keys and checks types from these tables, and
//! [`json_schema`] publishes the same tables as a JSON Schema
//! (`conformance/stream-window-1.schema.json`; a test fails when that file is stale).

use serde_json::{Value, json};

/// The receipt's schema id, the value of `jc_receipt`.
pub const SCHEMA_ID: &str = "stream-window/1";

/// The closed set of `energy_provenance` values, sorted.
pub const ENERGY_PROVENANCE: &[&str] = &["Estimator", "HwShunt", "Rapl"];

/// What a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// A string equal to the constant.
    Const(&'static str),
    /// A string; `non_empty` requires at least one character.
    Text {
        /// Whether the empty string is refused.
        non_empty: bool,
    },
    /// The receipt id, `{stream_id}:{window_id:04}`.
    ReceiptId,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    DateTime,
    /// 64 lowercase hex digits.
    Hex64,
    /// An integer in `[0, 2^53-1]`.
    Uint,
    /// One of the listed strings.
    OneOf(&'static [&'static str]),
    /// A verdict object ([`VERDICT_VARIANTS`]).
    Verdict,
    /// A conservation object ([`CONSERVATION_VARIANTS`]).
    Conservation,
    /// A non-empty array of non-empty strings.
    NameList,
}

/// One field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDef {
    /// The key.
    pub name: &'static str,
    /// The value's type.
    pub ty: FieldType,
    /// What it means.
    pub doc: &'static str,
}

/// One variant of a tagged object: `kind` plus `fields` (sorted by key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VariantDef {
    /// The `kind` value.
    pub kind: &'static str,
    /// The other fields, all required.
    pub fields: &'static [FieldDef],
}

const fn f(name: &'static str, ty: FieldType, doc: &'static str) -> FieldDef {
    FieldDef { name, ty, doc }
}

const NON_EMPTY: FieldType = FieldType::Text { non_empty: true };

/// The receipt's fields, sorted by key (the canonical order).
pub const RECEIPT_FIELDS: &[FieldDef] = &[
    f(
        "closed_at",
        FieldType::DateTime,
        "when the window closed, UTC, whole seconds",
    ),
    f(
        "conservation",
        FieldType::Conservation,
        "the ledger's window summary",
    ),
    f(
        "energy_provenance",
        FieldType::OneOf(ENERGY_PROVENANCE),
        "where joules_uj came from",
    ),
    f("id", FieldType::ReceiptId, "{stream_id}:{window_id:04}"),
    f(
        "inbound_bytes",
        FieldType::Uint,
        "payload bytes on inbound channels",
    ),
    f("jc_receipt", FieldType::Const(SCHEMA_ID), "the schema id"),
    f(
        "joules_uj",
        FieldType::Uint,
        "energy spent on the window, microjoules",
    ),
    f(
        "outbound_bytes",
        FieldType::Uint,
        "payload bytes on outbound channels",
    ),
    f(
        "steward",
        NON_EMPTY,
        "who answers for the stream (e.g. a DID)",
    ),
    f("stream_id", NON_EMPTY, "the stream"),
    f("tick_count", FieldType::Uint, "ticks in the window"),
    f(
        "verdict",
        FieldType::Verdict,
        "the composite stream oracle's verdict",
    ),
    f(
        "window_hash",
        FieldType::Hex64,
        "BLAKE3 of the window's canonical JSON",
    ),
    f(
        "window_id",
        FieldType::Uint,
        "the window's index in the stream",
    ),
];

/// Verdict variants.
pub const VERDICT_VARIANTS: &[VariantDef] = &[
    VariantDef {
        kind: "pass",
        fields: &[f("chain", FieldType::NameList, "backend names, in order")],
    },
    VariantDef {
        kind: "yield",
        fields: &[f("seen_at", FieldType::Uint, "window id of the barge-in")],
    },
    VariantDef {
        kind: "fail",
        fields: &[
            f("oracle", NON_EMPTY, "the backend that failed the window"),
            f("reason", FieldType::Text { non_empty: false }, "why"),
        ],
    },
    VariantDef {
        kind: "need_more",
        fields: &[
            f("oracle", NON_EMPTY, "the backend that defers"),
            f(
                "reason",
                FieldType::Text { non_empty: false },
                "what it waits for",
            ),
        ],
    },
];

/// Conservation variants.
pub const CONSERVATION_VARIANTS: &[VariantDef] = &[
    VariantDef {
        kind: "conforming",
        fields: &[],
    },
    VariantDef {
        kind: "hallucination",
        fields: &[f(
            "unaccounted",
            FieldType::Uint,
            "outbound bytes over budget",
        )],
    },
    VariantDef {
        kind: "barge_in_ignored",
        fields: &[
            f(
                "barge_in_ts_ns",
                FieldType::Uint,
                "when the barge-in arrived",
            ),
            f(
                "outbound_ts_ns",
                FieldType::Uint,
                "when the late outbound tick arrived",
            ),
        ],
    },
];

/// The receipt field with key `name`.
pub fn receipt_field(name: &str) -> Option<(usize, &'static FieldDef)> {
    RECEIPT_FIELDS
        .binary_search_by(|d| d.name.cmp(name))
        .ok()
        .map(|i| (i, &RECEIPT_FIELDS[i]))
}

/// The JSON Schema (draft 2020-12) of a stream-window/1 receipt, generated from the tables
/// above. It cannot express two rules the decoder enforces: `id` equals
/// `{stream_id}:{window_id:04}`, and `closed_at` is a real calendar date.
pub fn json_schema() -> Value {
    let props: serde_json::Map<String, Value> = RECEIPT_FIELDS
        .iter()
        .map(|d| (d.name.to_owned(), field_schema(d)))
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:jouleclaw:schema:stream-window/1",
        "title": "JCR-1 stream-window/1 receipt",
        "description": "Generated from crates/jouleclaw-jcr1/src/schema.rs. Receipts are also canonical JSON (RFC 8785 subset); id must equal stream_id + ':' + window_id zero-padded to 4 digits; closed_at must be a real UTC calendar date-time.",
        "type": "object",
        "additionalProperties": false,
        "required": RECEIPT_FIELDS.iter().map(|d| d.name).collect::<Vec<_>>(),
        "properties": props,
    })
}

fn variants_schema(variants: &[VariantDef]) -> Value {
    let one_of: Vec<Value> = variants
        .iter()
        .map(|v| {
            let mut props = serde_json::Map::new();
            props.insert("kind".into(), json!({ "const": v.kind }));
            let mut required = vec!["kind"];
            for d in v.fields {
                props.insert(d.name.to_owned(), field_schema(d));
                required.push(d.name);
            }
            required.sort_unstable();
            json!({
                "type": "object",
                "additionalProperties": false,
                "required": required,
                "properties": props,
            })
        })
        .collect();
    json!({ "oneOf": one_of })
}

fn field_schema(d: &FieldDef) -> Value {
    let mut v = match d.ty {
        FieldType::Const(c) => json!({ "const": c }),
        FieldType::Text { non_empty: true } => json!({ "type": "string", "minLength": 1 }),
        FieldType::Text { non_empty: false } => json!({ "type": "string" }),
        FieldType::ReceiptId => json!({ "type": "string", "pattern": "^.+:[0-9]{4,}$" }),
        FieldType::DateTime => json!({
            "type": "string",
            "pattern": "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z$"
        }),
        FieldType::Hex64 => json!({ "type": "string", "pattern": "^[0-9a-f]{64}$" }),
        FieldType::Uint => {
            json!({ "type": "integer", "minimum": 0, "maximum": 9_007_199_254_740_991u64 })
        }
        FieldType::OneOf(values) => json!({ "enum": values }),
        FieldType::Verdict => variants_schema(VERDICT_VARIANTS),
        FieldType::Conservation => variants_schema(CONSERVATION_VARIANTS),
        FieldType::NameList => json!({
            "type": "array",
            "minItems": 1,
            "items": { "type": "string", "minLength": 1 }
        }),
    };
    if let Value::Object(m) = &mut v {
        m.insert("description".into(), Value::String(d.doc.to_owned()));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_sorted_so_binary_search_and_canonical_order_hold() {
        assert!(RECEIPT_FIELDS.windows(2).all(|w| w[0].name < w[1].name));
        for v in VERDICT_VARIANTS.iter().chain(CONSERVATION_VARIANTS) {
            assert!(
                v.fields.windows(2).all(|w| w[0].name < w[1].name),
                "{}",
                v.kind
            );
        }
        assert!(ENERGY_PROVENANCE.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(receipt_field("window_id").map(|(i, _)| i), Some(13));
        assert!(receipt_field("windows").is_none());
    }
}
