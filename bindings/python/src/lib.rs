//! `jouleclaw._jouleclaw`: the PyO3 extension behind the `jouleclaw` Python package.
//!
//! A thin layer over the Rust crates: nothing here judges, hashes, mints or signs on its own.
//! [`Pipeline`] wraps `jouleclaw_pipeline::Pipeline` (the duplex-voice composite oracle, the
//! default ledger policy, the energy estimator and a software Ed25519 signer); `verify` and
//! `verify_batch` wrap `jouleclaw_jcr1::cose`. The interpreter lock is released while a tick is
//! pushed (a push may close, hash and sign a window), while a window is closed, and while
//! receipts are verified.
//!
//! Refusals raise one exception class per family, each carrying the Rust crates' stable `code`:
//! `ConfigError` (a spec, key or name refused when something is built), `TickRefused` (a tick
//! the window refuses), `ReceiptError` (minting or signing a receipt failed), `PipelinePoisoned`
//! (an earlier closing failure left the pipeline unusable), `VerifyError` (a COSE_Sign1 refused);
//! all derive from `JouleclawError`.
//!
//! The public interface is: [`StreamSpec`], [`SigningKey`], [`Pipeline`], [`TickOutcome`],
//! [`ClosedWindow`], [`Verdict`], [`Finding`], [`EarlyVerdict`], [`VerifiedReceipt`], and from
//! `evidence`: `StopLatency`, `StopLatencyDocument`, `SealBatch`, `Finished` (what
//! `Pipeline.finish()` returns: the last window, the final seal, the signed `stop-latency/1`
//! document measured beside the pipeline by `jouleclaw_stop_latency`, and the signed
//! `interaction-metrics/1` document measured by `jouleclaw_interaction`); from `interaction`:
//! `InteractionDocument`, `InteractionEvent`; from `toolset`: `Toolset`, `RefusedTool`,
//! `ToolCallValidator`, `CallVerdict` (and `ToolsetError`); the functions `keygen`, `verify`,
//! `verify_batch`, `verify_stop_latency`, `verify_interaction_metrics`,
//! `split_cbor_sequence`, `format_ts`, `verify_stream_dir`, the exception classes and the
//! duplex channel constants.

mod evidence;
mod interaction;
mod toolset;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use jouleclaw_jcr1::cose::{self, CoseRefusal, PublicKey, SingleKey, SoftwareSigner};
use jouleclaw_jcr1::{Estimator, Jcr1Error, StreamWindowReceipt};
use jouleclaw_pipeline::{
    ClosedAt, PipelineConfig, PipelineError, format_ts as rs_format_ts, trace,
};
use jouleclaw_stream::{
    BARGE_IN_DEADLINE_MS, StreamSpec as RsStreamSpec, Tick, TickKind, TickMarker,
    WindowConservationFinding, duplex,
};
use jouleclaw_stream_oracle::WindowVerdict;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

create_exception!(
    _jouleclaw,
    JouleclawError,
    PyException,
    "Base class of every jouleclaw refusal; `code` is the stable refusal code."
);
create_exception!(
    _jouleclaw,
    ConfigError,
    JouleclawError,
    "A stream spec, key, steward or stream id was refused while building something."
);
create_exception!(
    _jouleclaw,
    TickRefused,
    JouleclawError,
    "A tick was refused; the pipeline is unchanged."
);
create_exception!(
    _jouleclaw,
    ReceiptError,
    JouleclawError,
    "Minting or signing a receipt failed; the pipeline is now poisoned."
);
create_exception!(
    _jouleclaw,
    PipelinePoisoned,
    JouleclawError,
    "An earlier failure while closing a window left the pipeline unusable."
);
create_exception!(
    _jouleclaw,
    VerifyError,
    JouleclawError,
    "A COSE_Sign1 receipt was refused by the verifier."
);

