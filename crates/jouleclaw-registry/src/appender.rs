//! The one writer of a registry's calls: [`Appender`] (spec/CALL-REGISTRY.md sections 3 and
//! 3.1), and `registry witness`'s submission of the latest checkpoint again
//! ([`witness_again`]).

use std::path::{Path, PathBuf};

use jouleclaw_jcr1::cose::Signer;
use jouleclaw_seal::verify_checkpoint;

use crate::disk::{CHECKPOINT_FILE, PROOF_FILE, Registry, final_seal_of, write_file};
use crate::witness::collect;
use crate::{
    CallProof, CheckpointBody, NoteKey, RegistryError, RegistryLeaf, Result, WitnessPolicy,
    verify_checkpoint_note,
};

/// A registry opened, checked and locked for appending calls: the one implementation behind
/// `registry add`, `run --registry`, `registry add-stored` and a live sink that registers its
/// calls. The lock is held until it is dropped, so a run can open it before its first window
/// and register its call after its last one with no other writer in between.
pub struct Appender {
    reg: Registry,
    signer: Box<dyn Signer + Send + Sync>,
    key_file: Option<PathBuf>,
    policy: Option<WitnessPolicy>,
    /// Set when a write failed: the in-memory log may then be ahead of the files.
    broken: bool,
}

impl std::fmt::Debug for Appender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appender")
            .field("registry", &self.reg)
            .field("key_file", &self.key_file)
            .field("policy", &self.policy)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

/// One registered call: what [`Appender::register_seal`] and [`Appender::register_run`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// The call's stream id (untrusted text: escape it to print it).
    pub stream_id: String,
    /// Its leaf index.
    pub index: u64,
    /// The registry's size with it.
    pub size: u64,
    /// Earlier leaves of the same stream id: a re-registration when not empty.
    pub earlier: Vec<u64>,
    /// The call's `tlog-proof` file (spec/CALL-REGISTRY.md section 4).
    pub proof: Vec<u8>,
    /// One line per witness submitted to, in the policy's order: `<name>: cosigned` or why not.
    pub witnesses: Vec<String>,
    /// Without a policy `None`; else what the policy's witnesses did.
    pub quorum: Option<Quorum>,
}

/// What a policy's witnesses did with a checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quorum {
    /// The count of distinct policy witnesses whose valid cosignature the checkpoint carries, or
    /// why the policy's quorum is not met (`quorum_not_met: ...`).
    pub cosigned: std::result::Result<usize, String>,
    /// The policy's witnesses.
    pub witnesses: usize,
    /// The policy's quorum.
    pub quorum: usize,
}

impl Quorum {
    /// The distinct policy witnesses whose valid cosignature `note` carries, against the
    /// policy's quorum.
    pub fn of(steward: &NoteKey, policy: &WitnessPolicy, note: &[u8]) -> Self {
        let cosigned = verify_checkpoint_note(note, steward, &policy.witness_keys())
            .map_err(|e| e.to_string())
            .and_then(|checked| {
                policy
                    .check_quorum(checked.cosignatures.iter().map(|c| c.witness.as_str()))
                    .map_err(|e| e.to_string())
            });
        Self {
            cosigned,
            witnesses: policy.witnesses.len(),
            quorum: policy.quorum,
        }
    }

    /// `not_witnessed` ([`RegistryError::NotWitnessed`]) when the quorum is not met.
    pub fn check(&self) -> Result<usize> {
        match &self.cosigned {
            Ok(n) => Ok(*n),
            Err(e) => Err(RegistryError::NotWitnessed {
                message: format!(
                    "{e}; the leaf and the checkpoint are kept: `jouleclaw registry witness` \
                     submits the checkpoint again, `jouleclaw registry prove` then refreshes a \
                     run's proof"
                ),
            }),
        }
    }
}

impl Registration {
    /// `Ok` when no policy was given or its quorum cosigned; `not_witnessed` otherwise (the
    /// leaf, the checkpoint and the proof are written all the same).
    pub fn witnessed(&self) -> Result<()> {
        self.quorum
            .as_ref()
            .map_or(Ok(()), |q| q.check().map(|_| ()))
    }
}

