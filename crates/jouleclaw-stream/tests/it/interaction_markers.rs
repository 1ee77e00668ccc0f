//! The interaction markers are not barge-ins: the ledger keeps no barge-in pending for them,
//! the window does not count them, and a real `BargeIn` next to them still does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use bytes::Bytes;
use jouleclaw_stream::interaction::{self, INTERACTION_MARKERS};
use jouleclaw_stream::*;

const MS: u64 = NS_PER_MS;

fn ledger() -> RollingConservationLedger {
    // A large slack: only the barge-in rule can speak.
    RollingConservationLedger::new(LedgerPolicy {
        slack_bytes: 1 << 30,
        ..LedgerPolicy::default()
    })
    .unwrap()
}

fn tts(ts: u64) -> Tick {
    Tick::new(
        ts / (200 * MS),
        duplex::TTS,
        TickKind::Audio,
        Bytes::from(vec![0u8; 4800]),
        ts,
    )
}

/// Feeds `marker` on the inbound control channel at 0 ms, then TTS audio at 100, 300 and 500 ms.
fn ignored_after(marker: TickMarker) -> Vec<WindowConservationFinding> {
    let mut l = ledger();
    let mut out = vec![
        l.observe(
            &Tick::marker(0, duplex::CONTROL, marker, 0),
            ChannelDirection::Inbound,
        )
        .unwrap(),
    ];
    for ts in [100 * MS, 300 * MS, 500 * MS] {
        out.push(l.observe(&tts(ts), ChannelDirection::Outbound).unwrap());
    }
    out
}

#[test]
fn interaction_markers_keep_no_barge_in_pending() {
    for name in INTERACTION_MARKERS {
        let findings = ignored_after(interaction::marker(name));
        assert!(
            findings
                .iter()
                .all(|f| *f == WindowConservationFinding::Conforming),
            "{name}: {findings:?}"
        );
    }
}

#[test]
fn a_barge_in_in_their_place_is_ignored_past_the_deadline() {
    // The neighbour: the same stream with a real barge-in.
    let findings = ignored_after(TickMarker::BargeIn);
    assert_eq!(findings[1], WindowConservationFinding::Conforming);
    assert_eq!(
        findings[2],
        WindowConservationFinding::BargeInIgnored {
            barge_in_ts_ns: 0,
            outbound_ts_ns: 300 * MS
        }
    );
}

#[test]
fn a_window_of_interaction_markers_has_no_barge_in_and_one_with_a_barge_in_has() {
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let mut w = StreamWindow::open(spec.clone(), 0).unwrap();
    for (i, name) in INTERACTION_MARKERS.iter().enumerate() {
        w.push(Tick::marker(
            0,
            duplex::CONTROL,
            interaction::marker(name),
            i as u64,
        ))
        .unwrap();
    }
    assert!(!w.has_barge_in());
    assert_eq!(w.first_barge_in_ns(), None);
    w.push(Tick::marker(0, duplex::CONTROL, TickMarker::BargeIn, 9))
        .unwrap();
    assert!(w.has_barge_in());
    assert_eq!(w.first_barge_in_ns(), Some(9));
}

#[test]
fn interaction_names_are_recognised_exactly() {
    for name in INTERACTION_MARKERS {
        assert_eq!(
            interaction::interaction_name(&interaction::marker(name)),
            Some(*name)
        );
    }
    assert_eq!(
        interaction::interaction_name(&interaction::marker("Backchannel")),
        None
    );
    assert_eq!(interaction::interaction_name(&TickMarker::BargeIn), None);
    // The wire form is the ordinary custom marker.
    assert_eq!(
        interaction::marker(interaction::BACKCHANNEL).wire_name(),
        None
    );
}
