//! The message format: one CBOR map per checkpoint batch, versions 2 (written) and 1 (still
//! read), and its content-derived message id.

use ciborium::Value;

use crate::error::{LiveError, Result};
use crate::sink::SinkBatch;

/// The message format's version (`"v"`) the encoder writes: 2, the batch without inclusion
/// receipts ([`MESSAGE_KEYS`]). The decoder also reads version 1 ([`MESSAGE_VERSION_1`]).
pub const MESSAGE_VERSION: u64 = 2;

/// The first version of the message format: [`MESSAGE_KEYS_V1`], with one inclusion receipt
/// per receipt. Still read (journals and streams written before version 2), never written.
pub const MESSAGE_VERSION_1: u64 = 1;

/// Encodes a batch as the message body, version 2: a CBOR map with text keys `v` (2),
/// `stream_id`, `steward` (text), `seq` (uint), `final` (bool), `receipts` (array of bstr:
/// COSE_Sign1), `checkpoint` (bstr: COSE_Sign1), in that order ([`MESSAGE_KEYS`]); a final batch
/// adds the stream's signed documents after them, each when it carries it, in
/// [`DOCUMENT_KEYS`] order: `stop_latency` (`stop-latency/1`) then `interaction_metrics`
/// (`interaction-metrics/1`), each a bstr holding the COSE_Sign1 (`spec/LIVE.md` section 6.2).
/// A non-final batch with a document is refused (`malformed`): no decoder would take it.
pub fn encode_batch(batch: &SinkBatch) -> Result<Vec<u8>> {
    let documents = [&batch.stop_latency, &batch.interaction_metrics];
    if documents.iter().any(|d| d.is_some()) && !batch.is_final {
        return Err(LiveError::Malformed {
            place: "batch".into(),
            message: "a stream's documents travel only in the final batch".into(),
        });
    }
    let bstrs = |it: &mut dyn Iterator<Item = &Vec<u8>>| {
        Value::Array(it.map(|b| Value::Bytes(b.clone())).collect())
    };
    let map = Value::Map(vec![
        (
            Value::Text("v".into()),
            Value::Integer(MESSAGE_VERSION.into()),
        ),
        (
            Value::Text("stream_id".into()),
            Value::Text(batch.stream_id.clone()),
        ),
        (
            Value::Text("steward".into()),
            Value::Text(batch.steward.clone()),
        ),
        (Value::Text("seq".into()), Value::Integer(batch.seq.into())),
        (Value::Text("final".into()), Value::Bool(batch.is_final)),
        (
            Value::Text("receipts".into()),
            bstrs(&mut batch.receipts.iter().map(|r| &r.cose_sign1)),
        ),
        (
            Value::Text("checkpoint".into()),
            Value::Bytes(batch.checkpoint.clone()),
        ),
    ]);
    let map = match map {
        Value::Map(mut entries) => {
            for (key, doc) in DOCUMENT_KEYS.iter().zip(documents) {
                if let Some(doc) = doc {
                    entries.push((Value::Text((*key).into()), Value::Bytes(doc.clone())));
                }
            }
            Value::Map(entries)
        }
        map => map,
    };
    let mut out = Vec::new();
    ciborium::into_writer(&map, &mut out).map_err(|e| LiveError::Malformed {
        place: "batch".into(),
        message: e.to_string(),
    })?;
    Ok(out)
}

/// A message body decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedBatch {
    /// `v`: [`MESSAGE_VERSION_1`] or [`MESSAGE_VERSION`].
    pub version: u64,
    /// `stream_id`.
    pub stream_id: String,
    /// `steward`.
    pub steward: String,
    /// `seq`.
    pub seq: u64,
    /// `final`.
    pub is_final: bool,
    /// `receipts`.
    pub receipts: Vec<Vec<u8>>,
    /// `checkpoint`.
    pub checkpoint: Vec<u8>,
    /// `inclusion`: in a version-1 message (one inclusion receipt per receipt, which the audit
    /// checks); `None` in a version-2 message, which carries none.
    pub inclusion: Option<Vec<Vec<u8>>>,
    /// `stop_latency`, when the (final) batch carries it.
    pub stop_latency: Option<Vec<u8>>,
    /// `interaction_metrics`, when the (final) batch carries it.
    pub interaction_metrics: Option<Vec<u8>>,
}

/// The keys of a version-2 message body ([`MESSAGE_VERSION`]), in order; a final batch may
/// add [`DOCUMENT_KEYS`] after them.
pub const MESSAGE_KEYS: [&str; 7] = [
    "v",
    "stream_id",
    "steward",
    "seq",
    "final",
    "receipts",
    "checkpoint",
];

/// The keys of a version-1 message body ([`MESSAGE_VERSION_1`]), in order: [`MESSAGE_KEYS`]
/// then `inclusion` (array of bstr); a final batch may add [`DOCUMENT_KEYS`] after them.
pub const MESSAGE_KEYS_V1: [&str; 8] = [
    "v",
    "stream_id",
    "steward",
    "seq",
    "final",
    "receipts",
    "checkpoint",
    INCLUSION_KEY,
];

