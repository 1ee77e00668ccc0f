//! Reading a CBOR sequence of COSE_Sign1 items as a stream: item by item, refusing by framing
//! without storing, in memory bounded by constants whatever the input's size.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{ErrorKind, Read};

use common::*;
use jouleclaw_jcr1::Jcr1Error;
use jouleclaw_jcr1::cose::{self, CoseRefusal, SequenceReader, Signer, SingleKey, SoftwareSigner};
use jouleclaw_testkit::or_not_run;

/// The process's peak resident set (VmHWM) in bytes.
fn peak_rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kb: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

fn signed(n: u64) -> Vec<Vec<u8>> {
    let key = SoftwareSigner::rfc8032_test_key();
    (0..n)
        .map(|w| cose::sign_receipt(&key, &receipt(w)).unwrap().cose_sign1)
        .collect()
}

fn resolver() -> SingleKey {
    SingleKey::new(SoftwareSigner::rfc8032_test_key().verifying_key())
}

fn codes(bytes: &[u8]) -> Vec<Result<Vec<u8>, String>> {
    SequenceReader::new(bytes)
        .map(|r| r.map_err(|e| e.code().to_owned()))
        .collect()
}

#[test]
fn the_reader_yields_the_same_items_as_the_slice_splitter() {
    let items = signed(5);
    let seq = items.concat();
    let split = cose::split_cbor_sequence(&seq).unwrap();
    let read: Vec<Vec<u8>> = SequenceReader::new(seq.as_slice())
        .map(Result::unwrap)
        .collect();
    assert_eq!(read, split.iter().map(|s| s.to_vec()).collect::<Vec<_>>());
    assert_eq!(read, items);
    assert!(SequenceReader::new(&[][..]).next().is_none());
}

#[test]
fn an_item_without_tag_18_is_refused_and_the_next_item_follows() {
    let good = signed(1).pop().unwrap();
    let untagged = good[1..].to_vec();
    let mut wrong_tag = good.clone();
    wrong_tag[0] = 0xd1; // tag 17
    let seq = [
        good.clone(),
        untagged,
        wrong_tag,
        vec![0x00],                   // an unsigned integer
        vec![0x82, 0x01, 0x9f, 0xff], // [1, []] with an indefinite empty array
        vec![0x7f, 0x61, b'a', 0xff], // an indefinite text string
        good.clone(),
    ]
    .concat();
    assert_eq!(
        codes(&seq),
        vec![
            Ok(good.clone()),
            Err("cose_untagged".into()),
            Err("cose_wrong_tag".into()),
            Err("cose_malformed".into()),
            Err("cose_malformed".into()),
            Err("cose_malformed".into()),
            Ok(good),
        ]
    );
}