/// An exception of class `T` with `message` and the attribute `code`.
fn refusal<T: pyo3::PyTypeInfo>(py: Python<'_>, code: &str, message: String) -> PyErr {
    let err = PyErr::new::<T, _>(format!("{code}: {message}"));
    // Setting an attribute on a fresh exception instance cannot fail in practice; if it did,
    // that error is the one worth raising.
    match err.value(py).setattr("code", code) {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// Where a pipeline error arose, which decides the family of a stream refusal.
#[derive(Clone, Copy)]
enum Context {
    Build,
    Tick,
}

fn pipeline_error(py: Python<'_>, e: PipelineError, ctx: Context) -> PyErr {
    let code = e.code();
    let msg = e.to_string();
    match (&e, ctx) {
        (PipelineError::Receipt(Jcr1Error::KeyFile { .. }), _) => {
            refusal::<ConfigError>(py, code, msg)
        }
        (PipelineError::Receipt(_), Context::Build) => refusal::<ConfigError>(py, code, msg),
        (PipelineError::Receipt(_), Context::Tick) => refusal::<ReceiptError>(py, code, msg),
        (PipelineError::Poisoned | PipelineError::Finished, _) => {
            refusal::<PipelinePoisoned>(py, code, msg)
        }
        (PipelineError::StageTickRefused { .. }, _) => refusal::<ReceiptError>(py, code, msg),
        (PipelineError::SpecJson { .. }, _) | (_, Context::Build) => {
            refusal::<ConfigError>(py, code, msg)
        }
        (_, Context::Tick) => refusal::<TickRefused>(py, code, msg),
    }
}

fn jcr1_config_error(py: Python<'_>, e: &Jcr1Error) -> PyErr {
    refusal::<ConfigError>(py, e.code(), e.to_string())
}

fn cose_error(py: Python<'_>, r: CoseRefusal) -> PyErr {
    let detail = match r {
        CoseRefusal::PayloadRefused(inner) => format!("payload refused: {inner}"),
        other => format!("COSE_Sign1 refused ({})", other.as_str()),
    };
    refusal::<VerifyError>(py, r.as_str(), detail)
}

// --------------------------------------------------------------------------------------------
// Verdicts and findings
// --------------------------------------------------------------------------------------------

/// A window verdict: `kind` is `"pass"`, `"fail"`, `"yield"` or `"need_more"`.
#[pyclass(frozen, get_all, skip_from_py_object, module = "jouleclaw._jouleclaw")]
#[derive(Clone)]
pub struct Verdict {
    /// `"pass"`, `"fail"`, `"yield"` or `"need_more"`.
    kind: String,
    /// For `yield`: the window the barge-in was seen in.
    seen_at: Option<u64>,
    /// For `pass`: the oracles that vouched, in order.
    chain: Vec<String>,
    /// For `fail` and `need_more`: the oracle.
    oracle: Option<String>,
    /// For `fail` and `need_more`: why.
    reason: Option<String>,
}

impl From<&WindowVerdict> for Verdict {
    fn from(v: &WindowVerdict) -> Self {
        let mut out = Self {
            kind: v.kind_str().to_owned(),
            seen_at: None,
            chain: Vec::new(),
            oracle: None,
            reason: None,
        };
        match v {
            WindowVerdict::Pass { chain } => out.chain = chain.clone(),
            WindowVerdict::Yield { seen_at } => out.seen_at = Some(*seen_at),
            WindowVerdict::Fail { oracle, reason } | WindowVerdict::NeedMore { oracle, reason } => {
                out.oracle = Some(oracle.clone());
                out.reason = Some(reason.clone());
            }
        }
        out
    }
}

#[pymethods]
impl Verdict {
    fn __repr__(&self) -> String {
        match (&self.seen_at, &self.oracle) {
            (Some(w), _) => format!("Verdict(yield, seen_at={w})"),
            (None, Some(o)) => format!(
                "Verdict({}, oracle={o:?}, reason={:?})",
                self.kind,
                self.reason.as_deref().unwrap_or_default()
            ),
            (None, None) => format!("Verdict({}, chain={:?})", self.kind, self.chain),
        }
    }

    fn __str__(&self) -> String {
        self.kind.clone()
    }
}

/// The conservation ledger's finding: `kind` is `"conforming"`, `"hallucination"` or
/// `"barge_in_ignored"`.
#[pyclass(frozen, get_all, skip_from_py_object, module = "jouleclaw._jouleclaw")]
#[derive(Clone)]
pub struct Finding {
    /// `"conforming"`, `"hallucination"` or `"barge_in_ignored"`.
    kind: String,
    /// For `hallucination`: outbound bytes nothing accounts for.
    unaccounted: Option<u64>,
    /// For `barge_in_ignored`: when the barge-in arrived.
    barge_in_ts_ns: Option<u64>,
    /// For `barge_in_ignored`: when the late outbound tick arrived.
    outbound_ts_ns: Option<u64>,
}

impl From<WindowConservationFinding> for Finding {
    fn from(f: WindowConservationFinding) -> Self {
        let mut out = Self {
            kind: f.kind_str().to_owned(),
            unaccounted: None,
            barge_in_ts_ns: None,
            outbound_ts_ns: None,
        };
        match f {
            WindowConservationFinding::Conforming => {}
            WindowConservationFinding::Hallucination { unaccounted } => {
                out.unaccounted = Some(unaccounted);
            }
            WindowConservationFinding::BargeInIgnored {
                barge_in_ts_ns,
                outbound_ts_ns,
            } => {
                out.barge_in_ts_ns = Some(barge_in_ts_ns);
                out.outbound_ts_ns = Some(outbound_ts_ns);
            }
        }
        out
    }
}

#[pymethods]
impl Finding {
    fn __repr__(&self) -> String {
        match (self.unaccounted, self.barge_in_ts_ns, self.outbound_ts_ns) {
            (Some(u), _, _) => format!("Finding(hallucination, unaccounted={u})"),
            (_, Some(b), Some(o)) => {
                format!("Finding(barge_in_ignored, barge_in_ts_ns={b}, outbound_ts_ns={o})")
            }
            _ => format!("Finding({})", self.kind),
        }
    }

    fn __str__(&self) -> String {
        self.kind.clone()
    }
}

/// An early verdict raised on one tick of a window.
#[pyclass(frozen, get_all, skip_from_py_object, module = "jouleclaw._jouleclaw")]
#[derive(Clone)]
pub struct EarlyVerdict {
    /// The tick's timestamp.
    ts_ns: u64,
    /// The tick's channel.
    channel_id: u32,
    /// The verdict.
    verdict: Verdict,
}

#[pymethods]
impl EarlyVerdict {
    fn __repr__(&self) -> String {
        format!(
            "EarlyVerdict({} at {} on channel {})",
            self.verdict.kind,
            rs_format_ts(self.ts_ns),
            self.channel_id
        )
    }
}

// --------------------------------------------------------------------------------------------
// Closed windows and verified receipts
// --------------------------------------------------------------------------------------------

/// Fields of a receipt shared by [`ClosedWindow`] and [`VerifiedReceipt`].
#[derive(Clone)]
struct ReceiptFields {
    receipt_id: String,
    steward: String,
    stream_id: String,
    window_id: u64,
    closed_at: String,
    tick_count: u64,
    inbound_bytes: u64,
    outbound_bytes: u64,
    joules_uj: u64,
    window_hash: String,
    verdict: Verdict,
    finding: Finding,
}

impl From<&StreamWindowReceipt> for ReceiptFields {
    fn from(r: &StreamWindowReceipt) -> Self {
        Self {
            receipt_id: r.id(),
            steward: r.steward.clone(),
            stream_id: r.stream_id.clone(),
            window_id: r.window_id,
            closed_at: r.closed_at.to_string(),
            tick_count: r.tick_count,
            inbound_bytes: r.inbound_bytes,
            outbound_bytes: r.outbound_bytes,
            joules_uj: r.joules_uj,
            window_hash: r.window_hash.to_hex().to_string(),
            verdict: Verdict::from(&r.verdict),
            finding: Finding::from(r.conservation),
        }
    }
}

/// A closed window: its signed receipt and what led to it.
#[pyclass(frozen, module = "jouleclaw._jouleclaw")]
pub struct ClosedWindow {
    fields: ReceiptFields,
    receipt_json: Vec<u8>,
    content_hash: [u8; 32],
    cose_sign1: Option<Vec<u8>>,
    substrate_bytes: u64,
    early: Vec<EarlyVerdict>,
    signals: Vec<(String, Verdict)>,
    seal: Option<evidence::SealBatch>,
    leaf_index: Option<u64>,
}

impl From<jouleclaw_pipeline::ClosedWindow> for ClosedWindow {
    fn from(w: jouleclaw_pipeline::ClosedWindow) -> Self {
        Self {
            fields: ReceiptFields::from(&w.receipt),
            receipt_json: w.canonical_bytes().to_vec(),
            content_hash: *w.content_hash.as_bytes(),
            cose_sign1: w.cose_sign1().map(<[u8]>::to_vec),
            substrate_bytes: w.substrate_bytes,
            early: w
                .early
                .iter()
                .map(|e| EarlyVerdict {
                    ts_ns: e.ts_ns,
                    channel_id: e.channel_id,
                    verdict: Verdict::from(&e.verdict),
                })
                .collect(),
            signals: w
                .signals
                .iter()
                .map(|(name, v)| (name.clone(), Verdict::from(v)))
                .collect(),
            seal: w.seal.as_ref().map(evidence::SealBatch::from),
            leaf_index: w.leaf_index,
        }
    }
}

#[pymethods]
impl ClosedWindow {
    /// The receipt's canonical JSON bytes (one line of `receipts.jsonl`, without the newline).
    #[getter]
    fn receipt_json<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.receipt_json)
    }

    /// BLAKE3 of the canonical bytes (32 bytes).
    #[getter]
    fn content_hash<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.content_hash)
    }

    /// The content hash in lowercase hex.
    #[getter]
    fn content_hash_hex(&self) -> String {
        hex::encode(self.content_hash)
    }

    /// The tagged COSE_Sign1 bytes (one item of `receipts.cbor`). Pipelines built here sign
    /// every window; a window without its own signature raises `ReceiptError`
    /// (`window_not_signed`) rather than returning empty bytes.
    #[getter]
    fn cose_sign1<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        match &self.cose_sign1 {
            Some(b) => Ok(PyBytes::new(py, b)),
            None => Err(refusal::<ReceiptError>(
                py,
                "window_not_signed",
                "this window has no COSE_Sign1 of its own".to_owned(),
            )),
        }
    }

    /// The checkpoint signed when this window closed, if one was (sealed pipelines only).
    #[getter]
    fn seal(&self) -> Option<evidence::SealBatch> {
        self.seal.clone()
    }

    /// The receipt's leaf index in the stream's Merkle log (sealed pipelines only).
    #[getter]
    fn leaf_index(&self) -> Option<u64> {
        self.leaf_index
    }

    /// The receipt id, `<stream_id>:<window_id>`.
    #[getter]
    fn receipt_id(&self) -> String {
        self.fields.receipt_id.clone()
    }

    /// The window id.
    #[getter]
    fn window_id(&self) -> u64 {
        self.fields.window_id
    }

    /// `closed_at`, `YYYY-MM-DDTHH:MM:SSZ`.
    #[getter]
    fn closed_at(&self) -> String {
        self.fields.closed_at.clone()
    }

    /// Ticks in the window.
    #[getter]
    fn tick_count(&self) -> u64 {
        self.fields.tick_count
    }

    /// Inbound payload bytes.
    #[getter]
    fn inbound_bytes(&self) -> u64 {
        self.fields.inbound_bytes
    }

    /// Outbound payload bytes.
    #[getter]
    fn outbound_bytes(&self) -> u64 {
        self.fields.outbound_bytes
    }

    /// Substrate payload bytes (not on the receipt).
    #[getter]
    fn substrate_bytes(&self) -> u64 {
        self.substrate_bytes
    }

    /// The estimated energy in microjoules.
    #[getter]
    fn joules_uj(&self) -> u64 {
        self.fields.joules_uj
    }

    /// The window hash in lowercase hex.
    #[getter]
    fn window_hash(&self) -> String {
        self.fields.window_hash.clone()
    }

    /// The oracle's verdict on the window.
    #[getter]
    fn verdict(&self) -> Verdict {
        self.fields.verdict.clone()
    }

    /// The ledger's window summary (the receipt's `conservation`).
    #[getter]
    fn finding(&self) -> Finding {
        self.fields.finding.clone()
    }

    /// The early verdicts raised on the window's ticks, in tick order.
    #[getter]
    fn early(&self) -> Vec<EarlyVerdict> {
        self.early.clone()
    }

    /// Every backend's verdict, `(name, verdict)` in backend order.
    #[getter]
    fn signals(&self) -> Vec<(String, Verdict)> {
        self.signals.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "ClosedWindow(window_id={}, verdict={}, finding={}, content_hash={})",
            self.fields.window_id,
            self.fields.verdict.kind,
            self.fields.finding.kind,
            &self.content_hash_hex()[..16]
        )
    }
}

