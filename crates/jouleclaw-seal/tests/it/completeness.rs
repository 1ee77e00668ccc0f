//! The completeness checker names each kind of damage, located.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use jouleclaw_jcr1::UtcSecond;
use jouleclaw_jcr1::cose::{Signer, SoftwareSigner};
use jouleclaw_seal::*;

const S: &str = "stream";
const ST: &str = "steward";

fn entry(w: u64) -> [u8; 32] {
    *blake3::hash(&w.to_be_bytes()).as_bytes()
}

/// Windows 1..=10 without 4 (empty): 9 receipts; checkpoints after 3, 6 and 9 (final), so
/// the second interval (windows 4..=7) holds the empty window.
const WINDOWS: [u64; 9] = [1, 2, 3, 5, 6, 7, 8, 9, 10];

fn stream() -> (Vec<ReceiptEntry>, Vec<Checkpoint>) {
    let signer = SoftwareSigner::rfc8032_test_key();
    let key = signer.verifying_key();
    let mut sealer = StreamSealer::new(S, ST, 64);
    let mut cps = Vec::new();
    for (i, &w) in WINDOWS.iter().enumerate() {
        sealer
            .append(w, &entry(w), UtcSecond::from_unix(w as i64).unwrap())
            .unwrap();
        if (i + 1) % 3 == 0 {
            let b = sealer.checkpoint(&signer, i + 1 == 9).unwrap();
            cps.push(verify_checkpoint(&b.checkpoint.cose_sign1, &key).unwrap());
        }
    }
    let receipts = WINDOWS.iter().map(|&w| receipt(w, S)).collect();
    (receipts, cps)
}

fn receipt(w: u64, stream: &str) -> ReceiptEntry {
    ReceiptEntry {
        window_id: w,
        content_hash: entry(w),
        stream_id: stream.into(),
        steward: ST.into(),
    }
}

fn problems(r: &[ReceiptEntry], c: &[Checkpoint]) -> Vec<Problem> {
    check_stream(r, c).problems
}

#[test]
fn the_whole_stream_is_complete() {
    let (r, c) = stream();
    let report = check_stream(&r, &c);
    assert!(report.is_complete(), "{:?}", report.problems);
    assert_eq!(report.accepted, 9);
}

#[test]
fn a_dropped_window_is_named_by_id_and_position() {
    let (mut r, c) = stream();
    r.remove(7); // window 9
    let p = problems(&r, &c);
    assert_eq!(
        p,
        vec![
            Problem::Missing {
                window_id: 9,
                before_index: 7,
                seal_index: 2
            },
            Problem::TreeSizeMismatch {
                seal_index: 2,
                sealed: 9,
                receipts: 8
            },
        ]
    );
    assert_eq!(
        p[0].to_string(),
        "missing_window: window 9 (sealed by checkpoint 2) is missing before receipt 7"
    );
}

#[test]
fn a_dropped_window_beside_an_empty_one_is_located_to_its_interval() {
    let (mut r, c) = stream();
    r.remove(3); // window 5, in 4..=7 where window 4 was empty
    assert_eq!(
        problems(&r, &c),
        vec![
            Problem::MissingUnlocated {
                seal_index: 1,
                count: 1,
                window_ids: (4, 7)
            },
            Problem::TreeSizeMismatch {
                seal_index: 2,
                sealed: 9,
                receipts: 8
            },
        ]
    );
}

#[test]
fn a_repeated_window_is_named_with_its_first_position() {
    let (mut r, c) = stream();
    r.insert(5, r[1].clone());
    let mut conflicting = r[0].clone();
    conflicting.content_hash = [0; 32];
    r.push(conflicting);
    assert_eq!(
        problems(&r, &c),
        vec![
            Problem::Repeated {
                index: 5,
                window_id: 2,
                first_index: 1,
                same_content: true
            },
            Problem::Repeated {
                index: 10,
                window_id: 1,
                first_index: 0,
                same_content: false
            },
        ]
    );
}

#[test]
fn swapped_windows_are_named_and_the_roots_do_not_match() {
    let (mut r, c) = stream();
    r.swap(0, 1);
    let p = problems(&r, &c);
    assert_eq!(
        p[0],
        Problem::Reordered {
            index: 1,
            window_id: 1,
            previous_window_id: 2
        }
    );
    assert!(p.contains(&Problem::RootMismatch {
        seal_index: 0,
        tree_size: 3
    }));
    assert!(p.contains(&Problem::WindowRangeMismatch {
        seal_index: 0,
        field: "first_window_id",
        sealed: 1,
        found: 2
    }));
}

#[test]
fn a_truncated_stream_names_every_missing_tail_window() {
    let (mut r, c) = stream();
    r.truncate(6);
    let p = problems(&r, &c);
    let missing: Vec<u64> = p
        .iter()
        .filter_map(|x| match x {
            Problem::Missing { window_id, .. } => Some(*window_id),
            _ => None,
        })
        .collect();
    assert_eq!(missing, vec![8, 9, 10]);
}

#[test]
fn foreign_and_extra_receipts_are_named() {
    let (mut r, c) = stream();
    r.insert(2, receipt(3, "other"));
    r.push(receipt(11, S));
    assert_eq!(
        problems(&r, &c),
        vec![
            Problem::Foreign {
                index: 2,
                window_id: 3
            },
            Problem::Extra {
                index: 10,
                window_id: 11
            },
        ]
    );
}

#[test]
fn an_inserted_window_in_a_gap_is_a_surplus() {
    let (mut r, c) = stream();
    r.insert(3, receipt(4, S));
    let p = problems(&r, &c);
    assert_eq!(
        p,
        vec![
            Problem::Surplus {
                seal_index: 1,
                sealed: 3,
                found: 4
            },
            Problem::TreeSizeMismatch {
                seal_index: 2,
                sealed: 9,
                receipts: 10
            },
        ]
    );
}

#[test]
fn a_replaced_receipt_fails_the_root_of_every_seal_from_its_own() {
    let (mut r, c) = stream();
    r[4].content_hash = [1; 32];
    assert_eq!(
        problems(&r, &c),
        vec![
            Problem::RootMismatch {
                seal_index: 1,
                tree_size: 6
            },
            Problem::RootMismatch {
                seal_index: 2,
                tree_size: 9
            },
        ]
    );
}

#[test]
fn seal_chain_problems_are_named() {
    let (r, c) = stream();
    assert_eq!(problems(&r, &[]), vec![Problem::NoSeals]);
    assert_eq!(problems(&r[..6], &c[..2]), vec![Problem::NoFinalSeal]);
    assert_eq!(
        problems(&r, &c[1..])[0],
        Problem::SealChain {
            seal_index: 0,
            reason: "first_seal_has_predecessor"
        }
    );
    let mut bad = c.clone();
    bad[1].consistency.as_mut().unwrap().path[0][0] ^= 1;
    assert_eq!(
        problems(&r, &bad),
        vec![Problem::ConsistencyFailed {
            seal_index: 1,
            code: ProofCode::FirstRootMismatch
        }]
    );
    let reordered = vec![c[1].clone(), c[0].clone(), c[2].clone()];
    assert!(problems(&r, &reordered).contains(&Problem::SealChain {
        seal_index: 1,
        reason: "size_decreased"
    }));
}
