//! The meter: every barge-in of a stream, measured from the ticks as they are pushed.

use jouleclaw_stream::{
    BARGE_IN_DEADLINE_MS, ChannelDirection, NS_PER_MS, Tick, TickKind, TickMarker,
};

use crate::error::{Result, StopLatencyError};

/// The barge-in deadline in nanoseconds: [`BARGE_IN_DEADLINE_MS`] (150 ms).
pub const DEADLINE_NS: u64 = BARGE_IN_DEADLINE_MS * NS_PER_MS;

/// The most barge-ins one stream's meter (and one `stop-latency/1` document) holds: 16,384
/// (one every 200 ms window for 54 minutes). The barge-in past it is refused
/// ([`StopLatencyError::TooManyBargeIns`]).
pub const MAX_BARGE_INS: usize = 16_384;

/// What ended a barge-in's measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndedBy {
    /// Still measuring: neither an outbound `Start` marker nor the stream's end has come.
    Open,
    /// An outbound `Start` marker: the agent's next turn began (the same acknowledgement that
    /// ends the ledger's pending barge-in).
    Start,
    /// The stream ended ([`StopLatencyMeter::finish`]).
    StreamEnd,
}

impl EndedBy {
    /// `"open"`, `"start"` or `"stream_end"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Start => "start",
            Self::StreamEnd => "stream_end",
        }
    }
}

/// One barge-in, measured.
///
/// Its measurement runs over the ticks pushed after the barge-in marker, up to (not including)
/// the first `Start` marker on an outbound channel, or to the end of the stream. "Audio sent" is
/// a non-empty `Audio` payload tick on an outbound channel (the TTS channel of the duplex
/// layout); a tick's time is its `ts_ns`, the moment it was sent (its duration is not added).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BargeIn {
    /// The window of the barge-in marker: the window its early `yield` names (`seen_at`).
    pub window_id: u64,
    /// The barge-in marker's `ts_ns`.
    pub barge_in_ts_ns: u64,
    /// The `ts_ns` of the last outbound audio tick of the measurement, if there was one.
    pub last_audio_ts_ns: Option<u64>,
    /// Outbound audio bytes of the measurement.
    pub audio_bytes: u64,
    /// Of those, the bytes of ticks whose `ts_ns` is later than the deadline
    /// (`barge_in_ts_ns + 150 ms`, strictly later, as the ledger judges).
    pub late_audio_bytes: u64,
    /// What ended the measurement.
    pub ended_by: EndedBy,
    /// The `ts_ns` of the outbound `Start` marker that ended it.
    pub end_ts_ns: Option<u64>,
}

impl BargeIn {
    fn open(window_id: u64, ts_ns: u64) -> Self {
        Self {
            window_id,
            barge_in_ts_ns: ts_ns,
            last_audio_ts_ns: None,
            audio_bytes: 0,
            late_audio_bytes: 0,
            ended_by: EndedBy::Open,
            end_ts_ns: None,
        }
    }

    /// `barge_in_ts_ns + 150 ms` (saturating).
    pub fn deadline_ts_ns(&self) -> u64 {
        self.barge_in_ts_ns.saturating_add(DEADLINE_NS)
    }

    /// The stop latency: from the barge-in to the last outbound audio tick sent after it, `0`
    /// when no audio was sent after it.
    pub fn stop_latency_ns(&self) -> u64 {
        self.last_audio_ts_ns
            .map_or(0, |t| t.saturating_sub(self.barge_in_ts_ns))
    }

    /// `true` when the stop latency is at most the 150 ms deadline.
    pub fn within_deadline(&self) -> bool {
        self.stop_latency_ns() <= DEADLINE_NS
    }
}

/// Measures every barge-in of one stream. Pure: time is each tick's `ts_ns`.
///
/// Feed it exactly the ticks the pipeline accepted, in push order, with their channel's
/// direction (the ticks a stage produced too, after the tick that produced them). A tick the
/// pipeline refused must not be fed. Work per tick is O(open barge-ins); memory is at most
/// [`MAX_BARGE_INS`] records.
#[derive(Debug, Clone, Default)]
pub struct StopLatencyMeter {
    records: Vec<BargeIn>,
    /// Records `first_open..` are still measuring.
    first_open: usize,
    finished: bool,
}

impl StopLatencyMeter {
    /// A meter that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Observes one accepted tick. Refuses a barge-in past [`MAX_BARGE_INS`] and any tick after
    /// [`StopLatencyMeter::finish`]; a refusal changes nothing.
    pub fn observe(&mut self, tick: &Tick, direction: ChannelDirection) -> Result<()> {
        if self.finished {
            return Err(StopLatencyError::Finished);
        }
        match (&tick.kind, direction) {
            (TickKind::Marker(TickMarker::BargeIn), _) => {
                if self.records.len() >= MAX_BARGE_INS {
                    return Err(StopLatencyError::TooManyBargeIns { max: MAX_BARGE_INS });
                }
                self.records.push(BargeIn::open(tick.window_id, tick.ts_ns));
            }
            (TickKind::Marker(TickMarker::Start), ChannelDirection::Outbound) => {
                for r in &mut self.records[self.first_open..] {
                    r.ended_by = EndedBy::Start;
                    r.end_ts_ns = Some(tick.ts_ns);
                }
                self.first_open = self.records.len();
            }
            (TickKind::Audio, ChannelDirection::Outbound) if !tick.bytes.is_empty() => {
                let len = tick.bytes.len() as u64;
                for r in &mut self.records[self.first_open..] {
                    r.audio_bytes = r.audio_bytes.saturating_add(len);
                    r.last_audio_ts_ns = Some(tick.ts_ns);
                    if tick.ts_ns > r.deadline_ts_ns() {
                        r.late_audio_bytes = r.late_audio_bytes.saturating_add(len);
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Ends the stream: every open measurement ends with [`EndedBy::StreamEnd`]. Idempotent.
    pub fn finish(&mut self) {
        for r in &mut self.records[self.first_open..] {
            r.ended_by = EndedBy::StreamEnd;
        }
        self.first_open = self.records.len();
        self.finished = true;
    }

    /// `true` once [`StopLatencyMeter::finish`] was called.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Every barge-in so far, in push order (open ones measured up to the last tick).
    pub fn barge_ins(&self) -> &[BargeIn] {
        &self.records
    }
}

/// Nearest-rank percentile `p` (1..=100) of `values`: the smallest value with at least `p`% of
/// the values at or below it (`sorted[ceil(p * n / 100) - 1]`); `None` for no values.
pub fn percentile(values: &[u64], p: u32) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n = sorted.len() as u64;
    let rank = (u64::from(p.clamp(1, 100)) * n).div_ceil(100).max(1);
    sorted.get((rank - 1) as usize).copied()
}

/// p50, p95 and max of the stop latencies of `barge_ins`.
pub fn summary(barge_ins: &[BargeIn]) -> Option<(u64, u64, u64)> {
    let v: Vec<u64> = barge_ins.iter().map(BargeIn::stop_latency_ns).collect();
    Some((
        percentile(&v, 50)?,
        percentile(&v, 95)?,
        percentile(&v, 100)?,
    ))
}
