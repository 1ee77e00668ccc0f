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

/// A journal `j` in a new temporary folder (kept while the first value lives) with the
/// [`three`] records: the folder, the journal's path and the records' offsets.
fn three_in_new_dir() -> (tempfile::TempDir, std::path::PathBuf, Vec<u64>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j");
    let offs = three(&path);
    (dir, path, offs)
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
    let (_dir, path, offs) = three_in_new_dir();
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
    let (_dir, path, _) = three_in_new_dir();
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
    let (_dir, path, _) = three_in_new_dir();
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
    let (_dir, path, offs) = three_in_new_dir();
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

/// A tmpfs of 64 KiB mounted on a fresh folder, unmounted when dropped: a real file system
/// that fills up. Mounting needs root.
///
/// One at a time in this test binary: a `mount` or `umount` child forked by one test holds a
/// copy of every descriptor the process has open until it executes, so another test's filler
/// file, unlinked by `free`, could keep its pages until that child's `exec`, and the test's
/// next write would see a disk that is still full.
struct SmallDisk {
    dir: tempfile::TempDir,
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
}

static SMALL_DISKS: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl SmallDisk {
    fn mount() -> Self {
        // A test that failed while holding the lock leaves it poisoned; its disk is gone.
        let one_at_a_time = SMALL_DISKS
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = tempfile::tempdir().unwrap();
        let st = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(dir.path())
            .status()
            .unwrap();
        assert!(st.success(), "mount -t tmpfs (needs root)");
        Self {
            dir,
            _one_at_a_time: one_at_a_time,
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the disk with a filler file until a write fails (the disk is full).
    fn fill(&self) {
        use std::io::Write as _;
        let mut f = std::fs::File::create(self.path().join("filler")).unwrap();
        let chunk = [0u8; 512];
        let mut wrote = 0usize;
        while f.write_all(&chunk).is_ok() {
            wrote += 1;
            assert!(wrote < 1024, "a 64 KiB tmpfs took 512 KiB");
        }
    }

    fn free(&self) {
        std::fs::remove_file(self.path().join("filler")).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(self.dir.path())
            .status();
    }
}

/// A batch body that makes the journal end 30 bytes before a page boundary (header 20,
/// record overhead 37 + 2 + 13 + 8): a delivered mark (45 bytes) written next on a full
/// tmpfs gets its first 30 bytes into the file's last page and no more, as a full disk tore
/// one.
const TEARING_BODY: usize = 4096 - 30 - 20 - 60;

#[test]
#[ignore = "mounts a 64 KiB tmpfs (a real full file system): needs root; run by .ci/suites/40-live-journal.sh"]
fn a_mark_torn_by_a_full_disk_is_cut_back_and_the_journal_stays_replayable() {
    let disk = SmallDisk::mount();
    let path = disk.path().join("j");
    let mut j = Journal::create(&path, 1 << 20).unwrap();
    let first = append(&mut j, "jouleclaw.s.a", &vec![7u8; TEARING_BODY]);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096 - 30);
    disk.fill();
    let e = j.mark_delivered(&[first]).unwrap_err();
    assert_eq!(e.code(), "io", "{e}");
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        4096 - 30,
        "the torn mark is cut back"
    );
    // The disk frees up; the run goes on: a batch, its mark, then the end.
    disk.free();
    let second = append(&mut j, "jouleclaw.s.b", b"after the full disk");
    j.mark_delivered(&[second]).unwrap();
    drop(j);
    // What a replay opens: readable, every record in place, the owed mark written with the
    // next group.
    let j = Journal::open(&path, 1 << 20).unwrap();
    assert_eq!(j.recovered().torn_bytes, 0);
    assert_eq!(j.recovered().batches, 2);
    assert_eq!(j.undelivered_count(), 0);
}

#[test]
#[ignore = "mounts a 64 KiB tmpfs (a real full file system): needs root; run by .ci/suites/40-live-journal.sh"]
fn a_full_disk_refuses_appends_cut_back_and_the_writer_reports_every_failed_write() {
    let disk = SmallDisk::mount();
    let path = disk.path().join("j");
    let mut j = Journal::create(&path, 1 << 20).unwrap();
    let first = append(&mut j, "jouleclaw.s.a", &vec![7u8; TEARING_BODY]);
    disk.fill();
    // A batch on the full disk: refused, cut back, nothing listed.
    let r = j
        .append(&[("jouleclaw.s.c", &[1u8; 2000][..], 1)])
        .pop()
        .unwrap();
    assert_eq!(r.unwrap_err().code(), "io");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096 - 30);
    assert_eq!(j.undelivered_count(), 1);
    // A mark that cannot be written: owed, the batch stays undelivered.
    assert!(j.mark_delivered(&[first]).is_err());
    assert_eq!(j.unmarked_count(), 1);
    assert_eq!(j.undelivered_count(), 1);
    // The writer thread ends with the disk still full: it reports the owed mark and the
    // failed writes, and the file it leaves is what a replay reads.
    let w = JournalWriter::start(j).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let fin = rt.block_on(w.finish()).unwrap();
    assert_eq!(fin.undelivered, 1);
    assert_eq!(fin.unmarked, 1);
    assert!(fin.write_errors >= 3, "{fin:?}");
    assert!(
        fin.last_error.as_deref().unwrap().contains("No space left"),
        "{fin:?}"
    );
    let j = open_when_unlocked(&path);
    assert_eq!(j.undelivered_count(), 1);
    drop(j);
    // Its neighbour: with room again the owed mark is written and nothing is left.
    disk.free();
    let mut j = open_when_unlocked(&path);
    j.mark_delivered(&[first]).unwrap();
    let fin = j.finish().unwrap();
    assert_eq!((fin.undelivered, fin.unmarked, fin.write_errors), (0, 0, 0));
}

