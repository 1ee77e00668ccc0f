//! `StructuredOutputOracle` over real windows of the duplex voice layout.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use bytes::Bytes;
use common::*;
use jouleclaw_stream::{StreamSpec, StreamWindow, Tick, TickKind, TickMarker, duplex};
use jouleclaw_stream_oracle::{
    BargeInDetector, CompositeStreamOracle, StreamOracle, WindowContext, WindowVerdict,
};
use jouleclaw_structured::*;

const MS: u64 = 1_000_000;

fn text(window: u64, ms: u64, channel: u32, s: &str) -> Tick {
    Tick::new(
        window,
        channel,
        TickKind::Text,
        Bytes::from(s.to_owned()),
        ms * MS,
    )
}

fn marker(window: u64, ms: u64, channel: u32, m: TickMarker) -> Tick {
    Tick::marker(window, channel, m, ms * MS)
}

/// Drives `oracle` over windows of ticks: on_tick for every tick (when `early`), then judge.
/// Returns (early verdicts per window, judged verdict per window).
fn drive(
    oracle: &mut dyn StreamOracle,
    windows: &[Vec<Tick>],
    early: bool,
) -> Vec<(Vec<WindowVerdict>, WindowVerdict)> {
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let mut out = Vec::new();
    for ticks in windows {
        let id = ticks[0].window_id;
        let mut w = StreamWindow::open(Arc::clone(&spec), id).unwrap();
        let mut raised = Vec::new();
        for t in ticks {
            let p = w.push(t.clone()).unwrap();
            if early && let Some(v) = oracle.on_tick(p.tick, p.direction) {
                raised.push(v);
            }
        }
        out.push((raised, oracle.judge(&w, &WindowContext::default())));
    }
    out
}

fn oracle() -> StructuredOutputOracle {
    StructuredOutputOracle::new(tool_call())
}

fn kinds(r: &[(Vec<WindowVerdict>, WindowVerdict)]) -> Vec<&'static str> {
    r.iter().map(|(_, v)| v.kind_str()).collect()
}

const LLM: u32 = duplex::LLM;

