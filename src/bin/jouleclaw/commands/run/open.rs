//! The open stage of `jouleclaw run`: every input read and checked, the output directory
//! locked, its outputs staged; nothing is renamed into place yet.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressStyle};
use jouleclaw_stack::jcr1::cose::{PublicKey, Signer as _, SoftwareSigner};
use jouleclaw_stack::jcr1::{Clock, Estimator, SystemClock, UtcSecond};
use jouleclaw_stack::oracle::CompositeStreamOracle;
use jouleclaw_stack::pipeline::trace::spec_from_json;
use jouleclaw_stack::pipeline::{
    ClosedAt, Pipeline, PipelineConfig, SigningPolicy, WindowSignatures, demo,
    duplex_voice_backends, duplex_voice_oracle,
};
use jouleclaw_stack::seal::DEFAULT_MAX_LEAVES;
use jouleclaw_stack::store::layout::{self, COMMIT_ORDER};
use jouleclaw_stack::store::writer::{Existing, LockedDir, RunWriter, check_destination};
use jouleclaw_stack::stream::StreamSpec;
use jouleclaw_stack::structured::{Grammar, StructuredOutputOracle};
use jouleclaw_stack::voice::{
    TURN_STAGE_NAME, Transcriber, TranscriptionOracle, TurnStage, WhisperTranscriber,
    WyomingTranscriber, parse_endpoint,
};

use super::drive::Sink;
use super::{RunArgs, WindowSignaturesArg, inputs};
use crate::commands::registry::Appender;
use crate::commands::tools::read_schema_file;
use crate::commands::{interaction, stop_latency};
use crate::keys::read_secret_key;
use crate::out::tell;
use crate::{CmdResult, Failure};

/// Traces at least this long (in bytes) get a progress bar on standard error (when it is a
/// terminal).
const PROGRESS_MIN_BYTES: u64 = 4 << 20;

/// A run opened: its inputs read, its pipeline built, its outputs staged.
pub(super) struct Run {
    pub(super) spec: Arc<StreamSpec>,
    pub(super) spec_name: String,
    pub(super) stream_id: String,
    /// Signing with the published RFC 8032 test key (no --key).
    pub(super) test_key: bool,
    pub(super) epoch_unix: i64,
    /// `--registry`, opened and locked before the first window.
    pub(super) registry: Option<Appender>,
    pub(super) public: PublicKey,
    pub(super) stop_latency: stop_latency::RunMeter,
    pub(super) interaction: interaction::RunMeter,
    pub(super) grammar: Option<Arc<Grammar>>,
    pub(super) oracle_names: Vec<String>,
    pub(super) stage_names: Vec<&'static str>,
    pub(super) pipeline: Pipeline,
    pub(super) reader: BufReader<File>,
    /// The trace's lines read so far.
    pub(super) line_no: u64,
    pub(super) out: LockedDir,
    pub(super) sink: Sink,
}

