//! Stop latency in the live runtime: each stream's signed `stop-latency/1` document, measured
//! from the ticks the judge accepted (tokio's paused clock: the ticks' times are exact), written
//! by the file sink beside the stream's files, carried by the JetStream final message, and
//! checked by the auditor (verified when present, required when a receipt records a
//! barge-in).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::common::Collect;

use std::path::Path;

use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_live::file::STOP_LATENCY_CBOR;
use jouleclaw_live::jetstream::{decode_batch, encode_batch};
use jouleclaw_live::synth::{Latency, synthetic_call};
use jouleclaw_live::*;
use jouleclaw_stop_latency::EndedBy;
use jouleclaw_stream::{Tick, TickMarker, duplex};

const STEWARD: &str = "did:example:steward";

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

/// Two synthetic calls of 12 windows into a file sink on the paused clock: `call-0` stops at
/// the barge-in, `call-1` ignores it and sends TTS audio 155 ms after it.
async fn two_calls(dir: &Path) {
    let mut c = SubstrateConfig::new(STEWARD);
    c.checkpoint_every = 5;
    let s = common::paused_substrate(c, Box::new(FileSink::new(dir).unwrap()));
    let (push, yields) = (Latency::default(), Latency::default());
    for (id, ignores) in [("call-0", false), ("call-1", true)] {
        let h = s.open_stream(id).unwrap();
        let r = synthetic_call(&h, 12, ignores, &push, &yields)
            .await
            .unwrap();
        assert_eq!((r.refused, r.yields), (0, 1), "{id}");
        h.close().await.unwrap();
    }
    s.shutdown().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn each_file_sink_stream_has_its_signed_stop_latency_measured_from_the_ticks() {
    let t = tempfile::tempdir().unwrap();
    two_calls(t.path()).await;
    for (id, latency_ns, late) in [("call-0", 0, false), ("call-1", 155_000_000, true)] {
        let dir = t.path().join(id);
        let bytes = std::fs::read(dir.join(STOP_LATENCY_CBOR)).unwrap();
        let doc = jouleclaw_stop_latency::verify(&bytes, &valid_key())
            .unwrap()
            .document;
        assert_eq!(
            (doc.steward.as_str(), doc.stream_id.as_str()),
            (STEWARD, id)
        );
        assert_eq!(doc.window_count, 12);
        assert_eq!(doc.barge_ins.len(), 1, "{id}");
        let b = doc.barge_ins[0];
        // The barge-in marker at 40 ms into window 5; the next agent turn starts in window 11.
        assert_eq!((b.window_id, b.barge_in_ts_ns), (5, 1_040_000_000), "{id}");
        assert_eq!(b.stop_latency_ns(), latency_ns, "{id}");
        assert_eq!(b.late_audio_bytes > 0, late, "{id}");
        assert_eq!(b.ended_by, EndedBy::Start, "{id}");
        assert_eq!(b.end_ts_ns, Some(11 * 200_000_000 + 8_000_000), "{id}");
        // Bound to the receipts as stored, and nothing else left in the folder: no
        // `inclusion.cbor` (layout stream-at-rest/2).
        assert_eq!(
            document_problems(&dir, STOP_LATENCY_CBOR, &key()),
            Vec::<String>::new()
        );
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "interaction-metrics.cbor",
                "receipts.cbor",
                "receipts.jsonl",
                "seals.cbor",
                "stop-latency.cbor"
            ]
        );
    }
}

#[tokio::test(start_paused = true)]
async fn a_stop_latency_document_altered_swapped_or_removed_is_refused() {
    let t = tempfile::tempdir().unwrap();
    two_calls(t.path()).await;
    let (d0, d1) = (t.path().join("call-0"), t.path().join("call-1"));
    let doc0 = std::fs::read(d0.join(STOP_LATENCY_CBOR)).unwrap();
    let doc1 = std::fs::read(d1.join(STOP_LATENCY_CBOR)).unwrap();
    let problems = |d: &Path| document_problems(d, STOP_LATENCY_CBOR, &key());
    assert!(problems(&d0).is_empty());
    // One byte of the signed payload changed.
    let mut altered = doc0.clone();
    let i = altered.len() - 80;
    altered[i] ^= 1;
    std::fs::write(d0.join(STOP_LATENCY_CBOR), &altered).unwrap();
    let p = problems(&d0);
    assert_eq!(p.len(), 1, "{p:?}");
    // The other call's document: another stream, another root.
    std::fs::write(d0.join(STOP_LATENCY_CBOR), &doc1).unwrap();
    let p = problems(&d0);
    assert!(p.iter().any(|l| l.starts_with("stream_mismatch")), "{p:?}");
    assert!(p.iter().any(|l| l.starts_with("root_mismatch")), "{p:?}");
    std::fs::write(d0.join(STOP_LATENCY_CBOR), &doc0).unwrap();
    // Another key.
    let other = SoftwareSigner::generate().verifying_key();
    assert_eq!(document_problems(&d1, STOP_LATENCY_CBOR, &other).len(), 1);
    // Removed, while window 5 records the barge-in. (A stream without a barge-in needs none:
    // the stream verifier's own tests.)
    std::fs::remove_file(d1.join(STOP_LATENCY_CBOR)).unwrap();
    let p = problems(&d1);
    assert_eq!(p.len(), 1);
    assert!(p[0].starts_with("stop_latency_missing"), "{p:?}");
}

