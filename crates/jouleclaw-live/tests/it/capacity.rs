//! Capacity stated honestly: the load generator's schedule, its lag behind it, and the verdict
//! a run ends with (`kept up` / `fell behind by ...`). Time is tokio's paused clock: a generator
//! on it is never late unless the clock jumps past its schedule, which the test does.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use jouleclaw_live::synth::{Capacity, Latency, scheduled_ticks, synthetic_call_with_lag};
use jouleclaw_live::*;

const W: u64 = 200_000_000;

fn kept_up() -> Capacity {
    Capacity {
        scheduled_windows: 2_000,
        scheduled_ticks: 9_000,
        minted_windows: 2_000,
        accepted_ticks: 9_000,
        lag_p50_us: 1_000,
        lag_p99_us: 20_000,
        lag_max_us: 350_000,
        grace_us: 20_000,
        failed_streams: 0,
    }
}

#[test]
fn a_run_that_kept_up_says_so_and_each_shortfall_makes_it_fall_behind() {
    let k = kept_up();
    assert!(k.kept_up());
    assert!(k.verdict().starts_with("kept up:"), "{}", k.verdict());
    // 59 % of the windows minted (the 2,000-stream run), nothing refused, healthy lag.
    let few = Capacity {
        minted_windows: 1_180,
        ..k
    };
    assert!(!few.kept_up());
    assert_eq!(
        few.verdict(),
        "fell behind by 820 windows (41.0 % of 2000 scheduled not minted)"
    );
    // Ticks not accepted.
    let refused = Capacity {
        accepted_ticks: 8_100,
        ..k
    };
    assert_eq!(
        refused.verdict(),
        "fell behind by 900 ticks (10.0 % of 9000 scheduled not accepted)"
    );
    // The lag past the grace at p99, with every window and tick there.
    let late = Capacity {
        lag_p99_us: 20_001,
        ..k
    };
    assert!(!late.kept_up());
    assert!(
        late.verdict().starts_with(
            "fell behind by a lag of 20.0 ms at p99 (max 350.0 ms) past the 20.0 ms grace"
        ),
        "{}",
        late.verdict()
    );
    // More windows than scheduled: late ticks spread into later windows.
    let spread = Capacity {
        minted_windows: 2_010,
        ..k
    };
    assert!(!spread.kept_up());
    assert!(
        spread
            .verdict()
            .contains("10 windows more than the 2000 scheduled")
    );
    // All at once, each named.
    let all = Capacity {
        minted_windows: 1_000,
        accepted_ticks: 1,
        lag_p99_us: 900_000,
        ..k
    };
    assert_eq!(all.verdict().matches("; ").count(), 2, "{}", all.verdict());
    // Failed streams stop pushing: named beside the shortfall they cause.
    let failed = Capacity {
        accepted_ticks: 8_100,
        failed_streams: 3,
        ..k
    };
    assert!(
        failed
            .verdict()
            .ends_with("not accepted) (3 streams failed: their calls stopped pushing)"),
        "{}",
        failed.verdict()
    );
}

#[test]
fn the_schedule_counts_the_scripts_ticks() {
    // One cycle of 10 windows: 10 mic frames; user speech, ASR text and end of turn; TTS
    // start, LLM text and 4 TTS frames; and at the barge-in window user speech, the barge-in
    // and an end (or late TTS audio).
    assert_eq!(scheduled_ticks(10, false, W), 10 + 3 + 3 + 3 + 4);
    assert_eq!(scheduled_ticks(10, true, W), scheduled_ticks(10, false, W));
    // Two cycles, then windows 0 to 4 of a third.
    assert_eq!(scheduled_ticks(25, false, W), 2 * 23 + 4 + 4 + 3 * 2);
    assert_eq!(scheduled_ticks(0, false, W), 0);
    // Events past a short window's end are not scheduled (nor pushed).
    assert!(scheduled_ticks(10, true, 150_000_000) < scheduled_ticks(10, true, W));
}

/// One call of 12 windows on the paused clock; when `jump` is set the clock jumps 700 ms
/// ahead 300 ms into the call, as a generator starved of its thread would find it.
async fn call(jump: bool) -> (Capacity, u64) {
    let t = tempfile::tempdir().unwrap();
    let c = SubstrateConfig::new("did:example:steward");
    let grace_us = c.grace_ns / 1000;
    let s = common::paused_substrate(c, Box::new(FileSink::new(t.path()).unwrap()));
    let h = s.open_stream("call-0").unwrap();
    let (push, yields, lag) = (Latency::default(), Latency::default(), Latency::lag());
    let jumper = tokio::spawn(async move {
        if jump {
            tokio::time::sleep(Duration::from_millis(300)).await;
            tokio::time::advance(Duration::from_millis(700)).await;
        }
    });
    let r = synthetic_call_with_lag(&h, 12, false, &push, &yields, &lag)
        .await
        .unwrap();
    jumper.await.unwrap();
    let summary = h.close().await.unwrap();
    s.shutdown().await.unwrap();
    let cap = Capacity {
        scheduled_windows: 12,
        scheduled_ticks: scheduled_ticks(12, false, W),
        minted_windows: summary.windows,
        accepted_ticks: summary.accepted,
        lag_p50_us: lag.quantile_us(0.5),
        lag_p99_us: lag.quantile_us(0.99),
        lag_max_us: lag.max_us(),
        grace_us,
        failed_streams: 0,
    };
    assert_eq!(r.accepted, summary.accepted);
    assert_eq!(lag.count(), r.accepted + r.refused);
    (cap, r.refused)
}

#[tokio::test(start_paused = true)]
async fn a_generator_on_schedule_keeps_up() {
    let (cap, refused) = call(false).await;
    assert_eq!(refused, 0);
    assert_eq!(cap.lag_max_us, 0);
    assert!(cap.kept_up(), "{}", cap.verdict());
    assert!(cap.verdict().starts_with("kept up"));
}

#[tokio::test(start_paused = true)]
async fn a_generator_behind_its_schedule_says_it_fell_behind() {
    let (cap, _) = call(true).await;
    // The ticks due in the 700 ms the clock jumped over were pushed late, into later windows.
    assert!(cap.lag_max_us >= 500_000, "{cap:?}");
    assert!(cap.minted_windows < cap.scheduled_windows, "{cap:?}");
    assert!(!cap.kept_up());
    assert!(
        cap.verdict().starts_with("fell behind by "),
        "{}",
        cap.verdict()
    );
}