#[test]
fn the_writer_ends_refusing_a_journal_a_replay_could_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j");
    let mut j = Journal::create(&path, 1 << 20).unwrap();
    append(&mut j, "jouleclaw.s.a", b"first body");
    // Bytes the journal did not write land after its end (another writer, a write that
    // could not be cut back): a replay would refuse the file, so the end says so.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&[0, 0, 0, 8, 2, 1, 2, 3]);
    let mut more = bytes.clone();
    more.extend_from_slice(&[9u8; 40]);
    std::fs::write(&path, &more).unwrap();
    let e = j.finish().unwrap_err();
    assert_eq!(e.code(), "journal_corrupt", "{e}");
    drop(j);
    // The neighbour: the journal as written verifies and lists its batch.
    std::fs::write(&path, &bytes[..bytes.len() - 8]).unwrap();
    let mut j = Journal::open(&path, 1 << 20).unwrap();
    let fin = j.finish().unwrap();
    assert_eq!((fin.undelivered, fin.unmarked), (1, 0));
}

#[test]
fn a_damaged_length_never_cuts_the_complete_records_after_it() {
    let (dir, path, offs) = three_in_new_dir();
    let whole = std::fs::read(&path).unwrap();
    // The second record's length grown so that it runs past the end of the file: read as
    // a torn tail, it would cut the third (complete, valid) record.
    let mut bad = whole.clone();
    let at = usize::try_from(offs[1]).unwrap();
    bad[at..at + 4].copy_from_slice(&200u32.to_be_bytes());
    std::fs::write(&path, &bad).unwrap();
    let e = Journal::open(&path, 1 << 20).unwrap_err();
    assert_eq!(e.code(), "journal_corrupt", "{e}");
    assert!(e.to_string().contains(&format!("{}", offs[2])), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), bad, "nothing cut");
    // A delivered mark after it is a complete record too.
    let mut j = Journal::create(&dir.path().join("k"), 1 << 20).unwrap();
    let a = append(&mut j, "jouleclaw.s.a", b"first body");
    let b = append(&mut j, "jouleclaw.s.b", b"second body");
    j.mark_delivered(&[a]).unwrap();
    drop(j);
    let k = dir.path().join("k");
    let mut bad = std::fs::read(&k).unwrap();
    let at = usize::try_from(b).unwrap();
    bad[at..at + 4].copy_from_slice(&100u32.to_be_bytes());
    std::fs::write(&k, &bad).unwrap();
    assert_eq!(
        Journal::open(&k, 1 << 20).unwrap_err().code(),
        "journal_corrupt"
    );
    // The neighbour: a last record really torn (nothing complete after it) is still cut.
    let mut torn = whole;
    torn.extend_from_slice(&[0, 0, 0, 200, 1, 0, 13, b'j', b'o']);
    torn.extend_from_slice(&[5u8; 60]);
    std::fs::write(&path, &torn).unwrap();
    let j = Journal::open(&path, 1 << 20).unwrap();
    assert_eq!(j.recovered().torn_bytes, 69);
    assert_eq!(j.undelivered_count(), 3);
}

#[test]
fn an_abandoned_record_no_longer_holds_the_journal() {
    let (dir, path, offs) = three_in_new_dir();
    let mut j = Journal::open(&path, 1 << 20).unwrap();
    j.mark_delivered(&[offs[0], offs[2]]).unwrap();
    // An offset that is no undelivered record is refused, nothing written.
    let before = std::fs::read(&path).unwrap();
    assert_eq!(j.abandon(offs[0]).unwrap_err().code(), "config");
    assert_eq!(j.abandon(offs[1] + 1).unwrap_err().code(), "config");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    j.abandon(offs[1]).unwrap();
    assert_eq!(j.undelivered_count(), 0);
    drop(j);
    let j = Journal::open(&path, 1 << 20).unwrap();
    assert_eq!(j.recovered().abandoned, 1);
    assert_eq!(j.recovered().delivered, 2);
    assert_eq!(j.undelivered_count(), 0);
    drop(j);
    // Its neighbour: without the mark the journal holds the record and a new run refuses it;
    // with it, a new run starts over.
    let mut without = std::fs::read(&path).unwrap();
    without.truncate(without.len() - (FRAME_OVERHEAD as usize + 8));
    let k = dir.path().join("k");
    std::fs::write(&k, &without).unwrap();
    assert_eq!(
        Journal::create(&k, 1 << 20).unwrap_err().code(),
        "journal_undelivered"
    );
    assert_eq!(
        Journal::create(&path, 1 << 20).unwrap().undelivered_count(),
        0
    );
}

/// `Journal::open`, retried while the journal's lock is still held (at most 50 tries, 20 ms
/// apart). The writer thread drops the journal before it answers, yet with the two tmpfs tests
/// run side by side the reopen saw `journal_locked` in 2 of 3 runs (9 of 9 pass with the
/// retry): most likely the other test's `mount`/`umount` child, forked while the journal was
/// open, still holds a copy of its descriptor (and so the `flock`) until it execs. Any other
/// refusal fails at once.
fn open_when_unlocked(path: &std::path::Path) -> Journal {
    for _ in 0..50 {
        match Journal::open(path, 1 << 20) {
            Err(e) if e.code() == "journal_locked" => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            other => return other.unwrap(),
        }
    }
    panic!("{} stayed locked for a second", path.display());
}
