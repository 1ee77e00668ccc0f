//! `stop-latency/1` and `stop-latency/2` (the same, stating where its times were taken): the
//! wire form, in JCR-1 canonical JSON.

use jouleclaw_jcr1::{Limits, encode_value};
use serde_json::{Map, Value};

use crate::error::{Result, StopLatencyError};
use crate::meter::{BargeIn, DEADLINE_NS, EndedBy, MAX_BARGE_INS};

/// The schema id, the value of `jc_stop_latency`, of a document without a vantage point.
pub const STOP_LATENCY_SCHEMA: &str = "stop-latency/1";

/// The schema id of a document that states its vantage point (`vantage`).
pub const STOP_LATENCY_SCHEMA_V2: &str = "stop-latency/2";

/// Where the audio times of a `stop-latency/2` document were taken, and what plays after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Vantage {
    /// What an audio tick's `ts_ns` marks.
    pub point: VantagePoint,
    /// The audio buffered after that point which the stop latency does **not** include (a
    /// device buffer, a far end's jitter buffer, an output queue), in nanoseconds, when the
    /// caller knows it; `None`: not known. The listener may hear up to this much more.
    pub excluded_buffer_ns: Option<u64>,
}

/// What an audio tick's time marks (`vantage.point`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VantagePoint {
    /// `"sent"`: when the transport's write of the chunk returned.
    Sent,
    /// `"played"`: when the sink reported the chunk played.
    Played,
}

impl VantagePoint {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sent => "sent",
            Self::Played => "played",
        }
    }

    /// The point of a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "sent" => Some(Self::Sent),
            "played" => Some(Self::Played),
            _ => None,
        }
    }
}

/// The longest `steward` or `stream_id`, in bytes: 4,096, as in a window receipt.
pub const MAX_NAME_BYTES: usize = 4_096;

/// The decoder's bounds: 8 MiB documents (16,384 barge-ins of at most about 330 bytes each,
/// and the rest), depth 3 (document, `barge_ins`, one barge-in), strings of at most 4,096
/// bytes, arrays of at most [`MAX_BARGE_INS`] elements.
pub const STOP_LATENCY_LIMITS: Limits = Limits {
    max_document_bytes: 8 << 20,
    max_depth: 3,
    max_string_bytes: MAX_NAME_BYTES,
    max_array_len: MAX_BARGE_INS,
};

/// Every schema refusal code, in the order the decoder checks them (`spec/STOP-LATENCY-V1.md`
/// section 4).
pub const STOP_LATENCY_SCHEMA_CODES: &[&str] = &[
    "wrong_type",
    "null",
    "unknown_field",
    "missing_field",
    "wrong_schema",
    "negative_unsigned",
    "empty_name",
    "bad_root",
    "wrong_deadline",
    "bad_ended_by",
    "end_mismatch",
    "latency_mismatch",
    "late_mismatch",
    "out_of_order",
    "bad_vantage",
];

/// One stream's stop latencies, bound to its window receipts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopLatencyDocument {
    /// The receipts' steward.
    pub steward: String,
    /// The receipts' stream id.
    pub stream_id: String,
    /// How many window receipts the stream has.
    pub window_count: u64,
    /// The RFC 9162 root over the receipts' BLAKE3 content hashes, in window order (the root the
    /// stream's final `stream-seal/1` checkpoint signs when it is sealed).
    pub receipts_root: [u8; 32],
    /// Every barge-in, in push order; each ended (`Start` or `StreamEnd`).
    pub barge_ins: Vec<BargeIn>,
    /// `None`: a `stop-latency/1` document (its times are "as sent", the buffer after that
    /// unstated). `Some`: a `stop-latency/2` document that states them.
    pub vantage: Option<Vantage>,
}

pub use jouleclaw_seal::receipts_root;

fn uint(v: u64) -> Value {
    Value::from(v)
}

fn opt(v: Option<u64>) -> Value {
    v.map_or(Value::Null, Value::from)
}

impl StopLatencyDocument {
    /// The document for `barge_ins` (from a finished meter) over the receipts whose content
    /// hashes are `content_hashes`, in window order.
    pub fn new(
        steward: &str,
        stream_id: &str,
        barge_ins: &[BargeIn],
        content_hashes: &[[u8; 32]],
    ) -> Result<Self> {
        let doc = Self {
            steward: steward.to_owned(),
            stream_id: stream_id.to_owned(),
            window_count: content_hashes.len() as u64,
            receipts_root: receipts_root(content_hashes).map_err(|_| {
                StopLatencyError::Unencodable {
                    reason: "more receipts than a Merkle log holds".to_owned(),
                }
            })?,
            barge_ins: barge_ins.to_vec(),
            vantage: None,
        };
        // Refuse now what would not encode.
        doc.encode()?;
        Ok(doc)
    }

