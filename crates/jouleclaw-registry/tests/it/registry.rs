//! The registry's rules, each with its accepted neighbour.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use jouleclaw_jcr1::UtcSecond;
use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_registry::*;
use jouleclaw_seal::StreamSealer;

const ORIGIN: &str = "registry.example/steward";

fn steward() -> SoftwareSigner {
    SoftwareSigner::rfc8032_test_key()
}

fn steward_key() -> NoteKey {
    NoteKey::new(ORIGIN, ALG_ED25519, steward().verifying_key().as_bytes()).unwrap()
}

fn witness(i: u8) -> (String, SoftwareSigner) {
    (
        format!("witness.example/w{i}"),
        SoftwareSigner::from_seed(&[i + 1; 32]),
    )
}

fn witness_key(i: u8) -> NoteKey {
    let (name, s) = witness(i);
    NoteKey::new(&name, ALG_COSIGNATURE_V1, s.verifying_key().as_bytes()).unwrap()
}

/// A cosignature line as a tlog-witness would return it, made by the test (a stand-in for a
/// witness: the real one, litewitness, is exercised by the CLI's registry tests).
fn cosign(i: u8, note: &[u8], timestamp: u64) -> Vec<u8> {
    let (name, s) = witness(i);
    let text_end = note.windows(2).position(|w| w == b"\n\n").unwrap() + 1;
    let sig = s
        .sign(&cosignature_message(timestamp, &note[..text_end]))
        .unwrap();
    let mut raw = witness_key(i).id().to_be_bytes().to_vec();
    raw.extend_from_slice(&timestamp.to_be_bytes());
    raw.extend_from_slice(&sig);
    format!("— {name} {}\n", B64.encode(raw)).into_bytes()
}

/// Call `stream_id`'s final seal over `windows` receipts, under the steward's label.
fn final_seal(stream_id: &str, windows: u8) -> Vec<u8> {
    final_seal_labelled("did:example:steward", stream_id, windows)
}

fn leaf_of(seal_cose: &[u8]) -> RegistryLeaf {
    let seal = jouleclaw_seal::verify_checkpoint(seal_cose, &steward().verifying_key()).unwrap();
    RegistryLeaf::of_final_seal(&seal.seal).unwrap()
}

fn policy_text(quorum: usize) -> String {
    let mut p = format!("# test policy\nlog {}\n", steward_key().vkey());
    for i in 0..3 {
        p.push_str(&format!(
            "witness {} http://127.0.0.1:{}\n",
            witness_key(i).vkey(),
            7380 + i as u16
        ));
    }
    p.push_str(&format!("quorum {quorum}\n"));
    p
}

#[test]
fn leaf_bytes_are_the_specified_canonical_json() {
    let leaf = RegistryLeaf {
        steward: "did:example:steward".into(),
        stream_id: "call-1".into(),
        seal_root: [0xab; 32],
        seal_tree_size: 13,
        seal_hash: [0x01; 32],
    };
    let want = format!(
        "{{\"jc_registry\":\"registry-leaf/1\",\"seal_hash\":\"{}\",\"seal_root\":\"{}\",\
         \"seal_tree_size\":13,\"steward\":\"did:example:steward\",\"stream_id\":\"call-1\"}}",
        "01".repeat(32),
        "ab".repeat(32)
    );
    assert_eq!(String::from_utf8(leaf.encode().unwrap()).unwrap(), want);
    assert_eq!(
        leaf.entry().unwrap(),
        *blake3::hash(want.as_bytes()).as_bytes()
    );
    let empty = RegistryLeaf {
        stream_id: String::new(),
        ..leaf.clone()
    };
    assert_eq!(empty.encode().unwrap_err().code(), "leaf_unencodable");
    let zero = RegistryLeaf {
        seal_tree_size: 0,
        ..leaf
    };
    assert_eq!(zero.encode().unwrap_err().code(), "leaf_unencodable");
}

#[test]
fn only_a_final_seal_makes_a_leaf() {
    let at = UtcSecond::parse("2026-06-05T00:00:00Z").unwrap();
    let mut sealer = StreamSealer::new("call-1", "did:example:steward", 16);
    sealer.append(0, &[1; 32], at).unwrap();
    let open = sealer
        .checkpoint(&steward(), false)
        .unwrap()
        .checkpoint
        .seal;
    assert_eq!(
        RegistryLeaf::of_final_seal(&open).unwrap_err().code(),
        "seal_invalid"
    );
    let done = leaf_of(&final_seal("call-1", 3));
    assert_eq!(
        (done.stream_id.as_str(), done.seal_tree_size),
        ("call-1", 3)
    );
}

