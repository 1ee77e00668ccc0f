//! The runtime on tokio's paused clock: verdicts on the push path, windows closed on the
//! clock, refusals counted, sealing, back-pressure, many streams. No sleeps but tokio time, no
//! timing assertions.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_live::audit::{StreamRecords, audit_nats_stream, audit_stream_dir};
use jouleclaw_live::jetstream::NatsStream;
use jouleclaw_live::*;
use jouleclaw_stream::{Tick, TickMarker, duplex};
use jouleclaw_stream_oracle::WindowVerdict;
use tokio::sync::{mpsc, oneshot};

const STEWARD: &str = "did:example:steward";
const EPOCH: i64 = 1_780_617_600;
const WINDOW_NS: u64 = 200_000_000;
const GRACE_NS: u64 = 20_000_000;

fn config() -> SubstrateConfig {
    let mut c = SubstrateConfig::new(STEWARD);
    c.grace_ns = GRACE_NS;
    c.checkpoint_every = 2;
    c
}

fn start(
    c: SubstrateConfig,
    gate: Option<oneshot::Receiver<()>>,
) -> (Substrate, mpsc::UnboundedReceiver<SinkBatch>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let s = Substrate::start(
        c,
        Arc::new(TokioClock::new(EPOCH)),
        Arc::new(SoftwareSigner::rfc8032_test_key()),
        Box::new(common::Collect::gated(tx, gate)),
    )
    .unwrap();
    (s, rx)
}

fn mic(w: u64, ts: u64) -> Tick {
    Tick::new(
        w,
        duplex::MIC,
        jouleclaw_stream::TickKind::Audio,
        bytes::Bytes::from(vec![0u8; 320]),
        ts,
    )
}

async fn at(stream: &StreamHandle, ts_ns: u64) {
    let now = stream.now_ns();
    if ts_ns > now {
        tokio::time::sleep(Duration::from_nanos(ts_ns - now)).await;
    }
}

/// The stream `stream_id` as the JetStream reader would hold it from these batches (message
/// version 2): its receipts and checkpoints in order, the final batch's documents.
fn records(batches: &[SinkBatch], stream_id: &str) -> NatsStream {
    let mut s = NatsStream {
        records: StreamRecords {
            stream_id: stream_id.into(),
            ..StreamRecords::default()
        },
        ..NatsStream::default()
    };
    for b in batches.iter().filter(|b| b.stream_id == stream_id) {
        s.subject = format!(
            "jouleclaw.{}.{}",
            escape_id(&b.steward),
            escape_id(stream_id)
        );
        s.steward = b.steward.clone();
        let r = &mut s.records;
        r.receipts
            .extend(b.receipts.iter().map(|x| x.cose_sign1.clone()));
        r.seals.push(b.checkpoint.clone());
        r.sealed |= b.is_final;
        if b.stop_latency.is_some() {
            s.stop_latency = b.stop_latency.clone();
        }
        if b.interaction_metrics.is_some() {
            s.interaction_metrics = b.interaction_metrics.clone();
        }
    }
    s
}

fn drain(rx: &mut mpsc::UnboundedReceiver<SinkBatch>) -> Vec<SinkBatch> {
    let mut out = Vec::new();
    while let Ok(b) = rx.try_recv() {
        out.push(b);
    }
    out
}

fn key() -> jouleclaw_jcr1::cose::PublicKey {
    SoftwareSigner::rfc8032_test_key().verifying_key()
}

