//! `registry init|add|witness|prove|verify|audit`: a steward's call registry on disk, its
//! checkpoints witnessed over C2SP tlog-witness, and one offline proof per call
//! (spec/CALL-REGISTRY.md).
//!
//! Every writer of a registry goes through [`Appender`] (`registry add`, `run --registry`, and a
//! live sink that registers its calls): [`Appender::open`] checks and locks the registry,
//! [`Appender::register_run`] registers a sealed run directory and writes its proof,
//! [`Appender::register_seal`] registers a final seal and returns the proof to store. Every
//! reader that requires a call witnessed goes through [`verify_run`] (`registry verify`,
//! `receipts verify --witness-policy`, `audit --dir --witness-policy`) or, for a call the
//! cluster holds, [`verify_stored_call`] (`audit --nats --witness-policy`).
//!
//! A registry directory holds `registry.json` (origin and the steward's verifier key),
//! `leaves.jsonl` (one canonical `registry-leaf/1` per line, append-only), `checkpoint.note`
//! (the latest checkpoint with every cosignature collected) and `.lock`.

use std::fs::{File, OpenOptions};
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Subcommand;
use jouleclaw_stack::jcr1::UtcSecond;
use jouleclaw_stack::jcr1::cose::{PublicKey, SequenceReader, Signer as _};
use jouleclaw_stack::registry::{
    ALG_ED25519, CallProof, CheckpointBody, DEFAULT_MAX_CALLS, MAX_NOTE_BYTES, MAX_POLICY_BYTES,
    MAX_PROOF_BYTES, NoteKey, PolicyWitness, RegistryLeaf, RegistryLog, VerifiedCheckpoint,
    WitnessPolicy, add_checkpoint_request, conflict_size, merge_cosignatures, verify_call_proof,
    verify_checkpoint_note,
};
use jouleclaw_stack::seal::verify_checkpoint;
use jouleclaw_stack::store::layout::{self, Input};
use serde_json::{Value, json};

use crate::keys::read_secret_key;
use crate::out::{for_terminal, say, tell};
use crate::{CmdResult, Failure};
use jouleclaw_stack::store::writer::write_output;

/// The file of a run directory that holds the call's registry proof.
pub(crate) const PROOF_FILE: &str = "registry.tlog-proof";
const CONFIG_FILE: &str = "registry.json";
const LEAVES_FILE: &str = "leaves.jsonl";
const CHECKPOINT_FILE: &str = "checkpoint.note";
const SEALS_FILE: &str = "seals.cbor";
/// The longest leaf line read (two 4,096-byte strings, escaped, plus the fixed fields).
const MAX_LEAF_LINE_BYTES: usize = 2 * 6 * 4_096 + 512;
/// The longest `checkpoint.note` read: 64 KiB for the note and one 64 KiB answer for each of
/// up to 64 witnesses, what merging every line of every answer could once make. A note above
/// 64 KiB does not verify; reading it lets `registry witness` sign the leaves' checkpoint again.
const MAX_STORED_NOTE_BYTES: usize = 65 * MAX_NOTE_BYTES;
/// The most seal checkpoints read from a run's `seals.cbor`.
const MAX_SEALS: usize = 1 << 20;
/// Each `add-checkpoint` request: the whole request, response included, within this time.
const WITNESS_TIMEOUT: Duration = Duration::from_secs(5);
/// Attempts per witness (connection errors and 5xx answers are retried; 4xx are final).
const WITNESS_ATTEMPTS: u32 = 3;
/// The waits between attempts.
const WITNESS_BACKOFF: [Duration; 2] = [Duration::from_millis(250), Duration::from_secs(1)];

/// The `registry` subcommands.
#[derive(Subcommand, Debug)]
pub(crate) enum RegistryCmd {
    /// Create an empty registry for ORIGIN signed by KEY; prints the steward's verifier key
    /// (give it to each witness, e.g. `witnessctl add-key -origin ORIGIN -key VKEY`).
    Init {
        /// The registry directory (created; must not exist).
        dir: PathBuf,
        /// The registry's origin line (a C2SP key name: no spaces, no '+').
        #[arg(long)]
        origin: String,
        /// The steward's secret key file.
        #[arg(long)]
        key: PathBuf,
    },
    /// Register a sealed run's call: append its final seal as a leaf, sign a new checkpoint,
    /// collect cosignatures from the policy's witnesses, write RUN/registry.tlog-proof.
    Add {
        /// The registry directory.
        dir: PathBuf,
        /// A run directory written with `run --seal-every K`.
        run: PathBuf,
        /// The steward's secret key file.
        #[arg(long)]
        key: PathBuf,
        /// A witness policy (spec/CALL-REGISTRY.md); without it the checkpoint is not witnessed.
        #[arg(long)]
        policy: Option<PathBuf>,
    },
    /// Register the sealed calls a JetStream cluster holds that PROOFS has no proof for (after
    /// `journal replay`, or a `live` stopped before it registered): each as `live --registry
    /// REG --registry-proofs PROOFS` registers it, into `PROOFS/<escaped stream id>/`. A call
    /// whose leaf the registry already holds gets its proof from the latest checkpoint, not a
    /// second leaf. Streams signed by another key are left alone.
    AddStored {
        /// The registry directory.
        #[arg(value_name = "REG")]
        dir: PathBuf,
        /// A NATS server (`nats://HOST:PORT`, several separated by commas).
        #[arg(long, value_name = "URL")]
        nats: String,
        /// The steward's secret key file.
        #[arg(long)]
        key: PathBuf,
        /// A witness policy (spec/CALL-REGISTRY.md); without it the checkpoints are not
        /// witnessed.
        #[arg(long)]
        policy: Option<PathBuf>,
        /// The proofs' folder (as `live --registry-proofs`).
        #[arg(long, value_name = "DIR")]
        proofs: PathBuf,
        /// Only this stream id.
        #[arg(long = "stream", value_name = "ID")]
        stream: Option<String>,
        /// The JetStream stream's name.
        #[arg(long = "js-stream", default_value = "JOULECLAW")]
        js_stream: String,
        /// The subject prefix.
        #[arg(long, default_value = "jouleclaw")]
        prefix: String,
    },
    /// Verify RUN/registry.tlog-proof offline: the run's final seal is in a registry checkpoint
    /// signed by the policy's steward and cosigned by a quorum of its witnesses.
    Verify {
        /// The run directory.
        run: PathBuf,
        /// The witness policy.
        #[arg(long)]
        policy: PathBuf,
    },
    /// Submit the registry's latest checkpoint to the policy's witnesses again (after a witness
    /// was down) and keep the cosignatures it gets.
    Witness {
        /// The registry directory.
        dir: PathBuf,
        /// The steward's secret key file.
        #[arg(long)]
        key: PathBuf,
        /// The witness policy.
        #[arg(long)]
        policy: PathBuf,
    },
    /// Write RUN/registry.tlog-proof again from the registry's latest checkpoint.
    Prove {
        /// The registry directory.
        dir: PathBuf,
        /// The run directory.
        run: PathBuf,
    },
    /// Audit a registry: its checkpoint is cosigned by a quorum and matches its leaves; calls
    /// registered more than once are listed; checkpoints seen elsewhere must agree (a fork or a
    /// rollback is refused).
    Audit {
        /// The registry directory.
        dir: PathBuf,
        /// The witness policy.
        #[arg(long)]
        policy: PathBuf,
        /// A checkpoint note obtained elsewhere (repeatable).
        #[arg(long = "seen", value_name = "NOTE")]
        seen: Vec<PathBuf>,
    },
}

