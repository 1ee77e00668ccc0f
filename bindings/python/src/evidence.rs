//! Stop latency, the interaction document, seals and run directories for the Python
//! `Pipeline`.

use std::path::{Path, PathBuf};

use jouleclaw_interaction::PipelineMeter;
use jouleclaw_jcr1::cose::{self, PublicKey, SoftwareSigner};
use jouleclaw_pipeline::{ClosedWindow as RsClosedWindow, SigningPolicy, WindowSignatures};
use jouleclaw_seal::SealBatch as RsSealBatch;
use jouleclaw_stop_latency::{
    BargeIn, StopLatencyDocument as RsDocument, StopLatencyError, StopLatencyMeter,
};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::interaction::InteractionDocument;
use crate::{ClosedWindow, ConfigError, ReceiptError, VerifyError, refusal};

/// One barge-in and how fast the agent stopped after it (`spec/STOP-LATENCY-V1.md`).
#[pyclass(frozen, get_all, skip_from_py_object, module = "jouleclaw._jouleclaw")]
#[derive(Clone)]
pub struct StopLatency {
    /// The window of the barge-in marker (its early yield's `seen_at`).
    window_id: u64,
    /// The barge-in marker's `ts_ns`.
    barge_in_ts_ns: u64,
    /// `barge_in_ts_ns` + 150 ms.
    deadline_ts_ns: u64,
    /// `ts_ns` of the last outbound audio tick sent after it (before it ended), if any.
    last_audio_ts_ns: Option<u64>,
    /// `last_audio_ts_ns - barge_in_ts_ns`, or 0 when no audio came after it.
    stop_latency_ns: u64,
    /// Outbound audio bytes sent after it.
    audio_bytes: u64,
    /// Of those, the bytes of ticks later than the deadline.
    late_audio_bytes: u64,
    /// `"start"`, `"stream_end"` or `"open"` (still measuring).
    ended_by: &'static str,
    /// `ts_ns` of the outbound Start marker that ended it.
    end_ts_ns: Option<u64>,
    /// `stop_latency_ns <= 150 ms`.
    within_deadline: bool,
}

impl From<&BargeIn> for StopLatency {
    fn from(b: &BargeIn) -> Self {
        Self {
            window_id: b.window_id,
            barge_in_ts_ns: b.barge_in_ts_ns,
            deadline_ts_ns: b.deadline_ts_ns(),
            last_audio_ts_ns: b.last_audio_ts_ns,
            stop_latency_ns: b.stop_latency_ns(),
            audio_bytes: b.audio_bytes,
            late_audio_bytes: b.late_audio_bytes,
            ended_by: b.ended_by.as_str(),
            end_ts_ns: b.end_ts_ns,
            within_deadline: b.within_deadline(),
        }
    }
}

#[pymethods]
impl StopLatency {
    fn __repr__(&self) -> String {
        format!(
            "StopLatency(window_id={}, barge_in_ts_ns={}, stop_latency_ns={}, late_audio_bytes={}, ended_by={:?})",
            self.window_id,
            self.barge_in_ts_ns,
            self.stop_latency_ns,
            self.late_audio_bytes,
            self.ended_by
        )
    }
}

/// A signed `stop-latency/1` document.
#[pyclass(frozen, module = "jouleclaw._jouleclaw")]
pub struct StopLatencyDocument {
    doc: RsDocument,
    payload: Vec<u8>,
    cose_sign1: Vec<u8>,
    content_hash: [u8; 32],
}

impl StopLatencyDocument {
    pub(crate) fn from_signed(s: jouleclaw_stop_latency::SignedStopLatency) -> Self {
        Self {
            doc: s.document,
            payload: s.payload,
            cose_sign1: s.cose_sign1,
            content_hash: s.content_hash,
        }
    }
}

