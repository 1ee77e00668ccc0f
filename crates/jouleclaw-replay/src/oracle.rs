//! The commit-safety stream oracle: replay records on the control channel drive the reducer.

use jouleclaw_stream::{ChannelDirection, StreamWindow, Tick, duplex};
use jouleclaw_stream_oracle::{StreamOracle, WindowContext, WindowVerdict};

use crate::audit::{AuditInput, audit};
use crate::fixture::{Event, Mode};
use crate::marker::{ReplayRecord, decode_marker};
use crate::reducer::{Rejection, ReplayState, Step, StepOutcome};

/// The oracle's stable name: `"commit-safety"`.
pub const COMMIT_SAFETY_ORACLE_NAME: &str = "commit-safety";

/// A [`StreamOracle`] that feeds the replay records carried on the control channel
/// ([`duplex::CONTROL`], see [`crate::encode_event`]) to a [`ReplayState`] and judges each
/// window:
///
/// - **Fail** when, in this window, a replay marker could not be decoded (including a
///   `replay/` marker with a damaged prefix or unknown version), a replay record arrived with
///   a `t_ms` earlier than its predecessor's, the system under test reported an external write ([`crate::encode_observed_write`]) that the reducer had
///   not authorized (wrong text, wrong order, or more writes than authorized), or the audit of
///   the reducer's own log found a safety violation;
/// - otherwise **NeedMore** while a burst is open and not finalized (recording or released);
/// - otherwise **Pass**.
///
/// Records are applied in tick push order, once each: a window's records already applied by
/// [`StreamOracle::on_tick`] are skipped by [`StreamOracle::judge`], so `judge` sees the whole
/// window whether or not `on_tick` was called. Replay-prefixed markers on other channels and
/// every other tick are ignored. The tick's `ts_ns` is not consulted; time is the record's
/// `t_ms`. Pure: no clock, I/O or randomness.
#[derive(Debug, Clone)]
pub struct CommitSafetyOracle {
    state: ReplayState,
    events: Vec<Event>,
    steps: Vec<Step>,
    observed: usize,
    violations: Vec<(u64, String)>,
    /// `(window_id, replay records of that window applied so far)`.
    applied: (u64, usize),
    audits: u64,
}

impl CommitSafetyOracle {
    /// An oracle for a session in `mode`, starting idle.
    pub fn new(mode: Mode) -> Self {
        Self {
            state: ReplayState::new(mode),
            events: Vec::new(),
            steps: Vec::new(),
            observed: 0,
            violations: Vec::new(),
            applied: (0, 0),
            audits: 0,
        }
    }

    /// How many times the full safety audit has run: once per replay record that changed a
    /// log the audit judges, never once per record.
    pub fn audits_run(&self) -> u64 {
        self.audits
    }

    /// The reducer state.
    pub fn state(&self) -> &ReplayState {
        &self.state
    }

    /// The step log so far.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Observed writes matched against authorized writes so far.
    pub fn observed_writes(&self) -> usize {
        self.observed
    }

    fn is_replay_tick(tick: &Tick) -> bool {
        tick.channel_id == duplex::CONTROL
            && tick
                .kind
                .marker()
                .is_some_and(|m| decode_marker(m).is_some())
    }

