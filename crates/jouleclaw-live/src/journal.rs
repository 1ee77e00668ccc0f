//! The JetStream sink's write-ahead journal: every batch is framed, checksummed and
//! `fsync`ed to a local file before it is published, and marked delivered once the cluster
//! acknowledged it. What was not marked delivered when a run ends (the cluster down, the
//! process killed) is replayed by [`replay`](crate::jetstream::replay) (`jouleclaw journal replay FILE --sink URL`).
//! Normative: `spec/LIVE.md` section 6.4.
//!
//! File format: the 20-byte header [`MAGIC`], then records, each
//! `len: u32 BE | kind: u8 | payload: len bytes | check: 32 bytes`, where `check` is BLAKE3 of
//! `len | kind | payload`. Kinds: [`KIND_BATCH`] (payload `subject_len: u16 BE | subject |
//! journaled_unix_ms: u64 BE | body`, the body being the JetStream message body) and
//! [`KIND_DELIVERED`] (payload `offset: u64 BE`, the offset of the batch record delivered).
//!
//! Recovery: a last record cut short, or a last record whose check fails and which ends at the
//! end of the file, is a **torn tail** (a write the process did not finish; its batch was never
//! reported journaled): it is cut off when the journal is opened for writing. A record whose
//! check fails with more bytes after it, a bad header or a delivered mark naming no batch is
//! **corruption**: the journal is refused (`journal_corrupt`) and left as it is.
//!
//! Writes: every record and mark is written at the journal's tracked end (a positioned write,
//! never an append to whatever the file holds); a write that fails (a full disk) is **cut
//! back** to that end, so what follows it stays readable, and the failure is counted and
//! reported ([`Finished`]). A delivered mark that could not be written is kept and written
//! with the next group; a group whose `fsync` fails is cut back as a whole. A write that
//! cannot be cut back leaves the file's end unknown: the journal then takes no more writes
//! (`io`), and [`JournalWriter::finish`] refuses it. Before the writer ends with batches left,
//! it reads the whole file again as a replay would ([`Journal::verify`]).
//!
//! A journal is opened by one process at a time (an exclusive lock on the file:
//! `journal_locked`). A run refuses a journal that still holds undelivered batches
//! (`journal_undelivered`) and never empties one: only a journal whose every batch is
//! delivered is replaced, atomically, by an empty one.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom};
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};

use tokio::sync::oneshot;

use crate::error::{LiveError, Result};

/// The file's first bytes.
pub const MAGIC: &[u8; 20] = b"jouleclaw-journal/1\n";
/// A batch record.
pub const KIND_BATCH: u8 = 1;
/// A delivered mark.
pub const KIND_DELIVERED: u8 = 2;
/// An abandoned mark (payload as [`KIND_DELIVERED`]): the batch record at that offset cannot
/// be delivered (it is no batch the sink wrote, or names another subject) and the operator
/// gave it up (`jouleclaw journal replay --abandon OFFSET`); it no longer counts as
/// undelivered.
pub const KIND_ABANDONED: u8 = 3;
/// Bytes of a record besides its payload (length, kind, check).
pub const FRAME_OVERHEAD: u64 = 4 + 1 + 32;
/// The largest payload a record may have (64 MiB); a longer length is corruption.
pub const MAX_PAYLOAD: u32 = 64 << 20;

/// One undelivered batch in the journal: where it is, not its bytes (read on demand).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The record's offset in the file (its identity).
    pub offset: u64,
    /// The subject it is published on.
    pub subject: String,
    /// When it was journaled (Unix ms, the wall clock).
    pub journaled_unix_ms: u64,
    /// Where the body starts in the file, and its length.
    body_at: u64,
    /// The body's length.
    pub body_len: u64,
}

impl Record {
    /// The bytes this record takes in the file.
    pub fn file_bytes(&self) -> u64 {
        self.body_len + self.subject.len() as u64 + 2 + 8 + FRAME_OVERHEAD
    }
}

