//! `jouleclaw run`: a tick trace through the pipeline, receipts to files.

use crate::out::{say, say_raw, tell};
use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use jouleclaw_stack::jcr1::cose::{self, Signer, SoftwareSigner};
use jouleclaw_stack::jcr1::{Clock, Estimator, SystemClock, UtcSecond};
use jouleclaw_stack::oracle::CompositeStreamOracle;
use jouleclaw_stack::pipeline::trace::{max_trace_line_len, parse_trace_line, spec_from_json};
use jouleclaw_stack::pipeline::{
    ClosedAt, ClosedWindow, Pipeline, PipelineConfig, PipelineError, SigningPolicy,
    WindowSignatures, demo, duplex_voice_backends, duplex_voice_oracle,
};
use jouleclaw_stack::seal::{DEFAULT_MAX_LEAVES, SealBatch};
use jouleclaw_stack::stream::StreamSpec;
use jouleclaw_stack::structured::{Grammar, MAX_SCHEMA_BYTES, StructuredOutputOracle};
use jouleclaw_stack::voice::{
    TURN_STAGE_NAME, Transcriber, TranscriptionOracle, TurnStage, WhisperTranscriber,
    WyomingTranscriber, parse_endpoint,
};

use jouleclaw_stack::store::layout::{self, COMMIT_ORDER};
use jouleclaw_stack::store::writer::{LockedDir, StagedFile as Staged, check_destination};
use jouleclaw_stack::store::{
    ConservationCounts, LlmSchemaFacts, RunSummary, SignerFacts, SigningFacts, VerdictCounts,
};

use crate::keys::read_secret_key;
use crate::present::table::{RunTotals, table_header, table_row};
use crate::{CmdResult, Failure};

/// Traces at least this long (in bytes) get a progress bar on standard error (when it is a
/// terminal).
const PROGRESS_MIN_BYTES: u64 = 4 << 20;

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

/// Reads and compiles `--llm-schema`: at most the grammar's schema limit is read.
fn read_grammar(path: &Path) -> Result<Arc<Grammar>, Failure> {
    let max = MAX_SCHEMA_BYTES as u64;
    let file = File::open(path).map_err(|e| Failure::io(path, e))?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::io(path, e))?;
    // JSON Schema 2020-12 meanings (spec/STRUCTURED-OUTPUT.md, "The JSON Schema profile"): what
    // tool-schema generators write; a schema of the closed subset keeps its digest.
    Grammar::compile_json_schema(&bytes)
        .map(Arc::new)
        .map_err(|e| Failure::Usage(format!("{}: {}: {e}", path.display(), e.code())))
}

/// The turn stage for `--transcriber unix:PATH` (whisper.cpp) or
/// `--transcriber wyoming:unix:PATH|wyoming:tcp:HOST:PORT` (a Wyoming server).
fn transcriber_stage(arg: &str) -> Result<TurnStage<Box<dyn Transcriber + Send>>, Failure> {
    let usage = || {
        Failure::Usage(format!(
            "--transcriber {arg:?}: expected unix:PATH (a whisper.cpp server's Unix socket), \
             wyoming:unix:PATH or wyoming:tcp:HOST:PORT (a Wyoming speech-to-text server)"
        ))
    };
    let (transcriber, available, at): (Box<dyn Transcriber + Send>, bool, &str) =
        if let Some(endpoint) = arg.strip_prefix("wyoming:") {
            let endpoint = parse_endpoint(endpoint).map_err(|_| usage())?;
            let t = WyomingTranscriber::at(endpoint, None);
            let available = t.is_available();
            (Box::new(t), available, arg)
        } else {
            let path = arg
                .strip_prefix("unix:")
                .filter(|p| !p.is_empty())
                .ok_or_else(usage)?;
            let t = WhisperTranscriber::at_socket(path, None);
            let available = t.is_available();
            (Box::new(t), available, path)
        };
    if !available {
        tell!("note: no transcriber at {at}: mic turns are not transcribed");
    }
    Ok(TurnStage::new(transcriber))
}

fn parse_epoch(text: &str) -> Result<i64, Failure> {
    if text == "now" {
        return Ok(SystemClock.now_unix());
    }
    UtcSecond::parse(text).map(UtcSecond::unix).ok_or_else(|| {
        Failure::Usage(format!(
            "--epoch {text:?}: expected YYYY-MM-DDTHH:MM:SSZ or now"
        ))
    })
}

fn at_line(trace: &Path, line: u64, e: &PipelineError) -> Failure {
    Failure::Refused(format!("{}:{line}: {}: {e}", trace.display(), e.code()))
}

