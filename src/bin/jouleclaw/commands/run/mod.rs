//! `jouleclaw run`: a tick trace through the pipeline, receipts to files.
//!
//! The run goes in four stages: [`open`] (read and check every input, lock the output
//! directory, stage the outputs), [`drive`] (the trace's ticks through the pipeline, each
//! closed window written as it closes), [`finish`] (the stream's end: the last window, the
//! call's signed documents, the final seal, summary.json) and [`commit`] (the staged files
//! renamed into place, summary.json last).

use std::path::{Path, PathBuf};

use clap::Args;
use jouleclaw_stack::pipeline::demo;

use crate::CmdResult;

mod commit;
mod drive;
mod finish;
mod open;

/// Arguments of `jouleclaw run`.
#[derive(Args, Debug)]
pub(crate) struct RunArgs {
    /// The tick trace (JSON Lines, spec/TICK-TRACE.md).
    trace: PathBuf,
    /// A stream spec file (default: the duplex voice layout, duplex_voice_default).
    #[arg(long, value_name = "SPEC.json")]
    spec: Option<PathBuf>,
    /// The secret key file to sign with (default: the published RFC 8032 test key).
    #[arg(long, value_name = "KEYFILE")]
    key: Option<PathBuf>,
    /// The receipts' steward.
    #[arg(long, default_value = demo::STEWARD)]
    steward: String,
    /// The receipts' stream id. Required with --key: receipts signed with a real key must
    /// name their stream, or every run's receipts would pass as any other's. With the test key
    /// the default is the demo's id.
    #[arg(long = "stream-id", value_name = "ID")]
    stream_id: Option<String>,
    /// Wall time of stream time 0, `YYYY-MM-DDTHH:MM:SSZ` or `now`; a window's closed_at is
    /// this plus its end in stream time, in whole seconds.
    #[arg(long, default_value = "1970-01-01T00:00:00Z")]
    epoch: String,
    /// Output directory (created if missing).
    #[arg(long, value_name = "DIR", default_value = "out")]
    out: PathBuf,
    /// Do not print the per-window table.
    #[arg(long)]
    quiet: bool,
    /// Run the turn stage with the whisper.cpp server at this Unix socket, `unix:PATH`, or the
    /// Wyoming speech-to-text server at `wyoming:unix:PATH` / `wyoming:tcp:HOST:PORT`: mic
    /// turns (`start` .. `end_of_turn` markers on the mic channel) become ASR text ticks in the
    /// same stream, and a failed turn fails its window. Without a socket at PATH no turn is
    /// transcribed (and the run says so).
    #[arg(long, value_name = "unix:PATH|wyoming:unix:PATH|wyoming:tcp:HOST:PORT")]
    transcriber: Option<String>,
    /// Seal the stream (spec/STREAM-SEAL.md): append every receipt to the stream's Merkle log,
    /// sign a stream-seal/1 checkpoint every K receipts and a final one at the end; writes
    /// seals.cbor (layout stream-at-rest/2: every window's inclusion receipt is derivable from
    /// it and receipts.jsonl, `jouleclaw receipts inclusion DIR --window N`).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u64).range(1..))]
    seal_every: Option<u64>,
    /// With --seal-every: also write inclusion.cbor, every window's RFC 9942 inclusion receipt
    /// in one file (as runs before layout stream-at-rest/2 did), for a third party that wants
    /// them all as a file. Without it the file is left out: verifiers derive the receipts.
    #[arg(long, requires = "seal_every")]
    inclusion_file: bool,
    /// Judge the LLM channel's text turn by turn against this JSON Schema
    /// (spec/STRUCTURED-OUTPUT.md): a tool call that leaves the schema fails on the tick that
    /// breaks it.
    #[arg(long, value_name = "SCHEMA.json")]
    llm_schema: Option<PathBuf>,
    /// Judge the LLM channel's tool calls against a whole toolset, an MCP tools/list result or
    /// an OpenAI tools array (spec/STRUCTURED-OUTPUT.md, "Toolsets"): each call
    /// {"name": ..., "arguments": {...}} is routed by its name as the bytes arrive.
    #[arg(long, value_name = "TOOLS.json", conflicts_with = "llm_schema")]
    llm_tools: Option<PathBuf>,
    /// With --llm-tools: refuse the run when a tool's schema does not compile (without it the
    /// tool is named on standard error and left out).
    #[arg(long, requires = "llm_tools")]
    strict_tools: bool,
    /// With --seal-every: which windows also get a COSE_Sign1 of their own in receipts.cbor.
    #[arg(long, value_enum, default_value = "all", requires = "seal_every")]
    window_signatures: WindowSignaturesArg,
    /// With --seal-every and --key: register the call in this registry (spec/CALL-REGISTRY.md)
    /// once the run directory is written, as `registry add DIR OUT` does: its final seal
    /// becomes a leaf, the new checkpoint is witnessed under --registry-policy, and the proof is
    /// OUT/registry.tlog-proof. The registry is opened and locked before the first window; a
    /// registration that fails after the run leaves the run directory written and exits
    /// non-zero with the failure's code.
    #[arg(long, value_name = "DIR", requires_all = ["seal_every", "key"])]
    registry: Option<PathBuf>,
    /// With --registry: the witness policy whose witnesses cosign the registry's new checkpoint
    /// (without it the checkpoint is not witnessed).
    #[arg(long, value_name = "FILE", requires = "registry")]
    registry_policy: Option<PathBuf>,
}

