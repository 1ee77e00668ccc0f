//! The measurement of a turn: how many samples, how long, the loudest and the average.
//!
//! Levels are dBFS in integer hundredths, exact: the integer nearest to
//! `1000 * log10(power / reference)` (`spec/VOICE-TURN-V1.md` section 3). That value is never
//! halfway between two integers, so there is no rounding tie to break; f64 gives a candidate and
//! exact integer arithmetic decides whenever the candidate is within `1e-6` of a half.

use core::fmt;
use std::time::Duration;

use num_bigint::BigUint;

use crate::error::{Result, VoiceError};

/// Full scale of a 16-bit sample: 32,768 (`|-32768|`). Both levels are relative to a full-scale
/// square wave, so a full-scale square wave is 0 dBFS peak and 0 dBFS RMS, and a sine reads
/// about 3.01 dB lower in RMS than in peak.
pub const FULL_SCALE: u32 = 32_768;

/// Nanoseconds per sample at 16 kHz: 62,500.
pub const NS_PER_SAMPLE: u64 = 62_500;

/// The most samples a meter takes: `floor((2^53 - 1) / 62,500)`, so that the duration in
/// nanoseconds is a JCR-1 integer. About 104 days of audio; a turn holds at most 480,000.
pub const MAX_METER_SAMPLES: u64 = ((1u64 << 53) - 1) / NS_PER_SAMPLE;

/// The lowest peak level a non-silent signal has: one sample of magnitude 1,
/// `round(2000 * log10(1 / 32768))` = -9031 (-90.31 dBFS).
pub const PEAK_FLOOR_HUNDREDTHS: i32 = -9031;

/// `FULL_SCALE^2`: the power of a full-scale sample.
const FULL_SCALE_POWER: u128 = 1 << 30;

/// How close (in hundredths) the f64 candidate may come to a rounding boundary before exact
/// arithmetic decides. The f64 error is below `1e-10` hundredths.
const EXACT_MARGIN: f64 = 1e-6;

/// The measurement of a turn's audio: sample count, duration, and peak and RMS level in dBFS
/// hundredths, or no level at all when every sample is zero (or there are none).
///
/// Built by a [`LevelMeter`] or by the `voice-turn/1` decoder; every value is consistent (both
/// levels absent or both present, none without samples, RMS never above peak, within range).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Measurement {
    samples: u64,
    peak: Option<i32>,
    rms: Option<i32>,
}

impl Measurement {
    /// Samples (16 kHz, 16-bit, mono).
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// `samples * 62,500` ns: exactly how long the audio lasts.
    pub fn duration_ns(&self) -> u64 {
        self.samples.saturating_mul(NS_PER_SAMPLE)
    }

    /// The duration as a [`Duration`].
    pub fn duration(&self) -> Duration {
        Duration::from_nanos(self.duration_ns())
    }

    /// PCM bytes: two per sample.
    pub fn audio_bytes(&self) -> u64 {
        self.samples.saturating_mul(2)
    }

    /// Peak level in hundredths of a dBFS (`-600` is -6.00 dBFS); `None` when silent.
    pub fn peak_dbfs_hundredths(&self) -> Option<i32> {
        self.peak
    }

    /// RMS level in hundredths of a dBFS; `None` when silent.
    pub fn rms_dbfs_hundredths(&self) -> Option<i32> {
        self.rms
    }

    /// `true` when there is no level: every sample is zero, or there are no samples. A muted
    /// microphone measures silent.
    pub fn is_silent(&self) -> bool {
        self.peak.is_none()
    }

    /// A measurement from its wire parts, checked as the `voice-turn/1` decoder checks them;
    /// the error is the refusal code.
    pub(crate) fn from_parts(
        samples: u64,
        peak: Option<i32>,
        rms: Option<i32>,
    ) -> core::result::Result<Self, &'static str> {
        match (peak, rms) {
            (None, None) => {}
            (Some(_), Some(_)) if samples > 0 => {}
            _ => return Err("silence_mismatch"),
        }
        if let (Some(p), Some(r)) = (peak, rms) {
            let rms_floor = level_hundredths(1, u128::from(samples) * FULL_SCALE_POWER);
            if !(PEAK_FLOOR_HUNDREDTHS..=0).contains(&p) || r > 0 || Some(r) < rms_floor {
                return Err("level_out_of_range");
            }
            if r > p {
                return Err("rms_above_peak");
            }
        }
        Ok(Self { samples, peak, rms })
    }
}

