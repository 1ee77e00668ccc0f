//! The writer protocol (`spec/STREAM-AT-REST.md`, section 4): every output is written to a new
//! file under a temporary name (created exclusively, so nothing planted there is followed or
//! truncated), synced, and renamed into place; a destination that is a directory or one of the
//! command's inputs is refused; a directory's writer holds an exclusive lock on it for the
//! whole write.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use crate::error::{Result, StoreError};
use crate::layout::{RUN_FILES, SUMMARY_JSON};
use crate::summary::RunSummary;

/// How many temporary names [`StagedFile::create`] tries before it gives up.
pub const STAGING_ATTEMPTS: u32 = 64;

/// A file written under a temporary name (`.NAME.PID.tmp` or `.NAME.PID.N.tmp`, created
/// exclusively) and renamed
/// into place only by [`StagedFile::commit`]; removed if dropped before that.
#[derive(Debug)]
pub struct StagedFile {
    tmp: PathBuf,
    dest: PathBuf,
    file: Option<std::io::BufWriter<File>>,
    hasher: blake3::Hasher,
}

impl StagedFile {
    /// Creates the temporary file for `dir/name`: `.NAME.PID.tmp`, or when something is
    /// already there (a file left by a writer killed before its commit, whose PID this process
    /// reuses) `.NAME.PID.N.tmp` for the first free `N` up to [`STAGING_ATTEMPTS`]; nothing
    /// found under those names is opened, followed or removed.
    pub fn create(dir: &Path, name: &str) -> Result<Self> {
        let pid = std::process::id();
        let mut attempt = 0u32;
        let (tmp, file) = loop {
            let tmp = if attempt == 0 {
                dir.join(format!(".{name}.{pid}.tmp"))
            } else {
                dir.join(format!(".{name}.{pid}.{attempt}.tmp"))
            };
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)
            {
                Ok(file) => break (tmp, file),
                Err(e)
                    if e.kind() == std::io::ErrorKind::AlreadyExists
                        && attempt + 1 < STAGING_ATTEMPTS =>
                {
                    attempt += 1;
                }
                Err(e) => return Err(StoreError::io(&tmp, e)),
            }
        };
        Ok(Self {
            tmp,
            dest: dir.join(name),
            file: Some(std::io::BufWriter::new(file)),
            hasher: blake3::Hasher::new(),
        })
    }

    /// Appends `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.hasher.update(bytes);
        match self.file.as_mut() {
            Some(f) => f.write_all(bytes).map_err(|e| StoreError::io(&self.tmp, e)),
            None => Err(StoreError::io(
                &self.tmp,
                std::io::Error::other("written after it was finished"),
            )),
        }
    }

    /// Flushes and syncs the temporary file; returns the BLAKE3 of what was written.
    pub fn finish(&mut self) -> Result<blake3::Hash> {
        if let Some(f) = self.file.take() {
            let file = f
                .into_inner()
                .map_err(|e| StoreError::io(&self.tmp, e.into_error()))?;
            file.sync_all().map_err(|e| StoreError::io(&self.tmp, e))?;
        }
        Ok(self.hasher.finalize())
    }

    /// Renames the temporary file into place (replacing a symbolic link there, never following
    /// it).
    pub fn commit(&mut self) -> Result<()> {
        self.finish()?;
        std::fs::rename(&self.tmp, &self.dest).map_err(|e| StoreError::io(&self.dest, e))?;
        self.tmp = PathBuf::new();
        Ok(())
    }

    /// Puts the temporary file into place only if nothing is there: [`StoreError::Exists`]
    /// when any entry has the name (a file, a symbolic link, even a dangling one, planted after
    /// the writer looked), which is left untouched. The no-replace step is a hard link of the
    /// temporary file at the name (`link(2)` never replaces and never follows a link at its
    /// destination), then the temporary name removed. On a file system without hard links
    /// (the link refused with `EPERM`, `EOPNOTSUPP` or `EMLINK`) it falls back to checking
    /// for the name and renaming, which a writer that takes no lock can race.
    pub fn commit_new(&mut self) -> Result<()> {
        self.finish()?;
        match std::fs::hard_link(&self.tmp, &self.dest) {
            Ok(()) => {
                std::fs::remove_file(&self.tmp).map_err(|e| StoreError::io(&self.tmp, e))?;
                self.tmp = PathBuf::new();
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(StoreError::Exists {
                path: self.dest.clone(),
            }),
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EPERM | libc::EOPNOTSUPP | libc::EMLINK)
                ) =>
            {
                if present(&self.dest)? {
                    return Err(StoreError::Exists {
                        path: self.dest.clone(),
                    });
                }
                self.commit()
            }
            Err(e) => Err(StoreError::io(&self.dest, e)),
        }
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if !self.tmp.as_os_str().is_empty() {
            self.file = None;
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Refuses `dest` when a rename into it would fail (it is a directory), would replace a special
/// file (a device, FIFO or socket: `--out /dev/null`), or would replace one of `inputs` (the
/// same file, also through a symbolic link at `dest`). A missing `dest` is fine.
pub fn check_destination(dest: &Path, inputs: &[&Path]) -> Result<()> {
    let meta = match std::fs::symlink_metadata(dest) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StoreError::io(dest, e)),
    };
    if meta.is_dir() {
        return Err(StoreError::Destination {
            path: dest.to_owned(),
            reason: "is a directory",
        });
    }
    if !meta.is_file() && !meta.is_symlink() {
        return Err(StoreError::Destination {
            path: dest.to_owned(),
            reason: "is a device, FIFO or socket",
        });
    }
    let ids: Vec<(u64, u64)> = inputs
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| (m.dev(), m.ino()))
        .collect();
    let followed = std::fs::metadata(dest).ok();
    let same = [Some(meta), followed]
        .into_iter()
        .flatten()
        .any(|m| ids.contains(&(m.dev(), m.ino())));
    if same {
        return Err(StoreError::Destination {
            path: dest.to_owned(),
            reason: "is one of the command's inputs",
        });
    }
    Ok(())
}

