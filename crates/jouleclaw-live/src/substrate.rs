//! [`Substrate`]: many live streams on shard threads, windows closed on the clock, receipts
//! sealed and handed to a sink off the push path.
//!
//! Each stream is one [`Judge`] on its verdict shard (the push path: window, ledger, oracles,
//! the early verdict) and one [`Notary`] on its mint shard (mint, sign, seal), both built once
//! when the stream opens and moved to their shards (they are `Send`). The verdict shard sends
//! the mint shard one message per closed window, the [`JudgedWindow`], never a tick.
//!
//! Beside each stream's notary run its stop-latency meter (`jouleclaw_stop_latency`) and its
//! interaction meter (`jouleclaw_interaction`), both fed the ticks of each closed window in push
//! order, the ticks the judge accepted and nothing else; time is the ticks' own `ts_ns`. At
//! close the meters' findings become the stream's signed `stop-latency/1` and
//! `interaction-metrics/1` documents, each bound to the receipts' root and count, committed by
//! the final seal (`stream-seal/2`) and carried in the final batch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use jouleclaw_interaction::{InteractionConfig, InteractionDocument, InteractionMeter};
use jouleclaw_jcr1::Estimator;
use jouleclaw_jcr1::cose::{PublicKey, Signer};
use jouleclaw_pipeline::{
    ClosedAt, ClosedWindow, Judge, JudgedWindow, Notary, PipelineConfig, PipelineError,
    SigningPolicy, WindowSignatures, duplex_voice_oracle,
};
use jouleclaw_seal::SealBatch;
use jouleclaw_stop_latency::{MAX_BARGE_INS, StopLatencyDocument, StopLatencyMeter};
use jouleclaw_stream::{StreamSpec, Tick, TickKind, TickMarker, WindowConservationFinding};
use jouleclaw_stream_oracle::WindowVerdict;
use tokio::sync::{Notify, broadcast, mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::clock::Clock;
use crate::error::{LiveError, Result};
use crate::sink::{ReceiptItem, ReceiptSink, SinkBatch, SinkContext, SinkStats, StreamStatus};

/// The substrate's bounds and policy. Every queue is bounded; see `spec/LIVE.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubstrateConfig {
    /// The receipts' steward.
    pub steward: String,
    /// The stream spec every stream uses (window length, channels, limits).
    pub spec: StreamSpec,
    /// How long after a window's end (stream time) late ticks of it are still taken, ns.
    pub grace_ns: u64,
    /// A checkpoint is signed every this many closed windows (and at close). At least 1.
    pub checkpoint_every: u64,
    /// Shard threads that compute early verdicts (the push path). At least 1.
    pub verdict_shards: usize,
    /// Shard threads that mint, sign and seal (off the push path). At least 1.
    pub mint_shards: usize,
    /// Bound of each verdict shard's inbound queue (pushes waiting for their verdict).
    pub verdict_queue: usize,
    /// Bound of each mint shard's inbound queue, in closed windows (each holds its ticks until
    /// it is notarized).
    pub mint_queue: usize,
    /// Bound of the sink's inbound queue, in batches.
    pub sink_queue: usize,
    /// Bound of each stream's verdict broadcast (a slower subscriber sees `Lagged`).
    pub verdict_broadcast: usize,
    /// Most streams open at once.
    pub max_streams: usize,
    /// Most windows one stream may close (the sealer's log bound).
    pub max_windows_per_stream: u64,
    /// The detection windows of each stream's interaction meter (recorded in its
    /// `interaction-metrics/1` document).
    pub interaction: InteractionConfig,
}

impl SubstrateConfig {
    /// Defaults for the duplex-voice spec: grace 20 ms, a checkpoint every 25 windows (5 s of
    /// 200 ms windows), two shards of each kind, queues of 4,096 pushes / 4,096 windows / 1,024
    /// batches, broadcasts of 64 verdicts, 10,000 streams of at most 1,048,576 windows, and
    /// τ-voice's default detection windows for the interaction meter.
    pub fn new(steward: &str) -> Self {
        Self {
            steward: steward.to_owned(),
            spec: StreamSpec::duplex_voice_default(),
            grace_ns: 20_000_000,
            checkpoint_every: 25,
            verdict_shards: 2,
            mint_shards: 2,
            verdict_queue: 4096,
            mint_queue: 4096,
            sink_queue: 1024,
            verdict_broadcast: 64,
            max_streams: 10_000,
            max_windows_per_stream: 1 << 20,
            interaction: InteractionConfig::default(),
        }
    }

    fn validate(&self) -> Result<()> {
        let bad = |m: &str| {
            Err(LiveError::Config {
                message: m.to_owned(),
            })
        };
        if self.checkpoint_every == 0 {
            return bad("checkpoint_every must be at least 1");
        }
        if self.verdict_shards == 0 || self.mint_shards == 0 {
            return bad("at least one shard of each kind");
        }
        if self.verdict_queue == 0
            || self.mint_queue == 0
            || self.sink_queue == 0
            || self.verdict_broadcast == 0
        {
            return bad("queue bounds must be at least 1");
        }
        if self.max_windows_per_stream == 0 {
            return bad("max_windows_per_stream must be at least 1");
        }
        if let Err(e) = self.interaction.validate() {
            return bad(&e.to_string());
        }
        self.spec.validate().map_err(|e| LiveError::Config {
            message: e.to_string(),
        })
    }
}

/// A verdict a stream raised on a tick, as subscribers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictEvent {
    /// The tick's window.
    pub window_id: u64,
    /// The tick's timestamp (stream time).
    pub ts_ns: u64,
    /// The tick's channel.
    pub channel_id: u32,
    /// The verdict.
    pub verdict: WindowVerdict,
}

