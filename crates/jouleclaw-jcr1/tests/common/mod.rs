//! Shared corpus builders for the jcr1 tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jouleclaw_jcr1::*;
use jouleclaw_stream::WindowConservationFinding;
use jouleclaw_stream_oracle::WindowVerdict;
use jouleclaw_testkit::{or_not_run, repo};
use proptest::prelude::*;

/// The repository's `conformance/<name>` (`None` in a crate built alone: see
/// `jouleclaw_testkit::repo`).
pub fn conformance_path(name: &str) -> Option<std::path::PathBuf> {
    repo::path(&format!("conformance/{name}"))
}

/// The repository's `conformance/<name>` as JSON (`None` in a crate built alone).
pub fn read_json(name: &str) -> Option<serde_json::Value> {
    let text = repo::file(&format!("conformance/{name}"))?;
    Some(serde_json::from_str(&text).unwrap())
}

/// Writes `built` when `JOULECLAW_REGEN_VECTORS` is set, then asserts the file equals it
/// (nothing in a crate built alone).
pub fn check_generated(name: &str, built: &str) {
    jouleclaw_testkit::check_generated(
        or_not_run!(conformance_path(name)),
        built,
        "the generator in tests/ changed",
    );
}

/// Checks that `conformance/<name>` holds `built` as pretty JSON with a final newline (see
/// [`check_generated`]), and returns the file as read.
pub fn current(name: &str, built: &serde_json::Value) -> Option<serde_json::Value> {
    check_generated(name, &(serde_json::to_string_pretty(built).unwrap() + "\n"));
    read_json(name)
}

pub use jouleclaw_testkit::receipts::SEED_STEWARD as STEWARD;

/// The seed receipt with window `window_id` and a window hash of its own.
pub fn receipt(window_id: u64) -> StreamWindowReceipt {
    StreamWindowReceipt {
        window_id,
        window_hash: blake3::hash(format!("window {window_id}").as_bytes()),
        ..jouleclaw_testkit::receipts::seed_receipt()
    }
}

/// The extended receipt vectors (n >= 4), covering every verdict and conservation variant.
pub fn extended_vectors() -> Vec<(u64, &'static str, StreamWindowReceipt)> {
    let mut v = Vec::new();
    let mut r = receipt(4);
    r.closed_at = UtcSecond::parse("2026-06-05T00:00:03Z").unwrap();
    r.verdict = WindowVerdict::fail(
        "per-tick:json-document",
        "outbound text is not a complete JSON document",
    );
    v.push((4, "Fail: a per-request oracle lifted per tick rejects the outbound text; conservation conforming.", r));

    let mut r = receipt(5);
    r.closed_at = UtcSecond::parse("2026-06-05T00:00:04Z").unwrap();
    r.verdict = WindowVerdict::need_more("per-turn:byte-budget", "turn still open at window close");
    r.conservation = WindowConservationFinding::Hallucination { unaccounted: 512 };
    r.energy_provenance = EnergyProvenance::Rapl;
    v.push((
        5,
        "NeedMore with a Hallucination summary and Rapl provenance.",
        r,
    ));

    let mut r = receipt(8);
    r.closed_at = UtcSecond::parse("2026-06-05T00:00:05Z").unwrap();
    r.verdict = WindowVerdict::Yield { seen_at: 7 };
    r.conservation = WindowConservationFinding::BargeInIgnored {
        barge_in_ts_ns: 1_450_000_000,
        outbound_ts_ns: 1_610_000_000,
    };
    r.outbound_bytes = 9600;
    r.energy_provenance = EnergyProvenance::HwShunt;
    v.push((6, "Yield carried into window 8 with BargeInIgnored: TTS still emitting 160 ms after the barge-in.", r));

    let mut r = receipt(12_345);
    r.closed_at = UtcSecond::parse("2024-02-29T23:59:59Z").unwrap();
    r.steward = "steward \"q\" \\ back\u{1}\tslash é 音声 😀 /\u{7f}\u{2028}".into();
    r.stream_id = "stream:ünïcode/😀".into();
    r.verdict = WindowVerdict::Pass {
        chain: vec![
            "always-pass-stream".into(),
            "barge-in-detector".into(),
            "per-tick:utf8-text".into(),
        ],
    };
    v.push((7, "Pass chain of three backends; escapes and non-ASCII in steward and stream_id; five-digit window id; leap day.", r));

    let max = jouleclaw_stream::canon::MAX_SAFE_INTEGER;
    let mut r = receipt(max);
    r.closed_at = UtcSecond::parse("9999-12-31T23:59:59Z").unwrap();
    r.tick_count = max;
    r.inbound_bytes = max;
    r.outbound_bytes = max;
    r.joules_uj = max;
    r.verdict = WindowVerdict::Yield { seen_at: max };
    r.conservation = WindowConservationFinding::Hallucination { unaccounted: max };
    v.push((
        8,
        "Every counter at 2^53-1 and the latest representable closed_at.",
        r,
    ));

    let mut r = receipt(0);
    r.closed_at = UtcSecond::parse("0000-01-01T00:00:00Z").unwrap();
    r.tick_count = 0;
    r.inbound_bytes = 0;
    r.outbound_bytes = 0;
    r.joules_uj = 0;
    r.verdict = WindowVerdict::fail("x", "");
    r.conservation = WindowConservationFinding::BargeInIgnored {
        barge_in_ts_ns: 0,
        outbound_ts_ns: 0,
    };
    v.push((
        9,
        "Every counter zero, window 0, the earliest representable closed_at, an empty fail reason.",
        r,
    ));
    v
}

