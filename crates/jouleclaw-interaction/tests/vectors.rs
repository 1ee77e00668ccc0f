//! `conformance/interaction-metrics-vectors.json` and `interaction-metrics-1.schema.json`:
//! their generator, the stale-file check, and every vector checked against the crate.
//!
//! `JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-interaction --test it vectors::` rewrites the
//! files; otherwise a test fails when they differ from what this generator builds.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use jouleclaw_interaction::tau_voice::simulation_ticks;
use jouleclaw_interaction::*;
use jouleclaw_jcr1::cose::{Signer, SoftwareSigner, ValidKey, kid};
use jouleclaw_jcr1::{Estimator, StreamWindowReceipt, decode_receipt, encode_value};
use jouleclaw_pipeline::{ClosedAt, ClosedWindow, Pipeline, PipelineConfig, duplex_voice_oracle};
use jouleclaw_stream::StreamSpec;
use jouleclaw_testkit::{or_not_run, repo};
use serde_json::{Value, json};

const FILE: &str = "interaction-metrics-vectors.json";
const SCHEMA_FILE: &str = "interaction-metrics-1.schema.json";
const STEWARD: &str = "did:example:steward";
const STREAM: &str = "call-1";

/// The index of the document's first event of `kind`.
fn first_event(v: &Value, kind: &str) -> usize {
    let events = v["events"].as_array().unwrap();
    events.iter().position(|e| e["kind"] == kind).unwrap()
}

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

struct Run {
    lines: Vec<Vec<u8>>,
    doc: InteractionDocument,
    signed: SignedInteraction,
}

/// A trajectory (tests/common notation) imported as `import tau-voice` does and run through
/// the pipeline with the meter beside it.
fn run(trajectory: &str) -> Run {
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let config = PipelineConfig::new(STEWARD, STREAM).with_closed_at(ClosedAt::StreamTime {
        epoch_unix: 1_780_617_600,
    });
    let mut p = Pipeline::new(
        spec.clone(),
        config,
        duplex_voice_oracle(),
        Estimator::default(),
        Box::new(SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap();
    let mut meter = InteractionMeter::new(InteractionConfig::default()).unwrap();
    let mut closed: Vec<ClosedWindow> = Vec::new();
    for tick in simulation_ticks(&common::frames(trajectory)) {
        let dir = spec.channel(tick.channel_id).unwrap().direction;
        let copy = tick.clone();
        let out = p.push(tick).unwrap();
        meter.observe(&copy, dir).unwrap();
        closed.extend(out.closed);
    }
    closed.extend(p.finish().unwrap().last);
    let frames = meter.frame_count();
    let events = meter.finish().unwrap().to_vec();
    let hashes: Vec<[u8; 32]> = closed.iter().map(|w| *w.content_hash.as_bytes()).collect();
    let doc = InteractionDocument::new(
        STEWARD,
        STREAM,
        InteractionConfig::default(),
        frames,
        &events,
        &hashes,
    )
    .unwrap();
    let signed = sign(&SoftwareSigner::rfc8032_test_key(), &doc).unwrap();
    Run {
        lines: closed.iter().map(|w| w.canonical.clone()).collect(),
        doc,
        signed,
    }
}

fn scenarios() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "a turn answered 400 ms later, an interruption yielded to on the next frame, a backchannel talked through",
            "u u u . . a a a a au u . . a a a a aub a a a a a a . u u . a a",
        ),
        (
            "an agent that talks over an interruption and stops for a vocal tic; a user turn it never answers",
            "a a au au a a a a a a a a a . . u u . . u u . a a auv a . . . . v . . a a .",
        ),
        (
            "silence only: no event; the document is still bound to the receipts",
            ". . . . .",
        ),
        (
            "non-directed speech ignored in silence and answered during a turn; the agent starts over the user; a backchannel it stops for; a vocal tic it ignores",
            "n n . . . . . . . . . . . . . u u au a a a . . un u . a a . a a aub ub . . . . v . . . . . . . . . . . . . .",
        ),
    ]
}

