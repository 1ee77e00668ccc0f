//! The reader: every stored message of a subject ([`for_each_message`]) and the store read
//! back stream by stream ([`read_each`]).

use crate::audit::Problem;
use std::time::Duration;

use async_nats::jetstream;
use futures_util::stream::StreamExt as _;

use super::{
    CONNECT_ATTEMPTS, DecodedBatch, JetStreamConfig, backoff, check_prefix, decode_batch, nats_err,
    servers,
};
use crate::audit::StreamRecords;
use crate::error::{LiveError, Result};
use crate::sink::{escape_id, unescape_id};

/// Attempts per stored message before reading back fails.
pub const READ_ATTEMPTS: u32 = 5;

/// Consumers made in a row for one read without a message read before it fails (backing
/// off 0.5 s more each time, at most 2 s: about 15 s in all).
pub const CONSUMER_ATTEMPTS: u32 = 10;

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
                out.records.read_problems.push(Problem::new(
                    "malformed_subject",
                    format!("{subject:?} does not unescape"),
                ));
                Err(Box::new(out))
            }
        },
        _ => {
            out.records.stream_id = subject.to_owned();
            out.records.read_problems.push(Problem::new(
                "malformed_subject",
                format!("{subject:?} is not {prefix}.STEWARD.STREAM"),
            ));
            Err(Box::new(out))
        }
    }
}

/// What holding a decoded batch costs, in bytes, as the reader's bounds count it: the message
/// body, and for each receipt and inclusion receipt it holds [`ITEM_COST`] beside its bytes
/// (its own allocation: a message of many tiny items costs far more held than its body).
fn held_cost(payload: &[u8], decoded: Option<&DecodedBatch>) -> u64 {
    let items = decoded.map_or(0, |d| {
        d.receipts.len() + d.inclusion.as_ref().map_or(0, Vec::len)
    });
    (payload.len() as u64).saturating_add((items as u64).saturating_mul(ITEM_COST))
}

/// What holding one decoded item costs beside its bytes: its `Vec` (three words) and the
/// allocator's smallest block.
const ITEM_COST: u64 = 3 * core::mem::size_of::<usize>() as u64 + 32;

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
    problems: Vec<crate::audit::Problem>,
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

    /// Takes one stored message; returns the bytes it added to what is held ([`held_cost`]:
    /// its body and what holding each of its items costs beside it).
    fn take(&mut self, seq: u64, payload: &[u8], max_bytes: u64) -> u64 {
        self.read += 1;
        if self.too_large {
            return 0;
        }
        // The body alone past the bound: not decoded at all.
        if self.bytes.saturating_add(payload.len() as u64) > max_bytes {
            return self.drop_all();
        }
        let decoded = decode_batch(payload);
        let cost = held_cost(payload, decoded.as_ref().ok());
        self.bytes = self.bytes.saturating_add(cost);
        if self.bytes > max_bytes {
            return self.drop_all();
        }
        match decoded {
            Ok(d) if d.stream_id != self.sid || d.steward != self.steward => {
                self.problems.push(Problem::new(
                    "misplaced_batch",
                    format!(
                        "stream sequence {seq} holds a batch of {:?} of steward {:?}",
                        d.stream_id, d.steward
                    ),
                ));
            }
            Ok(d) => self
                .batches
                .push((d.seq, d, *blake3::hash(payload).as_bytes())),
            Err(e) => {
                self.problems.push(Problem::new(
                    "malformed_message",
                    format!("stream sequence {seq}: {e}"),
                ));
            }
        }
        cost
    }

    /// Past the bound: the stream is too large and what was read of it is dropped.
    fn drop_all(&mut self) -> u64 {
        self.too_large = true;
        self.batches = Vec::new();
        0
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
            self.problems.push(Problem::new(
                "too_large",
                format!("more than the reader's {max_bytes} bytes stored"),
            ));
        }
        self.batches.sort_by_key(|(s, ..)| *s);
        let mut last: Option<(u64, [u8; 32])> = None;
        for (seq, d, hash) in self.batches {
            if let Some((ls, lh)) = &last
                && *ls == seq
            {
                if *lh != hash {
                    self.problems.push(Problem::new(
                        "conflicting_batch",
                        format!("two different batches with seq {seq}"),
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
                r.problems.push(Problem::new(
                    "unreadable",
                    format!("{n} of the {count} messages stored on {subject:?} could be read"),
                ));
                break;
            }
            Err(e) if attempt + 1 >= READ_ATTEMPTS => {
                r.problems.push(Problem::new("unreadable", e.to_string()));
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
            out.records.read_problems.push(Problem::new(
                "too_large",
                format!(
                    "{count} messages stored, more than the reader's {}",
                    config.read_max_stream_messages
                ),
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A version-2 body (stream `s`, steward `st`, seq 0, not final) whose receipts are
    /// `items` byte strings of `each` bytes.
    fn body(items: u16, each: u8) -> Vec<u8> {
        let mut b = vec![0xa7, 0x61, b'v', 0x02, 0x69];
        b.extend_from_slice(b"stream_id");
        b.extend_from_slice(&[0x61, b's', 0x67]);
        b.extend_from_slice(b"steward");
        b.extend_from_slice(&[0x62, b's', b't', 0x63]);
        b.extend_from_slice(b"seq");
        b.extend_from_slice(&[0x00, 0x65]);
        b.extend_from_slice(b"final");
        b.extend_from_slice(&[0xf4, 0x68]);
        b.extend_from_slice(b"receipts");
        // The array's head in its shortest form (the decoder refuses any other).
        assert!(items > 255);
        b.push(0x99);
        b.extend_from_slice(&items.to_be_bytes());
        for _ in 0..items {
            assert!(each < 24);
            b.push(0x40 | each);
            b.extend(std::iter::repeat_n(0x07, usize::from(each)));
        }
        b.push(0x6a);
        b.extend_from_slice(b"checkpoint");
        b.extend_from_slice(&[0x41, 0x00]);
        b
    }

    fn reading() -> Reading {
        Reading::new("p.st.s", "st".to_owned(), "s".to_owned(), 1)
    }

    /// A message of many one-byte receipts is counted at what holding it costs (its items'
    /// own allocations), not at its body's length: under a bound its body fits, it is too
    /// large. Its neighbour, a body of the same length in a few items, is held.
    #[test]
    fn many_tiny_items_count_at_what_holding_them_costs() {
        let tiny = body(10_000, 1);
        let few = body(1_000, 19);
        assert_eq!(tiny.len(), few.len());
        let bound = tiny.len() as u64 * 4;

        let mut r = reading();
        assert_eq!(r.take(1, &tiny, bound), 0);
        assert!(r.too_large);
        assert!(r.batches.is_empty());
        assert_eq!(r.held(), 0);

        let mut r = reading();
        let cost = r.take(1, &few, bound);
        assert_eq!(cost, few.len() as u64 + 1_000 * ITEM_COST);
        assert!(!r.too_large);
        assert_eq!(r.batches.len(), 1);
        assert_eq!(r.held(), cost);
    }

    /// A body that alone passes the bound is not decoded: the stream is too large.
    #[test]
    fn a_body_past_the_bound_is_not_decoded() {
        let few = body(300, 19);
        let mut r = reading();
        assert_eq!(r.take(1, &few, few.len() as u64 - 1), 0);
        assert!(r.too_large);
        let mut r = reading();
        assert!(r.take(1, &few, few.len() as u64 + 300 * ITEM_COST) > 0);
        assert!(!r.too_large);
    }
}
