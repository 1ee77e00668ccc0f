//! The strict decoder: chunking invariance, limits, stickiness, and properties.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::*;
use jouleclaw_jcr1::*;
use jouleclaw_stream::WindowConservationFinding;
use jouleclaw_stream_oracle::WindowVerdict;
// `feed` checks that `push` never accepts and that refusals are sticky.
use jouleclaw_testkit::or_not_run;
use jouleclaw_testkit::receipts::feed;
use proptest::prelude::*;

/// The negative cases, seed vector 1 and the extended vectors (`None` in a crate built alone).
fn corpus() -> Option<Vec<(String, Vec<u8>)>> {
    let mut c: Vec<(String, Vec<u8>)> = negative_cases()?
        .into_iter()
        .map(|(d, b, _)| (d, b))
        .collect();
    c.push(("seed 1".into(), base()?.into_bytes()));
    for (n, _, r) in extended_vectors() {
        c.push((format!("extended {n}"), r.encode().unwrap()));
    }
    Some(c)
}

#[test]
fn whole_split_and_bytewise_decoding_agree_on_the_corpus() {
    for (name, bytes) in or_not_run!(corpus()) {
        let whole = decode_receipt(&bytes);
        let bytewise = feed(bytes.chunks(1));
        assert_eq!(whole, bytewise, "{name}: one byte at a time");
        // Every split offset for documents up to 4 KiB; a stride for the bombs.
        let step = if bytes.len() <= 4096 {
            1
        } else {
            bytes.len() / 257 + 1
        };
        for cut in (0..=bytes.len()).step_by(step) {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(whole, feed([a, b]), "{name}: split at {cut}");
        }
    }
}

#[test]
fn push_never_accepts_and_trailing_bytes_after_a_complete_document_refuse() {
    let bytes = or_not_run!(base()).into_bytes();
    let mut d = ReceiptDecoder::new();
    assert_eq!(d.push(&bytes), Progress::Incomplete);
    assert_eq!(
        d.push(b"\n"),
        Progress::Refused(Refusal {
            code: RefusalCode::TrailingBytes,
            offset: bytes.len() as u64
        })
    );
    // The refusal is sticky even if more valid-looking bytes follow.
    assert!(matches!(d.push(b"{}"), Progress::Refused(r) if r.code == RefusalCode::TrailingBytes));
    assert_eq!(d.finish().unwrap_err().code, RefusalCode::TrailingBytes);
    let mut d = ReceiptDecoder::new();
    assert_eq!(d.push(&bytes), Progress::Incomplete);
    assert!(d.refusal().is_none());
    assert_eq!(d.finish().unwrap(), or_not_run!(seed_receipt(1)));
}

#[test]
fn refusal_offsets_point_at_the_deciding_byte() {
    let s = or_not_run!(base());
    let at = s.find("\"tick_count\":4").unwrap() + "\"tick_count\":".len();
    let bad = s.replacen("\"tick_count\":4", "\"tick_count\":04", 1);
    assert_eq!(
        decode_receipt(bad.as_bytes()).unwrap_err(),
        Refusal {
            code: RefusalCode::NumberLeadingZero,
            offset: at as u64 + 1
        }
    );
    assert_eq!(
        decode_receipt(b"").unwrap_err(),
        Refusal {
            code: RefusalCode::EmptyInput,
            offset: 0
        }
    );
    assert_eq!(
        decode_receipt(b"{").unwrap_err(),
        Refusal {
            code: RefusalCode::Truncated,
            offset: 1
        }
    );
}