/// What closing a stream reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamSummary {
    /// The stream.
    pub stream_id: String,
    /// Windows closed (receipts minted).
    pub windows: u64,
    /// Checkpoints signed (the last one final), 0 when no window ever opened.
    pub checkpoints: u64,
    /// Ticks accepted.
    pub accepted: u64,
    /// Ticks refused (every refusal counted, by any reason).
    pub refused: u64,
    /// Of those, refused because their window was closed.
    pub refused_closed: u64,
    /// The final checkpoint (tagged COSE_Sign1 `stream-seal/1`, `final: true`) as signed and
    /// handed to the sink; `None` when the stream never took a tick. Whether the sink made it
    /// durable is the stream's status ([`StreamStatus::sealed_durable`]).
    pub final_seal: Option<Vec<u8>>,
}

/// Substrate-wide counters.
#[derive(Debug, Default)]
pub struct SubstrateStats {
    /// Ticks accepted.
    pub accepted: AtomicU64,
    /// Ticks refused (any reason).
    pub refused: AtomicU64,
    /// Ticks refused because their window was closed.
    pub refused_closed: AtomicU64,
    /// Ticks refused because a queue was full.
    pub refused_overloaded: AtomicU64,
    /// Windows closed and minted.
    pub windows: AtomicU64,
    /// Checkpoints signed.
    pub checkpoints: AtomicU64,
    /// Streams opened.
    pub streams_opened: AtomicU64,
    /// Streams closed with their final seal signed (whether the sink then made it durable
    /// or not: [`SinkStats::seals_durable`] counts those).
    pub streams_sealed: AtomicU64,
    /// Streams whose close returned an error.
    pub streams_failed: AtomicU64,
    /// Streams failed, each once whoever failed it and whenever (its workers, the sink,
    /// also after its close): what `jouleclaw live` counts as failed streams.
    pub failed_streams: Arc<AtomicU64>,
    /// Window closes on the clock deferred because a mint queue was full (the window then
    /// closes at the stream's next tick of a later window or at its close).
    pub closes_deferred: AtomicU64,
    /// Windows minted, by their composite verdict: [`VERDICT_KINDS`] order.
    pub verdicts: [AtomicU64; 4],
    /// Windows minted, by the rolling ledger's conservation finding: [`FINDING_KINDS`]
    /// order.
    pub findings: [AtomicU64; 3],
}

/// The verdict kinds [`SubstrateStats::verdicts`] counts, in order (the receipt's
/// `verdict.kind` names).
pub const VERDICT_KINDS: [&str; 4] = ["pass", "need_more", "yield", "fail"];

/// The conservation findings [`SubstrateStats::findings`] counts, in order (the receipt's
/// `conservation.kind` names).
pub const FINDING_KINDS: [&str; 3] = ["conforming", "hallucination", "barge_in_ignored"];

/// Where a window's verdict and finding are counted in [`VERDICT_KINDS`] and
/// [`FINDING_KINDS`].
fn kinds(judged: &JudgedWindow) -> (usize, usize) {
    let verdict = match judged.verdict() {
        WindowVerdict::Pass { .. } => 0,
        WindowVerdict::NeedMore { .. } => 1,
        WindowVerdict::Yield { .. } => 2,
        WindowVerdict::Fail { .. } => 3,
    };
    let finding = match judged.conservation() {
        WindowConservationFinding::Conforming => 0,
        WindowConservationFinding::Hallucination { .. } => 1,
        WindowConservationFinding::BargeInIgnored { .. } => 2,
    };
    (verdict, finding)
}

/// What one stream shares between its handle, its closer task and its shards.
struct StreamShared {
    key: u64,
    stream_id: String,
    origin_ns: u64,
    window_ns: u64,
    grace_ns: u64,
    /// The newest accepted window, `u64::MAX` before the first tick.
    newest: AtomicU64,
    newest_changed: Notify,
    closing: AtomicBool,
    accepted: AtomicU64,
    refused: AtomicU64,
    refused_closed: AtomicU64,
    verdicts: broadcast::Sender<VerdictEvent>,
    status: Arc<StreamStatus>,
}

const NONE: u64 = u64::MAX;

enum VerdictCmd {
    Open {
        shared: Arc<StreamShared>,
        judge: Box<Judge>,
    },
    Tick {
        key: u64,
        tick: Tick,
        now_ns: u64,
        reply: std::sync::mpsc::SyncSender<Result<Option<WindowVerdict>>>,
    },
    CloseDue {
        key: u64,
        window_id: u64,
    },
    /// Stops taking the stream's ticks and ends its judge; the handle then sends the last
    /// window to the mint shard (so the verdict shard never waits on a full mint queue).
    /// `None` back: the stream is no longer on the shard (another handle closed it).
    Close {
        key: u64,
        reply: oneshot::Sender<Option<Option<JudgedWindow>>>,
    },
    Stop,
}

/// One message per closed window, never per tick.
enum MintCmd {
    Open {
        shared: Arc<StreamShared>,
        notary: Box<Notary>,
        interaction: InteractionMeter,
    },
    Window {
        key: u64,
        judged: JudgedWindow,
    },
    Close {
        key: u64,
        last: Option<JudgedWindow>,
        reply: oneshot::Sender<Result<StreamSummary>>,
    },
    Stop,
}

struct Inner {
    config: SubstrateConfig,
    spec: Arc<StreamSpec>,
    clock: Arc<dyn Clock>,
    key: PublicKey,
    verdict_tx: Vec<mpsc::Sender<VerdictCmd>>,
    mint_tx: Vec<mpsc::Sender<MintCmd>>,
    streams: Mutex<HashMap<String, u64>>,
    next_key: AtomicU64,
    stats: Arc<SubstrateStats>,
    sink_stats: Arc<SinkStats>,
    sink_tx: Mutex<Option<mpsc::Sender<SinkBatch>>>,
    sink_task: Mutex<Option<JoinHandle<Result<()>>>>,
    /// Set when the shutdown begins (every stream closed): the sink's drain counts from then.
    draining: tokio::sync::watch::Sender<bool>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    stopped: AtomicBool,
}

