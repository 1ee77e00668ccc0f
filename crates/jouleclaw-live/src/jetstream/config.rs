//! [`JetStreamConfig`]: where and how the sink publishes, and the reader's bounds.

use std::path::PathBuf;
use std::time::Duration;

use super::{MAX_OPEN_BYTES, MAX_STREAM_BYTES, MAX_STREAM_MESSAGES};
use crate::sink::escape_id;

/// Where and how the sink publishes, and its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JetStreamConfig {
    /// The server URL (`nats://HOST:PORT`, several separated by commas).
    pub url: String,
    /// The JetStream stream's name (default `JOULECLAW`).
    pub stream: String,
    /// The subject prefix (default `jouleclaw`); the stream takes `PREFIX.>`.
    pub prefix: String,
    /// Replicas of the stream when this sink creates it (1 or 3 here).
    pub replicas: usize,
    /// The stream's duplicate window (default 10 minutes): publishes with an equal
    /// `Nats-Msg-Id` inside it are stored once.
    pub duplicate_window: Duration,
    /// Publishes awaiting their ack at once (default 256).
    pub max_in_flight: usize,
    /// Attempts per batch before it is spilled to the journal (default 3).
    pub max_attempts: u32,
    /// First retry delay; doubles per attempt up to `backoff_max` (defaults 100 ms, 2 s).
    pub backoff_initial: Duration,
    /// Largest retry delay.
    pub backoff_max: Duration,
    /// How long one publish waits for its ack (default 5 s).
    pub ack_timeout: Duration,
    /// The local journal's file.
    pub journal_path: PathBuf,
    /// The journal's bound in bytes (default 64 MiB). A batch that does not fit fails its
    /// stream.
    pub journal_max_bytes: u64,
    /// How long, after the last batch arrived, the sink keeps publishing before it leaves
    /// the rest in the journal and returns `drain_timeout` (default 120 s).
    pub drain_timeout: Duration,
    /// The reader's bound on one stream's stored messages (default
    /// [`MAX_STREAM_MESSAGES`]).
    pub read_max_stream_messages: u64,
    /// The reader's bound on one stream's stored bytes (default [`MAX_STREAM_BYTES`]), counted
    /// as held: each message's body plus 56 bytes for each receipt and inclusion receipt it
    /// holds (their own allocations), as is [`Self::read_max_open_bytes`].
    pub read_max_stream_bytes: u64,
    /// The reader's bound on the bytes of the streams it has begun and not finished during
    /// its pass over the whole stream (default [`MAX_OPEN_BYTES`]); past it those streams are
    /// read again subject by subject ([`read_each`](super::read_each)).
    pub read_max_open_bytes: u64,
    /// Accept an existing stream that may delete messages on its own (`max_age`, a message,
    /// byte or per-subject limit, work-queue or interest retention); default false: such a
    /// stream is refused (`stream_mismatch`,
    /// [`check_stream_config`](super::check_stream_config)).
    pub allow_retention: bool,
}

impl JetStreamConfig {
    /// Defaults for `url`, with the journal at `journal_path`.
    pub fn new(url: &str, journal_path: impl Into<PathBuf>) -> Self {
        Self {
            url: url.to_owned(),
            stream: "JOULECLAW".to_owned(),
            prefix: "jouleclaw".to_owned(),
            replicas: 1,
            duplicate_window: Duration::from_secs(600),
            max_in_flight: 256,
            max_attempts: 3,
            backoff_initial: Duration::from_millis(100),
            backoff_max: Duration::from_secs(2),
            ack_timeout: Duration::from_secs(5),
            journal_path: journal_path.into(),
            journal_max_bytes: 64 << 20,
            drain_timeout: Duration::from_secs(120),
            read_max_stream_messages: MAX_STREAM_MESSAGES,
            read_max_stream_bytes: MAX_STREAM_BYTES,
            read_max_open_bytes: MAX_OPEN_BYTES,
            allow_retention: false,
        }
    }

    /// The subject of one stream's batches.
    pub fn subject(&self, steward: &str, stream_id: &str) -> String {
        format!(
            "{}.{}.{}",
            self.prefix,
            escape_id(steward),
            escape_id(stream_id)
        )
    }
}
