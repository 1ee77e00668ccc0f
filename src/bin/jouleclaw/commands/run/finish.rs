//! The finish stage of `jouleclaw run`: the stream's end (the last window, the call's signed
//! documents, the final seal), every staged file completed and summary.json written beside
//! them, still staged.

use std::collections::BTreeMap;

use jouleclaw_interaction::InteractionDocument;
use jouleclaw_stack::jcr1::UtcSecond;
use jouleclaw_stack::jcr1::cose;
use jouleclaw_stack::store::layout;
use jouleclaw_stack::store::writer::{LockedDir, RunWriter};
use jouleclaw_stack::store::{
    ConservationCounts, LlmSchemaFacts, RunSummary, SignerFacts, SigningFacts, VerdictCounts,
};
use jouleclaw_stop_latency::StopLatencyDocument;

use super::drive::at_line;
use super::open::Run;
use super::{RunArgs, WindowSignaturesArg, inputs};
use crate::Failure;
use crate::commands::registry::Appender;
use crate::commands::stop_latency::Destination;
use crate::commands::{interaction, stop_latency};
use crate::present::table::RunTotals;

/// A run finished: every output staged and complete, none renamed into place yet.
pub(super) struct Finished {
    pub(super) out: LockedDir,
    pub(super) files: RunWriter,
    /// summary.json's document, written last by the commit.
    pub(super) summary: RunSummary,
    pub(super) stop_latency_doc: StopLatencyDocument,
    pub(super) interaction_doc: InteractionDocument,
    pub(super) totals: RunTotals,
    pub(super) test_key: bool,
    pub(super) registry: Option<Appender>,
}

/// The facts of the run that summary.json states beside the totals.
struct Facts {
    spec_name: String,
    stream_id: String,
    test_key: bool,
    epoch_unix: i64,
    public: cose::PublicKey,
    grammar_digest: Option<String>,
    oracle_names: Vec<String>,
    stage_names: Vec<&'static str>,
    checkpoints: u64,
}

/// The finish stage: closes the last window, signs the call's documents (stop latency,
/// interaction metrics) and the final seal that commits to them, then completes every staged
/// file and writes summary.json.
pub(super) fn finish(args: &RunArgs, mut run: Run) -> Result<Finished, Failure> {
    let trace = &args.trace;
    // The last window first: the call's documents bind to every receipt, and the final seal
    // (stream-seal/2) commits to the documents, so they are signed between the two.
    let last = run
        .pipeline
        .end_windows()
        .map_err(|e| at_line(trace, run.line_no, &e))?;
    if let Some(w) = &last {
        run.stop_latency.closed(w);
        run.interaction.closed(w);
    }
    if let Some(w) = last {
        run.sink.window(w)?;
    }
    if run.sink.totals.windows == 0 {
        return Err(Failure::Refused(format!(
            "{}: trace_empty: the trace holds no ticks",
            trace.display()
        )));
    }
    let inputs = inputs(args);
    let to = Destination {
        dir: run.out.path(),
        inputs: &inputs,
        steward: &args.steward,
        stream_id: &run.stream_id,
    };
    let (stop_latency_file, _, stop_latency_doc, stop_latency_digest) =
        run.stop_latency.finish(to)?;
    // interaction-metrics.cbor (spec/INTERACTION-METRICS-V1.md), signed beside the stop
    // latency and committed by the final seal with it.
    let (interaction_file, _, interaction_doc, interaction_digest) = run.interaction.finish(to)?;
    let documents = [
        (stop_latency_doc.schema_id().to_owned(), stop_latency_digest),
        (
            jouleclaw_interaction::INTERACTION_SCHEMA.to_owned(),
            interaction_digest,
        ),
    ]
    .into_iter()
    .collect();
    let finished = run
        .pipeline
        .finish_with_documents(documents)
        .map_err(|e| at_line(trace, run.line_no, &e))?;
    if let Some(w) = finished.last {
        // end_windows closed it; nothing can open another before finish.
        run.sink.window(w)?;
    }
    if let Some(batch) = &finished.seal {
        run.sink.seal(batch)?;
    }
    run.sink.progress.finish_and_clear();
    let mut files = run.sink.files;
    files.write(
        layout::SIGNER_PUB,
        cose::public_key_text(&run.public).as_bytes(),
    )?;
    files.adopt(stop_latency::FILE, stop_latency_file)?;
    files.adopt(interaction::FILE, interaction_file)?;
    let outputs = files.finish()?;
    let facts = Facts {
        spec_name: run.spec_name,
        stream_id: run.stream_id,
        test_key: run.test_key,
        epoch_unix: run.epoch_unix,
        public: run.public,
        grammar_digest: run.grammar.map(|g| g.digest().to_hex().to_string()),
        oracle_names: run.oracle_names,
        stage_names: run.stage_names,
        checkpoints: run.sink.checkpoints,
    };
    let summary = summary(args, facts, &run.sink.totals, outputs);
    Ok(Finished {
        out: run.out,
        files,
        summary,
        stop_latency_doc,
        interaction_doc,
        totals: run.sink.totals,
        test_key: run.test_key,
        registry: run.registry,
    })
}

