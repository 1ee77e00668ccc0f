//! The rolling conservation ledger: rules, bounds, and a naive model under proptest.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use ChannelDirection::{Inbound, Outbound, Substrate};
use TickEvent::{BargeIn, OtherMarker, Payload, Start};
use bytes::Bytes;
use jouleclaw_stream::WindowConservationFinding::{BargeInIgnored, Conforming, Hallucination};
use jouleclaw_stream::*;
use proptest::prelude::*;

const MS: u64 = NS_PER_MS;
const DEADLINE: u64 = BARGE_IN_DEADLINE_MS * MS;

fn ledger() -> RollingConservationLedger {
    RollingConservationLedger::new(LedgerPolicy::default()).unwrap()
}

/// One observation through `observe_raw`, which must not fail: window `w`, the channel's
/// direction, the tick's event, its payload length and its time.
fn see(
    l: &mut RollingConservationLedger,
    w: u64,
    direction: ChannelDirection,
    event: TickEvent,
    len: u64,
    ts: u64,
) -> WindowConservationFinding {
    l.observe_raw(w, direction, event, len, ts).unwrap()
}

fn payload(w: u64, ch: u32, kind: TickKind, len: usize, ts: u64) -> Tick {
    Tick::new(w, ch, kind, Bytes::from(vec![0u8; len]), ts)
}

#[test]
fn outbound_within_budget_conforms_and_past_it_hallucinates() {
    use ChannelDirection::{Inbound, Outbound, Substrate};
    let mut l = ledger();
    let mut see = |ch: u32, kind: TickKind, len: usize, ts: u64, dir: ChannelDirection| {
        l.observe(&payload(0, ch, kind, len, ts), dir).unwrap()
    };
    assert_eq!(see(1, TickKind::Audio, 100, 0, Inbound), Conforming);
    assert_eq!(see(5, TickKind::Text, 20, 1, Substrate), Conforming);
    // Exactly at the budget (100 + 20) still conforms.
    assert_eq!(see(3, TickKind::Audio, 120, 2, Outbound), Conforming);
    assert_eq!(
        see(3, TickKind::Audio, 1, 3, Outbound),
        Hallucination { unaccounted: 1 }
    );
    assert_eq!(l.window_summary(), Hallucination { unaccounted: 1 });
}

#[test]
fn policy_allowance_and_slack_shape_the_budget() {
    let policy = LedgerPolicy {
        window_count: 2,
        allowance_permille: 500,
        slack_bytes: 10,
    };
    let mut l = RollingConservationLedger::new(policy).unwrap();
    see(&mut l, 0, Inbound, Payload, 100, 0);
    // budget = 100 * 0.5 + 10 = 60
    assert_eq!(see(&mut l, 0, Outbound, Payload, 60, 1), Conforming);
    assert_eq!(
        see(&mut l, 0, Outbound, Payload, 5, 2),
        Hallucination { unaccounted: 5 }
    );
}

#[test]
fn budget_rolls_off_after_window_count_windows() {
    let mut l = ledger(); // 5 windows
    see(&mut l, 0, Inbound, Payload, 1000, 0);
    // Window 4 still sees window 0's inbound.
    let f = see(&mut l, 4, Outbound, Payload, 1000, 0);
    assert_eq!(f, Conforming);
    // Window 5 no longer does, and window 4's outbound is still in the ring.
    let f = see(&mut l, 5, Outbound, Payload, 1, 0);
    assert_eq!(f, Hallucination { unaccounted: 1001 });
    // A gap larger than the ring clears everything.
    let f = see(&mut l, 100, Inbound, Payload, 0, 0);
    assert_eq!(f, Conforming);
    assert_eq!(l.rolling_outbound(), 0);
}

#[test]
fn window_regression_is_refused_and_changes_nothing() {
    let mut l = ledger();
    see(&mut l, 3, Inbound, Payload, 10, 0);
    let before = format!("{l:?}");
    let err = l
        .observe_raw(2, ChannelDirection::Outbound, TickEvent::Payload, 10, 0)
        .unwrap_err();
    assert_eq!(err.code(), "ledger_window_regressed");
    assert_eq!(before, format!("{l:?}"));
    see(&mut l, 3, Outbound, Payload, 10, 0);
}

