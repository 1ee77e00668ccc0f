//! The crate's one error type.

use core::fmt;
use std::time::Duration;

/// Why audio, a turn or a transcription was refused or failed.
///
/// [`VoiceError::code`] gives a stable string per variant for logs and wire formats. A refusal of
/// input (odd PCM, a marker out of order, a turn past its bound) leaves the value it was raised
/// by unchanged; a failed transcription fails the turn it belongs to and never becomes an empty
/// sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VoiceError {
    /// 16-bit PCM needs an even number of bytes.
    OddPcmLength {
        /// The length given.
        len: usize,
    },
    /// The bytes are not a readable WAV file.
    InvalidWav {
        /// What the WAV reader reported.
        reason: String,
    },
    /// Writing the WAV encoding failed.
    WavEncode {
        /// What the WAV writer reported.
        reason: String,
    },
    /// A turn would hold more audio than its bound.
    TurnTooLong {
        /// Bytes the turn would hold with the refused chunk.
        bytes: usize,
        /// The bound, in bytes.
        max: usize,
    },
    /// A `Start` marker arrived while a turn was already open.
    TurnAlreadyOpen,
    /// An `EndOfTurn` marker arrived with no open turn.
    NoOpenTurn,
    /// Mic audio arrived outside a turn.
    AudioOutsideTurn,
    /// A mic tick that is neither audio nor a marker.
    NotAudio {
        /// The tick's kind, as its wire name.
        kind: &'static str,
    },
    /// A turn ended without any audio in it.
    EmptyTurn,
    /// Every multipart boundary candidate occurs in the body.
    BoundaryExhausted,
    /// The transcription engine could not be reached.
    Connect {
        /// Where the engine was looked for.
        endpoint: String,
        /// What the connection attempt reported.
        reason: String,
    },
    /// The HTTP exchange with the engine failed.
    Http {
        /// What the HTTP stack reported.
        reason: String,
    },
    /// The engine did not answer within the ceiling.
    Timeout {
        /// The ceiling that passed.
        waited: Duration,
    },
    /// The engine answered `{"error": ...}` with a 2xx status (whisper.cpp answers errors with 200).
    EngineError {
        /// The engine's message.
        message: String,
    },
    /// The engine answered with a status outside 2xx.
    HttpStatus {
        /// The status code.
        status: u16,
        /// The start of the body as text: at most its first 512 bytes, decoded as lossy UTF-8 and
        /// trimmed.
        body: String,
    },
    /// The engine's answer is not the JSON shape expected.
    MalformedResponse {
        /// What was wrong with it.
        reason: String,
    },
    /// The engine's answer is larger than the client accepts.
    ResponseTooLarge {
        /// The limit, in bytes.
        max: usize,
    },
    /// The blocking client could not run: no runtime could be built, or it was called from
    /// inside an async runtime.
    Runtime {
        /// Why.
        reason: String,
    },
    /// A table stand-in was asked about audio it has no row for.
    NotInTable,
    /// A level meter would take more samples than it measures exactly.
    MeterFull {
        /// The bound, in samples.
        max: u64,
    },
    /// The transcriber's sentence is longer than a text tick may be.
    TranscriptTooLong {
        /// The sentence's length, in UTF-8 bytes.
        bytes: usize,
        /// The bound, in bytes.
        max: usize,
    },
    /// A value has no `voice-turn/1` encoding.
    Unencodable {
        /// Why.
        reason: String,
    },
    /// A Wyoming event's header line ran past its bound without a newline.
    WyomingHeaderTooLong {
        /// The bound, in bytes (the newline excluded).
        max: usize,
    },
    /// A Wyoming header line is not a JSON object of the documented shape.
    WyomingHeaderInvalid {
        /// What was wrong with it.
        reason: String,
    },
    /// A Wyoming event declared a data segment longer than the client reads.
    WyomingDataTooLong {
        /// The declared `data_length`.
        declared: u64,
        /// The bound, in bytes.
        max: usize,
    },
    /// A Wyoming data segment (or the header's `data`) is not a JSON object.
    WyomingDataInvalid {
        /// What was wrong with it.
        reason: String,
    },
    /// A Wyoming event declared a binary payload longer than the client reads.
    WyomingPayloadTooLong {
        /// The declared `payload_length`.
        declared: u64,
        /// The bound, in bytes.
        max: usize,
    },
    /// The Wyoming server sent more bytes in one turn than the client reads.
    WyomingReplyTooLarge {
        /// The bound, in bytes.
        max: usize,
    },
    /// The Wyoming server sent more events in one turn than the client reads.
    WyomingTooManyEvents {
        /// The bound, in events.
        max: usize,
    },
    /// The Wyoming connection closed in the middle of an event.
    WyomingTruncated {
        /// Which part of the event was cut off.
        part: &'static str,
    },
    /// The Wyoming connection closed before a transcript arrived.
    WyomingClosed,
    /// A Wyoming `transcript` event without a string `text`.
    WyomingTranscriptInvalid {
        /// What was wrong with it.
        reason: String,
    },
    /// Reading from or writing to the Wyoming server failed.
    WyomingIo {
        /// What the operating system reported.
        reason: String,
    },
    /// Connecting to the Wyoming server took longer than its bound.
    WyomingConnectTimeout {
        /// The bound that passed.
        waited: Duration,
    },
    /// One read or write on the Wyoming connection made no progress within its bound.
    WyomingIoTimeout {
        /// The bound that passed.
        waited: Duration,
    },
    /// The audio has no Wyoming form (Wyoming audio is integer PCM).
    WyomingAudioUnsupported {
        /// Why.
        reason: String,
    },
}

