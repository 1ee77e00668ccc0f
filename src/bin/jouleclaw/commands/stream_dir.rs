//! `receipts verify --pub PUB DIR`: a stream directory checked by the one verifier of the
//! stream at rest (`jouleclaw_stack::store::verify_dir`, spec/STREAM-AT-REST.md), its typed
//! report printed; `receipts inclusion DIR --window N`: one window's derived inclusion receipt.

use std::path::Path;

use jouleclaw_stack::store::layout::{COMMIT_ORDER, DOCUMENT_FILES};
use jouleclaw_stack::store::writer::write_output;
use jouleclaw_stack::store::{
    DirReport, MAX_NAMED_PROBLEMS, Outcome, derive_inclusion_receipt, verify_dir,
};

use crate::keys::{read_public_key, valid_key};
use crate::out::{say, tell};
use crate::{CmdResult, Failure};

/// Names the report's problems on standard error (at most [`MAX_NAMED_PROBLEMS`], the rest
/// counted).
pub(crate) fn tell_problems(report: &DirReport) {
    for p in &report.problems {
        tell!("{p}");
    }
    let named = report.problems.len() as u64;
    if report.problem_count > named {
        tell!(
            "... and {} more problems (only the first {MAX_NAMED_PROBLEMS} are named)",
            report.problem_count - named
        );
    }
}

/// Says how many findings of the signed document `file` are not named (the verifier names the
/// first [`MAX_NAMED_PROBLEMS`] of each document), if any; returns every finding's count.
pub(crate) fn tell_document_more(report: &DirReport, file: &str) -> u64 {
    let named = report.document_problems_of(file).count() as u64;
    let all = report.document_problem_count_of(file);
    if all > named {
        tell!(
            "... and {} more {file} problems (only the first {MAX_NAMED_PROBLEMS} are named)",
            all - named
        );
    }
    all
}

/// The one line that says what the report means for the receipts and their seals (the
/// signed documents' own problems are told beside it).
pub(crate) fn verdict_line(report: &DirReport) -> String {
    match report.receipts_outcome() {
        Outcome::Complete => format!(
            "stream complete: {} receipts, {} checkpoints, final seal over {} receipts; {} window \
             signatures and {} inclusion receipts verified{}",
            report.receipts.len(),
            report.checkpoints,
            report.final_tree_size,
            report.window_signatures,
            report.inclusion_receipts,
            if report.inclusion_derived {
                " (derived from seals.cbor: no inclusion.cbor, layout stream-at-rest/2)"
            } else {
                ""
            }
        ),
        Outcome::Unsealed => format!(
            "{} receipts, {} window signatures verified; NOT SEALED: COMPLETENESS UNKNOWN (no \
             seals.cbor or inclusion.cbor: nothing signed says which windows the stream had, so \
             a dropped receipt cannot be told from an empty window)",
            report.receipts.len(),
            report.window_signatures
        ),
        Outcome::Failed => format!(
            "stream NOT verified{}: {} problems",
            if report.sealed {
                " or NOT complete"
            } else {
                ""
            },
            report.problem_count
        ),
    }
}

/// Exit status of a report's receipts and seals: 0 complete (or unsealed and
/// `allow_unsealed`), else 1 (the signed documents' own problems are refused before).
pub(crate) fn outcome_result(report: &DirReport, allow_unsealed: bool) -> CmdResult {
    match report.receipts_outcome() {
        Outcome::Complete => Ok(()),
        Outcome::Unsealed if allow_unsealed => Ok(()),
        Outcome::Unsealed => Err(Failure::Refused(
            "not sealed: completeness unknown (--allow-unsealed accepts a stream whose \
             completeness cannot be checked)"
                .to_owned(),
        )),
        Outcome::Failed => Err(Failure::Refused(format!(
            "{} problems",
            report.problem_count
        ))),
    }
}

