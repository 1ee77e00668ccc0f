//! The calls of `jouleclaw live`: the substrate started, the synthetic calls spawned and awaited,
//! the substrate drained, and what the run did told (`crate::present::live`).

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use jouleclaw_jcr1::cose::SoftwareSigner;
use jouleclaw_live::synth::{
    CallReport, Capacity, Latency, scheduled_ticks, synthetic_call_with_lag,
};
use jouleclaw_live::tokio::runtime::Handle;
use jouleclaw_live::tokio::task::JoinHandle;
use jouleclaw_live::{
    ReceiptSink, SinkStats, StreamStatus, StreamSummary, Substrate, SubstrateConfig, TokioClock,
};

use super::LiveArgs;
use crate::out::{say, tell};
use crate::present::live::{self, Receipts};
use crate::{CmdResult, Failure};

/// The calls' summaries (those that closed) with their status, and the run's outcome.
pub(super) type Calls = Vec<(StreamSummary, Arc<StreamStatus>)>;

/// One call as its task ends: its id, how its ticks went, its close, its status.
type CallEnd = (
    String,
    jouleclaw_live::Result<CallReport>,
    jouleclaw_live::Result<StreamSummary>,
    Arc<StreamStatus>,
);

/// How the calls ended: one entry per failed stream (its first reason), their ids, the run's
/// own failures, every call's status.
#[derive(Default)]
struct Ended {
    failed_streams: Vec<(String, String)>,
    failed_ids: std::collections::HashSet<String>,
    failed: Vec<String>,
    statuses: Vec<(String, Arc<StreamStatus>)>,
}

/// The latencies the calls measure, and whether the run kept up (-1 until it ends).
#[derive(Clone)]
struct Meters {
    push: Arc<Latency>,
    yields: Arc<Latency>,
    lag: Arc<Latency>,
    kept_up: Arc<AtomicI64>,
}

/// What the calls schedule: windows per call, and over all calls windows and ticks.
struct Schedule {
    windows: u64,
    windows_total: u64,
    ticks_total: u64,
}

pub(super) async fn run(
    args: &LiveArgs,
    sink: Box<dyn ReceiptSink>,
    signer: Arc<SoftwareSigner>,
    prefix: &str,
    generator: Option<Handle>,
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

/// Whether call `i` ignores barge-ins (--ignore-every).
fn ignores(args: &LiveArgs, i: usize) -> bool {
    args.ignore_every > 0 && i % args.ignore_every == args.ignore_every - 1
}

fn start(
    args: &LiveArgs,
    signer: Arc<SoftwareSigner>,
    sink: Box<dyn ReceiptSink>,
) -> Result<Substrate, Failure> {
    let mut config = SubstrateConfig::new(&args.steward);
    config.checkpoint_every = args.checkpoint_every;
    config.grace_ns = args.grace_ms * 1_000_000;
    config.verdict_shards = args.shards.max(1);
    config.mint_shards = args.shards.max(1);
    config.max_streams = args.streams;
    Substrate::start(config, Arc::new(TokioClock::system()), signer, sink)
        .map_err(|e| Failure::Usage(e.to_string()))
}

/// With --metrics: the substrate's metrics served on the loopback address.
async fn serve_metrics(
    args: &LiveArgs,
    s: &Substrate,
    m: &Meters,
    schedule: &Schedule,
) -> CmdResult {
    let Some(addr) = args.metrics else {
        return Ok(());
    };
    let source = Arc::new(crate::present::metrics::Source {
        substrate: s.clone(),
        push: m.push.clone(),
        yields: m.yields.clone(),
        lag: m.lag.clone(),
        scheduled: (schedule.windows_total, schedule.ticks_total),
        kept_up: m.kept_up.clone(),
    });
    let bound =
        crate::present::metrics::serve(addr, move || crate::present::metrics::render(&source))
            .await
            .map_err(|e| Failure::Usage(format!("--metrics: {e}")))?;
    tell!("metrics: http://{bound}/metrics");
    Ok(())
}

/// Opens every call's stream and spawns the call (on the generator's runtime, if any).
fn spawn_calls(
    args: &LiveArgs,
    s: &Substrate,
    prefix: &str,
    windows: u64,
    m: &Meters,
    generator: Option<&Handle>,
) -> Result<Vec<JoinHandle<CallEnd>>, Failure> {
    let mut tasks = Vec::with_capacity(args.streams);
    for i in 0..args.streams {
        let id = format!("{prefix}-{i}");
        let h = s
            .open_stream(&id)
            .map_err(|e| Failure::Usage(e.to_string()))?;
        let ignores = ignores(args, i);
        let (push, yields, lag) = (m.push.clone(), m.yields.clone(), m.lag.clone());
        let call = async move {
            let r = synthetic_call_with_lag(&h, windows, ignores, &push, &yields, &lag).await;
            let closed = h.close().await;
            (id, r, closed, h.status().clone())
        };
        tasks.push(match generator {
            Some(g) => g.spawn(call),
            None => jouleclaw_live::tokio::spawn(call),
        });
    }
    Ok(tasks)
}

/// Once a second on standard error: the substrate's progress.
fn progress_task(s: &Substrate, push: &Arc<Latency>, started: Instant) -> JoinHandle<()> {
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
}

/// Awaits every call: the summaries of those that closed go to `calls`; one entry per failed
/// stream (its first reason: a stream that fails is refused again on its next push and on its
/// close, which are the same failure), and the run's own.
async fn collect(tasks: Vec<JoinHandle<CallEnd>>, calls: &mut Calls) -> Ended {
    let mut ended = Ended::default();
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
                    ended.failed_ids.insert(id.clone());
                    ended.failed_streams.push((id.clone(), first));
                }
                statuses.push((id, status));
            }
            Err(e) => ended.failed.push(format!("call task: {e}")),
        }
    }
    ended.statuses = statuses;
    ended
}

