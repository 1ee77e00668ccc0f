//! `registry init|add|verify|audit`: a steward's call registry on disk, its checkpoints
//! witnessed over C2SP tlog-witness, and one offline proof per call (spec/CALL-REGISTRY.md).
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
    MAX_PROOF_BYTES, NoteKey, RegistryLeaf, RegistryLog, VerifiedCheckpoint, WitnessPolicy,
    add_checkpoint_request, conflict_size, merge_cosignatures, verify_call_proof,
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
    let path = dir.join(".lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| Failure::io(&path, e))?;
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
        _ => Some(read_capped(&checkpoint_path, MAX_NOTE_BYTES)?),
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

fn add(dir: &Path, run: &Path, key: &Path, policy: Option<&Path>) -> CmdResult {
    let signer = read_secret_key(key)?;
    let policy = policy.map(policy_of).transpose()?;
    let mut reg = load(dir, true)?;
    if reg.steward.key() != &signer.verifying_key() {
        return Err(Failure::Usage(format!(
            "{}: this registry is signed by another key than {}",
            dir.display(),
            key.display()
        )));
    }
    if policy.as_ref().is_some_and(|p| p.log != reg.steward) {
        return Err(Failure::Usage(
            "the policy names another steward key or origin".into(),
        ));
    }
    let seal_cose = final_seal_of(run, &signer.verifying_key())?;
    let seal = verify_checkpoint(&seal_cose, &signer.verifying_key())
        .map_err(refused)?
        .seal;
    let leaf = RegistryLeaf::of_final_seal(&seal).map_err(refused)?;
    let old_size = match &reg.checkpoint {
        Some(note) => {
            verify_checkpoint_note(note, &reg.steward, &[])
                .map_err(refused)?
                .body
                .size
        }
        None => 0,
    };
    let appended = reg.log.append(&leaf).map_err(refused)?;
    if !appended.earlier.is_empty() {
        tell!(
            "NOTE: stream {} was registered before (leaves {:?}); the registry keeps every registration",
            for_terminal(&leaf.stream_id, true),
            appended.earlier
        );
    }
    let note = reg.log.sign_checkpoint(&signer).map_err(refused)?;
    let (note, outcome) = collect(note, &reg.log, old_size, policy.as_ref());
    // The leaf first (appended and synced), then the checkpoint that covers it.
    append_leaf(&reg.dir, &leaf)?;
    write_output(&reg.dir.join(CHECKPOINT_FILE), &note, &[key])?;
    let proof = CallProof {
        seal_cose,
        index: appended.index,
        path: reg
            .log
            .inclusion_proof(appended.index, reg.log.size())
            .map_err(refused)?,
        checkpoint: note.clone(),
    };
    write_output(&run.join(PROOF_FILE), &proof.encode(), &[key])?;
    say!(
        "registered stream {} as leaf {} of {}; proof {}",
        for_terminal(&leaf.stream_id, crate::out::stdout_is_terminal()),
        appended.index,
        reg.log.size(),
        run.join(PROOF_FILE).display()
    );
    report_witnessing(&reg, &note, &outcome, policy.as_ref())
}

/// Submits `note` to every witness of the policy that has a URL and merges the valid
/// cosignatures; returns the note and one line per witness.
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
    let keys = p.witness_keys();
    for w in &p.witnesses {
        let Some(url) = &w.url else { continue };
        match submit(url, log, old_size, &note)
            .map(|lines| merge_cosignatures(&note, &lines, &keys))
        {
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

fn report_witnessing(
    reg: &Registry,
    note: &[u8],
    outcome: &[String],
    policy: Option<&WitnessPolicy>,
) -> CmdResult {
    for line in outcome {
        say!(
            "  witness {}",
            for_terminal(line, crate::out::stdout_is_terminal())
        );
    }
    let Some(p) = policy else {
        say!("not witnessed (no --policy)");
        return Ok(());
    };
    let checked = verify_checkpoint_note(note, &reg.steward, &p.witness_keys()).map_err(refused)?;
    match p.check_quorum(checked.cosignatures.iter().map(|c| c.witness.as_str())) {
        Ok(n) => {
            say!(
                "witnessed: {n} of {} witnesses cosigned (quorum {})",
                p.witnesses.len(),
                p.quorum
            );
            Ok(())
        }
        Err(e) => Err(refused(format!(
            "not witnessed: {e}; the leaf and the checkpoint are kept: `jouleclaw registry witness` \
             submits the checkpoint again, `jouleclaw registry prove` then refreshes a run's proof"
        ))),
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
    let note = match &reg.checkpoint {
        Some(n) => n.clone(),
        None => return Err(refused(format!("{}: no checkpoint yet", dir.display()))),
    };
    let current =
        verify_checkpoint_note(&note, &reg.steward, &policy.witness_keys()).map_err(refused)?;
    if current.body != reg.log.body() {
        return Err(refused(format!(
            "{}: the checkpoint does not match the leaves; audit the registry",
            dir.display()
        )));
    }
    // Sent as `old N` for N = its own size: a witness that holds a smaller size answers 409 with
    // it, and the request is made again with a proof from there.
    let (note, outcome) = collect(note, &reg.log, current.body.size, Some(&policy));
    write_output(&reg.dir.join(CHECKPOINT_FILE), &note, &[key])?;
    report_witnessing(&reg, &note, &outcome, Some(&policy))
}

fn prove(dir: &Path, run: &Path) -> CmdResult {
    let reg = load(dir, false)?;
    let note = reg
        .checkpoint
        .clone()
        .ok_or_else(|| refused(format!("{}: no checkpoint yet", dir.display())))?;
    let body = verify_checkpoint_note(&note, &reg.steward, &[])
        .map_err(refused)?
        .body;
    let key = PublicKey::from_bytes(reg.steward.key().as_bytes())
        .map_err(|_| refused("the registry's key does not decode"))?;
    let seal_cose = final_seal_of(run, &key)?;
    let seal = verify_checkpoint(&seal_cose, &key).map_err(refused)?.seal;
    let leaf = RegistryLeaf::of_final_seal(&seal).map_err(refused)?;
    let index = reg
        .log
        .indices_of(&leaf.steward, &leaf.stream_id)
        .iter()
        .copied()
        .filter(|&i| i < body.size)
        .find(|&i| reg.log.holds_at(i, &leaf).unwrap_or(false))
        .ok_or_else(|| refused("this run's final seal is not in the registry's checkpoint"))?;
    let proof = CallProof {
        seal_cose,
        index,
        path: reg.log.inclusion_proof(index, body.size).map_err(refused)?,
        checkpoint: note,
    };
    write_output(&run.join(PROOF_FILE), &proof.encode(), &[])?;
    say!(
        "wrote {} (leaf {index} of {})",
        run.join(PROOF_FILE).display(),
        body.size
    );
    Ok(())
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
                Some(s) if s < new_size && s != old && !resized => {
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
            "the call's final seal existed by {} (its earliest cosignature)",
            utc(t)
        );
    }
    Ok(())
}

/// `receipts verify DIR --witness-policy FILE`: after the directory verified, its call must be
/// witnessed under the policy, whose steward key must be `--pub`.
pub(crate) fn verify_witnessed(public: &Path, dir: &Path, policy: Option<&Path>) -> CmdResult {
    let Some(policy) = policy else { return Ok(()) };
    let policy = policy_of(policy)?;
    let key = crate::keys::read_public_key(public)?;
    if policy.log.key() != &key {
        return Err(Failure::Usage(
            "the witness policy names another steward key than --pub".into(),
        ));
    }
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

/// Verifies RUN/registry.tlog-proof under the policy and that its seal is the run's final seal.
pub(crate) fn verify_run(
    run: &Path,
    policy: &WitnessPolicy,
) -> Result<jouleclaw_stack::registry::VerifiedCall, Failure> {
    let path = run.join(PROOF_FILE);
    let proof = CallProof::parse(&read_capped(&path, MAX_PROOF_BYTES)?)
        .map_err(|e| refused(format!("{}: {e}", path.display())))?;
    let verified = verify_call_proof(&proof, policy)
        .map_err(|e| refused(format!("{}: {e}", path.display())))?;
    let key = PublicKey::from_bytes(policy.log.key().as_bytes())
        .map_err(|_| refused("the policy's log key does not decode"))?;
    let run_seal = final_seal_of(run, &key)?;
    if run_seal != proof.seal_cose {
        return Err(refused(format!(
            "{}: the proof registers another final seal than {}",
            path.display(),
            run.join(SEALS_FILE).display()
        )));
    }
    Ok(verified)
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
    for (steward, stream, leaves) in reg.log.reregistered() {
        problems.push(format!(
            "stream {} of {} is registered {} times (leaves {leaves:?}): its history was re-minted",
            for_terminal(&stream, terminal),
            for_terminal(&steward, terminal),
            leaves.len()
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
