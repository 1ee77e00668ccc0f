//! The panel: τ-voice's eight numbers and seven counts over one or more streams' events,
//! computed as τ-voice computes them (float for float).

use crate::error::{InteractionError, Result};
use crate::meter::{DEADLINE_NS, Event, EventKind, InteractionConfig};

/// The sum numpy's `add.reduce` gives for a contiguous float64 array (pairwise summation with
/// eight accumulators, blocks of 128), so that a mean is bit-for-bit pandas' `Series.mean()`.
pub fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        let mut res = 0.0;
        for x in a {
            res += x;
        }
        res
    } else if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - n % 8 {
            for (j, acc) in r.iter_mut().enumerate() {
                *acc += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        while i < n {
            res += a[i];
            i += 1;
        }
        res
    } else {
        let mut n2 = n / 2;
        n2 -= n2 % 8;
        pairwise_sum(&a[..n2]) + pairwise_sum(&a[n2..])
    }
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| pairwise_sum(v) / v.len() as f64)
}

fn rate(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

/// Every count of the panel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Counts {
    /// Streams added.
    pub n_simulations: u64,
    /// `response` events.
    pub response_count: u64,
    /// `no_response` events.
    pub no_response_count: u64,
    /// `yield` events.
    pub yield_count: u64,
    /// `no_yield` events.
    pub no_yield_count: u64,
    /// `yield` events whose agent stopped within the 150 ms deadline.
    pub yield_within_deadline_count: u64,
    /// `backchannel_correct` events.
    pub backchannel_correct_count: u64,
    /// `backchannel_error` events.
    pub backchannel_error_count: u64,
    /// `vocal_tic_correct` events.
    pub vocal_tic_correct_count: u64,
    /// `vocal_tic_error` events.
    pub vocal_tic_error_count: u64,
    /// `non_directed_correct` events.
    pub non_directed_correct_count: u64,
    /// `non_directed_error` events.
    pub non_directed_error_count: u64,
    /// `agent_interrupts_user` events.
    pub agent_interrupts_count: u64,
}

/// τ-voice's panel with the substrate's second yield rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// L_R: mean seconds from the end of a user turn to the agent's response.
    pub response_latency_mean: Option<f64>,
    /// L_Y: mean seconds from an interruption to the first frame without agent speech.
    pub yield_latency_mean: Option<f64>,
    /// R_R: `response / (response + no_response)`.
    pub response_rate: Option<f64>,
    /// R_Y: `yield / (yield + no_yield)`, the no-yield window (2 s).
    pub yield_rate: Option<f64>,
    /// The yield rate at the substrate's 150 ms deadline: interruptions after which the last
    /// agent speech frame started no later than 150 ms after the interruption's.
    pub yield_rate_deadline: Option<f64>,
    /// I_A: `agent_interrupts_user / (response + no_response)`.
    pub agent_interruption_rate: Option<f64>,
    /// S_BC: `1 - backchannel_error / backchannel_total`.
    pub selectivity_backchannel: Option<f64>,
    /// S_VT: `1 - vocal_tic_error / vocal_tic_total`.
    pub selectivity_vocal_tic: Option<f64>,
    /// S_ND: `1 - non_directed_error / non_directed_total`.
    pub selectivity_non_directed: Option<f64>,
    /// The counts behind them.
    pub counts: Counts,
    /// The detection windows.
    pub config: InteractionConfig,
}

/// Adds streams' events up the way τ-voice aggregates one domain: events concatenated in the
/// order the streams are added, counts summed, each mean over every latency.
#[derive(Debug, Clone)]
pub struct PanelBuilder {
    config: InteractionConfig,
    counts: Counts,
    response_latencies: Vec<f64>,
    yield_latencies: Vec<f64>,
}

impl PanelBuilder {
    /// An empty panel over `config`.
    pub fn new(config: InteractionConfig) -> Self {
        Self {
            config,
            counts: Counts::default(),
            response_latencies: Vec::new(),
            yield_latencies: Vec::new(),
        }
    }

    /// Adds one stream's events, measured with `config` (`config_mismatch` when it is not
    /// the panel's; nothing is added then).
    pub fn add(&mut self, config: &InteractionConfig, events: &[Event]) -> Result<()> {
        if *config != self.config {
            return Err(InteractionError::ConfigMismatch);
        }
        let t = self.config.tick_ns as f64 / 1e9;
        let c = &mut self.counts;
        c.n_simulations += 1;
        for e in events {
            match e.kind {
                EventKind::Response => {
                    c.response_count += 1;
                    // τ-voice: agent.start_time_sec - (user.start_time_sec + duration_sec).
                    let end = e.tick;
                    let agent = end + e.latency_ticks.unwrap_or(0);
                    let start = e.segment_tick;
                    let user_end = start as f64 * t + end.saturating_sub(start) as f64 * t;
                    self.response_latencies.push(agent as f64 * t - user_end);
                }
                EventKind::NoResponse => c.no_response_count += 1,
                EventKind::Yield => {
                    c.yield_count += 1;
                    let l = e.latency_ticks.unwrap_or(0);
                    if crate::document::within_deadline(&self.config, l) {
                        c.yield_within_deadline_count += 1;
                    }
                    self.yield_latencies.push(l as f64 * t);
                }
                EventKind::NoYield => c.no_yield_count += 1,
                EventKind::BackchannelCorrect => c.backchannel_correct_count += 1,
                EventKind::BackchannelError => c.backchannel_error_count += 1,
                EventKind::VocalTicCorrect => c.vocal_tic_correct_count += 1,
                EventKind::VocalTicError => c.vocal_tic_error_count += 1,
                EventKind::NonDirectedCorrect => c.non_directed_correct_count += 1,
                EventKind::NonDirectedError => c.non_directed_error_count += 1,
                EventKind::AgentInterruptsUser => c.agent_interrupts_count += 1,
            }
        }
        Ok(())
    }

