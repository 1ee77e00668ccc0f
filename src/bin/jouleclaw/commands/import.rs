//! `jouleclaw import tau-voice SIM.json... --out DIR`: τ-voice (tau2-bench) full-duplex
//! simulations in, one signed run directory per simulation out
//! (spec/INTERACTION-METRICS-V1.md section 9).
//!
//! Every file is read (at most `MAX_SIMULATION_BYTES` each) and parsed before anything is
//! written: a bad file is a typed refusal (exit 1) and writes nothing. Then each simulation's
//! tick trace is written to `DIR/<name>/tau-voice.trace.jsonl` by the store's writer (staged
//! create-new beside it, never over an input, renamed into place) and run through `jouleclaw run`'s own entry point into `DIR/<name>`.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};
use jouleclaw_interaction::tau_voice::{
    MAX_SIMULATION_BYTES, TauSimulation, parse_simulation, simulation_ticks,
};
use jouleclaw_stack::pipeline::demo;
use jouleclaw_stack::pipeline::trace::write_trace_line;
use jouleclaw_stack::store::writer::write_output;
use jouleclaw_stack::stream::StreamSpec;

use crate::out::say;
use crate::{CmdResult, Failure};

/// The trace file written into each run directory.
pub(crate) const TRACE_FILE: &str = "tau-voice.trace.jsonl";

/// `jouleclaw import ...`.
#[derive(Subcommand, Debug)]
pub(crate) enum ImportCmd {
    /// τ-voice (tau2-bench) full-duplex simulation files: one signed run directory each, with
    /// its tick trace, receipts, seals, stop latency and interaction panel.
    TauVoice(TauVoiceArgs),
}

/// Arguments of `jouleclaw import tau-voice`.
#[derive(Args, Debug)]
pub(crate) struct TauVoiceArgs {
    /// Simulation files (tau2-bench `Simulation` JSON with `ticks[]`).
    #[arg(required = true, value_name = "SIM.json")]
    sims: Vec<PathBuf>,
    /// Output directory: one directory per simulation, named by its id (created if missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// The experiment's results.json: its `info.audio_native_config.tick_duration_seconds`
    /// must be 0.2 (without it the ticks are taken to be 200 ms, tau2-bench's default).
    #[arg(long, value_name = "RESULTS.json")]
    results: Option<PathBuf>,
    /// The secret key file to sign with (default: the published RFC 8032 test key).
    #[arg(long, value_name = "KEYFILE")]
    key: Option<PathBuf>,
    /// The receipts' steward.
    #[arg(long, default_value = demo::STEWARD)]
    steward: String,
    /// Seal every K receipts (and at the end).
    #[arg(long, value_name = "K", default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    seal_every: u64,
    /// Do not print the per-window tables.
    #[arg(long)]
    quiet: bool,
}

/// `jouleclaw import <cmd>`.
pub(crate) fn import(cmd: &ImportCmd) -> CmdResult {
    match cmd {
        ImportCmd::TauVoice(args) => tau_voice(args),
    }
}

fn read_bounded(path: &Path, max: usize) -> Result<Vec<u8>, Failure> {
    let f = std::fs::File::open(path).map_err(|e| Failure::io(path, e))?;
    let mut bytes = Vec::new();
    f.take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Failure::io(path, e))?;
    if bytes.len() > max {
        return Err(Failure::Refused(format!(
            "{}: tau_too_large: over {max} bytes; nothing written",
            path.display()
        )));
    }
    Ok(bytes)
}

fn tick_seconds(results: &Path) -> Result<Option<f64>, Failure> {
    let bytes = read_bounded(results, MAX_SIMULATION_BYTES)?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
        Failure::Refused(format!(
            "{}: tau_not_json: {e}; nothing written",
            results.display()
        ))
    })?;
    Ok(v.pointer("/info/audio_native_config/tick_duration_seconds")
        .and_then(serde_json::Value::as_f64))
}

/// A directory name: the simulation's id when it is made of `[A-Za-z0-9._-]` (and not `.` or
/// `..`), else the file's stem made so.
fn dir_name(sim: &TauSimulation, path: &Path) -> String {
    let clean = |s: &str| {
        let s: String = s
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .take(128)
            .collect();
        if s.is_empty() || s.chars().all(|c| c == '.') {
            "sim".to_owned()
        } else {
            s
        }
    };
    match &sim.id {
        Some(id) if !id.is_empty() => clean(id),
        _ => clean(
            &path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
        ),
    }
}

fn tau_voice(args: &TauVoiceArgs) -> CmdResult {
    let tick = match &args.results {
        Some(r) => tick_seconds(r)?,
        None => None,
    };
    // Everything is read and parsed before anything is written.
    let mut sims = Vec::with_capacity(args.sims.len());
    let mut names = std::collections::BTreeSet::new();
    for path in &args.sims {
        let bytes = read_bounded(path, MAX_SIMULATION_BYTES)?;
        let sim = parse_simulation(&bytes, tick)
            .map_err(|e| Failure::Refused(format!("{}: {e}; nothing written", path.display())))?;
        let name = dir_name(&sim, path);
        if !names.insert(name.clone()) {
            return Err(Failure::Usage(format!(
                "{}: a second simulation named {name}; nothing written",
                path.display()
            )));
        }
        sims.push((path, sim, name));
    }
    let spec = StreamSpec::duplex_voice_default();
    std::fs::create_dir_all(&args.out).map_err(|e| Failure::io(&args.out, e))?;
    for (path, sim, name) in &sims {
        let dir = args.out.join(name);
        std::fs::create_dir_all(&dir).map_err(|e| Failure::io(&dir, e))?;
        let trace = dir.join(TRACE_FILE);
        let mut text = String::new();
        for t in simulation_ticks(sim) {
            write_trace_line(&t, &spec, &mut text);
            text.push('\n');
        }
        // The store's writer: staged create-new, synced, never over an input (a simulation,
        // the results file or the key) nor a directory or special file, renamed into place.
        let mut inputs: Vec<&Path> = args.sims.iter().map(PathBuf::as_path).collect();
        inputs.extend(args.results.as_deref());
        inputs.extend(args.key.as_deref());
        write_output(&trace, text.as_bytes(), &inputs)?;
        say!(
            "{}: {} ticks of 200 ms -> {}",
            path.display(),
            sim.frames.len(),
            dir.display()
        );
        let run = crate::commands::run::RunArgs::for_import(
            trace,
            dir,
            args.key.clone(),
            args.steward.clone(),
            format!("tau-voice-{name}"),
            args.seal_every,
            args.quiet,
        );
        crate::commands::run::run(&run)?;
    }
    Ok(())
}
