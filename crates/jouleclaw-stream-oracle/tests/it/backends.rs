//! The reference backends and the composite over real windows.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bytes::Bytes;
use jouleclaw_stream::{
    NS_PER_MS, StreamSpec, StreamWindow, Tick, TickKind, TickMarker, WindowConservationFinding,
    duplex,
};
use jouleclaw_stream_oracle::*;

const WINDOW_NS: u64 = 200 * NS_PER_MS;

/// What to put in a window, in order; timestamps are spaced 1 ms apart from the window start.
enum T<'a> {
    Mic(usize),
    Asr(&'a [u8]),
    Llm(&'a [u8]),
    Tts(usize),
    Substrate(&'a [u8]),
    Marker(u32, TickMarker),
}

fn tick(window_id: u64, i: usize, t: &T<'_>) -> Tick {
    let ts = window_id * WINDOW_NS + i as u64 * NS_PER_MS;
    let payload = |ch, kind, b: Bytes| Tick::new(window_id, ch, kind, b, ts);
    match t {
        T::Mic(n) => payload(duplex::MIC, TickKind::Audio, Bytes::from(vec![0u8; *n])),
        T::Tts(n) => payload(duplex::TTS, TickKind::Audio, Bytes::from(vec![0u8; *n])),
        T::Asr(b) => payload(duplex::ASR, TickKind::Text, Bytes::copy_from_slice(b)),
        T::Llm(b) => payload(duplex::LLM, TickKind::Text, Bytes::copy_from_slice(b)),
        T::Substrate(b) => payload(duplex::SUBSTRATE, TickKind::Text, Bytes::copy_from_slice(b)),
        T::Marker(ch, m) => Tick::marker(window_id, *ch, m.clone(), ts),
    }
}

fn window(window_id: u64, ticks: &[T<'_>]) -> StreamWindow {
    let mut w =
        StreamWindow::open(Arc::new(StreamSpec::duplex_voice_default()), window_id).unwrap();
    for (i, t) in ticks.iter().enumerate() {
        w.push(tick(window_id, i, t)).unwrap();
    }
    w
}

/// Pushes the ticks one by one, calling `on_tick` after each accepted push as a driver does,
/// then judges the window. Returns the early verdicts by tick index and the window verdict.
fn drive(
    oracle: &mut dyn StreamOracle,
    window_id: u64,
    ticks: &[T<'_>],
) -> (Vec<(usize, WindowVerdict)>, WindowVerdict) {
    let mut w =
        StreamWindow::open(Arc::new(StreamSpec::duplex_voice_default()), window_id).unwrap();
    let mut early = Vec::new();
    for (i, t) in ticks.iter().enumerate() {
        let pushed = w.push(tick(window_id, i, t)).unwrap();
        if let Some(v) = oracle.on_tick(pushed.tick, pushed.direction) {
            early.push((i, v));
        }
    }
    let verdict = oracle.judge(&w, &WindowContext::default());
    (early, verdict)
}

fn ctx() -> WindowContext {
    WindowContext::default()
}

fn barge() -> T<'static> {
    T::Marker(duplex::CONTROL, TickMarker::BargeIn)
}

fn llm_end() -> T<'static> {
    T::Marker(duplex::LLM, TickMarker::End)
}

fn voice_composite() -> CompositeStreamOracle {
    CompositeStreamOracle::new(
        "voice",
        vec![
            Box::new(AlwaysPassStream),
            Box::new(BargeInDetector),
            Box::new(PerTickAdapter::new(ByteBudgetOracle::new(1000, 8))),
        ],
    )
}

#[test]
fn always_pass_stream_passes_with_its_seed_name() {
    let w = window(3, &[barge(), T::Llm(b"\xff")]);
    let mut o = AlwaysPassStream;
    assert_eq!(o.name(), "always-pass-stream");
    assert_eq!(
        o.judge(&w, &ctx()).wire_bytes().unwrap(),
        br#"{"chain":["always-pass-stream"],"kind":"pass"}"#
    );
    assert_eq!(
        o.on_tick(
            &tick(3, 0, &barge()),
            jouleclaw_stream::ChannelDirection::Inbound
        ),
        None
    );
}

#[test]
fn barge_in_detector_yields_with_the_window_id_and_passes_otherwise() {
    let mut o = BargeInDetector;
    assert_eq!(o.name(), "barge-in-detector");
    let w = window(7, &[T::Mic(6400), barge(), T::Tts(1200)]);
    assert_eq!(o.judge(&w, &ctx()), WindowVerdict::Yield { seen_at: 7 });
    assert_eq!(
        o.judge(&w, &ctx()).wire_bytes().unwrap(),
        br#"{"kind":"yield","seen_at":7}"#
    );
    // Other markers are not barge-ins.
    let w = window(
        8,
        &[
            T::Mic(6400),
            T::Marker(duplex::CONTROL, TickMarker::EndOfTurn),
        ],
    );
    assert_eq!(
        o.judge(&w, &ctx()),
        WindowVerdict::pass_by("barge-in-detector")
    );
    // A barge-in marker on an outbound channel counts too.
    let w = window(9, &[T::Marker(duplex::TTS, TickMarker::BargeIn)]);
    assert_eq!(o.judge(&w, &ctx()), WindowVerdict::Yield { seen_at: 9 });
}

#[test]
fn early_yield_is_returned_on_the_barge_in_tick() {
    let ticks = [
        T::Mic(640),
        T::Tts(480),
        T::Asr(b"stop"),
        barge(),
        T::Tts(480),
        T::Mic(640),
    ];
    // The detector alone.
    let (early, verdict) = drive(&mut BargeInDetector, 7, &ticks);
    assert_eq!(early, vec![(3, WindowVerdict::Yield { seen_at: 7 })]);
    assert_eq!(verdict, WindowVerdict::Yield { seen_at: 7 });
    // Through a composite: the same tick, and the tick signals say who raised it.
    let mut c = voice_composite();
    let (early, verdict) = drive(&mut c, 7, &ticks);
    assert_eq!(early, vec![(3, WindowVerdict::Yield { seen_at: 7 })]);
    assert_eq!(verdict, WindowVerdict::Yield { seen_at: 7 });
    // After the last tick (a mic tick), no early verdict is outstanding.
    assert!(c.last_tick_signals().is_empty());
    let mut c = voice_composite();
    let t = tick(7, 3, &barge());
    c.on_tick(&t, jouleclaw_stream::ChannelDirection::Inbound)
        .unwrap();
    assert_eq!(
        c.last_tick_signals(),
        &[(
            "barge-in-detector".to_owned(),
            WindowVerdict::Yield { seen_at: 7 }
        )]
    );
}

#[test]
fn barge_in_and_content_failure_in_one_window_keep_both_signals() {
    let ticks = [
        T::Asr(b"hi"),
        barge(),
        T::Llm(b"a reply far longer than the budget allows"),
    ];
    let mut c = voice_composite();
    let (early, verdict) = drive(&mut c, 4, &ticks);
    // The barge-in was acted on early...
    assert_eq!(early, vec![(1, WindowVerdict::Yield { seen_at: 4 })]);
    // ...and the window verdict is the dominant content failure...
    let WindowVerdict::Fail { oracle, reason } = &verdict else {
        panic!("{verdict:?}")
    };
    assert_eq!(oracle, "per-tick:byte-budget");
    assert!(
        reason.starts_with("tick 2 (channel 4, ts_ns 802000000): output of 41 bytes"),
        "{reason}"
    );
    // ...with the losing yield still visible, every backend in order.
    let names: Vec<&str> = c.last_signals().iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "always-pass-stream",
            "barge-in-detector",
            "per-tick:byte-budget"
        ]
    );
    assert_eq!(
        c.last_signals()[0].1,
        WindowVerdict::pass_by("always-pass-stream")
    );
    assert_eq!(c.last_signals()[1].1, WindowVerdict::Yield { seen_at: 4 });
    assert_eq!(c.last_signals()[2].1, verdict);

    // Backends after a failing one still run: a failing backend first, the detector last.
    let mut c = CompositeStreamOracle::new(
        "fail-first",
        vec![
            Box::new(FixedStreamOracle::new("f", WindowVerdict::fail("f", "no"))),
            Box::new(BargeInDetector),
        ],
    );
    let (_, verdict) = drive(&mut c, 4, &ticks);
    assert_eq!(verdict, WindowVerdict::fail("f", "no"));
    assert_eq!(
        c.last_signals()[1],
        (
            "barge-in-detector".to_owned(),
            WindowVerdict::Yield { seen_at: 4 }
        )
    );
}

