//! The binding to the stream: a verified document checked against the window receipts.

use std::collections::{BTreeSet, HashMap};

use jouleclaw_jcr1::StreamWindowReceipt;
use jouleclaw_stream_oracle::WindowVerdict;

use crate::document::{StopLatencyDocument, receipts_root};

/// Every binding problem code, in the order [`check_receipts`] looks for them.
pub const BINDING_CODES: &[&str] = &[
    "stream_mismatch",
    "window_count_mismatch",
    "root_mismatch",
    "barge_in_window_missing",
    "barge_in_not_yielded",
    "yield_unlisted",
    "stop_latency_missing",
];

/// One way a document and the receipts disagree.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BindingProblem {
    /// A code of [`BINDING_CODES`].
    pub code: &'static str,
    /// A readable sentence.
    pub detail: String,
}

impl core::fmt::Display for BindingProblem {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}: {}", self.code, self.detail)
    }
}

/// `true` when the receipts need a stop-latency document: one of them records a barge-in
/// (a `yield` verdict). Without the document such a stream is refused
/// (`stop_latency_missing`).
pub fn required(receipts: &[StreamWindowReceipt]) -> bool {
    receipts
        .iter()
        .any(|r| matches!(r.verdict, WindowVerdict::Yield { .. }))
}

/// The problem of a stream whose receipts record a barge-in and which has no document.
pub fn missing(receipts: &[StreamWindowReceipt]) -> Option<BindingProblem> {
    let w = receipts.iter().find_map(|r| match r.verdict {
        WindowVerdict::Yield { .. } => Some(r.window_id),
        _ => None,
    })?;
    Some(BindingProblem {
        code: "stop_latency_missing",
        detail: format!(
            "window {w} records a barge-in (yield) and there is no stop-latency document"
        ),
    })
}

/// Checks a verified document against the stream's receipts, in window order, with their
/// BLAKE3 content hashes (`spec/STOP-LATENCY-V1.md` section 7). Empty: bound.
pub fn check_receipts(
    doc: &StopLatencyDocument,
    receipts: &[(StreamWindowReceipt, [u8; 32])],
) -> Vec<BindingProblem> {
    let mut out = Vec::new();
    let mut p = |code: &'static str, detail: String| out.push(BindingProblem { code, detail });
    if let Some((r, _)) = receipts
        .iter()
        .find(|(r, _)| r.steward != doc.steward || r.stream_id != doc.stream_id)
    {
        p(
            "stream_mismatch",
            format!(
                "the document is for {}/{}, receipt {} is not",
                doc.steward,
                doc.stream_id,
                r.id()
            ),
        );
    }
    if doc.window_count != receipts.len() as u64 {
        p(
            "window_count_mismatch",
            format!(
                "the document counts {} window receipts, there are {}",
                doc.window_count,
                receipts.len()
            ),
        );
    }
    let hashes: Vec<[u8; 32]> = receipts.iter().map(|(_, h)| *h).collect();
    match receipts_root(&hashes) {
        Ok(root) if root == doc.receipts_root => {}
        _ => p(
            "root_mismatch",
            format!(
                "the document's receipts_root {} is not the root over the {} receipts",
                hex::encode(doc.receipts_root),
                receipts.len()
            ),
        ),
    }
    let by_window: HashMap<u64, &StreamWindowReceipt> =
        receipts.iter().map(|(r, _)| (r.window_id, r)).collect();
    let listed: BTreeSet<u64> = doc.barge_ins.iter().map(|b| b.window_id).collect();
    for &w in &listed {
        match by_window.get(&w) {
            None => p(
                "barge_in_window_missing",
                format!("a barge-in is listed in window {w}, which has no receipt"),
            ),
            Some(r) => match r.verdict {
                WindowVerdict::Yield { seen_at } if seen_at == w => {}
                WindowVerdict::Fail { .. } => {}
                ref v => p(
                    "barge_in_not_yielded",
                    format!(
                        "a barge-in is listed in window {w}, whose receipt's verdict is {}",
                        v.kind_str()
                    ),
                ),
            },
        }
    }
    for (r, _) in receipts {
        if let WindowVerdict::Yield { .. } = r.verdict
            && !listed.contains(&r.window_id)
        {
            p(
                "yield_unlisted",
                format!(
                    "window {} records a barge-in (yield) the document does not list",
                    r.window_id
                ),
            );
        }
    }
    out
}