/// The canonical bytes of seed vector 1 (`None` in a crate built alone).
pub fn base() -> Option<String> {
    Some(String::from_utf8(seed_receipt(1)?.encode().unwrap()).unwrap())
}

/// The receipt of the seed's vector `n` (1-3) as checked in (`None` in a crate built alone).
pub fn seed_receipt(n: usize) -> Option<StreamWindowReceipt> {
    let doc = read_json("stream-window-vectors.json")?;
    let v = &doc["vectors"][n - 1]["receipt"];
    let bytes = encode_value(v).unwrap();
    Some(decode_receipt(&bytes).unwrap())
}

fn rep(s: &str, from: &str, to: &str) -> Vec<u8> {
    assert!(s.contains(from), "{from}");
    s.replacen(from, to, 1).into_bytes()
}

fn rep_bytes(s: &str, from: &str, to: &[u8]) -> Vec<u8> {
    let i = s.find(from).expect(from);
    let mut out = s.as_bytes()[..i].to_vec();
    out.extend_from_slice(to);
    out.extend_from_slice(&s.as_bytes()[i + from.len()..]);
    out
}

/// Must-refuse inputs: (description, bytes, expected code) (`None` in a crate built alone).
pub fn negative_cases() -> Option<Vec<(String, Vec<u8>, &'static str)>> {
    let s = base()?;
    let steward = "\"steward\":\"did:keri";
    let mut c: Vec<(String, Vec<u8>, &'static str)> = Vec::new();
    let mut add = |d: &str, b: Vec<u8>, code: &'static str| c.push((d.to_owned(), b, code));
    add(
        "space after a colon",
        rep(&s, "\"tick_count\":4", "\"tick_count\": 4"),
        "whitespace",
    );
    let pretty =
        serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(&s).unwrap())
            .unwrap();
    add("pretty-printed", pretty.into_bytes(), "whitespace");
    add(
        "unsorted keys: conservation before closed_at",
        rep(
            &s,
            "\"closed_at\":\"2026-06-05T00:00:00Z\",\"conservation\":{\"kind\":\"conforming\"}",
            "\"conservation\":{\"kind\":\"conforming\"},\"closed_at\":\"2026-06-05T00:00:00Z\"",
        ),
        "unsorted_keys",
    );
    add(
        "duplicate key tick_count",
        rep(
            &s,
            "\"tick_count\":4,",
            "\"tick_count\":4,\"tick_count\":4,",
        ),
        "duplicate_key",
    );
    add(
        "fraction 4.0",
        rep(&s, "\"tick_count\":4", "\"tick_count\":4.0"),
        "number_fraction",
    );
    add(
        "exponent 64e2",
        rep(&s, "\"inbound_bytes\":6400", "\"inbound_bytes\":64e2"),
        "number_exponent",
    );
    add(
        "leading zero 04",
        rep(&s, "\"tick_count\":4", "\"tick_count\":04"),
        "number_leading_zero",
    );
    add(
        "negative zero",
        rep(&s, "\"tick_count\":4", "\"tick_count\":-0"),
        "number_negative_zero",
    );
    add(
        "plus sign",
        rep(&s, "\"tick_count\":4", "\"tick_count\":+4"),
        "number_plus",
    );
    add(
        "2^53 is out of range",
        rep(&s, "\"joules_uj\":350", "\"joules_uj\":9007199254740992"),
        "integer_out_of_range",
    );
    add(
        "negative where unsigned",
        rep(&s, "\"tick_count\":4", "\"tick_count\":-4"),
        "negative_unsigned",
    );
    add(
        "string where integer",
        rep(&s, "\"tick_count\":4", "\"tick_count\":\"4\""),
        "wrong_type",
    );
    add(
        "boolean where integer",
        rep(&s, "\"tick_count\":4", "\"tick_count\":true"),
        "wrong_type",
    );
    add(
        "null",
        rep(&s, "\"joules_uj\":350", "\"joules_uj\":null"),
        "null",
    );
    add("null document", b"null".to_vec(), "null");
    add(
        "unknown field",
        rep(
            &s,
            "\"energy_provenance\":\"Estimator\",",
            "\"energy_provenance\":\"Estimator\",\"extra\":1,",
        ),
        "unknown_field",
    );
    add(
        "missing tick_count",
        rep(&s, "\"tick_count\":4,", ""),
        "missing_field",
    );
    add(
        "jc_receipt stream-window/2",
        rep(&s, "stream-window/1", "stream-window/2"),
        "wrong_schema",
    );
    add(
        "unknown verdict kind",
        rep(&s, "\"kind\":\"pass\"", "\"kind\":\"maybe\""),
        "unknown_verdict_kind",
    );
    add(
        "unknown conservation kind",
        rep(&s, "\"kind\":\"conforming\"", "\"kind\":\"fine\""),
        "unknown_conservation_kind",
    );
    add(
        "unknown energy_provenance",
        rep(&s, "\"Estimator\"", "\"Guess\""),
        "unknown_energy_provenance",
    );
    add(
        "window_hash uppercase",
        rep(&s, &"a".repeat(64), &"A".repeat(64)),
        "bad_window_hash",
    );
    add(
        "window_hash 63 digits",
        rep(&s, &"a".repeat(64), &"a".repeat(63)),
        "bad_window_hash",
    );
    add(
        "closed_at month 13",
        rep(&s, "2026-06-05T00", "2026-13-05T00"),
        "bad_closed_at",
    );
    add(
        "closed_at hour 24",
        rep(&s, "2026-06-05T00", "2026-06-05T24"),
        "bad_closed_at",
    );
    add(
        "closed_at 30 February",
        rep(&s, "2026-06-05T00", "2026-02-30T00"),
        "bad_closed_at",
    );
    add(
        "closed_at with fractional seconds",
        rep(&s, "00:00:00Z", "00:00:00.0Z"),
        "bad_closed_at",
    );
    add(
        "id not zero-padded",
        rep(&s, "stream-demo:0001", "stream-demo:1"),
        "id_mismatch",
    );
    add(
        "id of another window",
        rep(&s, "stream-demo:0001", "stream-demo:0002"),
        "id_mismatch",
    );
    add(
        "escaped solidus",
        rep(&s, steward, "\"steward\":\"did:keri\\/"),
        "escape_solidus",
    );
    add(
        "escaped printable ASCII",
        rep(&s, steward, "\"steward\":\"\\u0064id:keri"),
        "escape_not_needed",
    );
    add(
        "escaped non-ASCII",
        rep(&s, steward, "\"steward\":\"\\u00e9did:keri"),
        "escape_not_needed",
    );
    add(
        "escaped surrogate pair",
        rep(&s, steward, "\"steward\":\"\\ud83d\\ude00did:keri"),
        "escape_not_needed",
    );
    add(
        "uppercase hex escape",
        rep(&s, steward, "\"steward\":\"\\u001Fdid:keri"),
        "escape_uppercase_hex",
    );
    add(
        "\\u000a where \\n exists",
        rep(&s, steward, "\"steward\":\"\\u000adid:keri"),
        "escape_short_form_available",
    );
    add(
        "unknown escape \\x",
        rep(&s, steward, "\"steward\":\"\\xdid:keri"),
        "escape_invalid",
    );
    add(
        "raw control character",
        rep_bytes(&s, "did:keri", b"did\x01:keri"),
        "raw_control_char",
    );
    add(
        "invalid UTF-8 byte FF",
        rep_bytes(&s, "did:keri", b"did\xff:keri"),
        "invalid_utf8",
    );
    add(
        "truncated UTF-8 sequence",
        rep_bytes(&s, "did:keri", b"did\xc3:keri"),
        "invalid_utf8",
    );
    add(
        "overlong UTF-8 for '/'",
        rep_bytes(&s, "did:keri", b"did\xc0\xaf:keri"),
        "overlong_utf8",
    );
    add(
        "overlong 3-byte UTF-8",
        rep_bytes(&s, "did:keri", b"did\xe0\x80\xaf:keri"),
        "overlong_utf8",
    );
    add(
        "lone surrogate escape",
        rep(&s, steward, "\"steward\":\"\\ud800did:keri"),
        "lone_surrogate",
    );
    add(
        "UTF-8-encoded surrogate",
        rep_bytes(&s, "did:keri", b"did\xed\xa0\x80:keri"),
        "lone_surrogate",
    );
    add(
        "byte-order mark",
        [b"\xef\xbb\xbf".as_slice(), s.as_bytes()].concat(),
        "bom",
    );
    add("leading space", format!(" {s}").into_bytes(), "whitespace");
    add("leading garbage", format!("x{s}").into_bytes(), "syntax");
    add(
        "trailing newline",
        format!("{s}\n").into_bytes(),
        "trailing_bytes",
    );
    add(
        "trailing second document",
        format!("{s}{s}").into_bytes(),
        "trailing_bytes",
    );
    add("empty input", Vec::new(), "empty_input");
    add(
        "truncated at half",
        s.as_bytes()[..s.len() / 2].to_vec(),
        "truncated",
    );
    add(
        "truncated before the final brace",
        s.as_bytes()[..s.len() - 1].to_vec(),
        "truncated",
    );
    add("array at the root", b"[]".to_vec(), "wrong_type");
    add(
        "100,000-deep bracket bomb in the chain",
        rep(
            &s,
            "\"chain\":[\"always-pass-stream\"]",
            &format!("\"chain\":{}", "[".repeat(100_000)),
        ),
        "depth_exceeded",
    );
    add(
        "empty pass chain",
        rep(&s, "[\"always-pass-stream\"]", "[]"),
        "empty_chain",
    );
    add(
        "empty chain name",
        rep(&s, "[\"always-pass-stream\"]", "[\"\"]"),
        "empty_string",
    );
    add(
        "empty steward",
        rep(&s, "\"did:keri:EJ9testStewardAID000000000000000\"", "\"\""),
        "empty_string",
    );
    add(
        "pass verdict with a seen_at",
        rep(&s, "\"kind\":\"pass\"", "\"kind\":\"pass\",\"seen_at\":1"),
        "unknown_field",
    );
    add(
        "fail verdict without reason",
        rep(
            &s,
            "{\"chain\":[\"always-pass-stream\"],\"kind\":\"pass\"}",
            "{\"kind\":\"fail\",\"oracle\":\"o\"}",
        ),
        "missing_field",
    );
    add(
        "hallucination without unaccounted",
        rep(
            &s,
            "{\"kind\":\"conforming\"}",
            "{\"kind\":\"hallucination\"}",
        ),
        "missing_field",
    );
    add(
        "steward of 4097 bytes",
        rep(&s, STEWARD, &"s".repeat(4097)),
        "string_too_long",
    );
    let names: Vec<String> = (0..65).map(|i| format!("\"o{i:02}\"")).collect();
    add(
        "pass chain of 65 names",
        rep(
            &s,
            "[\"always-pass-stream\"]",
            &format!("[{}]", names.join(",")),
        ),
        "array_too_long",
    );
    let names: Vec<String> = (0..20)
        .map(|i| format!("\"{i:02}{}\"", "n".repeat(4000)))
        .collect();
    add(
        "document over 65,536 bytes",
        rep(
            &s,
            "[\"always-pass-stream\"]",
            &format!("[{}]", names.join(",")),
        ),
        "document_too_large",
    );
    Some(c)
}