/// Writes `bytes` to `dest` through a [`StagedFile`] in `dest`'s directory, after
/// [`check_destination`] (checked again just before the rename).
pub fn write_output(dest: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<()> {
    check_destination(dest, inputs)?;
    let dir = match dest.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    let Some(name) = dest.file_name().and_then(|n| n.to_str()) else {
        return Err(StoreError::Destination {
            path: dest.to_owned(),
            reason: "is not a file name",
        });
    };
    let mut staged = StagedFile::create(&dir, name)?;
    staged.write(bytes)?;
    staged.finish()?;
    check_destination(dest, inputs)?;
    staged.commit()
}

/// Whether an entry of that name exists (of any kind, a dangling symbolic link included).
fn present(path: &Path) -> Result<bool> {
    crate::layout::exists(path)
}

/// Fsyncs a directory, so the renames into it are durable.
pub fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StoreError::io(dir, e))
}

/// Writes `dir/name`, which must not exist ([`StoreError::Exists`] when anything is there, a
/// symbolic link included: it is never replaced or followed, also when it is planted between
/// the check and the write: [`StagedFile::commit_new`]), through a [`StagedFile`], then fsyncs
/// `dir`.
pub fn write_new(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let dest = dir.join(name);
    if present(&dest)? {
        return Err(StoreError::Exists { path: dest });
    }
    let mut staged = StagedFile::create(dir, name)?;
    staged.write(bytes)?;
    staged.commit_new()?;
    sync_dir(dir)
}

/// Appends `parts` to `path` and fsyncs it: a stream's file growing batch by batch. With
/// `create` the file is created exclusively (nothing planted there is followed or appended
/// to); without it, it must exist and is opened without following a symbolic link there
/// (`O_NOFOLLOW`: a link planted between two batches is refused, its target untouched) and
/// without blocking (`O_NONBLOCK`): anything there but a regular file (a FIFO that would block
/// the writer until a reader came, a device) is refused with [`StoreError::Destination`]
/// before a byte is written.
pub fn append(path: &Path, create: bool, parts: &mut dyn Iterator<Item = &[u8]>) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut f = std::fs::OpenOptions::new()
        .create_new(create)
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // A FIFO without a reader refuses a non-blocking open for writing.
            Some(libc::ENXIO) => StoreError::Destination {
                path: path.to_owned(),
                reason: "is a device, FIFO or socket",
            },
            _ => StoreError::io(path, e),
        })?;
    let meta = f.metadata().map_err(|e| StoreError::io(path, e))?;
    if !meta.is_file() {
        return Err(StoreError::Destination {
            path: path.to_owned(),
            reason: "is a device, FIFO or socket",
        });
    }
    for p in parts {
        f.write_all(p).map_err(|e| StoreError::io(path, e))?;
    }
    f.sync_all().map_err(|e| StoreError::io(path, e))
}

