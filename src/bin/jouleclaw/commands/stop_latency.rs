//! `stop-latency.cbor` (spec/STOP-LATENCY-V1.md): measured beside the pipeline by `jouleclaw
//! run`; verified and bound to the receipts by the stream verifier
//! (`jouleclaw_stack::store::verify_dir`), whose finding `receipts verify DIR` and `report`
//! print.
//!
//! Memory: the meter holds at most `MAX_BARGE_INS` records and one 32-byte hash per receipt.

use std::path::Path;

use jouleclaw_stack::jcr1::cose::SoftwareSigner;
use jouleclaw_stack::pipeline::{ClosedWindow, TickOutcome};
use jouleclaw_stack::store::DirReport;
use jouleclaw_stack::store::writer::{StagedFile as Staged, check_destination};
use jouleclaw_stack::stream::{StreamSpec, Tick};
use jouleclaw_stop_latency::{self as sl, StopLatencyDocument, StopLatencyMeter};

use crate::Failure;
use crate::out::{say, tell};

/// The file beside the receipts.
pub(crate) const FILE: &str = jouleclaw_stack::store::layout::STOP_LATENCY_CBOR;

/// The meter of a run and the receipts' content hashes, in window order.
pub(crate) struct RunMeter {
    meter: StopLatencyMeter,
    hashes: Vec<[u8; 32]>,
    signer: SoftwareSigner,
}

impl RunMeter {
    /// A meter that signs with a copy of `signer`.
    pub(crate) fn new(signer: &SoftwareSigner) -> Result<Self, Failure> {
        let signer = copy_signer(signer)?;
        Ok(Self {
            meter: StopLatencyMeter::new(),
            hashes: Vec::new(),
            signer,
        })
    }

    /// One pushed tick (`tick` as pushed) and its outcome: the window it closed, the tick, and
    /// the ticks the stages produced from it, in that order.
    pub(crate) fn push(&mut self, p: Pushed<'_>) -> Result<(), Failure> {
        if let Some(w) = &p.outcome.closed {
            self.closed(w);
        }
        let refused = |e: sl::StopLatencyError| Failure::Refused(format!("{}: {e}", e.code()));
        self.meter
            .observe(p.tick, p.outcome.direction)
            .map_err(refused)?;
        for report in &p.outcome.stages {
            for produced in report.result.iter().flatten() {
                if let Some(c) = p.spec.channel(produced.tick.channel_id) {
                    self.meter
                        .observe(&produced.tick, c.direction)
                        .map_err(refused)?;
                }
            }
        }
        Ok(())
    }

    /// A window closed outside a push (the last one).
    pub(crate) fn closed(&mut self, w: &ClosedWindow) {
        self.hashes.push(*w.content_hash.as_bytes());
    }

    /// Ends the stream: signs the document and stages `stop-latency.cbor` in `dir` (renamed
    /// into place by [`Staged::commit`]). Returns the staged file, its BLAKE3, and the document.
    pub(crate) fn finish(
        mut self,
        to: Destination<'_>,
    ) -> Result<(Staged, blake3::Hash, StopLatencyDocument, [u8; 32]), Failure> {
        self.meter.finish();
        let fail = |e: sl::StopLatencyError| Failure::Refused(format!("{FILE}: {}: {e}", e.code()));
        let doc = StopLatencyDocument::new(
            to.steward,
            to.stream_id,
            self.meter.barge_ins(),
            &self.hashes,
        )
        .map_err(fail)?;
        let signed = sl::sign(&self.signer, &doc).map_err(fail)?;
        let (staged, hash, digest) = to.stage(FILE, &signed.cose_sign1)?;
        Ok((staged, hash, doc, digest))
    }
}

