//! A blocking client for a Wyoming speech-to-text server (`spec/TRANSCRIBER.md` section 10).
//!
//! One connection per turn: `transcribe`, `audio-start`, the audio as `audio-chunk` events,
//! `audio-stop`, then events are read until a `transcript` (or an `error`). Every read and
//! write, the connection and the whole turn have a time bound; every event read is bounded by
//! [`WYOMING_LIMITS`]. Driven by a current-thread tokio runtime that lives for one call.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};

use crate::error::{Result, VoiceError};
use crate::level::Measurement;
use crate::transcript::{Transcriber, Transcript};
use crate::voice_turn::MAX_TEXT_BYTES;
use crate::wav::{WavAudio, WirePcm};
use crate::whisper::{Endpoint, FileTurn, block_on, default_ceiling};
use crate::wyoming_frame::{EventDecoder, WYOMING_LIMITS, WyomingEvent};

/// How long connecting may take by default: 5 s.
pub const WYOMING_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long one read or write may make no progress by default: 60 s. The first byte of the
/// answer comes only when the engine has transcribed the whole turn, so this is also the
/// longest the engine may think (a 23 s turn took a small Whisper model 17 s on a busy
/// two-core machine); the whole-turn ceiling ([`default_ceiling`]) ends a short turn first.
pub const WYOMING_IO_TIMEOUT: Duration = Duration::from_secs(60);

/// Audio is sent in `audio-chunk` events of this many milliseconds of audio (100 ms).
pub const WYOMING_CHUNK_MS: u32 = 100;

/// A client for one Wyoming speech-to-text server.
///
/// | what the server does | result |
/// |---|---|
/// | sends `transcript` with a string `text` | `Ok(text.trim())`, refused past [`MAX_TEXT_BYTES`] (`transcript_too_long`) |
/// | sends `error` | [`VoiceError::EngineError`] with its `text` |
/// | sends other events first | skipped, up to [`WYOMING_LIMITS`]`.max_events` |
/// | sends a malformed or oversized event | its `wyoming_*` refusal, as soon as it is seen |
/// | closes before a transcript | `wyoming_closed`, or `wyoming_truncated` inside an event |
/// | stops reading or answering | `wyoming_io_timeout` after the I/O bound, `engine_timeout` after the turn ceiling |
///
/// A failure is never an empty sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WyomingClient {
    endpoint: Endpoint,
    max_wait: Option<Duration>,
    connect_timeout: Duration,
    io_timeout: Duration,
    language: Option<String>,
}

impl WyomingClient {
    /// A client for the server at `endpoint` with the default bounds: connect
    /// [`WYOMING_CONNECT_TIMEOUT`], each read or write [`WYOMING_IO_TIMEOUT`], the whole turn
    /// [`default_ceiling`] of the utterance.
    pub fn new(endpoint: Endpoint) -> Self {
        Self {
            endpoint,
            max_wait: None,
            connect_timeout: WYOMING_CONNECT_TIMEOUT,
            io_timeout: WYOMING_IO_TIMEOUT,
            language: None,
        }
    }

