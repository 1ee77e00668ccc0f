//! Helpers shared by the test files.

use jouleclaw_stream::{Tick, TickKind, duplex};

/// A 320-byte mic tick of window `w` at `ts` ns.
pub fn mic(w: u64, ts: u64) -> Tick {
    Tick::new(
        w,
        duplex::MIC,
        TickKind::Audio,
        bytes::Bytes::from(vec![0u8; 320]),
        ts,
    )
}
