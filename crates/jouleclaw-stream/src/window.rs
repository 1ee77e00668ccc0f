//! One window of ticks.

use std::sync::Arc;

use crate::canon;
use crate::error::{Result, StreamError};
use crate::spec::{ChannelDirection, StreamSpec, ValidatedSpec};
use crate::tick::{Tick, TickKind, TickKindTag};

/// Schema tag inside a window's canonical JSON.
pub const WINDOW_SCHEMA: &str = "jouleclaw-window/1";

/// A tick accepted by [`StreamWindow::push`], with its channel's direction.
#[derive(Debug, Clone, Copy)]
pub struct Pushed<'a> {
    /// The stored tick.
    pub tick: &'a Tick,
    /// Its channel's direction (the side of a marker).
    pub direction: ChannelDirection,
}

/// The ticks of one window, validated as they arrive.
///
/// A window spans `[window_id * len, (window_id + 1) * len)` nanoseconds of stream time, where
/// `len` is the spec's window length. Its whole span must lie below `2^53` ns (about 104 days)
/// so that every timestamp has a canonical JSON encoding.
#[derive(Debug, Clone)]
pub struct StreamWindow {
    spec: ValidatedSpec,
    window_id: u64,
    start_ns: u64,
    end_ns: u64,
    ticks: Vec<Tick>,
    inbound_bytes: u64,
    outbound_bytes: u64,
    substrate_bytes: u64,
}

impl StreamWindow {
    /// Opens window `window_id` of a stream with `spec`, after validating the spec (linear in
    /// its channels). A caller that opens many windows validates once with
    /// [`ValidatedSpec::new`] and calls [`StreamWindow::open_validated`].
    pub fn open(spec: Arc<StreamSpec>, window_id: u64) -> Result<Self> {
        Self::open_validated(&ValidatedSpec::new(spec)?, window_id)
    }

    /// Opens window `window_id` of a stream with an already validated spec, in constant time.
    pub fn open_validated(spec: &ValidatedSpec, window_id: u64) -> Result<Self> {
        let (start_ns, end_ns) = spec.window_span(window_id)?;
        if end_ns - 1 > canon::MAX_SAFE_INTEGER {
            return Err(StreamError::WindowSpanOverflow { window_id });
        }
        Ok(Self {
            spec: spec.clone(),
            window_id,
            start_ns,
            end_ns,
            ticks: Vec::new(),
            inbound_bytes: 0,
            outbound_bytes: 0,
            substrate_bytes: 0,
        })
    }

