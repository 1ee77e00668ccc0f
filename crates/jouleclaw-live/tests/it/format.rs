//! Id escaping, the JetStream message format, the latency histogram, and what the audit says
//! about damaged or unsealed file storage.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::common::mic;

use std::sync::atomic::Ordering;
use std::time::Duration;

use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_live::audit::audit_stream_dir;
use jouleclaw_live::jetstream::{decode_batch, encode_batch, message_id};
use jouleclaw_live::synth::Latency;
use jouleclaw_live::*;
use proptest::prelude::*;

#[test]
fn ids_escape_into_one_safe_token() {
    assert_eq!(escape_id("did:example:steward"), "did%3Aexample%3Asteward");
    assert_eq!(escape_id("call.7/x"), "call%2E7%2Fx");
    assert_eq!(escape_id("a b*>%"), "a%20b%2A%3E%25");
    assert_eq!(escape_id("call-1_A"), "call-1_A");
    assert_eq!(escape_id("é"), "%C3%A9");
}

#[test]
fn unescape_refuses_tokens_escape_cannot_write() {
    assert_eq!(unescape_id("call%2E7").as_deref(), Some("call.7"));
    assert_eq!(unescape_id("call%2e7"), None, "lower-case hex");
    assert_eq!(unescape_id("%41"), None, "an escaped letter");
    assert_eq!(unescape_id("a.b"), None, "a raw dot");
    assert_eq!(unescape_id("a%2"), None, "a cut escape");
    assert_eq!(unescape_id("%FF"), None, "not UTF-8");
}

proptest! {
    #[test]
    fn escaping_round_trips_and_stays_in_the_safe_alphabet(s in "\\PC{0,40}") {
        let t = escape_id(&s);
        prop_assert!(t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'%'));
        prop_assert_eq!(unescape_id(&t), Some(s));
    }
}

fn batch(seq: u64, is_final: bool) -> SinkBatch {
    common::one_receipt_batch(
        "call.1",
        "did:example:steward",
        seq,
        is_final,
        3,
        vec![0xd2, 1, 2],
    )
}

#[test]
fn a_batch_message_round_trips_and_its_id_is_the_body_hash() {
    let body = encode_batch(&batch(2, true)).unwrap();
    let d = decode_batch(&body).unwrap();
    assert_eq!(
        (d.stream_id.as_str(), d.seq, d.is_final),
        ("call.1", 2, true)
    );
    assert_eq!(d.receipts, vec![vec![0xd2, 1, 2]]);
    assert_eq!(d.checkpoint, vec![0xd2, 9]);
    // Version 2: the batch carries no inclusion receipts.
    assert_eq!((d.version, d.inclusion), (2, None));
    assert_eq!(message_id(&body), blake3::hash(&body).to_hex().to_string());
    // Other content, other id.
    let other = encode_batch(&batch(3, true)).unwrap();
    assert_ne!(message_id(&body), message_id(&other));
}

#[test]
fn a_message_of_another_shape_is_refused() {
    use ciborium::Value;
    let mut body = Vec::new();
    ciborium::into_writer(
        &Value::Map(vec![(Value::Text("v".into()), Value::Integer(1.into()))]),
        &mut body,
    )
    .unwrap();
    assert_eq!(decode_batch(&body).unwrap_err().code(), "malformed");
    assert_eq!(decode_batch(b"\xff").unwrap_err().code(), "malformed");
    // Version 3 is refused with its own code; version 2 (the neighbour) decodes.
    let good = encode_batch(&batch(0, false)).unwrap();
    assert!(decode_batch(&good).is_ok());
    for v in [0u64, 3, u64::MAX] {
        let mut m = entries(&good);
        m[0].1 = Value::Integer(v.into());
        let e = decode_batch(&body_of(m)).unwrap_err();
        assert_eq!(e.code(), "unknown_message_version");
        assert_eq!(e, LiveError::UnknownMessageVersion { version: v });
    }
    // A version that is not an unsigned integer, or `v` not first.
    let mut m = entries(&good);
    m[0].1 = Value::Text("2".into());
    assert_eq!(decode_batch(&body_of(m)).unwrap_err().code(), "malformed");
    let mut m = entries(&good);
    m.swap(0, 1);
    assert_eq!(decode_batch(&body_of(m)).unwrap_err().code(), "malformed");
}

