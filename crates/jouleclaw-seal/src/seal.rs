//! The `stream-seal/1` checkpoint document and its `stream-seal/2` form (a final seal that also
//! commits to the call's signed documents): canonical JSON (JCR-1), one schema object, a strict
//! decoder with stable refusal codes that decides the same whether bytes arrive whole or in
//! pieces, and the JSON Schema generated from the same object.

use std::collections::BTreeMap;

use jouleclaw_jcr1::{
    Limits, Refusal, RefusalCode, UtcSecond, decode_canonical_value, encode_value,
};
use serde_json::{Map, Value, json};

use crate::error::{Result, SealCode, SealError, SealRefusal};
use crate::merkle::Hash;

/// The schema id, the value of `schema`, of a seal without `documents`.
pub const SCHEMA_ID: &str = "stream-seal/1";

/// The schema id of a final seal that commits to the call's documents (`documents`).
pub const SCHEMA_ID_V2: &str = "stream-seal/2";

/// The most documents a `stream-seal/2` seal commits to.
pub const MAX_SEALED_DOCUMENTS: usize = 16;

/// The longest document kind, in bytes.
pub const MAX_DOCUMENT_KIND_BYTES: usize = 64;

/// What a final `stream-seal/2` seal commits to beside the receipts: each signed document of the
/// call by its kind (`"stop-latency/1"`), with the SHA-256 of its COSE_Sign1 bytes as stored.
/// Keys are in byte order, which for the allowed kinds (ASCII) is the canonical order.
pub type SealedDocuments = BTreeMap<String, [u8; 32]>;

/// The digest a `stream-seal/2` seal commits to for one document: SHA-256 of its COSE_Sign1
/// bytes exactly as stored (the whole file), so any change to the document, its signature or
/// its envelope changes the digest.
pub fn document_digest(cose_sign1: &[u8]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(cose_sign1).into()
}

/// Whether `kind` is a document kind: `name/version`, the name of lowercase ASCII letters,
/// digits and `-` starting with a letter, the version a decimal number without a leading zero,
/// at most [`MAX_DOCUMENT_KIND_BYTES`] bytes.
pub fn is_document_kind(kind: &str) -> bool {
    let Some((name, version)) = kind.split_once('/') else {
        return false;
    };
    kind.len() <= MAX_DOCUMENT_KIND_BYTES
        && name.as_bytes().first().is_some_and(u8::is_ascii_lowercase)
        && name
            .bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
        && !version.is_empty()
        && !version.starts_with('0')
        && version.bytes().all(|c| c.is_ascii_digit())
}

/// The media type of a seal document (`spec/STREAM-SEAL.md`).
pub const MEDIA_TYPE: &str = "application/vnd.jouleclaw.stream-seal+json";

/// Largest integer a field may hold, `2^53 - 1`.
pub const MAX_UINT: u64 = (1 << 53) - 1;

/// The decoder's limits: 16 KiB documents, depth 2 (so a nested value is refused as
/// `wrong_type`, not `depth_exceeded`), 4,096-byte strings, 64-element arrays.
pub const SEAL_LIMITS: Limits = Limits {
    max_document_bytes: 16_384,
    max_depth: 2,
    max_string_bytes: 4_096,
    max_array_len: 64,
};

/// What a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldType {
    /// The string [`SCHEMA_ID`].
    Schema,
    /// A non-empty string.
    NonEmptyText,
    /// An integer in `[0, 2^53-1]`.
    Uint,
    /// `true` or `false`.
    Bool,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    DateTime,
    /// 64 lowercase hex digits.
    Hex64,
}

/// One field of the seal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldDef {
    /// The key.
    pub name: &'static str,
    /// The value's type.
    pub ty: FieldType,
    /// What it means.
    pub doc: &'static str,
}

const fn f(name: &'static str, ty: FieldType, doc: &'static str) -> FieldDef {
    FieldDef { name, ty, doc }
}