/// summary.json's document.
fn summary(
    args: &RunArgs,
    facts: Facts,
    totals: &RunTotals,
    outputs: BTreeMap<String, String>,
) -> RunSummary {
    let [pass, need_more, yields, fail] = totals.verdicts;
    let [conforming, hallucination, barge_in_ignored] = totals.conservation;
    RunSummary {
        conservation: ConservationCounts {
            barge_in_ignored,
            conforming,
            hallucination,
        },
        early_verdicts: totals.early_verdicts,
        empty_windows: totals.empty_windows(),
        epoch: UtcSecond::from_unix(facts.epoch_unix).map(|t| t.to_string()),
        first_window: totals.window_range.map(|r| r.0),
        inbound_bytes: totals.inbound_bytes,
        last_window: totals.window_range.map(|r| r.1),
        layout: Some(layout::LAYOUT_V2.to_owned()),
        llm_schema: facts
            .grammar_digest
            .zip(args.llm_schema.as_ref().or(args.llm_tools.as_ref()))
            .map(|(grammar_digest, p)| LlmSchemaFacts {
                file: p.display().to_string(),
                grammar_digest,
            }),
        oracle: facts.oracle_names,
        outbound_bytes: totals.outbound_bytes,
        outputs,
        receipts: totals.windows,
        signer: SignerFacts {
            kid: hex::encode(cose::kid(&facts.public)),
            public_key: hex::encode(facts.public.as_bytes()),
            test_key: facts.test_key,
        },
        signing: signing_facts(args, facts.checkpoints),
        spec: facts.spec_name,
        stages: facts.stage_names.iter().map(|s| (*s).to_owned()).collect(),
        steward: args.steward.clone(),
        stream_id: facts.stream_id,
        substrate_bytes: totals.substrate_bytes,
        ticks: totals.ticks,
        trace: args.trace.display().to_string(),
        verdicts: VerdictCounts {
            fail,
            need_more,
            pass,
            yields,
        },
    }
}

/// summary.json's `signing`: every window signed, or checkpoints every K windows.
fn signing_facts(args: &RunArgs, checkpoints: u64) -> SigningFacts {
    match args.seal_every {
        None => SigningFacts {
            checkpoints: None,
            every_windows: None,
            policy: "every_window".to_owned(),
            window_signatures: None,
        },
        Some(k) => SigningFacts {
            checkpoints: Some(checkpoints),
            every_windows: Some(k),
            policy: "checkpoint".to_owned(),
            window_signatures: Some(
                match args.window_signatures {
                    WindowSignaturesArg::All => "all",
                    WindowSignaturesArg::NonPass => "non_pass",
                    WindowSignaturesArg::None => "none",
                }
                .to_owned(),
            ),
        },
    }
}