#[test]
fn limits_hold_at_their_exact_bound() {
    let s = or_not_run!(base());
    // Strings: 4096 bytes accepted, 4097 refused (steward).
    let ok = s.replacen(STEWARD, &"s".repeat(4096), 1);
    let r = decode_receipt(ok.as_bytes()).unwrap();
    // The encoder's limits are the decoder's: the largest accepted strings encode back.
    assert_eq!(r.encode().unwrap(), ok.as_bytes());
    let mut r = r;
    r.stream_id = "s".repeat(4091); // id = 4091 + ":0001" = 4096 bytes
    assert_eq!(decode_receipt(&r.encode().unwrap()).unwrap(), r);
    // Multi-byte characters count in bytes: 2048 two-byte characters fit, one more byte does not.
    let ok = s.replacen(STEWARD, &"é".repeat(2048), 1);
    assert!(decode_receipt(ok.as_bytes()).is_ok());
    let bad = s.replacen(STEWARD, &format!("{}x", "é".repeat(2048)), 1);
    assert_eq!(
        decode_receipt(bad.as_bytes()).unwrap_err().code,
        RefusalCode::StringTooLong
    );
    // Arrays: 64 names accepted, 65 refused.
    let names: Vec<String> = (0..64).map(|i| format!("\"o{i:02}\"")).collect();
    let ok = s.replacen(
        "[\"always-pass-stream\"]",
        &format!("[{}]", names.join(",")),
        1,
    );
    assert!(decode_receipt(ok.as_bytes()).is_ok());
    // Documents: exactly max bytes accepted, one more refused at that offset.
    let limits = Limits {
        max_document_bytes: s.len(),
        ..Limits::RECEIPT
    };
    let mut d = ReceiptDecoder::with_limits(limits);
    assert_eq!(d.push(s.as_bytes()), Progress::Incomplete);
    assert!(d.finish().is_ok());
    let limits = Limits {
        max_document_bytes: s.len() - 1,
        ..Limits::RECEIPT
    };
    let mut d = ReceiptDecoder::with_limits(limits);
    assert_eq!(
        d.push(s.as_bytes()),
        Progress::Refused(Refusal {
            code: RefusalCode::DocumentTooLarge,
            offset: s.len() as u64 - 1
        })
    );
    // Depth, on generic values: exactly max_depth accepted, one more refused.
    let limits = Limits {
        max_depth: 5,
        ..Limits::GENERIC
    };
    assert!(decode_canonical_value(b"[[[[[]]]]]", limits).is_ok());
    let err = decode_canonical_value(b"[[[[[[]]]]]]", limits).unwrap_err();
    assert_eq!((err.code, err.offset), (RefusalCode::DepthExceeded, 5));
    // The receipt's depth is 3: a chain of chains is one too deep.
    let bad = s.replacen("[\"always-pass-stream\"]", "[[\"x\"]]", 1);
    assert_eq!(
        decode_receipt(bad.as_bytes()).unwrap_err().code,
        RefusalCode::DepthExceeded
    );
}

#[test]
fn bracket_bomb_is_refused_without_recursion() {
    let bomb = "[".repeat(100_000);
    let err = decode_canonical_value(bomb.as_bytes(), Limits::GENERIC).unwrap_err();
    assert_eq!((err.code, err.offset), (RefusalCode::DepthExceeded, 64));
    let bomb = "{\"a\":".repeat(100_000);
    let err = decode_canonical_value(bomb.as_bytes(), Limits::GENERIC).unwrap_err();
    assert_eq!(err.code, RefusalCode::DepthExceeded);
}

