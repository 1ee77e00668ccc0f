//! The file formats of `spec/TICK-TRACE.md`: tick trace lines (JSON Lines, one tick per line)
//! and stream spec files (one JSON object).
//!
//! They live beside the driver because they describe its input; nothing here reads or writes a
//! file: callers hand in bytes and get ticks, specs or text back.

use bytes::Bytes;
use jouleclaw_stream::{
    ChannelDirection, ChannelSpec, StreamSpec, Tick, TickKind, TickKindTag, TickMarker,
};

use crate::error::{PipelineError, Result};

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceRecord {
    ts_ns: u64,
    channel_id: u32,
    kind: String,
    #[serde(default)]
    marker: Option<MarkerField>,
    #[serde(default, deserialize_with = "present")]
    bytes_hex: Option<String>,
    #[serde(default, deserialize_with = "present")]
    bytes_len: Option<u64>,
    #[serde(default, deserialize_with = "present")]
    window_id: Option<u64>,
}

/// An optional field that, when present, must hold a value of its type: `null` is not "absent".
fn present<'de, D, T>(d: D) -> core::result::Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// The `marker` field as written: a name, `{"custom": text}`, or anything else, kept as a
/// message so that the refusal carries the marker's code (`trace_bad_marker`).
enum MarkerField {
    Name(String),
    Custom(String),
    Bad(String),
}

const MARKER_SHAPE: &str = "marker must be a name or {\"custom\":\"<text>\"}";

impl<'de> serde::Deserialize<'de> for MarkerField {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> core::result::Result<Self, D::Error> {
        d.deserialize_any(MarkerVisitor)
    }
}

struct MarkerVisitor;

impl<'de> serde::de::Visitor<'de> for MarkerVisitor {
    type Value = MarkerField;

    fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(MARKER_SHAPE)
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> core::result::Result<MarkerField, E> {
        Ok(MarkerField::Name(v.to_owned()))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> core::result::Result<MarkerField, A::Error> {
        let mut custom = None;
        let mut bad = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "custom" && custom.is_none() {
                match map.next_value::<serde_json::Value>()? {
                    serde_json::Value::String(text) => custom = Some(text),
                    _ => bad = Some("custom must be a string".to_owned()),
                }
            } else {
                map.next_value::<serde::de::IgnoredAny>()?;
                bad.get_or_insert(if key == "custom" {
                    "the marker object repeats the key \"custom\"".to_owned()
                } else {
                    format!("unknown key {key:?} in the marker object")
                });
            }
        }
        Ok(match (bad, custom) {
            (Some(b), _) => MarkerField::Bad(b),
            (None, Some(text)) => MarkerField::Custom(text),
            (None, None) => MarkerField::Bad(
                "an object marker must be exactly {\"custom\":\"<text>\"}".to_owned(),
            ),
        })
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> core::result::Result<MarkerField, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(MarkerField::Bad(MARKER_SHAPE.to_owned()))
    }

    fn visit_unit<E: serde::de::Error>(self) -> core::result::Result<MarkerField, E> {
        Ok(MarkerField::Bad("marker must not be null".to_owned()))
    }

    fn visit_bool<E: serde::de::Error>(self, _: bool) -> core::result::Result<MarkerField, E> {
        Ok(MarkerField::Bad(MARKER_SHAPE.to_owned()))
    }

    fn visit_i64<E: serde::de::Error>(self, _: i64) -> core::result::Result<MarkerField, E> {
        Ok(MarkerField::Bad(MARKER_SHAPE.to_owned()))
    }

    fn visit_u64<E: serde::de::Error>(self, _: u64) -> core::result::Result<MarkerField, E> {
        Ok(MarkerField::Bad(MARKER_SHAPE.to_owned()))
    }

    fn visit_f64<E: serde::de::Error>(self, _: f64) -> core::result::Result<MarkerField, E> {
        Ok(MarkerField::Bad(MARKER_SHAPE.to_owned()))
    }
}

/// The longest trace line accepted for `spec`: a payload of `max_chunk_bytes` in hex plus 4,096
/// bytes for the other fields.
pub fn max_trace_line_len(spec: &StreamSpec) -> usize {
    (spec.max_chunk_bytes as usize)
        .saturating_mul(2)
        .saturating_add(4096)
}

