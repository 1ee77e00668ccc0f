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
//! A journal is opened by one process at a time (an exclusive lock on the file:
//! `journal_locked`). A run refuses a journal that still holds undelivered batches
//! (`journal_undelivered`) and never empties one: only a journal whose every batch is
//! delivered is replaced, atomically, by an empty one.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use tokio::sync::oneshot;

use crate::error::{LiveError, Result};

/// The file's first bytes.
pub const MAGIC: &[u8; 20] = b"jouleclaw-journal/1\n";
/// A batch record.
pub const KIND_BATCH: u8 = 1;
/// A delivered mark.
pub const KIND_DELIVERED: u8 = 2;
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
            .append(true)
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
                    .append(true)
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
        }
    }

    fn write_header(&mut self) -> Result<()> {
        self.file
            .write_all(MAGIC)
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
            .append(true)
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
        let mut batches: BTreeMap<u64, Record> = BTreeMap::new();
        let mut delivered = 0u64;
        let mut at = MAGIC.len() as u64;
        let mut reader = std::io::BufReader::with_capacity(1 << 16, &j.file);
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
                // Cut short: a torn tail, whatever the length says (a length torn too may be
                // larger than MAX_PAYLOAD).
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
                KIND_DELIVERED => {
                    let off = <[u8; 8]>::try_from(payload)
                        .map(u64::from_be_bytes)
                        .map_err(|_| corrupt(path, format!("delivered mark at {at}")))?;
                    if batches.remove(&off).is_none() && !j.was_batch(off, at) {
                        return Err(corrupt(
                            path,
                            format!("delivered mark at {at} names no batch ({off})"),
                        ));
                    }
                    delivered += 1;
                }
                other => return Err(corrupt(path, format!("record at {at}: kind {other}"))),
            }
            at += total;
        };
        drop(reader);
        j.recovered = Recovered {
            batches: batches.len() as u64 + delivered,
            delivered,
            torn_bytes: torn_at.map_or(0, |t| len - t),
        };
        if let Some(t) = torn_at
            && repair
        {
            j.file.set_len(t).map_err(|e| io(path, &e))?;
            j.file.sync_all().map_err(|e| io(path, &e))?;
        }
        j.end = torn_at.unwrap_or(len);
        j.pending_bytes = batches.values().map(Record::file_bytes).sum();
        j.undelivered = batches;
        Ok(j)
    }

    // A delivered mark may repeat (a mark written twice is harmless): the offset must still
    // be an earlier record boundary. Kept simple: accept a repeated mark for an offset before
    // the mark itself.
    fn was_batch(&self, off: u64, at: u64) -> bool {
        off >= MAGIC.len() as u64 && off < at
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
    /// bound; the others are still written.
    pub fn append(&mut self, items: &[(&str, &[u8], u64)]) -> Vec<Result<Record>> {
        let mut out = Vec::with_capacity(items.len());
        let mut wrote = false;
        for (subject, body, unix_ms) in items {
            out.push(self.append_one(subject, body, *unix_ms));
            wrote = true;
        }
        if wrote && let Err(e) = self.file.sync_data() {
            let e = io(&self.path, &e);
            for r in &mut out {
                if r.is_ok() {
                    *r = Err(e.clone());
                }
            }
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
        let offset = self.end;
        if let Err(e) = self.file.write_all(&bytes) {
            // A partial write is a torn tail: cut it off so later records stay readable.
            let _ = self.file.set_len(offset);
            return Err(io(&self.path, &e));
        }
        self.end += bytes.len() as u64;
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

    /// Marks batches delivered (one write each, one `fsync`). Unknown offsets are ignored.
    pub fn mark_delivered(&mut self, offsets: &[u64]) -> Result<()> {
        let mut wrote = false;
        for off in offsets {
            let Some(rec) = self.undelivered.remove(off) else {
                continue;
            };
            self.pending_bytes = self.pending_bytes.saturating_sub(rec.file_bytes());
            let bytes = frame(KIND_DELIVERED, &off.to_be_bytes())?;
            self.file
                .write_all(&bytes)
                .map_err(|e| io(&self.path, &e))?;
            self.end += bytes.len() as u64;
            wrote = true;
        }
        if wrote {
            self.file.sync_data().map_err(|e| io(&self.path, &e))?;
        }
        Ok(())
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
                            Cmd::Append { .. } | Cmd::Delivered(_) => {}
                        }
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

    /// Waits until every mark sent before is on disk; returns the undelivered batches and
    /// bytes then.
    pub async fn flush(&self) -> Result<(usize, u64)> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(Cmd::Flush(reply)).map_err(|_| gone())?;
        rx.await.map_err(|_| gone())?
    }
}