/// Writes `-600` as `-6.00`.
fn write_hundredths(f: &mut fmt::Formatter<'_>, h: i32) -> fmt::Result {
    let sign = if h < 0 { "-" } else { "" };
    let a = h.unsigned_abs();
    write!(f, "{sign}{}.{:02}", a / 100, a % 100)
}

impl fmt::Display for Measurement {
    /// `3200 samples (200 ms), peak -6.02 dBFS, RMS -9.03 dBFS`; silence and no audio say so.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.duration_ns();
        let (ms, frac) = (ns / 1_000_000, ns % 1_000_000);
        write!(f, "{} samples ({ms}", self.samples)?;
        if frac != 0 {
            // Multiples of 62,500 ns: at most four decimals of a millisecond.
            let digits = format!("{:06}", frac);
            write!(f, ".{}", digits.trim_end_matches('0'))?;
        }
        f.write_str(" ms), ")?;
        match (self.peak, self.rms) {
            (Some(p), Some(r)) => {
                f.write_str("peak ")?;
                write_hundredths(f, p)?;
                f.write_str(" dBFS, RMS ")?;
                write_hundredths(f, r)?;
                f.write_str(" dBFS")
            }
            _ if self.samples == 0 => f.write_str("no audio"),
            _ => f.write_str("silence: every sample is zero"),
        }
    }
}

/// Measures 16-bit PCM in one pass as it arrives: the sample count, the integer sum of squares
/// and the largest magnitude. Pure and exact; chunking changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LevelMeter {
    samples: u64,
    sum_squares: u128,
    peak: u32,
}

impl LevelMeter {
    /// A meter that has seen nothing.
    pub const fn new() -> Self {
        Self {
            samples: 0,
            sum_squares: 0,
            peak: 0,
        }
    }

    /// Takes a chunk of 16-bit little-endian PCM.
    ///
    /// Refuses, leaving the meter unchanged, an odd byte count ([`VoiceError::OddPcmLength`])
    /// and a chunk that would take it past [`MAX_METER_SAMPLES`] ([`VoiceError::MeterFull`]).
    pub fn push_pcm16le(&mut self, chunk: &[u8]) -> Result<()> {
        if !chunk.len().is_multiple_of(2) {
            return Err(VoiceError::OddPcmLength { len: chunk.len() });
        }
        self.reserve((chunk.len() / 2) as u64)?;
        for pair in chunk.chunks_exact(2) {
            self.take(i16::from_le_bytes([pair[0], pair[1]]));
        }
        Ok(())
    }

    /// Takes one sample ([`VoiceError::MeterFull`] past [`MAX_METER_SAMPLES`]).
    pub fn push_sample(&mut self, sample: i16) -> Result<()> {
        self.reserve(1)?;
        self.take(sample);
        Ok(())
    }

    fn reserve(&self, more: u64) -> Result<()> {
        match self.samples.checked_add(more) {
            Some(n) if n <= MAX_METER_SAMPLES => Ok(()),
            _ => Err(VoiceError::MeterFull {
                max: MAX_METER_SAMPLES,
            }),
        }
    }

    fn take(&mut self, s: i16) {
        let m = u32::from(s.unsigned_abs());
        self.samples += 1;
        // At most MAX_METER_SAMPLES * 2^30 < 2^68: no overflow in u128.
        self.sum_squares += u128::from(m * m);
        self.peak = self.peak.max(m);
    }

    /// Samples seen.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The exact sum of the squared samples.
    pub fn sum_squares(&self) -> u128 {
        self.sum_squares
    }

    /// The largest sample magnitude (0..=32,768).
    pub fn peak_abs(&self) -> u32 {
        self.peak
    }

