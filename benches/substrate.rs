//! Criterion benches of the streaming substrate, each group measuring the substrate beside the
//! floor it cannot go below or a peer doing the same job (see `benches/README.md`):
//!
//! - `tick/push_ledger_oracle`: window push + ledger + composite oracle (the facade's
//!   `duplex_voice_oracle`) per 6,400-byte audio tick;
//! - `barge_in/tick_to_yield`: from pushing a `BargeIn` tick to the composite's `Yield`;
//! - `canon`: `jcr1_encode` vs `serde_json_to_vec`, `serde_json_canonicalizer`, `json_canon`;
//! - `decode`: `jcr1_decode_whole`, `jcr1_decode_bytewise` vs `serde_json_from_slice`;
//! - `mint`: `jcr1_mint_sign` vs `ed25519_sign_raw`;
//! - `verify`: `jcr1_verify` vs `ed25519_verify_strict_raw`, `jcr1_verify_batch_{64,256}`;
//! - `e2e/duplex_window`: one duplex-voice window through the facade `Pipeline`: pushed,
//!   judged, minted and signed.
//!
//! Run with `cargo bench --bench substrate -- --warm-up-time 1 --measurement-time 3`; add a group
//! name (e.g. `canon/`) to run one group. Every fixture is checked once before it is measured,
//! so a bench never times a path that fails.

// A bench binary is not library code: a fixture that cannot be built is a bug in the bench, and
// stopping with its message is the right outcome.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::sync::Arc;

use bytes::Bytes;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ed25519_dalek::Signer as _;
use jouleclaw_jcr1::cose::{
    RFC8032_TEST1_SEED, Signer, SingleKey, SoftwareSigner, sign_payload, verify, verify_batch,
};
use jouleclaw_jcr1::{Estimator, Progress, ReceiptDecoder, StreamWindowReceipt, decode_receipt};
use jouleclaw_stack::pipeline::{
    ClosedWindow, Pipeline, PipelineConfig, SigningPolicy, duplex_voice_oracle,
};
use jouleclaw_stream::{
    LedgerPolicy, RollingConservationLedger, StreamSpec, StreamWindow, Tick, TickKind, TickMarker,
    WindowConservationFinding, duplex,
};
use jouleclaw_stream_oracle::{StreamOracle, WindowVerdict};
use jouleclaw_testkit::receipts::seed_receipt;
use serde::{Deserialize, Serialize};

const MS: u64 = 1_000_000;
/// Ticks pushed per measured batch in `tick/`: a full window (`max_ticks_per_window`).
const TICKS_PER_BATCH: usize = 256;

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/// The receipt as a plain serde struct: the same field set with the same JSON types (strings,
/// u64s, nested verdict/conservation structs), fields in wire-table order rather than sorted.
/// It is the peer for `canon/` (serialize) and `decode/` (deserialize).
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ReceiptMirror {
    jc_receipt: String,
    id: String,
    closed_at: String,
    steward: String,
    stream_id: String,
    window_id: u64,
    window_hash: String,
    tick_count: u64,
    inbound_bytes: u64,
    outbound_bytes: u64,
    joules_uj: u64,
    energy_provenance: String,
    verdict: VerdictMirror,
    conservation: ConservationMirror,
}

#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct VerdictMirror {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chain: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    seen_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    oracle: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct ConservationMirror {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    unaccounted: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    barge_in_ts_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    outbound_ts_ns: Option<u64>,
}

