//! Instruction count of the stop-latency and interaction meters' work per window on a live
//! stream's mint shard (`spec/LIVE.md` sections 2.1 and 2.2), independent of machine load:
//!
//! ```sh
//! cargo build --release -p jouleclaw-live --example meter_ir
//! valgrind --tool=callgrind --toggle-collect='meter_ir::measured' \
//!     target/release/examples/meter_ir MODE
//! valgrind --tool=callgrind --toggle-collect='meter_ir::measured_interaction' \
//!     target/release/examples/meter_ir MODE
//! valgrind --tool=callgrind --toggle-collect='meter_ir::finish_interaction' \
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
//!   window `n`, `n` are open); ended at the last window;
//! - `speech`: as `quiet`, with a `{"custom":"user_speech"}` marker in every other window (the
//!   interaction meter's user and agent segments alternate, so its `finish` derives events).
//!
//! `measured` is the stop-latency meter's loop, `measured_interaction` the interaction meter's
//! (each tick's direction looked up again, as the mint shard's loop does for both), and
//! `finish_interaction` the interaction meter's `finish` at the stream's end (once per stream:
//! divide by 200 for its share per window).

#![allow(clippy::expect_used)]

use std::hint::black_box;

use bytes::Bytes;
use jouleclaw_interaction::{InteractionConfig, InteractionMeter};
use jouleclaw_stop_latency::StopLatencyMeter;
use jouleclaw_stream::{StreamSpec, Tick, TickKind, TickMarker, duplex, interaction};

const MS: u64 = 1_000_000;
const WARM: u64 = 25;
const WINDOWS: u64 = 200;

fn ticks(w: u64, barge_in: bool, speech: bool) -> Vec<Tick> {
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
            if speech && w.is_multiple_of(2) {
                out.push(Tick::marker(
                    w,
                    duplex::CONTROL,
                    interaction::marker(interaction::USER_SPEECH),
                    t + 4 * MS,
                ));
            }
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

#[inline(never)]
fn measured_interaction(meter: &mut InteractionMeter, spec: &StreamSpec, window: &[Tick]) {
    for tick in window {
        let direction = spec.channel(tick.channel_id).expect("a channel").direction;
        meter.observe(tick, direction).expect("observed");
    }
}

#[inline(never)]
fn finish_interaction(meter: &mut InteractionMeter) -> usize {
    meter.finish().expect("finished").len()
}

fn main() {
    let (barge_in, speech) = match std::env::args().nth(1).as_deref() {
        Some("quiet") => (false, false),
        Some("barge-in") => (true, false),
        Some("speech") => (false, true),
        _ => {
            eprintln!("usage: meter_ir quiet|barge-in|speech");
            std::process::exit(2);
        }
    };
    let spec = StreamSpec::duplex_voice_default();
    let mut meter = StopLatencyMeter::new();
    let mut im = InteractionMeter::new(InteractionConfig::default()).expect("default windows");
    for w in 0..WARM + WINDOWS {
        let window = ticks(w, barge_in, speech);
        if w < WARM {
            for tick in &window {
                let d = spec.channel(tick.channel_id).expect("a channel").direction;
                meter.observe(tick, d).expect("observed");
                im.observe(tick, d).expect("observed");
            }
        } else {
            measured(&mut meter, &spec, &window);
            measured_interaction(&mut im, &spec, &window);
        }
    }
    meter.finish();
    black_box(meter.barge_ins().len());
    black_box(finish_interaction(&mut im));
}
