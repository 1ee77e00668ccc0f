//! A blocking client for whisper.cpp's HTTP server (`POST /inference`).
//!
//! The exchange is hyper's HTTP/1.1 over a Unix socket (or TCP, for a server that only binds a
//! port), driven by a current-thread tokio runtime that lives for one call. Callers see a plain
//! blocking [`Transcriber`].

use core::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE, HOST};
use hyper_util::rt::TokioIo;

use crate::error::{Result, VoiceError};
use crate::level::Measurement;
use crate::multipart::{MultipartBody, inference_form};
use crate::transcript::{Transcriber, Transcript};
use crate::voice_turn::{Heard, VoiceTurn};
use crate::wav::WavAudio;

/// The wait ceiling is never shorter than this: 30 s.
pub const WAIT_FLOOR: Duration = Duration::from_secs(30);

/// The wait ceiling is this many times the utterance's duration (when above the floor).
pub const WAIT_SCALE: u32 = 4;

/// The largest answer body the client reads: 1 MiB.
pub const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// At most this much of an error body is kept in [`VoiceError::HttpStatus`].
const MAX_ERROR_BODY_BYTES: usize = 512;

/// The default wait ceiling for an utterance: `max(4 x duration, 30 s)`.
///
/// Scaled so a short utterance is not held open for a flat minute, floored because what the
/// ceiling catches is an engine that was never going to answer, not a slow one.
pub fn default_ceiling(utterance: Duration) -> Duration {
    utterance.saturating_mul(WAIT_SCALE).max(WAIT_FLOOR)
}

/// Where a whisper.cpp server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    /// A Unix socket path.
    Unix(PathBuf),
    /// A TCP address, for a server that only binds a port.
    Tcp(SocketAddr),
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unix(p) => write!(f, "unix:{}", p.display()),
            Self::Tcp(a) => write!(f, "tcp:{a}"),
        }
    }
}

/// A client for one whisper.cpp server.
///
/// Each call sends `POST /inference` with a `multipart/form-data` body of two fields, `file` (the
/// WAV) and `response_format=json`, and reads the answer:
///
/// | answer | result |
/// |---|---|
/// | 2xx, `{"text": " words\n"}` | `Ok("words")`: the text with surrounding whitespace trimmed |
/// | 2xx, a JSON object with `"error"` (whisper.cpp's 200-with-error) | [`VoiceError::EngineError`] |
/// | non-2xx, whatever the body (plain text or JSON; only its first 512 bytes are read) | [`VoiceError::HttpStatus`] with the status |
/// | 2xx, not a JSON object with a string `"text"` | [`VoiceError::MalformedResponse`] |
/// | no answer within the ceiling | [`VoiceError::Timeout`] |
/// | 2xx, a body over [`MAX_RESPONSE_BYTES`] | [`VoiceError::ResponseTooLarge`], as soon as it passes the limit |
///
/// A failure is never an empty sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhisperClient {
    endpoint: Endpoint,
    max_wait: Option<Duration>,
}

impl WhisperClient {
    /// A client for the server at `endpoint`, with the default wait ceiling
    /// ([`default_ceiling`]).
    pub fn new(endpoint: Endpoint) -> Self {
        Self {
            endpoint,
            max_wait: None,
        }
    }

    /// Replaces the default ceiling with a fixed one for every call.
    pub fn with_max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = Some(max_wait);
        self
    }

    /// Where the server is.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// How long a call for an utterance of `utterance` waits before failing with
    /// [`VoiceError::Timeout`]: the configured ceiling, or [`default_ceiling`].
    pub fn ceiling(&self, utterance: Duration) -> Duration {
        self.max_wait.unwrap_or_else(|| default_ceiling(utterance))
    }

    /// Asks the server for the sentence in `audio`. Blocks until an answer, a failure or the
    /// ceiling (which covers connecting, sending and reading the answer).
    ///
    /// Must not be called from inside an async runtime ([`VoiceError::Runtime`]).
    pub fn sentence(&self, audio: &WavAudio) -> Result<String> {
        let form = inference_form(audio.bytes())?;
        let ceiling = self.ceiling(audio.duration());
        let endpoint = self.endpoint.clone();
        let answer =
            block_on(
                async move { tokio::time::timeout(ceiling, exchange(&endpoint, form)).await },
            )?;
        let (status, body) = answer.map_err(|_| VoiceError::Timeout { waited: ceiling })??;
        parse_answer(status, &body)
    }
}