/// One line of text about a document: barge-ins, p50, p95, max.
pub(crate) fn describe(doc: &StopLatencyDocument) -> String {
    let late = doc
        .barge_ins
        .iter()
        .filter(|b| !b.within_deadline())
        .count();
    let vantage = match &doc.vantage {
        None => String::new(),
        Some(v) => format!(
            " (times as {}; {})",
            v.point.as_str(),
            match v.excluded_buffer_ns {
                Some(n) => format!("{} buffered after that not included", ms(n)),
                None => "the buffer after that unknown".to_owned(),
            }
        ),
    };
    match doc.summary() {
        None => format!("stop latency: no barge-in{vantage}"),
        Some((p50, p95, max)) => {
            format!(
                "stop latency over {} barge-ins: p50 {}, p95 {}, max {}; {late} past the {} ms deadline",
                doc.barge_ins.len(),
                ms(p50),
                ms(p95),
                ms(max),
                sl::DEADLINE_NS / 1_000_000
            ) + &vantage
        }
    }
}

/// Nanoseconds as milliseconds, exact.
pub(crate) fn ms(ns: u64) -> String {
    let (whole, frac) = (ns / 1_000_000, ns % 1_000_000);
    if frac == 0 {
        format!("{whole} ms")
    } else {
        let f = format!("{frac:06}");
        format!("{whole}.{} ms", f.trim_end_matches('0'))
    }
}

/// A copy of `signer` for a meter that signs its document at the end of the run.
pub(crate) fn copy_signer(signer: &SoftwareSigner) -> Result<SoftwareSigner, Failure> {
    SoftwareSigner::from_key_file_text(&signer.key_file_text())
        .map_err(|e| Failure::Usage(format!("signing key: {e}")))
}

/// One tick pushed through a run's pipeline, as the meters beside it see it.
#[derive(Clone, Copy)]
pub(crate) struct Pushed<'a> {
    /// The tick as pushed.
    pub(crate) tick: &'a Tick,
    /// Its outcome: the window it closed, the tick, and the ticks the stages produced from it,
    /// in that order.
    pub(crate) outcome: &'a TickOutcome,
    /// The stream's channels.
    pub(crate) spec: &'a StreamSpec,
}

/// Where a run's signed documents go, and whose they are.
#[derive(Clone, Copy)]
pub(crate) struct Destination<'a> {
    /// The run directory.
    pub(crate) dir: &'a Path,
    /// The run's input files, which an output must not replace.
    pub(crate) inputs: &'a [&'a Path],
    /// The steward the documents name.
    pub(crate) steward: &'a str,
    /// The stream the documents name.
    pub(crate) stream_id: &'a str,
}

impl Destination<'_> {
    /// Stages the signed document `cose_sign1` as `file` in the run directory (refused when it
    /// would replace an input; renamed into place by [`Staged::commit`]). Returns the staged
    /// file, its BLAKE3, and the document's digest the final seal commits to.
    pub(crate) fn stage(
        &self,
        file: &str,
        cose_sign1: &[u8],
    ) -> Result<(Staged, blake3::Hash, [u8; 32]), Failure> {
        check_destination(&self.dir.join(file), self.inputs)?;
        let mut staged = Staged::create(self.dir, file)?;
        staged.write(cose_sign1)?;
        let hash = staged.finish()?;
        let digest = jouleclaw_stack::seal::document_digest(cose_sign1);
        Ok((staged, hash, digest))
    }
}

/// `receipts verify DIR`'s part for `stop-latency.cbor`: prints the verifier's finding and
/// returns the number of problems.
pub(crate) fn tell_report(report: &DirReport) -> usize {
    tell_finding(
        report,
        FILE,
        report.stop_latency.as_ref().map(describe),
        "absent (no receipt records a barge-in)",
    )
}

/// Prints what the stream verifier found of a signed document of a call (`file`), as
/// `receipts verify DIR` does for every kind: each problem, then, when there is none, the
/// verified document (`described`) or `absent`. Returns the number of problems, named or not.
pub(super) fn tell_finding(
    report: &DirReport,
    file: &str,
    described: Option<String>,
    absent: &str,
) -> usize {
    for p in report.document_problems_of(file) {
        // A problem quotes the receipts' own text (stream ids): shown, never obeyed.
        tell!("{}", crate::out::untrusted(&p.to_string()));
    }
    let problems =
        usize::try_from(super::stream_dir::tell_document_more(report, file)).unwrap_or(usize::MAX);
    match (described, problems == 0) {
        (Some(d), true) => say!("{file}: verified and bound to the receipts; {d}"),
        (None, true) => say!("{file}: {absent}"),
        _ => {}
    }
    problems
}