#[test]
fn verifier_keys_follow_the_signed_note_key_id_rule() {
    // The Go note package's documented example key.
    let k =
        NoteKey::parse_vkey("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")
            .unwrap();
    assert_eq!(
        (k.name(), k.alg(), k.id()),
        ("PeterNeumann", ALG_ED25519, 0xc74f20a3)
    );
    assert_eq!(
        k.vkey(),
        "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
    );
    let wrong_hash = "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
    assert_eq!(
        NoteKey::parse_vkey(wrong_hash).unwrap_err().code(),
        "verifier_key_invalid"
    );
    // A cosignature key of the same bytes has another key ID (type 0x04).
    assert_ne!(
        witness_key(0).id(),
        key_id(
            witness_key(0).name(),
            ALG_ED25519,
            witness_key(0).key().as_bytes()
        )
    );
}

#[test]
fn a_small_order_key_is_refused_when_it_is_accepted() {
    let mut identity = [0u8; 32];
    identity[0] = 1;
    assert_eq!(
        NoteKey::new("w", ALG_COSIGNATURE_V1, &identity)
            .unwrap_err()
            .code(),
        "verifier_key_invalid"
    );
    assert!(NoteKey::new("w", ALG_COSIGNATURE_V1, witness_key(1).key().as_bytes()).is_ok());
}

/// The reason `NoteKey::new` gives for refusing `key` (always `verifier_key_invalid`).
fn key_refusal(key: &[u8; 32]) -> &'static str {
    match NoteKey::new("w", ALG_ED25519, key).unwrap_err() {
        RegistryError::VerifierKeyInvalid { reason } => reason,
        other => panic!("{other:?}"),
    }
}

/// Signed-note keys follow the one key rule of every signed kind (`ValidKey`): a
/// non-canonical encoding (`y + p`, or the sign bit on `x = 0`) is refused by its encoding, a
/// small-order key and a key with a torsion component by theirs, all `verifier_key_invalid`.
/// Every non-canonical encoding that decompresses is of small or mixed order, so none was
/// accepted before either (then refused as "not a point of prime order"); the reason now names
/// the encoding, as the other signed kinds do.
#[test]
fn verifier_keys_follow_the_one_key_rule() {
    // y = p + 3 (the point y = 3, of mixed order), y = p + 1 (the identity) and the identity
    // with the sign bit of x = 0 set: each decodes to a point, none in its canonical encoding.
    let mut y_plus_p = [0xff; 32];
    y_plus_p[0] = 0xf0;
    y_plus_p[31] = 0x7f;
    let mut one_plus_p = y_plus_p;
    one_plus_p[0] = 0xee;
    let mut signed_identity = [0u8; 32];
    signed_identity[0] = 1;
    signed_identity[31] = 0x80;
    for enc in [y_plus_p, one_plus_p, signed_identity] {
        let key = ed25519_dalek::VerifyingKey::from_bytes(&enc).unwrap();
        assert_ne!(key.to_edwards().compress().0, enc);
        assert_eq!(
            key_refusal(&enc),
            "not the canonical encoding of an Ed25519 public key",
            "{}",
            hex::encode(enc)
        );
    }
    let mut identity = [0u8; 32];
    identity[0] = 1;
    assert_eq!(
        key_refusal(&identity),
        "a small-order (weak) Ed25519 public key"
    );
    // -B = B + (0, -1): the base point plus the point of order 2.
    let mut torsion = [0x99; 32];
    torsion[0] = 0x95;
    assert_eq!(
        key_refusal(&torsion),
        "an Ed25519 public key with a torsion component (not of prime order)"
    );
    // Not a curve point at all.
    let mut off_curve = [0u8; 32];
    off_curve[0] = 2;
    assert_eq!(
        key_refusal(&off_curve),
        "the Ed25519 key is not a point of prime order"
    );
    // The neighbour: a prime-order key in its canonical encoding is accepted.
    let k = NoteKey::new("w", ALG_ED25519, witness_key(1).key().as_bytes()).unwrap();
    assert_eq!(k.valid_key().verifying_key(), witness_key(1).key());
}

#[test]
fn key_names_refuse_spaces_and_plus() {
    for bad in ["", "a b", "a+b", "a\tb"] {
        assert_eq!(
            check_name(bad).unwrap_err().code(),
            "invalid_name",
            "{bad:?}"
        );
    }
    assert!(check_name("registry.example/steward").is_ok());
}

#[test]
fn checkpoint_bodies_have_one_form() {
    let body = CheckpointBody {
        origin: ORIGIN.into(),
        size: 2,
        root: [3; 32],
    };
    assert_eq!(CheckpointBody::parse(body.text().as_bytes()).unwrap(), body);
    for bad in [
        format!("{ORIGIN}\n02\n{}\n", B64.encode([3; 32])),
        format!("{ORIGIN}\n2\n{}\nextension\n", B64.encode([3; 32])),
        format!("{ORIGIN}\n2\n{}", B64.encode([3; 32])),
        format!("{ORIGIN}\n2\n{}\n", B64.encode([3; 31])),
        format!("a b\n2\n{}\n", B64.encode([3; 32])),
    ] {
        assert_eq!(
            CheckpointBody::parse(bad.as_bytes()).unwrap_err().code(),
            "checkpoint_malformed",
            "{bad:?}"
        );
    }
}

