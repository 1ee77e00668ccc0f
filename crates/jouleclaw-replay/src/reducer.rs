//! The pure `ReplayState` reducer (oracle rules 1-8, `spec/COMMIT-REPLAY.md` section 2).

use std::collections::BTreeMap;

use crate::agreement::{AgreementUnit, stable_prefix};
use crate::fixture::{
    Activation, CandidateClass, Event, EventKind, FailureCategory, Mode, TargetSnapshot,
};

/// The reducer's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// No burst has started yet.
    Idle,
    /// A burst is open; no finalization permission yet.
    Recording,
    /// Permission to finalize was granted once; waiting for the authoritative final.
    Released,
    /// An authoritative final candidate is being gated. Transient: a `final_decode` step passes
    /// through it and ends in `StagedPending` or `Sealed`; it shows in [`Step::path`].
    FinalReady,
    /// Staged mode: the burst is over and reviewed chunks wait for an explicit commit or discard.
    StagedPending,
    /// The burst is over; nothing it produced can reach the target any more.
    Sealed,
}

impl Phase {
    /// The phase's snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Recording => "recording",
            Self::Released => "released",
            Self::FinalReady => "final_ready",
            Self::StagedPending => "staged_pending",
            Self::Sealed => "sealed",
        }
    }

    /// `true` while a burst is open and not yet finalized (recording, released, or the
    /// transient final_ready).
    pub fn is_open(self) -> bool {
        matches!(self, Self::Recording | Self::Released | Self::FinalReady)
    }
}

/// Why the reducer refused an event. A rejected event changes no state (only the step log
/// grows). These are decisions, not errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rejection {
    /// The event's `t_ms` is earlier than the previous event's.
    NonMonotonicTime,
    /// `hold_start` while a burst is open (rule 1).
    DuplicateStart,
    /// `hold_release`, `handsfree_stop` or `final_decode` before any burst was opened.
    NoOpenBurst,
    /// `hold_release` / `handsfree_stop` after permission was already granted (rule 4).
    RepeatedRelease,
    /// `hold_release` in hands-free mode, or `handsfree_stop` in hold mode.
    WrongStopControl,
    /// `hypothesis` outside an open burst (rule 7).
    HypothesisOutsideBurst,
    /// `final_decode` before the burst's release or stop (rule 8); never counted.
    FinalBeforeRelease,
    /// `final_decode` for a burst that already has its accepted final (rule 4).
    DuplicateFinal,
    /// `final_decode` after the burst was sealed without a final (decode failure) (rule 8).
    FinalAfterSeal,
    /// `final_decode` whose `decode_id` belongs to an earlier burst or was already consumed.
    StaleFinal,
    /// `late_partial`: never updates the preview, never writes (rule 7).
    LatePartialIgnored,
    /// `stage_commit` / `stage_discard` in a mode that is not staged.
    NotStaged,
    /// `stage_commit` / `stage_discard` with an empty review buffer.
    NothingStaged,
    /// `stage_commit` while the target is missing, lost or not editable; the chunks stay
    /// buffered (rule 6).
    TargetIneligible,
}

impl Rejection {
    /// A stable snake_case code.
    pub fn code(self) -> &'static str {
        match self {
            Self::NonMonotonicTime => "non_monotonic_time",
            Self::DuplicateStart => "duplicate_start",
            Self::NoOpenBurst => "no_open_burst",
            Self::RepeatedRelease => "repeated_release",
            Self::WrongStopControl => "wrong_stop_control",
            Self::HypothesisOutsideBurst => "hypothesis_outside_burst",
            Self::FinalBeforeRelease => "final_before_release",
            Self::DuplicateFinal => "duplicate_final",
            Self::FinalAfterSeal => "final_after_seal",
            Self::StaleFinal => "stale_final",
            Self::LatePartialIgnored => "late_partial_ignored",
            Self::NotStaged => "not_staged",
            Self::NothingStaged => "nothing_staged",
            Self::TargetIneligible => "target_ineligible",
        }
    }
}

