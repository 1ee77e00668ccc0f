//! `interaction-metrics/1`: the wire form, in JCR-1 canonical JSON.

use jouleclaw_jcr1::{Limits, encode_value};
use serde_json::{Map, Value};

use crate::error::{InteractionError, Result};
use crate::meter::{DEADLINE_NS, Event, EventKind, InteractionConfig, MAX_EVENTS};

/// The schema id, the value of `jc_interaction_metrics`.
pub const INTERACTION_SCHEMA: &str = "interaction-metrics/1";

/// The longest `steward` or `stream_id`, in bytes: 4,096, as in a window receipt.
pub const MAX_NAME_BYTES: usize = 4_096;

/// The decoder's bounds: 8 MiB documents, depth 3 (document, `events`, one event), strings of
/// at most 4,096 bytes, arrays of at most [`MAX_EVENTS`] elements.
pub const INTERACTION_LIMITS: Limits = Limits {
    max_document_bytes: 8 << 20,
    max_depth: 3,
    max_string_bytes: MAX_NAME_BYTES,
    max_array_len: MAX_EVENTS,
};

/// Every schema refusal code, in the order the decoder checks them
/// (`spec/INTERACTION-METRICS-V1.md` section 4).
pub const INTERACTION_SCHEMA_CODES: &[&str] = &[
    "wrong_type",
    "null",
    "unknown_field",
    "missing_field",
    "wrong_schema",
    "negative_unsigned",
    "empty_name",
    "bad_root",
    "wrong_deadline",
    "bad_config",
    "bad_kind",
    "latency_mismatch",
    "tick_mismatch",
    "out_of_order",
    "counts_mismatch",
];

/// The key of the count of `yield` events within the 150 ms deadline in `counts`.
pub const YIELD_WITHIN_DEADLINE: &str = "yield_within_deadline";

/// One stream's interaction events, bound to its window receipts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InteractionDocument {
    /// The receipts' steward.
    pub steward: String,
    /// The receipts' stream id.
    pub stream_id: String,
    /// How many window receipts the stream has.
    pub window_count: u64,
    /// The RFC 9162 root over the receipts' BLAKE3 content hashes, in window order.
    pub receipts_root: [u8; 32],
    /// The detection windows.
    pub config: InteractionConfig,
    /// How many frames the meter saw (up to the last tick's, before the end-of-conversation
    /// filter).
    pub frame_count: u64,
    /// Every event, in frame order.
    pub events: Vec<Event>,
}

pub use jouleclaw_seal::receipts_root;

/// `true` when a `yield` of `latency_ticks` frames stopped within the 150 ms deadline: its
/// last agent speech frame began at most 150 ms after the interruption's frame.
pub fn within_deadline(config: &InteractionConfig, latency_ticks: u64) -> bool {
    latency_ticks
        .saturating_sub(1)
        .saturating_mul(config.tick_ns)
        <= DEADLINE_NS
}

