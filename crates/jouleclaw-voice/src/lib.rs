//! The transcriber seam of a jouleclaw voice cascade: a spoken turn ends in words when this
//! machine has something that can produce them.
//!
//! A [`Transcriber`] answers a [`Transcript`] with two named variants, `Said(String)` and
//! `Unasked`: a machine with no engine did not ask, which differs from a room where nobody
//! spoke. A transcription that fails is an error and never an empty sentence. The
//! [`TurnStage`] turns the mic audio of one inbound turn (`Start` .. `EndOfTurn`) into one text
//! tick on the ASR channel, through the WAV encoding an engine wants ([`WavAudio`]); a turn whose
//! transcription failed fails its window through [`TranscriptionOracle`]. Every turn, transcribed
//! or not, ends in a [`Measurement`] (samples, duration, peak and RMS level) taken as the audio
//! arrives: it is what tells a person their microphone is muted when the words come back empty.
//! [`VoiceTurn`] is a turn's result on the wire (`voice-turn/1`, canonical JSON).
//!
//! [`WhisperClient`] speaks to a whisper.cpp server (`POST /inference`) over a Unix socket or TCP
//! with a bounded wait; [`WhisperTranscriber`] decides once, at construction, whether the socket
//! is there, and answers `Unasked` for every turn when it is not. [`TableTranscriber`] is a
//! deterministic stand-in that answers from a table. [`WyomingClient`] speaks the Wyoming
//! protocol (a JSON header line, optional data and payload) to a speech-to-text server such as
//! `wyoming-faster-whisper`, over a Unix socket or TCP, bounded in size and time everywhere.
//!
//! The public interface is:
//! - [`Transcript`], [`Transcriber`]: the seam;
//! - [`TableTranscriber`], [`TableAnswer`]: the table-driven stand-in;
//! - [`WavAudio`], [`SAMPLE_RATE_HZ`], [`PCM_BYTES_PER_SECOND`]: 16 kHz 16-bit mono WAV;
//! - [`WhisperClient`], [`Endpoint`], [`WhisperTranscriber`], [`default_ceiling`],
//!   [`transcribe_wav_file`], [`MULTIPART_BOUNDARY`]: the whisper.cpp server client;
//! - [`WyomingClient`], [`WyomingTranscriber`], [`parse_endpoint`], [`hear_wav_with`],
//!   [`WYOMING_CONNECT_TIMEOUT`], [`WYOMING_IO_TIMEOUT`], [`WYOMING_CHUNK_MS`]: the client of
//!   a Wyoming speech-to-text server (such as `wyoming-faster-whisper`);
//! - [`WyomingEvent`], [`EventDecoder`], [`WyomingLimits`], [`WYOMING_LIMITS`],
//!   [`WYOMING_VERSION`]: the Wyoming event framing, bounded;
//! - [`TurnStage`], [`TurnOutcome`], [`TurnLog`], [`HeardTurn`], [`MAX_TURN_BYTES`],
//!   [`TURN_STAGE_NAME`]: the cascade stage, also a `jouleclaw_pipeline::Stage`;
//! - [`LevelMeter`], [`Measurement`], [`FULL_SCALE`], [`NS_PER_SAMPLE`], [`MAX_METER_SAMPLES`],
//!   [`PEAK_FLOOR_HUNDREDTHS`]: the measurement of a turn (samples, duration, peak and RMS in
//!   exact dBFS hundredths), computed in one pass as the audio arrives;
//! - [`VoiceTurn`], [`Heard`], [`VoiceTurnDecoder`], [`VoiceTurnRefusal`],
//!   [`VOICE_TURN_SCHEMA`], [`VOICE_TURN_SCHEMA_CODES`], [`VOICE_TURN_LIMITS`],
//!   [`MAX_TEXT_BYTES`], [`MAX_ERROR_CODE_BYTES`]: the `voice-turn/1` wire form;
//! - [`Provenance`]: text on the ASR channel is heard, the weakest provenance;
//! - [`hear_wav_file`], [`FileTurn`]: a WAV file's measurement beside its transcription;
//! - [`TranscriptionOracle`]: the stream-oracle adapter that fails a window whose turn failed;
//! - [`VoiceError`]: every refusal and failure, with a stable code.
//!
//! ```
//! use bytes::Bytes;
//! use jouleclaw_stream::{Tick, TickKind, TickMarker, duplex};
//! use jouleclaw_voice::*;
//!
//! let pcm = vec![0u8; 6_400]; // 200 ms of 16 kHz 16-bit mono
//! let table = TableTranscriber::new().with_row(
//!     &WavAudio::from_pcm16_mono_16k(&pcm)?,
//!     TableAnswer::Say("hello".into()),
//! );
//! let mut stage = TurnStage::new(table);
//! stage.on_tick(&Tick::marker(0, duplex::MIC, TickMarker::Start, 0))?;
//! stage.on_tick(&Tick::new(0, duplex::MIC, TickKind::Audio, Bytes::from(pcm), 1))?;
//! let end = Tick::marker(1, duplex::MIC, TickMarker::EndOfTurn, 200_000_000);
//! match stage.on_tick(&end)? {
//!     Some(TurnOutcome::Said { tick, measurement }) => {
//!         assert_eq!(tick.channel_id, duplex::ASR);
//!         assert_eq!(&tick.bytes[..], b"hello");
//!         assert_eq!(Provenance::of(&tick), Provenance::Voice);
//!         // A muted microphone: words may come back, the measurement says silence.
//!         assert!(measurement.is_silent());
//!         assert_eq!(measurement.duration_ns(), 200_000_000);
//!     }
//!     other => panic!("{other:?}"),
//! }
//! // The turn on the wire.
//! let turn = stage.last_turn().unwrap().turn;
//! let bytes = turn.encode()?;
//! assert_eq!(
//!     String::from_utf8(bytes.clone()).unwrap(),
//!     r#"{"jc_voice_turn":"voice-turn/1","measurement":{"duration_ns":200000000,"#.to_owned()
//!         + r#""peak_dbfs_hundredths":null,"rms_dbfs_hundredths":null,"samples":3200},"text":"hello"}"#
//! );
//! assert_eq!(VoiceTurn::decode(&bytes).unwrap(), turn);
//!
//! // A machine without an engine socket does not ask.
//! let none = WhisperTranscriber::at_socket("/nonexistent/whisper.sock", None);
//! assert!(!none.is_available());
//! let audio = WavAudio::from_pcm16_mono_16k(&[0; 320])?;
//! assert_eq!(none.transcribe(&audio)?, Transcript::Unasked);
//! # Ok::<(), VoiceError>(())
//! ```

