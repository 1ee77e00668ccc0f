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

use jouleclaw_jcr1::cose;
use jouleclaw_testkit::receipts::signed_seed;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let f = signed_seed();
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
