//! The registry on disk (spec/CALL-REGISTRY.md): a directory holding `registry.json` (origin and
//! the steward's verifier key), `leaves.jsonl` (one canonical `registry-leaf/1` per line,
//! append-only), `checkpoint.note` (the latest checkpoint with every cosignature collected) and
//! `.lock`; and the files of a sealed run it reads (`seals.cbor`) and writes
//! (`registry.tlog-proof`; `seals.cbor` is the store's `layout::SEALS_CBOR`).
//!
//! Every read is bounded and opens a regular file only (no symbolic link followed, no FIFO
//! blocked on); every replaced file is written create-new, then renamed; `leaves.jsonl` is
//! appended to in place (never through a symbolic link) and synced.

use std::fs::{File, OpenOptions};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use jouleclaw_jcr1::cose::{PublicKey, SequenceReader};
use jouleclaw_seal::verify_checkpoint;
use jouleclaw_store::layout::{self, Input, SEALS_CBOR as SEALS_FILE};
use jouleclaw_store::writer::write_output;
use serde_json::{Value, json};

use crate::{
    CallProof, DEFAULT_MAX_CALLS, MAX_NOTE_BYTES, MAX_POLICY_BYTES, NoteKey, RegistryError,
    RegistryLeaf, RegistryLog, Result, WitnessPolicy, verify_checkpoint_note,
};

/// The file of a run directory that holds the call's registry proof.
pub const PROOF_FILE: &str = "registry.tlog-proof";
/// The registry's configuration: its origin and the steward's verifier key.
pub const CONFIG_FILE: &str = "registry.json";
/// The registry's leaves, one canonical `registry-leaf/1` a line, in log order.
pub const LEAVES_FILE: &str = "leaves.jsonl";
/// The registry's latest checkpoint note with the cosignatures collected.
pub const CHECKPOINT_FILE: &str = "checkpoint.note";
/// The registry's lock file (an advisory lock held while the registry is written).
pub const LOCK_FILE: &str = ".lock";
/// The longest `registry.json` read.
pub const MAX_CONFIG_BYTES: usize = 64 * 1024;
/// The longest leaf line read (two 4,096-byte strings, escaped, plus the fixed fields).
pub const MAX_LEAF_LINE_BYTES: usize = 2 * 6 * 4_096 + 512;
/// The longest `checkpoint.note` read: 64 KiB for the note and one 64 KiB answer for each of
/// up to 64 witnesses, what merging every line of every answer could once make. A note above
/// 64 KiB does not verify; reading it lets `registry witness` sign the leaves' checkpoint again.
pub const MAX_STORED_NOTE_BYTES: usize = 65 * MAX_NOTE_BYTES;
/// The most seal checkpoints read from a run's `seals.cbor`.
pub const MAX_SEALS: usize = 1 << 20;

/// Reads at most `max` bytes of a regular file, opened as every directory input is
/// (`jouleclaw_store::layout::open_input`: no symlink followed, no FIFO blocked on), refusing a
/// longer one.
pub fn read_capped(path: &Path, max: usize) -> Result<Vec<u8>> {
    let file = open_regular(path)?;
    layout::read_bounded(file, path, max as u64)
        .map_err(|e| RegistryError::io(path, e))?
        .ok_or_else(|| RegistryError::file(path, format!("longer than {max} bytes")))
}

/// Opens a regular file for reading: a missing file is an I/O error, anything else than a
/// regular file (a planted symbolic link, a FIFO, a directory) is refused unread.
fn open_regular(path: &Path) -> Result<File> {
    match layout::open_input(path).map_err(|e| RegistryError::io(path, e))? {
        Input::File(f) => Ok(f),
        Input::Missing => Err(RegistryError::io(path, "no such file")),
        Input::NotRegular(what) => Err(RegistryError::file(
            path,
            format!("a {what}, not a regular file; refused unread"),
        )),
    }
}

/// Reads and parses the witness policy at `path` (at most [`MAX_POLICY_BYTES`]).
pub fn read_policy(path: &Path) -> Result<WitnessPolicy> {
    let text = read_capped(path, MAX_POLICY_BYTES)?;
    let text = String::from_utf8(text).map_err(|_| RegistryError::file(path, "not UTF-8"))?;
    WitnessPolicy::parse(&text).map_err(|e| RegistryError::file(path, e))
}