impl ReceiptMirror {
    fn of(r: &StreamWindowReceipt) -> Self {
        let (kind, chain, seen_at, oracle, reason) = match &r.verdict {
            WindowVerdict::Pass { chain } => ("pass", Some(chain.clone()), None, None, None),
            WindowVerdict::Yield { seen_at } => ("yield", None, Some(*seen_at), None, None),
            WindowVerdict::Fail { oracle, reason } => (
                "fail",
                None,
                None,
                Some(oracle.clone()),
                Some(reason.clone()),
            ),
            WindowVerdict::NeedMore { oracle, reason } => (
                "need_more",
                None,
                None,
                Some(oracle.clone()),
                Some(reason.clone()),
            ),
        };
        let (unaccounted, barge_in_ts_ns, outbound_ts_ns) = match r.conservation {
            WindowConservationFinding::Conforming => (None, None, None),
            WindowConservationFinding::Hallucination { unaccounted } => {
                (Some(unaccounted), None, None)
            }
            WindowConservationFinding::BargeInIgnored {
                barge_in_ts_ns,
                outbound_ts_ns,
            } => (None, Some(barge_in_ts_ns), Some(outbound_ts_ns)),
        };
        Self {
            jc_receipt: "stream-window/1".into(),
            id: r.id(),
            closed_at: r.closed_at.to_string(),
            steward: r.steward.clone(),
            stream_id: r.stream_id.clone(),
            window_id: r.window_id,
            window_hash: r.window_hash.to_hex().to_string(),
            tick_count: r.tick_count,
            inbound_bytes: r.inbound_bytes,
            outbound_bytes: r.outbound_bytes,
            joules_uj: r.joules_uj,
            energy_provenance: r.energy_provenance.as_str().into(),
            verdict: VerdictMirror {
                kind: kind.into(),
                chain,
                seen_at,
                oracle,
                reason,
            },
            conservation: ConservationMirror {
                kind: r.conservation.kind_str().into(),
                unaccounted,
                barge_in_ts_ns,
                outbound_ts_ns,
            },
        }
    }
}

/// `TICKS_PER_BATCH` 6,400-byte audio ticks for window `w`, alternating mic (inbound) and TTS
/// (outbound) so the ledger works both sides and stays conforming. Every tick shares `audio`.
fn audio_ticks(w: u64, audio: &Bytes) -> Vec<Tick> {
    let t0 = w * 200 * MS;
    (0..TICKS_PER_BATCH as u64)
        .map(|i| {
            let channel = if i % 2 == 0 { duplex::MIC } else { duplex::TTS };
            Tick::new(w, channel, TickKind::Audio, audio.clone(), t0 + i * MS / 2)
        })
        .collect()
}

/// Payloads of one 200 ms duplex-voice window in 20 ms frames.
struct DuplexPayloads {
    mic: Bytes,
    tts: Bytes,
    asr: Bytes,
    llm: Bytes,
}

impl DuplexPayloads {
    fn new() -> Self {
        Self {
            mic: Bytes::from(vec![0x11u8; duplex::MIC_BYTES_PER_WINDOW / 10]),
            tts: Bytes::from(vec![0x22u8; duplex::TTS_BYTES_PER_WINDOW / 10]),
            asr: Bytes::from_static(b"what is the weather like in Lisbon tomorrow"),
            llm: Bytes::from_static(b"Tomorrow in Lisbon: sunny, 21 degrees."),
        }
    }

    /// Window `w`: ten 640-byte mic frames, ten 480-byte TTS frames, one ASR and one LLM text
    /// tick (22 ticks, 6,400 B in and 4,800 B of audio out).
    fn ticks(&self, w: u64) -> Vec<Tick> {
        let t0 = w * 200 * MS;
        let mut ticks = Vec::with_capacity(22);
        for k in 0..10 {
            let t = t0 + k * 20 * MS;
            let text = match k {
                4 => Some((duplex::ASR, &self.asr)),
                7 => Some((duplex::LLM, &self.llm)),
                _ => None,
            };
            let frames = [
                (duplex::MIC, TickKind::Audio, &self.mic, t),
                (duplex::TTS, TickKind::Audio, &self.tts, t + MS),
            ];
            let text = text.map(|(channel, bytes)| (channel, TickKind::Text, bytes, t + 2 * MS));
            for (channel, kind, bytes, ts) in frames.into_iter().chain(text) {
                ticks.push(Tick::new(w, channel, kind, bytes.clone(), ts));
            }
        }
        ticks
    }
}

/// The facade pipeline `e2e/` drives, signing with the RFC 8032 test key.
fn duplex_pipeline() -> Pipeline {
    duplex_pipeline_with(SigningPolicy::EveryWindow)
}

/// The `e2e` pipeline sealed with one checkpoint signature per 25 windows (5 s of stream) and no
/// per-window signature.
fn sealed_pipeline() -> Pipeline {
    duplex_pipeline_with(SigningPolicy::checkpoint_every(25))
}