#[test]
fn bytes_that_cannot_be_delimited_end_the_sequence() {
    let good = signed(1).pop().unwrap();
    // A truncated last item.
    let seq = [good.clone(), good[..good.len() - 1].to_vec()].concat();
    assert_eq!(
        codes(&seq),
        vec![Ok(good.clone()), Err("cose_malformed".into())]
    );
    for (bad, what) in [
        (vec![0x1c], "reserved additional information"),
        (vec![0xff], "a break outside any container"),
        (vec![0xf8, 0x10], "a two-byte simple value below 32"),
        (
            vec![0x5f, 0x61, b'a', 0xff],
            "a text chunk in a byte string",
        ),
        (vec![0xbf, 0x01, 0xff], "an odd indefinite map"),
        (
            [vec![0x81; 17], vec![0x00]].concat(),
            "nesting deeper than 16",
        ),
        (
            vec![0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            "a string past the end",
        ),
    ] {
        let seq = [good.clone(), bad, good.clone()].concat();
        assert_eq!(
            codes(&seq),
            vec![Ok(good.clone()), Err("cose_malformed".into())],
            "{what}"
        );
    }
    // Nesting of exactly 16 is followed.
    let seq = [vec![0x81; 16], vec![0x00], good.clone()].concat();
    assert_eq!(codes(&seq), vec![Err("cose_malformed".into()), Ok(good)]);
}

#[test]
fn a_payload_over_64_kib_is_refused_from_its_length_head() {
    let good = signed(1).pop().unwrap();
    for (len, code) in [
        (cose::MAX_PAYLOAD_BYTES, None),
        (cose::MAX_PAYLOAD_BYTES + 1, Some("cose_payload_too_large")),
    ] {
        let mut item = vec![0xd2, 0x84, 0x40, 0xa0, 0x5a];
        item.extend_from_slice(&(len as u32).to_be_bytes());
        item.resize(item.len() + len, b'a');
        item.extend_from_slice(&[0x58, 0x40]);
        item.extend_from_slice(&[0; 64]);
        let seq = [item.clone(), good.clone()].concat();
        let want = match code {
            None => Ok(item),
            Some(c) => Err(c.to_owned()),
        };
        assert_eq!(codes(&seq), vec![want, Ok(good.clone())], "{len}");
    }
}

#[test]
fn an_item_over_the_item_limit_is_refused() {
    let good = signed(1).pop().unwrap();
    // A protected header as long as the item limit.
    let mut item = vec![0xd2, 0x84, 0x5a];
    item.extend_from_slice(&(cose::MAX_ITEM_BYTES as u32).to_be_bytes());
    item.resize(item.len() + cose::MAX_ITEM_BYTES, 0);
    item.extend_from_slice(&[0xa0, 0x40, 0x40]);
    // An array of a hundred thousand small integers.
    let mut ints = vec![0xd2, 0x9a];
    ints.extend_from_slice(&100_000u32.to_be_bytes());
    ints.resize(ints.len() + 100_000, 0x01);
    let seq = [item, ints, good.clone()].concat();
    assert_eq!(
        codes(&seq),
        vec![
            Err("cose_item_too_large".into()),
            Err("cose_item_too_large".into()),
            Ok(good)
        ]
    );
}

/// A reader that produces `header`, then `len` zero bytes, then `tail`, without holding them.
fn generated(header: Vec<u8>, len: u64, tail: Vec<u8>) -> impl Read {
    std::io::Cursor::new(header)
        .chain(std::io::repeat(0).take(len))
        .chain(std::io::Cursor::new(tail))
}

/// Runs in a child process of its own (so that the peak resident set is this test's): 2 MiB
/// of zero bytes and an item with a 256 MiB payload, generated as they are read, pass through
/// the reader while the process's peak stays below 32 MiB.
#[test]
fn memory_stays_bounded_whatever_the_input_size() {
    const CHILD: &str = "JC_SEQUENCE_MEMORY_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "sequence::memory_stays_bounded_whatever_the_input_size",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .status()
            .unwrap();
        assert!(status.success());
        return;
    }
    let good = signed(1).pop().unwrap();
    let n = SequenceReader::new(std::io::repeat(0).take(2 << 20))
        .inspect(|r| assert_eq!(r.as_ref().unwrap_err().code(), "cose_malformed"))
        .count();
    assert_eq!(n, 2 << 20);
    let mut header = vec![0xd2, 0x84, 0x40, 0xa0, 0x5a];
    header.extend_from_slice(&(256u32 << 20).to_be_bytes());
    let mut tail = vec![0x40];
    tail.extend_from_slice(&good);
    let items: Vec<_> = SequenceReader::new(generated(header, 256 << 20, tail))
        .map(|r| r.map_err(|e| e.code()))
        .collect();
    assert_eq!(items, vec![Err("cose_payload_too_large"), Ok(good)]);
    let peak = peak_rss();
    println!("peak resident set {peak} bytes");
    assert!(peak < 32 << 20, "peak resident set {peak} bytes");
}

#[test]
fn verify_sequence_reports_every_item_in_order_for_every_batch_size() {
    let mut items = signed(70);
    items[3] = items[3][1..].to_vec(); // untagged
    let last = items[40].len() - 1;
    items[40][last] ^= 1; // bad signature
    items.push(vec![0x00]);
    let seq = items.concat();
    let want: Vec<Result<u64, CoseRefusal>> = (0..71u64)
        .map(|i| match i {
            3 => Err(CoseRefusal::Untagged),
            40 => Err(CoseRefusal::BadSignature),
            70 => Err(CoseRefusal::MalformedCbor),
            w => Ok(w),
        })
        .collect();
    for batch in [0, 1, 3, 64, 1000] {
        let mut got = Vec::new();
        let n = cose::verify_sequence(seq.as_slice(), &resolver(), batch, |i, r| {
            got.push((i, r.map(|v| v.receipt.window_id)));
        })
        .unwrap();
        assert_eq!(n, 71);
        let indexed: Vec<_> = want.iter().cloned().enumerate().collect();
        assert_eq!(got, indexed, "batch {batch}");
    }
}

