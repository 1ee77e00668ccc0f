//! `jouleclaw live --registry DIR`: each call whose final seal is signed registered in a call
//! registry (spec/CALL-REGISTRY.md) through the registry's one appender
//! (`crate::commands::registry::Appender`, the code of `registry add`).

use std::path::PathBuf;

use jouleclaw_jcr1::cose::SoftwareSigner;
use jouleclaw_live::registry::{CallFolders, register_call};
use jouleclaw_live::{StreamStatus, StreamSummary};

use super::LiveArgs;
use super::calls::Calls;
use crate::Failure;
use crate::commands::registry::RegisterError;
use crate::out::{say, tell};

/// Where `--registry` registrations go: the registry, opened and locked, and the folders the
/// proofs go into.
pub(super) struct Registration {
    appender: crate::commands::registry::Appender,
    pub(super) registry: PathBuf,
    target: CallFolders,
}

/// Checks the `--registry` arguments and opens the registry (checked and locked: another
/// steward's registry, a policy of another steward, a registry in use are refused) before
/// anything runs.
pub(super) fn registration(args: &LiveArgs) -> Result<Option<Registration>, Failure> {
    let Some(registry) = &args.registry else {
        return Ok(None);
    };
    let Some(key) = &args.key else {
        return Err(Failure::Usage(
            "--registry needs --key KEYFILE: the registry's checkpoints and the calls' seals are \
             signed by one steward key"
                .into(),
        ));
    };
    let target = match (args.sink.strip_prefix("file:"), &args.registry_proofs) {
        (Some(dir), None) => CallFolders::StreamFolders(PathBuf::from(dir)),
        (Some(_), Some(_)) => {
            return Err(Failure::Usage(
                "--registry-proofs is for a NATS sink; a file sink's proofs go into its stream \
                 folders"
                    .into(),
            ));
        }
        (None, Some(p)) => CallFolders::ProofFolders(p.clone()),
        (None, None) => {
            return Err(Failure::Usage(
                "--registry with a NATS sink needs --registry-proofs DIR (where each call's \
                 final seal and proof are written)"
                    .into(),
            ));
        }
    };
    let appender = crate::commands::registry::Appender::open(
        registry,
        key,
        // A second copy for the registry (the substrate owns the first); its permissions were
        // checked, and warned about, when the first was read.
        SoftwareSigner::read_key_file(key).map_err(|e| Failure::io(key, e))?,
        args.registry_policy.as_deref(),
    )
    .map_err(|e| e.into_failure("--registry: "))?;
    Ok(Some(Registration {
        appender,
        registry: registry.clone(),
        target,
    }))
}

/// Registers one call whose final seal is signed ([`register_call`]) and prints what the
/// appender did, as `registry add` does. Returns `Ok(false)` for a call that is not registered
/// (never sealed, failed, or not sealed durably in its folder).
fn register_one(
    r: &mut Registration,
    summary: &StreamSummary,
    status: &StreamStatus,
) -> Result<bool, Failure> {
    let registered = register_call(r.appender.library(), &r.target, summary, status)
        .map_err(|e| RegisterError::from(e).into_failure(""))?;
    let Some((folder, registration)) = registered else {
        return Ok(false);
    };
    crate::commands::registry::print_registration(&registration, &folder);
    registration
        .witnessed()
        .map_err(|e| RegisterError::from(e).into_failure(""))?;
    Ok(true)
}

/// After the run (every batch the sink took is durable or journaled by now): each call
/// registered, the count told. Returns how many registrations failed.
pub(super) fn register_calls(r: &mut Registration, summaries: &Calls) -> usize {
    let (mut registered, mut skipped, mut failed) = (0u64, 0u64, Vec::new());
    for (summary, status) in summaries {
        match register_one(r, summary, status) {
            Ok(true) => registered += 1,
            Ok(false) => skipped += 1,
            Err(Failure::Refused(e) | Failure::Usage(e)) => {
                failed.push(format!("{}: {e}", summary.stream_id));
            }
        }
    }
    say!(
        "registry    {registered} calls registered in {}, {skipped} not (no final seal, failed or not sealed durably), {} failed",
        r.registry.display(),
        failed.len()
    );
    for f in failed.iter().take(10) {
        tell!("  registry failed: {}", crate::out::untrusted(f));
    }
    failed.len()
}
