//! The Wyoming event framing: a JSON header line, an optional JSON data segment, an optional
//! binary payload (`spec/TRANSCRIBER.md` section 10). Pure: bytes in, events or a refusal out.

use serde_json::{Map, Value};

use crate::error::{Result, VoiceError};

/// The protocol version the client writes in every header: the framing is that of the
/// reference implementation at this version.
pub const WYOMING_VERSION: &str = "1.10.2";

/// Limits on what the client reads from a Wyoming server in one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WyomingLimits {
    /// Longest header line, newline excluded.
    pub max_header_bytes: usize,
    /// Longest data segment (`data_length`).
    pub max_data_bytes: usize,
    /// Longest binary payload (`payload_length`) of an event the server sends.
    pub max_payload_bytes: usize,
    /// Most bytes the server may send in one turn, all events together.
    pub max_reply_bytes: usize,
    /// Most events the server may send in one turn, the transcript included.
    pub max_events: usize,
}

/// The limits the client reads under (`spec/TRANSCRIBER.md` section 10.3).
pub const WYOMING_LIMITS: WyomingLimits = WyomingLimits {
    max_header_bytes: 256 * 1024,
    max_data_bytes: 256 * 1024,
    max_payload_bytes: 64 * 1024,
    max_reply_bytes: 1 << 20,
    max_events: 256,
};

/// One Wyoming event: its type, its data (the header's `data` with the data segment merged on
/// top), and its binary payload (empty when there is none).
#[derive(Debug, Clone, PartialEq)]
pub struct WyomingEvent {
    /// The event type, such as `"transcript"`.
    pub kind: String,
    /// The event's data.
    pub data: Map<String, Value>,
    /// The binary payload.
    pub payload: Vec<u8>,
}

impl WyomingEvent {
    /// An event of `kind` with `data` and no payload.
    pub fn new(kind: &str, data: Map<String, Value>) -> Self {
        Self {
            kind: kind.to_owned(),
            data,
            payload: Vec::new(),
        }
    }

    /// The event's bytes on the wire, as the reference writer frames them: the header line
    /// `{"type":..,"version":..[,"data_length":n][,"payload_length":m]}\n`, then the data as
    /// compact JSON when there is any, then the payload when there is one.
    pub fn encode(&self) -> Vec<u8> {
        let data = if self.data.is_empty() {
            Vec::new()
        } else {
            Value::Object(self.data.clone()).to_string().into_bytes()
        };
        // Written by hand so the key order is fixed whatever serde_json's features are.
        let mut header = format!(
            "{{\"type\":{},\"version\":\"{WYOMING_VERSION}\"",
            Value::from(self.kind.as_str())
        );
        if !data.is_empty() {
            header.push_str(&format!(",\"data_length\":{}", data.len()));
        }
        if !self.payload.is_empty() {
            header.push_str(&format!(",\"payload_length\":{}", self.payload.len()));
        }
        header.push('}');
        let mut out = Vec::with_capacity(header.len() + 1 + data.len() + self.payload.len());
        out.extend_from_slice(header.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&data);
        out.extend_from_slice(&self.payload);
        out
    }
}

/// A header read, waiting for its data segment and payload.
#[derive(Debug)]
struct Pending {
    kind: String,
    data: Map<String, Value>,
    data_len: usize,
    payload_len: usize,
}

/// An incremental decoder of the events a server sends, within [`WyomingLimits`].
///
/// [`EventDecoder::push`] takes bytes as they arrive (refusing, without keeping them, bytes
/// that take the turn past `max_reply_bytes`); [`EventDecoder::next_event`] returns the next
/// complete event, `Ok(None)` while one is incomplete. Every limit is checked as soon as the
/// header declares a length, before any of it is read. The same bytes give the same events and
/// the same refusal however they are split. A refusal is sticky.
#[derive(Debug)]
pub struct EventDecoder {
    limits: WyomingLimits,
    buf: Vec<u8>,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
    pending: Option<Pending>,
    received: usize,
    events: usize,
    failed: Option<VoiceError>,
}

