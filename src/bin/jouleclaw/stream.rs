//! `receipts verify --pub PUB DIR`: a whole stream, as `jouleclaw run` wrote it, checked for
//! signatures and, when it was sealed, for completeness (spec/STREAM-SEAL.md).
//!
//! Memory: the CBOR files are read one item at a time (each within the COSE item limit); what
//! is kept is one entry per receipt line (its window id, content hash and names, each line at
//! most a receipt's 64 KiB) and the checkpoints, for at most `DEFAULT_MAX_LEAVES` receipts, the
//! most one stream's log holds.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _};
use std::path::Path;

use jouleclaw_stack::jcr1::cose::{self, PublicKey, SingleKey};
use jouleclaw_stack::jcr1::{Jcr1Error, Limits, decode_receipt};
use jouleclaw_stack::seal::{DEFAULT_MAX_LEAVES, ReceiptEntry, SealVerifier, check_stream};

use crate::out::{say, tell};
use crate::receipt::{MAX_NAMED_ITEMS, read_public_key};
use crate::{CmdResult, Failure};

/// One receipt line of `receipts.jsonl`.
struct Line {
    entry: ReceiptEntry,
}

/// Reads `receipts.jsonl`: every line strictly decoded, each at most the receipt limit long.
fn read_lines(path: &Path) -> Result<Vec<Line>, Failure> {
    let file = std::fs::File::open(path).map_err(|e| Failure::io(path, e))?;
    let mut reader = BufReader::new(file);
    let max = Limits::RECEIPT.max_document_bytes as u64;
    let mut out = Vec::new();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut reader)
            .take(max + 2)
            .read_until(b'\n', &mut line)
            .map_err(|e| Failure::io(path, e))?;
        if n == 0 {
            break;
        }
        let index = out.len();
        if index as u64 >= DEFAULT_MAX_LEAVES {
            return Err(Failure::Refused(format!(
                "{}: more than {DEFAULT_MAX_LEAVES} receipts, the most one stream's log holds",
                path.display()
            )));
        }
        if line.last() != Some(&b'\n') {
            return Err(Failure::Refused(format!(
                "{}: line {}: longer than a receipt or without its newline",
                path.display(),
                index + 1
            )));
        }
        line.pop();
        let receipt = decode_receipt(&line).map_err(|r| {
            Failure::Refused(format!(
                "{}: line {}: refused: {} at byte {}",
                path.display(),
                index + 1,
                r.code,
                r.offset
            ))
        })?;
        out.push(Line {
            entry: ReceiptEntry {
                window_id: receipt.window_id,
                content_hash: *blake3::hash(&line).as_bytes(),
                stream_id: receipt.stream_id,
                steward: receipt.steward,
            },
        });
    }
    Ok(out)
}

/// The items of a CBOR sequence file, one at a time, each within the COSE item limit.
fn items(path: &Path) -> Result<cose::SequenceReader<std::fs::File>, Failure> {
    let file = std::fs::File::open(path).map_err(|e| Failure::io(path, e))?;
    Ok(cose::SequenceReader::new(file))
}

fn item_failure(path: &Path, index: usize, e: Jcr1Error) -> Failure {
    match e {
        Jcr1Error::Cose(c) => Failure::Refused(format!(
            "{}: item {index}: {}: {c}; the sequence cannot be read past it",
            path.display(),
            c.as_str()
        )),
        other => Failure::io(path, other),
    }
}

/// `receipts verify --pub PUB DIR`.
pub(crate) fn verify_dir(public: &Path, dir: &Path, require_seals: bool) -> CmdResult {
    let key = read_public_key(public)?;
    let lines = read_lines(&dir.join("receipts.jsonl"))?;
    let mut bad = 0usize;

    // Every window signature: valid, and over one of the receipt lines, in their order.
    let cbor_path = dir.join("receipts.cbor");
    let file = std::fs::File::open(&cbor_path).map_err(|e| Failure::io(&cbor_path, e))?;
    // Where each content hash occurs among the lines, in order: an item is matched to the
    // first such line after the previous match (one lookup per item, never a scan).
    let mut at: HashMap<[u8; 32], Vec<usize>> = HashMap::new();
    for (i, l) in lines.iter().enumerate() {
        at.entry(l.entry.content_hash).or_default().push(i);
    }
    let mut next_line = 0usize;
    let mut named = 0usize;
    let mut name = |msg: String| {
        named += 1;
        if named <= MAX_NAMED_ITEMS {
            tell!("{msg}");
        }
    };
    let signed = cose::verify_sequence(file, &SingleKey::new(key), 64, |i, r| match r {
        Err(c) => {
            bad += 1;
            name(format!("receipts.cbor item {i}: {} ({c})", c.as_str()));
        }
        Ok(v) => {
            let found = at.get(v.content_hash.as_bytes()).and_then(|idx| {
                let k = idx.partition_point(|&j| j < next_line);
                idx.get(k).copied()
            });
            match found {
                Some(j) => next_line = j + 1,
                None => {
                    bad += 1;
                    name(format!(
                        "receipts.cbor item {i}: signs {} which is not a later line of receipts.jsonl",
                        v.receipt.id()
                    ));
                }
            }
        }
    })
    .map_err(|e| match e {
        Jcr1Error::Cose(c) => Failure::Refused(format!(
            "{}: {}: {c}; the sequence cannot be read past it",
            cbor_path.display(),
            c.as_str()
        )),
        other => Failure::io(&cbor_path, other),
    })?;

    if named > MAX_NAMED_ITEMS {
        tell!(
            "... and {} more problems in receipts.cbor (only the first {MAX_NAMED_ITEMS} are named)",
            named - MAX_NAMED_ITEMS
        );
    }
    let seals_path = dir.join("seals.cbor");
    if !seals_path.exists() {
        let summary_says_sealed = std::fs::File::open(dir.join("summary.json"))
            .ok()
            .and_then(|f| {
                let mut text = String::new();
                f.take(1 << 20).read_to_string(&mut text).ok()?;
                serde_json::from_str::<serde_json::Value>(&text).ok()
            })
            .is_some_and(|v| v["signing"]["policy"] == "checkpoint");
        if require_seals || summary_says_sealed {
            bad += 1;
            tell!(
                "no seals.cbor: {}",
                if summary_says_sealed {
                    "summary.json says this run was sealed, so its seals were removed"
                } else {
                    "--require-seals"
                }
            );
        }
        say!(
            "{} receipts, {signed} window signatures verified, {bad} problems; not sealed (no seals.cbor): completeness is not checked",
            lines.len()
        );
        if signed < lines.len() {
            bad += 1;
            tell!(
                "{} receipts have no window signature and there are no seals",
                lines.len() - signed
            );
        }
        return finish(bad);
    }

    let entries: Vec<ReceiptEntry> = lines.iter().map(|l| l.entry.clone()).collect();
    let check = check_seals(key, dir, &entries)?;
    for (k, p) in check.problems.iter().enumerate() {
        bad += 1;
        if k < MAX_NAMED_ITEMS {
            tell!("{p}");
        }
    }
    if check.problems.len() > MAX_NAMED_ITEMS {
        tell!(
            "... and {} more seal problems (only the first {MAX_NAMED_ITEMS} are named)",
            check.problems.len() - MAX_NAMED_ITEMS
        );
    }
    if bad == 0 {
        say!(
            "stream complete: {} receipts, {} checkpoints, final seal over {} receipts; {signed} window signatures and {} inclusion receipts verified",
            lines.len(),
            check.checkpoints,
            check.last_tree_size,
            check.inclusion
        );
    } else {
        say!("stream NOT complete or not verified: {bad} problems");
    }
    finish(bad)
}

