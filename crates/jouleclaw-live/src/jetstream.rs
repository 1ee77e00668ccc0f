//! [`JetStreamSink`]: one message per checkpoint batch into a NATS JetStream stream, acks
//! awaited before a batch counts as durable, retries with backoff, and store-and-forward to a
//! bounded local journal. Also the message format and the reader the auditor uses.
//!
//! Subjects: `PREFIX.STEWARD.STREAM`, each id escaped into one token by
//! [`escape_id`]. Message: a CBOR map (see [`encode_batch`]); header
//! `Nats-Msg-Id` = lower-case hex BLAKE3 of the body, so a retried publish inside the stream's
//! duplicate window is stored once.

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
use crate::sink::{ReceiptSink, SinkBatch, SinkContext, escape_id, unescape_id};

/// The message format's version (`"v"`).
pub const MESSAGE_VERSION: u64 = 1;

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
    /// How long, after the last batch arrived, the sink keeps trying to drain in-flight
    /// publishes and the journal before it fails the streams left (default 120 s).
    pub drain_timeout: Duration,
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

/// Encodes a batch as the message body: a CBOR map with text keys `v` (1), `stream_id`,
/// `steward` (text), `seq` (uint), `final` (bool), `receipts` (array of bstr: COSE_Sign1),
/// `checkpoint` (bstr: COSE_Sign1), `inclusion` (array of bstr), in that order.
pub fn encode_batch(batch: &SinkBatch) -> Result<Vec<u8>> {
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
        (
            Value::Text("inclusion".into()),
            bstrs(&mut batch.inclusion.iter().map(|(_, r)| r)),
        ),
    ]);
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
    /// `inclusion`.
    pub inclusion: Vec<Vec<u8>>,
}