pub(crate) fn registry(cmd: &RegistryCmd) -> CmdResult {
    match cmd {
        RegistryCmd::Init { dir, origin, key } => init(dir, origin, key),
        RegistryCmd::Add {
            dir,
            run,
            key,
            policy,
        } => add(dir, run, key, policy.as_deref()),
        RegistryCmd::Verify { run, policy } => verify(run, policy),
        RegistryCmd::Audit { dir, policy, seen } => audit(dir, policy, seen),
        RegistryCmd::Witness { dir, key, policy } => witness(dir, key, policy),
        RegistryCmd::Prove { dir, run } => prove(dir, run),
        RegistryCmd::AddStored {
            dir,
            nats,
            key,
            policy,
            proofs,
            stream,
            js_stream,
            prefix,
        } => add_stored(
            dir,
            key,
            policy.as_deref(),
            proofs,
            &crate::audit::reader_config(nats, js_stream, prefix),
            stream.as_deref(),
        ),
    }
}

fn refused(e: impl std::fmt::Display) -> Failure {
    Failure::Refused(e.to_string())
}

/// Reads at most `max` bytes of a regular file, opened as every directory input is
/// (`jouleclaw_store::layout::open_input`: no symlink followed, no FIFO blocked on), refusing a
/// longer one.
fn read_capped(path: &Path, max: usize) -> Result<Vec<u8>, Failure> {
    let file = open_regular(path)?;
    layout::read_bounded(file, path, max as u64)
        .map_err(|e| Failure::io(path, e))?
        .ok_or_else(|| Failure::Usage(format!("{}: longer than {max} bytes", path.display())))
}

fn open_regular(path: &Path) -> Result<File, Failure> {
    match layout::open_input(path).map_err(|e| Failure::io(path, e))? {
        Input::File(f) => Ok(f),
        Input::Missing => Err(Failure::io(path, "no such file")),
        Input::NotRegular(what) => Err(Failure::Usage(format!(
            "{}: a {what}, not a regular file; refused unread",
            path.display()
        ))),
    }
}

fn policy_of(path: &Path) -> Result<WitnessPolicy, Failure> {
    let text = read_capped(path, MAX_POLICY_BYTES)?;
    let text = String::from_utf8(text)
        .map_err(|_| Failure::Usage(format!("{}: not UTF-8", path.display())))?;
    WitnessPolicy::parse(&text).map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))
}

/// The last checkpoint of a run's `seals.cbor`, verified under `key` and final.
fn final_seal_of(run: &Path, key: &PublicKey) -> Result<Vec<u8>, Failure> {
    let path = run.join(SEALS_FILE);
    let file = open_regular(&path)?;
    let mut last = None;
    for (i, item) in SequenceReader::new(file).enumerate() {
        if i == MAX_SEALS {
            return Err(refused(format!(
                "{}: more than {MAX_SEALS} checkpoints",
                path.display()
            )));
        }
        last = Some(item.map_err(|e| refused(format!("{}: item {i}: {e}", path.display())))?);
    }
    let last = last.ok_or_else(|| refused(format!("{}: no checkpoint", path.display())))?;
    let checkpoint = verify_checkpoint(&last, key)
        .map_err(|e| refused(format!("{}: the last checkpoint: {e}", path.display())))?;
    if !checkpoint.seal.is_final {
        return Err(refused(format!(
            "{}: the last checkpoint is not final; the call has not ended",
            path.display()
        )));
    }
    Ok(last)
}

struct Registry {
    dir: PathBuf,
    log: RegistryLog,
    steward: NoteKey,
    checkpoint: Option<Vec<u8>>,
    _lock: Option<File>,
}

fn lock(dir: &Path) -> Result<File, Failure> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let path = dir.join(".lock");
    // Not through a planted symbolic link, not blocked on a planted FIFO: a regular file only.
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| match std::fs::symlink_metadata(&path) {
            Ok(m) if !m.file_type().is_file() => {
                Failure::Usage(format!("{}: not a regular file; refused", path.display()))
            }
            _ => Failure::io(&path, e),
        })?;
    let regular = file
        .metadata()
        .map_err(|e| Failure::io(&path, e))?
        .file_type()
        .is_file();
    if !regular {
        return Err(Failure::Usage(format!(
            "{}: not a regular file; refused",
            path.display()
        )));
    }
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(_) => Err(Failure::Usage(format!(
            "{}: another jouleclaw is writing this registry",
            dir.display()
        ))),
    }
}

