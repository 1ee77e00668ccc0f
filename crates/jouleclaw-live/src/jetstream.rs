//! [`JetStreamSink`]: one message per checkpoint batch into a NATS JetStream stream, each
//! batch written to a local write-ahead journal ([`crate::journal`]) before it is published,
//! acks awaited before a batch counts as durable, retries with backoff, batches the cluster
//! does not take kept in the journal and replayed ([`replay`]). Also the message format and
//! the reader the auditor uses ([`read_each`]).
//!
//! Subjects: `PREFIX.STEWARD.STREAM`, each id escaped into one token by
//! [`escape_id`]. Message: a CBOR map (see [`encode_batch`]); header
//! `Nats-Msg-Id` = lower-case hex BLAKE3 of the body, so a retried publish inside the stream's
//! duplicate window is stored once; a duplicate acknowledgement counts only when the message
//! it names is read back with this body ([`duplicate_confirms`], [`message_id_in`]).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_nats::jetstream::{self, stream::StorageType};
use bytes::Bytes;
use ciborium::Value;
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use tokio::sync::mpsc;

use crate::audit::StreamRecords;
use crate::clock::BoxFuture;
use crate::error::{LiveError, Result};
use crate::journal::{Finished, Journal, JournalWriter, Record, Recovered};
use crate::sink::{ReceiptSink, SinkBatch, SinkContext, check_ids, escape_id, unescape_id};

/// The message format's version (`"v"`) the encoder writes: 2, the batch without inclusion
/// receipts ([`MESSAGE_KEYS`]). The decoder also reads version 1 ([`MESSAGE_VERSION_1`]).
pub const MESSAGE_VERSION: u64 = 2;

/// The first version of the message format: [`MESSAGE_KEYS_V1`], with one inclusion receipt
/// per receipt. Still read (journals and streams written before version 2), never written.
pub const MESSAGE_VERSION_1: u64 = 1;

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
    /// The reader's bound on one stream's stored bytes (default [`MAX_STREAM_BYTES`]).
    pub read_max_stream_bytes: u64,
    /// The reader's bound on the bytes of the streams it has begun and not finished during
    /// its pass over the whole stream (default [`MAX_OPEN_BYTES`]); past it those streams are
    /// read again subject by subject ([`read_each`]).
    pub read_max_open_bytes: u64,
    /// Accept an existing stream that may delete messages on its own (`max_age`, a message,
    /// byte or per-subject limit, work-queue or interest retention); default false: such a
    /// stream is refused (`stream_mismatch`, [`check_stream_config`]).
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

/// Encodes a batch as the message body, version 2: a CBOR map with text keys `v` (2),
/// `stream_id`, `steward` (text), `seq` (uint), `final` (bool), `receipts` (array of bstr:
/// COSE_Sign1), `checkpoint` (bstr: COSE_Sign1), in that order ([`MESSAGE_KEYS`]); a final batch
/// adds the stream's signed documents after them, each when it carries it, in
/// [`DOCUMENT_KEYS`] order: `stop_latency` (`stop-latency/1`) then `interaction_metrics`
/// (`interaction-metrics/1`), each a bstr holding the COSE_Sign1 (`spec/LIVE.md` section 6.2).
/// A non-final batch with a document is refused (`malformed`): no decoder would take it.
pub fn encode_batch(batch: &SinkBatch) -> Result<Vec<u8>> {
    let documents = [&batch.stop_latency, &batch.interaction_metrics];
    if documents.iter().any(|d| d.is_some()) && !batch.is_final {
        return Err(LiveError::Malformed {
            place: "batch".into(),
            message: "a stream's documents travel only in the final batch".into(),
        });
    }
    let bstrs = |it: &mut dyn Iterator<Item = &Vec<u8>>| {
        Value::Array(it.map(|b| Value::Bytes(b.clone())).collect())
    };
    let map = Value::Map(vec![
        (
            Value::Text("v".into()),
            Value::Integer(MESSAGE_VERSION.into()),
        ),
        (
            Value::Text("stream_id".into()),
            Value::Text(batch.stream_id.clone()),
        ),
        (
            Value::Text("steward".into()),
            Value::Text(batch.steward.clone()),
        ),
        (Value::Text("seq".into()), Value::Integer(batch.seq.into())),
        (Value::Text("final".into()), Value::Bool(batch.is_final)),
        (
            Value::Text("receipts".into()),
            bstrs(&mut batch.receipts.iter().map(|r| &r.cose_sign1)),
        ),
        (
            Value::Text("checkpoint".into()),
            Value::Bytes(batch.checkpoint.clone()),
        ),
    ]);
    let map = match map {
        Value::Map(mut entries) => {
            for (key, doc) in DOCUMENT_KEYS.iter().zip(documents) {
                if let Some(doc) = doc {
                    entries.push((Value::Text((*key).into()), Value::Bytes(doc.clone())));
                }
            }
            Value::Map(entries)
        }
        map => map,
    };
    let mut out = Vec::new();
    ciborium::into_writer(&map, &mut out).map_err(|e| LiveError::Malformed {
        place: "batch".into(),
        message: e.to_string(),
    })?;
    Ok(out)
}

/// A message body decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedBatch {
    /// `v`: [`MESSAGE_VERSION_1`] or [`MESSAGE_VERSION`].
    pub version: u64,
    /// `stream_id`.
    pub stream_id: String,
    /// `steward`.
    pub steward: String,
    /// `seq`.
    pub seq: u64,
    /// `final`.
    pub is_final: bool,
    /// `receipts`.
    pub receipts: Vec<Vec<u8>>,
    /// `checkpoint`.
    pub checkpoint: Vec<u8>,
    /// `inclusion`: in a version-1 message (one inclusion receipt per receipt, which the audit
    /// checks); `None` in a version-2 message, which carries none.
    pub inclusion: Option<Vec<Vec<u8>>>,
    /// `stop_latency`, when the (final) batch carries it.
    pub stop_latency: Option<Vec<u8>>,
    /// `interaction_metrics`, when the (final) batch carries it.
    pub interaction_metrics: Option<Vec<u8>>,
}

/// The keys of a version-2 message body ([`MESSAGE_VERSION`]), in order; a final batch may
/// add [`DOCUMENT_KEYS`] after them.
pub const MESSAGE_KEYS: [&str; 7] = [
    "v",
    "stream_id",
    "steward",
    "seq",
    "final",
    "receipts",
    "checkpoint",
];

/// The keys of a version-1 message body ([`MESSAGE_VERSION_1`]), in order: [`MESSAGE_KEYS`]
/// then `inclusion` (array of bstr); a final batch may add [`DOCUMENT_KEYS`] after them.
pub const MESSAGE_KEYS_V1: [&str; 8] = [
    "v",
    "stream_id",
    "steward",
    "seq",
    "final",
    "receipts",
    "checkpoint",
    INCLUSION_KEY,
];

/// The key of a version-1 message holding its inclusion receipts.
pub const INCLUSION_KEY: &str = "inclusion";

/// The optional key of a final batch holding its signed `stop-latency/1` document.
pub const STOP_LATENCY_KEY: &str = "stop_latency";

/// The optional key of a final batch holding its signed `interaction-metrics/1` document.
pub const INTERACTION_METRICS_KEY: &str = "interaction_metrics";

/// The optional keys of a final batch after [`MESSAGE_KEYS`], each present or not, in this
/// order: the stream's signed documents.
pub const DOCUMENT_KEYS: [&str; 2] = [STOP_LATENCY_KEY, INTERACTION_METRICS_KEY];

