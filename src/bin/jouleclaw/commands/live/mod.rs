//! `jouleclaw live`: N synthetic duplex calls in real time through the live substrate into a
//! file folder or a NATS JetStream cluster (spec/LIVE.md); with `--registry DIR`, each call whose
//! final seal is signed is registered in a call registry (spec/CALL-REGISTRY.md) through the
//! registry's one appender (`crate::commands::registry::Appender`, the code of `registry add`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use jouleclaw_jcr1::cose::{self, Signer, SoftwareSigner};
use jouleclaw_live::jetstream::{JetStreamConfig, JetStreamSink};
use jouleclaw_live::{FileSink, ReceiptSink};

use crate::keys::read_secret_key;
use crate::out::{say, tell};
use crate::{CmdResult, Failure};

mod calls;
mod registration;

/// Arguments of `jouleclaw live`.
#[derive(Args, Debug)]
pub(crate) struct LiveArgs {
    /// Concurrent synthetic calls.
    #[arg(long, default_value_t = 10)]
    streams: usize,
    /// How long each call lasts, in seconds.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Where receipts go: `file:DIR` or `nats://HOST:PORT` (several separated by commas).
    #[arg(long, default_value = "file:live-out")]
    sink: String,
    /// The secret key file to sign with (default: a new key; its public key is written to
    /// --pub-out).
    #[arg(long, value_name = "KEYFILE")]
    key: Option<PathBuf>,
    /// Where to write the public key (default: DIR/signer.pub for a file sink, live-signer.pub
    /// for NATS). Refuses to overwrite.
    #[arg(long, value_name = "PUBFILE")]
    pub_out: Option<PathBuf>,
    /// The receipts' steward.
    #[arg(long, default_value = "did:example:live")]
    steward: String,
    /// Prefix of the stream ids (`PREFIX-0`, `PREFIX-1`, ...; default `run-<unix second>`).
    #[arg(long)]
    prefix: Option<String>,
    /// A checkpoint every this many windows (25 = 5 s of 200 ms windows).
    #[arg(long, default_value_t = 25)]
    checkpoint_every: u64,
    /// Grace for late ticks after a window's end, in ms.
    #[arg(long, default_value_t = 20)]
    grace_ms: u64,
    /// Every Nth call ignores its barge-ins (0: none).
    #[arg(long, default_value_t = 4)]
    ignore_every: usize,
    /// Verdict shards and mint shards (threads) each.
    #[arg(long, default_value_t = 2)]
    shards: usize,
    /// JetStream replicas when the stream is created.
    #[arg(long, default_value_t = 1)]
    replicas: usize,
    /// The write-ahead journal file (required with a NATS sink; no default). Every batch is
    /// journaled before it is published; what the cluster has not acknowledged when the run
    /// ends stays there for `jouleclaw journal replay FILE --sink URL`. A journal holding
    /// undelivered batches is refused, never emptied.
    #[arg(long, value_name = "FILE")]
    journal: Option<PathBuf>,
    /// How long, after the calls ended, the NATS sink keeps trying to deliver before it
    /// leaves the rest in the journal, in seconds.
    #[arg(long, default_value_t = 120)]
    drain_secs: u64,
    /// Serve Prometheus text metrics at http://ADDR/metrics while the run lasts (a loopback
    /// address only, such as 127.0.0.1:9464; port 0 picks one and prints it).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<std::net::SocketAddr>,
    /// With --metrics: keep serving the run's final metrics this many seconds after it ended
    /// (the summary is printed first), so that a scraper reads its end.
    #[arg(long, default_value_t = 0, value_name = "SECS")]
    metrics_linger: u64,
    /// The journal's bound in MiB.
    #[arg(long, default_value_t = 64)]
    journal_mib: u64,
    /// Worker threads of the load generator's own runtime, apart from the substrate's (its
    /// sink and closers) and from its shard threads; 0 runs the generator's tasks on the
    /// substrate's runtime.
    #[arg(long, default_value_t = 1)]
    generator_threads: usize,
    /// Accept an existing JetStream stream with retention (`max_age`, message or byte
    /// limits) that deletes messages on its own; refused otherwise (`stream_mismatch`).
    #[arg(long)]
    allow_retention: bool,
    /// Register each call whose final seal is signed in this call registry (made by
    /// `jouleclaw registry init` with the key given as --key, which this requires). The registry
    /// is checked and locked before the first call; after the calls each is appended as
    /// `jouleclaw registry add` appends a run (the same leaf), its checkpoint signed and
    /// witnessed (--registry-policy), its proof written. File sink: each sealed stream folder
    /// gets its registry.tlog-proof; NATS sink: see --registry-proofs.
    #[arg(long, value_name = "DIR")]
    registry: Option<PathBuf>,
    /// The witness policy whose witnesses cosign the registry's checkpoints (with --registry;
    /// without it they are not witnessed).
    #[arg(long, value_name = "FILE", requires = "registry")]
    registry_policy: Option<PathBuf>,
    /// With a NATS sink and --registry (required then): a folder (created if absent) that gets
    /// one folder per registered call, named by its escaped stream id, holding the call's final
    /// seal (seals.cbor, the checkpoint the final batch carries) and its registry proof
    /// (registry.tlog-proof). A call's folder that exists is refused, never reused.
    #[arg(long, value_name = "DIR", requires = "registry")]
    registry_proofs: Option<PathBuf>,
}

