//! Helpers shared by the test files (each file uses some of them).

#![allow(dead_code)]

use jouleclaw_live::{BoxFuture, ReceiptSink, Result, SinkBatch, SinkContext};
use jouleclaw_stream::{Tick, TickKind, duplex};
use tokio::sync::mpsc;

mod nats_server;
#[allow(unused_imports)] // the test files that start no server
pub use nats_server::{NatsServer, free_port, nats_server};

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

/// A sink that hands every batch to the test as it comes (the seam under test, not a store:
/// the test looks at the batches, or publishes them itself, changed).
pub struct Collect(pub mpsc::UnboundedSender<SinkBatch>);

impl ReceiptSink for Collect {
    fn describe(&self) -> String {
        "collect".into()
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