/// Why an accepted final was not written in ordinary mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WithheldReason {
    /// The candidate is classified `command`: never written as text.
    CommandCandidate,
    /// The candidate is classified `unknown`: never written as text.
    UnknownCandidate,
    /// The final is empty or whitespace only.
    EmptyFinal,
    /// No target is known.
    NoTarget,
    /// The target was lost.
    TargetLost,
    /// The target is not editable.
    NotEditable,
    /// Focus or caret changed since the burst started.
    TargetChanged,
    /// The injection failed before any side effect.
    InjectFailed,
}

impl WithheldReason {
    /// A stable snake_case code.
    pub fn code(self) -> &'static str {
        match self {
            Self::CommandCandidate => "command_candidate",
            Self::UnknownCandidate => "unknown_candidate",
            Self::EmptyFinal => "empty_final",
            Self::NoTarget => "no_target",
            Self::TargetLost => "target_lost",
            Self::NotEditable => "not_editable",
            Self::TargetChanged => "target_changed",
            Self::InjectFailed => "inject_failed",
        }
    }
}

/// What an accepted event did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// A burst opened.
    BurstOpened,
    /// The private preview (and its stable prefix) changed; nothing was written.
    PreviewUpdated,
    /// A pause was recorded; permission is unchanged.
    PauseRecorded,
    /// Permission to finalize was granted.
    Released,
    /// The final was written to the target (ordinary mode).
    Written,
    /// The final was accepted but not written.
    Withheld(WithheldReason),
    /// The final was appended to the review buffer (staged mode).
    Staged,
    /// The review buffer was written to the target.
    Committed,
    /// The commit's injection failed before any effect; the chunks stay buffered.
    CommitFailed,
    /// The delivery may have had partial side effects; it is flagged and never replayed.
    Indeterminate,
    /// The review buffer was dropped.
    Discarded,
    /// The target snapshot changed.
    TargetUpdated,
    /// An injection fault was armed for the next injection attempt.
    FaultArmed,
    /// The decoder failed; the open burst ended without a final.
    BurstFailed,
    /// The target was lost.
    TargetLost,
    /// The event was recorded and had no effect (a failure with nothing to act on).
    Recorded,
}

impl Action {
    /// A stable snake_case code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BurstOpened => "burst_opened",
            Self::PreviewUpdated => "preview_updated",
            Self::PauseRecorded => "pause_recorded",
            Self::Released => "released",
            Self::Written => "written",
            Self::Withheld(_) => "withheld",
            Self::Staged => "staged",
            Self::Committed => "committed",
            Self::CommitFailed => "commit_failed",
            Self::Indeterminate => "indeterminate",
            Self::Discarded => "discarded",
            Self::TargetUpdated => "target_updated",
            Self::FaultArmed => "fault_armed",
            Self::BurstFailed => "burst_failed",
            Self::TargetLost => "target_lost",
            Self::Recorded => "recorded",
        }
    }
}

/// A step's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepOutcome {
    /// The event was accepted.
    Accepted(Action),
    /// The event was refused; no state changed.
    Rejected(Rejection),
}

/// The record of one applied event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// 0-based index of the event in the trace.
    pub event_index: usize,
    /// The event's time.
    pub t_ms: u64,
    /// The event's kind name.
    pub kind: &'static str,
    /// The burst current after the step (0 before the first burst).
    pub burst_id: u64,
    /// Phases visited: the phase before, any transient phase, and the phase after.
    pub path: Vec<Phase>,
    /// What happened.
    pub outcome: StepOutcome,
}

/// An external write operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteOp {
    /// Insert the write's text at the caret.
    Insert,
    /// Delete `chars` characters before the caret. The reducer never emits this; it exists so
    /// that [`crate::audit`] can judge logs from other implementations.
    Delete {
        /// Characters deleted.
        chars: u64,
    },
}

