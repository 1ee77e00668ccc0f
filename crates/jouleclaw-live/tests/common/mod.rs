//! Helpers shared by the test files (each file uses some of them).

#![allow(dead_code)]

use jouleclaw_live::{BoxFuture, ReceiptSink, Result, SinkBatch, SinkContext};
use jouleclaw_stream::{Tick, TickKind, duplex};
use tokio::sync::mpsc;

#[allow(unused_imports)] // the test files that start no server
pub use jouleclaw_testkit::nats::{NatsServer, free_port, nats_server};

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