/// A receipt that verified.
#[pyclass(frozen, module = "jouleclaw._jouleclaw")]
pub struct VerifiedReceipt {
    fields: ReceiptFields,
    receipt_json: Vec<u8>,
    content_hash: [u8; 32],
    kid: [u8; 32],
}

#[pymethods]
impl VerifiedReceipt {
    /// The payload: the receipt's canonical JSON bytes.
    #[getter]
    fn receipt_json<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.receipt_json)
    }

    /// BLAKE3 of the payload (32 bytes).
    #[getter]
    fn content_hash<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.content_hash)
    }

    /// The content hash in lowercase hex.
    #[getter]
    fn content_hash_hex(&self) -> String {
        hex::encode(self.content_hash)
    }

    /// The signer's key id (RFC 9679 thumbprint, 32 bytes).
    #[getter]
    fn kid<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.kid)
    }

    /// The receipt id.
    #[getter]
    fn receipt_id(&self) -> String {
        self.fields.receipt_id.clone()
    }

    /// The steward.
    #[getter]
    fn steward(&self) -> String {
        self.fields.steward.clone()
    }

    /// The stream id.
    #[getter]
    fn stream_id(&self) -> String {
        self.fields.stream_id.clone()
    }

    /// The window id.
    #[getter]
    fn window_id(&self) -> u64 {
        self.fields.window_id
    }

    /// `closed_at`, `YYYY-MM-DDTHH:MM:SSZ`.
    #[getter]
    fn closed_at(&self) -> String {
        self.fields.closed_at.clone()
    }

    /// The verdict.
    #[getter]
    fn verdict(&self) -> Verdict {
        self.fields.verdict.clone()
    }

    /// The conservation finding.
    #[getter]
    fn finding(&self) -> Finding {
        self.fields.finding.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "VerifiedReceipt({}, verdict={}, finding={})",
            self.fields.receipt_id, self.fields.verdict.kind, self.fields.finding.kind
        )
    }
}

impl VerifiedReceipt {
    fn from_rust(v: cose::VerifiedReceipt) -> Result<Self, Jcr1Error> {
        Ok(Self {
            fields: ReceiptFields::from(&v.receipt),
            receipt_json: v.receipt.encode()?,
            content_hash: *v.content_hash.as_bytes(),
            kid: v.kid,
        })
    }
}

// --------------------------------------------------------------------------------------------
// Spec and keys
// --------------------------------------------------------------------------------------------

/// How a stream is cut into windows and which channels it has.
#[pyclass(frozen, module = "jouleclaw._jouleclaw")]
pub struct StreamSpec {
    inner: Arc<RsStreamSpec>,
}