#[tokio::test(start_paused = true)]
async fn the_final_batch_alone_carries_the_document_and_its_message_keeps_it() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut c = SubstrateConfig::new(STEWARD);
    c.checkpoint_every = 5;
    let s = common::paused_substrate(c, Box::new(Collect::new(tx)));
    let h = s.open_stream("call-1").unwrap();
    let (push, yields) = (Latency::default(), Latency::default());
    synthetic_call(&h, 12, true, &push, &yields).await.unwrap();
    h.close().await.unwrap();
    s.shutdown().await.unwrap();
    let mut batches = Vec::new();
    while let Ok(b) = rx.try_recv() {
        batches.push(b);
    }
    assert_eq!(batches.len(), 3);
    for b in &batches[..2] {
        assert!(!b.is_final && b.stop_latency.is_none());
        let d = decode_batch(&encode_batch(b).unwrap()).unwrap();
        assert_eq!(d.stop_latency, None);
    }
    let last = &batches[2];
    assert!(last.is_final);
    let doc = last
        .stop_latency
        .clone()
        .expect("the final batch's document");
    let d = decode_batch(&encode_batch(last).unwrap()).unwrap();
    assert_eq!(d.stop_latency.as_deref(), Some(doc.as_slice()));
    let v = jouleclaw_stop_latency::verify(&doc, &valid_key()).unwrap();
    assert_eq!(v.document.barge_ins[0].stop_latency_ns(), 155_000_000);
}

#[tokio::test(start_paused = true)]
async fn a_barge_in_past_the_meters_bound_is_refused_before_it_is_judged() {
    let mut c = SubstrateConfig::new(STEWARD);
    c.checkpoint_every = 1_000;
    c.spec.max_ticks_per_window = 4_000;
    let t = tempfile::tempdir().unwrap();
    let s = common::paused_substrate(c, Box::new(FileSink::new(t.path()).unwrap()));
    let h = s.open_stream("call-many").unwrap();
    let max = jouleclaw_stop_latency::MAX_BARGE_INS as u64;
    // 4,000 barge-ins a window (the window's tick bound), each window at its start.
    let barge_in = |i: u64| {
        let (w, k) = (i / 4_000, i % 4_000);
        Tick::marker(w, duplex::CONTROL, TickMarker::BargeIn, w * 200_000_000 + k)
    };
    for i in 0..max {
        let start = (i / 4_000) * 200_000_000;
        if start > h.now_ns() {
            tokio::time::sleep(std::time::Duration::from_nanos(start - h.now_ns())).await;
        }
        let r = h.push(barge_in(i));
        assert!(r.is_ok(), "barge-in {i}: {r:?}");
    }
    let e = h.push(barge_in(max)).unwrap_err();
    assert_eq!(e.code(), "stop_latency_refused");
    assert_eq!(h.refused(), 1);
    // Nothing changed: the stream seals, and its document lists every accepted barge-in.
    h.close().await.unwrap();
    s.shutdown().await.unwrap();
    let dir = t.path().join("call-many");
    let bytes = std::fs::read(dir.join(STOP_LATENCY_CBOR)).unwrap();
    let doc = jouleclaw_stop_latency::verify(&bytes, &valid_key())
        .unwrap()
        .document;
    assert_eq!(doc.barge_ins.len() as u64, max);
    assert!(document_problems(&dir, STOP_LATENCY_CBOR, &key()).is_empty());
}

