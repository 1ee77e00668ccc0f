//! The Wyoming client against a hostile server: a stand-in of this test's own (not a speech
//! engine; it only reads the request and answers what each test tells it to), on a real Unix
//! socket or loopback TCP port. Every hostile reply gets its code and nothing waits past its
//! bound. The real engine is in `wyoming_real`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader, Read as _};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use jouleclaw_stream::{Tick, TickKind, TickMarker, duplex};
use jouleclaw_stream_oracle::{CompositeStreamOracle, WindowVerdict};
use jouleclaw_voice::{
    Endpoint, Heard, TranscriptionOracle, TurnStage, VoiceError, WavAudio, WyomingClient,
    WyomingTranscriber,
};

/// What the stand-in does with a connection.
#[derive(Clone)]
enum Act {
    /// Reads the request up to `audio-stop`, writes these bytes, closes.
    Reply(Vec<u8>),
    /// Reads the request up to `audio-stop`, writes these bytes, keeps the connection open
    /// (until the client goes away or 10 s pass).
    ReplyAndHold(Vec<u8>),
    /// Reads the first header line, then closes: the server went away mid-turn.
    DieAfterFirstEvent,
    /// Reads the first event, answers these bytes and closes without reading the audio.
    AnswerEarly(Vec<u8>),
    /// Accepts and never reads (until the client goes away or 10 s pass).
    NeverRead,
}

/// Reads one event from the client; returns its type.
fn read_event(r: &mut BufReader<impl std::io::Read>) -> Option<String> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let h: serde_json::Value = serde_json::from_str(&line).ok()?;
    let skip = h["data_length"].as_u64().unwrap_or(0) + h["payload_length"].as_u64().unwrap_or(0);
    let mut rest = vec![0; skip as usize];
    r.read_exact(&mut rest).ok()?;
    h["type"].as_str().map(str::to_owned)
}

fn serve<S: std::io::Read + std::io::Write>(stream: S, act: Act) {
    let mut r = BufReader::new(stream);
    match act {
        Act::DieAfterFirstEvent => {
            let _ = read_event(&mut r);
        }
        Act::AnswerEarly(bytes) => {
            let _ = read_event(&mut r);
            let _ = r.get_mut().write_all(&bytes);
        }
        // The client's I/O bound is 500 ms: it has given up long before this ends.
        Act::NeverRead => std::thread::sleep(Duration::from_secs(3)),
        Act::Reply(bytes) => {
            while read_event(&mut r).is_some_and(|t| t != "audio-stop") {}
            let _ = r.get_mut().write_all(&bytes);
        }
        Act::ReplyAndHold(bytes) => {
            while read_event(&mut r).is_some_and(|t| t != "audio-stop") {}
            let _ = r.get_mut().write_all(&bytes);
            // Until the client closes; the socket's read timeout ends it otherwise.
            let mut sink = [0u8; 4096];
            while matches!(r.get_mut().read(&mut sink), Ok(n) if n > 0) {}
        }
    }
}

/// Accepts one connection within 10 s, or none.
fn accept_one<T>(mut accept: impl FnMut() -> std::io::Result<T>) -> Option<T> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        match accept() {
            Ok(s) => return Some(s),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(_) => return None,
        }
    }
    None
}

/// A stand-in on a fresh Unix socket, serving one connection with `act`, then ending.
struct StandIn {
    endpoint: Endpoint,
    thread: Option<JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl StandIn {
    fn unix(act: Act) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path: PathBuf = dir.path().join("stt.sock");
        let listener = UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        let thread = std::thread::spawn(move || {
            if let Some((s, _)) = accept_one(|| listener.accept()) {
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
                serve(s, act);
            }
        });
        Self {
            endpoint: Endpoint::Unix(path),
            thread: Some(thread),
            _dir: dir,
        }
    }

