//! The stream verifier in its own crate: a sealed stream directory of layout
//! `stream-at-rest/1` (every window signed, `inclusion.cbor`), intact and tampered one file at
//! a time (a line, a window signature, a checkpoint, an inclusion receipt, `summary.json`), and
//! the same stream served from memory through [`StreamSource`], which must give the directory's
//! report exactly; the call's signed documents verified, bound to the receipts and asked for
//! when required.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use jouleclaw_jcr1::cose::{Signer as _, SoftwareSigner, ValidKey, sign_receipt};
use jouleclaw_jcr1::{StreamWindowReceipt, decode_receipt};
use jouleclaw_seal::StreamSealer;
use jouleclaw_stop_latency::StopLatencyDocument;
use jouleclaw_store::layout::{
    INCLUSION_CBOR, INTERACTION_METRICS_CBOR, RECEIPTS_CBOR, RECEIPTS_JSONL, SEALS_CBOR,
    STOP_LATENCY_CBOR, SUMMARY_JSON,
};
use jouleclaw_store::source::{Fetched, StreamSource};
use jouleclaw_store::{
    Completeness, DirReport, MAX_RECEIPTS, Outcome, ReceiptStatus, Result, verify_dir,
    verify_stream,
};

/// A canonical receipt (window 0 of `examples/golden/tool-call.receipts.jsonl`).
const LINE: &[u8] = br#"{"closed_at":"2026-06-05T00:00:00Z","conservation":{"kind":"conforming"},"energy_provenance":"Estimator","id":"stream-demo:0000","inbound_bytes":6400,"jc_receipt":"stream-window/1","joules_uj":180,"outbound_bytes":0,"steward":"did:keri:EJ9testStewardAID000000000000000","stream_id":"stream-demo","tick_count":2,"verdict":{"chain":["always-pass-stream","barge-in-detector","per-tick:utf8-text","structured:04d0f386107113a0"],"kind":"pass"},"window_hash":"97e995c87971d6691105b6eb69a2862ab9dcfa15e1091926f94936396fac5f03","window_id":0}"#;

/// The files of a sealed stream of `n` receipts: every window signed, a checkpoint every 3
/// receipts (the last final), one inclusion receipt per line.
fn sealed_files(n: u64) -> (HashMap<&'static str, Vec<u8>>, ValidKey) {
    sealed_files_yielding(n, None)
}

