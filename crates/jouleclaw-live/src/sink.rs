//! The receipt sink seam: what a stream hands over at each checkpoint, and the sinks' shared
//! counters.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::mpsc;

use crate::clock::{BoxFuture, Clock};
use crate::error::Result;

/// One receipt as minted and signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptItem {
    /// The receipt's window.
    pub window_id: u64,
    /// The tagged COSE_Sign1 bytes.
    pub cose_sign1: Vec<u8>,
    /// The canonical JSON payload (the receipt's `stream-window/1` bytes).
    pub payload: Vec<u8>,
}

/// What a stream hands to its sink at one checkpoint: the receipts minted since the previous
/// checkpoint, in window order, and the signed checkpoint; the final batch also carries the
/// stream's signed stop-latency and interaction-metrics documents. One batch is one unit of
/// durability. No inclusion receipt is minted or stored: each is derivable from the
/// checkpoint and the receipts it seals (`jouleclaw_seal::SignedCheckpoint::inclusion_receipts`,
/// `spec/STREAM-AT-REST.md` layout `stream-at-rest/2`).
#[derive(Debug, Clone)]
pub struct SinkBatch {
    /// The stream.
    pub stream_id: String,
    /// Its steward.
    pub steward: String,
    /// The checkpoint's position in the stream (0, 1, ...).
    pub seq: u64,
    /// Whether this checkpoint seals the stream.
    pub is_final: bool,
    /// The receipts since the previous checkpoint.
    pub receipts: Vec<ReceiptItem>,
    /// The signed `stream-seal/1` checkpoint (tagged COSE_Sign1).
    pub checkpoint: Vec<u8>,
    /// The stream's signed `stop-latency/1` document (tagged COSE_Sign1,
    /// `spec/STOP-LATENCY-V1.md`): in the final batch, `None` in every other one.
    pub stop_latency: Option<Vec<u8>>,
    /// The stream's signed `interaction-metrics/1` document (tagged COSE_Sign1,
    /// `spec/INTERACTION-METRICS-V1.md`): in the final batch, `None` in every other one.
    pub interaction_metrics: Option<Vec<u8>>,
    /// The stream clock (substrate clock, ns) when the checkpoint was signed.
    pub created_ns: u64,
    /// The stream's status, which the sink updates.
    pub status: Arc<StreamStatus>,
}

/// A stream's durability and failure state, shared by its handle, its workers and the sink.
#[derive(Debug, Default)]
pub struct StreamStatus {
    failed: AtomicBool,
    reason: Mutex<Option<String>>,
    durable_checkpoints: AtomicU64,
    durable_receipts: AtomicU64,
    sealed_durable: AtomicBool,
    /// Counts this stream once when it first fails (the substrate's
    /// [`SubstrateStats::failed_streams`](crate::SubstrateStats::failed_streams)).
    failed_streams: Option<Arc<AtomicU64>>,
}

impl StreamStatus {
    /// A status that adds 1 to `failed_streams` when the stream first fails, whoever fails
    /// it (its workers, the sink) and however often.
    pub fn counted(failed_streams: Arc<AtomicU64>) -> Self {
        Self {
            failed_streams: Some(failed_streams),
            ..Self::default()
        }
    }

    /// Marks the stream failed (the first reason is kept).
    pub fn fail(&self, reason: &str) {
        self.fail_first(reason);
    }

    /// [`StreamStatus::fail`], returning whether this was the stream's first failure.
    pub fn fail_first(&self, reason: &str) -> bool {
        if let Ok(mut r) = self.reason.lock()
            && r.is_none()
        {
            *r = Some(reason.to_owned());
        }
        let first = !self.failed.swap(true, Ordering::SeqCst);
        if first && let Some(c) = &self.failed_streams {
            c.fetch_add(1, Ordering::SeqCst);
        }
        first
    }

    /// Why the stream failed, if it did.
    pub fn failure(&self) -> Option<String> {
        if !self.failed.load(Ordering::SeqCst) {
            return None;
        }
        self.reason
            .lock()
            .ok()
            .and_then(|r| r.clone())
            .or_else(|| Some("failed".to_owned()))
    }

