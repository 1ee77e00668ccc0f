//! [`LiveError`]: every failure of the live runtime, its sinks and the auditor.

use core::fmt;

use jouleclaw_pipeline::PipelineError;

/// Every failure of this crate. [`LiveError::code`] is stable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LiveError {
    /// The tick's window already closed on the stream clock (its end plus the grace passed),
    /// or a tick of a later window was already accepted. Counted; nothing changed.
    WindowClosed {
        /// The tick's window.
        window_id: u64,
        /// The tick's timestamp.
        ts_ns: u64,
        /// The stream clock when it was refused.
        now_ns: u64,
    },
    /// The tick is stamped later than the stream clock plus the grace. Counted; nothing changed.
    TickFromFuture {
        /// The tick's timestamp.
        ts_ns: u64,
        /// The stream clock when it was refused.
        now_ns: u64,
    },
    /// The stream's work queue is full (its worker or the sink is behind). Counted; nothing
    /// changed; the caller may retry.
    Overloaded {
        /// The queue's bound.
        capacity: usize,
    },
    /// The pipeline refused the tick or the stream (a malformed tick, a stage failure, an id no
    /// receipt can carry), or failed minting or sealing a window. Nothing changed unless its
    /// code is `pipeline_poisoned` or it failed a window. The pipeline's error is the cause
    /// ([`std::error::Error::source`]) and carries its own stable code.
    Pipeline(PipelineError),
    /// The stream is closed (sealed) or failed; it takes no more ticks.
    StreamClosed {
        /// The stream.
        stream_id: String,
    },
    /// The stream failed: its receipts may not all be durable. The message says why.
    StreamFailed {
        /// The stream.
        stream_id: String,
        /// Why.
        reason: String,
    },
    /// A stream with this id is already open in this substrate.
    DuplicateStream {
        /// The stream.
        stream_id: String,
    },
    /// The substrate's stream limit is reached.
    TooManyStreams {
        /// The limit.
        limit: usize,
    },
    /// The sealer refused (the cause).
    Seal(jouleclaw_seal::SealError),
    /// The stop-latency meter or the `stop-latency/1` document refused (the cause, with its
    /// own stable code): a barge-in past the meter's bound is refused before it is judged.
    StopLatency(jouleclaw_stop_latency::StopLatencyError),
    /// The interaction meter or the `interaction-metrics/1` document refused (the cause, with
    /// its own stable code).
    Interaction(jouleclaw_interaction::InteractionError),
    /// The sink failed (I/O, the cluster, a full journal).
    Sink {
        /// A stable code: `io`, `nats`, `journal_full`, `journal_corrupt`, `journal_locked`,
        /// `journal_undelivered`, `drain_timeout`, `sink_busy`, `stream_exists`,
        /// `sink_closed`, `duplicate_unconfirmed` (one publish attempt; retried),
        /// `stream_mismatch` (an existing stream that would not keep the batches).
        code: &'static str,
        /// What happened.
        message: String,
    },
    /// A stream id or steward no sink can store: empty, or longer than
    /// `MAX_ESCAPED_ID_BYTES` once escaped.
    IdTooLong {
        /// `steward` or `stream id`.
        what: &'static str,
        /// Its escaped length.
        escaped_bytes: usize,
        /// The bound.
        limit: usize,
    },
    /// Bad configuration or a bad argument.
    Config {
        /// What is wrong.
        message: String,
    },
    /// A call out of order (the API misused, e.g. [`crate::Substrate::shutdown`] while streams
    /// are open): nothing changed; the caller may call again once the order is right.
    Misuse {
        /// What is out of order.
        message: String,
    },
    /// Something read back (a file, a message) is malformed.
    Malformed {
        /// Where.
        place: String,
        /// What is wrong.
        message: String,
    },
    /// A JetStream message of a version this reader does not know (it reads 1 and 2,
    /// `spec/LIVE.md` section 6.2): refused, never misread.
    UnknownMessageVersion {
        /// The message's `v`.
        version: u64,
    },
    /// An internal invariant did not hold: a bug in this crate, never a property of the input.
    Internal {
        /// The invariant that failed.
        invariant: &'static str,
    },
}

