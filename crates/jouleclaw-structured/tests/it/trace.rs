//! `conformance/traces/tool-call.jsonl` replayed window by window (the driver contract of
//! `spec/STREAM-ORACLE.md`) through `StructuredOutputOracle` with `schemas/tool-call.schema.json`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use bytes::Bytes;
use common::*;
use jouleclaw_stream::{StreamSpec, StreamWindow, Tick, TickKind, TickMarker};
use jouleclaw_stream_oracle::{StreamOracle, WindowContext, WindowVerdict};
use jouleclaw_structured::*;
use jouleclaw_testkit::{or_not_run, repo};
use serde_json::Value;

/// The tool-call trace, a file of the repository (read through `jouleclaw_testkit::repo`).
const TRACE: &str = "conformance/traces/tool-call.jsonl";

fn tick(line: &Value, spec: &StreamSpec) -> Tick {
    let ts = line["ts_ns"].as_u64().unwrap();
    let channel = line["channel_id"].as_u64().unwrap() as u32;
    let window = spec.window_of(ts);
    let bytes = match (&line["bytes_hex"], &line["bytes_len"]) {
        (Value::String(h), _) => Bytes::from(hex::decode(h).unwrap()),
        (_, Value::Number(n)) => Bytes::from(vec![0u8; n.as_u64().unwrap() as usize]),
        _ => Bytes::new(),
    };
    let kind = match line["kind"].as_str().unwrap() {
        "audio" => TickKind::Audio,
        "text" => TickKind::Text,
        "marker" => TickKind::Marker(match line["marker"].as_str().unwrap() {
            "start" => TickMarker::Start,
            "end" => TickMarker::End,
            "end_of_turn" => TickMarker::EndOfTurn,
            "barge_in" => TickMarker::BargeIn,
            other => panic!("{other}"),
        }),
        other => panic!("{other}"),
    };
    Tick::new(window, channel, kind, bytes, ts)
}

/// Early verdicts with their tick's ts_ns.
type Early = Vec<(u64, WindowVerdict)>;

/// (window id, verdict, early verdicts) (`None` in a crate built alone).
fn replay() -> Option<Vec<(u64, WindowVerdict, Early)>> {
    let trace = repo::file(TRACE)?;
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let mut oracle = StructuredOutputOracle::new(tool_call());
    let mut out = Vec::new();
    let mut open: Option<(StreamWindow, Early)> = None;
    for line in trace.lines().filter(|l| !l.trim().is_empty()) {
        let t = tick(&serde_json::from_str(line).unwrap(), &spec);
        if open
            .as_ref()
            .is_some_and(|(w, _)| w.window_id() != t.window_id)
        {
            let (w, early) = open.take().unwrap();
            out.push((
                w.window_id(),
                oracle.judge(&w, &WindowContext::default()),
                early,
            ));
        }
        let (w, early) = open.get_or_insert_with(|| {
            (
                StreamWindow::open(Arc::clone(&spec), t.window_id).unwrap(),
                Vec::new(),
            )
        });
        let ts = t.ts_ns;
        let p = w.push(t).unwrap();
        if let Some(v) = oracle.on_tick(p.tick, p.direction) {
            early.push((ts, v));
        }
    }
    let (w, early) = open.unwrap();
    out.push((
        w.window_id(),
        oracle.judge(&w, &WindowContext::default()),
        early,
    ));
    Some(out)
}

#[test]
fn the_tool_call_trace_passes_its_valid_calls_and_fails_the_off_schema_and_truncated_ones() {
    let r = or_not_run!(replay());
    let kinds: Vec<(u64, &str)> = r.iter().map(|(w, v, _)| (*w, v.kind_str())).collect();
    assert_eq!(
        kinds,
        [
            (0, "pass"),
            (1, "pass"),
            (2, "need_more"),
            (3, "need_more"),
            (4, "pass"),
            (5, "pass"),
            (6, "pass"),
            (7, "pass"),
            (8, "pass"),
            (9, "need_more"),
            (10, "fail"),
            (11, "fail"),
        ]
    );
    let name = format!("structured:{}", tool_call().digest_prefix());
    // The off-schema call fails early on the tick that carries the impossible digit.
    let off = r#"turn 3: above_maximum at byte 46, path "/args/seconds""#;
    assert_eq!(
        r[10].2,
        vec![(2_010_000_000, WindowVerdict::fail(&name, off))]
    );
    assert_eq!(r[10].1, WindowVerdict::fail(&name, off));
    // The truncated call fails on its end_of_turn marker.
    let cut = r#"turn 4: truncated at byte 53, path "/args/text""#;
    assert_eq!(
        r[11].2,
        vec![(2_300_000_000, WindowVerdict::fail(&name, cut))]
    );
    assert_eq!(r[11].1, WindowVerdict::fail(&name, cut));
    // Nothing else is raised early.
    assert_eq!(r.iter().map(|x| x.2.len()).sum::<usize>(), 2);
}
