//! The report page: one HTML document, inline CSS and SVG, no scripts, nothing fetched.
//!
//! Every string from the files goes through [`esc`] (text and attribute values alike); numbers
//! and hex digests are formatted here.

use std::fmt::Write as _;

use jouleclaw_stack::oracle::WindowVerdict;
use jouleclaw_stack::pipeline::format_ts;
use jouleclaw_stack::store::{Completeness, Outcome, ReceiptStatus};
use jouleclaw_stack::stream::{BARGE_IN_DEADLINE_MS, NS_PER_MS, WindowConservationFinding};

use jouleclaw_interaction::{Event, EventKind};

mod sections;
mod stop_latency;
mod timeline;

use sections::{barge_ins, interaction, receipts_table, stop_latency, summary};
use timeline::{marks, timeline};

use crate::commands::report::{Report, Row};

/// Columns per timeline strip (one SVG each).
const STRIP: usize = 100;
/// SVG user units: plot width and the left margin for the band names.
const PLOT_W: f64 = 900.0;
const LEFT: f64 = 100.0;

/// HTML-escapes `s` for text and for double- or single-quoted attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Where a row comes from: `line N` (1-based) of receipts.jsonl.
pub(crate) fn place(row: &Row) -> String {
    format!("line {}", row.line + 1)
}

/// A status in words.
pub(crate) fn status_text(s: ReceiptStatus) -> String {
    match s {
        ReceiptStatus::Signed => "verified".to_owned(),
        ReceiptStatus::Included => "verified (inclusion receipt under its checkpoint)".to_owned(),
        ReceiptStatus::Unproven => "NOT VERIFIED: nothing signed covers it".to_owned(),
        ReceiptStatus::Malformed(code) => format!("REFUSED: {code}"),
    }
}

fn verdict_text(v: &WindowVerdict) -> String {
    match v {
        WindowVerdict::Pass { chain } => format!("pass ({})", chain.join(", ")),
        WindowVerdict::NeedMore { oracle, reason } => format!("need_more: {oracle}: {reason}"),
        WindowVerdict::Yield { seen_at } => format!("yield (barge-in seen in window {seen_at})"),
        WindowVerdict::Fail { oracle, reason } => format!("FAIL: {oracle}: {reason}"),
    }
}

fn finding_text(f: &WindowConservationFinding) -> String {
    match *f {
        WindowConservationFinding::Conforming => "conforming".to_owned(),
        WindowConservationFinding::Hallucination { unaccounted } => {
            format!("HALLUCINATION: {unaccounted} B over budget")
        }
        WindowConservationFinding::BargeInIgnored {
            barge_in_ts_ns,
            outbound_ts_ns,
        } => format!(
            "BARGE-IN IGNORED: barge-in at {}, outbound at {} ({} after; deadline {BARGE_IN_DEADLINE_MS} ms)",
            format_ts(barge_in_ts_ns),
            format_ts(outbound_ts_ns),
            ms(outbound_ts_ns.saturating_sub(barge_in_ts_ns))
        ),
    }
}

/// Nanoseconds as milliseconds, exact (up to 6 decimals, trailing zeros dropped).
fn ms(ns: u64) -> String {
    exact(u128::from(ns), u128::from(NS_PER_MS), 6, "ms")
}

/// `n / per` in decimal, exact (`per` = 10^`digits`; trailing zeros dropped), then `unit`.
fn exact(n: u128, per: u128, digits: usize, unit: &str) -> String {
    let (whole, frac) = (n / per, n % per);
    if frac == 0 {
        format!("{whole} {unit}")
    } else {
        let digits = format!("{frac:0digits$}");
        format!("{whole}.{} {unit}", digits.trim_end_matches('0'))
    }
}

fn verdict_style(v: &WindowVerdict) -> (&'static str, &'static str) {
    match v {
        WindowVerdict::Pass { .. } => ("pass", "P"),
        WindowVerdict::NeedMore { .. } => ("need_more", "N"),
        WindowVerdict::Yield { .. } => ("yield", "Y"),
        WindowVerdict::Fail { .. } => ("fail", "F"),
    }
}

fn finding_style(f: &WindowConservationFinding) -> (&'static str, &'static str) {
    match f {
        WindowConservationFinding::Conforming => ("conforming", "ok"),
        WindowConservationFinding::Hallucination { .. } => ("hallucination", "H"),
        WindowConservationFinding::BargeInIgnored { .. } => ("barge_in_ignored", "B"),
    }
}

fn kb(bytes: u64) -> String {
    if bytes >= 10_000 {
        format!("{:.1}k", bytes as f64 / 1000.0)
    } else {
        bytes.to_string()
    }
}

/// The most interaction events drawn on the timeline and listed in the event table (the
/// first by frame); the page counts the rest.
pub(crate) const MAX_EVENTS_SHOWN: usize = 1000;