#[test]
fn barge_in_deadline_is_judged_on_each_outbound_tick() {
    let mut l = ledger();
    let t0 = 1_000 * MS;
    see(&mut l, 5, Inbound, Payload, 6400, t0 - 1);
    see(&mut l, 5, Inbound, BargeIn, 0, t0);
    assert_eq!(l.pending_barge_in_ns(), Some(t0));
    // At the deadline exactly: still in time.
    let f = see(&mut l, 5, Outbound, Payload, 10, t0 + DEADLINE);
    assert_eq!(f, Conforming);
    // One nanosecond later: ignored, even though the window has not closed.
    let f = see(&mut l, 6, Outbound, Payload, 10, t0 + DEADLINE + 1);
    assert_eq!(
        f,
        BargeInIgnored {
            barge_in_ts_ns: t0,
            outbound_ts_ns: t0 + DEADLINE + 1
        }
    );
    // Markers on the outbound side other than Start do not count as outbound content.
    let f = see(&mut l, 6, Outbound, OtherMarker, 0, t0 + DEADLINE + 2);
    assert_eq!(f, Conforming);
    // Inbound payload after the deadline is not outbound.
    let f = see(&mut l, 6, Inbound, Payload, 10, t0 + DEADLINE + 3);
    assert_eq!(f, Conforming);
    // A Start on the outbound side reopens outbound.
    see(&mut l, 6, Outbound, Start, 0, t0 + DEADLINE + 4);
    assert_eq!(l.pending_barge_in_ns(), None);
    let f = see(&mut l, 6, Outbound, Payload, 10, t0 + DEADLINE + 5);
    assert_eq!(f, Conforming);
}

#[test]
fn start_on_the_inbound_side_does_not_reopen_outbound() {
    let mut l = ledger();
    see(&mut l, 0, Inbound, Payload, 6400, 0);
    see(&mut l, 0, Inbound, BargeIn, 0, 10);
    see(&mut l, 0, Inbound, Start, 0, 20);
    let f = see(&mut l, 1, Outbound, Payload, 1, 10 + DEADLINE + 1);
    assert!(matches!(f, BargeInIgnored { .. }));
    // A barge-in marker on an outbound channel is not the user's barge-in.
    let mut l = ledger();
    see(&mut l, 0, Outbound, BargeIn, 0, 0);
    assert_eq!(l.pending_barge_in_ns(), None);
}

#[test]
fn repeated_barge_ins_keep_the_first_deadline() {
    let mut l = ledger();
    see(&mut l, 0, Inbound, Payload, 6400, 0);
    see(&mut l, 0, Inbound, BargeIn, 0, 10);
    see(&mut l, 0, Inbound, BargeIn, 0, 100 * MS);
    let f = see(&mut l, 0, Outbound, Payload, 1, 10 + DEADLINE + 1);
    assert!(matches!(
        f,
        BargeInIgnored {
            barge_in_ts_ns: 10,
            ..
        }
    ));
}

#[test]
fn summary_dominance_and_reset_per_window() {
    let a = Hallucination { unaccounted: 3 };
    let b = Hallucination { unaccounted: 9 };
    let x = BargeInIgnored {
        barge_in_ts_ns: 1,
        outbound_ts_ns: 2,
    };
    let y = BargeInIgnored {
        barge_in_ts_ns: 5,
        outbound_ts_ns: 6,
    };
    assert_eq!(Conforming.dominate(a), a);
    assert_eq!(a.dominate(Conforming), a);
    assert_eq!(a.dominate(b), b);
    assert_eq!(b.dominate(a), b);
    assert_eq!(a.dominate(x), x);
    assert_eq!(x.dominate(b), x);
    assert_eq!(x.dominate(y), x, "the earlier ignored barge-in is kept");
    let mut l = ledger();
    see(&mut l, 0, Outbound, Payload, 5, 0);
    see(&mut l, 0, Inbound, Payload, 100, 1);
    assert_eq!(l.window_summary(), Hallucination { unaccounted: 5 });
    l.advance_to(1).unwrap();
    assert_eq!(l.window_summary(), Conforming);
}