/// One entry of the external-writes log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalWrite {
    /// Index of the event that caused the write.
    pub event_index: usize,
    /// That event's time.
    pub t_ms: u64,
    /// The burst whose text is delivered.
    pub burst_id: u64,
    /// The operation.
    pub op: WriteOp,
    /// The text inserted (empty for a deletion).
    pub text: String,
    /// The target at the time of the write.
    pub target: TargetSnapshot,
}

/// A reviewed chunk waiting in the staged buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewChunk {
    /// The burst that produced it.
    pub burst_id: u64,
    /// Its text (nonempty).
    pub text: String,
}

/// A delivery whose side effects are unknown. It is flagged, never replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndeterminateDelivery {
    /// Index of the event whose injection failed after a partial effect.
    pub event_index: usize,
    /// The burst whose text was being delivered.
    pub burst_id: u64,
    /// The text that may be partly in the target.
    pub text: String,
}

/// An accepted authoritative final.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finalization {
    /// Index of the `final_decode` event.
    pub event_index: usize,
    /// Its time.
    pub t_ms: u64,
    /// The burst it finalized.
    pub burst_id: u64,
    /// The final text.
    pub text: String,
}

/// An accepted final that was not written, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Withheld {
    /// The burst.
    pub burst_id: u64,
    /// The final text.
    pub text: String,
    /// Why it was not written.
    pub reason: WithheldReason,
}

/// The pure replay reducer.
///
/// Holds phase, burst id, last hypothesis, LocalAgreement-2 stable prefix (informational),
/// target snapshot, review chunks and the external-writes log. [`ReplayState::apply`] is a pure
/// function of the state and one event: no clock, sleep, I/O or randomness.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayState {
    mode: Mode,
    phase: Phase,
    burst_id: u64,
    last_hypothesis: Option<String>,
    stable_prefix: String,
    stable_prefix_graphemes: String,
    target: Option<TargetSnapshot>,
    target_lost: bool,
    burst_target: Option<TargetSnapshot>,
    burst_target_changed: bool,
    paused_ms: u64,
    armed_fault: Option<FailureCategory>,
    review_chunks: Vec<ReviewChunk>,
    external_writes: Vec<ExternalWrite>,
    indeterminate: Vec<IndeterminateDelivery>,
    finalizations: Vec<Finalization>,
    withheld: Vec<Withheld>,
    decode_ids: BTreeMap<String, u64>,
    consumed_decode_ids: Vec<String>,
    last_t_ms: Option<u64>,
    events_seen: usize,
}

impl ReplayState {
    /// A fresh reducer in phase `idle`.
    pub fn new(mode: Mode) -> Self {
        Self {
            mode,
            phase: Phase::Idle,
            burst_id: 0,
            last_hypothesis: None,
            stable_prefix: String::new(),
            stable_prefix_graphemes: String::new(),
            target: None,
            target_lost: false,
            burst_target: None,
            burst_target_changed: false,
            paused_ms: 0,
            armed_fault: None,
            review_chunks: Vec::new(),
            external_writes: Vec::new(),
            indeterminate: Vec::new(),
            finalizations: Vec::new(),
            withheld: Vec::new(),
            decode_ids: BTreeMap::new(),
            consumed_decode_ids: Vec::new(),
            last_t_ms: None,
            events_seen: 0,
        }
    }

    /// The mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The current burst id (1 for the first burst, 0 before any).
    pub fn burst_id(&self) -> u64 {
        self.burst_id
    }

    /// The open burst's last hypothesis (the private preview).
    pub fn last_hypothesis(&self) -> Option<&str> {
        self.last_hypothesis.as_deref()
    }

    /// The word-based LocalAgreement-2 prefix of the last two hypotheses. Informational only.
    pub fn stable_prefix(&self) -> &str {
        &self.stable_prefix
    }

    /// The grapheme-based LocalAgreement-2 prefix of the last two hypotheses.
    pub fn stable_prefix_graphemes(&self) -> &str {
        &self.stable_prefix_graphemes
    }