/// `m` (a version-2 message's entries) as version 1: `v` 1 and `inclusion` after
/// `checkpoint`.
fn as_v1(
    mut m: Vec<(ciborium::Value, ciborium::Value)>,
    inclusion: Vec<Vec<u8>>,
) -> Vec<(ciborium::Value, ciborium::Value)> {
    use ciborium::Value;
    m[0].1 = Value::Integer(1.into());
    m.insert(
        7,
        (
            Value::Text("inclusion".into()),
            Value::Array(inclusion.into_iter().map(Value::Bytes).collect()),
        ),
    );
    m
}

#[test]
fn version_1_keeps_its_inclusion_key_and_version_2_has_none() {
    use ciborium::Value;
    let mut f = batch(5, true);
    f.stop_latency = Some(vec![1]);
    f.interaction_metrics = Some(vec![2]);
    for b in [batch(0, false), f] {
        let v2 = entries(&encode_batch(&b).unwrap());
        assert_eq!(v2[0].1, Value::Integer(2.into()));
        assert!(v2.iter().all(|(k, _)| k.as_text() != Some("inclusion")));
        // Version 1 with its `inclusion` key decodes, the inclusion receipts kept.
        let v1 = as_v1(v2.clone(), vec![vec![7, 7]]);
        let d = decode_batch(&body_of(v1.clone())).unwrap();
        assert_eq!((d.version, d.inclusion), (1, Some(vec![vec![7, 7]])));
        assert_eq!(d.receipts, vec![vec![0xd2, 1, 2]]);
        assert_eq!(
            (d.stop_latency, d.interaction_metrics),
            (b.stop_latency.clone(), b.interaction_metrics.clone())
        );
        // Version 1 without it: refused.
        let mut m = v1.clone();
        m.remove(7);
        assert_eq!(decode_batch(&body_of(m)).unwrap_err().code(), "malformed");
        // Version 1 with it out of place (after the documents, or before `checkpoint`).
        if b.is_final {
            let mut m = v1.clone();
            let inc = m.remove(7);
            m.push(inc);
            assert_eq!(decode_batch(&body_of(m)).unwrap_err().code(), "malformed");
        }
        let mut m = v1.clone();
        m.swap(6, 7);
        assert_eq!(decode_batch(&body_of(m)).unwrap_err().code(), "malformed");
        // Version 1 whose inclusion is not an array of byte strings.
        let mut m = v1;
        m[7].1 = Value::Array(vec![Value::Text("x".into())]);
        assert_eq!(decode_batch(&body_of(m)).unwrap_err().code(), "malformed");
        // Version 2 with an `inclusion` key, in version 1's place or at the end: refused.
        let mut m = as_v1(v2.clone(), vec![vec![7, 7]]);
        m[0].1 = Value::Integer(2.into());
        let e = decode_batch(&body_of(m)).unwrap_err();
        assert_eq!(e.code(), "malformed");
        assert!(
            e.to_string().contains("inclusion in a version 2 message"),
            "{e}"
        );
        let mut m = v2.clone();
        m.push((Value::Text("inclusion".into()), Value::Array(vec![])));
        assert_eq!(decode_batch(&body_of(m)).unwrap_err().code(), "malformed");
        // The neighbour: version 2 as encoded decodes without inclusion receipts.
        let d = decode_batch(&body_of(v2)).unwrap();
        assert_eq!((d.version, d.inclusion), (2, None));
    }
}

#[test]
fn latency_quantiles_come_from_the_buckets() {
    let l = Latency::default();
    assert_eq!(l.quantile_us(0.99), 0);
    for us in 1..=100u64 {
        l.record(Duration::from_micros(us));
    }
    l.record(Duration::from_secs(1));
    assert_eq!(l.count(), 101);
    assert_eq!(l.quantile_us(0.5), 52);
    assert_eq!(l.max_us(), 1_000_000);
    assert_eq!(
        l.quantile_us(1.0),
        jouleclaw_live::synth::LATENCY_BUCKETS_US as u64
    );
}