/// The seal's fields, sorted by key (the canonical order). All are required.
pub const SEAL_FIELDS: &[FieldDef] = &[
    f(
        "closed_at",
        FieldType::DateTime,
        "closed_at of the receipt at leaf tree_size-1, UTC, whole seconds",
    ),
    f(
        "empty_windows_skipped",
        FieldType::Uint,
        "window ids in [first_window_id, last_window_id] without a receipt (empty windows)",
    ),
    f(
        "final",
        FieldType::Bool,
        "true on the seal written when the stream ended; no seal follows it",
    ),
    f(
        "first_window_id",
        FieldType::Uint,
        "window_id of the receipt at leaf 0",
    ),
    f(
        "last_window_id",
        FieldType::Uint,
        "window_id of the receipt at leaf tree_size-1",
    ),
    f(
        "root",
        FieldType::Hex64,
        "RFC 9162 SHA-256 Merkle tree hash of the first tree_size leaves, lowercase hex",
    ),
    f("schema", FieldType::Schema, "the schema id"),
    f("steward", FieldType::NonEmptyText, "the receipts' steward"),
    f(
        "stream_id",
        FieldType::NonEmptyText,
        "the receipts' stream_id",
    ),
    f(
        "tree_size",
        FieldType::Uint,
        "number of leaves (receipts) sealed, at least 1",
    ),
];

/// A `stream-seal/1` checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreamSeal {
    /// The stream.
    pub stream_id: String,
    /// Who answers for it.
    pub steward: String,
    /// Leaves sealed (>= 1).
    pub tree_size: u64,
    /// The Merkle root of the first `tree_size` leaves.
    pub root: Hash,
    /// Window id of leaf 0.
    pub first_window_id: u64,
    /// Window id of leaf `tree_size - 1`.
    pub last_window_id: u64,
    /// Window ids in `[first_window_id, last_window_id]` without a receipt.
    pub empty_windows_skipped: u64,
    /// `closed_at` of the last sealed receipt.
    pub closed_at: UtcSecond,
    /// Whether the stream ended with this seal.
    pub is_final: bool,
    /// `None`: a `stream-seal/1` document. `Some`: a `stream-seal/2` document (final seals only)
    /// that commits to these documents of the call (possibly none: the call has no document).
    pub documents: Option<SealedDocuments>,
}

impl StreamSeal {
    /// The CWT `sub` of the seal's COSE structures: `{stream_id}:seal:{tree_size}`.
    pub fn subject(&self) -> String {
        format!("{}:seal:{}", self.stream_id, self.tree_size)
    }

    /// The canonical bytes. Refuses (`unencodable`) what the decoder would refuse.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let bad = |field, reason| SealError::Unencodable { field, reason };
        for (field, s) in [("steward", &self.steward), ("stream_id", &self.stream_id)] {
            if s.is_empty() {
                return Err(bad(field, "empty"));
            }
            if s.len() > SEAL_LIMITS.max_string_bytes {
                return Err(bad(field, "longer than 4,096 bytes"));
            }
        }
        for (field, v) in [
            ("tree_size", self.tree_size),
            ("first_window_id", self.first_window_id),
            ("last_window_id", self.last_window_id),
            ("empty_windows_skipped", self.empty_windows_skipped),
        ] {
            if v > MAX_UINT {
                return Err(bad(field, "above 2^53-1"));
            }
        }
        if self.tree_size == 0 {
            return Err(bad("tree_size", "zero"));
        }
        if self.first_window_id > self.last_window_id {
            return Err(bad("first_window_id", "greater than last_window_id"));
        }
        if !window_count_holds(self) {
            return Err(bad(
                "empty_windows_skipped",
                "last - first + 1 != tree_size + empty_windows_skipped",
            ));
        }
        if let Some(docs) = &self.documents {
            if !self.is_final {
                return Err(bad("documents", "only a final seal commits to documents"));
            }
            if docs.len() > MAX_SEALED_DOCUMENTS {
                return Err(bad("documents", "more than 16 documents"));
            }
            if !docs.keys().all(|k| is_document_kind(k)) {
                return Err(bad("documents", "a key is not a document kind"));
            }
        }
        let mut v = json!({
            "closed_at": self.closed_at.to_string(),
            "empty_windows_skipped": self.empty_windows_skipped,
            "final": self.is_final,
            "first_window_id": self.first_window_id,
            "last_window_id": self.last_window_id,
            "root": hex::encode(self.root),
            "schema": SCHEMA_ID,
            "steward": self.steward,
            "stream_id": self.stream_id,
            "tree_size": self.tree_size,
        });
        if let (Some(docs), Value::Object(m)) = (&self.documents, &mut v) {
            let docs: Map<String, Value> = docs
                .iter()
                .map(|(k, d)| (k.clone(), Value::String(hex::encode(d))))
                .collect();
            m.insert("documents".into(), Value::Object(docs));
            m.insert("schema".into(), Value::String(SCHEMA_ID_V2.into()));
        }
        let out = encode_value(&v).map_err(|_| bad("seal", "not encodable as JCR-1"))?;
        if out.len() > SEAL_LIMITS.max_document_bytes {
            return Err(bad("seal", "longer than 16,384 bytes"));
        }
        Ok(out)
    }
}

