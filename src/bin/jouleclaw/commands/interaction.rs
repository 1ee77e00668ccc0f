//! `interaction-metrics.cbor` (spec/INTERACTION-METRICS-V1.md): measured beside the pipeline
//! by `jouleclaw run` (and `import tau-voice`), verified and bound to the receipts by the
//! stream verifier (`jouleclaw_stack::store::verify_dir`), and `jouleclaw metrics interaction
//! DIR...`: every call directory verified, then τ-voice's panel over them.
//!
//! Memory: the meter holds 9 bytes per 200 ms frame (at most `MAX_FRAMES`) and one 32-byte
//! hash per receipt.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use jouleclaw_interaction::{
    self as im, InteractionConfig, InteractionDocument, PanelBuilder, PipelineMeter,
};
use jouleclaw_stack::jcr1::cose::SoftwareSigner;
use jouleclaw_stack::pipeline::ClosedWindow;
use jouleclaw_stack::store::writer::StagedFile as Staged;
use jouleclaw_stack::store::{DirReport, Outcome, verify_dir as verify_stream_dir};

use super::stop_latency::{Destination, Pushed, copy_signer, tell_finding};
use crate::keys::{read_public_key, valid_key};
use crate::out::{say, say_raw, tell};
use crate::present::panel::{num, table};
use crate::{CmdResult, Failure};

/// The file beside the receipts.
pub(crate) const FILE: &str = jouleclaw_stack::store::layout::INTERACTION_METRICS_CBOR;

/// The meter of a run beside its pipeline, and the key it signs with.
pub(crate) struct RunMeter {
    meter: PipelineMeter,
    signer: SoftwareSigner,
}

fn refused(e: im::InteractionError) -> Failure {
    Failure::Refused(format!("{FILE}: {}: {e}", e.code()))
}

impl RunMeter {
    /// A meter with τ-voice's default windows that signs with a copy of `signer`.
    pub(crate) fn new(signer: &SoftwareSigner) -> Result<Self, Failure> {
        let signer = copy_signer(signer)?;
        Ok(Self {
            meter: PipelineMeter::new(InteractionConfig::default()).map_err(refused)?,
            signer,
        })
    }

    /// One pushed tick and its outcome: the window it closed, the tick, and the ticks the
    /// stages produced from it, in that order.
    pub(crate) fn push(&mut self, p: Pushed<'_>) -> Result<(), Failure> {
        self.meter.push(p.tick, p.outcome, p.spec).map_err(refused)
    }

    /// A window closed outside a push (the last one).
    pub(crate) fn closed(&mut self, w: &ClosedWindow) {
        self.meter.closed(w);
    }

    /// Ends the stream: signs the document and stages `interaction-metrics.cbor` in `dir`
    /// (renamed into place by [`Staged::commit`]). Returns the staged file, its BLAKE3, and
    /// the document.
    pub(crate) fn finish(
        mut self,
        to: Destination<'_>,
    ) -> Result<(Staged, blake3::Hash, InteractionDocument, [u8; 32]), Failure> {
        let signed = self
            .meter
            .finish_signed(&self.signer, to.steward, to.stream_id)
            .map_err(refused)?;
        let (staged, hash, digest) = to.stage(FILE, &signed.cose_sign1)?;
        Ok((staged, hash, signed.document, digest))
    }
}

/// One line of text about a document's panel.
pub(crate) fn describe(doc: &InteractionDocument) -> String {
    let p = doc.panel();
    format!(
        "interaction: {} events; L_R {} s, L_Y {} s, R_R {}, R_Y {} (at 150 ms {}), I_A {}, S_BC {}, S_VT {}, S_ND {}",
        doc.events.len(),
        num(p.response_latency_mean, 3),
        num(p.yield_latency_mean, 3),
        num(p.response_rate, 3),
        num(p.yield_rate, 3),
        num(p.yield_rate_deadline, 3),
        num(p.agent_interruption_rate, 3),
        num(p.selectivity_backchannel, 3),
        num(p.selectivity_vocal_tic, 3),
        num(p.selectivity_non_directed, 3),
    )
}

/// `receipts verify DIR`'s part for `interaction-metrics.cbor`: prints the verifier's finding
/// and returns the number of problems.
pub(crate) fn tell_report(report: &DirReport) -> usize {
    tell_finding(
        report,
        FILE,
        report.interaction.as_ref().map(describe),
        "absent",
    )
}