fn load(dir: &Path, locked: bool) -> Result<Registry, Failure> {
    let lock = if locked { Some(lock(dir)?) } else { None };
    let config_path = dir.join(CONFIG_FILE);
    let config: Value = serde_json::from_slice(&read_capped(&config_path, 64 * 1024)?)
        .map_err(|e| Failure::Usage(format!("{}: {e}", config_path.display())))?;
    let field = |name: &str| {
        config
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                Failure::Usage(format!(
                    "{}: no string field {name:?}",
                    config_path.display()
                ))
            })
    };
    let origin = field("origin")?;
    let steward = NoteKey::parse_vkey(&field("log_vkey")?)
        .map_err(|e| Failure::Usage(format!("{}: {e}", config_path.display())))?;
    if steward.name() != origin {
        return Err(Failure::Usage(format!(
            "{}: the log key's name is not the origin",
            config_path.display()
        )));
    }
    let mut log = RegistryLog::new(&origin, DEFAULT_MAX_CALLS).map_err(refused)?;
    let leaves_path = dir.join(LEAVES_FILE);
    let mut reader = BufReader::new(open_regular(&leaves_path)?);
    let mut line = Vec::new();
    let mut number = 0usize;
    loop {
        line.clear();
        let n = (&mut reader)
            .take(MAX_LEAF_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| Failure::io(&leaves_path, e))?;
        if n == 0 {
            break;
        }
        number += 1;
        let at = |why: &str| refused(format!("{}: line {number}: {why}", leaves_path.display()));
        let Some(body) = line.strip_suffix(b"\n") else {
            return Err(at("longer than the bound, or torn (no newline)"));
        };
        let leaf = parse_leaf(body).map_err(|e| at(&e))?;
        log.append(&leaf).map_err(|e| at(&e.to_string()))?;
    }
    let checkpoint_path = dir.join(CHECKPOINT_FILE);
    let checkpoint = match std::fs::symlink_metadata(&checkpoint_path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        // Read past the 64 KiB a note may have (verification refuses it above that), so that a
        // note a flooding witness's answers once grew can be replaced by `registry witness`.
        _ => Some(read_capped(&checkpoint_path, MAX_STORED_NOTE_BYTES)?),
    };
    Ok(Registry {
        dir: dir.to_owned(),
        log,
        steward,
        checkpoint,
        _lock: lock,
    })
}

/// A leaf line: exactly the canonical bytes of the leaf it names.
fn parse_leaf(body: &[u8]) -> Result<RegistryLeaf, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let s = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .ok_or(format!("no string {k:?}"))
    };
    let h = |k: &str| -> Result<[u8; 32], String> {
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

fn init(dir: &Path, origin: &str, key: &Path) -> CmdResult {
    let signer = read_secret_key(key)?;
    let steward = NoteKey::new(origin, ALG_ED25519, signer.verifying_key().as_bytes())
        .map_err(|e| Failure::Usage(format!("--origin: {e}")))?;
    std::fs::create_dir(dir).map_err(|e| Failure::io(dir, e))?;
    let config = json!({ "origin": origin, "log_vkey": steward.vkey() });
    write_output(
        &dir.join(CONFIG_FILE),
        format!("{config}\n").as_bytes(),
        &[key],
    )?;
    write_output(&dir.join(LEAVES_FILE), b"", &[key])?;
    say!("registry {} for origin {origin}", dir.display());
    say!("steward verifier key (witnessctl add-key -origin {origin} -key ...):");
    say!("{}", steward.vkey());
    Ok(())
}

/// Why registering a call failed. Each variant has a stable code (spec/CALL-REGISTRY.md,
/// section 3.1), printed first in its message, and an exit code: 2 for a registry that cannot be
/// used or written, 1 for a call that cannot be registered or was not witnessed.
#[derive(Debug)]
pub(crate) enum RegisterError {
    /// `registry_unusable`: the registry cannot be opened, read or locked, or it, the key and the
    /// policy name different stewards. Nothing was appended.
    Unusable(String),
    /// `registration_refused`: the call cannot be registered (no final seal that verifies under
    /// the steward's key, the registry full). Nothing was appended.
    Refused(String),
    /// `run_unreadable`: the run directory's `seals.cbor` cannot be opened or read. Nothing was
    /// appended.
    RunUnreadable(String),
    /// `registry_write_failed`: writing the leaf, the checkpoint or the call's proof failed. The
    /// registry may hold the leaf; its checkpoint and the proof may be older.
    Write(String),
    /// `not_witnessed`: the leaf, the checkpoint and the call's proof are written, but fewer
    /// witnesses than the policy's quorum cosigned.
    NotWitnessed(String),
}

impl RegisterError {
    /// The stable code.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            Self::Unusable(_) => "registry_unusable",
            Self::Refused(_) => "registration_refused",
            Self::RunUnreadable(_) => "run_unreadable",
            Self::Write(_) => "registry_write_failed",
            Self::NotWitnessed(_) => "not_witnessed",
        }
    }

    fn message(&self) -> &str {
        match self {
            Self::Unusable(m)
            | Self::Refused(m)
            | Self::RunUnreadable(m)
            | Self::Write(m)
            | Self::NotWitnessed(m) => m,
        }
    }

    /// The failure of a command, exit 2 or 1, its message prefixed by `context`.
    pub(crate) fn into_failure(self, context: &str) -> Failure {
        let text = format!("{context}{}: {}", self.code(), self.message());
        match self {
            Self::Unusable(_) | Self::RunUnreadable(_) | Self::Write(_) => Failure::Usage(text),
            Self::Refused(_) | Self::NotWitnessed(_) => Failure::Refused(text),
        }
    }

    fn unusable(f: Failure) -> Self {
        match f {
            Failure::Usage(m) | Failure::Refused(m) => Self::Unusable(m),
        }
    }

    fn write(f: Failure) -> Self {
        match f {
            Failure::Usage(m) | Failure::Refused(m) => Self::Write(m),
        }
    }
}

impl From<RegisterError> for Failure {
    fn from(e: RegisterError) -> Self {
        e.into_failure("")
    }
}

/// A registry opened, checked and locked for appending calls: the one implementation behind
/// `registry add`, `run --registry` and any other writer of a registry (a live sink). The lock is
/// held until it is dropped, so a run can open it before its first window and register its call
/// after its last one with no other writer in between.
pub(crate) struct Appender {
    reg: Registry,
    signer: jouleclaw_stack::jcr1::cose::SoftwareSigner,
    key_path: PathBuf,
    policy: Option<WitnessPolicy>,
    /// Set when a write failed: the in-memory log may then be ahead of the files.
    broken: bool,
}

/// One registered call: what [`Appender::register_seal`] did.
pub(crate) struct Registration {
    /// The call's stream id (untrusted text: escape it to print it).
    pub(crate) stream_id: String,
    /// Its leaf index.
    pub(crate) index: u64,
    /// The registry's size with it.
    pub(crate) size: u64,
    /// Earlier leaves of the same (steward, stream id): a re-registration when not empty.
    pub(crate) earlier: Vec<u64>,
    /// The call's `tlog-proof` file (spec/CALL-REGISTRY.md section 4).
    pub(crate) proof: Vec<u8>,
    /// One line per witness submitted to: `<name>: cosigned` or why not.
    pub(crate) witnesses: Vec<String>,
    /// Without a policy `None`; else what the policy's witnesses did.
    pub(crate) quorum: Option<Quorum>,
}

