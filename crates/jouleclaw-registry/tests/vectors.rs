//! The generator of `conformance/call-registry-vectors.json`, its stale-file test, and a replay
//! of every vector through the public API. `JOULECLAW_REGEN_VECTORS=1 cargo test -p
//! jouleclaw-registry --test vectors` rewrites the file.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use jouleclaw_jcr1::UtcSecond;
use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_registry::*;
use jouleclaw_seal::StreamSealer;
use jouleclaw_testkit::{or_not_run, repo};
use serde_json::{Value, json};

const VECTORS: &str = "call-registry-vectors.json";
const ORIGIN: &str = "registry.example/steward";
const STEWARD: &str = "did:keri:EJ9testStewardAID000000000000000";
/// Fixed cosignature times (Ed25519 is deterministic, so every byte is reproducible).
const T0: u64 = 1_780_617_600;
/// The Ed25519 seed byte of the log key that is not the steward's (a witness's key would be
/// refused by the policy before the seal is read).
const OTHER_LOG_SEED: u8 = 100;
/// The Ed25519 seed byte of the keys outside every policy whose lines fill a note.
const STRANGER_SEED: u8 = 200;

fn steward() -> SoftwareSigner {
    SoftwareSigner::rfc8032_test_key()
}

fn steward_key() -> NoteKey {
    NoteKey::new(ORIGIN, ALG_ED25519, steward().verifying_key().as_bytes()).unwrap()
}

/// Witness i: Ed25519 seed = 32 bytes of value i + 1.
fn witness(i: u8) -> (SoftwareSigner, NoteKey) {
    let s = SoftwareSigner::from_seed(&[i + 1; 32]);
    let k = NoteKey::new(
        &format!("witness.example/w{i}"),
        ALG_COSIGNATURE_V1,
        s.verifying_key().as_bytes(),
    )
    .unwrap();
    (s, k)
}

fn cosign_line(i: u8, note: &[u8], t: u64) -> Vec<u8> {
    let (s, k) = witness(i);
    let end = note.windows(2).position(|w| w == b"\n\n").unwrap() + 1;
    let sig = s.sign(&cosignature_message(t, &note[..end])).unwrap();
    let mut raw = k.id().to_be_bytes().to_vec();
    raw.extend_from_slice(&t.to_be_bytes());
    raw.extend_from_slice(&sig);
    format!("— {} {}\n", k.name(), B64.encode(raw)).into_bytes()
}

fn cosigned(note: &[u8], ws: &[u8]) -> Vec<u8> {
    let keys: Vec<NoteKey> = (0..3).map(|i| witness(i).1).collect();
    let mut out = note.to_vec();
    for &w in ws {
        out = merge_cosignatures(&out, &cosign_line(w, note, T0 + u64::from(w)), &keys).unwrap();
    }
    out
}

/// Call i's final seal: `windows` receipts whose content hashes are
/// BLAKE3("jouleclaw registry vector call " + id + " window " + w).
fn final_seal(id: &str, windows: u64) -> Vec<u8> {
    let at = UtcSecond::from_unix(T0 as i64).unwrap();
    let mut sealer = StreamSealer::new(id, STEWARD, 1 << 10);
    for w in 0..windows {
        let h = blake3::hash(format!("jouleclaw registry vector call {id} window {w}").as_bytes());
        sealer.append(w, h.as_bytes(), at).unwrap();
    }
    sealer
        .checkpoint(&steward(), true)
        .unwrap()
        .checkpoint
        .cose_sign1
}

fn leaf_of(seal: &[u8]) -> RegistryLeaf {
    let v = jouleclaw_seal::verify_checkpoint(seal, &steward().verifying_key()).unwrap();
    RegistryLeaf::of_final_seal(&v.seal).unwrap()
}

fn policy(quorum: usize) -> String {
    let mut p = format!("log {}\n", steward_key().vkey());
    for i in 0..3 {
        p.push_str(&format!("witness {}\n", witness(i).1.vkey()));
    }
    p.push_str(&format!("quorum {quorum}\n"));
    p
}

