//! `import tau-voice` and `metrics interaction` through the `jouleclaw` binary, on hand-written
//! τ-voice-shaped simulations: the panel of the imported, signed calls; bad input refused with
//! a typed code and nothing written; a call that does not verify refused, never counted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use crate::support::{TempDir, assert_contains, code, jouleclaw, text, verify_unsealed};
use serde_json::{Value, json};

/// A simulation file from a trajectory: one token per 200 ms tick, `u` user speech, `a` agent
/// speech, `b` the user's backchannel action, `v` a vocal-tic insert, `n` a non-directed
/// insert (in the source effects), `.` silence.
fn simulation(id: &str, trajectory: &str) -> Value {
    let ticks: Vec<Value> = trajectory
        .split_whitespace()
        .enumerate()
        .map(|(i, t)| {
            let insert = if t.contains('v') {
                json!({"speech_insert": {"text": "um", "type": "vocal_tic"}, "dynamic_muffling_enabled": false})
            } else {
                Value::Null
            };
            let source = if t.contains('n') {
                json!({"burst_noise_file": null, "speech_insert": {"text": "hold on", "type": "non_directed_phrase"}})
            } else {
                Value::Null
            };
            json!({
                "tick_id": i,
                "timestamp": "2026-01-01T00:00:00",
                "agent_chunk": {"role": "assistant", "contains_speech": t.contains('a')},
                "user_chunk": {
                    "role": "user",
                    "contains_speech": t.contains('u'),
                    "turn_taking_action": {"action": if t.contains('b') { "backchannel" } else { "keep_talking" }},
                    "speech_effects": insert,
                    "source_effects": source,
                },
            })
        })
        .collect();
    json!({"id": id, "task_id": "1", "mode": "full_duplex", "ticks": ticks})
}

fn write(t: &TempDir, name: &str, v: &Value) -> PathBuf {
    t.write(name, serde_json::to_vec(v).unwrap())
}

fn import(sims: &[&Path], out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"import", &"tau-voice"];
    for s in sims {
        args.push(s);
    }
    args.push(&"--out");
    args.push(&out);
    args.push(&"--quiet");
    for e in extra {
        args.push(e);
    }
    jouleclaw(&args)
}

fn metrics(dirs: &[PathBuf]) -> std::process::Output {
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"metrics", &"interaction", &"--json"];
    for d in dirs {
        args.push(d);
    }
    jouleclaw(&args)
}

// Call a: a turn answered 2 ticks later, a backchannel talked through, a vocal tic in silence
// ignored. Call b: an interruption yielded to 3 ticks later, then a turn answered 1 tick later;
// the agent starting over the user once.
const A: &str = "u u u . . a a a a aub a a a a a a a . . v . . . . . . . . . . . . . .";
const B: &str = "a a a au au a . . . . . . u u . a a . u au u . . .";