/// Decodes a message body written by [`encode_batch`]; refuses anything else.
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
    if keys
        != [
            "v",
            "stream_id",
            "steward",
            "seq",
            "final",
            "receipts",
            "checkpoint",
            "inclusion",
        ]
    {
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
    if int(&entries[0].1)? != MESSAGE_VERSION {
        return Err(bad("unknown version"));
    }
    Ok(DecodedBatch {
        stream_id: text(&entries[1].1)?,
        steward: text(&entries[2].1)?,
        seq: int(&entries[3].1)?,
        is_final: entries[4]
            .1
            .as_bool()
            .ok_or_else(|| bad("final not a bool"))?,
        receipts: bytes_list(&entries[5].1)?,
        checkpoint: entries[6]
            .1
            .as_bytes()
            .cloned()
            .ok_or_else(|| bad("checkpoint not a byte string"))?,
        inclusion: bytes_list(&entries[7].1)?,
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
}

impl JetStreamSink {
    /// A sink with `config`.
    pub fn new(config: JetStreamConfig) -> Self {
        Self { config }
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

/// Connects and makes sure the stream exists (bounded retries: [`CONNECT_ATTEMPTS`]).
pub async fn connect(
    config: &JetStreamConfig,
) -> Result<(jetstream::Context, jetstream::stream::Stream)> {
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
            Ok(stream) => return Ok((js, stream)),
            Err(e) if attempt >= CONNECT_ATTEMPTS => return Err(nats_err("stream", e)),
            Err(_) => {
                attempt += 1;
                tokio::time::sleep(backoff(config, attempt)).await;
            }
        }
    }
}

struct Pending {
    batch: SinkBatch,
    subject: String,
    body: Bytes,
    id: String,
    attempts: u32,
}

/// The store-and-forward journal: batches that could not be published, in arrival order, on
/// disk (one file, appended, fsynced per batch) with their bodies, bounded in bytes. Memory
/// holds only the queue of batch handles (statuses and counts), not the bodies' copies
/// beyond the batch being replayed.
struct Journal {
    path: PathBuf,
    max_bytes: u64,
    bytes: u64,
    queue: VecDeque<(SinkBatch, String, String, u64, u64)>,
}

impl Journal {
    fn new(path: PathBuf, max_bytes: u64) -> Result<Self> {
        if let Some(parent) = path.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent)
                .map_err(|e| LiveError::io(&parent.display().to_string(), &e))?;
        }
        std::fs::write(&path, b"").map_err(|e| LiveError::io(&path.display().to_string(), &e))?;
        Ok(Self {
            path,
            max_bytes,
            bytes: 0,
            queue: VecDeque::new(),
        })
    }

    /// Appends; refuses (`journal_full`) when the bound would be passed.
    fn push(&mut self, p: Pending) -> core::result::Result<(), Box<(Pending, LiveError)>> {
        let len = p.body.len() as u64;
        if self.bytes.saturating_add(len) > self.max_bytes {
            let e = LiveError::Sink {
                code: "journal_full",
                message: format!(
                    "the local journal holds {} of {} bytes; a batch of {len} bytes does not fit",
                    self.bytes, self.max_bytes
                ),
            };
            return Err(Box::new((p, e)));
        }
        let offset = self.bytes;
        let written = (|| {
            use std::io::Write as _;
            let mut f = std::fs::OpenOptions::new().append(true).open(&self.path)?;
            f.write_all(&p.body)?;
            f.sync_data()
        })();
        if let Err(e) = written {
            let e = LiveError::io(&self.path.display().to_string(), &e);
            return Err(Box::new((p, e)));
        }
        self.bytes += len;
        // The body is read back from the file at replay.
        self.queue
            .push_back((p.batch, p.subject, p.id, offset, len));
        Ok(())
    }

    fn front(&self) -> Result<Option<Pending>> {
        let Some((batch, subject, id, offset, len)) = self.queue.front() else {
            return Ok(None);
        };
        use std::io::{Read as _, Seek as _, SeekFrom};
        let mut f = std::fs::File::open(&self.path)
            .map_err(|e| LiveError::io(&self.path.display().to_string(), &e))?;
        f.seek(SeekFrom::Start(*offset))
            .map_err(|e| LiveError::io(&self.path.display().to_string(), &e))?;
        let mut body = vec![0u8; usize::try_from(*len).unwrap_or(0)];
        f.read_exact(&mut body)
            .map_err(|e| LiveError::io(&self.path.display().to_string(), &e))?;
        if message_id(&body) != *id {
            return Err(LiveError::Sink {
                code: "journal_corrupt",
                message: format!("{}: a journaled batch changed on disk", self.path.display()),
            });
        }
        Ok(Some(Pending {
            batch: batch.clone(),
            subject: subject.clone(),
            body: Bytes::from(body),
            id: id.clone(),
            attempts: 0,
        }))
    }

    fn pop(&mut self) -> Result<()> {
        self.queue.pop_front();
        if self.queue.is_empty() {
            self.bytes = 0;
            std::fs::write(&self.path, b"")
                .map_err(|e| LiveError::io(&self.path.display().to_string(), &e))?;
        }
        Ok(())
    }
}

async fn publish_once(js: jetstream::Context, p: &Pending, timeout: Duration) -> Result<()> {
    let publish = jetstream::context::Publish::build()
        .payload(p.body.clone())
        .message_id(&p.id);
    let ack = tokio::time::timeout(timeout, async {
        js.send_publish(p.subject.clone(), publish)
            .await
            .map_err(|e| nats_err("publish", e))?
            .await
            .map_err(|e| nats_err("ack", e))
    })
    .await
    .map_err(|_| nats_err("ack", "timed out"))??;
    let _ = ack;
    Ok(())
}