/// What opening a journal found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Batch records in the file.
    pub batches: u64,
    /// Of them, marked delivered.
    pub delivered: u64,
    /// Of them, abandoned as undeliverable.
    pub abandoned: u64,
    /// Bytes of a torn tail cut off (0: none).
    pub torn_bytes: u64,
}

fn corrupt(path: &Path, m: impl core::fmt::Display) -> LiveError {
    LiveError::Sink {
        code: "journal_corrupt",
        message: format!("{}: {m}", path.display()),
    }
}

fn io(path: &Path, e: &std::io::Error) -> LiveError {
    LiveError::io(&path.display().to_string(), e)
}

fn frame(kind: u8, payload: &[u8]) -> Result<Vec<u8>> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|l| *l <= MAX_PAYLOAD)
        .ok_or_else(|| LiveError::Sink {
            code: "journal_full",
            message: format!("a record of {} bytes exceeds {MAX_PAYLOAD}", payload.len()),
        })?;
    let mut out = Vec::with_capacity(payload.len() + FRAME_OVERHEAD as usize);
    out.extend_from_slice(&len.to_be_bytes());
    out.push(kind);
    out.extend_from_slice(payload);
    let check = blake3::hash(&out);
    out.extend_from_slice(check.as_bytes());
    Ok(out)
}

/// The journal file, opened and locked. Synchronous: the sink drives it from its own thread
/// ([`JournalWriter`]).
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: File,
    end: u64,
    max_bytes: u64,
    pending_bytes: u64,
    undelivered: BTreeMap<u64, Record>,
    recovered: Recovered,
    /// Batches acknowledged whose delivered mark is not on disk yet (its write failed): each
    /// is still in `undelivered`, and is written with the next group of marks.
    unmarked: BTreeSet<u64>,
    /// Writes (records, marks, `fsync`s) that failed and were cut back.
    write_errors: u64,
    /// The last of them.
    last_error: Option<LiveError>,
    /// A failed write that could not be cut back: the file's end is unknown, so nothing more
    /// is written.
    broken: Option<String>,
}

/// What the journal's writer reports when it ends ([`JournalWriter::finish`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Finished {
    /// Batches the file lists undelivered (verified by reading it again when not 0).
    pub undelivered: usize,
    /// Their bytes.
    pub bytes: u64,
    /// Of them, acknowledged by the cluster but without a delivered mark on disk (the mark's
    /// write failed, also when retried): a replay finds them stored and marks them.
    pub unmarked: usize,
    /// Writes that failed and were cut back during the run.
    pub write_errors: u64,
    /// The last such failure.
    pub last_error: Option<String>,
}