fn window_count_holds(s: &StreamSeal) -> bool {
    u128::from(s.last_window_id) - u128::from(s.first_window_id) + 1
        == u128::from(s.tree_size) + u128::from(s.empty_windows_skipped)
}

/// Strictly decodes a whole seal document (the same path as [`SealDecoder`]).
pub fn decode_seal(bytes: &[u8]) -> Result<StreamSeal, SealRefusal> {
    if bytes.len() > SEAL_LIMITS.max_document_bytes {
        let mut d = SealDecoder::new();
        if let Some(r) = d.push(bytes) {
            return Err(r);
        }
        return d.finish();
    }
    // Within the limit `push` refuses nothing: `finish` alone decides, on the bytes as given.
    decode_within_limit(bytes)
}

/// An incremental seal decoder. It buffers at most [`SEAL_LIMITS`]`.max_document_bytes + 1`
/// bytes; `push` refuses as soon as the input passes that limit (with the refusal the
/// canonical machine gives for the first `max + 1` bytes, so an earlier canonical-form error
/// wins), and `finish` decides everything else. Refusals are sticky.
#[derive(Debug, Default, Clone)]
pub struct SealDecoder {
    buf: Vec<u8>,
    refused: Option<SealRefusal>,
}

impl SealDecoder {
    /// A fresh decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes. Returns the refusal if the input is already refused; `None` means only
    /// "nothing is wrong yet".
    pub fn push(&mut self, chunk: &[u8]) -> Option<SealRefusal> {
        if self.refused.is_some() {
            return self.refused;
        }
        let max = SEAL_LIMITS.max_document_bytes;
        let room = (max + 1).saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if self.buf.len() > max {
            let r = match decode_canonical_value(&self.buf, SEAL_LIMITS) {
                Err(r) => json_refusal(r),
                // Unreachable: more than `max` bytes are always refused.
                Ok(_) => SealRefusal {
                    code: SealCode::Json(RefusalCode::DocumentTooLarge),
                    offset: max as u64,
                },
            };
            self.refused = Some(r);
        }
        self.refused
    }

    /// The refusal so far, if any.
    pub fn refusal(&self) -> Option<SealRefusal> {
        self.refused
    }

    /// End of input: accepts or refuses.
    pub fn finish(self) -> Result<StreamSeal, SealRefusal> {
        if let Some(r) = self.refused {
            return Err(r);
        }
        decode_within_limit(&self.buf)
    }
}

/// [`SealDecoder::finish`] on a whole input of at most `max_document_bytes` + 1 bytes.
fn decode_within_limit(bytes: &[u8]) -> Result<StreamSeal, SealRefusal> {
    let v = decode_canonical_value(bytes, SEAL_LIMITS).map_err(json_refusal)?;
    check_schema(&v, bytes.len() as u64)
}

fn json_refusal(r: Refusal) -> SealRefusal {
    SealRefusal {
        code: SealCode::Json(r.code),
        offset: r.offset,
    }
}