fn backoff(config: &JetStreamConfig, attempts: u32) -> Duration {
    let factor = 1u32 << attempts.min(16);
    config
        .backoff_initial
        .saturating_mul(factor)
        .min(config.backoff_max)
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
            let config = self.config;
            let (js, _) = connect(&config).await?;
            let mut journal = Journal::new(config.journal_path.clone(), config.journal_max_bytes)?;
            let mut in_flight = FuturesUnordered::new();
            let mut replaying: Option<BoxFuture<'static, (Pending, Result<()>)>> = None;
            let mut open = true;
            let mut drain_deadline: Option<tokio::time::Instant> = None;
            let fail = |p: &Pending, e: &LiveError| {
                ctx.stats.streams_failed.fetch_add(1, Ordering::SeqCst);
                p.batch.status.fail(&e.to_string());
            };
            loop {
                if replaying.is_none() {
                    match journal.front() {
                        Ok(Some(p)) => {
                            let js = js.clone();
                            let config = config.clone();
                            replaying = Some(Box::pin(async move {
                                let mut p = p;
                                loop {
                                    match publish_once(js.clone(), &p, config.ack_timeout).await {
                                        Ok(()) => return (p, Ok(())),
                                        Err(_) => {
                                            p.attempts = p.attempts.saturating_add(1);
                                            tokio::time::sleep(backoff(&config, p.attempts)).await;
                                        }
                                    }
                                }
                            }));
                        }
                        Ok(None) => {}
                        Err(e) => return Err(e),
                    }
                }
                if !open && in_flight.is_empty() && replaying.is_none() {
                    return Ok(());
                }
                let deadline = drain_deadline
                    .unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(86_400));
                tokio::select! {
                    biased;
                    Some((p, r)) = in_flight.next(), if !in_flight.is_empty() => {
                        let mut p: Pending = p;
                        match r {
                            Ok(()) => ctx.stats.record_durable(&p.batch, ctx.clock.now_ns()),
                            Err(_) => {
                                ctx.stats.retries.fetch_add(1, Ordering::SeqCst);
                                p.attempts += 1;
                                if p.attempts < config.max_attempts {
                                    let js = js.clone();
                                    let config = config.clone();
                                    in_flight.push(Box::pin(async move {
                                        tokio::time::sleep(backoff(&config, p.attempts)).await;
                                        let r = publish_once(js, &p, config.ack_timeout).await;
                                        (p, r)
                                    }) as BoxFuture<'static, (Pending, Result<()>)>);
                                } else {
                                    ctx.stats.journaled.fetch_add(1, Ordering::SeqCst);
                                    if let Err(refused) = journal.push(p) {
                                        let (p, e) = *refused;
                                        fail(&p, &e);
                                    }
                                    ctx.stats.journal_bytes.store(journal.bytes, Ordering::SeqCst);
                                }
                            }
                        }
                    }
                    (p, r) = async { match replaying.as_mut() { Some(f) => f.await, None => std::future::pending().await } }, if replaying.is_some() => {
                        replaying = None;
                        if r.is_ok() {
                            ctx.stats.record_durable(&p.batch, ctx.clock.now_ns());
                            journal.pop()?;
                            ctx.stats.journal_bytes.store(journal.bytes, Ordering::SeqCst);
                        }
                    }
                    b = batches.recv(), if open && in_flight.len() < config.max_in_flight => {
                        let Some(batch) = b else {
                            open = false;
                            drain_deadline = Some(tokio::time::Instant::now() + config.drain_timeout);
                            continue;
                        };
                        ctx.stats.batches_in.fetch_add(1, Ordering::SeqCst);
                        if batch.status.failure().is_some() {
                            continue;
                        }
                        let body = match encode_batch(&batch) {
                            Ok(b) => Bytes::from(b),
                            Err(e) => { batch.status.fail(&e.to_string()); continue; }
                        };
                        let p = Pending {
                            subject: config.subject(&batch.steward, &batch.stream_id),
                            id: message_id(&body),
                            body,
                            batch,
                            attempts: 0,
                        };
                        if journal.queue.is_empty() {
                            let js = js.clone();
                            let timeout = config.ack_timeout;
                            in_flight.push(Box::pin(async move {
                                let r = publish_once(js, &p, timeout).await;
                                (p, r)
                            }) as BoxFuture<'static, (Pending, Result<()>)>);
                        } else {
                            // Keep arrival order behind what is already journaled.
                            ctx.stats.journaled.fetch_add(1, Ordering::SeqCst);
                            if let Err(refused) = journal.push(p) {
                                        let (p, e) = *refused;
                                fail(&p, &e);
                            }
                            ctx.stats.journal_bytes.store(journal.bytes, Ordering::SeqCst);
                        }
                    }
                    () = tokio::time::sleep_until(deadline), if drain_deadline.is_some() => {
                        let e = LiveError::Sink {
                            code: "journal_full",
                            message: format!("{} batches not durable when the drain timed out", journal.queue.len() + in_flight.len()),
                        };
                        for (b, ..) in &journal.queue {
                            b.status.fail(&e.to_string());
                        }
                        return Err(e);
                    }
                }
            }
        })
    }
}