impl Journal {
    /// Opens `path` for a new run: creates it (the parent folder must exist) or, when it
    /// exists, recovers it and refuses it (`journal_undelivered`) while it holds an
    /// undelivered batch; a journal whose batches are all delivered is replaced by an empty
    /// one (create-new, rename, `fsync` of the folder). `max_bytes` bounds the undelivered
    /// bytes.
    pub fn create(path: &Path, max_bytes: u64) -> Result<Self> {
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(file) => {
                lock(path, &file)?;
                let mut j = Self::fresh(path, file, max_bytes);
                j.write_header()?;
                sync_parent(path)?;
                Ok(j)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // Read, not repaired: a refused run leaves the journal byte for byte as it was
                // (a torn tail is cut by the replay that opens it).
                let old = Self::read(path, max_bytes, false)?;
                if !old.undelivered.is_empty() {
                    return Err(LiveError::Sink {
                        code: "journal_undelivered",
                        message: format!(
                            "{} holds {} undelivered batches: replay it first (jouleclaw journal replay {} --sink URL)",
                            path.display(),
                            old.undelivered.len(),
                            path.display()
                        ),
                    });
                }
                // Everything delivered: start over in a new file renamed over the old one
                // while the old one is still locked.
                let tmp = path.with_extension(format!("new-{}", std::process::id()));
                let file = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&tmp)
                    .map_err(|e| io(&tmp, &e))?;
                lock(&tmp, &file)?;
                let mut j = Self::fresh(path, file, max_bytes);
                j.write_header()?;
                std::fs::rename(&tmp, path).map_err(|e| io(path, &e))?;
                sync_parent(path)?;
                drop(old);
                Ok(j)
            }
            Err(e) => Err(io(path, &e)),
        }
    }

    fn fresh(path: &Path, file: File, max_bytes: u64) -> Self {
        Self {
            path: path.to_owned(),
            file,
            end: 0,
            max_bytes,
            pending_bytes: 0,
            undelivered: BTreeMap::new(),
            recovered: Recovered::default(),
            unmarked: BTreeSet::new(),
            write_errors: 0,
            last_error: None,
            broken: None,
        }
    }

    fn write_header(&mut self) -> Result<()> {
        self.file
            .write_all_at(MAGIC, 0)
            .and_then(|()| self.file.sync_all())
            .map_err(|e| io(&self.path, &e))?;
        self.end = MAGIC.len() as u64;
        Ok(())
    }

    /// Opens an existing journal (for replay): locks it, reads every record, cuts a torn tail
    /// off, refuses corruption without changing the file.
    pub fn open(path: &Path, max_bytes: u64) -> Result<Self> {
        Self::read(path, max_bytes, true)
    }

    /// [`Journal::open`]; with `repair` false nothing is written (no header into an empty file,
    /// no torn tail cut): for a check that may refuse.
    fn read(path: &Path, max_bytes: u64, repair: bool) -> Result<Self> {
        let meta = std::fs::symlink_metadata(path).map_err(|e| io(path, &e))?;
        if !meta.file_type().is_file() {
            return Err(LiveError::Config {
                message: format!("{}: not a regular file", path.display()),
            });
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io(path, &e))?;
        lock(path, &file)?;
        let len = file.metadata().map_err(|e| io(path, &e))?.len();
        if len == 0 {
            // Created by a process that died before its header was on disk: nothing was ever
            // journaled in it.
            let mut j = Self::fresh(path, file, max_bytes);
            if repair {
                j.write_header()?;
            }
            return Ok(j);
        }
        let mut header = [0u8; 20];
        if len < MAGIC.len() as u64 {
            return Err(corrupt(path, "shorter than the journal header"));
        }
        file.read_exact(&mut header).map_err(|e| io(path, &e))?;
        if &header != MAGIC {
            return Err(corrupt(path, "not a jouleclaw journal (bad header)"));
        }
        let mut j = Self::fresh(path, file, max_bytes);
        let scan = scan(path, &j.file, len)?;
        j.recovered = Recovered {
            batches: scan.batches.len() as u64 + scan.delivered + scan.abandoned,
            delivered: scan.delivered,
            abandoned: scan.abandoned,
            torn_bytes: scan.torn_at.map_or(0, |t| len - t),
        };
        if let Some(t) = scan.torn_at
            && repair
        {
            j.file.set_len(t).map_err(|e| io(path, &e))?;
            j.file.sync_all().map_err(|e| io(path, &e))?;
        }
        j.end = scan.torn_at.unwrap_or(len);
        j.pending_bytes = scan.batches.values().map(Record::file_bytes).sum();
        j.undelivered = scan.batches;
        Ok(j)
    }

    /// Reads the whole file again as a replay would open it and checks that it is what this
    /// journal wrote: no torn tail, its end where the journal tracks it, and exactly the
    /// batches the journal holds undelivered listed undelivered. `journal_corrupt` otherwise
    /// (and for a journal whose end is unknown after a write that could not be cut back).
    pub fn verify(&self) -> Result<()> {
        if let Some(b) = &self.broken {
            return Err(corrupt(&self.path, b));
        }
        let len = self.file.metadata().map_err(|e| io(&self.path, &e))?.len();
        if len != self.end {
            return Err(corrupt(
                &self.path,
                format!("the file ends at {len}, its last record at {}", self.end),
            ));
        }
        let scan = scan(&self.path, &self.file, len)?;
        if let Some(t) = scan.torn_at {
            return Err(corrupt(&self.path, format!("a torn record at {t}")));
        }
        if !scan.batches.keys().eq(self.undelivered.keys()) {
            return Err(corrupt(
                &self.path,
                format!(
                    "the file lists {} undelivered batches, the journal {}",
                    scan.batches.len(),
                    self.undelivered.len()
                ),
            ));
        }
        Ok(())
    }

    /// The journal's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What opening found.
    pub fn recovered(&self) -> &Recovered {
        &self.recovered
    }

    /// The undelivered batches, in file order.
    pub fn undelivered(&self) -> impl Iterator<Item = &Record> {
        self.undelivered.values()
    }

    /// How many batches are undelivered.
    pub fn undelivered_count(&self) -> usize {
        self.undelivered.len()
    }

    /// Bytes of the undelivered records.
    pub fn pending_bytes(&self) -> u64 {
        self.pending_bytes
    }

    /// Appends batch records (one write each, then one `fsync` for all): when this returns
    /// `Ok`, every one is on disk. Refuses (`journal_full`) a batch that would pass the
    /// bound; the others are still written. A write that fails is cut back (that batch is
    /// refused, the others are still written); when the `fsync` fails every record of the
    /// group is cut back and refused.
    pub fn append(&mut self, items: &[(&str, &[u8], u64)]) -> Vec<Result<Record>> {
        let start = self.end;
        let mut out = Vec::with_capacity(items.len());
        for (subject, body, unix_ms) in items {
            out.push(self.append_one(subject, body, *unix_ms));
        }
        if out.iter().any(Result::is_ok)
            && let Err(e) = self.file.sync_data()
        {
            let e = io(&self.path, &e);
            for r in &mut out {
                if let Ok(rec) = r {
                    self.undelivered.remove(&rec.offset);
                    self.pending_bytes = self.pending_bytes.saturating_sub(rec.file_bytes());
                    *r = Err(e.clone());
                }
            }
            self.cut_back(start, &e, true);
        }
        out
    }

    fn append_one(&mut self, subject: &str, body: &[u8], unix_ms: u64) -> Result<Record> {
        let slen = u16::try_from(subject.len()).map_err(|_| LiveError::Config {
            message: format!("a subject of {} bytes", subject.len()),
        })?;
        let mut payload = Vec::with_capacity(2 + subject.len() + 8 + body.len());
        payload.extend_from_slice(&slen.to_be_bytes());
        payload.extend_from_slice(subject.as_bytes());
        payload.extend_from_slice(&unix_ms.to_be_bytes());
        payload.extend_from_slice(body);
        let bytes = frame(KIND_BATCH, &payload)?;
        if self.pending_bytes.saturating_add(bytes.len() as u64) > self.max_bytes {
            return Err(LiveError::Sink {
                code: "journal_full",
                message: format!(
                    "the journal holds {} undelivered bytes of {}; a batch of {} bytes does not fit",
                    self.pending_bytes,
                    self.max_bytes,
                    bytes.len()
                ),
            });
        }
        let offset = self.write_record(&bytes)?;
        let rec = Record {
            offset,
            subject: subject.to_owned(),
            journaled_unix_ms: unix_ms,
            body_at: offset + 5 + 2 + subject.len() as u64 + 8,
            body_len: body.len() as u64,
        };
        self.pending_bytes += rec.file_bytes();
        self.undelivered.insert(offset, rec.clone());
        Ok(rec)
    }

    /// Writes one framed record at the tracked end; returns its offset. A write that fails is
    /// cut back to that end, so the next record follows the last complete one.
    fn write_record(&mut self, bytes: &[u8]) -> Result<u64> {
        if let Some(b) = &self.broken {
            return Err(LiveError::Sink {
                code: "io",
                message: format!("{}: takes no more writes: {b}", self.path.display()),
            });
        }
        let at = self.end;
        match self.file.write_all_at(bytes, at) {
            Ok(()) => {
                self.end = at + bytes.len() as u64;
                Ok(at)
            }
            Err(e) => {
                let e = io(&self.path, &e);
                self.cut_back(at, &e, false);
                Err(e)
            }
        }
    }

    /// Cuts the file back to `to` after `cause` (a failed write or `fsync`), `fsync`ing the
    /// cut when `sync`. When that fails too the file's end is unknown: the journal is broken.
    fn cut_back(&mut self, to: u64, cause: &LiveError, sync: bool) {
        self.write_errors += 1;
        self.last_error = Some(cause.clone());
        let cut = self
            .file
            .set_len(to)
            .and_then(|()| if sync { self.file.sync_data() } else { Ok(()) });
        match cut {
            Ok(()) => self.end = to,
            Err(e) => {
                self.broken = Some(format!(
                    "a failed write ({cause}) could not be cut back to offset {to}: {e}"
                ));
            }
        }
    }

    /// Marks batches delivered (one write each, one `fsync`), with every mark whose write
    /// failed before. Unknown offsets are ignored. A batch stays undelivered until its mark
    /// is on disk: a mark whose write (or the group's `fsync`) fails is cut back, kept, and
    /// written with the next call; the error is returned (and counted).
    pub fn mark_delivered(&mut self, offsets: &[u64]) -> Result<()> {
        let mut todo = std::mem::take(&mut self.unmarked);
        todo.extend(offsets.iter().copied());
        let start = self.end;
        let mut written = Vec::new();
        let mut err = None;
        for off in todo {
            if !self.undelivered.contains_key(&off) {
                continue;
            }
            let bytes = frame(KIND_DELIVERED, &off.to_be_bytes())?;
            match self.write_record(&bytes) {
                Ok(_) => written.push(off),
                Err(e) => {
                    self.unmarked.insert(off);
                    err.get_or_insert(e);
                }
            }
        }
        if !written.is_empty() {
            match self.file.sync_data() {
                Ok(()) => {
                    for off in written {
                        if let Some(rec) = self.undelivered.remove(&off) {
                            self.pending_bytes =
                                self.pending_bytes.saturating_sub(rec.file_bytes());
                        }
                    }
                }
                Err(e) => {
                    let e = io(&self.path, &e);
                    self.cut_back(start, &e, true);
                    self.unmarked.extend(written);
                    err.get_or_insert(e);
                }
            }
        }
        err.map_or(Ok(()), Err)
    }

    /// Writes an abandoned mark for the undelivered batch record at `offset` (one write, one
    /// `fsync`; a failed write is cut back and returned): it no longer counts as undelivered.
    /// The caller decides that it cannot be delivered (`jetstream::replay_abandoning`).
    pub fn abandon(&mut self, offset: u64) -> Result<()> {
        if !self.undelivered.contains_key(&offset) {
            return Err(LiveError::Config {
                message: format!("no undelivered batch at offset {offset}"),
            });
        }
        let start = self.end;
        self.write_record(&frame(KIND_ABANDONED, &offset.to_be_bytes())?)?;
        if let Err(e) = self.file.sync_data() {
            let e = io(&self.path, &e);
            self.cut_back(start, &e, true);
            return Err(e);
        }
        if let Some(rec) = self.undelivered.remove(&offset) {
            self.pending_bytes = self.pending_bytes.saturating_sub(rec.file_bytes());
        }
        self.unmarked.remove(&offset);
        Ok(())
    }

    /// Acknowledged batches whose delivered mark is not on disk yet.
    pub fn unmarked_count(&self) -> usize {
        self.unmarked.len()
    }

    /// Writes that failed and were cut back, and the last one.
    pub fn write_errors(&self) -> (u64, Option<&LiveError>) {
        (self.write_errors, self.last_error.as_ref())
    }

    /// Writes the marks still owed, then checks the file ([`Journal::verify`]) when it holds
    /// undelivered batches or a write failed: what the writer reports when it ends.
    pub fn finish(&mut self) -> Result<Finished> {
        // A failure here is counted and leaves the marks owed: the batches stay undelivered.
        let _ = self.mark_delivered(&[]);
        if !self.undelivered.is_empty() || self.write_errors > 0 {
            self.verify()?;
        }
        Ok(Finished {
            undelivered: self.undelivered.len(),
            bytes: self.pending_bytes,
            unmarked: self.unmarked.len(),
            write_errors: self.write_errors,
            last_error: self.last_error.as_ref().map(ToString::to_string),
        })
    }

    /// Reads an undelivered batch's body back (verifying the record's checksum again).
    pub fn read_body(&self, rec: &Record) -> Result<Vec<u8>> {
        let mut f = &self.file;
        let total = usize::try_from(rec.body_at - rec.offset + rec.body_len)
            .map_err(|_| corrupt(&self.path, "record too large"))?;
        let mut buf = vec![0u8; total + 32];
        f.seek(SeekFrom::Start(rec.offset))
            .and_then(|_| f.read_exact(&mut buf))
            .map_err(|e| io(&self.path, &e))?;
        let (framed, check) = buf.split_at(total);
        if blake3::hash(framed).as_bytes() != check {
            return Err(corrupt(
                &self.path,
                format!("record at {} changed on disk", rec.offset),
            ));
        }
        Ok(framed[total - rec.body_len as usize..].to_vec())
    }
}

