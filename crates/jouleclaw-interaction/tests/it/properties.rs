//! Properties of the meter, the panel and the document over random trajectories, and the
//! meter's refusals.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use bytes::Bytes;
use common::events;
use jouleclaw_interaction::*;
use jouleclaw_stream::{ChannelDirection, Tick, TickKind, duplex, interaction};
use proptest::prelude::*;

fn token() -> impl Strategy<Value = String> {
    (0u8..32).prop_map(|bits| {
        let mut t = String::new();
        for (bit, c) in [(1, 'u'), (2, 'a'), (4, 'b'), (8, 'v'), (16, 'n')] {
            if bits & bit != 0 && (c == 'u' || c == 'a' || bits & 3 != 0 || bits % 7 == 0) {
                t.push(c);
            }
        }
        if t.is_empty() { ".".to_owned() } else { t }
    })
}

fn trajectory() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(token(), 1..80)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Once the trajectory ends in more silence than the longest window, more silence at the
    /// end changes nothing.
    #[test]
    fn trailing_silence_past_every_window_changes_nothing(t in trajectory(), extra in 1usize..30) {
        let base = format!("{} {}", t.join(" "), ["."; 12].join(" "));
        let longer = format!("{base} {}", vec!["."; extra].join(" "));
        prop_assert_eq!(events(&base), events(&longer));
    }

    /// An agent that stops on the next frame after a real interruption has L_Y of one frame
    /// (200 ms), within the 150 ms deadline.
    #[test]
    fn stopping_on_the_next_frame_is_one_tick(pre in 1usize..20, talk in 1usize..10) {
        let mut t = vec!["."; pre];
        t.extend(vec!["a"; talk]);
        t.extend(["au", "u", "u", ".", ".", "."]);
        let e = events(&t.join(" "));
        let y: Vec<&Event> = e.iter().filter(|e| e.kind == EventKind::Yield).collect();
        prop_assert_eq!(y.len(), 1);
        prop_assert_eq!(y[0].latency_ticks, Some(1));
        prop_assert!(within_deadline(&InteractionConfig::default(), 1));
        let p = Panel::of(&InteractionConfig::default(), &e);
        prop_assert_eq!(p.yield_latency_mean, Some(0.2));
    }

    /// Events are in frame order, within the stream, name their window, and the document of
    /// any trajectory encodes, decodes to itself, and counts them.
    #[test]
    fn documents_round_trip(t in trajectory()) {
        let e = events(&t.join(" "));
        let frames = t.len() as u64;
        prop_assert!(e.windows(2).all(|p| p[0].tick <= p[1].tick));
        prop_assert!(e.iter().all(|x| x.tick < frames && x.segment_tick <= x.tick));
        let doc = InteractionDocument::new("did:example:s", "call", InteractionConfig::default(), frames, &e, &[[1; 32]]).unwrap();
        let bytes = doc.encode().unwrap();
        prop_assert_eq!(InteractionDocument::decode(&bytes).unwrap(), doc.clone());
        let p = doc.panel();
        for r in [p.response_rate, p.yield_rate, p.yield_rate_deadline, p.selectivity_backchannel, p.selectivity_vocal_tic, p.selectivity_non_directed].into_iter().flatten() {
            prop_assert!((0.0..=1.0).contains(&r));
        }
        prop_assert!(p.yield_rate_deadline <= p.yield_rate);
    }

    /// Ticks that are not interaction input (text, inbound audio, other markers) change
    /// nothing.
    #[test]
    fn other_ticks_change_nothing(t in trajectory()) {
        let spec = t.join(" ");
        let plain = events(&spec);
        let layout = jouleclaw_stream::StreamSpec::duplex_voice_default();
        let mut m = InteractionMeter::new(InteractionConfig::default()).unwrap();
        for tick in jouleclaw_interaction::tau_voice::simulation_ticks(&common::frames(&spec)) {
            let dir = layout.channels.iter().find(|c| c.id == tick.channel_id).unwrap().direction;
            m.observe(&tick, dir).unwrap();
            let noise = Tick::new(tick.window_id, duplex::LLM, TickKind::Text, Bytes::from_static(b"hi"), tick.ts_ns);
            m.observe(&noise, ChannelDirection::Outbound).unwrap();
            let other = Tick::marker(tick.window_id, duplex::CONTROL, interaction::marker("laughter"), tick.ts_ns);
            m.observe(&other, ChannelDirection::Inbound).unwrap();
        }
        prop_assert_eq!(m.finish().unwrap().to_vec(), plain);
    }
}