// Real time: the first checkpoint is written by other threads while the test waits (bounded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_names_an_unsealed_stream_and_a_damaged_receipt() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = SubstrateConfig::new("did:example:steward");
    c.checkpoint_every = 1;
    let s = common::paused_substrate(c, Box::new(FileSink::new(dir.path()).unwrap()));
    let key = SoftwareSigner::rfc8032_test_key().verifying_key();
    let call = s.open_stream("open/one").unwrap();
    call.push(mic(0, 0)).unwrap();
    // Bounded wait (at most 10 s) for the first checkpoint to be written.
    for _ in 0..100 {
        if s.sink_stats().batches_durable.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let partial = dir
        .path()
        .join(format!("{}.partial", escape_id("open/one")));
    let audit = audit_stream_dir(&partial, &common::valid(&key)).unwrap();
    assert!(
        audit
            .lines()
            .iter()
            .any(|p| p == "unsealed: the storage does not mark the stream sealed"),
        "{:?}",
        audit.lines()
    );
    assert!(audit.has_problem("no_final_seal"), "{:?}", audit.lines());
    call.close().await.unwrap();
    s.shutdown().await.unwrap();
    let sealed = dir.path().join(escape_id("open/one"));
    assert!(!partial.exists());
    let audit = audit_stream_dir(&sealed, &common::valid(&key)).unwrap();
    assert!(audit.is_complete(), "{:?}", audit.lines());
    // One flipped byte in the last receipt's signature.
    let path = sealed.join(file::RECEIPTS_CBOR);
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 1;
    std::fs::write(&path, bytes).unwrap();
    let audit = audit_stream_dir(&sealed, &common::valid(&key)).unwrap();
    assert!(
        audit.has_problem("refused_signature"),
        "{:?}",
        audit.lines()
    );
    // A key that signed nothing here verifies nothing.
    let other = SoftwareSigner::from_seed(&[7; 32]).verifying_key();
    assert_eq!(
        audit_stream_dir(&sealed, &common::valid(&other))
            .unwrap()
            .verified,
        0
    );
}

#[test]
fn a_duplicate_ack_counts_only_with_the_body_stored_where_it_points() {
    use jouleclaw_live::jetstream::duplicate_confirms;
    let (subject, body) = ("jouleclaw.s.call", &b"batch"[..]);
    assert!(duplicate_confirms(7, Some((subject, body)), subject, body));
    // Sequence 0: the id is staged for a proposal, nothing stored.
    assert!(!duplicate_confirms(0, Some((subject, body)), subject, body));
    // Nothing at that sequence, another body there, or the body on another subject.
    assert!(!duplicate_confirms(7, None, subject, body));
    assert!(!duplicate_confirms(
        7,
        Some((subject, b"other")),
        subject,
        body
    ));
    assert!(!duplicate_confirms(
        7,
        Some(("jouleclaw.s.other", body)),
        subject,
        body
    ));
}

#[test]
fn message_id_generations_differ_and_generation_zero_is_the_content_id() {
    use jouleclaw_live::jetstream::{message_id, message_id_in};
    let body = b"batch";
    assert_eq!(message_id_in(body, 0), message_id(body));
    assert_eq!(message_id_in(body, 1), format!("{}.1", message_id(body)));
    assert_ne!(message_id_in(body, 1), message_id_in(body, 2));
    assert_ne!(message_id_in(b"other", 1), message_id_in(body, 1));
}

fn entries(body: &[u8]) -> Vec<(ciborium::Value, ciborium::Value)> {
    match ciborium::from_reader(body).unwrap() {
        ciborium::Value::Map(m) => m,
        _ => panic!("not a map"),
    }
}

/// `good`'s entries as `edit` leaves them: refused as `malformed`.
fn refused(
    good: &[(ciborium::Value, ciborium::Value)],
    edit: impl FnOnce(&mut Vec<(ciborium::Value, ciborium::Value)>),
) {
    let mut m = good.to_vec();
    edit(&mut m);
    assert_eq!(decode_batch(&body_of(m)).unwrap_err().code(), "malformed");
}

fn body_of(m: Vec<(ciborium::Value, ciborium::Value)>) -> Vec<u8> {
    let mut out = Vec::new();
    ciborium::into_writer(&ciborium::Value::Map(m), &mut out).unwrap();
    out
}

#[test]
fn a_final_batch_carries_its_stop_latency_document_as_an_eighth_key_last() {
    use ciborium::Value;
    let mut b = batch(4, true);
    b.stop_latency = Some(vec![0xd2, 0x84, 5]);
    let body = encode_batch(&b).unwrap();
    let m = entries(&body);
    assert_eq!(m.len(), 8);
    assert_eq!(m[7].0, Value::Text("stop_latency".into()));
    let d = decode_batch(&body).unwrap();
    assert_eq!(d.stop_latency, Some(vec![0xd2, 0x84, 5]));
    assert!(d.is_final);
    // Without one the message is the seven-key map of version 2.
    let plain = encode_batch(&batch(4, true)).unwrap();
    assert_eq!(entries(&plain).len(), 7);
    assert_eq!(decode_batch(&plain).unwrap().stop_latency, None);
    assert_eq!(body_of(m[..7].to_vec()), plain);
}