#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![deny(clippy::unwrap_used)]

mod error;
mod level;
mod multipart;
mod oracle;
mod provenance;
mod stage;
mod transcript;
mod voice_turn;
mod wav;
mod whisper;
mod wyoming;
mod wyoming_frame;

pub use error::{Result, VoiceError};
pub use level::{
    FULL_SCALE, LevelMeter, MAX_METER_SAMPLES, Measurement, NS_PER_SAMPLE, PEAK_FLOOR_HUNDREDTHS,
};
pub use multipart::FIXED_BOUNDARY as MULTIPART_BOUNDARY;
pub use oracle::{TRANSCRIPTION_ORACLE_NAME, TranscriptionOracle};
pub use provenance::Provenance;
pub use stage::{HeardTurn, MAX_TURN_BYTES, TURN_STAGE_NAME, TurnLog, TurnOutcome, TurnStage};
pub use transcript::{TableAnswer, TableTranscriber, Transcriber, Transcript};
pub use voice_turn::{
    Heard, MAX_ERROR_CODE_BYTES, MAX_TEXT_BYTES, VOICE_TURN_LIMITS, VOICE_TURN_SCHEMA,
    VOICE_TURN_SCHEMA_CODES, VoiceTurn, VoiceTurnDecoder, VoiceTurnRefusal,
};
pub use wav::{PCM_BYTES_PER_SECOND, SAMPLE_RATE_HZ, WavAudio};
pub use whisper::{
    Endpoint, FileTurn, MAX_RESPONSE_BYTES, WAIT_FLOOR, WAIT_SCALE, WhisperClient,
    WhisperTranscriber, default_ceiling, hear_wav_file, transcribe_wav_file,
};
pub use wyoming::{
    WYOMING_CHUNK_MS, WYOMING_CONNECT_TIMEOUT, WYOMING_IO_TIMEOUT, WyomingClient,
    WyomingTranscriber, hear_wav_with, parse_endpoint,
};
pub use wyoming_frame::{
    EventDecoder, WYOMING_LIMITS, WYOMING_VERSION, WyomingEvent, WyomingLimits,
};