#[pymethods]
impl StopLatencyDocument {
    /// The canonical JSON bytes.
    #[getter]
    fn document_json<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.payload)
    }

    /// The tagged COSE_Sign1 (what `stop-latency.cbor` holds).
    #[getter]
    fn cose_sign1<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.cose_sign1)
    }

    /// BLAKE3 of the canonical bytes, hex.
    #[getter]
    fn content_hash_hex(&self) -> String {
        hex::encode(self.content_hash)
    }

    /// Every barge-in.
    #[getter]
    fn barge_ins(&self) -> Vec<StopLatency> {
        self.doc.barge_ins.iter().map(StopLatency::from).collect()
    }

    /// Its schema id: `"stop-latency/1"`, or `"stop-latency/2"` when it states its vantage.
    #[getter]
    fn schema(&self) -> &'static str {
        self.doc.schema_id()
    }

    /// What an audio tick's time marks (`"sent"` or `"played"`), `None` for `stop-latency/1`
    /// (whose times are as sent, the buffer after that unstated).
    #[getter]
    fn vantage(&self) -> Option<&'static str> {
        self.doc.vantage.map(|v| v.point.as_str())
    }

    /// The buffered audio after the vantage point the stop latency does not include, in
    /// nanoseconds, when stated; `None` when unknown or for `stop-latency/1`.
    #[getter]
    fn excluded_buffer_ns(&self) -> Option<u64> {
        self.doc.vantage.and_then(|v| v.excluded_buffer_ns)
    }

    /// The number of window receipts it is bound to.
    #[getter]
    fn window_count(&self) -> u64 {
        self.doc.window_count
    }

    /// The RFC 9162 root over the receipts' content hashes, hex.
    #[getter]
    fn receipts_root_hex(&self) -> String {
        hex::encode(self.doc.receipts_root)
    }

    /// The steward.
    #[getter]
    fn steward(&self) -> String {
        self.doc.steward.clone()
    }

    /// The stream id.
    #[getter]
    fn stream_id(&self) -> String {
        self.doc.stream_id.clone()
    }

    /// Median stop latency (nearest rank), `None` without barge-ins.
    #[getter]
    fn p50_ns(&self) -> Option<u64> {
        self.doc.summary().map(|s| s.0)
    }

    /// 95th percentile stop latency (nearest rank), `None` without barge-ins.
    #[getter]
    fn p95_ns(&self) -> Option<u64> {
        self.doc.summary().map(|s| s.1)
    }

    /// Largest stop latency, `None` without barge-ins.
    #[getter]
    fn max_ns(&self) -> Option<u64> {
        self.doc.summary().map(|s| s.2)
    }

    fn __repr__(&self) -> String {
        format!(
            "StopLatencyDocument(stream_id={:?}, barge_ins={}, window_count={})",
            self.doc.stream_id,
            self.doc.barge_ins.len(),
            self.doc.window_count
        )
    }
}

/// A signed `stream-seal/1` checkpoint and the inclusion receipts it serves.
#[pyclass(frozen, skip_from_py_object, module = "jouleclaw._jouleclaw")]
#[derive(Clone)]
pub struct SealBatch {
    checkpoint: Vec<u8>,
    tree_size: u64,
    is_final: bool,
    inclusion: Vec<(u64, Vec<u8>)>,
}

impl From<&RsSealBatch> for SealBatch {
    fn from(b: &RsSealBatch) -> Self {
        Self {
            checkpoint: b.checkpoint.cose_sign1.clone(),
            tree_size: b.checkpoint.seal.tree_size,
            is_final: b.checkpoint.seal.is_final,
            inclusion: b.inclusion.clone(),
        }
    }
}

#[pymethods]
impl SealBatch {
    /// The checkpoint's tagged COSE_Sign1 (one item of `seals.cbor`).
    #[getter]
    fn checkpoint_cose_sign1<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.checkpoint)
    }

    /// Receipts the checkpoint seals.
    #[getter]
    fn tree_size(&self) -> u64 {
        self.tree_size
    }

    /// `True` for the final checkpoint of the stream.
    #[getter]
    fn is_final(&self) -> bool {
        self.is_final
    }

    /// `(window_id, RFC 9942 inclusion receipt)` for the windows since the previous checkpoint.
    #[getter]
    fn inclusion<'py>(&self, py: Python<'py>) -> Vec<(u64, Bound<'py, PyBytes>)> {
        self.inclusion
            .iter()
            .map(|(w, b)| (*w, PyBytes::new(py, b)))
            .collect()
    }

    fn __repr__(&self) -> String {
        format!(
            "SealBatch(tree_size={}, is_final={}, inclusion={})",
            self.tree_size,
            if self.is_final { "True" } else { "False" },
            self.inclusion.len()
        )
    }
}