#[test]
fn composite_pass_chain_lists_backends_in_order_and_flattens_nested_composites() {
    let inner = CompositeStreamOracle::new(
        "inner",
        vec![Box::new(AlwaysPassStream), Box::new(BargeInDetector)],
    );
    let mut outer = CompositeStreamOracle::new(
        "outer",
        vec![
            Box::new(PerTickAdapter::new(TextWellFormedOracle::utf8())),
            Box::new(inner),
        ],
    );
    assert_eq!(outer.name(), "outer");
    assert_eq!(
        outer.backend_names().collect::<Vec<_>>(),
        ["per-tick:utf8-text", "inner"]
    );
    let (_, v) = drive(&mut outer, 1, &[T::Asr(b"hi"), T::Llm(b"hello")]);
    assert_eq!(
        v,
        WindowVerdict::Pass {
            chain: vec![
                "per-tick:utf8-text".into(),
                "always-pass-stream".into(),
                "barge-in-detector".into()
            ]
        }
    );
    // The nested composite raises its early yield through the outer one and wins the window.
    let (early, v) = drive(&mut outer, 2, &[T::Llm(b"ok"), barge()]);
    assert_eq!(early, vec![(1, WindowVerdict::Yield { seen_at: 2 })]);
    assert_eq!(v, WindowVerdict::Yield { seen_at: 2 });
    assert_eq!(
        outer.last_signals()[1],
        ("inner".to_owned(), WindowVerdict::Yield { seen_at: 2 })
    );
    assert_eq!(outer.last_tick_signals()[0].0, "inner");
}

