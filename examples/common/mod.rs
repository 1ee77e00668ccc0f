//! The window the instruction-count examples measure (`e2e_ir`, `mint_shard_ir`): the `e2e`
//! bench fixture's 22 ticks (ten 640 B mic frames, ten 480 B TTS frames, one ASR and one LLM
//! text tick).

use bytes::Bytes;
use jouleclaw_stack::stream::{Tick, TickKind, duplex};

const MS: u64 = 1_000_000;

/// Window `w`'s ticks, at 200 ms per window.
pub fn ticks(w: u64) -> Vec<Tick> {
    let mic = Bytes::from(vec![0x11u8; duplex::MIC_BYTES_PER_WINDOW / 10]);
    let tts = Bytes::from(vec![0x22u8; duplex::TTS_BYTES_PER_WINDOW / 10]);
    let t0 = w * 200 * MS;
    let mut out = Vec::with_capacity(22);
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
                Bytes::from_static(b"Tomorrow in Lisbon: sunny, 21 degrees."),
                t + 3 * MS,
            ));
        }
    }
    out
}
