//! A JetStream message body is decoded without building more than the decoded batch:
//! `decode_batch` reads the message's one shape head by head, never the body as generic CBOR
//! values. (One test in this binary: it reads the process's peak resident size.)

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jouleclaw_live::jetstream::decode_batch;

/// The process's peak resident set (`VmHWM`), in bytes.
fn peak_resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// A version-2 message body (`v` 2, stream `s`, steward `st`, seq 0, not final) whose
/// `receipts` value is `receipts` (raw CBOR), with checkpoint `h'00'`.
fn body_with_receipts(receipts: &[u8]) -> Vec<u8> {
    let mut b = vec![0xa7, 0x61, b'v', 0x02];
    b.extend_from_slice(&[0x69]);
    b.extend_from_slice(b"stream_id");
    b.extend_from_slice(&[0x61, b's']);
    b.extend_from_slice(&[0x67]);
    b.extend_from_slice(b"steward");
    b.extend_from_slice(&[0x62, b's', b't']);
    b.extend_from_slice(&[0x63]);
    b.extend_from_slice(b"seq");
    b.push(0x00);
    b.extend_from_slice(&[0x65]);
    b.extend_from_slice(b"final");
    b.push(0xf4);
    b.extend_from_slice(&[0x68]);
    b.extend_from_slice(b"receipts");
    b.extend_from_slice(receipts);
    b.extend_from_slice(&[0x6a]);
    b.extend_from_slice(b"checkpoint");
    b.extend_from_slice(&[0x41, 0x00]);
    b
}

/// A 4 MiB body whose `receipts` is an array of four million `null`s: decoded into values
/// it would take tens of bytes a `null` (over 100 MiB); it is refused `malformed` with a few
/// bytes. The accepted neighbour, one 4 MiB receipt, decodes at the cost of its copy.
#[test]
fn a_large_message_is_decoded_without_building_generic_values() {
    const NULLS: u32 = 4 << 20;
    let mut nulls = vec![0x9a];
    nulls.extend_from_slice(&NULLS.to_be_bytes());
    nulls.resize(nulls.len() + NULLS as usize, 0xf6);
    let refused = body_with_receipts(&nulls);
    drop(nulls);
    let mut big = vec![0x81, 0x5a];
    big.extend_from_slice(&NULLS.to_be_bytes());
    big.resize(big.len() + NULLS as usize, 0x07);
    let accepted = body_with_receipts(&big);
    drop(big);

    let before = peak_resident();
    let e = decode_batch(&refused).unwrap_err();
    let grown = peak_resident().saturating_sub(before);
    assert_eq!(e.code(), "malformed", "{e}");
    assert!(
        grown < 32 << 20,
        "refusing the message raised the peak resident size by {grown} bytes"
    );

    let before = peak_resident();
    let d = decode_batch(&accepted).unwrap();
    let grown = peak_resident().saturating_sub(before);
    assert_eq!((d.stream_id.as_str(), d.steward.as_str()), ("s", "st"));
    assert_eq!(d.receipts.len(), 1);
    assert_eq!(d.receipts[0].len(), NULLS as usize);
    assert!(d.receipts[0].iter().all(|&b| b == 0x07));
    assert!(
        grown < 32 << 20,
        "decoding the message raised the peak resident size by {grown} bytes"
    );
}
