//! The crate's one error type.

use core::fmt;

/// Why a fixture file, a fixture record or a replay marker was refused.
///
/// Every variant that concerns a fixture names the 1-based `line` of the JSONL file and the
/// `field` path inside the record (for example `events[3].t_ms` or `mode.staged`). A refused
/// input changes nothing. [`ReplayError::code`] gives a stable snake_case string per variant.
///
/// Reducer decisions (a duplicate `hold_start`, a final before release, ...) are not errors:
/// they are [`crate::Rejection`]s recorded in the trace, because refusing them *is* the oracle
/// working.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplayError {
    /// The bytes are not UTF-8.
    InvalidUtf8 {
        /// The line holding the first invalid byte.
        line: usize,
    },
    /// The line is not a JSON document.
    InvalidJson {
        /// The line.
        line: usize,
        /// The parser's message.
        detail: String,
    },
    /// A mandatory field is absent.
    MissingField {
        /// The line.
        line: usize,
        /// The field path.
        field: String,
    },
    /// A field has the wrong JSON type (or an integer is negative, fractional or above
    /// `2^53 - 1`).
    WrongType {
        /// The line.
        line: usize,
        /// The field path.
        field: String,
        /// What the schema requires there.
        expected: &'static str,
    },
    /// An object carries the same key twice (JSON parsers differ on which one wins, so the
    /// schema refuses both).
    DuplicateField {
        /// The line.
        line: usize,
        /// The field path of the repeated key.
        field: String,
    },
    /// A field the schema does not define.
    UnknownField {
        /// The line.
        line: usize,
        /// The field path.
        field: String,
    },
    /// An event's `kind` is not one of the schema's kinds.
    UnknownKind {
        /// The line.
        line: usize,
        /// The field path (`events[i].kind`).
        field: String,
        /// The refused value.
        kind: String,
    },
    /// A `failure` event's `category` is not one of the schema's categories.
    UnknownCategory {
        /// The line.
        line: usize,
        /// The field path (`events[i].category`).
        field: String,
        /// The refused value.
        category: String,
    },
    /// A `final_decode` event's `class` is not `dictation`, `command` or `unknown`.
    UnknownClass {
        /// The line.
        line: usize,
        /// The field path (`events[i].class`).
        field: String,
        /// The refused value.
        class: String,
    },
    /// `mode.activation` is neither `"hold"` nor `"handsfree"`.
    UnknownActivation {
        /// The line.
        line: usize,
        /// The field path (`mode.activation`).
        field: String,
        /// The refused value.
        activation: String,
    },
    /// An event's `t_ms` is smaller than its predecessor's.
    NonMonotonicTime {
        /// The line.
        line: usize,
        /// The field path (`events[i].t_ms`).
        field: String,
        /// The event's time.
        t_ms: u64,
        /// The previous event's time.
        previous_ms: u64,
    },
    /// Two records of one file share an `id`.
    DuplicateId {
        /// The line of the second record.
        line: usize,
        /// The field path (`id`).
        field: String,
        /// The repeated id.
        id: String,
        /// The line of the first record.
        first_line: usize,
    },
    /// The file holds no record.
    NoRecords,
    /// A control-channel marker carries the replay prefix but not a valid replay record.
    InvalidMarker {
        /// Why.
        detail: String,
    },
}

impl ReplayError {
    /// A stable snake_case code per variant; codes never change meaning.
    pub fn code(&self) -> &'static str {
        match self {
            Self::InvalidUtf8 { .. } => "invalid_utf8",
            Self::InvalidJson { .. } => "invalid_json",
            Self::MissingField { .. } => "missing_field",
            Self::WrongType { .. } => "wrong_type",
            Self::DuplicateField { .. } => "duplicate_field",
            Self::UnknownField { .. } => "unknown_field",
            Self::UnknownKind { .. } => "unknown_event_kind",
            Self::UnknownCategory { .. } => "unknown_failure_category",
            Self::UnknownClass { .. } => "unknown_final_class",
            Self::UnknownActivation { .. } => "unknown_activation",
            Self::NonMonotonicTime { .. } => "non_monotonic_t_ms",
            Self::DuplicateId { .. } => "duplicate_fixture_id",
            Self::NoRecords => "no_records",
            Self::InvalidMarker { .. } => "invalid_replay_marker",
        }
    }

    /// The 1-based line the error concerns, if any.
    pub fn line(&self) -> Option<usize> {
        self.place().0
    }

    /// The field path the error concerns, if any.
    pub fn field(&self) -> Option<&str> {
        self.place().1
    }

    /// The line and the field path the error concerns, each if any.
    fn place(&self) -> (Option<usize>, Option<&str>) {
        match self {
            Self::MissingField { line, field }
            | Self::WrongType { line, field, .. }
            | Self::DuplicateField { line, field }
            | Self::UnknownField { line, field }
            | Self::UnknownKind { line, field, .. }
            | Self::UnknownCategory { line, field, .. }
            | Self::UnknownClass { line, field, .. }
            | Self::UnknownActivation { line, field, .. }
            | Self::NonMonotonicTime { line, field, .. }
            | Self::DuplicateId { line, field, .. } => (Some(*line), Some(field)),
            Self::InvalidUtf8 { line } | Self::InvalidJson { line, .. } => (Some(*line), None),
            Self::NoRecords | Self::InvalidMarker { .. } => (None, None),
        }
    }
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidUtf8 { line } => write!(f, "line {line}: not valid UTF-8"),
            Self::InvalidJson { line, detail } => write!(f, "line {line}: not JSON: {detail}"),
            Self::MissingField { line, field } => {
                write!(f, "line {line}: missing mandatory field `{field}`")
            }
            Self::WrongType {
                line,
                field,
                expected,
            } => write!(f, "line {line}: field `{field}` must be {expected}"),
            Self::DuplicateField { line, field } => {
                write!(f, "line {line}: field `{field}` occurs twice in one object")
            }
            Self::UnknownField { line, field } => {
                write!(f, "line {line}: field `{field}` is not part of schema v1")
            }
            Self::UnknownKind { line, field, kind } => {
                write!(
                    f,
                    "line {line}: field `{field}`: unknown event kind {kind:?}"
                )
            }
            Self::UnknownCategory {
                line,
                field,
                category,
            } => write!(
                f,
                "line {line}: field `{field}`: unknown failure category {category:?}"
            ),
            Self::UnknownClass { line, field, class } => write!(
                f,
                "line {line}: field `{field}`: unknown final class {class:?} (dictation, command or unknown)"
            ),
            Self::UnknownActivation {
                line,
                field,
                activation,
            } => write!(
                f,
                "line {line}: field `{field}`: activation {activation:?} is neither \"hold\" nor \"handsfree\""
            ),
            Self::NonMonotonicTime {
                line,
                field,
                t_ms,
                previous_ms,
            } => write!(
                f,
                "line {line}: field `{field}`: t_ms {t_ms} is earlier than the previous event's {previous_ms}"
            ),
            Self::DuplicateId {
                line,
                field,
                id,
                first_line,
            } => write!(
                f,
                "line {line}: field `{field}`: id {id:?} already used on line {first_line}"
            ),
            Self::NoRecords => write!(f, "the file holds no fixture record"),
            Self::InvalidMarker { detail } => write!(f, "invalid replay marker: {detail}"),
        }
    }
}

impl std::error::Error for ReplayError {}

/// The crate's result type.
pub type Result<T> = core::result::Result<T, ReplayError>;
