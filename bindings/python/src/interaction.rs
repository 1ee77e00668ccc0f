//! The signed `interaction-metrics/1` document (`spec/INTERACTION-METRICS-V1.md`) for Python:
//! measured beside the `Pipeline` by `jouleclaw_interaction::PipelineMeter` (a run directory's
//! is checked by the stream verifier, `verify_stream_dir`).

use jouleclaw_interaction::{
    self as im, Event, InteractionDocument as RsDocument, Panel, SignedInteraction,
};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::{VerifyError, refusal};

/// One interaction event (`spec/INTERACTION-METRICS-V1.md` section 2), in frames of the
/// document's `tick_ns`.
#[pyclass(frozen, get_all, skip_from_py_object, module = "jouleclaw._jouleclaw")]
#[derive(Clone)]
pub struct InteractionEvent {
    /// `"response"`, `"no_response"`, `"yield"`, `"no_yield"`, `"backchannel_correct"`,
    /// `"backchannel_error"`, `"vocal_tic_correct"`, `"vocal_tic_error"`,
    /// `"non_directed_correct"`, `"non_directed_error"` or `"agent_interrupts_user"`.
    kind: &'static str,
    /// The frame the event is dated at.
    tick: u64,
    /// The first frame of what the event is about.
    segment_tick: u64,
    /// Frames of latency (`response`, `yield`), else `None`.
    latency_ticks: Option<u64>,
    /// The latency in nanoseconds (`latency_ticks` frames), else `None`.
    latency_ns: Option<u64>,
    /// The window of the first tick observed in frame `tick`, if a tick came in it.
    window_id: Option<u64>,
}

impl InteractionEvent {
    fn of(e: &Event, tick_ns: u64) -> Self {
        Self {
            kind: e.kind.as_str(),
            tick: e.tick,
            segment_tick: e.segment_tick,
            latency_ticks: e.latency_ticks,
            latency_ns: e.latency_ticks.map(|t| t.saturating_mul(tick_ns)),
            window_id: e.window_id,
        }
    }
}

#[pymethods]
impl InteractionEvent {
    fn __repr__(&self) -> String {
        format!(
            "InteractionEvent(kind={:?}, tick={}, latency_ticks={:?}, window_id={:?})",
            self.kind, self.tick, self.latency_ticks, self.window_id
        )
    }
}

/// A signed `interaction-metrics/1` document: τ-voice's interaction panel of one stream, its
/// events, bound to the stream's window receipts.
#[pyclass(frozen, module = "jouleclaw._jouleclaw")]
pub struct InteractionDocument {
    doc: RsDocument,
    panel: Panel,
    payload: Vec<u8>,
    cose_sign1: Vec<u8>,
    content_hash: [u8; 32],
}

impl InteractionDocument {
    pub(crate) fn from_signed(s: SignedInteraction) -> Self {
        Self {
            panel: s.document.panel(),
            doc: s.document,
            payload: s.payload,
            cose_sign1: s.cose_sign1,
            content_hash: s.content_hash,
        }
    }
}

