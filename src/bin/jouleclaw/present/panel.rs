//! τ-voice's interaction panel (spec/INTERACTION-METRICS-V1.md) as rows: printed as a text
//! table by `jouleclaw metrics interaction`, drawn by the report page.

use jouleclaw_interaction::Panel;

/// A figure with `digits` decimals, or `-` when there is none.
pub(crate) fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |x| format!("{x:.digits$}"))
}

/// The panel's rows, as the table and the report show them: τ-voice's short name, its field
/// name, the value (`None`: no event to compute it from), the events behind it.
pub(crate) fn panel_rows(p: &Panel) -> [(&'static str, &'static str, Option<f64>, String); 9] {
    let c = &p.counts;
    [
        (
            "L_R",
            "response_latency_mean",
            p.response_latency_mean,
            format!("{} responses", c.response_count),
        ),
        (
            "L_Y",
            "yield_latency_mean",
            p.yield_latency_mean,
            format!("{} yields", c.yield_count),
        ),
        (
            "R_R",
            "response_rate",
            p.response_rate,
            format!("{} user turns", p.response_total()),
        ),
        (
            "R_Y",
            "yield_rate",
            p.yield_rate,
            format!("{} interruptions", p.yield_total()),
        ),
        (
            "R_Y@150ms",
            "yield_rate_deadline",
            p.yield_rate_deadline,
            format!("{} within 150 ms", c.yield_within_deadline_count),
        ),
        (
            "I_A",
            "agent_interruption_rate",
            p.agent_interruption_rate,
            format!("{} agent interruptions", c.agent_interrupts_count),
        ),
        (
            "S_BC",
            "selectivity_backchannel",
            p.selectivity_backchannel,
            format!(
                "{} backchannels",
                c.backchannel_correct_count + c.backchannel_error_count
            ),
        ),
        (
            "S_VT",
            "selectivity_vocal_tic",
            p.selectivity_vocal_tic,
            format!(
                "{} vocal tics",
                c.vocal_tic_correct_count + c.vocal_tic_error_count
            ),
        ),
        (
            "S_ND",
            "selectivity_non_directed",
            p.selectivity_non_directed,
            format!(
                "{} non-directed",
                c.non_directed_correct_count + c.non_directed_error_count
            ),
        ),
    ]
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
