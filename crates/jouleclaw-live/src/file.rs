//! [`FileSink`]: receipts and seals in files, one folder per stream.
//!
//! Layout under the sink's folder `DIR`, with `ID` = [`escape_id`] of the
//! stream id:
//!
//! - `DIR/ID.partial/` while the stream is open, renamed atomically to `DIR/ID/` when the
//!   final seal is durable;
//! - `receipts.cbor`: the receipts' tagged COSE_Sign1, an RFC 8742 CBOR sequence in window
//!   order; `receipts.jsonl`: their canonical JSON payloads, one a line, same order;
//! - `seals.cbor`: the checkpoints' COSE_Sign1 in order; no `inclusion.cbor`: the folder is
//!   a stream directory of layout `stream-at-rest/2` (`spec/STREAM-AT-REST.md` section 1.1),
//!   whose inclusion receipts are derived from `seals.cbor` and the receipts;
//! - `stop-latency.cbor`: the stream's signed `stop-latency/1` document
//!   (`spec/STOP-LATENCY-V1.md`), and `interaction-metrics.cbor`: its signed
//!   `interaction-metrics/1` document (`spec/INTERACTION-METRICS-V1.md`), both written with the
//!   final batch under the names `jouleclaw run` uses.
//!
//! Each checkpoint's bytes are appended to the three files and each file is fsynced before the
//! checkpoint counts as durable. At the final seal each document is written under a new
//! temporary name (created exclusively), fsynced and renamed into place (the store's writer
//! protocol), then the folder is renamed and `DIR` fsynced.
//!
//! One sink owns `DIR` at a time: [`FileSink::new`] takes an exclusive lock on
//! `DIR/.jouleclaw-live.lock` (held until the sink is dropped; another sink on the folder is
//! refused `sink_busy`). A stream's first batch creates `ID.partial/` and its files exclusively:
//! a folder left by an earlier run (`ID.partial/` or `ID/`) is never appended to; the stream
//! fails `stream_exists`.

use std::path::{Path, PathBuf};

use jouleclaw_store::writer::{append, sync_dir, write_new};

use tokio::sync::mpsc;

use crate::clock::BoxFuture;
use crate::error::{LiveError, Result};
use crate::sink::{ReceiptSink, SinkBatch, SinkContext, check_ids, escape_id};

/// The file names of one stream's folder.
pub const RECEIPTS_CBOR: &str = jouleclaw_store::layout::RECEIPTS_CBOR;
/// The canonical JSON lines.
pub const RECEIPTS_JSONL: &str = jouleclaw_store::layout::RECEIPTS_JSONL;
/// The checkpoints.
pub const SEALS_CBOR: &str = jouleclaw_store::layout::SEALS_CBOR;
/// The inclusion receipts of layout `stream-at-rest/1`: the sink no longer writes this file
/// (layout `stream-at-rest/2`); a folder written before holds it, and the audit checks it there.
pub const INCLUSION_CBOR: &str = jouleclaw_store::layout::INCLUSION_CBOR;
/// The signed stop-latency document (the name `jouleclaw run` and `receipts verify DIR` use).
pub const STOP_LATENCY_CBOR: &str = jouleclaw_store::layout::STOP_LATENCY_CBOR;
/// The signed interaction-metrics document (the name `jouleclaw run` and `receipts verify DIR`
/// use).
pub const INTERACTION_METRICS_CBOR: &str = jouleclaw_store::layout::INTERACTION_METRICS_CBOR;
/// The suffix of an open stream's folder.
pub const PARTIAL_SUFFIX: &str = ".partial";

/// The lock file a [`FileSink`] holds in its folder.
pub const LOCK_FILE: &str = ".jouleclaw-live.lock";

/// Writes receipts and seals to files under one folder.
#[derive(Debug, Clone)]
pub struct FileSink {
    dir: PathBuf,
    _lock: std::sync::Arc<std::fs::File>,
}

impl FileSink {
    /// A sink writing under `dir` (created if absent), holding its lock (`sink_busy` when
    /// another sink holds it). The lock file is created exclusively, or, when it exists,
    /// opened without following a symbolic link and without blocking on a FIFO, and taken
    /// only when it is a regular file: anything else there (a planted symbolic link, a FIFO,
    /// a device) is refused `not_regular_file`, never followed, created through or waited on.
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|e| LiveError::io(&dir.display().to_string(), &e))?;
        let lock_path = dir.join(LOCK_FILE);
        let shown = lock_path.display().to_string();
        let lock = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock_path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                match jouleclaw_store::layout::open_input(&lock_path).map_err(|e| {
                    LiveError::Sink {
                        code: "io",
                        message: e.to_string(),
                    }
                })? {
                    jouleclaw_store::layout::Input::File(f) => f,
                    jouleclaw_store::layout::Input::NotRegular(kind) => {
                        return Err(LiveError::Sink {
                            code: "not_regular_file",
                            message: format!(
                                "{shown}: {kind}, not a regular file: the sink's lock file is never followed or waited on"
                            ),
                        });
                    }
                    jouleclaw_store::layout::Input::Missing => {
                        return Err(LiveError::Sink {
                            code: "io",
                            message: format!("{shown}: removed while it was opened"),
                        });
                    }
                }
            }
            Err(e) => return Err(LiveError::io(&shown, &e)),
        };
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(LiveError::Sink {
                    code: "sink_busy",
                    message: format!("{} is in use by another sink", dir.display()),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => {
                return Err(LiveError::io(&lock_path.display().to_string(), &e));
            }
        }
        Ok(Self {
            dir,
            _lock: std::sync::Arc::new(lock),
        })
    }
}