#[pymethods]
impl StreamSpec {
    /// The duplex voice-agent layout: 200 ms windows; channels control (0), mic (1), asr (2),
    /// tts (3), llm (4), substrate (5).
    #[staticmethod]
    fn duplex_voice_default() -> Self {
        Self {
            inner: Arc::new(RsStreamSpec::duplex_voice_default()),
        }
    }

    /// A spec from the stream spec file format of `spec/TICK-TRACE.md`.
    #[staticmethod]
    fn from_json(py: Python<'_>, text: &str) -> PyResult<Self> {
        let spec =
            trace::spec_from_json(text).map_err(|e| pipeline_error(py, e, Context::Build))?;
        spec.validate()
            .map_err(|e| pipeline_error(py, e.into(), Context::Build))?;
        Ok(Self {
            inner: Arc::new(spec),
        })
    }

    /// The spec in the stream spec file format.
    fn to_json(&self) -> String {
        trace::spec_to_json(&self.inner)
    }

    /// Window length in milliseconds.
    #[getter]
    fn tick_window_ms(&self) -> u32 {
        self.inner.tick_window_ms
    }

    /// Window length in nanoseconds.
    #[getter]
    fn window_ns(&self) -> u64 {
        self.inner.window_ns()
    }

    /// Largest payload one tick may carry.
    #[getter]
    fn max_chunk_bytes(&self) -> u32 {
        self.inner.max_chunk_bytes
    }

    /// Most ticks one window may hold.
    #[getter]
    fn max_ticks_per_window(&self) -> u32 {
        self.inner.max_ticks_per_window
    }

    /// The channels as `(id, direction, kind, mime)` tuples.
    #[getter]
    fn channels(&self) -> Vec<(u32, &'static str, &'static str, String)> {
        self.inner
            .channels
            .iter()
            .map(|c| {
                (
                    c.id,
                    c.direction.as_str(),
                    c.kind_tag.as_str(),
                    c.mime.clone(),
                )
            })
            .collect()
    }

    /// The window a timestamp falls in.
    fn window_of(&self, ts_ns: u64) -> u64 {
        self.inner.window_of(ts_ns)
    }

    fn __repr__(&self) -> String {
        format!(
            "StreamSpec(tick_window_ms={}, channels={})",
            self.inner.tick_window_ms,
            self.inner.channels.len()
        )
    }
}

/// An Ed25519 signing key held in memory (the secret never appears in `repr`).
#[pyclass(frozen, module = "jouleclaw._jouleclaw")]
pub struct SigningKey {
    inner: SoftwareSigner,
}

impl SigningKey {
    fn signer(&self) -> PyResult<SoftwareSigner> {
        // SoftwareSigner is not Clone: go through its own key file text.
        SoftwareSigner::from_key_file_text(&self.inner.key_file_text())
            .map_err(|e| Python::attach(|py| jcr1_config_error(py, &e)))
    }
}

#[pymethods]
impl SigningKey {
    /// A fresh key from the operating system's randomness.
    #[staticmethod]
    fn generate() -> Self {
        Self {
            inner: SoftwareSigner::generate(),
        }
    }

    /// The RFC 8032 TEST 1 key. Public: for tests and demos only.
    #[staticmethod]
    fn rfc8032_test_key() -> Self {
        Self {
            inner: SoftwareSigner::rfc8032_test_key(),
        }
    }

    /// A key from a 32-byte secret seed.
    #[staticmethod]
    fn from_seed(py: Python<'_>, seed: &[u8]) -> PyResult<Self> {
        let seed: [u8; 32] = seed.try_into().map_err(|_| {
            refusal::<ConfigError>(
                py,
                "bad_key_file",
                format!("a seed is 32 bytes, got {}", seed.len()),
            )
        })?;
        Ok(Self {
            inner: SoftwareSigner::from_seed(&seed),
        })
    }

    /// A key from secret key file text (`jouleclaw-ed25519-secret-key `, 64 lowercase hex
    /// digits, optional newline), the format `jouleclaw keygen` writes.
    #[staticmethod]
    fn from_text(py: Python<'_>, text: &str) -> PyResult<Self> {
        Ok(Self {
            inner: SoftwareSigner::from_key_file_text(text)
                .map_err(|e| jcr1_config_error(py, &e))?,
        })
    }

    /// The secret key file text (`jouleclaw-ed25519-secret-key `, the seed in hex and a
    /// newline). Keep it secret.
    fn secret_text(&self) -> String {
        self.inner.key_file_text().to_string()
    }

    /// The 32-byte public key.
    #[getter]
    fn public_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        use cose::Signer as _;
        PyBytes::new(py, self.inner.verifying_key().as_bytes())
    }

    /// The public key file text (`signer.pub`): `jouleclaw-ed25519-public-key `, lowercase hex
    /// and a newline.
    #[getter]
    fn public_key_text(&self) -> String {
        use cose::Signer as _;
        cose::public_key_text(&self.inner.verifying_key())
    }

    /// The RFC 9679 thumbprint of the public key (the receipts' `kid`, 32 bytes).
    #[getter]
    fn kid<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        use cose::Signer as _;
        PyBytes::new(py, &cose::kid(&self.inner.verifying_key()))
    }

    fn __repr__(&self) -> String {
        use cose::Signer as _;
        format!(
            "SigningKey(public_key={})",
            hex::encode(self.inner.verifying_key().as_bytes())
        )
    }
}

