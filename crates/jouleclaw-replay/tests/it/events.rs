//! Event builders and a driver shared by the rule, classification and metrics tests.

use jouleclaw_replay::*;

pub(crate) fn ordinary() -> Mode {
    Mode {
        activation: Activation::Hold,
        staged: false,
        streaming: true,
    }
}

pub(crate) fn staged() -> Mode {
    Mode {
        staged: true,
        ..ordinary()
    }
}

pub(crate) fn ev(t_ms: u64, kind: EventKind) -> Event {
    Event { t_ms, kind }
}
pub(crate) fn start(t: u64) -> Event {
    ev(
        t,
        EventKind::HoldStart {
            duration_ms: None,
            energy_band: None,
        },
    )
}
pub(crate) fn hyp(t: u64, s: &str) -> Event {
    ev(
        t,
        EventKind::Hypothesis {
            text: s.into(),
            decode_id: None,
        },
    )
}
pub(crate) fn fin(t: u64, s: &str) -> Event {
    ev(
        t,
        EventKind::FinalDecode {
            text: s.into(),
            decode_id: None,
            class: CandidateClass::Dictation,
        },
    )
}
pub(crate) fn fin_id(t: u64, s: &str, id: &str) -> Event {
    ev(
        t,
        EventKind::FinalDecode {
            text: s.into(),
            decode_id: Some(id.into()),
            class: CandidateClass::Dictation,
        },
    )
}
pub(crate) fn release(t: u64) -> Event {
    ev(t, EventKind::HoldRelease)
}
pub(crate) fn target(t: u64, focus: &str, caret: u64, editable: bool) -> Event {
    ev(
        t,
        EventKind::Target(TargetSnapshot {
            focus_id: focus.into(),
            caret_version: caret,
            editable,
        }),
    )
}
pub(crate) fn failure(t: u64, category: FailureCategory) -> Event {
    ev(t, EventKind::Failure { category })
}

pub(crate) fn run(mode: Mode, events: &[Event]) -> (ReplayState, Vec<Step>) {
    let mut s = ReplayState::new(mode);
    let steps = events.iter().map(|e| s.apply(e)).collect();
    (s, steps)
}

pub(crate) fn writes(s: &ReplayState) -> Vec<&str> {
    s.external_writes()
        .iter()
        .map(|w| w.text.as_str())
        .collect()
}

pub(crate) fn rejected(step: &Step) -> Option<Rejection> {
    match step.outcome {
        StepOutcome::Rejected(r) => Some(r),
        StepOutcome::Accepted(_) => None,
    }
}