#[test]
fn empty_composite_passes_with_an_empty_chain() {
    let mut c = CompositeStreamOracle::new("empty", vec![]);
    assert!(c.is_empty());
    let (early, v) = drive(&mut c, 0, &[barge()]);
    assert!(early.is_empty());
    assert_eq!(v, WindowVerdict::Pass { chain: vec![] });
    let c = voice_composite();
    assert_eq!(c.len(), 3);
    assert!(format!("{c:?}").contains("barge-in-detector"));
}

#[test]
fn per_tick_adapter_with_the_byte_budget_oracle() {
    // Budget: 1.5 x inbound text + 2. The window's inbound text is "ab" + "cd" = 4 bytes, so
    // each outbound text tick may hold 8 bytes.
    let mut a = PerTickAdapter::new(ByteBudgetOracle::new(1500, 2));
    assert_eq!(a.name(), "per-tick:byte-budget");
    assert_eq!(a.scope(), ExchangeScope::Tick);
    let at_budget = [T::Asr(b"ab"), T::Llm(b"12345678"), T::Asr(b"cd")];
    assert_eq!(
        a.judge(&window(0, &at_budget), &ctx()),
        WindowVerdict::pass_by("per-tick:byte-budget")
    );
    let over = [
        T::Asr(b"ab"),
        T::Llm(b"1234"),
        T::Asr(b"cd"),
        T::Llm(b"123456789"),
    ];
    let v = a.judge(&window(0, &over), &ctx());
    assert_eq!(v.kind_str(), "fail");
    let WindowVerdict::Fail { reason, .. } = v else {
        unreachable!()
    };
    assert_eq!(
        reason,
        "tick 3 (channel 4, ts_ns 3000000): output of 9 bytes exceeds 1500/1000 x 4 input bytes + 2"
    );
    // Audio, substrate text and markers are not part of the exchange.
    let ignored = [
        T::Mic(6400),
        T::Substrate(b"lots of substrate"),
        T::Tts(4800),
        llm_end(),
        T::Llm(b"12"),
    ];
    assert!(a.judge(&window(0, &ignored), &ctx()).is_pass());
    let ignored = [T::Substrate(b"lots of substrate"), T::Llm(b"123")];
    assert_eq!(a.judge(&window(0, &ignored), &ctx()).kind_str(), "fail");
    // No outbound text: nothing to judge.
    assert!(a.judge(&window(0, &[T::Asr(b"ab")]), &ctx()).is_pass());
}

