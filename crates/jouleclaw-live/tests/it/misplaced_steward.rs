//! A JetStream read-back names receipts stored under another steward's subject, sealed or not:
//! the subject's steward is compared with the receipts' (as the stream id is), not only with
//! the final seal's.

#![allow(clippy::unwrap_used)]

use jouleclaw_jcr1::StreamWindowReceipt;
use jouleclaw_jcr1::cose::{Signer as _, SoftwareSigner};
use jouleclaw_live::audit::{StreamRecords, audit_nats_stream};
use jouleclaw_live::escape_id;
use jouleclaw_live::jetstream::NatsStream;

/// A canonical receipt (window 0 of `examples/golden/tool-call.receipts.jsonl`).
const LINE: &[u8] = br#"{"closed_at":"2026-06-05T00:00:00Z","conservation":{"kind":"conforming"},"energy_provenance":"Estimator","id":"stream-demo:0000","inbound_bytes":6400,"jc_receipt":"stream-window/1","joules_uj":180,"outbound_bytes":0,"steward":"did:keri:EJ9testStewardAID000000000000000","stream_id":"stream-demo","tick_count":2,"verdict":{"chain":["always-pass-stream","barge-in-detector","per-tick:utf8-text","structured:04d0f386107113a0"],"kind":"pass"},"window_hash":"97e995c87971d6691105b6eb69a2862ab9dcfa15e1091926f94936396fac5f03","window_id":0}"#;

/// Two window-signed receipts of steward `did:example:b`, stored under `subject_steward`'s
/// subject with no seal (a stream still being written).
fn stored_under(subject_steward: &str) -> NatsStream {
    let signer = SoftwareSigner::rfc8032_test_key();
    let base = jouleclaw_jcr1::decode_receipt(LINE).unwrap();
    let receipts = (0..2u64)
        .map(|w| {
            let r = StreamWindowReceipt {
                window_id: w,
                steward: "did:example:b".to_owned(),
                ..base.clone()
            };
            let payload = r.encode().unwrap();
            jouleclaw_jcr1::cose::sign_payload(&signer, &r, payload)
                .unwrap()
                .cose_sign1
        })
        .collect();
    NatsStream {
        subject: format!(
            "jouleclaw.{}.{}",
            escape_id(subject_steward),
            escape_id(&base.stream_id)
        ),
        steward: subject_steward.to_owned(),
        records: StreamRecords {
            stream_id: base.stream_id,
            receipts,
            ..StreamRecords::default()
        },
        ..NatsStream::default()
    }
}

#[test]
fn unsealed_receipts_of_another_steward_are_misplaced() {
    let key = SoftwareSigner::rfc8032_test_key().verifying_key();
    let misplaced = |audit: &jouleclaw_live::audit::StreamAudit| {
        audit
            .lines()
            .iter()
            .any(|p| p.starts_with("misplaced_steward:"))
    };
    let audit = audit_nats_stream(&stored_under("did:example:a"), &valid(&key));
    assert_eq!(audit.verified, 2, "{:?}", audit.lines());
    assert!(misplaced(&audit), "{:?}", audit.lines());
    // Accepted neighbour: under its own steward's subject the stream is only unsealed.
    let audit = audit_nats_stream(&stored_under("did:example:b"), &valid(&key));
    assert_eq!(audit.verified, 2, "{:?}", audit.lines());
    assert!(!misplaced(&audit), "{:?}", audit.lines());
    assert!(
        audit.lines().iter().all(|p| p.starts_with("unsealed:")),
        "{:?}",
        audit.lines()
    );
}

/// `key` checked once by the one key rule, as every caller of the auditor checks it.
fn valid(key: &jouleclaw_jcr1::cose::PublicKey) -> jouleclaw_jcr1::cose::ValidKey {
    jouleclaw_jcr1::cose::ValidKey::new(*key).unwrap()
}