    /// The current target snapshot (`None` when unknown or lost).
    pub fn target(&self) -> Option<&TargetSnapshot> {
        self.target.as_ref()
    }

    /// The reviewed chunks waiting for an explicit commit or discard.
    pub fn review_chunks(&self) -> &[ReviewChunk] {
        &self.review_chunks
    }

    /// Every external write, in order.
    pub fn external_writes(&self) -> &[ExternalWrite] {
        &self.external_writes
    }

    /// Deliveries flagged indeterminate.
    pub fn indeterminate(&self) -> &[IndeterminateDelivery] {
        &self.indeterminate
    }

    /// Accepted finalizations.
    pub fn finalizations(&self) -> &[Finalization] {
        &self.finalizations
    }

    /// Accepted finals that were not written.
    pub fn withheld(&self) -> &[Withheld] {
        &self.withheld
    }

    /// Total pause time recorded in the current burst.
    pub fn paused_ms(&self) -> u64 {
        self.paused_ms
    }

    /// An injection fault armed for the next injection attempt.
    pub fn armed_fault(&self) -> Option<FailureCategory> {
        self.armed_fault
    }

    /// Number of events applied (accepted or rejected).
    pub fn events_seen(&self) -> usize {
        self.events_seen
    }

    /// Applies one event and returns the step record. A rejected event changes nothing but
    /// the event counter.
    pub fn apply(&mut self, event: &Event) -> Step {
        let event_index = self.events_seen;
        self.events_seen += 1;
        let from = self.phase;
        let mut path = vec![from];
        let outcome = match self.last_t_ms {
            Some(prev) if event.t_ms < prev => StepOutcome::Rejected(Rejection::NonMonotonicTime),
            _ => match self.reduce(event_index, event, &mut path) {
                Ok(action) => {
                    self.last_t_ms = Some(event.t_ms);
                    StepOutcome::Accepted(action)
                }
                Err(rejection) => StepOutcome::Rejected(rejection),
            },
        };
        if path.last() != Some(&self.phase) {
            path.push(self.phase);
        }
        Step {
            event_index,
            t_ms: event.t_ms,
            kind: event.kind.name(),
            burst_id: self.burst_id,
            path,
            outcome,
        }
    }