    /// Its schema id, which is also its kind in a `stream-seal/2` final seal's `documents`:
    /// `"stop-latency/1"`, or `"stop-latency/2"` when it states its vantage point.
    pub fn schema_id(&self) -> &'static str {
        if self.vantage.is_some() {
            STOP_LATENCY_SCHEMA_V2
        } else {
            STOP_LATENCY_SCHEMA
        }
    }

    /// The CWT `sub` of its signature: `<stream_id>:stop-latency`.
    pub fn subject(&self) -> String {
        format!("{}:stop-latency", self.stream_id)
    }

    /// p50, p95 and max stop latency over the barge-ins (nearest rank), `None` without any.
    pub fn summary(&self) -> Option<(u64, u64, u64)> {
        crate::meter::summary(&self.barge_ins)
    }

    /// The canonical bytes. Refuses ([`StopLatencyError::Unencodable`]) what the decoder would
    /// refuse: an empty or over-long name, an open barge-in, more than [`MAX_BARGE_INS`],
    /// integers above `2^53-1`.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let bad = |reason: String| StopLatencyError::Unencodable { reason };
        for (field, s) in [("steward", &self.steward), ("stream_id", &self.stream_id)] {
            if s.is_empty() || s.len() > MAX_NAME_BYTES {
                return Err(bad(format!("{field} of {} bytes", s.len())));
            }
        }
        if self.barge_ins.len() > MAX_BARGE_INS {
            return Err(bad(format!("{} barge-ins", self.barge_ins.len())));
        }
        let mut list = Vec::with_capacity(self.barge_ins.len());
        for b in &self.barge_ins {
            if b.ended_by == EndedBy::Open {
                return Err(bad("a barge-in still open".to_owned()));
            }
            let mut m = Map::new();
            m.insert("audio_bytes".into(), uint(b.audio_bytes));
            m.insert("barge_in_ts_ns".into(), uint(b.barge_in_ts_ns));
            m.insert("end_ts_ns".into(), opt(b.end_ts_ns));
            m.insert("ended_by".into(), b.ended_by.as_str().into());
            m.insert("last_audio_ts_ns".into(), opt(b.last_audio_ts_ns));
            m.insert("late_audio_bytes".into(), uint(b.late_audio_bytes));
            m.insert("stop_latency_ns".into(), uint(b.stop_latency_ns()));
            m.insert("window_id".into(), uint(b.window_id));
            list.push(Value::Object(m));
        }
        let mut root = Map::new();
        root.insert("barge_ins".into(), Value::Array(list));
        root.insert("deadline_ns".into(), uint(DEADLINE_NS));
        match &self.vantage {
            None => {
                root.insert("jc_stop_latency".into(), STOP_LATENCY_SCHEMA.into());
            }
            Some(v) => {
                root.insert("jc_stop_latency".into(), STOP_LATENCY_SCHEMA_V2.into());
                let mut m = Map::new();
                m.insert("excluded_buffer_ns".into(), opt(v.excluded_buffer_ns));
                m.insert("point".into(), v.point.as_str().into());
                root.insert("vantage".into(), Value::Object(m));
            }
        }
        root.insert(
            "receipts_root".into(),
            hex::encode(self.receipts_root).into(),
        );
        root.insert("steward".into(), self.steward.as_str().into());
        root.insert("stream_id".into(), self.stream_id.as_str().into());
        root.insert("window_count".into(), uint(self.window_count));
        let bytes = encode_value(&Value::Object(root)).map_err(|e| bad(e.to_string()))?;
        // What the encoder writes the decoder accepts back (the schema rules included).
        match Self::decode(&bytes) {
            Ok(_) => Ok(bytes),
            Err(r) => Err(bad(r.to_string())),
        }
    }

    /// Strictly decodes one whole document: the canonical form under [`STOP_LATENCY_LIMITS`],
    /// then the schema rules in order.
    pub fn decode(bytes: &[u8]) -> core::result::Result<Self, Refusal> {
        jouleclaw_seal::call_document::decode_kind(bytes, STOP_LATENCY_LIMITS, schema)
    }
}

/// The kind as its decoder's refusals name it: `stop-latency/1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StopLatencyKind;

impl jouleclaw_seal::call_document::DocumentKind for StopLatencyKind {
    const NAME: &'static str = "stop-latency/1";
}

/// Why the decoder refused: a stable code (a JCR-1 code or a schema code of
/// [`STOP_LATENCY_SCHEMA_CODES`]) and the byte offset (the input length for schema rules).
pub type Refusal = jouleclaw_seal::call_document::Refusal<StopLatencyKind>;

use jouleclaw_seal::call_document::{
    Code, fields, null_or_wrong, object, root_hex, string, unsigned, unsigned_or_null,
};

const TOP_FIELDS: &[&str] = &[
    "barge_ins",
    "deadline_ns",
    "jc_stop_latency",
    "receipts_root",
    "steward",
    "stream_id",
    "window_count",
];

const TOP_FIELDS_V2: &[&str] = &[
    "barge_ins",
    "deadline_ns",
    "jc_stop_latency",
    "receipts_root",
    "steward",
    "stream_id",
    "vantage",
    "window_count",
];

const VANTAGE_FIELDS: &[&str] = &["excluded_buffer_ns", "point"];

