//! τ-voice's interaction panel (spec/INTERACTION-METRICS-V1.md) as rows: printed as a text
//! table by `jouleclaw metrics interaction`, drawn by the report page.

use jouleclaw_interaction::Panel;

/// A figure with `digits` decimals, or `-` when there is none.
pub(crate) fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |x| format!("{x:.digits$}"))
}

/// A row's τ-voice short name, field name, and what the events behind it are.
struct Row {
    short: &'static str,
    field: &'static str,
    events: &'static str,
}

/// The panel's rows, in τ-voice's order.
const ROWS: [Row; 9] = [
    Row {
        short: "L_R",
        field: "response_latency_mean",
        events: "responses",
    },
    Row {
        short: "L_Y",
        field: "yield_latency_mean",
        events: "yields",
    },
    Row {
        short: "R_R",
        field: "response_rate",
        events: "user turns",
    },
    Row {
        short: "R_Y",
        field: "yield_rate",
        events: "interruptions",
    },
    Row {
        short: "R_Y@150ms",
        field: "yield_rate_deadline",
        events: "within 150 ms",
    },
    Row {
        short: "I_A",
        field: "agent_interruption_rate",
        events: "agent interruptions",
    },
    Row {
        short: "S_BC",
        field: "selectivity_backchannel",
        events: "backchannels",
    },
    Row {
        short: "S_VT",
        field: "selectivity_vocal_tic",
        events: "vocal tics",
    },
    Row {
        short: "S_ND",
        field: "selectivity_non_directed",
        events: "non-directed",
    },
];

/// The panel's rows, as the table and the report show them: τ-voice's short name, its field
/// name, the value (`None`: no event to compute it from), the events behind it.
pub(crate) fn panel_rows(p: &Panel) -> [(&'static str, &'static str, Option<f64>, String); 9] {
    let c = &p.counts;
    let values = [
        p.response_latency_mean,
        p.yield_latency_mean,
        p.response_rate,
        p.yield_rate,
        p.yield_rate_deadline,
        p.agent_interruption_rate,
        p.selectivity_backchannel,
        p.selectivity_vocal_tic,
        p.selectivity_non_directed,
    ];
    let events = [
        c.response_count,
        c.yield_count,
        p.response_total(),
        p.yield_total(),
        c.yield_within_deadline_count,
        c.agent_interrupts_count,
        c.backchannel_correct_count + c.backchannel_error_count,
        c.vocal_tic_correct_count + c.vocal_tic_error_count,
        c.non_directed_correct_count + c.non_directed_error_count,
    ];
    std::array::from_fn(|i| {
        let row = &ROWS[i];
        let n = events[i];
        (
            row.short,
            row.field,
            values[i],
            format!("{n} {}", row.events),
        )
    })
}

/// The panel as a text table: metric, value, the events behind it.
pub(crate) fn table(p: &Panel) -> String {
    let mut out = format!("interaction panel over {} calls\n", p.counts.n_simulations);
    for (short, field, value, behind) in panel_rows(p) {
        let value = num(value, 4);
        out.push_str(&format!("{short:<10} {field:<26} {value:>8}  {behind}\n"));
    }
    out
}