/// Checks the schema of a canonical value; every refusal is at `end` (the input length).
fn check_schema(v: &Value, end: u64) -> Result<StreamSeal, SealRefusal> {
    let refuse = |code| SealRefusal { code, offset: end };
    let json = |c| refuse(SealCode::Json(c));
    let Value::Object(m) = v else {
        return Err(json(if v.is_null() {
            RefusalCode::Null
        } else {
            RefusalCode::WrongType
        }));
    };
    // `stream-seal/2` adds one field, `documents`; any other `schema` value is read as
    // `stream-seal/1` (and refused as such, in field order, if it is not that either).
    let v2 = m.get("schema").and_then(Value::as_str) == Some(SCHEMA_ID_V2);
    let is_field = |k: &str| {
        SEAL_FIELDS.binary_search_by(|d| d.name.cmp(k)).is_ok() || (v2 && k == "documents")
    };
    // 1. Every key is a seal field.
    if m.keys().any(|k| !is_field(k)) {
        return Err(json(RefusalCode::UnknownField));
    }
    // 2. Each field in canonical order: present, type, value.
    let mut documents = None;
    for d in SEAL_FIELDS {
        if v2 && d.name > "documents" && documents.is_none() {
            let x = m.get("documents").ok_or(json(RefusalCode::MissingField))?;
            documents = Some(check_documents(x).map_err(refuse)?);
        }
        let x = m.get(d.name).ok_or(json(RefusalCode::MissingField))?;
        check_field(d, x).map_err(refuse)?;
    }
    let text = |k: &str| {
        m.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let uint = |k: &str| m.get(k).and_then(Value::as_u64).unwrap_or_default();
    let mut root = [0u8; 32];
    hex::decode_to_slice(text("root"), &mut root).map_err(|_| refuse(SealCode::BadRoot))?;
    let closed_at = UtcSecond::parse(&text("closed_at")).ok_or(json(RefusalCode::BadClosedAt))?;
    let seal = StreamSeal {
        stream_id: text("stream_id"),
        steward: text("steward"),
        tree_size: uint("tree_size"),
        root,
        first_window_id: uint("first_window_id"),
        last_window_id: uint("last_window_id"),
        empty_windows_skipped: uint("empty_windows_skipped"),
        closed_at,
        is_final: m.get("final").and_then(Value::as_bool).unwrap_or_default(),
        documents,
    };
    // 3. Cross-field rules.
    if seal.tree_size == 0 {
        return Err(refuse(SealCode::TreeSizeZero));
    }
    if seal.first_window_id > seal.last_window_id {
        return Err(refuse(SealCode::WindowRangeReversed));
    }
    if !window_count_holds(&seal) {
        return Err(refuse(SealCode::WindowCountMismatch));
    }
    if seal.documents.is_some() && !seal.is_final {
        return Err(refuse(SealCode::DocumentsNotFinal));
    }
    Ok(seal)
}

/// `documents` of a `stream-seal/2` seal: an object of at most 16 members, each a document
/// kind mapped to 64 lowercase hex digits (checked member by member, in canonical order).
fn check_documents(x: &Value) -> Result<SealedDocuments, SealCode> {
    let json = SealCode::Json;
    let m = match x {
        Value::Null => return Err(json(RefusalCode::Null)),
        Value::Object(m) => m,
        _ => return Err(json(RefusalCode::WrongType)),
    };
    if m.len() > MAX_SEALED_DOCUMENTS {
        return Err(SealCode::TooManyDocuments);
    }
    let mut out = SealedDocuments::new();
    for (k, d) in m {
        if !is_document_kind(k) {
            return Err(SealCode::BadDocumentKind);
        }
        let d = match d {
            Value::Null => return Err(json(RefusalCode::Null)),
            Value::String(d) => d,
            _ => return Err(json(RefusalCode::WrongType)),
        };
        let mut digest = [0u8; 32];
        if !is_hex64(d) || hex::decode_to_slice(d, &mut digest).is_err() {
            return Err(SealCode::BadDocumentDigest);
        }
        out.insert(k.clone(), digest);
    }
    Ok(out)
}

fn check_field(d: &FieldDef, x: &Value) -> Result<(), SealCode> {
    let json = SealCode::Json;
    if x.is_null() {
        return Err(json(RefusalCode::Null));
    }
    match d.ty {
        FieldType::Schema => match x.as_str() {
            None => Err(json(RefusalCode::WrongType)),
            Some(s) if s == SCHEMA_ID || s == SCHEMA_ID_V2 => Ok(()),
            Some(_) => Err(SealCode::WrongSchema),
        },
        FieldType::NonEmptyText => match x.as_str() {
            None => Err(json(RefusalCode::WrongType)),
            Some("") => Err(json(RefusalCode::EmptyString)),
            Some(_) => Ok(()),
        },
        FieldType::Uint => match x {
            Value::Number(n) if n.as_u64().is_some() => Ok(()),
            Value::Number(_) => Err(json(RefusalCode::NegativeUnsigned)),
            _ => Err(json(RefusalCode::WrongType)),
        },
        FieldType::Bool => match x {
            Value::Bool(_) => Ok(()),
            _ => Err(json(RefusalCode::WrongType)),
        },
        FieldType::DateTime => match x.as_str() {
            None => Err(json(RefusalCode::WrongType)),
            Some(s) if UtcSecond::parse(s).is_some() => Ok(()),
            Some(_) => Err(json(RefusalCode::BadClosedAt)),
        },
        FieldType::Hex64 => match x.as_str() {
            None => Err(json(RefusalCode::WrongType)),
            Some(s) if is_hex64(s) => Ok(()),
            Some(_) => Err(SealCode::BadRoot),
        },
    }
}

fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// The JSON Schema (draft 2020-12) of a `stream-seal/1` document, generated from
/// [`SEAL_FIELDS`]. It cannot express canonical form, calendar validity of `closed_at` or the
/// cross-field rules (`tree_size >= 1`, `first <= last`, the window count).
pub fn json_schema() -> Value {
    let props: Map<String, Value> = SEAL_FIELDS
        .iter()
        .map(|d| {
            let mut v = match d.ty {
                FieldType::Schema => json!({ "const": SCHEMA_ID }),
                FieldType::NonEmptyText => json!({ "type": "string", "minLength": 1 }),
                FieldType::Uint => {
                    json!({ "type": "integer", "minimum": 0, "maximum": MAX_UINT })
                }
                FieldType::Bool => json!({ "type": "boolean" }),
                FieldType::DateTime => json!({
                    "type": "string",
                    "pattern": "^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]Z$"
                }),
                FieldType::Hex64 => json!({ "type": "string", "pattern": "^[0-9a-f]{64}$" }),
            };
            if let Value::Object(o) = &mut v {
                o.insert("description".into(), Value::String(d.doc.to_owned()));
            }
            (d.name.to_owned(), v)
        })
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:jouleclaw:schema:stream-seal/1",
        "title": "jouleclaw stream-seal/1 checkpoint",
        "description": "Generated from crates/jouleclaw-seal/src/seal.rs. Seals are also canonical JSON (JCR-1, RFC 8785 subset); tree_size >= 1; first_window_id <= last_window_id; last_window_id - first_window_id + 1 == tree_size + empty_windows_skipped; closed_at must be a real UTC calendar date-time. See spec/STREAM-SEAL.md.",
        "type": "object",
        "additionalProperties": false,
        "required": SEAL_FIELDS.iter().map(|d| d.name).collect::<Vec<_>>(),
        "properties": props,
    })
}

