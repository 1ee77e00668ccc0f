//! The `jouleclaw` binary, run for real (`CARGO_BIN_EXE_jouleclaw`), every subcommand with good
//! and bad input, exit codes included (0 ok, 1 refusal or verification failure, 2 usage or I/O
//! error), and its output compared with the library's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::{
    TURN_TRACE, TempDir, code, drop_receipt_line, jouleclaw, resigned_documents, root,
    spawn_jouleclaw, verify_unsealed,
};
use jouleclaw_stack::jcr1::cose::{self, RFC8032_TEST1_SEED, Signer, SoftwareSigner};
use jouleclaw_stack::jcr1::decode_receipt;

const GOLDEN_JSONL: &str = "examples/golden/wave47_streaming_pipeline.receipts.jsonl";
const GOLDEN_COSE: &str = "examples/golden/wave47_streaming_pipeline.cose.hex";
const TRACE: &str = "conformance/traces/duplex-demo.jsonl";
const DEMO_EPOCH: &str = "2026-06-05T00:00:00Z";

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[track_caller]
fn expect(o: &Output, want: i32) {
    assert_eq!(
        code(o),
        want,
        "stdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
}

fn golden_lines() -> Vec<String> {
    std::fs::read_to_string(root(GOLDEN_JSONL))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn golden_cose() -> Vec<Vec<u8>> {
    std::fs::read_to_string(root(GOLDEN_COSE))
        .unwrap()
        .lines()
        .map(|l| hex::decode(l).unwrap())
        .collect()
}

fn test_key_file(dir: &TempDir) -> PathBuf {
    dir.write(
        "test.key",
        SoftwareSigner::from_seed(&RFC8032_TEST1_SEED)
            .key_file_text()
            .as_bytes(),
    )
}

fn test_pub_file(dir: &TempDir) -> PathBuf {
    let key = SoftwareSigner::rfc8032_test_key().verifying_key();
    dir.write("test.pub", cose::public_key_text(&key))
}

fn outputs_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

// ---------------------------------------------------------------------------------------------
// run

#[test]
fn run_reproduces_the_demo_receipts_byte_for_byte() {
    let t = TempDir::new("run");
    let out = t.path("out");
    let o = jouleclaw(&[&"run", &TRACE, &"--out", &out, &"--epoch", &DEMO_EPOCH]);
    expect(&o, 0);
    // Loud about the test key.
    assert!(
        stderr(&o).contains("PUBLISHED RFC 8032 TEST KEY"),
        "{}",
        stderr(&o)
    );
    // The per-window table shows the story.
    let table = stdout(&o);
    assert!(table.contains("yield@1.24s"), "{table}");
    assert!(table.contains("hallucination(+2048B)"), "{table}");
    assert!(table.contains("barge_in_ignored(2.02s->2.19s)"), "{table}");
    assert!(outputs_in(&out).iter().all(|n| !n.starts_with('.')));
    assert_eq!(
        std::fs::read_to_string(out.join("receipts.jsonl")).unwrap(),
        std::fs::read_to_string(root(GOLDEN_JSONL)).unwrap()
    );
    assert_eq!(
        std::fs::read(out.join("receipts.cbor")).unwrap(),
        golden_cose().concat()
    );
    let public =
        cose::parse_public_key_text(&std::fs::read_to_string(out.join("signer.pub")).unwrap())
            .unwrap();
    assert_eq!(public, SoftwareSigner::rfc8032_test_key().verifying_key());
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["receipts"], 13);
    assert_eq!(summary["signer"]["test_key"], true);
    assert_eq!(summary["verdicts"]["yield"], 2);
    assert_eq!(summary["conservation"]["hallucination"], 1);
    assert_eq!(summary["conservation"]["barge_in_ignored"], 1);
    assert_eq!(
        summary["outputs"]["receipts.jsonl"],
        blake3::hash(&std::fs::read(out.join("receipts.jsonl")).unwrap())
            .to_hex()
            .as_str()
    );

    // The quickstart's next step.
    let o = jouleclaw(&[
        &"receipts",
        &"verify",
        &"--pub",
        &out.join("signer.pub"),
        &out.join("receipts.cbor"),
    ]);
    expect(&o, 0);
    assert!(
        stdout(&o).starts_with("13 verified, 0 refused"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn run_default_epoch_is_stream_time_from_the_unix_epoch() {
    let t = TempDir::new("epoch");
    let out = t.path("out");
    expect(&jouleclaw(&[&"run", &TRACE, &"--out", &out, &"--quiet"]), 0);
    let first = std::fs::read_to_string(out.join("receipts.jsonl")).unwrap();
    let r = decode_receipt(first.lines().last().unwrap().as_bytes()).unwrap();
    assert_eq!(r.closed_at.to_string(), "1970-01-01T00:00:02Z");
    // A bad epoch is a usage error.
    let o = jouleclaw(&[
        &"run",
        &TRACE,
        &"--out",
        &t.path("o2"),
        &"--epoch",
        &"yesterday",
    ]);
    expect(&o, 2);
    assert!(!t.path("o2").join("summary.json").exists());
}

#[test]
fn run_with_a_key_signs_with_it_and_a_spec_file_gives_the_same_windows() {
    let t = TempDir::new("runkey");
    let key = t.path("k.key");
    let pubf = t.path("k.pub");
    expect(
        &jouleclaw(&[&"keygen", &"--out", &key, &"--pub-out", &pubf]),
        0,
    );
    let out = t.path("out");
    let spec = root("conformance/traces/duplex-voice-default.spec.json");
    let o = jouleclaw(&[
        &"run",
        &TRACE,
        &"--key",
        &key,
        &"--spec",
        &spec,
        &"--out",
        &out,
        &"--epoch",
        &DEMO_EPOCH,
        &"--steward",
        &"did:example:me",
        &"--stream-id",
        &"call-7",
    ]);
    expect(&o, 0);
    assert!(!stderr(&o).contains("TEST KEY"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(out.join("signer.pub")).unwrap(),
        std::fs::read(&pubf).unwrap()
    );
    let jsonl = std::fs::read_to_string(out.join("receipts.jsonl")).unwrap();
    let golden = golden_lines();
    for (line, want) in jsonl.lines().zip(&golden) {
        let (got, want) = (
            decode_receipt(line.as_bytes()).unwrap(),
            decode_receipt(want.as_bytes()).unwrap(),
        );
        assert_eq!(got.stream_id, "call-7");
        assert_eq!(got.steward, "did:example:me");
        assert_eq!(got.window_hash, want.window_hash);
        assert_eq!(got.verdict, want.verdict);
    }
    // Verifies with its own key, not with the test key.
    let cbor = out.join("receipts.cbor");
    expect(
        &jouleclaw(&[&"receipts", &"verify", &"--pub", &pubf, &cbor]),
        0,
    );
    let o = jouleclaw(&[&"receipts", &"verify", &"--pub", &test_pub_file(&t), &cbor]);
    expect(&o, 1);
    assert!(
        stderr(&o).contains("item 0: cose_unknown_kid"),
        "{}",
        stderr(&o)
    );
}

fn demo_trace_with(line_no: usize, replacement: &str) -> String {
    let trace = std::fs::read_to_string(root(TRACE)).unwrap();
    let mut lines: Vec<&str> = trace.lines().collect();
    lines[line_no - 1] = replacement;
    lines.join("\n") + "\n"
}

#[track_caller]
fn run_refused(t: &TempDir, trace_text: &str, want_code: i32, want: &str) {
    let trace = t.write("t.jsonl", trace_text);
    let out = t.path("out");
    let o = jouleclaw(&[&"run", &trace, &"--out", &out, &"--quiet"]);
    expect(&o, want_code);
    assert!(
        stderr(&o).contains(want),
        "want {want:?} in:\n{}",
        stderr(&o)
    );
    // Nothing half-written: no outputs, no temporary files.
    assert_eq!(outputs_in(&out), Vec::<String>::new());
}

#[test]
fn run_refuses_a_bad_line_by_number_and_leaves_nothing_behind() {
    let t = TempDir::new("badline");
    run_refused(
        &t,
        &demo_trace_with(20, "{not json"),
        1,
        "t.jsonl:20: trace_bad_json",
    );
    run_refused(
        &t,
        &demo_trace_with(
            30,
            r#"{"ts_ns":1850000000,"channel_id":9,"kind":"audio","bytes_len":4}"#,
        ),
        1,
        "t.jsonl:30: tick_unknown_channel",
    );
    run_refused(
        &t,
        &demo_trace_with(
            30,
            r#"{"ts_ns":1850000000,"channel_id":3,"kind":"noise","bytes_len":4}"#,
        ),
        1,
        "t.jsonl:30: trace_unknown_kind",
    );
    // A tick of an earlier window after a later one.
    run_refused(
        &t,
        &demo_trace_with(
            30,
            r#"{"ts_ns":10,"channel_id":1,"kind":"audio","bytes_len":4}"#,
        ),
        1,
        "t.jsonl:30: trace_window_regressed",
    );
    // Over-long line, refused without reading it whole.
    let long = format!(
        "{}{{\"ts_ns\":0,\"channel_id\":1,\"kind\":\"audio\",\"bytes_hex\":\"{}\"}}\n",
        "",
        "00".repeat(40_000)
    );
    run_refused(&t, &long, 1, "t.jsonl:1: trace_line_too_long");
    run_refused(&t, "\n\n", 1, "trace_empty");
    // The accepted neighbour: the same trace, unbroken, runs.
    let ok = t.write("ok.jsonl", std::fs::read(root(TRACE)).unwrap());
    expect(
        &jouleclaw(&[&"run", &ok, &"--out", &t.path("out"), &"--quiet"]),
        0,
    );
}

#[test]
fn run_usage_and_io_errors_exit_2() {
    let t = TempDir::new("runio");
    let out = t.path("out");
    expect(
        &jouleclaw(&[&"run", &t.path("missing.jsonl"), &"--out", &out]),
        2,
    );
    let bad_spec = t.write("bad.spec.json", "{\"tick_window_ms\":200}");
    expect(
        &jouleclaw(&[&"run", &TRACE, &"--spec", &bad_spec, &"--out", &out]),
        2,
    );
    let bad_key = t.write("bad.key", "not a key");
    expect(
        &jouleclaw(&[&"run", &TRACE, &"--key", &bad_key, &"--out", &out]),
        2,
    );
    expect(
        &jouleclaw(&[&"run", &TRACE, &"--stream-id", &"", &"--out", &out]),
        2,
    );
    assert!(!out.join("summary.json").exists());
    expect(&jouleclaw(&[&"run"]), 2);
    expect(&jouleclaw(&[]), 2);
    expect(&jouleclaw(&[&"frobnicate"]), 2);
    expect(&jouleclaw(&[&"--help"]), 0);
}

#[test]
fn run_mints_no_receipt_for_empty_windows_and_counts_them() {
    let t = TempDir::new("gap");
    let trace = t.write(
        "gap.jsonl",
        "{\"ts_ns\":0,\"channel_id\":1,\"kind\":\"audio\",\"bytes_len\":640}\n\
         {\"ts_ns\":1000000000,\"channel_id\":1,\"kind\":\"audio\",\"bytes_len\":640}\n",
    );
    let out = t.path("out");
    expect(&jouleclaw(&[&"run", &trace, &"--out", &out, &"--quiet"]), 0);
    let jsonl = std::fs::read_to_string(out.join("receipts.jsonl")).unwrap();
    let ids: Vec<u64> = jsonl
        .lines()
        .map(|l| decode_receipt(l.as_bytes()).unwrap().window_id)
        .collect();
    assert_eq!(ids, [0, 5]);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["empty_windows"], 4);
}

// ---------------------------------------------------------------------------------------------
// receipt decode | sign | verify

#[test]
fn receipt_decode_prints_the_content_hash_or_the_refusal_code() {
    let t = TempDir::new("decode");
    let line = &golden_lines()[6];
    let f = t.write("r.json", line);
    let o = jouleclaw(&[&"receipt", &"decode", &f]);
    expect(&o, 0);
    assert_eq!(
        stdout(&o).trim(),
        blake3::hash(line.as_bytes()).to_hex().as_str()
    );
    // The exact bytes: a trailing newline is refused.
    let f = t.write("nl.json", format!("{line}\n"));
    let o = jouleclaw(&[&"receipt", &"decode", &f]);
    expect(&o, 1);
    assert!(stderr(&o).contains("trailing_bytes"), "{}", stderr(&o));
    let f = t.write("ws.json", line.replacen("\":", "\": ", 1));
    let o = jouleclaw(&[&"receipt", &"decode", &f]);
    expect(&o, 1);
    assert!(stderr(&o).contains("whitespace"), "{}", stderr(&o));
    // A large file is refused by the streaming decoder at its limit.
    let f = t.write("big.json", vec![b'{'; 200_000]);
    expect(&jouleclaw(&[&"receipt", &"decode", &f]), 1);
    expect(&jouleclaw(&[&"receipt", &"decode", &t.path("missing")]), 2);
}

#[test]
fn receipt_sign_reproduces_the_golden_envelopes() {
    let t = TempDir::new("sign");
    let key = test_key_file(&t);
    let lines = golden_lines();
    let envelopes = golden_cose();
    let f = t.write("r.json", &lines[9]);
    let o = jouleclaw(&[&"receipt", &"sign", &"--key", &key, &f]);
    expect(&o, 0);
    assert_eq!(o.stdout, envelopes[9]);
    let out = t.path("r.cose");
    let o = jouleclaw(&[&"receipt", &"sign", &"--key", &key, &f, &"--out", &out]);
    expect(&o, 0);
    assert_eq!(std::fs::read(&out).unwrap(), envelopes[9]);
    assert!(stdout(&o).contains(blake3::hash(lines[9].as_bytes()).to_hex().as_str()));
    // A receipt that is not canonical is refused, not signed.
    let f = t.write("nl.json", format!("{}\n", lines[9]));
    let o = jouleclaw(&[&"receipt", &"sign", &"--key", &key, &f]);
    expect(&o, 1);
    assert!(stderr(&o).contains("trailing_bytes"));
    let bad_key = t.write("bad.key", "ABCD\n");
    expect(
        &jouleclaw(&[&"receipt", &"sign", &"--key", &bad_key, &t.path("r.json")]),
        2,
    );
    expect(&jouleclaw(&[&"receipt", &"sign", &t.path("r.json")]), 2);
}

#[test]
fn receipt_verify_prints_hash_and_receipt_or_the_refusal_code() {
    let t = TempDir::new("verify");
    let public = test_pub_file(&t);
    let lines = golden_lines();
    let env = golden_cose()[10].clone();
    let f = t.write("r.cose", &env);
    let o = jouleclaw(&[&"receipt", &"verify", &"--pub", &public, &f]);
    expect(&o, 0);
    let out = stdout(&o);
    let mut it = out.lines();
    assert_eq!(
        it.next().unwrap(),
        blake3::hash(lines[10].as_bytes()).to_hex().as_str()
    );
    assert_eq!(it.next().unwrap(), lines[10]);
    // One flipped signature byte.
    let mut bad = env.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let f = t.write("bad.cose", &bad);
    let o = jouleclaw(&[&"receipt", &"verify", &"--pub", &public, &f]);
    expect(&o, 1);
    assert!(stderr(&o).contains("cose_bad_signature"), "{}", stderr(&o));
    // Untagged.
    let f = t.write("untagged.cose", &env[1..]);
    let o = jouleclaw(&[&"receipt", &"verify", &"--pub", &public, &f]);
    expect(&o, 1);
    assert!(stderr(&o).contains("cose_untagged"), "{}", stderr(&o));
    // Another key.
    let other = t.write(
        "other.pub",
        cose::public_key_text(&SoftwareSigner::from_seed(&[7; 32]).verifying_key()),
    );
    let o = jouleclaw(&[&"receipt", &"verify", &"--pub", &other, &t.path("r.cose")]);
    expect(&o, 1);
    assert!(stderr(&o).contains("cose_unknown_kid"));
    let bad_pub = t.write("bad.pub", "zz\n");
    expect(
        &jouleclaw(&[&"receipt", &"verify", &"--pub", &bad_pub, &t.path("r.cose")]),
        2,
    );
    expect(
        &jouleclaw(&[&"receipt", &"verify", &"--pub", &public, &t.path("none")]),
        2,
    );
}

// ---------------------------------------------------------------------------------------------
// receipts verify

#[test]
fn receipts_verify_reports_every_bad_item_by_index() {
    let t = TempDir::new("batch");
    let public = test_pub_file(&t);
    let mut envelopes = golden_cose();
    let good = t.write("good.cbor", envelopes.concat());
    let o = jouleclaw(&[&"receipts", &"verify", &"--pub", &public, &good]);
    expect(&o, 0);
    assert!(stdout(&o).starts_with("13 verified, 0 refused"));
    for i in [3usize, 11] {
        let last = envelopes[i].len() - 1;
        envelopes[i][last] ^= 0x40;
    }
    let bad = t.write("bad.cbor", envelopes.concat());
    let o = jouleclaw(&[&"receipts", &"verify", &"--pub", &public, &bad]);
    expect(&o, 1);
    let err = stderr(&o);
    assert!(err.contains("item 3: cose_bad_signature"), "{err}");
    assert!(err.contains("item 11: cose_bad_signature"), "{err}");
    assert!(!err.contains("item 4:"), "{err}");
    assert!(stdout(&o).starts_with("11 verified, 2 refused"));
    // A sequence cut inside its last item.
    let all = golden_cose().concat();
    let cut = t.write("cut.cbor", &all[..all.len() - 5]);
    let o = jouleclaw(&[&"receipts", &"verify", &"--pub", &public, &cut]);
    expect(&o, 1);
    assert!(
        stderr(&o).contains("item 12: cose_malformed"),
        "{}",
        stderr(&o)
    );
    let empty = t.write("empty.cbor", b"");
    expect(
        &jouleclaw(&[&"receipts", &"verify", &"--pub", &public, &empty]),
        1,
    );
    expect(
        &jouleclaw(&[&"receipts", &"verify", &"--pub", &public, &t.path("none")]),
        2,
    );
}

// ---------------------------------------------------------------------------------------------
// vectors check

fn copy_conformance(t: &TempDir) -> PathBuf {
    let dir = t.path("conf");
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(root("conformance")).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
    }
    dir
}

#[test]
fn vectors_check_passes_the_shipped_vectors_and_fails_a_tampered_copy() {
    let o = jouleclaw(&[&"vectors", &"check"]);
    expect(&o, 0);
    let out = stdout(&o);
    let last = out.lines().last().unwrap();
    assert!(last.ends_with(" passed, 0 failed"), "{out}");
    assert!(out.contains("stream-window-signed-vectors.json"), "{out}");

    let t = TempDir::new("vectors");
    let dir = copy_conformance(&t);
    expect(&jouleclaw(&[&"vectors", &"check", &dir]), 0);
    // A negative case expecting another refusal code.
    let neg = dir.join("stream-window-negative-vectors.json");
    let text = std::fs::read_to_string(&neg).unwrap();
    std::fs::write(
        &neg,
        text.replacen(
            "\"expect_refusal\": \"whitespace\"",
            "\"expect_refusal\": \"syntax\"",
            1,
        ),
    )
    .unwrap();
    // A seed hash off by one digit.
    let seed = dir.join("stream-window-vectors.json");
    let text = std::fs::read_to_string(&seed).unwrap();
    std::fs::write(&seed, text.replacen("ee359043", "ee359044", 1)).unwrap();
    let o = jouleclaw(&[&"vectors", &"check", &dir]);
    expect(&o, 1);
    let out = stdout(&o);
    assert!(
        out.contains("FAIL stream-window-negative-vectors.json"),
        "{out}"
    );
    assert!(
        out.contains("FAIL stream-window-vectors.json vectors #1"),
        "{out}"
    );
    assert!(
        out.lines().last().unwrap().ends_with(" passed, 2 failed"),
        "{out}"
    );

    let empty = t.path("empty");
    std::fs::create_dir_all(&empty).unwrap();
    expect(&jouleclaw(&[&"vectors", &"check", &empty]), 1);
    expect(&jouleclaw(&[&"vectors", &"check", &t.path("nowhere")]), 2);
}

// ---------------------------------------------------------------------------------------------
// keygen

#[test]
fn keygen_writes_a_private_key_file_and_prints_its_public_key_and_kid() {
    let t = TempDir::new("keygen");
    let key = t.path("k.key");
    let o = jouleclaw(&[&"keygen", &"--out", &key]);
    expect(&o, 0);
    let signer = SoftwareSigner::read_key_file(&key).unwrap();
    let public = signer.verifying_key();
    let out = stdout(&o);
    assert!(
        out.contains(&format!("public_key {}", hex::encode(public.as_bytes()))),
        "{out}"
    );
    assert!(
        out.contains(&format!("kid {}", hex::encode(cose::kid(&public)))),
        "{out}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // Never overwrites.
    let before = std::fs::read(&key).unwrap();
    expect(&jouleclaw(&[&"keygen", &"--out", &key]), 2);
    assert_eq!(std::fs::read(&key).unwrap(), before);
    expect(&jouleclaw(&[&"keygen"]), 2);
}

// ---------------------------------------------------------------------------------------------
// replay

fn replay_fixtures() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(root("conformance/replay"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    files
}

#[test]
fn replay_holds_on_the_shipped_corpus_and_fails_a_broken_expectation() {
    let files = replay_fixtures();
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![&"replay"];
    args.extend(files.iter().map(|f| f as &dyn AsRef<std::ffi::OsStr>));
    expect(&jouleclaw(&args), 0);
    args.push(&"--json");
    let o = jouleclaw(&args);
    expect(&o, 0);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The report says what produced it, so two reports can be compared.
    let provenance = &report["provenance"];
    assert_eq!(provenance["jouleclaw_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(provenance["rule_set_version"], "commit-replay-rules/2");
    let rev = &provenance["git_revision"];
    assert!(
        rev.is_null() || rev.as_str().is_some_and(|r| r.len() == 40),
        "{rev}"
    );

    let t = TempDir::new("replay");
    let text =
        std::fs::read_to_string(root("conformance/replay/01_single_hold_burst.jsonl")).unwrap();
    let broken = text.replacen(
        "\"target_writes\":[\"alpha bravo charlie\"]",
        "\"target_writes\":[\"alpha bravo delta\"]",
        1,
    );
    assert_ne!(broken, text);
    let ok = t.write("ok.jsonl", &text);
    expect(&jouleclaw(&[&"replay", &ok]), 0);
    let bad = t.write("broken.jsonl", broken);
    let o = jouleclaw(&[&"replay", &bad]);
    expect(&o, 1);
    assert!(!stdout(&o).is_empty());
    expect(&jouleclaw(&[&"replay", &t.path("missing.jsonl")]), 2);
    expect(&jouleclaw(&[&"replay"]), 2);
}

// ---------------------------------------------------------------------------------------------
// transcribe

#[test]
fn transcribe_without_a_socket_says_so_and_refuses_a_non_wav_file() {
    let t = TempDir::new("transcribe");
    let wav = jouleclaw_stack::voice::WavAudio::from_pcm16_mono_16k(&[0u8; 3200]).unwrap();
    let wav = t.write("a.wav", wav.bytes());
    let socket = t.path("no-such.sock");
    let o = jouleclaw(&[&"transcribe", &"--socket", &socket, &wav]);
    expect(&o, 0);
    // No transcriber, and the measurement under it: a muted file is silence.
    assert_eq!(
        stdout(&o),
        "no transcriber\n1600 samples (100 ms), silence: every sample is zero\n"
    );
    // A file with sound in it has a level.
    let pcm: Vec<u8> = [16384i16, -16384]
        .repeat(800)
        .iter()
        .flat_map(|s| s.to_le_bytes())
        .collect();
    let loud = jouleclaw_stack::voice::WavAudio::from_pcm16_mono_16k(&pcm).unwrap();
    let loud_path = t.write("loud.wav", loud.bytes());
    let o = jouleclaw(&[&"transcribe", &"--socket", &socket, &loud_path]);
    expect(&o, 0);
    assert_eq!(
        stdout(&o),
        "no transcriber\n1600 samples (100 ms), peak -6.02 dBFS, RMS -6.02 dBFS\n"
    );
    // A file in another format is transcribed as before but not measured, and says why.
    let mut slow = loud.bytes().to_vec();
    slow[24..28].copy_from_slice(&8_000u32.to_le_bytes());
    slow[28..32].copy_from_slice(&16_000u32.to_le_bytes());
    let slow = t.write("slow.wav", &slow);
    let o = jouleclaw(&[&"transcribe", &"--socket", &socket, &slow]);
    expect(&o, 0);
    assert_eq!(
        stdout(&o),
        "no transcriber\nnot measured: 8000 Hz, 1 channel, 16-bit int (a turn is measured as 16 kHz 16-bit mono)\n"
    );
    let o = jouleclaw(&[
        &"transcribe",
        &"--socket",
        &socket,
        &"--max-wait",
        &"2.5",
        &wav,
    ]);
    expect(&o, 0);
    let not_wav = t.write("a.txt", "hello, not audio");
    let o = jouleclaw(&[&"transcribe", &"--socket", &socket, &not_wav]);
    expect(&o, 1);
    assert!(stderr(&o).contains("wav_invalid"), "{}", stderr(&o));
    // A socket path that exists but is not a server: a failed turn, never "no transcriber".
    let o = jouleclaw(&[
        &"transcribe",
        &"--socket",
        &not_wav,
        &"--max-wait",
        &"2",
        &wav,
    ]);
    expect(&o, 1);
    assert!(stderr(&o).contains("engine_"), "{}", stderr(&o));
    // The failed turn is measured too; no sentence and never "no transcriber".
    assert_eq!(
        stdout(&o),
        "1600 samples (100 ms), silence: every sample is zero\n"
    );
    expect(
        &jouleclaw(&[&"transcribe", &"--socket", &socket, &t.path("none.wav")]),
        2,
    );
    expect(
        &jouleclaw(&[
            &"transcribe",
            &"--socket",
            &socket,
            &"--max-wait",
            &"-1",
            &wav,
        ]),
        2,
    );
    expect(&jouleclaw(&[&"transcribe", &wav]), 2);
}

// ---------------------------------------------------------------------------------------------
// run --transcriber

#[test]
fn run_transcriber_without_a_socket_runs_the_stage_and_says_no_turn_is_transcribed() {
    let t = TempDir::new("transcriber-none");
    let trace = t.write("turn.jsonl", TURN_TRACE);
    let out = t.path("out");
    let socket = t.path("absent.sock");
    let o = jouleclaw(&[
        &"run",
        &trace,
        &"--out",
        &out,
        &"--transcriber",
        &format!("unix:{}", socket.display()),
    ]);
    expect(&o, 0);
    assert!(stderr(&o).contains("no transcriber at"), "{}", stderr(&o));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["stages"], serde_json::json!(["turn"]));
    assert_eq!(summary["oracle"][3], "transcription");
    // Unasked: no ASR tick joined window 1, which holds only the marker.
    let lines = std::fs::read_to_string(out.join("receipts.jsonl")).unwrap();
    let last = decode_receipt(lines.lines().last().unwrap().as_bytes()).unwrap();
    assert_eq!((last.window_id, last.tick_count), (1, 1));
    assert!(last.verdict.is_pass());
}

#[test]
fn run_transcriber_that_cannot_be_reached_fails_the_turn_window() {
    let t = TempDir::new("transcriber-dead");
    let trace = t.write("turn.jsonl", TURN_TRACE);
    let out = t.path("out");
    // A path that exists but is not a server: each turn fails visibly.
    let socket = t.write("not-a-server.sock", b"");
    let o = jouleclaw(&[
        &"run",
        &trace,
        &"--out",
        &out,
        &"--transcriber",
        &format!("unix:{}", socket.display()),
    ]);
    expect(&o, 0);
    let lines = std::fs::read_to_string(out.join("receipts.jsonl")).unwrap();
    let last = decode_receipt(lines.lines().last().unwrap().as_bytes()).unwrap();
    assert_eq!(last.window_id, 1);
    assert_eq!(last.verdict.kind_str(), "fail");
    assert!(stdout(&o).contains("fail"), "{}", stdout(&o));
    // Without --transcriber the same trace passes: the failure comes from the stage.
    let out2 = t.path("out2");
    expect(&jouleclaw(&[&"run", &trace, &"--out", &out2]), 0);
    let lines = std::fs::read_to_string(out2.join("receipts.jsonl")).unwrap();
    let last = decode_receipt(lines.lines().last().unwrap().as_bytes()).unwrap();
    assert!(last.verdict.is_pass());
}

#[test]
fn run_transcriber_needs_a_unix_path() {
    let t = TempDir::new("transcriber-usage");
    let trace = t.write("turn.jsonl", TURN_TRACE);
    for bad in ["/run/whisper.sock", "unix:", "tcp:127.0.0.1:1"] {
        let o = jouleclaw(&[
            &"run",
            &trace,
            &"--out",
            &t.path("o"),
            &"--transcriber",
            &bad,
        ]);
        expect(&o, 2);
        assert!(stderr(&o).contains("expected unix:PATH"), "{}", stderr(&o));
    }
}

// ---------------------------------------------------------------------------------------------
// A reader that goes away

/// Runs the binary with its standard output a pipe whose reading end is closed at once, as
/// `jouleclaw ... | head -0` would.
fn jouleclaw_stdout_closed(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut child = spawn_jouleclaw(args);
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_stdout_keeps_exit_codes_and_a_run_still_commits() {
    let o = jouleclaw_stdout_closed(&[&"vectors", &"check", &"conformance"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));

    let t = TempDir::new("epipe");
    let out = t.path("out");
    let o = jouleclaw_stdout_closed(&[&"run", &TRACE, &"--out", &out]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    assert_eq!(
        outputs_in(&out),
        outputs_in(&out)
            .iter()
            .filter(|n| !n.starts_with('.'))
            .cloned()
            .collect::<Vec<_>>()
    );
    assert!(out.join("summary.json").is_file());
    assert_eq!(
        jouleclaw_testkit::line_count(out.join("receipts.jsonl")),
        13
    );
    // A refusal with stdout closed is still exit 1, a usage error still exit 2.
    let bad = t.write("bad.jsonl", "{\n");
    assert_eq!(
        code(&jouleclaw_stdout_closed(&[
            &"run",
            &bad,
            &"--out",
            &t.path("o2")
        ])),
        1
    );
    assert_eq!(
        code(&jouleclaw_stdout_closed(&[
            &"run",
            &t.path("missing.jsonl")
        ])),
        2
    );
}

// ---------------------------------------------------------------------------------------------
// run: outputs all or nothing

#[test]
fn run_checks_every_destination_before_the_first_rename() {
    let t = TempDir::new("commit-phase");
    let out = t.path("out");
    expect(&jouleclaw(&[&"run", &TRACE, &"--out", &out, &"--quiet"]), 0);
    let before: Vec<Vec<u8>> = ["signer.pub", "receipts.jsonl", "summary.json"]
        .iter()
        .map(|n| std::fs::read(out.join(n)).unwrap())
        .collect();
    // A directory where receipts.cbor goes: a rename could not replace it.
    std::fs::remove_file(out.join("receipts.cbor")).unwrap();
    std::fs::create_dir(out.join("receipts.cbor")).unwrap();
    let other_key = t.write("other.sec", format!("{}\n", "11".repeat(32)));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&other_key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let o = jouleclaw(&[
        &"run",
        &TRACE,
        &"--out",
        &out,
        &"--key",
        &other_key,
        &"--stream-id",
        &"call-1",
        &"--quiet",
    ]);
    expect(&o, 2);
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    // Nothing was replaced: the earlier run's outputs are as they were, no temporary file left.
    let after: Vec<Vec<u8>> = ["signer.pub", "receipts.jsonl", "summary.json"]
        .iter()
        .map(|n| std::fs::read(out.join(n)).unwrap())
        .collect();
    assert_eq!(before, after);
    assert!(outputs_in(&out).iter().all(|n| !n.starts_with('.')));
}

#[test]
fn run_refuses_to_replace_its_own_input() {
    let t = TempDir::new("input-output");
    let out = t.path("out");
    std::fs::create_dir(&out).unwrap();
    let trace = out.join("receipts.jsonl");
    std::fs::copy(root(TRACE), &trace).unwrap();
    let o = jouleclaw(&[&"run", &trace, &"--out", &out]);
    expect(&o, 2);
    assert!(
        stderr(&o).contains("is one of the command's inputs"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read(&trace).unwrap(),
        std::fs::read(root(TRACE)).unwrap()
    );
    // The accepted neighbour: the same trace under another name in the same directory.
    let renamed = out.join("trace.jsonl");
    std::fs::rename(&trace, &renamed).unwrap();
    expect(
        &jouleclaw(&[&"run", &renamed, &"--out", &out, &"--quiet"]),
        0,
    );
}

#[test]
fn two_runs_never_write_one_directory_at_once() {
    let t = TempDir::new("locked");
    let out = t.path("out");
    std::fs::create_dir(&out).unwrap();
    let held = std::fs::File::open(&out).unwrap();
    held.lock().unwrap();
    let o = jouleclaw(&[&"run", &TRACE, &"--out", &out]);
    expect(&o, 2);
    assert!(
        stderr(&o).contains("another jouleclaw run"),
        "{}",
        stderr(&o)
    );
    assert!(outputs_in(&out).is_empty());
    held.unlock().unwrap();
    expect(&jouleclaw(&[&"run", &TRACE, &"--out", &out, &"--quiet"]), 0);
}

#[test]
fn a_failed_run_removes_the_directory_it_created_and_hashes_cover_every_output() {
    let t = TempDir::new("cleanup");
    let out = t.path("new-dir");
    let bad = t.write("bad.jsonl", "{\n");
    expect(&jouleclaw(&[&"run", &bad, &"--out", &out]), 1);
    assert!(!out.exists());
    // A directory that was there before a failed run stays.
    std::fs::create_dir(&out).unwrap();
    expect(&jouleclaw(&[&"run", &bad, &"--out", &out]), 1);
    assert!(out.is_dir());
    expect(&jouleclaw(&[&"run", &TRACE, &"--out", &out, &"--quiet"]), 0);
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    for name in ["signer.pub", "receipts.jsonl", "receipts.cbor"] {
        let want = blake3::hash(&std::fs::read(out.join(name)).unwrap());
        assert_eq!(summary["outputs"][name], want.to_hex().as_str(), "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// key and output files never clobber what they should not

#[test]
fn keygen_pub_out_never_replaces_the_secret_key() {
    let t = TempDir::new("keygen-pub");
    let key = t.path("k.sec");
    // The same path twice: refused, nothing written.
    let o = jouleclaw(&[&"keygen", &"--out", &key, &"--pub-out", &key]);
    expect(&o, 2);
    assert!(!key.exists());
    // A dangling symlink at --pub-out pointing at the secret: refused, and no secret is left.
    let link = t.path("k.pub");
    std::os::unix::fs::symlink(&key, &link).unwrap();
    let o = jouleclaw(&[&"keygen", &"--out", &key, &"--pub-out", &link]);
    expect(&o, 2);
    assert!(stderr(&o).contains("already exists"), "{}", stderr(&o));
    assert!(!key.exists());
    // Another spelling of the same path: the exclusive create of the public key fails, and
    // the new secret is removed again.
    let dotted = t.0.join(".").join("k2.sec");
    let key2 = t.path("k2.sec");
    let o = jouleclaw(&[&"keygen", &"--out", &key2, &"--pub-out", &dotted]);
    expect(&o, 2);
    assert!(!key2.exists());
    // The accepted neighbour: two distinct new paths, modes 0600 and 0644.
    let pubf = t.path("ok.pub");
    let sec = t.path("ok.sec");
    let o = jouleclaw(&[&"keygen", &"--out", &sec, &"--pub-out", &pubf]);
    expect(&o, 0);
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&sec), mode(&pubf)), (0o600, 0o644));
    let signer = SoftwareSigner::read_key_file(&sec).unwrap();
    assert_eq!(
        std::fs::read_to_string(&pubf).unwrap(),
        cose::public_key_text(&signer.verifying_key())
    );
}

#[test]
fn receipt_sign_out_never_replaces_an_input_or_follows_a_symlink() {
    let t = TempDir::new("sign-out");
    let key = test_key_file(&t);
    let key_before = std::fs::read(&key).unwrap();
    let receipt = t.write("r.json", golden_lines()[0].as_bytes());
    // --out naming the key: refused, the key unchanged.
    let o = jouleclaw(&[
        &"receipt", &"sign", &"--key", &key, &receipt, &"--out", &key,
    ]);
    expect(&o, 2);
    assert_eq!(std::fs::read(&key).unwrap(), key_before);
    // --out naming the receipt itself: refused.
    let o = jouleclaw(&[
        &"receipt", &"sign", &"--key", &key, &receipt, &"--out", &receipt,
    ]);
    expect(&o, 2);
    // A symlink at --out pointing at the key: refused (it is an input through the link).
    let link = t.path("sig.cose");
    std::os::unix::fs::symlink(&key, &link).unwrap();
    let o = jouleclaw(&[
        &"receipt", &"sign", &"--key", &key, &receipt, &"--out", &link,
    ]);
    expect(&o, 2);
    assert_eq!(std::fs::read(&key).unwrap(), key_before);
    // A symlink to some other file is replaced, never followed.
    let victim = t.write("victim", b"keep me");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let o = jouleclaw(&[
        &"receipt", &"sign", &"--key", &key, &receipt, &"--out", &link,
    ]);
    expect(&o, 0);
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
    assert!(
        !std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&link).unwrap(), golden_cose()[0]);
    assert!(outputs_in(&t.0).iter().all(|n| !n.starts_with('.')));
}

// ---------------------------------------------------------------------------------------------
// sealed runs: receipts verify DIR checks the whole stream

fn sealed_run(t: &TempDir, extra: &[&str]) -> PathBuf {
    let out = t.path("sealed");
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
        &"run",
        &TRACE,
        &"--seal-every",
        &"5",
        &"--epoch",
        &DEMO_EPOCH,
        &"--out",
        &out,
        &"--quiet",
    ];
    for a in extra {
        args.push(a);
    }
    expect(&jouleclaw(&args), 0);
    out
}

fn verify_dir(dir: &Path) -> Output {
    jouleclaw(&[
        &"receipts",
        &"verify",
        &"--pub",
        &dir.join("signer.pub"),
        &dir,
    ])
}

/// Rewrites `receipts.jsonl` and `receipts.cbor` of `dir` with the lines and items chosen by
/// `pick` (indices into the originals).
fn rewrite(dir: &Path, pick: &[usize]) {
    let lines: Vec<String> = std::fs::read_to_string(dir.join("receipts.jsonl"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let bytes = std::fs::read(dir.join("receipts.cbor")).unwrap();
    let items = cose::split_cbor_sequence(&bytes).unwrap();
    let mut jsonl = String::new();
    let mut cbor = Vec::new();
    for &i in pick {
        jsonl.push_str(&lines[i]);
        jsonl.push('\n');
        cbor.extend_from_slice(items[i]);
    }
    std::fs::write(dir.join("receipts.jsonl"), jsonl).unwrap();
    std::fs::write(dir.join("receipts.cbor"), cbor).unwrap();
}

#[test]
fn a_sealed_run_verifies_as_a_complete_stream() {
    let t = TempDir::new("sealed-ok");
    let dir = sealed_run(&t, &[]);
    let o = verify_dir(&dir);
    expect(&o, 0);
    assert!(
        stdout(&o).contains("stream complete: 13 receipts, 3 checkpoints"),
        "{}",
        stdout(&o)
    );
    // The receipts are the same bytes as an unsealed run's.
    assert_eq!(
        std::fs::read_to_string(dir.join("receipts.jsonl")).unwrap(),
        golden_lines()
            .iter()
            .map(|l| format!("{l}\n"))
            .collect::<String>()
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["signing"]["checkpoints"], 3);
    let want = blake3::hash(&std::fs::read(dir.join("seals.cbor")).unwrap());
    assert_eq!(summary["outputs"]["seals.cbor"], want.to_hex().as_str());
    // Layout stream-at-rest/2: no inclusion.cbor unless --inclusion-file.
    assert_eq!(summary["layout"], "stream-at-rest/2");
    assert!(!dir.join("inclusion.cbor").exists());
    assert!(summary["outputs"].get("inclusion.cbor").is_none());
    // An unsealed run into the same directory leaves no seals of the earlier run behind.
    expect(&jouleclaw(&[&"run", &TRACE, &"--out", &dir, &"--quiet"]), 0);
    assert!(!dir.join("seals.cbor").exists() && !dir.join("inclusion.cbor").exists());
    // Unsealed: every signature verifies, completeness is unknown, and that is not accepted
    // unless asked for.
    let o = verify_dir(&dir);
    expect(&o, 1);
    assert!(
        stdout(&o).contains("NOT SEALED: COMPLETENESS UNKNOWN"),
        "{}",
        stdout(&o)
    );
    let o = verify_unsealed(&dir.join("signer.pub"), &dir);
    expect(&o, 0);
    assert!(
        stdout(&o).contains(
            "13 receipts, 13 window signatures verified; NOT SEALED: COMPLETENESS UNKNOWN"
        ),
        "{}",
        stdout(&o)
    );
}

#[test]
fn receipts_verify_names_each_window_that_breaks_completeness() {
    let all: Vec<usize> = (0..13).collect();
    let cases: Vec<(&str, Vec<usize>, &str)> = vec![
        (
            "drop",
            [&all[..7], &all[8..]].concat(),
            "missing_window: window 7",
        ),
        (
            "repeat",
            [&all[..8], &[7], &all[8..]].concat(),
            "repeated_window",
        ),
        (
            "swap",
            [&all[..6], &[7, 6], &all[8..]].concat(),
            "reordered_window",
        ),
        ("truncate", all[..11].to_vec(), "tree_size_mismatch"),
    ];
    for (name, pick, want) in cases {
        let t = TempDir::new(&format!("sealed-{name}"));
        let dir = sealed_run(&t, &[]);
        rewrite(&dir, &pick);
        let o = verify_dir(&dir);
        expect(&o, 1);
        assert!(stderr(&o).contains(want), "{name}: {}", stderr(&o));
    }
    // A foreign receipt: window 13 of another stream, signed with the same key.
    let t = TempDir::new("sealed-foreign");
    let dir = sealed_run(&t, &[]);
    let other = t.path("other");
    expect(
        &jouleclaw(&[
            &"run",
            &TRACE,
            &"--stream-id",
            &"other-call",
            &"--out",
            &other,
            &"--quiet",
        ]),
        0,
    );
    let mut jsonl = std::fs::read_to_string(dir.join("receipts.jsonl")).unwrap();
    jsonl.push_str(
        std::fs::read_to_string(other.join("receipts.jsonl"))
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    );
    jsonl.push('\n');
    std::fs::write(dir.join("receipts.jsonl"), jsonl).unwrap();
    let o = verify_dir(&dir);
    expect(&o, 1);
    assert!(stderr(&o).contains("foreign_receipt"), "{}", stderr(&o));
}

#[test]
fn with_checkpoint_signatures_only_the_stream_still_verifies_and_a_gap_is_named() {
    let t = TempDir::new("sealed-none");
    let dir = sealed_run(&t, &["--window-signatures", "none"]);
    assert_eq!(std::fs::read(dir.join("receipts.cbor")).unwrap().len(), 0);
    let o = verify_dir(&dir);
    expect(&o, 0);
    assert!(
        stdout(&o).contains("0 window signatures and 13 inclusion receipts"),
        "{}",
        stdout(&o)
    );
    drop_receipt_line(&dir, 9);
    let o = verify_dir(&dir);
    expect(&o, 1);
    assert!(
        stderr(&o).contains("missing_window: window 9"),
        "{}",
        stderr(&o)
    );
    // Non-pass windows keep their own signature: windows 6 and 10 yield.
    let t = TempDir::new("sealed-nonpass");
    let dir = sealed_run(&t, &["--window-signatures", "non-pass"]);
    let bytes = std::fs::read(dir.join("receipts.cbor")).unwrap();
    assert_eq!(cose::split_cbor_sequence(&bytes).unwrap().len(), 2);
    expect(&verify_dir(&dir), 0);
}

// ---------------------------------------------------------------------------------------------
// run --llm-schema

const TOOL_TRACE: &str = "conformance/traces/tool-call.jsonl";
const TOOL_SCHEMA: &str = "crates/jouleclaw-structured/schemas/tool-call.schema.json";
const TOOL_GOLDEN: &str = "examples/golden/tool-call.receipts.jsonl";

#[test]
fn run_llm_schema_fails_the_off_schema_tool_call_on_its_tick_and_matches_the_golden_receipts() {
    let t = TempDir::new("llm-schema");
    let out = t.path("out");
    let o = jouleclaw(&[
        &"run",
        &TOOL_TRACE,
        &"--llm-schema",
        &TOOL_SCHEMA,
        &"--epoch",
        &DEMO_EPOCH,
        &"--out",
        &out,
    ]);
    expect(&o, 0);
    let got = std::fs::read_to_string(out.join("receipts.jsonl")).unwrap();
    if std::env::var_os("JOULECLAW_REGEN_VECTORS").is_some() {
        std::fs::write(root(TOOL_GOLDEN), &got).unwrap();
    }
    assert_eq!(got, std::fs::read_to_string(root(TOOL_GOLDEN)).unwrap());
    let receipts: Vec<_> = got
        .lines()
        .map(|l| decode_receipt(l.as_bytes()).unwrap())
        .collect();
    let kinds: Vec<&str> = receipts.iter().map(|r| r.verdict.kind_str()).collect();
    assert_eq!(kinds[2..5], ["need_more", "need_more", "pass"]);
    assert_eq!(kinds[10..12], ["fail", "fail"]);
    match &receipts[10].verdict {
        jouleclaw_stack::oracle::WindowVerdict::Fail { oracle, .. } => {
            assert!(oracle.starts_with("structured:"), "{oracle}")
        }
        other => panic!("{other:?}"),
    }
    // The early fail is printed with the tick that broke the schema.
    assert!(stdout(&o).contains("fail@2.01s"), "{}", stdout(&o));
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(
        summary["llm_schema"]["grammar_digest"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    expect(&verify_unsealed(&out.join("signer.pub"), &out), 0);
    // Without the schema the same windows pass: the failure comes from the grammar.
    let plain = t.path("plain");
    expect(
        &jouleclaw(&[&"run", &TOOL_TRACE, &"--out", &plain, &"--quiet"]),
        0,
    );
    let text = std::fs::read_to_string(plain.join("receipts.jsonl")).unwrap();
    let line = text.lines().nth(10).unwrap();
    assert!(decode_receipt(line.as_bytes()).unwrap().verdict.is_pass());
    // A schema outside the subset is a usage error naming the keyword.
    let bad = t.write("bad.json", r#"{"type":"object","patternProperties":{}}"#);
    let o = jouleclaw(&[
        &"run",
        &TOOL_TRACE,
        &"--llm-schema",
        &bad,
        &"--out",
        &t.path("x"),
    ]);
    expect(&o, 2);
    assert!(stderr(&o).contains("schema_"), "{}", stderr(&o));
}

/// An MCP `tools/list` result with one tool whose schema is refused (`not`).
const MCP_TOOLS: &str = r#"{"tools":[
 {"name":"read_file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}},
 {"name":"list_directory","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"$schema":"http://json-schema.org/draft-07/schema#"}},
 {"name":"move_file","inputSchema":{"type":"object","not":{"required":["x"]}}}]}"#;

#[test]
fn run_llm_tools_routes_each_call_by_its_name_and_names_a_refused_tool() {
    let t = TempDir::new("llm-tools");
    let tools = t.write("tools.json", MCP_TOOLS);
    // A valid call over two ticks, then a call of a tool the set does not hold.
    let trace = t.write(
        "trace.jsonl",
        concat!(
            r#"{"ts_ns":0,"channel_id":0,"kind":"marker","marker":"start"}"#, "\n",
            r#"{"ts_ns":100000000,"channel_id":4,"kind":"marker","marker":"start"}"#, "\n",
            r#"{"ts_ns":110000000,"channel_id":4,"kind":"text","bytes_hex":"7b226e616d65223a22726561645f66696c65222c2261726775"}"#, "\n",
            r#"{"ts_ns":310000000,"channel_id":4,"kind":"text","bytes_hex":"6d656e7473223a7b2270617468223a222f61227d7d"}"#, "\n",
            r#"{"ts_ns":320000000,"channel_id":4,"kind":"marker","marker":"end_of_turn"}"#, "\n",
            r#"{"ts_ns":700000000,"channel_id":4,"kind":"marker","marker":"start"}"#, "\n",
            r#"{"ts_ns":710000000,"channel_id":4,"kind":"text","bytes_hex":"7b226e616d65223a22726d5f7266222c22617267756d656e7473223a7b7d7d"}"#, "\n",
            r#"{"ts_ns":720000000,"channel_id":4,"kind":"marker","marker":"end_of_turn"}"#, "\n",
            r#"{"ts_ns":1000000000,"channel_id":0,"kind":"marker","marker":"end"}"#, "\n",
        ),
    );
    let out = t.path("out");
    let o = jouleclaw(&[
        &"run",
        &trace,
        &"--llm-tools",
        &tools,
        &"--out",
        &out,
        &"--quiet",
    ]);
    expect(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains("tool move_file left out (schema_unsupported_keyword)"),
        "{err}"
    );
    assert!(err.contains("2 tools in one grammar"), "{err}");
    let got = std::fs::read_to_string(out.join("receipts.jsonl")).unwrap();
    let verdicts: Vec<_> = got
        .lines()
        .map(|l| decode_receipt(l.as_bytes()).unwrap().verdict)
        .collect();
    // The valid call passes; the unknown name fails, by the toolset's grammar.
    let kinds: Vec<&str> = verdicts.iter().map(|v| v.kind_str()).collect();
    assert_eq!(kinds, ["need_more", "pass", "fail", "pass"], "{verdicts:?}");
    let fail = verdicts
        .iter()
        .find(|v| v.kind_str() == "fail")
        .expect("a fail");
    let text = format!("{fail:?}");
    assert!(
        text.contains("unknown_tag") && text.contains("structured:"),
        "{text}"
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("summary.json")).unwrap()).unwrap();
    assert!(
        summary["llm_schema"]["file"]
            .as_str()
            .unwrap()
            .ends_with("tools.json")
    );
    // --strict-tools refuses the run, naming the tool; --llm-schema beside it is a usage error.
    let o = jouleclaw(&[
        &"run",
        &trace,
        &"--llm-tools",
        &tools,
        &"--strict-tools",
        &"--out",
        &t.path("strict"),
    ]);
    expect(&o, 2);
    assert!(
        stderr(&o).contains("toolset_tool_refused"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("move_file"), "{}", stderr(&o));
    let o = jouleclaw(&[
        &"run",
        &trace,
        &"--llm-tools",
        &tools,
        &"--llm-schema",
        &TOOL_SCHEMA,
        &"--out",
        &t.path("both"),
    ]);
    expect(&o, 2);
}

// ---------------------------------------------------------------------------------------------
// bounded memory and reads

/// Runs the binary under a 1 GB address-space limit and a 30 s CPU limit, so that a regression
/// to reading whole inputs fails (or stops) instead of exhausting the machine.
fn jouleclaw_bounded(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1000000; ulimit -t 30; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_jouleclaw"))
        .args(args.iter().map(|a| a.as_ref()))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

#[test]
fn receipts_verify_streams_hostile_sequences_within_bounded_memory() {
    let t = TempDir::new("bounded");
    let key = test_pub_file(&t);
    // 4 MB of zero bytes: each is a CBOR item that is not a tagged COSE_Sign1. Read whole and
    // split eagerly this took ~670 bytes of memory per input byte (2.7 GB here, over the
    // limit).
    let zeros = t.path("zeros.cbor");
    std::fs::write(&zeros, vec![0u8; 4 << 20]).unwrap();
    let o = jouleclaw_bounded(&[&"receipts", &"verify", &"--pub", &key, &zeros]);
    expect(&o, 1);
    let err = stderr(&o);
    assert!(
        err.contains("item 0: cose_malformed"),
        "{}",
        &err[..200.min(err.len())]
    );
    assert!(err.contains("item 99: cose_malformed"));
    assert!(!err.contains("item 100:"));
    assert!(err.contains(&format!("and {} more refused items", (4 << 20) - 100)));
    // A public key file that never ends is read only as far as a key can be long.
    let o = jouleclaw_bounded(&[&"receipts", &"verify", &"--pub", &"/dev/zero", &zeros]);
    expect(&o, 2);
    // The golden sequence still verifies in this mode.
    let golden = t.path("golden.cbor");
    std::fs::write(&golden, golden_cose().concat()).unwrap();
    let o = jouleclaw_bounded(&[&"receipts", &"verify", &"--pub", &key, &golden]);
    expect(&o, 0);
    assert!(
        stdout(&o).contains("13 verified, 0 refused"),
        "{}",
        stdout(&o)
    );
}

// ---------------------------------------------------------------------------------------------
// The shared table of tampered stream directories (conformance/stream-at-rest-tamper.json):
// generated here from real runs, checked against the library verifier, `receipts verify`,
// `report` and `audit --dir`; conformance/verifiers/python/stream_tamper.py runs the same rows
// against verify_stream.py and the Python binding.

const TAMPER_TABLE: &str = "conformance/stream-at-rest-tamper.json";

/// The files of a run directory, by name, as hex (every file the layout names that exists, and
/// the run's `stop-latency.cbor`, which `receipts verify DIR` and `report` check beside them).
fn dir_files_hex(dir: &Path) -> serde_json::Map<String, serde_json::Value> {
    let mut files = serde_json::Map::new();
    let names = jouleclaw_stack::store::layout::COMMIT_ORDER
        .iter()
        .copied()
        .chain(["stop-latency.cbor", "interaction-metrics.cbor"]);
    for name in names {
        if let Ok(bytes) = std::fs::read(dir.join(name)) {
            files.insert(name.to_owned(), hex::encode(bytes).into());
        }
    }
    files
}

/// One tamper row: name, base, what was done, operations, expected outcome.
fn row(
    name: &str,
    base: &str,
    description: &str,
    ops: serde_json::Value,
    outcome: &str,
) -> serde_json::Value {
    let exit = if outcome == "complete" { 0 } else { 1 };
    let exit_allow_unsealed = if outcome == "failed" { 1 } else { 0 };
    serde_json::json!({
        "name": name,
        "base": base,
        "description": description,
        "ops": ops,
        "expect": {"outcome": outcome, "exit": exit, "exit_allow_unsealed": exit_allow_unsealed},
    })
}

/// A base's summary.json rewritten to match `files` (what an attacker who edits the unsigned
/// summary does): counts from the kept lines (as the verifier sums them), hashes of the kept
/// files, the policy an unsealed run records.
fn forged_summary(t: &TempDir, base_dir: &Path, files: &[(&str, Vec<u8>)]) -> String {
    use jouleclaw_stack::store::RunSummary;
    let mut s = RunSummary::parse(&std::fs::read(base_dir.join("summary.json")).unwrap()).unwrap();
    let scratch = t.path("forge");
    std::fs::create_dir_all(&scratch).unwrap();
    s.outputs.clear();
    for (name, bytes) in files {
        std::fs::write(scratch.join(name), bytes).unwrap();
        s.outputs
            .insert((*name).to_owned(), blake3::hash(bytes).to_hex().to_string());
    }
    if let Ok(b) = std::fs::read(base_dir.join("signer.pub")) {
        s.outputs
            .insert("signer.pub".into(), blake3::hash(&b).to_hex().to_string());
    }
    let key = SoftwareSigner::rfc8032_test_key().verifying_key();
    let t = jouleclaw_stack::store::verify_dir(
        &scratch,
        &jouleclaw_stack::jcr1::cose::ValidKey::new(key).unwrap(),
        &mut |_, _| {},
    )
    .unwrap()
    .totals;
    (s.receipts, s.ticks, s.inbound_bytes, s.outbound_bytes) =
        (t.receipts, t.ticks, t.inbound_bytes, t.outbound_bytes);
    (s.empty_windows, s.verdicts, s.conservation) = (t.empty_windows(), t.verdicts, t.conservation);
    s.signing = jouleclaw_stack::store::SigningFacts {
        checkpoints: None,
        every_windows: None,
        policy: "every_window".into(),
        window_signatures: None,
    };
    s.to_text().unwrap()
}

fn keep(items: &[&[u8]], drop: usize) -> Vec<u8> {
    items
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != drop)
        .flat_map(|(_, b)| b.to_vec())
        .collect()
}

/// Builds the table from four real runs of the demo trace (sealed every 5 windows with every
/// window signed and with inclusion.cbor; sealed without window signatures, with
/// inclusion.cbor; sealed without window signatures and without inclusion.cbor, layout
/// stream-at-rest/2's default; not sealed).
fn build_tamper_table(t: &TempDir) -> serde_json::Value {
    use serde_json::json;
    let mut bases = serde_json::Map::new();
    let mut dirs = std::collections::BTreeMap::new();
    for (name, extra) in [
        (
            "sealed",
            &[
                "--seal-every",
                "5",
                "--window-signatures",
                "all",
                "--inclusion-file",
            ][..],
        ),
        (
            "sealed_nosig",
            &[
                "--seal-every",
                "5",
                "--window-signatures",
                "none",
                "--inclusion-file",
            ][..],
        ),
        (
            "sealed_derived",
            &["--seal-every", "5", "--window-signatures", "none"][..],
        ),
        ("unsealed", &[][..]),
    ] {
        let dir = t.path(name);
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
            vec![&"run", &TRACE, &"--out", &dir, &"--quiet"];
        for e in extra {
            args.push(e);
        }
        expect(&jouleclaw(&args), 0);
        bases.insert(name.to_owned(), dir_files_hex(&dir).into());
        dirs.insert(name, dir);
    }
    let sealed = &dirs["sealed"];
    let jsonl = std::fs::read(sealed.join("receipts.jsonl")).unwrap();
    let lines: Vec<&[u8]> = jsonl.split_inclusive(|b| *b == b'\n').collect();
    let cbor = std::fs::read(sealed.join("receipts.cbor")).unwrap();
    let items = cose::split_cbor_sequence(&cbor).unwrap();
    let jsonl_minus_5 = keep(&lines, 5);
    let cbor_minus_5 = keep(&items, 5);
    // The forger holds the key (the published test key): as it rewrites the receipts, it
    // re-signs the stop-latency and interaction documents over the receipts that remain.
    let (stop_latency_minus_5, interaction_minus_5) = resigned_documents(sealed, &jsonl_minus_5);
    let forged = forged_summary(
        t,
        sealed,
        &[
            ("receipts.jsonl", jsonl_minus_5.clone()),
            ("receipts.cbor", cbor_minus_5.clone()),
            ("stop-latency.cbor", stop_latency_minus_5.clone()),
            ("interaction-metrics.cbor", interaction_minus_5.clone()),
        ],
    );
    // stream-seal/2: the final seal commits to stop-latency.cbor. The steward (the test key
    // is public) rewrites the document after sealing: the late barge-in dropped, the other one
    // moved onto its last audio (stop latency 0).
    let rewritten_stop_latency = {
        let signer = SoftwareSigner::rfc8032_test_key();
        let shipped = std::fs::read(sealed.join("stop-latency.cbor")).unwrap();
        let mut doc = jouleclaw_stop_latency::verify(
            &shipped,
            &jouleclaw_jcr1::cose::ValidKey::new(signer.verifying_key()).unwrap(),
        )
        .unwrap()
        .document;
        assert!(doc.barge_ins.iter().any(|b| b.late_audio_bytes > 0));
        doc.barge_ins.retain(|b| b.late_audio_bytes == 0);
        for b in &mut doc.barge_ins {
            if let Some(t) = b.last_audio_ts_ns {
                b.barge_in_ts_ns = t;
            }
        }
        jouleclaw_stop_latency::sign(&signer, &doc)
            .unwrap()
            .cose_sign1
    };
    // A run sealed before stream-seal/2: the same receipts re-sealed with a stream-seal/1 final
    // seal (Ed25519 is deterministic: the first two checkpoints are byte for byte the run's),
    // and summary.json's hashes of the two seal files updated to match.
    // The same receipts re-sealed by the steward (Ed25519 is deterministic: the checkpoints
    // before the final one are byte for byte the run's), with a stream-seal/1 final seal
    // (`None`: a run sealed before stream-seal/2) or a stream-seal/2 one committing to
    // `documents`; summary.json's hashes of the two seal files updated to match.
    // The first `count` lines sealed every 5 and at the last of them: (seals, inclusion).
    let seal_lines = |documents: Option<jouleclaw_stack::seal::SealedDocuments>, count: usize| {
        let signer = SoftwareSigner::rfc8032_test_key();
        let mut sealer = jouleclaw_stack::seal::StreamSealer::new(
            "stream-demo",
            "did:keri:EJ9testStewardAID000000000000000",
            jouleclaw_stack::seal::DEFAULT_MAX_LEAVES,
        );
        let (mut seals, mut inclusion) = (Vec::new(), Vec::new());
        for (i, l) in lines[..count].iter().enumerate() {
            let l = l.strip_suffix(b"\n").unwrap();
            let r = decode_receipt(l).unwrap();
            sealer
                .append(r.window_id, blake3::hash(l).as_bytes(), r.closed_at)
                .unwrap();
            let n = i + 1;
            if n % 5 == 0 || n == count {
                let b = match (&documents, n == count) {
                    (Some(d), true) => sealer.finish_with_documents(&signer, d.clone()),
                    (_, last) => sealer.checkpoint(&signer, last),
                }
                .unwrap();
                seals.extend_from_slice(&b.checkpoint.cose_sign1);
                for (_, r) in b.inclusion {
                    inclusion.extend_from_slice(&r);
                }
            }
        }
        (seals, inclusion)
    };
    let reseal = |documents: Option<jouleclaw_stack::seal::SealedDocuments>| {
        let (seals, inclusion) = seal_lines(documents, lines.len());
        let h = |b: &[u8]| blake3::hash(b).to_hex().to_string();
        let text = std::fs::read_to_string(sealed.join("summary.json")).unwrap();
        let old_seals = h(&std::fs::read(sealed.join("seals.cbor")).unwrap());
        let old_inclusion = h(&std::fs::read(sealed.join("inclusion.cbor")).unwrap());
        assert!(text.contains(&old_seals) && text.contains(&old_inclusion));
        let summary = text
            .replace(&old_seals, &h(&seals))
            .replace(&old_inclusion, &h(&inclusion));
        (seals, inclusion, summary)
    };
    let (v1_seals, v1_inclusion, v1_summary) = reseal(None);
    // Re-sealed listing stop-latency.cbor under two kinds (its real digest under both).
    let (twice_seals, twice_inclusion, twice_summary) = {
        let digest = |f: &str| {
            jouleclaw_stack::seal::document_digest(&std::fs::read(sealed.join(f)).unwrap())
        };
        let docs = [
            ("stop-latency/1", digest("stop-latency.cbor")),
            ("stop-latency/2", digest("stop-latency.cbor")),
            ("interaction-metrics/1", digest("interaction-metrics.cbor")),
        ]
        .into_iter()
        .map(|(k, d)| (k.to_owned(), d))
        .collect();
        reseal(Some(docs))
    };
    // Layout stream-at-rest/2 (no inclusion.cbor): the same receipts and checkpoints as the
    // other sealed runs (Ed25519 is deterministic), the inclusion receipts derived.
    let derived = &dirs["sealed_derived"];
    assert!(!derived.join("inclusion.cbor").exists());
    let dseals = std::fs::read(derived.join("seals.cbor")).unwrap();
    assert_eq!(dseals, std::fs::read(sealed.join("seals.cbor")).unwrap());
    let dseal_items = cose::split_cbor_sequence(&dseals).unwrap();
    assert_eq!(dseal_items.len(), 3);
    let nosig_inclusion = std::fs::read(dirs["sealed_nosig"].join("inclusion.cbor")).unwrap();
    let mut nosig_inclusion_flipped = nosig_inclusion.clone();
    *nosig_inclusion_flipped.last_mut().unwrap() ^= 1;
    let nosig_inclusion_items = cose::split_cbor_sequence(&nosig_inclusion).unwrap();
    // The steward (the test key is public) re-seals the first 12 receipts only, its final seal
    // committing to the run's documents as the run's did: the 13th line is sealed by nothing.
    let seals_over_12 = {
        let digest = |f: &str| {
            jouleclaw_stack::seal::document_digest(&std::fs::read(derived.join(f)).unwrap())
        };
        let docs = [
            ("stop-latency/1", digest("stop-latency.cbor")),
            ("interaction-metrics/1", digest("interaction-metrics.cbor")),
        ]
        .into_iter()
        .map(|(k, d)| (k.to_owned(), d))
        .collect();
        seal_lines(Some(docs), 12).0
    };
    let unsealed = &dirs["unsealed"];
    let ujsonl = std::fs::read(unsealed.join("receipts.jsonl")).unwrap();
    let ulines: Vec<&[u8]> = ujsonl.split_inclusive(|b| *b == b'\n').collect();
    let ucbor = std::fs::read(unsealed.join("receipts.cbor")).unwrap();
    let uitems = cose::split_cbor_sequence(&ucbor).unwrap();
    let (u_stop_latency_minus_5, u_interaction_minus_5) =
        resigned_documents(unsealed, &keep(&ulines, 5));
    let other = SoftwareSigner::from_seed(&[7; 32]).verifying_key();
    let w =
        |file: &str, bytes: &[u8]| json!({"op": "write", "file": file, "hex": hex::encode(bytes)});
    let del = |file: &str| json!({"op": "delete", "file": file});
    let rows = vec![
        row(
            "sealed_intact",
            "sealed",
            "a sealed run as written",
            json!([]),
            "complete",
        ),
        row(
            "sealed_nosig_intact",
            "sealed_nosig",
            "a sealed run without window signatures, as written",
            json!([]),
            "complete",
        ),
        row(
            "unsealed_intact",
            "unsealed",
            "an unsealed run as written: every signature verifies, completeness unknown",
            json!([]),
            "unsealed",
        ),
        row(
            "seals_stripped_window_dropped_summary_forged",
            "sealed",
            "seals.cbor and inclusion.cbor deleted, window 5 dropped from receipts.jsonl and receipts.cbor, stop-latency.cbor and interaction-metrics.cbor re-signed and summary.json rewritten to match: nothing signed shows the stream was sealed, so completeness is unknown (never complete)",
            json!([
                del("seals.cbor"),
                del("inclusion.cbor"),
                w("receipts.jsonl", &jsonl_minus_5),
                w("receipts.cbor", &cbor_minus_5),
                w("stop-latency.cbor", &stop_latency_minus_5),
                w("interaction-metrics.cbor", &interaction_minus_5),
                w("summary.json", forged.as_bytes())
            ]),
            "unsealed",
        ),
        row(
            "seals_deleted",
            "sealed",
            "seals.cbor deleted, inclusion.cbor kept: the inclusion receipts are signed, so the stream was sealed",
            json!([del("seals.cbor")]),
            "failed",
        ),
        row(
            "inclusion_deleted",
            "sealed",
            "inclusion.cbor deleted beside seals.cbor while summary.json names it (without it the inclusion receipts are derived: see derived_intact)",
            json!([del("inclusion.cbor")]),
            "failed",
        ),
        row(
            "receipts_cbor_deleted",
            "sealed",
            "receipts.cbor deleted (it is required, even when it may be empty)",
            json!([del("receipts.cbor")]),
            "failed",
        ),
        row(
            "receipts_jsonl_deleted",
            "sealed",
            "receipts.jsonl deleted",
            json!([del("receipts.jsonl")]),
            "failed",
        ),
        row(
            "summary_deleted",
            "sealed",
            "summary.json deleted: it is optional and unsigned",
            json!([del("summary.json")]),
            "complete",
        ),
        row(
            "signer_pub_deleted",
            "sealed",
            "signer.pub deleted: it is optional",
            json!([del("signer.pub")]),
            "complete",
        ),
        row(
            "line_dropped",
            "sealed",
            "window 5 dropped from receipts.jsonl only",
            json!([w("receipts.jsonl", &jsonl_minus_5)]),
            "failed",
        ),
        row(
            "window_dropped",
            "sealed",
            "window 5 dropped from receipts.jsonl and receipts.cbor",
            json!([
                w("receipts.jsonl", &jsonl_minus_5),
                w("receipts.cbor", &cbor_minus_5)
            ]),
            "failed",
        ),
        row(
            "lines_swapped",
            "sealed",
            "lines 6 and 7 swapped",
            json!([w(
                "receipts.jsonl",
                &[&lines[..6], &[lines[7], lines[6]], &lines[8..]]
                    .concat()
                    .concat()
            )]),
            "failed",
        ),
        row(
            "line_repeated",
            "sealed",
            "line 3 repeated",
            json!([w(
                "receipts.jsonl",
                &[&lines[..4], &[lines[3]], &lines[4..]].concat().concat()
            )]),
            "failed",
        ),
        row(
            "truncated",
            "sealed",
            "the last two windows cut from every file but the seals",
            json!([
                w("receipts.jsonl", &lines[..11].concat()),
                w("receipts.cbor", &items[..11].concat())
            ]),
            "failed",
        ),
        row(
            "seal_signature_flipped",
            "sealed",
            "one bit of the last checkpoint's signature flipped",
            json!([{"op": "flip", "file": "seals.cbor", "offset": -1}]),
            "failed",
        ),
        row(
            "inclusion_flipped",
            "sealed",
            "one bit of the last inclusion receipt flipped",
            json!([{"op": "flip", "file": "inclusion.cbor", "offset": -1}]),
            "failed",
        ),
        row(
            "window_signature_flipped",
            "sealed",
            "one bit of the last window signature flipped",
            json!([{"op": "flip", "file": "receipts.cbor", "offset": -1}]),
            "failed",
        ),
        row(
            "nosig_line_dropped",
            "sealed_nosig",
            "window 5 dropped from receipts.jsonl",
            json!([w("receipts.jsonl", &jsonl_minus_5)]),
            "failed",
        ),
        row(
            "nosig_inclusion_deleted",
            "sealed_nosig",
            "inclusion.cbor deleted while summary.json names it (the lines themselves are proven by derived inclusion receipts)",
            json!([del("inclusion.cbor")]),
            "failed",
        ),
        row(
            "unsealed_window_dropped_summary_deleted",
            "unsealed",
            "window 5 dropped from an unsealed run, stop-latency.cbor and interaction-metrics.cbor re-signed to match, summary.json deleted: completeness is unknown, as for the intact run",
            json!([
                w("receipts.jsonl", &keep(&ulines, 5)),
                w("receipts.cbor", &keep(&uitems, 5)),
                w("stop-latency.cbor", &u_stop_latency_minus_5),
                w("interaction-metrics.cbor", &u_interaction_minus_5),
                del("summary.json")
            ]),
            "unsealed",
        ),
        row(
            "unsealed_empty_seals",
            "unsealed",
            "empty seals.cbor and inclusion.cbor beside an unsealed run: sealed by nothing",
            json!([w("seals.cbor", b""), w("inclusion.cbor", b"")]),
            "failed",
        ),
        row(
            "summary_count_edited",
            "sealed",
            "summary.json says 14 receipts",
            json!([{"op": "replace", "file": "summary.json", "from": "\"receipts\": 13", "to": "\"receipts\": 14"}]),
            "failed",
        ),
        row(
            "summary_not_json",
            "sealed",
            "summary.json is not JSON",
            json!([w("summary.json", b"{")]),
            "failed",
        ),
        row(
            "signer_pub_other_key",
            "sealed",
            "signer.pub holds another key",
            json!([w("signer.pub", cose::public_key_text(&other).as_bytes())]),
            "failed",
        ),
        row(
            "receipts_cbor_symlink_dev_zero",
            "sealed",
            "receipts.cbor is a symbolic link to /dev/zero: not read",
            json!([del("receipts.cbor"), {"op": "symlink", "file": "receipts.cbor", "target": "/dev/zero"}]),
            "failed",
        ),
        row(
            "receipts_cbor_fifo",
            "sealed",
            "receipts.cbor is a FIFO: not opened for reading",
            json!([del("receipts.cbor"), {"op": "fifo", "file": "receipts.cbor"}]),
            "failed",
        ),
        row(
            "signer_pub_symlink",
            "sealed",
            "signer.pub is a symbolic link (to someone's key file): not read",
            json!([del("signer.pub"), {"op": "symlink", "file": "signer.pub", "target": "/dev/null"}]),
            "failed",
        ),
        row(
            "receipts_cbor_zeros",
            "sealed",
            "receipts.cbor is 2 MB of zero bytes: every item refused, memory and output bounded",
            json!([{"op": "fill", "file": "receipts.cbor", "byte": 0, "len": 2_000_000}]),
            "failed",
        ),
        row(
            "receipts_jsonl_newlines",
            "sealed",
            "receipts.jsonl is 2 MB of newlines: every line refused, memory and output bounded",
            json!([{"op": "fill", "file": "receipts.jsonl", "byte": 10, "len": 2_000_000}]),
            "failed",
        ),
        row(
            "jsonl_unterminated",
            "sealed",
            "the last line of receipts.jsonl lost its newline",
            json!([w("receipts.jsonl", &jsonl[..jsonl.len() - 1])]),
            "failed",
        ),
        row(
            "sealed_stop_latency_deleted",
            "sealed",
            "stop-latency.cbor deleted (no key needed): the final seal (stream-seal/2) commits to it",
            json!([del("stop-latency.cbor")]),
            "failed",
        ),
        row(
            "nosig_stop_latency_deleted",
            "sealed_nosig",
            "stop-latency.cbor deleted from a run without window signatures: the final seal commits to it",
            json!([del("stop-latency.cbor")]),
            "failed",
        ),
        row(
            "sealed_stop_latency_flipped",
            "sealed",
            "one bit of stop-latency.cbor's signature flipped",
            json!([{"op": "flip", "file": "stop-latency.cbor", "offset": -1}]),
            "failed",
        ),
        row(
            "sealed_stop_latency_rewritten_after_sealing",
            "sealed",
            "the steward re-signs stop-latency.cbor after sealing: the barge-in 170 ms past the deadline dropped, the other moved onto its last audio (p50 0 ms, 0 past the deadline); the final seal's digest no longer matches, and a receipt's barge_in_ignored contradicts it",
            json!([w("stop-latency.cbor", &rewritten_stop_latency)]),
            "failed",
        ),
        row(
            "sealed_document_under_two_kinds",
            "sealed",
            "the steward re-seals listing stop-latency.cbor under both stop-latency/1 and stop-latency/2: one file, one kind",
            json!([
                w("seals.cbor", &twice_seals),
                w("inclusion.cbor", &twice_inclusion),
                w("summary.json", twice_summary.as_bytes())
            ]),
            "failed",
        ),
        row(
            "stream_seal_1_final_intact",
            "sealed",
            "a run sealed before stream-seal/2 (its final seal is stream-seal/1): still complete; its stop latency is reported as not sealed",
            json!([
                w("seals.cbor", &v1_seals),
                w("inclusion.cbor", &v1_inclusion),
                w("summary.json", v1_summary.as_bytes())
            ]),
            "complete",
        ),
        row(
            "derived_intact",
            "sealed_derived",
            "a sealed run without inclusion.cbor (layout stream-at-rest/2), as written: every inclusion receipt is derived from seals.cbor and the lines",
            json!([]),
            "complete",
        ),
        row(
            "derived_line_edited",
            "sealed_derived",
            "window 0's joules_uj edited in receipts.jsonl (still a receipt): the inclusion proofs derived from the lines do not lead to the sealed roots",
            json!([{"op": "replace", "file": "receipts.jsonl", "from": "\"joules_uj\":", "to": "\"joules_uj\":1"}]),
            "failed",
        ),
        row(
            "derived_line_dropped",
            "sealed_derived",
            "window 5 dropped from receipts.jsonl without inclusion.cbor",
            json!([w("receipts.jsonl", &jsonl_minus_5)]),
            "failed",
        ),
        row(
            "derived_last_checkpoint_dropped",
            "sealed_derived",
            "the final checkpoint cut from seals.cbor and summary.json deleted: no seal covers the last three receipts, and none is final",
            json!([
                w("seals.cbor", &dseal_items[..2].concat()),
                del("summary.json")
            ]),
            "failed",
        ),
        row(
            "derived_seal_does_not_cover_a_receipt",
            "sealed_derived",
            "the steward re-seals the first 12 receipts (a final stream-seal/2 seal over the run's documents) and summary.json is deleted: the 13th receipt is covered by no seal",
            json!([w("seals.cbor", &seals_over_12), del("summary.json")]),
            "failed",
        ),
        row(
            "derived_seals_deleted",
            "sealed_derived",
            "seals.cbor deleted without inclusion.cbor: nothing signed covers the lines, and summary.json names seals.cbor",
            json!([del("seals.cbor")]),
            "failed",
        ),
        row(
            "derived_inclusion_added_intact",
            "sealed_derived",
            "the run's inclusion.cbor (from the same run with --inclusion-file) added and summary.json deleted: checked, and it proves every line",
            json!([w("inclusion.cbor", &nosig_inclusion), del("summary.json")]),
            "complete",
        ),
        row(
            "derived_inclusion_added_flipped",
            "sealed_derived",
            "inclusion.cbor added with one bit of its last receipt flipped, summary.json deleted: when present it is checked, so it is refused although the receipts could be derived",
            json!([
                w("inclusion.cbor", &nosig_inclusion_flipped),
                del("summary.json")
            ]),
            "failed",
        ),
        row(
            "derived_inclusion_added_short",
            "sealed_derived",
            "inclusion.cbor added without its first receipt (every other item one line off), summary.json deleted",
            json!([
                w("inclusion.cbor", &nosig_inclusion_items[1..].concat()),
                del("summary.json")
            ]),
            "failed",
        ),
        row(
            "derived_inclusion_added_unnamed",
            "sealed_derived",
            "the run's inclusion.cbor added while summary.json, which does not name it, is kept",
            json!([w("inclusion.cbor", &nosig_inclusion)]),
            "failed",
        ),
    ];
    json!({
        "_comment": "Tampered stream directories and the answer every verifier of the stream at rest must give (spec/STREAM-AT-REST.md, section 6). Generated by tests/cli.rs (tamper_table_is_current_and_every_rust_checker_agrees) from four runs of conformance/traces/duplex-demo.jsonl signed with the RFC 8032 test key (sealed, sealed_nosig: layout stream-at-rest/1 with inclusion.cbor; sealed_derived: layout stream-at-rest/2 without it; unsealed); JOULECLAW_REGEN_VECTORS=1 rewrites it. A row's ops apply in order to a copy of its base: write (hex), delete, replace (first occurrence of text), flip (xor 1 into the byte at offset, negative from the end), fill (len copies of byte), symlink (to target), fifo. expect.exit is without --allow-unsealed, expect.exit_allow_unsealed with it.",
        "public_key_hex": hex::encode(SoftwareSigner::rfc8032_test_key().verifying_key().as_bytes()),
        "bases": bases,
        "rows": rows,
    })
}

/// Materializes row `r` of `table` as the directory `dir`.
fn materialize(table: &serde_json::Value, r: &serde_json::Value, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let base = &table["bases"][r["base"].as_str().unwrap()];
    for (name, h) in base.as_object().unwrap() {
        std::fs::write(dir.join(name), hex::decode(h.as_str().unwrap()).unwrap()).unwrap();
    }
    for op in r["ops"].as_array().unwrap() {
        let file = dir.join(op["file"].as_str().unwrap());
        match op["op"].as_str().unwrap() {
            "write" => {
                std::fs::write(&file, hex::decode(op["hex"].as_str().unwrap()).unwrap()).unwrap()
            }
            "delete" => std::fs::remove_file(&file).unwrap(),
            "replace" => {
                let text = std::fs::read_to_string(&file).unwrap();
                let (from, to) = (op["from"].as_str().unwrap(), op["to"].as_str().unwrap());
                assert!(text.contains(from));
                std::fs::write(&file, text.replacen(from, to, 1)).unwrap();
            }
            "flip" => {
                let mut b = std::fs::read(&file).unwrap();
                let o = op["offset"].as_i64().unwrap();
                let at = if o < 0 {
                    b.len() - o.unsigned_abs() as usize
                } else {
                    o as usize
                };
                b[at] ^= 1;
                std::fs::write(&file, b).unwrap();
            }
            "fill" => std::fs::write(
                &file,
                vec![op["byte"].as_u64().unwrap() as u8; op["len"].as_u64().unwrap() as usize],
            )
            .unwrap(),
            "symlink" => std::os::unix::fs::symlink(op["target"].as_str().unwrap(), &file).unwrap(),
            "fifo" => assert!(
                Command::new("mkfifo")
                    .arg(&file)
                    .status()
                    .unwrap()
                    .success()
            ),
            other => panic!("unknown op {other}"),
        }
    }
}

#[test]
fn tamper_table_is_current_and_every_rust_checker_agrees() {
    let t = TempDir::new("tamper-table");
    let table = build_tamper_table(&t);
    let text = format!("{}\n", serde_json::to_string_pretty(&table).unwrap());
    let path = root(TAMPER_TABLE);
    if std::env::var_os("JOULECLAW_REGEN_VECTORS").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let shipped = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        shipped == text,
        "{TAMPER_TABLE} is stale: JOULECLAW_REGEN_VECTORS=1 cargo test --test it cli::tamper_table"
    );
    let key = SoftwareSigner::rfc8032_test_key().verifying_key();
    let public = test_pub_file(&t);
    for r in table["rows"].as_array().unwrap() {
        let name = r["name"].as_str().unwrap();
        // As a live folder too: audit --dir reads DIR/<stream id>/.
        let parent = t.path(&format!("row-{name}"));
        let dir = parent.join("stream-demo");
        materialize(&table, r, &dir);
        let want = r["expect"]["outcome"].as_str().unwrap();
        let exit = r["expect"]["exit"].as_i64().unwrap() as i32;
        let exit_allow = r["expect"]["exit_allow_unsealed"].as_i64().unwrap() as i32;
        let report = jouleclaw_stack::store::verify_dir(
            &dir,
            &jouleclaw_stack::jcr1::cose::ValidKey::new(key).unwrap(),
            &mut |_, _| {},
        )
        .unwrap();
        assert_eq!(
            report.outcome().code(),
            want,
            "{name}: {:?}",
            report.problems
        );
        // Bounded: at most the named problems are kept, whatever the input.
        assert!(report.problems.len() <= jouleclaw_stack::store::MAX_NAMED_PROBLEMS);
        let verify = |extra: &[&dyn AsRef<std::ffi::OsStr>]| {
            let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
                vec![&"receipts", &"verify", &"--pub", &public];
            args.extend_from_slice(extra);
            args.push(&dir);
            jouleclaw(&args)
        };
        let o = verify(&[]);
        assert_eq!(code(&o), exit, "receipts verify {name}: {}", stderr(&o));
        assert!(
            o.stderr.len() < 64 << 10,
            "{name}: {} bytes of messages",
            o.stderr.len()
        );
        assert_eq!(
            code(&verify(&[&"--allow-unsealed"])),
            exit_allow,
            "receipts verify --allow-unsealed {name}"
        );
        let page = t.path(&format!("{name}.html"));
        let o = jouleclaw(&[&"report", &dir, &"--pub", &public, &"-o", &page]);
        assert_eq!(code(&o), exit, "report {name}: {}", stderr(&o));
        assert!(
            std::fs::metadata(&page).unwrap().len() < 4 << 20,
            "{name}: page too large"
        );
        let o = jouleclaw(&[
            &"report",
            &dir,
            &"--pub",
            &public,
            &"-o",
            &page,
            &"--allow-unsealed",
        ]);
        assert_eq!(
            code(&o),
            exit_allow,
            "report --allow-unsealed {name}: {}",
            stderr(&o)
        );
        let o = jouleclaw(&[&"audit", &"--pub", &public, &"--dir", &parent]);
        assert_eq!(code(&o), exit, "audit --dir {name}: {}", stdout(&o));
    }
}

/// The store's errors keep their exit codes: a refused input (here a window the sealed directory
/// has no receipt of) exits 1, an I/O error (here a directory that does not exist, with the key
/// given so the store is what reads it) exits 2.
#[test]
fn a_store_refusal_exits_1_and_a_store_io_error_exits_2() {
    let t = TempDir::new("store-failure");
    let dir = t.path("run");
    let o = jouleclaw(&[
        &"run",
        &TRACE,
        &"--out",
        &dir,
        &"--quiet",
        &"--seal-every",
        &"5",
    ]);
    expect(&o, 0);
    let public = dir.join("signer.pub");
    let o = jouleclaw(&[
        &"receipts",
        &"inclusion",
        &dir,
        &"--window",
        &"99",
        &"--pub",
        &public,
    ]);
    expect(&o, 1);
    assert!(stderr(&o).contains("window_out_of_range"), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    let missing = t.path("missing");
    let o = jouleclaw(&[
        &"receipts",
        &"inclusion",
        &missing,
        &"--window",
        &"0",
        &"--pub",
        &public,
    ]);
    expect(&o, 2);
    assert!(
        stderr(&o).contains(&missing.display().to_string()),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());
}

/// `run --seal-every` leaves inclusion.cbor out by default (layout stream-at-rest/2, named in
/// summary.json) and removes one an earlier run left; `receipts inclusion DIR --window N`
/// derives, for every window, the bytes `--inclusion-file` writes; a window without a receipt,
/// one no verified checkpoint seals and edited lines are refused with their codes (exit 1);
/// the output is never written over one of the directory's files.
#[test]
fn receipts_inclusion_derives_what_inclusion_cbor_holds() {
    let t = TempDir::new("inclusion-export");
    let (derived, with_file) = (t.path("derived"), t.path("with-file"));
    let run = |dir: &Path, extra: &[&str]| {
        let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
            &"run",
            &TRACE,
            &"--out",
            &dir,
            &"--quiet",
            &"--seal-every",
            &"5",
        ];
        for e in extra {
            args.push(e);
        }
        expect(&jouleclaw(&args), 0);
    };
    run(&with_file, &["--inclusion-file"]);
    // An earlier run's inclusion.cbor in the directory does not survive a run without it.
    run(&derived, &["--inclusion-file"]);
    assert!(derived.join("inclusion.cbor").exists());
    run(&derived, &[]);
    assert!(!derived.join("inclusion.cbor").exists());
    let summary = |d: &Path| {
        jouleclaw_stack::store::RunSummary::parse(&std::fs::read(d.join("summary.json")).unwrap())
            .unwrap()
    };
    assert_eq!(
        summary(&derived).layout.as_deref(),
        Some("stream-at-rest/2")
    );
    assert!(!summary(&derived).outputs.contains_key("inclusion.cbor"));
    assert!(summary(&with_file).outputs.contains_key("inclusion.cbor"));
    let public = test_pub_file(&t);
    let o = jouleclaw(&[&"receipts", &"verify", &"--pub", &public, &derived]);
    expect(&o, 0);
    assert!(stdout(&o).contains("13 inclusion receipts verified (derived from seals.cbor"));

    let file = std::fs::read(with_file.join("inclusion.cbor")).unwrap();
    let items = cose::split_cbor_sequence(&file).unwrap();
    assert_eq!(items.len(), 13);
    let jsonl = std::fs::read(derived.join("receipts.jsonl")).unwrap();
    let windows: Vec<u64> = jsonl
        .split_inclusive(|b| *b == b'\n')
        .map(|l| {
            decode_receipt(l.strip_suffix(b"\n").unwrap())
                .unwrap()
                .window_id
        })
        .collect();
    for (i, w) in windows.iter().enumerate() {
        let o = jouleclaw(&[
            &"receipts",
            &"inclusion",
            &derived,
            &"--window",
            &w.to_string(),
        ]);
        expect(&o, 0);
        assert_eq!(o.stdout, items[i], "window {w}");
    }
    // --pub and --out: the same bytes, created new.
    let out = t.path("w7.cbor");
    let o = jouleclaw(&[
        &"receipts",
        &"inclusion",
        &derived,
        &"--window",
        &"7",
        &"--pub",
        &public,
        &"--out",
        &out,
    ]);
    expect(&o, 0);
    assert!(stdout(&o).contains("under checkpoint 1 of seals.cbor (tree size 10)"));
    assert_eq!(std::fs::read(&out).unwrap(), items[7]);
    // Never over one of the directory's files.
    let seals = std::fs::read(derived.join("seals.cbor")).unwrap();
    for name in ["seals.cbor", "receipts.jsonl", "stop-latency.cbor"] {
        let dest = derived.join(name);
        let before = std::fs::read(&dest).unwrap();
        let o = jouleclaw(&[
            &"receipts",
            &"inclusion",
            &derived,
            &"--window",
            &"3",
            &"--out",
            &dest,
        ]);
        expect(&o, 2);
        assert!(
            stderr(&o).contains("is one of the command's inputs"),
            "{}",
            stderr(&o)
        );
        assert_eq!(std::fs::read(&dest).unwrap(), before);
    }
    // A window without a receipt.
    let o = jouleclaw(&[&"receipts", &"inclusion", &derived, &"--window", &"13"]);
    expect(&o, 1);
    assert!(stderr(&o).contains("window_out_of_range"), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
    // Only the first checkpoint left: window 4 is sealed, window 5 is not.
    let cut = t.path("cut");
    std::fs::create_dir_all(&cut).unwrap();
    for name in ["receipts.jsonl", "receipts.cbor", "signer.pub"] {
        std::fs::copy(derived.join(name), cut.join(name)).unwrap();
    }
    let seal_items = cose::split_cbor_sequence(&seals).unwrap();
    std::fs::write(cut.join("seals.cbor"), seal_items[0]).unwrap();
    let o = jouleclaw(&[&"receipts", &"inclusion", &cut, &"--window", &"4"]);
    expect(&o, 0);
    assert_eq!(o.stdout, items[4]);
    let o = jouleclaw(&[&"receipts", &"inclusion", &cut, &"--window", &"5"]);
    expect(&o, 1);
    assert!(
        stderr(&o).contains("window_not_sealed") && stderr(&o).contains("first 5 receipts"),
        "{}",
        stderr(&o)
    );
    // No seals.cbor at all.
    std::fs::remove_file(cut.join("seals.cbor")).unwrap();
    let o = jouleclaw(&[&"receipts", &"inclusion", &cut, &"--window", &"0"]);
    expect(&o, 1);
    assert!(stderr(&o).contains("window_not_sealed"), "{}", stderr(&o));
    // Window 0's line edited (still a receipt): its proof no longer leads to the sealed root.
    std::fs::write(cut.join("seals.cbor"), &seals).unwrap();
    let text = String::from_utf8(jsonl.clone()).unwrap();
    std::fs::write(
        cut.join("receipts.jsonl"),
        text.replacen("\"joules_uj\":", "\"joules_uj\":1", 1),
    )
    .unwrap();
    let o = jouleclaw(&[&"receipts", &"inclusion", &cut, &"--window", &"0"]);
    expect(&o, 1);
    assert!(
        stderr(&o).contains("inclusion_not_derivable (proof_root_mismatch"),
        "{}",
        stderr(&o)
    );
    // The signer's key file is read from DIR/signer.pub; a directory without one needs --pub.
    std::fs::remove_file(cut.join("signer.pub")).unwrap();
    let o = jouleclaw(&[&"receipts", &"inclusion", &cut, &"--window", &"0"]);
    expect(&o, 2);
}