/// Many live streams. Cheap to clone; every clone is the same substrate.
#[derive(Clone)]
pub struct Substrate {
    inner: Arc<Inner>,
}

impl core::fmt::Debug for Substrate {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Substrate")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl Substrate {
    /// Starts a substrate: the shard threads and the sink task. Call inside a tokio runtime.
    pub fn start(
        config: SubstrateConfig,
        clock: Arc<dyn Clock>,
        signer: Arc<dyn Signer + Send + Sync>,
        sink: Box<dyn ReceiptSink>,
    ) -> Result<Self> {
        config.validate()?;
        let spec = Arc::new(config.spec.clone());
        let stats = Arc::new(SubstrateStats::default());
        let sink_stats = Arc::new(SinkStats::default());
        let (sink_tx, sink_rx) = mpsc::channel(config.sink_queue);
        let (draining, draining_rx) = tokio::sync::watch::channel(false);
        let sink_task = tokio::spawn(sink.run(
            sink_rx,
            SinkContext {
                stats: sink_stats.clone(),
                clock: clock.clone(),
                draining: draining_rx,
            },
        ));
        let key = signer.verifying_key();
        let mut threads = Vec::new();
        let mut mint_tx = Vec::new();
        for i in 0..config.mint_shards {
            let (tx, rx) = mpsc::channel(config.mint_queue);
            mint_tx.push(tx);
            let shard = MintShard {
                rx,
                streams: HashMap::new(),
                steward: config.steward.clone(),
                spec: spec.clone(),
                signer: signer.clone(),
                sink: sink_tx.clone(),
                clock: clock.clone(),
                stats: stats.clone(),
            };
            threads.push(spawn_thread(format!("jc-mint-{i}"), move || shard.run())?);
        }
        let mut verdict_tx = Vec::new();
        for i in 0..config.verdict_shards {
            let (tx, rx) = mpsc::channel(config.verdict_queue);
            verdict_tx.push(tx);
            let shard = VerdictShard {
                rx,
                streams: HashMap::new(),
                mint: mint_tx.clone(),
                mint_queue: config.mint_queue,
                stats: stats.clone(),
            };
            threads.push(spawn_thread(format!("jc-verdict-{i}"), move || {
                shard.run()
            })?);
        }
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                spec,
                clock,
                key,
                verdict_tx,
                mint_tx,
                streams: Mutex::new(HashMap::new()),
                next_key: AtomicU64::new(0),
                stats,
                sink_stats,
                sink_tx: Mutex::new(Some(sink_tx)),
                sink_task: Mutex::new(Some(sink_task)),
                draining,
                threads: Mutex::new(threads),
                stopped: AtomicBool::new(false),
            }),
        })
    }

    /// The key every receipt and checkpoint is signed with.
    pub fn verifying_key(&self) -> PublicKey {
        self.inner.key
    }

    /// Substrate-wide counters.
    pub fn stats(&self) -> &Arc<SubstrateStats> {
        &self.inner.stats
    }

    /// The sink's counters.
    pub fn sink_stats(&self) -> &Arc<SinkStats> {
        &self.inner.sink_stats
    }

    /// The configuration.
    pub fn config(&self) -> &SubstrateConfig {
        &self.inner.config
    }

    /// Opens a stream whose stream time starts now. Its receipts' `closed_at` is the clock's
    /// Unix epoch plus the window's end in whole seconds since the clock's origin.
    pub fn open_stream(&self, stream_id: &str) -> Result<StreamHandle> {
        let inner = &self.inner;
        if inner.stopped.load(Ordering::SeqCst) {
            return Err(LiveError::StreamClosed {
                stream_id: stream_id.to_owned(),
            });
        }
        // The stream's one judge and one notary; building them refuses ids the receipts
        // cannot carry before anything is registered. Ids the sinks cannot store (file names,
        // NATS subjects) are refused here too, before anything is minted.
        let origin_ns = inner.clock.now_ns();
        let (judge, notary) = build_halves(inner, stream_id, origin_ns)?;
        let interaction = InteractionMeter::new(inner.config.interaction)?;
        crate::sink::check_ids(&inner.config.steward, stream_id)?;
        let key = {
            let mut streams = inner.streams.lock().map_err(|_| poisoned())?;
            if streams.contains_key(stream_id) {
                return Err(LiveError::DuplicateStream {
                    stream_id: stream_id.to_owned(),
                });
            }
            if streams.len() >= inner.config.max_streams {
                return Err(LiveError::TooManyStreams {
                    limit: inner.config.max_streams,
                });
            }
            let key = inner.next_key.fetch_add(1, Ordering::SeqCst);
            streams.insert(stream_id.to_owned(), key);
            key
        };
        let (verdicts, _) = broadcast::channel(inner.config.verdict_broadcast);
        let shared = Arc::new(StreamShared {
            key,
            stream_id: stream_id.to_owned(),
            origin_ns,
            window_ns: inner.spec.window_ns(),
            grace_ns: inner.config.grace_ns,
            newest: AtomicU64::new(NONE),
            newest_changed: Notify::new(),
            closing: AtomicBool::new(false),
            accepted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            refused_closed: AtomicU64::new(0),
            verdicts,
            status: Arc::new(StreamStatus::counted(inner.stats.failed_streams.clone())),
        });
        let vtx = self.verdict_tx(key).clone();
        let mtx = self.mint_tx(key).clone();
        // Open on the mint shard first: the verdict shard hands closed windows there.
        let opened = mtx
            .try_send(MintCmd::Open {
                shared: shared.clone(),
                notary: Box::new(notary),
                interaction,
            })
            .is_ok()
            && vtx
                .try_send(VerdictCmd::Open {
                    shared: shared.clone(),
                    judge: Box::new(judge),
                })
                .is_ok();
        if !opened {
            if let Ok(mut streams) = inner.streams.lock() {
                streams.remove(stream_id);
            }
            return Err(LiveError::Overloaded {
                capacity: inner.config.verdict_queue,
            });
        }
        inner.stats.streams_opened.fetch_add(1, Ordering::SeqCst);
        tokio::spawn(closer(shared.clone(), inner.clock.clone(), vtx.clone()));
        Ok(StreamHandle {
            shared,
            verdict_tx: vtx,
            mint_tx: mtx,
            clock: inner.clock.clone(),
            substrate: Arc::downgrade(&self.inner),
        })
    }

    fn verdict_tx(&self, key: u64) -> &mpsc::Sender<VerdictCmd> {
        let n = self.inner.verdict_tx.len() as u64;
        &self.inner.verdict_tx[(key % n) as usize]
    }

    fn mint_tx(&self, key: u64) -> &mpsc::Sender<MintCmd> {
        let n = self.inner.mint_tx.len() as u64;
        &self.inner.mint_tx[(key % n) as usize]
    }

    /// Streams open now.
    pub fn open_streams(&self) -> usize {
        self.inner.streams.lock().map_or(0, |s| s.len())
    }

    /// Stops the substrate: every stream must be closed first (open ones are refused with
    /// `misuse`, nothing stopped). Stops the shards, lets the sink finish every batch and
    /// returns its result.
    pub async fn shutdown(&self) -> Result<()> {
        let open = self.open_streams();
        if open > 0 {
            return Err(LiveError::Misuse {
                message: format!("{open} streams are still open; close them first"),
            });
        }
        self.inner.stopped.store(true, Ordering::SeqCst);
        // Every stream is closed: no batch will be made that is not already on its way, so
        // the sink's drain deadline counts from now (not from when it next reads its queue).
        self.inner.draining.send_replace(true);
        for tx in &self.inner.verdict_tx {
            let _ = tx.send(VerdictCmd::Stop).await;
        }
        let threads: Vec<_> = self
            .inner
            .threads
            .lock()
            .map(|mut t| t.drain(..).collect())
            .unwrap_or_default();
        tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        })
        .await
        .map_err(shard_join_failed)?;
        drop(self.inner.sink_tx.lock().ok().and_then(|mut s| s.take()));
        let task = self.inner.sink_task.lock().ok().and_then(|mut t| t.take());
        match task {
            Some(task) => task.await.map_err(|e| LiveError::Sink {
                code: "sink_closed",
                message: format!("sink task: {e}"),
            })?,
            None => Ok(()),
        }
    }
}