/// [`public_key_arg`]'s key as a verifier's key ([`cose::ValidKey`]), checked once here: the
/// key readers already refuse what `ValidKey::new` refuses (`bad_key_file`), and a signing
/// key's public key is of prime order.
fn valid_key_arg(py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<cose::ValidKey> {
    let key = public_key_arg(py, key)?;
    cose::ValidKey::new(key).map_err(|e| jcr1_config_error(py, &e))
}

/// A public key from 32 bytes or public key file text.
fn public_key_arg(py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<PublicKey> {
    let text = if let Ok(s) = key.cast::<PyString>() {
        s.extract::<String>()?
    } else if let Ok(b) = key.cast::<PyBytes>() {
        let bytes: [u8; 32] = b.as_bytes().try_into().map_err(|_| {
            refusal::<ConfigError>(py, "bad_key_file", "a public key is 32 bytes".to_owned())
        })?;
        return cose::public_key_from_bytes(&bytes).map_err(|e| jcr1_config_error(py, &e));
    } else if let Ok(k) = key.cast::<SigningKey>() {
        use cose::Signer as _;
        return Ok(k.get().inner.verifying_key());
    } else {
        return Err(refusal::<ConfigError>(
            py,
            "bad_key_file",
            "a public key is 32 bytes, public key file text or a SigningKey".to_owned(),
        ));
    };
    cose::parse_public_key_text(&text).map_err(|e| jcr1_config_error(py, &e))
}

// --------------------------------------------------------------------------------------------
// The pipeline
// --------------------------------------------------------------------------------------------

/// The per-window pipeline of one stream: ticks in, signed `stream-window/1` receipts out.
#[pyclass(frozen, module = "jouleclaw._jouleclaw")]
pub struct Pipeline {
    inner: Mutex<evidence::State>,
    spec: Arc<RsStreamSpec>,
    public_key: PublicKey,
    steward: String,
    stream_id: String,
}

/// What a tick outcome reports, converted after the lock is released.
#[pyclass(frozen, get_all, module = "jouleclaw._jouleclaw")]
pub struct TickOutcome {
    /// The tick's window.
    window_id: u64,
    /// The tick's timestamp.
    ts_ns: u64,
    /// The tick's channel direction: `"inbound"`, `"outbound"` or `"substrate"`.
    direction: &'static str,
    /// The ledger's finding on this tick.
    finding: Finding,
    /// The oracle's early verdict on this tick, if it raised one.
    early: Option<Verdict>,
    /// The previous window, closed because this tick belongs to a later one.
    closed: Option<Py<ClosedWindow>>,
}

#[pymethods]
impl TickOutcome {
    fn __repr__(&self) -> String {
        format!(
            "TickOutcome(window_id={}, ts_ns={}, finding={}, early={}, closed={})",
            self.window_id,
            self.ts_ns,
            self.finding.kind,
            self.early.as_ref().map_or("None", |v| v.kind.as_str()),
            if self.closed.is_some() { "yes" } else { "None" }
        )
    }
}

fn marker_arg(py: Python<'_>, marker: &Bound<'_, PyAny>) -> PyResult<TickMarker> {
    let bad = |detail: String| {
        let e = PipelineError::TraceMarker { detail };
        refusal::<TickRefused>(py, e.code(), e.to_string())
    };
    if let Ok(s) = marker.cast::<PyString>() {
        return match s.extract::<String>()?.as_str() {
            "start" => Ok(TickMarker::Start),
            "end" => Ok(TickMarker::End),
            "barge_in" => Ok(TickMarker::BargeIn),
            "silence" => Ok(TickMarker::Silence),
            "end_of_turn" => Ok(TickMarker::EndOfTurn),
            other => Err(bad(format!(
                "unknown marker {other:?} (expected start, end, barge_in, silence, end_of_turn or {{\"custom\": \"...\"}})"
            ))),
        };
    }
    if let Ok(d) = marker.cast::<PyDict>()
        && d.len() == 1
        && let Some(v) = d.get_item("custom")?
        && let Ok(text) = v.cast::<PyString>()
    {
        return Ok(TickMarker::Custom(text.extract::<String>()?));
    }
    Err(bad(
        "marker must be a name or {\"custom\": \"<text>\"}".to_owned()
    ))
}

#[pymethods]
impl Pipeline {
    /// A pipeline for one stream. `signing_key` defaults to a fresh key; `spec` to the duplex
    /// voice layout. A window's `closed_at` is `epoch_unix` plus its end in stream time, in
    /// whole seconds; an epoch from which a window of this stream (a window ends at or below
    /// 2^53 ns of stream time, about 104 days) would close outside the years 0000-9999 is
    /// refused here (`epoch_out_of_range`). `seal_every=K` seals the stream (a `stream-seal/1` checkpoint
    /// every K windows and a final one at `finish()`), `window_signatures` (`"all"`,
    /// `"non_pass"`, `"none"`) says which windows are also signed on their own. With `out_dir`,
    /// `finish()` writes a run directory the `jouleclaw` command verifies; a directory that
    /// already holds a run's files is refused (`run_exists`), here and again at `finish()`.
    /// `vantage` (`"sent"` or `"played"`) states what an audio tick's time marks, and
    /// `excluded_buffer_ns` the audio buffered after that point that the stop latency does not
    /// include, when known: with `vantage` the signed document is `stop-latency/2`
    /// (`spec/STOP-LATENCY-V1.md` section 10), without it `stop-latency/1`. With `toolset`
    /// (a `Toolset`) the oracle also judges the text of `tool_channel` (default the LLM
    /// channel, as `jouleclaw run --llm-tools`) as tool calls, turn by turn, and the run
    /// summary records the toolset's grammar digest.
    #[new]
    #[pyo3(signature = (steward, stream_id, signing_key=None, spec=None, epoch_unix=0, seal_every=None, window_signatures="all", out_dir=None, vantage=None, excluded_buffer_ns=None, toolset=None, tool_channel=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        steward: &str,
        stream_id: &str,
        signing_key: Option<&Bound<'_, SigningKey>>,
        spec: Option<&Bound<'_, StreamSpec>>,
        epoch_unix: i64,
        seal_every: Option<u64>,
        window_signatures: &str,
        out_dir: Option<std::path::PathBuf>,
        vantage: Option<&str>,
        excluded_buffer_ns: Option<u64>,
        toolset: Option<&Bound<'_, toolset::Toolset>>,
        tool_channel: Option<u32>,
    ) -> PyResult<Self> {
        let vantage = match (vantage, excluded_buffer_ns) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err(refusal::<ConfigError>(
                    py,
                    "bad_vantage",
                    "excluded_buffer_ns needs vantage (\"sent\" or \"played\")".to_owned(),
                ));
            }
            (Some(v), excluded_buffer_ns) => {
                let Some(point) = jouleclaw_stop_latency::VantagePoint::parse(v) else {
                    return Err(refusal::<ConfigError>(
                        py,
                        "bad_vantage",
                        format!("vantage {v:?} is not \"sent\" or \"played\""),
                    ));
                };
                if excluded_buffer_ns.is_some_and(|n| n > jouleclaw_seal::seal::MAX_UINT) {
                    return Err(refusal::<ConfigError>(
                        py,
                        "bad_vantage",
                        "excluded_buffer_ns is above 2^53-1".to_owned(),
                    ));
                }
                Some(jouleclaw_stop_latency::Vantage {
                    point,
                    excluded_buffer_ns,
                })
            }
        };
        let signing = evidence::signing_policy(py, seal_every, window_signatures)?;
        if let Some(p) = out_dir.as_deref().and_then(evidence::existing_run_file) {
            return Err(refusal::<ConfigError>(
                py,
                "run_exists",
                format!(
                    "{} exists: out_dir must not hold another run's files",
                    p.display()
                ),
            ));
        }
        let signer = match signing_key {
            Some(k) => k.get().signer()?,
            None => SoftwareSigner::generate(),
        };
        let doc_signer = SoftwareSigner::from_key_file_text(&signer.key_file_text())
            .map_err(|e| jcr1_config_error(py, &e))?;
        use cose::Signer as _;
        let public_key = signer.verifying_key();
        let spec = match spec {
            Some(s) => s.get().inner.clone(),
            None => Arc::new(RsStreamSpec::duplex_voice_default()),
        };
        // Every window this stream can have must close at an encodable second. A window's
        // end is a receipt integer, so it ends at or below 2^53 ns (`window_span_overflow`
        // past it): the last window ends at the largest multiple of the window length there,
        // and `closed_at` is the epoch plus that end in whole seconds. An epoch whose last
        // window would close after 9999-12-31T23:59:59Z is refused here, not a window later
        // with the pipeline poisoned.
        let window_ns = spec.window_ns().max(1);
        let max_end_ns = jouleclaw_stream::canon::MAX_SAFE_INTEGER + 1;
        let last_end_s = (max_end_ns / window_ns * window_ns) / 1_000_000_000;
        let last_closed = i64::try_from(last_end_s)
            .ok()
            .and_then(|s| epoch_unix.checked_add(s));
        if jouleclaw_jcr1::UtcSecond::from_unix(epoch_unix).is_none()
            || last_closed
                .and_then(jouleclaw_jcr1::UtcSecond::from_unix)
                .is_none()
        {
            return Err(refusal::<ConfigError>(
                py,
                "epoch_out_of_range",
                format!(
                    "epoch_unix {epoch_unix}: the stream's windows close from it to {last_end_s} s after it (its last window's end in stream time), which must all lie in the years 0000-9999"
                ),
            ));
        }
        let config = PipelineConfig::new(steward, stream_id)
            .with_closed_at(ClosedAt::StreamTime { epoch_unix })
            .with_signing(signing);
        let oracle = toolset::pipeline_oracle(py, toolset, tool_channel, &spec)?;
        let summary_base = serde_json::json!({
            "trace": "python",
            "spec": "python",
            "steward": steward,
            "stream_id": stream_id,
            "epoch": jouleclaw_jcr1::UtcSecond::from_unix(epoch_unix).map(|t| t.to_string()),
            "oracle": oracle.backend_names().collect::<Vec<_>>(),
            "stages": Vec::<String>::new(),
            "llm_schema": toolset::llm_schema(toolset),
        });
        let pipeline = jouleclaw_pipeline::Pipeline::new(
            spec.clone(),
            config,
            oracle,
            Estimator::default(),
            Box::new(signer),
        )
        .map_err(|e| pipeline_error(py, e, Context::Build))?;
        let interaction = jouleclaw_interaction::PipelineMeter::new(
            jouleclaw_interaction::InteractionConfig::default(),
        )
        .map_err(|e| refusal::<ConfigError>(py, e.code(), e.to_string()))?;
        // Last, once nothing else can refuse: the directory is created if missing and held
        // until `finish` writes it.
        let out_lock = match out_dir.as_deref() {
            None => None,
            Some(dir) => Some(jouleclaw_store::writer::LockedDir::open(dir).map_err(
                |e| match e {
                    jouleclaw_store::StoreError::Io { .. } => {
                        pyo3::exceptions::PyOSError::new_err(e.to_string())
                    }
                    jouleclaw_store::StoreError::Locked { .. } => {
                        refusal::<ConfigError>(py, "out_dir_locked", e.to_string())
                    }
                    _ => refusal::<ConfigError>(py, "out_dir_not_a_directory", e.to_string()),
                },
            )?),
        };
        let state = evidence::State {
            out_lock,
            pipeline,
            meter: jouleclaw_stop_latency::StopLatencyMeter::new(),
            meter_error: None,
            interaction,
            interaction_error: None,
            hashes: Vec::new(),
            record: out_dir.as_ref().map(|_| evidence::RunRecord::default()),
            doc_signer,
            out_dir,
            summary_base,
            vantage,
        };
        Ok(Self {
            inner: Mutex::new(state),
            spec,
            public_key,
            steward: steward.to_owned(),
            stream_id: stream_id.to_owned(),
        })
    }

    /// Takes one tick. `kind` is `"audio"`, `"text"`, `"video"` or `"marker"`; a marker tick
    /// names its `marker` (`"start"`, `"end"`, `"barge_in"`, `"silence"`, `"end_of_turn"` or
    /// `{"custom": text}`) and carries no payload. `window_id` defaults to the window `ts_ns`
    /// falls in. A tick of a later window first closes the open one (`TickOutcome.closed`).
    /// A refused tick raises `TickRefused` and changes nothing.
    #[pyo3(signature = (ts_ns, channel_id, kind, payload=None, marker=None, window_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn push(
        &self,
        py: Python<'_>,
        ts_ns: u64,
        channel_id: u32,
        kind: &str,
        payload: Option<&[u8]>,
        marker: Option<&Bound<'_, PyAny>>,
        window_id: Option<u64>,
    ) -> PyResult<TickOutcome> {
        let tick_refused = |e: PipelineError| refusal::<TickRefused>(py, e.code(), e.to_string());
        let kind = match (kind, marker) {
            ("marker", Some(m)) => TickKind::Marker(marker_arg(py, m)?),
            ("marker", None) => {
                return Err(tick_refused(PipelineError::TraceMarker {
                    detail: "a marker tick needs a marker".to_owned(),
                }));
            }
            ("audio" | "text" | "video", Some(_)) => {
                return Err(tick_refused(PipelineError::TraceMarker {
                    detail: "only a marker tick has a marker".to_owned(),
                }));
            }
            ("audio", None) => TickKind::Audio,
            ("text", None) => TickKind::Text,
            ("video", None) => TickKind::Video,
            (other, _) => {
                return Err(tick_refused(PipelineError::TraceKind {
                    kind: other.to_owned(),
                }));
            }
        };
        let bytes = match (&kind, payload) {
            (TickKind::Marker(_), Some(p)) if !p.is_empty() => {
                return Err(tick_refused(PipelineError::TracePayload {
                    detail: "a marker tick carries no payload".to_owned(),
                }));
            }
            (_, Some(p)) => {
                // Refuse an oversized payload before copying it.
                if p.len() > self.spec.max_chunk_bytes as usize {
                    let e = PipelineError::Stream(jouleclaw_stream::StreamError::ChunkTooLarge {
                        len: p.len(),
                        max: self.spec.max_chunk_bytes,
                    });
                    return Err(tick_refused(e));
                }
                Bytes::copy_from_slice(p)
            }
            (_, None) => Bytes::new(),
        };
        let window_id = window_id.unwrap_or_else(|| self.spec.window_of(ts_ns));
        let tick = Tick::new(window_id, channel_id, kind, bytes, ts_ns);
        let inner = &self.inner;
        let spec = &*self.spec;
        let result = py.detach(move || match inner.lock() {
            Ok(mut s) => {
                let copy = tick.clone();
                let outcome = s.pipeline.push(tick)?;
                s.pushed(&copy, &outcome, spec);
                Ok(outcome)
            }
            Err(_) => Err(PipelineError::Poisoned),
        });
        let outcome = result.map_err(|e| pipeline_error(py, e, Context::Tick))?;
        let closed = match outcome.closed {
            Some(w) => Some(Py::new(py, ClosedWindow::from(w))?),
            None => None,
        };
        Ok(TickOutcome {
            window_id: outcome.window_id,
            ts_ns: outcome.ts_ns,
            direction: outcome.direction.as_str(),
            finding: Finding::from(outcome.finding),
            early: outcome.early.as_ref().map(Verdict::from),
            closed,
        })
    }

    /// Closes the open window, if there is one: judged, minted and signed. `None` when no
    /// window is open.
    fn close_window(&self, py: Python<'_>) -> PyResult<Option<ClosedWindow>> {
        let inner = &self.inner;
        let result = py.detach(move || match inner.lock() {
            Ok(mut s) => {
                let closed = s.pipeline.close_window()?;
                if let Some(w) = &closed {
                    s.closed(w);
                }
                Ok(closed)
            }
            Err(_) => Err(PipelineError::Poisoned),
        });
        let closed = result.map_err(|e| pipeline_error(py, e, Context::Tick))?;
        Ok(closed.map(ClosedWindow::from))
    }

    /// Ends the stream: closes the open window, signs the `stop-latency/1` and
    /// `interaction-metrics/1` documents and the final checkpoint (when sealing; a
    /// `stream-seal/2` committing to both documents' digests), and writes `out_dir` when it
    /// was given. Afterwards every call raises `PipelinePoisoned` (`pipeline_finished`).
    fn finish(&self, py: Python<'_>) -> PyResult<evidence::Finished> {
        let inner = &self.inner;
        let public = self.public_key;
        let result = py.detach(move || match inner.lock() {
            Ok(mut s) => s.finish(&public),
            Err(_) => Err(evidence::FinishError::Pipeline(PipelineError::Poisoned)),
        });
        result.map_err(|e| e.into_py(py))?.into_py(py)
    }

    /// Every barge-in so far, measured up to the last tick pushed (`ended_by` is `"open"` for
    /// one still measuring).
    fn stop_latencies(&self, py: Python<'_>) -> PyResult<Vec<evidence::StopLatency>> {
        match self.inner.lock() {
            Ok(s) => Ok(s
                .meter
                .barge_ins()
                .iter()
                .map(evidence::StopLatency::from)
                .collect()),
            Err(_) => {
                let e = PipelineError::Poisoned;
                Err(refusal::<PipelinePoisoned>(py, e.code(), e.to_string()))
            }
        }
    }

    /// The window being filled, if any.
    #[getter]
    fn open_window_id(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        match self.inner.lock() {
            Ok(s) => Ok(s.pipeline.open_window_id()),
            Err(_) => {
                let e = PipelineError::Poisoned;
                Err(refusal::<PipelinePoisoned>(py, e.code(), e.to_string()))
            }
        }
    }

    /// The stream spec.
    #[getter]
    fn spec(&self) -> StreamSpec {
        StreamSpec {
            inner: self.spec.clone(),
        }
    }

    /// The signer's 32-byte public key.
    #[getter]
    fn public_key<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.public_key.as_bytes())
    }

    /// The public key file text (`signer.pub`).
    #[getter]
    fn public_key_text(&self) -> String {
        cose::public_key_text(&self.public_key)
    }

    /// The receipts' steward.
    #[getter]
    fn steward(&self) -> String {
        self.steward.clone()
    }

    /// The receipts' stream id.
    #[getter]
    fn stream_id(&self) -> String {
        self.stream_id.clone()
    }

    fn __repr__(&self) -> String {
        format!(
            "Pipeline(steward={:?}, stream_id={:?})",
            self.steward, self.stream_id
        )
    }
}

