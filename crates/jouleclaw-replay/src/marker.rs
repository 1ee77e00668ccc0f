//! The control-channel encoding of replay records (`spec/COMMIT-REPLAY.md` section 5).
//!
//! A replay record rides on the control channel (`jouleclaw_stream::duplex::CONTROL`) as a
//! `TickMarker::Custom` whose text is [`MARKER_PREFIX`] followed by one JSON object:
//!
//! - a fixture event, exactly as in schema v1 (`{"kind":"hypothesis","t_ms":300,"text":"alpha"}`);
//! - or an observed write of the system under test:
//!   `{"kind":"observed_write","t_ms":720,"text":"alpha bravo"}`.
//!
//! [`encode_event`] writes the JSON canonically (keys sorted, no whitespace, JCR-1 escaping),
//! but [`decode_marker`] accepts any JSON object with the right fields.

use jouleclaw_stream::{TickMarker, canon};
use serde_json::Value;

use crate::error::{ReplayError, Result};
use crate::fixture::{CandidateClass, Event, EventKind, duplicate_key, parse_event};

/// The prefix that marks a custom marker as a replay record: `"replay/1 "`.
pub const MARKER_PREFIX: &str = "replay/1 ";

/// One decoded replay record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayRecord {
    /// A fixture event to feed the reducer.
    Event(Event),
    /// A write the system under test reports having made to the target.
    ObservedWrite {
        /// When.
        t_ms: u64,
        /// The inserted text.
        text: String,
    },
}

/// The canonical JSON of an event (keys in ascending order, JCR-1 escaping).
pub fn event_json(event: &Event) -> String {
    let mut fields: Vec<(&str, Field<'_>)> = vec![
        ("kind", Field::Str(event.kind.name())),
        ("t_ms", Field::Int(event.t_ms)),
    ];
    match &event.kind {
        EventKind::HoldStart {
            duration_ms,
            energy_band,
        } => {
            if let Some(d) = duration_ms {
                fields.push(("duration_ms", Field::Int(*d)));
            }
            if let Some(e) = energy_band {
                fields.push(("energy_band", Field::Str(e)));
            }
        }
        EventKind::Hypothesis { text, decode_id } | EventKind::LatePartial { text, decode_id } => {
            fields.push(("text", Field::Str(text)));
            if let Some(d) = decode_id {
                fields.push(("decode_id", Field::Str(d)));
            }
        }
        EventKind::FinalDecode {
            text,
            decode_id,
            class,
        } => {
            fields.push(("text", Field::Str(text)));
            if let Some(d) = decode_id {
                fields.push(("decode_id", Field::Str(d)));
            }
            // The default class is left out, so a dictation final encodes as before.
            if *class != CandidateClass::Dictation {
                fields.push(("class", Field::Str(class.as_str())));
            }
        }
        EventKind::Pause { duration_ms } => fields.push(("duration_ms", Field::Int(*duration_ms))),
        EventKind::Target(t) => {
            fields.push(("focus_id", Field::Str(&t.focus_id)));
            fields.push(("caret_version", Field::Int(t.caret_version)));
            fields.push(("editable", Field::Bool(t.editable)));
        }
        EventKind::Failure { category } => fields.push(("category", Field::Str(category.as_str()))),
        EventKind::HoldRelease
        | EventKind::HandsfreeStop
        | EventKind::StageCommit
        | EventKind::StageDiscard => {}
    }
    write_object(fields)
}

enum Field<'a> {
    Str(&'a str),
    Int(u64),
    Bool(bool),
}

fn write_object(mut fields: Vec<(&str, Field<'_>)>) -> String {
    fields.sort_by(|a, b| a.0.cmp(b.0));
    let mut out = Vec::new();
    out.push(b'{');
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        canon::write_str(&mut out, k);
        out.push(b':');
        match v {
            Field::Str(s) => canon::write_str(&mut out, s),
            Field::Int(n) => {
                // Values above 2^53-1 cannot come from a parsed fixture. A hand-built one is
                // written exactly as it is, never altered; `decode_marker` then refuses it, so
                // the value reaches no reducer changed.
                if canon::write_u64(&mut out, *n).is_err() {
                    out.extend_from_slice(n.to_string().as_bytes());
                }
            }
            Field::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        }
    }
    out.push(b'}');
    String::from_utf8_lossy(&out).into_owned()
}