/// A lock found poisoned: a thread panicked holding it.
fn poisoned() -> LiveError {
    LiveError::Internal {
        invariant: "no thread panics holding a lock",
    }
}

/// The task that joins the shard threads did not finish (it panicked or was cancelled).
fn shard_join_failed(_: tokio::task::JoinError) -> LiveError {
    LiveError::Internal {
        invariant: "the task joining the shard threads finishes",
    }
}

fn spawn_thread(
    name: String,
    f: impl FnOnce() + Send + 'static,
) -> Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name)
        .spawn(f)
        .map_err(|e| LiveError::Config {
            message: format!("cannot start a shard thread: {e}"),
        })
}

/// A stream's judge and notary. Stream time 0 is the clock's `origin_ns`: closed_at = epoch +
/// (origin + end) / 1e9, rounded down to the second; the shift keeps it exact for whole-second
/// origins. Every window is signed on its own and a checkpoint is signed every
/// `checkpoint_every` windows and at close.
fn build_halves(inner: &Inner, stream_id: &str, origin_ns: u64) -> Result<(Judge, Notary)> {
    let epoch = inner
        .clock
        .epoch_unix()
        .saturating_add(i64::try_from(origin_ns / 1_000_000_000).unwrap_or(0));
    let config = PipelineConfig::new(&inner.config.steward, stream_id)
        .with_closed_at(ClosedAt::StreamTime { epoch_unix: epoch })
        .with_signing(SigningPolicy::Checkpoint {
            every_windows: inner.config.checkpoint_every,
            window_signatures: WindowSignatures::All,
            max_windows: inner.config.max_windows_per_stream,
        });
    let judge = Judge::new(inner.spec.clone(), config.policy, duplex_voice_oracle())?;
    // The sinks store the checkpoints and no inclusion receipt (each is derivable from its
    // checkpoint and the receipts): none is minted.
    let notary = Notary::new(&config, Estimator::default())?.without_inclusion_receipts();
    Ok((judge, notary))
}

/// One stream's handle: push ticks, watch verdicts, close. Cheap to clone.
#[derive(Clone)]
pub struct StreamHandle {
    shared: Arc<StreamShared>,
    verdict_tx: mpsc::Sender<VerdictCmd>,
    mint_tx: mpsc::Sender<MintCmd>,
    clock: Arc<dyn Clock>,
    substrate: std::sync::Weak<Inner>,
}

impl core::fmt::Debug for StreamHandle {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StreamHandle")
            .field("stream_id", &self.shared.stream_id)
            .finish_non_exhaustive()
    }
}

impl StreamHandle {
    /// The stream's id.
    pub fn stream_id(&self) -> &str {
        &self.shared.stream_id
    }

    /// Stream time now, ns since the stream was opened.
    pub fn now_ns(&self) -> u64 {
        self.clock.now_ns().saturating_sub(self.shared.origin_ns)
    }

    /// The window length, ns.
    pub fn window_ns(&self) -> u64 {
        self.shared.window_ns
    }