    /// The measurement of everything seen so far.
    ///
    /// Peak: nearest integer to `2000 * log10(peak / 32768)`; RMS: nearest integer to
    /// `1000 * log10(sum_squares / (samples * 32768^2))`; both `None` when every sample is zero.
    pub fn measurement(&self) -> Measurement {
        let peak = level_hundredths(
            u128::from(self.peak) * u128::from(self.peak),
            FULL_SCALE_POWER,
        );
        let rms = level_hundredths(
            self.sum_squares,
            u128::from(self.samples) * FULL_SCALE_POWER,
        );
        Measurement {
            samples: self.samples,
            peak,
            rms,
        }
    }
}

/// The integer nearest to `1000 * log10(power / reference)`, `None` for `power == 0` (or a zero
/// reference). Never a tie: `(p/r)^2000 = 10^(2h-1)` has no rational solution, since the power
/// of 2 in the left side is even and in the right side odd.
pub(crate) fn level_hundredths(power: u128, reference: u128) -> Option<i32> {
    if power == 0 || reference == 0 {
        return None;
    }
    let est = 1000.0 * ((power as f64).log10() - (reference as f64).log10());
    let h = est.round();
    if 0.5 - (est - h).abs() > EXACT_MARGIN {
        return Some(h as i32);
    }
    Some(exact_from(power, reference, h as i32))
}

/// Exact powers for the boundary test.
struct Powers {
    a: BigUint,
    b: BigUint,
}

impl Powers {
    fn new(power: u128, reference: u128) -> Self {
        Self {
            a: BigUint::from(power).pow(2000),
            b: BigUint::from(reference).pow(2000),
        }
    }

    /// `1000 * log10(a/b) > k - 1/2`, i.e. `a^2000 * 10^(1-2k) > b^2000`, with the power of ten
    /// moved to whichever side keeps it a whole number.
    fn above(&self, k: i32) -> bool {
        let e = 1 - 2 * i64::from(k);
        let ten = |n: i64| BigUint::from(10u32).pow(n.unsigned_abs() as u32);
        if e >= 0 {
            &self.a * ten(e) > self.b
        } else {
            self.a > &self.b * ten(e)
        }
    }
}