#[test]
fn counters_never_wrap_at_u64_max() {
    let mut l = RollingConservationLedger::new(LedgerPolicy {
        window_count: 3,
        ..Default::default()
    })
    .unwrap();
    see(&mut l, 0, Outbound, Payload, u64::MAX, 0);
    let f = see(&mut l, 0, Outbound, Payload, u64::MAX, 0);
    // The slot saturates at u64::MAX and the rolling sum follows the slot.
    assert_eq!(l.rolling_outbound(), u128::from(u64::MAX));
    assert_eq!(
        f,
        Hallucination {
            unaccounted: u64::MAX
        }
    );
    see(&mut l, 1, Outbound, Payload, u64::MAX, 0);
    assert_eq!(l.rolling_outbound(), 2 * u128::from(u64::MAX));
    // Unaccounted saturates at u64::MAX rather than wrapping.
    assert_eq!(
        l.balance(),
        Hallucination {
            unaccounted: u64::MAX
        }
    );
    see(&mut l, 1, Inbound, Payload, u64::MAX, 0);
    see(&mut l, 1, Substrate, Payload, u64::MAX, 0);
    assert_eq!(l.balance(), Conforming);
    // Eviction stays exact.
    l.advance_to(3).unwrap();
    assert_eq!(l.rolling_outbound(), u128::from(u64::MAX));
    l.advance_to(10).unwrap();
    assert_eq!(
        (
            l.rolling_inbound(),
            l.rolling_outbound(),
            l.rolling_substrate()
        ),
        (0, 0, 0)
    );
    // Barge-in deadline arithmetic near u64::MAX does not wrap.
    let mut l = ledger();
    see(&mut l, 0, Inbound, BargeIn, 0, u64::MAX - 1);
    let f = see(&mut l, 0, Outbound, Payload, 0, u64::MAX);
    assert_eq!(f, Conforming);
}

#[test]
fn policy_bounds() {
    let windows = |window_count| LedgerPolicy {
        window_count,
        ..Default::default()
    };
    let allowance = |allowance_permille| LedgerPolicy {
        allowance_permille,
        ..Default::default()
    };
    for (p, ok) in [
        (windows(0), false),
        (windows(1), true),
        (windows(LedgerPolicy::MAX_WINDOW_COUNT), true),
        (windows(LedgerPolicy::MAX_WINDOW_COUNT + 1), false),
        (allowance(LedgerPolicy::MAX_ALLOWANCE_PERMILLE), true),
        (allowance(LedgerPolicy::MAX_ALLOWANCE_PERMILLE + 1), false),
    ] {
        let r = RollingConservationLedger::new(p);
        assert_eq!(r.is_ok(), ok, "{p:?}");
        if let Err(e) = r {
            assert_eq!(e.code(), "ledger_invalid_policy");
        }
    }
}

/// One observation for the naive model.
#[derive(Debug, Clone)]
struct Obs {
    window_gap: u64,
    direction: ChannelDirection,
    event: TickEvent,
    len: u64,
    dt: u64,
}