/// Decodes a message body of version 2 (written by [`encode_batch`]) or version 1 (with
/// `inclusion`, written before); refuses anything else: an unknown version
/// ([`LiveError::UnknownMessageVersion`]), other keys, another order, `inclusion` in a
/// version-2 message, a document that is not a byte string or is in a batch that is not final.
pub fn decode_batch(body: &[u8]) -> Result<DecodedBatch> {
    let bad = |m: &str| LiveError::Malformed {
        place: "message".into(),
        message: m.to_owned(),
    };
    let v: Value = ciborium::from_reader(body).map_err(|e| bad(&e.to_string()))?;
    let Value::Map(entries) = v else {
        return Err(bad("not a CBOR map"));
    };
    let keys: Vec<&str> = entries
        .iter()
        .map(|(k, _)| k.as_text().unwrap_or(""))
        .collect();
    // `v` first: it says which keys follow.
    let version = match entries.first() {
        Some((k, v)) if k.as_text() == Some("v") => v
            .as_integer()
            .and_then(|i| u64::try_from(i).ok())
            .ok_or_else(|| bad("v not an unsigned integer"))?,
        _ => return Err(bad("unexpected keys: v is not the first key")),
    };
    let expected: &[&str] = match version {
        MESSAGE_VERSION => &MESSAGE_KEYS,
        MESSAGE_VERSION_1 => &MESSAGE_KEYS_V1,
        version => return Err(LiveError::UnknownMessageVersion { version }),
    };
    if version == MESSAGE_VERSION && keys.contains(&INCLUSION_KEY) {
        return Err(bad(
            "inclusion in a version 2 message (version 2 carries no inclusion receipts)",
        ));
    }
    // The version's keys, then a subsequence of DOCUMENT_KEYS.
    let Some((head, extra)) = keys.split_at_checked(expected.len()) else {
        return Err(bad("unexpected keys"));
    };
    let mut optional = DOCUMENT_KEYS.iter();
    if head != expected || !extra.iter().all(|k| optional.any(|o| o == k)) {
        return Err(bad("unexpected keys"));
    }
    let int = |v: &Value| -> Result<u64> {
        v.as_integer()
            .and_then(|i| u64::try_from(i).ok())
            .ok_or_else(|| bad("not an unsigned integer"))
    };
    let text = |v: &Value| -> Result<String> {
        v.as_text()
            .map(str::to_owned)
            .ok_or_else(|| bad("not a text string"))
    };
    let bytes_list = |v: &Value| -> Result<Vec<Vec<u8>>> {
        v.as_array()
            .ok_or_else(|| bad("not an array"))?
            .iter()
            .map(|b| {
                b.as_bytes()
                    .cloned()
                    .ok_or_else(|| bad("not a byte string"))
            })
            .collect()
    };
    let is_final = entries[4]
        .1
        .as_bool()
        .ok_or_else(|| bad("final not a bool"))?;
    let mut documents: [Option<Vec<u8>>; 2] = [None, None];
    for (k, v) in entries.iter().skip(expected.len()) {
        let key = k.as_text().unwrap_or("");
        if !is_final {
            return Err(bad(&format!("{key} in a batch that is not final")));
        }
        let bytes = v
            .as_bytes()
            .cloned()
            .ok_or_else(|| bad(&format!("{key} not a byte string")))?;
        if let Some(slot) = DOCUMENT_KEYS
            .iter()
            .position(|o| *o == key)
            .and_then(|i| documents.get_mut(i))
        {
            *slot = Some(bytes);
        }
    }
    let [stop_latency, interaction_metrics] = documents;
    Ok(DecodedBatch {
        version,
        stream_id: text(&entries[1].1)?,
        steward: text(&entries[2].1)?,
        seq: int(&entries[3].1)?,
        is_final,
        receipts: bytes_list(&entries[5].1)?,
        checkpoint: entries[6]
            .1
            .as_bytes()
            .cloned()
            .ok_or_else(|| bad("checkpoint not a byte string"))?,
        inclusion: match entries.get(7) {
            Some((_, v)) if version == MESSAGE_VERSION_1 => Some(bytes_list(v)?),
            _ => None,
        },
        stop_latency,
        interaction_metrics,
    })
}

/// The content-derived message id: lower-case hex BLAKE3 of the body.
pub fn message_id(body: &[u8]) -> String {
    blake3::hash(body).to_hex().to_string()
}

/// Publishes batches to JetStream.
#[derive(Debug, Clone)]
pub struct JetStreamSink {
    config: JetStreamConfig,
    journal: Option<JournalWriter>,
}

impl JetStreamSink {
    /// A sink with `config`; its journal is opened when the sink starts (see [`Self::open`]).
    pub fn new(config: JetStreamConfig) -> Self {
        Self {
            config,
            journal: None,
        }
    }

    /// A sink with `config` whose journal is opened (and locked) now: refuses a journal that
    /// holds undelivered batches (`journal_undelivered`), is in use (`journal_locked`) or is
    /// corrupt (`journal_corrupt`) before anything runs.
    pub fn open(config: JetStreamConfig) -> Result<Self> {
        check_prefix(&config.prefix)?;
        servers(&config.url)?;
        let journal = JournalWriter::start(Journal::create(
            &config.journal_path,
            config.journal_max_bytes,
        )?)?;
        Ok(Self {
            config,
            journal: Some(journal),
        })
    }
}

/// The server list of a URL: `nats://HOST:PORT`, several separated by commas.
pub fn servers(url: &str) -> Result<Vec<async_nats::ServerAddr>> {
    url.split(',')
        .map(|u| {
            u.trim().parse().map_err(|e| LiveError::Config {
                message: format!("bad NATS URL {u:?}: {e}"),
            })
        })
        .collect()
}

fn nats_err(what: &str, e: impl core::fmt::Display) -> LiveError {
    LiveError::Sink {
        code: "nats",
        message: format!("{what}: {e}"),
    }
}

/// Attempts to create or find the stream before the sink gives up.
pub const CONNECT_ATTEMPTS: u32 = 30;

/// Attempts per stored message before reading back fails.
pub const READ_ATTEMPTS: u32 = 5;

/// Consumers made in a row for one read without a message read before it fails (backing
/// off 0.5 s more each time, at most 2 s: about 15 s in all).
pub const CONSUMER_ATTEMPTS: u32 = 10;