/// The control-channel marker carrying `event`. An integer above `2^53 - 1` (which no parsed
/// fixture holds) is written unaltered and makes the marker undecodable.
pub fn encode_event(event: &Event) -> TickMarker {
    TickMarker::Custom(format!("{MARKER_PREFIX}{}", event_json(event)))
}

/// The control-channel marker carrying an observed write.
pub fn encode_observed_write(t_ms: u64, text: &str) -> TickMarker {
    let json = write_object(vec![
        ("kind", Field::Str("observed_write")),
        ("t_ms", Field::Int(t_ms)),
        ("text", Field::Str(text)),
    ]);
    TickMarker::Custom(format!("{MARKER_PREFIX}{json}"))
}

/// The namespace every replay marker starts with; [`MARKER_PREFIX`] is its only version.
const MARKER_NAMESPACE: &str = "replay/";

/// Decodes a marker: `None` when it is not a replay record (another marker, or a custom
/// marker that does not start with `replay/`); `Some(Err)` when it starts with `replay/` but
/// is not [`MARKER_PREFIX`] followed by a valid record (a damaged prefix, an unknown version,
/// a body that is not JSON, a repeated key, a field the schema does not define). A damaged
/// replay marker is refused rather than ignored, because ignoring it would silently drop an
/// event (a focus change, say) the reducer must see.
pub fn decode_marker(marker: &TickMarker) -> Option<Result<ReplayRecord>> {
    let TickMarker::Custom(text) = marker else {
        return None;
    };
    if !text.starts_with(MARKER_NAMESPACE) {
        return None;
    }
    Some(match text.strip_prefix(MARKER_PREFIX) {
        Some(body) => decode_body(body),
        None => Err(ReplayError::InvalidMarker {
            detail: format!("a `{MARKER_NAMESPACE}` marker must start with {MARKER_PREFIX:?}"),
        }),
    })
}

fn decode_body(body: &str) -> Result<ReplayRecord> {
    let invalid = |e: ReplayError| ReplayError::InvalidMarker {
        detail: e.to_string(),
    };
    let value: Value = serde_json::from_str(body).map_err(|e| ReplayError::InvalidMarker {
        detail: e.to_string(),
    })?;
    if let Some(field) = duplicate_key(body, "marker") {
        return Err(ReplayError::InvalidMarker {
            detail: format!("field `{field}` occurs twice in one object"),
        });
    }
    if value.get("kind").and_then(Value::as_str) == Some("observed_write") {
        let obj = value
            .as_object()
            .ok_or_else(|| ReplayError::InvalidMarker {
                detail: "observed_write is not an object".to_owned(),
            })?;
        if obj
            .keys()
            .any(|k| !matches!(k.as_str(), "kind" | "t_ms" | "text"))
        {
            return Err(ReplayError::InvalidMarker {
                detail: "observed_write carries an unknown field".to_owned(),
            });
        }
        let t_ms = obj
            .get("t_ms")
            .and_then(Value::as_u64)
            .filter(|&n| n <= canon::MAX_SAFE_INTEGER);
        let text = obj.get("text").and_then(Value::as_str);
        return match (t_ms, text) {
            (Some(t_ms), Some(text)) => Ok(ReplayRecord::ObservedWrite {
                t_ms,
                text: text.to_owned(),
            }),
            _ => Err(ReplayError::InvalidMarker {
                detail: "observed_write needs integer t_ms and string text".to_owned(),
            }),
        };
    }
    parse_event(&value, 1, "marker")
        .map(ReplayRecord::Event)
        .map_err(invalid)
}