/// What a policy's witnesses did with a checkpoint.
pub(crate) struct Quorum {
    /// The count of distinct policy witnesses whose valid cosignature the checkpoint carries, or
    /// why the policy's quorum is not met (`quorum_not_met: ...`).
    pub(crate) cosigned: Result<usize, String>,
    /// The policy's witnesses.
    pub(crate) witnesses: usize,
    /// The policy's quorum.
    pub(crate) quorum: usize,
}

impl Appender {
    /// Opens and locks the registry at `dir` for the steward `signer` (read from `key_path`),
    /// witnessed under `policy` when given: the registry's key, the signer and the policy's
    /// `log` line must name one steward.
    pub(crate) fn open(
        dir: &Path,
        key_path: &Path,
        signer: jouleclaw_stack::jcr1::cose::SoftwareSigner,
        policy: Option<&Path>,
    ) -> Result<Self, RegisterError> {
        let policy = policy
            .map(policy_of)
            .transpose()
            .map_err(RegisterError::unusable)?;
        let reg = load(dir, true).map_err(RegisterError::unusable)?;
        if reg.steward.key() != &signer.verifying_key() {
            return Err(RegisterError::Unusable(format!(
                "{}: this registry is signed by another key than {}",
                dir.display(),
                key_path.display()
            )));
        }
        if policy.as_ref().is_some_and(|p| p.log != reg.steward) {
            return Err(RegisterError::Unusable(
                "the policy names another steward key or origin".into(),
            ));
        }
        if let Some(note) = &reg.checkpoint {
            verify_checkpoint_note(note, &reg.steward, &[]).map_err(|e| {
                RegisterError::Unusable(format!(
                    "{}: {e} (`jouleclaw registry witness` signs the leaves' checkpoint again)",
                    dir.join(CHECKPOINT_FILE).display()
                ))
            })?;
        }
        Ok(Self {
            reg,
            signer,
            key_path: key_path.to_owned(),
            policy,
            broken: false,
        })
    }

    /// Registers the call of the sealed run directory `run` (its last `seals.cbor` checkpoint,
    /// which must be final) and writes `run/registry.tlog-proof`; prints what it did. A call
    /// that was not witnessed by a quorum is `not_witnessed` with everything written.
    pub(crate) fn register_run(&mut self, run: &Path) -> Result<Registration, RegisterError> {
        let seal_cose = final_seal_of(run, &self.signer.verifying_key()).map_err(|f| match f {
            Failure::Usage(m) => RegisterError::RunUnreadable(m),
            Failure::Refused(m) => RegisterError::Refused(m),
        })?;
        let proof_path = run.join(PROOF_FILE);
        // A destination the proof cannot be written to is refused before anything is appended.
        jouleclaw_stack::store::writer::check_destination(&proof_path, &[&self.key_path])
            .map_err(|e| RegisterError::Write(format!("{e}; nothing appended")))?;
        let registration = self.register_seal(seal_cose)?;
        write_output(&proof_path, &registration.proof, &[&self.key_path])
            .map_err(|e| RegisterError::Write(e.to_string()))?;
        let terminal = crate::out::stdout_is_terminal();
        if !registration.earlier.is_empty() {
            tell!(
                "NOTE: stream {} was registered before (leaves {:?}); the registry keeps every registration",
                for_terminal(&registration.stream_id, true),
                registration.earlier
            );
        }
        say!(
            "registered stream {} as leaf {} of {}; proof {}",
            for_terminal(&registration.stream_id, terminal),
            registration.index,
            registration.size,
            proof_path.display()
        );
        registration.report()?;
        Ok(registration)
    }

    /// Registers one call by its final seal (the COSE_Sign1 bytes of its last `seals.cbor`
    /// checkpoint, verified here under the steward's key and required final): appends its leaf
    /// to `leaves.jsonl` (synced) before any witness sees the new checkpoint, submits the
    /// checkpoint to the policy's witnesses (concurrently, section 3), writes `checkpoint.note`
    /// with the cosignatures collected and returns the call's proof without writing it
    /// anywhere: the caller stores it beside the call and then calls
    /// [`Registration::report`]. This is the entry for a writer that has no run directory to
    /// put the proof in (a JetStream sink).
    pub(crate) fn register_seal(
        &mut self,
        seal_cose: Vec<u8>,
    ) -> Result<Registration, RegisterError> {
        if self.broken {
            return Err(RegisterError::Unusable(format!(
                "{}: an earlier write failed; open the registry again",
                self.reg.dir.display()
            )));
        }
        let key = self.signer.verifying_key();
        let seal = verify_checkpoint(&seal_cose, &key)
            .map_err(|e| RegisterError::Refused(format!("the final seal: {e}")))?
            .seal;
        if !seal.is_final {
            return Err(RegisterError::Refused(
                "the seal is not final; the call has not ended".into(),
            ));
        }
        let leaf = RegistryLeaf::of_final_seal(&seal)
            .map_err(|e| RegisterError::Refused(e.to_string()))?;
        let old_size = match &self.reg.checkpoint {
            Some(note) => {
                verify_checkpoint_note(note, &self.reg.steward, &[])
                    .map_err(|e| RegisterError::Unusable(e.to_string()))?
                    .body
                    .size
            }
            None => 0,
        };
        let appended = self
            .reg
            .log
            .append(&leaf)
            .map_err(|e| RegisterError::Refused(e.to_string()))?;
        // From here the in-memory log holds the leaf: a failed write leaves it unusable.
        self.broken = true;
        let note = self
            .reg
            .log
            .sign_checkpoint(&self.signer)
            .map_err(|e| RegisterError::Write(e.to_string()))?;
        // The leaf is on disk before any witness sees a checkpoint that covers it, so a witness
        // never holds a checkpoint the registry cannot extend.
        append_leaf(&self.reg.dir, &leaf).map_err(RegisterError::write)?;
        let (note, witnesses) = collect(note, &self.reg.log, old_size, self.policy.as_ref());
        write_output(
            &self.reg.dir.join(CHECKPOINT_FILE),
            &note,
            &[&self.key_path],
        )
        .map_err(|e| RegisterError::Write(e.to_string()))?;
        let path = self
            .reg
            .log
            .inclusion_proof(appended.index, self.reg.log.size())
            .map_err(|e| RegisterError::Write(e.to_string()))?;
        let quorum = self
            .policy
            .as_ref()
            .map(|p| quorum_of(&self.reg.steward, p, &note));
        self.reg.checkpoint = Some(note.clone());
        self.broken = false;
        let proof = CallProof {
            seal_cose,
            index: appended.index,
            path,
            checkpoint: note,
        };
        Ok(Registration {
            stream_id: leaf.stream_id,
            index: appended.index,
            size: self.reg.log.size(),
            earlier: appended.earlier,
            proof: proof.encode(),
            witnesses,
            quorum,
        })
    }
}