/// An event's class on the page (`ok` the agent did the right thing, `bad` it did not,
/// `agent` the agent started over the user) and its short label.
fn event_style(kind: EventKind) -> (&'static str, &'static str) {
    match kind {
        EventKind::Response => ("ok", "R"),
        EventKind::NoResponse => ("bad", "NR"),
        EventKind::Yield => ("ok", "Y"),
        EventKind::NoYield => ("bad", "NY"),
        EventKind::BackchannelCorrect => ("ok", "BC"),
        EventKind::BackchannelError => ("bad", "BC"),
        EventKind::VocalTicCorrect => ("ok", "VT"),
        EventKind::VocalTicError => ("bad", "VT"),
        EventKind::NonDirectedCorrect => ("ok", "ND"),
        EventKind::NonDirectedError => ("bad", "ND"),
        EventKind::AgentInterruptsUser => ("agent", "AI"),
    }
}

/// Seconds of `frames` frames of `tick_ns`, exact (trailing zeros dropped).
fn secs(frames: u64, tick_ns: u64) -> String {
    exact(
        u128::from(frames) * u128::from(tick_ns),
        1_000_000_000,
        9,
        "s",
    )
}

/// One event in words: what, at which frame and window, and its latency.
fn event_text(e: &Event, tick_ns: u64) -> String {
    let window = e.window_id.map_or_else(
        || "no tick in that frame".to_owned(),
        |w| format!("window {w}"),
    );
    let latency = e.latency_ticks.map_or_else(String::new, |l| {
        format!(", after {l} frames ({})", secs(l, tick_ns))
    });
    format!(
        "{}: frame {} ({}), {window}{latency}",
        e.kind.as_str(),
        e.tick,
        secs(e.tick, tick_ns)
    )
}

