//! The adapter seam: judge another implementation's external writes against a fixture
//! (`spec/COMMIT-REPLAY.md` section 6).
//!
//! An [`Adapter`] stands for a system under test (an injector, say): it sees each event of a
//! fixture in order and reports the writes it made to the target in reaction. [`run_adapter`]
//! attributes each write to the event that caused it, audits the resulting log with the same
//! [`crate::audit`] that judges the oracle's own log, and compares it with the fixture's
//! expectations. A `known_defect` fixture documents a defect class; it goes red only when an
//! adapter that has the defect is run through this seam.

use crate::audit::{AuditInput, SafetyCounts, audit};
use crate::fixture::{Event, Fixture, Mode, TargetSnapshot};
use crate::reducer::{ExternalWrite, ReplayState, Step, WriteOp};

/// One write an adapter reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterWrite {
    /// The operation.
    pub op: WriteOp,
    /// The inserted text (empty for a deletion).
    pub text: String,
}

/// A system under test, driven one fixture event at a time.
pub trait Adapter {
    /// Reacts to `event` (the trace runs in `mode`) and returns the writes made to the target
    /// because of it, in order.
    fn on_event(&mut self, mode: Mode, event: &Event) -> Vec<AdapterWrite>;
}

/// The verdict on one adapter run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdapterReport {
    /// The fixture id.
    pub id: String,
    /// The adapter's writes, attributed to their causing events.
    pub writes: Vec<ExternalWrite>,
    /// Texts of the adapter's inserts, in order.
    pub target_writes: Vec<String>,
    /// The audit of the adapter's log.
    pub safety: SafetyCounts,
    /// Each fixture expectation the adapter does not meet, described.
    pub mismatches: Vec<String>,
}

impl AdapterReport {
    /// `true` when the adapter breaks the fixture: an expectation does not hold, or a safety
    /// count is not zero.
    pub fn violates_fixture(&self) -> bool {
        !self.mismatches.is_empty() || !self.safety.is_clean()
    }
}

/// Runs `adapter` over `fixture` and judges its writes.
///
/// Each write is attributed to the event the adapter was reacting to, to that event's burst
/// (as the reducer numbers bursts) and to the target the raw events describe after it (a write
/// with no known target is recorded against an empty, non-editable focus, which the audit
/// counts as ineligible). The audit takes burst membership, finalizations, indeterminate
/// deliveries and the review buffer from the oracle's own reduction, exactly as for the
/// oracle's log. Expectations checked: `target_writes` (the adapter's insert texts),
/// `no_pre_release_writes` and `no_forbidden_deletions`; the review buffer and finalizations
/// are the oracle's own and are not observable through the seam. Pure when the adapter is.
pub fn run_adapter(fixture: &Fixture, adapter: &mut dyn Adapter) -> AdapterReport {
    let mut state = ReplayState::new(fixture.mode);
    let mut steps: Vec<Step> = Vec::with_capacity(fixture.events.len());
    let mut writes = Vec::new();
    for event in &fixture.events {
        let step = state.apply(event);
        let target = state.target().cloned().unwrap_or(TargetSnapshot {
            focus_id: String::new(),
            caret_version: 0,
            editable: false,
        });
        for w in adapter.on_event(fixture.mode, event) {
            writes.push(ExternalWrite {
                event_index: step.event_index,
                t_ms: event.t_ms,
                burst_id: step.burst_id,
                op: w.op,
                text: w.text,
                target: target.clone(),
            });
        }
        steps.push(step);
    }
    let safety = audit(&AuditInput {
        mode: fixture.mode,
        events: &fixture.events,
        steps: &steps,
        writes: &writes,
        finalizations: state.finalizations(),
        indeterminate: state.indeterminate(),
        review_chunks: state.review_chunks(),
    });
    let target_writes: Vec<String> = writes
        .iter()
        .filter(|w| w.op == WriteOp::Insert)
        .map(|w| w.text.clone())
        .collect();
    let x = &fixture.expect;
    let mut m = crate::corpus::Mismatches::default();
    m.check("target_writes", &x.target_writes, &target_writes);
    let mut mismatches = m.0;
    if (safety.pre_release_writes == 0) != x.no_pre_release_writes {
        mismatches.push(format!(
            "no_pre_release_writes: expected {}, got {} pre-release write(s)",
            x.no_pre_release_writes, safety.pre_release_writes
        ));
    }
    if (safety.forbidden_deletions == 0) != x.no_forbidden_deletions {
        mismatches.push(format!(
            "no_forbidden_deletions: expected {}, got {} forbidden deletion(s)",
            x.no_forbidden_deletions, safety.forbidden_deletions
        ));
    }
    AdapterReport {
        id: fixture.id.clone(),
        writes,
        target_writes,
        safety,
        mismatches,
    }
}