impl Appender {
    /// Opens and locks the registry at `dir` for the steward `signer` (any
    /// [`Signer`]: a software key, or a key held elsewhere), witnessed under `policy`
    /// when given: the registry's key, the signer and the policy's `log` line must name one
    /// steward, and the stored checkpoint must verify under the steward's key. `key_file` is the
    /// file the signer was read from, when there is one: it is named in errors and never
    /// overwritten. Every error is `registry_unusable`.
    pub fn open(
        dir: &Path,
        signer: impl Signer + Send + Sync + 'static,
        key_file: Option<&Path>,
        policy: Option<WitnessPolicy>,
    ) -> Result<Self> {
        let reg = Registry::open_locked(dir).map_err(RegistryError::into_unusable)?;
        if reg.steward().key() != &signer.verifying_key() {
            return Err(RegistryError::RegistryUnusable {
                message: format!(
                    "{}: this registry is signed by another key than {}",
                    dir.display(),
                    key_file.map_or_else(
                        || "the steward's signer".to_owned(),
                        |k| k.display().to_string()
                    )
                ),
            });
        }
        if policy.as_ref().is_some_and(|p| &p.log != reg.steward()) {
            return Err(RegistryError::RegistryUnusable {
                message: "the policy names another steward key or origin".into(),
            });
        }
        if let Some(note) = reg.checkpoint() {
            verify_checkpoint_note(note, reg.steward(), &[]).map_err(|e| {
                RegistryError::RegistryUnusable {
                    message: format!(
                        "{}: {e} (`jouleclaw registry witness` signs the leaves' checkpoint again)",
                        dir.join(CHECKPOINT_FILE).display()
                    ),
                }
            })?;
        }
        Ok(Self {
            reg,
            signer: Box::new(signer),
            key_file: key_file.map(Path::to_owned),
            policy,
            broken: false,
        })
    }

    /// The registry, as the appender holds it (locked).
    pub fn registry(&self) -> &Registry {
        &self.reg
    }

    /// The steward's key file given to [`Appender::open`]: a file no output may overwrite.
    pub fn key_file(&self) -> Option<&Path> {
        self.key_file.as_deref()
    }

    /// Files that must not be overwritten: the steward's key file.
    fn inputs(&self) -> Vec<&Path> {
        self.key_file.iter().map(PathBuf::as_path).collect()
    }

    /// Registers the call of the sealed run directory `run` (its last `seals.cbor` checkpoint,
    /// which must be final) and writes `run/registry.tlog-proof`. A destination the proof
    /// cannot be written to is refused before anything is appended. Without a quorum the
    /// registration is returned all the same (everything is written):
    /// [`Registration::witnessed`] says `not_witnessed`.
    pub fn register_run(&mut self, run: &Path) -> Result<Registration> {
        let seal_cose = final_seal_of(run, &self.signer.verifying_key()).map_err(|e| {
            if e.is_refusal() {
                RegistryError::RegistrationRefused {
                    message: e.to_string(),
                }
            } else {
                RegistryError::RunUnreadable {
                    message: e.to_string(),
                }
            }
        })?;
        let proof_path = run.join(PROOF_FILE);
        jouleclaw_store::writer::check_destination(&proof_path, &self.inputs()).map_err(|e| {
            RegistryError::RegistryWriteFailed {
                message: format!("{e}; nothing appended"),
            }
        })?;
        let registration = self.register_seal(seal_cose)?;
        write_file(&proof_path, &registration.proof, &self.inputs())
            .map_err(RegistryError::into_write_failed)?;
        Ok(registration)
    }

    /// Registers one call by its final seal (the COSE_Sign1 bytes of its last `seals.cbor`
    /// checkpoint, verified here under the steward's key and required final): appends its leaf
    /// to `leaves.jsonl` (synced) before any witness sees the new checkpoint, submits the
    /// checkpoint to the policy's witnesses (concurrently, section 3), writes `checkpoint.note`
    /// with the cosignatures collected and returns the call's proof without writing it
    /// anywhere: the caller stores it beside the call. This is the entry for a writer that has
    /// no run directory to put the proof in (a JetStream sink).
    pub fn register_seal(&mut self, seal_cose: Vec<u8>) -> Result<Registration> {
        if self.broken {
            return Err(RegistryError::RegistryUnusable {
                message: format!(
                    "{}: an earlier write failed; open the registry again",
                    self.reg.dir().display()
                ),
            });
        }
        let key = self.signer.verifying_key();
        let seal = verify_checkpoint(&seal_cose, &key)
            .map_err(|e| RegistryError::RegistrationRefused {
                message: format!("the final seal: {e}"),
            })?
            .seal;
        if !seal.is_final {
            return Err(RegistryError::RegistrationRefused {
                message: "the seal is not final; the call has not ended".into(),
            });
        }
        let refused = |e: RegistryError| RegistryError::RegistrationRefused {
            message: e.to_string(),
        };
        let leaf = RegistryLeaf::of_final_seal(&seal).map_err(refused)?;
        let old_size = match self.reg.checkpoint() {
            Some(note) => {
                verify_checkpoint_note(note, self.reg.steward(), &[])
                    .map_err(RegistryError::into_unusable)?
                    .body
                    .size
            }
            None => 0,
        };
        let appended = self.reg.log_mut().append(&leaf).map_err(refused)?;
        // From here the in-memory log holds the leaf: a failed write leaves it unusable.
        self.broken = true;
        let note = self
            .reg
            .log()
            .sign_checkpoint(self.signer.as_ref())
            .map_err(RegistryError::into_write_failed)?;
        // The leaf is on disk before any witness sees a checkpoint that covers it, so a witness
        // never holds a checkpoint the registry cannot extend.
        self.reg
            .append_leaf(&leaf)
            .map_err(RegistryError::into_write_failed)?;
        let (note, witnesses) = collect(note, self.reg.log(), old_size, self.policy.as_ref());
        let inputs: Vec<PathBuf> = self.key_file.iter().cloned().collect();
        let inputs: Vec<&Path> = inputs.iter().map(PathBuf::as_path).collect();
        self.reg
            .write_checkpoint(&note, &inputs)
            .map_err(RegistryError::into_write_failed)?;
        let path = self
            .reg
            .log()
            .inclusion_proof(appended.index, self.reg.log().size())
            .map_err(RegistryError::into_write_failed)?;
        let quorum = self
            .policy
            .as_ref()
            .map(|p| Quorum::of(self.reg.steward(), p, &note));
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
            size: self.reg.log().size(),
            earlier: appended.earlier,
            proof: proof.encode(),
            witnesses,
            quorum,
        })
    }
}