async fn run_calls(
    args: &LiveArgs,
    sink: Box<dyn ReceiptSink>,
    signer: Arc<SoftwareSigner>,
    prefix: &str,
    generator: Option<Handle>,
    calls: &mut Calls,
    capacity: &mut Option<Capacity>,
) -> CmdResult {
    let describe = sink.describe();
    let s = start(args, signer, sink)?;
    let m = Meters {
        push: Arc::new(Latency::default()),
        yields: Arc::new(Latency::default()),
        lag: Arc::new(Latency::lag()),
        kept_up: Arc::new(AtomicI64::new(-1)),
    };
    let windows = args.seconds * 1000 / 200;
    let window_ns = s.config().spec.window_ns();
    // What the calls schedule, beside what they minted and what was accepted.
    let schedule = Schedule {
        windows,
        windows_total: windows * args.streams as u64,
        ticks_total: (0..args.streams)
            .map(|i| scheduled_ticks(windows, ignores(args, i), window_ns))
            .sum(),
    };
    serve_metrics(args, &s, &m, &schedule).await?;
    let started = Instant::now();
    let tasks = spawn_calls(args, &s, prefix, schedule.windows, &m, generator.as_ref())?;
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
    let progress = progress_task(&s, &m.push, started);
    let mut ended = collect(tasks, calls).await;
    let calls_done = started.elapsed();
    let shut = s.shutdown().await;
    progress.abort();
    let drained = started.elapsed();
    let st = s.stats();
    let sk = s.sink_stats();
    // A stream the sink failed after its close (its last batches) is counted once too.
    for (id, status) in &ended.statuses {
        if let Some(reason) = status.failure()
            && ended.failed_ids.insert(id.clone())
        {
            ended.failed_streams.push((id.clone(), reason));
        }
    }
    let durable = sk.batches_durable.load(Ordering::Relaxed);
    let lag_mean_ms = sk.sum_lag_ns.load(Ordering::Relaxed) as f64 / durable.max(1) as f64 / 1e6;
    let secs = calls_done.as_secs_f64();
    let receipts = live::tell_counts(&describe, st, sk, ended.failed_streams.len(), secs, durable);
    let cap = Capacity {
        scheduled_windows: schedule.windows_total,
        scheduled_ticks: schedule.ticks_total,
        minted_windows: st.windows.load(Ordering::Relaxed),
        accepted_ticks: st.accepted.load(Ordering::Relaxed),
        lag_p50_us: m.lag.quantile_us(0.5),
        lag_p99_us: m.lag.quantile_us(0.99),
        lag_max_us: m.lag.max_us(),
        grace_us: args.grace_ms * 1000,
        failed_streams: ended.failed_streams.len() as u64,
    };
    m.kept_up.store(i64::from(cap.kept_up()), Ordering::Relaxed);
    *capacity = Some(cap);
    live::tell_timing(
        &cap,
        [&m.lag, &m.push, &m.yields],
        sk,
        lag_mean_ms,
        (drained - calls_done).as_secs_f64(),
    );
    conclude(args, &describe, sk, shut, &ended, &receipts)
}

/// The run's outcome: a failure of the substrate or a stream, or a receipt lost or unaccounted
/// for, refuses it; else it ended with every receipt durable, or some journaled.
fn conclude(
    args: &LiveArgs,
    describe: &str,
    sk: &SinkStats,
    shut: jouleclaw_live::Result<()>,
    ended: &Ended,
    r: &Receipts,
) -> CmdResult {
    let Receipts {
        minted,
        acked,
        pending,
        lost,
    } = *r;
    let journal_path = args.journal.as_ref().map(|p| p.display().to_string());
    let journal_left = sk.journal_undelivered.load(Ordering::Relaxed);
    let unmarked = sk.journal_unmarked.load(Ordering::Relaxed);
    let write_errors = sk.journal_write_errors.load(Ordering::Relaxed);
    if write_errors > 0 {
        say!(
            "journal     {write_errors} writes failed and were cut back; the file, read again as a replay reads it, lists {journal_left} batches undelivered ({unmarked} acknowledged whose mark could not be written)"
        );
    }
    let mut failed = ended.failed.clone();
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
    let failed_streams = &ended.failed_streams;
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