/// What reading a journal's records found.
struct Scan {
    /// The undelivered batches.
    batches: BTreeMap<u64, Record>,
    /// Delivered marks.
    delivered: u64,
    /// Abandoned marks.
    abandoned: u64,
    /// Where a torn tail starts.
    torn_at: Option<u64>,
}

/// Reads the records of a journal of `len` bytes whose header is checked.
fn scan(path: &Path, file: &File, len: u64) -> Result<Scan> {
    let mut batches: BTreeMap<u64, Record> = BTreeMap::new();
    let mut delivered = 0u64;
    let mut abandoned = 0u64;
    let mut at = MAGIC.len() as u64;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    reader.seek(SeekFrom::Start(at)).map_err(|e| io(path, &e))?;
    let torn_at = loop {
        if at == len {
            break None;
        }
        if len - at < 5 {
            break Some(at);
        }
        let mut head = [0u8; 5];
        reader.read_exact(&mut head).map_err(|e| io(path, &e))?;
        let plen = u32::from_be_bytes([head[0], head[1], head[2], head[3]]);
        let kind = head[4];
        let total = 5 + u64::from(plen) + 32;
        if len - at < total {
            // Cut short. A torn tail is the last record written and never finished, so no
            // complete record lies after its start: one that does (ending at the end of the
            // file) means this length is damaged, and cutting here would destroy records.
            if let Some(p) = record_ending_at_eof(path, file, at, len)? {
                return Err(corrupt(
                    path,
                    format!(
                        "record at {at}: its length ({plen}) runs past the end of the file, but a complete record at {p} follows"
                    ),
                ));
            }
            break Some(at);
        }
        if plen > MAX_PAYLOAD {
            return Err(corrupt(path, format!("record at {at}: length {plen}")));
        }
        let mut rest = vec![0u8; plen as usize + 32];
        reader.read_exact(&mut rest).map_err(|e| io(path, &e))?;
        let (payload, check) = rest.split_at(plen as usize);
        let mut hasher = blake3::Hasher::new();
        hasher.update(&head);
        hasher.update(payload);
        if hasher.finalize().as_bytes() != check {
            if at + total == len {
                break Some(at);
            }
            return Err(corrupt(
                path,
                format!("record at {at} fails its checksum and more records follow"),
            ));
        }
        match kind {
            KIND_BATCH => {
                let rec = parse_batch(at, payload)
                    .ok_or_else(|| corrupt(path, format!("batch record at {at}")))?;
                batches.insert(at, rec);
            }
            KIND_DELIVERED | KIND_ABANDONED => {
                let off = <[u8; 8]>::try_from(payload)
                    .map(u64::from_be_bytes)
                    .map_err(|_| corrupt(path, format!("mark at {at}")))?;
                // A mark may repeat (harmless): its offset must still be an earlier record
                // boundary.
                if batches.remove(&off).is_none() && !(off >= MAGIC.len() as u64 && off < at) {
                    return Err(corrupt(
                        path,
                        format!("mark at {at} names no batch ({off})"),
                    ));
                }
                if kind == KIND_DELIVERED {
                    delivered += 1;
                } else {
                    abandoned += 1;
                }
            }
            other => return Err(corrupt(path, format!("record at {at}: kind {other}"))),
        }
        at += total;
    };
    Ok(Scan {
        batches,
        delivered,
        abandoned,
        torn_at,
    })
}

