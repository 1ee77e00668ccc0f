//! [`JetStreamSink`]: batches journaled, published, acknowledged, retried and parked in the
//! journal while the cluster does not take them.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_nats::jetstream;
use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt as _};
use tokio::sync::mpsc;

use super::{
    JetStreamConfig, Stored, backoff, check_prefix, connect_until_up, encode_batch, message_id_in,
    next_generation, publish_once, publish_until_stored, servers,
};
use crate::clock::BoxFuture;
use crate::error::{LiveError, Result};
use crate::journal::{Finished, Journal, JournalWriter, Record};
use crate::sink::{ReceiptSink, SinkBatch, SinkContext, check_ids};

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
            // A batch the sink took: counted in; a failed stream's batch and one that cannot
            // be encoded are lost; any other goes on with its subject and message body.
            let admit = |batch: &SinkBatch| -> Option<(String, Bytes)> {
                stats.batches_in.fetch_add(1, Ordering::SeqCst);
                stats
                    .receipts_in
                    .fetch_add(receipts(batch), Ordering::SeqCst);
                if batch.status.failure().is_some() {
                    stats
                        .receipts_lost
                        .fetch_add(receipts(batch), Ordering::SeqCst);
                    return None;
                }
                match check_ids(&batch.steward, &batch.stream_id).and_then(|()| encode_batch(batch))
                {
                    Ok(b) => Some((
                        config.subject(&batch.steward, &batch.stream_id),
                        Bytes::from(b),
                    )),
                    Err(e) => {
                        lost(batch, &e);
                        None
                    }
                }
            };
            // What a journaled batch holds until it is acknowledged: its receipts, pending, and
            // its record's bytes in the journal.
            let held = |batch: &SinkBatch, rec: &Record| {
                [
                    (&stats.receipts_pending, receipts(batch)),
                    (&stats.journal_bytes, rec.file_bytes()),
                ]
            };
            // A batch now in the journal, not yet acknowledged.
            let journaled = |batch: &SinkBatch, rec: &Record| {
                stats.journaled.fetch_add(1, Ordering::SeqCst);
                for (counter, n) in held(batch, rec) {
                    counter.fetch_add(n, Ordering::SeqCst);
                }
            };
            let settled = |batch: &SinkBatch, rec: &Record| {
                stats.record_durable(batch, ctx.clock.now_ns());
                for (counter, n) in held(batch, rec) {
                    counter.fetch_sub(n, Ordering::SeqCst);
                }
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
                                journaled(&batch, &rec);
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
                        let Some((subject, body)) = admit(&batch) else { continue };
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
                                    journaled(&batch, &rec);
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
                            let Some((subject, body)) = admit(&batch) else { continue };
                            match journal.append(subject, body).await {
                                Ok(rec) => {
                                    journaled(&batch, &rec);
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
