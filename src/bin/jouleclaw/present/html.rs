//! The report page: one HTML document, inline CSS and SVG, no scripts, nothing fetched.
//!
//! Every string from the files goes through [`esc`] (text and attribute values alike); numbers
//! and hex digests are formatted here.

use std::fmt::Write as _;

use jouleclaw_stack::oracle::WindowVerdict;
use jouleclaw_stack::pipeline::format_ts;
use jouleclaw_stack::store::{Completeness, Outcome, ReceiptStatus};
use jouleclaw_stack::stream::{BARGE_IN_DEADLINE_MS, NS_PER_MS, WindowConservationFinding};

use jouleclaw_interaction::{Event, EventKind, InteractionDocument};

use crate::commands::report::{
    Col, DocSeal, MAX_BARGE_INS, MAX_COLUMNS, MAX_TABLE_ROWS, Report, Row, doc_seal,
};

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

// Vertical layout of a strip (SVG user units).
const Y_ID: f64 = 14.0;
const Y_VERDICT: f64 = 20.0;
const H_BAND: f64 = 18.0;
const Y_FINDING: f64 = 42.0;
const Y_BARS: f64 = 66.0;
const H_BARS: f64 = 120.0;
const Y_ROLL: f64 = 200.0;
const H_ROLL: f64 = 80.0;
const Y_CHECK: f64 = 296.0;
const H_STRIP: f64 = 310.0;
/// The interaction band, below the signature row, drawn when the call has an interaction
/// document.
const Y_EVENTS: f64 = 312.0;
const H_EVENTS: f64 = 20.0;
const H_STRIP_EVENTS: f64 = 338.0;

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

/// The interaction events drawn on the timeline: the first [`MAX_EVENTS_SHOWN`] by frame,
/// each in the first column whose windows hold its window id.
pub(crate) struct Marks {
    /// Per column, the events drawn in it.
    pub(crate) per_col: Vec<Vec<Event>>,
    /// The frame length.
    pub(crate) tick_ns: u64,
    /// Events shown whose window is in no column, or that have no window.
    pub(crate) off_timeline: Vec<Event>,
    /// Events beyond [`MAX_EVENTS_SHOWN`].
    pub(crate) more: u64,
}

/// The document's events, first by frame, at most [`MAX_EVENTS_SHOWN`].
fn shown_events(doc: &InteractionDocument) -> Vec<Event> {
    let mut events = doc.events.clone();
    events.sort_by_key(|e| (e.tick, e.kind));
    events.truncate(MAX_EVENTS_SHOWN);
    events
}

fn marks(cols: &[Col], doc: &InteractionDocument) -> Marks {
    let shown = shown_events(doc);
    let more = (doc.events.len() - shown.len()) as u64;
    let mut per_col = vec![Vec::new(); cols.len()];
    let mut off_timeline = Vec::new();
    for e in shown {
        let at = e
            .window_id
            .and_then(|w| cols.iter().position(|c| c.first <= w && w <= c.last));
        match at.and_then(|k| per_col.get_mut(k)) {
            Some(v) => v.push(e),
            None => off_timeline.push(e),
        }
    }
    Marks {
        per_col,
        tick_ns: doc.config.tick_ns,
        off_timeline,
        more,
    }
}

/// The column's events in the interaction band: one mark each, side by side.
fn event_marks(out: &mut String, events: &[Event], tick_ns: u64, x: f64, col_w: f64) {
    if events.is_empty() {
        return;
    }
    let w = (col_w - 1.0) / events.len() as f64;
    let font = (w * 0.5).clamp(5.0, 11.0);
    for (i, e) in events.iter().enumerate() {
        let (class, label) = event_style(e.kind);
        let ex = x + w * i as f64;
        let _ = write!(
            out,
            "<g class=\"event\" data-kind=\"{kind}\" data-frame=\"{frame}\" data-window=\"{window}\">\
             <title>{title}</title><rect class=\"e-{class}\" x=\"{ex}\" y=\"{Y_EVENTS}\" width=\"{w}\" height=\"{H_EVENTS}\"/>",
            kind = esc(e.kind.as_str()),
            frame = e.tick,
            window = e.window_id.map_or_else(String::new, |w| w.to_string()),
            title = esc(&event_text(e, tick_ns)),
            w = (w - 0.5).max(0.5),
        );
        if w >= 16.0 {
            let _ = write!(
                out,
                "<text class=\"letter f\" x=\"{cx}\" y=\"{ty}\" font-size=\"{font}\">{label}</text>",
                cx = ex + w / 2.0,
                ty = Y_EVENTS + 14.0,
            );
        }
        out.push_str("</g>");
    }
}

