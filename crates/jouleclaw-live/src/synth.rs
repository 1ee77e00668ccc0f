//! Synthetic duplex calls in real time (the load generator of `jouleclaw live`) and a bounded
//! latency histogram.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use jouleclaw_stream::{Tick, TickKind, TickMarker, duplex};
use jouleclaw_stream_oracle::WindowVerdict;

use crate::error::Result;
use crate::substrate::StreamHandle;

/// Microsecond buckets of [`Latency`] (values above go to the last bucket; the maximum is
/// kept exactly).
pub const LATENCY_BUCKETS_US: usize = 100_000;

/// A bounded histogram of durations: 1 µs buckets up to 100 ms (800 KB), the exact maximum.
#[derive(Debug)]
pub struct Latency {
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    max_ns: AtomicU64,
}

impl Default for Latency {
    fn default() -> Self {
        Self {
            buckets: (0..LATENCY_BUCKETS_US).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
        }
    }
}

impl Latency {
    /// Records one duration.
    pub fn record(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let us = usize::try_from(ns / 1000).unwrap_or(usize::MAX);
        let i = us.min(LATENCY_BUCKETS_US - 1);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.max_ns.fetch_max(ns, Ordering::Relaxed);
    }

    /// Durations recorded.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The upper edge of the bucket holding quantile `q` (0..=1), in µs; 0 when empty.
    pub fn quantile_us(&self, q: f64) -> u64 {
        let n = self.count();
        if n == 0 {
            return 0;
        }
        let rank = ((n as f64) * q.clamp(0.0, 1.0)).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (i, b) in self.buckets.iter().enumerate() {
            seen += b.load(Ordering::Relaxed);
            if seen >= rank {
                return i as u64 + 1;
            }
        }
        LATENCY_BUCKETS_US as u64
    }

    /// The largest duration, in µs.
    pub fn max_us(&self) -> u64 {
        self.max_ns.load(Ordering::Relaxed) / 1000
    }
}

static MIC_FRAME: [u8; duplex::MIC_BYTES_PER_WINDOW] = [0; duplex::MIC_BYTES_PER_WINDOW];
static TTS_FRAME: [u8; duplex::TTS_BYTES_PER_WINDOW] = [0; duplex::TTS_BYTES_PER_WINDOW];

/// One scripted event: offset in the window (ms), channel, what.
#[derive(Debug, Clone)]
enum What {
    Mic,
    Tts,
    Text(&'static str),
    Marker(TickMarker),
}

/// The script of window `k` of a call (a cycle of 10 windows): the user speaks (mic, ASR
/// text, end of turn), the agent answers (TTS start, LLM text, TTS audio), the user barges in
/// at window 5; a call that ignores barge-ins keeps speaking 155 ms later, the others stop.
fn script(k: u64, ignores: bool) -> Vec<(u64, u32, What)> {
    let mut e = vec![(5, duplex::MIC, What::Mic)];
    match k % 10 {
        0 => {
            e.push((100, duplex::ASR, What::Text("what's the weather")));
            e.push((150, duplex::CONTROL, What::Marker(TickMarker::EndOfTurn)));
        }
        1 => {
            e.push((8, duplex::TTS, What::Marker(TickMarker::Start)));
            e.push((10, duplex::LLM, What::Text("It is clear and 24 degrees.")));
            e.push((30, duplex::TTS, What::Tts));
        }
        2..=4 => e.push((30, duplex::TTS, What::Tts)),
        5 => {
            e.push((10, duplex::TTS, What::Tts));
            e.push((40, duplex::CONTROL, What::Marker(TickMarker::BargeIn)));
            if ignores {
                e.push((195, duplex::TTS, What::Tts));
            } else {
                e.push((60, duplex::TTS, What::Marker(TickMarker::End)));
            }
        }
        _ => {}
    }
    e
}

/// What one call did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallReport {
    /// Ticks pushed and accepted.
    pub accepted: u64,
    /// Ticks refused (any reason).
    pub refused: u64,
    /// Yields returned on the push path.
    pub yields: u64,
}

/// Runs one synthetic call for `windows` windows in real time on `h`'s clock: each tick is
/// stamped with the stream clock when it is pushed. Records every push's latency in `push`
/// and the latency of pushes that returned a `Yield` in `yields`. Refusals are counted, not
/// fatal; the call does not close the stream.
pub async fn synthetic_call(
    h: &StreamHandle,
    windows: u64,
    ignores_barge_in: bool,
    push: &Latency,
    yields: &Latency,
) -> Result<CallReport> {
    let w_ns = h.window_ns();
    let mut report = CallReport::default();
    for k in 0..windows {
        for (ms, channel, what) in script(k, ignores_barge_in) {
            let target = k * w_ns + ms * 1_000_000;
            if target >= (k + 1) * w_ns {
                continue;
            }
            let now = h.now_ns();
            if target > now {
                tokio::time::sleep(Duration::from_nanos(target - now)).await;
            }
            let ts = h.now_ns();
            let w = ts / w_ns;
            let tick = match what {
                What::Mic => Tick::new(
                    w,
                    channel,
                    TickKind::Audio,
                    Bytes::from_static(&MIC_FRAME),
                    ts,
                ),
                What::Tts => Tick::new(
                    w,
                    channel,
                    TickKind::Audio,
                    Bytes::from_static(&TTS_FRAME),
                    ts,
                ),
                What::Text(s) => Tick::new(
                    w,
                    channel,
                    TickKind::Text,
                    Bytes::from_static(s.as_bytes()),
                    ts,
                ),
                What::Marker(m) => Tick::marker(w, channel, m, ts),
            };
            let started = std::time::Instant::now();
            let r = h.push(tick);
            let took = started.elapsed();
            push.record(took);
            match r {
                Ok(v) => {
                    report.accepted += 1;
                    if matches!(v, Some(WindowVerdict::Yield { .. })) {
                        report.yields += 1;
                        yields.record(took);
                    }
                }
                Err(e) if matches!(e.code(), "stream_failed" | "stream_closed") => return Err(e),
                Err(_) => report.refused += 1,
            }
        }
    }
    Ok(report)
}