#[test]
fn a_checkpoint_note_verifies_under_the_steward_key_only() {
    let mut log = RegistryLog::new(ORIGIN, 16).unwrap();
    log.append(&leaf_of(&final_seal("call-1", 2))).unwrap();
    let note = log.sign_checkpoint(&steward()).unwrap();
    let ok = verify_checkpoint_note(&note, &steward_key(), &[]).unwrap();
    assert_eq!((ok.body.size, ok.body.root), (1, log.body().root));
    // Another key under the same name: the line is unknown, so no steward signature.
    let other = NoteKey::new(ORIGIN, ALG_ED25519, witness_key(0).key().as_bytes()).unwrap();
    assert_eq!(
        verify_checkpoint_note(&note, &other, &[])
            .unwrap_err()
            .code(),
        "steward_signature_missing"
    );
    // Another origin.
    let elsewhere = NoteKey::new(
        "other.example/log",
        ALG_ED25519,
        steward().verifying_key().as_bytes(),
    )
    .unwrap();
    assert_eq!(
        verify_checkpoint_note(&note, &elsewhere, &[])
            .unwrap_err()
            .code(),
        "origin_mismatch"
    );
    // One flipped signature bit.
    let mut bad = note.clone();
    let n = bad.len();
    bad[n - 3] ^= 0x01;
    let code = verify_checkpoint_note(&bad, &steward_key(), &[])
        .unwrap_err()
        .code();
    assert!(
        code == "signature_invalid" || code == "note_malformed",
        "{code}"
    );
}

#[test]
fn cosignatures_verify_and_count_toward_the_quorum() {
    let mut log = RegistryLog::new(ORIGIN, 16).unwrap();
    log.append(&leaf_of(&final_seal("call-1", 2))).unwrap();
    let note = log.sign_checkpoint(&steward()).unwrap();
    let witnesses: Vec<NoteKey> = (0..3).map(witness_key).collect();
    let mut cosigned =
        merge_cosignatures(&note, &cosign(0, &note, 1_790_000_000), &witnesses).unwrap();
    cosigned = merge_cosignatures(&cosigned, &cosign(1, &note, 1_790_000_001), &witnesses).unwrap();
    let v = verify_checkpoint_note(&cosigned, &steward_key(), &witnesses).unwrap();
    assert_eq!(v.cosignatures.len(), 2);
    assert_eq!(
        v.cosignatures[0],
        Cosignature {
            witness: "witness.example/w0".into(),
            timestamp: 1_790_000_000
        }
    );
    let policy = WitnessPolicy::parse(&policy_text(2)).unwrap();
    assert_eq!(
        policy
            .check_quorum(v.cosignatures.iter().map(|c| c.witness.as_str()))
            .unwrap(),
        2
    );
    let strict = WitnessPolicy::parse(&policy_text(3)).unwrap();
    assert_eq!(
        strict
            .check_quorum(v.cosignatures.iter().map(|c| c.witness.as_str()))
            .unwrap_err(),
        RegistryError::QuorumNotMet { have: 2, need: 3 }
    );
    // A witness that answers again (a later submission of the same checkpoint) adds no line:
    // the note keeps its first cosignature.
    let twice =
        merge_cosignatures(&cosigned, &cosign(1, &note, 1_790_000_002), &witnesses).unwrap();
    assert_eq!(twice, cosigned);
    let v2 = verify_checkpoint_note(&twice, &steward_key(), &witnesses).unwrap();
    assert_eq!(
        strict
            .check_quorum(v2.cosignatures.iter().map(|c| c.witness.as_str()))
            .unwrap_err()
            .code(),
        "quorum_not_met"
    );
}

#[test]
fn a_cosignature_over_another_time_or_checkpoint_is_refused() {
    let mut log = RegistryLog::new(ORIGIN, 16).unwrap();
    log.append(&leaf_of(&final_seal("call-1", 2))).unwrap();
    let note = log.sign_checkpoint(&steward()).unwrap();
    let witnesses: Vec<NoteKey> = (0..3).map(witness_key).collect();
    // Signed over t, claimed at t + 1.
    let line = cosign(0, &note, 1_790_000_000);
    let text = std::str::from_utf8(&line).unwrap();
    let b64 = text.trim_end().rsplit(' ').next().unwrap();
    let mut raw = B64.decode(b64).unwrap();
    raw[11] ^= 0x01;
    let forged = format!("— witness.example/w0 {}\n", B64.encode(raw));
    assert_eq!(
        merge_cosignatures(&note, forged.as_bytes(), &witnesses)
            .unwrap_err()
            .code(),
        "signature_invalid"
    );
    // A cosignature of another checkpoint (the next size).
    log.append(&leaf_of(&final_seal("call-2", 2))).unwrap();
    let next = log.sign_checkpoint(&steward()).unwrap();
    assert_eq!(
        merge_cosignatures(&note, &cosign(0, &next, 5), &witnesses)
            .unwrap_err()
            .code(),
        "signature_invalid"
    );
    // A line from a key outside the policy is dropped, not trusted.
    let stranger = merge_cosignatures(&note, &cosign(2, &note, 5), &witnesses[..2]).unwrap();
    assert_eq!(stranger, note);
}

