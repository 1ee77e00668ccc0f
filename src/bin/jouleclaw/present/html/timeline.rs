//! The timeline: one SVG strip per hundred columns, each column a window (or, at scale, a run
//! of windows): its verdict, ledger finding, bytes, rolling budget, signature, interaction
//! events.

use std::fmt::{self, Write as _};

use jouleclaw_interaction::{Event, InteractionDocument};
use jouleclaw_stack::stream::WindowConservationFinding;

use super::{
    LEFT, MAX_EVENTS_SHOWN, PLOT_W, STRIP, esc, event_style, event_text, finding_style,
    finding_text, kb, ms, verdict_style, verdict_text,
};
use crate::commands::report::{Col, MAX_COLUMNS, Report};

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
pub(super) fn shown_events(doc: &InteractionDocument) -> Vec<Event> {
    let mut events = doc.events.clone();
    events.sort_by_key(|e| (e.tick, e.kind));
    events.truncate(MAX_EVENTS_SHOWN);
    events
}

pub(super) fn marks(cols: &[Col], doc: &InteractionDocument) -> Marks {
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
            let cx = ex + w / 2.0;
            text(out, "letter f", (cx, Y_EVENTS + 14.0), font, label);
        }
        out.push_str("</g>");
    }
}

/// One strip's scale: column width, the largest bar and rolling sum, the font size, which
/// columns are labelled, and the interaction events per column (with the frame length).
struct Scale<'a> {
    col_w: f64,
    max_bar: u64,
    max_roll: u64,
    font: f64,
    label_every: usize,
    first_index: usize,
    events: Option<(&'a [Vec<Event>], u64)>,
}

impl Scale<'_> {
    /// A bar's height. The top 16 units of the bar panel are kept for the notes (overshoot,
    /// lateness).
    fn bar_y(&self, v: u64) -> f64 {
        (H_BARS - 16.0) * v as f64 / self.max_bar.max(1) as f64
    }

    /// A point of a rolling-sum line.
    fn roll_y(&self, v: u64) -> f64 {
        Y_ROLL + H_ROLL - H_ROLL * v as f64 / self.max_roll.max(1) as f64
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
    let scale = Scale {
        col_w,
        max_bar,
        max_roll,
        font: (col_w * 0.55).clamp(6.0, 13.0),
        label_every: if cols.len() <= 30 { 1 } else { 10 },
        first_index,
        events,
    };
    strip_frame(out, cols, &scale);
    let mut roll_out_pts = String::new();
    let mut roll_in_pts = String::new();
    for (k, c) in cols.iter().enumerate() {
        let x = LEFT + col_w * k as f64;
        column_bands(out, &scale, k, x, c);
        column_bars(out, &scale, x, c);
        if let Some((ri, ro)) = c.rolling {
            let cx = x + col_w / 2.0;
            let _ = write!(roll_in_pts, "{cx},{} ", scale.roll_y(ri));
            let _ = write!(roll_out_pts, "{cx},{} ", scale.roll_y(ro));
        }
        column_foot(out, &scale, k, x, c);
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

/// The strip's SVG element, its band names and axes.
fn strip_frame(out: &mut String, cols: &[Col], scale: &Scale<'_>) {
    let events = scale.events;
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
}

/// A column's group, its title, its id label, its verdict and ledger bands.
fn column_bands(out: &mut String, scale: &Scale<'_>, k: usize, x: f64, c: &Col) {
    let (col_w, font) = (scale.col_w, scale.font);
    let (vclass, vletter) = verdict_style(&c.verdict);
    let (fclass, fletter) = finding_style(&c.finding);
    // Narrow columns: a blank grey band is conforming, and the exact figures of a finding
    // are in the column's title and the table, not written over the neighbours.
    let fletter = if col_w < 14.0 && fletter == "ok" {
        ""
    } else {
        fletter
    };
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
    if (scale.first_index + k).is_multiple_of(scale.label_every) || c.gap_before > 0 {
        text(out, "wid", (x + col_w / 2.0, Y_ID), font, c.first);
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
}

/// A column's bytes in and out, the overshoot and lateness notes, the byte figures.
fn column_bars(out: &mut String, scale: &Scale<'_>, x: f64, c: &Col) {
    let (col_w, font) = (scale.col_w, scale.font);
    let notes = col_w >= 30.0;
    let half = (col_w - 2.0) / 2.0;
    let hin = scale.bar_y(c.inbound);
    let hout = scale.bar_y(c.outbound);
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
        let h = scale.bar_y(unaccounted.min(c.outbound));
        let _ = write!(
            out,
            "<rect class=\"overshoot\" x=\"{xo}\" y=\"{y}\" width=\"{half}\" height=\"{h}\"/>",
            xo = x + half,
            y = base - hout,
        );
    }
    if let (WindowConservationFinding::Hallucination { unaccounted }, true) = (c.finding, notes) {
        let note = format!("+{unaccounted} B");
        text(out, "note", (x + col_w / 2.0, Y_BARS + 11.0), font, note);
    }
    if let (
        WindowConservationFinding::BargeInIgnored {
            barge_in_ts_ns,
            outbound_ts_ns,
        },
        true,
    ) = (c.finding, notes)
    {
        let late = esc(&ms(outbound_ts_ns.saturating_sub(barge_in_ts_ns)));
        text(out, "note", (x + col_w / 2.0, Y_BARS + 10.0), font, late);
    }
    if col_w >= 40.0 {
        let figures = format!("{}|{}", kb(c.inbound), kb(c.outbound));
        text(
            out,
            "num",
            (x + col_w / 2.0, base + 12.0),
            font * 0.8,
            figures,
        );
    }
}

/// A column's signature mark, the gap before it, its interaction events; the group closed.
fn column_foot(out: &mut String, scale: &Scale<'_>, k: usize, x: f64, c: &Col) {
    let (col_w, font) = (scale.col_w, scale.font);
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
    if let Some((ev, tick_ns)) = scale
        .events
        .and_then(|(per_col, t)| Some((per_col.get(k)?, t)))
    {
        event_marks(out, ev, tick_ns, x, col_w);
    }
    out.push_str("</g>");
}

fn swatch(class: &str, letter: &str) -> String {
    format!(
        "<svg width=\"22\" height=\"16\" xmlns=\"http://www.w3.org/2000/svg\"><rect class=\"{class}\" \
         width=\"22\" height=\"16\"/><text class=\"letter{f}\" x=\"11\" y=\"12\" font-size=\"11\">{letter}</text></svg>",
        f = if class.starts_with("f-") { " f" } else { "" }
    )
}

pub(super) fn timeline(out: &mut String, report: &Report, marks: Option<&Marks>) {
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

/// A `<text>` of `class` centred on `(x, y)` in `font`-sized letters.
fn text(out: &mut String, class: &str, (x, y): (f64, f64), font: f64, content: impl fmt::Display) {
    let _ = write!(
        out,
        "<text class=\"{class}\" x=\"{x}\" y=\"{y}\" font-size=\"{font}\">{content}</text>"
    );
}