fn obs() -> impl Strategy<Value = Obs> {
    let dir = prop_oneof![
        Just(ChannelDirection::Inbound),
        Just(ChannelDirection::Outbound),
        Just(ChannelDirection::Substrate)
    ];
    let ev = prop_oneof![
        6 => Just(TickEvent::Payload),
        1 => Just(TickEvent::BargeIn),
        1 => Just(TickEvent::Start),
        1 => Just(TickEvent::OtherMarker)
    ];
    (
        prop_oneof![6 => Just(0u64), 2 => 1u64..3, 1 => 3u64..12],
        dir,
        ev,
        0u64..20_000,
        0u64..120 * MS,
    )
        .prop_map(|(window_gap, direction, event, len, dt)| Obs {
            window_gap,
            direction,
            event,
            len,
            dt,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Rolling sums and findings equal a naive recomputation from the full history.
    #[test]
    fn ledger_matches_naive_recomputation(
        ops in prop::collection::vec(obs(), 1..120),
        window_count in 1u32..8,
        allowance_permille in 0u32..2500,
        slack in 0u64..5000,
    ) {
        let policy = LedgerPolicy { window_count, allowance_permille, slack_bytes: slack };
        let mut l = RollingConservationLedger::new(policy).unwrap();
        let mut history: Vec<(u64, ChannelDirection, u64)> = Vec::new();
        let (mut w, mut ts) = (0u64, 0u64);
        let mut pending: Option<u64> = None;
        let mut summary = Conforming;
        for o in ops {
            if o.window_gap > 0 { summary = Conforming; }
            w += o.window_gap;
            ts += o.dt;
            let got = l.observe_raw(w, o.direction, o.event, o.len, ts).unwrap();
            history.push((w, o.direction, o.len));
            let lo = w.saturating_sub(u64::from(window_count) - 1);
            let sum = |d: ChannelDirection| -> u128 {
                history.iter().filter(|(hw, hd, _)| *hw >= lo && *hd == d).map(|(_, _, n)| u128::from(*n)).sum()
            };
            let (i, o_, s) = (sum(ChannelDirection::Inbound), sum(ChannelDirection::Outbound), sum(ChannelDirection::Substrate));
            prop_assert_eq!((l.rolling_inbound(), l.rolling_outbound(), l.rolling_substrate()), (i, o_, s));
            let budget = (i + s) * u128::from(allowance_permille) / 1000 + u128::from(slack);
            let mut late = None;
            match (o.direction, o.event) {
                (ChannelDirection::Inbound, TickEvent::BargeIn) => { pending.get_or_insert(ts); }
                (ChannelDirection::Outbound, TickEvent::Start) => pending = None,
                (ChannelDirection::Outbound, TickEvent::Payload) => {
                    if let Some(b) = pending && ts > b + DEADLINE { late = Some(b); }
                }
                _ => {}
            }
            let expect = match late {
                Some(b) => BargeInIgnored { barge_in_ts_ns: b, outbound_ts_ns: ts },
                None if o_ > budget => Hallucination { unaccounted: (o_ - budget) as u64 },
                None => Conforming,
            };
            prop_assert_eq!(got, expect);
            summary = summary.dominate(expect);
            prop_assert_eq!(l.window_summary(), summary);
        }
    }

    /// A refused push never changes the window.
    #[test]
    fn refused_push_changes_nothing(
        good in prop::collection::vec((0u32..7, 0usize..40_000, 0u64..300 * MS), 0..30),
    ) {
        let spec = Arc::new(StreamSpec::duplex_voice_default());
        let mut w = StreamWindow::open(spec, 1).unwrap();
        let mut ts = 200 * MS;
        for (ch, len, dt) in good {
            ts += dt / 4;
            let kind = match ch { 1 | 3 => TickKind::Audio, 0 => TickKind::Marker(TickMarker::Silence), _ => TickKind::Text };
            let before = (w.ticks().to_vec(), w.inbound_bytes(), w.outbound_bytes(), w.substrate_bytes(), w.content_hash());
            let t = Tick::new(1, ch, kind, Bytes::from(vec![1u8; len]), ts);
            if w.push(t).is_err() {
                let after = (w.ticks().to_vec(), w.inbound_bytes(), w.outbound_bytes(), w.substrate_bytes(), w.content_hash());
                prop_assert_eq!(before, after);
            }
        }
    }

    /// Window hashing depends on payload bytes, not on how the `Bytes` were sliced.
    #[test]
    fn hash_is_independent_of_payload_slicing(data in prop::collection::vec(any::<u8>(), 0..4000), cut in 0usize..4000) {
        let spec = Arc::new(StreamSpec::duplex_voice_default());
        let cut = cut.min(data.len());
        let mut backing = vec![9u8; cut];
        backing.extend_from_slice(&data);
        let sliced = Bytes::from(backing).slice(cut..);
        let owned = Bytes::copy_from_slice(&data);
        let mut a = StreamWindow::open(spec.clone(), 0).unwrap();
        let mut b = StreamWindow::open(spec, 0).unwrap();
        a.push(Tick::new(0, duplex::ASR, TickKind::Text, owned, 5)).unwrap();
        b.push(Tick::new(0, duplex::ASR, TickKind::Text, sliced, 5)).unwrap();
        prop_assert_eq!(a.content_hash(), b.content_hash());
    }
}
