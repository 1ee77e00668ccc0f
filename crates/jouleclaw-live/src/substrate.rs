//! [`Substrate`]: many live streams on shard threads, windows closed on the clock, receipts
//! sealed and handed to a sink off the push path.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use jouleclaw_jcr1::Estimator;
use jouleclaw_jcr1::cose::{PublicKey, Signer};
use jouleclaw_pipeline::{
    ClosedAt, ClosedWindow, Pipeline, PipelineConfig, PipelineError, duplex_voice_oracle,
};
use jouleclaw_seal::StreamSealer;
use jouleclaw_stream::{StreamSpec, Tick};
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
    /// Bound of each mint shard's inbound queue (accepted ticks and window closes).
    pub mint_queue: usize,
    /// Bound of the sink's inbound queue, in batches.
    pub sink_queue: usize,
    /// Bound of each stream's verdict broadcast (a slower subscriber sees `Lagged`).
    pub verdict_broadcast: usize,
    /// Most streams open at once.
    pub max_streams: usize,
    /// Most windows one stream may close (the sealer's log bound).
    pub max_windows_per_stream: u64,
}

impl SubstrateConfig {
    /// Defaults for the duplex-voice spec: grace 20 ms, a checkpoint every 25 windows (5 s of
    /// 200 ms windows), two shards of each kind, queues of 4,096 / 16,384 / 1,024 items,
    /// broadcasts of 64 verdicts, 10,000 streams of at most 1,048,576 windows.
    pub fn new(steward: &str) -> Self {
        Self {
            steward: steward.to_owned(),
            spec: StreamSpec::duplex_voice_default(),
            grace_ns: 20_000_000,
            checkpoint_every: 25,
            verdict_shards: 2,
            mint_shards: 2,
            verdict_queue: 4096,
            mint_queue: 16_384,
            sink_queue: 1024,
            verdict_broadcast: 64,
            max_streams: 10_000,
            max_windows_per_stream: 1 << 20,
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
    /// Streams sealed.
    pub streams_sealed: AtomicU64,
    /// Streams failed.
    pub streams_failed: AtomicU64,
    /// Window closes on the clock deferred because a mint queue was full (the window then
    /// closes at the stream's next tick of a later window or at its close).
    pub closes_deferred: AtomicU64,
}

/// A signer shared by the mint shards.
struct SharedSigner(Arc<dyn Signer + Send + Sync>);

impl Signer for SharedSigner {
    fn verifying_key(&self) -> PublicKey {
        self.0.verifying_key()
    }
    fn sign(&self, tbs: &[u8]) -> jouleclaw_jcr1::Result<[u8; 64]> {
        self.0.sign(tbs)
    }
}

/// The verdict shards' pipelines never publish a signature: their receipts are dropped. It
/// signs nothing so that the push path never pays for Ed25519.
struct DiscardSigner(PublicKey);

impl Signer for DiscardSigner {
    fn verifying_key(&self) -> PublicKey {
        self.0
    }
    fn sign(&self, _tbs: &[u8]) -> jouleclaw_jcr1::Result<[u8; 64]> {
        Ok([0; 64])
    }
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
    Open(Arc<StreamShared>),
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
    /// Stops forwarding the stream's ticks; the handle then sends the mint shard its close
    /// (so the verdict shard never waits on a full mint queue).
    Close {
        key: u64,
        reply: oneshot::Sender<Result<()>>,
    },
    Stop,
}

enum MintCmd {
    Open(Arc<StreamShared>),
    Tick {
        key: u64,
        tick: Tick,
    },
    CloseDue {
        key: u64,
        window_id: u64,
    },
    Close {
        key: u64,
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
        let sink_task = tokio::spawn(sink.run(
            sink_rx,
            SinkContext {
                stats: sink_stats.clone(),
                clock: clock.clone(),
            },
        ));
        let key = signer.verifying_key();
        let mut threads = Vec::new();
        let mut mint_tx = Vec::new();
        for i in 0..config.mint_shards {
            let (tx, rx) = mpsc::channel(config.mint_queue);
            mint_tx.push(tx);
            let (spec, steward, signer, sink, clock, stats) = (
                spec.clone(),
                config.steward.clone(),
                signer.clone(),
                sink_tx.clone(),
                clock.clone(),
                stats.clone(),
            );
            let (checkpoint_every, max_windows) =
                (config.checkpoint_every, config.max_windows_per_stream);
            threads.push(spawn_thread(format!("jc-mint-{i}"), move || {
                // Pipelines are not Send: each shard builds and keeps its own.
                MintShard {
                    rx,
                    streams: HashMap::new(),
                    epoch_unix: clock.epoch_unix(),
                    spec,
                    steward,
                    checkpoint_every,
                    max_windows,
                    signer,
                    sink,
                    clock,
                    stats,
                }
                .run();
            })?);
        }
        let mut verdict_tx = Vec::new();
        for i in 0..config.verdict_shards {
            let (tx, rx) = mpsc::channel(config.verdict_queue);
            verdict_tx.push(tx);
            let (spec, steward, mint, stats) = (
                spec.clone(),
                config.steward.clone(),
                mint_tx.clone(),
                stats.clone(),
            );
            let mint_queue = config.mint_queue;
            threads.push(spawn_thread(format!("jc-verdict-{i}"), move || {
                VerdictShard {
                    rx,
                    streams: HashMap::new(),
                    spec,
                    steward,
                    key,
                    mint,
                    mint_queue,
                    stats,
                }
                .run();
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
        // Refuses ids the receipts cannot carry before anything is registered.
        let origin_ns = inner.clock.now_ns();
        build_pipeline(
            &inner.spec,
            &inner.config.steward,
            stream_id,
            inner.clock.epoch_unix(),
            origin_ns,
            Box::new(DiscardSigner(inner.key)),
        )?;
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
            status: Arc::new(StreamStatus::default()),
        });
        let vtx = self.verdict_tx(key).clone();
        let mtx = self.mint_tx(key).clone();
        // Open on the mint shard first: the verdict shard forwards ticks there.
        let opened = mtx.try_send(MintCmd::Open(shared.clone())).and_then(|()| {
            vtx.try_send(VerdictCmd::Open(shared.clone()))
                .map_err(|_| mpsc::error::TrySendError::Closed(MintCmd::Stop))
        });
        if opened.is_err() {
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
    /// `config`). Stops the shards, lets the sink finish every batch and returns its result.
    pub async fn shutdown(&self) -> Result<()> {
        let open = self.open_streams();
        if open > 0 {
            return Err(LiveError::Config {
                message: format!("{open} streams are still open; close them first"),
            });
        }
        self.inner.stopped.store(true, Ordering::SeqCst);
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
        .map_err(|e| LiveError::Config {
            message: format!("shard join: {e}"),
        })?;
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

fn poisoned() -> LiveError {
    LiveError::Config {
        message: "a lock was poisoned".to_owned(),
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

fn build_pipeline(
    spec: &Arc<StreamSpec>,
    steward: &str,
    stream_id: &str,
    epoch_unix: i64,
    origin_ns: u64,
    signer: Box<dyn Signer + Send>,
) -> Result<Pipeline> {
    // Stream time 0 is the clock's `origin_ns`: closed_at = epoch + (origin + end) / 1e9,
    // rounded down to the second; the shift keeps it exact for whole-second origins.
    let epoch = epoch_unix.saturating_add(i64::try_from(origin_ns / 1_000_000_000).unwrap_or(0));
    Pipeline::new(
        spec.clone(),
        PipelineConfig::new(steward, stream_id)
            .with_closed_at(ClosedAt::StreamTime { epoch_unix: epoch }),
        duplex_voice_oracle(),
        Estimator::default(),
        signer,
    )
    .map_err(|e| LiveError::pipeline(&e))
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
        rx.await.map_err(|_| self.closed())??;
        // Every tick the verdict shard accepted is already in the mint queue, ahead of this.
        let (reply, rx) = oneshot::channel();
        self.mint_tx
            .send(MintCmd::Close {
                key: self.shared.key,
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

struct VState {
    shared: Arc<StreamShared>,
    pipeline: Pipeline,
    closed_through: Option<u64>,
}

struct VerdictShard {
    rx: mpsc::Receiver<VerdictCmd>,
    streams: HashMap<u64, VState>,
    spec: Arc<StreamSpec>,
    steward: String,
    key: PublicKey,
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
                VerdictCmd::Open(shared) => {
                    // Validated by open_stream; a failure here cannot happen, but is handled.
                    match build_pipeline(
                        &self.spec,
                        &self.steward,
                        &shared.stream_id,
                        0,
                        0,
                        Box::new(DiscardSigner(self.key)),
                    ) {
                        Ok(pipeline) => {
                            self.streams.insert(
                                shared.key,
                                VState {
                                    shared,
                                    pipeline,
                                    closed_through: None,
                                },
                            );
                        }
                        Err(e) => shared.status.fail(&e.to_string()),
                    }
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
                VerdictCmd::CloseDue { key, window_id } => {
                    if let Some(s) = self.streams.get_mut(&key) {
                        s.closed_through =
                            Some(s.closed_through.map_or(window_id, |c| c.max(window_id)));
                        // Never waits: under overload the close is deferred to the stream's
                        // next tick of a later window or its close (counted).
                        if self
                            .mint_for(key)
                            .try_send(MintCmd::CloseDue { key, window_id })
                            .is_err()
                        {
                            self.stats.closes_deferred.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
                VerdictCmd::Close { key, reply } => match self.streams.remove(&key) {
                    Some(s) => {
                        s.shared.closing.store(true, Ordering::SeqCst);
                        let _ = reply.send(Ok(()));
                    }
                    None => {
                        let _ = reply.send(Err(LiveError::Config {
                            message: "stream already closed".to_owned(),
                        }));
                    }
                },
                VerdictCmd::Stop => {
                    for tx in &self.mint {
                        let _ = tx.blocking_send(MintCmd::Stop);
                    }
                    return;
                }
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
        let w = tick.window_id;
        let deadline = w
            .saturating_add(1)
            .saturating_mul(shared.window_ns)
            .saturating_add(shared.grace_ns);
        let newest = shared.newest.load(Ordering::SeqCst);
        let closed_by_later = newest != NONE && w < newest;
        let closed_by_timer = state.closed_through.is_some_and(|c| w <= c);
        if now_ns >= deadline || closed_by_later || closed_by_timer {
            return self.refuse(
                &shared,
                LiveError::WindowClosed {
                    window_id: w,
                    ts_ns: tick.ts_ns,
                    now_ns,
                },
            );
        }
        if tick.ts_ns > now_ns.saturating_add(shared.grace_ns) {
            return self.refuse(
                &shared,
                LiveError::TickFromFuture {
                    ts_ns: tick.ts_ns,
                    now_ns,
                },
            );
        }
        let mint = self.mint_for(key).clone();
        let permit = match mint.try_reserve() {
            Ok(p) => p,
            Err(_) => {
                let capacity = self.mint_queue;
                return self.refuse(&shared, LiveError::Overloaded { capacity });
            }
        };
        let Some(state) = self.streams.get_mut(&key) else {
            return Err(LiveError::Config {
                message: "no such stream on this shard".to_owned(),
            });
        };
        let channel_id = tick.channel_id;
        let outcome = match state.pipeline.push(tick.clone()) {
            Ok(o) => o,
            Err(e) => {
                if matches!(e, PipelineError::Poisoned) {
                    shared.status.fail(&e.to_string());
                }
                let e = LiveError::pipeline(&e);
                return self.refuse(&shared, e);
            }
        };
        permit.send(MintCmd::Tick { key, tick });
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        self.stats.accepted.fetch_add(1, Ordering::SeqCst);
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

/// A checkpoint due: its sequence number, finality, the sealer's batch and the receipts.
type Due = (u64, bool, jouleclaw_seal::SealBatch, Vec<ReceiptItem>);

/// Drives a [`StreamSealer`] beside the pipeline: every closed window is appended, a
/// checkpoint is signed every `every` windows and a final one at close. This is the one place
/// that changes when the pipeline signs checkpoints itself.
struct Sealing {
    sealer: StreamSealer,
    every: u64,
    receipts: Vec<ReceiptItem>,
    seq: u64,
    windows: u64,
}

impl Sealing {
    fn new(stream_id: &str, steward: &str, every: u64, max_windows: u64) -> Self {
        Self {
            sealer: StreamSealer::new(stream_id, steward, max_windows),
            every,
            receipts: Vec::new(),
            seq: 0,
            windows: 0,
        }
    }

    /// Appends a closed window; returns a batch when a checkpoint is due.
    fn on_closed(&mut self, closed: &ClosedWindow, signer: &dyn Signer) -> Result<Option<Due>> {
        self.sealer
            .append(
                closed.receipt.window_id,
                closed.content_hash.as_bytes(),
                closed.receipt.closed_at,
            )
            .map_err(|e| LiveError::seal(&e))?;
        // The minting pipeline signs every window (SigningPolicy::EveryWindow).
        let Some(cose_sign1) = closed.cose_sign1().map(<[u8]>::to_vec) else {
            return Err(LiveError::Pipeline {
                code: "window_not_signed",
                message: format!(
                    "window {} has no signature of its own",
                    closed.receipt.window_id
                ),
            });
        };
        self.windows += 1;
        self.receipts.push(ReceiptItem {
            window_id: closed.receipt.window_id,
            cose_sign1,
            payload: closed.canonical_bytes().to_vec(),
        });
        if self.sealer.pending() >= self.every {
            return self.checkpoint(signer, false).map(Some);
        }
        Ok(None)
    }

    /// The final checkpoint; `None` when the stream never closed a window (nothing to seal).
    fn finish(&mut self, signer: &dyn Signer) -> Result<Option<Due>> {
        if self.sealer.size() == 0 {
            return Ok(None);
        }
        self.checkpoint(signer, true).map(Some)
    }

    fn checkpoint(&mut self, signer: &dyn Signer, is_final: bool) -> Result<Due> {
        let batch = self
            .sealer
            .checkpoint(signer, is_final)
            .map_err(|e| LiveError::seal(&e))?;
        let seq = self.seq;
        self.seq += 1;
        Ok((seq, is_final, batch, core::mem::take(&mut self.receipts)))
    }
}

struct MState {
    shared: Arc<StreamShared>,
    pipeline: Pipeline,
    sealing: Sealing,
}

struct MintShard {
    rx: mpsc::Receiver<MintCmd>,
    streams: HashMap<u64, MState>,
    spec: Arc<StreamSpec>,
    steward: String,
    checkpoint_every: u64,
    max_windows: u64,
    epoch_unix: i64,
    signer: Arc<dyn Signer + Send + Sync>,
    sink: mpsc::Sender<SinkBatch>,
    clock: Arc<dyn Clock>,
    stats: Arc<SubstrateStats>,
}

impl MintShard {
    fn run(mut self) {
        while let Some(cmd) = self.rx.blocking_recv() {
            match cmd {
                MintCmd::Open(shared) => {
                    match build_pipeline(
                        &self.spec,
                        &self.steward,
                        &shared.stream_id,
                        self.epoch_unix,
                        shared.origin_ns,
                        Box::new(SharedSigner(self.signer.clone())),
                    ) {
                        Ok(pipeline) => {
                            let sealing = Sealing::new(
                                &shared.stream_id,
                                &self.steward,
                                self.checkpoint_every,
                                self.max_windows,
                            );
                            self.streams.insert(
                                shared.key,
                                MState {
                                    shared,
                                    pipeline,
                                    sealing,
                                },
                            );
                        }
                        Err(e) => shared.status.fail(&e.to_string()),
                    }
                }
                MintCmd::Tick { key, tick } => {
                    if let Some(s) = self.streams.get_mut(&key)
                        && s.shared.status.failure().is_none()
                    {
                        let r = s
                            .pipeline
                            .push(tick)
                            .map_err(|e| LiveError::pipeline(&e))
                            .map(|o| o.closed);
                        self.after(key, r);
                    }
                }
                MintCmd::CloseDue { key, window_id } => {
                    if let Some(s) = self.streams.get_mut(&key)
                        && s.shared.status.failure().is_none()
                        && s.pipeline.open_window_id().is_some_and(|w| w <= window_id)
                    {
                        let r = s
                            .pipeline
                            .close_window()
                            .map_err(|e| LiveError::pipeline(&e));
                        self.after(key, r);
                    }
                }
                MintCmd::Close { key, reply } => {
                    let _ = reply.send(self.close(key));
                }
                MintCmd::Stop => return,
            }
        }
    }

    fn after(&mut self, key: u64, closed: Result<Option<ClosedWindow>>) {
        let signer = SharedSigner(self.signer.clone());
        let Some(s) = self.streams.get_mut(&key) else {
            return;
        };
        let result = closed.and_then(|c| match c {
            Some(c) => {
                self.stats.windows.fetch_add(1, Ordering::SeqCst);
                s.sealing.on_closed(&c, &signer)
            }
            None => Ok(None),
        });
        match result {
            Ok(Some(batch)) => {
                let shared = s.shared.clone();
                self.hand_over(&shared, batch);
            }
            Ok(None) => {}
            Err(e) => s.shared.status.fail(&e.to_string()),
        }
    }

    fn hand_over(
        &self,
        shared: &StreamShared,
        (seq, is_final, batch, receipts): (u64, bool, jouleclaw_seal::SealBatch, Vec<ReceiptItem>),
    ) {
        self.stats.checkpoints.fetch_add(1, Ordering::SeqCst);
        let b = SinkBatch {
            stream_id: shared.stream_id.clone(),
            steward: self.steward.clone(),
            seq,
            is_final,
            receipts,
            checkpoint: batch.checkpoint.cose_sign1.clone(),
            inclusion: batch.inclusion,
            created_ns: self.clock.now_ns(),
            status: shared.status.clone(),
        };
        // Back-pressure: a full sink queue holds this shard, whose queue then fills, and
        // pushes are refused as overloaded.
        if self.sink.blocking_send(b).is_err() {
            shared.status.fail("the sink stopped");
        }
    }

    fn close(&mut self, key: u64) -> Result<StreamSummary> {
        let signer = SharedSigner(self.signer.clone());
        let Some(mut s) = self.streams.remove(&key) else {
            return Err(LiveError::Config {
                message: "no such stream on this shard".to_owned(),
            });
        };
        let shared = s.shared.clone();
        let fail = |e: LiveError| -> Result<StreamSummary> {
            shared.status.fail(&e.to_string());
            Err(LiveError::StreamFailed {
                stream_id: shared.stream_id.clone(),
                reason: e.to_string(),
            })
        };
        if let Some(reason) = shared.status.failure() {
            return Err(LiveError::StreamFailed {
                stream_id: shared.stream_id.clone(),
                reason,
            });
        }
        match s.pipeline.close_window() {
            Ok(Some(c)) => {
                self.stats.windows.fetch_add(1, Ordering::SeqCst);
                match s.sealing.on_closed(&c, &signer) {
                    Ok(Some(b)) => self.hand_over(&shared, b),
                    Ok(None) => {}
                    Err(e) => return fail(e),
                }
            }
            Ok(None) => {}
            Err(e) => return fail(LiveError::pipeline(&e)),
        }
        // A checkpoint may just have been signed with nothing pending: the final one then
        // carries no new receipt (the sealer allows it; the seal chain stays one stream).
        match s.sealing.finish(&signer) {
            Ok(Some(b)) => self.hand_over(&shared, b),
            Ok(None) => {}
            Err(e) => return fail(e),
        }
        Ok(StreamSummary {
            stream_id: shared.stream_id.clone(),
            windows: s.sealing.windows,
            checkpoints: s.sealing.seq,
            accepted: shared.accepted.load(Ordering::SeqCst),
            refused: shared.refused.load(Ordering::SeqCst),
            refused_closed: shared.refused_closed.load(Ordering::SeqCst),
        })
    }
}