    /// Every branch either returns `Err` before mutating anything, or mutates and returns `Ok`.
    fn reduce(
        &mut self,
        event_index: usize,
        event: &Event,
        path: &mut Vec<Phase>,
    ) -> Result<Action, Rejection> {
        let t_ms = event.t_ms;
        match &event.kind {
            // Rule 1.
            EventKind::HoldStart { .. } => {
                if self.phase.is_open() {
                    return Err(Rejection::DuplicateStart);
                }
                self.burst_id += 1;
                self.phase = Phase::Recording;
                self.last_hypothesis = None;
                self.stable_prefix.clear();
                self.stable_prefix_graphemes.clear();
                self.burst_target = self.target.clone();
                self.burst_target_changed = false;
                self.paused_ms = 0;
                Ok(Action::BurstOpened)
            }
            // Rule 2: the preview is private; no write in any mode.
            EventKind::Hypothesis { text, decode_id } => {
                if !matches!(self.phase, Phase::Recording | Phase::Released) {
                    return Err(Rejection::HypothesisOutsideBurst);
                }
                if let Some(prev) = &self.last_hypothesis {
                    self.stable_prefix = stable_prefix(prev, text, AgreementUnit::Word).to_owned();
                    self.stable_prefix_graphemes =
                        stable_prefix(prev, text, AgreementUnit::Grapheme).to_owned();
                }
                if let Some(id) = decode_id {
                    self.decode_ids.entry(id.clone()).or_insert(self.burst_id);
                }
                self.last_hypothesis = Some(text.clone());
                Ok(Action::PreviewUpdated)
            }
            // Rule 3.
            EventKind::Pause { duration_ms } => {
                if self.phase.is_open() {
                    self.paused_ms = self.paused_ms.saturating_add(*duration_ms);
                }
                Ok(Action::PauseRecorded)
            }
            // Rule 4.
            EventKind::HoldRelease | EventKind::HandsfreeStop => {
                let wanted = match event.kind {
                    EventKind::HoldRelease => Activation::Hold,
                    _ => Activation::Handsfree,
                };
                if self.mode.activation != wanted {
                    return Err(Rejection::WrongStopControl);
                }
                match self.phase {
                    Phase::Recording => {
                        self.phase = Phase::Released;
                        Ok(Action::Released)
                    }
                    Phase::Idle => Err(Rejection::NoOpenBurst),
                    _ => Err(Rejection::RepeatedRelease),
                }
            }
            // Rules 4, 5, 8.
            EventKind::FinalDecode {
                text,
                decode_id,
                class,
            } => {
                match self.phase {
                    Phase::Recording => return Err(Rejection::FinalBeforeRelease),
                    Phase::Idle => return Err(Rejection::NoOpenBurst),
                    Phase::Released => {}
                    _ => {
                        let has_final = self
                            .finalizations
                            .last()
                            .is_some_and(|f| f.burst_id == self.burst_id);
                        return Err(if has_final {
                            Rejection::DuplicateFinal
                        } else {
                            Rejection::FinalAfterSeal
                        });
                    }
                }
                if let Some(id) = decode_id {
                    let foreign = self.decode_ids.get(id).is_some_and(|&b| b != self.burst_id);
                    if foreign || self.consumed_decode_ids.contains(id) {
                        return Err(Rejection::StaleFinal);
                    }
                    self.consumed_decode_ids.push(id.clone());
                    self.decode_ids.insert(id.clone(), self.burst_id);
                }
                self.phase = Phase::FinalReady;
                path.push(Phase::FinalReady);
                self.finalizations.push(Finalization {
                    event_index,
                    t_ms,
                    burst_id: self.burst_id,
                    text: text.clone(),
                });
                Ok(self.gate_final(event_index, t_ms, text, *class))
            }
            // Rule 7: a focus or caret change invalidates assumptions about the open burst.
            EventKind::Target(snapshot) => {
                if self.phase.is_open() {
                    match &self.burst_target {
                        None => self.burst_target = Some(snapshot.clone()),
                        Some(b) => {
                            if b.focus_id != snapshot.focus_id
                                || b.caret_version != snapshot.caret_version
                            {
                                self.burst_target_changed = true;
                            }
                        }
                    }
                }
                self.target = Some(snapshot.clone());
                self.target_lost = false;
                Ok(Action::TargetUpdated)
            }
            // Rule 6.
            EventKind::StageCommit => {
                if !self.mode.staged {
                    return Err(Rejection::NotStaged);
                }
                if self.review_chunks.is_empty() {
                    return Err(Rejection::NothingStaged);
                }
                let target = match &self.target {
                    Some(t) if t.editable && !self.target_lost => t.clone(),
                    _ => return Err(Rejection::TargetIneligible),
                };
                let action = match self.armed_fault.take() {
                    Some(FailureCategory::InjectBeforeEffect) => Action::CommitFailed,
                    Some(FailureCategory::InjectAfterPartialEffect) => {
                        for chunk in self.review_chunks.drain(..) {
                            self.indeterminate.push(IndeterminateDelivery {
                                event_index,
                                burst_id: chunk.burst_id,
                                text: chunk.text,
                            });
                        }
                        Action::Indeterminate
                    }
                    _ => {
                        for chunk in self.review_chunks.drain(..) {
                            self.external_writes.push(ExternalWrite {
                                event_index,
                                t_ms,
                                burst_id: chunk.burst_id,
                                op: WriteOp::Insert,
                                text: chunk.text,
                                target: target.clone(),
                            });
                        }
                        Action::Committed
                    }
                };
                if self.review_chunks.is_empty() && self.phase == Phase::StagedPending {
                    self.phase = Phase::Sealed;
                }
                Ok(action)
            }
            EventKind::StageDiscard => {
                if !self.mode.staged {
                    return Err(Rejection::NotStaged);
                }
                if self.review_chunks.is_empty() {
                    return Err(Rejection::NothingStaged);
                }
                self.review_chunks.clear();
                if self.phase == Phase::StagedPending {
                    self.phase = Phase::Sealed;
                }
                Ok(Action::Discarded)
            }
            // Rule 7.
            EventKind::LatePartial { .. } => Err(Rejection::LatePartialIgnored),
            // Rule 8 and the failure categories.
            EventKind::Failure { category } => match category {
                FailureCategory::Decode => {
                    if self.phase.is_open() {
                        self.phase = Phase::Sealed;
                        Ok(Action::BurstFailed)
                    } else {
                        Ok(Action::Recorded)
                    }
                }
                FailureCategory::InjectBeforeEffect | FailureCategory::InjectAfterPartialEffect => {
                    self.armed_fault = Some(*category);
                    Ok(Action::FaultArmed)
                }
                FailureCategory::TargetLost => {
                    if self.phase.is_open() {
                        // Lost mid-burst: whatever target shows up next is not the one the
                        // burst was aimed at. A loss before the burst started is not a move:
                        // the burst starts without a target and takes the next one as its own.
                        self.burst_target_changed = true;
                    }
                    self.target = None;
                    self.target_lost = true;
                    Ok(Action::TargetLost)
                }
            },
        }
    }

