//! Instructions per checkpoint of the seal's signature check, under `valgrind --tool=callgrind`:
//! one stream of 64 windows with a checkpoint after each, verified every way.
//!
//! ```sh
//! cargo build --release -p jouleclaw-seal --example seal_verify_ir
//! for m in setup strict free verifier inclusion; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/seal_verify_ir $m 2>&1 | grep refs
//! done   # (mode - setup) / 64
//! ```
//!
//! `setup` signs and makes one `SealVerifier` (the key's check runs there, once per key);
//! `strict` is raw `verify_strict` of each checkpoint's signed bytes (the floor); `free` is
//! `verify_checkpoint(cose, &key)` (the key's check on every call); `verifier` is that one
//! `SealVerifier` over the checkpoints; `inclusion` the same verifier over each checkpoint's newest inclusion receipt
//! after its checkpoint (the signature already checked: the cached path).

// An example binary is not library code: a fixture that cannot be built is a bug here.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;

use ed25519_dalek::Signature;
use jouleclaw_jcr1::UtcSecond;
use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_seal::*;

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_default();
    let signer = SoftwareSigner::rfc8032_test_key();
    let key = signer.verifying_key();
    let mut sealer = StreamSealer::new("stream-demo", "did:example:steward", 1 << 10);
    let mut batches = Vec::new();
    for w in 0..64u64 {
        let closed = UtcSecond::from_unix(1_780_617_600 + w as i64).unwrap();
        sealer
            .append(w + 1, blake3::hash(&w.to_le_bytes()).as_bytes(), closed)
            .unwrap();
        batches.push(sealer.checkpoint(&signer, w == 63).unwrap());
    }
    // The key's check runs once per key, when a verifier is made: in every mode's setup, so
    // `verifier` and `inclusion` count what each checkpoint costs.
    let verifier = black_box(SealVerifier::new(key));
    match mode.as_str() {
        "setup" => {}
        "strict" => {
            for b in &batches {
                let sig = Signature::from_bytes(&b.checkpoint.signature);
                key.verify_strict(black_box(&b.checkpoint.to_be_signed), &sig)
                    .unwrap();
            }
        }
        "free" => {
            for b in &batches {
                black_box(verify_checkpoint(black_box(&b.checkpoint.cose_sign1), &key).unwrap());
            }
        }
        "verifier" | "inclusion" => {
            let mut v = verifier;
            for (w, b) in batches.iter().enumerate() {
                black_box(
                    v.verify_checkpoint(black_box(&b.checkpoint.cose_sign1))
                        .unwrap(),
                );
                if mode == "inclusion" {
                    let (_, r) = b.inclusion.last().unwrap();
                    let e = *blake3::hash(&(w as u64).to_le_bytes()).as_bytes();
                    black_box(v.verify_inclusion_receipt(black_box(r), &e).unwrap());
                }
            }
        }
        other => panic!("mode {other:?}: setup, strict, free, verifier or inclusion"),
    }
}