impl Registration {
    /// Prints one line per witness and the outcome; `not_witnessed` when a policy was given and
    /// its quorum was not met.
    pub(crate) fn report(&self) -> Result<(), RegisterError> {
        report_witnessing(&self.witnesses, self.quorum.as_ref())
    }
}

/// The distinct policy witnesses whose valid cosignature `note` carries, against the quorum.
fn quorum_of(steward: &NoteKey, p: &WitnessPolicy, note: &[u8]) -> Quorum {
    let cosigned = verify_checkpoint_note(note, steward, &p.witness_keys())
        .map_err(|e| e.to_string())
        .and_then(|checked| {
            p.check_quorum(checked.cosignatures.iter().map(|c| c.witness.as_str()))
                .map_err(|e| e.to_string())
        });
    Quorum {
        cosigned,
        witnesses: p.witnesses.len(),
        quorum: p.quorum,
    }
}

fn add(dir: &Path, run: &Path, key: &Path, policy: Option<&Path>) -> CmdResult {
    let signer = read_secret_key(key)?;
    let mut appender = Appender::open(dir, key, signer, policy)?;
    appender.register_run(run)?;
    Ok(())
}

/// Submits `note` to every witness of the policy that has a URL, all at once (one thread per
/// witness, each bounded as `submit` is), and merges the valid cosignatures in the policy's
/// order; returns the note and one line per witness, in the policy's order.
fn collect(
    mut note: Vec<u8>,
    log: &RegistryLog,
    old_size: u64,
    policy: Option<&WitnessPolicy>,
) -> (Vec<u8>, Vec<String>) {
    let mut outcome = Vec::new();
    let Some(p) = policy else {
        return (note, outcome);
    };
    let sent = &note;
    let answers: Vec<(&PolicyWitness, Result<Vec<u8>, String>)> = std::thread::scope(|s| {
        let running: Vec<_> = p
            .witnesses
            .iter()
            .filter_map(|w| w.url.as_deref().map(|url| (w, url)))
            .map(|(w, url)| {
                let thread = std::thread::Builder::new()
                    .name("witness".into())
                    .spawn_scoped(s, move || submit(url, log, old_size, sent));
                (w, thread)
            })
            .collect();
        running
            .into_iter()
            .map(|(w, thread)| {
                let answer = match thread {
                    Ok(t) => t
                        .join()
                        .unwrap_or_else(|_| Err("the submission failed".into())),
                    Err(e) => Err(format!("not submitted: no thread ({e})")),
                };
                (w, answer)
            })
            .collect()
    });
    // Each answer is merged under the key of the witness that gave it: its lines of other keys
    // are dropped, and at most one line of its own is kept (none when the note holds one).
    for (w, answer) in answers {
        match answer.map(|lines| merge_cosignatures(&note, &lines, std::slice::from_ref(&w.key))) {
            Ok(Ok(merged)) => {
                note = merged;
                outcome.push(format!("{}: cosigned", w.key.name()));
            }
            Ok(Err(e)) => outcome.push(format!("{}: {e}", w.key.name())),
            Err(why) => outcome.push(format!("{}: {why}", w.key.name())),
        }
    }
    (note, outcome)
}

fn report_witnessing(outcome: &[String], quorum: Option<&Quorum>) -> Result<(), RegisterError> {
    for line in outcome {
        say!(
            "  witness {}",
            for_terminal(line, crate::out::stdout_is_terminal())
        );
    }
    match quorum {
        Some(Quorum {
            cosigned: Ok(n),
            witnesses,
            quorum,
        }) => {
            say!("witnessed: {n} of {witnesses} witnesses cosigned (quorum {quorum})");
            Ok(())
        }
        Some(Quorum {
            cosigned: Err(e), ..
        }) => Err(RegisterError::NotWitnessed(format!(
            "{e}; the leaf and the checkpoint are kept: `jouleclaw registry witness` \
             submits the checkpoint again, `jouleclaw registry prove` then refreshes a run's proof"
        ))),
        None => {
            say!("not witnessed (no policy)");
            Ok(())
        }
    }
}

fn witness(dir: &Path, key: &Path, policy: &Path) -> CmdResult {
    let signer = read_secret_key(key)?;
    let policy = policy_of(policy)?;
    let reg = load(dir, true)?;
    if reg.steward.key() != &signer.verifying_key() || policy.log != reg.steward {
        return Err(Failure::Usage(
            "the key or the policy names another steward".into(),
        ));
    }
    if reg.log.size() == 0 {
        return Err(refused(format!(
            "{}: no call registered yet",
            dir.display()
        )));
    }
    let path = dir.join(CHECKPOINT_FILE);
    let stored = reg
        .checkpoint
        .as_deref()
        .map(|n| verify_checkpoint_note(n, &reg.steward, &policy.witness_keys()));
    let fresh = || reg.log.sign_checkpoint(&signer).map_err(refused);
    // What is submitted, and the size the witnesses are told they hold (`old`; a witness that
    // holds another size below the new one answers 409 with it and gets a proof from there).
    let (note, old) = match stored {
        // The leaves' checkpoint: submitted again with the cosignatures it has.
        Some(Ok(current)) if current.body == reg.log.body() => (current.note, current.body.size),
        // An older checkpoint of these leaves (a registration stopped between its leaf and its
        // checkpoint): one that covers every leaf is signed and submitted.
        Some(Ok(current)) => {
            let CheckpointBody { size, root, .. } = current.body;
            if size > reg.log.size() || reg.log.root_at(size).ok() != Some(root) {
                return Err(refused(format!(
                    "{}: the checkpoint does not match the leaves; audit the registry",
                    dir.display()
                )));
            }
            say!(
                "the checkpoint of size {size} is older than the {} leaves: signing one that covers them",
                reg.log.size()
            );
            (fresh()?, size)
        }
        // A checkpoint that does not verify (one pushed past its bounds by a witness's answer
        // before each witness was held to one line): the leaves' checkpoint is signed again
        // (Ed25519 is deterministic: the same steward line) and submitted without its lines.
        Some(Err(e)) => {
            say!(
                "{}: {}: signing the leaves' checkpoint again",
                path.display(),
                for_terminal(&e.to_string(), crate::out::stdout_is_terminal())
            );
            (fresh()?, reg.log.size())
        }
        // Leaves and no checkpoint yet (a first registration stopped before writing it).
        None => (fresh()?, 0),
    };
    let (note, outcome) = collect(note, &reg.log, old, Some(&policy));
    write_output(&path, &note, &[key])?;
    let quorum = quorum_of(&reg.steward, &policy, &note);
    Ok(report_witnessing(&outcome, Some(&quorum))?)
}