// --------------------------------------------------------------------------------------------
// Functions
// --------------------------------------------------------------------------------------------

/// A fresh signing key from the operating system's randomness.
#[pyfunction]
fn keygen() -> SigningKey {
    SigningKey::generate()
}

/// Verifies one tagged COSE_Sign1 receipt against `public_key` (32 bytes, public key file text
/// or a `SigningKey`). Raises `VerifyError` with the refusal code.
#[pyfunction]
fn verify(
    py: Python<'_>,
    cose_sign1: &[u8],
    public_key: &Bound<'_, PyAny>,
) -> PyResult<VerifiedReceipt> {
    let key = public_key_arg(py, public_key)?;
    let bytes = cose_sign1.to_vec();
    let result = py
        .detach(move || cose::verify(&bytes, &SingleKey::new(key)).map(VerifiedReceipt::from_rust));
    match result {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(refusal::<ReceiptError>(py, e.code(), e.to_string())),
        Err(r) => Err(cose_error(py, r)),
    }
}

/// Verifies many receipts, each exactly as `verify` does (`verify_strict` per signature, no batch
/// equation; the key is checked once for the whole call). Returns one entry per item, in order:
/// a `VerifiedReceipt`, or the `VerifyError` that item was refused with (not raised).
#[pyfunction]
fn verify_batch<'py>(
    py: Python<'py>,
    items: Vec<Vec<u8>>,
    public_key: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let key = public_key_arg(py, public_key)?;
    let results = py.detach(move || {
        let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
        cose::verify_batch(&refs, &SingleKey::new(key))
            .into_iter()
            .map(|r| r.map(VerifiedReceipt::from_rust))
            .collect::<Vec<_>>()
    });
    let out = PyList::empty(py);
    for r in results {
        match r {
            Ok(Ok(v)) => out.append(Py::new(py, v)?)?,
            Ok(Err(e)) => {
                out.append(refusal::<ReceiptError>(py, e.code(), e.to_string()).value(py))?
            }
            Err(refused) => out.append(cose_error(py, refused).value(py))?,
        }
    }
    Ok(out)
}

