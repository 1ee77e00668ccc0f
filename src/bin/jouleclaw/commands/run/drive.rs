//! The drive stage of `jouleclaw run`: the trace's ticks, line by line, through the pipeline;
//! each window written to the staged files as it closes, each checkpoint as it is signed.

use std::io::{BufRead as _, Read as _};
use std::path::Path;

use indicatif::ProgressBar;
use jouleclaw_stack::pipeline::trace::{max_trace_line_len, parse_trace_line};
use jouleclaw_stack::pipeline::{ClosedWindow, PipelineError};
use jouleclaw_stack::seal::SealBatch;
use jouleclaw_stack::store::layout;
use jouleclaw_stack::store::writer::RunWriter;

use super::RunArgs;
use super::open::Run;
use crate::Failure;
use crate::commands::stop_latency::Pushed;
use crate::out::say;
use crate::present::table::{RunTotals, table_header, table_row};

pub(super) fn at_line(trace: &Path, line: u64, e: &PipelineError) -> Failure {
    Failure::Refused(format!("{}:{line}: {}: {e}", trace.display(), e.code()))
}

/// Where closed windows and checkpoints go: the staged files, the table on standard output
/// (unless --quiet), the run's totals.
pub(super) struct Sink {
    pub(super) files: RunWriter,
    pub(super) progress: ProgressBar,
    quiet: bool,
    header_printed: bool,
    /// Checkpoints written to seals.cbor.
    pub(super) checkpoints: u64,
    pub(super) totals: RunTotals,
}

impl Sink {
    pub(super) fn new(files: RunWriter, progress: ProgressBar, quiet: bool) -> Self {
        Self {
            files,
            progress,
            quiet,
            header_printed: false,
            checkpoints: 0,
            totals: RunTotals::default(),
        }
    }

    /// A signed checkpoint: to seals.cbor (and its inclusion receipts to inclusion.cbor).
    pub(super) fn seal(&mut self, batch: &SealBatch) -> Result<(), Failure> {
        if self.files.holds(layout::SEALS_CBOR) {
            self.files
                .write(layout::SEALS_CBOR, &batch.checkpoint.cose_sign1)?;
            if self.files.holds(layout::INCLUSION_CBOR) {
                for (_, receipt) in &batch.inclusion {
                    self.files.write(layout::INCLUSION_CBOR, receipt)?;
                }
            }
            self.checkpoints += 1;
        }
        if !self.quiet {
            let s = &batch.checkpoint.seal;
            self.progress.suspend(|| {
                say!(
                    "{:>6} sealed: {} receipts, windows {}..={}{}",
                    "",
                    s.tree_size,
                    s.first_window_id,
                    s.last_window_id,
                    if s.is_final { ", final" } else { "" }
                );
            });
        }
        Ok(())
    }

    /// A closed window: its receipt to receipts.jsonl (and receipts.cbor when signed), its row
    /// to the table, then the checkpoint it completed, if any.
    pub(super) fn window(&mut self, w: ClosedWindow) -> Result<(), Failure> {
        self.files
            .write(layout::RECEIPTS_JSONL, w.canonical_bytes())?;
        self.files.write(layout::RECEIPTS_JSONL, b"\n")?;
        if let Some(item) = w.cose_sign1() {
            self.files.write(layout::RECEIPTS_CBOR, item)?;
        }
        self.totals.add(&w);
        if !self.quiet {
            let header_printed = &mut self.header_printed;
            self.progress.suspend(|| {
                if !*header_printed {
                    say!("{}", table_header());
                    *header_printed = true;
                }
                say!("{}", table_row(&w));
            });
        }
        if let Some(batch) = &w.seal {
            self.seal(batch)?;
        }
        Ok(())
    }
}

/// The drive stage: every line of the trace through the pipeline and the meters beside it.
pub(super) fn drive(args: &RunArgs, run: &mut Run) -> Result<(), Failure> {
    let trace = &args.trace;
    let spec = &run.spec;
    let max = max_trace_line_len(spec);
    let mut line = Vec::new();
    let mut read = 0u64;
    loop {
        line.clear();
        // The limit, a `\r\n` line end and one byte more are enough to know a line is too
        // long; the line end is not counted (parse_trace_line strips it).
        let n = (&mut run.reader)
            .take(max as u64 + 3)
            .read_until(b'\n', &mut line)
            .map_err(|e| Failure::io(trace, e))?;
        if n == 0 {
            break;
        }
        run.line_no += 1;
        let line_no = run.line_no;
        read += n as u64;
        run.sink.progress.set_position(read);
        let Some(tick) = parse_trace_line(&line, spec).map_err(|e| at_line(trace, line_no, &e))?
        else {
            continue;
        };
        let pushed = tick.clone();
        let outcome = run
            .pipeline
            .push(tick)
            .map_err(|e| at_line(trace, line_no, &e))?;
        let p = Pushed {
            tick: &pushed,
            outcome: &outcome,
            spec,
        };
        run.stop_latency.push(p)?;
        run.interaction.push(p)?;
        if let Some(w) = outcome.closed {
            run.sink.window(w)?;
        }
    }
    Ok(())
}
