//! The binding to the stream: a verified document checked against the window receipts.

use std::collections::{BTreeSet, HashMap};

use jouleclaw_jcr1::StreamWindowReceipt;
use jouleclaw_stream::WindowConservationFinding;
use jouleclaw_stream_oracle::WindowVerdict;

use crate::document::StopLatencyDocument;

/// Every binding problem code, in the order [`check_receipts`] looks for them.
pub const BINDING_CODES: &[&str] = &[
    "stream_mismatch",
    "window_count_mismatch",
    "root_mismatch",
    "barge_in_window_missing",
    "barge_in_not_yielded",
    "yield_unlisted",
    "finding_unlisted",
    "finding_contradicted",
    "stop_latency_missing",
];

pub use jouleclaw_seal::call_document::BindingProblem;
use jouleclaw_seal::call_document::{BoundDocument, ReceiptFacts, StreamBinding, VerdictFact};
/// Checks a verified document against the stream's receipts, in window order, with their
/// BLAKE3 content hashes (`spec/STOP-LATENCY-V1.md` section 7): the stream, the window count and the
/// root, then the kind's own checks. Empty: bound. With the receipts' root already known
/// (a caller that verified a seal over these receipts holds it): `check_receipts_under_root`;
/// over what the checks read of the receipts (`jouleclaw_seal::call_document::BoundReceipts`,
/// a few bytes a receipt): `check_bound_under_root`.
pub use jouleclaw_seal::call_document::{
    check_bound_under_root, check_receipts, check_receipts_under_root,
};

/// How a receipt records a barge-in, if it does: a `yield` verdict, or a `barge_in_ignored`
/// finding (whatever the verdict: a `fail` outranks the `yield` of the same window).
fn records_barge_in(r: &StreamWindowReceipt) -> Option<&'static str> {
    if matches!(r.verdict, WindowVerdict::Yield { .. }) {
        Some("a barge-in (yield)")
    } else if matches!(
        r.conservation,
        WindowConservationFinding::BargeInIgnored { .. }
    ) {
        Some("an ignored barge-in (barge_in_ignored)")
    } else {
        None
    }
}

/// `true` when the receipts need a stop-latency document: one of them records a barge-in,
/// whatever its verdict (a `yield` verdict or a `barge_in_ignored` finding). Without the
/// document such a stream is refused (`stop_latency_missing`).
pub fn required(receipts: &[StreamWindowReceipt]) -> bool {
    receipts.iter().any(|r| records_barge_in(r).is_some())
}

/// The problem of a stream whose receipts record a barge-in and which has no document.
pub fn missing(receipts: &[StreamWindowReceipt]) -> Option<BindingProblem> {
    let (w, what) = receipts
        .iter()
        .find_map(|r| records_barge_in(r).map(|what| (r.window_id, what)))?;
    Some(BindingProblem {
        code: "stop_latency_missing",
        detail: format!("window {w} records {what} and there is no stop-latency document"),
    })
}

impl BoundDocument for StopLatencyDocument {
    fn stream_binding(&self) -> StreamBinding<'_> {
        StreamBinding {
            steward: &self.steward,
            stream_id: &self.stream_id,
            window_count: self.window_count,
            receipts_root: &self.receipts_root,
        }
    }

    /// Every barge-in window a yield (or a failed window), every yield listed, and what the
    /// receipts state about late outbound after a barge-in in the document.
    fn check_kind(&self, receipts: &[ReceiptFacts], out: &mut Vec<BindingProblem>) {
        let mut p = |code: &'static str, detail: String| out.push(BindingProblem { code, detail });
        let by_window: HashMap<u64, &ReceiptFacts> =
            receipts.iter().map(|r| (r.window_id, r)).collect();
        let listed: BTreeSet<u64> = self.barge_ins.iter().map(|b| b.window_id).collect();
        for &w in &listed {
            match by_window.get(&w) {
                None => p(
                    "barge_in_window_missing",
                    format!("a barge-in is listed in window {w}, which has no receipt"),
                ),
                Some(r) => match r.verdict {
                    VerdictFact::Yield { seen_at } if seen_at == w => {}
                    VerdictFact::Fail => {}
                    v => p(
                        "barge_in_not_yielded",
                        format!(
                            "a barge-in is listed in window {w}, whose receipt's verdict is {}",
                            v.kind_str()
                        ),
                    ),
                },
            }
        }
        for r in receipts {
            if let VerdictFact::Yield { .. } = r.verdict
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
        // What the signed receipts state about late outbound after a barge-in must be in the
        // document: the barge-in itself (same time), still measured at that outbound's time, with
        // late audio at or after it. The document's first barge-in at each time, looked up once
        // per receipt (not a scan of the document per receipt).
        let mut by_time: HashMap<u64, &crate::meter::BargeIn> =
            HashMap::with_capacity(self.barge_ins.len());
        for b in &self.barge_ins {
            by_time.entry(b.barge_in_ts_ns).or_insert(b);
        }
        for r in receipts {
            let WindowConservationFinding::BargeInIgnored {
                barge_in_ts_ns,
                outbound_ts_ns,
            } = r.conservation
            else {
                continue;
            };
            let Some(b) = by_time.get(&barge_in_ts_ns) else {
                p(
                    "finding_unlisted",
                    format!(
                        "receipt {} records barge_in_ignored for a barge-in at {barge_in_ts_ns} ns the document does not list",
                        r.window_id
                    ),
                );
                continue;
            };
            let open_then = b.end_ts_ns.is_none_or(|end| end >= outbound_ts_ns);
            let late_then =
                b.late_audio_bytes > 0 && b.last_audio_ts_ns.is_some_and(|t| t >= outbound_ts_ns);
            if b.window_id > r.window_id || !open_then || !late_then {
                p(
                    "finding_contradicted",
                    format!(
                        "receipt {} records outbound at {outbound_ts_ns} ns past the deadline of the barge-in at {barge_in_ts_ns} ns; the document lists that barge-in in window {} with last audio {} and {} late audio bytes, ended {}",
                        r.window_id,
                        b.window_id,
                        b.last_audio_ts_ns
                            .map_or("none".to_owned(), |t| format!("at {t} ns")),
                        b.late_audio_bytes,
                        b.end_ts_ns
                            .map_or("at the stream's end".to_owned(), |t| format!("at {t} ns")),
                    ),
                );
            }
        }
    }
}
