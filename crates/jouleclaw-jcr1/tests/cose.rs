//! COSE_Sign1 signing and verification: signed vectors, negatives, peers, batch, key files.
//! (A module of the crate's one test binary, `tests/it`, kept at the path
//! `conformance/stream-window-signed-vectors.json`, generated here, names.)

use crate::common::*;
use coset::cbor::value::Value;
use coset::{CoseSign1, Header, HeaderBuilder, TaggedCborSerializable, iana};
use jouleclaw_jcr1::cose::{self, CoseRefusal, Signer, SingleKey, SoftwareSigner};
use jouleclaw_jcr1::*;
use jouleclaw_testkit::{or_not_run, repo};
use proptest::prelude::*;
use serde_json::json;

fn test_key() -> SoftwareSigner {
    SoftwareSigner::rfc8032_test_key()
}

fn resolver() -> SingleKey {
    SingleKey::new(test_key().verifying_key())
}

/// Every receipt vector we publish: the seed's three, then the extended ones.
/// (`None` in a crate built alone.)
fn all_receipts() -> Option<Vec<(u64, String, StreamWindowReceipt)>> {
    let mut v = (1..=3)
        .map(|n| Some((n as u64, format!("seed vector {n}"), seed_receipt(n)?)))
        .collect::<Option<Vec<_>>>()?;
    for (n, d, r) in extended_vectors() {
        v.push((n, format!("extended vector {n}: {d}"), r));
    }
    Some(v)
}

fn flip(mut b: Vec<u8>, at: usize) -> Vec<u8> {
    b[at] ^= 0x01;
    b
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("needle")
}

/// Signs `payload` with `signer` under custom protected/unprotected headers.
fn signed_with(
    signer: &dyn Signer,
    protected: Header,
    unprotected: Header,
    payload: Vec<u8>,
) -> Vec<u8> {
    cose::sign1(signer, protected, unprotected, payload)
        .unwrap()
        .cose_sign1
}

/// Signs over raw protected-header bytes (for encodings coset would not produce).
fn signed_raw_protected(signer: &dyn Signer, protected: Vec<u8>, payload: Vec<u8>) -> Vec<u8> {
    let tbs = coset::sig_structure_data(
        coset::SignatureContext::CoseSign1,
        coset::ProtectedHeader {
            original_data: Some(protected.clone()),
            header: Header::default(),
        },
        None,
        b"",
        &payload,
    );
    let sig = signer.sign(&tbs).unwrap();
    let arr = Value::Array(vec![
        Value::Bytes(protected),
        Value::Map(vec![]),
        Value::Bytes(payload),
        Value::Bytes(sig.to_vec()),
    ]);
    let mut out = Vec::new();
    coset::cbor::ser::into_writer(&Value::Tag(18, Box::new(arr)), &mut out).unwrap();
    out
}

fn base_header(r: &StreamWindowReceipt) -> HeaderBuilder {
    let kid = cose::kid(&test_key().verifying_key());
    let h = cose::protected_header(&r.steward, &r.id(), &kid);
    let mut b = HeaderBuilder::new()
        .key_id(kid.to_vec())
        .content_type(cose::CONTENT_TYPE.to_owned());
    b = b.value(15, h.rest[0].1.clone());
    b
}

