//! Helpers shared by the test files (each file uses some of them).

#![allow(dead_code)]

use jouleclaw_live::{BoxFuture, ReceiptSink, Result, SinkBatch, SinkContext};
use jouleclaw_stream::{Tick, TickKind, duplex};
use tokio::sync::mpsc;

#[allow(unused_imports)] // the test files that start no server
pub use jouleclaw_testkit::nats::{NatsServer, free_port, nats_server};

/// A substrate on tokio's clock (from 2026-06-05 00:00 UTC, paused in the tests), signing with
/// the RFC 8032 test key, into `sink`.
pub fn paused_substrate(
    c: jouleclaw_live::SubstrateConfig,
    sink: Box<dyn ReceiptSink>,
) -> jouleclaw_live::Substrate {
    jouleclaw_live::Substrate::start(
        c,
        std::sync::Arc::new(jouleclaw_live::TokioClock::new(1_780_617_600)),
        std::sync::Arc::new(jouleclaw_jcr1::cose::SoftwareSigner::rfc8032_test_key()),
        sink,
    )
    .unwrap()
}

/// A batch of `stream_id` under `steward` holding one receipt (`window_id`, signed as
/// `cose_sign1`, payload `{}`), the checkpoint `d2 09` and no document.
pub fn one_receipt_batch(
    stream_id: &str,
    steward: &str,
    seq: u64,
    is_final: bool,
    window_id: u64,
    cose_sign1: Vec<u8>,
) -> SinkBatch {
    SinkBatch {
        stream_id: stream_id.into(),
        steward: steward.into(),
        seq,
        is_final,
        receipts: vec![jouleclaw_live::ReceiptItem {
            window_id,
            cose_sign1,
            payload: b"{}".to_vec(),
        }],
        checkpoint: vec![0xd2, 9],
        stop_latency: None,
        interaction_metrics: None,
        created_ns: 0,
        status: std::sync::Arc::new(jouleclaw_live::StreamStatus::default()),
    }
}

/// A folder's signed `what` document (`doc`, written as `good`) altered inside its payload:
/// the final seal's digest no longer matches, and the signature does not verify.
pub fn assert_altered_document_refused(
    doc: &std::path::Path,
    good: &[u8],
    what: &str,
    problems: impl Fn() -> Vec<String>,
) {
    let mut altered = good.to_vec();
    let i = altered.len() - 80;
    altered[i] ^= 1;
    std::fs::write(doc, &altered).unwrap();
    let p = problems();
    assert!(
        p.len() == 2
            && p[0].starts_with("document_digest_mismatch")
            && p[1].contains(&format!("the {what} document does not verify")),
        "{p:?}"
    );
}

/// A symbolic link in the document's place (`doc`) to a copy of it (`good`, at `elsewhere`):
/// not followed.
pub fn assert_linked_document_refused(
    doc: &std::path::Path,
    good: &[u8],
    elsewhere: &std::path::Path,
    problems: impl Fn() -> Vec<String>,
) {
    std::fs::write(elsewhere, good).unwrap();
    std::fs::remove_file(doc).unwrap();
    std::os::unix::fs::symlink(elsewhere, doc).unwrap();
    let p = problems();
    assert!(
        !p.is_empty() && p.iter().all(|p| p.starts_with("not_regular_file")),
        "{p:?}"
    );
}

/// `receipts.jsonl` of a stream folder: each receipt with the BLAKE3 of its line, in order.
pub fn receipts(dir: &std::path::Path) -> Vec<(jouleclaw_jcr1::StreamWindowReceipt, [u8; 32])> {
    let text = std::fs::read(dir.join(jouleclaw_live::file::RECEIPTS_JSONL)).unwrap();
    text.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            (
                jouleclaw_jcr1::decode_receipt(l).unwrap(),
                *blake3::hash(l).as_bytes(),
            )
        })
        .collect()
}