/// The `counts` object of `events`: each kind's count and [`YIELD_WITHIN_DEADLINE`].
pub fn count_events(config: &InteractionConfig, events: &[Event]) -> Vec<(&'static str, u64)> {
    let mut out: Vec<(&'static str, u64)> = EventKind::ALL
        .iter()
        .map(|k| {
            (
                k.as_str(),
                events.iter().filter(|e| e.kind == *k).count() as u64,
            )
        })
        .collect();
    out.push((
        YIELD_WITHIN_DEADLINE,
        events
            .iter()
            .filter(|e| {
                e.kind == EventKind::Yield && within_deadline(config, e.latency_ticks.unwrap_or(0))
            })
            .count() as u64,
    ));
    out.sort_by_key(|(k, _)| *k);
    out
}

fn opt(v: Option<u64>) -> Value {
    v.map_or(Value::Null, Value::from)
}

impl InteractionDocument {
    /// The document for `events` (from a finished meter over `frame_count` frames) over the
    /// receipts whose content hashes are `content_hashes`, in window order.
    pub fn new(
        steward: &str,
        stream_id: &str,
        config: InteractionConfig,
        frame_count: u64,
        events: &[Event],
        content_hashes: &[[u8; 32]],
    ) -> Result<Self> {
        let doc = Self {
            steward: steward.to_owned(),
            stream_id: stream_id.to_owned(),
            window_count: content_hashes.len() as u64,
            receipts_root: receipts_root(content_hashes).map_err(|_| {
                InteractionError::Unencodable {
                    reason: "more receipts than a Merkle log holds".to_owned(),
                }
            })?,
            config,
            frame_count,
            events: events.to_vec(),
        };
        doc.encode()?;
        Ok(doc)
    }

    /// The CWT `sub` of its signature: `<stream_id>:interaction-metrics`.
    pub fn subject(&self) -> String {
        format!("{}:interaction-metrics", self.stream_id)
    }

    /// The panel of this one stream.
    pub fn panel(&self) -> crate::Panel {
        crate::Panel::of(&self.config, &self.events)
    }

    /// The canonical bytes. Refuses ([`InteractionError::Unencodable`]) what the decoder would
    /// refuse.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let bad = |reason: String| InteractionError::Unencodable { reason };
        for (field, s) in [("steward", &self.steward), ("stream_id", &self.stream_id)] {
            if s.is_empty() || s.len() > MAX_NAME_BYTES {
                return Err(bad(format!("{field} of {} bytes", s.len())));
            }
        }
        if self.events.len() > MAX_EVENTS {
            return Err(bad(format!("{} events", self.events.len())));
        }
        let mut config = Map::new();
        for (k, v) in self.config.fields() {
            config.insert(k.into(), Value::from(v));
        }
        let mut counts = Map::new();
        for (k, v) in count_events(&self.config, &self.events) {
            counts.insert(k.into(), Value::from(v));
        }
        let mut list = Vec::with_capacity(self.events.len());
        for e in &self.events {
            let mut m = Map::new();
            m.insert("kind".into(), e.kind.as_str().into());
            m.insert(
                "latency_ns".into(),
                opt(e
                    .latency_ticks
                    .map(|l| l.saturating_mul(self.config.tick_ns))),
            );
            m.insert("segment_tick".into(), Value::from(e.segment_tick));
            m.insert("tick".into(), Value::from(e.tick));
            m.insert("window_id".into(), opt(e.window_id));
            list.push(Value::Object(m));
        }
        let mut root = Map::new();
        root.insert("config".into(), Value::Object(config));
        root.insert("counts".into(), Value::Object(counts));
        root.insert("deadline_ns".into(), Value::from(DEADLINE_NS));
        root.insert("events".into(), Value::Array(list));
        root.insert("frame_count".into(), Value::from(self.frame_count));
        root.insert("jc_interaction_metrics".into(), INTERACTION_SCHEMA.into());
        root.insert(
            "receipts_root".into(),
            hex::encode(self.receipts_root).into(),
        );
        root.insert("steward".into(), self.steward.as_str().into());
        root.insert("stream_id".into(), self.stream_id.as_str().into());
        root.insert("window_count".into(), Value::from(self.window_count));
        let bytes = encode_value(&Value::Object(root)).map_err(|e| bad(e.to_string()))?;
        match Self::decode(&bytes) {
            Ok(d) if d == *self => Ok(bytes),
            Ok(_) => Err(bad(
                "the document does not survive its own encoding".to_owned()
            )),
            Err(r) => Err(bad(r.to_string())),
        }
    }

    /// Strictly decodes one whole document: the canonical form under [`INTERACTION_LIMITS`],
    /// then the schema rules in order.
    pub fn decode(bytes: &[u8]) -> core::result::Result<Self, Refusal> {
        jouleclaw_seal::call_document::decode_kind(bytes, INTERACTION_LIMITS, schema)
    }
}

/// The kind as its decoder's refusals name it: `interaction-metrics/1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InteractionKind;

impl jouleclaw_seal::call_document::DocumentKind for InteractionKind {
    const NAME: &'static str = "interaction-metrics/1";
}

/// Why the decoder refused: a stable code (a JCR-1 code or a schema code of
/// [`INTERACTION_SCHEMA_CODES`]) and the byte offset (the input length for schema rules).
pub type Refusal = jouleclaw_seal::call_document::Refusal<InteractionKind>;

use jouleclaw_seal::call_document::{
    Code, fields, null_or_wrong, object, root_hex, string, unsigned, unsigned_or_null,
};

const TOP_FIELDS: &[&str] = &[
    "config",
    "counts",
    "deadline_ns",
    "events",
    "frame_count",
    "jc_interaction_metrics",
    "receipts_root",
    "steward",
    "stream_id",
    "window_count",
];

