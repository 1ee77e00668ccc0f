//! Measures, in instructions under `valgrind --tool=callgrind`, what verifying 64 signed
//! receipts costs each way: `setup` (signing only), `strict` (64 × `verify_strict`, what
//! `cose::verify_batch` does), `batch` (one raw ed25519-dalek batch equation, unsafe: it accepts
//! torsion forgeries), `guarded` (the torsion check `[L]R = O` on every `R`, then the batch),
//! `verify` (64 × `cose::verify` of the whole COSE_Sign1, profile checks, strict decode and
//! content hash included: the bench's `verify/jcr1_verify`). Every mode makes the resolver,
//! which checks the key once. Subtract `setup` from the others.
//! Usage: `batch_cost MODE`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use curve25519_dalek::edwards::CompressedEdwardsY;
use ed25519_dalek::Signature;
use jouleclaw_jcr1::cose::{self, Signer, SoftwareSigner};
use jouleclaw_jcr1::*;

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let signer = SoftwareSigner::rfc8032_test_key();
    let key = signer.verifying_key();
    let signed: Vec<_> = (0..64u64)
        .map(|w| {
            let r = StreamWindowReceipt {
                closed_at: UtcSecond::from_unix(1_780_617_600).unwrap(),
                steward: "did:keri:EJ9testStewardAID000000000000000".into(),
                stream_id: "stream-demo".into(),
                window_id: w,
                window_hash: blake3::hash(&w.to_le_bytes()),
                tick_count: 4,
                inbound_bytes: 6400,
                outbound_bytes: 4800,
                joules_uj: 350,
                energy_provenance: EnergyProvenance::Estimator,
                verdict: jouleclaw_stream_oracle::WindowVerdict::pass_by("always-pass-stream"),
                conservation: jouleclaw_stream::WindowConservationFinding::Conforming,
            };
            cose::sign_receipt(&signer, &r).unwrap()
        })
        .collect();
    let msgs: Vec<&[u8]> = signed.iter().map(|s| s.to_be_signed.as_slice()).collect();
    let sigs: Vec<Signature> = signed
        .iter()
        .map(|s| Signature::from_bytes(&s.signature))
        .collect();
    let keys = vec![key; 64];
    // Accepting the key (and its one-time check) is part of every mode, `setup` included.
    let resolver = cose::SingleKey::new(key);
    let ok = match mode.as_str() {
        "setup" => true,
        "strict" => msgs
            .iter()
            .zip(&sigs)
            .all(|(m, s)| key.verify_strict(m, s).is_ok()),
        "verify" => signed
            .iter()
            .all(|s| cose::verify(&s.cose_sign1, &resolver).is_ok()),
        "batch" => ed25519_dalek::verify_batch(&msgs, &sigs, &keys).is_ok(),
        "guarded" => {
            sigs.iter().all(|s| {
                CompressedEdwardsY(*s.r_bytes())
                    .decompress()
                    .is_some_and(|r| !r.is_small_order() && r.is_torsion_free())
            }) && ed25519_dalek::verify_batch(&msgs, &sigs, &keys).is_ok()
        }
        other => panic!("unknown mode {other:?}"),
    };
    assert!(ok);
}