#[test]
fn a_stop_latency_key_out_of_place_is_refused() {
    use ciborium::Value;
    // Encoding refuses a document outside the final batch.
    let mut b = batch(1, false);
    b.stop_latency = Some(vec![1]);
    assert_eq!(encode_batch(&b).unwrap_err().code(), "malformed");
    let mut f = batch(1, true);
    f.stop_latency = Some(vec![1]);
    let good = entries(&encode_batch(&f).unwrap());
    assert!(decode_batch(&body_of(good.clone())).is_ok());
    // The key in a batch that is not final.
    refused(&good, |m| {
        m[4].1 = Value::Bool(false);
    });
    // Not a byte string.
    refused(&good, |m| {
        m[7].1 = Value::Text("d284".into());
    });
    // Not last.
    refused(&good, |m| {
        m.swap(6, 7);
    });
    // A ninth key, or another name in its place.
    refused(&good, |m| {
        m.push((Value::Text("extra".into()), Value::Bytes(vec![])));
    });
    refused(&good, |m| {
        m[7].0 = Value::Text("stop-latency".into());
    });
}

#[test]
fn a_final_batch_carries_its_interaction_document_after_the_stop_latency_one() {
    use ciborium::Value;
    let mut b = batch(4, true);
    b.stop_latency = Some(vec![0xd2, 0x84, 5]);
    b.interaction_metrics = Some(vec![0xd2, 0x84, 6]);
    let body = encode_batch(&b).unwrap();
    let m = entries(&body);
    assert_eq!(m.len(), 9);
    assert_eq!(m[7].0, Value::Text("stop_latency".into()));
    assert_eq!(m[8].0, Value::Text("interaction_metrics".into()));
    let d = decode_batch(&body).unwrap();
    assert_eq!(d.stop_latency, Some(vec![0xd2, 0x84, 5]));
    assert_eq!(d.interaction_metrics, Some(vec![0xd2, 0x84, 6]));
    // Without it, the eight-key message of a stream with only a stop-latency document.
    let mut sl = batch(4, true);
    sl.stop_latency = Some(vec![0xd2, 0x84, 5]);
    let eight = encode_batch(&sl).unwrap();
    assert_eq!(body_of(m[..8].to_vec()), eight);
    assert_eq!(decode_batch(&eight).unwrap().interaction_metrics, None);
    // Alone: the eighth key.
    let mut only = batch(4, true);
    only.interaction_metrics = Some(vec![7]);
    let body = encode_batch(&only).unwrap();
    let m = entries(&body);
    assert_eq!(m.len(), 8);
    assert_eq!(m[7].0, Value::Text("interaction_metrics".into()));
    let d = decode_batch(&body).unwrap();
    assert_eq!(
        (d.stop_latency, d.interaction_metrics),
        (None, Some(vec![7]))
    );
}

#[test]
fn an_interaction_key_out_of_place_is_refused() {
    use ciborium::Value;
    let mut b = batch(1, false);
    b.interaction_metrics = Some(vec![1]);
    assert_eq!(encode_batch(&b).unwrap_err().code(), "malformed");
    let mut f = batch(1, true);
    f.stop_latency = Some(vec![1]);
    f.interaction_metrics = Some(vec![2]);
    let good = entries(&encode_batch(&f).unwrap());
    assert!(decode_batch(&body_of(good.clone())).is_ok());
    // In a batch that is not final.
    refused(&good, |m| {
        m[4].1 = Value::Bool(false);
    });
    // Alone in a batch that is not final.
    refused(&good, |m| {
        m.remove(7);
        m[4].1 = Value::Bool(false);
    });
    // Not a byte string.
    refused(&good, |m| {
        m[8].1 = Value::Text("d284".into());
    });
    // Before the stop-latency key.
    refused(&good, |m| {
        m.swap(7, 8);
    });
    // Twice.
    refused(&good, |m| {
        m.push(m[8].clone());
    });
}