fn s(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

/// A policy of witnesses 0..n (witness i has the seed of 32 bytes of value i + 1).
fn policy_n(n: u8, quorum: usize) -> String {
    let mut p = format!("log {}\n", steward_key().vkey());
    for i in 0..n {
        p.push_str(&format!("witness {}\n", witness(i).1.vkey()));
    }
    p.push_str(&format!("quorum {quorum}\n"));
    p
}

/// The same base64 text with a non-zero unused bit in its last character before the padding:
/// it decodes (leniently) to the same bytes but is not their one encoding.
fn loose_base64(b64: &str) -> String {
    let data = b64.trim_end_matches('=');
    assert!(
        data.len() < b64.len(),
        "{b64} has no padding, so no unused bits"
    );
    let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let last = data.as_bytes()[data.len() - 1];
    let v = alphabet.iter().position(|&c| c == last).unwrap();
    assert_eq!(v & 1, 0, "{b64}: the last unused bit is already set");
    format!(
        "{}{}{}",
        &data[..data.len() - 1],
        alphabet[v | 1] as char,
        &b64[data.len()..]
    )
}

/// `text` with the base64 field of the line starting with `prefix` made loose.
fn loosen_line(text: &str, prefix: &str) -> String {
    let start = text.find(prefix).unwrap() + prefix.len();
    let end = start + text[start..].find('\n').unwrap();
    format!(
        "{}{}{}",
        &text[..start],
        loose_base64(&text[start..end]),
        &text[end..]
    )
}

/// A line of witness 0 whose signature does not verify.
fn second_bad_line(note: &[u8]) -> String {
    let line = s(&cosign_line(0, note, T0 + 7));
    let b64 = line.trim_end().rsplit(' ').next().unwrap();
    let mut raw = B64.decode(b64).unwrap();
    raw[20] ^= 0x01;
    format!("— witness.example/w0 {}\n", B64.encode(raw))
}

/// `n` signature lines of keys outside every policy, after the note's last line.
fn stranger_lines(proof: &str, n: usize) -> String {
    let mut out = proof.to_owned();
    for k in 0..n {
        let name = format!("stranger.example/s{k}");
        let key = NoteKey::new(
            &name,
            ALG_COSIGNATURE_V1,
            SoftwareSigner::from_seed(&[STRANGER_SEED; 32])
                .verifying_key()
                .as_bytes(),
        )
        .unwrap();
        let mut raw = key.id().to_be_bytes().to_vec();
        raw.extend_from_slice(&[7u8; 72]);
        out.push_str(&format!("— {name} {}\n", B64.encode(raw)));
    }
    out
}

fn build() -> Value {
    let calls = [
        ("call-1", 3u64),
        ("call-2", 5),
        ("call-3", 1),
        ("call-4", 2),
    ];
    let seals: Vec<Vec<u8>> = calls.iter().map(|(id, w)| final_seal(id, *w)).collect();
    let mut log = RegistryLog::new(ORIGIN, 1 << 10).unwrap();
    let mut leaves = Vec::new();
    let mut notes = Vec::new();
    for seal in &seals {
        let leaf = leaf_of(seal);
        log.append(&leaf).unwrap();
        leaves.push(json!({
            "seal_cose_hex": hex::encode(seal),
            "canonical": s(&leaf.encode().unwrap()),
            "entry_hex": hex::encode(leaf.entry().unwrap()),
            "leaf_hash_hex": hex::encode(jouleclaw_seal::leaf_hash(&leaf.entry().unwrap())),
        }));
        notes.push(log.sign_checkpoint(&steward()).unwrap());
    }
    let size4 = cosigned(&notes[3], &[0, 1, 2]);
    let checkpoints: Vec<Value> = notes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let body = verify_checkpoint_note(n, &steward_key(), &[]).unwrap().body;
            json!({"note": s(n), "size": body.size, "root_hex": hex::encode(body.root), "size_index": i})
        })
        .collect();
    let proof = |index: u64, note: &[u8]| CallProof {
        seal_cose: seals[index as usize].clone(),
        index,
        path: log.inclusion_proof(index, 4).unwrap(),
        checkpoint: note.to_vec(),
    };
    let valid: Vec<Value> = (0..4u64)
        .map(|i| {
            json!({
                "proof": s(&proof(i, &size4).encode()),
                "policy": policy(2),
                "stream_id": calls[i as usize].0,
                "index": i,
                "tree_size": 4,
                "cosigners": ["witness.example/w0", "witness.example/w1", "witness.example/w2"],
                "earliest_cosignature": T0,
            })
        })
        .collect();
    // Appended (spec section 6, Time): w0 backdates its cosignature to 1970; with a quorum of
    // two the call existed by the second-earliest time, w1's.
    let backdated = {
        let keys: Vec<NoteKey> = (0..3).map(|i| witness(i).1).collect();
        let mut out = notes[3].clone();
        for (w, t) in [(0u8, 0u64), (1, T0 + 1), (2, T0 + 2)] {
            out = merge_cosignatures(&out, &cosign_line(w, &notes[3], t), &keys).unwrap();
        }
        out
    };
    let mut valid = valid;
    valid.push(json!({
        "proof": s(&proof(2, &backdated).encode()),
        "policy": policy(2),
        "stream_id": calls[2].0,
        "index": 2,
        "tree_size": 4,
        "cosigners": ["witness.example/w0", "witness.example/w1", "witness.example/w2"],
        "earliest_cosignature": 0,
        "quorum_time": T0 + 1,
    }));
    let good = s(&proof(1, &size4).encode());
    let only_w1 = s(&proof(1, &cosigned(&notes[3], &[1])).encode());
    let other_seal = s(&CallProof {
        seal_cose: seals[0].clone(),
        ..proof(1, &size4)
    }
    .encode());
    let wrong_index = s(&CallProof {
        index: 2,
        ..proof(1, &size4)
    }
    .encode());
    let root_line = B64.encode(log.body().root);
    let mut flipped = root_line.clone().into_bytes();
    flipped[0] = if flipped[0] == b'A' { b'B' } else { b'A' };
    let tampered_root = good.replace(&root_line, &s(&flipped));
    let cosig_start = good.find("— witness.example/w0 ").unwrap() + "— witness.example/w0 ".len();
    let mut bad_cosig = good.clone().into_bytes();
    // The first base64 character after the key ID (6 characters) holds timestamp bits.
    bad_cosig[cosig_start + 6] = if bad_cosig[cosig_start + 6] == b'A' {
        b'B'
    } else {
        b'A'
    };
    let negative = vec![
        json!({"what": "one cosigner where the quorum is two", "proof": only_w1, "policy": policy(2), "expect": "quorum_not_met"}),
        json!({"what": "a quorum of three met by all three: accepted neighbour", "proof": good, "policy": policy(3), "expect": "valid"}),
        json!({"what": "the seal of another call under the same index", "proof": other_seal, "policy": policy(2), "expect": "inclusion_invalid"}),
        json!({"what": "another index", "proof": wrong_index, "policy": policy(2), "expect": "inclusion_invalid"}),
        json!({"what": "the checkpoint's root altered (every signature breaks)", "proof": tampered_root, "policy": policy(2), "expect": "signature_invalid"}),
        json!({"what": "a cosignature's timestamp altered", "proof": s(&bad_cosig), "policy": policy(2), "expect": "signature_invalid"}),
        json!({"what": "an extension line in the checkpoint", "proof": good.replacen(&format!("{root_line}\n\n"), &format!("{root_line}\nextension\n\n"), 1), "policy": policy(2), "expect": "checkpoint_malformed"}),
        json!({"what": "the index with a leading zero", "proof": good.replacen("index 1\n", "index 01\n", 1), "policy": policy(2), "expect": "proof_malformed"}),
        json!({"what": "no extra line (the seal is required)", "proof": good.replacen(&good[good.find("extra ").unwrap()..good.find("index ").unwrap()], "", 1), "policy": policy(2), "expect": "proof_malformed"}),
        json!({"what": "a policy whose log key is another key under the origin", "proof": good, "policy": policy(2).replacen(&steward_key().vkey(), &NoteKey::new(ORIGIN, ALG_ED25519, SoftwareSigner::from_seed(&[OTHER_LOG_SEED; 32]).verifying_key().as_bytes()).unwrap().vkey(), 1), "expect": "seal_invalid"}),
        // Appended (spec sections 2.1 and 5): a quorum that does not exceed half the witnesses,
        // a second invalid line of a trusted witness, the 64-line bound, strict base64.
        json!({"what": "a quorum of one of three witnesses (half or fewer does not exclude forks)", "proof": only_w1, "policy": policy(1), "expect": "policy_malformed"}),
        json!({"what": "a second, invalid line of a cosigning witness after its valid one", "proof": format!("{good}{}", second_bad_line(&notes[3])), "policy": policy(2), "expect": "signature_invalid"}),
        json!({"what": "65 signature lines (61 of keys outside the policy)", "proof": stranger_lines(&good, 61), "policy": policy(2), "expect": "note_malformed"}),
        json!({"what": "64 signature lines (60 of keys outside the policy): accepted neighbour", "proof": stranger_lines(&good, 60), "policy": policy(2), "expect": "valid"}),
        json!({"what": "non-zero unused bits in a cosignature line's base64", "proof": loosen_line(&good, "— witness.example/w1 "), "policy": policy(2), "expect": "note_malformed"}),
        json!({"what": "non-zero unused bits in the steward's signature line's base64", "proof": loosen_line(&good, "— registry.example/steward "), "policy": policy(2), "expect": "note_malformed"}),
        json!({"what": "non-zero unused bits in an inclusion-proof hash's base64", "proof": loosen_line(&good, "index 1\n"), "policy": policy(2), "expect": "proof_malformed"}),
    ];
    let mut negative = negative;
    if good[good.find("extra ").unwrap()..]
        .split('\n')
        .next()
        .unwrap()
        .ends_with('=')
    {
        negative.push(json!({"what": "non-zero unused bits in the extra line's base64 (the seal)", "proof": loosen_line(&good, "extra "), "policy": policy(2), "expect": "proof_malformed"}));
    }
    // Forks: two registries that agree on two calls and then differ.
    let mut fork = RegistryLog::new(ORIGIN, 1 << 10).unwrap();
    for seal in &seals[..2] {
        fork.append(&leaf_of(seal)).unwrap();
    }
    fork.append(&leaf_of(&final_seal("call-9", 4))).unwrap();
    let fork_note = fork.sign_checkpoint(&steward()).unwrap();
    let hexes = |p: Vec<[u8; 32]>| p.iter().map(hex::encode).collect::<Vec<_>>();
    let forks = vec![
        json!({"what": "equal sizes, different roots", "a": s(&notes[2]), "b": s(&fork_note), "consistency_hex": [], "expect": "fork"}),
        json!({"what": "the fork's size 3 against the registry's size 4", "a": s(&fork_note), "b": s(&notes[3]), "consistency_hex": hexes(log.consistency_proof(3, 4).unwrap()), "expect": "fork"}),
        json!({"what": "size 2 against size 4 with its consistency proof: accepted neighbour", "a": s(&notes[1]), "b": s(&notes[3]), "consistency_hex": hexes(log.consistency_proof(2, 4).unwrap()), "expect": "consistent"}),
        json!({"what": "one checkpoint against itself", "a": s(&notes[3]), "b": s(&notes[3]), "consistency_hex": [], "expect": "consistent"}),
    ];
    let policies = vec![
        json!({"policy": policy(2), "expect": "valid", "quorum": 2, "witnesses": 3}),
        json!({"policy": policy(0), "expect": "policy_malformed"}),
        json!({"policy": policy(4), "expect": "policy_malformed"}),
        json!({"policy": policy(2).replacen("log ", "#log ", 1), "expect": "policy_malformed"}),
        json!({"policy": format!("{}witness {}\n", policy(2), witness(1).1.vkey()), "expect": "policy_malformed"}),
        json!({"policy": policy(2).replacen(&witness(0).1.vkey(), &steward_key().vkey(), 1), "expect": "policy_malformed"}),
        json!({"policy": policy(2).replacen(&witness(0).1.vkey(), &NoteKey::new("witness.example/w0", ALG_COSIGNATURE_V1, steward().verifying_key().as_bytes()).unwrap().vkey(), 1), "expect": "policy_malformed"}),
        // Appended (spec section 5): the quorum exceeds half the witnesses; at most 63 witnesses.
        json!({"policy": policy(1), "expect": "policy_malformed"}),
        json!({"policy": policy_n(4, 2), "expect": "policy_malformed"}),
        json!({"policy": policy_n(4, 3), "expect": "valid", "quorum": 3, "witnesses": 4}),
        json!({"policy": policy_n(64, 33), "expect": "policy_malformed"}),
        json!({"policy": policy_n(63, 32), "expect": "valid", "quorum": 32, "witnesses": 63}),
    ];
    json!({
        "_comment": "Call registry conformance vectors (spec/CALL-REGISTRY.md). Owned by jouleclaw-rs; generated by crates/jouleclaw-registry/tests/vectors.rs (JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-registry --test vectors). The steward signs with the RFC 8032 section 7.1 TEST 1 key under the origin registry.example/steward; witness i (witness.example/wi) has the Ed25519 seed of 32 bytes of value i+1; cosignature times are 1780617600 + i; the other log key of the seal_invalid policy has the seed of 32 bytes of value 100. Seals: call-k's window w has the content hash BLAKE3('jouleclaw registry vector call ' + id + ' window ' + w). expect codes are the Rust implementation's; other verifiers must refuse the same inputs but need not give the same code.",
        "origin": ORIGIN,
        "steward_vkey": steward_key().vkey(),
        "witness_vkeys": (0..3).map(|i| witness(i).1.vkey()).collect::<Vec<_>>(),
        "leaves": leaves,
        "checkpoints": checkpoints,
        "valid_proofs": valid,
        "negative_proofs": negative,
        "forks": forks,
        "policies": policies,
    })
}

