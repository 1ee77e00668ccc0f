//! The crate's one error type.

use core::fmt;

use crate::tick::TickKindTag;

/// Why a spec, a push or a ledger observation was refused.
///
/// Every variant leaves the value it was raised by unchanged. [`StreamError::code`] gives a
/// stable string per variant for logs and wire formats.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StreamError {
    /// `tick_window_ms` is zero.
    ZeroWindowLength,
    /// `max_chunk_bytes` is zero.
    ZeroMaxChunkBytes,
    /// `max_ticks_per_window` is zero.
    ZeroMaxTicks,
    /// The spec declares no channel.
    NoChannels,
    /// A spec value is above its documented cap (`StreamSpec::MAX_*`).
    SpecLimit {
        /// Which value: `tick_window_ms`, `max_chunk_bytes`, `max_ticks_per_window`,
        /// `channels` (their count), `channel_id` or `mime` (its length in bytes).
        field: &'static str,
        /// The value found.
        value: u64,
        /// The cap.
        max: u64,
    },
    /// Two channels share an id.
    DuplicateChannel {
        /// The repeated id.
        channel_id: u32,
    },
    /// The window's span does not fit in `u64` nanoseconds.
    WindowSpanOverflow {
        /// The window that cannot be represented.
        window_id: u64,
    },
    /// The tick belongs to another window.
    WindowMismatch {
        /// The window being filled.
        expected: u64,
        /// The tick's window.
        got: u64,
    },
    /// `ts_ns` lies outside the window's half-open span `[start_ns, end_ns)`.
    TimestampOutsideWindow {
        /// The tick's timestamp.
        ts_ns: u64,
        /// First nanosecond of the window.
        start_ns: u64,
        /// First nanosecond after the window.
        end_ns: u64,
    },
    /// `ts_ns` is earlier than the previous tick's.
    TimestampDecreasing {
        /// The tick's timestamp.
        ts_ns: u64,
        /// The previous tick's timestamp.
        previous_ns: u64,
    },
    /// No channel has the tick's id.
    UnknownChannel {
        /// The tick's channel id.
        channel_id: u32,
    },
    /// The tick's kind is not the kind its channel carries.
    KindMismatch {
        /// The channel.
        channel_id: u32,
        /// What the channel carries.
        expected: TickKindTag,
        /// What the tick is.
        got: TickKindTag,
    },
    /// The payload is larger than `max_chunk_bytes`.
    ChunkTooLarge {
        /// Payload length.
        len: usize,
        /// The limit.
        max: u32,
    },
    /// The window already holds `max_ticks_per_window` ticks.
    TooManyTicks {
        /// The limit.
        max: u32,
    },
    /// A ledger policy value is out of range.
    InvalidPolicy {
        /// Which value, by field name.
        field: &'static str,
    },
    /// The ledger was given a window older than the one it is filling.
    LedgerWindowRegressed {
        /// The ledger's current window.
        current: u64,
        /// The window observed.
        got: u64,
    },
}

impl StreamError {
    /// A stable code naming the rule that refused; it never changes meaning.
    pub fn code(&self) -> &'static str {
        match self {
            Self::ZeroWindowLength => "spec_zero_window",
            Self::ZeroMaxChunkBytes => "spec_zero_max_chunk",
            Self::ZeroMaxTicks => "spec_zero_max_ticks",
            Self::NoChannels => "spec_no_channels",
            Self::DuplicateChannel { .. } => "spec_duplicate_channel",
            Self::SpecLimit { .. } => "spec_over_limit",
            Self::WindowSpanOverflow { .. } => "window_span_overflow",
            Self::WindowMismatch { .. } => "tick_window_mismatch",
            Self::TimestampOutsideWindow { .. } => "tick_ts_outside_window",
            Self::TimestampDecreasing { .. } => "tick_ts_decreasing",
            Self::UnknownChannel { .. } => "tick_unknown_channel",
            Self::KindMismatch { .. } => "tick_kind_mismatch",
            Self::ChunkTooLarge { .. } => "tick_chunk_too_large",
            Self::TooManyTicks { .. } => "window_too_many_ticks",
            Self::InvalidPolicy { .. } => "ledger_invalid_policy",
            Self::LedgerWindowRegressed { .. } => "ledger_window_regressed",
        }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroWindowLength => f.write_str("tick_window_ms must be non-zero"),
            Self::ZeroMaxChunkBytes => f.write_str("max_chunk_bytes must be non-zero"),
            Self::ZeroMaxTicks => f.write_str("max_ticks_per_window must be non-zero"),
            Self::NoChannels => f.write_str("a stream spec needs at least one channel"),
            Self::SpecLimit { field, value, max } => {
                write!(f, "{field} {value} is above the cap {max}")
            }
            Self::DuplicateChannel { channel_id } => {
                write!(f, "channel id {channel_id} is declared twice")
            }
            Self::WindowSpanOverflow { window_id } => {
                write!(
                    f,
                    "window {window_id} does not end at or below 2^53 ns (every value in its JSON must be a safe integer)"
                )
            }
            Self::WindowMismatch { expected, got } => {
                write!(f, "tick for window {got} pushed into window {expected}")
            }
            Self::TimestampOutsideWindow {
                ts_ns,
                start_ns,
                end_ns,
            } => write!(
                f,
                "ts_ns {ts_ns} outside window span [{start_ns}, {end_ns})"
            ),
            Self::TimestampDecreasing { ts_ns, previous_ns } => {
                write!(
                    f,
                    "ts_ns {ts_ns} is earlier than the previous tick's {previous_ns}"
                )
            }
            Self::UnknownChannel { channel_id } => write!(f, "no channel has id {channel_id}"),
            Self::KindMismatch {
                channel_id,
                expected,
                got,
            } => write!(
                f,
                "channel {channel_id} carries {} ticks, got {}",
                expected.as_str(),
                got.as_str()
            ),
            Self::ChunkTooLarge { len, max } => {
                write!(f, "payload of {len} bytes exceeds max_chunk_bytes {max}")
            }
            Self::TooManyTicks { max } => {
                write!(f, "window already holds max_ticks_per_window = {max} ticks")
            }
            Self::InvalidPolicy { field } => {
                write!(f, "ledger policy field {field} is out of range")
            }
            Self::LedgerWindowRegressed { current, got } => {
                write!(
                    f,
                    "ledger is at window {current}; window {got} is in the past"
                )
            }
        }
    }
}

impl std::error::Error for StreamError {}

/// `Result` with [`StreamError`].
pub type Result<T, E = StreamError> = core::result::Result<T, E>;