fn prove(dir: &Path, run: &Path) -> CmdResult {
    let reg = load(dir, false)?;
    if reg.checkpoint.is_none() {
        return Err(refused(format!("{}: no checkpoint yet", dir.display())));
    }
    let (proof, size) = proof_in(&reg, run)?
        .ok_or_else(|| refused("this run's final seal is not in the registry's checkpoint"))?;
    write_output(&run.join(PROOF_FILE), &proof.encode(), &[])?;
    say!(
        "wrote {} (leaf {} of {size})",
        run.join(PROOF_FILE).display(),
        proof.index
    );
    Ok(())
}

/// The proof of RUN's call (its last `seals.cbor` checkpoint) from the registry's latest
/// checkpoint, and that checkpoint's size; `None` when the checkpoint does not hold the call's
/// leaf (or there is no checkpoint yet).
fn proof_in(reg: &Registry, run: &Path) -> Result<Option<(CallProof, u64)>, Failure> {
    let Some(note) = reg.checkpoint.clone() else {
        return Ok(None);
    };
    let body = verify_checkpoint_note(&note, &reg.steward, &[])
        .map_err(refused)?
        .body;
    let key = PublicKey::from_bytes(reg.steward.key().as_bytes())
        .map_err(|_| refused("the registry's key does not decode"))?;
    let seal_cose = final_seal_of(run, &key)?;
    let seal = verify_checkpoint(&seal_cose, &key).map_err(refused)?.seal;
    let leaf = RegistryLeaf::of_final_seal(&seal).map_err(refused)?;
    let Some(index) = reg
        .log
        .indices_of(&leaf.stream_id)
        .iter()
        .copied()
        .filter(|&i| i < body.size)
        .find(|&i| reg.log.holds_at(i, &leaf).unwrap_or(false))
    else {
        return Ok(None);
    };
    let proof = CallProof {
        seal_cose,
        index,
        path: reg.log.inclusion_proof(index, body.size).map_err(refused)?,
        checkpoint: note,
    };
    Ok(Some((proof, body.size)))
}

/// The most calls one `registry add-stored` collects to register (each held as its final
/// seal, about half a KiB, until the cluster has been read); the rest wait for the next run.
const MAX_STORED_REGISTRATIONS: usize = 10_000;

/// `registry add-stored`: reads the cluster stream by stream (as `audit --nats`), keeps the
/// final seal of each complete call of this steward whose folder in `proofs` has no proof, then
/// registers them one by one.
fn add_stored(
    dir: &Path,
    key: &Path,
    policy: Option<&Path>,
    proofs: &Path,
    config: &jouleclaw_live::jetstream::JetStreamConfig,
    only: Option<&str>,
) -> CmdResult {
    let signer = read_secret_key(key)?;
    let public = signer.verifying_key();
    let mut appender = Appender::open(dir, key, signer, policy)?;
    let rt = jouleclaw_live::tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Usage(format!("runtime: {e}")))?;
    let terminal = crate::out::stdout_is_terminal();
    let (mut todo, mut had_proof, mut others, mut incomplete, mut left) =
        (Vec::new(), 0usize, 0usize, 0usize, 0usize);
    rt.block_on(jouleclaw_live::jetstream::read_each(config, only, |s| {
        let ours = s
            .records
            .seals
            .last()
            .is_some_and(|seal| verify_checkpoint(seal, &public).is_ok());
        if !ours {
            others += 1;
            return;
        }
        let folder = proofs.join(jouleclaw_live::escape_id(&s.records.stream_id));
        if std::fs::symlink_metadata(folder.join(PROOF_FILE)).is_ok() {
            had_proof += 1;
            return;
        }
        let audit = jouleclaw_live::audit::audit_nats_stream(&s, &public);
        if !audit.is_complete() {
            incomplete += 1;
            say!(
                "not registered: stream {} is not complete ({})",
                for_terminal(&audit.stream_id, terminal),
                for_terminal(audit.problems.first().map_or("", String::as_str), terminal)
            );
            return;
        }
        match s.records.seals.last() {
            Some(seal) if todo.len() < MAX_STORED_REGISTRATIONS => {
                todo.push((folder, seal.clone()));
            }
            _ => left += 1,
        }
    }))
    .map_err(|e| Failure::Usage(format!("{}: {e}", config.url)))?;
    let (mut registered, mut proved, mut failed) = (0usize, 0usize, 0usize);
    for (folder, seal) in todo {
        match stored_call_folder(proofs, &folder, &seal, &public) {
            Ok(()) => {}
            Err(f) => {
                failed += 1;
                let (Failure::Refused(m) | Failure::Usage(m)) = f;
                say!("not registered: {}", for_terminal(&m, terminal));
                continue;
            }
        }
        match proof_in(&appender.reg, &folder) {
            Ok(Some((proof, size))) => {
                write_output(
                    &folder.join(PROOF_FILE),
                    &proof.encode(),
                    &[&appender.key_path],
                )?;
                proved += 1;
                say!(
                    "already registered as leaf {} of {size}: wrote {}",
                    proof.index,
                    folder.join(PROOF_FILE).display()
                );
            }
            Ok(None) => match appender.register_run(&folder) {
                Ok(_) => registered += 1,
                Err(e) => {
                    failed += 1;
                    let (Failure::Refused(m) | Failure::Usage(m)) = e.into_failure("");
                    say!("not registered: {}", for_terminal(&m, terminal));
                }
            },
            Err(Failure::Refused(m) | Failure::Usage(m)) => {
                failed += 1;
                say!("not registered: {}", for_terminal(&m, terminal));
            }
        }
    }
    say!(
        "registry    {registered} calls registered, {proved} proofs written for calls registered before, \
         {had_proof} had a proof, {incomplete} incomplete, {failed} failed, {others} of other keys"
    );
    if left > 0 {
        say!(
            "{left} more calls to register than one run takes ({MAX_STORED_REGISTRATIONS}): run the command again"
        );
    }
    if failed + incomplete + left > 0 {
        return Err(Failure::Refused(format!(
            "{} calls not registered",
            failed + incomplete + left
        )));
    }
    Ok(())
}