/// The start of a complete record (its length, kind and check agree) that lies after `at`
/// and ends exactly at the end of the file, if one does. Linear in the tail: a candidate must
/// carry the one length that makes it end there, so at most a few are hashed. A tail longer
/// than the largest record is no torn record at all: corruption.
fn record_ending_at_eof(path: &Path, file: &File, at: u64, len: u64) -> Result<Option<u64>> {
    let tail_len = len - at;
    if tail_len > u64::from(MAX_PAYLOAD) + FRAME_OVERHEAD {
        return Err(corrupt(
            path,
            format!("record at {at}: {tail_len} bytes left, more than a record can be"),
        ));
    }
    let mut tail = vec![0u8; usize::try_from(tail_len).unwrap_or(0)];
    file.read_exact_at(&mut tail, at)
        .map_err(|e| io(path, &e))?;
    let n = tail.len();
    if n < FRAME_OVERHEAD as usize + 1 {
        return Ok(None);
    }
    for p in 1..=n - FRAME_OVERHEAD as usize {
        let plen = n - p - FRAME_OVERHEAD as usize;
        let Ok(l) = u32::try_from(plen) else { continue };
        if tail[p..p + 4] != l.to_be_bytes() {
            continue;
        }
        let kind = tail[p + 4];
        if !(kind == KIND_BATCH
            || ((kind == KIND_DELIVERED || kind == KIND_ABANDONED) && plen == 8))
        {
            continue;
        }
        if blake3::hash(&tail[p..n - 32]).as_bytes() == &tail[n - 32..] {
            return Ok(Some(at + p as u64));
        }
    }
    Ok(None)
}