/// Refuses (`config`) a subject prefix longer than [`MAX_PREFIX_BYTES`](crate::MAX_PREFIX_BYTES)
/// or one that is not dot-separated non-empty tokens of ASCII letters, digits, `-` and `_`.
pub fn check_prefix(prefix: &str) -> Result<()> {
    let ok = prefix.len() <= crate::sink::MAX_PREFIX_BYTES
        && prefix.split('.').all(|t| {
            !t.is_empty()
                && t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    if ok {
        Ok(())
    } else {
        Err(LiveError::Config {
            message: format!(
                "subject prefix {prefix:?}: 1 to {} bytes of dot-separated tokens of letters, digits, - and _",
                crate::sink::MAX_PREFIX_BYTES
            ),
        })
    }
}

/// Refuses (`stream_mismatch`) a JetStream stream found under the configured name that does
/// not keep what the sink writes as the sink would have made it: file storage, at least the
/// replicas asked for, this prefix's subjects, limits retention; and, unless
/// `config.allow_retention`, nothing that deletes messages on its own (`max_age`, a message,
/// byte or per-subject limit). A batch acknowledged by a stream that then drops it would be
/// counted durable and be gone before any audit.
pub fn check_stream_config(
    found: &jetstream::stream::Config,
    config: &JetStreamConfig,
) -> Result<()> {
    use jetstream::stream::RetentionPolicy;
    let mut wrong = Vec::new();
    if found.storage != StorageType::File {
        wrong.push("memory storage".to_owned());
    }
    if found.num_replicas < config.replicas {
        wrong.push(format!(
            "{} replicas, {} asked for",
            found.num_replicas, config.replicas
        ));
    }
    if !found
        .subjects
        .iter()
        .any(|s| *s == format!("{}.>", config.prefix))
    {
        wrong.push(format!(
            "subjects {:?}, not {}.>",
            found.subjects, config.prefix
        ));
    }
    if found.retention != RetentionPolicy::Limits {
        wrong.push(format!("{:?} retention", found.retention));
    }
    if !config.allow_retention {
        if !found.max_age.is_zero() {
            wrong.push(format!("max_age {:?}", found.max_age));
        }
        for (what, v) in [
            ("max_msgs", found.max_messages),
            ("max_bytes", found.max_bytes),
            ("max_msgs_per_subject", found.max_messages_per_subject),
        ] {
            if v > 0 {
                wrong.push(format!("{what} {v}"));
            }
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(LiveError::Sink {
            code: "stream_mismatch",
            message: format!(
                "the existing JetStream stream {:?} would not keep the batches as asked: {}",
                config.stream,
                wrong.join(", ")
            ),
        })
    }
}

/// Connects and makes sure the stream exists (bounded retries: [`CONNECT_ATTEMPTS`]); a
/// stream found that does not match the configuration is refused ([`check_stream_config`]).
pub async fn connect(
    config: &JetStreamConfig,
) -> Result<(jetstream::Context, jetstream::stream::Stream)> {
    check_prefix(&config.prefix)?;
    let client = async_nats::ConnectOptions::new()
        .retry_on_initial_connect()
        .connection_timeout(Duration::from_secs(5))
        .request_timeout(Some(config.ack_timeout))
        .connect(servers(&config.url)?)
        .await
        .map_err(|e| nats_err("connect", e))?;
    let js = jetstream::new(client);
    // A cluster that just started may have no meta leader yet: bounded retries.
    let mut attempt = 0u32;
    loop {
        let created = js
            .get_or_create_stream(jetstream::stream::Config {
                name: config.stream.clone(),
                subjects: vec![format!("{}.>", config.prefix)],
                storage: StorageType::File,
                num_replicas: config.replicas,
                duplicate_window: config.duplicate_window,
                ..Default::default()
            })
            .await;
        match created {
            Ok(stream) => {
                check_stream_config(&stream.cached_info().config, config)?;
                return Ok((js, stream));
            }
            Err(e) if attempt >= CONNECT_ATTEMPTS => return Err(nats_err("stream", e)),
            Err(_) => {
                attempt += 1;
                tokio::time::sleep(backoff(config, attempt)).await;
            }
        }
    }
}

/// Connects as [`connect`] does, again and again (each attempt bounded; a pause of
/// `backoff_max` between them) until the cluster answers: the sink's link, which a run that
/// starts with the cluster down waits for with its batches in the journal. Ends when the
/// sink drops it. A stream that answers and does not match the configuration
/// (`stream_mismatch`) ends it with that error: the sink fails, its batches stay journaled.
async fn connect_until_up(
    config: JetStreamConfig,
) -> Result<(jetstream::Context, jetstream::stream::Stream)> {
    loop {
        match connect(&config).await {
            Ok(link) => return Ok(link),
            Err(e) if e.code() == "stream_mismatch" => return Err(e),
            Err(_) => {}
        }
        tokio::time::sleep(config.backoff_max).await;
    }
}

/// A batch journaled and on its way to the cluster.
struct Pending {
    batch: SinkBatch,
    subject: String,
    body: Bytes,
    /// The message id's generation ([`message_id_in`]).
    generation: u32,
    attempts: u32,
    rec: Record,
}

/// A journaled batch waiting for the cluster: its body is dropped from memory and read back
/// from the journal when it is replayed.
struct Parked {
    batch: SinkBatch,
    rec: Record,
    attempts: u32,
    generation: u32,
}

/// The `Nats-Msg-Id` of a body's publish in `generation`: [`message_id`] for generation 0,
/// `ID.N` for generation N. A batch moves to the next generation only when the server
/// acknowledged it as a duplicate that it cannot show stored (see [`duplicate_confirms`]):
/// the server then holds the id for a proposal that may never be stored, and a publish with
/// the same id would be answered "duplicate" for the whole duplicate window. A body stored
/// under two generations is two equal messages, which every reader keeps once.
pub fn message_id_in(body: &[u8], generation: u32) -> String {
    let id = message_id(body);
    if generation == 0 {
        id
    } else {
        format!("{id}.{generation}")
    }
}

/// Whether a publish acknowledged as a duplicate is stored: the acknowledgement names a
/// stream sequence (not 0, which a server answers while the first publish of that id is still
/// a proposal, or was one that was lost) and the message stored there, `stored` (subject,
/// body), is this subject and this body. A duplicate acknowledgement alone is no evidence:
/// a server that staged the id for a proposal lost in a leader change answers "duplicate"
/// while nothing is stored.
pub fn duplicate_confirms(
    ack_sequence: u64,
    stored: Option<(&str, &[u8])>,
    subject: &str,
    body: &[u8],
) -> bool {
    ack_sequence != 0 && stored.is_some_and(|(s, b)| s == subject && b == body)
}

/// How a publish ended that the server acknowledged and [`duplicate_confirms`] agrees is
/// stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stored {
    /// Stored now.
    New,
    /// Stored before (a confirmed duplicate).
    Before,
}

/// The code of a duplicate acknowledgement without the message stored.
const DUPLICATE_UNCONFIRMED: &str = "duplicate_unconfirmed";

/// One publish of `body` on `subject` with message id `id`, its acknowledgement awaited
/// (bounded by `timeout`: `nats`); a duplicate acknowledgement is checked against the message
/// stored at the sequence it names (`duplicate_unconfirmed` when that is not this body). What
/// the sink and [`replay`] do for every attempt.
pub async fn publish_once(
    js: jetstream::Context,
    stream: jetstream::stream::Stream,
    subject: String,
    body: Bytes,
    id: &str,
    timeout: Duration,
) -> Result<Stored> {
    let publish = jetstream::context::Publish::build()
        .payload(body.clone())
        .message_id(id);
    tokio::time::timeout(timeout, async {
        let ack = js
            .send_publish(subject.clone(), publish)
            .await
            .map_err(|e| nats_err("publish", e))?
            .await
            .map_err(|e| nats_err("ack", e))?;
        if !ack.duplicate {
            return Ok(Stored::New);
        }
        let stored = if ack.sequence == 0 {
            None
        } else {
            stream.get_raw_message(ack.sequence).await.ok()
        };
        let stored = stored.as_ref().map(|m| (m.subject.as_str(), &m.payload[..]));
        if duplicate_confirms(ack.sequence, stored, &subject, &body) {
            Ok(Stored::Before)
        } else {
            Err(LiveError::Sink {
                code: DUPLICATE_UNCONFIRMED,
                message: format!(
                    "acknowledged as a duplicate of sequence {} on {subject}, which does not hold this batch",
                    ack.sequence
                ),
            })
        }
    })
    .await
    .map_err(|_| nats_err("ack", "timed out"))?
}

/// The id for the next attempt after `r`: the next generation after an unconfirmed
/// duplicate, else the same.
fn next_generation(r: &Result<Stored>, generation: u32) -> u32 {
    match r {
        Err(e) if e.code() == DUPLICATE_UNCONFIRMED => generation.saturating_add(1),
        _ => generation,
    }
}

fn backoff(config: &JetStreamConfig, attempts: u32) -> Duration {
    let factor = 1u32 << attempts.min(16);
    config
        .backoff_initial
        .saturating_mul(factor)
        .min(config.backoff_max)
}

type Flight = BoxFuture<'static, (Pending, Result<Stored>)>;
type Journaling = BoxFuture<'static, (SinkBatch, String, Bytes, Result<Record>)>;

fn publish_later(
    js: &jetstream::Context,
    stream: &jetstream::stream::Stream,
    config: &JetStreamConfig,
    p: Pending,
    wait: Duration,
) -> Flight {
    let (js, stream) = (js.clone(), stream.clone());
    let timeout = config.ack_timeout;
    Box::pin(async move {
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let id = message_id_in(&p.body, p.generation);
        let r = publish_once(js, stream, p.subject.clone(), p.body.clone(), &id, timeout).await;
        (p, r)
    })
}

/// What the journal reported when it ended, into the sink's counters.
fn record_finish(stats: &crate::sink::SinkStats, fin: &Finished) {
    stats
        .journal_undelivered
        .store(fin.undelivered as u64, Ordering::SeqCst);
    stats
        .journal_unmarked
        .store(fin.unmarked as u64, Ordering::SeqCst);
    stats
        .journal_write_errors
        .store(fin.write_errors, Ordering::SeqCst);
}

fn receipts(batch: &SinkBatch) -> u64 {
    batch.receipts.len() as u64
}

impl ReceiptSink for JetStreamSink {
    fn describe(&self) -> String {
        self.config.url.clone()
    }

    fn run(
        self: Box<Self>,
        mut batches: mpsc::Receiver<SinkBatch>,
        ctx: SinkContext,
    ) -> BoxFuture<'static, Result<()>> {
        Box::pin(async move {
            let JetStreamSink { config, journal } = *self;
            let journal = match journal {
                Some(j) => j,
                None => JournalWriter::start(Journal::create(
                    &config.journal_path,
                    config.journal_max_bytes,
                )?)?,
            };
            // A bad URL or prefix fails now; a cluster that is down does not: batches wait in
            // the journal until it is up (or the drain ends the run, JOURNALED).
            check_prefix(&config.prefix)?;
            servers(&config.url)?;
            let mut link: Option<(jetstream::Context, jetstream::stream::Stream)> = None;
            let mut linking: Option<
                BoxFuture<'static, Result<(jetstream::Context, jetstream::stream::Stream)>>,
            > = Some(Box::pin(connect_until_up(config.clone())));
            let stats = ctx.stats.clone();
            let mut journaling: FuturesUnordered<Journaling> = FuturesUnordered::new();
            let mut in_flight: FuturesUnordered<Flight> = FuturesUnordered::new();
            let mut in_flight_receipts = 0u64;
            let mut parked: VecDeque<Parked> = VecDeque::new();
            let mut replaying: Option<BoxFuture<'static, Result<()>>> = None;
            let mut open = true;
            // The drain counts from the substrate's shutdown (every stream closed), also while
            // the sink is not reading its queue (all `max_in_flight` publishes waiting for
            // acks): waiting to see the queue's end would add those waits to the drain.
            let mut draining = ctx.draining.clone();
            let mut hears_drain = true;
            let mut drain_deadline: Option<tokio::time::Instant> = None;
            if *draining.borrow_and_update() {
                drain_deadline = Some(tokio::time::Instant::now() + config.drain_timeout);
            }
            let lost = |batch: &SinkBatch, e: &LiveError| {
                stats
                    .receipts_lost
                    .fetch_add(receipts(batch), Ordering::SeqCst);
                if batch.status.fail_first(&e.to_string()) {
                    stats.streams_failed.fetch_add(1, Ordering::SeqCst);
                }
            };
            let settled = |batch: &SinkBatch, rec: &Record| {
                stats.record_durable(batch, ctx.clock.now_ns());
                stats
                    .receipts_pending
                    .fetch_sub(receipts(batch), Ordering::SeqCst);
                stats
                    .journal_bytes
                    .fetch_sub(rec.file_bytes(), Ordering::SeqCst);
                journal.delivered(rec.offset);
            };
            loop {
                if replaying.is_none()
                    && let Some((js, stream)) = link.as_ref()
                    && let Some(front) = parked.front_mut()
                {
                    front.attempts = front.attempts.saturating_add(1);
                    let (js, stream, config, journal) =
                        (js.clone(), stream.clone(), config.clone(), journal.clone());
                    let rec = front.rec.clone();
                    let generation = front.generation;
                    replaying = Some(Box::pin(async move {
                        let body = Bytes::from(journal.read(rec.clone()).await?);
                        // Until it is stored: the drain's deadline ends the wait.
                        publish_until_stored(
                            &js,
                            &stream,
                            &config,
                            &rec.subject,
                            &body,
                            generation,
                            u32::MAX,
                        )
                        .await
                        .map(|_| ())
                        .ok_or(LiveError::Internal {
                            invariant: "a publish without an attempt bound ends only when stored",
                        })
                    }));
                }
                if !open
                    && journaling.is_empty()
                    && in_flight.is_empty()
                    && replaying.is_none()
                    && parked.is_empty()
                {
                    let fin = journal.finish().await?;
                    record_finish(&stats, &fin);
                    return Ok(());
                }
                let deadline = drain_deadline
                    .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400));
                tokio::select! {
                    biased;
                    Some((batch, subject, body, r)) = journaling.next(), if !journaling.is_empty() => {
                        match r {
                            Ok(rec) => {
                                stats.journaled.fetch_add(1, Ordering::SeqCst);
                                stats.receipts_pending.fetch_add(receipts(&batch), Ordering::SeqCst);
                                stats.journal_bytes.fetch_add(rec.file_bytes(), Ordering::SeqCst);
                                if let (true, Some((js, stream))) = (parked.is_empty(), link.as_ref()) {
                                    in_flight_receipts += receipts(&batch);
                                    let p = Pending { generation: 0, batch, subject, body, attempts: 0, rec };
                                    in_flight.push(publish_later(js, stream, &config, p, Duration::ZERO));
                                } else {
                                    // Keep arrival order behind what waits for the cluster.
                                    parked.push_back(Parked { batch, rec, attempts: 0, generation: 0 });
                                }
                            }
                            Err(e) => lost(&batch, &e),
                        }
                    }
                    Some((mut p, r)) = in_flight.next(), if !in_flight.is_empty() => {
                        match r {
                            Ok(_) => {
                                in_flight_receipts -= receipts(&p.batch);
                                settled(&p.batch, &p.rec);
                            }
                            Err(_) => {
                                stats.retries.fetch_add(1, Ordering::SeqCst);
                                p.attempts += 1;
                                p.generation = next_generation(&r, p.generation);
                                if let (true, Some((js, stream))) = (p.attempts < config.max_attempts, link.as_ref()) {
                                    let wait = backoff(&config, p.attempts);
                                    in_flight.push(publish_later(js, stream, &config, p, wait));
                                } else {
                                    in_flight_receipts -= receipts(&p.batch);
                                    stats.spilled.fetch_add(1, Ordering::SeqCst);
                                    parked.push_back(Parked { batch: p.batch, rec: p.rec, attempts: p.attempts, generation: p.generation });
                                }
                            }
                        }
                    }
                    l = async { match linking.as_mut() { Some(f) => f.await, None => std::future::pending().await } }, if linking.is_some() => {
                        linking = None;
                        link = Some(l?);
                    }
                    r = async { match replaying.as_mut() { Some(f) => f.await, None => std::future::pending().await } }, if replaying.is_some() => {
                        replaying = None;
                        r?;
                        if let Some(front) = parked.pop_front() {
                            settled(&front.batch, &front.rec);
                        }
                    }
                    d = draining.changed(), if hears_drain && drain_deadline.is_none() => {
                        match d {
                            Ok(()) if *draining.borrow_and_update() => {
                                drain_deadline = Some(tokio::time::Instant::now() + config.drain_timeout);
                            }
                            Ok(()) => {}
                            Err(_) => hears_drain = false,
                        }
                    }
                    b = batches.recv(), if open && in_flight.len() + journaling.len() < config.max_in_flight => {
                        let Some(batch) = b else {
                            open = false;
                            drain_deadline.get_or_insert_with(|| tokio::time::Instant::now() + config.drain_timeout);
                            continue;
                        };
                        stats.batches_in.fetch_add(1, Ordering::SeqCst);
                        stats.receipts_in.fetch_add(receipts(&batch), Ordering::SeqCst);
                        if batch.status.failure().is_some() {
                            stats.receipts_lost.fetch_add(receipts(&batch), Ordering::SeqCst);
                            continue;
                        }
                        let body = match check_ids(&batch.steward, &batch.stream_id).and_then(|()| encode_batch(&batch)) {
                            Ok(b) => Bytes::from(b),
                            Err(e) => { lost(&batch, &e); continue; }
                        };
                        let subject = config.subject(&batch.steward, &batch.stream_id);
                        let journal = journal.clone();
                        journaling.push(Box::pin(async move {
                            let r = journal.append(subject.clone(), body.clone()).await;
                            (batch, subject, body, r)
                        }));
                    }
                    () = tokio::time::sleep_until(deadline), if drain_deadline.is_some() => {
                        // Every batch left is in the journal (written before it was first
                        // published): nothing is lost, the streams do not fail; a replay
                        // delivers the rest.
                        while let Some((batch, _, _, r)) = journaling.next().await {
                            match r {
                                Ok(rec) => {
                                    stats.journaled.fetch_add(1, Ordering::SeqCst);
                                    stats.receipts_pending.fetch_add(receipts(&batch), Ordering::SeqCst);
                                    stats.journal_bytes.fetch_add(rec.file_bytes(), Ordering::SeqCst);
                                    stats.receipts_unsent.fetch_add(receipts(&batch), Ordering::SeqCst);
                                }
                                Err(e) => lost(&batch, &e),
                            }
                        }
                        // The batches still queued (the sink was not reading while its
                        // publishes waited) and those the mint shards still hand over: into
                        // the journal, unsent, without waiting on the cluster; the queue ends
                        // once the shards stopped.
                        while open && let Some(batch) = batches.recv().await {
                            stats.batches_in.fetch_add(1, Ordering::SeqCst);
                            stats.receipts_in.fetch_add(receipts(&batch), Ordering::SeqCst);
                            if batch.status.failure().is_some() {
                                stats.receipts_lost.fetch_add(receipts(&batch), Ordering::SeqCst);
                                continue;
                            }
                            let body = match check_ids(&batch.steward, &batch.stream_id).and_then(|()| encode_batch(&batch)) {
                                Ok(b) => Bytes::from(b),
                                Err(e) => { lost(&batch, &e); continue; }
                            };
                            let subject = config.subject(&batch.steward, &batch.stream_id);
                            match journal.append(subject, body).await {
                                Ok(rec) => {
                                    stats.journaled.fetch_add(1, Ordering::SeqCst);
                                    stats.receipts_pending.fetch_add(receipts(&batch), Ordering::SeqCst);
                                    stats.journal_bytes.fetch_add(rec.file_bytes(), Ordering::SeqCst);
                                    stats.receipts_unsent.fetch_add(receipts(&batch), Ordering::SeqCst);
                                }
                                Err(e) => lost(&batch, &e),
                            }
                        }
                        let unsent: u64 = parked.iter().filter(|p| p.attempts == 0).map(|p| receipts(&p.batch)).sum();
                        stats.receipts_unsent.fetch_add(unsent, Ordering::SeqCst);
                        let unknown = in_flight_receipts
                            + parked.iter().filter(|p| p.attempts > 0).map(|p| receipts(&p.batch)).sum::<u64>();
                        stats.receipts_unknown_fate.store(unknown, Ordering::SeqCst);
                        stats.drain_timed_out.store(true, Ordering::SeqCst);
                        let fin = journal.finish().await?;
                        record_finish(&stats, &fin);
                        let (left, bytes) = (fin.undelivered, fin.bytes);
                        return Err(LiveError::Sink {
                            code: "drain_timeout",
                            message: format!(
                                "{left} batches ({bytes} bytes) not acknowledged when the drain timed out after {:?}; they are in the journal {}: jouleclaw journal replay {} --sink URL",
                                config.drain_timeout,
                                config.journal_path.display(),
                                config.journal_path.display(),
                            ),
                        });
                    }
                }
            }
        })
    }
}

