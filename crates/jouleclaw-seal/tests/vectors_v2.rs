//! The generator of `conformance/stream-seal-2-vectors.json` (final seals that commit to the
//! call's documents, `spec/STREAM-SEAL.md` section 3.2) and
//! `conformance/stream-seal-2.schema.json`, the stale-file tests, and a replay of every vector
//! through the public API. `JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-seal --test
//! vectors_v2` rewrites both files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use jouleclaw_jcr1::UtcSecond;
use jouleclaw_jcr1::cose::{Signer, SoftwareSigner, kid};
use jouleclaw_seal::*;
use serde_json::{Value, json};

const VECTORS: &str = "stream-seal-2-vectors.json";
const SCHEMA: &str = "stream-seal-2.schema.json";

fn closed_at(window_id: u64) -> UtcSecond {
    UtcSecond::from_unix(1_780_617_600 + (window_id / 5) as i64).unwrap()
}

/// Stand-ins for two documents' COSE_Sign1 bytes: the seal commits to any bytes by digest.
fn document_bytes(kind: &str) -> Vec<u8> {
    format!("jouleclaw stream-seal/2 vector document {kind}").into_bytes()
}

/// Windows 0..5, a checkpoint after 3 (stream-seal/1), the final one after 5 (stream-seal/2).
fn sealed(signer: &SoftwareSigner, documents: SealedDocuments) -> Vec<SealBatch> {
    let mut sealer = StreamSealer::new(STREAM_ID, STEWARD, 1 << 10);
    let mut out = Vec::new();
    for w in 0..5u64 {
        sealer.append(w, &entry(w), closed_at(w)).unwrap();
        if w == 2 {
            out.push(sealer.checkpoint(signer, false).unwrap());
        }
    }
    out.push(sealer.finish_with_documents(signer, documents).unwrap());
    out
}

fn two_documents() -> SealedDocuments {
    ["interaction-metrics/1", "stop-latency/1"]
        .into_iter()
        .map(|k| (k.to_owned(), document_digest(&document_bytes(k))))
        .collect()
}