    /// Replaces the whole-turn ceiling with a fixed one.
    pub fn with_max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = Some(max_wait);
        self
    }

    /// Replaces the connect bound.
    pub fn with_connect_timeout(mut self, bound: Duration) -> Self {
        self.connect_timeout = bound;
        self
    }

    /// Replaces the bound on one read or write.
    pub fn with_io_timeout(mut self, bound: Duration) -> Self {
        self.io_timeout = bound;
        self
    }

    /// Asks for a language (the `transcribe` event's `language`); by default the server
    /// decides.
    pub fn with_language(mut self, language: impl Into<String>) -> Self {
        self.language = Some(language.into());
        self
    }

    /// Where the server is.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The whole-turn ceiling for an utterance of `utterance`: the configured one, or
    /// [`default_ceiling`].
    pub fn ceiling(&self, utterance: Duration) -> Duration {
        self.max_wait.unwrap_or_else(|| default_ceiling(utterance))
    }

    /// The events of one turn, in order, as bytes: `transcribe`, `audio-start`, the
    /// `audio-chunk`s, `audio-stop` (what [`WyomingClient::sentence`] sends, one event at a
    /// time).
    pub fn request_events(&self, audio: &WavAudio) -> Result<Vec<Vec<u8>>> {
        let wire = audio.wire_pcm()?;
        Ok(request_events(&wire, self.language.as_deref()).collect())
    }

    /// Asks the server for the sentence in `audio`. Blocks until an answer, a failure or a
    /// bound. Must not be called from inside an async runtime ([`VoiceError::Runtime`]).
    pub fn sentence(&self, audio: &WavAudio) -> Result<String> {
        let wire = audio.wire_pcm()?;
        let ceiling = self.ceiling(audio.duration());
        let this = self.clone();
        block_on(async move {
            tokio::time::timeout(ceiling, this.exchange(&wire))
                .await
                .map_err(|_| VoiceError::Timeout { waited: ceiling })?
        })?
    }

    async fn exchange(&self, wire: &WirePcm) -> Result<String> {
        let connect_err = |e: std::io::Error| VoiceError::Connect {
            endpoint: self.endpoint.to_string(),
            reason: e.to_string(),
        };
        let bound = self.connect_timeout;
        let timed_out = |_| VoiceError::WyomingConnectTimeout { waited: bound };
        // Each event is encoded as it is written: the audio is never held twice.
        let events = request_events(wire, self.language.as_deref());
        match &self.endpoint {
            #[cfg(unix)]
            Endpoint::Unix(path) => {
                let io = tokio::time::timeout(bound, tokio::net::UnixStream::connect(path))
                    .await
                    .map_err(timed_out)?
                    .map_err(connect_err)?;
                converse(io, events, self.io_timeout).await
            }
            #[cfg(not(unix))]
            Endpoint::Unix(_) => Err(connect_err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "Unix sockets are not available on this platform",
            ))),
            Endpoint::Tcp(addr) => {
                let io = tokio::time::timeout(bound, tokio::net::TcpStream::connect(addr))
                    .await
                    .map_err(timed_out)?
                    .map_err(connect_err)?;
                converse(io, events, self.io_timeout).await
            }
        }
    }
}

impl Transcriber for WyomingClient {
    fn transcribe(&self, audio: &WavAudio) -> Result<Transcript> {
        self.sentence(audio).map(Transcript::Said)
    }
}

fn format_data(wire: &WirePcm) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("rate".to_owned(), Value::from(wire.rate));
    m.insert("width".to_owned(), Value::from(wire.width));
    m.insert("channels".to_owned(), Value::from(wire.channels));
    m
}

fn request_events<'a>(
    wire: &'a WirePcm,
    language: Option<&str>,
) -> impl Iterator<Item = Vec<u8>> + 'a {
    let mut transcribe = Map::new();
    if let Some(lang) = language {
        transcribe.insert("language".to_owned(), Value::from(lang));
    }
    let format = format_data(wire);
    let frame = (wire.width as usize) * (wire.channels as usize);
    let frames_per_chunk = ((wire.rate / (1000 / WYOMING_CHUNK_MS)) as usize).max(1);
    let chunk_bytes = frame.saturating_mul(frames_per_chunk).max(1);
    let head = [
        WyomingEvent::new("transcribe", transcribe).encode(),
        WyomingEvent::new("audio-start", format.clone()).encode(),
    ];
    let chunks = wire.pcm.chunks(chunk_bytes).map(move |piece| {
        let mut chunk = WyomingEvent::new("audio-chunk", format.clone());
        chunk.payload = piece.to_vec();
        chunk.encode()
    });
    head.into_iter().chain(chunks).chain(std::iter::once(
        WyomingEvent::new("audio-stop", Map::new()).encode(),
    ))
}

fn io_err(e: &std::io::Error) -> VoiceError {
    VoiceError::WyomingIo {
        reason: e.to_string(),
    }
}

/// Sends `events` and reads the answer on an open connection. Each write and each read must
/// make progress within `io_timeout`. A server that fails the turn early (an `error` event, then
/// closing) makes a write fail: what it sent before is read, and its answer wins over the
/// write's failure.
pub(crate) async fn converse<S>(
    mut io: S,
    events: impl IntoIterator<Item = Vec<u8>>,
    io_timeout: Duration,
) -> Result<String>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let stalled = |_| VoiceError::WyomingIoTimeout { waited: io_timeout };
    let mut decoder = EventDecoder::new(WYOMING_LIMITS);
    for event in events {
        let written = tokio::time::timeout(io_timeout, io.write_all(&event))
            .await
            .map_err(stalled)?;
        if let Err(e) = written {
            let failed = io_err(&e);
            return match read_answer(&mut io, &mut decoder, io_timeout).await {
                Ok(sentence) => Ok(sentence),
                Err(answer @ VoiceError::EngineError { .. }) => Err(answer),
                Err(_) => Err(failed),
            };
        }
    }
    tokio::time::timeout(io_timeout, io.flush())
        .await
        .map_err(stalled)?
        .map_err(|e| io_err(&e))?;
    read_answer(&mut io, &mut decoder, io_timeout).await
}