/// Attempts per batch in [`replay`] (a cluster that just restarted elects its leaders first).
pub const REPLAY_ATTEMPTS: u32 = 15;

/// Read-back rounds in [`replay`]: a batch acknowledged (or found) but not read back from its
/// subject is published again under the next id generation, at most this many times.
pub const REPLAY_CONFIRM_ROUNDS: u32 = 3;

/// What [`replay`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// What opening the journal found (records, delivered, torn tail).
    pub recovered: Recovered,
    /// Undelivered batches found.
    pub undelivered: u64,
    /// Of them, published now and acknowledged as new.
    pub published: u64,
    /// Of them, already stored (found on their subject, or acknowledged as a duplicate whose
    /// stored message was read back): marked delivered without storing them again.
    pub already_stored: u64,
    /// Of the published or already stored, not found when their subject was read back after
    /// the publishes, so published again under the next id generation (counted once, in
    /// `published` or `already_stored`, by their first outcome).
    pub republished: u64,
    /// Receipts in the batches delivered now (read back from their subject).
    pub receipts: u64,
    /// Batches still undelivered (a publish failed within its attempts, or a batch was not
    /// read back after [`REPLAY_CONFIRM_ROUNDS`] rounds).
    pub left: u64,
    /// Batches read back from their subject whose delivered mark could not be written (a
    /// journal write failed, also when retried): still listed undelivered in the file; a
    /// replay run again marks them without publishing.
    pub unmarked: u64,
    /// Journal writes that failed and were cut back.
    pub write_errors: u64,
    /// Undelivered records that cannot be delivered (offset, why): no batch the sink wrote
    /// (a checksum is no authentication) or journaled for another subject. Nothing is
    /// published for them; they stay undelivered (counted in `left`) unless abandoned.
    pub undeliverable: Vec<(u64, String)>,
    /// Of them, abandoned now (`replay_abandoning`): an abandoned mark written, no longer
    /// undelivered.
    pub abandoned: u64,
}