fn parse_batch(offset: u64, payload: &[u8]) -> Option<Record> {
    let slen = usize::from(u16::from_be_bytes([*payload.first()?, *payload.get(1)?]));
    let subject = std::str::from_utf8(payload.get(2..2 + slen)?).ok()?;
    let ms = u64::from_be_bytes(payload.get(2 + slen..10 + slen)?.try_into().ok()?);
    let body_len = payload.len().checked_sub(10 + slen)? as u64;
    Some(Record {
        offset,
        subject: subject.to_owned(),
        journaled_unix_ms: ms,
        body_at: offset + 5 + 10 + slen as u64,
        body_len,
    })
}

fn lock(path: &Path, file: &File) -> Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(LiveError::Sink {
            code: "journal_locked",
            message: format!("{} is in use by another process", path.display()),
        }),
        Err(std::fs::TryLockError::Error(e)) => Err(io(path, &e)),
    }
}

fn sync_parent(path: &Path) -> Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(|e| io(parent, &e))
}

/// The wall clock in Unix ms (journal records only; never enters a receipt).
pub(crate) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

enum Cmd {
    Append {
        subject: String,
        body: bytes::Bytes,
        reply: oneshot::Sender<Result<Record>>,
    },
    Delivered(u64),
    Read {
        rec: Record,
        reply: oneshot::Sender<Result<Vec<u8>>>,
    },
    Flush(oneshot::Sender<Result<(usize, u64)>>),
    Finish(oneshot::Sender<Result<Finished>>),
    Abandon {
        offset: u64,
        reply: oneshot::Sender<Result<()>>,
    },
    Close(oneshot::Sender<()>),
}