impl LiveError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::WindowClosed { .. } => "window_closed",
            Self::TickFromFuture { .. } => "tick_from_future",
            Self::Overloaded { .. } => "overloaded",
            Self::Pipeline(_) => "pipeline_refused",
            Self::StreamClosed { .. } => "stream_closed",
            Self::StreamFailed { .. } => "stream_failed",
            Self::DuplicateStream { .. } => "duplicate_stream",
            Self::TooManyStreams { .. } => "too_many_streams",
            Self::Seal(_) => "seal_failed",
            Self::StopLatency(_) => "stop_latency_refused",
            Self::Interaction(_) => "interaction_refused",
            Self::Sink { code, .. } => code,
            Self::IdTooLong { .. } => "id_too_long",
            Self::Config { .. } => "config",
            Self::Misuse { .. } => "misuse",
            Self::Malformed { .. } => "malformed",
            Self::UnknownMessageVersion { .. } => "unknown_message_version",
            Self::Internal { .. } => "internal",
        }
    }

    pub(crate) fn io(what: &str, e: &std::io::Error) -> Self {
        Self::Sink {
            code: "io",
            message: format!("{what}: {e}"),
        }
    }
}

impl fmt::Display for LiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::WindowClosed {
                window_id,
                ts_ns,
                now_ns,
            } => write!(
                f,
                "window {window_id} is closed: tick at {ts_ns} ns refused at stream time {now_ns} ns"
            ),
            Self::TickFromFuture { ts_ns, now_ns } => write!(
                f,
                "tick at {ts_ns} ns is ahead of the stream clock ({now_ns} ns) by more than the grace"
            ),
            Self::Overloaded { capacity } => {
                write!(f, "the stream's work queue is full ({capacity} items)")
            }
            Self::Pipeline(e) => write!(f, "pipeline refused ({}): {e}", e.code()),
            Self::StreamClosed { stream_id } => write!(f, "stream {stream_id:?} is closed"),
            Self::StreamFailed { stream_id, reason } => {
                write!(f, "stream {stream_id:?} failed: {reason}")
            }
            Self::DuplicateStream { stream_id } => {
                write!(f, "stream {stream_id:?} is already open")
            }
            Self::TooManyStreams { limit } => write!(f, "at most {limit} streams may be open"),
            Self::Seal(e) => write!(f, "sealing failed ({}): {e}", e.code()),
            Self::StopLatency(e) => write!(f, "stop latency refused ({}): {e}", e.code()),
            Self::Interaction(e) => {
                write!(f, "interaction metrics refused ({}): {e}", e.code())
            }
            Self::Sink { code, message } => write!(f, "sink failed ({code}): {message}"),
            Self::IdTooLong {
                what,
                escaped_bytes,
                limit,
            } => write!(
                f,
                "the {what} is {escaped_bytes} bytes once escaped; a sink stores 1 to {limit}"
            ),
            Self::Config { message } => write!(f, "bad configuration: {message}"),
            Self::Misuse { message } => write!(f, "call out of order: {message}"),
            Self::Malformed { place, message } => write!(f, "{place}: {message}"),
            Self::UnknownMessageVersion { version } => write!(
                f,
                "message: version {version} is not known (this reader reads versions 1 and 2)"
            ),
            Self::Internal { invariant } => {
                write!(
                    f,
                    "internal error: the invariant {invariant:?} did not hold"
                )
            }
        }
    }
}

impl std::error::Error for LiveError {
    /// The pipeline's or the sealer's error this one wraps.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Pipeline(e) => Some(e),
            Self::Seal(e) => Some(e),
            Self::StopLatency(e) => Some(e),
            Self::Interaction(e) => Some(e),
            _ => None,
        }
    }
}

impl From<PipelineError> for LiveError {
    fn from(e: PipelineError) -> Self {
        Self::Pipeline(e)
    }
}

impl From<jouleclaw_stop_latency::StopLatencyError> for LiveError {
    fn from(e: jouleclaw_stop_latency::StopLatencyError) -> Self {
        Self::StopLatency(e)
    }
}

impl From<jouleclaw_interaction::InteractionError> for LiveError {
    fn from(e: jouleclaw_interaction::InteractionError) -> Self {
        Self::Interaction(e)
    }
}

impl From<jouleclaw_seal::SealError> for LiveError {
    fn from(e: jouleclaw_seal::SealError) -> Self {
        Self::Seal(e)
    }
}

/// `Result` with [`LiveError`].
pub type Result<T> = core::result::Result<T, LiveError>;
