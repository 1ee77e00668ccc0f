//! `conformance/voice-turn-vectors.json`: its generator, the stale-file check, and the vectors
//! checked against the meter, the exact reference, the stage, the encoder and the decoder.
//!
//! `JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-voice --test voice_turn_vectors` rewrites
//! the file; otherwise a test fails when it differs from what this generator builds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use jouleclaw_stream::{Tick, TickKind, TickMarker, duplex};
use jouleclaw_voice::*;
use serde_json::{Value, json};

const FILE: &str = "voice-turn-vectors.json";
const CHECKED_IN: &str = include_str!("../../../conformance/voice-turn-vectors.json");

/// A PCM description: segments of samples, each repeated.
type Pcm = Vec<(Vec<i16>, u64)>;

fn expand(pcm: &Pcm) -> Vec<i16> {
    let mut out = Vec::new();
    for (samples, repeat) in pcm {
        for _ in 0..*repeat {
            out.extend_from_slice(samples);
        }
    }
    out
}

fn bytes_of(samples: &[i16]) -> Vec<u8> {
    samples.iter().flat_map(|s| s.to_le_bytes()).collect()
}

fn pcm_json(pcm: &Pcm) -> Value {
    Value::Array(
        pcm.iter()
            .map(|(s, r)| json!({"samples": s, "repeat": r}))
            .collect(),
    )
}

/// One period of a 1 kHz sine at 16 kHz with amplitude 3276.8 (-20 dBFS), rounded half away
/// from zero. Written out so no verifier depends on a sine implementation.
const SINE_1K_MINUS_20: [i16; 16] = [
    0, 1254, 2317, 3027, 3277, 3027, 2317, 1254, 0, -1254, -2317, -3027, -3277, -3027, -2317, -1254,
];

fn square(high: i16, low: i16, half_period: u64, periods: u64) -> Pcm {
    let mut period = vec![high; half_period as usize];
    period.extend(vec![low; half_period as usize]);
    vec![(period, periods)]
}

/// Four samples that carry a remainder, after `rest` samples of `a`.
fn near(a: i16, rest: u64, four: [i16; 4]) -> Pcm {
    vec![(vec![a], rest), (four.to_vec(), 1)]
}

/// The level vectors: (description, pcm).
fn level_cases() -> Vec<(&'static str, Pcm)> {
    vec![
        (
            "full-scale square wave (+32767/-32768, 500 Hz): 0 dBFS peak and 0 dBFS RMS",
            square(32767, -32768, 16, 100),
        ),
        (
            "1 kHz sine of amplitude 3276.8 (-20 dBFS peak): RMS 3.01 dB below the peak",
            vec![(SINE_1K_MINUS_20.to_vec(), 200)],
        ),
        (
            "muted microphone: 3,200 zero samples are silence, no level",
            vec![(vec![0], 3200)],
        ),
        (
            "one sample of magnitude 1 among zeros: the peak floor, -90.31 dBFS",
            vec![(vec![0], 3199), (vec![-1], 1)],
        ),
        (
            "half scale square wave: -6.02 dBFS both",
            square(16384, -16384, 8, 200),
        ),
        (
            "peak 9822, the 16-bit peak nearest a rounding boundary: 2000*log10(9822/32768) = -1046.5000103",
            vec![(vec![9822], 1), (vec![0], 3199)],
        ),
        (
            "RMS 1.6e-14 below the boundary -244.5 (sum of squares 1,956,815,357,946 over 3,200 samples): rounds to -245",
            near(24728, 3196, [32767, 32670, 20073, 758]),
        ),
        (
            "RMS 4.7e-13 below the boundary -216.5 (sum of squares 2,087,131,670,749): rounds to -217; f64 1000*(log10(S)-log10(N*2^30)) rounds to -216",
            near(25538, 3196, [32767, 32746, 24246, 602]),
        ),
        (
            "RMS 1.4e-12 above the boundary -467.5 (sum of squares 1,170,980,999,587): rounds to -467",
            near(19129, 3196, [32767, 20767, 278, 33]),
        ),
        (
            "RMS 2.0e-12 above the boundary -303.5 (sum of squares 1,708,243,780,709): rounds to -303",
            near(23104, 3196, [32767, 32744, 9448, 662]),
        ),
        (
            "RMS 7.6e-14 below the boundary -590.5 (sum of squares 1,323,247,576,598 over 4,800 samples): rounds to -591; f64 1000*log10(S/(N*2^30)) rounds to -590",
            near(16603, 4796, [32767, 10507, 136, 0]),
        ),
    ]
}