#[test]
fn generic_decoder_accepts_exactly_canonical_values() {
    for ok in [
        "0",
        "-1",
        "9007199254740991",
        "-9007199254740991",
        "true",
        "false",
        "null",
        "\"\"",
        "[]",
        "{}",
        "{\"a\":[1,{\"b\":null}],\"b\":\"\\u001f\\n\"}",
        // DEL is written literally.
        "\"\u{7f}\"",
        // RFC 8785 orders keys by UTF-16 code units: U+1F600 (D83D DE00) sorts before U+FB01.
        "{\"\u{1f600}\":1,\"\u{fb01}\":2}",
    ] {
        let v = decode_canonical_value(ok.as_bytes(), Limits::GENERIC)
            .unwrap_or_else(|e| panic!("{ok}: {e}"));
        assert_eq!(encode_value(&v).unwrap(), ok.as_bytes(), "{ok}");
    }
    for (bad, code) in [
        (
            "{\"\u{fb01}\":2,\"\u{1f600}\":1}",
            RefusalCode::UnsortedKeys,
        ),
        ("{\"b\":1,\"a\":2}", RefusalCode::UnsortedKeys),
        ("{\"a\":1,\"a\":2}", RefusalCode::DuplicateKey),
        ("[1,]", RefusalCode::Syntax),
        ("{\"a\":1,}", RefusalCode::Syntax),
        ("nul", RefusalCode::Truncated),
        ("tru ", RefusalCode::Syntax),
        ("1 ", RefusalCode::TrailingBytes),
        ("[1 ]", RefusalCode::Whitespace),
        ("-", RefusalCode::Truncated),
        ("-a", RefusalCode::Syntax),
        ("[-0]", RefusalCode::NumberNegativeZero),
        ("00", RefusalCode::NumberLeadingZero),
        ("1.5", RefusalCode::NumberFraction),
        ("1E5", RefusalCode::NumberExponent),
        ("-9007199254740992", RefusalCode::IntegerOutOfRange),
        ("\"\\u0020\"", RefusalCode::EscapeNotNeeded),
        ("\"\\u0022\"", RefusalCode::EscapeShortFormAvailable),
        ("\"\\u005c\"", RefusalCode::EscapeShortFormAvailable),
        ("\"\\udc00\"", RefusalCode::LoneSurrogate),
        ("\"\\ud800\\u0041\"", RefusalCode::LoneSurrogate),
        ("\"\\ud800x\"", RefusalCode::LoneSurrogate),
        ("\"\\u007f\"", RefusalCode::EscapeNotNeeded),
    ] {
        assert_eq!(
            decode_canonical_value(bad.as_bytes(), Limits::GENERIC)
                .unwrap_err()
                .code,
            code,
            "{bad}"
        );
    }
    assert!(encode_value(&serde_json::json!(1.5)).is_err());
    assert!(encode_value(&serde_json::json!(1.0)).is_err());
    assert!(encode_value(&serde_json::json!(9007199254740992u64)).is_err());
}

#[test]
fn encoder_refuses_what_the_decoder_would_refuse_and_writes_nothing() {
    let max = jouleclaw_stream::canon::MAX_SAFE_INTEGER;
    type Mutation = Box<dyn Fn(&mut StreamWindowReceipt)>;
    let cases: Vec<(&str, Mutation)> = vec![
        ("tick_count", Box::new(move |r| r.tick_count = max + 1)),
        ("window_id", Box::new(move |r| r.window_id = max + 1)),
        ("joules_uj", Box::new(move |r| r.joules_uj = u64::MAX)),
        ("steward", Box::new(|r| r.steward.clear())),
        ("stream_id", Box::new(|r| r.stream_id.clear())),
        (
            "verdict.chain",
            Box::new(|r| r.verdict = WindowVerdict::Pass { chain: vec![] }),
        ),
        (
            "verdict.chain",
            Box::new(|r| {
                r.verdict = WindowVerdict::Pass {
                    chain: vec![String::new()],
                }
            }),
        ),
        (
            "verdict.oracle",
            Box::new(|r| r.verdict = WindowVerdict::fail("", "x")),
        ),
        ("steward", Box::new(|r| r.steward = "s".repeat(4097))),
        ("id", Box::new(|r| r.stream_id = "s".repeat(4092))),
        (
            "verdict.reason",
            Box::new(|r| r.verdict = WindowVerdict::fail("o", "r".repeat(4097))),
        ),
        (
            "verdict.chain",
            Box::new(|r| {
                r.verdict = WindowVerdict::Pass {
                    chain: vec!["n".repeat(4097)],
                }
            }),
        ),
        (
            "receipt",
            Box::new(|r| {
                r.verdict = WindowVerdict::Pass {
                    chain: (0..20)
                        .map(|i| format!("{i:02}{}", "n".repeat(4000)))
                        .collect(),
                }
            }),
        ),
        (
            "verdict.seen_at",
            Box::new(move |r| r.verdict = WindowVerdict::Yield { seen_at: max + 1 }),
        ),
        (
            "conservation.unaccounted",
            Box::new(move |r| {
                r.conservation = WindowConservationFinding::Hallucination {
                    unaccounted: max + 1,
                }
            }),
        ),
        (
            "conservation.outbound_ts_ns",
            Box::new(move |r| {
                r.conservation = WindowConservationFinding::BargeInIgnored {
                    barge_in_ts_ns: 1,
                    outbound_ts_ns: max + 1,
                }
            }),
        ),
    ];
    for (field, mutate) in cases {
        let mut r = receipt(1);
        r.encode().unwrap();
        mutate(&mut r);
        let mut out = b"prefix".to_vec();
        let err = r.encode_into(&mut out).unwrap_err();
        assert_eq!(out, b"prefix", "{field}: nothing written");
        match err {
            Jcr1Error::Unencodable { field: f, .. } => assert_eq!(f, field),
            e => panic!("{field}: {e}"),
        }
    }
}

