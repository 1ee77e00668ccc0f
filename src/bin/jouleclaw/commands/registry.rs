//! `registry init|add|add-stored|witness|prove|verify|audit`: the command's arguments and what
//! it prints. The registry itself (its files, lock, appender, witness client and the check of a
//! registered call) is the library `jouleclaw_registry` (spec/CALL-REGISTRY.md); registering
//! the calls a JetStream cluster holds (`add-stored`) is `jouleclaw_live::registry`.
//!
//! Every writer of a registry goes through [`Appender`] (`registry add`, `run --registry`, and a
//! live sink that registers its calls), which prints what the library's appender did. Every
//! reader that requires a call witnessed goes through [`verify_run`] (`registry verify`,
//! `receipts verify --witness-policy`, `audit --dir --witness-policy`) or, for a call the
//! cluster holds, [`verify_stored_call`] (`audit --nats --witness-policy`).

use std::path::{Path, PathBuf};

use clap::Subcommand;
use jouleclaw_stack::jcr1::UtcSecond;
use jouleclaw_stack::jcr1::cose::{PublicKey, Signer as _, SoftwareSigner};
use jouleclaw_stack::registry::{
    self as lib, ALG_ED25519, CHECKPOINT_FILE, NoteKey, Quorum, Registry, RegistryError, Resign,
    VerifiedCall, WitnessPolicy,
};

use crate::keys::read_secret_key;
use crate::out::{for_terminal, say, tell};
use crate::{CmdResult, Failure};

/// The file of a run directory that holds the call's registry proof.
pub(crate) use jouleclaw_stack::registry::PROOF_FILE;
/// One registered call (what [`Appender::register_run`] returns).
pub(crate) use jouleclaw_stack::registry::Registration;

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
            &crate::commands::audit::reader_config(nats, js_stream, prefix),
            stream.as_deref(),
        ),
    }
}

/// A refusal (exit 1) or a usage or I/O error (exit 2), with the library's message.
impl From<RegistryError> for Failure {
    fn from(e: RegistryError) -> Self {
        if e.is_refusal() {
            Failure::Refused(e.to_string())
        } else {
            Failure::Usage(e.to_string())
        }
    }
}

/// Why registering a call failed: one of the codes of spec/CALL-REGISTRY.md section 3.1
/// (`registry_unusable`, `registration_refused`, `run_unreadable`, `registry_write_failed`,
/// `not_witnessed`), printed first in its message, with its exit code (2 or 1).
#[derive(Debug)]
pub(crate) struct RegisterError(RegistryError);

impl RegisterError {
    /// The failure of a command, exit 2 or 1, its message prefixed by `context`.
    pub(crate) fn into_failure(self, context: &str) -> Failure {
        let text = format!("{context}{}", self.0);
        if self.0.is_refusal() {
            Failure::Refused(text)
        } else {
            Failure::Usage(text)
        }
    }
}

impl From<RegistryError> for RegisterError {
    fn from(e: RegistryError) -> Self {
        Self(e)
    }
}

impl From<RegisterError> for Failure {
    fn from(e: RegisterError) -> Self {
        e.into_failure("")
    }
}

/// The registry's appender ([`lib::Appender`]) that prints what it did: the one writer behind
/// `registry add`, `registry add-stored`, `run --registry` and `live --registry`.
pub(crate) struct Appender(lib::Appender);

impl Appender {
    /// Opens and locks the registry at `dir` for the steward `signer` (read from `key_path`),
    /// witnessed under the policy at `policy` when given (read first).
    pub(crate) fn open(
        dir: &Path,
        key_path: &Path,
        signer: SoftwareSigner,
        policy: Option<&Path>,
    ) -> Result<Self, RegisterError> {
        let policy = policy
            .map(lib::read_policy)
            .transpose()
            .map_err(|e| RegisterError(e.into_unusable()))?;
        lib::Appender::open(dir, signer, Some(key_path), policy)
            .map(Self)
            .map_err(RegisterError)
    }

    /// The library's appender (for [`jouleclaw_live::registry`], whose caller prints).
    pub(crate) fn library(&mut self) -> &mut lib::Appender {
        &mut self.0
    }