#[test]
fn pairwise_sum_is_numpys() {
    // Figures from numpy 2.4: np.sum over these arrays (sequential summation would differ
    // in the last bit for the 9-element one).
    let nine = [
        0.1,
        0.2,
        0.30000000000000004,
        1e16,
        1.0,
        -1e16,
        0.7,
        0.2,
        0.1,
    ];
    let seq: f64 = nine.iter().sum();
    let pw = pairwise_sum(&nine);
    let by_hand =
        ((0.1 + 0.2) + (0.30000000000000004 + 1e16)) + ((1.0 + -1e16) + (0.7 + 0.2)) + 0.1;
    assert_eq!(pw, by_hand);
    assert_ne!(pw, seq);
    assert_eq!(pairwise_sum(&[0.2, 0.4]), 0.2 + 0.4);
}

#[test]
fn refusals_change_nothing() {
    let mut m = InteractionMeter::new(InteractionConfig::default()).unwrap();
    let user = |ts: u64| {
        Tick::marker(
            ts / 200_000_000,
            duplex::CONTROL,
            interaction::marker(interaction::USER_SPEECH),
            ts,
        )
    };
    m.observe(&user(400_000_000), ChannelDirection::Inbound)
        .unwrap();
    // An earlier tick (a stage's, stamped before the tick that produced it) lands in its own
    // frame.
    m.observe(&user(200_000_000), ChannelDirection::Inbound)
        .unwrap();
    let far = MAX_FRAMES * 200_000_000;
    let e = m
        .observe(&user(far), ChannelDirection::Inbound)
        .unwrap_err();
    assert_eq!(e.code(), "too_many_frames");
    assert_eq!(m.frame_count(), 3);
    m.observe(&user(far - 1), ChannelDirection::Inbound)
        .unwrap();
    assert_eq!(m.frame_count(), MAX_FRAMES);
    m.finish().unwrap();
    let e = m
        .observe(&user(far), ChannelDirection::Inbound)
        .unwrap_err();
    assert_eq!(e.code(), "meter_finished");
}

#[test]
fn bad_configs_are_refused() {
    for c in [
        InteractionConfig {
            tick_ns: 0,
            ..InteractionConfig::default()
        },
        InteractionConfig {
            no_yield_window_ns: MAX_WINDOW_NS + 1,
            ..InteractionConfig::default()
        },
    ] {
        assert_eq!(InteractionMeter::new(c).unwrap_err().code(), "bad_config");
    }
    let ok = InteractionConfig {
        no_yield_window_ns: MAX_WINDOW_NS,
        ..InteractionConfig::default()
    };
    assert!(InteractionMeter::new(ok).is_ok());
}

#[test]
fn panels_of_other_windows_do_not_add_up() {
    let mut b = PanelBuilder::new(InteractionConfig::default());
    let other = InteractionConfig {
        tick_ns: 100_000_000,
        ..InteractionConfig::default()
    };
    assert_eq!(b.add(&other, &[]).unwrap_err().code(), "config_mismatch");
    assert_eq!(b.panel().counts.n_simulations, 0);
    b.add(&InteractionConfig::default(), &[]).unwrap();
    assert_eq!(b.panel().counts.n_simulations, 1);
}
