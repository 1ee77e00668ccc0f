//! `jouleclaw live`: N synthetic duplex calls in real time through the live substrate into a
//! file folder or a NATS JetStream cluster (spec/LIVE.md); with `--registry DIR`, each call whose
//! final seal is signed is registered in a call registry (spec/CALL-REGISTRY.md) through the
//! registry's one appender (`crate::commands::registry::Appender`, the code of `registry add`).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use clap::Args;
use jouleclaw_jcr1::cose::{self, Signer, SoftwareSigner};
use jouleclaw_live::jetstream::{JetStreamConfig, JetStreamSink};
use jouleclaw_live::synth::{Capacity, Latency, scheduled_ticks, synthetic_call_with_lag};
use jouleclaw_live::{
    FileSink, ReceiptSink, StreamStatus, StreamSummary, Substrate, SubstrateConfig, TokioClock,
    escape_id,
};

use crate::keys::read_secret_key;
use crate::out::{say, tell};
use crate::{CmdResult, Failure};

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

/// Where `--registry` registrations go: the registry, opened and locked, and the folders the
/// proofs go into.
struct Registration {
    appender: crate::commands::registry::Appender,
    registry: PathBuf,
    target: Target,
}

/// The file sink's folder (stream folders registered in place), or the NATS sink's
/// `--registry-proofs` folder.
enum Target {
    StreamFolders(PathBuf),
    ProofFolders(PathBuf),
}

/// Checks the `--registry` arguments and opens the registry (checked and locked: another
/// steward's registry, a policy of another steward, a registry in use are refused) before
/// anything runs.
fn registration(args: &LiveArgs) -> Result<Option<Registration>, Failure> {
    let Some(registry) = &args.registry else {
        return Ok(None);
    };
    let Some(key) = &args.key else {
        return Err(Failure::Usage(
            "--registry needs --key KEYFILE: the registry's checkpoints and the calls' seals are \
             signed by one steward key"
                .into(),
        ));
    };
    let target = match (args.sink.strip_prefix("file:"), &args.registry_proofs) {
        (Some(dir), None) => Target::StreamFolders(PathBuf::from(dir)),
        (Some(_), Some(_)) => {
            return Err(Failure::Usage(
                "--registry-proofs is for a NATS sink; a file sink's proofs go into its stream \
                 folders"
                    .into(),
            ));
        }
        (None, Some(p)) => Target::ProofFolders(p.clone()),
        (None, None) => {
            return Err(Failure::Usage(
                "--registry with a NATS sink needs --registry-proofs DIR (where each call's \
                 final seal and proof are written)"
                    .into(),
            ));
        }
    };
    let appender = crate::commands::registry::Appender::open(
        registry,
        key,
        // A second copy for the registry (the substrate owns the first); its permissions were
        // checked, and warned about, when the first was read.
        SoftwareSigner::read_key_file(key).map_err(|e| Failure::io(key, e))?,
        args.registry_policy.as_deref(),
    )
    .map_err(|e| e.into_failure("--registry: "))?;
    Ok(Some(Registration {
        appender,
        registry: registry.clone(),
        target,
    }))
}