pub fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9:/._-]{1,24}",
        "\\PC{1,12}",
        prop::collection::vec(any::<char>(), 1..12).prop_map(|v| v.into_iter().collect()),
    ]
}

pub fn uint() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..100_000,
        Just(jouleclaw_stream::canon::MAX_SAFE_INTEGER),
        0..=jouleclaw_stream::canon::MAX_SAFE_INTEGER
    ]
}

pub fn any_receipt() -> impl Strategy<Value = StreamWindowReceipt> {
    let verdict = prop_oneof![
        prop::collection::vec(text(), 1..4).prop_map(|chain| WindowVerdict::Pass { chain }),
        uint().prop_map(|seen_at| WindowVerdict::Yield { seen_at }),
        (text(), any::<String>()).prop_map(|(o, r)| WindowVerdict::fail(o, r)),
        (text(), any::<String>()).prop_map(|(o, r)| WindowVerdict::need_more(o, r)),
    ];
    let cons = prop_oneof![
        Just(WindowConservationFinding::Conforming),
        uint().prop_map(|unaccounted| WindowConservationFinding::Hallucination { unaccounted }),
        (uint(), uint()).prop_map(|(a, b)| WindowConservationFinding::BargeInIgnored {
            barge_in_ts_ns: a,
            outbound_ts_ns: b
        }),
    ];
    let prov = prop_oneof![
        Just(EnergyProvenance::Estimator),
        Just(EnergyProvenance::Rapl),
        Just(EnergyProvenance::HwShunt)
    ];
    (
        (
            -62_167_219_200i64..=253_402_300_799,
            text(),
            text(),
            uint(),
            any::<[u8; 32]>(),
        ),
        (uint(), uint(), uint(), uint(), prov, verdict, cons),
    )
        .prop_map(
            |(
                (t, steward, stream_id, window_id, h),
                (tick_count, i, o, j, p, verdict, conservation),
            )| {
                StreamWindowReceipt {
                    closed_at: UtcSecond::from_unix(t).unwrap(),
                    steward,
                    stream_id,
                    window_id,
                    window_hash: blake3::Hash::from_bytes(h),
                    tick_count,
                    inbound_bytes: i,
                    outbound_bytes: o,
                    joules_uj: j,
                    energy_provenance: p,
                    verdict,
                    conservation,
                }
            },
        )
}
