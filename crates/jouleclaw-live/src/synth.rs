//! Synthetic duplex calls in real time (the load generator of `jouleclaw live`), a bounded
//! latency histogram, the generator's schedule and the verdict on whether a run kept up with it.

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

/// Millisecond buckets of [`Latency::lag`]: the generator's lag behind its schedule up to 60 s.
pub const LAG_BUCKETS_MS: usize = 60_000;

/// A bounded histogram of durations: by default 1 µs buckets up to 100 ms (800 KB); the exact
/// maximum.
#[derive(Debug)]
pub struct Latency {
    buckets: Vec<AtomicU64>,
    bucket_ns: u64,
    count: AtomicU64,
    max_ns: AtomicU64,
}

impl Default for Latency {
    fn default() -> Self {
        Self::with_buckets(1_000, LATENCY_BUCKETS_US)
    }
}

impl Latency {
    /// `buckets` buckets of `bucket_ns` each (at least 1 of at least 1 ns); values above go to
    /// the last one.
    pub fn with_buckets(bucket_ns: u64, buckets: usize) -> Self {
        Self {
            buckets: (0..buckets.max(1)).map(|_| AtomicU64::new(0)).collect(),
            bucket_ns: bucket_ns.max(1),
            count: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
        }
    }

    /// The generator's lag histogram: [`LAG_BUCKETS_MS`] 1 ms buckets (60 s, 480 KB).
    pub fn lag() -> Self {
        Self::with_buckets(1_000_000, LAG_BUCKETS_MS)
    }

    /// The upper edge of the last bucket, in µs: a quantile equal to it means "at least".
    pub fn ceiling_us(&self) -> u64 {
        (self.buckets.len() as u64).saturating_mul(self.bucket_ns) / 1000
    }

    /// Records one duration.
    pub fn record(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let i = usize::try_from(ns / self.bucket_ns)
            .unwrap_or(usize::MAX)
            .min(self.buckets.len() - 1);
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
                return (i as u64 + 1).saturating_mul(self.bucket_ns) / 1000;
            }
        }
        self.ceiling_us()
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
    /// `{"custom":"user_speech"}` (`jouleclaw_stream::interaction::USER_SPEECH`): the user
    /// speaks in this frame.
    UserSpeech,
}

