//! The `jouleclaw` command: run tick traces through the streaming pipeline, and decode, sign and
//! verify `stream-window/1` receipts.
//!
//! Exit codes: 0 ok; 1 a refusal or a verification failure (including a refused trace line);
//! 2 a usage or I/O error (bad flags, unreadable or unwritable files, a malformed key or spec
//! file).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod audit;
mod commands;
mod failure;
mod keys;
mod out;
mod present;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::out::tell;
use commands::{import, journal, live, misc, receipt, report, run, stream_dir, vectors};

pub(crate) use failure::{CmdResult, Failure};
// `audit.rs` names these two at the crate root.
pub(crate) use commands::{interaction, registry};

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
        cmd: ReceiptCmd,
    },
    /// Many receipts: batch-verify a CBOR sequence.
    Receipts {
        #[command(subcommand)]
        cmd: ReceiptsCmd,
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
        cmd: VectorsCmd,
    },
    /// Generate an Ed25519 signing key file (mode 0600); print the public key and kid.
    Keygen {
        /// The secret key file to create (refuses to overwrite).
        #[arg(long)]
        out: PathBuf,
        /// Also write the public key file here.
        #[arg(long)]
        pub_out: Option<PathBuf>,
    },
    /// Replay commit-safety fixtures (spec/COMMIT-REPLAY.md); exit 0 only if every
    /// expectation holds.
    Replay {
        /// Fixture files (JSON Lines).
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Transcribe a WAV file with a whisper.cpp server (--socket) or a Wyoming speech-to-text
    /// server (--wyoming), then print its measurement.
    #[command(group(clap::ArgGroup::new("engine").required(true).args(["socket", "wyoming"])))]
    Transcribe {
        /// A whisper.cpp server's Unix socket; if it does not exist, prints `no transcriber`.
        #[arg(long)]
        socket: Option<PathBuf>,
        /// A Wyoming speech-to-text server, `unix:PATH` or `tcp:HOST:PORT`; a Unix socket that
        /// does not exist prints `no transcriber`.
        #[arg(long, value_name = "unix:PATH|tcp:HOST:PORT")]
        wyoming: Option<String>,
        /// Longest wait for the answer, in seconds (default: scaled to the audio's length).
        #[arg(long, value_name = "SECS")]
        max_wait: Option<f64>,
        /// The WAV file.
        file: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
enum ReceiptCmd {
    /// Strictly decode the file's exact bytes as a receipt; print its content hash.
    Decode {
        /// The receipt's canonical JSON (no trailing newline).
        file: PathBuf,
    },
    /// Sign the receipt in FILE as a tagged COSE_Sign1.
    Sign {
        /// The secret key file.
        #[arg(long)]
        key: PathBuf,
        /// The receipt's canonical JSON.
        file: PathBuf,
        /// Where to write the COSE_Sign1 bytes (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Verify a tagged COSE_Sign1; print the content hash and the receipt.
    Verify {
        /// The public key file.
        #[arg(long = "pub", value_name = "PUBFILE")]
        public: PathBuf,
        /// The COSE_Sign1 bytes.
        file: PathBuf,
    },
}

#[derive(Subcommand, Debug)]
enum ReceiptsCmd {
    /// Verify an RFC 8742 CBOR sequence of COSE_Sign1 receipts, or a run's whole directory
    /// (and, when it was sealed, its completeness); report every bad item.
    Verify {
        /// The public key file.
        #[arg(long = "pub", value_name = "PUBFILE")]
        public: PathBuf,
        /// With a directory: accept one that is not sealed (exit 0 when every receipt
        /// verifies). Without seals completeness is unknown, so by default such a directory
        /// exits 1.
        #[arg(long)]
        allow_unsealed: bool,
        /// A witness policy: also require DIR/registry.tlog-proof, the run's final seal in a
        /// registry checkpoint cosigned by the policy's quorum (spec/CALL-REGISTRY.md).
        #[arg(long, value_name = "FILE")]
        witness_policy: Option<PathBuf>,
        /// The CBOR sequence (e.g. `receipts.cbor` from `jouleclaw run`) or a run's directory.
        file: PathBuf,
    },
    /// Export one window's RFC 9942 inclusion receipt from a sealed run directory, derived from
    /// its seals.cbor and receipts.jsonl (spec/STREAM-AT-REST.md section 5.6) and verified
    /// before it is written: the receipt a third party checks against that one receipt.
    Inclusion {
        /// The sealed run directory.
        dir: PathBuf,
        /// The window whose receipt is to be proven.
        #[arg(long, value_name = "N")]
        window: u64,
        /// The public key file to verify the checkpoints with (default: DIR/signer.pub, read
        /// without following a symbolic link).
        #[arg(long = "pub", value_name = "PUBFILE")]
        public: Option<PathBuf>,
        /// Write the COSE_Sign1 bytes here (created new, then renamed; never over one of the
        /// directory's files); without it they go to standard output.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

#[derive(Subcommand, Debug)]
enum VectorsCmd {
    /// Check every conformance vector file in DIR with the Rust library.
    Check {
        /// The vector directory.
        #[arg(default_value = "conformance")]
        dir: PathBuf,
    },
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
        Cmd::Receipt { cmd } => match cmd {
            ReceiptCmd::Decode { file } => receipt::decode(&file),
            ReceiptCmd::Sign { key, file, out } => receipt::sign(&key, &file, out.as_deref()),
            ReceiptCmd::Verify { public, file } => receipt::verify(&public, &file),
        },
        Cmd::Receipts {
            cmd:
                ReceiptsCmd::Verify {
                    public,
                    allow_unsealed,
                    witness_policy,
                    file,
                },
        } => {
            if file.is_dir() {
                stream_dir::verify(&public, &file, allow_unsealed)
            } else if allow_unsealed {
                Err(Failure::Usage(
                    "--allow-unsealed needs a stream directory, not one CBOR file".to_owned(),
                ))
            } else {
                receipt::verify_sequence(&public, &file)
            }
        }
        .and_then(|()| registry::verify_witnessed(&public, &file, witness_policy.as_deref())),
        Cmd::Receipts {
            cmd:
                ReceiptsCmd::Inclusion {
                    dir,
                    window,
                    public,
                    out,
                },
        } => stream_dir::export_inclusion(&dir, window, public.as_deref(), out.as_deref()),
        Cmd::Vectors {
            cmd: VectorsCmd::Check { dir },
        } => vectors::check(&dir),
        Cmd::Keygen { out, pub_out } => receipt::keygen(&out, pub_out.as_deref()),
        Cmd::Replay { files, json } => misc::replay(&files, json),
        Cmd::Transcribe {
            socket,
            wyoming,
            max_wait,
            file,
        } => misc::transcribe(socket.as_deref(), wyoming.as_deref(), max_wait, &file),
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