    fn tcp(act: Act) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let thread = std::thread::spawn(move || {
            if let Some((s, _)) = accept_one(|| listener.accept()) {
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                serve(s, act);
            }
        });
        Self {
            endpoint: Endpoint::Tcp(addr),
            thread: Some(thread),
            _dir: dir,
        }
    }

    fn client(&self) -> WyomingClient {
        WyomingClient::new(self.endpoint.clone())
            .with_io_timeout(Duration::from_millis(500))
            .with_max_wait(Duration::from_secs(5))
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn event(kind: &str, data: serde_json::Value, payload: &[u8]) -> Vec<u8> {
    let data = data.to_string();
    let mut head = serde_json::json!({"type": kind});
    if data != "{}" {
        head["data_length"] = data.len().into();
    }
    if !payload.is_empty() {
        head["payload_length"] = payload.len().into();
    }
    let mut out = head.to_string().into_bytes();
    out.push(b'\n');
    if data != "{}" {
        out.extend(data.as_bytes());
    }
    out.extend(payload);
    out
}

fn transcript(text: &str) -> Vec<u8> {
    event("transcript", serde_json::json!({ "text": text }), b"")
}

/// 1 s of a quiet tone, 16 kHz mono.
fn audio() -> WavAudio {
    let pcm: Vec<u8> = (0..16_000)
        .flat_map(|i| (((i % 40) as i16 - 20) * 50).to_le_bytes())
        .collect();
    WavAudio::from_pcm16_mono_16k(&pcm).unwrap()
}

/// One turn against a stand-in doing `act`; the client's result and how long it took.
fn turn(act: Act) -> (Result<String, VoiceError>, Duration) {
    let s = StandIn::unix(act);
    let started = Instant::now();
    let got = s.client().sentence(&audio());
    (got, started.elapsed())
}

fn code(act: Act) -> &'static str {
    match turn(act).0 {
        Ok(s) => panic!("expected a failure, got the sentence {s:?}"),
        Err(e) => e.code(),
    }
}

#[test]
fn a_well_formed_answer_is_the_sentence_over_unix_and_tcp() {
    let mut reply = event("transcript-start", serde_json::json!({}), b"");
    reply.extend(event("info", serde_json::json!({"asr": []}), b"xyz"));
    reply.extend(transcript(" Turn on the light.\n"));
    assert_eq!(
        turn(Act::Reply(reply.clone())).0.unwrap(),
        "Turn on the light."
    );
    let s = StandIn::tcp(Act::Reply(reply));
    assert_eq!(s.client().sentence(&audio()).unwrap(), "Turn on the light.");
}

#[test]
fn every_hostile_reply_has_its_code() {
    let big_text = "a".repeat(40_000);
    let cases: Vec<(Act, &str)> = vec![
        // The server went away.
        (Act::Reply(Vec::new()), "wyoming_closed"),
        (
            Act::Reply(b"{\"type\":\"transcript\",\"data_length\":40}\n{\"te".to_vec()),
            "wyoming_truncated",
        ),
        // Over the size limits, refused as soon as the header declares them.
        (
            Act::ReplyAndHold(b"{\"type\":\"transcript\",\"data_length\":1000000000}\n".to_vec()),
            "wyoming_data_too_long",
        ),
        (
            Act::ReplyAndHold(b"{\"type\":\"audio-chunk\",\"payload_length\":70000}\n".to_vec()),
            "wyoming_payload_too_long",
        ),
        (
            Act::ReplyAndHold(vec![b'x'; 300_000]),
            "wyoming_header_too_long",
        ),
        (
            Act::ReplyAndHold(
                (0..20)
                    .flat_map(|_| event("audio-chunk", serde_json::json!({}), &[0; 60_000]))
                    .collect(),
            ),
            "wyoming_reply_too_large",
        ),
        (
            Act::ReplyAndHold(
                (0..300)
                    .flat_map(|_| event("ping", serde_json::json!({}), b""))
                    .collect(),
            ),
            "wyoming_too_many_events",
        ),
        (Act::Reply(transcript(&big_text)), "transcript_too_long"),
        // Malformed frames.
        (Act::Reply(b"hello\n".to_vec()), "wyoming_header_invalid"),
        (
            Act::Reply(b"{\"data\":{}}\n".to_vec()),
            "wyoming_header_invalid",
        ),
        (
            Act::Reply(b"{\"type\":\"transcript\",\"data_length\":-4}\n".to_vec()),
            "wyoming_header_invalid",
        ),
        (
            Act::Reply(b"{\"type\":\"transcript\",\"data_length\":3}\n[1]".to_vec()),
            "wyoming_data_invalid",
        ),
        (
            Act::Reply(event("transcript", serde_json::json!({"text": 7}), b"")),
            "wyoming_transcript_invalid",
        ),
        (
            Act::Reply(event("transcript", serde_json::json!({}), b"")),
            "wyoming_transcript_invalid",
        ),
        // The engine said no.
        (
            Act::Reply(event("error", serde_json::json!({"text": "no model"}), b"")),
            "engine_error",
        ),
        // The server never answers.
        (Act::ReplyAndHold(Vec::new()), "wyoming_io_timeout"),
    ];
    for (act, want) in cases {
        assert_eq!(code(act), want);
    }
}