/// Walks from `h` to the integer `k` with `above(k)` and not `above(k + 1)`.
fn exact_from(power: u128, reference: u128, mut h: i32) -> i32 {
    let p = Powers::new(power, reference);
    while !p.above(h) {
        h -= 1;
    }
    while p.above(h + 1) {
        h += 1;
    }
    h
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference: exact integer arithmetic only, by bisection, no floating point.
    pub(crate) fn reference_hundredths(power: u128, reference: u128) -> Option<i32> {
        if power == 0 {
            return None;
        }
        let p = Powers::new(power, reference);
        // above(lo) holds and above(hi) does not for every pair these tests use.
        let (mut lo, mut hi) = (-16_000i32, 1_000i32);
        assert!(p.above(lo) && !p.above(hi));
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if p.above(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }

    fn pcm(samples: &[i16]) -> Vec<u8> {
        samples.iter().flat_map(|s| s.to_le_bytes()).collect()
    }

    fn measure(samples: &[i16]) -> Measurement {
        let mut m = LevelMeter::new();
        m.push_pcm16le(&pcm(samples)).unwrap();
        m.measurement()
    }

    #[test]
    fn a_full_scale_square_wave_is_zero_dbfs_peak_and_rms() {
        let square: Vec<i16> = (0..3200)
            .map(|i| if (i / 8) % 2 == 0 { 32767 } else { -32768 })
            .collect();
        let m = measure(&square);
        assert_eq!(m.peak_dbfs_hundredths(), Some(0));
        assert_eq!(m.rms_dbfs_hundredths(), Some(0));
        assert_eq!((m.samples(), m.duration_ns()), (3200, 200_000_000));
        // Half scale is -6.02 dB in both.
        let half: Vec<i16> = square.iter().map(|s| s / 2).collect();
        let m = measure(&half);
        assert_eq!(m.peak_dbfs_hundredths(), Some(-602));
        assert_eq!(m.rms_dbfs_hundredths(), Some(-602));
    }

    #[test]
    fn a_minus_20_dbfs_sine_peaks_at_minus_20_and_has_rms_3_01_db_lower() {
        // 1 kHz at 16 kHz: 16 samples a period; amplitude 32768 / 10.
        let sine: Vec<i16> = (0..16_000)
            .map(|n| {
                (3276.8 * (2.0 * core::f64::consts::PI * f64::from(n) / 16.0).sin()).round() as i16
            })
            .collect();
        let m = measure(&sine);
        assert_eq!(m.peak_dbfs_hundredths(), Some(-2000));
        // 20 * log10(1/sqrt(2)) = -3.0103 dB below the peak.
        assert_eq!(m.rms_dbfs_hundredths(), Some(-2301));
        assert_eq!(
            m.to_string(),
            "16000 samples (1000 ms), peak -20.00 dBFS, RMS -23.01 dBFS"
        );
    }

    #[test]
    fn silence_has_no_level_and_one_quantum_has_the_floor() {
        let m = measure(&[0; 3200]);
        assert!(m.is_silent());
        assert_eq!(
            (m.peak_dbfs_hundredths(), m.rms_dbfs_hundredths()),
            (None, None)
        );
        assert_eq!(
            m.to_string(),
            "3200 samples (200 ms), silence: every sample is zero"
        );
        let m = LevelMeter::new().measurement();
        assert!(m.is_silent());
        assert_eq!(m.to_string(), "0 samples (0 ms), no audio");
        // The accepted neighbour: one sample of magnitude 1 is not silence.
        let mut one = vec![0i16; 3199];
        one.push(-1);
        let m = measure(&one);
        assert!(!m.is_silent());
        assert_eq!(m.peak_dbfs_hundredths(), Some(PEAK_FLOOR_HUNDREDTHS));
        // 1000 * log10(1 / (3200 * 2^30)) = -125.36
        assert_eq!(m.rms_dbfs_hundredths(), Some(-12536));
        assert_eq!(
            m.to_string(),
            "3200 samples (200 ms), peak -90.31 dBFS, RMS -125.36 dBFS"
        );
        assert_eq!(
            measure(&[5]).to_string(),
            "1 samples (0.0625 ms), peak -76.33 dBFS, RMS -76.33 dBFS"
        );
    }

    #[test]
    fn chunking_changes_nothing_and_refusals_change_nothing() {
        let samples: Vec<i16> = (0..1000)
            .map(|i| ((i * 7919) % 65536 - 32768) as i16)
            .collect();
        let bytes = pcm(&samples);
        let whole = {
            let mut m = LevelMeter::new();
            m.push_pcm16le(&bytes).unwrap();
            m
        };
        for step in [2, 6, 64, 1998] {
            let mut m = LevelMeter::new();
            for c in bytes.chunks(step) {
                m.push_pcm16le(c).unwrap();
            }
            assert_eq!(m, whole);
        }
        let mut one = LevelMeter::new();
        for s in &samples {
            one.push_sample(*s).unwrap();
        }
        assert_eq!(one, whole);
        let before = whole;
        let mut m = whole;
        assert_eq!(
            m.push_pcm16le(&[1, 2, 3]).unwrap_err(),
            VoiceError::OddPcmLength { len: 3 }
        );
        assert_eq!(m, before);
        // The sample bound, at its exact value.
        let mut full = LevelMeter {
            samples: MAX_METER_SAMPLES - 1,
            ..LevelMeter::new()
        };
        full.push_sample(1).unwrap();
        assert_eq!(full.samples(), MAX_METER_SAMPLES);
        let at_max = full;
        assert_eq!(full.push_sample(1).unwrap_err().code(), "measure_too_long");
        assert_eq!(
            full.push_pcm16le(&[0, 0]).unwrap_err().code(),
            "measure_too_long"
        );
        assert_eq!(full, at_max);
        assert_eq!(full.measurement().duration_ns(), 9_007_199_254_687_500);
    }

    #[test]
    fn levels_near_a_rounding_boundary_are_decided_exactly() {
        // Within 1e-12 of a half: which way f64 rounds depends on the libm (CPython's and
        // Rust's log10 disagree on the second pair), so the candidate is not trusted there.
        let near_half = |s: u128, d: u128| {
            let est = 1000.0 * ((s as f64).log10() - (d as f64).log10());
            0.5 - (est - est.round()).abs() <= EXACT_MARGIN
        };
        for (s, d, want) in [
            (2_087_131_670_749u128, 3200u128 << 30, -217),
            (1_323_247_576_598, 4800 << 30, -591),
            (1_956_815_357_946, 3200 << 30, -245),
            (1_170_980_999_587, 3200 << 30, -467),
        ] {
            assert!(near_half(s, d));
            assert_eq!(level_hundredths(s, d), Some(want));
            assert_eq!(reference_hundredths(s, d), Some(want));
        }
        // The neighbour: one more in the sum of squares moves x by 2e-10, across the boundary.
        assert_eq!(level_hundredths(2_087_131_670_750, 3200 << 30), Some(-216));
        assert_eq!(
            reference_hundredths(2_087_131_670_750, 3200 << 30),
            Some(-216)
        );
        // Far from a boundary the f64 candidate stands.
        for (power, reference) in [(1u128, 1u128 << 30), (1 << 30, 1 << 30), (3, 7), (7, 3)] {
            assert_eq!(
                level_hundredths(power, reference),
                reference_hundredths(power, reference)
            );
        }
        // exact_from walks to the same answer from a start off by one or two either way.
        let want = reference_hundredths(12_345, 1 << 30).unwrap();
        assert_eq!(want, -4939);
        for start in [want - 2, want - 1, want, want + 1, want + 2] {
            assert_eq!(exact_from(12_345, 1 << 30, start), want);
        }
    }

    #[test]
    fn from_parts_checks_what_the_decoder_checks() {
        assert!(Measurement::from_parts(3200, Some(-600), Some(-903)).is_ok());
        assert!(Measurement::from_parts(3200, None, None).is_ok());
        assert!(Measurement::from_parts(0, None, None).is_ok());
        assert_eq!(
            Measurement::from_parts(0, Some(0), Some(0)),
            Err("silence_mismatch")
        );
        assert_eq!(
            Measurement::from_parts(3, Some(0), None),
            Err("silence_mismatch")
        );
        assert_eq!(
            Measurement::from_parts(3, None, Some(-1)),
            Err("silence_mismatch")
        );
        assert_eq!(
            Measurement::from_parts(3, Some(1), Some(0)),
            Err("level_out_of_range")
        );
        assert_eq!(
            Measurement::from_parts(3, Some(-9032), Some(-9100)),
            Err("level_out_of_range")
        );
        assert!(Measurement::from_parts(3, Some(-9031), Some(-9100)).is_ok());
        assert_eq!(
            Measurement::from_parts(3, Some(0), Some(1)),
            Err("level_out_of_range")
        );
        // The RMS floor of one sample is the peak floor.
        assert_eq!(
            Measurement::from_parts(1, Some(-9031), Some(-9032)),
            Err("level_out_of_range")
        );
        assert!(Measurement::from_parts(1, Some(-9031), Some(-9031)).is_ok());
        assert_eq!(
            Measurement::from_parts(3, Some(-700), Some(-600)),
            Err("rms_above_peak")
        );
        assert!(Measurement::from_parts(3, Some(-600), Some(-600)).is_ok());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn the_fast_level_agrees_with_the_exact_reference(
            samples in 1u64..=480_000,
            fill in 0u128..=(1u128 << 30),
        ) {
            // Any power up to the reference: samples * fill <= samples * 2^30.
            let reference = u128::from(samples) << 30;
            let power = (u128::from(samples) * fill).max(1);
            prop_assert_eq!(level_hundredths(power, reference), reference_hundredths(power, reference));
        }

        #[test]
        fn every_peak_agrees_with_the_exact_reference(peak in 1u128..=32_768) {
            prop_assert_eq!(
                level_hundredths(peak * peak, FULL_SCALE_POWER),
                reference_hundredths(peak * peak, FULL_SCALE_POWER)
            );
        }
    }
}