    /// Records that a batch is durable.
    pub fn durable(&self, batch: &SinkBatch) {
        self.durable_checkpoints.fetch_add(1, Ordering::SeqCst);
        self.durable_receipts
            .fetch_add(batch.receipts.len() as u64, Ordering::SeqCst);
        if batch.is_final {
            self.sealed_durable.store(true, Ordering::SeqCst);
        }
    }

    /// Checkpoints durable so far.
    pub fn durable_checkpoints(&self) -> u64 {
        self.durable_checkpoints.load(Ordering::SeqCst)
    }

    /// Receipts durable so far.
    pub fn durable_receipts(&self) -> u64 {
        self.durable_receipts.load(Ordering::SeqCst)
    }

    /// Whether the final seal is durable.
    pub fn sealed_durable(&self) -> bool {
        self.sealed_durable.load(Ordering::SeqCst)
    }
}

/// Counters every sink keeps (read by progress lines and summaries).
#[derive(Debug, Default)]
pub struct SinkStats {
    /// Batches received from the streams.
    pub batches_in: AtomicU64,
    /// Batches durable (fsynced, or acknowledged by the cluster).
    pub batches_durable: AtomicU64,
    /// Receipts durable.
    pub receipts_durable: AtomicU64,
    /// Final seals durable.
    pub seals_durable: AtomicU64,
    /// Largest time from signing a checkpoint to its durability, ns.
    pub max_lag_ns: AtomicU64,
    /// Sum of those times, ns (mean = sum / batches_durable).
    pub sum_lag_ns: AtomicU64,
    /// Publish attempts that failed and were retried.
    pub retries: AtomicU64,
    /// Batches written to the local journal (the JetStream sink journals every batch before
    /// publishing it).
    pub journaled: AtomicU64,
    /// Bytes of undelivered batches in the local journal now.
    pub journal_bytes: AtomicU64,
    /// Batches that used up their publish attempts and wait in the journal for the cluster.
    pub spilled: AtomicU64,
    /// Streams failed by the sink (each once: the batches of a stream already failed are
    /// not counted again).
    pub streams_failed: AtomicU64,
    /// Receipts received from the streams.
    pub receipts_in: AtomicU64,
    /// Receipts journaled and not yet acknowledged (in the journal, replayable).
    pub receipts_pending: AtomicU64,
    /// At the drain timeout: of the pending receipts, those never sent to the cluster.
    pub receipts_unsent: AtomicU64,
    /// At the drain timeout: of the pending receipts, those sent without an ack (the cluster
    /// may or may not hold them; a replay settles it without storing them twice).
    pub receipts_unknown_fate: AtomicU64,
    /// Receipts neither durable nor journaled: their stream failed (a full journal, a write
    /// error, a stream failed before).
    pub receipts_lost: AtomicU64,
    /// Whether the drain timed out with batches left in the journal.
    pub drain_timed_out: AtomicBool,
    /// When the sink ended: batches its journal file lists undelivered (checked by reading
    /// the file again as a replay would; `journal replay` delivers or marks them).
    pub journal_undelivered: AtomicU64,
    /// Of them, acknowledged by the cluster but without a delivered mark on disk (its write
    /// failed, also when retried): a replay finds them stored and marks them.
    pub journal_unmarked: AtomicU64,
    /// Journal writes (records, marks, `fsync`s) that failed and were cut back.
    pub journal_write_errors: AtomicU64,
    /// Batches by time from signing their checkpoint to their durability: entry `i` counts
    /// the lags in (`LAG_BUCKETS_MS[i-1]`, `LAG_BUCKETS_MS[i]`] ms (not cumulative); a lag past
    /// the last bound is counted in `batches_durable` only.
    pub lag_buckets: [AtomicU64; LAG_BUCKETS_MS.len()],
}

/// The upper bounds (ms) of [`SinkStats::lag_buckets`].
pub const LAG_BUCKETS_MS: [u64; 12] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 5_000, 30_000];