/// The independent reference: the same receipt as a serde_json value, serialized with sorted
/// keys (serde_json's default map) and no whitespace.
fn reference_bytes(r: &StreamWindowReceipt) -> Vec<u8> {
    use serde_json::json;
    let verdict = match &r.verdict {
        WindowVerdict::Pass { chain } => json!({"kind": "pass", "chain": chain}),
        WindowVerdict::Yield { seen_at } => json!({"kind": "yield", "seen_at": seen_at}),
        WindowVerdict::Fail { oracle, reason } => {
            json!({"kind": "fail", "oracle": oracle, "reason": reason})
        }
        WindowVerdict::NeedMore { oracle, reason } => {
            json!({"kind": "need_more", "oracle": oracle, "reason": reason})
        }
    };
    let conservation = match r.conservation {
        WindowConservationFinding::Conforming => json!({"kind": "conforming"}),
        WindowConservationFinding::Hallucination { unaccounted } => {
            json!({"kind": "hallucination", "unaccounted": unaccounted})
        }
        WindowConservationFinding::BargeInIgnored {
            barge_in_ts_ns,
            outbound_ts_ns,
        } => {
            json!({"kind": "barge_in_ignored", "barge_in_ts_ns": barge_in_ts_ns, "outbound_ts_ns": outbound_ts_ns})
        }
    };
    let v = json!({
        "jc_receipt": "stream-window/1",
        "id": format!("{}:{:04}", r.stream_id, r.window_id),
        "closed_at": r.closed_at.to_string(),
        "steward": r.steward,
        "stream_id": r.stream_id,
        "window_id": r.window_id,
        "window_hash": r.window_hash.to_hex().to_string(),
        "tick_count": r.tick_count,
        "inbound_bytes": r.inbound_bytes,
        "outbound_bytes": r.outbound_bytes,
        "joules_uj": r.joules_uj,
        "energy_provenance": r.energy_provenance.as_str(),
        "verdict": verdict,
        "conservation": conservation,
    });
    serde_json::to_vec(&v).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn decode_of_encode_is_identity_and_bytes_are_canonical(r in any_receipt()) {
        let bytes = r.encode().unwrap();
        prop_assert_eq!(decode_receipt(&bytes).unwrap(), r.clone());
        prop_assert_eq!(&feed(bytes.chunks(7)).unwrap(), &r);
        let v = decode_canonical_value(&bytes, Limits::GENERIC).unwrap();
        prop_assert_eq!(encode_value(&v).unwrap(), bytes.clone());
        // serde_json escapes exactly as RFC 8785 does and sorts ASCII keys the same way.
        prop_assert_eq!(reference_bytes(&r), bytes);
    }

    #[test]
    fn mutations_never_yield_a_different_accepted_receipt(
        r in any_receipt(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..4),
    ) {
        let mut bytes = r.encode().unwrap();
        for (at, byte, op) in edits {
            let i = at.index(bytes.len() + 1);
            match op {
                0 if i < bytes.len() => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ if i < bytes.len() => { bytes.remove(i); }
                _ => bytes.push(byte),
            }
        }
        if let Ok(got) = decode_receipt(&bytes) {
            prop_assert_eq!(got.encode().unwrap(), bytes);
        }
    }
}