    /// Pushes a tick; returns its early verdict. The tick is judged against the stream clock
    /// at the moment of this call (a window takes ticks until its end plus the grace).
    ///
    /// A synchronous call from any task or thread: it hands the tick to the stream's verdict
    /// shard and waits for that shard's answer (the ledger and the oracles on one tick; the
    /// shard never mints, signs or does I/O). It never waits on minting, signing or the sink:
    /// a full queue is an `overloaded` refusal. Every refusal is counted and changes nothing.
    pub fn push(&self, tick: Tick) -> Result<Option<WindowVerdict>> {
        if self.shared.closing.load(Ordering::SeqCst) {
            return Err(self.closed());
        }
        let now_ns = self.now_ns();
        let (reply, rx) = std::sync::mpsc::sync_channel(1);
        let cmd = VerdictCmd::Tick {
            key: self.shared.key,
            tick,
            now_ns,
            reply,
        };
        if let Err(e) = self.verdict_tx.try_send(cmd) {
            self.shared.refused.fetch_add(1, Ordering::SeqCst);
            if let Some(inner) = self.substrate.upgrade() {
                inner.stats.refused.fetch_add(1, Ordering::SeqCst);
                inner
                    .stats
                    .refused_overloaded
                    .fetch_add(1, Ordering::SeqCst);
            }
            return Err(match e {
                mpsc::error::TrySendError::Full(_) => LiveError::Overloaded {
                    capacity: self.verdict_tx.max_capacity(),
                },
                mpsc::error::TrySendError::Closed(_) => self.closed(),
            });
        }
        rx.recv().map_err(|_| self.closed())?
    }

    /// Watches the stream's early verdicts from now on (a bounded broadcast: a subscriber that
    /// falls more than the bound behind sees `Lagged` and the count it missed).
    pub fn subscribe(&self) -> broadcast::Receiver<VerdictEvent> {
        self.shared.verdicts.subscribe()
    }

    /// The stream's durability and failure state.
    pub fn status(&self) -> &Arc<StreamStatus> {
        &self.shared.status
    }

    /// Ticks refused so far.
    pub fn refused(&self) -> u64 {
        self.shared.refused.load(Ordering::SeqCst)
    }

    /// Closes the stream: the open window closes, the final checkpoint is signed and handed to
    /// the sink. Later pushes are refused (`stream_closed`).
    pub async fn close(&self) -> Result<StreamSummary> {
        if self.shared.closing.load(Ordering::SeqCst) {
            return Err(self.closed());
        }
        let (reply, rx) = oneshot::channel();
        self.verdict_tx
            .send(VerdictCmd::Close {
                key: self.shared.key,
                reply,
            })
            .await
            .map_err(|_| self.closed())?;
        // Not on its verdict shard: a clone of this handle closed it first.
        let last = rx.await.ok().flatten().ok_or_else(|| self.closed())?;
        // Every window the verdict shard closed is already in the mint queue, ahead of this.
        let (reply, rx) = oneshot::channel();
        self.mint_tx
            .send(MintCmd::Close {
                key: self.shared.key,
                last,
                reply,
            })
            .await
            .map_err(|_| self.closed())?;
        let result = rx.await.map_err(|_| self.closed())?;
        self.shared.closing.store(true, Ordering::SeqCst);
        self.shared.newest_changed.notify_one();
        if let Some(inner) = self.substrate.upgrade() {
            if let Ok(mut streams) = inner.streams.lock() {
                streams.remove(&self.shared.stream_id);
            }
            match &result {
                Ok(_) => inner.stats.streams_sealed.fetch_add(1, Ordering::SeqCst),
                Err(_) => inner.stats.streams_failed.fetch_add(1, Ordering::SeqCst),
            };
        }
        result
    }

    fn closed(&self) -> LiveError {
        match self.shared.status.failure() {
            Some(reason) => LiveError::StreamFailed {
                stream_id: self.shared.stream_id.clone(),
                reason,
            },
            None => LiveError::StreamClosed {
                stream_id: self.shared.stream_id.clone(),
            },
        }
    }
}

/// Closes each window on the clock: at its end plus the grace, unless a tick of a later window
/// closed it first.
async fn closer(shared: Arc<StreamShared>, clock: Arc<dyn Clock>, tx: mpsc::Sender<VerdictCmd>) {
    let mut sent = NONE;
    loop {
        if shared.closing.load(Ordering::SeqCst) {
            return;
        }
        let newest = shared.newest.load(Ordering::SeqCst);
        if newest == NONE || (sent != NONE && newest <= sent) {
            shared.newest_changed.notified().await;
            continue;
        }
        let end = newest
            .saturating_add(1)
            .saturating_mul(shared.window_ns)
            .saturating_add(shared.grace_ns);
        clock
            .sleep_until(shared.origin_ns.saturating_add(end))
            .await;
        if shared.closing.load(Ordering::SeqCst) {
            return;
        }
        let cmd = VerdictCmd::CloseDue {
            key: shared.key,
            window_id: newest,
        };
        if tx.send(cmd).await.is_err() {
            return;
        }
        sent = newest;
    }
}

/// A stream on its verdict shard: its one [`Judge`] and the barge-in markers it accepted.
struct VState {
    shared: Arc<StreamShared>,
    judge: Judge,
    /// Barge-in markers accepted: the one past [`MAX_BARGE_INS`] is refused before the judge
    /// sees it, so that the stream's stop-latency meter can measure every one it accepted.
    barge_ins: usize,
}

/// Judges ticks (the push path): one [`Judge`] per stream, each closed window handed to the
/// stream's mint shard.
struct VerdictShard {
    rx: mpsc::Receiver<VerdictCmd>,
    streams: HashMap<u64, VState>,
    mint: Vec<mpsc::Sender<MintCmd>>,
    mint_queue: usize,
    stats: Arc<SubstrateStats>,
}

impl VerdictShard {
    fn mint_for(&self, key: u64) -> &mpsc::Sender<MintCmd> {
        &self.mint[(key % self.mint.len() as u64) as usize]
    }

    fn run(mut self) {
        while let Some(cmd) = self.rx.blocking_recv() {
            match cmd {
                VerdictCmd::Open { shared, judge } => {
                    self.streams.insert(
                        shared.key,
                        VState {
                            shared,
                            judge: *judge,
                            barge_ins: 0,
                        },
                    );
                }
                VerdictCmd::Tick {
                    key,
                    tick,
                    now_ns,
                    reply,
                } => {
                    let result = self.tick(key, tick, now_ns);
                    // The pusher waits on a one-slot channel: this never blocks.
                    let _ = reply.try_send(result);
                }
                VerdictCmd::CloseDue { key, window_id } => self.close_due(key, window_id),
                VerdictCmd::Close { key, reply } => {
                    let _ = reply.send(self.close(key));
                }
                VerdictCmd::Stop => {
                    for tx in &self.mint {
                        let _ = tx.blocking_send(MintCmd::Stop);
                    }
                    return;
                }
            }
        }
    }

