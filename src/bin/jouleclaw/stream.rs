//! `receipts verify --pub PUB DIR`: a whole stream, as `jouleclaw run` wrote it, checked for
//! signatures and, when it was sealed, for completeness (spec/STREAM-SEAL.md).

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::Path;

use jouleclaw_stack::jcr1::cose::{self, SingleKey};
use jouleclaw_stack::jcr1::{Limits, decode_receipt};
use jouleclaw_stack::seal::{ReceiptEntry, SealVerifier, check_stream};

use crate::out::{say, tell};
use crate::receipt::read_public_key;
use crate::{CmdResult, Failure};

/// One receipt line of `receipts.jsonl`.
struct Line {
    receipt_id: String,
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
            receipt_id: receipt.id(),
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

fn read_sequence(path: &Path) -> Result<Vec<Vec<u8>>, Failure> {
    let bytes = std::fs::read(path).map_err(|e| Failure::io(path, e))?;
    let items = cose::split_cbor_sequence(&bytes).map_err(|index| {
        Failure::Refused(format!(
            "{}: item {index}: not well-formed CBOR; the sequence cannot be split past it",
            path.display()
        ))
    })?;
    Ok(items.into_iter().map(<[u8]>::to_vec).collect())
}

/// `receipts verify --pub PUB DIR`.
pub(crate) fn verify_dir(public: &Path, dir: &Path) -> CmdResult {
    let key = read_public_key(public)?;
    let lines = read_lines(&dir.join("receipts.jsonl"))?;
    let mut bad = 0usize;

    // Every window signature: valid, and over one of the receipt lines, in their order.
    let items = read_sequence(&dir.join("receipts.cbor"))?;
    let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
    let mut next_line = 0usize;
    for (i, r) in cose::verify_batch(&refs, &SingleKey::new(key))
        .into_iter()
        .enumerate()
    {
        match r {
            Err(c) => {
                bad += 1;
                tell!("receipts.cbor item {i}: {} ({c})", c.as_str());
            }
            Ok(v) => {
                let hash = *v.content_hash.as_bytes();
                match lines[next_line..]
                    .iter()
                    .position(|l| l.entry.content_hash == hash)
                {
                    Some(k) => next_line += k + 1,
                    None => {
                        bad += 1;
                        tell!(
                            "receipts.cbor item {i}: signs {} which is not a later line of receipts.jsonl",
                            v.receipt.id()
                        );
                    }
                }
            }
        }
    }
    let signed = items.len();

    let seals_path = dir.join("seals.cbor");
    if !seals_path.exists() {
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

    let mut verifier = SealVerifier::new(key);
    let mut checkpoints = Vec::new();
    for (i, item) in read_sequence(&seals_path)?.iter().enumerate() {
        match verifier.verify_checkpoint(item) {
            Ok(c) => checkpoints.push(c),
            Err(e) => {
                bad += 1;
                tell!("seals.cbor item {i}: {}: {e}", e.code());
            }
        }
    }
    let inclusion = read_sequence(&dir.join("inclusion.cbor"))?;
    if inclusion.len() == lines.len() {
        for (i, (item, line)) in inclusion.iter().zip(&lines).enumerate() {
            match verifier.verify_inclusion_receipt(item, &line.entry.content_hash) {
                Ok(v) if v.leaf_index == i as u64 => {}
                Ok(v) => {
                    bad += 1;
                    tell!(
                        "inclusion.cbor item {i}: proves {} at leaf {}, not {i}",
                        line.receipt_id,
                        v.leaf_index
                    );
                }
                Err(e) => {
                    bad += 1;
                    tell!(
                        "inclusion.cbor item {i}: does not prove {}: {}: {e}",
                        line.receipt_id,
                        e.code()
                    );
                }
            }
        }
    } else {
        bad += 1;
        tell!(
            "inclusion.cbor holds {} inclusion receipts for {} receipt lines",
            inclusion.len(),
            lines.len()
        );
    }

    let entries: Vec<ReceiptEntry> = lines.iter().map(|l| l.entry.clone()).collect();
    let report = check_stream(&entries, &checkpoints);
    for p in &report.problems {
        bad += 1;
        tell!("{p}");
    }
    if report.is_complete() && bad == 0 {
        let last = checkpoints.last().map(|c| c.seal.tree_size).unwrap_or(0);
        say!(
            "stream complete: {} receipts, {} checkpoints, final seal over {last} receipts; {signed} window signatures and {} inclusion receipts verified",
            lines.len(),
            checkpoints.len(),
            inclusion.len()
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
