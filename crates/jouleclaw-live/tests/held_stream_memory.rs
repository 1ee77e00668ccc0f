//! A stream held in memory is served to the verifier without building more than its items:
//! `receipts.jsonl` takes each receipt's payload out of its COSE_Sign1 envelope without
//! decoding the rest of the item into values. (One test in this binary: it reads the
//! process's peak resident size.)

#![allow(clippy::unwrap_used)]

use std::io::Read as _;

use jouleclaw_live::audit::{HeldStream, StreamDocuments};
use jouleclaw_store::source::{Fetched, StreamSource as _};

/// The process's peak resident set (`VmHWM`), in bytes.
fn peak_resident() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kb * 1024
}

/// A 4 MiB item shaped as a COSE_Sign1 whose unprotected header is an array of four million
/// `null`s: decoded into values, it would take tens of bytes a `null` (hundreds of MiB); its
/// line is read with a few bytes more than the item. The line is empty (no receipt's envelope
/// has any unprotected header but `{}`), and the next item is still its own line.
#[test]
fn a_large_item_is_served_as_a_line_without_decoding_it_into_values() {
    const NULLS: u32 = 4 << 20;
    let mut item = vec![0xd2, 0x84, 0x40, 0x9a];
    item.extend_from_slice(&NULLS.to_be_bytes());
    item.resize(item.len() + NULLS as usize, 0xf6);
    item.extend_from_slice(&[0x41, b'x', 0x40]);
    // The accepted neighbour: the profile's envelope, unprotected `{}`, payload `{"a":1}`.
    let mut plain = vec![0xd2, 0x84, 0x40, 0xa0, 0x47];
    plain.extend_from_slice(br#"{"a":1}"#);
    plain.push(0x40);
    let receipts = vec![item, plain];
    let mut held = HeldStream {
        label: "big",
        receipts: &receipts,
        seals: &[],
        inclusion: None,
        documents: StreamDocuments::default(),
    };
    let before = peak_resident();
    let Fetched::Found(mut r) = held.fetch("receipts.jsonl").unwrap() else {
        panic!("receipts.jsonl is served");
    };
    let mut lines = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = r.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        lines.extend_from_slice(&buf[..n]);
    }
    let grown = peak_resident().saturating_sub(before);
    assert!(
        grown < 32 << 20,
        "serving the lines raised the peak resident size by {grown} bytes"
    );
    assert_eq!(lines, b"\n{\"a\":1}\n");
}