impl EventDecoder {
    /// A decoder under `limits`.
    pub fn new(limits: WyomingLimits) -> Self {
        Self {
            limits,
            buf: Vec::new(),
            scanned: 0,
            pending: None,
            received: 0,
            events: 0,
            failed: None,
        }
    }

    /// Appends `chunk`. Refuses ([`VoiceError::WyomingReplyTooLarge`]) a chunk that takes the
    /// bytes received past `max_reply_bytes`; a refused chunk is not kept.
    pub fn push(&mut self, chunk: &[u8]) -> Result<()> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        if chunk.len() > self.limits.max_reply_bytes - self.received {
            return Err(self.fail(VoiceError::WyomingReplyTooLarge {
                max: self.limits.max_reply_bytes,
            }));
        }
        self.received += chunk.len();
        self.buf.extend_from_slice(chunk);
        Ok(())
    }

    /// The next complete event, or `Ok(None)` until more bytes arrive.
    pub fn next_event(&mut self) -> Result<Option<WyomingEvent>> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        match self.step() {
            Ok(event) => Ok(event),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// What the end of the stream means here: [`VoiceError::WyomingTruncated`] inside an
    /// event (naming the part cut off), [`VoiceError::WyomingClosed`] between events.
    pub fn end_of_stream(&self) -> VoiceError {
        if let Some(e) = &self.failed {
            return e.clone();
        }
        match &self.pending {
            Some(p) if self.buf.len() < p.data_len => VoiceError::WyomingTruncated { part: "data" },
            Some(_) => VoiceError::WyomingTruncated { part: "payload" },
            None if self.buf.is_empty() => VoiceError::WyomingClosed,
            None => VoiceError::WyomingTruncated { part: "header" },
        }
    }

    fn fail(&mut self, e: VoiceError) -> VoiceError {
        self.failed = Some(e.clone());
        e
    }

    fn step(&mut self) -> Result<Option<WyomingEvent>> {
        if self.pending.is_none() {
            let Some(nl) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') else {
                self.scanned = self.buf.len();
                if self.buf.len() > self.limits.max_header_bytes {
                    return Err(VoiceError::WyomingHeaderTooLong {
                        max: self.limits.max_header_bytes,
                    });
                }
                return Ok(None);
            };
            let end = self.scanned + nl;
            if end > self.limits.max_header_bytes {
                return Err(VoiceError::WyomingHeaderTooLong {
                    max: self.limits.max_header_bytes,
                });
            }
            let pending = parse_header(&self.buf[..end], &self.limits)?;
            self.buf.drain(..=end);
            self.scanned = 0;
            self.pending = Some(pending);
        }
        let Some(p) = &self.pending else {
            return Ok(None);
        };
        if self.buf.len() < p.data_len + p.payload_len {
            return Ok(None);
        }
        let Some(mut p) = self.pending.take() else {
            return Ok(None);
        };
        if p.data_len > 0 {
            match serde_json::from_slice::<Value>(&self.buf[..p.data_len]) {
                Ok(Value::Object(segment)) => p.data.extend(segment),
                Ok(_) => {
                    return Err(VoiceError::WyomingDataInvalid {
                        reason: "the data segment is not a JSON object".to_owned(),
                    });
                }
                Err(e) => {
                    return Err(VoiceError::WyomingDataInvalid {
                        reason: format!("the data segment is not JSON: {e}"),
                    });
                }
            }
        }
        let payload = self.buf[p.data_len..p.data_len + p.payload_len].to_vec();
        self.buf.drain(..p.data_len + p.payload_len);
        self.events += 1;
        if self.events > self.limits.max_events {
            return Err(VoiceError::WyomingTooManyEvents {
                max: self.limits.max_events,
            });
        }
        Ok(Some(WyomingEvent {
            kind: p.kind,
            data: p.data,
            payload,
        }))
    }
}