/// Reads events until one decides the turn.
async fn read_answer<S>(
    io: &mut S,
    decoder: &mut EventDecoder,
    io_timeout: Duration,
) -> Result<String>
where
    S: AsyncRead + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = tokio::time::timeout(io_timeout, io.read(&mut buf))
            .await
            .map_err(|_| VoiceError::WyomingIoTimeout { waited: io_timeout })?
            .map_err(|e| io_err(&e))?;
        if n == 0 {
            return Err(decoder.end_of_stream());
        }
        decoder.push(&buf[..n])?;
        while let Some(event) = decoder.next_event()? {
            if let Some(answer) = answer_of(&event) {
                return answer;
            }
        }
    }
}

/// What an event means for the turn: `Some` for the answer (`transcript`) or a failure
/// (`error`), `None` for an event that is skipped.
pub(crate) fn answer_of(event: &WyomingEvent) -> Option<Result<String>> {
    match event.kind.as_str() {
        "transcript" => Some(match event.data.get("text") {
            Some(Value::String(text)) => {
                let text = text.trim();
                if text.len() > MAX_TEXT_BYTES {
                    Err(VoiceError::TranscriptTooLong {
                        bytes: text.len(),
                        max: MAX_TEXT_BYTES,
                    })
                } else {
                    Ok(text.to_owned())
                }
            }
            Some(_) => Err(VoiceError::WyomingTranscriptInvalid {
                reason: "\"text\" is not a string".to_owned(),
            }),
            None => Err(VoiceError::WyomingTranscriptInvalid {
                reason: "no \"text\"".to_owned(),
            }),
        }),
        "error" => {
            let message = match event.data.get("text") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => "an error event without text".to_owned(),
            };
            Some(Err(VoiceError::EngineError { message }))
        }
        _ => None,
    }
}

/// A Wyoming transcriber whose availability was decided once, when it was built: at a Unix
/// socket path that does not exist there is no engine and every turn answers
/// [`Transcript::Unasked`]; a socket that existed and is gone later fails the turn. A TCP
/// endpoint always has a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WyomingTranscriber {
    client: Option<WyomingClient>,
}

impl WyomingTranscriber {
    /// Looks for the engine at `endpoint` once; `max_wait` replaces the default turn ceiling.
    pub fn at(endpoint: Endpoint, max_wait: Option<Duration>) -> Self {
        let present = match &endpoint {
            Endpoint::Unix(path) => path.exists(),
            Endpoint::Tcp(_) => true,
        };
        let client = present.then(|| {
            let c = WyomingClient::new(endpoint);
            match max_wait {
                Some(d) => c.with_max_wait(d),
                None => c,
            }
        });
        Self { client }
    }

    /// A transcriber that always asks `client`.
    pub fn with_client(client: WyomingClient) -> Self {
        Self {
            client: Some(client),
        }
    }

    /// `true` when this transcriber has an engine to ask.
    pub fn is_available(&self) -> bool {
        self.client.is_some()
    }

    /// The client, when there is one.
    pub fn client(&self) -> Option<&WyomingClient> {
        self.client.as_ref()
    }
}

impl Transcriber for WyomingTranscriber {
    fn transcribe(&self, audio: &WavAudio) -> Result<Transcript> {
        match &self.client {
            Some(c) => c.transcribe(audio),
            None => Ok(Transcript::Unasked),
        }
    }
}

/// Parses `unix:PATH` or `tcp:IP:PORT` (`tcp:localhost:PORT` is `127.0.0.1`; an IPv6 address
/// in brackets, `tcp:[::1]:PORT`). No name is looked up.
pub fn parse_endpoint(text: &str) -> core::result::Result<Endpoint, String> {
    if let Some(path) = text.strip_prefix("unix:") {
        if path.is_empty() {
            return Err("unix: needs a socket path".to_owned());
        }
        return Ok(Endpoint::Unix(PathBuf::from(path)));
    }
    if let Some(addr) = text.strip_prefix("tcp:") {
        let addr = match addr.strip_prefix("localhost:") {
            Some(port) => format!("127.0.0.1:{port}"),
            None => addr.to_owned(),
        };
        return addr
            .parse()
            .map(Endpoint::Tcp)
            .map_err(|_| format!("tcp:{addr}: expected tcp:IP:PORT"));
    }
    Err(format!("{text:?}: expected unix:PATH or tcp:HOST:PORT"))
}

