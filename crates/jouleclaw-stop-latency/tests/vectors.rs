//! `conformance/stop-latency-vectors.json`: its generator, the stale-file check, and every
//! vector checked against the crate.
//!
//! `JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-stop-latency --test it vectors::` rewrites the
//! file; otherwise a test fails when it differs from what this generator builds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support;

use jouleclaw_jcr1::cose::{Signer, SoftwareSigner, ValidKey, kid};
use jouleclaw_jcr1::{StreamWindowReceipt, decode_receipt, encode_value};
use jouleclaw_stop_latency::*;
use jouleclaw_testkit::{or_not_run, repo};
use serde_json::{Value, json};
use support::*;

const FILE: &str = "stop-latency-vectors.json";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8(b.to_vec()).unwrap()
}

fn bstr(out: &mut Vec<u8>, b: &[u8]) {
    jouleclaw_jcr1::cose::cbor::string(out, 2, b);
}

/// Signs `payload` under an arbitrary protected header with the test key.
fn sign_raw(protected: &[u8], payload: &[u8]) -> Vec<u8> {
    let signer = SoftwareSigner::rfc8032_test_key();
    let sig = signer.sign(&sig_structure(protected, payload)).unwrap();
    let mut out = vec![0xd2, 0x84];
    bstr(&mut out, protected);
    out.push(0xa0);
    bstr(&mut out, payload);
    bstr(&mut out, &sig);
    out
}

fn test_kid() -> [u8; 32] {
    kid(&SoftwareSigner::rfc8032_test_key().verifying_key())
}

fn resign(doc: &StopLatencyDocument) -> Vec<u8> {
    sign(&SoftwareSigner::rfc8032_test_key(), doc)
        .unwrap()
        .cose_sign1
}

fn receipts_json(r: &Run) -> Vec<Value> {
    r.lines.iter().map(|l| Value::from(text(l))).collect()
}

struct Scenario {
    description: &'static str,
    run: Run,
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            description: "polite: the agent stops 40 ms after the barge-in; its next turn starts at 1.6 s",
            run: run(polite()),
        },
        Scenario {
            description: "rude: the agent talks on 450 ms past the barge-in; the ledger finds barge_in_ignored",
            run: run(rude()),
        },
        Scenario {
            description: "no barge-in: the document lists none and is still bound to the receipts",
            run: run(call(1000 * MS, &[(200 * MS, 800 * MS)], &[], &[])),
        },
        Scenario {
            description: "four barge-ins: the agent silent at the first, two close together while it talks, one 10 ms before the end of the stream",
            run: run(call(
                3000 * MS,
                &[(1000 * MS, 1600 * MS), (2000 * MS, 2900 * MS)],
                &[300 * MS, 1200 * MS, 1250 * MS, 2890 * MS],
                &[1000 * MS, 2000 * MS],
            )),
        },
        Scenario {
            description: "stop-latency/2: the rude call stating its vantage (times as sent) and the 200 ms device buffer after it that the stop latency does not include",
            run: {
                let mut r = run(rude());
                r.doc.vantage = Some(Vantage {
                    point: VantagePoint::Sent,
                    excluded_buffer_ns: Some(200 * MS),
                });
                r.signed = sign(&SoftwareSigner::rfc8032_test_key(), &r.doc).unwrap();
                r
            },
        },
    ]
}