/// Reads the batches back: every message of the JetStream stream (or only those whose last
/// subject token is the escaped `only` stream id), one request per stored message, grouped per stream and ordered by `seq`; a `seq` stored twice with equal bodies
/// is kept once (a duplicate that escaped the duplicate window), with different bodies it is a
/// problem of the stream.
pub async fn read_back(config: &JetStreamConfig, only: Option<&str>) -> Result<Vec<StreamRecords>> {
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
    let mut attempt = 0u32;
    let (stream, state) = loop {
        let got = async {
            let mut stream = js
                .get_stream(&config.stream)
                .await
                .map_err(|e| nats_err("stream", e))?;
            let state = stream
                .info()
                .await
                .map_err(|e| nats_err("info", e))?
                .state
                .clone();
            Ok::<_, LiveError>((stream, state))
        }
        .await;
        match got {
            Ok(v) => break v,
            Err(e) if attempt >= CONNECT_ATTEMPTS => return Err(e),
            Err(_) => {
                attempt += 1;
                tokio::time::sleep(backoff(config, attempt)).await;
            }
        }
    };
    let want = only.map(escape_id);
    let mut per: std::collections::BTreeMap<String, Vec<(u64, DecodedBatch, Vec<u8>)>> =
        std::collections::BTreeMap::new();
    let mut problems: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    if state.messages > 0 {
        for seq in state.first_sequence..=state.last_sequence {
            let mut attempt = 0u32;
            let msg = loop {
                match stream.get_raw_message(seq).await {
                    Ok(m) => break Some(m),
                    // A deleted sequence number: nothing is stored there.
                    Err(e)
                        if e.kind() == jetstream::stream::RawMessageErrorKind::NoMessageFound =>
                    {
                        break None;
                    }
                    Err(e) if attempt >= READ_ATTEMPTS => {
                        return Err(nats_err(&format!("reading stream sequence {seq}"), e));
                    }
                    Err(_) => {
                        attempt += 1;
                        tokio::time::sleep(backoff(config, attempt)).await;
                    }
                }
            };
            let Some(msg) = msg else { continue };
            if want
                .as_ref()
                .is_some_and(|w| w.as_str() != msg.subject.as_str())
            {
                continue;
            }
            let token = msg.subject.rsplit('.').next().unwrap_or("").to_owned();
            let sid = unescape_id(&token).unwrap_or(token);
            match decode_batch(&msg.payload) {
                Ok(d) => per
                    .entry(sid)
                    .or_default()
                    .push((d.seq, d, msg.payload.to_vec())),
                Err(e) => problems
                    .entry(sid)
                    .or_default()
                    .push(format!("malformed_message: stream sequence {seq}: {e}")),
            }
        }
    }
    let mut out = Vec::new();
    let ids: std::collections::BTreeSet<String> =
        per.keys().chain(problems.keys()).cloned().collect();
    for id in ids {
        let mut batches = per.remove(&id).unwrap_or_default();
        batches.sort_by_key(|(s, ..)| *s);
        let mut rec = StreamRecords {
            stream_id: id.clone(),
            read_problems: problems.remove(&id).unwrap_or_default(),
            ..StreamRecords::default()
        };
        let mut last: Option<(u64, Vec<u8>)> = None;
        for (seq, d, body) in batches {
            if let Some((ls, lb)) = &last
                && *ls == seq
            {
                if *lb != body {
                    rec.read_problems.push(format!(
                        "conflicting_batch: two different batches with seq {seq}"
                    ));
                }
                continue;
            }
            rec.receipts.extend(d.receipts);
            rec.seals.push(d.checkpoint);
            rec.sealed |= d.is_final;
            last = Some((seq, body));
        }
        out.push(rec);
    }
    Ok(out)
}