const BARGE_IN_FIELDS: &[&str] = &[
    "audio_bytes",
    "barge_in_ts_ns",
    "end_ts_ns",
    "ended_by",
    "last_audio_ts_ns",
    "late_audio_bytes",
    "stop_latency_ns",
    "window_id",
];

/// The schema rules of `spec/STOP-LATENCY-V1.md` section 4, in order.
fn schema(v: &Value) -> core::result::Result<StopLatencyDocument, Code> {
    let root = object(v)?;
    // stop-latency/2 adds one field, `vantage`; the schema id selects the field set.
    let v2 = root.get("jc_stop_latency").and_then(Value::as_str) == Some(STOP_LATENCY_SCHEMA_V2);
    if v2 {
        fields(root, TOP_FIELDS_V2)?;
    } else {
        fields(root, TOP_FIELDS)?;
    }
    let id = string(&root["jc_stop_latency"])?;
    if id != STOP_LATENCY_SCHEMA && id != STOP_LATENCY_SCHEMA_V2 {
        return Err("wrong_schema");
    }
    let steward = string(&root["steward"])?;
    let stream_id = string(&root["stream_id"])?;
    let window_count = unsigned(&root["window_count"])?;
    let deadline_ns = unsigned(&root["deadline_ns"])?;
    let root_hex_str = string(&root["receipts_root"])?;
    let list = root["barge_ins"]
        .as_array()
        .ok_or_else(|| null_or_wrong(&root["barge_ins"]))?;
    if steward.is_empty() || stream_id.is_empty() {
        return Err("empty_name");
    }
    let receipts_root = root_hex(root_hex_str)?;
    if deadline_ns != DEADLINE_NS {
        return Err("wrong_deadline");
    }
    let vantage = if v2 {
        Some(vantage(&root["vantage"])?)
    } else {
        None
    };
    let mut barge_ins = Vec::with_capacity(list.len());
    for item in list {
        barge_ins.push(barge_in(item)?);
    }
    for pair in barge_ins.windows(2) {
        if pair[1].window_id < pair[0].window_id || pair[1].barge_in_ts_ns < pair[0].barge_in_ts_ns
        {
            return Err("out_of_order");
        }
    }
    Ok(StopLatencyDocument {
        steward: steward.to_owned(),
        stream_id: stream_id.to_owned(),
        window_count,
        receipts_root,
        barge_ins,
        vantage,
    })
}

/// `vantage` of a `stop-latency/2` document: exactly `excluded_buffer_ns` (an integer or
/// `null`) and `point` (`"sent"` or `"played"`).
fn vantage(v: &Value) -> core::result::Result<Vantage, Code> {
    let m = object(v)?;
    fields(m, VANTAGE_FIELDS)?;
    let excluded_buffer_ns = unsigned_or_null(&m["excluded_buffer_ns"])?;
    let point = string(&m["point"])?;
    let point = VantagePoint::parse(point).ok_or("bad_vantage")?;
    Ok(Vantage {
        point,
        excluded_buffer_ns,
    })
}

fn barge_in(v: &Value) -> core::result::Result<BargeIn, Code> {
    let m = object(v)?;
    fields(m, BARGE_IN_FIELDS)?;
    let audio_bytes = unsigned(&m["audio_bytes"])?;
    let barge_in_ts_ns = unsigned(&m["barge_in_ts_ns"])?;
    let end_ts_ns = unsigned_or_null(&m["end_ts_ns"])?;
    let ended_by = string(&m["ended_by"])?;
    let last_audio_ts_ns = unsigned_or_null(&m["last_audio_ts_ns"])?;
    let late_audio_bytes = unsigned(&m["late_audio_bytes"])?;
    let stop_latency_ns = unsigned(&m["stop_latency_ns"])?;
    let window_id = unsigned(&m["window_id"])?;
    let ended_by = match ended_by {
        "start" => EndedBy::Start,
        "stream_end" => EndedBy::StreamEnd,
        _ => return Err("bad_ended_by"),
    };
    match (ended_by, end_ts_ns) {
        (EndedBy::Start, Some(end)) if end >= barge_in_ts_ns => {}
        (EndedBy::StreamEnd, None) => {}
        _ => return Err("end_mismatch"),
    }
    let b = BargeIn {
        window_id,
        barge_in_ts_ns,
        last_audio_ts_ns,
        audio_bytes,
        late_audio_bytes,
        ended_by,
        end_ts_ns,
    };
    let latency_ok = match last_audio_ts_ns {
        None => stop_latency_ns == 0 && audio_bytes == 0,
        Some(last) => {
            last >= barge_in_ts_ns
                && end_ts_ns.is_none_or(|end| last <= end)
                && audio_bytes > 0
                && stop_latency_ns == last - barge_in_ts_ns
        }
    };
    if !latency_ok {
        return Err("latency_mismatch");
    }
    // Late bytes exist exactly when the last audio tick is past the deadline, and are part of
    // the audio bytes.
    let late_expected = stop_latency_ns > DEADLINE_NS;
    if late_audio_bytes > audio_bytes || (late_audio_bytes > 0) != late_expected {
        return Err("late_mismatch");
    }
    Ok(b)
}
