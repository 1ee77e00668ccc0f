//! What one registered call costs the steward and an auditor, for callgrind:
//!
//! ```sh
//! cargo build --release -p jouleclaw-registry --example registry_cost
//! valgrind --tool=callgrind target/release/examples/registry_cost register 1000
//! valgrind --tool=callgrind target/release/examples/registry_cost verify 1000
//! ```
//!
//! `register N`: N calls registered (leaf of a final seal, append, a signed checkpoint note,
//! the inclusion proof, the tlog-proof file), on top of a fixed setup. `verify N`: N offline
//! proof verifications (seal, note, three cosignatures, quorum, inclusion). Run once with N and
//! once with 2N and divide the difference by N to remove the setup.

use jouleclaw_jcr1::UtcSecond;
use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_registry::{
    ALG_COSIGNATURE_V1, CallProof, NoteKey, RegistryLeaf, RegistryLog, WitnessPolicy,
    cosignature_message, verify_call_proof,
};
use jouleclaw_seal::StreamSealer;

const ORIGIN: &str = "registry.example/steward";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "register".into());
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(100);
    let steward = SoftwareSigner::rfc8032_test_key();
    let at = UtcSecond::from_unix(1_780_617_600).ok_or("time")?;
    let mut sealer = StreamSealer::new("call", "did:example:steward", 1 << 12);
    for w in 0..50u64 {
        sealer.append(w, blake3::hash(&w.to_be_bytes()).as_bytes(), at)?;
    }
    let seal_cose = sealer.checkpoint(&steward, true)?.checkpoint.cose_sign1;
    let seal = jouleclaw_seal::verify_checkpoint(&seal_cose, &steward.verifying_key())?.seal;
    let mut log = RegistryLog::new(ORIGIN, 1 << 20)?;
    match mode.as_str() {
        "register" => {
            let mut bytes = 0usize;
            for _ in 0..n {
                let leaf = RegistryLeaf::of_final_seal(&seal)?;
                let index = log.append(&leaf)?.index;
                let note = log.sign_checkpoint(&steward)?;
                let path = log.inclusion_proof(index, log.size())?;
                let proof = CallProof {
                    seal_cose: seal_cose.clone(),
                    index,
                    path,
                    checkpoint: note,
                };
                bytes += proof.encode().len();
            }
            println!("registered {n} calls, {bytes} proof bytes");
        }
        _ => {
            let leaf = RegistryLeaf::of_final_seal(&seal)?;
            log.append(&leaf)?;
            let note = log.sign_checkpoint(&steward)?;
            let end = note.windows(2).position(|w| w == b"\n\n").ok_or("note")? + 1;
            let mut policy = format!(
                "log {}\n",
                NoteKey::new(ORIGIN, 0x01, steward.verifying_key().as_bytes())?.vkey()
            );
            let mut cosigned = note.clone();
            for i in 0..3u8 {
                let w = SoftwareSigner::from_seed(&[i + 1; 32]);
                let k = NoteKey::new(
                    &format!("w{i}"),
                    ALG_COSIGNATURE_V1,
                    w.verifying_key().as_bytes(),
                )?;
                policy.push_str(&format!("witness {}\n", k.vkey()));
                let t = 1_780_617_600u64;
                let sig = w.sign(&cosignature_message(t, &note[..end]))?;
                let mut raw = k.id().to_be_bytes().to_vec();
                raw.extend_from_slice(&t.to_be_bytes());
                raw.extend_from_slice(&sig);
                use base64::Engine as _;
                let line = format!(
                    "— {} {}\n",
                    k.name(),
                    base64::engine::general_purpose::STANDARD.encode(raw)
                );
                cosigned.extend_from_slice(line.as_bytes());
            }
            policy.push_str("quorum 2\n");
            let policy = WitnessPolicy::parse(&policy)?;
            let proof = CallProof {
                seal_cose,
                index: 0,
                path: vec![],
                checkpoint: cosigned,
            };
            let bytes = proof.encode();
            for _ in 0..n {
                verify_call_proof(&CallProof::parse(&bytes)?, &policy)?;
            }
            println!("verified {n} proofs of {} bytes", bytes.len());
        }
    }
    Ok(())
}