fn build_vectors() -> Value {
    let signer = SoftwareSigner::rfc8032_test_key();
    let key = signer.verifying_key();
    let mut streams = Vec::new();
    for (desc, docs) in [
        ("final seal committing to two documents", two_documents()),
        (
            "final seal stating the call has no document",
            SealedDocuments::new(),
        ),
    ] {
        let batches = sealed(&signer, docs.clone());
        let last = batches.last().unwrap();
        assert!(verify_checkpoint(&last.checkpoint.cose_sign1, &key).is_ok());
        streams.push(json!({
            "description": desc,
            "windows": (0..5u64).map(|w| json!({"window_id": w, "entry_hex": hex::encode(entry(w))})).collect::<Vec<_>>(),
            "documents": docs.keys().map(|k| json!({"kind": k, "cose_sign1_hex": hex::encode(document_bytes(k)), "digest_hex": hex::encode(document_digest(&document_bytes(k)))})).collect::<Vec<_>>(),
            "checkpoints": batches.iter().map(|b| json!({
                "seal_json": String::from_utf8(b.checkpoint.seal_json.clone()).unwrap(),
                "cose_sign1_hex": hex::encode(&b.checkpoint.cose_sign1),
            })).collect::<Vec<_>>(),
        }));
    }

    // Negative seal documents, each an edit of the two-document final seal.
    let good = sealed(&signer, two_documents())
        .pop()
        .unwrap()
        .checkpoint
        .seal_json;
    let good_s = String::from_utf8(good).unwrap();
    let d_sl = hex::encode(document_digest(&document_bytes("stop-latency/1")));
    let rep = |from: &str, to: &str| {
        assert!(good_s.contains(from), "{from}");
        good_s.replacen(from, to, 1).into_bytes()
    };
    let case = |desc: &str, bytes: Vec<u8>| {
        let code = decode_seal(&bytes).unwrap_err().code;
        json!({ "kind": "seal_json", "description": desc, "input_hex": hex::encode(&bytes), "expect": code.as_str() })
    };
    let many: String = (0..17)
        .map(|i| format!("\"k{i:02}/1\":\"{d_sl}\""))
        .collect::<Vec<_>>()
        .join(",");
    let docs_start = good_s.find("\"documents\":{").unwrap();
    let docs_end = docs_start + good_s[docs_start..].find('}').unwrap() + 1;
    let docs_text = &good_s[docs_start..docs_end];
    let negative = vec![
        case(
            "documents on a seal that is not final",
            rep("\"final\":true", "\"final\":false"),
        ),
        case(
            "documents in a stream-seal/1 seal",
            rep("stream-seal/2", "stream-seal/1"),
        ),
        case(
            "stream-seal/2 without documents",
            rep(&format!("{docs_text},"), ""),
        ),
        case(
            "schema stream-seal/3",
            rep("stream-seal/2", "stream-seal/3"),
        ),
        case("documents null", rep(docs_text, "\"documents\":null")),
        case(
            "documents an array",
            rep(docs_text, &format!("\"documents\":[\"{d_sl}\"]")),
        ),
        case(
            "a kind with an uppercase letter",
            rep("\"stop-latency/1\"", "\"stop-Latency/1\""),
        ),
        case(
            "a kind without a version",
            rep("\"stop-latency/1\"", "\"stop-latency\""),
        ),
        case(
            "a kind whose version has a leading zero",
            rep("\"stop-latency/1\"", "\"stop-latency/01\""),
        ),
        case(
            "a digest in uppercase hex",
            rep(&d_sl, &d_sl.to_uppercase()),
        ),
        case("a digest of 63 digits", rep(&d_sl, &d_sl[..63])),
        case("a digest as a number", rep(&format!("\"{d_sl}\""), "1")),
        case(
            "17 documents",
            rep(docs_text, &format!("\"documents\":{{{many}}}")),
        ),
    ];

    json!({
        "_comment": "stream-seal/2 conformance vectors (spec/STREAM-SEAL.md section 3.2). Owned by jouleclaw-rs; generated by crates/jouleclaw-seal/tests/vectors_v2.rs (JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-seal --test vectors_v2). A final seal under stream-seal/2 is a stream-seal/1 document plus `documents`: each signed document of the call by kind, with the SHA-256 of its COSE_Sign1 bytes as stored. Leaves: entry(i) = BLAKE3(UTF-8 'jouleclaw stream-seal vector leaf ' + decimal i); the documents' bytes are stand-ins (any bytes: the seal commits to them by digest). Signed with the RFC 8032 section 7.1 TEST 1 key. expect codes are the Rust implementation's; other verifiers must refuse the same inputs but need not give the same code.",
        "key": {
            "public_key_hex": hex::encode(key.as_bytes()),
            "kid_hex": hex::encode(kid(&key)),
        },
        "stream_id": STREAM_ID,
        "steward": STEWARD,
        "streams": streams,
        "negative": negative,
    })
}

#[test]
fn the_vector_file_is_what_the_generator_builds() {
    check_generated(VECTORS, &pretty(&build_vectors()), "vectors_v2");
}

#[test]
fn the_json_schema_file_is_what_the_schema_object_generates() {
    check_generated(
        SCHEMA,
        &pretty(&jouleclaw_seal::seal::json_schema_v2()),
        "vectors_v2",
    );
}