#[tokio::test(start_paused = true)]
async fn a_barge_in_yields_on_its_push_and_subscribers_see_it() {
    let (s, _rx) = start(config(), None);
    let call = s.open_stream("call-1").unwrap();
    let mut sub = call.subscribe();
    assert_eq!(call.push(mic(0, 0)).unwrap(), None);
    at(&call, 40_000_000).await;
    let v = call
        .push(Tick::marker(
            0,
            duplex::CONTROL,
            TickMarker::BargeIn,
            40_000_000,
        ))
        .unwrap();
    assert_eq!(v, Some(WindowVerdict::Yield { seen_at: 0 }));
    let event = sub.recv().await.unwrap();
    assert_eq!((event.window_id, event.ts_ns), (0, 40_000_000));
    assert_eq!(event.verdict, WindowVerdict::Yield { seen_at: 0 });
    call.close().await.unwrap();
    s.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn windows_close_on_the_clock_when_nothing_arrives() {
    let mut c = config();
    c.checkpoint_every = 1;
    let (s, mut rx) = start(c, None);
    let call = s.open_stream("quiet").unwrap();
    call.push(mic(0, 0)).unwrap();
    // Nothing else arrives; the window closes at its end plus the grace and its checkpoint
    // reaches the sink while the stream is still open.
    let batch = rx.recv().await.unwrap();
    assert_eq!(batch.receipts.len(), 1);
    assert_eq!(batch.receipts[0].window_id, 0);
    assert!(!batch.is_final);
    assert!(call.now_ns() >= WINDOW_NS + GRACE_NS);
    let summary = call.close().await.unwrap();
    assert_eq!((summary.windows, summary.checkpoints), (1, 2));
    s.shutdown().await.unwrap();
    let mut all = vec![batch];
    all.extend(drain(&mut rx));
    assert!(audit_nats_stream(&records(&all, "quiet"), &common::valid(&key())).is_complete());
}

#[tokio::test(start_paused = true)]
async fn a_late_tick_within_the_grace_is_taken_and_after_it_is_refused_and_counted() {
    let (s, mut rx) = start(config(), None);
    let call = s.open_stream("late").unwrap();
    call.push(mic(0, 0)).unwrap();
    at(&call, WINDOW_NS + GRACE_NS / 2).await;
    // Stamped inside window 0, arriving inside the grace: taken.
    call.push(mic(0, 150_000_000)).unwrap();
    at(&call, WINDOW_NS + GRACE_NS).await;
    let err = call.push(mic(0, 190_000_000)).unwrap_err();
    assert_eq!(err.code(), "window_closed");
    assert_eq!(call.refused(), 1);
    assert_eq!(
        s.stats()
            .refused_closed
            .load(std::sync::atomic::Ordering::SeqCst),
        1
    );
    let summary = call.close().await.unwrap();
    assert_eq!(
        (summary.accepted, summary.refused, summary.refused_closed),
        (2, 1, 1)
    );
    s.shutdown().await.unwrap();
    let all = drain(&mut rx);
    // Window 0 holds exactly the two taken ticks; nothing went to another window.
    let payload = String::from_utf8(all[0].receipts[0].payload.clone()).unwrap();
    assert!(payload.contains("\"tick_count\":2"), "{payload}");
    assert!(audit_nats_stream(&records(&all, "late"), &common::valid(&key())).is_complete());
}

#[tokio::test(start_paused = true)]
async fn a_tick_of_an_earlier_window_after_a_later_one_is_refused() {
    let (s, _rx) = start(config(), None);
    let call = s.open_stream("order").unwrap();
    at(&call, WINDOW_NS + 1_000_000).await;
    call.push(mic(1, WINDOW_NS + 1_000_000)).unwrap();
    let err = call.push(mic(0, 100_000_000)).unwrap_err();
    assert_eq!(err.code(), "window_closed");
    // Its neighbour: the same window is still open.
    call.push(mic(1, WINDOW_NS + 2_000_000)).unwrap();
    call.close().await.unwrap();
    s.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_tick_from_the_future_is_refused() {
    let (s, _rx) = start(config(), None);
    let call = s.open_stream("future").unwrap();
    let err = call.push(mic(1, WINDOW_NS + 1)).unwrap_err();
    assert_eq!(err.code(), "tick_from_future");
    call.push(mic(0, GRACE_NS)).unwrap();
    call.close().await.unwrap();
    s.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn closing_seals_the_stream_and_later_pushes_are_refused() {
    let (s, mut rx) = start(config(), None);
    let call = s.open_stream("sealed").unwrap();
    for w in 0..5u64 {
        at(&call, w * WINDOW_NS).await;
        call.push(mic(w, w * WINDOW_NS)).unwrap();
    }
    let summary = call.close().await.unwrap();
    assert_eq!(summary.windows, 5);
    // Every 2 windows, then the final one: 0-1, 2-3, 4 (final).
    assert_eq!(summary.checkpoints, 3);
    let err = call.push(mic(5, 5 * WINDOW_NS)).unwrap_err();
    assert_eq!(err.code(), "stream_closed");
    assert_eq!(call.close().await.unwrap_err().code(), "stream_closed");
    s.shutdown().await.unwrap();
    let all = drain(&mut rx);
    assert_eq!(all.len(), 3);
    assert!(all[2].is_final && !all[1].is_final);
    let audit = audit_nats_stream(&records(&all, "sealed"), &common::valid(&key()));
    assert!(audit.is_complete(), "{:?}", audit.lines());
    assert_eq!(audit.verified, 5);
    // The audit notices a dropped receipt.
    let mut cut = records(&all, "sealed");
    cut.records.receipts.remove(2);
    let audit = audit_nats_stream(&cut, &common::valid(&key()));
    assert!(audit.has_problem("missing_window"), "{:?}", audit.lines());
}

#[tokio::test(start_paused = true)]
async fn shutdown_with_a_stream_open_is_misuse_and_stops_nothing() {
    let (s, mut rx) = start(config(), None);
    let call = s.open_stream("open").unwrap();
    call.push(mic(0, 0)).unwrap();
    let e = s.shutdown().await.unwrap_err();
    assert_eq!(e.code(), "misuse", "{e}");
    // Nothing stopped: the stream still takes ticks and seals, and then shutdown succeeds.
    at(&call, WINDOW_NS).await;
    call.push(mic(1, WINDOW_NS)).unwrap();
    let summary = call.close().await.unwrap();
    assert_eq!(summary.windows, 2);
    s.shutdown().await.unwrap();
    let all = drain(&mut rx);
    assert!(all.last().is_some_and(|b| b.is_final), "{}", all.len());
}

#[tokio::test(start_paused = true)]
async fn bad_configuration_is_still_config() {
    for c in [
        SubstrateConfig {
            checkpoint_every: 0,
            ..config()
        },
        SubstrateConfig {
            mint_shards: 0,
            ..config()
        },
    ] {
        let (tx, _rx) = mpsc::unbounded_channel();
        let e = Substrate::start(
            c,
            Arc::new(TokioClock::new(EPOCH)),
            Arc::new(SoftwareSigner::rfc8032_test_key()),
            Box::new(common::Collect::new(tx)),
        )
        .err()
        .unwrap();
        assert_eq!(e.code(), "config", "{e}");
    }
}

#[tokio::test(start_paused = true)]
async fn two_handles_closing_one_stream_at_once_seal_it_once_and_the_other_is_refused_as_closed() {
    let (s, mut rx) = start(config(), None);
    let a = s.open_stream("twice").unwrap();
    let b = a.clone();
    a.push(mic(0, 0)).unwrap();
    // Both closes are sent before either is answered: the second finds the stream closing
    // (on its handle or, having passed that check, no longer on its verdict shard).
    let (ra, rb) = tokio::join!(a.close(), b.close());
    let (sealed, refused) = match (ra, rb) {
        (Ok(x), Err(e)) | (Err(e), Ok(x)) => (x, e),
        other => panic!("one close seals, the other is refused: {other:?}"),
    };
    assert_eq!(sealed.windows, 1);
    assert_eq!(refused.code(), "stream_closed", "{refused}");
    assert_eq!(a.close().await.unwrap_err().code(), "stream_closed");
    s.shutdown().await.unwrap();
    let all = drain(&mut rx);
    assert_eq!(all.iter().filter(|b| b.is_final).count(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_refuses_pushes_as_overloaded_and_counts_them() {
    let mut c = config();
    c.checkpoint_every = 1;
    c.sink_queue = 1;
    c.mint_queue = 2;
    c.mint_shards = 1;
    c.verdict_shards = 1;
    let (gate_tx, gate_rx) = oneshot::channel();
    let (s, mut rx) = start(c, Some(gate_rx));
    let call = s.open_stream("busy").unwrap();
    let mut overloaded = 0;
    let mut accepted = 0u64;
    // Bounded: at most 200 windows.
    for w in 0..200u64 {
        at(&call, w * WINDOW_NS).await;
        match call.push(mic(w, w * WINDOW_NS)) {
            Ok(_) => accepted += 1,
            Err(e) => {
                assert_eq!(e.code(), "overloaded");
                overloaded += 1;
                break;
            }
        }
    }
    assert_eq!(overloaded, 1);
    assert!(
        s.stats()
            .refused_overloaded
            .load(std::sync::atomic::Ordering::SeqCst)
            >= 1
    );
    gate_tx.send(()).unwrap();
    let summary = call.close().await.unwrap();
    assert_eq!(summary.accepted, accepted);
    s.shutdown().await.unwrap();
    let all = drain(&mut rx);
    assert!(audit_nats_stream(&records(&all, "busy"), &common::valid(&key())).is_complete());
}

#[tokio::test(start_paused = true)]
async fn duplicate_and_bad_stream_ids_are_refused() {
    let (s, _rx) = start(config(), None);
    let call = s.open_stream("one").unwrap();
    assert_eq!(s.open_stream("one").unwrap_err().code(), "duplicate_stream");
    assert_eq!(s.open_stream("").unwrap_err().code(), "pipeline_refused");
    // A sink stores at most 200 escaped bytes of id (a file name, a subject token): a longer id
    // is refused when the stream opens, not after its first window was minted.
    assert_eq!(
        s.open_stream(&"a".repeat(201)).unwrap_err().code(),
        "id_too_long"
    );
    assert_eq!(
        s.open_stream(&"/".repeat(67)).unwrap_err().code(),
        "id_too_long"
    );
    let longest = s.open_stream(&"a".repeat(200)).unwrap();
    longest.close().await.unwrap();
    call.close().await.unwrap();
    s.shutdown().await.unwrap();
}

const STREAMS: usize = 16;
const WINDOWS: u64 = 8;

#[tokio::test(start_paused = true)]
async fn many_concurrent_streams_each_seal_complete_into_files() {
    let dir = tempfile::tempdir().unwrap();
    let s = Substrate::start(
        config(),
        Arc::new(TokioClock::new(EPOCH)),
        Arc::new(SoftwareSigner::rfc8032_test_key()),
        Box::new(FileSink::new(dir.path()).unwrap()),
    )
    .unwrap();
    let mut tasks = Vec::new();
    for i in 0..STREAMS {
        let call = s.open_stream(&format!("call/{i}")).unwrap();
        // Two producer tasks per call: mic and control.
        let mic_task = {
            let call = call.clone();
            tokio::spawn(async move {
                for w in 0..WINDOWS {
                    at(&call, w * WINDOW_NS + 1).await;
                    call.push(mic(w, w * WINDOW_NS + 1)).unwrap();
                }
            })
        };
        let ctl_task = {
            let call = call.clone();
            tokio::spawn(async move {
                for w in (0..WINDOWS).step_by(3) {
                    let ts = w * WINDOW_NS + 50_000_000;
                    at(&call, ts).await;
                    let v = call
                        .push(Tick::marker(w, duplex::CONTROL, TickMarker::BargeIn, ts))
                        .unwrap();
                    assert!(matches!(v, Some(WindowVerdict::Yield { .. })));
                }
            })
        };
        tasks.push(tokio::spawn(async move {
            mic_task.await.unwrap();
            ctl_task.await.unwrap();
            call.close().await.unwrap()
        }));
    }
    for t in tasks {
        let summary = t.await.unwrap();
        assert_eq!(summary.windows, WINDOWS);
        assert_eq!(summary.refused, 0);
    }
    s.shutdown().await.unwrap();
    let dirs = jouleclaw_live::audit::stream_dirs(dir.path()).unwrap();
    assert_eq!(dirs.len(), STREAMS);
    for d in dirs {
        assert!(
            !d.to_string_lossy()
                .ends_with(jouleclaw_live::file::PARTIAL_SUFFIX),
            "{}",
            d.display()
        );
        let audit = audit_stream_dir(&d, &common::valid(&key())).unwrap();
        assert!(
            audit.is_complete(),
            "{}: {:?}",
            audit.stream_id,
            audit.lines()
        );
        assert_eq!(audit.verified as u64, WINDOWS);
    }
}

/// Each live stream is one judge and one notary: the demo story pushed in real (paused) time
/// gives byte for byte the receipts, checkpoints and inclusion receipts of a `Pipeline` fed
/// the same ticks under the live signing policy (every window signed, a checkpoint every K).
#[tokio::test(start_paused = true)]
async fn a_live_stream_mints_the_pipelines_bytes() {
    use jouleclaw_pipeline::demo;
    let c = config();
    let (every, max) = (c.checkpoint_every, c.max_windows_per_stream);
    let (s, mut rx) = start(c, None);
    let call = s.open_stream(demo::STREAM_ID).unwrap();
    for tick in demo::ticks() {
        at(&call, tick.ts_ns).await;
        call.push(tick).unwrap();
    }
    let summary = call.close().await.unwrap();
    s.shutdown().await.unwrap();
    let live = drain(&mut rx);

    let (mut p, mut windows) = common::demo_pipeline(STEWARD, EPOCH, every, max);
    // The final seal (stream-seal/2) commits to the stop-latency and interaction-metrics
    // documents the live stream signed over the same receipts.
    windows.extend(p.end_windows().unwrap());
    let doc = live.last().unwrap().stop_latency.clone().unwrap();
    let interaction = live.last().unwrap().interaction_metrics.clone().unwrap();
    // The interaction document is the one a meter fed the same ticks signs, byte for byte.
    let spec = jouleclaw_stream::StreamSpec::duplex_voice_default();
    let mut meter = jouleclaw_interaction::InteractionMeter::new(Default::default()).unwrap();
    for tick in demo::ticks() {
        let direction = spec.channel(tick.channel_id).unwrap().direction;
        meter.observe(&tick, direction).unwrap();
    }
    let frames = meter.frame_count();
    let events = meter.finish().unwrap().to_vec();
    let hashes: Vec<[u8; 32]> = windows.iter().map(|w| *w.content_hash.as_bytes()).collect();
    let want_doc = jouleclaw_interaction::InteractionDocument::new(
        STEWARD,
        demo::STREAM_ID,
        Default::default(),
        frames,
        &events,
        &hashes,
    )
    .unwrap();
    let signed =
        jouleclaw_interaction::sign(&SoftwareSigner::rfc8032_test_key(), &want_doc).unwrap();
    assert_eq!(interaction, signed.cose_sign1);
    assert_eq!(want_doc.window_count, demo::WINDOWS);
    let finished = p
        .finish_with_documents(
            [
                (
                    "stop-latency/1".to_owned(),
                    jouleclaw_seal::document_digest(&doc),
                ),
                (
                    "interaction-metrics/1".to_owned(),
                    jouleclaw_seal::document_digest(&interaction),
                ),
            ]
            .into_iter()
            .collect(),
        )
        .unwrap();
    assert!(finished.last.is_none());
    let mut seals: Vec<_> = windows.iter().filter_map(|w| w.seal.clone()).collect();
    seals.extend(finished.seal);

    assert_eq!(summary.windows, demo::WINDOWS);
    assert_eq!(summary.checkpoints, seals.len() as u64);
    let receipts: Vec<(u64, Vec<u8>, Vec<u8>)> = live
        .iter()
        .flat_map(|b| b.receipts.iter())
        .map(|r| (r.window_id, r.cose_sign1.clone(), r.payload.clone()))
        .collect();
    let want: Vec<(u64, Vec<u8>, Vec<u8>)> = windows
        .iter()
        .map(|w| {
            let cose = w.cose_sign1().unwrap().to_vec();
            (w.receipt.window_id, cose, w.canonical.clone())
        })
        .collect();
    assert_eq!(receipts, want);
    assert_eq!(live.len(), seals.len());
    // The live stream mints no inclusion receipt; each one the pipeline minted is derived,
    // byte for byte, from the live batch's checkpoint and the receipts it seals.
    let mut log = jouleclaw_seal::MerkleLog::new(max);
    for (_, _, payload) in &receipts {
        log.append(blake3::hash(payload).as_bytes()).unwrap();
    }
    let mut derive =
        jouleclaw_seal::SealVerifier::new(SoftwareSigner::rfc8032_test_key().verifying_key());
    let mut derived = 0;
    for (seq, (b, seal)) in live.iter().zip(&seals).enumerate() {
        assert_eq!(b.seq, seq as u64);
        assert_eq!(b.is_final, seal.checkpoint.seal.is_final);
        assert_eq!(b.checkpoint, seal.checkpoint.cose_sign1);
        assert_eq!(seal.inclusion.len(), b.receipts.len());
        for (leaf, (window_id, minted)) in (seal.first_leaf..).zip(&seal.inclusion) {
            let payload = &receipts[leaf as usize].2;
            assert_eq!(receipts[leaf as usize].0, *window_id);
            let hash = *blake3::hash(payload).as_bytes();
            let d = derive
                .derive_inclusion_receipt(&b.checkpoint, &log, leaf, &hash)
                .unwrap();
            assert_eq!(&d, minted);
            derived += 1;
        }
    }
    assert_eq!(derived, demo::WINDOWS);
    assert!(live.last().unwrap().is_final);
}

/// The notary the live runtime runs (`Notary::without_inclusion_receipts`) signs the same
/// receipts and checkpoints, byte for byte, as one that mints inclusion receipts, and mints
/// none of them (the cost the sinks no longer pay); the other notary's are its neighbour.
#[test]
fn the_live_notary_mints_the_same_checkpoints_and_no_inclusion_receipts() {
    use jouleclaw_pipeline::{
        ClosedAt, Judge, Notary, PipelineConfig, SigningPolicy, WindowSignatures, demo,
        duplex_voice_oracle,
    };
    let config = PipelineConfig::new(STEWARD, demo::STREAM_ID)
        .with_closed_at(ClosedAt::StreamTime { epoch_unix: EPOCH })
        .with_signing(SigningPolicy::Checkpoint {
            every_windows: 4,
            window_signatures: WindowSignatures::All,
            max_windows: 1 << 20,
        });
    let spec = Arc::new(jouleclaw_stream::StreamSpec::duplex_voice_default());
    let mut judge = Judge::new(spec, config.policy, duplex_voice_oracle()).unwrap();
    let mut judged = Vec::new();
    for tick in demo::ticks() {
        judged.extend(judge.push(tick).unwrap().closed);
    }
    judged.extend(judge.finish().unwrap());
    let signer = SoftwareSigner::rfc8032_test_key();
    let run = |notary: Notary| {
        let mut notary = notary;
        let mut out = Vec::new();
        for j in judged.clone() {
            let c = notary.notarize(j, &signer).unwrap();
            out.push((c.cose_sign1().map(<[u8]>::to_vec), c.seal));
        }
        out.push((None, notary.finish(&signer).unwrap()));
        out
    };
    let minting = run(Notary::new(&config, jouleclaw_jcr1::Estimator::default()).unwrap());
    let live = run(Notary::new(&config, jouleclaw_jcr1::Estimator::default())
        .unwrap()
        .without_inclusion_receipts());
    assert_eq!(minting.len(), live.len());
    let (mut seals, mut minted) = (0, 0);
    for ((cose_a, seal_a), (cose_b, seal_b)) in minting.iter().zip(&live) {
        assert_eq!(cose_a, cose_b);
        assert_eq!(seal_a.is_some(), seal_b.is_some());
        if let (Some(a), Some(b)) = (seal_a, seal_b) {
            assert_eq!(a.checkpoint, b.checkpoint);
            assert_eq!(a.first_leaf, b.first_leaf);
            assert!(b.inclusion.is_empty());
            minted += a.inclusion.len() as u64;
            seals += 1;
        }
    }
    assert_eq!(seals, demo::WINDOWS.div_ceil(4));
    assert_eq!(minted, demo::WINDOWS);
}
