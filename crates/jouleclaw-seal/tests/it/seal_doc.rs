//! The strict seal decoder: round trips, refusals, and chunk invariance.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jouleclaw_jcr1::UtcSecond;
use jouleclaw_seal::*;
use jouleclaw_testkit::{or_not_run, repo};
use proptest::prelude::*;
use serde_json::Value;

fn seal() -> StreamSeal {
    StreamSeal {
        stream_id: "stream-demo".into(),
        steward: "did:example:steward".into(),
        tree_size: 4,
        root: [0xab; 32],
        first_window_id: 1,
        last_window_id: 5,
        empty_windows_skipped: 1,
        closed_at: UtcSecond::parse("2026-06-05T00:00:01Z").unwrap(),
        is_final: false,
        documents: None,
    }
}

/// whole, every two-piece split, and byte by byte.
fn decode_all_ways(bytes: &[u8]) -> Result<StreamSeal, SealRefusal> {
    let whole = decode_seal(bytes);
    for cut in 0..=bytes.len() {
        let mut d = SealDecoder::new();
        let early = d.push(&bytes[..cut]);
        let late = d.push(&bytes[cut..]);
        let _ = d.push(&[]);
        let got = d.finish();
        assert_eq!(got, whole, "split at {cut}");
        if let Some(r) = early {
            assert_eq!(late, Some(r), "sticky");
        }
    }
    let mut d = SealDecoder::new();
    for b in bytes {
        d.push(std::slice::from_ref(b));
    }
    assert_eq!(d.finish(), whole, "byte-wise");
    whole
}

#[test]
fn a_seal_round_trips_byte_exactly_in_canonical_key_order() {
    let bytes = seal().encode().unwrap();
    assert_eq!(
        String::from_utf8(bytes.clone()).unwrap(),
        "{\"closed_at\":\"2026-06-05T00:00:01Z\",\"empty_windows_skipped\":1,\"final\":false,\
         \"first_window_id\":1,\"last_window_id\":5,\"root\":\"abababababababababababababababababababababababababababababababab\",\
         \"schema\":\"stream-seal/1\",\"steward\":\"did:example:steward\",\"stream_id\":\"stream-demo\",\"tree_size\":4}"
    );
    assert_eq!(decode_all_ways(&bytes).unwrap(), seal());
    assert_eq!(seal().subject(), "stream-demo:seal:4");
}

#[test]
fn the_encoder_refuses_what_the_decoder_refuses() {
    type Edit = fn(&mut StreamSeal);
    let cases: Vec<(Edit, &str)> = vec![
        (|s| s.tree_size = 0, "tree_size"),
        (|s| s.stream_id.clear(), "stream_id"),
        (|s| s.steward = "x".repeat(4097), "steward"),
        (|s| s.first_window_id = 6, "first_window_id"),
        (|s| s.empty_windows_skipped = 0, "empty_windows_skipped"),
        (|s| s.last_window_id = 1 << 53, "last_window_id"),
    ];
    for (edit, field) in cases {
        let mut s = seal();
        edit(&mut s);
        match s.encode() {
            Err(SealError::Unencodable { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    let mut s = seal();
    s.steward = "x".repeat(4096);
    assert!(decode_seal(&s.encode().unwrap()).is_ok());
}

#[test]
fn every_negative_seal_vector_and_a_large_document_decide_the_same_in_every_chunking() {
    let text = or_not_run!(repo::file("conformance/stream-seal-vectors.json"));
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut n = 0;
    for case in v["negative"].as_array().unwrap() {
        if case["kind"] != "seal_json" {
            continue;
        }
        let bytes = hex::decode(case["input_hex"].as_str().unwrap()).unwrap();
        let r = decode_all_ways(&bytes).unwrap_err();
        assert_eq!(r.code.as_str(), case["expect"], "{}", case["description"]);
        n += 1;
    }
    assert!(n >= 16);
    // Past the 16 KiB limit: refused by push at the limit, unless an earlier byte is wrong.
    let mut big = seal();
    big.steward = "x".repeat(4096);
    let bytes = big.encode().unwrap();
    let mut padded = bytes.clone();
    padded.extend(std::iter::repeat_n(b'x', 20_000));
    let r = decode_seal(&padded).unwrap_err();
    assert_eq!(r.code.as_str(), "trailing_bytes");
    let mut early = bytes.clone();
    early.insert(1, b' ');
    early.extend(std::iter::repeat_n(b'x', 20_000));
    assert_eq!(decode_seal(&early).unwrap_err().code.as_str(), "whitespace");
    let mut d = SealDecoder::new();
    let mut refused_at = None;
    for (i, b) in early.iter().enumerate() {
        if d.push(std::slice::from_ref(b)).is_some() && refused_at.is_none() {
            refused_at = Some(i);
        }
    }
    assert_eq!(refused_at, Some(16_384));
    assert_eq!(d.finish().unwrap_err().code.as_str(), "whitespace");
    let long_string = format!("{{\"closed_at\":\"{}\"}}", "y".repeat(17_000));
    assert_eq!(
        decode_seal(long_string.as_bytes())
            .unwrap_err()
            .code
            .as_str(),
        "string_too_long"
    );
    assert_eq!(decode_seal(b"").unwrap_err().code.as_str(), "empty_input");
    assert_eq!(decode_seal(b"[]").unwrap_err().code.as_str(), "wrong_type");
    assert_eq!(decode_seal(b"null").unwrap_err().code.as_str(), "null");
    assert_eq!(
        decode_seal(br#"{"closed_at":{}}"#)
            .unwrap_err()
            .code
            .as_str(),
        "wrong_type"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_seals_round_trip_and_every_truncation_is_refused(
        tree_size in 1u64..1_000_000,
        first in 0u64..1_000_000,
        empty in 0u64..1000,
        root in any::<[u8; 32]>(),
        secs in 0i64..4_000_000_000,
        is_final in any::<bool>(),
        name in "[a-z:\\-\\u{e9}\\u{1f600}]{1,40}",
    ) {
        let s = StreamSeal {
            stream_id: name.clone(),
            steward: format!("did:{name}"),
            tree_size,
            root,
            first_window_id: first,
            last_window_id: first + tree_size + empty - 1,
            empty_windows_skipped: empty,
            closed_at: UtcSecond::from_unix(secs).unwrap(),
            is_final,
            documents: None,
        };
        let bytes = s.encode().unwrap();
        prop_assert_eq!(decode_seal(&bytes).unwrap(), s);
        for cut in 0..bytes.len() {
            prop_assert!(decode_seal(&bytes[..cut]).is_err());
        }
    }
}
