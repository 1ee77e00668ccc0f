//! The wave-47 streaming pipeline, end to end, in one command:
//!
//! ```sh
//! cargo run --release --example wave47_streaming_pipeline
//! ```
//!
//! Simulates a duplex voice stream over 13 windows (2.6 s at 200 ms): the user asks about the
//! weather, the agent answers, the user barges in, the agent bursts past its byte budget and
//! later ignores a second barge-in. Every tick goes through the window, the rolling
//! conservation ledger and a composite stream oracle (always-pass + barge-in detector + a
//! per-tick adapter over the per-request UTF-8 oracle); every window is minted as a
//! `stream-window/1` receipt and signed as a COSE_Sign1; at the end every receipt is verified
//! again in one batch.
//!
//! Deterministic: `closed_at` comes from stream time (epoch 2026-06-05T00:00:00Z) and the
//! signing key is the published RFC 8032 TEST 1 key, so the receipts are byte-identical on every
//! run. `tests/demo.rs` compares them with `examples/golden/`.

use jouleclaw_stack::jcr1::cose::{self, SingleKey};
use jouleclaw_stack::pipeline::{demo, format_ts};
use jouleclaw_stack::stream::WindowConservationFinding;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pipeline = demo::pipeline()?;
    let key = pipeline.verifying_key();
    drop(pipeline);

    println!(
        "jouleclaw wave-47 streaming pipeline: {} windows of 200 ms, stream {:?}",
        demo::WINDOWS,
        demo::STREAM_ID
    );
    println!(
        "signing key: RFC 8032 TEST 1 (public test key, demo only), kid {}",
        hex::encode(cose::kid(&key))
    );
    println!();
    println!("events on the tick:");
    let run = demo::run()?;
    let mut previous = WindowConservationFinding::Conforming;
    for o in &run.outcomes {
        if let Some(v) = &o.early {
            println!(
                "  {:>6}  window {:>2}  early {}: barge-in on this tick, stop outbound within 150 ms",
                format_ts(o.ts_ns),
                o.window_id,
                v.kind_str()
            );
        }
        match o.finding {
            WindowConservationFinding::Hallucination { unaccounted } if previous.rank() == 0 => {
                println!(
                    "  {:>6}  window {:>2}  Hallucination: outbound {unaccounted} B past the rolling budget",
                    format_ts(o.ts_ns),
                    o.window_id
                );
            }
            WindowConservationFinding::BargeInIgnored { barge_in_ts_ns, .. } => {
                println!(
                    "  {:>6}  window {:>2}  BargeInIgnored: outbound {} after the barge-in at {}",
                    format_ts(o.ts_ns),
                    o.window_id,
                    format_ts(o.ts_ns - barge_in_ts_ns),
                    format_ts(barge_in_ts_ns)
                );
            }
            _ => {}
        }
        previous = o.finding;
    }
    println!();
    println!("receipts (window, ticks, verdict, conservation, content hash):");
    for w in &run.windows {
        let r = &w.receipt;
        println!(
            "  {:>2}  {:>2} ticks  {:<9} {:<17} {}",
            r.window_id,
            r.tick_count,
            r.verdict.kind_str(),
            r.conservation.kind_str(),
            &w.content_hash.to_hex()[..16]
        );
    }

    // Verify every receipt again, in one batch, from its COSE bytes alone.
    let items: Vec<&[u8]> = run.windows.iter().filter_map(|w| w.cose_sign1()).collect();
    let results = cose::verify_batch(&items, &SingleKey::new(key));
    let verified = results
        .iter()
        .zip(&run.windows)
        .filter(|(r, w)| matches!(r, Ok(v) if v.content_hash == w.content_hash))
        .count();

    println!();
    println!(
        "verified: {verified}/{} COSE_Sign1 receipts (Ed25519, batch)",
        run.windows.len()
    );
    if verified != run.windows.len() {
        return Err("a receipt failed verification".into());
    }
    Ok(())
}
