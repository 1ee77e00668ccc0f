//! Hand-written trajectories: one token per 200 ms frame, separated by spaces. A token holds
//! `u` (user speech), `a` (agent speech), `b` (backchannel), `v` (vocal tic), `n` (non-directed
//! speech), or is `.` (silence).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jouleclaw_interaction::tau_voice::{TauFrame, TauSimulation, simulation_ticks};
use jouleclaw_interaction::{Event, InteractionConfig, InteractionMeter};
use jouleclaw_stream::StreamSpec;

/// The frames of `spec`.
pub fn frames(spec: &str) -> TauSimulation {
    let frames = spec
        .split_whitespace()
        .map(|t| TauFrame {
            user_speech: t.contains('u'),
            agent_speech: t.contains('a'),
            backchannel: t.contains('b'),
            vocal_tic: t.contains('v'),
            non_directed: t.contains('n'),
        })
        .collect();
    TauSimulation { id: None, frames }
}

/// The events of `spec` measured with `config`, fed through the importer's ticks.
pub fn events_with(config: InteractionConfig, spec: &str) -> Vec<Event> {
    let layout = StreamSpec::duplex_voice_default();
    let mut meter = InteractionMeter::new(config).unwrap();
    for t in simulation_ticks(&frames(spec)) {
        let dir = layout
            .channels
            .iter()
            .find(|c| c.id == t.channel_id)
            .unwrap()
            .direction;
        meter.observe(&t, dir).unwrap();
    }
    meter.finish().unwrap().to_vec()
}

/// The events of `spec` with the default windows.
pub fn events(spec: &str) -> Vec<Event> {
    events_with(InteractionConfig::default(), spec)
}

/// `(kind, tick, latency in frames)` of each event.
pub fn brief(spec: &str) -> Vec<(&'static str, u64, Option<u64>)> {
    events(spec)
        .iter()
        .map(|e| (e.kind.as_str(), e.tick, e.latency_ticks))
        .collect()
}