fn measure(pcm: &Pcm) -> (LevelMeter, Measurement) {
    let mut meter = LevelMeter::new();
    meter.push_pcm16le(&bytes_of(&expand(pcm))).unwrap();
    (meter, meter.measurement())
}

fn measurement_json(m: &Measurement) -> Value {
    json!({
        "samples": m.samples(),
        "duration_ns": m.duration_ns(),
        "peak_dbfs_hundredths": m.peak_dbfs_hundredths(),
        "rms_dbfs_hundredths": m.rms_dbfs_hundredths(),
    })
}

/// Runs one turn of `pcm` through a TurnStage answering `answer`; returns the recorded turn.
fn run_turn(pcm: &Pcm, answer: TableAnswer) -> VoiceTurn {
    let mut stage = TurnStage::new(TableTranscriber::always(answer));
    stage
        .on_tick(&Tick::marker(0, duplex::MIC, TickMarker::Start, 0))
        .unwrap();
    let bytes = bytes_of(&expand(pcm));
    // In chunks of one 200 ms window, as a mic delivers it.
    for (i, chunk) in bytes.chunks(6_400).enumerate() {
        let tick = Tick::new(
            0,
            duplex::MIC,
            TickKind::Audio,
            Bytes::copy_from_slice(chunk),
            1 + i as u64,
        );
        stage.on_tick(&tick).unwrap();
    }
    let _ = stage.on_tick(&Tick::marker(
        0,
        duplex::MIC,
        TickMarker::EndOfTurn,
        199_000_000,
    ));
    stage.last_turn().unwrap().turn
}

fn sine() -> Pcm {
    vec![(SINE_1K_MINUS_20.to_vec(), 200)]
}

/// The turn vectors: (description, pcm, answer).
fn turn_cases() -> Vec<(&'static str, Pcm, TableAnswer)> {
    vec![
        (
            "said: a transcriber answered; the words and the measurement",
            sine(),
            TableAnswer::Say("turn on the light".into()),
        ),
        (
            "unasked: no transcriber on this machine; the measurement and no text",
            sine(),
            TableAnswer::Unasked,
        ),
        (
            "muted: a transcriber answered no words; the measurement says silence",
            vec![(vec![0], 3200)],
            TableAnswer::Say(String::new()),
        ),
        (
            "failed: the engine could not be reached; its code, never an empty text",
            sine(),
            TableAnswer::Fail(VoiceError::Connect {
                endpoint: "unix:/run/whisper.sock".into(),
                reason: "connection refused".into(),
            }),
        ),
        (
            "failed: a turn with no audio; zero samples, no level",
            vec![],
            TableAnswer::Say("never asked".into()),
        ),
        (
            "said: escapes and non-ASCII in the text",
            vec![(vec![100, -100], 800)],
            TableAnswer::Say("na\u{ef}ve \"quote\" \\ tab\t nl\n \u{1} \u{1f600} </".into()),
        ),
    ]
}

fn heard_name(h: &Heard) -> &'static str {
    match h {
        Heard::Said(_) => "said",
        Heard::Unasked => "unasked",
        Heard::Failed(_) => "failed",
    }
}