fn check_generated(built: &str) {
    let path = or_not_run!(repo::path(&format!("conformance/{VECTORS}")));
    if std::env::var_os("JOULECLAW_REGEN_VECTORS").is_some() {
        jouleclaw_testkit::write_generated(&path, built);
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == built,
        "{VECTORS} is stale; run JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-registry --test vectors"
    );
}

#[test]
fn the_vector_file_is_current() {
    check_generated(&(serde_json::to_string_pretty(&build()).unwrap() + "\n"));
}

fn outcome(proof: &str, policy: &str) -> String {
    let policy = match WitnessPolicy::parse(policy) {
        Ok(p) => p,
        Err(e) => return e.code().into(),
    };
    match CallProof::parse(proof.as_bytes()).and_then(|p| verify_call_proof(&p, &policy)) {
        Ok(_) => "valid".into(),
        Err(e) => e.code().into(),
    }
}

#[test]
fn every_vector_replays_through_the_public_api() {
    let v = build();
    for p in v["valid_proofs"].as_array().unwrap() {
        let policy = WitnessPolicy::parse(p["policy"].as_str().unwrap()).unwrap();
        let call = verify_call_proof(
            &CallProof::parse(p["proof"].as_str().unwrap().as_bytes()).unwrap(),
            &policy,
        )
        .unwrap();
        assert_eq!(call.seal.stream_id, p["stream_id"].as_str().unwrap());
        assert_eq!(call.index, p["index"].as_u64().unwrap());
        assert_eq!(
            call.earliest_cosignature(),
            p["earliest_cosignature"].as_u64()
        );
        if let Some(t) = p.get("quorum_time") {
            assert_eq!(call.witnessed_by(), t.as_u64());
        }
    }
    for n in v["negative_proofs"].as_array().unwrap() {
        let got = outcome(n["proof"].as_str().unwrap(), n["policy"].as_str().unwrap());
        assert_eq!(got, n["expect"].as_str().unwrap(), "{}", n["what"]);
    }
    for f in v["forks"].as_array().unwrap() {
        let a = verify_checkpoint_note(f["a"].as_str().unwrap().as_bytes(), &steward_key(), &[])
            .unwrap();
        let b = verify_checkpoint_note(f["b"].as_str().unwrap().as_bytes(), &steward_key(), &[])
            .unwrap();
        let proof: Vec<[u8; 32]> = f["consistency_hex"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                hex::decode(h.as_str().unwrap())
                    .unwrap()
                    .try_into()
                    .unwrap()
            })
            .collect();
        let got = match check_no_fork(&a, &b, &proof) {
            Ok(()) => "consistent",
            Err(e) => e.code(),
        };
        assert_eq!(got, f["expect"].as_str().unwrap(), "{}", f["what"]);
    }
    for p in v["policies"].as_array().unwrap() {
        let got = match WitnessPolicy::parse(p["policy"].as_str().unwrap()) {
            Ok(_) => "valid",
            Err(e) => e.code(),
        };
        assert_eq!(got, p["expect"].as_str().unwrap());
    }
}