fn marker_from_field(v: &MarkerField) -> Result<TickMarker> {
    let bad = |detail: String| PipelineError::TraceMarker { detail };
    match v {
        MarkerField::Name(s) => match s.as_str() {
            "start" => Ok(TickMarker::Start),
            "end" => Ok(TickMarker::End),
            "barge_in" => Ok(TickMarker::BargeIn),
            "silence" => Ok(TickMarker::Silence),
            "end_of_turn" => Ok(TickMarker::EndOfTurn),
            other => Err(bad(format!(
                "unknown marker {other:?} (expected start, end, barge_in, silence, end_of_turn or {{\"custom\":\"...\"}})"
            ))),
        },
        MarkerField::Custom(text) => Ok(TickMarker::Custom(text.clone())),
        MarkerField::Bad(detail) => Err(bad(detail.clone())),
    }
}

fn decode_hex(hex_text: &str) -> Result<Vec<u8>> {
    if !hex_text.len().is_multiple_of(2)
        || !hex_text
            .bytes()
            .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(PipelineError::TracePayload {
            detail: "bytes_hex must be lowercase hex of even length".to_owned(),
        });
    }
    hex::decode(hex_text).map_err(|e| PipelineError::TracePayload {
        detail: format!("bytes_hex: {e}"),
    })
}

/// Parses one trace line (`spec/TICK-TRACE.md`) into a tick of a stream with `spec`; `None` for
/// a line of JSON whitespace only. The line may end in `\n` or `\r\n`; that line end is not
/// part of the line's length.
///
/// The tick's `window_id` is the line's `window_id` if given, else `spec.window_of(ts_ns)`. The
/// line is refused if, without its line end, it is longer than [`max_trace_line_len`], not UTF-8, not exactly a tick
/// object, or if `bytes_len` exceeds `max_chunk_bytes` (checked before anything is allocated).
/// Whether the tick fits its window and channel is for [`StreamWindow::push`](jouleclaw_stream::StreamWindow::push) to decide.
pub fn parse_trace_line(line: &[u8], spec: &StreamSpec) -> Result<Option<Tick>> {
    let line = line
        .strip_suffix(b"\r\n")
        .or_else(|| line.strip_suffix(b"\n"))
        .unwrap_or(line);
    let max = max_trace_line_len(spec);
    if line.len() > max {
        return Err(PipelineError::TraceLineTooLong { max });
    }
    let text = core::str::from_utf8(line).map_err(|_| PipelineError::TraceNotUtf8)?;
    if text.trim_matches([' ', '\t', '\r', '\n']).is_empty() {
        return Ok(None);
    }
    let rec: TraceRecord = serde_json::from_str(text).map_err(|e| PipelineError::TraceJson {
        detail: e.to_string(),
    })?;
    let kind = match rec.kind.as_str() {
        "audio" => TickKind::Audio,
        "text" => TickKind::Text,
        "video" => TickKind::Video,
        "marker" => {
            let m = rec
                .marker
                .as_ref()
                .ok_or_else(|| PipelineError::TraceMarker {
                    detail: "a marker tick needs a marker field".to_owned(),
                })?;
            TickKind::Marker(marker_from_field(m)?)
        }
        other => {
            return Err(PipelineError::TraceKind {
                kind: other.to_owned(),
            });
        }
    };
    if rec.marker.is_some() && !matches!(kind, TickKind::Marker(_)) {
        return Err(PipelineError::TraceMarker {
            detail: format!("a {} tick carries no marker field", rec.kind),
        });
    }
    let bytes = match (rec.bytes_hex, rec.bytes_len) {
        (Some(_), Some(_)) => {
            return Err(PipelineError::TracePayload {
                detail: "give bytes_hex or bytes_len, not both".to_owned(),
            });
        }
        (Some(h), None) => Bytes::from(decode_hex(&h)?),
        (None, Some(n)) => {
            if n > u64::from(spec.max_chunk_bytes) {
                return Err(PipelineError::TracePayload {
                    detail: format!(
                        "bytes_len {n} exceeds max_chunk_bytes {}",
                        spec.max_chunk_bytes
                    ),
                });
            }
            // Bounded by max_chunk_bytes (a u32) just above.
            Bytes::from(vec![0u8; n as usize])
        }
        (None, None) if matches!(kind, TickKind::Marker(_)) => Bytes::new(),
        (None, None) => {
            return Err(PipelineError::TracePayload {
                detail: format!("a {} tick needs bytes_hex or bytes_len", rec.kind),
            });
        }
    };
    let window_id = rec.window_id.unwrap_or_else(|| spec.window_of(rec.ts_ns));
    Ok(Some(Tick::new(
        window_id,
        rec.channel_id,
        kind,
        bytes,
        rec.ts_ns,
    )))
}

