//! Safety audit and live-preview quality metrics (`spec/COMMIT-REPLAY.md` section 3).
//!
//! [`audit`] is a second, deliberately simple judge of an external-writes log: it re-derives
//! from the raw events (not from the reducer's decisions) whether each write was permitted.
//! Only the burst spans (which event belongs to which burst) are taken from the reducer's step
//! log. Run over the reducer's own log, every count must be zero; the same function can judge
//! a log recorded from another implementation.

use std::collections::{BTreeMap, BTreeSet};

use crate::agreement::{AgreementUnit, incorrect_graphemes, retracted_chars, stable_prefix};
use crate::fixture::{
    Activation, CandidateClass, Event, EventKind, FailureCategory, Mode, TargetSnapshot,
};
use crate::reducer::{
    Action, ExternalWrite, Finalization, IndeterminateDelivery, ReviewChunk, Step, StepOutcome,
    WriteOp,
};

/// Safety counts for one trace (or summed over a corpus). All must be zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SafetyCounts {
    /// Writes that break at least one rule below (each write counted once).
    pub forbidden_writes: u64,
    /// Writes caused before their burst's release or stop.
    pub pre_release_writes: u64,
    /// Deletions reaching outside the span this session inserted into the same unchanged
    /// focus and caret.
    pub forbidden_deletions: u64,
    /// Writes delivering a burst that was already delivered (or flagged indeterminate).
    pub duplicate_finals: u64,
    /// Writes caused by a late partial, or by a hypothesis or final after the burst was
    /// finalized, failed or superseded.
    pub late_writes_after_seal: u64,
    /// Finalizations not preceded by their burst's release or stop.
    pub premature_hold_endpoints: u64,
    /// Staged mode: writes caused by anything but `stage_commit`.
    pub staged_leaks: u64,
    /// Writes into a missing, lost or non-editable target, or (ordinary mode) after focus or
    /// caret changed during the burst.
    pub target_ineligible_writes: u64,
    /// Indeterminate deliveries later replayed or left in the replayable review buffer.
    pub unresolved_indeterminate: u64,
    /// Inserts delivering text of a burst whose accepted final is classified `command` or
    /// `unknown` (a command written as text).
    pub commands_written_as_text: u64,
}

impl SafetyCounts {
    /// `true` when every count is zero.
    pub fn is_clean(&self) -> bool {
        *self == Self::default()
    }

    /// Adds `other` (saturating).
    pub fn add(&mut self, other: &Self) {
        let pairs = [
            (&mut self.forbidden_writes, other.forbidden_writes),
            (&mut self.pre_release_writes, other.pre_release_writes),
            (&mut self.forbidden_deletions, other.forbidden_deletions),
            (&mut self.duplicate_finals, other.duplicate_finals),
            (
                &mut self.late_writes_after_seal,
                other.late_writes_after_seal,
            ),
            (
                &mut self.premature_hold_endpoints,
                other.premature_hold_endpoints,
            ),
            (&mut self.staged_leaks, other.staged_leaks),
            (
                &mut self.target_ineligible_writes,
                other.target_ineligible_writes,
            ),
            (
                &mut self.unresolved_indeterminate,
                other.unresolved_indeterminate,
            ),
            (
                &mut self.commands_written_as_text,
                other.commands_written_as_text,
            ),
        ];
        for (a, b) in pairs {
            *a = a.saturating_add(b);
        }
    }

    /// `(name, value)` pairs in a fixed order.
    pub fn fields(&self) -> [(&'static str, u64); 10] {
        [
            ("forbidden_writes", self.forbidden_writes),
            ("pre_release_writes", self.pre_release_writes),
            ("forbidden_deletions", self.forbidden_deletions),
            ("duplicate_finals", self.duplicate_finals),
            ("late_writes_after_seal", self.late_writes_after_seal),
            ("premature_hold_endpoints", self.premature_hold_endpoints),
            ("staged_leaks", self.staged_leaks),
            ("target_ineligible_writes", self.target_ineligible_writes),
            ("unresolved_indeterminate", self.unresolved_indeterminate),
            ("commands_written_as_text", self.commands_written_as_text),
        ]
    }
}

/// The inputs [`audit`] judges.
#[derive(Debug, Clone, Copy)]
pub struct AuditInput<'a> {
    /// The trace's mode.
    pub mode: Mode,
    /// The raw events.
    pub events: &'a [Event],
    /// One step per event (only `burst_id` is used).
    pub steps: &'a [Step],
    /// The external-writes log to judge.
    pub writes: &'a [ExternalWrite],
    /// Finalizations claimed.
    pub finalizations: &'a [Finalization],
    /// Deliveries flagged indeterminate.
    pub indeterminate: &'a [IndeterminateDelivery],
    /// The review buffer after all events.
    pub review_chunks: &'a [ReviewChunk],
}