/// A stream folder's receipts and checkpoints as items (`receipts.cbor`, `seals.cbor`), as the
/// JetStream reader holds a stream's, sealed when the folder is not `.partial`.
pub fn records_of(dir: &std::path::Path) -> jouleclaw_live::audit::StreamRecords {
    let items = |file: &str| -> Vec<Vec<u8>> {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        jouleclaw_jcr1::cose::split_cbor_sequence(&bytes)
            .unwrap()
            .into_iter()
            .map(<[u8]>::to_vec)
            .collect()
    };
    let name = dir.file_name().unwrap().to_str().unwrap();
    jouleclaw_live::audit::StreamRecords {
        stream_id: jouleclaw_live::unescape_id(
            name.strip_suffix(jouleclaw_live::file::PARTIAL_SUFFIX)
                .unwrap_or(name),
        )
        .unwrap(),
        receipts: items(jouleclaw_live::file::RECEIPTS_CBOR),
        seals: items(jouleclaw_live::file::SEALS_CBOR),
        sealed: !name.ends_with(jouleclaw_live::file::PARTIAL_SUFFIX),
        read_problems: Vec::new(),
    }
}

/// A 320-byte mic tick of window `w` at `ts` ns.
pub fn mic(w: u64, ts: u64) -> Tick {
    Tick::new(
        w,
        duplex::MIC,
        TickKind::Audio,
        bytes::Bytes::from(vec![0u8; 320]),
        ts,
    )
}

/// A sink that hands every batch to the test as it comes, counted durable (the seam under
/// test, not a store: the test looks at the batches, or publishes them itself, changed).
pub struct Collect {
    out: mpsc::UnboundedSender<SinkBatch>,
    /// Holds every batch until this fires (back-pressure tests).
    gate: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl Collect {
    /// Hands each batch to `out` at once.
    pub fn new(out: mpsc::UnboundedSender<SinkBatch>) -> Self {
        Collect { out, gate: None }
    }

    /// Hands each batch to `out` once `gate` (if any) fired.
    pub fn gated(
        out: mpsc::UnboundedSender<SinkBatch>,
        gate: Option<tokio::sync::oneshot::Receiver<()>>,
    ) -> Self {
        Collect { out, gate }
    }
}

impl ReceiptSink for Collect {
    fn describe(&self) -> String {
        "collect".into()
    }
    fn run(
        self: Box<Self>,
        mut batches: mpsc::Receiver<SinkBatch>,
        ctx: SinkContext,
    ) -> BoxFuture<'static, Result<()>> {
        Box::pin(async move {
            if let Some(gate) = self.gate {
                let _ = gate.await;
            }
            while let Some(b) = batches.recv().await {
                ctx.stats.record_durable(&b, ctx.clock.now_ns());
                let _ = self.out.send(b);
            }
            Ok(())
        })
    }
}

/// The inclusion receipts a version-1 batch carried for `rec`'s receipts, derived from its
/// checkpoints (`spec/STREAM-AT-REST.md` section 1.1: receipt `i` under the first checkpoint
/// whose tree size exceeds `i`), byte for byte what the sealer minted.
pub fn derived_inclusion(
    rec: &jouleclaw_live::audit::StreamRecords,
    key: &jouleclaw_jcr1::cose::PublicKey,
) -> Vec<Vec<u8>> {
    let resolver = jouleclaw_jcr1::cose::SingleKey::new(*key);
    let hashes: Vec<[u8; 32]> = rec
        .receipts
        .iter()
        .map(|r| {
            *jouleclaw_jcr1::cose::verify(r, &resolver)
                .unwrap()
                .content_hash
                .as_bytes()
        })
        .collect();
    let mut log = jouleclaw_seal::MerkleLog::new(1 << 20);
    for h in &hashes {
        log.append(h).unwrap();
    }
    let sizes: Vec<u64> = rec
        .seals
        .iter()
        .map(|s| {
            jouleclaw_seal::verify_checkpoint(s, key)
                .unwrap()
                .seal
                .tree_size
        })
        .collect();
    let mut v = jouleclaw_seal::SealVerifier::new(*key);
    (0..hashes.len() as u64)
        .map(|i| {
            let at = sizes.iter().position(|n| *n > i).unwrap();
            v.derive_inclusion_receipt(&rec.seals[at], &log, i, &hashes[i as usize])
                .unwrap()
        })
        .collect()
}

/// `(window_id, inclusion receipt)` per receipt of a batch.
pub type Inclusion = Vec<(u64, Vec<u8>)>;