    /// Rule 5: an accepted final is a candidate; gate it.
    fn gate_final(
        &mut self,
        event_index: usize,
        t_ms: u64,
        text: &str,
        class: CandidateClass,
    ) -> Action {
        // Classification first: a command or an undecided candidate is never text, in either
        // mode (a staged chunk is text waiting to be written, so it is not staged either).
        let not_text = match class {
            CandidateClass::Dictation => None,
            CandidateClass::Command => Some(WithheldReason::CommandCandidate),
            CandidateClass::Unknown => Some(WithheldReason::UnknownCandidate),
        };
        if let Some(reason) = not_text {
            self.phase = Phase::Sealed;
            return self.withhold(text, reason);
        }
        if text.trim().is_empty() {
            self.phase = Phase::Sealed;
            return self.withhold(text, WithheldReason::EmptyFinal);
        }
        if self.mode.staged {
            self.review_chunks.push(ReviewChunk {
                burst_id: self.burst_id,
                text: text.to_owned(),
            });
            self.phase = Phase::StagedPending;
            return Action::Staged;
        }
        self.phase = Phase::Sealed;
        let target = match &self.target {
            _ if self.target_lost => return self.withhold(text, WithheldReason::TargetLost),
            None => return self.withhold(text, WithheldReason::NoTarget),
            Some(t) if !t.editable => return self.withhold(text, WithheldReason::NotEditable),
            Some(_) if self.burst_target_changed => {
                return self.withhold(text, WithheldReason::TargetChanged);
            }
            Some(t) => t.clone(),
        };
        match self.armed_fault.take() {
            Some(FailureCategory::InjectBeforeEffect) => {
                self.withhold(text, WithheldReason::InjectFailed)
            }
            Some(FailureCategory::InjectAfterPartialEffect) => {
                self.indeterminate.push(IndeterminateDelivery {
                    event_index,
                    burst_id: self.burst_id,
                    text: text.to_owned(),
                });
                Action::Indeterminate
            }
            _ => {
                self.external_writes.push(ExternalWrite {
                    event_index,
                    t_ms,
                    burst_id: self.burst_id,
                    op: WriteOp::Insert,
                    text: text.to_owned(),
                    target,
                });
                Action::Written
            }
        }
    }

    fn withhold(&mut self, text: &str, reason: WithheldReason) -> Action {
        self.withheld.push(Withheld {
            burst_id: self.burst_id,
            text: text.to_owned(),
            reason,
        });
        Action::Withheld(reason)
    }
}