/// The script of window `k` of a call (a cycle of 10 windows): the user speaks (mic, a
/// `{"custom":"user_speech"}` marker, ASR text, end of turn), the agent answers (TTS start, LLM
/// text, TTS audio), the user barges in at window 5 (speech and the barge-in); a call that
/// ignores barge-ins keeps speaking 155 ms later, the others stop.
fn script(k: u64, ignores: bool) -> Vec<(u64, u32, What)> {
    let mut e = vec![(5, duplex::MIC, What::Mic)];
    match k % 10 {
        0 => {
            e.push((6, duplex::CONTROL, What::UserSpeech));
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
            e.push((39, duplex::CONTROL, What::UserSpeech));
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

/// Whether the script's event at `ms` into window `k` lies inside the window (`window_ns`).
fn in_window(k: u64, ms: u64, window_ns: u64) -> bool {
    k * window_ns + ms * 1_000_000 < (k + 1) * window_ns
}

/// The ticks a synthetic call of `windows` windows of `window_ns` schedules (what
/// [`synthetic_call`] pushes when it keeps up).
pub fn scheduled_ticks(windows: u64, ignores_barge_in: bool, window_ns: u64) -> u64 {
    // The script is a cycle of 10 windows.
    let count = |k: u64| {
        script(k, ignores_barge_in)
            .iter()
            .filter(|(ms, ..)| in_window(k, *ms, window_ns))
            .count() as u64
    };
    let cycle: u64 = (0..10).map(count).sum();
    (windows / 10) * cycle + (0..windows % 10).map(count).sum::<u64>()
}

/// A run's load against its schedule: what `jouleclaw live` prints and exports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capacity {
    /// Windows the calls scheduled (calls x windows each).
    pub scheduled_windows: u64,
    /// Ticks the calls scheduled ([`scheduled_ticks`] summed).
    pub scheduled_ticks: u64,
    /// Windows minted (receipts).
    pub minted_windows: u64,
    /// Ticks accepted.
    pub accepted_ticks: u64,
    /// The generator's lag behind its schedule (a tick's push time minus its scheduled time):
    /// median, 99th percentile and maximum, µs.
    pub lag_p50_us: u64,
    /// See [`Capacity::lag_p50_us`].
    pub lag_p99_us: u64,
    /// See [`Capacity::lag_p50_us`].
    pub lag_max_us: u64,
    /// The substrate's grace for late ticks, µs: the lag a run may have at its 99th
    /// percentile and still have kept up.
    pub grace_us: u64,
    /// Streams that failed: a failed stream's call stops pushing, so its later scheduled
    /// windows and ticks are missing for that reason, not for lag.
    pub failed_streams: u64,
}

impl Capacity {
    /// Whether the run kept up with its schedule: every scheduled window minted (no more, no
    /// fewer), every scheduled tick accepted, and the lag's 99th percentile within the grace.
    pub fn kept_up(&self) -> bool {
        self.minted_windows == self.scheduled_windows
            && self.accepted_ticks >= self.scheduled_ticks
            && self.lag_p99_us <= self.grace_us
    }

    /// `kept up ...` or `fell behind by ...`, naming each shortfall.
    pub fn verdict(&self) -> String {
        let ms = |us: u64| us as f64 / 1000.0;
        if self.kept_up() {
            return format!(
                "kept up: {} of {} scheduled windows minted, {} of {} scheduled ticks accepted, lag p99 {:.1} ms within the {:.1} ms grace",
                self.minted_windows,
                self.scheduled_windows,
                self.accepted_ticks,
                self.scheduled_ticks,
                ms(self.lag_p99_us),
                ms(self.grace_us)
            );
        }
        let pct = |part: u64, of: u64| 100.0 * part as f64 / of.max(1) as f64;
        let mut by = Vec::new();
        // `what` short of its schedule: how many, and what share, not `done`.
        let shortfall = |what: &str, got: u64, scheduled: u64, done: &str| {
            let missing = scheduled - got;
            format!(
                "{missing} {what} ({:.1} % of {scheduled} scheduled not {done})",
                pct(missing, scheduled)
            )
        };
        if self.minted_windows < self.scheduled_windows {
            by.push(shortfall(
                "windows",
                self.minted_windows,
                self.scheduled_windows,
                "minted",
            ));
        } else if self.minted_windows > self.scheduled_windows {
            by.push(format!(
                "{} windows more than the {} scheduled (late ticks fell into later windows)",
                self.minted_windows - self.scheduled_windows,
                self.scheduled_windows
            ));
        }
        if self.accepted_ticks < self.scheduled_ticks {
            by.push(shortfall(
                "ticks",
                self.accepted_ticks,
                self.scheduled_ticks,
                "accepted",
            ));
        }
        if self.lag_p99_us > self.grace_us {
            by.push(format!(
                "a lag of {:.1} ms at p99 (max {:.1} ms) past the {:.1} ms grace",
                ms(self.lag_p99_us),
                ms(self.lag_max_us),
                ms(self.grace_us)
            ));
        }
        let mut out = format!("fell behind by {}", by.join("; "));
        if self.failed_streams > 0 {
            out.push_str(&format!(
                " ({} streams failed: their calls stopped pushing)",
                self.failed_streams
            ));
        }
        out
    }
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
    run_call(h, windows, ignores_barge_in, push, yields, None).await
}

/// [`synthetic_call`], also recording each tick's lag behind its schedule (its push time on
/// the stream clock minus its scheduled time) in `lag`.
pub async fn synthetic_call_with_lag(
    h: &StreamHandle,
    windows: u64,
    ignores_barge_in: bool,
    push: &Latency,
    yields: &Latency,
    lag: &Latency,
) -> Result<CallReport> {
    run_call(h, windows, ignores_barge_in, push, yields, Some(lag)).await
}

async fn run_call(
    h: &StreamHandle,
    windows: u64,
    ignores_barge_in: bool,
    push: &Latency,
    yields: &Latency,
    lag: Option<&Latency>,
) -> Result<CallReport> {
    let w_ns = h.window_ns();
    let mut report = CallReport::default();
    for k in 0..windows {
        for (ms, channel, what) in script(k, ignores_barge_in) {
            if !in_window(k, ms, w_ns) {
                continue;
            }
            let target = k * w_ns + ms * 1_000_000;
            let now = h.now_ns();
            if target > now {
                tokio::time::sleep(Duration::from_nanos(target - now)).await;
            }
            let ts = h.now_ns();
            if let Some(lag) = lag {
                lag.record(Duration::from_nanos(ts.saturating_sub(target)));
            }
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
                What::UserSpeech => Tick::marker(
                    w,
                    channel,
                    jouleclaw_stream::interaction::marker(
                        jouleclaw_stream::interaction::USER_SPEECH,
                    ),
                    ts,
                ),
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
