//! `jouleclaw audit`: read live receipts and seals back (files or JetStream), verify every
//! signature and check every stream's completeness (spec/LIVE.md), streams checked by
//! `--jobs` worker threads at once.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use clap::Args;
use jouleclaw_live::audit::{
    Problem, StreamAudit, audit_nats_stream, audit_stream_dir, stream_dirs,
};
use jouleclaw_live::escape_id;
use jouleclaw_live::jetstream::{JetStreamConfig, NatsStream, read_each};
use jouleclaw_stack::registry::WitnessPolicy;

use crate::keys::read_public_key;
use crate::out::{say, say_raw, untrusted};
use crate::{CmdResult, Failure};

/// Problems printed per stream; the rest are counted.
const MAX_NAMED_PROBLEMS: usize = jouleclaw_stack::store::MAX_NAMED_PROBLEMS;

/// Arguments of `jouleclaw audit`.
#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["dir", "nats"])))]
pub(crate) struct AuditArgs {
    /// The public key file the receipts and seals must verify under.
    #[arg(long = "pub", value_name = "PUBFILE")]
    public: PathBuf,
    /// A `jouleclaw live --sink file:DIR` folder.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// A NATS server (`nats://HOST:PORT`, several separated by commas).
    #[arg(long, value_name = "URL")]
    nats: Option<String>,
    /// Only this stream id.
    #[arg(long = "stream", value_name = "ID", conflicts_with = "all")]
    stream: Option<String>,
    /// Every stream (the default).
    #[arg(long)]
    all: bool,
    /// The JetStream stream's name.
    #[arg(long = "js-stream", default_value = "JOULECLAW")]
    js_stream: String,
    /// The subject prefix.
    #[arg(long, default_value = "jouleclaw")]
    prefix: String,
    /// Also require each stream's final seal to be in a registry checkpoint cosigned by this
    /// policy's quorum (spec/CALL-REGISTRY.md section 4); a stream that is not is incomplete
    /// (`not_witnessed`). With --dir the proof is each stream folder's `registry.tlog-proof`;
    /// with --nats it is in --registry-proofs. The policy's log key must be --pub.
    #[arg(long, value_name = "FILE")]
    witness_policy: Option<PathBuf>,
    /// With --nats and --witness-policy: the folder `live --registry-proofs DIR` wrote, one
    /// folder per call holding its `registry.tlog-proof`; the proof must register the final seal
    /// the cluster holds.
    #[arg(long, value_name = "DIR", requires_all = ["nats", "witness_policy"])]
    registry_proofs: Option<PathBuf>,
    /// Streams audited at once, each by a worker thread of its own (default: the cores
    /// available to the process). The verdicts, the totals and the exit code do not depend on
    /// it; with --dir the streams are printed in the folders' order, with --nats as they finish.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    jobs: Option<u32>,
}

impl AuditArgs {
    /// `--jobs`, or the cores available to the process (1 when unknown).
    fn jobs(&self) -> usize {
        self.jobs.map_or_else(
            || std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
            |n| usize::try_from(n).unwrap_or(1),
        )
    }
}

/// CPU time (user and system, every thread) this process has used so far, from
/// `/proc/self/stat` (fields 14 and 15, in clock ticks of 1/100 s, Linux's `USER_HZ`); `None`
/// where that file is not there or not understood.
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after its end.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime.saturating_add(stime) as f64 / 100.0)
}

/// Wall and CPU time of one audit, for its closing `audited` line.
struct Clock {
    wall: Instant,
    cpu: Option<f64>,
    jobs: usize,
}

impl Clock {
    fn start(jobs: usize) -> Self {
        Self {
            wall: Instant::now(),
            cpu: process_cpu_seconds(),
            jobs,
        }
    }

    /// `audited R receipts in S streams with J jobs: W s wall, C s CPU; X receipts/s, Y
    /// receipts per CPU-second` (`unknown` CPU time where it cannot be read).
    fn report(&self, streams: usize, receipts: usize) {
        let wall = self.wall.elapsed().as_secs_f64();
        let cpu = match (self.cpu, process_cpu_seconds()) {
            (Some(a), Some(b)) => Some((b - a).max(0.0)),
            _ => None,
        };
        let per_wall = receipts as f64 / wall.max(1e-9);
        let (cpu_text, per_cpu) = match cpu {
            Some(c) => (
                format!("{c:.2} s"),
                format!("{:.0}", receipts as f64 / c.max(0.01)),
            ),
            None => ("unknown".to_owned(), "unknown".to_owned()),
        };
        say!(
            "audited     {receipts} receipts in {streams} streams with {} jobs: {wall:.2} s wall, \
             CPU {cpu_text}; {per_wall:.0} receipts/s, {per_cpu} receipts per CPU-second",
            self.jobs
        );
    }
}

