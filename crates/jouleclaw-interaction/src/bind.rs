//! The binding to the stream: a verified document checked against the window receipts.

use std::collections::HashSet;

use crate::document::InteractionDocument;

/// Every binding problem code, in the order [`check_receipts`] looks for them, then
/// [`missing`]'s.
pub const BINDING_CODES: &[&str] = &[
    "stream_mismatch",
    "window_count_mismatch",
    "root_mismatch",
    "event_window_missing",
    "interaction_metrics_missing",
];

pub use jouleclaw_seal::call_document::BindingProblem;
use jouleclaw_seal::call_document::{BoundDocument, ReceiptFacts, StreamBinding};
/// Checks a verified document against the stream's receipts, in window order, with their
/// BLAKE3 content hashes (`spec/INTERACTION-METRICS-V1.md` section 7): the stream, the window count and the
/// root, then the kind's own checks. Empty: bound. With the receipts' root already known
/// (a caller that verified a seal over these receipts holds it): `check_receipts_under_root`;
/// over what the checks read of the receipts (`jouleclaw_seal::call_document::BoundReceipts`,
/// a few bytes a receipt): `check_bound_under_root`.
pub use jouleclaw_seal::call_document::{
    check_bound_under_root, check_receipts, check_receipts_under_root,
};

/// The problem of a stream that should have a document and has none: `listed` is whether the
/// run's `summary.json` lists `interaction-metrics.cbor` (a run that measured speech writes
/// it and lists it).
pub fn missing(listed: bool) -> Option<BindingProblem> {
    listed.then(|| BindingProblem {
        code: "interaction_metrics_missing",
        detail: "summary.json lists interaction-metrics.cbor and there is none".to_owned(),
    })
}

impl BoundDocument for InteractionDocument {
    fn stream_binding(&self) -> StreamBinding<'_> {
        StreamBinding {
            steward: &self.steward,
            stream_id: &self.stream_id,
            window_count: self.window_count,
            receipts_root: &self.receipts_root,
        }
    }

    /// Every event's window has a receipt (`event_window_missing`, once per window).
    fn check_kind(&self, receipts: &[ReceiptFacts], out: &mut Vec<BindingProblem>) {
        let mut p = |code: &'static str, detail: String| out.push(BindingProblem { code, detail });
        let windows: HashSet<u64> = receipts.iter().map(|r| r.window_id).collect();
        let mut named = HashSet::new();
        for e in &self.events {
            if let Some(w) = e.window_id
                && !windows.contains(&w)
                && named.insert(w)
            {
                p(
                    "event_window_missing",
                    format!(
                        "a {} event at frame {} names window {w}, which has no receipt",
                        e.kind.as_str(),
                        e.tick
                    ),
                );
            }
        }
    }
}
