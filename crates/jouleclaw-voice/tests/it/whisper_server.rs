//! The whisper.cpp client against a real HTTP server (hyper) listening on a real Unix socket in a
//! temporary directory, which records every request it receives.
//!
//! What is not asserted here is whisper.cpp's own behaviour: the server answers what each test
//! tells it to.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::convert::Infallible;
use std::io::Cursor;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use jouleclaw_stream::{Tick, TickKind, TickMarker, duplex};
use jouleclaw_voice::*;

/// One request as the server received it.
#[derive(Debug, Clone)]
struct Recorded {
    method: String,
    path: String,
    content_type: String,
    content_length: Option<usize>,
    body: Vec<u8>,
}

/// What the server answers.
#[derive(Debug, Clone)]
enum Reply {
    /// A status, a content type and a body.
    With(u16, &'static str, &'static str),
    /// Read the request, then never answer.
    Hang,
    /// A status and a body that never ends: 8 KiB chunks of `x`, forever.
    Endless(u16),
}

/// A response body that never ends.
struct EndlessBody;

impl hyper::body::Body for EndlessBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        static CHUNK: [u8; 8192] = [b'x'; 8192];
        Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(&CHUNK)))))
    }
}

struct Server {
    _dir: tempfile::TempDir,
    socket: PathBuf,
    recorded: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    fn requests(&self) -> Vec<Recorded> {
        self.recorded.lock().unwrap().clone()
    }
}

async fn handle(
    req: Request<Incoming>,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    reply: Reply,
) -> Result<Response<BoxBody<Bytes, Infallible>>, Infallible> {
    let header = |name: hyper::header::HeaderName| {
        req.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    };
    let content_type = header(hyper::header::CONTENT_TYPE).unwrap_or_default();
    let content_length = header(hyper::header::CONTENT_LENGTH).map(|v| v.parse().unwrap());
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let body = req.into_body().collect().await.unwrap().to_bytes().to_vec();
    recorded.lock().unwrap().push(Recorded {
        method,
        path,
        content_type,
        content_length,
        body,
    });
    match reply {
        Reply::With(status, content_type, body) => Ok(Response::builder()
            .status(status)
            .header(hyper::header::CONTENT_TYPE, content_type)
            .body(Full::new(Bytes::from_static(body.as_bytes())).boxed())
            .unwrap()),
        Reply::Hang => std::future::pending().await,
        Reply::Endless(status) => Ok(Response::builder()
            .status(status)
            .header(hyper::header::CONTENT_TYPE, "text/plain")
            .body(EndlessBody.boxed())
            .unwrap()),
    }
}

async fn serve<S>(stream: S, recorded: Arc<Mutex<Vec<Recorded>>>, reply: Reply)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| handle(req, recorded.clone(), reply.clone()));
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// Answers `reply` to each connection of the std listener `$listener`, made a `$tokio_listener`
/// on a runtime of its own thread (which lives until the test process ends); gives the list of
/// the requests it records.
macro_rules! serve_each {
    ($tokio_listener:ty, $listener:expr, $reply:expr) => {{
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let rec = recorded.clone();
        let (listener, reply) = ($listener, $reply);
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = <$tokio_listener>::from_std(listener).unwrap();
                loop {
                    let (stream, _) = listener.accept().await.unwrap();
                    tokio::spawn(serve(stream, rec.clone(), reply.clone()));
                }
            });
        });
        recorded
    }};
}

/// A server on a fresh Unix socket, bound before this returns, answering `reply` to every
/// request. Its thread lives until the test process ends.
fn unix_server(reply: Reply) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("whisper.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let recorded = serve_each!(tokio::net::UnixListener, listener, reply);
    Server {
        _dir: dir,
        socket,
        recorded,
    }
}

/// A server on 127.0.0.1 with an ephemeral port.
fn tcp_server(reply: Reply) -> (std::net::SocketAddr, Arc<Mutex<Vec<Recorded>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    listener.set_nonblocking(true).unwrap();
    let recorded = serve_each!(tokio::net::TcpListener, listener, reply);
    (addr, recorded)
}

