//! The page's sections below the timeline: barge-ins, stop latency, the interaction panel, the
//! run's summary and the receipts table.

use std::fmt::Write as _;

use jouleclaw_interaction::{InteractionDocument, Panel};
use jouleclaw_stack::pipeline::format_ts;
use jouleclaw_stack::stream::{BARGE_IN_DEADLINE_MS, NS_PER_MS};

use super::stop_latency::deadline_row;
use super::timeline::{Marks, shown_events};
use super::{
    MAX_EVENTS_SHOWN, esc, event_style, finding_text, ms, place, secs, status_text, verdict_text,
};
use crate::commands::report::{DocSeal, MAX_BARGE_INS, MAX_TABLE_ROWS, Report, doc_seal};

pub(super) fn barge_ins(out: &mut String, report: &Report) {
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
            let head = format!(
                "<g class=\"interval\" data-window=\"{w}\"><text class=\"band\" x=\"4\" y=\"{ty}\">window {w}</text>",
                ty = y + 12.0,
            );
            let label = esc(&format!(
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
            ));
            deadline_row(
                out,
                &head,
                (y, y + 12.0, 16),
                "#e3892b",
                (wok, wfull),
                &label,
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

/// How many problems of the signed document `file` the verifier counted and did not name.
fn unnamed(report: &Report, file: &str) -> u64 {
    report
        .store
        .document_problem_count_of(file)
        .saturating_sub(report.store.document_problems_of(file).count() as u64)
}

/// The stop-latency section (`stop_latency::html_section`) with, when the call has the
/// document, whether the final seal commits to it.
pub(super) fn stop_latency(out: &mut String, report: &Report) {
    let mut section = String::new();
    let found = super::stop_latency::Found {
        doc: report.store.stop_latency.as_ref(),
        problems: report
            .store
            .document_problems_of(crate::commands::stop_latency::FILE)
            .collect(),
        more: unnamed(report, crate::commands::stop_latency::FILE),
    };
    super::stop_latency::html_section(&mut section, &found, esc);
    let note = found.doc.map(|_| {
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
pub(super) fn interaction(
    out: &mut String,
    report: &Report,
    doc: Option<&InteractionDocument>,
    marks: Option<&Marks>,
) {
    let problems: Vec<String> = report
        .store
        .document_problems_of(crate::commands::interaction::FILE)
        .map(ToString::to_string)
        .collect();
    out.push_str("<section id=\"interaction\"><h2>Interaction panel (τ-voice)</h2>");
    if !problems.is_empty() {
        out.push_str(
            "<p class=\"badge bad\" id=\"interaction-status\">NOT VERIFIED: interaction-metrics.cbor \
             does not verify or is not bound to these receipts; its panel and events are not drawn</p>\
             <ul class=\"problems\" id=\"interaction-problems\">",
        );
        for p in &problems {
            let _ = write!(out, "<li>{}</li>", esc(p));
        }
        super::stop_latency::more_item(out, unnamed(report, crate::commands::interaction::FILE));
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
    panel_table(out, doc, &panel);
    windows_table(out, doc);
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
    events_table(out, doc, marks);
    out.push_str("</section>");
}

/// The interaction panel's metrics, each with its τ-voice field and the events behind it.
fn panel_table(out: &mut String, doc: &InteractionDocument, panel: &Panel) {
    out.push_str(
        "<table id=\"interaction-panel\"><thead><tr><th>metric</th><th>τ-voice field</th>\
         <th>value</th><th>events behind it</th></tr></thead><tbody>",
    );
    for (short, field, value, behind) in crate::present::panel::panel_rows(panel) {
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
}

/// The detection windows the panel was measured with.
fn windows_table(out: &mut String, doc: &InteractionDocument) {
    let tick_ns = doc.config.tick_ns;
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
}

/// The events (the first [`MAX_EVENTS_SHOWN`] by frame), and what is not drawn or listed.
fn events_table(out: &mut String, doc: &InteractionDocument, marks: &Marks) {
    let tick_ns = doc.config.tick_ns;
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
}

pub(super) fn summary(out: &mut String, report: &Report) {
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

pub(super) fn receipts_table(out: &mut String, report: &Report) {
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
