//! Channel and stream specifications.

use core::fmt;
use std::sync::Arc;

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

    /// Largest accepted `tick_window_ms`: one minute.
    pub const MAX_TICK_WINDOW_MS: u32 = 60_000;
    /// Largest accepted `max_chunk_bytes`: 1 MiB (the default is 32 KiB).
    pub const MAX_CHUNK_BYTES: u32 = 1 << 20;
    /// Largest accepted `max_ticks_per_window` (the default is 256). With
    /// [`StreamSpec::MAX_CHUNK_BYTES`] a window holds at most 4 GiB of payload; the spec's own
    /// `max_chunk_bytes * max_ticks_per_window` is the real bound (8 MiB by default).
    pub const MAX_TICKS_PER_WINDOW: u32 = 4_096;
    /// Most channels a spec may declare; every channel id is below it, so channels are found
    /// by id in a dense table.
    pub const MAX_CHANNELS: u32 = 256;
    /// Longest accepted `mime`, in bytes.
    pub const MAX_MIME_BYTES: usize = 255;

    /// Checks the spec, in this order: non-zero window length and limits, each at most its cap
    /// (`MAX_*`), at least one and at most [`StreamSpec::MAX_CHANNELS`] channels, each id below
    /// [`StreamSpec::MAX_CHANNELS`] and unique, each `mime` at most
    /// [`StreamSpec::MAX_MIME_BYTES`]. Linear in the number of channels.
    pub fn validate(&self) -> Result<()> {
        self.index().map(drop)
    }

    /// Validates and builds the id -> position table.
    fn index(&self) -> Result<ChannelTable> {
        fn cap(field: &'static str, value: u64, max: u64) -> Result<()> {
            if value > max {
                return Err(StreamError::SpecLimit { field, value, max });
            }
            Ok(())
        }
        if self.tick_window_ms == 0 {
            return Err(StreamError::ZeroWindowLength);
        }
        cap(
            "tick_window_ms",
            self.tick_window_ms.into(),
            Self::MAX_TICK_WINDOW_MS.into(),
        )?;
        if self.max_chunk_bytes == 0 {
            return Err(StreamError::ZeroMaxChunkBytes);
        }
        cap(
            "max_chunk_bytes",
            self.max_chunk_bytes.into(),
            Self::MAX_CHUNK_BYTES.into(),
        )?;
        if self.max_ticks_per_window == 0 {
            return Err(StreamError::ZeroMaxTicks);
        }
        cap(
            "max_ticks_per_window",
            self.max_ticks_per_window.into(),
            Self::MAX_TICKS_PER_WINDOW.into(),
        )?;
        if self.channels.is_empty() {
            return Err(StreamError::NoChannels);
        }
        cap(
            "channels",
            self.channels.len() as u64,
            Self::MAX_CHANNELS.into(),
        )?;
        let mut table = ChannelTable([NO_CHANNEL; Self::MAX_CHANNELS as usize]);
        for (position, c) in self.channels.iter().enumerate() {
            cap("channel_id", c.id.into(), u64::from(Self::MAX_CHANNELS - 1))?;
            cap("mime", c.mime.len() as u64, Self::MAX_MIME_BYTES as u64)?;
            let slot = table
                .0
                .get_mut(c.id as usize)
                .ok_or(StreamError::UnknownChannel { channel_id: c.id })?;
            if *slot != NO_CHANNEL {
                return Err(StreamError::DuplicateChannel { channel_id: c.id });
            }
            // position < MAX_CHANNELS <= u16::MAX.
            *slot = position as u16;
        }
        Ok(table)
    }

    /// The channel with id `id`: a linear search (at most [`StreamSpec::MAX_CHANNELS`] in a
    /// valid spec). [`ValidatedSpec::channel`] finds it in constant time.
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

/// Marks a free slot of a [`ChannelTable`].
const NO_CHANNEL: u16 = u16::MAX;

/// Channel id -> position in `channels`, for every id below [`StreamSpec::MAX_CHANNELS`].
#[derive(Clone, PartialEq, Eq)]
struct ChannelTable([u16; StreamSpec::MAX_CHANNELS as usize]);

/// A [`StreamSpec`] that passed [`StreamSpec::validate`], with its channels indexed by id:
/// validated once, then shared by every window ([`crate::StreamWindow::open_validated`]), with
/// constant-time channel lookup per tick. Cloning copies two reference counts.
#[derive(Clone)]
pub struct ValidatedSpec {
    spec: Arc<StreamSpec>,
    table: Arc<ChannelTable>,
}

impl fmt::Debug for ValidatedSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ValidatedSpec").field(&self.spec).finish()
    }
}

impl PartialEq for ValidatedSpec {
    fn eq(&self, other: &Self) -> bool {
        self.spec == other.spec
    }
}

impl Eq for ValidatedSpec {}

impl ValidatedSpec {
    /// Validates `spec` ([`StreamSpec::validate`]) and indexes its channels.
    pub fn new(spec: Arc<StreamSpec>) -> Result<Self> {
        let table = Arc::new(spec.index()?);
        Ok(Self { spec, table })
    }

    /// The spec.
    pub fn spec(&self) -> &Arc<StreamSpec> {
        &self.spec
    }

    /// The channel with id `id`, in constant time.
    pub fn channel(&self, id: u32) -> Option<&ChannelSpec> {
        let position = *self.table.0.get(usize::try_from(id).ok()?)?;
        if position == NO_CHANNEL {
            return None;
        }
        self.spec.channels.get(usize::from(position))
    }
}

impl core::ops::Deref for ValidatedSpec {
    type Target = StreamSpec;

    fn deref(&self) -> &StreamSpec {
        &self.spec
    }
}