/// (`None` in a crate built alone.)
fn negatives() -> Option<Vec<(String, Vec<u8>, &'static str)>> {
    let key = test_key();
    let r = seed_receipt(1)?;
    let good = cose::sign_receipt(&key, &r).unwrap();
    let payload = good.payload.clone();
    let g = good.cose_sign1.clone();
    let mut n: Vec<(String, Vec<u8>, &'static str)> = Vec::new();
    let pay_at = find(&g, b"stream-demo:0001");
    n.push((
        "tampered payload (one byte of the receipt id)".into(),
        flip(g.clone(), pay_at + 5),
        "cose_bad_signature",
    ));
    let prot_at = find(&g, b"did:keri");
    n.push((
        "tampered protected header (one byte of the CWT issuer)".into(),
        flip(g.clone(), prot_at + 2),
        "cose_bad_signature",
    ));
    n.push((
        "flipped signature bit".into(),
        flip(g.clone(), g.len() - 1),
        "cose_bad_signature",
    ));
    let other = SoftwareSigner::from_seed(&[7u8; 32]);
    let forged = cose::sign1(
        &other,
        cose::protected_header(&r.steward, &r.id(), &cose::kid(&key.verifying_key())),
        Header::default(),
        payload.clone(),
    )
    .unwrap();
    n.push((
        "signed with another key under the test key's kid".into(),
        forged.cose_sign1,
        "cose_bad_signature",
    ));
    n.push((
        "signed with another key under its own kid".into(),
        cose::sign_receipt(&other, &r).unwrap().cose_sign1,
        "cose_unknown_kid",
    ));
    n.push((
        "untagged COSE_Sign1".into(),
        g[1..].to_vec(),
        "cose_untagged",
    ));
    let mut wrong = vec![0xd8, 0x62];
    wrong.extend_from_slice(&g[1..]);
    n.push(("wrong tag (98, COSE_Sign)".into(), wrong, "cose_wrong_tag"));
    let es256 = base_header(&r).algorithm(iana::Algorithm::ES256).build();
    n.push((
        "alg -7 (ES256)".into(),
        signed_with(&key, es256, Header::default(), payload.clone()),
        "cose_alg_not_eddsa",
    ));
    let ed25519 = base_header(&r).algorithm(iana::Algorithm::Ed25519).build();
    n.push((
        "alg -19 (Ed25519, fully specified)".into(),
        signed_with(&key, ed25519, Header::default(), payload.clone()),
        "cose_alg_not_eddsa",
    ));
    let unprot_alg = HeaderBuilder::new()
        .algorithm(iana::Algorithm::EdDSA)
        .build();
    n.push((
        "alg also in the unprotected header".into(),
        signed_with(
            &key,
            cose::protected_header(&r.steward, &r.id(), &cose::kid(&key.verifying_key())),
            unprot_alg,
            payload.clone(),
        ),
        "cose_alg_unprotected",
    ));
    let unprot_kid = HeaderBuilder::new()
        .key_id(cose::kid(&key.verifying_key()).to_vec())
        .build();
    n.push((
        "kid in the unprotected header".into(),
        signed_with(
            &key,
            cose::protected_header(&r.steward, &r.id(), &cose::kid(&key.verifying_key())),
            unprot_kid,
            payload.clone(),
        ),
        "cose_kid_unprotected",
    ));
    let crit = base_header(&r)
        .algorithm(iana::Algorithm::EdDSA)
        .add_critical(iana::HeaderParameter::Alg)
        .build();
    n.push((
        "crit present".into(),
        signed_with(&key, crit, Header::default(), payload.clone()),
        "cose_crit_present",
    ));
    let extra = base_header(&r)
        .algorithm(iana::Algorithm::EdDSA)
        .value(33, Value::from(1))
        .build();
    n.push((
        "unknown protected label 33".into(),
        signed_with(&key, extra, Header::default(), payload.clone()),
        "cose_unknown_protected_label",
    ));
    let ctype = cose::protected_header(&r.steward, &r.id(), &cose::kid(&key.verifying_key()));
    let ctype = Header {
        content_type: Some(coset::ContentType::Text("application/json".into())),
        ..ctype
    };
    n.push((
        "content type application/json".into(),
        signed_with(&key, ctype, Header::default(), payload.clone()),
        "cose_content_type_mismatch",
    ));
    let pretty =
        serde_json::to_vec_pretty(&serde_json::from_slice::<serde_json::Value>(&payload).unwrap())
            .unwrap();
    n.push((
        "validly signed, non-canonical (pretty-printed) payload".into(),
        signed_with(
            &key,
            cose::protected_header(&r.steward, &r.id(), &cose::kid(&key.verifying_key())),
            Header::default(),
            pretty,
        ),
        "cose_payload_refused",
    ));
    n.push((
        "iss differs from the receipt's steward".into(),
        signed_with(
            &key,
            cose::protected_header(
                "did:keri:someone-else",
                &r.id(),
                &cose::kid(&key.verifying_key()),
            ),
            Header::default(),
            payload.clone(),
        ),
        "cose_iss_mismatch",
    ));
    n.push((
        "sub differs from the receipt's id".into(),
        signed_with(
            &key,
            cose::protected_header(
                &r.steward,
                "stream-demo:0002",
                &cose::kid(&key.verifying_key()),
            ),
            Header::default(),
            payload.clone(),
        ),
        "cose_sub_mismatch",
    ));
    // Protected header with label 15 before label 4: same content, non-deterministic order.
    let kid = cose::kid(&key.verifying_key());
    let cwt = Value::Map(vec![
        (Value::from(1), Value::Text(r.steward.clone())),
        (Value::from(2), Value::Text(r.id())),
    ]);
    let map = Value::Map(vec![
        (Value::from(1), Value::from(-8)),
        (Value::from(3), Value::Text(cose::CONTENT_TYPE.into())),
        (Value::from(15), cwt),
        (Value::from(4), Value::Bytes(kid.to_vec())),
    ]);
    let mut raw = Vec::new();
    coset::cbor::ser::into_writer(&map, &mut raw).unwrap();
    n.push((
        "protected labels out of order (15 before 4)".into(),
        signed_raw_protected(&key, raw, payload.clone()),
        "cose_protected_not_canonical",
    ));
    let plen = u16::try_from(payload.len()).unwrap().to_be_bytes();
    let len_at = find(&g, &[0x59, plen[0], plen[1]]); // payload: bytes(n), two-byte length
    let mut long = g[..len_at].to_vec();
    long.extend_from_slice(&[0x5a, 0x00, 0x00, plen[0], plen[1]]); // the same length in four bytes
    long.extend_from_slice(&g[len_at + 3..]);
    n.push((
        "payload length in a longer form than needed".into(),
        long,
        "cose_envelope_not_canonical",
    ));
    let mut indefinite = g[..len_at].to_vec();
    indefinite.push(0x5f); // indefinite-length bytes: one chunk, then break
    indefinite.extend_from_slice(&g[len_at..len_at + 3 + payload.len()]);
    indefinite.push(0xff);
    indefinite.extend_from_slice(&g[len_at + 3 + payload.len()..]);
    n.push((
        "payload as an indefinite-length byte string".into(),
        indefinite,
        "cose_envelope_not_canonical",
    ));
    let mut detached = CoseSign1::from_tagged_slice(&g).unwrap();
    detached.payload = None;
    n.push((
        "detached payload".into(),
        detached.to_tagged_vec().unwrap(),
        "cose_payload_detached",
    ));
    let mut trailing = g.clone();
    trailing.push(0x00);
    n.push((
        "a byte after the COSE_Sign1".into(),
        trailing,
        "cose_malformed",
    ));
    n.push((
        "truncated COSE_Sign1".into(),
        g[..g.len() - 10].to_vec(),
        "cose_malformed",
    ));
    n.push(("empty input".into(), Vec::new(), "cose_malformed"));
    Some(n)
}

/// (`None` in a crate built alone.)
fn build_signed_vectors() -> Option<serde_json::Value> {
    let key = test_key();
    let vk = key.verifying_key();
    let vectors: Vec<_> = all_receipts()?
        .into_iter()
        .map(|(n, d, r)| {
            let s = cose::sign_receipt(&key, &r).unwrap();
            json!({
                "n": n,
                "description": d,
                "content_hash": blake3::hash(&s.payload).to_hex().to_string(),
                "payload_hex": hex::encode(&s.payload),
                "protected_hex": hex::encode(&s.protected),
                "to_be_signed_hex": hex::encode(&s.to_be_signed),
                "signature_hex": hex::encode(s.signature),
                "cose_sign1_hex": hex::encode(&s.cose_sign1),
            })
        })
        .collect();
    let negative: Vec<_> = negatives()?
        .into_iter()
        .enumerate()
        .map(|(i, (d, b, code))| json!({"n": i + 1, "description": d, "cose_sign1_hex": hex::encode(b), "expect_refusal": code}))
        .collect();
    Some(json!({
        "_comment": "stream-window/1 receipts signed as tagged COSE_Sign1 under spec/JCR1-COSE-PROFILE.md with the RFC 8032 section 7.1 TEST 1 key (Ed25519 is deterministic, so every byte is reproducible). Owned by jouleclaw-rs; generated by crates/jouleclaw-jcr1/tests/cose.rs. expect_refusal codes are the Rust verifier's; other verifiers need only refuse.",
        "profile": {
            "content_type": cose::CONTENT_TYPE,
            "protected_labels": "1: alg -8 (EdDSA), 3: content type, 4: kid (RFC 9679 thumbprint, SHA-256), 15: CWT claims {1: steward, 2: receipt id}",
            "external_aad_hex": "",
        },
        "key": {
            "seed_hex": hex::encode(cose::RFC8032_TEST1_SEED),
            "public_key_hex": hex::encode(vk.as_bytes()),
            "kid_hex": hex::encode(cose::kid(&vk)),
        },
        "vectors": vectors,
        "negative": negative,
    }))
}

#[test]
fn signed_vectors_are_current_and_reproduce_byte_exactly() {
    let doc = or_not_run!(current(
        "stream-window-signed-vectors.json",
        &or_not_run!(build_signed_vectors())
    ));
    let key = test_key();
    assert_eq!(
        doc["key"]["public_key_hex"],
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    );
    let vectors = doc["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 7);
    for v in vectors {
        let payload = hex::decode(v["payload_hex"].as_str().unwrap()).unwrap();
        let r = decode_receipt(&payload).unwrap();
        let s = cose::sign_receipt(&key, &r).unwrap();
        assert_eq!(
            hex::encode(&s.cose_sign1),
            v["cose_sign1_hex"].as_str().unwrap()
        );
        assert_eq!(
            hex::encode(&s.protected),
            v["protected_hex"].as_str().unwrap()
        );
        assert_eq!(
            hex::encode(&s.to_be_signed),
            v["to_be_signed_hex"].as_str().unwrap()
        );
        assert_eq!(
            hex::encode(s.signature),
            v["signature_hex"].as_str().unwrap()
        );
        assert_eq!(
            cose::to_be_signed(&r, &key.verifying_key()).unwrap(),
            s.to_be_signed
        );
        let bytes = hex::decode(v["cose_sign1_hex"].as_str().unwrap()).unwrap();
        let ok = cose::verify(&bytes, &resolver()).unwrap();
        assert_eq!(ok.receipt, r);
        assert_eq!(
            ok.content_hash.to_hex().as_str(),
            v["content_hash"].as_str().unwrap()
        );
    }
    // Seed vector 1's content hash is the seed's.
    assert_eq!(
        vectors[0]["content_hash"],
        "ee359043b4fc4a4b25b7cd5f47c631f0c675a478e3b4c3883bc908fb00948615"
    );
}

#[test]
fn every_negative_vector_is_refused_with_its_code() {
    let doc = or_not_run!(read_json("stream-window-signed-vectors.json"));
    let neg = doc["negative"].as_array().unwrap();
    assert!(neg.len() >= 13);
    for c in neg {
        let bytes = hex::decode(c["cose_sign1_hex"].as_str().unwrap()).unwrap();
        let err = cose::verify(&bytes, &resolver()).expect_err(c["description"].as_str().unwrap());
        assert_eq!(
            err.as_str(),
            c["expect_refusal"].as_str().unwrap(),
            "{}",
            c["description"]
        );
        // The batch path agrees item by item.
        let batch = cose::verify_batch(&[&bytes], &resolver());
        assert_eq!(batch[0].as_ref().unwrap_err(), &err);
    }
}

#[test]
fn protected_header_bytes_are_annotated() {
    let r = or_not_run!(seed_receipt(1));
    let kid = cose::kid(&test_key().verifying_key());
    let s = cose::sign_receipt(&test_key(), &r).unwrap();
    let mut want = String::new();
    want += "a4"; // map(4)
    want += "0127"; // 1 (alg): -8 (EdDSA)
    want += "03782c"; // 3 (content type): text(44)
    want += &hex::encode(cose::CONTENT_TYPE);
    want += "045820"; // 4 (kid): bytes(32)
    want += &hex::encode(kid);
    want += "0fa2"; // 15 (CWT claims): map(2)
    want += "017829"; // 1 (iss): text(41)
    want += &hex::encode(&r.steward);
    want += "0270"; // 2 (sub): text(16)
    want += &hex::encode(r.id());
    assert_eq!(hex::encode(&s.protected), want);
    // kid = SHA-256(a3 01 01 20 06 21 58 20 || x), RFC 9679.
    use sha2::Digest;
    let mut pre = hex::decode("a401012006215820").unwrap();
    pre[0] = 0xa3;
    pre.extend_from_slice(test_key().verifying_key().as_bytes());
    assert_eq!(kid.to_vec(), sha2::Sha256::digest(&pre).to_vec());
}

#[test]
fn batch_names_exactly_the_bad_items() {
    let key = test_key();
    let all = or_not_run!(all_receipts());
    let mut items: Vec<Vec<u8>> = all
        .iter()
        .map(|(_, _, r)| cose::sign_receipt(&key, r).unwrap().cose_sign1)
        .collect();
    let n = items.len();
    let all_ok = cose::verify_batch(
        &items.iter().map(Vec::as_slice).collect::<Vec<_>>(),
        &resolver(),
    );
    assert!(all_ok.iter().all(Result::is_ok));
    let last = items[4].len() - 1;
    items[4][last] ^= 1; // bad signature
    items[1] = items[1][1..].to_vec(); // untagged
    let results = cose::verify_batch(
        &items.iter().map(Vec::as_slice).collect::<Vec<_>>(),
        &resolver(),
    );
    assert_eq!(results.len(), n);
    for (i, r) in results.iter().enumerate() {
        match i {
            1 => assert_eq!(r.as_ref().unwrap_err(), &CoseRefusal::Untagged),
            4 => assert_eq!(r.as_ref().unwrap_err(), &CoseRefusal::BadSignature),
            _ => assert_eq!(r.as_ref().unwrap().receipt, all[i].2, "item {i}"),
        }
    }
    assert!(cose::verify_batch(&[], &resolver()).is_empty());
}

#[test]
fn cose_wg_eddsa_vector_is_reproduced_and_verifies_but_is_outside_the_profile() {
    let v: serde_json::Value = serde_json::from_str(&or_not_run!(repo::file(
        "conformance/cose-wg/eddsa-sig-01.json"
    )))
    .unwrap();
    let seed: [u8; 32] = hex::decode(v["input"]["sign0"]["key"]["d_hex"].as_str().unwrap())
        .unwrap()
        .try_into()
        .unwrap();
    let key = SoftwareSigner::from_seed(&seed);
    let mut protected = HeaderBuilder::new()
        .algorithm(iana::Algorithm::EdDSA)
        .build();
    // The vector's "ctyp": 0 is CoAP content format 0, text/plain;charset=utf-8.
    protected.content_type = Some(coset::ContentType::Assigned(
        iana::CoapContentFormat::TextPlainUtf8,
    ));
    let unprotected = HeaderBuilder::new().key_id(b"11".to_vec()).build();
    let payload = v["input"]["plaintext"]
        .as_str()
        .unwrap()
        .as_bytes()
        .to_vec();
    let s = cose::sign1(&key, protected, unprotected, payload).unwrap();
    let want = v["output"]["cbor"].as_str().unwrap().to_lowercase();
    assert_eq!(hex::encode(&s.cose_sign1), want);
    assert_eq!(
        hex::encode(&s.to_be_signed),
        v["intermediates"]["ToBeSign_hex"]
            .as_str()
            .unwrap()
            .to_lowercase()
    );
    let bytes = hex::decode(&want).unwrap();
    assert!(cose::verify_sign1_signature_only(
        &bytes,
        &key.verifying_key()
    ));
    assert!(!cose::verify_sign1_signature_only(
        &flip(bytes.clone(), 30),
        &key.verifying_key()
    ));
    // Under the receipt profile: the kid sits in the unprotected header.
    assert_eq!(
        cose::verify(&bytes, &SingleKey::new(key.verifying_key())).unwrap_err(),
        CoseRefusal::KidUnprotected
    );
}

#[test]
fn cose_wg_failure_and_untagged_cases_are_refused_under_the_profile() {
    let key = SingleKey::new(test_key().verifying_key());
    for (file, code) in [
        ("sign-fail-01.json", "cose_wrong_tag"),
        // The cose-wg examples carry their kid in the unprotected header, which the profile
        // refuses before it looks at the (ES256) algorithm.
        ("sign-fail-02.json", "cose_kid_unprotected"),
        // alg -999 is neither registered nor private-use: not a parseable COSE header.
        ("sign-fail-03.json", "cose_malformed"),
        ("sign-fail-04.json", "cose_kid_unprotected"),
        ("sign-fail-06.json", "cose_kid_unprotected"),
        ("sign-fail-07.json", "cose_kid_unprotected"),
        ("sign-pass-01.json", "cose_alg_unprotected"),
        ("sign-pass-02.json", "cose_kid_unprotected"),
        ("sign-pass-03.json", "cose_untagged"),
    ] {
        let v: serde_json::Value = serde_json::from_str(&or_not_run!(repo::file(&format!(
            "conformance/cose-wg/{file}"
        ))))
        .unwrap();
        let bytes = hex::decode(v["output"]["cbor"].as_str().unwrap()).unwrap();
        assert_eq!(
            cose::verify(&bytes, &key).unwrap_err().as_str(),
            code,
            "{file}"
        );
    }
}

#[test]
fn key_files() {
    let text = format!(
        "jouleclaw-ed25519-secret-key {}\n",
        hex::encode(cose::RFC8032_TEST1_SEED)
    );
    let k = SoftwareSigner::from_key_file_text(&text).unwrap();
    assert_eq!(k.verifying_key(), test_key().verifying_key());
    assert_eq!(k.key_file_text().as_str(), text);
    assert!(SoftwareSigner::from_key_file_text(text.trim_end()).is_ok());
    for bad in [
        text.to_uppercase(),
        format!("{text}\n"),
        format!(" {}", text.trim_end()),
        text[..text.len() - 2].to_string(),
        text["jouleclaw-ed25519-secret-key ".len()..].to_string(),
        format!("{}\r\n", text.trim_end()),
        String::new(),
    ] {
        assert_eq!(
            SoftwareSigner::from_key_file_text(&bad).unwrap_err().code(),
            "bad_key_file",
            "{bad:?}"
        );
    }
    let pk = cose::public_key_text(&k.verifying_key());
    assert_eq!(cose::parse_public_key_text(&pk).unwrap(), k.verifying_key());
    // The secret never appears in Debug output.
    let dbg = format!("{k:?}");
    assert!(!dbg.contains(&hex::encode(cose::RFC8032_TEST1_SEED)));
    assert!(dbg.contains(&hex::encode(k.verifying_key().as_bytes())));
    // Written with mode 0600, never over an existing file.
    let path = std::env::temp_dir().join(format!("jc-key-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let fresh = SoftwareSigner::generate();
    assert_ne!(fresh.verifying_key(), k.verifying_key());
    fresh.write_key_file(&path).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    assert!(fresh.write_key_file(&path).is_err());
    assert_eq!(
        SoftwareSigner::read_key_file(&path)
            .unwrap()
            .verifying_key(),
        fresh.verifying_key()
    );
    std::fs::remove_file(&path).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn sign_then_verify_round_trips(r in any_receipt()) {
        let s = cose::sign_receipt(&test_key(), &r).unwrap();
        let v = cose::verify(&s.cose_sign1, &resolver()).unwrap();
        prop_assert_eq!(v.receipt, r);
        prop_assert_eq!(v.content_hash, blake3::hash(&s.payload));
    }
}

#[test]
fn cbor_sequences_split_into_items() {
    let a = cose::sign_receipt(&test_key(), &or_not_run!(seed_receipt(1)))
        .unwrap()
        .cose_sign1;
    let b = cose::sign_receipt(&test_key(), &or_not_run!(seed_receipt(2)))
        .unwrap()
        .cose_sign1;
    let seq = [a.clone(), b.clone()].concat();
    assert_eq!(
        cose::split_cbor_sequence(&seq).unwrap(),
        vec![a.as_slice(), b.as_slice()]
    );
    assert!(cose::split_cbor_sequence(&[]).unwrap().is_empty());
    assert_eq!(cose::split_cbor_sequence(&seq[..seq.len() - 1]), Err(1));
    assert_eq!(
        cose::split_cbor_sequence(&[a.as_slice(), &[0xff]].concat()),
        Err(1)
    );
}