/// Why the record `rec` with `body` cannot be delivered under `config`, if it cannot: its
/// body is no batch, or the batch belongs on another subject.
fn undeliverable(config: &JetStreamConfig, rec: &Record, body: &[u8]) -> Option<String> {
    match decode_batch(body) {
        Err(e) => Some(format!("not a batch: {e}")),
        Ok(b) => {
            let expected = config.subject(&b.steward, &b.stream_id);
            (rec.subject != expected).then(|| {
                format!(
                    "journaled for subject {}, but its batch belongs on {}",
                    jouleclaw_store::escape_untrusted(&rec.subject),
                    jouleclaw_store::escape_untrusted(&expected)
                )
            })
        }
    }
}

/// A replayed batch waiting to be read back.
struct Replayed {
    rec: Record,
    body: Bytes,
    receipts: u64,
    generation: u32,
}

/// Publishes `body` on `subject` until an attempt is acknowledged as stored (new, or a
/// confirmed duplicate), at most `attempts` times with backoff; `None` when none was. Starts
/// at id `generation` and moves on after an unconfirmed duplicate; returns the generation
/// that was stored.
async fn publish_until_stored(
    js: &jetstream::Context,
    stream: &jetstream::stream::Stream,
    config: &JetStreamConfig,
    subject: &str,
    body: &Bytes,
    mut generation: u32,
    attempts: u32,
) -> Option<(Stored, u32)> {
    let mut attempt = 0u32;
    loop {
        let r = publish_once(
            js.clone(),
            stream.clone(),
            subject.to_owned(),
            body.clone(),
            &message_id_in(body, generation),
            config.ack_timeout,
        )
        .await;
        match r {
            Ok(stored) => return Some((stored, generation)),
            Err(_) if attempt + 1 >= attempts => return None,
            Err(_) => {
                attempt += 1;
                generation = next_generation(&r, generation);
                tokio::time::sleep(backoff(config, attempt)).await;
            }
        }
    }
}

/// The content ids of every message stored on `subject`.
async fn ids_on(
    stream: &jetstream::stream::Stream,
    subject: &str,
) -> Result<std::collections::HashSet<String>> {
    let mut ids = std::collections::HashSet::new();
    for_each_message(stream, subject, usize::MAX, |_, payload| {
        ids.insert(message_id(payload));
        Ok(())
    })
    .await?;
    Ok(ids)
}

/// Replays a journal into JetStream: every undelivered batch is published on its subject
/// with its content `Nats-Msg-Id`, unless a message with the same body is already stored on
/// that subject (checked by reading the subject, so a replay after the duplicate window does
/// not store a batch twice either). Each publish is retried up to [`REPLAY_ATTEMPTS`] times
/// (or `config.max_attempts` if more) with backoff; when one still fails the replay stops and
/// the rest stays undelivered (`left`). Then every subject published to is read back, and a
/// batch is marked delivered only when its body is found there; one that is not (a server
/// that acknowledged what it then did not keep) is published again under the next id
/// generation, at most [`REPLAY_CONFIRM_ROUNDS`] times.
pub async fn replay(path: &std::path::Path, config: &JetStreamConfig) -> Result<ReplayReport> {
    replay_abandoning(path, config, &[]).await
}