/// What `Pipeline.finish()` returns.
#[pyclass(frozen, get_all, module = "jouleclaw._jouleclaw")]
pub struct Finished {
    /// The last window, if one was open.
    last: Option<Py<ClosedWindow>>,
    /// The final checkpoint, when the pipeline seals.
    seal: Option<Py<SealBatch>>,
    /// The signed stop-latency document.
    stop_latency: Py<StopLatencyDocument>,
    /// The signed `interaction-metrics/1` document.
    interaction: Py<InteractionDocument>,
    /// The run directory written, if `out_dir` was given.
    out_dir: Option<String>,
}

#[pymethods]
impl Finished {
    fn __repr__(&self) -> String {
        format!(
            "Finished(last={}, seal={}, out_dir={:?})",
            if self.last.is_some() { "yes" } else { "None" },
            if self.seal.is_some() { "yes" } else { "None" },
            self.out_dir
        )
    }
}

/// The Rust-side finish, before conversion to Python objects.
pub(crate) struct RsFinished {
    pub(crate) last: Option<RsClosedWindow>,
    pub(crate) seal: Option<RsSealBatch>,
    pub(crate) signed: jouleclaw_stop_latency::SignedStopLatency,
    pub(crate) interaction: jouleclaw_interaction::SignedInteraction,
    pub(crate) out_dir: Option<PathBuf>,
}

impl RsFinished {
    pub(crate) fn into_py(self, py: Python<'_>) -> PyResult<Finished> {
        Ok(Finished {
            last: self
                .last
                .map(|w| Py::new(py, ClosedWindow::from(w)))
                .transpose()?,
            seal: self
                .seal
                .as_ref()
                .map(|b| Py::new(py, SealBatch::from(b)))
                .transpose()?,
            stop_latency: Py::new(py, StopLatencyDocument::from_signed(self.signed))?,
            interaction: Py::new(py, InteractionDocument::from_signed(self.interaction))?,
            out_dir: self.out_dir.map(|p| p.display().to_string()),
        })
    }
}

/// `seal_every` and `window_signatures` as a signing policy.
pub(crate) fn signing_policy(
    py: Python<'_>,
    seal_every: Option<u64>,
    window_signatures: &str,
) -> PyResult<SigningPolicy> {
    let ws = match window_signatures {
        "all" => WindowSignatures::All,
        "non_pass" => WindowSignatures::NonPass,
        "none" => WindowSignatures::None,
        other => {
            return Err(refusal::<ConfigError>(
                py,
                "bad_window_signatures",
                format!("window_signatures {other:?}: expected \"all\", \"non_pass\" or \"none\""),
            ));
        }
    };
    match seal_every {
        None if ws != WindowSignatures::All => Err(refusal::<ConfigError>(
            py,
            "window_signatures_without_seal",
            "window_signatures needs seal_every".to_owned(),
        )),
        None => Ok(SigningPolicy::EveryWindow),
        Some(0) => Err(refusal::<ConfigError>(
            py,
            "seal_every_zero",
            "seal_every is at least 1".to_owned(),
        )),
        Some(every_windows) => Ok(SigningPolicy::Checkpoint {
            every_windows,
            window_signatures: ws,
            max_windows: jouleclaw_seal::DEFAULT_MAX_LEAVES,
        }),
    }
}

