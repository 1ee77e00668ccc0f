//! The meter's cost beside `Pipeline::push`, for callgrind instruction counts:
//! `meter_cost setup|pipeline|both [FRAMES]` builds the ticks of a synthetic call of FRAMES
//! 200 ms frames (default 3,000: ten minutes) as `import tau-voice` writes them, then pushes
//! them through the pipeline (`pipeline`), or through the pipeline with the interaction meter
//! fed each accepted tick and finished at the end (`both`); `setup` only builds them.
//! Per-tick meter cost = (Ir(both) - Ir(pipeline)) / ticks; pipeline cost = Ir(pipeline) -
//! Ir(setup).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use jouleclaw_interaction::tau_voice::{TauFrame, TauSimulation, simulation_ticks};
use jouleclaw_interaction::{InteractionConfig, InteractionMeter};
use jouleclaw_jcr1::Estimator;
use jouleclaw_jcr1::cose::SoftwareSigner;
use jouleclaw_pipeline::{Pipeline, PipelineConfig, duplex_voice_oracle};
use jouleclaw_stream::StreamSpec;

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "both".into());
    let frames: usize = std::env::args()
        .nth(2)
        .map_or(3_000, |s| s.parse().unwrap());
    // A conversation in cycles of 40 frames: the user speaks 10, a gap of 3, the agent speaks
    // 20 (with a backchannel, a vocal tic and an interruption in some cycles), silence.
    let frames: Vec<TauFrame> = (0..frames)
        .map(|i| {
            let c = i % 40;
            let cycle = i / 40;
            TauFrame {
                user_speech: c < 10 || (cycle % 3 == 0 && (25..28).contains(&c)),
                agent_speech: (13..33).contains(&c),
                backchannel: cycle % 3 == 0 && c == 25,
                vocal_tic: cycle % 5 == 1 && c == 2,
                non_directed: cycle % 7 == 2 && c == 36,
            }
        })
        .collect();
    let ticks = simulation_ticks(&TauSimulation { id: None, frames });
    let n = ticks.len();
    if mode == "setup" {
        println!("{n} ticks built");
        return;
    }
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let mut p = Pipeline::new(
        spec.clone(),
        PipelineConfig::new("did:example:steward", "call-1"),
        duplex_voice_oracle(),
        Estimator::default(),
        Box::new(SoftwareSigner::rfc8032_test_key()),
    )
    .unwrap();
    let mut meter = InteractionMeter::new(InteractionConfig::default()).unwrap();
    let with_meter = mode == "both";
    for tick in ticks {
        let dir = spec.channel(tick.channel_id).unwrap().direction;
        if with_meter {
            meter.observe(&tick, dir).unwrap();
        }
        std::hint::black_box(p.push(tick).unwrap());
    }
    std::hint::black_box(p.finish().unwrap());
    let events = if with_meter {
        meter.finish().unwrap().len()
    } else {
        0
    };
    println!("{n} ticks pushed, {events} events");
}
