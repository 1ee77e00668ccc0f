//! Fixture-time latency metrics and the script classes preview quality is reported by
//! (`spec/COMMIT-REPLAY.md` section 3).
//!
//! Time is the fixtures' `t_ms`: these are latencies of the traces, not of any engine.

use std::collections::BTreeMap;

use crate::audit::ratio_3;
use crate::fixture::{Event, EventKind};
use crate::reducer::{Action, Step, StepOutcome};

/// The writing system a trace's text belongs to, for reporting preview quality apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScriptClass {
    /// Latin letters only.
    Latin,
    /// CJK letters (Han, kana, Hangul), possibly with Latin letters; no right-to-left letters.
    Cjk,
    /// Right-to-left letters (Hebrew, Arabic and the other scripts of their blocks) only.
    Rtl,
    /// Right-to-left letters together with left-to-right letters.
    MixedDirection,
    /// Anything else: no letters at all, or letters of another script (Cyrillic, Greek, ...).
    Other,
}

impl ScriptClass {
    /// Every class, in report order.
    pub const ALL: [ScriptClass; 5] = [
        Self::Latin,
        Self::Cjk,
        Self::Rtl,
        Self::MixedDirection,
        Self::Other,
    ];

    /// `"latin"`, `"cjk"`, `"rtl"`, `"mixed_direction"` or `"other"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Latin => "latin",
            Self::Cjk => "cjk",
            Self::Rtl => "rtl",
            Self::MixedDirection => "mixed_direction",
            Self::Other => "other",
        }
    }
}

fn in_ranges(c: char, ranges: &[(u32, u32)]) -> bool {
    let c = u32::from(c);
    ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi)
}

/// Right-to-left blocks: Hebrew through Arabic Extended-A, Hebrew and Arabic presentation
/// forms, and the supplementary right-to-left planes' ranges.
const RTL: &[(u32, u32)] = &[
    (0x0590, 0x08FF),
    (0xFB1D, 0xFDFF),
    (0xFE70, 0xFEFF),
    (0x10800, 0x10FFF),
    (0x1E800, 0x1EFFF),
];

/// CJK blocks: Hangul Jamo, CJK radicals, kana, Bopomofo, Hangul, CJK ideographs and their
/// extensions and compatibility forms, half-width kana.
const CJK: &[(u32, u32)] = &[
    (0x1100, 0x11FF),
    (0x2E80, 0x2FDF),
    (0x3040, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7FF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x3FFFF),
];

/// Latin blocks: ASCII letters, Latin-1 Supplement through Latin Extended-B, Latin Extended
/// Additional, C, D, E, and full-width Latin letters.
const LATIN: &[(u32, u32)] = &[
    (0x0041, 0x005A),
    (0x0061, 0x007A),
    (0x00C0, 0x024F),
    (0x1E00, 0x1EFF),
    (0x2C60, 0x2C7F),
    (0xA720, 0xA7FF),
    (0xAB30, 0xAB6F),
    (0xFF21, 0xFF3A),
    (0xFF41, 0xFF5A),
];

/// The script class of a set of texts, from their alphabetic characters (`char::is_alphabetic`;
/// digits, punctuation, spaces and combining marks do not count):
/// right-to-left letters with any other letter -> `MixedDirection`; right-to-left letters only
/// -> `Rtl`; else any CJK letter -> `Cjk`; else Latin letters only -> `Latin`; else `Other`.
///
/// ```
/// use jouleclaw_replay::{script_class, ScriptClass};
/// assert_eq!(script_class(["alpha bravo"]), ScriptClass::Latin);
/// assert_eq!(script_class(["甲乙", "alpha"]), ScriptClass::Cjk);
/// assert_eq!(script_class(["אלף בית"]), ScriptClass::Rtl);
/// assert_eq!(script_class(["alpha אלף"]), ScriptClass::MixedDirection);
/// assert_eq!(script_class(["12 ?"]), ScriptClass::Other);
/// ```
pub fn script_class<'a>(texts: impl IntoIterator<Item = &'a str>) -> ScriptClass {
    let (mut rtl, mut cjk, mut latin, mut other) = (false, false, false, false);
    for c in texts.into_iter().flat_map(str::chars) {
        if !c.is_alphabetic() {
            continue;
        }
        if in_ranges(c, RTL) {
            rtl = true;
        } else if in_ranges(c, CJK) {
            cjk = true;
        } else if in_ranges(c, LATIN) {
            latin = true;
        } else {
            other = true;
        }
    }
    match (rtl, cjk || latin || other) {
        (true, true) => ScriptClass::MixedDirection,
        (true, false) => ScriptClass::Rtl,
        _ if cjk => ScriptClass::Cjk,
        _ if latin && !other => ScriptClass::Latin,
        _ => ScriptClass::Other,
    }
}

/// The script class of a trace: of the texts of its `hypothesis`, `final_decode` and
/// `late_partial` events.
pub fn trace_script_class(events: &[Event]) -> ScriptClass {
    script_class(events.iter().filter_map(|e| match &e.kind {
        EventKind::Hypothesis { text, .. }
        | EventKind::FinalDecode { text, .. }
        | EventKind::LatePartial { text, .. } => Some(text.as_str()),
        _ => None,
    }))
}