fn strip(
    out: &mut String,
    cols: &[Col],
    first_index: usize,
    col_w: f64,
    max_bar: u64,
    max_roll: u64,
    events: Option<(&[Vec<Event>], u64)>,
) {
    // The top 16 units of the bar panel are kept for the notes (overshoot, lateness).
    let bar_y = |v: u64| (H_BARS - 16.0) * v as f64 / max_bar.max(1) as f64;
    let roll_y = |v: u64| Y_ROLL + H_ROLL - H_ROLL * v as f64 / max_roll.max(1) as f64;
    let label_every = if cols.len() <= 30 { 1 } else { 10 };
    let font = (col_w * 0.55).clamp(6.0, 13.0);
    let _ = write!(
        out,
        "<svg class=\"strip\" viewBox=\"0 0 {w} {h}\" width=\"100%\" role=\"img\" \
         aria-label=\"windows {a} to {b}\" xmlns=\"http://www.w3.org/2000/svg\">",
        w = LEFT + PLOT_W,
        h = if events.is_some() {
            H_STRIP_EVENTS
        } else {
            H_STRIP
        },
        a = cols.first().map_or(0, |c| c.first),
        b = cols.last().map_or(0, |c| c.last),
    );
    // Band names.
    for (y, name) in [
        (Y_VERDICT + 13.0, "verdict"),
        (Y_FINDING + 13.0, "ledger"),
        (Y_BARS + 12.0, "bytes in | out"),
        (Y_ROLL + 12.0, "rolling 5 windows"),
        (Y_CHECK + 4.0, "signature"),
    ] {
        let _ = write!(out, "<text class=\"band\" x=\"4\" y=\"{y}\">{name}</text>");
    }
    if events.is_some() {
        let _ = write!(
            out,
            "<text class=\"band\" x=\"4\" y=\"{y}\">interaction</text>",
            y = Y_EVENTS + 14.0
        );
    }
    let _ = write!(
        out,
        "<line class=\"axis\" x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{y}\" y2=\"{y}\"/>\
         <line class=\"axis\" x1=\"{LEFT}\" x2=\"{x2}\" y1=\"{y2}\" y2=\"{y2}\"/>",
        x2 = LEFT + PLOT_W,
        y = Y_BARS + H_BARS,
        y2 = Y_ROLL + H_ROLL,
    );
    let mut roll_out_pts = String::new();
    let mut roll_in_pts = String::new();
    for (k, c) in cols.iter().enumerate() {
        let x = LEFT + col_w * k as f64;
        let (vclass, vletter) = verdict_style(&c.verdict);
        let (fclass, fletter) = finding_style(&c.finding);
        // Narrow columns: a blank grey band is conforming, and the exact figures of a finding
        // are in the column's title and the table, not written over the neighbours.
        let fletter = if col_w < 14.0 && fletter == "ok" {
            ""
        } else {
            fletter
        };
        let notes = col_w >= 30.0;
        let range = if c.first == c.last {
            format!("window {}", c.first)
        } else {
            format!("windows {}-{} ({} receipts)", c.first, c.last, c.receipts)
        };
        let rolling_attrs = c.rolling.map_or_else(String::new, |(ri, ro)| {
            format!(" data-rolling-in=\"{ri}\" data-rolling-out=\"{ro}\"")
        });
        let _ = write!(
            out,
            "<g class=\"window\" data-window=\"{first}\" data-last=\"{last}\" \
             data-verdict=\"{vclass}\" data-finding=\"{fclass}\"{rolling_attrs}><title>{title}</title>",
            first = c.first,
            last = c.last,
            title = esc(&format!(
                "{range}: {} B in, {} B out; {}; {}; {}",
                c.inbound,
                c.outbound,
                verdict_text(&c.verdict),
                finding_text(&c.finding),
                if c.all_verified {
                    "verified"
                } else {
                    "NOT VERIFIED"
                }
            )),
        );
        if (first_index + k).is_multiple_of(label_every) || c.gap_before > 0 {
            let _ = write!(
                out,
                "<text class=\"wid\" x=\"{cx}\" y=\"{Y_ID}\" font-size=\"{font}\">{id}</text>",
                cx = x + col_w / 2.0,
                id = c.first
            );
        }
        let _ = write!(
            out,
            "<rect class=\"v-{vclass}\" x=\"{x}\" y=\"{Y_VERDICT}\" width=\"{w}\" height=\"{H_BAND}\"/>\
             <text class=\"letter\" x=\"{cx}\" y=\"{ty}\" font-size=\"{font}\">{vletter}</text>\
             <rect class=\"f-{fclass}\" x=\"{x}\" y=\"{Y_FINDING}\" width=\"{w}\" height=\"{H_BAND}\"/>\
             <text class=\"letter f\" x=\"{cx}\" y=\"{ty2}\" font-size=\"{font}\">{fletter}</text>",
            w = col_w - 1.0,
            cx = x + col_w / 2.0,
            ty = Y_VERDICT + 13.0,
            ty2 = Y_FINDING + 13.0,
        );
        let half = (col_w - 2.0) / 2.0;
        let hin = bar_y(c.inbound);
        let hout = bar_y(c.outbound);
        let base = Y_BARS + H_BARS;
        let _ = write!(
            out,
            "<rect class=\"in\" x=\"{x}\" y=\"{yi}\" width=\"{half}\" height=\"{hin}\"/>\
             <rect class=\"out\" x=\"{xo}\" y=\"{yo}\" width=\"{half}\" height=\"{hout}\"/>",
            yi = base - hin,
            xo = x + half,
            yo = base - hout,
        );
        if let WindowConservationFinding::Hallucination { unaccounted } = c.finding {
            let h = bar_y(unaccounted.min(c.outbound));
            let _ = write!(
                out,
                "<rect class=\"overshoot\" x=\"{xo}\" y=\"{y}\" width=\"{half}\" height=\"{h}\"/>",
                xo = x + half,
                y = base - hout,
            );
        }
        if let (WindowConservationFinding::Hallucination { unaccounted }, true) = (c.finding, notes)
        {
            let _ = write!(
                out,
                "<text class=\"note\" x=\"{cx}\" y=\"{ty}\" font-size=\"{font}\">+{n} B</text>",
                cx = x + col_w / 2.0,
                ty = Y_BARS + 11.0,
                n = unaccounted,
            );
        }
        if let (
            WindowConservationFinding::BargeInIgnored {
                barge_in_ts_ns,
                outbound_ts_ns,
            },
            true,
        ) = (c.finding, notes)
        {
            let _ = write!(
                out,
                "<text class=\"note\" x=\"{cx}\" y=\"{ty}\" font-size=\"{font}\">{late}</text>",
                cx = x + col_w / 2.0,
                ty = Y_BARS + 10.0,
                late = esc(&ms(outbound_ts_ns.saturating_sub(barge_in_ts_ns))),
            );
        }
        if col_w >= 40.0 {
            let _ = write!(
                out,
                "<text class=\"num\" x=\"{cx}\" y=\"{ty}\" font-size=\"{f}\">{a}|{b}</text>",
                cx = x + col_w / 2.0,
                ty = base + 12.0,
                f = font * 0.8,
                a = kb(c.inbound),
                b = kb(c.outbound),
            );
        }
        if let Some((ri, ro)) = c.rolling {
            let cx = x + col_w / 2.0;
            let _ = write!(roll_in_pts, "{cx},{} ", roll_y(ri));
            let _ = write!(roll_out_pts, "{cx},{} ", roll_y(ro));
        }
        let _ = write!(
            out,
            "<text class=\"check {ok}\" x=\"{cx}\" y=\"{y}\" font-size=\"{font}\">{mark}</text>",
            ok = if c.all_verified { "ok" } else { "bad" },
            cx = x + col_w / 2.0,
            y = Y_CHECK + 4.0,
            mark = if c.all_verified { "✓" } else { "✗" },
        );
        if c.gap_before > 0 {
            let _ = write!(
                out,
                "<line class=\"gap\" x1=\"{x}\" x2=\"{x}\" y1=\"{y1}\" y2=\"{y2}\">\
                 <title>{n} empty window(s) without a receipt</title></line>\
                 <text class=\"gapnote\" x=\"{tx}\" y=\"{ty}\" font-size=\"{f}\">+{n} empty</text>",
                x = x - 0.5,
                y1 = Y_VERDICT,
                y2 = Y_CHECK - 8.0,
                tx = x + 2.0,
                ty = Y_BARS + 22.0,
                f = font * 0.8,
                n = c.gap_before,
            );
        }
        if let Some((ev, tick_ns)) = events.and_then(|(per_col, t)| Some((per_col.get(k)?, t))) {
            event_marks(out, ev, tick_ns, x, col_w);
        }
        out.push_str("</g>");
    }
    if !roll_in_pts.is_empty() {
        let _ = write!(
            out,
            "<polyline class=\"budget\" points=\"{roll_in_pts}\"/>\
             <polyline class=\"rollout\" points=\"{roll_out_pts}\"/>"
        );
    }
    out.push_str("</svg>");
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

fn swatch(class: &str, letter: &str) -> String {
    format!(
        "<svg width=\"22\" height=\"16\" xmlns=\"http://www.w3.org/2000/svg\"><rect class=\"{class}\" \
         width=\"22\" height=\"16\"/><text class=\"letter{f}\" x=\"11\" y=\"12\" font-size=\"11\">{letter}</text></svg>",
        f = if class.starts_with("f-") { " f" } else { "" }
    )
}

fn timeline(out: &mut String, report: &Report, marks: Option<&Marks>) {
    let cols: &[Col] = &report.cols;
    let per = report.per;
    out.push_str("<section id=\"timeline\"><h2>Timeline</h2>");
    let substrate = report.store.summary.as_ref().map(|s| s.substrate_bytes);
    let exact = substrate == Some(0);
    let _ = write!(
        out,
        "<p>One column per {unit}, in window order; strips of {STRIP} columns. A dashed purple \
         line and <q>+N empty</q> mark windows without a receipt. Hover a column for its \
         figures.</p>",
        unit = if per == 1 {
            "window with a receipt".to_owned()
        } else {
            format!(
                "{per} consecutive receipts (more than {MAX_COLUMNS} receipts: each column sums \
                 their bytes and shows their highest-ranked verdict and dominant finding)"
            )
        }
    );
    let _ = write!(
        out,
        "<div class=\"legend\">\
         <span>{}pass</span><span>{}yield (barge-in seen)</span><span>{}need_more</span><span>{}fail</span>\
         <span>{}conforming</span><span>{}hallucination</span><span>{}barge-in ignored</span>\
         <span><svg width=\"22\" height=\"16\"><rect class=\"in\" width=\"10\" height=\"16\"/><rect class=\"out\" x=\"11\" width=\"10\" height=\"16\"/></svg>inbound | outbound bytes</span>\
         <span><svg width=\"30\" height=\"10\"><line class=\"rollout\" x1=\"0\" x2=\"30\" y1=\"5\" y2=\"5\"/></svg>rolling outbound</span>\
         <span><svg width=\"30\" height=\"10\"><line class=\"budget\" x1=\"0\" x2=\"30\" y1=\"5\" y2=\"5\"/></svg>{budget}</span>\
         <span><b class=\"check ok\">✓</b>/<b style=\"color:#c62828\">✗</b> signature verified / not</span></div>",
        swatch("v-pass", "P"),
        swatch("v-yield", "Y"),
        swatch("v-need_more", "N"),
        swatch("v-fail", "F"),
        swatch("f-conforming", "ok"),
        swatch("f-hallucination", "H"),
        swatch("f-barge_in_ignored", "B"),
        budget = if exact {
            "rolling budget (exact: this run had no substrate bytes)".to_owned()
        } else {
            format!(
                "rolling inbound: the budget without substrate bytes, a lower bound (the \
                 receipts carry no substrate bytes; summary.json says {})",
                substrate.map_or_else(|| "nothing".to_owned(), |b| format!("{b} B in all"))
            )
        },
    );
    if marks.is_some() {
        let _ = write!(
            out,
            "<div class=\"legend\" id=\"interaction-legend\">\
             <span>interaction band (interaction-metrics.cbor), one mark per event in its window's column:</span>\
             <span>{}the agent did right (response, yield, talked through a backchannel, vocal tic or non-directed speech)</span>\
             <span>{}it did not (no response, no yield, stopped for or answered a backchannel, vocal tic or non-directed speech)</span>\
             <span>{}the agent started over the user</span>\
             <span>R response, Y yield, BC backchannel, VT vocal tic, ND non-directed, AI agent interrupts user; N: no</span></div>",
            swatch("e-ok", ""),
            swatch("e-bad", ""),
            swatch("e-agent", ""),
        );
    }
    if cols.is_empty() {
        out.push_str("<p>No receipt to draw.</p></section>");
        return;
    }
    let max_bar = cols
        .iter()
        .map(|c| c.inbound.max(c.outbound))
        .max()
        .unwrap_or(1);
    let max_roll = cols
        .iter()
        .filter_map(|c| c.rolling.map(|(a, b)| a.max(b)))
        .max()
        .unwrap_or(1);
    let col_w = PLOT_W / cols.len().min(STRIP) as f64;
    for (s, chunk) in cols.chunks(STRIP).enumerate() {
        let events = marks.map(|m| {
            let from = (s * STRIP).min(m.per_col.len());
            let to = (s * STRIP + chunk.len()).min(m.per_col.len());
            (m.per_col.get(from..to).unwrap_or_default(), m.tick_ns)
        });
        strip(out, chunk, s * STRIP, col_w, max_bar, max_roll, events);
    }
    let _ = write!(
        out,
        "<p class=\"scale\">Bar scale: full height = {max_bar} B in one column. Rolling scale: \
         full height = {max_roll} B over {n} windows (the ledger's default ring; the files do \
         not record the policy). Hallucination: the hatched top of the outbound bar is the \
         receipt's <code>unaccounted</code> bytes (labelled exactly).</p></section>",
        n = report.policy.window_count,
    );
}

fn barge_ins(out: &mut String, report: &Report) {
    out.push_str("<section id=\"barge-ins\"><h2>Barge-ins</h2>");
    let late = &report.late;
    let yields = &report.yields;
    if yields.is_empty() && late.is_empty() {
        out.push_str("<p>No barge-in: no yield verdict and no ignored barge-in.</p></section>");
        return;
    }
    let deadline_ns = BARGE_IN_DEADLINE_MS * NS_PER_MS;
    if !late.is_empty() {
        let max = late
            .iter()
            .map(|&(_, b, o)| o.saturating_sub(b))
            .max()
            .unwrap_or(0)
            .max(2 * deadline_ns);
        let scale = 600.0 / max as f64;
        let row_h = 26.0;
        let h = row_h * late.len() as f64 + 30.0;
        let _ = write!(
            out,
            "<p>Barge-in to the first outbound tick past the {BARGE_IN_DEADLINE_MS} ms deadline \
             (the ledger's <code>barge_in_ignored</code> finding). The bar's part beyond the \
             deadline line is hatched.</p>\
             <svg class=\"bars\" id=\"barge-in-intervals\" viewBox=\"0 0 1000 {h}\" width=\"100%\" \
             role=\"img\" aria-label=\"barge-in intervals\" xmlns=\"http://www.w3.org/2000/svg\">"
        );
        let dx = 160.0 + deadline_ns as f64 * scale;
        for (i, &(w, b, o)) in late.iter().enumerate() {
            let y = 8.0 + row_h * i as f64;
            let d = o.saturating_sub(b);
            let wfull = d as f64 * scale;
            let wok = (d.min(deadline_ns)) as f64 * scale;
            let _ = write!(
                out,
                "<g class=\"interval\" data-window=\"{w}\"><text class=\"band\" x=\"4\" y=\"{ty}\">window {w}</text>\
                 <rect x=\"160\" y=\"{y}\" width=\"{wok}\" height=\"16\" fill=\"#e3892b\"/>\
                 <rect x=\"{x2}\" y=\"{y}\" width=\"{wl}\" height=\"16\" fill=\"url(#p-hall)\" stroke=\"#b71c1c\"/>\
                 <text x=\"{tx}\" y=\"{ty}\" font-size=\"12\">{label}</text></g>",
                ty = y + 12.0,
                x2 = 160.0 + wok,
                wl = (wfull - wok).max(0.0),
                tx = 168.0 + wfull,
                label = esc(&format!(
                    "{}: barge-in {} → outbound {} = {} ({} {BARGE_IN_DEADLINE_MS} ms)",
                    if d > deadline_ns {
                        "IGNORED"
                    } else {
                        "within deadline"
                    },
                    format_ts(b),
                    format_ts(o),
                    ms(d),
                    if d > deadline_ns { ">" } else { "≤" },
                )),
            );
        }
        let _ = write!(
            out,
            "<line x1=\"{dx}\" x2=\"{dx}\" y1=\"2\" y2=\"{y2}\" stroke=\"#111\" stroke-width=\"2\" stroke-dasharray=\"5 3\"/>\
             <text x=\"{dx}\" y=\"{ty}\" font-size=\"12\" text-anchor=\"middle\">deadline {BARGE_IN_DEADLINE_MS} ms</text></svg>",
            y2 = h - 16.0,
            ty = h - 4.0,
        );
    }
    if !yields.is_empty() {
        out.push_str("<ul class=\"yields\">");
        for &(w, seen_at, ignored) in yields {
            let _ = write!(
                out,
                "<li>window {w}: <b>yield</b>, barge-in seen in window {seen_at}; {}</li>",
                if ignored {
                    "outbound went on past the deadline (above)"
                } else {
                    "the window's ledger finding records no outbound past the deadline"
                }
            );
        }
        out.push_str("</ul>");
    }
    if report.barge_ins_more > 0 {
        let _ = write!(
            out,
            "<p class=\"warn\" id=\"barge-ins-more\">{} more barge-in rows are not shown (at \
             most {MAX_BARGE_INS} of each kind are drawn).</p>",
            report.barge_ins_more
        );
    }
    out.push_str(
        "<p class=\"scale\">When the early yield was raised is not in the files; when outbound \
         audio last flowed after each barge-in is in stop-latency.cbor (Stop latency, below; \
         spec/REPORT.md).</p></section>",
    );
}

/// Whether a document is inside the final seal, as a paragraph: `{what} sealed: ...` or
/// `{what} not sealed: why`.
fn seal_note(out: &mut String, id: &str, what: &str, seal: &DocSeal) {
    let (class, text) = match seal {
        DocSeal::Sealed(kind) => (
            "ok",
            format!(
                "{what} sealed: the final seal (stream-seal/2) commits to this {kind} document's \
                 digest, so the registry and the witnesses cover it"
            ),
        ),
        DocSeal::NotSealed(why) => ("bad", format!("{what} not sealed: {why}")),
    };
    let _ = write!(
        out,
        "<p class=\"seal-note {class}\" id=\"{id}\">{}</p>",
        esc(&text)
    );
}

/// The stop-latency section (`stop_latency::html_section`) with, when the call has the
/// document, whether the final seal commits to it.
fn stop_latency(out: &mut String, report: &Report) {
    let mut section = String::new();
    crate::commands::stop_latency::html_section(&mut section, &report.stop_latency, esc);
    let note = report.stop_latency.doc.as_ref().map(|_| {
        let mut p = String::new();
        seal_note(
            &mut p,
            "stop-latency-seal",
            "stop latency",
            &doc_seal(&report.store, crate::commands::stop_latency::FILE),
        );
        p
    });
    match (note, section.strip_suffix("</section>")) {
        (Some(p), Some(body)) => {
            out.push_str(body);
            out.push_str(&p);
            out.push_str("</section>");
        }
        (Some(p), None) => {
            out.push_str(&section);
            out.push_str(&p);
        }
        (None, _) => out.push_str(&section),
    }
}

/// τ-voice's interaction panel from `interaction-metrics.cbor` (spec/REPORT.md, section 4b).
fn interaction(
    out: &mut String,
    report: &Report,
    doc: Option<&InteractionDocument>,
    marks: Option<&Marks>,
) {
    let ev = &report.interaction;
    out.push_str("<section id=\"interaction\"><h2>Interaction panel (τ-voice)</h2>");
    if !ev.problems.is_empty() {
        out.push_str(
            "<p class=\"badge bad\" id=\"interaction-status\">NOT VERIFIED: interaction-metrics.cbor \
             does not verify or is not bound to these receipts; its panel and events are not drawn</p>\
             <ul class=\"problems\" id=\"interaction-problems\">",
        );
        for p in &ev.problems {
            let _ = write!(out, "<li>{}</li>", esc(p));
        }
        out.push_str("</ul></section>");
        return;
    }
    let (Some(doc), Some(marks)) = (doc, marks) else {
        out.push_str(
            "<p class=\"badge unknown\" id=\"interaction-status\">No interaction panel: this run \
             directory has no interaction-metrics.cbor (its writer did not measure the panel, as \
             runs made before interaction-metrics/1 did not), so response, yield, selectivity and agent interruptions are not \
             measured for this call.</p></section>",
        );
        return;
    };
    let panel = doc.panel();
    let tick_ns = doc.config.tick_ns;
    let _ = write!(
        out,
        "<p class=\"doc-ok\" id=\"interaction-status\">interaction-metrics/1 verified and bound \
         to the receipts: {n} events over {frames} frames of {tick} (stream <span class=\"mono\">{stream}</span>, \
         steward <span class=\"mono\">{steward}</span>, {windows} windows)</p>",
        n = doc.events.len(),
        frames = doc.frame_count,
        tick = esc(&secs(1, tick_ns)),
        stream = esc(&doc.stream_id),
        steward = esc(&doc.steward),
        windows = doc.window_count,
    );
    seal_note(
        out,
        "interaction-seal",
        "interaction panel",
        &doc_seal(&report.store, crate::commands::interaction::FILE),
    );
    out.push_str(
        "<table id=\"interaction-panel\"><thead><tr><th>metric</th><th>τ-voice field</th>\
         <th>value</th><th>events behind it</th></tr></thead><tbody>",
    );
    for (short, field, value, behind) in crate::commands::interaction::panel_rows(&panel) {
        let unit = if field.ends_with("latency_mean") {
            " s"
        } else {
            ""
        };
        let shown = value.map_or_else(
            || "none (no event to compute it from)".to_owned(),
            |v| format!("{v}{unit}"),
        );
        let name = match field {
            "yield_rate" => format!(
                "R_Y at τ-voice's {} no-yield window",
                secs(1, doc.config.no_yield_window_ns)
            ),
            "yield_rate_deadline" => format!("R_Y at the {BARGE_IN_DEADLINE_MS} ms deadline"),
            _ => short.to_owned(),
        };
        let _ = write!(
            out,
            "<tr data-metric=\"{f}\"><th>{s}</th><td><code>{f}</code></td><td class=\"n\">{v}</td><td>{b}</td></tr>",
            f = esc(field),
            s = esc(&name),
            v = esc(&shown),
            b = esc(&behind),
        );
    }
    out.push_str("</tbody></table>");
    out.push_str(
        "<table id=\"interaction-windows\"><thead><tr><th>detection window</th><th>length</th>\
         <th>ns</th><th>frames</th></tr></thead><tbody>",
    );
    for (name, ns) in doc.config.fields() {
        let _ = write!(
            out,
            "<tr data-window-name=\"{n}\"><td><code>{n}</code></td><td class=\"n\">{s}</td>\
             <td class=\"n\">{ns}</td><td class=\"n\">{f}</td></tr>",
            n = esc(name),
            s = esc(&secs(1, ns)),
            f = ns / tick_ns.max(1),
        );
    }
    out.push_str("</tbody></table>");
    let c = &panel.counts;
    let _ = write!(
        out,
        "<p class=\"scale\">Counts: {} responses, {} no responses, {} yields ({} within the {} ms \
         deadline), {} no yields, backchannels {} correct / {} error, vocal tics {} / {}, \
         non-directed {} / {}, {} agent interruptions. Yield rate at the deadline: a yield whose \
         last agent-speech frame began at most 150 ms after the interruption's frame.</p>",
        c.response_count,
        c.no_response_count,
        c.yield_count,
        c.yield_within_deadline_count,
        BARGE_IN_DEADLINE_MS,
        c.no_yield_count,
        c.backchannel_correct_count,
        c.backchannel_error_count,
        c.vocal_tic_correct_count,
        c.vocal_tic_error_count,
        c.non_directed_correct_count,
        c.non_directed_error_count,
        c.agent_interrupts_count,
    );
    if doc.events.is_empty() {
        out.push_str("<p id=\"interaction-no-events\">No interaction event: the call has no user turn, interruption, backchannel, vocal tic, non-directed speech or agent start over the user.</p></section>");
        return;
    }
    out.push_str(
        "<table id=\"interaction-events\"><thead><tr><th>frame</th><th>time</th><th>window</th>\
         <th>event</th><th>latency</th></tr></thead><tbody>",
    );
    for e in shown_events(doc) {
        let (class, _) = event_style(e.kind);
        let _ = write!(
            out,
            "<tr class=\"ev-{class}\" data-kind=\"{k}\" data-frame=\"{f}\" data-window=\"{w}\"><td class=\"n\">{f}</td>\
             <td class=\"n\">{t}</td><td class=\"n\">{wt}</td><td>{k}</td><td class=\"n\">{l}</td></tr>",
            k = esc(e.kind.as_str()),
            f = e.tick,
            w = e.window_id.map_or_else(String::new, |w| w.to_string()),
            wt = e.window_id.map_or_else(
                || "none (no tick in the frame)".to_owned(),
                |w| w.to_string()
            ),
            t = esc(&secs(e.tick, tick_ns)),
            l = e.latency_ticks.map_or_else(String::new, |l| esc(&format!(
                "{l} frames ({})",
                secs(l, tick_ns)
            ))),
        );
    }
    out.push_str("</tbody></table>");
    if !marks.off_timeline.is_empty() {
        let _ = write!(
            out,
            "<p class=\"warn\" id=\"interaction-off-timeline\">{} events are not on the timeline: \
             their frame had no tick, or their window has no column (listed above).</p>",
            marks.off_timeline.len()
        );
    }
    if marks.more > 0 {
        let _ = write!(
            out,
            "<p class=\"warn\" id=\"interaction-more\">{} more events are neither drawn nor \
             listed (the first {MAX_EVENTS_SHOWN} by frame are; the panel counts all).</p>",
            marks.more
        );
    }
    out.push_str("</section>");
}

fn summary(out: &mut String, report: &Report) {
    let c = &report.store.totals;
    let (pass, need_more, yields, fail) = (
        c.verdicts.pass,
        c.verdicts.need_more,
        c.verdicts.yields,
        c.verdicts.fail,
    );
    let (conforming, hallucination, ignored) = (
        c.conservation.conforming,
        c.conservation.hallucination,
        c.conservation.barge_in_ignored,
    );
    let range = match (c.first_window, c.last_window) {
        (Some(a), Some(b)) => format!("{a}–{b}"),
        _ => "none".to_owned(),
    };
    let _ = write!(
        out,
        "<section id=\"summary\"><h2>Summary</h2><table class=\"counts\"><tbody>\
         <tr><th>receipts</th><td class=\"n\" id=\"count-receipts\">{}</td><th>windows</th><td class=\"n\">{range}</td><th>empty windows (no receipt)</th><td class=\"n\">{}</td></tr>\
         <tr><th>verified</th><td class=\"n\" id=\"count-verified\">{}</td><th>ticks</th><td class=\"n\">{}</td><th>energy (µJ, as labelled in each receipt)</th><td class=\"n\">{}</td></tr>\
         <tr><th>inbound bytes</th><td class=\"n\">{}</td><th>outbound bytes</th><td class=\"n\">{}</td><th>substrate bytes (summary.json)</th><td class=\"n\">{}</td></tr>\
         <tr><th>pass</th><td class=\"n\">{pass}</td><th>yield</th><td class=\"n\" id=\"count-yield\">{yields}</td><th>need_more / fail</th><td class=\"n\">{need_more} / {fail}</td></tr>\
         <tr><th>conforming</th><td class=\"n\">{conforming}</td><th>hallucination</th><td class=\"n\" id=\"count-hallucination\">{hallucination}</td><th>barge-in ignored</th><td class=\"n\" id=\"count-barge-in-ignored\">{ignored}</td></tr>\
         </tbody></table></section>",
        c.receipts,
        c.empty_windows(),
        report.store.verified(),
        c.ticks,
        c.joules_uj,
        c.inbound_bytes,
        c.outbound_bytes,
        report
            .store
            .summary
            .as_ref()
            .map_or_else(|| "unknown".to_owned(), |s| s.substrate_bytes.to_string()),
    );
}

fn receipts_table(out: &mut String, report: &Report) {
    out.push_str(
        "<section id=\"receipts\"><h2>Receipts</h2><table><thead><tr><th>jsonl line, cbor item</th><th>window</th>\
         <th>closed_at</th><th>ticks</th><th>in B</th><th>out B</th><th>µJ</th><th>verdict</th>\
         <th>ledger finding</th><th>content hash (BLAKE3)</th><th>status</th></tr></thead><tbody>",
    );
    for row in &report.rows {
        let bad = if row.status.is_verified() {
            ""
        } else {
            " class=\"bad\""
        };
        let r = &row.receipt;
        let _ = write!(
            out,
            "<tr{bad}><td>{i}</td><td class=\"n\">{w}</td><td>{closed}</td>\
             <td class=\"n\">{t}</td><td class=\"n\">{a}</td><td class=\"n\">{b}</td>\
             <td class=\"n\">{j}</td><td>{v}</td><td>{f}</td><td class=\"hash\">{h}</td>\
             <td class=\"status\">{s}</td></tr>",
            i = place(row),
            w = r.window_id,
            closed = esc(&r.closed_at.to_string()),
            t = r.tick_count,
            a = r.inbound_bytes,
            b = r.outbound_bytes,
            j = r.joules_uj,
            v = esc(&verdict_text(&r.verdict)),
            f = esc(&finding_text(&r.conservation)),
            h = report
                .store
                .receipts
                .get(row.line as usize)
                .map_or_else(|| "-".to_owned(), |x| hex::encode(x.content_hash)),
            s = esc(&status_text(row.status)),
        );
    }
    let more = report
        .store
        .totals
        .receipts
        .saturating_sub(report.rows.len() as u64);
    if more > 0 {
        let _ = write!(
            out,
            "<tr id=\"rows-more\"><td colspan=\"11\">{more} more receipts are not listed (the \
             table shows the first {MAX_TABLE_ROWS}; the timeline and the summary cover all)</td></tr>"
        );
    }
    out.push_str("</tbody></table></section>");
}

/// The whole page.
pub(crate) fn render(report: &Report) -> String {
    let mut out = String::with_capacity(16_384 + report.rows.len() * 1_200);
    let store = &report.store;
    let total = store.receipts.len();
    let verified = store.verified();
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
    let problems = store.problem_count;
    match store.outcome() {
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
    out.push_str("</header>");
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
    // The panel and its events are drawn from a document that verified and is bound to these
    // receipts, never from one that is not.
    let drawn = report
        .interaction
        .doc
        .as_ref()
        .filter(|_| report.interaction.problems.is_empty());
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