fn is_stop(mode: Mode, kind: &EventKind) -> bool {
    matches!(
        (mode.activation, kind),
        (Activation::Hold, EventKind::HoldRelease)
            | (Activation::Handsfree, EventKind::HandsfreeStop)
    )
}

fn burst_of(steps: &[Step], i: usize) -> u64 {
    steps.get(i).map_or(0, |s| s.burst_id)
}

/// Keeps the smallest index seen per burst.
fn note_first(map: &mut BTreeMap<u64, usize>, b: u64, i: usize) {
    map.entry(b).or_insert(i);
}

/// Per-burst facts derived in one pass over the raw events, so that judging each write costs
/// a lookup instead of a rescan (the stream oracle re-audits a growing session).
struct Facts<'a> {
    /// Index of the first event carrying each burst id.
    start: BTreeMap<u64, usize>,
    /// Index of the first stop event (the mode's control) of each burst.
    first_stop: BTreeMap<u64, usize>,
    /// Index of the first decode failure of each burst.
    first_decode_failure: BTreeMap<u64, usize>,
    /// Index of each burst's first finalization.
    first_final: BTreeMap<u64, usize>,
    /// Index of each burst's first indeterminate delivery.
    first_indeterminate: BTreeMap<u64, usize>,
    /// Bursts whose first finalization is a `final_decode` classified `command` or `unknown`.
    not_text: BTreeSet<u64>,
    /// `target_before[i]`: the target as the raw events describe it just before event `i`.
    target_before: Vec<Option<&'a TargetSnapshot>>,
}

impl<'a> Facts<'a> {
    fn new(input: &AuditInput<'a>) -> Self {
        let mut f = Facts {
            start: BTreeMap::new(),
            first_stop: BTreeMap::new(),
            first_decode_failure: BTreeMap::new(),
            first_final: BTreeMap::new(),
            first_indeterminate: BTreeMap::new(),
            not_text: BTreeSet::new(),
            target_before: Vec::with_capacity(input.events.len() + 1),
        };
        let mut current = None;
        for (i, e) in input.events.iter().enumerate() {
            f.target_before.push(current);
            let b = burst_of(input.steps, i);
            note_first(&mut f.start, b, i);
            if is_stop(input.mode, &e.kind) {
                note_first(&mut f.first_stop, b, i);
            }
            match &e.kind {
                EventKind::Target(t) => current = Some(t),
                EventKind::Failure {
                    category: FailureCategory::TargetLost,
                } => current = None,
                EventKind::Failure {
                    category: FailureCategory::Decode,
                } => note_first(&mut f.first_decode_failure, b, i),
                _ => {}
            }
        }
        f.target_before.push(current);
        for x in input.finalizations {
            let slot = f.first_final.entry(x.burst_id).or_insert(x.event_index);
            *slot = (*slot).min(x.event_index);
        }
        for (&b, &i) in &f.first_final {
            if let Some(EventKind::FinalDecode { class, .. }) = input.events.get(i).map(|e| &e.kind)
                && *class != CandidateClass::Dictation
            {
                f.not_text.insert(b);
            }
        }
        for d in input.indeterminate {
            let slot = f
                .first_indeterminate
                .entry(d.burst_id)
                .or_insert(d.event_index);
            *slot = (*slot).min(d.event_index);
        }
        f
    }

    /// `true` when burst `b` has a stop event of the mode's control at an index below `before`.
    fn released_before(&self, b: u64, before: usize) -> bool {
        self.first_stop.get(&b).is_some_and(|&j| j < before)
    }

    fn target_before(&self, i: usize) -> Option<&'a TargetSnapshot> {
        self.target_before
            .get(i)
            .or(self.target_before.last())
            .copied()
            .flatten()
    }
}

