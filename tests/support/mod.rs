//! What the `jouleclaw` command's integration tests share: temporary folders, the binary and
//! its output, a free loopback port, and one JetStream `nats-server` on loopback (all from
//! `jouleclaw-testkit`). A test file takes it with `mod support;`; each uses a part of it.
#![allow(dead_code)]
#![allow(
    clippy::unwrap_used,
    reason = "test support: a file that cannot be read fails the test"
)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use jouleclaw_stack::jcr1::cose::{Signer as _, SoftwareSigner};

#[allow(unused_imports)] // each test file uses a part
pub use jouleclaw_testkit::nats::{NatsServer, nats_server};
#[allow(unused_imports)] // each test file uses a part
pub use jouleclaw_testkit::{TempDir, assert_contains, code, free_port, text};

/// A path of the repository.
pub fn root(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Runs the `jouleclaw` binary this test build made, from the repository's root.
pub fn jouleclaw(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    jouleclaw_testkit::run(
        env!("CARGO_BIN_EXE_jouleclaw"),
        env!("CARGO_MANIFEST_DIR"),
        args,
    )
}

/// Starts the `jouleclaw` binary this test build made, from the repository's root, with its
/// standard output and standard error pipes.
pub fn spawn_jouleclaw(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_jouleclaw"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args.iter().map(|a| a.as_ref()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// A turn on the microphone channel in windows 0 and 1: start, 200 ms of audio, end of turn at
/// 250 ms.
pub const TURN_TRACE: &str = concat!(
    r#"{"ts_ns":0,"channel_id":1,"kind":"marker","marker":"start"}"#,
    "\n",
    r#"{"ts_ns":10000000,"channel_id":1,"kind":"audio","bytes_len":6400}"#,
    "\n",
    r#"{"ts_ns":250000000,"channel_id":1,"kind":"marker","marker":"end_of_turn"}"#,
    "\n",
);

/// `receipts verify --allow-unsealed --pub PUBLIC DIR`.
pub fn verify_unsealed(public: &Path, dir: &Path) -> Output {
    jouleclaw(&[
        &"receipts",
        &"verify",
        &"--allow-unsealed",
        &"--pub",
        &public,
        &dir,
    ])
}

/// Removes line `index` (from 0) of the run directory's `receipts.jsonl`.
pub fn drop_receipt_line(dir: &Path, index: usize) {
    let path = dir.join("receipts.jsonl");
    let lines = std::fs::read_to_string(&path).unwrap();
    let kept: String = lines
        .lines()
        .enumerate()
        .filter(|(i, _)| *i != index)
        .map(|(_, l)| format!("{l}\n"))
        .collect();
    std::fs::write(&path, kept).unwrap();
}

/// The content hashes of receipt lines: BLAKE3 of each line without its line end.
pub fn line_hashes(jsonl: &[u8]) -> Vec<[u8; 32]> {
    jsonl
        .split_inclusive(|b| *b == b'\n')
        .map(|l| *blake3::hash(l.strip_suffix(b"\n").unwrap_or(l)).as_bytes())
        .collect()
}

/// The run directory's `stop-latency.cbor` and `interaction-metrics.cbor` re-signed with the
/// published test key over the receipt lines `jsonl`, as a forger holding the key would.
pub fn resigned_documents(dir: &Path, jsonl: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let signer = SoftwareSigner::rfc8032_test_key();
    let valid = jouleclaw_jcr1::cose::ValidKey::new(signer.verifying_key()).unwrap();
    let hashes = line_hashes(jsonl);
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let stop = jouleclaw_stop_latency::verify(&read("stop-latency.cbor"), &valid)
        .unwrap()
        .document;
    let stop = jouleclaw_stop_latency::StopLatencyDocument::new(
        &stop.steward,
        &stop.stream_id,
        &stop.barge_ins,
        &hashes,
    )
    .unwrap();
    let metrics = jouleclaw_interaction::verify(&read("interaction-metrics.cbor"), &valid)
        .unwrap()
        .document;
    let metrics = jouleclaw_interaction::InteractionDocument::new(
        &metrics.steward,
        &metrics.stream_id,
        metrics.config,
        metrics.frame_count,
        &metrics.events,
        &hashes,
    )
    .unwrap();
    (
        jouleclaw_stop_latency::sign(&signer, &stop)
            .unwrap()
            .cose_sign1,
        jouleclaw_interaction::sign(&signer, &metrics)
            .unwrap()
            .cose_sign1,
    )
}