/// What [`witness_again`] submitted and what the witnesses did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewitnessed {
    /// Why a new checkpoint over every leaf was signed instead of submitting the stored one:
    /// `None` when the stored one was submitted again.
    pub resigned: Option<Resign>,
    /// One line per witness submitted to, in the policy's order.
    pub witnesses: Vec<String>,
    /// What the policy's witnesses did with it.
    pub quorum: Quorum,
}

/// Why `registry witness` signed a new checkpoint over every leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resign {
    /// The stored checkpoint is older than the leaves (a registration stopped between its
    /// leaf and its checkpoint).
    Older {
        /// The stored checkpoint's size.
        size: u64,
        /// The leaves.
        leaves: u64,
    },
    /// The stored checkpoint does not verify.
    Unverified {
        /// Why, as the verifier said.
        why: String,
    },
    /// There is no stored checkpoint (a first registration stopped before writing it).
    Missing,
}

/// `registry witness`: submits the registry's latest checkpoint to the policy's witnesses again
/// (spec/CALL-REGISTRY.md section 3) and keeps the cosignatures it gets in `checkpoint.note`.
/// A new checkpoint over every leaf is signed and submitted instead when the stored one is
/// older than the leaves, missing, or does not verify; a stored checkpoint that is a fork of the
/// leaves is refused. `reg` must be opened locked; `key_file` is never overwritten.
pub fn witness_again(
    reg: &mut Registry,
    signer: &dyn Signer,
    policy: &WitnessPolicy,
    key_file: &Path,
) -> Result<Rewitnessed> {
    if reg.steward().key() != &signer.verifying_key() || &policy.log != reg.steward() {
        return Err(RegistryError::StewardMismatch {
            message: "the key or the policy names another steward".into(),
        });
    }
    if reg.log().size() == 0 {
        return Err(RegistryError::refused(format!(
            "{}: no call registered yet",
            reg.dir().display()
        )));
    }
    let stored = reg
        .checkpoint()
        .map(|n| verify_checkpoint_note(n, reg.steward(), &policy.witness_keys()));
    let fresh = || {
        reg.log()
            .sign_checkpoint(signer)
            .map_err(RegistryError::refused)
    };
    // What is submitted, and the size the witnesses are told they hold (`old`; a witness that
    // holds another size below the new one answers 409 with it and gets a proof from there).
    let (note, old, resigned) = match stored {
        // The leaves' checkpoint: submitted again with the cosignatures it has.
        Some(Ok(current)) if current.body == reg.log().body() => {
            (current.note, current.body.size, None)
        }
        // An older checkpoint of these leaves: one that covers every leaf is signed and
        // submitted.
        Some(Ok(current)) => {
            let CheckpointBody { size, root, .. } = current.body;
            if size > reg.log().size() || reg.log().root_at(size).ok() != Some(root) {
                return Err(RegistryError::refused(format!(
                    "{}: the checkpoint does not match the leaves; audit the registry",
                    reg.dir().display()
                )));
            }
            let leaves = reg.log().size();
            (fresh()?, size, Some(Resign::Older { size, leaves }))
        }
        // A checkpoint that does not verify (one pushed past its bounds by a witness's answer
        // before each witness was held to one line): the leaves' checkpoint is signed again
        // (Ed25519 is deterministic: the same steward line) and submitted without its lines.
        Some(Err(e)) => (
            fresh()?,
            reg.log().size(),
            Some(Resign::Unverified { why: e.to_string() }),
        ),
        None => (fresh()?, 0, Some(Resign::Missing)),
    };
    let (note, witnesses) = collect(note, reg.log(), old, Some(policy));
    reg.write_checkpoint(&note, &[key_file])?;
    let quorum = Quorum::of(reg.steward(), policy, &note);
    Ok(Rewitnessed {
        resigned,
        witnesses,
        quorum,
    })
}