/// The pipeline over the demo call's ticks under `steward`, stream time from `epoch_unix`, a
/// checkpoint every `every` windows (every window signed, at most `max`), and the windows
/// those ticks closed (the last still open).
pub fn demo_pipeline(
    steward: &str,
    epoch_unix: i64,
    every: u64,
    max: u64,
) -> (
    jouleclaw_pipeline::Pipeline,
    Vec<jouleclaw_pipeline::ClosedWindow>,
) {
    use jouleclaw_pipeline::{
        ClosedAt, Pipeline, PipelineConfig, SigningPolicy, WindowSignatures, demo,
        duplex_voice_oracle,
    };
    let mut p = Pipeline::new(
        std::sync::Arc::new(jouleclaw_stream::StreamSpec::duplex_voice_default()),
        PipelineConfig::new(steward, demo::STREAM_ID)
            .with_closed_at(ClosedAt::StreamTime { epoch_unix })
            .with_signing(SigningPolicy::Checkpoint {
                every_windows: every,
                window_signatures: WindowSignatures::All,
                max_windows: max,
            }),
        duplex_voice_oracle(),
        jouleclaw_jcr1::Estimator::default(),
        Box::new(jouleclaw_jcr1::cose::SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap();
    let mut windows = Vec::new();
    for tick in demo::ticks() {
        windows.extend(p.push(tick).unwrap().closed);
    }
    (p, windows)
}

/// The demo story's batches (every window signed, a checkpoint every 5 windows, the RFC 8032
/// test key) with their inclusion receipts, as the live runtime handed them to its sinks when
/// it minted inclusion receipts (message version 1).
pub fn v1_demo_batches() -> Vec<(jouleclaw_live::SinkBatch, Inclusion)> {
    use jouleclaw_live::{ReceiptItem, SinkBatch, StreamStatus};
    use jouleclaw_pipeline::demo;
    use std::sync::Arc;
    let (mut p, mut windows) = demo_pipeline(demo::STEWARD, demo::EPOCH_UNIX, 5, 1 << 20);
    let finished = p.finish().unwrap();
    windows.extend(finished.last);
    let mut out = Vec::new();
    let mut receipts = Vec::new();
    let mut seq = 0;
    let mut seals: Vec<_> = Vec::new();
    for w in &windows {
        receipts.push(ReceiptItem {
            window_id: w.receipt.window_id,
            cose_sign1: w.cose_sign1().unwrap().to_vec(),
            payload: w.canonical.clone(),
        });
        if let Some(seal) = &w.seal {
            seals.push((core::mem::take(&mut receipts), seal.clone()));
        }
    }
    seals.push((receipts, finished.seal.unwrap()));
    for (receipts, seal) in seals {
        out.push((
            SinkBatch {
                stream_id: demo::STREAM_ID.into(),
                steward: demo::STEWARD.into(),
                seq,
                is_final: seal.checkpoint.seal.is_final,
                receipts,
                checkpoint: seal.checkpoint.cose_sign1,
                stop_latency: None,
                interaction_metrics: None,
                created_ns: 0,
                status: Arc::new(StreamStatus::default()),
            },
            seal.inclusion,
        ));
        seq += 1;
    }
    out
}

/// A version-1 message: the version-2 body of `b` with `v` 1 and `inclusion` after
/// `checkpoint` (`spec/LIVE.md` section 6.2).
pub fn encode_v1(b: &jouleclaw_live::SinkBatch, inclusion: &[(u64, Vec<u8>)]) -> Vec<u8> {
    use ciborium::Value;
    let body = jouleclaw_live::jetstream::encode_batch(b).unwrap();
    let Value::Map(mut m) = ciborium::from_reader(body.as_slice()).unwrap() else {
        panic!("not a map")
    };
    assert_eq!(m[0].1, Value::Integer(2.into()));
    m[0].1 = Value::Integer(1.into());
    m.insert(
        7,
        (
            Value::Text("inclusion".into()),
            Value::Array(
                inclusion
                    .iter()
                    .map(|(_, r)| Value::Bytes(r.clone()))
                    .collect(),
            ),
        ),
    );
    let mut out = Vec::new();
    ciborium::into_writer(&Value::Map(m), &mut out).unwrap();
    out
}

/// `key` checked once by the one key rule, as every caller of the auditor checks it.
pub fn valid(key: &jouleclaw_jcr1::cose::PublicKey) -> jouleclaw_jcr1::cose::ValidKey {
    jouleclaw_jcr1::cose::ValidKey::new(*key).unwrap()
}