/// Must-refuse inputs: (description, bytes, code). Built from the first turn vector.
fn negative_cases() -> Vec<(String, Vec<u8>, &'static str)> {
    let said = run_turn(&sine(), TableAnswer::Say("turn on the light".into()))
        .encode()
        .unwrap();
    let base = String::from_utf8(said).unwrap();
    let edit = |from: &str, to: &str| {
        assert!(base.contains(from), "{from}");
        base.replacen(from, to, 1).into_bytes()
    };
    let m = r#"{"duration_ns":200000000,"peak_dbfs_hundredths":-2000,"rms_dbfs_hundredths":-2301,"samples":3200}"#;
    assert!(base.contains(m), "{base}");
    let with_m = |new_m: &str| base.replacen(m, new_m, 1).into_bytes();
    let failed = run_turn(
        &sine(),
        TableAnswer::Fail(VoiceError::EngineError {
            message: "x".into(),
        }),
    )
    .encode()
    .unwrap();
    let failed = String::from_utf8(failed).unwrap();
    let cases: Vec<(String, Vec<u8>, &'static str)> = vec![
        ("empty input".into(), vec![], "empty_input"),
        (
            "cut in half".into(),
            base.as_bytes()[..base.len() / 2].to_vec(),
            "truncated",
        ),
        (
            "a trailing newline".into(),
            format!("{base}\n").into_bytes(),
            "trailing_bytes",
        ),
        (
            "a space after a colon".into(),
            edit("\"samples\":", "\"samples\": "),
            "whitespace",
        ),
        (
            "a byte-order mark".into(),
            [b"\xef\xbb\xbf".as_slice(), base.as_bytes()].concat(),
            "bom",
        ),
        (
            "keys out of order".into(),
            with_m(
                r#"{"peak_dbfs_hundredths":-2000,"duration_ns":200000000,"rms_dbfs_hundredths":-2301,"samples":3200}"#,
            ),
            "unsorted_keys",
        ),
        (
            "a fraction".into(),
            edit("200000000", "200000000.0"),
            "number_fraction",
        ),
        (
            "an exponent".into(),
            edit("200000000", "2e8"),
            "number_exponent",
        ),
        (
            "an escaped solidus".into(),
            edit("turn on", "turn\\/on"),
            "escape_solidus",
        ),
        (
            "an object three deep".into(),
            edit("\"samples\":3200", "\"samples\":{\"n\":3200}"),
            "depth_exceeded",
        ),
        ("root is an array".into(), b"[]".to_vec(), "wrong_type"),
        ("root is null".into(), b"null".to_vec(), "null"),
        (
            "text is a number".into(),
            edit("\"text\":\"turn on the light\"", "\"text\":5"),
            "wrong_type",
        ),
        (
            "text is null".into(),
            edit("\"text\":\"turn on the light\"", "\"text\":null"),
            "null",
        ),
        (
            "samples is null".into(),
            edit("\"samples\":3200", "\"samples\":null"),
            "null",
        ),
        (
            "samples is a string".into(),
            edit("\"samples\":3200", "\"samples\":\"3200\""),
            "wrong_type",
        ),
        (
            "a level is a boolean".into(),
            edit("-2301", "true"),
            "wrong_type",
        ),
        (
            "an unknown top-level key".into(),
            edit("\"text\":", "\"speaker\":\"x\",\"text\":"),
            "unknown_field",
        ),
        (
            "an unknown measurement key".into(),
            with_m(
                r#"{"duration_ns":200000000,"peak_dbfs_hundredths":-2000,"rms_dbfs_hundredths":-2301,"sample_rate":16000,"samples":3200}"#,
            ),
            "unknown_field",
        ),
        (
            "no measurement".into(),
            br#"{"jc_voice_turn":"voice-turn/1","text":"turn on the light"}"#.to_vec(),
            "missing_field",
        ),
        (
            "no samples".into(),
            with_m(
                r#"{"duration_ns":200000000,"peak_dbfs_hundredths":-2000,"rms_dbfs_hundredths":-2301}"#,
            ),
            "missing_field",
        ),
        (
            "no schema id".into(),
            edit("\"jc_voice_turn\":\"voice-turn/1\",", ""),
            "missing_field",
        ),
        (
            "another schema".into(),
            edit("voice-turn/1", "voice-turn/2"),
            "wrong_schema",
        ),
        (
            "negative samples".into(),
            edit("\"samples\":3200", "\"samples\":-3200"),
            "negative_unsigned",
        ),
        (
            "text and error both".into(),
            edit(
                "\"jc_voice_turn\"",
                "\"error\":\"engine_connect\",\"jc_voice_turn\"",
            ),
            "text_and_error",
        ),
        (
            "an empty text with an error: a failure is never empty words".into(),
            format!("{}{}", &failed[..failed.len() - 1], ",\"text\":\"\"}").into_bytes(),
            "text_and_error",
        ),
        (
            "an error code with an uppercase letter".into(),
            failed
                .replacen("engine_error", "Engine_error", 1)
                .into_bytes(),
            "bad_error_code",
        ),
        (
            "an empty error code".into(),
            failed.replacen("engine_error", "", 1).into_bytes(),
            "bad_error_code",
        ),
        (
            "duration one ns off".into(),
            edit("200000000", "200000001"),
            "duration_mismatch",
        ),
        (
            "a positive peak".into(),
            edit("-2000", "1"),
            "level_out_of_range",
        ),
        (
            "a peak below the floor".into(),
            edit("-2000", "-9032"),
            "level_out_of_range",
        ),
        (
            "an RMS below what 3,200 samples allow".into(),
            edit("-2301", "-12537"),
            "level_out_of_range",
        ),
        (
            "RMS above peak".into(),
            edit("-2301", "-1999"),
            "rms_above_peak",
        ),
        (
            "peak silent, RMS not".into(),
            edit("-2000", "null"),
            "silence_mismatch",
        ),
        (
            "no samples but a level".into(),
            with_m(
                r#"{"duration_ns":0,"peak_dbfs_hundredths":0,"rms_dbfs_hundredths":0,"samples":0}"#,
            ),
            "silence_mismatch",
        ),
    ];
    cases
}