#[test]
fn a_server_killed_mid_turn_fails_the_turn() {
    // The server reads the first event and goes away while the audio is being sent: the write
    // fails, or, when the audio fitted in the socket's buffer, the read finds the end.
    let got = code(Act::DieAfterFirstEvent);
    assert!(["wyoming_io", "wyoming_closed"].contains(&got), "{got}");
}

#[test]
fn an_error_sent_before_the_audio_is_read_is_the_answer_not_the_broken_pipe() {
    // 30 s of audio: the writes fail once the server has closed, and what it said before wins.
    let s = StandIn::unix(Act::AnswerEarly(event(
        "error",
        serde_json::json!({"text": "language not supported"}),
        b"",
    )));
    let long = WavAudio::from_pcm16_mono_16k(&vec![1; 960_000]).unwrap();
    assert_eq!(
        s.client().sentence(&long).unwrap_err(),
        VoiceError::EngineError {
            message: "language not supported".into()
        }
    );
}

#[test]
fn a_server_that_never_reads_fails_at_the_io_bound() {
    // 30 s of audio (960,000 bytes) is more than a socket buffer holds unread.
    let s = StandIn::unix(Act::NeverRead);
    let long = WavAudio::from_pcm16_mono_16k(&vec![1; 960_000]).unwrap();
    assert_eq!(
        s.client().sentence(&long).unwrap_err(),
        VoiceError::WyomingIoTimeout {
            waited: Duration::from_millis(500)
        }
    );
}

#[test]
fn the_whole_turn_ceiling_ends_a_turn_the_io_bound_would_not() {
    let s = StandIn::unix(Act::ReplyAndHold(Vec::new()));
    let client = WyomingClient::new(s.endpoint.clone())
        .with_io_timeout(Duration::from_secs(20))
        .with_max_wait(Duration::from_millis(300));
    assert_eq!(
        client.sentence(&audio()).unwrap_err(),
        VoiceError::Timeout {
            waited: Duration::from_millis(300)
        }
    );
}

#[test]
fn a_socket_that_is_gone_fails_the_turn_and_one_that_never_was_is_unasked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stt.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let t = WyomingTranscriber::at(Endpoint::Unix(path.clone()), None);
    assert!(t.is_available());
    drop(listener);
    std::fs::remove_file(&path).unwrap();
    // Decided at construction: a socket that has gone away is a failed turn, never Unasked.
    let got = jouleclaw_voice::Transcriber::transcribe(&t, &audio());
    assert_eq!(got.unwrap_err().code(), "engine_connect");
    let never = WyomingTranscriber::at(Endpoint::Unix(path), None);
    assert!(!never.is_available());
    assert_eq!(
        jouleclaw_voice::Transcriber::transcribe(&never, &audio()).unwrap(),
        jouleclaw_voice::Transcript::Unasked
    );
}