    /// Registers the call of the sealed run directory `run`, writes `run/registry.tlog-proof`
    /// and prints what it did; `not_witnessed` when a policy's quorum did not cosign.
    pub(crate) fn register_run(&mut self, run: &Path) -> Result<Registration, RegisterError> {
        let registration = self.0.register_run(run).map_err(RegisterError)?;
        print_registration(&registration, run);
        registration.witnessed().map_err(RegisterError)?;
        Ok(registration)
    }
}

/// Prints what registering the call of `run` did: a re-registration, the leaf, one line per
/// witness, and the quorum met or no policy (nothing when a policy's quorum was not met: the
/// caller reports `not_witnessed`).
pub(crate) fn print_registration(registration: &Registration, run: &Path) {
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
        run.join(PROOF_FILE).display()
    );
    for line in &registration.witnesses {
        say!("  witness {}", for_terminal(line, terminal));
    }
    match &registration.quorum {
        Some(q) => {
            if let Ok(n) = q.check() {
                say!(
                    "witnessed: {n} of {} witnesses cosigned (quorum {})",
                    q.witnesses,
                    q.quorum
                );
            }
        }
        None => say!("not witnessed (no policy)"),
    }
}

/// Prints one line per witness and the outcome; `not_witnessed` when a policy was given and
/// its quorum was not met.
fn report_witnessing(outcome: &[String], quorum: Option<&Quorum>) -> Result<(), RegisterError> {
    for line in outcome {
        say!(
            "  witness {}",
            for_terminal(line, crate::out::stdout_is_terminal())
        );
    }
    match quorum {
        Some(q) => {
            let n = q.check().map_err(RegisterError)?;
            say!(
                "witnessed: {n} of {} witnesses cosigned (quorum {})",
                q.witnesses,
                q.quorum
            );
        }
        None => say!("not witnessed (no policy)"),
    }
    Ok(())
}

fn init(dir: &Path, origin: &str, key: &Path) -> CmdResult {
    let signer = read_secret_key(key)?;
    let steward = NoteKey::new(origin, ALG_ED25519, signer.verifying_key().as_bytes())
        .map_err(|e| Failure::Usage(format!("--origin: {e}")))?;
    Registry::create(dir, &steward, &[key])?;
    say!("registry {} for origin {origin}", dir.display());
    say!("steward verifier key (witnessctl add-key -origin {origin} -key ...):");
    say!("{}", steward.vkey());
    Ok(())
}

fn add(dir: &Path, run: &Path, key: &Path, policy: Option<&Path>) -> CmdResult {
    let signer = read_secret_key(key)?;
    let mut appender = Appender::open(dir, key, signer, policy)?;
    appender.register_run(run)?;
    Ok(())
}

fn witness(dir: &Path, key: &Path, policy: &Path) -> CmdResult {
    let signer = read_secret_key(key)?;
    let policy = lib::read_policy(policy)?;
    let mut reg = Registry::open_locked(dir)?;
    let done = lib::witness_again(&mut reg, &signer, &policy, key)?;
    match &done.resigned {
        Some(Resign::Older { size, leaves }) => say!(
            "the checkpoint of size {size} is older than the {leaves} leaves: signing one that covers them"
        ),
        Some(Resign::Unverified { why }) => say!(
            "{}: {}: signing the leaves' checkpoint again",
            dir.join(CHECKPOINT_FILE).display(),
            for_terminal(why, crate::out::stdout_is_terminal())
        ),
        Some(Resign::Missing) | None => {}
    }
    Ok(report_witnessing(&done.witnesses, Some(&done.quorum))?)
}

fn prove(dir: &Path, run: &Path) -> CmdResult {
    let reg = Registry::open(dir)?;
    let (index, size) = lib::write_run_proof(&reg, run, &[])?;
    say!(
        "wrote {} (leaf {index} of {size})",
        run.join(PROOF_FILE).display()
    );
    Ok(())
}

