//! `jouleclaw transcribe --wyoming` and `jouleclaw run --transcriber wyoming:...`, run for
//! real, against a stand-in Wyoming server of this test's own on a Unix socket (it is not a
//! speech engine: it reads the request and answers a fixed transcript). The real engine is
//! exercised by `.ci/suites/20-wyoming.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::support::TURN_TRACE;
use jouleclaw_stack::jcr1::decode_receipt;

fn tmp(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "jouleclaw-cli-wyoming-{tag}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn jouleclaw(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jouleclaw"))
        .args(args)
        .output()
        .unwrap()
}

/// `run TRACE --out OUT --transcriber TRANSCRIBER`.
fn run_transcribed(trace: &Path, out: &Path, transcriber: &str) -> Output {
    jouleclaw(&[
        "run",
        trace.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--transcriber",
        transcriber,
    ])
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A 16 kHz 16-bit mono WAV of `samples` samples of value `v`.
fn wav(samples: usize, v: i16) -> Vec<u8> {
    let data_len = (samples * 2) as u32;
    let mut out = b"RIFF".to_vec();
    out.extend((36 + data_len).to_le_bytes());
    out.extend(b"WAVEfmt ");
    out.extend(16u32.to_le_bytes());
    out.extend(1u16.to_le_bytes());
    out.extend(1u16.to_le_bytes());
    out.extend(16_000u32.to_le_bytes());
    out.extend(32_000u32.to_le_bytes());
    out.extend(2u16.to_le_bytes());
    out.extend(16u16.to_le_bytes());
    out.extend(b"data");
    out.extend(data_len.to_le_bytes());
    for _ in 0..samples {
        out.extend(v.to_le_bytes());
    }
    out
}

/// Serves `turns` connections at `sock`: reads each request up to `audio-stop`, answers
/// `reply`, closes. Ends by itself within 20 s.
fn stand_in(sock: PathBuf, turns: usize, reply: &'static [u8]) -> std::thread::JoinHandle<()> {
    let listener = UnixListener::bind(&sock).unwrap();
    listener.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut served = 0;
        while served < turns && Instant::now() < deadline {
            let Ok((s, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            served += 1;
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut r = BufReader::new(s);
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let h: serde_json::Value = serde_json::from_str(&line).unwrap();
                let n = h["data_length"].as_u64().unwrap_or(0)
                    + h["payload_length"].as_u64().unwrap_or(0);
                let mut rest = vec![0; n as usize];
                r.read_exact(&mut rest).unwrap();
                if h["type"] == "audio-stop" {
                    let _ = r.get_mut().write_all(reply);
                    break;
                }
            }
        }
    })
}

const TRANSCRIPT: &[u8] =
    b"{\"type\":\"transcript\",\"data_length\":30}\n{\"text\":\" Turn on the light.\"}";