const EVENT_FIELDS: &[&str] = &["kind", "latency_ns", "segment_tick", "tick", "window_id"];

/// The schema rules of `spec/INTERACTION-METRICS-V1.md` section 4, in order.
fn schema(v: &Value) -> core::result::Result<InteractionDocument, Code> {
    let root = object(v)?;
    fields(root, TOP_FIELDS)?;
    if string(&root["jc_interaction_metrics"])? != INTERACTION_SCHEMA {
        return Err("wrong_schema");
    }
    let steward = string(&root["steward"])?;
    let stream_id = string(&root["stream_id"])?;
    let window_count = unsigned(&root["window_count"])?;
    let frame_count = unsigned(&root["frame_count"])?;
    let deadline_ns = unsigned(&root["deadline_ns"])?;
    let root_hex_str = string(&root["receipts_root"])?;
    let config_obj = object(&root["config"])?;
    let counts_obj = object(&root["counts"])?;
    let list = root["events"]
        .as_array()
        .ok_or_else(|| null_or_wrong(&root["events"]))?;
    if steward.is_empty() || stream_id.is_empty() {
        return Err("empty_name");
    }
    let receipts_root = root_hex(root_hex_str)?;
    if deadline_ns != DEADLINE_NS {
        return Err("wrong_deadline");
    }
    // Rule 10: the detection windows.
    let names = InteractionConfig::default().fields().map(|(k, _)| k);
    fields(config_obj, &names)?;
    let get = |k: &str| unsigned(&config_obj[k]);
    let config = InteractionConfig {
        tick_ns: get("tick_ns")?,
        no_yield_window_ns: get("no_yield_window_ns")?,
        backchannel_yield_window_ns: get("backchannel_yield_window_ns")?,
        vocal_tic_yield_window_ns: get("vocal_tic_yield_window_ns")?,
        non_directed_yield_window_ns: get("non_directed_yield_window_ns")?,
        vocal_tic_response_window_ns: get("vocal_tic_response_window_ns")?,
        non_directed_response_window_ns: get("non_directed_response_window_ns")?,
    };
    config.validate().map_err(|_| "bad_config")?;
    // Rule 11: the counts' form.
    let count_names: Vec<&str> = count_events(&config, &[]).iter().map(|(k, _)| *k).collect();
    fields(counts_obj, &count_names)?;
    let mut counts = Vec::with_capacity(count_names.len());
    for k in &count_names {
        counts.push((*k, unsigned(&counts_obj[*k])?));
    }
    // Rules 12-13: each event.
    let mut events = Vec::with_capacity(list.len());
    for item in list {
        events.push(event(item, &config, frame_count)?);
    }
    if events.windows(2).any(|p| p[1].tick < p[0].tick) {
        return Err("out_of_order");
    }
    // Rule 14: the counts are the events'.
    if counts != count_events(&config, &events) {
        return Err("counts_mismatch");
    }
    Ok(InteractionDocument {
        steward: steward.to_owned(),
        stream_id: stream_id.to_owned(),
        window_count,
        receipts_root,
        config,
        frame_count,
        events,
    })
}

fn event(
    v: &Value,
    config: &InteractionConfig,
    frame_count: u64,
) -> core::result::Result<Event, Code> {
    let m = object(v)?;
    fields(m, EVENT_FIELDS)?;
    let kind = string(&m["kind"])?;
    let latency_ns = unsigned_or_null(&m["latency_ns"])?;
    let segment_tick = unsigned(&m["segment_tick"])?;
    let tick = unsigned(&m["tick"])?;
    let window_id = unsigned_or_null(&m["window_id"])?;
    let kind = EventKind::parse(kind).ok_or("bad_kind")?;
    let latency_ticks = match (kind, latency_ns) {
        (k, None) if !k.has_latency() => None,
        (k, Some(ns)) if k.has_latency() && ns % config.tick_ns == 0 => {
            let l = ns / config.tick_ns;
            if k == EventKind::Yield && l == 0 {
                return Err("latency_mismatch");
            }
            Some(l)
        }
        _ => return Err("latency_mismatch"),
    };
    if segment_tick > tick || tick >= frame_count {
        return Err("tick_mismatch");
    }
    Ok(Event {
        kind,
        tick,
        segment_tick,
        latency_ticks,
        window_id,
    })
}
