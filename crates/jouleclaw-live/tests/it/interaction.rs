//! The interaction panel in the live runtime: each stream's signed `interaction-metrics/1`
//! document, measured from the ticks the judge accepted (tokio's paused clock: the ticks' times
//! are exact), committed by the final seal, written by the file sink as `jouleclaw run` names
//! it, carried by the JetStream final message, and checked by the auditor (missing when the
//! seal lists it, altered, or another call's).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use jouleclaw_interaction::EventKind;
use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_live::audit::{audit_nats_stream, audit_stream_dir};
use jouleclaw_live::file::{INTERACTION_METRICS_CBOR, STOP_LATENCY_CBOR};
use jouleclaw_live::jetstream::NatsStream;
use jouleclaw_live::*;
use jouleclaw_stream::{Tick, TickKind, duplex, interaction};

const STEWARD: &str = "did:example:steward";
const FRAME: u64 = 200_000_000;

fn key() -> jouleclaw_jcr1::cose::PublicKey {
    SoftwareSigner::rfc8032_test_key().verifying_key()
}

/// What the stream verifier finds of the signed document `file` in the folder `dir` under
/// `key`: one `code: sentence` line a problem.
fn document_problems(dir: &Path, file: &str, key: &jouleclaw_jcr1::cose::PublicKey) -> Vec<String> {
    jouleclaw_store::verify_dir(dir, &common::valid(key), &mut |_, _| {})
        .unwrap()
        .document_problems_of(file)
        .map(|p| format!("{}: {}", p.code, p.message))
        .collect()
}

fn valid_key() -> jouleclaw_jcr1::cose::ValidKey {
    jouleclaw_jcr1::cose::ValidKey::new(key()).unwrap()
}

async fn at(h: &StreamHandle, ts_ns: u64) {
    let now = h.now_ns();
    if ts_ns > now {
        tokio::time::sleep(Duration::from_nanos(ts_ns - now)).await;
    }
}

/// One scripted turn on the paused clock: the user speaks in frames 0-2, the agent answers in
/// frames `answer..answer + 4` (TTS audio), the user speaks again in frames 12 and 13: 14
/// frames, 9 windows with ticks (a window without one has no receipt).
async fn turn(h: &StreamHandle, answer: u64) {
    let mut ticks = Vec::new();
    for f in [0, 1, 2, 12, 13] {
        let ts = f * FRAME + 10_000_000;
        ticks.push(Tick::marker(
            f,
            duplex::CONTROL,
            interaction::marker(interaction::USER_SPEECH),
            ts,
        ));
    }
    for f in answer..answer + 4 {
        let ts = f * FRAME + 30_000_000;
        ticks.push(Tick::new(
            f,
            duplex::TTS,
            TickKind::Audio,
            bytes::Bytes::from(vec![0u8; duplex::TTS_BYTES_PER_WINDOW]),
            ts,
        ));
    }
    ticks.sort_by_key(|t| t.ts_ns);
    for t in ticks {
        at(h, t.ts_ns).await;
        h.push(t).unwrap();
    }
}

