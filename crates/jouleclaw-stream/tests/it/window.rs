//! One test per `StreamWindow::push` rule and its accepted neighbour; spec validation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bytes::Bytes;
use jouleclaw_stream::*;

fn spec() -> Arc<StreamSpec> {
    Arc::new(StreamSpec::duplex_voice_default())
}

const W: u64 = 3;
const START: u64 = 600_000_000;
const END: u64 = 800_000_000;

fn audio(ts: u64, len: usize) -> Tick {
    Tick::new(
        W,
        duplex::MIC,
        TickKind::Audio,
        Bytes::from(vec![7u8; len]),
        ts,
    )
}

/// A tick of window `W` carrying `bytes`.
fn data(channel: u32, kind: TickKind, bytes: Bytes, ts: u64) -> Tick {
    Tick::new(W, channel, kind, bytes, ts)
}

/// A marker tick of window `W`.
fn mark(channel: u32, marker: TickMarker, ts: u64) -> Tick {
    Tick::marker(W, channel, marker, ts)
}

fn window() -> StreamWindow {
    StreamWindow::open(spec(), W).unwrap()
}

/// Pushes `t` into a clone and asserts a refusal with `code` that leaves the window unchanged.
fn refused(w: &StreamWindow, t: Tick, code: &str) {
    let mut copy = w.clone();
    let before = (
        w.ticks().to_vec(),
        w.inbound_bytes(),
        w.outbound_bytes(),
        w.substrate_bytes(),
    );
    let err = copy.push(t).unwrap_err();
    assert_eq!(err.code(), code, "{err}");
    let after = (
        copy.ticks().to_vec(),
        copy.inbound_bytes(),
        copy.outbound_bytes(),
        copy.substrate_bytes(),
    );
    assert_eq!(before, after);
    assert_eq!(w.content_hash(), copy.content_hash());
}

#[test]
fn window_id_must_match() {
    let w = window();
    let mut t = audio(START, 10);
    t.window_id = W + 1;
    refused(&w, t, "tick_window_mismatch");
    window().push(audio(START, 10)).unwrap();
}

#[test]
fn timestamp_must_lie_in_the_half_open_span() {
    let w = window();
    refused(&w, audio(START - 1, 1), "tick_ts_outside_window");
    refused(&w, audio(END, 1), "tick_ts_outside_window");
    let mut w = window();
    w.push(audio(START, 1)).unwrap();
    w.push(audio(END - 1, 1)).unwrap();
}

#[test]
fn timestamps_are_non_decreasing() {
    let mut w = window();
    w.push(audio(START + 10, 1)).unwrap();
    refused(&w, audio(START + 9, 1), "tick_ts_decreasing");
    // Equal timestamps are fine.
    w.push(audio(START + 10, 1)).unwrap();
    assert_eq!(w.tick_count(), 2);
}

#[test]
fn channel_must_exist() {
    let w = window();
    let mut t = audio(START, 1);
    t.channel_id = 99;
    refused(&w, t, "tick_unknown_channel");
}

#[test]
fn payload_kind_must_match_channel() {
    let tick = |channel, kind, payload| data(channel, kind, Bytes::from_static(payload), START);
    let w = window();
    let text_on_mic = tick(duplex::MIC, TickKind::Text, b"hi");
    refused(&w, text_on_mic, "tick_kind_mismatch");
    let audio_on_control = tick(duplex::CONTROL, TickKind::Audio, b"x");
    refused(&w, audio_on_control, "tick_kind_mismatch");
    let mut w = window();
    // Text on the ASR channel, and markers on any channel (their side is the channel's).
    w.push(tick(duplex::ASR, TickKind::Text, b"hi")).unwrap();
    w.push(mark(duplex::MIC, TickMarker::Start, START)).unwrap();
    let p = w.push(mark(duplex::TTS, TickMarker::End, START)).unwrap();
    assert_eq!(p.direction, ChannelDirection::Outbound);
    let p = w
        .push(mark(duplex::CONTROL, TickMarker::BargeIn, START))
        .unwrap();
    assert_eq!(p.direction, ChannelDirection::Inbound);
}

#[test]
fn chunk_is_bounded_at_exactly_max_chunk_bytes() {
    let max = spec().max_chunk_bytes as usize;
    let w = window();
    refused(&w, audio(START, max + 1), "tick_chunk_too_large");
    let mut w = window();
    w.push(audio(START, max)).unwrap();
    assert_eq!(w.inbound_bytes(), max as u64);
}

#[test]
fn tick_count_is_bounded_at_exactly_max_ticks() {
    let mut s = StreamSpec::duplex_voice_default();
    s.max_ticks_per_window = 3;
    let mut w = StreamWindow::open(Arc::new(s), W).unwrap();
    for i in 0..3 {
        w.push(audio(START + i, 1)).unwrap();
    }
    refused(&w, audio(START + 3, 1), "window_too_many_ticks");
}

