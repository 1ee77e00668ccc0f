//! The report's stop-latency section (spec/STOP-LATENCY-V1.md): drawn from what the stream
//! verifier found of `stop-latency.cbor` (the verified document and its problems).

use std::fmt::Write as _;

use jouleclaw_stack::store::Problem;
use jouleclaw_stop_latency::{self as sl, BargeIn, StopLatencyDocument};

use crate::commands::stop_latency::{describe, ms};

/// What the stream verifier found of `stop-latency.cbor`: the verified document, if any, and
/// the file's problems.
pub(crate) struct Found<'a> {
    /// The verified document.
    pub(crate) doc: Option<&'a StopLatencyDocument>,
    /// Its problems (empty: verified and bound, or absent and not needed): the ones the
    /// verifier named.
    pub(crate) problems: Vec<&'a Problem>,
    /// Its problems the verifier counted and did not name.
    pub(crate) more: u64,
}

/// The list item that counts a document's problems the verifier did not name, if any.
pub(super) fn more_item(out: &mut String, more: u64) {
    if more > 0 {
        let _ = write!(
            out,
            "<li>... and {more} more problems (only the first {} are named)</li>",
            jouleclaw_stack::store::MAX_NAMED_PROBLEMS
        );
    }
}

/// The report's section: each barge-in's stop latency against the deadline, and p50, p95, max.
pub(super) fn html_section(out: &mut String, ev: &Found<'_>, esc: impl Fn(&str) -> String) {
    let deadline = sl::DEADLINE_NS;
    out.push_str("<section id=\"stop-latency\"><h2>Stop latency</h2>");
    if !ev.problems.is_empty() {
        out.push_str("<ul class=\"problems\" id=\"stop-latency-problems\">");
        for p in &ev.problems {
            let _ = write!(out, "<li>{}</li>", esc(&p.to_string()));
        }
        more_item(out, ev.more);
        out.push_str("</ul>");
    }
    let Some(doc) = ev.doc else {
        let _ = write!(
            out,
            "<p class=\"badge {}\">{}</p></section>",
            if ev.problems.is_empty() {
                "neutral"
            } else {
                "bad"
            },
            if ev.problems.is_empty() {
                "no stop-latency.cbor and no barge-in in the receipts"
            } else {
                "NOT VERIFIED: see the problems listed here"
            }
        );
        return;
    };
    let _ = write!(
        out,
        "<p id=\"stop-latency-summary\">{}{}</p>",
        esc(&describe(doc)),
        if ev.problems.is_empty() {
            " (signed, bound to the receipts)"
        } else {
            " (NOT bound to these receipts: see the problems listed here)"
        }
    );
    if doc.barge_ins.is_empty() {
        out.push_str("</section>");
        return;
    }
    let max = doc
        .barge_ins
        .iter()
        .map(BargeIn::stop_latency_ns)
        .max()
        .unwrap_or(0)
        .max(2 * deadline);
    let scale = 600.0 / max as f64;
    let row_h = 22.0;
    let h = row_h * doc.barge_ins.len() as f64 + 30.0;
    let _ = write!(
        out,
        "<svg class=\"bars\" id=\"stop-latency-bars\" viewBox=\"0 0 1000 {h}\" width=\"100%\" \
         role=\"img\" aria-label=\"stop latency per barge-in\" xmlns=\"http://www.w3.org/2000/svg\">"
    );
    for (i, b) in doc.barge_ins.iter().enumerate() {
        let y = 6.0 + row_h * i as f64;
        let d = b.stop_latency_ns();
        let full = d as f64 * scale;
        let ok = d.min(deadline) as f64 * scale;
        let head = format!(
            "<g class=\"stop\" data-window=\"{w}\" data-stop-latency-ns=\"{d}\"><text x=\"4\" y=\"{ty}\" font-size=\"12\">window {w}</text>",
            w = b.window_id,
            ty = y + 11.0,
        );
        let label = esc(&format!(
            "{}{} ({} B after the deadline)",
            ms(d),
            if b.within_deadline() { "" } else { " LATE" },
            b.late_audio_bytes
        ));
        deadline_row(out, &head, (y, y + 11.0, 14), "#4c8c4a", (ok, full), &label);
    }
    let dx = 160.0 + deadline as f64 * scale;
    let _ = write!(
        out,
        "<line x1=\"{dx}\" x2=\"{dx}\" y1=\"2\" y2=\"{y2}\" stroke=\"#111\" stroke-width=\"2\" stroke-dasharray=\"5 3\"/>\
         <text x=\"{dx}\" y=\"{ty}\" font-size=\"12\" text-anchor=\"middle\">deadline {} ms</text></svg>\
         <p class=\"scale\">Stop latency: barge-in to the last outbound audio tick sent after it \
         (its timestamp; until the agent's next outbound start or the end of the stream), from \
         the signed stop-latency/1 document.</p></section>",
        deadline / 1_000_000,
        y2 = h - 16.0,
        ty = h - 4.0,
    );
}

/// One row of a chart of intervals against a deadline: `head` (the row's group opened and
/// named), then at `y` (the label at `ty`), `height` high from x 160, a bar `ok` wide in `fill`
/// (up to the deadline), the rest of `full` hatched, and the escaped `label` after it.
pub(super) fn deadline_row(
    out: &mut String,
    head: &str,
    (y, ty, height): (f64, f64, u32),
    fill: &str,
    (ok, full): (f64, f64),
    label: &str,
) {
    let _ = write!(
        out,
        "{head}<rect x=\"160\" y=\"{y}\" width=\"{ok}\" height=\"{height}\" fill=\"{fill}\"/>\
         <rect x=\"{x2}\" y=\"{y}\" width=\"{late}\" height=\"{height}\" fill=\"url(#p-hall)\" stroke=\"#b71c1c\"/>\
         <text x=\"{tx}\" y=\"{ty}\" font-size=\"12\">{label}</text></g>",
        x2 = 160.0 + ok,
        late = (full - ok).max(0.0),
        tx = 168.0 + full,
    );
}