fn valid_turn() -> Vec<Vec<Tick>> {
    vec![
        vec![
            marker(0, 10, LLM, TickMarker::Start),
            text(0, 20, LLM, r#"{"tool": "get_wea"#),
        ],
        vec![text(1, 210, LLM, r#"ther", "args": {"city": "Lis"#)],
        vec![
            text(2, 410, LLM, r#"bon", "days": 2}}"#),
            marker(2, 420, LLM, TickMarker::EndOfTurn),
        ],
    ]
}

#[test]
fn a_valid_streamed_call_needs_more_until_its_end_of_turn_then_passes() {
    let mut o = oracle();
    let r = drive(&mut o, &valid_turn(), true);
    assert_eq!(kinds(&r), ["need_more", "need_more", "pass"]);
    assert!(r.iter().all(|(early, _)| early.is_empty()));
    assert_eq!(r[2].1, WindowVerdict::pass_by(o.name()));
    assert!(!o.turn_open());
    assert_eq!(o.turns(), 1);
}

#[test]
fn the_name_carries_the_grammar_digest_prefix() {
    let o = oracle();
    assert_eq!(
        o.name(),
        format!("structured:{}", tool_call().digest_prefix())
    );
    assert_eq!(o.name().len(), "structured:".len() + 16);
}

#[test]
fn an_off_schema_call_fails_on_the_tick_that_makes_it_impossible() {
    let windows = vec![
        vec![text(0, 20, LLM, r#"{"tool": "set_timer", "#)],
        vec![
            text(1, 210, LLM, r#""args": {"seconds": 9"#),
            // 900000 > 86400: impossible at the fifth digit, in this tick.
            text(1, 220, LLM, r#"00000, "label": "x"}}"#),
        ],
        vec![marker(2, 410, LLM, TickMarker::EndOfTurn)],
    ];
    let mut o = oracle();
    let r = drive(&mut o, &windows, true);
    assert_eq!(kinds(&r), ["need_more", "fail", "fail"]);
    assert!(r[0].0.is_empty());
    let reason = r#"turn 1: above_maximum at byte 46, path "/args/seconds""#;
    assert_eq!(r[1].0, vec![WindowVerdict::fail(o.name(), reason)]);
    assert_eq!(r[1].1, WindowVerdict::fail(o.name(), reason));
    // The closing marker belongs to the refused turn: its window fails too, once more early
    // nothing is raised (the turn was reported).
    assert!(r[2].0.is_empty());
    assert_eq!(
        r[2].1,
        WindowVerdict::fail(
            o.name(),
            format!("turn 1 was refused earlier: {}", &reason[8..])
        )
    );
}

#[test]
fn a_turn_truncated_by_its_end_of_turn_fails_on_the_marker() {
    let windows = vec![
        vec![text(
            0,
            20,
            LLM,
            r#"{"tool": "say", "args": {"text": "It is cl"#,
        )],
        vec![marker(1, 210, LLM, TickMarker::EndOfTurn)],
    ];
    let mut o = oracle();
    let r = drive(&mut o, &windows, true);
    assert_eq!(kinds(&r), ["need_more", "fail"]);
    let WindowVerdict::Fail { reason, .. } = &r[1].1 else {
        unreachable!()
    };
    assert!(
        reason.starts_with("turn 1: truncated at byte 42"),
        "{reason}"
    );
    assert_eq!(r[1].0.len(), 1);
}

#[test]
fn a_start_marker_closes_an_open_turn_and_the_next_turn_is_judged_afresh() {
    let windows = vec![
        vec![
            text(0, 20, LLM, r#"{"tool": "say""#),
            marker(0, 30, LLM, TickMarker::Start),
            text(0, 40, LLM, r#"{"tool": "say", "args": {"text": "hi"}}"#),
            marker(0, 50, LLM, TickMarker::End),
        ],
        vec![text(
            1,
            210,
            LLM,
            r#"{"tool":"say","args":{"text":"again"}}"#,
        )],
        vec![marker(2, 410, LLM, TickMarker::End)],
    ];
    let mut o = oracle();
    let r = drive(&mut o, &windows, true);
    assert_eq!(kinds(&r), ["fail", "need_more", "pass"]);
    let WindowVerdict::Fail { reason, .. } = &r[0].1 else {
        unreachable!()
    };
    assert!(reason.starts_with("turn 1: truncated"), "{reason}");
    assert_eq!(o.turns(), 3);
}

#[test]
fn other_channels_and_markers_elsewhere_are_ignored() {
    let windows = vec![vec![
        text(0, 10, duplex::ASR, "not json at all"),
        text(0, 20, duplex::SUBSTRATE, "{]"),
        marker(0, 30, duplex::CONTROL, TickMarker::EndOfTurn),
        marker(0, 40, duplex::TTS, TickMarker::End),
    ]];
    let mut o = oracle();
    let r = drive(&mut o, &windows, true);
    assert_eq!(kinds(&r), ["pass"]);
    assert_eq!(o.turns(), 0);
    // Its neighbour: the same garbage on the watched channel fails.
    let mut o = oracle().with_channel(duplex::ASR);
    assert_eq!(o.channel(), duplex::ASR);
    let r = drive(&mut o, &windows, true);
    assert_eq!(kinds(&r), ["fail"]);
}

#[test]
fn judge_does_not_depend_on_on_tick() {
    let cases = [
        valid_turn(),
        vec![
            vec![text(0, 20, LLM, r#"{"tool": "sax"#)],
            vec![text(1, 210, LLM, r#"", "args": {}}"#)],
            vec![marker(2, 410, LLM, TickMarker::End)],
        ],
    ];
    for windows in cases {
        let with: Vec<_> = drive(&mut oracle(), &windows, true)
            .into_iter()
            .map(|x| x.1)
            .collect();
        let without: Vec<_> = drive(&mut oracle(), &windows, false)
            .into_iter()
            .map(|x| x.1)
            .collect();
        assert_eq!(with, without);
    }
}

#[test]
fn tick_boundaries_do_not_change_the_verdict() {
    let doc = r#"{"tool": "say", "args": {"text": "caf\u00e9 \ud83d\ude00", "tags": ["a"], "confidence": 0.5}}"#;
    for cut in 0..=doc.len() {
        let (a, b) = doc.as_bytes().split_at(cut);
        let t = |ms, bytes: &[u8]| {
            Tick::new(0, LLM, TickKind::Text, Bytes::from(bytes.to_vec()), ms * MS)
        };
        let windows = vec![vec![
            t(10, a),
            t(20, b),
            marker(0, 30, LLM, TickMarker::EndOfTurn),
        ]];
        let r = drive(&mut oracle(), &windows, true);
        assert_eq!(kinds(&r), ["pass"], "cut {cut}");
    }
}

#[test]
fn a_window_judged_out_of_order_fails_and_changes_nothing() {
    let mut o = oracle();
    let windows = valid_turn();
    let r = drive(&mut o, &windows[..2], false);
    assert_eq!(kinds(&r), ["need_more", "need_more"]);
    let replay = drive(&mut o, &windows[1..2], false);
    assert_eq!(kinds(&replay), ["fail"]);
    let rest = drive(&mut o, &windows[2..], false);
    assert_eq!(kinds(&rest), ["pass"]);
}

#[test]
fn in_a_composite_the_structured_failure_dominates_and_is_raised_early() {
    let mut c =
        CompositeStreamOracle::new("voice", vec![Box::new(BargeInDetector), Box::new(oracle())]);
    let windows = vec![vec![
        text(0, 20, LLM, r#"{"tool": "say", "args": {"text": 5}}"#),
        marker(0, 30, duplex::CONTROL, TickMarker::BargeIn),
    ]];
    let r = drive(&mut c, &windows, true);
    assert_eq!(r[0].0[0].kind_str(), "fail");
    assert_eq!(r[0].1.kind_str(), "fail");
    assert_eq!(c.last_signals()[0].1.kind_str(), "yield");
}

#[test]
fn early_verdicts_do_not_depend_on_when_the_previous_window_is_judged() {
    // A driver may report the next window's first tick before judging the previous window.
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let mut o = oracle();
    let mut w0 = StreamWindow::open(Arc::clone(&spec), 0).unwrap();
    let p = w0
        .push(text(0, 20, LLM, r#"{"tool": "say", "args": {"text": ""#))
        .unwrap();
    assert_eq!(o.on_tick(p.tick, p.direction), None);
    let mut w1 = StreamWindow::open(Arc::clone(&spec), 1).unwrap();
    // Valid as the continuation of window 0's text; it would be refused as a turn of its own.
    let p = w1.push(text(1, 210, LLM, r#"hi"}}"#)).unwrap();
    assert_eq!(o.on_tick(p.tick, p.direction), None);
    assert_eq!(
        o.judge(&w0, &WindowContext::default()).kind_str(),
        "need_more"
    );
    let p = w1.push(text(1, 220, LLM, " x")).unwrap();
    let early = o.on_tick(p.tick, p.direction).unwrap();
    assert_eq!(
        early,
        WindowVerdict::fail(o.name(), r#"turn 1: trailing_bytes at byte 40, path """#)
    );
    assert_eq!(o.judge(&w1, &WindowContext::default()), early);
}
