//! Strict stream-window/1 decoding (spec/JCR1-STREAM-WINDOW-V1.md, sections 6 and 7).
//!
//! For any input:
//! - whole, split at one data-derived offset, and one byte at a time, the decoder reaches the
//!   same outcome (the same receipt, or the same refusal code at the same offset);
//! - `push` never accepts and a refusal is sticky;
//! - a refusal's offset lies within `0..=len`;
//! - an accepted receipt re-encodes to exactly the input bytes;
//! - the receipt schema never overrides a canonical-JSON decision: the generic decoder under the
//!   same limits refuses no earlier, and where both refuse at the same byte they agree (but for
//!   `negative_unsigned`, decided on the byte after the number before that byte's own checks);
//! - a generic value accepted under `Limits::GENERIC` re-encodes to exactly the input bytes.
#![no_main]

use jouleclaw_jcr1::{Limits, RefusalCode, decode_canonical_value, decode_receipt, encode_value};
use jouleclaw_testkit::receipts::feed;
use libfuzzer_sys::fuzz_target;

/// A split offset in `0..=len` derived from the data (FNV-1a of the bytes).
fn cut_of(data: &[u8]) -> usize {
    let h = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (h % (data.len() as u64 + 1)) as usize
}

fuzz_target!(|data: &[u8]| {
    let whole = decode_receipt(data);

    let (a, b) = data.split_at(cut_of(data));
    assert_eq!(whole, feed([a, b]), "split at {}", a.len());
    assert_eq!(whole, feed(data.chunks(1)), "one byte at a time");
    // Empty pushes change nothing.
    assert_eq!(
        whole,
        feed([&[][..], a, &[][..], b, &[][..]]),
        "with empty chunks"
    );

    match &whole {
        Ok(receipt) => {
            let bytes = receipt.encode().expect("an accepted receipt encodes");
            assert!(
                bytes == data,
                "an accepted receipt must re-encode to the input"
            );
        }
        Err(r) => assert!(r.offset <= data.len() as u64, "offset past the input: {r}"),
    }

    // The schema sink sees the same machine: it may refuse earlier than the generic decoder,
    // never later, and at the same byte it makes the same decision, except that the byte after a
    // number first ends the number, so the schema's `negative_unsigned` comes before that byte's
    // own syntax or whitespace check (spec section 6, item 7).
    match (&whole, decode_canonical_value(data, Limits::RECEIPT)) {
        (Ok(_), Err(g)) => panic!("receipt accepted but generic refused: {g}"),
        (Err(r), Err(g)) => assert!(
            r.offset < g.offset
                || r == &g
                || (r.offset == g.offset && r.code == RefusalCode::NegativeUnsigned),
            "receipt {r}, generic {g}"
        ),
        _ => {}
    }

    if let Ok(v) = decode_canonical_value(data, Limits::GENERIC) {
        let bytes = encode_value(&v).expect("an accepted value encodes");
        assert!(
            bytes == data,
            "an accepted value must re-encode to the input"
        );
    }
});