/// `PROOFS/<id>` holding the stored final seal as its `seals.cbor`: made when missing; a folder
/// already there (a registration that stopped before its proof) must hold that seal.
/// A folder that is not a directory (a planted symbolic link among them) is refused unread.
fn stored_call_folder(proofs: &Path, folder: &Path, seal: &[u8], key: &PublicKey) -> CmdResult {
    std::fs::create_dir_all(proofs).map_err(|e| Failure::io(proofs, e))?;
    match std::fs::create_dir(folder) {
        Ok(()) => Ok(write_output(&folder.join(SEALS_FILE), seal, &[])?),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let is_dir = std::fs::symlink_metadata(folder)
                .map_err(|e| Failure::io(folder, e))?
                .file_type()
                .is_dir();
            if !is_dir {
                return Err(refused(format!(
                    "{}: not a directory; refused unread",
                    folder.display()
                )));
            }
            if final_seal_of(folder, key)? == seal {
                Ok(())
            } else {
                Err(refused(format!(
                    "{}: another final seal than the cluster holds; left as it is",
                    folder.join(SEALS_FILE).display()
                )))
            }
        }
        Err(e) => Err(Failure::io(folder, e)),
    }
}

fn append_leaf(dir: &Path, leaf: &RegistryLeaf) -> CmdResult {
    let path = dir.join(LEAVES_FILE);
    // Appended in place (the log is append-only); a symbolic link planted at its name is
    // refused, never followed, and only a regular file is written.
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
        .map_err(|e| Failure::io(&path, e))?;
    if !file
        .metadata()
        .map_err(|e| Failure::io(&path, e))?
        .is_file()
    {
        return Err(Failure::Usage(format!(
            "{}: not a regular file",
            path.display()
        )));
    }
    let mut line = leaf.encode().map_err(refused)?;
    line.push(b'\n');
    file.write_all(&line).map_err(|e| Failure::io(&path, e))?;
    file.sync_all().map_err(|e| Failure::io(&path, e))
}

/// One `add-checkpoint` exchange with a witness, retried within the documented bounds; a 409
/// naming a smaller size the witness holds is answered once with a proof from that size.
fn submit(url: &str, log: &RegistryLog, old_size: u64, note: &[u8]) -> Result<Vec<u8>, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(WITNESS_TIMEOUT))
        .http_status_as_error(false)
        .build()
        .into();
    let endpoint = format!("{}/add-checkpoint", url.trim_end_matches('/'));
    let new_size = log.size();
    let mut old = old_size;
    let mut resized = false;
    let mut last = String::new();
    let mut attempt = 0;
    while attempt < WITNESS_ATTEMPTS {
        if attempt > 0 {
            std::thread::sleep(WITNESS_BACKOFF[(attempt as usize - 1).min(1)]);
        }
        attempt += 1;
        let proof = log
            .consistency_proof(old, new_size)
            .map_err(|e| e.to_string())?;
        let body = add_checkpoint_request(old, &proof, note);
        let mut response = match agent
            .post(&endpoint)
            .header("Content-Type", "text/plain; charset=utf-8")
            .send(&body[..])
        {
            Ok(r) => r,
            Err(e) => {
                last = format!("unreachable ({e})");
                continue;
            }
        };
        let status = response.status().as_u16();
        let bytes = match response
            .body_mut()
            .with_config()
            .limit(MAX_NOTE_BYTES as u64)
            .read_to_vec()
        {
            Ok(b) => b,
            Err(e) => {
                last = format!("HTTP {status}, unreadable body ({e})");
                continue;
            }
        };
        match status {
            200 => return Ok(bytes),
            409 => match conflict_size(&bytes) {
                Some(s) if s <= new_size && s != old && !resized => {
                    old = s;
                    resized = true;
                    attempt -= 1;
                }
                Some(s) => {
                    return Err(format!(
                        "refused (409): the witness holds a checkpoint of size {s} that this one does not extend"
                    ));
                }
                None => return Err("refused (409) without a size".into()),
            },
            500..=599 => last = format!("HTTP {status}"),
            // Asked again from the size its 409 named, the new one: the witness holds another
            // checkpoint of that size (it cosigned a fork), not this one.
            422 if resized && old == new_size => {
                return Err(format!(
                    "refused (409): the witness holds another checkpoint of size {old} than this one"
                ));
            }
            _ => {
                let why = match status {
                    403 => "the witness does not trust the steward's key",
                    404 => "the witness does not know the origin",
                    422 => "the witness refused the consistency proof",
                    _ => "refused",
                };
                return Err(format!("{why} (HTTP {status})"));
            }
        }
    }
    Err(format!("{last} after {WITNESS_ATTEMPTS} attempts"))
}

fn verify(run: &Path, policy: &Path) -> CmdResult {
    let policy = policy_of(policy)?;
    let verified = verify_run(run, &policy)?;
    let terminal = crate::out::stdout_is_terminal();
    say!(
        "witnessed: stream {} is leaf {} of the registry {} at size {}",
        for_terminal(&verified.seal.stream_id, terminal),
        verified.index,
        for_terminal(&verified.checkpoint.body.origin, terminal),
        verified.checkpoint.body.size
    );
    for c in &verified.checkpoint.cosignatures {
        say!(
            "  cosigned by {} at {}",
            for_terminal(&c.witness, terminal),
            utc(c.timestamp)
        );
    }
    if let Some(t) = verified.witnessed_by() {
        say!(
            "the call's final seal existed by {} (when {} of the policy's witnesses, its quorum, had cosigned)",
            utc(t),
            policy.quorum
        );
    }
    Ok(())
}

/// `receipts verify DIR --witness-policy FILE`: after the directory verified, its call must be
/// witnessed under the policy, whose steward key must be `--pub`.
pub(crate) fn verify_witnessed(public: &Path, dir: &Path, policy: Option<&Path>) -> CmdResult {
    let Some(policy) = policy else { return Ok(()) };
    let key = crate::keys::read_public_key(public)?;
    let policy = witness_policy_for(&key, policy)?;
    let v = verify_run(dir, &policy)?;
    say!(
        "witnessed: leaf {} of registry {} at size {}, cosigned by {} of {} witnesses (quorum {})",
        v.index,
        for_terminal(&v.checkpoint.body.origin, crate::out::stdout_is_terminal()),
        v.checkpoint.body.size,
        v.checkpoint.cosignatures.len(),
        policy.witnesses.len(),
        policy.quorum
    );
    Ok(())
}

/// The witness policy at `path` for verifying calls signed by `key` (`--pub`): its `log` line
/// must be that key. `receipts verify --witness-policy` and `audit --witness-policy` read their
/// policy through this.
pub(crate) fn witness_policy_for(key: &PublicKey, path: &Path) -> Result<WitnessPolicy, Failure> {
    let policy = policy_of(path)?;
    if policy.log.key() != key {
        return Err(Failure::Usage(format!(
            "{}: the witness policy names another steward key than --pub",
            path.display()
        )));
    }
    Ok(policy)
}