#[test]
fn policies_parse_and_refuse() {
    let p = WitnessPolicy::parse(&policy_text(2)).unwrap();
    assert_eq!((p.witnesses.len(), p.quorum, p.log.name()), (3, 2, ORIGIN));
    assert_eq!(p.witnesses[1].url.as_deref(), Some("http://127.0.0.1:7381"));
    let cases = [
        (policy_text(0), "quorum"),
        (policy_text(1), "quorum of half or fewer"),
        (policy_text(4), "quorum"),
        (policy_text(2).replace("log ", "# "), "no log"),
        (
            format!("{}log {}\n", policy_text(2), steward_key().vkey()),
            "second log",
        ),
        (
            format!("{}witness {}\n", policy_text(2), witness_key(0).vkey()),
            "share",
        ),
        (format!("{}frobnicate 1\n", policy_text(2)), "not a log"),
        (policy_text(2).replacen("http://", "ftp://", 1), "URL"),
        (
            format!(
                "log {}\nwitness {}\nquorum 1\n",
                steward_key().vkey(),
                steward_key().vkey()
            ),
            "0x04",
        ),
    ];
    for (text, why) in cases {
        let err = WitnessPolicy::parse(&text).unwrap_err();
        assert_eq!(err.code(), "policy_malformed", "{why}");
    }
}

/// A witness whose Ed25519 key is the steward's is refused, whichever line comes first and
/// whatever its name: the steward would count as one of its own witnesses.
#[test]
fn a_witness_with_the_log_key_is_refused() {
    let own = NoteKey::new(
        "witness.example/own",
        ALG_COSIGNATURE_V1,
        steward().verifying_key().as_bytes(),
    )
    .unwrap();
    let witnesses = format!(
        "witness {}\nwitness {}\n",
        witness_key(0).vkey(),
        own.vkey()
    );
    let log_first = format!("log {}\n{witnesses}quorum 1\n", steward_key().vkey());
    let log_last = format!("{witnesses}log {}\nquorum 1\n", steward_key().vkey());
    for (text, line) in [(log_first, 3), (log_last, 3)] {
        let err = WitnessPolicy::parse(&text).unwrap_err();
        assert_eq!(err.code(), "policy_malformed");
        assert_eq!(
            err.to_string(),
            format!("policy_malformed: line {line}: a witness key is the log's key")
        );
    }
    // The accepted neighbour: the same policy with the witness under another key.
    let other = format!(
        "log {}\nwitness {}\nwitness {}\nquorum 2\n",
        steward_key().vkey(),
        witness_key(0).vkey(),
        witness_key(1).vkey()
    );
    assert_eq!(WitnessPolicy::parse(&other).unwrap().witnesses.len(), 2);
}

fn registry_with_calls(calls: &[(&str, u8)]) -> (RegistryLog, Vec<Vec<u8>>) {
    let mut log = RegistryLog::new(ORIGIN, 64).unwrap();
    let mut seals = Vec::new();
    for (id, w) in calls {
        let seal = final_seal(id, *w);
        log.append(&leaf_of(&seal)).unwrap();
        seals.push(seal);
    }
    (log, seals)
}

fn cosigned(log: &RegistryLog, witnesses: &[u8]) -> Vec<u8> {
    let keys: Vec<NoteKey> = (0..3).map(witness_key).collect();
    let mut note = log.sign_checkpoint(&steward()).unwrap();
    let plain = note.clone();
    for &w in witnesses {
        note = merge_cosignatures(
            &note,
            &cosign(w, &plain, 1_790_000_000 + u64::from(w)),
            &keys,
        )
        .unwrap();
    }
    note
}

#[test]
fn a_call_proof_round_trips_and_verifies_offline() {
    let (log, seals) = registry_with_calls(&[("call-1", 3), ("call-2", 5), ("call-3", 1)]);
    let proof = CallProof {
        seal_cose: seals[1].clone(),
        index: 1,
        path: log.inclusion_proof(1, 3).unwrap(),
        checkpoint: cosigned(&log, &[0, 2]),
    };
    let bytes = proof.encode();
    assert!(bytes.starts_with(b"c2sp.org/tlog-proof@v1\nextra "));
    let parsed = CallProof::parse(&bytes).unwrap();
    assert_eq!(parsed, proof);
    let policy = WitnessPolicy::parse(&policy_text(2)).unwrap();
    let v = verify_call_proof(&parsed, &policy).unwrap();
    // Cosigned by w0 at ..000 and w2 at ..002, quorum 2: the quorum had cosigned at ..002.
    assert_eq!(
        (v.seal.stream_id.as_str(), v.index, v.witnessed_by()),
        ("call-2", 1, Some(1_790_000_002))
    );
    assert_eq!(v.earliest_cosignature(), Some(1_790_000_000));
}

