//! The wave-47 demo's receipts against the checked-in golden files, and the shipped trace and
//! spec files against the demo story they are generated from.
//!
//! Golden files (`examples/golden/`):
//! - `wave47_streaming_pipeline.receipts.jsonl`: one canonical receipt per line;
//! - `wave47_streaming_pipeline.cose.hex`: the tagged COSE_Sign1 of each, lowercase hex per line.
//!
//! Regenerate them, and `conformance/traces/duplex-demo.jsonl` and
//! `conformance/traces/duplex-voice-default.spec.json`, with
//!
//! ```sh
//! JOULECLAW_REGEN_VECTORS=1 cargo test -p jouleclaw-stack --test it demo::
//! ```
//!
//! Regenerating is a deliberate decision, never a way to get a red test green: these files pin
//! the bytes a recorded stream produces. Regenerate only when a change to the receipts is
//! intended (a new demo story, a new schema version), and review the diff before committing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use jouleclaw_stack::jcr1::cose::{self, Signer, SingleKey, SoftwareSigner};
use jouleclaw_stack::jcr1::decode_receipt;
use jouleclaw_stack::pipeline::trace::{
    parse_trace_line, spec_from_json, spec_to_json, write_trace_line,
};
use jouleclaw_stack::pipeline::{ClosedWindow, demo};
use jouleclaw_stack::stream::StreamSpec;

fn root(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Writes `built` when `JOULECLAW_REGEN_VECTORS` is set, then asserts the file equals it.
fn check_generated(rel: &str, built: &str) {
    let path = root(rel);
    if std::env::var_os("JOULECLAW_REGEN_VECTORS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, built).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == built,
        "{rel} differs from what the demo produces; if the change is intended, regenerate \
         (see tests/demo.rs) and review the diff"
    );
}

fn receipts_jsonl(windows: &[ClosedWindow]) -> String {
    let mut out = String::new();
    for w in windows {
        out.push_str(std::str::from_utf8(w.canonical_bytes()).unwrap());
        out.push('\n');
    }
    out
}

fn cose_hex(windows: &[ClosedWindow]) -> String {
    windows
        .iter()
        .map(|w| hex::encode(w.cose_sign1().unwrap()) + "\n")
        .collect()
}

fn demo_trace() -> String {
    let spec = StreamSpec::duplex_voice_default();
    let mut out = String::new();
    for tick in demo::ticks() {
        write_trace_line(&tick, &spec, &mut out);
        out.push('\n');
    }
    out
}

#[test]
fn demo_receipts_match_the_golden_files() {
    let run = demo::run().unwrap();
    check_generated(
        "examples/golden/wave47_streaming_pipeline.receipts.jsonl",
        &receipts_jsonl(&run.windows),
    );
    check_generated(
        "examples/golden/wave47_streaming_pipeline.cose.hex",
        &cose_hex(&run.windows),
    );
}

#[test]
fn demo_is_deterministic() {
    let a = demo::run().unwrap();
    let b = demo::run().unwrap();
    assert_eq!(receipts_jsonl(&a.windows), receipts_jsonl(&b.windows));
    assert_eq!(cose_hex(&a.windows), cose_hex(&b.windows));
}

#[test]
fn golden_files_decode_and_verify_on_their_own() {
    let jsonl = std::fs::read_to_string(root(
        "examples/golden/wave47_streaming_pipeline.receipts.jsonl",
    ))
    .unwrap();
    let hexes = std::fs::read_to_string(root("examples/golden/wave47_streaming_pipeline.cose.hex"))
        .unwrap();
    let key = SingleKey::new(SoftwareSigner::rfc8032_test_key().verifying_key());
    let lines: Vec<&str> = jsonl.lines().collect();
    let envelopes: Vec<&str> = hexes.lines().collect();
    assert_eq!(lines.len() as u64, demo::WINDOWS);
    assert_eq!(envelopes.len(), lines.len());
    let mut kinds = Vec::new();
    for (i, (line, env)) in lines.iter().zip(&envelopes).enumerate() {
        let receipt = decode_receipt(line.as_bytes()).unwrap();
        assert_eq!(receipt.window_id, i as u64);
        let verified = cose::verify(&hex::decode(env).unwrap(), &key).unwrap();
        assert_eq!(verified.receipt, receipt);
        assert_eq!(verified.content_hash, blake3::hash(line.as_bytes()));
        kinds.push((
            receipt.verdict.kind_str(),
            receipt.conservation.kind_str(),
            receipt.closed_at.to_string(),
        ));
    }
    // The story the golden file pins: yield at 6, hallucination at 9, ignored barge-in at 10;
    // closed_at in stream time from 2026-06-05T00:00:00Z, as in the seed vectors.
    assert_eq!(kinds[6].0, "yield");
    assert_eq!(kinds[9].1, "hallucination");
    assert_eq!((kinds[10].0, kinds[10].1), ("yield", "barge_in_ignored"));
    assert_eq!(kinds[1].2, "2026-06-05T00:00:00Z");
    assert_eq!(kinds[7].2, "2026-06-05T00:00:01Z");
    assert_eq!(kinds[12].2, "2026-06-05T00:00:02Z");
}

#[test]
fn shipped_trace_and_spec_are_the_demo_story() {
    check_generated("conformance/traces/duplex-demo.jsonl", &demo_trace());
    check_generated(
        "conformance/traces/duplex-voice-default.spec.json",
        &spec_to_json(&StreamSpec::duplex_voice_default()),
    );
    let spec_text =
        std::fs::read_to_string(root("conformance/traces/duplex-voice-default.spec.json")).unwrap();
    assert_eq!(
        spec_from_json(&spec_text).unwrap(),
        StreamSpec::duplex_voice_default()
    );
}

#[test]
fn shipped_trace_replays_to_the_golden_receipts() {
    let spec = Arc::new(StreamSpec::duplex_voice_default());
    let trace = std::fs::read(root("conformance/traces/duplex-demo.jsonl")).unwrap();
    let mut p = demo::pipeline().unwrap();
    let mut windows = Vec::new();
    for line in trace.split(|&b| b == b'\n') {
        if let Some(tick) = parse_trace_line(line, &spec).unwrap() {
            windows.extend(p.push(tick).unwrap().closed);
        }
    }
    windows.extend(p.close_window().unwrap());
    let golden = std::fs::read_to_string(root(
        "examples/golden/wave47_streaming_pipeline.receipts.jsonl",
    ))
    .unwrap();
    assert_eq!(receipts_jsonl(&windows), golden);
}