/// Counts for `summary.json`, as `jouleclaw run` writes them.
#[derive(Default)]
struct Totals {
    windows: u64,
    ticks: u64,
    inbound_bytes: u64,
    outbound_bytes: u64,
    substrate_bytes: u64,
    range: Option<(u64, u64)>,
    verdicts: [u64; 4],
    conservation: [u64; 3],
    early: u64,
}

/// What a run directory needs, kept while the stream runs (when `out_dir` is given).
#[derive(Default)]
pub(crate) struct RunRecord {
    jsonl: Vec<u8>,
    cbor: Vec<u8>,
    seals: Vec<u8>,
    totals: Totals,
    checkpoints: u64,
}

/// The state behind the Python `Pipeline`'s lock: the Rust pipeline and the meters beside it.
pub(crate) struct State {
    pub(crate) pipeline: jouleclaw_pipeline::Pipeline,
    pub(crate) meter: StopLatencyMeter,
    pub(crate) meter_error: Option<StopLatencyError>,
    /// The interaction meter (`jouleclaw_interaction`), fed as `jouleclaw run` feeds it.
    pub(crate) interaction: PipelineMeter,
    pub(crate) interaction_error: Option<jouleclaw_interaction::InteractionError>,
    pub(crate) hashes: Vec<[u8; 32]>,
    pub(crate) record: Option<RunRecord>,
    pub(crate) doc_signer: SoftwareSigner,
    pub(crate) out_dir: Option<PathBuf>,
    /// `out_dir` held under the store's exclusive lock from construction until the run is
    /// written, so two pipelines never share one run directory (the second is refused when it
    /// is made, before any tick).
    pub(crate) out_lock: Option<jouleclaw_store::writer::LockedDir>,
    pub(crate) summary_base: serde_json::Value,
    /// Stated in the document (`stop-latency/2`) when given.
    pub(crate) vantage: Option<jouleclaw_stop_latency::Vantage>,
}

/// A failure of `finish` beyond the pipeline's own.
pub(crate) enum FinishError {
    Pipeline(jouleclaw_pipeline::PipelineError),
    StopLatency(StopLatencyError),
    Interaction(jouleclaw_interaction::InteractionError),
    Io(PathBuf, std::io::Error),
}

impl FinishError {
    pub(crate) fn into_py(self, py: Python<'_>) -> PyErr {
        match self {
            Self::Pipeline(e) => crate::pipeline_error(py, e, crate::Context::Tick),
            Self::StopLatency(e) => refusal::<ReceiptError>(py, e.code(), e.to_string()),
            Self::Interaction(e) => refusal::<ReceiptError>(py, e.code(), e.to_string()),
            Self::Io(p, e) => PyOSError::new_err(format!("{}: {e}", p.display())),
        }
    }
}

impl State {
    /// Feeds the meters one accepted tick (`tick` as pushed) and the pipeline's outcome for
    /// it: the window it closed first (a meter's refusal is kept and raised by `finish`).
    pub(crate) fn pushed(
        &mut self,
        tick: &jouleclaw_stream::Tick,
        outcome: &jouleclaw_pipeline::TickOutcome,
        spec: &jouleclaw_stream::StreamSpec,
    ) {
        if let Some(w) = &outcome.closed {
            self.record(w);
        }
        if self.meter_error.is_none()
            && let Err(e) = self.meter.observe(tick, outcome.direction)
        {
            self.meter_error = Some(e);
        }
        // The interaction meter records the closed window's hash itself, then the tick.
        if let Err(e) = self.interaction.push(tick, outcome, spec)
            && self.interaction_error.is_none()
        {
            self.interaction_error = Some(e);
        }
    }

    /// Records a window closed outside a push.
    pub(crate) fn closed(&mut self, w: &RsClosedWindow) {
        self.record(w);
        self.interaction.closed(w);
    }