#[test]
fn a_call_proof_is_refused_when_any_part_is_wrong() {
    let (log, seals) = registry_with_calls(&[("call-1", 3), ("call-2", 5), ("call-3", 1)]);
    let policy = WitnessPolicy::parse(&policy_text(2)).unwrap();
    let good = CallProof {
        seal_cose: seals[1].clone(),
        index: 1,
        path: log.inclusion_proof(1, 3).unwrap(),
        checkpoint: cosigned(&log, &[0, 2]),
    };
    assert!(verify_call_proof(&good, &policy).is_ok());
    let wrong_index = CallProof {
        index: 0,
        ..good.clone()
    };
    assert_eq!(
        verify_call_proof(&wrong_index, &policy).unwrap_err().code(),
        "inclusion_invalid"
    );
    let other_seal = CallProof {
        seal_cose: seals[0].clone(),
        ..good.clone()
    };
    assert_eq!(
        verify_call_proof(&other_seal, &policy).unwrap_err().code(),
        "inclusion_invalid"
    );
    let one_witness = CallProof {
        checkpoint: cosigned(&log, &[1]),
        ..good.clone()
    };
    assert_eq!(
        verify_call_proof(&one_witness, &policy).unwrap_err().code(),
        "quorum_not_met"
    );
    let mut bad_seal = good.seal_cose.clone();
    let n = bad_seal.len();
    bad_seal[n - 1] ^= 1;
    let tampered = CallProof {
        seal_cose: bad_seal,
        ..good.clone()
    };
    assert_eq!(
        verify_call_proof(&tampered, &policy).unwrap_err().code(),
        "seal_invalid"
    );
    // Framing.
    let text = String::from_utf8(good.encode()).unwrap();
    for bad in [
        text.replacen("c2sp.org/tlog-proof@v1", "c2sp.org/tlog-proof@v2", 1),
        text.replacen("index 1", "index 01", 1),
        text.replacen("\nextra ", "\nextra! ", 1),
    ] {
        assert_eq!(
            CallProof::parse(bad.as_bytes()).unwrap_err().code(),
            "proof_malformed"
        );
    }
}

#[test]
fn a_reminted_call_shows_both_leaves() {
    // The steward seals call-1 again without its last window and registers the new seal too.
    let (mut log, _) = registry_with_calls(&[("call-1", 5), ("call-2", 2)]);
    let again = log.append(&leaf_of(&final_seal("call-1", 4))).unwrap();
    assert_eq!(
        again,
        Appended {
            index: 2,
            earlier: vec![0]
        }
    );
    assert_eq!(log.indices_of("call-1"), &[0, 2]);
    assert_eq!(log.reregistered(), vec![("call-1".into(), vec![0, 2])]);
    let (fresh, _) = registry_with_calls(&[("call-1", 5), ("call-2", 2)]);
    assert!(fresh.reregistered().is_empty());
}

#[test]
fn two_checkpoints_of_one_size_with_different_roots_are_a_fork() {
    let (a, _) = registry_with_calls(&[("call-1", 3), ("call-2", 2)]);
    let (b, _) = registry_with_calls(&[("call-1", 3), ("call-9", 2)]);
    let va = verify_checkpoint_note(&a.sign_checkpoint(&steward()).unwrap(), &steward_key(), &[])
        .unwrap();
    let vb = verify_checkpoint_note(&b.sign_checkpoint(&steward()).unwrap(), &steward_key(), &[])
        .unwrap();
    assert_eq!(
        check_no_fork(&va, &vb, &[]).unwrap_err(),
        RegistryError::Fork { size: 2 }
    );
    assert!(check_no_fork(&va, &va.clone(), &[]).is_ok());
    // A larger checkpoint: consistent with a's history, not with b's.
    let (mut c, _) = registry_with_calls(&[("call-1", 3), ("call-2", 2)]);
    c.append(&leaf_of(&final_seal("call-3", 1))).unwrap();
    let vc = verify_checkpoint_note(&c.sign_checkpoint(&steward()).unwrap(), &steward_key(), &[])
        .unwrap();
    let proof = c.consistency_proof(2, 3).unwrap();
    assert!(check_no_fork(&va, &vc, &proof).is_ok());
    assert_eq!(check_no_fork(&vb, &vc, &proof).unwrap_err().code(), "fork");
}

#[test]
fn consistency_proofs_from_zero_are_empty() {
    let (log, _) = registry_with_calls(&[("call-1", 3), ("call-2", 2), ("call-3", 2)]);
    assert!(log.consistency_proof(0, 3).unwrap().is_empty());
    assert!(!log.consistency_proof(1, 3).unwrap().is_empty());
}

