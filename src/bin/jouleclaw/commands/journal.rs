//! `jouleclaw journal replay FILE --sink nats://...`: deliver what a `jouleclaw live` run left
//! in its write-ahead journal (spec/LIVE.md section 6.4).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use jouleclaw_live::jetstream::{JetStreamConfig, replay_abandoning};

use crate::out::say;
use crate::{CmdResult, Failure};

/// `jouleclaw journal ...`.
#[derive(Subcommand, Debug)]
pub(crate) enum JournalCmd {
    /// Publish every undelivered batch of a journal into JetStream exactly once (a batch
    /// already stored on its subject is not stored again), then mark it delivered. Exit 0
    /// when nothing is left undelivered.
    Replay(ReplayArgs),
}

/// Arguments of `jouleclaw journal replay`.
#[derive(Args, Debug)]
pub(crate) struct ReplayArgs {
    /// The journal file a `jouleclaw live --journal FILE` run wrote.
    file: PathBuf,
    /// The NATS server (`nats://HOST:PORT`, several separated by commas).
    #[arg(long, value_name = "URL")]
    sink: String,
    /// The JetStream stream's name.
    #[arg(long = "js-stream", default_value = "JOULECLAW")]
    js_stream: String,
    /// JetStream replicas if the stream has to be created.
    #[arg(long, default_value_t = 1)]
    replicas: usize,
    /// Accept an existing JetStream stream with retention (`max_age`, message or byte
    /// limits) that deletes messages on its own; refused otherwise (`stream_mismatch`).
    #[arg(long)]
    allow_retention: bool,
    /// Abandon the undeliverable record at this offset (one a replay named: no batch, or
    /// journaled for another subject): an abandoned mark is written and the journal no
    /// longer counts it undelivered. A deliverable batch is refused. Repeatable.
    #[arg(long = "abandon", value_name = "OFFSET")]
    abandon: Vec<u64>,
}

/// Runs `jouleclaw journal ...`.
pub(crate) fn journal(cmd: &JournalCmd) -> CmdResult {
    let JournalCmd::Replay(args) = cmd;
    if !args.sink.starts_with("nats://") {
        return Err(Failure::Usage(format!(
            "--sink {:?}: give nats://HOST:PORT",
            args.sink
        )));
    }
    let mut config = JetStreamConfig::new(&args.sink, &args.file);
    config.stream = args.js_stream.clone();
    config.replicas = args.replicas;
    config.allow_retention = args.allow_retention;
    let rt = jouleclaw_live::tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Usage(format!("runtime: {e}")))?;
    let r = rt
        .block_on(replay_abandoning(&args.file, &config, &args.abandon))
        .map_err(|e| match e.code() {
            "journal_corrupt" | "journal_locked" | "stream_mismatch" => {
                Failure::Refused(e.to_string())
            }
            _ => Failure::Usage(e.to_string()),
        })?;
    say!(
        "journal     {}: {} batches, {} delivered before, {} abandoned before, {} torn bytes cut off",
        args.file.display(),
        r.recovered.batches,
        r.recovered.delivered,
        r.recovered.abandoned,
        r.recovered.torn_bytes
    );
    for (offset, why) in &r.undeliverable {
        if args.abandon.contains(offset) {
            say!(
                "abandoned   the record at offset {offset}: {}",
                crate::out::untrusted(why)
            );
        } else {
            say!(
                "undeliverable the record at offset {offset}: {}; left in the journal (give it up with --abandon {offset})",
                crate::out::untrusted(why)
            );
        }
    }
    say!(
        "replayed    {} undelivered: {} published, {} already stored, {} left; {} receipts delivered{}",
        r.undelivered,
        r.published,
        r.already_stored,
        r.left,
        r.receipts,
        if r.republished > 0 {
            format!(
                " ({} not read back after their acknowledgement and published again)",
                r.republished
            )
        } else {
            String::new()
        }
    );
    if r.write_errors > 0 {
        say!(
            "journal     {} writes failed and were cut back; {} batches delivered whose mark could not be written (a replay run again marks them)",
            r.write_errors,
            r.unmarked
        );
    }
    if r.left > 0 || r.unmarked > 0 {
        return Err(Failure::Refused(format!(
            "{} batches still undelivered, {} delivered without their mark",
            r.left, r.unmarked
        )));
    }
    Ok(())
}
