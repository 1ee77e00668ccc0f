//! The generator of `conformance/stream-seal-vectors.json` and
//! `conformance/stream-seal-1.schema.json`, the stale-file tests, and a replay of every
//! vector through the public API. `JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-seal
//! --test vectors` rewrites both files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use jouleclaw_jcr1::UtcSecond;
use jouleclaw_jcr1::cose::cbor::head as cbor_head;
use jouleclaw_jcr1::cose::{Signer, SoftwareSigner, kid};
use jouleclaw_seal::*;
use jouleclaw_testkit::{or_not_run, repo};
use serde_json::{Value, json};

const VECTORS: &str = "stream-seal-vectors.json";
const SCHEMA: &str = "stream-seal-1.schema.json";

fn log(n: u64) -> MerkleLog {
    let mut log = MerkleLog::new(1 << 12);
    for i in 0..n {
        log.append(&entry(i)).unwrap();
    }
    log
}

fn hexes(p: &[Hash]) -> Value {
    p.iter().map(hex::encode).collect()
}

/// The sealed demo stream: windows 1..=12 with window 6 empty (no receipt), so 11 leaves;
/// leaf i has entry(i) and window id `WINDOWS[i]`; closed_at is 2026-06-05T00:00:00Z plus
/// window_id / 5 seconds (200 ms windows).
const WINDOWS: [u64; 11] = [1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12];

fn closed_at(window_id: u64) -> UtcSecond {
    UtcSecond::from_unix(1_780_617_600 + (window_id / 5) as i64).unwrap()
}

/// Checkpoints after 4, 8 and 11 (final) leaves.
fn sealed_stream(signer: &SoftwareSigner) -> Vec<SealBatch> {
    let mut sealer = StreamSealer::new(STREAM_ID, STEWARD, 1 << 10);
    let mut out = Vec::new();
    for (i, &w) in WINDOWS.iter().enumerate() {
        sealer.append(w, &entry(i as u64), closed_at(w)).unwrap();
        let n = i + 1;
        if n == 4 || n == 8 || n == 11 {
            out.push(sealer.checkpoint(signer, n == 11).unwrap());
        }
    }
    out
}

/// An alternative final checkpoint after the first two: it seals 10 leaves (windows 1..=11).
fn short_final(signer: &SoftwareSigner) -> SealBatch {
    let mut sealer = StreamSealer::new(STREAM_ID, STEWARD, 1 << 10);
    let mut last = None;
    for (i, &w) in WINDOWS.iter().enumerate().take(10) {
        sealer.append(w, &entry(i as u64), closed_at(w)).unwrap();
        let n = i + 1;
        if n == 4 || n == 8 || n == 10 {
            last = Some(sealer.checkpoint(signer, n == 10).unwrap());
        }
    }
    last.unwrap()
}

fn seal_json_value(s: &StreamSeal) -> Value {
    serde_json::from_slice(&s.encode().unwrap()).unwrap()
}

/// An inclusion receipt with arbitrary (possibly malformed) proof parts, re-using a
/// checkpoint's protected header and signature.
fn receipt_with(cp: &SignedCheckpoint, size: u64, index: u64, path: &[Vec<u8>]) -> Vec<u8> {
    let mut inner = vec![0x83];
    cbor_head(&mut inner, 0, size);
    cbor_head(&mut inner, 0, index);
    cbor_head(&mut inner, 4, path.len() as u64);
    for e in path {
        cbor_head(&mut inner, 2, e.len() as u64);
        inner.extend_from_slice(e);
    }
    let mut unprotected = vec![0xa1, 0x19, 0x01, 0x8c, 0xa1, 0x20, 0x81];
    cbor_head(&mut unprotected, 2, inner.len() as u64);
    unprotected.extend_from_slice(&inner);
    envelope(&cp.protected, &unprotected, None, &cp.signature)
}

fn envelope(protected: &[u8], unprotected: &[u8], payload: Option<&[u8]>, sig: &[u8]) -> Vec<u8> {
    let mut out = vec![0xd2, 0x84];
    cbor_head(&mut out, 2, protected.len() as u64);
    out.extend_from_slice(protected);
    out.extend_from_slice(unprotected);
    match payload {
        None => out.push(0xf6),
        Some(p) => {
            cbor_head(&mut out, 2, p.len() as u64);
            out.extend_from_slice(p);
        }
    }
    cbor_head(&mut out, 2, sig.len() as u64);
    out.extend_from_slice(sig);
    out
}

