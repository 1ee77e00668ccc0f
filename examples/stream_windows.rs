//! Prints a few duplex-voice windows with their per-tick conservation findings.

use std::sync::Arc;

use bytes::Bytes;
use jouleclaw_stack::stream::{
    LedgerPolicy, RollingConservationLedger, StreamError, StreamSpec, StreamWindow, Tick, TickKind,
    TickMarker, duplex,
};

fn main() -> Result<(), StreamError> {
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let mut ledger = RollingConservationLedger::new(LedgerPolicy::default())?;
    let ms = 1_000_000u64;
    for w in 0..4u64 {
        let t0 = w * 200 * ms;
        let mut ticks = vec![Tick::new(
            w,
            duplex::MIC,
            TickKind::Audio,
            Bytes::from(vec![0u8; duplex::MIC_BYTES_PER_WINDOW]),
            t0,
        )];
        if w == 1 {
            ticks.push(Tick::marker(
                w,
                duplex::CONTROL,
                TickMarker::BargeIn,
                t0 + 20 * ms,
            ));
        }
        if w == 2 {
            // Still speaking 180 ms after the barge-in: past the 150 ms deadline.
            ticks.push(Tick::new(
                w,
                duplex::TTS,
                TickKind::Audio,
                Bytes::from(vec![0u8; 4800]),
                t0,
            ));
        }
        if w == 3 {
            ticks.push(Tick::marker(w, duplex::TTS, TickMarker::Start, t0 + ms));
            ticks.push(Tick::new(
                w,
                duplex::LLM,
                TickKind::Text,
                Bytes::from(vec![b'x'; 24_000]),
                t0 + 2 * ms,
            ));
        }
        let mut window = StreamWindow::open(spec.clone(), w)?;
        for tick in ticks {
            let pushed = window.push(tick)?;
            let finding = ledger.observe(pushed.tick, pushed.direction)?;
            println!(
                "window {w} tick ch={} {:?} len={} -> {finding:?}",
                pushed.tick.channel_id,
                pushed.tick.kind,
                pushed.tick.bytes.len()
            );
        }
        println!(
            "window {w}: in={} out={} summary={:?} hash={}",
            window.inbound_bytes(),
            window.outbound_bytes(),
            ledger.window_summary(),
            &window.content_hash().to_hex()[..16]
        );
    }
    Ok(())
}