#[test]
fn per_direction_totals_and_barge_in() {
    let mut w = window();
    w.push(audio(START, 100)).unwrap();
    let tts = Bytes::from(vec![0; 40]);
    w.push(data(duplex::TTS, TickKind::Audio, tts, START + 1))
        .unwrap();
    let ctx = Bytes::from_static(b"ctx");
    w.push(data(duplex::SUBSTRATE, TickKind::Text, ctx, START + 2))
        .unwrap();
    assert!(!w.has_barge_in());
    w.push(mark(duplex::CONTROL, TickMarker::BargeIn, START + 5))
        .unwrap();
    assert!(w.has_barge_in());
    assert_eq!(w.first_barge_in_ns(), Some(START + 5));
    assert_eq!(
        (w.inbound_bytes(), w.outbound_bytes(), w.substrate_bytes()),
        (100, 40, 3)
    );
}

#[test]
fn spec_validation() {
    let ok = StreamSpec::duplex_voice_default();
    ok.validate().unwrap();
    let mut s = ok.clone();
    s.tick_window_ms = 0;
    assert_eq!(s.validate().unwrap_err().code(), "spec_zero_window");
    let mut s = ok.clone();
    s.max_chunk_bytes = 0;
    assert_eq!(s.validate().unwrap_err().code(), "spec_zero_max_chunk");
    let mut s = ok.clone();
    s.max_ticks_per_window = 0;
    assert_eq!(s.validate().unwrap_err().code(), "spec_zero_max_ticks");
    let mut s = ok.clone();
    s.channels.clear();
    assert_eq!(s.validate().unwrap_err().code(), "spec_no_channels");
    let mut s = ok.clone();
    s.channels[2].id = s.channels[0].id;
    assert_eq!(s.validate().unwrap_err().code(), "spec_duplicate_channel");
    assert_eq!(
        StreamWindow::open(Arc::new(s), 0).unwrap_err().code(),
        "spec_duplicate_channel"
    );
}

#[test]
fn default_spec_is_documented_layout() {
    let s = StreamSpec::duplex_voice_default();
    assert_eq!(s.tick_window_ms, DEFAULT_TICK_WINDOW_MS);
    assert_eq!(DEFAULT_TICK_WINDOW_MS, 200);
    assert_eq!(BARGE_IN_DEADLINE_MS, 150);
    assert_eq!(s.window_ns(), 200_000_000);
    let dirs: Vec<_> = s
        .channels
        .iter()
        .map(|c| (c.id, c.direction, c.kind_tag))
        .collect();
    use ChannelDirection::*;
    assert_eq!(
        dirs,
        vec![
            (0, Inbound, TickKindTag::Marker),
            (1, Inbound, TickKindTag::Audio),
            (2, Inbound, TickKindTag::Text),
            (3, Outbound, TickKindTag::Audio),
            (4, Outbound, TickKindTag::Text),
            (5, Substrate, TickKindTag::Text),
        ]
    );
    assert_eq!(duplex::MIC_BYTES_PER_WINDOW, 16_000 * 2 / 5);
    assert_eq!(duplex::TTS_BYTES_PER_WINDOW, 12_000 * 2 / 5);
}

#[test]
fn windows_must_fit_below_2_pow_53_ns() {
    let s = spec();
    // Last window whose span ends at or below 2^53 ns.
    let last = (1u64 << 53) / s.window_ns() - 1;
    StreamWindow::open(s.clone(), last).unwrap();
    assert_eq!(
        StreamWindow::open(s.clone(), last + 1).unwrap_err().code(),
        "window_span_overflow"
    );
    assert_eq!(
        StreamWindow::open(s, u64::MAX).unwrap_err().code(),
        "window_span_overflow"
    );
}

#[test]
fn canonical_json_shape() {
    let mut w = window();
    w.push(audio(START, 2)).unwrap();
    let custom = TickMarker::Custom("a\"é".into());
    w.push(mark(duplex::CONTROL, custom, START + 1)).unwrap();
    let json = String::from_utf8(w.canonical_json()).unwrap();
    let digest = blake3::hash(&[7, 7]).to_hex();
    let empty = blake3::hash(b"").to_hex();
    assert_eq!(
        json,
        format!(
            "{{\"schema\":\"jouleclaw-window/1\",\"tick_window_ms\":200,\"ticks\":[\
             {{\"blake3\":\"{digest}\",\"channel_id\":1,\"kind\":\"audio\",\"len\":2,\"ts_ns\":600000000}},\
             {{\"blake3\":\"{empty}\",\"channel_id\":0,\"kind\":\"marker\",\"len\":0,\
             \"marker\":{{\"custom\":\"a\\\"é\"}},\"ts_ns\":600000001}}],\"window_id\":3}}"
        )
    );
    assert_eq!(w.content_hash(), blake3::hash(json.as_bytes()));
}