fn receipts_json(list: &[(u64, [u8; 32], &str, &str)]) -> Value {
    list.iter()
        .map(|(w, h, s, st)| {
            json!({ "window_id": w, "content_hash_hex": hex::encode(h), "stream_id": s, "steward": st })
        })
        .collect()
}

fn demo_receipts() -> Vec<(u64, [u8; 32], &'static str, &'static str)> {
    WINDOWS
        .iter()
        .enumerate()
        .map(|(i, &w)| (w, entry(i as u64), STREAM_ID, STEWARD))
        .collect()
}

fn run_completeness(
    receipts: &Value,
    checkpoints: &Value,
    key: &ed25519_dalek::VerifyingKey,
) -> Vec<Value> {
    let entries: Vec<ReceiptEntry> = receipts
        .as_array()
        .unwrap()
        .iter()
        .map(|r| ReceiptEntry {
            window_id: r["window_id"].as_u64().unwrap(),
            content_hash: hex::decode(r["content_hash_hex"].as_str().unwrap())
                .unwrap()
                .try_into()
                .unwrap(),
            stream_id: r["stream_id"].as_str().unwrap().into(),
            steward: r["steward"].as_str().unwrap().into(),
        })
        .collect();
    let cps: Vec<Checkpoint> = checkpoints
        .as_array()
        .unwrap()
        .iter()
        .map(|c| verify_checkpoint(&hex::decode(c.as_str().unwrap()).unwrap(), key).unwrap())
        .collect();
    check_stream(&entries, &cps)
        .problems
        .iter()
        .map(Problem::to_json)
        .collect()
}