/// What a [`RunWriter`] does with a run already in its directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Replaces it: `summary.json` is removed first and put back last, and a run file this
    /// write does not hold (seals of an earlier sealed run, say) is removed.
    Replace,
    /// Refuses it: [`StoreError::Exists`] when any of [`RUN_FILES`] is there, checked when the
    /// writer is made and again before the first rename; each file is then put in place
    /// without replacing anything ([`StagedFile::commit_new`]), so a file planted after that
    /// check is refused too and left untouched (the run stays incomplete: no `summary.json`).
    Refuse,
}

/// The one writer of a run directory (`spec/STREAM-AT-REST.md` section 4): each file of
/// [`RUN_FILES`] is staged ([`StagedFile`]: created exclusively under a temporary name), written,
/// completed; [`RunWriter::commit`] checks every destination, then renames the files into place
/// in [`RUN_FILES`] order, `summary.json` (from a [`RunSummary`]) last, so its presence marks a
/// complete write; a file left staged is removed when the writer is dropped.
#[derive(Debug)]
pub struct RunWriter {
    dir: PathBuf,
    existing: Existing,
    staged: Vec<(&'static str, StagedFile)>,
    committed: bool,
}

impl RunWriter {
    /// A writer of `dir` (which must exist; hold it with a [`LockedDir`]).
    pub fn new(dir: &Path, existing: Existing) -> Result<Self> {
        let w = Self {
            dir: dir.to_owned(),
            existing,
            staged: Vec::new(),
            committed: false,
        };
        w.check_existing()?;
        Ok(w)
    }

    /// With [`Existing::Refuse`], the first run file found in the directory.
    fn check_existing(&self) -> Result<()> {
        if self.existing == Existing::Refuse {
            for name in RUN_FILES {
                let p = self.dir.join(name);
                if present(&p)? {
                    return Err(StoreError::Exists { path: p });
                }
            }
        }
        Ok(())
    }

    /// Stages `name`, one of [`RUN_FILES`] but `summary.json` (which [`RunWriter::commit`]
    /// writes), once.
    pub fn stage(&mut self, name: &str) -> Result<()> {
        let known = RUN_FILES
            .iter()
            .copied()
            .find(|n| *n == name && *n != SUMMARY_JSON);
        let Some(name) = known.filter(|n| !self.holds(n)) else {
            return Err(StoreError::NotARunFile {
                name: name.to_owned(),
            });
        };
        let file = StagedFile::create(&self.dir, name)?;
        self.staged.push((name, file));
        Ok(())
    }

    /// Takes a file staged elsewhere for `dir/name` (`name` one of [`RUN_FILES`] but
    /// `summary.json`, not staged yet).
    pub fn adopt(&mut self, name: &str, file: StagedFile) -> Result<()> {
        let known = RUN_FILES
            .iter()
            .copied()
            .find(|n| *n == name && *n != SUMMARY_JSON);
        match known {
            Some(n) if !self.holds(n) && file.dest == self.dir.join(n) => {
                self.staged.push((n, file));
                Ok(())
            }
            _ => Err(StoreError::NotARunFile {
                name: name.to_owned(),
            }),
        }
    }

    /// Whether `name` is staged.
    pub fn holds(&self, name: &str) -> bool {
        self.staged.iter().any(|(n, _)| *n == name)
    }

    /// Appends `bytes` to the staged `name`.
    pub fn write(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        match self.staged.iter_mut().find(|(n, _)| *n == name) {
            Some((_, f)) => f.write(bytes),
            None => Err(StoreError::NotARunFile {
                name: name.to_owned(),
            }),
        }
    }

    /// Stages `name` and writes `bytes` to it.
    pub fn put(&mut self, name: &str, bytes: &[u8]) -> Result<()> {
        self.stage(name)?;
        self.write(name, bytes)
    }

    /// Completes every staged file (flushed, synced); returns their BLAKE3 (hex) by name, as
    /// `summary.json`'s `outputs` states them.
    pub fn finish(&mut self) -> Result<BTreeMap<String, String>> {
        let mut outputs = BTreeMap::new();
        for (name, f) in &mut self.staged {
            outputs.insert((*name).to_owned(), f.finish()?.to_hex().to_string());
        }
        Ok(outputs)
    }

