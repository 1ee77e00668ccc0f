//! Version 1 of the JetStream message (`spec/LIVE.md` section 6.2, with the `inclusion` key):
//! two messages written by the version-1 encoder are committed under `tests/vectors/`, and
//! every later reader must decode them.
//!
//! The batches are deterministic: the demo story through a `Pipeline` under the live signing
//! policy (every window signed, a checkpoint every 5 windows), signed with the RFC 8032 test
//! key. `cargo test -p jouleclaw-live --test message_v1 -- --ignored write_v1_fixtures` wrote
//! the files once; they are never regenerated.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use jouleclaw_jcr1::cose::SoftwareSigner;
use jouleclaw_live::*;
use jouleclaw_pipeline::{
    ClosedAt, Pipeline, PipelineConfig, SigningPolicy, WindowSignatures, demo, duplex_voice_oracle,
};

/// The committed version-1 messages: the first (non-final) batch and the final one.
const FIXTURES: [&str; 2] = [
    "jetstream-message-v1-first.cbor",
    "jetstream-message-v1-final.cbor",
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("vectors")
        .join(name)
}

/// The demo story's first and final batches with their inclusion receipts, as the live
/// runtime handed them to its sinks when it minted inclusion receipts.
fn v1_batches() -> Vec<(SinkBatch, Vec<(u64, Vec<u8>)>)> {
    let mut p = Pipeline::new(
        Arc::new(jouleclaw_stream::StreamSpec::duplex_voice_default()),
        PipelineConfig::new(demo::STEWARD, demo::STREAM_ID)
            .with_closed_at(ClosedAt::StreamTime {
                epoch_unix: demo::EPOCH_UNIX,
            })
            .with_signing(SigningPolicy::Checkpoint {
                every_windows: 5,
                window_signatures: WindowSignatures::All,
                max_windows: 1 << 20,
            }),
        duplex_voice_oracle(),
        jouleclaw_jcr1::Estimator::default(),
        Box::new(SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap();
    let mut windows = Vec::new();
    for tick in demo::ticks() {
        windows.extend(p.push(tick).unwrap().closed);
    }
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
    let n = seals.len();
    for (i, (receipts, seal)) in seals.into_iter().enumerate() {
        if i != 0 && i + 1 != n {
            seq += 1;
            continue;
        }
        out.push((
            SinkBatch {
                stream_id: demo::STREAM_ID.into(),
                steward: demo::STEWARD.into(),
                seq,
                is_final: seal.checkpoint.seal.is_final,
                receipts,
                checkpoint: seal.checkpoint.cose_sign1,
                inclusion: seal.inclusion.clone(),
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

/// Wrote the committed fixtures with the version-1 encoder (run once; never again).
#[test]
#[ignore = "writes the committed version-1 fixtures"]
fn write_v1_fixtures() {
    for ((b, _), name) in v1_batches().iter().zip(FIXTURES) {
        let body = jouleclaw_live::jetstream::encode_batch(b).unwrap();
        std::fs::write(fixture(name), body).unwrap();
    }
}