fn verify(run: &Path, policy: &Path) -> CmdResult {
    let policy = lib::read_policy(policy)?;
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

/// The witness policy at `path` for verifying calls signed by `key` (`--pub`)
/// ([`lib::read_policy_for`]).
pub(crate) fn witness_policy_for(key: &PublicKey, path: &Path) -> Result<WitnessPolicy, Failure> {
    Ok(lib::read_policy_for(key, path)?)
}

/// RUN/registry.tlog-proof verifies under the policy and registers the run's final seal
/// ([`lib::verify_run`]).
pub(crate) fn verify_run(run: &Path, policy: &WitnessPolicy) -> Result<VerifiedCall, Failure> {
    Ok(lib::verify_run(run, policy)?)
}

/// A JetStream call's proof folder verifies under the policy and registers the final seal the
/// cluster holds ([`lib::verify_stored_call`]).
pub(crate) fn verify_stored_call(
    folder: &Path,
    stored_seal: Option<&[u8]>,
    policy: &WitnessPolicy,
) -> Result<VerifiedCall, Failure> {
    Ok(lib::verify_stored_call(folder, stored_seal, policy)?)
}

fn utc(t: u64) -> String {
    i64::try_from(t)
        .ok()
        .and_then(UtcSecond::from_unix)
        .map_or_else(|| format!("{t} (POSIX seconds)"), |u| u.to_string())
}

fn audit(dir: &Path, policy: &Path, seen: &[PathBuf]) -> CmdResult {
    let policy = lib::read_policy(policy)?;
    let reg = Registry::open(dir)?;
    let a = lib::audit(&reg, &policy, seen)?;
    let terminal = crate::out::stdout_is_terminal();
    say!(
        "registry {}: {} calls, checkpoint at size {} cosigned by {} of {} witnesses",
        for_terminal(&a.origin, terminal),
        a.calls,
        a.checkpoint_size,
        a.cosigned,
        a.witnesses
    );
    if a.problems.is_empty() {
        say!(
            "registry consistent: every checkpoint agrees with the leaves, no call registered twice"
        );
        return Ok(());
    }
    for p in &a.problems {
        say!(
            "  {}",
            p.describe(|s| for_terminal(s, terminal).into_owned())
        );
    }
    Err(Failure::Refused(format!(
        "{} problems in the registry",
        a.problems.len()
    )))
}

/// `registry add-stored`: opens the registry, then [`jouleclaw_live::registry`] reads the
/// cluster stream by stream (as `audit --nats`), keeps the final seal of each complete call of
/// this steward whose folder in `proofs` has no proof, and registers them one by one; this
/// prints what it did.
fn add_stored(
    dir: &Path,
    key: &Path,
    policy: Option<&Path>,
    proofs: &Path,
    config: &jouleclaw_live::jetstream::JetStreamConfig,
    only: Option<&str>,
) -> CmdResult {
    use jouleclaw_live::registry::{
        MAX_STORED_REGISTRATIONS, StoredEvent, collect_stored, register_stored,
    };
    let signer = read_secret_key(key)?;
    let public = signer.verifying_key();
    let mut appender = Appender::open(dir, key, signer, policy)?;
    let rt = jouleclaw_live::tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Usage(format!("runtime: {e}")))?;
    let terminal = crate::out::stdout_is_terminal();
    let print = |event: StoredEvent<'_>| match event {
        StoredEvent::Incomplete { stream_id, problem } => say!(
            "not registered: stream {} is not complete ({})",
            for_terminal(stream_id, terminal),
            for_terminal(problem, terminal)
        ),
        StoredEvent::Registered {
            folder,
            registration,
        } => print_registration(registration, folder),
        StoredEvent::ProofWritten { proof, index, size } => say!(
            "already registered as leaf {index} of {size}: wrote {}",
            proof.display()
        ),
        StoredEvent::NotRegistered(e) => {
            say!("not registered: {}", for_terminal(&e.to_string(), terminal));
        }
        _ => {}
    };
    let calls = rt
        .block_on(collect_stored(
            config,
            only,
            &crate::keys::valid_key(&public)?,
            proofs,
            print,
        ))
        .map_err(|e| Failure::Usage(format!("{}: {e}", config.url)))?;
    let r = register_stored(appender.library(), proofs, calls, print)?;
    say!(
        "registry    {} calls registered, {} proofs written for calls registered before, \
         {} had a proof, {} incomplete, {} failed, {} of other keys",
        r.registered,
        r.proved,
        r.had_proof,
        r.incomplete,
        r.failed,
        r.others
    );
    if r.left > 0 {
        say!(
            "{} more calls to register than one run takes ({MAX_STORED_REGISTRATIONS}): run the command again",
            r.left
        );
    }
    if r.not_registered() > 0 {
        return Err(Failure::Refused(format!(
            "{} calls not registered",
            r.not_registered()
        )));
    }
    Ok(())
}
