//! The interaction panel of τ-voice simulation files, measured without signing:
//! `cargo run -p jouleclaw-interaction --example tau_panel -- SIM.json...` prints the panel
//! (τ-voice's `interaction_metrics` block) as JSON, the files aggregated in the order given.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jouleclaw_interaction::tau_voice::{parse_simulation, simulation_ticks};
use jouleclaw_interaction::{InteractionConfig, InteractionMeter, PanelBuilder};
use jouleclaw_stream::{StreamSpec, duplex};

fn main() {
    let spec = StreamSpec::duplex_voice_default();
    let config = InteractionConfig::default();
    let mut panel = PanelBuilder::new(config);
    for path in std::env::args().skip(1) {
        let bytes = std::fs::read(&path).expect("read");
        let sim = parse_simulation(&bytes, None).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut meter = InteractionMeter::new(config).expect("config");
        for t in simulation_ticks(&sim) {
            let dir = spec
                .channels
                .iter()
                .find(|c| c.id == t.channel_id)
                .map(|c| c.direction)
                .expect("channel");
            meter.observe(&t, dir).expect("observe");
        }
        let events = meter.finish().expect("finish").to_vec();
        if std::env::var_os("EVENTS").is_some() {
            for e in &events {
                eprintln!("{} {} {:?}", e.kind.as_str(), e.tick, e.latency_ticks);
            }
        }
        panel.add(&config, &events).expect("add");
        let _ = duplex::TTS;
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&panel.panel().to_json()).expect("json")
    );
}