/// A [`Journal`] on its own thread, so that its writes and `fsync`s never block the async
/// sink. Appends queued while an `fsync` runs are written together and share the next one
/// (group commit); delivered marks are written in groups too.
#[derive(Debug, Clone)]
pub struct JournalWriter {
    tx: std::sync::mpsc::Sender<Cmd>,
}

impl core::fmt::Debug for Cmd {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("journal command")
    }
}

fn gone() -> LiveError {
    LiveError::Sink {
        code: "sink_closed",
        message: "the journal thread stopped".to_owned(),
    }
}

impl JournalWriter {
    /// Starts the journal's thread.
    pub fn start(mut journal: Journal) -> Result<Self> {
        let (tx, rx) = std::sync::mpsc::channel::<Cmd>();
        std::thread::Builder::new()
            .name("jc-journal".to_owned())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut cmds = vec![first];
                    while let Ok(more) = rx.try_recv() {
                        cmds.push(more);
                        if cmds.len() >= 1024 {
                            break;
                        }
                    }
                    let mut appends = Vec::new();
                    let mut marks = Vec::new();
                    let mut rest = Vec::new();
                    for c in cmds {
                        match c {
                            Cmd::Append {
                                subject,
                                body,
                                reply,
                            } => appends.push((subject, body, reply)),
                            Cmd::Delivered(off) => marks.push(off),
                            other => rest.push(other),
                        }
                    }
                    if !appends.is_empty() {
                        let now = unix_ms();
                        let items: Vec<(&str, &[u8], u64)> = appends
                            .iter()
                            .map(|(s, b, _)| (s.as_str(), b.as_ref(), now))
                            .collect();
                        let results = journal.append(&items);
                        for ((_, _, reply), r) in appends.into_iter().zip(results) {
                            let _ = reply.send(r);
                        }
                    }
                    let marked = journal.mark_delivered(&marks);
                    let mut closing = None;
                    let mut finishing = None;
                    for c in rest {
                        match c {
                            Cmd::Read { rec, reply } => {
                                let _ = reply.send(journal.read_body(&rec));
                            }
                            Cmd::Flush(reply) => {
                                let _ = reply.send(marked.clone().map(|()| {
                                    (journal.undelivered_count(), journal.pending_bytes())
                                }));
                            }
                            Cmd::Close(reply) => closing = Some(reply),
                            Cmd::Finish(reply) => finishing = Some(reply),
                            Cmd::Abandon { offset, reply } => {
                                let _ = reply.send(journal.abandon(offset));
                            }
                            Cmd::Append { .. } | Cmd::Delivered(_) => {}
                        }
                    }
                    if let Some(reply) = finishing {
                        let r = journal.finish();
                        drop(journal);
                        let _ = reply.send(r);
                        return;
                    }
                    if let Some(reply) = closing {
                        // The file and its lock go before the answer.
                        drop(journal);
                        let _ = reply.send(());
                        return;
                    }
                }
            })
            .map_err(|e| LiveError::io("journal thread", &e))?;
        Ok(Self { tx })
    }

    /// Journals one batch body; resolves once it is on disk.
    pub async fn append(&self, subject: String, body: bytes::Bytes) -> Result<Record> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Cmd::Append {
                subject,
                body,
                reply,
            })
            .map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }

    /// Marks a batch delivered (written with the next group).
    pub fn delivered(&self, offset: u64) {
        let _ = self.tx.send(Cmd::Delivered(offset));
    }

    /// Reads a journaled body back.
    pub async fn read(&self, rec: Record) -> Result<Vec<u8>> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(Cmd::Read { rec, reply }).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }

    /// Closes the journal: every mark sent before is written, the file closed and its lock
    /// released when this returns. Later calls on any clone fail (`sink_closed`).
    pub async fn close(&self) {
        let (reply, rx) = oneshot::channel();
        if self.tx.send(Cmd::Close(reply)).is_ok() {
            let _ = rx.await;
        }
    }

    /// Ends the journal: every mark sent before (and every mark owed after a failed write) is
    /// written, the file read again as a replay would read it when it holds undelivered
    /// batches or a write failed ([`Journal::verify`]: `journal_corrupt` when it is not what
    /// the journal wrote), then closed and its lock released. Later calls on any clone fail
    /// (`sink_closed`).
    pub async fn finish(&self) -> Result<Finished> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(Cmd::Finish(reply)).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }

    /// Abandons an undelivered batch record ([`Journal::abandon`]).
    pub async fn abandon(&self, offset: u64) -> Result<()> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Cmd::Abandon { offset, reply })
            .map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }

    /// Waits until every mark sent before is on disk; returns the undelivered batches and
    /// bytes then.
    pub async fn flush(&self) -> Result<(usize, u64)> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(Cmd::Flush(reply)).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }
}
