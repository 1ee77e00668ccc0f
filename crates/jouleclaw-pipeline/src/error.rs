//! The crate's one error type.

use core::fmt;

use jouleclaw_jcr1::Jcr1Error;
use jouleclaw_seal::SealError;
use jouleclaw_stream::StreamError;

/// Every failure of the pipeline and of the trace and spec formats. [`PipelineError::code`] is
/// stable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PipelineError {
    /// The stream layer refused a tick, a spec or a ledger policy.
    Stream(StreamError),
    /// Minting or signing a receipt failed.
    Receipt(Jcr1Error),
    /// A tick belongs to a window older than the one being filled (or already closed).
    WindowRegressed {
        /// The newest window the pipeline has seen.
        current: u64,
        /// The tick's window.
        got: u64,
    },
    /// The stream has ended ([`crate::Pipeline::finish`]); nothing more is accepted.
    Finished,
    /// A [`crate::SigningPolicy::Checkpoint`] with `every_windows` or `max_windows` of 0.
    BadSigningPolicy,
    /// Sealing failed (the stream's log is full, say).
    Seal(SealError),
    /// An earlier failure while closing a window, or a stage tick the window refused, left the
    /// pipeline unusable.
    Poisoned,
    /// A tick a stage produced was refused by its window (a full window, a timestamp outside it,
    /// a channel the spec lacks). The tick that fed the stage stays accepted, so the stream's
    /// record would miss the produced tick: the pipeline is poisoned rather than going on with
    /// a record that is not whole.
    StageTickRefused {
        /// The stage that produced the tick.
        stage: String,
        /// Why the window refused it.
        error: StreamError,
    },
    /// A trace line is not valid UTF-8.
    TraceNotUtf8,
    /// A trace line is longer than [`max_trace_line_len`](crate::trace::max_trace_line_len).
    TraceLineTooLong {
        /// The limit, in bytes.
        max: usize,
    },
    /// A trace line is not a JSON object of the trace schema (syntax, a field of the wrong
    /// type, a missing or unknown field).
    TraceJson {
        /// What the JSON reader reported.
        detail: String,
    },
    /// `kind` is not `audio`, `text`, `video` or `marker`.
    TraceKind {
        /// The kind given.
        kind: String,
    },
    /// `marker` is missing on a marker, present on a payload tick, or not a known marker.
    TraceMarker {
        /// What is wrong.
        detail: String,
    },
    /// The payload fields are wrong: both or neither of `bytes_hex` and `bytes_len` on a
    /// payload tick, hex that is not lowercase and even, or a `bytes_len` above the spec's
    /// `max_chunk_bytes`.
    TracePayload {
        /// What is wrong.
        detail: String,
    },
    /// A stream spec file is not a spec of the documented shape.
    SpecJson {
        /// What is wrong.
        detail: String,
    },
    /// An internal invariant did not hold: a bug in this crate, never a property of the input.
    /// The pipeline is unusable afterwards.
    Internal {
        /// The invariant that failed.
        invariant: &'static str,
    },
}

impl PipelineError {
    /// A stable code naming the rule that refused. Stream and receipt failures keep their
    /// crate's code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Stream(e) => e.code(),
            Self::Receipt(e) => e.code(),
            Self::WindowRegressed { .. } => "trace_window_regressed",
            Self::Poisoned => "pipeline_poisoned",
            Self::Finished => "pipeline_finished",
            Self::BadSigningPolicy => "pipeline_bad_signing_policy",
            Self::Seal(e) => e.code(),
            Self::StageTickRefused { .. } => "stage_tick_refused",
            Self::TraceNotUtf8 => "trace_not_utf8",
            Self::TraceLineTooLong { .. } => "trace_line_too_long",
            Self::TraceJson { .. } => "trace_bad_json",
            Self::TraceKind { .. } => "trace_unknown_kind",
            Self::TraceMarker { .. } => "trace_bad_marker",
            Self::TracePayload { .. } => "trace_bad_payload",
            Self::SpecJson { .. } => "spec_bad_json",
            Self::Internal { .. } => "pipeline_internal",
        }
    }
}

impl fmt::Display for PipelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Stream(e) => write!(f, "{e}"),
            Self::Receipt(e) => write!(f, "{e}"),
            Self::WindowRegressed { current, got } => write!(
                f,
                "tick of window {got} arrived after window {current}; windows only move forward"
            ),
            Self::Poisoned => f.write_str("the pipeline failed earlier and accepts nothing more"),
            Self::Finished => f.write_str("the stream has ended and accepts nothing more"),
            Self::BadSigningPolicy => {
                f.write_str("a checkpoint policy needs every_windows and max_windows of at least 1")
            }
            Self::Seal(e) => write!(f, "{e}"),
            Self::StageTickRefused { stage, error } => write!(
                f,
                "stage {stage:?} produced a tick its window refused ({}): {error}",
                error.code()
            ),
            Self::TraceNotUtf8 => f.write_str("trace line is not valid UTF-8"),
            Self::TraceLineTooLong { max } => write!(f, "trace line is longer than {max} bytes"),
            Self::TraceJson { detail } => write!(f, "trace line is not a tick: {detail}"),
            Self::TraceKind { kind } => write!(
                f,
                "unknown kind {kind:?} (expected audio, text, video or marker)"
            ),
            Self::TraceMarker { detail } => write!(f, "bad marker: {detail}"),
            Self::TracePayload { detail } => write!(f, "bad payload: {detail}"),
            Self::SpecJson { detail } => write!(f, "bad stream spec: {detail}"),
            Self::Internal { invariant } => {
                write!(
                    f,
                    "internal error: the invariant {invariant:?} did not hold"
                )
            }
        }
    }
}

impl std::error::Error for PipelineError {
    /// The lower crate's error this one wraps: the stream layer's (also under a refused stage
    /// tick), the receipt crate's or the sealer's.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Stream(e) | Self::StageTickRefused { error: e, .. } => Some(e),
            Self::Receipt(e) => Some(e),
            Self::Seal(e) => Some(e),
            _ => None,
        }
    }
}

impl From<StreamError> for PipelineError {
    fn from(e: StreamError) -> Self {
        Self::Stream(e)
    }
}

impl From<SealError> for PipelineError {
    fn from(e: SealError) -> Self {
        Self::Seal(e)
    }
}

impl From<Jcr1Error> for PipelineError {
    fn from(e: Jcr1Error) -> Self {
        Self::Receipt(e)
    }
}

/// The state check of each half of the pipeline: poisoned before finished.
pub(crate) fn usable(poisoned: bool, finished: bool) -> Result<()> {
    if poisoned {
        Err(PipelineError::Poisoned)
    } else if finished {
        Err(PipelineError::Finished)
    } else {
        Ok(())
    }
}

/// `Result` with [`PipelineError`].
pub type Result<T, E = PipelineError> = core::result::Result<T, E>;