/// A final seal under the `steward` label `label`, signed by the steward key.
fn final_seal_labelled(label: &str, stream_id: &str, windows: u8) -> Vec<u8> {
    let at = UtcSecond::parse("2026-06-05T00:00:00Z").unwrap();
    let mut sealer = StreamSealer::new(stream_id, label, 1 << 10);
    for w in 0..windows {
        sealer
            .append(u64::from(w), blake3::hash(&[w]).as_bytes(), at)
            .unwrap();
    }
    sealer
        .checkpoint(&steward(), true)
        .unwrap()
        .checkpoint
        .cose_sign1
}

/// The key holder chooses the seal's `steward` label: a call re-minted under another label is
/// still the same stream of the same key, and is listed as registered twice.
#[test]
fn a_call_reminted_under_another_label_is_still_a_reregistration() {
    let (mut log, _) = registry_with_calls(&[("call-1", 5), ("call-2", 2)]);
    let again = log
        .append(&leaf_of(&final_seal_labelled(
            "did:example:other",
            "call-1",
            4,
        )))
        .unwrap();
    assert_eq!(again.earlier, vec![0]);
    assert_eq!(log.indices_of("call-1"), &[0, 2]);
    assert_eq!(log.reregistered(), vec![("call-1".into(), vec![0, 2])]);
    // Accepted neighbour: another stream id under another label is another call.
    let (mut fresh, _) = registry_with_calls(&[("call-1", 5)]);
    let other = fresh
        .append(&leaf_of(&final_seal_labelled(
            "did:example:other",
            "call-3",
            4,
        )))
        .unwrap();
    assert!(other.earlier.is_empty());
    assert!(fresh.reregistered().is_empty());
}

/// `n` cosignature lines of witness `i` over `note`, each valid, at times t0, t0 + 1, ...
fn flood(i: u8, note: &[u8], n: u64, t0: u64) -> Vec<u8> {
    (0..n).flat_map(|k| cosign(i, note, t0 + k)).collect()
}

/// A witness below the quorum answers `add-checkpoint` with a hundred valid lines of its own
/// key (a stand-in for a hostile witness: the real one sends one line). The note keeps one line
/// of it, stays within its bounds, and the honest witnesses' lines merged after it count.
#[test]
fn a_witness_that_floods_its_answer_adds_one_line() {
    let mut log = RegistryLog::new(ORIGIN, 16).unwrap();
    log.append(&leaf_of(&final_seal("call-1", 2))).unwrap();
    let note = log.sign_checkpoint(&steward()).unwrap();
    let witnesses: Vec<NoteKey> = (0..3).map(witness_key).collect();
    let answer = flood(0, &note, 100, 1_790_000_000);
    let merged = merge_cosignatures(&note, &answer, &witnesses[..1]).unwrap();
    let lines = |n: &[u8]| {
        n.split(|&b| b == b'\n')
            .filter(|l| l.starts_with("—".as_bytes()))
            .count()
    };
    assert_eq!(
        lines(&merged),
        2,
        "the steward's line and one of the witness"
    );
    let merged =
        merge_cosignatures(&merged, &cosign(1, &note, 1_790_000_100), &witnesses[1..2]).unwrap();
    let merged =
        merge_cosignatures(&merged, &cosign(2, &note, 1_790_000_200), &witnesses[2..]).unwrap();
    // The same flood again (a later `registry witness`) adds nothing.
    let again = merge_cosignatures(&merged, &answer, &witnesses[..1]).unwrap();
    assert_eq!(again, merged);
    let v = verify_checkpoint_note(&merged, &steward_key(), &witnesses).unwrap();
    assert_eq!(v.cosignatures.len(), 3);
    assert_eq!(v.cosignatures[0].timestamp, 1_790_000_000);
    let policy = WitnessPolicy::parse(&policy_text(2)).unwrap();
    assert_eq!(
        policy
            .check_quorum(v.cosignatures.iter().map(|c| c.witness.as_str()))
            .unwrap(),
        3
    );
    // An answer's lines of another policy witness are not the answering witness's: dropped.
    let relayed = merge_cosignatures(&note, &cosign(1, &note, 5), &witnesses[..1]).unwrap();
    assert_eq!(relayed, note);
}

/// Signature lines of keys outside the policy, to fill a note.
fn stranger_lines(note: &[u8], n: usize) -> Vec<u8> {
    let mut out = note.to_vec();
    for k in 0..n {
        let s = SoftwareSigner::from_seed(&[200; 32]);
        let name = format!("stranger.example/s{k}");
        let key = NoteKey::new(&name, ALG_COSIGNATURE_V1, s.verifying_key().as_bytes()).unwrap();
        let mut raw = key.id().to_be_bytes().to_vec();
        raw.extend_from_slice(&[7u8; 72]);
        out.extend_from_slice(format!("— {name} {}\n", B64.encode(raw)).as_bytes());
    }
    out
}