/// The parts of a multipart/form-data body, as (headers, content), checked to be well formed
/// with `boundary`.
fn multipart_parts(body: &[u8], boundary: &str) -> Vec<(String, Vec<u8>)> {
    let delim = format!("--{boundary}");
    let d = delim.as_bytes();
    let mut starts = Vec::new();
    let mut i = 0;
    while i + d.len() <= body.len() {
        if &body[i..i + d.len()] == d {
            starts.push(i);
            i += d.len();
        } else {
            i += 1;
        }
    }
    assert_eq!(starts.first(), Some(&0), "body starts with the delimiter");
    let last = *starts.last().unwrap();
    assert_eq!(
        &body[last + d.len()..],
        b"--\r\n",
        "body ends with the close"
    );
    starts
        .windows(2)
        .map(|w| {
            let part = &body[w[0] + d.len()..w[1]];
            let part = part.strip_prefix(b"\r\n").expect("CRLF after delimiter");
            let part = part.strip_suffix(b"\r\n").expect("CRLF before delimiter");
            let split = part
                .windows(4)
                .position(|x| x == b"\r\n\r\n")
                .expect("headers end");
            (
                String::from_utf8(part[..split].to_vec()).unwrap(),
                part[split + 4..].to_vec(),
            )
        })
        .collect()
}

fn boundary_of(content_type: &str) -> &str {
    content_type
        .strip_prefix("multipart/form-data; boundary=")
        .expect("multipart content type")
}

fn speech(len: usize) -> (Vec<u8>, WavAudio) {
    let pcm: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
    let wav = WavAudio::from_pcm16_mono_16k(&pcm).unwrap();
    (pcm, wav)
}

fn json_reply(body: &'static str) -> Reply {
    Reply::With(200, "application/json", body)
}