/// Verifies RUN/registry.tlog-proof under the policy and that its seal is the run's final seal:
/// the one check behind `registry verify`, `receipts verify DIR --witness-policy` and
/// `audit --dir --witness-policy`. A run without a proof file is refused (exit 1): its call is
/// not registered.
pub(crate) fn verify_run(
    run: &Path,
    policy: &WitnessPolicy,
) -> Result<jouleclaw_stack::registry::VerifiedCall, Failure> {
    let (proof, verified) = verified_proof(run, policy)?;
    let key = PublicKey::from_bytes(policy.log.key().as_bytes())
        .map_err(|_| refused("the policy's log key does not decode"))?;
    let run_seal = final_seal_of(run, &key)?;
    if run_seal != proof.seal_cose {
        return Err(refused(format!(
            "{}: the proof registers another final seal than {}",
            run.join(PROOF_FILE).display(),
            run.join(SEALS_FILE).display()
        )));
    }
    Ok(verified)
}

/// `audit --nats --witness-policy P --registry-proofs DIR`: the proof `live --registry-proofs
/// DIR` wrote for a JetStream call (`DIR/<escaped stream id>/registry.tlog-proof`) verifies
/// under the policy and registers `stored_seal`, the final seal the cluster holds for the
/// stream (not the copy in the proof's folder).
pub(crate) fn verify_stored_call(
    folder: &Path,
    stored_seal: Option<&[u8]>,
    policy: &WitnessPolicy,
) -> Result<jouleclaw_stack::registry::VerifiedCall, Failure> {
    let (proof, verified) = verified_proof(folder, policy)?;
    match stored_seal {
        Some(seal) if seal == proof.seal_cose.as_slice() => Ok(verified),
        Some(_) => Err(refused(format!(
            "{}: the proof registers another final seal than the one the cluster holds",
            folder.join(PROOF_FILE).display()
        ))),
        None => Err(refused("the cluster holds no seal for the stream")),
    }
}

/// Reads `DIR/registry.tlog-proof` (a missing file: the call is not registered) and verifies it
/// under the policy.
fn verified_proof(
    run: &Path,
    policy: &WitnessPolicy,
) -> Result<(CallProof, jouleclaw_stack::registry::VerifiedCall), Failure> {
    let path = run.join(PROOF_FILE);
    if matches!(
        layout::open_input(&path).map_err(|e| Failure::io(&path, e))?,
        Input::Missing
    ) {
        return Err(refused(format!(
            "{}: no such file: the call is not registered",
            path.display()
        )));
    }
    let proof = CallProof::parse(&read_capped(&path, MAX_PROOF_BYTES)?)
        .map_err(|e| refused(format!("{}: {e}", path.display())))?;
    let verified = verify_call_proof(&proof, policy)
        .map_err(|e| refused(format!("{}: {e}", path.display())))?;
    Ok((proof, verified))
}

fn utc(t: u64) -> String {
    i64::try_from(t)
        .ok()
        .and_then(UtcSecond::from_unix)
        .map_or_else(|| format!("{t} (POSIX seconds)"), |u| u.to_string())
}

fn audit(dir: &Path, policy: &Path, seen: &[PathBuf]) -> CmdResult {
    let policy = policy_of(policy)?;
    let reg = load(dir, false)?;
    if policy.log != reg.steward {
        return Err(Failure::Usage(
            "the policy names another steward key or origin".into(),
        ));
    }
    let mut problems = Vec::new();
    let terminal = crate::out::stdout_is_terminal();
    let note = reg
        .checkpoint
        .as_ref()
        .ok_or_else(|| refused(format!("{}: no checkpoint yet", dir.display())))?;
    let latest =
        verify_checkpoint_note(note, &reg.steward, &policy.witness_keys()).map_err(refused)?;
    if let Err(e) = policy.check_quorum(latest.cosignatures.iter().map(|c| c.witness.as_str())) {
        problems.push(format!("the latest checkpoint is not witnessed: {e}"));
    }
    agree(
        &reg.log,
        &latest,
        "the registry's own checkpoint",
        &mut problems,
    );
    for path in seen {
        let bytes = read_capped(path, MAX_NOTE_BYTES)?;
        match verify_checkpoint_note(&bytes, &reg.steward, &policy.witness_keys()) {
            Ok(v) => agree(&reg.log, &v, &path.display().to_string(), &mut problems),
            Err(e) => problems.push(format!("{}: {e}", path.display())),
        }
    }
    // Grouped by stream id: every leaf is a seal under the registry's one key, and the seal's
    // `steward` label is the key holder's choice (a re-mint under another label is still one).
    for (stream, leaves) in reg.log.reregistered() {
        problems.push(format!(
            "stream {} is registered {} times (leaves {leaves:?}): its history was re-minted",
            for_terminal(&stream, terminal),
            leaves.len()
        ));
    }
    if reg.log.size() > latest.body.size {
        problems.push(format!(
            "{} leaves after the checkpoint's size {} are in no checkpoint: not witnessed \
             (`jouleclaw registry witness` signs and submits one that covers them)",
            reg.log.size() - latest.body.size,
            latest.body.size
        ));
    }
    say!(
        "registry {}: {} calls, checkpoint at size {} cosigned by {} of {} witnesses",
        for_terminal(reg.log.origin(), terminal),
        reg.log.size(),
        latest.body.size,
        latest.cosignatures.len(),
        policy.witnesses.len()
    );
    if problems.is_empty() {
        say!(
            "registry consistent: every checkpoint agrees with the leaves, no call registered twice"
        );
        return Ok(());
    }
    for p in &problems {
        say!("  {p}");
    }
    Err(Failure::Refused(format!(
        "{} problems in the registry",
        problems.len()
    )))
}

fn agree(
    log: &RegistryLog,
    checkpoint: &VerifiedCheckpoint,
    what: &str,
    problems: &mut Vec<String>,
) {
    let CheckpointBody { size, root, .. } = checkpoint.body;
    if size > log.size() {
        problems.push(format!(
            "{what}: signed at size {size}, but the registry holds {} leaves: it was rolled back or forked",
            log.size()
        ));
        return;
    }
    match log.root_at(size) {
        Ok(r) if r == root => {}
        _ => problems.push(format!(
            "{what}: fork: the steward signed another root at size {size} than these leaves give"
        )),
    }
}