fn build() -> String {
    let levels: Vec<Value> = level_cases()
        .into_iter()
        .enumerate()
        .map(|(i, (description, pcm))| {
            let (meter, m) = measure(&pcm);
            json!({
                "n": i + 1,
                "description": description,
                "pcm": pcm_json(&pcm),
                "sum_squares": meter.sum_squares().to_string(),
                "peak_abs": meter.peak_abs(),
                "expect": measurement_json(&m),
            })
        })
        .collect();
    let turns: Vec<Value> = turn_cases()
        .into_iter()
        .enumerate()
        .map(|(i, (description, pcm, answer))| {
            let turn = run_turn(&pcm, answer);
            let bytes = turn.encode().unwrap();
            json!({
                "n": i + 1,
                "description": description,
                "pcm": pcm_json(&pcm),
                "heard": heard_name(&turn.heard),
                "canonical": String::from_utf8(bytes.clone()).unwrap(),
                "content_hash": blake3::hash(&bytes).to_hex().to_string(),
            })
        })
        .collect();
    let negative: Vec<Value> = negative_cases()
        .into_iter()
        .enumerate()
        .map(|(i, (description, bytes, code))| {
            let r = VoiceTurn::decode(&bytes).unwrap_err();
            assert_eq!(r.code, code, "{description}");
            json!({
                "n": i + 1,
                "description": description,
                "input_hex": hex(&bytes),
                "expect_refusal": code,
                "offset": r.offset,
            })
        })
        .collect();
    let doc = json!({
        "_comment": "voice-turn/1 vectors (spec/VOICE-TURN-V1.md). Owned by jouleclaw-rs; generated by crates/jouleclaw-voice/tests/voice_turn_vectors.rs (JOULECLAW_REGEN_VECTORS=1 rewrites it). pcm: 16-bit samples as segments of {samples, repeat}, expanded in order. levels: the exact measurement of each pcm (sum_squares as a decimal string); some lie within 1e-11 of a rounding boundary. turns: the pcm run through the turn stage with a table transcriber; canonical is the exact voice-turn/1 document, content_hash its BLAKE3. negative: must-refuse inputs; expect_refusal and offset are the Rust decoder's (other verifiers need only refuse, and give the same schema codes when they apply the spec's order).",
        "schema": VOICE_TURN_SCHEMA,
        "levels": levels,
        "turns": turns,
        "negative": negative,
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap();
    s.push('\n');
    s
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn the_vectors_file_is_what_the_generator_builds() {
    let built = build();
    if std::env::var_os("JOULECLAW_REGEN_VECTORS").is_some() {
        let path = format!("{}/../../conformance/{FILE}", env!("CARGO_MANIFEST_DIR"));
        std::fs::write(path, &built).unwrap();
        return;
    }
    assert!(
        CHECKED_IN == built,
        "conformance/{FILE} is stale: JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-voice --test voice_turn_vectors"
    );
}

fn doc() -> Value {
    serde_json::from_str(CHECKED_IN).unwrap()
}

fn pcm_from(v: &Value) -> Vec<i16> {
    let mut out = Vec::new();
    for seg in v.as_array().unwrap() {
        let samples: Vec<i16> = seg["samples"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| i16::try_from(s.as_i64().unwrap()).unwrap())
            .collect();
        for _ in 0..seg["repeat"].as_u64().unwrap() {
            out.extend_from_slice(&samples);
        }
    }
    out
}

#[test]
fn level_vectors_hold_for_the_meter_in_any_chunking() {
    let doc = doc();
    let levels = doc["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 11);
    for v in levels {
        let bytes = bytes_of(&pcm_from(&v["pcm"]));
        for step in [2, 4_096, bytes.len().max(2)] {
            let mut meter = LevelMeter::new();
            for c in bytes.chunks(step) {
                meter.push_pcm16le(c).unwrap();
            }
            assert_eq!(
                meter.sum_squares().to_string(),
                v["sum_squares"].as_str().unwrap()
            );
            assert_eq!(u64::from(meter.peak_abs()), v["peak_abs"].as_u64().unwrap());
            assert_eq!(
                measurement_json(&meter.measurement()),
                v["expect"],
                "{}",
                v["n"]
            );
        }
    }
    // The named ones say what they should.
    let rms = |n: usize| levels[n - 1]["expect"]["rms_dbfs_hundredths"].clone();
    let peak = |n: usize| levels[n - 1]["expect"]["peak_dbfs_hundredths"].clone();
    assert_eq!((peak(1), rms(1)), (json!(0), json!(0)));
    assert_eq!((peak(2), rms(2)), (json!(-2000), json!(-2301)));
    assert_eq!((peak(3), rms(3)), (Value::Null, Value::Null));
    assert_eq!(peak(4), json!(PEAK_FLOOR_HUNDREDTHS));
    assert_eq!(peak(6), json!(-1047));
    assert_eq!(rms(11), json!(-591));
    assert_eq!(
        (rms(7), rms(8), rms(9), rms(10)),
        (json!(-245), json!(-217), json!(-467), json!(-303))
    );
}

#[test]
fn turn_vectors_encode_decode_and_decode_in_any_chunking() {
    let doc = doc();
    let turns = doc["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 6);
    for v in turns {
        let bytes = v["canonical"].as_str().unwrap().as_bytes();
        assert_eq!(
            blake3::hash(bytes).to_hex().as_str(),
            v["content_hash"].as_str().unwrap()
        );
        let turn = VoiceTurn::decode(bytes).unwrap();
        assert_eq!(turn.encode().unwrap(), bytes);
        assert_eq!(heard_name(&turn.heard), v["heard"].as_str().unwrap());
        // The measurement is the pcm's.
        let mut meter = LevelMeter::new();
        meter.push_pcm16le(&bytes_of(&pcm_from(&v["pcm"]))).unwrap();
        assert_eq!(turn.measurement, meter.measurement());
        // Every split point, and one byte at a time.
        for at in 0..=bytes.len() {
            let mut d = VoiceTurnDecoder::new();
            d.push(&bytes[..at]).unwrap();
            d.push(&[]).unwrap();
            d.push(&bytes[at..]).unwrap();
            assert_eq!(d.finish().unwrap(), turn);
        }
        let mut d = VoiceTurnDecoder::new();
        for b in bytes {
            d.push(core::slice::from_ref(b)).unwrap();
        }
        assert_eq!(d.finish().unwrap(), turn);
    }
    // What each says.
    let t = |n: usize| {
        VoiceTurn::decode(turns[n - 1]["canonical"].as_str().unwrap().as_bytes()).unwrap()
    };
    assert_eq!(t(1).heard, Heard::Said("turn on the light".into()));
    assert_eq!(t(2).heard, Heard::Unasked);
    assert!(!turns[1]["canonical"].as_str().unwrap().contains("\"text\""));
    assert_eq!(t(3).heard, Heard::Said(String::new()));
    assert!(t(3).measurement.is_silent());
    assert_eq!(t(4).heard, Heard::Failed("engine_connect".into()));
    assert_eq!(t(5).heard, Heard::Failed("turn_empty".into()));
    assert_eq!(t(5).measurement.samples(), 0);
}

#[test]
fn negative_vectors_are_refused_with_their_code_and_offset_in_any_chunking() {
    let doc = doc();
    let negative = doc["negative"].as_array().unwrap();
    assert!(negative.len() >= 30);
    let mut codes = std::collections::BTreeSet::new();
    for v in negative {
        let bytes = unhex(v["input_hex"].as_str().unwrap());
        let want = (
            v["expect_refusal"].as_str().unwrap(),
            v["offset"].as_u64().unwrap(),
        );
        let r = VoiceTurn::decode(&bytes).unwrap_err();
        assert_eq!((r.code, r.offset), want, "{}", v["description"]);
        codes.insert(r.code);
        for step in [1, 7, 64] {
            let mut d = VoiceTurnDecoder::new();
            let mut refused = None;
            for c in bytes.chunks(step) {
                if let Err(e) = d.push(c) {
                    refused = Some(e);
                    break;
                }
            }
            let r = match refused {
                Some(r) => r,
                None => d.finish().unwrap_err(),
            };
            assert_eq!((r.code, r.offset), want, "{} step {step}", v["description"]);
        }
    }
    // Every schema code has a case.
    for code in VOICE_TURN_SCHEMA_CODES {
        assert!(codes.contains(code), "no negative vector for {code}");
    }
}

#[test]
fn limits_hold_at_their_exact_values() {
    let m = LevelMeter::new().measurement();
    let at = VoiceTurn {
        measurement: m,
        heard: Heard::Said("a".repeat(MAX_TEXT_BYTES)),
    };
    let bytes = at.encode().unwrap();
    assert_eq!(VoiceTurn::decode(&bytes).unwrap(), at);
    let over = VoiceTurn {
        measurement: m,
        heard: Heard::Said("a".repeat(MAX_TEXT_BYTES + 1)),
    };
    assert_eq!(over.encode().unwrap_err().code(), "unencodable");
    let long = String::from_utf8(bytes).unwrap().replacen("\"a", "\"aa", 1);
    assert_eq!(
        VoiceTurn::decode(long.as_bytes()).unwrap_err().code,
        "string_too_long"
    );
    // The worst escaping of the longest text still fits the document limit.
    let ctl = VoiceTurn {
        measurement: m,
        heard: Heard::Said("\u{1}".repeat(MAX_TEXT_BYTES)),
    };
    let bytes = ctl.encode().unwrap();
    assert!(bytes.len() <= VOICE_TURN_LIMITS.max_document_bytes);
    assert_eq!(VoiceTurn::decode(&bytes).unwrap(), ctl);
    // A document past the limit is refused at the first byte past it, however it arrives.
    // An object of many short members: no string or depth limit is reached first.
    let members: Vec<String> = (0..25_000).map(|i| format!("\"k{i:06}\":0")).collect();
    let big = format!("{{{}}}", members.join(","));
    assert!(big.len() > VOICE_TURN_LIMITS.max_document_bytes);
    let r = VoiceTurn::decode(big.as_bytes()).unwrap_err();
    assert_eq!((r.code, r.offset), ("document_too_large", 262_144));
    let mut d = VoiceTurnDecoder::new();
    let r2 = big
        .as_bytes()
        .chunks(10_000)
        .find_map(|c| d.push(c).err())
        .unwrap();
    assert_eq!(r2, r);
    // ... unless an earlier byte was already wrong.
    let early = format!("x{}", "a".repeat(VOICE_TURN_LIMITS.max_document_bytes));
    assert_eq!(
        VoiceTurn::decode(early.as_bytes()).unwrap_err().code,
        "syntax"
    );
    // Error codes at the length bound.
    let code = |c: String| VoiceTurn {
        measurement: m,
        heard: Heard::Failed(c),
    };
    assert!(code("a".repeat(MAX_ERROR_CODE_BYTES)).encode().is_ok());
    assert!(code("a".repeat(MAX_ERROR_CODE_BYTES + 1)).encode().is_err());
    assert!(code("9a".into()).encode().is_err());
    let doc = String::from_utf8(code("a".repeat(64)).encode().unwrap()).unwrap();
    let doc65 = doc.replacen("\"aaaa", "\"aaaaa", 1);
    assert_eq!(
        VoiceTurn::decode(doc65.as_bytes()).unwrap_err().code,
        "bad_error_code"
    );
}