/// The witness policy at `path` for verifying calls signed by `key`: its `log` line must be
/// that key (`receipts verify --witness-policy` and `audit --witness-policy` read their policy
/// through this).
pub fn read_policy_for(key: &PublicKey, path: &Path) -> Result<WitnessPolicy> {
    let policy = read_policy(path)?;
    if policy.log.key() != key {
        return Err(RegistryError::StewardMismatch {
            message: format!(
                "{}: the witness policy names another steward key than --pub",
                path.display()
            ),
        });
    }
    Ok(policy)
}

/// The last checkpoint of a run's `seals.cbor` (COSE_Sign1 bytes), verified under `key` and
/// final. A `seals.cbor` that cannot be opened or read is an I/O error or refused unread; one
/// whose items or last checkpoint do not verify, or is not final, is [`RegistryError::Refused`].
pub fn final_seal_of(run: &Path, key: &PublicKey) -> Result<Vec<u8>> {
    let path = run.join(SEALS_FILE);
    let file = open_regular(&path)?;
    let mut last = None;
    for (i, item) in SequenceReader::new(file).enumerate() {
        if i == MAX_SEALS {
            return Err(RegistryError::refused(format!(
                "{}: more than {MAX_SEALS} checkpoints",
                path.display()
            )));
        }
        last =
            Some(item.map_err(|e| {
                RegistryError::refused(format!("{}: item {i}: {e}", path.display()))
            })?);
    }
    let last =
        last.ok_or_else(|| RegistryError::refused(format!("{}: no checkpoint", path.display())))?;
    let checkpoint = verify_checkpoint(&last, key).map_err(|e| {
        RegistryError::refused(format!("{}: the last checkpoint: {e}", path.display()))
    })?;
    if !checkpoint.seal.is_final {
        return Err(RegistryError::refused(format!(
            "{}: the last checkpoint is not final; the call has not ended",
            path.display()
        )));
    }
    Ok(last)
}

/// Takes the registry directory's lock: `.lock`, a regular file (not through a planted
/// symbolic link, not blocked on a planted FIFO), locked without waiting.
fn lock(dir: &Path) -> Result<File> {
    let path = dir.join(LOCK_FILE);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| match std::fs::symlink_metadata(&path) {
            Ok(m) if !m.file_type().is_file() => {
                RegistryError::file(&path, "not a regular file; refused")
            }
            _ => RegistryError::io(&path, e),
        })?;
    let regular = file
        .metadata()
        .map_err(|e| RegistryError::io(&path, e))?
        .file_type()
        .is_file();
    if !regular {
        return Err(RegistryError::file(&path, "not a regular file; refused"));
    }
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(_) => Err(RegistryError::Locked {
            dir: dir.to_owned(),
        }),
    }
}

/// A registry directory read into memory: its log rebuilt from `leaves.jsonl` (every line
/// checked), its steward's key and its latest checkpoint note, as stored. Opened with
/// [`Registry::open_locked`] it holds the directory's lock until dropped.
#[derive(Debug)]
pub struct Registry {
    dir: PathBuf,
    log: RegistryLog,
    steward: NoteKey,
    checkpoint: Option<Vec<u8>>,
    _lock: Option<File>,
}

impl Registry {
    /// Creates an empty registry at `dir` (which must not exist) for the steward key `steward`,
    /// whose name is the registry's origin; `inputs` are files that must not be overwritten (the
    /// steward's key file).
    pub fn create(dir: &Path, steward: &NoteKey, inputs: &[&Path]) -> Result<()> {
        std::fs::create_dir(dir).map_err(|e| RegistryError::io(dir, e))?;
        let config = json!({ "origin": steward.name(), "log_vkey": steward.vkey() });
        write_output(
            &dir.join(CONFIG_FILE),
            format!("{config}\n").as_bytes(),
            inputs,
        )
        .map_err(|e| RegistryError::Io {
            message: e.to_string(),
        })?;
        write_output(&dir.join(LEAVES_FILE), b"", inputs).map_err(|e| RegistryError::Io {
            message: e.to_string(),
        })
    }

    /// Reads the registry at `dir` without locking it (to read: prove, audit).
    pub fn open(dir: &Path) -> Result<Self> {
        Self::load(dir, None)
    }

    /// Locks the registry at `dir` (refused when another writer holds it) and reads it; the
    /// lock is held until the value is dropped.
    pub fn open_locked(dir: &Path) -> Result<Self> {
        Self::load(dir, Some(lock(dir)?))
    }