/// `jouleclaw metrics ...`.
#[derive(Subcommand, Debug)]
pub(crate) enum MetricsCmd {
    /// τ-voice's interaction panel over call directories (each verified first; one that does
    /// not verify is refused, never counted), aggregated as τ-voice aggregates one domain.
    Interaction(InteractionArgs),
}

/// Arguments of `jouleclaw metrics interaction`.
#[derive(Args, Debug)]
pub(crate) struct InteractionArgs {
    /// Call directories (as `jouleclaw run` or `jouleclaw import tau-voice` writes them), in
    /// the order their events are concatenated.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// The steward's public key file (default: each directory's own signer.pub, which proves
    /// only that the directory is consistent with itself; the output says so).
    #[arg(long = "pub", value_name = "PUB")]
    public: Option<PathBuf>,
    /// Count calls that are not sealed (their completeness cannot be checked).
    #[arg(long)]
    allow_unsealed: bool,
    /// Print the panel as JSON (τ-voice's `interaction_metrics` block and the substrate's
    /// additions).
    #[arg(long)]
    json: bool,
}

/// `jouleclaw metrics <cmd>`.
pub(crate) fn metrics(cmd: &MetricsCmd) -> CmdResult {
    match cmd {
        MetricsCmd::Interaction(args) => interaction(args),
    }
}

fn interaction(args: &InteractionArgs) -> CmdResult {
    let mut docs = Vec::with_capacity(args.dirs.len());
    let mut refused = 0usize;
    for dir in &args.dirs {
        if !dir.is_dir() {
            return Err(Failure::Usage(format!(
                "{}: not a directory",
                dir.display()
            )));
        }
        let key =
            valid_key(&read_public_key(&args.public.clone().unwrap_or_else(
                || dir.join(jouleclaw_stack::store::layout::SIGNER_PUB),
            ))?)?;
        let mut report = verify_stream_dir(dir, &key, &mut |_, _| {})?;
        let mut problems: Vec<String> = report.problems.iter().map(|p| p.to_string()).collect();
        match report.receipts_outcome() {
            Outcome::Complete => {}
            Outcome::Unsealed if args.allow_unsealed => {}
            Outcome::Unsealed => problems.push("not sealed: completeness unknown".to_owned()),
            Outcome::Failed => problems.push(format!("{} problems", report.problem_count)),
        }
        // The signed documents' own problems: stop-latency.cbor's, then this file's.
        problems.extend(report.document_problems.iter().map(|p| p.to_string()));
        let unnamed = report
            .document_problem_count()
            .saturating_sub(report.document_problems.len() as u64);
        if unnamed > 0 {
            problems.push(format!(
                "... and {unnamed} more problems of the signed documents (only the first {} of each are named)",
                jouleclaw_stack::store::MAX_NAMED_PROBLEMS
            ));
        }
        match report.interaction.take() {
            Some(doc) if problems.is_empty() => docs.push(doc),
            None if problems.is_empty() => {
                problems.push(format!("{FILE}: absent: the call has no interaction panel"));
            }
            _ => {}
        }
        if !problems.is_empty() {
            refused += 1;
            for p in &problems {
                tell!("{}: {}", dir.display(), crate::out::untrusted(p));
            }
        }
    }
    if refused > 0 {
        return Err(Failure::Refused(format!(
            "{refused} of {} call directories do not verify: no panel",
            args.dirs.len()
        )));
    }
    // One call counted twice would weigh twice: refused.
    let mut seen = std::collections::BTreeSet::new();
    for (doc, dir) in docs.iter().zip(&args.dirs) {
        if !seen.insert((doc.steward.as_str(), doc.stream_id.as_str())) {
            return Err(Failure::Refused(format!(
                "{}: call {} of {} given twice: no panel",
                dir.display(),
                crate::out::untrusted(&doc.stream_id),
                crate::out::untrusted(&doc.steward)
            )));
        }
    }
    let config = docs
        .first()
        .map_or_else(InteractionConfig::default, |d| d.config);
    let mut panel = PanelBuilder::new(config);
    for (doc, dir) in docs.iter().zip(&args.dirs) {
        panel
            .add(&doc.config, &doc.events)
            .map_err(|e| Failure::Refused(format!("{}: {}: {e}", dir.display(), e.code())))?;
    }
    let panel = panel.panel();
    if args.public.is_none() {
        tell!(
            "note: each directory verified under its own signer.pub (--pub PUB names the steward's key)"
        );
    }
    if args.json {
        let text = serde_json::to_string_pretty(&panel.to_json())
            .map_err(|e| Failure::Usage(format!("json: {e}")))?;
        say!("{text}");
    } else {
        say_raw!("{}", table(&panel));
    }
    Ok(())
}