    /// Commits the run: every destination (the run files and `remove`) checked against
    /// `inputs` ([`check_destination`]) and, with [`Existing::Refuse`], for another run, before
    /// anything is renamed; then the old `summary.json` removed (with [`Existing::Replace`]),
    /// the staged files renamed into place in [`RUN_FILES`] order (a run file not staged
    /// removed, with [`Existing::Replace`]), `remove` removed, `summary` written last, and the
    /// directory fsynced. The writer holds nothing staged afterwards, and commits once: a
    /// second commit (after a successful one) is refused with [`StoreError::Exists`] (its
    /// `summary.json`) and changes nothing.
    pub fn commit(
        &mut self,
        summary: &RunSummary,
        inputs: &[&Path],
        remove: &[&str],
    ) -> Result<()> {
        if self.committed {
            return Err(StoreError::Exists {
                path: self.dir.join(SUMMARY_JSON),
            });
        }
        for name in RUN_FILES.iter().chain(remove) {
            check_destination(&self.dir.join(name), inputs)?;
        }
        self.check_existing()?;
        let mut summary_file = StagedFile::create(&self.dir, SUMMARY_JSON)?;
        summary_file.write(summary.to_text()?.as_bytes())?;
        summary_file.finish()?;
        let replace = self.existing == Existing::Replace;
        if replace {
            self.remove(SUMMARY_JSON)?;
        }
        for name in RUN_FILES.iter().filter(|n| **n != SUMMARY_JSON) {
            match self.staged.iter_mut().find(|(n, _)| n == name) {
                Some((_, f)) if replace => f.commit()?,
                Some((_, f)) => f.commit_new()?,
                None if replace => self.remove(name)?,
                None => {}
            }
        }
        for name in remove {
            self.remove(name)?;
        }
        if replace {
            summary_file.commit()?;
        } else {
            summary_file.commit_new()?;
        }
        self.staged.clear();
        self.committed = true;
        sync_dir(&self.dir)
    }

    fn remove(&self, name: &str) -> Result<()> {
        remove_in(&self.dir, name)
    }
}

/// Removes `dir/name` if it is there.
fn remove_in(dir: &Path, name: &str) -> Result<()> {
    let p = dir.join(name);
    match std::fs::remove_file(&p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StoreError::io(&p, e)),
        _ => Ok(()),
    }
}

/// An output directory held under an exclusive lock (`flock` on the directory) for as long as
/// the value lives, so two writers never mix their outputs. Created if missing.
#[derive(Debug)]
pub struct LockedDir {
    path: PathBuf,
    created: bool,
    _lock: File,
}