/// Fixture-time latencies of one trace (or concatenated over a corpus), in milliseconds of
/// `t_ms`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatencyMetrics {
    /// Per burst whose final was delivered (written in ordinary mode, appended to the review
    /// buffer in staged mode): the final's `t_ms` minus the accepted release's or stop's.
    pub release_to_final_delivery_ms: Vec<u64>,
    /// Per burst that shows a non-blank preview: the first accepted non-blank hypothesis's
    /// `t_ms` minus the burst's `hold_start`.
    pub onset_to_first_useful_preview_ms: Vec<u64>,
    /// Decoder outputs (`hypothesis`, `late_partial` and `final_decode` events, accepted or
    /// not) of the bursts that were released or stopped.
    pub decodes: u64,
    /// Captured audio of those bursts: release or stop `t_ms` minus `hold_start` `t_ms`.
    pub captured_ms: u64,
}

impl LatencyMetrics {
    /// Appends `other`'s samples.
    pub fn add(&mut self, other: &Self) {
        self.release_to_final_delivery_ms
            .extend_from_slice(&other.release_to_final_delivery_ms);
        self.onset_to_first_useful_preview_ms
            .extend_from_slice(&other.onset_to_first_useful_preview_ms);
        self.decodes = self.decodes.saturating_add(other.decodes);
        self.captured_ms = self.captured_ms.saturating_add(other.captured_ms);
    }

    /// Decoder count per minute of captured audio, `decodes * 60000 / captured_ms` truncated to
    /// three decimals, as text (`"n/a"` when no audio was captured).
    pub fn decodes_per_minute(&self) -> String {
        ratio_3(self.decodes.saturating_mul(60_000), self.captured_ms)
    }
}

/// Computes [`LatencyMetrics`] from a trace's events and the reducer's steps (one per event).
/// Pure.
pub fn latency_metrics(events: &[Event], steps: &[Step]) -> LatencyMetrics {
    let mut m = LatencyMetrics::default();
    let mut onset: Option<u64> = None;
    let mut released: Option<u64> = None;
    let mut previewed = false;
    // Per burst: (hold_start t_ms, release or stop t_ms, decoder outputs).
    let mut bursts: BTreeMap<u64, (u64, Option<u64>, u64)> = BTreeMap::new();
    for (e, s) in events.iter().zip(steps) {
        match (&s.outcome, &e.kind) {
            (StepOutcome::Accepted(Action::BurstOpened), _) => {
                bursts.insert(s.burst_id, (e.t_ms, None, 0));
            }
            (StepOutcome::Accepted(Action::Released), _) => {
                if let Some(b) = bursts.get_mut(&s.burst_id) {
                    b.1 = Some(e.t_ms);
                }
            }
            (
                _,
                EventKind::Hypothesis { .. }
                | EventKind::LatePartial { .. }
                | EventKind::FinalDecode { .. },
            ) => {
                if let Some(b) = bursts.get_mut(&s.burst_id) {
                    b.2 += 1;
                }
            }
            _ => {}
        }
        let StepOutcome::Accepted(action) = &s.outcome else {
            continue;
        };
        match (action, &e.kind) {
            (Action::BurstOpened, _) => {
                onset = Some(e.t_ms);
                released = None;
                previewed = false;
            }
            (Action::PreviewUpdated, EventKind::Hypothesis { text, .. }) => {
                if !previewed
                    && !text.trim().is_empty()
                    && let Some(start) = onset
                {
                    previewed = true;
                    m.onset_to_first_useful_preview_ms
                        .push(e.t_ms.saturating_sub(start));
                }
            }
            (Action::Released, _) => released = Some(e.t_ms),
            (Action::Written | Action::Staged, EventKind::FinalDecode { .. }) => {
                if let Some(r) = released {
                    m.release_to_final_delivery_ms
                        .push(e.t_ms.saturating_sub(r));
                }
            }
            _ => {}
        }
    }
    for (start, release, decodes) in bursts.into_values() {
        if let Some(r) = release {
            m.decodes = m.decodes.saturating_add(decodes);
            m.captured_ms = m.captured_ms.saturating_add(r.saturating_sub(start));
        }
    }
    m
}

/// The nearest-rank `p`-th percentile (`0 < p <= 100`) of `samples`: the value at 1-based rank
/// `ceil(p * n / 100)` of the ascending samples; `None` when there is no sample or `p` is out
/// of range.
///
/// ```
/// use jouleclaw_replay::nearest_rank_percentile;
/// let s = [400, 100, 300, 200];
/// assert_eq!(nearest_rank_percentile(&s, 50), Some(200));
/// assert_eq!(nearest_rank_percentile(&s, 95), Some(400));
/// assert_eq!(nearest_rank_percentile(&[], 50), None);
/// ```
pub fn nearest_rank_percentile(samples: &[u64], p: u32) -> Option<u64> {
    if samples.is_empty() || p == 0 || p > 100 {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let n = sorted.len() as u64;
    let rank = (u64::from(p) * n).div_ceil(100).max(1);
    let index = usize::try_from(rank - 1).ok()?;
    sorted.get(index).copied()
}