#[pymethods]
impl InteractionDocument {
    /// The canonical JSON bytes.
    #[getter]
    fn document_json<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.payload)
    }

    /// The tagged COSE_Sign1 (what `interaction-metrics.cbor` holds).
    #[getter]
    fn cose_sign1<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.cose_sign1)
    }

    /// BLAKE3 of the canonical bytes, hex.
    #[getter]
    fn content_hash_hex(&self) -> String {
        hex::encode(self.content_hash)
    }

    /// Its schema id: `"interaction-metrics/1"`.
    #[getter]
    fn schema(&self) -> &'static str {
        im::INTERACTION_SCHEMA
    }

    /// Every event, in frame order.
    #[getter]
    fn events(&self) -> Vec<InteractionEvent> {
        self.doc
            .events
            .iter()
            .map(|e| InteractionEvent::of(e, self.doc.config.tick_ns))
            .collect()
    }

    /// The detection windows, in nanoseconds, by their wire names.
    #[getter]
    fn config<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in self.doc.config.fields() {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// Frames the meter saw.
    #[getter]
    fn frame_count(&self) -> u64 {
        self.doc.frame_count
    }

    /// L_R: mean seconds from the end of a user turn to the agent's response.
    #[getter]
    fn response_latency_mean(&self) -> Option<f64> {
        self.panel.response_latency_mean
    }

    /// L_Y: mean seconds from an interruption to the first frame without agent speech.
    #[getter]
    fn yield_latency_mean(&self) -> Option<f64> {
        self.panel.yield_latency_mean
    }

    /// R_R: responses over user turns.
    #[getter]
    fn response_rate(&self) -> Option<f64> {
        self.panel.response_rate
    }

    /// R_Y: yields over interruptions, at the 2 s no-yield window.
    #[getter]
    fn yield_rate(&self) -> Option<f64> {
        self.panel.yield_rate
    }

    /// The yield rate at the substrate's 150 ms deadline.
    #[getter]
    fn yield_rate_deadline(&self) -> Option<f64> {
        self.panel.yield_rate_deadline
    }

    /// I_A: agent interruptions per user turn.
    #[getter]
    fn agent_interruption_rate(&self) -> Option<f64> {
        self.panel.agent_interruption_rate
    }

    /// S_BC: the share of backchannels the agent talked through.
    #[getter]
    fn selectivity_backchannel(&self) -> Option<f64> {
        self.panel.selectivity_backchannel
    }

    /// S_VT: the share of vocal tics the agent ignored.
    #[getter]
    fn selectivity_vocal_tic(&self) -> Option<f64> {
        self.panel.selectivity_vocal_tic
    }

    /// S_ND: the share of speech not directed at the agent that it ignored.
    #[getter]
    fn selectivity_non_directed(&self) -> Option<f64> {
        self.panel.selectivity_non_directed
    }

    /// The panel as `jouleclaw metrics interaction --json` prints it for this one call
    /// (τ-voice's `interaction_metrics` block, `substrate` and `config`), as JSON text.
    #[getter]
    fn panel_json(&self) -> String {
        self.panel.to_json().to_string()
    }

    /// The event counts of the document (`counts`), by wire name.
    #[getter]
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in im::count_events(&self.doc.config, &self.doc.events) {
            d.set_item(k, v)?;
        }
        Ok(d)
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

    fn __repr__(&self) -> String {
        format!(
            "InteractionDocument(stream_id={:?}, events={}, window_count={})",
            self.doc.stream_id,
            self.doc.events.len(),
            self.doc.window_count
        )
    }
}

/// Verifies a signed `interaction-metrics/1` document against `public_key`; with
/// `receipts_jsonl` (the bytes of a `receipts.jsonl`) also its binding to those receipts.
/// Raises `VerifyError` with the refusal or binding code.
#[pyfunction]
#[pyo3(signature = (cose_sign1, public_key, receipts_jsonl=None))]
pub(crate) fn verify_interaction_metrics(
    py: Python<'_>,
    cose_sign1: &[u8],
    public_key: &Bound<'_, PyAny>,
    receipts_jsonl: Option<&[u8]>,
) -> PyResult<InteractionDocument> {
    let key = crate::valid_key_arg(py, public_key)?;
    let signed = im::verify(cose_sign1, &key)
        .map_err(|e| refusal::<VerifyError>(py, e.code(), e.to_string()))?;
    if let Some(text) = receipts_jsonl {
        let receipts = crate::evidence::receipts_of_jsonl(py, text)?;
        if let Some(p) = im::check_receipts(&signed.document, &receipts)
            .into_iter()
            .next()
        {
            return Err(refusal::<VerifyError>(py, p.code, p.detail));
        }
    }
    Ok(InteractionDocument::from_signed(signed))
}