impl LockedDir {
    /// Opens (creating if missing) and locks `path`; refuses a path that is not a directory
    /// (a symbolic link included) and a directory another writer holds.
    pub fn open(path: &Path) -> Result<Self> {
        let created = match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_dir() => false,
            Ok(_) => {
                return Err(StoreError::NotADirectory {
                    path: path.to_owned(),
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(path).map_err(|e| StoreError::io(path, e))?;
                true
            }
            Err(e) => return Err(StoreError::io(path, e)),
        };
        let lock = File::open(path).map_err(|e| StoreError::io(path, e))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(StoreError::Locked {
                    path: path.to_owned(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(StoreError::io(path, e)),
        }
        Ok(Self {
            path: path.to_owned(),
            created,
            _lock: lock,
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether [`LockedDir::open`] created it.
    pub fn created(&self) -> bool {
        self.created
    }

    /// Removes `name` from the directory if it is there.
    pub fn remove(&self, name: &str) -> Result<()> {
        remove_in(&self.path, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let p = std::env::temp_dir().join(format!("jc-store-run-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).ok();
        p
    }

    fn summary() -> RunSummary {
        RunSummary {
            conservation: crate::ConservationCounts::default(),
            early_verdicts: 0,
            empty_windows: 0,
            epoch: None,
            first_window: Some(0),
            inbound_bytes: 1,
            last_window: Some(0),
            layout: Some(crate::layout::LAYOUT_V2.to_owned()),
            llm_schema: None,
            oracle: vec![],
            outbound_bytes: 0,
            outputs: BTreeMap::new(),
            receipts: 1,
            signer: crate::SignerFacts {
                kid: "00".to_owned(),
                public_key: "00".to_owned(),
                test_key: true,
            },
            signing: crate::SigningFacts {
                checkpoints: None,
                every_windows: None,
                policy: "every_window".to_owned(),
                window_signatures: None,
            },
            spec: "s".to_owned(),
            stages: vec![],
            steward: "st".to_owned(),
            stream_id: "id".to_owned(),
            substrate_bytes: 0,
            ticks: 1,
            trace: "t".to_owned(),
            verdicts: crate::VerdictCounts::default(),
        }
    }

    fn writer(dir: &Path, existing: Existing) -> RunWriter {
        match RunWriter::new(dir, existing) {
            Ok(w) => w,
            Err(e) => panic!("{e}"),
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .map(|r| {
                r.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    #[test]
    fn a_run_is_committed_with_its_hashes_and_the_summary_from_run_summary() {
        let d = scratch("commit");
        let mut w = writer(&d, Existing::Refuse);
        assert!(w.put(crate::layout::RECEIPTS_JSONL, b"{}\n").is_ok());
        assert!(w.put(crate::layout::SIGNER_PUB, b"key").is_ok());
        // Nothing is in place before the commit.
        assert!(!d.join(crate::layout::RECEIPTS_JSONL).exists());
        let outputs = w.finish().unwrap_or_default();
        assert_eq!(
            outputs
                .get(crate::layout::RECEIPTS_JSONL)
                .map(String::as_str),
            Some(blake3::hash(b"{}\n").to_hex().as_str())
        );
        let mut s = summary();
        s.outputs = outputs;
        assert!(w.commit(&s, &[], &[]).is_ok());
        assert_eq!(
            names(&d),
            vec!["receipts.jsonl", "signer.pub", "summary.json"]
        );
        assert_eq!(
            std::fs::read_to_string(d.join(SUMMARY_JSON)).ok(),
            s.to_text().ok()
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn refuse_never_writes_over_another_run_and_replace_removes_what_it_does_not_write() {
        let d = scratch("existing");
        std::fs::write(d.join(crate::layout::SEALS_CBOR), b"old seals").ok();
        // Refuse: made over a run file, or one planted before the commit.
        assert!(matches!(
            RunWriter::new(&d, Existing::Refuse),
            Err(StoreError::Exists { .. })
        ));
        let _ = std::fs::remove_file(d.join(crate::layout::SEALS_CBOR));
        let mut w = writer(&d, Existing::Refuse);
        assert!(w.put(crate::layout::RECEIPTS_JSONL, b"new").is_ok());
        std::fs::write(d.join(crate::layout::STOP_LATENCY_CBOR), b"planted").ok();
        assert!(matches!(
            w.commit(&summary(), &[], &[]),
            Err(StoreError::Exists { .. })
        ));
        assert_eq!(
            std::fs::read(d.join(crate::layout::STOP_LATENCY_CBOR)).ok(),
            Some(b"planted".to_vec())
        );
        assert!(!d.join(crate::layout::RECEIPTS_JSONL).exists());
        assert!(!d.join(SUMMARY_JSON).exists());
        drop(w);
        // Accepted neighbour: Replace writes over it, and removes a run file (and a named
        // extra) it does not write.
        std::fs::write(d.join(crate::layout::SEALS_CBOR), b"old seals").ok();
        std::fs::write(d.join("proof"), b"old proof").ok();
        let mut w = writer(&d, Existing::Replace);
        assert!(w.put(crate::layout::STOP_LATENCY_CBOR, b"new").is_ok());
        assert!(w.commit(&summary(), &[], &["proof"]).is_ok());
        assert_eq!(names(&d), vec!["stop-latency.cbor", "summary.json"]);
        assert_eq!(
            std::fs::read(d.join(crate::layout::STOP_LATENCY_CBOR)).ok(),
            Some(b"new".to_vec())
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_planted_symlink_is_replaced_never_followed_and_an_input_never_replaced() {
        let d = scratch("links");
        std::fs::write(d.join("victim"), b"victim").ok();
        std::os::unix::fs::symlink(d.join("victim"), d.join(crate::layout::RECEIPTS_CBOR)).ok();
        let mut w = writer(&d, Existing::Replace);
        assert!(w.put(crate::layout::RECEIPTS_CBOR, b"cbor").is_ok());
        // The link's target is an input: refused before anything is renamed.
        let victim = d.join("victim");
        assert!(matches!(
            w.commit(&summary(), &[&victim], &[]),
            Err(StoreError::Destination { .. })
        ));
        assert!(!d.join(SUMMARY_JSON).exists());
        // Not an input: the link is replaced by the file, its target untouched.
        assert!(w.commit(&summary(), &[], &[]).is_ok());
        assert_eq!(std::fs::read(&victim).ok(), Some(b"victim".to_vec()));
        assert!(
            std::fs::symlink_metadata(d.join(crate::layout::RECEIPTS_CBOR))
                .is_ok_and(|m| m.file_type().is_file())
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn only_a_run_file_is_staged_once_and_summary_json_only_by_the_commit() {
        let d = scratch("names");
        let mut w = writer(&d, Existing::Refuse);
        for bad in ["other.txt", SUMMARY_JSON, "../receipts.jsonl"] {
            assert!(matches!(w.stage(bad), Err(StoreError::NotARunFile { .. })));
        }
        assert!(w.stage(crate::layout::SEALS_CBOR).is_ok());
        assert!(matches!(
            w.stage(crate::layout::SEALS_CBOR),
            Err(StoreError::NotARunFile { .. })
        ));
        assert!(matches!(
            w.write(crate::layout::RECEIPTS_CBOR, b"x"),
            Err(StoreError::NotARunFile { .. })
        ));
        drop(w);
        // A writer dropped before its commit leaves nothing behind.
        assert!(names(&d).is_empty());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn commit_new_never_replaces_what_was_planted_after_the_writer_looked() {
        let d = scratch("commit-new");
        // Nothing there: put in place, no staging file left.
        let mut f = StagedFile::create(&d, "doc").unwrap();
        f.write(b"mine").unwrap();
        f.commit_new().unwrap();
        drop(f);
        assert_eq!(std::fs::read(d.join("doc")).ok(), Some(b"mine".to_vec()));
        assert_eq!(names(&d), vec!["doc".to_owned()]);
        // A file and a dangling link planted while the file was staged: both refused,
        // untouched, and the staging file removed when the writer is dropped.
        let mut f = StagedFile::create(&d, "planted").unwrap();
        f.write(b"mine").unwrap();
        std::fs::write(d.join("planted"), b"theirs").unwrap();
        assert!(matches!(f.commit_new(), Err(StoreError::Exists { .. })));
        drop(f);
        assert_eq!(
            std::fs::read(d.join("planted")).ok(),
            Some(b"theirs".to_vec())
        );
        let mut f = StagedFile::create(&d, "link").unwrap();
        f.write(b"mine").unwrap();
        std::os::unix::fs::symlink(d.join("nowhere"), d.join("link")).unwrap();
        assert!(matches!(f.commit_new(), Err(StoreError::Exists { .. })));
        drop(f);
        assert!(!d.join("nowhere").exists());
        assert_eq!(
            std::fs::read_link(d.join("link")).ok(),
            Some(d.join("nowhere"))
        );
        assert_eq!(
            names(&d),
            vec!["doc".to_owned(), "link".to_owned(), "planted".to_owned()]
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn append_refuses_a_fifo_at_a_stream_file_without_blocking() {
        let d = scratch("fifo");
        let fifo = d.join("receipts.cbor");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let r = append(&path, false, &mut std::iter::once(&b"batch"[..]));
            let _ = tx.send(r.map_err(|e| e.code()));
        });
        // A bound on a hang, not a measure of speed: a blocking open never returns.
        let r = rx.recv_timeout(std::time::Duration::from_secs(20));
        assert_eq!(r, Ok(Err("refused_destination")), "append blocked or wrote");
        // A regular file beside it is appended to.
        let file = d.join("seals.cbor");
        std::fs::write(&file, b"a").unwrap();
        assert!(append(&file, false, &mut std::iter::once(&b"b"[..])).is_ok());
        assert_eq!(std::fs::read(&file).ok(), Some(b"ab".to_vec()));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn write_new_refuses_an_existing_file_or_link_and_append_creates_exclusively() {
        let d = scratch("new");
        std::os::unix::fs::symlink("/dev/null", d.join("doc")).ok();
        assert!(matches!(
            write_new(&d, "doc", b"x"),
            Err(StoreError::Exists { .. })
        ));
        assert!(write_new(&d, "fresh", b"x").is_ok());
        assert_eq!(std::fs::read(d.join("fresh")).ok(), Some(b"x".to_vec()));
        let f = d.join("log");
        assert!(append(&f, true, &mut [&b"a"[..], b"b"].into_iter()).is_ok());
        assert!(append(&f, false, &mut std::iter::once(&b"c"[..])).is_ok());
        assert_eq!(std::fs::read(&f).ok(), Some(b"abc".to_vec()));
        // Created exclusively: a second first batch is refused, the file unchanged.
        assert!(append(&f, true, &mut std::iter::once(&b"d"[..])).is_err());
        assert_eq!(std::fs::read(&f).ok(), Some(b"abc".to_vec()));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_staging_file_left_by_a_crashed_writer_of_the_same_pid_does_not_block_a_run() {
        // A writer killed before its commit leaves `.NAME.PID.tmp`; PIDs repeat (a container's
        // process is often the same small PID on every start), so a later writer with the same
        // PID meets that name. It must neither write into it nor be refused by it.
        let d = scratch("stale");
        let stale = d.join(format!(
            ".{}.{}.tmp",
            crate::layout::RECEIPTS_JSONL,
            std::process::id()
        ));
        std::fs::write(&stale, b"left by a crash").ok();
        let mut w = writer(&d, Existing::Refuse);
        assert!(w.put(crate::layout::RECEIPTS_JSONL, b"new").is_ok());
        assert!(w.commit(&summary(), &[], &[]).is_ok());
        assert_eq!(
            std::fs::read(d.join(crate::layout::RECEIPTS_JSONL)).ok(),
            Some(b"new".to_vec())
        );
        // The stale file is not followed, written or taken as the run's.
        assert_eq!(
            std::fs::read(&stale).ok(),
            Some(b"left by a crash".to_vec())
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_device_fifo_or_socket_at_a_destination_is_refused_not_replaced() {
        // `--out /dev/null` (or a FIFO a reader waits on): a rename would put a regular file
        // in place of the special file (run as root, /dev/null itself). A socket stands in
        // for them here (made without privileges or external tools).
        let d = scratch("special");
        let sock = d.join("sock");
        let listener = std::os::unix::net::UnixListener::bind(&sock);
        assert!(listener.is_ok());
        assert!(matches!(
            write_output(&sock, b"x", &[]),
            Err(StoreError::Destination { .. })
        ));
        assert!(
            std::fs::symlink_metadata(&sock)
                .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
        );
        // The run writer checks its destinations the same way.
        let run_sock = d.join(crate::layout::RECEIPTS_JSONL);
        let run_listener = std::os::unix::net::UnixListener::bind(&run_sock);
        assert!(run_listener.is_ok());
        let mut w = writer(&d, Existing::Replace);
        assert!(w.put(crate::layout::RECEIPTS_JSONL, b"new").is_ok());
        assert!(matches!(
            w.commit(&summary(), &[], &[]),
            Err(StoreError::Destination { .. })
        ));
        assert!(
            std::fs::symlink_metadata(&run_sock)
                .is_ok_and(|m| std::os::unix::fs::FileTypeExt::is_socket(&m.file_type()))
        );
        assert!(!d.join(SUMMARY_JSON).exists());
        drop(w);
        // Accepted neighbour: a regular file there is replaced.
        let _ = std::fs::remove_file(&sock);
        std::fs::write(&sock, b"old").ok();
        assert!(write_output(&sock, b"x", &[]).is_ok());
        assert_eq!(std::fs::read(&sock).ok(), Some(b"x".to_vec()));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_second_commit_of_the_same_writer_changes_nothing() {
        // After a commit the writer holds nothing staged; committing it again (a retry after
        // an error further on, say) must not read as "a run that writes no file", which with
        // Existing::Replace would remove the files just committed beside a new summary.json.
        let d = scratch("twice");
        let mut w = writer(&d, Existing::Replace);
        assert!(w.put(crate::layout::RECEIPTS_JSONL, b"lines").is_ok());
        assert!(w.put(crate::layout::SIGNER_PUB, b"key").is_ok());
        let mut s = summary();
        s.outputs = w.finish().unwrap_or_default();
        assert!(w.commit(&s, &[], &[]).is_ok());
        let first = names(&d);
        assert_eq!(first, vec!["receipts.jsonl", "signer.pub", "summary.json"]);
        assert!(matches!(
            w.commit(&s, &[], &[]),
            Err(StoreError::Exists { .. })
        ));
        assert_eq!(names(&d), first);
        assert_eq!(
            std::fs::read(d.join(crate::layout::RECEIPTS_JSONL)).ok(),
            Some(b"lines".to_vec())
        );
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn append_never_follows_a_symlink_planted_at_a_growing_file() {
        // Between two batches the stream's file is replaced by a link to another file: the
        // next batch is refused and the link's target unchanged.
        let d = scratch("append-link");
        let f = d.join("log");
        let victim = d.join("victim");
        std::fs::write(&victim, b"victim").ok();
        assert!(append(&f, true, &mut std::iter::once(&b"a"[..])).is_ok());
        let _ = std::fs::remove_file(&f);
        std::os::unix::fs::symlink(&victim, &f).ok();
        assert!(append(&f, false, &mut std::iter::once(&b"b"[..])).is_err());
        assert_eq!(std::fs::read(&victim).ok(), Some(b"victim".to_vec()));
        // Accepted neighbour: the file itself grows.
        let _ = std::fs::remove_file(&f);
        assert!(append(&f, true, &mut std::iter::once(&b"a"[..])).is_ok());
        assert!(append(&f, false, &mut std::iter::once(&b"b"[..])).is_ok());
        assert_eq!(std::fs::read(&f).ok(), Some(b"ab".to_vec()));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn an_input_reached_by_a_hard_link_or_another_spelling_is_never_a_run_file_replaced() {
        let d = scratch("inputs");
        let run = d.join("run");
        std::fs::create_dir_all(run.join("sub")).ok();
        std::fs::write(d.join("trace"), b"trace").ok();
        // The input's hard link sits where the run writes receipts.jsonl.
        std::fs::hard_link(d.join("trace"), run.join(crate::layout::RECEIPTS_JSONL)).ok();
        let trace = d.join("trace");
        let mut w = writer(&run, Existing::Replace);
        assert!(w.put(crate::layout::RECEIPTS_JSONL, b"new").is_ok());
        assert!(matches!(
            w.commit(&summary(), &[&trace], &[]),
            Err(StoreError::Destination { .. })
        ));
        drop(w);
        // The input named through the run directory in another spelling, as a file the run
        // does not write but would remove (Replace).
        let _ = std::fs::remove_file(run.join(crate::layout::RECEIPTS_JSONL));
        std::fs::write(run.join(crate::layout::SEALS_CBOR), b"an input").ok();
        let spelled = run.join("sub/../.").join(crate::layout::SEALS_CBOR);
        let mut w = writer(&run, Existing::Replace);
        assert!(w.put(crate::layout::RECEIPTS_JSONL, b"new").is_ok());
        assert!(matches!(
            w.commit(&summary(), &[&spelled], &[]),
            Err(StoreError::Destination { .. })
        ));
        drop(w);
        assert_eq!(std::fs::read(&trace).ok(), Some(b"trace".to_vec()));
        assert_eq!(
            std::fs::read(run.join(crate::layout::SEALS_CBOR)).ok(),
            Some(b"an input".to_vec())
        );
        assert!(!run.join(SUMMARY_JSON).exists());
        assert!(!run.join(crate::layout::RECEIPTS_JSONL).exists());
        // A run directory that is a symbolic link is not locked (so not written).
        std::os::unix::fs::symlink(&run, d.join("link")).ok();
        assert!(matches!(
            LockedDir::open(&d.join("link")),
            Err(StoreError::NotADirectory { .. })
        ));
        // Accepted neighbour: with the inputs elsewhere, the run replaces those files.
        let mut w = writer(&run, Existing::Replace);
        assert!(w.put(crate::layout::RECEIPTS_JSONL, b"new").is_ok());
        assert!(w.commit(&summary(), &[&trace], &[]).is_ok());
        assert!(!run.join(crate::layout::SEALS_CBOR).exists());
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn a_second_writer_is_refused_while_the_first_holds_the_lock() {
        let p = std::env::temp_dir().join(format!("jc-store-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        let first = LockedDir::open(&p);
        assert!(first.as_ref().is_ok_and(LockedDir::created));
        assert!(matches!(
            LockedDir::open(&p),
            Err(StoreError::Locked { .. })
        ));
        drop(first);
        assert!(LockedDir::open(&p).is_ok_and(|d| !d.created()));
        let _ = std::fs::remove_dir_all(&p);
    }

    #[test]
    fn an_output_never_replaces_an_input_even_through_a_symlink() {
        let p = std::env::temp_dir().join(format!("jc-store-dest-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).ok();
        std::fs::write(p.join("in"), b"input").ok();
        std::os::unix::fs::symlink(p.join("in"), p.join("link")).ok();
        let input = p.join("in");
        assert!(write_output(&p.join("in"), b"x", &[&input]).is_err());
        assert!(write_output(&p.join("link"), b"x", &[&input]).is_err());
        assert_eq!(
            std::fs::read(p.join("in")).ok().as_deref(),
            Some(&b"input"[..])
        );
        // Accepted neighbour: a new name is written.
        assert!(write_output(&p.join("out"), b"x", &[&input]).is_ok());
        assert_eq!(
            std::fs::read(p.join("out")).ok().as_deref(),
            Some(&b"x"[..])
        );
        let _ = std::fs::remove_dir_all(&p);
    }
}
