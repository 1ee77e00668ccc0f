//! Version 1 of the JetStream message (`spec/LIVE.md` section 6.2, with the `inclusion` key):
//! two messages written by the version-1 encoder are committed under `tests/vectors/`, and
//! every later reader must decode them.
//!
//! The batches are deterministic: the demo story through a `Pipeline` under the live signing
//! policy (every window signed, a checkpoint every 5 windows), signed with the RFC 8032 test
//! key. The version-1 encoder (`encode_batch` before version 2) wrote the files once, in the
//! commit that added them; they are never regenerated. The test below rebuilds them from
//! the version-2 encoder and the inclusion receipts (`v` 1, `inclusion` after `checkpoint`)
//! and compares byte for byte, then decodes them and checks their inclusion receipts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::common::{Inclusion, encode_v1, v1_demo_batches};

use std::path::PathBuf;

use jouleclaw_jcr1::cose::SoftwareSigner;
use jouleclaw_live::*;
use jouleclaw_pipeline::demo;

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

/// The demo story's first and final batches with their inclusion receipts.
fn v1_batches() -> Vec<(SinkBatch, Inclusion)> {
    let mut all = v1_demo_batches();
    let last = all.pop().unwrap();
    vec![all.swap_remove(0), last]
}

#[test]
fn committed_version_1_messages_still_decode_and_their_inclusion_receipts_are_checked() {
    use jouleclaw_live::audit::{StreamRecords, audit_nats_stream};
    use jouleclaw_live::jetstream::{NatsStream, decode_batch};
    let key = jouleclaw_jcr1::cose::Signer::verifying_key(&SoftwareSigner::rfc8032_test_key());
    let batches = v1_batches();
    assert_eq!(batches.len(), FIXTURES.len());
    let mut receipts = Vec::new();
    let mut seals = Vec::new();
    let mut all_inclusion = Vec::new();
    for ((b, inclusion), name) in batches.iter().zip(FIXTURES) {
        let committed = std::fs::read(fixture(name)).unwrap();
        // What the version-1 encoder wrote is version 2 plus `inclusion`, byte for byte.
        assert_eq!(encode_v1(b, inclusion), committed, "{name}");
        let d = decode_batch(&committed).unwrap();
        assert_eq!(d.version, 1);
        assert_eq!(
            (d.stream_id.as_str(), d.steward.as_str()),
            (demo::STREAM_ID, demo::STEWARD)
        );
        assert_eq!((d.seq, d.is_final), (b.seq, b.is_final));
        let want: Vec<Vec<u8>> = b.receipts.iter().map(|r| r.cose_sign1.clone()).collect();
        assert_eq!(d.receipts, want);
        assert_eq!(d.checkpoint, b.checkpoint);
        let want: Vec<Vec<u8>> = inclusion.iter().map(|(_, r)| r.clone()).collect();
        assert_eq!(d.inclusion.as_ref(), Some(&want));
        assert_eq!(want.len(), d.receipts.len());
        receipts.extend(d.receipts);
        seals.push(d.checkpoint);
        all_inclusion.extend(d.inclusion.unwrap());
    }
    // The first batch alone, as the reader holds it: its receipts, checkpoint and inclusion
    // receipts verify; what is named is that no final seal was read.
    let n = batches[0].0.receipts.len();
    let first = |inclusion: &[Vec<u8>]| NatsStream {
        subject: format!("jouleclaw.s.{}", demo::STREAM_ID),
        steward: demo::STEWARD.into(),
        records: StreamRecords {
            stream_id: demo::STREAM_ID.into(),
            receipts: receipts[..n].to_vec(),
            seals: seals[..1].to_vec(),
            ..StreamRecords::default()
        },
        inclusion: Some(inclusion.to_vec()),
        stop_latency: None,
        interaction_metrics: None,
    };
    let not_final = |p: &str| p.starts_with("no_final_seal") || p.starts_with("unsealed");
    let audit = audit_nats_stream(&first(&all_inclusion[..n]), &common::valid(&key));
    assert_eq!(audit.verified, n, "{audit:?}");
    assert!(audit.lines().iter().all(|p| not_final(p)), "{audit:?}");
    assert_eq!(audit.lines().len(), 2, "{audit:?}");
    // A damaged or missing one is named.
    let mut damaged = all_inclusion[..n].to_vec();
    let last = damaged[1].len() - 1;
    damaged[1][last] ^= 1;
    let p = audit_nats_stream(&first(&damaged), &common::valid(&key)).lines();
    let named: Vec<&String> = p.iter().filter(|p| !not_final(p)).collect();
    assert!(
        named.len() == 1 && named[0].starts_with("refused_inclusion"),
        "{p:?}"
    );
    let p = audit_nats_stream(&first(&all_inclusion[..n - 1]), &common::valid(&key)).lines();
    assert!(p.iter().any(|p| p.starts_with("inclusion_count")), "{p:?}");
}