fn build_vectors() -> Value {
    let signer = SoftwareSigner::rfc8032_test_key();
    let key = signer.verifying_key();

    let big = log(1000);
    let trees: Vec<Value> = (1..=17u64)
        .chain([100, 1000])
        .map(|n| json!({ "size": n, "root_hex": hex::encode(big.root_at(n).unwrap()) }))
        .collect();

    let mut at: Vec<(u64, u64)> = Vec::new();
    for n in 1..=8u64 {
        for m in 0..n {
            at.push((m, n));
        }
    }
    at.extend([(0, 17), (16, 17), (99, 100), (517, 1000), (999, 1000)]);
    let mut inclusion = Vec::new();
    for (m, n) in at {
        inclusion.push(json!({
            "tree_size": n,
            "leaf_index": m,
            "entry_hex": hex::encode(entry(m)),
            "leaf_hash_hex": hex::encode(leaf_hash(&entry(m))),
            "path_hex": hexes(&big.inclusion_proof(m, n).unwrap()),
            "root_hex": hex::encode(big.root_at(n).unwrap()),
        }));
    }

    let mut consistency = Vec::new();
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    for n in 1..=8u64 {
        for m in 1..=n {
            pairs.push((m, n));
        }
    }
    pairs.extend([(17, 100), (100, 1000), (1, 1000), (999, 1000), (512, 1000)]);
    for (m, n) in pairs {
        consistency.push(json!({
            "first_size": m,
            "second_size": n,
            "first_root_hex": hex::encode(big.root_at(m).unwrap()),
            "second_root_hex": hex::encode(big.root_at(n).unwrap()),
            "path_hex": hexes(&big.consistency_proof(m, n).unwrap()),
        }));
    }

    let batches = sealed_stream(&signer);
    let checkpoints: Vec<Value> = batches
        .iter()
        .map(|b| {
            let c = &b.checkpoint;
            json!({
                "seal": seal_json_value(&c.seal),
                "seal_json": String::from_utf8(c.seal_json.clone()).unwrap(),
                "subject": c.seal.subject(),
                "protected_hex": hex::encode(&c.protected),
                "to_be_signed_hex": hex::encode(&c.to_be_signed),
                "signature_hex": hex::encode(c.signature),
                "consistency": c.consistency.as_ref().map(|p| json!({
                    "first_size": p.first_size,
                    "second_size": p.second_size,
                    "path_hex": hexes(&p.path),
                })),
                "cose_sign1_hex": hex::encode(&c.cose_sign1),
                "inclusion": b.inclusion.iter().enumerate().map(|(j, (w, r))| json!({
                    "leaf_index": b.first_leaf + j as u64,
                    "window_id": w,
                    "cose_sign1_hex": hex::encode(r),
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let windows: Vec<Value> = WINDOWS
        .iter()
        .enumerate()
        .map(|(i, &w)| {
            json!({
                "leaf_index": i,
                "window_id": w,
                "content_hash_hex": hex::encode(entry(i as u64)),
                "closed_at": closed_at(w).to_string(),
            })
        })
        .collect();

    // Negative cases.
    let mut negative: Vec<Value> = Vec::new();
    let mut push = |mut v: Value| {
        v["n"] = json!(negative.len() + 1);
        negative.push(v);
    };

    // Pure RFC 9162 proofs (tree of 7 and of 17).
    let proof_case = |desc: &str, m: u64, n: u64, e: [u8; 32], path: Vec<String>, root: Hash| {
        let parsed: Result<Vec<Hash>, ProofCode> = path
            .iter()
            .map(|h| {
                <[u8; 32]>::try_from(hex::decode(h).unwrap().as_slice())
                    .map_err(|_| ProofCode::BadElement)
            })
            .collect();
        let code = parsed
            .and_then(|p| verify_inclusion(m, n, &leaf_hash(&e), &p, &root))
            .unwrap_err();
        json!({
            "kind": "inclusion_proof", "description": desc, "tree_size": n, "leaf_index": m,
            "entry_hex": hex::encode(e), "path_hex": path, "root_hex": hex::encode(root),
            "expect": code.as_str(),
        })
    };
    let p37: Vec<String> = big
        .inclusion_proof(3, 7)
        .unwrap()
        .iter()
        .map(hex::encode)
        .collect();
    let r7 = big.root_at(7).unwrap();
    push(proof_case(
        "wrong tree size: PATH(3, 7) checked as a tree of 4 against the root of 7",
        3,
        4,
        entry(3),
        p37.clone(),
        r7,
    ));
    push(proof_case(
        "wrong tree size: PATH(3, 7) checked as a tree of 9 against the root of 7",
        3,
        9,
        entry(3),
        p37.clone(),
        r7,
    ));
    push(proof_case(
        "wrong index: PATH(3, 7) checked for index 2 with entry 3",
        2,
        7,
        entry(3),
        p37.clone(),
        r7,
    ));
    push(proof_case(
        "wrong entry: PATH(3, 7) with entry 4",
        3,
        7,
        entry(4),
        p37.clone(),
        r7,
    ));
    push(proof_case(
        "truncated path",
        3,
        7,
        entry(3),
        p37[..2].to_vec(),
        r7,
    ));
    push(proof_case(
        "path with one hash too many",
        3,
        7,
        entry(3),
        [p37.clone(), vec![hex::encode([0u8; 32])]].concat(),
        r7,
    ));
    let mut short = p37.clone();
    short[1].truncate(62);
    push(proof_case(
        "path element of 31 bytes",
        3,
        7,
        entry(3),
        short,
        r7,
    ));
    let other_root = {
        let mut l = MerkleLog::new(16);
        for i in 0..7 {
            l.append(&entry(100 + i)).unwrap();
        }
        l.root()
    };
    push(proof_case(
        "proof for a different root (a tree of other entries)",
        3,
        7,
        entry(3),
        p37.clone(),
        other_root,
    ));
    push(proof_case(
        "leaf index equal to the tree size",
        7,
        7,
        entry(3),
        p37.clone(),
        r7,
    ));
    let mut flipped = p37.clone();
    flipped[0].replace_range(
        0..2,
        &format!("{:02x}", u8::from_str_radix(&p37[0][..2], 16).unwrap() ^ 1),
    );
    push(proof_case(
        "one bit flipped in the first path hash",
        3,
        7,
        entry(3),
        flipped,
        r7,
    ));

    // Consistency proofs.
    let c_case = |desc: &str, m: u64, n: u64, r1: Hash, r2: Hash, path: Vec<Hash>| {
        let code = verify_consistency(m, n, &r1, &r2, &path).unwrap_err();
        json!({
            "kind": "consistency_proof", "description": desc, "first_size": m, "second_size": n,
            "first_root_hex": hex::encode(r1), "second_root_hex": hex::encode(r2),
            "path_hex": hexes(&path), "expect": code.as_str(),
        })
    };
    let c = big.consistency_proof(6, 17).unwrap();
    let (r6, r17) = (big.root_at(6).unwrap(), big.root_at(17).unwrap());
    push(c_case(
        "PROOF(6, 17) checked as (5, 17)",
        5,
        17,
        big.root_at(5).unwrap(),
        r17,
        c.clone(),
    ));
    push(c_case(
        "PROOF(6, 17) with the first path hash dropped",
        6,
        17,
        r6,
        r17,
        c[1..].to_vec(),
    ));
    push(c_case(
        "PROOF(6, 17) against another second root",
        6,
        17,
        r6,
        big.root_at(16).unwrap(),
        c.clone(),
    ));
    push(c_case(
        "PROOF(6, 17) against another first root",
        6,
        17,
        big.root_at(7).unwrap(),
        r17,
        c.clone(),
    ));
    push(c_case(
        "first size larger than the second",
        17,
        6,
        r17,
        r6,
        c.clone(),
    ));

    // Seal documents.
    let good = batches[0].checkpoint.seal_json.clone();
    let good_s = String::from_utf8(good.clone()).unwrap();
    let seal_case = |desc: &str, bytes: Vec<u8>| {
        let code = decode_seal(&bytes).unwrap_err().code;
        json!({ "kind": "seal_json", "description": desc, "input_hex": hex::encode(&bytes), "expect": code.as_str() })
    };
    let rep = |from: &str, to: &str| {
        assert!(good_s.contains(from), "{from}");
        good_s.replacen(from, to, 1).into_bytes()
    };
    push(seal_case(
        "whitespace after a colon",
        rep("\"tree_size\":4", "\"tree_size\": 4"),
    ));
    push(seal_case(
        "trailing newline",
        [good.clone(), b"\n".to_vec()].concat(),
    ));
    // stream-seal/2 exists since final seals commit to the call's documents: a stream-seal/1
    // body under its id lacks `documents` (this case said `seal_wrong_schema` before that).
    push(seal_case(
        "schema stream-seal/2 without documents",
        rep("stream-seal/1", "stream-seal/2"),
    ));

    push(seal_case("root in uppercase hex", {
        let r = hex::encode(batches[0].checkpoint.seal.root);
        rep(&r, &r.to_uppercase())
    }));
    push(seal_case("root of 63 digits", {
        let r = hex::encode(batches[0].checkpoint.seal.root);
        rep(&r, &r[..63])
    }));
    push(seal_case(
        "tree_size 0",
        rep("\"tree_size\":4", "\"tree_size\":0"),
    ));
    push(seal_case(
        "tree_size negative",
        rep("\"tree_size\":4", "\"tree_size\":-4"),
    ));
    push(seal_case(
        "tree_size disagrees with the window range and empty count",
        rep("\"tree_size\":4", "\"tree_size\":3"),
    ));
    push(seal_case(
        "first_window_id above last_window_id",
        rep("\"first_window_id\":1", "\"first_window_id\":9"),
    ));
    push(seal_case(
        "final as a string",
        rep("\"final\":false", "\"final\":\"false\""),
    ));
    push(seal_case(
        "final null",
        rep("\"final\":false", "\"final\":null"),
    ));
    push(seal_case(
        "an unknown field",
        rep("{\"closed_at\"", "{\"a\":1,\"closed_at\""),
    ));
    push(seal_case(
        "no stream_id",
        rep(",\"stream_id\":\"stream-demo\"", ""),
    ));
    push(seal_case("empty steward", rep(STEWARD, "")));
    push(seal_case(
        "closed_at on 30 February",
        rep("2026-06-05", "2026-02-30"),
    ));
    push(seal_case(
        "keys out of order",
        rep(
            "{\"closed_at\":\"2026-06-05T00:00:00Z\",\"empty_windows_skipped\":0",
            "{\"empty_windows_skipped\":0,\"closed_at\":\"2026-06-05T00:00:00Z\"",
        ),
    ));

    // Inclusion receipts (leaf 2 of the first checkpoint, tree size 4).
    let cp0 = &batches[0].checkpoint;
    let cp2 = &batches[2].checkpoint;
    let good_receipt = batches[0].inclusion[2].1.clone();
    let path2: Vec<Vec<u8>> = big
        .inclusion_proof(2, 4)
        .unwrap()
        .iter()
        .map(|h| h.to_vec())
        .collect();
    let receipt_case = |desc: &str, cose: Vec<u8>, e: [u8; 32], k: &ed25519_dalek::VerifyingKey| {
        let code = verify_inclusion_receipt(&cose, &e, k).unwrap_err().code();
        json!({ "kind": "inclusion_receipt", "description": desc, "cose_sign1_hex": hex::encode(&cose), "entry_hex": hex::encode(e), "expect": code })
    };
    assert!(verify_inclusion_receipt(&good_receipt, &entry(2), &key).is_ok());
    push(receipt_case(
        "another leaf's entry",
        good_receipt.clone(),
        entry(3),
        &key,
    ));
    push(receipt_case(
        "wrong tree size in the proof (5, the seal says 4)",
        receipt_with(cp0, 5, 2, &path2),
        entry(2),
        &key,
    ));
    push(receipt_case(
        "wrong leaf index in the proof",
        receipt_with(cp0, 4, 3, &path2),
        entry(2),
        &key,
    ));
    push(receipt_case(
        "truncated inclusion path",
        receipt_with(cp0, 4, 2, &path2[..1]),
        entry(2),
        &key,
    ));
    push(receipt_case(
        "path element of 31 bytes",
        receipt_with(cp0, 4, 2, &[path2[0].clone(), path2[1][..31].to_vec()]),
        entry(2),
        &key,
    ));
    push(receipt_case(
        "a valid proof of leaf 2 against the final checkpoint's root (tree size 11) under the first checkpoint's header",
        receipt_with(cp0, 11, 2, &big_path_demo(2, 11)),
        entry(2),
        &key,
    ));
    push(receipt_case(
        "proof for a different root: the size-4 proof under the final checkpoint's header",
        receipt_with(cp2, 4, 2, &path2),
        entry(2),
        &key,
    ));
    let foreign_path: Vec<Vec<u8>> = {
        // Leaf 2 of a tree of 11 other entries where entry(2) replaces leaf 2.
        let mut m = MerkleLog::new(16);
        for i in 0..11 {
            m.append(&if i == 2 { entry(2) } else { entry(100 + i) })
                .unwrap();
        }
        m.inclusion_proof(2, 11)
            .unwrap()
            .iter()
            .map(|h| h.to_vec())
            .collect()
    };
    push(receipt_case(
        "proof for a different root: a size-11 proof of entry 2 in a tree of other entries, under the final checkpoint's header",
        receipt_with(cp2, 11, 2, &foreign_path),
        entry(2),
        &key,
    ));
    let mut sig = good_receipt.clone();
    let last = sig.len() - 1;
    sig[last] ^= 1;
    push(receipt_case(
        "one signature bit flipped",
        sig,
        entry(2),
        &key,
    ));
    push(receipt_case(
        "untagged",
        good_receipt[1..].to_vec(),
        entry(2),
        &key,
    ));
    push(receipt_case(
        "trailing byte",
        [good_receipt.clone(), vec![0]].concat(),
        entry(2),
        &key,
    ));
    let unprot = {
        let mut u = vec![0xa1, 0x19, 0x01, 0x8c, 0xa1, 0x20, 0x81];
        let inner = {
            let mut i = vec![0x83, 0x04, 0x02, 0x82];
            for e in &path2 {
                i.push(0x58);
                i.push(0x20);
                i.extend_from_slice(e);
            }
            i
        };
        cbor_head(&mut u, 2, inner.len() as u64);
        u.extend_from_slice(&inner);
        u
    };
    push(receipt_case(
        "payload attached (the root)",
        envelope(
            &cp0.protected,
            &unprot,
            Some(&cp0.seal.root),
            &cp0.signature,
        ),
        entry(2),
        &key,
    ));
    let other_key = SoftwareSigner::from_seed(&[7; 32]).verifying_key();
    push(receipt_case(
        "verified with another key",
        good_receipt.clone(),
        entry(2),
        &other_key,
    ));
    let tampered_seal = {
        let mut s = cp0.seal.clone();
        s.is_final = true;
        let json = s.encode().unwrap();
        let prot = protected_bytes(&s, &json, &kid(&key));
        envelope(&prot, &unprot, None, &cp0.signature)
    };
    push(receipt_case(
        "seal document changed to final (signature over the old header)",
        tampered_seal,
        entry(2),
        &key,
    ));
    let vds2 = {
        let mut p = cp0.protected.clone();
        let at = p
            .windows(4)
            .position(|w| w == [0x19, 0x01, 0x8b, 0x01])
            .unwrap();
        p[at + 3] = 0x02;
        envelope(&p, &unprot, None, &cp0.signature)
    };
    push(receipt_case("vds 2 instead of 1", vds2, entry(2), &key));
    let two_proofs = {
        let mut u = unprot.clone();
        u[6] = 0x82;
        let inner_start = 7;
        let dup = u[inner_start..].to_vec();
        u.extend_from_slice(&dup);
        envelope(&cp0.protected, &u, None, &cp0.signature)
    };
    push(receipt_case(
        "two inclusion proofs in one receipt",
        two_proofs,
        entry(2),
        &key,
    ));

    // Completeness over the demo stream.
    let all_cps: Value = batches
        .iter()
        .map(|b| json!(hex::encode(&b.checkpoint.cose_sign1)))
        .collect();
    let base = demo_receipts();
    let mut comp = |desc: &str, list: Vec<(u64, [u8; 32], &str, &str)>, cps: Value| {
        let receipts = receipts_json(&list);
        let problems = run_completeness(&receipts, &cps, &key);
        assert!(!problems.is_empty(), "{desc}");
        push(
            json!({ "kind": "completeness", "description": desc, "receipts": receipts, "checkpoints_hex": cps, "expect_problems": problems }),
        );
    };
    let mut l = base.clone();
    l.remove(2);
    comp(
        "window 3 dropped (its interval has no empty window: named exactly)",
        l,
        all_cps.clone(),
    );
    let mut l = base.clone();
    l.remove(4);
    comp(
        "window 5 dropped (its interval also holds empty window 6: located to the interval)",
        l,
        all_cps.clone(),
    );
    let mut l = base.clone();
    l.insert(3, l[2]);
    comp("window 3 repeated", l, all_cps.clone());
    let mut l = base.clone();
    l.swap(6, 7);
    comp("windows 8 and 9 swapped", l, all_cps.clone());
    let mut l = base.clone();
    l.truncate(9);
    comp("truncated: windows 11 and 12 dropped", l, all_cps.clone());
    let mut l = base.clone();
    l.push((13, entry(99), "other-stream", STEWARD));
    comp("a foreign receipt appended", l, all_cps.clone());
    let mut l = base.clone();
    l.push((13, entry(99), STREAM_ID, STEWARD));
    comp(
        "an extra window after the final seal's last window",
        l,
        all_cps.clone(),
    );
    let mut l = base.clone();
    l[5].1 = entry(55);
    comp(
        "window 7's receipt replaced (root not recomputed)",
        l,
        all_cps.clone(),
    );
    let short = short_final(&signer);
    let cps_short: Value = batches[..2]
        .iter()
        .map(|b| json!(hex::encode(&b.checkpoint.cose_sign1)))
        .chain([json!(hex::encode(&short.checkpoint.cose_sign1))])
        .collect();
    comp(
        "final seal whose tree_size (10) disagrees with the 11 receipts",
        base.clone(),
        cps_short,
    );
    comp(
        "no final seal (the last checkpoint dropped)",
        base[..8].to_vec(),
        all_cps.as_array().unwrap()[..2].to_vec().into(),
    );
    comp(
        "the first checkpoint dropped",
        base.clone(),
        all_cps.as_array().unwrap()[1..].to_vec().into(),
    );
    let bad_consistency = {
        let mut c = batches[1].checkpoint.cose_sign1.clone();
        // The consistency path's last byte sits just before nil and the signature.
        let at = c.len() - 1 - 2 - 64 - 1;
        c[at] ^= 1;
        c
    };
    comp(
        "the second checkpoint's consistency proof altered (unprotected, so the signature still holds)",
        base.clone(),
        vec![
            all_cps[0].clone(),
            json!(hex::encode(bad_consistency)),
            all_cps[2].clone(),
        ]
        .into(),
    );

    json!({
        "_comment": "stream-seal/1 conformance vectors (spec/STREAM-SEAL.md). Owned by jouleclaw-rs; generated by crates/jouleclaw-seal/tests/vectors.rs (JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-seal --test vectors). Leaves: entry(i) = BLAKE3(UTF-8 'jouleclaw stream-seal vector leaf ' + decimal i), leaf hash = SHA-256(0x00 || entry). Signed with the RFC 8032 section 7.1 TEST 1 key (public: proves nothing about origin). expect codes are the Rust implementation's; other verifiers must refuse the same inputs but need not give the same code.",
        "entry_rule": format!("BLAKE3(\"{ENTRY_PREFIX}\" + decimal i)"),
        "key": {
            "seed_hex": hex::encode(jouleclaw_jcr1::cose::RFC8032_TEST1_SEED),
            "public_key_hex": hex::encode(key.as_bytes()),
            "kid_hex": hex::encode(kid(&key)),
        },
        "trees": trees,
        "inclusion": inclusion,
        "consistency": consistency,
        "stream": {
            "stream_id": STREAM_ID,
            "steward": STEWARD,
            "windows": windows,
            "checkpoints": checkpoints,
        },
        "negative": negative,
    })
}

/// The inclusion path of leaf `m` in the demo stream's tree of `n` leaves (entries 0..n).
fn big_path_demo(m: u64, n: u64) -> Vec<Vec<u8>> {
    log(n)
        .inclusion_proof(m, n)
        .unwrap()
        .iter()
        .map(|h| h.to_vec())
        .collect()
}

#[test]
fn the_vector_file_is_what_the_generator_builds() {
    check_generated(VECTORS, &pretty(&build_vectors()), "vectors");
}

#[test]
fn the_json_schema_file_is_what_the_schema_object_generates() {
    check_generated(SCHEMA, &pretty(&seal::json_schema()), "vectors");
}

/// The checked-in stream-seal/1 vectors (`None` in a crate built alone).
fn load() -> Option<Value> {
    let text = repo::file("conformance/stream-seal-vectors.json")?;
    Some(serde_json::from_str(&text).unwrap())
}

fn h32(v: &Value) -> Hash {
    hex::decode(v.as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap()
}

fn path_of(v: &Value) -> Vec<Hash> {
    v.as_array().unwrap().iter().map(h32).collect()
}

/// Verifies the consistency proof a vector or a negative case states.
fn consistency_of(case: &Value) -> Result<(), ProofCode> {
    verify_consistency(
        case["first_size"].as_u64().unwrap(),
        case["second_size"].as_u64().unwrap(),
        &h32(&case["first_root_hex"]),
        &h32(&case["second_root_hex"]),
        &path_of(&case["path_hex"]),
    )
}

#[test]
fn every_positive_vector_verifies_from_the_file_alone() {
    let v = or_not_run!(load());
    let key = ed25519_dalek::VerifyingKey::from_bytes(&h32(&v["key"]["public_key_hex"])).unwrap();
    let ids = |i: u64| *blake3::hash(format!("{ENTRY_PREFIX}{i}").as_bytes()).as_bytes();
    for t in v["trees"].as_array().unwrap() {
        let n = t["size"].as_u64().unwrap();
        let mut f = Frontier::new();
        for i in 0..n {
            f.append(&ids(i)).unwrap();
        }
        assert_eq!(f.root(), h32(&t["root_hex"]), "tree {n}");
    }
    for p in v["inclusion"].as_array().unwrap() {
        let (m, n) = (
            p["leaf_index"].as_u64().unwrap(),
            p["tree_size"].as_u64().unwrap(),
        );
        assert_eq!(h32(&p["entry_hex"]), ids(m));
        verify_inclusion(
            m,
            n,
            &leaf_hash(&ids(m)),
            &path_of(&p["path_hex"]),
            &h32(&p["root_hex"]),
        )
        .unwrap();
    }
    for p in v["consistency"].as_array().unwrap() {
        consistency_of(p).unwrap();
    }
    let stream = &v["stream"];
    let windows = stream["windows"].as_array().unwrap();
    let mut cps = Vec::new();
    let mut receipts = 0;
    for c in stream["checkpoints"].as_array().unwrap() {
        let cose = hex::decode(c["cose_sign1_hex"].as_str().unwrap()).unwrap();
        let cp = verify_checkpoint(&cose, &key).unwrap();
        assert_eq!(
            cp.seal.encode().unwrap(),
            c["seal_json"].as_str().unwrap().as_bytes()
        );
        for r in c["inclusion"].as_array().unwrap() {
            let i = r["leaf_index"].as_u64().unwrap() as usize;
            let e = h32(&windows[i]["content_hash_hex"]);
            let ok = verify_inclusion_receipt(
                &hex::decode(r["cose_sign1_hex"].as_str().unwrap()).unwrap(),
                &e,
                &key,
            )
            .unwrap();
            assert_eq!(ok.seal, cp.seal);
            assert_eq!(ok.leaf_index, i as u64);
            receipts += 1;
        }
        cps.push(cp);
    }
    assert_eq!(receipts, windows.len());
    let entries: Vec<ReceiptEntry> = windows
        .iter()
        .map(|w| ReceiptEntry {
            window_id: w["window_id"].as_u64().unwrap(),
            content_hash: h32(&w["content_hash_hex"]),
            stream_id: STREAM_ID.into(),
            steward: STEWARD.into(),
        })
        .collect();
    assert!(check_stream(&entries, &cps).is_complete());
}

#[test]
fn every_negative_vector_is_refused_with_its_code() {
    let v = or_not_run!(load());
    let key = ed25519_dalek::VerifyingKey::from_bytes(&h32(&v["key"]["public_key_hex"])).unwrap();
    let other_key = SoftwareSigner::from_seed(&[7; 32]).verifying_key();
    let mut kinds = std::collections::BTreeMap::new();
    for case in v["negative"].as_array().unwrap() {
        let kind = case["kind"].as_str().unwrap();
        *kinds.entry(kind.to_owned()).or_insert(0) += 1;
        let desc = case["description"].as_str().unwrap();
        let got: Value = match kind {
            "inclusion_proof" => {
                let path: Result<Vec<Hash>, ProofCode> = case["path_hex"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| {
                        <[u8; 32]>::try_from(hex::decode(h.as_str().unwrap()).unwrap().as_slice())
                            .map_err(|_| ProofCode::BadElement)
                    })
                    .collect();
                let r = path.and_then(|p| {
                    verify_inclusion(
                        case["leaf_index"].as_u64().unwrap(),
                        case["tree_size"].as_u64().unwrap(),
                        &leaf_hash(&h32(&case["entry_hex"])),
                        &p,
                        &h32(&case["root_hex"]),
                    )
                });
                json!(r.unwrap_err().as_str())
            }
            "consistency_proof" => json!(consistency_of(case).unwrap_err().as_str()),
            "seal_json" => json!(
                decode_seal(&hex::decode(case["input_hex"].as_str().unwrap()).unwrap())
                    .unwrap_err()
                    .code
                    .as_str()
            ),
            "inclusion_receipt" => {
                let k = if desc == "verified with another key" {
                    &other_key
                } else {
                    &key
                };
                json!(
                    verify_inclusion_receipt(
                        &hex::decode(case["cose_sign1_hex"].as_str().unwrap()).unwrap(),
                        &h32(&case["entry_hex"]),
                        k,
                    )
                    .unwrap_err()
                    .code()
                )
            }
            "completeness" => {
                let got = run_completeness(&case["receipts"], &case["checkpoints_hex"], &key);
                assert_eq!(Value::from(got), case["expect_problems"], "{desc}");
                continue;
            }
            other => panic!("unknown kind {other}"),
        };
        assert_eq!(got, case["expect"], "{desc}");
    }
    assert_eq!(
        kinds.keys().cloned().collect::<Vec<_>>(),
        [
            "completeness",
            "consistency_proof",
            "inclusion_proof",
            "inclusion_receipt",
            "seal_json"
        ]
    );
}