/// A WAV file's measurement beside what `transcriber` made of it: a turn is measured whether or
/// not it was transcribed, and whether or not the transcription failed. `Err` only for a file
/// that is not a readable WAV ([`VoiceError::InvalidWav`]).
pub fn hear_wav_with<T: Transcriber + ?Sized>(
    transcriber: &T,
    wav_bytes: &[u8],
) -> Result<FileTurn> {
    let audio = WavAudio::parse(wav_bytes.to_vec())?;
    let measurement: Option<Measurement> = audio.measure()?;
    let transcript = transcriber.transcribe(&audio);
    Ok(FileTurn {
        measurement,
        format: audio.describe_format(),
        transcript,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tokio::io::AsyncBufReadExt as _;

    fn ev(kind: &str, data: Value) -> Vec<u8> {
        let Value::Object(m) = data else {
            unreachable!()
        };
        WyomingEvent::new(kind, m).encode()
    }

    fn wire(pcm: Vec<u8>) -> WirePcm {
        WirePcm {
            rate: 16_000,
            width: 2,
            channels: 1,
            pcm,
        }
    }

    #[test]
    fn a_turn_is_transcribe_start_chunks_of_100_ms_stop() {
        let w = wire(vec![1; 3_200 * 2 + 10]);
        let kinds: Vec<String> = request_events(&w, Some("en"))
            .map(|e| {
                let mut d = EventDecoder::new(WYOMING_LIMITS);
                d.push(&e).unwrap();
                let got = d.next_event().unwrap().unwrap();
                if got.kind == "audio-chunk" {
                    assert_eq!(got.data, format_data(&wire(vec![])));
                    format!("chunk:{}", got.payload.len())
                } else {
                    if got.kind == "transcribe" {
                        assert_eq!(got.data.get("language"), Some(&json!("en")));
                    }
                    got.kind
                }
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "transcribe",
                "audio-start",
                "chunk:3200",
                "chunk:3200",
                "chunk:10",
                "audio-stop"
            ]
        );
        // Without a language the transcribe event has no data.
        let w = wire(vec![1; 2]);
        let events: Vec<Vec<u8>> = request_events(&w, None).collect();
        assert_eq!(
            events[0],
            b"{\"type\":\"transcribe\",\"version\":\"1.10.2\"}\n"
        );
    }

    #[test]
    fn the_answer_is_read_by_event_type() {
        let t = |data: Value| {
            let Value::Object(m) = data else {
                unreachable!()
            };
            answer_of(&WyomingEvent::new("transcript", m)).unwrap()
        };
        assert_eq!(t(json!({"text": " The fox.\n"})).unwrap(), "The fox.");
        assert_eq!(t(json!({"text": ""})).unwrap(), "");
        assert_eq!(
            t(json!({"text": 3})).unwrap_err().code(),
            "wyoming_transcript_invalid"
        );
        assert_eq!(
            t(json!({})).unwrap_err().code(),
            "wyoming_transcript_invalid"
        );
        let at_bound = "a".repeat(MAX_TEXT_BYTES);
        assert_eq!(t(json!({"text": at_bound.clone()})).unwrap(), at_bound);
        assert_eq!(
            t(json!({"text": at_bound + "a"})).unwrap_err().code(),
            "transcript_too_long"
        );
        let Value::Object(m) = json!({"text": "model not loaded"}) else {
            unreachable!()
        };
        assert_eq!(
            answer_of(&WyomingEvent::new("error", m))
                .unwrap()
                .unwrap_err(),
            VoiceError::EngineError {
                message: "model not loaded".into()
            }
        );
        // A hostile server's error text: kept exact in the error, shown escaped (it would
        // clear the screen and print a line that looks like the program's own).
        let hostile = "\u{1b}[2J\u{1b}[H\nregistered call-1\u{202E}";
        let Value::Object(m) = json!({ "text": hostile }) else {
            unreachable!()
        };
        let e = answer_of(&WyomingEvent::new("error", m))
            .unwrap()
            .unwrap_err();
        assert_eq!(
            e,
            VoiceError::EngineError {
                message: hostile.into()
            }
        );
        assert_eq!(
            e.to_string(),
            "the transcriber reported: \\u{001B}[2J\\u{001B}[H\\u{000A}registered call-1\\u{202E}"
        );
        assert!(answer_of(&WyomingEvent::new("transcript-chunk", Map::new())).is_none());
        assert!(answer_of(&WyomingEvent::new("info", Map::new())).is_none());
    }

    /// A stand-in server on one end of an in-memory pipe: reads the request up to
    /// `audio-stop`, then writes `reply` (or nothing when `None`) and holds the pipe open.
    async fn stand_in(
        server: tokio::io::DuplexStream,
        reply: Option<Vec<u8>>,
    ) -> std::io::Result<()> {
        let (r, mut w) = tokio::io::split(server);
        let mut r = tokio::io::BufReader::new(r);
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).await? == 0 {
                return Ok(());
            }
            let h: Value = serde_json::from_str(&line).map_err(std::io::Error::other)?;
            let skip =
                h["data_length"].as_u64().unwrap_or(0) + h["payload_length"].as_u64().unwrap_or(0);
            let mut rest = vec![0; skip as usize];
            r.read_exact(&mut rest).await?;
            if h["type"] == "audio-stop" {
                break;
            }
        }
        if let Some(reply) = reply {
            w.write_all(&reply).await?;
        }
        std::future::pending::<()>().await;
        Ok(())
    }

    async fn turn_against(reply: Option<Vec<u8>>, io: Duration) -> Result<String> {
        let (client, server) = tokio::io::duplex(1 << 16);
        let _server = tokio::spawn(stand_in(server, reply));
        let w = wire(vec![0; 32_000]);
        converse(client, request_events(&w, None), io).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_that_never_answers_fails_at_the_io_bound() {
        let got = turn_against(None, Duration::from_secs(20)).await;
        assert_eq!(
            got.unwrap_err(),
            VoiceError::WyomingIoTimeout {
                waited: Duration::from_secs(20)
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_that_answers_skips_other_events_then_the_transcript() {
        let mut reply = ev("transcript-start", json!({}));
        reply.extend(ev("transcript-chunk", json!({"text": "He"})));
        reply.extend(ev(
            "transcript",
            json!({"text": " Hello.", "language": "en"}),
        ));
        assert_eq!(
            turn_against(Some(reply), Duration::from_secs(20))
                .await
                .unwrap(),
            "Hello."
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_reply_cut_off_or_oversized_has_its_code() {
        let cut = b"{\"type\":\"transcript\",\"data_length\":40}\n{\"te".to_vec();
        // The stand-in holds the pipe open after a cut-off reply: the I/O bound ends it.
        assert_eq!(
            turn_against(Some(cut), Duration::from_secs(1))
                .await
                .unwrap_err()
                .code(),
            "wyoming_io_timeout"
        );
        let huge = b"{\"type\":\"transcript\",\"data_length\":999999999}\n".to_vec();
        assert_eq!(
            turn_against(Some(huge), Duration::from_secs(1))
                .await
                .unwrap_err()
                .code(),
            "wyoming_data_too_long"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_that_stops_reading_fails_the_write_at_the_io_bound() {
        // A pipe of 64 bytes that nobody reads: the first write blocks.
        let (client, _server) = tokio::io::duplex(64);
        let w = wire(vec![0; 32_000]);
        assert_eq!(
            converse(client, request_events(&w, None), Duration::from_secs(3))
                .await
                .unwrap_err(),
            VoiceError::WyomingIoTimeout {
                waited: Duration::from_secs(3)
            }
        );
    }

    #[test]
    fn endpoints_parse_unix_and_tcp() {
        assert_eq!(
            parse_endpoint("unix:/run/stt.sock"),
            Ok(Endpoint::Unix("/run/stt.sock".into()))
        );
        assert_eq!(
            parse_endpoint("tcp:127.0.0.1:10300"),
            Ok(Endpoint::Tcp(([127, 0, 0, 1], 10300).into()))
        );
        assert_eq!(
            parse_endpoint("tcp:localhost:10300"),
            Ok(Endpoint::Tcp(([127, 0, 0, 1], 10300).into()))
        );
        assert!(matches!(parse_endpoint("tcp:[::1]:9"), Ok(Endpoint::Tcp(a)) if a.is_ipv6()));
        for bad in [
            "unix:",
            "tcp:",
            "tcp:127.0.0.1",
            "tcp:host.example:1",
            "/run/x",
            "http://x",
        ] {
            assert!(parse_endpoint(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_unix_endpoint_that_does_not_exist_is_no_engine_and_tcp_always_is() {
        let none = WyomingTranscriber::at(Endpoint::Unix("/nonexistent/stt.sock".into()), None);
        assert!(!none.is_available());
        let audio = WavAudio::from_pcm16_mono_16k(&[0; 32]).unwrap();
        assert_eq!(none.transcribe(&audio).unwrap(), Transcript::Unasked);
        let tcp = WyomingTranscriber::at(Endpoint::Tcp(([127, 0, 0, 1], 1).into()), None);
        assert!(tcp.is_available());
        // Port 1 on loopback refuses: a failed turn, never Unasked.
        assert_eq!(tcp.transcribe(&audio).unwrap_err().code(), "engine_connect");
    }
}