    fn load(dir: &Path, lock: Option<File>) -> Result<Self> {
        let config_path = dir.join(CONFIG_FILE);
        let config: Value = serde_json::from_slice(&read_capped(&config_path, MAX_CONFIG_BYTES)?)
            .map_err(|e| RegistryError::file(&config_path, e))?;
        let field = |name: &str| {
            config
                .get(name)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| {
                    RegistryError::file(&config_path, format!("no string field {name:?}"))
                })
        };
        let origin = field("origin")?;
        let steward = NoteKey::parse_vkey(&field("log_vkey")?)
            .map_err(|e| RegistryError::file(&config_path, e))?;
        if steward.name() != origin {
            return Err(RegistryError::file(
                &config_path,
                "the log key's name is not the origin",
            ));
        }
        let mut log =
            RegistryLog::new(&origin, DEFAULT_MAX_CALLS).map_err(RegistryError::refused)?;
        let leaves_path = dir.join(LEAVES_FILE);
        let mut reader = BufReader::new(open_regular(&leaves_path)?);
        let mut line = Vec::new();
        let mut number = 0usize;
        loop {
            line.clear();
            let n = (&mut reader)
                .take(MAX_LEAF_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut line)
                .map_err(|e| RegistryError::io(&leaves_path, e))?;
            if n == 0 {
                break;
            }
            number += 1;
            let at = |why: &str| {
                RegistryError::refused(format!("{}: line {number}: {why}", leaves_path.display()))
            };
            let Some(body) = line.strip_suffix(b"\n") else {
                return Err(at("longer than the bound, or torn (no newline)"));
            };
            let leaf = parse_leaf(body).map_err(|e| at(&e))?;
            log.append(&leaf).map_err(|e| at(&e.to_string()))?;
        }
        let checkpoint_path = dir.join(CHECKPOINT_FILE);
        let checkpoint = match std::fs::symlink_metadata(&checkpoint_path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            // Read past the 64 KiB a note may have (verification refuses it above that), so
            // that a note a flooding witness's answers once grew can be replaced by
            // `registry witness`.
            _ => Some(read_capped(&checkpoint_path, MAX_STORED_NOTE_BYTES)?),
        };
        Ok(Self {
            dir: dir.to_owned(),
            log,
            steward,
            checkpoint,
            _lock: lock,
        })
    }

    /// The registry directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log its leaves make.
    pub fn log(&self) -> &RegistryLog {
        &self.log
    }

    /// The steward's key (its name is the origin).
    pub fn steward(&self) -> &NoteKey {
        &self.steward
    }

    /// The stored `checkpoint.note`, as read (not verified); `None` before the first.
    pub fn checkpoint(&self) -> Option<&[u8]> {
        self.checkpoint.as_deref()
    }

    /// The log, for appending (the caller writes the leaf with [`Registry::append_leaf`]).
    pub(crate) fn log_mut(&mut self) -> &mut RegistryLog {
        &mut self.log
    }

    /// Appends `leaf`'s line to `leaves.jsonl` in place and syncs it. The log is append-only;
    /// a symbolic link planted at its name is refused, never followed, and only a regular file
    /// is written.
    pub(crate) fn append_leaf(&self, leaf: &RegistryLeaf) -> Result<()> {
        let path = self.dir.join(LEAVES_FILE);
        let mut file = OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| RegistryError::io(&path, e))?;
        if !file
            .metadata()
            .map_err(|e| RegistryError::io(&path, e))?
            .is_file()
        {
            return Err(RegistryError::file(&path, "not a regular file"));
        }
        let mut line = leaf.encode().map_err(RegistryError::refused)?;
        line.push(b'\n');
        file.write_all(&line)
            .map_err(|e| RegistryError::io(&path, e))?;
        file.sync_all().map_err(|e| RegistryError::io(&path, e))
    }

    /// Replaces `checkpoint.note` (create-new, rename) with `note`; `inputs` must not be
    /// overwritten.
    pub(crate) fn write_checkpoint(&mut self, note: &[u8], inputs: &[&Path]) -> Result<()> {
        write_file(&self.dir.join(CHECKPOINT_FILE), note, inputs)?;
        self.checkpoint = Some(note.to_vec());
        Ok(())
    }

    /// The proof of RUN's call (its last `seals.cbor` checkpoint) from the registry's latest
    /// checkpoint, and that checkpoint's size; `None` when the checkpoint does not hold the
    /// call's leaf (or there is no checkpoint yet).
    pub fn proof_of_run(&self, run: &Path) -> Result<Option<(CallProof, u64)>> {
        let Some(note) = self.checkpoint.clone() else {
            return Ok(None);
        };
        let body = verify_checkpoint_note(&note, &self.steward, &[])
            .map_err(RegistryError::refused)?
            .body;
        let key = *self.steward.key();
        let seal_cose = final_seal_of(run, &key)?;
        let seal = verify_checkpoint(&seal_cose, &key)
            .map_err(RegistryError::refused)?
            .seal;
        let leaf = RegistryLeaf::of_final_seal(&seal).map_err(RegistryError::refused)?;
        let Some(index) = self
            .log
            .indices_of(&leaf.stream_id)
            .iter()
            .copied()
            .filter(|&i| i < body.size)
            .find(|&i| self.log.holds_at(i, &leaf).unwrap_or(false))
        else {
            return Ok(None);
        };
        let proof = CallProof {
            seal_cose,
            index,
            path: self
                .log
                .inclusion_proof(index, body.size)
                .map_err(RegistryError::refused)?,
            checkpoint: note,
        };
        Ok(Some((proof, body.size)))
    }
}

