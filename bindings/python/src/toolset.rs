//! Toolsets from Python: a whole toolset (an MCP `tools/list` result or an OpenAI `tools`
//! array) compiled by `jouleclaw_structured::Toolset` into one grammar for a call
//! `{"name": ..., "arguments": {...}}`, its streaming validator, and the structured-output
//! oracle a [`crate::Pipeline`] built with a toolset adds to its composite
//! (`spec/STRUCTURED-OUTPUT.md`, "Toolsets" and "StructuredOutputOracle").
//!
//! Nothing here judges on its own: [`Toolset`] wraps `Toolset::compile`, [`ToolCallValidator`]
//! wraps `StructuredValidator`, and every code is the structured crate's stable code.

use std::sync::Arc;

use jouleclaw_pipeline::duplex_voice_backends;
use jouleclaw_stream::{StreamSpec as RsStreamSpec, TickKindTag, duplex};
use jouleclaw_stream_oracle::CompositeStreamOracle;
use jouleclaw_structured::{
    Grammar, Refusal, Status, StructuredError, StructuredOutputOracle, StructuredValidator,
    Toolset as RsToolset, ToolsetOptions,
};
use pyo3::create_exception;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::{ConfigError, JouleclawError, refusal};

create_exception!(
    _jouleclaw,
    ToolsetError,
    JouleclawError,
    "A toolset was refused when compiled; `code` is the structured crate's stable code \
     (`toolset_invalid`, `toolset_tool_refused`, `schema_not_json`, `schema_over_limit`), and \
     for `toolset_tool_refused` `tool` names the tool and `tool_code` gives its refusal's code."
);

/// The `ToolsetError` for a compile refusal.
fn toolset_error(py: Python<'_>, e: &StructuredError) -> PyErr {
    let err = refusal::<ToolsetError>(py, e.code(), e.to_string());
    if let StructuredError::ToolRefused { name, source } = e {
        let value = err.value(py);
        if let Err(set) = value
            .setattr("tool", name.as_str())
            .and_then(|()| value.setattr("tool_code", source.code()))
        {
            return set;
        }
    }
    err
}

/// The text of a toolset argument: `str` or `bytes`.
fn text_arg(tools: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(s) = tools.cast::<PyString>() {
        return Ok(s.extract::<String>()?.into_bytes());
    }
    if let Ok(b) = tools.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(
        "a toolset is JSON text: str or bytes",
    ))
}

/// A tool a [`Toolset`] left out: its name and why its schema does not compile.
#[pyclass(frozen, get_all, skip_from_py_object, module = "jouleclaw._jouleclaw")]
#[derive(Clone)]
pub struct RefusedTool {
    /// The tool's name.
    name: String,
    /// The compile refusal's stable code (`schema_unsupported_keyword`, ...).
    code: &'static str,
    /// The refusal's message.
    message: String,
}

#[pymethods]
impl RefusedTool {
    fn __repr__(&self) -> String {
        format!("RefusedTool(name={:?}, code={:?})", self.name, self.code)
    }
}

/// What a [`ToolCallValidator`] concludes: `kind` is `"pass"` (accepted by `finish`),
/// `"need_more"` (valid so far) or `"fail"` (refused, with the stable `code`, the byte
/// `offset` within the call, the JSON Pointer `path` and the code's `refusal_class`).
#[pyclass(frozen, get_all, skip_from_py_object, module = "jouleclaw._jouleclaw")]
#[derive(Clone, PartialEq, Eq)]
pub struct CallVerdict {
    /// `"pass"`, `"need_more"` or `"fail"`.
    kind: &'static str,
    /// For `fail`: the refusal code (`unknown_tag`, `above_maximum`, `truncated`, ...).
    code: Option<&'static str>,
    /// For `fail`: the offset of the byte at which the call became impossible.
    offset: Option<u64>,
    /// For `fail`: the JSON Pointer of the value the refusal is about.
    path: Option<String>,
    /// For `fail`: `"syntax"`, `"limit"`, `"schema"` or `"control"`.
    refusal_class: Option<&'static str>,
}

impl CallVerdict {
    const PASS: Self = Self::plain("pass");
    const NEED_MORE: Self = Self::plain("need_more");

    const fn plain(kind: &'static str) -> Self {
        Self {
            kind,
            code: None,
            offset: None,
            path: None,
            refusal_class: None,
        }
    }

    fn fail(r: &Refusal) -> Self {
        Self {
            kind: "fail",
            code: Some(r.code.as_str()),
            offset: Some(r.offset),
            path: Some(r.path.clone()),
            refusal_class: Some(r.code.class().as_str()),
        }
    }

    fn of(result: Result<(), Refusal>, done: Self) -> Self {
        match result {
            Ok(()) => done,
            Err(r) => Self::fail(&r),
        }
    }
}

