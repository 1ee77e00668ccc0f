//! COSE_Sign1 verification of stream-window/1 receipts (spec/JCR1-COSE-PROFILE.md).
//!
//! The verification key is the RFC 8032 TEST 1 key that signs `conformance/stream-window-signed-vectors.json`,
//! so a corpus seeded from those vectors starts from envelopes that verify. For any input:
//! - `verify` returns, without panicking, a receipt or a refusal;
//! - `verify_batch` agrees with `verify` item by item, alone, twice over, and next to an envelope
//!   that verifies (which must still verify, whatever the other item is);
//! - a verified receipt re-encodes to the payload (its content hash matches), carries the key's
//!   `kid`, and its payload is accepted by the strict decoder on its own.
#![no_main]

use std::sync::OnceLock;

use jouleclaw_jcr1::cose::{self, Signer, SingleKey, SoftwareSigner};
use jouleclaw_jcr1::{StreamWindowReceipt, UtcSecond};
use libfuzzer_sys::fuzz_target;

struct Fixture {
    resolver: SingleKey,
    kid: [u8; 32],
    good: Vec<u8>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let signer = SoftwareSigner::rfc8032_test_key();
        let key = signer.verifying_key();
        // Seed vector 1 of conformance/stream-window-vectors.json.
        let receipt = StreamWindowReceipt {
            closed_at: UtcSecond::parse("2026-06-05T00:00:00Z").expect("valid closed_at"),
            steward: "did:keri:EJ9testStewardAID000000000000000".into(),
            stream_id: "stream-demo".into(),
            window_id: 1,
            window_hash: blake3::Hash::from_bytes([0xaa; 32]),
            tick_count: 4,
            inbound_bytes: 6400,
            outbound_bytes: 4800,
            joules_uj: 350,
            energy_provenance: jouleclaw_jcr1::EnergyProvenance::Estimator,
            verdict: jouleclaw_stream_oracle::WindowVerdict::pass_by("always-pass-stream"),
            conservation: jouleclaw_stream::WindowConservationFinding::Conforming,
        };
        let good = cose::sign_receipt(&signer, &receipt)
            .expect("the seed receipt signs")
            .cose_sign1;
        Fixture {
            resolver: SingleKey::new(key),
            kid: cose::kid(&key),
            good,
        }
    })
}

fuzz_target!(|data: &[u8]| {
    let f = fixture();
    let single = cose::verify(data, &f.resolver);

    assert_eq!(
        cose::verify_batch(&[data], &f.resolver),
        vec![single.clone()]
    );
    assert_eq!(
        cose::verify_batch(&[data, data], &f.resolver),
        vec![single.clone(), single.clone()]
    );
    let good = cose::verify(&f.good, &f.resolver);
    assert!(good.is_ok(), "the fixture envelope must verify");
    assert_eq!(
        cose::verify_batch(&[f.good.as_slice(), data], &f.resolver),
        vec![good, single.clone()]
    );

    if let Ok(v) = single {
        assert_eq!(v.kid, f.kid);
        let payload = v.receipt.encode().expect("a verified receipt encodes");
        assert_eq!(
            blake3::hash(&payload),
            v.content_hash,
            "payload is the canonical bytes"
        );
        assert_eq!(
            jouleclaw_jcr1::decode_receipt(&payload).as_ref(),
            Ok(&v.receipt)
        );
    }
});
