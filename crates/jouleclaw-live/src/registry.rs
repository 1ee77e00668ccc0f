//! Registering the sealed calls a JetStream cluster holds in a call registry (feature
//! `registry`; spec/CALL-REGISTRY.md): the library behind `jouleclaw registry add-stored`.
//!
//! [`collect_stored`] reads the cluster stream by stream (as the auditor does) and keeps the
//! final seal of each complete call of the steward whose folder under the proofs folder has no
//! proof yet; [`register_stored`] then registers them one by one through the registry's
//! [`Appender`], each in its folder `PROOFS/<escaped id>/` holding `seals.cbor` and
//! `registry.tlog-proof`. A call registered before (its proof lost) gets its proof written
//! again instead of a second leaf. What happens to each call is handed to an observer as a
//! [`StoredEvent`], in order, as it happens; the counts come back as a [`StoredReport`].
//!
//! Reading is async (on the caller's runtime); registering is blocking (files, the registry's
//! lock, the witnesses' HTTP), so it is a plain function.

use std::path::{Path, PathBuf};

use jouleclaw_jcr1::cose::ValidKey;
use jouleclaw_registry::{
    Appender, PROOF_FILE, Registration, RegistryError, prepare_stored_call, write_file,
};
use jouleclaw_seal::verify_checkpoint;

use crate::jetstream::{JetStreamConfig, read_each};
use crate::{Result, escape_id};

/// The most calls one [`collect_stored`] keeps to register (each held as its final seal, about
/// half a KiB, until the cluster has been read); the rest are counted in
/// [`StoredCalls::left`] and wait for the next run.
pub const MAX_STORED_REGISTRATIONS: usize = 10_000;

/// What happened to one call, handed to the observer as it happens.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoredEvent<'a> {
    /// A call of the steward with no proof is not complete in the cluster: not registered.
    Incomplete {
        /// The stream id (untrusted text: escape it to print it).
        stream_id: &'a str,
        /// The auditor's first problem with it (untrusted text), empty when it named none.
        problem: &'a str,
    },
    /// The call was registered: its leaf appended, a checkpoint signed, its proof written to
    /// `folder`'s [`PROOF_FILE`]. When a policy's quorum did not cosign, a
    /// [`StoredEvent::NotRegistered`] with `not_witnessed` follows.
    Registered {
        /// The call's folder.
        folder: &'a Path,
        /// What the appender did.
        registration: &'a Registration,
    },
    /// The call was registered before: its proof was written again to `proof`.
    ProofWritten {
        /// The proof file written.
        proof: &'a Path,
        /// The call's leaf index.
        index: u64,
        /// The registry's size the proof is for.
        size: u64,
    },
    /// The call was not registered (or, after [`StoredEvent::Registered`], not witnessed).
    NotRegistered(&'a RegistryError),
}

/// The calls [`collect_stored`] kept to register, and what it counted.
#[derive(Debug, Default)]
pub struct StoredCalls {
    /// Each call's folder and final seal, in the order the cluster handed them.
    todo: Vec<(PathBuf, Vec<u8>)>,
    /// Calls of the steward whose folder already holds a proof.
    pub had_proof: usize,
    /// Streams whose final seal is not the steward's (or that have none).
    pub others: usize,
    /// Calls of the steward with no proof that are not complete in the cluster.
    pub incomplete: usize,
    /// Calls past [`MAX_STORED_REGISTRATIONS`]: left for the next run.
    pub left: usize,
}

impl StoredCalls {
    /// How many calls are kept to register.
    pub fn len(&self) -> usize {
        self.todo.len()
    }

    /// `true` when no call is kept to register.
    pub fn is_empty(&self) -> bool {
        self.todo.is_empty()
    }
}

/// What [`register_stored`] did, with the counts of [`collect_stored`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoredReport {
    /// Calls registered (new leaves).
    pub registered: usize,
    /// Calls registered before whose proof was written again.
    pub proved: usize,
    /// Calls whose folder already held a proof.
    pub had_proof: usize,
    /// Calls not complete in the cluster.
    pub incomplete: usize,
    /// Calls whose registration failed (or was not witnessed by a policy's quorum).
    pub failed: usize,
    /// Streams of other keys.
    pub others: usize,
    /// Calls left for the next run ([`MAX_STORED_REGISTRATIONS`]).
    pub left: usize,
}

impl StoredReport {
    /// The calls of the steward that still have no proof: failed, incomplete or left.
    pub fn not_registered(&self) -> usize {
        self.failed + self.incomplete + self.left
    }
}