#[test]
fn every_vector_replays_through_the_public_api() {
    let v = build_vectors();
    let key = SoftwareSigner::rfc8032_test_key().verifying_key();
    for s in v["streams"].as_array().unwrap() {
        let cps = s["checkpoints"].as_array().unwrap();
        let last = hex::decode(cps.last().unwrap()["cose_sign1_hex"].as_str().unwrap()).unwrap();
        let cp = verify_checkpoint(&last, &key).unwrap();
        let docs = cp.seal.documents.clone().unwrap();
        assert_eq!(docs.len(), s["documents"].as_array().unwrap().len());
        for d in s["documents"].as_array().unwrap() {
            let bytes = hex::decode(d["cose_sign1_hex"].as_str().unwrap()).unwrap();
            assert_eq!(docs[d["kind"].as_str().unwrap()], document_digest(&bytes));
        }
        // The checkpoint before it is a stream-seal/1 seal, byte for byte as before.
        let first = hex::decode(cps[0]["cose_sign1_hex"].as_str().unwrap()).unwrap();
        let cp0 = verify_checkpoint(&first, &key).unwrap();
        assert!(cp0.seal.documents.is_none());
        assert!(
            cps[0]["seal_json"]
                .as_str()
                .unwrap()
                .contains("\"stream-seal/1\"")
        );
    }
    for n in v["negative"].as_array().unwrap() {
        let bytes = hex::decode(n["input_hex"].as_str().unwrap()).unwrap();
        let code = decode_seal(&bytes).unwrap_err().code;
        assert_eq!(code.as_str(), n["expect"], "{}", n["description"]);
        // Whole, split anywhere, byte by byte: the same answer.
        for at in 0..=bytes.len() {
            let mut d = SealDecoder::new();
            let r = d.push(&bytes[..at]).or_else(|| d.push(&bytes[at..]));
            let r = match r {
                Some(r) => r,
                None => d.finish().unwrap_err(),
            };
            assert_eq!(r.code, code, "{} split at {at}", n["description"]);
        }
    }
}

#[test]
fn a_final_seal_commits_to_exactly_the_documents_it_names() {
    let signer = SoftwareSigner::rfc8032_test_key();
    let key = signer.verifying_key();
    let docs = two_documents();
    let last = sealed(&signer, docs.clone()).pop().unwrap();
    let cp = verify_checkpoint(&last.checkpoint.cose_sign1, &key).unwrap();
    assert_eq!(cp.seal.documents.as_ref(), Some(&docs));
    // A document changed by one byte no longer has the digest the seal signed.
    let mut changed = document_bytes("stop-latency/1");
    changed[0] ^= 1;
    assert_ne!(docs["stop-latency/1"], document_digest(&changed));
    // The encoder refuses what the decoder refuses: documents on a seal that is not final,
    // a key that is not a kind, more than 16.
    let mut s = cp.seal.clone();
    s.is_final = false;
    assert_eq!(s.encode().unwrap_err().code(), "unencodable");
    let mut s = cp.seal.clone();
    s.documents = Some([("Bad".to_owned(), [0; 32])].into_iter().collect());
    assert_eq!(s.encode().unwrap_err().code(), "unencodable");
    let mut s = cp.seal.clone();
    s.documents = Some((0..17).map(|i| (format!("k{i}/1"), [0; 32])).collect());
    assert_eq!(s.encode().unwrap_err().code(), "unencodable");
    // Sixteen is the bound, and accepted.
    let mut s = cp.seal.clone();
    s.documents = Some((0..16).map(|i| (format!("k{i}/1"), [0; 32])).collect());
    assert!(decode_seal(&s.encode().unwrap()).is_ok());
    // Without documents the same final seal is a stream-seal/1 document.
    let mut s = cp.seal.clone();
    s.documents = None;
    let bytes = s.encode().unwrap();
    assert!(
        String::from_utf8(bytes.clone())
            .unwrap()
            .contains("stream-seal/1")
    );
    assert_eq!(decode_seal(&bytes).unwrap().documents, None);
}

#[test]
fn document_kinds_are_name_slash_version() {
    for ok in ["stop-latency/1", "interaction-metrics/1", "a/10", "x9-y/2"] {
        assert!(is_document_kind(ok), "{ok}");
    }
    let long = format!("{}/1", "a".repeat(63));
    for bad in [
        "", "/1", "a/", "a/0", "a/01", "A/1", "1a/1", "a b/1", "a/1/2", "a/1a", &long,
    ] {
        assert!(!is_document_kind(bad), "{bad}");
    }
    assert!(is_document_kind(&format!("{}/1", "a".repeat(62))));
}
