//! The file sink's ownership of its folder (one sink at a time, stream folders created
//! exclusively) and the id bound every sink shares.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;
use crate::common::mic;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_live::audit::audit_stream_dir;
use jouleclaw_live::*;

fn start(sink: FileSink) -> Substrate {
    Substrate::start(
        SubstrateConfig::new("did:example:steward"),
        Arc::new(TokioClock::new(1_780_617_600)),
        Arc::new(SoftwareSigner::rfc8032_test_key()),
        Box::new(sink),
    )
    .unwrap()
}

/// One window into stream `id`; its status (the sink's verdict shows there once the
/// substrate shut down: `close` does not wait for the sink).
async fn one_window(s: &Substrate, id: &str) -> Arc<StreamStatus> {
    let h = s.open_stream(id).unwrap();
    h.push(mic(0, h.now_ns())).unwrap();
    h.close().await.unwrap();
    h.status().clone()
}

fn failure(status: &StreamStatus) -> String {
    status.failure().expect("the stream failed")
}

#[test]
fn a_second_sink_on_one_folder_is_refused_while_the_first_lives() {
    let dir = tempfile::tempdir().unwrap();
    let first = FileSink::new(dir.path()).unwrap();
    let e = FileSink::new(dir.path()).unwrap_err();
    assert_eq!(e.code(), "sink_busy", "{e}");
    // Its neighbour: once the first is gone the folder is free again.
    drop(first);
    assert!(FileSink::new(dir.path()).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_partial_folder_is_never_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    let stale = dir
        .path()
        .join(format!("{}{}", escape_id("call/1"), file::PARTIAL_SUFFIX));
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join(file::RECEIPTS_CBOR), b"another run's bytes").unwrap();
    let s = start(FileSink::new(dir.path()).unwrap());
    let st = one_window(&s, "call/1").await;
    // The neighbour stream in the same folder is written and sealed.
    let ok = one_window(&s, "call/2").await;
    s.shutdown().await.unwrap();
    assert!(failure(&st).contains("stream_exists"), "{}", failure(&st));
    assert_eq!(ok.failure(), None);
    assert_eq!(
        std::fs::read(stale.join(file::RECEIPTS_CBOR)).unwrap(),
        b"another run's bytes"
    );
    assert_eq!(s.sink_stats().seals_durable.load(Ordering::SeqCst), 1);
    assert_eq!(s.sink_stats().receipts_lost.load(Ordering::SeqCst), 1);
    let key = SoftwareSigner::rfc8032_test_key().verifying_key();
    let audit =
        audit_stream_dir(&dir.path().join(escape_id("call/2")), &common::valid(&key)).unwrap();
    assert!(audit.is_complete(), "{:?}", audit.lines());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sealed_stream_folder_from_an_earlier_run_is_not_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(FileSink::new(dir.path()).unwrap());
    assert_eq!(one_window(&s, "again").await.failure(), None);
    s.shutdown().await.unwrap();
    drop(s);
    let sealed = dir.path().join("again").join(file::RECEIPTS_CBOR);
    let before = std::fs::read(&sealed).unwrap();
    let s = start(FileSink::new(dir.path()).unwrap());
    let st = one_window(&s, "again").await;
    s.shutdown().await.unwrap();
    assert!(failure(&st).contains("stream_exists"), "{}", failure(&st));
    assert_eq!(std::fs::read(&sealed).unwrap(), before);
    assert!(!dir.path().join("again.partial").exists());
}