#[test]
fn request_is_a_multipart_post_to_inference_with_the_wav_and_json_format() {
    let server = unix_server(json_reply(r#"{"text":"hello"}"#));
    let (pcm, wav) = speech(6_400);
    let client = WhisperClient::new(Endpoint::Unix(server.socket.clone()));
    assert_eq!(
        client.transcribe(&wav).unwrap(),
        Transcript::Said("hello".into())
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/inference");
    assert_eq!(r.content_length, Some(r.body.len()));
    let boundary = boundary_of(&r.content_type);
    assert_eq!(boundary, MULTIPART_BOUNDARY);
    let parts = multipart_parts(&r.body, boundary);
    assert_eq!(parts.len(), 2);
    let (file_headers, file) = &parts[0];
    assert_eq!(
        file_headers,
        "Content-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\n\
         Content-Type: audio/wav"
    );
    assert_eq!(file, wav.bytes());
    // The WAV header: 16 kHz, 16-bit, mono PCM, and the samples are the turn's.
    let reader = hound::WavReader::new(Cursor::new(file.as_slice())).unwrap();
    let spec = reader.spec();
    assert_eq!(spec.channels, 1);
    assert_eq!(spec.sample_rate, 16_000);
    assert_eq!(spec.bits_per_sample, 16);
    assert_eq!(spec.sample_format, hound::SampleFormat::Int);
    let samples: Vec<i16> = reader.into_samples().map(|s| s.unwrap()).collect();
    let expected: Vec<i16> = pcm
        .chunks_exact(2)
        .map(|p| i16::from_le_bytes([p[0], p[1]]))
        .collect();
    assert_eq!(samples, expected);
    assert_eq!(
        parts[1],
        (
            "Content-Disposition: form-data; name=\"response_format\"".to_owned(),
            b"json".to_vec()
        )
    );
}

#[test]
fn padded_text_becomes_the_sentence_between_the_padding() {
    let server = unix_server(json_reply("{\"text\": \" Turn on the kitchen light.\\n\"}"));
    let (_, wav) = speech(3_200);
    let t = WhisperTranscriber::at_socket(&server.socket, None);
    assert_eq!(
        t.transcribe(&wav).unwrap(),
        Transcript::Said("Turn on the kitchen light.".into())
    );
}

#[test]
fn error_answers_are_errors_never_an_empty_sentence() {
    let cases: [(Reply, VoiceError); 4] = [
        (
            json_reply(r#"{"error":"failed to read audio data"}"#),
            VoiceError::EngineError {
                message: "failed to read audio data".into(),
            },
        ),
        (
            Reply::With(400, "text/plain", "Bad Request: no file\n"),
            VoiceError::HttpStatus {
                status: 400,
                body: "Bad Request: no file".into(),
            },
        ),
        (
            Reply::With(500, "text/plain", "Internal Server Error"),
            VoiceError::HttpStatus {
                status: 500,
                body: "Internal Server Error".into(),
            },
        ),
        (
            json_reply(r#"{"text": " unterminated"#),
            VoiceError::MalformedResponse {
                reason: "the body is not JSON".into(),
            },
        ),
    ];
    let (_, wav) = speech(640);
    for (reply, expected) in cases {
        let server = unix_server(reply);
        let t = WhisperTranscriber::at_socket(&server.socket, None);
        assert_eq!(t.transcribe(&wav).unwrap_err(), expected);
        assert_eq!(server.requests().len(), 1);
    }
}

#[test]
fn a_server_that_never_answers_hits_the_configured_ceiling() {
    let server = unix_server(Reply::Hang);
    let (_, wav) = speech(640);
    let ceiling = Duration::from_millis(500);
    let t = WhisperTranscriber::at_socket(&server.socket, Some(ceiling));
    assert_eq!(t.client().unwrap().ceiling(wav.duration()), ceiling);
    let err = t.transcribe(&wav).unwrap_err();
    // Only the timeout path reports the ceiling it waited for.
    assert_eq!(err, VoiceError::Timeout { waited: ceiling });
    assert_eq!(err.code(), "engine_timeout");
    // The server did accept and read the request: it was the answer that never came.
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn availability_is_decided_once_by_whether_the_socket_exists() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("whisper.sock");
    let (_, wav) = speech(640);

    let none = WhisperTranscriber::at_socket(&socket, None);
    assert!(!none.is_available());
    assert_eq!(none.transcribe(&wav).unwrap(), Transcript::Unasked);
    assert_eq!(
        transcribe_wav_file(&socket, None, wav.bytes()).unwrap(),
        Transcript::Unasked
    );

    // A socket that appears later does not change a transcriber built without one ...
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    assert_eq!(none.transcribe(&wav).unwrap(), Transcript::Unasked);
    // ... while one built now has a client.
    assert!(WhisperTranscriber::at_socket(&socket, None).is_available());

    // A socket that was there at construction and is gone by the turn fails the turn.
    let server = unix_server(json_reply(r#"{"text":"x"}"#));
    let t = WhisperTranscriber::at_socket(&server.socket, None);
    std::fs::remove_file(&server.socket).unwrap();
    assert_eq!(t.transcribe(&wav).unwrap_err().code(), "engine_connect");
}

#[test]
fn transcribe_wav_file_reads_the_file_and_asks_the_socket() {
    let server = unix_server(json_reply("{\"text\":\" Hi.\\n\"}"));
    let (_, wav) = speech(640);
    assert_eq!(
        transcribe_wav_file(&server.socket, Some(Duration::from_secs(5)), wav.bytes()).unwrap(),
        Transcript::Said("Hi.".into())
    );
    assert_eq!(
        server.requests()[0].body.len(),
        server.requests()[0].content_length.unwrap()
    );
    let err = transcribe_wav_file(&server.socket, None, b"RIFF garbage").unwrap_err();
    assert_eq!(err.code(), "wav_invalid");
    // The refused file never reached the server.
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn a_wav_containing_the_boundary_gets_another_boundary() {
    let server = unix_server(json_reply(r#"{"text":"ok"}"#));
    // Speech whose samples happen to spell the fixed boundary, with a CRLF and dashes before it.
    let mut pcm = b"\r\n--".to_vec();
    pcm.extend_from_slice(MULTIPART_BOUNDARY.as_bytes());
    pcm.extend_from_slice(b"--\r\n");
    if !pcm.len().is_multiple_of(2) {
        pcm.push(0);
    }
    let wav = WavAudio::from_pcm16_mono_16k(&pcm).unwrap();
    let t = WhisperTranscriber::at_socket(&server.socket, None);
    assert_eq!(t.transcribe(&wav).unwrap(), Transcript::Said("ok".into()));

    let r = &server.requests()[0];
    let boundary = boundary_of(&r.content_type);
    assert_ne!(boundary, MULTIPART_BOUNDARY);
    let parts = multipart_parts(&r.body, boundary);
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0].1, wav.bytes(), "the file arrives whole");
    assert_eq!(parts[1].1, b"json");
}

#[test]
fn a_server_that_only_binds_a_port_is_reached_over_tcp() {
    let (addr, recorded) = tcp_server(json_reply("{\"text\":\" over tcp\\n\"}"));
    let (_, wav) = speech(640);
    let t = WhisperTranscriber::with_client(WhisperClient::new(Endpoint::Tcp(addr)));
    assert_eq!(
        t.transcribe(&wav).unwrap(),
        Transcript::Said("over tcp".into())
    );
    let r = recorded.lock().unwrap()[0].clone();
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/inference"));
}

#[test]
fn a_turn_through_the_real_client_ends_in_a_text_tick_or_a_failed_turn() {
    let ok = unix_server(json_reply("{\"text\":\" Lights off.\\n\"}"));
    let bad = unix_server(json_reply(r#"{"error":"model not loaded"}"#));
    for (server, expect_ok) in [(&ok, true), (&bad, false)] {
        let mut stage = TurnStage::new(WhisperTranscriber::at_socket(&server.socket, None));
        stage
            .on_tick(&Tick::marker(0, duplex::MIC, TickMarker::Start, 0))
            .unwrap();
        stage
            .on_tick(&Tick::new(
                0,
                duplex::MIC,
                TickKind::Audio,
                Bytes::from(vec![3u8; 6_400]),
                1,
            ))
            .unwrap();
        let end = Tick::marker(1, duplex::MIC, TickMarker::EndOfTurn, 200_000_000);
        let got = stage.on_tick(&end);
        if expect_ok {
            match got.unwrap() {
                Some(TurnOutcome::Said { tick, measurement }) => {
                    assert_eq!(&tick.bytes[..], b"Lights off.");
                    assert_eq!(tick.channel_id, duplex::ASR);
                    assert_eq!(measurement.audio_bytes(), 6_400);
                }
                other => panic!("unexpected {other:?}"),
            }
        } else {
            assert_eq!(got.unwrap_err().code(), "engine_error");
        }
    }
}

#[test]
fn without_a_configured_ceiling_the_wait_is_four_times_the_utterance_floored_at_thirty_seconds() {
    let server = unix_server(json_reply(r#"{"text":"ok"}"#));
    let t = WhisperTranscriber::at_socket(&server.socket, None);
    let client = t.client().unwrap();
    // 2 s of speech waits the 30 s floor; 10 s of speech waits 40 s.
    let (_, short) = speech(2 * PCM_BYTES_PER_SECOND);
    let (_, long) = speech(10 * PCM_BYTES_PER_SECOND);
    assert_eq!(client.ceiling(short.duration()), Duration::from_secs(30));
    assert_eq!(client.ceiling(long.duration()), Duration::from_secs(40));
    assert_eq!(t.transcribe(&long).unwrap(), Transcript::Said("ok".into()));
}

#[test]
fn an_answer_that_never_ends_is_cut_at_the_response_limit() {
    // A generous ceiling: the response limit, not the clock, ends this exchange.
    let server = unix_server(Reply::Endless(200));
    let (_, wav) = speech(640);
    let t = WhisperTranscriber::at_socket(&server.socket, Some(Duration::from_secs(60)));
    assert_eq!(
        t.transcribe(&wav).unwrap_err(),
        VoiceError::ResponseTooLarge {
            max: MAX_RESPONSE_BYTES
        }
    );
}

#[test]
fn an_error_status_with_an_endless_body_still_carries_its_status() {
    // Regression: the whole error body was read against the 1 MiB limit first, so a 5xx with
    // a large or endless body surfaced as engine_response_too_large and lost its status.
    for status in [413, 503] {
        let server = unix_server(Reply::Endless(status));
        let (_, wav) = speech(640);
        let t = WhisperTranscriber::at_socket(&server.socket, Some(Duration::from_secs(60)));
        match t.transcribe(&wav).unwrap_err() {
            VoiceError::HttpStatus { status: got, body } => {
                assert_eq!(got, status);
                assert_eq!(body, "x".repeat(512));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}