/// Registers one call whose final seal is signed: a sealed stream folder of the file sink in
/// place, or (NATS) a new folder holding the final seal, each as `registry add` registers a
/// run. Returns `Ok(false)` for a call that is not registered (never sealed, failed, or not
/// sealed durably in its folder).
fn register(
    r: &mut Registration,
    summary: &StreamSummary,
    status: &StreamStatus,
) -> Result<bool, Failure> {
    let Some(seal) = &summary.final_seal else {
        return Ok(false);
    };
    if status.failure().is_some() {
        return Ok(false);
    }
    let folder = match &r.target {
        Target::StreamFolders(dir) => {
            if !status.sealed_durable() {
                return Ok(false);
            }
            dir.join(escape_id(&summary.stream_id))
        }
        Target::ProofFolders(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| Failure::io(dir, e))?;
            let folder = dir.join(escape_id(&summary.stream_id));
            std::fs::create_dir(&folder).map_err(|e| Failure::io(&folder, e))?;
            jouleclaw_stack::store::writer::write_output(&folder.join("seals.cbor"), seal, &[])?;
            folder
        }
    };
    r.appender
        .register_run(&folder)
        .map_err(|e| e.into_failure(""))?;
    Ok(true)
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
    let mut registration = registration(args)?;
    let sink: Box<dyn ReceiptSink> = if let Some(dir) = args.sink.strip_prefix("file:") {
        Box::new(FileSink::new(dir).map_err(sink_refused)?)
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
        Box::new(JetStreamSink::open(c).map_err(sink_refused)?)
    } else {
        return Err(Failure::Usage(format!(
            "--sink {:?}: give file:DIR or nats://HOST:PORT",
            args.sink
        )));
    };
    let signer = match key_signer {
        Some(s) => s,
        None => {
            let s = SoftwareSigner::generate();
            let path =
                args.pub_out
                    .clone()
                    .unwrap_or_else(|| match args.sink.strip_prefix("file:") {
                        Some(dir) => PathBuf::from(dir).join("signer.pub"),
                        None => PathBuf::from("live-signer.pub"),
                    });
            write_pub(&path, &s)?;
            tell!("public key: {}", path.display());
            s
        }
    };
    let prefix = args.prefix.clone().unwrap_or_else(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        format!("run-{now}")
    });
    let rt = jouleclaw_live::tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Usage(format!("runtime: {e}")))?;
    // The generator's runtime is dropped here, outside any runtime, after the run.
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
    let handle = generator.as_ref().map(|g| g.handle().clone());
    let (summaries, ran, capacity) =
        rt.block_on(run(args, sink, Arc::new(signer), &prefix, handle));
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
    // After the run: every batch the sink took is durable or journaled by now.
    let (mut registered, mut skipped, mut failed) = (0u64, 0u64, Vec::new());
    for (summary, status) in &summaries {
        match register(r, summary, status) {
            Ok(true) => registered += 1,
            Ok(false) => skipped += 1,
            Err(Failure::Refused(e) | Failure::Usage(e)) => {
                failed.push(format!("{}: {e}", summary.stream_id));
            }
        }
    }
    say!(
        "registry    {registered} calls registered in {}, {skipped} not (no final seal, failed or not sealed durably), {} failed",
        r.registry.display(),
        failed.len()
    );
    for f in failed.iter().take(10) {
        tell!("  registry failed: {}", crate::out::untrusted(f));
    }
    verdict();
    ran?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::Refused(format!(
            "{} calls not registered",
            failed.len()
        )))
    }
}

/// The calls' summaries (those that closed) with their status, and the run's outcome.
type Calls = Vec<(StreamSummary, Arc<StreamStatus>)>;

async fn run(
    args: &LiveArgs,
    sink: Box<dyn ReceiptSink>,
    signer: Arc<SoftwareSigner>,
    prefix: &str,
    generator: Option<jouleclaw_live::tokio::runtime::Handle>,
) -> (Calls, CmdResult, Option<Capacity>) {
    let mut calls = Vec::new();
    let mut capacity = None;
    let ran = run_calls(
        args,
        sink,
        signer,
        prefix,
        generator,
        &mut calls,
        &mut capacity,
    )
    .await;
    if args.metrics.is_some() && args.metrics_linger > 0 {
        tell!(
            "metrics: the run's final values stay served for {} s",
            args.metrics_linger
        );
        jouleclaw_live::tokio::time::sleep(Duration::from_secs(args.metrics_linger)).await;
    }
    (calls, ran, capacity)
}