/// [`sealed_files`], the receipt of window `yields` (if any) recording a barge-in (a `yield`
/// verdict).
fn sealed_files_yielding(
    n: u64,
    yields: Option<u64>,
) -> (HashMap<&'static str, Vec<u8>>, ValidKey) {
    let signer = SoftwareSigner::rfc8032_test_key();
    let base = decode_receipt(LINE).unwrap();
    let yielded = {
        let text = std::str::from_utf8(LINE).unwrap();
        let start = text.find("\"verdict\":").unwrap();
        let end = start + text[start..].find('}').unwrap() + 1;
        let line = format!(
            "{}\"verdict\":{{\"kind\":\"yield\",\"seen_at\":0}}{}",
            &text[..start],
            &text[end..]
        );
        decode_receipt(line.as_bytes()).unwrap()
    };
    let mut sealer = StreamSealer::new(&base.stream_id, &base.steward, MAX_RECEIPTS);
    let (mut jsonl, mut sigs, mut seals, mut inclusion) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for w in 0..n {
        let r = StreamWindowReceipt {
            window_id: w,
            ..if yields == Some(w) {
                yielded.clone()
            } else {
                base.clone()
            }
        };
        let line = r.encode().unwrap();
        sealer
            .append(w, blake3::hash(&line).as_bytes(), r.closed_at)
            .unwrap();
        sigs.extend(sign_receipt(&signer, &r).unwrap().cose_sign1);
        jsonl.extend_from_slice(&line);
        jsonl.push(b'\n');
        if w % 3 == 2 || w + 1 == n {
            let batch = sealer.checkpoint(&signer, w + 1 == n).unwrap();
            seals.extend(batch.checkpoint.cose_sign1);
            for (_, inc) in batch.inclusion {
                inclusion.extend(inc);
            }
        }
    }
    let files = HashMap::from([
        (RECEIPTS_JSONL, jsonl),
        (RECEIPTS_CBOR, sigs),
        (SEALS_CBOR, seals),
        (INCLUSION_CBOR, inclusion),
    ]);
    (files, ValidKey::new(signer.verifying_key()).unwrap())
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("jc-store-verify-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, files: &HashMap<&'static str, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    for (name, bytes) in files {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

fn codes(r: &DirReport) -> Vec<&'static str> {
    r.problems.iter().map(|p| p.code).collect()
}

/// A stream held in memory, served under the layout's names.
struct Memory {
    files: HashMap<&'static str, Vec<u8>>,
    not_regular: Vec<&'static str>,
}

impl StreamSource for Memory {
    type Reader = std::io::Cursor<Vec<u8>>;

    fn fetch(&mut self, name: &'static str) -> Result<Fetched<Self::Reader>> {
        if self.not_regular.contains(&name) {
            return Ok(Fetched::NotRegular("FIFO"));
        }
        Ok(match self.files.get(name) {
            Some(b) => Fetched::Found(std::io::Cursor::new(b.clone())),
            None => Fetched::Missing,
        })
    }

    fn exists(&mut self, name: &'static str) -> Result<bool> {
        Ok(self.files.contains_key(name) || self.not_regular.contains(&name))
    }

    fn place(&self, name: &str) -> PathBuf {
        PathBuf::from("memory").join(name)
    }
}

/// Flips one bit of the byte `back` bytes from the end of `file`.
fn flip(files: &mut HashMap<&'static str, Vec<u8>>, file: &str, back: usize) {
    let b = files.get_mut(file).unwrap();
    let at = b.len() - back;
    b[at] ^= 1;
}

#[test]
fn the_intact_stream_is_complete_and_each_tampered_file_is_named_by_its_code() {
    let dir = scratch("tamper");
    let (files, key) = sealed_files(7);
    write(&dir, &files);
    let intact = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
    assert_eq!(intact.outcome(), Outcome::Complete, "{:?}", intact.problems);
    assert_eq!(
        (
            intact.window_signatures,
            intact.inclusion_receipts,
            intact.checkpoints
        ),
        (7, 7, 3)
    );
    assert!(!intact.inclusion_derived);
    assert!(
        intact
            .receipts
            .iter()
            .all(|r| r.status == ReceiptStatus::Signed)
    );

    // Each case: the file changed, and the code the verifier must name.
    let line_edited = {
        let mut f = files.clone();
        let jsonl = String::from_utf8(f[RECEIPTS_JSONL].clone()).unwrap();
        let edited = jsonl.replacen("\"joules_uj\":180", "\"joules_uj\":181", 1);
        f.insert(RECEIPTS_JSONL, edited.into_bytes());
        f
    };
    let mut signature = files.clone();
    flip(&mut signature, RECEIPTS_CBOR, 1);
    let mut checkpoint = files.clone();
    flip(&mut checkpoint, SEALS_CBOR, 1);
    let mut inclusion = files.clone();
    flip(&mut inclusion, INCLUSION_CBOR, 1);
    let mut summary = files.clone();
    summary.insert(SUMMARY_JSON, b"{}".to_vec());
    let mut no_seals = files.clone();
    no_seals.remove(SEALS_CBOR);
    for (case, tampered, code) in [
        ("a line edited", line_edited, "unmatched_signature"),
        ("a window signature", signature, "refused_signature"),
        ("the final checkpoint", checkpoint, "refused_seal"),
        ("an inclusion receipt", inclusion, "refused_inclusion"),
        ("summary.json", summary, "summary_malformed"),
        ("seals.cbor removed", no_seals, "missing_file"),
    ] {
        write(&dir, &tampered);
        let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
        assert!(codes(&r).contains(&code), "{case}: {:?}", codes(&r));
        assert_eq!(r.outcome(), Outcome::Failed, "{case}");
    }

    // Unsealed: the seals and inclusion receipts removed, every line still signed.
    let mut unsealed = files.clone();
    unsealed.remove(SEALS_CBOR);
    unsealed.remove(INCLUSION_CBOR);
    write(&dir, &unsealed);
    let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
    assert_eq!(r.outcome(), Outcome::Unsealed, "{:?}", r.problems);
    assert_eq!(r.verified(), 7);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The verifier over a source is the verifier over a directory: the same stream served from
/// memory gives the directory's report, intact and tampered; what the source says is not a
/// regular file is `not_regular_file`, never read.
#[test]
fn a_stream_served_from_memory_gets_the_directory_report_exactly() {
    let dir = scratch("memory");
    let (files, key) = sealed_files(5);
    let mut edited = files.clone();
    flip(&mut edited, RECEIPTS_CBOR, 1);
    flip(&mut edited, INCLUSION_CBOR, 1);
    for (case, f) in [("intact", files.clone()), ("tampered", edited)] {
        write(&dir, &f);
        let (mut from_dir, mut from_memory) = (Vec::new(), Vec::new());
        let on_disk = verify_dir(&dir, &key, &mut |i, r| from_dir.push((i, r.window_id))).unwrap();
        let mut memory = Memory {
            files: f,
            not_regular: Vec::new(),
        };
        let in_memory = verify_stream(&mut memory, &key, &mut |i, r| {
            from_memory.push((i, r.window_id))
        })
        .unwrap();
        assert_eq!(on_disk, in_memory, "{case}");
        assert_eq!(from_dir, from_memory, "{case}");
        assert_eq!(from_dir.len(), 5, "{case}");
    }
    let mut fifo = Memory {
        files: files.clone(),
        not_regular: vec![INCLUSION_CBOR],
    };
    fifo.files.remove(INCLUSION_CBOR);
    let r = verify_stream(&mut fifo, &key, &mut |_, _| {}).unwrap();
    assert!(
        r.problems
            .iter()
            .any(|p| p.code == "not_regular_file" && p.file == INCLUSION_CBOR),
        "{:?}",
        codes(&r)
    );
    assert_eq!(r.inclusion_receipts, 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The content hash of every line of `receipts.jsonl`.
fn line_hashes(files: &HashMap<&'static str, Vec<u8>>) -> Vec<[u8; 32]> {
    files[RECEIPTS_JSONL]
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| *blake3::hash(l).as_bytes())
        .collect()
}

/// A `stop-latency/1` document without barge-ins over `hashes`, signed with the test key.
fn stop_latency(stream_id: &str, hashes: &[[u8; 32]]) -> Vec<u8> {
    let base = decode_receipt(LINE).unwrap();
    let doc = StopLatencyDocument::new(&base.steward, stream_id, &[], hashes).unwrap();
    jouleclaw_stop_latency::sign(&SoftwareSigner::rfc8032_test_key(), &doc)
        .unwrap()
        .cose_sign1
}

fn document_codes(r: &DirReport) -> Vec<(&'static str, &'static str)> {
    r.document_problems
        .iter()
        .map(|p| (p.file, p.code))
        .collect()
}

/// `stop-latency.cbor` is verified under the key and bound to the receipts: the document over
/// these receipts is accepted (its root the final seal's, and, unsealed, the one computed from
/// the lines) and carried in the report; one byte changed, it does not verify; over other
/// receipts (one fewer) it is bound to another root. Each finding names the file and its code,
/// makes the outcome failed and leaves the receipts' outcome and completeness alone.
#[test]
fn a_signed_document_is_verified_and_bound_to_the_receipts() {
    let dir = scratch("document");
    let (mut files, key) = sealed_files(7);
    let hashes = line_hashes(&files);
    files.insert(STOP_LATENCY_CBOR, stop_latency("stream-demo", &hashes));
    write(&dir, &files);
    let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
    assert_eq!(document_codes(&r), [], "{:?}", r.document_problems);
    assert_eq!(r.outcome(), Outcome::Complete, "{:?}", r.problems);
    let doc = r.stop_latency.as_ref().unwrap();
    assert_eq!(
        (doc.stream_id.as_str(), doc.window_count),
        ("stream-demo", 7)
    );
    assert_eq!(r.interaction, None);

    // Unsealed: the root is computed from the lines, and the document is bound all the same.
    let mut unsealed = files.clone();
    unsealed.remove(SEALS_CBOR);
    unsealed.remove(INCLUSION_CBOR);
    write(&dir, &unsealed);
    let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
    assert_eq!(document_codes(&r), [], "{:?}", r.document_problems);
    assert_eq!(r.outcome(), Outcome::Unsealed, "{:?}", r.problems);
    assert!(r.stop_latency.is_some());

    // One byte of the signed document changed: it does not verify (the verifier's own code).
    let mut altered = files.clone();
    flip(&mut altered, STOP_LATENCY_CBOR, 3);
    write(&dir, &altered);
    let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
    let found = document_codes(&r);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, STOP_LATENCY_CBOR);
    assert!(
        !jouleclaw_stop_latency::BINDING_CODES.contains(&found[0].1),
        "{found:?}"
    );
    assert_eq!(r.stop_latency, None);
    assert_eq!(r.outcome(), Outcome::Failed);
    assert_eq!(r.receipts_outcome(), Outcome::Complete, "{:?}", r.problems);
    assert_eq!(r.completeness, Completeness::Complete);
    // Under another key it does not verify either (its kid is not that key's).
    write(&dir, &files);
    let other = ValidKey::new(SoftwareSigner::generate().verifying_key()).unwrap();
    let r = verify_dir(&dir, &other, &mut |_, _| {}).unwrap();
    assert_eq!(
        document_codes(&r),
        [(STOP_LATENCY_CBOR, "cose_unknown_kid")],
        "{:?}",
        r.document_problems
    );

    // Signed over other receipts (the first six): another count and another root.
    let mut other_receipts = files.clone();
    other_receipts.insert(STOP_LATENCY_CBOR, stop_latency("stream-demo", &hashes[..6]));
    write(&dir, &other_receipts);
    let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
    let found = document_codes(&r);
    assert!(
        found.contains(&(STOP_LATENCY_CBOR, "root_mismatch"))
            && found.contains(&(STOP_LATENCY_CBOR, "window_count_mismatch")),
        "{found:?}"
    );
    assert!(r.stop_latency.is_some(), "verified, but not bound");
    assert_eq!(r.outcome(), Outcome::Failed);
    assert_eq!(r.receipts_outcome(), Outcome::Complete);
    // The receipts' root is checked, not the count alone: the same count, another stream's
    // root (a receipt of the stream changed before signing).
    let mut shifted = hashes.clone();
    shifted[0][0] ^= 1;
    other_receipts.insert(STOP_LATENCY_CBOR, stop_latency("stream-demo", &shifted));
    write(&dir, &other_receipts);
    let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
    assert_eq!(
        document_codes(&r),
        [(STOP_LATENCY_CBOR, "root_mismatch")],
        "{:?}",
        r.document_problems
    );
    let message = &r.document_problems[0].message;
    assert!(
        message.contains("is not the root over the 7 receipts"),
        "{message}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A missing `stop-latency.cbor` is named when a receipt records a barge-in, and not when none
/// does; a `summary.json` that lists a document that is not there asks for it too (each
/// kind). The documents are not asked for otherwise.
#[test]
fn a_missing_document_is_named_when_a_receipt_yields_or_the_summary_lists_it() {
    let dir = scratch("missing-document");
    let (files, key) = sealed_files_yielding(7, Some(4));
    write(&dir, &files);
    let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
    assert_eq!(
        document_codes(&r),
        [(STOP_LATENCY_CBOR, "stop_latency_missing")],
        "{:?}",
        r.document_problems
    );
    assert!(r.document_problems[0].message.contains("window 4"));
    assert_eq!(r.outcome(), Outcome::Failed);
    assert_eq!(r.receipts_outcome(), Outcome::Complete, "{:?}", r.problems);
    // The accepted neighbour: no receipt yields, no document needed.
    let (quiet, _) = sealed_files(7);
    write(&dir, &quiet);
    let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
    assert_eq!(document_codes(&r), []);
    assert_eq!(r.outcome(), Outcome::Complete, "{:?}", r.problems);
    // A summary that lists both documents (even one that is otherwise not a run summary).
    let mut listed = quiet.clone();
    listed.insert(
        SUMMARY_JSON,
        format!(r#"{{"outputs":{{"{STOP_LATENCY_CBOR}":"x","{INTERACTION_METRICS_CBOR}":"y"}}}}"#)
            .into_bytes(),
    );
    write(&dir, &listed);
    let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
    assert_eq!(
        document_codes(&r),
        [
            (STOP_LATENCY_CBOR, "stop_latency_missing"),
            (INTERACTION_METRICS_CBOR, "interaction_metrics_missing")
        ],
        "{:?}",
        r.document_problems
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A document in a place that is not a regular file is named, never read; the same stream
/// served from memory gets the same findings.
#[test]
fn a_document_that_is_not_a_regular_file_is_named_and_not_read() {
    let (files, key) = sealed_files(4);
    let mut src = Memory {
        files: files.clone(),
        not_regular: vec![INTERACTION_METRICS_CBOR],
    };
    let r = verify_stream(&mut src, &key, &mut |_, _| {}).unwrap();
    assert_eq!(
        document_codes(&r),
        [(INTERACTION_METRICS_CBOR, "not_regular_file")]
    );
    assert_eq!(r.interaction, None);
    let mut src = Memory {
        files,
        not_regular: Vec::new(),
    };
    let r = verify_stream(&mut src, &key, &mut |_, _| {}).unwrap();
    assert_eq!(document_codes(&r), []);
}

/// The signed documents' findings are bounded as the receipts' problems are: at most
/// [`MAX_NAMED_PROBLEMS`] named per document file, every one counted. Here unsigned lines (no
/// key needed to write them) each record a barge-in the call's real, signed `stop-latency.cbor`
/// does not list: one `yield_unlisted` per line, which were all named (a 20 MB message list
/// and report page for 200,000 lines).
#[test]
fn a_documents_findings_are_named_up_to_the_bound_and_every_one_counted() {
    use jouleclaw_store::MAX_NAMED_PROBLEMS;
    let dir = scratch("document-flood");
    let yielded = {
        let text = std::str::from_utf8(LINE).unwrap();
        let start = text.find("\"verdict\":").unwrap();
        let end = start + text[start..].find('}').unwrap() + 1;
        let line = format!(
            "{}\"verdict\":{{\"kind\":\"yield\",\"seen_at\":0}}{}",
            &text[..start],
            &text[end..]
        );
        decode_receipt(line.as_bytes()).unwrap()
    };
    let stream = |n: u64| {
        let mut jsonl = Vec::new();
        let mut hashes = Vec::new();
        for w in 0..n {
            let r = StreamWindowReceipt {
                window_id: w,
                ..yielded.clone()
            };
            let line = r.encode().unwrap();
            hashes.push(*blake3::hash(&line).as_bytes());
            jsonl.extend_from_slice(&line);
            jsonl.push(b'\n');
        }
        HashMap::from([
            (RECEIPTS_JSONL, jsonl),
            (RECEIPTS_CBOR, Vec::new()),
            (STOP_LATENCY_CBOR, stop_latency("stream-demo", &hashes)),
        ])
    };
    let key = ValidKey::new(SoftwareSigner::rfc8032_test_key().verifying_key()).unwrap();
    let n = 3 * MAX_NAMED_PROBLEMS as u64;
    write(&dir, &stream(n));
    let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
    let named = r.document_problems_of(STOP_LATENCY_CBOR).count();
    assert_eq!(named, MAX_NAMED_PROBLEMS);
    assert!(
        r.document_problems
            .iter()
            .all(|p| p.code == "yield_unlisted"),
        "{:?}",
        &r.document_problems[..3]
    );
    assert_eq!(r.document_problem_count_of(STOP_LATENCY_CBOR), n);
    assert_eq!(r.document_problem_count_of(INTERACTION_METRICS_CBOR), 0);
    assert_eq!(r.document_problem_count(), n);
    assert_eq!(r.outcome(), Outcome::Failed);
    // The accepted neighbour: fewer findings than the bound are every one named and counted.
    write(&dir, &stream(7));
    let r = verify_dir(&dir, &key, &mut |_, _| {}).unwrap();
    assert_eq!(r.document_problems_of(STOP_LATENCY_CBOR).count(), 7);
    assert_eq!(r.document_problem_count_of(STOP_LATENCY_CBOR), 7);
    assert_eq!(r.document_problem_count(), 7);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A source that serves one file's bytes at its first fetch and other bytes at every later
/// one (a file replaced while the verifier reads the directory).
struct Swapping {
    inner: Memory,
    file: &'static str,
    later: Vec<u8>,
    fetched: u32,
}

impl StreamSource for Swapping {
    type Reader = std::io::Cursor<Vec<u8>>;

    fn fetch(&mut self, name: &'static str) -> Result<Fetched<Self::Reader>> {
        if name == self.file {
            self.fetched += 1;
            if self.fetched > 1 {
                return Ok(Fetched::Found(std::io::Cursor::new(self.later.clone())));
            }
        }
        self.inner.fetch(name)
    }

    fn exists(&mut self, name: &'static str) -> Result<bool> {
        self.inner.exists(name)
    }

    fn place(&self, name: &str) -> PathBuf {
        self.inner.place(name)
    }
}

/// A document a `stream-seal/2` final seal commits to is read once: the bytes whose digest is
/// checked against the seal are the bytes verified and bound. Read twice, a document replaced
/// between the reads by another one the steward signed over the same receipts (here a
/// `stop-latency/2` one) was reported as the sealed document, with no problem at all.
#[test]
fn a_sealed_document_is_read_once_and_the_bytes_checked_against_the_seal_are_the_ones_verified() {
    use jouleclaw_stop_latency::{Vantage, VantagePoint};
    let signer = SoftwareSigner::rfc8032_test_key();
    let key = ValidKey::new(signer.verifying_key()).unwrap();
    let base = decode_receipt(LINE).unwrap();
    let mut sealer = StreamSealer::new(&base.stream_id, &base.steward, MAX_RECEIPTS);
    let (mut jsonl, mut sigs, mut hashes) = (Vec::new(), Vec::new(), Vec::new());
    for w in 0..4 {
        let r = StreamWindowReceipt {
            window_id: w,
            ..base.clone()
        };
        let line = r.encode().unwrap();
        let hash = *blake3::hash(&line).as_bytes();
        sealer.append(w, &hash, r.closed_at).unwrap();
        hashes.push(hash);
        sigs.extend(sign_receipt(&signer, &r).unwrap().cose_sign1);
        jsonl.extend_from_slice(&line);
        jsonl.push(b'\n');
    }
    let sealed_doc =
        StopLatencyDocument::new(&base.steward, &base.stream_id, &[], &hashes).unwrap();
    let sealed = jouleclaw_stop_latency::sign(&signer, &sealed_doc)
        .unwrap()
        .cose_sign1;
    let other_doc = StopLatencyDocument {
        vantage: Some(Vantage {
            point: VantagePoint::Played,
            excluded_buffer_ns: None,
        }),
        ..sealed_doc.clone()
    };
    let other = jouleclaw_stop_latency::sign(&signer, &other_doc)
        .unwrap()
        .cose_sign1;
    let seal = sealer
        .finish_with_documents(
            &signer,
            std::collections::BTreeMap::from([(
                sealed_doc.schema_id().to_owned(),
                jouleclaw_seal::document_digest(&sealed),
            )]),
        )
        .unwrap();
    let files = HashMap::from([
        (RECEIPTS_JSONL, jsonl),
        (RECEIPTS_CBOR, sigs),
        (SEALS_CBOR, seal.checkpoint.cose_sign1),
        (STOP_LATENCY_CBOR, sealed),
    ]);
    let memory = || Memory {
        files: files.clone(),
        not_regular: Vec::new(),
    };
    // As stored: complete, the document sealed, verified and bound.
    let r = verify_stream(&mut memory(), &key, &mut |_, _| {}).unwrap();
    assert_eq!(r.outcome(), Outcome::Complete, "{:?}", r.problems);
    assert_eq!(r.stop_latency.as_ref(), Some(&sealed_doc));
    // Replaced after its first read: what is reported is what the seal's digest was checked
    // against.
    let mut src = Swapping {
        inner: memory(),
        file: STOP_LATENCY_CBOR,
        later: other,
        fetched: 0,
    };
    let r = verify_stream(&mut src, &key, &mut |_, _| {}).unwrap();
    assert_eq!(
        src.fetched, 1,
        "stop-latency.cbor fetched {} times",
        src.fetched
    );
    assert_eq!(r.stop_latency.as_ref(), Some(&sealed_doc));
    assert_eq!(r.outcome(), Outcome::Complete, "{:?}", r.document_problems);
}

/// A receipt's `barge_in_ignored` finding is checked against the document's first barge-in at
/// that time (the document looked up once per receipt, not scanned per receipt: 20,000 such
/// receipts beside 16,384 barge-ins took 1.7 s of comparisons in a debug build, 31 ms looked
/// up): the first one agrees, the document is bound; the first one contradicts it,
/// `finding_contradicted`.
#[test]
fn a_barge_in_ignored_finding_is_checked_against_the_documents_first_barge_in_at_that_time() {
    use jouleclaw_stop_latency::{BargeIn, EndedBy};
    let text = std::str::from_utf8(LINE).unwrap();
    let line = text
        .replace(
            r#""conservation":{"kind":"conforming"}"#,
            r#""conservation":{"barge_in_ts_ns":1000000000,"kind":"barge_in_ignored","outbound_ts_ns":1200000000}"#,
        )
        .replace(
            r#""verdict":{"chain":["always-pass-stream","barge-in-detector","per-tick:utf8-text","structured:04d0f386107113a0"],"kind":"pass"}"#,
            r#""verdict":{"kind":"fail","oracle":"barge-in-detector","reason":"late"}"#,
        );
    let receipt = decode_receipt(line.as_bytes()).unwrap();
    let line = receipt.encode().unwrap();
    let hash = *blake3::hash(&line).as_bytes();
    let agrees = BargeIn {
        window_id: 0,
        barge_in_ts_ns: 1_000_000_000,
        last_audio_ts_ns: Some(1_300_000_000),
        audio_bytes: 10,
        late_audio_bytes: 10,
        ended_by: EndedBy::StreamEnd,
        end_ts_ns: None,
    };
    // Its audio ended before the deadline, before the receipt's late outbound.
    let contradicts = BargeIn {
        last_audio_ts_ns: Some(1_100_000_000),
        late_audio_bytes: 0,
        ..agrees
    };
    let key = ValidKey::new(SoftwareSigner::rfc8032_test_key().verifying_key()).unwrap();
    let found = |barge_ins: &[BargeIn]| {
        let doc =
            StopLatencyDocument::new(&receipt.steward, &receipt.stream_id, barge_ins, &[hash])
                .unwrap();
        let signed = jouleclaw_stop_latency::sign(&SoftwareSigner::rfc8032_test_key(), &doc)
            .unwrap()
            .cose_sign1;
        let mut jsonl = line.clone();
        jsonl.push(b'\n');
        let mut src = Memory {
            files: HashMap::from([
                (RECEIPTS_JSONL, jsonl),
                (RECEIPTS_CBOR, Vec::new()),
                (STOP_LATENCY_CBOR, signed),
            ]),
            not_regular: Vec::new(),
        };
        let r = verify_stream(&mut src, &key, &mut |_, _| {}).unwrap();
        document_codes(&r)
    };
    assert_eq!(found(&[agrees]), []);
    assert_eq!(
        found(&[contradicts]),
        [(STOP_LATENCY_CBOR, "finding_contradicted")]
    );
    assert_eq!(found(&[agrees, contradicts]), []);
    assert_eq!(
        found(&[contradicts, agrees]),
        [(STOP_LATENCY_CBOR, "finding_contradicted")]
    );
}

/// `summary.json` is read once: whether it lists a missing document is what its one read
/// says (here the summary as first served lists `interaction-metrics.cbor`, which is not
/// there; served again it lists nothing).
#[test]
fn the_summary_is_read_once_for_its_checks_and_the_documents_it_lists() {
    let (mut files, key) = sealed_files(4);
    files.insert(
        SUMMARY_JSON,
        format!(r#"{{"outputs":{{"{INTERACTION_METRICS_CBOR}":"y"}}}}"#).into_bytes(),
    );
    let mut src = Swapping {
        inner: Memory {
            files,
            not_regular: Vec::new(),
        },
        file: SUMMARY_JSON,
        later: br#"{"outputs":{}}"#.to_vec(),
        fetched: 0,
    };
    let r = verify_stream(&mut src, &key, &mut |_, _| {}).unwrap();
    assert_eq!(src.fetched, 1, "summary.json fetched {} times", src.fetched);
    assert_eq!(
        document_codes(&r),
        [(INTERACTION_METRICS_CBOR, "interaction_metrics_missing")]
    );
}

/// The verifier binds a document to what it keeps of each line (its facts and the stream's
/// identity, not the decoded receipts) and finds exactly what the binding over the decoded
/// receipts finds, message for message: here a stream whose fifth receipt is of another
/// stream (and sixth of another steward: still the fifth is named), a yield the document does
/// not list and a `barge_in_ignored` finding the document's barge-in contradicts.
#[test]
fn the_binding_over_the_kept_facts_finds_what_the_binding_over_the_receipts_finds() {
    use jouleclaw_stop_latency::{BargeIn, EndedBy};
    let text = std::str::from_utf8(LINE).unwrap();
    let pass = r#""verdict":{"chain":["always-pass-stream","barge-in-detector","per-tick:utf8-text","structured:04d0f386107113a0"],"kind":"pass"}"#;
    let with = |verdict: &str, conservation: Option<&str>| {
        let mut t = text.replace(pass, verdict);
        if let Some(c) = conservation {
            t = t.replace(r#""conservation":{"kind":"conforming"}"#, c);
        }
        decode_receipt(t.as_bytes()).unwrap()
    };
    let base = decode_receipt(LINE).unwrap();
    let ignored = with(
        r#""verdict":{"kind":"fail","oracle":"barge-in-detector","reason":"late"}"#,
        Some(
            r#""conservation":{"barge_in_ts_ns":1000000000,"kind":"barge_in_ignored","outbound_ts_ns":1200000000}"#,
        ),
    );
    let receipts: Vec<StreamWindowReceipt> = vec![
        base.clone(),
        with(r#""verdict":{"kind":"yield","seen_at":1}"#, None),
        with(r#""verdict":{"kind":"yield","seen_at":2}"#, None),
        ignored,
        StreamWindowReceipt {
            stream_id: "stream-other".to_owned(),
            ..base.clone()
        },
        StreamWindowReceipt {
            steward: "did:example:another".to_owned(),
            ..base.clone()
        },
    ]
    .into_iter()
    .enumerate()
    .map(|(w, r)| StreamWindowReceipt {
        window_id: w as u64,
        ..r
    })
    .collect();
    let mut jsonl = Vec::new();
    let mut with_hashes = Vec::new();
    for r in &receipts {
        let line = r.encode().unwrap();
        with_hashes.push((r.clone(), *blake3::hash(&line).as_bytes()));
        jsonl.extend_from_slice(&line);
        jsonl.push(b'\n');
    }
    let hashes: Vec<[u8; 32]> = with_hashes.iter().map(|(_, h)| *h).collect();
    // Listed in window 1 (its yield), the barge-in's audio ended before window 3's late
    // outbound: that finding is contradicted.
    let barge_in = BargeIn {
        window_id: 1,
        barge_in_ts_ns: 1_000_000_000,
        last_audio_ts_ns: Some(1_100_000_000),
        audio_bytes: 10,
        late_audio_bytes: 0,
        ended_by: EndedBy::StreamEnd,
        end_ts_ns: None,
    };
    let doc = StopLatencyDocument::new(&base.steward, "stream-demo", &[barge_in], &hashes).unwrap();
    let signed = jouleclaw_stop_latency::sign(&SoftwareSigner::rfc8032_test_key(), &doc)
        .unwrap()
        .cose_sign1;
    let key = ValidKey::new(SoftwareSigner::rfc8032_test_key().verifying_key()).unwrap();
    let mut src = Memory {
        files: HashMap::from([
            (RECEIPTS_JSONL, jsonl),
            (RECEIPTS_CBOR, Vec::new()),
            (STOP_LATENCY_CBOR, signed),
        ]),
        not_regular: Vec::new(),
    };
    let r = verify_stream(&mut src, &key, &mut |_, _| {}).unwrap();
    let kept: Vec<(&str, String)> = r
        .document_problems
        .iter()
        .map(|p| (p.code, p.message.clone()))
        .collect();
    let full: Vec<(&str, String)> = jouleclaw_stop_latency::check_receipts(&doc, &with_hashes)
        .into_iter()
        .map(|p| (p.code, p.detail))
        .collect();
    assert_eq!(kept, full);
    assert_eq!(
        kept.iter().map(|(c, _)| *c).collect::<Vec<_>>(),
        ["stream_mismatch", "yield_unlisted", "finding_contradicted"]
    );
    assert!(
        kept[0].1.contains("receipt stream-other:0004 is not"),
        "{}",
        kept[0].1
    );
    assert!(kept[1].1.starts_with("window 2 "), "{}", kept[1].1);
    assert!(kept[2].1.starts_with("receipt 3 "), "{}", kept[2].1);
    // The accepted neighbour: the same document over the first two receipts alone (its own
    // root and count) is bound.
    let first_two = &with_hashes[..2];
    let hashes: Vec<[u8; 32]> = first_two.iter().map(|(_, h)| *h).collect();
    let doc = StopLatencyDocument::new(&base.steward, "stream-demo", &[barge_in], &hashes).unwrap();
    let signed = jouleclaw_stop_latency::sign(&SoftwareSigner::rfc8032_test_key(), &doc)
        .unwrap()
        .cose_sign1;
    let mut jsonl = Vec::new();
    for (r, _) in first_two {
        jsonl.extend(r.encode().unwrap());
        jsonl.push(b'\n');
    }
    let mut src = Memory {
        files: HashMap::from([
            (RECEIPTS_JSONL, jsonl),
            (RECEIPTS_CBOR, Vec::new()),
            (STOP_LATENCY_CBOR, signed),
        ]),
        not_regular: Vec::new(),
    };
    let r = verify_stream(&mut src, &key, &mut |_, _| {}).unwrap();
    assert_eq!(document_codes(&r), []);
    assert!(jouleclaw_stop_latency::check_receipts(&doc, first_two).is_empty());
}