fn build() -> String {
    let signer = SoftwareSigner::rfc8032_test_key();
    let key = signer.verifying_key();
    let valid = ValidKey::new(key).unwrap();
    let all = scenarios();
    let documents: Vec<Value> = all
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let r = &s.run;
            json!({
                "n": i + 1,
                "description": s.description,
                "receipts": receipts_json(r),
                "canonical": text(&r.signed.payload),
                "content_hash": hex(&r.signed.content_hash),
                "receipts_root": hex(&r.doc.receipts_root),
                "protected_hex": hex(&r.signed.protected),
                "to_be_signed_hex": hex(&r.signed.to_be_signed),
                "cose_sign1_hex": hex(&r.signed.cose_sign1),
                "summary": r.doc.summary().map(|(p50, p95, max)| json!({"p50_ns": p50, "p95_ns": p95, "max_ns": max})),
            })
        })
        .collect();

    // Decoder negatives: the polite and three-barge-in documents edited, re-encoded
    // canonically so that only the named schema rule fails (and two canonical-form faults).
    let base: Value = serde_json::from_slice(&all[0].run.signed.payload).unwrap();
    let multi: Value = serde_json::from_slice(&all[3].run.signed.payload).unwrap();
    type Edit = fn(&mut Value);
    let edits: Vec<(&str, &str, Value, Edit)> = vec![
        (
            "wrong_schema",
            // stop-latency/2 exists since documents state their vantage: a stop-latency/1
            // body under that id is missing_field (appended below); this case, which said
            // stop-latency/2 before, names an id that does not exist.
            "jc_stop_latency is stop-latency/3",
            base.clone(),
            |v| v["jc_stop_latency"] = "stop-latency/3".into(),
        ),
        (
            "unknown_field",
            "a key the document does not define",
            base.clone(),
            |v| v["note"] = 1.into(),
        ),
        ("missing_field", "window_count absent", base.clone(), |v| {
            v.as_object_mut().unwrap().remove("window_count");
        }),
        ("null", "steward null", base.clone(), |v| {
            v["steward"] = Value::Null
        }),
        ("wrong_type", "window_count a string", base.clone(), |v| {
            v["window_count"] = "9".into()
        }),
        (
            "negative_unsigned",
            "window_count negative",
            base.clone(),
            |v| v["window_count"] = (-1).into(),
        ),
        ("wrong_type", "barge_ins an object", base.clone(), |v| {
            v["barge_ins"] = json!({})
        }),
        (
            "unknown_field",
            "a barge-in with a key it does not define",
            base.clone(),
            |v| v["barge_ins"][0]["yield_ts_ns"] = 1.into(),
        ),
        (
            "missing_field",
            "a barge-in without end_ts_ns",
            base.clone(),
            |v| {
                v["barge_ins"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("end_ts_ns");
            },
        ),
        (
            "wrong_type",
            "last_audio_ts_ns a boolean",
            base.clone(),
            |v| v["barge_ins"][0]["last_audio_ts_ns"] = true.into(),
        ),
        ("empty_name", "stream_id empty", base.clone(), |v| {
            v["stream_id"] = "".into()
        }),
        (
            "bad_root",
            "receipts_root in upper case",
            base.clone(),
            |v| {
                let s = v["receipts_root"].as_str().unwrap().to_uppercase();
                v["receipts_root"] = s.into();
            },
        ),
        ("bad_root", "receipts_root of 31 bytes", base.clone(), |v| {
            let s = v["receipts_root"].as_str().unwrap()[2..].to_owned();
            v["receipts_root"] = s.into();
        }),
        ("wrong_deadline", "a 200 ms deadline", base.clone(), |v| {
            v["deadline_ns"] = 200_000_000.into()
        }),
        (
            "bad_ended_by",
            "ended_by open (a measurement not ended)",
            base.clone(),
            |v| v["barge_ins"][0]["ended_by"] = "open".into(),
        ),
        (
            "end_mismatch",
            "ended by the stream's end with an end_ts_ns",
            base.clone(),
            |v| v["barge_ins"][0]["ended_by"] = "stream_end".into(),
        ),
        (
            "end_mismatch",
            "ended by a start before the barge-in",
            base.clone(),
            |v| v["barge_ins"][0]["end_ts_ns"] = 1.into(),
        ),
        (
            "latency_mismatch",
            "stop_latency_ns one more than last_audio_ts_ns - barge_in_ts_ns",
            base.clone(),
            |v| {
                let x = v["barge_ins"][0]["stop_latency_ns"].as_u64().unwrap();
                v["barge_ins"][0]["stop_latency_ns"] = (x + 1).into();
            },
        ),
        (
            "latency_mismatch",
            "audio after the start that ended the measurement",
            base.clone(),
            |v| v["barge_ins"][0]["end_ts_ns"] = 1_050_000_000u64.into(),
        ),
        (
            "latency_mismatch",
            "no last audio and a latency",
            multi.clone(),
            |v| v["barge_ins"][0]["stop_latency_ns"] = 5.into(),
        ),
        (
            "late_mismatch",
            "late bytes within the deadline",
            base.clone(),
            |v| v["barge_ins"][0]["late_audio_bytes"] = 240.into(),
        ),
        (
            "late_mismatch",
            "late bytes above the audio bytes",
            multi.clone(),
            |v| {
                let a = v["barge_ins"][1]["audio_bytes"].as_u64().unwrap();
                v["barge_ins"][1]["late_audio_bytes"] = (a + 1).into();
            },
        ),
        (
            "out_of_order",
            "barge-ins not in stream order",
            multi.clone(),
            |v| {
                let b = v["barge_ins"].as_array_mut().unwrap();
                b.swap(0, 1);
            },
        ),
    ];
    let mut negative: Vec<Value> = Vec::new();
    for (code, description, mut v, edit) in edits {
        edit(&mut v);
        let bytes = encode_value(&v).unwrap();
        negative
            .push(json!({"description": description, "input_hex": hex(&bytes), "expect": code}));
    }
    let canonical = all[0].run.signed.payload.clone();
    let mut spaced = canonical.clone();
    spaced.insert(1, b' ');
    negative.push(json!({"description": "a space after the opening brace", "input_hex": hex(&spaced), "expect": "whitespace"}));
    let unsorted =
        text(&canonical).replacen("{\"barge_ins\"", "{\"window_count\":1,\"barge_ins\"", 1);
    negative.push(json!({"description": "a duplicate, unsorted key", "input_hex": hex(unsorted.as_bytes()), "expect": "unsorted_keys"}));
    // stop-latency/2 (section 10): the vantage object.
    let with_vantage = |id: &str, vantage: Value| {
        let mut v = base.clone();
        v["jc_stop_latency"] = id.into();
        v["vantage"] = vantage;
        encode_value(&v).unwrap()
    };
    for (description, bytes, code) in [
        (
            "stop-latency/2 without vantage",
            {
                let mut v = base.clone();
                v["jc_stop_latency"] = "stop-latency/2".into();
                encode_value(&v).unwrap()
            },
            "missing_field",
        ),
        (
            "stop-latency/1 with a vantage",
            with_vantage(
                "stop-latency/1",
                json!({"excluded_buffer_ns": null, "point": "sent"}),
            ),
            "unknown_field",
        ),
        (
            "vantage point heard",
            with_vantage(
                "stop-latency/2",
                json!({"excluded_buffer_ns": null, "point": "heard"}),
            ),
            "bad_vantage",
        ),
        (
            "vantage without excluded_buffer_ns",
            with_vantage("stop-latency/2", json!({"point": "sent"})),
            "missing_field",
        ),
        (
            "excluded_buffer_ns negative",
            with_vantage(
                "stop-latency/2",
                json!({"excluded_buffer_ns": -1, "point": "sent"}),
            ),
            "negative_unsigned",
        ),
        (
            "vantage a string",
            with_vantage("stop-latency/2", json!("sent")),
            "wrong_type",
        ),
    ] {
        negative
            .push(json!({"description": description, "input_hex": hex(&bytes), "expect": code}));
    }
    for (i, n) in negative.iter_mut().enumerate() {
        let bytes = unhex(n["input_hex"].as_str().unwrap());
        let r = StopLatencyDocument::decode(&bytes).unwrap_err();
        assert_eq!(r.code, n["expect"].as_str().unwrap(), "negative {}", i + 1);
        let o = n.as_object_mut().unwrap();
        o.insert("n".into(), (i + 1).into());
        o.insert("expect_refusal".into(), r.code.into());
        o.insert("offset".into(), r.offset.into());
        o.remove("expect");
    }

    // Tampered signed documents and receipts: each must be refused.
    let polite = &all[0].run;
    let d = &polite.doc;
    let cose = &polite.signed.cose_sign1;
    let mut tampered: Vec<(String, Vec<u8>, Vec<Value>, &str)> = Vec::new();
    let mut t = |desc: &str, bytes: Vec<u8>, receipts: Vec<Value>, code: &'static str| {
        tampered.push((desc.to_owned(), bytes, receipts, code));
    };
    let receipts = receipts_json(polite);
    let mut b = cose.clone();
    let at = b
        .windows(18)
        .position(|w| w == b"\"stop_latency_ns\":")
        .unwrap()
        + 18;
    b[at] = if b[at] == b'9' { b'8' } else { b'9' };
    t(
        "one digit of stop_latency_ns changed after signing",
        b,
        receipts.clone(),
        "cose_bad_signature",
    );
    let mut b = cose.clone();
    let n = b.len();
    b[n - 1] ^= 1;
    t(
        "the last byte of the signature flipped",
        b,
        receipts.clone(),
        "cose_bad_signature",
    );
    t(
        "untagged",
        cose[1..].to_vec(),
        receipts.clone(),
        "cose_untagged",
    );
    let wrong_ct = {
        let good = protected_bytes(&d.steward, &d.subject(), &test_kid());
        let ct = STOP_LATENCY_CONTENT_TYPE.as_bytes();
        let i = good.windows(ct.len()).position(|w| w == ct).unwrap();
        let mut p = good.clone();
        p[i + ct.len() - 4..i + ct.len()].copy_from_slice(b"cbor");
        p
    };
    t(
        "signed under another content type (...+cbor)",
        sign_raw(&wrong_ct, &polite.signed.payload),
        receipts.clone(),
        "cose_content_type_mismatch",
    );
    t(
        "signed with sub <stream_id>:seal:1",
        sign_raw(
            &protected_bytes(&d.steward, "call-1:seal:1", &test_kid()),
            &polite.signed.payload,
        ),
        receipts.clone(),
        "cose_sub_mismatch",
    );
    t(
        "signed with another iss",
        sign_raw(
            &protected_bytes("did:example:other", &d.subject(), &test_kid()),
            &polite.signed.payload,
        ),
        receipts.clone(),
        "cose_iss_mismatch",
    );
    let other = SoftwareSigner::from_seed(&[7; 32]);
    t(
        "signed by another key",
        sign(&other, d).unwrap().cose_sign1,
        receipts.clone(),
        "cose_unknown_kid",
    );
    let mut fewer = receipts.clone();
    fewer.pop();
    t(
        "the last window receipt removed",
        cose.clone(),
        fewer,
        "window_count_mismatch",
    );
    let mut altered = receipts.clone();
    altered[0] = Value::from(altered[0].as_str().unwrap().replacen(
        "\"joules_uj\":",
        "\"joules_uj\":1",
        1,
    ));
    t(
        "a window receipt altered (joules_uj)",
        cose.clone(),
        altered,
        "root_mismatch",
    );
    let mut gone = d.clone();
    gone.barge_ins.clear();
    t(
        "re-signed with the barge-in deleted",
        resign(&gone),
        receipts.clone(),
        "yield_unlisted",
    );
    let mut moved = d.clone();
    moved.barge_ins[0].window_id = 2;
    t(
        "re-signed naming a window without a barge-in",
        resign(&moved),
        receipts.clone(),
        "barge_in_not_yielded",
    );
    let mut elsewhere = d.clone();
    elsewhere.stream_id = "call-2".into();
    t(
        "re-signed for another stream",
        resign(&elsewhere),
        receipts.clone(),
        "stream_mismatch",
    );
    // Values the signed receipts contradict (the rude call: a receipt records barge_in_ignored
    // with both times).
    let rude = &all[1].run;
    let rude_receipts = receipts_json(rude);
    let mut inside = rude.doc.clone();
    let b0 = &mut inside.barge_ins[0];
    let t_in = b0.barge_in_ts_ns + 100 * MS;
    b0.last_audio_ts_ns = Some(t_in);
    b0.late_audio_bytes = 0;
    t(
        "re-signed with the late barge-in's last audio moved inside the deadline",
        resign(&inside),
        rude_receipts.clone(),
        "finding_contradicted",
    );
    let mut shifted = rude.doc.clone();
    let b0 = &mut shifted.barge_ins[0];
    b0.barge_in_ts_ns += 300 * MS;
    b0.late_audio_bytes = 0;
    t(
        "re-signed with the late barge-in moved 300 ms later (onto its last audio)",
        resign(&shifted),
        rude_receipts.clone(),
        "finding_unlisted",
    );

    let tampered: Vec<Value> = tampered
        .into_iter()
        .enumerate()
        .map(|(i, (description, bytes, receipts, code))| {
            assert_eq!(
                refusal(&bytes, &receipts, &valid),
                code,
                "tampered {}",
                i + 1
            );
            json!({
                "n": i + 1,
                "description": description,
                "cose_sign1_hex": hex(&bytes),
                "receipts": receipts,
                "expect_refusal": code,
            })
        })
        .collect();

    let doc = json!({
        "_comment": "stop-latency/1 vectors (spec/STOP-LATENCY-V1.md). Owned by jouleclaw-rs; generated by crates/jouleclaw-stop-latency/tests/vectors.rs (JOULECLAW_REGEN_VECTORS=1 rewrites it). Signed with the published RFC 8032 TEST 1 key. documents: scripted calls run through the pipeline with the meter beside it; receipts are the window receipts' canonical lines in window order, canonical the stop-latency/1 document, cose_sign1_hex its signature; summary the nearest-rank p50, p95 and max of stop_latency_ns. negative: documents the decoder must refuse (expect_refusal and offset are the Rust decoder's; schema codes must match). tampered: a signed document and receipts that must be refused; expect_refusal is the first failing check in the order of the spec.",
        "schema": STOP_LATENCY_SCHEMA,
        "content_type": STOP_LATENCY_CONTENT_TYPE,
        "deadline_ns": DEADLINE_NS,
        "public_key": hex(key.as_bytes()),
        "kid": hex(&kid(&key)),
        "documents": documents,
        "negative": negative,
        "tampered": tampered,
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap();
    s.push('\n');
    s
}

/// The first refusal of the full check (signature and document, then the binding).
fn refusal(cose: &[u8], receipts: &[Value], key: &ValidKey) -> &'static str {
    let v = match verify(cose, key) {
        Err(e) => return e.code(),
        Ok(v) => v,
    };
    let rs: Vec<(StreamWindowReceipt, [u8; 32])> = receipts
        .iter()
        .map(|l| {
            let b = l.as_str().unwrap().as_bytes();
            (decode_receipt(b).unwrap(), *blake3::hash(b).as_bytes())
        })
        .collect();
    check_receipts(&v.document, &rs)
        .first()
        .map_or("accepted", |p| p.code)
}