#[test]
fn transcribe_prints_the_wyoming_sentence_then_the_measurement() {
    let dir = tmp("transcribe");
    let sock = dir.join("stt.sock");
    let server = stand_in(sock.clone(), 1, TRANSCRIPT);
    let file = dir.join("a.wav");
    std::fs::write(&file, wav(1600, 16384)).unwrap();
    let o = jouleclaw(&[
        "transcribe",
        "--wyoming",
        &format!("unix:{}", sock.display()),
        file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "Turn on the light.\n1600 samples (100 ms), peak -6.02 dBFS, RMS -6.02 dBFS\n"
    );
    server.join().unwrap();
}

#[test]
fn transcribe_wyoming_refusals_and_no_engine() {
    let dir = tmp("refusals");
    let file = dir.join("a.wav");
    std::fs::write(&file, wav(1600, 0)).unwrap();
    let f = file.to_str().unwrap();
    // No socket: no engine, and the measurement.
    let absent = format!("unix:{}", dir.join("absent.sock").display());
    let o = jouleclaw(&["transcribe", "--wyoming", &absent, f]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        text(&o.stdout),
        "no transcriber\n1600 samples (100 ms), silence: every sample is zero\n"
    );
    // A hostile reply: the measurement on stdout, the code on stderr, exit 1.
    let sock = dir.join("stt.sock");
    let server = stand_in(
        sock.clone(),
        1,
        b"{\"type\":\"transcript\",\"data_length\":999999999}\n",
    );
    let o = jouleclaw(&[
        "transcribe",
        "--wyoming",
        &format!("unix:{}", sock.display()),
        f,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("wyoming_data_too_long"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(
        text(&o.stdout),
        "1600 samples (100 ms), silence: every sample is zero\n"
    );
    server.join().unwrap();
    // A port nobody listens on: a failed turn.
    let o = jouleclaw(&["transcribe", "--wyoming", "tcp:127.0.0.1:1", f]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("engine_connect"),
        "{}",
        text(&o.stderr)
    );
    // A float WAV has no Wyoming form: refused before anything is sent.
    let mut float = wav(1, 0);
    float[20] = 3; // format 3: IEEE float
    float[28..32].copy_from_slice(&64_000u32.to_le_bytes()); // byte rate
    float[32] = 4; // block align
    float[34] = 32; // 32 bits per sample
    float.truncate(40);
    float.extend(4u32.to_le_bytes());
    float.extend(0.5f32.to_le_bytes());
    let float_file = dir.join("float.wav");
    std::fs::write(&float_file, &float).unwrap();
    let o = jouleclaw(&[
        "transcribe",
        "--wyoming",
        "tcp:127.0.0.1:1",
        float_file.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("wyoming_audio_unsupported"),
        "{}",
        text(&o.stderr)
    );
    // Usage: a bad endpoint, both engines, neither.
    for args in [
        vec!["transcribe", "--wyoming", "http://x", f],
        vec!["transcribe", "--wyoming", "tcp:nohost", f],
        vec!["transcribe", "--wyoming", "unix:/x", "--socket", "/y", f],
        vec!["transcribe", f],
    ] {
        assert_eq!(jouleclaw(&args).status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn run_transcriber_wyoming_puts_the_sentence_in_the_stream() {
    let dir = tmp("run");
    let sock = dir.join("stt.sock");
    let server = stand_in(sock.clone(), 1, TRANSCRIPT);
    let trace = dir.join("turn.jsonl");
    std::fs::write(&trace, TURN_TRACE).unwrap();
    let out = dir.join("out");
    let o = run_transcribed(&trace, &out, &format!("wyoming:unix:{}", sock.display()));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    server.join().unwrap();
    let lines = std::fs::read_to_string(out.join("receipts.jsonl")).unwrap();
    let last = decode_receipt(lines.lines().last().unwrap().as_bytes()).unwrap();
    // The marker and the ASR text tick of "Turn on the light." (18 bytes) in window 1.
    assert_eq!(
        (last.window_id, last.tick_count, last.inbound_bytes),
        (1, 2, 18)
    );
    assert!(last.verdict.is_pass());
    // Without an engine at the socket: no turn is transcribed, and the run says so.
    let out2 = dir.join("out2");
    let o = run_transcribed(
        &trace,
        &out2,
        &format!("wyoming:unix:{}", dir.join("absent.sock").display()),
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(
        text(&o.stderr).contains("no transcriber at"),
        "{}",
        text(&o.stderr)
    );
    let lines = std::fs::read_to_string(out2.join("receipts.jsonl")).unwrap();
    let last = decode_receipt(lines.lines().last().unwrap().as_bytes()).unwrap();
    assert_eq!((last.window_id, last.tick_count), (1, 1));
    for bad in ["wyoming:", "wyoming:http://x", "wyoming:tcp:127.0.0.1"] {
        let o = run_transcribed(&trace, &dir.join("o3"), bad);
        assert_eq!(o.status.code(), Some(2), "{bad}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