/// The panel without its config, each float written as the 16 lowercase hex digits of its
/// IEEE 754 binary64 bits (big-endian), so that every checker compares it bit for bit and no
/// vector file holds a fraction.
fn panel_json(p: &Panel) -> Value {
    fn bits(v: Value) -> Value {
        match v {
            Value::Number(n) if n.is_f64() => {
                Value::from(format!("{:016x}", n.as_f64().unwrap().to_bits()))
            }
            Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, bits(v))).collect()),
            other => other,
        }
    }
    let mut v = p.to_json();
    v.as_object_mut().unwrap().remove("config");
    bits(v)
}

fn receipts_json(r: &Run) -> Vec<Value> {
    r.lines.iter().map(|l| Value::from(text(l))).collect()
}

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

fn bstr(out: &mut Vec<u8>, b: &[u8]) {
    let n = b.len();
    match n {
        0..=23 => out.push(0x40 | n as u8),
        24..=0xff => out.extend_from_slice(&[0x58, n as u8]),
        0x100..=0xffff => {
            out.push(0x59);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        _ => {
            out.push(0x5a);
            out.extend_from_slice(&(n as u32).to_be_bytes());
        }
    }
    out.extend_from_slice(b);
}

fn test_kid() -> [u8; 32] {
    kid(&SoftwareSigner::rfc8032_test_key().verifying_key())
}

fn resign(doc: &InteractionDocument) -> Vec<u8> {
    sign(&SoftwareSigner::rfc8032_test_key(), doc)
        .unwrap()
        .cose_sign1
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

type Edit = fn(&mut Value);

fn build() -> String {
    let key = SoftwareSigner::rfc8032_test_key().verifying_key();
    let valid = ValidKey::new(key).unwrap();
    let runs: Vec<(&str, &str, Run)> = scenarios()
        .into_iter()
        .map(|(d, t)| (d, t, run(t)))
        .collect();
    let documents: Vec<Value> = runs
        .iter()
        .enumerate()
        .map(|(i, (description, trajectory, r))| {
            json!({
                "n": i + 1,
                "description": description,
                "trajectory": trajectory,
                "receipts": receipts_json(r),
                "canonical": text(&r.signed.payload),
                "content_hash": hex(&r.signed.content_hash),
                "receipts_root": hex(&r.doc.receipts_root),
                "protected_hex": hex(&r.signed.protected),
                "to_be_signed_hex": hex(&r.signed.to_be_signed),
                "cose_sign1_hex": hex(&r.signed.cose_sign1),
                "panel": panel_json(&r.doc.panel()),
            })
        })
        .collect();

    let base: Value = serde_json::from_slice(&runs[0].2.signed.payload).unwrap();
    let edits: Vec<(&str, &str, Edit)> = vec![
        ("wrong_type", "the root an array", |v| *v = json!([1])),
        (
            "wrong_schema",
            "jc_interaction_metrics is interaction-metrics/2",
            |v| v["jc_interaction_metrics"] = "interaction-metrics/2".into(),
        ),
        ("unknown_field", "a key the document does not define", |v| {
            v["note"] = 1.into()
        }),
        ("missing_field", "frame_count absent", |v| {
            v.as_object_mut().unwrap().remove("frame_count");
        }),
        ("null", "steward null", |v| v["steward"] = Value::Null),
        ("negative_unsigned", "window_count negative", |v| {
            v["window_count"] = (-1).into()
        }),
        ("wrong_type", "events an object", |v| {
            v["events"] = json!({})
        }),
        ("empty_name", "stream_id empty", |v| {
            v["stream_id"] = "".into()
        }),
        ("bad_root", "receipts_root in upper case", |v| {
            let s = v["receipts_root"].as_str().unwrap().to_uppercase();
            v["receipts_root"] = s.into();
        }),
        ("wrong_deadline", "a 200 ms deadline", |v| {
            v["deadline_ns"] = 200_000_000.into()
        }),
        ("missing_field", "config without tick_ns", |v| {
            v["config"].as_object_mut().unwrap().remove("tick_ns");
        }),
        ("bad_config", "a zero tick", |v| {
            v["config"]["tick_ns"] = 0.into()
        }),
        ("bad_config", "a 61 s window", |v| {
            v["config"]["no_yield_window_ns"] = 61_000_000_000u64.into()
        }),
        (
            "unknown_field",
            "counts with a key it does not define",
            |v| v["counts"]["interruption"] = 0.into(),
        ),
        (
            "unknown_field",
            "an event with a key it does not define",
            |v| v["events"][0]["ts_ns"] = 0.into(),
        ),
        ("wrong_type", "an event's window_id a string", |v| {
            v["events"][0]["window_id"] = "5".into()
        }),
        ("bad_kind", "an event of kind interruption", |v| {
            v["events"][0]["kind"] = "interruption".into()
        }),
        ("latency_mismatch", "a response without latency", |v| {
            v["events"][0]["latency_ns"] = Value::Null
        }),
        (
            "latency_mismatch",
            "a latency not a whole number of frames",
            |v| v["events"][0]["latency_ns"] = 400_000_001u64.into(),
        ),
        ("latency_mismatch", "a yield of latency 0", |v| {
            let i = first_event(v, "yield");
            v["events"][i]["latency_ns"] = 0.into();
        }),
        ("latency_mismatch", "a backchannel with a latency", |v| {
            let i = first_event(v, "backchannel_correct");
            v["events"][i]["latency_ns"] = 200_000_000u64.into();
        }),
        ("tick_mismatch", "an event after the last frame", |v| {
            let n = v["frame_count"].as_u64().unwrap();
            let last = v["events"].as_array().unwrap().len() - 1;
            v["events"][last]["tick"] = n.into();
        }),
        ("tick_mismatch", "a segment starting after its event", |v| {
            let t = v["events"][0]["tick"].as_u64().unwrap();
            v["events"][0]["segment_tick"] = (t + 1).into();
        }),
        ("out_of_order", "events not in frame order", |v| {
            v["events"].as_array_mut().unwrap().swap(0, 1);
        }),
        ("counts_mismatch", "one response more in counts", |v| {
            let n = v["counts"]["response"].as_u64().unwrap();
            v["counts"]["response"] = (n + 1).into();
        }),
        (
            "counts_mismatch",
            "a yield within the deadline not counted",
            |v| {
                v["counts"]["yield_within_deadline"] = 0.into();
            },
        ),
    ];
    let mut negative: Vec<Value> = Vec::new();
    for (code, description, edit) in edits {
        let mut v = base.clone();
        edit(&mut v);
        let bytes = encode_value(&v).unwrap();
        negative
            .push(json!({"description": description, "input_hex": hex(&bytes), "expect": code}));
    }
    let canonical = runs[0].2.signed.payload.clone();
    let mut spaced = canonical.clone();
    spaced.insert(1, b' ');
    negative.push(json!({"description": "a space after the opening brace", "input_hex": hex(&spaced), "expect": "whitespace"}));
    let unsorted = text(&canonical).replacen("{\"config\"", "{\"window_count\":1,\"config\"", 1);
    negative.push(json!({"description": "a duplicate, unsorted key", "input_hex": hex(unsorted.as_bytes()), "expect": "unsorted_keys"}));
    for (i, n) in negative.iter_mut().enumerate() {
        let bytes = unhex(n["input_hex"].as_str().unwrap());
        let r = InteractionDocument::decode(&bytes).unwrap_err();
        assert_eq!(r.code, n["expect"].as_str().unwrap(), "negative {}", i + 1);
        let o = n.as_object_mut().unwrap();
        o.insert("n".into(), (i + 1).into());
        o.insert("expect_refusal".into(), r.code.into());
        o.insert("offset".into(), r.offset.into());
        o.remove("expect");
    }

    let first = &runs[0].2;
    let d = &first.doc;
    let cose = &first.signed.cose_sign1;
    let receipts = receipts_json(first);
    let mut tampered: Vec<(String, Vec<u8>, Vec<Value>, &str)> = Vec::new();
    let mut t = |desc: &str, bytes: Vec<u8>, receipts: Vec<Value>, code: &'static str| {
        tampered.push((desc.to_owned(), bytes, receipts, code));
    };
    let mut b = cose.clone();
    let at = b.windows(13).position(|w| w == b"\"latency_ns\":").unwrap() + 13;
    b[at] = if b[at] == b'8' { b'6' } else { b'8' };
    t(
        "one digit of a latency changed after signing",
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
        let ct = INTERACTION_CONTENT_TYPE.as_bytes();
        let i = good.windows(ct.len()).position(|w| w == ct).unwrap();
        let mut p = good.clone();
        p[i + ct.len() - 4..i + ct.len()].copy_from_slice(b"cbor");
        p
    };
    t(
        "signed under another content type (...+cbor)",
        sign_raw(&wrong_ct, &first.signed.payload),
        receipts.clone(),
        "cose_content_type_mismatch",
    );
    t(
        "signed with the stop-latency subject <stream_id>:stop-latency",
        sign_raw(
            &protected_bytes(&d.steward, "call-1:stop-latency", &test_kid()),
            &first.signed.payload,
        ),
        receipts.clone(),
        "cose_sub_mismatch",
    );
    t(
        "signed with another iss",
        sign_raw(
            &protected_bytes("did:example:other", &d.subject(), &test_kid()),
            &first.signed.payload,
        ),
        receipts.clone(),
        "cose_iss_mismatch",
    );
    t(
        "signed by another key",
        sign(&SoftwareSigner::from_seed(&[7; 32]), d)
            .unwrap()
            .cose_sign1,
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
    let mut elsewhere = d.clone();
    elsewhere.stream_id = "call-2".into();
    t(
        "re-signed for another stream",
        resign(&elsewhere),
        receipts.clone(),
        "stream_mismatch",
    );
    let mut later = d.clone();
    let last = later.events.len() - 1;
    later.frame_count += 1000;
    later.events[last].tick += 1000;
    later.events[last].window_id = Some(later.events[last].tick);
    t(
        "re-signed with an event moved to a window the call did not have",
        resign(&later),
        receipts.clone(),
        "event_window_missing",
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
        "_comment": "interaction-metrics/1 vectors (spec/INTERACTION-METRICS-V1.md). Owned by jouleclaw-rs; generated by crates/jouleclaw-interaction/tests/vectors.rs (JOULECLAW_REGEN_VECTORS=1 rewrites it). Signed with the published RFC 8032 TEST 1 key. documents: hand-written trajectories (one token per 200 ms frame: u user speech, a agent speech, b backchannel, v vocal tic, n non-directed, . silence) imported as `jouleclaw import tau-voice` does and run through the pipeline with the meter beside it; receipts are the window receipts' canonical lines in window order, canonical the document, cose_sign1_hex its signature, panel the panel of its events (section 3, without config; each float as the 16 hex digits of its binary64 bits). negative: documents the decoder must refuse (schema codes must match). tampered: a signed document and receipts that must be refused; expect_refusal is the first failing check in the order of the spec.",
        "schema": INTERACTION_SCHEMA,
        "content_type": INTERACTION_CONTENT_TYPE,
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

/// The JSON Schema (draft 2020-12) of interaction-metrics/1: what a schema can say of it.
fn json_schema() -> Value {
    let uint = json!({"type": "integer", "minimum": 0, "maximum": 9_007_199_254_740_991u64});
    let uint_or_null =
        json!({"type": ["integer", "null"], "minimum": 0, "maximum": 9_007_199_254_740_991u64});
    let name = json!({"type": "string", "minLength": 1, "maxLength": MAX_NAME_BYTES});
    let window = json!({"type": "integer", "minimum": 0, "maximum": MAX_WINDOW_NS});
    let config_keys: Vec<&str> = InteractionConfig::default()
        .fields()
        .map(|(k, _)| k)
        .to_vec();
    let mut config_props = serde_json::Map::new();
    for k in &config_keys {
        config_props.insert((*k).into(), window.clone());
    }
    config_props.insert(
        "tick_ns".into(),
        json!({"type": "integer", "minimum": 1, "maximum": MAX_WINDOW_NS}),
    );
    let count_keys: Vec<&str> = count_events(&InteractionConfig::default(), &[])
        .iter()
        .map(|(k, _)| *k)
        .collect();
    let mut count_props = serde_json::Map::new();
    for k in &count_keys {
        count_props.insert((*k).into(), uint.clone());
    }
    let kinds: Vec<&str> = EventKind::ALL.iter().map(|k| k.as_str()).collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:jouleclaw:schema:interaction-metrics/1",
        "title": "interaction-metrics/1",
        "description": "Generated by crates/jouleclaw-interaction/tests/vectors.rs from spec/INTERACTION-METRICS-V1.md. A schema cannot express: the canonical form (JCR-1), the byte limits, latencies as whole frames, segment_tick <= tick < frame_count, the order of the events, counts equal to the events', or the binding to the receipts (section 6). maxLength counts code points, the spec counts UTF-8 bytes.",
        "type": "object",
        "additionalProperties": false,
        "required": ["config", "counts", "deadline_ns", "events", "frame_count", "jc_interaction_metrics", "receipts_root", "steward", "stream_id", "window_count"],
        "properties": {
            "jc_interaction_metrics": {"const": INTERACTION_SCHEMA},
            "steward": name,
            "stream_id": name,
            "window_count": uint,
            "frame_count": uint,
            "deadline_ns": {"const": DEADLINE_NS},
            "receipts_root": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
            "config": {"type": "object", "additionalProperties": false, "required": config_keys, "properties": config_props},
            "counts": {"type": "object", "additionalProperties": false, "required": count_keys, "properties": count_props},
            "events": {
                "type": "array",
                "maxItems": MAX_EVENTS,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["kind", "latency_ns", "segment_tick", "tick", "window_id"],
                    "properties": {
                        "kind": {"enum": kinds},
                        "latency_ns": uint_or_null,
                        "segment_tick": uint,
                        "tick": uint,
                        "window_id": uint_or_null,
                    },
                    "if": {"properties": {"kind": {"enum": ["response", "yield"]}}},
                    "then": {"properties": {"latency_ns": {"type": "integer"}}},
                    "else": {"properties": {"latency_ns": {"type": "null"}}}
                }
            }
        }
    })
}

fn check_generated(file: &str, built: &str) {
    let path = or_not_run!(repo::path(&format!("conformance/{file}")));
    if std::env::var_os("JOULECLAW_REGEN_VECTORS").is_some() {
        jouleclaw_testkit::write_generated(&path, built);
        return;
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == built,
        "conformance/{file} is stale: JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-interaction --test it vectors::"
    );
}

#[test]
fn the_vectors_file_is_what_the_generator_builds() {
    check_generated(FILE, &build());
}

#[test]
fn the_schema_file_is_what_the_generator_builds() {
    let mut built = serde_json::to_string_pretty(&json_schema()).unwrap();
    built.push('\n');
    check_generated(SCHEMA_FILE, &built);
}

#[test]
fn every_document_vector_verifies_is_bound_and_has_its_panel() {
    let key = ValidKey::new(SoftwareSigner::rfc8032_test_key().verifying_key()).unwrap();
    let file: Value = serde_json::from_str(&build()).unwrap();
    let docs = file["documents"].as_array().unwrap();
    assert_eq!(docs.len(), 4);
    let mut kinds = std::collections::BTreeSet::new();
    for d in docs {
        let cose = unhex(d["cose_sign1_hex"].as_str().unwrap());
        assert_eq!(
            refusal(&cose, d["receipts"].as_array().unwrap(), &key),
            "accepted"
        );
        let v = verify(&cose, &key).unwrap();
        assert_eq!(v.payload, d["canonical"].as_str().unwrap().as_bytes());
        kinds.extend(v.document.events.iter().map(|e| e.kind));
    }
    // The vectors hold every kind of event.
    assert_eq!(kinds.len(), EventKind::ALL.len(), "{kinds:?}");
}