/// Appends the trace line of `tick` (without a newline): keys `ts_ns`, `channel_id`, `kind`,
/// `marker` (markers), then `bytes_len` for an all-zero payload (omitted for an empty marker
/// payload) or `bytes_hex` otherwise, then `window_id` only when it differs from
/// `spec.window_of(ts_ns)`. [`parse_trace_line`] reads it back to an equal tick.
pub fn write_trace_line(tick: &Tick, spec: &StreamSpec, out: &mut String) {
    use core::fmt::Write as _;
    let (kind, marker) = match &tick.kind {
        TickKind::Marker(m) => ("marker", Some(m)),
        k => (k.tag().as_str(), None),
    };
    // Writing into a String cannot fail.
    let _ = write!(
        out,
        "{{\"ts_ns\":{},\"channel_id\":{},\"kind\":\"{kind}\"",
        tick.ts_ns, tick.channel_id
    );
    if let Some(m) = marker {
        let value = match m.wire_name() {
            Some(name) => serde_json::Value::String(name.to_owned()),
            None => {
                let text = match m {
                    TickMarker::Custom(t) => t.clone(),
                    _ => String::new(),
                };
                serde_json::json!({ "custom": text })
            }
        };
        let _ = write!(out, ",\"marker\":{value}");
    }
    let is_marker = marker.is_some();
    if tick.bytes.iter().all(|&b| b == 0) {
        if !(is_marker && tick.bytes.is_empty()) {
            let _ = write!(out, ",\"bytes_len\":{}", tick.bytes.len());
        }
    } else {
        let _ = write!(out, ",\"bytes_hex\":\"{}\"", hex::encode(&tick.bytes));
    }
    if tick.window_id != spec.window_of(tick.ts_ns) {
        let _ = write!(out, ",\"window_id\":{}", tick.window_id);
    }
    out.push('}');
}

#[derive(serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct SpecFile {
    tick_window_ms: u32,
    max_chunk_bytes: u32,
    max_ticks_per_window: u32,
    channels: Vec<ChannelFile>,
}

#[derive(serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
struct ChannelFile {
    id: u32,
    direction: String,
    kind: String,
    mime: String,
}

/// Parses a stream spec file (`spec/TICK-TRACE.md`, "Stream spec files") and validates it.
pub fn spec_from_json(text: &str) -> Result<StreamSpec> {
    let file: SpecFile = serde_json::from_str(text).map_err(|e| PipelineError::SpecJson {
        detail: e.to_string(),
    })?;
    let mut channels = Vec::with_capacity(file.channels.len());
    for c in file.channels {
        let direction = match c.direction.as_str() {
            "inbound" => ChannelDirection::Inbound,
            "outbound" => ChannelDirection::Outbound,
            "substrate" => ChannelDirection::Substrate,
            other => {
                return Err(PipelineError::SpecJson {
                    detail: format!(
                        "channel {}: direction {other:?} is not inbound, outbound or substrate",
                        c.id
                    ),
                });
            }
        };
        let kind = match c.kind.as_str() {
            "audio" => TickKindTag::Audio,
            "text" => TickKindTag::Text,
            "video" => TickKindTag::Video,
            "marker" => TickKindTag::Marker,
            other => {
                return Err(PipelineError::SpecJson {
                    detail: format!(
                        "channel {}: kind {other:?} is not audio, text, video or marker",
                        c.id
                    ),
                });
            }
        };
        channels.push(ChannelSpec::new(c.id, direction, kind, &c.mime));
    }
    let spec = StreamSpec {
        tick_window_ms: file.tick_window_ms,
        max_chunk_bytes: file.max_chunk_bytes,
        max_ticks_per_window: file.max_ticks_per_window,
        channels,
    };
    spec.validate()?;
    Ok(spec)
}

/// The spec file text of `spec` (pretty JSON with a trailing newline); [`spec_from_json`] reads
/// it back to an equal spec.
pub fn spec_to_json(spec: &StreamSpec) -> String {
    let file = SpecFile {
        tick_window_ms: spec.tick_window_ms,
        max_chunk_bytes: spec.max_chunk_bytes,
        max_ticks_per_window: spec.max_ticks_per_window,
        channels: spec
            .channels
            .iter()
            .map(|c| ChannelFile {
                id: c.id,
                direction: c.direction.as_str().to_owned(),
                kind: c.kind_tag.as_str().to_owned(),
                mime: c.mime.clone(),
            })
            .collect(),
    };
    let mut text = serde_json::to_string_pretty(&file).unwrap_or_default();
    text.push('\n');
    text
}