    /// Records a closed window: its content hash always, its files when writing a run.
    fn record(&mut self, w: &RsClosedWindow) {
        self.hashes.push(*w.content_hash.as_bytes());
        if let Some(r) = self.record.as_mut() {
            r.jsonl.extend_from_slice(w.canonical_bytes());
            r.jsonl.push(b'\n');
            if let Some(c) = w.cose_sign1() {
                r.cbor.extend_from_slice(c);
            }
            let t = &mut r.totals;
            let rc = &w.receipt;
            t.windows += 1;
            t.ticks = t.ticks.saturating_add(rc.tick_count);
            t.inbound_bytes = t.inbound_bytes.saturating_add(rc.inbound_bytes);
            t.outbound_bytes = t.outbound_bytes.saturating_add(rc.outbound_bytes);
            t.substrate_bytes = t.substrate_bytes.saturating_add(w.substrate_bytes);
            t.range = Some(
                t.range
                    .map_or((rc.window_id, rc.window_id), |(a, _)| (a, rc.window_id)),
            );
            t.verdicts[usize::from(rc.verdict.rank())] += 1;
            t.conservation[usize::from(rc.conservation.rank())] += 1;
            t.early = t.early.saturating_add(w.early.len() as u64);
            if let Some(b) = &w.seal {
                Self::seal_into(r, b);
            }
        }
    }

    /// A checkpoint into `seals.cbor`. Its inclusion receipts are not written: the run
    /// directory is layout `stream-at-rest/2`, as `jouleclaw run` writes it (each is derived
    /// from `seals.cbor` and `receipts.jsonl`).
    fn seal_into(r: &mut RunRecord, b: &RsSealBatch) {
        r.seals.extend_from_slice(&b.checkpoint.cose_sign1);
        r.checkpoints += 1;
    }

    /// Ends the stream: the last window, the final seal, the signed document, the run files.
    pub(crate) fn finish(&mut self, public: &PublicKey) -> Result<RsFinished, FinishError> {
        // The last window first: the document binds to every receipt, and the final seal
        // (stream-seal/2) commits to the document, so it is signed between the two.
        let last = self.pipeline.end_windows().map_err(FinishError::Pipeline)?;
        if let Some(w) = &last {
            self.closed(w);
        }
        self.meter.finish();
        if let Some(e) = self.meter_error.clone() {
            return Err(FinishError::StopLatency(e));
        }
        let config = self.pipeline.config();
        let mut doc = RsDocument::new(
            &config.steward,
            &config.stream_id,
            self.meter.barge_ins(),
            &self.hashes,
        )
        .map_err(FinishError::StopLatency)?;
        doc.vantage = self.vantage;
        let signed = jouleclaw_stop_latency::sign(&self.doc_signer, &doc)
            .map_err(FinishError::StopLatency)?;
        // interaction-metrics/1 (spec/INTERACTION-METRICS-V1.md), signed beside the stop
        // latency and committed by the final seal with it, as `jouleclaw run` does.
        if let Some(e) = self.interaction_error.clone() {
            return Err(FinishError::Interaction(e));
        }
        let interaction = self
            .interaction
            .finish_signed(&self.doc_signer, &config.steward, &config.stream_id)
            .map_err(FinishError::Interaction)?;
        let documents = [
            (
                doc.schema_id().to_owned(),
                jouleclaw_seal::document_digest(&signed.cose_sign1),
            ),
            (
                jouleclaw_interaction::INTERACTION_SCHEMA.to_owned(),
                jouleclaw_seal::document_digest(&interaction.cose_sign1),
            ),
        ]
        .into_iter()
        .collect();
        let fin = self
            .pipeline
            .finish_with_documents(documents)
            .map_err(FinishError::Pipeline)?;
        let last = last.or(fin.last);
        if let (Some(r), Some(b)) = (self.record.as_mut(), &fin.seal) {
            Self::seal_into(r, b);
        }
        if let (Some(dir), Some(r)) = (self.out_dir.clone(), self.record.as_ref()) {
            write_run(
                &dir,
                r,
                &signed.cose_sign1,
                &interaction.cose_sign1,
                public,
                &self.summary_base,
                &self.pipeline,
            )?;
            self.out_lock = None;
        }
        Ok(RsFinished {
            last,
            seal: fin.seal,
            signed,
            interaction,
            out_dir: self.out_dir.clone(),
        })
    }
}