/// Reads the cluster `config` stream by stream (only the stream `only` when given) and keeps
/// the final seal of each complete call whose final seal verifies under `steward` (checked once
/// by the caller) and whose
/// folder `proofs/<escaped id>/` holds no [`PROOF_FILE`]. Each call of the steward that is not
/// complete is handed to `on_event` as [`StoredEvent::Incomplete`]. Nothing is written.
///
/// # Errors
/// The cluster could not be read (a [`crate::LiveError`] of [`read_each`]).
pub async fn collect_stored(
    config: &JetStreamConfig,
    only: Option<&str>,
    steward: &ValidKey,
    proofs: &Path,
    mut on_event: impl FnMut(StoredEvent<'_>),
) -> Result<StoredCalls> {
    let mut calls = StoredCalls::default();
    read_each(config, only, |s| {
        let ours = s
            .records
            .seals
            .last()
            .is_some_and(|seal| verify_checkpoint(seal, steward.verifying_key()).is_ok());
        if !ours {
            calls.others += 1;
            return;
        }
        let folder = proofs.join(escape_id(&s.records.stream_id));
        if std::fs::symlink_metadata(folder.join(PROOF_FILE)).is_ok() {
            calls.had_proof += 1;
            return;
        }
        let audit = crate::audit::audit_nats_stream(&s, steward);
        if !audit.is_complete() {
            calls.incomplete += 1;
            let first = audit
                .problems
                .first()
                .map(ToString::to_string)
                .unwrap_or_default();
            on_event(StoredEvent::Incomplete {
                stream_id: &audit.stream_id,
                problem: &first,
            });
            return;
        }
        match s.records.seals.last() {
            Some(seal) if calls.todo.len() < MAX_STORED_REGISTRATIONS => {
                calls.todo.push((folder, seal.clone()));
            }
            _ => calls.left += 1,
        }
    })
    .await?;
    Ok(calls)
}

/// Registers each call `calls` kept, one by one, through `appender` (the registry opened and
/// locked for the steward `calls` was collected for): writes its folder under `proofs` with its
/// final seal, then either writes its proof again (a call registered before) or registers it.
/// A call that fails is handed to `on_event` as [`StoredEvent::NotRegistered`], counted and
/// skipped; the next one is tried.
///
/// # Errors
/// Only writing the proof of a call registered before failed (an I/O error: the rest are not
/// tried). The calls handled before it were reported to `on_event`.
pub fn register_stored(
    appender: &mut Appender,
    proofs: &Path,
    calls: StoredCalls,
    mut on_event: impl FnMut(StoredEvent<'_>),
) -> std::result::Result<StoredReport, RegistryError> {
    let mut report = StoredReport {
        had_proof: calls.had_proof,
        incomplete: calls.incomplete,
        others: calls.others,
        left: calls.left,
        ..StoredReport::default()
    };
    let steward = *appender.registry().steward().key();
    for (folder, seal) in calls.todo {
        if let Err(e) = prepare_stored_call(proofs, &folder, &seal, &steward) {
            report.failed += 1;
            on_event(StoredEvent::NotRegistered(&e));
            continue;
        }
        match appender.registry().proof_of_run(&folder) {
            Ok(Some((proof, size))) => {
                let path = folder.join(PROOF_FILE);
                let inputs: Vec<&Path> = appender.key_file().into_iter().collect();
                write_file(&path, &proof.encode(), &inputs)?;
                report.proved += 1;
                on_event(StoredEvent::ProofWritten {
                    proof: &path,
                    index: proof.index,
                    size,
                });
            }
            Ok(None) => match appender.register_run(&folder) {
                Ok(registration) => {
                    on_event(StoredEvent::Registered {
                        folder: &folder,
                        registration: &registration,
                    });
                    match registration.witnessed() {
                        Ok(()) => report.registered += 1,
                        Err(e) => {
                            report.failed += 1;
                            on_event(StoredEvent::NotRegistered(&e));
                        }
                    }
                }
                Err(e) => {
                    report.failed += 1;
                    on_event(StoredEvent::NotRegistered(&e));
                }
            },
            Err(e) => {
                report.failed += 1;
                on_event(StoredEvent::NotRegistered(&e));
            }
        }
    }
    Ok(report)
}

/// Where [`register_call`] registers a live run's calls: the file sink's folder (each sealed
/// stream folder registered in place), or the folder the NATS sink's calls get a folder in
/// (holding the final seal and the proof).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallFolders {
    /// The file sink's folder: `DIR/<escaped id>/` is the call's stream folder.
    StreamFolders(PathBuf),
    /// A proofs folder: `DIR/<escaped id>/` is created for the call (it must not exist).
    ProofFolders(PathBuf),
}

/// Registers one call of a live run whose final seal is signed, through `appender`: a sealed
/// stream folder of the file sink in place, or (NATS) a new folder holding the final seal, each
/// as a sealed run directory is registered. Returns the call's folder and what the appender did
/// (check [`Registration::witnessed`] for a policy's quorum), or `None` for a call that is not
/// registered: never sealed, failed, or (file sink) not sealed durably in its folder.
///
/// # Errors
/// The folder could not be written, or the appender refused the call.
pub fn register_call(
    appender: &mut Appender,
    folders: &CallFolders,
    summary: &crate::StreamSummary,
    status: &crate::StreamStatus,
) -> std::result::Result<Option<(PathBuf, Registration)>, RegistryError> {
    let Some(seal) = &summary.final_seal else {
        return Ok(None);
    };
    if status.failure().is_some() {
        return Ok(None);
    }
    let io = |path: &Path, e: std::io::Error| RegistryError::Io {
        message: format!("{}: {e}", path.display()),
    };
    let folder = match folders {
        CallFolders::StreamFolders(dir) => {
            if !status.sealed_durable() {
                return Ok(None);
            }
            dir.join(escape_id(&summary.stream_id))
        }
        CallFolders::ProofFolders(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
            let folder = dir.join(escape_id(&summary.stream_id));
            std::fs::create_dir(&folder).map_err(|e| io(&folder, e))?;
            write_file(&folder.join(jouleclaw_store::layout::SEALS_CBOR), seal, &[])?;
            folder
        }
    };
    let registration = appender.register_run(&folder)?;
    Ok(Some((folder, registration)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use jouleclaw_jcr1::UtcSecond;
    use jouleclaw_jcr1::cose::{Signer as _, SoftwareSigner};
    use jouleclaw_registry::{ALG_ED25519, NoteKey, Registry};
    use jouleclaw_store::layout::SEALS_CBOR as SEALS_FILE;

    fn steward() -> SoftwareSigner {
        SoftwareSigner::from_seed(&[7; 32])
    }

    /// A registry for the steward of seed 7, opened for appending.
    /// A new temporary folder (kept while the first value lives), its `proofs` folder's path
    /// and an appender to a registry in it.
    fn in_new_dir() -> (tempfile::TempDir, std::path::PathBuf, Appender) {
        let tmp = tempfile::tempdir().unwrap();
        let proofs = tmp.path().join("proofs");
        let appender = appender(tmp.path());
        (tmp, proofs, appender)
    }

    fn appender(dir: &Path) -> Appender {
        let s = steward();
        let key = NoteKey::new(
            "registry.example/steward",
            ALG_ED25519,
            s.verifying_key().as_bytes(),
        )
        .unwrap();
        Registry::create(&dir.join("reg"), &key, &[]).unwrap();
        Appender::open(&dir.join("reg"), s, None, None).unwrap()
    }

    /// The final seal of a one-window call `id` signed by the steward.
    fn seal(id: &str) -> Vec<u8> {
        let mut sealer = jouleclaw_seal::StreamSealer::new(id, "did:example:steward", 1 << 10);
        let at = UtcSecond::parse("2026-06-05T00:00:00Z").unwrap();
        sealer
            .append(1, blake3::hash(id.as_bytes()).as_bytes(), at)
            .unwrap();
        sealer
            .checkpoint(&steward(), true)
            .unwrap()
            .checkpoint
            .cose_sign1
    }

    fn calls(proofs: &Path, ids: &[&str]) -> StoredCalls {
        StoredCalls {
            todo: ids
                .iter()
                .map(|id| (proofs.join(escape_id(id)), seal(id)))
                .collect(),
            ..StoredCalls::default()
        }
    }

    /// Registered once, then (its proof lost) proved again without a second leaf; a folder
    /// that holds another call's seal is refused and counted, and the next call is still
    /// registered.
    #[test]
    fn stored_calls_are_registered_once_and_proved_again() {
        let (_tmp, proofs, mut appender) = in_new_dir();
        let mut seen = Vec::new();
        let mut note = |e: StoredEvent<'_>| seen.push(format!("{e:?}"));
        let r = register_stored(&mut appender, &proofs, calls(&proofs, &["a"]), &mut note).unwrap();
        assert_eq!((r.registered, r.failed, r.not_registered()), (1, 0, 0));
        let folder = proofs.join(escape_id("a"));
        assert_eq!(std::fs::read(folder.join(SEALS_FILE)).unwrap(), seal("a"));
        let proof = std::fs::read(folder.join(PROOF_FILE)).unwrap();
        assert_eq!(appender.registry().log().size(), 1);

        // The proof lost: written again, no second leaf.
        std::fs::remove_file(folder.join(PROOF_FILE)).unwrap();
        let r = register_stored(&mut appender, &proofs, calls(&proofs, &["a"]), &mut note).unwrap();
        assert_eq!((r.registered, r.proved, r.failed), (0, 1, 0));
        assert_eq!(std::fs::read(folder.join(PROOF_FILE)).unwrap(), proof);
        assert_eq!(appender.registry().log().size(), 1);

        // A folder holding another seal: refused, counted; the next call is registered.
        let other = proofs.join(escape_id("b"));
        std::fs::create_dir(&other).unwrap();
        std::fs::write(other.join(SEALS_FILE), seal("c")).unwrap();
        let r = register_stored(
            &mut appender,
            &proofs,
            calls(&proofs, &["b", "d"]),
            &mut note,
        )
        .unwrap();
        assert_eq!((r.registered, r.failed, r.not_registered()), (1, 1, 1));
        assert!(!other.join(PROOF_FILE).exists());
        assert_eq!(appender.registry().log().size(), 2);
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert!(seen[0].starts_with("Registered"), "{seen:?}");
        assert!(seen[1].starts_with("ProofWritten"), "{seen:?}");
        assert!(seen[2].starts_with("NotRegistered"), "{seen:?}");
        assert!(seen[3].starts_with("Registered"), "{seen:?}");
    }

    /// What was counted while reading is carried into the report and refuses the run.
    #[test]
    fn counts_of_the_read_are_reported() {
        let (_tmp, proofs, mut appender) = in_new_dir();
        let mut c = StoredCalls::default();
        (c.had_proof, c.others, c.incomplete, c.left) = (1, 2, 3, 4);
        let r = register_stored(&mut appender, &proofs, c, |e| panic!("{e:?}")).unwrap();
        assert_eq!(
            r,
            StoredReport {
                had_proof: 1,
                others: 2,
                incomplete: 3,
                left: 4,
                ..StoredReport::default()
            }
        );
        assert_eq!(r.not_registered(), 7);
        assert!(!proofs.exists());
        assert_eq!(appender.registry().log().size(), 0);
    }

    /// A prefix no subject can carry is refused before any connection; nothing is written.
    #[tokio::test]
    async fn a_bad_prefix_is_refused_before_reading() {
        let tmp = tempfile::tempdir().unwrap();
        let proofs = tmp.path().join("proofs");
        let mut config = JetStreamConfig::new("nats://127.0.0.1:1", tmp.path().join("unused"));
        config.prefix = "bad prefix".into();
        let e = collect_stored(
            &config,
            None,
            &ValidKey::new(steward().verifying_key()).unwrap(),
            &proofs,
            |e| panic!("{e:?}"),
        )
        .await
        .unwrap_err();
        assert_eq!(e.code(), "config", "{e}");
        assert!(!proofs.exists());
    }

    fn summary(id: &str, final_seal: Option<Vec<u8>>) -> crate::StreamSummary {
        crate::StreamSummary {
            stream_id: id.into(),
            windows: 1,
            checkpoints: 1,
            accepted: 1,
            refused: 0,
            refused_closed: 0,
            final_seal,
        }
    }

    /// A NATS call gets a new folder with its final seal and proof; a second one of the same id
    /// is refused (its folder exists) and changes nothing; a call with no final seal, a failed
    /// one and (file sink) one not sealed durably are not registered.
    #[test]
    fn a_live_call_is_registered_in_its_own_folder() {
        let (tmp, proofs, mut appender) = in_new_dir();
        let folders = CallFolders::ProofFolders(proofs.clone());
        let ok = crate::StreamStatus::default();
        let (folder, reg) =
            register_call(&mut appender, &folders, &summary("n", Some(seal("n"))), &ok)
                .unwrap()
                .unwrap();
        assert_eq!(folder, proofs.join(escape_id("n")));
        assert_eq!((reg.index, reg.size), (0, 1));
        assert_eq!(std::fs::read(folder.join(SEALS_FILE)).unwrap(), seal("n"));
        assert_eq!(std::fs::read(folder.join(PROOF_FILE)).unwrap(), reg.proof);

        let e = register_call(&mut appender, &folders, &summary("n", Some(seal("n"))), &ok)
            .unwrap_err();
        assert_eq!(e.code(), "io_failed", "{e}");
        assert_eq!(appender.registry().log().size(), 1);

        let failed = crate::StreamStatus::default();
        failed.fail("sink");
        let in_place = CallFolders::StreamFolders(tmp.path().join("streams"));
        // No final seal; a failed stream; a file sink's call (not sealed durably here).
        for (call_folders, final_seal, status) in [
            (&folders, None, &ok),
            (&folders, Some(seal("m")), &failed),
            (&in_place, Some(seal("m")), &ok),
        ] {
            let none = register_call(
                &mut appender,
                call_folders,
                &summary("m", final_seal),
                status,
            )
            .unwrap();
            assert!(none.is_none());
        }
        assert!(!proofs.join(escape_id("m")).exists());
        assert_eq!(appender.registry().log().size(), 1);
    }
}