#[test]
fn a_read_error_is_reported_with_its_kind_after_the_items_before_it() {
    struct Failing(std::io::Cursor<Vec<u8>>);
    impl Read for Failing {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.0.read(buf)? {
                0 => Err(std::io::Error::new(ErrorKind::ConnectionReset, "gone")),
                n => Ok(n),
            }
        }
    }
    let items = signed(2);
    let mut seen = Vec::new();
    let e = cose::verify_sequence(
        Failing(std::io::Cursor::new(items.concat())),
        &resolver(),
        8,
        |i, r| seen.push((i, r.is_ok())),
    )
    .unwrap_err();
    assert_eq!(seen, vec![(0, true), (1, true)]);
    match e {
        Jcr1Error::Io { kind, .. } => assert_eq!(kind, ErrorKind::ConnectionReset),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_single_item_file_reads_as_verify_decides_and_stops_at_the_first_extra_byte() {
    let good = signed(1).pop().unwrap();
    assert_eq!(cose::read_single_item(good.as_slice()).unwrap(), good);
    for (bytes, code) in [
        (Vec::new(), "cose_malformed"),
        ([good.as_slice(), &[0]].concat(), "cose_malformed"),
        (good[1..].to_vec(), "cose_untagged"),
        (good[..good.len() - 1].to_vec(), "cose_malformed"),
    ] {
        assert_eq!(
            cose::read_single_item(bytes.as_slice()).unwrap_err().code(),
            code
        );
    }
    // Trailing bytes that never end are not read.
    let endless = std::io::Cursor::new(good.clone()).chain(std::io::repeat(0));
    assert_eq!(
        cose::read_single_item(endless).unwrap_err().code(),
        "cose_malformed"
    );
    // A 256 MiB payload is refused from its head.
    let mut header = vec![0xd2, 0x84, 0x40, 0xa0, 0x5a];
    header.extend_from_slice(&(256u32 << 20).to_be_bytes());
    assert_eq!(
        cose::read_single_item(generated(header, 256 << 20, vec![0x40]))
            .unwrap_err()
            .code(),
        "cose_payload_too_large"
    );
    // Every published negative envelope: the bounded read, then `verify`, refuses with the code
    // `verify` gives on the whole bytes.
    let signed_vectors = or_not_run!(read_json("stream-window-signed-vectors.json"));
    let resolver = resolver();
    for case in signed_vectors["negative"].as_array().unwrap() {
        let bytes = hex::decode(case["cose_sign1_hex"].as_str().unwrap()).unwrap();
        let whole = cose::verify(&bytes, &resolver).unwrap_err();
        let bounded = match cose::read_single_item(bytes.as_slice()) {
            Ok(item) => cose::verify(&item, &resolver).unwrap_err(),
            Err(Jcr1Error::Cose(c)) => c,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(bounded, whole, "{}", case["n"]);
    }
}

mod reference {
    use coset::cbor::value::Value;
    use jouleclaw_jcr1::cose::{self, SequenceReader};
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            any::<i64>().prop_map(|n| Value::Integer(n.into())),
            any::<u64>().prop_map(|n| Value::Integer(n.into())),
            proptest::collection::vec(any::<u8>(), 0..300).prop_map(Value::Bytes),
            ".{0,40}".prop_map(Value::Text),
            any::<bool>().prop_map(Value::Bool),
            Just(Value::Null),
            any::<f64>().prop_map(Value::Float),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::vec((inner.clone(), inner.clone()), 0..4)
                    .prop_map(Value::Map),
                (0u64..1000, inner).prop_map(|(t, v)| Value::Tag(t, Box::new(v))),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// The streaming reader delimits items exactly where ciborium (through
        /// `split_cbor_sequence`, the reference) does: every item tagged 18 comes back byte for
        /// byte, every other one is refused and skipped, and the next item is found.
        #[test]
        fn the_reader_delimits_as_ciborium_does(
            items in proptest::collection::vec((any::<bool>(), value()), 1..8)
        ) {
            let mut seq = Vec::new();
            for (tagged, v) in &items {
                let v = if *tagged { Value::Tag(18, Box::new(v.clone())) } else { v.clone() };
                coset::cbor::ser::into_writer(&v, &mut seq).unwrap();
            }
            let split = cose::split_cbor_sequence(&seq).unwrap();
            let read: Vec<_> = SequenceReader::new(seq.as_slice()).collect();
            prop_assert_eq!(read.len(), split.len());
            for ((r, s), (tagged, _)) in read.iter().zip(&split).zip(&items) {
                // A generated tag 18 around a value that is itself tagged 18 is still tag 18.
                if *tagged || s.first() == Some(&0xd2) {
                    prop_assert_eq!(r.as_ref().unwrap().as_slice(), *s);
                } else {
                    prop_assert!(r.is_err());
                }
            }
        }
    }
}
