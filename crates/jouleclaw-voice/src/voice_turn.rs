//! `voice-turn/1`: the wire form of a turn's result, in JCR-1 canonical JSON.

use core::fmt;

use jouleclaw_jcr1::fields::{Code, fields_required, object, string, unsigned};
use jouleclaw_jcr1::{Limits, RefusalCode, decode_canonical_value, encode_value};
use serde_json::{Map, Value};

use crate::error::{Result, VoiceError};
use crate::level::Measurement;

/// The schema id, the value of `jc_voice_turn`.
pub const VOICE_TURN_SCHEMA: &str = "voice-turn/1";

/// The longest sentence a turn carries, in UTF-8 bytes: 32,768, the largest payload the
/// duplex voice stream's windows accept (`max_chunk_bytes`), so the text tick always fits.
pub const MAX_TEXT_BYTES: usize = 32_768;

/// The longest `error` code, in bytes.
pub const MAX_ERROR_CODE_BYTES: usize = 64;

/// The decoder's bounds: 262,144-byte documents (a 32,768-byte sentence of control characters
/// escapes to six bytes each), depth 2 (the turn and its measurement), strings of at most
/// [`MAX_TEXT_BYTES`] decoded bytes, arrays of at most 64 elements (no field is an array).
pub const VOICE_TURN_LIMITS: Limits = Limits {
    max_document_bytes: 262_144,
    max_depth: 2,
    max_string_bytes: MAX_TEXT_BYTES,
    max_array_len: 64,
};

/// What became of the words of a turn.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Heard {
    /// A transcriber was asked and answered with this sentence (`""`: it heard no words).
    Said(String),
    /// No transcriber was asked: this machine has none.
    Unasked,
    /// The transcription failed, with this stable code (a [`VoiceError::code`]). Never an empty
    /// sentence.
    Failed(String),
}

impl Heard {
    /// The failure of `error`.
    pub fn failed(error: &VoiceError) -> Self {
        Self::Failed(error.code().to_owned())
    }

    /// The sentence, if a transcriber answered.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Said(s) => Some(s),
            _ => None,
        }
    }
}

/// One turn's result: its measurement always, and what became of its words.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VoiceTurn {
    /// The turn's audio, measured.
    pub measurement: Measurement,
    /// The words.
    pub heard: Heard,
}

/// Why the `voice-turn/1` decoder refused: a stable code and the byte offset at which it was
/// decided (the input length for schema rules, which are decided at the end of input).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VoiceTurnRefusal {
    /// The stable code: a JCR-1 refusal code (`spec/JCR1-STREAM-WINDOW-V1.md`) or one of the
    /// schema codes of `spec/VOICE-TURN-V1.md`.
    pub code: &'static str,
    /// Where, in bytes from the start of the document.
    pub offset: u64,
}

impl fmt::Display for VoiceTurnRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "voice-turn/1 refused ({}) at byte {}",
            self.code, self.offset
        )
    }
}

impl std::error::Error for VoiceTurnRefusal {}

/// Every schema refusal code, in the order the decoder checks them.
pub const VOICE_TURN_SCHEMA_CODES: &[&str] = &[
    "wrong_type",
    "null",
    "unknown_field",
    "missing_field",
    "wrong_schema",
    "negative_unsigned",
    "text_and_error",
    "bad_error_code",
    "duration_mismatch",
    "silence_mismatch",
    "level_out_of_range",
    "rms_above_peak",
];

fn is_error_code(s: &str) -> bool {
    let b = s.as_bytes();
    (1..=MAX_ERROR_CODE_BYTES).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
}

impl VoiceTurn {
    /// The canonical bytes. Fails ([`VoiceError::Unencodable`]) for a sentence over
    /// [`MAX_TEXT_BYTES`] or an error code that is not `[a-z][a-z0-9_]*` of 1..=64 bytes; what
    /// it encodes, [`VoiceTurn::decode`] accepts back.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let m = &self.measurement;
        let level = |h: Option<i32>| h.map_or(Value::Null, Value::from);
        let mut measurement = Map::new();
        measurement.insert("duration_ns".into(), m.duration_ns().into());
        measurement.insert(
            "peak_dbfs_hundredths".into(),
            level(m.peak_dbfs_hundredths()),
        );
        measurement.insert("rms_dbfs_hundredths".into(), level(m.rms_dbfs_hundredths()));
        measurement.insert("samples".into(), m.samples().into());
        let mut root = Map::new();
        root.insert("jc_voice_turn".into(), VOICE_TURN_SCHEMA.into());
        root.insert("measurement".into(), Value::Object(measurement));
        match &self.heard {
            Heard::Said(s) if s.len() > MAX_TEXT_BYTES => {
                return Err(VoiceError::Unencodable {
                    reason: format!("text of {} bytes, over {MAX_TEXT_BYTES}", s.len()),
                });
            }
            Heard::Said(s) => {
                root.insert("text".into(), s.as_str().into());
            }
            Heard::Unasked => {}
            Heard::Failed(code) if !is_error_code(code) => {
                return Err(VoiceError::Unencodable {
                    reason: format!("error code {code:?} is not [a-z][a-z0-9_]{{0,63}}"),
                });
            }
            Heard::Failed(code) => {
                root.insert("error".into(), code.as_str().into());
            }
        }
        encode_value(&Value::Object(root)).map_err(|e| VoiceError::Unencodable {
            reason: e.to_string(),
        })
    }

    /// Strictly decodes one whole document (the same rules as [`VoiceTurnDecoder`]).
    pub fn decode(bytes: &[u8]) -> core::result::Result<Self, VoiceTurnRefusal> {
        let mut d = VoiceTurnDecoder::new();
        d.push(bytes)?;
        d.finish()
    }
}