/// [`replay`], abandoning the undeliverable records at `abandon` (offsets the replay named in
/// [`ReplayReport::undeliverable`]): an abandoned mark is written for each, so that a journal
/// holding a record no command can deliver can be cleared. An offset that is not an
/// undelivered record that cannot be delivered is refused (`config`) before anything is
/// published or written.
pub async fn replay_abandoning(
    path: &std::path::Path,
    config: &JetStreamConfig,
    abandon: &[u64],
) -> Result<ReplayReport> {
    let journal = Journal::open(path, u64::MAX)?;
    for off in abandon {
        let rec = journal
            .undelivered()
            .find(|r| r.offset == *off)
            .ok_or_else(|| LiveError::Config {
                message: format!("--abandon {off}: no undelivered batch record at that offset"),
            })?;
        let body = journal.read_body(rec)?;
        if undeliverable(config, rec, &body).is_none() {
            return Err(LiveError::Config {
                message: format!(
                    "--abandon {off}: the batch there can be delivered; only an undeliverable record is abandoned"
                ),
            });
        }
    }
    let mut report = ReplayReport {
        recovered: journal.recovered().clone(),
        undelivered: journal.undelivered_count() as u64,
        ..ReplayReport::default()
    };
    let records: Vec<Record> = journal.undelivered().cloned().collect();
    if records.is_empty() {
        return Ok(report);
    }
    // Connected (and the stream checked) before the writer thread takes the journal: a
    // refusal leaves it as it was, unlocked when this returns.
    let (js, stream) = connect(config).await?;
    let writer = JournalWriter::start(journal)?;
    let attempts = config.max_attempts.max(REPLAY_ATTEMPTS);
    let total = records.len() as u64;
    let mut done = 0u64;
    let mut stored_on: std::collections::HashMap<String, std::collections::HashSet<String>> =
        std::collections::HashMap::new();
    let mut to_confirm: Vec<Replayed> = Vec::new();
    for rec in records {
        done += 1;
        let body = Bytes::from(writer.read(rec.clone()).await?);
        let id = message_id(&body);
        // The journal's checksum is no authentication: a record is published only when it
        // is a batch, on the subject its own batch names under this configuration. Else it
        // is named and left (or abandoned when asked), and the replay goes on.
        if let Some(why) = undeliverable(config, &rec, &body) {
            if abandon.contains(&rec.offset) {
                writer.abandon(rec.offset).await?;
                report.abandoned += 1;
            } else {
                report.left += 1;
            }
            report.undeliverable.push((rec.offset, why));
            continue;
        }
        let receipts = decode_batch(&body)?.receipts.len() as u64;
        if !stored_on.contains_key(&rec.subject) {
            let ids = ids_on(&stream, &rec.subject).await?;
            stored_on.insert(rec.subject.clone(), ids);
        }
        let seen = stored_on.get_mut(&rec.subject);
        let mut generation = 0;
        if seen.as_ref().is_some_and(|s| s.contains(&id)) {
            report.already_stored += 1;
        } else {
            match publish_until_stored(&js, &stream, config, &rec.subject, &body, 0, attempts).await
            {
                Some((Stored::Before, g)) => {
                    report.already_stored += 1;
                    generation = g;
                }
                Some((Stored::New, g)) => {
                    report.published += 1;
                    generation = g;
                }
                None => {
                    // The cluster does not take it: stop here, the rest stays undelivered.
                    report.left += total - done + 1;
                    break;
                }
            }
            if let Some(s) = seen {
                s.insert(id);
            }
        }
        to_confirm.push(Replayed {
            rec,
            body,
            receipts,
            generation,
        });
    }
    // Read back: delivered only what its subject holds.
    let mut round = 0u32;
    while !to_confirm.is_empty() {
        let mut on: std::collections::HashMap<String, std::collections::HashSet<String>> =
            std::collections::HashMap::new();
        let mut missing = Vec::new();
        for r in to_confirm {
            if !on.contains_key(&r.rec.subject) {
                let ids = ids_on(&stream, &r.rec.subject).await?;
                on.insert(r.rec.subject.clone(), ids);
            }
            if on
                .get(&r.rec.subject)
                .is_some_and(|ids| ids.contains(&message_id(&r.body)))
            {
                report.receipts += r.receipts;
                writer.delivered(r.rec.offset);
            } else {
                missing.push(r);
            }
        }
        if missing.is_empty() || round >= REPLAY_CONFIRM_ROUNDS {
            report.left += missing.len() as u64;
            break;
        }
        round += 1;
        let mut again = Vec::with_capacity(missing.len());
        for mut r in missing {
            report.republished += 1;
            let next = r.generation.saturating_add(1);
            match publish_until_stored(
                &js,
                &stream,
                config,
                &r.rec.subject,
                &r.body,
                next,
                attempts,
            )
            .await
            {
                Some((_, g)) => {
                    r.generation = g;
                    again.push(r);
                }
                None => report.left += 1,
            }
        }
        to_confirm = again;
    }
    let fin = writer.finish().await?;
    report.unmarked = fin.unmarked as u64;
    report.write_errors = fin.write_errors;
    Ok(report)
}

/// How long the reader waits for the next message of a subject before it gives up on it.
pub const READ_TIMEOUT: Duration = Duration::from_secs(20);

/// Reads every message stored on `subject` in stream order with an ordered pull consumer
/// (batches of 500 messages; nothing is acknowledged or kept by the server), calling `f` with
/// the stream sequence and the body. Stops after `limit` messages (the caller's bound). A
/// consumer that cannot be created or stops answering (a cluster electing a leader) is
/// created again from the next sequence, at most [`CONSUMER_ATTEMPTS`] times in a row.
pub async fn for_each_message(
    stream: &jetstream::stream::Stream,
    subject: &str,
    limit: usize,
    mut f: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<usize> {
    for_each_stored(stream, subject, limit, |seq, _, body| f(seq, body)).await
}

/// [`for_each_message`] on `filter` (a subject or a wildcard), `f` given each message's
/// subject too.
async fn for_each_stored(
    stream: &jetstream::stream::Stream,
    subject: &str,
    limit: usize,
    f: impl FnMut(u64, &str, &[u8]) -> Result<()>,
) -> Result<usize> {
    let mut cur = Cursor {
        subject,
        limit,
        next_seq: None,
        n: 0,
        f,
    };
    let mut failures = 0u32;
    loop {
        match read_from(stream, &mut cur).await {
            Ok(()) => return Ok(cur.n),
            Err((progressed, e)) => {
                if progressed {
                    failures = 0;
                }
                failures += 1;
                if failures >= CONSUMER_ATTEMPTS {
                    return Err(e);
                }
                // A cluster that just restarted answers `503 JetStream system temporarily
                // unavailable` for some seconds: back off up to 2 s, about 15 s in all.
                let wait = (Duration::from_millis(500) * failures).min(Duration::from_secs(2));
                tokio::time::sleep(wait).await;
            }
        }
        if cur.n >= cur.limit {
            return Ok(cur.n);
        }
    }
}

/// Where a subject's read stands: the next stream sequence to ask for, messages read.
struct Cursor<'a, F> {
    subject: &'a str,
    limit: usize,
    next_seq: Option<u64>,
    n: usize,
    f: F,
}

/// Messages one pull asks for, and its byte bound: what the reader's client holds in flight
/// at most, whatever the size of the stored messages.
pub const PULL_MESSAGES: usize = 500;
/// See [`PULL_MESSAGES`].
pub const PULL_BYTES: usize = 4 << 20;

async fn read_from<F: FnMut(u64, &str, &[u8]) -> Result<()>>(
    stream: &jetstream::stream::Stream,
    cur: &mut Cursor<'_, F>,
) -> core::result::Result<(), (bool, LiveError)> {
    use jetstream::consumer::{AckPolicy, DeliverPolicy, pull};
    let deliver_policy = match cur.next_seq {
        Some(start_sequence) => DeliverPolicy::ByStartSequence { start_sequence },
        None => DeliverPolicy::All,
    };
    // An ephemeral pull consumer, nothing acknowledged, in memory, one replica: what an
    // ordered consumer is, with the pull's size bounded (an ordered consumer's is not).
    let consumer = tokio::time::timeout(
        READ_TIMEOUT,
        stream.create_consumer(pull::Config {
            filter_subject: cur.subject.to_owned(),
            deliver_policy,
            ack_policy: AckPolicy::None,
            memory_storage: true,
            num_replicas: 1,
            inactive_threshold: Duration::from_secs(60),
            ..Default::default()
        }),
    )
    .await
    .map_err(|_| (false, nats_err("consumer", "timed out")))?
    .map_err(|e| (false, nats_err("consumer", e)))?;
    let name = consumer.cached_info().name.clone();
    let read = read_consumer(consumer, cur).await;
    // The server would drop the ephemeral consumer after its inactivity threshold; a reader
    // that walks many subjects deletes each one at once so that they do not pile up.
    let _ = stream.delete_consumer(&name).await;
    read
}

async fn read_consumer<F: FnMut(u64, &str, &[u8]) -> Result<()>>(
    consumer: jetstream::consumer::Consumer<jetstream::consumer::pull::Config>,
    cur: &mut Cursor<'_, F>,
) -> core::result::Result<(), (bool, LiveError)> {
    let subject = cur.subject;
    if consumer.cached_info().num_pending == 0 {
        return Ok(());
    }
    let mut messages = consumer
        .stream()
        .max_messages_per_batch(PULL_MESSAGES)
        .max_bytes_per_batch(PULL_BYTES)
        .expires(Duration::from_secs(10))
        .heartbeat(Duration::from_secs(5))
        .messages()
        .await
        .map_err(|e| (false, nats_err("consumer", e)))?;
    let mut progressed = false;
    while cur.n < cur.limit {
        let next = tokio::time::timeout(READ_TIMEOUT, messages.next())
            .await
            .map_err(|_| {
                (
                    progressed,
                    nats_err(&format!("reading {subject}"), "timed out"),
                )
            })?;
        let Some(msg) = next else { return Ok(()) };
        let msg = msg.map_err(|e| (progressed, nats_err(&format!("reading {subject}"), e)))?;
        let info = msg
            .info()
            .map_err(|e| (progressed, nats_err("message info", e)))?;
        let (seq, pending) = (info.stream_sequence, info.pending);
        if cur.next_seq.is_some_and(|next| seq < next) {
            // Delivered again (a pull retried): already taken.
            continue;
        }
        (cur.f)(seq, msg.subject.as_str(), &msg.payload).map_err(|e| (progressed, e))?;
        cur.next_seq = Some(seq + 1);
        cur.n += 1;
        progressed = true;
        if pending == 0 {
            return Ok(());
        }
    }
    Ok(())
}