/// `true` when focus or caret moved (or the target was lost) between events `from` and `to`.
fn target_moved(events: &[Event], base: Option<&TargetSnapshot>, from: usize, to: usize) -> bool {
    let mut base = base.cloned();
    for e in events.iter().take(to).skip(from) {
        match &e.kind {
            EventKind::Target(t) => match &base {
                None => base = Some(t.clone()),
                Some(b) if b.focus_id != t.focus_id || b.caret_version != t.caret_version => {
                    return true;
                }
                Some(_) => {}
            },
            EventKind::Failure {
                category: FailureCategory::TargetLost,
            } => return true,
            _ => {}
        }
    }
    false
}

/// Judges an external-writes log against the raw events.
///
/// Work is linear in the number of events plus writes, plus, in ordinary mode, one scan per
/// write from its burst's start to the write.
pub fn audit(input: &AuditInput<'_>) -> SafetyCounts {
    let facts = Facts::new(input);
    let mut c = SafetyCounts::default();
    // Bursts whose final was already delivered (by a final_decode or stage_commit write).
    let mut delivered: BTreeSet<u64> = BTreeSet::new();
    // Owned span: characters this log inserted into the current unchanged focus and caret.
    let mut owned: u64 = 0;
    let mut owned_key: Option<(&str, u64)> = None;
    for w in input.writes {
        let i = w.event_index;
        let b = w.burst_id;
        let kind = input.events.get(i).map(|e| &e.kind);
        let mut bad = false;
        let key = (w.target.focus_id.as_str(), w.target.caret_version);
        if owned_key != Some(key) {
            owned = 0;
            owned_key = Some(key);
        }
        if let WriteOp::Delete { chars } = w.op {
            if chars > owned {
                c.forbidden_deletions += 1;
                bad = true;
            }
            owned = owned.saturating_sub(chars);
            if bad {
                c.forbidden_writes += 1;
            }
            continue;
        }
        owned = owned.saturating_add(w.text.chars().count() as u64);
        let final_delivery = match input.mode.staged {
            true => matches!(kind, Some(EventKind::StageCommit)),
            false => matches!(kind, Some(EventKind::FinalDecode { .. })),
        };
        if !final_delivery {
            bad = true;
            if input.mode.staged {
                c.staged_leaks += 1;
            }
        }
        if !facts.released_before(b, i) {
            c.pre_release_writes += 1;
            bad = true;
        }
        // A duplicate final is a second final delivery of one burst (or a final delivery of a
        // burst flagged indeterminate). A partial or late write is counted under its own
        // heading, not here.
        if final_delivery {
            let earlier =
                delivered.contains(&b) || facts.first_indeterminate.get(&b).is_some_and(|&d| d < i);
            if earlier {
                c.duplicate_finals += 1;
                bad = true;
            }
        }
        let finalized_before = facts.first_final.get(&b).is_some_and(|&f| f < i);
        let failed_before = facts.first_decode_failure.get(&b).is_some_and(|&f| f < i);
        let late = match kind {
            Some(EventKind::LatePartial { .. }) => true,
            Some(EventKind::Hypothesis { .. } | EventKind::FinalDecode { .. }) => {
                finalized_before || failed_before || burst_of(input.steps, i) != b
            }
            _ => false,
        };
        if late {
            c.late_writes_after_seal += 1;
            bad = true;
        }
        let eligible = match facts.target_before(i) {
            Some(t) => t.editable && t.focus_id == w.target.focus_id,
            None => false,
        };
        let moved = !input.mode.staged
            && facts
                .start
                .get(&b)
                .is_some_and(|&s| target_moved(input.events, facts.target_before(s), s, i));
        if !eligible || moved {
            c.target_ineligible_writes += 1;
            bad = true;
        }
        if facts.not_text.contains(&b) {
            c.commands_written_as_text += 1;
            bad = true;
        }
        if bad {
            c.forbidden_writes += 1;
        }
        if final_delivery {
            delivered.insert(b);
        }
    }
    for f in input.finalizations {
        if !facts.released_before(f.burst_id, f.event_index) {
            c.premature_hold_endpoints += 1;
        }
    }
    let mut last_write: BTreeMap<u64, usize> = BTreeMap::new();
    for w in input.writes {
        let slot = last_write.entry(w.burst_id).or_insert(w.event_index);
        *slot = (*slot).max(w.event_index);
    }
    let buffered: BTreeSet<u64> = input.review_chunks.iter().map(|r| r.burst_id).collect();
    for d in input.indeterminate {
        let replayed = last_write
            .get(&d.burst_id)
            .is_some_and(|&w| w > d.event_index);
        let replayable = buffered.contains(&d.burst_id);
        if replayed || replayable {
            c.unresolved_indeterminate += 1;
        }
    }
    c
}