/// The lines printed for one stream: `complete ...`, or `INCOMPLETE ...` and its first
/// problems; `steward` is the subject's steward (JetStream only).
fn stream_lines(a: &StreamAudit, steward: Option<&str>) -> String {
    use std::fmt::Write as _;
    let steward = steward.map_or_else(String::new, |s| format!("  steward={}", untrusted(s)));
    let mut out = String::new();
    if a.is_complete() {
        let _ = writeln!(
            out,
            "complete    {}{steward}  receipts={} checkpoints={}",
            untrusted(&a.stream_id),
            a.receipts,
            a.checkpoints
        );
        return out;
    }
    let _ = writeln!(
        out,
        "INCOMPLETE  {}{steward}  receipts={} verified={} checkpoints={}",
        untrusted(&a.stream_id),
        a.receipts,
        a.verified,
        a.checkpoints
    );
    for p in a.problems.iter().take(MAX_NAMED_PROBLEMS) {
        let _ = writeln!(out, "    {}", untrusted(&p.to_string()));
    }
    if a.problems.len() > MAX_NAMED_PROBLEMS {
        let _ = writeln!(
            out,
            "    ... and {} more problems (only the first {MAX_NAMED_PROBLEMS} are named)",
            a.problems.len() - MAX_NAMED_PROBLEMS
        );
    }
    out
}

/// Streams, incomplete streams and receipts read, over the streams printed.
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    streams: usize,
    bad: usize,
    receipts: usize,
    verified: usize,
}

impl Totals {
    /// Prints `a`'s lines and counts it.
    fn print(&mut self, a: &StreamAudit, steward: Option<&str>) {
        say_raw!("{}", stream_lines(a, steward));
        self.streams += 1;
        self.receipts += a.receipts;
        self.verified += a.verified;
        if !a.is_complete() {
            self.bad += 1;
        }
    }
}

/// Audits one stream folder: the folder (`audit_stream_dir`, which checks its signed documents
/// too), then its registry proof (with --witness-policy). `None` when --stream names another
/// stream.
fn audit_dir(
    d: &Path,
    key: &jouleclaw_jcr1::cose::ValidKey,
    only: Option<&str>,
    policy: Option<&WitnessPolicy>,
) -> Result<Option<StreamAudit>, Failure> {
    let mut audit = audit_stream_dir(d, key).map_err(|e| Failure::io(d, e))?;
    if only.is_some_and(|id| id != audit.stream_id) {
        return Ok(None);
    }
    if let Some(policy) = policy
        && let Err(Failure::Refused(why) | Failure::Usage(why)) =
            crate::commands::registry::verify_run(d, policy)
    {
        audit.problems.push(Problem::new("not_witnessed", why));
    }
    Ok(Some(audit))
}