#[pymethods]
impl CallVerdict {
    fn __repr__(&self) -> String {
        match (self.code, self.offset, &self.path) {
            (Some(code), Some(offset), Some(path)) => {
                format!("CallVerdict(fail, code={code:?}, offset={offset}, path={path:?})")
            }
            _ => format!("CallVerdict({})", self.kind),
        }
    }

    fn __str__(&self) -> String {
        self.kind.to_owned()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<CallVerdict>().is_ok_and(|o| *o.get() == *self)
    }

    fn __hash__(&self) -> u64 {
        // A stable hash of the fields (equal verdicts hash alike).
        let mut h = blake3::Hasher::new();
        h.update(self.kind.as_bytes());
        h.update(&[0]);
        h.update(self.code.unwrap_or_default().as_bytes());
        h.update(&[0]);
        h.update(&self.offset.unwrap_or(u64::MAX).to_le_bytes());
        h.update(self.path.as_deref().unwrap_or_default().as_bytes());
        let bytes = h.finalize();
        let mut out = [0u8; 8];
        out.copy_from_slice(&bytes.as_bytes()[..8]);
        u64::from_le_bytes(out)
    }
}

/// A whole toolset compiled into one grammar for a call `{"name": NAME, "arguments": {...}}`:
/// the call is routed by its name as the bytes arrive and its arguments judged by that tool's
/// schema. `tools` is the JSON text (`str` or `bytes`) of an MCP `tools/list` result (or the
/// JSON-RPC response holding it) or of an OpenAI `tools` array. A tool whose schema does not
/// compile is left out and listed in `refused`; with `strict=True` the toolset is refused
/// instead (`ToolsetError`, `toolset_tool_refused`).
#[pyclass(frozen, module = "jouleclaw._jouleclaw")]
pub struct Toolset {
    grammar: Arc<Grammar>,
    tools: Vec<String>,
    refused: Vec<RefusedTool>,
}

impl Toolset {
    /// The grammar of a call to any kept tool.
    pub(crate) fn grammar(&self) -> &Arc<Grammar> {
        &self.grammar
    }
}

#[pymethods]
impl Toolset {
    #[new]
    #[pyo3(signature = (tools, *, strict=false))]
    fn new(py: Python<'_>, tools: &Bound<'_, PyAny>, strict: bool) -> PyResult<Self> {
        let text = text_arg(tools)?;
        let options = ToolsetOptions {
            strict,
            ..ToolsetOptions::default()
        };
        let compiled = py
            .detach(move || RsToolset::compile(&text, &options))
            .map_err(|e| toolset_error(py, &e))?;
        let tools = compiled.tools().to_vec();
        let refused = compiled
            .refused()
            .iter()
            .map(|r| RefusedTool {
                name: r.name.clone(),
                code: r.code,
                message: r.message.clone(),
            })
            .collect();
        Ok(Self {
            grammar: Arc::new(compiled.into_grammar()),
            tools,
            refused,
        })
    }

    /// The names of the tools the grammar holds, in the order listed.
    #[getter]
    fn tools(&self) -> Vec<String> {
        self.tools.clone()
    }

    /// The tools left out, each with its compile refusal's code, in the order listed.
    #[getter]
    fn refused(&self) -> Vec<RefusedTool> {
        self.refused.clone()
    }

    /// The BLAKE3 digest of the toolset's grammar, lowercase hex (64 digits): it covers every
    /// kept tool's name, description and schema, and the limits. A receipt's structured
    /// verdict names it by its first 16 digits (`structured:<prefix>`).
    #[getter]
    fn grammar_digest(&self) -> String {
        self.grammar.digest().to_hex().to_string()
    }

    /// The digest's first 16 hex digits.
    #[getter]
    fn digest_prefix(&self) -> String {
        self.grammar.digest_prefix()
    }

    /// The name of the oracle a `Pipeline` built with this toolset adds:
    /// `structured:<digest_prefix>`.
    #[getter]
    fn oracle_name(&self) -> String {
        format!("structured:{}", self.grammar.digest_prefix())
    }

    /// The canonical JSON Schema of a call, as handed to a model provider.
    #[getter]
    fn projection<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, self.grammar.projection())
    }

    /// A fresh streaming validator of one call.
    fn validator(&self) -> ToolCallValidator {
        ToolCallValidator {
            inner: StructuredValidator::new(Arc::clone(&self.grammar)),
        }
    }

    /// Judges one whole call (`bytes` or `str`): `pass` or `fail`, the same verdict as
    /// pushing it in any chunks and finishing.
    fn validate(&self, py: Python<'_>, call: &Bound<'_, PyAny>) -> PyResult<CallVerdict> {
        let bytes = call_arg(call)?;
        let grammar = Arc::clone(&self.grammar);
        Ok(py.detach(move || CallVerdict::of(grammar.validate(&bytes), CallVerdict::PASS)))
    }

    fn __repr__(&self) -> String {
        format!(
            "Toolset(tools={}, refused={}, digest={})",
            self.tools.len(),
            self.refused.len(),
            self.grammar.digest_prefix()
        )
    }
}

