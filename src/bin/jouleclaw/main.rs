//! The `jouleclaw` command: run tick traces through the streaming pipeline, and decode, sign and
//! verify `stream-window/1` receipts.
//!
//! Exit codes: 0 ok; 1 a refusal or a verification failure (including a refused trace line);
//! 2 a usage or I/O error (bad flags, unreadable or unwritable files, a malformed key or spec
//! file).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod commands;
mod failure;
mod keys;
mod out;
mod present;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::out::tell;
use commands::{
    audit, import, interaction, journal, keygen, live, receipt, receipts, registry, replay, report,
    run, transcribe, vectors,
};

pub(crate) use failure::{CmdResult, Failure};

#[derive(Parser, Debug)]
#[command(
    name = "jouleclaw",
    version,
    about = "Streaming-cascade substrate: tick traces in, signed stream-window/1 receipts out",
    after_help = "Exit codes: 0 ok, 1 refusal or verification failure, 2 usage or I/O error."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Run a tick trace (spec/TICK-TRACE.md) through the pipeline; write signed receipts.
    Run(run::RunArgs),
    /// A run's receipts as one self-contained HTML page (spec/REPORT.md); verifies each.
    Report(report::ReportArgs),
    /// Synthetic duplex calls in real time through the live substrate into files or NATS
    /// JetStream (spec/LIVE.md).
    Live(live::LiveArgs),
    /// Read live receipts and seals back, verify every signature, check every stream's
    /// completeness; exit 1 on any incomplete stream.
    Audit(audit::AuditArgs),
    /// The write-ahead journal of `jouleclaw live` with a NATS sink: replay what it holds.
    Journal {
        #[command(subcommand)]
        cmd: journal::JournalCmd,
    },
    /// One receipt: decode, sign or verify.
    Receipt {
        #[command(subcommand)]
        cmd: receipt::ReceiptCmd,
    },
    /// Many receipts: batch-verify a CBOR sequence.
    Receipts {
        #[command(subcommand)]
        cmd: receipts::ReceiptsCmd,
    },
    /// A steward's call registry: register sealed calls, collect witness cosignatures
    /// (C2SP tlog-witness), verify a call's offline proof, audit a registry for forks and
    /// re-registered calls.
    Registry {
        #[command(subcommand)]
        cmd: registry::RegistryCmd,
    },
    /// Import recorded calls from other tools: `import tau-voice SIM.json... --out DIR` signs
    /// each τ-voice simulation as a run directory (spec/INTERACTION-METRICS-V1.md).
    Import {
        #[command(subcommand)]
        cmd: import::ImportCmd,
    },
    /// Measurements over verified call directories: `metrics interaction DIR...` prints
    /// τ-voice's interaction panel (spec/INTERACTION-METRICS-V1.md).
    Metrics {
        #[command(subcommand)]
        cmd: interaction::MetricsCmd,
    },
    /// Conformance vectors.
    Vectors {
        #[command(subcommand)]
        cmd: vectors::VectorsCmd,
    },
    /// Generate an Ed25519 signing key file (mode 0600); print the public key and kid.
    Keygen(keygen::KeygenArgs),
    /// Replay commit-safety fixtures (spec/COMMIT-REPLAY.md); exit 0 only if every
    /// expectation holds.
    Replay(replay::ReplayArgs),
    /// Transcribe a WAV file with a whisper.cpp server (--socket) or a Wyoming speech-to-text
    /// server (--wyoming), then print its measurement.
    #[command(group(clap::ArgGroup::new("engine").required(true).args(["socket", "wyoming"])))]
    Transcribe(transcribe::TranscribeArgs),
}

fn dispatch(cmd: Cmd) -> CmdResult {
    match cmd {
        Cmd::Run(args) => run::run(&args),
        Cmd::Report(args) => report::report(&args),
        Cmd::Live(args) => live::live(&args),
        Cmd::Audit(args) => audit::audit(&args),
        Cmd::Registry { cmd } => registry::registry(&cmd),
        Cmd::Journal { cmd } => journal::journal(&cmd),
        Cmd::Import { cmd } => import::import(&cmd),
        Cmd::Metrics { cmd } => interaction::metrics(&cmd),
        Cmd::Receipt { cmd } => receipt::exec(&cmd),
        Cmd::Receipts { cmd } => receipts::exec(&cmd),
        Cmd::Vectors { cmd } => vectors::exec(&cmd),
        Cmd::Keygen(args) => keygen::exec(&args),
        Cmd::Replay(args) => replay::exec(&args),
        Cmd::Transcribe(args) => transcribe::exec(&args),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = dispatch(cli.cmd);
    let result = match (result, out::stdout_error()) {
        (Ok(()), Some(e)) => Err(Failure::Usage(format!("standard output: {e}"))),
        (r, _) => r,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Refused(msg)) => {
            tell!("jouleclaw: {msg}");
            ExitCode::from(1)
        }
        Err(Failure::Usage(msg)) => {
            tell!("jouleclaw: {msg}");
            ExitCode::from(2)
        }
    }
}
