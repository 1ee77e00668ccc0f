//! The commit stage of `jouleclaw run`: the staged files renamed into place, summary.json last
//! (its presence marks a complete run); then what the run wrote is told, and the call
//! registered with --registry.

use super::finish::Finished;
use super::{RunArgs, inputs};
use crate::CmdResult;
use crate::commands::{interaction, registry, stop_latency};
use crate::out::{say, say_raw, tell};

/// The commit stage: the store's run writer checks every destination again, then renames each
/// staged file into place (the call's documents before summary.json, written last: its presence
/// marks a complete run); an output this run does not write (seals, inclusion receipts, a
/// registry proof of an earlier run) is removed.
pub(super) fn commit(args: &RunArgs, finished: &mut Finished) -> CmdResult {
    let inputs = inputs(args);
    // A proof of an earlier run's call in this directory would not be this call's.
    finished
        .files
        .commit(&finished.summary, &inputs, &[registry::PROOF_FILE])?;
    Ok(())
}

/// What the committed run holds: its documents, totals and files.
pub(super) fn tell_written(args: &RunArgs, finished: &Finished) {
    let sealing = args.seal_every.is_some();
    say!("{}", stop_latency::describe(&finished.stop_latency_doc));
    say!("{}", interaction::describe(&finished.interaction_doc));

    if !args.quiet {
        say!();
        say_raw!("{}", finished.totals.render_text());
    }
    say!(
        "wrote {} receipts to {} ({})",
        finished.totals.windows,
        args.out.display(),
        if sealing && args.inclusion_file {
            "receipts.jsonl, receipts.cbor, seals.cbor, inclusion.cbor, stop-latency.cbor, interaction-metrics.cbor, signer.pub, summary.json"
        } else if sealing {
            "receipts.jsonl, receipts.cbor, seals.cbor, stop-latency.cbor, interaction-metrics.cbor, signer.pub, summary.json; layout stream-at-rest/2: inclusion receipts are derived from seals.cbor (jouleclaw receipts inclusion DIR --window N)"
        } else {
            "receipts.jsonl, receipts.cbor, stop-latency.cbor, interaction-metrics.cbor, signer.pub, summary.json"
        }
    );
    if !sealing {
        tell!(
            "note: not sealed (no --seal-every): verifiers will report completeness as unknown \
             and refuse the directory unless told --allow-unsealed"
        );
    }
    if finished.test_key {
        tell!("WARNING: these receipts are signed with the published RFC 8032 test key.");
    }
}

/// With --registry: the committed call registered. The run directory is whole and its receipts
/// verify whatever happens here; a failed registration is reported with its code and fails the
/// command.
pub(super) fn register(args: &RunArgs, finished: &mut Finished) -> CmdResult {
    if let Some(registry) = finished.registry.as_mut() {
        registry.register_run(finished.out.path()).map_err(|e| {
            e.into_failure(&format!(
                "the run directory {} is written and its receipts verify, but the call's \
                 registration failed: ",
                args.out.display()
            ))
        })?;
    }
    Ok(())
}