/// At most 64 signature lines, counted in the signature block: 65 are refused, 64 accepted,
/// and an em dash in the origin is not a signature line.
#[test]
fn a_note_has_at_most_64_signature_lines() {
    let mut log = RegistryLog::new(ORIGIN, 16).unwrap();
    log.append(&leaf_of(&final_seal("call-1", 2))).unwrap();
    let note = log.sign_checkpoint(&steward()).unwrap();
    let full = stranger_lines(&note, 63);
    let v = verify_checkpoint_note(&full, &steward_key(), &[]).unwrap();
    assert!(v.cosignatures.is_empty());
    let over = stranger_lines(&note, 64);
    assert_eq!(
        verify_checkpoint_note(&over, &steward_key(), &[])
            .unwrap_err()
            .to_string(),
        "note_malformed: more than 64 signature lines"
    );
    // A witness's answer cannot take a full note past the bound.
    let witnesses: Vec<NoteKey> = (0..3).map(witness_key).collect();
    assert_eq!(
        merge_cosignatures(&full, &cosign(0, &note, 5), &witnesses)
            .unwrap_err()
            .code(),
        "note_malformed"
    );
    // The origin's em dashes are text, not signature lines.
    let dashed = "registry.example/\u{2014}\u{2014}";
    let key = NoteKey::new(dashed, ALG_ED25519, steward().verifying_key().as_bytes()).unwrap();
    let mut log = RegistryLog::new(dashed, 16).unwrap();
    log.append(&leaf_of(&final_seal("call-1", 2))).unwrap();
    let note = stranger_lines(&log.sign_checkpoint(&steward()).unwrap(), 63);
    assert!(verify_checkpoint_note(&note, &key, &[]).is_ok());
}

/// Every line of a trusted key must verify: a second, invalid line of a witness after its
/// valid one is refused (signed-note implementations skip it). Its accepted neighbour: a second
/// valid line counts once, at the earlier time.
#[test]
fn a_second_invalid_line_of_a_trusted_witness_is_refused() {
    let mut log = RegistryLog::new(ORIGIN, 16).unwrap();
    log.append(&leaf_of(&final_seal("call-1", 2))).unwrap();
    let note = log.sign_checkpoint(&steward()).unwrap();
    let witnesses: Vec<NoteKey> = (0..3).map(witness_key).collect();
    let mut valid_twice = note.clone();
    valid_twice.extend_from_slice(&cosign(0, &note, 1_790_000_009));
    valid_twice.extend_from_slice(&cosign(0, &note, 1_790_000_001));
    let v = verify_checkpoint_note(&valid_twice, &steward_key(), &witnesses).unwrap();
    assert_eq!(
        v.cosignatures,
        vec![Cosignature {
            witness: "witness.example/w0".into(),
            timestamp: 1_790_000_001
        }]
    );
    let mut second = cosign(0, &note, 1_790_000_001);
    let text = String::from_utf8(second.clone()).unwrap();
    let b64 = text.trim_end().rsplit(' ').next().unwrap();
    let mut raw = B64.decode(b64).unwrap();
    raw[20] ^= 0x01;
    second = format!("— witness.example/w0 {}\n", B64.encode(raw)).into_bytes();
    let mut bad = note.clone();
    bad.extend_from_slice(&cosign(0, &note, 1_790_000_000));
    bad.extend_from_slice(&second);
    assert_eq!(
        verify_checkpoint_note(&bad, &steward_key(), &witnesses).unwrap_err(),
        RegistryError::SignatureInvalid {
            name: "witness.example/w0".into()
        }
    );
    // Not a policy witness: its lines are not checked (the verifier's set of keys is empty).
    assert!(verify_checkpoint_note(&bad, &steward_key(), &[]).is_ok());
}

/// Base64 with non-zero trailing bits is not the one encoding of its bytes: refused in
/// signature lines (C2SP signed-note is strict base64).
#[test]
fn base64_with_nonzero_trailing_bits_is_refused() {
    let mut log = RegistryLog::new(ORIGIN, 16).unwrap();
    log.append(&leaf_of(&final_seal("call-1", 2))).unwrap();
    let note = log.sign_checkpoint(&steward()).unwrap();
    let witnesses: Vec<NoteKey> = (0..3).map(witness_key).collect();
    let line = cosign(0, &note, 1_790_000_000);
    let text = String::from_utf8(line.clone()).unwrap();
    // 76 bytes: the last group is one byte, "xy==", whose second character has 4 unused bits.
    let pad = text.rfind("==").unwrap();
    let mut loose = text.clone().into_bytes();
    let c = loose[pad - 1];
    loose[pad - 1] = if c == b'A' || c == b'Q' || c == b'g' || c == b'w' {
        c + 1
    } else {
        c - 1
    };
    let mut with_loose = note.clone();
    with_loose.extend_from_slice(&loose);
    assert_eq!(
        verify_checkpoint_note(&with_loose, &steward_key(), &witnesses)
            .unwrap_err()
            .code(),
        "note_malformed"
    );
    let mut with_strict = note.clone();
    with_strict.extend_from_slice(&line);
    assert!(verify_checkpoint_note(&with_strict, &steward_key(), &witnesses).is_ok());
}

