"""jouleclaw: signed per-window receipts for streaming AI cascades, from Python.

A thin layer over the Rust crates of jouleclaw-rs (the extension module ``jouleclaw._jouleclaw``):
the pipeline, the oracles, the conservation ledger, hashing, minting and signing all run in Rust;
this package only re-exports them. ``jouleclaw.pipecat`` holds a Pipecat observer that maps a
Pipecat pipeline's frames onto the duplex voice channels. ``Toolset`` compiles a whole toolset
(an MCP ``tools/list`` result or an OpenAI ``tools`` array) into one grammar for a tool call,
with its streaming ``ToolCallValidator``; ``Pipeline(toolset=...)`` judges tool calls with it.

    from jouleclaw import Pipeline, SigningKey, CONTROL, MIC, verify

    key = SigningKey.generate()
    p = Pipeline("did:example:steward", "call-1", signing_key=key)
    p.push(0, MIC, "audio", bytes(6400))
    p.push(40_000_000, CONTROL, "marker", marker="barge_in").early.kind   # 'yield'
    w = p.close_window()
    verify(w.cose_sign1, key.public_key).verdict.kind                       # 'yield'
"""

from ._jouleclaw import (
    ASR,
    BARGE_IN_DEADLINE_MS,
    CONTROL,
    LLM,
    MIC,
    MIC_BYTES_PER_WINDOW,
    RUN_FILES,
    SUBSTRATE,
    TTS,
    TTS_BYTES_PER_WINDOW,
    CallVerdict,
    ClosedWindow,
    ConfigError,
    EarlyVerdict,
    Finding,
    Finished,
    InteractionDocument,
    InteractionEvent,
    JouleclawError,
    Pipeline,
    PipelinePoisoned,
    ReceiptError,
    RefusedTool,
    SealBatch,
    SigningKey,
    StopLatency,
    StopLatencyDocument,
    StreamSpec,
    TickOutcome,
    TickRefused,
    ToolCallValidator,
    Toolset,
    ToolsetError,
    Verdict,
    VerifiedReceipt,
    VerifyError,
    format_ts,
    keygen,
    split_cbor_sequence,
    verify,
    verify_batch,
    verify_interaction_metrics,
    verify_stream_dir,
    verify_stop_latency,
)

__all__ = [
    "ASR",
    "BARGE_IN_DEADLINE_MS",
    "CONTROL",
    "LLM",
    "MIC",
    "MIC_BYTES_PER_WINDOW",
    "RUN_FILES",
    "SUBSTRATE",
    "TTS",
    "TTS_BYTES_PER_WINDOW",
    "CallVerdict",
    "ClosedWindow",
    "ConfigError",
    "EarlyVerdict",
    "Finding",
    "Finished",
    "InteractionDocument",
    "InteractionEvent",
    "JouleclawError",
    "Pipeline",
    "PipelinePoisoned",
    "ReceiptError",
    "RefusedTool",
    "SealBatch",
    "SigningKey",
    "StopLatency",
    "StopLatencyDocument",
    "StreamSpec",
    "TickOutcome",
    "TickRefused",
    "ToolCallValidator",
    "Toolset",
    "ToolsetError",
    "Verdict",
    "VerifiedReceipt",
    "VerifyError",
    "format_ts",
    "keygen",
    "split_cbor_sequence",
    "verify",
    "verify_batch",
    "verify_interaction_metrics",
    "verify_stream_dir",
    "verify_stop_latency",
]