/// The JSON Schema (draft 2020-12) of a `stream-seal/2` document: [`json_schema`] with `schema`
/// `"stream-seal/2"`, `final` `true` and the required `documents` object. Beyond what
/// [`json_schema`] cannot express, it cannot express the 64-byte bound of a kind.
pub fn json_schema_v2() -> Value {
    let mut v = json_schema();
    if let Value::Object(o) = &mut v {
        o.insert(
            "$id".into(),
            Value::String("urn:jouleclaw:schema:stream-seal/2".into()),
        );
        o.insert(
            "title".into(),
            Value::String("jouleclaw stream-seal/2 final checkpoint".into()),
        );
        if let Some(Value::Array(req)) = o.get_mut("required") {
            req.push(Value::String("documents".into()));
            req.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
        }
        if let Some(Value::Object(props)) = o.get_mut("properties") {
            props.insert("schema".into(), json!({ "const": SCHEMA_ID_V2 }));
            props.insert(
                "final".into(),
                json!({ "const": true, "description": "stream-seal/2 is only the final seal" }),
            );
            props.insert(
                "documents".into(),
                json!({
                    "type": "object",
                    "description": "each signed document of the call by kind (name/version), with the SHA-256 of its COSE_Sign1 bytes as stored, lowercase hex",
                    "maxProperties": MAX_SEALED_DOCUMENTS,
                    "propertyNames": { "pattern": "^[a-z][a-z0-9-]*/[1-9][0-9]*$" },
                    "additionalProperties": { "type": "string", "pattern": "^[0-9a-f]{64}$" },
                }),
            );
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_sorted_so_binary_search_and_canonical_order_hold() {
        assert!(SEAL_FIELDS.windows(2).all(|w| w[0].name < w[1].name));
    }
}