impl Transcriber for WhisperClient {
    fn transcribe(&self, audio: &WavAudio) -> Result<Transcript> {
        self.sentence(audio).map(Transcript::Said)
    }
}

/// A whisper.cpp transcriber whose availability was decided once, when it was built.
///
/// Built at a Unix socket path, it has a client exactly when the path exists at construction: a
/// machine that is configured for an engine holds its socket open before the engine starts, so a
/// path that exists means an engine. Without one, every turn answers [`Transcript::Unasked`]
/// rather than a connection error per turn; with one, a socket that has gone away later is a
/// failed turn ([`VoiceError::Connect`]), never `Unasked`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhisperTranscriber {
    client: Option<WhisperClient>,
}

impl WhisperTranscriber {
    /// Looks for the socket at `path` once. `max_wait` replaces the default ceiling.
    pub fn at_socket(path: impl Into<PathBuf>, max_wait: Option<Duration>) -> Self {
        let path = path.into();
        // Existence is the test, as for every engine socket on the machine; a path that exists
        // but is not a socket fails each turn visibly instead of hiding as "no engine".
        let client = path.exists().then(|| {
            let c = WhisperClient::new(Endpoint::Unix(path));
            match max_wait {
                Some(d) => c.with_max_wait(d),
                None => c,
            }
        });
        Self { client }
    }

    /// A transcriber that always has a client (for a TCP server or a known endpoint).
    pub fn with_client(client: WhisperClient) -> Self {
        Self {
            client: Some(client),
        }
    }

    /// `true` when this transcriber has an engine to ask.
    pub fn is_available(&self) -> bool {
        self.client.is_some()
    }

    /// The client, when there is one.
    pub fn client(&self) -> Option<&WhisperClient> {
        self.client.as_ref()
    }
}

impl Transcriber for WhisperTranscriber {
    fn transcribe(&self, audio: &WavAudio) -> Result<Transcript> {
        match &self.client {
            Some(c) => c.transcribe(audio),
            None => Ok(Transcript::Unasked),
        }
    }
}

/// Transcribes a WAV file with the whisper.cpp server at the Unix socket `socket`.
///
/// The file is read first ([`VoiceError::InvalidWav`] for one that is not a WAV); then, if no
/// socket exists at `socket`, the answer is `Ok(Transcript::Unasked)`; otherwise the server is
/// asked with `max_wait` (or the default ceiling) and its sentence is `Transcript::Said`.
pub fn transcribe_wav_file(
    socket: &Path,
    max_wait: Option<Duration>,
    wav_bytes: &[u8],
) -> Result<Transcript, VoiceError> {
    let audio = WavAudio::parse(wav_bytes.to_vec())?;
    WhisperTranscriber::at_socket(socket, max_wait).transcribe(&audio)
}

/// What [`hear_wav_file`] made of a WAV file: the measurement (for a file in the mic format) and
/// the transcriber's answer, which may be a failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileTurn {
    /// The measurement; `None` for a file that is not 16 kHz 16-bit mono ([`WavAudio::measure`]).
    pub measurement: Option<Measurement>,
    /// The file's format, for a person ([`WavAudio::describe_format`]).
    pub format: String,
    /// The transcriber's answer, as [`transcribe_wav_file`] gives it.
    pub transcript: Result<Transcript, VoiceError>,
}

impl FileTurn {
    /// The `voice-turn/1` result, for a measured file.
    pub fn voice_turn(&self) -> Option<VoiceTurn> {
        let heard = match &self.transcript {
            Ok(Transcript::Said(s)) => Heard::Said(s.clone()),
            Ok(Transcript::Unasked) => Heard::Unasked,
            Err(e) => Heard::failed(e),
        };
        self.measurement
            .map(|measurement| VoiceTurn { measurement, heard })
    }
}