fn invalid_header(reason: &str) -> VoiceError {
    VoiceError::WyomingHeaderInvalid {
        reason: reason.to_owned(),
    }
}

/// `data_length` / `payload_length`: absent or `null` is 0, else a non-negative integer.
fn declared_length(header: &Map<String, Value>, key: &str) -> Result<u64> {
    match header.get(key) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| invalid_header(&format!("\"{key}\" is not a non-negative integer"))),
    }
}

fn parse_header(line: &[u8], limits: &WyomingLimits) -> Result<Pending> {
    let value: Value =
        serde_json::from_slice(line).map_err(|e| invalid_header(&format!("not JSON: {e}")))?;
    let Value::Object(mut header) = value else {
        return Err(invalid_header("not a JSON object"));
    };
    let kind = match header.get("type") {
        Some(Value::String(t)) if !t.is_empty() => t.clone(),
        _ => {
            return Err(invalid_header(
                "\"type\" is missing or not a non-empty string",
            ));
        }
    };
    let data_len = declared_length(&header, "data_length")?;
    let payload_len = declared_length(&header, "payload_length")?;
    if data_len > limits.max_data_bytes as u64 {
        return Err(VoiceError::WyomingDataTooLong {
            declared: data_len,
            max: limits.max_data_bytes,
        });
    }
    if payload_len > limits.max_payload_bytes as u64 {
        return Err(VoiceError::WyomingPayloadTooLong {
            declared: payload_len,
            max: limits.max_payload_bytes,
        });
    }
    let data = match header.remove("data") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(VoiceError::WyomingDataInvalid {
                reason: "the header's \"data\" is not a JSON object".to_owned(),
            });
        }
    };
    // Both lengths are at most the limits checked above, which are `usize`.
    Ok(Pending {
        kind,
        data,
        data_len: data_len as usize,
        payload_len: payload_len as usize,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    fn decode_all(bytes: &[u8], split: usize) -> (Vec<WyomingEvent>, Option<VoiceError>) {
        let mut d = EventDecoder::new(WYOMING_LIMITS);
        let mut out = Vec::new();
        for chunk in bytes.chunks(split.max(1)) {
            if let Err(e) = d.push(chunk) {
                return (out, Some(e));
            }
            loop {
                match d.next_event() {
                    Ok(Some(e)) => out.push(e),
                    Ok(None) => break,
                    Err(e) => return (out, Some(e)),
                }
            }
        }
        (out, Some(d.end_of_stream()))
    }

    #[test]
    fn encodes_as_the_reference_writer_frames() {
        let mut e = WyomingEvent::new("audio-chunk", obj(json!({"rate": 16000})));
        e.payload = vec![1, 2, 3];
        assert_eq!(
            e.encode(),
            b"{\"type\":\"audio-chunk\",\"version\":\"1.10.2\",\"data_length\":14,\"payload_length\":3}\n{\"rate\":16000}\x01\x02\x03"
        );
        // No data and no payload: the header line alone.
        assert_eq!(
            WyomingEvent::new("audio-stop", Map::new()).encode(),
            b"{\"type\":\"audio-stop\",\"version\":\"1.10.2\"}\n"
        );
    }

    #[test]
    fn decodes_what_it_encodes_however_the_bytes_are_split() {
        let mut chunk = WyomingEvent::new("audio-chunk", obj(json!({"rate": 16000, "width": 2})));
        chunk.payload = vec![7; 100];
        let t = WyomingEvent::new("transcript", obj(json!({"text": " Hello.\n"})));
        let mut bytes = chunk.encode();
        bytes.extend(t.encode());
        for split in [1, 2, 3, 7, 64, bytes.len()] {
            let (events, end) = decode_all(&bytes, split);
            assert_eq!(events, vec![chunk.clone(), t.clone()], "split {split}");
            assert_eq!(end, Some(VoiceError::WyomingClosed));
        }
    }

    #[test]
    fn inline_data_is_merged_under_the_data_segment() {
        let bytes = b"{\"type\":\"transcript\",\"data\":{\"text\":\"a\",\"language\":\"en\"},\"data_length\":12}\n{\"text\":\"b\"}";
        let (events, _) = decode_all(bytes, 5);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, obj(json!({"text": "b", "language": "en"})));
        // Null lengths and null data are absent.
        let bytes = b"{\"type\":\"x\",\"data\":null,\"data_length\":null,\"payload_length\":0}\n";
        assert_eq!(
            decode_all(bytes, 1).0,
            vec![WyomingEvent::new("x", Map::new())]
        );
    }

    #[test]
    fn every_malformed_frame_has_its_code() {
        let cases: Vec<(&[u8], &str)> = vec![
            (b"not json\n", "wyoming_header_invalid"),
            (b"[1]\n", "wyoming_header_invalid"),
            (b"{\"data\":{}}\n", "wyoming_header_invalid"),
            (b"{\"type\":\"\"}\n", "wyoming_header_invalid"),
            (b"{\"type\":3}\n", "wyoming_header_invalid"),
            (
                b"{\"type\":\"x\",\"data_length\":-1}\n",
                "wyoming_header_invalid",
            ),
            (
                b"{\"type\":\"x\",\"data_length\":1.5}\n",
                "wyoming_header_invalid",
            ),
            (
                b"{\"type\":\"x\",\"payload_length\":\"3\"}\n",
                "wyoming_header_invalid",
            ),
            (b"\xff\xfe\n", "wyoming_header_invalid"),
            (b"{\"type\":\"x\",\"data\":[1]}\n", "wyoming_data_invalid"),
            (
                b"{\"type\":\"x\",\"data_length\":3}\n[1]",
                "wyoming_data_invalid",
            ),
            (
                b"{\"type\":\"x\",\"data_length\":3}\nabc",
                "wyoming_data_invalid",
            ),
            (
                b"{\"type\":\"x\",\"data_length\":262145}\n",
                "wyoming_data_too_long",
            ),
            (
                b"{\"type\":\"x\",\"payload_length\":65537}\n",
                "wyoming_payload_too_long",
            ),
            (
                b"{\"type\":\"x\",\"payload_length\":18446744073709551615}\n",
                "wyoming_payload_too_long",
            ),
            (b"{\"type\":\"x\"", "wyoming_truncated"),
            (
                b"{\"type\":\"x\",\"data_length\":5}\n{}",
                "wyoming_truncated",
            ),
            (
                b"{\"type\":\"x\",\"payload_length\":5}\nab",
                "wyoming_truncated",
            ),
            (b"", "wyoming_closed"),
        ];
        for (bytes, code) in cases {
            for split in [1, bytes.len().max(1)] {
                let (_, e) = decode_all(bytes, split);
                assert_eq!(
                    e.map(|e| e.code()),
                    Some(code),
                    "{:?} split {split}",
                    String::from_utf8_lossy(bytes)
                );
            }
        }
        // The accepted neighbours of the length bounds.
        let at_bound = format!(
            "{{\"type\":\"x\",\"payload_length\":{}}}\n",
            WYOMING_LIMITS.max_payload_bytes
        );
        let mut bytes = at_bound.into_bytes();
        bytes.extend(vec![0; WYOMING_LIMITS.max_payload_bytes]);
        let (events, end) = decode_all(&bytes, 4096);
        assert_eq!(events[0].payload.len(), WYOMING_LIMITS.max_payload_bytes);
        assert_eq!(end, Some(VoiceError::WyomingClosed));
    }

    #[test]
    fn a_header_is_bounded_before_its_newline_arrives() {
        let max = WYOMING_LIMITS.max_header_bytes;
        let mut d = EventDecoder::new(WYOMING_LIMITS);
        d.push(&vec![b' '; max]).unwrap();
        assert_eq!(d.next_event().unwrap(), None);
        d.push(b" ").unwrap();
        assert_eq!(
            d.next_event().unwrap_err().code(),
            "wyoming_header_too_long"
        );
        // Sticky.
        assert_eq!(d.push(b"\n").unwrap_err().code(), "wyoming_header_too_long");
        // A header of exactly the bound is read.
        let head = b"{\"type\":\"x\"}";
        let mut line = head.to_vec();
        line.resize(max, b' ');
        line.push(b'\n');
        let (events, end) = decode_all(&line, 1000);
        assert_eq!(events.len(), 1);
        assert_eq!(end, Some(VoiceError::WyomingClosed));
        line.insert(0, b' ');
        assert_eq!(
            decode_all(&line, 1000).1.map(|e| e.code()),
            Some("wyoming_header_too_long")
        );
    }

    fn outcome(bytes: &[u8], cuts: &[usize]) -> (Vec<WyomingEvent>, Option<&'static str>) {
        let mut d = EventDecoder::new(WYOMING_LIMITS);
        let mut out = Vec::new();
        let mut at = 0;
        let mut bounds: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        bounds.sort_unstable();
        bounds.push(bytes.len());
        for end in bounds {
            if let Err(e) = d.push(&bytes[at..end]) {
                return (out, Some(e.code()));
            }
            at = end;
            loop {
                match d.next_event() {
                    Ok(Some(e)) => out.push(e),
                    Ok(None) => break,
                    Err(e) => return (out, Some(e.code())),
                }
            }
        }
        (out, Some(d.end_of_stream().code()))
    }

    proptest::proptest! {
        #[test]
        fn the_outcome_does_not_depend_on_how_the_bytes_are_split(
            events in proptest::collection::vec(
                (
                    proptest::sample::select(vec!["transcript", "audio-chunk", "x"]),
                    proptest::collection::vec(proptest::num::u8::ANY, 0..40),
                    proptest::bool::ANY,
                ),
                0..5,
            ),
            noise in proptest::collection::vec(proptest::num::u8::ANY, 0..30),
            cuts in proptest::collection::vec(proptest::num::usize::ANY, 0..8),
        ) {
            let mut bytes = Vec::new();
            for (kind, payload, with_data) in &events {
                let data = if *with_data { obj(json!({"text": "hi"})) } else { Map::new() };
                let mut e = WyomingEvent::new(kind, data);
                e.payload = payload.clone();
                bytes.extend(e.encode());
            }
            // Arbitrary trailing bytes: a malformed or cut-off event after the good ones.
            bytes.extend(&noise);
            let whole = outcome(&bytes, &[]);
            proptest::prop_assert_eq!(outcome(&bytes, &cuts), whole.clone());
            if noise.is_empty() {
                // Good events only: each read back as written, then a clean end.
                let kinds: Vec<&str> = whole.0.iter().map(|e| e.kind.as_str()).collect();
                let sent: Vec<&str> = events.iter().map(|e| e.0).collect();
                proptest::prop_assert_eq!(kinds, sent);
                proptest::prop_assert_eq!(whole.1, Some("wyoming_closed"));
            }
        }
    }

    #[test]
    fn the_reply_and_the_event_count_are_bounded() {
        let limits = WyomingLimits {
            max_reply_bytes: 10,
            ..WYOMING_LIMITS
        };
        let mut d = EventDecoder::new(limits);
        d.push(&[b' '; 10]).unwrap();
        assert_eq!(d.push(b" ").unwrap_err().code(), "wyoming_reply_too_large");
        let limits = WyomingLimits {
            max_events: 2,
            ..WYOMING_LIMITS
        };
        let mut d = EventDecoder::new(limits);
        d.push(b"{\"type\":\"a\"}\n{\"type\":\"a\"}\n{\"type\":\"a\"}\n")
            .unwrap();
        assert!(d.next_event().unwrap().is_some());
        assert!(d.next_event().unwrap().is_some());
        assert_eq!(
            d.next_event().unwrap_err().code(),
            "wyoming_too_many_events"
        );
    }
}
