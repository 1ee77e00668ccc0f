//! stream-window/1 receipts that the fuzz targets, the benches and the jcr1 tests share: the
//! seed receipt (vector 1 of `conformance/stream-window-vectors.json`), that receipt signed
//! with the RFC 8032 TEST 1 key, and a strict decoder fed chunk by chunk.

use std::sync::OnceLock;

use jouleclaw_jcr1::cose::{self, Signer, SingleKey, SoftwareSigner};
use jouleclaw_jcr1::{
    EnergyProvenance, Progress, ReceiptDecoder, Refusal, StreamWindowReceipt, UtcSecond,
};
use jouleclaw_stream::WindowConservationFinding;
use jouleclaw_stream_oracle::WindowVerdict;

/// The steward of the seed receipt.
pub const SEED_STEWARD: &str = "did:keri:EJ9testStewardAID000000000000000";

/// Seed vector 1 of `conformance/stream-window-vectors.json` (Pass, conforming).
pub fn seed_receipt() -> StreamWindowReceipt {
    StreamWindowReceipt {
        closed_at: UtcSecond::parse("2026-06-05T00:00:00Z").expect("valid closed_at"),
        steward: SEED_STEWARD.into(),
        stream_id: "stream-demo".into(),
        window_id: 1,
        window_hash: blake3::Hash::from_bytes([0xaa; 32]),
        tick_count: 4,
        inbound_bytes: 6400,
        outbound_bytes: 4800,
        joules_uj: 350,
        energy_provenance: EnergyProvenance::Estimator,
        verdict: WindowVerdict::pass_by("always-pass-stream"),
        conservation: WindowConservationFinding::Conforming,
    }
}

/// The seed receipt signed as a COSE_Sign1 envelope with the RFC 8032 TEST 1 key, and that
/// key's resolver and `kid`.
#[derive(Debug)]
pub struct SignedSeed {
    /// Resolves the RFC 8032 TEST 1 verifying key.
    pub resolver: SingleKey,
    /// The key's `kid`.
    pub kid: [u8; 32],
    /// The envelope of [`seed_receipt`], which verifies.
    pub good: Vec<u8>,
}

/// The [`SignedSeed`], made once per process.
pub fn signed_seed() -> &'static SignedSeed {
    static F: OnceLock<SignedSeed> = OnceLock::new();
    F.get_or_init(|| {
        let signer = SoftwareSigner::rfc8032_test_key();
        let key = signer.verifying_key();
        let good = cose::sign_receipt(&signer, &seed_receipt())
            .expect("the seed receipt signs")
            .cose_sign1;
        SignedSeed {
            resolver: SingleKey::new(key),
            kid: cose::kid(&key),
            good,
        }
    })
}

/// Feeds `chunks` to one strict decoder and returns its outcome, checking that `push` never
/// accepts, that a refusal is sticky (the decoder reports it after every later push) and that
/// `finish` repeats it.
pub fn feed<'a>(
    chunks: impl IntoIterator<Item = &'a [u8]>,
) -> Result<StreamWindowReceipt, Refusal> {
    let mut d = ReceiptDecoder::new();
    let mut refused: Option<Refusal> = None;
    for c in chunks {
        match d.push(c) {
            Progress::Incomplete => assert!(refused.is_none(), "a refusal must be sticky"),
            Progress::Refused(r) => {
                if let Some(prev) = refused {
                    assert_eq!(prev, r, "a refusal must be sticky");
                }
                refused = Some(r);
            }
        }
        assert_eq!(d.refusal(), refused);
    }
    let out = d.finish();
    if let Some(r) = refused {
        assert_eq!(
            out.as_ref().err(),
            Some(&r),
            "finish must repeat the refusal"
        );
    }
    out
}