/// The reader's bound on one stream's stored batches (messages on its subject): a stream
/// with more is reported `too_large` and not read.
pub const MAX_STREAM_MESSAGES: u64 = 65_536;
/// The reader's bound on one stream's stored bytes: past it the stream is reported
/// `too_large` and what was read of it is dropped.
pub const MAX_STREAM_BYTES: u64 = 256 << 20;
/// The reader's bound on the streams begun and not finished in its pass over the whole
/// stream: see [`JetStreamConfig::read_max_open_bytes`].
pub const MAX_OPEN_BYTES: u64 = 512 << 20;

/// One stream as read back from JetStream: its subject, its steward (from the subject) and
/// its records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NatsStream {
    /// The subject its batches are stored on.
    pub subject: String,
    /// The steward the subject names (unescaped; the raw token when it does not unescape).
    pub steward: String,
    /// Its receipts and checkpoints, ordered by `seq`.
    pub records: StreamRecords,
    /// The inclusion receipts stored beside the receipts, same order: `Some` when a batch
    /// read is of message version 1 (which carries them: every receipt must then have one),
    /// `None` when every batch is of version 2 (which carries none: each is derivable from
    /// the checkpoints and the receipts, and none is needed).
    pub inclusion: Option<Vec<Vec<u8>>>,
    /// The signed `stop-latency/1` document of the final batch, if it carries one.
    pub stop_latency: Option<Vec<u8>>,
    /// The signed `interaction-metrics/1` document of the final batch, if it carries one.
    pub interaction_metrics: Option<Vec<u8>>,
}

/// What reading back cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadStats {
    /// Subjects (streams) read.
    pub subjects: u64,
    /// Messages read, each time it was read: a message read again (see
    /// [`ReadStats::reread`]) counts again.
    pub messages: u64,
    /// Of [`ReadStats::messages`], reads of a message read before: a stream's messages read
    /// in the pass over the whole stream and again after it (a deferred or unfinished stream),
    /// and a subject's read repeated because it came back short. `messages - reread` is the
    /// number of distinct messages read.
    pub reread: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Wall time reading (connecting included).
    pub elapsed: Duration,
    /// Streams read subject by subject after the pass over the whole stream: begun when
    /// the open streams passed [`JetStreamConfig::read_max_open_bytes`], or not finished by
    /// the pass (fewer messages read than listed).
    pub deferred: u64,
}

async fn open_stream_for_read(config: &JetStreamConfig) -> Result<jetstream::stream::Stream> {
    // A cluster that just restarted may refuse or answer late: bounded waits and retries.
    let client = tokio::time::timeout(
        Duration::from_secs(30),
        async_nats::ConnectOptions::new()
            .retry_on_initial_connect()
            .connection_timeout(Duration::from_secs(5))
            .connect(servers(&config.url)?),
    )
    .await
    .map_err(|_| nats_err("connect", "no server answered within 30 s"))?
    .map_err(|e| nats_err("connect", e))?;
    let js = jetstream::new(client);
    // Bounded in time as a whole (each request waits out its own timeout).
    tokio::time::timeout(READ_OPEN_TIMEOUT, async {
        let mut attempt = 0u32;
        loop {
            match js.get_stream(&config.stream).await {
                Ok(s) => return Ok(s),
                Err(e) if attempt >= CONNECT_ATTEMPTS => return Err(nats_err("stream", e)),
                Err(_) => {
                    attempt += 1;
                    tokio::time::sleep(backoff(config, attempt)).await;
                }
            }
        }
    })
    .await
    .map_err(|_| {
        nats_err(
            "stream",
            format!("the stream did not answer within {READ_OPEN_TIMEOUT:?}"),
        )
    })?
}

/// How long the reader waits in all for a server and the stream before it gives up.
pub const READ_OPEN_TIMEOUT: Duration = Duration::from_secs(60);

/// The steward and stream id a subject `PREFIX.STEWARD.STREAM` names, or the stream to report
/// as `malformed_subject`.
fn parse_subject(
    prefix: &str,
    subject: &str,
) -> core::result::Result<(String, String), Box<NatsStream>> {
    let mut out = NatsStream {
        subject: subject.to_owned(),
        ..NatsStream::default()
    };
    let tokens: Vec<&str> = subject
        .strip_prefix(&format!("{prefix}."))
        .map(|rest| rest.split('.').collect())
        .unwrap_or_default();
    match tokens.as_slice() {
        [st, id] => match (unescape_id(st), unescape_id(id)) {
            (Some(st), Some(id)) => Ok((st, id)),
            _ => {
                out.steward = (*st).to_owned();
                out.records.stream_id = (*id).to_owned();
                out.records
                    .read_problems
                    .push(format!("malformed_subject: {subject:?} does not unescape"));
                Err(Box::new(out))
            }
        },
        _ => {
            out.records.stream_id = subject.to_owned();
            out.records.read_problems.push(format!(
                "malformed_subject: {subject:?} is not {prefix}.STEWARD.STREAM"
            ));
            Err(Box::new(out))
        }
    }
}

/// One stream being read: what its subject names, what the listing counted, what was read.
struct Reading {
    subject: String,
    steward: String,
    sid: String,
    listed: u64,
    read: u64,
    bytes: u64,
    too_large: bool,
    batches: Vec<(u64, DecodedBatch, [u8; 32])>,
    problems: Vec<String>,
}