const SCHEMA_FILE: &str = "stop-latency-1.schema.json";

/// The JSON Schema (draft 2020-12) of stop-latency/1: what a schema can say of it.
fn json_schema() -> Value {
    let uint = json!({"type": "integer", "minimum": 0, "maximum": 9_007_199_254_740_991u64});
    let uint_or_null =
        json!({"type": ["integer", "null"], "minimum": 0, "maximum": 9_007_199_254_740_991u64});
    let name = json!({"type": "string", "minLength": 1, "maxLength": MAX_NAME_BYTES});
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:jouleclaw:schema:stop-latency/1",
        "title": "stop-latency/1",
        "description": "Generated by crates/jouleclaw-stop-latency/tests/vectors.rs from spec/STOP-LATENCY-V1.md. A schema cannot express: the canonical form (JCR-1), the byte limits, stop_latency_ns = last_audio_ts_ns - barge_in_ts_ns, late_audio_bytes > 0 exactly when the latency exceeds the deadline, the order of the barge-ins, or the binding to the receipts (section 7). maxLength counts code points, the spec counts UTF-8 bytes.",
        "type": "object",
        "additionalProperties": false,
        "required": ["barge_ins", "deadline_ns", "jc_stop_latency", "receipts_root", "steward", "stream_id", "window_count"],
        "properties": {
            "jc_stop_latency": {"const": STOP_LATENCY_SCHEMA},
            "steward": name,
            "stream_id": name,
            "window_count": uint,
            "deadline_ns": {"const": DEADLINE_NS},
            "receipts_root": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "barge_ins": {
                "type": "array",
                "maxItems": MAX_BARGE_INS,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["audio_bytes", "barge_in_ts_ns", "end_ts_ns", "ended_by", "last_audio_ts_ns", "late_audio_bytes", "stop_latency_ns", "window_id"],
                    "properties": {
                        "audio_bytes": uint,
                        "barge_in_ts_ns": uint,
                        "end_ts_ns": uint_or_null,
                        "ended_by": {"enum": ["start", "stream_end"]},
                        "last_audio_ts_ns": uint_or_null,
                        "late_audio_bytes": uint,
                        "stop_latency_ns": uint,
                        "window_id": uint,
                    },
                    "if": {"properties": {"ended_by": {"const": "stream_end"}}},
                    "then": {"properties": {"end_ts_ns": {"type": "null"}}},
                    "else": {"properties": {"end_ts_ns": {"type": "integer"}}}
                }
            }
        }
    })
}