/// `audit --dir`: the stream folders, in name order, audited by `jobs` worker threads, each
/// taking the next folder; their lines are printed in the folders' order as soon as every
/// earlier folder is printed. A folder that cannot be read stops the audit with its error
/// (exit 2) after the folders before it are printed, as with one job. Memory: the folder
/// list, the `jobs` folders being verified, and the verdicts that wait for an earlier one.
fn audit_folders(
    folders: &[PathBuf],
    key: &jouleclaw_jcr1::cose::ValidKey,
    only: Option<&str>,
    policy: Option<&WitnessPolicy>,
    clock: &Clock,
) -> CmdResult {
    type Verdict = Result<Option<StreamAudit>, Failure>;
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut totals = Totals::default();
    let mut first_error: Option<Failure> = None;
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<(usize, Verdict)>();
        for _ in 0..clock.jobs.min(folders.len()).max(1) {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(d) = folders.get(i) else {
                        break;
                    };
                    if tx.send((i, audit_dir(d, key, only, policy))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        // Verdicts that finished before an earlier folder's, by index.
        let mut waiting = std::collections::BTreeMap::new();
        let mut printed = 0usize;
        for (i, verdict) in rx {
            waiting.insert(i, verdict);
            while let Some(verdict) = waiting.remove(&printed) {
                printed += 1;
                match verdict {
                    Ok(Some(a)) => totals.print(&a, None),
                    Ok(None) => {}
                    Err(e) => {
                        first_error = Some(e);
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                }
            }
        }
    });
    if let Some(e) = first_error {
        return Err(e);
    }
    finish(&totals, clock, false)
}

/// The closing lines and the exit: 1 when a stream is incomplete or none was found. `verified`:
/// the summary line also counts the receipts verified (as `audit --nats` says it).
fn finish(totals: &Totals, clock: &Clock, with_verified: bool) -> CmdResult {
    let Totals {
        streams,
        bad,
        receipts,
        verified,
    } = *totals;
    clock.report(streams, receipts);
    if with_verified {
        say!(
            "{streams} streams: {} complete, {bad} incomplete; {verified} receipts verified",
            streams - bad
        );
    } else {
        say!(
            "{streams} streams: {} complete, {bad} incomplete",
            streams - bad
        );
    }
    if bad > 0 {
        return Err(Failure::Refused(format!("{bad} streams incomplete")));
    }
    if streams == 0 {
        return Err(Failure::Refused("no stream found".into()));
    }
    Ok(())
}

/// Runs `jouleclaw audit`.
pub(crate) fn audit(args: &AuditArgs) -> CmdResult {
    let key = read_public_key(&args.public)?;
    let only = args.stream.as_deref();
    let policy = args
        .witness_policy
        .as_deref()
        .map(|p| crate::commands::registry::witness_policy_for(&key, p))
        .transpose()?;
    // Checked once by the one key rule, for every stream audited.
    let valid = crate::keys::valid_key(&key)?;
    let clock = Clock::start(args.jobs());
    if let Some(dir) = &args.dir {
        let folders = stream_dirs(dir).map_err(|e| Failure::io(dir, e))?;
        return audit_folders(&folders, &valid, only, policy.as_ref(), &clock);
    }
    let Some(url) = &args.nats else {
        return Err(Failure::Usage("give --dir or --nats".into()));
    };
    let witnessed = match (policy, &args.registry_proofs) {
        (Some(policy), Some(dir)) => Some((policy, dir.as_path())),
        (Some(_), None) => {
            return Err(Failure::Usage(
                "--witness-policy with --nats needs --registry-proofs DIR: the cluster holds no \
                 registry proofs (live --registry-proofs DIR writes them)"
                    .into(),
            ));
        }
        (None, _) => None,
    };
    audit_nats(args, url, only, &valid, witnessed, &clock)
}

/// The configuration a reader of the cluster (`audit --nats`, `registry add-stored`) takes:
/// the URL, the JetStream stream's name and the subject prefix (it writes no journal).
pub(crate) fn reader_config(url: &str, js_stream: &str, prefix: &str) -> JetStreamConfig {
    let mut config = JetStreamConfig::new(url, std::env::temp_dir().join("jouleclaw-audit.unused"));
    config.stream = js_stream.to_owned();
    config.prefix = prefix.to_owned();
    config
}

/// Audits one stream read from JetStream (`audit_nats_stream`), then its registry proof (with
/// --witness-policy and --registry-proofs).
fn audit_subject(
    s: &NatsStream,
    key: &jouleclaw_jcr1::cose::ValidKey,
    witnessed: Option<&(WitnessPolicy, &Path)>,
) -> StreamAudit {
    let mut a = audit_nats_stream(s, key);
    if let Some((policy, dir)) = witnessed
        && let Err(Failure::Refused(why) | Failure::Usage(why)) =
            crate::commands::registry::verify_stored_call(
                &dir.join(escape_id(&a.stream_id)),
                s.records.seals.last().map(Vec::as_slice),
                policy,
            )
    {
        a.problems.push(Problem::new("not_witnessed", why));
    }
    a
}

/// `audit --nats`: stream by stream (spec/LIVE.md section 7), stewards kept apart. The reader
/// hands each stream it finishes to one of `jobs` worker threads, waiting until one is free
/// (a rendezvous: at most `jobs` streams are held beyond what the reader holds); each stream's
/// lines are printed when its worker has checked it, so streams are printed in the order they
/// finish.
fn audit_nats(
    args: &AuditArgs,
    url: &str,
    only: Option<&str>,
    key: &jouleclaw_jcr1::cose::ValidKey,
    witnessed: Option<(WitnessPolicy, &Path)>,
    clock: &Clock,
) -> CmdResult {
    let config = reader_config(url, &args.js_stream, &args.prefix);
    let rt = jouleclaw_live::tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Usage(format!("runtime: {e}")))?;
    let totals = Mutex::new(Totals::default());
    let (tx, rx) = std::sync::mpsc::sync_channel::<NatsStream>(0);
    let rx = Mutex::new(rx);
    let stats = std::thread::scope(|scope| {
        for _ in 0..clock.jobs.max(1) {
            let (rx, totals, witnessed) = (&rx, &totals, witnessed.as_ref());
            scope.spawn(move || {
                loop {
                    // One worker at a time waits on the reader; the others are checking.
                    let next = match rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => break,
                    };
                    let Ok(s) = next else {
                        break;
                    };
                    let a = audit_subject(&s, key, witnessed);
                    if let Ok(mut t) = totals.lock() {
                        t.print(&a, Some(&s.steward));
                    }
                }
            });
        }
        let stats = rt.block_on(read_each(&config, only, |s| {
            // Refused only when every worker has stopped, which they do only when this
            // sender is dropped.
            let _ = tx.send(s);
        }));
        drop(tx);
        stats
    })
    .map_err(|e| Failure::Usage(format!("{url}: {e}")))?;
    let secs = stats.elapsed.as_secs_f64().max(1e-9);
    say!(
        "read        {} messages ({} read again; {} bytes) of {} subjects in {:.2} s: {:.0} messages/s, {:.1} MB/s",
        stats.messages,
        stats.reread,
        stats.bytes,
        stats.subjects,
        secs,
        stats.messages as f64 / secs,
        stats.bytes as f64 / secs / 1e6
    );
    let totals = totals
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    finish(&totals, clock, true)
}