/// The store's writer refusal as the sink's: a document already there is `stream_exists`,
/// anything else `io`.
fn store_error(e: jouleclaw_store::StoreError) -> LiveError {
    match e {
        jouleclaw_store::StoreError::Exists { path } => LiveError::Sink {
            code: "stream_exists",
            message: format!("{} exists: not replaced", path.display()),
        },
        jouleclaw_store::StoreError::Io { path, source } => {
            LiveError::io(&path.display().to_string(), &source)
        }
        other => LiveError::Sink {
            code: "io",
            message: other.to_string(),
        },
    }
}

/// Appends one batch; writes the stream's documents and renames the folder at the final seal.
pub(crate) fn write_batch(dir: &Path, batch: &SinkBatch) -> Result<()> {
    check_ids(&batch.steward, &batch.stream_id)?;
    let id = escape_id(&batch.stream_id);
    let partial = dir.join(format!("{id}{PARTIAL_SUFFIX}"));
    let done = dir.join(&id);
    let first = batch.seq == 0;
    if first {
        if std::fs::symlink_metadata(&done).is_ok() {
            return Err(LiveError::Sink {
                code: "stream_exists",
                message: format!("{} already holds a sealed stream", done.display()),
            });
        }
        match std::fs::create_dir(&partial) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(LiveError::Sink {
                    code: "stream_exists",
                    message: format!(
                        "{} exists (left by another run): not appended to",
                        partial.display()
                    ),
                });
            }
            Err(e) => return Err(LiveError::io(&partial.display().to_string(), &e)),
        }
    }
    append(
        &partial.join(RECEIPTS_CBOR),
        first,
        &mut batch.receipts.iter().map(|r| r.cose_sign1.as_slice()),
    )
    .map_err(store_error)?;
    append(
        &partial.join(RECEIPTS_JSONL),
        first,
        &mut batch
            .receipts
            .iter()
            .flat_map(|r| [r.payload.as_slice(), b"\n".as_slice()]),
    )
    .map_err(store_error)?;
    append(
        &partial.join(SEALS_CBOR),
        first,
        &mut std::iter::once(batch.checkpoint.as_slice()),
    )
    .map_err(store_error)?;
    if let Some(doc) = &batch.stop_latency {
        write_new(&partial, STOP_LATENCY_CBOR, doc).map_err(store_error)?;
    }
    if let Some(doc) = &batch.interaction_metrics {
        write_new(&partial, INTERACTION_METRICS_CBOR, doc).map_err(store_error)?;
    }
    if batch.is_final {
        std::fs::rename(&partial, &done)
            .map_err(|e| LiveError::io(&done.display().to_string(), &e))?;
        sync_dir(dir).map_err(store_error)?;
    }
    Ok(())
}

impl ReceiptSink for FileSink {
    fn describe(&self) -> String {
        format!("file:{}", self.dir.display())
    }

    fn run(
        self: Box<Self>,
        mut batches: mpsc::Receiver<SinkBatch>,
        ctx: SinkContext,
    ) -> BoxFuture<'static, Result<()>> {
        Box::pin(async move {
            while let Some(batch) = batches.recv().await {
                let n = batch.receipts.len() as u64;
                ctx.stats
                    .batches_in
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                ctx.stats
                    .receipts_in
                    .fetch_add(n, std::sync::atomic::Ordering::SeqCst);
                if batch.status.failure().is_some() {
                    ctx.stats
                        .receipts_lost
                        .fetch_add(n, std::sync::atomic::Ordering::SeqCst);
                    continue;
                }
                let dir = self.dir.clone();
                let (written, batch) = tokio::task::spawn_blocking(move || {
                    let r = write_batch(&dir, &batch);
                    (r, batch)
                })
                .await
                .map_err(|e| LiveError::Sink {
                    code: "io",
                    message: format!("writer task: {e}"),
                })?;
                match written {
                    Ok(()) => ctx.stats.record_durable(&batch, ctx.clock.now_ns()),
                    Err(e) => {
                        ctx.stats
                            .receipts_lost
                            .fetch_add(n, std::sync::atomic::Ordering::SeqCst);
                        if batch.status.fail_first(&e.to_string()) {
                            ctx.stats
                                .streams_failed
                                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                    }
                }
            }
            Ok(())
        })
    }
}
