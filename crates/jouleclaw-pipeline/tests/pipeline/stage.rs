//! The stage seam: produced ticks join the stream after the tick that caused them, through
//! window, ledger and oracles but no stage; a produced tick the window refuses poisons.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use jouleclaw_jcr1::Estimator;
use jouleclaw_jcr1::cose::SoftwareSigner;
use jouleclaw_pipeline::*;
use jouleclaw_stream::{StreamSpec, Tick, TickKind, TickMarker, duplex};
use jouleclaw_stream_oracle::WindowVerdict;

/// Turns every text tick on the ASR channel into the tick `make` builds from it; counts calls.
struct Echo {
    /// Ticks the stage was fed, shared with the test.
    seen: Arc<AtomicUsize>,
    make: fn(&Tick) -> Tick,
}

impl Stage for Echo {
    fn name(&self) -> &str {
        "echo"
    }

    fn on_tick(&mut self, tick: &Tick, out: &mut Vec<Tick>) -> Result<(), StageFailure> {
        self.seen.fetch_add(1, Ordering::Relaxed);
        if tick.channel_id == duplex::ASR {
            out.push((self.make)(tick));
        }
        Ok(())
    }
}

fn pipeline_with(make: fn(&Tick) -> Tick) -> Pipeline {
    pipeline_seeing(make, Arc::new(AtomicUsize::new(0)))
}

fn pipeline_seeing(make: fn(&Tick) -> Tick, seen: Arc<AtomicUsize>) -> Pipeline {
    Pipeline::new(
        Arc::new(StreamSpec::duplex_voice_default()),
        PipelineConfig::new("did:example:s", "s1"),
        duplex_voice_oracle(),
        Estimator::default(),
        Box::new(SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap()
    .with_stage(Box::new(Echo { seen, make }))
}

fn asr(ts_ns: u64) -> Tick {
    Tick::new(
        ts_ns / 200_000_000,
        duplex::ASR,
        TickKind::Text,
        Bytes::from_static(b"stop"),
        ts_ns,
    )
}

#[test]
fn a_produced_barge_in_joins_the_window_and_yields_early() {
    let mut p =
        pipeline_with(|t| Tick::marker(t.window_id, duplex::CONTROL, TickMarker::BargeIn, t.ts_ns));
    let out = p.push(asr(50_000_000)).unwrap();
    // The ASR tick itself raises nothing; the produced barge-in does.
    assert_eq!(out.early, None);
    let produced = out.stages[0].result.as_ref().unwrap();
    assert_eq!(produced.len(), 1);
    assert_eq!(produced[0].early, Some(WindowVerdict::Yield { seen_at: 0 }));
    let closed = p.close_window().unwrap().unwrap();
    assert_eq!(closed.receipt.tick_count, 2);
    assert_eq!(closed.receipt.verdict, WindowVerdict::Yield { seen_at: 0 });
    assert_eq!(closed.early.len(), 1);
}

#[test]
fn a_stage_never_sees_its_own_output() {
    // An echo of ASR text onto the ASR channel would loop forever if the stage saw it.
    let mut p = pipeline_with(|t| {
        Tick::new(
            t.window_id,
            duplex::ASR,
            TickKind::Text,
            Bytes::from_static(b"again"),
            t.ts_ns,
        )
    });
    let out = p.push(asr(0)).unwrap();
    assert_eq!(out.stages[0].result.as_ref().unwrap().len(), 1);
    let closed = p.close_window().unwrap().unwrap();
    assert_eq!(closed.receipt.tick_count, 2);
    assert_eq!(closed.receipt.inbound_bytes, 4 + 5);
}

#[test]
fn a_produced_tick_its_window_refuses_poisons_the_pipeline() {
    // A tick for the next window cannot join the open one.
    let mut p = pipeline_with(|t| {
        Tick::new(
            t.window_id + 1,
            duplex::ASR,
            TickKind::Text,
            Bytes::from_static(b"x"),
            t.ts_ns + 200_000_000,
        )
    });
    let e = p.push(asr(0)).unwrap_err();
    assert_eq!(e.code(), "stage_tick_refused");
    match &e {
        PipelineError::StageTickRefused { stage, error } => {
            assert_eq!(stage, "echo");
            assert_eq!(error.code(), "tick_window_mismatch");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(p.close_window(), Err(PipelineError::Poisoned));
    assert_eq!(p.push(asr(10)).unwrap_err(), PipelineError::Poisoned);
}

#[test]
fn a_tick_the_window_refuses_never_reaches_a_stage() {
    let seen = Arc::new(AtomicUsize::new(0));
    let mut p = pipeline_seeing(|t| t.clone(), Arc::clone(&seen));
    let bad = Tick::new(0, 99, TickKind::Text, Bytes::new(), 0);
    assert_eq!(p.push(bad).unwrap_err().code(), "tick_unknown_channel");
    assert_eq!(
        seen.load(Ordering::Relaxed),
        0,
        "the refused tick reached the stage"
    );
    // The pipeline is not poisoned; the accepted neighbour reaches the stage.
    let ok = Tick::new(
        0,
        duplex::MIC,
        TickKind::Audio,
        Bytes::from(vec![0u8; 2]),
        0,
    );
    let out = p.push(ok).unwrap();
    assert_eq!(out.stages[0].result, Ok(vec![]));
    assert_eq!(seen.load(Ordering::Relaxed), 1);
    assert_eq!(p.close_window().unwrap().unwrap().receipt.tick_count, 1);
}