#[test]
fn ids_are_bounded_once_escaped() {
    let at_bound = "a".repeat(MAX_ESCAPED_ID_BYTES);
    assert!(check_ids("did:example:steward", &at_bound).is_ok());
    let over = "a".repeat(MAX_ESCAPED_ID_BYTES + 1);
    assert_eq!(
        check_ids("did:example:steward", &over).unwrap_err().code(),
        "id_too_long"
    );
    // 67 dots escape to 201 bytes: the bound is on the escaped form.
    let dots = ".".repeat(67);
    assert_eq!(escape_id(&dots).len(), 201);
    assert_eq!(
        check_ids("did:example:steward", &dots).unwrap_err().code(),
        "id_too_long"
    );
    assert_eq!(check_ids(&over, "x").unwrap_err().code(), "id_too_long");
    assert_eq!(check_ids("s", "").unwrap_err().code(), "id_too_long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_longest_id_is_stored_and_a_longer_one_is_refused_with_its_own_code() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(FileSink::new(dir.path()).unwrap());
    // 66 '%2E' escapes and 2 letters: 200 bytes, a file name with `.partial` of 208.
    let longest = format!("{}ab", ".".repeat(66));
    assert_eq!(escape_id(&longest).len(), MAX_ESCAPED_ID_BYTES);
    let ok = one_window(&s, &longest).await;
    // A longer id is refused when its stream opens, before anything is minted.
    let too_long = "b".repeat(250);
    let e = s.open_stream(&too_long).unwrap_err();
    assert_eq!(e.code(), "id_too_long");
    assert!(e.to_string().contains("once escaped"), "{e}");
    s.shutdown().await.unwrap();
    assert_eq!(ok.failure(), None);
    let key = SoftwareSigner::rfc8032_test_key().verifying_key();
    let audit =
        audit_stream_dir(&dir.path().join(escape_id(&longest)), &common::valid(&key)).unwrap();
    assert!(audit.is_complete(), "{:?}", audit.lines());
}

#[test]
fn the_subject_prefix_is_bounded_and_tokenised() {
    use jouleclaw_live::jetstream::check_prefix;
    assert!(check_prefix("jouleclaw").is_ok());
    assert!(check_prefix("acme.jouleclaw-1").is_ok());
    assert!(check_prefix(&"p".repeat(MAX_PREFIX_BYTES)).is_ok());
    for bad in ["", "a..b", "a.*", "a.>", "a b", ".a"] {
        assert_eq!(check_prefix(bad).unwrap_err().code(), "config", "{bad:?}");
    }
    assert!(check_prefix(&"p".repeat(MAX_PREFIX_BYTES + 1)).is_err());
    // The sink refuses such a prefix before it opens its journal.
    let dir = tempfile::tempdir().unwrap();
    let mut c =
        jouleclaw_live::jetstream::JetStreamConfig::new("nats://127.0.0.1:1", dir.path().join("j"));
    c.prefix = "a.*".into();
    assert_eq!(
        jouleclaw_live::jetstream::JetStreamSink::open(c)
            .unwrap_err()
            .code(),
        "config"
    );
    assert!(!dir.path().join("j").exists());
}

/// `FileSink::new(dir)` on another thread, bounded: `None` when it did not return within
/// 10 s (it waits on something).
fn new_sink_bounded(dir: &std::path::Path) -> Option<Result<FileSink>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let dir = dir.to_owned();
    std::thread::spawn(move || {
        let _ = tx.send(FileSink::new(dir));
    });
    rx.recv_timeout(std::time::Duration::from_secs(10)).ok()
}

#[test]
fn the_lock_file_is_never_followed_through_a_symlink_or_waited_on_as_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    // A planted symbolic link in the lock file's place: refused, and nothing is created
    // where it points.
    let sinkdir = dir.path().join("out");
    std::fs::create_dir(&sinkdir).unwrap();
    let target = dir.path().join("elsewhere");
    std::os::unix::fs::symlink(&target, sinkdir.join(file::LOCK_FILE)).unwrap();
    let e = new_sink_bounded(&sinkdir).expect("returns").unwrap_err();
    assert_eq!(e.code(), "not_regular_file", "{e}");
    assert!(!target.exists(), "the link was followed");
    // A FIFO there: refused at once, not waited on for a writer.
    let fifodir = dir.path().join("fifo");
    std::fs::create_dir(&fifodir).unwrap();
    let st = std::process::Command::new("mkfifo")
        .arg(fifodir.join(file::LOCK_FILE))
        .status()
        .unwrap();
    assert!(st.success());
    let e = new_sink_bounded(&fifodir)
        .expect("FileSink::new blocked on a FIFO")
        .unwrap_err();
    assert_eq!(e.code(), "not_regular_file", "{e}");
    // The neighbour: a regular lock file an earlier run left is taken again.
    let again = dir.path().join("again");
    drop(FileSink::new(&again).unwrap());
    assert!(again.join(file::LOCK_FILE).is_file());
    drop(new_sink_bounded(&again).expect("returns").unwrap());
}