#[tokio::test(start_paused = true)]
async fn the_folder_audit_checks_stop_latency_as_receipts_verify_does() {
    use jouleclaw_live::audit::audit_stream_dir;
    let t = tempfile::tempdir().unwrap();
    two_calls(t.path()).await;
    let dir = t.path().join("call-1");
    let doc = dir.join(STOP_LATENCY_CBOR);
    let good = std::fs::read(&doc).unwrap();
    let problems = |d: &Path| audit_stream_dir(d, &common::valid(&key())).unwrap().lines();
    assert_eq!(problems(&dir), Vec::<String>::new());
    // Altered: two problems, the final seal (stream-seal/2) commits to the document's digest,
    // and its signature no longer verifies.
    common::assert_altered_document_refused(&doc, &good, "stop-latency", || problems(&dir));
    // The other call's.
    std::fs::copy(t.path().join("call-0").join(STOP_LATENCY_CBOR), &doc).unwrap();
    assert!(
        problems(&dir)
            .iter()
            .any(|p| p.starts_with("stream_mismatch"))
    );
    // A symbolic link to the good document: not followed.
    let elsewhere = t.path().join("elsewhere.cbor");
    common::assert_linked_document_refused(&doc, &good, &elsewhere, || problems(&dir));
    // Removed: the final seal commits to it, and the receipts record a barge-in.
    std::fs::remove_file(&doc).unwrap();
    let p = problems(&dir);
    assert!(
        p.len() == 2
            && p[0].starts_with("document_missing")
            && p[1].starts_with("stop_latency_missing"),
        "{p:?}"
    );
    // A folder still `.partial` is unsealed, and not asked for the document again.
    let partial = t.path().join("call-1.partial");
    std::fs::rename(&dir, &partial).unwrap();
    // (Its seals.cbor still holds the final seal, which commits to the removed document.)
    let p = problems(&partial);
    assert!(
        p.len() == 2 && p[0].starts_with("document_missing") && p[1].starts_with("unsealed"),
        "{p:?}"
    );
    // Put back as written: complete again.
    std::fs::rename(&partial, &dir).unwrap();
    std::fs::write(&doc, &good).unwrap();
    assert_eq!(problems(&dir), Vec::<String>::new());
}

/// The JetStream audit's check of a `stream-seal/2` final seal against the document the final
/// batch carries (the stream verifier's, over the read-back): intact, altered after sealing,
/// missing.
#[tokio::test(start_paused = true)]
async fn the_final_seal_commits_to_the_document_the_stream_carries() {
    use jouleclaw_live::audit::audit_nats_stream;
    use jouleclaw_live::jetstream::NatsStream;
    let t = tempfile::tempdir().unwrap();
    two_calls(t.path()).await;
    let dir = t.path().join("call-1");
    let records = common::records_of(&dir);
    let good = std::fs::read(dir.join(STOP_LATENCY_CBOR)).unwrap();
    let interaction = std::fs::read(dir.join(file::INTERACTION_METRICS_CBOR)).unwrap();
    let steward = jouleclaw_seal::verify_checkpoint(records.seals.last().unwrap(), &key())
        .unwrap()
        .seal
        .steward;
    let stream = |stop_latency: Option<&[u8]>| NatsStream {
        subject: "jouleclaw.s.call-1".to_owned(),
        steward: steward.clone(),
        records: records.clone(),
        inclusion: None,
        stop_latency: stop_latency.map(<[u8]>::to_vec),
        interaction_metrics: Some(interaction.clone()),
    };
    assert_eq!(
        audit_nats_stream(&stream(Some(&good)), &common::valid(&key())).lines(),
        Vec::<String>::new()
    );
    // Re-signed with the same key after sealing (a barge-in dropped): another digest.
    let mut doc = jouleclaw_stop_latency::verify(&good, &valid_key())
        .unwrap()
        .document;
    doc.barge_ins.clear();
    let resigned = jouleclaw_stop_latency::sign(
        &jouleclaw_jcr1::cose::SoftwareSigner::rfc8032_test_key(),
        &doc,
    )
    .unwrap()
    .cose_sign1;
    let p = audit_nats_stream(&stream(Some(&resigned)), &common::valid(&key())).lines();
    assert!(
        p.first()
            .is_some_and(|l| l.starts_with("document_digest_mismatch")),
        "{p:?}"
    );
    assert_eq!(
        p.iter().filter(|l| l.starts_with("document_")).count(),
        1,
        "{p:?}"
    );
    let p = audit_nats_stream(&stream(None), &common::valid(&key())).lines();
    assert!(
        p.first().is_some_and(|l| l.starts_with("document_missing")),
        "{p:?}"
    );
}