const CSS: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1a1a1a;margin:1.5em auto;max-width:1180px;padding:0 1em}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .4em;border-bottom:1px solid #ccc}
code,.mono{font-family:"DejaVu Sans Mono",Menlo,Consolas,monospace;font-size:.92em;overflow-wrap:anywhere}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.15em 1em;margin:.5em 0}dl.meta dt{font-weight:600}dl.meta dd{margin:0;overflow-wrap:anywhere}
.badge{display:inline-block;padding:.35em .8em;border-radius:4px;font-weight:700;border:2px solid}
.badge.ok{background:#e8f5e9;border-color:#2e7d32;color:#1b5e20}.badge.bad{background:#ffebee;border-color:#c62828;color:#b71c1c}
.badge.unknown{background:#fff3e0;border-color:#e65100;color:#bf360c}
.warn{background:#fff8e1;border:2px solid #f9a825;padding:.4em .8em;border-radius:4px;font-weight:600}
ul.problems{color:#b71c1c}
.legend{display:flex;flex-wrap:wrap;gap:.3em 1.2em;margin:.4em 0;font-size:.92em}.legend span{display:inline-flex;align-items:center;gap:.35em}
.legend svg{vertical-align:middle}
svg.strip{display:block;margin:.6em 0 1.2em;break-inside:avoid;page-break-inside:avoid}
svg text{font-family:system-ui,"DejaVu Sans",sans-serif}
.band{font-size:11px;fill:#444}.wid{text-anchor:middle;fill:#333}.letter{text-anchor:middle;font-weight:700;fill:#fff;paint-order:stroke;stroke:#0b2a0b;stroke-width:2px}.letter.f{fill:#111;stroke:#fff;stroke-width:3px}
.num{text-anchor:middle;fill:#555}.note{text-anchor:middle;font-weight:700;fill:#b71c1c;paint-order:stroke;stroke:#fff;stroke-width:3px}.gapnote{fill:#6a1b9a}
.v-pass{fill:#2e7d32}.v-need_more{fill:#8d6e00}.v-yield{fill:url(#p-yield)}.v-fail{fill:url(#p-fail)}
.f-conforming{fill:#eeeeee}.f-hallucination{fill:url(#p-hall)}.f-barge_in_ignored{fill:url(#p-barge)}
.in{fill:#4a78b5}.out{fill:#e3892b}.overshoot{fill:url(#p-hall);stroke:#b71c1c;stroke-width:1}
.axis{stroke:#999;stroke-width:1}.gap{stroke:#6a1b9a;stroke-width:2;stroke-dasharray:4 3}
.budget{fill:none;stroke:#2e7d32;stroke-width:2;stroke-dasharray:6 4}.rollout{fill:none;stroke:#e3892b;stroke-width:2.5}
.e-ok{fill:#a5d6a7;stroke:#2e7d32;stroke-width:1}.e-bad{fill:url(#p-hall);stroke:#b71c1c;stroke-width:1}.e-agent{fill:url(#p-barge);stroke:#e65100;stroke-width:1}
#interaction table{margin:.6em 0}.doc-ok{font-weight:600;color:#1b5e20}.seal-note.ok{color:#1b5e20}.seal-note.bad{color:#b71c1c;font-weight:600}
.check{text-anchor:middle;font-weight:700}.check.ok{fill:#2e7d32}.check.bad{fill:#c62828}
.bars svg{display:block}
table{border-collapse:collapse;width:100%;font-size:.88em}th,td{border:1px solid #ccc;padding:.25em .45em;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.n{text-align:right;font-variant-numeric:tabular-nums}
tr.bad td{background:#ffebee}td.hash{font-family:"DejaVu Sans Mono",monospace;font-size:.85em;overflow-wrap:anywhere;max-width:19em}
.cannot li{margin:.2em 0}
@media print{body{max-width:none;margin:0;font-size:11px;-webkit-print-color-adjust:exact;print-color-adjust:exact}h2{break-after:avoid}tr{break-inside:avoid}}
"#;

/// Pattern definitions shared by every SVG on the page (referenced by id).
const PATTERNS: &str = "<svg width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\" \
xmlns=\"http://www.w3.org/2000/svg\"><defs>\
<pattern id=\"p-yield\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\"><rect width=\"6\" height=\"6\" fill=\"#1565c0\"/><rect width=\"6\" height=\"2\" fill=\"#5e92f3\"/></pattern>\
<pattern id=\"p-fail\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\"><rect width=\"6\" height=\"6\" fill=\"#c62828\"/><path d=\"M0 0L6 6M6 0L0 6\" stroke=\"#7f0000\" stroke-width=\"1.2\"/></pattern>\
<pattern id=\"p-hall\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#ffcdd2\"/><rect width=\"3\" height=\"6\" fill=\"#e53935\"/></pattern>\
<pattern id=\"p-barge\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\"><rect width=\"6\" height=\"6\" fill=\"#ffe0b2\"/><circle cx=\"3\" cy=\"3\" r=\"1.6\" fill=\"#e65100\"/></pattern>\
</defs></svg>";

/// The whole page.
pub(crate) fn render(report: &Report) -> String {
    let mut out = String::with_capacity(16_384 + report.rows.len() * 1_200);
    header(&mut out, report);
    verification(&mut out, report);
    out.push_str("</header>");
    completeness(&mut out, report);
    // The panel and its events are drawn from a document that verified and is bound to these
    // receipts, never from one that is not.
    let drawn = report.store.interaction.as_ref().filter(|_| {
        report
            .store
            .document_problems_of(crate::commands::interaction::FILE)
            .next()
            .is_none()
    });
    let marks = drawn.map(|doc| marks(&report.cols, doc));
    timeline(&mut out, report, marks.as_ref());
    barge_ins(&mut out, report);
    stop_latency(&mut out, report);
    interaction(&mut out, report, drawn, marks.as_ref());
    summary(&mut out, report);
    receipts_table(&mut out, report);
    out.push_str(
        "<section id=\"cannot\"><h2>What this page cannot show</h2><ul class=\"cannot\">\
         <li>Early verdicts and their tick times: <code>jouleclaw run</code> prints them but \
         writes them to no file.</li>\
         <li>Stream time of a window: receipts carry the window id and a whole-second \
         <code>closed_at</code>, not the window length.</li>\
         <li>The exact rolling budget when the run had substrate bytes: receipts carry no \
         substrate bytes.</li>\
         <li>Completeness: without seals nothing tells a dropped receipt from an empty \
         window.</li></ul></section></body></html>\n",
    );
    out
}

/// The page's head and the call's facts.
fn header(out: &mut String, report: &Report) {
    let store = &report.store;
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>jouleclaw report: {title}</title><style>{CSS}</style></head><body>{PATTERNS}\
         <header><h1>Call report: <span class=\"mono\" id=\"stream-id\">{stream}</span></h1><dl class=\"meta\">\
         <dt>stream</dt><dd class=\"mono\">{stream}</dd><dt>steward</dt><dd class=\"mono\" id=\"steward\">{steward}</dd>\
         <dt>signer kid</dt><dd class=\"mono\">{kid}</dd><dt>public key</dt><dd class=\"mono\">{pk}</dd>\
         <dt>key from</dt><dd>{src}</dd>",
        title = esc(report.stream_id()),
        stream = esc(report.stream_id()),
        steward = esc(report.steward()),
        kid = esc(&report.kid_hex),
        pk = esc(&report.public_key_hex),
        src = esc(&report.key_source),
    );
    if let Some(summary) = &store.summary {
        for (k, v) in [
            ("trace", Some(&summary.trace)),
            ("spec", Some(&summary.spec)),
            ("epoch", summary.epoch.as_ref()),
        ] {
            if let Some(v) = v {
                let _ = write!(out, "<dt>{k}</dt><dd class=\"mono\">{}</dd>", esc(v));
            }
        }
        if !summary.oracle.is_empty() {
            let _ = write!(
                out,
                "<dt>oracle</dt><dd class=\"mono\">{}</dd>",
                esc(&summary.oracle.join(", "))
            );
        }
    }
    out.push_str("</dl>");
}

/// The verification badge, the test-key warning, the problems named.
fn verification(out: &mut String, report: &Report) {
    let store = &report.store;
    let total = store.receipts.len();
    let verified = store.verified();
    let problems = store.problem_count;
    // The signed documents' own problems are shown in their sections.
    match store.receipts_outcome() {
        Outcome::Complete => {
            let _ = write!(
                out,
                "<p id=\"verification\" class=\"badge ok\" data-verified=\"{verified}\" data-total=\"{total}\" data-outcome=\"complete\">\
                 ✓ VERIFIED AND COMPLETE: {verified}/{total} receipts verified, and the final seal \
                 shows they are the whole stream</p>"
            );
        }
        Outcome::Unsealed => {
            let _ = write!(
                out,
                "<p id=\"verification\" class=\"badge unknown\" data-verified=\"{verified}\" data-total=\"{total}\" data-outcome=\"unsealed\">\
                 SIGNATURES VERIFIED: {verified}/{total} receipts · ⚠ COMPLETENESS UNKNOWN: not \
                 sealed, so nothing shows that these are all the stream's windows (a dropped \
                 receipt looks like an empty window){}</p>",
                if report.allow_unsealed {
                    ""
                } else {
                    " · NOT ACCEPTED without --allow-unsealed"
                }
            );
        }
        Outcome::Failed => {
            let _ = write!(
                out,
                "<p id=\"verification\" class=\"badge bad\" data-verified=\"{verified}\" data-total=\"{total}\" data-outcome=\"failed\">\
                 ✗ NOT VERIFIED: {verified}/{total} receipts verified; {problems} problem(s)</p>"
            );
        }
    }
    if report.test_key {
        out.push_str(
            "<p class=\"warn\" id=\"test-key\">⚠ TEST KEY: these receipts are signed with the \
             published RFC 8032 test key. Anyone can forge them; they prove nothing about who \
             made them.</p>",
        );
    }
    if !store.problems.is_empty() {
        out.push_str("<ul class=\"problems\" id=\"disagreements\">");
        for p in &store.problems {
            let _ = write!(
                out,
                "<li data-code=\"{}\">{}</li>",
                esc(p.code),
                esc(&p.to_string())
            );
        }
        let named = store.problems.len() as u64;
        if problems > named {
            let _ = write!(
                out,
                "<li id=\"problems-more\">... and {} more problems (only the first {} are named)</li>",
                problems - named,
                named
            );
        }
        out.push_str("</ul>");
    }
}

/// Whether the receipts are the whole stream.
fn completeness(out: &mut String, report: &Report) {
    let store = &report.store;
    let problems = store.problem_count;
    match store.completeness {
        Completeness::Unknown => out.push_str(
            "<section id=\"completeness\"><h2>Completeness</h2><p class=\"badge unknown\">\
             ⚠ COMPLETENESS UNKNOWN: not sealed (no seals.cbor or inclusion.cbor): nothing shows \
             that this is every window of the stream</p></section>",
        ),
        Completeness::Complete => {
            let _ = write!(
                out,
                "<section id=\"completeness\"><h2>Completeness</h2><p class=\"badge ok\">\
                 COMPLETE: the receipts are the whole sealed stream ({} checkpoints, final seal \
                 over {} receipts, {} inclusion receipts verified)</p></section>",
                store.checkpoints, store.final_tree_size, store.inclusion_receipts
            );
        }
        Completeness::Incomplete => {
            let _ = write!(
                out,
                "<section id=\"completeness\"><h2>Completeness</h2><p class=\"badge bad\">NOT \
                 COMPLETE or not verified: {problems} problems (listed above)</p></section>"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn esc_turns_every_markup_character_into_an_entity() {
        assert_eq!(
            esc("<a href=\"x\" title='y'>&</a>"),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
        assert_eq!(esc("did:keri:plain"), "did:keri:plain");
    }

    #[test]
    fn secs_is_exact_to_the_nanosecond() {
        assert_eq!(secs(3, 200_000_000), "0.6 s");
        assert_eq!(secs(5, 200_000_000), "1 s");
        assert_eq!(secs(1, 1), "0.000000001 s");
        assert_eq!(secs(u64::MAX, 60_000_000_000), "1106804644422573096900 s");
    }

    #[test]
    fn ms_is_exact_to_the_nanosecond() {
        assert_eq!(ms(170_000_000), "170 ms");
        assert_eq!(ms(150_000_001), "150.000001 ms");
        assert_eq!(ms(0), "0 ms");
    }
}