fn finish(bad: usize) -> CmdResult {
    if bad == 0 {
        Ok(())
    } else {
        Err(Failure::Refused(format!("{bad} problems")))
    }
}

/// What checking a directory's seals found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SealCheck {
    /// Every problem, one readable line each (empty: the receipts are the whole sealed stream).
    pub(crate) problems: Vec<String>,
    /// Checkpoints that verified.
    pub(crate) checkpoints: usize,
    /// The last verified checkpoint's tree size.
    pub(crate) last_tree_size: u64,
    /// Items in `inclusion.cbor`.
    pub(crate) inclusion: usize,
    /// For each receipt, whether its inclusion receipt (item of the same index) verified.
    pub(crate) included: Vec<bool>,
}

/// Verifies `seals.cbor` and `inclusion.cbor` of `dir` against the receipts `entries` (in
/// `receipts.jsonl` order) and runs the completeness check (spec/STREAM-SEAL.md). Files are
/// read one item at a time.
pub(crate) fn check_seals(
    key: PublicKey,
    dir: &Path,
    entries: &[ReceiptEntry],
) -> Result<SealCheck, Failure> {
    let mut out = SealCheck {
        included: vec![false; entries.len()],
        ..SealCheck::default()
    };
    let seals_path = dir.join("seals.cbor");
    let mut verifier = SealVerifier::new(key);
    let mut checkpoints = Vec::new();
    for (i, item) in items(&seals_path)?.enumerate() {
        let item = item.map_err(|e| item_failure(&seals_path, i, e))?;
        if i > entries.len() {
            return Err(Failure::Refused(format!(
                "{}: more checkpoints than receipts",
                seals_path.display()
            )));
        }
        match verifier.verify_checkpoint(&item) {
            Ok(c) => checkpoints.push(c),
            Err(e) => out
                .problems
                .push(format!("seals.cbor item {i}: {}: {e}", e.code())),
        }
    }
    let inclusion_path = dir.join("inclusion.cbor");
    let inclusion_items = match std::fs::File::open(&inclusion_path) {
        Ok(f) => Some(cose::SequenceReader::new(f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            out.problems
                .push("inclusion.cbor is missing beside seals.cbor".to_owned());
            None
        }
        Err(e) => return Err(Failure::io(&inclusion_path, e)),
    };
    for (i, item) in inclusion_items.into_iter().flatten().enumerate() {
        let item = item.map_err(|e| item_failure(&inclusion_path, i, e))?;
        out.inclusion += 1;
        let Some(entry) = entries.get(i) else {
            continue;
        };
        match verifier.verify_inclusion_receipt(&item, &entry.content_hash) {
            Ok(v) if v.leaf_index == i as u64 => out.included[i] = true,
            Ok(v) => out.problems.push(format!(
                "inclusion.cbor item {i}: proves {}:{:04} at leaf {}, not {i}",
                entry.stream_id, entry.window_id, v.leaf_index
            )),
            Err(e) => out.problems.push(format!(
                "inclusion.cbor item {i}: does not prove {}:{:04}: {}: {e}",
                entry.stream_id,
                entry.window_id,
                e.code()
            )),
        }
    }
    if out.inclusion != entries.len() && inclusion_path.exists() {
        out.problems.push(format!(
            "inclusion.cbor holds {} inclusion receipts for {} receipt lines",
            out.inclusion,
            entries.len()
        ));
    }
    let report = check_stream(entries, &checkpoints);
    out.problems
        .extend(report.problems.iter().map(ToString::to_string));
    out.checkpoints = checkpoints.len();
    out.last_tree_size = checkpoints.last().map_or(0, |c| c.seal.tree_size);
    Ok(out)
}