/// Splits an RFC 8742 CBOR sequence (such as `receipts.cbor`) into its items' bytes. Raises
/// `VerifyError` (`cose_malformed`) naming the first item that is not well-formed CBOR.
#[pyfunction]
fn split_cbor_sequence<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    match cose::split_cbor_sequence(data) {
        Ok(items) => Ok(items.into_iter().map(|b| PyBytes::new(py, b)).collect()),
        Err(index) => Err(refusal::<VerifyError>(
            py,
            CoseRefusal::MalformedCbor.as_str(),
            format!("item {index} of the CBOR sequence is not well-formed CBOR"),
        )),
    }
}

/// Verifies a stream directory (`receipts.jsonl`, `receipts.cbor`, and `seals.cbor` when
/// sealed, with `inclusion.cbor` when present: layouts `stream-at-rest/1` and `/2`) with the one
/// verifier of the stream at rest (spec/STREAM-AT-REST.md), which also checks
/// `stop-latency.cbor` and `interaction-metrics.cbor` as `jouleclaw receipts verify DIR` does
/// (signature, binding to the receipts, missing when required). Returns a dict: `outcome`
/// (`"complete"`, `"unsealed"`: every receipt verified but completeness is unknown, or
/// `"failed"`), `completeness` (`"complete"`, `"incomplete"`, `"unknown"`), `receipts`,
/// `verified`, `checkpoints`, `problem_count` (every problem, named or not) and `problems` (the
/// first 100 of the files', then the first 100 of each signed document's, each a dict with
/// `code`, `file`, `index`, `window_id`, `message`).
/// Raises `OSError` when the directory cannot be read.
#[pyfunction]
fn verify_stream_dir<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
    public_key: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyDict>> {
    use jouleclaw_store::Completeness;
    let key = valid_key_arg(py, public_key)?;
    let report = py
        .detach(move || jouleclaw_store::verify_dir(&path, &key, &mut |_, _| {}))
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?;
    let out = PyDict::new(py);
    // The outcome counts the signed documents' findings (spec/STOP-LATENCY-V1.md section 7,
    // spec/INTERACTION-METRICS-V1.md section 6), as `receipts verify DIR` refuses them.
    out.set_item("outcome", report.outcome().code())?;
    out.set_item(
        "completeness",
        match report.completeness {
            Completeness::Complete => "complete",
            Completeness::Incomplete => "incomplete",
            Completeness::Unknown => "unknown",
        },
    )?;
    out.set_item("receipts", report.receipts.len())?;
    out.set_item("verified", report.verified())?;
    out.set_item("checkpoints", report.checkpoints)?;
    out.set_item(
        "problem_count",
        report
            .problem_count
            .saturating_add(report.document_problem_count()),
    )?;
    let problems = PyList::empty(py);
    for p in report.problems.iter().chain(&report.document_problems) {
        let d = PyDict::new(py);
        d.set_item("code", p.code)?;
        d.set_item("file", p.file)?;
        d.set_item("index", p.index)?;
        d.set_item("window_id", p.window_id)?;
        d.set_item("message", &p.message)?;
        problems.append(d)?;
    }
    out.set_item("problems", problems)?;
    Ok(out)
}

