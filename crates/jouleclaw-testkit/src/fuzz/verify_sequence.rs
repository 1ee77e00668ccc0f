//! The properties of the `verify_sequence` fuzz target, checked by the target and by
//! `crates/jouleclaw-jcr1/tests/it/fuzz_corpus.rs` on every committed input.
//!
//! For any input, read as an RFC 8742 CBOR sequence behind one envelope that verifies:
//! - `SequenceReader` never panics, yields the good envelope first, stores no item longer than
//!   `MAX_ITEM_BYTES` and none that does not start with tag 18, and stays ended once ended;
//! - `verify_sequence` reports every item once, in order, and the same results for batch sizes
//!   1, 3 and 64; each stored item's result is exactly `verify`'s on its bytes; refused items
//!   carry the reader's refusal;
//! - a verified receipt re-encodes to its payload and decodes on its own.

/// Checks every property on `data`; panics on a violation.
pub fn check_verify_sequence(data: &[u8]) {
    use jouleclaw_jcr1::Jcr1Error;
    use jouleclaw_jcr1::cose::{self, CoseRefusal, SequenceReader};

    let f = crate::receipts::signed_seed();
    let input = [f.good.as_slice(), data].concat();

    // The reader alone: what each item is.
    let mut expected: Vec<Result<jouleclaw_jcr1::cose::VerifiedReceipt, CoseRefusal>> = Vec::new();
    let mut reader = SequenceReader::new(input.as_slice());
    for item in &mut reader {
        match item {
            Ok(bytes) => {
                assert!(bytes.len() <= cose::MAX_ITEM_BYTES);
                assert_eq!(bytes.first(), Some(&0xd2));
                expected.push(cose::verify(&bytes, &f.resolver));
            }
            Err(Jcr1Error::Cose(r)) => expected.push(Err(r)),
            Err(other) => panic!("an I/O error from a slice: {other}"),
        }
    }
    assert!(reader.next().is_none(), "the reader stays ended");
    assert_eq!(reader.items(), expected.len());
    assert!(
        expected.first().is_some_and(Result::is_ok),
        "the good envelope"
    );

    for batch in [1, 3, 64] {
        let mut got = Vec::new();
        let n = cose::verify_sequence(input.as_slice(), &f.resolver, batch, |i, r| {
            assert_eq!(i, got.len(), "items in order");
            got.push(r);
        })
        .expect("a slice does not fail to read");
        assert_eq!(n, got.len());
        assert_eq!(got, expected, "batch {batch}");
    }

    for v in expected.iter().flatten() {
        let payload = v.receipt.encode().expect("a verified receipt encodes");
        assert_eq!(blake3::hash(&payload), v.content_hash);
        assert_eq!(
            jouleclaw_jcr1::decode_receipt(&payload).as_ref(),
            Ok(&v.receipt)
        );
    }
}