impl RunArgs {
    /// The arguments of `jouleclaw import`'s run of one converted trace: the default spec and
    /// epoch, sealed every `seal_every` receipts.
    pub(crate) fn for_import(
        trace: PathBuf,
        out: PathBuf,
        key: Option<PathBuf>,
        steward: String,
        stream_id: String,
        seal_every: u64,
        quiet: bool,
    ) -> Self {
        Self {
            trace,
            spec: None,
            key,
            steward,
            stream_id: Some(stream_id),
            epoch: "1970-01-01T00:00:00Z".to_owned(),
            out,
            quiet,
            transcriber: None,
            seal_every: Some(seal_every),
            inclusion_file: false,
            llm_schema: None,
            llm_tools: None,
            strict_tools: false,
            window_signatures: WindowSignaturesArg::All,
            registry: None,
            registry_policy: None,
        }
    }
}

/// `--window-signatures`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub(crate) enum WindowSignaturesArg {
    /// Every window (receipts.cbor as without sealing).
    All,
    /// Windows whose verdict is not pass.
    NonPass,
    /// No window: the checkpoints' signatures cover them.
    None,
}

/// The run's inputs: no output may replace one of them.
fn inputs(args: &RunArgs) -> Vec<&Path> {
    let mut inputs: Vec<&Path> = vec![args.trace.as_path()];
    inputs.extend(args.spec.as_deref());
    inputs.extend(args.key.as_deref());
    inputs.extend(args.llm_schema.as_deref());
    inputs.extend(args.llm_tools.as_deref());
    inputs
}

/// `jouleclaw run`.
pub(crate) fn run(args: &RunArgs) -> CmdResult {
    let mut created = None;
    let result = run_in(args, &mut created);
    if let (Err(_), Some(dir)) = (&result, created) {
        // Only an empty directory goes: the run created it and left nothing in it.
        let _ = std::fs::remove_dir(dir);
    }
    result
}

fn run_in(args: &RunArgs, created: &mut Option<PathBuf>) -> CmdResult {
    let mut run = open::open(args, created)?;
    drive::drive(args, &mut run)?;
    let mut finished = finish::finish(args, run)?;
    commit::commit(args, &mut finished)?;
    commit::tell_written(args, &finished);
    commit::register(args, &mut finished)
}