#[test]
fn import_writes_its_trace_through_the_stores_writer_never_over_a_fifo_or_an_input() {
    let t = TempDir::new("ix-dest");
    let a = write(&t, "a.json", &simulation("call-a", A));
    let out = t.path("out");
    std::fs::create_dir_all(out.join("call-a")).unwrap();
    // A FIFO at the trace's name: refused (exit 2) before the run, and left a FIFO.
    let trace = out.join("call-a").join("tau-voice.trace.jsonl");
    let made = std::process::Command::new("mkfifo").arg(&trace).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let o = import(&[&a], &out, &[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_contains(&o, "device, FIFO or socket");
    use std::os::unix::fs::FileTypeExt as _;
    assert!(
        std::fs::symlink_metadata(&trace)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert!(!out.join("call-a").join("receipts.jsonl").exists());
    // The simulation itself linked at the trace's name: refused, the simulation unchanged.
    std::fs::remove_file(&trace).unwrap();
    std::fs::hard_link(&a, &trace).unwrap();
    let before = std::fs::read(&a).unwrap();
    let o = import(&[&a], &out, &[]);
    assert_eq!(code(&o), 2, "{}", text(&o));
    assert_contains(&o, "one of the command's inputs");
    assert_eq!(std::fs::read(&a).unwrap(), before);
    // Nothing in the way: written, no staging file left beside it.
    std::fs::remove_file(&trace).unwrap();
    let o = import(&[&a], &out, &[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert!(trace.is_file());
    let left: Vec<_> = std::fs::read_dir(out.join("call-a"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn imported_calls_give_the_panel_by_taus_rules() {
    let t = TempDir::new("ix-ok");
    let a = write(&t, "a.json", &simulation("call-a", A));
    let b = write(&t, "b.json", &simulation("call-b", B));
    let out = t.path("out");
    let o = import(&[&a, &b], &out, &[]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    for name in ["call-a", "call-b"] {
        for f in [
            "interaction-metrics.cbor",
            "stop-latency.cbor",
            "receipts.jsonl",
            "seals.cbor",
            "tau-voice.trace.jsonl",
        ] {
            assert!(out.join(name).join(f).is_file(), "{name}/{f}");
        }
        let dir = out.join(name);
        let public = dir.join("signer.pub");
        let v = jouleclaw(&[&"receipts", &"verify", &"--pub", &public, &dir]);
        assert_eq!(code(&v), 0, "{}", text(&v));
        assert!(text(&v).contains("interaction-metrics.cbor: verified and bound to the receipts"));
    }
    let o = metrics(&[out.join("call-a"), out.join("call-b")]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    let p: Value = serde_json::from_slice(&o.stdout).unwrap();
    let t2 = 0.2f64;
    // Responses: a's turn 0-3 (agent at 5), b's turn 12-14 (agent at 15); b's last turn
    // (18-21) has no agent start after it and no next turn: no event. The agent starts over
    // the user at b's tick 19. b's interruption at 3 is yielded to at 6 (3 ticks).
    let la = 5.0 * t2 - (0.0 * t2 + 3.0 * t2);
    let lb = 15.0 * t2 - (12.0 * t2 + 2.0 * t2);
    assert_eq!(p["counts"]["n_simulations"], 2);
    assert_eq!(p["counts"]["response_total"], 2);
    assert_eq!(p["response_latency_mean"], json!((la + lb) / 2.0));
    assert_eq!(p["response_rate"], json!(1.0));
    assert_eq!(p["counts"]["yield_total"], 1);
    assert_eq!(p["yield_latency_mean"], json!(3.0 * t2));
    assert_eq!(p["yield_rate"], json!(1.0));
    assert_eq!(p["substrate"]["yield_rate_deadline"], json!(0.0));
    assert_eq!(p["counts"]["backchannel_total"], 1);
    assert_eq!(p["selectivity_backchannel"], json!(1.0));
    assert_eq!(p["counts"]["vocal_tic_total"], 1);
    assert_eq!(p["selectivity_vocal_tic"], json!(1.0));
    assert_eq!(p["counts"]["non_directed_total"], 0);
    assert_eq!(p["selectivity_non_directed"], Value::Null);
    assert_eq!(p["counts"]["agent_interrupts_count"], 1);
    assert_eq!(p["agent_interruption_rate"], json!(0.5));
    // One call given twice is refused, not counted twice.
    let o = metrics(&[out.join("call-a"), out.join("call-b"), out.join("call-a")]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "given twice");
    // The table names the same figures.
    let o = jouleclaw(&[
        &"metrics",
        &"interaction",
        &out.join("call-a"),
        &out.join("call-b"),
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "interaction panel over 2 calls");
}

#[test]
fn bad_simulations_are_refused_and_nothing_is_written() {
    let t = TempDir::new("ix-bad");
    let good = write(&t, "good.json", &simulation("good", A));
    let mut shuffled = simulation("shuffled", A);
    shuffled["ticks"][3]["tick_id"] = json!(7);
    let mut wrong_type = simulation("typed", A);
    wrong_type["ticks"][2]["user_chunk"]["contains_speech"] = json!("yes");
    let cases: Vec<(PathBuf, &str)> = vec![
        (
            write(&t, "notsim.json", &json!({"messages": []})),
            "tau_not_simulation",
        ),
        (t.write("notjson.json", b"{\"ticks\": ["), "tau_not_json"),
        (
            write(&t, "empty.json", &json!({"ticks": []})),
            "tau_not_full_duplex",
        ),
        (
            write(&t, "shuffled.json", &shuffled),
            "tau_ticks_out_of_order",
        ),
        (write(&t, "typed.json", &wrong_type), "tau_bad_tick"),
    ];
    for (bad, code_name) in &cases {
        let out = t.path(&format!("out-{code_name}"));
        // The good file first: still nothing is written, since every file is read first.
        let o = import(&[&good, bad], &out, &[]);
        assert_eq!(code(&o), 1, "{code_name}: {}", text(&o));
        assert!(text(&o).contains(code_name), "{code_name}: {}", text(&o));
        assert!(!out.exists(), "{code_name}: {} was written", out.display());
    }
    // A 100 ms experiment.
    let results = write(
        &t,
        "results.json",
        &json!({"info": {"audio_native_config": {"tick_duration_seconds": 0.1}}}),
    );
    let out = t.path("out-tick");
    let r = results.to_str().unwrap();
    let o = import(&[&good], &out, &["--results", r]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "tau_tick_not_200ms");
    assert!(!out.exists());
    // Its neighbour: a 200 ms experiment imports.
    let results = write(
        &t,
        "results200.json",
        &json!({"info": {"audio_native_config": {"tick_duration_seconds": 0.2}}}),
    );
    let r = results.to_str().unwrap();
    let o = import(&[&good], &out, &["--results", r]);
    assert_eq!(code(&o), 0, "{}", text(&o));
}

#[test]
fn a_call_that_does_not_verify_is_refused_never_counted() {
    let t = TempDir::new("ix-tamper");
    let a = write(&t, "a.json", &simulation("call-a", A));
    let b = write(&t, "b.json", &simulation("call-b", B));
    let out = t.path("out");
    assert_eq!(code(&import(&[&a, &b], &out, &[])), 0);
    let (da, db) = (out.join("call-a"), out.join("call-b"));
    // Altered.
    let doc = da.join("interaction-metrics.cbor");
    let good = std::fs::read(&doc).unwrap();
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 1] ^= 1;
    std::fs::write(&doc, &bad).unwrap();
    let o = metrics(&[da.clone(), db.clone()]);
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "cose_bad_signature");
    assert!(o.stdout.is_empty(), "a panel was printed: {}", text(&o));
    // From another call.
    std::fs::copy(db.join("interaction-metrics.cbor"), &doc).unwrap();
    let o = metrics(std::slice::from_ref(&da));
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "stream_mismatch");
    // Missing: the final seal (stream-seal/2) commits to it.
    std::fs::remove_file(&doc).unwrap();
    let o = metrics(std::slice::from_ref(&da));
    assert_eq!(code(&o), 1, "{}", text(&o));
    assert_contains(&o, "document_missing");
    // Restored: counted again.
    std::fs::write(&doc, &good).unwrap();
    assert_eq!(code(&metrics(&[da, db])), 0);
}

#[test]
fn run_writes_the_interaction_document() {
    let t = TempDir::new("ix-run");
    let out = t.path("run");
    let o = jouleclaw(&[
        &"run",
        &"conformance/traces/duplex-demo.jsonl",
        &"--quiet",
        &"--out",
        &out,
    ]);
    assert_eq!(code(&o), 0, "{}", text(&o));
    assert_contains(&o, "interaction: ");
    assert!(out.join("interaction-metrics.cbor").is_file());
    let public = out.join("signer.pub");
    let v = verify_unsealed(&public, &out);
    assert_eq!(code(&v), 0, "{}", text(&v));
    assert_contains(
        &v,
        "interaction-metrics.cbor: verified and bound to the receipts",
    );
}