async fn run_calls(
    args: &LiveArgs,
    sink: Box<dyn ReceiptSink>,
    signer: Arc<SoftwareSigner>,
    prefix: &str,
    generator: Option<jouleclaw_live::tokio::runtime::Handle>,
    calls: &mut Calls,
    capacity: &mut Option<Capacity>,
) -> CmdResult {
    let describe = sink.describe();
    let mut config = SubstrateConfig::new(&args.steward);
    config.checkpoint_every = args.checkpoint_every;
    config.grace_ns = args.grace_ms * 1_000_000;
    config.verdict_shards = args.shards.max(1);
    config.mint_shards = args.shards.max(1);
    config.max_streams = args.streams;
    let s = Substrate::start(config, Arc::new(TokioClock::system()), signer, sink)
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let push = Arc::new(Latency::default());
    let yields = Arc::new(Latency::default());
    let lag = Arc::new(Latency::lag());
    let kept_up = Arc::new(std::sync::atomic::AtomicI64::new(-1));
    let windows = args.seconds * 1000 / 200;
    let window_ns = s.config().spec.window_ns();
    let ignores =
        |i: usize| args.ignore_every > 0 && i % args.ignore_every == args.ignore_every - 1;
    // What the calls schedule, beside what they minted and what was accepted.
    let scheduled_windows = windows * args.streams as u64;
    let scheduled: u64 = (0..args.streams)
        .map(|i| scheduled_ticks(windows, ignores(i), window_ns))
        .sum();
    if let Some(addr) = args.metrics {
        let source = Arc::new(crate::present::metrics::Source {
            substrate: s.clone(),
            push: push.clone(),
            yields: yields.clone(),
            lag: lag.clone(),
            scheduled: (scheduled_windows, scheduled),
            kept_up: kept_up.clone(),
        });
        let bound =
            crate::present::metrics::serve(addr, move || crate::present::metrics::render(&source))
                .await
                .map_err(|e| Failure::Usage(format!("--metrics: {e}")))?;
        tell!("metrics: http://{bound}/metrics");
    }
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(args.streams);
    for i in 0..args.streams {
        let id = format!("{prefix}-{i}");
        let h = s
            .open_stream(&id)
            .map_err(|e| Failure::Usage(e.to_string()))?;
        let ignores = ignores(i);
        let (push, yields, lag) = (push.clone(), yields.clone(), lag.clone());
        let call = async move {
            let r = synthetic_call_with_lag(&h, windows, ignores, &push, &yields, &lag).await;
            let closed = h.close().await;
            (id, r, closed, h.status().clone())
        };
        tasks.push(match &generator {
            Some(g) => g.spawn(call),
            None => jouleclaw_live::tokio::spawn(call),
        });
    }
    tell!(
        "live: {} calls of {} s into {describe}, stream ids {prefix}-0..{}, the generator {}",
        args.streams,
        args.seconds,
        args.streams - 1,
        match args.generator_threads {
            0 => "on the substrate's runtime".to_owned(),
            n => format!("on {n} thread(s) of its own"),
        }
    );
    let progress = {
        let s = s.clone();
        let push = push.clone();
        jouleclaw_live::tokio::spawn(async move {
            let mut every = jouleclaw_live::tokio::time::interval(Duration::from_secs(1));
            every.tick().await;
            loop {
                every.tick().await;
                let st = s.stats();
                let sk = s.sink_stats();
                tell!(
                    "  {:>4.0}s  open={} windows={} checkpoints={} durable={} journal={}B refused={} push p99={}us",
                    started.elapsed().as_secs_f64(),
                    s.open_streams(),
                    st.windows.load(Ordering::Relaxed),
                    st.checkpoints.load(Ordering::Relaxed),
                    sk.batches_durable.load(Ordering::Relaxed),
                    sk.journal_bytes.load(Ordering::Relaxed),
                    st.refused.load(Ordering::Relaxed),
                    push.quantile_us(0.99)
                );
            }
        })
    };
    // One entry per failed stream (its first reason: a stream that fails is refused again on
    // its next push and on its close, which are the same failure), and the run's own.
    let mut failed_streams: Vec<(String, String)> = Vec::new();
    let mut failed_ids = std::collections::HashSet::new();
    let mut failed = Vec::new();
    let mut statuses = Vec::new();
    for t in tasks {
        match t.await {
            Ok((id, r, closed, status)) => {
                let mut reasons = Vec::new();
                if let Some(reason) = status.failure() {
                    reasons.push(reason);
                }
                if let Err(e) = r {
                    reasons.push(e.to_string());
                }
                match closed {
                    Ok(summary) => calls.push((summary, status.clone())),
                    Err(e) => reasons.push(e.to_string()),
                }
                if let Some(first) = reasons.into_iter().next() {
                    failed_ids.insert(id.clone());
                    failed_streams.push((id.clone(), first));
                }
                statuses.push((id, status));
            }
            Err(e) => failed.push(format!("call task: {e}")),
        }
    }
    let calls_done = started.elapsed();
    let shut = s.shutdown().await;
    progress.abort();
    let drained = started.elapsed();
    let st = s.stats();
    let sk = s.sink_stats();
    // A stream the sink failed after its close (its last batches) is counted once too.
    for (id, status) in &statuses {
        if let Some(reason) = status.failure()
            && failed_ids.insert(id.clone())
        {
            failed_streams.push((id.clone(), reason));
        }
    }
    let durable = sk.batches_durable.load(Ordering::Relaxed);
    let lag_mean_ms = sk.sum_lag_ns.load(Ordering::Relaxed) as f64 / durable.max(1) as f64 / 1e6;
    let secs = calls_done.as_secs_f64();
    say!("sink        {describe}");
    say!(
        "streams     {} opened, {} sealed durable, {} failed",
        st.streams_opened.load(Ordering::Relaxed),
        sk.seals_durable.load(Ordering::Relaxed),
        failed_streams.len()
    );
    say!(
        "windows     {} ({:.0}/s)",
        st.windows.load(Ordering::Relaxed),
        st.windows.load(Ordering::Relaxed) as f64 / secs
    );
    let minted = st.windows.load(Ordering::Relaxed);
    let acked = sk.receipts_durable.load(Ordering::Relaxed);
    let pending = sk.receipts_pending.load(Ordering::Relaxed);
    let unknown = sk.receipts_unknown_fate.load(Ordering::Relaxed);
    let unsent = sk.receipts_unsent.load(Ordering::Relaxed);
    let lost = sk.receipts_lost.load(Ordering::Relaxed);
    say!(
        "receipts    {minted} minted, {acked} durable ({:.0}/s), {pending} journaled and not acknowledged ({unknown} of unknown fate: sent, no ack; {unsent} never sent), {lost} lost",
        acked as f64 / secs
    );
    say!(
        "checkpoints {} signed, {} durable ({:.1}/s), {} journaled, {} retries",
        st.checkpoints.load(Ordering::Relaxed),
        durable,
        durable as f64 / secs,
        sk.journaled.load(Ordering::Relaxed),
        sk.retries.load(Ordering::Relaxed)
    );
    say!(
        "ticks       {} accepted, {} refused ({} window closed, {} overloaded)",
        st.accepted.load(Ordering::Relaxed),
        st.refused.load(Ordering::Relaxed),
        st.refused_closed.load(Ordering::Relaxed),
        st.refused_overloaded.load(Ordering::Relaxed)
    );
    let minted_windows = st.windows.load(Ordering::Relaxed);
    let accepted_ticks = st.accepted.load(Ordering::Relaxed);
    let cap = Capacity {
        scheduled_windows,
        scheduled_ticks: scheduled,
        minted_windows,
        accepted_ticks,
        lag_p50_us: lag.quantile_us(0.5),
        lag_p99_us: lag.quantile_us(0.99),
        lag_max_us: lag.max_us(),
        grace_us: args.grace_ms * 1000,
        failed_streams: failed_streams.len() as u64,
    };
    kept_up.store(i64::from(cap.kept_up()), Ordering::Relaxed);
    *capacity = Some(cap);
    say!(
        "schedule    {scheduled_windows} windows and {scheduled} ticks scheduled; {minted_windows} windows minted, {accepted_ticks} ticks accepted"
    );
    let at_least = |us: u64| if us >= lag.ceiling_us() { ">= " } else { "" };
    say!(
        "generator   lag behind schedule p50 {}{:.1} ms, p99 {}{:.1} ms, max {:.1} ms ({} ticks)",
        at_least(cap.lag_p50_us),
        cap.lag_p50_us as f64 / 1000.0,
        at_least(cap.lag_p99_us),
        cap.lag_p99_us as f64 / 1000.0,
        cap.lag_max_us as f64 / 1000.0,
        lag.count()
    );
    say!(
        "push        p50 {} us, p99 {} us, max {} us ({} pushes)",
        push.quantile_us(0.5),
        push.quantile_us(0.99),
        push.max_us(),
        push.count()
    );
    say!(
        "tick-to-yield p50 {} us, p99 {} us, max {} us ({} yields)",
        yields.quantile_us(0.5),
        yields.quantile_us(0.99),
        yields.max_us(),
        yields.count()
    );
    say!(
        "sink lag    mean {:.1} ms, max {:.1} ms; drain after the calls {:.1} s",
        lag_mean_ms,
        sk.max_lag_ns.load(Ordering::Relaxed) as f64 / 1e6,
        (drained - calls_done).as_secs_f64()
    );
    let journal_path = args.journal.as_ref().map(|p| p.display().to_string());
    let journal_left = sk.journal_undelivered.load(Ordering::Relaxed);
    let unmarked = sk.journal_unmarked.load(Ordering::Relaxed);
    let write_errors = sk.journal_write_errors.load(Ordering::Relaxed);
    if write_errors > 0 {
        say!(
            "journal     {write_errors} writes failed and were cut back; the file, read again as a replay reads it, lists {journal_left} batches undelivered ({unmarked} acknowledged whose mark could not be written)"
        );
    }
    match shut {
        Ok(()) => {}
        // The drain ran out with batches left: they are in the journal, not lost.
        Err(e) if e.code() == "drain_timeout" && lost == 0 => {}
        Err(e) => failed.push(e.to_string()),
    }
    let accounted = acked + pending + lost;
    if accounted != minted {
        failed.push(format!(
            "{minted} receipts minted but {accounted} accounted for (durable, journaled or lost)"
        ));
    }
    if !failed.is_empty() || !failed_streams.is_empty() || lost > 0 {
        for f in &failed {
            tell!("  failed: {f}");
        }
        for (id, why) in failed_streams.iter().take(10) {
            tell!("  failed stream {id}: {why}");
        }
        if failed_streams.len() > 10 {
            tell!(
                "  ... and {} more failed streams",
                failed_streams.len() - 10
            );
        }
        return Err(Failure::Refused(format!(
            "{} streams failed, {} other failures, {lost} receipts lost",
            failed_streams.len(),
            failed.len()
        )));
    }
    if pending > 0 || journal_left > 0 {
        // The sink read the journal again before it ended (a file a replay could not read
        // failed the run above): what it lists, a replay delivers or marks.
        let j = journal_path.unwrap_or_default();
        say!(
            "ended       JOURNALED: {acked} receipts durable, {pending} in the journal {j} ({journal_left} batches listed undelivered there, {unmarked} of them acknowledged without their mark); deliver them with: jouleclaw journal replay {j} --sink {describe}"
        );
    } else {
        say!("ended       DURABLE: all {acked} receipts acknowledged by the sink");
    }
    Ok(())
}
