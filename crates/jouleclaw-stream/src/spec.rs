//! Channel and stream specifications.

use crate::error::{Result, StreamError};
use crate::tick::TickKindTag;

/// Default window length: 200 ms, the micro-turn that streaming voice models and benchmarks
/// quantize on.
pub const DEFAULT_TICK_WINDOW_MS: u32 = 200;

/// Barge-in deadline: outbound must stop within 150 ms of a barge-in.
pub const BARGE_IN_DEADLINE_MS: u64 = 150;

/// Nanoseconds per millisecond.
pub const NS_PER_MS: u64 = 1_000_000;

/// Which way a channel's bytes flow, and so which side its markers speak for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChannelDirection {
    /// From the user into the cascade (mic audio, ASR text, user-side markers).
    Inbound,
    /// From the cascade to the user (TTS audio, LLM text).
    Outbound,
    /// Context the cascade legitimately draws on (retrieval, tool results); it backs outbound
    /// content in the conservation ledger.
    Substrate,
}

impl ChannelDirection {
    /// `"inbound"`, `"outbound"` or `"substrate"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inbound => "inbound",
            Self::Outbound => "outbound",
            Self::Substrate => "substrate",
        }
    }
}

/// One channel of a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelSpec {
    /// Unique id within the stream.
    pub id: u32,
    /// Flow direction.
    pub direction: ChannelDirection,
    /// The payload kind the channel carries. Marker ticks are accepted on every channel (their
    /// side is the channel's direction); a `Marker` channel accepts markers only.
    pub kind_tag: TickKindTag,
    /// Media type of the payloads, informational.
    pub mime: String,
}

impl ChannelSpec {
    /// A channel.
    pub fn new(id: u32, direction: ChannelDirection, kind_tag: TickKindTag, mime: &str) -> Self {
        Self {
            id,
            direction,
            kind_tag,
            mime: mime.to_owned(),
        }
    }
}

/// Channel ids of [`StreamSpec::duplex_voice_default`].
pub mod duplex {
    /// Control: inbound markers (barge-in, end of turn, session markers).
    pub const CONTROL: u32 = 0;
    /// Microphone audio, inbound, 16 kHz 16-bit mono PCM (6,400 B per 200 ms window).
    pub const MIC: u32 = 1;
    /// ASR text, inbound.
    pub const ASR: u32 = 2;
    /// TTS audio, outbound, 12 kHz 16-bit mono PCM (4,800 B per 200 ms window).
    pub const TTS: u32 = 3;
    /// LLM text, outbound.
    pub const LLM: u32 = 4;
    /// Substrate text: retrieved or tool context that backs outbound content.
    pub const SUBSTRATE: u32 = 5;

    /// Mic bytes per 200 ms window: 16,000 samples/s x 2 B x 0.2 s.
    pub const MIC_BYTES_PER_WINDOW: usize = 6_400;
    /// TTS bytes per 200 ms window: 12,000 samples/s x 2 B x 0.2 s.
    pub const TTS_BYTES_PER_WINDOW: usize = 4_800;
}

/// How a stream is cut into windows and which channels it has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSpec {
    /// Window length in milliseconds.
    pub tick_window_ms: u32,
    /// Largest payload one tick may carry.
    pub max_chunk_bytes: u32,
    /// Most ticks one window may hold.
    pub max_ticks_per_window: u32,
    /// The channels, ids unique.
    pub channels: Vec<ChannelSpec>,
}

impl StreamSpec {
    /// The duplex voice-agent layout (ids in [`duplex`]):
    ///
    /// | id | name      | direction | kind   | mime                                  |
    /// |----|-----------|-----------|--------|---------------------------------------|
    /// | 0  | control   | inbound   | marker | `application/x-jouleclaw-marker`      |
    /// | 1  | mic       | inbound   | audio  | `audio/L16;rate=16000;channels=1`     |
    /// | 2  | asr       | inbound   | text   | `text/plain;charset=utf-8`            |
    /// | 3  | tts       | outbound  | audio  | `audio/L16;rate=12000;channels=1`     |
    /// | 4  | llm       | outbound  | text   | `text/plain;charset=utf-8`            |
    /// | 5  | substrate | substrate | text   | `text/plain;charset=utf-8`            |
    ///
    /// 200 ms windows; `max_chunk_bytes` 32,768 (five windows of mic audio, room for text and
    /// tool-context bursts); `max_ticks_per_window` 256 (10 ms framing on every channel plus
    /// markers fits).
    pub fn duplex_voice_default() -> Self {
        use ChannelDirection::{Inbound, Outbound, Substrate};
        let text = "text/plain;charset=utf-8";
        Self {
            tick_window_ms: DEFAULT_TICK_WINDOW_MS,
            max_chunk_bytes: 32_768,
            max_ticks_per_window: 256,
            channels: vec![
                ChannelSpec::new(
                    duplex::CONTROL,
                    Inbound,
                    TickKindTag::Marker,
                    "application/x-jouleclaw-marker",
                ),
                ChannelSpec::new(
                    duplex::MIC,
                    Inbound,
                    TickKindTag::Audio,
                    "audio/L16;rate=16000;channels=1",
                ),
                ChannelSpec::new(duplex::ASR, Inbound, TickKindTag::Text, text),
                ChannelSpec::new(
                    duplex::TTS,
                    Outbound,
                    TickKindTag::Audio,
                    "audio/L16;rate=12000;channels=1",
                ),
                ChannelSpec::new(duplex::LLM, Outbound, TickKindTag::Text, text),
                ChannelSpec::new(duplex::SUBSTRATE, Substrate, TickKindTag::Text, text),
            ],
        }
    }

    /// Checks the spec: non-zero window length and limits, at least one channel, unique ids.
    pub fn validate(&self) -> Result<()> {
        if self.tick_window_ms == 0 {
            return Err(StreamError::ZeroWindowLength);
        }
        if self.max_chunk_bytes == 0 {
            return Err(StreamError::ZeroMaxChunkBytes);
        }
        if self.max_ticks_per_window == 0 {
            return Err(StreamError::ZeroMaxTicks);
        }
        if self.channels.is_empty() {
            return Err(StreamError::NoChannels);
        }
        for (i, c) in self.channels.iter().enumerate() {
            if self.channels[..i].iter().any(|p| p.id == c.id) {
                return Err(StreamError::DuplicateChannel { channel_id: c.id });
            }
        }
        Ok(())
    }

    /// The channel with id `id`.
    pub fn channel(&self, id: u32) -> Option<&ChannelSpec> {
        self.channels.iter().find(|c| c.id == id)
    }

    /// Window length in nanoseconds.
    pub fn window_ns(&self) -> u64 {
        u64::from(self.tick_window_ms) * NS_PER_MS
    }

    /// The half-open span `[start_ns, end_ns)` of window `window_id`.
    pub fn window_span(&self, window_id: u64) -> Result<(u64, u64)> {
        let len = self.window_ns();
        let start = window_id
            .checked_mul(len)
            .ok_or(StreamError::WindowSpanOverflow { window_id })?;
        let end = start
            .checked_add(len)
            .ok_or(StreamError::WindowSpanOverflow { window_id })?;
        Ok((start, end))
    }

    /// The window that contains `ts_ns`.
    pub fn window_of(&self, ts_ns: u64) -> u64 {
        // `window_ns` is non-zero for a validated spec; an invalid zero gives window 0.
        ts_ns.checked_div(self.window_ns()).unwrap_or(0)
    }
}
