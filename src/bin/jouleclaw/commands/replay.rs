//! `jouleclaw replay`: commit-safety fixtures replayed (spec/COMMIT-REPLAY.md).

use std::path::PathBuf;

use clap::Args;
use jouleclaw_stack::replay::replay_corpus;

use crate::out::{say, say_raw};
use crate::{CmdResult, Failure};

/// Arguments of `jouleclaw replay`.
#[derive(Args, Debug)]
pub(crate) struct ReplayArgs {
    /// Fixture files (JSON Lines).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// `replay FILE... [--json]`.
pub(crate) fn exec(args: &ReplayArgs) -> CmdResult {
    let (files, json) = (&args.files, args.json);
    let mut corpus = Vec::with_capacity(files.len());
    for path in files {
        let bytes = std::fs::read(path).map_err(|e| Failure::io(path, e))?;
        corpus.push((path.display().to_string(), bytes));
    }
    let report = replay_corpus(&corpus);
    if json {
        let provenance = jouleclaw_stack::replay::Provenance::from_build(
            env!("CARGO_PKG_VERSION"),
            option_env!("JOULECLAW_GIT_REV").unwrap_or(""),
        );
        say!("{}", report.render_json_with(&provenance));
    } else {
        say_raw!("{}", report.render_text());
    }
    if report.all_expectations_hold() {
        Ok(())
    } else {
        Err(Failure::Refused(
            "replay: not every expectation holds (see the report)".to_owned(),
        ))
    }
}