/// The file sink writes layout `stream-at-rest/2`: no `inclusion.cbor`; the store's verifier
/// derives every window's inclusion receipt from `seals.cbor` and the receipts, and the folder
/// verifies complete. An `inclusion.cbor` placed there is checked (one a line), as in
/// `stream-at-rest/1`; without `seals.cbor` the folder is unsealed.
#[tokio::test(start_paused = true)]
async fn a_file_sink_folder_holds_no_inclusion_receipts_and_verifies_with_derived_ones() {
    use jouleclaw_live::audit::audit_stream_dir;
    use jouleclaw_store::{Completeness, verify_dir};
    let t = tempfile::tempdir().unwrap();
    two_calls(t.path()).await;
    let dir = t.path().join("call-1");
    assert!(!dir.join(file::INCLUSION_CBOR).exists());
    let r = verify_dir(&dir, &common::valid(&key()), &mut |_, _| {}).unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(r.completeness, Completeness::Complete);
    assert!(r.inclusion_derived);
    assert_eq!(r.inclusion_receipts, 12);
    assert_eq!(
        audit_stream_dir(&dir, &common::valid(&key()))
            .unwrap()
            .lines(),
        Vec::<String>::new()
    );
    // The derived receipts, written as a stream-at-rest/1 `inclusion.cbor`, verify as stored
    // ones; one receipt short is refused.
    let records = common::records_of(&dir);
    let derived = common::derived_inclusion(&records, &key());
    std::fs::write(dir.join(file::INCLUSION_CBOR), derived.concat()).unwrap();
    let r = verify_dir(&dir, &common::valid(&key()), &mut |_, _| {}).unwrap();
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert!(!r.inclusion_derived);
    assert_eq!(r.inclusion_receipts, 12);
    std::fs::write(dir.join(file::INCLUSION_CBOR), derived[..11].concat()).unwrap();
    let r = verify_dir(&dir, &common::valid(&key()), &mut |_, _| {}).unwrap();
    assert!(!r.problems.is_empty());
    std::fs::remove_file(dir.join(file::INCLUSION_CBOR)).unwrap();
    // Without seals.cbor nothing is sealed: completeness unknown, the audit says unsealed.
    std::fs::remove_file(dir.join(file::SEALS_CBOR)).unwrap();
    let r = verify_dir(&dir, &common::valid(&key()), &mut |_, _| {}).unwrap();
    assert_eq!(r.completeness, Completeness::Unknown);
    assert!(
        audit_stream_dir(&dir, &common::valid(&key()))
            .unwrap()
            .lines()
            .iter()
            .any(|p| p.starts_with("unsealed"))
    );
}

/// The audit of a folder binds the documents to the receipts' root: the final seal's root only
/// when the folder is complete (the seal then covers exactly these lines), otherwise the root
/// computed over the lines as stored. A line altered in place (it still decodes, the count
/// still matches the seal) leaves the seal's root equal to the documents' own: only the
/// computed root shows that these receipts are not the ones they were made over.
#[tokio::test(start_paused = true)]
async fn a_folder_audit_binds_the_documents_to_the_lines_as_stored() {
    let t = tempfile::tempdir().unwrap();
    two_calls(t.path()).await;
    let dir = t.path().join("call-0");
    let clean = jouleclaw_live::audit::audit_stream_dir(&dir, &common::valid(&key())).unwrap();
    assert_eq!(clean.lines(), Vec::<String>::new());

    let jsonl = dir.join(jouleclaw_live::file::RECEIPTS_JSONL);
    let text = std::fs::read_to_string(&jsonl).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let at = lines[3].find("\"joules_uj\":").unwrap() + "\"joules_uj\":".len();
    let digits = lines[3][at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .count();
    let joules: u64 = lines[3][at..at + digits].parse().unwrap();
    lines[3].replace_range(at..at + digits, &(joules + 1).to_string());
    std::fs::write(&jsonl, lines.join("\n") + "\n").unwrap();

    let audit = jouleclaw_live::audit::audit_stream_dir(&dir, &common::valid(&key())).unwrap();
    let has = |code: &str| audit.lines().iter().any(|p| p.starts_with(code));
    assert!(!audit.lines().is_empty());
    assert!(
        has("root_mismatch"),
        "the stop-latency document bound to the lines as stored: {:?}",
        audit.lines()
    );
    assert!(
        audit.has_problem("root_mismatch: interaction-metrics/1"),
        "the interaction document too: {:?}",
        audit.lines()
    );
}