impl SinkStats {
    /// Records a durable batch at clock time `now_ns`.
    pub fn record_durable(&self, batch: &SinkBatch, now_ns: u64) {
        let lag = now_ns.saturating_sub(batch.created_ns);
        self.batches_durable.fetch_add(1, Ordering::SeqCst);
        self.receipts_durable
            .fetch_add(batch.receipts.len() as u64, Ordering::SeqCst);
        if batch.is_final {
            self.seals_durable.fetch_add(1, Ordering::SeqCst);
        }
        self.max_lag_ns.fetch_max(lag, Ordering::SeqCst);
        if let Some(i) = LAG_BUCKETS_MS
            .iter()
            .position(|b| lag <= b.saturating_mul(1_000_000))
        {
            self.lag_buckets[i].fetch_add(1, Ordering::SeqCst);
        }
        self.sum_lag_ns.fetch_add(lag, Ordering::SeqCst);
        batch.status.durable(batch);
    }
}

/// What a sink gets besides its batches.
#[derive(Clone)]
pub struct SinkContext {
    /// Shared counters.
    pub stats: Arc<SinkStats>,
    /// The substrate's clock (for lag).
    pub clock: Arc<dyn Clock>,
    /// Becomes `true` when the substrate's shutdown begins (every stream closed): a sink
    /// with a drain deadline counts it from then, also while it is not reading its queue.
    pub draining: tokio::sync::watch::Receiver<bool>,
}

/// A destination for receipts and seals. The substrate runs one sink task: `run` consumes the
/// batches in the order the streams produced them (per stream: checkpoint order) until the
/// channel closes, and returns an error only when the sink as a whole failed. A sink that
/// cannot make one stream's batch durable fails that stream ([`StreamStatus::fail`]) loudly
/// and goes on with the others.
pub trait ReceiptSink: Send + 'static {
    /// A short name for progress lines (`file:DIR`, `nats://...`).
    fn describe(&self) -> String;
    /// Consumes batches until `batches` closes.
    fn run(
        self: Box<Self>,
        batches: mpsc::Receiver<SinkBatch>,
        ctx: SinkContext,
    ) -> BoxFuture<'static, Result<()>>;
}

/// Escapes an id into one NATS subject token and one file name: ASCII letters, digits, `-`
/// and `_` stay; every other byte of the UTF-8 form is written `%XX` (upper-case hex). The
/// result is never empty for a non-empty id, contains no `.`, `*`, `>`, `/` or whitespace,
/// and `unescape_id` inverts it.
pub fn escape_id(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for b in id.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push_str(&format!("{b:02X}"));
        }
    }
    out
}

/// The inverse of [`escape_id`]; `None` for a token it cannot have written.
pub fn unescape_id(token: &str) -> Option<String> {
    let bytes = token.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'%' {
            let hex = token.get(i + 1..i + 3)?;
            // Two upper-case hex digits only (`u8::from_str_radix` would also take a sign:
            // `%+A` would be a second spelling of `%0A`).
            if !hex
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'A'..=b'F').contains(&c))
            {
                return None;
            }
            let v = u8::from_str_radix(hex, 16).ok()?;
            if v.is_ascii_alphanumeric() || v == b'-' || v == b'_' {
                return None;
            }
            out.push(v);
            i += 3;
        } else if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b);
            i += 1;
        } else {
            return None;
        }
    }
    String::from_utf8(out).ok()
}

/// The longest escaped id ([`escape_id`]) a sink stores: 200 bytes. A file name holds 255
/// bytes (`ID.partial` adds 8), and a subject `PREFIX.STEWARD.STREAM` stays far below the
/// NATS control line (4,096 bytes) with a prefix of up to [`MAX_PREFIX_BYTES`].
pub const MAX_ESCAPED_ID_BYTES: usize = 200;

/// The longest subject prefix the JetStream sink takes.
pub const MAX_PREFIX_BYTES: usize = 128;

/// Refuses (`id_too_long`) a stream id or steward whose escaped form is longer than
/// [`MAX_ESCAPED_ID_BYTES`], or an empty one: no sink could store its batches. The substrate
/// calls it at `open_stream`, before anything is minted; the sinks call it again per batch.
pub fn check_ids(steward: &str, stream_id: &str) -> Result<()> {
    for (what, id) in [("steward", steward), ("stream id", stream_id)] {
        let escaped = escape_id(id).len();
        if id.is_empty() || escaped > MAX_ESCAPED_ID_BYTES {
            return Err(crate::error::LiveError::IdTooLong {
                what,
                escaped_bytes: escaped,
                limit: MAX_ESCAPED_ID_BYTES,
            });
        }
    }
    Ok(())
}