    /// The clock closes the stream's open window if it is `window_id` or older. Never waits:
    /// when the mint queue is full the close is deferred (counted) and the window stays open
    /// in the judge, taking only ticks pushed before its end plus the grace; it then closes at
    /// the stream's next tick of a later window or at its close.
    fn close_due(&mut self, key: u64, window_id: u64) {
        let due = self.streams.get(&key).is_some_and(|s| {
            s.shared.status.failure().is_none()
                && s.judge.open_window_id().is_some_and(|w| w <= window_id)
        });
        if !due {
            return;
        }
        let permit = match self.mint_for(key).clone().try_reserve_owned() {
            Ok(p) => p,
            Err(_) => {
                self.stats.closes_deferred.fetch_add(1, Ordering::SeqCst);
                return;
            }
        };
        let Some(s) = self.streams.get_mut(&key) else {
            return;
        };
        match s.judge.close_window() {
            Ok(Some(judged)) => {
                permit.send(MintCmd::Window { key, judged });
            }
            Ok(None) => {}
            Err(e) => s.shared.status.fail(&e.to_string()),
        }
    }

    /// Stops taking the stream's ticks and ends its judge; the last window goes back to the
    /// handle, which sends it to the mint shard behind every window already handed over (so
    /// the verdict shard never waits on a full mint queue). `None`: the stream is not on
    /// this shard (a clone of its handle closed it first).
    fn close(&mut self, key: u64) -> Option<Option<JudgedWindow>> {
        let mut s = self.streams.remove(&key)?;
        s.shared.closing.store(true, Ordering::SeqCst);
        match s.judge.finish() {
            Ok(last) => Some(last),
            Err(e) => {
                // A poisoned judge already failed the stream; the mint shard reports it.
                s.shared.status.fail(&e.to_string());
                Some(None)
            }
        }
    }

    fn refuse(&self, shared: &StreamShared, e: LiveError) -> Result<Option<WindowVerdict>> {
        shared.refused.fetch_add(1, Ordering::SeqCst);
        self.stats.refused.fetch_add(1, Ordering::SeqCst);
        match e {
            LiveError::WindowClosed { .. } => {
                shared.refused_closed.fetch_add(1, Ordering::SeqCst);
                self.stats.refused_closed.fetch_add(1, Ordering::SeqCst);
            }
            LiveError::Overloaded { .. } => {
                self.stats.refused_overloaded.fetch_add(1, Ordering::SeqCst);
            }
            _ => {}
        }
        Err(e)
    }

    /// The clock's checks of a tick before its judge sees it (`spec/LIVE.md` section 1).
    fn clock_check(shared: &StreamShared, tick: &Tick, now_ns: u64) -> Result<()> {
        let w = tick.window_id;
        let deadline = w
            .saturating_add(1)
            .saturating_mul(shared.window_ns)
            .saturating_add(shared.grace_ns);
        let newest = shared.newest.load(Ordering::SeqCst);
        if now_ns >= deadline || (newest != NONE && w < newest) {
            return Err(LiveError::WindowClosed {
                window_id: w,
                ts_ns: tick.ts_ns,
                now_ns,
            });
        }
        if tick.ts_ns > now_ns.saturating_add(shared.grace_ns) {
            return Err(LiveError::TickFromFuture {
                ts_ns: tick.ts_ns,
                now_ns,
            });
        }
        Ok(())
    }

    fn tick(&mut self, key: u64, tick: Tick, now_ns: u64) -> Result<Option<WindowVerdict>> {
        let Some(state) = self.streams.get(&key) else {
            return Err(LiveError::StreamClosed {
                stream_id: String::new(),
            });
        };
        let shared = state.shared.clone();
        if let Some(reason) = shared.status.failure() {
            return self.refuse(
                &shared,
                LiveError::StreamFailed {
                    stream_id: shared.stream_id.clone(),
                    reason,
                },
            );
        }
        if let Err(e) = Self::clock_check(&shared, &tick, now_ns) {
            return self.refuse(&shared, e);
        }
        let barge_in = matches!(tick.kind, TickKind::Marker(TickMarker::BargeIn));
        if barge_in && state.barge_ins >= MAX_BARGE_INS {
            let e =
                jouleclaw_stop_latency::StopLatencyError::TooManyBargeIns { max: MAX_BARGE_INS };
            return self.refuse(&shared, LiveError::StopLatency(e));
        }
        let w = tick.window_id;
        // A tick of a later window closes the open one: it is accepted only with a slot for
        // that window in the mint queue.
        let permit = if state.judge.open_window_id().is_some_and(|open| open < w) {
            match self.mint_for(key).clone().try_reserve_owned() {
                Ok(p) => Some(p),
                Err(_) => {
                    let capacity = self.mint_queue;
                    return self.refuse(&shared, LiveError::Overloaded { capacity });
                }
            }
        } else {
            None
        };
        let Some(state) = self.streams.get_mut(&key) else {
            return Err(LiveError::Internal {
                invariant: "the stream is on its verdict shard",
            });
        };
        let (channel_id, ts_ns) = (tick.channel_id, tick.ts_ns);
        let outcome = match state.judge.push(tick) {
            Ok(o) => o,
            Err(e) => {
                let e = match e {
                    // The clock closed the window in the judge.
                    PipelineError::WindowRegressed { got, .. } => LiveError::WindowClosed {
                        window_id: got,
                        ts_ns,
                        now_ns,
                    },
                    e => {
                        if state.judge.is_poisoned() {
                            shared.status.fail(&e.to_string());
                        }
                        LiveError::Pipeline(e)
                    }
                };
                return self.refuse(&shared, e);
            }
        };
        if let Some(judged) = outcome.closed {
            match permit {
                Some(permit) => {
                    permit.send(MintCmd::Window { key, judged });
                }
                None => shared.status.fail(
                    &LiveError::Internal {
                        invariant: "a window closes only on a tick of a later window",
                    }
                    .to_string(),
                ),
            }
        }
        if barge_in {
            state.barge_ins += 1;
        }
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        self.stats.accepted.fetch_add(1, Ordering::SeqCst);
        let newest = shared.newest.load(Ordering::SeqCst);
        if newest == NONE || w > newest {
            shared.newest.store(w, Ordering::SeqCst);
            shared.newest_changed.notify_one();
        }
        if let Some(verdict) = &outcome.early {
            let _ = shared.verdicts.send(VerdictEvent {
                window_id: w,
                ts_ns: outcome.ts_ns,
                channel_id,
                verdict: verdict.clone(),
            });
        }
        Ok(outcome.early)
    }
}

