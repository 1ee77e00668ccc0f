//! Deterministic streaming-commit replay oracle: provisional ASR hypotheses to safe external
//! writes.
//!
//! Voice cascades deliver provisional ASR text into other applications; the dangerous moment
//! is the boundary between a provisional hypothesis and an external write. This crate replays
//! synthetic traces of that boundary through a pure reducer that implements the commit-safety
//! rules of `spec/COMMIT-REPLAY.md`, audits the resulting external-writes log with an
//! independent second judge, and measures live-preview quality. Nothing here reads a clock,
//! sleeps, performs I/O or draws randomness; parsing takes bytes.
//!
//! The public interface is:
//! - [`parse_fixtures`], [`parse_record`], [`Fixture`], [`Event`], [`EventKind`], [`Mode`],
//!   [`Activation`], [`CandidateClass`], [`FailureCategory`], [`TargetSnapshot`], [`Expect`]:
//!   fixture schema v1;
//! - [`ReplayState`], [`Phase`], [`Step`], [`StepOutcome`], [`Action`], [`Rejection`],
//!   [`ExternalWrite`], [`WriteOp`], [`ReviewChunk`], [`IndeterminateDelivery`],
//!   [`Finalization`], [`Withheld`], [`WithheldReason`]: the pure reducer (rules 1-8);
//! - [`stable_prefix`], [`AgreementUnit`]: LocalAgreement-2, which never grants a write, and
//!   the preview helpers [`retracted_chars`], [`incorrect_graphemes`];
//! - [`audit`], [`AuditInput`], [`SafetyCounts`], [`preview_metrics`], [`PreviewMetrics`],
//!   [`latency_metrics`], [`LatencyMetrics`], [`nearest_rank_percentile`], [`script_class`],
//!   [`trace_script_class`], [`ScriptClass`]: metrics;
//! - [`replay_fixture`], [`replay_corpus`], [`CorpusReport`], [`FileReport`],
//!   [`FixtureReport`], [`CorpusTotals`], [`ScriptTotals`], [`Provenance`],
//!   [`RULE_SET_VERSION`], [`REPORT_SCHEMA`]: the entry point the `jouleclaw replay` command
//!   calls, and its reproducible report;
//! - [`run_adapter`], [`Adapter`], [`AdapterWrite`], [`AdapterReport`]: the seam that judges
//!   another implementation's writes against a fixture;
//! - [`encode_event`], [`event_json`], [`encode_observed_write`], [`decode_marker`],
//!   [`ReplayRecord`], [`MARKER_PREFIX`]: replay records on the control channel;
//! - [`CommitSafetyOracle`], [`COMMIT_SAFETY_ORACLE_NAME`]: the reducer as a
//!   `jouleclaw_stream_oracle::StreamOracle`;
//! - [`ReplayError`], [`Result`]: every refusal, with a stable code.
//!
//! ```
//! use jouleclaw_replay::*;
//!
//! let line = r#"{"id":"single","description":"one hold burst","mode":{"activation":"hold","staged":false,"streaming":true},"events":[{"t_ms":0,"kind":"target","focus_id":"f1","caret_version":1,"editable":true},{"t_ms":10,"kind":"hold_start"},{"t_ms":300,"kind":"hypothesis","text":"alpha"},{"t_ms":500,"kind":"hold_release"},{"t_ms":700,"kind":"final_decode","text":"alpha bravo"}],"expect":{"target_writes":["alpha bravo"],"staged_chunks":[],"finalizations":1,"no_pre_release_writes":true,"no_forbidden_deletions":true}}"#;
//! let report = replay_corpus(&[("single.jsonl".to_owned(), line.as_bytes().to_vec())]);
//! assert!(report.all_expectations_hold());
//! assert_eq!(report.totals.passed, 1);
//!
//! // The reducer itself, one event at a time.
//! let fixture = &parse_fixtures(line.as_bytes())?[0];
//! let mut state = ReplayState::new(fixture.mode);
//! for event in &fixture.events {
//!     state.apply(event);
//! }
//! assert_eq!(state.phase(), Phase::Sealed);
//! assert_eq!(state.external_writes()[0].text, "alpha bravo");
//! # Ok::<(), ReplayError>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

mod adapter;
mod agreement;
mod audit;
mod corpus;
mod error;
mod fixture;
mod marker;
mod metrics;
mod oracle;
mod reducer;

pub use adapter::{Adapter, AdapterReport, AdapterWrite, run_adapter};
pub use agreement::{AgreementUnit, incorrect_graphemes, retracted_chars, stable_prefix};
pub use audit::{AuditInput, PreviewMetrics, SafetyCounts, audit, preview_metrics};
pub use corpus::{
    CorpusReport, CorpusTotals, FileReport, FixtureReport, Provenance, REPORT_SCHEMA,
    RULE_SET_VERSION, ScriptTotals, replay_corpus, replay_fixture,
};
pub use error::{ReplayError, Result};
pub use fixture::{
    Activation, CandidateClass, Event, EventKind, Expect, FailureCategory, Fixture, Mode,
    TargetSnapshot, parse_fixtures, parse_record,
};
pub use marker::{
    MARKER_PREFIX, ReplayRecord, decode_marker, encode_event, encode_observed_write, event_json,
};
pub use metrics::{
    LatencyMetrics, ScriptClass, latency_metrics, nearest_rank_percentile, script_class,
    trace_script_class,
};
pub use oracle::{COMMIT_SAFETY_ORACLE_NAME, CommitSafetyOracle};
pub use reducer::{
    Action, ExternalWrite, Finalization, IndeterminateDelivery, Phase, Rejection, ReplayState,
    ReviewChunk, Step, StepOutcome, Withheld, WithheldReason, WriteOp,
};