/// The bytes of a call argument: `bytes` or `str` (UTF-8).
fn call_arg(call: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(b) = call.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(s) = call.cast::<PyString>() {
        return Ok(s.extract::<String>()?.into_bytes());
    }
    Err(pyo3::exceptions::PyTypeError::new_err(
        "a call is bytes or str",
    ))
}

/// The streaming validator of one call: `push` chunks of the call's bytes as they arrive
/// (`need_more` while valid so far, `fail` at the first byte after which no valid call
/// exists), then `finish` (`pass` or `fail`). A refusal is sticky; the verdict does not depend
/// on how the bytes are split. Memory is bounded by the grammar, never by the call.
#[pyclass(module = "jouleclaw._jouleclaw")]
pub struct ToolCallValidator {
    inner: StructuredValidator,
}

#[pymethods]
impl ToolCallValidator {
    /// Feeds the next bytes of the call: `need_more` (never `pass`: only `finish` accepts) or
    /// `fail`. After `pass`, a push is `fail` with `after_finish` and the acceptance stands.
    fn push(&mut self, chunk: &Bound<'_, PyAny>) -> PyResult<CallVerdict> {
        let bytes = call_arg(chunk)?;
        Ok(CallVerdict::of(
            self.inner.push(&bytes),
            CallVerdict::NEED_MORE,
        ))
    }

    /// Declares the end of the call: `pass` for a complete valid call, `fail` otherwise
    /// (`truncated`, `empty_document`, ...). Idempotent.
    fn finish(&mut self) -> CallVerdict {
        CallVerdict::of(self.inner.finish(), CallVerdict::PASS)
    }

    /// Refuses the call in progress with `cancelled` (sticky); after `pass` or `fail` it changes
    /// nothing.
    fn cancel(&mut self, reason: &str) {
        self.inner.cancel(reason);
    }

    /// Where the validator stands: `need_more`, `pass` or `fail`.
    #[getter]
    fn status(&self) -> CallVerdict {
        match self.inner.status() {
            Status::Incomplete => CallVerdict::NEED_MORE,
            Status::Accepted => CallVerdict::PASS,
            Status::Refused(r) => CallVerdict::fail(&r),
        }
    }

    /// The bytes of the call consumed so far (a refused byte is not consumed).
    #[getter]
    fn bytes_consumed(&self) -> u64 {
        self.inner.usage().bytes
    }

    /// The byte values a next `push` of one byte would not refuse, ascending, and whether
    /// `finish` would accept now: `(bytes, can_finish)`.
    fn expected_next<'py>(&self, py: Python<'py>) -> (Bound<'py, PyBytes>, bool) {
        let next = self.inner.expected_next();
        let bytes: Vec<u8> = next.iter().collect();
        (PyBytes::new(py, &bytes), next.can_finish())
    }

    fn __repr__(&self) -> String {
        format!(
            "ToolCallValidator({}, bytes_consumed={})",
            self.status().kind,
            self.inner.usage().bytes
        )
    }
}

/// The oracle of a `Pipeline`: the duplex voice composite, with a toolset's structured-output
/// oracle over `tool_channel` (default the LLM channel, as `jouleclaw run --llm-tools` has it)
/// when a toolset is given. The channel must be a text channel of `spec`.
pub(crate) fn pipeline_oracle(
    py: Python<'_>,
    toolset: Option<&Bound<'_, Toolset>>,
    tool_channel: Option<u32>,
    spec: &RsStreamSpec,
) -> PyResult<CompositeStreamOracle> {
    let mut backends = duplex_voice_backends();
    match (toolset, tool_channel) {
        (None, None) => {}
        (None, Some(_)) => {
            return Err(refusal::<ConfigError>(
                py,
                "bad_tool_channel",
                "tool_channel needs a toolset".to_owned(),
            ));
        }
        (Some(t), channel) => {
            let channel = channel.unwrap_or(duplex::LLM);
            let text = spec
                .channels
                .iter()
                .any(|c| c.id == channel && c.kind_tag == TickKindTag::Text);
            if !text {
                return Err(refusal::<ConfigError>(
                    py,
                    "bad_tool_channel",
                    format!("tool_channel {channel} is not a text channel of the stream spec"),
                ));
            }
            backends.push(Box::new(
                StructuredOutputOracle::new(Arc::clone(t.get().grammar())).with_channel(channel),
            ));
        }
    }
    Ok(CompositeStreamOracle::new("duplex-voice", backends))
}

/// The run summary's `llm_schema` for a pipeline built with `toolset`: the grammar digest, as
/// `jouleclaw run --llm-tools` records it (`file` is `"python"`: no file was read).
pub(crate) fn llm_schema(toolset: Option<&Bound<'_, Toolset>>) -> serde_json::Value {
    match toolset {
        Some(t) => serde_json::json!({
            "file": "python",
            "grammar_digest": t.get().grammar_digest(),
        }),
        None => serde_json::Value::Null,
    }
}
