//! `read_each`'s memory bound against a real single-node nats-server (JetStream, loopback, a
//! temporary store): spec/LIVE.md section 7 says that past `read_max_open_bytes` every begun
//! stream is dropped from memory and read again after the pass. Measured as the growth of this
//! process's peak resident set during the read (Linux `VmHWM`, reset before it). Needs
//! `nats-server`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::NatsServer;

use std::time::Duration;

use jouleclaw_live::jetstream::{JetStreamConfig, read_each};

/// This process's peak resident set (`VmHWM`, kB) since the last [`reset_peak`].
fn peak_kb() -> u64 {
    status_kb("VmHWM:")
}

fn rss_kb() -> u64 {
    status_kb("VmRSS:")
}

/// One `kB` field of `/proc/self/status`.
fn status_kb(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Resets `VmHWM` to the current resident set (Linux: `5` into `/proc/self/clear_refs`).
fn reset_peak() {
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
}

/// A message body `read_each` decodes and keeps: stream `s{i}` of steward `st`, batch `seq`,
/// one receipt of `size` bytes (never verified here: the reader holds it until the stream is
/// finished).
fn batch(i: usize, seq: u8, size: usize) -> Vec<u8> {
    use ciborium::Value;
    let t = |s: &str| Value::Text(s.into());
    let map = Value::Map(vec![
        (t("v"), Value::Integer(2.into())),
        (t("stream_id"), t(&format!("s{i}"))),
        (t("steward"), t("st")),
        (t("seq"), Value::Integer(seq.into())),
        (t("final"), Value::Bool(seq == 1)),
        (
            t("receipts"),
            Value::Array(vec![Value::Bytes(vec![seq; size])]),
        ),
        (t("checkpoint"), Value::Bytes(vec![7; 16])),
    ]);
    let mut out = Vec::new();
    ciborium::into_writer(&map, &mut out).unwrap();
    out
}

/// 1,000 streams whose first messages (50 KB each) are interleaved: every stream is begun
/// before any finishes. With `read_max_open_bytes` at 1 MiB the pass defers them all; what it
/// holds at once must stay near that bound, not grow with the 50 MB read before deferral.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs nats-server: run by scripts/test-all (.ci/suites/14-live-cluster.sh)"]
async fn deferred_streams_are_dropped_from_memory() {
    const STREAMS: usize = 1000;
    const BODY: usize = 50_000;
    let store = tempfile::tempdir().unwrap();
    let server = NatsServer::start(store.path());
    let url = server.url.clone();
    let client = loop {
        match async_nats::connect(&url).await {
            Ok(c) => break c,
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let js = async_nats::jetstream::new(client);
    js.create_stream(async_nats::jetstream::stream::Config {
        name: "JOULECLAW".into(),
        subjects: vec!["jouleclaw.>".into()],
        ..Default::default()
    })
    .await
    .unwrap();
    // Two messages per stream, round-robin: the first of every stream, then the second.
    for round in 0..2u8 {
        for i in 0..STREAMS {
            js.publish(format!("jouleclaw.st.s{i}"), batch(i, round, BODY).into())
                .await
                .unwrap()
                .await
                .unwrap();
        }
    }
    let mut config = JetStreamConfig::new(&url, store.path().join("unused"));
    config.read_max_open_bytes = 1 << 20;
    let before = rss_kb();
    reset_peak();
    let mut streams = 0usize;
    let stats = read_each(&config, None, |s| {
        streams += 1;
        drop(s);
    })
    .await
    .unwrap();
    let peak = (peak_kb().saturating_sub(before)) * 1024;
    assert_eq!(streams, STREAMS);
    assert!(stats.deferred > 0, "{stats:?}");
    // The bound (1 MiB) plus room for the client's buffers and the subject list: 16 MiB.
    assert!(
        peak < 16 << 20,
        "peak resident growth during read_each {peak} bytes, bound 1 MiB (the pass read {} bytes before deferring)",
        STREAMS * BODY
    );
}