    /// Applies one replay tick; returns a violation reason, if any.
    fn apply_tick(&mut self, tick: &Tick) -> Option<String> {
        let marker = tick.kind.marker()?;
        let record = match decode_marker(marker)? {
            Ok(r) => r,
            Err(e) => return Some(format!("{} ({})", e, e.code())),
        };
        match record {
            ReplayRecord::Event(event) => {
                let before = self.log_sizes();
                let step = self.state.apply(&event);
                // Out of order is a damaged control stream, not a policy decision: the
                // reducer refuses the record (so it cannot write), and the window fails.
                let out_of_order = (step.outcome
                    == StepOutcome::Rejected(Rejection::NonMonotonicTime))
                .then(|| {
                    format!(
                        "replay record {} ({}) at t_ms {} is earlier than the previous record",
                        step.event_index, step.kind, step.t_ms
                    )
                });
                self.events.push(event);
                self.steps.push(step);
                if let Some(reason) = out_of_order {
                    return Some(reason);
                }
                // The audit's counts depend only on the logs below and the events before
                // their entries, so an event that changed none of them cannot change them.
                if self.log_sizes() == before {
                    return None;
                }
                self.audits += 1;
                let writes = self.state.external_writes();
                let safety = audit(&AuditInput {
                    mode: self.state.mode(),
                    events: &self.events,
                    steps: &self.steps,
                    writes,
                    finalizations: self.state.finalizations(),
                    indeterminate: self.state.indeterminate(),
                    review_chunks: self.state.review_chunks(),
                });
                (!safety.is_clean()).then(|| format!("reducer audit found {safety:?}"))
            }
            ReplayRecord::ObservedWrite { t_ms, text } => {
                let authorized = self.state.external_writes();
                match authorized.get(self.observed) {
                    Some(w) if w.text == text => {
                        self.observed += 1;
                        None
                    }
                    Some(w) => Some(format!(
                        "observed write {} at t_ms {t_ms} is {text:?}, but the authorized write is {:?}",
                        self.observed + 1,
                        w.text
                    )),
                    None => Some(format!(
                        "observed write {} at t_ms {t_ms} ({text:?}) is not authorized: {} write(s) authorized",
                        self.observed + 1,
                        authorized.len()
                    )),
                }
            }
        }
    }

    /// Lengths of the reducer logs the audit judges.
    fn log_sizes(&self) -> [usize; 4] {
        [
            self.state.external_writes().len(),
            self.state.finalizations().len(),
            self.state.indeterminate().len(),
            self.state.review_chunks().len(),
        ]
    }

    fn note_applied(&mut self, window_id: u64) -> usize {
        if self.applied.0 != window_id {
            self.applied = (window_id, 0);
        }
        self.applied.1 += 1;
        self.applied.1
    }
}

impl StreamOracle for CommitSafetyOracle {
    fn name(&self) -> &str {
        COMMIT_SAFETY_ORACLE_NAME
    }

    fn on_tick(&mut self, tick: &Tick, direction: ChannelDirection) -> Option<WindowVerdict> {
        let _ = direction;
        if !Self::is_replay_tick(tick) {
            return None;
        }
        self.note_applied(tick.window_id);
        let reason = self.apply_tick(tick)?;
        self.violations.push((tick.window_id, reason.clone()));
        Some(WindowVerdict::fail(COMMIT_SAFETY_ORACLE_NAME, reason))
    }

    fn judge(&mut self, window: &StreamWindow, ctx: &WindowContext) -> WindowVerdict {
        let _ = ctx;
        let id = window.window_id();
        let already = if self.applied.0 == id {
            self.applied.1
        } else {
            0
        };
        for tick in window
            .ticks()
            .iter()
            .filter(|t| Self::is_replay_tick(t))
            .skip(already)
        {
            self.note_applied(id);
            if let Some(reason) = self.apply_tick(tick) {
                self.violations.push((id, reason));
            }
        }
        let (due, later): (Vec<_>, Vec<_>) = self.violations.drain(..).partition(|(w, _)| *w <= id);
        self.violations = later;
        if !due.is_empty() {
            let reasons: Vec<String> = due.into_iter().map(|(_, r)| r).collect();
            return WindowVerdict::fail(COMMIT_SAFETY_ORACLE_NAME, reasons.join("; "));
        }
        let phase = self.state.phase();
        if phase.is_open() {
            return WindowVerdict::need_more(
                COMMIT_SAFETY_ORACLE_NAME,
                format!(
                    "burst {} is open in phase {} and not finalized",
                    self.state.burst_id(),
                    phase.as_str()
                ),
            );
        }
        WindowVerdict::pass_by(COMMIT_SAFETY_ORACLE_NAME)
    }
}