/// The key of a version-1 message holding its inclusion receipts.
pub const INCLUSION_KEY: &str = "inclusion";

/// The optional key of a final batch holding its signed `stop-latency/1` document.
pub const STOP_LATENCY_KEY: &str = "stop_latency";

/// The optional key of a final batch holding its signed `interaction-metrics/1` document.
pub const INTERACTION_METRICS_KEY: &str = "interaction_metrics";

/// The optional keys of a final batch after [`MESSAGE_KEYS`], each present or not, in this
/// order: the stream's signed documents.
pub const DOCUMENT_KEYS: [&str; 2] = [STOP_LATENCY_KEY, INTERACTION_METRICS_KEY];

/// Decodes a message body of version 2 (written by [`encode_batch`]) or version 1 (with
/// `inclusion`, written before); refuses anything else: an unknown version
/// ([`LiveError::UnknownMessageVersion`]), other keys, another order, `inclusion` in a
/// version-2 message, a document that is not a byte string or is in a batch that is not final.
pub fn decode_batch(body: &[u8]) -> Result<DecodedBatch> {
    let bad = |m: &str| LiveError::Malformed {
        place: "message".into(),
        message: m.to_owned(),
    };
    let v: Value = ciborium::from_reader(body).map_err(|e| bad(&e.to_string()))?;
    let Value::Map(entries) = v else {
        return Err(bad("not a CBOR map"));
    };
    let keys: Vec<&str> = entries
        .iter()
        .map(|(k, _)| k.as_text().unwrap_or(""))
        .collect();
    // `v` first: it says which keys follow.
    let version = match entries.first() {
        Some((k, v)) if k.as_text() == Some("v") => v
            .as_integer()
            .and_then(|i| u64::try_from(i).ok())
            .ok_or_else(|| bad("v not an unsigned integer"))?,
        _ => return Err(bad("unexpected keys: v is not the first key")),
    };
    let expected: &[&str] = match version {
        MESSAGE_VERSION => &MESSAGE_KEYS,
        MESSAGE_VERSION_1 => &MESSAGE_KEYS_V1,
        version => return Err(LiveError::UnknownMessageVersion { version }),
    };
    if version == MESSAGE_VERSION && keys.contains(&INCLUSION_KEY) {
        return Err(bad(
            "inclusion in a version 2 message (version 2 carries no inclusion receipts)",
        ));
    }
    // The version's keys, then a subsequence of DOCUMENT_KEYS.
    let Some((head, extra)) = keys.split_at_checked(expected.len()) else {
        return Err(bad("unexpected keys"));
    };
    let mut optional = DOCUMENT_KEYS.iter();
    if head != expected || !extra.iter().all(|k| optional.any(|o| o == k)) {
        return Err(bad("unexpected keys"));
    }
    let int = |v: &Value| -> Result<u64> {
        v.as_integer()
            .and_then(|i| u64::try_from(i).ok())
            .ok_or_else(|| bad("not an unsigned integer"))
    };
    let text = |v: &Value| -> Result<String> {
        v.as_text()
            .map(str::to_owned)
            .ok_or_else(|| bad("not a text string"))
    };
    let bytes_list = |v: &Value| -> Result<Vec<Vec<u8>>> {
        v.as_array()
            .ok_or_else(|| bad("not an array"))?
            .iter()
            .map(|b| {
                b.as_bytes()
                    .cloned()
                    .ok_or_else(|| bad("not a byte string"))
            })
            .collect()
    };
    let is_final = entries[4]
        .1
        .as_bool()
        .ok_or_else(|| bad("final not a bool"))?;
    let mut documents: [Option<Vec<u8>>; 2] = [None, None];
    for (k, v) in entries.iter().skip(expected.len()) {
        let key = k.as_text().unwrap_or("");
        if !is_final {
            return Err(bad(&format!("{key} in a batch that is not final")));
        }
        let bytes = v
            .as_bytes()
            .cloned()
            .ok_or_else(|| bad(&format!("{key} not a byte string")))?;
        if let Some(slot) = DOCUMENT_KEYS
            .iter()
            .position(|o| *o == key)
            .and_then(|i| documents.get_mut(i))
        {
            *slot = Some(bytes);
        }
    }
    let [stop_latency, interaction_metrics] = documents;
    Ok(DecodedBatch {
        version,
        stream_id: text(&entries[1].1)?,
        steward: text(&entries[2].1)?,
        seq: int(&entries[3].1)?,
        is_final,
        receipts: bytes_list(&entries[5].1)?,
        checkpoint: entries[6]
            .1
            .as_bytes()
            .cloned()
            .ok_or_else(|| bad("checkpoint not a byte string"))?,
        inclusion: match entries.get(7) {
            Some((_, v)) if version == MESSAGE_VERSION_1 => Some(bytes_list(v)?),
            _ => None,
        },
        stop_latency,
        interaction_metrics,
    })
}

/// The content-derived message id: lower-case hex BLAKE3 of the body.
pub fn message_id(body: &[u8]) -> String {
    blake3::hash(body).to_hex().to_string()
}
