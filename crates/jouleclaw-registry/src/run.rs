//! The offline check of a registered call on disk (spec/CALL-REGISTRY.md section 4): a run
//! directory's `registry.tlog-proof` ([`verify_run`]) or the proof folder of a call a JetStream
//! cluster holds ([`verify_stored_call`]).

use std::path::Path;

use jouleclaw_store::layout::{self, Input, SEALS_CBOR as SEALS_FILE};

use crate::disk::{PROOF_FILE, final_seal_of, read_capped};
use crate::{
    CallProof, MAX_PROOF_BYTES, RegistryError, Result, VerifiedCall, WitnessPolicy,
    verify_call_proof,
};

/// Verifies `run/registry.tlog-proof` under the policy and that its seal is the run's final
/// seal (the last checkpoint of `run/seals.cbor`): the one check behind `registry verify`,
/// `receipts verify DIR --witness-policy` and `audit --dir --witness-policy`. A run without a
/// proof file is refused: its call is not registered.
pub fn verify_run(run: &Path, policy: &WitnessPolicy) -> Result<VerifiedCall> {
    let (proof, verified) = verified_proof(run, policy)?;
    let run_seal = final_seal_of(run, policy.log.key())?;
    if run_seal != proof.seal_cose {
        return Err(RegistryError::refused(format!(
            "{}: the proof registers another final seal than {}",
            run.join(PROOF_FILE).display(),
            run.join(SEALS_FILE).display()
        )));
    }
    Ok(verified)
}

/// The proof `live --registry-proofs DIR` wrote for a JetStream call
/// (`DIR/<escaped stream id>/registry.tlog-proof`, in `folder`) verifies under the policy and
/// registers `stored_seal`, the final seal the cluster holds for the stream (not the copy in
/// the proof's folder).
pub fn verify_stored_call(
    folder: &Path,
    stored_seal: Option<&[u8]>,
    policy: &WitnessPolicy,
) -> Result<VerifiedCall> {
    let (proof, verified) = verified_proof(folder, policy)?;
    match stored_seal {
        Some(seal) if seal == proof.seal_cose.as_slice() => Ok(verified),
        Some(_) => Err(RegistryError::refused(format!(
            "{}: the proof registers another final seal than the one the cluster holds",
            folder.join(PROOF_FILE).display()
        ))),
        None => Err(RegistryError::refused(
            "the cluster holds no seal for the stream",
        )),
    }
}

/// Reads `DIR/registry.tlog-proof` (a missing file: the call is not registered) and verifies it
/// under the policy.
fn verified_proof(run: &Path, policy: &WitnessPolicy) -> Result<(CallProof, VerifiedCall)> {
    let path = run.join(PROOF_FILE);
    if matches!(
        layout::open_input(&path).map_err(|e| RegistryError::io(&path, e))?,
        Input::Missing
    ) {
        return Err(RegistryError::refused(format!(
            "{}: no such file: the call is not registered",
            path.display()
        )));
    }
    let proof = CallProof::parse(&read_capped(&path, MAX_PROOF_BYTES)?)
        .map_err(|e| RegistryError::refused(format!("{}: {e}", path.display())))?;
    let verified = verify_call_proof(&proof, policy)
        .map_err(|e| RegistryError::refused(format!("{}: {e}", path.display())))?;
    Ok((proof, verified))
}