/// `registry prove`: writes `run/registry.tlog-proof` from the registry's latest checkpoint
/// (never over one of `inputs`); returns the call's leaf index and the checkpoint's size. A
/// registry without a checkpoint, or whose checkpoint does not hold the run's call, is refused.
pub fn write_run_proof(reg: &Registry, run: &Path, inputs: &[&Path]) -> Result<(u64, u64)> {
    if reg.checkpoint.is_none() {
        return Err(RegistryError::refused(format!(
            "{}: no checkpoint yet",
            reg.dir.display()
        )));
    }
    let (proof, size) = reg.proof_of_run(run)?.ok_or_else(|| {
        RegistryError::refused("this run's final seal is not in the registry's checkpoint")
    })?;
    write_file(&run.join(PROOF_FILE), &proof.encode(), inputs)?;
    Ok((proof.index, size))
}

/// `registry add-stored`: `folder` (in `proofs`, made when missing) holding a call's stored
/// final seal `seal` as its `seals.cbor`. A folder already there (a registration that stopped
/// before its proof) must be a directory, not a symbolic link, whose `seals.cbor`'s last
/// checkpoint, verified under `key`, is that seal; else it is refused and left as it is.
pub fn prepare_stored_call(
    proofs: &Path,
    folder: &Path,
    seal: &[u8],
    key: &PublicKey,
) -> Result<()> {
    std::fs::create_dir_all(proofs).map_err(|e| RegistryError::io(proofs, e))?;
    match std::fs::create_dir(folder) {
        Ok(()) => write_file(&folder.join(SEALS_FILE), seal, &[]),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let is_dir = std::fs::symlink_metadata(folder)
                .map_err(|e| RegistryError::io(folder, e))?
                .file_type()
                .is_dir();
            if !is_dir {
                return Err(RegistryError::refused(format!(
                    "{}: not a directory; refused unread",
                    folder.display()
                )));
            }
            if final_seal_of(folder, key)? == seal {
                Ok(())
            } else {
                Err(RegistryError::refused(format!(
                    "{}: another final seal than the cluster holds; left as it is",
                    folder.join(SEALS_FILE).display()
                )))
            }
        }
        Err(e) => Err(RegistryError::io(folder, e)),
    }
}

/// Writes `bytes` to `dest` create-new, then rename (`jouleclaw_store::writer::write_output`:
/// never through a planted symbolic link, never over one of `inputs`).
pub fn write_file(dest: &Path, bytes: &[u8], inputs: &[&Path]) -> Result<()> {
    write_output(dest, bytes, inputs).map_err(|e| RegistryError::Io {
        message: e.to_string(),
    })
}

/// A leaf line: exactly the canonical bytes of the leaf it names.
fn parse_leaf(body: &[u8]) -> std::result::Result<RegistryLeaf, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .ok_or(format!("no string {k:?}"))
    };
    let h = |k: &str| -> std::result::Result<[u8; 32], String> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(s(k)?, &mut out).map_err(|_| format!("{k:?} is not 64 hex digits"))?;
        Ok(out)
    };
    let leaf = RegistryLeaf {
        steward: s("steward")?.to_owned(),
        stream_id: s("stream_id")?.to_owned(),
        seal_root: h("seal_root")?,
        seal_tree_size: v
            .get("seal_tree_size")
            .and_then(Value::as_u64)
            .ok_or("no seal_tree_size")?,
        seal_hash: h("seal_hash")?,
    };
    if leaf.encode().map_err(|e| e.to_string())? != body {
        return Err("not the canonical bytes of a registry-leaf/1".into());
    }
    Ok(leaf)
}