/// The first file of a run already in `dir` (a run directory is never written over): any of
/// the store's run files, `inclusion.cbor` included, which this writer no longer writes (layout
/// `stream-at-rest/2`) but a run written before holds.
pub(crate) fn existing_run_file(dir: &Path) -> Option<PathBuf> {
    jouleclaw_store::layout::RUN_FILES
        .iter()
        .map(|n| dir.join(n))
        .find(|p| std::fs::symlink_metadata(p).is_ok())
}

/// The store's writer error as `finish` raises it: an I/O failure or a run file found in the
/// directory as `OSError` naming the file.
fn store_error(e: jouleclaw_store::StoreError) -> FinishError {
    match e {
        jouleclaw_store::StoreError::Io { path, source } => FinishError::Io(path, source),
        jouleclaw_store::StoreError::Exists { path } => FinishError::Io(
            path,
            std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "a run directory is never written over",
            ),
        ),
        other => FinishError::Io(PathBuf::new(), std::io::Error::other(other.to_string())),
    }
}

/// Writes the run directory with the store's run writer (never over another run's files),
/// `summary.json` from the store's `RunSummary` last.
fn write_run(
    dir: &Path,
    r: &RunRecord,
    stop_latency: &[u8],
    interaction: &[u8],
    public: &PublicKey,
    base: &serde_json::Value,
    pipeline: &jouleclaw_pipeline::Pipeline,
) -> Result<(), FinishError> {
    use jouleclaw_store::layout;
    std::fs::create_dir_all(dir).map_err(|e| FinishError::Io(dir.to_owned(), e))?;
    let signing = &pipeline.config().signing;
    let mut w =
        jouleclaw_store::writer::RunWriter::new(dir, jouleclaw_store::writer::Existing::Refuse)
            .map_err(store_error)?;
    let pub_text = cose::public_key_text(public);
    let mut files: Vec<(&str, &[u8])> = vec![
        (layout::SIGNER_PUB, pub_text.as_bytes()),
        (layout::RECEIPTS_JSONL, &r.jsonl),
        (layout::RECEIPTS_CBOR, &r.cbor),
        (layout::STOP_LATENCY_CBOR, stop_latency),
        (layout::INTERACTION_METRICS_CBOR, interaction),
    ];
    if matches!(signing, SigningPolicy::Checkpoint { .. }) {
        files.push((layout::SEALS_CBOR, &r.seals));
    }
    for (name, bytes) in files {
        w.put(name, bytes).map_err(store_error)?;
    }
    let outputs = w.finish().map_err(store_error)?;
    let summary = run_summary(r, public, base, signing, outputs);
    w.commit(&summary, &[], &[]).map_err(store_error)
}