/// One witness outside the quorum that backdates its cosignature (to 1970) does not set the
/// time the call existed by: the quorum's time does.
#[test]
fn the_existed_by_time_is_the_quorums() {
    let (log, seals) = registry_with_calls(&[("call-1", 3), ("call-2", 5)]);
    let keys: Vec<NoteKey> = (0..3).map(witness_key).collect();
    let plain = log.sign_checkpoint(&steward()).unwrap();
    let mut note = merge_cosignatures(&plain, &cosign(0, &plain, 0), &keys).unwrap();
    note = merge_cosignatures(&note, &cosign(1, &plain, 1_790_000_100), &keys).unwrap();
    note = merge_cosignatures(&note, &cosign(2, &plain, 1_790_000_200), &keys).unwrap();
    let proof = CallProof {
        seal_cose: seals[1].clone(),
        index: 1,
        path: log.inclusion_proof(1, 2).unwrap(),
        checkpoint: note,
    };
    let v = verify_call_proof(&proof, &WitnessPolicy::parse(&policy_text(2)).unwrap()).unwrap();
    assert_eq!(v.earliest_cosignature(), Some(0));
    assert_eq!(v.witnessed_by(), Some(1_790_000_100));
    let all = verify_call_proof(&proof, &WitnessPolicy::parse(&policy_text(3)).unwrap()).unwrap();
    assert_eq!(all.witnessed_by(), Some(1_790_000_200));
}

fn policy_of_n(n: u8, quorum: usize) -> String {
    let mut p = format!("log {}\n", steward_key().vkey());
    for i in 0..n {
        p.push_str(&format!("witness {}\n", witness_key(i).vkey()));
    }
    p.push_str(&format!("quorum {quorum}\n"));
    p
}

/// A quorum of half the witnesses or fewer lets two disjoint sets of honest witnesses cosign
/// two forks (2 of 4 did): refused. Over half: accepted.
#[test]
fn a_quorum_must_exceed_half_the_witnesses() {
    for (n, q) in [(4, 2), (3, 1), (2, 1), (6, 3), (63, 31)] {
        let err = WitnessPolicy::parse(&policy_of_n(n, q)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "policy_malformed: line 0: the quorum is more than half the witnesses (else two forks can each reach one)",
            "{q} of {n}"
        );
    }
    for (n, q) in [(4, 3), (3, 2), (2, 2), (1, 1), (63, 32)] {
        assert_eq!(WitnessPolicy::parse(&policy_of_n(n, q)).unwrap().quorum, q);
    }
}

/// At most 63 witnesses: with the steward's line, a note carrying every witness's cosignature
/// has 64 lines, the bound.
#[test]
fn a_policy_names_at_most_63_witnesses() {
    let err = WitnessPolicy::parse(&policy_of_n(64, 33)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "policy_malformed: line 65: more than 63 witnesses"
    );
    let full = WitnessPolicy::parse(&policy_of_n(63, 32)).unwrap();
    // All 63 cosign: the note holds 64 lines and verifies.
    let mut log = RegistryLog::new(ORIGIN, 16).unwrap();
    log.append(&leaf_of(&final_seal("call-1", 2))).unwrap();
    let plain = log.sign_checkpoint(&steward()).unwrap();
    let mut note = plain.clone();
    for i in 0..63 {
        note = merge_cosignatures(&note, &cosign(i, &plain, 5), &full.witness_keys()).unwrap();
    }
    let v = verify_checkpoint_note(&note, &steward_key(), &full.witness_keys()).unwrap();
    assert_eq!(
        full.check_quorum(v.cosignatures.iter().map(|c| c.witness.as_str()))
            .unwrap(),
        63
    );
}

/// `cosignature_line` makes the line a witness answers with: it merges and verifies; under a
/// key that is not the signer's, or of the steward's type, it is refused.
#[test]
fn a_cosignature_line_is_what_a_witness_answers() {
    let mut log = RegistryLog::new(ORIGIN, 16).unwrap();
    log.append(&leaf_of(&final_seal("call-1", 2))).unwrap();
    let note = log.sign_checkpoint(&steward()).unwrap();
    let (_, signer) = witness(1);
    let line = cosignature_line(&note, &witness_key(1), &signer, 1_790_000_001).unwrap();
    assert_eq!(line, cosign(1, &note, 1_790_000_001));
    let keys: Vec<NoteKey> = (0..3).map(witness_key).collect();
    let merged = merge_cosignatures(&note, &line, &keys).unwrap();
    let v = verify_checkpoint_note(&merged, &steward_key(), &keys).unwrap();
    assert_eq!(v.cosignatures[0].witness, "witness.example/w1");
    assert_eq!(
        cosignature_line(&note, &witness_key(0), &signer, 5)
            .unwrap_err()
            .code(),
        "verifier_key_invalid"
    );
    assert_eq!(
        cosignature_line(&note, &witness_key(1), &signer, 1 << 63)
            .unwrap_err()
            .code(),
        "note_malformed"
    );
}