/// `receipts verify --pub PUB DIR [--allow-unsealed]`.
pub(crate) fn verify(public: &Path, dir: &Path, allow_unsealed: bool) -> CmdResult {
    let key = valid_key(&read_public_key(public)?)?;
    let report = verify_dir(dir, &key, &mut |_, _| {})?;
    tell_problems(&report);
    // stop-latency.cbor (spec/STOP-LATENCY-V1.md): signature and binding to the receipts.
    let stop_latency_problems = crate::commands::stop_latency::tell_report(&report);
    // interaction-metrics.cbor (spec/INTERACTION-METRICS-V1.md): signature and binding.
    let interaction_problems = crate::commands::interaction::tell_report(&report);
    if let Some(line) = documents_line(&report, dir) {
        say!("{line}");
    }
    say!("{}", verdict_line(&report));
    if stop_latency_problems > 0 {
        return Err(Failure::Refused(format!(
            "{}: {stop_latency_problems} problems",
            crate::commands::stop_latency::FILE
        )));
    }
    if interaction_problems > 0 {
        return Err(Failure::Refused(format!(
            "{}: {interaction_problems} problems",
            crate::commands::interaction::FILE
        )));
    }
    outcome_result(&report, allow_unsealed)
}

/// Whether the call's documents are inside its seal: the kinds a `stream-seal/2` final seal
/// commits to, or, for a run sealed before that version, that its stop latency is not sealed.
pub(crate) fn documents_line(report: &DirReport, dir: &Path) -> Option<String> {
    if !report.sealed
        || report.final_tree_size == 0
        || report
            .problems
            .iter()
            .any(|p| p.code.starts_with("document_"))
    {
        return None;
    }
    match &report.sealed_documents {
        Some(docs) if docs.is_empty() => {
            Some("documents: the final seal (stream-seal/2) states the call has none".to_owned())
        }
        Some(docs) => Some(format!(
            "documents sealed by the final seal (stream-seal/2): {}",
            docs.keys().cloned().collect::<Vec<_>>().join(", ")
        )),
        None => dir
            .join(crate::commands::stop_latency::FILE)
            .exists()
            .then(|| "stop latency not sealed (stream-seal/1 final seal): a run made before stream-seal/2; its document is checked against the receipts only".to_owned()),
    }
}

/// `receipts inclusion DIR --window N [--pub PUBFILE] [--out FILE]`: one window's RFC 9942
/// inclusion receipt, derived from the directory's seals.cbor and receipts.jsonl and verified
/// (spec/STREAM-AT-REST.md section 5.6). The window without a receipt, not sealed, or a
/// receipt that cannot be derived: exit 1 with its code; the bytes go to FILE (created new,
/// then renamed, never over one of the directory's files or the key file) or standard output.
pub(crate) fn export_inclusion(
    dir: &Path,
    window: u64,
    public: Option<&Path>,
    out: Option<&Path>,
) -> CmdResult {
    let key = valid_key(&match public {
        Some(p) => read_public_key(p)?,
        None => crate::commands::report::read_dir_key(dir)?,
    })?;
    // A refusal names the directory; an I/O error names its file already.
    let derived =
        derive_inclusion_receipt(dir, &key, window).map_err(|e| match Failure::from(e) {
            Failure::Refused(msg) => Failure::Refused(format!("{}: {msg}", dir.display())),
            usage => usage,
        })?;
    match out {
        Some(out) => {
            // Every file of the stream directory is an input, whether or not it was read.
            let names: Vec<std::path::PathBuf> = COMMIT_ORDER
                .iter()
                .chain(DOCUMENT_FILES.iter().map(|(name, _)| name))
                .map(|name| dir.join(name))
                .collect();
            let mut inputs: Vec<&Path> = names.iter().map(|p| p.as_path()).collect();
            inputs.extend(public);
            write_output(out, &derived.receipt, &inputs)?;
            say!(
                "window {} (line {} of receipts.jsonl, content hash {}): inclusion receipt under \
                 checkpoint {} of seals.cbor (tree size {}), {} bytes, written to {}",
                derived.window_id,
                derived.leaf_index + 1,
                hex::encode(derived.content_hash),
                derived.checkpoint_index,
                derived.tree_size,
                derived.receipt.len(),
                out.display()
            );
        }
        None => crate::out::out_bytes(&derived.receipt),
    }
    Ok(())
}