/// Live-preview quality for one trace (or summed over a corpus).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreviewMetrics {
    /// Per burst that ever had one: milliseconds from `hold_start` to the first non-empty
    /// word-based LocalAgreement-2 prefix.
    pub first_stable_prefix_ms_word: Vec<u64>,
    /// The same, grapheme-based.
    pub first_stable_prefix_ms_grapheme: Vec<u64>,
    /// Characters retracted or changed between successive word-based stable prefixes.
    pub prefix_churn_chars_word: u64,
    /// Characters retracted or changed between successive grapheme-based stable prefixes.
    pub prefix_churn_chars_grapheme: u64,
    /// Sum over visible previews of (milliseconds shown) x (graphemes not a correct prefix of
    /// the burst's final); bursts without a final are not measured.
    pub stale_preview_char_ms: u64,
    /// Hypotheses byte-identical to their predecessor in the same burst (a full re-decode that
    /// changed nothing).
    pub repeated_full_decodes: u64,
    /// One-slot consumer: words of each burst's final beyond the longest common word prefix
    /// with the slot (the burst's last accepted hypothesis before the final; empty if none).
    pub suffix_missing_words: u64,
    /// Words of every measured final (the denominator of the word-based rate).
    pub final_words: u64,
    /// The same as [`PreviewMetrics::suffix_missing_words`] in grapheme clusters.
    pub suffix_missing_graphemes: u64,
    /// Grapheme clusters of every measured final.
    pub final_graphemes: u64,
}

impl PreviewMetrics {
    /// Adds `other` (saturating; latency lists are concatenated).
    pub fn add(&mut self, other: &Self) {
        self.first_stable_prefix_ms_word
            .extend_from_slice(&other.first_stable_prefix_ms_word);
        self.first_stable_prefix_ms_grapheme
            .extend_from_slice(&other.first_stable_prefix_ms_grapheme);
        self.prefix_churn_chars_word = self
            .prefix_churn_chars_word
            .saturating_add(other.prefix_churn_chars_word);
        self.prefix_churn_chars_grapheme = self
            .prefix_churn_chars_grapheme
            .saturating_add(other.prefix_churn_chars_grapheme);
        self.stale_preview_char_ms = self
            .stale_preview_char_ms
            .saturating_add(other.stale_preview_char_ms);
        self.repeated_full_decodes = self
            .repeated_full_decodes
            .saturating_add(other.repeated_full_decodes);
        self.suffix_missing_words = self
            .suffix_missing_words
            .saturating_add(other.suffix_missing_words);
        self.final_words = self.final_words.saturating_add(other.final_words);
        self.suffix_missing_graphemes = self
            .suffix_missing_graphemes
            .saturating_add(other.suffix_missing_graphemes);
        self.final_graphemes = self.final_graphemes.saturating_add(other.final_graphemes);
    }

    /// `suffix_missing_words / final_words`, truncated to three decimals, as text (`"n/a"`
    /// when no final word was measured).
    pub fn suffix_missing_rate_word(&self) -> String {
        ratio_3(self.suffix_missing_words, self.final_words)
    }

    /// `suffix_missing_graphemes / final_graphemes`, truncated to three decimals, as text
    /// (`"n/a"` when no final grapheme was measured).
    pub fn suffix_missing_rate_grapheme(&self) -> String {
        ratio_3(self.suffix_missing_graphemes, self.final_graphemes)
    }
}

/// `num / den` truncated to three decimals (`"0.333"`), or `"n/a"` when `den` is zero.
pub(crate) fn ratio_3(num: u64, den: u64) -> String {
    if den == 0 {
        return "n/a".to_owned();
    }
    let milli = u128::from(num) * 1000 / u128::from(den);
    format!("{}.{:03}", milli / 1000, milli % 1000)
}