fn write_pub(path: &std::path::Path, signer: &SoftwareSigner) -> CmdResult {
    use std::io::Write as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Failure::io(path, e))?;
    f.write_all(cose::public_key_text(&signer.verifying_key()).as_bytes())
        .map_err(|e| Failure::io(path, e))
}

/// A sink that cannot start: a refusal (exit 1) when the folder or journal is taken or holds
/// what must not be overwritten, else an I/O error (exit 2).
fn sink_refused(e: jouleclaw_live::LiveError) -> Failure {
    match e.code() {
        "sink_busy"
        | "not_regular_file"
        | "journal_locked"
        | "journal_undelivered"
        | "journal_corrupt" => Failure::Refused(e.to_string()),
        _ => Failure::Usage(e.to_string()),
    }
}

/// The sink `--sink` names: a file folder or a NATS JetStream cluster (with its journal).
fn open_sink(args: &LiveArgs) -> Result<Box<dyn ReceiptSink>, Failure> {
    if let Some(dir) = args.sink.strip_prefix("file:") {
        Ok(Box::new(FileSink::new(dir).map_err(sink_refused)?))
    } else if args.sink.starts_with("nats://") {
        let Some(journal) = &args.journal else {
            return Err(Failure::Usage(
                "a NATS sink needs --journal FILE (the write-ahead journal; there is no default)"
                    .into(),
            ));
        };
        let mut c = JetStreamConfig::new(&args.sink, journal);
        c.replicas = args.replicas;
        c.journal_max_bytes = args.journal_mib << 20;
        c.drain_timeout = Duration::from_secs(args.drain_secs);
        c.allow_retention = args.allow_retention;
        Ok(Box::new(JetStreamSink::open(c).map_err(sink_refused)?))
    } else {
        Err(Failure::Usage(format!(
            "--sink {:?}: give file:DIR or nats://HOST:PORT",
            args.sink
        )))
    }
}

/// Without --key: a key generated for the run, its public key written to --pub-out (or beside
/// the file sink's streams, or live-signer.pub).
fn generated_signer(args: &LiveArgs) -> Result<SoftwareSigner, Failure> {
    let s = SoftwareSigner::generate();
    let path = args
        .pub_out
        .clone()
        .unwrap_or_else(|| match args.sink.strip_prefix("file:") {
            Some(dir) => PathBuf::from(dir).join(jouleclaw_stack::store::layout::SIGNER_PUB),
            None => PathBuf::from("live-signer.pub"),
        });
    write_pub(&path, &s)?;
    tell!("public key: {}", path.display());
    Ok(s)
}

/// The runtimes: the substrate's, and the generator's own with --generator-threads.
fn runtimes(
    args: &LiveArgs,
) -> Result<
    (
        jouleclaw_live::tokio::runtime::Runtime,
        Option<jouleclaw_live::tokio::runtime::Runtime>,
    ),
    Failure,
> {
    let rt = jouleclaw_live::tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Usage(format!("runtime: {e}")))?;
    let generator = match args.generator_threads {
        0 => None,
        n => Some(
            jouleclaw_live::tokio::runtime::Builder::new_multi_thread()
                .worker_threads(n)
                .thread_name("jc-generator")
                .enable_all()
                .build()
                .map_err(|e| Failure::Usage(format!("generator runtime: {e}")))?,
        ),
    };
    Ok((rt, generator))
}

/// Runs `jouleclaw live`.
pub(crate) fn live(args: &LiveArgs) -> CmdResult {
    if args.streams == 0 || args.seconds == 0 {
        return Err(Failure::Usage(
            "--streams and --seconds must be at least 1".into(),
        ));
    }
    if let Some(addr) = args.metrics
        && !addr.ip().is_loopback()
    {
        return Err(Failure::Usage(format!(
            "--metrics {addr}: only a loopback address (127.0.0.0/8, ::1) is served"
        )));
    }
    // The key first (with --registry the registry is opened and locked with it before the sink
    // starts: a registry that cannot take the calls fails the run with nothing written).
    let key_signer = args.key.as_deref().map(read_secret_key).transpose()?;
    let mut registration = registration::registration(args)?;
    let sink = open_sink(args)?;
    let signer = match key_signer {
        Some(s) => s,
        None => generated_signer(args)?,
    };
    let prefix = args.prefix.clone().unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        format!("run-{now}")
    });
    // The generator's runtime is dropped here, outside any runtime, after the run.
    let (rt, generator) = runtimes(args)?;
    let handle = generator.as_ref().map(|g| g.handle().clone());
    let (summaries, ran, capacity) =
        rt.block_on(calls::run(args, sink, Arc::new(signer), &prefix, handle));
    // The run's last line: whether it kept up with its schedule.
    let verdict = || {
        if let Some(c) = &capacity {
            say!("verdict     {}", c.verdict());
        }
    };
    let Some(r) = registration.as_mut() else {
        verdict();
        return ran;
    };
    let failed = registration::register_calls(r, &summaries);
    verdict();
    ran?;
    if failed == 0 {
        Ok(())
    } else {
        Err(Failure::Refused(format!("{failed} calls not registered")))
    }
}
