//! Bytes per window of what the live sinks store (`spec/LIVE.md` section 11, "Bytes per
//! window"): synthetic calls (`jouleclaw live`'s generator) on tokio's paused clock, the default
//! settings (200 ms windows, a checkpoint every 25 windows, every window signed):
//!
//! ```sh
//! cargo run --release -p jouleclaw-live --example batch_bytes -- [STREAMS [WINDOWS]]
//! ```
//!
//! (defaults: 20 streams of 300 windows). Each call runs twice, deterministically (the same
//! clock, ticks and key): into a [`FileSink`] (the stream folders' file sizes), and into a sink
//! that keeps the batches, each encoded as the JetStream message it is now (version 2) and as
//! it was (version 1: the same batch with every receipt's inclusion receipt, derived byte for
//! byte from the checkpoint as the sealer minted them). Prints the totals and the bytes per
//! window.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;

use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_live::jetstream::encode_batch;
use jouleclaw_live::synth::{Latency, synthetic_call};
use jouleclaw_live::*;
use tokio::sync::mpsc;

const STEWARD: &str = "did:example:steward";

/// Keeps every batch.
struct Keep(mpsc::UnboundedSender<SinkBatch>);

impl ReceiptSink for Keep {
    fn describe(&self) -> String {
        "keep".into()
    }
    fn run(
        self: Box<Self>,
        mut batches: mpsc::Receiver<SinkBatch>,
        _ctx: SinkContext,
    ) -> BoxFuture<'static, Result<()>> {
        Box::pin(async move {
            while let Some(b) = batches.recv().await {
                let _ = self.0.send(b);
            }
            Ok(())
        })
    }
}

async fn calls(sink: Box<dyn ReceiptSink>, streams: u64, windows: u64) {
    let s = Substrate::start(
        SubstrateConfig::new(STEWARD),
        Arc::new(TokioClock::new(1_780_617_600)),
        Arc::new(SoftwareSigner::rfc8032_test_key()),
        sink,
    )
    .expect("substrate");
    let (push, yields) = (Latency::default(), Latency::default());
    for i in 0..streams {
        let h = s.open_stream(&format!("call-{i}")).expect("open");
        synthetic_call(&h, windows, i % 2 == 1, &push, &yields)
            .await
            .expect("call");
        h.close().await.expect("close");
    }
    s.shutdown().await.expect("shutdown");
}

/// The version-1 message of `b`: its version-2 body with `v` 1 and `inclusion` after
/// `checkpoint` (`spec/LIVE.md` section 6.2).
fn encode_v1(b: &SinkBatch, inclusion: &[Vec<u8>]) -> Vec<u8> {
    use ciborium::Value;
    let body = encode_batch(b).expect("encode");
    let Ok(Value::Map(mut m)) = ciborium::from_reader::<Value, _>(body.as_slice()) else {
        panic!("not a map")
    };
    m[0].1 = Value::Integer(1.into());
    m.insert(
        7,
        (
            Value::Text("inclusion".into()),
            Value::Array(inclusion.iter().cloned().map(Value::Bytes).collect()),
        ),
    );
    let mut out = Vec::new();
    ciborium::into_writer(&Value::Map(m), &mut out).expect("encode");
    out
}

fn main() {
    let mut args = std::env::args().skip(1);
    let streams: u64 = args.next().map_or(20, |a| a.parse().expect("STREAMS"));
    let windows: u64 = args.next().map_or(300, |a| a.parse().expect("WINDOWS"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime");
    let key = SoftwareSigner::rfc8032_test_key().verifying_key();

    // The file sink's folders.
    let dir = tempfile::tempdir().expect("tempdir");
    rt.block_on(calls(
        Box::new(FileSink::new(dir.path()).expect("sink")),
        streams,
        windows,
    ));
    let mut files = std::collections::BTreeMap::<String, u64>::new();
    for d in std::fs::read_dir(dir.path()).expect("read_dir") {
        let d = d.expect("entry").path();
        if d.is_dir() {
            for f in std::fs::read_dir(&d).expect("read_dir") {
                let f = f.expect("entry");
                *files
                    .entry(f.file_name().to_string_lossy().into_owned())
                    .or_default() += f.metadata().expect("metadata").len();
            }
        }
    }

    // The JetStream messages.
    let (tx, mut rx) = mpsc::unbounded_channel();
    rt.block_on(calls(Box::new(Keep(tx)), streams, windows));
    let mut batches = Vec::new();
    while let Ok(b) = rx.try_recv() {
        batches.push(b);
    }
    let (mut v2, mut v1, mut receipts, mut checkpoints) = (0u64, 0u64, 0u64, 0u64);
    let mut logs = std::collections::HashMap::<String, jouleclaw_seal::MerkleLog>::new();
    let mut verifier = jouleclaw_seal::SealVerifier::new(key);
    for b in &batches {
        let log = logs
            .entry(b.stream_id.clone())
            .or_insert_with(|| jouleclaw_seal::MerkleLog::new(1 << 20));
        let first = log.size();
        for r in &b.receipts {
            log.append(blake3::hash(&r.payload).as_bytes())
                .expect("append");
        }
        let inclusion: Vec<Vec<u8>> = b
            .receipts
            .iter()
            .zip(first..)
            .map(|(r, i)| {
                verifier
                    .derive_inclusion_receipt(
                        &b.checkpoint,
                        log,
                        i,
                        blake3::hash(&r.payload).as_bytes(),
                    )
                    .expect("derive")
            })
            .collect();
        v2 += encode_batch(b).expect("encode").len() as u64;
        v1 += encode_v1(b, &inclusion).len() as u64;
        receipts += b.receipts.len() as u64;
        checkpoints += 1;
    }
    let per = |n: u64| n as f64 / receipts as f64;
    println!(
        "{streams} streams, {receipts} windows, {checkpoints} checkpoints (a checkpoint every 25 windows)"
    );
    println!("file sink, bytes in all folders:");
    for (name, bytes) in &files {
        println!("  {name:26} {bytes:>12} {:>8.1} per window", per(*bytes));
    }
    let cbor = files
        .get(jouleclaw_store::layout::RECEIPTS_CBOR)
        .copied()
        .unwrap_or(0);
    let seals = files
        .get(jouleclaw_store::layout::SEALS_CBOR)
        .copied()
        .unwrap_or(0);
    println!(
        "  seals.cbor / receipts.cbor = {:.4}x",
        seals as f64 / cbor as f64
    );
    println!("JetStream message bodies:");
    println!(
        "  version 2 (now)            {v2:>12} {:>8.1} per window",
        per(v2)
    );
    println!(
        "  version 1 (with inclusion) {v1:>12} {:>8.1} per window",
        per(v1)
    );
    println!("  version 2 / version 1 = {:.4}x", v2 as f64 / v1 as f64);
}
