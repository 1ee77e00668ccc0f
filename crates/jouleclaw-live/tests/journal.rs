//! The write-ahead journal on its own: framing, torn tails, corruption, the rules that keep an
//! undelivered journal from being emptied, the lock, the bound and the writer thread.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use jouleclaw_live::journal::{FRAME_OVERHEAD, Journal, JournalWriter, MAGIC};

fn append(j: &mut Journal, subject: &str, body: &[u8]) -> u64 {
    j.append(&[(subject, body, 1)])
        .pop()
        .unwrap()
        .unwrap()
        .offset
}

fn three(path: &Path) -> Vec<u64> {
    let mut j = Journal::create(path, 1 << 20).unwrap();
    vec![
        append(&mut j, "jouleclaw.s.a", b"first body"),
        append(&mut j, "jouleclaw.s.b", b"second body"),
        append(
            &mut j,
            "jouleclaw.s.a",
            b"third body, longer than the others",
        ),
    ]
}

#[test]
fn records_come_back_with_their_bodies_and_delivered_marks_hold() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j");
    let offs = three(&path);
    {
        let mut j = Journal::open(&path, 1 << 20).unwrap();
        assert_eq!(j.undelivered_count(), 3);
        let recs: Vec<_> = j.undelivered().cloned().collect();
        assert_eq!(recs[1].subject, "jouleclaw.s.b");
        assert_eq!(
            j.read_body(&recs[2]).unwrap(),
            b"third body, longer than the others"
        );
        j.mark_delivered(&[offs[1]]).unwrap();
    }
    let j = Journal::open(&path, 1 << 20).unwrap();
    let left: Vec<u64> = j.undelivered().map(|r| r.offset).collect();
    assert_eq!(left, vec![offs[0], offs[2]]);
    assert_eq!(j.recovered().batches, 3);
    assert_eq!(j.recovered().delivered, 1);
    assert_eq!(j.recovered().torn_bytes, 0);
}

#[test]
fn a_torn_tail_is_cut_off_and_the_records_before_it_survive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j");
    three(&path);
    let whole = std::fs::read(&path).unwrap();
    // A fourth record cut after its length and part of its payload, as a kill -9 mid-write
    // leaves it.
    let mut torn = whole.clone();
    torn.extend_from_slice(&[0, 0, 0, 40, 1, 0, 13, b'j', b'o']);
    std::fs::write(&path, &torn).unwrap();
    let j = Journal::open(&path, 1 << 20).unwrap();
    assert_eq!(j.undelivered_count(), 3);
    assert_eq!(j.recovered().torn_bytes, 9);
    drop(j);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        whole,
        "the torn tail is cut off"
    );
    // A last record of full length whose check fails (its bytes never all reached the disk).
    let mut j = Journal::open(&path, 1 << 20).unwrap();
    append(&mut j, "jouleclaw.s.c", b"fourth");
    drop(j);
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 40] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let j = Journal::open(&path, 1 << 20).unwrap();
    assert_eq!(j.undelivered_count(), 3);
    assert_eq!(j.recovered().torn_bytes, FRAME_OVERHEAD + 2 + 13 + 8 + 6);
    // Appending after a recovery goes on from the cut.
    let mut j = j;
    append(&mut j, "jouleclaw.s.d", b"fifth");
    drop(j);
    assert_eq!(
        Journal::open(&path, 1 << 20).unwrap().undelivered_count(),
        4
    );
}

#[test]
fn damage_before_the_tail_is_refused_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j");
    three(&path);
    let mut bytes = std::fs::read(&path).unwrap();
    // A byte of the first record's body.
    bytes[MAGIC.len() + 5 + 2 + 13 + 8] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let e = Journal::open(&path, 1 << 20).unwrap_err();
    assert_eq!(e.code(), "journal_corrupt", "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    let e = Journal::create(&path, 1 << 20).unwrap_err();
    assert_eq!(e.code(), "journal_corrupt", "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    // An empty file (its creator died before the header reached the disk) held nothing: it is
    // taken as an empty journal; a header cut short is not.
    std::fs::write(&path, b"").unwrap();
    assert_eq!(
        Journal::open(&path, 1 << 20).unwrap().undelivered_count(),
        0
    );
    assert_eq!(std::fs::read(&path).unwrap(), MAGIC);
    std::fs::write(&path, &MAGIC[..7]).unwrap();
    assert_eq!(
        Journal::open(&path, 1 << 20).unwrap_err().code(),
        "journal_corrupt"
    );
    // Not a journal at all.
    std::fs::write(&path, b"live-journal.bin of an older version").unwrap();
    assert_eq!(
        Journal::open(&path, 1 << 20).unwrap_err().code(),
        "journal_corrupt"
    );
}

#[test]
fn a_new_run_refuses_an_undelivered_journal_and_never_empties_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j");
    let offs = three(&path);
    let before = std::fs::read(&path).unwrap();
    let e = Journal::create(&path, 1 << 20).unwrap_err();
    assert_eq!(e.code(), "journal_undelivered", "{e}");
    assert!(e.to_string().contains("journal replay"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // With a torn tail (a run killed mid-write) the refusal changes nothing either: the tail
    // is cut by the replay, not by the refused run.
    let mut torn = before.clone();
    torn.extend_from_slice(&[0, 0, 0, 40, 1, 0, 13, b'j', b'o']);
    std::fs::write(&path, &torn).unwrap();
    let e = Journal::create(&path, 1 << 20).unwrap_err();
    assert_eq!(e.code(), "journal_undelivered", "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), torn);
    // Its neighbour: once every batch is delivered, a new run starts from an empty journal.
    Journal::open(&path, 1 << 20)
        .unwrap()
        .mark_delivered(&offs)
        .unwrap();
    let j = Journal::create(&path, 1 << 20).unwrap();
    assert_eq!(j.undelivered_count(), 0);
    drop(j);
    assert_eq!(std::fs::read(&path).unwrap(), MAGIC);
}

#[test]
fn one_process_at_a_time_and_the_bound_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j");
    let mut j = Journal::create(&path, 200).unwrap();
    assert_eq!(
        Journal::open(&path, 200).unwrap_err().code(),
        "journal_locked"
    );
    append(&mut j, "s", &[0u8; 100]);
    let r = j.append(&[("s", &[0u8; 100], 1)]).pop().unwrap();
    assert_eq!(r.unwrap_err().code(), "journal_full");
    assert_eq!(j.undelivered_count(), 1);
    drop(j);
    assert_eq!(Journal::open(&path, 200).unwrap().undelivered_count(), 1);
}

#[tokio::test(flavor = "current_thread")]
async fn the_writer_thread_journals_reads_back_and_marks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j");
    let w = JournalWriter::start(Journal::create(&path, 1 << 20).unwrap()).unwrap();
    let mut recs = Vec::new();
    for i in 0..20u8 {
        recs.push(
            w.append("jouleclaw.s.x".into(), bytes::Bytes::from(vec![i; 64]))
                .await
                .unwrap(),
        );
    }
    assert_eq!(w.read(recs[7].clone()).await.unwrap(), vec![7u8; 64]);
    for r in &recs[..15] {
        w.delivered(r.offset);
    }
    assert_eq!(w.flush().await.unwrap().0, 5);
    drop(w);
    // The thread ends with its last handle; the lock goes with it (bounded wait: 5 s).
    let mut opened = None;
    for _ in 0..50 {
        match Journal::open(&path, 1 << 20) {
            Ok(j) => {
                opened = Some(j);
                break;
            }
            Err(e) if e.code() == "journal_locked" => {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(opened.unwrap().undelivered_count(), 5);
}