impl Reading {
    fn new(subject: &str, steward: String, sid: String, listed: u64) -> Self {
        Self {
            subject: subject.to_owned(),
            steward,
            sid,
            listed,
            read: 0,
            bytes: 0,
            too_large: false,
            batches: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// Takes one stored message; returns the bytes it added to what is held.
    fn take(&mut self, seq: u64, payload: &[u8], max_bytes: u64) -> u64 {
        self.read += 1;
        if self.too_large {
            return 0;
        }
        self.bytes += payload.len() as u64;
        if self.bytes > max_bytes {
            self.too_large = true;
            self.batches = Vec::new();
            return 0;
        }
        match decode_batch(payload) {
            Ok(d) if d.stream_id != self.sid || d.steward != self.steward => {
                self.problems.push(format!(
                    "misplaced_batch: stream sequence {seq} holds a batch of {:?} of steward {:?}",
                    d.stream_id, d.steward
                ));
            }
            Ok(d) => self
                .batches
                .push((d.seq, d, *blake3::hash(payload).as_bytes())),
            Err(e) => {
                self.problems
                    .push(format!("malformed_message: stream sequence {seq}: {e}"));
            }
        }
        payload.len() as u64
    }

    /// Bytes held (zero once too large).
    fn held(&self) -> u64 {
        if self.too_large { 0 } else { self.bytes }
    }

    /// The stream, its batches ordered by `seq` (equal bodies kept once).
    fn finish(mut self, max_bytes: u64) -> NatsStream {
        let mut out = NatsStream {
            subject: self.subject,
            steward: self.steward,
            ..NatsStream::default()
        };
        out.records.stream_id = self.sid;
        if self.too_large {
            self.problems.push(format!(
                "too_large: more than the reader's {max_bytes} bytes stored"
            ));
        }
        self.batches.sort_by_key(|(s, ..)| *s);
        let mut last: Option<(u64, [u8; 32])> = None;
        for (seq, d, hash) in self.batches {
            if let Some((ls, lh)) = &last
                && *ls == seq
            {
                if *lh != hash {
                    self.problems.push(format!(
                        "conflicting_batch: two different batches with seq {seq}"
                    ));
                }
                continue;
            }
            out.records.receipts.extend(d.receipts);
            if let Some(inclusion) = d.inclusion {
                out.inclusion.get_or_insert_default().extend(inclusion);
            }
            out.records.seals.push(d.checkpoint);
            out.records.sealed |= d.is_final;
            if d.stop_latency.is_some() {
                out.stop_latency = d.stop_latency;
            }
            if d.interaction_metrics.is_some() {
                out.interaction_metrics = d.interaction_metrics;
            }
            last = Some((seq, hash));
        }
        out.records.read_problems = self.problems;
        out
    }
}

/// Reads one subject's stream with its own ordered consumer. An ordered consumer may be
/// served by a replica still catching up (a node just restarted): a read that returns fewer
/// messages than the listing counted is repeated (bounded), and named when it stays short.
///
/// `first_read`: how many of the subject's messages were read before (by the pass over the
/// whole stream): reading them again counts in [`ReadStats::reread`].
async fn read_subject(
    stream: &jetstream::stream::Stream,
    config: &JetStreamConfig,
    first: Reading,
    first_read: u64,
    stats: &mut ReadStats,
) -> NatsStream {
    let (subject, count) = (first.subject.clone(), first.listed);
    let mut r = first;
    let mut attempt = 0u32;
    // Messages of this subject read before this attempt (by the pass, or a short attempt).
    let mut before = first_read;
    loop {
        r = Reading::new(&subject, r.steward, r.sid, count);
        let mut this = 0u64;
        let read = for_each_message(
            stream,
            &subject,
            usize::try_from(count).unwrap_or(usize::MAX),
            |seq, payload| {
                stats.messages += 1;
                this += 1;
                if this <= before {
                    stats.reread += 1;
                }
                stats.bytes += payload.len() as u64;
                r.take(seq, payload, config.read_max_stream_bytes);
                Ok(())
            },
        )
        .await;
        match read {
            Ok(n) if n as u64 >= count || r.too_large => break,
            Ok(n) if attempt + 1 >= READ_ATTEMPTS => {
                r.problems.push(format!(
                    "unreadable: {n} of the {count} messages stored on {subject:?} could be read"
                ));
                break;
            }
            Err(e) if attempt + 1 >= READ_ATTEMPTS => {
                r.problems.push(format!("unreadable: {e}"));
                break;
            }
            _ => {
                attempt += 1;
                before = before.max(this);
                tokio::time::sleep(Duration::from_millis(500) * attempt).await;
            }
        }
    }
    r.finish(config.read_max_stream_bytes)
}

/// Reads the stored batches back stream by stream: lists the subjects under `PREFIX.>` with
/// their message counts (only `PREFIX.*.ID` with `only`: the last token compared with the
/// escaped id), then reads them and hands each stream to `f` as soon as all the messages the
/// listing counted for it are read, its batches grouped by `seq`.
///
/// With `only`, the one subject is read with its own ordered consumer. Without, the reader
/// makes **one pass over the whole stream** with one ordered consumer (filter `PREFIX.>`),
/// at the stream's read rate rather than one consumer per call; a stream is finished when
/// its listed count is read (messages stored after the listing are not audited). Memory: the
/// subject list (one name and two counters per stream) and the batches of the streams begun
/// and not finished at one point of the pass: in a store written by `live` the calls that
/// were open at once. Past `config.read_max_open_bytes` (default [`MAX_OPEN_BYTES`]) every
/// begun stream is dropped from memory and read again after the pass subject by subject,
/// one stream at a time, as is every stream the pass did not finish (a replica catching up,
/// a message gone); [`ReadStats::deferred`] counts them. Per stream: at most
/// `config.read_max_stream_bytes` (default [`MAX_STREAM_BYTES`]) and
/// `config.read_max_stream_messages` messages.
///
/// A subject that is not `PREFIX.STEWARD.STREAM` with escaped ids, a batch whose
/// `stream_id` or `steward` is not the subject's, a `seq` stored twice with different bodies
/// and a malformed body are problems of that stream (`malformed_subject`, `misplaced_batch`,
/// `conflicting_batch`, `malformed_message`); a `seq` stored twice with equal bodies is kept
/// once. Stewards are kept apart: two stewards' streams with one id are two streams. Streams
/// are handed in the order they finish, not sorted.
pub async fn read_each(
    config: &JetStreamConfig,
    only: Option<&str>,
    mut f: impl FnMut(NatsStream),
) -> Result<ReadStats> {
    check_prefix(&config.prefix)?;
    let started = std::time::Instant::now();
    let stream = open_stream_for_read(config).await?;
    let filter = match only {
        Some(id) => format!("{}.*.{}", config.prefix, escape_id(id)),
        None => format!("{}.>", config.prefix),
    };
    let mut subjects: Vec<(String, u64)> = Vec::new();
    let mut listing = stream
        .info_with_subjects(&filter)
        .await
        .map_err(|e| nats_err("stream subjects", e))?;
    while let Some(item) = listing.next().await {
        let (s, n) = item.map_err(|e| nats_err("stream subjects", e))?;
        subjects.push((s, n as u64));
    }
    subjects.sort();
    let listed = subjects.iter().fold(0u64, |n, (_, c)| n.saturating_add(*c));
    let mut stats = ReadStats::default();
    let mut open: std::collections::HashMap<String, Reading> = std::collections::HashMap::new();
    for (subject, count) in subjects {
        let (steward, sid) = match parse_subject(&config.prefix, &subject) {
            Ok(names) => names,
            Err(bad) => {
                stats.subjects += 1;
                f(*bad);
                continue;
            }
        };
        if count > config.read_max_stream_messages {
            let mut out = Reading::new(&subject, steward, sid, count).finish(0);
            out.records.read_problems.push(format!(
                "too_large: {count} messages stored, more than the reader's {}",
                config.read_max_stream_messages
            ));
            stats.subjects += 1;
            f(out);
            continue;
        }
        open.insert(subject.clone(), Reading::new(&subject, steward, sid, count));
    }
    let mut deferred: Vec<Reading> = Vec::new();
    // Messages the pass read of each stream it dropped (they are read again after it).
    let mut dropped: std::collections::HashMap<String, u64> = std::collections::HashMap::new();
    if only.is_none() && !open.is_empty() {
        let mut held = 0u64;
        // At most the messages listed: a store written while it is read does not keep the
        // pass going.
        let limit = usize::try_from(listed).unwrap_or(usize::MAX);
        let pass = for_each_stored(&stream, &filter, limit, |seq, subject, payload| {
            stats.messages += 1;
            stats.bytes += payload.len() as u64;
            let Some(r) = open.get_mut(subject) else {
                // Finished, deferred, or stored after the listing.
                if let Some(n) = dropped.get_mut(subject) {
                    *n += 1;
                }
                return Ok(());
            };
            let before = r.held();
            r.take(seq, payload, config.read_max_stream_bytes);
            held = held - before + r.held();
            if r.read >= r.listed {
                if let Some(r) = open.remove(subject) {
                    held -= r.held();
                    stats.subjects += 1;
                    f(r.finish(config.read_max_stream_bytes));
                }
            } else if held > config.read_max_open_bytes {
                let begun: Vec<String> = open
                    .iter()
                    .filter(|(_, r)| r.read > 0)
                    .map(|(s, _)| s.clone())
                    .collect();
                for s in begun {
                    if let Some(r) = open.remove(&s) {
                        // Only the names and the listed count are kept: the batches read so
                        // far are dropped (the stream is read again on its own).
                        dropped.insert(s, r.read);
                        deferred.push(Reading::new(&r.subject, r.steward, r.sid, r.listed));
                    }
                }
                held = 0;
            }
            Ok(())
        })
        .await;
        // A pass cut short leaves its streams to the subject-by-subject reads below, which
        // retry and name what stays unreadable: its error is not the read's.
        let _ = pass;
    }
    for r in open.values() {
        // Unfinished by the pass: what it read of them is read again.
        dropped.insert(r.subject.clone(), r.read);
    }
    deferred.extend(open.into_values());
    deferred.sort_by(|a, b| a.subject.cmp(&b.subject));
    if only.is_none() {
        stats.deferred = deferred.len() as u64;
    }
    for r in deferred {
        let first_read = dropped.get(&r.subject).copied().unwrap_or(0);
        let r = Reading::new(&r.subject, r.steward, r.sid, r.listed);
        let out = read_subject(&stream, config, r, first_read, &mut stats).await;
        stats.subjects += 1;
        f(out);
    }
    stats.elapsed = started.elapsed();
    Ok(stats)
}

/// [`read_each`] collected into one list (every stream in memory at once: for tests and small
/// stores).
pub async fn read_back(config: &JetStreamConfig, only: Option<&str>) -> Result<Vec<NatsStream>> {
    let mut out = Vec::new();
    read_each(config, only, |s| out.push(s)).await?;
    out.sort_by(|a, b| a.subject.cmp(&b.subject));
    Ok(out)
}