/// A stream on its mint shard: its one [`Notary`], its stop-latency and interaction meters, the
/// receipts since its last checkpoint and the number of checkpoints handed to the sink.
struct MState {
    shared: Arc<StreamShared>,
    notary: Notary,
    meter: StopLatencyMeter,
    /// 9 bytes per frame (200 ms) of stream time, at most `jouleclaw_interaction::MAX_FRAMES`.
    interaction: InteractionMeter,
    receipts: Vec<ReceiptItem>,
    checkpoints: u64,
}

impl MState {
    /// Takes a notarized window's receipt for the sink; returns the batch when the window
    /// completed a checkpoint.
    fn on_closed(
        &mut self,
        closed: ClosedWindow,
        steward: &str,
        now_ns: u64,
    ) -> Result<Option<SinkBatch>> {
        let window_id = closed.receipt.window_id;
        // The live signing policy signs every window (WindowSignatures::All).
        let Some(signed) = closed.signed else {
            return Err(LiveError::Internal {
                invariant: "every live window is signed on its own",
            });
        };
        self.receipts.push(ReceiptItem {
            window_id,
            cose_sign1: signed.cose_sign1,
            payload: closed.canonical,
        });
        Ok(closed.seal.map(|seal| self.batch(seal, steward, now_ns)))
    }

    /// The sink batch of a checkpoint: the receipts since the previous one.
    fn batch(&mut self, seal: SealBatch, steward: &str, now_ns: u64) -> SinkBatch {
        let seq = self.checkpoints;
        self.checkpoints += 1;
        SinkBatch {
            stream_id: self.shared.stream_id.clone(),
            steward: steward.to_owned(),
            seq,
            is_final: seal.checkpoint.seal.is_final,
            receipts: core::mem::take(&mut self.receipts),
            checkpoint: seal.checkpoint.cose_sign1,
            stop_latency: None,
            interaction_metrics: None,
            created_ns: now_ns,
            status: self.shared.status.clone(),
        }
    }
}

/// Mints, signs and seals (off the push path): one [`Notary`] per stream, one message per
/// closed window.
struct MintShard {
    rx: mpsc::Receiver<MintCmd>,
    streams: HashMap<u64, MState>,
    steward: String,
    spec: Arc<StreamSpec>,
    signer: Arc<dyn Signer + Send + Sync>,
    sink: mpsc::Sender<SinkBatch>,
    clock: Arc<dyn Clock>,
    stats: Arc<SubstrateStats>,
}

impl MintShard {
    fn run(mut self) {
        while let Some(cmd) = self.rx.blocking_recv() {
            match cmd {
                MintCmd::Open {
                    shared,
                    notary,
                    interaction,
                } => {
                    self.streams.insert(
                        shared.key,
                        MState {
                            shared,
                            notary: *notary,
                            meter: StopLatencyMeter::new(),
                            interaction,
                            receipts: Vec::new(),
                            checkpoints: 0,
                        },
                    );
                }
                MintCmd::Window { key, judged } => {
                    if let Err((shared, e)) = self.notarize(key, judged) {
                        shared.status.fail(&e.to_string());
                    }
                }
                MintCmd::Close { key, last, reply } => {
                    let _ = reply.send(self.close(key, last));
                }
                MintCmd::Stop => return,
            }
        }
    }