impl VoiceError {
    /// A stable code naming the rule that refused or the way a transcription failed; it never
    /// changes meaning.
    pub fn code(&self) -> &'static str {
        match self {
            Self::OddPcmLength { .. } => "pcm_odd_length",
            Self::InvalidWav { .. } => "wav_invalid",
            Self::WavEncode { .. } => "wav_encode_failed",
            Self::TurnTooLong { .. } => "turn_too_long",
            Self::TurnAlreadyOpen => "turn_already_open",
            Self::NoOpenTurn => "turn_not_open",
            Self::AudioOutsideTurn => "turn_audio_outside",
            Self::NotAudio { .. } => "turn_not_audio",
            Self::EmptyTurn => "turn_empty",
            Self::BoundaryExhausted => "multipart_boundary_exhausted",
            Self::Connect { .. } => "engine_connect",
            Self::Http { .. } => "engine_http",
            Self::Timeout { .. } => "engine_timeout",
            Self::EngineError { .. } => "engine_error",
            Self::HttpStatus { .. } => "engine_status",
            Self::MalformedResponse { .. } => "engine_malformed",
            Self::ResponseTooLarge { .. } => "engine_response_too_large",
            Self::Runtime { .. } => "runtime_unavailable",
            Self::NotInTable => "table_no_row",
            Self::MeterFull { .. } => "measure_too_long",
            Self::TranscriptTooLong { .. } => "transcript_too_long",
            Self::Unencodable { .. } => "unencodable",
            Self::WyomingHeaderTooLong { .. } => "wyoming_header_too_long",
            Self::WyomingHeaderInvalid { .. } => "wyoming_header_invalid",
            Self::WyomingDataTooLong { .. } => "wyoming_data_too_long",
            Self::WyomingDataInvalid { .. } => "wyoming_data_invalid",
            Self::WyomingPayloadTooLong { .. } => "wyoming_payload_too_long",
            Self::WyomingReplyTooLarge { .. } => "wyoming_reply_too_large",
            Self::WyomingTooManyEvents { .. } => "wyoming_too_many_events",
            Self::WyomingTruncated { .. } => "wyoming_truncated",
            Self::WyomingClosed => "wyoming_closed",
            Self::WyomingTranscriptInvalid { .. } => "wyoming_transcript_invalid",
            Self::WyomingIo { .. } => "wyoming_io",
            Self::WyomingConnectTimeout { .. } => "wyoming_connect_timeout",
            Self::WyomingIoTimeout { .. } => "wyoming_io_timeout",
            Self::WyomingAudioUnsupported { .. } => "wyoming_audio_unsupported",
        }
    }
}

/// The message shown for an error: its text with every control character (the line end,
/// ANSI escape sequences) and Unicode bidirectional formatting character written as
/// `\u{XXXX}` (`jouleclaw_store::escape_untrusted`, the one sanitizer of untrusted text). A
/// transcription server chooses the text of its `error` event, its HTTP error body and parts of
/// what the client reports about its answers: shown as sent, it could clear a terminal or print
/// lines that look like the program's own. The fields keep the exact text.
impl fmt::Display for VoiceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let raw = RawMessage(self).to_string();
        f.write_str(&jouleclaw_store::escape_untrusted(&raw))
    }
}

/// The message of a [`VoiceError`] with the untrusted text in it as received.
struct RawMessage<'a>(&'a VoiceError);

