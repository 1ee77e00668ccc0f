//! Instruction count of the stop-latency meter's work per window on a live stream's mint shard
//! (`spec/LIVE.md` section 2.1), independent of machine load:
//!
//! ```sh
//! cargo build --release -p jouleclaw-live --example meter_ir
//! valgrind --tool=callgrind --toggle-collect='meter_ir::measured' \
//!     target/release/examples/meter_ir MODE
//! ```
//!
//! The window is the `e2e` bench fixture's (22 ticks: ten 640 B mic frames, ten 480 B TTS
//! frames, one ASR and one LLM text tick), 200 windows after 25 of warm-up; divide the collected
//! instructions by 200. As the mint shard does, each tick's direction is looked up in the stream
//! spec and the tick observed.
//!
//! - `quiet`: no barge-in: every tick is a look-up and a match;
//! - `barge-in`: a barge-in marker in every window and no `Start` after it, so every TTS tick
//!   after it updates every measurement still open (the meter's worst case grows with them: at
//!   window `n`, `n` are open); ended at the last window.

#![allow(clippy::expect_used)]

use std::hint::black_box;

use bytes::Bytes;
use jouleclaw_stop_latency::StopLatencyMeter;
use jouleclaw_stream::{StreamSpec, Tick, TickKind, TickMarker, duplex};

const MS: u64 = 1_000_000;
const WARM: u64 = 25;
const WINDOWS: u64 = 200;

fn ticks(w: u64, barge_in: bool) -> Vec<Tick> {
    let mic = Bytes::from(vec![0x11u8; duplex::MIC_BYTES_PER_WINDOW / 10]);
    let tts = Bytes::from(vec![0x22u8; duplex::TTS_BYTES_PER_WINDOW / 10]);
    let t0 = w * 200 * MS;
    let mut out = Vec::with_capacity(23);
    for k in 0..10 {
        let t = t0 + k * 20 * MS;
        out.push(Tick::new(w, duplex::MIC, TickKind::Audio, mic.clone(), t));
        out.push(Tick::new(
            w,
            duplex::TTS,
            TickKind::Audio,
            tts.clone(),
            t + MS,
        ));
        if k == 4 {
            out.push(Tick::new(
                w,
                duplex::ASR,
                TickKind::Text,
                Bytes::from_static(b"what is the weather like in Lisbon tomorrow"),
                t + 2 * MS,
            ));
            out.push(Tick::new(
                w,
                duplex::LLM,
                TickKind::Text,
                Bytes::from_static(b"Tomorrow in Lisbon: sunny, 24 degrees."),
                t + 3 * MS,
            ));
            if barge_in {
                out.push(Tick::marker(
                    w,
                    duplex::CONTROL,
                    TickMarker::BargeIn,
                    t + 4 * MS,
                ));
            }
        }
    }
    out
}

#[inline(never)]
fn measured(meter: &mut StopLatencyMeter, spec: &StreamSpec, window: &[Tick]) {
    for tick in window {
        let direction = spec.channel(tick.channel_id).expect("a channel").direction;
        meter.observe(tick, direction).expect("observed");
    }
}

fn main() {
    let barge_in = match std::env::args().nth(1).as_deref() {
        Some("quiet") => false,
        Some("barge-in") => true,
        _ => {
            eprintln!("usage: meter_ir quiet|barge-in");
            std::process::exit(2);
        }
    };
    let spec = StreamSpec::duplex_voice_default();
    let mut meter = StopLatencyMeter::new();
    for w in 0..WARM + WINDOWS {
        let window = ticks(w, barge_in);
        if w < WARM {
            for tick in &window {
                let d = spec.channel(tick.channel_id).expect("a channel").direction;
                meter.observe(tick, d).expect("observed");
            }
        } else {
            measured(&mut meter, &spec, &window);
        }
    }
    meter.finish();
    black_box(meter.barge_ins().len());
}