/// Stream time in seconds with trailing zeros trimmed: `1240000000` -> `"1.24s"`.
#[pyfunction]
fn format_ts(ts_ns: u64) -> String {
    rs_format_ts(ts_ns)
}

/// The extension module.
#[pymodule]
fn _jouleclaw(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("JouleclawError", py.get_type::<JouleclawError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("TickRefused", py.get_type::<TickRefused>())?;
    m.add("ReceiptError", py.get_type::<ReceiptError>())?;
    m.add("PipelinePoisoned", py.get_type::<PipelinePoisoned>())?;
    m.add("VerifyError", py.get_type::<VerifyError>())?;
    m.add("ToolsetError", py.get_type::<toolset::ToolsetError>())?;
    m.add_class::<StreamSpec>()?;
    m.add_class::<SigningKey>()?;
    m.add_class::<Pipeline>()?;
    m.add_class::<TickOutcome>()?;
    m.add_class::<ClosedWindow>()?;
    m.add_class::<VerifiedReceipt>()?;
    m.add_class::<Verdict>()?;
    m.add_class::<Finding>()?;
    m.add_class::<EarlyVerdict>()?;
    m.add_class::<evidence::StopLatency>()?;
    m.add_class::<evidence::StopLatencyDocument>()?;
    m.add_class::<evidence::SealBatch>()?;
    m.add_class::<evidence::Finished>()?;
    m.add_function(wrap_pyfunction!(evidence::verify_stop_latency, m)?)?;
    m.add_class::<interaction::InteractionDocument>()?;
    m.add_class::<interaction::InteractionEvent>()?;
    m.add_class::<toolset::Toolset>()?;
    m.add_class::<toolset::RefusedTool>()?;
    m.add_class::<toolset::CallVerdict>()?;
    m.add_class::<toolset::ToolCallValidator>()?;
    m.add_function(wrap_pyfunction!(
        interaction::verify_interaction_metrics,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(keygen, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(verify_batch, m)?)?;
    m.add_function(wrap_pyfunction!(split_cbor_sequence, m)?)?;
    m.add_function(wrap_pyfunction!(format_ts, m)?)?;
    m.add_function(wrap_pyfunction!(verify_stream_dir, m)?)?;
    m.add("CONTROL", duplex::CONTROL)?;
    m.add("MIC", duplex::MIC)?;
    m.add("ASR", duplex::ASR)?;
    m.add("TTS", duplex::TTS)?;
    m.add("LLM", duplex::LLM)?;
    m.add("SUBSTRATE", duplex::SUBSTRATE)?;
    m.add("MIC_BYTES_PER_WINDOW", duplex::MIC_BYTES_PER_WINDOW)?;
    m.add("TTS_BYTES_PER_WINDOW", duplex::TTS_BYTES_PER_WINDOW)?;
    m.add("BARGE_IN_DEADLINE_MS", BARGE_IN_DEADLINE_MS)?;
    // The store's one list of a run directory's files, in the order its writer commits them.
    m.add(
        "RUN_FILES",
        pyo3::types::PyTuple::new(py, jouleclaw_store::layout::RUN_FILES)?,
    )?;
    Ok(())
}