/// The JSON Schema of stop-latency/2: stop-latency/1's with its id and the `vantage` object.
fn json_schema_v2() -> Value {
    let mut s = json_schema();
    s["$id"] = "urn:jouleclaw:schema:stop-latency/2".into();
    s["title"] = "stop-latency/2".into();
    s["properties"]["jc_stop_latency"] = json!({"const": STOP_LATENCY_SCHEMA_V2});
    s["properties"]["vantage"] = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["excluded_buffer_ns", "point"],
        "properties": {
            "excluded_buffer_ns": {"type": ["integer", "null"], "minimum": 0, "maximum": 9_007_199_254_740_991u64},
            "point": {"enum": ["sent", "played"]},
        }
    });
    let req = s["required"].as_array_mut().unwrap();
    req.push("vantage".into());
    req.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    s
}

#[test]
fn the_schema_file_is_what_the_generator_builds() {
    for (file, schema) in [
        (SCHEMA_FILE, json_schema()),
        ("stop-latency-2.schema.json", json_schema_v2()),
    ] {
        let mut built = serde_json::to_string_pretty(&schema).unwrap();
        built.push('\n');
        check_generated(file, &built);
    }
}

/// Writes `built` to `conformance/{file}` when regenerating; otherwise requires the checked-in
/// copy to equal it.
fn check_generated(file: &str, built: &str) {
    let path = or_not_run!(repo::path(&format!("conformance/{file}")));
    if std::env::var_os("JOULECLAW_REGEN_VECTORS").is_some() {
        jouleclaw_testkit::write_generated(&path, built);
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == built,
        "conformance/{file} is stale: JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-stop-latency --test it vectors::"
    );
}

#[test]
fn the_vectors_file_is_what_the_generator_builds() {
    check_generated(FILE, &build());
}

#[test]
fn every_document_vector_verifies_and_is_bound() {
    let key = ValidKey::new(SoftwareSigner::rfc8032_test_key().verifying_key()).unwrap();
    let file: Value = serde_json::from_str(&build()).unwrap();
    for d in file["documents"].as_array().unwrap() {
        let cose = unhex(d["cose_sign1_hex"].as_str().unwrap());
        assert_eq!(
            refusal(&cose, d["receipts"].as_array().unwrap(), &key),
            "accepted"
        );
        let v = verify(&cose, &key).unwrap();
        assert_eq!(v.payload, d["canonical"].as_str().unwrap().as_bytes());
    }
}