/// `summary.json` of a run written by the binding: the constructor's facts (`base`), the
/// signer, the signing policy, the files' hashes and the totals, as `jouleclaw run` states them.
fn run_summary(
    r: &RunRecord,
    public: &PublicKey,
    base: &serde_json::Value,
    signing: &SigningPolicy,
    outputs: std::collections::BTreeMap<String, String>,
) -> jouleclaw_store::RunSummary {
    use jouleclaw_store::{ConservationCounts, SignerFacts, SigningFacts, VerdictCounts};
    let text = |k: &str| {
        base.get(k)
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    let list = |k: &str| -> Vec<String> {
        base.get(k)
            .and_then(serde_json::Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(serde_json::Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let t = &r.totals;
    let [pass, need_more, yields, fail] = t.verdicts;
    let [conforming, hallucination, barge_in_ignored] = t.conservation;
    let empty = t.range.map_or(0, |(a, b)| {
        (b - a).saturating_add(1).saturating_sub(t.windows)
    });
    let test_key = {
        use cose::Signer as _;
        *public == SoftwareSigner::rfc8032_test_key().verifying_key()
    };
    let signing = match signing {
        SigningPolicy::Checkpoint {
            every_windows,
            window_signatures,
            ..
        } => SigningFacts {
            checkpoints: Some(r.checkpoints),
            every_windows: Some(*every_windows),
            policy: "checkpoint".to_owned(),
            window_signatures: Some(
                match window_signatures {
                    WindowSignatures::All => "all",
                    WindowSignatures::NonPass => "non_pass",
                    WindowSignatures::None => "none",
                }
                .to_owned(),
            ),
        },
        _ => SigningFacts {
            checkpoints: None,
            every_windows: None,
            policy: "every_window".to_owned(),
            window_signatures: None,
        },
    };
    jouleclaw_store::RunSummary {
        conservation: ConservationCounts {
            barge_in_ignored,
            conforming,
            hallucination,
        },
        early_verdicts: t.early,
        empty_windows: empty,
        epoch: text("epoch"),
        first_window: t.range.map(|r| r.0),
        inbound_bytes: t.inbound_bytes,
        last_window: t.range.map(|r| r.1),
        layout: Some(jouleclaw_store::layout::LAYOUT_V2.to_owned()),
        // The toolset's grammar digest the constructor recorded (`toolset::llm_schema`), or null.
        llm_schema: base
            .get("llm_schema")
            .and_then(|v| serde_json::from_value(v.clone()).ok()),
        oracle: list("oracle"),
        outbound_bytes: t.outbound_bytes,
        outputs,
        receipts: t.windows,
        signer: SignerFacts {
            kid: hex::encode(cose::kid(public)),
            public_key: hex::encode(public.as_bytes()),
            test_key,
        },
        signing,
        spec: text("spec").unwrap_or_default(),
        stages: list("stages"),
        steward: text("steward").unwrap_or_default(),
        stream_id: text("stream_id").unwrap_or_default(),
        substrate_bytes: t.substrate_bytes,
        ticks: t.ticks,
        trace: text("trace").unwrap_or_default(),
        verdicts: VerdictCounts {
            fail,
            need_more,
            pass,
            yields,
        },
    }
}

/// The receipts of the bytes of a `receipts.jsonl`, each with its content hash (BLAKE3 of
/// its line). Raises `VerifyError` naming the first line that does not decode.
pub(crate) fn receipts_of_jsonl(
    py: Python<'_>,
    text: &[u8],
) -> PyResult<Vec<(jouleclaw_jcr1::StreamWindowReceipt, [u8; 32])>> {
    let mut receipts = Vec::new();
    for (i, line) in text.split(|b| *b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let r = jouleclaw_jcr1::decode_receipt(line).map_err(|r| {
            refusal::<VerifyError>(
                py,
                r.code.as_str(),
                format!("receipts line {}: refused at byte {}", i + 1, r.offset),
            )
        })?;
        receipts.push((r, *blake3::hash(line).as_bytes()));
    }
    Ok(receipts)
}

/// Verifies a signed `stop-latency/1` document against `public_key`; with `receipts_jsonl` (the
/// bytes of a `receipts.jsonl`) also its binding to those receipts. Raises `VerifyError` with
/// the refusal or binding code.
#[pyfunction]
#[pyo3(signature = (cose_sign1, public_key, receipts_jsonl=None))]
pub(crate) fn verify_stop_latency(
    py: Python<'_>,
    cose_sign1: &[u8],
    public_key: &Bound<'_, PyAny>,
    receipts_jsonl: Option<&[u8]>,
) -> PyResult<StopLatencyDocument> {
    let key = crate::valid_key_arg(py, public_key)?;
    let signed = jouleclaw_stop_latency::verify(cose_sign1, &key)
        .map_err(|e| refusal::<VerifyError>(py, e.code(), e.to_string()))?;
    if let Some(text) = receipts_jsonl {
        let receipts = receipts_of_jsonl(py, text)?;
        if let Some(p) = jouleclaw_stop_latency::check_receipts(&signed.document, &receipts)
            .into_iter()
            .next()
        {
            return Err(refusal::<VerifyError>(py, p.code, p.detail));
        }
    }
    Ok(StopLatencyDocument::from_signed(signed))
}