/// Two scripted calls into a file sink: `call-0` answers 400 ms after the user's turn,
/// `call-1` 800 ms after it.
async fn two_calls(dir: &Path) {
    let mut c = SubstrateConfig::new(STEWARD);
    c.checkpoint_every = 5;
    let s = common::paused_substrate(c, Box::new(FileSink::new(dir).unwrap()));
    for (id, answer) in [("call-0", 5), ("call-1", 7)] {
        let h = s.open_stream(id).unwrap();
        turn(&h, answer).await;
        let summary = h.close().await.unwrap();
        assert_eq!((summary.windows, summary.refused), (9, 0), "{id}");
    }
    s.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn each_stream_signs_its_interaction_panel_measured_from_the_ticks_and_seals_it() {
    let t = tempfile::tempdir().unwrap();
    two_calls(t.path()).await;
    for (id, latency) in [("call-0", 2), ("call-1", 4)] {
        let dir = t.path().join(id);
        let bytes = std::fs::read(dir.join(INTERACTION_METRICS_CBOR)).unwrap();
        let doc = jouleclaw_interaction::verify(&bytes, &valid_key())
            .unwrap()
            .document;
        assert_eq!(
            (doc.steward.as_str(), doc.stream_id.as_str()),
            (STEWARD, id)
        );
        assert_eq!(doc.window_count, 9);
        assert_eq!(doc.frame_count, 14);
        assert_eq!(
            doc.config,
            jouleclaw_interaction::InteractionConfig::default()
        );
        // The user's turn ends in frame 2; the agent starts `latency` frames later.
        let response = doc
            .events
            .iter()
            .find(|e| e.kind == EventKind::Response)
            .unwrap_or_else(|| panic!("{id}: {:?}", doc.events));
        assert_eq!(response.latency_ticks, Some(latency), "{id}");
        assert_eq!(doc.panel().counts.response_count, 1, "{id}");
        // Bound to the receipts as stored; the final seal commits to its digest.
        assert_eq!(
            document_problems(&dir, INTERACTION_METRICS_CBOR, &key()),
            Vec::<String>::new()
        );
        let records = common::records_of(&dir);
        let seal = jouleclaw_seal::verify_checkpoint(records.seals.last().unwrap(), &key())
            .unwrap()
            .seal;
        assert!(seal.is_final);
        let docs = seal.documents.unwrap();
        assert_eq!(
            docs.get(jouleclaw_interaction::INTERACTION_SCHEMA),
            Some(&jouleclaw_seal::document_digest(&bytes))
        );
        assert!(docs.contains_key(jouleclaw_stop_latency::STOP_LATENCY_SCHEMA));
        assert_eq!(
            audit_stream_dir(&dir, &common::valid(&key()))
                .unwrap()
                .lines(),
            Vec::<String>::new()
        );
    }
}

/// The problems of a stream holding another call's document: the final seal's digest, and the
/// binding (another stream).
fn assert_another_calls(p: &[String]) {
    assert!(p[0].starts_with("document_digest_mismatch"), "{p:?}");
    assert!(
        p.iter()
            .any(|l| l.starts_with("stream_mismatch: interaction-metrics/1")),
        "{p:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_folder_audit_refuses_the_document_altered_another_calls_or_removed() {
    let t = tempfile::tempdir().unwrap();
    two_calls(t.path()).await;
    let dir = t.path().join("call-1");
    let doc = dir.join(INTERACTION_METRICS_CBOR);
    let good = std::fs::read(&doc).unwrap();
    let other = std::fs::read(t.path().join("call-0").join(INTERACTION_METRICS_CBOR)).unwrap();
    let problems = |d: &Path| audit_stream_dir(d, &common::valid(&key())).unwrap().lines();
    assert_eq!(problems(&dir), Vec::<String>::new());
    // Altered: the seal's digest, and the signature.
    common::assert_altered_document_refused(&doc, &good, "interaction-metrics", || problems(&dir));
    // The other call's: the seal's digest, and the binding (another stream, another root).
    std::fs::write(&doc, &other).unwrap();
    let p = problems(&dir);
    assert_another_calls(&p);
    assert!(
        p.iter()
            .any(|l| l.starts_with("root_mismatch: interaction-metrics/1")),
        "{p:?}"
    );
    // A symbolic link to the good document: not followed.
    let elsewhere = t.path().join("elsewhere.cbor");
    common::assert_linked_document_refused(&doc, &good, &elsewhere, || problems(&dir));
    // Removed: the final seal lists it.
    std::fs::remove_file(&doc).unwrap();
    let p = problems(&dir);
    assert!(
        p.len() == 1 && p[0].starts_with("document_missing") && p[0].contains("interaction"),
        "{p:?}"
    );
    // Put back as written: complete again.
    std::fs::write(&doc, &good).unwrap();
    assert_eq!(problems(&dir), Vec::<String>::new());
}

#[tokio::test(start_paused = true)]
async fn the_binding_check_refuses_another_calls_document_and_another_key() {
    let t = tempfile::tempdir().unwrap();
    two_calls(t.path()).await;
    let (d0, d1) = (t.path().join("call-0"), t.path().join("call-1"));
    let doc0 = std::fs::read(d0.join(INTERACTION_METRICS_CBOR)).unwrap();
    let doc1 = std::fs::read(d1.join(INTERACTION_METRICS_CBOR)).unwrap();
    let problems = |d: &Path| document_problems(d, INTERACTION_METRICS_CBOR, &key());
    assert_eq!(problems(&d1), Vec::<String>::new());
    // The other call's document beside these receipts.
    std::fs::write(d1.join(INTERACTION_METRICS_CBOR), &doc0).unwrap();
    let p = problems(&d1);
    assert!(p.iter().any(|l| l.starts_with("stream_mismatch")), "{p:?}");
    assert!(p.iter().any(|l| l.starts_with("root_mismatch")), "{p:?}");
    std::fs::write(d1.join(INTERACTION_METRICS_CBOR), &doc1).unwrap();
    // One receipt fewer: the count and the root.
    let jsonl = d1.join(file::RECEIPTS_JSONL);
    let lines = std::fs::read(&jsonl).unwrap();
    let cut = lines[..lines.len() - 1]
        .iter()
        .rposition(|&b| b == b'\n')
        .unwrap();
    std::fs::write(&jsonl, &lines[..=cut]).unwrap();
    let p = problems(&d1);
    assert!(
        p.iter().any(|l| l.starts_with("window_count_mismatch")),
        "{p:?}"
    );
    std::fs::write(&jsonl, &lines).unwrap();
    // Another key: the document does not verify (its verifier's code, not a binding one).
    let other = SoftwareSigner::generate().verifying_key();
    let p = document_problems(&d1, INTERACTION_METRICS_CBOR, &other);
    assert!(
        p.len() == 1
            && !jouleclaw_interaction::BINDING_CODES
                .iter()
                .any(|c| p[0].starts_with(c)),
        "{p:?}"
    );
    // Absent, and no summary.json lists it: not this check's (the final seal's commitment
    // says it is missing).
    std::fs::remove_file(d0.join(INTERACTION_METRICS_CBOR)).unwrap();
    assert_eq!(problems(&d0), Vec::<String>::new());
}

/// A stream as the JetStream reader returns it, built from a folder the file sink wrote (the
/// same batches): its records and the final batch's documents (message version 2: no
/// inclusion receipts).
fn nats_stream(dir: &Path, id: &str) -> NatsStream {
    let inclusion = None;
    NatsStream {
        subject: format!("jouleclaw.x.{id}"),
        steward: STEWARD.to_owned(),
        records: common::records_of(dir),
        inclusion,
        stop_latency: Some(std::fs::read(dir.join(STOP_LATENCY_CBOR)).unwrap()),
        interaction_metrics: Some(std::fs::read(dir.join(INTERACTION_METRICS_CBOR)).unwrap()),
    }
}

#[tokio::test(start_paused = true)]
async fn the_jetstream_audit_refuses_the_document_missing_altered_or_another_calls() {
    let t = tempfile::tempdir().unwrap();
    two_calls(t.path()).await;
    let s0 = nats_stream(&t.path().join("call-0"), "call-0");
    let s1 = nats_stream(&t.path().join("call-1"), "call-1");
    let problems = |s: &NatsStream| audit_nats_stream(s, &common::valid(&key())).lines();
    assert_eq!(problems(&s1), Vec::<String>::new());
    // Missing from the final message while the seal lists it.
    let mut missing = s1.clone();
    missing.interaction_metrics = None;
    let p = problems(&missing);
    assert!(
        p.len() == 1
            && p[0].starts_with("document_missing")
            && p[0].contains("interaction-metrics/1"),
        "{p:?}"
    );
    // Altered.
    let mut altered = s1.clone();
    let doc = altered.interaction_metrics.as_mut().unwrap();
    let i = doc.len() - 80;
    doc[i] ^= 1;
    let p = problems(&altered);
    assert!(
        p.len() == 2
            && p[0].starts_with("document_digest_mismatch")
            && p[0].contains("interaction-metrics.cbor")
            && p[1].contains("the interaction-metrics document does not verify"),
        "{p:?}"
    );
    // Another call's.
    let mut swapped = s1.clone();
    swapped.interaction_metrics = s0.interaction_metrics.clone();
    let p = problems(&swapped);
    assert_another_calls(&p);
    // The stop-latency document missing instead: the same rule, for its kind.
    let mut no_stop_latency = s1.clone();
    no_stop_latency.stop_latency = None;
    let p = problems(&no_stop_latency);
    assert!(
        p.iter().any(|l| l.starts_with("document_missing")
            && l.contains("the final seal commits to a stop-latency/")),
        "{p:?}"
    );
}

/// The final batch alone carries the document; its message keeps it byte for byte.
#[tokio::test(start_paused = true)]
async fn the_final_message_carries_the_interaction_document() {
    use jouleclaw_live::jetstream::{decode_batch, encode_batch};
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut c = SubstrateConfig::new(STEWARD);
    c.checkpoint_every = 5;
    let s = common::paused_substrate(c, Box::new(common::Collect::new(tx)));
    let h = s.open_stream("call-1").unwrap();
    turn(&h, 5).await;
    h.close().await.unwrap();
    s.shutdown().await.unwrap();
    let mut batches = Vec::new();
    while let Ok(b) = rx.try_recv() {
        batches.push(b);
    }
    assert_eq!(batches.len(), 2);
    assert!(!batches[0].is_final && batches[0].interaction_metrics.is_none());
    let last = &batches[1];
    let doc = last.interaction_metrics.clone().unwrap();
    let d = decode_batch(&encode_batch(last).unwrap()).unwrap();
    assert_eq!(d.interaction_metrics.as_deref(), Some(doc.as_slice()));
    assert_eq!(d.stop_latency, last.stop_latency);
    let v = jouleclaw_interaction::verify(&doc, &valid_key()).unwrap();
    assert_eq!(v.document.window_count, 9);
}

/// The load generator's calls speak (`user_speech` markers where the user speaks): their live
/// panel has the user's turns answered and the barge-ins yielded to.
#[tokio::test(start_paused = true)]
async fn a_synthetic_calls_panel_has_its_responses_and_yields() {
    use jouleclaw_live::synth::{Latency, synthetic_call};
    let t = tempfile::tempdir().unwrap();
    let s = common::paused_substrate(
        SubstrateConfig::new(STEWARD),
        Box::new(FileSink::new(t.path()).unwrap()),
    );
    for (id, ignores) in [("polite", false), ("rude", true)] {
        let h = s.open_stream(id).unwrap();
        let (push, yields) = (Latency::default(), Latency::default());
        synthetic_call(&h, 20, ignores, &push, &yields)
            .await
            .unwrap();
        h.close().await.unwrap();
    }
    s.shutdown().await.unwrap();
    for id in ["polite", "rude"] {
        let dir = t.path().join(id);
        let bytes = std::fs::read(dir.join(INTERACTION_METRICS_CBOR)).unwrap();
        let doc = jouleclaw_interaction::verify(&bytes, &valid_key())
            .unwrap()
            .document;
        let kinds: Vec<(EventKind, Option<u64>)> = doc
            .events
            .iter()
            .map(|e| (e.kind, e.latency_ticks))
            .collect();
        // τ-voice's rules over 200 ms frames: each barge-in (frames 5 and 15) is a yield within
        // one frame for both calls (the rude call's late audio, 155 ms after the barge-in, lies
        // in the barge-in's own frame: its stop-latency document tells them apart); the turns
        // at frames 0 and 10 end as the agent starts in the next frame (ending during agent
        // speech: no response event); the barge-in at frame 5 is answered at frame 11.
        assert_eq!(
            kinds,
            [
                (EventKind::Yield, Some(1)),
                (EventKind::Response, Some(5)),
                (EventKind::Yield, Some(1)),
            ],
            "{id}"
        );
    }
}
