//! Ticks: the unit of a stream.

use bytes::Bytes;

/// A control event carried by a [`TickKind::Marker`] tick.
///
/// A marker's *side* is the direction of the channel it arrives on (see
/// [`crate::ChannelDirection`]): a `Start` on an outbound channel reopens outbound, a `BargeIn` on
/// an inbound channel is the user cutting in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TickMarker {
    /// A side starts emitting (a turn, an utterance, a TTS stream).
    Start,
    /// A side stops emitting.
    End,
    /// The user speaks over the agent; outbound must stop within
    /// [`crate::BARGE_IN_DEADLINE_MS`].
    BargeIn,
    /// Silence detected.
    Silence,
    /// The speaker's turn is over.
    EndOfTurn,
    /// An application-defined marker.
    Custom(String),
}

impl TickMarker {
    /// The marker's wire name, or `None` for [`TickMarker::Custom`] (written as
    /// `{"custom":"..."}`).
    pub fn wire_name(&self) -> Option<&'static str> {
        match self {
            Self::Start => Some("start"),
            Self::End => Some("end"),
            Self::BargeIn => Some("barge_in"),
            Self::Silence => Some("silence"),
            Self::EndOfTurn => Some("end_of_turn"),
            Self::Custom(_) => None,
        }
    }
}

/// What a tick carries.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TickKind {
    /// Audio samples.
    Audio,
    /// Text (UTF-8 is not required by this crate; oracles may require it).
    Text,
    /// Video frames.
    Video,
    /// A control event.
    Marker(TickMarker),
}

impl TickKind {
    /// The kind without its marker payload.
    pub fn tag(&self) -> TickKindTag {
        match self {
            Self::Audio => TickKindTag::Audio,
            Self::Text => TickKindTag::Text,
            Self::Video => TickKindTag::Video,
            Self::Marker(_) => TickKindTag::Marker,
        }
    }

    /// The marker, if this is a marker tick.
    pub fn marker(&self) -> Option<&TickMarker> {
        match self {
            Self::Marker(m) => Some(m),
            _ => None,
        }
    }
}

/// The kind of tick a channel carries; [`TickKind`] without the marker payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TickKindTag {
    /// Audio.
    Audio,
    /// Text.
    Text,
    /// Video.
    Video,
    /// Markers only.
    Marker,
}

impl TickKindTag {
    /// `"audio"`, `"text"`, `"video"` or `"marker"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Audio => "audio",
            Self::Text => "text",
            Self::Video => "video",
            Self::Marker => "marker",
        }
    }
}

/// One chunk of one channel at one instant.
///
/// `bytes` is a reference-counted [`Bytes`]: pushing, storing and hashing a tick never copies
/// its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tick {
    /// The window the tick belongs to.
    pub window_id: u64,
    /// The channel it travels on.
    pub channel_id: u32,
    /// What it carries.
    pub kind: TickKind,
    /// The payload.
    pub bytes: Bytes,
    /// Nanoseconds since the stream started. Time enters as data; nothing here reads a clock.
    pub ts_ns: u64,
}

impl Tick {
    /// A payload tick.
    pub fn new(window_id: u64, channel_id: u32, kind: TickKind, bytes: Bytes, ts_ns: u64) -> Self {
        Self {
            window_id,
            channel_id,
            kind,
            bytes,
            ts_ns,
        }
    }

    /// A marker tick with an empty payload.
    pub fn marker(window_id: u64, channel_id: u32, marker: TickMarker, ts_ns: u64) -> Self {
        Self::new(
            window_id,
            channel_id,
            TickKind::Marker(marker),
            Bytes::new(),
            ts_ns,
        )
    }

    /// `true` for a `BargeIn` marker.
    pub fn is_barge_in(&self) -> bool {
        matches!(self.kind, TickKind::Marker(TickMarker::BargeIn))
    }
}