    /// Validates `tick` and appends it. The rules, checked in this order:
    ///
    /// 1. `tick.window_id` is this window's id ([`StreamError::WindowMismatch`]);
    /// 2. `ts_ns` lies in `[start_ns, end_ns)` ([`StreamError::TimestampOutsideWindow`]);
    /// 3. `ts_ns` is not earlier than the previous tick's ([`StreamError::TimestampDecreasing`]);
    /// 4. the channel exists ([`StreamError::UnknownChannel`]);
    /// 5. a payload tick's kind equals the channel's `kind_tag`, and a `Marker` channel carries
    ///    markers only ([`StreamError::KindMismatch`]);
    /// 6. the payload is at most `max_chunk_bytes` ([`StreamError::ChunkTooLarge`]);
    /// 7. the window holds fewer than `max_ticks_per_window` ticks
    ///    ([`StreamError::TooManyTicks`]).
    ///
    /// A refused tick leaves the window unchanged.
    pub fn push(&mut self, tick: Tick) -> Result<Pushed<'_>> {
        if tick.window_id != self.window_id {
            return Err(StreamError::WindowMismatch {
                expected: self.window_id,
                got: tick.window_id,
            });
        }
        if tick.ts_ns < self.start_ns || tick.ts_ns >= self.end_ns {
            return Err(StreamError::TimestampOutsideWindow {
                ts_ns: tick.ts_ns,
                start_ns: self.start_ns,
                end_ns: self.end_ns,
            });
        }
        if let Some(prev) = self.ticks.last()
            && tick.ts_ns < prev.ts_ns
        {
            return Err(StreamError::TimestampDecreasing {
                ts_ns: tick.ts_ns,
                previous_ns: prev.ts_ns,
            });
        }
        let channel = self
            .spec
            .channel(tick.channel_id)
            .ok_or(StreamError::UnknownChannel {
                channel_id: tick.channel_id,
            })?;
        let got = tick.kind.tag();
        if got != TickKindTag::Marker && got != channel.kind_tag {
            return Err(StreamError::KindMismatch {
                channel_id: channel.id,
                expected: channel.kind_tag,
                got,
            });
        }
        let max = self.spec.max_chunk_bytes;
        if u32::try_from(tick.bytes.len()).map_or(true, |len| len > max) {
            return Err(StreamError::ChunkTooLarge {
                len: tick.bytes.len(),
                max,
            });
        }
        let max = self.spec.max_ticks_per_window;
        if u32::try_from(self.ticks.len()).map_or(true, |n| n >= max) {
            return Err(StreamError::TooManyTicks { max });
        }
        let direction = channel.direction;
        // Cannot saturate: at most max_ticks (u32) payloads of at most max_chunk (u32) bytes.
        let len = tick.bytes.len() as u64;
        let total = match direction {
            ChannelDirection::Inbound => &mut self.inbound_bytes,
            ChannelDirection::Outbound => &mut self.outbound_bytes,
            ChannelDirection::Substrate => &mut self.substrate_bytes,
        };
        *total = total.saturating_add(len);
        self.ticks.push(tick);
        let tick = &self.ticks[self.ticks.len() - 1];
        Ok(Pushed { tick, direction })
    }

    /// The window id.
    pub fn window_id(&self) -> u64 {
        self.window_id
    }

    /// The validated spec the window was opened with.
    pub fn validated_spec(&self) -> &ValidatedSpec {
        &self.spec
    }

    /// The spec the window was opened with.
    pub fn spec(&self) -> &Arc<StreamSpec> {
        self.spec.spec()
    }

    /// First nanosecond of the window.
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }

    /// First nanosecond after the window.
    pub fn end_ns(&self) -> u64 {
        self.end_ns
    }

    /// The accepted ticks, in push order.
    pub fn ticks(&self) -> &[Tick] {
        &self.ticks
    }

    /// Number of accepted ticks.
    pub fn tick_count(&self) -> usize {
        self.ticks.len()
    }

    /// Payload bytes on inbound channels.
    pub fn inbound_bytes(&self) -> u64 {
        self.inbound_bytes
    }

    /// Payload bytes on outbound channels.
    pub fn outbound_bytes(&self) -> u64 {
        self.outbound_bytes
    }

    /// Payload bytes on substrate channels.
    pub fn substrate_bytes(&self) -> u64 {
        self.substrate_bytes
    }

    /// `true` when the window holds a `BargeIn` marker.
    pub fn has_barge_in(&self) -> bool {
        self.ticks.iter().any(Tick::is_barge_in)
    }

    /// The timestamp of the first `BargeIn` marker.
    pub fn first_barge_in_ns(&self) -> Option<u64> {
        self.ticks.iter().find(|t| t.is_barge_in()).map(|t| t.ts_ns)
    }

    /// Appends the window's canonical JSON (`spec/STREAM-SUBSTRATE.md`):
    ///
    /// ```text
    /// {"schema":"jouleclaw-window/1","tick_window_ms":200,"ticks":[T...],"window_id":7}
    /// T = {"blake3":"<hex>","channel_id":1,"kind":"audio","len":6400,"ts_ns":1400000000}
    ///   | {"blake3":"<hex>","channel_id":0,"kind":"marker","len":0,"marker":"barge_in","ts_ns":..}
    ///   | ... "marker":{"custom":"<text>"} ...
    /// ```
    ///
    /// Payloads are bound by their BLAKE3 digest and length rather than inlined.
    pub fn write_canonical_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"schema\":");
        canon::write_str(out, WINDOW_SCHEMA);
        out.extend_from_slice(b",\"tick_window_ms\":");
        write_safe(out, u64::from(self.spec.tick_window_ms));
        out.extend_from_slice(b",\"ticks\":[");
        for (i, t) in self.ticks.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"blake3\":");
            canon::write_hex_str(out, blake3::hash(&t.bytes).as_bytes());
            out.extend_from_slice(b",\"channel_id\":");
            write_safe(out, u64::from(t.channel_id));
            out.extend_from_slice(b",\"kind\":");
            canon::write_str(out, t.kind.tag().as_str());
            out.extend_from_slice(b",\"len\":");
            write_safe(out, t.bytes.len() as u64);
            if let TickKind::Marker(m) = &t.kind {
                out.extend_from_slice(b",\"marker\":");
                match m.wire_name() {
                    Some(name) => canon::write_str(out, name),
                    None => {
                        out.extend_from_slice(b"{\"custom\":");
                        if let crate::TickMarker::Custom(text) = m {
                            canon::write_str(out, text);
                        }
                        out.push(b'}');
                    }
                }
            }
            out.extend_from_slice(b",\"ts_ns\":");
            write_safe(out, t.ts_ns);
            out.push(b'}');
        }
        out.extend_from_slice(b"],\"window_id\":");
        write_safe(out, self.window_id);
        out.push(b'}');
    }

    /// The window's canonical JSON.
    pub fn canonical_json(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.ticks.len() * 140);
        self.write_canonical_json(&mut out);
        out
    }

    /// BLAKE3 of [`StreamWindow::canonical_json`]. The returned [`blake3::Hash`] compares in
    /// constant time.
    pub fn content_hash(&self) -> blake3::Hash {
        blake3::hash(&self.canonical_json())
    }
}

/// Writes an integer that the window's invariants keep below `2^53`: ids and lengths are `u32`,
/// timestamps and the window id lie inside a span that `open` checked.
fn write_safe(out: &mut Vec<u8>, n: u64) {
    // safe: every caller passes a value bounded by the invariants above; a violation would
    // surface as a missing digit string in tests, never as a panic.
    let _ = canon::write_u64(out, n);
}