/// Like [`transcribe_wav_file`], with the file's measurement beside the answer: a turn is
/// measured whether or not it was transcribed, and whether or not the transcription failed.
/// `Err` only for a file that is not a readable WAV ([`VoiceError::InvalidWav`]).
pub fn hear_wav_file(
    socket: &Path,
    max_wait: Option<Duration>,
    wav_bytes: &[u8],
) -> Result<FileTurn, VoiceError> {
    crate::wyoming::hear_wav_with(&WhisperTranscriber::at_socket(socket, max_wait), wav_bytes)
}

/// Runs `fut` to completion on a fresh current-thread runtime.
pub(crate) fn block_on<F: Future>(fut: F) -> Result<F::Output> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err(VoiceError::Runtime {
            reason: "the blocking client was called from inside an async runtime".to_owned(),
        });
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| VoiceError::Runtime {
            reason: e.to_string(),
        })?;
    Ok(rt.block_on(fut))
}

async fn exchange(endpoint: &Endpoint, form: MultipartBody) -> Result<(u16, Bytes)> {
    let connect_err = |e: std::io::Error| VoiceError::Connect {
        endpoint: endpoint.to_string(),
        reason: e.to_string(),
    };
    match endpoint {
        #[cfg(unix)]
        Endpoint::Unix(path) => {
            let stream = tokio::net::UnixStream::connect(path)
                .await
                .map_err(connect_err)?;
            send(TokioIo::new(stream), "localhost", form).await
        }
        #[cfg(not(unix))]
        Endpoint::Unix(_) => Err(connect_err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "Unix sockets are not available on this platform",
        ))),
        Endpoint::Tcp(addr) => {
            let stream = tokio::net::TcpStream::connect(addr)
                .await
                .map_err(connect_err)?;
            send(TokioIo::new(stream), &addr.to_string(), form).await
        }
    }
}

async fn send<I>(io: I, host: &str, form: MultipartBody) -> Result<(u16, Bytes)>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let http_err = |e: hyper::Error| VoiceError::Http {
        reason: e.to_string(),
    };
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(http_err)?;
    // The connection is driven by a task on the call's runtime and ends with it.
    let driver = tokio::spawn(conn);
    let content_type = form.content_type();
    let len = form.body.len();
    let request = Request::post("/inference")
        .header(HOST, host)
        .header(CONTENT_TYPE, content_type)
        .header(CONTENT_LENGTH, len)
        .body(Full::new(Bytes::from(form.body)))
        .map_err(|e| VoiceError::Http {
            reason: e.to_string(),
        })?;
    let response = sender.send_request(request).await.map_err(http_err)?;
    let status = response.status().as_u16();
    let body = if is_success(status) {
        read_body(response.into_body()).await?
    } else {
        read_error_body(response.into_body()).await
    };
    driver.abort();
    Ok((status, Bytes::from(body)))
}

fn is_success(status: u16) -> bool {
    (200..300).contains(&status)
}

/// Reads a success body whole, refusing one over [`MAX_RESPONSE_BYTES`] as soon as it passes
/// the limit (an endless body is never buffered past it).
async fn read_body(mut body: hyper::body::Incoming) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| VoiceError::Http {
            reason: e.to_string(),
        })?;
        if let Ok(data) = frame.into_data() {
            if data.len() > MAX_RESPONSE_BYTES - out.len() {
                return Err(VoiceError::ResponseTooLarge {
                    max: MAX_RESPONSE_BYTES,
                });
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out)
}

/// Reads the start of an error body: at most [`MAX_ERROR_BODY_BYTES`], then stops. The status
/// is the answer; a body that is large, endless or broken off does not hide it.
async fn read_error_body(mut body: hyper::body::Incoming) -> Vec<u8> {
    let mut out = Vec::new();
    while out.len() < MAX_ERROR_BODY_BYTES {
        let Some(Ok(frame)) = body.frame().await else {
            break;
        };
        if let Ok(data) = frame.into_data() {
            let room = MAX_ERROR_BODY_BYTES - out.len();
            out.extend_from_slice(&data[..data.len().min(room)]);
        }
    }
    out
}