/// Opens and locks the output directory (created if missing).
fn open_out(path: &Path) -> Result<LockedDir, Failure> {
    LockedDir::open(path).map_err(|e| match e {
        jouleclaw_stack::store::StoreError::Locked { .. } => Failure::Usage(format!(
            "{}: another jouleclaw run is writing to this directory",
            path.display()
        )),
        jouleclaw_stack::store::StoreError::NotADirectory { .. } => {
            Failure::Usage(format!("{}: --out must be a directory", path.display()))
        }
        other => other.into(),
    })
}

/// Refuses, before anything is renamed, a destination that a rename cannot replace (a
/// directory) or that is one of the run's inputs.
fn check_destinations(out: &LockedDir, inputs: &[&Path]) -> CmdResult {
    for name in COMMIT_ORDER {
        check_destination(&out.path().join(name), inputs)?;
    }
    // Removed (or, with --registry, written) after the others are renamed into place.
    check_destination(
        &out.path().join(crate::commands::registry::PROOF_FILE),
        inputs,
    )?;
    Ok(())
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
    let (spec, spec_name) = match &args.spec {
        Some(p) => {
            let text = std::fs::read_to_string(p).map_err(|e| Failure::io(p, e))?;
            let spec = spec_from_json(&text).map_err(|e| Failure::io(p, e))?;
            (spec, p.display().to_string())
        }
        None => (
            StreamSpec::duplex_voice_default(),
            "duplex_voice_default".to_owned(),
        ),
    };
    let spec = Arc::new(spec);
    let stream_id = match (&args.stream_id, &args.key) {
        (Some(id), _) => id.clone(),
        (None, None) => demo::STREAM_ID.to_owned(),
        (None, Some(_)) => {
            return Err(Failure::Usage(
                "--stream-id ID is required with --key: receipts signed with a real key must \
                 name their stream (with a shared default id, this run's receipts would pass \
                 as any other run's signed with the same key)"
                    .to_owned(),
            ));
        }
    };
    let (signer, test_key) = match &args.key {
        Some(p) => (read_secret_key(p)?, false),
        None => (SoftwareSigner::rfc8032_test_key(), true),
    };
    let epoch_unix = parse_epoch(&args.epoch)?;
    // The registry is checked and locked before anything is run or written: a registry that
    // cannot take this call fails the run with nothing written.
    let mut registry = match (&args.registry, &args.key) {
        (Some(dir), Some(key)) => Some(
            crate::commands::registry::Appender::open(
                dir,
                key,
                // Read again for the registry (the pipeline owns the first copy); its
                // permissions were checked, and warned about, above.
                SoftwareSigner::read_key_file(key).map_err(|e| Failure::io(key, e))?,
                args.registry_policy.as_deref(),
            )
            .map_err(|e| e.into_failure("--registry: "))?,
        ),
        _ => None,
    };
    let public = signer.verifying_key();
    let mut stop_latency = crate::commands::stop_latency::RunMeter::new(&signer)?;
    let mut interaction = crate::commands::interaction::RunMeter::new(&signer)?;
    let mut config = PipelineConfig::new(&args.steward, &stream_id)
        .with_closed_at(ClosedAt::StreamTime { epoch_unix });
    if let Some(every_windows) = args.seal_every {
        config = config.with_signing(SigningPolicy::Checkpoint {
            every_windows,
            window_signatures: match args.window_signatures {
                WindowSignaturesArg::All => WindowSignatures::All,
                WindowSignaturesArg::NonPass => WindowSignatures::NonPass,
                WindowSignaturesArg::None => WindowSignatures::None,
            },
            max_windows: DEFAULT_MAX_LEAVES,
        });
    }
    let stage = args
        .transcriber
        .as_deref()
        .map(transcriber_stage)
        .transpose()?;
    let grammar = match &args.llm_tools {
        Some(tools) => Some(crate::commands::tools::read_toolset(
            tools,
            args.strict_tools,
        )?),
        None => args.llm_schema.as_deref().map(read_grammar).transpose()?,
    };
    let oracle = if stage.is_none() && grammar.is_none() {
        duplex_voice_oracle()
    } else {
        let mut backends = duplex_voice_backends();
        if stage.is_some() {
            backends.push(Box::new(TranscriptionOracle::new()));
        }
        if let Some(g) = &grammar {
            backends.push(Box::new(StructuredOutputOracle::new(Arc::clone(g))));
        }
        CompositeStreamOracle::new("duplex-voice", backends)
    };
    let oracle_names: Vec<String> = oracle.backend_names().map(str::to_owned).collect();
    let mut pipeline = Pipeline::new(
        spec.clone(),
        config,
        oracle,
        Estimator::default(),
        Box::new(signer),
    )
    .map_err(|e| Failure::Usage(format!("{}: {e}", e.code())))?;
    let stage_names: Vec<&str> = stage.iter().map(|_| TURN_STAGE_NAME).collect();
    if let Some(stage) = stage {
        pipeline = pipeline.with_stage(Box::new(stage));
    }

    let trace = &args.trace;
    let file = File::open(trace).map_err(|e| Failure::io(trace, e))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let out = open_out(&args.out)?;
    if out.created() {
        *created = Some(out.path().to_owned());
    }
    let mut inputs: Vec<&Path> = vec![trace.as_path()];
    inputs.extend(args.spec.as_deref());
    inputs.extend(args.key.as_deref());
    inputs.extend(args.llm_schema.as_deref());
    inputs.extend(args.llm_tools.as_deref());
    check_destinations(&out, &inputs)?;

    if test_key {
        tell!(
            "WARNING: no --key given: signing with the PUBLISHED RFC 8032 TEST KEY. Anyone can \
             forge these receipts; they prove nothing. Use `jouleclaw keygen --out KEYFILE` and \
             `--key KEYFILE` for receipts that mean something."
        );
    }

    let [
        pub_name,
        jsonl_name,
        cbor_name,
        seals_name,
        inclusion_name,
        summary_name,
    ] = COMMIT_ORDER;
    let mut pubfile = Staged::create(out.path(), pub_name)?;
    let mut jsonl = Staged::create(out.path(), jsonl_name)?;
    let mut cbor = Staged::create(out.path(), cbor_name)?;
    let sealing = args.seal_every.is_some();
    let mut seals = sealing
        .then(|| Staged::create(out.path(), seals_name))
        .transpose()?;
    let mut inclusion = (sealing && args.inclusion_file)
        .then(|| Staged::create(out.path(), inclusion_name))
        .transpose()?;
    let mut summary = Staged::create(out.path(), summary_name)?;

    let progress = if size >= PROGRESS_MIN_BYTES && !args.quiet {
        let pb = ProgressBar::new(size);
        if let Ok(style) =
            ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
        {
            pb.set_style(style);
        }
        pb
    } else {
        ProgressBar::hidden()
    };

    let mut totals = RunTotals::default();
    let mut header_printed = false;
    let mut checkpoints = 0u64;
    let mut write_seal = |batch: &SealBatch| -> Result<(), Failure> {
        if let Some(seals) = seals.as_mut() {
            seals.write(&batch.checkpoint.cose_sign1)?;
            if let Some(inclusion) = inclusion.as_mut() {
                for (_, receipt) in &batch.inclusion {
                    inclusion.write(receipt)?;
                }
            }
            checkpoints += 1;
        }
        if !args.quiet {
            let s = &batch.checkpoint.seal;
            progress.suspend(|| {
                say!(
                    "{:>6} sealed: {} receipts, windows {}..={}{}",
                    "",
                    s.tree_size,
                    s.first_window_id,
                    s.last_window_id,
                    if s.is_final { ", final" } else { "" }
                );
            });
        }
        Ok(())
    };
    let mut emit = |w: ClosedWindow,
                    totals: &mut RunTotals,
                    write_seal: &mut dyn FnMut(&SealBatch) -> Result<(), Failure>|
     -> Result<(), Failure> {
        jsonl.write(w.canonical_bytes())?;
        jsonl.write(b"\n")?;
        if let Some(item) = w.cose_sign1() {
            cbor.write(item)?;
        }
        totals.add(&w);
        if !args.quiet {
            progress.suspend(|| {
                if !header_printed {
                    say!("{}", table_header());
                    header_printed = true;
                }
                say!("{}", table_row(&w));
            });
        }
        if let Some(batch) = &w.seal {
            write_seal(batch)?;
        }
        Ok(())
    };

    let max = max_trace_line_len(&spec);
    let mut line = Vec::new();
    let mut line_no = 0u64;
    let mut read = 0u64;
    loop {
        line.clear();
        // The limit, a `\r\n` line end and one byte more are enough to know a line is too
        // long; the line end is not counted (parse_trace_line strips it).
        let n = (&mut reader)
            .take(max as u64 + 3)
            .read_until(b'\n', &mut line)
            .map_err(|e| Failure::io(trace, e))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        read += n as u64;
        progress.set_position(read);
        let Some(tick) = parse_trace_line(&line, &spec).map_err(|e| at_line(trace, line_no, &e))?
        else {
            continue;
        };
        let pushed = tick.clone();
        let outcome = pipeline
            .push(tick)
            .map_err(|e| at_line(trace, line_no, &e))?;
        stop_latency.push(&pushed, &outcome, &spec)?;
        interaction.push(&pushed, &outcome, &spec)?;
        if let Some(w) = outcome.closed {
            emit(w, &mut totals, &mut write_seal)?;
        }
    }
    // The last window first: the call's documents bind to every receipt, and the final seal
    // (stream-seal/2) commits to the documents, so they are signed between the two.
    let last = pipeline
        .end_windows()
        .map_err(|e| at_line(trace, line_no, &e))?;
    if let Some(w) = &last {
        stop_latency.closed(w);
        interaction.closed(w);
    }
    if let Some(w) = last {
        emit(w, &mut totals, &mut write_seal)?;
    }
    if totals.windows == 0 {
        return Err(Failure::Refused(format!(
            "{}: trace_empty: the trace holds no ticks",
            trace.display()
        )));
    }
    let (mut stop_latency_file, stop_latency_hash, stop_latency_doc, stop_latency_digest) =
        stop_latency.finish(out.path(), &inputs, &args.steward, &stream_id)?;
    // interaction-metrics.cbor (spec/INTERACTION-METRICS-V1.md), signed beside the stop
    // latency and committed by the final seal with it.
    let (mut interaction_file, interaction_hash, interaction_doc, interaction_digest) =
        interaction.finish(out.path(), &inputs, &args.steward, &stream_id)?;
    let documents = [
        (stop_latency_doc.schema_id().to_owned(), stop_latency_digest),
        (
            jouleclaw_interaction::INTERACTION_SCHEMA.to_owned(),
            interaction_digest,
        ),
    ]
    .into_iter()
    .collect();
    let finished = pipeline
        .finish_with_documents(documents)
        .map_err(|e| at_line(trace, line_no, &e))?;
    if let Some(w) = finished.last {
        // end_windows closed it; nothing can open another before finish.
        emit(w, &mut totals, &mut write_seal)?;
    }
    if let Some(batch) = &finished.seal {
        write_seal(batch)?;
    }
    progress.finish_and_clear();
    pubfile.write(cose::public_key_text(&public).as_bytes())?;
    let jsonl_hash = jsonl.finish()?;
    let cbor_hash = cbor.finish()?;
    let pub_hash = pubfile.finish()?;
    let seals_hash = seals.as_mut().map(Staged::finish).transpose()?;
    let inclusion_hash = inclusion.as_mut().map(Staged::finish).transpose()?;
    let mut outputs = std::collections::BTreeMap::new();
    outputs.insert(layout::SIGNER_PUB.to_owned(), pub_hash.to_hex().to_string());
    outputs.insert(
        layout::RECEIPTS_JSONL.to_owned(),
        jsonl_hash.to_hex().to_string(),
    );
    outputs.insert(
        layout::RECEIPTS_CBOR.to_owned(),
        cbor_hash.to_hex().to_string(),
    );
    outputs.insert(
        crate::commands::stop_latency::FILE.to_owned(),
        stop_latency_hash.to_hex().to_string(),
    );
    outputs.insert(
        crate::commands::interaction::FILE.to_owned(),
        interaction_hash.to_hex().to_string(),
    );
    if let Some(s) = seals_hash {
        outputs.insert(layout::SEALS_CBOR.to_owned(), s.to_hex().to_string());
    }
    if let Some(i) = inclusion_hash {
        outputs.insert(layout::INCLUSION_CBOR.to_owned(), i.to_hex().to_string());
    }
    let [pass, need_more, yields, fail] = totals.verdicts;
    let [conforming, hallucination, barge_in_ignored] = totals.conservation;
    let doc = RunSummary {
        conservation: ConservationCounts {
            barge_in_ignored,
            conforming,
            hallucination,
        },
        early_verdicts: totals.early_verdicts,
        empty_windows: totals.empty_windows(),
        epoch: UtcSecond::from_unix(epoch_unix).map(|t| t.to_string()),
        first_window: totals.window_range.map(|r| r.0),
        inbound_bytes: totals.inbound_bytes,
        last_window: totals.window_range.map(|r| r.1),
        layout: Some(layout::LAYOUT_V2.to_owned()),
        llm_schema: grammar
            .as_ref()
            .zip(args.llm_schema.as_ref().or(args.llm_tools.as_ref()))
            .map(|(g, p)| LlmSchemaFacts {
                file: p.display().to_string(),
                grammar_digest: g.digest().to_hex().to_string(),
            }),
        oracle: oracle_names,
        outbound_bytes: totals.outbound_bytes,
        outputs,
        receipts: totals.windows,
        signer: SignerFacts {
            kid: hex::encode(cose::kid(&public)),
            public_key: hex::encode(public.as_bytes()),
            test_key,
        },
        signing: match args.seal_every {
            None => SigningFacts {
                checkpoints: None,
                every_windows: None,
                policy: "every_window".to_owned(),
                window_signatures: None,
            },
            Some(k) => SigningFacts {
                checkpoints: Some(checkpoints),
                every_windows: Some(k),
                policy: "checkpoint".to_owned(),
                window_signatures: Some(
                    match args.window_signatures {
                        WindowSignaturesArg::All => "all",
                        WindowSignaturesArg::NonPass => "non_pass",
                        WindowSignaturesArg::None => "none",
                    }
                    .to_owned(),
                ),
            },
        },
        spec: spec_name,
        stages: stage_names.iter().map(|s| (*s).to_owned()).collect(),
        steward: args.steward.clone(),
        stream_id: stream_id.clone(),
        substrate_bytes: totals.substrate_bytes,
        ticks: totals.ticks,
        trace: trace.display().to_string(),
        verdicts: VerdictCounts {
            fail,
            need_more,
            pass,
            yields,
        },
    };
    let text = doc.to_text()?;
    summary.write(text.as_bytes())?;
    summary.finish()?;

    // summary.json last: its presence marks a complete run.
    // Every destination is checked again just before the first rename, so a failing rename
    // (a directory planted at a destination) cannot leave some outputs replaced and others not.
    check_destinations(&out, &inputs)?;
    check_destination(
        &out.path().join(crate::commands::stop_latency::FILE),
        &inputs,
    )?;
    check_destination(
        &out.path().join(crate::commands::interaction::FILE),
        &inputs,
    )?;
    // The old summary.json goes first: until the new one lands last, no summary marks the
    // directory complete, so a crash between two renames cannot leave a mix that looks whole.
    out.remove(summary_name)?;
    pubfile.commit()?;
    jsonl.commit()?;
    cbor.commit()?;
    // An unsealed run leaves no seals of an earlier sealed run beside its receipts, and a run
    // without inclusion.cbor no inclusion receipts of an earlier run.
    match seals.as_mut() {
        Some(s) => s.commit()?,
        None => out.remove(seals_name)?,
    }
    match inclusion.as_mut() {
        Some(i) => i.commit()?,
        None => out.remove(inclusion_name)?,
    }
    stop_latency_file.commit()?;
    interaction_file.commit()?;
    // A proof of an earlier run's call in this directory would not be this call's.
    out.remove(crate::commands::registry::PROOF_FILE)?;
    summary.commit()?;
    say!(
        "{}",
        crate::commands::stop_latency::describe(&stop_latency_doc)
    );
    say!(
        "{}",
        crate::commands::interaction::describe(&interaction_doc)
    );

    if !args.quiet {
        say!();
        say_raw!("{}", totals.render_text());
    }
    say!(
        "wrote {} receipts to {} ({})",
        totals.windows,
        args.out.display(),
        if sealing && args.inclusion_file {
            "receipts.jsonl, receipts.cbor, seals.cbor, inclusion.cbor, stop-latency.cbor, interaction-metrics.cbor, signer.pub, summary.json"
        } else if sealing {
            "receipts.jsonl, receipts.cbor, seals.cbor, stop-latency.cbor, interaction-metrics.cbor, signer.pub, summary.json; layout stream-at-rest/2: inclusion receipts are derived from seals.cbor (jouleclaw receipts inclusion DIR --window N)"
        } else {
            "receipts.jsonl, receipts.cbor, stop-latency.cbor, interaction-metrics.cbor, signer.pub, summary.json"
        }
    );
    if !sealing {
        tell!(
            "note: not sealed (no --seal-every): verifiers will report completeness as unknown \
             and refuse the directory unless told --allow-unsealed"
        );
    }
    if test_key {
        tell!("WARNING: these receipts are signed with the published RFC 8032 test key.");
    }
    if let Some(registry) = registry.as_mut() {
        // The run directory is whole and its receipts verify whatever happens here; a failed
        // registration is reported with its code and fails the command.
        registry.register_run(out.path()).map_err(|e| {
            e.into_failure(&format!(
                "the run directory {} is written and its receipts verify, but the call's \
                 registration failed: ",
                args.out.display()
            ))
        })?;
    }
    Ok(())
}