#[test]
fn per_tick_adapter_with_the_text_oracles() {
    let mut utf8 = PerTickAdapter::new(TextWellFormedOracle::utf8());
    assert!(
        utf8.judge(&window(0, &[T::Llm("héllo 😀".as_bytes())]), &ctx())
            .is_pass()
    );
    let v = utf8.judge(&window(0, &[T::Llm(b"ok"), T::Llm(b"ab\xffcd")]), &ctx());
    assert_eq!(
        v,
        WindowVerdict::fail(
            "per-tick:utf8-text",
            "tick 1 (channel 4, ts_ns 1000000): output is not valid UTF-8 (first invalid byte at offset 2)"
        )
    );
    // Inbound text is not judged by the text oracles.
    assert!(
        utf8.judge(&window(0, &[T::Asr(b"\xff"), T::Llm(b"x")]), &ctx())
            .is_pass()
    );

    let mut json = PerTickAdapter::new(TextWellFormedOracle::json());
    assert_eq!(json.name(), "per-tick:json-document");
    assert!(
        json.judge(
            &window(0, &[T::Llm(br#" {"a":[1,2,{"b":null}]} "#)]),
            &ctx()
        )
        .is_pass()
    );
    for bad in [&b"{\"a\":"[..], b"", b"{} {}", b"[1,]", b"\"\xff\""] {
        let v = json.judge(&window(0, &[T::Llm(bad)]), &ctx());
        assert_eq!(v.kind_str(), "fail", "{bad:?}");
    }
}

#[test]
fn json_oracle_refuses_nesting_deeper_than_128_levels() {
    // Regression: the JSON check skipped the document without a depth limit, so the documented
    // 128-level bound was never applied.
    let json = TextWellFormedOracle::json();
    assert_eq!(TextWellFormedOracle::MAX_JSON_DEPTH, 128);
    let nested = |open: &str, close: &str, depth: usize| {
        format!("{}{}", open.repeat(depth), close.repeat(depth)).into_bytes()
    };
    for (open, close) in [("[", "]"), ("{\"k\":", "}")] {
        let open_at = |d| {
            if open == "[" {
                nested(open, close, d)
            } else {
                // Objects need a value at the innermost level.
                let mut s = open.repeat(d);
                s.push('1');
                s.push_str(&close.repeat(d));
                s.into_bytes()
            }
        };
        assert!(json.passes(b"", &open_at(128)), "{open} x 128");
        let v = json.judge(b"", &open_at(129));
        let Verdict::Fail { reason } = v else {
            panic!("{open} x 129 passed")
        };
        assert!(
            reason.starts_with("output is not one complete JSON document"),
            "{reason}"
        );
        assert!(!json.passes(b"", &open_at(100_000)));
    }
    // Brackets inside strings, escaped quotes included, are not nesting.
    let mut s = String::from("[\"");
    s.push_str(&"[{\\\"".repeat(200));
    s.push_str("\"]");
    assert!(json.passes(b"", s.as_bytes()), "{s}");
    // Through the per-tick adapter.
    let mut a = PerTickAdapter::new(json);
    let deep = nested("[", "]", 129);
    assert_eq!(
        a.judge(&window(0, &[T::Llm(&deep)]), &ctx()).kind_str(),
        "fail"
    );
}

#[test]
fn need_more_is_carried_across_windows_and_resolved() {
    let mut a = PerTickAdapter::per_turn(TextWellFormedOracle::json(), 1024);
    assert_eq!(a.name(), "per-turn:json-document");
    // Window 0: the question, and the first half of a JSON answer.
    let v = a.judge(
        &window(0, &[T::Asr(b"list two"), T::Llm(br#"{"items":"#)]),
        &ctx(),
    );
    assert_eq!(
        v,
        WindowVerdict::need_more(
            "per-turn:json-document",
            "turn open: 9 outbound text bytes await an end or end_of_turn marker"
        )
    );
    assert_eq!(a.pending_bytes(), (8, 9));
    // Window 1: more of it; still open.
    assert_eq!(
        a.judge(&window(1, &[T::Llm(b"[1,")]), &ctx()).kind_str(),
        "need_more"
    );
    // Window 2: the rest and the end marker: the whole turn is one complete JSON document.
    let v = a.judge(
        &window(2, &[T::Llm(b"2]}"), llm_end(), T::Mic(640)]),
        &ctx(),
    );
    assert_eq!(v, WindowVerdict::pass_by("per-turn:json-document"));
    assert!(!a.turn_open());
    assert_eq!(a.pending_bytes(), (0, 0));

    // The same turn resolving to a failure.
    let mut a = PerTickAdapter::per_turn(TextWellFormedOracle::json(), 1024);
    assert_eq!(
        a.judge(&window(0, &[T::Llm(br#"{"items":"#)]), &ctx())
            .kind_str(),
        "need_more"
    );
    let v = a.judge(
        &window(
            1,
            &[
                T::Llm(b"[1,2}"),
                T::Marker(duplex::TTS, TickMarker::EndOfTurn),
            ],
        ),
        &ctx(),
    );
    let WindowVerdict::Fail { oracle, reason } = v else {
        panic!()
    };
    assert_eq!(oracle, "per-turn:json-document");
    assert!(
        reason.starts_with(
            "turn closed at ts_ns 201000000: output is not one complete JSON document"
        ),
        "{reason}"
    );

    // An end marker on an inbound channel does not close the agent's turn.
    let mut a = PerTickAdapter::per_turn(TextWellFormedOracle::json(), 1024);
    let v = a.judge(
        &window(
            0,
            &[T::Llm(b"{"), T::Marker(duplex::CONTROL, TickMarker::End)],
        ),
        &ctx(),
    );
    assert_eq!(v.kind_str(), "need_more");

    // Through a composite: NeedMore dominates Pass, then resolves.
    let mut c = CompositeStreamOracle::new(
        "turns",
        vec![
            Box::new(BargeInDetector),
            Box::new(PerTickAdapter::per_turn(
                ByteBudgetOracle::new(2000, 0),
                1024,
            )),
        ],
    );
    let (_, v) = drive(&mut c, 0, &[T::Asr(b"abc"), T::Llm(b"12345")]);
    assert_eq!(v.kind_str(), "need_more");
    // Judged per turn, 6 outbound bytes for 3 inbound pass even though window 1 alone has none.
    let (_, v) = drive(&mut c, 1, &[T::Llm(b"6"), llm_end()]);
    assert_eq!(
        v,
        WindowVerdict::Pass {
            chain: vec!["barge-in-detector".into(), "per-turn:byte-budget".into()]
        }
    );
    // The next turn starts from fresh input.
    let (_, v) = drive(&mut c, 2, &[T::Llm(b"1"), llm_end()]);
    assert_eq!(v.kind_str(), "fail");
}

#[test]
fn per_turn_refuses_windows_out_of_order_without_changing_state() {
    let mut a = PerTickAdapter::per_turn(TextWellFormedOracle::utf8(), 64);
    assert_eq!(
        a.judge(&window(5, &[T::Llm(b"ab")]), &ctx()).kind_str(),
        "need_more"
    );
    let before = a.pending_bytes();
    for id in [5, 4] {
        let v = a.judge(&window(id, &[T::Llm(b"cd"), llm_end()]), &ctx());
        assert_eq!(
            v,
            WindowVerdict::fail(
                "per-turn:utf8-text",
                format!(
                    "window {id} judged after window 5; windows are judged once each, in ascending order"
                )
            )
        );
        assert_eq!(a.pending_bytes(), before);
        assert!(a.turn_open());
    }
    // The accepted neighbour: the next window.
    assert!(
        a.judge(&window(6, &[T::Llm(b"cd"), llm_end()]), &ctx())
            .is_pass()
    );
}

#[test]
fn per_turn_fails_an_over_limit_exchange_and_discards_it_through_its_end_marker() {
    let mut a = PerTickAdapter::per_turn(ByteBudgetOracle::new(100_000, 0), 8);
    // Exactly at the limit is accepted.
    assert_eq!(
        a.judge(&window(0, &[T::Asr(b"abcd"), T::Llm(b"1234")]), &ctx())
            .kind_str(),
        "need_more"
    );
    assert_eq!(a.pending_bytes(), (4, 4));
    // One byte more is refused, and the exchange is dropped.
    let v = a.judge(&window(1, &[T::Llm(b"5")]), &ctx());
    assert_eq!(
        v,
        WindowVerdict::fail(
            "per-turn:byte-budget",
            "exchange exceeds 8 bytes at ts_ns 200000000; discarded through its closing marker"
        )
    );
    assert_eq!(a.pending_bytes(), (0, 0));
    // The rest of that turn is skipped until its end marker.
    assert_eq!(
        a.judge(&window(2, &[T::Llm(b"6")]), &ctx()),
        WindowVerdict::need_more(
            "per-turn:byte-budget",
            "discarding an over-limit exchange until its closing marker"
        )
    );
    assert!(
        a.judge(&window(3, &[T::Llm(b"7"), llm_end()]), &ctx())
            .is_pass()
    );
    assert_eq!(a.pending_bytes(), (0, 0));
    // The next turn is judged normally.
    assert!(
        a.judge(&window(4, &[T::Asr(b"q"), T::Llm(b"a"), llm_end()]), &ctx())
            .is_pass()
    );
}

#[test]
fn conservation_gate_fails_on_ledger_findings() {
    let w = window(0, &[]);
    let mut g = ConservationGate;
    assert_eq!(g.name(), "conservation-ledger");
    assert!(
        g.judge(
            &w,
            &WindowContext::new(WindowConservationFinding::Conforming)
        )
        .is_pass()
    );
    assert_eq!(
        g.judge(
            &w,
            &WindowContext::new(WindowConservationFinding::Hallucination { unaccounted: 2048 })
        ),
        WindowVerdict::fail(
            "conservation-ledger",
            "hallucination: 2048 outbound bytes unaccounted for"
        )
    );
    let ignored = WindowConservationFinding::BargeInIgnored {
        barge_in_ts_ns: 10,
        outbound_ts_ns: 160_000_011,
    };
    assert_eq!(
        g.judge(&w, &WindowContext::new(ignored)),
        WindowVerdict::fail(
            "conservation-ledger",
            "barge-in at ts_ns 10 ignored: outbound at ts_ns 160000011"
        )
    );
    assert_eq!(
        WindowContext::default().finding,
        WindowConservationFinding::Conforming
    );
}

#[test]
fn fixed_oracle_counts_and_raises_its_tick_verdict() {
    let mut f = FixedStreamOracle::new("fixed", WindowVerdict::need_more("fixed", "r"))
        .with_tick_verdict(WindowVerdict::fail("fixed", "t"));
    let (early, v) = drive(&mut f, 0, &[T::Mic(1), T::Mic(1)]);
    assert_eq!(early.len(), 2);
    assert_eq!(v, WindowVerdict::need_more("fixed", "r"));
    assert_eq!((f.ticks_seen(), f.judged()), (2, 1));
}

#[test]
fn blanket_impls_forward() {
    let budget = ByteBudgetOracle::new(1000, 0);
    let by_ref: &dyn Oracle = &budget;
    let boxed: Box<dyn Oracle> = Box::new(TextWellFormedOracle::json());
    let shared: Arc<dyn Oracle> = Arc::new(budget);
    assert_eq!(Oracle::name(&by_ref), "byte-budget");
    assert_eq!(Oracle::name(&boxed), "json-document");
    assert!(!boxed.passes(b"", b"{"));
    assert!(shared.passes(b"ab", b"cd"));
    assert!(!shared.passes(b"ab", b"cde"));
    // An adapter over a borrowed oracle.
    let mut a = PerTickAdapter::new(&budget);
    assert_eq!(a.oracle().k_permille(), 1000);
    assert!(
        a.judge(&window(0, &[T::Asr(b"ab"), T::Llm(b"ab")]), &ctx())
            .is_pass()
    );
    // A borrowed stream oracle, used through the `&mut T` impl.
    fn judge_with(mut o: impl StreamOracle, w: &StreamWindow) -> (String, WindowVerdict) {
        (o.name().to_owned(), o.judge(w, &WindowContext::default()))
    }
    let mut detector = BargeInDetector;
    assert_eq!(
        judge_with(&mut detector, &window(1, &[barge()])),
        (
            "barge-in-detector".to_owned(),
            WindowVerdict::Yield { seen_at: 1 }
        )
    );
}

#[test]
fn byte_budget_is_exact_at_the_boundary_and_never_overflows() {
    let o = ByteBudgetOracle::new(333, 0);
    // 3 input bytes x 0.333 = 0.999: zero output bytes pass, one fails (no rounding up).
    assert!(o.passes(b"abc", b""));
    assert!(!o.passes(b"abc", b"x"));
    let o = ByteBudgetOracle::new(1001, 0);
    assert!(o.passes(&[0; 1000], &[0; 1001]));
    assert!(!o.passes(&[0; 1000], &[0; 1002]));
    let o = ByteBudgetOracle::new(u64::MAX, u64::MAX);
    assert!(o.passes(&[0; 4], &[0; 1 << 16]));
    let o = ByteBudgetOracle::new(0, 0);
    assert!(o.passes(b"", b""));
    assert!(!o.passes(&[0; 1 << 16], b"x"));
    assert_eq!(o.c_bytes(), 0);
}

#[test]
fn composite_on_tick_consults_every_backend_even_after_an_early_fail() {
    let mut c = CompositeStreamOracle::new(
        "c",
        vec![
            Box::new(
                FixedStreamOracle::new("f", WindowVerdict::fail("f", "w"))
                    .with_tick_verdict(WindowVerdict::fail("f", "t")),
            ),
            Box::new(BargeInDetector),
        ],
    );
    let t = tick(2, 0, &barge());
    let v = c.on_tick(&t, jouleclaw_stream::ChannelDirection::Inbound);
    assert_eq!(v, Some(WindowVerdict::fail("f", "t")));
    assert_eq!(
        c.last_tick_signals(),
        &[
            ("f".to_owned(), WindowVerdict::fail("f", "t")),
            (
                "barge-in-detector".to_owned(),
                WindowVerdict::Yield { seen_at: 2 }
            ),
        ]
    );
}

#[test]
fn shipped_backends_never_judge_below_their_early_verdicts() {
    let scenarios: Vec<Vec<T<'static>>> = vec![
        vec![],
        vec![barge()],
        vec![T::Mic(640), barge(), T::Llm(b"{\"a\":1}"), llm_end()],
        vec![T::Asr(b"hi"), T::Llm(b"\xff\xfe"), barge(), T::Tts(4800)],
        vec![T::Llm(b"{"), T::Marker(duplex::LLM, TickMarker::BargeIn)],
    ];
    let backends = || -> Vec<Box<dyn StreamOracle + Send>> {
        vec![
            Box::new(AlwaysPassStream),
            Box::new(BargeInDetector),
            Box::new(ConservationGate),
            Box::new(PerTickAdapter::new(TextWellFormedOracle::json())),
            Box::new(PerTickAdapter::per_turn(ByteBudgetOracle::new(0, 0), 64)),
            Box::new(CompositeStreamOracle::new(
                "all",
                vec![
                    Box::new(BargeInDetector),
                    Box::new(PerTickAdapter::new(TextWellFormedOracle::utf8())),
                ],
            )),
        ]
    };
    let mut yields = 0;
    for mut b in backends() {
        for (id, ticks) in scenarios.iter().enumerate() {
            let (early, verdict) = drive(b.as_mut(), id as u64, ticks);
            for (_, e) in &early {
                assert!(
                    e.rank() <= verdict.rank(),
                    "{}: {e:?} then {verdict:?}",
                    b.name()
                );
                yields += usize::from(e.kind_str() == "yield");
            }
        }
    }
    // The detector and the composite each yield early in the four barge-in scenarios.
    assert_eq!(yields, 8);
}
