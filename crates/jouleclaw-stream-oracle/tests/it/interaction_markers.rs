//! The barge-in detector raises no `yield` for the interaction markers (backchannel, vocal
//! tic, non-directed speech, user speech) and does for a real `BargeIn` beside them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use jouleclaw_stream::interaction::{self, INTERACTION_MARKERS};
use jouleclaw_stream::{
    ChannelDirection, StreamSpec, StreamWindow, Tick, TickMarker, WindowConservationFinding, duplex,
};
use jouleclaw_stream_oracle::*;

fn window(markers: &[TickMarker]) -> StreamWindow {
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let mut w = StreamWindow::open(spec, 3).unwrap();
    for (i, m) in markers.iter().enumerate() {
        w.push(Tick::marker(
            3,
            duplex::CONTROL,
            m.clone(),
            600_000_000 + i as u64,
        ))
        .unwrap();
    }
    w
}

#[test]
fn interaction_markers_raise_no_yield() {
    let markers: Vec<TickMarker> = INTERACTION_MARKERS
        .iter()
        .map(|n| interaction::marker(n))
        .collect();
    let mut d = BargeInDetector;
    for m in &markers {
        let t = Tick::marker(3, duplex::CONTROL, m.clone(), 600_000_000);
        assert_eq!(d.on_tick(&t, ChannelDirection::Inbound), None, "{m:?}");
    }
    let ctx = WindowContext::new(WindowConservationFinding::Conforming);
    assert_eq!(
        d.judge(&window(&markers), &ctx),
        WindowVerdict::pass_by(BargeInDetector::NAME)
    );
}

#[test]
fn a_barge_in_beside_them_still_yields() {
    let mut markers: Vec<TickMarker> = INTERACTION_MARKERS
        .iter()
        .map(|n| interaction::marker(n))
        .collect();
    markers.push(TickMarker::BargeIn);
    let mut d = BargeInDetector;
    let t = Tick::marker(3, duplex::CONTROL, TickMarker::BargeIn, 600_000_000);
    assert_eq!(
        d.on_tick(&t, ChannelDirection::Inbound),
        Some(WindowVerdict::Yield { seen_at: 3 })
    );
    let ctx = WindowContext::new(WindowConservationFinding::Conforming);
    assert_eq!(
        d.judge(&window(&markers), &ctx),
        WindowVerdict::Yield { seen_at: 3 }
    );
}