impl fmt::Display for RawMessage<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            VoiceError::OddPcmLength { len } => {
                write!(f, "16-bit PCM needs an even byte count, got {len}")
            }
            VoiceError::InvalidWav { reason } => write!(f, "not a readable WAV file: {reason}"),
            VoiceError::WavEncode { reason } => write!(f, "WAV encoding failed: {reason}"),
            VoiceError::TurnTooLong { bytes, max } => write!(
                f,
                "turn would hold {bytes} bytes of audio, past its bound of {max}"
            ),
            VoiceError::TurnAlreadyOpen => f.write_str("start marker while a turn is already open"),
            VoiceError::NoOpenTurn => f.write_str("end-of-turn marker with no open turn"),
            VoiceError::AudioOutsideTurn => f.write_str("mic audio outside a turn"),
            VoiceError::NotAudio { kind } => write!(f, "mic tick of kind {kind}, expected audio"),
            VoiceError::EmptyTurn => f.write_str("the turn ended with no audio in it"),
            VoiceError::BoundaryExhausted => {
                f.write_str("no multipart boundary candidate is absent from the body")
            }
            VoiceError::Connect { endpoint, reason } => {
                write!(f, "cannot reach the transcriber at {endpoint}: {reason}")
            }
            VoiceError::Http { reason } => {
                write!(f, "HTTP exchange with the transcriber failed: {reason}")
            }
            VoiceError::Timeout { waited } => write!(
                f,
                "the transcriber did not answer within {} ms",
                waited.as_millis()
            ),
            VoiceError::EngineError { message } => write!(f, "the transcriber reported: {message}"),
            VoiceError::HttpStatus { status, body } => {
                write!(f, "the transcriber answered HTTP {status}: {body}")
            }
            VoiceError::MalformedResponse { reason } => {
                write!(f, "the transcriber's answer is malformed: {reason}")
            }
            VoiceError::ResponseTooLarge { max } => {
                write!(f, "the transcriber's answer is larger than {max} bytes")
            }
            VoiceError::Runtime { reason } => write!(f, "cannot run the blocking client: {reason}"),
            VoiceError::NotInTable => {
                f.write_str("the table transcriber has no row for this audio")
            }
            VoiceError::MeterFull { max } => {
                write!(f, "the level meter measures at most {max} samples")
            }
            VoiceError::TranscriptTooLong { bytes, max } => write!(
                f,
                "the transcriber's sentence is {bytes} bytes, past the text bound of {max}"
            ),
            VoiceError::Unencodable { reason } => write!(f, "no voice-turn/1 encoding: {reason}"),
            VoiceError::WyomingHeaderTooLong { max } => write!(
                f,
                "a Wyoming header line ran past {max} bytes without a newline"
            ),
            VoiceError::WyomingHeaderInvalid { reason } => {
                write!(f, "a Wyoming header line is invalid: {reason}")
            }
            VoiceError::WyomingDataTooLong { declared, max } => write!(
                f,
                "a Wyoming event declared {declared} bytes of data, past the bound of {max}"
            ),
            VoiceError::WyomingDataInvalid { reason } => {
                write!(f, "a Wyoming event's data is invalid: {reason}")
            }
            VoiceError::WyomingPayloadTooLong { declared, max } => write!(
                f,
                "a Wyoming event declared a {declared}-byte payload, past the bound of {max}"
            ),
            VoiceError::WyomingReplyTooLarge { max } => {
                write!(
                    f,
                    "the Wyoming server sent more than {max} bytes in one turn"
                )
            }
            VoiceError::WyomingTooManyEvents { max } => write!(
                f,
                "the Wyoming server sent more than {max} events without a transcript"
            ),
            VoiceError::WyomingTruncated { part } => write!(
                f,
                "the Wyoming connection closed in the middle of an event's {part}"
            ),
            VoiceError::WyomingClosed => {
                f.write_str("the Wyoming connection closed before a transcript arrived")
            }
            VoiceError::WyomingTranscriptInvalid { reason } => {
                write!(f, "the Wyoming transcript is invalid: {reason}")
            }
            VoiceError::WyomingIo { reason } => {
                write!(f, "the Wyoming connection failed: {reason}")
            }
            VoiceError::WyomingConnectTimeout { waited } => write!(
                f,
                "connecting to the Wyoming server took longer than {} ms",
                waited.as_millis()
            ),
            VoiceError::WyomingIoTimeout { waited } => write!(
                f,
                "the Wyoming connection made no progress for {} ms",
                waited.as_millis()
            ),
            VoiceError::WyomingAudioUnsupported { reason } => {
                write!(f, "the audio has no Wyoming form: {reason}")
            }
        }
    }
}

impl std::error::Error for VoiceError {}

/// `Result` with [`VoiceError`].
pub type Result<T, E = VoiceError> = core::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::VoiceError;

    #[test]
    fn text_from_the_server_is_shown_escaped_and_kept_exact() {
        let body = "oops\u{1b}]0;owned\u{7}\r\nok: 3 calls registered\u{9b}31m";
        let e = VoiceError::HttpStatus {
            status: 500,
            body: body.into(),
        };
        let shown = e.to_string();
        assert_eq!(
            shown,
            "the transcriber answered HTTP 500: oops\\u{001B}]0;owned\\u{0007}\\u{000D}\\u{000A}ok: 3 calls registered\\u{009B}31m"
        );
        assert!(!shown.chars().any(char::is_control));
        // The field keeps what the server sent.
        assert!(matches!(e, VoiceError::HttpStatus { body: b, .. } if b == body));
        // Accepted neighbour: plain text (accents, another script) is shown as it is.
        let plain = VoiceError::EngineError {
            message: "mod\u{e8}le absent \u{5e9}\u{5dc}\u{5d5}\u{5dd}".into(),
        };
        assert_eq!(
            plain.to_string(),
            "the transcriber reported: mod\u{e8}le absent \u{5e9}\u{5dc}\u{5d5}\u{5dd}"
        );
    }
}
