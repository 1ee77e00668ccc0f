//! Instruction counts for the `e2e` bench group, independent of machine load:
//!
//! ```sh
//! cargo build --release --example e2e_ir
//! valgrind --tool=callgrind --toggle-collect='e2e_ir::measured' target/release/examples/e2e_ir every
//! valgrind --tool=callgrind --toggle-collect='e2e_ir::measured' target/release/examples/e2e_ir sealed
//! valgrind --tool=callgrind --toggle-collect='e2e_ir::measured' target/release/examples/e2e_ir floor
//! ```
//!
//! Each runs the bench's fixture window (22 ticks: ten 640 B mic frames, ten 480 B TTS frames,
//! one ASR and one LLM text tick) for 200 windows inside `measured`; divide the collected
//! instructions by 200. `every`: one signature per window; `sealed`: a checkpoint every 25
//! windows and no per-window signature; `floor`: BLAKE3 of the same payloads, one tick at a time.

mod common;

use std::hint::black_box;
use std::sync::Arc;

use common::ticks;
use jouleclaw_stack::jcr1::Estimator;
use jouleclaw_stack::jcr1::cose::SoftwareSigner;
use jouleclaw_stack::pipeline::{Pipeline, PipelineConfig, SigningPolicy, duplex_voice_oracle};
use jouleclaw_stack::stream::{StreamSpec, Tick};

const WINDOWS: u64 = 200;

#[inline(never)]
fn measured(p: &mut Option<Pipeline>, windows: &[Vec<Tick>]) {
    for ws in windows {
        match p {
            Some(p) => {
                for t in ws {
                    black_box(p.push(t.clone()).ok());
                }
                black_box(p.close_window().ok());
            }
            None => {
                for t in ws {
                    black_box(blake3::hash(black_box(&t.bytes)));
                }
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let signing = match mode.as_str() {
        "every" => Some(SigningPolicy::EveryWindow),
        "sealed" => Some(SigningPolicy::checkpoint_every(25)),
        "floor" => None,
        _ => return Err("usage: e2e_ir every|sealed|floor".into()),
    };
    let mut pipeline = match signing {
        Some(s) => Some(Pipeline::new(
            Arc::new(StreamSpec::duplex_voice_default()),
            PipelineConfig::new("did:keri:EJ9testStewardAID000000000000000", "stream-bench")
                .with_signing(s),
            duplex_voice_oracle(),
            Estimator::default(),
            Box::new(SoftwareSigner::rfc8032_test_key()),
        )?),
        None => None,
    };
    // 25 windows of warm-up (one checkpoint period), then the measured 200.
    let warm: Vec<Vec<Tick>> = (0..25).map(ticks).collect();
    let run: Vec<Vec<Tick>> = (25..25 + WINDOWS).map(ticks).collect();
    for ws in &warm {
        if let Some(p) = pipeline.as_mut() {
            for t in ws {
                p.push(t.clone())?;
            }
        }
    }
    measured(&mut pipeline, &run);
    Ok(())
}