/// Reads whisper.cpp's answer. Pure: the status and body in, the sentence or why not out.
pub(crate) fn parse_answer(status: u16, body: &[u8]) -> Result<String> {
    if !is_success(status) {
        let cut = &body[..body.len().min(MAX_ERROR_BODY_BYTES)];
        return Err(VoiceError::HttpStatus {
            status,
            body: String::from_utf8_lossy(cut).trim().to_owned(),
        });
    }
    let json = serde_json::from_slice::<serde_json::Value>(body).ok();
    if let Some(error) = json.as_ref().and_then(|v| v.as_object()?.get("error")) {
        let message = match error {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        return Err(VoiceError::EngineError { message });
    }
    let Some(value) = json else {
        return Err(VoiceError::MalformedResponse {
            reason: "the body is not JSON".to_owned(),
        });
    };
    let Some(object) = value.as_object() else {
        return Err(VoiceError::MalformedResponse {
            reason: "the body is not a JSON object".to_owned(),
        });
    };
    match object.get("text") {
        Some(serde_json::Value::String(text)) => Ok(text.trim().to_owned()),
        Some(_) => Err(VoiceError::MalformedResponse {
            reason: "\"text\" is not a string".to_owned(),
        }),
        None => Err(VoiceError::MalformedResponse {
            reason: "no \"text\" field".to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceiling_is_four_times_the_utterance_floored_at_thirty_seconds() {
        assert_eq!(default_ceiling(Duration::from_secs(2)), WAIT_FLOOR);
        assert_eq!(default_ceiling(Duration::from_millis(7_500)), WAIT_FLOOR);
        assert_eq!(
            default_ceiling(Duration::from_secs(8)),
            Duration::from_secs(32)
        );
        assert_eq!(
            default_ceiling(Duration::from_secs(30)),
            Duration::from_secs(120)
        );
        let c = WhisperClient::new(Endpoint::Tcp(SocketAddr::from(([127, 0, 0, 1], 1))));
        assert_eq!(c.ceiling(Duration::from_secs(10)), Duration::from_secs(40));
        let c = c.with_max_wait(Duration::from_millis(300));
        assert_eq!(
            c.ceiling(Duration::from_secs(10)),
            Duration::from_millis(300)
        );
    }

    #[test]
    fn answers_are_read_by_status_and_shape() {
        assert_eq!(
            parse_answer(200, br#"{"text":" Hello there.\n"}"#).unwrap(),
            "Hello there."
        );
        assert_eq!(parse_answer(200, br#"{"text":"plain"}"#).unwrap(), "plain");
        assert_eq!(parse_answer(200, br#"{"text":""}"#).unwrap(), "");
        assert_eq!(
            parse_answer(200, br#"{"error":"failed to read WAV"}"#).unwrap_err(),
            VoiceError::EngineError {
                message: "failed to read WAV".into()
            }
        );
        assert_eq!(
            parse_answer(200, br#"{"error":{"code":3}}"#).unwrap_err(),
            VoiceError::EngineError {
                message: r#"{"code":3}"#.into()
            }
        );
        assert_eq!(
            parse_answer(400, br#"{"error":"bad"}"#).unwrap_err().code(),
            "engine_status"
        );
        assert_eq!(
            parse_answer(500, b"Internal Server Error\n").unwrap_err(),
            VoiceError::HttpStatus {
                status: 500,
                body: "Internal Server Error".into()
            }
        );
        for (body, why) in [
            (&b"{\"text\": "[..], "the body is not JSON"),
            (&b"[1,2]"[..], "the body is not a JSON object"),
            (&b"{\"text\": 3}"[..], "\"text\" is not a string"),
            (&b"{}"[..], "no \"text\" field"),
        ] {
            assert_eq!(
                parse_answer(200, body).unwrap_err(),
                VoiceError::MalformedResponse { reason: why.into() }
            );
        }
        // Hostile bodies: nesting far past serde_json's recursion limit is malformed, not a
        // stack overflow.
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(
            parse_answer(200, deep.as_bytes()).unwrap_err().code(),
            "engine_malformed"
        );
        let long = vec![b'x'; 2_000];
        match parse_answer(503, &long).unwrap_err() {
            VoiceError::HttpStatus { status, body } => {
                assert_eq!(status, 503);
                assert_eq!(body.len(), MAX_ERROR_BODY_BYTES);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn blocking_client_refuses_to_run_inside_a_runtime() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let got = rt.block_on(async { block_on(async { 1 }) });
        assert_eq!(got.unwrap_err().code(), "runtime_unavailable");
        assert_eq!(block_on(async { 1 }).unwrap(), 1);
    }
}
