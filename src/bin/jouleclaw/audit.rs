//! `jouleclaw audit`: read live receipts and seals back (files or JetStream), verify every
//! signature and check every stream's completeness (spec/LIVE.md).

use std::path::PathBuf;

use clap::Args;
use jouleclaw_live::audit::{StreamAudit, audit_nats_stream, audit_stream_dir, stream_dirs};
use jouleclaw_live::escape_id;
use jouleclaw_live::jetstream::{JetStreamConfig, read_each};

use crate::keys::read_public_key;
use crate::out::{say, untrusted};
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
}

fn report(audits: &[StreamAudit]) -> CmdResult {
    let mut bad = 0usize;
    for a in audits {
        if a.is_complete() {
            say!(
                "complete    {}  receipts={} checkpoints={}",
                untrusted(&a.stream_id),
                a.receipts,
                a.checkpoints
            );
        } else {
            bad += 1;
            say!(
                "INCOMPLETE  {}  receipts={} verified={} checkpoints={}",
                untrusted(&a.stream_id),
                a.receipts,
                a.verified,
                a.checkpoints
            );
            for p in a.problems.iter().take(MAX_NAMED_PROBLEMS) {
                say!("    {}", untrusted(p));
            }
            if a.problems.len() > MAX_NAMED_PROBLEMS {
                say!(
                    "    ... and {} more problems (only the first {MAX_NAMED_PROBLEMS} are named)",
                    a.problems.len() - MAX_NAMED_PROBLEMS
                );
            }
        }
    }
    say!(
        "{} streams: {} complete, {} incomplete",
        audits.len(),
        audits.len() - bad,
        bad
    );
    if bad > 0 {
        return Err(Failure::Refused(format!("{bad} streams incomplete")));
    }
    if audits.is_empty() {
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
        .map(|p| crate::registry::witness_policy_for(&key, p))
        .transpose()?;
    if let Some(dir) = &args.dir {
        let mut audits = Vec::new();
        for d in stream_dirs(dir).map_err(|e| Failure::io(dir, e))? {
            let mut audit = audit_stream_dir(&d, &key).map_err(|e| Failure::io(&d, e))?;
            if only.is_some_and(|id| id != audit.stream_id) {
                continue;
            }
            if let Some(policy) = &policy
                && let Err(Failure::Refused(why) | Failure::Usage(why)) =
                    crate::registry::verify_run(&d, policy)
            {
                audit.problems.push(format!("not_witnessed: {why}"));
            }
            // interaction-metrics.cbor, when there is one (spec/INTERACTION-METRICS-V1.md):
            // its signature and binding, as receipts verify DIR checks them.
            if d.join(crate::interaction::FILE).symlink_metadata().is_ok() {
                audit
                    .problems
                    .extend(crate::interaction::check(&key, &d)?.problems);
            }
            audits.push(audit);
        }
        return report(&audits);
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
    audit_nats(args, url, only, &key, witnessed)
}

/// The configuration a reader of the cluster (`audit --nats`, `registry add-stored`) takes:
/// the URL, the JetStream stream's name and the subject prefix (it writes no journal).
pub(crate) fn reader_config(url: &str, js_stream: &str, prefix: &str) -> JetStreamConfig {
    let mut config = JetStreamConfig::new(url, std::env::temp_dir().join("jouleclaw-audit.unused"));
    config.stream = js_stream.to_owned();
    config.prefix = prefix.to_owned();
    config
}

/// `audit --nats`: stream by stream (one stream's batches in memory at a time, spec/LIVE.md
/// section 7), each line printed as its stream is checked, stewards kept apart.
fn audit_nats(
    args: &AuditArgs,
    url: &str,
    only: Option<&str>,
    key: &jouleclaw_jcr1::cose::PublicKey,
    witnessed: Option<(jouleclaw_stack::registry::WitnessPolicy, &std::path::Path)>,
) -> CmdResult {
    let config = reader_config(url, &args.js_stream, &args.prefix);
    let rt = jouleclaw_live::tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Usage(format!("runtime: {e}")))?;
    let (mut total, mut bad, mut receipts) = (0usize, 0usize, 0usize);
    let stats = rt
        .block_on(read_each(&config, only, |s| {
            let mut a = audit_nats_stream(&s, key);
            if let Some((policy, dir)) = &witnessed
                && let Err(Failure::Refused(why) | Failure::Usage(why)) =
                    crate::registry::verify_stored_call(
                        &dir.join(escape_id(&a.stream_id)),
                        s.records.seals.last().map(Vec::as_slice),
                        policy,
                    )
            {
                a.problems.push(format!("not_witnessed: {why}"));
            }
            total += 1;
            receipts += a.verified;
            if a.is_complete() {
                say!(
                    "complete    {}  steward={} receipts={} checkpoints={}",
                    untrusted(&a.stream_id),
                    untrusted(&s.steward),
                    a.receipts,
                    a.checkpoints
                );
            } else {
                bad += 1;
                say!(
                    "INCOMPLETE  {}  steward={} receipts={} verified={} checkpoints={}",
                    untrusted(&a.stream_id),
                    untrusted(&s.steward),
                    a.receipts,
                    a.verified,
                    a.checkpoints
                );
                for p in a.problems.iter().take(MAX_NAMED_PROBLEMS) {
                    say!("    {}", untrusted(p));
                }
                if a.problems.len() > MAX_NAMED_PROBLEMS {
                    say!(
                        "    ... and {} more problems (only the first {MAX_NAMED_PROBLEMS} are named)",
                        a.problems.len() - MAX_NAMED_PROBLEMS
                    );
                }
            }
        }))
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
    say!(
        "{total} streams: {} complete, {bad} incomplete; {receipts} receipts verified",
        total - bad
    );
    if bad > 0 {
        return Err(Failure::Refused(format!("{bad} streams incomplete")));
    }
    if total == 0 {
        return Err(Failure::Refused("no stream found".into()));
    }
    Ok(())
}