fn duplex_pipeline_with(signing: SigningPolicy) -> Pipeline {
    Pipeline::new(
        Arc::new(StreamSpec::duplex_voice_default()),
        PipelineConfig::new("did:keri:EJ9testStewardAID000000000000000", "stream-bench")
            .with_signing(signing),
        duplex_voice_oracle(),
        Estimator::default(),
        Box::new(SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap()
}

/// One window through the pipeline: push its ticks (validate, ledger, oracle), then close it
/// (judge, mint, sign).
fn run_window(pipeline: &mut Pipeline, ticks: Vec<Tick>) -> ClosedWindow {
    for tick in ticks {
        black_box(pipeline.push(tick).unwrap());
    }
    pipeline.close_window().unwrap().unwrap()
}

// ---------------------------------------------------------------------------------------------
// Groups
// ---------------------------------------------------------------------------------------------

fn tick(c: &mut Criterion) {
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let audio = Bytes::from(vec![0u8; duplex::MIC_BYTES_PER_WINDOW]);
    let mut ledger = RollingConservationLedger::new(LedgerPolicy::default()).unwrap();
    let mut oracle = duplex_voice_oracle();

    // Check the measured path once: every tick accepted, conforming, no early verdict.
    {
        let mut window = StreamWindow::open(spec.clone(), 0).unwrap();
        for t in audio_ticks(0, &audio) {
            let p = window.push(t).unwrap();
            let finding = ledger.observe(p.tick, p.direction).unwrap();
            assert_eq!(finding, WindowConservationFinding::Conforming);
            assert!(oracle.on_tick(p.tick, p.direction).is_none());
        }
        assert_eq!(window.tick_count(), TICKS_PER_BATCH);
    }

    let mut g = c.benchmark_group("tick");
    g.throughput(Throughput::Elements(TICKS_PER_BATCH as u64));
    let mut next = 1u64;
    g.bench_function("push_ledger_oracle", |b| {
        b.iter_batched(
            || {
                let w = next;
                next += 1;
                (
                    StreamWindow::open(spec.clone(), w).unwrap(),
                    audio_ticks(w, &audio),
                )
            },
            |(mut window, ticks)| {
                for t in ticks {
                    let p = window.push(t).unwrap();
                    black_box(ledger.observe(p.tick, p.direction).unwrap());
                    black_box(oracle.on_tick(p.tick, p.direction));
                }
                window
            },
            BatchSize::SmallInput,
        );
    });
    g.finish();
}

fn barge_in(c: &mut Criterion) {
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let mic = Bytes::from(vec![0u8; duplex::MIC_BYTES_PER_WINDOW]);
    let mut oracle = duplex_voice_oracle();
    let w = 7u64;
    let t0 = w * 200 * MS;
    // A window and ledger that have already taken the window's mic audio.
    let setup = || {
        let mut window = StreamWindow::open(spec.clone(), w).unwrap();
        let mut ledger = RollingConservationLedger::new(LedgerPolicy::default()).unwrap();
        let p = window
            .push(Tick::new(w, duplex::MIC, TickKind::Audio, mic.clone(), t0))
            .unwrap();
        ledger.observe(p.tick, p.direction).unwrap();
        let barge = Tick::marker(w, duplex::CONTROL, TickMarker::BargeIn, t0 + 20 * MS);
        (window, ledger, barge)
    };
    let mut to_yield =
        |(mut window, mut ledger, barge): (StreamWindow, RollingConservationLedger, Tick)| {
            let p = window.push(barge).unwrap();
            ledger.observe(p.tick, p.direction).unwrap();
            let v = oracle.on_tick(p.tick, p.direction);
            (window, ledger, v)
        };
    let (_, ledger, v) = to_yield(setup());
    assert_eq!(v, Some(WindowVerdict::Yield { seen_at: w }));
    assert_eq!(ledger.pending_barge_in_ns(), Some(t0 + 20 * MS));

    let mut g = c.benchmark_group("barge_in");
    g.bench_function("tick_to_yield", |b| {
        b.iter_batched(setup, &mut to_yield, BatchSize::SmallInput);
    });
    g.finish();
}

fn canon(c: &mut Criterion) {
    let receipt = seed_receipt();
    let mirror = ReceiptMirror::of(&receipt);
    let ours = receipt.encode().unwrap();
    // Like for like: both RFC 8785 crates produce exactly our bytes from the mirror, and the
    // seed's hash holds.
    assert_eq!(
        blake3::hash(&ours).to_hex().as_str(),
        "ee359043b4fc4a4b25b7cd5f47c631f0c675a478e3b4c3883bc908fb00948615"
    );
    assert_eq!(serde_json_canonicalizer::to_vec(&mirror).unwrap(), ours);
    assert_eq!(json_canon::to_vec(&mirror).unwrap(), ours);
    assert_eq!(serde_json::to_vec(&mirror).unwrap().len(), ours.len());

    let mut g = c.benchmark_group("canon");
    g.throughput(Throughput::Bytes(ours.len() as u64));
    g.bench_function("jcr1_encode", |b| {
        b.iter(|| black_box(&receipt).encode().unwrap());
    });
    g.bench_function("serde_json_to_vec", |b| {
        b.iter(|| serde_json::to_vec(black_box(&mirror)).unwrap());
    });
    g.bench_function("serde_json_canonicalizer", |b| {
        b.iter(|| serde_json_canonicalizer::to_vec(black_box(&mirror)).unwrap());
    });
    g.bench_function("json_canon", |b| {
        b.iter(|| json_canon::to_vec(black_box(&mirror)).unwrap());
    });
    g.finish();
}

fn decode_bytewise(bytes: &[u8]) -> StreamWindowReceipt {
    let mut d = ReceiptDecoder::new();
    for b in bytes.chunks(1) {
        if let Progress::Refused(r) = d.push(b) {
            panic!("refused: {r}");
        }
    }
    d.finish().unwrap()
}

fn decode(c: &mut Criterion) {
    let receipt = seed_receipt();
    let bytes = receipt.encode().unwrap();
    assert_eq!(decode_receipt(&bytes).unwrap(), receipt);
    assert_eq!(decode_bytewise(&bytes), receipt);
    assert_eq!(
        serde_json::from_slice::<ReceiptMirror>(&bytes).unwrap(),
        ReceiptMirror::of(&receipt)
    );

    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("jcr1_decode_whole", |b| {
        b.iter(|| decode_receipt(black_box(&bytes)).unwrap());
    });
    g.bench_function("jcr1_decode_bytewise", |b| {
        b.iter(|| decode_bytewise(black_box(&bytes)));
    });
    g.bench_function("serde_json_from_slice", |b| {
        b.iter(|| serde_json::from_slice::<ReceiptMirror>(black_box(&bytes)).unwrap());
    });
    g.finish();
}

fn mint(c: &mut Criterion) {
    let receipt = seed_receipt();
    let signer = SoftwareSigner::rfc8032_test_key();
    let raw = ed25519_dalek::SigningKey::from_bytes(&RFC8032_TEST1_SEED);
    let payload = receipt.encode().unwrap();

    let mut g = c.benchmark_group("mint");
    g.bench_function("jcr1_mint_sign", |b| {
        b.iter(|| {
            let r = black_box(&receipt);
            let bytes = r.encode().unwrap();
            let content_hash = blake3::hash(&bytes);
            let signed = sign_payload(&signer, r, bytes).unwrap();
            (content_hash, signed)
        });
    });
    g.bench_function("ed25519_sign_raw", |b| {
        b.iter(|| raw.sign(black_box(&payload)));
    });
    g.finish();
}

fn verify_group(c: &mut Criterion) {
    let signer = SoftwareSigner::rfc8032_test_key();
    let key = signer.verifying_key();
    let resolver = SingleKey::new(key);
    let raw = ed25519_dalek::SigningKey::from_bytes(&RFC8032_TEST1_SEED);

    // 256 distinct receipts (window ids 1..=256) so a batch is 256 different messages.
    let receipts: Vec<StreamWindowReceipt> = (1..=256u64)
        .map(|w| StreamWindowReceipt {
            window_id: w,
            ..seed_receipt()
        })
        .collect();
    let signed: Vec<Vec<u8>> = receipts
        .iter()
        .map(|r| {
            sign_payload(&signer, r, r.encode().unwrap())
                .unwrap()
                .cose_sign1
        })
        .collect();
    let items: Vec<&[u8]> = signed.iter().map(Vec::as_slice).collect();
    let one = items[0];
    assert_eq!(verify(one, &resolver).unwrap().receipt, receipts[0]);
    assert!(verify_batch(&items, &resolver).iter().all(Result::is_ok));

    let payload = receipts[0].encode().unwrap();
    let sig = raw.sign(&payload);
    key.verify_strict(&payload, &sig).unwrap();

    let mut g = c.benchmark_group("verify");
    g.throughput(Throughput::Elements(1));
    g.bench_function("jcr1_verify", |b| {
        b.iter(|| verify(black_box(one), &resolver).unwrap());
    });
    g.bench_function("ed25519_verify_strict_raw", |b| {
        b.iter(|| {
            key.verify_strict(black_box(&payload), black_box(&sig))
                .unwrap()
        });
    });
    for n in [64usize, 256] {
        g.throughput(Throughput::Elements(n as u64));
        g.bench_function(format!("jcr1_verify_batch_{n}"), |b| {
            b.iter(|| verify_batch(black_box(&items[..n]), &resolver));
        });
    }
    g.finish();
}

fn e2e(c: &mut Criterion) {
    let payloads = DuplexPayloads::new();
    let mut pipeline = duplex_pipeline();

    // Check the measured path once: a Pass from every backend, conforming, verifiable.
    let closed = run_window(&mut pipeline, payloads.ticks(0));
    let verified = verify(
        closed.cose_sign1().unwrap(),
        &SingleKey::new(pipeline.verifying_key()),
    )
    .unwrap();
    assert_eq!(verified.content_hash, closed.content_hash);
    assert_eq!(verified.receipt.tick_count, 22);
    assert_eq!(
        verified.receipt.conservation,
        WindowConservationFinding::Conforming
    );
    assert!(verified.receipt.verdict.is_pass());

    let mut g = c.benchmark_group("e2e");
    g.throughput(Throughput::Elements(1));
    let mut next = 1u64;
    g.bench_function("duplex_window", |b| {
        b.iter_batched(
            || {
                let w = next;
                next += 1;
                payloads.ticks(w)
            },
            |ticks| run_window(&mut pipeline, ticks),
            BatchSize::SmallInput,
        );
    });

    // The same windows under SigningPolicy::Checkpoint every 25 windows: minted, appended to
    // the stream's Merkle log, one checkpoint signature (and 25 inclusion receipts) per 25
    // windows. A fresh stream every 2^18 windows keeps the log far below its bound.
    let mut sealed = sealed_pipeline();
    let mut sealed_next = 0u64;
    let first = run_window(&mut sealed, payloads.ticks(sealed_next));
    assert!(first.cose_sign1().is_none() && first.leaf_index == Some(0));
    sealed_next += 1;
    g.bench_function("duplex_window_sealed", |b| {
        b.iter_batched(
            || {
                let fresh = sealed_next == 1 << 18;
                if fresh {
                    sealed_next = 0;
                }
                let w = sealed_next;
                sealed_next += 1;
                (fresh, payloads.ticks(w))
            },
            |(fresh, ticks)| {
                if fresh {
                    sealed = sealed_pipeline();
                }
                run_window(&mut sealed, ticks)
            },
            BatchSize::SmallInput,
        );
    });

    // The floor of any tamper-evident window: BLAKE3 over the same window's tick payloads, one
    // tick at a time.
    let ticks = payloads.ticks(0);
    g.bench_function("floor_window_payload_blake3", |b| {
        b.iter(|| {
            for t in &ticks {
                black_box(blake3::hash(black_box(&t.bytes)));
            }
        });
    });
    g.finish();
}

criterion_group!(
    benches,
    tick,
    barge_in,
    canon,
    decode,
    mint,
    verify_group,
    e2e
);
criterion_main!(benches);