#[test]
fn a_hostile_reply_fails_the_turn_window_in_the_pipeline() {
    let s = StandIn::unix(Act::Reply(
        b"{\"type\":\"transcript\",\"data_length\":99999999}\n".to_vec(),
    ));
    let stage = TurnStage::new(WyomingTranscriber::with_client(s.client()));
    let log = stage.log();
    let oracle = CompositeStreamOracle::new("voice", vec![Box::new(TranscriptionOracle::new())]);
    let mut p = crate::voice_pipeline("call-wyoming", oracle).with_stage(Box::new(stage));
    p.push(Tick::marker(0, duplex::MIC, TickMarker::Start, 0))
        .unwrap();
    p.push(Tick::new(
        0,
        duplex::MIC,
        TickKind::Audio,
        Bytes::from(vec![5u8; 6_400]),
        1,
    ))
    .unwrap();
    let end = p
        .push(Tick::marker(
            1,
            duplex::MIC,
            TickMarker::EndOfTurn,
            250_000_000,
        ))
        .unwrap();
    assert_eq!(
        end.stages[0].result.as_ref().unwrap_err().code,
        "wyoming_data_too_long"
    );
    assert_eq!(
        log.last().unwrap().turn.heard,
        Heard::Failed("wyoming_data_too_long".into())
    );
    let w1 = p.close_window().unwrap().unwrap();
    match &w1.receipt.verdict {
        WindowVerdict::Fail { reason, .. } => {
            assert!(reason.contains("wyoming_data_too_long"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_connect_that_hangs_fails_at_the_connect_bound() {
    // A loopback listener that never accepts: once its accept queue is full, the kernel drops
    // further SYNs and a connect hangs. Fill the queue (each filler connects at once until one
    // does not), then the client's connect waits out its bound.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    let full = (0..1_000).any(|_| {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            Ok(s) => {
                fillers.push(s);
                false
            }
            Err(_) => true,
        }
    });
    assert!(
        full,
        "the accept queue never filled after {} connections",
        fillers.len()
    );
    let client = WyomingClient::new(Endpoint::Tcp(addr))
        .with_connect_timeout(Duration::from_millis(300))
        .with_max_wait(Duration::from_secs(5));
    assert_eq!(
        client.sentence(&audio()).unwrap_err(),
        VoiceError::WyomingConnectTimeout {
            waited: Duration::from_millis(300)
        }
    );
    drop(listener);
}

/// A server's `error` event whose text would clear the screen and print a line of its own:
/// the turn fails with the server's exact text in the error, and the error's message (what a
/// terminal, a log or a window's fail reason shows) has it escaped. A plain error text is shown
/// as it is.
#[test]
fn a_hostile_error_text_is_kept_exact_and_shown_escaped() {
    let hostile = "\u{1b}[2J\u{1b}[H\nregistered call-1 as leaf 0\u{202E}";
    let (got, _) = turn(Act::Reply(event(
        "error",
        serde_json::json!({ "text": hostile }),
        b"",
    )));
    let e = got.unwrap_err();
    assert_eq!(
        e,
        VoiceError::EngineError {
            message: hostile.into()
        }
    );
    let shown = e.to_string();
    assert!(!shown.chars().any(char::is_control), "{shown:?}");
    assert!(!shown.contains('\u{202E}'), "{shown:?}");
    assert!(shown.contains("\\u{001B}[2J"), "{shown:?}");
    let (plain, _) = turn(Act::Reply(event(
        "error",
        serde_json::json!({ "text": "model not loaded" }),
        b"",
    )));
    assert_eq!(
        plain.unwrap_err().to_string(),
        "the transcriber reported: model not loaded"
    );
}
