//! [`LiveError`]: every failure of the live runtime, its sinks and the auditor.

use core::fmt;

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
    /// The pipeline refused the tick (a malformed tick, a regressed window, a stage failure).
    /// Nothing changed unless the code is `pipeline_poisoned`.
    Pipeline {
        /// The pipeline's stable code.
        code: &'static str,
        /// Its message.
        message: String,
    },
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
    /// Sealing failed (a sealer refusal).
    Seal {
        /// The sealer's stable code.
        code: &'static str,
        /// Its message.
        message: String,
    },
    /// The sink failed (I/O, the cluster, a full journal).
    Sink {
        /// A stable code: `io`, `nats`, `journal_full`, `journal_corrupt`, `sink_closed`.
        code: &'static str,
        /// What happened.
        message: String,
    },
    /// Bad configuration or a bad argument.
    Config {
        /// What is wrong.
        message: String,
    },
    /// Something read back (a file, a message) is malformed.
    Malformed {
        /// Where.
        place: String,
        /// What is wrong.
        message: String,
    },
}

impl LiveError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::WindowClosed { .. } => "window_closed",
            Self::TickFromFuture { .. } => "tick_from_future",
            Self::Overloaded { .. } => "overloaded",
            Self::Pipeline { .. } => "pipeline_refused",
            Self::StreamClosed { .. } => "stream_closed",
            Self::StreamFailed { .. } => "stream_failed",
            Self::DuplicateStream { .. } => "duplicate_stream",
            Self::TooManyStreams { .. } => "too_many_streams",
            Self::Seal { .. } => "seal_failed",
            Self::Sink { code, .. } => code,
            Self::Config { .. } => "config",
            Self::Malformed { .. } => "malformed",
        }
    }

    pub(crate) fn pipeline(e: &jouleclaw_pipeline::PipelineError) -> Self {
        Self::Pipeline {
            code: e.code(),
            message: e.to_string(),
        }
    }

    pub(crate) fn seal(e: &jouleclaw_seal::SealError) -> Self {
        Self::Seal {
            code: e.code(),
            message: e.to_string(),
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
            Self::Pipeline { code, message } => write!(f, "pipeline refused ({code}): {message}"),
            Self::StreamClosed { stream_id } => write!(f, "stream {stream_id:?} is closed"),
            Self::StreamFailed { stream_id, reason } => {
                write!(f, "stream {stream_id:?} failed: {reason}")
            }
            Self::DuplicateStream { stream_id } => {
                write!(f, "stream {stream_id:?} is already open")
            }
            Self::TooManyStreams { limit } => write!(f, "at most {limit} streams may be open"),
            Self::Seal { code, message } => write!(f, "sealing failed ({code}): {message}"),
            Self::Sink { code, message } => write!(f, "sink failed ({code}): {message}"),
            Self::Config { message } => write!(f, "bad configuration: {message}"),
            Self::Malformed { place, message } => write!(f, "{place}: {message}"),
        }
    }
}

impl std::error::Error for LiveError {}

/// `Result` with [`LiveError`].
pub type Result<T> = core::result::Result<T, LiveError>;
