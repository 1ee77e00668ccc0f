//! The tick trace and stream spec file formats (spec/TICK-TRACE.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use jouleclaw_pipeline::demo;
use jouleclaw_pipeline::trace::*;
use jouleclaw_stream::{StreamSpec, Tick, TickMarker};

fn spec() -> Arc<StreamSpec> {
    Arc::new(StreamSpec::duplex_voice_default())
}

#[test]
fn trace_lines_round_trip_the_demo_ticks() {
    let spec = spec();
    for tick in demo::ticks() {
        let mut line = String::new();
        write_trace_line(&tick, &spec, &mut line);
        assert_eq!(
            parse_trace_line(line.as_bytes(), &spec).unwrap(),
            Some(tick)
        );
    }
    // An explicit window id that differs from the derived one is written and read back.
    let odd = Tick::marker(5, 0, TickMarker::Custom("x\"y".into()), 0);
    let mut line = String::new();
    write_trace_line(&odd, &spec, &mut line);
    assert!(line.contains("\"window_id\":5"), "{line}");
    assert_eq!(parse_trace_line(line.as_bytes(), &spec).unwrap(), Some(odd));
}

#[test]
fn trace_line_refusals_and_their_neighbours() {
    let spec = spec();
    let p = |s: &str| parse_trace_line(s.as_bytes(), &spec);
    let code = |s: &str| p(s).unwrap_err().code();
    assert_eq!(p("  \r\n").unwrap(), None);
    let ok = r#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":4}"#;
    let t = p(ok).unwrap().unwrap();
    assert_eq!((t.window_id, t.bytes.len()), (0, 4));
    assert_eq!(
        p(r#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":4,"window_id":3}"#)
            .unwrap()
            .unwrap()
            .window_id,
        3
    );
    for (line, want) in [
        ("{", "trace_bad_json"),
        (
            r#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":4,"extra":1}"#,
            "trace_bad_json",
        ),
        (
            r#"{"channel_id":1,"kind":"audio","bytes_len":4}"#,
            "trace_bad_json",
        ),
        (
            r#"{"ts_ns":-1,"channel_id":1,"kind":"audio","bytes_len":4}"#,
            "trace_bad_json",
        ),
        (
            r#"{"ts_ns":5,"channel_id":1,"kind":"sound","bytes_len":4}"#,
            "trace_unknown_kind",
        ),
        (
            r#"{"ts_ns":5,"channel_id":0,"kind":"marker"}"#,
            "trace_bad_marker",
        ),
        (
            r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":"boom"}"#,
            "trace_bad_marker",
        ),
        (
            r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":{"custom":"a","b":1}}"#,
            "trace_bad_marker",
        ),
        (
            r#"{"ts_ns":5,"channel_id":1,"kind":"audio","marker":"start","bytes_len":1}"#,
            "trace_bad_marker",
        ),
        (
            r#"{"ts_ns":5,"channel_id":1,"kind":"audio"}"#,
            "trace_bad_payload",
        ),
        (
            r#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":1,"bytes_hex":"00"}"#,
            "trace_bad_payload",
        ),
        (
            r#"{"ts_ns":5,"channel_id":2,"kind":"text","bytes_hex":"ABCD"}"#,
            "trace_bad_payload",
        ),
        (
            r#"{"ts_ns":5,"channel_id":2,"kind":"text","bytes_hex":"abc"}"#,
            "trace_bad_payload",
        ),
    ] {
        assert_eq!(code(line), want, "{line}");
    }
    assert!(p(r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":{"custom":"a"}}"#).is_ok());
    assert_eq!(
        p(r#"{"ts_ns":5,"channel_id":2,"kind":"text","bytes_hex":"abcd"}"#)
            .unwrap()
            .unwrap()
            .bytes[..],
        [0xab, 0xcd]
    );
    let max = spec.max_chunk_bytes;
    assert_eq!(
        code(&format!(
            r#"{{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":{}}}"#,
            max + 1
        )),
        "trace_bad_payload"
    );
    assert!(
        p(&format!(
            r#"{{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":{max}}}"#
        ))
        .is_ok()
    );
    assert_eq!(
        parse_trace_line(b"{\"ts_ns\":\xff}", &spec)
            .unwrap_err()
            .code(),
        "trace_not_utf8"
    );
    let long = vec![b' '; max_trace_line_len(&spec) + 1];
    assert_eq!(
        parse_trace_line(&long, &spec).unwrap_err().code(),
        "trace_line_too_long"
    );
    assert_eq!(parse_trace_line(&long[1..], &spec).unwrap(), None);
}

#[test]
fn spec_files_round_trip_and_refuse_bad_fields() {
    let default = StreamSpec::duplex_voice_default();
    assert_eq!(spec_from_json(&spec_to_json(&default)).unwrap(), default);
    let bad_dir = spec_to_json(&default).replacen("\"inbound\"", "\"sideways\"", 1);
    assert_eq!(
        spec_from_json(&bad_dir).unwrap_err().code(),
        "spec_bad_json"
    );
    let bad_kind = spec_to_json(&default).replacen("\"marker\"", "\"smell\"", 1);
    assert_eq!(
        spec_from_json(&bad_kind).unwrap_err().code(),
        "spec_bad_json"
    );
    let zero =
        spec_to_json(&default).replacen("\"tick_window_ms\": 200", "\"tick_window_ms\": 0", 1);
    assert_eq!(
        spec_from_json(&zero).unwrap_err().code(),
        "spec_zero_window"
    );
    assert_eq!(spec_from_json("{}").unwrap_err().code(), "spec_bad_json");
}

#[test]
fn null_is_not_absent_in_trace_lines() {
    let spec = spec();
    let code = |s: &str| parse_trace_line(s.as_bytes(), &spec).unwrap_err().code();
    for (line, want) in [
        (
            r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":null}"#,
            "trace_bad_marker",
        ),
        (
            r#"{"ts_ns":5,"channel_id":2,"kind":"text","bytes_hex":null,"bytes_len":1}"#,
            "trace_bad_json",
        ),
        (
            r#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":null,"bytes_hex":"00"}"#,
            "trace_bad_json",
        ),
        (
            r#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":2,"window_id":null}"#,
            "trace_bad_json",
        ),
    ] {
        assert_eq!(code(line), want, "{line}");
    }
    // Accepted neighbours: the same lines without the null fields.
    for ok in [
        r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":"start"}"#,
        r#"{"ts_ns":5,"channel_id":2,"kind":"text","bytes_len":1}"#,
        r#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_hex":"00"}"#,
        r#"{"ts_ns":5,"channel_id":1,"kind":"audio","bytes_len":2}"#,
    ] {
        assert!(
            parse_trace_line(ok.as_bytes(), &spec).unwrap().is_some(),
            "{ok}"
        );
    }
}

#[test]
fn a_marker_object_with_a_repeated_or_unknown_key_is_refused() {
    let spec = spec();
    let p = |s: &str| parse_trace_line(s.as_bytes(), &spec);
    for bad in [
        r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":{"custom":"a","custom":"b"}}"#,
        r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":{"custom":"a","x":1}}"#,
        r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":{"custom":1}}"#,
        r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":{}}"#,
        r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":["start"]}"#,
        r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":7}"#,
    ] {
        assert_eq!(p(bad).unwrap_err().code(), "trace_bad_marker", "{bad}");
    }
    let t = p(r#"{"ts_ns":5,"channel_id":0,"kind":"marker","marker":{"custom":"a"}}"#)
        .unwrap()
        .unwrap();
    assert_eq!(
        t.kind,
        jouleclaw_stream::TickKind::Marker(TickMarker::Custom("a".into()))
    );
}

#[test]
fn the_line_limit_does_not_count_the_line_end() {
    let spec = spec();
    let max = max_trace_line_len(&spec);
    let mut line = vec![b' '; max];
    // A blank line of exactly the limit, with either line end, is accepted.
    for end in [&b""[..], b"\n", b"\r\n"] {
        let mut l = line.clone();
        l.extend_from_slice(end);
        assert_eq!(parse_trace_line(&l, &spec).unwrap(), None);
    }
    // One byte more is refused, whatever the line end.
    line.push(b' ');
    for end in [&b""[..], b"\n", b"\r\n"] {
        let mut l = line.clone();
        l.extend_from_slice(end);
        assert_eq!(
            parse_trace_line(&l, &spec).unwrap_err().code(),
            "trace_line_too_long"
        );
    }
}
