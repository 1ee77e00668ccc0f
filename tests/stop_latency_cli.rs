//! `stop-latency.cbor` through the `jouleclaw` binary: written by `run`, verified and bound by
//! `receipts verify DIR` and `report`, and every removal or alteration refused (exit 1).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::support::{TempDir, assert_contains, jouleclaw, text, verify_unsealed};
use std::path::Path;
use std::process::{Command, Output};

const TRACE: &str = "conformance/traces/duplex-demo.jsonl";

fn run(dir: &Path, extra: &[&str]) -> Output {
    let out = dir.to_str().unwrap();
    let mut args: Vec<&dyn AsRef<std::ffi::OsStr>> =
        vec![&"run", &TRACE, &"--quiet", &"--out", &out];
    for e in extra {
        args.push(e);
    }
    let o = jouleclaw(&args);
    assert!(o.status.success(), "{}", text(&o));
    o
}

// The runs here are unsealed (completeness unknown): accepted on request, so that the exit
// status is the stop-latency document's.
fn verify(dir: &Path) -> Output {
    verify_unsealed(&dir.join("signer.pub"), dir)
}

fn report(dir: &Path) -> (Output, String) {
    let html = dir.join("page.html");
    let o = jouleclaw(&[&"report", &dir, &"--allow-unsealed", &"-o", &html]);
    (o, std::fs::read_to_string(&html).unwrap_or_default())
}

#[test]
fn run_writes_the_document_and_verify_and_report_accept_it() {
    let t = TempDir::new("ok");
    let dir = t.0.join("run");
    let o = run(&dir, &[]);
    assert_contains(
        &o,
        "stop latency over 2 barge-ins: p50 60 ms, p95 170 ms, max 170 ms; 1 past the 150 ms deadline",
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    let bytes = std::fs::read(dir.join("stop-latency.cbor")).unwrap();
    assert_eq!(
        summary["outputs"]["stop-latency.cbor"],
        blake3::hash(&bytes).to_hex().as_str()
    );
    let v = verify(&dir);
    assert!(v.status.success(), "{}", text(&v));
    assert!(text(&v).contains("stop-latency.cbor: verified and bound to the receipts"));
    let (r, html) = report(&dir);
    assert!(r.status.success(), "{}", text(&r));
    assert!(html.contains("id=\"stop-latency-bars\""));
    assert!(
        html.contains("170 ms LATE"),
        "the late barge-in is drawn as late"
    );
    assert!(html.contains("60 ms ("), "the prompt one is drawn");
}

#[test]
fn removing_the_document_is_refused_when_a_barge_in_exists() {
    let t = TempDir::new("removed");
    let dir = t.0.join("run");
    run(&dir, &["--seal-every", "4"]);
    std::fs::remove_file(dir.join("stop-latency.cbor")).unwrap();
    let v = verify(&dir);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v));
    assert_contains(&v, "stop_latency_missing");
    let (r, html) = report(&dir);
    assert_eq!(r.status.code(), Some(1), "{}", text(&r));
    assert!(html.contains("stop_latency_missing"));
}

#[test]
fn an_altered_document_is_refused() {
    let t = TempDir::new("altered");
    let dir = t.0.join("run");
    run(&dir, &[]);
    let path = dir.join("stop-latency.cbor");
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(18)
        .position(|w| w == b"\"stop_latency_ns\":")
        .unwrap()
        + 18;
    bytes[at] = if bytes[at] == b'1' { b'2' } else { b'1' };
    std::fs::write(&path, &bytes).unwrap();
    let v = verify(&dir);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v));
    assert_contains(&v, "cose_bad_signature");
    let (r, _) = report(&dir);
    assert_eq!(r.status.code(), Some(1), "{}", text(&r));
}

#[test]
fn another_calls_document_is_refused() {
    let t = TempDir::new("swapped");
    let dir = t.0.join("run");
    let other = t.0.join("other");
    run(&dir, &[]);
    run(&other, &["--stream-id", "another-call"]);
    std::fs::copy(
        other.join("stop-latency.cbor"),
        dir.join("stop-latency.cbor"),
    )
    .unwrap();
    let v = verify(&dir);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v));
    assert_contains(&v, "stream_mismatch");
}

#[test]
fn a_receipt_removed_under_the_document_is_noticed() {
    let t = TempDir::new("receipt");
    let dir = t.0.join("run");
    run(&dir, &[]);
    // Drop the first receipt line and its signature: the window signatures still verify.
    let jsonl = std::fs::read_to_string(dir.join("receipts.jsonl")).unwrap();
    let rest: String = jsonl.lines().skip(1).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("receipts.jsonl"), rest).unwrap();
    let cbor = std::fs::read(dir.join("receipts.cbor")).unwrap();
    let items = jouleclaw_stack::jcr1::cose::split_cbor_sequence(&cbor).unwrap();
    let kept: Vec<u8> = items[1..].concat();
    std::fs::write(dir.join("receipts.cbor"), kept).unwrap();
    let v = verify(&dir);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v));
    assert_contains(&v, "window_count_mismatch");
    assert_contains(&v, "root_mismatch");
}

#[test]
fn a_planted_link_or_fifo_at_the_document_is_refused_unread() {
    let t = TempDir::new("planted");
    let dir = t.0.join("run");
    run(&dir, &["--seal-every", "4"]);
    let doc = dir.join("stop-latency.cbor");
    let real = t.0.join("real-document.cbor");
    std::fs::rename(&doc, &real).unwrap();
    // A link to the genuine document: refused although its bytes would verify.
    std::os::unix::fs::symlink(&real, &doc).unwrap();
    let v = verify(&dir);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v));
    assert_contains(&v, "not_regular_file");
    // A FIFO: refused at once, never blocked on.
    std::fs::remove_file(&doc).unwrap();
    let made = Command::new("mkfifo").arg(&doc).status().unwrap();
    assert!(made.success());
    let v = verify(&dir);
    assert_eq!(v.status.code(), Some(1), "{}", text(&v));
    assert_contains(&v, "not_regular_file");
    // Its neighbour: the genuine document put back is accepted.
    std::fs::remove_file(&doc).unwrap();
    std::fs::rename(&real, &doc).unwrap();
    let v = verify(&dir);
    assert!(v.status.success(), "{}", text(&v));
}