/// Reads and compiles `--llm-schema`: at most the grammar's schema limit is read.
fn read_grammar(path: &Path) -> Result<Arc<Grammar>, Failure> {
    let bytes = read_schema_file(path)?;
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
pub(super) fn check_destinations(out: &LockedDir, inputs: &[&Path]) -> CmdResult {
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

fn read_spec(args: &RunArgs) -> Result<(Arc<StreamSpec>, String), Failure> {
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
    Ok((Arc::new(spec), spec_name))
}

fn stream_id(args: &RunArgs) -> Result<String, Failure> {
    match (&args.stream_id, &args.key) {
        (Some(id), _) => Ok(id.clone()),
        (None, None) => Ok(demo::STREAM_ID.to_owned()),
        (None, Some(_)) => Err(Failure::Usage(
            "--stream-id ID is required with --key: receipts signed with a real key must \
             name their stream (with a shared default id, this run's receipts would pass \
             as any other run's signed with the same key)"
                .to_owned(),
        )),
    }
}

/// `--registry`: checked and locked before anything is run or written, so that a registry
/// that cannot take this call fails the run with nothing written.
fn open_registry(args: &RunArgs) -> Result<Option<Appender>, Failure> {
    match (&args.registry, &args.key) {
        (Some(dir), Some(key)) => Ok(Some(
            Appender::open(
                dir,
                key,
                // Read again for the registry (the pipeline owns the first copy); its
                // permissions were checked, and warned about, above.
                SoftwareSigner::read_key_file(key).map_err(|e| Failure::io(key, e))?,
                args.registry_policy.as_deref(),
            )
            .map_err(|e| e.into_failure("--registry: "))?,
        )),
        _ => Ok(None),
    }
}

/// The pipeline of the run: its oracle (the duplex voice backends, with the transcription and
/// structured-output backends when asked for), signing policy and turn stage. Returns it with
/// the oracle's backend names and the stage names.
fn build_pipeline(
    args: &RunArgs,
    spec: &Arc<StreamSpec>,
    config: PipelineConfig,
    signer: SoftwareSigner,
    stage: Option<TurnStage<Box<dyn Transcriber + Send>>>,
    grammar: Option<&Arc<Grammar>>,
) -> Result<(Pipeline, Vec<String>, Vec<&'static str>), Failure> {
    let mut config = config;
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
    let oracle = if stage.is_none() && grammar.is_none() {
        duplex_voice_oracle()
    } else {
        let mut backends = duplex_voice_backends();
        if stage.is_some() {
            backends.push(Box::new(TranscriptionOracle::new()));
        }
        if let Some(g) = grammar {
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
    let stage_names: Vec<&'static str> = stage.iter().map(|_| TURN_STAGE_NAME).collect();
    if let Some(stage) = stage {
        pipeline = pipeline.with_stage(Box::new(stage));
    }
    Ok((pipeline, oracle_names, stage_names))
}

/// The store's run writer over the output directory, its files staged (not yet renamed): the
/// key, the receipts, and with --seal-every the seals (and with --inclusion-file the inclusion
/// receipts). A run replaces an earlier run in the directory.
fn stage_outputs(out: &LockedDir, args: &RunArgs) -> Result<RunWriter, Failure> {
    let mut files = RunWriter::new(out.path(), Existing::Replace)?;
    files.stage(layout::SIGNER_PUB)?;
    files.stage(layout::RECEIPTS_JSONL)?;
    files.stage(layout::RECEIPTS_CBOR)?;
    let sealing = args.seal_every.is_some();
    if sealing {
        files.stage(layout::SEALS_CBOR)?;
    }
    if sealing && args.inclusion_file {
        files.stage(layout::INCLUSION_CBOR)?;
    }
    Ok(files)
}

fn progress_bar(size: u64, quiet: bool) -> ProgressBar {
    if size >= PROGRESS_MIN_BYTES && !quiet {
        let pb = ProgressBar::new(size);
        if let Ok(style) =
            ProgressStyle::with_template("{bar:40} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
        {
            pb.set_style(style);
        }
        pb
    } else {
        ProgressBar::hidden()
    }
}

/// The open stage: reads and checks every input, opens the registry, builds the pipeline, opens
/// the trace, locks the output directory (recording in `created` a directory it made) and
/// stages the outputs.
pub(super) fn open(args: &RunArgs, created: &mut Option<PathBuf>) -> Result<Run, Failure> {
    let (spec, spec_name) = read_spec(args)?;
    let stream_id = stream_id(args)?;
    let (signer, test_key) = match &args.key {
        Some(p) => (read_secret_key(p)?, false),
        None => (SoftwareSigner::rfc8032_test_key(), true),
    };
    let epoch_unix = parse_epoch(&args.epoch)?;
    let registry = open_registry(args)?;
    let public = signer.verifying_key();
    let stop_latency = stop_latency::RunMeter::new(&signer)?;
    let interaction = interaction::RunMeter::new(&signer)?;
    let config = PipelineConfig::new(&args.steward, &stream_id)
        .with_closed_at(ClosedAt::StreamTime { epoch_unix });
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
    let (pipeline, oracle_names, stage_names) =
        build_pipeline(args, &spec, config, signer, stage, grammar.as_ref())?;

    let trace = &args.trace;
    let file = File::open(trace).map_err(|e| Failure::io(trace, e))?;
    let size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let reader = BufReader::with_capacity(1 << 16, file);
    let out = open_out(&args.out)?;
    if out.created() {
        *created = Some(out.path().to_owned());
    }
    check_destinations(&out, &inputs(args))?;

    if test_key {
        tell!(
            "WARNING: no --key given: signing with the PUBLISHED RFC 8032 TEST KEY. Anyone can \
             forge these receipts; they prove nothing. Use `jouleclaw keygen --out KEYFILE` and \
             `--key KEYFILE` for receipts that mean something."
        );
    }
    let files = stage_outputs(&out, args)?;
    let sink = Sink::new(files, progress_bar(size, args.quiet), args.quiet);
    Ok(Run {
        spec,
        spec_name,
        stream_id,
        test_key,
        epoch_unix,
        registry,
        public,
        stop_latency,
        interaction,
        grammar,
        oracle_names,
        stage_names,
        pipeline,
        reader,
        line_no: 0,
        out,
        sink,
    })
}