    /// Notarizes one of the stream's windows and hands a completed checkpoint to the sink. A
    /// stream that failed takes nothing more.
    fn notarize(
        &mut self,
        key: u64,
        judged: JudgedWindow,
    ) -> core::result::Result<(), (Arc<StreamShared>, LiveError)> {
        let Some(s) = self.streams.get_mut(&key) else {
            return Ok(());
        };
        if s.shared.status.failure().is_some() {
            return Ok(());
        }
        let fail = |s: &MState, e: LiveError| (s.shared.clone(), e);
        let (verdict, finding) = kinds(&judged);
        // The meters see the window's ticks in push order, before the notary takes them.
        for tick in judged.window().ticks() {
            let Some(channel) = self.spec.channel(tick.channel_id) else {
                return Err(fail(
                    s,
                    LiveError::Internal {
                        invariant: "every accepted tick is on a channel of the spec",
                    },
                ));
            };
            if let Err(e) = s.meter.observe(tick, channel.direction) {
                return Err(fail(s, LiveError::StopLatency(e)));
            }
            if let Err(e) = s.interaction.observe(tick, channel.direction) {
                return Err(fail(s, LiveError::Interaction(e)));
            }
        }
        let closed = match s.notary.notarize(judged, self.signer.as_ref()) {
            Ok(c) => c,
            Err(e) => return Err(fail(s, LiveError::Pipeline(e))),
        };
        self.stats.windows.fetch_add(1, Ordering::SeqCst);
        self.stats.verdicts[verdict].fetch_add(1, Ordering::SeqCst);
        self.stats.findings[finding].fetch_add(1, Ordering::SeqCst);
        match s.on_closed(closed, &self.steward, self.clock.now_ns()) {
            Ok(Some(batch)) => {
                let shared = s.shared.clone();
                self.hand_over(&shared, batch);
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(e) => Err(fail(s, e)),
        }
    }

    fn hand_over(&self, shared: &StreamShared, batch: SinkBatch) {
        self.stats.checkpoints.fetch_add(1, Ordering::SeqCst);
        // Back-pressure: a full sink queue holds this shard, whose queue then fills, and
        // pushes are refused as overloaded.
        if self.sink.blocking_send(batch).is_err() {
            shared.status.fail("the sink stopped");
        }
    }

    /// Ends the stream's meter and signs its `stop-latency/1` document over the receipts the
    /// final seal covers (its root is the root over the receipts' content hashes, its size
    /// their count: `spec/STOP-LATENCY-V1.md`).
    fn stop_latency(&self, s: &mut MState, window_count: u64, root: [u8; 32]) -> Result<Vec<u8>> {
        s.meter.finish();
        let doc = StopLatencyDocument {
            steward: self.steward.clone(),
            stream_id: s.shared.stream_id.clone(),
            window_count,
            receipts_root: root,
            barge_ins: s.meter.barge_ins().to_vec(),
            vantage: None,
        };
        Ok(jouleclaw_stop_latency::sign(self.signer.as_ref(), &doc)?.cose_sign1)
    }

    /// Ends the stream's interaction meter and signs its `interaction-metrics/1` document over
    /// the receipts the final seal covers (`spec/INTERACTION-METRICS-V1.md`: the same root
    /// and count as the stop-latency document's).
    fn interaction(&self, s: &mut MState, window_count: u64, root: [u8; 32]) -> Result<Vec<u8>> {
        let frame_count = s.interaction.frame_count();
        let config = *s.interaction.config();
        let events = s.interaction.finish()?.to_vec();
        let doc = InteractionDocument {
            steward: self.steward.clone(),
            stream_id: s.shared.stream_id.clone(),
            window_count,
            receipts_root: root,
            config,
            frame_count,
            events,
        };
        Ok(jouleclaw_interaction::sign(self.signer.as_ref(), &doc)?.cose_sign1)
    }

    /// Notarizes the stream's last window, signs its final checkpoint and hands it over. A
    /// checkpoint may just have been signed with nothing pending: the final one then carries
    /// no new receipt (the sealer allows it; the seal chain stays one stream).
    fn close(&mut self, key: u64, last: Option<JudgedWindow>) -> Result<StreamSummary> {
        let failed = |shared: &StreamShared, reason: String| LiveError::StreamFailed {
            stream_id: shared.stream_id.clone(),
            reason,
        };
        if let Some(judged) = last
            && let Err((shared, e)) = self.notarize(key, judged)
        {
            shared.status.fail(&e.to_string());
        }
        let Some(mut s) = self.streams.remove(&key) else {
            return Err(LiveError::Internal {
                invariant: "the stream is on its mint shard",
            });
        };
        let shared = s.shared.clone();
        if let Some(reason) = shared.status.failure() {
            return Err(failed(&shared, reason));
        }
        let mut final_seal = None;
        // The documents first, over every receipt; then the final seal (stream-seal/2) that
        // commits to them.
        let documents = match s.notary.sealed_so_far() {
            Some((n, root)) if n > 0 => match self
                .stop_latency(&mut s, n, root)
                .and_then(|sl| Ok((sl, self.interaction(&mut s, n, root)?)))
            {
                Ok(docs) => Some(docs),
                Err(e) => {
                    shared.status.fail(&e.to_string());
                    return Err(failed(&shared, e.to_string()));
                }
            },
            _ => None,
        };
        let finished = match &documents {
            Some((stop_latency, interaction)) => s.notary.finish_with_documents(
                self.signer.as_ref(),
                [
                    (
                        jouleclaw_stop_latency::STOP_LATENCY_SCHEMA.to_owned(),
                        jouleclaw_seal::document_digest(stop_latency),
                    ),
                    (
                        jouleclaw_interaction::INTERACTION_SCHEMA.to_owned(),
                        jouleclaw_seal::document_digest(interaction),
                    ),
                ]
                .into_iter()
                .collect(),
            ),
            None => s.notary.finish(self.signer.as_ref()),
        };
        match finished {
            Ok(Some(seal)) => {
                let Some((stop_latency, interaction)) = documents else {
                    return Err(LiveError::Internal {
                        invariant: "a sealed stream has its documents",
                    });
                };
                let mut batch = s.batch(seal, &self.steward, self.clock.now_ns());
                batch.stop_latency = Some(stop_latency);
                batch.interaction_metrics = Some(interaction);
                final_seal = Some(batch.checkpoint.clone());
                self.hand_over(&shared, batch);
            }
            Ok(None) => {}
            Err(e) => {
                let e = LiveError::Pipeline(e);
                shared.status.fail(&e.to_string());
                return Err(failed(&shared, e.to_string()));
            }
        }
        Ok(StreamSummary {
            stream_id: shared.stream_id.clone(),
            windows: s.notary.windows(),
            checkpoints: s.checkpoints,
            accepted: shared.accepted.load(Ordering::SeqCst),
            refused: shared.refused.load(Ordering::SeqCst),
            refused_closed: shared.refused_closed.load(Ordering::SeqCst),
            final_seal,
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_is_internal_not_config() {
        let e = poisoned();
        assert_eq!(e.code(), "internal", "{e}");
    }

    #[tokio::test]
    async fn a_failed_shard_join_is_internal_not_config() {
        let join = tokio::task::spawn_blocking(|| std::panic::resume_unwind(Box::new("shard")))
            .await
            .unwrap_err();
        let e = shard_join_failed(join);
        assert_eq!(e.code(), "internal", "{e}");
    }
}