/// Computes live-preview quality from the accepted hypotheses of each burst (taken from the
/// step log) and the bursts' finals. Pure; never influences delivery.
pub fn preview_metrics(
    events: &[Event],
    steps: &[Step],
    finalizations: &[Finalization],
) -> PreviewMetrics {
    let mut m = PreviewMetrics::default();
    let mut burst = 0u64;
    let mut start_ms = 0u64;
    let mut hyps: Vec<(u64, &str)> = Vec::new();
    let flush = |burst: u64, start_ms: u64, hyps: &mut Vec<(u64, &str)>, m: &mut PreviewMetrics| {
        if burst == 0 {
            return;
        }
        burst_metrics(
            start_ms,
            hyps,
            finalizations.iter().find(|f| f.burst_id == burst),
            m,
        );
        hyps.clear();
    };
    for (e, s) in events.iter().zip(steps) {
        match (&s.outcome, &e.kind) {
            (StepOutcome::Accepted(Action::BurstOpened), _) => {
                flush(burst, start_ms, &mut hyps, &mut m);
                burst = s.burst_id;
                start_ms = e.t_ms;
            }
            (StepOutcome::Accepted(Action::PreviewUpdated), EventKind::Hypothesis { text, .. }) => {
                hyps.push((e.t_ms, text));
            }
            _ => {}
        }
    }
    flush(burst, start_ms, &mut hyps, &mut m);
    m
}

fn burst_metrics(
    start_ms: u64,
    hyps: &[(u64, &str)],
    fin: Option<&Finalization>,
    m: &mut PreviewMetrics,
) {
    for unit in [AgreementUnit::Word, AgreementUnit::Grapheme] {
        let mut prev_prefix = "";
        let mut first: Option<u64> = None;
        let mut churn = 0u64;
        for pair in hyps.windows(2) {
            let (t, cur) = pair[1];
            let prefix = stable_prefix(pair[0].1, cur, unit);
            churn = churn.saturating_add(retracted_chars(prev_prefix, prefix));
            if first.is_none() && !prefix.is_empty() {
                first = Some(t.saturating_sub(start_ms));
            }
            prev_prefix = prefix;
        }
        match unit {
            AgreementUnit::Word => {
                m.prefix_churn_chars_word = m.prefix_churn_chars_word.saturating_add(churn);
                m.first_stable_prefix_ms_word.extend(first);
            }
            AgreementUnit::Grapheme => {
                m.prefix_churn_chars_grapheme = m.prefix_churn_chars_grapheme.saturating_add(churn);
                m.first_stable_prefix_ms_grapheme.extend(first);
            }
        }
    }
    for pair in hyps.windows(2) {
        if pair[0].1 == pair[1].1 {
            m.repeated_full_decodes = m.repeated_full_decodes.saturating_add(1);
        }
    }
    if let Some(f) = fin {
        // The one-slot consumer holds the newest accepted hypothesis; at the final it shows
        // the last one (or nothing).
        let slot = hyps.last().map_or("", |h| h.1);
        let final_words = f.text.split_whitespace().count() as u64;
        let agreed_words = f
            .text
            .split_whitespace()
            .zip(slot.split_whitespace())
            .take_while(|(a, b)| a == b)
            .count() as u64;
        m.final_words = m.final_words.saturating_add(final_words);
        m.suffix_missing_words = m
            .suffix_missing_words
            .saturating_add(final_words - agreed_words);
        m.final_graphemes = m
            .final_graphemes
            .saturating_add(incorrect_graphemes(&f.text, ""));
        m.suffix_missing_graphemes = m
            .suffix_missing_graphemes
            .saturating_add(incorrect_graphemes(&f.text, slot));
        for (k, &(t, shown)) in hyps.iter().enumerate() {
            let until = hyps.get(k + 1).map_or(f.t_ms, |h| h.0);
            let wrong = incorrect_graphemes(shown, &f.text);
            let cost = until.saturating_sub(t).saturating_mul(wrong);
            m.stale_preview_char_ms = m.stale_preview_char_ms.saturating_add(cost);
        }
    }
}