/// Incremental strict decoder of one `voice-turn/1` document.
///
/// `push` buffers at most [`VOICE_TURN_LIMITS`]`.max_document_bytes` and refuses the byte past
/// them; `finish` decides. Accept or refuse, the code and the offset are the same however the
/// input is split. A refusal is sticky.
#[derive(Debug, Default)]
pub struct VoiceTurnDecoder {
    buf: Vec<u8>,
    refused: Option<VoiceTurnRefusal>,
}

impl VoiceTurnDecoder {
    /// A decoder that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next chunk; `Err` once the input is refused (and for every later call).
    pub fn push(&mut self, chunk: &[u8]) -> core::result::Result<(), VoiceTurnRefusal> {
        if let Some(r) = self.refused {
            return Err(r);
        }
        let max = VOICE_TURN_LIMITS.max_document_bytes;
        if self.buf.len().saturating_add(chunk.len()) > max {
            let room = max - self.buf.len();
            self.buf.extend_from_slice(&chunk[..room]);
            // The streaming machine would have refused any earlier fault at its own byte.
            let r = match decode_canonical_value(&self.buf, VOICE_TURN_LIMITS) {
                Err(r) if r.code != RefusalCode::Truncated => VoiceTurnRefusal {
                    code: r.code.as_str(),
                    offset: r.offset,
                },
                _ => VoiceTurnRefusal {
                    code: RefusalCode::DocumentTooLarge.as_str(),
                    offset: max as u64,
                },
            };
            self.buf = Vec::new();
            self.refused = Some(r);
            return Err(r);
        }
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// Declares the end of input: the turn, or the refusal.
    pub fn finish(self) -> core::result::Result<VoiceTurn, VoiceTurnRefusal> {
        if let Some(r) = self.refused {
            return Err(r);
        }
        let value =
            decode_canonical_value(&self.buf, VOICE_TURN_LIMITS).map_err(|r| VoiceTurnRefusal {
                code: r.code.as_str(),
                offset: r.offset,
            })?;
        schema(&value).map_err(|code| VoiceTurnRefusal {
            code,
            offset: self.buf.len() as u64,
        })
    }
}

/// An integer or `null`.
fn level(v: &Value) -> core::result::Result<Option<i32>, Code> {
    match v {
        Value::Null => Ok(None),
        // Out of i32 is out of range for a level.
        Value::Number(n) => n
            .as_i64()
            .map(|x| i32::try_from(x).unwrap_or(i32::MIN))
            .map(Some)
            .ok_or("wrong_type"),
        _ => Err("wrong_type"),
    }
}

const TOP_FIELDS: &[&str] = &["error", "jc_voice_turn", "measurement", "text"];
const MEASUREMENT_FIELDS: &[&str] = &[
    "duration_ns",
    "peak_dbfs_hundredths",
    "rms_dbfs_hundredths",
    "samples",
];

/// The schema rules, in the order of `spec/VOICE-TURN-V1.md` section 5.
fn schema(v: &Value) -> core::result::Result<VoiceTurn, Code> {
    let root = object(v)?;
    fields_required(root, TOP_FIELDS, &["jc_voice_turn", "measurement"])?;
    if string(&root["jc_voice_turn"])? != VOICE_TURN_SCHEMA {
        return Err("wrong_schema");
    }
    let m = object(&root["measurement"])?;
    fields_required(m, MEASUREMENT_FIELDS, MEASUREMENT_FIELDS)?;
    let duration_ns = unsigned(&m["duration_ns"])?;
    let peak = level(&m["peak_dbfs_hundredths"])?;
    let rms = level(&m["rms_dbfs_hundredths"])?;
    let samples = unsigned(&m["samples"])?;
    let text = root.get("text").map(string).transpose()?;
    let error = root.get("error").map(string).transpose()?;
    let heard = match (text, error) {
        (Some(_), Some(_)) => return Err("text_and_error"),
        (Some(t), None) => Heard::Said(t.to_owned()),
        (None, Some(e)) if is_error_code(e) => Heard::Failed(e.to_owned()),
        (None, Some(_)) => return Err("bad_error_code"),
        (None, None) => Heard::Unasked,
    };
    if u128::from(samples) * u128::from(crate::level::NS_PER_SAMPLE) != u128::from(duration_ns) {
        return Err("duration_mismatch");
    }
    let measurement = Measurement::from_parts(samples, peak, rms)?;
    Ok(VoiceTurn { measurement, heard })
}