    /// The panel.
    pub fn panel(&self) -> Panel {
        let c = self.counts;
        let response_total = c.response_count + c.no_response_count;
        let yield_total = c.yield_count + c.no_yield_count;
        let selectivity = |ok: u64, err: u64| rate(err, ok + err).map(|r| 1.0 - r);
        Panel {
            response_latency_mean: mean(&self.response_latencies),
            yield_latency_mean: mean(&self.yield_latencies),
            response_rate: rate(c.response_count, response_total),
            yield_rate: rate(c.yield_count, yield_total),
            yield_rate_deadline: rate(c.yield_within_deadline_count, yield_total),
            agent_interruption_rate: rate(c.agent_interrupts_count, response_total),
            selectivity_backchannel: selectivity(
                c.backchannel_correct_count,
                c.backchannel_error_count,
            ),
            selectivity_vocal_tic: selectivity(c.vocal_tic_correct_count, c.vocal_tic_error_count),
            selectivity_non_directed: selectivity(
                c.non_directed_correct_count,
                c.non_directed_error_count,
            ),
            counts: c,
            config: self.config,
        }
    }
}

impl Panel {
    /// The panel of one stream.
    pub fn of(config: &InteractionConfig, events: &[Event]) -> Self {
        let mut b = PanelBuilder::new(*config);
        // The config is the builder's own: `add` cannot refuse it.
        let _ = b.add(config, events);
        b.panel()
    }

    /// `response + no_response`.
    pub fn response_total(&self) -> u64 {
        self.counts.response_count + self.counts.no_response_count
    }

    /// `yield + no_yield`.
    pub fn yield_total(&self) -> u64 {
        self.counts.yield_count + self.counts.no_yield_count
    }

    /// τ-voice's `interaction_metrics` block: the eight fields and its seven counts, with the
    /// same names, then the substrate's additions (`yield_rate_deadline`, the event counts
    /// and the windows in seconds).
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let c = &self.counts;
        let cfg = &self.config;
        let s = |ns: u64| ns as f64 / 1e9;
        json!({
            "response_latency_mean": self.response_latency_mean,
            "yield_latency_mean": self.yield_latency_mean,
            "response_rate": self.response_rate,
            "yield_rate": self.yield_rate,
            "agent_interruption_rate": self.agent_interruption_rate,
            "selectivity_backchannel": self.selectivity_backchannel,
            "selectivity_vocal_tic": self.selectivity_vocal_tic,
            "selectivity_non_directed": self.selectivity_non_directed,
            "counts": {
                "n_simulations": c.n_simulations,
                "response_total": self.response_total(),
                "yield_total": self.yield_total(),
                "backchannel_total": c.backchannel_correct_count + c.backchannel_error_count,
                "vocal_tic_total": c.vocal_tic_correct_count + c.vocal_tic_error_count,
                "non_directed_total": c.non_directed_correct_count + c.non_directed_error_count,
                "agent_interrupts_count": c.agent_interrupts_count,
            },
            "substrate": {
                "yield_rate_deadline": self.yield_rate_deadline,
                "deadline_ns": DEADLINE_NS,
                "yield_within_deadline_count": c.yield_within_deadline_count,
                "response_count": c.response_count,
                "no_response_count": c.no_response_count,
                "yield_count": c.yield_count,
                "no_yield_count": c.no_yield_count,
                "backchannel_error_count": c.backchannel_error_count,
                "vocal_tic_error_count": c.vocal_tic_error_count,
                "non_directed_error_count": c.non_directed_error_count,
            },
            "config": {
                "tick_duration_sec": s(cfg.tick_ns),
                "no_yield_window_sec": s(cfg.no_yield_window_ns),
                "backchannel_yield_window_sec": s(cfg.backchannel_yield_window_ns),
                "vocal_tic_yield_window_sec": s(cfg.vocal_tic_yield_window_ns),
                "non_directed_yield_window_sec": s(cfg.non_directed_yield_window_ns),
                "vocal_tic_response_window_sec": s(cfg.vocal_tic_response_window_ns),
                "non_directed_response_window_sec": s(cfg.non_directed_response_window_ns),
            },
        })
    }
}
